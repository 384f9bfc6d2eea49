/*
 * test_channel.c - the channel (spec channel.md C1-C18 and "Tests that
 * must exist") on every backend: request and attach, the trigger, the
 * until predicate, error replies, timeout, cancellation, fan-out across
 * processes, no history replay, byte-exact correlation ids, responding
 * with no live waiter, and idempotent responds.
 *
 * Recovery handlers (C19-C22) are a later phase and are not tested here.
 *
 * Row counts are read with a native connection (sqlite3 / libpq) so the
 * test sees the tables exactly as another process would. Every wait is
 * bounded; assertions are about outcomes, never durations.
 */
#include "harness.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A wait that is expected to end with a reply: generous but bounded. */
#define LONG_WAIT_MS 10000
/* A wait that is expected to time out. */
#define SHORT_WAIT_MS 500
/* How long a child process waits before giving up. */
#define CHILD_WAIT_MS 20000
/* How long cleanup may take to become visible after an outcome. */
#define SETTLE_MS 5000

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static sb_channel_options chopts(int64_t confirmation_ms)
{
    sb_channel_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.default_timeout_ms = 20000; /* never a 7-day wait in a test */
    o.confirmation_timeout_ms = confirmation_ms;
    o.full_sweep_interval_ms = 200;
    o.heartbeat_interval_ms = 500;
    return o;
}

static sb_wait_options wopts(int64_t timeout_ms, sb_until_fn until, void *user)
{
    sb_wait_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.timeout_ms = timeout_ms;
    o.until = until;
    o.until_user = user;
    return o;
}

typedef struct env {
    char prefix[64];
    sb_bus *bus;
    sb_channel *ch;
} env;

static void env_open_prefix(env *e, const char *prefix, int64_t confirm_ms)
{
    memset(e, 0, sizeof *e);
    snprintf(e->prefix, sizeof e->prefix, "%s", prefix);
    e->bus = sbt_open(e->prefix, NULL);
    sb_channel_options o = chopts(confirm_ms);
    sb_error err;
    sbt_ok(sb_channel_open(e->bus, &o, &e->ch, &err), &err, "channel open");
    assert_non_null(e->ch);
}

static void env_open(env *e)
{
    env_open_prefix(e, sbt_new_prefix(), 1000);
}

/* Drop every relation whose name starts with `prefix` (PostgreSQL): the
 * channel's tables and sequence, and anything else the library created. */
static void pg_sweep_prefix(const char *prefix)
{
    PGconn *c = PQconnectdb(sbt_pg_url());
    if (PQstatus(c) != CONNECTION_OK) {
        PQfinish(c);
        return;
    }
    const char *q =
        "SELECT format('DROP %s IF EXISTS %I CASCADE', "
        "CASE relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, relname) "
        "FROM pg_class WHERE relkind IN ('r', 'p', 'S') "
        "AND relnamespace = current_schema()::regnamespace "
        "AND left(relname, length($1)) = $1";
    PGresult *r = PQexecParams(c, q, 1, NULL, &prefix, NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        for (int i = 0; i < PQntuples(r); i++) {
            PGresult *d = PQexec(c, PQgetvalue(r, i, 0));
            PQclear(d);
        }
    }
    PQclear(r);
    PQfinish(c);
}

/* Drop the channel's tables and sequence, then the transport's. */
static void drop_channel(sb_bus *bus, const char *prefix)
{
    if (!sbt_is_pg() && !sbt_is_mssql())
        return;
    static const char *tables[] = {"channel_messages", "channel_subscribers",
                                   "recovery_state"};
    char sql[256];
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s%s", prefix,
                 tables[i]);
        sbt_exec(bus, sql);
    }
    snprintf(sql, sizeof sql, "DROP SEQUENCE IF EXISTS %schannel_ack_seq",
             prefix);
    sbt_exec(bus, sql);
    sbt_drop(bus, prefix);
    if (sbt_is_pg())
        pg_sweep_prefix(prefix);
}

static void env_close(env *e)
{
    sb_channel_close(e->ch);
    e->ch = NULL;
    drop_channel(e->bus, e->prefix);
    sb_close(e->bus);
    e->bus = NULL;
}

static long count_subscribers(const char *prefix, const char *cid)
{
    return sbt_native_count(prefix, "channel_subscribers", cid);
}

static long count_recovery(const char *prefix, const char *cid)
{
    return sbt_native_count(prefix, "recovery_state", cid);
}

/* C4 "every outcome cleans up": wait (bounded) until no subscriber and no
 * recovery row remains for `cid`, then assert it. */
static void assert_rows_gone(const char *prefix, const char *cid)
{
    int64_t deadline = now_ms() + SETTLE_MS;
    long sub = 0, rec = 0;
    for (;;) {
        sub = count_subscribers(prefix, cid);
        rec = count_recovery(prefix, cid);
        if ((sub == 0 && rec == 0) || now_ms() >= deadline)
            break;
        sbt_sleep_ms(50);
    }
    if (sub != 0 || rec != 0)
        fail_msg("rows left for %s: %ld subscriber, %ld recovery", cid, sub,
                 rec);
}

static int reply_is(const sb_reply *r, const char *data)
{
    if (r == NULL)
        return 0;
    size_t len = 0;
    const void *d = sb_reply_data(r, &len);
    return len == strlen(data) && (len == 0 || memcmp(d, data, len) == 0);
}

/* A reply that is not an error, carries `data` and belongs to `cid`. */
static void assert_reply(const sb_reply *r, const char *cid, const char *data)
{
    assert_non_null(r);
    size_t len = 0;
    const void *d = sb_reply_data(r, &len);
    if (!reply_is(r, data))
        fail_msg("reply data: expected \"%s\", got %zu bytes \"%.*s\"", data,
                 len, (int)(len > 64 ? 64 : len), d ? (const char *)d : "");
    assert_string_equal(sb_reply_correlation_id(r), cid);
    assert_int_equal(sb_reply_is_error(r), 0);
    assert_non_null(sb_reply_id(r));
    assert_int_equal(strlen(sb_reply_id(r)), 36);
}

