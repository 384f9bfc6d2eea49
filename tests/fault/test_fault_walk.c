/*
 * test_fault_walk.c - "fail the Nth allocation" over the public API, on a
 * real SQLite file. Style rule 7: one allocator seam (sb__malloc & co.) so
 * that a test can walk every error path, as SQLite's faultsim and curl's
 * torture tests do; out of memory is an error code, never a crash.
 *
 * For each operation the walk first counts the allocations a successful
 * call makes through the seam (tests/failalloc.h), then runs the call once
 * for each N with the Nth allocation failing, each time from the same
 * starting state (a copy of a database file prepared once per operation,
 * and a new bus), and checks:
 *  - the call returns an error code, filled into the caller's sb_error
 *    (SB_NOMEM, or the code of what the missing memory made fail), or
 *    SB_OK with its whole result: an allocation the library can do without
 *    (a wake-up, a log line) may fail without failing the call;
 *  - nothing leaks: every block allocated through the seam is freed once
 *    the call's objects and the bus are closed (LSan checks the rest under
 *    `make check-asan`);
 *  - nothing half-written stays in the database: after a failed publish
 *    the queue holds the whole batch or none of it, after a failed ack the
 *    message is gone or still leased to the caller (the ack can be made
 *    again), after a failed ingestion, retry or archive the same call made
 *    again (allocator working) ends in the state of a run that never
 *    failed -- all read back through the public API.
 *
 * Most walks count and fail the calling thread's allocations only, so a
 * call's count is the same in every run whatever the bus's background
 * threads do. The walks marked "(threads)" count every thread's (a
 * worker's pump and handlers, the channel's loop and executors): their
 * count varies a little from run to run, and the check is that the work
 * is still done, or left in the queue for later, intact.
 *
 * A walk visits every N up to a few hundred and then every `stride`-th
 * (each case below says its own; sb_publish_batch makes ~2,000
 * allocations, 18 per message); the run prints each walk's count and the
 * runs made. SQLite only: the allocations are the library's, the same on
 * every backend, and a SQLite file is cheap enough to set up thousands of
 * times. The files live on /dev/shm when there is one (a run's cost is
 * then the library's, not the disk's fsyncs).
 *
 * To chase a finding: SQLBUS_TEST_FILTER=test_errors runs one group,
 * SB_FAULT_VERBOSE=1 names each run that did not end in SB_NOMEM (and the
 * state a run without failures leaves), SB_FAULT_BACKTRACE=1 prints the
 * stack of every failed allocation.
 */
#include "failalloc.h"
#include "backend/harness.h"
#include "fault/fault_db.h"

#include <sqlite3.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* one walk */

#define MAX_IDS 256

typedef struct fw_ctx {
    sb_bus *bus;
    sb_errors *store;
    sb_channel *ch;
    sb_waiter *waiter;
    sb_msg **msgs;
    size_t n_msgs;
    char url[400];
    char cid[64];
    char ids[MAX_IDS][37];
    atomic_int handled[MAX_IDS]; /* worker handler calls per message */
    atomic_int triggers;         /* sb_request trigger calls */
    int started;                 /* the worker under test started */
    int dead_letters;            /* written by dead_letter() */
    int polling;                 /* a bus without wake-ups (notify -1) */
    long n;                      /* the N of this run (0: counting run) */
} fw_ctx;

typedef struct fw_case {
    const char *name;
    int all_threads; /* count (and fail) background threads' allocations */
    long every_upto; /* walk every N up to this, then every `stride`-th */
    long stride;
    /* Once, allocator working: the starting state, written to the
     * template file (x->url), everything closed at the end. */
    void (*prepare)(fw_ctx *x);
    /* Each run, on a copy of the template: open what the call needs. */
    void (*setup)(fw_ctx *x);
    /* The call under test. On SB_OK it checks the whole result; it frees
     * what it got either way. */
    int (*run)(fw_ctx *x, sb_error *err);
    /* Allocator working again: the database holds the call's result (rc
     * SB_OK) or a state the API can carry on from; then close all. */
    void (*check)(fw_ctx *x, int rc);
} fw_case;

static void start_run(const fw_case *c, fw_ctx *x, long n)
{
    memset(x, 0, sizeof *x);
    x->n = n;
    copy_template();
    snprintf(x->url, sizeof x->url, "sqlite:%s", run_path);
    c->setup(x);
}

static void walk(const fw_case *c)
{
    fw_ctx *x = calloc(1, sizeof *x);
    assert_non_null(x);
    int64_t t0 = now_ms();
    long live0 = fa_live();
    remove_db(template_path);
    snprintf(x->url, sizeof x->url, "sqlite:%s", template_path);
    c->prepare(x);
    if (fa_live() != live0)
        fail_msg("%s: preparing leaked %ld block(s)", c->name,
                 fa_live() - live0);
    if (c->all_threads)
        fa_all_threads();
    else
        fa_only_this_thread();

    /* The counting run: no failure, the whole result. */
    start_run(c, x, 0);
    sb_error err;
    fa_arm(0);
    int rc = c->run(x, &err);
    long count = fa_disarm();
    if (rc != SB_OK)
        fail_msg("%s: the run without failures failed: %s (%s)", c->name,
                 sb_strerror(rc), err.message);
    c->check(x, rc);
    if (fa_live() != live0)
        fail_msg("%s: the run without failures leaked %ld block(s)", c->name,
                 fa_live() - live0);
    if (count == 0)
        fail_msg("%s: no allocation counted", c->name);

    long walked = 0, errors = 0, absorbed = 0, nomem = 0;
    for (long n = 1; n <= count; n += n < c->every_upto ? 1 : c->stride) {
        start_run(c, x, n);
        long failed0 = fa_failed();
        memset(&err, 0, sizeof err);
        fa_arm(n);
        rc = c->run(x, &err);
        fa_disarm();
        int injected = fa_failed() != failed0;
        if (rc != SB_OK) {
            if (!injected)
                fail_msg("%s: N=%ld: %s with no failure injected (%s)", c->name,
                         n, sb_strerror(rc), err.message);
            /* Errors travel in the caller's sb_error (style rule 2). */
            if (err.code != rc || err.message[0] == '\0')
                fail_msg("%s: N=%ld: rc %d (%s) but err {code %d, \"%s\"}",
                         c->name, n, rc, sb_strerror(rc), err.code,
                         err.message);
            errors++;
            if (rc == SB_NOMEM)
                nomem++;
            else if (getenv("SB_FAULT_VERBOSE") != NULL)
                printf("  %s: N=%ld: %s: %s\n", c->name, n, sb_strerror(rc),
                       err.message);
        } else if (injected) {
            absorbed++;
            if (getenv("SB_FAULT_VERBOSE") != NULL)
                printf("  %s: N=%ld: absorbed\n", c->name, n);
        }
        c->check(x, rc);
        if (fa_live() != live0)
            fail_msg("%s: N=%ld (%s) leaked %ld block(s)", c->name, n,
                     sb_strerror(rc), fa_live() - live0);
        walked++;
    }
    fa_only_this_thread();
    printf("%-28s %5ld allocations, %4ld runs (every N to %ld, then every "
           "%ld): %ld errors (%ld SB_NOMEM), %ld absorbed, %lld ms\n",
           c->name, count, walked, c->every_upto, c->stride, errors, nomem,
           absorbed, (long long)(now_ms() - t0));
    fflush(stdout);
    free(x);
}

