/* counts.c - every process's counts in the database (see counts.h): the
 * flusher thread, sb_counts_flush and sb_counts_list. A flush adds, per
 * queue, what this process counted since the last successful flush; a
 * failed flush keeps its deltas for the next one, so nothing is counted
 * twice and nothing is lost while the process lives. */
#include "transport/counts.h"
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

#define PRUNE_EVERY_US (3600LL * 1000000)      /* rows unwritten for ... */
#define PRUNE_AGE_MS (30LL * 24 * 3600 * 1000) /* ... 30 days go */
#define N_SLOTS (SB_METRICS_QUEUES + 1)        /* named queues, then other */

struct sb_flusher {
    sb_bus *bus;
    int64_t every_us;
    pthread_mutex_t mu;   /* one flush at a time; guards the fields below */
    sb_bus_counters *now; /* scratch snapshot */
    sb_queue_counts sent[N_SLOTS]; /* written so far, by snapshot slot */
    int failing;                   /* the last flush failed (logged once) */
    int64_t next_prune_us;         /* monotonic */
    pthread_mutex_t wait_mu;
    pthread_cond_t cv;
    int stopping;
    int started;
    pthread_t thread;
};

/* One queue's counts to add. */
typedef struct delta {
    const char *queue;
    int64_t n[4];
} delta;

typedef struct flush_ctx {
    sb_bus *bus;
    delta d[N_SLOTS];
    size_t n;
    int prune;
} flush_ctx;

static int add_tx(sb_conn *c, void *arg, sb_error *err)
{
    flush_ctx *x = arg;
    int64_t now = sb__bus_now_us(x->bus);
    int rc = SB_OK;
    for (size_t i = 0; rc == SB_OK && i < x->n; i++) {
        sb_value p[6] = {sb__v_text(x->d[i].queue), sb__v_int(x->d[i].n[0]),
                         sb__v_int(x->d[i].n[1]),   sb__v_int(x->d[i].n[2]),
                         sb__v_int(x->d[i].n[3]),   sb__v_int(now)};
        rc = sb__query(c, x->bus->sql->counts_add, p, 6, NULL, NULL, err);
    }
    if (rc == SB_OK && x->prune) {
        sb_value p[2] = {sb__v_int(now), sb__v_int(PRUNE_AGE_MS)};
        rc = sb__query(c, x->bus->sql->counts_prune, p, 2, NULL, NULL, err);
    }
    return rc;
}

static void put_delta(flush_ctx *x, const char *queue,
                      const sb_queue_counts *now, const sb_queue_counts *sent)
{
    delta *d = &x->d[x->n];
    d->queue = queue;
    d->n[0] = now->published - sent->published;
    d->n[1] = now->acked - sent->acked;
    d->n[2] = now->naked - sent->naked;
    d->n[3] = now->dead_lettered - sent->dead_lettered;
    if (d->n[0] || d->n[1] || d->n[2] || d->n[3])
        x->n++;
}

static void keep(sb_queue_counts *sent, const sb_queue_counts *now)
{
    sent->published = now->published;
    sent->acked = now->acked;
    sent->naked = now->naked;
    sent->dead_lettered = now->dead_lettered;
}

/* Write what moved since the last flush (under f->mu). */
static int flush_locked(sb_flusher *f, int attempts, sb_error *err)
{
    sb_bus_counters *now = f->now;
    now->size = sizeof *now;
    int rc = sb_bus_metrics(f->bus, now, err);
    if (rc != SB_OK)
        return rc;
    flush_ctx x;
    x.bus = f->bus;
    x.n = 0;
    for (size_t i = 0; i < now->n_queues; i++)
        put_delta(&x, now->queues[i].queue, &now->queues[i], &f->sent[i]);
    put_delta(&x, "", &now->other, &f->sent[SB_METRICS_QUEUES]);
    if (x.n == 0)
        return SB_OK;
    int64_t mono = sb__mono_us();
    x.prune = mono >= f->next_prune_us;
    sb_retry_policy policy = {.max_attempts = attempts};
    rc = sb__db_run_tx(f->bus->pool, &policy, add_tx, &x, err);
    if (rc != SB_OK)
        return rc;
    for (size_t i = 0; i < now->n_queues; i++)
        keep(&f->sent[i], &now->queues[i]);
    keep(&f->sent[SB_METRICS_QUEUES], &now->other);
    if (x.prune)
        f->next_prune_us = mono + PRUNE_EVERY_US;
    return SB_OK;
}

/* A flush by the thread or (one attempt) at close: its failure is logged
 * once, and its recovery once. */
static void flush_logged(sb_flusher *f, int at_close)
{
    sb_error err;
    pthread_mutex_lock(&f->mu);
    int rc = flush_locked(f, at_close ? 1 : 3, &err);
    if (rc != SB_OK && (!f->failing || at_close))
        sb__log(&f->bus->log, SB_LOG_WARN, "counts",
                "this process's counts could not be written to the counts "
                "table%s (%s: %s); %s",
                at_close ? " at close" : "", sb_strerror(rc), err.message,
                at_close ? "they are lost"
                         : "they are kept and written with the next flush");
    else if (rc == SB_OK && f->failing)
        sb__log(&f->bus->log, SB_LOG_INFO, "counts",
                "the counts table is written again");
    f->failing = rc != SB_OK;
    pthread_mutex_unlock(&f->mu);
}

