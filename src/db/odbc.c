/* odbc.c - the ODBC driver (unixODBC): SQL Server through Microsoft's ODBC
 * Driver 18 or FreeTDS, and PostgreSQL's SQL through psqlODBC (which is
 * how CI proves this layer without a SQL Server). `$N` placeholders become
 * `?` with a parameter map; statements are prepared once per connection;
 * text travels as UTF-16 (SQL_C_WCHAR) both ways, converted from and to
 * UTF-8 here; results are read with SQLGetData into sb_rows as db.h
 * specifies; diagnostics are classified by SQLSTATE and SQL Server's
 * native error numbers. See docs/internals/db.md ("ODBC"). */
#include "db/db.h"
#include "db/tsql.h"

#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define STMT_CACHE 64
#define MAX_PARAMS 2100             /* SQL Server's cap per statement */
#define CHUNK 4096                  /* SQLGetData piece, in bytes */
#define VALUE_MAX ((size_t)1 << 31) /* bytes of one value read */
/* The UTF-16 of a text value of VALUE_MAX UTF-8 bytes is at most VALUE_MAX
 * units (every unit comes from one byte or more). */
#define WIDE_MAX (SIZE_MAX / 2 < VALUE_MAX ? SIZE_MAX : 2 * VALUE_MAX)

/* Text is bound and read as SQLWCHAR, converted with core's uint16_t
 * UTF-16: unixODBC's default (not built with SQL_WCHART_CONVERT). */
_Static_assert(sizeof(SQLWCHAR) == sizeof(uint16_t),
               "SQLWCHAR must be 2 bytes (UTF-16)");

typedef struct cached_stmt {
    char *sql; /* the caller's text ($N placeholders) */
    SQLHSTMT st;
    int *map; /* the caller's parameter index (0-based) of each '?' */
    size_t n_map;
    size_t nparams; /* the parameter count it was prepared for */
    char sig[65];   /* PostgreSQL: the first 64 parameters' types */
    bool is_select; /* the text starts with SELECT: it changes nothing */
    /* SQL Server: the text ends with SELECT @@ROWCOUNT, whose result is
     * the row count (db.h) */
    bool rowcount_select;
    uint64_t used; /* tick of the last use (LRU) */
} cached_stmt;

/* A text parameter as UTF-16, for SQL_C_WCHAR. */
typedef struct wide_text {
    uint16_t *u;  /* units and a 0 after them (sb__free); NULL: not text */
    size_t units; /* without the 0 */
} wide_text;

typedef struct odbc_conn {
    sb_conn base;
    SQLHENV env;
    SQLHDBC dbc;
    int dialect;
    bool broken;
    bool connected;
    /* A statement of the open transaction failed: PostgreSQL and SQL
     * Server (XACT_ABORT) have aborted it, whatever the driver does, so
     * later statements fail and the commit rolls back (as libpq's). */
    bool tx_failed;
    int64_t statement_timeout_ms; /* S10, named by a cancelled statement */
    sb_logger log;
    uint64_t tick;
    cached_stmt cache[STMT_CACHE];
} odbc_conn;

/* ---- diagnostics ---- */

/* The result code of a diagnostic record: SQL Server's number first (its
 * SQLSTATEs are coarse: 23000 for every constraint, 40001 for a deadlock),
 * then the SQLSTATE; ODBC's own states for a lost link and a timeout. */
static int classify(const char *state, long native, int dialect)
{
    if (dialect == SB_DIALECT_MSSQL) {
        int rc = sb__classify_mssql_native(native);
        if (rc != SB_OK)
            return rc;
    }
    if (strcmp(state, "HYT00") == 0 || strcmp(state, "HYT01") == 0)
        return SB_TIMEOUT;
    return sb__classify_sqlstate(state); /* 08S01: class 08, unavailable */
}

/* Fill `err` from the first diagnostic record of `h` and classify it;
 * `what` says what failed. A connection-class failure marks `c` broken. */
static int fail(odbc_conn *c, SQLSMALLINT type, SQLHANDLE h, sb_error *err,
                const char *what)
{
    SQLCHAR state[6] = "", msg[512] = "";
    SQLINTEGER native = 0;
    SQLSMALLINT len = 0;
    SQLRETURN r = SQLGetDiagRec(type, h, 1, state, &native, msg,
                                (SQLSMALLINT)sizeof msg, &len);
    if (!SQL_SUCCEEDED(r)) {
        sb__strlcpy((char *)state, "", sizeof state);
        sb__strlcpy((char *)msg, "no diagnostic record", sizeof msg);
    }
    int rc =
        classify((const char *)state, (long)native, c != NULL ? c->dialect : 0);
    /* A driver may report a lost server as a general error (HY000):
     * believe the connection's own state. */
    SQLUINTEGER dead = SQL_CD_FALSE;
    if (rc != SB_UNAVAILABLE && c != NULL && c->connected &&
        SQL_SUCCEEDED(SQLGetConnectAttr(c->dbc, SQL_ATTR_CONNECTION_DEAD, &dead,
                                        0, NULL)) &&
        dead == SQL_CD_TRUE)
        rc = SB_UNAVAILABLE;
    if (rc == SB_UNAVAILABLE && c != NULL)
        c->broken = true;
    for (char *m = (char *)msg; *m; m++) /* one line for logs */
        if (*m == '\n' || *m == '\r')
            *m = ' ';
    if (c != NULL && c->base.in_tx)
        c->tx_failed = true;
    if (rc == SB_TIMEOUT && c != NULL && c->statement_timeout_ms > 0)
        sb__err(err, rc, "statement_timeout_ms",
                "the statement ran longer than statement_timeout_ms (%lld "
                "ms) and was cancelled (odbc: [%s] %s)",
                (long long)c->statement_timeout_ms, (const char *)state,
                (const char *)msg);
    else
        sb__err(err, rc, NULL, "odbc: %s: [%s] %s", what, (const char *)state,
                (const char *)msg);
    if (err != NULL) {
        sb__strlcpy(err->sqlstate, (const char *)state, sizeof err->sqlstate);
        err->native = (int)native;
    }
    return rc;
}

