/* metrics.c - `GET /metrics` (S8): lock-free HTTP counters, and a scrape
 * that reads each source once (see metrics.h); the text is written by
 * metrics_text.c. */
#include "server/metrics.h"

#include "server/metrics_text.h"

#include <stdatomic.h>
#include <string.h>

#define QUEUES_MAX_AGE_MS 10000 /* the sampler's queues, at most this old */

typedef struct route_counts {
    _Atomic(const char *) pattern;
    atomic_uint status[SB_METRICS_STATUSES]; /* 0 = free */
    atomic_llong requests[SB_METRICS_STATUSES];
    atomic_llong other_status;
    atomic_llong buckets[SB_METRICS_BUCKETS];
    atomic_llong sum_us;
} route_counts;

struct sb_metrics {
    route_counts r[SB_R_COUNT];
};

int sb__metrics_new(sb_metrics **out, sb_error *err)
{
    if (out == NULL)
        return sb__err(err, SB_INVALID, "out", "out must not be NULL");
    /* calloc's zero bytes are valid initial atomics on every target we
     * build for (lock-free integers and pointers). */
    *out = sb__calloc(1, sizeof **out);
    return *out ? SB_OK : sb__err(err, SB_NOMEM, NULL, "out of memory");
}

void sb__metrics_free(sb_metrics *m)
{
    sb__free(m);
}

