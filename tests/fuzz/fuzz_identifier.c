/*
 * fuzz_identifier.c - libFuzzer target for name checks and UUID text:
 * sb_validate_queue_name (rule T3), sb__validate_identifier,
 * sb__utf8_valid and sb__uuid_normalize.
 *
 * Each answer is compared with a small independent reference written from
 * the rules (RFC 3629 well-formed byte sequences for UTF-8), so the fuzzer
 * finds disagreements, not only crashes. A UUID that normalises does so
 * idempotently, into lower case, equal to the input ignoring case.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The UTF-8 encodings of the white space beyond ASCII that a queue name
 * may not start or end with (issue 20.9): Unicode's White_Space
 * characters but U+0085 (a C1 control, refused anyway), and U+180E,
 * U+200B, U+FEFF. */
static const char *const unicode_space[] = {
    "\xc2\xa0",     "\xe1\x9a\x80", "\xe1\xa0\x8e", "\xe2\x80\x80",
    "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84",
    "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88",
    "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\x8b", "\xe2\x80\xa8",
    "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80",
    "\xef\xbb\xbf",
};

static bool ref_unicode_space_at_ends(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof unicode_space / sizeof *unicode_space; i++) {
        size_t n = strlen(unicode_space[i]);
        if (len >= n && (memcmp(name, unicode_space[i], n) == 0 ||
                         memcmp(name + len - n, unicode_space[i], n) == 0))
            return true;
    }
    return false;
}

/* Rule T3, from the spec text: 1-200 bytes of valid UTF-8, no control
 * characters (C0, DEL, C1), no leading or trailing white space (ASCII or
 * Unicode). */
static bool ref_queue_name(const char *name)
{
    size_t len = strlen(name);
    const unsigned char *p = (const unsigned char *)name;
    if (len < 1 || len > 200 || !ref_utf8(p, len))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            return false;
        if (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
            return false;
    }
    return p[0] != ' ' && p[len - 1] != ' ' &&
           !ref_unicode_space_at_ends(name, len);
}

static bool ref_identifier(const char *s, size_t max_len)
{
    size_t len = strlen(s);
    if (len == 0 || len > max_len || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

static bool ref_uuid(const char *s)
{
    if (strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The byte-level UTF-8 check sees the raw bytes, NULs included. */
    unsigned char *raw = malloc(size ? size : 1);
    char *text = malloc(size + 1);
    if (raw == NULL || text == NULL) {
        free(raw);
        free(text);
        return 0;
    }
    memcpy(raw, data, size);
    CHECK(sb__utf8_valid((const char *)raw, size) == ref_utf8(raw, size));
    memcpy(text, data, size);
    text[size] = '\0';

    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb_validate_queue_name(text, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    CHECK((rc == SB_OK) == ref_queue_name(text));
    if (rc != SB_OK) {
        CHECK(strcmp(err.field, "queue") == 0);
        CHECK(err.message[0] != '\0');
    }

    static const size_t limits[] = {1, 16, 63};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        memset(&err, 0, sizeof err);
        rc = sb__validate_identifier(text, limits[i], "table_prefix", &err);
        CHECK(rc == SB_OK || rc == SB_INVALID);
        CHECK((rc == SB_OK) == ref_identifier(text, limits[i]));
        if (rc != SB_OK) {
            CHECK(strcmp(err.field, "table_prefix") == 0);
            CHECK(strstr(err.message, "table_prefix") != NULL);
        }
    }

    char out[37], again[37];
    memset(out, 'X', sizeof out);
    rc = sb__uuid_normalize(text, out);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    CHECK((rc == SB_OK) == ref_uuid(text));
    if (rc == SB_OK) {
        CHECK(out[36] == '\0' && strlen(out) == 36);
        CHECK(strcasecmp(out, text) == 0);
        for (int i = 0; i < 36; i++)
            CHECK(!isupper((unsigned char)out[i]));
        CHECK(sb__uuid_normalize(out, again) == SB_OK);
        CHECK(memcmp(out, again, 37) == 0);
    }

    free(raw);
    free(text);
    return 0;
}
