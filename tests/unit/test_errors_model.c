/*
 * test_errors_model.c - unit tests of the error store's pure model code:
 * deterministic ids (rule E6, src/errors/guid.c), body placement (rule
 * E7, src/errors/body.c) and the words of PostgreSQL's search index (rule
 * E22, src/errors/words.c). No database needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "errors/body.h"
#include "errors/errors.h"
#include "errors/ids.h"

/* ------------------------------------------------------------------ */
/* deterministic ids (E6) */

/* The 10 KiB input of the vectors: 'a'..'z' repeated (test-owned, libc
 * free). */
static char *alphabet_10k(void)
{
    char *s = malloc(10240 + 1);
    assert_non_null(s);
    for (size_t i = 0; i < 10240; i++)
        s[i] = (char)('a' + i % 26);
    s[10240] = '\0';
    return s;
}

static void expect_guid(const char *a, const char *b, const char *want)
{
    char got[37];
    memset(got, 'X', sizeof got);
    sb__deterministic_guid_str(a, b, got);
    if (strcmp(got, want) != 0)
        fail_msg("guid(\"%.40s\" + \"%.40s\") = %s, want %s", a, b, got, want);
    /* the same bytes in one piece give the same id */
    size_t la = strlen(a), lb = strlen(b);
    char *joined = malloc(la + lb + 1);
    assert_non_null(joined);
    memcpy(joined, a, la);
    memcpy(joined + la, b, lb + 1);
    memset(got, 'X', sizeof got);
    sb__deterministic_guid(joined, la + lb, got);
    assert_string_equal(got, want);
    free(joined);
    /* and the public call, which `sqlbus serve` uses (issue 18) */
    memset(got, 'X', sizeof got);
    sb_deterministic_guid(a, b, got);
    assert_string_equal(got, want);
}