/* Attach with a timeout; asserts success. */
static sb_waiter *attach(sb_channel *ch, const char *cid, int64_t timeout_ms,
                         sb_until_fn until, void *user)
{
    sb_wait_options o = wopts(timeout_ms, until, user);
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_attach(ch, cid, &o, &w, &err), &err, "attach");
    assert_non_null(w);
    assert_string_equal(sb_waiter_correlation_id(w), cid);
    return w;
}

static void respond(sb_channel *ch, const char *cid, const char *data,
                    const char *reply_id)
{
    sb_error err;
    sbt_ok(sb_respond(ch, cid, data, strlen(data), reply_id, &err), &err,
           "respond");
}

/* Wait and expect the terminal reply `data`. */
static void expect_wait(sb_waiter *w, const char *cid, const char *data)
{
    sb_reply *r = NULL;
    sb_error err;
    int rc = sb_waiter_wait(w, &r, &err);
    if (rc != SB_OK)
        fail_msg("wait on %s: expected SB_OK with \"%s\", got %s (%s)", cid,
                 data, sb_strerror(rc), err.message);
    assert_reply(r, cid, data);
    sb_reply_free(r);
}

/* Wait and expect a timeout (no reply). */
static void expect_timeout(sb_waiter *w)
{
    sb_reply *r = NULL;
    sb_error err;
    int rc = sb_waiter_wait(w, &r, &err);
    if (rc != SB_TIMEOUT) {
        size_t len = 0;
        const void *d = r ? sb_reply_data(r, &len) : NULL;
        fail_msg("wait on %s: expected SB_TIMEOUT, got %s with reply "
                 "\"%.*s\"",
                 sb_waiter_correlation_id(w), sb_strerror(rc),
                 (int)(len > 64 ? 64 : len), d ? (const char *)d : "");
    }
    assert_null(r);
}

/*
 * C6: read a waiter through its eventfd and sb_waiter_take until a reply
 * with data `terminal` (or a non-reply outcome) arrives, or `ms` passes.
 * Every reply taken is stored in got[] (transferred to the caller).
 * Returns the code of the last take that ended the loop (SB_OK for the
 * terminal reply), or SB_TIMEOUT if the deadline passed first.
 */
static int drain(sb_waiter *w, const char *terminal, sb_reply **got, int max,
                 int *n, int64_t ms)
{
    int fd = sb_waiter_fd(w);
    assert_true(fd >= 0);
    int64_t deadline = now_ms() + ms;
    *n = 0;
    while (now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        int pr = poll(&p, 1, (int)(left > 200 ? 200 : left));
        if (pr < 0 && errno != EINTR)
            fail_msg("poll: %s", strerror(errno));
        for (;;) {
            sb_reply *r = NULL;
            sb_error err;
            int rc = sb_waiter_take(w, &r, &err);
            if (rc == SB_EMPTY) {
                assert_null(r);
                break;
            }
            if (r != NULL) {
                if (*n < max)
                    got[(*n)++] = r;
                else
                    sb_reply_free(r);
            }
            if (rc != SB_OK)
                return rc;
            if (r == NULL)
                fail_msg("take returned SB_OK without a reply");
            if (reply_is(r, terminal))
                return SB_OK;
        }
    }
    return SB_TIMEOUT;
}

static void free_replies(sb_reply **r, int n)
{
    for (int i = 0; i < n; i++)
        sb_reply_free(r[i]);
}

/* ------------------------------------------------------------------ */
/* Child processes (C8, C12 step 4, C13, C14)                          */
/* ------------------------------------------------------------------ */

/* Best-effort write of a whole buffer from a child. */
static void write_all(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t k = write(fd, s, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        s += k;
        len -= (size_t)k;
    }
}

/*
 * Child body: open its own bus and channel, attach to `cid`, write 'R' to
 * `ready_fd` once registered (or 'E' on failure), wait, write "<rc> <data>"
 * to `result_fd`, exit 0. Never returns; never uses cmocka (a failing
 * assertion would run the rest of the suite in the child).
 */
static void child_waiter(const char *prefix, const char *cid, int ready_fd,
                         int result_fd)
{
    char line[640];
    sb_options bo;
    memset(&bo, 0, sizeof bo);
    bo.size = sizeof bo;
    bo.url = sbt_url();
    bo.table_prefix = prefix;
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    sb_waiter *w = NULL;
    sb_error err;
    memset(&err, 0, sizeof err);
    if (sb_open(&bo, &bus, &err) != SB_OK)
        goto fail;
    sb_channel_options co = chopts(1000);
    if (sb_channel_open(bus, &co, &ch, &err) != SB_OK)
        goto fail;
    sb_wait_options wo = wopts(CHILD_WAIT_MS, NULL, NULL);
    if (sb_attach(ch, cid, &wo, &w, &err) != SB_OK)
        goto fail;
    write_all(ready_fd, "R", 1);
    sb_reply *r = NULL;
    int rc = sb_waiter_wait(w, &r, &err);
    size_t len = 0;
    const void *d = r ? sb_reply_data(r, &len) : NULL;
    snprintf(line, sizeof line, "%d %.*s", rc, (int)(len > 128 ? 128 : len),
             d ? (const char *)d : "");
    write_all(result_fd, line, strlen(line));
    sb_reply_free(r);
    sb_waiter_free(w);
    sb_channel_close(ch);
    sb_close(bus);
    _exit(0);
fail:
    write_all(ready_fd, "E", 1);
    snprintf(line, sizeof line, "-1 child setup failed: %s", err.message);
    write_all(result_fd, line, strlen(line));
    sb_waiter_free(w);
    sb_channel_close(ch);
    sb_close(bus);
    _exit(1);
}

