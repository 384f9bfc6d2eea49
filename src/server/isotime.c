/* isotime.c - ISO 8601 times for the HTTP API: writing UTC with
 * milliseconds and reading what clients send, with civil-date
 * arithmetic (core's days from a date, its inverse here) instead of
 * timegm, a locale or a time zone database. */
#include "server/isotime.h"

#include <stdio.h>
#include <string.h>

#define US_PER_S 1000000LL
#define S_PER_DAY 86400LL

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

void sb__iso_time(int64_t us, char *out)
{
    if (us < 0)
        us = 0;
    int64_t s = us / US_PER_S, days = s / S_PER_DAY, rest = s % S_PER_DAY;
    int y, m, d;
    civil_from_days(days, &y, &m, &d);
    /* The compiler cannot tell the fields are small: write into room for
     * any int, then copy (the result always fits SB_ISO_TIME_LEN). */
    char t[96];
    snprintf(t, sizeof t, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d,
             (int)(rest / 3600), (int)(rest / 60 % 60), (int)(rest % 60),
             (int)(us % US_PER_S / 1000));
    sb__strlcpy(out, t, SB_ISO_TIME_LEN);
}

/* `n` digits at *p (advanced) as a number; -1 when they are not digits. */
static int digits(const char **p, const char *end, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (*p >= end || **p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int sb__iso_parse(const char *s, size_t len, int64_t *us)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s, *end = s + len;
    int y = digits(&p, end, 4);
    if (y < 1970 || p >= end || *p++ != '-')
        return SB_INVALID;
    int mo = digits(&p, end, 2);
    if (mo < 1 || mo > 12 || p >= end || *p++ != '-')
        return SB_INVALID;
    int d = digits(&p, end, 2);
    if (d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
        return SB_INVALID;
    int h = 0, mi = 0, sec = 0;
    int64_t frac = 0, offset_s = 0;
    if (p < end && (*p == 'T' || *p == 't' || *p == ' ')) {
        p++;
        h = digits(&p, end, 2);
        if (h < 0 || h > 23 || p >= end || *p++ != ':')
            return SB_INVALID;
        mi = digits(&p, end, 2);
        if (mi < 0 || mi > 59)
            return SB_INVALID;
        if (p < end && *p == ':') {
            p++;
            sec = digits(&p, end, 2);
            if (sec < 0 || sec > 59)
                return SB_INVALID;
            if (p < end && (*p == '.' || *p == ',')) {
                p++;
                int n = 0;
                int64_t scale = 100000;
                for (; p < end && *p >= '0' && *p <= '9'; p++, n++) {
                    frac += (*p - '0') * scale;
                    scale /= 10;
                }
                if (n < 1 || n > 9)
                    return SB_INVALID;
            }
        }
        if (p < end && (*p == 'Z' || *p == 'z')) {
            p++;
        } else if (p < end && (*p == '+' || *p == '-')) {
            int sign = *p++ == '-' ? -1 : 1;
            int oh = digits(&p, end, 2);
            if (oh < 0 || oh > 23 || p >= end || *p++ != ':')
                return SB_INVALID;
            int om = digits(&p, end, 2);
            if (om < 0 || om > 59)
                return SB_INVALID;
            offset_s = sign * (oh * 3600LL + om * 60LL);
        }
    }
    if (p != end)
        return SB_INVALID;
    int64_t t = sb__days_from_civil(y, mo, d) * S_PER_DAY + h * 3600LL +
                mi * 60LL + sec - offset_s;
    if (t < 0)
        return SB_INVALID;
    *us = t * US_PER_S + frac;
    return SB_OK;
}

int sb__iso_range(const char *s, const char *field, int64_t *from, int64_t *to,
                  sb_error *err)
{
    const char *dots = strstr(s, "...");
    if (dots == NULL)
        return sb__err(err, SB_INVALID, field,
                       "%s must be FROM...TO (ISO 8601 times, either may "
                       "be empty)",
                       field);
    int64_t a = 0, b = 0;
    size_t la = (size_t)(dots - s), lb = strlen(dots + 3);
    if ((la > 0 && sb__iso_parse(s, la, &a) != SB_OK) ||
        (lb > 0 && sb__iso_parse(dots + 3, lb, &b) != SB_OK))
        return sb__err(err, SB_INVALID, field,
                       "%s must be FROM...TO with ISO 8601 times such as "
                       "2026-12-01T10:00:00Z",
                       field);
    if (la > 0 && lb > 0 && a > b)
        return sb__err(err, SB_INVALID, field, "%s: FROM must not be after TO",
                       field);
    *from = a;
    *to = b;
    return SB_OK;
}
