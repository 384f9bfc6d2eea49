/* api_errors.c - the error store's failed-message read routes (S4), in
 * ServiceControl's shapes: lists of FailedMessageView with their filters
 * and paging headers, one message (FailedMessage, FailedMessageView), its
 * body, search, the summary, the per-queue counts, the known endpoints
 * and the configuration; and sqlbus's own shapes of the same under
 * /api/sqlbus/ (issue 22). The views are api_views.c's; the message
 * routes (search by keyword, messages2, conversations) api_messages.c's. */
#include "server/api.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/isotime.h"
#include "server/views.h"

#define SUMMARY_TOP 50
#define COUNTS_MAX 1000
#define SEARCH_DEFAULT 50

/* Sort keys of the API and the library's names for them (S12: a
 * whitelist; anything else is a 400): sqlbus's, and ServiceControl's
 * (issue 22: id and message_id are its message id; ServicePulse's
 * "time_of_retry_request" is the status change that made it pending). */
static const sb_api_sort_key sorts[] = {
    {"time_of_failure", "time_of_failure"},
    {"message_type", "message_type"},
    {"queue_address", "failed_queue"},
    {"number_of_processing_attempts", "attempts"},
    {"modified", "status_changed"},
    {"id", "message_id"},
    {"message_id", "message_id"},
    {"status", "status"},
    {"time_sent", "time_sent"},
    {"time_of_retry_request", "status_changed"}};

/* The filters and order of a list from the query: status (a comma
 * list), modified (FROM...TO), queueaddress, messagetype, sort,
 * direction; an empty one is its default (issue 22: ServicePulse sends
 * "sort=&direction="). 0 with the 400 in `out` when one is bad. */
static int list_query(const sb_query_params *qp, sb_failed_query *q,
                      sb_api_resp *out)
{
    const char *v;
    if ((v = sb__query_get(qp, "status")) != NULL && v[0] != '\0') {
        for (const char *p = v; *p;) {
            size_t n = strcspn(p, ",");
            int st = sb__api_status_parse(p, n);
            if (st < 0)
                return sb__api_error(out, 400, "invalid", "status",
                                     "status must be a comma list of "
                                     "unresolved, retryIssued, resolved and "
                                     "archived");
            q->statuses |= SB_FAILED_BIT(st);
            p += n + (p[n] == ',');
        }
    }
    if ((v = sb__query_get(qp, "modified")) != NULL && v[0] != '\0') {
        sb_error err;
        if (sb__iso_range(v, "modified", &q->modified_from_us,
                          &q->modified_to_us, &err) != SB_OK)
            return sb__api_fail(out, SB_INVALID, &err), 0;
    }
    if ((v = sb__query_get(qp, "queueaddress")) != NULL && v[0] != '\0')
        q->failed_queue = v;
    if ((v = sb__query_get(qp, "messagetype")) != NULL && v[0] != '\0')
        q->message_type = v;
    return sb__api_sort(qp, sorts, sizeof sorts / sizeof *sorts, q, out);
}

/* A page of failed messages: the query's filters narrowed by the route
 * (an endpoint, a group), with the paging headers for `path`. */
