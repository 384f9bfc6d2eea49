/*
 * test_json_path.c - unit tests of src/core/json_path.c, the extractor
 * behind rule C24 (the correlation id of a raw reply, taken from JSON paths
 * in its payload) and `sqlbus request --until PATH=VALUE` (C25): the size
 * budget checked before parsing, paths tried in order, case-insensitive
 * names with exact case preferred, JSON strings unwrapped (bounded),
 * arrays, integers, correlation-id validation (C7), path syntax errors and
 * a "fail the Nth allocation" walk (style rule 7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"
#include "failalloc.h"

#define BIG ((size_t)1 << 20)

/* ------------------------------------------------------------------ */
/* helpers */

/* A fresh sb_error filled with junk, so a test sees what the callee wrote. */
static sb_error junk_error(void)
{
    sb_error e;
    memset(&e, 'Z', sizeof e);
    e.code = -77;
    e.field[sizeof e.field - 1] = '\0';
    e.message[sizeof e.message - 1] = '\0';
    return e;
}

/* Extract with one path from a NUL-terminated document; `validate` picks
 * sb__json_extract over sb__json_extract_text. */
static int one(const char *doc, const char *path, int validate, char **out,
               sb_error *e)
{
    const char *paths[] = {path};
    return validate
               ? sb__json_extract(doc, strlen(doc), paths, 1, BIG, out, e)
               : sb__json_extract_text(doc, strlen(doc), paths, 1, BIG, out, e);
}

/* `path` in `doc` must give `want` (NULL: SB_NOTFOUND), with and without
 * the correlation-id check. */
static void expect(const char *doc, const char *path, const char *want)
{
    for (int validate = 0; validate <= 1; validate++) {
        char *out = (char *)"sentinel";
        sb_error e = junk_error();
        int rc = one(doc, path, validate, &out, &e);
        if (want == NULL) {
            if (rc != SB_NOTFOUND)
                fail_msg("%s in %s: rc %d, want SB_NOTFOUND", path, doc, rc);
            assert_null(out);
            assert_int_equal(e.code, SB_NOTFOUND);
            assert_string_equal(e.field, "payload");
            assert_non_null(strstr(e.message, path));
            continue;
        }
        if (rc != SB_OK)
            fail_msg("%s in %s: rc %d (%s), want \"%s\"", path, doc, rc,
                     e.message, want);
        assert_string_equal(out, want);
        sb__free(out);
    }
}

/* `doc` as a JSON string literal (quotes and backslashes escaped), under
 * the member "n" of a new object: {"n":"<doc escaped>"}. Libc-owned. */
static char *wrap(const char *doc)
{
    size_t n = strlen(doc), k = 0;
    char *s = malloc(2 * n + 16);
    assert_non_null(s);
    memcpy(s, "{\"n\":\"", 6);
    k = 6;
    for (size_t i = 0; i < n; i++) {
        if (doc[i] == '"' || doc[i] == '\\')
            s[k++] = '\\';
        s[k++] = doc[i];
    }
    memcpy(s + k, "\"}", 3);
    return s;
}

/* ------------------------------------------------------------------ */
/* the size budget (C24) */

static void test_budget_checked_first(void **state)
{
    (void)state;
    const char *paths[] = {"id"};
    char *out = (char *)"sentinel";
    sb_error e = junk_error();
    /* over budget and not JSON at all: the budget speaks, nothing parses */
    const char *junk = "this is not { JSON";
    int rc = sb__json_extract(junk, strlen(junk), paths, 1, 5, &out, &e);
    assert_int_equal(rc, SB_TOOBIG);
    assert_null(out);
    assert_int_equal(e.code, SB_TOOBIG);
    assert_string_equal(e.field, "payload");
    assert_non_null(strstr(e.message, "18"));  /* the size */
    assert_non_null(strstr(e.message, " 5 ")); /* and the budget */
    /* before the paths are looked at, too */
    const char *bad[] = {"a..b"};
    assert_int_equal(
        sb__json_extract_text(junk, strlen(junk), bad, 1, 17, &out, NULL),
        SB_TOOBIG);
    /* a NUL byte past the budget is not read either */
    assert_int_equal(
        sb__json_extract_text("{\"id\":\"x\"}\0", 11, paths, 1, 10, &out, NULL),
        SB_TOOBIG);

    /* exactly at the budget is fine; one byte over is not */
    const char *doc = "{\"id\":\"x\"}";
    rc = sb__json_extract(doc, strlen(doc), paths, 1, strlen(doc), &out, &e);
    assert_int_equal(rc, SB_OK);
    assert_string_equal(out, "x");
    sb__free(out);
    rc =
        sb__json_extract(doc, strlen(doc), paths, 1, strlen(doc) - 1, &out, &e);
    assert_int_equal(rc, SB_TOOBIG);
    assert_null(out);
}

