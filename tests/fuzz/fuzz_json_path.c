/*
 * fuzz_json_path.c - libFuzzer target for the JSON path extractor
 * (sb__json_path_check, sb__json_extract_text, sb__json_extract; rule C24).
 *
 * Input: "PATH|PATH|...\nDOCUMENT" (up to 8 paths), or, with no newline,
 * the whole input is the document and a fixed list of paths is used.
 *
 * Invariants: the document is passed in an exact-size copy, so ASan sees
 * any read past its length; the result codes are the documented ones and
 * the error names the right field; the budget is checked before anything
 * else (one byte under the size is always SB_TOOBIG); a bad path always
 * makes the extraction SB_INVALID naming "path"; the same input gives the
 * same answer twice; sb__json_extract answers what sb__json_extract_text
 * does, with a value only if it is a valid correlation id; a value is no
 * longer than the document and, when the document holds no backslash (no
 * escapes anywhere), appears in it verbatim; an optional "$." prefix
 * changes nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

#define MAX_PATHS 8
#define BUDGET ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const default_paths[] = {
    "$.headers.CorrelationId", "correlationId", "data.items[0].id",
    "body.correlationId",      "[0]",           "id",
};

/* Whether `needle` occurs in the `n` bytes at `hay`. */
static int contains(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (memcmp(hay + i, needle, k) == 0)
            return 1;
    return 0;
}

static int is_field(const sb_error *e, const char *field)
{
    return strcmp(e->field, field) == 0;
}

/* One extraction, checked; returns rc and leaves the value in *out. */
static int extract(const char *doc, size_t len, const char *const *paths,
                   size_t n, size_t budget, int validate, char **out)
{
    sb_error err;
    memset(&err, 0, sizeof err);
    *out = (char *)"sentinel";
    int rc = validate
                 ? sb__json_extract(doc, len, paths, n, budget, out, &err)
                 : sb__json_extract_text(doc, len, paths, n, budget, out, &err);
    if (rc == SB_OK) {
        CHECK(*out != NULL);
        CHECK(strlen(*out) <= len);
        return rc;
    }
    CHECK(*out == NULL);
    CHECK(err.code == rc);
    CHECK(err.message[0] != '\0');
    switch (rc) {
    case SB_TOOBIG: CHECK(is_field(&err, "payload")); break;
    case SB_NOTFOUND: CHECK(is_field(&err, "payload")); break;
    case SB_INVALID:
        CHECK(is_field(&err, "payload") || is_field(&err, "path") ||
              (validate && is_field(&err, "correlation_id")));
        break;
    default: CHECK(!"unexpected result code");
    }
    return rc;
}

static void check_paths(const char *doc, size_t len, const char *const *paths,
                        size_t n)
{
    int any_bad = 0;
    for (size_t i = 0; i < n; i++) {
        sb_error err;
        memset(&err, 0, sizeof err);
        int prc = sb__json_path_check(paths[i], &err);
        CHECK(prc == SB_OK || prc == SB_INVALID);
        if (prc != SB_OK) {
            CHECK(is_field(&err, "path"));
            any_bad = 1;
        }
    }

    char *text, *again, *id;
    int rc = extract(doc, len, paths, n, BUDGET, 0, &text);
    if (any_bad)
        CHECK(rc == SB_INVALID);

    /* The budget comes first: whatever the paths and the bytes. */
    if (len > 0) {
        char *none;
        CHECK(extract(doc, len, paths, n, len - 1, 0, &none) == SB_TOOBIG);
        CHECK(extract(doc, len, paths, n, len - 1, 1, &none) == SB_TOOBIG);
    }
    /* Deterministic, and the budget changes nothing else. */
    CHECK(extract(doc, len, paths, n, len, 0, &again) == rc);
    if (rc == SB_OK) {
        CHECK(strcmp(again, text) == 0);
        sb__free(again);
    }
    /* The validating form: the same value, if it is a correlation id. */
    int irc = extract(doc, len, paths, n, BUDGET, 1, &id);
    if (rc == SB_OK) {
        if (sb_validate_correlation_id(text, NULL) == SB_OK) {
            CHECK(irc == SB_OK);
            CHECK(strcmp(id, text) == 0);
        } else {
            CHECK(irc == SB_INVALID);
        }
    } else {
        CHECK(irc == rc);
    }
    if (irc == SB_OK) {
        CHECK(sb_validate_correlation_id(id, NULL) == SB_OK);
        sb__free(id);
    }
    if (rc != SB_OK)
        return;

    /* Without escapes in the document, a value is a piece of it. */
    if (memchr(doc, '\\', len) == NULL)
        CHECK(contains(doc, len, text));

    /* "$." in front of each path that lacks it changes nothing. */
    char prefixed[MAX_PATHS][SB_JSON_PATH_MAX + 3];
    const char *pp[MAX_PATHS];
    for (size_t i = 0; i < n; i++) {
        pp[i] = paths[i];
        if (paths[i][0] == '$' || strlen(paths[i]) > SB_JSON_PATH_MAX - 2)
            continue;
        snprintf(prefixed[i], sizeof prefixed[i], "$.%s", paths[i]);
        pp[i] = prefixed[i];
    }
    CHECK(extract(doc, len, pp, n, BUDGET, 0, &again) == SB_OK);
    CHECK(strcmp(again, text) == 0);
    sb__free(again);
    sb__free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t head = nl != NULL ? (size_t)(nl - data) : 0;
    size_t len = nl != NULL ? size - head - 1 : size;

    /* Exact-size copy of the document, so an overread is caught. */
    char *doc = malloc(len ? len : 1);
    char *list = malloc(head + 1);
    if (doc == NULL || list == NULL) {
        free(doc);
        free(list);
        return 0;
    }
    memcpy(doc, data + size - len, len);
    memcpy(list, data, head);
    list[head] = '\0';

    const char *paths[MAX_PATHS];
    size_t n = 0;
    if (nl == NULL) {
        n = sizeof default_paths / sizeof default_paths[0];
        memcpy(paths, default_paths, sizeof default_paths);
    } else {
        char *p = list;
        for (;;) {
            char *bar = strchr(p, '|');
            if (n < MAX_PATHS)
                paths[n++] = p;
            if (bar == NULL)
                break;
            *bar = '\0';
            p = bar + 1;
        }
    }
    check_paths(doc, len, paths, n);

    free(doc);
    free(list);
    return 0;
}
