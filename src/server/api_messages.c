/* api_messages.c - ServiceControl's "messages" routes over the failed
 * messages (rule S4, issue 22): a message looked up by its message id
 * (what ServicePulse's message details do) or searched for, the newest
 * messages (messages2, the "All messages" screen) and a conversation's
 * messages, each entry a MessagesView (api_views.c). An error instance
 * of ServiceControl answers these with its failed messages and whatever
 * its audit instances add; sqlbus has the failed messages only. */
#include "server/views.h"

#include <jansson.h>
#include <string.h>

#include "server/isotime.h"

#define MESSAGES2_DEFAULT 50

/* ServiceControl's sort keys of its message views and the store's for
 * them: a failed message was processed, and its critical, delivery and
 * processing times end, at its time of failure; its id is sorted as its
 * message id, as the failed-message lists sort it. */
static const sb_api_sort_key sorts[] = {{"time_sent", "time_sent"},
                                        {"processed_at", "time_of_failure"},
                                        {"time_of_failure", "time_of_failure"},
                                        {"critical_time", "time_of_failure"},
                                        {"delivery_time", "time_of_failure"},
                                        {"processing_time", "time_of_failure"},
                                        {"id", "message_id"},
                                        {"message_id", "message_id"},
                                        {"status", "status"},
                                        {"message_type", "message_type"},
                                        {"modified", "status_changed"}};

/* sort and direction of the query into `q` (absent or empty: newest
 * failure first); 0 with the 400 in `out` for another value. */
static int order(const sb_query_params *qp, sb_failed_query *q,
                 sb_api_resp *out)
{
    q->sort = "time_of_failure";
    return sb__api_sort(qp, sorts, sizeof sorts / sizeof *sorts, q, out);
}

/* The MessagesViews of `s`, each message read whole (its headers are in
 * the view) and let go before the next, so one large body at a time is
 * held. A message gone since the list was read is left out. */
static int write_views(const sb_api *a, sb_failed_summary *const *s, size_t n,
                       sb_api_resp *out)
{
    sb_buf *b = &out->body;
    sb__buf_puts(b, "[");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        sb_failed_message *m = NULL;
        sb_error err;
        int rc = sb_errors_get(a->store, s[i]->unique_id, &m, &err);
        if ((rc & 0xff) == SB_NOTFOUND)
            continue;
        json_t *hj = NULL;
        if (rc != SB_OK || !sb__view_headers(sb_failed_headers(m), &hj, out)) {
            if (rc != SB_OK)
                sb__api_fail(out, rc, &err);
            sb_failed_message_free(m);
            sb__buf_reset(b);
            return 0;
        }
        sb_failed_summary whole;
        sb__view_summary_of(m, &whole);
        if (k++ > 0)
            sb__buf_puts(b, ",");
        sb__view_message(b, m, &whole, hj);
        json_decref(hj);
        sb_failed_message_free(m);
    }
    sb__buf_puts(b, "]");
    out->status = 200;
    return 1;
}

/* A page of the store's list for `q`, as MessagesViews, with the paging
 * headers for `path` (NULL: Total-Count only). */
