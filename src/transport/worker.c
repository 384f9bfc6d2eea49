/* worker.c - the worker runtime (T15-T27). Pump threads (two lanes where
 * the backend runs writers side by side, else one) do all the database
 * work of the worker in one transaction per cycle: a cycle settles what
 * handlers finished, renews leases that reached a third of their life,
 * and claims rows for idle handlers and for the prefetch buffer (rows
 * leased ahead, renewed while they wait). In ack-after-enqueue mode it
 * also removes the rows background threads are about to run. Handler
 * threads only run handlers. See docs/internals/transport.md. */
#include "transport/transport.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum outcome { OUT_NONE, OUT_ACK, OUT_NAK, OUT_DEAD, OUT_HANDBACK };

/* The prefetch buffer's bound in bytes (payload and headers), judged by
 * the moving average of claimed rows. */
#define PREFETCH_MAX_BYTES (64LL * 1024 * 1024)
/* ... and in work: what the handlers get through in this long at their
 * measured pace. It covers a claim's round trip many times over, and it
 * leaves rows for other workers when handlers are slow (T15 fairness). */
#define PREFETCH_WORK_US 100000

/* Once every handler is done, a stopping worker tries its last writes for
 * this long before it leaves them to lease expiry (T26). */
#define STOP_WRITE_GRACE_US 1000000
/* How long sb_worker_stop waits past its deadline for the pump to leave
 * the database call it is in. */
#define STOP_MARGIN_US 1000000
/* How long finished settlements wait for a claim to share their
 * transaction with (the pump's group commit). */
#define SETTLE_LINGER_US 2000
/* Pump threads where the backend runs writers side by side. */
#define PUMP_LANES 2

struct sb_delivery {
    sb_worker *w;
    sb_msg *msg;
    int64_t next_renew_us; /* monotonic */
    /* When the lease surely ends (monotonic): the start of the cycle that
     * claimed or last renewed it, plus the lease. */
    int64_t lease_end_us;
    atomic_int lost; /* 1: the lease is gone; 2: the worker is stopping */
    int stale;       /* buffered, too close to its lease's end to start: it
                  waits for a renewal outside the ready list */
    int renewing;    /* in a cycle's renewals: no other lane settles it */
    int running;
    int removed; /* early-ack: its row is deleted, it runs from memory */
    int outcome;
    sb_type_slot *type; /* its message type's counters, once looked up */
    int64_t delay_ms;
    char *exc_type, *exc_msg, *exc_detail, *dl_reason;
    int dl_asked; /* sb_delivery_dead_letter, even if dl_reason is NULL */
    void *reply;  /* sb_delivery_reply, for sb-reply-to jobs */
    size_t reply_len;
    int has_reply;
    struct sb_delivery *next;                /* in the ready or settle list */
    struct sb_delivery *all_next, *all_prev; /* in the in-flight list */
};

struct sb_worker {
    sb_bus *bus;
    sb_worker_options o;
    char *queue;
    char *endpoint;      /* the dead letters' endpoint, or NULL (the bus's) */
    char *beat_endpoint; /* the endpoint it beats for (issue 22), or NULL */
    int early;           /* SB_ACK_AFTER_ENQUEUE */
    int slots;           /* max rows held at once: handlers plus prefetch */
    int prefetch;        /* rows claimed ahead of the handlers (T15), or 0 */
    int64_t avg_run_us;  /* handlers' run time, a moving average */
    int64_t avg_bytes;   /* claimed rows' payload and headers, likewise */
    pthread_mutex_t mu;
    pthread_cond_t pump_cv, handler_cv, idle_cv;
    struct cycle *lanes; /* one per pump thread */
    int n_lanes, started_lanes, live_lanes;
    int claiming; /* rows the cycles under way may claim */
    pthread_t *handlers;
    int n_handlers;
    sb_wake_listener *listener;
    sb_wal_watch *wal; /* SQLite: other processes' commits wake the pump */
    sb_delivery *ready_head, *ready_tail, *settle_head, *all;
    /* early-ack: accepted (claimed, leased, renewed) but not yet taken by
     * a background thread; its row is deleted only when one takes it */
    sb_delivery *buf_head, *buf_tail;
    int n_ready;  /* in the ready list */
    int starting; /* early-ack: being removed by the cycle under way */
    int held;     /* claimed and not yet settled */
    int running_handlers;
    int live_handlers;
    int stopping, abandon, pump_done, stopped, joined;
    int64_t retry_at_us;   /* after a failed cycle: not before this */
    int64_t give_up_at_us; /* stopping, handlers done, writes failing */
    int unwritten;         /* writes a stop left to lease expiry */
    char last_db_error[sizeof((sb_error *)0)->message];
    int idle;
    int64_t next_poll_us, poll_delay_us, outage_delay_us;
    uint64_t wakes; /* wake-ups so far: one during a cycle is not lost */
    int64_t stop_deadline_us;
    int64_t last_cycle_us; /* the last cycle's, by any lane */
    /* early-ack: deliveries allocated before a cycle for the rows it
     * removes as it claims them, so memory never loses a removed row */
    sb_delivery **spare;
    int n_spare;
    sb_waker waker;
    atomic_llong acked, naked, dead, lost, handed_back;
    sb_count_slot *counts; /* the queue's in sb_bus_metrics */
    /* The queue's settings (T34, T35), read every SB_SETTINGS_REFRESH_MS
     * by one lane at a time; each lane copies `prioritized` into its own
     * claim cursor before a cycle. */
    int paused, prioritized, settings_reading, settings_read;
    int64_t ttl_ms;          /* T40: the queue's time to live, 0: none */
    int64_t clock_offset_us; /* T40: the database's clock less the host's */
    /* T36: the queue's limits; while it has any, the worker claims only
     * for idle handlers and through limits.c. `limit_by_running`: the
     * last claim was cut by max_running, so a cycle that settles (and
     * so frees room) claims again at once. */
    int max_running, rate_limit, limited, limit_by_running;
    int64_t rate_interval_ms;
    int64_t settings_next_us;
};

/* ---- helpers ---- */

static void delivery_free(sb_delivery *d)
{
    sb_msg_free(d->msg);
    sb__free(d->exc_type);
    sb__free(d->exc_msg);
    sb__free(d->exc_detail);
    sb__free(d->dl_reason);
    sb__free(d->reply);
    sb__free(d);
}

static void all_remove(sb_worker *w, sb_delivery *d)
{
    if (d->all_prev)
        d->all_prev->all_next = d->all_next;
    else
        w->all = d->all_next;
    if (d->all_next)
        d->all_next->all_prev = d->all_prev;
}

static int64_t nak_delay(const sb_worker *w, int attempts)
{
    double base = (double)w->o.redelivery_delay_ms;
    if (w->o.redelivery_factor > 1.0) {
        double d = base * pow(w->o.redelivery_factor, attempts - 1);
        if (d > (double)w->o.redelivery_max_ms)
            d = (double)w->o.redelivery_max_ms;
        return sb__jitter_us((int64_t)d * 1000) / 1000;
    }
    return (int64_t)base;
}

static void wake_pump(void *user)
{
    sb_worker *w = user;
    pthread_mutex_lock(&w->mu);
    w->next_poll_us = 0;
    w->poll_delay_us = 0;
    w->wakes++;
    pthread_cond_signal(&w->pump_cv);
    pthread_mutex_unlock(&w->mu);
}

static void notified(void *user, const char *payload)
{
    (void)payload;
    wake_pump(user);
}

/* ---- the pump ---- */

/* A pump thread (a lane) and its cycle. Where the backend takes
 * concurrent writers, two lanes overlap one cycle's round trips with the
 * other's; each takes its own settlements, renewals and claim. The
 * scratch arrays hold `slots` entries each, allocated at start so a cycle
 * never fails for memory. */
typedef struct cycle {
    sb_worker *w;
    pthread_t thread;
    sb_claim_cursor cursor; /* claim.c */
    sb_delivery *settle;    /* detached settle list */
    sb_delivery **renew;    /* due renewals */
    int n_renew;
    int claim_max;
    sb_msg **claimed;
    size_t n_claimed;
    sb_delivery **start; /* early-ack: buffered rows to remove and run */
    int n_start;
    int *start_lost;
    int start_claimed;      /* early-ack: remove and run up to this many of
                             the claimed rows at once */
    size_t claimed_started; /* ... how many were */
    int *claim_lost;
    int64_t t0; /* when the cycle began (monotonic) */
    int probe;  /* ask whether anything is pending */
    int pending;
    uint64_t wakes; /* the worker's wake count when the cycle began */
    int *renew_lost;
    /* scratch for set-based settlement, `slots` entries each */
    sb_msg **msgs;
    sb_delivery **ack_d;
    int *lost;
    sb_msg **renew_msgs; /* the pipelined cycle's renewals */
    /* T36: the queue has limits; the claim ended short because of them
     * (by max_running), and when a token is due (0: none awaited). */
    int limited, limit_cut, limit_by_running;
    int64_t limit_wait_us;
} cycle;

static sb_failure failure_of(const sb_delivery *d)
{
    sb_failure f = {sizeof f,   d->dl_reason,  d->exc_type,
                    d->exc_msg, d->exc_detail, d->w->endpoint};
    return f;
}

