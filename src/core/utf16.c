/* utf16.c - UTF-8 to UTF-16 and back, for the ODBC driver, which binds and
 * reads text as SQL_C_WCHAR (SQL Server's SQL_C_CHAR goes through the
 * server's code page). Strict on the way in (sqlbus's strings are UTF-8),
 * lenient on the way out (a driver can hand back anything). */
#include "core.h"

/* The code point of the UTF-8 sequence at s[i] (len bytes in all) and its
 * length in *n, or -1 when it is not valid (overlong, a surrogate, past
 * U+10FFFF, truncated, a stray continuation byte). */
static long decode_utf8(const unsigned char *s, size_t len, size_t i, size_t *n)
{
    unsigned c = s[i];
    size_t more;
    uint32_t cp;
    if (c < 0x80) {
        *n = 1;
        return (long)c;
    } else if ((c & 0xe0) == 0xc0) {
        more = 1;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        more = 2;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        more = 3;
        cp = c & 0x07;
    } else {
        return -1;
    }
    if (len - i <= more)
        return -1;
    for (size_t k = 1; k <= more; k++) {
        if ((s[i + k] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((more == 1 && cp < 0x80) || (more == 2 && cp < 0x800) ||
        (more == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *n = more + 1;
    return (long)cp;
}

/*
 * `len` bytes of UTF-8 at `s` (borrowed; NUL bytes are characters) as
 * UTF-16 in native uint16_t units: *out is transferred (sb__free) and
 * holds *units units plus a 0 unit after them. Characters past U+FFFF
 * become surrogate pairs. SB_INVALID (nothing allocated) when `s` is not
 * valid UTF-8, SB_NOMEM. Thread-safe.
 */
int sb__utf8_to_utf16(const char *s, size_t len, uint16_t **out, size_t *units)
{
    const unsigned char *p = (const unsigned char *)s;
    *out = NULL;
    *units = 0;
    size_t need = 0, n = 0;
    for (size_t i = 0; i < len; i += n) {
        long cp = decode_utf8(p, len, i, &n);
        if (cp < 0)
            return SB_INVALID;
        need += cp > 0xffff ? 2 : 1;
    }
    /* need <= len: each unit takes at least one byte (two for four). */
    if (need >= SIZE_MAX / sizeof(uint16_t))
        return SB_NOMEM;
    uint16_t *u = sb__malloc((need + 1) * sizeof *u);
    if (u == NULL)
        return SB_NOMEM;
    size_t o = 0;
    for (size_t i = 0; i < len; i += n) {
        uint32_t cp = (uint32_t)decode_utf8(p, len, i, &n);
        if (cp > 0xffff) {
            cp -= 0x10000;
            u[o++] = (uint16_t)(0xd800 | (cp >> 10));
            u[o++] = (uint16_t)(0xdc00 | (cp & 0x3ff));
        } else {
            u[o++] = (uint16_t)cp;
        }
    }
    u[o] = 0;
    *out = u;
    *units = o;
    return SB_OK;
}

/* The code point of the UTF-16 units at u[i] and their count in *n; an
 * unpaired surrogate stands for U+FFFD (one unit). */
static uint32_t decode_utf16(const uint16_t *u, size_t units, size_t i,
                             size_t *n)
{
    uint32_t c = u[i];
    *n = 1;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < units && u[i + 1] >= 0xdc00 &&
        u[i + 1] <= 0xdfff) {
        *n = 2;
        return 0x10000 + ((c - 0xd800) << 10) + (u[i + 1] - 0xdc00);
    }
    return c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
}

/*
 * `units` UTF-16 units at `u` (borrowed; may be NULL when `units` is 0)
 * as UTF-8: *out is transferred (sb__free), NUL-terminated, *len bytes
 * without the NUL. An unpaired surrogate becomes U+FFFD (EF BF BD), so
 * this never fails on what a driver returns. SB_NOMEM. Thread-safe.
 */
int sb__utf16_to_utf8(const uint16_t *u, size_t units, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t need = 0, n = 0;
    for (size_t i = 0; i < units; i += n) {
        uint32_t cp = decode_utf16(u, units, i, &n);
        size_t bytes = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (need > SIZE_MAX - 1 - bytes)
            return SB_NOMEM;
        need += bytes;
    }
    unsigned char *s = sb__malloc(need + 1);
    if (s == NULL)
        return SB_NOMEM;
    size_t o = 0;
    for (size_t i = 0; i < units; i += n) {
        uint32_t cp = decode_utf16(u, units, i, &n);
        if (cp < 0x80) {
            s[o++] = (unsigned char)cp;
        } else if (cp < 0x800) {
            s[o++] = (unsigned char)(0xc0 | (cp >> 6));
            s[o++] = (unsigned char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            s[o++] = (unsigned char)(0xe0 | (cp >> 12));
            s[o++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            s[o++] = (unsigned char)(0x80 | (cp & 0x3f));
        } else {
            s[o++] = (unsigned char)(0xf0 | (cp >> 18));
            s[o++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
            s[o++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            s[o++] = (unsigned char)(0x80 | (cp & 0x3f));
        }
    }
    s[o] = '\0';
    *out = (char *)s;
    *len = o;
    return SB_OK;
}