/* ------------------------------------------------------------------ */
/* paths */

static void test_paths_in_order(void **state)
{
    (void)state;
    const char *doc = "{\"a\":{\"id\":\"first\"},\"b\":\"second\",\"c\":7}";
    char *out = NULL;
    const char *p1[] = {"missing", "b", "a.id"};
    assert_int_equal(sb__json_extract(doc, strlen(doc), p1, 3, BIG, &out, NULL),
                     SB_OK);
    assert_string_equal(out, "second");
    sb__free(out);
    const char *p2[] = {"a.id", "b"};
    assert_int_equal(sb__json_extract(doc, strlen(doc), p2, 2, BIG, &out, NULL),
                     SB_OK);
    assert_string_equal(out, "first");
    sb__free(out);
    /* a path to an object or a missing value yields nothing: go on */
    const char *p3[] = {"a", "a.nope", "c"};
    assert_int_equal(sb__json_extract(doc, strlen(doc), p3, 3, BIG, &out, NULL),
                     SB_OK);
    assert_string_equal(out, "7");
    sb__free(out);
    /* none matches */
    sb_error e = junk_error();
    const char *p4[] = {"x", "y.z"};
    assert_int_equal(sb__json_extract(doc, strlen(doc), p4, 2, BIG, &out, &e),
                     SB_NOTFOUND);
    assert_null(out);
    assert_string_equal(e.field, "payload");
    assert_non_null(strstr(e.message, "2 paths"));

    /* "$." is optional */
    expect(doc, "$.a.id", "first");
    expect(doc, "$.b", "second");
    expect("{\"$\":\"dollar\",\"$x\":\"y\"}", "$x", "y");
    expect("{\"$\":{\"a\":\"z\"}}", "$.$.a", "z");
    /* member names may hold anything but '.', '[' and ']' */
    expect("{\"sb-correlation-id\":\"q\",\"with space\":\"s\","
           "\"caf\xc3\xa9\":\"e\"}",
           "SB-Correlation-Id", "q");
    expect("{\"with space\":\"s\"}", "with space", "s");
    expect("{\"caf\xc3\xa9\":\"e\"}", "caf\xc3\xa9", "e");
}

static void test_case_rules(void **state)
{
    (void)state;
    const char *doc = "{\"Headers\":{\"CorrelationId\":\"c-1\"}}";
    expect(doc, "$.headers.CorrelationId", "c-1");
    expect(doc, "HEADERS.correlationid", "c-1");
    expect(doc, "headers.correlation_id", NULL);

    /* the exact-case member wins wherever it stands */
    const char *two = "{\"ID\":\"upper\",\"id\":\"lower\"}";
    expect(two, "id", "lower");
    expect(two, "ID", "upper");
    /* no exact match: the first in document order */
    expect(two, "Id", "upper");
    expect("{\"iD\":\"first\",\"Id\":\"second\"}", "id", "first");
    expect("{\"Id\":\"second\",\"iD\":\"first\"}", "id", "second");
    /* ... and on the way down too */
    expect("{\"A\":{\"x\":\"1\"},\"a\":{\"x\":\"2\"}}", "a.x", "2");
    expect("{\"A\":{\"x\":\"1\"},\"b\":{\"x\":\"2\"}}", "a.x", "1");
    /* a case-insensitive match is taken even when it leads nowhere,
     * rather than searching on for another spelling */
    expect("{\"A\":{\"y\":\"1\"},\"B\":1,\"aa\":2}", "a.x", NULL);

    /* ASCII only: no Unicode case folding */
    expect("{\"\xc3\x89T\xc3\x89\":\"summer\"}", "\xc3\xa9t\xc3\xa9", NULL);
    expect("{\"\xc3\x89T\xc3\x89\":\"summer\"}", "\xc3\x89t\xc3\x89", "summer");
    /* a prefix is not a match */
    expect("{\"ident\":\"x\"}", "id", NULL);
    expect("{\"id\":\"x\"}", "ident", NULL);
}