static int settle_one(sb_worker *w, sb_conn *c, sb_delivery *d, sb_error *err)
{
    sb_bus *bus = w->bus;
    if (d->outcome < 0)
        return SB_OK; /* its lease was found lost in an earlier try */
    if (d->removed) {
        if (d->outcome != OUT_DEAD)
            return SB_OK;
        /* The row is gone already: write the dead letter from memory. */
        sb_failure f = failure_of(d);
        char *headers = NULL;
        const char *kv[] = {"sb-dead-letter-reason",
                            f.reason,
                            "sb-failed-queue",
                            d->msg->queue,
                            "sb-processing-endpoint",
                            sb__failure_endpoint(bus, &f),
                            "sb-host",
                            bus->host,
                            "sb-message-id",
                            d->msg->id,
                            "sb-exception-type",
                            f.exception_type,
                            "sb-exception-message",
                            f.exception_message,
                            "sb-exception-stacktrace",
                            f.stacktrace,
                            NULL};
        int rc = sb__headers_merge(d->msg->headers, kv, &headers, err);
        if (rc != SB_OK)
            return rc;
        char id[37];
        sb__uuid7_at(id, sb__wall_us() / 1000);
        sb_value p[8] = {sb__v_text(id),
                         sb__v_text(bus->dlq),
                         sb__v_text(headers),
                         sb__v_text(f.reason),
                         sb__v_text(f.exception_message),
                         sb__v_int(sb__bus_now_us(bus)),
                         sb__v_blob(d->msg->payload, d->msg->payload_len),
                         sb__v_int(d->msg->attempts)};
        rc = sb__query(c, bus->sql->dlq_insert, p, 8, NULL, NULL, err);
        sb__free(headers);
        return rc;
    }
    switch (d->outcome) {
    case OUT_ACK: return sb__ack_on(bus, c, d->msg, err);
    case OUT_NAK:
        return sb__nak_on(bus, c, d->msg, d->delay_ms,
                          d->exc_msg ? d->exc_msg : d->exc_type, err);
    case OUT_HANDBACK: return sb__hand_back_on(bus, c, d->msg, err);
    default: {
        sb_failure f = failure_of(d);
        return sb__dead_letter_on(bus, c, d->msg, &f, 1, err);
    }
    }
}

static void note_lost(sb_worker *w, sb_delivery *d)
{
    /* Logged, not fatal: another consumer owns the row now, or it was
     * cancelled (T39) and is a dead letter already. */
    sb__log(&w->bus->log, SB_LOG_WARN, "worker",
            "message %s: lease lost before settlement (another consumer "
            "has it, or it was cancelled); not settled here",
            d->msg->id);
    d->outcome = -d->outcome;
}

/* The settlements that are not set-based (naks, dead letters), one by
 * one: rare, and several statements each. */
static int settle_singles(cycle *x, sb_conn *c, sb_error *err)
{
    int rc = SB_OK;
    for (sb_delivery *d = x->settle; rc == SB_OK && d; d = d->next) {
        if ((d->outcome == OUT_ACK && !d->removed) ||
            d->outcome == OUT_HANDBACK)
            continue; /* in one statement each */
        rc = settle_one(x->w, c, d, err);
        if (rc == SB_LOST_LEASE) {
            note_lost(x->w, d);
            rc = SB_OK;
        }
    }
    return rc;
}

/* Whether the cycle can go in one pipeline: the backend sends one (and
 * has the set-based statements), the worker is not in early-ack mode
 * (whose removals depend on the claim's rows), the queue has no limits
 * (T36: the claim's size depends on what limits.c reads first), and no
 * ack writes a retry confirmation (E16, which depends on the ack's
 * result). */
static int can_pipeline(const cycle *x, const sb_conn *c)
{
    const sb_worker *w = x->w;
    const sb_transport_sql *q = w->bus->sql;
    if (!sb__pipelines(c) || w->early || x->limited || q->ack_many == NULL ||
        q->renew_many == NULL || q->hand_back_many == NULL)
        return 0;
    for (const sb_delivery *d = x->settle; d; d = d->next)
        if (d->outcome == OUT_ACK && sb__needs_confirm(d->msg))
            return 0;
    return 1;
}

/* Collect the settled deliveries with outcome `want` into the scratch
 * arrays from `at` on; returns how many. */
static size_t collect(cycle *x, int want, size_t at)
{
    size_t n = 0;
    for (sb_delivery *d = x->settle; d; d = d->next)
        if (d->outcome == want && !d->removed) {
            x->ack_d[at + n] = d;
            x->msgs[at + n] = d->msg;
            n++;
        }
    return n;
}

/* The cycle in one round trip (PostgreSQL): the set-based acks and
 * hand-backs, the renewals, the claim and the COMMIT in one pipeline.
 * The claim's follow-ups (the full scan after an empty bounded claim,
 * the pending probe) run after the commit in statements of their own; a
 * failure there is logged, not returned, since the settlements are
 * already written and repeating them would report their leases lost. */
static int cycle_pipelined(cycle *x, sb_conn *c, sb_error *err)
{
    sb_worker *w = x->w;
    const sb_transport_sql *q = w->bus->sql;
    int rc = settle_singles(x, c, err);
    if (rc != SB_OK)
        return rc;
    size_t n_ack = collect(x, OUT_ACK, 0);
    size_t n_hb = collect(x, OUT_HANDBACK, n_ack);
    for (int i = 0; i < x->n_renew; i++)
        x->renew_msgs[i] = x->renew[i]->msg;
    enum { ACK, HANDBACK, RENEW, N_MANY };
    sb_msg **msgs[N_MANY] = {x->msgs, x->msgs + n_ack, x->renew_msgs};
    size_t count[N_MANY] = {n_ack, n_hb, (size_t)x->n_renew};
    int *lost[N_MANY] = {x->lost, x->lost + n_ack, x->renew_lost};
    const char *sql[N_MANY] = {q->ack_many, q->hand_back_many, q->renew_many};
    int64_t lease[N_MANY] = {-1, -1, w->o.lease_ms};
    sb_many_call mc[N_MANY];
    int slot[N_MANY + 1];
    sb_call calls[N_MANY + 1];
    size_t nc = 0;
    for (int k = 0; k < N_MANY; k++) {
        slot[k] = -1;
        if (rc == SB_OK && count[k] > 0) {
            rc = sb__many_prepare(w->bus, sql[k], msgs[k], count[k], lease[k],
                                  lost[k], &mc[k], &calls[nc], err);
            if (rc == SB_OK)
                slot[k] = (int)nc++;
        }
    }
    sb_claim_call cc;
    slot[N_MANY] = -1;
    if (rc == SB_OK && x->claim_max > 0) {
        sb__claim_prepare(w->bus, &x->cursor, w->queue, x->claim_max,
                          w->o.lease_ms, &cc, &calls[nc]);
        slot[N_MANY] = (int)nc++;
    }
    if (rc == SB_OK)
        rc = sb__pipeline(c, calls, nc, 1, NULL, err);
    for (int k = 0; k < N_MANY; k++) {
        if (slot[k] < 0)
            continue;
        sb_error merr;
        int mrc = sb__many_finish(&mc[k], msgs[k], count[k], lost[k], rc,
                                  rc == SB_OK ? &merr : err);
        if (rc == SB_OK && mrc != SB_OK) {
            /* Committed, but which fences held is unknown (no memory to
             * read it): take them as held; the next fenced statement
             * tells. */
            memset(lost[k], 0, count[k] * sizeof *lost[k]);
            continue;
        }
        for (size_t i = 0; rc == SB_OK && k != RENEW && i < count[k]; i++)
            if (lost[k][i])
                note_lost(w, x->ack_d[(k == ACK ? 0 : n_ack) + i]);
    }
    if (slot[N_MANY] >= 0) {
        sb_error ferr;
        int frc = sb__claim_finish(w->bus, c, &x->cursor, w->queue,
                                   x->claim_max, w->o.lease_ms, &cc, rc,
                                   x->probe ? &x->pending : NULL, &x->claimed,
                                   &x->n_claimed, rc == SB_OK ? &ferr : err);
        if (rc == SB_OK && frc != SB_OK) {
            x->pending = 1;
            sb__log(&w->bus->log, SB_LOG_WARN, "worker",
                    "queue %s: claim after the commit failed (%s)", w->queue,
                    ferr.message);
        }
    }
    return rc;
}

/* The cycle's claim through its cursor; a limited queue's (T36) takes
 * what the limits leave, under the lock of the queue's settings row. */
static int cycle_claim(cycle *x, sb_conn *c, sb_error *err)
{
    sb_worker *w = x->w;
    int max = x->claim_max;
    sb_limit_grant g;
    x->limit_cut = x->limit_by_running = 0;
    x->limit_wait_us = 0;
    if (x->limited) {
        int rc = sb__limit_begin(w->bus, c, w->queue, max, &g, err);
        if (rc != SB_OK)
            return rc;
        x->limit_cut = g.allowed < max;
        x->limit_by_running = g.by_running;
        x->limit_wait_us = sb__limit_wait_us(&g, 0);
        if (g.allowed == 0)
            return SB_OK; /* pending: the queue may hold more */
        max = g.allowed;
    }
    size_t before = x->n_claimed;
    int rc = sb__claim_next_on(w->bus, c, &x->cursor, w->queue, max,
                               w->o.lease_ms, x->probe ? &x->pending : NULL,
                               &x->claimed, &x->n_claimed, err);
    if (rc == SB_OK && x->limited) {
        size_t taken = x->n_claimed - before;
        rc = sb__limit_end(w->bus, c, w->queue, &g, taken, err);
        if (taken < (size_t)max)
            x->limit_cut = 0; /* the queue ran out before the limits */
        x->limit_wait_us = sb__limit_wait_us(&g, taken);
    }
    return rc;
}

