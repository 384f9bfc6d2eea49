/*
 * test_statement_timeout.c - sb_options.statement_timeout_ms, the library
 * side of rule S10's "time per request" (`sqlbus serve --request-timeout`),
 * on both backends: a statement that would run far longer than the limit
 * (PostgreSQL: pg_sleep(30); SQLite: a recursive CTE counting to 1e10) is
 * cancelled with SB_TIMEOUT naming statement_timeout_ms, never retried, its
 * transaction rolled back; a lock wait is bounded the same way; the bus and
 * its pool work normally afterwards; 0 means no limit; the option's range
 * is checked. No timing is asserted beyond "it was cancelled well before
 * the statement could have finished" (20 s, against 30 s or hours).
 */
#include "harness.h"
#include "transport/transport.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_MS 200
/* Cancelled "well before it would have finished": pg_sleep(30) needs 30 s,
 * the CTE hours; a bound that a slow or loaded machine cannot miss. */
#define WELL_BEFORE_US (20LL * 1000000)

typedef struct fixture {
    char prefix[64];
    sb_bus *bus;   /* statement_timeout_ms = LIMIT_MS */
    sb_bus *nolim; /* statement_timeout_ms = 0 */
} fixture;

/* A statement that would take far longer than LIMIT_MS. */
static const char *slow_sql(void)
{
    return sbt_is_pg()
               ? "SELECT pg_sleep(30)"
               : "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                 "FROM c WHERE x < 10000000000) SELECT count(*) FROM c";
}

/* One that takes longer than LIMIT_MS but finishes (about 0.3-1 s). */
static const char *medium_sql(void)
{
    return sbt_is_pg()
               ? "SELECT pg_sleep(0.3)"
               : "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                 "FROM c WHERE x < 3000000) SELECT count(*) FROM c";
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->prefix, sizeof f->prefix, "%s", sbt_new_prefix());
    sb_options o;
    memset(&o, 0, sizeof o);
    o.pool_size = 2; /* connections are reused after every timeout */
    o.statement_timeout_ms = LIMIT_MS;
    f->bus = sbt_open(f->prefix, &o);
    f->nolim = sbt_open(f->prefix, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sbt_drop(f->nolim, f->prefix);
    sb_close(f->bus);
    sb_close(f->nolim);
    free(f);
    return 0;
}

/* The error of a cancelled statement: SB_TIMEOUT, the option named, the
 * backend's own code kept. */
static void assert_timeout(int rc, const sb_error *err)
{
    if (rc != SB_TIMEOUT)
        fail_msg("expected SB_TIMEOUT, got %s: %s", sb_strerror(rc),
                 err->message);
    assert_int_equal(err->code, SB_TIMEOUT);
    assert_string_equal(err->field, "statement_timeout_ms");
    char limit[64];
    snprintf(limit, sizeof limit, "statement_timeout_ms (%d ms)", LIMIT_MS);
    if (strstr(err->message, limit) == NULL)
        fail_msg("the message does not name the limit: %s", err->message);
    if (sbt_is_pg())
        assert_string_equal(err->sqlstate, "57014");
    else
        assert_true(err->native == SQLITE_INTERRUPT ||
                    (err->native & 0xff) == SQLITE_BUSY);
    assert_false(sb_is_transient(rc));
}

static void publish_one(sb_bus *bus, const char *queue, const char *text)
{
    sb_outgoing m = {NULL, text, strlen(text), NULL, 0};
    sb_error err;
    sbt_ok(sb_publish(bus, NULL, queue, &m, NULL, &err), &err, "publish");
}

/* Publish, claim and ack one message: the bus works. */
static void round_trip(sb_bus *bus, const char *queue)
{
    publish_one(bus, queue, "after");
    sb_msg **msgs = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, queue, 1, 30000, &msgs, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    size_t len = 0;
    const char *p = sb_msg_payload(msgs[0], &len);
    assert_int_equal(len, 5);
    assert_memory_equal(p, "after", 5);
    sbt_ok(sb_ack(bus, NULL, msgs[0], &err), &err, "ack");
    sb_msg_free_array(msgs, n);
}

/* S10: the public path (a caller's transaction) and the library's own
 * (a pooled connection's prepared statement) are both cancelled. */