/* ------------------------------------------------------------------ */
/* JSON strings that hold JSON (C24) */

static void test_nested_strings(void **state)
{
    (void)state;
    /* one level, with the name's case differing */
    const char *one_level =
        "{\"Body\":\"{\\\"correlationId\\\":\\\"abc\\\"}\"}";
    expect(one_level, "body.correlationId", "abc");
    expect(one_level, "$.BODY.CORRELATIONID", "abc");
    /* the string itself, when it is the final value, is taken as is */
    expect(one_level, "Body", "{\"correlationId\":\"abc\"}");

    /* two levels, the inner one an array */
    const char *two = "{\"msg\":\"{\\\"body\\\":\\\"[{\\\\\\\"id\\\\\\\":"
                      "\\\\\\\"deep\\\\\\\"}]\\\"}\"}";
    expect(two, "msg.body[0].id", "deep");
    expect(two, "msg.body", "[{\"id\":\"deep\"}]");

    /* white space before the inner document is allowed */
    expect("{\"b\":\" \\n {\\\"x\\\":1}\"}", "b.x", "1");
    /* a string that is not a JSON document is just a string */
    expect("{\"b\":\"{oops\"}", "b.x", NULL);
    expect("{\"b\":\"{oops\"}", "b", "{oops");
    expect("{\"b\":\"42\"}", "b.x", NULL);
    /* a JSON scalar inside a string is not unwrapped */
    expect("{\"b\":\"\\\"x\\\"\"}", "b", "\"x\"");
    /* the whole document may be such a string */
    expect("\"{\\\"id\\\":\\\"r\\\"}\"", "id", "r");
    expect("\"{\\\"id\\\":\\\"r\\\"}\"", "[0]", NULL);
}

static void test_unwrap_depth(void **state)
{
    (void)state;
    /* Level k wraps {"c":"deep"} k times: {"n":"{\"n\":...}"}; the path
     * n.n...n.c (k times "n") walks into k strings. SB_JSON_UNWRAP_MAX of
     * them are walked into; one more is not. */
    char *doc = strdup("{\"c\":\"deep\"}");
    assert_non_null(doc);
    char path[4 * SB_JSON_UNWRAP_MAX + 8] = "";
    for (int level = 1; level <= SB_JSON_UNWRAP_MAX + 1; level++) {
        char *outer = wrap(doc);
        free(doc);
        doc = outer;
        size_t k = strlen(path);
        memcpy(path + k, "n.c", 4);
        expect(doc, path, level <= SB_JSON_UNWRAP_MAX ? "deep" : NULL);
        path[k + 2] = '\0'; /* keep "n." for the next level */
    }
    free(doc);
}

/* ------------------------------------------------------------------ */
/* arrays and integers */

static void test_arrays(void **state)
{
    (void)state;
    const char *doc = "{\"data\":{\"items\":[{\"id\":\"i0\"},{\"id\":\"i1\"}],"
                      "\"m\":[[1,2],[3,\"x\"]]}}";
    expect(doc, "data.items[0].id", "i0");
    expect(doc, "$.data.items[1].id", "i1");
    expect(doc, "data.items[2].id", NULL);
    expect(doc, "data.m[1][1]", "x");
    expect(doc, "data.m[0][1]", "2");
    expect(doc, "data.m[1][2]", NULL);
    expect(doc, "data.items.id", NULL); /* no index: not an object */
    expect(doc, "data[0]", NULL);       /* an index into an object */
    expect(doc, "data.items[00].id", "i0");
    /* the document may be an array */
    expect("[\"a\",{\"id\":7}]", "[0]", "a");
    expect("[\"a\",{\"id\":7}]", "$[1].id", "7");
    expect("[\"a\",{\"id\":7}]", "$.[1].ID", "7");
    expect("[\"a\"]", "a", NULL);
}

