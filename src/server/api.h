/*
 * api.h - the HTTP API's handlers (docs/http-api.md, rules S4-S7): what a
 * handler gets (the request, routed and with its query parsed) and what it
 * fills (a status, a JSON body, paging headers, or an error naming the
 * field). http.c owns the wire; handlers call the library only and never
 * see libmicrohttpd.
 */
#ifndef SB_SERVER_API_H
#define SB_SERVER_API_H

#include "server/router.h"
#include "server/server.h"

#define SB_API_BODY_MAX ((size_t)64 << 20) /* a response body's cap */
#define SB_API_JSON_DEPTH 32               /* S10: request JSON nesting */
#define SB_API_DEFAULT_PER_PAGE 50
#define SB_API_MAX_PER_PAGE 500 /* S10 */
/* Issue 22: bytes of an X-Particular-Reason header, and its NUL. */
#define SB_API_REASON_MAX 256

typedef struct sb_stats sb_stats;

/* What every handler may use; all borrowed from serve. */
typedef struct sb_api {
    sb_bus *bus;
    sb_errors *store;
    sb_operations *ops;   /* durable operations (the library's, S5) */
    sb_loops *loops;      /* may be NULL */
    sb_stats *stats;      /* the sampler (stats.c), may be NULL */
    const char *backend;  /* "sqlite" or "postgresql" */
    int64_t retention_ms; /* E21, for /api/configuration */
    int edit_enabled;     /* E18 */
} sb_api;

struct json_t;

typedef struct sb_api_req {
    int method; /* SB_HTTP_* */
    const sb_route_match *m;
    const sb_query_params *q;
    const char *body; /* NUL-terminated; "" when none */
    size_t body_len;
    /* The body parsed, of the shape the route declares (router.h), on a
     * route that takes one; NULL on the others. Borrowed. */
    const struct json_t *json;
    const char *idempotency_key; /* header, or NULL */
    /* Issue 22: where the client reached the API, for the root
     * document's URLs: the Host header, or the X-Forwarded-Host and
     * X-Forwarded-Proto a proxy set (NULL when absent). */
    const char *host, *forwarded_host, *forwarded_proto;
} sb_api_req;

typedef struct sb_api_resp {
    unsigned status;
    sb_buf body;            /* JSON unless content_type is set */
    char content_type[128]; /* "" = application/json */
    int64_t total;          /* >= 0: the Total-Count header */
    char link[2048];        /* "" or the Link header */
    char location[512];     /* "" or the Location header */
    /* An error: http.c writes {"error", "message", "field"}. */
    const char *code;
    char message[512];
    char field[64];
    unsigned retry_after_s; /* > 0: the Retry-After header (503s) */
    /* "" or the X-Particular-Reason header, printable ASCII (issue 22: a
     * redirect's 409 says "Duplicate" or "Dependents", as
     * ServiceControl's; a failed e-mail test says why, which ServicePulse
     * shows). */
    char reason[SB_API_REASON_MAX];
    /* Set by http.c before the handler runs: the time limit of each of
     * the request's statements (--request-timeout, S10), which the
     * timeout error names; 0 = none. */
    int64_t timeout_ms;
} sb_api_resp;

/* api.c: the query string of a routed request, as http.c rebuilt it
 * into `text` (a failed buffer: SB_TOOBIG over SB_QUERY_MAX bytes, or
 * SB_NOMEM), parsed into *out (transferred, sb__free). SB_NOMEM when
 * memory ran out (a 503), SB_INVALID naming the parameter (a 400). */
int sb__api_query(const sb_buf *text, sb_query_params **out, sb_error *err);

/* api.c: a response for a handler to fill (status 0, no Total-Count),
 * its body capped at SB_API_BODY_MAX and already holding room for
 * SB_API_BODY_RESERVE bytes, so the small answer to a change that has
 * committed (an operation accepted, a redirect, a publish, an edit) is
 * written without an allocation that could fail after the commit: a
 * change is never answered with an error. `timeout_ms` as timeout_ms
 * above. NULL when memory ran out (a 503). Free with sb__api_resp_free
 * (NULL-safe). */
#define SB_API_BODY_RESERVE 4096
sb_api_resp *sb__api_resp_new(int64_t timeout_ms);
void sb__api_resp_free(sb_api_resp *out);

/* api.c: run the handler of r->m->route. On a route that takes a body
 * (r->m->body) the body is parsed first — JSON, at most
 * SB_API_JSON_DEPTH deep, no duplicate names, of the declared shape —
 * and a body that is none of that is a 400 naming "body" before the
 * handler runs; the handler gets it as r->json. Always fills `out` (an
 * error status on failure). */
void sb__api_handle(const sb_api *a, const sb_api_req *r, sb_api_resp *out);

/* api_util.c: GET /api, the root document (issue 22): ServiceControl's
 * RootUrls, its URL templates on sqlbus's routes. */
int sb__api_root(const sb_api_req *r, sb_api_resp *out);

/* api.c: a filled response made ready for the wire: a body that could
 * not be written whole (memory ran out, or over SB_API_BODY_MAX) becomes
 * a 503 "unavailable" error, never a 2xx with a cut body. */
void sb__api_resp_finish(sb_api_resp *out);

