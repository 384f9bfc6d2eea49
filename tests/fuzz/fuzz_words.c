/*
 * fuzz_words.c - libFuzzer target for the words of PostgreSQL's search
 * index (rule E22, src/errors/words.c): sb__search_vector and
 * sb__search_query.
 *
 * Input: up to three texts separated by NUL bytes (message type, headers,
 * body), each passed in an exact-size copy so ASan sees any read past its
 * length; the whole input up to its first NUL is also a query.
 *
 * Invariants of the vector: entries "'word':p1,p2..." separated by one
 * space; each word non-empty, at most SB_SEARCH_WORD_MAX bytes, well-formed
 * UTF-8, without ASCII other than digits and lower-case letters, words in
 * strictly increasing byte order (each once); positions strictly
 * increasing, 1 to SB_SEARCH_MAX_POS, at most SB_SEARCH_MAX_POSITIONS a
 * word; the result says whether a word holds a byte beyond ASCII; the
 * same output on a second call. Of the query: "('w' <-> 'w') | ('w')"
 * shapes with the same word rules, as many groups as the result says.
 * SQL Server's cut (sb__search_words, sb__search_contains): the words one
 * space apart under the same rules and the same set as the vector's; the
 * query's '"w w" OR "w"' shape with as many phrases as the result says.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors/errors.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A word at *p up to the closing quote: checked, *p moves past it. */
static void check_word(const char **p, const char *end, int *wide,
                       const char **word, size_t *len)
{
    const char *s = *p;
    const char *q = memchr(s, '\'', (size_t)(end - s));
    CHECK(q != NULL && q > s);
    CHECK((size_t)(q - s) <= SB_SEARCH_WORD_MAX);
    CHECK(ref_utf8((const unsigned char *)s, (size_t)(q - s)));
    for (const char *c = s; c < q; c++) {
        unsigned char u = (unsigned char)*c;
        if (u >= 0x80)
            *wide = 1;
        else
            CHECK((u >= '0' && u <= '9') || (u >= 'a' && u <= 'z'));
    }
    *word = s;
    *len = (size_t)(q - s);
    *p = q + 1;
}

static void check_vector(const char *v, size_t n, int result)
{
    const char *p = v, *end = v + n, *prev = NULL;
    size_t prev_len = 0;
    int wide = 0;
    while (p < end) {
        if (p > v)
            CHECK(*p++ == ' ');
        CHECK(p < end && *p++ == '\'');
        const char *w = NULL;
        size_t wl = 0;
        check_word(&p, end, &wide, &w, &wl);
        if (prev != NULL) {
            int c = memcmp(prev, w, prev_len < wl ? prev_len : wl);
            CHECK(c < 0 || (c == 0 && prev_len < wl));
        }
        prev = w;
        prev_len = wl;
        CHECK(p < end && *p++ == ':');
        unsigned long last = 0;
        size_t count = 0;
        for (;;) {
            char *stop = NULL;
            CHECK(p < end && *p >= '1' && *p <= '9');
            unsigned long pos = strtoul(p, &stop, 10);
            CHECK(pos > last && pos <= SB_SEARCH_MAX_POS);
            last = pos;
            count++;
            p = stop;
            if (p == end || *p != ',')
                break;
            p++;
        }
        CHECK(count <= SB_SEARCH_MAX_POSITIONS);
    }
    CHECK(result == wide);
}

static void check_query(const char *q, size_t n, int terms)
{
    const char *p = q, *end = q + n;
    int groups = 0, wide = 0;
    while (p < end) {
        if (groups > 0) {
            CHECK((size_t)(end - p) > 3 && memcmp(p, " | ", 3) == 0);
            p += 3;
        }
        CHECK(p < end && *p++ == '(');
        for (int first = 1;; first = 0) {
            CHECK(p < end);
            if (!first) {
                if (*p == ')')
                    break;
                CHECK((size_t)(end - p) > 5 && memcmp(p, " <-> ", 5) == 0);
                p += 5;
            }
            CHECK(p < end && *p++ == '\'');
            const char *w = NULL;
            size_t wl = 0;
            check_word(&p, end, &wide, &w, &wl);
        }
        p++;
        groups++;
    }
    CHECK(groups == terms);
}

/* The vector's words (each once, sorted), for the words check. */
typedef struct vword {
    const char *w;
    size_t len;
    int seen;
} vword;

static size_t vector_words(const char *v, size_t n, vword *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = v, *end = v + n; p < end && k < cap;) {
        const char *s = memchr(p, '\'', (size_t)(end - p));
        if (s == NULL)
            break;
        const char *q = memchr(s + 1, '\'', (size_t)(end - s - 1));
        CHECK(q != NULL);
        out[k].w = s + 1;
        out[k].len = (size_t)(q - s - 1);
        out[k++].seen = 0;
        p = q + 1;
    }
    return k;
}

