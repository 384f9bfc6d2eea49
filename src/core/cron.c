/* cron.c - 5-field cron expressions: parsed into bit sets, matched against
 * wall times, and their next occurrence found in a time zone. Vixie cron's
 * syntax and day rule; the time-zone rules (a wall time skipped by a jump
 * forward runs at the first instant after the gap, a repeated one once)
 * are sb__tz_resolve's. Pure: no I/O, no allocation. The design note is
 * docs/internals/cron.md. */
#include "tz_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DAY 86400LL

enum { F_MINUTE, F_HOUR, F_MDAY, F_MONTH, F_WDAY, N_FIELDS };

static const struct {
    const char *name;
    int lo, hi;   /* the values a number may take */
    int star_hi;  /* "*" spans lo..star_hi */
    int step_max; /* the largest step */
} fields[N_FIELDS] = {
    {"minute", 0, 59, 59, 60},       {"hour", 0, 23, 23, 24},
    {"day-of-month", 1, 31, 31, 31}, {"month", 1, 12, 12, 12},
    {"day-of-week", 0, 7, 6, 7},
};

static const char *const month_names[12] = {"JAN", "FEB", "MAR", "APR",
                                            "MAY", "JUN", "JUL", "AUG",
                                            "SEP", "OCT", "NOV", "DEC"};
static const char *const wday_names[7] = {"SUN", "MON", "TUE", "WED",
                                          "THU", "FRI", "SAT"};

