/*
 * fuzz_size.c - libFuzzer target for sb_parse_size.
 *
 * Invariants: SB_OK or SB_INVALID only; output untouched and the "size"
 * field named on failure; an accepted text is digits plus a known unit,
 * its value matches reference arithmetic, and printed back as bytes
 * ("N" and "NB") it parses to the same value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The multiplier of a unit, or 0 when the unit is unknown. */
static uint64_t unit_mul(const char *u)
{
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"KB", 1000},
                 {"KiB", 1024},
                 {"MB", 1000000},
                 {"MiB", UINT64_C(1) << 20},
                 {"GB", 1000000000},
                 {"GiB", UINT64_C(1) << 30}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].unit) == 0)
            return units[i].mul;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    const uint64_t sentinel = UINT64_C(0xdeadbeefcafe);
    uint64_t bytes = sentinel;
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb_parse_size(text, &bytes, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);

    uint64_t bytes2 = sentinel;
    CHECK(sb_parse_size(text, &bytes2, NULL) == rc);
    CHECK(bytes2 == bytes);

    size_t digits = strspn(text, "0123456789");
    if (rc != SB_OK) {
        CHECK(bytes == sentinel);
        CHECK(err.code == SB_INVALID);
        CHECK(strcmp(err.field, "size") == 0);
        CHECK(err.message[0] != '\0');
        /* A known unit after digits can only fail by overflow. */
        if (digits > 0 && unit_mul(text + digits) != 0)
            CHECK(strstr(err.message, "too large") != NULL);
    } else {
        CHECK(digits > 0);
        uint64_t mul = unit_mul(text + digits);
        CHECK(mul != 0);
        /* Reference arithmetic with explicit overflow checks. */
        uint64_t v = 0;
        for (size_t i = 0; i < digits; i++) {
            uint64_t d = (uint64_t)(text[i] - '0');
            CHECK(v <= (UINT64_MAX - d) / 10); /* else it had to fail */
            v = v * 10 + d;
        }
        CHECK(v <= UINT64_MAX / mul);
        CHECK(bytes == v * mul);

        char again[64];
        snprintf(again, sizeof again, "%llu", (unsigned long long)bytes);
        uint64_t back = sentinel;
        CHECK(sb_parse_size(again, &back, NULL) == SB_OK);
        CHECK(back == bytes);
        snprintf(again, sizeof again, "%lluB", (unsigned long long)bytes);
        back = sentinel;
        CHECK(sb_parse_size(again, &back, NULL) == SB_OK);
        CHECK(back == bytes);
    }
    free(text);
    return 0;
}
