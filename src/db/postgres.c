/*
 * postgres.c - the PostgreSQL driver (libpq).
 *
 * Statements are prepared once per connection and cached by their SQL
 * text (PostgreSQL already speaks `$1..$N`, so nothing is rewritten).
 * Results are requested in binary format and converted by column type
 * into sb_value as db.h specifies; a type with no exact mapping (numeric,
 * float, arrays, ...) is an error naming the column, so callers cast in
 * SQL instead of silently losing precision. Errors are classified by
 * SQLSTATE only (classify.c); a connection that fails at the transport
 * level is marked broken so the pool discards it.
 */
#include "db/db.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Type OIDs (src/include/catalog/pg_type.dat; fixed since 7.x). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_NAME 19
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_OID 26
#define OID_JSON 114
#define OID_BPCHAR 1042
#define OID_VARCHAR 1043
#define OID_TIMESTAMP 1114
#define OID_TIMESTAMPTZ 1184
#define OID_UUID 2950
#define OID_JSONB 3802

/* Microseconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch. */
#define PG_EPOCH_OFFSET_US INT64_C(946684800000000)

#define STMT_CACHE_SIZE 64
#define STACK_PARAMS 16
#define INT_TEXT_SIZE 24
#define MAX_PARAMS 65535 /* the protocol's limit */

typedef struct pg_stmt {
    char *sql;     /* cache key; NULL = free slot */
    uint64_t hash; /* of sql */
    uint64_t used; /* LRU tick */
    unsigned id;   /* server-side name "sb<id>" */
    size_t nparams;
    int64_t prepared_us; /* monotonic */
    int64_t ttl_us;      /* prepared again once this old */
} pg_stmt;

typedef struct pg_conn {
    struct sb_conn base; /* first: sb_conn * and pg_conn * convert */
    PGconn *pg;
    sb_logger log;
    bool broken;
    /* BEGIN not sent yet: it goes out with the transaction's first
     * statement, in one round trip (pg_pipeline). */
    bool begin_pending;
    int64_t statement_timeout_ms; /* set on the session; 0 = none */
    unsigned next_id;
    uint64_t tick;
    pg_stmt cache[STMT_CACHE_SIZE];
} pg_conn;

static const sb_driver pg_driver;

/* ---- errors ---- */

/* Length of `s` without trailing newlines and spaces (libpq ends its
 * messages with "\n"). */
static int trimmed_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        n--;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* libpq's own messages span lines ("FATAL: ...\nserver closed the
 * connection ...", "\tIs the server running ..."); keep sb_error.message
 * on one line for logs. */
static void flatten_message(sb_error *err)
{
    if (err == NULL)
        return;
    char *m = err->message;
    size_t k = 0;
    for (size_t i = 0; m[i] != '\0'; i++) {
        char ch = m[i];
        if (ch == '\n' || ch == '\r' || ch == '\t')
            ch = ' ';
        if (ch == ' ' && (k == 0 || m[k - 1] == ' '))
            continue;
        m[k++] = ch;
    }
    while (k > 0 && m[k - 1] == ' ')
        k--;
    m[k] = '\0';
}

static int err_broken(sb_error *err)
{
    return sb__err(err, SB_UNAVAILABLE, NULL,
                   "the PostgreSQL connection is broken; open a new one");
}

/*
 * Fill `err` from a failed result (`res` may be NULL) and return the code.
 * The code comes from the SQLSTATE; a connection libpq reports as bad, a
 * FATAL/PANIC error (the server ends the session) or a failure without a
 * SQLSTATE (libpq's own: the session state is unknown) make the
 * connection broken and the code SB_UNAVAILABLE.
 */
static int fail_result(pg_conn *pc, const PGresult *res, sb_error *err)
{
    const char *state = NULL, *primary = NULL, *detail = NULL, *sev = NULL;
    if (res != NULL) {
        state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
        sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    }
    int code = sb__classify_sqlstate(state);
    if (res == NULL || PQstatus(pc->pg) == CONNECTION_BAD || state == NULL ||
        state[0] == '\0' ||
        (sev != NULL &&
         (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)))
        code = SB_UNAVAILABLE;
    if (code == SB_UNAVAILABLE)
        pc->broken = true;

    if (code == SB_TIMEOUT && primary != NULL) {
        /* 57014: our statement_timeout (S10), the server's own, or a
         * cancel from another session; PostgreSQL's text says which. */
        if (pc->statement_timeout_ms > 0)
            sb__err(err, code, "statement_timeout_ms",
                    "the statement ran longer than statement_timeout_ms "
                    "(%lld ms) and was cancelled (PostgreSQL: %.*s)",
                    (long long)pc->statement_timeout_ms, trimmed_len(primary),
                    primary);
        else
            sb__err(err, code, NULL,
                    "the statement was cancelled (PostgreSQL: %.*s); "
                    "statement_timeout_ms is 0, so the server's "
                    "statement_timeout or another session cancelled it",
                    trimmed_len(primary), primary);
    } else if (primary == NULL) {
        const char *m = res != NULL ? PQresultErrorMessage(res) : "";
        if (m == NULL || m[0] == '\0')
            m = PQerrorMessage(pc->pg);
        if (m == NULL || m[0] == '\0')
            m = "PostgreSQL returned no result";
        sb__err(err, code, NULL, "%.*s", trimmed_len(m), m);
    } else if (detail != NULL && detail[0] != '\0') {
        sb__err(err, code, NULL, "%.*s: %.*s", trimmed_len(primary), primary,
                trimmed_len(detail), detail);
    } else {
        sb__err(err, code, NULL, "%.*s", trimmed_len(primary), primary);
    }
    flatten_message(err);
    if (err != NULL && state != NULL)
        sb__strlcpy(err->sqlstate, state, sizeof err->sqlstate);
    return code;
}

/*
 * Check the status of a result. SB_OK for a command or rows (and an empty
 * query); COPY is refused (the connection would be left in COPY mode, so it
 * is marked broken); anything else is classified by fail_result.
 */
