/* url.c - connection URLs to driver configuration. Free of I/O (fuzzed). */
#include "db/db.h"

#include <string.h>

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static bool has_suffix(const char *s, size_t len, const char *sfx)
{
    size_t n = strlen(sfx);
    return len >= n && memcmp(s + len - n, sfx, n) == 0;
}

/* A URL option's decimal value in [lo, hi] (`vn` bytes at `v`), else
 * SB_INVALID naming `field` and the range. */
static int option_number(const char *v, size_t vn, int64_t lo, int64_t hi,
                         const char *field, const char *unit, int64_t *out,
                         sb_error *err)
{
    int64_t x = 0;
    int ok = vn > 0 && vn <= 10;
    for (size_t i = 0; ok && i < vn; i++) {
        ok = v[i] >= '0' && v[i] <= '9';
        x = x * 10 + (v[i] - '0');
    }
    if (!ok || x < lo || x > hi)
        return sb__err(err, SB_INVALID, field,
                       "%s must be a number of %s from %lld to %lld", field,
                       unit, (long long)lo, (long long)hi);
    *out = x;
    return SB_OK;
}

/* Parse "durability=normal&busy_timeout=250&wal_autocheckpoint=10000"
 * options of a SQLite URL. */
static int sqlite_options(const char *q, sb_db_config *cfg, sb_error *err)
{
    while (*q != '\0') {
        const char *amp = strchr(q, '&');
        size_t n = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', n);
        if (eq == NULL)
            return sb__err(err, SB_INVALID, "url",
                           "URL option \"%.*s\" needs a value (key=value)",
                           (int)(n > 60 ? 60 : n), q);
        size_t kn = (size_t)(eq - q);
        const char *v = eq + 1;
        size_t vn = n - kn - 1;
        if (kn == 10 && memcmp(q, "durability", 10) == 0) {
            if (vn == 4 && memcmp(v, "full", 4) == 0)
                cfg->durability = SB_DURABILITY_FULL;
            else if (vn == 6 && memcmp(v, "normal", 6) == 0)
                cfg->durability = SB_DURABILITY_NORMAL;
            else
                return sb__err(err, SB_INVALID, "durability",
                               "durability must be \"full\" or \"normal\"");
        } else if (kn == 12 && memcmp(q, "busy_timeout", 12) == 0) {
            int rc = option_number(v, vn, 0, 999999999, "busy_timeout", "ms",
                                   &cfg->busy_timeout_ms, err);
            if (rc != SB_OK)
                return rc;
        } else if (kn == 18 && memcmp(q, "wal_autocheckpoint", 18) == 0) {
            int rc = option_number(
                v, vn, SB_WAL_AUTOCHECKPOINT_MIN, SB_WAL_AUTOCHECKPOINT_MAX,
                "wal_autocheckpoint", "pages", &cfg->wal_autocheckpoint, err);
            if (rc != SB_OK)
                return rc;
        } else {
            return sb__err(err, SB_INVALID, "url",
                           "unknown SQLite URL option \"%.*s\" (known: "
                           "durability, busy_timeout, wal_autocheckpoint)",
                           (int)(kn > 60 ? 60 : kn), q);
        }
        q += n;
        if (*q == '&')
            q++;
    }
    return SB_OK;
}

static int sqlite_target(const char *path, sb_db_config *cfg, sb_error *err)
{
    const char *qm = strchr(path, '?');
    size_t n = qm ? (size_t)(qm - path) : strlen(path);
    if (n == 0)
        return sb__err(err, SB_INVALID, "url",
                       "SQLite URL needs a file path (sqlite:./sqlbus.db)");
    if (n > 4096)
        return sb__err(err, SB_INVALID, "url",
                       "SQLite path is %zu bytes; the limit is 4096", n);
    if (memchr(path, '\0', n) != NULL)
        return sb__err(err, SB_INVALID, "url", "bad SQLite path");
    cfg->dialect = SB_DIALECT_SQLITE;
    cfg->target = sb__strndup(path, n);
    if (cfg->target == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    return qm ? sqlite_options(qm + 1, cfg, err) : SB_OK;
}

static int postgres_target(const char *url, sb_db_config *cfg, sb_error *err)
{
    cfg->dialect = SB_DIALECT_POSTGRES;
    cfg->target = sb__strdup(url);
    return cfg->target ? SB_OK : sb__err(err, SB_NOMEM, NULL, "out of memory");
}

/* ---- ODBC (odbc.c) ---- */

/* "odbc:CONNSTR" (SQL Server: a raw ODBC connection string) and
 * "odbc+postgresql:CONNSTR" (PostgreSQL's SQL through an ODBC driver such
 * as psqlODBC, which proves the ODBC layer where no SQL Server is). */
static int odbc_target(const char *connstr, int dialect, sb_db_config *cfg,
                       sb_error *err)
{
    if (connstr[0] == '\0')
        return sb__err(err, SB_INVALID, "url",
                       "an ODBC URL needs a connection string "
                       "(odbc:Driver={...};Server=...;Database=...)");
    cfg->dialect = dialect;
    cfg->odbc = true;
    cfg->target = sb__strdup(connstr);
    return cfg->target ? SB_OK : sb__err(err, SB_NOMEM, NULL, "out of memory");
}

/* Append `s[0..n)` percent-decoded, as one ODBC attribute value: braced
 * ({...}, '}' doubled) so ';', '=' and spaces are kept. */
static int put_value(sb_buf *b, const char *s, size_t n, const char *part,
                     sb_error *err)
{
    sb__buf_puts(b, "{");
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int byte = sb__percent_byte(s + i, n - i);
            if (byte < 0)
                return sb__err(err, SB_INVALID, "url",
                               "mssql URL: bad percent escape in the %s", part);
            c = (char)byte;
            i += 2;
        }
        sb__buf_append(b, c == '}' ? "}}" : &c, c == '}' ? 2 : 1);
    }
    sb__buf_puts(b, "}");
    return SB_OK;
}

