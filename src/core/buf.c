/* buf.c - growable text buffers with a hard cap and a sticky failure, so a
 * caller builds a whole statement and checks once at the end. */
#include "core.h"

#include <stdio.h>
#include <string.h>

void sb__buf_init(sb_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

static int grow(sb_buf *b, size_t need)
{
    if (b->failed)
        return b->failed;
    if (need > b->max) {
        b->failed = SB_TOOBIG;
        return b->failed;
    }
    if (need + 1 <= b->cap)
        return SB_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    char *p = sb__realloc(b->data, cap);
    if (p == NULL) {
        b->failed = SB_NOMEM;
        return b->failed;
    }
    b->data = p;
    b->cap = cap;
    return SB_OK;
}

int sb__buf_append(sb_buf *b, const void *p, size_t n)
{
    if (n > SIZE_MAX - b->len - 1) {
        b->failed = b->failed ? b->failed : SB_TOOBIG;
        return b->failed;
    }
    int rc = grow(b, b->len + n);
    if (rc != SB_OK)
        return rc;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return SB_OK;
}

int sb__buf_puts(sb_buf *b, const char *s)
{
    return sb__buf_append(b, s, strlen(s));
}

int sb__buf_printf(sb_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return b->failed;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int rc = n < 0 ? SB_ERROR : grow(b, b->len + (size_t)n);
    if (rc == SB_OK) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    } else if (!b->failed) {
        b->failed = rc;
    }
    va_end(ap2);
    return rc;
}

int sb__buf_int(sb_buf *b, int64_t v)
{
    char tmp[24], *end = tmp + sizeof tmp, *p = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    return sb__buf_append(b, p, (size_t)(end - p));
}

void sb__buf_reset(sb_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void sb__buf_free(sb_buf *b)
{
    sb__free(b->data);
    size_t max = b->max;
    sb__buf_init(b, max);
}

char *sb__buf_detach(sb_buf *b)
{
    char *p = b->data;
    if (p == NULL && !b->failed)
        p = sb__strdup("");
    if (b->failed) {
        sb__free(p);
        p = NULL;
    }
    size_t max = b->max;
    sb__buf_init(b, max);
    return p;
}

int sb__buf_json_str(sb_buf *b, const char *s)
{
    return sb__buf_json_mem(b, s, s ? strlen(s) : 0);
}

int sb__buf_json_mem(sb_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    sb__buf_append(b, "\"", 1);
    const char *run = s;
    for (const char *p = s; p != NULL && p < s + len; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        sb__buf_append(b, run, (size_t)(p - run));
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t n = 2;
        if (c == '\n')
            esc[1] = 'n';
        else if (c == '\t')
            esc[1] = 't';
        else if (c == '\r')
            esc[1] = 'r';
        else if (c < 0x20) {
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        sb__buf_append(b, esc, n);
        run = p + 1;
    }
    if (run != NULL)
        sb__buf_append(b, run, (size_t)(s + len - run));
    return sb__buf_append(b, "\"", 1);
}