/* api_util.c: the S7 error object {"error": code, "message": text,
 * "field": name} (field left out when empty) of an error answer with
 * *status, written into `b` (the caller's, initialised and freed by it).
 * Returns the text to send; when memory ran out writing it, a fixed
 * object of a 503 "unavailable" (*status set to 503), never a body that
 * is not the error. */
const char *sb__api_error_body(sb_buf *b, unsigned *status, const char *code,
                               const char *message, const char *field);

/* api.c, for the handlers: the response for a library failure (status by
 * result code; the library's message only for 4xx, never for a backend
 * fault; a statement cancelled at the request time limit is 503 "timeout"
 * with Retry-After: 1), and for the handler's own refusals. Both return
 * 0. */
int sb__api_fail(sb_api_resp *out, int rc, const sb_error *err);
int sb__api_error(sb_api_resp *out, unsigned status, const char *code,
                  const char *field, const char *fmt, ...) SB_PRINTF(5, 6);

/* api.c: JSON writers. A member `,"name":` (the comma only after the
 * first member, tracked in *first); strings NULL or "" are left out
 * (nulls omitted); times 0 are left out. */
void sb__json_key(sb_buf *b, int *first, const char *name);
void sb__json_str_m(sb_buf *b, int *first, const char *name, const char *v);
void sb__json_int_m(sb_buf *b, int *first, const char *name, int64_t v);
void sb__json_time_m(sb_buf *b, int *first, const char *name, int64_t us);
void sb__json_bool_m(sb_buf *b, int *first, const char *name, int v);

/* 0 when `obj` has a member not in the NULL-terminated `known` (the 400
 * naming it is in `out`), 1 otherwise. */
int sb__api_known_fields(const struct json_t *obj, const char *const *known,
                         sb_api_resp *out);

/* A sort key of the API and the library's name for it (S12: a
 * whitelist). */
typedef struct sb_api_sort_key {
    const char *api, *lib;
} sb_api_sort_key;
/* `sort` (one of the `n` keys; absent or empty: q->sort left as it is)
 * and `direction` (asc or desc, any case) of the query into `q`; 0 with
 * the 400 naming the parameter, and listing the keys, otherwise. */
int sb__api_sort(const sb_query_params *qp, const sb_api_sort_key *keys,
                 size_t n, sb_failed_query *q, sb_api_resp *out);

/* api.c: status names of the API ("unresolved", "retryIssued",
 * "resolved", "archived"), and back (case-insensitive; -1 if none). */
const char *sb__api_status_name(int status);
int sb__api_status_parse(const char *s, size_t len);

/* paging.c: page and per_page from the query (defaults 1 and 50, per_page
 * at most SB_API_MAX_PER_PAGE); 0 with the 400 in `out` when bad. */
int sb__page_params(const sb_query_params *q, size_t *page, size_t *per_page,
                    sb_api_resp *out);
/* paging.c: `s` percent-encoded for a path segment or query value (RFC
 * 3986's unreserved characters kept). */
void sb__url_encode(sb_buf *b, const char *s);
/* paging.c: Total-Count and the RFC 8288 Link header (first, prev, next,
 * last) for `path` with the request's other parameters kept. */
void sb__page_headers(sb_api_resp *out, const char *path,
                      const sb_query_params *q, size_t page, size_t per_page,
                      int64_t total);

/* api_errors.c: the error store's read routes (S4). 1 when `route` is
 * one of them (handled), else 0. */
int sb__api_errors_read(const sb_api *a, const sb_api_req *r, sb_api_resp *out);
/* api_groups.c: classifiers, groups, comments, redirects, operations. */
int sb__api_groups(const sb_api *a, const sb_api_req *r, sb_api_resp *out);
/* api_groups.c: one operation's JSON (shared with the 202 answers). */
void sb__api_op_json(sb_buf *b, const sb_operation_info *o);
/* api_groups.c: 1 when group `id` has a message of any status; else 0
 * with the 404 naming "id" (or the failure to read) in `out`. */
int sb__api_group_known(const sb_api *a, const char *id, sb_api_resp *out);
/* api_mutate.c: the error store's changes (S4, S5). */
int sb__api_errors_write(const sb_api *a, const sb_api_req *r,
                         sb_api_resp *out);
/* api_own.c: queues, publish, failed-messages, recovery, operations (S6).
 * Queue counts come from the sampler's newest sample while it is at most
 * SB_API_QUEUES_MAX_AGE_MS old (one scan of the queue table per sample,
 * whatever the number of clients polling), else from the database. */
#define SB_API_QUEUES_MAX_AGE_MS 10000
int sb__api_own(const sb_api *a, const sb_api_req *r, sb_api_resp *out);
/* api_schedules.c: periodic jobs (T41): list, add or replace, remove. */
int sb__api_schedules(const sb_api *a, const sb_api_req *r, sb_api_resp *out);
/* Issue 22, ServicePulse's screens beyond failed messages.
 * api_endpoints.c: endpoint liveness (endpoints, endpointssettings,
 * heartbeats/stats). */
int sb__api_endpoints(const sb_api *a, const sb_api_req *r, sb_api_resp *out);
/* api_sc_checks.c: sqlbus's own health as custom checks, and the event
 * log. */
int sb__api_sc_checks(const sb_api *a, const sb_api_req *r, sb_api_resp *out);
/* api_sc_misc.c: license, connection, e-mail notifications, remotes,
 * authentication. */
int sb__api_sc_misc(const sb_api *a, const sb_api_req *r, sb_api_resp *out);

#endif