/* The SQLSTATE that says why SQLDriverConnect failed, into `state`: the
 * first diagnostic record's that is not a warning (class 01: unixODBC
 * reports "01000 Can't open lib" before the IM002 or IM003 that names
 * the cause), else the first record's ("" without any). */
static void connect_state(odbc_conn *c, char state[6])
{
    state[0] = '\0';
    for (SQLSMALLINT i = 1; i <= 8; i++) {
        SQLCHAR s[6] = "";
        SQLINTEGER native = 0;
        SQLSMALLINT len = 0;
        if (!SQL_SUCCEEDED(SQLGetDiagRec(SQL_HANDLE_DBC, c->dbc, i, s, &native,
                                         NULL, 0, &len)))
            return;
        if (i == 1 || strncmp((const char *)s, "01", 2) != 0)
            memcpy(state, s, 6);
        if (strncmp((const char *)s, "01", 2) != 0)
            return;
    }
}

/* The informational records of a statement that succeeded with info
 * (PostgreSQL's notices, SQL Server's PRINT), logged at INFO. */
static void log_info(odbc_conn *c, SQLHSTMT st)
{
    for (SQLSMALLINT i = 1; i <= 8; i++) {
        SQLCHAR state[6] = "", msg[512] = "";
        SQLINTEGER native = 0;
        SQLSMALLINT len = 0;
        if (!SQL_SUCCEEDED(SQLGetDiagRec(SQL_HANDLE_STMT, st, i, state, &native,
                                         msg, (SQLSMALLINT)sizeof msg, &len)))
            return;
        sb__log(&c->log, SB_LOG_INFO, "db", "%s", (const char *)msg);
    }
}

/* Inside a failed transaction nothing runs until it ends. */
static int aborted(const odbc_conn *c, sb_error *err)
{
    int rc = sb__err(err, SB_BACKEND, NULL,
                     "odbc: the transaction failed earlier; it must be "
                     "rolled back");
    if (err != NULL)
        sb__strlcpy(err->sqlstate,
                    c->dialect == SB_DIALECT_POSTGRES ? "25P02" : "25000",
                    sizeof err->sqlstate);
    return rc;
}

/* SQL Server has no session statement timeout: each statement handle
 * gets the limit in whole seconds (HYT00 when it passes). */
static void statement_limit(const odbc_conn *c, SQLHSTMT st)
{
    if (c->dialect != SB_DIALECT_MSSQL || c->statement_timeout_ms <= 0)
        return;
    SQLULEN secs = (SQLULEN)((c->statement_timeout_ms + 999) / 1000);
    SQLSetStmtAttr(st, SQL_ATTR_QUERY_TIMEOUT, (SQLPOINTER)(uintptr_t)secs, 0);
}

/* ---- placeholders ---- */

/* The cast that gives a PostgreSQL parameter the type libpq's driver
 * declares for it (postgres.c: int8, bytea, text and NULL inferred):
 * psqlODBC sends parameters untyped, and `$1 * 1000` would be int4. */
static const char *pg_cast(int type)
{
    return type == SB_V_INT ? "::int8" : type == SB_V_BLOB ? "::bytea" : "";
}

/* `sql` with every $N outside quotes, identifiers and comments replaced by
 * '?' (typed as pg_cast says when `params` is given: PostgreSQL), and the
 * map of each '?' to N - 1. NULL on out of memory (*rc set) or a
 * placeholder past MAX_PARAMS / nparams (SB_INVALID). */
static char *rewrite(const char *sql, const sb_value *params, size_t nparams,
                     bool typed, int **map_out, size_t *n_out, int *rc,
                     sb_error *err)
{
    size_t len = strlen(sql), n = 0, cap = 8;
    size_t room = len + 1 + (typed ? 7 * (len / 2 + 1) : 0);
    char *out = sb__malloc(room);
    int *map = sb__malloc(cap * sizeof *map);
    *rc = SB_OK;
    if (out == NULL || map == NULL) {
        *rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        goto fail;
    }
    size_t o = 0;
    char quote = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = sql[i];
        if (quote != 0) {
            out[o++] = ch;
            if (quote == '-' ? ch == '\n' : ch == quote)
                quote = 0;
            continue;
        }
        if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '-' && sql[i + 1] == '-') {
            quote = '-';
        } else if (ch == '$' && sql[i + 1] >= '1' && sql[i + 1] <= '9') {
            size_t k = 0;
            while (sql[i + 1] >= '0' && sql[i + 1] <= '9' && k <= MAX_PARAMS)
                k = k * 10 + (size_t)(sql[++i] - '0');
            if (k > nparams || k > MAX_PARAMS) {
                *rc = sb__err(err, SB_INVALID, NULL,
                              "statement uses $%zu but has %zu parameters", k,
                              nparams);
                goto fail;
            }
            if (n == cap) {
                int *m = sb__realloc(map, cap * 2 * sizeof *m);
                if (m == NULL) {
                    *rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
                    goto fail;
                }
                map = m;
                cap *= 2;
            }
            map[n++] = (int)k - 1;
            out[o++] = '?';
            if (typed) {
                const char *cast = pg_cast(params[k - 1].type);
                size_t cl = strlen(cast);
                memcpy(out + o, cast, cl);
                o += cl;
            }
            continue;
        }
        out[o++] = ch;
    }
    out[o] = '\0';
    *map_out = map;
    *n_out = n;
    return out;
fail:
    sb__free(out);
    sb__free(map);
    return NULL;
}

/* ---- connection ---- */

static void drop_cached(cached_stmt *s)
{
    if (s->st != SQL_NULL_HSTMT)
        SQLFreeHandle(SQL_HANDLE_STMT, s->st);
    sb__free(s->sql);
    sb__free(s->map);
    memset(s, 0, sizeof *s);
}

static void odbc_close(sb_conn *conn)
{
    odbc_conn *c = (odbc_conn *)conn;
    if (c == NULL)
        return;
    for (int i = 0; i < STMT_CACHE; i++)
        drop_cached(&c->cache[i]);
    if (c->connected)
        SQLDisconnect(c->dbc);
    if (c->dbc != SQL_NULL_HDBC)
        SQLFreeHandle(SQL_HANDLE_DBC, c->dbc);
    if (c->env != SQL_NULL_HENV)
        SQLFreeHandle(SQL_HANDLE_ENV, c->env);
    sb__free(c);
}

