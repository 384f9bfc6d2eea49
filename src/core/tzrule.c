/* tzrule.c - POSIX TZ strings ("CET-1CEST,M3.5.0,M10.5.0/3"): the rule a
 * TZif file's footer gives for every instant after its last transition,
 * parsed and evaluated year by year. Pure: no I/O, no allocation. */
#include "tz_int.h"

#include <string.h>

#define HOUR 3600
#define DAY 86400LL

/* A cursor over the string, and the first problem met. */
typedef struct cursor {
    const char *s;
    size_t len, pos;
} cursor;

static int peek(const cursor *c)
{
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1;
}

static bool is_alpha(int ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

static int fail(const cursor *c, sb_error *err, const char *what)
{
    /* Quote what was given, cut at the cap; the bytes are the caller's,
     * so anything outside printable ASCII is shown as '?'. */
    char shown[SB_TZ_RULE_MAX + 1];
    size_t n = c->len < SB_TZ_RULE_MAX ? c->len : SB_TZ_RULE_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)c->s[i];
        shown[i] = (ch >= 0x20 && ch < 0x7f && ch != '"') ? (char)ch : '?';
    }
    shown[n] = '\0';
    return sb__err(err, SB_INVALID, "tz_rule", "TZ rule \"%s\": %s at byte %zu",
                   shown, what, c->pos + 1);
}

/* A zone abbreviation: 3 or more letters, or <3 or more of [A-Za-z0-9+-]>. */
static bool name(cursor *c)
{
    size_t n = 0;
    if (peek(c) == '<') {
        c->pos++;
        int ch;
        while ((ch = peek(c)) != -1 && ch != '>') {
            if (!is_alpha(ch) && !is_digit(ch) && ch != '+' && ch != '-')
                return false;
            c->pos++, n++;
        }
        if (ch != '>')
            return false;
        c->pos++;
    } else {
        while (is_alpha(peek(c)))
            c->pos++, n++;
    }
    return n >= 3;
}

/* Up to three digits with a value no more than `max`. */
static bool number(cursor *c, int max, int *out)
{
    int v = 0, digits = 0;
    while (is_digit(peek(c)) && digits < 3) {
        v = v * 10 + (peek(c) - '0');
        c->pos++, digits++;
    }
    if (digits == 0 || is_digit(peek(c)) || v > max)
        return false;
    *out = v;
    return true;
}

/* [+-]hh[:mm[:ss]] with hours up to `max_h`, as seconds (sign applied). */
static bool hms(cursor *c, int max_h, int32_t *out)
{
    int sign = 1;
    if (peek(c) == '+' || peek(c) == '-') {
        sign = peek(c) == '-' ? -1 : 1;
        c->pos++;
    }
    int h, m = 0, s = 0;
    if (!number(c, max_h, &h))
        return false;
    if (peek(c) == ':') {
        c->pos++;
        if (!number(c, 59, &m))
            return false;
        if (peek(c) == ':') {
            c->pos++;
            if (!number(c, 59, &s))
                return false;
        }
    }
    *out = (int32_t)(sign * (h * HOUR + m * 60 + s));
    return true;
}

/* Jn, n or Mm.w.d, then an optional /time (default 02:00:00). */
static bool date(cursor *c, sb_tzrule_date *d)
{
    memset(d, 0, sizeof *d);
    if (peek(c) == 'J') {
        c->pos++;
        d->kind = 'J';
        if (!number(c, 365, &d->n) || d->n < 1)
            return false;
    } else if (peek(c) == 'M') {
        c->pos++;
        d->kind = 'M';
        if (!number(c, 12, &d->m) || d->m < 1 || peek(c) != '.')
            return false;
        c->pos++;
        if (!number(c, 5, &d->w) || d->w < 1 || peek(c) != '.')
            return false;
        c->pos++;
        if (!number(c, 6, &d->d))
            return false;
    } else {
        d->kind = 'D';
        if (!number(c, 365, &d->n))
            return false;
    }
    d->time = 2 * HOUR;
    if (peek(c) == '/') {
        c->pos++;
        if (!hms(c, 167, &d->time))
            return false;
    }
    return true;
}

