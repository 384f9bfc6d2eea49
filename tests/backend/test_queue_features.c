/*
 * test_queue_features.c - the queue features of issue 21 on every
 * backend (docs/transport.md, "Queue features"): priorities (T34) and
 * pause/resume (T35), limits (T36), unique keys (T38), cancellation
 * (T39), expiry (T40), progress (T42).
 * Each test
 * names the rules it proves.
 */
#include "harness.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Publish one message with `priority`; its payload is `text`. */
static void publish_prio(sb_bus *bus, const char *queue, const char *text,
                         int priority)
{
    sb_outgoing_ex m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.msg.payload = text;
    m.msg.payload_len = strlen(text);
    m.priority = priority;
    sb_error err;
    sbt_ok(sb_publish_ex(bus, NULL, queue, &m, 1, NULL, &err), &err,
           "publish_ex");
}

/* The payloads of up to `max` claimed messages, in claim order, joined by
 * spaces into `out`; the messages are acked. */
static void claim_order(sb_bus *bus, const char *queue, int max, char *out,
                        size_t cap)
{
    sb_msg **got = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, queue, max, 30000, &got, &n, &err), &err, "claim");
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *p = sb_msg_payload(got[i], &len);
        k += (size_t)snprintf(out + k, cap - k, "%s%.*s", i ? " " : "",
                              (int)len, p);
        sbt_ok(sb_ack(bus, NULL, got[i], &err), &err, "ack");
    }
    sb_msg_free_array(got, n);
}

static const sb_queue_stats *find_queue(sb_queue_stats **s, size_t n,
                                        const char *queue)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->queue, queue) == 0)
            return s[i];
    return NULL;
}

/* Whether `queue` is listed prioritized (-1: not listed). */
static int listed_prioritized(sb_bus *bus, const char *queue)
{
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_list(bus, &s, &n, &err), &err, "queue list");
    const sb_queue_stats *q = find_queue(s, n, queue);
    int r = q == NULL ? -1 : q->prioritized;
    sb_free(s);
    return r;
}

/* T34: within a queue, higher priorities are claimed first, equal ones in
 * time order; negative priorities after 0. A queue none of whose messages
 * had a priority is not flagged, and claims in time order. */
