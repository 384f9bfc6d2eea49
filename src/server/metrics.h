/*
 * metrics.h - `GET /metrics` (rule S8): the HTTP counters of `sqlbus
 * serve`, and the scrape that reads the database, the library's counters
 * (sb_bus_metrics) and the loops' state into the Prometheus text format.
 * docs/metrics.md lists every metric; metrics_text.c writes the text.
 */
#ifndef SB_SERVER_METRICS_H
#define SB_SERVER_METRICS_H

#include "core/core.h"
#include "server/loops.h"
#include "server/notify.h"
#include "server/router.h"
#include "server/stats.h"

typedef struct sb_metrics sb_metrics;

/* A scrape warns in the log (through the bus's log callback, at most once
 * a minute) when the oldest xmin's transaction is this old. */
#define SB_METRICS_XMIN_WARN_MS 60000

/* A new, empty set of HTTP counters. SB_NOMEM. */
int sb__metrics_new(sb_metrics **out, sb_error *err);
/* NULL-safe. No sb__metrics_http or render may run any more. */
void sb__metrics_free(sb_metrics *m);

/* Count one HTTP request: `route` (SB_R_NONE for a path no route has) with
 * its `pattern` (the router's static text, borrowed for the life of `m`;
 * NULL or SB_R_NONE is labelled "unmatched"), the status sent and how long
 * the answer took. At most SB_METRICS_STATUSES statuses are kept per
 * route, the rest counted as "other". Thread-safe and lock-free; a NULL
 * `m` is ignored. */
void sb__metrics_http(sb_metrics *m, sb_route_id route, const char *pattern,
                      unsigned status, int64_t duration_us);

/* The Prometheus text exposition (format 0.0.4), appended to `out`.
 * `bus` is required; `store`, `loops` and `notify` may be NULL (their
 * metrics then have no samples). The depth gauges come from `stats`'s newest sample
 * when it is at most 10 s old (NULL or older: one sb_queue_list). A source the database cannot answer is left out and
 * reported by sqlbus_scrape_source_up{source} = 0; the scrape still
 * succeeds. Reads at most 10,000 recovery registrations. SB_OK, SB_INVALID
 * (no bus or out), SB_NOMEM / SB_TOOBIG (from `out`). Thread-safe. */
int sb__metrics_render(sb_metrics *m, sb_bus *bus, sb_errors *store,
                       sb_loops *loops, sb_notify *notify, sb_stats *stats,
                       sb_buf *out, sb_error *err);

#endif
