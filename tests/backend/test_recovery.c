/*
 * test_recovery.c - channel recovery on every backend (channel.md C12,
 * C19-C21 and "Tests that must exist"): a waiter process killed with
 * SIGKILL has its late reply routed to its recovery handler exactly once;
 * a live waiter and recovery never both own one reply; KEEP_WAITING keeps
 * the registration; the default classification is FAIL; an unknown
 * handler's job ends in the dead-letter queue.
 */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CALLS 256

typedef struct calls {
    pthread_mutex_t mu;
    int n_resume, n_fail;
    char corr[MAX_CALLS][64];
    char ctx[MAX_CALLS][32];
    char data[MAX_CALLS][32];
    int n;
    int verdict; /* what classify answers */
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
        sbt_ok(sb_respond(i % 2 ? slow : ch, ids[i], "v", 1, NULL, &err),
               &err, "respond");
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

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigkill_waiter_recovered_once),
        cmocka_unit_test(test_fail_default_and_keep_waiting),
        cmocka_unit_test(test_live_and_recovery_never_both),
        cmocka_unit_test(test_unknown_handler_dead_lettered),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