typedef struct child {
    pid_t pid;
    int ready_fd;  /* parent's read end */
    int result_fd; /* parent's read end */
} child;

/* Fork a child waiter. Call while this process has no open bus or channel
 * (no library threads to be caught mid-lock by fork). */
static child spawn_waiter(const char *prefix, const char *cid)
{
    int ready[2], result[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(result), 0);
    fflush(NULL);
    child c;
    c.pid = fork();
    assert_true(c.pid >= 0);
    if (c.pid == 0) {
        close(ready[0]);
        close(result[0]);
        child_waiter(prefix, cid, ready[1], result[1]);
    }
    close(ready[1]);
    close(result[1]);
    c.ready_fd = ready[0];
    c.result_fd = result[0];
    return c;
}

/* Read until EOF or `ms`; returns bytes read (NUL-terminated). */
static size_t read_bounded(int fd, char *buf, size_t cap, int64_t ms,
                           int stop_after_one)
{
    size_t n = 0;
    int64_t deadline = now_ms() + ms;
    while (n + 1 < cap && now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        int pr = poll(&p, 1, (int)(left > 200 ? 200 : left));
        if (pr <= 0)
            continue;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
        if (stop_after_one)
            break;
    }
    buf[n] = '\0';
    return n;
}

/* Block (bounded) until the child has registered its waiter. */
static void child_ready(child *c)
{
    char b[4];
    size_t n = read_bounded(c->ready_fd, b, sizeof b, CHILD_WAIT_MS, 1);
    if (n != 1 || b[0] != 'R') {
        char res[640];
        read_bounded(c->result_fd, res, sizeof res, 1000, 0);
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        fail_msg("child did not register: %s", n ? res : "no signal");
    }
}

/* Collect the child's result and reap it; expects SB_OK with `data`. */
static void child_expect(child *c, const char *data)
{
    char res[640];
    read_bounded(c->result_fd, res, sizeof res, CHILD_WAIT_MS + 5000, 0);
    int status = 0;
    if (waitpid(c->pid, &status, WNOHANG) == 0) {
        sbt_sleep_ms(100);
        if (waitpid(c->pid, &status, WNOHANG) == 0) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
        }
    }
    close(c->ready_fd);
    close(c->result_fd);
    char expected[256];
    snprintf(expected, sizeof expected, "%d %s", SB_OK, data);
    if (strcmp(res, expected) != 0)
        fail_msg("child result: expected \"%s\", got \"%s\"", expected, res);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ------------------------------------------------------------------ */
/* 1. Request round trip (C1, C12)                                     */
/* ------------------------------------------------------------------ */

typedef struct trig_ctx {
    sb_channel *ch;
    char cid[512];
    int respond_rc;
    int return_rc;
    long sub_rows, rec_rows; /* seen from inside the trigger */
    const char *prefix;
    pthread_t thread;
    int started;
    int calls;
} trig_ctx;

/* The fastest responder: the reply is published before the trigger even
 * returns. */
static int trigger_respond_inline(const char *cid, void *user)
{
    trig_ctx *t = user;
    t->calls++;
    snprintf(t->cid, sizeof t->cid, "%s", cid);
    sb_error err;
    t->respond_rc = sb_respond(t->ch, cid, "pong", 4, NULL, &err);
    return SB_OK;
}

static void *respond_thread(void *arg)
{
    trig_ctx *t = arg;
    sb_error err;
    t->respond_rc = sb_respond(t->ch, t->cid, "pong", 4, NULL, &err);
    return NULL;
}

static int trigger_respond_thread(const char *cid, void *user)
{
    trig_ctx *t = user;
    t->calls++;
    snprintf(t->cid, sizeof t->cid, "%s", cid);
    t->respond_rc = -1;
    if (pthread_create(&t->thread, NULL, respond_thread, t) != 0)
        return SB_ERROR;
    t->started = 1;
    return SB_OK;
}

static void check_round_trip(sb_waiter *w, trig_ctx *t)
{
    assert_non_null(w);
    assert_int_equal(t->calls, 1);
    /* The generated id is the one the trigger saw, and valid under C7. */
    assert_string_equal(sb_waiter_correlation_id(w), t->cid);
    sb_error err;
    assert_int_equal(sb_validate_correlation_id(t->cid, &err), SB_OK);
    sb_reply *r = NULL;
    int rc = sb_waiter_wait(w, &r, &err);
    if (rc != SB_OK)
        fail_msg("wait: expected SB_OK, got %s (%s)", sb_strerror(rc),
                 err.message);
    assert_reply(r, t->cid, "pong");
    assert_true(sb_reply_created_at_us(r) > 0);
    sb_reply_free(r);
}

/* C1, C12 step 3, "reply before the trigger returns is never lost": the
 * trigger responds inline; the waiter still gets "pong". */
static void test_request_reply_inside_trigger(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    trig_ctx t;
    memset(&t, 0, sizeof t);
    t.ch = e.ch;
    sb_wait_options o = wopts(LONG_WAIT_MS, NULL, NULL);
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_request(e.ch, &o, trigger_respond_inline, &t, &w, &err), &err,
           "request");
    assert_int_equal(t.respond_rc, SB_OK);
    check_round_trip(w, &t);
    sb_waiter_free(w);
    assert_rows_gone(e.prefix, t.cid);
    env_close(&e);
}

/* C1, C12: the trigger hands the id to another thread that responds
 * (racing with sb_request's return). */
