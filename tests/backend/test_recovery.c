/*
 * test_recovery.c - channel recovery on every backend (channel.md C12,
 * C19-C21 and "Tests that must exist"): a waiter process killed with
 * SIGKILL has its late reply routed to its recovery handler exactly once;
 * a live waiter and recovery never both own one reply; KEEP_WAITING keeps
 * the registration; the default classification is FAIL; an unknown
 * handler's job ends in the dead-letter queue. C22: registrations are
 * listed with their state (outstanding, stale, orphaned, dispatched), page
 * by keyset, and the watchdog counts and logs the stale ones.
 */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 256

typedef struct calls {
    pthread_mutex_t mu;
    int n_resume, n_fail;
    char corr[MAX_CALLS][64];
    char ctx[MAX_CALLS][32];
    char data[MAX_CALLS][32];
    int n;
    int verdict;    /* what classify answers */
    int keep_first; /* answer KEEP_WAITING to replies "progress" */
} calls;

static int classify(const sb_reply *r, void *user)
{
    calls *c = user;
    size_t len;
    const char *d = sb_reply_data(r, &len);
    if (c->keep_first && len == 8 && memcmp(d, "progress", 8) == 0)
        return SB_RECOVERY_KEEP_WAITING;
    return c->verdict;
}

static int record(calls *c, int resume, const sb_reply *r, const void *ctx,
                  size_t ctx_len)
{
    pthread_mutex_lock(&c->mu);
    if (c->n < MAX_CALLS) {
        snprintf(c->corr[c->n], sizeof c->corr[0], "%s",
                 sb_reply_correlation_id(r));
        snprintf(c->ctx[c->n], sizeof c->ctx[0], "%.*s", (int)ctx_len,
                 ctx ? (const char *)ctx : "");
        size_t len;
        const char *d = sb_reply_data(r, &len);
        snprintf(c->data[c->n], sizeof c->data[0], "%.*s", (int)len, d);
        c->n++;
    }
    if (resume)
        c->n_resume++;
    else
        c->n_fail++;
    pthread_mutex_unlock(&c->mu);
    return SB_OK;
}

static int on_resume(const sb_reply *r, const void *ctx, size_t n, void *u)
{
    return record(u, 1, r, ctx, n);
}

static int on_fail(const sb_reply *r, const void *ctx, size_t n, void *u)
{
    return record(u, 0, r, ctx, n);
}

static sb_channel *open_channel(sb_bus *bus, int64_t confirm_ms)
{
    sb_channel_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.confirmation_timeout_ms = confirm_ms;
    o.full_sweep_interval_ms = 20;
    o.heartbeat_interval_ms = 200;
    o.heartbeat_timeout_ms = 600;
    o.recovery_retry_ms = 100;
    o.recovery_max_attempts = 3;
    sb_channel *ch = NULL;
    sb_error err;
    sbt_ok(sb_channel_open(bus, &o, &ch, &err), &err, "channel open");
    return ch;
}

static void add_handler(sb_channel *ch, const char *name, calls *c)
{
    sb_recovery_handler h;
    memset(&h, 0, sizeof h);
    h.size = sizeof h;
    h.name = name;
    h.classify = classify;
    h.resume = on_resume;
    h.fail = on_fail;
    h.user = c;
    sb_error err;
    sbt_ok(sb_channel_add_recovery_handler(ch, &h, &err), &err, "handler");
}

static int wait_calls(calls *c, int n, int seconds)
{
    for (int i = 0; i < seconds * 50; i++) {
        pthread_mutex_lock(&c->mu);
        int got = c->n;
        pthread_mutex_unlock(&c->mu);
        if (got >= n)
            return got;
        sbt_sleep_ms(20);
    }
    return c->n;
}

typedef struct pipe_trigger {
    int fd;
} pipe_trigger;

static int send_id(const char *id, void *user)
{
    pipe_trigger *t = user;
    char line[512];
    int n = snprintf(line, sizeof line, "%s\n", id);
    return write(t->fd, line, (size_t)n) == n ? SB_OK : SB_ERROR;
}