static int exec_direct(odbc_conn *c, const char *sql, sb_error *err);
static int direct(odbc_conn *c, const char *sql, sb_rows **rows, sb_error *err);

/* The DBMS behind the data source must speak the URL's dialect. */
static int check_dbms(odbc_conn *c, int dialect, sb_error *err)
{
    SQLCHAR name[128] = "";
    SQLSMALLINT len = 0;
    SQLRETURN r =
        SQLGetInfo(c->dbc, SQL_DBMS_NAME, name, (SQLSMALLINT)sizeof name, &len);
    if (!SQL_SUCCEEDED(r))
        return fail(c, SQL_HANDLE_DBC, c->dbc, err, "SQLGetInfo");
    bool pg = strstr((const char *)name, "PostgreSQL") != NULL;
    bool ms = strstr((const char *)name, "SQL Server") != NULL;
    if ((dialect == SB_DIALECT_POSTGRES && !pg) ||
        (dialect == SB_DIALECT_MSSQL && !ms))
        return sb__err(err, SB_INVALID, "url",
                       "the ODBC data source is \"%s\", but the URL says %s "
                       "(odbc: and mssql:// are SQL Server, "
                       "odbc+postgresql: is PostgreSQL)",
                       (const char *)name,
                       dialect == SB_DIALECT_MSSQL ? "SQL Server"
                                                   : "PostgreSQL");
    /* Text travels as UTF-16, which psqlODBC's ANSI build refuses
     * (HYC00 at the first text parameter): say so at once. */
    SQLCHAR drv[128] = "";
    if (SQL_SUCCEEDED(SQLGetInfo(c->dbc, SQL_DRIVER_NAME, drv,
                                 (SQLSMALLINT)sizeof drv, &len)) &&
        strstr((const char *)drv, "psqlodbca") != NULL)
        return sb__err(err, SB_INVALID, "url",
                       "the ODBC driver is psqlODBC's ANSI build (%s), which "
                       "cannot take UTF-16 text: use Driver={PostgreSQL "
                       "Unicode}",
                       (const char *)drv);
    return SB_OK;
}

/* After connecting: the session settings db.h's conversions rely on. */
static int session_setup(odbc_conn *c, const sb_db_config *cfg, sb_error *err)
{
    char sql[160];
    int rc = SB_OK;
    if (c->dialect == SB_DIALECT_POSTGRES) {
        /* timestamptz arrives as a local timestamp: make local UTC. */
        rc = exec_direct(c, "SET TIME ZONE 'UTC'", err);
        if (rc == SB_OK && cfg->schema != NULL && cfg->schema[0] != '\0') {
            snprintf(sql, sizeof sql, "SET search_path TO \"%s\"",
                     cfg->schema); /* a validated identifier */
            rc = exec_direct(c, sql, err);
        }
        if (rc == SB_OK && cfg->statement_timeout_ms > 0) {
            snprintf(sql, sizeof sql, "SET statement_timeout = %lld",
                     (long long)cfg->statement_timeout_ms);
            rc = exec_direct(c, sql, err);
        }
    } else {
        /* The session options (tsql.h) and the database's compatibility
         * level in one round trip. Executed directly, not prepared: SET
         * in a prepared statement (sp_prepexec) would last only until it
         * returned. */
        sb_rows *rows = NULL;
        rc = direct(c, SB_TSQL_SESSION SB_TSQL_COMPAT_LEVEL, &rows, err);
        if (rc == SB_OK && rows->nrows > 0 && rows->ncols >= 2 &&
            rows->cells[0].type == SB_V_INT)
            rc = sb__tsql_check_compat(sb__rows_int(rows, 0, 0),
                                       sb__rows_text(rows, 0, 1), err);
        sb__rows_free(rows);
    }
    return rc;
}

static int odbc_connect(const sb_db_config *cfg, sb_conn **out, sb_error *err)
{
    *out = NULL;
    if (cfg == NULL || cfg->target == NULL)
        return sb__err(err, SB_INVALID, "url", "no ODBC connection string");
    odbc_conn *c = sb__calloc(1, sizeof *c);
    if (c == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    c->base.drv = sb__driver_odbc();
    c->base.opened_us = sb__mono_us();
    c->dialect = cfg->dialect;
    c->log = cfg->log;
    c->statement_timeout_ms = cfg->statement_timeout_ms;
    int rc = SB_OK;
    if (!SQL_SUCCEEDED(
            SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &c->env)) ||
        !SQL_SUCCEEDED(SQLSetEnvAttr(c->env, SQL_ATTR_ODBC_VERSION,
                                     (SQLPOINTER)SQL_OV_ODBC3, 0)) ||
        !SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_DBC, c->env, &c->dbc))) {
        odbc_close(&c->base);
        return sb__err(err, SB_NOMEM, NULL, "could not allocate ODBC handles");
    }
    SQLSetConnectAttr(c->dbc, SQL_ATTR_LOGIN_TIMEOUT, (SQLPOINTER)30, 0);
    /* psqlODBC: an error aborts the transaction as libpq's does (7.4-0:
     * no savepoint per statement, no rollback by the driver), and
     * booleans are bits. And the client encoding is named, so the driver
     * does not derive it from the locale: psqlODBC 13 does that with
     * setlocale(LC_CTYPE, ""), which changes the whole process's locale
     * and frees the name another thread's connect is reading (a
     * use-after-free ASan caught with two connects at once). Appended:
     * the first value of a key wins, so a URL that sets them keeps its
     * own. */
    sb_buf cs;
    sb__buf_init(&cs, 16384);
    sb__buf_puts(&cs, cfg->target);
    if (cfg->dialect == SB_DIALECT_POSTGRES)
        sb__buf_puts(&cs, ";Protocol=7.4-0;BoolsAsChar=0;"
                          "ConnSettings={set client_encoding to UTF8}");
    if (cs.failed) {
        sb__buf_free(&cs);
        odbc_close(&c->base);
        return sb__err(err, SB_INVALID, "url",
                       "the ODBC connection string is too long");
    }
    SQLRETURN r = SQLDriverConnect(c->dbc, NULL, (SQLCHAR *)cs.data, SQL_NTS,
                                   NULL, 0, NULL, SQL_DRIVER_NOPROMPT);
    sb__buf_free(&cs);
    if (!SQL_SUCCEEDED(r)) {
        sb_error mine;
        sb_error *e = err != NULL ? err : &mine;
        fail(c, SQL_HANDLE_DBC, c->dbc, e, "cannot connect");
        /* By the SQLSTATE's class, as libpq's failures to connect are: a
         * wrong URL (IM), a refused login (28) or database (3D), else the
         * database being unavailable (classify.c). */
        char state[6];
        connect_state(c, state);
        rc = sb__classify_odbc_connect(state);
        sb__strlcpy(e->sqlstate, state, sizeof e->sqlstate);
        e->code = rc;
        if (rc == SB_INVALID)
            sb__strlcpy(e->field, "url", sizeof e->field);
        odbc_close(&c->base);
        return rc;
    }
    c->connected = true;
    rc = check_dbms(c, cfg->dialect, err);
    if (rc == SB_OK)
        rc = session_setup(c, cfg, err);
    if (rc != SB_OK) {
        odbc_close(&c->base);
        return rc;
    }
    *out = &c->base;
    return SB_OK;
}

