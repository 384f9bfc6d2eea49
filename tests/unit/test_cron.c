/*
 * test_cron.c - unit tests of src/core's schedules: cron expressions
 * (every syntax form, errors naming the field, the day-of-month /
 * day-of-week rule, leap years, month ends), time zones (POSIX TZ rules,
 * TZif files built here byte by byte, the loader, the system's zones:
 * DST in Europe/Berlin and America/New_York in 2026, half-hour zones,
 * instants after a file's last transition), intervals, the missed-
 * occurrence policy, and a "fail the Nth allocation" walk. Tests that
 * need the system's tz database skip without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/core.h"
#include "core/tz_int.h"
#include "failalloc.h"

/* ------------------------------------------------------------------ */
/* helpers */

#define US 1000000LL

/* A UTC instant in microseconds. */
static int64_t utc(int y, int mo, int d, int h, int mi)
{
    return (sb__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60) * US;
}

/* The same in seconds, for the zones' own functions. */
static int64_t utc_s(int y, int mo, int d, int h, int mi)
{
    return utc(y, mo, d, h, mi) / US;
}

static sb_error junk_error(void)
{
    sb_error e;
    memset(&e, 'Z', sizeof e);
    e.code = -77;
    e.field[sizeof e.field - 1] = '\0';
    e.message[sizeof e.message - 1] = '\0';
    return e;
}

static sb_cron parse_ok(const char *expr)
{
    sb_cron c;
    sb_error e = junk_error();
    int rc = sb__cron_parse(expr, &c, &e);
    if (rc != SB_OK)
        fail_msg("\"%s\": rc %d: %s", expr, rc, e.message);
    return c;
}

/* The next occurrence of `expr` in `tz` after `after` (us). */
static int64_t next_of(const char *expr, const sb_tz *tz, int64_t after)
{
    sb_cron c = parse_ok(expr);
    int64_t n = -1;
    sb_error e = junk_error();
    int rc = sb__cron_next(&c, tz, after, &n, &e);
    if (rc != SB_OK)
        fail_msg("next of \"%s\": rc %d: %s", expr, rc, e.message);
    assert_true(n > after);
    return n;
}

/* A zone of the system's tz database; the test is skipped without it. */
static sb_tz *system_zone(const char *name)
{
    sb_tz *tz = NULL;
    sb_error e = junk_error();
    int rc = sb__tz_load(NULL, name, &tz, &e);
    if (rc == SB_NOTFOUND) {
        print_message("skipping: %s\n", e.message);
        skip();
    }
    if (rc != SB_OK)
        fail_msg("%s: rc %d: %s", name, rc, e.message);
    return tz;
}

static sb_tz *rule_zone(const char *rule)
{
    sb_tz *tz = NULL;
    sb_error e = junk_error();
    if (sb__tz_from_rule(rule, &tz, &e) != SB_OK)
        fail_msg("%s: %s", rule, e.message);
    return tz;
}

/* ------------------------------------------------------------------ */
/* TZif files built byte by byte (RFC 8536) */

typedef struct bytes {
    uint8_t b[8192];
    size_t n;
} bytes;

static void put(bytes *o, const void *p, size_t n)
{
    if (n == 0)
        return; /* p may be NULL then */
    assert_true(o->n + n <= sizeof o->b);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put32(bytes *o, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                    (uint8_t)v};
    put(o, b, 4);
}

static void put64(bytes *o, int64_t v)
{
    put32(o, (uint32_t)((uint64_t)v >> 32));
    put32(o, (uint32_t)v);
}

static void header(bytes *o, char version, uint32_t leap, uint32_t time,
                   uint32_t type, uint32_t chars)
{
    put(o, "TZif", 4);
    uint8_t v = (uint8_t)version, zero[15] = {0};
    put(o, &v, 1);
    put(o, zero, 15);
    put32(o, 0); /* isutcnt */
    put32(o, 0); /* isstdcnt */
    put32(o, leap);
    put32(o, time);
    put32(o, type);
    put32(o, chars);
}

typedef struct tzspec {
    char version; /* 0: version 1 data only; '2', '3', '4' */
    size_t n;     /* transitions */
    const int64_t *at;
    const uint8_t *idx;
    size_t types;
    const int32_t *off;
    const char *footer; /* version 2+ */
} tzspec;

/* The data block: times `tsize` bytes wide, designations "ABC". */
static void block(bytes *o, const tzspec *s, int tsize)
{
    for (size_t i = 0; i < s->n; i++) {
        if (tsize == 4)
            put32(o, (uint32_t)s->at[i]);
        else
            put64(o, s->at[i]);
    }
    put(o, s->idx, s->n);
    for (size_t i = 0; i < s->types; i++) {
        put32(o, (uint32_t)s->off[i]);
        uint8_t dst_desig[2] = {0, 0};
        put(o, dst_desig, 2);
    }
    put(o, "ABC", 4);
}

static bytes tzif(const tzspec *s)
{
    bytes o = {.n = 0};
    if (s->version == 0) {
        header(&o, 0, 0, (uint32_t)s->n, (uint32_t)s->types, 4);
        block(&o, s, 4);
        return o;
    }
    /* A version 1 block as a slim file has it: no transitions, one type. */
    tzspec v1 = {.types = 1, .off = s->off};
    header(&o, s->version, 0, 0, 1, 4);
    block(&o, &v1, 4);
    header(&o, s->version, 0, (uint32_t)s->n, (uint32_t)s->types, 4);
    block(&o, s, 8);
    put(&o, "\n", 1);
    put(&o, s->footer, strlen(s->footer));
    put(&o, "\n", 1);
    return o;
}

static sb_tz *parse_tzif_ok(const bytes *b)
{
    sb_tz *tz = NULL;
    sb_error e = junk_error();
    int rc = sb__tzif_parse(b->b, b->n, &tz, &e);
    if (rc != SB_OK)
        fail_msg("tzif: rc %d: %s", rc, e.message);
    return tz;
}

