/* http.c - the HTTP layer of `sqlbus serve` over libmicrohttpd
 * (docs/internals/server.md, "Requests"): the connection limits and the
 * request-head deadline (deadline.c, "Slow clients"), request bodies
 * with a cap and refused on the routes that take none, routing, tokens,
 * JSON-only mutations, the security headers on every response, JSON
 * errors, ETags and 304, the health routes and the dashboard's files;
 * every other route goes to the handlers (api.c). */
#include "server/api.h"
#include "server/cors.h"
#include "server/deadline.h"
#include "server/metrics.h"
#include "server/notify.h"
#include "server/rawhead.h"
#include "server/router.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/ui.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define HEADER_MEMORY ((size_t)64 << 10)
#define QUERY_TEXT_MAX (SB_QUERY_MAX + 1)

/* Readiness (S8): ingestion counts as failing when its last pass failed
 * and none has worked for this long. */
#define READY_FAILED_FOR_MS 30000
/* The sampler behind /api/stats: a point every 5 s, an hour kept. */
#define STATS_INTERVAL_MS 5000

/* The dashboard's policy (S11): its own scripts and styles only. */
#define UI_CSP                                                                 \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src "        \
    "'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri "      \
    "'none'; form-action 'none'"
#define API_CSP "default-src 'none'; frame-ancestors 'none'; sandbox"
#define JSON_TYPE "application/json; charset=utf-8"

struct sb_server {
    struct MHD_Daemon *daemon;
    sb_bus *bus; /* the operations worker's and the sampler's */
    sb_errors *store;
    sb_bus *api_bus;      /* the requests' (S10): bus or a bus of its own */
    sb_errors *api_store; /* the error store over api_bus */
    int64_t request_timeout_ms;
    sb_loops *loops;
    sb_operations *ops;
    sb_metrics *metrics;
    sb_stats *stats;
    sb_notify *notify;     /* issue 22: health-check e-mails */
    sb_deadline *deadline; /* slow clients: the request-head deadline */
    sb_api api;
    char admin[SB_SERVER_TOKEN_MAX + 1], read[SB_SERVER_TOKEN_MAX + 1];
    sb_cors cors;   /* issue 22: the origins whose pages may call the API */
    sb_hosts hosts; /* issue 22: the Host names answered with no token */
    size_t max_body;
    int port;
};

/* One request in flight: its query string as it came, its body so far,
 * and for the metrics its route (the router's static pattern), the
 * status sent and when it began. */
typedef struct request {
    const sb_server *s;
    sb_deadline_slot *slot; /* the connection's, NULL when not watched */
    int begun;              /* its head has reached on_request */
    const char *target;     /* the request target in libmicrohttpd's buffer */
    size_t target_len;      /* its length as it came */
    int hidden_in;          /* where the head has a NUL (rawhead.h) */
    const char *hidden;     /* in which part */
    int head_unread;        /* no memory to look at the head for one */
    sb_buf query;
    sb_buf body;
    int too_big;
    sb_route_id route;
    const char *pattern;
    unsigned status;
    int64_t start_us;
    char reason[SB_API_REASON_MAX]; /* "" or the X-Particular-Reason */
} request;

/* Keep the path as it came: the router decodes each segment itself, so
 * an escaped '/' stays inside its segment. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *uri)
{
    (void)cls;
    (void)c;
    return strlen(uri);
}

/* Slow clients: each connection's slot in the head deadline, kept as
 * libmicrohttpd's socket context; freed before libmicrohttpd closes the
 * socket (it notifies first). */
static void connection_event(void *cls, struct MHD_Connection *c,
                             void **socket_context,
                             enum MHD_ConnectionNotificationCode code)
{
    sb_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *i =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context =
            i != NULL ? sb__deadline_open(s->deadline, i->connect_fd) : NULL;
    } else {
        sb__deadline_close(s->deadline, *socket_context);
        *socket_context = NULL;
    }
}

static sb_deadline_slot *slot_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i != NULL ? i->socket_context : NULL;
}

static void completed(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    sb_server *s = cls;
    request *r = *ctx;
    if (r != NULL) {
        /* A connection kept open waits for its next head from now. */
        sb__deadline_wait(s->deadline, r->slot);
        if (r->status != 0)
            sb__metrics_http(s->metrics, r->route, r->pattern, r->status,
                             sb__mono_us() - r->start_us);
        sb__buf_free(&r->query);
        sb__buf_free(&r->body);
        sb__free(r);
        *ctx = NULL;
    }
}

/* A response of `len` bytes (copied unless `persistent`) with its type,
 * its caching rule and the headers every response carries (S11); NULL
 * when libmicrohttpd has no memory. */
static struct MHD_Response *response(const void *data, size_t len,
                                     int persistent, const char *type,
                                     const char *csp, const char *cache)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)data,
        persistent ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return NULL;
    if (type != NULL)
        MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy", csp);
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", cache);
    return resp;
}

