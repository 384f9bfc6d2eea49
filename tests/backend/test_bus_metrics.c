/*
 * test_bus_metrics.c - rule S8 on every backend: sb_bus_metrics counts
 * what this process published, acked, naked and dead-lettered, per queue
 * (one-shot calls, caller transactions counted only when they commit, and
 * a worker's settlements), its claim and handler latency histograms hold
 * exactly one observation per claim statement and per handler call, and
 * queues past the cap share the "other" bucket, also under concurrent
 * first use; the same counts by message type, a worker handling two
 * types showing both. Then the server's side over the same database: the /metrics
 * scrape (src/server/metrics.c) shows the depth gauges, the counters, the
 * error store's statuses, the ingestion, channel waiters and HTTP counts;
 * and the /api/stats sampler (src/server/stats.c, S6) records depth and
 * throughput points. Last, the oldest xmin holder (P12, G9): the
 * transport names the backend that holds it, in its answer, its log and
 * the scrape.
 */
#include "harness.h"
#include "harness_errors.h"

#include "server/loops.h"
#include "server/metrics.h"
#include "server/stats.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sb_bus_counters *snapshot(sb_bus *bus)
{
    sb_bus_counters *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->size = sizeof *c;
    sb_error err;
    sbt_ok(sb_bus_metrics(bus, c, &err), &err, "sb_bus_metrics");
    return c;
}

static const sb_queue_counts *queue_of(const sb_bus_counters *c, const char *q)
{
    for (size_t i = 0; i < c->n_queues; i++)
        if (strcmp(c->queues[i].queue, q) == 0)
            return &c->queues[i];
    return NULL;
}

static void expect_counts(const sb_bus_counters *c, const char *q,
                          int64_t published, int64_t acked, int64_t naked,
                          int64_t dead)
{
    const sb_queue_counts *k = queue_of(c, q);
    if (k == NULL)
        fail_msg("queue %s not counted", q);
    if (k->published != published || k->acked != acked || k->naked != naked ||
        k->dead_lettered != dead)
        fail_msg("queue %s: published %lld acked %lld naked %lld dead %lld, "
                 "want %lld %lld %lld %lld",
                 q, (long long)k->published, (long long)k->acked,
                 (long long)k->naked, (long long)k->dead_lettered,
                 (long long)published, (long long)acked, (long long)naked,
                 (long long)dead);
}

static void publish(sb_bus *bus, sb_tx *tx, const char *q, const char *body)
{
    sb_outgoing o = {NULL, body, strlen(body), NULL, 0};
    sb_error err;
    sbt_ok(sb_publish(bus, tx, q, &o, NULL, &err), &err, "publish");
}

static int64_t sum_from(const sb_latency_histogram *h, int64_t min_le_us)
{
    int64_t n = 0;
    for (int i = 0; i < SB_METRICS_BUCKETS; i++)
        if (h->le_us[i] >= min_le_us)
            n += h->counts[i];
    return n;
}