static int check_result(pg_conn *pc, const PGresult *res, sb_error *err)
{
    if (res == NULL)
        return fail_result(pc, NULL, err);
    switch (PQresultStatus(res)) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK:
    case PGRES_EMPTY_QUERY: return SB_OK;
    case PGRES_COPY_IN:
    case PGRES_COPY_OUT:
    case PGRES_COPY_BOTH:
        pc->broken = true;
        return sb__err(err, SB_INVALID, "sql",
                       "COPY is not supported through sqlbus statements");
    default: return fail_result(pc, res, err);
    }
}

/* Run a command without parameters and check its result. */
static int run_simple(pg_conn *pc, const char *sql, PGresult **res_out,
                      sb_error *err)
{
    if (pc->broken)
        return err_broken(err);
    PGresult *res = PQexec(pc->pg, sql);
    int rc = check_result(pc, res, err);
    if (res_out != NULL && rc == SB_OK)
        *res_out = res;
    else
        PQclear(res);
    return rc;
}

/* ---- notices ---- */

/* libpq's default prints notices to stderr; the library never prints, so
 * they go to the log callback instead. */
static void on_notice(void *arg, const char *message)
{
    pg_conn *pc = arg;
    sb__log(&pc->log, SB_LOG_DEBUG, "postgres", "%.*s", trimmed_len(message),
            message);
}

/* ---- connect / close ---- */

static void pg_close(sb_conn *c)
{
    pg_conn *pc = (pg_conn *)c;
    if (pc == NULL)
        return;
    if (pc->pg != NULL)
        PQfinish(pc->pg);
    for (size_t i = 0; i < STMT_CACHE_SIZE; i++)
        sb__free(pc->cache[i].sql);
    sb__free(pc);
}

static int set_search_path(pg_conn *pc, const char *schema, sb_error *err)
{
    char *quoted = PQescapeIdentifier(pc->pg, schema, strlen(schema));
    if (quoted == NULL)
        return sb__err(err, SB_INVALID, "schema", "bad schema name: %.*s",
                       trimmed_len(PQerrorMessage(pc->pg)),
                       PQerrorMessage(pc->pg));
    sb_buf b;
    sb__buf_init(&b, 1024);
    sb__buf_puts(&b, "SET search_path TO ");
    sb__buf_puts(&b, quoted);
    PQfreemem(quoted);
    int rc;
    if (b.failed)
        rc = sb__err(err, b.failed, "schema", "schema name too long");
    else
        rc = run_simple(pc, b.data, NULL, err);
    sb__buf_free(&b);
    return rc;
}

/* libpq's own reading of the URL, which makes no connection: a URL it
 * cannot parse, an option it does not know and a port that is not one
 * are the caller's to fix (SB_INVALID, field "url"). Without this they
 * surface from the connect, looking like a server that is down. */
static int check_target(const char *target, sb_error *err)
{
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(target, &why);
    if (opts == NULL) {
        if (why == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        int rc = sb__err(err, SB_INVALID, "url", "invalid PostgreSQL URL: %.*s",
                         trimmed_len(why), why);
        PQfreemem(why);
        flatten_message(err);
        return rc;
    }
    int rc = SB_OK;
    for (const PQconninfoOption *o = opts; o->keyword != NULL; o++)
        if (strcmp(o->keyword, "port") == 0 && o->val != NULL)
            rc = sb__pg_check_ports(o->val, err);
    PQconninfoFree(opts);
    return rc;
}

/* The connection's connect_timeout in seconds as libpq applies it (a
 * positive value under 2 is 2; 0, negative or unset: none), from the
 * URL or PGCONNECT_TIMEOUT. */
static int connect_timeout_s(PGconn *pg)
{
    PQconninfoOption *opts = PQconninfo(pg);
    long s = 0;
    for (const PQconninfoOption *o = opts; o != NULL && o->keyword != NULL;
         o++) {
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val != NULL) {
            char *end = NULL;
            errno = 0;
            s = strtol(o->val, &end, 10);
            if (errno != 0 || end == o->val || s < 0 || s > INT_MAX)
                s = 0;
        }
    }
    PQconninfoFree(opts);
    return s > 0 && s < 2 ? 2 : (int)s;
}

/* Whether the connection's URL names more than one host. */
static bool several_hosts(PGconn *pg)
{
    PQconninfoOption *opts = PQconninfo(pg);
    bool several = false;
    for (const PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++)
        if ((strcmp(o->keyword, "host") == 0 ||
             strcmp(o->keyword, "hostaddr") == 0) &&
            o->val != NULL && strchr(o->val, ',') != NULL)
            several = true;
    PQconninfoFree(opts);
    return several;
}

/*
 * Drive a connection PQconnectStartParams began until it is made or has
 * failed, waiting on its socket as PQconnectPoll asks, as libpq's own
 * PQconnectdbParams does (which cannot be used: the verbosity that
 * carries the server's SQLSTATE must be set on the connection before the
 * server answers). connect_timeout bounds the wait for each host; when it
 * passes the attempt ends, where libpq would go on to the URL's next host
 * (its state for that is internal): a URL of several hosts with a
 * connect_timeout is left to PQconnectdbParams (pg_connect). Returns 1
 * when PQconnectPoll
 * decided, 0 on the timeout, -1 when waiting failed.
 */
static int finish_connect(PGconn *pg)
{
    int timeout_s = connect_timeout_s(pg);
    const char *host = NULL, *port = NULL;
    int64_t deadline_us = 0;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING) {
        if (timeout_s > 0 && (PQhost(pg) != host || PQport(pg) != port)) {
            host = PQhost(pg);
            port = PQport(pg);
            deadline_us = sb__mono_us() + (int64_t)timeout_s * 1000000;
        }
        struct pollfd p = {.fd = PQsocket(pg),
                           .events =
                               st == PGRES_POLLING_READING ? POLLIN : POLLOUT};
        int ms = -1;
        if (deadline_us != 0) {
            int64_t left = deadline_us - sb__mono_us();
            if (left <= 0)
                return 0;
            ms = left / 1000 + 1 > INT_MAX ? INT_MAX : (int)(left / 1000 + 1);
        }
        int n = poll(&p, 1, ms);
        if (n < 0 && errno != EINTR)
            return -1;
        if (n > 0)
            st = PQconnectPoll(pg);
    }
    return 1;
}

