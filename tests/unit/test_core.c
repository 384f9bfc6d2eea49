/*
 * test_core.c - unit tests of src/core: result codes and sb_error, the
 * parsers (durations, sizes), name validation (rule T3, identifiers),
 * UTF-16 conversions, UUIDv7, MD5, capped buffers, JSON headers, clocks
 * and jitter, and a "fail the Nth allocation" walk over every allocating
 * path (style rule 7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"
#include "failalloc.h"

/* ------------------------------------------------------------------ */
/* helpers */

/* A fresh sb_error filled with junk, so a test sees what the callee wrote. */
static sb_error junk_error(void)
{
    sb_error e;
    memset(&e, 'Z', sizeof e);
    e.code = -77;
    e.native = -77;
    e.sqlstate[sizeof e.sqlstate - 1] = '\0';
    e.field[sizeof e.field - 1] = '\0';
    e.message[sizeof e.message - 1] = '\0';
    return e;
}

/* A heap string of `n` copies of `c` (test-owned, libc free). */
static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* ------------------------------------------------------------------ */
/* result codes and sb_error */

/* Issue 18: every code of sqlbus.h's list has its own text and its name
 * (SB_INDETERMINATE and SB_REPLY_ERROR read "unknown result code" before
 * the list), the primary ones numbered 0.. without a gap. */
static void test_strerror_every_code(void **state)
{
    (void)state;
    static const struct {
        int rc;
        const char *name;
    } all[] = {
#define X(name, value, text) {name, #name},
        SB_RESULT_CODES(X) SB_RESULT_EXTENDED(X)
#undef X
    };
    size_t n = sizeof all / sizeof all[0];
    assert_int_equal(n, 20);
    for (size_t i = 0; i < n; i++) {
        const char *text = sb_strerror(all[i].rc);
        assert_string_equal(sb_result_name(all[i].rc), all[i].name);
        if (text[0] == '\0' || strcmp(text, "unknown result code") == 0)
            fail_msg("%s has no text", all[i].name);
        if (i <= (size_t)SB_REPLY_ERROR)
            assert_int_equal(all[i].rc, (int)i);
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(text, sb_strerror(all[j].rc));
            assert_string_not_equal(all[i].name, all[j].name);
        }
    }
    assert_string_equal(sb_strerror(SB_INDETERMINATE),
                        "outcome unknown (indeterminate)");
    assert_string_equal(sb_result_name(SB_REPLY_ERROR), "SB_REPLY_ERROR");
    /* An extended code has its own text; an unknown detail reads as its
     * class. */
    assert_string_equal(sb_strerror(SB_SCHEMA_MISMATCH),
                        "schema of the wrong shape");
    assert_string_equal(sb_result_name(SB_BACKEND | (7 << 8)), "SB_BACKEND");
    assert_string_equal(sb_strerror(SB_BACKEND | (7 << 8)),
                        sb_strerror(SB_BACKEND));
    /* unknown codes are never NULL */
    static const int unknown[] = {18, 99, 255, -1, 0x7fffffff};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_string_equal(sb_strerror(unknown[i]), "unknown result code");
        assert_string_equal(sb_result_name(unknown[i]), "SB_UNKNOWN");
    }
}

/* Issue 18: the one UTF-8-safe cut (core/text.c) every module uses: a
 * cut never ends inside a character, and sb_text drops what follows the
 * first piece that does not fit. */
static void test_utf8_cut_and_text(void **state)
{
    (void)state;
    const char *s = "a\xc3\xa9"
                    "b\xe2\x82\xac"
                    "c"; /* a é b € c */
    static const size_t want[] = {0, 1, 1, 3, 4, 4, 4, 7, 8};
    for (size_t n = 0; n < sizeof want / sizeof want[0]; n++)
        if (sb__utf8_cut(s, n) != want[n])
            fail_msg("cut at %zu: %zu, want %zu", n, sb__utf8_cut(s, n),
                     want[n]);
    char out[6];
    sb_text t;
    sb__text_init(&t, out, sizeof out);
    sb__text_put(&t, "a", 1);
    sb__text_put(&t, s + 1, strlen(s + 1)); /* "éb€c": é, b fit, € not */
    assert_string_equal(out, "a\xc3\xa9"
                             "b");
    assert_true(t.full);
    sb__text_put(&t, "z", 1); /* dropped once full */
    assert_string_equal(out, "a\xc3\xa9"
                             "b");
    sb__text_init(&t, NULL, 0);
    sb__text_put(&t, "x", 1);
    assert_true(t.full);
}

static void test_is_transient(void **state)
{
    (void)state;
    for (int rc = 0; rc <= 20; rc++) {
        int want = rc == SB_BUSY || rc == SB_UNAVAILABLE;
        assert_int_equal(sb_is_transient(rc) != 0, want);
    }
    assert_true(sb_is_transient(SB_BUSY | (3 << 8)));
    assert_true(sb_is_transient(SB_UNAVAILABLE | (1 << 8)));
    assert_false(sb_is_transient(SB_SCHEMA_MISSING));
    assert_false(sb_is_transient(-1));
}

static void test_err_fields(void **state)
{
    (void)state;
    /* NULL err: only the code comes back */
    assert_int_equal(sb__err(NULL, SB_BUSY, "x", "y %d", 1), SB_BUSY);

    sb_error e = junk_error();
    assert_int_equal(sb__err(&e, SB_INVALID, "queue", "bad %s #%d", "name", 7),
                     SB_INVALID);
    assert_int_equal(e.code, SB_INVALID);
    assert_int_equal(e.native, 0);
    assert_string_equal(e.sqlstate, "");
    assert_string_equal(e.field, "queue");
    assert_string_equal(e.message, "bad name #7");

    /* NULL field -> "" */
    e = junk_error();
    sb__err(&e, SB_NOMEM, NULL, "out of memory");
    assert_string_equal(e.field, "");
    assert_string_equal(e.message, "out of memory");

    /* a long field is cut at 63 bytes, a long message at 511, both
     * terminated */
    char *longfield = repeat('f', 200);
    char *longmsg = repeat('m', 2000);
    e = junk_error();
    sb__err(&e, SB_ERROR, longfield, "%s", longmsg);
    assert_int_equal(strlen(e.field), sizeof e.field - 1);
    assert_int_equal(strlen(e.message), sizeof e.message - 1);
    assert_memory_equal(e.field, longfield, sizeof e.field - 1);
    assert_memory_equal(e.message, longmsg, sizeof e.message - 1);
    free(longfield);
    free(longmsg);

    sb_error_clear(&e);
    assert_int_equal(e.code, 0);
    assert_string_equal(e.field, "");
    assert_string_equal(e.message, "");
    sb_error_clear(NULL); /* NULL-safe */
}

static void test_strlcpy(void **state)
{
    (void)state;
    char buf[8];
    assert_int_equal(sb__strlcpy(buf, "abc", sizeof buf), 0);
    assert_string_equal(buf, "abc");
    assert_int_equal(sb__strlcpy(buf, "1234567", sizeof buf), 0); /* fits */
    assert_string_equal(buf, "1234567");
    assert_int_equal(sb__strlcpy(buf, "12345678", sizeof buf), 1);
    assert_string_equal(buf, "1234567");
    assert_int_equal(sb__strlcpy(buf, "a much longer text", sizeof buf), 1);
    assert_string_equal(buf, "a much ");
    assert_int_equal(sb__strlcpy(buf, "", sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(sb__strlcpy(buf, "x", 1), 1);
    assert_string_equal(buf, "");
    assert_int_equal(sb__strlcpy(buf, "", 1), 0);
    /* cap 0 writes nothing */
    memset(buf, 'q', sizeof buf);
    assert_int_equal(sb__strlcpy(buf, "x", 0), 1);
    assert_int_equal(buf[0], 'q');
}

/* ------------------------------------------------------------------ */
/* durations and sizes */

static void test_duration_ok(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ms;
    } ok[] = {
        {"0", 0},
        {"250", 250},
        {"007", 7},
        {"250ms", 250},
        {"0ms", 0},
        {"1500us", 1},
        {"999us", 0},
        {"1000us", 1},
        {"30s", 30000},
        {"0s", 0},
        {"5m", 300000},
        {"2h", 7200000},
        {"1d", 86400000},
        {"9223372036854775807", INT64_MAX},
        {"9223372036854775807ms", INT64_MAX},
        {"9223372036854775807us", INT64_MAX / 1000},
        {"9223372036854775s", INT64_C(9223372036854775000)},
        {"106751991167d", INT64_C(106751991167) * 86400000},
        {"2562047788015h", INT64_C(2562047788015) * 3600000},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -1;
        sb_error e = junk_error();
        int rc = sb_parse_duration_ms(ok[i].text, &ms, &e);
        if (rc != SB_OK)
            fail_msg("\"%s\": rc %d (%s)", ok[i].text, rc, e.message);
        assert_true(ms == ok[i].ms);
        /* NULL err is allowed */
        ms = -1;
        assert_int_equal(sb_parse_duration_ms(ok[i].text, &ms, NULL), SB_OK);
        assert_true(ms == ok[i].ms);
    }
}

static void test_duration_rejected(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *says; /* a word the message must contain */
    } bad[] = {
        {"", "empty"},
        {"abc", "digits"},
        {"-5", "digits"},
        {"-5s", "digits"},
        {"+5s", "digits"},
        {" 5s", "digits"},
        {"ms", "digits"},
        {"1.5s", "unit"},
        {"5x", "unit"},
        {"5 s", "unit"},
        {"5s ", "unit"},
        {"5S", "unit"},
        {"5MS", "unit"},
        {"5sec", "unit"},
        {"5mss", "unit"},
        {"5ms5", "unit"},
        {"1e3", "unit"},
        {"0x10", "unit"},
        /* overflow of the number itself and of the unit conversion */
        {"9223372036854775808", "too large"},
        {"18446744073709551615", "too large"},
        {"18446744073709551616", "too large"},
        {"99999999999999999999999999999999ms", "too large"},
        {"9223372036854776s", "too large"},
        {"106751991168d", "too large"},
        {"2562047788016h", "too large"},
        {"153722867280913m", "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = 12345;
        sb_error e = junk_error();
        int rc = sb_parse_duration_ms(bad[i].text, &ms, &e);
        if (rc != SB_INVALID)
            fail_msg("\"%s\" accepted (rc %d, %lld ms)", bad[i].text, rc,
                     (long long)ms);
        assert_int_equal(e.code, SB_INVALID);
        assert_string_equal(e.field, "duration");
        if (strstr(e.message, bad[i].says) == NULL)
            fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].text,
                     e.message, bad[i].says);
        assert_true(ms == 12345); /* untouched on failure */
    }
    int64_t ms = 1;
    sb_error e = junk_error();
    assert_int_equal(sb_parse_duration_ms(NULL, &ms, &e), SB_INVALID);
    assert_string_equal(e.field, "duration");
    assert_true(ms == 1);
}

