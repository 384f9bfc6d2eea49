/* http.c - the HTTP layer of `sqlbus serve` over libmicrohttpd
 * (docs/internals/server.md, "Requests"): request bodies with a cap,
 * routing, tokens, JSON-only mutations, the security headers on every
 * response, JSON errors, and the health routes. Routes whose handlers are
 * not built yet answer 501. */
#include "server/router.h"
#include "server/server.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define HEADER_MEMORY ((size_t)64 << 10)
#define QUERY_TEXT_MAX (SB_QUERY_MAX + 1)

/* Readiness (S8): ingestion counts as failing when its last pass failed
 * and none has worked for this long. */
#define READY_FAILED_FOR_MS 30000

struct sb_server {
    struct MHD_Daemon *daemon;
    sb_bus *bus;
    sb_errors *store;
    sb_loops *loops;
    char admin[SB_SERVER_TOKEN_MAX + 1], read[SB_SERVER_TOKEN_MAX + 1];
    size_t max_body;
    int port;
};

/* One request in flight: its body so far. */
typedef struct request {
    sb_buf body;
    int too_big;
} request;

/* Keep the path as it came: the router decodes each segment itself, so
 * an escaped '/' stays inside its segment. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *uri)
{
    (void)cls;
    (void)c;
    return strlen(uri);
}

static void completed(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    request *r = *ctx;
    if (r != NULL) {
        sb__buf_free(&r->body);
        sb__free(r);
        *ctx = NULL;
    }
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status,
                                 const sb_buf *body, const char *allow,
                                 int bearer)
{
    const char *text = body->failed || body->data == NULL ? "{}" : body->data;
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type",
                            "application/json; charset=utf-8");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; frame-ancestors 'none'");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (allow != NULL)
        MHD_add_response_header(resp, "Allow", allow);
    if (bearer)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* S7: {"error": code, "message": text, "field": name}, field omitted when
 * there is none. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
                                  const char *code, const char *message,
                                  const char *field, const char *allow)
{
    sb_buf b;
    sb__buf_init(&b, 4096);
    sb__buf_puts(&b, "{\"error\":");
    sb__buf_json_str(&b, code);
    sb__buf_puts(&b, ",\"message\":");
    sb__buf_json_str(&b, message);
    if (field != NULL && field[0] != '\0') {
        sb__buf_puts(&b, ",\"field\":");
        sb__buf_json_str(&b, field);
    }
    sb__buf_puts(&b, "}");
    enum MHD_Result rc = send_json(c, status, &b, allow, status == 401);
    sb__buf_free(&b);
    return rc;
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
    if ((s->admin[0] == '\0' && s->read[0] == '\0') || route == SB_R_HEALTH)
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

/* S11: a mutation's body must be JSON. */
static int json_content(struct MHD_Connection *c)
{
    const char *ct =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (ct == NULL)
        return 0;
    size_t n = strcspn(ct, "; \t");
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

/* The query string as it came (the arguments were left escaped), rebuilt
 * into the sb_buf `cls`. */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
    (void)kind;
    sb_buf *b = cls;
    if (b->len > 0)
        sb__buf_puts(b, "&");
    sb__buf_puts(b, key);
    if (value != NULL) {
        sb__buf_puts(b, "=");
        sb__buf_puts(b, value);
    }
    return MHD_YES;
}

/* A fixed JSON body: {"status": status}. */
static enum MHD_Result send_status(struct MHD_Connection *c, const char *st)
{
    sb_buf b;
    sb__buf_init(&b, 64);
    sb__buf_puts(&b, "{\"status\":");
    sb__buf_json_str(&b, st);
    sb__buf_puts(&b, "}");
    enum MHD_Result rc = send_json(c, 200, &b, NULL, 0);
    sb__buf_free(&b);
    return rc;
}

/* S8: the database reachable and its schema right, ingestion not
 * failing for READY_FAILED_FOR_MS, and the failed imports counted. */
static enum MHD_Result ready(const sb_server *s, struct MHD_Connection *c)
{
    sb_error err;
    int rc = sb_schema_verify(s->bus, &err);
    if (rc != SB_OK)
        return send_error(c, 503, "unavailable",
                          (rc & 0xff) == SB_SCHEMA
                              ? "the database schema is missing or wrong"
                              : "the database cannot be reached",
                          NULL, NULL);
    int64_t imports = -1;
    if (s->store != NULL &&
        sb_errors_failed_import_count(s->store, &imports, &err) != SB_OK)
        return send_error(c, 503, "unavailable",
                          "the error store cannot be read", NULL, NULL);
    sb_loops_state st;
    memset(&st, 0, sizeof st);
    st.last_ok_age_ms = -1;
    if (s->loops != NULL)
        sb__loops_state(s->loops, &st);
    int behind = s->loops != NULL && st.failing &&
                 (st.last_ok_age_ms < 0 ||
                  st.last_ok_age_ms > READY_FAILED_FOR_MS);
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
    enum MHD_Result r = send_json(c, behind ? 503 : 200, &b, NULL, 0);
    sb__buf_free(&b);
    return r;
}

