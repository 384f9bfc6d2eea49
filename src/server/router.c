/* router.c - the HTTP API's route table and the matching of a request's
 * path and query string against it (see router.h). A pattern is a list of
 * '/'-separated segments: a fixed word, "{name}" (captures one segment)
 * or "{from}...{to}" (captures the two sides of "..." in one segment). */
#include "server/router.h"

#include <string.h>

#define MAX_SEGMENTS 8
#define GET_ (SB_HTTP_GET | SB_HTTP_HEAD)

/* A route: its methods, its pattern, and the methods of those that take
 * a body with the kind they take (every other method takes none). */
typedef struct route {
    int methods;
    const char *pattern;
    sb_route_id id;
    int body_methods;
    sb_body_kind body;
} route;

#define NO_BODY 0, SB_BODY_NONE
#define BODY(methods, kind) methods, kind

static const route routes[] = {
    {GET_, "/api", SB_R_ROOT, NO_BODY},
    {GET_, "/api/errors", SB_R_ERRORS, NO_BODY},
    {GET_, "/api/errors/{id}", SB_R_ERROR, NO_BODY},
    {GET_, "/api/errors/last/{id}", SB_R_ERROR_LAST, NO_BODY},
    {GET_, "/api/errors/summary", SB_R_ERRORS_SUMMARY, NO_BODY},
    {GET_, "/api/errors/queues/addresses", SB_R_ERRORS_QUEUE_ADDRESSES,
     NO_BODY},
    {GET_, "/api/endpoints/{name}/errors", SB_R_ENDPOINT_ERRORS, NO_BODY},
    {SB_HTTP_POST, "/api/errors/{id}/retry", SB_R_ERROR_RETRY, NO_BODY},
    {SB_HTTP_POST, "/api/errors/retry", SB_R_ERRORS_RETRY,
     BODY(SB_HTTP_POST, SB_BODY_ARRAY)},
    {SB_HTTP_POST, "/api/errors/queues/{address}/retry",
     SB_R_ERRORS_QUEUE_RETRY, NO_BODY},
    {SB_HTTP_POST, "/api/errors/retry/all", SB_R_ERRORS_RETRY_ALL, NO_BODY},
    {SB_HTTP_POST, "/api/errors/{endpoint}/retry/all", SB_R_ENDPOINT_RETRY_ALL,
     NO_BODY},
    {SB_HTTP_POST | SB_HTTP_PATCH, "/api/errors/{id}/archive",
     SB_R_ERROR_ARCHIVE, NO_BODY},
    {SB_HTTP_POST | SB_HTTP_PATCH, "/api/errors/archive", SB_R_ERRORS_ARCHIVE,
     BODY(SB_HTTP_POST | SB_HTTP_PATCH, SB_BODY_ARRAY)},
    {SB_HTTP_PATCH, "/api/errors/unarchive", SB_R_ERRORS_UNARCHIVE,
     BODY(SB_HTTP_PATCH, SB_BODY_ARRAY)},
    {SB_HTTP_PATCH, "/api/errors/{from}...{to}/unarchive",
     SB_R_ERRORS_UNARCHIVE_RANGE, NO_BODY},
    {GET_, "/api/recoverability/classifiers", SB_R_CLASSIFIERS, NO_BODY},
    {GET_, "/api/recoverability/groups", SB_R_GROUPS, NO_BODY},
    {GET_, "/api/recoverability/groups/{classifier}", SB_R_GROUPS, NO_BODY},
    {GET_, "/api/recoverability/groups/id/{id}", SB_R_GROUP, NO_BODY},
    {GET_, "/api/recoverability/groups/{id}/errors", SB_R_GROUP_ERRORS,
     NO_BODY},
    {SB_HTTP_POST, "/api/recoverability/groups/{id}/errors/retry",
     SB_R_GROUP_RETRY, NO_BODY},
    {SB_HTTP_POST, "/api/recoverability/groups/{id}/errors/archive",
     SB_R_GROUP_ARCHIVE, NO_BODY},
    {SB_HTTP_POST, "/api/recoverability/groups/{id}/errors/unarchive",
     SB_R_GROUP_UNARCHIVE, NO_BODY},
    {SB_HTTP_POST | SB_HTTP_DELETE, "/api/recoverability/groups/{id}/comment",
     SB_R_GROUP_COMMENT, NO_BODY},
    {GET_, "/api/recoverability/history", SB_R_HISTORY, NO_BODY},
    {GET_, "/api/errors/groups", SB_R_ARCHIVED_GROUPS, NO_BODY},
    {GET_, "/api/errors/groups/{classifier}", SB_R_ARCHIVED_GROUPS, NO_BODY},
    {SB_HTTP_POST, "/api/pendingretries/retry", SB_R_PENDING_RETRY,
     BODY(SB_HTTP_POST, SB_BODY_ARRAY)},
    {SB_HTTP_PATCH, "/api/pendingretries/resolve", SB_R_PENDING_RESOLVE,
     BODY(SB_HTTP_PATCH, SB_BODY_OBJECT)},
    {SB_HTTP_POST, "/api/pendingretries/queues/retry", SB_R_PENDING_QUEUE_RETRY,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT)},
    {SB_HTTP_PATCH, "/api/pendingretries/queues/resolve",
     SB_R_PENDING_QUEUE_RESOLVE, BODY(SB_HTTP_PATCH, SB_BODY_OBJECT)},
    {GET_, "/api/edit/config", SB_R_EDIT_CONFIG, NO_BODY},
    {SB_HTTP_POST, "/api/edit/{id}", SB_R_EDIT,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT)},
    {GET_ | SB_HTTP_POST, "/api/redirects", SB_R_REDIRECTS,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT)},
    {SB_HTTP_PUT | SB_HTTP_DELETE, "/api/redirects/{id}", SB_R_REDIRECT,
     BODY(SB_HTTP_PUT, SB_BODY_OBJECT)},
    {GET_, "/api/messages/search", SB_R_SEARCH, NO_BODY},
    {GET_, "/api/messages/{id}/body", SB_R_MESSAGE_BODY, NO_BODY},
    {GET_, "/api/endpoints/known", SB_R_KNOWN_ENDPOINTS, NO_BODY},
    {GET_, "/api/configuration", SB_R_CONFIGURATION, NO_BODY},
    {GET_, "/api/queues", SB_R_QUEUES, NO_BODY},
    {GET_ | SB_HTTP_POST, "/api/queues/{q}/messages", SB_R_QUEUE_MESSAGES,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT)},
    {SB_HTTP_POST, "/api/queues/{q}/pause", SB_R_QUEUE_PAUSE, NO_BODY},
    {SB_HTTP_POST, "/api/queues/{q}/resume", SB_R_QUEUE_RESUME, NO_BODY},
    {SB_HTTP_POST, "/api/queues/{q}/messages/{id}/cancel", SB_R_QUEUE_CANCEL,
     NO_BODY},
    {SB_HTTP_PUT, "/api/queues/{q}/ttl", SB_R_QUEUE_TTL,
     BODY(SB_HTTP_PUT, SB_BODY_OBJECT)},
    {SB_HTTP_POST, "/api/queues/{q}/cancel", SB_R_QUEUE_CANCEL_KEY, NO_BODY},
    {GET_, "/api/schedules", SB_R_SCHEDULES, NO_BODY},
    {SB_HTTP_PUT | SB_HTTP_DELETE, "/api/schedules/{name}", SB_R_SCHEDULE,
     BODY(SB_HTTP_PUT, SB_BODY_OBJECT)},
    {SB_HTTP_PUT, "/api/queues/{q}/limits", SB_R_QUEUE_LIMITS,
     BODY(SB_HTTP_PUT, SB_BODY_OBJECT)},
    {SB_HTTP_POST, "/api/failed-messages", SB_R_FAILED_MESSAGES,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT_OR_ARRAY)},
    {GET_, "/api/recovery", SB_R_RECOVERY, NO_BODY},
    {GET_, "/api/stats", SB_R_STATS, NO_BODY},
    {GET_, "/api/operations", SB_R_OPERATIONS, NO_BODY},
    {GET_, "/api/operations/{id}", SB_R_OPERATION, NO_BODY},
    /* Issue 22: ServicePulse's heartbeats, checks, events, settings. */
    {GET_, "/api/endpoints", SB_R_SC_ENDPOINTS, NO_BODY},
    {SB_HTTP_PATCH | SB_HTTP_DELETE, "/api/endpoints/{id}", SB_R_SC_ENDPOINT,
     BODY(SB_HTTP_PATCH, SB_BODY_OBJECT)},
    {GET_ | SB_HTTP_PATCH, "/api/endpointssettings", SB_R_SC_ENDPOINTS_SETTINGS,
     BODY(SB_HTTP_PATCH, SB_BODY_OBJECT)},
    {SB_HTTP_PATCH, "/api/endpointssettings/{name}", SB_R_SC_ENDPOINT_SETTINGS,
     BODY(SB_HTTP_PATCH, SB_BODY_OBJECT)},
    {GET_, "/api/heartbeats/stats", SB_R_SC_HEARTBEAT_STATS, NO_BODY},
    {GET_, "/api/customchecks", SB_R_SC_CUSTOMCHECKS, NO_BODY},
    {SB_HTTP_DELETE, "/api/customchecks/{id}", SB_R_SC_CUSTOMCHECK, NO_BODY},
    {GET_, "/api/eventlogitems", SB_R_SC_EVENTLOG, NO_BODY},
    {GET_, "/api/license", SB_R_SC_LICENSE, NO_BODY},
    {GET_, "/api/license/details", SB_R_SC_LICENSE_DETAILS, NO_BODY},
    {GET_, "/api/connection", SB_R_SC_CONNECTION, NO_BODY},
    {GET_ | SB_HTTP_POST, "/api/notifications/email", SB_R_SC_EMAIL,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT)},
    {SB_HTTP_POST, "/api/notifications/email/toggle", SB_R_SC_EMAIL_TOGGLE,
     BODY(SB_HTTP_POST, SB_BODY_OBJECT)},
    {SB_HTTP_POST, "/api/notifications/email/test", SB_R_SC_EMAIL_TEST,
     NO_BODY},
    {GET_, "/api/configuration/remotes", SB_R_SC_REMOTES, NO_BODY},
    {GET_, "/api/authentication/configuration", SB_R_SC_AUTH_CONFIG, NO_BODY},
    {GET_, "/api/licensing/settings/test", SB_R_SC_USAGE_TEST, NO_BODY},
    {GET_, "/api/licensing/settings/info", SB_R_SC_USAGE_INFO, NO_BODY},
    {GET_, "/api/licensing/settings/masks", SB_R_SC_USAGE_MASKS, NO_BODY},
    {GET_, "/api/licensing/report/available", SB_R_SC_USAGE_REPORT, NO_BODY},
    {GET_, "/api/licensing/endpoints", SB_R_SC_USAGE_ENDPOINTS, NO_BODY},
    {GET_, "/health", SB_R_HEALTH, NO_BODY},
    {GET_, "/health/ready", SB_R_HEALTH_READY, NO_BODY},
    {GET_, "/metrics", SB_R_METRICS, NO_BODY},
    {GET_, "/", SB_R_UI, NO_BODY},
    {GET_, "/ui/{file}", SB_R_UI_ASSET, NO_BODY},
    /* issue 22: ServiceControl's message views; sqlbus's own shapes */
    {GET_, "/api/sqlbus/errors/{id}", SB_R_OWN_ERROR, NO_BODY},
    {GET_, "/api/messages/search/{keyword}", SB_R_MESSAGES_SEARCH_KEYWORD,
     NO_BODY},
    {GET_, "/api/messages2", SB_R_MESSAGES2, NO_BODY},
    {GET_, "/api/conversations/{id}", SB_R_CONVERSATION, NO_BODY},
    {GET_, "/api/sqlbus/errors/summary", SB_R_OWN_ERRORS_SUMMARY, NO_BODY},
    {GET_, "/api/sqlbus/endpoints/known", SB_R_OWN_KNOWN_ENDPOINTS, NO_BODY},
    {GET_, "/api/sqlbus/configuration", SB_R_OWN_CONFIGURATION, NO_BODY},
    {GET_, "/api/sqlbus/recoverability/history", SB_R_OWN_HISTORY, NO_BODY},
    {SB_HTTP_DELETE, "/api/recoverability/unacknowledgedgroups/{id}",
     SB_R_GROUP_ACK, NO_BODY},
    {GET_, "/api/archive/groups/id/{id}", SB_R_ARCHIVED_GROUP, NO_BODY},
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

