/*
 * schedules.h - what the two files of periodic jobs (T41) share: the
 * timing of a stored schedule built from its row's columns. schedules.c
 * stores and lists schedules; scheduler.c publishes their occurrences.
 */
#ifndef SB_SCHEDULES_H
#define SB_SCHEDULES_H

#include "transport/transport.h"

/* A schedule's timing: `s` points into `cron` and `tz`, so the struct
 * stays where it was built. */
typedef struct sb_sched_timing {
    sb_cron cron;
    sb_tz *tz; /* owned; NULL for an interval */
    sb_schedule s;
} sb_sched_timing;

/* Build `t` from a cron expression in zone `tz_name` (NULL = "UTC"), or,
 * with `cron` NULL, an interval of `interval_us` from `anchor_us`.
 * SB_INVALID naming "cron", "every_ms" or "time_zone" (an unknown zone
 * too), SB_NOMEM, SB_ERROR (a zone file that cannot be read). Reads the
 * zone's file. Free with sb__sched_timing_free. */
int sb__sched_timing(const char *cron, int64_t interval_us, const char *tz_name,
                     int64_t anchor_us, sb_sched_timing *t, sb_error *err);
/* NULL-safe on a zeroed struct. */
void sb__sched_timing_free(sb_sched_timing *t);

/* The first occurrence after `after_us`, or -1 when none comes before
 * the year 10000. */
int64_t sb__sched_next_or_none(const sb_sched_timing *t, int64_t after_us);

#endif
