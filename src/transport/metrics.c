/* metrics.c - this process's counters of a bus and sb_bus_metrics (S8).
 * See metrics.h for the design; docs/metrics.md for what each count
 * means. */
#include "transport/metrics.h"
#include "transport/transport.h"

#include <stdatomic.h>
#include <string.h>

#define TABLE_SIZE 128      /* power of two, at least twice SB_METRICS_QUEUES */
#define TYPE_TABLE_SIZE 256 /* power of two, at least twice SB_METRICS_TYPES */
#define TYPE_NAME_MAX 200   /* bytes of a type counted by name */

typedef struct histogram {
    atomic_llong counts[SB_METRICS_BUCKETS];
    atomic_llong sum_us;
} histogram;

struct sb_type_slot {
    atomic_llong n[SB_COUNT_KINDS];
    histogram handler;
};

typedef struct type_entry {
    sb_type_slot s;
    char name[TYPE_NAME_MAX + 1];
} type_entry;

/* One queue's message types, as the queues' table: open addressing by
 * name hash, entries written once (under the counters' mutex) before
 * their index is published with release, never removed. */
typedef struct type_table {
    atomic_int index[TYPE_TABLE_SIZE]; /* 0 = empty, else entry index + 1 */
    atomic_int n_named;
    type_entry *named[SB_METRICS_TYPES];
    sb_type_slot none, other;
} type_table;

struct sb_count_slot {
    atomic_llong n[SB_COUNT_KINDS];
    /* Allocated on the queue's first lookup of a type (mutex), published
     * with release; NULL before. */
    _Atomic(type_table *) types;
};

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

/* Counts a caller's transaction holds until it commits: for a queue
 * (`slot`) or a message type (`type`), one of them set. */
typedef struct pending {
    sb_count_slot *slot;
    sb_type_slot *type;
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
    for (int i = 0; i < SB_METRICS_QUEUES; i++)
        atomic_init(&c->slots[i].types, NULL);
    atomic_init(&c->other.types, NULL);
    atomic_init(&c->n_named, 0);
    c->opened_at_us = sb__wall_us();
    sb__strlcpy(c->dlq, dlq ? dlq : "", sizeof c->dlq);
    return SB_OK;
}

static void free_types(sb_count_slot *s)
{
    type_table *t = atomic_load_explicit(&s->types, memory_order_acquire);
    if (t == NULL)
        return;
    int n = atomic_load_explicit(&t->n_named, memory_order_acquire);
    for (int i = 0; i < n; i++)
        sb__free(t->named[i]);
    sb__free(t);
}

void sb__counters_free(sb_counters *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < SB_METRICS_QUEUES; i++) {
        sb__free(c->names[i]);
        free_types(&c->slots[i]);
    }
    free_types(&c->other);
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

/* ---- message types ---- */

/* The queue's type table, allocated on first use; NULL on OOM (tried
 * again next time). */