/* S8 through the one-shot API and caller transactions. */
static void test_calls_are_counted(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_bus_counters *c0 = snapshot(bus);
    assert_int_equal(c0->n_queues, 0);
    assert_int_equal(c0->claim.count, 0);
    assert_string_equal(c0->dead_letter_queue, "deadletter");
    assert_true(c0->opened_at_us > 0);
    assert_true(c0->claim.le_us[SB_METRICS_BUCKETS - 1] == INT64_MAX);

    sb_outgoing batch[20];
    for (int i = 0; i < 20; i++)
        batch[i] = (sb_outgoing){NULL, "m", 1, NULL, 0};
    sb_error err;
    sbt_ok(sb_publish_batch(bus, NULL, "manual", batch, 20, NULL, &err), &err,
           "batch");
    sb_tx *tx = NULL;
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin");
    for (int i = 0; i < 3; i++)
        publish(bus, tx, "manual", "t");
    /* Not counted before the commit. */
    sb_bus_counters *c1 = snapshot(bus);
    expect_counts(c1, "manual", 20, 0, 0, 0);
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin 2");
    publish(bus, tx, "manual", "gone");
    publish(bus, tx, "manual", "gone");
    sb_tx_rollback(tx); /* never counted */
    /* Refused input is not counted either. */
    sb_outgoing bad = {"not-a-uuid", "x", 1, NULL, 0};
    assert_int_equal(sb_publish(bus, NULL, "manual", &bad, NULL, &err),
                     SB_INVALID);
    sb_bus_counters *c2 = snapshot(bus);
    expect_counts(c2, "manual", 23, 0, 0, 0);
    assert_int_equal(sbt_count(bus, "manual"), 23);

    sb_msg **m = NULL;
    size_t n = 0;
    sbt_ok(sb_claim(bus, "manual", 6, 30000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 6);
    sb_msg **none = NULL;
    size_t n_none = 0;
    sbt_ok(sb_claim(bus, "empty", 5, 30000, &none, &n_none, &err), &err,
           "empty claim");
    assert_int_equal(n_none, 0);
    sbt_ok(sb_ack(bus, NULL, m[0], &err), &err, "ack 0");
    sbt_ok(sb_ack(bus, NULL, m[1], &err), &err, "ack 1");
    assert_int_equal(sb_ack(bus, NULL, m[0], &err), SB_LOST_LEASE);
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin 3");
    sbt_ok(sb_ack(bus, tx, m[2], &err), &err, "tx ack");
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit 3");
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin 4");
    sbt_ok(sb_ack(bus, tx, m[3], &err), &err, "tx ack rolled back");
    sb_tx_rollback(tx);
    sbt_ok(sb_nak(bus, m[3], 0, "again", &err), &err, "nak 3");
    sbt_ok(sb_nak(bus, m[4], 0, NULL, &err), &err, "nak 4");
    sb_failure f = {.size = sizeof f,
                    .reason = "poison",
                    .exception_type = "test:poison",
                    .exception_message = "bad"};
    sbt_ok(sb_dead_letter(bus, m[5], &f, &err), &err, "dead letter");
    assert_int_equal(sb_nak(bus, m[5], 0, NULL, &err), SB_LOST_LEASE);
    sb_msg_free_array(m, n);

    sb_bus_counters *c3 = snapshot(bus);
    expect_counts(c3, "manual", 23, 3, 2, 1);
    /* Two claim statements, each one observation; an empty claim too. */
    assert_int_equal(c3->claim.count, 2);
    int64_t sum = 0;
    for (int i = 0; i < SB_METRICS_BUCKETS; i++)
        sum += c3->claim.counts[i];
    assert_int_equal(sum, 2);
    assert_true(c3->claim.sum_us >= 0);
    assert_int_equal(c3->handler.count, 0);
    /* Dead-lettering counts for the failed queue, not as a publish to
     * the dead-letter queue; the empty claim named a queue but counted
     * nothing for it. */
    assert_null(queue_of(c3, "deadletter"));
    assert_null(queue_of(c3, "empty"));
    assert_int_equal(sbt_count(bus, "manual"), 19);

    /* A short size is refused; NULL arguments too. */
    sb_bus_counters shortc;
    memset(&shortc, 0, sizeof shortc);
    shortc.size = sizeof shortc - 1;
    assert_int_equal(sb_bus_metrics(bus, &shortc, &err), SB_INVALID);
    assert_string_equal(err.field, "size");
    assert_int_equal(sb_bus_metrics(NULL, c3, &err), SB_INVALID);
    assert_int_equal(sb_bus_metrics(bus, NULL, &err), SB_INVALID);
    free(c0);
    free(c1);
    free(c2);
    free(c3);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct calls {
    atomic_int n;
} calls;

static int work_handler(sb_delivery *d, void *user)
{
    calls *c = user;
    atomic_fetch_add(&c->n, 1);
    size_t len = 0;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    if (len == 4 && memcmp(p, "slow", 4) == 0)
        sbt_sleep_ms(30);
    if (len == 4 && memcmp(p, "fail", 4) == 0) {
        sb_delivery_fail(d, "test:fail", "always", NULL);
        return SB_ERROR;
    }
    return SB_OK;
}

static sb_worker *start_worker(sb_bus *bus, const char *q, calls *c)
{
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = q;
    o.handler = work_handler;
    o.user = c;
    o.concurrency = 3;
    o.max_attempts = 2;
    o.redelivery_delay_ms = -1;
    o.empty_poll_ms = 20;
    o.max_poll_ms = 100;
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "worker start");
    return w;
}

/* Publish the worker queue's 10 messages: 3 always fail, 1 is slow. */
static void publish_work(sb_bus *bus, const char *q)
{
    for (int i = 0; i < 10; i++)
        publish(bus, NULL, q, i < 3 ? "fail" : i == 3 ? "slow" : "ok");
}

/* S8 through the worker runtime: settlements counted when their cycle
 * commits; one handler observation per call. */
static void test_worker_is_counted(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    publish_work(bus, "work");
    calls c = {0};
    sb_worker *w = start_worker(bus, "work", &c);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_error err;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    /* 7 acked; 3 naked once, then dead-lettered at attempt 2. */
    assert_int_equal(st.acked, 7);
    assert_int_equal(st.naked, 3);
    assert_int_equal(st.dead_lettered, 3);
    assert_int_equal(atomic_load(&c.n), 13);
    sb_bus_counters *k = snapshot(bus);
    expect_counts(k, "work", 10, 7, 3, 3);
    assert_int_equal(k->handler.count, 13);
    int64_t sum = 0;
    for (int i = 0; i < SB_METRICS_BUCKETS; i++)
        sum += k->handler.counts[i];
    assert_int_equal(sum, 13);
    /* The slow call (30 ms) is in a bucket of 50 ms or more. */
    assert_true(sum_from(&k->handler, 50000) >= 1);
    assert_true(k->handler.sum_us >= 30000);
    /* Every cycle that claimed ran a claim statement: at least one per
     * delivery batch, each observed. */
    assert_true(k->claim.count >= 1);
    assert_int_equal(sbt_count(bus, "deadletter"), 3);
    free(k);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct racer {
    sb_bus *bus;
    int id;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    /* Every thread uses the same 70 queues, in its own order, so first
     * sights race each other. */
    for (int i = 0; i < 70; i++) {
        char q[16];
        snprintf(q, sizeof q, "r%02d", (i * 3 + r->id * 13) % 70);
        sb_outgoing o = {NULL, "x", 1, NULL, 0};
        sb_error err;
        if (sb_publish(r->bus, NULL, q, &o, NULL, &err) != SB_OK)
            return (void *)1;
    }
    return NULL;
}

/* The first 64 queues get their own counts, the rest share `other`;
 * concurrent first sights neither lose a count nor name a queue twice. */
static void test_queue_cap_and_races(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    racer r[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (racer){bus, i};
        assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *ret = NULL;
        pthread_join(t[i], &ret);
        assert_null(ret);
    }
    sb_bus_counters *c = snapshot(bus);
    assert_int_equal(c->n_queues, SB_METRICS_QUEUES);
    int64_t named = 0;
    for (size_t i = 0; i < c->n_queues; i++) {
        assert_int_equal(c->queues[i].published, THREADS);
        named += c->queues[i].published;
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(c->queues[i].queue, c->queues[j].queue);
    }
    assert_int_equal(named + c->other.published, THREADS * 70);
    assert_int_equal(c->other.published, THREADS * (70 - SB_METRICS_QUEUES));
    assert_string_equal(c->other.queue, "");
    free(c);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* ---- the server's scrape and sampler over the same database ---- */

static int send_id(const char *cid, void *user)
{
    (void)cid;
    (void)user;
    return SB_OK;
}

/* The value of the sample `series` in `text` (exact series, then a
 * space), or NULL. */
static const char *sample_value(const char *text, const char *series, char *buf,
                                size_t cap)
{
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') {
            size_t k = strcspn(p + n + 1, "\n");
            snprintf(buf, cap, "%.*s", (int)k, p + n + 1);
            return buf;
        }
    return NULL;
}

static void expect_sample(const char *text, const char *series,
                          const char *want)
{
    char buf[64];
    const char *v = sample_value(text, series, buf, sizeof buf);
    if (v == NULL || strcmp(v, want) != 0)
        fail_msg("%s: %s, want %s\n%s", series, v ? v : "(missing)", want,
                 text);
}

static void wait_ingested(sb_loops *loops, int64_t rows)
{
    for (int i = 0; i < 3000; i++) {
        sb_loops_state st;
        sb__loops_state(loops, &st);
        if (st.rows >= rows)
            return;
        sbt_sleep_ms(10);
    }
    fail_msg("ingestion did not reach %lld rows", (long long)rows);
}

/* ---- by message type ---- */

static void publish_typed(sb_bus *bus, sb_tx *tx, const char *q,
                          const char *body, const char *headers)
{
    sb_outgoing o = {NULL, body, strlen(body), headers, 0};
    sb_error err;
    sbt_ok(sb_publish(bus, tx, q, &o, NULL, &err), &err, "publish typed");
}

static const sb_type_counts *by_type(sb_type_counts **list, size_t n,
                                     const char *q, const char *type)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i]->queue, q) == 0 &&
            strcmp(list[i]->type, type) == 0 && !list[i]->other)
            return list[i];
    return NULL;
}