/* The value of option `key` in "a=1&b=2" (borrowed, length in *n), or
 * NULL. */
static const char *query_opt(const char *q, const char *key, size_t *n)
{
    size_t klen = strlen(key);
    while (q != NULL && *q != '\0') {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        if (len > klen && strncmp(q, key, klen) == 0 && q[klen] == '=') {
            *n = len - klen - 1;
            return q + klen + 1;
        }
        q = amp ? amp + 1 : NULL;
    }
    return NULL;
}

/* "mssql://USER:PASS@HOST[:PORT]/DB?driver=NAME&encrypt=yes|no|strict&
 * trust_server_certificate=yes" to an ODBC connection string for
 * Microsoft's ODBC Driver 18 (the default) or FreeTDS (driver=FreeTDS). */
static int mssql_target(const char *rest, sb_db_config *cfg, sb_error *err)
{
    const char *qm = strchr(rest, '?');
    size_t len = qm ? (size_t)(qm - rest) : strlen(rest);
    const char *q = qm ? qm + 1 : NULL;
    const char *at = memchr(rest, '@', len);
    const char *host = at ? at + 1 : rest;
    const char *slash = memchr(host, '/', len - (size_t)(host - rest));
    if (slash == NULL || slash + 1 >= rest + len)
        return sb__err(err, SB_INVALID, "url",
                       "mssql URL needs a database: "
                       "mssql://user:pass@host:1433/dbname");
    const char *colon = memchr(host, ':', (size_t)(slash - host));
    size_t host_len = (size_t)((colon ? colon : slash) - host);
    if (host_len == 0)
        return sb__err(err, SB_INVALID, "url", "mssql URL needs a host");
    const char *port = colon ? colon + 1 : "1433";
    size_t port_len = colon ? (size_t)(slash - port) : 4;
    if (port_len == 0 || port_len > 5 || strspn(port, "0123456789") < port_len)
        return sb__err(err, SB_INVALID, "url",
                       "mssql URL: the port must be 1 to 5 digits");
    size_t dn = 0;
    const char *driver = query_opt(q, "driver", &dn);
    if (driver == NULL) {
        driver = "ODBC Driver 18 for SQL Server";
        dn = strlen(driver);
    }
    bool freetds = dn == 7 && strncmp(driver, "FreeTDS", 7) == 0;
    sb_buf b;
    sb__buf_init(&b, 4096);
    sb__buf_puts(&b, "Driver=");
    int rc = put_value(&b, driver, dn, "driver", err);
    if (freetds)
        sb__buf_printf(&b,
                       ";Server=%.*s;Port=%.*s;TDS_Version=7.4;"
                       "ClientCharset=UTF-8",
                       (int)host_len, host, (int)port_len, port);
    else
        sb__buf_printf(&b, ";Server=tcp:%.*s,%.*s", (int)host_len, host,
                       (int)port_len, port);
    sb__buf_puts(&b, ";Database=");
    if (rc == SB_OK)
        rc = put_value(&b, slash + 1, (size_t)(rest + len - slash - 1),
                       "database", err);
    if (rc == SB_OK && at != NULL) {
        const char *pc = memchr(rest, ':', (size_t)(at - rest));
        size_t ulen = (size_t)((pc ? pc : at) - rest);
        sb__buf_puts(&b, ";UID=");
        rc = put_value(&b, rest, ulen, "user", err);
        if (rc == SB_OK && pc != NULL) {
            sb__buf_puts(&b, ";PWD=");
            rc = put_value(&b, pc + 1, (size_t)(at - pc - 1), "password", err);
        }
    }
    size_t en = 0, tn = 0;
    const char *enc = query_opt(q, "encrypt", &en);
    const char *trust = query_opt(q, "trust_server_certificate", &tn);
    if (rc == SB_OK && enc != NULL) {
        sb__buf_puts(&b, freetds ? ";Encryption=" : ";Encrypt=");
        rc = put_value(&b, enc, en, "encrypt option", err);
    }
    if (rc == SB_OK && trust != NULL && !freetds) {
        sb__buf_puts(&b, ";TrustServerCertificate=");
        rc = put_value(&b, trust, tn, "trust_server_certificate option", err);
    }
    if (rc == SB_OK && b.failed)
        rc = sb__err(err, b.failed, "url", "the mssql URL is too long");
    if (rc == SB_OK)
        rc = odbc_target(b.data, SB_DIALECT_MSSQL, cfg, err);
    sb__buf_free(&b);
    return rc;
}