static void test_size_ok(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {
        {"0", 0},
        {"100", 100},
        {"100B", 100},
        {"0B", 0},
        {"1KB", 1000},
        {"1KiB", 1024},
        {"512KiB", 512 * 1024},
        {"1MB", 1000000},
        {"16MiB", 16u * 1024 * 1024},
        {"1GB", 1000000000},
        {"1GiB", UINT64_C(1) << 30},
        {"4GiB", UINT64_C(4) << 30},
        {"18446744073709551615", UINT64_MAX},
        {"18446744073709551615B", UINT64_MAX},
        {"17179869183GiB", UINT64_C(17179869183) << 30},
        {"18446744073709551KB", UINT64_C(18446744073709551000)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t b = 7;
        sb_error e = junk_error();
        int rc = sb_parse_size(ok[i].text, &b, &e);
        if (rc != SB_OK)
            fail_msg("\"%s\": rc %d (%s)", ok[i].text, rc, e.message);
        assert_true(b == ok[i].bytes);
    }
}

static void test_size_rejected(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *says;
    } bad[] = {
        {"", "empty"},
        {"KB", "digits"},
        {"-1", "digits"},
        {" 1KB", "digits"},
        {"1kb", "unit"},
        {"1kib", "unit"},
        {"1K", "unit"},
        {"1 KB", "unit"},
        {"1KB ", "unit"},
        {"1.5MB", "unit"},
        {"1TB", "unit"},
        {"1b", "unit"},
        {"1BB", "unit"},
        {"18446744073709551616", "too large"},
        {"18446744073709551616B", "too large"},
        {"17179869184GiB", "too large"},
        {"18446744073709552KB", "too large"},
        {"18446744073709552MB", "too large"},
        {"17592186044416MiB", "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t b = 99;
        sb_error e = junk_error();
        int rc = sb_parse_size(bad[i].text, &b, &e);
        if (rc != SB_INVALID)
            fail_msg("\"%s\" accepted (rc %d)", bad[i].text, rc);
        assert_string_equal(e.field, "size");
        if (strstr(e.message, bad[i].says) == NULL)
            fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].text,
                     e.message, bad[i].says);
        assert_true(b == 99);
    }
    uint64_t b = 1;
    assert_int_equal(sb_parse_size(NULL, &b, NULL), SB_INVALID);
}

/* ------------------------------------------------------------------ */
/* queue names (rule T3) and identifiers */

static void expect_queue_rejected(const char *name, const char *why)
{
    sb_error e = junk_error();
    int rc = sb_validate_queue_name(name, &e);
    if (rc != SB_INVALID)
        fail_msg("queue name (%s) accepted", why);
    assert_int_equal(e.code, SB_INVALID);
    assert_string_equal(e.field, "queue");
    assert_true(e.message[0] != '\0');
}

static void expect_queue_ok(const char *name)
{
    sb_error e = junk_error();
    int rc = sb_validate_queue_name(name, &e);
    if (rc != SB_OK)
        fail_msg("queue name \"%s\" rejected: %s", name, e.message);
}

static void test_queue_name(void **state)
{
    (void)state;
    expect_queue_ok("orders");
    expect_queue_ok("a");
    expect_queue_ok("deadletter");
    expect_queue_ok("orders.v2/eu-west:1");
    expect_queue_ok("with inner space");
    expect_queue_ok("caf\xc3\xa9");              /* é */
    expect_queue_ok("\xe6\x97\xa5\xe6\x9c\xac"); /* 日本 */
    expect_queue_ok("\xf0\x9f\x98\x80");         /* U+1F600 */
    expect_queue_ok("\xf4\x8f\xbf\xbf");         /* U+10FFFF, the last */
    expect_queue_ok("\xef\xbf\xbf");             /* U+FFFF */
    expect_queue_ok("\xed\x9f\xbf");             /* U+D7FF, below them */
    expect_queue_ok("\xee\x80\x80");             /* U+E000, above them */
    expect_queue_ok("a\xc2\xa0"
                    "b"); /* NBSP inside */

    /* length: 200 bytes ok, 201 rejected, counted in bytes not chars */
    char *s200 = repeat('q', 200);
    char *s201 = repeat('q', 201);
    expect_queue_ok(s200);
    expect_queue_rejected(s201, "201 bytes");
    sb_error e = junk_error();
    sb_validate_queue_name(s201, &e);
    assert_non_null(strstr(e.message, "201"));
    free(s200);
    free(s201);
    char mb[202];
    for (int i = 0; i < 100; i++)
        memcpy(mb + 2 * i, "\xc3\xa9", 2); /* 100 x é = 200 bytes */
    mb[200] = '\0';
    expect_queue_ok(mb);
    mb[200] = 'x';
    mb[201] = '\0';
    expect_queue_rejected(mb, "201 bytes of 2-byte chars");

    expect_queue_rejected(NULL, "NULL");
    expect_queue_rejected("", "empty");

    /* invalid UTF-8 */
    expect_queue_rejected("\x80", "lone continuation");
    expect_queue_rejected("a\xbf", "stray continuation");
    expect_queue_rejected("\xc3", "truncated 2-byte");
    expect_queue_rejected("ab\xe6\x97", "truncated 3-byte");
    expect_queue_rejected("\xf0\x9f\x98", "truncated 4-byte");
    expect_queue_rejected("\xc3(", "bad continuation");
    expect_queue_rejected("\xc0\xaf", "overlong '/' (2 bytes)");
    expect_queue_rejected("\xc1\xbf", "overlong 2-byte");
    expect_queue_rejected("\xe0\x80\xaf", "overlong '/' (3 bytes)");
    expect_queue_rejected("\xe0\x9f\xbf", "overlong 3-byte U+07FF");
    expect_queue_rejected("\xf0\x80\x80\xaf", "overlong '/' (4 bytes)");
    expect_queue_rejected("\xf0\x8f\xbf\xbf", "overlong 4-byte U+FFFF");
    expect_queue_rejected("\xed\xa0\x80", "surrogate U+D800");
    expect_queue_rejected("\xed\xbf\xbf", "surrogate U+DFFF");
    expect_queue_rejected("\xed\xa0\xbd\xed\xb8\x80", "CESU-8 pair");
    expect_queue_rejected("\xf4\x90\x80\x80", "above U+10FFFF");
    expect_queue_rejected("\xf5\x80\x80\x80", "lead byte F5");
    expect_queue_rejected("\xf8\x88\x80\x80\x80", "5-byte form");
    expect_queue_rejected("\xfe", "byte FE");
    expect_queue_rejected("\xff", "byte FF");

    /* control characters anywhere */
    expect_queue_rejected("a\tb", "tab");
    expect_queue_rejected("a\nb", "newline");
    expect_queue_rejected("a\rb", "CR");
    expect_queue_rejected("a\x01", "SOH");
    expect_queue_rejected("a\x1f"
                          "b",
                          "US");
    expect_queue_rejected("a\x7f"
                          "b",
                          "DEL");
    expect_queue_rejected("a\xc2\x80"
                          "b",
                          "C1 U+0080");
    expect_queue_rejected("a\xc2\x85"
                          "b",
                          "C1 NEL");
    expect_queue_rejected("a\xc2\x9f"
                          "b",
                          "C1 U+009F");

    /* leading / trailing white space */
    expect_queue_rejected(" orders", "leading space");
    expect_queue_rejected("orders ", "trailing space");
    expect_queue_rejected(" ", "only a space");
    expect_queue_rejected("\torders", "leading tab");
    expect_queue_rejected("orders\n", "trailing newline");

    /* issue 20.9, T3: Unicode white space at either end, as ASCII's
     * (the White_Space property, and the invisible U+200B and U+FEFF);
     * inside a name it is an ordinary character. */
    static const char *const unicode_space[] = {
        "\xc2\xa0",     /* U+00A0 no-break space */
        "\xe1\x9a\x80", /* U+1680 ogham space mark */
        "\xe1\xa0\x8e", /* U+180E mongolian vowel separator */
        "\xe2\x80\x80", /* U+2000 en quad */
        "\xe2\x80\x8a", /* U+200A hair space */
        "\xe2\x80\x8b", /* U+200B zero width space */
        "\xe2\x80\xa8", /* U+2028 line separator */
        "\xe2\x80\xa9", /* U+2029 paragraph separator */
        "\xe2\x80\xaf", /* U+202F narrow no-break space */
        "\xe2\x81\x9f", /* U+205F medium mathematical space */
        "\xe3\x80\x80", /* U+3000 ideographic space */
        "\xef\xbb\xbf", /* U+FEFF byte order mark */
    };
    for (size_t i = 0; i < sizeof unicode_space / sizeof *unicode_space; i++) {
        char name[32];
        snprintf(name, sizeof name, "%sq", unicode_space[i]);
        expect_queue_rejected(name, "leading Unicode white space");
        snprintf(name, sizeof name, "q%s", unicode_space[i]);
        expect_queue_rejected(name, "trailing Unicode white space");
        sb_error why = junk_error();
        sb_validate_queue_name(name, &why);
        assert_non_null(strstr(why.message, "white space"));
        snprintf(name, sizeof name, "a%sb", unicode_space[i]);
        expect_queue_ok(name);
        expect_queue_rejected(unicode_space[i], "only Unicode white space");
    }
    expect_queue_ok("\xe2\x80\x8c"
                    "q");             /* U+200C ZWNJ: not a space */
    expect_queue_ok("q\xe2\x80\x8d"); /* U+200D ZWJ */
    expect_queue_ok("\xe2\x80\x90q"); /* U+2010 hyphen */
    expect_queue_ok("q\xef\xbb\xbe"); /* U+FEFE */
    expect_queue_ok("\xe3\x80\x81q"); /* U+3001 ideographic comma */

    /* NULL err is fine */
    assert_int_equal(sb_validate_queue_name("x y", NULL), SB_OK);
    assert_int_equal(sb_validate_queue_name(" x", NULL), SB_INVALID);
}