/* ---- statements ---- */

/* Drain every result of a statement (several statements in one text). */
static int drain(odbc_conn *c, SQLHSTMT st, sb_error *err)
{
    for (;;) {
        SQLRETURN r = SQLMoreResults(st);
        if (r == SQL_NO_DATA)
            return SB_OK;
        if (!SQL_SUCCEEDED(r))
            return fail(c, SQL_HANDLE_STMT, st, err, "statement");
    }
}

/* A connection found broken sends nothing more. */
static int gone(sb_error *err)
{
    return sb__err(err, SB_UNAVAILABLE, NULL, "odbc: the connection was lost");
}

static int mssql_result(odbc_conn *c, cached_stmt *s, bool no_data,
                        sb_rows **rows, int64_t *changes, sb_error *err);

/* A batch without parameters, executed directly (on SQL Server its SET
 * statements then last for the session). `rows` NULL: its results are
 * drained; else (SQL Server) *rows is its first result with columns,
 * read as mssql_result does (none: no rows). */
static int direct(odbc_conn *c, const char *sql, sb_rows **rows, sb_error *err)
{
    if (rows != NULL)
        *rows = NULL;
    if (c->broken)
        return gone(err);
    if (c->tx_failed)
        return aborted(c, err);
    SQLHSTMT st = SQL_NULL_HSTMT;
    if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_STMT, c->dbc, &st)))
        return fail(c, SQL_HANDLE_DBC, c->dbc, err, "SQLAllocHandle");
    statement_limit(c, st);
    SQLRETURN r = SQLExecDirect(st, (SQLCHAR *)sql, SQL_NTS);
    int rc = SB_OK;
    if (r == SQL_SUCCESS_WITH_INFO)
        log_info(c, st);
    if (r != SQL_NO_DATA && !SQL_SUCCEEDED(r)) {
        rc = fail(c, SQL_HANDLE_STMT, st, err, "exec");
    } else if (rows == NULL) {
        rc = drain(c, st, err);
    } else {
        cached_stmt one;
        memset(&one, 0, sizeof one);
        one.st = st;
        rc = mssql_result(c, &one, r == SQL_NO_DATA, rows, NULL, err);
    }
    SQLFreeHandle(SQL_HANDLE_STMT, st);
    return rc;
}

static int exec_direct(odbc_conn *c, const char *sql, sb_error *err)
{
    return direct(c, sql, NULL, err);
}

static int odbc_exec(sb_conn *conn, const char *sql, sb_error *err)
{
    return exec_direct((odbc_conn *)conn, sql, err);
}

/* The parameters' types as one letter each (PostgreSQL's statements are
 * typed by them: see pg_cast). */
static void signature(const odbc_conn *c, const sb_value *params,
                      size_t nparams, char sig[65])
{
    size_t n = 0;
    for (; c->dialect == SB_DIALECT_POSTGRES && n < nparams && n < 64; n++)
        sig[n] = params[n].type == SB_V_INT    ? 'i'
                 : params[n].type == SB_V_BLOB ? 'b'
                                               : 't'; /* text, NULL */
    sig[n] = '\0';
}

/* The cached statement for `sql` (and, on PostgreSQL, these parameter
 * types), prepared on first use (LRU eviction). */
static int prepared(odbc_conn *c, const char *sql, const sb_value *params,
                    size_t nparams, cached_stmt **out, sb_error *err)
{
    char sig[65];
    signature(c, params, nparams, sig);
    cached_stmt *victim = &c->cache[0];
    for (int i = 0; i < STMT_CACHE; i++) {
        cached_stmt *s = &c->cache[i];
        if (s->sql != NULL && strcmp(s->sql, sql) == 0 &&
            (strcmp(s->sig, sig) == 0 || s->nparams != nparams)) {
            if (s->nparams != nparams)
                return sb__err(err, SB_INVALID, NULL,
                               "statement prepared with %zu parameters is "
                               "run with %zu",
                               s->nparams, nparams);
            s->used = ++c->tick;
            *out = s;
            return SB_OK;
        }
        if (s->sql == NULL || s->used < victim->used)
            victim = s;
        if (s->sql == NULL)
            break;
    }
    drop_cached(victim);
    int rc = SB_OK;
    char *text =
        rewrite(sql, params, nparams, c->dialect == SB_DIALECT_POSTGRES,
                &victim->map, &victim->n_map, &rc, err);
    if (text == NULL)
        return rc;
    victim->sql = sb__strdup(sql);
    if (victim->sql == NULL) {
        sb__free(text);
        drop_cached(victim);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_STMT, c->dbc, &victim->st))) {
        sb__free(text);
        drop_cached(victim);
        return fail(c, SQL_HANDLE_DBC, c->dbc, err, "SQLAllocHandle");
    }
    statement_limit(c, victim->st);
    SQLRETURN r = SQLPrepare(victim->st, (SQLCHAR *)text, SQL_NTS);
    sb__free(text);
    if (!SQL_SUCCEEDED(r)) {
        rc = fail(c, SQL_HANDLE_STMT, victim->st, err, "prepare");
        drop_cached(victim);
        return rc;
    }
    const char *w = sql + strspn(sql, " \t\r\n(");
    victim->is_select = strncasecmp(w, "SELECT", 6) == 0;
    victim->rowcount_select =
        c->dialect == SB_DIALECT_MSSQL && sb__tsql_ends_with_rowcount(sql);
    victim->nparams = nparams;
    memcpy(victim->sig, sig, sizeof sig);
    victim->used = ++c->tick;
    *out = victim;
    return SB_OK;
}