static type_table *types_of(sb_counters *c, sb_count_slot *qs)
{
    type_table *t = atomic_load_explicit(&qs->types, memory_order_acquire);
    if (t != NULL)
        return t;
    pthread_mutex_lock(&c->mu);
    t = atomic_load_explicit(&qs->types, memory_order_relaxed);
    if (t == NULL) {
        t = sb__calloc(1, sizeof *t);
        if (t != NULL) {
            for (int i = 0; i < TYPE_TABLE_SIZE; i++)
                atomic_init(&t->index[i], 0);
            atomic_init(&t->n_named, 0);
            atomic_store_explicit(&qs->types, t, memory_order_release);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* As probe(), in a queue's type table. */
static sb_type_slot *type_probe(type_table *t, const char *name, unsigned h,
                                int insert)
{
    for (unsigned i = 0; i < TYPE_TABLE_SIZE; i++) {
        unsigned at = (h + i) & (TYPE_TABLE_SIZE - 1);
        int v = atomic_load_explicit(&t->index[at], memory_order_acquire);
        if (v != 0) {
            if (strcmp(t->named[v - 1]->name, name) == 0)
                return &t->named[v - 1]->s;
            continue;
        }
        if (!insert)
            return NULL;
        int n = atomic_load_explicit(&t->n_named, memory_order_relaxed);
        if (n >= SB_METRICS_TYPES)
            return NULL;
        type_entry *e = sb__calloc(1, sizeof *e);
        if (e == NULL)
            return NULL; /* counted as other; tried again next time */
        sb__strlcpy(e->name, name, sizeof e->name);
        t->named[n] = e;
        atomic_store_explicit(&t->index[at], n + 1, memory_order_release);
        atomic_store_explicit(&t->n_named, n + 1, memory_order_release);
        return &e->s;
    }
    return NULL;
}

sb_type_slot *sb__counters_type(sb_counters *c, sb_count_slot *qs,
                                const char *headers)
{
    if (c == NULL || qs == NULL)
        return NULL;
    type_table *t = types_of(c, qs);
    if (t == NULL)
        return NULL;
    char name[TYPE_NAME_MAX + 1];
    int k = sb__headers_message_type(headers, name, sizeof name);
    if (k == SB_MTYPE_NONE)
        return &t->none;
    if (k != SB_MTYPE_FOUND)
        return &t->other;
    unsigned h = hash_name(name);
    sb_type_slot *s = type_probe(t, name, h, 0);
    if (s != NULL)
        return s;
    if (atomic_load_explicit(&t->n_named, memory_order_acquire) >=
        SB_METRICS_TYPES)
        return &t->other;
    pthread_mutex_lock(&c->mu);
    s = type_probe(t, name, h, 1);
    pthread_mutex_unlock(&c->mu);
    return s != NULL ? s : &t->other;
}

void sb__type_add(sb_type_slot *t, int kind, int64_t n)
{
    if (t == NULL || kind < 0 || kind >= SB_COUNT_KINDS)
        return;
    atomic_fetch_add_explicit(&t->n[kind], n, memory_order_relaxed);
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
    if (rc != SB_OK || m == NULL || bus == NULL)
        return rc;
    sb_count_slot *s = sb__counters_slot(bus->counters, m->queue);
    sb__counters_add(s, kind, 1);
    sb__type_add(sb__counters_type(bus->counters, s, m->headers), kind, 1);
    return rc;
}

/* Hold `n` of `kind` for a queue slot or a type slot until `tx` ends. */
static void pend(sb_tx *tx, sb_count_slot *s, sb_type_slot *ty, int kind,
                 int64_t n)
{
    sb_tx_counts *t = tx->counts;
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if (t->p[i].slot == s && t->p[i].type == ty && t->p[i].kind == kind) {
            t->p[i].n += n;
            return;
        }
    if (t == NULL)
        t = tx->counts = sb__calloc(1, sizeof *t);
    if (t != NULL && t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4;
        pending *p = sb__realloc(t->p, cap * sizeof *p);
        if (p != NULL) {
            t->p = p;
            t->cap = cap;
        }
    }
    if (t == NULL || t->n == t->cap) { /* out of memory: count now */
        sb__counters_add(s, kind, n);
        sb__type_add(ty, kind, n);
        return;
    }
    t->p[t->n++] = (pending){s, ty, kind, n};
}

int sb__count_tx(sb_tx *tx, const char *queue, int kind, int64_t n, int rc)
{
    if (rc != SB_OK || tx == NULL)
        return rc;
    pend(tx, sb__counters_slot(tx->bus->counters, queue), NULL, kind, n);
    return rc;
}

int sb__count_tx_msg(sb_tx *tx, const sb_msg *m, int kind, int rc)
{
    if (rc != SB_OK || tx == NULL || m == NULL)
        return rc;
    sb_counters *c = tx->bus->counters;
    sb_count_slot *s = sb__counters_slot(c, m->queue);
    pend(tx, s, NULL, kind, 1);
    pend(tx, NULL, sb__counters_type(c, s, m->headers), kind, 1);
    return rc;
}

int sb__count_publish(sb_bus *bus, sb_tx *tx, const char *queue,
                      const sb_outgoing *msgs, size_t n, int rc)
{
    if (rc != SB_OK || bus == NULL || n == 0)
        return rc;
    sb_counters *c = tx != NULL ? tx->bus->counters : bus->counters;
    sb_count_slot *s = sb__counters_slot(c, queue);
    if (tx != NULL)
        pend(tx, s, NULL, SB_COUNT_PUBLISHED, (int64_t)n);
    else
        sb__counters_add(s, SB_COUNT_PUBLISHED, (int64_t)n);
    /* A batch is mostly of one type: one add per run of equal types. */
    sb_type_slot *run = NULL;
    int64_t len = 0;
    for (size_t i = 0; i <= n; i++) {
        sb_type_slot *ty =
            i < n ? sb__counters_type(c, s, msgs[i].headers_json) : NULL;
        if (i < n && ty == run) {
            len++;
            continue;
        }
        if (len > 0 && tx != NULL)
            pend(tx, NULL, run, SB_COUNT_PUBLISHED, len);
        else if (len > 0)
            sb__type_add(run, SB_COUNT_PUBLISHED, len);
        run = ty;
        len = 1;
    }
    return rc;
}

void sb__count_tx_end(sb_tx *tx, int committed)
{
    sb_tx_counts *t = tx->counts;
    if (t == NULL)
        return;
    for (size_t i = 0; committed && i < t->n; i++) {
        sb__counters_add(t->p[i].slot, t->p[i].kind, t->p[i].n);
        sb__type_add(t->p[i].type, t->p[i].kind, t->p[i].n);
    }
    sb__free(t->p);
    sb__free(t);
    tx->counts = NULL;
}

void sb__count_claim(sb_bus *bus, int64_t t0_us, int rc)
{
    if (rc == SB_OK && bus->counters != NULL)
        observe(&bus->counters->claim, sb__mono_us() - t0_us);
}

int sb__count_handler(sb_bus *bus, sb_type_slot *t, sb_handler_fn fn,
                      sb_delivery *d, void *user)
{
    int64_t t0 = sb__mono_us();
    int rc = fn(d, user);
    int64_t us = sb__mono_us() - t0;
    if (bus->counters != NULL)
        observe(&bus->counters->handler, us);
    if (t != NULL)
        observe(&t->handler, us);
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

static void read_histogram(histogram *h, sb_latency_histogram *out);

/* One type slot into `out`; 0 when it counted nothing. */
static int read_type(sb_type_slot *t, const char *queue, const char *name,
                     int other, sb_type_counts *out)
{
    out->size = sizeof *out;
    sb__strlcpy(out->queue, queue, sizeof out->queue);
    sb__strlcpy(out->type, name, sizeof out->type);
    out->other = other;
    out->published =
        atomic_load_explicit(&t->n[SB_COUNT_PUBLISHED], memory_order_relaxed);
    out->acked =
        atomic_load_explicit(&t->n[SB_COUNT_ACKED], memory_order_relaxed);
    out->naked =
        atomic_load_explicit(&t->n[SB_COUNT_NAKED], memory_order_relaxed);
    out->dead_lettered =
        atomic_load_explicit(&t->n[SB_COUNT_DEAD], memory_order_relaxed);
    read_histogram(&t->handler, &out->handler);
    return out->published != 0 || out->acked != 0 || out->naked != 0 ||
           out->dead_lettered != 0 || out->handler.count != 0;
}

int sb__counters_types(sb_counters *c, sb_type_counts ***out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (c == NULL)
        return SB_OK;
    /* Queues and types only grow: take each table's size once, size the
     * list for that, and read no further. */
    int nq = atomic_load_explicit(&c->n_named, memory_order_acquire);
    type_table *tables[SB_METRICS_QUEUES + 1];
    int nt[SB_METRICS_QUEUES + 1];
    size_t cap = 0;
    for (int q = 0; q <= nq; q++) {
        sb_count_slot *qs = q < nq ? &c->slots[q] : &c->other;
        tables[q] = atomic_load_explicit(&qs->types, memory_order_acquire);
        nt[q] = tables[q] ? atomic_load_explicit(&tables[q]->n_named,
                                                 memory_order_acquire)
                          : 0;
        cap += tables[q] ? (size_t)nt[q] + 2 : 0;
    }
    if (cap == 0)
        return SB_OK;
    sb_type_counts **list = NULL;
    SB__LIST_NEW(list, cap);
    if (list == NULL)
        return SB_NOMEM;
    size_t k = 0;
    for (int q = 0; q <= nq; q++) {
        type_table *t = tables[q];
        if (t == NULL)
            continue;
        const char *queue = q < nq ? c->names[q] : "";
        k += (size_t)read_type(&t->none, queue, "", 0, list[k]);
        for (int i = 0; i < nt[q]; i++)
            k += (size_t)read_type(&t->named[i]->s, queue, t->named[i]->name, 0,
                                   list[k]);
        k += (size_t)read_type(&t->other, queue, "", 1, list[k]);
    }
    if (k == 0) {
        sb__free(list);
        return SB_OK;
    }
    /* A left-out entry was written over by the next: clear the last. */
    if (k < cap)
        memset(list[k], 0, sizeof *list[k]);
    *out = list;
    *n_out = k;
    return SB_OK;
}

int sb_bus_metrics_by_type(sb_bus *bus, sb_type_counts ***out, size_t *n_out,
                           sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? (out ? "n_out" : "out") : "bus",
                       "arguments must not be NULL");
    if (sb__counters_types(bus->counters, out, n_out) != SB_OK)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    return SB_OK;
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