static int list(const sb_api *a, const sb_api_req *r, const char *endpoint,
                const char *group_id, const char *path, sb_api_resp *out)
{
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    q.endpoint = endpoint;
    q.group_id = group_id;
    if (!sb__page_params(r->q, &q.page, &q.per_page, out) ||
        !list_query(r->q, &q, out))
        return 1;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sb_error err;
    int rc = sb_errors_list(a->store, &q, &s, &n, &total, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__page_headers(out, path, r->q, q.page, q.per_page, total);
    out->status = 200;
    if (r->method != SB_HTTP_HEAD)
        sb__view_failed_list(&out->body, s, n);
    sb_free(s);
    return 1;
}

/* How a message is shown: ServiceControl's FailedMessageView
 * (errors/last) or FailedMessage (errors/{id}), or sqlbus's own whole
 * view (the dashboard's). */
enum { SHOW_VIEW, SHOW_FAILED_MESSAGE, SHOW_OWN };

static int message(const sb_api *a, const char *id, int show, sb_api_resp *out)
{
    sb_failed_message *m = NULL;
    sb_error err;
    int rc = sb_errors_get(a->store, id, &m, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb_failed_summary s;
    sb__view_summary_of(m, &s);
    const char *headers = sb_failed_headers(m);
    json_t *hj = NULL;
    if (!sb__view_headers(headers, &hj, out)) {
        sb_failed_message_free(m);
        return 1;
    }
    out->status = 200;
    sb_buf *b = &out->body;
    if (show == SHOW_FAILED_MESSAGE)
        sb__view_failed_message(b, m, &s, hj);
    else /* the view's members, then (own) the detail's */
        sb__view_failed(b, &s, 1, hj);
    if (show != SHOW_OWN) {
        json_decref(hj);
        sb_failed_message_free(m);
        return 1;
    }
    if (!b->failed && b->len > 0) /* reopen the object */
        b->data[--b->len] = '\0';
    int f = 0;
    sb__json_str_m(b, &f, "content_type", sb__view_content_type(hj));
    sb__json_key(b, &f, "headers");
    sb__buf_puts(b, hj != NULL ? headers : "{}");
    sb__json_str_m(b, &f, "conversation_id",
                   sb_failed_field(m, "conversation_id"));
    sb__json_key(b, &f, "groups");
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *gid, *type, *title;
        sb_failed_group(m, i, &gid, &type, &title);
        int g = 1;
        sb__buf_puts(b, i ? ",{" : "{");
        sb__json_str_m(b, &g, "id", gid);
        sb__json_str_m(b, &g, "type", type);
        sb__json_str_m(b, &g, "title", title);
        sb__buf_puts(b, "}");
    }
    sb__buf_puts(b, "]");
    sb__json_key(b, &f, "status_history");
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < sb_failed_history_count(m); i++) {
        int st = 0, prev = 0;
        int64_t at = 0;
        sb_failed_history(m, i, &st, &prev, &at);
        int g = 1;
        sb__buf_puts(b, i ? ",{" : "{");
        sb__json_str_m(b, &g, "status", sb__api_status_name(st));
        sb__json_str_m(b, &g, "previous", sb__api_status_name(prev));
        sb__json_time_m(b, &g, "at", at);
        sb__buf_puts(b, "}");
    }
    sb__buf_puts(b, "]");
    size_t blen = 0;
    sb_failed_body(m, &blen);
    sb__json_int_m(b, &f, "body_size", (int64_t)blen);
    sb__json_bool_m(b, &f, "body_stored_externally",
                    sb_failed_body_stored_externally(m));
    /* Relative to the API root, as ServiceControl's: clients put their
     * root ("/api") before it (issue 22). */
    sb__json_key(b, &f, "body_url");
    sb__view_body_url(b, s.unique_id);
    sb__buf_puts(b, "}");
    json_decref(hj);
    sb_failed_message_free(m);
    return 1;
}

/* Content types served as they are; any other body is served as
 * application/octet-stream so a browser never renders it (S11). */
static int safe_type(const char *t)
{
    static const char *const ok[] = {"application/json", "text/plain",
                                     "application/xml", "text/xml"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strncasecmp(t, ok[i], strlen(ok[i])) == 0)
            return 1;
    return 0;
}