static void expect_type(sb_type_counts **list, size_t n, const char *q,
                        const char *type, int64_t published, int64_t acked,
                        int64_t naked, int64_t dead, int64_t handled)
{
    const sb_type_counts *t = by_type(list, n, q, type);
    if (t == NULL)
        fail_msg("queue %s type \"%s\" not counted", q, type);
    if (t->published != published || t->acked != acked || t->naked != naked ||
        t->dead_lettered != dead || t->handler.count != handled)
        fail_msg("queue %s type \"%s\": published %lld acked %lld naked "
                 "%lld dead %lld handled %lld, want %lld %lld %lld %lld %lld",
                 q, type, (long long)t->published, (long long)t->acked,
                 (long long)t->naked, (long long)t->dead_lettered,
                 (long long)t->handler.count, (long long)published,
                 (long long)acked, (long long)naked, (long long)dead,
                 (long long)handled);
}

static const char k_order[] = "{\"sb-message-type\":\"Shop.OrderPlaced\"}";
/* NServiceBus's header: the first type, without its assembly. */
static const char k_payment[] =
    "{\"NServiceBus.EnclosedMessageTypes\":\"Shop.Messages."
    "PaymentRequested, Shop.Messages, Version=1.0.0.0, Culture=neutral;"
    "Shop.Messages.IPayment, Shop.Messages\",\"x\":\"y\"}";