static void read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        char ch;
        if (read(fd, &ch, 1) != 1 || ch == '\n')
            break;
        buf[n++] = ch;
    }
    buf[n] = '\0';
}

/* What a listing returned (C22), copied out of the callback. */
#define MAX_ROWS 64

typedef struct reg_row {
    char corr[64];
    char reg[37];
    char handler[32];
    char ctx[32];
    int64_t registered_at_us, expires_at_us, dispatched_at_us;
    int state, live;
} reg_row;

typedef struct reg_list {
    reg_row rows[MAX_ROWS];
    int n;
    int stop_after; /* 0 = never stop */
} reg_list;

static int collect(const sb_registration *r, void *user)
{
    reg_list *l = user;
    assert_true(l->n < MAX_ROWS);
    reg_row *o = &l->rows[l->n++];
    size_t len;
    const char *ctx = sb_registration_context(r, &len);
    const char *handler = sb_registration_handler(r);
    snprintf(o->corr, sizeof o->corr, "%s", sb_registration_correlation_id(r));
    snprintf(o->reg, sizeof o->reg, "%s", sb_registration_id(r));
    snprintf(o->handler, sizeof o->handler, "%s", handler ? handler : "");
    snprintf(o->ctx, sizeof o->ctx, "%.*s", (int)len, ctx ? ctx : "");
    o->registered_at_us = sb_registration_registered_at_us(r);
    o->expires_at_us = sb_registration_expires_at_us(r);
    o->dispatched_at_us = sb_registration_dispatched_at_us(r);
    o->state = sb_registration_state(r);
    o->live = sb_registration_live(r);
    return l->stop_after != 0 && l->n >= l->stop_after;
}

/* Every registration of `bus` with `stale_after_ms` (0 = default). */
static void list_all(sb_bus *bus, int64_t stale_after_ms, reg_list *l)
{
    memset(l, 0, sizeof *l);
    sb_registration_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.stale_after_ms = stale_after_ms;
    sb_error err;
    sbt_ok(sb_recovery_registrations(bus, &q, collect, l, &err), &err,
           "list registrations");
}

static const reg_row *find_row(const reg_list *l, const char *corr)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->rows[i].corr, corr) == 0)
            return &l->rows[i];
    fail_msg("no registration for %s", corr);
    return NULL;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* WARN lines the watchdog logs, captured from the bus's log callback. */
typedef struct log_capture {
    pthread_mutex_t mu;
    int warnings;
    char last[1024];
} log_capture;

static void capture_log(int level, const char *component, const char *message,
                        void *user)
{
    log_capture *lc = user;
    if (level != SB_LOG_WARN || strcmp(component, "recovery") != 0)
        return;
    pthread_mutex_lock(&lc->mu);
    lc->warnings++;
    snprintf(lc->last, sizeof lc->last, "%s", message);
    pthread_mutex_unlock(&lc->mu);
}

/* C12 step 1/5, C20, C21 and "a waiter process killed (SIGKILL) while
 * waiting: the reply is routed to its recovery handler exactly once per
 * registration". */