static void test_priority_order(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    publish_prio(bus, "plain", "a", 0);
    publish_prio(bus, "plain", "b", 0);
    assert_int_equal(listed_prioritized(bus, "plain"), 0);
    char got[256];
    claim_order(bus, "plain", 10, got, sizeof got);
    assert_string_equal(got, "a b");

    static const struct {
        const char *text;
        int prio;
    } in[] = {{"p0", 0},
              {"p5a", 5},
              {"n1", -1},
              {"p5b", 5},
              {"p10", 10},
              {"p0b", 0},
              {"max", SB_PRIORITY_MAX}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        publish_prio(bus, "jobs", in[i].text, in[i].prio);
    assert_int_equal(listed_prioritized(bus, "jobs"), 1);
    claim_order(bus, "jobs", 3, got, sizeof got);
    assert_string_equal(got, "max p10 p5a");
    claim_order(bus, "jobs", 10, got, sizeof got);
    assert_string_equal(got, "p5b p0 p0b n1");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* A batch of two messages "x" without options, for the input tests. */
static void two_messages(sb_outgoing_ex m[2])
{
    memset(m, 0, 2 * sizeof *m);
    for (int i = 0; i < 2; i++) {
        m[i].size = sizeof m[0];
        m[i].msg.payload = "x";
        m[i].msg.payload_len = 1;
    }
}

/* T34, T9, T11: the publish checks every priority and size before it
 * writes anything; a batch is all or nothing; an id published again is
 * success and changes nothing, its priority included. */
static void test_priority_input(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_outgoing_ex m[2];
    two_messages(m);
    m[1].priority = SB_PRIORITY_MAX + 1;
    sb_error err;
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].priority");
    assert_non_null(strstr(err.message, "32767"));
    m[1].priority = SB_PRIORITY_MIN - 1;
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    m[1].priority = 3;
    m[1].size = sizeof m[1] + 8;
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].size");
    m[0].size = 4;
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 1, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[0].size");
    assert_int_equal(sbt_count(bus, "q"), 0);
    assert_int_equal(listed_prioritized(bus, "q"), -1);
    /* Ingestion reads the dead-letter queue at priority 0 only. */
    m[0].size = m[1].size = sizeof m[0];
    assert_int_equal(sb_publish_ex(bus, NULL, "deadletter", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].priority");
    assert_non_null(strstr(err.message, "dead-letter queue"));
    assert_int_equal(sbt_count(bus, "deadletter"), 0);

    /* Published again by id: one row, its first priority. */
    m[0].msg.id = "0190a0a0-0000-7000-8000-000000000001";
    m[0].priority = 7;
    char ids[1][37];
    sbt_ok(sb_publish_ex(bus, NULL, "q", m, 1, ids, &err), &err, "first");
    m[0].priority = -7;
    sbt_ok(sb_publish_ex(bus, NULL, "q", m, 1, ids, &err), &err, "again");
    assert_string_equal(ids[0], m[0].msg.id);
    assert_int_equal(sbt_count(bus, "q"), 1);
    publish_prio(bus, "q", "other", 0);
    char got[128];
    claim_order(bus, "q", 10, got, sizeof got);
    assert_string_equal(got, "x other");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T34, T12: a priority published in the caller's transaction exists, and
 * flags the queue, only if the transaction commits. */
static void test_priority_in_transaction(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_outgoing_ex m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.msg.payload = "t";
    m.msg.payload_len = 1;
    m.priority = 2;
    sb_error err;
    sb_tx *tx = NULL;
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin");
    sbt_ok(sb_publish_ex(bus, tx, "q", &m, 1, NULL, &err), &err, "publish");
    sb_tx_rollback(tx);
    assert_int_equal(sbt_count(bus, "q"), 0);
    assert_int_equal(listed_prioritized(bus, "q"), -1);
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin");
    sbt_ok(sb_publish_ex(bus, tx, "q", &m, 1, NULL, &err), &err, "publish");
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
    assert_int_equal(sbt_count(bus, "q"), 1);
    assert_int_equal(listed_prioritized(bus, "q"), 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct order_log {
    pthread_mutex_t mu;
    char text[512];
    size_t len;
    int handled;
} order_log;

static int logging_handler(sb_delivery *d, void *user)
{
    order_log *l = user;
    size_t len = 0;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    pthread_mutex_lock(&l->mu);
    l->len += (size_t)snprintf(l->text + l->len, sizeof l->text - l->len,
                               "%s%.*s", l->len ? " " : "", (int)len, p);
    l->handled++;
    pthread_mutex_unlock(&l->mu);
    return SB_OK;
}

static int handled(order_log *l)
{
    pthread_mutex_lock(&l->mu);
    int n = l->handled;
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* The options of one handler thread on `queue` polling at least every
 * 100 ms; callers set what their test needs on top. */
static void one_handler(sb_worker_options *o, const char *queue,
                        sb_handler_fn fn, void *user)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->queue = queue;
    o->handler = fn;
    o->user = user;
    o->concurrency = 1;
    o->max_poll_ms = 100;
}

static sb_worker *start_opts(sb_bus *bus, const sb_worker_options *o)
{
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, o, &w, &err), &err, "worker start");
    return w;
}

static sb_worker *start_worker(sb_bus *bus, const char *queue, order_log *l)
{
    sb_worker_options o;
    one_handler(&o, queue, logging_handler, l);
    o.prefetch = -1;
    return start_opts(bus, &o);
}

/* T34 through the worker runtime: one handler takes a prioritized
 * queue's messages highest first. */
static void test_priority_worker(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    publish_prio(bus, "q", "low", -3);
    publish_prio(bus, "q", "mid", 0);
    publish_prio(bus, "q", "high", 9);
    order_log l = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0};
    sb_worker *w = start_worker(bus, "q", &l);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_error err;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    assert_string_equal(l.text, "high mid low");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T35: a paused queue accepts publishes and gives nothing to sb_claim or
 * to any worker; a worker with nothing in hand is idle (`work --once`
 * exits); resumed, the worker takes the messages without a restart. The
 * settings are per queue, and listed. */
static void test_pause_resume(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    assert_int_equal(sb_queue_pause(bus, "bad\nname", &err), SB_INVALID);
    assert_string_equal(err.field, "queue");
    sbt_ok(sb_queue_pause(bus, "q", &err), &err, "pause");
    sbt_ok(sb_queue_pause(bus, "q", &err), &err, "pause again");
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_list(bus, &s, &n, &err), &err, "list");
    const sb_queue_stats *q = find_queue(s, n, "q");
    assert_non_null(q); /* listed with no messages */
    assert_int_equal(q->paused, 1);
    assert_int_equal(q->ready, 0);
    sb_free(s);

    sbt_publish_n(bus, "q", 3, NULL);
    sbt_publish_n(bus, "other", 1, NULL);
    sb_msg **got = NULL;
    sbt_ok(sb_claim(bus, "q", 10, 30000, &got, &n, &err), &err, "claim");
    assert_int_equal(n, 0);
    sb_msg_free_array(got, n);
    char text[64];
    claim_order(bus, "other", 10, text, sizeof text);
    assert_string_equal(text, "m0");

    order_log l = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0};
    sb_worker *w = start_worker(bus, "q", &l);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sbt_sleep_ms(SB_SETTINGS_REFRESH_MS + 500);
    assert_int_equal(handled(&l), 0);
    assert_int_equal(sbt_count(bus, "q"), 3);

    sbt_ok(sb_queue_resume(bus, "q", &err), &err, "resume");
    for (int i = 0; i < 600 && handled(&l) < 3; i++)
        sbt_sleep_ms(50);
    assert_int_equal(handled(&l), 3);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    sbt_ok(sb_queue_list(bus, &s, &n, &err), &err, "list");
    q = find_queue(s, n, "q");
    assert_non_null(q);
    assert_int_equal(q->paused, 0);
    sb_free(s);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T35 while a worker runs: pausing stops its claims within a settings
 * refresh; the message it holds finishes and is acked. */
static void test_pause_running_worker(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    order_log l = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0};
    sb_worker *w = start_worker(bus, "q", &l);
    sbt_publish_n(bus, "q", 1, NULL);
    for (int i = 0; i < 600 && handled(&l) < 1; i++)
        sbt_sleep_ms(50);
    assert_int_equal(handled(&l), 1);
    sb_error err;
    sbt_ok(sb_queue_pause(bus, "q", &err), &err, "pause");
    sbt_sleep_ms(SB_SETTINGS_REFRESH_MS + 500);
    sbt_publish_n(bus, "q", 2, NULL);
    sbt_sleep_ms(1000);
    assert_int_equal(handled(&l), 1);
    assert_int_equal(sbt_count(bus, "q"), 2);
    sbt_ok(sb_queue_resume(bus, "q", &err), &err, "resume");
    for (int i = 0; i < 600 && handled(&l) < 3; i++)
        sbt_sleep_ms(50);
    assert_int_equal(handled(&l), 3);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* The dead letters of `queue` with reason `reason`, and the original id
 * of the last one in `orig` (when not NULL). */
static size_t letters(sb_bus *bus, const char *queue, const char *reason,
                      char *orig)
{
    sb_dlq_filter f;
    memset(&f, 0, sizeof f);
    f.size = sizeof f;
    f.failed_queue = queue;
    sb_msg **m = NULL;
    size_t n = 0, k = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, &f, &m, &n, &err), &err, "dlq list");
    for (size_t i = 0; i < n; i++) {
        const char *why = sb_msg_header(m[i], "sb-dead-letter-reason");
        if (why == NULL || strcmp(why, reason) != 0)
            continue;
        k++;
        const char *id = sb_msg_header(m[i], "sb-message-id");
        if (orig != NULL && id != NULL)
            snprintf(orig, 37, "%s", id);
    }
    sb_msg_free_array(m, n);
    return k;
}

