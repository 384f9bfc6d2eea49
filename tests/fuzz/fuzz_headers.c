/*
 * fuzz_headers.c - libFuzzer target for the JSON headers façade:
 * sb__headers_validate, sb__headers_get, sb__headers_merge and
 * sb__headers_parse / sb__headers_without.
 *
 * Invariants: validate reads only `size` bytes (the input is passed in an
 * exact-size copy so ASan sees any overread) and answers SB_OK or
 * SB_INVALID naming "headers"; headers that validate can always be merged;
 * a merge result validates, re-merges to the same text, and returns the
 * values just set, case-insensitively; invalid UTF-8 values are replaced,
 * never stored. Every pair sb__headers_parse returns is found by
 * sb__headers_get, and removing all of them with sb__headers_without
 * leaves no string-valued header. sb__headers_message_type answers one
 * of its three codes, a found type is non-empty, shorter than the buffer,
 * holds no ';' or ',' and does not end in a blank, and a smaller buffer
 * finds the same type or calls it too long.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char not_utf8[] = "(value was not valid UTF-8)";

/* get(json, key) must equal `want` (NULL = absent). */
static void expect_get(const char *json, const char *key, const char *want)
{
    char *v = sb__headers_get(json, key);
    if (want == NULL) {
        CHECK(v == NULL);
    } else {
        CHECK(v != NULL);
        CHECK(strcmp(v, want) == 0);
    }
    sb__free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size copy for the length-bounded validator. */
    char *raw = malloc(size ? size : 1);
    char *text = malloc(size + 1);
    if (raw == NULL || text == NULL) {
        free(raw);
        free(text);
        return 0;
    }
    memcpy(raw, data, size);
    memcpy(text, data, size);
    text[size] = '\0';
    int has_nul = memchr(data, '\0', size) != NULL;

    sb_error err;
    memset(&err, 0, sizeof err);
    int vrc = sb__headers_validate(raw, size, &err);
    CHECK(vrc == SB_OK || vrc == SB_INVALID);
    if (vrc != SB_OK) {
        CHECK(err.code == SB_INVALID);
        CHECK(strcmp(err.field, "headers") == 0);
        CHECK(err.message[0] != '\0');
    } else {
        CHECK(size <= SB_MAX_HEADERS_BYTES);
        CHECK(sb__headers_validate(raw, size, NULL) == SB_OK);
    }

    /* Lookups on arbitrary text never crash; a found value is a string. */
    static const char *const keys[] = {"a", "sb-attempts", "Content-Type", "",
                                       "X-FUZZ"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *v = sb__headers_get(text, keys[i]);
        if (v != NULL)
            CHECK(strlen(v) <= size);
        sb__free(v);
    }

    /* A value taken from the input: up to 40 bytes, maybe not UTF-8. */
    char value[41];
    size_t vn = strlen(text);
    vn = vn > 40 ? 40 : vn;
    memcpy(value, text, vn);
    value[vn] = '\0';
    const char *stored = sb__utf8_valid(value, vn) ? value : not_utf8;

    const char *kv[] = {"sb-attempts", "7",  "X-Fuzz", value,
                        "skipped",     NULL, NULL};
    char *merged = NULL;
    memset(&err, 0, sizeof err);
    int mrc = sb__headers_merge(text, kv, &merged, &err);
    CHECK(mrc == SB_OK || mrc == SB_INVALID);
    if (vrc == SB_OK && !has_nul)
        CHECK(mrc == SB_OK); /* valid headers can always be merged */
    if (mrc != SB_OK) {
        CHECK(merged == NULL);
        CHECK(strcmp(err.field, "headers") == 0);
    } else {
        CHECK(merged != NULL);
        /* The keys just set read back under any spelling. */
        expect_get(merged, "SB-ATTEMPTS", "7");
        expect_get(merged, "x-fuzz", stored);
        /* Keys not set (or set to NULL: skipped) are left as they were. */
        char *before = sb__headers_get(text, "skipped");
        expect_get(merged, "skipped", before);
        sb__free(before);
        before = sb__headers_get(text, "a");
        expect_get(merged, "a", before);
        sb__free(before);
        /* The result is itself valid when the input was, and compact JSON
         * is a fixed point of a merge without pairs. */
        if (vrc == SB_OK && strlen(merged) <= SB_MAX_HEADERS_BYTES)
            CHECK(sb__headers_validate(merged, strlen(merged), NULL) == SB_OK);
        char *again = NULL;
        CHECK(sb__headers_merge(merged, NULL, &again, NULL) == SB_OK);
        CHECK(strcmp(again, merged) == 0);
        sb__free(again);
        sb__free(merged);
    }

    char **pairs = NULL;
    size_t npairs = 99;
    int prc = sb__headers_parse(text, &pairs, &npairs);
    CHECK(prc == SB_OK || prc == SB_INVALID);
    if (prc != SB_OK) {
        CHECK(pairs == NULL && npairs == 0);
    } else {
        CHECK(pairs != NULL && pairs[2 * npairs] == NULL);
        for (size_t i = 0; i < npairs; i++) {
            char *v = sb__headers_get(text, pairs[2 * i]);
            CHECK(v != NULL);
            sb__free(v);
        }
        char *rest = NULL;
        int wrc = sb__headers_without(text, (const char *const *)pairs,
                                      2 * npairs, &rest, NULL);
        /* (keys and values both listed: removing a value name is harmless) */
        CHECK(wrc == SB_OK || wrc == SB_INVALID);
        if (vrc == SB_OK && !has_nul)
            CHECK(wrc == SB_OK);
        if (wrc == SB_OK) {
            char **left = NULL;
            size_t nleft = 99;
            CHECK(sb__headers_parse(rest, &left, &nleft) == SB_OK);
            CHECK(nleft == 0);
            sb__headers_free(left, nleft);
            sb__free(rest);
        } else {
            CHECK(rest == NULL);
        }
        sb__headers_free(pairs, npairs);
    }

    char type[201], small[8];
    int trc = sb__headers_message_type(text, type, sizeof type);
    CHECK(trc == SB_MTYPE_NONE || trc == SB_MTYPE_FOUND ||
          trc == SB_MTYPE_TOO_LONG);
    if (trc == SB_MTYPE_FOUND) {
        size_t tn = strlen(type);
        CHECK(tn > 0 && tn < sizeof type);
        CHECK(strpbrk(type, ";,") == NULL);
        CHECK(type[tn - 1] != ' ' && type[tn - 1] != '\t');
        int src = sb__headers_message_type(text, small, sizeof small);
        CHECK(src == (tn < sizeof small ? SB_MTYPE_FOUND : SB_MTYPE_TOO_LONG));
        if (src == SB_MTYPE_FOUND)
            CHECK(strcmp(small, type) == 0);
    } else {
        CHECK(type[0] == '\0');
    }

    free(raw);
    free(text);
    return 0;
}