static void test_slow_statement_cancelled(void **state)
{
    fixture *f = *state;
    for (int round = 0; round < 3; round++) { /* the pool reuses them */
        sb_error err;
        sb_tx *tx = NULL;
        sbt_ok(sb_tx_begin(f->bus, &tx, &err), &err, "begin");
        int64_t t0 = sb__mono_us();
        int rc = sb_tx_exec(tx, slow_sql(), &err);
        int64_t took = sb__mono_us() - t0;
        assert_timeout(rc, &err);
        assert_true(took < WELL_BEFORE_US);
        sb_tx_rollback(tx);

        sb_conn *c = NULL;
        sbt_ok(sb__pool_acquire(f->bus->pool, 30000, &c, &err), &err,
               "acquire");
        sb_rows *rows = NULL;
        t0 = sb__mono_us();
        rc = sb__query(c, slow_sql(), NULL, 0, &rows, NULL, &err);
        took = sb__mono_us() - t0;
        assert_null(rows);
        assert_timeout(rc, &err);
        assert_true(took < WELL_BEFORE_US);
        /* The same connection runs the next statement normally. */
        sbt_ok(sb__query(c, "SELECT 1", NULL, 0, &rows, NULL, &err), &err,
               "select after a timeout");
        assert_int_equal(sb__rows_int(rows, 0, 0), 1);
        sb__rows_free(rows);
        sb__pool_release(f->bus->pool, c);
        round_trip(f->bus, "after.q");
    }
}

/* S10 on PostgreSQL: every pooled connection carries the session limit;
 * a bus without one leaves the server's (0 here). */
