/* schedule.c - the occurrences of a schedule (a cron expression in a zone,
 * or a fixed interval from an anchor) and what is due when the scheduler
 * looks: on-time occurrences, and missed ones skipped or folded into one
 * (docs/internals/cron.md). Pure: the caller brings the clock and keeps
 * the state, so any number of schedulers compute the same answers. */
#include "core.h"

#include <string.h>

static bool in_range(int64_t us)
{
    return us >= SB_SCHED_MIN_US && us <= SB_SCHED_MAX_US;
}

int sb__every_check(int64_t every_us, int64_t anchor_us, sb_error *err)
{
    if (every_us < SB_EVERY_MIN_US || every_us > SB_EVERY_MAX_US)
        return sb__err(err, SB_INVALID, "every",
                       "every: the interval must be 1s to 366d");
    if (!in_range(anchor_us))
        return sb__err(err, SB_INVALID, "every",
                       "every: the anchor is outside the years 1 to 9999");
    return SB_OK;
}

int sb__schedule_next(const sb_schedule *s, int64_t after_us, int64_t *next_us,
                      sb_error *err)
{
    if (s->cron != NULL)
        return sb__cron_next(s->cron, s->tz, after_us, next_us, err);
    int rc = sb__every_check(s->every_us, s->anchor_us, err);
    if (rc != SB_OK)
        return rc;
    if (!in_range(after_us))
        return sb__err(err, SB_INVALID, "every",
                       "every: the instant is outside the years 1 to 9999");
    int64_t next = s->anchor_us;
    if (after_us >= s->anchor_us) /* both in range: no overflow */
        next += ((after_us - s->anchor_us) / s->every_us + 1) * s->every_us;
    if (next > SB_SCHED_MAX_US)
        return sb__err(err, SB_INVALID, "every",
                       "every: never occurs before the year 10000");
    *next_us = next;
    return SB_OK;
}

int sb__schedule_prev(const sb_schedule *s, int64_t at_us, int64_t *prev_us,
                      sb_error *err)
{
    if (!in_range(at_us))
        return sb__err(err, SB_INVALID, s->cron ? "cron" : "every",
                       "%s: the instant is outside the years 1 to 9999",
                       s->cron ? "cron" : "every");
    if (s->cron == NULL) {
        int rc = sb__every_check(s->every_us, s->anchor_us, err);
        if (rc != SB_OK)
            return rc;
        if (at_us < s->anchor_us)
            return sb__err(err, SB_NOTFOUND, "every",
                           "every: no occurrence before the anchor");
        *prev_us =
            s->anchor_us + (at_us - s->anchor_us) / s->every_us * s->every_us;
        return SB_OK;
    }
    /* Cron has no backward search of its own: find a span (at - span,
     * at] holding an occurrence by doubling it, then the latest start
     * whose next occurrence is still <= at by bisection. About 50 forward
     * searches at most. */
    int64_t lo, next = 0, span = 60 * 1000000LL;
    for (;;) {
        lo = at_us - span;
        if (lo < SB_SCHED_MIN_US)
            lo = SB_SCHED_MIN_US;
        sb_error e;
        int rc = sb__cron_next(s->cron, s->tz, lo, &next, &e);
        if (rc == SB_OK && next <= at_us)
            break;
        if ((rc != SB_OK && rc != SB_INVALID) || lo == SB_SCHED_MIN_US ||
            span > SB_CRON_SEARCH_YEARS * 366LL * 86400 * 1000000)
            return sb__err(err, SB_NOTFOUND, "cron",
                           "cron: no occurrence in the %d years before the "
                           "instant",
                           SB_CRON_SEARCH_YEARS);
        span *= 2;
    }
    int64_t hi = at_us; /* next(lo) <= at_us < next(hi) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2, n = 0;
        int rc = sb__cron_next(s->cron, s->tz, mid, &n, err);
        if (rc != SB_OK)
            return rc;
        if (n <= at_us)
            lo = mid, next = n;
        else
            hi = mid;
    }
    *prev_us = next;
    return SB_OK;
}

int sb__missed_parse(const char *text, sb_missed *out, sb_error *err)
{
    if (text != NULL && strcmp(text, "skip") == 0) {
        *out = SB_MISSED_SKIP;
        return SB_OK;
    }
    if (text != NULL && strcmp(text, "once") == 0) {
        *out = SB_MISSED_ONCE;
        return SB_OK;
    }
    return sb__err(err, SB_INVALID, "missed",
                   "missed: the policy is \"skip\" or \"once\"");
}

int sb__schedule_due(const sb_schedule *s, sb_missed policy,
                     const int64_t *last_us, int64_t now_us, int64_t grace_us,
                     sb_due *out, sb_error *err)
{
    if (policy != SB_MISSED_SKIP && policy != SB_MISSED_ONCE)
        return sb__err(err, SB_INVALID, "missed",
                       "missed: the policy is \"skip\" or \"once\"");
    if (grace_us < 0 || grace_us > SB_EVERY_MAX_US)
        return sb__err(err, SB_INVALID, "grace",
                       "grace: must be 0 to 366 days");
    if (!in_range(now_us) || (last_us != NULL && !in_range(*last_us)) ||
        now_us - grace_us <= SB_SCHED_MIN_US)
        return sb__err(err, SB_INVALID, "now",
                       "now: an instant is outside the years 1 to 9999");
    sb_due d;
    memset(&d, 0, sizeof d);
    d.has_last = last_us != NULL;
    d.last_us = last_us != NULL ? *last_us : 0;
    /* On time: at or after `cutoff`; missed: before it. Without a last
     * occurrence nothing before the cutoff counts. */
    int64_t cutoff = now_us - grace_us;
    int64_t first = 0;
    int rc = sb__schedule_next(s, last_us ? *last_us : cutoff - 1, &first, err);
    if (rc != SB_OK)
        return rc;
    if (first > now_us) { /* nothing due yet */
        d.next_us = first;
        *out = d;
        return SB_OK;
    }
    if (first >= cutoff) { /* on time */
        d.publish = true;
        d.occurrence_us = first;
        d.has_last = true;
        d.last_us = first;
        if ((rc = sb__schedule_next(s, first, &d.next_us, err)) != SB_OK)
            return rc;
        *out = d;
        return SB_OK;
    }
    /* Missed: `first` up to the last occurrence before the cutoff. */
    int64_t last_missed = 0;
    if ((rc = sb__schedule_prev(s, cutoff - 1, &last_missed, err)) != SB_OK)
        return rc;
    d.missed = true;
    d.missed_first_us = first;
    d.missed_last_us = last_missed;
    d.has_last = true;
    d.last_us = last_missed;
    int64_t after = 0;
    if ((rc = sb__schedule_next(s, last_missed, &after, err)) != SB_OK)
        return rc;
    if (policy == SB_MISSED_ONCE) {
        /* One publish for all of them, keyed by the first: a scheduler
         * that saw the same last occurrence folds into the same key,
         * whenever it looks. */
        d.publish = true;
        d.occurrence_us = first;
        d.next_us = after;
    } else if (after <= now_us) { /* skip, and the next is on time */
        d.publish = true;
        d.occurrence_us = after;
        d.last_us = after;
        if ((rc = sb__schedule_next(s, after, &d.next_us, err)) != SB_OK)
            return rc;
    } else {
        d.next_us = after;
    }
    *out = d;
    return SB_OK;
}
