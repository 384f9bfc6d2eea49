/*
 * loops.h - the background work of `sqlbus serve` (S1, S3): error
 * ingestion (E1), with the expiry of waiting messages (T40) before each
 * pass, housekeeping — the retention sweep (E21), dead-letter pruning
 * (T25), the recovery watchdog (C22) — and the scheduler of periodic jobs
 * (T41). A database error is logged
 * once per outage, retried with back-off, and shown in the state; no loop
 * ends on one.
 */
#ifndef SB_SERVER_LOOPS_H
#define SB_SERVER_LOOPS_H

#include <stdint.h>

#include "sqlbus.h"

#define SB_RETENTION_DEFAULT_MS (15LL * 24 * 3600 * 1000)

#define SB_LOOPS_MAX_INGESTERS 8

typedef struct sb_loops sb_loops;

typedef struct sb_loops_options {
    int64_t retention_ms;    /* E21 (0: 15 days) */
    int64_t idle_ms;         /* ingestion's nap when the DLQ is empty (0:
                                  1 s) */
    int ingesters;           /* ingestion threads, each its own pass over
                                  the dead-letter queue at once (0: 1; at
                                  most SB_LOOPS_MAX_INGESTERS) */
    int64_t housekeeping_ms; /* housekeeping period (0: 1 h) */
    int64_t first_sweep_ms;  /* the first housekeeping run after start
                                  (0: 1 min) */
    sb_log_fn log;           /* one line per outage and per recovery */
    void *log_user;
} sb_loops_options;

/* What readiness (S8) and metrics report. */
typedef struct sb_loops_state {
    int64_t passes, rows, messages, failed_imports_ingested;
    int64_t errors;          /* failed passes, all told */
    int failing;             /* the last pass failed */
    int64_t last_ok_age_ms;  /* since the last good pass (-1: none yet) */
    int64_t sweeps, expired; /* housekeeping runs, messages expired */
    int64_t stale_registrations;
    int64_t queue_expired; /* T40: waiting messages dead-lettered expired */
    int64_t scheduled;     /* messages the scheduler published (T41) */
} sb_loops_state;

/* The longest the scheduler sleeps between passes: a schedule added
 * elsewhere is seen within it. */
#define SB_LOOPS_SCHEDULER_MAX_MS 1000

/* Start the ingestion threads, the housekeeping thread and the scheduler
 * thread over `bus` and
 * `store` (borrowed; they must outlive the loops). SB_INVALID naming
 * "ingesters" outside 0..SB_LOOPS_MAX_INGESTERS. */
int sb__loops_start(sb_bus *bus, sb_errors *store, const sb_loops_options *opts,
                    sb_loops **out, sb_error *err);
/* A consistent copy of the state. Thread-safe. */
void sb__loops_state(sb_loops *l, sb_loops_state *out);
/* An episode of failing ingestion (issue 22's event log): from the first
 * failed pass to the next good one (end_us 0 while it lasts), wall-clock
 * microseconds, with the first failure's result text (sb_strerror). */
#define SB_LOOPS_EPISODES 32 /* the newest kept */
typedef struct sb_loops_episode {
    int64_t start_us, end_us;
    char error[256];
} sb_loops_episode;
/* The newest episodes (at most `max`), newest first, into `out`; returns
 * how many. 0 for a NULL `l`. Thread-safe. */
size_t sb__loops_episodes(sb_loops *l, sb_loops_episode *out, size_t max);
/* Stop: a pass or sweep under way finishes first. NULL-safe. */
void sb__loops_stop(sb_loops *l);

#endif