/* T43, S8 by message type: a worker handling two types (and untyped messages)
 * counts each type's publishes, acks, naks, dead letters and handler
 * calls, their sum is the queue's; one-shot acks and caller transactions
 * count by type too (at commit, never on rollback); the scrape shows the
 * per-type series beside the unchanged per-queue ones. */
static void test_by_type(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    sb_type_counts **list = NULL;
    size_t n = 99;
    sbt_ok(sb_bus_metrics_by_type(bus, &list, &n, &err), &err, "by type 0");
    assert_int_equal(n, 0);
    assert_null(list);

    for (int i = 0; i < 4; i++)
        publish_typed(bus, NULL, "typed", i == 3 ? "fail" : "ok", k_order);
    publish_typed(bus, NULL, "typed", "ok", k_payment);
    publish_typed(bus, NULL, "typed", "slow", k_payment);
    publish_typed(bus, NULL, "typed", "ok", k_payment);
    publish(bus, NULL, "typed", "ok"); /* no type */
    sb_tx *tx = NULL;
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin");
    publish_typed(bus, tx, "typed", "ok", k_order);
    sbt_ok(sb_bus_metrics_by_type(bus, &list, &n, &err), &err, "by type 1");
    expect_type(list, n, "typed", "Shop.OrderPlaced", 4, 0, 0, 0, 0);
    sb_free(list);
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin 2");
    publish_typed(bus, tx, "typed", "ok",
                  "{\"sb-message-type\":\"Shop.RolledBack\"}");
    sb_tx_rollback(tx);

    calls c = {0};
    sb_worker *w = start_worker(bus, "typed", &c);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);

    /* One-shot acks, one in a caller's transaction. */
    publish_typed(bus, NULL, "oneshot", "a", k_order);
    publish_typed(bus, NULL, "oneshot", "b", k_order);
    sb_msg **m = NULL;
    size_t nm = 0;
    sbt_ok(sb_claim(bus, "oneshot", 2, 30000, &m, &nm, &err), &err, "claim");
    assert_int_equal(nm, 2);
    sbt_ok(sb_ack(bus, NULL, m[0], &err), &err, "ack");
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin 3");
    sbt_ok(sb_ack(bus, tx, m[1], &err), &err, "tx ack");
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit 3");
    sb_msg_free_array(m, nm);

    sbt_ok(sb_bus_metrics_by_type(bus, &list, &n, &err), &err, "by type 2");
    /* 5 orders: 4 acked, the failing one naked then dead at attempt 2
     * (6 handler calls); 3 payments acked; 1 untyped acked. */
    expect_type(list, n, "typed", "Shop.OrderPlaced", 5, 4, 1, 1, 6);
    expect_type(list, n, "typed", "Shop.Messages.PaymentRequested", 3, 3, 0, 0,
                3);
    expect_type(list, n, "typed", "", 1, 1, 0, 0, 1);
    expect_type(list, n, "oneshot", "Shop.OrderPlaced", 2, 2, 0, 0, 0);
    /* The slow payment (30 ms) is in the payments' histogram. */
    const sb_type_counts *pay =
        by_type(list, n, "typed", "Shop.Messages.PaymentRequested");
    assert_true(sum_from(&pay->handler, 50000) >= 1);
    assert_true(pay->handler.sum_us >= 30000);
    /* Rolled back: looked up, never counted, so not listed; dead letters
     * are not publishes to the dead-letter queue. */
    assert_null(by_type(list, n, "typed", "Shop.RolledBack"));
    assert_null(by_type(list, n, "deadletter", "Shop.OrderPlaced"));
    /* Every count of the queue is in exactly one type. */
    sb_bus_counters *k = snapshot(bus);
    expect_counts(k, "typed", 9, 8, 1, 1);
    int64_t sums[5] = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(list[i]->size, sizeof(sb_type_counts));
        if (strcmp(list[i]->queue, "typed") != 0)
            continue;
        sums[0] += list[i]->published;
        sums[1] += list[i]->acked;
        sums[2] += list[i]->naked;
        sums[3] += list[i]->dead_lettered;
        sums[4] += list[i]->handler.count;
    }
    assert_int_equal(sums[0], 9);
    assert_int_equal(sums[1], 8);
    assert_int_equal(sums[2], 1);
    assert_int_equal(sums[3], 1);
    assert_int_equal(sums[4], 10);
    assert_int_equal(k->handler.count, 10);
    free(k);
    sb_free(list);

    /* The scrape: both types' series, the per-queue ones unchanged. */
    sb_buf b;
    sb__buf_init(&b, 4 << 20);
    sbt_ok(sb__metrics_render(NULL, bus, NULL, NULL, NULL, NULL, &b, &err),
           &err, "render");
    const char *t = b.data;
    expect_sample(t, "sqlbus_messages_acked_total{queue=\"typed\"}", "8");
    expect_sample(t,
                  "sqlbus_messages_acked_by_type_total{queue=\"typed\","
                  "type=\"Shop.OrderPlaced\"}",
                  "4");
    expect_sample(t,
                  "sqlbus_messages_acked_by_type_total{queue=\"typed\","
                  "type=\"Shop.Messages.PaymentRequested\"}",
                  "3");
    expect_sample(t,
                  "sqlbus_messages_acked_by_type_total{queue=\"typed\","
                  "type=\"\"}",
                  "1");
    expect_sample(t,
                  "sqlbus_messages_dead_lettered_by_type_total{queue="
                  "\"typed\",type=\"Shop.OrderPlaced\"}",
                  "1");
    expect_sample(t,
                  "sqlbus_messages_published_by_type_total{queue="
                  "\"oneshot\",type=\"Shop.OrderPlaced\"}",
                  "2");
    expect_sample(t,
                  "sqlbus_handler_duration_by_type_seconds_count{queue="
                  "\"typed\",type=\"Shop.OrderPlaced\"}",
                  "6");
    expect_sample(t,
                  "sqlbus_handler_duration_by_type_seconds_bucket{queue="
                  "\"typed\",type=\"Shop.Messages.PaymentRequested\","
                  "le=\"+Inf\"}",
                  "3");
    sb__buf_free(&b);

    assert_int_equal(sb_bus_metrics_by_type(NULL, &list, &n, &err), SB_INVALID);
    assert_int_equal(sb_bus_metrics_by_type(bus, NULL, &n, &err), SB_INVALID);
    assert_int_equal(sb_bus_metrics_by_type(bus, &list, NULL, &err),
                     SB_INVALID);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* S8: GET /metrics as the server renders it. */