/* ------------------------------------------------------------------ */
/* helpers (the allocator works while they run) */

static const char *const prefix = "fw_";

static sb_options bus_options(const fw_ctx *x)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = x->url;
    o.table_prefix = prefix;
    o.log = quiet_log;
    /* Thousands of runs: commits without an fsync each. */
    o.durability = SB_DURABILITY_NORMAL;
    /* The WAL watch's thread polls its stop flag every 200 ms, and each
     * stop waits for it: walks of threads that allocate elsewhere poll. */
    if (x->polling)
        o.notify = -1;
    return o;
}

static void open_bus(fw_ctx *x)
{
    sb_options o = bus_options(x);
    sb_error err;
    sbt_ok(sb_open(&o, &x->bus, &err), &err, "open");
}

static void close_all(fw_ctx *x)
{
    sb_msg_free_array(x->msgs, x->n_msgs);
    x->msgs = NULL;
    x->n_msgs = 0;
    sb_waiter_free(x->waiter);
    x->waiter = NULL;
    sb_channel_close(x->ch);
    x->ch = NULL;
    sb_errors_close(x->store);
    x->store = NULL;
    sb_close(x->bus);
    x->bus = NULL;
}

/* Messages of `queue`: ready + delayed + leased (*in_flight). */
static long queue_count(fw_ctx *x, const char *queue, long *in_flight)
{
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_list(x->bus, &s, &n, &err), &err, "queue list");
    long total = 0;
    if (in_flight != NULL)
        *in_flight = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->queue, queue) == 0) {
            total = (long)(s[i]->ready + s[i]->delayed + s[i]->in_flight);
            if (in_flight != NULL)
                *in_flight = (long)s[i]->in_flight;
        }
    sb_free(s);
    return total;
}

/* The integer a query of the run file answers, read outside the
 * library. */
static long native_scalar(const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long v = -1;
    if (sqlite3_open_v2(run_path, &db, SQLITE_OPEN_READWRITE, NULL) ==
            SQLITE_OK &&
        sqlite3_busy_timeout(db, 5000) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = (long)sqlite3_column_int64(st, 0);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", db ? sqlite3_errmsg(db) : "nomem");
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (v < 0)
        fail_msg("%s: %s", sql, msg);
    return v;
}

static void message_text(int i, char *payload, size_t cap)
{
    snprintf(payload, cap, "payload %d of the walk", i);
}

static const char *const walk_headers =
    "{\"sb-correlation-id\":\"0189abcd-ef01-7abc-9def-0123456789ab\","
    "\"content-type\":\"text/plain\",\"trace\":\"long enough to make "
    "the parser grow its buffer at least once, surely\"}";

/* Publish `n` messages "payload <i> ..." to `queue` (ids in x->ids). */
static void publish_n(fw_ctx *x, const char *queue, int n)
{
    char(*payloads)[64] = calloc((size_t)n, sizeof *payloads);
    sb_outgoing *m = calloc((size_t)n, sizeof *m);
    for (int i = 0; i < n; i++) {
        message_text(i, payloads[i], sizeof payloads[i]);
        m[i].payload = payloads[i];
        m[i].payload_len = strlen(payloads[i]);
        m[i].headers_json = walk_headers;
    }
    sb_error err;
    sbt_ok(sb_publish_batch(x->bus, NULL, queue, m, (size_t)n, x->ids, &err),
           &err, "publish");
    free(m);
    free(payloads);
}

/* The index of message `m` in x->ids[0..n), or fail. */
static int index_of(const fw_ctx *x, const sb_msg *m, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(x->ids[i], sb_msg_id(m)) == 0)
            return i;
    fail_msg("N=%ld: message %s was never published", x->n, sb_msg_id(m));
    return -1;
}

/* Message i of a walk, read back whole. */
static void check_message(const fw_ctx *x, const sb_msg *m, int n)
{
    int i = index_of(x, m, n);
    char want[64];
    message_text(i, want, sizeof want);
    size_t len = 0;
    const void *p = sb_msg_payload(m, &len);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(p, want, len);
    assert_string_equal(sb_msg_headers(m), walk_headers);
}

/* Header `key` of `m` is `want` (a missing one fails, not crashes). */
static void header_is(const sb_msg *m, const char *key, const char *want)
{
    const char *v = sb_msg_header(m, key);
    if (v == NULL || strcmp(v, want) != 0)
        fail_msg("message %s: header %s is %s%s%s, want \"%s\"", sb_msg_id(m),
                 key, v ? "\"" : "", v ? v : "missing", v ? "\"" : "", want);
}

/* Claim everything `queue` holds: `want` of the messages x->ids[0..
 * among), each once and intact. */
static void claim_some_back(fw_ctx *x, const char *queue, int want, int among)
{
    sb_msg **msgs = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(x->bus, queue, 1000, 30000, &msgs, &n, &err), &err,
           "claim back");
    if ((int)n != want)
        fail_msg("N=%ld: claimed %zu of %d messages back", x->n, n, want);
    char seen[MAX_IDS] = {0};
    for (size_t i = 0; i < n; i++) {
        int k = index_of(x, msgs[i], among);
        assert_int_equal(seen[k], 0);
        seen[k] = 1;
        check_message(x, msgs[i], among);
    }
    sb_msg_free_array(msgs, n);
}

/* Exactly the `want` messages x->ids[0..want), each once and intact. */
static void claim_back(fw_ctx *x, const char *queue, int want)
{
    claim_some_back(x, queue, want, want);
}

/* ------------------------------------------------------------------ */
/* sb_open and sb_close */

/* An empty file: sb_open creates the schema. */
static void prepare_nothing(fw_ctx *x)
{
    (void)x;
}

/* The transport's schema, as a running system has it. */
static void prepare_bus(fw_ctx *x)
{
    open_bus(x);
    close_all(x);
}

static void setup_nothing(fw_ctx *x)
{
    (void)x;
}

static int run_open(fw_ctx *x, sb_error *err)
{
    sb_options o = bus_options(x);
    sb_bus *bus = (sb_bus *)&o; /* must be set to NULL on failure */
    int rc = sb_open(&o, &bus, err);
    if (rc != SB_OK) {
        assert_null(bus);
        return rc;
    }
    assert_string_equal(sb_backend_name(bus), "sqlite");
    sb_close(bus);
    return SB_OK;
}

/* Tables, indexes and triggers of the prefix in the run file (0 when
 * there is no file). */
static long schema_objects(void)
{
    if (access(run_path, F_OK) != 0)
        return 0;
    return native_scalar("SELECT count(*) FROM sqlite_master WHERE name "
                         "LIKE 'fw\\_%' ESCAPE '\\'");
}

/* The schema a successful open leaves (set by the counting run). */
static long full_schema;

/* A failed open created the whole schema (one transaction) or nothing of
 * it; the next open completes and verifies it, and the bus works. */
static void check_open(fw_ctx *x, int rc)
{
    long objects = schema_objects();
    if (x->n == 0) {
        assert_true(objects > 0);
        full_schema = objects;
    } else if (objects != full_schema && (rc == SB_OK || objects != 0))
        fail_msg("N=%ld: %ld schema objects, want %ld%s", x->n, objects,
                 full_schema, rc == SB_OK ? "" : " or none");
    open_bus(x);
    sb_error err;
    sbt_ok(sb_schema_verify(x->bus, &err), &err, "verify");
    publish_n(x, "q", 1);
    claim_back(x, "q", 1);
    close_all(x);
}