/*
 * The error of a connection that was not made. When the server answered,
 * its SQLSTATE decides (sb__classify_sqlstate): an unknown database
 * (3D000), role or password (28000, 28P01) is permanent, SB_BACKEND;
 * too_many_connections (53300) or a server starting up (57P03)
 * transient. Without an answer the server is down or unreachable
 * (SB_UNAVAILABLE), unless libpq refused the URL's options before trying
 * (PQPING_NO_ATTEMPT: sslmode=bogus and the like), which makes it
 * SB_INVALID. `waited`: finish_connect's result.
 */
static int connect_failed(PGconn *pg, int waited, bool failed_at_start,
                          const char *const *keys, const char *const *vals,
                          sb_error *err)
{
    char state[6], text[sizeof err->message];
    sb__pg_connect_error(PQerrorMessage(pg), state, text, sizeof text);
    int rc = state[0] != '\0' ? sb__classify_sqlstate(state) : SB_UNAVAILABLE;
    if (state[0] == '\0' && failed_at_start &&
        PQpingParams(keys, vals, 1) == PQPING_NO_ATTEMPT)
        rc = SB_INVALID;
    if (waited == 0)
        sb__err(err, rc, NULL,
                "cannot connect to PostgreSQL: no answer from %s port %s "
                "within connect_timeout (%d s)",
                PQhost(pg), PQport(pg), connect_timeout_s(pg));
    else if (waited < 0)
        sb__err(err, rc, NULL,
                "cannot connect to PostgreSQL: waiting on the connection's "
                "socket failed");
    else
        sb__err(err, rc, rc == SB_INVALID ? "url" : NULL,
                "cannot connect to PostgreSQL: %.*s", trimmed_len(text), text);
    flatten_message(err);
    if (err != NULL)
        sb__strlcpy(err->sqlstate, state, sizeof err->sqlstate);
    return rc;
}

static int pg_connect(const sb_db_config *cfg, sb_conn **out, sb_error *err)
{
    *out = NULL;
    if (cfg == NULL || cfg->target == NULL)
        return sb__err(err, SB_INVALID, "url",
                       "no PostgreSQL connection "
                       "string");
    pg_conn *pc = sb__calloc(1, sizeof *pc);
    if (pc == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    pc->base.drv = &pg_driver;
    pc->base.in_tx = false;
    pc->base.opened_us = sb__mono_us();
    pc->log = cfg->log;

    int rc = check_target(cfg->target, err);
    if (rc != SB_OK) {
        sb__free(pc);
        return rc;
    }
    /* The target is a URI or key=value string (expand_dbname). Parameters
     * after dbname override what it expands to, so client_encoding is
     * always UTF8 (sqlbus text is UTF-8); fallback_application_name names
     * the session "sqlbus" unless the URL sets application_name. */
    const char *const keys[] = {"dbname", "fallback_application_name",
                                "client_encoding", NULL};
    const char *const vals[] = {cfg->target, "sqlbus", "UTF8", NULL};
    pc->pg = PQconnectStartParams(keys, vals, 1);
    if (pc->pg == NULL) {
        sb__free(pc);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    /* Before the server is heard from, which is in PQconnectPoll: its
     * errors then carry their SQLSTATE (connect_failed). */
    PQsetErrorVerbosity(pc->pg, PQERRORS_VERBOSE);
    bool failed_at_start = PQstatus(pc->pg) == CONNECTION_BAD;
    int waited = 1;
    if (!failed_at_start && connect_timeout_s(pc->pg) > 0 &&
        several_hosts(pc->pg)) {
        /* Failover first: only libpq's own loop moves on to the next
         * host when one does not answer within connect_timeout. Its
         * errors carry no SQLSTATE, so a refusal counts as transient. */
        PQfinish(pc->pg);
        pc->pg = PQconnectdbParams(keys, vals, 1);
        if (pc->pg == NULL) {
            sb__free(pc);
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        }
    } else if (!failed_at_start) {
        waited = finish_connect(pc->pg);
    }
    if (PQstatus(pc->pg) != CONNECTION_OK) {
        rc = connect_failed(pc->pg, waited, failed_at_start, keys, vals, err);
        pg_close(&pc->base);
        return rc;
    }
    PQsetErrorVerbosity(pc->pg, PQERRORS_DEFAULT);
    PQsetNoticeProcessor(pc->pg, on_notice, pc);

    if (cfg->schema != NULL && cfg->schema[0] != '\0') {
        rc = set_search_path(pc, cfg->schema, err);
        if (rc != SB_OK) {
            pg_close(&pc->base);
            return rc;
        }
    }
    if (cfg->statement_timeout_ms > 0) {
        /* S10: the session's limit, so every statement of this pooled
         * connection is cancelled by the server (57014) when it passes;
         * the value is a validated integer, never caller text. */
        char sql[64];
        snprintf(sql, sizeof sql, "SET statement_timeout = %lld",
                 (long long)cfg->statement_timeout_ms);
        rc = run_simple(pc, sql, NULL, err);
        if (rc != SB_OK) {
            pg_close(&pc->base);
            return rc;
        }
        pc->statement_timeout_ms = cfg->statement_timeout_ms;
    }
    *out = &pc->base;
    return SB_OK;
}

/* ---- the statement cache ---- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static void stmt_name(char name[16], unsigned id)
{
    snprintf(name, 16, "sb%u", id);
}

static pg_stmt *cache_find(pg_conn *pc, const char *sql, uint64_t h)
{
    for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
        pg_stmt *st = &pc->cache[i];
        if (st->sql != NULL && st->hash == h && strcmp(st->sql, sql) == 0)
            return st;
    }
    return NULL;
}

/* Forget every cached statement (the server lost them, e.g. after a
 * DISCARD ALL a caller ran through the native handle). */
static void cache_clear(pg_conn *pc)
{
    for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
        sb__free(pc->cache[i].sql);
        pc->cache[i].sql = NULL;
    }
}

/* Deallocate a cached statement and free its slot. Prepared statements
 * are not transactional, so the DEALLOCATE stays done whatever the
 * current transaction does later; a refusal only costs server memory. */
static int cache_drop(pg_conn *pc, pg_stmt *st, sb_error *err)
{
    char sql[32], name[16];
    stmt_name(name, st->id);
    snprintf(sql, sizeof sql, "DEALLOCATE %s", name);
    sb__free(st->sql);
    st->sql = NULL;
    PGresult *res = PQexec(pc->pg, sql);
    if (res == NULL || PQstatus(pc->pg) == CONNECTION_BAD) {
        int rc = fail_result(pc, res, err);
        PQclear(res);
        return rc;
    }
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        sb__log(&pc->log, SB_LOG_DEBUG, "postgres",
                "DEALLOCATE %s failed: %.*s", name,
                trimmed_len(PQresultErrorMessage(res)),
                PQresultErrorMessage(res));
    PQclear(res);
    return SB_OK;
}

/* A free slot, evicting the least recently used statement when the cache
 * is full. */
static int cache_slot(pg_conn *pc, pg_stmt **out, sb_error *err)
{
    pg_stmt *victim = NULL;
    for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
        pg_stmt *st = &pc->cache[i];
        if (st->sql == NULL) {
            *out = st;
            return SB_OK;
        }
        if (victim == NULL || st->used < victim->used)
            victim = st;
    }
    int rc = cache_drop(pc, victim, err);
    if (rc == SB_OK)
        *out = victim;
    return rc;
}

