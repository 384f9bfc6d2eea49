/*
 * fuzz_body.c - libFuzzer target for body placement (sb__body_place, rule
 * E7).
 *
 * Input: one byte giving the cap (0..255), then "CONTENT-TYPE\nBODY"; with
 * no newline after the first byte there is no content type and the rest is
 * the body.
 *
 * The body is passed in an exact-size copy, so ASan sees any read past its
 * length. Text or binary is compared with a small independent reference
 * written from the rule (RFC 3629 well-formed byte sequences, the list of
 * text types), so the fuzzer finds disagreements, not only crashes. Then:
 * binary has nothing inline and is stored externally; the inline length is
 * at most the cap and the length; text within the cap is inline whole and
 * not external; longer text is external with a prefix that is valid UTF-8,
 * ends on a character boundary and is the longest such prefix within the
 * cap; upper-casing the content type or adding a parameter changes
 * nothing.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors/body.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Rule E7's text types, from the spec text: the media type (before any
 * ';', blanks trimmed, lower-cased) is absent, text/<something>,
 * application/json, /xml, /javascript, or ends in +json or +xml. */
static bool ref_text_type(const char *ct)
{
    if (ct == NULL)
        return true;
    size_t n = strcspn(ct, ";");
    char *t = malloc(n + 1);
    CHECK(t != NULL);
    size_t a = 0, b = n;
    while (a < b && (ct[a] == ' ' || ct[a] == '\t'))
        a++;
    while (b > a && (ct[b - 1] == ' ' || ct[b - 1] == '\t'))
        b--;
    for (size_t i = a; i < b; i++)
        t[i - a] = (char)tolower((unsigned char)ct[i]);
    t[b - a] = '\0';
    bool text = t[0] == '\0' || (strncmp(t, "text/", 5) == 0 && t[5] != '\0') ||
                strcmp(t, "application/json") == 0 ||
                strcmp(t, "application/xml") == 0 ||
                strcmp(t, "application/javascript") == 0 ||
                ends_with(t, "+json") || ends_with(t, "+xml");
    free(t);
    return text;
}

/* Bytes of the UTF-8 character whose lead byte is `c`. */
static size_t char_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

static bool same_place(const sb_body_place *a, const sb_body_place *b)
{
    return a->is_text == b->is_text && a->inline_text == b->inline_text &&
           a->inline_len == b->inline_len &&
           a->stored_externally == b->stored_externally;
}

static void check_place(const unsigned char *body, size_t len, const char *ct,
                        size_t cap, sb_body_place *pl)
{
    memset(pl, 0x5a, sizeof *pl);
    sb__body_place(body, len, ct, cap, pl);
    CHECK(pl->is_text == 0 || pl->is_text == 1);
    CHECK(pl->inline_text == 0 || pl->inline_text == 1);
    CHECK(pl->stored_externally == 0 || pl->stored_externally == 1);

    bool text =
        len == 0 || (ref_text_type(ct) && memchr(body, '\0', len) == NULL &&
                     ref_utf8(body, len));
    CHECK(pl->is_text == (int)text);
    CHECK(pl->inline_len <= cap);
    CHECK(pl->inline_len <= len);
    if (!text) {
        CHECK(!pl->inline_text && pl->inline_len == 0);
        CHECK(pl->stored_externally);
        return;
    }
    CHECK(pl->inline_text);
    if (len <= cap) {
        CHECK(pl->inline_len == len && !pl->stored_externally);
        return;
    }
    size_t k = pl->inline_len;
    CHECK(pl->stored_externally);
    CHECK(ref_utf8(body, k));
    CHECK((body[k] & 0xc0) != 0x80);    /* k starts a character */
    CHECK(k + char_len(body[k]) > cap); /* which would not fit */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t cap = size > 0 ? data[0] : 0;
    const uint8_t *rest = size > 0 ? data + 1 : data;
    size_t rest_len = size > 0 ? size - 1 : 0;
    const uint8_t *nl = memchr(rest, '\n', rest_len);
    size_t ct_len = nl != NULL ? (size_t)(nl - rest) : 0;
    size_t len = nl != NULL ? rest_len - ct_len - 1 : rest_len;

    /* Exact-size copy of the body, so an overread is caught. */
    unsigned char *body = malloc(len ? len : 1);
    char *ct = malloc(ct_len + 1);
    char *upper = malloc(ct_len + 1);
    char *param = malloc(ct_len + 16);
    if (body == NULL || ct == NULL || upper == NULL || param == NULL) {
        free(body);
        free(ct);
        free(upper);
        free(param);
        return 0;
    }
    memcpy(body, rest + rest_len - len, len);
    memcpy(ct, rest, ct_len);
    ct[ct_len] = '\0';

    sb_body_place pl, again;
    check_place(body, len, nl != NULL ? ct : NULL, cap, &pl);
    if (nl != NULL) {
        for (size_t i = 0; i <= ct_len; i++)
            upper[i] = (char)toupper((unsigned char)ct[i]);
        check_place(body, len, upper, cap, &again);
        CHECK(same_place(&pl, &again));
        snprintf(param, ct_len + 16, "%s; charset=x", ct);
        check_place(body, len, param, cap, &again);
        CHECK(same_place(&pl, &again));
    }

    free(body);
    free(ct);
    free(upper);
    free(param);
    return 0;
}
