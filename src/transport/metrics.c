/* metrics.c - this process's counters of a bus and sb_bus_metrics (S8).
 * See metrics.h for the design; docs/metrics.md for what each count
 * means. */
#include "transport/metrics.h"
#include "transport/transport.h"

#include <stdatomic.h>
#include <string.h>

#define TABLE_SIZE 128 /* power of two, at least twice SB_METRICS_QUEUES */

struct sb_count_slot {
    atomic_llong n[SB_COUNT_KINDS];
};

typedef struct histogram {
    atomic_llong counts[SB_METRICS_BUCKETS];
    atomic_llong sum_us;
} histogram;

struct sb_counters {
    pthread_mutex_t mu; /* taken on the first sight of a queue only */
    /* Open addressing by name hash: 0 = empty, else a slot index + 1.
     * Written once (release) after the slot's name, never cleared. */
    atomic_int index[TABLE_SIZE];
    atomic_int n_named; /* slots with a name (release after the name) */
    char *names[SB_METRICS_QUEUES];
    sb_count_slot slots[SB_METRICS_QUEUES];
    sb_count_slot other;
    histogram claim, handler;
    int64_t opened_at_us;
    char dlq[201];
};

/* Counts a caller's transaction holds until it commits. */
typedef struct pending {
    sb_count_slot *slot;
    int kind;
    int64_t n;
} pending;

struct sb_tx_counts {
    size_t n, cap;
    pending *p;
};

const int64_t sb__latency_le_us[SB_METRICS_BUCKETS] = {
    100,     250,     500,     1000,     2500,     5000,
    10000,   25000,   50000,   100000,   250000,   500000,
    1000000, 2500000, 5000000, 10000000, INT64_MAX};

int sb__counters_new(const char *dlq, sb_counters **out, sb_error *err)
{
    sb_counters *c = sb__calloc(1, sizeof *c);
    *out = c;
    if (c == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    for (int i = 0; i < TABLE_SIZE; i++)
        atomic_init(&c->index[i], 0);
    atomic_init(&c->n_named, 0);
    c->opened_at_us = sb__wall_us();
    sb__strlcpy(c->dlq, dlq ? dlq : "", sizeof c->dlq);
    return SB_OK;
}

void sb__counters_free(sb_counters *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < SB_METRICS_QUEUES; i++)
        sb__free(c->names[i]);
    pthread_mutex_destroy(&c->mu);
    sb__free(c);
}

/* FNV-1a: queue names are short and the table is small. */
static unsigned hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* The slot of `queue` in the table, probing from `h`; with `insert`, an
 * unseen queue gets the next free slot (the caller holds the mutex).
 * NULL: not found (or no room left). */
static sb_count_slot *probe(sb_counters *c, const char *queue, unsigned h,
                            int insert)
{
    for (unsigned i = 0; i < TABLE_SIZE; i++) {
        unsigned at = (h + i) & (TABLE_SIZE - 1);
        int v = atomic_load_explicit(&c->index[at], memory_order_acquire);
        if (v != 0) {
            if (strcmp(c->names[v - 1], queue) == 0)
                return &c->slots[v - 1];
            continue;
        }
        if (!insert)
            return NULL;
        int n = atomic_load_explicit(&c->n_named, memory_order_relaxed);
        if (n >= SB_METRICS_QUEUES)
            return NULL;
        c->names[n] = sb__strdup(queue);
        if (c->names[n] == NULL)
            return NULL; /* counted as other; tried again next time */
        atomic_store_explicit(&c->index[at], n + 1, memory_order_release);
        atomic_store_explicit(&c->n_named, n + 1, memory_order_release);
        return &c->slots[n];
    }
    return NULL;
}

sb_count_slot *sb__counters_slot(sb_counters *c, const char *queue)
{
    if (c == NULL)
        return NULL;
    if (queue == NULL)
        return &c->other;
    unsigned h = hash_name(queue);
    sb_count_slot *s = probe(c, queue, h, 0);
    if (s != NULL)
        return s;
    /* Once the table is full no queue is ever added: skip the mutex. */
    if (atomic_load_explicit(&c->n_named, memory_order_acquire) >=
        SB_METRICS_QUEUES)
        return &c->other;
    pthread_mutex_lock(&c->mu);
    s = probe(c, queue, h, 1);
    pthread_mutex_unlock(&c->mu);
    return s != NULL ? s : &c->other;
}

void sb__counters_add(sb_count_slot *s, int kind, int64_t n)
{
    if (s == NULL || kind < 0 || kind >= SB_COUNT_KINDS)
        return;
    atomic_fetch_add_explicit(&s->n[kind], n, memory_order_relaxed);
}

int sb__latency_bucket(int64_t us)
{
    int i = 0;
    while (i < SB_METRICS_BUCKETS - 1 && us > sb__latency_le_us[i])
        i++;
    return i;
}