int sb__tzrule_parse(const char *s, size_t len, sb_tzrule *out, sb_error *err)
{
    cursor c = {s, len, 0};
    if (s == NULL || len == 0)
        return sb__err(err, SB_INVALID, "tz_rule", "TZ rule is empty");
    if (len > SB_TZ_RULE_MAX)
        return sb__err(err, SB_INVALID, "tz_rule",
                       "TZ rule is longer than %d bytes", SB_TZ_RULE_MAX);
    sb_tzrule r;
    memset(&r, 0, sizeof r);
    int32_t off;
    if (!name(&c))
        return fail(&c, err, "expected a zone name of 3 or more letters");
    /* POSIX counts west of Greenwich positive; offsets here are east. */
    if (!hms(&c, 24, &off))
        return fail(&c, err, "expected an offset [+-]hh[:mm[:ss]] up to 24");
    r.std_off = -off;
    r.dst_off = r.std_off;
    if (c.pos < c.len) {
        if (!name(&c))
            return fail(&c, err, "expected a DST name of 3 or more letters");
        r.has_dst = true;
        r.dst_off = r.std_off + HOUR;
        if (peek(&c) != ',' && peek(&c) != -1) {
            if (!hms(&c, 24, &off))
                return fail(&c, err, "expected a DST offset up to 24 hours");
            r.dst_off = -off;
        }
        if (peek(&c) != ',')
            return fail(&c, err,
                        "expected ',' and the dates DST starts "
                        "and ends (no default rule is assumed)");
        c.pos++;
        if (!date(&c, &r.start))
            return fail(&c, err, "expected a date Jn, n or Mm.w.d[/time]");
        if (peek(&c) != ',')
            return fail(&c, err, "expected ',' and the date DST ends");
        c.pos++;
        if (!date(&c, &r.end))
            return fail(&c, err, "expected a date Jn, n or Mm.w.d[/time]");
    }
    if (c.pos != c.len)
        return fail(&c, err, "unexpected text");
    *out = r;
    return SB_OK;
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The day (since the epoch) date `d` falls on in year `y`. */
static int64_t rule_day(const sb_tzrule_date *d, int64_t y)
{
    int64_t jan1 = sb__days_from_civil(y, 1, 1);
    if (d->kind == 'J') /* Feb 29 is never counted */
        return jan1 + d->n - 1 + (leap(y) && d->n >= 60);
    if (d->kind == 'D')
        return jan1 + d->n;
    static const int mdays[12] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
    int64_t first = sb__days_from_civil(y, d->m, 1);
    int64_t wd = sb__floor_mod(first + 4, 7); /* 1970-01-01: Thursday */
    int64_t day = (d->d - wd + 7) % 7 + 7 * (d->w - 1);
    int64_t len = mdays[d->m - 1] + (d->m == 2 && leap(y));
    while (day >= len) /* week 5: the last such weekday */
        day -= 7;
    return first + day;
}

typedef struct change {
    int64_t at;
    int32_t to;
} change;

int32_t sb__tzrule_offset(const sb_tzrule *r, int64_t utc, int64_t *next_change)
{
    if (!r->has_dst) {
        if (next_change != NULL)
            *next_change = INT64_MAX;
        return r->std_off;
    }
    /* The changes of five years around the instant's, in order; later
     * years' changes sort after earlier ones at the same instant, so a
     * rule with DST all year ("EST5EDT,0/0,J365/25") stays in DST. */
    int64_t y;
    int m, d;
    sb__civil_from_days(sb__floor_div(utc + r->std_off, DAY), &y, &m, &d);
    change ch[10];
    size_t n = 0;
    for (int64_t yy = y - 2; yy <= y + 2; yy++) {
        ch[n++] =
            (change){rule_day(&r->start, yy) * DAY + r->start.time - r->std_off,
                     r->dst_off};
        ch[n++] = (change){
            rule_day(&r->end, yy) * DAY + r->end.time - r->dst_off, r->std_off};
    }
    /* A stable insertion sort keeps each year's order for ties. */
    for (size_t i = 1; i < n; i++) {
        change x = ch[i];
        size_t j = i;
        for (; j > 0 && ch[j - 1].at > x.at; j--)
            ch[j] = ch[j - 1];
        ch[j] = x;
    }
    int32_t off = r->std_off;
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (ch[i].at <= utc) {
            off = ch[i].to;
        } else {
            next = ch[i].at;
            break;
        }
    }
    if (next_change != NULL)
        *next_change = next;
    return off;
}
