/* rawhead.c - bytes hidden behind a NUL in a request head (see
 * rawhead.h). libmicrohttpd's request line "M TARGET V\r\n" is left as
 * "M\0[spaces]TARGET\0V\0\0" (spaces after the method are skipped, not
 * ended), and each header line "Name: value\r\n" as
 * "Name\0[spaces]value\0\0" (a bare LF gives one NUL); the head ends with
 * the empty line's NULs. */
#include "server/rawhead.h"

#include <stdint.h>
#include <string.h>

/* Whether [p, q) lies inside the head (compared as addresses: a part may
 * point anywhere, or be NULL). */
static int inside(const sb_raw_head *h, const char *p, const char *q)
{
    uintptr_t s = (uintptr_t)h->start, a = (uintptr_t)p, b = (uintptr_t)q;
    return a >= s && b >= a && b <= s + h->len;
}

/* Whether every byte of [p, q) is `c`. */
static int all(const char *p, const char *q, char c)
{
    for (; p < q; p++)
        if (*p != c)
            return 0;
    return 1;
}

/* The request line: after the method's NUL only the spaces skipped
 * before the target, and the target as long as the URI log callback saw
 * it (its strlen there would have stopped at a NUL of the client's). */
static const char *request_line(const sb_raw_head *h)
{
    if (h->target == NULL || !inside(h, h->start, h->target))
        return NULL;
    const char *m_end = h->start + strnlen(h->start, h->len);
    if (m_end >= h->target || !all(m_end + 1, h->target, ' '))
        return "method";
    const char *t_end = h->target + h->target_len;
    if (inside(h, t_end, h->version) && h->version != t_end + 1)
        return "path";
    return NULL;
}

int sb__head_hidden(const sb_raw_head *h, const char **part)
{
    *part = request_line(h);
    if (*part != NULL)
        return SB_HEAD_LINE;
    for (size_t i = 0; i < h->n_fields; i++) {
        const char *v = h->fields[i].value;
        const char *next =
            i + 1 < h->n_fields ? h->fields[i + 1].name : h->start + h->len;
        if (!inside(h, v, next))
            continue;
        const char *v_end = v + strnlen(v, (size_t)(next - v));
        if (!all(v_end, next, '\0')) {
            *part = h->fields[i].name;
            return SB_HEAD_HEADER;
        }
    }
    return SB_HEAD_CLEAN;
}