static void test_pg_session_setting(void **state)
{
    fixture *f = *state;
    if (!sbt_is_pg())
        skip();
    sb_error err;
    sb_conn *c[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        sbt_ok(sb__pool_acquire(f->bus->pool, 30000, &c[i], &err), &err,
               "acquire");
    for (int i = 0; i < 2; i++) {
        sb_rows *rows = NULL;
        sbt_ok(sb__query(c[i], "SHOW statement_timeout", NULL, 0, &rows, NULL,
                         &err),
               &err, "show");
        assert_string_equal(sb__rows_text(rows, 0, 0), "200ms");
        sb__rows_free(rows);
        sb__pool_release(f->bus->pool, c[i]);
    }
    sb_conn *z = NULL;
    sbt_ok(sb__pool_acquire(f->nolim->pool, 30000, &z, &err), &err, "acquire");
    sb_rows *rows = NULL;
    sbt_ok(sb__query(z, "SHOW statement_timeout", NULL, 0, &rows, NULL, &err),
           &err, "show");
    assert_string_equal(sb__rows_text(rows, 0, 0), "0");
    sb__rows_free(rows);
    sb__pool_release(f->nolim->pool, z);
}

/* A statement that times out inside a transaction ends it on both
 * backends: the writes before it are rolled back, later statements fail
 * instead of running outside it, the commit fails, and nothing is kept. */
static void test_transaction_rolled_back(void **state)
{
    fixture *f = *state;
    sb_error err;
    sb_tx *tx = NULL;
    sbt_ok(sb_tx_begin(f->bus, &tx, &err), &err, "begin");
    sb_outgoing m = {NULL, "in tx", 5, NULL, 0};
    sbt_ok(sb_publish(f->bus, tx, "tx.q", &m, NULL, &err), &err,
           "publish in tx");
    assert_timeout(sb_tx_exec(tx, slow_sql(), &err), &err);
    assert_int_equal(sb_tx_exec(tx, "SELECT 1", &err), SB_BACKEND);
    assert_int_equal(sb_tx_commit(tx, &err), SB_BACKEND);
    assert_int_equal(sbt_count(f->bus, "tx.q"), 0);
    assert_int_equal(sbt_count(f->nolim, "tx.q"), 0);
    round_trip(f->bus, "tx.q");
}

static int slow_fn(sb_conn *c, void *ctx, sb_error *err)
{
    (*(int *)ctx)++;
    return sb__query(c, slow_sql(), NULL, 0, NULL, NULL, err);
}

/* retry.c never retries a timeout: the statement would run as long
 * again. */
static void test_not_retried(void **state)
{
    fixture *f = *state;
    sb_error err;
    int calls = 0;
    assert_timeout(sb__db_run_tx(f->bus->pool, NULL, slow_fn, &calls, &err),
                   &err);
    assert_int_equal(calls, 1);
    round_trip(f->bus, "retry.q");
}

/* The holder of a lock, outside the library: SQLite's write lock
 * (BEGIN IMMEDIATE) or a PostgreSQL table lock on the messages table. */
typedef struct locker {
    sqlite3 *db;
    PGconn *pg;
} locker;

static void lock_hold(locker *l, const char *prefix)
{
    memset(l, 0, sizeof *l);
    char sql[256];
    if (sbt_is_pg()) {
        l->pg = PQconnectdb(sbt_pg_url());
        assert_int_equal(PQstatus(l->pg), CONNECTION_OK);
        snprintf(sql, sizeof sql,
                 "BEGIN; LOCK TABLE %smessages IN ACCESS EXCLUSIVE MODE",
                 prefix);
        PGresult *r = PQexec(l->pg, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            fail_msg("lock: %s", PQerrorMessage(l->pg));
        PQclear(r);
        return;
    }
    const char *path = sbt_url() + strlen("sqlite:");
    assert_int_equal(sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL),
                     SQLITE_OK);
}

static void lock_release(locker *l)
{
    if (l->pg != NULL) {
        PQclear(PQexec(l->pg, "ROLLBACK"));
        PQfinish(l->pg);
    }
    if (l->db != NULL) {
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(l->db);
    }
}

/* A statement waiting for a lock another session holds is bounded by the
 * limit too (PostgreSQL's statement_timeout counts the wait; SQLite's busy
 * handler stops at the deadline instead of busy_timeout's 5 s): SB_TIMEOUT,
 * not SB_BUSY. Once the lock is gone the same bus publishes. */
static void test_lock_wait_bounded(void **state)
{
    fixture *f = *state;
    locker l;
    lock_hold(&l, f->prefix);
    sb_outgoing m = {NULL, "blocked", 7, NULL, 0};
    sb_error err;
    int64_t t0 = sb__mono_us();
    int rc = sb_publish(f->bus, NULL, "lock.q", &m, NULL, &err);
    int64_t took = sb__mono_us() - t0;
    lock_release(&l);
    assert_timeout(rc, &err);
    assert_true(took < WELL_BEFORE_US);
    assert_int_equal(sbt_count(f->bus, "lock.q"), 0);
    round_trip(f->bus, "lock.q");
}

/* 0 is no limit: a statement longer than LIMIT_MS finishes on a bus
 * without one, and a short one on the bus with one. */
static void test_zero_is_no_limit(void **state)
{
    fixture *f = *state;
    sb_error err;
    sb_tx *tx = NULL;
    sbt_ok(sb_tx_begin(f->nolim, &tx, &err), &err, "begin");
    sbt_ok(sb_tx_exec(tx, medium_sql(), &err), &err,
           "a statement longer than the other bus's limit");
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
    round_trip(f->nolim, "zero.q");
    sbt_ok(sb_tx_begin(f->bus, &tx, &err), &err, "begin");
    sbt_ok(sb_tx_exec(tx, "SELECT 1", &err), &err, "a short statement");
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
}

/* The option's range: 0 to 86,400,000 ms, SB_INVALID naming it and the
 * limit otherwise. */
static void test_option_range(void **state)
{
    fixture *f = *state;
    const int64_t bad[] = {-1, 86400001, INT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sb_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.url = sbt_url();
        o.table_prefix = f->prefix;
        o.statement_timeout_ms = bad[i];
        sb_bus *b = NULL;
        sb_error err;
        assert_int_equal(sb_open(&o, &b, &err), SB_INVALID);
        assert_null(b);
        assert_string_equal(err.field, "statement_timeout_ms");
        assert_non_null(strstr(err.message, "86400000"));
    }
    sb_options o;
    memset(&o, 0, sizeof o);
    o.statement_timeout_ms = 86400000;
    sb_bus *b = sbt_open(f->prefix, &o);
    round_trip(b, "range.q");
    sb_close(b);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slow_statement_cancelled, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pg_session_setting, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_transaction_rolled_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_wait_bounded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_zero_is_no_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_option_range, setup, teardown),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