/* A file parsed to SB_INVALID naming "tzif" with `want` in the text. */
static void parse_tzif_bad(const uint8_t *b, size_t n, const char *want)
{
    sb_tz *tz = (sb_tz *)(uintptr_t)1;
    sb_error e = junk_error();
    int rc = sb__tzif_parse(b, n, &tz, &e);
    if (rc != SB_INVALID)
        fail_msg("want SB_INVALID (%s), got %d", want, rc);
    assert_ptr_equal(tz, (sb_tz *)(uintptr_t)1);
    assert_string_equal(e.field, "tzif");
    if (strstr(e.message, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", e.message, want);
}

/* ------------------------------------------------------------------ */
/* cron: syntax */

static void test_cron_fields(void **state)
{
    (void)state;
    sb_cron c = parse_ok("* * * * *");
    assert_true(c.minutes == (1ULL << 60) - 1);
    assert_int_equal(c.hours, (1U << 24) - 1);
    assert_int_equal(c.mdays, 0xfffffffeU);
    assert_int_equal(c.months, 0x1ffe);
    assert_int_equal(c.wdays, 0x7f);
    assert_true(c.mday_star && c.wday_star);

    c = parse_ok("*/15 */6 */10 */4 */2");
    assert_true(c.minutes ==
                (1ULL << 0 | 1ULL << 15 | 1ULL << 30 | 1ULL << 45));
    assert_int_equal(c.hours, 1U << 0 | 1U << 6 | 1U << 12 | 1U << 18);
    assert_int_equal(c.mdays, 1U << 1 | 1U << 11 | 1U << 21 | 1U << 31);
    assert_int_equal(c.months, 1 << 1 | 1 << 5 | 1 << 9);
    assert_int_equal(c.wdays, 1 << 0 | 1 << 2 | 1 << 4 | 1 << 6);
    assert_true(c.mday_star && c.wday_star); /* "*" with a step is "*" */

    c = parse_ok("10-50/10 1,2,3 5-7 1 1-5");
    assert_true(c.minutes == (1ULL << 10 | 1ULL << 20 | 1ULL << 30 |
                              1ULL << 40 | 1ULL << 50));
    assert_int_equal(c.hours, 0xe);
    assert_int_equal(c.mdays, 0xe0);
    assert_int_equal(c.months, 0x2);
    assert_int_equal(c.wdays, 0x3e);
    assert_false(c.mday_star || c.wday_star);

    /* "a/step" runs from a to the field's end. */
    c = parse_ok("5/20 22/1 28/2 11/1 5/1");
    assert_true(c.minutes == (1ULL << 5 | 1ULL << 25 | 1ULL << 45));
    assert_int_equal(c.hours, 1U << 22 | 1U << 23);
    assert_int_equal(c.mdays, 1U << 28 | 1U << 30);
    assert_int_equal(c.months, 1 << 11 | 1 << 12);
    assert_int_equal(c.wdays, 1 << 5 | 1 << 6 | 1 << 0); /* 7 = Sunday */

    /* A one-value range with a step is that value, not "a/step". */
    c = parse_ok("5-5/10 0 1 7-7/2 *");
    assert_true(c.minutes == 1ULL << 5);
    assert_int_equal(c.months, 1 << 7);

    /* Lists of ranges and steps; leading zeros; blanks around and
     * between the fields. */
    c = parse_ok(" \t00,07-09,50-59/5\t0-3/2,23   1,15,31 1-3,12 0 ");
    assert_true(c.minutes == (1ULL << 0 | 1ULL << 7 | 1ULL << 8 | 1ULL << 9 |
                              1ULL << 50 | 1ULL << 55));
    assert_int_equal(c.hours, 1U << 0 | 1U << 2 | 1U << 23);
    assert_int_equal(c.mdays, 1U << 1 | 1U << 15 | 1U << 31);
    assert_int_equal(c.months, 0xe | 1 << 12);
    assert_int_equal(c.wdays, 1);
}

static void test_cron_names(void **state)
{
    (void)state;
    static const char *const months[] = {"JAN", "feb", "Mar", "aPr",
                                         "MAY", "jun", "JUL", "aug",
                                         "SEP", "oct", "Nov", "DEC"};
    for (int m = 0; m < 12; m++) {
        char expr[32];
        snprintf(expr, sizeof expr, "0 0 1 %s *", months[m]);
        assert_int_equal(parse_ok(expr).months, 1 << (m + 1));
    }
    static const char *const days[] = {"sun", "MON", "Tue", "wED",
                                       "thu", "FRI", "Sat"};
    for (int d = 0; d < 7; d++) {
        char expr[32];
        snprintf(expr, sizeof expr, "0 0 * * %s", days[d]);
        assert_int_equal(parse_ok(expr).wdays, 1 << d);
    }
    /* 0 and 7 are both Sunday; names in ranges, lists and steps. */
    assert_int_equal(parse_ok("0 0 * * 7").wdays, 1);
    assert_int_equal(parse_ok("0 0 * * 0,7").wdays, 1);
    assert_int_equal(parse_ok("0 0 * * MON-FRI").wdays, 0x3e);
    assert_int_equal(parse_ok("0 0 * * mon-fri/2").wdays, 0x2a);
    assert_int_equal(parse_ok("0 0 * * SAT-SUN").wdays, 0x41); /* 6-7 */
    assert_int_equal(parse_ok("0 0 * * 5-7").wdays, 0x61);
    assert_int_equal(parse_ok("0 0 * * 1-7").wdays, 0x7f);
    assert_int_equal(parse_ok("0 0 * JAN-MAR,oct *").months, 0xe | 1 << 10);
    assert_int_equal(parse_ok("0 0 * jan-dec/3 *").months,
                     1 << 1 | 1 << 4 | 1 << 7 | 1 << 10);
}

static void test_cron_macros(void **state)
{
    (void)state;
    static const struct {
        const char *macro, *expr;
    } m[] = {
        {"@hourly", "0 * * * *"},   {"@daily", "0 0 * * *"},
        {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
        {"@monthly", "0 0 1 * *"},  {"@yearly", "0 0 1 1 *"},
        {"@annually", "0 0 1 1 *"}, {" @DAILY\t", "0 0 * * *"},
        {"@Weekly", "0 0 * * SUN"},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        sb_cron a = parse_ok(m[i].macro), b = parse_ok(m[i].expr);
        if (memcmp(&a, &b, sizeof a) != 0)
            fail_msg("%s is not %s", m[i].macro, m[i].expr);
    }
}

static void test_cron_errors(void **state)
{
    (void)state;
    static const struct {
        const char *expr, *message; /* the whole message, or its start */
    } bad[] = {
        {"", "cron: expression is empty"},
        {" \t ", "cron: expression is empty"},
        {"* * * *", "cron: expected 5 fields (minute hour day-of-month month "
                    "day-of-week), got 4"},
        {"0 * * * * *", "cron: expected 5 fields"},
        {"0 24 * * *", "cron: field 2 (hour): 24 is out of range 0-23"},
        {"60 * * * *", "cron: field 1 (minute): 60 is out of range 0-59"},
        {"* * 0 * *", "cron: field 3 (day-of-month): 0 is out of range 1-31"},
        {"* * 32 * *", "cron: field 3 (day-of-month): 32 is out of range"},
        {"* * * 13 *", "cron: field 4 (month): 13 is out of range 1-12"},
        {"* * * 0 *", "cron: field 4 (month): 0 is out of range 1-12"},
        {"* * * * 8", "cron: field 5 (day-of-week): 8 is out of range 0-7"},
        {"99999999999999999999 * * * *", "cron: field 1 (minute): "
                                         "99999999999999999999 is out of"},
        {"*/0 * * * *", "cron: field 1 (minute): step 0 is out of range 1-60"},
        {"* */25 * * *", "cron: field 2 (hour): step 25 is out of range 1-24"},
        {"*/ * * * *", "cron: field 1 (minute): a step needs a number"},
        {"5-1 * * * *", "cron: field 1 (minute): range 5-1 is backwards"},
        {"* * * DEC-JAN *", "cron: field 4 (month): range 12-1 is backwards"},
        {"1,,2 * * * *", "cron: field 1 (minute): a list element is empty"},
        {"1, * * * *", "cron: field 1 (minute): a list element is empty"},
        {"1- * * * *", "cron: field 1 (minute): a value is missing"},
        {"-1 * * * *", "cron: field 1 (minute): a value is missing"},
        {"* * * FOO *", "cron: field 4 (month): unknown month \"FOO\""},
        {"* * * JANUARY *", "cron: field 4 (month): unknown month"},
        {"* * * * FUNDAY", "cron: field 5 (day-of-week): unknown day"},
        {"* MON * * *", "cron: field 2 (hour): \"MON\" is not a number"},
        {"* * L * *", "cron: field 3 (day-of-month): \"L\" is a Quartz"},
        {"* * 15W * *", "cron: field 3 (day-of-month): \"W\" is a Quartz"},
        {"* * ? * *", "cron: field 3 (day-of-month): \"?\" is a Quartz"},
        {"* * * * 5#3", "cron: field 5 (day-of-week): \"#\" is a Quartz"},
        {"1.5 * * * *", "cron: field 1 (minute): unexpected \".\""},
        {"0\x01 * * * *", "cron: field 1 (minute): unexpected \"?\""},
        {"@reboot", "cron: unknown macro \"@reboot\""},
        {"@daily 5", "cron: unknown macro"},
        {"0 0 30 2 *", "cron: never occurs"},
        {"0 0 31 4,6,9,11 *", "cron: never occurs"},
        {"0 0 30,31 FEB *", "cron: never occurs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_cron c;
        memset(&c, 0xab, sizeof c);
        sb_error e = junk_error();
        int rc = sb__cron_parse(bad[i].expr, &c, &e);
        if (rc != SB_INVALID)
            fail_msg("\"%s\": rc %d, want SB_INVALID", bad[i].expr, rc);
        assert_int_equal(e.code, SB_INVALID);
        assert_string_equal(e.field, "cron");
        if (strncmp(e.message, bad[i].message, strlen(bad[i].message)) != 0)
            fail_msg("\"%s\": message \"%s\", want \"%s...\"", bad[i].expr,
                     e.message, bad[i].message);
        /* *out untouched */
        for (size_t k = 0; k < sizeof c; k++)
            assert_int_equal(((uint8_t *)&c)[k], 0xab);
        /* the same answer without an sb_error */
        assert_int_equal(sb__cron_parse(bad[i].expr, &c, NULL), SB_INVALID);
    }
    sb_cron c;
    sb_error e = junk_error();
    assert_int_equal(sb__cron_parse(NULL, &c, &e), SB_INVALID);
    assert_string_equal(e.field, "cron");
    /* Over SB_CRON_MAX bytes, even of blanks. */
    char *big = malloc(SB_CRON_MAX + 2);
    assert_non_null(big);
    memset(big, ' ', SB_CRON_MAX + 1);
    memcpy(big, "* * * * *", 9);
    big[SB_CRON_MAX + 1] = '\0';
    assert_int_equal(sb__cron_parse(big, &c, &e), SB_INVALID);
    assert_non_null(strstr(e.message, "longer than 256 bytes"));
    big[SB_CRON_MAX] = '\0'; /* exactly the cap: fine */
    assert_int_equal(sb__cron_parse(big, &c, &e), SB_OK);
    free(big);
    /* Feb 31 never comes, but on Mondays in February it does: with both
     * day fields restricted either one matches. */
    assert_int_equal(sb__cron_parse("0 0 31 2 MON", &c, &e), SB_OK);
}

/* ------------------------------------------------------------------ */
/* cron: occurrences in UTC */

static void test_cron_next_utc(void **state)
{
    (void)state;
    int64_t t = utc(2026, 1, 1, 0, 0);
    /* Strictly after: an instant on an occurrence gets the one after. */
    assert_int_equal(next_of("* * * * *", NULL, t), t + 60 * US);
    assert_int_equal(next_of("* * * * *", NULL, t - 1), t);
    assert_int_equal(next_of("* * * * *", NULL, t + 59999999), t + 60 * US);
    assert_int_equal(next_of("*/5 * * * *", NULL, t + 61 * US),
                     t + 5 * 60 * US);
    assert_int_equal(next_of("10-50/10 * * * *", NULL, t + 50 * 60 * US),
                     utc(2026, 1, 1, 1, 10));
    assert_int_equal(next_of("0 9 * * MON-FRI", NULL, t),
                     utc(2026, 1, 1, 9, 0)); /* a Thursday */
    assert_int_equal(next_of("0 9 * * MON-FRI", NULL, utc(2026, 1, 2, 9, 0)),
                     utc(2026, 1, 5, 9, 0)); /* Friday -> Monday */
    assert_int_equal(next_of("@hourly", NULL, t), utc(2026, 1, 1, 1, 0));
    assert_int_equal(next_of("@daily", NULL, t), utc(2026, 1, 2, 0, 0));
    assert_int_equal(next_of("@weekly", NULL, t), utc(2026, 1, 4, 0, 0));
    assert_int_equal(next_of("@monthly", NULL, t), utc(2026, 2, 1, 0, 0));
    assert_int_equal(next_of("@yearly", NULL, t), utc(2027, 1, 1, 0, 0));
    assert_int_equal(next_of("59 23 31 12 *", NULL, t),
                     utc(2026, 12, 31, 23, 59));
    assert_int_equal(next_of("0 0 * * 7", NULL, t), utc(2026, 1, 4, 0, 0));
    assert_int_equal(next_of("30 4 1 JAN,JUL *", NULL, t),
                     utc(2026, 1, 1, 4, 30));
    assert_int_equal(next_of("30 4 1 JAN,JUL *", NULL, utc(2026, 1, 1, 4, 30)),
                     utc(2026, 7, 1, 4, 30));
    /* Before 1970 too. */
    assert_int_equal(next_of("0 12 * * *", NULL, utc(1969, 12, 31, 13, 0)),
                     utc(1970, 1, 1, 12, 0));
    assert_int_equal(next_of("0 0 29 2 *", NULL, utc(1900, 1, 1, 0, 0)),
                     utc(1904, 2, 29, 0, 0));

    /* Month ends: the 31st skips the months without one. */
    assert_int_equal(next_of("0 0 31 * *", NULL, utc(2026, 1, 31, 0, 0)),
                     utc(2026, 3, 31, 0, 0));
    assert_int_equal(next_of("0 0 31 * *", NULL, utc(2026, 3, 31, 0, 0)),
                     utc(2026, 5, 31, 0, 0));
    assert_int_equal(next_of("0 0 30 * *", NULL, utc(2026, 1, 30, 0, 0)),
                     utc(2026, 3, 30, 0, 0));
    assert_int_equal(next_of("0 0 28-31 2 *", NULL, utc(2026, 2, 28, 0, 0)),
                     utc(2027, 2, 28, 0, 0));
    assert_int_equal(next_of("0 0 28-31 2 *", NULL, utc(2028, 2, 28, 0, 0)),
                     utc(2028, 2, 29, 0, 0));

    /* Leap years: Feb 29 every 4 years, not in 2100. */
    assert_int_equal(next_of("0 0 29 2 *", NULL, t), utc(2028, 2, 29, 0, 0));
    assert_int_equal(next_of("0 0 29 2 *", NULL, utc(2028, 2, 29, 0, 0)),
                     utc(2032, 2, 29, 0, 0));
    assert_int_equal(next_of("0 0 29 2 *", NULL, utc(2096, 3, 1, 0, 0)),
                     utc(2104, 2, 29, 0, 0));
    assert_int_equal(next_of("0 0 29 2 *", NULL, utc(1996, 3, 1, 0, 0)),
                     utc(2000, 2, 29, 0, 0)); /* 2000 was */
    /* The longest wait of any accepted expression: February 29 on a
     * Sunday ("*" with a step leaves the day-of-week unrestricted, so
     * both day fields must match), 40 years across 2100. */
    assert_int_equal(next_of("0 0 29 2 */7", NULL, utc(2088, 3, 1, 0, 0)),
                     utc(2128, 2, 29, 0, 0));
}

/* Vixie cron: with both day fields restricted, either matches; with
 * either one starting with '*' both must. */
static void test_cron_day_rule(void **state)
{
    (void)state;
    int64_t t = utc(2026, 1, 1, 0, 0);
    /* 13th or Friday: Jan 2 (Fri), 9 (Fri), 13 (Tue), 16 (Fri). */
    int64_t want[] = {utc(2026, 1, 2, 0, 0), utc(2026, 1, 9, 0, 0),
                      utc(2026, 1, 13, 0, 0), utc(2026, 1, 16, 0, 0)};
    for (size_t i = 0; i < 4; i++) {
        t = next_of("0 0 13 * FRI", NULL, t);
        assert_int_equal(t, want[i]);
    }
    /* Friday the 13th comes once: Feb 13, 2026 is a Friday. */
    t = utc(2026, 2, 12, 0, 0);
    assert_int_equal(next_of("0 0 13 * FRI", NULL, t), utc(2026, 2, 13, 0, 0));
    assert_int_equal(next_of("0 0 13 * FRI", NULL, utc(2026, 2, 13, 0, 0)),
                     utc(2026, 2, 20, 0, 0));
    /* Day-of-month "*": Fridays only. Day-of-week "*": 13ths only. */
    assert_int_equal(next_of("0 0 * * FRI", NULL, utc(2026, 1, 2, 0, 0)),
                     utc(2026, 1, 9, 0, 0));
    assert_int_equal(next_of("0 0 13 * *", NULL, utc(2026, 1, 2, 0, 0)),
                     utc(2026, 1, 13, 0, 0));
    /* "*" with a step counts as "*": odd days that are Fridays (Jan 9,
     * 23), as Vixie cron and cronie do. */
    assert_int_equal(next_of("0 0 */2 * FRI", NULL, utc(2026, 1, 1, 0, 0)),
                     utc(2026, 1, 9, 0, 0));
    assert_int_equal(next_of("0 0 */2 * FRI", NULL, utc(2026, 1, 9, 0, 0)),
                     utc(2026, 1, 23, 0, 0));
    /* 1-31 is a restriction: with a weekday, every day matches. */
    assert_int_equal(next_of("0 0 1-31 * FRI", NULL, utc(2026, 1, 1, 0, 0)),
                     utc(2026, 1, 2, 0, 0));
    /* Feb 31 never exists; the Mondays of February do. */
    assert_int_equal(next_of("0 0 31 2 MON", NULL, utc(2026, 1, 1, 0, 0)),
                     utc(2026, 2, 2, 0, 0));

    /* sb__cron_matches agrees. */
    sb_cron c = parse_ok("0 0 13 * FRI");
    assert_true(sb__cron_matches(&c, utc_s(2026, 1, 13, 0, 0)));
    assert_true(sb__cron_matches(&c, utc_s(2026, 1, 16, 0, 0) + 59));
    assert_false(sb__cron_matches(&c, utc_s(2026, 1, 14, 0, 0)));
    assert_false(sb__cron_matches(&c, utc_s(2026, 1, 13, 0, 1)));
    c = parse_ok("0 0 */2 * FRI");
    assert_false(sb__cron_matches(&c, utc_s(2026, 1, 16, 0, 0)));
    assert_true(sb__cron_matches(&c, utc_s(2026, 1, 23, 0, 0)));
}

static void test_cron_next_limits(void **state)
{
    (void)state;
    sb_cron c = parse_ok("* * * * *");
    int64_t n = 42;
    sb_error e = junk_error();
    /* Outside years 1 to 9999. */
    assert_int_equal(sb__cron_next(&c, NULL, SB_SCHED_MAX_US + 1, &n, &e),
                     SB_INVALID);
    assert_string_equal(e.field, "cron");
    assert_int_equal(sb__cron_next(&c, NULL, SB_SCHED_MIN_US - 1, &n, &e),
                     SB_INVALID);
    assert_int_equal(sb__cron_next(&c, NULL, INT64_MIN, &n, &e), SB_INVALID);
    assert_int_equal(n, 42);
    /* The last minute of 9999, then nothing. */
    assert_int_equal(sb__cron_next(&c, NULL, utc(9999, 12, 31, 23, 58), &n, &e),
                     SB_OK);
    assert_int_equal(n, utc(9999, 12, 31, 23, 59));
    assert_int_equal(sb__cron_next(&c, NULL, n, &n, &e), SB_INVALID);
    assert_non_null(strstr(e.message, "never occurs"));
    /* A hand-built expression that never occurs: the search gives up. */
    memset(&c, 0, sizeof c);
    c = parse_ok("0 0 * * *");
    c.mdays = 1U << 30; /* the 30th ... */
    c.months = 1 << 2;  /* ... of February */
    c.mday_star = false, c.wday_star = true;
    e = junk_error();
    assert_int_equal(sb__cron_next(&c, NULL, utc(2026, 1, 1, 0, 0), &n, &e),
                     SB_INVALID);
    assert_string_equal(e.field, "cron");
    assert_non_null(strstr(e.message, "never occurs"));
    /* Bits no field has are ignored; none left is "never". */
    c = parse_ok("0 0 * * *");
    c.hours = 1U << 30;
    assert_int_equal(sb__cron_next(&c, NULL, 0, &n, &e), SB_INVALID);
}

/* ------------------------------------------------------------------ */
/* time zones: POSIX TZ rules */

static void test_tzrule_parse(void **state)
{
    (void)state;
    sb_tzrule r;
    sb_error e = junk_error();
    const char *s = "CET-1CEST,M3.5.0,M10.5.0/3";
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, 3600);
    assert_int_equal(r.dst_off, 7200);
    assert_true(r.has_dst);
    assert_int_equal(r.start.kind, 'M');
    assert_int_equal(r.start.m, 3);
    assert_int_equal(r.start.w, 5);
    assert_int_equal(r.start.d, 0);
    assert_int_equal(r.start.time, 7200);
    assert_int_equal(r.end.m, 10);
    assert_int_equal(r.end.time, 3 * 3600);

    s = "EST5EDT,M3.2.0,M11.1.0";
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, -5 * 3600);
    assert_int_equal(r.dst_off, -4 * 3600);

    s = "<+0330>-3:30";
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, 3 * 3600 + 1800);
    assert_false(r.has_dst);

    s = "<-02>2<-01>,M3.5.0/-1,M10.5.0/0"; /* America/Nuuk */
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, -7200);
    assert_int_equal(r.dst_off, -3600);
    assert_int_equal(r.start.time, -3600);
    assert_int_equal(r.end.time, 0);

    s = "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"; /* Lord Howe: 30 min DST */
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, 37800);
    assert_int_equal(r.dst_off, 39600);

    s = "EET-2EEST,M3.4.4/50,M10.4.4/50"; /* Asia/Gaza: 50 h */
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.start.time, 50 * 3600);

    s = "XXX3YYY,J60/1:30:15,300/+2"; /* Jn and n forms */
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.start.kind, 'J');
    assert_int_equal(r.start.n, 60);
    assert_int_equal(r.start.time, 3600 + 1800 + 15);
    assert_int_equal(r.end.kind, 'D');
    assert_int_equal(r.end.n, 300);
    assert_int_equal(r.dst_off, -2 * 3600); /* default: an hour ahead */

    s = "UTC0";
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, 0);
    s = "GMT+0:00:30"; /* west, seconds */
    assert_int_equal(sb__tzrule_parse(s, strlen(s), &r, &e), SB_OK);
    assert_int_equal(r.std_off, -30);

    /* Only `len` bytes count. */
    s = "IST-5:30garbage";
    assert_int_equal(sb__tzrule_parse(s, 8, &r, &e), SB_OK);
    assert_int_equal(r.std_off, 5 * 3600 + 1800);

    static const char *const bad[] = {
        "",
        "UT0",                       /* names need 3 letters */
        "CET",                       /* no offset */
        "CET-1CEST",                 /* no rule (none is guessed) */
        "CET-25",                    /* offsets up to 24 hours */
        "CET-1:60",                  /* minutes up to 59 */
        "CET-1:00:60",               /* seconds up to 59 */
        "CET-1CEST,M13.1.0,M10.5.0", /* month */
        "CET-1CEST,M3.6.0,M10.5.0",  /* week */
        "CET-1CEST,M3.5.7,M10.5.0",  /* weekday */
        "CET-1CEST,M0.5.0,M10.5.0",
        "CET-1CEST,J0,J300",
        "CET-1CEST,J366,J300",
        "CET-1CEST,366,300",
        "CET-1CEST,M3.5.0/168,M10.5.0", /* times up to 167 hours */
        "CET-1CEST,M3.5.0",
        "CET-1CEST,M3.5.0,",
        "CET-1CEST,M3.5.0,M10.5.0/",
        "CET-1CEST,M3.5.0,M10.5.0 ",
        "CET-1 ",
        "<+03",
        "<+0\x01>-3",
        "<ab>-3", /* quoted names need 3 characters too */
        "C3T-1",
        "CET-0001",
        "CET-1CEST-2X",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&r, 0xab, sizeof r);
        e = junk_error();
        if (sb__tzrule_parse(bad[i], strlen(bad[i]), &r, &e) != SB_INVALID)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_string_equal(e.field, "tz_rule");
        assert_true(strncmp(e.message, "TZ rule", 7) == 0);
        assert_int_equal(((uint8_t *)&r)[0], 0xab);
    }
    char big[SB_TZ_RULE_MAX + 2];
    memset(big, 'A', sizeof big);
    assert_int_equal(sb__tzrule_parse(big, sizeof big, &r, &e), SB_INVALID);
    assert_int_equal(sb__tzrule_parse(NULL, 0, &r, &e), SB_INVALID);
}

