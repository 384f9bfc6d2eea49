/*
 * metrics_text.h - the Prometheus text exposition (format 0.0.4) of
 * `GET /metrics` (rule S8) from a snapshot already read: pure, no I/O, no
 * locks, so the text of any snapshot can be unit-tested. metrics.c reads
 * the snapshot (database, library counters, loops) and calls this.
 * docs/metrics.md lists every metric.
 */
#ifndef SB_SERVER_METRICS_TEXT_H
#define SB_SERVER_METRICS_TEXT_H

#include "core/core.h"
#include "server/loops.h"
#include "server/notify.h"

#define SB_METRICS_QUEUE_LABELS 500 /* queues shown by the depth gauges */
#define SB_METRICS_HANDLERS 32      /* recovery handlers shown by name */
#define SB_METRICS_STATUSES 8       /* HTTP statuses kept per route */

/* One route's HTTP counts. */
typedef struct sb_metrics_http_route {
    const char *pattern; /* the router's pattern (borrowed) */
    size_t n_status;
    unsigned status[SB_METRICS_STATUSES];
    int64_t requests[SB_METRICS_STATUSES];
    int64_t other_status; /* requests whose status found no room */
    sb_latency_histogram duration;
} sb_metrics_http_route;

typedef struct sb_metrics_dispatched {
    char handler[201]; /* "" for registrations that name no handler */
    int64_t n;
} sb_metrics_dispatched;

/* Everything one scrape shows. A source whose `*_ok` is 0 could not be
 * read: its families are written with no samples and
 * sqlbus_scrape_source_up{source} is 0. Pointers are borrowed. */
typedef struct sb_metrics_snapshot {
    int queues_ok;
    sb_queue_stats *const *queues; /* a list; at most
                                     SB_METRICS_QUEUE_LABELS shown */
    size_t n_queues;
    int lag_ok;
    int64_t lag_ms;                  /* the oldest dead letter's age */
    const sb_bus_counters *counters; /* NULL: none */
    sb_type_counts *const *types;    /* by queue and message type (a list:
                                        sb_bus_metrics_by_type) */
    size_t n_types;
    int totals_ok;
    const sb_queue_counts *totals; /* every process's (sb_counts_list) */
    size_t n_totals;
    int loops_ok;
    sb_loops_state loops;
    int notify_ok; /* issue 22: the health-check e-mails */
    sb_notify_state notify;
    int failed_ok;
    int64_t failed[4]; /* by enum sb_failed_status */
    int imports_ok;
    int64_t failed_imports;
    int recovery_ok;
    int64_t registrations[4]; /* by enum sb_registration_state */
    int64_t waiters;          /* registrations with a live waiter */
    const sb_metrics_dispatched *dispatched;
    size_t n_dispatched;
    int64_t dispatched_other; /* handlers past SB_METRICS_HANDLERS */
    const sb_metrics_http_route *http;
    size_t n_http;
    int xmin_applies; /* a PostgreSQL bus: the xmin families have samples */
    int xmin_ok;
    sb_xmin_holder xmin; /* the oldest xmin holder (sb_xmin_holder_get) */
} sb_metrics_snapshot;

/* Append `v` (NULL = "") as a label value, escaped as the format wants:
 * backslash, double quote and line feed. */
void sb__prom_label_value(sb_buf *b, const char *v);

/* The histogram bucket of `us` for the bounds of sb_latency_histogram
 * (100 us to 10 s, then +Inf): the first bound >= us. */
int sb__prom_bucket(int64_t us);
/* Those bounds, the last INT64_MAX. */
extern const int64_t sb__prom_le_us[SB_METRICS_BUCKETS];

/* Append the whole exposition of `s` to `out`. Returns out->failed (0 =
 * SB_OK, or SB_NOMEM / SB_TOOBIG from the buffer). */
int sb__metrics_text(const sb_metrics_snapshot *s, sb_buf *out);

#endif