/* Each text parameter of `params` as UTF-16 in `w` (one per parameter;
 * the others NULL), for bind_all. The caller frees them with free_wide
 * whatever this returns. Text that is not UTF-8 is SB_INVALID naming its
 * parameter, before anything reaches the database. */
static int to_wide(const sb_value *params, size_t nparams, wide_text *w,
                   sb_error *err)
{
    for (size_t i = 0; i < nparams; i++) {
        w[i].u = NULL;
        w[i].units = 0;
    }
    for (size_t i = 0; i < nparams; i++) {
        if (params[i].type != SB_V_TEXT)
            continue;
        int rc =
            sb__utf8_to_utf16(params[i].p, params[i].len, &w[i].u, &w[i].units);
        if (rc == SB_INVALID)
            return sb__err(err, rc, NULL,
                           "odbc: text parameter $%zu is not valid UTF-8",
                           i + 1);
        if (rc != SB_OK)
            return sb__err(err, rc, NULL, "out of memory");
    }
    return SB_OK;
}

static void free_wide(wide_text *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb__free(w[i].u);
}

/* Bind the caller's values to the '?'s; `ind` and `ints` hold what ODBC
 * reads at execution (one per '?'), `wide` the text parameters as UTF-16
 * (to_wide; one per parameter). All must live until SQLExecute has run. */
static int bind_all(odbc_conn *c, cached_stmt *s, const sb_value *params,
                    const wide_text *wide, SQLLEN *ind, int64_t *ints,
                    sb_error *err)
{
    for (size_t i = 0; i < s->n_map; i++) {
        const sb_value *v = &params[s->map[i]];
        SQLUSMALLINT pos = (SQLUSMALLINT)(i + 1);
        SQLRETURN r;
        switch (v->type) {
        case SB_V_INT:
            ints[i] = v->i;
            ind[i] = 0;
            r = SQLBindParameter(s->st, pos, SQL_PARAM_INPUT, SQL_C_SBIGINT,
                                 SQL_BIGINT, 0, 0, &ints[i], 0, &ind[i]);
            break;
        case SB_V_TEXT: {
            /* UTF-16 on every server: SQL_C_CHAR would go through SQL
             * Server's code page. The size is in characters (UTF-16
             * units), the lengths in bytes; past 4,000 units a LONG
             * type, as nvarchar takes no more without (max). */
            const wide_text *t = &wide[s->map[i]];
            ind[i] = (SQLLEN)(t->units * sizeof(SQLWCHAR));
            r = SQLBindParameter(
                s->st, pos, SQL_PARAM_INPUT, SQL_C_WCHAR,
                t->units > 4000 ? SQL_WLONGVARCHAR : SQL_WVARCHAR,
                t->units ? t->units : 1, 0, (SQLPOINTER)t->u,
                (SQLLEN)((t->units + 1) * sizeof(SQLWCHAR)), &ind[i]);
            break;
        }
        case SB_V_BLOB:
            /* Past 8,000 bytes a LONG type, as varbinary takes no more
             * without (max). */
            ind[i] = (SQLLEN)v->len;
            r = SQLBindParameter(s->st, pos, SQL_PARAM_INPUT, SQL_C_BINARY,
                                 v->len > 8000 ? SQL_LONGVARBINARY
                                               : SQL_VARBINARY,
                                 v->len ? v->len : 1, 0, (SQLPOINTER)v->p,
                                 (SQLLEN)v->len, &ind[i]);
            break;
        default:
            ind[i] = SQL_NULL_DATA;
            r = SQLBindParameter(s->st, pos, SQL_PARAM_INPUT, SQL_C_CHAR,
                                 SQL_VARCHAR, 1, 0, NULL, 0, &ind[i]);
            break;
        }
        if (!SQL_SUCCEEDED(r))
            return fail(c, SQL_HANDLE_STMT, s->st, err, "bind");
    }
    return SB_OK;
}

/* One binary cell read with SQLGetData in pieces. SQL_NULL_DATA leaves
 * the cell NULL. */
static int get_bytes(odbc_conn *c, SQLHSTMT st, SQLUSMALLINT col, sb_rows *rows,
                     size_t r, sb_error *err)
{
    sb_buf b;
    sb__buf_init(&b, VALUE_MAX);
    char piece[CHUNK];
    for (;;) {
        SQLLEN got = 0;
        SQLRETURN x =
            SQLGetData(st, col, SQL_C_BINARY, piece, sizeof piece, &got);
        if (x == SQL_NO_DATA)
            break;
        if (!SQL_SUCCEEDED(x)) {
            sb__buf_free(&b);
            return fail(c, SQL_HANDLE_STMT, st, err, "read");
        }
        if (got == SQL_NULL_DATA) {
            sb__buf_free(&b);
            return SB_OK;
        }
        size_t n = got == SQL_NO_TOTAL || (size_t)got > sizeof piece
                       ? sizeof piece
                       : (size_t)got;
        sb__buf_append(&b, piece, n);
        if (x == SQL_SUCCESS)
            break;
    }
    int rc = b.failed ? sb__err(err, b.failed, NULL, "a value is too big")
                      : sb__rows_set_bytes(rows, r, col - 1, SB_V_BLOB,
                                           b.data ? b.data : "", b.len);
    sb__buf_free(&b);
    return rc;
}

/* One character or GUID cell read with SQLGetData as UTF-16 in pieces
 * (each ends with a 0 unit), converted to UTF-8 once at the end, so a
 * surrogate pair split between pieces is whole again. SQL_NULL_DATA
 * leaves the cell NULL. */