/* The offset a rule gives and when it changes next. */
static void expect_offset(const sb_tz *tz, int64_t at, int32_t off,
                          int64_t next)
{
    int64_t change = 0;
    int32_t got = sb__tz_offset(tz, at, &change);
    if (got != off || change != next)
        fail_msg("at %lld: offset %d (want %d), next change %lld (want %lld)",
                 (long long)at, got, off, (long long)change, (long long)next);
}

static void test_tzrule_offsets(void **state)
{
    (void)state;
    /* Berlin's rule: 2026-03-29 01:00 UTC and 2026-10-25 01:00 UTC. */
    sb_tz *tz = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    int64_t spring = utc_s(2026, 3, 29, 1, 0), fall = utc_s(2026, 10, 25, 1, 0);
    expect_offset(tz, utc_s(2026, 1, 1, 0, 0), 3600, spring);
    expect_offset(tz, spring - 1, 3600, spring);
    expect_offset(tz, spring, 7200, fall);
    expect_offset(tz, fall - 1, 7200, fall);
    expect_offset(tz, fall, 3600, utc_s(2027, 3, 28, 1, 0));
    /* Far out: 2400-03-26 (last Sunday of March). */
    expect_offset(tz, utc_s(2400, 3, 26, 0, 59), 3600,
                  utc_s(2400, 3, 26, 1, 0));
    sb__tz_free(tz);

    /* New York: 2026-03-08 07:00 UTC, 2026-11-01 06:00 UTC. */
    tz = rule_zone("EST5EDT,M3.2.0,M11.1.0");
    expect_offset(tz, utc_s(2026, 3, 8, 6, 59), -18000,
                  utc_s(2026, 3, 8, 7, 0));
    expect_offset(tz, utc_s(2026, 11, 1, 5, 59), -14400,
                  utc_s(2026, 11, 1, 6, 0));
    sb__tz_free(tz);

    /* Southern hemisphere, DST across the new year (Adelaide): ends
     * 2026-04-05 03:00 ACDT, starts 2026-10-04 02:00 ACST. */
    tz = rule_zone("ACST-9:30ACDT,M10.1.0,M4.1.0/3");
    expect_offset(tz, utc_s(2026, 1, 1, 0, 0), 37800,
                  utc_s(2026, 4, 4, 16, 30));
    expect_offset(tz, utc_s(2026, 4, 4, 16, 30), 34200,
                  utc_s(2026, 10, 3, 16, 30));
    sb__tz_free(tz);

    /* Negative DST (Europe/Dublin): "summer" time is standard. */
    tz = rule_zone("IST-1GMT0,M10.5.0,M3.5.0/1");
    assert_int_equal(sb__tz_offset(tz, utc_s(2026, 1, 15, 0, 0), NULL), 0);
    assert_int_equal(sb__tz_offset(tz, utc_s(2026, 7, 15, 0, 0), NULL), 3600);
    sb__tz_free(tz);

    /* DST all year: the end of one year and the start of the next are
     * one instant, and DST wins. */
    tz = rule_zone("EST5EDT,0/0,J365/25");
    for (int y = 2025; y <= 2029; y++) {
        assert_int_equal(sb__tz_offset(tz, utc_s(y, 1, 1, 4, 0), NULL), -14400);
        assert_int_equal(sb__tz_offset(tz, utc_s(y, 1, 1, 5, 0), NULL), -14400);
        assert_int_equal(sb__tz_offset(tz, utc_s(y, 7, 1, 0, 0), NULL), -14400);
        assert_int_equal(sb__tz_offset(tz, utc_s(y, 12, 31, 23, 0), NULL),
                         -14400);
    }
    sb__tz_free(tz);

    /* Jn never counts Feb 29; n does. J60 is March 1; 59 is March 1 in
     * 2027 but February 29 in 2028. */
    tz = rule_zone("XXX0YYY,J60/0,J300/0");
    expect_offset(tz, utc_s(2028, 2, 29, 12, 0), 0, utc_s(2028, 3, 1, 0, 0));
    sb__tz_free(tz);
    tz = rule_zone("XXX0YYY,59/0,300/0");
    expect_offset(tz, utc_s(2027, 2, 28, 12, 0), 0, utc_s(2027, 3, 1, 0, 0));
    expect_offset(tz, utc_s(2028, 2, 28, 12, 0), 0, utc_s(2028, 2, 29, 0, 0));
    sb__tz_free(tz);

    /* Without DST nothing ever changes. */
    tz = rule_zone("<+0330>-3:30");
    expect_offset(tz, utc_s(2026, 6, 1, 0, 0), 12600, INT64_MAX);
    sb__tz_free(tz);

    sb_error e = junk_error();
    tz = NULL;
    assert_int_equal(sb__tz_from_rule("CET-1CEST", &tz, &e), SB_INVALID);
    assert_null(tz);
    assert_string_equal(e.field, "tz_rule");
    assert_int_equal(sb__tz_from_rule(NULL, &tz, &e), SB_INVALID);
    sb__tz_free(NULL);
}