static const char *header_of(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* Issue 22: what a page of another origin may read of an answer. With
 * any origin served, `*` on every answer (the same for all, so a cached
 * answer serves every page); a listed origin is named, with credentials;
 * an origin neither gets nothing, and the browser keeps the answer from
 * its page. */
static void cors_headers(const request *r, struct MHD_Connection *c,
                         struct MHD_Response *resp)
{
    const sb_cors *cors = &r->s->cors;
    const char *origin = header_of(c, "Origin");
    if (cors->n > 0)
        MHD_add_response_header(resp, "Vary", "Origin");
    if (sb__cors_listed(cors, origin)) {
        /* Checked to be scheme://host[:port], nothing more (cors.c). */
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(resp, "Access-Control-Allow-Credentials",
                                "true");
    } else if (cors->any) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    } else {
        return;
    }
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            SB_CORS_EXPOSE_HEADERS);
}

/* Queue `resp` (NULL: none could be made) with `status`, kept for the
 * metrics, and let it go; the headers of every answer added first. */
static enum MHD_Result queue(request *r, struct MHD_Connection *c,
                             unsigned status, struct MHD_Response *resp)
{
    if (resp == NULL)
        return MHD_NO;
    cors_headers(r, c, resp);
    MHD_add_response_header(resp, "X-Particular-Version", SB_SERVER_SC_VERSION);
    if (r->reason[0] != '\0')
        MHD_add_response_header(resp, "X-Particular-Reason", r->reason);
    r->status = status;
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* The JSON `text` with `status`; `allow` (NULL: none) is the Allow
 * header, `bearer` asks for WWW-Authenticate, `retry_after_s` > 0 a
 * Retry-After. */
static enum MHD_Result send_json_text(request *r, struct MHD_Connection *c,
                                      unsigned status, const char *text,
                                      const char *allow, int bearer,
                                      unsigned retry_after_s)
{
    struct MHD_Response *resp =
        response(text, strlen(text), 0, JSON_TYPE, API_CSP, "no-store");
    if (resp != NULL && allow != NULL)
        MHD_add_response_header(resp, "Allow", allow);
    if (resp != NULL && bearer)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (resp != NULL && retry_after_s > 0) {
        char v[16];
        snprintf(v, sizeof v, "%u", retry_after_s);
        MHD_add_response_header(resp, "Retry-After", v);
    }
    return queue(r, c, status, resp);
}

/* The same with the text of `body` ("{}" when it could not be made). */
static enum MHD_Result send_json(request *r, struct MHD_Connection *c,
                                 unsigned status, const sb_buf *body,
                                 const char *allow, int bearer,
                                 unsigned retry_after_s)
{
    const char *text = body->failed || body->data == NULL ? "{}" : body->data;
    return send_json_text(r, c, status, text, allow, bearer, retry_after_s);
}

/* S7: {"error": code, "message": text, "field": name} (api_util.c),
 * field omitted when there is none; a Retry-After when `retry_after_s`
 * > 0. */
static enum MHD_Result send_error_after(request *r, struct MHD_Connection *c,
                                        unsigned status, const char *code,
                                        const char *message, const char *field,
                                        const char *allow,
                                        unsigned retry_after_s)
{
    sb_buf b;
    sb__buf_init(&b, 4096);
    const char *text = sb__api_error_body(&b, &status, code, message, field);
    enum MHD_Result rc =
        send_json_text(r, c, status, text, allow, status == 401, retry_after_s);
    sb__buf_free(&b);
    return rc;
}

static enum MHD_Result send_error(request *r, struct MHD_Connection *c,
                                  unsigned status, const char *code,
                                  const char *message, const char *field,
                                  const char *allow)
{
    return send_error_after(r, c, status, code, message, field, allow, 0);
}

/* The Allow header of a method mask. */
static void allow_text(int mask, char *out, size_t cap)
{
    static const struct {
        int bit;
        const char *name;
    } m[] = {{SB_HTTP_GET, "GET"},     {SB_HTTP_HEAD, "HEAD"},
             {SB_HTTP_POST, "POST"},   {SB_HTTP_PUT, "PUT"},
             {SB_HTTP_PATCH, "PATCH"}, {SB_HTTP_DELETE, "DELETE"}};
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if ((mask & m[i].bit) && len < cap) {
            int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "",
                             m[i].name);
            len += w > 0 ? (size_t)w : 0;
        }
}

/* Constant-time comparison of a presented token with a configured one
 * (S9): the time depends on the configured token's length only. */
static int token_is(const char *given, size_t given_len, const char *want)
{
    size_t n = strlen(want);
    if (n == 0)
        return 0;
    unsigned diff = given_len != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)(i < given_len ? given[i] : 0) ^ (unsigned)want[i];
    return diff == 0;
}

/* S9: 0 when the request may go on; else the status to answer. */
static unsigned check_token(const sb_server *s, struct MHD_Connection *c,
                            int method, sb_route_id route)
{
    /* Liveness and the dashboard's files hold no data; a browser cannot
     * send a Bearer header when it loads a page, so they stay open and
     * the page asks for the token its API calls need. */
    if ((s->admin[0] == '\0' && s->read[0] == '\0') || route == SB_R_HEALTH ||
        route == SB_R_UI || route == SB_R_UI_ASSET)
        return 0;
    const char *h =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return 401;
    const char *tok = h + 7;
    size_t len = strlen(tok);
    if (token_is(tok, len, s->admin))
        return 0;
    if (token_is(tok, len, s->read))
        return method & (SB_HTTP_GET | SB_HTTP_HEAD) ? 0 : 403;
    return 401;
}