static enum MHD_Result respond(sb_server *s, struct MHD_Connection *c,
                               const char *url, const char *method_text,
                               request *r)
{
    int method = sb__http_method(method_text);
    sb_route_match m;
    sb_error err;
    int rc = sb__route(method_text, url, &m, &err);
    if (rc == SB_INVALID)
        return send_error(c, 400, "invalid", err.message, err.field, NULL);
    if (rc == SB_NOTFOUND && m.allowed == 0)
        return send_error(c, 404, "not_found", "no such route", NULL, NULL);
    unsigned denied = check_token(s, c, method, m.route);
    if (denied == 401)
        return send_error(c, 401, "unauthorized",
                          "a valid token is required (Authorization: "
                          "Bearer TOKEN)",
                          NULL, NULL);
    if (denied == 403)
        return send_error(c, 403, "forbidden",
                          "the read-only token may only GET and HEAD", NULL,
                          NULL);
    if (rc == SB_NOTFOUND) {
        char allow[64] = "";
        allow_text(m.allowed, allow, sizeof allow);
        return send_error(c, 405, "method_not_allowed",
                          "this route does not take that method", NULL,
                          allow);
    }
    if (r->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "the request body must be at most %zu bytes",
                 s->max_body);
        return send_error(c, 413, "too_large", msg, "body", NULL);
    }
    if ((method & (SB_HTTP_POST | SB_HTTP_PUT | SB_HTTP_PATCH |
                   SB_HTTP_DELETE)) &&
        !json_content(c))
        return send_error(c, 415, "unsupported_media_type",
                          "a request that changes something must be sent "
                          "as Content-Type: application/json",
                          "Content-Type", NULL);
    sb_buf qt;
    sb__buf_init(&qt, QUERY_TEXT_MAX);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &qt);
    sb_query_params *q = sb__malloc(sizeof *q);
    rc = q == NULL   ? sb__err(&err, SB_NOMEM, NULL, "out of memory")
         : qt.failed ? sb__err(&err, SB_INVALID, "query",
                                 "the query string must be at most %d bytes",
                                 SB_QUERY_MAX)
                       : sb__query_parse(qt.len ? qt.data : "", q, &err);
    sb__buf_free(&qt);
    sb__free(q);
    if (rc == SB_NOMEM)
        return send_error(c, 503, "unavailable", "out of memory", NULL, NULL);
    if (rc != SB_OK)
        return send_error(c, 400, "invalid", err.message, err.field, NULL);
    switch (m.route) {
    case SB_R_HEALTH: return send_status(c, "ok");
    case SB_R_HEALTH_READY: return ready(s, c);
    default: break;
    }
    char msg[128];
    snprintf(msg, sizeof msg, "%s %s is not built yet", method_text,
             m.pattern);
    return send_error(c, 501, "not_implemented", msg, NULL, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_size, void **ctx)
{
    (void)version;
    sb_server *s = cls;
    request *r = *ctx;
    if (r == NULL) {
        r = sb__calloc(1, sizeof *r);
        if (r == NULL)
            return MHD_NO;
        sb__buf_init(&r->body, s->max_body);
        *ctx = r;
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
                       "a token must be at most %d bytes",
                       SB_SERVER_TOKEN_MAX);
    if (!loopback && admin[0] == '\0')
        return sb__err(err, SB_INVALID, "listen",
                       "listening on %s (not loopback) needs an admin token "
                       "(--token-file or SQLBUS_TOKEN)",
                       listen);
    sb_server *s = sb__calloc(1, sizeof *s);
    if (s == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    s->bus = bus;
    s->store = opts->store;
    s->loops = opts->loops;
    sb__strlcpy(s->admin, admin, sizeof s->admin);
    sb__strlcpy(s->read, read, sizeof s->read);
    s->max_body = opts->max_body ? opts->max_body : SB_SERVER_MAX_BODY;
    unsigned threads = opts->threads ? opts->threads : 2;
    unsigned timeout = opts->timeout_s ? opts->timeout_s : 30;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, HEADER_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, NULL, MHD_OPTION_END);
    if (s->daemon == NULL) {
        sb__free(s);
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

void sb__server_stop(sb_server *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    sb__free(s);
}