/* ------------------------------------------------------------------ */
/* time zones: TZif files */

static const int64_t two_at[] = {1000000, 2000000};
static const uint8_t two_idx[] = {1, 0};
static const int32_t two_off[] = {3600, 7200};

static void test_tzif_versions(void **state)
{
    (void)state;
    /* Version 1: transitions, no footer; the last offset stays. */
    tzspec s = {0, 2, two_at, two_idx, 2, two_off, NULL};
    bytes b = tzif(&s);
    sb_tz *tz = parse_tzif_ok(&b);
    expect_offset(tz, 0, 3600, 1000000);
    expect_offset(tz, 999999, 3600, 1000000);
    expect_offset(tz, 1000000, 7200, 2000000);
    expect_offset(tz, 2000000, 3600, INT64_MAX);
    expect_offset(tz, 9000000000, 3600, INT64_MAX);
    sb__tz_free(tz);

    for (char v = '2'; v <= '4'; v++) {
        /* The same with an empty footer. */
        s = (tzspec){v, 2, two_at, two_idx, 2, two_off, ""};
        b = tzif(&s);
        tz = parse_tzif_ok(&b);
        expect_offset(tz, 1500000, 7200, 2000000);
        expect_offset(tz, 9000000000, 3600, INT64_MAX);
        sb__tz_free(tz);

        /* With a footer: after the last transition the rule speaks. */
        s.footer = "CET-1CEST,M3.5.0,M10.5.0/3";
        b = tzif(&s);
        tz = parse_tzif_ok(&b);
        expect_offset(tz, 1500000, 7200, 2000000);
        expect_offset(tz, 2000000, 3600, utc_s(1970, 3, 29, 1, 0));
        expect_offset(tz, utc_s(2026, 7, 1, 0, 0), 7200,
                      utc_s(2026, 10, 25, 1, 0));
        sb__tz_free(tz);
    }

    /* No transitions at all: the footer rules every instant. */
    int32_t cet = 3600;
    s = (tzspec){'2', 0, NULL, NULL, 1, &cet, "CET-1CEST,M3.5.0,M10.5.0/3"};
    b = tzif(&s);
    tz = parse_tzif_ok(&b);
    expect_offset(tz, utc_s(1950, 7, 1, 0, 0), 7200, utc_s(1950, 10, 29, 1, 0));
    expect_offset(tz, utc_s(2026, 3, 29, 0, 59), 3600,
                  utc_s(2026, 3, 29, 1, 0));
    sb__tz_free(tz);

    /* Before the first transition: time type 0, whatever comes first. */
    static const uint8_t idx[] = {0, 1};
    s = (tzspec){'3', 2, two_at, idx, 2, two_off, ""};
    b = tzif(&s);
    tz = parse_tzif_ok(&b);
    expect_offset(tz, -5000000000, 3600, 1000000);
    expect_offset(tz, 1000000, 3600, 2000000);
    expect_offset(tz, 2000000, 7200, INT64_MAX);
    sb__tz_free(tz);
}