static const struct {
    const char *name, *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

static bool alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* An error about field `f` (0-based), "cron: field 2 (hour): ...". */
static int field_err(sb_error *err, int f, const char *fmt, ...)
    SB_PRINTF(3, 4);
static int field_err(sb_error *err, int f, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sb__err(err, SB_INVALID, "cron", "cron: field %d (%s): %s", f + 1,
                   fields[f].name, what);
}

/* `n` bytes of the caller's text, safe to quote: printable ASCII, the
 * rest as '?', cut at 32 bytes. */
static void quote(char out[40], const char *s, size_t n)
{
    size_t k = n < 32 ? n : 32;
    for (size_t i = 0; i < k; i++)
        out[i] = (s[i] > 0x20 && s[i] < 0x7f) ? s[i] : '?';
    memcpy(out + k, n > 32 ? "..." : "", n > 32 ? 4 : 1);
}

/* One value at s[*i]: a number, or a 3-letter name in the month and
 * day-of-week fields. */
static int value(const char *s, size_t len, size_t *i, int f, int *out,
                 sb_error *err)
{
    size_t start = *i;
    char q[40];
    if (digit(s[*i])) {
        long long v = 0;
        while (*i < len && digit(s[*i])) {
            if (v < 1000000)
                v = v * 10 + (s[*i] - '0');
            (*i)++;
        }
        if (v < fields[f].lo || v > fields[f].hi) {
            quote(q, s + start, *i - start);
            return field_err(err, f, "%s is out of range %d-%d", q,
                             fields[f].lo, fields[f].hi);
        }
        *out = (int)v;
        return SB_OK;
    }
    if (alpha(s[*i])) {
        while (*i < len && alpha(s[*i]))
            (*i)++;
        size_t n = *i - start;
        quote(q, s + start, n);
        const char *const *names = f == F_MONTH  ? month_names
                                   : f == F_WDAY ? wday_names
                                                 : NULL;
        int count = f == F_MONTH ? 12 : 7;
        if (names == NULL) {
            if (strcmp(q, "L") == 0 || strcmp(q, "W") == 0 ||
                strcmp(q, "LW") == 0)
                return field_err(err, f,
                                 "\"%s\" is a Quartz extension, not "
                                 "supported",
                                 q);
            return field_err(err, f, "\"%s\" is not a number", q);
        }
        for (int k = 0; n == 3 && k < count; k++) {
            if (upper(s[start]) == names[k][0] &&
                upper(s[start + 1]) == names[k][1] &&
                upper(s[start + 2]) == names[k][2]) {
                *out = f == F_MONTH ? k + 1 : k;
                return SB_OK;
            }
        }
        return field_err(err, f,
                         f == F_MONTH ? "unknown month \"%s\" (use JAN-DEC)"
                                      : "unknown day \"%s\" (use SUN-SAT)",
                         q);
    }
    char c = s[*i];
    if (c == '?' || c == '#')
        return field_err(err, f, "\"%c\" is a Quartz extension, not supported",
                         c);
    if (start == len || c == ',' || c == '-' || c == '/')
        return field_err(err, f, "a value is missing");
    quote(q, s + start, 1);
    return field_err(err, f, "unexpected \"%s\"", q);
}

/* A step: '/' and a number 1..step_max. */
static int step(const char *s, size_t len, size_t *i, int f, int *out,
                sb_error *err)
{
    (*i)++; /* the '/' */
    size_t start = *i;
    long long v = 0;
    while (*i < len && digit(s[*i])) {
        if (v < 1000000)
            v = v * 10 + (s[*i] - '0');
        (*i)++;
    }
    if (*i == start)
        return field_err(err, f, "a step needs a number after '/'");
    if (v < 1 || v > fields[f].step_max) {
        char q[40];
        quote(q, s + start, *i - start);
        return field_err(err, f, "step %s is out of range 1-%d", q,
                         fields[f].step_max);
    }
    *out = (int)v;
    return SB_OK;
}

/* One field: comma-separated elements, each "*", "a", "a-b", with an
 * optional "/step" ("a/step" runs to the field's end). */
static int parse_field(const char *s, size_t len, int f, uint64_t *bits,
                       bool *star, sb_error *err)
{
    *bits = 0;
    *star = s[0] == '*';
    size_t i = 0;
    for (;;) {
        int lo = 0, hi = 0, by = 1, rc;
        if (i < len && s[i] == '*') {
            i++;
            lo = fields[f].lo;
            hi = fields[f].star_hi;
            if (i < len && s[i] == '/') {
                if ((rc = step(s, len, &i, f, &by, err)) != SB_OK)
                    return rc;
            }
        } else {
            if (i == len || s[i] == ',')
                return field_err(err, f, "a list element is empty");
            if ((rc = value(s, len, &i, f, &lo, err)) != SB_OK)
                return rc;
            hi = lo;
            bool range = i < len && s[i] == '-';
            if (range) {
                i++;
                if ((rc = value(s, len, &i, f, &hi, err)) != SB_OK)
                    return rc;
                /* SAT-SUN: a day-of-week range may end on Sunday as 7. */
                if (f == F_WDAY && hi == 0 && lo > 0)
                    hi = 7;
                if (hi < lo)
                    return field_err(err, f,
                                     "range %d-%d is backwards (write "
                                     "the two ends low to high)",
                                     lo, hi);
            }
            if (i < len && s[i] == '/') {
                if (!range) /* "5/15": from 5 to the end, every 15 */
                    hi = fields[f].hi;
                if ((rc = step(s, len, &i, f, &by, err)) != SB_OK)
                    return rc;
            }
        }
        for (int v = lo; v <= hi; v += by)
            *bits |= 1ULL << (f == F_WDAY && v == 7 ? 0 : v);
        if (i == len)
            return SB_OK;
        if (s[i] != ',') {
            char q[40];
            quote(q, s + i, 1);
            if (s[i] == '?' || s[i] == '#' || s[i] == 'L' || s[i] == 'W')
                return field_err(
                    err, f, "\"%s\" is a Quartz extension, not supported", q);
            return field_err(err, f, "unexpected \"%s\"", q);
        }
        i++;
    }
}

static int days_in_month(int m, bool leap)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31};
    return days[m - 1] + (m == 2 && leap);
}

/* Whether any date the day-of-month and month fields allow exists (Feb
 * 29 counts: leap years come). With both day fields restricted a day
 * matches on its weekday alone, and every month has every weekday. */
static bool ever(const sb_cron *c)
{
    if (!c->mday_star && !c->wday_star)
        return true;
    for (int m = 1; m <= 12; m++)
        for (int d = 1; d <= days_in_month(m, true); d++)
            if ((c->months >> m & 1) && (c->mdays >> d & 1))
                return true;
    return false;
}