static void test_request_reply_from_thread(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    trig_ctx t;
    memset(&t, 0, sizeof t);
    t.ch = e.ch;
    sb_wait_options o = wopts(LONG_WAIT_MS, NULL, NULL);
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_request(e.ch, &o, trigger_respond_thread, &t, &w, &err), &err,
           "request");
    assert_true(t.started);
    check_round_trip(w, &t);
    pthread_join(t.thread, NULL);
    assert_int_equal(t.respond_rc, SB_OK);
    sb_waiter_free(w);
    assert_rows_gone(e.prefix, t.cid);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 2. Trigger failure (C1, C4)                                         */
/* ------------------------------------------------------------------ */

static int trigger_fail(const char *cid, void *user)
{
    trig_ctx *t = user;
    t->calls++;
    snprintf(t->cid, sizeof t->cid, "%s", cid);
    /* C1: the waiter and its recovery registration exist before the
     * trigger runs. */
    t->sub_rows = count_subscribers(t->prefix, cid);
    t->rec_rows = count_recovery(t->prefix, cid);
    return t->return_rc;
}

/* C1, C4, C20: registration is persisted before the trigger runs; a
 * failing trigger's code is returned, *out is NULL, and no subscriber or
 * recovery row stays behind. A request without a trigger is refused. */
static void test_trigger_failure_leaves_nothing(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    const int codes[] = {SB_ERROR, SB_UNAVAILABLE};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        trig_ctx t;
        memset(&t, 0, sizeof t);
        t.ch = e.ch;
        t.prefix = e.prefix;
        t.return_rc = codes[i];
        t.sub_rows = t.rec_rows = -1;
        sb_wait_options o = wopts(LONG_WAIT_MS, NULL, NULL);
        o.recovery_handler = "test-handler";
        o.recovery_context = "ctx";
        o.recovery_context_len = 3;
        sb_waiter *w = (sb_waiter *)&t; /* must be overwritten with NULL */
        sb_error err;
        int rc = sb_request(e.ch, &o, trigger_fail, &t, &w, &err);
        assert_int_equal(t.calls, 1);
        assert_int_equal(rc, codes[i]);
        assert_null(w);
        assert_int_equal(t.sub_rows, 1);
        assert_int_equal(t.rec_rows, 1);
        /* Removed before sb_request returned: nothing stays armed. */
        assert_int_equal(count_subscribers(e.prefix, t.cid), 0);
        assert_int_equal(count_recovery(e.prefix, t.cid), 0);
        /* A reply now finds no waiter (and is not an error). */
        respond(e.ch, t.cid, "late", NULL);
    }
    /* C1: a trigger is mandatory. */
    sb_wait_options o = wopts(LONG_WAIT_MS, NULL, NULL);
    sb_waiter *w = NULL;
    sb_error err;
    int rc = sb_request(e.ch, &o, NULL, NULL, &w, &err);
    assert_true(rc == SB_INVALID || rc == SB_MISUSE);
    assert_null(w);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 3. Timeout (C4)                                                     */
/* ------------------------------------------------------------------ */

static int trigger_ok(const char *cid, void *user)
{
    trig_ctx *t = user;
    t->calls++;
    snprintf(t->cid, sizeof t->cid, "%s", cid);
    return SB_OK;
}

/* C4: a wait with no reply ends in SB_TIMEOUT, exactly one outcome wins
 * (a later cancel reports the timeout), and the subscriber and recovery
 * rows are removed - for attach and for request. */
static void test_timeout_cleans_up(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    /* attach */
    sb_waiter *w = attach(e.ch, "timeout-attach", 300, NULL, NULL);
    assert_int_equal(count_subscribers(e.prefix, "timeout-attach"), 1);
    expect_timeout(w);
    assert_int_equal(sb_waiter_cancel(w), SB_TIMEOUT);
    sb_waiter_free(w);
    assert_rows_gone(e.prefix, "timeout-attach");
    /* request with a recovery registration */
    trig_ctx t;
    memset(&t, 0, sizeof t);
    sb_wait_options o = wopts(300, NULL, NULL);
    o.recovery_handler = "test-handler";
    sb_error err;
    w = NULL;
    sbt_ok(sb_request(e.ch, &o, trigger_ok, &t, &w, &err), &err, "request");
    assert_int_equal(count_subscribers(e.prefix, t.cid), 1);
    assert_int_equal(count_recovery(e.prefix, t.cid), 1);
    expect_timeout(w);
    sb_waiter_free(w);
    assert_rows_gone(e.prefix, t.cid);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 4. Cancellation (C4, C5)                                            */
/* ------------------------------------------------------------------ */

typedef struct wait_thread_ctx {
    sb_waiter *w;
    atomic_int entered;
    int rc;
    sb_reply *r;
} wait_thread_ctx;

static void *wait_thread(void *arg)
{
    wait_thread_ctx *c = arg;
    atomic_store(&c->entered, 1);
    sb_error err;
    c->rc = sb_waiter_wait(c->w, &c->r, &err);
    return NULL;
}

/* C4, C5: a thread blocked in sb_waiter_wait is released with SB_CLOSED
 * when another thread cancels; the cancel wins (SB_OK) and the rows go. */
static void test_cancel_releases_waiter(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    trig_ctx t;
    memset(&t, 0, sizeof t);
    sb_wait_options o = wopts(LONG_WAIT_MS, NULL, NULL);
    o.recovery_handler = "test-handler";
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_request(e.ch, &o, trigger_ok, &t, &w, &err), &err, "request");
    wait_thread_ctx c;
    memset(&c, 0, sizeof c);
    c.w = w;
    c.rc = -1;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, wait_thread, &c), 0);
    while (!atomic_load(&c.entered))
        sbt_sleep_ms(5);
    sbt_sleep_ms(100); /* let it block (the outcome does not depend on it) */
    assert_int_equal(sb_waiter_cancel(w), SB_CLOSED);
    pthread_join(th, NULL);
    assert_int_equal(c.rc, SB_CLOSED);
    assert_null(c.r);
    sb_waiter_free(w);
    assert_rows_gone(e.prefix, t.cid);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 5. Error reply (C3)                                                 */
