/*
 * fuzz_cron.c - libFuzzer target for sb__cron_parse and sb__cron_next
 * (core/cron.c).
 *
 * Invariants: the parser answers SB_OK or SB_INVALID, the same with or
 * without an sb_error; a refusal names the "cron" field, starts "cron: ",
 * quotes the input only as printable ASCII and leaves the output alone.
 * An accepted expression has bits only where its fields have values and
 * none empty; from instants picked by the input, in UTC and in a zone
 * with DST, its next occurrence exists, is later, is found again from
 * the microsecond before it, and in UTC its wall time matches.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_next(const sb_cron *c, const sb_tz *tz, int64_t t)
{
    int64_t n = -1, again = -1;
    sb_error err;
    int rc = sb__cron_next(c, tz, t, &n, &err);
    CHECK(rc == SB_OK);
    CHECK(n > t);
    CHECK(n % 1000000 == 0);
    CHECK(sb__cron_next(c, tz, n - 1, &again, NULL) == SB_OK);
    CHECK(again == n);
    if (tz == NULL)
        CHECK(sb__cron_matches(c, n / 1000000));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    sb_cron c, c2;
    memset(&c, 0xab, sizeof c);
    memset(&c2, 0xab, sizeof c2);
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb__cron_parse(text, &c, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    CHECK(sb__cron_parse(text, &c2, NULL) == rc);
    CHECK(memcmp(&c, &c2, sizeof c) == 0);

    if (rc != SB_OK) {
        for (size_t i = 0; i < sizeof c; i++)
            CHECK(((uint8_t *)&c)[i] == 0xab);
        CHECK(err.code == SB_INVALID);
        CHECK(strcmp(err.field, "cron") == 0);
        CHECK(strncmp(err.message, "cron: ", 6) == 0);
        for (const char *p = err.message; *p; p++)
            CHECK(*p >= 0x20 && *p < 0x7f);
        free(text);
        return 0;
    }
    CHECK(c.minutes != 0 && c.minutes < (1ULL << 60));
    CHECK(c.hours != 0 && c.hours < (1U << 24));
    CHECK(c.mdays != 0 && (c.mdays & 1) == 0);
    CHECK(c.months != 0 && (c.months & ~0x1ffe) == 0);
    CHECK(c.wdays != 0 && c.wdays < 0x80);

    /* Instants from the input's bytes: 1970 to about 2106. */
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    int64_t t1 = (int64_t)(h % 4294967296ULL) * 1000000 + (int64_t)(h >> 44);
    sb_tz *tz = NULL;
    CHECK(sb__tz_from_rule("CET-1CEST,M3.5.0,M10.5.0/3", &tz, NULL) == SB_OK);
    check_next(&c, NULL, t1);
    check_next(&c, tz, t1);
    /* Just before Berlin's changes of 2026. */
    check_next(&c, tz, 1774745999000000); /* 2026-03-29 00:59:59 UTC */
    check_next(&c, tz, 1792889999000000); /* 2026-10-25 00:59:59 UTC */
    sb__tz_free(tz);
    free(text);
    return 0;
}
