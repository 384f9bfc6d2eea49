/* body.c - body placement (rule E7): text or binary by content type and
 * bytes, and how much of a text body stays inline for search. */
#include "errors/body.h"

#include <string.h>
#include <strings.h>

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Whether the `n` bytes at `s` spell `word`, ignoring ASCII case. */
static bool span_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

/* Whether the media type of `ct` names text. Only the type/subtype before
 * any ';' counts, without surrounding blanks; an absent type counts as
 * text, so the bytes decide. */
static bool type_is_text(const char *ct)
{
    if (ct == NULL)
        return true;
    const char *s = ct;
    while (is_blank(*s))
        s++;
    const char *e = s;
    while (*e != '\0' && *e != ';')
        e++;
    while (e > s && is_blank(e[-1]))
        e--;
    size_t n = (size_t)(e - s);
    if (n == 0)
        return true;
    return (n > 5 && strncasecmp(s, "text/", 5) == 0) ||
           span_is(s, n, "application/json") ||
           span_is(s, n, "application/xml") ||
           span_is(s, n, "application/javascript") ||
           (n > 5 && strncasecmp(e - 5, "+json", 5) == 0) ||
           (n > 4 && strncasecmp(e - 4, "+xml", 4) == 0);
}

void sb__body_place(const void *body, size_t len, const char *content_type,
                    size_t cap, sb_body_place *out)
{
    const char *p = body;
    memset(out, 0, sizeof *out);
    out->is_text =
        len == 0 || (type_is_text(content_type) &&
                     memchr(p, '\0', len) == NULL && sb__utf8_valid(p, len));
    if (!out->is_text) {
        out->stored_externally = 1;
        return;
    }
    out->inline_text = 1;
    if (len <= cap) {
        out->inline_len = len;
        return;
    }
    /* Back up from the cap to the lead byte of the character it falls in
     * (the body is valid UTF-8). */
    out->inline_len = sb__utf8_cut(p, cap);
    out->stored_externally = 1;
}