/* S11: whether a Content-Type (NULL: none) is JSON. */
static int json_content(const char *ct)
{
    if (ct == NULL)
        return 0;
    size_t n = strcspn(ct, "; \t");
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

/* A fixed JSON body: {"status": status}. */
static enum MHD_Result send_status(request *r, struct MHD_Connection *c,
                                   const char *st)
{
    sb_buf b;
    sb__buf_init(&b, 64);
    sb__buf_puts(&b, "{\"status\":");
    sb__buf_json_str(&b, st);
    sb__buf_puts(&b, "}");
    enum MHD_Result rc = send_json(r, c, 200, &b, NULL, 0, 0);
    sb__buf_free(&b);
    return rc;
}

/* S8: the database reachable and its schema right, ingestion not
 * failing for READY_FAILED_FOR_MS, and the failed imports counted; read
 * through the API's bus, so a readiness probe is bounded like any
 * request. */
static enum MHD_Result ready(request *r, const sb_server *s,
                             struct MHD_Connection *c)
{
    sb_error err;
    int rc = sb_schema_verify(s->api_bus, &err);
    if (rc != SB_OK)
        return send_error(r, c, 503, "unavailable",
                          (rc & 0xff) == SB_SCHEMA
                              ? "the database schema is missing or wrong"
                              : "the database cannot be reached",
                          NULL, NULL);
    int64_t imports = -1;
    if (s->api_store != NULL &&
        sb_errors_failed_import_count(s->api_store, &imports, &err) != SB_OK)
        return send_error(r, c, 503, "unavailable",
                          "the error store cannot be read", NULL, NULL);
    sb_loops_state st;
    memset(&st, 0, sizeof st);
    st.last_ok_age_ms = -1;
    if (s->loops != NULL)
        sb__loops_state(s->loops, &st);
    int behind =
        s->loops != NULL && st.failing &&
        (st.last_ok_age_ms < 0 || st.last_ok_age_ms > READY_FAILED_FOR_MS);
    sb_buf b;
    sb__buf_init(&b, 512);
    sb__buf_printf(&b, "{\"status\":\"%s\"", behind ? "degraded" : "ready");
    if (s->loops != NULL)
        sb__buf_printf(&b,
                       ",\"ingestion\":{\"passes\":%lld,\"rows\":%lld,"
                       "\"failing\":%s,\"errors\":%lld,"
                       "\"last_ok_age_ms\":%lld}",
                       (long long)st.passes, (long long)st.rows,
                       st.failing ? "true" : "false", (long long)st.errors,
                       (long long)st.last_ok_age_ms);
    if (imports >= 0)
        sb__buf_printf(&b, ",\"failed_imports\":%lld", (long long)imports);
    sb__buf_puts(&b, "}");
    enum MHD_Result res = send_json(r, c, behind ? 503 : 200, &b, NULL, 0, 0);
    sb__buf_free(&b);
    return res;
}

/* FNV-1a (64 bits) of `len` bytes as a quoted strong ETag. */
static void etag_of(const void *p, size_t len, char out[20])
{
    uint64_t h = 14695981039346656037ULL;
    for (const unsigned char *u = p; len-- > 0; u++)
        h = (h ^ *u) * 1099511628211ULL;
    snprintf(out, 20, "\"%016llx\"", (unsigned long long)h);
}

/* Whether If-None-Match names `etag` (a list, "*", or weak forms). */
static int not_modified(struct MHD_Connection *c, const char *etag)
{
    const char *h =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
    if (h == NULL)
        return 0;
    size_t n = strlen(etag);
    for (const char *p = h; *p;) {
        p += strspn(p, " \t,");
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (*p == '*' || strncmp(p, etag, n) == 0)
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}

/* The dashboard (S13): embedded files with their ETags. */
static enum MHD_Result ui(request *r, struct MHD_Connection *c,
                          const char *name)
{
    const sb_ui_file *f = sb__ui_file(name);
    if (f == NULL)
        return send_error(r, c, 404, "not_found", "no such file", NULL, NULL);
    int same = not_modified(c, f->etag);
    struct MHD_Response *resp =
        response(same ? (const void *)"" : f->data, same ? 0 : f->len, 1,
                 f->content_type, UI_CSP, "no-cache");
    if (resp != NULL) {
        MHD_add_response_header(resp, "ETag", f->etag);
        MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    }
    return queue(r, c, same ? 304 : 200, resp);
}

/* A handler's response on the wire (made ready by sb__api_resp_finish):
 * an error object, or its body with the paging headers; a 200 answer to
 * GET or HEAD gets an ETag of its body, and a matching If-None-Match a
 * 304 (S5). */
static enum MHD_Result send_api(request *r, struct MHD_Connection *c,
                                int method, sb_api_resp *a)
{
    sb__api_resp_finish(a);
    sb__strlcpy(r->reason, a->reason, sizeof r->reason);
    if (a->code != NULL)
        return send_error_after(r, c, a->status, a->code, a->message, a->field,
                                NULL, a->retry_after_s);
    const char *data = a->body.data ? a->body.data : "";
    size_t len = a->body.len;
    char etag[20] = "";
    unsigned status = a->status;
    if (status == 200 && (method & (SB_HTTP_GET | SB_HTTP_HEAD))) {
        etag_of(data, len, etag);
        if (not_modified(c, etag)) {
            status = 304;
            len = 0;
        }
    }
    struct MHD_Response *resp =
        response(data, len, 0, a->content_type[0] ? a->content_type : JSON_TYPE,
                 API_CSP, "no-cache");
    if (resp == NULL)
        return MHD_NO;
    if (etag[0])
        MHD_add_response_header(resp, "ETag", etag);
    char total[24];
    if (a->total >= 0) {
        snprintf(total, sizeof total, "%lld", (long long)a->total);
        MHD_add_response_header(resp, "Total-Count", total);
    }
    if (a->link[0])
        MHD_add_response_header(resp, "Link", a->link);
    if (a->location[0])
        MHD_add_response_header(resp, "Location", a->location);
    return queue(r, c, status, resp);
}

/* S8: the Prometheus text exposition; its database reads go through the
 * API's bus (bounded like a request), whose counters are the server
 * bus's (sb_bus_count_into). */
static enum MHD_Result metrics(request *r, sb_server *s,
                               struct MHD_Connection *c)
{
    sb_buf b;
    sb__buf_init(&b, SB_API_BODY_MAX);
    sb_error err;
    int rc = sb__metrics_render(s->metrics, s->api_bus, s->api_store, s->loops,
                                s->notify, s->stats, &b, &err);
    if (rc != SB_OK || b.failed) {
        sb__buf_free(&b);
        return send_error(r, c, 503, "unavailable",
                          "the metrics could not be gathered", NULL, NULL);
    }
    struct MHD_Response *resp = response(
        b.data ? b.data : "", b.len, 0,
        "text/plain; version=0.0.4; charset=utf-8", API_CSP, "no-store");
    sb__buf_free(&b);
    return queue(r, c, 200, resp);
}

/* S6: the sampler's series of the last `minutes` (1 to 60, default 60),
 * with an ETag like every list. */
static enum MHD_Result stats(request *r, sb_server *s, struct MHD_Connection *c,
                             const sb_query_params *q)
{
    const char *v = sb__query_get(q, "minutes");
    int minutes = 60;
    if (v != NULL) {
        minutes = 0;
        for (const char *p = v; *p >= '0' && *p <= '9' && minutes <= 60; p++)
            minutes = minutes * 10 + (*p - '0');
        if (v[0] == '\0' || v[strspn(v, "0123456789")] != '\0' || minutes < 1 ||
            minutes > 60)
            return send_error(r, c, 400, "invalid",
                              "minutes must be a whole number from 1 to 60",
                              "minutes", NULL);
    }
    sb_api_resp *a = sb__api_resp_new(s->request_timeout_ms);
    if (a == NULL)
        return send_error(r, c, 503, "unavailable", "out of memory", NULL,
                          NULL);
    a->status = 200;
    sb_error err;
    if (sb__stats_json(s->stats, minutes, &a->body, &err) != SB_OK)
        sb__api_fail(a, SB_NOMEM, &err);
    enum MHD_Result rc = send_api(r, c, SB_HTTP_GET, a);
    sb__api_resp_free(a);
    return rc;
}

static enum MHD_Result dispatch(sb_server *s, struct MHD_Connection *c,
                                int method, const sb_route_match *m,
                                const sb_query_params *q, request *r)
{
    switch (m->route) {
    case SB_R_HEALTH: return send_status(r, c, "ok");
    case SB_R_HEALTH_READY: return ready(r, s, c);
    case SB_R_UI: return ui(r, c, "");
    case SB_R_UI_ASSET: return ui(r, c, m->captures[0]);
    case SB_R_METRICS: return metrics(r, s, c);
    case SB_R_STATS: return stats(r, s, c, q);
    default: break;
    }
    sb_api_req req = {.method = method,
                      .m = m,
                      .q = q,
                      .body = r->body.data ? r->body.data : "",
                      .body_len = r->body.len,
                      .idempotency_key = header_of(c, "Idempotency-Key"),
                      .host = header_of(c, "Host"),
                      .forwarded_host = header_of(c, "X-Forwarded-Host"),
                      .forwarded_proto = header_of(c, "X-Forwarded-Proto")};
    sb_api_resp *a = sb__api_resp_new(s->request_timeout_ms);
    if (a == NULL)
        return send_error(r, c, 503, "unavailable", "out of memory", NULL,
                          NULL);
    sb__api_handle(&s->api, &req, a);
    enum MHD_Result rc = send_api(r, c, method, a);
    sb__api_resp_free(a);
    return rc;
}

/* Issue 22: OPTIONS on a route. A browser's preflight (an Origin) from a
 * page that may read the API: 204 with the route's methods, the request
 * headers a page may send and how long to keep the answer; from another
 * page, 403 naming "origin". Without an Origin, 204 with Allow. No token
 * is needed: a browser never sends one with a preflight. */
static enum MHD_Result preflight(request *r, const sb_server *s,
                                 struct MHD_Connection *c,
                                 const sb_route_match *m)
{
    char methods[64] = "", allow[80];
    allow_text(m->allowed, methods, sizeof methods);
    snprintf(allow, sizeof allow, "%s, OPTIONS", methods);
    const char *origin = header_of(c, "Origin");
    if (origin != NULL && !sb__cors_readable(&s->cors, origin))
        return send_error(r, c, 403, "forbidden",
                          "pages of this origin may not call the API (serve "
                          "--cors-origin names the origins that may)",
                          "origin", NULL);
    struct MHD_Response *resp = response("", 0, 1, NULL, API_CSP, "no-store");
    if (resp != NULL) {
        MHD_add_response_header(resp, "Allow", allow);
        if (origin != NULL) {
            MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                                    allow);
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    SB_CORS_ALLOW_HEADERS);
            MHD_add_response_header(resp, "Access-Control-Max-Age",
                                    SB_CORS_MAX_AGE);
        }
    }
    return queue(r, c, 204, resp);
}