/* ------------------------------------------------------------------ */

typedef struct until_log {
    pthread_mutex_t mu;
    char seen[16][32];
    int n;
    atomic_int running;
    atomic_int overlap;
    const char *terminal; /* data that completes; NULL = never */
    const char *count_id; /* count replies with this reply id */
    int counted;
} until_log;

static void until_log_init(until_log *u, const char *terminal)
{
    memset(u, 0, sizeof *u);
    pthread_mutex_init(&u->mu, NULL);
    u->terminal = terminal;
}

static int until_logged(const sb_reply *r, void *user)
{
    until_log *u = user;
    if (atomic_fetch_add(&u->running, 1) > 0)
        atomic_store(&u->overlap, 1);
    size_t len = 0;
    const void *d = sb_reply_data(r, &len);
    pthread_mutex_lock(&u->mu);
    if (u->n < 16) {
        snprintf(u->seen[u->n], sizeof u->seen[u->n], "%.*s",
                 (int)(len > 31 ? 31 : len), d ? (const char *)d : "");
        u->n++;
    }
    if (u->count_id != NULL && sb_reply_id(r) != NULL &&
        strcmp(sb_reply_id(r), u->count_id) == 0)
        u->counted++;
    pthread_mutex_unlock(&u->mu);
    sbt_sleep_ms(2); /* widen the window for a concurrent run */
    atomic_fetch_sub(&u->running, 1);
    return u->terminal != NULL && reply_is(r, u->terminal);
}

/* C3: an error reply ends the wait with SB_REPLY_ERROR and its fields,
 * even under a predicate that treats every reply as progress; a detail
 * over 16 KiB is either refused (SB_INVALID naming "detail") or capped at
 * 16 KiB. */
static void test_error_reply(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    until_log u;
    until_log_init(&u, NULL);
    sb_waiter *w = attach(e.ch, "err-1", LONG_WAIT_MS, until_logged, &u);
    sb_error err;
    sbt_ok(sb_respond_error(e.ch, "err-1", "Boom", "bad", "d", NULL, &err),
           &err, "respond_error");
    sb_reply *r = NULL;
    int rc = sb_waiter_wait(w, &r, &err);
    if (rc != SB_REPLY_ERROR)
        fail_msg("wait: expected SB_REPLY_ERROR, got %s (%s)", sb_strerror(rc),
                 err.message);
    assert_non_null(r);
    assert_int_equal(sb_reply_is_error(r), 1);
    assert_string_equal(sb_reply_correlation_id(r), "err-1");
    assert_string_equal(sb_reply_error_type(r), "Boom");
    assert_string_equal(sb_reply_error_message(r), "bad");
    assert_string_equal(sb_reply_error_detail(r), "d");
    sb_reply_free(r);
    sb_waiter_free(w);
    pthread_mutex_destroy(&u.mu);

    /* Detail over the 16 KiB cap. */
    enum { BIG = 20000, CAP = 16384 };
    char *big = malloc(BIG + 1);
    assert_non_null(big);
    for (int i = 0; i < BIG; i++)
        big[i] = (char)('a' + i % 26);
    big[BIG] = '\0';
    w = attach(e.ch, "err-2", LONG_WAIT_MS, NULL, NULL);
    memset(&err, 0, sizeof err);
    rc =
        sb_respond_error(e.ch, "err-2", "Big", "large detail", big, NULL, &err);
    if (rc == SB_INVALID) {
        assert_string_equal(err.field, "detail");
        sbt_ok(
            sb_respond_error(e.ch, "err-2", "Big", "small", NULL, NULL, &err),
            &err, "respond_error without detail");
        r = NULL;
        assert_int_equal(sb_waiter_wait(w, &r, &err), SB_REPLY_ERROR);
        assert_non_null(r);
        assert_string_equal(sb_reply_error_message(r), "small");
        const char *det = sb_reply_error_detail(r);
        assert_true(det == NULL || det[0] == '\0');
    } else {
        sbt_ok(rc, &err, "respond_error with a large detail");
        r = NULL;
        rc = sb_waiter_wait(w, &r, &err);
        if (rc != SB_REPLY_ERROR)
            fail_msg("wait: expected SB_REPLY_ERROR, got %s (%s)",
                     sb_strerror(rc), err.message);
        assert_non_null(r);
        assert_string_equal(sb_reply_error_type(r), "Big");
        const char *det = sb_reply_error_detail(r);
        assert_non_null(det);
        size_t len = strlen(det);
        if (len == 0 || len > CAP)
            fail_msg("detail of %zu bytes stored; expected 1..%d", len, CAP);
        assert_memory_equal(det, big, len);
    }
    sb_reply_free(r);
    sb_waiter_free(w);
    free(big);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 6. until predicate and the pollable waiter (C2, C6)                 */
/* ------------------------------------------------------------------ */

static void wait_readable(sb_waiter *w, int64_t ms)
{
    struct pollfd p = {.fd = sb_waiter_fd(w), .events = POLLIN};
    assert_true(p.fd >= 0);
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        int pr = poll(&p, 1, 200);
        if (pr > 0 && (p.revents & POLLIN))
            return;
    }
    fail_msg("the waiter's fd never became readable");
}

/* C2: the predicate sees every reply in order, one at a time; progress
 * does not end the wait, the terminal reply does. C6: a second waiter on
 * the same id, read with poll() + sb_waiter_take, gets p1, p2 in order,
 * then the terminal reply. */
