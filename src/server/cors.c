/* cors.c - which origins may read the API and which may change anything
 * (see cors.h). An origin is compared in the form browsers send it:
 * scheme and host in lower case, the scheme's default port left out. */
#include "server/cors.h"

#include <string.h>
#include <strings.h>

/* An origin taken apart: 1 when `s` (`len` bytes) is scheme://host[:port]
 * with an optional trailing '/'; its normal form in `out` (cap bytes),
 * *authority where host[:port] starts in it. */
static int normal_origin(const char *s, size_t len, char *out, size_t cap,
                         const char **authority)
{
    size_t skip = 0;
    int https = 0;
    if (len >= 7 && strncasecmp(s, "http://", 7) == 0)
        skip = 7;
    else if (len >= 8 && strncasecmp(s, "https://", 8) == 0)
        skip = 8, https = 1;
    else
        return 0;
    if (len > skip && s[len - 1] == '/')
        len--;
    const char *h = s + skip, *end = s + len;
    const char *p = h;
    if (p < end && *p == '[') {
        for (p++; p < end && (strchr("0123456789abcdefABCDEF:.", *p) != NULL);
             p++)
            ;
        if (p >= end || *p != ']' || p == h + 1)
            return 0;
        p++;
    } else {
        for (;
             p < end &&
             ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_');
             p++)
            ;
        if (p == h)
            return 0;
    }
    size_t host_len = (size_t)(p - h);
    long port = -1;
    if (p < end && *p == ':') {
        port = 0;
        const char *d = ++p;
        for (; p < end && *p >= '0' && *p <= '9' && p - d < 5; p++)
            port = port * 10 + (*p - '0');
        if (p == d || port < 1 || port > 65535)
            return 0;
    }
    if (p != end)
        return 0;
    if (port == (https ? 443 : 80))
        port = -1;
    size_t need = skip + host_len + (port >= 0 ? 6 : 0) + 1;
    if (need > cap)
        return 0;
    memcpy(out, https ? "https://" : "http://", skip);
    for (size_t i = 0; i < host_len; i++) {
        char c = h[i];
        out[skip + i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    size_t n = skip + host_len;
    if (port >= 0) {
        char digits[8];
        size_t k = 0;
        for (long v = port; v > 0; v /= 10)
            digits[k++] = (char)('0' + v % 10);
        out[n++] = ':';
        while (k > 0)
            out[n++] = digits[--k];
    }
    out[n] = '\0';
    *authority = out + skip;
    return 1;
}

int sb__cors_add(sb_cors *c, const char *text, sb_error *err)
{
    sb_error_clear(err);
    if (text != NULL && strcmp(text, "*") == 0) {
        c->any = 1;
        return SB_OK;
    }
    size_t len = text != NULL ? strlen(text) : 0;
    if (c->n == SB_CORS_MAX)
        return sb__err(err, SB_INVALID, "cors_origin",
                       "at most %d origins may be named", SB_CORS_MAX);
    const char *authority = NULL;
    if (len > SB_CORS_ORIGIN_MAX ||
        !normal_origin(text, len, c->origins[c->n], sizeof c->origins[c->n],
                       &authority))
        return sb__err(err, SB_INVALID, "cors_origin",
                       "an origin must be * or http(s)://HOST[:PORT] with "
                       "no path, at most %d bytes (got \"%.60s\")",
                       SB_CORS_ORIGIN_MAX, text != NULL ? text : "");
    c->n++;
    return SB_OK;
}

int sb__cors_listed(const sb_cors *c, const char *origin)
{
    char o[SB_CORS_ORIGIN_MAX + 1];
    const char *authority;
    if (origin == NULL || c->n == 0 ||
        !normal_origin(origin, strlen(origin), o, sizeof o, &authority))
        return 0;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(o, c->origins[i]) == 0)
            return 1;
    return 0;
}

int sb__cors_readable(const sb_cors *c, const char *origin)
{
    return origin != NULL && (c->any || sb__cors_listed(c, origin));
}

/* Whether `authority` (host[:port] of a normal origin) is `host` (a
 * request's Host value), the scheme's default port aside. */
static int same_authority(const char *origin, const char *authority,
                          const char *host)
{
    if (host == NULL)
        return 0;
    size_t n = strlen(host);
    const char *dflt = strncmp(origin, "https:", 6) == 0 ? ":443" : ":80";
    size_t dn = strlen(dflt);
    if (n > dn && strcmp(host + n - dn, dflt) == 0)
        n -= dn;
    return strlen(authority) == n && strncasecmp(authority, host, n) == 0;
}

int sb__cors_may_change(const sb_cors *c, const char *origin, const char *host,
                        const char *forwarded_host)
{
    if (origin == NULL)
        return 1;
    char o[SB_CORS_ORIGIN_MAX + 1];
    const char *authority;
    if (!normal_origin(origin, strlen(origin), o, sizeof o, &authority))
        return 0; /* "null" and the like: a page of no origin */
    if (sb__cors_listed(c, origin) || same_authority(o, authority, host))
        return 1;
    if (forwarded_host != NULL) {
        /* A proxy's list: the first is the client's. */
        char fh[SB_CORS_ORIGIN_MAX + 1];
        size_t n = strcspn(forwarded_host, ", \t");
        if (n < sizeof fh) {
            memcpy(fh, forwarded_host, n);
            fh[n] = '\0';
            if (same_authority(o, authority, fh))
                return 1;
        }
    }
    if (!c->any)
        return 0;
    static const char *const local[] = {"localhost", "127.0.0.1", "[::1]"};
    size_t host_len = strcspn(authority, ":");
    if (authority[0] == '[')
        host_len = (size_t)(strchr(authority, ']') - authority) + 1;
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        if (strlen(local[i]) == host_len &&
            strncmp(authority, local[i], host_len) == 0)
            return 1;
    return 0;
}
