/*
 * test_cli_parsers.c - unit tests of the CLI's I/O-free parsers behind
 * `sqlbus errors import` (E2: one line of a JSONL file) and the --from /
 * --to selectors (E17, E19: a point in time).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"

static int parse(const char *line, cli_import_msg *m, sb_error *err)
{
    return cli_import_parse_line(line, strlen(line), m, err);
}

/* A text body, a base64 body (with a NUL inside), headers compacted. */
static void test_import_line_ok(void **state)
{
    (void)state;
    cli_import_msg m;
    sb_error err;
    assert_int_equal(
        parse("{\"headers\": {\"a\": \"1\"}, \"body\": \"hi\"}", &m, &err),
        SB_OK);
    assert_string_equal(m.headers_json, "{\"a\":\"1\"}");
    assert_int_equal(m.len, 2);
    assert_memory_equal(m.body, "hi", 2);
    cli_import_msg_free(&m);
    /* A text body longer than its base64 decoding would be (ASan). */
    assert_int_equal(parse("{\"headers\":{},\"body\":"
                           "\"0123456789abcdefghijklmnopqrstuvwxyz\"}",
                           &m, &err),
                     SB_OK);
    assert_int_equal(m.len, 36);
    assert_memory_equal(m.body, "0123456789abcdefghijklmnopqrstuvwxyz", 36);
    cli_import_msg_free(&m);
    assert_int_equal(
        parse("{\"headers\":{},\"body_base64\":\"YQBi\"}", &m, &err), SB_OK);
    assert_int_equal(m.len, 3);
    assert_memory_equal(m.body, "a\0b", 3);
    cli_import_msg_free(&m);
}

/* Each bad line names its field. */
static void test_import_line_errors(void **state)
{
    (void)state;
    static const struct {
        const char *line, *field;
    } cases[] = {
        {"not json", "line"},
        {"[1]", "line"},
        {"{\"headers\":{},\"body\":\"x\",\"extra\":1}", "extra"},
        {"{\"body\":\"x\"}", "headers"},
        {"{\"headers\":{\"a\":1},\"body\":\"x\"}", "headers.a"},
        {"{\"headers\":[],\"body\":\"x\"}", "headers"},
        {"{\"headers\":{},\"body\":\"x\",\"body_base64\":\"eA==\"}", "body"},
        {"{\"headers\":{},\"body_base64\":\"***\"}", "body_base64"},
        {"{\"headers\":{},\"body\":5}", "body"},
        {"{\"headers\":{},\"headers\":{},\"body\":\"x\"}", "line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_import_msg m;
        sb_error err;
        memset(&err, 0, sizeof err);
        int rc = parse(cases[i].line, &m, &err);
        if (rc != SB_INVALID || strcmp(err.field, cases[i].field) != 0)
            fail_msg("%s: rc %d field \"%s\" (want \"%s\"): %s", cases[i].line,
                     rc, err.field, cases[i].field, err.message);
        assert_true(err.message[0] != '\0');
    }
}

static void test_base64(void **state)
{
    (void)state;
    unsigned char out[16];
    assert_int_equal(cli_base64_decode("aGVsbG8=", 8, out), 5);
    assert_memory_equal(out, "hello", 5);
    assert_int_equal(cli_base64_decode("aGVsbG8", 7, out), 5);
    assert_int_equal(cli_base64_decode("", 0, out), 0);
    assert_int_equal(cli_base64_decode("a", 1, out), -1);
    assert_int_equal(cli_base64_decode("aG=s", 4, out), -1);
    assert_int_equal(cli_base64_decode("aG Vs", 5, out), -1);
}

/* ISO 8601 (UTC, offsets, fractions, a date alone) and Unix seconds, and
 * what is neither. */
static void test_time(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t us;
    } ok[] = {
        {"2026-01-02T03:04:05Z", 1767323045000000LL},
        {"2026-01-02T03:04:05.5Z", 1767323045500000LL},
        {"2026-01-02T05:04:05+02:00", 1767323045000000LL},
        {"2026-01-02", 1767312000000000LL},
        {"1767323045", 1767323045000000LL},
        {"1970-01-01T00:00:00Z", 0},
        {"2024-02-29T00:00:00Z", 1709164800000000LL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t us = -7;
        if (cli_parse_time_us(ok[i].text, &us) != 0 || us != ok[i].us)
            fail_msg("%s: got %lld", ok[i].text, (long long)us);
    }
    static const char *const bad[] = {"",
                                      "yesterday",
                                      "2026-13-01",
                                      "2026-02-30T00:00:00Z",
                                      "2025-02-29",
                                      "2026-01-02T25:00:00Z",
                                      "2026-01-02T03:04",
                                      "12abc",
                                      "-5",
                                      "2026-01-02T03:04:05+2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t us = 0;
        if (cli_parse_time_us(bad[i], &us) == 0)
            fail_msg("\"%s\" was accepted as %lld", bad[i], (long long)us);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_line_ok),
        cmocka_unit_test(test_import_line_errors),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
