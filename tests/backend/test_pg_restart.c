/*
 * test_pg_restart.c - transport.md "the database restarted under load
 * (PostgreSQL)": workers reconnect after the server restarts (T26), no
 * message is lost and none is acked twice; a worker stopped while the
 * database is down stops within its budget and loses nothing. Needs the cluster's directory
 * (SQLBUS_TEST_PG_DIR, set by tests/run-check) to restart it; SQLite has
 * no server to restart, so its run reports itself skipped.
 */
#include "harness.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 3000

typedef struct seen {
    char (*ids)[37];
    atomic_int *handled;
    atomic_int calls;
} seen;

static int handler(sb_delivery *d, void *user)
{
    seen *s = user;
    const char *id = sb_msg_id(sb_delivery_msg(d));
    for (int i = 0; i < N; i++)
        if (strcmp(s->ids[i], id) == 0)
            atomic_fetch_add(&s->handled[i], 1);
    atomic_fetch_add(&s->calls, 1);
    sbt_sleep_ms(1);
    return SB_OK;
}

static void test_restart_under_load(void **state)
{
    (void)state;
    const char *dir = getenv("SQLBUS_TEST_PG_DIR");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, NULL);
    seen s;
    s.ids = calloc(N, sizeof *s.ids);
    s.handled = calloc(N, sizeof *s.handled);
    atomic_init(&s.calls, 0);
    sbt_publish_n(bus, "q", N, s.ids);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "q";
    o.handler = handler;
    o.user = &s;
    o.concurrency = 4;
    o.lease_ms = 5000;
    o.empty_poll_ms = 20;
    o.max_poll_ms = 200;
    o.max_attempts = -1;
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "start");
    while (atomic_load(&s.calls) < N / 5)
        sbt_sleep_ms(10);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/tests/pg-cluster restart '%s'", SB_SOURCE_DIR,
             dir);
    assert_int_equal(system(cmd), 0);
    int before = atomic_load(&s.calls);
    assert_true(before < N);
    assert_int_equal(sb_worker_wait_idle(w, 120000), SB_OK);
    sb_worker_stats st;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    for (int i = 0; i < N; i++)
        assert_true(atomic_load(&s.handled[i]) >= 1);
    /* A row is deleted once: acks that committed plus acks whose commit
     * the restart hid (found gone on retry) account for every message.
     * A restart that outlasts a lease (a loaded machine) lets a later
     * claim run a message again (T17): each extra run ends in a lost
     * lease, so the sum covers the runs, and no more acks commit than
     * there are messages. */
    int calls = atomic_load(&s.calls);
    if (calls == N) {
        assert_int_equal(st.acked + st.lost_leases, N);
    } else {
        assert_true(st.acked <= N);
        assert_true(st.acked + st.lost_leases >= calls);
    }
    assert_int_equal(st.naked, 0);
    assert_int_equal(sbt_count(bus, "q"), 0);
    assert_int_equal(sbt_count(bus, "deadletter"), 0);
    printf("restart: %d handled before, %d calls in all, %lld acked, "
           "%lld found already gone\n",
           before, atomic_load(&s.calls), (long long)st.acked,
           (long long)st.lost_leases);
    free(s.ids);
    free(s.handled);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run tests/pg-cluster VERB on the run's cluster; 0 on success. */
static int cluster(const char *verb)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/tests/pg-cluster %s '%s' >/dev/null",
             SB_SOURCE_DIR, verb, getenv("SQLBUS_TEST_PG_DIR"));
    return system(cmd);
}

typedef struct slow {
    char (*ids)[37];
    int n;
    atomic_int *handled;
    atomic_int calls;
} slow;

static int slow_handler(sb_delivery *d, void *user)
{
    slow *s = user;
    atomic_fetch_add(&s->calls, 1);
    sbt_sleep_ms(500);
    const char *id = sb_msg_id(sb_delivery_msg(d));
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->ids[i], id) == 0)
            atomic_fetch_add(&s->handled[i], 1);
    return SB_OK;
}

/* T26, T23 (issue 19): the database goes down under a busy worker and the
 * worker is stopped. The stop takes far less than its budget (handlers
 * done, the writes tried for a moment), says SB_UNAVAILABLE, and loses
 * nothing: once the database is back every message runs. In early-ack
 * mode the accepted rows no background thread took are still leased
 * rows, so they come back too. */
static void stop_during_outage(int early)
{
    enum { MSGS = 12 };
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, NULL);
    slow s;
    s.n = MSGS;
    s.ids = calloc(MSGS, sizeof *s.ids);
    s.handled = calloc(MSGS, sizeof *s.handled);
    atomic_init(&s.calls, 0);
    sbt_publish_n(bus, "q", MSGS, s.ids);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "q";
    o.handler = slow_handler;
    o.user = &s;
    o.concurrency = 2;
    o.lease_ms = 2000;
    o.empty_poll_ms = 20;
    o.max_poll_ms = 200;
    o.stop_timeout_ms = 20000;
    if (early) {
        o.ack_mode = SB_ACK_AFTER_ENQUEUE;
        o.background_workers = 1;
        o.background_capacity = 6;
        o.drain_timeout_ms = 20000;
    }
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "start");
    for (int i = 0; i < 2000 && atomic_load(&s.calls) < 1; i++)
        sbt_sleep_ms(5);
    int down = cluster("stop");
    /* No assertion until the cluster is back: other tests need it. */
    int64_t t0 = mono_ms();
    sb_error serr;
    int rc = sb_worker_stop(w, &serr);
    int64_t took = mono_ms() - t0;
    sb_worker_free(w);
    int up = cluster("start");
    assert_int_equal(down, 0);
    assert_int_equal(up, 0);
    if (took > o.stop_timeout_ms + 2000)
        fail_msg("stop took %lld ms with a %lld ms budget", (long long)took,
                 (long long)o.stop_timeout_ms);
    if (rc != SB_UNAVAILABLE)
        fail_msg("stop: %s (%s), want SB_UNAVAILABLE", sb_strerror(rc),
                 serr.message);
    assert_non_null(strstr(serr.message, "not written"));
    /* Back: a plain worker finds every message that did not run. */
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "q";
    o.handler = slow_handler;
    o.user = &s;
    o.concurrency = 4;
    o.empty_poll_ms = 20;
    o.max_poll_ms = 200;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "start again");
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop again");
    sb_worker_free(w);
    for (int i = 0; i < MSGS; i++)
        if (atomic_load(&s.handled[i]) < 1)
            fail_msg("message %s never ran: lost in the stop", s.ids[i]);
    assert_int_equal(sbt_count(bus, "q"), 0);
    free(s.ids);
    free(s.handled);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static void test_stop_during_outage(void **state)
{
    (void)state;
    stop_during_outage(0);
}

static void test_stop_during_outage_early_ack(void **state)
{
    (void)state;
    stop_during_outage(1);
}

int main(void)
{
    sbt_init();
    if (!sbt_is_pg()) {
        printf("skipped: only PostgreSQL has a server to restart\n");
        return 77;
    }
    if (getenv("SQLBUS_TEST_PG_DIR") == NULL ||
        getenv("SQLBUS_TEST_PG_DIR")[0] == '\0') {
        printf("skipped: SQLBUS_TEST_PG_DIR not set (cluster not ours)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_under_load),
        cmocka_unit_test(test_stop_during_outage),
        cmocka_unit_test(test_stop_during_outage_early_ack),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