static void test_scrape(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    publish_work(e.bus, "work");
    calls c = {0};
    sb_worker *w = start_worker(e.bus, "work", &c);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_worker_free(w);
    for (int i = 0; i < 4; i++)
        publish(e.bus, NULL, "waiting", "w");

    sb_loops_options lo;
    memset(&lo, 0, sizeof lo);
    lo.idle_ms = 20;
    lo.first_sweep_ms = 3600000;
    sb_loops *loops = NULL;
    sb_error err;
    sbt_ok(sb__loops_start(e.bus, e.store, &lo, &loops, &err), &err, "loops");
    wait_ingested(loops, 3);

    /* A live waiter with a registration (C22): one channel waiter. */
    sb_channel_options co;
    memset(&co, 0, sizeof co);
    co.size = sizeof co;
    sb_channel *ch = NULL;
    sbt_ok(sb_channel_open(e.bus, &co, &ch, &err), &err, "channel");
    sb_wait_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.recovery_handler = "billing";
    sb_waiter *waiter = NULL;
    sbt_ok(sb_request(ch, &wo, send_id, NULL, &waiter, &err), &err, "request");

    sb_metrics *m = NULL;
    sbt_ok(sb__metrics_new(&m, &err), &err, "metrics new");
    sb__metrics_http(m, SB_R_METRICS, "/metrics", 200, 1500);
    sb__metrics_http(m, SB_R_METRICS, "/metrics", 200, 20000000);
    sb__metrics_http(m, SB_R_NONE, NULL, 404, 50);
    for (unsigned st = 500; st < 510; st++) /* more statuses than kept */
        sb__metrics_http(m, SB_R_QUEUES, "/api/queues", st, 10);
    sbt_ok(sb_counts_flush(e.bus, &err), &err, "counts flush");
    sb_buf b;
    sb__buf_init(&b, 4 << 20);
    sbt_ok(sb__metrics_render(m, e.bus, e.store, loops, NULL, NULL, &b, &err),
           &err, "render");
    assert_int_equal(b.failed, 0);
    const char *t = b.data;
    expect_sample(t, "sqlbus_queue_ready{queue=\"waiting\"}", "4");
    expect_sample(t, "sqlbus_queue_in_flight{queue=\"waiting\"}", "0");
    expect_sample(t, "sqlbus_messages_published_total{queue=\"work\"}", "10");
    expect_sample(t, "sqlbus_messages_acked_total{queue=\"work\"}", "7");
    expect_sample(t, "sqlbus_messages_naked_total{queue=\"work\"}", "3");
    expect_sample(t, "sqlbus_messages_dead_lettered_total{queue=\"work\"}",
                  "3");
    expect_sample(t, "sqlbus_messages_published_total{queue=\"waiting\"}", "4");
    /* The same counts as every process's, from the counts table. */
    expect_sample(t, "sqlbus_queue_messages_published_total{queue=\"work\"}",
                  "10");
    expect_sample(t, "sqlbus_queue_messages_acked_total{queue=\"work\"}", "7");
    expect_sample(t, "sqlbus_queue_messages_naked_total{queue=\"work\"}", "3");
    expect_sample(
        t, "sqlbus_queue_messages_dead_lettered_total{queue=\"work\"}", "3");
    expect_sample(t, "sqlbus_handler_duration_seconds_count", "13");
    expect_sample(t, "sqlbus_handler_duration_seconds_bucket{le=\"+Inf\"}",
                  "13");
    expect_sample(t, "sqlbus_failed_messages{status=\"unresolved\"}", "3");
    expect_sample(t, "sqlbus_failed_messages{status=\"archived\"}", "0");
    expect_sample(t, "sqlbus_failed_imports", "0");
    expect_sample(t, "sqlbus_ingestion_rows_total", "3");
    expect_sample(t, "sqlbus_ingestion_lag_seconds", "0");
    expect_sample(t, "sqlbus_channel_waiters", "1");
    expect_sample(t, "sqlbus_recovery_registrations{state=\"outstanding\"}",
                  "1");
    expect_sample(t,
                  "sqlbus_http_requests_total{route=\"/metrics\","
                  "status=\"200\"}",
                  "2");
    expect_sample(t,
                  "sqlbus_http_requests_total{route=\"unmatched\","
                  "status=\"404\"}",
                  "1");
    expect_sample(t,
                  "sqlbus_http_requests_total{route=\"/api/queues\","
                  "status=\"other\"}",
                  "2");
    expect_sample(t,
                  "sqlbus_http_request_duration_seconds_bucket{route="
                  "\"/metrics\",le=\"10\"}",
                  "1");
    expect_sample(t,
                  "sqlbus_http_request_duration_seconds_count{route="
                  "\"/metrics\"}",
                  "2");
    expect_sample(t,
                  "sqlbus_http_request_duration_seconds_sum{route="
                  "\"/metrics\"}",
                  "20.0015");
    static const char *const sources[] = {"queues",         "failed_messages",
                                          "failed_imports", "recovery",
                                          "loops",          "counts"};
    for (size_t i = 0; i < 6; i++) {
        char series[96];
        snprintf(series, sizeof series,
                 "sqlbus_scrape_source_up{source=\"%s\"}", sources[i]);
        expect_sample(t, series, "1");
    }
    /* Without a store and loops: their families have no samples. */
    sb__buf_reset(&b);
    sbt_ok(sb__metrics_render(NULL, e.bus, NULL, NULL, NULL, NULL, &b, &err),
           &err, "render bare");
    char buf[64];
    assert_null(sample_value(b.data, "sqlbus_failed_imports", buf, sizeof buf));
    assert_non_null(strstr(b.data, "# TYPE sqlbus_failed_imports gauge\n"));
    expect_sample(b.data, "sqlbus_scrape_source_up{source=\"loops\"}", "0");
    sb__buf_free(&b);
    sb__metrics_free(m);
    sb__metrics_free(NULL);

    sb_waiter_free(waiter);
    sb_channel_close(ch);
    sb__loops_stop(loops);
    sbe_close(&e);
}