/* ------------------------------------------------------------------ */
/* publish */

static void setup_bus(fw_ctx *x)
{
    open_bus(x);
}

/* With an id: a failed publish is made again with it (T9). */
static const char *const walk_id = "0189abcd-ef01-7abc-9def-0123456789ab";

static int run_publish(fw_ctx *x, sb_error *err)
{
    char text[64];
    message_text(0, text, sizeof text);
    sb_outgoing m = {walk_id, text, strlen(text), walk_headers, 0};
    char id[37] = "";
    snprintf(x->ids[0], sizeof x->ids[0], "%s", walk_id);
    int rc = sb_publish(x->bus, NULL, "q", &m, id, err);
    if (rc == SB_OK)
        assert_string_equal(id, walk_id);
    return rc;
}

/* The message or nothing; published again, it is there once. */
static void check_publish(fw_ctx *x, int rc)
{
    long n = queue_count(x, "q", NULL);
    if (rc == SB_OK)
        assert_int_equal(n, 1);
    else
        assert_in_range(n, 0, 1);
    sbt_ok(run_publish(x, NULL), NULL, "publish again");
    claim_back(x, "q", 1);
    close_all(x);
}

#define BATCH 120

static int run_publish_batch(fw_ctx *x, sb_error *err)
{
    static char payloads[BATCH][64];
    static sb_outgoing m[BATCH];
    for (int i = 0; i < BATCH; i++) {
        message_text(i, payloads[i], sizeof payloads[i]);
        m[i] = (sb_outgoing){NULL, payloads[i], strlen(payloads[i]),
                             walk_headers, 0};
    }
    return sb_publish_batch(x->bus, NULL, "q", m, BATCH, x->ids, err);
}

/* All or nothing (T11). */
static void check_publish_batch(fw_ctx *x, int rc)
{
    long n = queue_count(x, "q", NULL);
    if (rc == SB_OK || n != 0) {
        assert_int_equal(n, BATCH);
        claim_back(x, "q", BATCH);
    }
    close_all(x);
}

/* A caller's transaction (T12): its own write and two publishes. */
static void prepare_orders(fw_ctx *x)
{
    open_bus(x);
    sbt_exec(x->bus, "CREATE TABLE fw_orders (id INTEGER)");
    close_all(x);
}

static int run_publish_tx(fw_ctx *x, sb_error *err)
{
    sb_tx *tx = (sb_tx *)x;
    int rc = sb_tx_begin(x->bus, &tx, err);
    if (rc != SB_OK) {
        assert_null(tx);
        return rc;
    }
    rc = sb_tx_exec(tx, "INSERT INTO fw_orders VALUES (42)", err);
    static char payloads[3][64];
    sb_outgoing m[3];
    for (int i = 0; i < 3; i++) {
        message_text(i, payloads[i], sizeof payloads[i]);
        m[i] = (sb_outgoing){NULL, payloads[i], strlen(payloads[i]),
                             walk_headers, 0};
    }
    if (rc == SB_OK)
        rc = sb_publish_batch(x->bus, tx, "q", m, 3, x->ids, err);
    if (rc == SB_OK)
        rc = sb_publish(x->bus, tx, "q2", &m[0], x->ids[3], err);
    if (rc != SB_OK) {
        sb_tx_rollback(tx);
        return rc;
    }
    return sb_tx_commit(tx, err);
}

/* The caller's row and the messages commit together or not at all. */
static void check_publish_tx(fw_ctx *x, int rc)
{
    long o = native_scalar("SELECT count(*) FROM fw_orders"),
         q = queue_count(x, "q", NULL), q2 = queue_count(x, "q2", NULL);
    if (rc == SB_OK || o != 0) {
        assert_int_equal(o, 1);
        assert_int_equal(q, 3);
        assert_int_equal(q2, 1);
        claim_back(x, "q", 3);
    } else {
        assert_int_equal(q, 0);
        assert_int_equal(q2, 0);
    }
    close_all(x);
}

/* ------------------------------------------------------------------ */
/* claim, ack, nak, renew, dead letter */

/* Three messages in "q"; their ids are the same in every run. */
static void prepare_three(fw_ctx *x)
{
    open_bus(x);
    publish_n(x, "q", 3);
    close_all(x);
}

static char three_ids[3][37];

static void setup_three(fw_ctx *x)
{
    open_bus(x);
    memcpy(x->ids, three_ids, sizeof three_ids);
}

static void setup_three_polling(fw_ctx *x)
{
    x->polling = 1;
    setup_three(x);
}

static void prepare_three_ids(fw_ctx *x)
{
    prepare_three(x);
    memcpy(three_ids, x->ids, sizeof three_ids);
}

static int run_claim(fw_ctx *x, sb_error *err)
{
    sb_msg **m = (sb_msg **)x;
    size_t n = 99;
    int rc = sb_claim(x->bus, "q", 3, 1, &m, &n, err);
    if (rc != SB_OK) {
        assert_null(m);
        assert_int_equal(n, 0);
        return rc;
    }
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        check_message(x, m[i], 3);
        assert_int_equal(sb_msg_attempts(m[i]), 1);
        assert_int_equal(strlen(sb_msg_lock_id(m[i])), 36);
        assert_string_equal(sb_msg_queue(m[i]), "q");
        /* Parsed on first use: NULL when that parse ran out of memory
         * (an accessor has no result code), and the next call tries
         * again. */
        long f0 = fa_failed();
        const char *ct = sb_msg_header(m[i], "Content-Type");
        if (ct == NULL) {
            assert_true(fa_failed() > f0);
            ct = sb_msg_header(m[i], "Content-Type");
        }
        assert_string_equal(ct, "text/plain");
        assert_string_equal(sb_msg_correlation_id(m[i]),
                            "0189abcd-ef01-7abc-9def-0123456789ab");
    }
    sb_msg_free_array(m, n);
    return SB_OK;
}

/* A failed claim leaves the rows ready, or leased for its 1 ms: all three
 * come back intact. */
static void check_claim(fw_ctx *x, int rc)
{
    (void)rc;
    assert_int_equal(queue_count(x, "q", NULL), 3);
    usleep(2000);
    claim_back(x, "q", 3);
    close_all(x);
}

/* The first message claimed (lease 60 s), in x->msgs. */
static void setup_claimed(fw_ctx *x)
{
    setup_three(x);
    sb_error err;
    sbt_ok(sb_claim(x->bus, "q", 1, 60000, &x->msgs, &x->n_msgs, &err), &err,
           "claim");
    assert_int_equal(x->n_msgs, 1);
}

static int run_ack(fw_ctx *x, sb_error *err)
{
    return sb_ack(x->bus, NULL, x->msgs[0], err);
}

static int run_ack_tx(fw_ctx *x, sb_error *err)
{
    sb_tx *tx = NULL;
    int rc = sb_tx_begin(x->bus, &tx, err);
    if (rc != SB_OK)
        return rc;
    rc = sb_ack(x->bus, tx, x->msgs[0], err);
    if (rc != SB_OK) {
        sb_tx_rollback(tx);
        return rc;
    }
    return sb_tx_commit(tx, err);
}

/* The other two messages are untouched. */
static void check_others(fw_ctx *x)
{
    int k = index_of(x, x->msgs[0], 3);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(x->bus, "q", 10, 30000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        assert_int_not_equal(index_of(x, m[i], 3), k);
        check_message(x, m[i], 3);
    }
    sb_msg_free_array(m, n);
}

