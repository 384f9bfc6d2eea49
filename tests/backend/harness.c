/* harness.c - see harness.h. */
#include "harness.h"

#include "db/db.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char url[4096];
static char pg_url[4096]; /* libpq's URL of the same database (native reads) */
static char sqlite_dir[256];
static int pg;
static int mssql;
static int counter;
static char prefix_buf[64];

static void cleanup_sqlite(void)
{
    if (sqlite_dir[0] != '\0') {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", sqlite_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", sqlite_dir);
    }
}

/* The same database through psqlODBC: "odbc+postgresql:" and a
 * connection string made from the libpq URL
 * postgresql://USER@HOST:PORT/DB (the form tests/pg-cluster prints). */
void sbt_odbc_url_of(const char *u, char *out, size_t cap)
{
    char user[128] = "postgres", host[256] = "127.0.0.1", port[16] = "5432",
         db[128] = "postgres";
    const char *p = strstr(u, "://");
    if (p == NULL) {
        fprintf(stderr, "odbc-postgresql needs a postgresql:// URL\n");
        exit(1);
    }
    p += 3;
    const char *at = strchr(p, '@');
    if (at != NULL) {
        snprintf(user, sizeof user, "%.*s", (int)(at - p), p);
        p = at + 1;
    }
    size_t hl = strcspn(p, ":/");
    snprintf(host, sizeof host, "%.*s", (int)hl, p);
    p += hl;
    if (*p == ':') {
        size_t pl = strcspn(++p, "/");
        snprintf(port, sizeof port, "%.*s", (int)pl, p);
        p += pl;
    }
    if (*p == '/' && p[1] != '\0')
        snprintf(db, sizeof db, "%.*s", (int)strcspn(p + 1, "?"), p + 1);
    snprintf(out, cap,
             "odbc+postgresql:Driver={PostgreSQL Unicode};Server=%s;"
             "Port=%s;Database=%s;Uid=%s;BoolsAsChar=0",
             host, port, db, user);
}

void sbt_init(void)
{
    /* SQLBUS_TEST_FILTER=test_name (a cmocka pattern) runs only those. */
    const char *only = getenv("SQLBUS_TEST_FILTER");
    if (only != NULL && only[0] != '\0')
        cmocka_set_test_filter(only);
    const char *b = getenv("SQLBUS_TEST_BACKEND");
    if (b == NULL || strcmp(b, "sqlite") == 0) {
        snprintf(sqlite_dir, sizeof sqlite_dir, "/tmp/sqlbus-test.XXXXXX");
        if (mkdtemp(sqlite_dir) == NULL) {
            perror("mkdtemp");
            exit(1);
        }
        snprintf(url, sizeof url, "sqlite:%s/test.db", sqlite_dir);
        atexit(cleanup_sqlite);
        return;
    }
    if (strcmp(b, "mssql") == 0) {
        const char *m = getenv("SQLBUS_TEST_MSSQL");
        if (m == NULL || m[0] == '\0') {
            printf("skipped: no SQL Server configured (set "
                   "SQLBUS_TEST_MSSQL to an mssql:// or odbc: URL)\n");
            exit(77);
        }
        mssql = 1;
        snprintf(url, sizeof url, "%s", m);
        return;
    }
    int odbc = strcmp(b, "odbc-postgresql") == 0;
    if (strcmp(b, "postgresql") != 0 && !odbc) {
        fprintf(stderr, "unknown SQLBUS_TEST_BACKEND %s\n", b);
        exit(1);
    }
    const char *u = getenv("SQLBUS_TEST_PG_URL");
    if (u == NULL || u[0] == '\0') {
        printf("skipped: SQLBUS_TEST_PG_URL not set (no PostgreSQL "
               "configured)\n");
        exit(77);
    }
    pg = 1;
    snprintf(pg_url, sizeof pg_url, "%s", u);
    snprintf(url, sizeof url, "%s", u);
    if (odbc)
        sbt_odbc_url_of(u, url, sizeof url);
}

const char *sbt_backend(void)
{
    if (mssql)
        return "mssql";
    return pg ? (strncmp(url, "odbc", 4) == 0 ? "odbc-postgresql"
                                              : "postgresql")
              : "sqlite";
}

int sbt_is_mssql(void)
{
    return mssql;
}

int sbt_is_pg(void)
{
    return pg;
}

const char *sbt_pg_url(void)
{
    return pg_url;
}

const char *sbt_url(void)
{
    return url;
}

