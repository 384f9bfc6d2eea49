/*
 * stats.h - the sampler behind `GET /api/stats` (rule S6): a thread that
 * every interval records, per queue, the depth (ready, in flight, dead
 * letters) and published and acked counts in the interval, both from the
 * database and so of every process (sb_counts_list), the rows ingestion
 * consumed, and the unresolved and archived failed-message totals, in a
 * ring of one hour. docs/metrics.md says what each series means.
 */
#ifndef SB_SERVER_STATS_H
#define SB_SERVER_STATS_H

#include "core/core.h"
#include "server/loops.h"

#define SB_STATS_QUEUES 64      /* queues charted at once */
#define SB_STATS_MAX_POINTS 720 /* ring size (1 h at the default 10 s) */

typedef struct sb_stats sb_stats;

typedef struct sb_stats_options {
    int interval_ms; /* 0 = 10000; at least 100 */
    /* A database outage is logged once when it starts and once when it
     * ends (component "stats"); NULL = silent. */
    sb_log_fn log;
    void *log_user;
} sb_stats_options;

/* Start sampling `bus` (required), `store` and `loops` (optional: their
 * series stay empty); all three are borrowed and must outlive the
 * sampler. The first sample is taken at once. The ring holds one hour, or
 * SB_STATS_MAX_POINTS samples when the interval is shorter than 5 s.
 * SB_INVALID (interval), SB_NOMEM, SB_ERROR (no thread). */
int sb__stats_start(sb_bus *bus, sb_errors *store, sb_loops *loops,
                    const sb_stats_options *opts, sb_stats **out,
                    sb_error *err);
/* Stop and free. NULL-safe. Joins within about a second, or when a sample
 * under way returns (its database calls are bounded by the library's
 * timeouts). */
void sb__stats_stop(sb_stats *s);

/* The newest sample's queue counts (every queue, a list as sb_queue_list
 * gives), when it is at most `max_age_ms` old: `*out` transferred
 * (sb_free: the program installs no allocator, so its blocks and the
 * library's are the C library's), `*at_us` (may be NULL) its wall-clock
 * time. SB_EMPTY when there is no such sample (none yet, the database did
 * not answer, or `s` is NULL); SB_NOMEM. Thread-safe. */
int sb__stats_queues(sb_stats *s, int64_t max_age_ms, sb_queue_stats ***out,
                     size_t *n_out, int64_t *at_us);

/* A database outage the sampler saw (issue 22's event log): from the
 * first sample that could not read the database to the first that could
 * again (0 while it lasts), wall-clock microseconds. */
#define SB_STATS_OUTAGES 32 /* the newest kept */
typedef struct sb_stats_outage {
    int64_t start_us, end_us;
} sb_stats_outage;
/* The newest outages (at most `max`), newest first, into `out`; returns
 * how many. 0 for a NULL `s`. Thread-safe. */
size_t sb__stats_outages(sb_stats *s, sb_stats_outage *out, size_t max);

/* The JSON of the last `minutes` (1 to 60), appended to `out`:
 * {"interval_s": 10, "now": ISO, "queues": [{"name": Q, "points": [{"t":
 * ISO, "ready", "in_flight", "dead_lettered", "published", "acked"}]}],
 * "ingestion": [{"t", "rows"}], "failed": [{"t", "unresolved",
 * "archived"}]}, times UTC with milliseconds, oldest point first, queues
 * by name. A sample the database could not answer is missing from its
 * series. SB_INVALID naming "minutes", SB_NOMEM / SB_TOOBIG from `out`.
 * Thread-safe. */
int sb__stats_json(sb_stats *s, int minutes, sb_buf *out, sb_error *err);

#endif