static void test_sigkill_waiter_recovered_once(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    /* Children are forked before this process starts any thread: a fork
     * copies only the calling thread, and a lock held by another would
     * never be released in the child. */
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60); /* never outlive a failed parent */
        close(p[0]);
        sb_bus *cb = sbt_open(prefix, NULL);
        sb_channel *cc = open_channel(cb, 300);
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.recovery_handler = "h";
        wo.recovery_context = "ctx-1";
        wo.recovery_context_len = 5;
        pipe_trigger t = {p[1]};
        sb_waiter *w = NULL;
        sb_error err;
        if (sb_request(cc, &wo, send_id, &t, &w, &err) != SB_OK)
            _exit(2);
        pause(); /* killed here, mid-wait */
        _exit(0);
    }
    close(p[1]);
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = open_channel(bus, 300);
    char id[512];
    read_line(p[0], id, sizeof id);
    close(p[0]);
    assert_true(strlen(id) == 36);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));

    calls c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mu, NULL);
    c.verdict = SB_RECOVERY_RESUME;
    add_handler(ch, "h", &c);
    sb_error err;
    sbt_ok(sb_respond(ch, id, "late", 4, NULL, &err), &err, "respond");
    assert_int_equal(wait_calls(&c, 1, 20), 1);
    sbt_sleep_ms(500); /* a second dispatch would show up by now */
    assert_int_equal(c.n, 1);
    assert_int_equal(c.n_resume, 1);
    assert_string_equal(c.corr[0], id);
    assert_string_equal(c.ctx[0], "ctx-1");
    assert_string_equal(c.data[0], "late");
    /* The same reply again (a retried respond) dispatches nothing new. */
    assert_int_equal(sbt_count(bus, "deadletter"), 0);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* C19: with no classify the verdict is FAIL; KEEP_WAITING runs no
 * callback and keeps the registration, so the later terminal reply is
 * recovered too (trap 2). */
