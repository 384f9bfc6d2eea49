/*
 * test_schedule.c - rule T41, periodic jobs, on every backend
 * (docs/transport.md, "Queue features"): schedules stored, replaced,
 * listed and removed; schedulers in two buses racing for the same
 * occurrences publish each once; the missed policies after downtime;
 * cron expressions read in their time zone; bad input refused with
 * nothing stored. Every instant is passed in, so nothing sleeps.
 */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000LL
#define MIN (60 * SEC)

/* Now, in whole minutes (microseconds since the epoch). */
static int64_t this_minute(void)
{
    return (int64_t)time(NULL) / 60 * MIN;
}

static sb_schedule_def def_every(const char *name, const char *queue,
                                 int64_t every_ms, int64_t start_us)
{
    sb_schedule_def d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.name = name;
    d.queue = queue;
    d.every_ms = every_ms;
    d.payload = "tick";
    d.payload_len = 4;
    d.start_us = start_us;
    return d;
}

static int run_due(sb_bus *bus, int64_t now_us, int64_t *wake)
{
    int published = 0;
    sb_error err;
    sbt_ok(sb_schedule_run_due(bus, now_us, &published, wake, &err), &err,
           "run_due");
    return published;
}

/* The messages of `queue` (at most 500), peeked. */
static size_t peek_all(sb_bus *bus, const char *queue, sb_msg ***out)
{
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_peek(bus, queue, 0, 500, out, &n, &err), &err, "peek");
    return n;
}

static const sb_schedule_info *find_schedule(sb_schedule_info **s, size_t n,
                                             const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->name, name) == 0)
            return s[i];
    return NULL;
}

typedef struct racer {
    sb_bus *bus;
    int64_t t0;
    int published;
} racer;

/* A scheduler stepping through 10.5 s of simulated time in 100 ms steps. */
static void *race(void *arg)
{
    racer *r = arg;
    for (int k = 0; k <= 105; k++)
        r->published += run_due(r->bus, r->t0 + k * 100000LL, NULL);
    return NULL;
}

typedef struct consumer {
    sb_bus *bus;
    volatile int stop;
    long acked;
    char seen[64][37];
} consumer;

/* Claims and acks what the schedulers publish, as a worker would: an
 * occurrence published again after its message was consumed would show
 * up as an eleventh message. */
static void *consume(void *arg)
{
    consumer *c = arg;
    for (;;) {
        int stopping = c->stop;
        sb_msg **got = NULL;
        size_t n = 0;
        sb_error err;
        sbt_ok(sb_claim(c->bus, "ticks", 10, 30000, &got, &n, &err), &err,
               "claim");
        for (size_t i = 0; i < n; i++) {
            if (c->acked < 64)
                memcpy(c->seen[c->acked], sb_msg_id(got[i]), 37);
            c->acked++;
            sbt_ok(sb_ack(c->bus, NULL, got[i], &err), &err, "ack");
        }
        sb_msg_free_array(got, n);
        if (stopping && n == 0)
            return NULL;
        if (n == 0)
            sbt_sleep_ms(5);
    }
}

/* T41: two schedulers (two buses, as two processes would have) step
 * through the same ten seconds at once while a consumer acks what they
 * publish: every occurrence is published exactly once, whichever
 * scheduler gets there first, with distinct ids. */
