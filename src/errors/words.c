/* words.c - the words of PostgreSQL's search index (E22), cut by sqlbus
 * itself: ingestion writes each message's tsvector as a literal
 * ('word':position ...) and search builds its tsquery from the same cut,
 * so an index and its queries always agree. PostgreSQL's text parser
 * (to_tsvector) cost more than half of an ingested row's upsert.
 *
 * A word is a run of ASCII letters and digits and of code points from
 * U+0080 up outside the punctuation, symbol and space blocks below, the
 * way SQLite's unicode61 tokenizer (the FTS5 index) cuts ASCII text;
 * everything else, '.' and '+' included, breaks words. ASCII letters are
 * lowered here; a vector or query holding other letters is lowered by
 * the database too (lower()), so case folding beyond ASCII follows the
 * database's own rules on both sides. Each word is written once, with
 * its positions, in byte order. */
#include "errors/errors.h"

#include <stdlib.h>
#include <string.h>

/* Code points that break words: Latin-1 punctuation and symbols (but
 * the letters and digits among them), general punctuation, arrows to
 * miscellaneous symbols, CJK punctuation, fullwidth punctuation, emoji. */
static const struct {
    unsigned lo, hi;
} breaks[] = {
    {0x80, 0xA9},     {0xAB, 0xB1},     {0xB4, 0xB4},     {0xB6, 0xB8},
    {0xBB, 0xBB},     {0xBF, 0xBF},     {0xD7, 0xD7},     {0xF7, 0xF7},
    {0x2000, 0x206F}, {0x20A0, 0x20CF}, {0x2190, 0x2BFF}, {0x3000, 0x3004},
    {0x3008, 0x3020}, {0xFE30, 0xFE4F}, {0xFEFF, 0xFEFF}, {0xFF00, 0xFF0F},
    {0xFF1A, 0xFF20}, {0xFF3B, 0xFF40}, {0xFF5B, 0xFF65}, {0x1F000, 0x1FAFF},
};

/* The code point at p (< end) and its length in *len; a byte that does
 * not start a valid UTF-8 sequence is returned as 0 (a break), length 1. */
static unsigned decode(const unsigned char *p, const unsigned char *end,
                       size_t *len)
{
    unsigned c = p[0];
    size_t n = c < 0x80                ? 1
               : c >= 0xC2 && c < 0xE0 ? 2
               : c >= 0xE0 && c < 0xF0 ? 3
               : c >= 0xF0 && c < 0xF5 ? 4
                                       : 0;
    *len = 1;
    if (n == 0 || (size_t)(end - p) < n)
        return 0;
    unsigned v = n == 1 ? c : c & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *len = n;
    return v;
}

static int in_word(unsigned c)
{
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
               (c >= 'A' && c <= 'Z');
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++)
        if (c >= breaks[i].lo && c <= breaks[i].hi)
            return 0;
    return 1;
}

/* The next word of [*p, end): its start in *word, its length returned
 * (0: no more words); *p moves past it. */
static size_t next_word(const char **p, const char *end, const char **word)
{
    const unsigned char *s = (const unsigned char *)*p;
    const unsigned char *e = (const unsigned char *)end;
    size_t len = 0;
    while (s < e && !in_word(decode(s, e, &len)))
        s += len;
    const unsigned char *start = s;
    while (s < e && in_word(decode(s, e, &len)))
        s += len;
    *word = (const char *)start;
    *p = (const char *)s;
    return (size_t)(s - start);
}

/* One word of a text, lowered (ASCII) in the scratch copy, and its
 * position. */
typedef struct word_at {
    const char *w;
    unsigned len, pos;
} word_at;

static int by_word_then_pos(const void *pa, const void *pb)
{
    const word_at *a = pa, *b = pb;
    int c = memcmp(a->w, b->w, a->len < b->len ? a->len : b->len);
    if (c == 0 && a->len != b->len)
        c = a->len < b->len ? -1 : 1;
    if (c == 0)
        c = a->pos < b->pos ? -1 : a->pos > b->pos;
    return c;
}