/* The cancelled dead letters of `queue` (T39). */
static size_t cancelled_letters(sb_bus *bus, const char *queue, char *orig)
{
    return letters(bus, queue, "cancelled", orig);
}

/* T39: a ready and a delayed message are cancelled by id: each is
 * dead-lettered at once with reason "cancelled" and leaves the queue; a
 * second cancel finds nothing (SB_NOTFOUND); a bad id, a bad queue and
 * the dead-letter queue itself are refused naming the field. */
static void test_cancel_waiting(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    char ids[2][37];
    sbt_publish_n(bus, "q", 2, ids);
    sb_outgoing later;
    memset(&later, 0, sizeof later);
    later.payload = "later";
    later.payload_len = 5;
    later.delay_ms = 3600000;
    char delayed[37];
    sb_error err;
    sbt_ok(sb_publish(bus, NULL, "q", &later, delayed, &err), &err,
           "publish delayed");
    int outcome = 0;
    sbt_ok(sb_cancel(bus, "q", ids[0], &outcome, &err), &err, "cancel ready");
    assert_int_equal(outcome, SB_CANCEL_WAITING);
    sbt_ok(sb_cancel(bus, "q", delayed, &outcome, &err), &err,
           "cancel delayed");
    assert_int_equal(outcome, SB_CANCEL_WAITING);
    assert_int_equal(sbt_count(bus, "q"), 1);
    assert_int_equal(cancelled_letters(bus, "q", NULL), 2);
    assert_int_equal(sb_cancel(bus, "q", ids[0], &outcome, &err), SB_NOTFOUND);
    assert_string_equal(err.field, "id");
    /* Another queue's message is not this queue's to cancel. */
    assert_int_equal(sb_cancel(bus, "other", ids[1], NULL, &err), SB_NOTFOUND);
    assert_int_equal(sb_cancel(bus, "q", "not-a-uuid", NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "id");
    assert_int_equal(sb_cancel(bus, " q", ids[1], NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "queue");
    assert_int_equal(sb_cancel(bus, "deadletter", ids[1], NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "queue");
    assert_int_equal(sbt_count(bus, "q"), 1); /* the refusals changed nothing */
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct cancel_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, saw_cancel;
} cancel_gate;

/* Runs until its delivery says it was cancelled (at most 20 s), then
 * returns SB_OK: the ack that follows must be refused. */
static int until_cancelled(sb_delivery *d, void *user)
{
    cancel_gate *g = user;
    pthread_mutex_lock(&g->mu);
    g->started = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < 2000 && !sb_delivery_cancelled(d); i++)
        sbt_sleep_ms(10);
    pthread_mutex_lock(&g->mu);
    g->saw_cancel = sb_delivery_cancelled(d);
    pthread_mutex_unlock(&g->mu);
    return SB_OK;
}

/* T39 for a running message: the cancel dead-letters it at once; the
 * handler sees sb_delivery_cancelled at its next lease renewal, and its
 * ack is refused (counted as a lost lease, never as acked). */
static void test_cancel_running(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    char id[1][37];
    sbt_publish_n(bus, "q", 1, id);
    cancel_gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    sb_worker_options o;
    one_handler(&o, "q", until_cancelled, &g);
    o.lease_ms = 900; /* renewed every 300 ms */
    o.empty_poll_ms = 20;
    sb_worker *w = start_opts(bus, &o);
    sb_error err;
    pthread_mutex_lock(&g.mu);
    while (!g.started)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    int outcome = 0;
    sbt_ok(sb_cancel(bus, "q", id[0], &outcome, &err), &err, "cancel");
    assert_int_equal(outcome, SB_CANCEL_RUNNING);
    assert_int_equal(sbt_count(bus, "q"), 0);
    char orig[37] = "";
    assert_int_equal(cancelled_letters(bus, "q", orig), 1);
    assert_string_equal(orig, id[0]);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(g.saw_cancel, 1);
    assert_int_equal(st.acked, 0);
    assert_int_equal(st.lost_leases, 1);
    assert_int_equal(cancelled_letters(bus, "q", NULL), 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* The progress peek shows for the first message of `queue` ("" when it
 * has none; "-" when the queue is empty). */
static void peek_progress(sb_bus *bus, const char *queue, char *out, size_t cap)
{
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_peek(bus, queue, 0, 10, &m, &n, &err), &err, "peek");
    const char *p = n > 0 ? sb_msg_progress(m[0]) : "-";
    snprintf(out, cap, "%s", p ? p : "");
    sb_msg_free_array(m, n);
}

/* T42 through sb_set_progress: stored on the claimed message, fenced by
 * its lease, shown by peek, cleared by a nak; text only, capped; a
 * message without a lease is refused. */
static void test_progress_claimed(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 1, NULL);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, "q", 1, 30000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    char seen[SB_MAX_PROGRESS + 1];
    peek_progress(bus, "q", seen, sizeof seen);
    assert_string_equal(seen, "");
    sbt_ok(sb_set_progress(bus, m[0], "3 of 10", 7, &err), &err, "progress");
    peek_progress(bus, "q", seen, sizeof seen);
    assert_string_equal(seen, "3 of 10");
    static char big[SB_MAX_PROGRESS + 1];
    memset(big, 'x', sizeof big);
    assert_int_equal(sb_set_progress(bus, m[0], big, sizeof big, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "text");
    assert_int_equal(sb_set_progress(bus, m[0], "\xff\xfe", 2, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "text");
    sbt_ok(sb_set_progress(bus, m[0], big, SB_MAX_PROGRESS, &err), &err,
           "progress at the cap");
    peek_progress(bus, "q", seen, sizeof seen);
    assert_int_equal(strlen(seen), SB_MAX_PROGRESS);
    sbt_ok(sb_nak(bus, m[0], 0, "again", &err), &err, "nak");
    peek_progress(bus, "q", seen, sizeof seen);
    assert_string_equal(seen, "");
    /* The nak ended the lease: the fence refuses what comes after. */
    assert_int_equal(sb_set_progress(bus, m[0], "late", 4, &err),
                     SB_LOST_LEASE);
    sb_msg **peeked = NULL;
    sbt_ok(sb_queue_peek(bus, "q", 0, 1, &peeked, &n, &err), &err, "peek");
    assert_int_equal(n, 1);
    assert_int_equal(sb_set_progress(bus, peeked[0], "x", 1, &err), SB_MISUSE);
    sb_msg_free_array(peeked, n);
    sb_msg_free_array(m, 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Reports progress, then holds until the gate opens and fails (a nak). */
static int progress_then_fail(sb_delivery *d, void *user)
{
    cancel_gate *g = user;
    sb_error err;
    int bad = sb_delivery_progress(d, "\xc3", 1, &err) != SB_INVALID;
    int ok = sb_delivery_progress(d, "half way", 8, &err) == SB_OK;
    pthread_mutex_lock(&g->mu);
    g->started = ok && !bad ? 1 : -1;
    pthread_cond_broadcast(&g->cv);
    while (!g->saw_cancel)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return SB_ERROR;
}

/* T42 from a worker's handler: sb_delivery_progress on a job without a
 * requester stores the progress (text only), peek shows it while the
 * handler runs, and the nak of its failure clears it. */
static void test_progress_worker(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 1, NULL);
    cancel_gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    sb_worker_options o;
    one_handler(&o, "q", progress_then_fail, &g);
    o.max_attempts = 5;
    o.redelivery_delay_ms = 3600000;
    sb_worker *w = start_opts(bus, &o);
    sb_error err;
    pthread_mutex_lock(&g.mu);
    while (g.started == 0)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    assert_int_equal(g.started, 1);
    char seen[64];
    peek_progress(bus, "q", seen, sizeof seen);
    assert_string_equal(seen, "half way");
    pthread_mutex_lock(&g.mu);
    g.saw_cancel = 1; /* here: the handler may return */
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(st.naked, 1);
    peek_progress(bus, "q", seen, sizeof seen);
    assert_string_equal(seen, "");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Publish `text` to `queue` expiring `expires_ms` after the publish (0:
 * never); its id into `id`. */
static void publish_expiring(sb_bus *bus, const char *queue, const char *text,
                             int64_t expires_ms, char id[37])
{
    sb_outgoing_ex m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.msg.payload = text;
    m.msg.payload_len = strlen(text);
    m.expires_in_ms = expires_ms;
    char ids[1][37];
    sb_error err;
    sbt_ok(sb_publish_ex(bus, NULL, queue, &m, 1, ids, &err), &err,
           "publish expiring");
    if (id != NULL)
        memcpy(id, ids[0], 37);
}

/* The expired dead letters of `queue` (T40). */
static size_t expired_letters(sb_bus *bus, const char *queue, char *orig)
{
    return letters(bus, queue, "expired", orig);
}

/* T40: a message past its own expiry is never handed to a consumer: the
 * claim that finds it dead-letters it with reason "expired" in its own
 * transaction and returns the others; a message not yet expired, and one
 * without an expiry, are claimed as usual. Peek shows the expiry. */
static void test_expiry_claim(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    char soon[37];
    publish_expiring(bus, "q", "soon", 100, soon);
    publish_expiring(bus, "q", "later", 3600000, NULL);
    publish_expiring(bus, "q", "never", 0, NULL);
    sb_msg **got = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_peek(bus, "q", 0, 10, &got, &n, &err), &err, "peek");
    assert_int_equal(n, 3);
    int with_expiry = 0;
    for (size_t i = 0; i < n; i++)
        with_expiry += sb_msg_expires_at_us(got[i]) > 0;
    assert_int_equal(with_expiry, 2);
    sb_msg_free_array(got, n);
    sbt_sleep_ms(300);
    char order[64];
    claim_order(bus, "q", 10, order, sizeof order);
    assert_string_equal(order, "later never");
    char orig[37] = "";
    assert_int_equal(expired_letters(bus, "q", orig), 1);
    assert_string_equal(orig, soon);
    assert_int_equal(sbt_count(bus, "q"), 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T40: the sweep (sb_queue_expire) dead-letters expired messages no
 * consumer claims, and leaves a held one to its consumer, whose ack
 * still counts; a queue's time to live expires its waiting messages,
 * those published before it was set too, and is listed. */
static void test_expiry_sweep_and_ttl(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    publish_expiring(bus, "s", "soon", 100, NULL);
    publish_expiring(bus, "s", "never", 0, NULL);
    publish_expiring(bus, "held", "held", 200, NULL);
    sb_msg **got = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, "held", 1, 30000, &got, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    sbt_publish_n(bus, "t", 2, NULL);
    sbt_ok(sb_queue_set_ttl(bus, "t", 150, &err), &err, "ttl");
    sbt_sleep_ms(350);
    sbt_publish_n(bus, "t", 1, NULL); /* younger than the queue's ttl */
    size_t expired = 0;
    sbt_ok(sb_queue_expire(bus, 1000, &expired, &err), &err, "expire");
    assert_int_equal(expired, 3);
    assert_int_equal(expired_letters(bus, "s", NULL), 1);
    assert_int_equal(expired_letters(bus, "t", NULL), 2);
    assert_int_equal(sbt_count(bus, "s"), 1);
    assert_int_equal(sbt_count(bus, "t"), 1);
    sbt_ok(sb_ack(bus, NULL, got[0], &err), &err, "ack of the held one");
    sb_msg_free_array(got, n);
    assert_int_equal(expired_letters(bus, "held", NULL), 0);
    sbt_ok(sb_queue_expire(bus, 1000, &expired, &err), &err, "expire again");
    assert_int_equal(expired, 0);

    sb_queue_stats **qs = NULL;
    sbt_ok(sb_queue_list(bus, &qs, &n, &err), &err, "list");
    assert_int_equal(find_queue(qs, n, "t")->ttl_ms, 150);
    sb_free(qs);
    sbt_ok(sb_queue_set_ttl(bus, "t", 0, &err), &err, "ttl off");
    sbt_ok(sb_queue_list(bus, &qs, &n, &err), &err, "list");
    assert_int_equal(find_queue(qs, n, "t")->ttl_ms, 0);
    sb_free(qs);

    assert_int_equal(sb_queue_set_ttl(bus, "t", -1, &err), SB_INVALID);
    assert_string_equal(err.field, "ttl_ms");
    assert_int_equal(sb_queue_set_ttl(bus, "t", SB_TTL_MAX_MS + 1, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "ttl_ms");
    assert_int_equal(sb_queue_set_ttl(bus, "deadletter", 1000, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "queue");
    assert_int_equal(sb_queue_expire(bus, 0, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "max");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T40: bad expiries are refused naming the message's field and the
 * limit, and nothing of the batch is stored; a caller whose struct ends
 * before expires_in_ms (an older build) is never read past its size. */
static void test_expiry_input(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_outgoing_ex m[2];
    two_messages(m);
    sb_error err;
    const int64_t bad[] = {-1, SB_TTL_MAX_MS + 1};
    for (size_t i = 0; i < 2; i++) {
        m[1].expires_in_ms = bad[i];
        assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                         SB_INVALID);
        assert_string_equal(err.field, "msgs[1].expires_in_ms");
    }
    m[1].expires_in_ms = 1000;
    m[1].msg.delay_ms = 1000; /* would expire before it is due */
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].expires_in_ms");
    assert_non_null(strstr(err.message, "delay_ms"));
    m[1].msg.delay_ms = 0;
    assert_int_equal(sb_publish_ex(bus, NULL, "deadletter", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].expires_in_ms");
    assert_int_equal(sbt_count(bus, "q"), 0);

    sb_outgoing_ex old;
    memset(&old, 0, sizeof old);
    old.size = offsetof(sb_outgoing_ex, expires_in_ms);
    old.msg.payload = "old";
    old.msg.payload_len = 3;
    old.expires_in_ms = -5; /* past its size: not read */
    sbt_ok(sb_publish_ex(bus, NULL, "q", &old, 1, NULL, &err), &err,
           "publish with an older size");
    sb_msg **got = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_peek(bus, "q", 0, 10, &got, &n, &err), &err, "peek");
    assert_int_equal(n, 1);
    assert_int_equal(sb_msg_expires_at_us(got[0]), 0);
    sb_msg_free_array(got, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T40 through the worker runtime: an expired message it claims is
 * dead-lettered without running its handler, counted as dead; the
 * others run. */
static void test_expiry_worker(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    publish_expiring(bus, "w", "stale", 100, NULL);
    sbt_sleep_ms(300);
    publish_expiring(bus, "w", "fresh", 0, NULL);
    order_log l;
    memset(&l, 0, sizeof l);
    pthread_mutex_init(&l.mu, NULL);
    sb_worker *w = start_worker(bus, "w", &l);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sb_error err;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_string_equal(l.text, "fresh");
    assert_int_equal(st.acked, 1);
    assert_int_equal(st.dead_lettered, 1);
    assert_int_equal(expired_letters(bus, "w", NULL), 1);
    assert_int_equal(sbt_count(bus, "w"), 0);
    pthread_mutex_destroy(&l.mu);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Publish `text` to `queue` with unique key `key` under `policy` (and
 * `window_ms`); the result code, the id into `id` (when not NULL). */
static int publish_keyed(sb_bus *bus, const char *queue, const char *text,
                         const char *key, int policy, int64_t window_ms,
                         char id[37], sb_error *err)
{
    sb_outgoing_ex m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.msg.payload = text;
    m.msg.payload_len = strlen(text);
    m.unique_key = key;
    m.unique_policy = policy;
    m.unique_window_ms = window_ms;
    char ids[1][37];
    int rc = sb_publish_ex(bus, NULL, queue, &m, 1, ids, err);
    if (id != NULL && rc == SB_OK)
        memcpy(id, ids[0], 37);
    return rc;
}

/* T38: a refused publish names the field and the message holding the
 * key. */
static void assert_held(int rc, const sb_error *err, const char *holder)
{
    assert_int_equal(rc, SB_CONFLICT);
    assert_string_equal(err->field, "msgs[0].unique_key");
    assert_non_null(strstr(err->message, holder));
}

/* T38, policy active (the default): a key is held while its message
 * waits and while a consumer runs it, and free once it is acked; the
 * holder published again by its own id is T9's duplicate, not a
 * conflict; another queue's key is another key. */
static void test_unique_active(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    char a[37], b[37];
    sbt_ok(
        publish_keyed(bus, "q", "a", "order-1", SB_UNIQUE_ACTIVE, 0, a, &err),
        &err, "publish a");
    assert_held(
        publish_keyed(bus, "q", "b", "order-1", SB_UNIQUE_ACTIVE, 0, b, &err),
        &err, a);
    sbt_ok(publish_keyed(bus, "other", "b", "order-1", SB_UNIQUE_ACTIVE, 0, b,
                         &err),
           &err, "the same key in another queue");
    sb_outgoing_ex again;
    memset(&again, 0, sizeof again);
    again.size = sizeof again;
    again.msg.id = a;
    again.msg.payload = "a";
    again.msg.payload_len = 1;
    again.unique_key = "order-1";
    sbt_ok(sb_publish_ex(bus, NULL, "q", &again, 1, NULL, &err), &err,
           "the holder again by its id (T9)");
    assert_int_equal(sbt_count(bus, "q"), 1);
    sb_msg **got = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_peek(bus, "q", 0, 10, &got, &n, &err), &err, "peek");
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_unique_key(got[0]), "order-1");
    sb_msg_free_array(got, n);
    sbt_ok(sb_claim(bus, "q", 1, 30000, &got, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    assert_held(
        publish_keyed(bus, "q", "b", "order-1", SB_UNIQUE_ACTIVE, 0, b, &err),
        &err, a);
    sbt_ok(sb_ack(bus, NULL, got[0], &err), &err, "ack");
    sb_msg_free_array(got, n);
    sbt_ok(
        publish_keyed(bus, "q", "b", "order-1", SB_UNIQUE_ACTIVE, 0, b, &err),
        &err, "free once acked");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T38, policy queued: the key is held only while a message waits; once
 * a consumer has it, one more may wait. Cancelling by the key (T39)
 * dead-letters both, the running one and the waiting one. */
static void test_unique_queued_and_cancel(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    char a[37], b[37];
    sbt_ok(publish_keyed(bus, "q", "a", "sync", SB_UNIQUE_QUEUED, 0, a, &err),
           &err, "publish a");
    assert_held(
        publish_keyed(bus, "q", "b", "sync", SB_UNIQUE_QUEUED, 0, b, &err),
        &err, a);
    sb_msg **got = NULL;
    size_t n = 0;
    sbt_ok(sb_claim(bus, "q", 1, 30000, &got, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    sbt_ok(publish_keyed(bus, "q", "b", "sync", SB_UNIQUE_QUEUED, 0, b, &err),
           &err, "one may wait while one runs");
    assert_held(
        publish_keyed(bus, "q", "c", "sync", SB_UNIQUE_QUEUED, 0, NULL, &err),
        &err, b);
    size_t cancelled = 0;
    sbt_ok(sb_cancel_key(bus, "q", "sync", &cancelled, &err), &err,
           "cancel by key");
    assert_int_equal(cancelled, 2);
    assert_int_equal(cancelled_letters(bus, "q", NULL), 2);
    assert_int_equal(sb_ack(bus, NULL, got[0], &err), SB_LOST_LEASE);
    sb_msg_free_array(got, n);
    assert_int_equal(sb_cancel_key(bus, "q", "sync", &cancelled, &err),
                     SB_NOTFOUND);
    assert_string_equal(err.field, "unique_key");
    assert_int_equal(sb_cancel_key(bus, "q", "", &cancelled, &err), SB_INVALID);
    assert_string_equal(err.field, "unique_key");
    assert_int_equal(sb_cancel_key(bus, "deadletter", "sync", NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "queue");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T38, policy window: the key is held for the window after a publish,
 * also once its message is settled; then it is free again. */
static void test_unique_window(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    char a[37];
    sbt_ok(
        publish_keyed(bus, "q", "a", "daily", SB_UNIQUE_WINDOW, 400, a, &err),
        &err, "publish a");
    sb_msg **got = NULL;
    size_t n = 0;
    sbt_ok(sb_claim(bus, "q", 1, 30000, &got, &n, &err), &err, "claim");
    sbt_ok(sb_ack(bus, NULL, got[0], &err), &err, "ack");
    sb_msg_free_array(got, n);
    assert_held(publish_keyed(bus, "q", "b", "daily", SB_UNIQUE_WINDOW, 400,
                              NULL, &err),
                &err, a);
    /* A policy without a window does not look at the window. */
    sbt_ok(
        publish_keyed(bus, "q", "c", "daily", SB_UNIQUE_ACTIVE, 0, NULL, &err),
        &err, "active ignores the window");
    sbt_ok(sb_cancel_key(bus, "q", "daily", NULL, &err), &err, "cancel c");
    char count[160];
    snprintf(count, sizeof count,
             "SELECT count(*) FROM %sunique_keys WHERE queue = $1", prefix);
    assert_int_equal(sbt_native_scalar(count, "q"), 1);
    sbt_sleep_ms(600);
    size_t expired = 0;
    sbt_ok(sb_queue_expire(bus, 10, &expired, &err), &err, "the sweep");
    assert_int_equal(sbt_native_scalar(count, "q"), 0); /* pruned */
    sbt_ok(publish_keyed(bus, "q", "d", "daily", SB_UNIQUE_WINDOW, 400, NULL,
                         &err),
           &err, "free after the window");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct race {
    sb_bus *bus;
    pthread_barrier_t *go;
    int rc;
} race;

static void *race_publish(void *arg)
{
    race *r = arg;
    pthread_barrier_wait(r->go);
    sb_error err;
    r->rc = publish_keyed(r->bus, "q", "x", "the-one", SB_UNIQUE_ACTIVE, 0,
                          NULL, &err);
    return NULL;
}

/* T38: publishers racing with one key, on one bus and on another: exactly
 * one stores a message, every other is refused with SB_CONFLICT. */
static void test_unique_race(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_bus *other = sbt_open(prefix, NULL);
    enum { N = 8 };
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    race r[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        r[i] = (race){i % 2 ? other : bus, &go, -1};
        pthread_create(&t[i], NULL, race_publish, &r[i]);
    }
    int stored = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        stored += r[i].rc == SB_OK;
        refused += r[i].rc == SB_CONFLICT;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(stored, 1);
    assert_int_equal(refused, N - 1);
    assert_int_equal(sbt_count(bus, "q"), 1);
    sb_close(other);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T38: a batch whose keys collide, or whose key, policy or window is bad,
 * is refused naming the message's field and the limit; nothing of it is
 * stored, and the dead-letter queue takes no keys. */
static void test_unique_input(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_outgoing_ex m[2];
    two_messages(m);
    m[0].unique_key = m[1].unique_key = "same";
    sb_error err;
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_CONFLICT);
    assert_string_equal(err.field, "msgs[1].unique_key");
    char long_key[SB_UNIQUE_KEY_MAX + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    const char *bad[] = {"", long_key, "tab\there", "\xff\xfe"};
    for (size_t i = 0; i < 4; i++) {
        m[1].unique_key = bad[i];
        assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                         SB_INVALID);
        assert_string_equal(err.field, "msgs[1].unique_key");
    }
    m[1].unique_key = "other";
    m[1].unique_policy = 7;
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].unique_policy");
    m[1].unique_policy = SB_UNIQUE_WINDOW; /* without its window */
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].unique_window_ms");
    m[1].unique_policy = SB_UNIQUE_ACTIVE;
    m[1].unique_window_ms = 1000; /* a window without its policy */
    assert_int_equal(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[1].unique_window_ms");
    m[1].unique_window_ms = 0;
    assert_int_equal(sb_publish_ex(bus, NULL, "deadletter", m, 2, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[0].unique_key");
    assert_int_equal(sbt_count(bus, "q"), 0);
    sbt_ok(sb_publish_ex(bus, NULL, "q", m, 2, NULL, &err), &err,
           "two keys in one batch");
    assert_int_equal(sbt_count(bus, "q"), 2);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* ---- T36: per-queue concurrency and rate limits ---- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_limits(sb_bus *bus, const char *queue, int max_running,
                       int rate_limit, int64_t rate_interval_ms)
{
    sb_queue_limits l = {sizeof l, max_running, rate_limit, rate_interval_ms};
    sb_error err;
    sbt_ok(sb_queue_set_limits(bus, queue, &l, &err), &err, "set limits");
}

/* Fail unless `n` claims in `ms` fit a full bucket of `rate` tokens
 * refilled at `rate` per `every_ms` since. */
static void rate_bound(size_t n, int64_t rate, int64_t every_ms, int64_t ms)
{
    if ((int64_t)n > rate + rate * ms / every_ms)
        fail_msg("%zu claims in %lld ms at %lld per %lld ms", n, (long long)ms,
                 (long long)rate, (long long)every_ms);
}

/* Claim up to `max` of `queue` and ack them: how many were claimed. */
static size_t claim_ack(sb_bus *bus, const char *queue, int max)
{
    sb_msg **got = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, queue, max, 30000, &got, &n, &err), &err, "claim");
    for (size_t i = 0; i < n; i++)
        sbt_ok(sb_ack(bus, NULL, got[i], &err), &err, "ack");
    sb_msg_free_array(got, n);
    return n;
}

/* Handlers of any worker running at once, the most seen, and the total. */
typedef struct running_log {
    pthread_mutex_t mu;
    int now, most, total;
} running_log;

static int counting_handler(sb_delivery *d, void *user)
{
    (void)d;
    running_log *r = user;
    pthread_mutex_lock(&r->mu);
    if (++r->now > r->most)
        r->most = r->now;
    pthread_mutex_unlock(&r->mu);
    sbt_sleep_ms(20);
    pthread_mutex_lock(&r->mu);
    r->now--;
    r->total++;
    pthread_mutex_unlock(&r->mu);
    return SB_OK;
}

static int running_total(running_log *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->total;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* T36: max_running holds across workers of two buses (two processes'
 * worth of connections), each with more handlers and prefetch than the
 * limit: never more than 3 handlers run at once, and every message is
 * handled. */
static void test_limit_running_workers(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *a = sbt_open(prefix, NULL), *b = sbt_open(prefix, NULL);
    set_limits(a, "q", 3, 0, 0);
    sbt_publish_n(a, "q", 40, NULL);
    running_log r = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    sb_worker_options o;
    one_handler(&o, "q", counting_handler, &r);
    o.concurrency = 4;
    o.empty_poll_ms = 20;
    sb_worker *wa = start_opts(a, &o), *wb = start_opts(b, &o);
    for (int i = 0; i < 1200 && running_total(&r) < 40; i++)
        sbt_sleep_ms(50);
    sb_error err;
    sbt_ok(sb_worker_stop(wa, &err), &err, "stop a");
    sbt_ok(sb_worker_stop(wb, &err), &err, "stop b");
    sb_worker_free(wa);
    sb_worker_free(wb);
    assert_int_equal(r.total, 40);
    assert_true(r.most >= 1);
    assert_true(r.most <= 3);
    assert_int_equal(sbt_count(a, "q"), 0);
    sb_close(b);
    sbt_drop(a, prefix);
    sb_close(a);
}

/* T36 through sb_claim: with max_running 2, a claim of 10 takes 2 and
 * the next takes nothing until one of them is settled; the limit is
 * listed. */
static void test_limit_running_claim(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    set_limits(bus, "q", 2, 0, 0);
    sbt_publish_n(bus, "q", 5, NULL);
    sb_msg **got = NULL, **more = NULL;
    size_t n = 0, m = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, "q", 10, 30000, &got, &n, &err), &err, "claim");
    assert_int_equal(n, 2);
    sbt_ok(sb_claim(bus, "q", 10, 30000, &more, &m, &err), &err, "claim");
    assert_int_equal(m, 0);
    sb_msg_free_array(more, m);
    sbt_ok(sb_ack(bus, NULL, got[0], &err), &err, "ack");
    sbt_ok(sb_claim(bus, "q", 10, 30000, &more, &m, &err), &err, "claim");
    assert_int_equal(m, 1);
    sbt_ok(sb_ack(bus, NULL, more[0], &err), &err, "ack");
    sbt_ok(sb_ack(bus, NULL, got[1], &err), &err, "ack");
    sb_msg_free_array(more, m);
    sb_msg_free_array(got, n);
    assert_int_equal(claim_ack(bus, "q", 10), 2);
    assert_int_equal(sbt_count(bus, "q"), 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T36: a rate limit of 5 a second: however fast the claims come, they
 * take no more than the full bucket plus what refilled since the limit
 * was set; after a pause the bucket has refilled. Only upper bounds are
 * timed (a slow machine claims less, never more). */
static void test_limit_rate_claim(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 60, NULL);
    int64_t t0 = mono_ms();
    set_limits(bus, "q", 0, 5, 1000);
    size_t total = 0;
    while (mono_ms() - t0 < 600) {
        total += claim_ack(bus, "q", 10);
        rate_bound(total, 5, 1000, mono_ms() - t0);
    }
    assert_true(total >= 5); /* the bucket starts full */
    sbt_sleep_ms(1100);      /* five tokens or more refilled */
    size_t again = claim_ack(bus, "q", 10);
    assert_true(again >= 1);
    assert_true(again <= 5); /* the bucket holds five at most */
    total += again;
    rate_bound(total, 5, 1000, mono_ms() - t0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T36 through the worker runtime: a rate of 10 a second is delivered at
 * that pace (the worker does not back off into its idle polls) and
 * never faster. */
static void test_limit_rate_worker(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 100, NULL);
    int64_t t0 = mono_ms();
    set_limits(bus, "q", 0, 10, 1000);
    order_log l;
    memset(&l, 0, sizeof l);
    pthread_mutex_init(&l.mu, NULL);
    sb_worker_options o;
    one_handler(&o, "q", logging_handler, &l);
    o.concurrency = 4;
    o.max_poll_ms = 2000;
    sb_worker *w = start_opts(bus, &o);
    int seen = 0;
    for (int i = 0; i < 600 && seen < 25; i++) {
        sbt_sleep_ms(50);
        seen = handled(&l);
        rate_bound((size_t)seen, 10, 1000, mono_ms() - t0);
    }
    assert_true(seen >= 25);
    sb_error err;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    rate_bound((size_t)handled(&l), 10, 1000, mono_ms() - t0);
    pthread_mutex_destroy(&l.mu);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T36: bad limits are refused naming the field and the limit, the
 * dead-letter queue's too, and change nothing; limits are listed, and
 * all 0 clears them (claims are unlimited again). */
static void test_limit_input(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    assert_int_equal(sb_queue_set_limits(bus, "q", NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "limits");
    struct {
        sb_queue_limits l;
        const char *field;
    } bad[] = {
        {{0, 1, 0, 0}, "limits->size"},
        {{sizeof(sb_queue_limits), -1, 0, 0}, "max_running"},
        {{sizeof(sb_queue_limits), 10001, 0, 0}, "max_running"},
        {{sizeof(sb_queue_limits), 0, -1, 1000}, "rate_limit"},
        {{sizeof(sb_queue_limits), 0, 1000001, 1000}, "rate_limit"},
        {{sizeof(sb_queue_limits), 0, 5, 0}, "rate_interval_ms"},
        {{sizeof(sb_queue_limits), 0, 5, 86400001}, "rate_interval_ms"},
        {{sizeof(sb_queue_limits), 0, 0, 1000}, "rate_interval_ms"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sb_queue_set_limits(bus, "q", &bad[i].l, &err),
                         SB_INVALID);
        assert_string_equal(err.field, bad[i].field);
    }
    sb_queue_limits ok = {sizeof ok, 5, 100, 1000};
    assert_int_equal(sb_queue_set_limits(bus, "deadletter", &ok, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "queue");
    assert_int_equal(sb_queue_set_limits(bus, "bad\nname", &ok, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "queue");
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_list(bus, &s, &n, &err), &err, "list");
    assert_null(find_queue(s, n, "q")); /* nothing was written */
    assert_null(find_queue(s, n, "deadletter"));
    sb_free(s);

    sbt_ok(sb_queue_set_limits(bus, "q", &ok, &err), &err, "set");
    sbt_ok(sb_queue_list(bus, &s, &n, &err), &err, "list");
    const sb_queue_stats *q = find_queue(s, n, "q");
    assert_non_null(q);
    assert_int_equal(q->max_running, 5);
    assert_int_equal(q->rate_limit, 100);
    assert_int_equal(q->rate_interval_ms, 1000);
    sb_free(s);

    set_limits(bus, "q", 1, 0, 0);
    sbt_publish_n(bus, "q", 3, NULL);
    assert_int_equal(claim_ack(bus, "q", 10), 1);
    set_limits(bus, "q", 0, 0, 0);
    sbt_ok(sb_queue_list(bus, &s, &n, &err), &err, "list");
    q = find_queue(s, n, "q");
    assert_non_null(q);
    assert_int_equal(q->max_running, 0);
    assert_int_equal(q->rate_limit, 0);
    assert_int_equal(q->rate_interval_ms, 0);
    sb_free(s);
    assert_int_equal(claim_ack(bus, "q", 10), 2);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_order),
        cmocka_unit_test(test_priority_input),
        cmocka_unit_test(test_priority_in_transaction),
        cmocka_unit_test(test_priority_worker),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_pause_running_worker),
        cmocka_unit_test(test_cancel_waiting),
        cmocka_unit_test(test_cancel_running),
        cmocka_unit_test(test_progress_claimed),
        cmocka_unit_test(test_progress_worker),
        cmocka_unit_test(test_expiry_claim),
        cmocka_unit_test(test_expiry_sweep_and_ttl),
        cmocka_unit_test(test_expiry_input),
        cmocka_unit_test(test_expiry_worker),
        cmocka_unit_test(test_unique_active),
        cmocka_unit_test(test_unique_queued_and_cancel),
        cmocka_unit_test(test_unique_window),
        cmocka_unit_test(test_unique_race),
        cmocka_unit_test(test_unique_input),
        cmocka_unit_test(test_limit_running_workers),
        cmocka_unit_test(test_limit_running_claim),
        cmocka_unit_test(test_limit_rate_claim),
        cmocka_unit_test(test_limit_rate_worker),
        cmocka_unit_test(test_limit_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