/* Gone, or still leased to us: the ack can be made again. */
static void check_ack(fw_ctx *x, int rc)
{
    long in_flight = 0;
    long n = queue_count(x, "q", &in_flight);
    if (rc == SB_OK || n == 2) {
        assert_int_equal(n, 2);
        assert_int_equal(in_flight, 0);
    } else {
        assert_int_equal(n, 3);
        assert_int_equal(in_flight, 1);
        sb_error err;
        sbt_ok(sb_ack(x->bus, NULL, x->msgs[0], &err), &err, "ack again");
    }
    check_others(x);
    close_all(x);
}

/* E16: the ack of a retried job writes the retry's confirmation in its
 * transaction. */
static void prepare_retried(fw_ctx *x)
{
    open_bus(x);
    char text[64];
    message_text(0, text, sizeof text);
    sb_outgoing m = {walk_id, text, strlen(text),
                     "{\"sb-retry-of\":\"order-42\",\"k\":\"v\"}", 0};
    sb_error err;
    sbt_ok(sb_publish(x->bus, NULL, "q", &m, NULL, &err), &err, "publish");
    close_all(x);
}

static void setup_retried(fw_ctx *x)
{
    open_bus(x);
    sb_error err;
    sbt_ok(sb_claim(x->bus, "q", 1, 60000, &x->msgs, &x->n_msgs, &err), &err,
           "claim");
    assert_int_equal(x->n_msgs, 1);
}

/* The ack and its confirmation together, or neither (then the ack is
 * made again). */
static void check_ack_retried(fw_ctx *x, int rc)
{
    long q = queue_count(x, "q", NULL), d = queue_count(x, "deadletter", NULL);
    if (rc != SB_OK && q == 1) {
        assert_int_equal(d, 0);
        sb_error err;
        sbt_ok(sb_ack(x->bus, NULL, x->msgs[0], &err), &err, "ack again");
        q = queue_count(x, "q", NULL);
        d = queue_count(x, "deadletter", NULL);
    }
    assert_int_equal(q, 0);
    assert_int_equal(d, 1);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(x->bus, "deadletter", 10, 30000, &m, &n, &err), &err,
           "claim the confirmation");
    assert_int_equal(n, 1);
    header_is(m[0], "sb-retry-of", "order-42");
    header_is(m[0], "sb-retry-confirmed", "true");
    sb_msg_free_array(m, n);
    close_all(x);
}

static int run_nak(fw_ctx *x, sb_error *err)
{
    return sb_nak(x->bus, x->msgs[0], 0, "System.Exception: boom", err);
}

/* Released for redelivery, or still leased to us (the nak can be made
 * again); the message comes back intact either way. */
static void check_nak(fw_ctx *x, int rc)
{
    long in_flight = 0;
    assert_int_equal(queue_count(x, "q", &in_flight), 3);
    if (rc == SB_OK)
        assert_int_equal(in_flight, 0);
    if (in_flight == 1) {
        sb_error err;
        sbt_ok(run_nak(x, &err), &err, "nak again");
    }
    claim_back(x, "q", 3);
    close_all(x);
}

static int run_renew(fw_ctx *x, sb_error *err)
{
    return sb_renew(x->bus, x->msgs[0], 120000, err);
}

/* Renewed or not, the lease is still ours: the ack works. */
static void check_renew(fw_ctx *x, int rc)
{
    (void)rc;
    long in_flight = 0;
    assert_int_equal(queue_count(x, "q", &in_flight), 3);
    assert_int_equal(in_flight, 1);
    sb_error err;
    sbt_ok(sb_ack(x->bus, NULL, x->msgs[0], &err), &err, "ack after renew");
    check_others(x);
    close_all(x);
}

static int run_dead_letter(fw_ctx *x, sb_error *err)
{
    sb_failure f = {sizeof f, "walk",      "System.Exception",
                    "boom",   "at Walk()", NULL};
    return sb_dead_letter(x->bus, x->msgs[0], &f, err);
}

/* Moved in one transaction (gone from q, in the DLQ), or still leased. */
static void check_dead_letter(fw_ctx *x, int rc)
{
    long in_flight = 0;
    long q = queue_count(x, "q", &in_flight),
         d = queue_count(x, "deadletter", NULL);
    if (rc != SB_OK && q == 3) {
        assert_int_equal(d, 0);
        assert_int_equal(in_flight, 1);
        sb_error err;
        sbt_ok(run_dead_letter(x, &err), &err, "dead letter again");
        q = queue_count(x, "q", NULL);
        d = queue_count(x, "deadletter", NULL);
    }
    assert_int_equal(q, 2);
    assert_int_equal(d, 1);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(x->bus, "deadletter", 10, 30000, &m, &n, &err), &err,
           "claim the dead letter");
    assert_int_equal(n, 1);
    header_is(m[0], "sb-exception-type", "System.Exception");
    header_is(m[0], "sb-failed-queue", "q");
    header_is(m[0], "sb-exception-message", "boom");
    header_is(m[0], "sb-exception-stacktrace", "at Walk()");
    header_is(m[0], "sb-dead-letter-reason", "walk");
    sb_msg_free_array(m, n);
    check_others(x);
    close_all(x);
}

/* ------------------------------------------------------------------ */
/* the worker */

#define WORKER_MSGS 3

static int handler(sb_delivery *d, void *user)
{
    fw_ctx *x = user;
    const sb_msg *m = sb_delivery_msg(d);
    for (int i = 0; i < WORKER_MSGS; i++)
        if (strcmp(x->ids[i], sb_msg_id(m)) == 0)
            atomic_fetch_add(&x->handled[i], 1);
    return SB_OK;
}

static int all_handled(fw_ctx *x)
{
    for (int i = 0; i < WORKER_MSGS; i++)
        if (atomic_load(&x->handled[i]) == 0)
            return 0;
    return 1;
}

static sb_worker_options worker_options(fw_ctx *x)
{
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "q";
    o.handler = handler;
    o.user = x;
    o.concurrency = 2;
    o.lease_ms = 150; /* a settlement that failed comes back soon */
    o.redelivery_delay_ms = -1;
    o.empty_poll_ms = 10;
    o.max_poll_ms = 20;
    o.stop_timeout_ms = 5000;
    return o;
}

/* Start, handle the three messages, stop, free. */
static int run_worker(fw_ctx *x, sb_error *err)
{
    sb_worker_options o = worker_options(x);
    sb_worker *w = (sb_worker *)x;
    int rc = sb_worker_start(x->bus, &o, &w, err);
    if (rc != SB_OK) {
        assert_null(w);
        return rc;
    }
    x->started = 1;
    /* Failures in the worker's threads delay the work, at most by a
     * lease or a poll: wait for it. */
    int64_t until = now_ms() + 5000;
    while (!all_handled(x) && now_ms() < until)
        usleep(1000);
    if (!all_handled(x))
        fail_msg("N=%ld: the worker did not handle every message", x->n);
    rc = sb_worker_stop(w, err);
    sb_worker_free(w);
    return rc;
}

/* Every message is handled, or still in the queue: none is lost. A
 * failed start ran no handler. */