int sb__search_vector(sb_buf *b, const char *const *texts, const size_t *lens,
                      size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (texts[i] != NULL)
            total += lens[i] < SB_SEARCH_TEXT_MAX - total
                         ? lens[i]
                         : SB_SEARCH_TEXT_MAX - total;
    /* The texts' bytes, ASCII letters lowered, and their words: a text
     * of L bytes holds at most (L + 1) / 2 of them. */
    char *low = sb__malloc(total + 1);
    word_at *at = sb__malloc((total / 2 + n + 1) * sizeof *at);
    if (low == NULL || at == NULL) {
        sb__free(low);
        sb__free(at);
        b->failed = SB_NOMEM;
        return 0;
    }
    size_t used = 0, words = 0;
    unsigned pos = 1;
    int wide = 0;
    for (size_t i = 0; i < n && used < total; i++) {
        if (texts[i] == NULL)
            continue;
        size_t len = lens[i] < total - used ? lens[i] : total - used;
        char *t = low + used;
        for (size_t k = 0; k < len; k++) {
            char c = texts[i][k];
            t[k] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
        }
        used += len;
        const char *p = t, *end = t + len, *w = NULL;
        for (size_t wl; (wl = next_word(&p, end, &w)) > 0;) {
            if (wl > SB_SEARCH_WORD_MAX)
                continue;
            at[words].w = w;
            at[words].len = (unsigned)wl;
            at[words++].pos = pos;
            if (pos < SB_SEARCH_MAX_POS)
                pos++;
        }
    }
    qsort(at, words, sizeof *at, by_word_then_pos);
    for (size_t i = 0; i < words;) {
        size_t j = i, kept = 0;
        sb__buf_puts(b, i ? " '" : "'");
        sb__buf_append(b, at[i].w, at[i].len);
        sb__buf_puts(b, "':");
        for (; j < words && at[j].len == at[i].len &&
               memcmp(at[j].w, at[i].w, at[i].len) == 0;
             j++) {
            if (kept == SB_SEARCH_MAX_POSITIONS ||
                (kept > 0 && at[j].pos == at[j - 1].pos))
                continue;
            if (kept++)
                sb__buf_append(b, ",", 1);
            sb__buf_int(b, at[j].pos);
        }
        for (size_t k = 0; k < at[i].len && !wide; k++)
            wide = (unsigned char)at[i].w[k] >= 0x80;
        i = j;
    }
    sb__free(low);
    sb__free(at);
    return wide;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t sb__search_term(const char **p, const char **term)
{
    const char *s = *p;
    while (blank(*s))
        s++;
    *term = s;
    while (*s && !blank(*s))
        s++;
    *p = s;
    return (size_t)(s - *term);
}

/* A word as the index holds it: ASCII letters lowered. */
static void put_lower(sb_buf *b, const char *w, size_t wl)
{
    for (size_t k = 0; k < wl; k++) {
        char c = w[k] >= 'A' && w[k] <= 'Z' ? (char)(w[k] - 'A' + 'a') : w[k];
        sb__buf_append(b, &c, 1);
    }
}

/* How a dialect writes a query: a term's first word opens it (`first`,
 * or `next_term` after another term), later words follow `next_word`;
 * `word_end` closes a word, `term_end` a term. */
typedef struct query_syntax {
    const char *first, *next_term, *next_word, *word_end, *term_end;
} query_syntax;

static int put_query(const char *in, sb_buf *b, const query_syntax *q)
{
    int terms = 0;
    const char *rest = in, *p = NULL;
    for (size_t tl; (tl = sb__search_term(&rest, &p)) > 0;) {
        const char *end = p + tl;
        int words = 0;
        const char *w = NULL;
        for (size_t wl; (wl = next_word(&p, end, &w)) > 0;) {
            if (wl > SB_SEARCH_WORD_MAX)
                continue;
            sb__buf_puts(b, words++ ? q->next_word
                            : terms ? q->next_term
                                    : q->first);
            put_lower(b, w, wl);
            sb__buf_puts(b, q->word_end);
        }
        if (words > 0) {
            sb__buf_puts(b, q->term_end);
            terms++;
        }
    }
    return terms;
}

int sb__search_query(const char *in, sb_buf *b)
{
    static const query_syntax tsquery = {"('", " | ('", " <-> '", "'", ")"};
    return put_query(in, b, &tsquery);
}

void sb__search_words(sb_buf *b, const char *const *texts, const size_t *lens,
                      size_t n)
{
    size_t left = SB_SEARCH_TEXT_MAX;
    int any = 0;
    for (size_t i = 0; i < n && left > 0; i++) {
        if (texts[i] == NULL)
            continue;
        size_t len = lens[i] < left ? lens[i] : left;
        left -= len;
        const char *p = texts[i], *end = texts[i] + len, *w = NULL;
        for (size_t wl; (wl = next_word(&p, end, &w)) > 0;) {
            if (wl > SB_SEARCH_WORD_MAX)
                continue;
            if (any++)
                sb__buf_puts(b, " ");
            put_lower(b, w, wl);
        }
    }
}

int sb__search_contains(const char *in, sb_buf *b)
{
    static const query_syntax contains = {"\"", " OR \"", " ", "", "\""};
    return put_query(in, b, &contains);
}