static void test_guid_vectors(void **state)
{
    (void)state;
    /* Expected ids computed in a shell with Python:
     *   str(uuid.UUID(bytes_le=hashlib.md5((a + b).encode()).digest()))
     * bytes_le reads the first three fields little-endian, exactly as
     * .NET's new Guid(byte[]) does, so these are the ids ServiceControl's
     * DeterministicGuid gives for the same strings. */
    char *big = alphabet_10k();
    static const struct {
        const char *a, *b, *want;
    } v[] = {
        {"", "", "d98c1dd4-008f-04b2-e980-0998ecf8427e"},
        {"abc", "", "98500190-d23c-b04f-d696-3f7d28e17f72"},
        {"Hello, World!", "", "7de2a865-7988-3828-31b6-64bd8b7f0ad4"},
        /* "Bestellung-ä-🙂": 2- and 4-byte UTF-8 */
        {"Bestellung-\xc3\xa4-\xf0\x9f\x99\x82", "",
         "10e0c573-c8ed-6783-a4f1-2cfc3c4be822"},
        /* message id + processing endpoint */
        {"7f9e1a3c-5b2d-4c8e-9a1f-3e6d8b0c2a47", "Sales",
         "66aeb4a1-8dff-8687-8f3e-c1b658134495"},
        {"0d3f5c2e-8b1a-4f6e-b2c9-1a7e3d5f9b08", "Billing",
         "b69d1b4e-3c23-8169-1f98-a8e9c634e883"},
        /* an MSMQ-style id with a backslash */
        {"4f1c8b2e-7d3a-4e9f-b6c1-0a2d5e8f7b39\\8123456", "Shipping.Endpoint",
         "bd13a70d-b6de-91ac-f5aa-4585fc8a8e9a"},
        /* classifier name + classification text (group ids) */
        {"Exception Type and Stack Trace",
         "System.InvalidOperationException: at "
         "Sales.PlaceOrderHandler.Handle(PlaceOrder message)",
         "005462d0-e98b-fc47-19a5-3a7fb0523593"},
        {"Message Type", "Sales.Messages.PlaceOrder",
         "7a6ce96c-2018-c8e2-b291-f75bb77f5cec"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        expect_guid(v[i].a, v[i].b, v[i].want);
    expect_guid(big, "", "88a1f357-7444-62f0-c599-0ef0258460cb");
    /* the same 10 KiB as two pieces, split across MD5 blocks */
    char head[5001];
    memcpy(head, big, 5000);
    head[5000] = '\0';
    expect_guid(head, big + 5000, "88a1f357-7444-62f0-c599-0ef0258460cb");
    free(big);
}

static void test_guid_byte_order(void **state)
{
    (void)state;
    /* MD5("") = d41d8cd9 8f00 b204 e980 0998ecf8427e (RFC 1321 A.5): the
     * first three groups print reversed, the last two as they are. */
    char got[37];
    sb__deterministic_guid("", 0, got);
    assert_string_equal(got, "d98c1dd4-008f-04b2-e980-0998ecf8427e");
    sb__deterministic_guid(NULL, 0, got);
    assert_string_equal(got, "d98c1dd4-008f-04b2-e980-0998ecf8427e");
    /* the same layout derived here from the raw digest, for other input */
    static const char *const in[] = {"a", "abc", "Sales", "message digest"};
    static const int order[16] = {3, 2, 1,  0,  5,  4,  7,  6,
                                  8, 9, 10, 11, 12, 13, 14, 15};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        uint8_t d[16];
        sb__md5(in[i], strlen(in[i]), d);
        char want[37];
        size_t o = 0;
        for (int k = 0; k < 16; k++) {
            if (k == 4 || k == 6 || k == 8 || k == 10)
                want[o++] = '-';
            snprintf(want + o, 3, "%02x", d[order[k]]);
            o += 2;
        }
        sb__deterministic_guid(in[i], strlen(in[i]), got);
        assert_string_equal(got, want);
    }
}

static void test_guid_str_pieces(void **state)
{
    (void)state;
    char one[37], two[37];
    /* NULL counts as an empty string */
    sb__deterministic_guid_str(NULL, NULL, one);
    assert_string_equal(one, "d98c1dd4-008f-04b2-e980-0998ecf8427e");
    sb__deterministic_guid_str(NULL, "Sales", one);
    sb__deterministic_guid_str("Sales", NULL, two);
    assert_string_equal(one, two);
    sb__deterministic_guid("Sales", 5, two);
    assert_string_equal(one, two);
    /* no separator: only the concatenation counts (as in ServiceControl) */
    sb__deterministic_guid_str("id-1", "Sales", one);
    sb__deterministic_guid_str("id-1S", "ales", two);
    assert_string_equal(one, two);
    /* but the endpoint does change the id */
    sb__deterministic_guid_str("id-1", "Billing", two);
    assert_string_not_equal(one, two);
}

/* ------------------------------------------------------------------ */
/* body placement (E7) */

typedef struct {
    int is_text, inline_text;
    size_t inline_len;
    int ext;
} want_place;

static void expect_place_at(int line, const void *body, size_t len,
                            const char *ct, size_t cap, want_place w)
{
    sb_body_place got;
    memset(&got, 0x5a, sizeof got); /* every field must be written */
    sb__body_place(body, len, ct, cap, &got);
    if (got.is_text != w.is_text || got.inline_text != w.inline_text ||
        got.inline_len != w.inline_len || got.stored_externally != w.ext)
        fail_msg("line %d: len %zu, type \"%s\", cap %zu: got text %d "
                 "inline %d/%zu external %d, want text %d inline %d/%zu "
                 "external %d",
                 line, len, ct ? ct : "(null)", cap, got.is_text,
                 got.inline_text, got.inline_len, got.stored_externally,
                 w.is_text, w.inline_text, w.inline_len, w.ext);
}

#define expect_place(body, len, ct, cap, ...)                                  \
    expect_place_at(__LINE__, body, len, ct, cap, (want_place){__VA_ARGS__})

/* Text kept whole inline. */
#define WHOLE(n) 1, 1, (n), 0
/* Text over the cap: a prefix of `n` bytes inline, the body external. */
#define PREFIX(n) 1, 1, (n), 1
/* Binary: external only. */
#define BINARY 0, 0, 0, 1

static void test_body_cap_boundaries(void **state)
{
    (void)state;
    const char *s = "0123456789";
    expect_place(s, 10, "text/plain", 10, WHOLE(10)); /* exactly cap */
    expect_place(s, 10, "text/plain", 11, WHOLE(10)); /* cap - 1 */
    expect_place(s, 10, "text/plain", 9, PREFIX(9));  /* cap + 1 */
    expect_place(s, 10, "text/plain", 1, PREFIX(1));
    expect_place(s, 10, NULL, SIZE_MAX, WHOLE(10));
    /* cap 0: any text is over it, with an empty prefix */
    expect_place(s, 10, "text/plain", 0, PREFIX(0));
    expect_place(s, 1, NULL, 0, PREFIX(0));
    /* len 0 is empty text, inline, whatever the cap or type */
    expect_place(NULL, 0, NULL, 0, WHOLE(0));
    expect_place("", 0, "text/plain", 5, WHOLE(0));
    expect_place(NULL, 0, "application/octet-stream", 0, WHOLE(0));
}

static void test_body_cut_on_character(void **state)
{
    (void)state;
    /* "abcd" then a 2-, 3- or 4-byte character at bytes 4.., then "z" */
    const char *two = "abcd\xc3\xa9z";          /* é, 7 bytes */
    const char *three = "abcd\xe2\x82\xacz";    /* €, 8 bytes */
    const char *four = "abcd\xf0\x9f\x99\x82z"; /* 🙂, 9 bytes */

    /* the cap falls on the character's first byte: cut before it */
    expect_place(two, 7, NULL, 4, PREFIX(4));
    expect_place(three, 8, NULL, 4, PREFIX(4));
    expect_place(four, 9, NULL, 4, PREFIX(4));
    /* the cap falls inside the character: still cut before it */
    expect_place(two, 7, NULL, 5, PREFIX(4));
    expect_place(three, 8, NULL, 5, PREFIX(4));
    expect_place(three, 8, NULL, 6, PREFIX(4));
    expect_place(four, 9, NULL, 5, PREFIX(4));
    expect_place(four, 9, NULL, 6, PREFIX(4));
    expect_place(four, 9, NULL, 7, PREFIX(4));
    /* the cap falls right after it: the character is kept */
    expect_place(two, 7, NULL, 6, PREFIX(6));
    expect_place(three, 8, NULL, 7, PREFIX(7));
    expect_place(four, 9, NULL, 8, PREFIX(8));
    /* a multi-byte character first and a cap inside it: empty prefix */
    expect_place("\xf0\x9f\x99\x82", 4, NULL, 3, PREFIX(0));
    expect_place("\xf0\x9f\x99\x82", 4, NULL, 4, WHOLE(4));
    /* ending on a multi-byte character within the cap */
    expect_place(two, 6, NULL, 6, WHOLE(6));
    expect_place(four, 8, NULL, 8, WHOLE(8));

    /* the default cap (100 KB) with a character straddling it */
    size_t cap = 100 * 1024;
    size_t n = cap + 10;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'x', n);
    memcpy(big + cap - 1, "\xe2\x82\xac", 3); /* bytes cap-1 .. cap+1 */
    expect_place(big, n, "application/json; charset=utf-8", cap,
                 PREFIX(cap - 1));
    expect_place(big, n, "application/json", cap + 2, PREFIX(cap + 2));
    expect_place(big, n, "application/json", n, WHOLE(n));
    free(big);
}

