/* validate.c - checks on names that reach SQL or storage. */
#include "core.h"

#include <string.h>

bool sb__utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        for (size_t k = 1; k <= n; k++) {
            if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
            (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

int sb__validate_name(const char *name, size_t max_len, const char *field,
                      const char *what, sb_error *err)
{
    if (name == NULL)
        return sb__err(err, SB_INVALID, field, "%s is required", what);
    size_t len = strlen(name);
    if (len == 0 || len > max_len)
        return sb__err(err, SB_INVALID, field,
                       "%s must be 1 to %zu bytes (got %zu)", what, max_len,
                       len);
    if (!sb__utf8_valid(name, len))
        return sb__err(err, SB_INVALID, field, "%s must be valid UTF-8", what);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        /* C0, DEL and the C1 controls U+0080..U+009F (C2 80..C2 9F; the
         * string is valid UTF-8 here, so C2 is always a lead byte). */
        if (c < 0x20 || c == 0x7f ||
            (c == 0xc2 && (unsigned char)name[i + 1] <= 0x9f))
            return sb__err(err, SB_INVALID, field,
                           "%s must not contain control characters "
                           "(byte %zu)",
                           what, i);
    }
    if (is_space((unsigned char)name[0]) ||
        is_space((unsigned char)name[len - 1]))
        return sb__err(err, SB_INVALID, field,
                       "%s must not start or end with white space", what);
    return SB_OK;
}

/* The code point of the valid UTF-8 sequence at s[0..n). */
static uint32_t code_point(const unsigned char *s, size_t n)
{
    if (n == 1)
        return s[0];
    uint32_t cp = s[0] & (0x7f >> n);
    for (size_t k = 1; k < n; k++)
        cp = (cp << 6) | (s[k] & 0x3f);
    return cp;
}

/* White space beyond ASCII that a name may not start or end with:
 * Unicode's White_Space characters (U+0085, a C1 control, is refused as
 * one before this) and the invisible U+180E, U+200B and U+FEFF (a byte
 * order mark pasted in front of a name). */
static bool is_unicode_space(uint32_t cp)
{
    return cp == 0xa0 || cp == 0x1680 || cp == 0x180e ||
           (cp >= 0x2000 && cp <= 0x200b) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

/* Whether the valid, non-empty UTF-8 `name` of `len` bytes starts or ends
 * with a character is_unicode_space names. */
static bool unicode_space_at_ends(const char *name, size_t len)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t first = p[0] < 0xc0 ? 1 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
    size_t last = len - 1;
    while (last > 0 && (p[last] & 0xc0) == 0x80)
        last--;
    return is_unicode_space(code_point(p, first)) ||
           is_unicode_space(code_point(p + last, len - last));
}

int sb_validate_queue_name(const char *name, sb_error *err)
{
    int rc = sb__validate_name(name, 200, "queue", "queue name", err);
    /* T3's "no leading or trailing white space" for any white space: a
     * name that ends in U+00A0 or U+3000 looks like its neighbour
     * without it, and so is a second queue nobody means to make. */
    if (rc == SB_OK && unicode_space_at_ends(name, strlen(name)))
        return sb__err(err, SB_INVALID, "queue",
                       "queue name must not start or end with white space "
                       "(here Unicode white space, such as U+00A0, U+3000 "
                       "or U+FEFF)");
    return rc;
}

int sb_validate_correlation_id(const char *id, sb_error *err)
{
    return sb__validate_name(id, 400, "correlation_id", "correlation id", err);
}

int sb__validate_identifier(const char *name, size_t max_len, const char *field,
                            sb_error *err)
{
    if (name == NULL || name[0] == '\0')
        return sb__err(err, SB_INVALID, field, "%s must not be empty", field);
    size_t len = strlen(name);
    if (len > max_len)
        return sb__err(err, SB_INVALID, field,
                       "%s is %zu bytes; the limit is %zu", field, len,
                       max_len);
    if (name[0] >= '0' && name[0] <= '9')
        return sb__err(err, SB_INVALID, field, "%s must not start with a digit",
                       field);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_';
        if (!ok)
            return sb__err(err, SB_INVALID, field,
                           "%s may hold only letters, digits and '_' "
                           "(byte %zu is not)",
                           field, i);
    }
    return SB_OK;
}

int sb__out_struct(void *out, size_t want, const char *type, sb_error *err)
{
    size_t size;
    memcpy(&size, out, sizeof size);
    if (size < want)
        return sb__err(err, SB_INVALID, "size",
                       "%s.size must be set to sizeof(%s) (%zu; got %zu)", type,
                       type, want, size);
    memset(out, 0, want);
    memcpy(out, &size, sizeof size);
    return SB_OK;
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int sb__percent_byte(const char *p, size_t avail)
{
    if (avail < 3)
        return -1;
    int hi = hex_value(p[1]), lo = hex_value(p[2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
        return -1;
    return hi * 16 + lo;
}
