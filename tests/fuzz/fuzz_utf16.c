/*
 * fuzz_utf16.c - libFuzzer target for the ODBC driver's text conversions
 * (core/utf16.c): sb__utf8_to_utf16 accepts exactly the well-formed UTF-8
 * of RFC 3629 (the reference in fuzz_check.h) and round-trips it byte for
 * byte; sb__utf16_to_utf8 takes any units, unpaired surrogates included,
 * and always gives well-formed UTF-8 that converts back to the same units
 * wherever they were well-formed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every unit of `u` is part of a well-formed UTF-16 sequence. */
static int well_formed16(const uint16_t *u, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (u[i] >= 0xd800 && u[i] <= 0xdbff) {
            if (i + 1 >= n || u[i + 1] < 0xdc00 || u[i + 1] > 0xdfff)
                return 0;
            i++;
        } else if (u[i] >= 0xdc00 && u[i] <= 0xdfff) {
            return 0;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The bytes as UTF-8. */
    uint16_t *u = NULL;
    size_t units = 0;
    int rc = sb__utf8_to_utf16((const char *)data, size, &u, &units);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    CHECK((rc == SB_OK) == ref_utf8(data, size));
    if (rc == SB_OK) {
        CHECK(u[units] == 0);
        CHECK(units <= size);
        CHECK(well_formed16(u, units));
        char *back = NULL;
        size_t len = 0;
        CHECK(sb__utf16_to_utf8(u, units, &back, &len) == SB_OK);
        CHECK(len == size && memcmp(back, data, size) == 0);
        CHECK(back[len] == '\0');
        sb__free(back);
    }
    sb__free(u);

    /* The bytes as UTF-16 units (native order), whatever they hold. */
    size_t n = size / 2;
    uint16_t *w = malloc((n ? n : 1) * sizeof *w);
    if (w == NULL)
        return 0;
    memcpy(w, data, n * sizeof *w);
    char *s = NULL;
    size_t slen = 0;
    CHECK(sb__utf16_to_utf8(w, n, &s, &slen) == SB_OK);
    CHECK(s[slen] == '\0');
    CHECK(ref_utf8((const unsigned char *)s, slen));
    uint16_t *again = NULL;
    size_t again_n = 0;
    CHECK(sb__utf8_to_utf16(s, slen, &again, &again_n) == SB_OK);
    if (well_formed16(w, n))
        CHECK(again_n == n && memcmp(again, w, n * sizeof *w) == 0);
    else
        CHECK(well_formed16(again, again_n)); /* U+FFFD in their place */
    sb__free(again);
    sb__free(s);
    free(w);
    return 0;
}
