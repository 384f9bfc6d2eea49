/*
 * test_heartbeat.c - issue 22, endpoint liveness, on every backend
 * (docs/transport.md, "Endpoint liveness"): a running worker's endpoint
 * appears in {prefix}heartbeats and keeps beating; it is dead at once
 * after a graceful stop, and after the grace when its process vanishes
 * without one; a restart beats the same instance again; mute and removal;
 * liveness off; the option's bounds; and the settings store beside it.
 */
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BEAT_MS 100

static int idle_handler(sb_delivery *d, void *user)
{
    (void)d;
    (void)user;
    return SB_OK;
}

static sb_bus *open_beating(const char *prefix, int64_t interval_ms)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.heartbeat_interval_ms = interval_ms;
    return sbt_open(prefix, &o);
}

static sb_worker *start_worker(sb_bus *bus, const char *queue,
                               const char *endpoint)
{
    sb_worker_options w;
    memset(&w, 0, sizeof w);
    w.size = sizeof w;
    w.queue = queue;
    w.endpoint = endpoint;
    w.handler = idle_handler;
    w.stop_timeout_ms = 2000;
    sb_worker *wk = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, &w, &wk, &err), &err, "worker start");
    return wk;
}

/* The instance of `endpoint`, copied into *out; 0 when not listed. */
static int find(sb_bus *bus, const char *endpoint, sb_heartbeat *out)
{
    sb_heartbeat **h = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_heartbeat_list(bus, &h, &n, &err), &err, "heartbeat list");
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        if (strcmp(h[i]->endpoint, endpoint) == 0) {
            *out = *h[i];
            found = 1;
        }
    }
    sb_free(h);
    return found;
}

typedef enum { LISTED, ALIVE, DEAD, STOPPED, GONE } wanted;

/* Poll (every 20 ms, at most `limit_ms`) until `endpoint` is as wanted. */
static int wait_for(sb_bus *bus, const char *endpoint, wanted w,
                    sb_heartbeat *out, long limit_ms)
{
    for (long waited = 0; waited <= limit_ms; waited += 20) {
        sb_heartbeat h;
        memset(&h, 0, sizeof h);
        int found = find(bus, endpoint, &h);
        int ok = w == GONE     ? !found
                 : !found      ? 0
                 : w == LISTED ? 1
                 : w == ALIVE  ? h.alive
                 : w == DEAD   ? !h.alive
                               : h.stopped_us != 0 && !h.alive;
        if (ok) {
            if (out != NULL)
                *out = h;
            return 1;
        }
        sbt_sleep_ms(20);
    }
    return 0;
}

/* The option's bounds: 0 (the default), -1 (off), 100 ms to 1 h; the
 * error names the field. */
static void test_issue22_interval_bounds(void **state)
{
    (void)state;
    static const int64_t bad[] = {-2, 1, 99, 3600001};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.url = sbt_url();
        o.table_prefix = sbt_new_prefix();
        o.heartbeat_interval_ms = bad[i];
        sb_bus *bus = NULL;
        sb_error err;
        assert_int_equal(sb_open(&o, &bus, &err), SB_INVALID);
        assert_string_equal(err.field, "heartbeat_interval_ms");
        assert_non_null(strstr(err.message, "3600000"));
        assert_null(bus);
    }
    static const int64_t good[] = {-1, 0, 100, 3600000};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        const char *prefix = sbt_new_prefix();
        sb_bus *bus = open_beating(prefix, good[i]);
        sbt_drop(bus, prefix);
        sb_close(bus);
    }
}

/* A worker's endpoint appears at once and keeps beating; its graceful
 * stop makes it dead at once; a worker of it again makes it beat again,
 * the same instance, started anew. */