static void check_worker(fw_ctx *x, int rc)
{
    long in_flight = 0;
    long n = queue_count(x, "q", &in_flight);
    if (rc == SB_OK)
        assert_int_equal(n, 0);
    int handled = 0;
    for (int i = 0; i < WORKER_MSGS; i++)
        handled += atomic_load(&x->handled[i]) > 0;
    assert_true(n + handled >= WORKER_MSGS);
    if (!x->started) {
        assert_int_equal(handled, 0);
        assert_int_equal(n, WORKER_MSGS);
    }
    if (in_flight > 0)
        usleep(160000); /* the leases of settlements not written */
    claim_some_back(x, "q", (int)n, WORKER_MSGS);
    close_all(x);
}

/* A worker whose handler fails every message for good (max_attempts 1):
 * each is dead-lettered with the handler's failure (T21, T22). */
static int failing_handler(sb_delivery *d, void *user)
{
    handler(d, user);
    sb_delivery_fail(d, "Walk.Failure", "boom", "at Walk()");
    return SB_ERROR;
}

static int run_worker_dead(fw_ctx *x, sb_error *err)
{
    sb_worker_options o = worker_options(x);
    o.handler = failing_handler;
    o.max_attempts = 1;
    sb_worker *w = NULL;
    int rc = sb_worker_start(x->bus, &o, &w, err);
    if (rc != SB_OK)
        return rc;
    x->started = 1;
    /* Until every row has left "q" (read outside the library, whose
     * allocations are being counted): a row claimed into a delivery that
     * could not be allocated returns after its lease and, its one attempt
     * spent, is dead-lettered unrun (T20). */
    int64_t until = now_ms() + 5000;
    while (native_scalar("SELECT count(*) FROM fw_messages WHERE queue = "
                         "'q'") > 0 &&
           now_ms() < until)
        usleep(2000);
    rc = sb_worker_stop(w, err);
    sb_worker_free(w);
    return rc;
}

/* Each message is dead-lettered once, intact; a dead letter names the
 * handler's failure, or the attempt that was never run. */
static void check_worker_dead(fw_ctx *x, int rc)
{
    (void)rc;
    if (!x->started)
        assert_int_equal(all_handled(x) || atomic_load(&x->handled[0]), 0);
    long q = queue_count(x, "q", NULL);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(x->bus, "deadletter", 10, 30000, &m, &n, &err), &err,
           "claim the dead letters");
    /* A failed start ran nothing. */
    assert_int_equal(q, x->started ? 0 : WORKER_MSGS);
    assert_int_equal(n, x->started ? WORKER_MSGS : 0);
    char seen[WORKER_MSGS] = {0};
    for (size_t i = 0; i < n; i++) {
        const char *id = sb_msg_header(m[i], "sb-message-id");
        int k = -1;
        for (int j = 0; j < WORKER_MSGS; j++)
            if (id != NULL && strcmp(id, x->ids[j]) == 0)
                k = j;
        assert_true(k >= 0);
        assert_int_equal(seen[k]++, 0);
        char want[64];
        message_text(k, want, sizeof want);
        size_t len = 0;
        const void *p = sb_msg_payload(m[i], &len);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(p, want, len);
        /* sb_delivery_fail copies what it can (it has no result code):
         * a text it could not copy is left out, never another's. */
        const char *type = sb_msg_header(m[i], "sb-exception-type");
        const char *text = sb_msg_header(m[i], "sb-exception-message");
        const char *trace = sb_msg_header(m[i], "sb-exception-stacktrace");
        assert_non_null(type);
        if (text != NULL && strcmp(text, "boom") != 0)
            assert_string_equal(type, "error");
        if (trace != NULL)
            assert_string_equal(trace, "at Walk()");
        if (strcmp(type, "Walk.Failure") != 0 &&
            strcmp(type, "max-attempts") != 0 && strcmp(type, "error") != 0)
            fail_msg("N=%ld: dead letter with exception type %s", x->n, type);
    }
    sb_msg_free_array(m, n);
    close_all(x);
}

/* Three dead letters written by sb_dead_letter (T21), to requeue. */
static void prepare_dead_three(fw_ctx *x)
{
    prepare_three_ids(x);
    open_bus(x);
    sb_error err;
    sbt_ok(sb_claim(x->bus, "q", 10, 30000, &x->msgs, &x->n_msgs, &err), &err,
           "claim");
    sb_failure f = {sizeof f, "walk", "System.Exception", "boom", NULL, NULL};
    for (size_t i = 0; i < x->n_msgs; i++)
        sbt_ok(sb_dead_letter(x->bus, x->msgs[i], &f, &err), &err,
               "dead letter");
    close_all(x);
}

static int run_requeue(fw_ctx *x, sb_error *err)
{
    int64_t moved = -1;
    int rc = sb_dlq_requeue(x->bus, NULL, NULL, NULL, &moved, err);
    if (rc == SB_OK)
        assert_int_equal(moved, 3);
    return rc;
}

/* T32: each letter back in its queue under its own id, or still a dead
 * letter (requeued again, the rest follow); none twice. */
static void check_requeue(fw_ctx *x, int rc)
{
    long q = queue_count(x, "q", NULL), d = queue_count(x, "deadletter", NULL);
    assert_int_equal(q + d, 3);
    if (rc == SB_OK)
        assert_int_equal(d, 0);
    int64_t moved = -1;
    sb_error err;
    sbt_ok(sb_dlq_requeue(x->bus, NULL, NULL, NULL, &moved, &err), &err,
           "requeue again");
    assert_int_equal(moved, d);
    claim_back(x, "q", 3);
    close_all(x);
}

/* ------------------------------------------------------------------ */

/* {name, all threads, every N up to, then every stride-th, ...}. Strides
 * where a walk is long: sb_publish_batch makes ~2,200 allocations (18 a
 * message, the same for each: header checks); a worker's dead-letter run
 * waits out leases (~300 allocations, ~70 ms a run). */
static const fw_case transport_cases[] = {
    {"sb_open (new file)", 0, 1000, 1, prepare_nothing, setup_nothing, run_open,
     check_open},
    {"sb_open (existing schema)", 0, 1000, 1, prepare_bus, setup_nothing,
     run_open, check_open},
    {"sb_publish", 0, 1000, 1, prepare_bus, setup_bus, run_publish,
     check_publish},
    {"sb_publish_batch (120)", 0, 300, 7, prepare_bus, setup_bus,
     run_publish_batch, check_publish_batch},
    {"publish in sb_tx", 0, 1000, 1, prepare_orders, setup_bus, run_publish_tx,
     check_publish_tx},
    {"sb_claim", 0, 1000, 1, prepare_three_ids, setup_three, run_claim,
     check_claim},
    {"sb_ack", 0, 1000, 1, prepare_three_ids, setup_claimed, run_ack,
     check_ack},
    {"sb_ack in sb_tx", 0, 1000, 1, prepare_three_ids, setup_claimed,
     run_ack_tx, check_ack},
    {"sb_ack (retried job)", 0, 1000, 1, prepare_retried, setup_retried,
     run_ack, check_ack_retried},
    {"sb_nak", 0, 1000, 1, prepare_three_ids, setup_claimed, run_nak,
     check_nak},
    {"sb_renew", 0, 1000, 1, prepare_three_ids, setup_claimed, run_renew,
     check_renew},
    {"sb_dead_letter", 0, 1000, 1, prepare_three_ids, setup_claimed,
     run_dead_letter, check_dead_letter},
    {"sb_worker_start/stop", 0, 1000, 1, prepare_three_ids, setup_three,
     run_worker, check_worker},
    {"sb_worker (threads)", 1, 300, 5, prepare_three_ids, setup_three_polling,
     run_worker, check_worker},
    {"worker dead letters (threads)", 1, 100, 7, prepare_three_ids,
     setup_three_polling, run_worker_dead, check_worker_dead},
    {"sb_dlq_requeue", 0, 1000, 1, prepare_dead_three, setup_three, run_requeue,
     check_requeue},
};