/* The sum of `key` over the points of queue `name` in the stats JSON, or
 * -1 when the queue is absent. `max_ready` gets the largest "ready". */
static long long queue_sum(json_t *doc, const char *name, const char *key,
                           long long *max_ready)
{
    json_t *qs = json_object_get(doc, "queues");
    assert_true(json_is_array(qs));
    for (size_t i = 0; i < json_array_size(qs); i++) {
        json_t *q = json_array_get(qs, i);
        if (strcmp(json_string_value(json_object_get(q, "name")), name) != 0)
            continue;
        json_t *pts = json_object_get(q, "points");
        long long sum = 0;
        *max_ready = 0;
        for (size_t j = 0; j < json_array_size(pts); j++) {
            json_t *p = json_array_get(pts, j);
            const char *iso = json_string_value(json_object_get(p, "t"));
            assert_non_null(iso);
            assert_int_equal(strlen(iso), 24); /* 2026-12-01T21:00:00.123Z */
            assert_int_equal(iso[10], 'T');
            assert_int_equal(iso[23], 'Z');
            sum += json_integer_value(json_object_get(p, key));
            long long r = json_integer_value(json_object_get(p, "ready"));
            if (r > *max_ready)
                *max_ready = r;
        }
        return sum;
    }
    return -1;
}

/* S6: the sampler records depth and throughput per interval from the
 * database (the counts table, every process's); a worker's acks and a
 * drained queue show. */