static void test_utf8_valid_lengths(void **state)
{
    (void)state;
    /* the length bounds the check, not a NUL */
    assert_true(sb__utf8_valid("", 0));
    assert_true(sb__utf8_valid("\xc3\xa9", 2));
    assert_false(sb__utf8_valid("\xc3\xa9", 1));
    assert_true(sb__utf8_valid("ab\xff", 2));
    assert_false(sb__utf8_valid("ab\xff", 3));
    assert_true(sb__utf8_valid("a\0b", 3)); /* NUL is valid UTF-8 */
    assert_false(sb__utf8_valid("\xf0\x9f\x98\x80", 3));
    assert_true(sb__utf8_valid("\xf0\x9f\x98\x80", 4));
}

/* ------------------------------------------------------------------ */
/* UTF-16 (the ODBC driver's SQL_C_WCHAR) */

/* `len` bytes of UTF-8 must become exactly `want` (`n` units) and come
 * back as the same bytes. */
static void expect_utf16(const char *s, size_t len, const uint16_t *want,
                         size_t n)
{
    uint16_t *u = NULL;
    size_t units = 99;
    assert_int_equal(sb__utf8_to_utf16(s, len, &u, &units), SB_OK);
    assert_non_null(u);
    assert_int_equal(units, n);
    if (n > 0)
        assert_memory_equal(u, want, n * sizeof *u);
    assert_int_equal(u[n], 0); /* the terminator, not counted */
    char *back = NULL;
    size_t blen = 99;
    assert_int_equal(sb__utf16_to_utf8(u, units, &back, &blen), SB_OK);
    assert_non_null(back);
    assert_int_equal(blen, len);
    assert_memory_equal(back, s, len);
    assert_int_equal(back[len], '\0');
    sb__free(back);
    sb__free(u);
}

static void test_utf16_round_trip(void **state)
{
    (void)state;
    static const uint16_t ascii[] = {'q', 'u', 'e', 'u', 'e', '-', '1'};
    expect_utf16("queue-1", 7, ascii, 7);
    static const uint16_t two[] = {'c', 'a', 'f', 0xe9}; /* é */
    expect_utf16("caf\xc3\xa9", 5, two, 4);
    static const uint16_t three[] = {0x20ac, '5'}; /* € */
    expect_utf16("\xe2\x82\xac"
                 "5",
                 4, three, 2);
    /* U+1F600 as the surrogate pair D83D DE00 */
    static const uint16_t four[] = {'a', 0xd83d, 0xde00, 'b'};
    expect_utf16("a\xf0\x9f\x98\x80"
                 "b",
                 6, four, 4);
    static const uint16_t mixed[] = {0xe9, 0x20ac, 0xd83d, 0xde00};
    expect_utf16("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, mixed, 4);
    /* the edges of each length, and the highest code point (DBFF DFFF) */
    static const uint16_t edges[] = {0x7f,   0x80,   0x7ff,  0x800,
                                     0xd7ff, 0xe000, 0xffff, 0xd800,
                                     0xdc00, 0xdbff, 0xdfff};
    expect_utf16("\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
                 "\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",
                 25, edges, 11);
    static const uint16_t nul[] = {'a', 0, 'b'}; /* a NUL is a character */
    expect_utf16("a\0b", 3, nul, 3);
    expect_utf16("", 0, NULL, 0);
}

static void test_utf16_empty(void **state)
{
    (void)state;
    uint16_t *u = NULL;
    size_t units = 99;
    assert_int_equal(sb__utf8_to_utf16("", 0, &u, &units), SB_OK);
    assert_non_null(u); /* a buffer to bind, even for no characters */
    assert_int_equal(units, 0);
    assert_int_equal(u[0], 0);
    sb__free(u);
    char *s = NULL;
    size_t len = 99;
    assert_int_equal(sb__utf16_to_utf8(NULL, 0, &s, &len), SB_OK);
    assert_non_null(s);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    sb__free(s);
}

static void test_utf16_invalid_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        const char *why;
    } bad[] = {
        {"\xc0\x80", "overlong NUL"},
        {"\xc1\xbf", "overlong 2-byte"},
        {"\xe0\x80\xaf", "overlong 3-byte"},
        {"\xe0\x9f\xbf", "overlong 3-byte (U+07FF)"},
        {"\xf0\x80\x80\xaf", "overlong 4-byte"},
        {"\xf0\x8f\xbf\xbf", "overlong 4-byte (U+FFFF)"},
        {"\xed\xa0\x80", "surrogate U+D800"},
        {"\xed\xbf\xbf", "surrogate U+DFFF"},
        {"\xed\xa0\xbd\xed\xb8\x80", "CESU-8 surrogate pair"},
        {"\xf4\x90\x80\x80", "past U+10FFFF"},
        {"\xf7\xbf\xbf\xbf", "past U+10FFFF (F7)"},
        {"\xf8\x88\x80\x80\x80", "5-byte form"},
        {"\xfc\x84\x80\x80\x80\x80", "6-byte form"},
        {"\xfe", "FE"},
        {"\xff", "FF"},
        {"\xc3", "truncated 2-byte"},
        {"\xe2\x82", "truncated 3-byte"},
        {"\xf0\x9f\x98", "truncated 4-byte"},
        {"ok\xe2\x82", "truncated at the end"},
        {"\x80", "stray continuation"},
        {"a\xbf"
         "b",
         "stray continuation inside"},
        {"\xc3\x28", "lead byte then ASCII"},
        {"\xe2\x28\xac", "bad second continuation"},
        {"\xf0\x9f\x28\x80", "bad third continuation"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint16_t *u = (uint16_t *)"sentinel";
        size_t units = 99;
        int rc = sb__utf8_to_utf16(bad[i].s, strlen(bad[i].s), &u, &units);
        if (rc != SB_INVALID)
            fail_msg("%s: rc %d, want SB_INVALID", bad[i].why, rc);
        assert_null(u);
        assert_int_equal(units, 0);
    }
    /* the length bounds the input: a NUL does not end it early */
    uint16_t *u = NULL;
    size_t units = 0;
    assert_int_equal(sb__utf8_to_utf16("a\0\xff", 3, &u, &units), SB_INVALID);
    assert_int_equal(sb__utf8_to_utf16("\xc3\xa9", 1, &u, &units), SB_INVALID);
}

/* What `n` units come back as. */
static void expect_utf8(const uint16_t *u, size_t n, const char *want)
{
    char *s = NULL;
    size_t len = 99;
    assert_int_equal(sb__utf16_to_utf8(u, n, &s, &len), SB_OK);
    assert_non_null(s);
    assert_int_equal(len, strlen(want));
    assert_string_equal(s, want);
    sb__free(s);
}

static void test_utf16_unpaired_surrogates(void **state)
{
    (void)state;
    static const uint16_t high[] = {0xd83d};
    expect_utf8(high, 1, "\xef\xbf\xbd");
    static const uint16_t low[] = {0xde00};
    expect_utf8(low, 1, "\xef\xbf\xbd");
    static const uint16_t inside[] = {'a', 0xd800, 'b', 0xdfff, 'c'};
    expect_utf8(inside, 5,
                "a\xef\xbf\xbd"
                "b\xef\xbf\xbd"
                "c");
    /* low before high is two unpaired halves, not a pair */
    static const uint16_t reversed[] = {0xde00, 0xd83d};
    expect_utf8(reversed, 2, "\xef\xbf\xbd\xef\xbf\xbd");
    /* a high half followed by a real pair: only the first is replaced */
    static const uint16_t extra[] = {0xd83d, 0xd83d, 0xde00};
    expect_utf8(extra, 3, "\xef\xbf\xbd\xf0\x9f\x98\x80");
    /* a pair cut off by `units` */
    static const uint16_t cut[] = {'x', 0xd83d, 0xde00};
    expect_utf8(cut, 2, "x\xef\xbf\xbd");
}