static enum MHD_Result respond(sb_server *s, struct MHD_Connection *c,
                               const char *url, const char *method_text,
                               request *r)
{
    int method = sb__http_method(method_text);
    /* S9, issue 20.4: a head whose strings were cut at a NUL is not
     * what it seems (a token, a path): refused before anything. */
    if (r->head_unread)
        return send_error(r, c, 503, "unavailable", "out of memory", NULL,
                          NULL);
    if (r->hidden_in != SB_HEAD_CLEAN) {
        /* A header's name is the client's: named when it is a short
         * token, else "header". */
        size_t n = strlen(r->hidden);
        int token = n > 0 && n <= 64;
        for (size_t i = 0; token && i < n; i++)
            token = r->hidden[i] > ' ' && r->hidden[i] < 0x7f;
        const char *part = token ? r->hidden : "header";
        char msg[160];
        if (r->hidden_in == SB_HEAD_LINE)
            snprintf(msg, sizeof msg, "the request line's %s holds a NUL byte",
                     part);
        else
            snprintf(msg, sizeof msg,
                     "the header %s holds a NUL byte, or is folded over "
                     "lines",
                     part);
        return send_error(r, c, 400, "invalid", msg, part, NULL);
    }
    /* Issue 22, DNS rebinding (cors.h): with no token, a request for a
     * name that is not this machine's is refused before anything. */
    if (!sb__host_allowed(&s->hosts, header_of(c, "Host")))
        return send_error(r, c, 403, "forbidden",
                          "with no token this server answers loopback names "
                          "only (localhost, 127.0.0.1, [::1]); ask for one "
                          "of those, name this host with serve "
                          "--allowed-host, or configure a token",
                          "host", NULL);
    sb_route_match m;
    sb_error err;
    int rc = sb__route(method_text, url, &m, &err);
    r->route = rc == SB_OK ? m.route : SB_R_NONE;
    r->pattern = rc == SB_OK ? m.pattern : NULL;
    if (rc == SB_INVALID)
        return send_error(r, c, 400, "invalid", err.message, err.field, NULL);
    if (rc == SB_NOTFOUND && m.allowed == 0)
        return send_error(r, c, 404, "not_found", "no such route", NULL, NULL);
    if (strcmp(method_text, "OPTIONS") == 0) {
        r->pattern = m.pattern;
        return preflight(r, s, c, &m);
    }
    unsigned denied = check_token(s, c, method, m.route);
    if (denied == 401)
        return send_error(r, c, 401, "unauthorized",
                          "a valid token is required (Authorization: "
                          "Bearer TOKEN)",
                          NULL, NULL);
    if (denied == 403)
        return send_error(r, c, 403, "forbidden",
                          "the read-only token may only GET and HEAD", NULL,
                          NULL);
    if (rc == SB_NOTFOUND) {
        char allow[64] = "";
        allow_text(m.allowed, allow, sizeof allow);
        return send_error(r, c, 405, "method_not_allowed",
                          "this route does not take that method", NULL, allow);
    }
    /* S11, issue 22: a page of another origin changes nothing unless
     * that origin is allowed to (cors.h): a bodiless POST needs no
     * preflight, so the browser would send it whatever CORS says. */
    if ((method &
         (SB_HTTP_POST | SB_HTTP_PUT | SB_HTTP_PATCH | SB_HTTP_DELETE)) &&
        !sb__cors_may_change(&s->cors, header_of(c, "Origin"),
                             header_of(c, "Host"),
                             header_of(c, "X-Forwarded-Host")))
        return send_error(r, c, 403, "forbidden",
                          "pages of this origin may not change anything "
                          "here (serve --cors-origin names the origins "
                          "that may)",
                          "origin", NULL);
    if (r->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "the request body must be at most %zu bytes",
                 s->max_body);
        return send_error(r, c, 413, "too_large", msg, "body", NULL);
    }
    /* S7, S11: a body must be JSON; a request with none needs no
     * Content-Type (ServicePulse sends its bodiless POSTs and DELETEs
     * so), but one that names another type is refused still: a form
     * posts its type with no field too. */
    const char *ct = header_of(c, "Content-Type");
    if ((method &
         (SB_HTTP_POST | SB_HTTP_PUT | SB_HTTP_PATCH | SB_HTTP_DELETE)) &&
        (ct != NULL || r->body.len > 0) && !json_content(ct))
        return send_error(r, c, 415, "unsupported_media_type",
                          "a request body must be sent as Content-Type: "
                          "application/json (a request with no body needs "
                          "no Content-Type)",
                          "Content-Type", NULL);
    if (r->body.failed)
        return send_error(r, c, 503, "unavailable", "out of memory", NULL,
                          NULL);
    /* S7: a route that takes no body refuses one (whatever it holds, even
     * whitespace) before anything runs; a route that takes one has it
     * parsed and its shape checked before its handler (api.c). */
    if (m.body != SB_BODY_OBJECT && m.body != SB_BODY_ARRAY &&
        m.body != SB_BODY_OBJECT_OR_ARRAY && r->body.len > 0)
        return send_error(r, c, 400, "invalid",
                          "this route takes no request body; send it with "
                          "none (its parameters are in the path and the "
                          "query string)",
                          "body", NULL);
    /* From here on as tests/fault/test_fault_http.c runs it (api.c). */
    sb_query_params *q = NULL;
    rc = sb__api_query(&r->query, &q, &err);
    enum MHD_Result res;
    if (rc == SB_NOMEM)
        res = send_error(r, c, 503, "unavailable", "out of memory", NULL, NULL);
    else if (rc != SB_OK)
        res = send_error(r, c, 400, "invalid", err.message, err.field, NULL);
    else
        res = dispatch(s, c, method, &m, q, r);
    sb__free(q);
    return res;
}