int sb__http_method(const char *method)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"GET", SB_HTTP_GET},     {"HEAD", SB_HTTP_HEAD},
                 {"POST", SB_HTTP_POST},   {"PUT", SB_HTTP_PUT},
                 {"PATCH", SB_HTTP_PATCH}, {"DELETE", SB_HTTP_DELETE}};
    for (size_t i = 0; method != NULL && i < sizeof names / sizeof *names; i++)
        if (strcmp(method, names[i].name) == 0)
            return names[i].bit;
    return 0;
}

/* Percent-decode [s, s + n) into out (cap bytes with its NUL), '+' as a
 * space when `plus`. Returns the decoded length, or -1 for a bad or NUL
 * escape, -2 when it does not fit, -3 when it is not UTF-8. */
static long decode(const char *s, size_t n, int plus, char *out, size_t cap)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int byte = sb__percent_byte(s + i, n - i);
            if (byte < 0)
                return -1;
            c = (char)byte;
            i += 2;
        } else if (plus && c == '+') {
            c = ' ';
        }
        if (len + 1 >= cap)
            return -2;
        out[len++] = c;
    }
    out[len] = '\0';
    return sb__utf8_valid(out, len) ? (long)len : -3;
}

typedef struct span {
    const char *p;
    size_t n;
} span;