static void test_integers(void **state)
{
    (void)state;
    expect("{\"id\":42}", "id", "42");
    expect("{\"id\":-7}", "id", "-7");
    expect("{\"id\":0}", "id", "0");
    expect("{\"id\":9223372036854775807}", "id", "9223372036854775807");
    expect("{\"id\":-9223372036854775808}", "id", "-9223372036854775808");
    /* anything else is not a value */
    expect("{\"id\":4.5}", "id", NULL);
    expect("{\"id\":1.0}", "id", NULL);
    expect("{\"id\":1e3}", "id", NULL);
    expect("{\"id\":true}", "id", NULL);
    expect("{\"id\":null}", "id", NULL);
    expect("{\"id\":{}}", "id", NULL);
    expect("{\"id\":[\"x\"]}", "id", NULL);
    /* a scalar document has no members */
    expect("42", "id", NULL);
    expect("\"text\"", "id", NULL);
}

/* ------------------------------------------------------------------ */
/* the value must be a correlation id (C7) */

static void test_invalid_ids(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"id\":\"\"}",
        "{\"id\":\" lead\"}",
        "{\"id\":\"trail\\t\"}",
        "{\"id\":\"ctl\\u0001x\"}",
        "{\"id\":\"del\\u007fx\"}",
        "{\"id\":\"c1\\u0085x\"}",
        "{\"id\":\"line\\nbreak\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = (char *)"sentinel";
        sb_error e = junk_error();
        if (one(bad[i], "id", 1, &out, &e) != SB_INVALID)
            fail_msg("accepted %s", bad[i]);
        assert_null(out);
        assert_string_equal(e.field, "correlation_id");
        /* the text form takes it as it is */
        assert_int_equal(one(bad[i], "id", 0, &out, NULL), SB_OK);
        sb__free(out);
    }
    /* the first path with a value decides, even when that value is bad */
    const char *doc = "{\"a\":\"\",\"b\":\"good\"}";
    const char *paths[] = {"a", "b"};
    char *out = NULL;
    sb_error e = junk_error();
    assert_int_equal(
        sb__json_extract(doc, strlen(doc), paths, 2, BIG, &out, &e),
        SB_INVALID);
    assert_string_equal(e.field, "correlation_id");

    /* 400 bytes is the limit (C7) */
    char big[520];
    memcpy(big, "{\"id\":\"", 7);
    memset(big + 7, 'x', 400);
    memcpy(big + 407, "\"}", 3);
    assert_int_equal(one(big, "id", 1, &out, NULL), SB_OK);
    assert_int_equal(strlen(out), 400);
    sb__free(out);
    memset(big + 7, 'x', 401);
    memcpy(big + 408, "\"}", 3);
    e = junk_error();
    assert_int_equal(one(big, "id", 1, &out, &e), SB_INVALID);
    assert_null(out);
    assert_string_equal(e.field, "correlation_id");
    assert_non_null(strstr(e.message, "401"));
}

/* ------------------------------------------------------------------ */
/* errors */