/* SQL Server's text: "w w w", each a word of the vector, every one of the
 * vector's words there (checked when both lists are small). */
static void check_words(const char *t, size_t n, vword *vw, size_t nv, int full)
{
    int wide = 0;
    for (const char *p = t, *end = t + n; p < end;) {
        if (p > t)
            CHECK(*p++ == ' ');
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *q = sp ? sp : end;
        CHECK(q > p && (size_t)(q - p) <= SB_SEARCH_WORD_MAX);
        CHECK(ref_utf8((const unsigned char *)p, (size_t)(q - p)));
        for (const char *c = p; c < q; c++) {
            unsigned char u = (unsigned char)*c;
            CHECK(u >= 0x80 || (u >= '0' && u <= '9') ||
                  (u >= 'a' && u <= 'z'));
            wide |= u >= 0x80;
        }
        if (full) {
            size_t i = 0;
            while (i < nv && (vw[i].len != (size_t)(q - p) ||
                              memcmp(vw[i].w, p, vw[i].len) != 0))
                i++;
            CHECK(i < nv);
            vw[i].seen = 1;
        }
        p = q;
    }
    for (size_t i = 0; full && i < nv; i++)
        CHECK(vw[i].seen);
    (void)wide;
}

static void check_contains(const char *q, size_t n, int terms)
{
    int phrases = 0, wide = 0;
    for (const char *p = q, *end = q + n; p < end;) {
        if (phrases > 0) {
            CHECK((size_t)(end - p) > 4 && memcmp(p, " OR ", 4) == 0);
            p += 4;
        }
        CHECK(p < end && *p++ == '"');
        const char *close = memchr(p, '"', (size_t)(end - p));
        CHECK(close != NULL && close > p);
        for (const char *w = p; w < close;) {
            const char *sp = memchr(w, ' ', (size_t)(close - w));
            const char *e = sp ? sp : close;
            CHECK(e > w && (size_t)(e - w) <= SB_SEARCH_WORD_MAX);
            CHECK(ref_utf8((const unsigned char *)w, (size_t)(e - w)));
            for (const char *c = w; c < e; c++) {
                unsigned char u = (unsigned char)*c;
                CHECK(u >= 0x80 || (u >= '0' && u <= '9') ||
                      (u >= 'a' && u <= 'z'));
                wide |= u >= 0x80;
            }
            w = sp ? sp + 1 : close;
        }
        p = close + 1;
        phrases++;
    }
    CHECK(phrases == terms);
    (void)wide;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *texts[3] = {NULL, NULL, NULL};
    size_t lens[3] = {0, 0, 0};
    size_t at = 0;
    for (size_t i = 0; i < 3 && at <= size; i++) {
        const uint8_t *nul = memchr(data + at, 0, size - at);
        size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
        texts[i] = malloc(len ? len : 1);
        CHECK(texts[i] != NULL);
        if (len > 0)
            memcpy(texts[i], data + at, len);
        lens[i] = len;
        at += len + 1;
        if (nul == NULL)
            break;
    }
    sb_buf a, b;
    sb__buf_init(&a, (size_t)64 << 20);
    sb__buf_init(&b, (size_t)64 << 20);
    int ra = sb__search_vector(&a, (const char *const *)texts, lens, 3);
    int rb = sb__search_vector(&b, (const char *const *)texts, lens, 3);
    CHECK(!a.failed && !b.failed && ra == rb && a.len == b.len);
    CHECK(a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
    check_vector(a.len ? a.data : "", a.len, ra);
    sb_buf t;
    sb__buf_init(&t, (size_t)64 << 20);
    sb__search_words(&t, (const char *const *)texts, lens, 3);
    CHECK(!t.failed);
    static vword vw[512];
    size_t nv = vector_words(a.len ? a.data : "", a.len, vw, 512);
    int full = nv < 512 && t.len < 64 * 1024;
    check_words(t.len ? t.data : "", t.len, vw, nv, full);
    sb__buf_free(&t);
    sb__buf_free(&a);
    sb__buf_free(&b);

    char *query = malloc(lens[0] + 1);
    CHECK(query != NULL);
    if (lens[0] > 0)
        memcpy(query, texts[0], lens[0]);
    query[lens[0]] = '\0';
    sb_buf q;
    sb__buf_init(&q, (size_t)64 << 20);
    int terms = sb__search_query(query, &q);
    CHECK(!q.failed);
    check_query(q.len ? q.data : "", q.len, terms);
    sb__buf_reset(&q);
    int phrases = sb__search_contains(query, &q);
    CHECK(!q.failed && phrases == terms);
    check_contains(q.len ? q.data : "", q.len, phrases);
    sb__buf_free(&q);
    free(query);
    for (size_t i = 0; i < 3; i++)
        free(texts[i]);
    return 0;
}