static void test_body_nul_is_binary(void **state)
{
    (void)state;
    expect_place("\0abc", 4, NULL, 100, BINARY);
    expect_place("ab\0c", 4, "text/plain", 100, BINARY);
    expect_place("abc\0", 4, "application/json", 100, BINARY);
    expect_place("\0", 1, NULL, 100, BINARY);
    /* a NUL beyond the cap still makes the whole body binary */
    expect_place("abcdef\0", 7, NULL, 3, BINARY);
}

static void test_body_invalid_utf8_is_binary(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
        const char *what;
    } bad[] = {
        {"a\xc0\xaf", 3, "overlong 2-byte '/'"},
        {"a\xc1\xbf", 3, "overlong 2-byte"},
        {"a\xe0\x80\xaf", 4, "overlong 3-byte"},
        {"a\xf0\x80\x80\xaf", 5, "overlong 4-byte"},
        {"a\xed\xa0\x80", 4, "surrogate U+D800"},
        {"a\xed\xbf\xbf", 4, "surrogate U+DFFF"},
        {"a\xf4\x90\x80\x80", 5, "U+110000"},
        {"a\xf5\x80\x80\x80", 5, "lead byte F5"},
        {"a\xff", 2, "byte FF"},
        {"a\x80", 2, "lone continuation"},
        {"abc\xe2\x82", 5, "3-byte character truncated at the end"},
        {"abc\xf0\x9f\x99", 6, "4-byte character truncated at the end"},
        {"abc\xc3", 4, "2-byte character truncated at the end"},
        {"ab\xc3z", 4, "2-byte character cut by ASCII"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_body_place got;
        sb__body_place(bad[i].bytes, bad[i].len, "text/plain", 100, &got);
        if (got.is_text || got.inline_text || got.inline_len != 0 ||
            !got.stored_externally)
            fail_msg("%s: placed as text", bad[i].what);
    }
    /* the largest code points that are allowed */
    expect_place("\xf4\x8f\xbf\xbf", 4, NULL, 100, WHOLE(4));
    expect_place("\xed\x9f\xbf", 3, NULL, 100, WHOLE(3));
    /* the whole body is checked, not only the inline prefix */
    expect_place("abcdef\xff", 7, NULL, 3, BINARY);
    expect_place("abcdef\xe2\x82", 8, NULL, 3, BINARY);
}