static int body(const sb_api *a, const char *id, sb_api_resp *out)
{
    sb_failed_message *m = NULL;
    sb_error err;
    int rc = sb_errors_get(a->store, id, &m, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    size_t len = 0;
    const void *data = sb_failed_body(m, &len);
    json_t *hj = NULL;
    if (!sb__view_headers(sb_failed_headers(m), &hj, out)) {
        sb_failed_message_free(m);
        return 1;
    }
    const char *type = sb__view_content_type(hj);
    if (type == NULL || !safe_type(type))
        type = sb_failed_body_text(m) != NULL && data != NULL
                   ? "text/plain; charset=utf-8"
                   : "application/octet-stream";
    sb__strlcpy(out->content_type, type, sizeof out->content_type);
    json_decref(hj);
    out->status = len == 0 ? 204 : 200;
    if (len > 0)
        sb__buf_append(&out->body, data, len);
    sb_failed_message_free(m);
    return 1;
}

static int search(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *q = sb__query_get(r->q, "q");
    if (q == NULL || q[0] == '\0')
        return sb__api_error(out, 400, "invalid", "q",
                             "q (the words to search for) is required"),
               1;
    size_t page = 1, per = SEARCH_DEFAULT;
    if (!sb__page_params(r->q, &page, &per, out))
        return 1;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_errors_search(a->store, q, per, &s, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    out->total = (int64_t)n;
    out->status = 200;
    sb__view_failed_list(&out->body, s, n);
    sb_free(s);
    return 1;
}

static void counts_array(sb_buf *b, sb_failed_count *const *c, size_t n,
                         const char *name_key, const char *count_key)
{
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        int f = 1;
        sb__buf_puts(b, i ? ",{" : "{");
        sb__json_str_m(b, &f, name_key, c[i]->name);
        sb__json_int_m(b, &f, count_key, c[i]->count);
        sb__buf_puts(b, "}");
    }
    sb__buf_puts(b, "]");
}

static int summary(const sb_api *a, sb_api_resp *out)
{
    sb_buf *b = &out->body;
    sb_error err;
    int64_t by_status[4] = {0, 0, 0, 0};
    int rc = sb_errors_status_counts(a->store, by_status, &err);
    sb__buf_puts(b, "{\"statuses\":{");
    for (int st = 0; st <= SB_FAILED_ARCHIVED; st++)
        sb__buf_printf(b, "%s\"%s\":%lld", st ? "," : "",
                       sb__api_status_name(st), (long long)by_status[st]);
    sb__buf_puts(b, "}");
    static const struct {
        const char *by, *key;
    } by[] = {{"endpoint", "endpoints"},
              {"message_type", "message_types"},
              {"failed_queue", "queues"}};
    for (size_t i = 0; rc == SB_OK && i < 3; i++) {
        sb_failed_count **c = NULL;
        size_t n = 0;
        rc = sb_errors_counts(a->store, by[i].by, SB_FAILED_UNRESOLVED,
                              SUMMARY_TOP, &c, &n, &err);
        sb__buf_printf(b, ",\"%s\":", by[i].key);
        counts_array(b, c, n, "name", "count");
        sb_free(c);
    }
    sb__buf_puts(b, "}");
    if (rc != SB_OK) {
        sb__buf_reset(b);
        return sb__api_fail(out, rc, &err), 1;
    }
    out->status = 200;
    return 1;
}

/* GET errors/summary: ServiceControl's summary of the unresolved
 * messages, counts by receiving endpoint, host and message type in
 * objects keyed by name (its dictionary keys, written as they are). The
 * store keeps no count per host: "Hosts" is empty. */
static int sc_summary(const sb_api *a, sb_api_resp *out)
{
    static const struct {
        const char *by, *key;
    } by[] = {{"endpoint", "Endpoints"}, {"message_type", "Message types"}};
    sb_buf *b = &out->body;
    sb_error err;
    int rc = SB_OK;
    sb__buf_puts(b, "{\"Hosts\":{}");
    for (size_t i = 0; rc == SB_OK && i < sizeof by / sizeof *by; i++) {
        sb_failed_count **c = NULL;
        size_t n = 0;
        rc = sb_errors_counts(a->store, by[i].by, SB_FAILED_UNRESOLVED,
                              COUNTS_MAX, &c, &n, &err);
        sb__buf_printf(b, ",\"%s\":{", by[i].key);
        for (size_t k = 0; k < n; k++) {
            sb__buf_puts(b, k ? "," : "");
            sb__buf_json_str(b, c[k]->name);
            sb__buf_printf(b, ":%lld", (long long)c[k]->count);
        }
        sb__buf_puts(b, "}");
        sb_free(c);
    }
    sb__buf_puts(b, "}");
    if (rc != SB_OK) {
        sb__buf_reset(b);
        return sb__api_fail(out, rc, &err), 1;
    }
    out->status = 200;
    return 1;
}

/* GET endpoints/known: ServiceControl's KnownEndpointsView of the
 * processing endpoints seen in failures, paged in memory: an id (its
 * DeterministicGuid of the name and host id, as ServiceControl's) and
 * the endpoint's details. The counts the list comes from know the name
 * only: the host id is ServiceControl's zero GUID. */
static int sc_known_endpoints(const sb_api *a, const sb_api_req *r,
                              sb_api_resp *out)
{
    size_t page = 1, per = SB_API_DEFAULT_PER_PAGE;
    if (!sb__page_params(r->q, &page, &per, out))
        return 1;
    sb_failed_count **c = NULL;
    size_t n = 0;
    sb_error err;
    int rc =
        sb_errors_counts(a->store, "endpoint", -1, COUNTS_MAX, &c, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    size_t from = (page - 1) * per < n ? (page - 1) * per : n;
    size_t k = n - from < per ? n - from : per;
    sb__page_headers(out, "/api/endpoints/known", r->q, page, per, (int64_t)n);
    sb_buf *b = &out->body;
    sb__buf_puts(b, "[");
    for (size_t i = from; i < from + k; i++) {
        char id[37];
        sb_deterministic_guid(c[i]->name, SB_VIEW_NO_HOST_ID, id);
        int f = 1, g = 1;
        sb__buf_puts(b, i > from ? ",{" : "{");
        sb__json_str_m(b, &f, "id", id);
        sb__json_key(b, &f, "endpoint_details");
        sb__buf_puts(b, "{");
        sb__json_str_m(b, &g, "name", c[i]->name);
        sb__json_str_m(b, &g, "host_id", SB_VIEW_NO_HOST_ID);
        sb__buf_puts(b, "}}");
    }
    sb__buf_puts(b, "]");
    sb_free(c);
    out->status = 200;
    return 1;
}

/* `ms` as a .NET TimeSpan is written ("[d.]hh:mm:ss[.fffffff]"), in
 * quotes: how ServiceControl's configuration gives its periods. */
static void timespan(sb_buf *b, int64_t ms)
{
    int64_t s = ms / 1000, days = s / 86400;
    sb__buf_puts(b, "\"");
    if (days > 0)
        sb__buf_printf(b, "%lld.", (long long)days);
    sb__buf_printf(b, "%02d:%02d:%02d", (int)(s / 3600 % 24),
                   (int)(s / 60 % 60), (int)(s % 60));
    if (ms % 1000 != 0)
        sb__buf_printf(b, ".%03d0000", (int)(ms % 1000));
    sb__buf_puts(b, "\"");
}

/* GET configuration: ServiceControl's configuration document, with what
 * sqlbus has of it: the instance, the error retention (ServicePulse
 * counts down to a message's deletion with it) and the transport. */
static int sc_configuration(const sb_api *a, sb_api_resp *out)
{
    sb_bus_counters *c = sb__calloc(1, sizeof *c);
    if (c == NULL)
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory"), 1;
    c->size = sizeof *c;
    sb_error err;
    int rc = sb_bus_metrics(a->bus, c, &err);
    if (rc != SB_OK) {
        sb__free(c);
        return sb__api_fail(out, rc, &err), 1;
    }
    sb_buf *b = &out->body;
    int f = 1, g = 1;
    sb__buf_puts(b, "{");
    sb__json_key(b, &f, "host");
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &g, "instance_name", "sqlbus");
    sb__buf_puts(b, "}");
    sb__json_key(b, &f, "data_retention");
    sb__buf_puts(b, "{\"error_retention_period\":");
    timespan(b, a->retention_ms);
    sb__buf_puts(b, "}");
    char transport[64];
    snprintf(transport, sizeof transport, "sqlbus (%s)", a->backend);
    sb__json_key(b, &f, "transport");
    g = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &g, "transport_type", transport);
    sb__json_str_m(b, &g, "error_queue", c->dead_letter_queue);
    sb__json_bool_m(b, &g, "forward_error_messages", 0);
    sb__buf_puts(b, "}}");
    sb__free(c);
    out->status = 200;
    return 1;
}