static int cycle_tx(sb_conn *c, void *vctx, sb_error *err)
{
    cycle *x = vctx;
    sb_worker *w = x->w;
    sb_msg_free_array(x->claimed, x->n_claimed);
    x->claimed = NULL;
    x->n_claimed = 0;
    x->claimed_started = 0;
    x->pending = 1;
    if (can_pipeline(x, c))
        return cycle_pipelined(x, c, err);
    size_t n_acks = 0;
    int rc = settle_singles(x, c, err);
    for (int pass = 0; rc == SB_OK && pass < 2; pass++) {
        int want = pass == 0 ? OUT_ACK : OUT_HANDBACK;
        for (sb_delivery *d = x->settle; d; d = d->next)
            if (d->outcome == want && !d->removed) {
                x->ack_d[n_acks] = d;
                x->msgs[n_acks++] = d->msg;
            }
        if (n_acks > 0)
            rc = pass == 0
                     ? sb__ack_many_on(w->bus, c, x->msgs, n_acks, x->lost, err)
                     : sb__hand_back_many_on(w->bus, c, x->msgs, n_acks,
                                             x->lost, err);
        for (size_t i = 0; rc == SB_OK && i < n_acks; i++)
            if (x->lost[i])
                note_lost(w, x->ack_d[i]);
        n_acks = 0;
    }
    /* Early-ack (T23): the rows background threads take now are removed
     * before their handlers run; until then they stay leased. */
    for (int i = 0; i < x->n_start; i++)
        x->msgs[i] = x->start[i]->msg;
    if (rc == SB_OK && x->n_start > 0)
        rc = sb__remove_many_on(w->bus, c, x->msgs, (size_t)x->n_start,
                                x->start_lost, err);
    for (int i = 0; i < x->n_renew; i++)
        x->msgs[i] = x->renew[i]->msg;
    if (rc == SB_OK && x->n_renew > 0)
        rc = sb__renew_many_on(w->bus, c, x->msgs, (size_t)x->n_renew,
                               w->o.lease_ms, x->renew_lost, err);
    if (rc == SB_OK && x->claim_max > 0)
        rc = cycle_claim(x, c, err);
    /* ... and so are fresh rows for threads with nothing to take. */
    size_t k = x->n_claimed < (size_t)x->start_claimed
                   ? x->n_claimed
                   : (size_t)x->start_claimed;
    if (rc == SB_OK && k > 0) {
        rc = sb__remove_many_on(w->bus, c, x->claimed, k, x->claim_lost, err);
        x->claimed_started = k;
    }
    return rc;
}

static void push_ready(sb_worker *w, sb_delivery *d)
{
    w->n_ready++;
    d->next = NULL;
    if (w->ready_tail)
        w->ready_tail->next = d;
    else
        w->ready_head = d;
    w->ready_tail = d;
}

static void push_settle(sb_worker *w, sb_delivery *d)
{
    d->next = w->settle_head;
    w->settle_head = d;
}

static void push_buf(sb_worker *w, sb_delivery *d)
{
    d->next = NULL;
    if (w->buf_tail)
        w->buf_tail->next = d;
    else
        w->buf_head = d;
    w->buf_tail = d;
}

/* A held delivery whose row turned out not to be ours any more. */
static void drop_lost(sb_worker *w, sb_delivery *d)
{
    sb__log(&w->bus->log, SB_LOG_WARN, "worker",
            "message %s: lease lost while it waited in memory; another "
            "consumer has it",
            d->msg->id);
    atomic_fetch_add(&w->lost, 1);
    all_remove(w, d);
    w->held--;
    delivery_free(d);
}

/* The sb_bus_metrics count of a committed settlement. */
static int count_kind(int outcome)
{
    switch (outcome) {
    case OUT_ACK: return SB_COUNT_ACKED;
    case OUT_NAK: return SB_COUNT_NAKED;
    case OUT_DEAD: return SB_COUNT_DEAD;
    default: return SB_COUNT_NONE; /* handed back, or the lease was lost */
    }
}

/* The counters of the delivery's message type, looked up once (on its
 * handler thread, before the handler runs, for every delivery that
 * starts). */
static sb_type_slot *delivery_type(sb_worker *w, sb_delivery *d)
{
    if (d->type == NULL)
        d->type =
            sb__counters_type(w->bus->counters, w->counts, d->msg->headers);
    return d->type;
}

/* Called with the lock held once a cycle committed. */
static void after_commit(sb_worker *w, cycle *x)
{
    int64_t now = sb__mono_us();
    sb_delivery *d = x->settle;
    while (d != NULL) {
        sb_delivery *next = d->next;
        int kind = count_kind(d->outcome);
        sb__counters_add(w->counts, kind, 1);
        if (kind != SB_COUNT_NONE)
            sb__type_add(delivery_type(w, d), kind, 1);
        switch (d->outcome) {
        case OUT_ACK: atomic_fetch_add(&w->acked, 1); break;
        case OUT_NAK: atomic_fetch_add(&w->naked, 1); break;
        case OUT_HANDBACK: atomic_fetch_add(&w->handed_back, 1); break;
        case OUT_DEAD: atomic_fetch_add(&w->dead, 1); break;
        default: atomic_fetch_add(&w->lost, 1); break; /* fence gone */
        }
        /* A nak due at once is ready at this transaction's start, which
         * the other lane's cycle under way may not count as "now": that
         * cycle must claim again rather than find the queue idle. */
        if (d->outcome == OUT_NAK && d->delay_ms == 0)
            w->wakes++;
        if (w->early && d->outcome == OUT_DEAD &&
            w->o.on_background_failure != NULL) {
            sb_failure f = failure_of(d);
            pthread_mutex_unlock(&w->mu);
            w->o.on_background_failure(d->msg, &f, w->o.user);
            pthread_mutex_lock(&w->mu);
        }
        all_remove(w, d);
        w->held--;
        delivery_free(d);
        d = next;
    }
    x->settle = NULL;
    int64_t lease_us = w->o.lease_ms * 1000;
    size_t woken = 0;
    for (int i = 0; i < x->n_renew; i++) {
        sb_delivery *rd = x->renew[i];
        if (x->renew_lost[i]) {
            atomic_store(&rd->lost, 1);
            rd->next_renew_us = INT64_MAX;
            if (rd->stale)
                drop_lost(w, rd); /* in no list: nothing else frees it */
            continue;
        }
        rd->lease_end_us = x->t0 + lease_us;
        if (rd->stale) {
            /* Its lease is fresh again: it may start. */
            rd->stale = 0;
            push_ready(w, rd);
            woken++;
        }
    }
    for (int i = 0; i < x->n_start; i++) {
        sb_delivery *sd = x->start[i];
        if (x->start_lost[i]) {
            drop_lost(w, sd);
            continue;
        }
        sd->removed = 1;
        push_ready(w, sd);
        woken++;
    }
    w->starting = 0;
    x->n_start = 0;
    for (size_t i = 0; i < x->n_claimed; i++) {
        int run_now = i < x->claimed_started;
        sb_delivery *nd = NULL;
        if (run_now && !x->claim_lost[i])
            nd = w->spare[--w->n_spare]; /* allocated before the cycle */
        else if (!run_now)
            nd = sb__calloc(1, sizeof *nd);
        if (nd == NULL) {
            /* Not holding a leased row is safe: the lease lapses and it
             * returns. */
            sb_msg_free(x->claimed[i]);
            continue;
        }
        memset(nd, 0, sizeof *nd);
        nd->w = w;
        nd->msg = x->claimed[i];
        int64_t bytes =
            (int64_t)nd->msg->payload_len +
            (nd->msg->headers ? (int64_t)strlen(nd->msg->headers) : 0) + 1;
        w->avg_bytes =
            w->avg_bytes > 0 ? (w->avg_bytes * 7 + bytes) / 8 : bytes;
        nd->removed = run_now;
        nd->next_renew_us = run_now ? INT64_MAX : now + lease_us / 3;
        nd->lease_end_us = x->t0 + lease_us;
        nd->all_next = w->all;
        if (w->all)
            w->all->all_prev = nd;
        w->all = nd;
        w->held++;
        if (w->early && !run_now) {
            push_buf(w, nd);
        } else {
            push_ready(w, nd);
            woken++;
        }
    }
    sb__free(x->claimed);
    x->claimed = NULL;
    /* Wake one handler per delivery, not the whole herd. */
    for (size_t i = 0; i < woken && i < (size_t)w->n_handlers; i++)
        pthread_cond_signal(&w->handler_cv);
    if (w->stopping)
        pthread_cond_broadcast(&w->handler_cv); /* they may be done */
    if (x->n_claimed > 0) {
        w->idle = 0;
        w->poll_delay_us = 0;
        /* A full claim may have left more: claim again at once. A short
         * one found the queue drained as its statement saw it, so the
         * next claim waits for a wake-up (a publish, a settlement of the
         * other lane) or the first poll, instead of coming back empty. */
        w->next_poll_us =
            x->n_claimed >= (size_t)x->claim_max || w->wakes != x->wakes
                ? 0
                : now + w->o.empty_poll_ms * 1000;
    } else if (x->claim_max > 0 && w->wakes != x->wakes) {
        /* Woken while this cycle ran: its claim may have read the database
         * before the commit that woke us. Claim again at once. */
        w->next_poll_us = 0;
    } else if (x->claim_max > 0) {
        /* Empty: back off from empty_poll_ms to max_poll_ms (T13). */
        int64_t first = w->o.empty_poll_ms * 1000;
        w->poll_delay_us = w->poll_delay_us ? w->poll_delay_us * 2 : first;
        if (w->poll_delay_us > w->o.max_poll_ms * 1000)
            w->poll_delay_us = w->o.max_poll_ms * 1000;
        w->next_poll_us = now + w->poll_delay_us;
        if (x->probe && !x->pending && w->held == 0 && w->claiming == 0) {
            w->idle = 1;
            pthread_cond_broadcast(&w->idle_cv);
        }
    }
    if (x->claim_max > 0) {
        w->limit_by_running = x->limit_cut && x->limit_by_running;
        if (x->limit_cut) {
            /* T36: the limits ended the claim, not the queue: claim again
             * when a token is due, or (max_running) after the first poll
             * delay or with this worker's next settlement, whichever
             * comes first; never later than the longest poll. */
            int64_t wait = x->limit_wait_us > 0 ? x->limit_wait_us
                                                : w->o.empty_poll_ms * 1000;
            if (wait > w->o.max_poll_ms * 1000)
                wait = w->o.max_poll_ms * 1000;
            w->poll_delay_us = 0;
            w->next_poll_us = now + wait;
        }
    }
    w->outage_delay_us = 0;
    pthread_cond_broadcast(&w->idle_cv);
}

