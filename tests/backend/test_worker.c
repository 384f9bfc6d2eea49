/*
 * test_worker.c - the worker runtime on every backend (spec transport.md
 * T15-T27 and "Tests that must exist"): competing consumers in threads and
 * in separate processes, SIGKILL mid-handler, max attempts judged before a
 * delivery runs, graceful stop, and ack-after-enqueue.
 */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_MSGS 600

typedef struct tally {
    pthread_mutex_t mu;
    char (*ids)[37];
    int n;
    int *handled;       /* per message: completed handler runs */
    int *running;       /* per message: handlers running right now */
    int *attempt;       /* per message: the attempt number last seen */
    atomic_int overlap; /* a message ran in two handlers at once */
    atomic_int calls;
    int fail_until_attempt; /* fail while attempts < this */
    int sleep_ms;
} tally;

static int index_of(tally *t, const char *id)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->ids[i], id) == 0)
            return i;
    return -1;
}

static int counting_handler(sb_delivery *d, void *user)
{
    tally *t = user;
    const sb_msg *m = sb_delivery_msg(d);
    atomic_fetch_add(&t->calls, 1);
    int i = index_of(t, sb_msg_id(m));
    if (i < 0)
        return SB_OK;
    pthread_mutex_lock(&t->mu);
    if (t->running[i]++ > 0)
        atomic_store(&t->overlap, 1);
    pthread_mutex_unlock(&t->mu);
    if (t->sleep_ms > 0)
        sbt_sleep_ms(t->sleep_ms);
    pthread_mutex_lock(&t->mu);
    t->running[i]--;
    t->handled[i]++;
    t->attempt[i] = sb_msg_attempts(m);
    pthread_mutex_unlock(&t->mu);
    if (sb_msg_attempts(m) < t->fail_until_attempt) {
        sb_delivery_fail(d, "test:flaky", "not yet", NULL);
        return SB_ERROR;
    }
    return SB_OK;
}

static tally *tally_new(int n)
{
    tally *t = calloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    t->ids = calloc((size_t)n, sizeof *t->ids);
    t->handled = calloc((size_t)n, sizeof(int));
    t->running = calloc((size_t)n, sizeof(int));
    t->attempt = calloc((size_t)n, sizeof(int));
    t->n = n;
    return t;
}

static void tally_free(tally *t)
{
    free(t->ids);
    free(t->handled);
    free(t->running);
    free(t->attempt);
    free(t);
}

static sb_worker *start(sb_bus *bus, const char *queue, int concurrency,
                        sb_handler_fn fn, void *user, sb_worker_options *o)
{
    sb_worker_options def;
    if (o == NULL) {
        memset(&def, 0, sizeof def);
        o = &def;
    }
    o->size = sizeof *o;
    o->queue = queue;
    o->handler = fn;
    o->user = user;
    o->concurrency = concurrency;
    if (o->empty_poll_ms == 0)
        o->empty_poll_ms = 20;
    if (o->max_poll_ms == 0)
        o->max_poll_ms = 100;
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(bus, o, &w, &err), &err, "worker start");
    return w;
}

/* T14, T15, T26, T28: N threads over M messages: each acked exactly once,
 * never run by two handlers at once while leased. */