int sb__cron_parse(const char *expr, sb_cron *out, sb_error *err)
{
    if (expr == NULL)
        return sb__err(err, SB_INVALID, "cron", "cron: expression is empty");
    size_t len = strnlen(expr, SB_CRON_MAX + 1);
    if (len > SB_CRON_MAX)
        return sb__err(err, SB_INVALID, "cron",
                       "cron: expression is longer than %d bytes", SB_CRON_MAX);
    size_t a = 0, b = len;
    while (a < b && blank(expr[a]))
        a++;
    while (b > a && blank(expr[b - 1]))
        b--;
    if (a == b)
        return sb__err(err, SB_INVALID, "cron", "cron: expression is empty");
    if (expr[a] == '@') {
        for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++) {
            size_t n = strlen(macros[k].name);
            bool same = n == b - a;
            for (size_t j = 0; same && j < n; j++)
                same = upper(expr[a + j]) == upper(macros[k].name[j]);
            if (same)
                return sb__cron_parse(macros[k].expr, out, err);
        }
        char q[40];
        quote(q, expr + a, b - a);
        return sb__err(err, SB_INVALID, "cron",
                       "cron: unknown macro \"%s\" (use @hourly, @daily, "
                       "@midnight, @weekly, @monthly, @yearly or @annually)",
                       q);
    }
    /* Split into fields on blanks. */
    size_t start[N_FIELDS + 1], flen[N_FIELDS + 1];
    int n = 0;
    for (size_t i = a; i < b;) {
        size_t j = i;
        while (j < b && !blank(expr[j]))
            j++;
        if (n <= N_FIELDS) {
            start[n] = i;
            flen[n] = j - i;
        }
        n++;
        while (j < b && blank(expr[j]))
            j++;
        i = j;
    }
    if (n != N_FIELDS)
        return sb__err(err, SB_INVALID, "cron",
                       "cron: expected 5 fields (minute hour day-of-month "
                       "month day-of-week), got %d",
                       n);
    sb_cron c;
    memset(&c, 0, sizeof c);
    uint64_t bits[N_FIELDS];
    bool star[N_FIELDS];
    for (int f = 0; f < N_FIELDS; f++) {
        int rc =
            parse_field(expr + start[f], flen[f], f, &bits[f], &star[f], err);
        if (rc != SB_OK)
            return rc;
    }
    c.minutes = bits[F_MINUTE];
    c.hours = (uint32_t)bits[F_HOUR];
    c.mdays = (uint32_t)bits[F_MDAY];
    c.months = (uint16_t)bits[F_MONTH];
    c.wdays = (uint8_t)bits[F_WDAY];
    c.mday_star = star[F_MDAY];
    c.wday_star = star[F_WDAY];
    if (!ever(&c))
        return sb__err(err, SB_INVALID, "cron",
                       "cron: never occurs: no month of field 4 (month) has "
                       "a day of field 3 (day-of-month)");
    *out = c;
    return SB_OK;
}

static bool day_matches(const sb_cron *c, int64_t days, int mday)
{
    bool dom = c->mdays >> mday & 1;
    bool dow = c->wdays >> sb__floor_mod(days + 4, 7) & 1; /* Thursday */
    return (c->mday_star || c->wday_star) ? dom && dow : dom || dow;
}

bool sb__cron_matches(const sb_cron *c, int64_t wall)
{
    int64_t days = sb__floor_div(wall, DAY), sod = wall - days * DAY;
    int64_t y;
    int m, d;
    sb__civil_from_days(days, &y, &m, &d);
    return (c->minutes >> (sod / 60 % 60) & 1) &&
           (c->hours >> (sod / 3600) & 1) && (c->months >> m & 1) &&
           day_matches(c, days, d);
}