static void test_stats_sampler(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sb_loops_options lo;
    memset(&lo, 0, sizeof lo);
    lo.idle_ms = 20;
    lo.first_sweep_ms = 3600000;
    sb_loops *loops = NULL;
    sb_error err;
    sbt_ok(sb__loops_start(e.bus, e.store, &lo, &loops, &err), &err, "loops");
    sb_stats *s = NULL;
    sb_stats_options so = {.interval_ms = 50};
    assert_int_equal(sb__stats_start(e.bus, e.store, loops, &so, &s, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "interval_ms");
    so.interval_ms = 100;
    sbt_ok(sb__stats_start(e.bus, e.store, loops, &so, &s, &err), &err,
           "stats start");
    for (int i = 0; i < 5; i++)
        publish(e.bus, NULL, "held", "h");
    publish_work(e.bus, "work");
    sbt_sleep_ms(400);
    calls c = {0};
    sb_worker *w = start_worker(e.bus, "work", &c);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_worker_free(w);
    wait_ingested(loops, 3);
    /* The sampler reads the counts table: write this process's share now
     * rather than at the next interval, then let a sample see it. */
    sbt_ok(sb_counts_flush(e.bus, &err), &err, "counts flush");
    sbt_sleep_ms(400);

    sb_buf b;
    sb__buf_init(&b, 8 << 20);
    assert_int_equal(sb__stats_json(s, 0, &b, &err), SB_INVALID);
    assert_string_equal(err.field, "minutes");
    assert_int_equal(sb__stats_json(s, 61, &b, &err), SB_INVALID);
    sbt_ok(sb__stats_json(s, 5, &b, &err), &err, "stats json");
    json_error_t je;
    json_t *doc = json_loads(b.data, 0, &je);
    if (doc == NULL)
        fail_msg("stats JSON does not parse: %s\n%s", je.text, b.data);
    double iv = json_number_value(json_object_get(doc, "interval_s"));
    assert_true(iv > 0.099 && iv < 0.101);
    assert_non_null(json_string_value(json_object_get(doc, "now")));
    long long max_ready = 0;
    /* Every publish is in exactly one point. */
    assert_int_equal(queue_sum(doc, "held", "published", &max_ready), 5);
    assert_int_equal(max_ready, 5);
    assert_int_equal(queue_sum(doc, "work", "published", &max_ready), 10);
    assert_true(max_ready >= 1);
    /* Drained to empty, "work" has no rows, yet its acks are charted. */
    assert_int_equal(queue_sum(doc, "work", "acked", &max_ready), 7);
    json_t *ing = json_object_get(doc, "ingestion");
    long long rows = 0;
    for (size_t i = 0; i < json_array_size(ing); i++)
        rows +=
            json_integer_value(json_object_get(json_array_get(ing, i), "rows"));
    assert_int_equal(rows, 3);
    json_t *failed = json_object_get(doc, "failed");
    assert_true(json_array_size(failed) > 0);
    json_t *last = json_array_get(failed, json_array_size(failed) - 1);
    assert_int_equal(json_integer_value(json_object_get(last, "unresolved")),
                     3);
    assert_int_equal(json_integer_value(json_object_get(last, "archived")), 0);
    json_decref(doc);
    sb__buf_free(&b);

    /* Stopping joins within a second. */
    int64_t t0 = (int64_t)time(NULL);
    sb__stats_stop(s);
    sb__stats_stop(NULL);
    assert_true((int64_t)time(NULL) - t0 <= 2);
    sb__loops_stop(loops);
    sbe_close(&e);
}

/* ---- the oldest xmin holder (P12, G9; docs/backends.md) ---- */

typedef struct xmin_log {
    pthread_mutex_t mu;
    char last[1024];
    int warnings;
} xmin_log;

static void xmin_log_fn(int level, const char *component, const char *message,
                        void *user)
{
    xmin_log *l = user;
    if (level < SB_LOG_WARN || strcmp(component, "transport") != 0 ||
        strstr(message, "holds the oldest xmin") == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    snprintf(l->last, sizeof l->last, "%s", message);
    l->warnings++;
    pthread_mutex_unlock(&l->mu);
}

static int holder_is(sb_bus *bus, int pid, sb_xmin_holder *h)
{
    sb_error err;
    h->size = sizeof *h;
    sbt_ok(sb_xmin_holder_get(bus, 0, h, &err), &err, "sb_xmin_holder_get");
    return h->found && h->pid == pid;
}

/* A second session holds an xid in REPEATABLE READ: sb_xmin_holder_get
 * names its backend (pid, application_name, state), the warning in the
 * bus's log names its pid, and the /metrics scrape shows it; once it
 * commits, it is named no more. SQLite: SB_INVALID naming "bus", and the
 * scrape has the families without samples. */
static void test_xmin_holder_is_named(void **state)
{
    (void)state;
    xmin_log lg;
    memset(&lg, 0, sizeof lg);
    pthread_mutex_init(&lg.mu, NULL);
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.log = xmin_log_fn;
    o.log_user = &lg;
    o.log_level = SB_LOG_WARN;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, &o);
    sb_error err;
    sb_xmin_holder h;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    if (!sbt_is_pg()) {
        h.size = sizeof h;
        assert_int_equal(sb_xmin_holder_get(bus, 0, &h, &err), SB_INVALID);
        assert_string_equal(err.field, "bus");
        sbt_ok(sb__metrics_render(NULL, bus, NULL, NULL, NULL, NULL, &b, &err),
               &err, "render");
        assert_non_null(strstr(
            b.data, "# TYPE sqlbus_postgres_oldest_xmin_age_seconds gauge\n"));
        assert_null(strstr(b.data, "sqlbus_postgres_oldest_xmin_holder_info{"));
        assert_null(strstr(b.data, "source=\"postgres_xmin\""));
        sb__buf_free(&b);
        sbt_drop(bus, prefix);
        sb_close(bus);
        return;
    }
    PGconn *holder = PQconnectdb(sbt_pg_url());
    assert_int_equal(PQstatus(holder), CONNECTION_OK);
    const char *open[] = {"SET application_name = 'sqlbus-xmin-test'",
                          "BEGIN ISOLATION LEVEL REPEATABLE READ",
                          "SELECT txid_current()"};
    for (size_t i = 0; i < 3; i++) {
        PGresult *r = PQexec(holder, open[i]);
        if (PQresultStatus(r) != PGRES_COMMAND_OK &&
            PQresultStatus(r) != PGRES_TUPLES_OK)
            fail_msg("%s: %s", open[i], PQerrorMessage(holder));
        PQclear(r);
    }
    int pid = PQbackendPID(holder);
    /* Newer transactions, so that the holder's xid is the oldest (an
     * autovacuum worker that began before it could hold an older one
     * for a moment: bounded retries, no timing). */
    sbt_publish_n(bus, "xq", 3, NULL);
    int tries = 0;
    while (!holder_is(bus, pid, &h) && ++tries < 100)
        sbt_sleep_ms(100);
    if (!h.found || h.pid != pid)
        fail_msg("holder pid %d not named: found %d, %s pid %d (%s)", pid,
                 h.found, h.kind, h.pid, h.name);
    assert_string_equal(h.kind, "backend");
    assert_string_equal(h.name, "sqlbus-xmin-test");
    assert_string_equal(h.state, "idle in transaction");
    assert_true(h.xmin_age >= 1);
    assert_true(h.age_ms >= 0);

    /* The warning (warn_after_ms 0 warns at once) names the pid. */
    char want[64];
    snprintf(want, sizeof want, "backend pid %d ", pid);
    pthread_mutex_lock(&lg.mu);
    int warned = lg.warnings;
    char last[1024];
    snprintf(last, sizeof last, "%s", lg.last);
    pthread_mutex_unlock(&lg.mu);
    if (warned < 1 || strstr(last, want) == NULL ||
        strstr(last, "sqlbus-xmin-test") == NULL)
        fail_msg("no warning naming '%s': %d warnings, last '%s'", want, warned,
                 last);
    /* Rate-limited: the same holder again within a minute is not. */
    holder_is(bus, pid, &h);
    pthread_mutex_lock(&lg.mu);
    assert_int_equal(lg.warnings, warned);
    pthread_mutex_unlock(&lg.mu);

    /* The scrape names it too. */
    sbt_ok(sb__metrics_render(NULL, bus, NULL, NULL, NULL, NULL, &b, &err),
           &err, "render");
    char series[256];
    snprintf(series, sizeof series,
             "sqlbus_postgres_oldest_xmin_holder_info{kind=\"backend\","
             "pid=\"%d\",name=\"sqlbus-xmin-test\",",
             pid);
    if (strstr(b.data, series) == NULL)
        fail_msg("the scrape has no %s", series);
    snprintf(series, sizeof series,
             "sqlbus_postgres_oldest_xmin_age_transactions{kind=\"backend\","
             "pid=\"%d\"} ",
             pid);
    assert_non_null(strstr(b.data, series));
    snprintf(series, sizeof series,
             "sqlbus_postgres_oldest_xmin_age_seconds{pid=\"%d\"} ", pid);
    assert_non_null(strstr(b.data, series));
    expect_sample(b.data, "sqlbus_scrape_source_up{source=\"postgres_xmin\"}",
                  "1");

    PQclear(PQexec(holder, "COMMIT"));
    tries = 0;
    while (holder_is(bus, pid, &h) && ++tries < 100)
        sbt_sleep_ms(100);
    assert_false(h.found && h.pid == pid);
    PQfinish(holder);
    sb__buf_free(&b);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_are_counted),
        cmocka_unit_test(test_worker_is_counted),
        cmocka_unit_test(test_queue_cap_and_races),
        cmocka_unit_test(test_by_type),
        cmocka_unit_test(test_scrape),
        cmocka_unit_test(test_stats_sampler),
        cmocka_unit_test(test_xmin_holder_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