static void test_threads_exactly_once(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    tally *t = tally_new(N_MSGS);
    sbt_publish_n(bus, "q", N_MSGS, t->ids);
    sb_worker *w = start(bus, "q", 8, counting_handler, t, NULL);
    assert_int_equal(sb_worker_wait_idle(w, 120000), SB_OK);
    sb_error err;
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(st.acked, N_MSGS);
    assert_int_equal(st.lost_leases, 0);
    for (int i = 0; i < N_MSGS; i++)
        assert_int_equal(t->handled[i], 1);
    assert_int_equal(atomic_load(&t->overlap), 0);
    assert_int_equal(sbt_count(bus, "q"), 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
    tally_free(t);
}

/* T19, T20, T21: failures nak with the delay; after max_attempts the
 * message is dead-lettered with the handler's exception headers. */
static void test_retries_then_dead_letter(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    tally *t = tally_new(2);
    sbt_publish_n(bus, "q", 2, t->ids);
    t->fail_until_attempt = 100; /* always fails */
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.max_attempts = 3;
    o.redelivery_delay_ms = -1;
    sb_worker *w = start(bus, "q", 2, counting_handler, t, &o);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(st.naked, 4);
    assert_int_equal(st.dead_lettered, 2);
    assert_int_equal(t->handled[0], 3);
    assert_int_equal(t->handled[1], 3);
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq");
    assert_int_equal(n, 2);
    assert_string_equal(sb_msg_header(d[0], "sb-exception-type"), "test:flaky");
    assert_string_equal(sb_msg_header(d[0], "sb-exception-message"), "not yet");
    assert_string_equal(sb_msg_header(d[0], "sb-attempts"), "3");
    assert_non_null(
        strstr(sb_msg_header(d[0], "sb-dead-letter-reason"), "max attempts"));
    sb_msg_free_array(d, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
    tally_free(t);
}

/* T20: the count is judged before running: a row whose earlier attempts
 * all died with their processes is dead-lettered without running again. */
static void test_max_attempts_checked_before_run(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    tally *t = tally_new(1);
    sbt_publish_n(bus, "q", 1, t->ids);
    sb_error err;
    for (int i = 0; i < 2; i++) { /* two claims that never settle */
        sb_msg **m = NULL;
        size_t n = 0;
        sbt_ok(sb_claim(bus, "q", 1, 100, &m, &n, &err), &err, "claim");
        assert_int_equal(n, 1);
        sb_msg_free_array(m, n);
        sbt_sleep_ms(150);
    }
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.max_attempts = 2;
    sb_worker *w = start(bus, "q", 1, counting_handler, t, &o);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(atomic_load(&t->calls), 0);
    assert_int_equal(st.dead_lettered, 1);
    assert_int_equal(sbt_count(bus, "deadletter"), 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
    tally_free(t);
}

static int poison_handler(sb_delivery *d, void *user)
{
    (void)user;
    sb_delivery_dead_letter(d, "cannot parse");
    return SB_OK;
}

/* T22: a handler can dead-letter a poison message at once. */
static void test_explicit_dead_letter(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 1, NULL);
    sb_worker *w = start(bus, "q", 1, poison_handler, NULL, NULL);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sb_worker_free(w);
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq");
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_header(d[0], "sb-dead-letter-reason"),
                        "cannot parse");
    assert_string_equal(sb_msg_header(d[0], "sb-attempts"), "1");
    sb_msg_free_array(d, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T21 (and S13's endpoint column): a worker names the endpoint its dead
 * letters carry, for a process that hosts several services; a failure
 * may name its own; a caller of the first sb_failure or
 * sb_worker_options (smaller size) gets the bus's; a bad endpoint is
 * refused, named. */
static void test_dead_letter_endpoint(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 1, NULL);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.endpoint = "Shipping";
    sb_worker *w = start(bus, "q", 1, poison_handler, NULL, &o);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sb_worker_free(w);
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq");
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_header(d[0], "sb-processing-endpoint"),
                        "Shipping");
    sb_msg_free_array(d, n);
    sbt_ok(sb_dlq_purge(bus, NULL, NULL, NULL, NULL, &err), &err, "purge");
    /* sb_dead_letter with the failure's endpoint, and with a first-version
     * failure whose endpoint field is never read. */
    sbt_publish_n(bus, "p", 2, NULL);
    const char *want[2] = {"Billing", NULL};
    for (int i = 0; i < 2; i++) {
        sb_msg **m = NULL;
        sbt_ok(sb_claim(bus, "p", 1, 30000, &m, &n, &err), &err, "claim");
        assert_int_equal(n, 1);
        sb_failure f;
        memset(&f, 0, sizeof f);
        f.size = i == 0 ? sizeof f : offsetof(sb_failure, endpoint);
        f.reason = "poison";
        f.endpoint = "Billing";
        sbt_ok(sb_dead_letter(bus, m[0], &f, &err), &err, "dead letter");
        sb_msg_free_array(m, n);
        sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq");
        assert_int_equal(n, 1);
        const char *ep = sb_msg_header(d[0], "sb-processing-endpoint");
        if (want[i] != NULL)
            assert_string_equal(ep, want[i]);
        else
            assert_string_not_equal(ep, "Billing");
        sb_msg_free_array(d, n);
        sbt_ok(sb_dlq_purge(bus, NULL, NULL, NULL, NULL, &err), &err, "purge");
    }
    char long_name[256];
    memset(long_name, 'e', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "q";
    o.handler = poison_handler;
    o.endpoint = long_name;
    assert_int_equal(sb_worker_start(bus, &o, &w, &err), SB_INVALID);
    assert_string_equal(err.field, "endpoint");
    /* A first-version caller: the endpoint field is not read. */
    o.size = SB_WORKER_OPTIONS_V1_SIZE;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "v1 options");
    sb_worker_free(w);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, release;
} gate;

static int gated_handler(sb_delivery *d, void *user)
{
    (void)d;
    gate *g = user;
    pthread_mutex_lock(&g->mu);
    g->started++;
    pthread_cond_broadcast(&g->cv);
    while (!g->release)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return SB_OK;
}

typedef struct stopper {
    sb_worker *w;
    int rc;
} stopper;

static void *stop_thread(void *arg)
{
    stopper *s = arg;
    s->rc = sb_worker_stop(s->w, NULL);
    return NULL;
}

/* Wait (up to 10 s) until the bus's only queue has `in_flight` leased
 * rows and none ready; fail otherwise. */
static void expect_leased(sb_bus *bus, int64_t in_flight)
{
    sb_queue_stats **qs = NULL;
    size_t nq = 0;
    sb_error err;
    for (int i = 0; i < 500; i++) {
        sb_free(qs);
        qs = NULL;
        sbt_ok(sb_queue_list(bus, &qs, &nq, &err), &err, "queue list");
        if (nq == 1 && qs[0]->in_flight == in_flight && qs[0]->ready == 0)
            break;
        sbt_sleep_ms(20);
    }
    assert_int_equal(nq, 1);
    assert_int_equal(qs[0]->in_flight, in_flight);
    assert_int_equal(qs[0]->ready, 0);
    sb_free(qs);
}

/* Stop `w` from another thread, open the gate while the stop waits, and
 * free the worker; its stop must succeed. Returns its counts. */
static sb_worker_stats stop_releasing(sb_worker *w, gate *g)
{
    stopper s = {w, -1};
    pthread_t th;
    pthread_create(&th, NULL, stop_thread, &s);
    sbt_sleep_ms(100);
    pthread_mutex_lock(&g->mu);
    g->release = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(th, NULL);
    assert_int_equal(s.rc, SB_OK);
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    return st;
}

/* T15, T16, T26: lease renewal keeps a long handler's message, and a
 * buffered one's (prefetch: before any handler has finished, one row more
 * per handler), past three leases; stop lets the running handler finish
 * and ack, claims nothing more, and hands the buffered row back with its
 * attempt count restored (a hand-back is not an attempt). With
 * SB_PREFETCH_NONE nothing is buffered. */
static void renewal_and_graceful_stop(int prefetch)
{
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 5, NULL);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.lease_ms = 300;
    o.prefetch = prefetch;
    int buffered = prefetch == SB_PREFETCH_NONE ? 0 : 1;
    sb_worker *w = start(bus, "q", 1, gated_handler, &g, &o);
    pthread_mutex_lock(&g.mu);
    while (g.started == 0)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    sbt_sleep_ms(1000); /* > 3 leases: only renewal keeps them ours */
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, "q", 10, 30000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 4 - buffered); /* the held ones are not among them */
    for (size_t i = 0; i < n; i++)
        sbt_ok(sb_nak(bus, m[i], 0, NULL, &err), &err, "nak");
    sb_msg_free_array(m, n);
    sb_worker_stats st = stop_releasing(w, &g);
    assert_int_equal(st.acked, 1);
    assert_int_equal(st.handed_back, buffered);
    assert_int_equal(st.lost_leases, 0);
    assert_int_equal(g.started, 1);
    /* At once claimable again: the naked rows at their second attempt,
     * the handed-back one at its first. */
    sbt_ok(sb_claim(bus, "q", 10, 30000, &m, &n, &err), &err, "claim again");
    assert_int_equal(n, 4);
    int first = 0;
    for (size_t i = 0; i < n; i++)
        first += sb_msg_attempts(m[i]) == 1;
    assert_int_equal(first, buffered);
    sb_msg_free_array(m, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static void test_renewal_and_graceful_stop(void **state)
{
    (void)state;
    renewal_and_graceful_stop(SB_PREFETCH_NONE);
    renewal_and_graceful_stop(0);
}

/* T15, T26: a stopping worker hands back every row of a full prefetch
 * buffer with `attempts` as before its claim, and the next consumer sees
 * them at once (not after a lease). */
static int block_after_handler(sb_delivery *d, void *user)
{
    gate *g = user;
    (void)d;
    pthread_mutex_lock(&g->mu);
    if (++g->started > 10) /* ten run; the eleventh holds its handler */
        while (!g->release)
            pthread_cond_wait(&g->cv, &g->mu);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return SB_OK;
}

static void test_prefetch_stop_hands_back(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 200, NULL);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    sb_worker *w = start(bus, "q", 1, block_after_handler, &g, NULL);
    /* Ten handled, the eleventh running: the other 189 are buffered. */
    expect_leased(bus, 190);
    sb_error err;
    sb_worker_stats st = stop_releasing(w, &g);
    assert_int_equal(st.acked, 11);
    assert_int_equal(st.handed_back, 189);
    sb_msg **m = NULL;
    size_t n = 0;
    sbt_ok(sb_claim(bus, "q", 500, 30000, &m, &n, &err), &err, "claim");
    if (n != 189) {
        /* What came back: distinct ids, and the attempts of each. */
        size_t distinct = 0, at[4] = {0};
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            while (j < i && strcmp(sb_msg_id(m[j]), sb_msg_id(m[i])) != 0)
                j++;
            distinct += j == i;
            int a = sb_msg_attempts(m[i]);
            at[a < 0 ? 0 : a > 3 ? 3 : a]++;
        }
        fail_msg("claimed %zu rows after the stop (%zu distinct ids; "
                 "attempts 0/1/2/3+: %zu/%zu/%zu/%zu); expected 189",
                 n, distinct, at[0], at[1], at[2], at[3]);
    }
    for (size_t i = 0; i < n; i++)
        assert_int_equal(sb_msg_attempts(m[i]), 1);
    sb_msg_free_array(m, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T15, T16: a buffered row whose renewals fail (the table's writes are
 * held past its lease) is not started: once its lease may have lapsed,
 * another consumer may have it. Here one does, under the hold; the worker
 * finds the fence gone at its next renewal and drops the row unrun. */
static void test_prefetch_stale_row_not_started(void **state)
{
    (void)state;
    if (sbt_is_mssql())
        skip();
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    char ids[2][37];
    sbt_publish_n(bus, "q", 2, ids);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.lease_ms = 600;
    sb_worker *w = start(bus, "q", 1, gated_handler, &g, &o);
    pthread_mutex_lock(&g.mu);
    while (g.started == 0)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    expect_leased(bus, 2); /* one running, one buffered */
    sbt_hold *hold = sbt_hold_writes(prefix);
    sbt_sleep_ms(800); /* past the lease: no renewal got through */
    pthread_mutex_lock(&g.mu);
    g.release = 1; /* the handler is free to take the buffered row */
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    sbt_sleep_ms(200);
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE %smessages SET %s WHERE id = '%s'",
             prefix,
             sbt_is_pg() ? "lock_id = gen_random_uuid(), locked_until = "
                           "now() + interval '1 minute'"
                         : "lock_id = 'another consumer', locked_until = "
                           "locked_until + 60000000, available_at = "
                           "available_at + 60000000",
             ids[1]);
    sbt_release_writes(hold, sql);
    sb_worker_stats st;
    for (int i = 0; i < 500; i++) {
        sb_worker_get_stats(w, &st);
        if (st.acked == 1 && st.lost_leases == 1)
            break;
        sbt_sleep_ms(10);
    }
    sb_worker_free(w);
    assert_int_equal(g.started, 1); /* the stolen row never ran here */
    assert_int_equal(st.acked, 1);
    assert_int_equal(st.lost_leases, 1);
    assert_int_equal(sbt_count(bus, "q"), 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T15 fairness: two workers on one queue, each with the default
 * prefetch, both take a share of it; every message runs once. */
static int one_ms_handler(sb_delivery *d, void *user)
{
    (void)d;
    atomic_fetch_add((atomic_int *)user, 1);
    sbt_sleep_ms(1);
    return SB_OK;
}

static void test_prefetch_shares_between_workers(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 2000, NULL);
    atomic_int na = 0, nb = 0;
    sb_worker *wa = start(bus, "q", 2, one_ms_handler, &na, NULL);
    sb_worker *wb = start(bus, "q", 2, one_ms_handler, &nb, NULL);
    for (int i = 0; i < 3000 && sbt_count(bus, "q") > 0; i++)
        sbt_sleep_ms(20);
    sb_worker_free(wa);
    sb_worker_free(wb);
    assert_int_equal(sbt_count(bus, "q"), 0);
    assert_int_equal(atomic_load(&na) + atomic_load(&nb), 2000);
    /* neither starves */
    assert_true(atomic_load(&na) >= 200 && atomic_load(&nb) >= 200);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T26 (issue 19): a handler that outlasts stop_timeout makes the stop
 * return SB_TIMEOUT on time, counting the handlers really running; its
 * message stays in the queue for the lease to return. */
static void test_stop_timeout_counts_running(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 1, NULL);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.stop_timeout_ms = 300;
    sb_worker *w = start(bus, "q", 2, gated_handler, &g, &o);
    pthread_mutex_lock(&g.mu);
    while (g.started == 0)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    sb_error err;
    assert_int_equal(sb_worker_stop(w, &err), SB_TIMEOUT);
    assert_string_equal(err.field, "stop_timeout_ms");
    assert_non_null(strstr(err.message, "1 handler(s) still running"));
    pthread_mutex_lock(&g.mu);
    g.release = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    sb_worker_free(w);
    assert_int_equal(sbt_count(bus, "q"), 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static int failing_handler(sb_delivery *d, void *user)
{
    (void)user;
    size_t len;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    if (len == 4 && memcmp(p, "fail", 4) == 0) {
        sb_delivery_fail(d, "test:bg", "background failure", NULL);
        return SB_ERROR;
    }
    return SB_OK;
}

static void on_bg_failure(const sb_msg *m, const sb_failure *f, void *user)
{
    (void)m;
    atomic_int *n = user;
    if (f->exception_type && strcmp(f->exception_type, "test:bg") == 0)
        atomic_fetch_add(n, 1);
}

/* T23: ack after enqueue deletes on acceptance; a later failure writes a
 * dead-letter row itself and calls on_background_failure. */
static void test_ack_after_enqueue(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_outgoing m[3] = {{NULL, "ok", 2, NULL, 0},
                        {NULL, "fail", 4, NULL, 0},
                        {NULL, "ok", 2, NULL, 0}};
    sb_error err;
    sbt_ok(sb_publish_batch(bus, NULL, "q", m, 3, NULL, &err), &err, "pub");
    atomic_int failures = 0;
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = "q";
    o.handler = failing_handler;
    o.ack_mode = SB_ACK_AFTER_ENQUEUE;
    o.empty_poll_ms = 20;
    o.on_background_failure = on_bg_failure;
    sb_worker *w = NULL;
    /* Both counts are mandatory. */
    o.user = &failures;
    assert_int_equal(sb_worker_start(bus, &o, &w, &err), SB_INVALID);
    assert_string_equal(err.field, "background_workers");
    o.background_workers = 2;
    o.background_capacity = 10;
    sbt_ok(sb_worker_start(bus, &o, &w, &err), &err, "start");
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_free(w);
    assert_int_equal(atomic_load(&failures), 1);
    assert_int_equal(sbt_count(bus, "q"), 0);
    assert_int_equal(sbt_count(bus, "deadletter"), 1);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Where each published id ended up after an early-ack stop: the queue,
 * the dead-letter queue (by sb-message-id), or neither. */
static void count_places(sb_bus *bus, tally *t, int *in_queue, int *in_dlq)
{
    sb_error err;
    sb_msg **m = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_peek(bus, "q", 0, 500, &m, &n, &err), &err, "peek");
    for (size_t k = 0; k < n; k++) {
        int i = index_of(t, sb_msg_id(m[k]));
        assert_true(i >= 0);
        in_queue[i]++;
    }
    sb_msg_free_array(m, n);
    sb_dlq_filter f = {sizeof f, "q", 0, NULL, 0};
    sbt_ok(sb_dlq_list(bus, &f, &m, &n, &err), &err, "dlq list");
    for (size_t k = 0; k < n; k++) {
        const char *orig = sb_msg_header(m[k], "sb-message-id");
        const char *why = sb_msg_header(m[k], "sb-dead-letter-reason");
        int i = orig ? index_of(t, orig) : -1;
        assert_true(i >= 0);
        assert_non_null(why);
        assert_string_equal(why, "worker stopped before the message was "
                                 "processed");
        in_dlq[i]++;
    }
    sb_msg_free_array(m, n);
}

/* T23 (issue 19): an early-ack worker stopped while its bounded queue is
 * full of slow work, with a drain timeout shorter than that work: every
 * published message ran, or is still in the queue, or was dead-lettered
 * as unrun -- exactly one of the three, never none. The stop lands at a
 * different moment of the handlers' cycle in each round. */
static void test_ack_after_enqueue_stop_loses_nothing(void **state)
{
    (void)state;
    enum { ROUNDS = 12, MSGS = 30 };
    for (int r = 0; r < ROUNDS; r++) {
        const char *prefix = sbt_new_prefix();
        sb_bus *bus = sbt_open(prefix, NULL);
        tally *t = tally_new(MSGS);
        t->sleep_ms = 500;
        sbt_publish_n(bus, "q", MSGS, t->ids);
        sb_worker_options o;
        memset(&o, 0, sizeof o);
        o.ack_mode = SB_ACK_AFTER_ENQUEUE;
        o.background_workers = 2;
        o.background_capacity = 10;
        o.drain_timeout_ms = 1000;
        sb_worker *w = start(bus, "q", 1, counting_handler, t, &o);
        for (int i = 0; i < 1000 && atomic_load(&t->calls) < 2; i++)
            sbt_sleep_ms(5);
        assert_true(atomic_load(&t->calls) >= 2);
        sbt_sleep_ms(45L * r);
        int rc = sb_worker_stop(w, NULL);
        /* Handlers started before the cut may outlast the drain. */
        assert_true(rc == SB_OK || rc == SB_TIMEOUT);
        sb_worker_free(w);
        int in_queue[MSGS] = {0}, in_dlq[MSGS] = {0};
        count_places(bus, t, in_queue, in_dlq);
        for (int i = 0; i < MSGS; i++) {
            int places = t->handled[i] + in_queue[i] + in_dlq[i];
            if (places != 1)
                fail_msg("round %d: message %s ran %d time(s), is %d time(s) "
                         "in the queue and %d time(s) in the dead-letter "
                         "queue (want exactly one of the three)",
                         r, t->ids[i], t->handled[i], in_queue[i], in_dlq[i]);
        }
        sbt_drop(bus, prefix);
        sb_close(bus);
        tally_free(t);
    }
}

typedef struct child_ctx {
    FILE *out;
    int die;       /* handlers block until SIGKILL ... */
    int run_first; /* ... once this many have run */
    int gate_fd;   /* >= 0: each handler reads a byte from it, then
                      writes its id to `done` and returns */
    FILE *done;
    atomic_int ran;
} child_ctx;

static int write_id_handler(sb_delivery *d, void *user)
{
    child_ctx *c = user;
    const sb_msg *m = sb_delivery_msg(d);
    if (atomic_fetch_add(&c->ran, 1) < c->run_first) {
        fprintf(c->done, "%s %d\n", sb_msg_id(m), sb_msg_attempts(m));
        fflush(c->done);
        return SB_OK; /* acked */
    }
    fprintf(c->out, "%s %d\n", sb_msg_id(m), sb_msg_attempts(m));
    fflush(c->out);
    if (c->gate_fd >= 0) {
        char byte;
        if (read(c->gate_fd, &byte, 1) == 1) {
            fprintf(c->done, "%s %d\n", sb_msg_id(m), sb_msg_attempts(m));
            fflush(c->done);
        }
        return SB_OK;
    }
    if (c->die)
        pause(); /* block mid-handler until SIGKILL */
    return SB_OK;
}

/* The parent's bus in the tests that fork: without the counts flusher's
 * thread the parent stays single-threaded, so its children may open
 * buses of their own (POSIX allows a child of a threaded process only
 * async-signal-safe calls). */
static const sb_options single_threaded = {.counts_flush_ms = -1};

/* Child process body: drain the queue with a 4-handler worker, writing
 * each handled id and attempt to c->out; with c->die (or a gate) it runs
 * until the parent kills it. */
static void child_run(const char *prefix, child_ctx *c, int prefetch)
{
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.lease_ms = c->die || c->gate_fd >= 0 ? 1000 : 30000;
    o.max_attempts = -1;
    o.prefetch = prefetch;
    sb_worker *w = start(bus, "q", 4, write_id_handler, c, &o);
    if (c->die || c->gate_fd >= 0)
        for (;;)
            pause();
    sb_worker_wait_idle(w, 120000);
    sb_worker_free(w);
    fclose(c->out);
    sb_close(bus);
    _exit(0);
}

static void child_drain(const char *prefix, const char *path, int die_mid)
{
    child_ctx c = {fopen(path, "w"), die_mid, 0, -1, NULL, 0};
    child_run(prefix, &c, die_mid ? SB_PREFETCH_NONE : 0);
}

static int read_ids(const char *path, char (*ids)[37], int *attempts, int max)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    int n = 0;
    char line[128];
    while (n < max && fgets(line, sizeof line, f) != NULL) {
        if (strlen(line) < 38)
            continue;
        memcpy(ids[n], line, 36);
        ids[n][36] = '\0';
        attempts[n] = (int)strtol(line + 37, NULL, 10);
        n++;
    }
    fclose(f);
    return n;
}

/* Transport "tests that must exist": consumers in separate processes over
 * one database: every message handled exactly once, none lost. */
static void test_processes_exactly_once(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, &single_threaded);
    char(*ids)[37] = calloc(N_MSGS, 37);
    sbt_publish_n(bus, "q", N_MSGS, ids);
    char paths[3][64];
    pid_t pids[3];
    for (int p = 0; p < 3; p++) {
        snprintf(paths[p], sizeof paths[p], "/tmp/sbt-%ld-%d.ids",
                 (long)getpid(), p);
        pids[p] = fork();
        if (pids[p] == 0)
            child_drain(prefix, paths[p], 0);
    }
    for (int p = 0; p < 3; p++) {
        int status = 0;
        waitpid(pids[p], &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char(*seen)[37] = calloc(N_MSGS * 2, 37);
    int *att = calloc(N_MSGS * 2, sizeof(int));
    int total = 0;
    for (int p = 0; p < 3; p++) {
        total +=
            read_ids(paths[p], seen + total, att + total, N_MSGS * 2 - total);
        unlink(paths[p]);
    }
    assert_int_equal(total, N_MSGS);
    for (int i = 0; i < N_MSGS; i++) {
        int hits = 0;
        for (int k = 0; k < total; k++)
            hits += strcmp(seen[k], ids[i]) == 0;
        assert_int_equal(hits, 1);
    }
    assert_int_equal(sbt_count(bus, "q"), 0);
    free(ids);
    free(seen);
    free(att);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T16, T17, T20 and "a worker process killed with SIGKILL mid-handler":
 * its messages run again after the lease with the right attempt count,
 * nothing lost. */
static void test_sigkill_mid_handler(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, &single_threaded);
    char ids[6][37];
    sbt_publish_n(bus, "q", 6, ids);
    char path[64];
    snprintf(path, sizeof path, "/tmp/sbt-%ld-kill.ids", (long)getpid());
    pid_t pid = fork();
    if (pid == 0)
        child_drain(prefix, path, 1);
    /* Wait until the child's 4 handlers are all mid-message. */
    char got[8][37];
    int att[8];
    for (int i = 0; i < 200 && read_ids(path, got, att, 8) < 4; i++)
        sbt_sleep_ms(50);
    assert_int_equal(read_ids(path, got, att, 8), 4);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    unlink(path);
    /* A new worker gets all 6: the 4 killed ones after their lease, with
     * attempt 2; the 2 untouched with attempt 1. */
    tally *t = tally_new(6);
    memcpy(t->ids, ids, sizeof ids);
    sb_worker *w = start(bus, "q", 2, counting_handler, t, NULL);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(st.acked, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(t->handled[i], 1);
        int killed = 0;
        for (int k = 0; k < 4; k++)
            killed |= strcmp(got[k], ids[i]) == 0;
        assert_int_equal(t->attempt[i], killed ? 2 : 1);
    }
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq");
    assert_int_equal(n, 0);
    sb_msg_free_array(d, n);
    assert_int_equal(sbt_count(bus, "q"), 0);
    tally_free(t);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* Every one of `n` ids handled exactly once by a fresh worker, at the
 * attempt `want(i)` says; nothing left, nothing dead-lettered. */
static void drain_expecting(sb_bus *bus, char (*ids)[37], int n,
                            const int *want_attempt)
{
    tally *t = tally_new(n);
    memcpy(t->ids, ids, (size_t)n * 37);
    sb_worker *w = start(bus, "q", 2, counting_handler, t, NULL);
    assert_int_equal(sb_worker_wait_idle(w, 60000), SB_OK);
    sb_worker_free(w);
    for (int i = 0; i < n; i++) {
        assert_int_equal(t->handled[i], 1);
        assert_int_equal(t->attempt[i], want_attempt[i]);
    }
    assert_int_equal(sbt_count(bus, "q"), 0);
    sb_msg **d = NULL;
    size_t nd = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &nd, &err), &err, "dlq");
    assert_int_equal(nd, 0);
    sb_msg_free_array(d, nd);
    tally_free(t);
}

/* T15, T17: a worker SIGKILLed with a full prefetch buffer loses nothing:
 * its running and its buffered rows are all redelivered once their leases
 * lapse, each at its second attempt (a buffered row was claimed). */
static void test_sigkill_full_buffer(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, &single_threaded);
    enum { N = 100, RUN = 20 };
    char(*ids)[37] = calloc(N, 37);
    sbt_publish_n(bus, "q", N, ids);
    char path[64], done_path[64];
    snprintf(path, sizeof path, "/tmp/sbt-%ld-buf.ids", (long)getpid());
    snprintf(done_path, sizeof done_path, "/tmp/sbt-%ld-buf.done",
             (long)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        child_ctx c = {fopen(path, "w"), 1, RUN, -1, fopen(done_path, "w"), 0};
        child_run(prefix, &c, 0);
    }
    /* RUN acked; 4 handlers blocked; the other 76 buffered, all leased. */
    expect_leased(bus, N - RUN);
    char got[8][37];
    int att[8];
    for (int i = 0; i < 200 && read_ids(path, got, att, 8) < 4; i++)
        sbt_sleep_ms(50);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    unlink(path);
    /* The child acked RUN; the rest come back, each at attempt 2. */
    char acked[RUN][37];
    int acked_att[RUN];
    assert_int_equal(read_ids(done_path, acked, acked_att, RUN), RUN);
    unlink(done_path);
    char(*rest)[37] = calloc(N, 37);
    int *want = calloc(N, sizeof(int)), n_rest = 0;
    for (int i = 0; i < N; i++) {
        int was_acked = 0;
        for (int k = 0; k < RUN; k++)
            was_acked |= strcmp(acked[k], ids[i]) == 0;
        if (!was_acked) {
            memcpy(rest[n_rest], ids[i], 37);
            want[n_rest++] = 2;
        }
    }
    assert_int_equal(n_rest, N - RUN);
    drain_expecting(bus, rest, n_rest, want);
    free(rest);
    free(want);
    free(ids);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T15 group commit: a handler has returned but its ack's transaction has
 * not committed (the table's writes are held) when the process is
 * SIGKILLed: the row is redelivered, never dropped. */
static void test_sigkill_before_commit(void **state)
{
    (void)state;
    if (sbt_is_mssql())
        skip();
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, &single_threaded);
    char ids[8][37];
    sbt_publish_n(bus, "q", 8, ids);
    char path[64], done_path[64];
    snprintf(path, sizeof path, "/tmp/sbt-%ld-gc.ids", (long)getpid());
    snprintf(done_path, sizeof done_path, "/tmp/sbt-%ld-gc.done",
             (long)getpid());
    int gate_pipe[2];
    assert_int_equal(pipe(gate_pipe), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(gate_pipe[1]);
        child_ctx c = {fopen(path, "w"),      0, 0, gate_pipe[0],
                       fopen(done_path, "w"), 0};
        child_run(prefix, &c, SB_PREFETCH_NONE);
    }
    close(gate_pipe[0]);
    char got[8][37], done[8][37];
    int att[8];
    for (int i = 0; i < 200 && read_ids(path, got, att, 8) < 4; i++)
        sbt_sleep_ms(50);
    assert_int_equal(read_ids(path, got, att, 8), 4);
    sbt_hold *hold = sbt_hold_writes(prefix);
    assert_int_equal(write(gate_pipe[1], "xxxx", 4), 4);
    for (int i = 0; i < 200 && read_ids(done_path, done, att, 8) < 4; i++)
        sbt_sleep_ms(50);
    assert_int_equal(read_ids(done_path, done, att, 8), 4);
    sbt_sleep_ms(300); /* the pump is waiting on the held write lock */
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    sbt_release_writes(hold, NULL);
    close(gate_pipe[1]);
    unlink(path);
    unlink(done_path);
    int want[8];
    for (int i = 0; i < 8; i++) {
        want[i] = 1;
        for (int k = 0; k < 4; k++)
            if (strcmp(done[k], ids[i]) == 0)
                want[i] = 2; /* returned, not committed: run again */
    }
    drain_expecting(bus, ids, 8, want);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

typedef struct waiter_ctx {
    atomic_int handled;
    atomic_int cancelled_seen;
    atomic_int started;
} waiter_ctx;

static int note_handler(sb_delivery *d, void *user)
{
    (void)d;
    waiter_ctx *c = user;
    atomic_fetch_add(&c->handled, 1);
    return SB_OK;
}

static int wait_handled(waiter_ctx *c, int n, int seconds)
{
    for (int i = 0; i < seconds * 100 && atomic_load(&c->handled) < n; i++)
        sbt_sleep_ms(10);
    return atomic_load(&c->handled);
}

/* T13: a publish wakes an idle worker of the same bus at once. The worker
 * polls only every 10 minutes, so only the in-process wake can deliver the
 * message within the test's bounded wait. */
static void test_wake_in_process(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    waiter_ctx c;
    memset(&c, 0, sizeof c);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.empty_poll_ms = 600000;
    o.max_poll_ms = 600000;
    sb_worker *w = start(bus, "q", 1, note_handler, &c, &o);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sbt_publish_n(bus, "q", 1, NULL);
    assert_int_equal(wait_handled(&c, 1, 30), 1);
    sb_worker_free(w);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T13: a publish through another bus (another process or host) wakes
 * the worker - PostgreSQL through NOTIFY, SQLite through the watch on the
 * WAL file - while polling is 10 minutes away. A delayed row is not
 * delivered early by anyone's wake-up. */
static void test_wake_notify(void **state)
{
    (void)state;
    if (strcmp(sbt_backend(), "odbc-postgresql") == 0 || sbt_is_mssql())
        skip(); /* through ODBC workers poll: no LISTEN (docs/backends.md) */
    const char *prefix = sbt_new_prefix();
    /* No counts flusher: its write a second later would be one more
     * wake-up (a commit in the WAL), after the delayed row is due. */
    sb_options quiet;
    memset(&quiet, 0, sizeof quiet);
    quiet.counts_flush_ms = -1;
    sb_bus *bus = sbt_open(prefix, &quiet);
    sb_bus *other = sbt_open(prefix, &quiet);
    waiter_ctx c;
    memset(&c, 0, sizeof c);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.empty_poll_ms = 600000;
    o.max_poll_ms = 600000;
    sb_worker *w = start(bus, "q", 1, note_handler, &c, &o);
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sbt_sleep_ms(300); /* let the LISTEN connection come up */
    sbt_publish_n(other, "q", 1, NULL);
    assert_int_equal(wait_handled(&c, 1, 30), 1);
    /* A NOTIFY for another queue does not deliver this one's delayed row. */
    sb_outgoing late = {NULL, "x", 1, NULL, 200};
    sb_error err;
    sbt_ok(sb_publish(other, NULL, "q", &late, NULL, &err), &err, "delayed");
    sbt_publish_n(other, "elsewhere", 1, NULL);
    sbt_sleep_ms(1000);
    assert_int_equal(atomic_load(&c.handled), 1);
    sb_worker_free(w);
    sb_close(other);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static int cancel_aware_handler(sb_delivery *d, void *user)
{
    waiter_ctx *c = user;
    atomic_store(&c->started, 1);
    for (int i = 0; i < 1000 && !sb_delivery_cancelled(d); i++)
        sbt_sleep_ms(10);
    if (sb_delivery_cancelled(d))
        atomic_store(&c->cancelled_seen, 1);
    return SB_OK;
}

/* T16: when the fence no longer matches (another consumer took the row),
 * renewal stops, the handler is told, and its ack is a no-op counted as a
 * lost lease. */
static void test_lost_lease_is_reported(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, NULL);
    sbt_publish_n(bus, "q", 1, NULL);
    waiter_ctx c;
    memset(&c, 0, sizeof c);
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.lease_ms = 300;
    o.prefetch = SB_PREFETCH_NONE; /* or the worker itself takes it back */
    sb_worker *w = start(bus, "q", 1, cancel_aware_handler, &c, &o);
    while (!atomic_load(&c.started))
        sbt_sleep_ms(5);
    /* Simulate a lapse and a re-claim by someone else. */
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE %smessages SET locked_until = NULL, lock_id = NULL, "
             "available_at = %s",
             prefix,
             sbt_is_pg()      ? "now()"
             : sbt_is_mssql() ? "SYSUTCDATETIME()"
                              : "0");
    sbt_exec(bus, sql);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, "q", 1, 60000, &m, &n, &err), &err, "steal");
    assert_int_equal(n, 1);
    sb_worker_stats st;
    assert_int_equal(sb_worker_wait_idle(w, 100), SB_TIMEOUT);
    sbt_ok(sb_worker_stop(w, &err), &err, "stop");
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    assert_int_equal(atomic_load(&c.cancelled_seen), 1);
    assert_int_equal(st.lost_leases, 1);
    assert_int_equal(st.acked, 0);
    /* The thief still holds it and can ack it. */
    sbt_ok(sb_ack(bus, NULL, m[0], &err), &err, "thief ack");
    sb_msg_free_array(m, n);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T12, T14 and the claim cursor (claim.c): a worker's claims start just
 * before the newest available_at it claimed. A row whose publish
 * transaction began long before newer rows were claimed (its available_at
 * is that transaction's start) and committed after them lies below that
 * bound: the worker must still deliver it, exactly once. PostgreSQL only:
 * on SQLite an open transaction holds the only write lock, so nothing
 * else is published beside it. */
static void test_late_commit_below_cursor(void **state)
{
    (void)state;
    if (!sbt_is_pg())
        return;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    tally *t = tally_new(4);
    sb_tx *tx = NULL;
    sb_error err;
    sbt_ok(sb_tx_begin(bus, &tx, &err), &err, "begin");
    sb_outgoing o = {NULL, "late", 4, NULL, 0};
    sbt_ok(sb_publish(bus, tx, "q", &o, t->ids[0], &err), &err, "publish late");
    sbt_sleep_ms(1500); /* more than the cursor's one-second slack */
    sb_worker *w = start(bus, "q", 1, counting_handler, t, NULL);
    sbt_publish_n(bus, "q", 3, &t->ids[1]);
    for (int i = 0; i < 3000 && atomic_load(&t->calls) < 3; i++)
        sbt_sleep_ms(10);
    assert_int_equal(atomic_load(&t->calls), 3);
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit late");
    for (int i = 0; i < 3000 && atomic_load(&t->calls) < 4; i++)
        sbt_sleep_ms(10);
    if (atomic_load(&t->calls) < 4)
        fail_msg("the late-committed message was not delivered in 30 s");
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sb_worker_free(w);
    for (int i = 0; i < 4; i++)
        assert_int_equal(t->handled[i], 1);
    assert_int_equal(sbt_count(bus, "q"), 0);
    tally_free(t);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T17 below the cursor: a row claimed elsewhere whose lease lapses after
 * the worker's claims have moved past it (by more than the slack) is
 * still redelivered, with its attempt count kept. */
static void test_lapsed_lease_below_cursor(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = sbt_open(prefix, NULL);
    tally *t = tally_new(4);
    sbt_publish_n(bus, "q", 1, &t->ids[0]);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, "q", 1, 3000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    sbt_sleep_ms(1500);
    sb_worker *w = start(bus, "q", 1, counting_handler, t, NULL);
    sbt_publish_n(bus, "q", 3, &t->ids[1]);
    for (int i = 0; i < 3000 && atomic_load(&t->calls) < 4; i++)
        sbt_sleep_ms(10);
    if (atomic_load(&t->calls) < 4)
        fail_msg("the lapsed lease was not redelivered in 30 s (%d calls)",
                 atomic_load(&t->calls));
    assert_int_equal(sb_worker_wait_idle(w, 30000), SB_OK);
    sb_worker_free(w);
    for (int i = 0; i < 4; i++)
        assert_int_equal(t->handled[i], 1);
    assert_int_equal(t->attempt[0], 2);
    assert_int_equal(sb_ack(bus, NULL, m[0], &err), SB_LOST_LEASE);
    sb_msg_free_array(m, n);
    assert_int_equal(sbt_count(bus, "q"), 0);
    tally_free(t);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_exactly_once),
        cmocka_unit_test(test_retries_then_dead_letter),
        cmocka_unit_test(test_max_attempts_checked_before_run),
        cmocka_unit_test(test_explicit_dead_letter),
        cmocka_unit_test(test_dead_letter_endpoint),
        cmocka_unit_test(test_renewal_and_graceful_stop),
        cmocka_unit_test(test_stop_timeout_counts_running),
        cmocka_unit_test(test_ack_after_enqueue),
        cmocka_unit_test(test_ack_after_enqueue_stop_loses_nothing),
        cmocka_unit_test(test_processes_exactly_once),
        cmocka_unit_test(test_sigkill_mid_handler),
        cmocka_unit_test(test_sigkill_full_buffer),
        cmocka_unit_test(test_sigkill_before_commit),
        cmocka_unit_test(test_prefetch_stop_hands_back),
        cmocka_unit_test(test_prefetch_shares_between_workers),
        cmocka_unit_test(test_prefetch_stale_row_not_started),
        cmocka_unit_test(test_wake_in_process),
        cmocka_unit_test(test_wake_notify),
        cmocka_unit_test(test_lost_lease_is_reported),
        cmocka_unit_test(test_late_commit_below_cursor),
        cmocka_unit_test(test_lapsed_lease_below_cursor),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