static void test_tzif_errors(void **state)
{
    (void)state;
    tzspec s = {'2', 2, two_at, two_idx, 2, two_off, "EST5EDT,M3.2.0,M11.1.0"};
    bytes good = tzif(&s);
    sb_tz *tz = parse_tzif_ok(&good);
    sb__tz_free(tz);

    /* Every cut of a valid file is refused, none read past its end (the
     * copy is exactly that long, for ASan). */
    for (size_t n = 0; n < good.n; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        assert_non_null(cut);
        memcpy(cut, good.b, n);
        sb_error e = junk_error();
        tz = NULL;
        if (sb__tzif_parse(cut, n, &tz, &e) != SB_INVALID)
            fail_msg("a file cut to %zu of %zu bytes was accepted", n, good.n);
        assert_null(tz);
        assert_string_equal(e.field, "tzif");
        free(cut);
    }

    bytes b = good;
    b.b[0] = 'X';
    parse_tzif_bad(b.b, b.n, "not a TZif file");
    b = good;
    put(&b, "x", 1);
    parse_tzif_bad(b.b, b.n, "bytes follow the footer");
    b = good;
    b.b[b.n - 1] = 'x';
    parse_tzif_bad(b.b, b.n, "not terminated");

    s.footer = "EST5EDT";
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "tzif: footer: TZ rule \"EST5EDT\"");

    /* Version 1 with bytes after its data. */
    s = (tzspec){0, 2, two_at, two_idx, 2, two_off, NULL};
    b = tzif(&s);
    put(&b, "\n", 1);
    parse_tzif_bad(b.b, b.n, "bytes follow the data");

    /* Transitions not ascending; a type index past the types. */
    static const int64_t down[] = {2000000, 1000000};
    s = (tzspec){'2', 2, down, two_idx, 2, two_off, ""};
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "not ascending");
    static const int64_t same[] = {1000000, 1000000};
    s.at = same;
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "not ascending");
    static const uint8_t far_idx[] = {0, 2};
    s = (tzspec){'2', 2, two_at, far_idx, 2, two_off, ""};
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "time type that is not there");

    /* Offsets of 26 hours or more; RFC 8536's -89999..93599 pass. */
    static const int32_t edge[] = {-89999, 93599};
    s = (tzspec){'2', 2, two_at, two_idx, 2, edge, ""};
    b = tzif(&s);
    tz = parse_tzif_ok(&b);
    sb__tz_free(tz);
    static const int32_t huge[] = {0, 93600};
    s.off = huge;
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "26 hours");
    static const int32_t neg[] = {-93600, 0};
    s.off = neg;
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "26 hours");

    /* A transition out of range (beyond 2^60 s). */
    static const int64_t far_at[] = {1000000, INT64_MAX};
    s = (tzspec){'2', 2, far_at, two_idx, 2, two_off, ""};
    b = tzif(&s);
    parse_tzif_bad(b.b, b.n, "out of range");

    /* Header counts: leap seconds, no types, the two versions differ. */
    b = good;
    b.b[31] = 1; /* the version 1 header's leapcnt */
    parse_tzif_bad(b.b, b.n, "leap-second");
    b = good;
    memset(b.b + 36, 0, 4); /* typecnt */
    parse_tzif_bad(b.b, b.n, "time types");
    b = good;
    b.b[4] = '3';
    parse_tzif_bad(b.b, b.n, "versions differ");
    b = good;
    b.b[23] = 2; /* isutcnt: 0 or one per type (1) */
    parse_tzif_bad(b.b, b.n, "indicator counts");

    /* Over the cap. */
    uint8_t *big = calloc(1, SB_TZIF_MAX + 1);
    assert_non_null(big);
    memcpy(big, good.b, good.n);
    sb_error e = junk_error();
    tz = NULL;
    assert_int_equal(sb__tzif_parse(big, SB_TZIF_MAX + 1, &tz, &e), SB_TOOBIG);
    assert_string_equal(e.field, "tzif");
    assert_null(tz);
    free(big);
}

/* ------------------------------------------------------------------ */
/* time zones: wall times */

static void test_tz_resolve(void **state)
{
    (void)state;
    sb_tz *tz = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    /* An ordinary wall time. */
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 1, 10, 12, 0)),
                     utc_s(2026, 1, 10, 11, 0));
    /* 02:00-03:00 on 2026-03-29 never happens: the first instant after
     * the gap, 01:00 UTC (03:00 CEST). */
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 3, 29, 2, 0)),
                     utc_s(2026, 3, 29, 1, 0));
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 3, 29, 2, 59)),
                     utc_s(2026, 3, 29, 1, 0));
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 3, 29, 3, 0)),
                     utc_s(2026, 3, 29, 1, 0));
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 3, 29, 1, 59)),
                     utc_s(2026, 3, 29, 0, 59));
    /* 02:00-03:00 on 2026-10-25 happens twice: the first, in CEST. */
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 10, 25, 2, 0)),
                     utc_s(2026, 10, 25, 0, 0));
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 10, 25, 2, 59)),
                     utc_s(2026, 10, 25, 0, 59));
    assert_int_equal(sb__tz_resolve(tz, utc_s(2026, 10, 25, 3, 0)),
                     utc_s(2026, 10, 25, 2, 0));
    sb__tz_free(tz);

    /* Every wall time: the instant reaches it, and an earlier one never
     * does (at minute steps across both 2026 changes). */
    tz = rule_zone("EST5EDT,M3.2.0,M11.1.0");
    int64_t from[] = {utc_s(2026, 3, 8, 0, 0), utc_s(2026, 11, 1, 0, 0)};
    for (int k = 0; k < 2; k++) {
        for (int64_t w = from[k]; w < from[k] + 6 * 3600; w += 60) {
            int64_t u = sb__tz_resolve(tz, w);
            assert_true(u + sb__tz_offset(tz, u, NULL) >= w);
            assert_true(u - 1 + sb__tz_offset(tz, u - 1, NULL) < w);
        }
    }
    sb__tz_free(tz);
}

/* ------------------------------------------------------------------ */
/* time zones: the loader */

static void test_tz_names(void **state)
{
    (void)state;
    static const char *const good[] = {
        "UTC",       "Europe/Berlin", "America/Argentina/Buenos_Aires",
        "Etc/GMT+5", "Etc/GMT-14",    "America/Port-au-Prince"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(sb__tz_name_check(good[i], NULL), SB_OK);
    static const struct {
        const char *name, *message;
    } bad[] = {
        {"", "empty"},
        {"/etc/passwd", "not a path"},
        {"../etc/passwd", "\"..\""},
        {"Europe/../../etc/passwd", "\"..\""},
        {"..", "\"..\""},
        {"Europe//Berlin", "empty path component"},
        {"Europe/", "empty path component"},
        {"Europe/Berlin\n", "character outside"},
        {"Europe Berlin", "character outside"},
        {"zone.tab", "character outside"},
        {"Europe/Berlin;rm", "character outside"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_error e = junk_error();
        assert_int_equal(sb__tz_name_check(bad[i].name, &e), SB_INVALID);
        assert_string_equal(e.field, "time_zone");
        if (strstr(e.message, bad[i].message) == NULL)
            fail_msg("\"%s\": \"%s\" lacks \"%s\"", bad[i].name, e.message,
                     bad[i].message);
    }
    char name[SB_TZ_NAME_MAX + 2];
    memset(name, 'a', sizeof name);
    name[SB_TZ_NAME_MAX] = '\0';
    assert_int_equal(sb__tz_name_check(name, NULL), SB_OK);
    name[SB_TZ_NAME_MAX] = 'a';
    name[SB_TZ_NAME_MAX + 1] = '\0';
    assert_int_equal(sb__tz_name_check(name, NULL), SB_INVALID);
    assert_int_equal(sb__tz_name_check(NULL, NULL), SB_INVALID);
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_tz_load(void **state)
{
    (void)state;
    char dir[] = "/tmp/sb-tz-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];

    /* UTC needs no file. */
    sb_tz *tz = NULL;
    sb_error e = junk_error();
    assert_int_equal(sb__tz_load(dir, "UTC", &tz, &e), SB_OK);
    expect_offset(tz, utc_s(2026, 7, 1, 0, 0), 0, INT64_MAX);
    sb__tz_free(tz);
    assert_int_equal(sb__tz_load("/nonexistent", "Etc/UTC", &tz, &e), SB_OK);
    sb__tz_free(tz);

    /* A zone file of our own, in a subdirectory. */
    snprintf(path, sizeof path, "%s/Test", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    int32_t cet = 3600;
    tzspec s = {'2', 0, NULL, NULL, 1, &cet, "CET-1CEST,M3.5.0,M10.5.0/3"};
    bytes b = tzif(&s);
    snprintf(path, sizeof path, "%s/Test/Berlin", dir);
    write_file(path, b.b, b.n);
    tz = NULL;
    assert_int_equal(sb__tz_load(dir, "Test/Berlin", &tz, &e), SB_OK);
    expect_offset(tz, utc_s(2026, 7, 1, 0, 0), 7200, utc_s(2026, 10, 25, 1, 0));
    sb__tz_free(tz);

    /* Missing, a directory, not TZif, too big, a bad name. */
    tz = NULL;
    e = junk_error();
    assert_int_equal(sb__tz_load(dir, "Test/Paris", &tz, &e), SB_NOTFOUND);
    assert_string_equal(e.field, "time_zone");
    assert_non_null(strstr(e.message, "unknown time zone \"Test/Paris\""));
    assert_int_equal(sb__tz_load(dir, "Test/Berlin/x", &tz, &e), SB_NOTFOUND);
    assert_int_equal(sb__tz_load(dir, "Test", &tz, &e), SB_NOTFOUND);
    assert_non_null(strstr(e.message, "not a zone file"));
    snprintf(path, sizeof path, "%s/Test/Text", dir);
    write_file(path, "hello\n", 6);
    assert_int_equal(sb__tz_load(dir, "Test/Text", &tz, &e), SB_INVALID);
    assert_string_equal(e.field, "time_zone");
    assert_non_null(strstr(e.message, "time zone \"Test/Text\": tzif: "));
    uint8_t *big = calloc(1, SB_TZIF_MAX + 1);
    assert_non_null(big);
    snprintf(path, sizeof path, "%s/Test/Big", dir);
    write_file(path, big, SB_TZIF_MAX + 1);
    free(big);
    assert_int_equal(sb__tz_load(dir, "Test/Big", &tz, &e), SB_INVALID);
    assert_non_null(strstr(e.message, "over"));
    assert_int_equal(sb__tz_load(dir, "../x", &tz, &e), SB_INVALID);
    assert_null(tz);

    static const char *const files[] = {"Test/Berlin", "Test/Text", "Test/Big",
                                        "Test", ""};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        assert_int_equal(remove(path), 0);
    }
}

/* ------------------------------------------------------------------ */
/* the system's zones */

/* The system's Berlin file against the rule alone, and across both of
 * 2026's changes. */
static void test_zone_berlin(void **state)
{
    (void)state;
    sb_tz *tz = system_zone("Europe/Berlin");
    int64_t spring = utc_s(2026, 3, 29, 1, 0), fall = utc_s(2026, 10, 25, 1, 0);
    expect_offset(tz, spring - 1, 3600, spring);
    expect_offset(tz, spring, 7200, fall);
    expect_offset(tz, fall, 3600, utc_s(2027, 3, 28, 1, 0));

    /* Daily at 02:30: on the spring day 02:30 never happens, so it runs
     * at the first instant after the gap (03:00 CEST); the next day as
     * usual. */
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 3, 28, 12, 0)),
                     utc(2026, 3, 29, 1, 0));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 3, 29, 1, 0)),
                     utc(2026, 3, 30, 0, 30));
    /* On the fall day 02:30 happens twice: once, at the first. */
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 10, 24, 12, 0)),
                     utc(2026, 10, 25, 0, 30));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 10, 25, 0, 30)),
                     utc(2026, 10, 26, 1, 30));
    /* Every 30 minutes through the gap: 02:00 and 02:30 fold into the
     * first instant after it, which is also 03:00 CEST: one run. */
    int64_t t = utc(2026, 3, 29, 0, 0);
    int64_t want[] = {utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0),
                      utc(2026, 3, 29, 1, 30)};
    for (size_t i = 0; i < 3; i++) {
        t = next_of("*/30 * * * *", tz, t);
        assert_int_equal(t, want[i]);
    }
    /* ... and through the repeated hour: 02:00 and 02:30 CEST, then
     * 03:00 CET; the repeats in CET do not run. */
    t = utc(2026, 10, 24, 23, 30);
    int64_t want2[] = {utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 0, 30),
                       utc(2026, 10, 25, 2, 0)};
    for (size_t i = 0; i < 3; i++) {
        t = next_of("*/30 * * * *", tz, t);
        assert_int_equal(t, want2[i]);
    }
    /* An instant inside the repeated hour (02:15 CET, the second time):
     * 02:30 CET is a repeat already run at 02:30 CEST; next is 03:00. */
    assert_int_equal(next_of("*/30 * * * *", tz, utc(2026, 10, 25, 1, 15)),
                     utc(2026, 10, 25, 2, 0));
    /* Midnight and 03:00 are ordinary on both days. */
    assert_int_equal(next_of("0 3 * * *", tz, utc(2026, 3, 28, 12, 0)),
                     utc(2026, 3, 29, 1, 0));
    assert_int_equal(next_of("0 0 * * *", tz, utc(2026, 10, 25, 12, 0)),
                     utc(2026, 10, 25, 23, 0));

    /* After the file's last transition (2037) the footer's rule:
     * 2040-03-25 and 2040-10-28, and 2100. */
    expect_offset(tz, utc_s(2040, 3, 25, 0, 59), 3600,
                  utc_s(2040, 3, 25, 1, 0));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2040, 3, 24, 12, 0)),
                     utc(2040, 3, 25, 1, 0));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2040, 10, 27, 12, 0)),
                     utc(2040, 10, 28, 0, 30));
    assert_int_equal(next_of("0 12 * * *", tz, utc(2100, 7, 1, 0, 0)),
                     utc(2100, 7, 1, 10, 0));

    /* The file and its footer rule alone agree from 2038 on. */
    sb_tz *rule = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    for (int64_t u = utc_s(2038, 1, 1, 0, 0); u < utc_s(2060, 1, 1, 0, 0);
         u += 3 * 3600 + 17)
        assert_int_equal(sb__tz_offset(tz, u, NULL),
                         sb__tz_offset(rule, u, NULL));
    sb__tz_free(rule);
    sb__tz_free(tz);
}

