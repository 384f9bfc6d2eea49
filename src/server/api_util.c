/* api_util.c - what the API's handlers share (see api.h): errors by
 * result code (S7), the JSON member writers, unknown fields refused
 * (S10), and the status names. */
#include "server/api.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/isotime.h"

int sb__api_error(sb_api_resp *out, unsigned status, const char *code,
                  const char *field, const char *fmt, ...)
{
    out->status = status;
    out->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    sb__strlcpy(out->field, field ? field : "", sizeof out->field);
    return 0;
}

int sb__api_fail(sb_api_resp *out, int rc, const sb_error *err)
{
    const char *field = err->field[0] ? err->field : NULL;
    if ((rc & 0xff) == SB_TIMEOUT &&
        strcmp(err->field, "statement_timeout_ms") == 0) {
        /* S10: a statement of this request ran into the API bus's limit
         * and was cancelled (any other deadline, and a pool that stays
         * busy, which is SB_BUSY, answer "unavailable" below). The same
         * request may well pass when the database is less loaded. */
        out->retry_after_s = 1;
        if (out->timeout_ms > 0)
            return sb__api_error(out, 503, "timeout", NULL,
                                 "the request took longer than the "
                                 "server's limit of %lld ms "
                                 "(--request-timeout)",
                                 (long long)out->timeout_ms);
        return sb__api_error(out, 503, "timeout", NULL,
                             "the request took longer than the server's "
                             "limit (--request-timeout)");
    }
    switch (rc & 0xff) {
    case SB_INVALID:
        return sb__api_error(out, 400, "invalid", field, "%s", err->message);
    case SB_NOTFOUND:
        return sb__api_error(out, 404, "not_found", field, "%s", err->message);
    case SB_CONFLICT:
        return sb__api_error(out, 409, "conflict", field, "%s", err->message);
    case SB_TOOBIG:
        return sb__api_error(out, 413, "too_large", field, "%s", err->message);
    case SB_MISUSE:
        return sb__api_error(out, 409, "conflict", field, "%s", err->message);
    case SB_BUSY:
    case SB_UNAVAILABLE:
    case SB_TIMEOUT:
    case SB_CLOSED:
    case SB_NOMEM:
        return sb__api_error(out, 503, "unavailable", NULL,
                             "the database is busy or cannot be reached; "
                             "try again");
    case SB_SCHEMA:
        return sb__api_error(out, 503, "unavailable", NULL,
                             "the database schema is missing or wrong");
    default: /* S7: a backend's text may hold SQL; it stays in the log */
        return sb__api_error(out, 500, "internal", NULL,
                             "the request failed inside the server (%s)",
                             sb_strerror(rc));
    }
}

const char *sb__api_error_body(sb_buf *b, unsigned *status, const char *code,
                               const char *message, const char *field)
{
    sb__buf_puts(b, "{\"error\":");
    sb__buf_json_str(b, code);
    sb__buf_puts(b, ",\"message\":");
    sb__buf_json_str(b, message);
    if (field != NULL && field[0] != '\0') {
        sb__buf_puts(b, ",\"field\":");
        sb__buf_json_str(b, field);
    }
    sb__buf_puts(b, "}");
    if (!b->failed && b->data != NULL)
        return b->data;
    /* No memory for the object: what out of memory is (S7), in a text
     * that needs none. The request may be made again. */
    *status = 503;
    return "{\"error\":\"unavailable\",\"message\":\"out of memory\"}";
}

/* ---- JSON writers ---- */

void sb__json_key(sb_buf *b, int *first, const char *name)
{
    if (!*first)
        sb__buf_puts(b, ",");
    *first = 0;
    sb__buf_json_str(b, name);
    sb__buf_puts(b, ":");
}

void sb__json_str_m(sb_buf *b, int *first, const char *name, const char *v)
{
    if (v == NULL || v[0] == '\0')
        return;
    sb__json_key(b, first, name);
    sb__buf_json_str(b, v);
}

void sb__json_int_m(sb_buf *b, int *first, const char *name, int64_t v)
{
    sb__json_key(b, first, name);
    sb__buf_printf(b, "%lld", (long long)v);
}

void sb__json_time_m(sb_buf *b, int *first, const char *name, int64_t us)
{
    if (us <= 0)
        return;
    char t[SB_ISO_TIME_LEN];
    sb__iso_time(us, t);
    sb__json_key(b, first, name);
    sb__buf_json_str(b, t);
}

void sb__json_bool_m(sb_buf *b, int *first, const char *name, int v)
{
    sb__json_key(b, first, name);
    sb__buf_puts(b, v ? "true" : "false");
}

