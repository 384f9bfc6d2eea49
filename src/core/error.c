/* error.c - result-code text and the caller-owned sb_error. */
#include "core.h"

#include <stdio.h>
#include <string.h>

/* The list of sqlbus.h, extended codes first: an exact match wins over
 * the class. */
static const struct {
    int code;
    const char *name, *text;
} codes[] = {
#define X(name, value, text) {(value), #name, text},
    SB_RESULT_EXTENDED(X) SB_RESULT_CODES(X)
#undef X
};

/* The primary codes are 0.. without a gap, so the class of any code is
 * found by the same walk. */
#define X(name, value, text) +1
_Static_assert(0 SB_RESULT_CODES(X) == SB_REPLY_ERROR + 1,
               "the primary result codes run 0 to SB_REPLY_ERROR");
#undef X

static int find(int rc)
{
    int n = (int)(sizeof codes / sizeof codes[0]);
    for (int i = 0; i < n; i++)
        if (codes[i].code == rc)
            return i;
    if (rc < 0)
        return -1;
    for (int i = 0; i < n; i++) /* an unknown detail: its class */
        if (codes[i].code == (rc & 0xff))
            return i;
    return -1;
}

const char *sb_strerror(int rc)
{
    int i = find(rc);
    return i < 0 ? "unknown result code" : codes[i].text;
}

const char *sb_result_name(int rc)
{
    int i = find(rc);
    return i < 0 ? "SB_UNKNOWN" : codes[i].name;
}

int sb_is_transient(int rc)
{
    int p = rc & 0xff;
    return p == SB_BUSY || p == SB_UNAVAILABLE;
}

void sb_error_clear(sb_error *err)
{
    if (err != NULL)
        memset(err, 0, sizeof *err);
}

int sb__strlcpy(char *dst, const char *src, size_t cap)
{
    if (cap == 0)
        return 1;
    size_t n = strlen(src);
    int trunc = n >= cap;
    if (trunc)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return trunc;
}

int sb__err(sb_error *err, int code, const char *field, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    err->native = 0;
    err->sqlstate[0] = '\0';
    sb__strlcpy(err->field, field != NULL ? field : "", sizeof err->field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}