static int get_text(odbc_conn *c, SQLHSTMT st, SQLUSMALLINT col, sb_rows *rows,
                    size_t r, sb_error *err)
{
    sb_buf b; /* the units so far, as bytes */
    sb__buf_init(&b, WIDE_MAX);
    SQLWCHAR piece[CHUNK / sizeof(SQLWCHAR)];
    const size_t room = sizeof piece - sizeof piece[0]; /* before the 0 */
    for (;;) {
        SQLLEN got = 0;
        SQLRETURN x =
            SQLGetData(st, col, SQL_C_WCHAR, piece, sizeof piece, &got);
        if (x == SQL_NO_DATA)
            break;
        if (!SQL_SUCCEEDED(x)) {
            sb__buf_free(&b);
            return fail(c, SQL_HANDLE_STMT, st, err, "read");
        }
        if (got == SQL_NULL_DATA) {
            sb__buf_free(&b);
            return SB_OK;
        }
        size_t n;
        if (got != SQL_NO_TOTAL && (size_t)got <= room) {
            n = (size_t)got;
        } else if (x == SQL_SUCCESS_WITH_INFO) {
            n = room; /* truncated: the piece is full */
        } else {
            /* The last piece of unknown length: up to its 0 unit. */
            size_t k = 0;
            while (k < room / sizeof piece[0] && piece[k] != 0)
                k++;
            n = k * sizeof piece[0];
        }
        sb__buf_append(&b, piece, n - n % sizeof piece[0]);
        if (x == SQL_SUCCESS)
            break;
    }
    if (b.failed) {
        sb__buf_free(&b);
        return sb__err(err, b.failed, NULL, "a value is too big");
    }
    char *s = NULL;
    size_t len = 0;
    int rc = sb__utf16_to_utf8((const uint16_t *)(const void *)b.data,
                               b.len / sizeof(uint16_t), &s, &len);
    sb__buf_free(&b);
    if (rc != SB_OK)
        return sb__err(err, rc, NULL, "out of memory");
    rc = len > VALUE_MAX
             ? sb__err(err, SB_TOOBIG, NULL, "a value is too big")
             : sb__rows_set_bytes(rows, r, col - 1, SB_V_TEXT, s, len);
    sb__free(s);
    return rc;
}

/* A timestamp (the session is UTC) as microseconds since the epoch. */
static int64_t timestamp_us(const SQL_TIMESTAMP_STRUCT *t)
{
    int64_t days = sb__days_from_civil(t->year, t->month, t->day);
    return ((days * 24 + t->hour) * 60 + t->minute) * 60000000LL +
           (int64_t)t->second * 1000000 + t->fraction / 1000;
}

