/*
 * test_jobs.c - requests answered by workers (channel.md C23, transport.md
 * T27): sb_request_job publishes a job carrying sb-correlation-id and
 * sb-reply-to; the worker's reply comes back to the waiter; a job that is
 * dead-lettered answers with an error reply; a worker in another process
 * answers too.
 */
#include "harness.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A connection that passed its LISTEN self-check (C14). */
#define LISTENING "query LIKE 'NOTIFY %sqlbus-self-check:%'"

static int echo_handler(sb_delivery *d, void *user)
{
    (void)user;
    const sb_msg *m = sb_delivery_msg(d);
    size_t len;
    const char *p = sb_msg_payload(m, &len);
    if (len >= 4 && memcmp(p, "fail", 4) == 0) {
        sb_delivery_fail(d, "test:refused", "will not do it", "detail here");
        return SB_ERROR;
    }
    if (len >= 8 && memcmp(p, "progress", 8) == 0 &&
        sb_delivery_progress(d, "working", 7, NULL) != SB_OK)
        return SB_ERROR;
    char out[128];
    int n = snprintf(out, sizeof out, "echo:%.*s", (int)len, p);
    return sb_delivery_reply(d, out, (size_t)n, NULL);
}

static sb_channel *open_channel(sb_bus *bus)
{
    sb_channel_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.full_sweep_interval_ms = 20;
    o.confirmation_timeout_ms = 3000;
    sb_channel *ch = NULL;
    sb_error err;
    sbt_ok(sb_channel_open(bus, &o, &ch, &err), &err, "channel");
    return ch;
}

static sb_worker *start_worker(sb_bus *bus)
{
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "jobs";
    o.handler = echo_handler;
    o.concurrency = 2;
    o.max_attempts = 2;
    o.redelivery_delay_ms = -1;
    o.empty_poll_ms = 20;
    o.max_poll_ms = 100;
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "worker");
    return w;
}

static void expect_reply(sb_channel *ch, const char *payload, int want_rc,
                         const char *want)
{
    sb_wait_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.timeout_ms = 20000;
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_request_job(ch, "jobs", payload, strlen(payload), &wo, &w, &err),
           &err, "request job");
    sb_reply *r = NULL;
    int rc = sb_waiter_wait(w, &r, &err);
    if (rc != want_rc)
        fail_msg("request %s: expected %s, got %s", payload,
                 sb_strerror(want_rc), sb_strerror(rc));
    if (want_rc == SB_OK) {
        size_t len;
        const char *d = sb_reply_data(r, &len);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(d, want, len);
    } else {
        assert_true(sb_reply_is_error(r));
        assert_string_equal(sb_reply_error_type(r), want);
        assert_string_equal(sb_reply_error_message(r), "will not do it");
        assert_string_equal(sb_reply_error_detail(r), "detail here");
    }
    sb_reply_free(r);
    sb_waiter_free(w);
}

static int until_echo(const sb_reply *r, void *user)
{
    (void)user;
    size_t len;
    const char *d = sb_reply_data(r, &len);
    return len >= 5 && memcmp(d, "echo:", 5) == 0;
}

/* T27: a handler reports progress; the waiter sees it before the final
 * reply. */
static void expect_progress(sb_channel *ch)
{
    sb_wait_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.timeout_ms = 20000;
    wo.until = until_echo;
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_request_job(ch, "jobs", "progress", 8, &wo, &w, &err), &err,
           "request");
    sb_reply *r = NULL;
    sbt_ok(sb_waiter_wait(w, &r, &err), &err, "wait");
    size_t len;
    const char *d = sb_reply_data(r, &len);
    assert_int_equal(len, 13);
    assert_memory_equal(d, "echo:progress", 13);
    sb_reply_free(r);
    sbt_ok(sb_waiter_take(w, &r, &err), &err, "take progress");
    d = sb_reply_data(r, &len);
    assert_int_equal(len, 7);
    assert_memory_equal(d, "working", 7);
    sb_reply_free(r);
    sb_waiter_free(w);
}

/* C23, T27: a worker in this process replies; a final failure sends an
 * error reply (C3). */
static void test_worker_replies_in_process(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = open_channel(bus);
    sb_worker *w = start_worker(bus);
    expect_reply(ch, "hello", SB_OK, "echo:hello");
    expect_reply(ch, "fail now", SB_REPLY_ERROR, "test:refused");
    expect_progress(ch);
    sb_worker_free(w);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* C23 across processes: the worker runs in a child process; on
 * PostgreSQL the LISTEN connections are then killed mid-run (C14). */
static void test_worker_replies_across_processes(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        close(go[1]);
        sb_bus *cb = sbt_open(prefix, NULL);
        sb_channel *cc = open_channel(cb);
        sb_worker *w = start_worker(cb);
        char c;
        if (read(go[0], &c, 1) < 0) /* EOF when the parent is done */
            _exit(3);
        sb_worker_free(w);
        sb_channel_close(cc);
        sb_close(cb);
        _exit(0);
    }
    close(go[0]);
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = open_channel(bus);
    expect_reply(ch, "remote", SB_OK, "echo:remote");
    if (sbt_is_pg() && strcmp(sbt_backend(), "odbc-postgresql") != 0) {
        /* C14 "lost NOTIFY": kill every LISTEN connection (ours and the
         * child's); replies must still arrive through the sweep. A
         * listening connection's last statement is its self-check. */
        sbt_exec(bus, "DO $$ BEGIN IF (SELECT count(*) FROM pg_stat_activity "
                      "WHERE " LISTENING ") < 2 THEN RAISE EXCEPTION "
                      "'expected the LISTEN connections of both processes'; "
                      "END IF; END $$");
        sbt_exec(bus, "SELECT pg_terminate_backend(pid) FROM "
                      "pg_stat_activity WHERE " LISTENING " AND "
                      "pid <> pg_backend_pid()");
        expect_reply(ch, "after kill", SB_OK, "echo:after kill");
    }
    expect_reply(ch, "fail remote", SB_REPLY_ERROR, "test:refused");
    close(go[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_replies_in_process),
        cmocka_unit_test(test_worker_replies_across_processes),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