/* Unstarted deliveries go back on stop (T15, T26): the ready list, and
 * buffered rows set aside to wait for a renewal. */
static void hand_back_unstarted(sb_worker *w)
{
    while (w->ready_head != NULL) {
        sb_delivery *d = w->ready_head;
        w->ready_head = d->next;
        d->outcome = OUT_HANDBACK;
        push_settle(w, d);
    }
    w->ready_tail = NULL;
    w->n_ready = 0;
    for (sb_delivery *d = w->all; d; d = d->all_next)
        if (d->stale) {
            d->stale = 0;
            d->outcome = OUT_HANDBACK;
            push_settle(w, d);
        }
}

/* How many rows the worker may hold: its handlers' plus the prefetch
 * buffer, which never holds more than PREFETCH_WORK_US (nor half a
 * lease) of work at the handlers' measured pace (T15), nor more than
 * PREFETCH_MAX_BYTES of messages of the average size claimed; until a
 * handler has run, one row more per handler. */
static int held_limit(const sb_worker *w)
{
    if (w->early || w->prefetch == 0)
        return w->slots;
    /* T36: a limited queue's leases count against its limits, so the
     * worker claims only for its handlers, leaving the rest to others. */
    if (w->limited)
        return w->o.concurrency;
    int conc = w->o.concurrency;
    int64_t work_us = w->o.lease_ms * 500 < PREFETCH_WORK_US
                          ? w->o.lease_ms * 500
                          : PREFETCH_WORK_US;
    int64_t worth =
        w->avg_run_us > 0 ? (int64_t)conc * work_us / w->avg_run_us : conc;
    if (w->avg_bytes > 0 && PREFETCH_MAX_BYTES / w->avg_bytes < worth)
        worth = PREFETCH_MAX_BYTES / w->avg_bytes;
    return conc + (worth < w->prefetch ? (int)worth : w->prefetch);
}

/* Whether a claim now is worth its statement: always without prefetch;
 * with it, once the buffer is down to half or a handler is idle, so the
 * claims that refill it are few and large. */
static int claim_worthwhile(const sb_worker *w, int limit)
{
    if (w->early || w->prefetch == 0 || w->limited)
        return 1;
    int conc = w->o.concurrency;
    if (w->running_handlers + w->n_ready + w->claiming < conc)
        return 1;
    return (w->n_ready + w->claiming) * 4 <= (limit - conc) * 3;
}

/* How many rows one claim takes: a quarter of the buffer and a row per
 * handler, so that with two lanes the next claim goes out while this one
 * is under way, and a second worker finds rows left to claim. */
static int claim_size(const sb_worker *w, int limit, int free_slots)
{
    if (w->early || w->prefetch == 0 || w->limited)
        return free_slots;
    int conc = w->o.concurrency;
    int chunk = (limit - conc) / 4 + conc;
    return chunk < free_slots ? chunk : free_slots;
}

/* Early-ack (T23): accepted rows no background thread took before the
 * drain's last quarter are dead-lettered. Their rows still exist, so the
 * dead letter and the delete are one fenced transaction (T21): if it
 * cannot be written, the rows return when their leases lapse. */
static void dead_letter_unstarted(sb_worker *w)
{
    int any = w->buf_head != NULL;
    while (w->buf_head != NULL) {
        sb_delivery *d = w->buf_head;
        w->buf_head = d->next;
        d->outcome = OUT_DEAD;
        d->next_renew_us = INT64_MAX;
        sb__free(d->dl_reason);
        d->dl_reason = sb__strdup("worker stopped before the message was "
                                  "processed");
        push_settle(w, d);
    }
    w->buf_tail = NULL;
    if (any)
        pthread_cond_broadcast(&w->handler_cv); /* nothing more to take */
}

/* Settlements a cycle may take now: not those another lane's cycle is
 * renewing (their rows are locked by it until it commits). */
static int count_settled(const sb_worker *w)
{
    int n = 0;
    for (const sb_delivery *d = w->settle_head; d; d = d->next)
        n += !d->renewing;
    return n;
}

/* Detach the settlements count_settled counts. */
static sb_delivery *take_settled(sb_worker *w)
{
    sb_delivery *taken = NULL, *kept = NULL;
    while (w->settle_head != NULL) {
        sb_delivery *d = w->settle_head;
        w->settle_head = d->next;
        sb_delivery **to = d->renewing ? &kept : &taken;
        d->next = *to;
        *to = d;
    }
    w->settle_head = kept;
    return taken;
}

/* Writes still owed to the database: settlements other than a removed
 * row's ack (which needs none), and accepted rows not yet removed. */
static int count_unwritten(const sb_worker *w)
{
    int n = 0;
    for (const sb_delivery *d = w->settle_head; d; d = d->next)
        if (d->outcome > 0 && !(d->removed && d->outcome != OUT_DEAD))
            n++;
    for (const sb_delivery *d = w->buf_head; d; d = d->next)
        n++;
    return n;
}

/* Early-ack: how many background threads have nothing to run. */
static int idle_background(const sb_worker *w)
{
    int n = w->n_handlers - w->running_handlers - w->n_ready - w->starting;
    return n > 0 ? n : 0;
}

/* Wait on the pump's condition until `until` (INT64_MAX: until woken). */
static void pump_wait(sb_worker *w, int64_t until)
{
    if (until == INT64_MAX)
        pthread_cond_wait(&w->pump_cv, &w->mu);
    else
        sb__cond_wait_until(&w->pump_cv, &w->mu, until);
}

/* Read the queue's settings (called with w->mu held; released during the
 * read). A failed read keeps the settings known before (none, the first
 * time: a worker whose settings cannot be read still works): the next
 * cycle's database error, if any, is the one reported. No lane claims
 * before the first read has ended. */
static void refresh_settings(sb_worker *w)
{
    w->settings_reading = 1;
    pthread_mutex_unlock(&w->mu);
    sb_settings st;
    sb_error err;
    int rc = sb__settings_get(w->bus, w->queue, &st, &err);
    pthread_mutex_lock(&w->mu);
    w->settings_reading = 0;
    w->settings_read = 1;
    w->settings_next_us = sb__mono_us() + SB_SETTINGS_REFRESH_MS * 1000LL;
    pthread_cond_broadcast(&w->pump_cv); /* the other lane waits for it */
    if (rc != SB_OK) {
        sb__log(&w->bus->log, SB_LOG_WARN, "worker",
                "queue %s: reading its settings failed (%s)", w->queue,
                err.message);
        return;
    }
    if ((w->paused && !st.paused) || st.max_running != w->max_running ||
        st.rate_limit != w->rate_limit ||
        st.rate_interval_ms != w->rate_interval_ms)
        w->next_poll_us = 0; /* resumed, or new limits: claim at once */
    w->paused = st.paused;
    w->max_running = st.max_running;
    w->rate_limit = st.rate_limit;
    w->rate_interval_ms = st.rate_interval_ms;
    w->limited = st.max_running > 0 || st.rate_limit > 0;
    if (!w->limited)
        w->limit_by_running = 0;
    w->prioritized = st.prioritized;
    w->ttl_ms = st.ttl_ms;
    w->clock_offset_us = st.clock_offset_us;
    /* Paused, a worker with nothing in hand has nothing it may run. */
    if (w->paused && w->held == 0 && w->claiming == 0) {
        w->idle = 1;
        pthread_cond_broadcast(&w->idle_cv);
    }
}

/* Whether a claim is due by time: its poll came, or (T36) max_running
 * cut the last claim short and the cycle settles `settled` deliveries of
 * this worker, which free room for it. */
static int claim_due(const sb_worker *w, int64_t now, int settled)
{
    return now >= w->next_poll_us || (w->limit_by_running && settled > 0);
}

/* The queue's settings let this worker claim (T35). */
static int may_claim(const sb_worker *w)
{
    return w->settings_read && !w->paused;
}