static void test_until_progress_and_take(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    until_log ua, ub;
    until_log_init(&ua, "done");
    until_log_init(&ub, "done");
    sb_waiter *a = attach(e.ch, "until-1", LONG_WAIT_MS, until_logged, &ua);
    sb_waiter *b = attach(e.ch, "until-1", LONG_WAIT_MS, until_logged, &ub);
    sb_error err;
    const char *seq[] = {"p1", "p2", "done"};
    sb_reply *got[8];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        respond(e.ch, "until-1", seq[i], NULL);
        /* B: the fd wakes and take yields the reply just published. */
        wait_readable(b, LONG_WAIT_MS);
        int64_t deadline = now_ms() + LONG_WAIT_MS;
        int rc = SB_EMPTY;
        sb_reply *r = NULL;
        while (rc == SB_EMPTY && now_ms() < deadline) {
            rc = sb_waiter_take(b, &r, &err);
            if (rc == SB_EMPTY) {
                wait_readable(b, 200 + deadline - now_ms());
            }
        }
        if (rc != SB_OK)
            fail_msg("take after %s: expected SB_OK, got %s", seq[i],
                     sb_strerror(rc));
        got[n++] = r;
        assert_reply(r, "until-1", seq[i]);
    }
    /* Nothing after the terminal reply was taken. */
    free_replies(got, n);
    /* A: the blocking wait skips progress and returns the terminal. */
    expect_wait(a, "until-1", "done");
    assert_int_equal(ua.n, 3);
    assert_string_equal(ua.seen[0], "p1");
    assert_string_equal(ua.seen[1], "p2");
    assert_string_equal(ua.seen[2], "done");
    assert_int_equal(atomic_load(&ua.overlap), 0);
    assert_int_equal(ub.n, 3);
    assert_int_equal(atomic_load(&ub.overlap), 0);
    sb_waiter_free(a);
    sb_waiter_free(b);

    /* The same with all replies published before reading: order kept. */
    until_log uc;
    until_log_init(&uc, "done");
    sb_waiter *c = attach(e.ch, "until-2", LONG_WAIT_MS, until_logged, &uc);
    for (int i = 0; i < 3; i++)
        respond(e.ch, "until-2", seq[i], NULL);
    int rc = drain(c, "done", got, 8, &n, LONG_WAIT_MS);
    if (rc != SB_OK)
        fail_msg("drain: expected the terminal reply, got %s after %d",
                 sb_strerror(rc), n);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++)
        assert_reply(got[i], "until-2", seq[i]);
    free_replies(got, n);
    assert_int_equal(atomic_load(&uc.overlap), 0);
    sb_waiter_free(c);
    pthread_mutex_destroy(&ua.mu);
    pthread_mutex_destroy(&ub.mu);
    pthread_mutex_destroy(&uc.mu);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 7. Cross-process delivery (C12 step 4, C13, C14)                    */
/* ------------------------------------------------------------------ */

/* C12 step 4, C13, C14: a waiter in another process gets the reply; the
 * publisher's sb_respond returns SB_OK once it is confirmed. */