static void test_zone_new_york(void **state)
{
    (void)state;
    sb_tz *tz = system_zone("America/New_York");
    /* 2026-03-08 02:00 EST -> 03:00 EDT (07:00 UTC). */
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 3, 7, 12, 0)),
                     utc(2026, 3, 8, 7, 0));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 3, 8, 7, 0)),
                     utc(2026, 3, 9, 6, 30));
    /* 2026-11-01 02:00 EDT -> 01:00 EST (06:00 UTC): 01:30 twice, once. */
    assert_int_equal(next_of("30 1 * * *", tz, utc(2026, 10, 31, 12, 0)),
                     utc(2026, 11, 1, 5, 30));
    assert_int_equal(next_of("30 1 * * *", tz, utc(2026, 11, 1, 5, 30)),
                     utc(2026, 11, 2, 6, 30));
    /* Hourly through the repeated hour: 01:00 EDT, then 02:00 EST. */
    assert_int_equal(next_of("0 * * * *", tz, utc(2026, 11, 1, 5, 0)),
                     utc(2026, 11, 1, 7, 0));
    /* Every weekday at 09:00 New York time, across the change. */
    assert_int_equal(next_of("0 9 * * MON-FRI", tz, utc(2026, 3, 6, 15, 0)),
                     utc(2026, 3, 9, 13, 0));
    /* After the last transition: 2050-03-13 and 2050-11-06. */
    assert_int_equal(next_of("30 2 * * *", tz, utc(2050, 3, 12, 12, 0)),
                     utc(2050, 3, 13, 7, 0));
    assert_int_equal(next_of("30 1 * * *", tz, utc(2050, 11, 5, 12, 0)),
                     utc(2050, 11, 6, 5, 30));
    sb__tz_free(tz);
}

static void test_zone_half_hours(void **state)
{
    (void)state;
    sb_tz *tz = system_zone("Asia/Kolkata"); /* +05:30, no DST */
    assert_int_equal(next_of("0 9 * * *", tz, utc(2026, 1, 1, 0, 0)),
                     utc(2026, 1, 1, 3, 30));
    assert_int_equal(next_of("30 * * * *", tz, utc(2026, 1, 1, 0, 0)),
                     utc(2026, 1, 1, 1, 0));
    assert_int_equal(next_of("0 0 1 1 *", tz, utc(2040, 6, 1, 0, 0)),
                     utc(2040, 12, 31, 18, 30));
    sb__tz_free(tz);

    /* Adelaide: +10:30 in summer, +09:30 in winter. DST ends 2026-04-05
     * 03:00 (02:00-03:00 twice) and starts 2026-10-04 02:00. */
    tz = system_zone("Australia/Adelaide");
    assert_int_equal(next_of("0 9 * * *", tz, utc(2026, 1, 1, 0, 0)),
                     utc(2026, 1, 1, 22, 30));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 4, 4, 0, 0)),
                     utc(2026, 4, 4, 16, 0)); /* 02:30 ACDT, the first */
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 4, 4, 16, 0)),
                     utc(2026, 4, 5, 17, 0));
    assert_int_equal(next_of("30 2 * * *", tz, utc(2026, 10, 3, 0, 0)),
                     utc(2026, 10, 3, 16, 30)); /* the gap: 03:00 ACDT */
    assert_int_equal(next_of("0 9 * * *", tz, utc(2026, 7, 1, 0, 0)),
                     utc(2026, 7, 1, 23, 30));
    sb__tz_free(tz);

    /* UTC from the loader and no zone at all agree. */
    tz = system_zone("UTC");
    for (int64_t t = utc(2026, 1, 1, 0, 0); t < utc(2027, 1, 1, 0, 0);
         t += 7919 * 60 * US)
        assert_int_equal(next_of("17 */5 * * 1-5", tz, t),
                         next_of("17 */5 * * 1-5", NULL, t));
    sb__tz_free(tz);
}

/* Random expressions in zones with changes: an occurrence is after the
 * instant, the instant just before it has it as next, and its wall time
 * matches unless the clock jumped over the matching one. */
static void test_cron_properties(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "* * * * *",    "*/7 * * * *",     "30 2 * * *",
        "0 */3 * * *",  "15 1-3 * * SUN",  "0 0 1 * *",
        "45 23 * * 6",  "0 2 29 2 *",      "*/20 1,2,3 * 3,10 *",
        "0 0 13 * FRI", "5 4 * * MON-FRI", "0 12 1-7 * 1",
    };
    static const char *const rules[] = {
        "CET-1CEST,M3.5.0,M10.5.0/3", "EST5EDT,M3.2.0,M11.1.0",
        "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "IST-1GMT0,M10.5.0,M3.5.0/1",
        "<-02>2<-01>,M3.5.0/-1,M10.5.0/0"};
    srand(20260329);
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        sb_tz *tz = rule_zone(rules[r]);
        for (size_t x = 0; x < sizeof exprs / sizeof exprs[0]; x++) {
            sb_cron c = parse_ok(exprs[x]);
            for (int k = 0; k < 40; k++) {
                int64_t t = utc(2026, 1, 1, 0, 0) +
                            (int64_t)(rand() % (366 * 24 * 60)) * 60 * US +
                            rand() % (60 * US);
                int64_t n, again;
                assert_int_equal(sb__cron_next(&c, tz, t, &n, NULL), SB_OK);
                assert_true(n > t);
                assert_int_equal(n % (60 * US) == 0 ||
                                     sb__tz_offset(tz, n / US, NULL) % 60 != 0,
                                 1);
                assert_int_equal(sb__cron_next(&c, tz, n - 1, &again, NULL),
                                 SB_OK);
                assert_int_equal(again, n);
                int64_t wall = n / US + sb__tz_offset(tz, n / US, NULL);
                int32_t before = sb__tz_offset(tz, n / US - 1, NULL);
                bool jumped = before < sb__tz_offset(tz, n / US, NULL);
                assert_true(sb__cron_matches(&c, wall) || jumped);
            }
        }
        sb__tz_free(tz);
    }
}

/* ------------------------------------------------------------------ */
/* intervals */