/* The body's length its Content-Length declares (0 when there is none),
 * or SIZE_MAX beyond SIZE_MAX. libmicrohttpd has already answered any
 * value that is not all digits itself, before this request began. */
static size_t declared_length(struct MHD_Connection *c)
{
    const char *v =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    size_t n = 0;
    for (const char *p = v; p != NULL && *p >= '0' && *p <= '9'; p++) {
        size_t d = (size_t)(*p - '0');
        if (n > (SIZE_MAX - d) / 10)
            return SIZE_MAX;
        n = n * 10 + d;
    }
    return n;
}

typedef struct field_list {
    sb_head_field *f;
    size_t n, cap;
} field_list;

static enum MHD_Result add_field(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
    (void)kind;
    field_list *l = cls;
    if (l->n < l->cap)
        l->f[l->n++] = (sb_head_field){key, value};
    return MHD_YES;
}

/* Issue 20.4: look at the request head as libmicrohttpd left it in its
 * buffer (`method` is its first byte) for bytes a NUL of the client's
 * hid from the strings it handed over (rawhead.h): where, and in which
 * part, into r->hidden_in and r->hidden. */
static void look_at_head(struct MHD_Connection *c, const char *method,
                         const char *version, request *r)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    int n = MHD_get_connection_values(c, MHD_HEADER_KIND, NULL, NULL);
    field_list l = {NULL, 0, n > 0 ? (size_t)n : 0};
    if (l.cap > 0 && (l.f = sb__calloc(l.cap, sizeof *l.f)) == NULL) {
        r->head_unread = 1;
        return;
    }
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_field, &l);
    sb_raw_head h = {.start = method,
                     .len = i != NULL ? i->header_size : 0,
                     .target = r->target,
                     .target_len = r->target_len,
                     .version = version,
                     .fields = l.f,
                     .n_fields = l.n};
    r->hidden_in = sb__head_hidden(&h, &r->hidden);
    sb__free(l.f);
}