const char *sbt_new_prefix(void)
{
    /* The pid alone is not unique over a suite: pid_max may be 32,768,
     * the script tests start thousands of processes, and a test that
     * failed leaves its tables, so a later process with the same pid
     * would find them (a queue with rows it never published). The start
     * time's nanoseconds tell two such processes apart. */
    static unsigned salt;
    if (salt == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        salt = ((unsigned)ts.tv_nsec ^ (unsigned)ts.tv_sec) % 0xfffffu + 1;
    }
    snprintf(prefix_buf, sizeof prefix_buf, "t%ld_%05x_%d_", (long)getpid(),
             salt, ++counter);
    return prefix_buf;
}

sb_bus *sbt_open(const char *prefix, const sb_options *opts)
{
    sb_options o;
    if (opts != NULL)
        o = *opts;
    else
        memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = url;
    o.table_prefix = prefix;
    sb_bus *bus = NULL;
    sb_error err;
    int rc = sb_open(&o, &bus, &err);
    if (rc != SB_OK)
        fail_msg("sb_open(%s): %s", url, err.message);
    return bus;
}

void sbt_exec(sb_bus *bus, const char *sql)
{
    sb_tx *tx = NULL;
    sb_error err;
    if (sb_tx_begin(bus, &tx, &err) != SB_OK)
        fail_msg("begin: %s", err.message);
    if (sb_tx_exec(tx, sql, &err) != SB_OK) {
        sb_tx_rollback(tx);
        fail_msg("exec %s: %s", sql, err.message);
    }
    if (sb_tx_commit(tx, &err) != SB_OK)
        fail_msg("commit: %s", err.message);
}

void sbt_drop(sb_bus *bus, const char *prefix)
{
    /* The same text is T-SQL (SQL Server 2016 and later). */
    if ((!pg && !mssql) || bus == NULL)
        return;
    char sql[640];
    snprintf(sql, sizeof sql,
             "DROP TABLE IF EXISTS %smessages, %scounts, %squeue_settings, "
             "%sschedules, %sunique_keys, %sheartbeats, %ssettings, "
             "%schannel_messages, %schannel_subscribers, %srecovery_state; "
             "DROP SEQUENCE IF EXISTS %schannel_ack_seq",
             prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix,
             prefix, prefix, prefix);
    sbt_exec(bus, sql);
}

long sbt_count(sb_bus *bus, const char *queue)
{
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sb_error err;
    if (sb_queue_list(bus, &s, &n, &err) != SB_OK)
        fail_msg("queue list: %s", err.message);
    long total = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->queue, queue) == 0)
            total = (long)(s[i]->ready + s[i]->delayed + s[i]->in_flight);
    sb_free(s);
    return total;
}

void sbt_publish_n(sb_bus *bus, const char *queue, int n, char (*ids)[37])
{
    sb_outgoing *m = calloc((size_t)n, sizeof *m);
    char(*payloads)[32] = calloc((size_t)n, sizeof *payloads);
    for (int i = 0; i < n; i++) {
        snprintf(payloads[i], sizeof payloads[i], "m%d", i);
        m[i].payload = payloads[i];
        m[i].payload_len = strlen(payloads[i]);
    }
    sb_error err;
    if (sb_publish_batch(bus, NULL, queue, m, (size_t)n, ids, &err) != SB_OK)
        fail_msg("publish: %s", err.message);
    free(m);
    free(payloads);
}

void sbt_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void sbt_ok(int rc, const sb_error *err, const char *what)
{
    if (rc != SB_OK)
        fail_msg("%s: %s (%s)", what, sb_strerror(rc), err ? err->message : "");
}

/* SQL Server has no client library here but the ODBC driver: a
 * connection of sqlbus's own driver layer, opened apart from any bus (no
 * pool, no transaction: autocommit). */
static sb_conn *mssql_connect(void)
{
    sb_db_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sb_error err;
    if (sb__db_parse_url(url, &cfg, &err) != SB_OK)
        fail_msg("native url: %s", err.message);
    const sb_driver *d = sb__driver_for(&cfg);
    sb_conn *c = NULL;
    int rc = d != NULL ? d->connect(&cfg, &c, &err) : SB_INVALID;
    sb__db_config_free(&cfg);
    if (rc != SB_OK)
        fail_msg("native connect: %s", d ? err.message : "no driver");
    return c;
}