/* Parameter types declared at prepare time: integers as int8 and blobs as
 * bytea, so an integer parameter the statement does not use (the host
 * clock that only SQLite needs) is still valid. Text and NULL are left for
 * the server to infer from the SQL (0), so they may go into any column
 * type; every statement must therefore use each of its text and NULL
 * parameters. */
static Oid param_type(const sb_value *v)
{
    switch (v->type) {
    case SB_V_INT: return 20;  /* int8 */
    case SB_V_BLOB: return 17; /* bytea */
    default: return 0;         /* inferred */
    }
}

/* Prepare `sql` with declared parameter types into a cache slot. */
static int prepare_typed(pg_conn *pc, const char *sql, uint64_t h,
                         const Oid *types, size_t nparams, pg_stmt **out,
                         sb_error *err)
{
    char *key = sb__strdup(sql);
    if (key == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    pg_stmt *st = NULL;
    int rc = cache_slot(pc, &st, err);
    if (rc != SB_OK) {
        sb__free(key);
        return rc;
    }
    unsigned id = ++pc->next_id;
    if (id == 0) /* wrapped after 4 billion statements; skip "sb0" */
        id = ++pc->next_id;
    char name[16];
    stmt_name(name, id);
    PGresult *res = PQprepare(pc->pg, name, sql, (int)nparams, types);
    rc = check_result(pc, res, err);
    PQclear(res);
    if (rc != SB_OK) {
        sb__free(key);
        return rc;
    }
    st->sql = key;
    st->hash = h;
    st->id = id;
    st->nparams = nparams;
    *out = st;
    return SB_OK;
}

/* Prepare `sql` into a cache slot. */
static int prepare(pg_conn *pc, const char *sql, uint64_t h,
                   const sb_value *params, size_t nparams, pg_stmt **out,
                   sb_error *err)
{
    Oid stack_types[STACK_PARAMS];
    Oid *types = stack_types;
    if (nparams > STACK_PARAMS) {
        types = sb__calloc(nparams, sizeof *types);
        if (types == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < nparams; i++)
        types[i] = param_type(&params[i]);
    int rc = prepare_typed(pc, sql, h, types, nparams, out, err);
    if (types != stack_types)
        sb__free(types);
    return rc;
}

/* A generic plan is made once, from the table's size at that moment: one
 * made while a queue's table was empty kept scanning the whole table once
 * it had grown (a claim read 684 pages for 2 rows), until an ANALYZE
 * invalidated it. So a statement is prepared again when it is
 * PLAN_TTL_FIRST_US old, then at doubling ages up to PLAN_TTL_MAX_US;
 * a table's pages, once grown, do not shrink back without a rewrite. */
#define PLAN_TTL_FIRST_US 1000000
#define PLAN_TTL_MAX_US 64000000

/* The cached statement for `sql`, prepared (again) when it is missing or
 * old; marked used, so that preparing another evicts it last. */
static int stmt_for(pg_conn *pc, const char *sql, const sb_value *params,
                    size_t nparams, pg_stmt **out, sb_error *err)
{
    uint64_t h = fnv1a(sql);
    pg_stmt *st = cache_find(pc, sql, h);
    int64_t now = sb__mono_us(), ttl = PLAN_TTL_FIRST_US;
    if (st != NULL && now - st->prepared_us >= st->ttl_us &&
        PQtransactionStatus(pc->pg) != PQTRANS_INERROR) {
        ttl =
            st->ttl_us * 2 < PLAN_TTL_MAX_US ? st->ttl_us * 2 : PLAN_TTL_MAX_US;
        int rc = cache_drop(pc, st, err);
        if (rc != SB_OK)
            return rc;
        st = NULL;
    }
    if (st == NULL) {
        int rc = prepare(pc, sql, h, params, nparams, &st, err);
        if (rc != SB_OK)
            return rc;
        st->prepared_us = now;
        st->ttl_us = ttl;
    } else if (st->nparams != nparams) {
        /* The server would call this a protocol violation (class 08). */
        return sb__err(err, SB_INVALID, "params",
                       "statement was prepared with %zu parameters, %zu "
                       "given",
                       st->nparams, nparams);
    }
    st->used = ++pc->tick;
    *out = st;
    return SB_OK;
}

/* ---- parameters ---- */

typedef struct pg_params {
    const char **values;
    int *lengths;
    int *formats;
    char (*ints)[INT_TEXT_SIZE];
    void *heap; /* one block when there are more than STACK_PARAMS */
    const char *sv[STACK_PARAMS];
    int sl[STACK_PARAMS];
    int sf[STACK_PARAMS];
    char si[STACK_PARAMS][INT_TEXT_SIZE];
} pg_params;

/* Lay the parameters out as libpq wants them: text format except BLOB
 * (binary), integers as decimal text, NULL as a NULL pointer. TEXT values
 * must be NUL-terminated at `len` (sb__v_text guarantees it). */
static int params_build(pg_params *pp, const sb_value *params, size_t n,
                        sb_error *err)
{
    pp->heap = NULL;
    if (n <= STACK_PARAMS) {
        pp->values = pp->sv;
        pp->lengths = pp->sl;
        pp->formats = pp->sf;
        pp->ints = pp->si;
    } else {
        size_t each = sizeof(char *) + 2 * sizeof(int) + INT_TEXT_SIZE;
        unsigned char *blk = sb__malloc(n * each);
        if (blk == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        pp->heap = blk;
        pp->values = (const char **)(void *)blk;
        pp->lengths = (int *)(void *)(blk + n * sizeof(char *));
        pp->formats = pp->lengths + n;
        pp->ints = (char(*)[INT_TEXT_SIZE])(void *)(pp->formats + n);
    }
    for (size_t i = 0; i < n; i++) {
        const sb_value *v = &params[i];
        pp->lengths[i] = 0;
        pp->formats[i] = 0;
        switch (v->type) {
        case SB_V_NULL: pp->values[i] = NULL; break;
        case SB_V_INT:
            snprintf(pp->ints[i], INT_TEXT_SIZE, "%" PRId64, v->i);
            pp->values[i] = pp->ints[i];
            break;
        case SB_V_TEXT:
            if (v->p == NULL)
                return sb__err(err, SB_INVALID, "params",
                               "parameter $%zu: TEXT value without text",
                               i + 1);
            pp->values[i] = v->p;
            break;
        case SB_V_BLOB:
            if (v->len > (size_t)INT_MAX)
                return sb__err(err, SB_TOOBIG, "params",
                               "parameter $%zu: %zu bytes exceed the "
                               "PostgreSQL limit",
                               i + 1, v->len);
            pp->values[i] = v->p != NULL ? v->p : "";
            pp->lengths[i] = (int)v->len;
            pp->formats[i] = 1;
            break;
        default:
            return sb__err(err, SB_INVALID, "params",
                           "parameter $%zu: unknown value type %d", i + 1,
                           v->type);
        }
    }
    return SB_OK;
}

/* ---- results ---- */

static uint64_t get_be(const char *p, int n)
{
    const unsigned char *u = (const unsigned char *)p;
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x = (x << 8) | u[i];
    return x;
}

static bool type_supported(Oid t)
{
    switch (t) {
    case OID_BOOL:
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
    case OID_OID:
    case OID_TEXT:
    case OID_VARCHAR:
    case OID_BPCHAR:
    case OID_NAME:
    case OID_JSON:
    case OID_JSONB:
    case OID_UUID:
    case OID_BYTEA:
    case OID_TIMESTAMP:
    case OID_TIMESTAMPTZ: return true;
    default: return false;
    }
}

static int bad_width(const PGresult *res, int c, int len, sb_error *err)
{
    return sb__err(err, SB_BACKEND, NULL,
                   "column %d (\"%s\", type OID %u): unexpected binary "
                   "value of %d bytes",
                   c + 1, PQfname(res, c), (unsigned)PQftype(res, c), len);
}

/* Convert one binary cell into rows (see the table in db.h). */
static int convert_cell(const PGresult *res, int r, int c, sb_rows *rows,
                        sb_error *err)
{
    const char *v = PQgetvalue(res, r, c);
    int len = PQgetlength(res, r, c);
    sb_value *cell = &rows->cells[(size_t)r * rows->ncols + (size_t)c];
    int rc;
    switch (PQftype(res, c)) {
    case OID_BOOL:
        if (len != 1)
            return bad_width(res, c, len, err);
        *cell = sb__v_int(v[0] != 0);
        return SB_OK;
    case OID_INT2:
        if (len != 2)
            return bad_width(res, c, len, err);
        *cell = sb__v_int((int16_t)get_be(v, 2));
        return SB_OK;
    case OID_INT4:
        if (len != 4)
            return bad_width(res, c, len, err);
        *cell = sb__v_int((int32_t)get_be(v, 4));
        return SB_OK;
    case OID_OID:
        if (len != 4)
            return bad_width(res, c, len, err);
        *cell = sb__v_int((int64_t)get_be(v, 4)); /* unsigned */
        return SB_OK;
    case OID_INT8:
        if (len != 8)
            return bad_width(res, c, len, err);
        *cell = sb__v_int((int64_t)get_be(v, 8));
        return SB_OK;
    case OID_TIMESTAMP:
    case OID_TIMESTAMPTZ: {
        if (len != 8)
            return bad_width(res, c, len, err);
        int64_t t = (int64_t)get_be(v, 8);
        /* 'infinity' / '-infinity' keep their sentinels. */
        if (t != INT64_MAX && t != INT64_MIN) {
            if (t > INT64_MAX - PG_EPOCH_OFFSET_US)
                return sb__err(err, SB_BACKEND, NULL,
                               "column %d (\"%s\"): timestamp out of range",
                               c + 1, PQfname(res, c));
            t += PG_EPOCH_OFFSET_US;
        }
        *cell = sb__v_int(t);
        return SB_OK;
    }
    case OID_UUID: {
        if (len != 16)
            return bad_width(res, c, len, err);
        static const char hex[] = "0123456789abcdef";
        char s[37];
        size_t k = 0;
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10)
                s[k++] = '-';
            unsigned char b = (unsigned char)v[i];
            s[k++] = hex[b >> 4];
            s[k++] = hex[b & 15];
        }
        s[k] = '\0';
        rc = sb__rows_set_bytes(rows, (size_t)r, (size_t)c, SB_V_TEXT, s, 36);
        break;
    }
    case OID_JSONB:
        /* jsonb_send: a version byte (1), then the text form. */
        if (len < 1 || v[0] != 1)
            return sb__err(err, SB_BACKEND, NULL,
                           "column %d (\"%s\"): unknown jsonb binary version",
                           c + 1, PQfname(res, c));
        rc = sb__rows_set_bytes(rows, (size_t)r, (size_t)c, SB_V_TEXT, v + 1,
                                (size_t)len - 1);
        break;
    case OID_TEXT:
    case OID_VARCHAR:
    case OID_BPCHAR:
    case OID_NAME:
    case OID_JSON:
        rc = sb__rows_set_bytes(rows, (size_t)r, (size_t)c, SB_V_TEXT, v,
                                (size_t)len);
        break;
    case OID_BYTEA:
        rc = sb__rows_set_bytes(rows, (size_t)r, (size_t)c, SB_V_BLOB, v,
                                (size_t)len);
        break;
    default: /* filtered by type_supported */
        return sb__err(err, SB_BACKEND, NULL, "column %d: unsupported type",
                       c + 1);
    }
    if (rc != SB_OK)
        return sb__err(err, rc, NULL, "out of memory");
    return SB_OK;
}

static int convert_rows(const PGresult *res, sb_rows **out, sb_error *err)
{
    int nt = PQntuples(res), nf = PQnfields(res);
    for (int c = 0; c < nf; c++) {
        Oid t = PQftype(res, c);
        if (!type_supported(t))
            return sb__err(err, SB_BACKEND, NULL,
                           "column %d (\"%s\") has type OID %u, which sqlbus "
                           "does not convert; cast it in SQL (::bigint, "
                           "::text)",
                           c + 1, PQfname(res, c), (unsigned)t);
    }
    sb_rows *rows = NULL;
    if (sb__rows_new((size_t)nt, (size_t)nf, &rows) != SB_OK)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (int r = 0; r < nt; r++) {
        for (int c = 0; c < nf; c++) {
            if (PQgetisnull(res, r, c))
                continue;
            int rc = convert_cell(res, r, c, rows, err);
            if (rc != SB_OK) {
                sb__rows_free(rows);
                return rc;
            }
        }
    }
    *out = rows;
    return SB_OK;
}

/* Rows inserted/updated/deleted from the command tag; a SELECT changes
 * nothing (its tag carries the row count). */
static int64_t tag_changes(const PGresult *res)
{
    const char *status = PQcmdStatus((PGresult *)res);
    if (status != NULL && strncmp(status, "SELECT ", 7) == 0)
        return 0;
    const char *s = PQcmdTuples((PGresult *)res);
    if (s == NULL || s[0] < '0' || s[0] > '9')
        return 0;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || n < 0)
        return 0;
    return (int64_t)n;
}