/* A request of its own, or NULL when there is no memory. */
static request *request_new(const sb_server *s)
{
    request *r = sb__calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->s = s;
    sb__buf_init(&r->query, QUERY_TEXT_MAX);
    sb__buf_init(&r->body, s->max_body);
    r->start_us = sb__mono_us();
    return r;
}

/* A request begins with its request line (MHD_OPTION_URI_LOG_CALLBACK,
 * the request's context for the other callbacks, or NULL): sqlbus keeps
 * the query string as it came, and sb__query_parse alone reads it, with
 * its limits (issue 20.2). libmicrohttpd would otherwise split it into
 * its own memory for the connection right after this call, and 0.9.75
 * stalls a connection whose arguments run that memory out (about a
 * thousand of them) until its timeout, unanswered. So the text after the
 * '?' is ended where it starts: libmicrohttpd finds no argument to
 * split. `uri` is the request line in libmicrohttpd's own buffer, which
 * it goes on to cut up in place itself; the callback is documented for
 * "processing the URI (including the options) before it is parsed". */
static void *begin_request(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)c;
    request *r = request_new(cls);
    if (r != NULL) {
        r->target = uri;
        r->target_len = strlen(uri);
    }
    char *args = strchr(uri, '?');
    if (args == NULL)
        return r;
    if (r != NULL)
        sb__buf_puts(&r->query, args + 1);
    args[1] = '\0';
    return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_size, void **ctx)
{
    sb_server *s = cls;
    request *r = *ctx;
    if (r == NULL || !r->begun) {
        if (r == NULL) {
            /* begin_request had no memory: its query string is lost. */
            r = request_new(s);
            if (r == NULL)
                return MHD_NO;
            r->query.failed = SB_NOMEM;
            *ctx = r;
        }
        r->begun = 1;
        r->slot = slot_of(c);
        sb__deadline_head(s->deadline, r->slot);
        look_at_head(c, method, version, r);
        /* A body declared over the cap is refused now, not read first
         * (issue 20.3), when the client waits for leave to send it
         * (Expect: 100-continue); libmicrohttpd then closes. A client
         * already sending it has it read and dropped, then gets the same
         * 413: closing on a body in flight resets the connection, and
         * the reset can reach the client before the answer does. A head
         * with a NUL is refused now too. */
        const char *expect =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
        int waits = expect != NULL && strcasecmp(expect, "100-continue") == 0;
        r->too_big = declared_length(c) > s->max_body;
        if ((r->too_big && waits) || r->hidden_in != SB_HEAD_CLEAN ||
            r->head_unread)
            return respond(s, c, url, method, r);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!r->too_big && r->body.len + *upload_size <= s->max_body)
            sb__buf_append(&r->body, upload_data, *upload_size);
        else
            r->too_big = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    return respond(s, c, url, method, r);
}