static void expect_ident(const char *name, size_t max, int want)
{
    sb_error e = junk_error();
    int rc = sb__validate_identifier(name, max, "table_prefix", &e);
    if (rc != want)
        fail_msg("identifier \"%s\" (max %zu): rc %d, want %d",
                 name ? name : "(null)", max, rc, want);
    if (want != SB_OK) {
        assert_int_equal(e.code, SB_INVALID);
        assert_string_equal(e.field, "table_prefix");
        assert_non_null(strstr(e.message, "table_prefix"));
    }
}

static void test_identifier(void **state)
{
    (void)state;
    expect_ident("sqlbus_", 63, SB_OK);
    expect_ident("_x", 63, SB_OK);
    expect_ident("a1", 63, SB_OK);
    expect_ident("A_b9Z", 63, SB_OK);
    expect_ident("x", 1, SB_OK);
    expect_ident(NULL, 63, SB_INVALID);
    expect_ident("", 63, SB_INVALID);
    expect_ident("1abc", 63, SB_INVALID);
    expect_ident("9", 63, SB_INVALID);
    expect_ident("a-b", 63, SB_INVALID);
    expect_ident("a b", 63, SB_INVALID);
    expect_ident("a.b", 63, SB_INVALID);
    expect_ident("a;drop", 63, SB_INVALID);
    expect_ident("a\"b", 63, SB_INVALID);
    expect_ident("caf\xc3\xa9", 63, SB_INVALID);
    expect_ident("xy", 1, SB_INVALID);

    char *s63 = repeat('a', 63);
    char *s64 = repeat('a', 64);
    expect_ident(s63, 63, SB_OK);
    expect_ident(s64, 63, SB_INVALID);
    sb_error e = junk_error();
    sb__validate_identifier(s64, 63, "schema", &e);
    assert_string_equal(e.field, "schema");
    assert_non_null(strstr(e.message, "63")); /* names the limit */
    assert_non_null(strstr(e.message, "64"));
    free(s63);
    free(s64);

    /* the offending byte is reported */
    e = junk_error();
    sb__validate_identifier("abc-d", 63, "table_prefix", &e);
    assert_non_null(strstr(e.message, "byte 3"));
}

/* ------------------------------------------------------------------ */
/* UUIDs */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case is not canonical output */
}

/* Check the canonical v7 shape; return the 48-bit millisecond prefix. */
static uint64_t check_uuid7(const char *u)
{
    assert_int_equal(strlen(u), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            assert_int_equal(u[i], '-');
        } else if (hexval(u[i]) < 0) {
            fail_msg("uuid %s: char %d '%c' is not lower-case hex", u, i, u[i]);
        }
    }
    assert_int_equal(u[14], '7');              /* version nibble */
    assert_true((hexval(u[19]) & 0xc) == 0x8); /* variant bits 10 */
    uint64_t ms = 0;
    for (int i = 0; i < 13; i++) {
        if (i == 8)
            continue;
        ms = ms << 4 | (uint64_t)hexval(u[i]);
    }
    return ms;
}

static void test_uuid7_format(void **state)
{
    (void)state;
    char u[37];
    static const int64_t stamps[] = {0, 1, 0x0123456789ab, 1700000000000,
                                     (INT64_C(1) << 48) - 1};
    for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
        memset(u, 'X', sizeof u);
        sb__uuid7_at(u, stamps[i]);
        assert_true(check_uuid7(u) == (uint64_t)stamps[i]);
    }
    sb__uuid7_at(u, 0x0123456789ab);
    assert_memory_equal(u, "01234567-89ab-7", 15);
    sb__uuid7_at(u, 0);
    assert_memory_equal(u, "00000000-0000-7", 15);
    sb__uuid7_at(u, (INT64_C(1) << 48) - 1);
    assert_memory_equal(u, "ffffffff-ffff-7", 15);

    /* sb_uuid7 stamps the current wall-clock millisecond */
    int64_t before = sb__wall_us() / 1000;
    assert_int_equal(sb_uuid7(u, NULL), SB_OK);
    int64_t after = sb__wall_us() / 1000;
    uint64_t ms = check_uuid7(u);
    assert_true(ms >= (uint64_t)before && ms <= (uint64_t)after);

    sb_error e = junk_error();
    assert_int_equal(sb_uuid7(NULL, &e), SB_INVALID);
    assert_string_equal(e.field, "out");
}

static int cmp_uuid(const void *a, const void *b)
{
    return memcmp(a, b, 37);
}

static void test_uuid7_distinct(void **state)
{
    (void)state;
    enum { N = 10000 };
    char(*ids)[37] = malloc(sizeof(char[37]) * N);
    assert_non_null(ids);
    /* the same millisecond for all: uniqueness rests on the random bits */
    for (int i = 0; i < N; i++) {
        sb__uuid7_at(ids[i], 1700000000000);
        check_uuid7(ids[i]);
    }
    qsort(ids, N, sizeof ids[0], cmp_uuid);
    for (int i = 1; i < N; i++)
        if (memcmp(ids[i - 1], ids[i], 37) == 0)
            fail_msg("duplicate uuid %s", ids[i]);
    /* and with the live clock, ids sort by creation millisecond */
    for (int i = 0; i < N; i++)
        assert_int_equal(sb_uuid7(ids[i], NULL), SB_OK);
    for (int i = 1; i < N; i++)
        assert_true(check_uuid7(ids[i - 1]) <= check_uuid7(ids[i]));
    qsort(ids, N, sizeof ids[0], cmp_uuid);
    for (int i = 1; i < N; i++)
        assert_true(memcmp(ids[i - 1], ids[i], 37) != 0);
    free(ids);
}

static void test_uuid_normalize(void **state)
{
    (void)state;
    char out[37];
    assert_int_equal(
        sb__uuid_normalize("0189ABCD-EF01-7ABC-9DEF-0123456789AB", out), SB_OK);
    assert_string_equal(out, "0189abcd-ef01-7abc-9def-0123456789ab");
    char again[37];
    assert_int_equal(sb__uuid_normalize(out, again), SB_OK); /* idempotent */
    assert_string_equal(again, out);
    assert_int_equal(
        sb__uuid_normalize("0189aBcD-eF01-7aBc-9dEf-0123456789Ab", out), SB_OK);
    assert_string_equal(out, "0189abcd-ef01-7abc-9def-0123456789ab");
    /* any version is a UUID */
    assert_int_equal(
        sb__uuid_normalize("00000000-0000-0000-0000-000000000000", out), SB_OK);
    char u7[37];
    sb__uuid7_at(u7, 42);
    assert_int_equal(sb__uuid_normalize(u7, out), SB_OK);
    assert_string_equal(out, u7);

    static const char *const bad[] = {
        "",
        "0189abcd-ef01-7abc-9def-0123456789a",   /* 35 */
        "0189abcd-ef01-7abc-9def-0123456789abc", /* 37 */
        "0189abcdef017abc9def0123456789ab",      /* no dashes */
        "0189abcd-ef017-abc-9def-0123456789ab",  /* dash moved */
        "0189abcd_ef01_7abc_9def_0123456789ab",  /* wrong separator */
        "0189abcd-ef01-7abc-9def-0123456789ag",  /* non-hex */
        "g189abcd-ef01-7abc-9def-0123456789ab",
        "0189abcd-ef01-7abc-9def-01234567-9ab", /* extra dash */
        "{189abcd-ef01-7abc-9def-0123456789a}",
        " 189abcd-ef01-7abc-9def-0123456789ab",
        "0189abcd-ef01-7abc-9def-0123456789\xc3\xa9",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (sb__uuid_normalize(bad[i], out) != SB_INVALID)
            fail_msg("accepted uuid \"%s\"", bad[i]);
    }
    assert_int_equal(sb__uuid_normalize(NULL, out), SB_INVALID);

    /* Every byte at a hex position: exactly 0-9, a-f and A-F pass, and
     * come out as lower-case ASCII, whatever the locale. */
    for (int b = 1; b < 256; b++) {
        char in[37] = "0189abcd-ef01-7abc-9def-0123456789ab";
        in[35] = (char)b;
        int hex = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') ||
                  (b >= 'A' && b <= 'F');
        int rc = sb__uuid_normalize(in, out);
        if (rc != (hex ? SB_OK : SB_INVALID))
            fail_msg("byte 0x%02x: rc %d", b, rc);
        if (hex && out[35] != (b >= 'A' && b <= 'F' ? b + 32 : b))
            fail_msg("byte 0x%02x came out as 0x%02x", b,
                     (unsigned char)out[35]);
    }
}

/* ------------------------------------------------------------------ */
/* MD5 */

/* The digest of `len` bytes as lower-case hex. */
static void md5_hex(const void *data, size_t len, char hex[33])
{
    uint8_t d[16];
    sb__md5(data, len, d);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* `n` bytes of a pattern that differs between neighbours and sets the
 * high bit in half the bytes (test-owned, libc free). */
static unsigned char *md5_pattern(size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + 7);
    return p;
}