static void test_body_content_types(void **state)
{
    (void)state;
    static const char *const text[] = {
        "text/plain",
        "text/csv",
        "TEXT/Plain",
        "text/plain; charset=utf-8",
        "text/html;charset=UTF-8",
        "application/json",
        "Application/JSON",
        " application/json ; charset=utf-8",
        "\tapplication/json\t",
        "application/xml",
        "APPLICATION/XML; charset=\"utf-8\"",
        "application/javascript",
        "application/vnd.api+json",
        "application/cloudevents+JSON; charset=utf-8",
        "image/svg+xml",
        "application/atom+Xml",
        "",
        "   ",
        "; charset=utf-8",
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        expect_place("{\"a\":1}", 7, text[i], 100, WHOLE(7));
    expect_place("{\"a\":1}", 7, NULL, 100, WHOLE(7));

    static const char *const binary[] = {
        "application/octet-stream",
        "application/x-protobuf",
        "image/png",
        "IMAGE/JPEG",
        "multipart/form-data; boundary=x",
        "application/json-seq",
        "application/x-json",
        "application/jsonx",
        "application/xmlx",
        "application/javascripts",
        "application/json+zip",
        "application/octet-stream; note=text/plain",
        "text/",
        "text",
        "json",
        "+json",
        "+xml",
    };
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
        /* declared binary: binary even though the bytes are UTF-8 text */
        expect_place("{\"a\":1}", 7, binary[i], 100, BINARY);
        expect_place("h\xc3\xa9llo", 6, binary[i], 3, BINARY);
    }
}

/* ------------------------------------------------------------------ */
/* the search index's words (E22) */

static void expect_vector(const char *const *texts, size_t n, int wide,
                          const char *want)
{
    size_t lens[4];
    for (size_t i = 0; i < n; i++)
        lens[i] = texts[i] ? strlen(texts[i]) : 0;
    sb_buf b;
    sb__buf_init(&b, (size_t)8 << 20);
    assert_int_equal(sb__search_vector(&b, texts, lens, n), wide);
    assert_int_equal(b.failed, 0);
    assert_string_equal(b.len ? b.data : "", want);
    sb__buf_free(&b);
}

static void expect_query(const char *in, int terms, const char *want)
{
    sb_buf b;
    sb__buf_init(&b, 1 << 16);
    assert_int_equal(sb__search_query(in, &b), terms);
    assert_string_equal(b.len ? b.data : "", want);
    sb__buf_free(&b);
}

/* E22: '.' and '+' break words, so Order is a word of Shop.Order; ASCII
 * punctuation, Latin-1 and general punctuation, symbols and invalid UTF-8
 * break words; letters and digits beyond ASCII are word characters; ASCII
 * is lowered, the rest left to the database (and said so); each word once
 * in byte order with its positions, which run on across the texts; NULL
 * texts are skipped. */
static void test_search_words(void **state)
{
    (void)state;
    const char *t1[] = {"Shop.PlaceOrder", NULL, "{\"sku\":\"b+c\"}"};
    expect_vector(t1, 3, 0, "'b':4 'c':5 'placeorder':2 'shop':1 'sku':3");
    const char *t2[] = {"Order order", "ORDER x"};
    expect_vector(t2, 2, 0, "'order':1,2,3 'x':4");
    const char *t3[] = {"\xc2\xabword\xc2\xbb\xe2\x80\x94"
                        "done \xc3\x84rger "
                        "5\xc2\xb5s x\xc2\xb2 ab\xff"
                        "cd \xf0\x9f\x98\x80ok"};
    expect_vector(t3, 1, 1,
                  "'5\xc2\xb5s':4 'ab':6 'cd':7 'done':2 'ok':8 'word':1 "
                  "'x\xc2\xb2':5 '\xc3\x84rger':3");
    const char *t4[] = {"", " .,;:!?()[]{}<>\"'\\/|-_=*&^%$#@~`\t\n"};
    expect_vector(t4, 2, 0, "");
    /* A truncated sequence at the end is a break, never read past. */
    const char *t5[] = {"ab\xe2\x80"};
    expect_vector(t5, 1, 0, "'ab':1");
    /* One-byte texts: a word each (more words than half the bytes). */
    const char *t6[] = {"a", "b", "c", "d"};
    expect_vector(t6, 4, 0, "'a':1 'b':2 'c':3 'd':4");
}