static void test_every(void **state)
{
    (void)state;
    int64_t a = utc(2026, 1, 1, 0, 0) + 123456; /* any microsecond */
    sb_schedule s = {.every_us = 15 * 60 * US, .anchor_us = a};
    int64_t n = 0;
    assert_int_equal(sb__schedule_next(&s, a - 1, &n, NULL), SB_OK);
    assert_int_equal(n, a);
    assert_int_equal(sb__schedule_next(&s, a - 86400 * US, &n, NULL), SB_OK);
    assert_int_equal(n, a); /* nothing before the anchor */
    assert_int_equal(sb__schedule_next(&s, a, &n, NULL), SB_OK);
    assert_int_equal(n, a + 15 * 60 * US);
    assert_int_equal(sb__schedule_next(&s, a + 15 * 60 * US - 1, &n, NULL),
                     SB_OK);
    assert_int_equal(n, a + 15 * 60 * US);
    assert_int_equal(sb__schedule_next(&s, a + 3600 * US + 1, &n, NULL), SB_OK);
    assert_int_equal(n, a + 75 * 60 * US);
    /* prev: at or before */
    assert_int_equal(sb__schedule_prev(&s, a + 16 * 60 * US, &n, NULL), SB_OK);
    assert_int_equal(n, a + 15 * 60 * US);
    assert_int_equal(sb__schedule_prev(&s, a + 15 * 60 * US, &n, NULL), SB_OK);
    assert_int_equal(n, a + 15 * 60 * US);
    assert_int_equal(sb__schedule_prev(&s, a, &n, NULL), SB_OK);
    assert_int_equal(n, a);
    sb_error e = junk_error();
    assert_int_equal(sb__schedule_prev(&s, a - 1, &n, &e), SB_NOTFOUND);

    /* 1 s to 366 days. */
    static const int64_t ok[] = {SB_EVERY_MIN_US, 86400 * US, SB_EVERY_MAX_US};
    for (size_t i = 0; i < 3; i++) {
        s.every_us = ok[i];
        assert_int_equal(sb__schedule_next(&s, a + 10 * ok[i], &n, NULL),
                         SB_OK);
        assert_int_equal(n, a + 11 * ok[i]);
    }
    static const int64_t bad[] = {0, -US, SB_EVERY_MIN_US - 1,
                                  SB_EVERY_MAX_US + 1, INT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s.every_us = bad[i];
        e = junk_error();
        assert_int_equal(sb__schedule_next(&s, a, &n, &e), SB_INVALID);
        assert_string_equal(e.field, "every");
        assert_int_equal(sb__every_check(bad[i], a, NULL), SB_INVALID);
    }
    assert_int_equal(sb__every_check(US, SB_SCHED_MAX_US + 1, NULL),
                     SB_INVALID);
    /* The end of the calendar. */
    s = (sb_schedule){.every_us = SB_EVERY_MAX_US, .anchor_us = 0};
    assert_int_equal(sb__schedule_next(&s, SB_SCHED_MAX_US - 1, &n, &e),
                     SB_INVALID);
    assert_int_equal(sb__schedule_next(&s, SB_SCHED_MAX_US + 1, &n, &e),
                     SB_INVALID);
}

/* A cron expression's previous occurrence. */
static void test_cron_prev(void **state)
{
    (void)state;
    sb_cron c = parse_ok("0 0 1 * *");
    sb_schedule s = {.cron = &c};
    int64_t p = 0;
    assert_int_equal(sb__schedule_prev(&s, utc(2026, 3, 15, 0, 0), &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2026, 3, 1, 0, 0));
    assert_int_equal(sb__schedule_prev(&s, utc(2026, 3, 1, 0, 0), &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2026, 3, 1, 0, 0));
    assert_int_equal(sb__schedule_prev(&s, utc(2026, 3, 1, 0, 0) - 1, &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2026, 2, 1, 0, 0));
    c = parse_ok("0 0 29 2 *");
    assert_int_equal(sb__schedule_prev(&s, utc(2031, 1, 1, 0, 0), &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2028, 2, 29, 0, 0));
    c = parse_ok("* * * * *");
    assert_int_equal(sb__schedule_prev(&s, utc(2026, 3, 1, 0, 0) + 1, &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2026, 3, 1, 0, 0));
    /* In a zone: the fall-back day's 02:30 ran at its first occurrence. */
    sb_tz *tz = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    c = parse_ok("30 2 * * *");
    s.tz = tz;
    assert_int_equal(sb__schedule_prev(&s, utc(2026, 10, 25, 12, 0), &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2026, 10, 25, 0, 30));
    assert_int_equal(sb__schedule_prev(&s, utc(2026, 3, 29, 12, 0), &p, NULL),
                     SB_OK);
    assert_int_equal(p, utc(2026, 3, 29, 1, 0));
    sb__tz_free(tz);
    /* Nothing within the horizon (or before year 1). */
    c = parse_ok("* * * * *");
    s.tz = NULL;
    sb_error e = junk_error();
    assert_int_equal(sb__schedule_prev(&s, SB_SCHED_MIN_US + 5, &p, &e),
                     SB_NOTFOUND);
    assert_int_equal(sb__schedule_prev(&s, SB_SCHED_MIN_US - 5, &p, &e),
                     SB_INVALID);
}

/* ------------------------------------------------------------------ */
/* missed occurrences */

static sb_due due(const sb_schedule *s, sb_missed policy, const int64_t *last,
                  int64_t now, int64_t grace)
{
    sb_due d;
    memset(&d, 0xab, sizeof d);
    sb_error e = junk_error();
    int rc = sb__schedule_due(s, policy, last, now, grace, &d, &e);
    if (rc != SB_OK)
        fail_msg("due: rc %d: %s", rc, e.message);
    return d;
}

static void test_missed_policy(void **state)
{
    (void)state;
    const int64_t H = 3600 * US, G = 60 * US;
    int64_t t0 = utc(2026, 5, 1, 0, 0);
    sb_schedule s = {.every_us = H, .anchor_us = t0};

    /* No last occurrence: nothing before the grace counts. */
    sb_due d = due(&s, SB_MISSED_SKIP, NULL, t0 + 30 * 60 * US, G);
    assert_false(d.publish);
    assert_false(d.has_last);
    assert_false(d.missed);
    assert_int_equal(d.next_us, t0 + H);
    d = due(&s, SB_MISSED_ONCE, NULL, t0 + H + 5 * US, G); /* 5 s late */
    assert_true(d.publish);
    assert_int_equal(d.occurrence_us, t0 + H);
    assert_true(d.has_last);
    assert_int_equal(d.last_us, t0 + H);
    assert_int_equal(d.next_us, t0 + 2 * H);
    d = due(&s, SB_MISSED_ONCE, NULL, t0 + H + 2 * G, G); /* too late */
    assert_false(d.publish);
    assert_false(d.missed); /* without a last there is nothing to miss */
    assert_int_equal(d.next_us, t0 + 2 * H);

    /* On time, exactly and within the grace. */
    int64_t last = t0;
    d = due(&s, SB_MISSED_SKIP, &last, t0 + H, G);
    assert_true(d.publish);
    assert_int_equal(d.occurrence_us, t0 + H);
    assert_int_equal(d.last_us, t0 + H);
    assert_int_equal(d.next_us, t0 + 2 * H);
    d = due(&s, SB_MISSED_SKIP, &last, t0 + H + G, G);
    assert_true(d.publish);
    assert_false(d.missed);
    /* Nothing due yet. */
    d = due(&s, SB_MISSED_SKIP, &last, t0 + H - 1, G);
    assert_false(d.publish);
    assert_true(d.has_last);
    assert_int_equal(d.last_us, t0);
    assert_int_equal(d.next_us, t0 + H);

    /* Down from 00:30 to 05:30: 01:00 to 05:00 were missed. */
    d = due(&s, SB_MISSED_SKIP, &last, t0 + 5 * H + 30 * 60 * US, G);
    assert_false(d.publish);
    assert_true(d.missed);
    assert_int_equal(d.missed_first_us, t0 + H);
    assert_int_equal(d.missed_last_us, t0 + 5 * H);
    assert_int_equal(d.last_us, t0 + 5 * H);
    assert_int_equal(d.next_us, t0 + 6 * H);
    d = due(&s, SB_MISSED_ONCE, &last, t0 + 5 * H + 30 * 60 * US, G);
    assert_true(d.publish);
    assert_int_equal(d.occurrence_us, t0 + H); /* keyed by the first */
    assert_true(d.missed);
    assert_int_equal(d.missed_first_us, t0 + H);
    assert_int_equal(d.missed_last_us, t0 + 5 * H);
    assert_int_equal(d.last_us, t0 + 5 * H);
    assert_int_equal(d.next_us, t0 + 6 * H);

    /* Back at 05:00:30: 01:00-04:00 missed, 05:00 on time. skip
     * publishes 05:00; once publishes the fold, then (called again at
     * once: next_us <= now) 05:00. */
    int64_t now = t0 + 5 * H + 30 * US;
    d = due(&s, SB_MISSED_SKIP, &last, now, G);
    assert_true(d.publish);
    assert_int_equal(d.occurrence_us, t0 + 5 * H);
    assert_int_equal(d.missed_last_us, t0 + 4 * H);
    assert_int_equal(d.last_us, t0 + 5 * H);
    assert_int_equal(d.next_us, t0 + 6 * H);
    d = due(&s, SB_MISSED_ONCE, &last, now, G);
    assert_true(d.publish);
    assert_int_equal(d.occurrence_us, t0 + H);
    assert_int_equal(d.last_us, t0 + 4 * H);
    assert_true(d.next_us <= now);
    int64_t last2 = d.last_us;
    d = due(&s, SB_MISSED_ONCE, &last2, now, G);
    assert_true(d.publish);
    assert_false(d.missed);
    assert_int_equal(d.occurrence_us, t0 + 5 * H);

    /* Two schedulers that saw the same last occurrence fold into the
     * same key whenever they look. */
    sb_due a = due(&s, SB_MISSED_ONCE, &last, t0 + 3 * H, G);
    sb_due b = due(&s, SB_MISSED_ONCE, &last, t0 + 9 * H + 17 * US, G);
    assert_int_equal(a.occurrence_us, b.occurrence_us);

    /* The clock went back: nothing until after the last occurrence. */
    last = t0 + 10 * H;
    d = due(&s, SB_MISSED_ONCE, &last, t0 + 2 * H, G);
    assert_false(d.publish);
    assert_int_equal(d.next_us, t0 + 11 * H);

    /* No grace: a microsecond late is missed. */
    last = t0;
    d = due(&s, SB_MISSED_SKIP, &last, t0 + H + 1, 0);
    assert_false(d.publish);
    assert_true(d.missed);
    d = due(&s, SB_MISSED_SKIP, &last, t0 + H, 0);
    assert_true(d.publish);

    /* Cron in a zone: a daily 02:30 Berlin job down over the spring
     * change runs the gap occurrence once under "once". */
    sb_tz *tz = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    sb_cron c = parse_ok("30 2 * * *");
    sb_schedule cs = {.cron = &c, .tz = tz};
    last = utc(2026, 3, 27, 1, 30);
    d = due(&cs, SB_MISSED_ONCE, &last, utc(2026, 3, 30, 12, 0), G);
    assert_true(d.publish);
    assert_int_equal(d.occurrence_us, utc(2026, 3, 28, 1, 30));
    assert_int_equal(d.missed_last_us, utc(2026, 3, 30, 0, 30));
    assert_int_equal(d.next_us, utc(2026, 3, 31, 0, 30));
    sb__tz_free(tz);

    /* Bad input names its field. */
    sb_error e = junk_error();
    assert_int_equal(sb__schedule_due(&s, (sb_missed)7, NULL, t0, G, &d, &e),
                     SB_INVALID);
    assert_string_equal(e.field, "missed");
    assert_int_equal(sb__schedule_due(&s, SB_MISSED_SKIP, NULL, t0, -1, &d, &e),
                     SB_INVALID);
    assert_string_equal(e.field, "grace");
    assert_int_equal(sb__schedule_due(&s, SB_MISSED_SKIP, NULL,
                                      SB_SCHED_MAX_US + 1, G, &d, &e),
                     SB_INVALID);
    assert_string_equal(e.field, "now");
    s.every_us = 0;
    assert_int_equal(sb__schedule_due(&s, SB_MISSED_SKIP, NULL, t0, G, &d, &e),
                     SB_INVALID);
    assert_string_equal(e.field, "every");

    sb_missed m;
    assert_int_equal(sb__missed_parse("skip", &m, NULL), SB_OK);
    assert_int_equal(m, SB_MISSED_SKIP);
    assert_int_equal(sb__missed_parse("once", &m, NULL), SB_OK);
    assert_int_equal(m, SB_MISSED_ONCE);
    assert_int_equal(sb__missed_parse("Once", &m, &e), SB_INVALID);
    assert_string_equal(e.field, "missed");
    assert_int_equal(sb__missed_parse(NULL, &m, &e), SB_INVALID);
}

