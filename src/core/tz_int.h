/*
 * tz_int.h - the body of a time zone (sb_tz) and the POSIX TZ rules it
 * ends with, shared by tzif.c (TZif files, offsets, wall times) and
 * tzrule.c (the POSIX TZ strings of TZif footers). Internal to src/core
 * and its tests.
 */
#ifndef SB_CORE_TZ_INT_H
#define SB_CORE_TZ_INT_H

#include "core.h"

/* One end of daylight saving time: a day of the year and the wall time
 * (seconds, -167 h to 167 h as TZif version 3 allows) at which the clock
 * changes, read in the time in effect before the change. */
typedef struct sb_tzrule_date {
    char kind;   /* 'J': Jn (1-365, no Feb 29); 'D': n (0-365); 'M': Mm.w.d */
    int n;       /* J and D */
    int m, w, d; /* M: month 1-12, week 1-5 (5 = last), weekday 0-6 */
    int32_t time;
} sb_tzrule_date;

/* A POSIX TZ string: standard time, and daylight saving time between two
 * dates each year when `has_dst`. */
typedef struct sb_tzrule {
    int32_t std_off, dst_off; /* seconds east of UTC */
    bool has_dst;
    sb_tzrule_date start, end; /* to DST, back to standard time */
} sb_tzrule;

struct sb_tz {
    size_t n;       /* transitions */
    int64_t *at;    /* n instants, strictly ascending */
    int32_t *off;   /* the offset from at[i] until at[i + 1] */
    int32_t off0;   /* before at[0] (TZif time type 0) */
    bool has_rule;  /* after at[n - 1] (always when n == 0): the rule */
    sb_tzrule rule; /* else the last offset stays */
};

/* Parse the POSIX TZ string of `len` bytes at `s` (borrowed; need not be
 * NUL-terminated): "std offset [dst [offset] ,start[/time],end[/time]]",
 * names alphabetic or <quoted>, at least 3 characters; offsets up to
 * 24:59:59 west (positive) or east (negative); dates Jn, n or Mm.w.d. A
 * DST name without a rule is refused (no default rules are guessed).
 * SB_INVALID naming "tz_rule"; *out is untouched then. Pure. */
int sb__tzrule_parse(const char *s, size_t len, sb_tzrule *out, sb_error *err);

/* The offset rule `r` puts in effect at the instant `utc`, and the first
 * instant after `utc` at which it changes (INT64_MAX without DST). */
int32_t sb__tzrule_offset(const sb_tzrule *r, int64_t utc,
                          int64_t *next_change);

/* Floor division and modulo of a by b > 0, for instants before 1970. */
static inline int64_t sb__floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static inline int64_t sb__floor_mod(int64_t a, int64_t b)
{
    return a - sb__floor_div(a, b) * b;
}

#endif
