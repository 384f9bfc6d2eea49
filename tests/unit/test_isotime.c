/*
 * test_isotime.c - unit tests of the HTTP API's ISO 8601 times
 * (src/server/isotime.c; rules S4, S5: the `modified` filters and every
 * time in a response): writing UTC with milliseconds, reading dates,
 * fractions and zones, leap days, and the FROM...TO ranges with their
 * refusals naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/isotime.h"

static int64_t parse(const char *s)
{
    int64_t us = -1;
    if (sb__iso_parse(s, strlen(s), &us) != SB_OK)
        fail_msg("%s was refused", s);
    return us;
}

static void refused(const char *s)
{
    int64_t us = 42;
    if (sb__iso_parse(s, strlen(s), &us) == SB_OK)
        fail_msg("%s was read as %lld", s, (long long)us);
    assert_int_equal(us, 42);
}

static void test_write(void **state)
{
    (void)state;
    char t[SB_ISO_TIME_LEN];
    sb__iso_time(0, t);
    assert_string_equal(t, "1970-01-01T00:00:00.000Z");
    sb__iso_time(1796083200123456LL, t);
    assert_string_equal(t, "2026-12-01T00:00:00.123Z");
    sb__iso_time(951782400000000LL, t); /* a leap day */
    assert_string_equal(t, "2000-02-29T00:00:00.000Z");
    sb__iso_time(253402300799999000LL, t);
    assert_string_equal(t, "9999-12-31T23:59:59.999Z");
}

static void test_read(void **state)
{
    (void)state;
    assert_int_equal(parse("1970-01-01"), 0);
    assert_int_equal(parse("2026-12-01"), 1796083200000000LL);
    assert_int_equal(parse("2026-12-01T21:00Z"), 1796158800000000LL);
    assert_int_equal(parse("2026-12-01T21:00:00Z"), 1796158800000000LL);
    assert_int_equal(parse("2026-12-01T21:00:00.5Z"), 1796158800500000LL);
    assert_int_equal(parse("2026-12-01T21:00:00.123456789Z"),
                     1796158800123456LL);
    assert_int_equal(parse("2026-12-01T22:00:00+01:00"), 1796158800000000LL);
    assert_int_equal(parse("2026-12-01T20:30:00-00:30"), 1796158800000000LL);
    assert_int_equal(parse("2026-12-01 21:00:00"), 1796158800000000LL);
    assert_int_equal(parse("2024-02-29"), 1709164800000000LL);
    char t[SB_ISO_TIME_LEN];
    sb__iso_time(1796158800123000LL, t);
    assert_int_equal(parse(t), 1796158800123000LL);
}

static void test_refused(void **state)
{
    (void)state;
    const char *bad[] = {"",
                         "2026",
                         "2026-13-01",
                         "2026-02-29",
                         "2023-02-29",
                         "1969-12-31",
                         "2026-12-01T24:00Z",
                         "2026-12-01T21:60Z",
                         "2026-12-01T21:00:60Z",
                         "2026-12-01T21:00:00.Z",
                         "2026-12-01T21:00:00.1234567890Z",
                         "2026-12-01T21:00:00+1:00",
                         "2026-12-01X",
                         "2026-12-01T21:00:00Zjunk",
                         "12026-01-01",
                         "1970-01-01T00:00:00+00:01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        refused(bad[i]);
}

static void test_range(void **state)
{
    (void)state;
    int64_t a = -1, b = -1;
    sb_error err;
    assert_int_equal(
        sb__iso_range("2026-01-01...2026-02-01", "modified", &a, &b, &err),
        SB_OK);
    assert_int_equal(a, parse("2026-01-01"));
    assert_int_equal(b, parse("2026-02-01"));
    assert_int_equal(sb__iso_range("...2026-02-01", "modified", &a, &b, &err),
                     SB_OK);
    assert_int_equal(a, 0);
    assert_int_equal(sb__iso_range("2026-01-01...", "modified", &a, &b, &err),
                     SB_OK);
    assert_int_equal(b, 0);
    const char *bad[] = {"2026-01-01", "2026-02-01...2026-01-01",
                         "yesterday...", "...2026-13-01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(sb__iso_range(bad[i], "modified", &a, &b, &err),
                         SB_INVALID);
        assert_string_equal(err.field, "modified");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