/* A scheduler loop that wakes late at random and is sometimes down for
 * hours, across a DST change: every occurrence is published at most once
 * and in order, and accounted for: published on time (within the grace),
 * or inside a missed stretch (dropped under skip; under once folded into
 * one publish keyed by its first occurrence). */
static void test_missed_loop(void **state)
{
    (void)state;
    const int64_t G = 60 * US;
    sb_cron c = parse_ok("*/10 * * * *");
    sb_tz *tz = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    sb_schedule s = {.cron = &c, .tz = tz};
    const int64_t start = utc(2026, 3, 28, 0, 0), end = utc(2026, 3, 31, 0, 0);
    /* Every occurrence in (start, end], and how it was settled. */
    enum { N = 600 };
    int64_t occ[N];
    int how[N];
    size_t n = 0;
    for (int64_t t = start; n < N;) {
        assert_int_equal(sb__cron_next(&c, tz, t, &t, NULL), SB_OK);
        if (t > end)
            break;
        occ[n++] = t;
    }
    assert_true(n > 400 && n < N);
    for (int policy = 0; policy < 2; policy++) {
        srand(7 + (unsigned)policy);
        memset(how, 0, sizeof how);
        int64_t now = start, last = start, prev_key = 0;
        long published = 0, folds = 0, dropped = 0;
        while (now < end) {
            sb_due d = due(&s, (sb_missed)policy, &last, now, G);
            if (d.missed) {
                for (size_t i = 0; i < n; i++) {
                    if (occ[i] < d.missed_first_us || occ[i] > d.missed_last_us)
                        continue;
                    assert_int_equal(how[i], 0);
                    how[i] = 2;
                    dropped++;
                }
            }
            if (d.publish) {
                assert_true(d.occurrence_us > prev_key);
                assert_true(d.occurrence_us > last);
                prev_key = d.occurrence_us;
                published++;
                size_t i = 0;
                while (i < n && occ[i] != d.occurrence_us)
                    i++;
                assert_true(i < n);
                if (d.missed) { /* the fold: keyed by the first missed */
                    assert_int_equal(policy, SB_MISSED_ONCE);
                    assert_int_equal(d.occurrence_us, d.missed_first_us);
                    folds++;
                } else {
                    assert_int_equal(how[i], 0);
                    assert_true(now - d.occurrence_us <= G); /* on time */
                    how[i] = 1;
                }
            }
            if (d.has_last) {
                assert_true(d.last_us >= last);
                last = d.last_us;
            }
            if (d.next_us <= now)
                continue; /* more due at once */
            /* Sleep until next_us, waking up to 50 s late; one time in
             * 50 stay down for up to 5 hours. */
            now = d.next_us + rand() % (50 * US);
            if (rand() % 50 == 0)
                now += (int64_t)(rand() % (5 * 3600)) * US;
        }
        /* Everything up to the last one settled was settled once. */
        for (size_t i = 0; i < n && occ[i] <= last; i++)
            if (how[i] == 0)
                fail_msg("policy %d: occurrence %zu lost", policy, i);
        assert_true(published > 300);
        assert_true(dropped > 0);
        if (policy == SB_MISSED_ONCE)
            assert_true(folds > 0);
        else
            assert_int_equal(folds, 0);
    }
    sb__tz_free(tz);
}

/* ------------------------------------------------------------------ */
/* fail the Nth allocation (style rule 7) */

static int fa_setup(void **state)
{
    (void)state;
    fa_install();
    return 0;
}

static int fa_teardown(void **state)
{
    (void)state;
    fa_uninstall();
    return 0;
}

static void test_alloc_fail(void **state)
{
    (void)state;
    tzspec s = {
        '2', 2, two_at, two_idx, 2, two_off, "CET-1CEST,M3.5.0,M10.5.0/3"};
    bytes b = tzif(&s);
    for (int op = 0; op < 2; op++) {
        long live0 = fa_live();
        fa_arm(1);
        sb_tz *tz = NULL;
        sb_error e = junk_error();
        int rc = op == 0 ? sb__tzif_parse(b.b, b.n, &tz, &e)
                         : sb__tz_from_rule("EST5EDT,M3.2.0,M11.1.0", &tz, &e);
        fa_disarm();
        assert_int_equal(rc, SB_NOMEM);
        assert_int_equal(e.code, SB_NOMEM);
        assert_null(tz);
        assert_int_equal(fa_live(), live0);
        /* and without a failure, one block */
        fa_arm(0);
        rc = op == 0 ? sb__tzif_parse(b.b, b.n, &tz, &e)
                     : sb__tz_from_rule("EST5EDT,M3.2.0,M11.1.0", &tz, &e);
        assert_int_equal(fa_disarm(), 1);
        assert_int_equal(rc, SB_OK);
        sb__tz_free(tz);
        assert_int_equal(fa_live(), live0);
    }
    /* The loader: the file's buffer, then the zone. */
    char dir[] = "/tmp/sb-tzfa-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/Zone", dir);
    write_file(path, b.b, b.n);
    for (long n = 1; n <= 3; n++) {
        long live0 = fa_live();
        fa_arm(n);
        sb_tz *tz = NULL;
        int rc = sb__tz_load(dir, "Zone", &tz, NULL);
        long calls = fa_disarm();
        assert_int_equal(fa_live(), live0 + (rc == SB_OK));
        if (n <= 2) {
            assert_int_equal(rc, SB_NOMEM);
        } else {
            assert_int_equal(calls, 2);
            assert_int_equal(rc, SB_OK);
        }
        sb__tz_free(tz);
    }
    assert_int_equal(remove(path), 0);
    assert_int_equal(rmdir(dir), 0);
    /* Cron parsing and the schedule functions never allocate. */
    fa_arm(1);
    sb_cron c;
    assert_int_equal(sb__cron_parse("*/5 9-17 * * MON-FRI", &c, NULL), SB_OK);
    int64_t n;
    assert_int_equal(sb__cron_next(&c, NULL, 0, &n, NULL), SB_OK);
    sb_schedule sc = {.cron = &c};
    sb_due d;
    assert_int_equal(sb__schedule_due(&sc, SB_MISSED_ONCE, &n, n + 86400 * US,
                                      60 * US, &d, NULL),
                     SB_OK);
    assert_int_equal(fa_disarm(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cron_fields),
        cmocka_unit_test(test_cron_names),
        cmocka_unit_test(test_cron_macros),
        cmocka_unit_test(test_cron_errors),
        cmocka_unit_test(test_cron_next_utc),
        cmocka_unit_test(test_cron_day_rule),
        cmocka_unit_test(test_cron_next_limits),
        cmocka_unit_test(test_tzrule_parse),
        cmocka_unit_test(test_tzrule_offsets),
        cmocka_unit_test(test_tzif_versions),
        cmocka_unit_test(test_tzif_errors),
        cmocka_unit_test(test_tz_resolve),
        cmocka_unit_test(test_tz_names),
        cmocka_unit_test(test_tz_load),
        cmocka_unit_test(test_zone_berlin),
        cmocka_unit_test(test_zone_new_york),
        cmocka_unit_test(test_zone_half_hours),
        cmocka_unit_test(test_cron_properties),
        cmocka_unit_test(test_every),
        cmocka_unit_test(test_cron_prev),
        cmocka_unit_test(test_missed_policy),
        cmocka_unit_test(test_missed_loop),
        cmocka_unit_test_setup_teardown(test_alloc_fail, fa_setup, fa_teardown),
    };
    return cmocka_run_group_tests_name("cron", tests, NULL, NULL);
}