static void test_transport(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof transport_cases / sizeof *transport_cases;
         i++)
        walk(&transport_cases[i]);
}

/* ------------------------------------------------------------------ */
/* the channel */

static sb_channel_options channel_options(void)
{
    sb_channel_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    /* A reply whose delivery failed is found again by the next sweep. */
    o.full_sweep_interval_ms = 20;
    o.confirmation_timeout_ms = 200;
    o.drain_timeout_ms = 2000;
    return o;
}

static void open_channel(fw_ctx *x)
{
    sb_channel_options o = channel_options();
    sb_error err;
    sbt_ok(sb_channel_open(x->bus, &o, &x->ch, &err), &err, "channel open");
}

/* The channel's tables too. */
static void prepare_channel(fw_ctx *x)
{
    open_bus(x);
    open_channel(x);
    close_all(x);
}

static int trigger(const char *cid, void *user)
{
    fw_ctx *x = user;
    atomic_fetch_add(&x->triggers, 1);
    snprintf(x->cid, sizeof x->cid, "%s", cid);
    return SB_OK;
}

static sb_wait_options wait_options(void)
{
    sb_wait_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.timeout_ms = 5000;
    o.recovery_handler = "walk";
    o.recovery_context = "context";
    o.recovery_context_len = 7;
    return o;
}

/* A request, a reply and its wait, allocator working: the channel works
 * (after whatever a failed call left). */
static void round_trip(fw_ctx *x)
{
    sb_wait_options o = wait_options();
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_request(x->ch, &o, trigger, x, &w, &err), &err, "request");
    sbt_ok(
        sb_respond(x->ch, sb_waiter_correlation_id(w), "pong", 4, NULL, &err),
        &err, "respond");
    sb_reply *r = NULL;
    sbt_ok(sb_waiter_wait(w, &r, &err), &err, "wait");
    size_t len = 0;
    const void *d = sb_reply_data(r, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(d, "pong", 4);
    sb_reply_free(r);
    sb_waiter_free(w);
}

/* Registrations of this bus in every state. */
static long registrations(fw_ctx *x)
{
    sb_registration_counts c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    sb_error err;
    sbt_ok(sb_recovery_counts(x->bus, 0, &c, &err), &err, "counts");
    return (long)(c.by_state[0] + c.by_state[1] + c.by_state[2] +
                  c.by_state[3]);
}

static int run_channel_open(fw_ctx *x, sb_error *err)
{
    sb_channel_options o = channel_options();
    sb_channel *ch = (sb_channel *)x;
    int rc = sb_channel_open(x->bus, &o, &ch, err);
    if (rc != SB_OK) {
        assert_null(ch);
        return rc;
    }
    sb_channel_close(ch);
    return SB_OK;
}

static void check_channel_open(fw_ctx *x, int rc)
{
    (void)rc;
    open_channel(x);
    round_trip(x);
    close_all(x);
}

static void setup_channel(fw_ctx *x)
{
    open_bus(x);
    open_channel(x);
}

static void setup_channel_polling(fw_ctx *x)
{
    x->polling = 1;
    setup_channel(x);
}

static int run_request(fw_ctx *x, sb_error *err)
{
    sb_wait_options o = wait_options();
    sb_waiter *w = (sb_waiter *)x;
    int rc = sb_request(x->ch, &o, trigger, x, &w, err);
    if (rc != SB_OK) {
        assert_null(w);
        return rc;
    }
    assert_int_equal(atomic_load(&x->triggers), 1);
    assert_string_equal(sb_waiter_correlation_id(w), x->cid);
    x->waiter = w;
    return SB_OK;
}

/* C1: the work is sent (the trigger runs) only by a request that
 * succeeds, and a failed one leaves nothing registered. */
static void check_request(fw_ctx *x, int rc)
{
    if (rc != SB_OK) {
        assert_int_equal(atomic_load(&x->triggers), 0);
        assert_int_equal(registrations(x), 0);
    } else {
        assert_int_equal(registrations(x), 1);
        sb_error err;
        sbt_ok(sb_respond(x->ch, x->cid, "pong", 4, NULL, &err), &err,
               "respond");
        sb_reply *r = NULL;
        sbt_ok(sb_waiter_wait(x->waiter, &r, &err), &err, "wait");
        sb_reply_free(r);
    }
    round_trip(x);
    close_all(x);
}

static void setup_waiting(fw_ctx *x)
{
    setup_channel(x);
    sb_wait_options o = wait_options();
    sb_error err;
    sbt_ok(sb_request(x->ch, &o, trigger, x, &x->waiter, &err), &err,
           "request");
}

static const char *const reply_id = "0189abcd-ef01-7abc-9def-0000000000aa";

static int run_respond(fw_ctx *x, sb_error *err)
{
    return sb_respond(x->ch, x->cid, "pong", 4, reply_id, err);
}

/* C12: stored or not; made again with its reply id, the waiter gets it,
 * once. */