/* ---- the driver entry points ---- */

static PGresult *run_prepared(pg_conn *pc, const char *sql,
                              const sb_value *params, size_t nparams,
                              const pg_params *pp, int *rc, sb_error *err)
{
    pg_stmt *st = cache_find(pc, sql, fnv1a(sql));
    if (st == NULL && PQtransactionStatus(pc->pg) == PQTRANS_INERROR) {
        /* Every command fails in an aborted transaction (25P02); do not
         * evict a good statement for it. The unnamed statement reports
         * the error. */
        return PQexecParams(pc->pg, sql, (int)nparams, NULL, pp->values,
                            pp->lengths, pp->formats, 1);
    }
    *rc = stmt_for(pc, sql, params, nparams, &st, err);
    if (*rc != SB_OK)
        return NULL;
    char name[16];
    stmt_name(name, st->id);
    return PQexecPrepared(pc->pg, name, (int)nparams, pp->values, pp->lengths,
                          pp->formats, 1);
}

/* ---- pipelines ---- */

/* A pipeline's calls at most; more run in several. */
#define PIPE_MAX 64

/* One pipeline entry's result: the first non-NULL result of its query,
 * after reading up to the NULL that ends it. NULL when the connection
 * failed (then it is marked broken). */
static PGresult *pipe_result(pg_conn *pc)
{
    PGresult *res = PQgetResult(pc->pg);
    if (res == NULL) {
        pc->broken = true;
        return NULL;
    }
    PGresult *more;
    while ((more = PQgetResult(pc->pg)) != NULL) {
        /* Only a lost connection gives a query two results. */
        PQclear(more);
        pc->broken = true;
    }
    return res;
}