/* E22: a word longer than PostgreSQL's lexeme limit is not indexed and
 * takes no position; only the first SB_SEARCH_TEXT_MAX bytes are cut; a
 * word keeps its first SB_SEARCH_MAX_POSITIONS positions; positions stop
 * at PostgreSQL's maximum. */
static void test_search_word_limits(void **state)
{
    (void)state;
    size_t big = SB_SEARCH_TEXT_MAX + 100;
    char *s = malloc(big + 1);
    assert_non_null(s);
    memset(s, 'w', SB_SEARCH_WORD_MAX + 1);
    memcpy(s + SB_SEARCH_WORD_MAX + 1, " ok", 4);
    const char *t1[] = {s};
    expect_vector(t1, 1, 0, "'ok':1");
    memset(s, 'w', SB_SEARCH_WORD_MAX);
    memcpy(s + SB_SEARCH_WORD_MAX, " ok", 4);
    size_t lens[1] = {strlen(s)};
    sb_buf b;
    sb__buf_init(&b, (size_t)8 << 20);
    sb__search_vector(&b, t1, lens, 1);
    assert_int_equal(b.len, 6 + 2 + SB_SEARCH_WORD_MAX + 3);
    assert_memory_equal(b.data, "'ok':2 'ww", 10);
    sb__buf_free(&b);
    /* "a " repeated past the cap: one word with 255 positions; "zz" past
     * the cap is not cut. */
    for (size_t i = 0; i < big; i += 2)
        memcpy(s + i, "a ", 2);
    s[big] = '\0';
    memcpy(s + SB_SEARCH_TEXT_MAX, "zz", 2);
    lens[0] = big;
    sb__buf_init(&b, (size_t)8 << 20);
    sb__search_vector(&b, t1, lens, 1);
    assert_int_equal(b.failed, 0);
    assert_null(strstr(b.data, "zz"));
    assert_memory_equal(b.data, "'a':1,2,3,", 10);
    assert_string_equal(b.data + b.len - 8, ",254,255");
    size_t commas = 0;
    for (const char *p = b.data; (p = strchr(p, ',')) != NULL; p++)
        commas++;
    assert_int_equal(commas, SB_SEARCH_MAX_POSITIONS - 1);
    sb__buf_free(&b);
    /* 16,400 words, then "zq": positions stop at 16383. */
    size_t at = 0;
    for (size_t i = 0; i < 16400; i++, at += 2)
        memcpy(s + at, "a ", 2);
    memcpy(s + at, "zq", 3);
    lens[0] = at + 2;
    sb__buf_init(&b, (size_t)8 << 20);
    sb__search_vector(&b, t1, lens, 1);
    assert_string_equal(b.data + b.len - 11, " 'zq':16383");
    sb__buf_free(&b);
    free(s);
}

/* E22: the caller's whitespace-separated terms are ORed; the words of one
 * term are a phrase; ASCII is lowered; quotes and operators are never
 * syntax; a term without words adds nothing. */
static void test_search_query(void **state)
{
    (void)state;
    expect_query("Shop.Order  widget", 2, "('shop' <-> 'order') | ('widget')");
    expect_query("\"a\" -b OR (c", 4, "('a') | ('b') | ('or') | ('c')");
    expect_query("... widget", 1, "('widget')");
    expect_query(" . ! ", 0, "");
    expect_query("x'y \xc3\x84RGER", 2, "('x' <-> 'y') | ('\xc3\x84rger')");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guid_vectors),
        cmocka_unit_test(test_guid_byte_order),
        cmocka_unit_test(test_guid_str_pieces),
        cmocka_unit_test(test_body_cap_boundaries),
        cmocka_unit_test(test_body_cut_on_character),
        cmocka_unit_test(test_body_nul_is_binary),
        cmocka_unit_test(test_body_invalid_utf8_is_binary),
        cmocka_unit_test(test_body_content_types),
        cmocka_unit_test(test_search_words),
        cmocka_unit_test(test_search_word_limits),
        cmocka_unit_test(test_search_query),
    };
    return cmocka_run_group_tests_name("errors_model", tests, NULL, NULL);
}