static void test_issue22_worker_beats_then_stops(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_beating(prefix, BEAT_MS);
    sb_worker *w = start_worker(bus, "hb.orders", "Sales");
    sb_heartbeat h;
    assert_true(wait_for(bus, "Sales", ALIVE, &h, 5000));
    assert_int_equal(h.size, sizeof h);
    assert_int_equal(strlen(h.id), 36);
    assert_int_equal(strlen(h.host_id), 36);
    assert_true(h.host[0] != '\0');
    assert_true(h.pid == (int64_t)getpid());
    assert_true(h.interval_ms == BEAT_MS);
    assert_true(h.monitored);
    assert_true(h.stopped_us == 0);
    assert_true(h.started_us > 0 && h.started_us <= h.last_beat_us);
    assert_true(h.last_beat_us <= h.now_us + 1000000);
    /* It beats on: a later beat, the same start. */
    sb_heartbeat later;
    memset(&later, 0, sizeof later);
    for (int i = 0; i < 100 && later.last_beat_us <= h.last_beat_us; i++) {
        sbt_sleep_ms(BEAT_MS / 2);
        assert_true(find(bus, "Sales", &later));
    }
    assert_true(later.last_beat_us > h.last_beat_us);
    assert_true(later.started_us == h.started_us);
    assert_string_equal(later.id, h.id);
    /* One row per endpoint: a second worker of it adds none, and its
     * stop does not stop the endpoint while the first runs. */
    sb_worker *w2 = start_worker(bus, "hb.refunds", "Sales");
    sb_error err;
    sbt_ok(sb_worker_stop(w2, &err), &err, "stop w2");
    sb_worker_free(w2);
    sbt_sleep_ms(3 * BEAT_MS);
    assert_true(find(bus, "Sales", &later));
    assert_true(later.alive);
    assert_true(later.stopped_us == 0);
    sb_heartbeat **all = NULL;
    size_t n = 0;
    sbt_ok(sb_heartbeat_list(bus, &all, &n, &err), &err, "list");
    assert_int_equal(n, 1);
    sb_free(all);
    /* The last worker's graceful stop: dead at once (well within the
     * grace of 4 intervals, 400 ms, after which it would be dead anyway;
     * the stop itself is what is asserted). */
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    sb_heartbeat stopped;
    assert_true(wait_for(bus, "Sales", STOPPED, &stopped, 5000));
    assert_false(stopped.alive);
    assert_true(stopped.stopped_us >= later.last_beat_us);
    /* A worker of the endpoint again: alive, the stop cleared, a new
     * start, the same id. */
    w = start_worker(bus, "hb.orders", "Sales");
    sb_heartbeat again;
    assert_true(wait_for(bus, "Sales", ALIVE, &again, 5000));
    assert_string_equal(again.id, h.id);
    assert_true(again.stopped_us == 0);
    assert_true(again.started_us > h.started_us);
    /* A worker without an endpoint option beats as its queue. */
    sb_worker *w3 = start_worker(bus, "hb.billing", NULL);
    assert_true(wait_for(bus, "hb.billing", ALIVE, NULL, 5000));
    sbt_ok(sb_worker_stop(w3, &err), &err, "stop w3");
    sb_worker_free(w3);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    /* sb_close marks nothing more: both endpoints were stopped. */
    assert_true(wait_for(bus, "hb.billing", STOPPED, NULL, 5000));
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* A worker stopped before its first beat (a short run, `sqlbus work
 * --once` on an empty queue) still shows: as run and stopped. */
static void test_issue22_short_run_shows_stopped(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_beating(prefix, 60000);
    sb_worker *w = start_worker(bus, "hb.short", "Short");
    sb_error err;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    sb_heartbeat h;
    assert_true(wait_for(bus, "Short", STOPPED, &h, 5000));
    assert_true(h.started_us > 0 && h.stopped_us >= h.started_us);
    assert_true(h.interval_ms == 60000);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* A process that vanishes without a stop (here: _exit in a child) is
 * dead once its last beat is SB_HEARTBEAT_GRACE_INTERVALS intervals old,
 * and not before; its row names it. */
static void test_issue22_vanished_process_goes_dead(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *setup = open_beating(prefix, -1); /* the schema, no beats */
    sb_close(setup);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        /* A bus and a worker of its own, then gone without a word. */
        sb_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.url = sbt_url();
        o.table_prefix = prefix;
        o.heartbeat_interval_ms = 200;
        sb_bus *bus = NULL;
        sb_error err;
        if (sb_open(&o, &bus, &err) != SB_OK)
            _exit(2);
        sb_worker_options w;
        memset(&w, 0, sizeof w);
        w.size = sizeof w;
        w.queue = "hb.vanish";
        w.endpoint = "Vanishing";
        w.handler = idle_handler;
        sb_worker *wk = NULL;
        if (sb_worker_start(bus, &w, &wk, &err) != SB_OK)
            _exit(3);
        usleep(700 * 1000);
        _exit(0);
    }
    sb_bus *bus = open_beating(prefix, -1);
    sb_heartbeat h;
    assert_true(wait_for(bus, "Vanishing", ALIVE, &h, 5000));
    assert_true(h.pid == (int64_t)child);
    assert_true(h.interval_ms == 200);
    int status = 0;
    assert_true(waitpid(child, &status, 0) == child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sb_heartbeat dead;
    assert_true(wait_for(bus, "Vanishing", DEAD, &dead, 10000));
    /* Dead by the grace, not by a stop: no stop was written, and its
     * last beat is over four intervals old by the database's clock. */
    assert_true(dead.stopped_us == 0);
    assert_true(dead.now_us - dead.last_beat_us >
                200 * 1000LL * SB_HEARTBEAT_GRACE_INTERVALS);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Mute and unmute survive beats; removal forgets the instance until its
 * next beat; unknown and malformed ids are refused naming "id". */
static void test_issue22_monitor_and_remove(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_beating(prefix, BEAT_MS);
    sb_worker *w = start_worker(bus, "hb.mute", "Muted");
    sb_heartbeat h;
    assert_true(wait_for(bus, "Muted", ALIVE, &h, 5000));
    sb_error err;
    sbt_ok(sb_heartbeat_monitor(bus, h.id, 0, &err), &err, "mute");
    sbt_sleep_ms(3 * BEAT_MS);
    sb_heartbeat m;
    assert_true(find(bus, "Muted", &m));
    assert_false(m.monitored);
    assert_true(m.alive);
    assert_true(m.last_beat_us > h.last_beat_us);
    /* Upper case is the same id. */
    char upper[37];
    for (size_t i = 0; i < sizeof upper; i++)
        upper[i] =
            (char)(h.id[i] >= 'a' && h.id[i] <= 'f' ? h.id[i] - 32 : h.id[i]);
    sbt_ok(sb_heartbeat_monitor(bus, upper, 1, &err), &err, "unmute");
    assert_true(find(bus, "Muted", &m));
    assert_true(m.monitored);
    sbt_ok(sb_heartbeat_remove(bus, h.id, &err), &err, "remove");
    /* The running worker writes it again, monitored. */
    assert_true(wait_for(bus, "Muted", ALIVE, &m, 5000));
    assert_true(m.monitored);
    assert_int_equal(sb_heartbeat_monitor(
                         bus, "00000000-0000-0000-0000-000000000000", 0, &err),
                     SB_NOTFOUND);
    assert_string_equal(err.field, "id");
    assert_int_equal(
        sb_heartbeat_remove(bus, "00000000-0000-0000-0000-000000000000", &err),
        SB_NOTFOUND);
    assert_string_equal(err.field, "id");
    assert_int_equal(sb_heartbeat_remove(bus, "not-a-uuid", &err), SB_INVALID);
    assert_string_equal(err.field, "id");
    assert_int_equal(sb_heartbeat_monitor(bus, NULL, 1, &err), SB_INVALID);
    assert_string_equal(err.field, "id");
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    /* Removed while stopped: gone, and nothing writes it again. */
    assert_true(wait_for(bus, "Muted", STOPPED, &m, 5000));
    sbt_ok(sb_heartbeat_remove(bus, m.id, &err), &err, "remove stopped");
    sbt_sleep_ms(3 * BEAT_MS);
    assert_true(wait_for(bus, "Muted", GONE, NULL, 0));
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* heartbeat_interval_ms -1: workers run, nothing beats. */
static void test_issue22_off(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_beating(prefix, -1);
    sb_worker *w = start_worker(bus, "hb.quiet", "Quiet");
    sbt_sleep_ms(300);
    sb_heartbeat **h = NULL;
    size_t n = 1;
    sb_error err;
    sbt_ok(sb_heartbeat_list(bus, &h, &n, &err), &err, "list");
    assert_int_equal(n, 0);
    assert_null(h);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct seen {
    char names[8][64];
    char values[8][64];
    int n;
} seen;

static int on_setting(const char *name, const char *value, int64_t updated_us,
                      void *user)
{
    seen *s = user;
    assert_true(updated_us > 0);
    if (s->n < 8) {
        snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
        snprintf(s->values[s->n], sizeof s->values[0], "%s", value);
        s->n++;
    }
    return 0;
}

/* The settings store: put, replace, get, list by prefix in name order,
 * remove; bad names and values refused naming the field. */
static void test_issue22_settings(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_beating(prefix, -1);
    sb_error err;
    char *v = NULL;
    assert_int_equal(sb_setting_get(bus, "notifications.email", &v, NULL, &err),
                     SB_NOTFOUND);
    assert_string_equal(err.field, "name");
    assert_null(v);
    sbt_ok(
        sb_setting_put(bus, "notifications.email", "{\"enabled\":false}", &err),
        &err, "put");
    sbt_ok(
        sb_setting_put(bus, "notifications.email", "{\"enabled\":true}", &err),
        &err, "replace");
    int64_t at = 0;
    sbt_ok(sb_setting_get(bus, "notifications.email", &v, &at, &err), &err,
           "get");
    assert_string_equal(v, "{\"enabled\":true}");
    assert_true(at > 0);
    sb_free(v);
    sbt_ok(
        sb_setting_put(bus, "endpoints.track_instances/Sales", "false", &err),
        &err, "put");
    sbt_ok(sb_setting_put(bus, "endpoints.track_instances/", "true", &err),
           &err, "put");
    sbt_ok(
        sb_setting_put(bus, "endpoints.track_instances/Billing", "true", &err),
        &err, "put");
    seen s;
    memset(&s, 0, sizeof s);
    sbt_ok(sb_setting_list(bus, "endpoints.", on_setting, &s, &err), &err,
           "list");
    assert_int_equal(s.n, 3);
    assert_string_equal(s.names[0], "endpoints.track_instances/");
    assert_string_equal(s.names[1], "endpoints.track_instances/Billing");
    assert_string_equal(s.names[2], "endpoints.track_instances/Sales");
    assert_string_equal(s.values[2], "false");
    memset(&s, 0, sizeof s);
    sbt_ok(sb_setting_list(bus, NULL, on_setting, &s, &err), &err, "list");
    assert_int_equal(s.n, 4);
    sbt_ok(sb_setting_remove(bus, "endpoints.track_instances/Sales", &err),
           &err, "remove");
    assert_int_equal(
        sb_setting_remove(bus, "endpoints.track_instances/Sales", &err),
        SB_NOTFOUND);
    /* Names: 1 to 400 bytes, no control characters; values: 64 KiB of
     * UTF-8. Nothing is stored when refused. */
    assert_int_equal(sb_setting_put(bus, "", "1", &err), SB_INVALID);
    assert_string_equal(err.field, "name");
    assert_int_equal(sb_setting_put(bus, "a\tb", "1", &err), SB_INVALID);
    assert_string_equal(err.field, "name");
    char name[402];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(sb_setting_put(bus, name, "1", &err), SB_INVALID);
    assert_string_equal(err.field, "name");
    assert_int_equal(sb_setting_put(bus, "x", NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "value");
    assert_int_equal(sb_setting_put(bus, "x", "\xff", &err), SB_INVALID);
    assert_string_equal(err.field, "value");
    char *big = malloc(SB_SETTING_VALUE_MAX + 2);
    assert_non_null(big);
    memset(big, 'v', SB_SETTING_VALUE_MAX + 1);
    big[SB_SETTING_VALUE_MAX + 1] = '\0';
    assert_int_equal(sb_setting_put(bus, "x", big, &err), SB_INVALID);
    assert_string_equal(err.field, "value");
    big[SB_SETTING_VALUE_MAX] = '\0'; /* exactly the cap: stored whole */
    sbt_ok(sb_setting_put(bus, "x", big, &err), &err, "put at the cap");
    sbt_ok(sb_setting_get(bus, "x", &v, NULL, &err), &err, "get");
    assert_int_equal(strlen(v), SB_SETTING_VALUE_MAX);
    sb_free(v);
    free(big);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    /* A child that vanishes must not take the test with it. */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue22_interval_bounds),
        cmocka_unit_test(test_issue22_worker_beats_then_stops),
        cmocka_unit_test(test_issue22_short_run_shows_stopped),
        cmocka_unit_test(test_issue22_vanished_process_goes_dead),
        cmocka_unit_test(test_issue22_monitor_and_remove),
        cmocka_unit_test(test_issue22_off),
        cmocka_unit_test(test_issue22_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