/* Send the calls (after BEGIN if it is pending, before COMMIT if asked)
 * and a Sync, in one write. */
static int pipe_send(pg_conn *pc, const sb_call *calls, size_t n,
                     pg_stmt *const *sts, int commit, sb_error *err)
{
    int ok = PQenterPipelineMode(pc->pg);
    if (ok && pc->begin_pending)
        ok = PQsendQueryParams(pc->pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
    for (size_t i = 0; ok && i < n; i++) {
        pg_params pp;
        int rc = params_build(&pp, calls[i].params, calls[i].nparams, err);
        if (rc != SB_OK) {
            sb__free(pp.heap);
            /* Nothing was sent yet unless earlier calls were: the
             * connection's protocol state is then unknown. */
            if (i > 0 || pc->begin_pending)
                pc->broken = true;
            (void)PQexitPipelineMode(pc->pg);
            return rc;
        }
        char name[16];
        stmt_name(name, sts[i]->id);
        ok = PQsendQueryPrepared(pc->pg, name, (int)calls[i].nparams, pp.values,
                                 pp.lengths, pp.formats, 1);
        sb__free(pp.heap);
    }
    if (ok && commit)
        ok = PQsendQueryParams(pc->pg, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
    if (ok)
        ok = PQpipelineSync(pc->pg);
    if (!ok)
        return fail_result(pc, NULL, err); /* marks it broken */
    return SB_OK;
}

/* The result of one call: rows, changes, or its error. */
static int call_result(pg_conn *pc, const sb_call *call, PGresult *res,
                       sb_error *err)
{
    int rc = check_result(pc, res, err);
    if (rc == SB_OK && call->rows != NULL) {
        if (PQresultStatus(res) == PGRES_TUPLES_OK)
            rc = convert_rows(res, call->rows, err);
        else if (sb__rows_new(0, 0, call->rows) != SB_OK)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    if (rc == SB_OK && call->changes != NULL)
        *call->changes = tag_changes(res);
    return rc;
}

/* Read what pipe_send sent, in order: BEGIN's result, each call's, then
 * COMMIT's and the Sync. The first failure is kept; the entries after it
 * come back PGRES_PIPELINE_ABORTED and are only read. */
static int pipe_receive(pg_conn *pc, const sb_call *calls, size_t n, int commit,
                        size_t *failed, sb_error *err)
{
    int rc = SB_OK;
    *failed = n;
    size_t total = n + (pc->begin_pending ? 1 : 0) + (commit ? 1 : 0);
    size_t first = pc->begin_pending ? 1 : 0;
    for (size_t k = 0; k < total && !pc->broken; k++) {
        PGresult *res = pipe_result(pc);
        size_t i = k - first; /* the call; n: COMMIT */
        if (rc == SB_OK) {
            if (k < first)
                rc = check_result(pc, res, err);
            else if (i < n)
                rc = call_result(pc, &calls[i], res, err);
            else
                rc = check_result(pc, res, err);
            if (rc != SB_OK)
                *failed = k < first ? 0 : i;
            else if (k >= first && i == n) {
                const char *tag = PQcmdStatus(res);
                if (tag != NULL && strcmp(tag, "ROLLBACK") == 0)
                    rc = sb__err(err, SB_BACKEND, NULL,
                                 "the transaction had failed and was "
                                 "rolled back");
            }
        }
        PQclear(res);
    }
    if (pc->broken) {
        if (rc == SB_OK)
            rc = fail_result(pc, NULL, err);
        return rc;
    }
    PGresult *sync = PQgetResult(pc->pg);
    if (sync == NULL || PQresultStatus(sync) != PGRES_PIPELINE_SYNC)
        pc->broken = true;
    PQclear(sync);
    if (!pc->broken && !PQexitPipelineMode(pc->pg))
        pc->broken = true;
    if (pc->broken && rc == SB_OK)
        rc = fail_result(pc, NULL, err);
    return rc;
}

/* The driver's pipeline: prepare what the cache lacks, then one write and
 * one read for BEGIN (if pending), the calls, COMMIT (if asked) and a
 * Sync. The server runs them in order and skips the rest after an error
 * up to the Sync, which leaves an explicit transaction open and aborted:
 * the caller rolls back, as after a failed sb__query. */
static int pg_pipeline(sb_conn *c, const sb_call *calls, size_t n, int commit,
                       size_t *failed, sb_error *err)
{
    pg_conn *pc = (pg_conn *)c;
    *failed = 0;
    if (pc->broken)
        return err_broken(err);
    if (n > PIPE_MAX) {
        size_t done = 0;
        while (n - done > PIPE_MAX) {
            int rc = pg_pipeline(c, calls + done, PIPE_MAX, 0, failed, err);
            if (rc != SB_OK) {
                *failed += done;
                return rc;
            }
            done += PIPE_MAX;
        }
        int rc = pg_pipeline(c, calls + done, n - done, commit, failed, err);
        *failed += done;
        return rc;
    }
    pg_stmt *sts[PIPE_MAX];
    for (size_t i = 0; i < n; i++) {
        if (calls[i].sql == NULL)
            return sb__err(err, SB_INVALID, "sql", "no SQL text");
        if (calls[i].nparams > MAX_PARAMS)
            return sb__err(err, SB_TOOBIG, "params",
                           "%zu parameters; PostgreSQL allows %d",
                           calls[i].nparams, MAX_PARAMS);
        /* Prepared outside the pipeline (libpq's synchronous PQprepare
         * is not allowed inside it) and marked used, so preparing a
         * later call evicts none of the pipeline's own. */
        int rc = stmt_for(pc, calls[i].sql, calls[i].params, calls[i].nparams,
                          &sts[i], err);
        if (rc != SB_OK) {
            *failed = i;
            return rc;
        }
    }
    /* More distinct texts than the cache holds would have evicted one of
     * the pipeline's own statements: check before sending. */
    for (size_t i = 0; i < n; i++)
        if (sts[i]->sql == NULL || strcmp(sts[i]->sql, calls[i].sql) != 0)
            return sb__err(err, SB_INVALID, "sql",
                           "a pipeline of more distinct statements than "
                           "the statement cache holds (%d)",
                           STMT_CACHE_SIZE);
    int rc = pipe_send(pc, calls, n, sts, commit, err);
    if (rc == SB_OK)
        rc = pipe_receive(pc, calls, n, commit, failed, err);
    pc->begin_pending = false;
    /* Whatever happened to COMMIT, the transaction is over (committed,
     * rolled back by the server, or lost with the connection); after an
     * earlier failure it is still open and aborted. */
    if (commit && (rc == SB_OK || *failed == n || pc->broken))
        c->in_tx = false;
    return rc;
}

static int pg_query(sb_conn *c, const char *sql, const sb_value *params,
                    size_t nparams, sb_rows **rows, int64_t *changes,
                    sb_error *err)
{
    pg_conn *pc = (pg_conn *)c;
    if (rows != NULL)
        *rows = NULL;
    if (changes != NULL)
        *changes = 0;
    if (pc->broken)
        return err_broken(err);
    if (sql == NULL)
        return sb__err(err, SB_INVALID, "sql", "no SQL text");
    if (pc->begin_pending) {
        /* The transaction's first statement carries its BEGIN. */
        sb_call call = {sql, params, nparams, rows, changes};
        size_t failed = 0;
        return pg_pipeline(c, &call, 1, 0, &failed, err);
    }
    if (nparams > MAX_PARAMS)
        return sb__err(err, SB_TOOBIG, "params",
                       "%zu parameters; PostgreSQL allows %d", nparams,
                       MAX_PARAMS);
    pg_params pp;
    int rc = params_build(&pp, params, nparams, err);
    if (rc != SB_OK) {
        sb__free(pp.heap);
        return rc;
    }
    for (int attempt = 0;; attempt++) {
        rc = SB_OK;
        PGresult *res = run_prepared(pc, sql, params, nparams, &pp, &rc, err);
        if (rc != SB_OK)
            break;
        rc = check_result(pc, res, err);
        if (rc != SB_OK) {
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            bool lost = state != NULL && strcmp(state, "26000") == 0;
            PQclear(res);
            if (lost) {
                /* invalid_sql_statement_name: someone deallocated our
                 * statements behind the cache. Outside a transaction
                 * nothing was lost, so prepare again once. */
                cache_clear(pc);
                if (attempt == 0 && !pc->base.in_tx &&
                    PQtransactionStatus(pc->pg) == PQTRANS_IDLE)
                    continue;
            }
            break;
        }
        if (rows != NULL && PQresultStatus(res) == PGRES_TUPLES_OK)
            rc = convert_rows(res, rows, err);
        else if (rows != NULL && sb__rows_new(0, 0, rows) != SB_OK)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        if (rc == SB_OK && changes != NULL)
            *changes = tag_changes(res);
        PQclear(res);
        break;
    }
    sb__free(pp.heap);
    return rc;
}

/* Send a pending BEGIN on its own, for what cannot carry it. */
static int flush_begin(pg_conn *pc, sb_error *err)
{
    if (!pc->begin_pending)
        return SB_OK;
    pc->begin_pending = false;
    return run_simple(pc, "BEGIN", NULL, err);
}

static int pg_exec(sb_conn *c, const char *sql, sb_error *err)
{
    if (sql == NULL)
        return sb__err(err, SB_INVALID, "sql", "no SQL text");
    int rc = flush_begin((pg_conn *)c, err);
    return rc == SB_OK ? run_simple((pg_conn *)c, sql, NULL, err) : rc;
}

/* BEGIN costs no round trip of its own: it goes out with the first
 * statement, and a transaction that runs none sends nothing. */
static int pg_begin(sb_conn *c, sb_error *err)
{
    if (c->in_tx)
        return sb__err(err, SB_MISUSE, NULL,
                       "a transaction is already open on this connection");
    pg_conn *pc = (pg_conn *)c;
    if (pc->broken)
        return err_broken(err);
    pc->begin_pending = true;
    c->in_tx = true;
    return SB_OK;
}

static int pg_commit(sb_conn *c, sb_error *err)
{
    pg_conn *pc = (pg_conn *)c;
    PGresult *res = NULL;
    /* Whatever happens the transaction is over: committed, rolled back
     * by the server, or lost with the connection (outcome unknown). */
    c->in_tx = false;
    if (pc->begin_pending) {
        pc->begin_pending = false; /* nothing ran: nothing to commit */
        return pc->broken ? err_broken(err) : SB_OK;
    }
    int rc = run_simple(pc, "COMMIT", &res, err);
    if (rc != SB_OK)
        return rc;
    /* COMMIT of a transaction aborted by an earlier error succeeds as a
     * command but reports ROLLBACK. */
    const char *tag = PQcmdStatus(res);
    if (tag != NULL && strcmp(tag, "ROLLBACK") == 0)
        rc = sb__err(err, SB_BACKEND, NULL,
                     "the transaction had failed and was rolled back");
    PQclear(res);
    return rc;
}

static int pg_rollback(sb_conn *c)
{
    pg_conn *pc = (pg_conn *)c;
    c->in_tx = false;
    if (pc->begin_pending) {
        pc->begin_pending = false;
        return SB_OK;
    }
    return run_simple(pc, "ROLLBACK", NULL, NULL);
}

/* A caller's own statements on the handle (sb_tx_native) run inside the
 * transaction: its BEGIN goes out first. If it cannot, the connection is
 * broken and the commit reports it. */
static void *pg_native(sb_conn *c)
{
    pg_conn *pc = (pg_conn *)c;
    if (c->in_tx && flush_begin(pc, NULL) != SB_OK)
        pc->broken = true;
    return pc->pg;
}

static bool pg_broken(sb_conn *c)
{
    pg_conn *pc = (pg_conn *)c;
    if (!pc->broken && PQstatus(pc->pg) == CONNECTION_BAD)
        pc->broken = true;
    return pc->broken;
}

static const sb_driver pg_driver = {
    .name = "postgresql",
    .dialect = SB_DIALECT_POSTGRES,
    .max_params = 65535, /* the protocol's 16-bit count */
    .connect = pg_connect,
    .close = pg_close,
    .exec = pg_exec,
    .query = pg_query,
    .pipeline = pg_pipeline,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .native = pg_native,
    .broken = pg_broken,
};

/* The PostgreSQL driver table (static; thread-safe). Each connection is
 * used by one thread at a time. */
const sb_driver *sb__driver_postgres(void)
{
    return &pg_driver;
}