void sb__metrics_http(sb_metrics *m, sb_route_id route, const char *pattern,
                      unsigned status, int64_t duration_us)
{
    if (m == NULL)
        return;
    if ((int)route <= SB_R_NONE || route >= SB_R_COUNT || pattern == NULL)
        route = SB_R_NONE;
    route_counts *r = &m->r[route];
    if (atomic_load_explicit(&r->pattern, memory_order_relaxed) == NULL)
        atomic_store_explicit(&r->pattern,
                              route == SB_R_NONE ? "unmatched" : pattern,
                              memory_order_relaxed);
    int counted = 0;
    for (int i = 0; !counted && status != 0 && i < SB_METRICS_STATUSES; i++) {
        unsigned have =
            atomic_load_explicit(&r->status[i], memory_order_acquire);
        if (have == 0) {
            unsigned expected = 0;
            if (atomic_compare_exchange_strong_explicit(
                    &r->status[i], &expected, status, memory_order_acq_rel,
                    memory_order_acquire))
                have = status;
            else
                have = expected; /* another thread took it first */
        }
        if (have == status) {
            atomic_fetch_add_explicit(&r->requests[i], 1, memory_order_relaxed);
            counted = 1;
        }
    }
    if (!counted)
        atomic_fetch_add_explicit(&r->other_status, 1, memory_order_relaxed);
    if (duration_us < 0)
        duration_us = 0;
    atomic_fetch_add_explicit(&r->buckets[sb__prom_bucket(duration_us)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&r->sum_us, duration_us, memory_order_relaxed);
}

/* The routes requested so far, into `out` (SB_R_COUNT entries). */
static size_t read_http(sb_metrics *m, sb_metrics_http_route *out)
{
    size_t n = 0;
    for (int id = 0; m != NULL && id < SB_R_COUNT; id++) {
        route_counts *r = &m->r[id];
        const char *p = atomic_load_explicit(&r->pattern, memory_order_relaxed);
        if (p == NULL)
            continue;
        sb_metrics_http_route *h = &out[n++];
        memset(h, 0, sizeof *h);
        h->pattern = p;
        for (int i = 0; i < SB_METRICS_STATUSES; i++) {
            unsigned st =
                atomic_load_explicit(&r->status[i], memory_order_acquire);
            if (st == 0)
                break;
            h->status[h->n_status] = st;
            h->requests[h->n_status++] =
                atomic_load_explicit(&r->requests[i], memory_order_relaxed);
        }
        h->other_status =
            atomic_load_explicit(&r->other_status, memory_order_relaxed);
        for (int i = 0; i < SB_METRICS_BUCKETS; i++) {
            h->duration.le_us[i] = sb__prom_le_us[i];
            h->duration.counts[i] =
                atomic_load_explicit(&r->buckets[i], memory_order_relaxed);
            h->duration.count += h->duration.counts[i];
        }
        h->duration.sum_us =
            atomic_load_explicit(&r->sum_us, memory_order_relaxed);
    }
    return n;
}

/* ---- recovery registrations: counted in the database ---- */

static int read_recovery(sb_bus *bus, sb_metrics_snapshot *s,
                         sb_metrics_dispatched *disp, sb_error *err)
{
    sb_registration_counts c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    int rc = sb_recovery_counts(bus, 0, &c, err);
    if (rc != SB_OK)
        return rc;
    for (int i = 0; i < 4; i++)
        s->registrations[i] = c.by_state[i];
    s->waiters = c.by_state[SB_REG_OUTSTANDING];
    for (size_t i = 0; i < c.n_handlers && i < SB_METRICS_HANDLERS; i++) {
        sb__strlcpy(disp[i].handler, c.dispatched[i].handler,
                    sizeof disp[i].handler);
        disp[i].n = c.dispatched[i].n;
        s->n_dispatched++;
    }
    s->dispatched_other = c.dispatched_other;
    for (size_t i = SB_METRICS_HANDLERS; i < c.n_handlers; i++)
        s->dispatched_other += c.dispatched[i].n;
    return SB_OK;
}

/* ---- the scrape ---- */

int sb__metrics_render(sb_metrics *m, sb_bus *bus, sb_errors *store,
                       sb_loops *loops, sb_notify *notify, sb_stats *stats,
                       sb_buf *out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    sb_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    sb_error e;
    sb_bus_counters *c = sb__calloc(1, sizeof *c);
    sb_metrics_dispatched *disp = sb__calloc(SB_METRICS_HANDLERS, sizeof *disp);
    sb_metrics_http_route *http = sb__calloc(SB_R_COUNT, sizeof *http);
    if (c == NULL || disp == NULL || http == NULL) {
        sb__free(c);
        sb__free(disp);
        sb__free(http);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    c->size = sizeof *c;
    if (sb_bus_metrics(bus, c, &e) == SB_OK)
        s.counters = c;
    sb_type_counts **types = NULL;
    size_t n_types = 0;
    if (s.counters != NULL &&
        sb_bus_metrics_by_type(bus, &types, &n_types, &e) == SB_OK) {
        s.types = types;
        s.n_types = n_types;
    }

    sb_queue_stats **queues = NULL;
    size_t n_queues = 0;
    s.queues_ok = sb__stats_queues(stats, QUEUES_MAX_AGE_MS, &queues, &n_queues,
                                   NULL) == SB_OK ||
                  sb_queue_list(bus, &queues, &n_queues, &e) == SB_OK;
    sb_queue_counts *totals = NULL;
    size_t n_totals = 0;
    s.totals_ok = sb_counts_list(bus, &totals, &n_totals, &e) == SB_OK;
    s.totals = totals;
    s.n_totals = n_totals;
    s.queues = queues;
    s.n_queues = n_queues;
    if (s.queues_ok && s.counters != NULL) {
        /* Ingestion lag: the oldest row waiting on the dead-letter queue
         * (absent from the list when the queue is empty). */
        s.lag_ok = 1;
        for (size_t i = 0; i < n_queues; i++)
            if (strcmp(queues[i]->queue, c->dead_letter_queue) == 0)
                s.lag_ms = queues[i]->oldest_ready_age_ms;
    }
    if (loops != NULL) {
        sb__loops_state(loops, &s.loops);
        s.loops_ok = 1;
    }
    if (notify != NULL) {
        sb__notify_state(notify, &s.notify);
        s.notify_ok = 1;
    }
    if (store != NULL) {
        s.failed_ok = sb_errors_status_counts(store, s.failed, &e) == SB_OK;
        s.imports_ok = sb_errors_failed_import_count(store, &s.failed_imports,
                                                     &e) == SB_OK;
    }
    s.recovery_ok = read_recovery(bus, &s, disp, &e) == SB_OK;
    /* PostgreSQL: who holds the oldest xmin; the library warns in the
     * log when that transaction is SB_METRICS_XMIN_WARN_MS old. */
    s.xmin.size = sizeof s.xmin;
    int xrc = sb_xmin_holder_get(bus, SB_METRICS_XMIN_WARN_MS, &s.xmin, &e);
    s.xmin_applies = !(xrc == SB_INVALID && strcmp(e.field, "bus") == 0);
    s.xmin_ok = xrc == SB_OK;
    s.dispatched = disp;
    s.n_http = read_http(m, http);
    s.http = http;

    int rc = sb__metrics_text(&s, out);
    sb_free(queues);
    sb_free(totals);
    sb_free(types);
    sb__free(c);
    sb__free(disp);
    sb__free(http);
    if (rc != SB_OK)
        return sb__err(err, rc, NULL,
                       rc == SB_TOOBIG ? "the metrics text is over the "
                                         "buffer's cap"
                                       : "out of memory");
    return SB_OK;
}