static void test_fail_default_and_keep_waiting(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    /* Registrations whose waiters are gone: a waiter that timed out leaves
     * none, so write them as a crashed process would have (attach, then
     * lose the process: here, a child that exits without cleaning up). */
    const char *names[2] = {"keep", "plain"};
    char ids[2][64];
    for (int i = 0; i < 2; i++) {
        snprintf(ids[i], sizeof ids[i], "keep-test-%d-%ld", i, (long)getpid());
        pid_t pid = fork();
        if (pid == 0) {
            alarm(60);
            sb_bus *cb = sbt_open(prefix, NULL);
            sb_channel *cc = open_channel(cb, 200);
            sb_wait_options wo;
            memset(&wo, 0, sizeof wo);
            wo.size = sizeof wo;
            wo.recovery_handler = names[i];
            sb_waiter *w = NULL;
            _exit(sb_attach(cc, ids[i], &wo, &w, NULL) == SB_OK ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = open_channel(bus, 200);
    calls c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mu, NULL);
    c.verdict = SB_RECOVERY_RESUME;
    c.keep_first = 1;
    add_handler(ch, "keep", &c);
    sb_recovery_handler plain;
    memset(&plain, 0, sizeof plain);
    plain.size = sizeof plain;
    plain.name = "plain";
    plain.resume = on_resume;
    plain.fail = on_fail;
    plain.user = &c;
    sb_error err;
    sbt_ok(sb_channel_add_recovery_handler(ch, &plain, &err), &err, "plain");
    assert_int_equal(sb_channel_add_recovery_handler(ch, &plain, &err),
                     SB_CONFLICT);

    sbt_sleep_ms(700); /* the subscriber rows expire (600 ms) */
    sbt_ok(sb_respond(ch, ids[1], "x", 1, NULL, &err), &err, "plain reply");
    assert_int_equal(wait_calls(&c, 1, 20), 1);
    assert_int_equal(c.n_fail, 1); /* FAIL by omission of classify */
    sbt_ok(sb_respond(ch, ids[0], "progress", 8, NULL, &err), &err, "p");
    sbt_sleep_ms(800);
    assert_int_equal(c.n, 1); /* KEEP_WAITING: no callback */
    /* C22: the kept registration stays listed as dispatched (its
     * dispatched_at records the last dispatch); the FAIL callback's
     * success deleted the other one. */
    reg_list l;
    list_all(bus, 0, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.rows[0].corr, ids[0]);
    assert_int_equal(l.rows[0].state, SB_REG_DISPATCHED);
    assert_true(l.rows[0].dispatched_at_us > 0);
    sbt_ok(sb_respond(ch, ids[0], "final", 5, NULL, &err), &err, "final");
    assert_int_equal(wait_calls(&c, 2, 20), 2);
    assert_int_equal(c.n_resume, 1);
    assert_string_equal(c.data[1], "final");
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* C12 step 5, C13, trap 10: with the confirmation timeout at its edge, a
 * reply is delivered live or recovered, never both and never neither. */
static void test_live_and_recovery_never_both(void **state)
{
    (void)state;
    enum { ROUNDS = 16 };
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        close(to_child[1]);
        close(from_child[0]);
        sb_bus *cb = sbt_open(prefix, NULL);
        sb_channel *cc = open_channel(cb, 15);
        for (;;) {
            char id[128];
            read_line(to_child[0], id, sizeof id);
            if (id[0] == '\0')
                break;
            sb_wait_options wo;
            memset(&wo, 0, sizeof wo);
            wo.size = sizeof wo;
            wo.timeout_ms = 1500;
            wo.recovery_handler = "race";
            sb_waiter *w = NULL;
            if (sb_attach(cc, id, &wo, &w, NULL) != SB_OK)
                _exit(2);
            if (write(from_child[1], "r\n", 2) != 2)
                _exit(2);
            sb_reply *r = NULL;
            int rc = sb_waiter_wait(w, &r, NULL);
            sb_reply_free(r);
            sb_waiter_free(w);
            if (write(from_child[1], rc == SB_OK ? "g\n" : "t\n", 2) != 2)
                _exit(2);
        }
        sb_channel_close(cc);
        sb_close(cb);
        _exit(0);
    }
    close(to_child[0]);
    close(from_child[1]);
    /* Two responders whose confirmation timeouts straddle the waiter's
     * 20 ms sweep, so both outcomes happen within one run. */
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = open_channel(bus, 5);
    sb_channel *slow = open_channel(bus, 40);
    calls c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mu, NULL);
    c.verdict = SB_RECOVERY_RESUME;
    add_handler(ch, "race", &c);
    add_handler(slow, "race", &c);
    int got_live[ROUNDS];
    char ids[ROUNDS][64];
    for (int i = 0; i < ROUNDS; i++) {
        snprintf(ids[i], sizeof ids[i], "race-%ld-%d", (long)getpid(), i);
        char line[80];
        int n = snprintf(line, sizeof line, "%s\n", ids[i]);
        assert_int_equal(write(to_child[1], line, (size_t)n), n);
        read_line(from_child[0], line, sizeof line);
        assert_string_equal(line, "r");
        sb_error err;
        sbt_ok(sb_respond(i % 2 ? slow : ch, ids[i], "v", 1, NULL, &err), &err,
               "respond");
        read_line(from_child[0], line, sizeof line);
        got_live[i] = strcmp(line, "g") == 0;
    }
    assert_int_equal(write(to_child[1], "\n", 1), 1);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int live = 0;
    for (int i = 0; i < ROUNDS; i++)
        live += got_live[i];
    wait_calls(&c, ROUNDS - live, 20);
    sbt_sleep_ms(500);
    int both = 0, neither = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int recovered = 0;
        for (int k = 0; k < c.n; k++)
            recovered += strcmp(c.corr[k], ids[i]) == 0;
        both += got_live[i] && recovered > 0;
        neither += !got_live[i] && recovered == 0;
        assert_true(recovered <= 1);
    }
    printf("race: %d live, %d recovered of %d\n", live, c.n, ROUNDS);
    assert_int_equal(both, 0);
    assert_int_equal(neither, 0);
    sb_channel_close(slow);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* C21: a job for a handler no process knows is nakked (another process
 * might know it) and, after recovery_max_attempts, dead-lettered - so it
 * is never lost and never retried forever. */
static void test_unknown_handler_dead_lettered(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    char id[64];
    snprintf(id, sizeof id, "orphan-%ld", (long)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        sb_bus *cb = sbt_open(prefix, NULL);
        sb_channel *cc = open_channel(cb, 200);
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.recovery_handler = "nobody-knows-me";
        sb_waiter *w = NULL;
        _exit(sb_attach(cc, id, &wo, &w, NULL) == SB_OK ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = open_channel(bus, 200); /* 3 attempts, 100 ms apart */
    calls c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mu, NULL);
    add_handler(ch, "someone-else", &c);
    sbt_sleep_ms(700); /* the dead child's subscriber row expires */
    sb_error err;
    sbt_ok(sb_respond(ch, id, "x", 1, NULL, &err), &err, "respond");
    long dead = 0;
    for (int i = 0; i < 500 && dead == 0; i++) {
        sbt_sleep_ms(20);
        dead = sbt_count(bus, "deadletter");
    }
    assert_int_equal(dead, 1);
    assert_int_equal(sbt_count(bus, "sqlbus.recovery"), 0);
    assert_int_equal(c.n, 0);
    sb_msg **d = NULL;
    size_t n = 0;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq");
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_header(d[0], "sb-failed-queue"),
                        "sqlbus.recovery");
    assert_string_equal(sb_msg_header(d[0], "sb-exception-type"),
                        "recovery:unknown-handler");
    assert_string_equal(sb_msg_header(d[0], "sb-attempts"), "3");
    sb_msg_free_array(d, n);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* C22: a registration with a live waiter is OUTSTANDING; once its
 * process is gone (its subscriber row lapsed) it is ORPHANED, and STALE
 * when older than stale_after; after its reply went to recovery it is
 * DISPATCHED with dispatched_at set. The watchdog counts and names the
 * stale ones. */
static void test_registration_states(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    char live_id[64], orphan_id[64], sent_id[64];
    snprintf(live_id, sizeof live_id, "live-%ld", (long)getpid());
    snprintf(orphan_id, sizeof orphan_id, "orphan-%ld", (long)getpid());
    snprintf(sent_id, sizeof sent_id, "sent-%ld", (long)getpid());
    /* A process that registers two waiters and exits without cleaning
     * up, as a crashed one would (its heartbeats stop). */
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        sb_bus *cb = sbt_open(prefix, NULL);
        sb_channel *cc = open_channel(cb, 200);
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.recovery_handler = "wd";
        wo.recovery_context = "ctx-o";
        wo.recovery_context_len = 5;
        sb_waiter *w1 = NULL, *w2 = NULL;
        int ok = sb_attach(cc, orphan_id, &wo, &w1, NULL) == SB_OK &&
                 sb_attach(cc, sent_id, &wo, &w2, NULL) == SB_OK;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    log_capture lc;
    memset(&lc, 0, sizeof lc);
    pthread_mutex_init(&lc.mu, NULL);
    sb_options bo;
    memset(&bo, 0, sizeof bo);
    bo.log = capture_log;
    bo.log_user = &lc;
    bo.log_level = SB_LOG_WARN;
    sb_bus *bus = sbt_open(prefix, &bo);
    sb_channel *ch = open_channel(bus, 200);
    sb_wait_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.recovery_handler = "wd";
    wo.recovery_context = "ctx-l";
    wo.recovery_context_len = 5;
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_attach(ch, live_id, &wo, &w, &err), &err, "attach");
    sbt_sleep_ms(1000); /* the dead process's subscriber rows lapse (600 ms) */

    /* No process registered handler "wd": the job stays queued and the
     * registration stays, dispatched. */
    int64_t before = wall_us();
    sbt_ok(sb_respond(ch, sent_id, "late", 4, NULL, &err), &err, "respond");
    int64_t after = wall_us();
    assert_int_equal(sbt_count(bus, "sqlbus.recovery"), 1);

    reg_list l;
    list_all(bus, 0, &l);
    assert_int_equal(l.n, 3);
    const reg_row *r = find_row(&l, live_id);
    assert_int_equal(r->state, SB_REG_OUTSTANDING);
    assert_int_equal(r->live, 1);
    assert_int_equal(r->dispatched_at_us, 0);
    assert_string_equal(r->handler, "wd");
    assert_string_equal(r->ctx, "ctx-l");
    assert_true(r->expires_at_us > r->registered_at_us);
    r = find_row(&l, orphan_id);
    assert_int_equal(r->state, SB_REG_ORPHANED);
    assert_int_equal(r->live, 0);
    assert_int_equal(r->dispatched_at_us, 0);
    assert_string_equal(r->ctx, "ctx-o");
    assert_int_equal(strlen(r->reg), 36);
    r = find_row(&l, sent_id);
    assert_int_equal(r->state, SB_REG_DISPATCHED);
    assert_int_equal(r->live, 0);
    /* Set in the claim's transaction, by the database clock. */
    assert_true(r->dispatched_at_us >= before - 1000000);
    assert_true(r->dispatched_at_us <= after + 1000000);
    assert_true(r->dispatched_at_us >= r->registered_at_us);

    /* Older than stale_after and never dispatched: STALE. A live waiter
     * and a dispatched registration are not, however old. */
    list_all(bus, 1, &l);
    assert_int_equal(find_row(&l, orphan_id)->state, SB_REG_STALE);
    assert_int_equal(find_row(&l, live_id)->state, SB_REG_OUTSTANDING);
    assert_int_equal(find_row(&l, sent_id)->state, SB_REG_DISPATCHED);

    /* S8: the same states counted in the database, in one statement,
     * with the dispatched one by handler. */
    sb_registration_counts rc;
    memset(&rc, 0, sizeof rc);
    rc.size = sizeof rc;
    sbt_ok(sb_recovery_counts(bus, 0, &rc, &err), &err, "counts");
    assert_int_equal(rc.by_state[SB_REG_OUTSTANDING], 1);
    assert_int_equal(rc.by_state[SB_REG_ORPHANED], 1);
    assert_int_equal(rc.by_state[SB_REG_STALE], 0);
    assert_int_equal(rc.by_state[SB_REG_DISPATCHED], 1);
    assert_int_equal(rc.n_handlers, 1);
    assert_string_equal(rc.dispatched[0].handler, "wd");
    assert_int_equal(rc.dispatched[0].n, 1);
    assert_int_equal(rc.dispatched_other, 0);
    sbt_ok(sb_recovery_counts(bus, 1, &rc, &err), &err, "counts, 1 ms");
    assert_int_equal(rc.by_state[SB_REG_STALE], 1);
    assert_int_equal(rc.by_state[SB_REG_ORPHANED], 0);
    assert_int_equal(rc.by_state[SB_REG_OUTSTANDING], 1);
    rc.size = sizeof rc - 1;
    assert_int_equal(sb_recovery_counts(bus, 0, &rc, &err), SB_INVALID);
    assert_string_equal(err.field, "size");
    rc.size = sizeof rc;
    assert_int_equal(sb_recovery_counts(bus, -1, &rc, &err), SB_INVALID);
    assert_string_equal(err.field, "stale_after_ms");

    /* The state filter. */
    sb_registration_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.stale_after_ms = 1;
    q.states = SB_REG_BIT(SB_REG_STALE);
    memset(&l, 0, sizeof l);
    sbt_ok(sb_recovery_registrations(bus, &q, collect, &l, &err), &err, "q");
    assert_int_equal(l.n, 1);
    assert_string_equal(l.rows[0].corr, orphan_id);
    q.states = SB_REG_BIT(SB_REG_OUTSTANDING) | SB_REG_BIT(SB_REG_DISPATCHED);
    memset(&l, 0, sizeof l);
    sbt_ok(sb_recovery_registrations(bus, &q, collect, &l, &err), &err, "q");
    assert_int_equal(l.n, 2);
    q.stale_after_ms = 0; /* 24 h: nothing is stale */
    q.states = SB_REG_BIT(SB_REG_STALE);
    memset(&l, 0, sizeof l);
    sbt_ok(sb_recovery_registrations(bus, &q, collect, &l, &err), &err, "q");
    assert_int_equal(l.n, 0);

    /* A non-zero return stops the listing. */
    memset(&l, 0, sizeof l);
    l.stop_after = 1;
    sbt_ok(sb_recovery_registrations(bus, NULL, collect, &l, &err), &err,
           "stop");
    assert_int_equal(l.n, 1);

    /* The watchdog: nothing is stale after 24 h; with 1 ms the orphan is,
     * and it is named at WARN. */
    int64_t stale = -1;
    sbt_ok(sb_recovery_watchdog(bus, 0, &stale, &err), &err, "watchdog");
    assert_int_equal(stale, 0);
    assert_int_equal(lc.warnings, 0);
    sbt_ok(sb_recovery_watchdog(bus, 1, &stale, &err), &err, "watchdog");
    assert_int_equal(stale, 1);
    pthread_mutex_lock(&lc.mu);
    assert_int_equal(lc.warnings, 1);
    assert_non_null(strstr(lc.last, orphan_id));
    assert_non_null(strstr(lc.last, "wd"));
    pthread_mutex_unlock(&lc.mu);

    /* The live waiter's outcome removes its registration. */
    sb_waiter_free(w);
    list_all(bus, 0, &l);
    assert_int_equal(l.n, 2);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* C22: keyset paging over (registered_at, correlation id, registration
 * id) returns every registration exactly once, in order, also when many
 * share one registered_at and one correlation id. */
static void test_registration_paging(void **state)
{
    (void)state;
    enum { TIED = 24, SPREAD = 6, TOTAL = TIED + SPREAD };
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    /* Without a channel: the listing creates the channel's tables. */
    reg_list l;
    list_all(bus, 0, &l);
    assert_int_equal(l.n, 0);
    long long now_us = (long long)wall_us();
    char sql[8192];
    int len = snprintf(sql, sizeof sql,
                       "INSERT INTO %srecovery_state (correlation_id, "
                       "registration_id, handler, context, registered_at, "
                       "expires_at) VALUES ",
                       prefix);
    for (int i = 0; i < TOTAL; i++) {
        char reg[37];
        sb_error err;
        sbt_ok(sb_uuid7(reg, &err), &err, "uuid");
        /* Inserted out of order; three registrations per id. */
        int back_s = i < TIED ? 0 : i - TIED + 1;
        if (sbt_is_mssql()) /* whole microseconds, as the library's */
            len += snprintf(sql + len, sizeof sql - (size_t)len,
                            "%s(N'page-%02d', '%s', N'h', NULL, DATEADD("
                            "second, -%d, CAST(SYSUTCDATETIME() AS "
                            "datetime2(6))), DATEADD(hour, 1, "
                            "SYSUTCDATETIME()))",
                            i ? ", " : "", (i * 7) % (TOTAL / 3), reg, back_s);
        else if (sbt_is_pg())
            len += snprintf(sql + len, sizeof sql - (size_t)len,
                            "%s('page-%02d', '%s', 'h', NULL, now() - "
                            "interval '%d seconds', now() + interval "
                            "'1 hour')",
                            i ? ", " : "", (i * 7) % (TOTAL / 3), reg, back_s);
        else
            len += snprintf(sql + len, sizeof sql - (size_t)len,
                            "%s('page-%02d', '%s', 'h', NULL, %lld, %lld)",
                            i ? ", " : "", (i * 7) % (TOTAL / 3), reg,
                            now_us - back_s * 1000000LL, now_us + 3600000000LL);
    }
    assert_true(len < (int)sizeof sql);
    sbt_exec(bus, sql);

    reg_list all;
    list_all(bus, 0, &all);
    assert_int_equal(all.n, TOTAL);
    for (int i = 1; i < all.n; i++) {
        const reg_row *a = &all.rows[i - 1], *b = &all.rows[i];
        int cmp = a->registered_at_us < b->registered_at_us   ? -1
                  : a->registered_at_us > b->registered_at_us ? 1
                  : strcmp(a->corr, b->corr) != 0 ? strcmp(a->corr, b->corr)
                                                  : strcmp(a->reg, b->reg);
        assert_true(cmp < 0);
    }

    /* Pages of 7, each call resuming after the last row of the one
     * before. */
    reg_list paged;
    memset(&paged, 0, sizeof paged);
    sb_registration_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.limit = 7;
    int pages = 0;
    for (;;) {
        reg_list page;
        memset(&page, 0, sizeof page);
        sb_error err;
        sbt_ok(sb_recovery_registrations(bus, &q, collect, &page, &err), &err,
               "page");
        pages++;
        assert_true(page.n <= 7);
        for (int i = 0; i < page.n; i++)
            paged.rows[paged.n++] = page.rows[i];
        if (page.n < 7)
            break;
        const reg_row *last = &paged.rows[paged.n - 1];
        q.after_registered_at_us = last->registered_at_us;
        q.after_correlation_id = last->corr;
        q.after_registration_id = last->reg;
        assert_true(pages < 10);
    }
    assert_int_equal(pages, TOTAL / 7 + 1);
    assert_int_equal(paged.n, TOTAL);
    for (int i = 0; i < TOTAL; i++) {
        assert_string_equal(paged.rows[i].corr, all.rows[i].corr);
        assert_string_equal(paged.rows[i].reg, all.rows[i].reg);
    }
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static int never(const sb_registration *r, void *user)
{
    (void)r;
    (*(int *)user)++;
    return 0;
}

static void expect_invalid(sb_bus *bus, const sb_registration_query *q,
                           const char *field, sb_error *err)
{
    int ran = 0;
    assert_int_equal(sb_recovery_registrations(bus, q, never, &ran, err),
                     SB_INVALID);
    assert_string_equal(err->field, field);
    assert_int_equal(ran, 0);
}

/* C22: bad arguments are rejected naming the field and its limit, and the
 * callback never runs. */
static void test_registration_bad_input(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_registration_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    sb_error err;
    expect_invalid(NULL, &q, "bus", &err);
    assert_int_equal(sb_recovery_registrations(bus, &q, NULL, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "fn");
    q.size = 4;
    expect_invalid(bus, &q, "size", &err);
    q.size = sizeof q;
    q.stale_after_ms = -1;
    expect_invalid(bus, &q, "stale_after_ms", &err);
    assert_non_null(strstr(err.message, "3650 days"));
    q.stale_after_ms = 3651LL * 86400000;
    expect_invalid(bus, &q, "stale_after_ms", &err);
    q.stale_after_ms = 0;
    q.states = SB_REG_BIT(4);
    expect_invalid(bus, &q, "states", &err);
    q.states = 0;
    q.limit = 10001;
    expect_invalid(bus, &q, "limit", &err);
    q.limit = 0;
    q.after_registration_id = "0190f3a5-1b2c-7d4e-8f60-718293a4b5c6";
    expect_invalid(bus, &q, "after_correlation_id", &err);
    q.after_correlation_id = " padded";
    expect_invalid(bus, &q, "after_correlation_id", &err);
    q.after_correlation_id = "ok";
    q.after_registration_id = "not-a-uuid";
    expect_invalid(bus, &q, "after_registration_id", &err);
    q.after_registration_id = NULL;
    expect_invalid(bus, &q, "after_registration_id", &err);
    int64_t stale = 7;
    assert_int_equal(sb_recovery_watchdog(NULL, 0, &stale, &err), SB_INVALID);
    assert_string_equal(err.field, "bus");
    assert_int_equal(sb_recovery_watchdog(bus, -5, &stale, &err), SB_INVALID);
    assert_string_equal(err.field, "stale_after_ms");
    assert_int_equal(stale, 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigkill_waiter_recovered_once),
        cmocka_unit_test(test_fail_default_and_keep_waiting),
        cmocka_unit_test(test_live_and_recovery_never_both),
        cmocka_unit_test(test_unknown_handler_dead_lettered),
        cmocka_unit_test(test_registration_states),
        cmocka_unit_test(test_registration_paging),
        cmocka_unit_test(test_registration_bad_input),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