/* The lowest set bit of `bits` at `from` or above, or -1. */
static int next_bit(uint64_t bits, int from)
{
    if (from > 63)
        return -1;
    bits >>= from;
    if (bits == 0)
        return -1;
    int k = from;
    while (!(bits & 1)) {
        bits >>= 1;
        k++;
    }
    return k;
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The first wall time (a whole minute) after `wall` that `c` matches,
 * before the wall time `limit`; false when there is none. */
static bool next_wall(const sb_cron *c, int64_t wall, int64_t limit,
                      int64_t *out)
{
    int64_t t = sb__floor_div(wall, 60) * 60 + 60;
    int64_t days = sb__floor_div(t, DAY), sod = t - days * DAY;
    int h = (int)(sod / 3600), mi = (int)(sod / 60 % 60);
    int64_t y;
    int m, d;
    sb__civil_from_days(days, &y, &m, &d);
    for (;;) {
        if (days * DAY >= limit)
            return false;
        if (!(c->months >> m & 1)) {
            int nm = next_bit(c->months, m + 1);
            if (nm < 0) {
                y++;
                nm = next_bit(c->months, 1);
            }
            m = nm, d = 1, h = 0, mi = 0;
            days = sb__days_from_civil(y, m, 1);
            continue;
        }
        bool next_day = !day_matches(c, days, d);
        if (!next_day && !(c->hours >> h & 1)) {
            int nh = next_bit(c->hours, h);
            if (nh < 0)
                next_day = true;
            else
                h = nh, mi = 0;
        }
        if (!next_day && !(c->minutes >> mi & 1)) {
            int nmi = next_bit(c->minutes, mi);
            if (nmi >= 0) {
                mi = nmi;
            } else {
                h++, mi = 0;
                if (h > 23)
                    next_day = true;
                else
                    continue;
            }
        }
        if (next_day) {
            days++, d++, h = 0, mi = 0;
            if (d > days_in_month(m, is_leap(y))) {
                d = 1;
                if (++m > 12)
                    m = 1, y++;
            }
            continue;
        }
        *out = days * DAY + h * 3600 + mi * 60;
        return true;
    }
}

int sb__cron_next(const sb_cron *c, const sb_tz *tz, int64_t after_us,
                  int64_t *next_us, sb_error *err)
{
    if (after_us < SB_SCHED_MIN_US || after_us > SB_SCHED_MAX_US)
        return sb__err(err, SB_INVALID, "cron",
                       "cron: the instant is outside the years 1 to 9999");
    /* Only the bits a field can hold (a struct may be built by hand). */
    sb_cron cc = *c;
    cc.minutes &= (1ULL << 60) - 1;
    cc.hours &= (1U << 24) - 1;
    cc.mdays &= ~1U;
    cc.months &= 0x1ffe;
    cc.wdays &= 0x7f;
    c = &cc;
    if (c->minutes == 0 || c->hours == 0 || c->mdays == 0 || c->months == 0 ||
        c->wdays == 0)
        return sb__err(err, SB_INVALID, "cron", "cron: never occurs");
    int64_t after = sb__floor_div(after_us, 1000000);
    int32_t off = tz != NULL ? sb__tz_offset(tz, after, NULL) : 0;
    int64_t wall = after + off;
    /* Wall times up to wall(after) resolve to `after` or earlier; a few
     * past it may too while the clock repeats an hour, and are passed. */
    int64_t y;
    int m, d;
    sb__civil_from_days(sb__floor_div(wall, DAY), &y, &m, &d);
    int64_t end_year = y + SB_CRON_SEARCH_YEARS;
    if (end_year > 10000)
        end_year = 10000;
    int64_t limit = sb__days_from_civil(end_year, 1, 1) * DAY;
    for (;;) {
        if (!next_wall(c, wall, limit, &wall))
            return sb__err(err, SB_INVALID, "cron",
                           "cron: never occurs in the %d years after the "
                           "instant (or before the year 10000)",
                           SB_CRON_SEARCH_YEARS);
        int64_t at = tz != NULL ? sb__tz_resolve(tz, wall) : wall;
        if (at > after) {
            if (at > SB_SCHED_MAX_US / 1000000)
                return sb__err(err, SB_INVALID, "cron",
                               "cron: never occurs before the year 10000");
            *next_us = at * 1000000;
            return SB_OK;
        }
    }
}
