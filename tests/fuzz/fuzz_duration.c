/*
 * fuzz_duration.c - libFuzzer target for sb_parse_duration_ms.
 *
 * Invariants: the parser answers SB_OK or SB_INVALID, never touches the
 * output on failure and names the "duration" field; an accepted text is
 * digits followed by a known unit; its result is non-negative and parses
 * back to itself when printed as a bare number or with "ms".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known_unit(const char *u)
{
    static const char *const units[] = {"", "us", "ms", "s", "m", "h", "d"};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i]) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    const int64_t sentinel = -424242;
    int64_t ms = sentinel;
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb_parse_duration_ms(text, &ms, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);

    /* The same answer without an sb_error. */
    int64_t ms2 = sentinel;
    CHECK(sb_parse_duration_ms(text, &ms2, NULL) == rc);
    CHECK(ms2 == ms);

    if (rc != SB_OK) {
        CHECK(ms == sentinel);
        CHECK(err.code == SB_INVALID);
        CHECK(strcmp(err.field, "duration") == 0);
        CHECK(err.message[0] != '\0');
        CHECK(strlen(err.message) < sizeof err.message);
    } else {
        CHECK(ms >= 0);
        size_t digits = strspn(text, "0123456789");
        CHECK(digits > 0);
        CHECK(known_unit(text + digits));

        /* Printed back as milliseconds, it parses to the same value. */
        char again[64];
        snprintf(again, sizeof again, "%lld", (long long)ms);
        int64_t back = sentinel;
        CHECK(sb_parse_duration_ms(again, &back, NULL) == SB_OK);
        CHECK(back == ms);
        snprintf(again, sizeof again, "%lldms", (long long)ms);
        back = sentinel;
        CHECK(sb_parse_duration_ms(again, &back, NULL) == SB_OK);
        CHECK(back == ms);

        /* Reference arithmetic: accepted means no overflow, so the
         * number fits in int64 and times the unit it still fits. */
        const char *unit = text + digits;
        uint64_t v = 0;
        for (size_t i = 0; i < digits; i++)
            v = v * 10 + (uint64_t)(text[i] - '0');
        CHECK(v <= (uint64_t)INT64_MAX);
        uint64_t mul = 1, div = 1;
        if (strcmp(unit, "us") == 0)
            div = 1000;
        else if (strcmp(unit, "s") == 0)
            mul = 1000;
        else if (strcmp(unit, "m") == 0)
            mul = 60000;
        else if (strcmp(unit, "h") == 0)
            mul = 3600000;
        else if (strcmp(unit, "d") == 0)
            mul = 86400000;
        CHECK(v <= (uint64_t)INT64_MAX / mul); /* else it had to fail */
        int64_t want = (int64_t)(v * mul / div);
        CHECK(ms == want);
    }
    free(text);
    return 0;
}