static void test_md5_rfc1321(void **state)
{
    (void)state;
    /* RFC 1321 appendix A.5, the whole test suite. */
    static const struct {
        const char *in;
        const char *hex;
    } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"1234567890123456789012345678901234567890"
         "1234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    char hex[33];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        md5_hex(v[i].in, strlen(v[i].in), hex);
        if (strcmp(hex, v[i].hex) != 0)
            fail_msg("MD5(\"%s\") = %s, want %s", v[i].in, hex, v[i].hex);
    }
    md5_hex(NULL, 0, hex); /* no bytes need no buffer */
    assert_string_equal(hex, "d41d8cd98f00b204e9800998ecf8427e");
}

static void test_md5_padding_lengths(void **state)
{
    (void)state;
    /* Expected digests computed in a shell with Python's hashlib:
     *   hashlib.md5(bytes((i * 31 + 7) & 0xff for i in range(n))).hexdigest()
     *   hashlib.md5(b"a" * 1000000).hexdigest()
     * 55 is the longest tail that takes its length in the same block, 56
     * the shortest that needs a second one; 63, 64 and 65 straddle a
     * block. */
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        {55, "c9e512626618c9980ef21a96597af94c"},
        {56, "ecde7caa08e9f5657c863df107cac60a"},
        {63, "2f0301069e1c40af7f6c8f843b1b13f2"},
        {64, "b6bf87c24b1bc334e2541387a92b981b"},
        {65, "f168246f08b6134d66bd2a10343fa9f1"},
        {130, "61bd787186dcbb69c3a1c3deb3ad03e6"},
        {1000000, "c9bd641122080114548d4af2a41a7e11"},
    };
    char hex[33];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char *p = md5_pattern(v[i].n);
        md5_hex(p, v[i].n, hex);
        if (strcmp(hex, v[i].hex) != 0)
            fail_msg("MD5 of %zu pattern bytes = %s, want %s", v[i].n, hex,
                     v[i].hex);
        free(p);
    }
    char *a = repeat('a', 1000000);
    md5_hex(a, 1000000, hex);
    assert_string_equal(hex, "7707d6ae4e027c70eea2a935c2296f21");
    free(a);
}

static void test_md5_concat(void **state)
{
    (void)state;
    /* Every split of 130 bytes (two blocks and a tail) hashes like the
     * whole, so pieces that cross or end on a block edge are fed right. */
    unsigned char *p = md5_pattern(130);
    uint8_t whole[16], split[16];
    sb__md5(p, 130, whole);
    for (size_t k = 0; k <= 130; k++) {
        memset(split, 0, sizeof split);
        sb__md5_concat(p, k, p + k, 130 - k, split);
        if (memcmp(split, whole, 16) != 0)
            fail_msg("split at %zu differs from the whole", k);
    }
    sb__md5_concat(NULL, 0, NULL, 0, split);
    sb__md5(NULL, 0, whole);
    assert_memory_equal(split, whole, 16);
    free(p);
}

/* ------------------------------------------------------------------ */
/* capped buffers */

static void test_buf_basic(void **state)
{
    (void)state;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    assert_int_equal(sb__buf_append(&b, "hello", 5), SB_OK);
    assert_int_equal(b.len, 5);
    assert_string_equal(b.data, "hello");
    assert_int_equal(sb__buf_puts(&b, ", "), SB_OK);
    assert_int_equal(sb__buf_printf(&b, "%s #%d", "world", 42), SB_OK);
    assert_string_equal(b.data, "hello, world #42");
    assert_int_equal(b.len, strlen("hello, world #42"));
    assert_int_equal(sb__buf_append(&b, "", 0), SB_OK);
    assert_int_equal(sb__buf_printf(&b, "%s", ""), SB_OK);
    assert_int_equal(b.len, 16);
    /* binary bytes, including NUL, are kept */
    assert_int_equal(sb__buf_append(&b, "a\0b", 3), SB_OK);
    assert_int_equal(b.len, 19);
    assert_memory_equal(b.data + 16, "a\0b", 4);

    /* growth over many appends */
    sb__buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    for (int i = 0; i < 5000; i++)
        assert_int_equal(sb__buf_printf(&b, "%04d,", i), SB_OK);
    assert_int_equal(b.len, 5000 * 5);
    assert_memory_equal(b.data, "0000,0001,", 10);
    assert_memory_equal(b.data + 4999 * 5, "4999,", 6);
    assert_true(b.cap > b.len);

    char *p = sb__buf_detach(&b);
    assert_non_null(p);
    assert_int_equal(strlen(p), 25000);
    assert_null(b.data); /* reset after detach, cap kept */
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 1 << 20);
    sb__free(p);

    /* detach of an empty buffer gives "" */
    p = sb__buf_detach(&b);
    assert_non_null(p);
    assert_string_equal(p, "");
    sb__free(p);

    /* sb__buf_int writes what %lld writes, at both ends of the range */
    const int64_t ints[] = {0, 7, -7, 10, 1000000, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        char want[32];
        snprintf(want, sizeof want, "%lld", (long long)ints[i]);
        sb__buf_reset(&b);
        assert_int_equal(sb__buf_int(&b, ints[i]), SB_OK);
        assert_string_equal(b.data, want);
    }

    sb__buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.max, 1 << 20);
    sb__buf_free(&b); /* twice is fine */
}

/* JSON string literals (the set-based statements' batches): every
 * control character, quote and backslash escaped, UTF-8 kept; the result
 * parses back to the input. */
static void test_buf_json_str(void **state)
{
    (void)state;
    sb_buf b;
    sb__buf_init(&b, 4096);
    sb__buf_puts(&b, "{\"k\":");
    const char in[] = "a\"b\\c\nd\te\rf\x01g\x1fh \xc3\xa4 end";
    assert_int_equal(sb__buf_json_str(&b, in), SB_OK);
    sb__buf_puts(&b, "}");
    assert_string_equal(b.data, "{\"k\":\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g"
                                "\\u001fh \xc3\xa4 end\"}");
    char *got = sb__headers_get(b.data, "k");
    assert_non_null(got);
    assert_string_equal(got, in);
    sb__free(got);
    sb__buf_reset(&b);
    assert_int_equal(sb__buf_json_str(&b, NULL), SB_OK);
    assert_string_equal(b.data, "\"\"");
    sb__buf_free(&b);
}