static void observe(histogram *h, int64_t us)
{
    if (us < 0)
        us = 0;
    atomic_fetch_add_explicit(&h->counts[sb__latency_bucket(us)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

int sb__count(sb_bus *bus, const char *queue, int kind, int64_t n, int rc)
{
    if (rc == SB_OK && bus != NULL)
        sb__counters_add(sb__counters_slot(bus->counters, queue), kind, n);
    return rc;
}

int sb__count_msg(sb_bus *bus, const sb_msg *m, int kind, int rc)
{
    return rc == SB_OK && m != NULL ? sb__count(bus, m->queue, kind, 1, rc)
                                    : rc;
}

int sb__count_tx(sb_tx *tx, const char *queue, int kind, int64_t n, int rc)
{
    if (rc != SB_OK || tx == NULL)
        return rc;
    sb_count_slot *s = sb__counters_slot(tx->bus->counters, queue);
    sb_tx_counts *t = tx->counts;
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if (t->p[i].slot == s && t->p[i].kind == kind) {
            t->p[i].n += n;
            return rc;
        }
    if (t == NULL) {
        t = tx->counts = sb__calloc(1, sizeof *t);
        if (t == NULL) {
            sb__counters_add(s, kind, n); /* out of memory: count now */
            return rc;
        }
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4;
        pending *p = sb__realloc(t->p, cap * sizeof *p);
        if (p == NULL) {
            sb__counters_add(s, kind, n);
            return rc;
        }
        t->p = p;
        t->cap = cap;
    }
    t->p[t->n++] = (pending){s, kind, n};
    return rc;
}

int sb__count_tx_msg(sb_tx *tx, const sb_msg *m, int kind, int rc)
{
    return rc == SB_OK && m != NULL ? sb__count_tx(tx, m->queue, kind, 1, rc)
                                    : rc;
}

void sb__count_tx_end(sb_tx *tx, int committed)
{
    sb_tx_counts *t = tx->counts;
    if (t == NULL)
        return;
    for (size_t i = 0; committed && i < t->n; i++)
        sb__counters_add(t->p[i].slot, t->p[i].kind, t->p[i].n);
    sb__free(t->p);
    sb__free(t);
    tx->counts = NULL;
}

void sb__count_claim(sb_bus *bus, int64_t t0_us, int rc)
{
    if (rc == SB_OK && bus->counters != NULL)
        observe(&bus->counters->claim, sb__mono_us() - t0_us);
}

int sb__count_handler(sb_bus *bus, sb_handler_fn fn, sb_delivery *d, void *user)
{
    int64_t t0 = sb__mono_us();
    int rc = fn(d, user);
    if (bus->counters != NULL)
        observe(&bus->counters->handler, sb__mono_us() - t0);
    return rc;
}

/* ---- the snapshot ---- */

static void read_slot(const sb_count_slot *s, sb_queue_counts *out)
{
    sb_count_slot *ms = (sb_count_slot *)s;
    out->published =
        atomic_load_explicit(&ms->n[SB_COUNT_PUBLISHED], memory_order_relaxed);
    out->acked =
        atomic_load_explicit(&ms->n[SB_COUNT_ACKED], memory_order_relaxed);
    out->naked =
        atomic_load_explicit(&ms->n[SB_COUNT_NAKED], memory_order_relaxed);
    out->dead_lettered =
        atomic_load_explicit(&ms->n[SB_COUNT_DEAD], memory_order_relaxed);
}

static void read_histogram(histogram *h, sb_latency_histogram *out)
{
    out->count = 0;
    for (int i = 0; i < SB_METRICS_BUCKETS; i++) {
        out->le_us[i] = sb__latency_le_us[i];
        out->counts[i] =
            atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        out->count += out->counts[i];
    }
    out->sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
}

int sb_bus_metrics(sb_bus *bus, sb_bus_counters *out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    int rc = sb__out_struct(out, sizeof *out, "sb_bus_counters", err);
    if (rc != SB_OK)
        return rc;
    sb_counters *c = bus->counters;
    if (c == NULL)
        return SB_OK;
    out->opened_at_us = c->opened_at_us;
    sb__strlcpy(out->dead_letter_queue, c->dlq, sizeof out->dead_letter_queue);
    int n = atomic_load_explicit(&c->n_named, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        sb__strlcpy(out->queues[i].queue, c->names[i],
                    sizeof out->queues[i].queue);
        read_slot(&c->slots[i], &out->queues[i]);
    }
    out->n_queues = (size_t)n;
    read_slot(&c->other, &out->other);
    read_histogram(&c->claim, &out->claim);
    read_histogram(&c->handler, &out->handler);
    return SB_OK;
}
