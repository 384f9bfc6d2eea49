/*
 * fuzz_check.h - shared by the fuzz targets: the invariant check that
 * aborts (so libFuzzer and the corpus replay both report it) and a
 * reference UTF-8 validator written straight from RFC 3629, to compare
 * the library's answers against.
 */
#ifndef SB_FUZZ_CHECK_H
#define SB_FUZZ_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                               \
    do {                                                                       \
        if (!(x)) {                                                            \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__,         \
                    __LINE__, #x);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* RFC 3629 table 3.9: well-formed UTF-8 byte sequences. */
static inline bool ref_utf8(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        unsigned char lo = 0x80, hi = 0xbf;
        size_t n;
        if (c <= 0x7f) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
        } else if (c == 0xe0) {
            n = 2, lo = 0xa0;
        } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
            n = 2;
        } else if (c == 0xed) {
            n = 2, hi = 0x9f;
        } else if (c == 0xf0) {
            n = 3, lo = 0x90;
        } else if (c >= 0xf1 && c <= 0xf3) {
            n = 3;
        } else if (c == 0xf4) {
            n = 3, hi = 0x8f;
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return false;
        i += n + 1;
    }
    return true;
}

#endif