static void test_buf_cap(void **state)
{
    (void)state;
    sb_buf b;
    sb__buf_init(&b, 16);
    /* exactly at the cap is allowed */
    assert_int_equal(sb__buf_append(&b, "0123456789abcdef", 16), SB_OK);
    assert_int_equal(b.len, 16);
    assert_int_equal(b.failed, 0);
    /* one more byte: SB_TOOBIG, sticky */
    assert_int_equal(sb__buf_append(&b, "x", 1), SB_TOOBIG);
    assert_int_equal(b.failed, SB_TOOBIG);
    assert_int_equal(b.len, 16);
    assert_int_equal(sb__buf_append(&b, "", 0), SB_TOOBIG);
    assert_int_equal(sb__buf_puts(&b, "y"), SB_TOOBIG);
    assert_int_equal(sb__buf_printf(&b, "%d", 1), SB_TOOBIG);
    assert_int_equal(b.len, 16);
    /* detach of a failed buffer gives NULL and resets it */
    assert_null(sb__buf_detach(&b));
    assert_int_equal(b.failed, 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 16);

    /* a later small append is refused too, even though it would fit */
    assert_int_equal(sb__buf_append(&b, "abc", 3), SB_OK);
    assert_int_equal(sb__buf_printf(&b, "%s", "0123456789abcdef"), SB_TOOBIG);
    assert_int_equal(b.len, 3);
    assert_int_equal(sb__buf_append(&b, "d", 1), SB_TOOBIG);
    assert_int_equal(b.len, 3);
    assert_string_equal(b.data, "abc");

    /* reset clears the failure and the content */
    sb__buf_reset(&b);
    assert_int_equal(b.failed, 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(sb__buf_puts(&b, "ok"), SB_OK);
    assert_string_equal(b.data, "ok");

    /* a huge length cannot wrap the size arithmetic */
    assert_int_equal(sb__buf_append(&b, "z", SIZE_MAX - 1), SB_TOOBIG);
    assert_int_equal(b.failed, SB_TOOBIG);
    sb__buf_free(&b);

    /* max 0: nothing fits, but the empty string does */
    sb__buf_init(&b, 0);
    assert_int_equal(sb__buf_append(&b, "", 0), SB_OK);
    assert_int_equal(sb__buf_append(&b, "a", 1), SB_TOOBIG);
    sb__buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* JSON headers */

static int validate_str(const char *json, sb_error *e)
{
    return sb__headers_validate(json, strlen(json), e);
}

static void test_headers_validate(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "{}",
        " { } ",
        "{\"a\":\"b\"}",
        "{\"sb-correlation-id\":\"c1\",\"k\":\"\"}",
        "{\"caf\xc3\xa9\":\"\xe6\x97\xa5\"}",
        "{\"esc\":\"line\\nnext \\u00e9 \\ud83d\\ude00\"}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        sb_error e = junk_error();
        if (validate_str(ok[i], &e) != SB_OK)
            fail_msg("rejected %s: %s", ok[i], e.message);
    }
    static const char *const bad[] = {
        "",
        "[]",
        "[\"a\"]",
        "\"text\"",
        "42",
        "null",
        "{\"a\":1}",
        "{\"a\":1.5}",
        "{\"a\":true}",
        "{\"a\":null}",
        "{\"a\":{\"b\":\"c\"}}",
        "{\"a\":[\"x\"]}",
        "{\"\":\"x\"}",
        "{\"a\":\"1\",\"a\":\"2\"}",
        "{\"a\":\"b\"",
        "{\"a\":\"b\",}",
        "{a:\"b\"}",
        "{'a':'b'}",
        "{\"a\":\"b\"} x",
        "{\"a\":\"b\"}{}",
        "{\"a\":\"\\u0000\"}",
        "{\"a\\u0000b\":\"x\"}",
        "{\"a\":\"\xff\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\\ud800\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_error e = junk_error();
        if (validate_str(bad[i], &e) != SB_INVALID)
            fail_msg("accepted %s", bad[i]);
        assert_string_equal(e.field, "headers");
        assert_true(e.message[0] != '\0');
    }
    sb_error e = junk_error();
    validate_str("{\"a\":1}", &e);
    assert_non_null(strstr(e.message, "\"a\"")); /* names the header */
    assert_non_null(strstr(e.message, "string"));
    validate_str("[]", &e);
    assert_non_null(strstr(e.message, "object"));
    validate_str("{\"a\":\"1\",\"a\":\"2\"}", &e);
    assert_non_null(strstr(e.message, "duplicate"));

    /* the length bounds the text: bytes after it are not read */
    const char *withtail = "{\"a\":\"b\"}garbage";
    assert_int_equal(sb__headers_validate(withtail, 9, NULL), SB_OK);
    assert_int_equal(sb__headers_validate(withtail, 8, NULL), SB_INVALID);
}

/* A valid headers object of exactly `total` bytes: {"k":"vvvv..."} */
static char *headers_of_size(size_t total)
{
    const size_t overhead = strlen("{\"k\":\"\"}");
    char *s = malloc(total + 1);
    assert_non_null(s);
    memcpy(s, "{\"k\":\"", 6);
    memset(s + 6, 'v', total - overhead);
    memcpy(s + 6 + (total - overhead), "\"}", 3);
    assert_int_equal(strlen(s), total);
    return s;
}

static void test_headers_limit(void **state)
{
    (void)state;
    char *at = headers_of_size(SB_MAX_HEADERS_BYTES);
    char *over = headers_of_size(SB_MAX_HEADERS_BYTES + 1);
    sb_error e = junk_error();
    assert_int_equal(validate_str(at, &e), SB_OK);
    e = junk_error();
    assert_int_equal(validate_str(over, &e), SB_INVALID);
    assert_string_equal(e.field, "headers");
    assert_non_null(strstr(e.message, "65536")); /* names the limit */
    assert_non_null(strstr(e.message, "65537")); /* and the size */
    free(at);
    free(over);
}

static void test_headers_get(void **state)
{
    (void)state;
    const char *h = "{\"Content-Type\":\"text/plain\",\"sb-attempts\":\"3\","
                    "\"n\":5,\"empty\":\"\",\"u\":\"caf\\u00e9\"}";
    char *v = sb__headers_get(h, "content-type");
    assert_non_null(v);
    assert_string_equal(v, "text/plain");
    sb__free(v);
    v = sb__headers_get(h, "CONTENT-TYPE");
    assert_non_null(v);
    assert_string_equal(v, "text/plain");
    sb__free(v);
    v = sb__headers_get(h, "SB-Attempts");
    assert_string_equal(v, "3");
    sb__free(v);
    v = sb__headers_get(h, "empty");
    assert_non_null(v);
    assert_string_equal(v, "");
    sb__free(v);
    v = sb__headers_get(h, "u");
    assert_string_equal(v, "caf\xc3\xa9");
    sb__free(v);
    assert_null(sb__headers_get(h, "missing"));
    assert_null(sb__headers_get(h, "content"));   /* no prefix match */
    assert_null(sb__headers_get(h, "n"));         /* not a string */
    assert_null(sb__headers_get("{\"a\":", "a")); /* invalid JSON */
    assert_null(sb__headers_get("[\"a\"]", "a"));
    assert_null(sb__headers_get("", "a"));
    assert_null(sb__headers_get(NULL, "a"));
    assert_null(sb__headers_get(h, NULL));
}

static void test_headers_merge(void **state)
{
    (void)state;
    char *out = (char *)"sentinel";
    sb_error e = junk_error();

    /* from nothing */
    const char *kv1[] = {"a", "1", "b", "2", NULL};
    assert_int_equal(sb__headers_merge(NULL, kv1, &out, &e), SB_OK);
    assert_string_equal(out, "{\"a\":\"1\",\"b\":\"2\"}");
    sb__free(out);
    assert_int_equal(sb__headers_merge("", kv1, &out, &e), SB_OK);
    assert_string_equal(out, "{\"a\":\"1\",\"b\":\"2\"}");
    sb__free(out);

    /* adds and overrides, keeps the others, skips NULL values */
    const char *base = "{\"keep\":\"k\",\"b\":\"old\",\"x\":\"y\"}";
    const char *kv2[] = {"b", "new", "c", "3", "x", NULL, NULL};
    assert_int_equal(sb__headers_merge(base, kv2, &out, &e), SB_OK);
    assert_int_equal(validate_str(out, NULL), SB_OK);
    char *v = sb__headers_get(out, "keep");
    assert_string_equal(v, "k");
    sb__free(v);
    v = sb__headers_get(out, "b");
    assert_string_equal(v, "new");
    sb__free(v);
    v = sb__headers_get(out, "c");
    assert_string_equal(v, "3");
    sb__free(v);
    v = sb__headers_get(out, "x");
    assert_string_equal(v, "y");
    sb__free(v);
    assert_non_null(strstr(out, "\"b\":\"new\""));
    assert_null(strstr(out, "old"));
    sb__free(out);

    /* no pairs: a compact copy */
    assert_int_equal(sb__headers_merge("{ \"a\" : \"1\" }", NULL, &out, &e),
                     SB_OK);
    assert_string_equal(out, "{\"a\":\"1\"}");
    sb__free(out);
    const char *none[] = {NULL};
    assert_int_equal(sb__headers_merge(NULL, none, &out, &e), SB_OK);
    assert_string_equal(out, "{}");
    sb__free(out);

    /* names compare case-insensitively: a merge replaces other spellings */
    const char *kv3[] = {"sb-attempts", "4", NULL};
    assert_int_equal(
        sb__headers_merge("{\"SB-Attempts\":\"3\",\"o\":\"p\"}", kv3, &out, &e),
        SB_OK);
    assert_string_equal(out, "{\"o\":\"p\",\"sb-attempts\":\"4\"}");
    v = sb__headers_get(out, "Sb-Attempts");
    assert_string_equal(v, "4");
    sb__free(v);
    sb__free(out);

    /* values that need escaping survive the round trip */
    const char *kv4[] = {"msg", "a \"quoted\"\nline\\", NULL};
    assert_int_equal(sb__headers_merge(NULL, kv4, &out, &e), SB_OK);
    v = sb__headers_get(out, "msg");
    assert_string_equal(v, "a \"quoted\"\nline\\");
    sb__free(v);
    sb__free(out);

    /* an invalid UTF-8 value is replaced by a readable marker */
    const char *kv5[] = {"bin", "\xff\xfe", NULL};
    assert_int_equal(sb__headers_merge(NULL, kv5, &out, &e), SB_OK);
    v = sb__headers_get(out, "bin");
    assert_string_equal(v, "(value was not valid UTF-8)");
    sb__free(v);
    sb__free(out);

    /* an invalid UTF-8 name is refused */
    const char *kv6[] = {"k\xff", "v", NULL};
    out = (char *)"sentinel";
    e = junk_error();
    assert_int_equal(sb__headers_merge(NULL, kv6, &out, &e), SB_INVALID);
    assert_null(out);
    assert_string_equal(e.field, "headers");

    /* invalid input JSON */
    static const char *const badjson[] = {"[]", "{\"a\":", "nope",
                                          "{\"a\":\"1\",\"a\":\"2\"}"};
    for (size_t i = 0; i < sizeof badjson / sizeof badjson[0]; i++) {
        out = (char *)"sentinel";
        e = junk_error();
        assert_int_equal(sb__headers_merge(badjson[i], kv1, &out, &e),
                         SB_INVALID);
        assert_null(out);
        assert_string_equal(e.field, "headers");
    }
}

static void test_headers_parse(void **state)
{
    (void)state;
    char **kv = NULL;
    size_t n = 99;
    assert_int_equal(
        sb__headers_parse("{\"a\":\"1\",\"n\":5,\"B\":\"x\\u00e9\"}", &kv, &n),
        SB_OK);
    assert_int_equal(n, 2); /* non-string values are skipped */
    assert_string_equal(kv[0], "a");
    assert_string_equal(kv[1], "1");
    assert_string_equal(kv[2], "B");
    assert_string_equal(kv[3], "x\xc3\xa9");
    assert_null(kv[4]); /* NULL-terminated like a merge list */
    sb__headers_free(kv, n);

    assert_int_equal(sb__headers_parse(NULL, &kv, &n), SB_OK);
    assert_int_equal(n, 0);
    sb__headers_free(kv, n);
    assert_int_equal(sb__headers_parse("{}", &kv, &n), SB_OK);
    assert_int_equal(n, 0);
    sb__headers_free(kv, n);

    static const char *const bad[] = {"[]", "{\"a\":", "", "\"s\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kv = (char **)&n;
        n = 7;
        assert_int_equal(sb__headers_parse(bad[i], &kv, &n), SB_INVALID);
        assert_null(kv);
        assert_int_equal(n, 0);
    }
    sb__headers_free(NULL, 0);
}

static void test_headers_without(void **state)
{
    (void)state;
    char *out = (char *)"sentinel";
    const char *drop[] = {"sb-failed-queue", "sb-exception-type", "absent"};
    assert_int_equal(
        sb__headers_without("{\"keep\":\"1\",\"sb-failed-queue\":\"q\","
                            "\"sb-exception-type\":\"exit:3\",\"z\":\"2\"}",
                            drop, 3, &out, NULL),
        SB_OK);
    assert_string_equal(out, "{\"keep\":\"1\",\"z\":\"2\"}");
    sb__free(out);
    assert_int_equal(sb__headers_without(NULL, drop, 3, &out, NULL), SB_OK);
    assert_string_equal(out, "{}");
    sb__free(out);
    assert_int_equal(sb__headers_without("{\"a\":\"b\"}", NULL, 0, &out, NULL),
                     SB_OK);
    assert_string_equal(out, "{\"a\":\"b\"}");
    sb__free(out);
    sb_error e = junk_error();
    out = (char *)"sentinel";
    assert_int_equal(sb__headers_without("[1]", drop, 3, &out, &e), SB_INVALID);
    assert_null(out);
    assert_string_equal(e.field, "headers");
}

/* ------------------------------------------------------------------ */
/* clocks, randomness, jitter, logging, plain allocation helpers */

static void test_jitter(void **state)
{
    (void)state;
    assert_true(sb__jitter_us(0) == 0);
    assert_true(sb__jitter_us(1) == 1);
    assert_true(sb__jitter_us(-5) == -5);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < 10000; i++) {
        int64_t j = sb__jitter_us(1000);
        assert_true(j >= 500 && j <= 1000);
        lo = j < lo ? j : lo;
        hi = j > hi ? j : hi;
    }
    /* the whole range is used, not one value */
    assert_true(lo < 550);
    assert_true(hi > 950);
    for (int i = 0; i < 1000; i++) {
        int64_t j = sb__jitter_us(3);
        assert_true(j >= 1 && j <= 3);
        j = sb__jitter_us(INT64_MAX);
        assert_true(j >= INT64_MAX / 2);
    }
}