static int page(const sb_api *a, const sb_api_req *r, sb_failed_query *q,
                const char *path, sb_api_resp *out)
{
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sb_error err;
    int rc = sb_errors_list(a->store, q, &s, &n, &total, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    if (write_views(a, s, n, out)) {
        if (path != NULL)
            sb__page_headers(out, path, r->q, q->page, q->per_page, total);
        else
            out->total = total;
    }
    sb_free(s);
    return 1;
}

/* Full-text search (E22) for `words`, at most `limit`, as MessagesViews,
 * kept when `keep` (NULL: all) says so; Total-Count is the number
 * answered. */
static int search(const sb_api *a, const char *words, size_t limit,
                  int (*keep)(const sb_failed_summary *, const void *),
                  const void *keep_user, sb_api_resp *out)
{
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_errors_search(a->store, words, limit, &s, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep == NULL || keep(s[i], keep_user))
            s[k++] = s[i];
    if (write_views(a, s, k, out))
        out->total = (int64_t)k;
    sb_free(s);
    return 1;
}

static sb_failed_query new_query(void)
{
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    return q;
}

/* GET messages/search/{keyword}: the messages whose message id is the
 * keyword (ServicePulse looks a failed message's details up so, then
 * picks its own by unique id); when none has it, a full-text search for
 * it, as ServiceControl's keyword search is. */
static int search_keyword(const sb_api *a, const sb_api_req *r,
                          sb_api_resp *out)
{
    const char *keyword = r->m->captures[0];
    sb_failed_query q = new_query();
    q.message_id = keyword;
    if (!sb__page_params(r->q, &q.page, &q.per_page, out) ||
        !order(r->q, &q, out))
        return 1;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sb_error err;
    int rc = sb_errors_list(a->store, &q, &s, &n, &total, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    if (total == 0) {
        sb_free(s);
        return search(a, keyword, q.per_page, NULL, NULL, out);
    }
    sb_buf path;
    sb__buf_init(&path, SB_SEGMENT_MAX * 3 + 64);
    sb__buf_puts(&path, "/api/messages/search/");
    sb__url_encode(&path, keyword);
    if (path.failed) /* the Link header's path */
        sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    else if (write_views(a, s, n, out))
        sb__page_headers(out, path.data, r->q, q.page, q.per_page, total);
    sb__buf_free(&path);
    sb_free(s);
    return 1;
}

/* A whole number of `name` from 1 to SB_API_MAX_PER_PAGE (absent or
 * empty: `dflt`); 0 with the 400 in `out`. */
static size_t size_param(const sb_query_params *qp, const char *name,
                         size_t dflt, sb_api_resp *out)
{
    const char *v = sb__query_get(qp, name);
    if (v == NULL || v[0] == '\0')
        return dflt;
    size_t n = 0;
    for (const char *p = v; *p && n <= SB_API_MAX_PER_PAGE; p++)
        n = *p >= '0' && *p <= '9' ? n * 10 + (size_t)(*p - '0')
                                   : SB_API_MAX_PER_PAGE + 1;
    if (n < 1 || n > SB_API_MAX_PER_PAGE)
        return sb__api_error(out, 400, "invalid", name,
                             "%s must be a whole number from 1 to %d", name,
                             SB_API_MAX_PER_PAGE),
               0;
    return n;
}

/* A time of `name` (absent or empty: 0, an open end); 0 with the 400 in
 * `out` when it is not an ISO 8601 time. */
static int time_param(const sb_query_params *qp, const char *name, int64_t *us,
                      sb_api_resp *out)
{
    const char *v = sb__query_get(qp, name);
    *us = 0;
    if (v == NULL || v[0] == '\0')
        return 1;
    if (sb__iso_parse(v, strlen(v), us) != SB_OK)
        return sb__api_error(out, 400, "invalid", name,
                             "%s must be an ISO 8601 time "
                             "(2026-12-01T21:00:00Z)",
                             name);
    return 1;
}

/* What messages2 narrows a search to: an endpoint and a time of failure
 * range. */
typedef struct narrow {
    const char *endpoint;
    int64_t from_us, to_us;
} narrow;

static int narrowed(const sb_failed_summary *s, const void *user)
{
    const narrow *w = user;
    return (w->endpoint == NULL ||
            strcmp(s->processing_endpoint, w->endpoint) == 0) &&
           (w->from_us == 0 || s->last_failure_us >= w->from_us) &&
           (w->to_us == 0 || s->last_failure_us <= w->to_us);
}

/* GET messages2: the newest messages (page_size of them), of an endpoint
 * (endpoint_name), failed from `from` to `to`, or found by `q`; one page,
 * with Total-Count. */
static int messages2(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_failed_query q = new_query();
    narrow w = {NULL, 0, 0};
    const char *words = sb__query_get(r->q, "q");
    const char *endpoint = sb__query_get(r->q, "endpoint_name");
    if ((q.per_page = size_param(r->q, "page_size", MESSAGES2_DEFAULT, out)) ==
            0 ||
        !order(r->q, &q, out) ||
        !time_param(r->q, "from", &q.failed_from_us, out) ||
        !time_param(r->q, "to", &q.failed_to_us, out))
        return 1;
    if (q.failed_to_us != 0 && q.failed_from_us > q.failed_to_us)
        return sb__api_error(out, 400, "invalid", "from",
                             "from must not be after to"),
               1;
    q.page = 1;
    q.endpoint = endpoint != NULL && endpoint[0] != '\0' ? endpoint : NULL;
    if (words == NULL || words[0] == '\0')
        return page(a, r, &q, NULL, out);
    w.endpoint = q.endpoint;
    w.from_us = q.failed_from_us;
    w.to_us = q.failed_to_us;
    return search(a, words, q.per_page, narrowed, &w, out);
}

/* GET conversations/{id}: the messages of a conversation, paged. */
static int conversation(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_failed_query q = new_query();
    q.conversation_id = r->m->captures[0];
    if (!sb__page_params(r->q, &q.page, &q.per_page, out) ||
        !order(r->q, &q, out))
        return 1;
    sb_buf path;
    sb__buf_init(&path, SB_SEGMENT_MAX * 3 + 64);
    sb__buf_puts(&path, "/api/conversations/");
    sb__url_encode(&path, q.conversation_id);
    int rc = 1;
    if (path.failed) /* the Link header's path */
        sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    else
        rc = page(a, r, &q, path.data, out);
    sb__buf_free(&path);
    return rc;
}

int sb__api_messages(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    switch (r->m->route) {
    case SB_R_MESSAGES_SEARCH_KEYWORD: return search_keyword(a, r, out);
    case SB_R_MESSAGES2: return messages2(a, r, out);
    case SB_R_CONVERSATION: return conversation(a, r, out);
    default: return 0;
    }
}