/* Length of a path before its "?options". */
static size_t base_len(const char *s)
{
    const char *qm = strchr(s, '?');
    return qm ? (size_t)(qm - s) : strlen(s);
}

int sb__db_parse_url(const char *url, sb_db_config *cfg, sb_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->busy_timeout_ms = 5000;
    cfg->wal_autocheckpoint = SB_WAL_AUTOCHECKPOINT_DEFAULT;
    if (url == NULL || url[0] == '\0')
        return sb__err(err, SB_INVALID, "url", "database URL is empty");
    size_t len = strlen(url);
    if (len > 8192)
        return sb__err(err, SB_INVALID, "url",
                       "database URL is %zu bytes; the limit is 8192", len);
    int rc;
    if (has_prefix(url, "sqlite://")) {
        rc = sqlite_target(url + 9, cfg, err);
    } else if (has_prefix(url, "sqlite:")) {
        rc = sqlite_target(url + 7, cfg, err);
    } else if (has_prefix(url, "odbc+postgresql:")) {
        rc = odbc_target(url + 16, SB_DIALECT_POSTGRES, cfg, err);
    } else if (has_prefix(url, "odbc:")) {
        rc = odbc_target(url + 5, SB_DIALECT_MSSQL, cfg, err);
    } else if (has_prefix(url, "mssql://") || has_prefix(url, "sqlserver://")) {
        rc = mssql_target(url + (url[1] == 's' ? 8 : 12), cfg, err);
    } else if (has_prefix(url, "postgresql://") ||
               has_prefix(url, "postgres://")) {
        rc = postgres_target(url, cfg, err);
    } else if (has_suffix(url, base_len(url), ".db") ||
               has_suffix(url, base_len(url), ".sqlite") ||
               has_suffix(url, base_len(url), ".sqlite3")) {
        rc = sqlite_target(url, cfg, err);
    } else if (strchr(url, '=') != NULL) {
        rc = postgres_target(url, cfg, err);
    } else {
        return sb__err(err, SB_INVALID, "url",
                       "unrecognised database URL (use sqlite:PATH, a path "
                       "ending in .db, postgresql://..., host=... "
                       "dbname=..., mssql://... or odbc:...)");
    }
    if (rc != SB_OK)
        sb__db_config_free(cfg);
    return rc;
}

/* libpq reads each port with strtol and then wants 1 to 65535; it says
 * so only when it connects, as if the server were down, so the driver
 * asks here first. */
int sb__pg_check_ports(const char *ports, sb_error *err)
{
    const char *p = ports;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        size_t a = 0, b = n;
        while (a < b && (p[a] == ' ' || p[a] == '\t' || p[a] == '\n'))
            a++;
        while (b > a &&
               (p[b - 1] == ' ' || p[b - 1] == '\t' || p[b - 1] == '\n'))
            b--;
        /* An empty entry is the default port (5432). */
        uint32_t v = 0;
        bool ok = true;
        for (size_t i = a; ok && i < b; i++) {
            ok = p[i] >= '0' && p[i] <= '9';
            v = v * 10 + (uint32_t)(p[i] - '0');
            ok = ok && v <= 65535;
        }
        if (a < b && (!ok || v == 0))
            return sb__err(err, SB_INVALID, "url",
                           "the PostgreSQL URL's port must be 1 to 65535 "
                           "(got \"%.*s\")",
                           (int)(b - a > 40 ? 40 : b - a), p + a);
        if (end == NULL)
            return SB_OK;
        p = end + 1;
    }
}

void sb__db_config_free(sb_db_config *cfg)
{
    if (cfg == NULL)
        return;
    sb__free(cfg->target);
    sb__free(cfg->schema);
    cfg->target = NULL;
    cfg->schema = NULL;
}