static void check_respond(fw_ctx *x, int rc)
{
    sb_error err;
    if (rc != SB_OK)
        sbt_ok(run_respond(x, &err), &err, "respond again");
    sb_reply *r = NULL;
    sbt_ok(sb_waiter_wait(x->waiter, &r, &err), &err, "wait");
    size_t len = 0;
    const void *d = sb_reply_data(r, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(d, "pong", 4);
    assert_string_equal(sb_reply_id(r), reply_id);
    sb_reply_free(r);
    /* the outcome, not a second reply */
    assert_int_equal(sb_waiter_take(x->waiter, &r, &err), SB_OK);
    assert_null(r);
    round_trip(x);
    close_all(x);
}

/* Request, respond and wait with every thread's allocations counted: the
 * reply's delivery runs on the channel's threads. */
static int run_round_trip(fw_ctx *x, sb_error *err)
{
    int rc = run_request(x, err);
    if (rc != SB_OK)
        return rc;
    rc = run_respond(x, err);
    if (rc != SB_OK)
        return rc;
    sb_reply *r = NULL;
    rc = sb_waiter_wait(x->waiter, &r, err);
    /* Stored, the reply reaches its waiter (a delivery that failed is
     * found by the next sweep); the waiter's copy may fail. */
    if (rc != SB_OK && rc != SB_NOMEM)
        fail_msg("N=%ld: the stored reply never came (%s)", x->n,
                 sb_strerror(rc));
    if (rc == SB_OK) {
        size_t len = 0;
        const void *d = sb_reply_data(r, &len);
        assert_int_equal(len, 4);
        assert_memory_equal(d, "pong", 4);
    }
    sb_reply_free(r);
    return rc;
}

/* Whatever failed, the channel still works; a waiter that did not get its
 * reply is answered by a respond made again. */
static void check_round_trip(fw_ctx *x, int rc)
{
    (void)rc;
    round_trip(x);
    close_all(x);
}

/* C23: a job's reply comes from the worker that handled it. */
static int reply_handler(sb_delivery *d, void *user)
{
    (void)user;
    return sb_delivery_reply(d, "done", 4, NULL);
}

static int run_job(fw_ctx *x, sb_error *err)
{
    sb_wait_options o = wait_options();
    sb_waiter *w = NULL;
    int rc = sb_request_job(x->ch, "jobs", "work", 4, &o, &w, err);
    if (rc != SB_OK) {
        assert_null(w);
        return rc;
    }
    x->waiter = w;
    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = "jobs";
    wo.handler = reply_handler;
    wo.lease_ms = 300;
    wo.redelivery_delay_ms = -1;
    wo.empty_poll_ms = 10;
    wo.max_poll_ms = 20;
    sb_worker *wk = NULL;
    rc = sb_worker_start(x->bus, &wo, &wk, err);
    if (rc != SB_OK)
        return rc;
    sb_reply *r = NULL;
    rc = sb_waiter_wait(w, &r, err);
    /* A job run by a worker is answered (C23): a reply that could not be
     * sent leaves the job to run again. */
    if (rc != SB_OK && rc != SB_NOMEM)
        fail_msg("N=%ld: the job's reply never came (%s)", x->n,
                 sb_strerror(rc));
    if (rc == SB_OK) {
        size_t len = 0;
        const void *d = sb_reply_data(r, &len);
        assert_int_equal(len, 4);
        assert_memory_equal(d, "done", 4);
    }
    sb_reply_free(r);
    sb_error stop_err;
    int stop_rc = sb_worker_stop(wk, &stop_err);
    sb_worker_free(wk);
    if (rc == SB_OK && stop_rc != SB_OK) {
        *err = stop_err;
        rc = stop_rc;
    }
    return rc;
}

static void check_job(fw_ctx *x, int rc)
{
    (void)rc;
    round_trip(x);
    close_all(x);
}

/* ------------------------------------------------------------------ */
/* the error store */

static void open_store(fw_ctx *x)
{
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.max_body_size = 64; /* longer bodies go to the body store (E7) */
    sb_error err;
    sbt_ok(sb_errors_open(x->bus, &o, &x->store, &err), &err, "errors open");
}

/* A dead letter as the transport writes one (T21): message msg-<i> that
 * failed on sales (even i) or billing (odd i), with `body`. */
static void dead_letter(fw_ctx *x, int i, const void *body, size_t len)
{
    char headers[2048];
    const char *queue = i % 2 ? "billing" : "sales";
    /* a failure of its own: a later time than the message's first */
    int hour = 10 + x->dead_letters++;
    snprintf(headers, sizeof headers,
             "{\"sb-message-id\":\"msg-%d\",\"sb-failed-queue\":\"%s\","
             "\"sb-time-of-failure\":\"2024-05-0%dT%d:00:00.000000Z\","
             "\"sb-processing-endpoint\":\"Sales\",\"sb-exception-type\":"
             "\"System.%sException\",\"sb-exception-message\":\"boom %d\","
             "\"sb-exception-stacktrace\":\"System.Exception: boom\\n   at "
             "Shop.Orders.Place(Order o) in /src/Orders.cs:line 4%d\","
             "\"sb-message-type\":\"Shop.PlaceOrder, Shop, Version=1.0\"}",
             i, queue, i + 1, hour, i % 2 ? "Argument" : "InvalidOperation", i,
             i);
    sb_outgoing o = {NULL, body, len, headers, 0};
    sb_error err;
    sbt_ok(sb_publish(x->bus, NULL, "deadletter", &o, NULL, &err), &err,
           "dead letter");
}

static void dead_letter_text(fw_ctx *x, int i)
{
    char body[128];
    snprintf(body, sizeof body, "{\"Order\":%d,\"Note\":\"Orders walk\"}", i);
    dead_letter(x, i, body, strlen(body));
}

/* The store as ingestion finds it in a running system: four failed
 * messages stored, two of them retried and acked (their confirmations,
 * E16, wait in the dead-letter queue), then new dead letters -- one
 * failing again (E10's fold), a binary body and a long one (the body
 * store, E7), and a row that cannot be a failed message (kept in
 * failed_imports, E3). Not ingested yet. */
static void prepare_dead_letters(fw_ctx *x)
{
    open_bus(x);
    open_store(x);
    for (int i = 0; i < 4; i++)
        dead_letter_text(x, i);
    sb_error err;
    sbt_ok(sb_errors_ingest(x->store, NULL, &err), &err, "ingest");
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.failed_queue = "sales";
    int64_t retried = 0;
    sbt_ok(sb_errors_retry(x->store, &sel, &retried, &err), &err, "retry");
    assert_int_equal(retried, 2);
    sbt_ok(sb_claim(x->bus, "sales", 10, 30000, &x->msgs, &x->n_msgs, &err),
           &err, "claim the retries");
    assert_int_equal(x->n_msgs, 2);
    for (size_t i = 0; i < x->n_msgs; i++)
        sbt_ok(sb_ack(x->bus, NULL, x->msgs[i], &err), &err, "ack");
    dead_letter_text(x, 1);
    static const unsigned char binary[] = {0xff, 0xfe, 0x00, 0x01, 0x80};
    dead_letter(x, 4, binary, sizeof binary);
    char long_body[300];
    memset(long_body, 'o', sizeof long_body);
    memcpy(long_body, "Orders ", 7);
    dead_letter(x, 5, long_body, sizeof long_body);
    sb_outgoing unusable = {NULL, "?", 1, "{\"foo\":\"bar\"}", 0};
    sbt_ok(sb_publish(x->bus, NULL, "deadletter", &unusable, NULL, &err), &err,
           "unusable dead letter");
    close_all(x);
}

/* The same, ingested. */
static void prepare_failed(fw_ctx *x)
{
    prepare_dead_letters(x);
    open_bus(x);
    open_store(x);
    sb_error err;
    sbt_ok(sb_errors_ingest(x->store, NULL, &err), &err, "ingest");
    close_all(x);
}

/* Ingested, and every unresolved message archived. */
static void prepare_archived(fw_ctx *x)
{
    prepare_failed(x);
    open_bus(x);
    open_store(x);
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.all = 1;
    int64_t changed = 0;
    sb_error err;
    sbt_ok(sb_errors_archive(x->store, &sel, 1, &changed, &err), &err,
           "archive");
    assert_true(changed > 0);
    close_all(x);
}

/* The schema exists: verified, not created again (cheaper). */
static void setup_store(fw_ctx *x)
{
    sb_options o = bus_options(x);
    o.schema_mode = SB_SCHEMA_VERIFY;
    sb_error err;
    sbt_ok(sb_open(&o, &x->bus, &err), &err, "open");
    open_store(x);
}

/* What the public API reads of the store and its queues, as text: every
 * message (status, attempts, groups, queue), the status counts (kept by
 * triggers) against the rows, the groups, the queues. */
static void fingerprint(fw_ctx *x, char *out, size_t cap)
{
    size_t len = 0;
#define ADD(...)                                                               \
    len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, __VA_ARGS__)
    sb_error err;
    fd_store_fingerprint(x->store, x->n, 0, 0, out, cap, &len);
    size_t n = 0;
    /* the search text is written with the message (E22) */
    sb_failed_summary **found = NULL;
    sbt_ok(sb_errors_search(x->store, "Orders", 100, &found, &n, &err), &err,
           "search");
    ADD(" found %zu", n);
    sb_free(found);
    int64_t imports = -1;
    sbt_ok(sb_errors_failed_import_count(x->store, &imports, &err), &err,
           "failed imports");
    ADD(" imports %lld", (long long)imports);
    ADD(" queues: sales %ld billing %ld deadletter %ld",
        queue_count(x, "sales", NULL), queue_count(x, "billing", NULL),
        queue_count(x, "deadletter", NULL));
#undef ADD
    assert_true(len < cap);
}

