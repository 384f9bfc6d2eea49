/*
 * cors.h - cross-origin requests to `sqlbus serve` (docs/http-api.md,
 * "Cross-origin requests"; issue 22, rules S9, S11): which origins a
 * browser page may read the API from, and which may change anything.
 * Pure: no I/O, no allocation; the set is the caller's, its text capped.
 */
#ifndef SB_SERVER_CORS_H
#define SB_SERVER_CORS_H

#include "core/core.h"

#define SB_CORS_MAX 16         /* origins named with --cors-origin */
#define SB_CORS_ORIGIN_MAX 300 /* bytes of one: scheme://host:port */

/* What a preflight may ask for and an answer lets a page read. */
#define SB_CORS_ALLOW_HEADERS                                                  \
    "Accept, Authorization, Content-Type, Idempotency-Key, If-None-Match, "    \
    "X-Requested-With"
#define SB_CORS_EXPOSE_HEADERS                                                 \
    "ETag, Last-Modified, Link, Total-Count, X-Particular-Version, "           \
    "X-Particular-Reason, Content-Disposition, Location, Retry-After"
#define SB_CORS_MAX_AGE "600"

/* The origins served: any (`*`) and/or a list of exact ones. */
typedef struct sb_cors {
    int any;
    size_t n;
    char origins[SB_CORS_MAX][SB_CORS_ORIGIN_MAX + 1];
} sb_cors;

/* Add one --cors-origin value: "*", or "http://HOST[:PORT]" /
 * "https://HOST[:PORT]" (HOST a name, an IPv4 address or a bracketed
 * IPv6 one; a trailing '/' is dropped; kept in lower case). SB_INVALID
 * naming "cors_origin": anything else (a path, a query, user info), more
 * than SB_CORS_MAX origins, or one over SB_CORS_ORIGIN_MAX bytes. */
int sb__cors_add(sb_cors *c, const char *text, sb_error *err);

/* Whether a page of `origin` (a request's Origin header, NULL: none) may
 * read the answers: any origin is served, or it is one of the list. */
int sb__cors_readable(const sb_cors *c, const char *origin);

/* Whether it is one of the list (exactly, case aside): such an answer
 * names it and allows credentials. */
int sb__cors_listed(const sb_cors *c, const char *origin);

/* Whether a request from `origin` may change anything (S11): no Origin
 * (not a browser's cross-site request), an origin of the list, the
 * server's own (`origin`'s host and port are the request's Host, or the
 * X-Forwarded-Host a proxy set: `host`, `forwarded_host`, NULL when
 * absent), or, when any origin is served, a page on this machine
 * (http or https on localhost, 127.0.0.1 or [::1]). A page elsewhere
 * reads with `*` but changes nothing unless it is listed. */
int sb__cors_may_change(const sb_cors *c, const char *origin, const char *host,
                        const char *forwarded_host);

#endif
