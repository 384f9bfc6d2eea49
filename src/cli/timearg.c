/* timearg.c - a point in time given on the command line (--from, --to):
 * ISO 8601 (UTC or with an offset) or Unix seconds. A parser free of I/O,
 * so the formats an operator types can be tested on their own. */
#include "cli.h"

#include <string.h>

/* Exactly `n` digits at *p into *out; advances *p. 0 or -1. */
static int digits(const char **p, int n, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int parse_iso(const char *p, int64_t *out)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t y, mo, d, h = 0, mi = 0, s = 0, us = 0, off = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
        digits(&p, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 ||
        d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
        return -1;
    if (*p == '\0') /* a date alone: midnight UTC */
        goto done;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
        return -1;
    if (*p == ':') {
        p++;
        if (digits(&p, 2, &s))
            return -1;
        if (*p == '.' || *p == ',') {
            p++;
            int n = 0;
            for (; *p >= '0' && *p <= '9'; p++, n++)
                if (n < 6)
                    us = us * 10 + (*p - '0');
            if (n == 0)
                return -1;
            for (; n < 6; n++)
                us *= 10;
        }
    }
    if (h > 23 || mi > 59 || s > 60)
        return -1;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int64_t oh, om = 0;
        if (digits(&p, 2, &oh))
            return -1;
        if (*p == ':')
            p++;
        if (*p != '\0' && digits(&p, 2, &om))
            return -1;
        if (oh > 23 || om > 59)
            return -1;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -1; /* no zone: refuse rather than guess local time */
    }
    if (*p != '\0')
        return -1;
done:
    *out = ((sb__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) -
            off) *
               1000000 +
           us;
    return 0;
}

/* See cli.h. */
int cli_parse_time_us(const char *text, int64_t *out)
{
    if (text == NULL || *text == '\0')
        return -1;
    size_t n = strlen(text);
    if (strspn(text, "0123456789") == n) {
        if (n > 11) /* beyond year 5000: a typo (milliseconds?) */
            return -1;
        int64_t v = 0;
        for (const char *p = text; *p != '\0'; p++)
            v = v * 10 + (*p - '0');
        *out = v * 1000000;
        return 0;
    }
    int64_t v = 0;
    if (parse_iso(text, &v) != 0 || v < 0)
        return -1;
    *out = v;
    return 0;
}