/* The state a run without failures ends in (set by the counting run). */
static char clean_state[8192];

/* After a failure the same call is made again, allocator working; then
 * the store must be as after a run that never failed: nothing
 * half-written stayed, nothing was done twice. */
static void check_store(fw_ctx *x, int rc,
                        int (*again)(fw_ctx *x, sb_error *err))
{
    sb_error err;
    if (rc != SB_OK)
        sbt_ok(again(x, &err), &err, "the call made again");
    static char state[8192];
    fingerprint(x, state, sizeof state);
    if (x->n == 0)
        memcpy(clean_state, state, sizeof state);
    if (x->n == 0 && getenv("SB_FAULT_VERBOSE") != NULL)
        printf("  clean state: %s\n", state);
    else if (strcmp(state, clean_state) != 0)
        fail_msg("N=%ld: the store differs from a run without failures:\n"
                 "  %s\nwant\n  %s",
                 x->n, state, clean_state);
    close_all(x);
}

/* A call's result in a run without failures (set by the counting run):
 * a later SB_OK must give the same. */
static int64_t clean_a, clean_b;

static void same_as_clean(const fw_ctx *x, int64_t a, int64_t b)
{
    if (x->n == 0) {
        clean_a = a;
        clean_b = b;
    } else if (a != clean_a || b != clean_b) {
        fail_msg("N=%ld: SB_OK with %lld/%lld, a run without failures "
                 "gives %lld/%lld",
                 x->n, (long long)a, (long long)b, (long long)clean_a,
                 (long long)clean_b);
    }
}

static int run_ingest(fw_ctx *x, sb_error *err)
{
    sb_ingest_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    int rc = sb_errors_ingest(x->store, &st, err);
    if (rc == SB_OK) {
        assert_true(st.rows > 0 && st.confirmations > 0 &&
                    st.failed_imports > 0);
        same_as_clean(x, st.rows * 1000 + st.messages,
                      st.failed_imports * 1000 + st.confirmations);
    }
    return rc;
}

/* Made again after a failure: ingests what the failed pass left (a pass
 * commits batch by batch). */
static int run_ingest_rest(fw_ctx *x, sb_error *err)
{
    return sb_errors_ingest(x->store, NULL, err);
}

static void check_ingest(fw_ctx *x, int rc)
{
    check_store(x, rc, run_ingest_rest);
}

static int retry_all(fw_ctx *x, sb_error *err, int64_t *retried)
{
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.all = 1;
    return sb_errors_retry(x->store, &sel, retried, err);
}

/* Made again after a failure: sends what was not sent. */
static int run_retry_rest(fw_ctx *x, sb_error *err)
{
    int64_t retried = -1;
    return retry_all(x, err, &retried);
}

static int run_retry(fw_ctx *x, sb_error *err)
{
    int64_t retried = -1;
    int rc = retry_all(x, err, &retried);
    if (rc == SB_OK)
        same_as_clean(x, retried, 0);
    return rc;
}

static void check_retry(fw_ctx *x, int rc)
{
    check_store(x, rc, run_retry_rest);
}

static int archive_all(fw_ctx *x, int archive, sb_error *err, int64_t *changed)
{
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.all = 1;
    return sb_errors_archive(x->store, &sel, archive, changed, err);
}

static int run_archive(fw_ctx *x, sb_error *err)
{
    int64_t changed = -1;
    int rc = archive_all(x, 1, err, &changed);
    if (rc == SB_OK)
        same_as_clean(x, changed, 0);
    return rc;
}

static int run_archive_rest(fw_ctx *x, sb_error *err)
{
    int64_t changed = -1;
    return archive_all(x, 1, err, &changed);
}

static void check_archive(fw_ctx *x, int rc)
{
    check_store(x, rc, run_archive_rest);
}

static int run_unarchive(fw_ctx *x, sb_error *err)
{
    int64_t changed = -1;
    int rc = archive_all(x, 0, err, &changed);
    if (rc == SB_OK)
        same_as_clean(x, changed, 0);
    return rc;
}

static int run_unarchive_rest(fw_ctx *x, sb_error *err)
{
    int64_t changed = -1;
    return archive_all(x, 0, err, &changed);
}

static void check_unarchive(fw_ctx *x, int rc)
{
    check_store(x, rc, run_unarchive_rest);
}

static int run_search(fw_ctx *x, sb_error *err)
{
    sb_failed_summary **s = (sb_failed_summary **)x;
    size_t n = 99;
    int rc = sb_errors_search(x->store, "Orders place", 10, &s, &n, err);
    if (rc != SB_OK) {
        assert_null(s);
        assert_int_equal(n, 0);
        return rc;
    }
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(s[i]->message_type, "Shop.PlaceOrder");
    same_as_clean(x, (int64_t)n, 0);
    sb_free(s);
    return SB_OK;
}

static int run_nothing(fw_ctx *x, sb_error *err)
{
    (void)x;
    (void)err;
    return SB_OK;
}

/* Search writes nothing. */
static void check_search(fw_ctx *x, int rc)
{
    (void)rc;
    check_store(x, SB_OK, run_nothing);
}

/* sb_request_job's walk counts the worker's and the channel's threads
 * too (~200-500 allocations, varying): every third past 300. */
static const fw_case channel_cases[] = {
    {"sb_channel_open (new tables)", 0, 1000, 1, prepare_bus, setup_bus,
     run_channel_open, check_channel_open},
    {"sb_channel_open (existing)", 0, 1000, 1, prepare_channel, setup_bus,
     run_channel_open, check_channel_open},
    {"sb_request", 0, 1000, 1, prepare_channel, setup_channel, run_request,
     check_request},
    {"sb_respond", 0, 1000, 1, prepare_channel, setup_waiting, run_respond,
     check_respond},
    {"request/respond/wait (threads)", 1, 1000, 1, prepare_channel,
     setup_channel_polling, run_round_trip, check_round_trip},
    {"sb_request_job (threads)", 1, 300, 3, prepare_channel,
     setup_channel_polling, run_job, check_job},
};

static const fw_case errors_cases[] = {
    {"sb_errors_ingest", 0, 1000, 1, prepare_dead_letters, setup_store,
     run_ingest, check_ingest},
    {"sb_errors_retry", 0, 1000, 1, prepare_failed, setup_store, run_retry,
     check_retry},
    {"sb_errors_archive", 0, 300, 3, prepare_failed, setup_store, run_archive,
     check_archive},
    {"sb_errors_archive (undo)", 0, 300, 3, prepare_archived, setup_store,
     run_unarchive, check_unarchive},
    {"sb_errors_search", 0, 300, 3, prepare_failed, setup_store, run_search,
     check_search},
};

static void test_channel(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof channel_cases / sizeof *channel_cases; i++)
        walk(&channel_cases[i]);
}

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof errors_cases / sizeof *errors_cases; i++)
        walk(&errors_cases[i]);
}

int main(void)
{
    /* Before the library allocates anything (sb_set_allocator). */
    fa_install();
    sbt_init();
    if (strcmp(sbt_backend(), "sqlite") != 0) {
        printf("skipped: the fault walk runs on SQLite only\n");
        return 77;
    }
    make_dir();
    if (getenv("SB_FAULT_BACKTRACE") != NULL)
        fa_on_fail = print_backtrace;
    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the backtraces */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transport),
        cmocka_unit_test(test_channel),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("fault_walk", tests, NULL, NULL);
}