static void test_bad_paths(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        const char *says;
    } bad[] = {
        {"", "empty"},
        {"$", "names no member"},
        {"a..b", "empty member name"},
        {".a", "empty member name"},
        {"a.", "empty member name"},
        {"$.", "empty member name"},
        {"a.[0]", "empty member name"},
        {"a[", "[digits]"},
        {"a[]", "[digits]"},
        {"a[x]", "[digits]"},
        {"a[-1]", "[digits]"},
        {"a[1", "[digits]"},
        {"a[1 ]", "[digits]"},
        {"a[1234567890]", "too large"},
        {"a]", "']' without '['"},
        {"a[0]b", "after ']'"},
        {"a\tb", "control characters"},
        {"a\x7f", "control characters"},
        {"caf\xc3", "UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_error e = junk_error();
        if (sb__json_path_check(bad[i].path, &e) != SB_INVALID)
            fail_msg("accepted path \"%s\"", bad[i].path);
        assert_int_equal(e.code, SB_INVALID);
        assert_string_equal(e.field, "path");
        if (strstr(e.message, bad[i].says) == NULL)
            fail_msg("path \"%s\": \"%s\" does not say \"%s\"", bad[i].path,
                     e.message, bad[i].says);
    }
    sb_error e = junk_error();
    assert_int_equal(sb__json_path_check(NULL, &e), SB_INVALID);
    assert_string_equal(e.field, "path");

    static const char *const good[] = {
        "a",
        "$.a",
        "a.b.c",
        "a[0]",
        "a[0][12].b",
        "[3]",
        "$[3].x",
        "$.[3]",
        "$a",
        "with space",
        "sb-correlation-id",
        "caf\xc3\xa9",
        "a[999999999]",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        e = junk_error();
        if (sb__json_path_check(good[i], &e) != SB_OK)
            fail_msg("rejected path \"%s\": %s", good[i], e.message);
    }

    /* the length and step limits */
    char long_path[SB_JSON_PATH_MAX + 2];
    memset(long_path, 'a', sizeof long_path);
    long_path[SB_JSON_PATH_MAX] = '\0';
    assert_int_equal(sb__json_path_check(long_path, NULL), SB_OK);
    long_path[SB_JSON_PATH_MAX] = 'a';
    long_path[SB_JSON_PATH_MAX + 1] = '\0';
    e = junk_error();
    assert_int_equal(sb__json_path_check(long_path, &e), SB_INVALID);
    assert_non_null(strstr(e.message, "513"));
    /* "a.a.a...": one step more than the limit, then exactly the limit */
    char steps[2 * SB_JSON_PATH_STEPS + 4];
    size_t k = 0;
    for (int i = 0; i <= SB_JSON_PATH_STEPS; i++) {
        if (i > 0)
            steps[k++] = '.';
        steps[k++] = 'a';
    }
    steps[k] = '\0';
    e = junk_error();
    assert_int_equal(sb__json_path_check(steps, &e), SB_INVALID);
    assert_non_null(strstr(e.message, "too many steps"));
    assert_int_equal(sb__json_path_check(steps + 2, NULL), SB_OK);
}

static void test_extract_rejects(void **state)
{
    (void)state;
    const char *doc = "{\"id\":\"x\"}";
    char *out = (char *)"sentinel";
    sb_error e = junk_error();
    /* a bad path is reported even when an earlier one matches */
    const char *paths[] = {"id", "a..b"};
    assert_int_equal(
        sb__json_extract(doc, strlen(doc), paths, 2, BIG, &out, &e),
        SB_INVALID);
    assert_null(out);
    assert_string_equal(e.field, "path");
    assert_non_null(strstr(e.message, "a..b"));
    /* no paths, too many paths */
    e = junk_error();
    assert_int_equal(
        sb__json_extract(doc, strlen(doc), paths, 0, BIG, &out, &e),
        SB_INVALID);
    assert_string_equal(e.field, "path");
    const char *many[SB_JSON_PATHS_MAX + 1];
    for (size_t i = 0; i <= SB_JSON_PATHS_MAX; i++)
        many[i] = "nope";
    many[SB_JSON_PATHS_MAX - 1] = "id";
    assert_int_equal(sb__json_extract(doc, strlen(doc), many, SB_JSON_PATHS_MAX,
                                      BIG, &out, NULL),
                     SB_OK);
    assert_string_equal(out, "x");
    sb__free(out);
    assert_int_equal(sb__json_extract(doc, strlen(doc), many,
                                      SB_JSON_PATHS_MAX + 1, BIG, &out, NULL),
                     SB_INVALID);
}