static void test_t41_two_schedulers_publish_once(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *a = sbt_open(prefix, NULL);
    sb_bus *b = sbt_open(prefix, NULL);
    sb_bus *w = sbt_open(prefix, NULL);
    int64_t t0 = this_minute();
    sb_schedule_def d = def_every("every-second", "ticks", 1000, t0);
    sb_error err;
    sbt_ok(sb_schedule_put(a, &d, &err), &err, "put");
    racer ra = {a, t0, 0}, rb = {b, t0, 0};
    consumer c;
    memset(&c, 0, sizeof c);
    c.bus = w;
    pthread_t ta, tb, tc;
    pthread_create(&tc, NULL, consume, &c);
    pthread_create(&ta, NULL, race, &ra);
    pthread_create(&tb, NULL, race, &rb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    c.stop = 1;
    pthread_join(tc, NULL);
    /* Occurrences t0 + 1 s ... t0 + 10 s: ten, once each. */
    assert_int_equal(ra.published + rb.published, 10);
    assert_int_equal(c.acked, 10);
    for (int i = 0; i < 10; i++)
        for (int j = i + 1; j < 10; j++)
            assert_string_not_equal(c.seen[i], c.seen[j]);
    /* Stepping again over the same time publishes nothing: the
     * occurrences are recorded, not only their messages. */
    assert_int_equal(run_due(a, t0 + 10 * SEC, NULL), 0);
    assert_int_equal(run_due(b, t0 + 5 * SEC, NULL), 0);
    int64_t wake = 0;
    assert_int_equal(run_due(b, t0 + 10 * SEC + 500000, &wake), 0);
    assert_true(wake == t0 + 11 * SEC);
    sb_schedule_info **s = NULL;
    size_t n = 0;
    sbt_ok(sb_schedule_list(b, &s, &n, &err), &err, "list");
    assert_int_equal(n, 1);
    assert_true(s[0]->last_us == t0 + 10 * SEC);
    assert_true(s[0]->next_us == t0 + 11 * SEC);
    sb_free(s);
    sbt_drop(a, prefix);
    sb_close(w);
    sb_close(b);
    sb_close(a);
}

/* T41: the id of an occurrence's message is the same for every
 * scheduler (a name-based UUID of the schedule and the occurrence), so
 * an occurrence published twice while its message waits is one message
 * (T9): the schedule replaced with a start before the occurrence names
 * it again, and the queue still holds one. */
static void test_t41_deterministic_id(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    int64_t t0 = this_minute();
    sb_schedule_def d = def_every("job", "ids", 60000, t0);
    sb_error err;
    sbt_ok(sb_schedule_put(bus, &d, &err), &err, "put");
    assert_int_equal(run_due(bus, t0 + MIN + SEC, NULL), 1);
    sbt_ok(sb_schedule_put(bus, &d, &err), &err, "put again");
    assert_int_equal(run_due(bus, t0 + MIN + 2 * SEC, NULL), 1);
    sb_msg **m = NULL;
    size_t n = peek_all(bus, "ids", &m);
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_header(m[0], "sb-schedule"), "job");
    assert_non_null(sb_msg_header(m[0], "sb-schedule-occurrence"));
    assert_null(sb_msg_header(m[0], "sb-schedule-missed-until"));
    sb_msg_free_array(m, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T41: after downtime, `skip` publishes only the occurrence that is on
 * time and `once` one message for all the missed ones (keyed by the
 * first, with sb-schedule-missed-until naming the last) and then the one
 * on time. A cron schedule and an interval behave alike. */
static void test_t41_missed_skip_once(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    int64_t t0 = this_minute();
    sb_schedule_def skip = def_every("skip", "q-skip", 0, t0);
    skip.cron = "* * * * *";
    sb_schedule_def once = def_every("once", "q-once", 60000, t0);
    once.missed = SB_SCHEDULE_MISSED_ONCE;
    sb_error err;
    sbt_ok(sb_schedule_put(bus, &skip, &err), &err, "put skip");
    sbt_ok(sb_schedule_put(bus, &once, &err), &err, "put once");
    assert_int_equal(run_due(bus, t0 + 30 * SEC, NULL), 0);
    /* Down from t0 + 30 s to t0 + 10 min + 5 s: the occurrences of
     * minutes 1 to 9 are more than the grace late, minute 10's on time. */
    int64_t wake = 0;
    assert_int_equal(run_due(bus, t0 + 10 * MIN + 5 * SEC, &wake), 3);
    assert_true(wake == t0 + 11 * MIN);
    sb_msg **m = NULL;
    size_t n = peek_all(bus, "q-skip", &m);
    assert_int_equal(n, 1);
    char want[64];
    time_t secs = (time_t)((t0 + 10 * MIN) / SEC);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
    assert_string_equal(sb_msg_header(m[0], "sb-schedule-occurrence"), want);
    sb_msg_free_array(m, n);
    n = peek_all(bus, "q-once", &m);
    assert_int_equal(n, 2);
    int folded = 0, on_time = 0;
    for (size_t i = 0; i < n; i++) {
        const char *at = sb_msg_header(m[i], "sb-schedule-occurrence");
        const char *until = sb_msg_header(m[i], "sb-schedule-missed-until");
        if (until != NULL) {
            folded++;
            secs = (time_t)((t0 + MIN) / SEC);
            gmtime_r(&secs, &tm);
            strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
            assert_string_equal(at, want);
            secs = (time_t)((t0 + 9 * MIN) / SEC);
            gmtime_r(&secs, &tm);
            strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
            assert_string_equal(until, want);
        } else {
            on_time++;
        }
    }
    assert_int_equal(folded, 1);
    assert_int_equal(on_time, 1);
    sb_msg_free_array(m, n);
    /* Nothing more is due until minute 11. */
    assert_int_equal(run_due(bus, t0 + 10 * MIN + 50 * SEC, NULL), 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T41: a cron expression is read in its schedule's zone: 02:30 every day
 * in Europe/Berlin, across the night 2:30 does not exist (2026-03-29,
 * clocks jump from 02:00 to 03:00 CET to CEST), runs at 03:00 CEST, 01:00
 * UTC; and 09:00 on a winter day is 08:00 UTC. Skipped without the
 * system's tz database. */
static void test_t41_time_zone(void **state)
{
    (void)state;
    if (access("/usr/share/zoneinfo/Europe/Berlin", R_OK) != 0)
        skip();
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    /* 2026-03-28T12:00:00Z and 2026-01-10T00:00:00Z. */
    int64_t march = 1774699200LL * SEC, january = 1768003200LL * SEC;
    sb_schedule_def gap = def_every("gap", "tz", 0, march);
    gap.cron = "30 2 * * *";
    gap.time_zone = "Europe/Berlin";
    sb_schedule_def winter = def_every("winter", "tz", 0, january);
    winter.cron = "0 9 * * *";
    winter.time_zone = "Europe/Berlin";
    sb_error err;
    sbt_ok(sb_schedule_put(bus, &gap, &err), &err, "put gap");
    sbt_ok(sb_schedule_put(bus, &winter, &err), &err, "put winter");
    sb_schedule_info **s = NULL;
    size_t n = 0;
    sbt_ok(sb_schedule_list(bus, &s, &n, &err), &err, "list");
    assert_int_equal(n, 2);
    const sb_schedule_info *g = find_schedule(s, n, "gap");
    const sb_schedule_info *wi = find_schedule(s, n, "winter");
    assert_non_null(g);
    assert_non_null(wi);
    assert_true(g->next_us == 1774746000LL * SEC); /* 2026-03-29T01:00Z */
    assert_string_equal(g->time_zone, "Europe/Berlin");
    assert_string_equal(g->cron, "30 2 * * *");
    assert_true(wi->next_us == 1768032000LL * SEC); /* 2026-01-10T08:00Z */
    sb_free(s);
    /* At 07:59:59 UTC nothing is due; at 08:00:01 the 09:00 is. */
    assert_int_equal(run_due(bus, 1768031999LL * SEC, NULL), 0);
    assert_int_equal(run_due(bus, 1768032001LL * SEC, NULL), 1);
    sb_msg **m = NULL;
    n = peek_all(bus, "tz", &m);
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_header(m[0], "sb-schedule"), "winter");
    assert_string_equal(sb_msg_header(m[0], "sb-schedule-occurrence"),
                        "2026-01-10T08:00:00.000000Z");
    sb_msg_free_array(m, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Put `d` and expect SB_INVALID naming `field`, its message saying
 * `says` (the limit). */
static void refused(sb_bus *bus, const sb_schedule_def *d, const char *field,
                    const char *says)
{
    sb_error err;
    int rc = sb_schedule_put(bus, d, &err);
    if (rc != SB_INVALID || strcmp(err.field, field) != 0 ||
        strstr(err.message, says) == NULL)
        fail_msg("expected SB_INVALID naming %s saying \"%s\", got %d naming "
                 "%s: %s",
                 field, says, rc, err.field, err.message);
}

/* T41: bad input is SB_INVALID naming the field and its limit, and
 * changes nothing stored: a schedule refused as a replacement keeps its
 * old definition. Removing a schedule that is not there is SB_NOTFOUND. */
static void test_t41_bad_input(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.max_payload_bytes = 64;
    sb_bus *bus = sbt_open(prefix, &o);
    int64_t t0 = this_minute();
    sb_schedule_def good = def_every("kept", "q", 5000, t0);
    sb_error err;
    sbt_ok(sb_schedule_put(bus, &good, &err), &err, "put");

    sb_schedule_def d = def_every("kept", "q", 5000, t0);
    d.name = "";
    refused(bus, &d, "name", "1 to 200 bytes");
    d.name = " lead";
    refused(bus, &d, "name", "white space");
    d = def_every("kept", " q", 5000, t0);
    refused(bus, &d, "queue", "white space");
    d = def_every("kept", "q", 0, t0);
    refused(bus, &d, "cron", "cron expression or every_ms");
    d.cron = "0 24 * * *";
    refused(bus, &d, "cron", "0-23");
    d.cron = "0 0 30 2 *"; /* never occurs */
    refused(bus, &d, "cron", "never occurs");
    d.cron = "* * * * *";
    d.every_ms = 1000;
    refused(bus, &d, "every_ms", "not both");
    d = def_every("kept", "q", 999, t0);
    refused(bus, &d, "every_ms", "1000 (1 s)");
    d.every_ms = 367LL * 86400 * 1000;
    refused(bus, &d, "every_ms", "366 days");
    d = def_every("kept", "q", 5000, t0);
    d.time_zone = "Europe/Berlin";
    refused(bus, &d, "time_zone", "cron expression");
    d = def_every("kept", "q", 0, t0);
    d.cron = "@daily";
    d.time_zone = "Nowhere/Atlantis";
    refused(bus, &d, "time_zone", "unknown time zone");
    d.time_zone = "../etc/passwd";
    refused(bus, &d, "time_zone", "may not contain \"..\"");
    d = def_every("kept", "q", 5000, t0);
    d.missed = 7;
    refused(bus, &d, "missed", "SB_SCHEDULE_MISSED_ONCE");
    d = def_every("kept", "q", 5000, t0);
    d.payload = "01234567890123456789012345678901234567890123456789012345678901"
                "234567890";
    d.payload_len = strlen(d.payload);
    refused(bus, &d, "payload", "max_payload_bytes is 64");
    d = def_every("kept", "q", 5000, t0);
    d.headers_json = "[1]";
    refused(bus, &d, "headers", "");
    d = def_every("kept", "q", 5000, t0);
    d.size = 8;
    refused(bus, &d, "size", "sizeof(sb_schedule_def)");

    sb_schedule_info **s = NULL;
    size_t n = 0;
    sbt_ok(sb_schedule_list(bus, &s, &n, &err), &err, "list");
    assert_int_equal(n, 1);
    assert_string_equal(s[0]->name, "kept");
    assert_string_equal(s[0]->queue, "q");
    assert_true(s[0]->every_ms == 5000);
    assert_string_equal(s[0]->cron, "");
    assert_int_equal(s[0]->missed, SB_SCHEDULE_MISSED_SKIP);
    assert_true(s[0]->last_us == t0);
    assert_true(s[0]->next_us == t0 + 5 * SEC);
    sb_free(s);
    assert_int_equal(sb_schedule_remove(bus, "absent", &err), SB_NOTFOUND);
    assert_string_equal(err.field, "name");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T41: a schedule replaced takes its new definition whole (its
 * occurrences count from the new start); removed, it publishes no more. */
static void test_t41_replace_remove(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    int64_t t0 = this_minute();
    sb_schedule_def d = def_every("r", "q1", 10000, t0);
    sb_error err;
    sbt_ok(sb_schedule_put(bus, &d, &err), &err, "put");
    sb_schedule_def e = def_every("r", "q2", 0, t0 + 5 * SEC);
    e.cron = "*/5 * * * *";
    e.missed = SB_SCHEDULE_MISSED_ONCE;
    e.headers_json = "{\"sb-message-type\": \"Tick\"}";
    sbt_ok(sb_schedule_put(bus, &e, &err), &err, "replace");
    sb_schedule_info **s = NULL;
    size_t n = 0;
    sbt_ok(sb_schedule_list(bus, &s, &n, &err), &err, "list");
    assert_int_equal(n, 1);
    assert_string_equal(s[0]->queue, "q2");
    assert_string_equal(s[0]->cron, "*/5 * * * *");
    assert_string_equal(s[0]->time_zone, "UTC");
    assert_true(s[0]->every_ms == 0);
    assert_int_equal(s[0]->missed, SB_SCHEDULE_MISSED_ONCE);
    assert_true(s[0]->payload_len == 4);
    assert_true(s[0]->last_us == t0 + 5 * SEC);
    int64_t first = (t0 / (5 * MIN) + 1) * 5 * MIN;
    assert_true(s[0]->next_us == first);
    sb_free(s);
    assert_int_equal(run_due(bus, first + SEC, NULL), 1);
    sb_msg **m = NULL;
    n = peek_all(bus, "q2", &m);
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_header(m[0], "sb-message-type"), "Tick");
    sb_msg_free_array(m, n);
    sbt_ok(sb_schedule_remove(bus, "r", &err), &err, "remove");
    assert_int_equal(run_due(bus, first + 5 * MIN + SEC, NULL), 0);
    assert_int_equal(sb_schedule_remove(bus, "r", &err), SB_NOTFOUND);
    sbt_ok(sb_schedule_list(bus, &s, &n, &err), &err, "list");
    assert_int_equal(n, 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_t41_two_schedulers_publish_once),
        cmocka_unit_test(test_t41_deterministic_id),
        cmocka_unit_test(test_t41_missed_skip_once),
        cmocka_unit_test(test_t41_time_zone),
        cmocka_unit_test(test_t41_bad_input),
        cmocka_unit_test(test_t41_replace_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