/* Counts of one column over every status, paged in memory (at most
 * COUNTS_MAX values). */
static int counts(const sb_api *a, const sb_api_req *r, const char *by,
                  const char *name_key, const char *count_key, const char *path,
                  sb_api_resp *out)
{
    size_t page = 1, per = SB_API_DEFAULT_PER_PAGE;
    if (!sb__page_params(r->q, &page, &per, out))
        return 1;
    sb_failed_count **c = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_errors_counts(a->store, by, -1, COUNTS_MAX, &c, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    size_t from = (page - 1) * per < n ? (page - 1) * per : n;
    size_t k = n - from < per ? n - from : per;
    sb__page_headers(out, path, r->q, page, per, (int64_t)n);
    counts_array(&out->body, c + from, k, name_key, count_key);
    sb_free(c);
    out->status = 200;
    return 1;
}

static int configuration(const sb_api *a, sb_api_resp *out)
{
    sb_buf *b = &out->body;
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "version", SB_VERSION_STRING);
    sb__json_str_m(b, &f, "backend", a->backend);
    sb__json_int_m(b, &f, "error_retention_ms", a->retention_ms);
    sb__json_bool_m(b, &f, "edit_enabled", a->edit_enabled);
    sb__json_int_m(b, &f, "max_per_page", SB_API_MAX_PER_PAGE);
    sb__buf_puts(b, "}");
    out->status = 200;
    return 1;
}