static void lower_ascii(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

static int get_cell(odbc_conn *c, SQLHSTMT st, SQLUSMALLINT col,
                    SQLSMALLINT type, const char *name, sb_rows *rows, size_t r,
                    sb_error *err)
{
    SQLLEN got = 0;
    SQLRETURN x;
    sb_value *cell = &rows->cells[r * rows->ncols + (col - 1)];
    switch (type) {
    case SQL_BIT:
    case SQL_TINYINT:
    case SQL_SMALLINT:
    case SQL_INTEGER:
    case SQL_BIGINT: {
        SQLBIGINT v = 0;
        x = SQLGetData(st, col, SQL_C_SBIGINT, &v, 0, &got);
        if (!SQL_SUCCEEDED(x))
            return fail(c, SQL_HANDLE_STMT, st, err, "read");
        if (got != SQL_NULL_DATA)
            *cell = sb__v_int((int64_t)v);
        return SB_OK;
    }
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP: {
        SQL_TIMESTAMP_STRUCT t;
        memset(&t, 0, sizeof t);
        x = SQLGetData(st, col, SQL_C_TYPE_TIMESTAMP, &t, sizeof t, &got);
        if (!SQL_SUCCEEDED(x))
            return fail(c, SQL_HANDLE_STMT, st, err, "read");
        if (got != SQL_NULL_DATA)
            *cell = sb__v_int(timestamp_us(&t));
        return SB_OK;
    }
    case SQL_BINARY:
    case SQL_VARBINARY:
    case SQL_LONGVARBINARY: return get_bytes(c, st, col, rows, r, err);
    case SQL_GUID: {
        int rc = get_text(c, st, col, rows, r, err);
        if (rc == SB_OK && cell->type == SB_V_TEXT)
            lower_ascii((char *)cell->p);
        return rc;
    }
    case SQL_CHAR:
    case SQL_VARCHAR:
    case SQL_LONGVARCHAR:
    case SQL_WCHAR:
    case SQL_WVARCHAR:
    case SQL_WLONGVARCHAR: return get_text(c, st, col, rows, r, err);
    default:
        return sb__err(err, SB_BACKEND, NULL,
                       "odbc: result column %u \"%s\" has SQL type %d, which "
                       "sqlbus does not read (cast it to an integer or text)",
                       (unsigned)col, name, (int)type);
    }
}

/* Read every row of the current result into *rows. */
static int read_rows(odbc_conn *c, SQLHSTMT st, SQLSMALLINT ncols,
                     sb_rows **rows, sb_error *err)
{
    SQLSMALLINT types[64];
    char names[64][64];
    if (ncols > 64)
        return sb__err(err, SB_BACKEND, NULL,
                       "odbc: %d result columns; the limit is 64", (int)ncols);
    for (SQLSMALLINT i = 0; i < ncols; i++) {
        SQLULEN size = 0;
        SQLSMALLINT digits = 0, nullable = 0, len = 0;
        if (!SQL_SUCCEEDED(
                SQLDescribeCol(st, (SQLUSMALLINT)(i + 1), (SQLCHAR *)names[i],
                               (SQLSMALLINT)sizeof names[i], &len, &types[i],
                               &size, &digits, &nullable)))
            return fail(c, SQL_HANDLE_STMT, st, err, "describe");
    }
    size_t cap = 16, n = 0;
    sb_rows *acc = NULL;
    int rc = sb__rows_new(cap, (size_t)ncols, &acc);
    while (rc == SB_OK) {
        SQLRETURN x = SQLFetch(st);
        if (x == SQL_NO_DATA)
            break;
        if (!SQL_SUCCEEDED(x)) {
            rc = fail(c, SQL_HANDLE_STMT, st, err, "fetch");
            break;
        }
        if (n == cap) {
            rc = sb__rows_grow(acc, cap * 2);
            if (rc != SB_OK) {
                rc = sb__err(err, rc, NULL, "out of memory");
                break;
            }
            cap *= 2;
        }
        for (SQLSMALLINT i = 0; rc == SB_OK && i < ncols; i++)
            rc = get_cell(c, st, (SQLUSMALLINT)(i + 1), types[i], names[i], acc,
                          n, err);
        n++;
    }
    if (rc != SB_OK) {
        sb__rows_free(acc);
        return rc;
    }
    acc->nrows = n;
    *rows = acc;
    return SB_OK;
}

static int run_prepared(odbc_conn *c, cached_stmt *s, const sb_value *params,
                        const wide_text *wide, sb_rows **rows, int64_t *changes,
                        sb_error *err);

static int odbc_query(sb_conn *conn, const char *sql, const sb_value *params,
                      size_t nparams, sb_rows **rows, int64_t *changes,
                      sb_error *err)
{
    odbc_conn *c = (odbc_conn *)conn;
    if (rows != NULL)
        *rows = NULL;
    if (c->broken)
        return gone(err);
    if (c->tx_failed)
        return aborted(c, err);
    /* The text parameters as UTF-16, kept until the statement has run. */
    wide_text wide_stack[16];
    wide_text *wide = wide_stack;
    if (nparams > 16) {
        wide = sb__calloc(nparams, sizeof *wide);
        if (wide == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    int rc = to_wide(params, nparams, wide, err);
    cached_stmt *s = NULL;
    if (rc == SB_OK)
        rc = prepared(c, sql, params, nparams, &s, err);
    if (rc == SB_OK) {
        rc = run_prepared(c, s, params, wide, rows, changes, err);
        if (rc != SB_OK && !c->base.in_tx && err != NULL &&
            strcmp(err->sqlstate, "26000") == 0) {
            /* The server forgot the statement (DEALLOCATE ALL, a
             * pooler): prepare it again, once. */
            drop_cached(s);
            rc = prepared(c, sql, params, nparams, &s, err);
            if (rc == SB_OK)
                rc = run_prepared(c, s, params, wide, rows, changes, err);
        }
    }
    free_wide(wide, nparams);
    if (wide != wide_stack)
        sb__free(wide);
    return rc;
}

/* The result of a statement on SQL Server, which may be a batch: results
 * that are SQL_NO_DATA (an UPDATE that touched no row) or have no columns
 * (the row counts of statements before a SELECT) are skipped; the first
 * with columns is the caller's rows. The row count: for a statement
 * ending with SELECT @@ROWCOUNT (db.h) that result's first cell, else the
 * last count the skipped results reported. No result with columns: no
 * rows. */
static int mssql_result(odbc_conn *c, cached_stmt *s, bool no_data,
                        sb_rows **rows, int64_t *changes, sb_error *err)
{
    SQLHSTMT st = s->st;
    SQLSMALLINT ncols = 0;
    int64_t counted = 0;
    for (;;) {
        if (!no_data && !SQL_SUCCEEDED(SQLNumResultCols(st, &ncols)))
            return fail(c, SQL_HANDLE_STMT, st, err, "result");
        if (!no_data && ncols > 0)
            break;
        SQLLEN n = 0;
        if (!no_data && SQL_SUCCEEDED(SQLRowCount(st, &n)) && n >= 0)
            counted = n;
        SQLRETURN x = SQLMoreResults(st);
        if (x == SQL_NO_DATA) {
            if (changes != NULL)
                *changes = s->rowcount_select ? 0 : counted;
            if (rows != NULL && sb__rows_new(0, 0, rows) != SB_OK)
                return sb__err(err, SB_NOMEM, NULL, "out of memory");
            return SB_OK;
        }
        if (x == SQL_SUCCESS_WITH_INFO)
            log_info(c, st);
        if (!SQL_SUCCEEDED(x))
            return fail(c, SQL_HANDLE_STMT, st, err, "statement");
        no_data = false;
    }
    sb_rows *got = NULL;
    int rc = read_rows(c, st, ncols, &got, err);
    if (rc != SB_OK)
        return rc;
    if (changes != NULL)
        *changes = !s->rowcount_select ? counted
                   : got->nrows > 0    ? sb__rows_int(got, 0, 0)
                                       : 0;
    if (rows != NULL)
        *rows = got;
    else
        sb__rows_free(got);
    return SB_OK;
}

/* The result of any other statement: the row count from SQLRowCount, the
 * rows of its first result. */
static int plain_result(odbc_conn *c, cached_stmt *s, bool no_data,
                        sb_rows **rows, int64_t *changes, sb_error *err)
{
    int rc = SB_OK;
    if (changes != NULL) {
        /* Drivers report a SELECT's row count here too: a query changes
         * nothing (libpq and SQLite say 0). */
        SQLLEN n = 0;
        *changes =
            !s->is_select && SQL_SUCCEEDED(SQLRowCount(s->st, &n)) && n > 0 ? n
                                                                            : 0;
    }
    SQLSMALLINT ncols = 0;
    if (!SQL_SUCCEEDED(SQLNumResultCols(s->st, &ncols)))
        rc = fail(c, SQL_HANDLE_STMT, s->st, err, "result");
    if (rc == SB_OK && rows != NULL) {
        if (ncols > 0 && !no_data)
            rc = read_rows(c, s->st, ncols, rows, err);
        else
            rc = sb__rows_new(0, (size_t)ncols, rows);
    }
    return rc;
}

/* Bind, execute and read one prepared statement. */
static int run_prepared(odbc_conn *c, cached_stmt *s, const sb_value *params,
                        const wide_text *wide, sb_rows **rows, int64_t *changes,
                        sb_error *err)
{
    int rc = SB_OK;
    SQLLEN ind_stack[16];
    int64_t int_stack[16];
    SQLLEN *ind = ind_stack;
    int64_t *ints = int_stack;
    if (s->n_map > 16) {
        ind = sb__malloc(s->n_map * sizeof *ind);
        ints = sb__malloc(s->n_map * sizeof *ints);
        if (ind == NULL || ints == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    if (rc == SB_OK)
        rc = bind_all(c, s, params, wide, ind, ints, err);
    /* An UPDATE or DELETE that touched no row answers SQL_NO_DATA, and
     * then has no result set to describe, even with RETURNING. */
    bool no_data = false;
    if (rc == SB_OK) {
        SQLRETURN x = SQLExecute(s->st);
        no_data = x == SQL_NO_DATA;
        if (x == SQL_SUCCESS_WITH_INFO)
            log_info(c, s->st);
        if (x != SQL_NO_DATA && !SQL_SUCCEEDED(x))
            rc = fail(c, SQL_HANDLE_STMT, s->st, err, "execute");
    }
    if (rc == SB_OK)
        rc = c->dialect == SB_DIALECT_MSSQL
                 ? mssql_result(c, s, no_data, rows, changes, err)
                 : plain_result(c, s, no_data, rows, changes, err);
    SQLFreeStmt(s->st, SQL_CLOSE);
    SQLFreeStmt(s->st, SQL_RESET_PARAMS);
    if (ind != ind_stack) {
        sb__free(ind);
        sb__free(ints);
    }
    return rc;
}

/* ---- transactions ---- */

static int autocommit(odbc_conn *c, bool on, sb_error *err)
{
    SQLRETURN r = SQLSetConnectAttr(
        c->dbc, SQL_ATTR_AUTOCOMMIT,
        (SQLPOINTER)(uintptr_t)(on ? SQL_AUTOCOMMIT_ON : SQL_AUTOCOMMIT_OFF),
        0);
    return SQL_SUCCEEDED(r)
               ? SB_OK
               : fail(c, SQL_HANDLE_DBC, c->dbc, err, "autocommit");
}

/* SQL Server: transactions in T-SQL on an autocommit connection, so one
 * is open from BEGIN on, as sp_getapplock's transaction-owned locks need
 * (in manual-commit mode a batch that starts with EXEC would run before
 * any transaction). XACT_ABORT (session_setup) ends it at an error. The
 * rollback also puts LOCK_TIMEOUT back (tsql.h, SB_TSQL_ROLLBACK): a
 * batch that bounds its lock waits runs in a transaction, and when an
 * attention or a compile error stops it before it resets the bound
 * itself, the caller's rollback (sb__db_run_tx, sb__pool_release of a
 * connection still in a transaction, a failed commit) follows before the
 * connection is used again; a rollback that fails drops the connection.
 * In the same batch: no extra round trip. */
static const char mssql_begin[] = SB_TSQL_BEGIN;
static const char mssql_commit[] = SB_TSQL_COMMIT;
static const char mssql_rollback[] = SB_TSQL_ROLLBACK;

static int odbc_begin(sb_conn *conn, sb_error *err)
{
    odbc_conn *c = (odbc_conn *)conn;
    if (c->broken)
        return gone(err);
    c->tx_failed = false;
    if (c->dialect == SB_DIALECT_MSSQL)
        return exec_direct(c, mssql_begin, err);
    return autocommit(c, false, err);
}

static int end_tran(odbc_conn *c, SQLSMALLINT how, sb_error *err)
{
    if (c->dialect == SB_DIALECT_MSSQL) {
        if (c->broken)
            return gone(err);
        c->tx_failed = false; /* the ROLLBACK itself must be sent */
        if (how == SQL_COMMIT)
            return exec_direct(c, mssql_commit, err);
        /* A rollback that failed leaves a transaction and LOCK_TIMEOUT
         * in doubt: the pool drops the connection (odbc_broken). */
        int rc = exec_direct(c, mssql_rollback, err);
        if (rc != SB_OK)
            c->broken = true;
        return rc;
    }
    SQLRETURN r = SQLEndTran(SQL_HANDLE_DBC, c->dbc, how);
    int rc = SQL_SUCCEEDED(r) ? SB_OK
                              : fail(c, SQL_HANDLE_DBC, c->dbc, err,
                                     how == SQL_COMMIT ? "commit" : "rollback");
    sb_error e2;
    int arc = autocommit(c, true, &e2);
    if (rc == SB_OK && arc != SB_OK) {
        c->broken = true;
        if (err != NULL)
            *err = e2;
        rc = arc;
    }
    return rc;
}

static int odbc_commit(sb_conn *conn, sb_error *err)
{
    odbc_conn *c = (odbc_conn *)conn;
    if (c->tx_failed) {
        /* As PostgreSQL answers COMMIT of an aborted transaction: it is
         * over, and nothing of it was kept. */
        (void)end_tran(c, SQL_ROLLBACK, NULL);
        c->tx_failed = false;
        c->base.in_tx = false;
        return sb__err(err, SB_BACKEND, NULL,
                       "odbc: the transaction had failed and was rolled "
                       "back");
    }
    int rc = end_tran(c, SQL_COMMIT, err);
    /* A failed commit has ended the transaction too (the server rolled
     * it back, or the connection is gone); on SQL Server make sure. */
    if (rc != SB_OK && c->dialect == SB_DIALECT_MSSQL)
        (void)end_tran(c, SQL_ROLLBACK, NULL);
    c->base.in_tx = false;
    return rc;
}

static int odbc_rollback(sb_conn *conn)
{
    odbc_conn *c = (odbc_conn *)conn;
    c->tx_failed = false;
    return end_tran(c, SQL_ROLLBACK, NULL);
}

static void *odbc_native(sb_conn *conn)
{
    return (void *)((odbc_conn *)conn)->dbc;
}

static bool odbc_broken(sb_conn *conn)
{
    odbc_conn *c = (odbc_conn *)conn;
    if (c->broken)
        return true;
    SQLUINTEGER dead = SQL_CD_FALSE;
    if (SQL_SUCCEEDED(SQLGetConnectAttr(c->dbc, SQL_ATTR_CONNECTION_DEAD, &dead,
                                        0, NULL)) &&
        dead == SQL_CD_TRUE)
        c->broken = true;
    return c->broken;
}

static const sb_driver odbc_driver = {
    .name = "odbc",
    .dialect = SB_DIALECT_MSSQL,
    .max_params = MAX_PARAMS,
    .connect = odbc_connect,
    .close = odbc_close,
    .exec = odbc_exec,
    .query = odbc_query,
    .begin = odbc_begin,
    .commit = odbc_commit,
    .rollback = odbc_rollback,
    .native = odbc_native,
    .broken = odbc_broken,
};

const sb_driver *sb__driver_odbc(void)
{
    return &odbc_driver;
}