static void test_clocks(void **state)
{
    (void)state;
    int64_t prev = sb__mono_us();
    assert_true(prev > 0);
    for (int i = 0; i < 100000; i++) {
        int64_t now = sb__mono_us();
        assert_true(now >= prev);
        prev = now;
    }
    int64_t t0 = sb__mono_us();
    sb__sleep_us(20000);
    int64_t t1 = sb__mono_us();
    assert_true(t1 - t0 >= 20000);
    assert_true(t1 - t0 < 5000000);
    sb__sleep_us(0);
    sb__sleep_us(-1);
    /* wall clock: after 2023-11-14 and microseconds, not ms or ns */
    int64_t wall = sb__wall_us();
    assert_true(wall > INT64_C(1700000000) * 1000000);
    assert_true(wall < INT64_C(4102444800) * 1000000); /* before 2100 */
}

static void test_random(void **state)
{
    (void)state;
    unsigned char a[64], b[64], zero[64] = {0};
    sb__random_bytes(a, sizeof a);
    sb__random_bytes(b, sizeof b);
    assert_true(memcmp(a, zero, sizeof a) != 0);
    assert_true(memcmp(a, b, sizeof a) != 0);
    assert_true(sb__random_u64() != sb__random_u64());
    sb__random_bytes(a, 0);
}

struct log_capture {
    int calls, level;
    char component[32];
    char message[2048];
};

static void capture_log(int level, const char *component, const char *message,
                        void *user)
{
    struct log_capture *c = user;
    c->calls++;
    c->level = level;
    sb__strlcpy(c->component, component, sizeof c->component);
    sb__strlcpy(c->message, message, sizeof c->message);
}

static void test_log(void **state)
{
    (void)state;
    struct log_capture cap = {0};
    sb_logger lg = {capture_log, &cap, SB_LOG_INFO};
    sb__log(&lg, SB_LOG_DEBUG, "core", "hidden %d", 1);
    assert_int_equal(cap.calls, 0);
    sb__log(&lg, SB_LOG_WARN, "pool", "lost %d of %s", 2, "3");
    assert_int_equal(cap.calls, 1);
    assert_int_equal(cap.level, SB_LOG_WARN);
    assert_string_equal(cap.component, "pool");
    assert_string_equal(cap.message, "lost 2 of 3");
    char *big = repeat('L', 1500);
    sb__log(&lg, SB_LOG_ERROR, "x", "%s", big);
    assert_int_equal(strlen(cap.message), 1023); /* bounded, terminated */
    free(big);
    sb__log(NULL, SB_LOG_ERROR, "x", "no logger");
    sb_logger nofn = {NULL, NULL, 0};
    sb__log(&nofn, SB_LOG_ERROR, "x", "no callback");
    assert_int_equal(cap.calls, 2);
}

static void test_alloc_helpers(void **state)
{
    (void)state;
    assert_null(sb__strdup(NULL));
    assert_null(sb__strndup(NULL, 3));
    char *s = sb__strdup("hello");
    assert_string_equal(s, "hello");
    sb__free(s);
    s = sb__strndup("hello", 3);
    assert_string_equal(s, "hel");
    sb__free(s);
    s = sb__memdup("a\0b", 3);
    assert_memory_equal(s, "a\0b", 3);
    sb__free(s);
    s = sb__memdup(NULL, 0); /* zero bytes still gives a pointer */
    assert_non_null(s);
    sb__free(s);
    unsigned char *z = sb__calloc(16, 4);
    assert_non_null(z);
    for (int i = 0; i < 64; i++)
        assert_int_equal(z[i], 0);
    z = sb__realloc(z, 128);
    assert_non_null(z);
    sb__free(z);
    z = sb__calloc(0, 0);
    assert_non_null(z);
    sb__free(z);
    unsigned long f0 = sb__alloc_failures();
    assert_null(sb__calloc(SIZE_MAX / 2, 3)); /* multiplication overflow */
    assert_true(sb__alloc_failures() == f0 + 1);
    sb__free(NULL);
    sb_free(NULL);
}

/* The block of a returned list (sqlbus.h "Lists"): n pointers, then the
 * n zeroed elements, each aligned, all inside one allocation; a size
 * that overflows is an allocation failure. */