static int no_registration(const sb_registration *r, void *user)
{
    (void)r;
    (void)user;
    return 1; /* one row is enough: stop */
}

/* The server's parts, in reverse order of their start; NULL-safe. */
static void release(sb_server *s)
{
    sb__notify_stop(s->notify);
    sb__deadline_stop(s->deadline);
    sb_operations_close(s->ops);
    sb__stats_stop(s->stats);
    sb__metrics_free(s->metrics);
    sb__free(s);
}

int sb__server_start(sb_bus *bus, const sb_server_options *opts,
                     sb_server **out, sb_error *err)
{
    sb_error_clear(err);
    *out = NULL;
    struct sockaddr_storage addr;
    socklen_t alen = 0;
    int loopback = 0;
    const char *listen = opts->listen ? opts->listen : SB_SERVER_LISTEN;
    int rc = sb__listen_parse(listen, &addr, &alen, &loopback, err);
    if (rc != SB_OK)
        return rc;
    const char *admin = opts->admin_token ? opts->admin_token : "";
    const char *read = opts->read_token ? opts->read_token : "";
    if (strlen(admin) > SB_SERVER_TOKEN_MAX ||
        strlen(read) > SB_SERVER_TOKEN_MAX)
        return sb__err(err, SB_INVALID, "token",
                       "a token must be at most %d bytes", SB_SERVER_TOKEN_MAX);
    if (!loopback && admin[0] == '\0')
        return sb__err(err, SB_INVALID, "listen",
                       "listening on %s (not loopback) needs an admin token "
                       "(--token-file or SQLBUS_TOKEN)",
                       listen);
    sb_cors cors;
    memset(&cors, 0, sizeof cors);
    int none = 0;
    for (size_t i = 0; i < opts->n_cors_origins; i++) {
        const char *o = opts->cors_origins[i];
        if (o != NULL && strcmp(o, "none") == 0)
            none = 1;
        else if ((rc = sb__cors_add(&cors, o, err)) != SB_OK)
            return rc;
    }
    if (none && (cors.any || cors.n > 0))
        return sb__err(err, SB_INVALID, "cors_origin",
                       "--cors-origin none cannot be given with origins");
    /* Issue 22: with no origin named, any page may call a server on
     * loopback with no token, as ServiceControl allows by default (what it
     * may change is cors.h's), and none may call one with tokens. */
    if (opts->n_cors_origins == 0)
        cors.any = loopback && admin[0] == '\0' && read[0] == '\0';
    sb_hosts hosts;
    memset(&hosts, 0, sizeof hosts);
    hosts.check = admin[0] == '\0' && read[0] == '\0';
    for (size_t i = 0; i < opts->n_allowed_hosts; i++)
        if ((rc = sb__hosts_add(&hosts, opts->allowed_hosts[i], err)) != SB_OK)
            return rc;
    sb_server *s = sb__calloc(1, sizeof *s);
    if (s == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    s->bus = bus;
    s->store = opts->store;
    s->api_bus = opts->api_bus != NULL ? opts->api_bus : bus;
    s->api_store = opts->api_bus != NULL ? opts->api_store : opts->store;
    if (s->api_bus != bus) {
        /* One process's traffic: what the API publishes counts in
         * /metrics and the charts with the rest. */
        sb_bus_count_into(s->api_bus, bus);
        /* The API's bus does no schema work, and the channel's tables
         * (GET /api/recovery) are created on first use under the main
         * bus's schema mode: use them once now, not at housekeeping's
         * first run a minute later. A failure here is the route's. */
        sb_registration_query q = {.size = sizeof q, .limit = 1};
        sb_error e;
        if (sb_recovery_registrations(bus, &q, no_registration, NULL, &e) !=
                SB_OK &&
            opts->log != NULL)
            opts->log(SB_LOG_WARN, "http", e.message, opts->log_user);
    }
    s->request_timeout_ms = opts->request_timeout_ms;
    s->loops = opts->loops;
    sb__strlcpy(s->admin, admin, sizeof s->admin);
    s->cors = cors;
    s->hosts = hosts;
    sb__strlcpy(s->read, read, sizeof s->read);
    s->max_body = opts->max_body ? opts->max_body : SB_SERVER_MAX_BODY;
    unsigned threads = opts->threads ? opts->threads : 2;
    unsigned max_conns = opts->max_connections ? opts->max_connections
                                               : SB_SERVER_MAX_CONNECTIONS;
    unsigned per_ip =
        opts->max_per_ip ? opts->max_per_ip : SB_SERVER_MAX_PER_IP;
    int64_t head_ms = opts->header_timeout_ms ? opts->header_timeout_ms
                                              : SB_SERVER_HEADER_TIMEOUT_MS;
    /* libmicrohttpd shares the connection limit among its threads. */
    rc = max_conns < threads || max_conns > SB_SERVER_CONNECTIONS_MAX
             ? sb__err(err, SB_INVALID, "max_connections",
                       "max_connections must be %u to %d", threads,
                       SB_SERVER_CONNECTIONS_MAX)
         : per_ip > SB_SERVER_CONNECTIONS_MAX
             ? sb__err(err, SB_INVALID, "max_per_ip",
                       "max_per_ip must be 1 to %d", SB_SERVER_CONNECTIONS_MAX)
             : sb__deadline_start(max_conns, head_ms, &s->deadline, err);
    if (rc == SB_OK)
        rc = sb__metrics_new(&s->metrics, err);
    sb_stats_options so = {.interval_ms = STATS_INTERVAL_MS,
                           .log = opts->log,
                           .log_user = opts->log_user};
    if (rc == SB_OK)
        rc = sb__stats_start(bus, s->store, s->loops, &so, &s->stats, err);
    sb_operations_options oo = {
        .size = sizeof oo, .log = opts->log, .log_user = opts->log_user};
    if (rc == SB_OK && s->store != NULL)
        rc = sb_operations_open(s->store, &oo, &s->ops, err);

    if (rc != SB_OK) {
        release(s);
        return rc;
    }
    s->api = (sb_api){.bus = s->api_bus,
                      .store = s->api_store,
                      .ops = s->ops,
                      .loops = s->loops,
                      .stats = s->stats,
                      .backend = sb_backend_name(s->api_bus),
                      .retention_ms = opts->retention_ms,
                      .edit_enabled = opts->edit_enabled};
    /* The notifications run on the server's bus, as the sampler: no
     * request's time limit, and the API bus stays the requests'. */
    sb_api own = s->api;
    own.bus = bus;
    own.store = s->store;
    rc = sb__notify_start(&own, opts->check_interval_ms, opts->log,
                          opts->log_user, &s->notify, err);
    if (rc != SB_OK) {
        release(s);
        return rc;
    }
    unsigned timeout = opts->timeout_s ? opts->timeout_s : 30;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_CONNECTION_LIMIT,
        max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
        MHD_OPTION_NOTIFY_CONNECTION, connection_event, s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, HEADER_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_URI_LOG_CALLBACK,
        begin_request, s, MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, NULL,
        MHD_OPTION_END);
    if (s->daemon == NULL) {
        release(s);
        return sb__err(err, SB_UNAVAILABLE, "listen",
                       "cannot listen on %s (in use, or not an address of "
                       "this host)",
                       listen);
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    *out = s;
    return SB_OK;
}

int sb__server_port(const sb_server *s)
{
    return s->port;
}

/* `s` appended to `out` (`cap` bytes), cut when it does not fit. */
static void append(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    if (n + 1 < cap)
        sb__strlcpy(out + n, s, cap - n);
}

void sb__server_cors_text(const sb_server *s, char *out, size_t cap)
{
    const sb_cors *c = &s->cors;
    out[0] = '\0';
    if (c->any)
        append(out, cap, c->n > 0 ? "any origin, and " : "any origin");
    for (size_t i = 0; i < c->n; i++) {
        if (i > 0)
            append(out, cap, ", ");
        append(out, cap, c->origins[i]);
    }
    if (c->n > 0)
        append(out, cap, " with credentials");
    if (!c->any && c->n == 0)
        append(out, cap, "none (the server's own pages only)");
}

void sb__server_stop(sb_server *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    release(s);
}
