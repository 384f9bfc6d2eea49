/* error.c - result-code text and the caller-owned sb_error. */
#include "core.h"

#include <stdio.h>
#include <string.h>

const char *sb_strerror(int rc)
{
    switch (rc & 0xff) {
    case SB_OK: return "ok";
    case SB_ERROR: return "error";
    case SB_INVALID: return "invalid argument";
    case SB_NOMEM: return "out of memory";
    case SB_NOTFOUND: return "not found";
    case SB_BUSY: return "busy (transient)";
    case SB_TIMEOUT: return "timed out";
    case SB_CONFLICT: return "conflict";
    case SB_BACKEND: return "database error";
    case SB_CLOSED: return "closed";
    case SB_LOST_LEASE: return "lease lost";
    case SB_SCHEMA: return "schema missing or wrong";
    case SB_UNAVAILABLE: return "database unavailable (transient)";
    case SB_TOOBIG: return "too big";
    case SB_MISUSE: return "API misuse";
    case SB_EMPTY: return "empty";
    default: return "unknown result code";
    }
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