static void test_cross_process_delivery(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    char cid[64];
    snprintf(cid, sizeof cid, "xproc-%ld", (long)getpid());
    child c = spawn_waiter(prefix, cid); /* before any library thread */
    env e;
    env_open_prefix(&e, prefix, 3000);
    child_ready(&c);
    assert_int_equal(count_subscribers(prefix, cid), 1);
    respond(e.ch, cid, "hello", NULL);
    child_expect(&c, "hello");
    assert_rows_gone(prefix, cid);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 8. Fan-out (C8)                                                     */
/* ------------------------------------------------------------------ */

/* C8, "fan-out to three waiters in two processes": two waiters here, one
 * in a child process; one sb_respond; all three get the reply. */
static void test_fan_out_two_processes(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    char cid[64];
    snprintf(cid, sizeof cid, "fan-%ld", (long)getpid());
    child c = spawn_waiter(prefix, cid);
    env e;
    env_open_prefix(&e, prefix, 3000);
    sb_waiter *w1 = attach(e.ch, cid, LONG_WAIT_MS, NULL, NULL);
    sb_waiter *w2 = attach(e.ch, cid, LONG_WAIT_MS, NULL, NULL);
    child_ready(&c);
    assert_int_equal(count_subscribers(prefix, cid), 3);
    respond(e.ch, cid, "all", NULL);
    expect_wait(w1, cid, "all");
    expect_wait(w2, cid, "all");
    child_expect(&c, "all");
    sb_waiter_free(w1);
    sb_waiter_free(w2);
    assert_rows_gone(prefix, cid);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 9. No history replay (C9, C13 watermark)                            */
/* ------------------------------------------------------------------ */

/* C9: after a reply was acknowledged, a new waiter on the reused id never
 * receives it (it times out); a later reply reaches a later waiter, and
 * that waiter's first reply is the new one. */
static void test_reused_id_no_replay(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    sb_waiter *a = attach(e.ch, "reuse-1", LONG_WAIT_MS, NULL, NULL);
    respond(e.ch, "reuse-1", "first", NULL);
    expect_wait(a, "reuse-1", "first");
    sb_waiter_free(a);
    /* Sweeps (every 200 ms here) and lookback run during this wait. */
    sb_waiter *b = attach(e.ch, "reuse-1", SHORT_WAIT_MS, NULL, NULL);
    expect_timeout(b);
    sb_waiter_free(b);
    sb_waiter *c = attach(e.ch, "reuse-1", LONG_WAIT_MS, NULL, NULL);
    respond(e.ch, "reuse-1", "second", NULL);
    expect_wait(c, "reuse-1", "second");
    sb_waiter_free(c);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 10. Correlation ids (C7)                                            */
/* ------------------------------------------------------------------ */

/* C7: ids are compared byte-exactly: "abc" and "ABC" never cross-deliver,
 * in either direction. */
static void test_case_variant_ids(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    sb_waiter *l1 = attach(e.ch, "abc", SHORT_WAIT_MS, NULL, NULL);
    respond(e.ch, "ABC", "upper", NULL);
    expect_timeout(l1);
    sb_waiter_free(l1);

    sb_waiter *lo = attach(e.ch, "abc", LONG_WAIT_MS, NULL, NULL);
    sb_waiter *up = attach(e.ch, "ABC", LONG_WAIT_MS, NULL, NULL);
    respond(e.ch, "abc", "lower", NULL);
    expect_wait(lo, "abc", "lower");
    respond(e.ch, "ABC", "upper2", NULL);
    expect_wait(up, "ABC", "upper2");
    sb_waiter_free(lo);
    sb_waiter_free(up);
    env_close(&e);
}

static void expect_invalid_id(sb_channel *ch, const char *id, const char *what)
{
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb_validate_correlation_id(id, &err);
    if (rc != SB_INVALID)
        fail_msg("validate(%s): expected SB_INVALID, got %s", what,
                 sb_strerror(rc));
    assert_string_equal(err.field, "correlation_id");

    memset(&err, 0, sizeof err);
    sb_wait_options o = wopts(SHORT_WAIT_MS, NULL, NULL);
    sb_waiter *w = NULL;
    rc = sb_attach(ch, id, &o, &w, &err);
    if (rc != SB_INVALID) {
        sb_waiter_free(w);
        fail_msg("attach(%s): expected SB_INVALID, got %s", what,
                 sb_strerror(rc));
    }
    assert_null(w);
    assert_string_equal(err.field, "correlation_id");

    memset(&err, 0, sizeof err);
    rc = sb_respond(ch, id, "x", 1, NULL, &err);
    if (rc != SB_INVALID)
        fail_msg("respond(%s): expected SB_INVALID, got %s", what,
                 sb_strerror(rc));
    assert_string_equal(err.field, "correlation_id");

    memset(&err, 0, sizeof err);
    rc = sb_respond_error(ch, id, "T", "m", NULL, NULL, &err);
    if (rc != SB_INVALID)
        fail_msg("respond_error(%s): expected SB_INVALID, got %s", what,
                 sb_strerror(rc));
    assert_string_equal(err.field, "correlation_id");
}

/* C7: 1-400 bytes of valid UTF-8, no control characters, no leading or
 * trailing white space; a 400-byte id works end to end. */
static void test_invalid_ids_rejected(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    char long401[402], long400[401], utf400[401];
    memset(long401, 'x', 401);
    long401[401] = '\0';
    memset(long400, 'y', 400);
    long400[400] = '\0';
    for (int i = 0; i < 400; i += 2) { /* 200 x U+00E9, 400 bytes */
        utf400[i] = (char)0xc3;
        utf400[i + 1] = (char)0xa9;
    }
    utf400[400] = '\0';
    struct {
        const char *id, *what;
    } bad[] = {
        {"", "empty"},
        {long401, "401 bytes"},
        {"a\x01z", "control char 0x01"},
        {"a\nz", "newline"},
        {"a\x7fz", "DEL"},
        {" abc", "leading space"},
        {"abc ", "trailing space"},
        {"\tabc", "leading tab"},
        {"ab\xff", "invalid byte 0xff"},
        {"ab\xc3", "truncated sequence"},
        {"\xc0\xaf", "overlong encoding"},
        {"\xed\xa0\x80", "UTF-16 surrogate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_invalid_id(e.ch, bad[i].id, bad[i].what);

    sb_error err;
    const char *good[] = {long400, utf400, "a", "a b", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int rc = sb_validate_correlation_id(good[i], &err);
        if (rc != SB_OK)
            fail_msg("validate(valid id #%zu): %s (%s)", i, sb_strerror(rc),
                     err.message);
    }
    /* End to end with the longest ids. */
    sb_waiter *w = attach(e.ch, long400, LONG_WAIT_MS, NULL, NULL);
    respond(e.ch, long400, "long", NULL);
    expect_wait(w, long400, "long");
    sb_waiter_free(w);
    w = attach(e.ch, utf400, LONG_WAIT_MS, NULL, NULL);
    respond(e.ch, utf400, "utf", NULL);
    expect_wait(w, utf400, "utf");
    sb_waiter_free(w);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 11. No live waiter (C12 step 1)                                     */
/* ------------------------------------------------------------------ */

/* C12 step 1, C9: a reply to an id nobody waits on is accepted (handed to
 * recovery), and a waiter attached afterwards does not receive it. */
static void test_respond_without_waiter(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    respond(e.ch, "nobody-1", "orphan", NULL);
    sb_error err;
    sbt_ok(sb_respond_error(e.ch, "nobody-1", "T", "m", NULL, NULL, &err), &err,
           "respond_error");
    sb_waiter *w = attach(e.ch, "nobody-1", SHORT_WAIT_MS, NULL, NULL);
    expect_timeout(w);
    sb_waiter_free(w);
    env_close(&e);
}

/* ------------------------------------------------------------------ */
/* 12. Idempotent respond (C12 step 2)                                 */
/* ------------------------------------------------------------------ */

/* C12 step 2: the same reply id published twice is one reply: the waiter
 * (whose predicate treats it as progress) sees it exactly once, both
 * responds succeed, and a following terminal reply ends the wait. */
static void test_idempotent_respond(void **state)
{
    (void)state;
    env e;
    env_open(&e);
    const char *rid = "6f1c1d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f";
    until_log u;
    until_log_init(&u, "end");
    u.count_id = rid;
    sb_waiter *w = attach(e.ch, "idem-1", LONG_WAIT_MS, until_logged, &u);
    respond(e.ch, "idem-1", "once", rid);
    respond(e.ch, "idem-1", "once", rid);
    respond(e.ch, "idem-1", "end", NULL);
    sb_reply *got[8];
    int n = 0;
    int rc = drain(w, "end", got, 8, &n, LONG_WAIT_MS);
    if (rc != SB_OK)
        fail_msg("drain: expected the terminal reply, got %s after %d",
                 sb_strerror(rc), n);
    int copies = 0;
    for (int i = 0; i < n; i++)
        copies += strcmp(sb_reply_id(got[i]), rid) == 0;
    assert_int_equal(copies, 1);
    assert_int_equal(n, 2);
    assert_reply(got[0], "idem-1", "once");
    assert_reply(got[1], "idem-1", "end");
    free_replies(got, n);
    pthread_mutex_lock(&u.mu);
    assert_int_equal(u.counted, 1);
    pthread_mutex_unlock(&u.mu);
    /* A retry after the outcome is still a no-op that succeeds. */
    respond(e.ch, "idem-1", "once", rid);
    sb_waiter_free(w);
    pthread_mutex_destroy(&u.mu);
    env_close(&e);
}

/* T7 and C10 on SQL Server (the seed's catalog checks): a table the channel
 * did not create, with a correlation id on a case-insensitive collation
 * or a time of reduced scale, and an ack sequence with a low maximum, are
 * refused at open, naming the column and the fix. */
static void expect_refused(sb_bus *bus, const char *field, const char *text)
{
    sb_channel *ch = NULL;
    sb_error err;
    assert_int_equal(sb_channel_open(bus, NULL, &ch, &err), SB_SCHEMA_MISMATCH);
    assert_null(ch);
    assert_string_equal(err.field, field);
    if (strstr(err.message, text) == NULL ||
        strstr(err.message, "fix:") == NULL)
        fail_msg("expected \"%s\" and a fix: %s", text, err.message);
}

static void test_mssql_catalog_checks(void **state)
{
    (void)state;
    if (!sbt_is_mssql())
        skip(); /* SQL Server's rules (sqlite and postgresql: their DDL) */
    const char *prefix = sbt_new_prefix();
    char p[64], sql[512];
    snprintf(p, sizeof p, "%s", prefix);
    sb_bus *bus = sbt_open(p, NULL);
    snprintf(sql, sizeof sql,
             "CREATE TABLE %schannel_subscribers (correlation_id "
             "nvarchar(400) COLLATE Latin1_General_100_CI_AS NOT NULL, "
             "registration_id char(36) COLLATE Latin1_General_100_BIN2 NOT "
             "NULL, instance_id nvarchar(200) NOT NULL, expires_at "
             "datetime2(7) NOT NULL, PRIMARY KEY (correlation_id, "
             "registration_id))",
             p);
    sbt_exec(bus, sql);
    expect_refused(bus, "correlation_id", "Latin1_General_100_CI_AS");
    snprintf(sql, sizeof sql, "DROP TABLE %schannel_subscribers", p);
    sbt_exec(bus, sql);
    snprintf(sql, sizeof sql,
             "CREATE TABLE %srecovery_state (correlation_id nvarchar(400) "
             "COLLATE Latin1_General_100_BIN2 NOT NULL, registration_id "
             "char(36) COLLATE Latin1_General_100_BIN2 NOT NULL, handler "
             "nvarchar(200) NULL, context varbinary(max) NULL, registered_at "
             "datetime2(3) NOT NULL, expires_at datetime2(7) NOT NULL, "
             "dispatched_at datetime2(7) NULL, PRIMARY KEY (correlation_id, "
             "registration_id))",
             p);
    sbt_exec(bus, sql);
    expect_refused(bus, "registered_at", "datetime2(3)");
    snprintf(sql, sizeof sql, "DROP TABLE %srecovery_state", p);
    sbt_exec(bus, sql);
    snprintf(sql, sizeof sql,
             "CREATE SEQUENCE %schannel_ack_seq AS bigint START WITH 1 "
             "INCREMENT BY 1 MAXVALUE 1000000 NO CYCLE",
             p);
    sbt_exec(bus, sql);
    expect_refused(bus, "channel_ack_seq", "bigint maximum");
    drop_channel(bus, p);
    sb_close(bus);
}

/* issue 20.8, T7 on every backend: a channel table that lacks columns
 * its DDL declares is refused at open, naming the first missing column
 * and the fix, rather than left to a statement's "no such column". */
static void test_missing_columns(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    char p[64], sql[512];
    snprintf(p, sizeof p, "%s", prefix);
    sb_bus *bus = sbt_open(p, NULL);
    const char *text = sbt_is_mssql() ? "nvarchar(400)" : "text";
    snprintf(sql, sizeof sql,
             "CREATE TABLE %srecovery_state (correlation_id %s NOT NULL, "
             "registration_id %s NOT NULL)",
             p, text, text);
    sbt_exec(bus, sql);
    expect_refused(bus, "handler",
                   "recovery_state: column handler is missing; fix: ALTER "
                   "TABLE");
    drop_channel(bus, p);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_reply_inside_trigger),
        cmocka_unit_test(test_request_reply_from_thread),
        cmocka_unit_test(test_trigger_failure_leaves_nothing),
        cmocka_unit_test(test_timeout_cleans_up),
        cmocka_unit_test(test_cancel_releases_waiter),
        cmocka_unit_test(test_error_reply),
        cmocka_unit_test(test_until_progress_and_take),
        cmocka_unit_test(test_cross_process_delivery),
        cmocka_unit_test(test_fan_out_two_processes),
        cmocka_unit_test(test_reused_id_no_replay),
        cmocka_unit_test(test_case_variant_ids),
        cmocka_unit_test(test_invalid_ids_rejected),
        cmocka_unit_test(test_respond_without_waiter),
        cmocka_unit_test(test_idempotent_respond),
        cmocka_unit_test(test_mssql_catalog_checks),
        cmocka_unit_test(test_missing_columns),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
