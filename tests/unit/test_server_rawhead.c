/*
 * test_server_rawhead.c - unit tests of the check for bytes hidden behind
 * a NUL in a request head (src/server/rawhead.c; issue 20.4, rule S9).
 * Each head is laid out as libmicrohttpd 0.9.75 leaves it in its buffer
 * after reading it in place (tests/scripts/serve_malformed.sh sends the
 * same requests to a real `sqlbus serve`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/rawhead.h"

#define MAX_FIELDS 8

/* A head built from the raw bytes `raw` (`len` of them, NULs allowed) as
 * libmicrohttpd splits it: the method ends at the first space, the target
 * runs to the last space of the line, each line ending (CRLF or LF)
 * becomes NULs, each header's ':' a NUL with the spaces after it
 * skipped; a continuation line (a fold) is left as it is. */
typedef struct built {
    char buf[512];
    sb_head_field f[MAX_FIELDS];
    sb_raw_head h;
} built;

static void build(built *b, const char *raw, size_t len)
{
    assert_true(len < sizeof b->buf);
    memcpy(b->buf, raw, len);
    memset(&b->h, 0, sizeof b->h);
    b->h.start = b->buf;
    b->h.len = len;
    b->h.fields = b->f;
    char *line = b->buf, *end = b->buf + len;
    int first = 1;
    while (line < end) {
        char *lf = memchr(line, '\n', (size_t)(end - line));
        assert_non_null(lf);
        char *eol = lf > line && lf[-1] == '\r' ? lf - 1 : lf;
        if (eol == line) { /* the empty line */
            memset(line, 0, (size_t)(lf + 1 - line));
            break;
        }
        if (first) {
            char *sp = memchr(line, ' ', (size_t)(eol - line));
            char *last = eol;
            while (last > sp && last[-1] != ' ')
                last--;
            *sp = '\0';
            char *t = sp + 1;
            while (*t == ' ')
                t++;
            last[-1] = '\0';
            b->h.target = t;
            b->h.target_len = strlen(t);
            b->h.version = last;
            first = 0;
        } else if (*line != ' ' && *line != '\t') { /* not a continuation */
            char *colon = memchr(line, ':', (size_t)(eol - line));
            assert_non_null(colon);
            *colon = '\0';
            char *v = colon + 1;
            while (*v == ' ')
                v++;
            assert_true(b->h.n_fields < MAX_FIELDS);
            b->f[b->h.n_fields].name = line;
            b->f[b->h.n_fields].value = v;
            b->h.n_fields++;
        }
        memset(eol, 0, (size_t)(lf + 1 - eol));
        line = lf + 1;
    }
}

#define RAW(s) (s), sizeof(s) - 1

/* The part with a hidden byte, "line:" before a request line's, or
 * NULL. */
static const char *hidden(const char *raw, size_t len)
{
    static built b;
    static char out[64];
    build(&b, raw, len);
    const char *part = (const char *)&b; /* overwritten by the call */
    int where = sb__head_hidden(&b.h, &part);
    if (where == SB_HEAD_CLEAN) {
        assert_null(part);
        return NULL;
    }
    snprintf(out, sizeof out, "%s%s", where == SB_HEAD_LINE ? "line:" : "",
             part);
    return out;
}

static int clean(const sb_raw_head *h)
{
    const char *part;
    return sb__head_hidden(h, &part) == SB_HEAD_CLEAN;
}

static void test_clean_heads_pass(void **state)
{
    (void)state;
    assert_null(hidden(RAW("GET /api/errors HTTP/1.1\r\nHost: x\r\n"
                           "Authorization: Bearer t0ken\r\n\r\n")));
    /* bare LFs, extra spaces, empty values, a query, no headers */
    assert_null(hidden(RAW("GET  /a?b=1&c HTTP/1.1\nHost:x\nX-Empty:\n\n")));
    assert_null(hidden(RAW("GET /health HTTP/1.0\r\n\r\n")));
    assert_null(hidden(RAW("POST /x HTTP/1.1\r\nA:   spaced  \r\nB: v\n\r\n")));
}

static void test_nul_in_a_header_value(void **state)
{
    (void)state;
    /* issue 20.4: the token, then a NUL and more */
    assert_string_equal(hidden(RAW("GET /api/errors HTTP/1.1\r\nHost: x\r\n"
                                   "Authorization: Bearer t0ken\0junk\r\n"
                                   "Accept: */*\r\n\r\n")),
                        "Authorization");
    /* the last header, before the empty line */
    assert_string_equal(hidden(RAW("GET / HTTP/1.1\r\nHost: x\r\n"
                                   "Authorization: Bearer t\0j\r\n\r\n")),
                        "Authorization");
    /* bare LF line endings */
    assert_string_equal(hidden(RAW("GET / HTTP/1.1\nX-A: v\0\x01\nB: c\n\n")),
                        "X-A");
    /* the first header that has one is named */
    assert_string_equal(hidden(RAW("GET / HTTP/1.1\r\nA: 1\0x\r\n"
                                   "B: 2\0y\r\n\r\n")),
                        "A");
}

static void test_nul_in_the_request_line(void **state)
{
    (void)state;
    assert_string_equal(hidden(RAW("GET /health\0junk HTTP/1.1\r\n"
                                   "Host: x\r\n\r\n")),
                        "line:path");
    assert_string_equal(
        hidden(RAW("GET /api/errors?per_page=1\0junk HTTP/1.1\r\n"
                   "Host: x\r\n\r\n")),
        "line:path");
    assert_string_equal(hidden(RAW("GET\0junk /health HTTP/1.1\r\n\r\n")),
                        "line:method");
    /* a header named like a part of the request line is a header */
    assert_string_equal(hidden(RAW("GET / HTTP/1.1\r\npath: a\0b\r\n\r\n")),
                        "path");
}

static void test_parts_outside_the_head_are_left_alone(void **state)
{
    (void)state;
    built b;
    build(&b, RAW("GET / HTTP/1.1\r\nA: 1\0x\r\nB: 2\r\n\r\n"));
    /* A's value rebuilt elsewhere (a folded header): not looked at. */
    static const char elsewhere[] = "1 folded";
    b.f[0].value = elsewhere;
    assert_true(clean(&b.h));
    /* No target known: the request line is not looked at. */
    build(&b, RAW("GET /health\0junk HTTP/1.1\r\n\r\n"));
    b.h.target = NULL;
    assert_true(clean(&b.h));
}

static void test_a_folded_header(void **state)
{
    (void)state;
    /* 0.9.75 appends a continuation line to the header's name, rebuilt
     * elsewhere, and leaves it after the value: refused like a NUL. */
    built b;
    build(&b, RAW("GET / HTTP/1.1\r\nX-F: a\r\n b\r\nC: d\r\n\r\n"));
    assert_int_equal(b.h.n_fields, 2);
    const char *part = NULL;
    assert_int_equal(sb__head_hidden(&b.h, &part), SB_HEAD_HEADER);
    assert_string_equal(part, "X-F");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_heads_pass),
        cmocka_unit_test(test_nul_in_a_header_value),
        cmocka_unit_test(test_nul_in_the_request_line),
        cmocka_unit_test(test_parts_outside_the_head_are_left_alone),
        cmocka_unit_test(test_a_folded_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