/* The '/'-separated segments of `s` (which starts with '/'); "/" has
 * none. Returns their number, or MAX_SEGMENTS + 1 when there are more. */
static size_t split(const char *s, span *out)
{
    size_t n = 0;
    if (s[0] == '/' && s[1] == '\0')
        return 0;
    for (const char *p = s + 1;; p++) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (n == MAX_SEGMENTS)
            return MAX_SEGMENTS + 1;
        out[n].p = p;
        out[n++].n = len;
        if (slash == NULL)
            return n;
        p = slash;
    }
}

static int is_capture(span s)
{
    return s.n >= 2 && s.p[0] == '{' && s.p[s.n - 1] == '}';
}

/* Whether the route's pattern matches the decoded segments; its captures
 * in m; *fixed: a bit per fixed segment, the leftmost highest. */
static int match(const route *r, char seg[][SB_SEGMENT_MAX + 1],
                 const size_t *len, size_t n, sb_route_match *m,
                 unsigned *fixed)
{
    span pat[MAX_SEGMENTS + 1];
    if (split(r->pattern, pat) != n)
        return 0;
    *fixed = 0;
    m->n_captures = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_capture(pat[i])) {
            if (pat[i].n != len[i] || memcmp(pat[i].p, seg[i], len[i]) != 0)
                return 0;
            *fixed |= 1u << (MAX_SEGMENTS - 1 - i);
            continue;
        }
        if (len[i] == 0)
            return 0;
        const char *range = memchr(pat[i].p, '.', pat[i].n);
        if (range == NULL) {
            memcpy(m->captures[m->n_captures++], seg[i], len[i] + 1);
            continue;
        }
        const char *dots = strstr(seg[i], "...");
        if (dots == NULL || dots == seg[i] || dots[3] == '\0' ||
            m->n_captures + 2 > SB_ROUTE_CAPTURES)
            return 0;
        size_t left = (size_t)(dots - seg[i]);
        memcpy(m->captures[m->n_captures], seg[i], left);
        m->captures[m->n_captures++][left] = '\0';
        memcpy(m->captures[m->n_captures++], dots + 3, len[i] - left - 2);
    }
    return 1;
}