static void *flusher_main(void *arg)
{
    sb_flusher *f = arg;
    int64_t next = sb__mono_us() + f->every_us;
    for (;;) {
        pthread_mutex_lock(&f->wait_mu);
        while (!f->stopping && sb__mono_us() < next)
            sb__cond_wait_until(&f->cv, &f->wait_mu, next);
        int stop = f->stopping;
        pthread_mutex_unlock(&f->wait_mu);
        if (stop)
            break;
        flush_logged(f, 0);
        next += f->every_us;
        int64_t now = sb__mono_us();
        if (next < now) /* a slow flush: skip the missed ticks */
            next = now + f->every_us;
    }
    return NULL;
}

/* Whether {p}counts exists (1), does not (0), or could not be read. */
static int table_present(sb_bus *bus, int *present, sb_error *err)
{
    char name[SB_MAX_PREFIX_LEN + 16];
    snprintf(name, sizeof name, "%scounts", bus->prefix);
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 5000, &c, err);
    sb_rows *rows = NULL;
    if (rc == SB_OK) {
        sb_value p = sb__v_text(name);
        rc = sb__query(c, bus->sql->columns, &p, 1, &rows, NULL, err);
        sb__pool_release(bus->pool, c);
    }
    *present = rc == SB_OK && rows->nrows > 0;
    sb__rows_free(rows);
    return rc;
}

static void flusher_free(sb_flusher *f)
{
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->wait_mu);
    pthread_cond_destroy(&f->cv);
    sb__free(f->now);
    sb__free(f);
}

int sb__flusher_start(sb_bus *bus, sb_error *err)
{
    bus->flusher = NULL;
    if (bus->counts_flush_ms < 0 || bus->schema_mode == SB_SCHEMA_NONE)
        return SB_OK;
    if (bus->schema_mode == SB_SCHEMA_VERIFY) {
        sb_error e;
        int present = 0;
        if (table_present(bus, &present, &e) == SB_OK && !present) {
            sb__log(&bus->log, SB_LOG_WARN, "counts",
                    "table %scounts does not exist, so this process's "
                    "counts stay in memory and other processes do not see "
                    "them; create it from `sqlbus schema print`",
                    bus->prefix);
            return SB_OK;
        }
    }
    sb_flusher *f = sb__calloc(1, sizeof *f);
    if (f != NULL)
        f->now = sb__calloc(1, sizeof *f->now);
    if (f == NULL || f->now == NULL) {
        sb__free(f);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    f->bus = bus;
    f->every_us = (bus->counts_flush_ms ? bus->counts_flush_ms : 1000) * 1000;
    f->next_prune_us = sb__mono_us();
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->wait_mu, NULL);
    sb__cond_init_monotonic(&f->cv);
    f->started = pthread_create(&f->thread, NULL, flusher_main, f) == 0;
    if (!f->started)
        sb__log(&bus->log, SB_LOG_WARN, "counts",
                "could not start the counts thread; counts are written "
                "only by sb_counts_flush and sb_close");
    bus->flusher = f;
    return SB_OK;
}

void sb__flusher_stop(sb_flusher *f)
{
    if (f == NULL)
        return;
    if (f->started) {
        pthread_mutex_lock(&f->wait_mu);
        f->stopping = 1;
        pthread_cond_signal(&f->cv);
        pthread_mutex_unlock(&f->wait_mu);
        pthread_join(f->thread, NULL);
    }
    flush_logged(f, 1);
    flusher_free(f);
}

int sb_counts_flush(sb_bus *bus, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    sb_flusher *f = bus->flusher;
    if (f == NULL)
        return sb__err(err, SB_MISUSE, "counts_flush_ms",
                       "this bus does not write its counts to the counts "
                       "table (counts_flush_ms -1, schema mode NONE, or the "
                       "table is missing)");
    pthread_mutex_lock(&f->mu);
    int rc = flush_locked(f, 3, err);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int sb_counts_list(sb_bus *bus, sb_queue_counts **out, size_t *n_out,
                   sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 5000, &c, err);
    sb_rows *rows = NULL;
    if (rc == SB_OK) {
        rc = sb__query(c, bus->sql->counts_list, NULL, 0, &rows, NULL, err);
        sb__pool_release(bus->pool, c);
    }
    if (rc != SB_OK) {
        sb_error e;
        int present = 1;
        if (table_present(bus, &present, &e) == SB_OK && !present)
            rc = sb__err(err, SB_SCHEMA_MISSING, NULL,
                         "table %scounts does not exist; create it from "
                         "`sqlbus schema print`",
                         bus->prefix);
        return rc;
    }
    sb_queue_counts *q = NULL;
    if (rows->nrows > 0) {
        q = sb__calloc(rows->nrows, sizeof *q);
        if (q == NULL) {
            sb__rows_free(rows);
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        }
    }
    for (size_t r = 0; r < rows->nrows; r++) {
        const char *name = sb__rows_text(rows, r, 0);
        sb__strlcpy(q[r].queue, name ? name : "", sizeof q[r].queue);
        q[r].published = sb__rows_int(rows, r, 1);
        q[r].acked = sb__rows_int(rows, r, 2);
        q[r].naked = sb__rows_int(rows, r, 3);
        q[r].dead_lettered = sb__rows_int(rows, r, 4);
    }
    *out = q;
    *n_out = rows->nrows;
    sb__rows_free(rows);
    return SB_OK;
}
