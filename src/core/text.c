/* text.c - UTF-8-safe cuts: where a byte string may end without
 * splitting a character, and text built into a caller's fixed buffer. */
#include "core.h"

#include <string.h>

size_t sb__utf8_cut(const char *s, size_t n)
{
    /* s[n] is the first byte left out: while it continues a character,
     * that character's first bytes go too (at most three, in UTF-8). */
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

void sb__text_init(sb_text *t, char *out, size_t cap)
{
    t->out = out;
    t->cap = cap;
    t->len = 0;
    t->full = cap == 0;
    if (cap > 0)
        out[0] = '\0';
}

void sb__text_put(sb_text *t, const char *s, size_t n)
{
    if (t->full)
        return;
    size_t room = t->cap - 1 - t->len;
    if (n > room) {
        n = sb__utf8_cut(s, room);
        t->full = true;
    }
    memcpy(t->out + t->len, s, n);
    t->len += n;
    t->out[t->len] = '\0';
}