/* What `r` takes with the method `bit`: its declared kind for a method
 * that takes a body, else none; an undeclared kind stays undeclared. */
static sb_body_kind body_of(const route *r, int bit)
{
    if (r->body == SB_BODY_UNDECLARED)
        return SB_BODY_UNDECLARED;
    return (r->body_methods & bit) ? r->body : SB_BODY_NONE;
}

int sb__route(const char *method, const char *path, sb_route_match *m,
              sb_error *err)
{
    sb_error_clear(err);
    memset(m, 0, sizeof *m);
    if (path == NULL || path[0] != '/')
        return sb__err(err, SB_INVALID, "path", "path must start with '/'");
    if (strlen(path) > SB_PATH_MAX)
        return sb__err(err, SB_INVALID, "path", "path must be at most %d bytes",
                       SB_PATH_MAX);
    span raw[MAX_SEGMENTS + 1];
    size_t n = split(path, raw);
    /* Issue 22: one trailing slash is taken on every route
     * (ServicePulse's PATCH errors/archive/): the empty segment after it
     * is dropped, "/" aside. */
    size_t plen = strlen(path);
    if (n > 0 && n <= MAX_SEGMENTS && raw[n - 1].n == 0 && plen >= 3 &&
        path[plen - 2] != '/')
        n--;
    if (n > MAX_SEGMENTS)
        return SB_NOTFOUND;
    char seg[MAX_SEGMENTS][SB_SEGMENT_MAX + 1];
    size_t len[MAX_SEGMENTS];
    for (size_t i = 0; i < n; i++) {
        long d = decode(raw[i].p, raw[i].n, 0, seg[i], sizeof seg[i]);
        if (d == -2)
            return sb__err(err, SB_INVALID, "path",
                           "a path segment must be at most %d bytes "
                           "decoded",
                           SB_SEGMENT_MAX);
        if (d < 0)
            return sb__err(err, SB_INVALID, "path",
                           "path segment %zu has a bad percent escape or "
                           "is not UTF-8",
                           i + 1);
        len[i] = (size_t)d;
    }
    const route *best = NULL;
    unsigned best_fixed = 0;
    sb_route_match cand;
    for (size_t r = 0; r < N_ROUTES; r++) {
        unsigned fixed = 0;
        memset(&cand, 0, sizeof cand);
        if (match(&routes[r], seg, len, n, &cand, &fixed) &&
            (best == NULL || fixed > best_fixed)) {
            best = &routes[r];
            best_fixed = fixed;
            *m = cand;
        }
    }
    if (best == NULL) {
        memset(m, 0, sizeof *m);
        return SB_NOTFOUND;
    }
    m->allowed = best->methods;
    m->pattern = best->pattern;
    int bit = sb__http_method(method);
    if ((best->methods & bit) == 0) {
        m->n_captures = 0;
        return SB_NOTFOUND;
    }
    m->route = best->id;
    m->body = body_of(best, bit);
    return SB_OK;
}