static void test_not_json(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "{",
        "{\"id\":\"x\"",
        "{\"id\":\"x\"} trailing",
        "{id:\"x\"}",
        "{\"id\":'x'}",
        "{\"id\":\"\xff\"}",
        "{\"id\":\"\\u0000\"}",
        "{\"id\":\"x\",}",
        "nul",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = (char *)"sentinel";
        sb_error e = junk_error();
        if (one(bad[i], "id", 1, &out, &e) != SB_INVALID)
            fail_msg("took %s as JSON", bad[i]);
        assert_null(out);
        assert_string_equal(e.field, "payload");
        assert_non_null(strstr(e.message, "JSON"));
    }
    const char *paths[] = {"id"};
    char *out = NULL;
    sb_error e = junk_error();
    /* a NUL byte inside the length */
    assert_int_equal(
        sb__json_extract("{\"id\":\"x\"}\0", 11, paths, 1, BIG, &out, &e),
        SB_INVALID);
    assert_string_equal(e.field, "payload");
    assert_non_null(strstr(e.message, "NUL"));
    assert_int_equal(
        sb__json_extract("{\"id\":\0\"x\"}", 11, paths, 1, BIG, &out, NULL),
        SB_INVALID);
    /* the length bounds the document: bytes after it are not read */
    const char *withtail = "{\"id\":\"x\"}garbage";
    assert_int_equal(sb__json_extract(withtail, 10, paths, 1, BIG, &out, NULL),
                     SB_OK);
    assert_string_equal(out, "x");
    sb__free(out);
    assert_int_equal(sb__json_extract(withtail, 9, paths, 1, BIG, &out, NULL),
                     SB_INVALID);
    /* an empty document with no pointer */
    assert_int_equal(sb__json_extract(NULL, 0, paths, 1, BIG, &out, NULL),
                     SB_INVALID);
}

/* ------------------------------------------------------------------ */
/* fail the Nth allocation (style rule 7) */

static int fa_setup(void **state)
{
    (void)state;
    fa_install();
    return 0;
}

static int fa_teardown(void **state)
{
    (void)state;
    fa_uninstall();
    return 0;
}

/* An extraction that parses, unwraps twice and copies the result. */
static int op_extract(void)
{
    const char *doc =
        "{\"other\":[1,2,3],\"Msg\":\"{\\\"body\\\":\\\"{\\\\\\\"Id\\\\\\\":"
        "\\\\\\\"long enough to grow the lexer buffer, surely\\\\\\\"}\\\"}\"}";
    const char *paths[] = {"nope", "msg.body.id"};
    char *out = (char *)"sentinel";
    sb_error e = junk_error();
    int rc = sb__json_extract(doc, strlen(doc), paths, 2, BIG, &out, &e);
    if (rc != SB_OK) {
        assert_null(out);
        assert_int_equal(e.code, rc);
        return rc;
    }
    assert_string_equal(out, "long enough to grow the lexer buffer, surely");
    sb__free(out);
    return SB_OK;
}

static void test_alloc_fail_nth(void **state)
{
    (void)state;
    fa_arm(0);
    assert_int_equal(op_extract(), SB_OK);
    long clean_calls = fa_disarm();
    assert_true(clean_calls >= 5);
    long n;
    for (n = 1; n <= clean_calls; n++) {
        long live0 = fa_live(), failed0 = fa_failed();
        fa_arm(n);
        int rc = op_extract();
        fa_disarm();
        if (fa_live() != live0)
            fail_msg("failing allocation %ld leaked %ld block(s)", n,
                     fa_live() - live0);
        assert_int_equal(fa_failed(), failed0 + 1);
        if (rc != SB_NOMEM)
            fail_msg("failing allocation %ld gave rc %d, want SB_NOMEM", n, rc);
    }
    assert_int_equal(fa_live(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_checked_first),
        cmocka_unit_test(test_paths_in_order),
        cmocka_unit_test(test_case_rules),
        cmocka_unit_test(test_nested_strings),
        cmocka_unit_test(test_unwrap_depth),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_invalid_ids),
        cmocka_unit_test(test_bad_paths),
        cmocka_unit_test(test_extract_rejects),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test_setup_teardown(test_alloc_fail_nth, fa_setup,
                                        fa_teardown),
    };
    return cmocka_run_group_tests_name("json_path", tests, NULL, NULL);
}
