/* paging.c - page parameters and the paging headers of lists (S5):
 * Total-Count, and an RFC 8288 Link header with first, prev, next and
 * last that keeps the request's other parameters (re-encoded). */
#include "server/api.h"

#include <stdio.h>
#include <string.h>

#define MAX_PAGE 1000000

/* A decimal in [1, max] from the whole of `s`; 0 when it is not one. */
static size_t positive(const char *s, size_t max)
{
    size_t v = 0;
    if (s[0] == '\0')
        return 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (size_t)(*p - '0');
        if (v > max)
            return 0;
    }
    return v;
}

int sb__page_params(const sb_query_params *q, size_t *page, size_t *per_page,
                    sb_api_resp *out)
{
    const char *p = sb__query_get(q, "page");
    const char *pp = sb__query_get(q, "per_page");
    *page = 1;
    *per_page = SB_API_DEFAULT_PER_PAGE;
    if (p != NULL && (*page = positive(p, MAX_PAGE)) == 0)
        return sb__api_error(out, 400, "invalid", "page",
                             "page must be a whole number from 1 to %d",
                             MAX_PAGE),
               0;
    if (pp != NULL && (*per_page = positive(pp, SB_API_MAX_PER_PAGE)) == 0)
        return sb__api_error(out, 400, "invalid", "per_page",
                             "per_page must be a whole number from 1 to %d",
                             SB_API_MAX_PER_PAGE),
               0;
    return 1;
}

void sb__url_encode(sb_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL) {
            sb__buf_append(b, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            sb__buf_append(b, e, 3);
        }
    }
}

static void link_one(sb_buf *b, const char *path, const sb_query_params *q,
                     size_t page, size_t per_page, const char *rel)
{
    if (b->len > 0)
        sb__buf_puts(b, ", ");
    sb__buf_printf(b, "<%s?", path);
    for (size_t i = 0; i < q->n; i++) {
        if (strcmp(q->p[i].key, "page") == 0 ||
            strcmp(q->p[i].key, "per_page") == 0)
            continue;
        sb__url_encode(b, q->p[i].key);
        sb__buf_puts(b, "=");
        sb__url_encode(b, q->p[i].value);
        sb__buf_puts(b, "&");
    }
    sb__buf_printf(b, "page=%zu&per_page=%zu>; rel=\"%s\"", page, per_page,
                   rel);
}

void sb__page_headers(sb_api_resp *out, const char *path,
                      const sb_query_params *q, size_t page, size_t per_page,
                      int64_t total)
{
    out->total = total;
    size_t last =
        total > 0
            ? (size_t)((total + (int64_t)per_page - 1) / (int64_t)per_page)
            : 1;
    sb_buf b;
    sb__buf_init(&b, sizeof out->link - 1);
    link_one(&b, path, q, 1, per_page, "first");
    if (page > 1)
        link_one(&b, path, q, page - 1 < last ? page - 1 : last, per_page,
                 "prev");
    if (page < last)
        link_one(&b, path, q, page + 1, per_page, "next");
    link_one(&b, path, q, last, per_page, "last");
    /* A Link too long for the header (long filters) is left out rather
     * than cut. Out of memory, the answer cannot be whole: its body is
     * marked failed, which sb__api_resp_finish makes a 503. */
    out->link[0] = '\0';
    if (b.failed == SB_NOMEM)
        out->body.failed = SB_NOMEM;
    else if (!b.failed && b.data != NULL)
        sb__strlcpy(out->link, b.data, sizeof out->link);
    sb__buf_free(&b);
}