size_t sb__route_count(void)
{
    return N_ROUTES;
}

int sb__route_entry(size_t i, int method, const char **pattern, sb_route_id *id,
                    int *methods, sb_body_kind *body)
{
    if (i >= N_ROUTES)
        return 0;
    *pattern = routes[i].pattern;
    *id = routes[i].id;
    *methods = routes[i].methods;
    *body = (routes[i].methods & method) ? body_of(&routes[i], method)
                                         : SB_BODY_NONE;
    return 1;
}

int sb__query_parse(const char *qs, sb_query_params *out, sb_error *err)
{
    sb_error_clear(err);
    out->n = 0;
    if (qs == NULL || qs[0] == '\0')
        return SB_OK;
    size_t total = strlen(qs);
    if (total > SB_QUERY_MAX)
        return sb__err(err, SB_INVALID, "query",
                       "the query string must be at most %d bytes",
                       SB_QUERY_MAX);
    for (const char *p = qs; p <= qs + total;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n > 0) {
            if (out->n == SB_QUERY_PARAMS)
                return sb__err(err, SB_INVALID, "query",
                               "at most %d query parameters", SB_QUERY_PARAMS);
            const char *eq = memchr(p, '=', n);
            size_t kn = eq ? (size_t)(eq - p) : n;
            char *key = out->p[out->n].key, *value = out->p[out->n].value;
            long k = decode(p, kn, 1, key, SB_QUERY_KEY_MAX + 1);
            if (k == 0)
                return sb__err(err, SB_INVALID, "query",
                               "a query parameter has no name");
            if (k < 0)
                return sb__err(err, SB_INVALID, "query",
                               k == -2 ? "a query parameter name must be "
                                         "at most %d bytes"
                                       : "a query parameter name has a bad "
                                         "percent escape or is not UTF-8",
                               SB_QUERY_KEY_MAX);
            long v = eq ? decode(eq + 1, n - kn - 1, 1, value,
                                 SB_QUERY_VALUE_MAX + 1)
                        : 0;
            if (!eq)
                value[0] = '\0';
            if (v == -2)
                return sb__err(err, SB_INVALID, key,
                               "%s must be at most %d bytes", key,
                               SB_QUERY_VALUE_MAX);
            if (v < 0)
                return sb__err(err, SB_INVALID, key,
                               "%s has a bad percent escape or is not UTF-8",
                               key);
            if (sb__query_get(out, key) != NULL)
                return sb__err(err, SB_INVALID, key, "%s is given twice", key);
            out->n++;
        }
        if (amp == NULL)
            break;
        p = amp + 1;
    }
    return SB_OK;
}

const char *sb__query_get(const sb_query_params *q, const char *key)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->p[i].key, key) == 0)
            return q->p[i].value;
    return NULL;
}