static void *pump_main(void *arg)
{
    cycle *x = arg;
    sb_worker *w = x->w;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int64_t now = sb__mono_us();
        if (!w->stopping && !w->settings_reading &&
            now >= w->settings_next_us) {
            refresh_settings(w);
            continue;
        }
        /* Early-ack: the drain's last quarter is kept for dead letters. */
        int64_t cut =
            w->stop_deadline_us - (w->early ? w->o.drain_timeout_ms * 250 : 0);
        if (w->stopping) {
            /* Not while a claim is under way: rows handed back now would
             * be claimed by it and handed back again. Its cycle's commit
             * brings its lane back here. */
            if (!w->early) {
                if (w->claiming == 0)
                    hand_back_unstarted(w);
            } else if (now >= cut)
                dead_letter_unstarted(w);
            if ((w->held == 0 && w->live_handlers == 0) || w->abandon)
                break;
        }
        if (now < w->retry_at_us) {
            /* Backing off after a failed cycle (T26). */
            int64_t until = w->retry_at_us;
            if (w->stopping && w->early && w->buf_head && cut > now &&
                cut < until)
                until = cut;
            pump_wait(w, until);
            continue;
        }
        /* Early-ack: idle background threads take buffered rows; the
         * cycle removes them before they run (not after the cut). */
        x->n_start = 0;
        int can_start = w->early && (!w->stopping || now < cut);
        while (can_start && w->buf_head != NULL && idle_background(w) > 0) {
            sb_delivery *d = w->buf_head;
            w->buf_head = d->next;
            if (w->buf_head == NULL)
                w->buf_tail = NULL;
            d->next_renew_us = INT64_MAX; /* it is being removed */
            x->start[x->n_start++] = d;
            w->starting++;
        }
        int64_t next_renew = INT64_MAX;
        x->n_renew = 0;
        for (sb_delivery *d = w->all; d; d = d->all_next) {
            /* In one cycle's renewals at a time: two would race to use
             * the delivery after their commits. */
            if (d->outcome != OUT_NONE || d->next_renew_us == INT64_MAX ||
                d->renewing)
                continue;
            if (d->next_renew_us <= now && x->n_renew < w->slots) {
                d->renewing = 1;
                x->renew[x->n_renew++] = d;
            } else if (d->next_renew_us < next_renew)
                next_renew = d->next_renew_us;
        }
        /* Rows settled in this cycle free their slots for its claim; the
         * other lane's claim under way has taken its share. */
        int limit = held_limit(w);
        int settled = count_settled(w);
        int free_slots = limit - w->held - w->claiming + settled;
        int want_claim = !w->stopping && may_claim(w) && free_slots > 0 &&
                         claim_due(w, now, settled) &&
                         claim_worthwhile(w, limit);
        if (settled == 0 && x->n_renew == 0 && !want_claim && x->n_start == 0) {
            int64_t until = next_renew;
            /* While the other lane reads them, its broadcast wakes us. */
            if (!w->stopping && !w->settings_reading &&
                w->settings_next_us < until)
                until = w->settings_next_us;
            if (!w->stopping && may_claim(w) && free_slots > 0 &&
                claim_worthwhile(w, limit) && w->next_poll_us < until)
                until = w->next_poll_us;
            /* A deadline already past is waited for by signal, not by a
             * spin that would starve sb_worker_stop of the lock. */
            if (w->stopping && w->stop_deadline_us > now &&
                w->stop_deadline_us < until)
                until = w->stop_deadline_us;
            if (w->stopping && w->early && w->buf_head && cut > now &&
                cut < until)
                until = cut;
            pump_wait(w, until);
            continue;
        }
        /* Group commit (T15, T24): with nothing to claim yet, settlements
         * wait a moment for more to finish and for a wake-up whose claim
         * they can share a transaction with, instead of paying one of
         * their own (at 2,000 messages a second that is one transaction
         * of three per message). A claim due now never waits. */
        if (settled > 0 && !want_claim && x->n_renew == 0 && x->n_start == 0 &&
            !w->stopping) {
            int64_t until = sb__mono_us() + SETTLE_LINGER_US;
            while (!w->stopping && !want_claim && sb__mono_us() < until) {
                sb__cond_wait_until(&w->pump_cv, &w->mu, until);
                settled = count_settled(w);
                free_slots = limit - w->held - w->claiming + settled;
                want_claim = !w->stopping && may_claim(w) && free_slots > 0 &&
                             claim_due(w, sb__mono_us(), settled) &&
                             claim_worthwhile(w, limit);
            }
        }
        x->settle = take_settled(w);
        x->cursor.prioritized = w->prioritized;
        x->limited = w->limited;
        x->claim_max = want_claim ? claim_size(w, limit, free_slots) : 0;
        w->claiming += x->claim_max;
        x->probe = want_claim && w->held == 0;
        x->wakes = w->wakes;
        /* Early-ack: threads still idle run fresh rows at once; their
         * deliveries exist before the rows are removed. */
        x->start_claimed = want_claim && w->early ? idle_background(w) : 0;
        while (w->n_spare < x->start_claimed) {
            sb_delivery *d = sb__calloc(1, sizeof *d);
            if (d == NULL)
                break;
            w->spare[w->n_spare++] = d;
        }
        if (x->start_claimed > w->n_spare)
            x->start_claimed = w->n_spare;
        for (int i = 0; i < x->n_renew; i++)
            x->renew[i]->next_renew_us = now + w->o.lease_ms * 1000 / 3;
        pthread_mutex_unlock(&w->mu);

        sb_error err;
        sb_retry_policy once = {1, 0, 0};
        x->t0 = sb__mono_us();
        int rc = sb__db_run_tx(w->bus->pool, &once, cycle_tx, x, &err);
        int64_t took = sb__mono_us() - x->t0;
        sb__maybe_prune(w->bus);

        pthread_mutex_lock(&w->mu);
        w->last_cycle_us = took;
        w->claiming -= x->claim_max;
        for (int i = 0; i < x->n_renew; i++)
            x->renew[i]->renewing = 0;
        if (rc == SB_OK) {
            after_commit(w, x);
            w->retry_at_us = 0;
            w->give_up_at_us = 0;
            w->last_db_error[0] = '\0';
            continue;
        }
        sb_msg_free_array(x->claimed, x->n_claimed);
        x->claimed = NULL;
        x->n_claimed = 0;
        /* Outage or error: keep the settlements (fenced, safe to repeat),
         * retry renewals soon, back off 100 ms -> 5 s with jitter (T26);
         * rows that were to be removed wait in the buffer again, leased. */
        while (x->settle != NULL) {
            sb_delivery *d = x->settle;
            x->settle = d->next;
            push_settle(w, d);
        }
        w->outage_delay_us =
            w->outage_delay_us ? w->outage_delay_us * 2 : 100000;
        if (w->outage_delay_us > 5000000)
            w->outage_delay_us = 5000000;
        int64_t pause = sb__jitter_us(w->outage_delay_us);
        if (w->stopping && pause > 250000)
            pause = 250000; /* a stop has a deadline: try more often */
        now = sb__mono_us();
        for (int i = x->n_start - 1; i >= 0; i--) {
            sb_delivery *d = x->start[i];
            d->next = w->buf_head;
            w->buf_head = d;
            if (w->buf_tail == NULL)
                w->buf_tail = d;
            d->next_renew_us = now + pause;
        }
        x->n_start = 0;
        w->starting = 0;
        for (int i = 0; i < x->n_renew; i++)
            x->renew[i]->next_renew_us = now + pause;
        snprintf(w->last_db_error, sizeof w->last_db_error, "%s", err.message);
        sb__log(&w->bus->log, SB_LOG_WARN, "worker",
                "queue %s: database cycle failed (%s); retrying in %lld ms",
                w->queue, err.message, (long long)(pause / 1000));
        w->next_poll_us = now + pause;
        w->retry_at_us = now + pause;
        if (w->stopping)
            pthread_cond_broadcast(&w->handler_cv); /* they may be done */
        /* Stopping with every handler done: what is left are writes. Try
         * them for a moment, then leave them to lease expiry (T26). */
        if (w->stopping && w->running_handlers == 0 && w->n_ready == 0) {
            if (w->give_up_at_us == 0)
                w->give_up_at_us = now + STOP_WRITE_GRACE_US;
            if (now >= w->give_up_at_us || now >= w->stop_deadline_us)
                break;
        }
    }
    /* The last lane out writes the account; the others leave too if the
     * reason is theirs as well. */
    pthread_cond_broadcast(&w->pump_cv);
    if (--w->live_lanes > 0) {
        pthread_mutex_unlock(&w->mu);
        return NULL;
    }
    w->unwritten = count_unwritten(w);
    if (w->unwritten > 0)
        sb__log(&w->bus->log, SB_LOG_WARN, "worker",
                "queue %s: stopped with %d settlement(s) or hand-back(s) "
                "not written (%s); their messages return to the queue when "
                "their leases expire",
                w->queue, w->unwritten,
                w->last_db_error[0] ? w->last_db_error
                                    : "the stop timeout passed");
    w->pump_done = 1;
    pthread_cond_broadcast(&w->idle_cv);
    pthread_cond_broadcast(&w->handler_cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- handler threads ---- */

/* Decide a finished delivery's settlement. Runs on the handler thread
 * without the lock, so it returns the outcome instead of storing it: the
 * pump reads `outcome` under the lock (renewal skips settled deliveries). */
static int finish(sb_worker *w, sb_delivery *d, int rc)
{
    int max = w->o.max_attempts;
    int spent = max > 0 && d->msg->attempts >= max;
    int outcome;
    if (d->dl_reason != NULL || d->dl_asked) {
        outcome = OUT_DEAD;
    } else if (rc == SB_OK) {
        outcome = OUT_ACK;
    } else if (w->early || spent) {
        outcome = OUT_DEAD;
        char reason[96];
        if (w->early)
            snprintf(reason, sizeof reason,
                     "handler failed after the "
                     "message was acknowledged (ack after enqueue)");
        else
            snprintf(reason, sizeof reason, "max attempts (%d) reached", max);
        d->dl_reason = sb__strdup(reason);
    } else {
        outcome = OUT_NAK;
        d->delay_ms = nak_delay(w, d->msg->attempts);
    }
    if (rc != SB_OK && d->exc_type == NULL && outcome != OUT_ACK) {
        d->exc_type = sb__strdup("error");
        /* Set already when sb_delivery_fail could copy the message but not
         * the type (out of memory): kept, not leaked. */
        if (d->exc_msg == NULL)
            d->exc_msg = sb__strdup(sb_strerror(rc));
    }
    return outcome;
}

/* C23 through the bus's reply hook (registered by the channel): a job
 * that names a reply-to gets the handler's reply on success and an error
 * reply once it is dead-lettered. Runs before settlement, keyed by the
 * job's id, so a redelivered job's reply is an idempotent no-op. Returns
 * the outcome to settle with: a success whose reply could not be sent
 * (out of memory, the database) is settled as a failed attempt instead,
 * so the job runs again and replies then; acked, the requester's reply
 * would be lost. An early-acked row is gone already: nothing to retry. */
static int send_reply(sb_worker *w, sb_delivery *d, int outcome)
{
    sb_bus *bus = w->bus;
    if (bus->reply_hook == NULL)
        return outcome;
    int rc = sb__msg_parse_headers(d->msg);
    if (rc == SB_OK && (sb_msg_header(d->msg, "sb-reply-to") == NULL ||
                        sb_msg_correlation_id(d->msg) == NULL))
        return outcome;
    if (rc == SB_OK && outcome == OUT_ACK) {
        rc = bus->reply_hook(bus->reply_hook_user, d->msg,
                             d->reply ? d->reply : "",
                             d->has_reply ? d->reply_len : 0, NULL, 0);
    } else if (rc == SB_OK && outcome == OUT_DEAD) {
        sb_failure f = failure_of(d);
        if (f.exception_type == NULL)
            f.exception_type = "dead-lettered";
        if (f.exception_message == NULL)
            f.exception_message = f.reason;
        bus->reply_hook(bus->reply_hook_user, d->msg, NULL, 0, &f, 0);
    }
    if (rc == SB_OK || outcome != OUT_ACK || d->removed)
        return outcome;
    outcome = finish(w, d, rc);
    /* Attempts spent: dead-lettered, with its error reply. */
    return outcome == OUT_DEAD ? send_reply(w, d, outcome) : outcome;
}

/* Whether a handler thread with nothing to run should wait for more: not
 * once the pump is gone, nor once the worker stops -- except, in early-ack
 * mode, while accepted rows may still be handed to background threads. */
static int may_get_work(const sb_worker *w)
{
    if (w->pump_done)
        return 0;
    if (!w->stopping)
        return 1;
    return w->early && (w->buf_head != NULL || w->starting > 0);
}

static void *handler_main(void *arg)
{
    sb_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        /* A removed (early-ack) row in the list always runs, even after
         * the pump has gone: memory is its only copy. */
        while (w->ready_head == NULL && may_get_work(w))
            pthread_cond_wait(&w->handler_cv, &w->mu);
        if (w->ready_head == NULL)
            break;
        sb_delivery *d = w->ready_head;
        w->ready_head = d->next;
        if (w->ready_head == NULL)
            w->ready_tail = NULL;
        w->n_ready--;
        if (!d->removed && (atomic_load(&d->lost) & 1)) {
            drop_lost(w, d); /* a renewal found another consumer has it */
            pthread_cond_signal(&w->pump_cv);
            continue;
        }
        int64_t lease_us = w->o.lease_ms * 1000;
        if (!d->removed && d->lease_end_us - sb__mono_us() < lease_us / 3) {
            /* A buffered row whose renewals have been failing: starting it
             * could overlap another consumer once the lease lapses. It
             * waits for a renewal (T15, T16). */
            d->stale = 1;
            d->next_renew_us = 0;
            pthread_cond_signal(&w->pump_cv);
            continue;
        }
        d->running = 1;
        w->running_handlers++;
        int64_t ttl_ms = w->ttl_ms, clock_offset_us = w->clock_offset_us;
        pthread_mutex_unlock(&w->mu);
        int64_t began = sb__mono_us();

        int max = w->o.max_attempts;
        int outcome;
        sb_type_slot *type = delivery_type(w, d);
        if (!w->early && max > 0 && d->msg->attempts > max) {
            /* A previous attempt died with its process (T20). */
            char reason[128];
            snprintf(reason, sizeof reason,
                     "max attempts (%d) exceeded: attempt %d was not run", max,
                     d->msg->attempts);
            d->dl_reason = sb__strdup(reason);
            d->exc_type = sb__strdup("max-attempts");
            outcome = finish(w, d, SB_ERROR);
        } else if (sb__msg_expired(d->msg, ttl_ms, clock_offset_us)) {
            /* T40: past its expiry, checked as late as it can be. */
            d->dl_reason = sb__strdup("expired");
            d->exc_type = sb__strdup("expired");
            d->exc_msg = sb__strdup("its time to live passed before a "
                                    "handler ran it");
            outcome = finish(w, d, SB_ERROR);
        } else {
            outcome = finish(
                w, d,
                sb__count_handler(w->bus, type, w->o.handler, d, w->o.user));
        }
        outcome = send_reply(w, d, outcome);

        int64_t ran = sb__mono_us() - began;
        pthread_mutex_lock(&w->mu);
        w->avg_run_us = w->avg_run_us > 0 ? (w->avg_run_us * 7 + ran) / 8 : ran;
        if (w->avg_run_us < 1)
            w->avg_run_us = 1;
        d->outcome = outcome;
        d->running = 0;
        w->running_handlers--;
        push_settle(w, d);
        pthread_cond_signal(&w->pump_cv);
    }
    w->live_handlers--;
    pthread_cond_broadcast(&w->idle_cv);
    pthread_cond_signal(&w->pump_cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- public API ---- */

/* Whether the caller's `size` covers a field ending at `end` (a caller of
 * an older version passes a smaller struct; size 0 means this version). */
#define SB_OPT_END(f)                                                          \
    (offsetof(sb_worker_options, f) + sizeof(((sb_worker_options *)0)->f))
static int covers(const sb_worker_options *o, size_t end)
{
    return o->size == 0 || o->size >= end;
}

static int check_options(const sb_worker_options *o, sb_error *err)
{
    if (o == NULL)
        return sb__err(err, SB_INVALID, "opts", "options are required");
    if (o->size != 0 && o->size < SB_WORKER_OPTIONS_V1_SIZE)
        return sb__err(err, SB_INVALID, "size",
                       "sb_worker_options.size is smaller than any version");
    const char *ep = covers(o, SB_OPT_END(endpoint)) ? o->endpoint : NULL;
    if (ep != NULL && (strlen(ep) > 200 || !sb__utf8_valid(ep, strlen(ep))))
        return sb__err(err, SB_INVALID, "endpoint",
                       "endpoint must be at most 200 bytes of UTF-8");
    int prefetch = covers(o, SB_OPT_END(prefetch)) ? o->prefetch : 0;
    if (prefetch < SB_PREFETCH_NONE || prefetch > SB_PREFETCH_MAX)
        return sb__err(err, SB_INVALID, "prefetch",
                       "prefetch must be %d (none), 0 (the default, %d) or "
                       "up to %d (got %d)",
                       SB_PREFETCH_NONE, SB_PREFETCH_DEFAULT, SB_PREFETCH_MAX,
                       prefetch);
    if (prefetch != 0 && o->ack_mode == SB_ACK_AFTER_ENQUEUE)
        return sb__err(err, SB_INVALID, "prefetch",
                       "prefetch is not used with ack after enqueue: "
                       "background_capacity bounds its buffer");
    int rc = sb_validate_queue_name(o->queue, err);
    if (rc != SB_OK)
        return rc;
    if (o->handler == NULL)
        return sb__err(err, SB_INVALID, "handler", "a handler is required");
    if (o->concurrency < 0 || o->concurrency > 256)
        return sb__err(err, SB_INVALID, "concurrency",
                       "concurrency must be 1 to 256 (got %d)", o->concurrency);
    if (o->lease_ms < 0 || (o->lease_ms > 0 && o->lease_ms < 30) ||
        o->lease_ms > 86400000LL)
        return sb__err(err, SB_INVALID, "lease_ms",
                       "lease must be 30 ms to 24 h (got %lld ms)",
                       (long long)o->lease_ms);
    if (o->max_attempts < -1)
        return sb__err(err, SB_INVALID, "max_attempts",
                       "max_attempts must be -1 (unlimited) or more");
    if (o->redelivery_delay_ms < -1 || o->redelivery_max_ms < 0 ||
        o->empty_poll_ms < 0 || o->max_poll_ms < 0 || o->stop_timeout_ms < 0 ||
        o->drain_timeout_ms < 0)
        return sb__err(err, SB_INVALID, "opts",
                       "durations must not be negative");
    if (o->redelivery_factor != 0 &&
        (o->redelivery_factor < 1.0 || o->redelivery_factor > 100.0))
        return sb__err(err, SB_INVALID, "redelivery_factor",
                       "redelivery_factor must be 1 to 100");
    if (o->ack_mode == SB_ACK_AFTER_ENQUEUE) {
        if (o->background_workers < 1 || o->background_workers > 256 ||
            o->background_capacity < 1 || o->background_capacity > 100000)
            return sb__err(err, SB_INVALID,
                           o->background_workers < 1 ||
                                   o->background_workers > 256
                               ? "background_workers"
                               : "background_capacity",
                           "ack after enqueue needs background_workers "
                           "(1..256) and background_capacity (1..100000)");
    } else if (o->ack_mode != SB_ACK_AFTER_HANDLER) {
        return sb__err(err, SB_INVALID, "ack_mode", "unknown ack_mode");
    }
    return SB_OK;
}

static void free_lane(cycle *x)
{
    sb__free(x->renew);
    sb__free(x->renew_lost);
    sb__free(x->msgs);
    sb__free(x->renew_msgs);
    sb__free(x->ack_d);
    sb__free(x->lost);
    sb__free(x->start);
    sb__free(x->start_lost);
    sb__free(x->claim_lost);
}

static int alloc_lane(sb_worker *w, cycle *x)
{
    size_t k = (size_t)w->slots;
    x->w = w;
    x->renew = sb__calloc(k, sizeof *x->renew);
    x->renew_lost = sb__calloc(k, sizeof *x->renew_lost);
    x->msgs = sb__calloc(k, sizeof *x->msgs);
    x->renew_msgs = sb__calloc(k, sizeof *x->renew_msgs);
    x->ack_d = sb__calloc(k, sizeof *x->ack_d);
    x->lost = sb__calloc(k, sizeof *x->lost);
    x->start = sb__calloc(k, sizeof *x->start);
    x->start_lost = sb__calloc(k, sizeof *x->start_lost);
    x->claim_lost = sb__calloc(k, sizeof *x->claim_lost);
    return x->renew && x->renew_lost && x->msgs && x->renew_msgs && x->ack_d &&
           x->lost && x->start && x->start_lost && x->claim_lost;
}

static void free_buffers(sb_worker *w)
{
    sb__free(w->handlers);
    sb__free(w->queue);
    sb__free(w->endpoint);
    sb__free(w->beat_endpoint);
    for (int i = 0; w->lanes != NULL && i < w->n_lanes; i++)
        free_lane(&w->lanes[i]);
    sb__free(w->lanes);
    for (int i = 0; w->spare != NULL && i < w->n_spare; i++)
        sb__free(w->spare[i]);
    sb__free(w->spare);
}

static void apply_defaults(sb_worker_options *o)
{
    if (o->concurrency == 0)
        o->concurrency = 1;
    if (o->lease_ms == 0)
        o->lease_ms = 30000;
    if (o->max_attempts == 0)
        o->max_attempts = 5;
    else if (o->max_attempts == -1)
        o->max_attempts = 0; /* internally 0 = unlimited */
    if (o->redelivery_delay_ms == 0)
        o->redelivery_delay_ms = o->redelivery_factor > 1.0 ? 1000 : 5000;
    else if (o->redelivery_delay_ms == -1)
        o->redelivery_delay_ms = 0; /* redeliver at once */
    if (o->redelivery_max_ms == 0)
        o->redelivery_max_ms = 300000;
    if (o->empty_poll_ms == 0)
        o->empty_poll_ms = 250;
    if (o->max_poll_ms == 0)
        o->max_poll_ms = 2000;
    if (o->max_poll_ms < o->empty_poll_ms)
        o->max_poll_ms = o->empty_poll_ms;
    if (o->stop_timeout_ms == 0)
        o->stop_timeout_ms = 30000;
    if (o->drain_timeout_ms == 0)
        o->drain_timeout_ms = 20000;
}

/* sb_worker_start; `beat`: the worker's endpoint beats (issue 22). */
static int worker_start(sb_bus *bus, const sb_worker_options *opts, int beat,
                        sb_worker **out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    int rc = check_options(opts, err);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    sb_worker *w = sb__calloc(1, sizeof *w);
    if (w == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    w->bus = bus;
    /* A caller of an older version passes a smaller struct: read only its
     * `size` bytes (the rest stays zero: the defaults). */
    memcpy(&w->o, opts,
           opts->size != 0 && opts->size < sizeof w->o ? opts->size
                                                       : sizeof w->o);
    w->o.size = sizeof w->o;
    if (w->o.endpoint != NULL && w->o.endpoint[0] != '\0') {
        w->endpoint = sb__strdup(w->o.endpoint);
        if (w->endpoint == NULL) {
            sb__free(w);
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        }
    }
    w->o.endpoint = w->endpoint;
    apply_defaults(&w->o);
    w->queue = sb__strdup(opts->queue);
    w->o.queue = w->queue;
    w->counts = sb__counters_slot(bus->counters, opts->queue);
    w->early = w->o.ack_mode == SB_ACK_AFTER_ENQUEUE;
    w->prefetch = w->early || w->o.prefetch == SB_PREFETCH_NONE ? 0
                  : w->o.prefetch == 0 ? SB_PREFETCH_DEFAULT
                                       : w->o.prefetch;
    w->slots =
        w->early ? w->o.background_capacity : w->o.concurrency + w->prefetch;
    w->n_handlers = w->early ? w->o.background_workers : w->o.concurrency;
    w->handlers = sb__calloc((size_t)w->n_handlers, sizeof *w->handlers);
    /* A second lane pays where writers run side by side (measured in
     * docs/benchmarks.md); SQLite has one writer. Early-ack and
     * prefetch-none keep the one pump. */
    w->n_lanes =
        !w->early && w->prefetch > 0 && bus->dialect != SB_DIALECT_SQLITE
            ? PUMP_LANES
            : 1;
    w->lanes = sb__calloc((size_t)w->n_lanes, sizeof *w->lanes);
    int lanes_ok = w->lanes != NULL;
    for (int i = 0; lanes_ok && i < w->n_lanes; i++)
        lanes_ok = alloc_lane(w, &w->lanes[i]);
    w->spare = sb__calloc((size_t)w->n_handlers, sizeof *w->spare);
    if (w->queue == NULL || w->handlers == NULL || !lanes_ok ||
        w->spare == NULL) {
        free_buffers(w);
        sb__free(w);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    pthread_mutex_init(&w->mu, NULL);
    sb__cond_init_monotonic(&w->pump_cv);
    sb__cond_init_monotonic(&w->handler_cv);
    sb__cond_init_monotonic(&w->idle_cv);

    pthread_mutex_lock(&w->mu);
    int started = 0;
    for (; started < w->n_handlers; started++) {
        if (pthread_create(&w->handlers[started], NULL, handler_main, w) != 0)
            break;
        w->live_handlers++;
    }
    /* Fewer lanes than planned only make the worker slower. */
    while (started == w->n_handlers && w->started_lanes < w->n_lanes &&
           pthread_create(&w->lanes[w->started_lanes].thread, NULL, pump_main,
                          &w->lanes[w->started_lanes]) == 0)
        w->started_lanes++;
    w->live_lanes = w->started_lanes;
    int pump_ok = w->started_lanes > 0;
    if (!pump_ok) {
        /* Nothing was claimed yet, so no handler can run. */
        w->pump_done = 1;
        pthread_cond_broadcast(&w->handler_cv);
        pthread_mutex_unlock(&w->mu);
        for (int i = 0; i < started; i++)
            pthread_join(w->handlers[i], NULL);
        w->n_handlers = 0;
        w->stopped = 1;
        w->joined = 1;
        sb_worker_free(w);
        return sb__err(err, SB_NOMEM, NULL, "could not start threads");
    }
    pthread_mutex_unlock(&w->mu);
    w->waker.queue = w->queue;
    w->waker.fn = wake_pump;
    w->waker.user = w;
    sb__bus_add_waker(bus, &w->waker);
    if (bus->dialect == SB_DIALECT_POSTGRES && bus->notify >= 0)
        sb__wake_listener_start(bus, bus->channel, w->queue, notified, w,
                                &w->listener);
    else if (bus->dialect == SB_DIALECT_SQLITE && bus->notify >= 0)
        w->wal = sb__wal_watch_start(sb__pool_config(bus->pool)->target,
                                     &bus->log, wake_pump, w);
    /* Issue 22: its endpoint beats while it runs (its name: the endpoint
     * option, else the queue); without memory it only does not beat. */
    if (beat) {
        w->beat_endpoint = sb__strdup(w->endpoint ? w->endpoint : w->queue);
        if (w->beat_endpoint != NULL)
            sb__beat_register(bus, w->beat_endpoint);
    }
    *out = w;
    return SB_OK;
}

int sb_worker_start(sb_bus *bus, const sb_worker_options *opts, sb_worker **out,
                    sb_error *err)
{
    return worker_start(bus, opts, 1, out, err);
}

int sb__worker_start_internal(sb_bus *bus, const sb_worker_options *opts,
                              sb_worker **out, sb_error *err)
{
    return worker_start(bus, opts, 0, out, err);
}

static void join_lanes(sb_worker *w)
{
    for (int i = 0; i < w->started_lanes; i++)
        pthread_join(w->lanes[i].thread, NULL);
}

int sb_worker_stop(sb_worker *w, sb_error *err)
{
    sb_error_clear(err);
    if (w == NULL)
        return SB_OK;
    pthread_mutex_lock(&w->mu);
    if (w->stopped) {
        pthread_mutex_unlock(&w->mu);
        return SB_OK;
    }
    if (!w->stopping) {
        w->stopping = 1;
        int64_t budget =
            w->early ? w->o.drain_timeout_ms : w->o.stop_timeout_ms;
        w->stop_deadline_us = sb__mono_us() + budget * 1000;
        for (sb_delivery *d = w->all; d; d = d->all_next)
            if (d->running)
                atomic_store(&d->lost, atomic_load(&d->lost) | 2);
    }
    pthread_cond_broadcast(&w->pump_cv);
    pthread_cond_broadcast(&w->handler_cv);
    while (!w->pump_done && sb__mono_us() < w->stop_deadline_us)
        sb__cond_wait_until(&w->idle_cv, &w->mu, w->stop_deadline_us);
    int rc = SB_OK;
    if (!w->pump_done) {
        /* The budget is spent: stop renewing, so the rows of handlers
         * still running return to the queue after the lease (free() still
         * waits for them), and leave what is not written to lease expiry.
         * The pump leaves at once unless it is inside a database call. */
        w->abandon = 1;
        pthread_cond_broadcast(&w->pump_cv);
        int64_t until = sb__mono_us() + STOP_MARGIN_US;
        while (!w->pump_done && sb__mono_us() < until)
            sb__cond_wait_until(&w->idle_cv, &w->mu, until);
        if (w->running_handlers > 0)
            rc = sb__err(err, SB_TIMEOUT, "stop_timeout_ms",
                         "%d handler(s) still running after the stop "
                         "timeout; their messages return to the queue when "
                         "their leases expire",
                         w->running_handlers);
    }
    if (rc == SB_OK && !w->pump_done)
        rc = sb__err(err, SB_UNAVAILABLE, NULL,
                     "the database did not answer before the stop timeout; "
                     "unwritten settlements return to the queue when their "
                     "leases expire");
    else if (rc == SB_OK && w->unwritten > 0)
        rc = sb__err(err, SB_UNAVAILABLE, NULL,
                     "%d settlement(s) or hand-back(s) not written (%s); "
                     "their messages return to the queue when their leases "
                     "expire",
                     w->unwritten,
                     w->last_db_error[0] ? w->last_db_error
                                         : "the stop timeout passed");
    int done = w->pump_done;
    pthread_mutex_unlock(&w->mu);
    sb__wake_listener_stop(w->listener);
    w->listener = NULL;
    sb__wal_watch_stop(w->wal);
    w->wal = NULL;
    sb__bus_remove_waker(w->bus, &w->waker);
    if (done)
        join_lanes(w); /* they have returned or are returning */
    pthread_mutex_lock(&w->mu);
    w->joined = done;
    w->stopped = 1;
    pthread_mutex_unlock(&w->mu);
    if (w->beat_endpoint != NULL)
        sb__beat_unregister(w->bus, w->beat_endpoint);
    return rc;
}

int sb_worker_wait_idle(sb_worker *w, int64_t timeout_ms)
{
    if (w == NULL)
        return SB_INVALID;
    int64_t deadline =
        timeout_ms < 0 ? INT64_MAX : sb__mono_us() + timeout_ms * 1000;
    pthread_mutex_lock(&w->mu);
    while (!w->idle && !w->pump_done && sb__mono_us() < deadline) {
        if (deadline == INT64_MAX)
            pthread_cond_wait(&w->idle_cv, &w->mu);
        else
            sb__cond_wait_until(&w->idle_cv, &w->mu, deadline);
    }
    int rc = w->idle ? SB_OK : w->pump_done ? SB_CLOSED : SB_TIMEOUT;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static int late_tx(sb_conn *c, void *vctx, sb_error *err)
{
    sb_worker *w = vctx;
    int rc = SB_OK;
    for (sb_delivery *d = w->settle_head; rc == SB_OK && d; d = d->next)
        if (d->removed && d->outcome == OUT_DEAD)
            rc = settle_one(w, c, d, err);
    return rc;
}

/* Early-ack: handlers that failed after the pump had gone (they overran
 * the drain) have only this process's memory; write their dead letters
 * now, once, name the ones that could not be written, and report each
 * through on_background_failure. */
static void write_late_dead_letters(sb_worker *w)
{
    int n = 0;
    for (sb_delivery *d = w->settle_head; d; d = d->next)
        if (d->removed && d->outcome == OUT_DEAD)
            n++;
    if (n == 0)
        return;
    sb_error err;
    sb_retry_policy once = {1, 0, 0};
    int rc = sb__db_run_tx(w->bus->pool, &once, late_tx, w, &err);
    for (sb_delivery *d = w->settle_head; d; d = d->next) {
        if (!d->removed || d->outcome != OUT_DEAD)
            continue;
        if (rc == SB_OK) {
            atomic_fetch_add(&w->dead, 1);
            sb__counters_add(w->counts, SB_COUNT_DEAD, 1);
            sb__type_add(delivery_type(w, d), SB_COUNT_DEAD, 1);
        } else {
            sb__log(&w->bus->log, SB_LOG_ERROR, "worker",
                    "message %s failed after it was acknowledged and its "
                    "dead letter could not be written: %s",
                    d->msg->id, err.message);
        }
        if (w->o.on_background_failure != NULL) {
            sb_failure f = failure_of(d);
            w->o.on_background_failure(d->msg, &f, w->o.user);
        }
    }
}

void sb_worker_free(sb_worker *w)
{
    if (w == NULL)
        return;
    if (!w->stopped)
        sb_worker_stop(w, NULL);
    if (!w->joined)
        join_lanes(w); /* a lane was inside a database call */
    pthread_mutex_lock(&w->mu);
    w->pump_done = 1;
    pthread_cond_broadcast(&w->handler_cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->n_handlers; i++)
        pthread_join(w->handlers[i], NULL);
    if (w->early)
        write_late_dead_letters(w);
    /* Deliveries whose handlers overran the stop are freed unsettled: their
     * leases lapse and the rows are redelivered (at least once). */
    while (w->all != NULL) {
        sb_delivery *d = w->all;
        w->all = d->all_next;
        delivery_free(d);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->pump_cv);
    pthread_cond_destroy(&w->handler_cv);
    pthread_cond_destroy(&w->idle_cv);
    free_buffers(w);
    sb__free(w);
}

void sb_worker_get_stats(const sb_worker *w, sb_worker_stats *out)
{
    sb_worker *mw = (sb_worker *)w;
    out->acked = atomic_load(&mw->acked);
    out->naked = atomic_load(&mw->naked);
    out->dead_lettered = atomic_load(&mw->dead);
    out->lost_leases = atomic_load(&mw->lost);
    out->handed_back = atomic_load(&mw->handed_back);
}

/* ---- delivery API ---- */

const sb_msg *sb_delivery_msg(const sb_delivery *d)
{
    return d->msg;
}

static void replace(char **slot, const char *s)
{
    sb__free(*slot);
    *slot = s ? sb__strdup(s) : NULL;
}

void sb_delivery_fail(sb_delivery *d, const char *exception_type,
                      const char *message, const char *detail)
{
    replace(&d->exc_type, exception_type);
    replace(&d->exc_msg, message);
    replace(&d->exc_detail, detail);
}

int sb_delivery_reply(sb_delivery *d, const void *data, size_t len,
                      sb_error *err)
{
    if (data == NULL && len > 0)
        return sb__err(err, SB_INVALID, "data", "data is NULL but len is %zu",
                       len);
    if (len > d->w->bus->max_payload)
        return sb__err(err, SB_INVALID, "data",
                       "reply is %zu bytes; max_payload_bytes is %llu", len,
                       (unsigned long long)d->w->bus->max_payload);
    char *copy = sb__malloc(len + 1);
    if (copy == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (len > 0)
        memcpy(copy, data, len);
    copy[len] = '\0';
    sb__free(d->reply);
    d->reply = copy;
    d->reply_len = len;
    d->has_reply = 1;
    return SB_OK;
}

int sb_delivery_progress(sb_delivery *d, const void *data, size_t len,
                         sb_error *err)
{
    sb_bus *bus = d->w->bus;
    sb_error_clear(err);
    if (data == NULL && len > 0)
        return sb__err(err, SB_INVALID, "data", "data is NULL but len is %zu",
                       len);
    if (sb__msg_parse_headers(d->msg) != SB_OK)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    int request = sb_msg_header(d->msg, "sb-reply-to") != NULL &&
                  sb_msg_correlation_id(d->msg) != NULL;
    sb_error ignored;
    int storable = sb__progress_check(data, len, "data",
                                      request ? &ignored : err) == SB_OK;
    if (!request && !storable)
        return err ? err->code : SB_INVALID;
    int rc = SB_OK;
    /* The row holds it while the lease does; in early-ack mode there is
     * no row any more. */
    if (storable && !d->removed) {
        rc = sb_set_progress(bus, d->msg, data, len, err);
        if (rc == SB_LOST_LEASE)
            atomic_store(&d->lost, 1);
    }
    if (rc != SB_OK || !request)
        return rc;
    if (bus->reply_hook == NULL)
        return sb__err(err, SB_MISUSE, "msg",
                       "message %s asks for replies, but no channel is open "
                       "on this bus",
                       d->msg->id);
    return bus->reply_hook(bus->reply_hook_user, d->msg, data ? data : "", len,
                           NULL, 1);
}

void sb_delivery_dead_letter(sb_delivery *d, const char *reason)
{
    replace(&d->dl_reason, reason ? reason : "dead-lettered by the handler");
    /* Asked for even if the reason could not be copied (out of memory):
     * dead-lettered with the default reason then, never acked. */
    d->dl_asked = 1;
}

int sb_delivery_renew(sb_delivery *d, sb_error *err)
{
    if (d->removed)
        return SB_OK; /* the row is gone already: nothing to renew */
    int rc = sb_renew(d->w->bus, d->msg, d->w->o.lease_ms, err);
    pthread_mutex_lock(&d->w->mu);
    if (rc == SB_OK)
        d->next_renew_us = sb__mono_us() + d->w->o.lease_ms * 1000 / 3;
    else if (rc == SB_LOST_LEASE)
        atomic_store(&d->lost, 1);
    pthread_mutex_unlock(&d->w->mu);
    return rc;
}

int sb_delivery_cancelled(const sb_delivery *d)
{
    return atomic_load(&((sb_delivery *)d)->lost) != 0;
}