static void test_list_block(void **state)
{
    (void)state;
    typedef struct {
        size_t size;
        char name[13];
        long double x; /* the strictest alignment there is */
    } item;
    for (size_t n = 1; n <= 5; n++) {
        item **list = NULL;
        SB__LIST_NEW(list, n);
        assert_non_null(list);
        const char *lo = (const char *)list;
        for (size_t i = 0; i < n; i++) {
            const char *p = (const char *)list[i];
            assert_true(p >= lo + n * sizeof *list);
            assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
            assert_true(i == 0 || list[i] == list[i - 1] + 1);
            assert_int_equal(list[i]->size, 0);
            assert_true(list[i]->x == 0);
            list[i]->size = sizeof *list[i]; /* writable (ASan checks) */
            list[i]->x = 1.5L;
        }
        sb__free(list);
    }
    size_t at = 0;
    unsigned long f0 = sb__alloc_failures();
    assert_null(sb__list_alloc(SIZE_MAX / 4, sizeof(void *), 8, &at));
    assert_null(sb__list_alloc(2, sizeof(void *), SIZE_MAX / 2, &at));
    assert_null(sb__list_alloc(0, sizeof(void *), 8, &at));
    assert_true(sb__alloc_failures() == f0 + 3);
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

/* One allocating operation: returns SB_OK when it fully succeeded and the
 * result was checked, or the failure code it reported. It frees all it
 * allocated either way. */
typedef int (*fa_op)(void);

static int op_merge_existing(void)
{
    const char *kv[] = {"b", "3", "c", "4", "B2", "x", NULL};
    char *out = (char *)"sentinel";
    sb_error e = junk_error();
    int rc = sb__headers_merge(
        "{\"a\":\"1\",\"b\":\"2\",\"b2\":\"long enough to grow the lexer "
        "buffer twice over, surely\"}",
        kv, &out, &e);
    if (rc != SB_OK) {
        assert_null(out);
        assert_int_equal(e.code, rc);
        return rc;
    }
    assert_string_equal(out,
                        "{\"a\":\"1\",\"b\":\"3\",\"c\":\"4\",\"B2\":\"x\"}");
    sb__free(out);
    return SB_OK;
}

static int op_merge_new(void)
{
    const char *kv[] = {"sb-correlation-id",
                        "0189abcd-ef01-7abc-9def-0123456789ab", "sb-attempts",
                        "2", NULL};
    char *out = (char *)"sentinel";
    int rc = sb__headers_merge(NULL, kv, &out, NULL);
    if (rc != SB_OK) {
        assert_null(out);
        return rc;
    }
    assert_string_equal(out, "{\"sb-correlation-id\":\"0189abcd-ef01-7abc-9def-"
                             "0123456789ab\",\"sb-attempts\":\"2\"}");
    sb__free(out);
    return SB_OK;
}

static int op_validate(void)
{
    sb_error e = junk_error();
    const char *h = "{\"sb-correlation-id\":\"0189abcd-ef01-7abc-9def-"
                    "0123456789ab\",\"k\":\"v\",\"escaped\":\"\\u00e9\\n\"}";
    int rc = sb__headers_validate(h, strlen(h), &e);
    if (rc != SB_OK)
        assert_int_equal(e.code, rc);
    return rc;
}

static int op_get(void)
{
    char *v = sb__headers_get("{\"Content-Type\":\"application/json; "
                              "charset=utf-8\",\"z\":\"1\"}",
                              "content-type");
    if (v == NULL)
        return SB_NOMEM; /* the contract: NULL */
    assert_string_equal(v, "application/json; charset=utf-8");
    sb__free(v);
    return SB_OK;
}

static int op_buf_printf(void)
{
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    int rc = SB_OK, first = SB_OK;
    for (int i = 0; i < 300; i++) {
        rc = sb__buf_printf(&b, "%05d,", i);
        if (rc != SB_OK && first == SB_OK)
            first = rc;
        /* once failed, every later call reports the same failure */
        if (first != SB_OK)
            assert_int_equal(rc, first);
    }
    if (first != SB_OK) {
        assert_int_equal(b.failed, first);
        assert_null(sb__buf_detach(&b));
        return first;
    }
    assert_int_equal(b.len, 1800);
    char *p = sb__buf_detach(&b);
    if (p == NULL)
        return SB_NOMEM;
    assert_memory_equal(p, "00000,00001,", 12);
    assert_memory_equal(p + 299 * 6, "00299,", 7);
    sb__free(p);
    return SB_OK;
}

static int op_buf_detach_empty(void)
{
    sb_buf b;
    sb__buf_init(&b, 100);
    char *p = sb__buf_detach(&b); /* allocates "" */
    if (p == NULL)
        return SB_NOMEM;
    assert_string_equal(p, "");
    sb__free(p);
    return SB_OK;
}

static int op_strdup(void)
{
    char *a = sb__strdup("first copy");
    if (a == NULL)
        return SB_NOMEM;
    char *b = sb__strndup("second copy", 6);
    if (b == NULL) {
        sb__free(a);
        return SB_NOMEM;
    }
    char *c = sb__memdup("third", 5);
    if (c == NULL) {
        sb__free(a);
        sb__free(b);
        return SB_NOMEM;
    }
    char *d = sb__calloc(10, 10);
    if (d == NULL) {
        sb__free(a);
        sb__free(b);
        sb__free(c);
        return SB_NOMEM;
    }
    assert_string_equal(a, "first copy");
    assert_string_equal(b, "second");
    assert_memory_equal(c, "third", 5);
    assert_int_equal(d[99], 0);
    sb__free(a);
    sb__free(b);
    sb__free(c);
    sb__free(d);
    return SB_OK;
}

static int op_parse(void)
{
    char **kv = NULL;
    size_t n = 0;
    int rc =
        sb__headers_parse("{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}", &kv, &n);
    if (rc != SB_OK) {
        assert_null(kv);
        return rc;
    }
    assert_int_equal(n, 3);
    assert_string_equal(kv[4], "c");
    assert_string_equal(kv[5], "3");
    sb__headers_free(kv, n);
    return SB_OK;
}

static int op_without(void)
{
    const char *drop[] = {"b"};
    char *out = (char *)"sentinel";
    int rc = sb__headers_without(
        "{\"a\":\"1\",\"b\":\"2\",\"third-key\":\"3\"}", drop, 1, &out, NULL);
    if (rc != SB_OK) {
        assert_null(out);
        return rc;
    }
    assert_string_equal(out, "{\"a\":\"1\",\"third-key\":\"3\"}");
    sb__free(out);
    return SB_OK;
}

static int op_utf16(void)
{
    uint16_t *u = (uint16_t *)"sentinel";
    size_t units = 99;
    int rc = sb__utf8_to_utf16("caf\xc3\xa9 \xf0\x9f\x98\x80", 10, &u, &units);
    if (rc != SB_OK) {
        assert_null(u);
        return rc;
    }
    assert_int_equal(units, 7);
    char *s = (char *)"sentinel";
    size_t len = 99;
    rc = sb__utf16_to_utf8(u, units, &s, &len);
    sb__free(u);
    if (rc != SB_OK) {
        assert_null(s);
        return rc;
    }
    assert_int_equal(len, 10);
    assert_memory_equal(s, "caf\xc3\xa9 \xf0\x9f\x98\x80", 10);
    sb__free(s);
    return SB_OK;
}

static void walk_failures(const char *name, fa_op op)
{
    long n;
    for (n = 1;; n++) {
        if (n > 10000)
            fail_msg("%s: still allocating after 10000 injections", name);
        long live0 = fa_live(), failed0 = fa_failed();
        unsigned long seen0 = sb__alloc_failures();
        fa_arm(n);
        int rc = op();
        long calls = fa_disarm();
        if (fa_live() != live0)
            fail_msg("%s: failing allocation %ld leaked %ld block(s)", name, n,
                     fa_live() - live0);
        if (fa_failed() == failed0) {
            /* nothing was failed: the op ran to the end and must succeed */
            if (rc != SB_OK)
                fail_msg("%s: rc %d with no failure injected", name, rc);
            assert_true(calls < n);
            break;
        }
        assert_true(sb__alloc_failures() == seen0 + 1);
        if (rc != SB_NOMEM)
            fail_msg("%s: failing allocation %ld gave rc %d, want SB_NOMEM",
                     name, n, rc);
    }
    /* the walk must have reached at least one allocation */
    if (n < 2)
        fail_msg("%s: no allocation happened", name);
}

static void test_alloc_fail_nth(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        fa_op op;
        long min_allocs;
    } ops[] = {
        {"headers_merge(existing)", op_merge_existing, 5},
        {"headers_merge(new)", op_merge_new, 3},
        {"headers_validate", op_validate, 3},
        {"headers_get", op_get, 3},
        {"headers_parse", op_parse, 5},
        {"headers_without", op_without, 4},
        {"buf_printf growth", op_buf_printf, 4},
        {"buf_detach(empty)", op_buf_detach_empty, 1},
        {"strdup family", op_strdup, 4},
        {"utf8 to utf16 and back", op_utf16, 2},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        long live0 = fa_live();
        /* count the allocations of a clean run first */
        fa_arm(0);
        assert_int_equal(ops[i].op(), SB_OK);
        long calls = fa_disarm();
        if (calls < ops[i].min_allocs)
            fail_msg("%s: only %ld allocations", ops[i].name, calls);
        walk_failures(ops[i].name, ops[i].op);
        assert_int_equal(fa_live(), live0);
    }
    assert_true(fa_failed() > 0);
}

/* The seam really routes jansson: a JSON call with a failing allocator
 * reaches our allocator and reports SB_NOMEM, never SB_INVALID. */
static void test_alloc_jansson_routed(void **state)
{
    (void)state;
    fa_arm(1);
    sb_error e = junk_error();
    int rc = sb__headers_validate("{\"a\":\"b\"}", 9, &e);
    assert_int_equal(rc, SB_NOMEM);
    assert_int_equal(e.code, SB_NOMEM);
    assert_true(fa_disarm() >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_every_code),
        cmocka_unit_test(test_utf8_cut_and_text),
        cmocka_unit_test(test_is_transient),
        cmocka_unit_test(test_err_fields),
        cmocka_unit_test(test_strlcpy),
        cmocka_unit_test(test_duration_ok),
        cmocka_unit_test(test_duration_rejected),
        cmocka_unit_test(test_size_ok),
        cmocka_unit_test(test_size_rejected),
        cmocka_unit_test(test_queue_name),
        cmocka_unit_test(test_utf8_valid_lengths),
        cmocka_unit_test(test_utf16_round_trip),
        cmocka_unit_test(test_utf16_empty),
        cmocka_unit_test(test_utf16_invalid_utf8),
        cmocka_unit_test(test_utf16_unpaired_surrogates),
        cmocka_unit_test(test_identifier),
        cmocka_unit_test(test_uuid7_format),
        cmocka_unit_test(test_uuid7_distinct),
        cmocka_unit_test(test_uuid_normalize),
        cmocka_unit_test(test_md5_rfc1321),
        cmocka_unit_test(test_md5_padding_lengths),
        cmocka_unit_test(test_md5_concat),
        cmocka_unit_test(test_buf_basic),
        cmocka_unit_test(test_buf_cap),
        cmocka_unit_test(test_buf_json_str),
        cmocka_unit_test(test_headers_validate),
        cmocka_unit_test(test_headers_limit),
        cmocka_unit_test(test_headers_get),
        cmocka_unit_test(test_headers_merge),
        cmocka_unit_test(test_headers_parse),
        cmocka_unit_test(test_headers_without),
        cmocka_unit_test(test_jitter),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_log),
        cmocka_unit_test(test_alloc_helpers),
        cmocka_unit_test(test_list_block),
        cmocka_unit_test_setup_teardown(test_alloc_fail_nth, fa_setup,
                                        fa_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_jansson_routed, fa_setup,
                                        fa_teardown),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