static int edit_config(const sb_api *a, sb_api_resp *out)
{
    sb_buf *b = &out->body;
    sb__buf_printf(b, "{\"enabled\":%s,\"locked_headers\":[",
                   a->edit_enabled ? "true" : "false");
    int i = 0;
    for (const char *const *l = sb_errors_locked_headers(); *l; l++, i++) {
        if (i > 0)
            sb__buf_puts(b, ",");
        sb__buf_json_str(b, *l);
    }
    sb__buf_puts(b, "],\"sensitive_headers\":[]}");
    out->status = 200;
    return 1;
}

int sb__api_errors_read(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const sb_route_match *m = r->m;
    switch (m->route) {
    case SB_R_ERRORS: return list(a, r, NULL, NULL, "/api/errors", out);
    case SB_R_ENDPOINT_ERRORS:
    case SB_R_GROUP_ERRORS: {
        int ep = m->route == SB_R_ENDPOINT_ERRORS;
        sb_buf path;
        sb__buf_init(&path, SB_SEGMENT_MAX * 3 + 64);
        sb__buf_puts(&path,
                     ep ? "/api/endpoints/" : "/api/recoverability/groups/");
        sb__url_encode(&path, m->captures[0]);
        sb__buf_puts(&path, "/errors");
        int rc = 1;
        if (path.failed) /* the Link header's path */
            sb__api_error(out, 503, "unavailable", NULL, "out of memory");
        else
            rc = list(a, r, ep ? m->captures[0] : NULL,
                      ep ? NULL : m->captures[0], path.data, out);
        sb__buf_free(&path);
        return rc;
    }
    case SB_R_ERROR:
        return message(a, m->captures[0], SHOW_FAILED_MESSAGE, out);
    case SB_R_ERROR_LAST: return message(a, m->captures[0], SHOW_VIEW, out);
    case SB_R_OWN_ERROR: return message(a, m->captures[0], SHOW_OWN, out);
    case SB_R_MESSAGES_SEARCH_KEYWORD:
    case SB_R_MESSAGES2:
    case SB_R_CONVERSATION: return sb__api_messages(a, r, out);
    case SB_R_MESSAGE_BODY: return body(a, m->captures[0], out);
    case SB_R_SEARCH: return search(a, r, out);
    case SB_R_ERRORS_SUMMARY: return sc_summary(a, out);
    case SB_R_OWN_ERRORS_SUMMARY: return summary(a, out);
    case SB_R_ERRORS_QUEUE_ADDRESSES:
        return counts(a, r, "failed_queue", "physical_address",
                      "failed_message_count", "/api/errors/queues/addresses",
                      out);
    case SB_R_KNOWN_ENDPOINTS: return sc_known_endpoints(a, r, out);
    case SB_R_OWN_KNOWN_ENDPOINTS:
        return counts(a, r, "endpoint", "name", "failed_message_count",
                      "/api/sqlbus/endpoints/known", out);
    case SB_R_CONFIGURATION: return sc_configuration(a, out);
    case SB_R_OWN_CONFIGURATION: return configuration(a, out);
    case SB_R_EDIT_CONFIG: return edit_config(a, out);
    default: return 0;
    }
}