int sb__api_known_fields(const json_t *obj, const char *const *known,
                         sb_api_resp *out)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        int ok = 0;
        for (size_t i = 0; known[i] != NULL && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok) {
            sb__api_error(out, 400, "invalid", k,
                          "unknown field \"%.60s\" in the body", k);
            return 0;
        }
    }
    return 1;
}

int sb__api_sort(const sb_query_params *qp, const sb_api_sort_key *keys,
                 size_t n, sb_failed_query *q, sb_api_resp *out)
{
    const char *v = sb__query_get(qp, "sort");
    if (v != NULL && v[0] != '\0') {
        const char *lib = NULL;
        for (size_t i = 0; i < n && lib == NULL; i++)
            if (strcmp(v, keys[i].api) == 0)
                lib = keys[i].lib;
        if (lib == NULL) {
            char list[512] = "";
            size_t len = 0;
            for (size_t i = 0; i < n && len < sizeof list; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                                        i == 0      ? ""
                                        : i + 1 < n ? ", "
                                                    : " or ",
                                        keys[i].api);
            return sb__api_error(out, 400, "invalid", "sort", "sort must be %s",
                                 list);
        }
        q->sort = lib;
    }
    v = sb__query_get(qp, "direction");
    if (v != NULL && v[0] != '\0') {
        if (strcasecmp(v, "asc") != 0 && strcasecmp(v, "desc") != 0)
            return sb__api_error(out, 400, "invalid", "direction",
                                 "direction must be asc or desc");
        q->ascending = strcasecmp(v, "asc") == 0;
    }
    return 1;
}

/* ---- statuses ---- */

static const char *const status_names[] = {"unresolved", "retryIssued",
                                           "resolved", "archived"};

const char *sb__api_status_name(int status)
{
    return status >= 0 && status <= SB_FAILED_ARCHIVED ? status_names[status]
                                                       : "unknown";
}

int sb__api_status_parse(const char *s, size_t len)
{
    for (int i = 0; i <= SB_FAILED_ARCHIVED; i++)
        if (strlen(status_names[i]) == len &&
            strncasecmp(s, status_names[i], len) == 0)
            return i;
    return -1;
}

/* ---- the root document (issue 22) ---- */

/* Whether `h` may stand in a URL as its host[:port]: a name or address
 * and a port, nothing that could end the URL or the JSON text. */
static int host_ok(const char *h, size_t n)
{
    if (n == 0 || n > 255)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || strchr(".-_:[]", c) != NULL))
            return 0;
    }
    return 1;
}

int sb__api_root(const sb_api_req *r, sb_api_resp *out)
{
    if (r->m->route != SB_R_ROOT)
        return 0;
    /* Absolute on the host the client reached, as ServiceControl's are
     * (behind a proxy the public one it names); relative to the server
     * when the host is none or unusable. */
    const char *host = r->forwarded_host != NULL ? r->forwarded_host : r->host;
    size_t n = host != NULL ? strcspn(host, ", \t") : 0;
    const char *scheme =
        r->forwarded_proto != NULL &&
                strncasecmp(r->forwarded_proto, "https", 5) == 0 &&
                (r->forwarded_proto[5] == '\0' || r->forwarded_proto[5] == ',')
            ? "https"
            : "http";
    char base[300];
    if (host_ok(host, n))
        snprintf(base, sizeof base, "%s://%.*s/api/", scheme, (int)n, host);
    else
        snprintf(base, sizeof base, "/api/");
    static const struct {
        const char *name, *path;
    } urls[] = {
        {"errors_url", "errors/{?page,per_page,direction,sort}"},
        {"endpoints_error_url",
         "endpoints/{name}/errors/{?page,per_page,direction,sort}"},
        {"message_search_url",
         "messages/search{?q,page,per_page,direction,sort}"},
        {"configuration", "configuration"},
        {"archived_groups_url", "errors/groups/{classifier?}"},
        {"get_archive_group", "archive/groups/id/{groupId}"},
        {"endpoints_url", "endpoints"},
        {"event_log_items", "eventlogitems"},
        {"license_details", "license/details"},
        {"remote_configuration", "configuration/remotes"},
    };
    sb_buf *b = &out->body;
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "name", "sqlbus");
    sb__json_str_m(b, &f, "description",
                   "sqlbus: the error store and HTTP API of a message bus "
                   "on SQL, in ServiceControl's shapes");
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
        sb__json_key(b, &f, urls[i].name);
        sb__buf_puts(b, "\"");
        sb__buf_puts(b, base);
        sb__buf_puts(b, urls[i].path);
        sb__buf_puts(b, "\"");
    }
    /* Relative to the API's root, as ServiceControl's (for proxies). */
    sb__json_str_m(b, &f, "known_endpoints_url", "/endpoints/known");
    /* sqlbus needs no license. */
    sb__json_str_m(b, &f, "license_status", "valid");
    sb__buf_puts(b, "}");
    out->status = 200;
    return 1;
}
