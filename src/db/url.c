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

/* Parse "durability=normal&busy_timeout=250" options of a SQLite URL. */
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
            int64_t ms = 0;
            if (vn == 0 || vn > 9)
                return sb__err(err, SB_INVALID, "busy_timeout",
                               "busy_timeout must be 0..999999999 ms");
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return sb__err(err, SB_INVALID, "busy_timeout",
                                   "busy_timeout must be a number of ms");
                ms = ms * 10 + (v[i] - '0');
            }
            cfg->busy_timeout_ms = ms;
        } else {
            return sb__err(err, SB_INVALID, "url",
                           "unknown SQLite URL option \"%.*s\" (known: "
                           "durability, busy_timeout)",
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
                       "ending in .db, postgresql://... or host=... "
                       "dbname=...)");
    }
    if (rc != SB_OK)
        sb__db_config_free(cfg);
    return rc;
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