void sbt_native_exec(const char *sql)
{
    if (sbt_is_pg() && !mssql) {
        PGconn *nc = PQconnectdb(pg_url);
        PGresult *r = PQstatus(nc) == CONNECTION_OK ? PQexec(nc, sql) : NULL;
        char msg[256];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(nc));
        int ok = r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        PQfinish(nc);
        if (!ok)
            fail_msg("native exec %s: %s", sql, msg);
        return;
    }
    if (!mssql)
        fail_msg("sbt_native_exec is for SQL Server and PostgreSQL");
    sb_conn *c = mssql_connect();
    sb_error err;
    int rc = sb__exec(c, sql, &err);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc == SB_OK ? "" : err.message);
    c->drv->close(c);
    if (rc != SB_OK)
        fail_msg("native exec %s: %s", sql, msg);
}

/* Rows of `table` (without prefix) for one correlation id, read through a
 * native connection. */
long sbt_native_scalar(const char *sql, const char *cid)
{
    long n = -1;
    if (mssql) {
        sb_conn *c = mssql_connect();
        sb_value v = sb__v_text(cid);
        sb_rows *rows = NULL;
        sb_error err;
        int rc = sb__query(c, sql, &v, 1, &rows, NULL, &err);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", rc == SB_OK ? "" : err.message);
        if (rc == SB_OK && rows->nrows == 1 && rows->ncols >= 1)
            n = (long)sb__rows_int(rows, 0, 0);
        sb__rows_free(rows);
        c->drv->close(c);
        if (rc != SB_OK || n < 0)
            fail_msg("native count %s: %s", sql, rc ? msg : "no row");
        return n;
    }
    if (sbt_is_pg()) {
        PGconn *c = PQconnectdb(pg_url);
        if (PQstatus(c) != CONNECTION_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
            PQfinish(c);
            fail_msg("native connect: %s", msg);
        }
        PGresult *r = PQexecParams(c, sql, 1, NULL, &cid, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
            PQclear(r);
            PQfinish(c);
            fail_msg("native count %s: %s", sql, msg);
        }
        n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        PQfinish(c);
        return n;
    }
    const char *path = sbt_url();
    if (strncmp(path, "sqlite:", 7) == 0)
        path += 7;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", db ? sqlite3_errmsg(db) : "nomem");
        sqlite3_close(db);
        fail_msg("native open %s: %s", path, msg);
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, cid, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
    }
    if (n < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        sqlite3_close(db);
        fail_msg("native count %s: %s", sql, msg);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

long sbt_native_count(const char *prefix, const char *table, const char *cid)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s%s WHERE correlation_id = $1", prefix,
             table);
    return sbt_native_scalar(sql, cid);
}

/* A native connection that holds the transport table's write lock. */
struct sbt_hold {
    PGconn *pg;
    sqlite3 *db;
};

sbt_hold *sbt_hold_writes(const char *prefix)
{
    sbt_hold *h = calloc(1, sizeof *h);
    if (sbt_is_pg()) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "BEGIN; LOCK TABLE %smessages IN EXCLUSIVE MODE", prefix);
        h->pg = PQconnectdb(pg_url);
        PGresult *r = PQexec(h->pg, sql);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok)
            fail_msg("hold writes: %s", PQerrorMessage(h->pg));
        return h;
    }
    const char *path = sbt_url();
    if (strncmp(path, "sqlite:", 7) == 0)
        path += 7;
    if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE, NULL) !=
            SQLITE_OK ||
        sqlite3_busy_timeout(h->db, 10000) != SQLITE_OK ||
        sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        fail_msg("hold writes: %s", sqlite3_errmsg(h->db));
    return h;
}

void sbt_release_writes(sbt_hold *h, const char *sql)
{
    if (h->pg != NULL) {
        if (sql != NULL) {
            PGresult *r = PQexec(h->pg, sql);
            int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
            PQclear(r);
            if (!ok)
                fail_msg("under the hold: %s", PQerrorMessage(h->pg));
        }
        PQclear(PQexec(h->pg, sql != NULL ? "COMMIT" : "ROLLBACK"));
        PQfinish(h->pg);
    }
    if (h->db != NULL) {
        if (sql != NULL &&
            sqlite3_exec(h->db, sql, NULL, NULL, NULL) != SQLITE_OK)
            fail_msg("under the hold: %s", sqlite3_errmsg(h->db));
        if (sqlite3_exec(h->db, sql != NULL ? "COMMIT" : "ROLLBACK", NULL, NULL,
                         NULL) != SQLITE_OK)
            fail_msg("releasing the hold: %s", sqlite3_errmsg(h->db));
        sqlite3_close(h->db);
    }
    free(h);
}
