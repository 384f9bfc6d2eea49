/*
 * test_router.c - unit tests of the HTTP API's router and query-string
 * parser (src/server/router.c; rules S4, S6, S8, S10): every route by a
 * sample request, precedence between routes that could both match, 404
 * against 405, percent-decoding, every limit named in its error, and the
 * request body every route declares it takes (S7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/router.h"

static void expect_route(const char *method, const char *path, sb_route_id want,
                         const char *cap0, const char *cap1)
{
    sb_route_match m;
    sb_error err;
    int rc = sb__route(method, path, &m, &err);
    if (rc != SB_OK)
        fail_msg("%s %s: rc %d (%s)", method, path, rc, err.message);
    if (m.route != want)
        fail_msg("%s %s: route %d, want %d", method, path, m.route, want);
    assert_int_equal(m.n_captures, (cap0 != NULL) + (cap1 != NULL));
    if (cap0 != NULL)
        assert_string_equal(m.captures[0], cap0);
    if (cap1 != NULL)
        assert_string_equal(m.captures[1], cap1);
    assert_non_null(m.pattern);
}

/* S4, S6, S8, S13: one sample request per route. */
static void test_every_route(void **state)
{
    (void)state;
    static const struct {
        const char *method, *path;
        sb_route_id id;
        const char *c0, *c1;
    } cases[] = {
        {"GET", "/api", SB_R_ROOT, NULL, NULL},
        {"GET", "/api/errors", SB_R_ERRORS, NULL, NULL},
        {"HEAD", "/api/errors", SB_R_ERRORS, NULL, NULL},
        {"GET", "/api/errors/u-1", SB_R_ERROR, "u-1", NULL},
        {"GET", "/api/errors/last/u-1", SB_R_ERROR_LAST, "u-1", NULL},
        {"GET", "/api/errors/summary", SB_R_ERRORS_SUMMARY, NULL, NULL},
        {"GET", "/api/errors/queues/addresses", SB_R_ERRORS_QUEUE_ADDRESSES,
         NULL, NULL},
        {"GET", "/api/endpoints/Sales/errors", SB_R_ENDPOINT_ERRORS, "Sales",
         NULL},
        {"POST", "/api/errors/u-1/retry", SB_R_ERROR_RETRY, "u-1", NULL},
        {"POST", "/api/errors/retry", SB_R_ERRORS_RETRY, NULL, NULL},
        {"POST", "/api/errors/queues/orders/retry", SB_R_ERRORS_QUEUE_RETRY,
         "orders", NULL},
        {"POST", "/api/errors/retry/all", SB_R_ERRORS_RETRY_ALL, NULL, NULL},
        {"POST", "/api/errors/Sales/retry/all", SB_R_ENDPOINT_RETRY_ALL,
         "Sales", NULL},
        {"POST", "/api/errors/u-1/archive", SB_R_ERROR_ARCHIVE, "u-1", NULL},
        {"PATCH", "/api/errors/u-1/archive", SB_R_ERROR_ARCHIVE, "u-1", NULL},
        {"PATCH", "/api/errors/archive", SB_R_ERRORS_ARCHIVE, NULL, NULL},
        {"PATCH", "/api/errors/unarchive", SB_R_ERRORS_UNARCHIVE, NULL, NULL},
        {"PATCH", "/api/errors/2026-01-01...2026-02-01/unarchive",
         SB_R_ERRORS_UNARCHIVE_RANGE, "2026-01-01", "2026-02-01"},
        {"GET", "/api/recoverability/classifiers", SB_R_CLASSIFIERS, NULL,
         NULL},
        {"GET", "/api/recoverability/groups/Exception%20Type", SB_R_GROUPS,
         "Exception Type", NULL},
        {"GET", "/api/recoverability/groups/id/g-1", SB_R_GROUP, "g-1", NULL},
        {"GET", "/api/recoverability/groups/g-1/errors", SB_R_GROUP_ERRORS,
         "g-1", NULL},
        {"POST", "/api/recoverability/groups/g-1/errors/retry",
         SB_R_GROUP_RETRY, "g-1", NULL},
        {"POST", "/api/recoverability/groups/g-1/errors/archive",
         SB_R_GROUP_ARCHIVE, "g-1", NULL},
        {"POST", "/api/recoverability/groups/g-1/errors/unarchive",
         SB_R_GROUP_UNARCHIVE, "g-1", NULL},
        {"POST", "/api/recoverability/groups/g-1/comment", SB_R_GROUP_COMMENT,
         "g-1", NULL},
        {"DELETE", "/api/recoverability/groups/g-1/comment", SB_R_GROUP_COMMENT,
         "g-1", NULL},
        {"GET", "/api/recoverability/history", SB_R_HISTORY, NULL, NULL},
        {"GET", "/api/errors/groups/Exception%20Type", SB_R_ARCHIVED_GROUPS,
         "Exception Type", NULL},
        {"POST", "/api/pendingretries/retry", SB_R_PENDING_RETRY, NULL, NULL},
        {"PATCH", "/api/pendingretries/resolve", SB_R_PENDING_RESOLVE, NULL,
         NULL},
        {"POST", "/api/pendingretries/queues/retry", SB_R_PENDING_QUEUE_RETRY,
         NULL, NULL},
        {"PATCH", "/api/pendingretries/queues/resolve",
         SB_R_PENDING_QUEUE_RESOLVE, NULL, NULL},
        {"GET", "/api/edit/config", SB_R_EDIT_CONFIG, NULL, NULL},
        {"POST", "/api/edit/u-1", SB_R_EDIT, "u-1", NULL},
        {"GET", "/api/redirects", SB_R_REDIRECTS, NULL, NULL},
        {"POST", "/api/redirects", SB_R_REDIRECTS, NULL, NULL},
        {"PUT", "/api/redirects/r-1", SB_R_REDIRECT, "r-1", NULL},
        {"DELETE", "/api/redirects/r-1", SB_R_REDIRECT, "r-1", NULL},
        {"GET", "/api/messages/search", SB_R_SEARCH, NULL, NULL},
        {"GET", "/api/messages/u-1/body", SB_R_MESSAGE_BODY, "u-1", NULL},
        {"GET", "/api/endpoints/known", SB_R_KNOWN_ENDPOINTS, NULL, NULL},
        {"GET", "/api/configuration", SB_R_CONFIGURATION, NULL, NULL},
        {"GET", "/api/queues", SB_R_QUEUES, NULL, NULL},
        {"GET", "/api/queues/orders/messages", SB_R_QUEUE_MESSAGES, "orders",
         NULL},
        {"POST", "/api/queues/orders/messages", SB_R_QUEUE_MESSAGES, "orders",
         NULL},
        {"POST", "/api/queues/orders/pause", SB_R_QUEUE_PAUSE, "orders", NULL},
        {"GET", "/api/schedules", SB_R_SCHEDULES, NULL, NULL},
        {"PUT", "/api/schedules/nightly", SB_R_SCHEDULE, "nightly", NULL},
        {"DELETE", "/api/schedules/nightly", SB_R_SCHEDULE, "nightly", NULL},
        {"POST",
         "/api/queues/orders/messages/0190aa00-0000-7000-8000-000000000001/cancel",
         SB_R_QUEUE_CANCEL, "orders", "0190aa00-0000-7000-8000-000000000001"},
        {"POST", "/api/queues/orders/resume", SB_R_QUEUE_RESUME, "orders",
         NULL},
        {"PUT", "/api/queues/orders/ttl", SB_R_QUEUE_TTL, "orders", NULL},
        {"POST", "/api/queues/orders/cancel", SB_R_QUEUE_CANCEL_KEY, "orders",
         NULL},
        {"PUT", "/api/queues/orders/limits", SB_R_QUEUE_LIMITS, "orders", NULL},
        {"POST", "/api/failed-messages", SB_R_FAILED_MESSAGES, NULL, NULL},
        {"GET", "/api/recovery", SB_R_RECOVERY, NULL, NULL},
        {"GET", "/api/stats", SB_R_STATS, NULL, NULL},
        {"GET", "/api/operations/op-1", SB_R_OPERATION, "op-1", NULL},
        {"GET", "/api/operations", SB_R_OPERATIONS, NULL, NULL},
        {"GET", "/api/recoverability/groups", SB_R_GROUPS, NULL, NULL},
        {"GET", "/api/errors/groups", SB_R_ARCHIVED_GROUPS, NULL, NULL},
        /* Issue 22: ServicePulse's heartbeats, checks, events and
         * configuration; endpoints/known and endpoints/{name}/errors
         * keep theirs. */
        {"GET", "/api/endpoints", SB_R_SC_ENDPOINTS, NULL, NULL},
        {"PATCH", "/api/endpoints/0190aa00-0000-7000-8000-000000000001",
         SB_R_SC_ENDPOINT, "0190aa00-0000-7000-8000-000000000001", NULL},
        {"DELETE", "/api/endpoints/0190aa00-0000-7000-8000-000000000001",
         SB_R_SC_ENDPOINT, "0190aa00-0000-7000-8000-000000000001", NULL},
        {"GET", "/api/endpoints/Sales/errors", SB_R_ENDPOINT_ERRORS, "Sales",
         NULL},
        {"GET", "/api/endpointssettings", SB_R_SC_ENDPOINTS_SETTINGS, NULL,
         NULL},
        {"PATCH", "/api/endpointssettings", SB_R_SC_ENDPOINTS_SETTINGS, NULL,
         NULL},
        {"PATCH", "/api/endpointssettings/Sales", SB_R_SC_ENDPOINT_SETTINGS,
         "Sales", NULL},
        {"GET", "/api/heartbeats/stats", SB_R_SC_HEARTBEAT_STATS, NULL, NULL},
        {"GET", "/api/customchecks", SB_R_SC_CUSTOMCHECKS, NULL, NULL},
        {"DELETE", "/api/customchecks/c-1", SB_R_SC_CUSTOMCHECK, "c-1", NULL},
        {"GET", "/api/eventlogitems", SB_R_SC_EVENTLOG, NULL, NULL},
        {"GET", "/api/license", SB_R_SC_LICENSE, NULL, NULL},
        {"GET", "/api/license/details", SB_R_SC_LICENSE_DETAILS, NULL, NULL},
        {"GET", "/api/connection", SB_R_SC_CONNECTION, NULL, NULL},
        {"GET", "/api/notifications/email", SB_R_SC_EMAIL, NULL, NULL},
        {"POST", "/api/notifications/email", SB_R_SC_EMAIL, NULL, NULL},
        {"POST", "/api/notifications/email/toggle", SB_R_SC_EMAIL_TOGGLE, NULL,
         NULL},
        {"POST", "/api/notifications/email/test", SB_R_SC_EMAIL_TEST, NULL,
         NULL},
        {"GET", "/api/configuration/remotes", SB_R_SC_REMOTES, NULL, NULL},
        {"GET", "/api/authentication/configuration", SB_R_SC_AUTH_CONFIG, NULL,
         NULL},
        {"GET", "/api/licensing/settings/test", SB_R_SC_USAGE_TEST, NULL, NULL},
        {"GET", "/api/licensing/settings/info", SB_R_SC_USAGE_INFO, NULL, NULL},
        {"GET", "/api/licensing/settings/masks", SB_R_SC_USAGE_MASKS, NULL,
         NULL},
        {"GET", "/api/licensing/report/available", SB_R_SC_USAGE_REPORT, NULL,
         NULL},
        {"GET", "/api/licensing/endpoints", SB_R_SC_USAGE_ENDPOINTS, NULL,
         NULL},
        {"GET", "/health", SB_R_HEALTH, NULL, NULL},
        {"GET", "/health/ready", SB_R_HEALTH_READY, NULL, NULL},
        {"GET", "/metrics", SB_R_METRICS, NULL, NULL},
        {"GET", "/", SB_R_UI, NULL, NULL},
        {"GET", "/ui/app.js", SB_R_UI_ASSET, "app.js", NULL},
        /* issue 22 */
        {"GET", "/api/sqlbus/errors/u-1", SB_R_OWN_ERROR, "u-1", NULL},
        {"GET", "/api/messages/search/m-1", SB_R_MESSAGES_SEARCH_KEYWORD, "m-1",
         NULL},
        {"GET", "/api/messages/search/body", SB_R_MESSAGES_SEARCH_KEYWORD,
         "body", NULL},
        {"GET", "/api/messages2", SB_R_MESSAGES2, NULL, NULL},
        {"GET", "/api/conversations/c-1", SB_R_CONVERSATION, "c-1", NULL},
        {"GET", "/api/sqlbus/errors/summary", SB_R_OWN_ERRORS_SUMMARY, NULL,
         NULL},
        {"GET", "/api/sqlbus/endpoints/known", SB_R_OWN_KNOWN_ENDPOINTS, NULL,
         NULL},
        {"GET", "/api/sqlbus/configuration", SB_R_OWN_CONFIGURATION, NULL,
         NULL},
        {"GET", "/api/sqlbus/recoverability/history", SB_R_OWN_HISTORY, NULL,
         NULL},
        {"DELETE", "/api/recoverability/unacknowledgedgroups/g-1",
         SB_R_GROUP_ACK, "g-1", NULL},
        {"GET", "/api/archive/groups/id/g-1", SB_R_ARCHIVED_GROUP, "g-1", NULL},
    };
    int seen[SB_R_COUNT] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_route(cases[i].method, cases[i].path, cases[i].id, cases[i].c0,
                     cases[i].c1);
        /* Issue 22: the same with a trailing slash (ServicePulse's
         * PATCH errors/archive/), every route. */
        char slashed[300];
        snprintf(slashed, sizeof slashed, "%s/", cases[i].path);
        if (strcmp(cases[i].path, "/") != 0)
            expect_route(cases[i].method, slashed, cases[i].id, cases[i].c0,
                         cases[i].c1);
        seen[cases[i].id] = 1;
    }
    for (int id = SB_R_NONE + 1; id < SB_R_COUNT; id++)
        if (!seen[id])
            fail_msg("route %d has no case", id);
}

/* Where two patterns match, a fixed segment beats a capture, leftmost
 * first; a fixed word is never taken as an id. */
static void test_precedence(void **state)
{
    (void)state;
    expect_route("GET", "/api/recoverability/groups/id/errors", SB_R_GROUP,
                 "errors", NULL);
    expect_route("GET", "/api/recoverability/groups/idx/errors",
                 SB_R_GROUP_ERRORS, "idx", NULL);
    expect_route("GET", "/api/errors/summary", SB_R_ERRORS_SUMMARY, NULL, NULL);
    expect_route("POST", "/api/errors/queues/retry/all",
                 SB_R_ENDPOINT_RETRY_ALL, "queues", NULL);
    expect_route("POST", "/api/errors/queues/retry/retry",
                 SB_R_ERRORS_QUEUE_RETRY, "retry", NULL);
    expect_route("POST", "/api/errors/retry/all", SB_R_ERRORS_RETRY_ALL, NULL,
                 NULL);
    expect_route("GET", "/api/endpoints/known", SB_R_KNOWN_ENDPOINTS, NULL,
                 NULL);
}

static void expect_missing(const char *method, const char *path, int allowed)
{
    sb_route_match m;
    sb_error err;
    assert_int_equal(sb__route(method, path, &m, &err), SB_NOTFOUND);
    assert_int_equal(m.route, SB_R_NONE);
    assert_int_equal(m.allowed, allowed);
    assert_int_equal(m.n_captures, 0);
}

/* 404 when no route has the path, 405 (the path's methods in `allowed`)
 * when one has it for other methods; HEAD goes wherever GET does. */
static void test_not_found_and_method(void **state)
{
    (void)state;
    int get = SB_HTTP_GET | SB_HTTP_HEAD;
    expect_missing("GET", "/api/nothing", 0);
    /* Issue 22: one trailing slash is taken (test_every_route), not two,
     * and "/" alone is the dashboard's. */
    expect_missing("GET", "/api/errors//", 0);
    expect_missing("GET", "/ui/", 0);
    expect_missing("GET", "/api//errors", 0);
    expect_missing("GET", "/a/b/c/d/e/f/g/h/i", 0);
    expect_missing("PATCH", "/api/errors/...2026/unarchive", 0);
    expect_missing("PATCH", "/api/errors/2026.../unarchive", 0);
    expect_missing("POST", "/api/errors", get);
    expect_missing("TRACE", "/api/errors", get);
    expect_missing("GET", "/api/errors/retry", SB_HTTP_POST);
    expect_missing("HEAD", "/api/redirects/r-1", SB_HTTP_PUT | SB_HTTP_DELETE);
    assert_int_equal(sb__http_method("PATCH"), SB_HTTP_PATCH);
    assert_int_equal(sb__http_method("get"), 0);
    assert_int_equal(sb__http_method(NULL), 0);
}

static void expect_bad_path(const char *path, const char *words)
{
    sb_route_match m;
    sb_error err;
    assert_int_equal(sb__route("GET", path, &m, &err), SB_INVALID);
    assert_string_equal(err.field, "path");
    if (strstr(err.message, words) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", err.message, words);
}

/* S10: percent-decoding of captures; every path limit named. */
static void test_path_decoding_and_limits(void **state)
{
    (void)state;
    expect_route("GET", "/api/errors/a%2Fb%20c", SB_R_ERROR, "a/b c", NULL);
    expect_route("GET", "/api/errors/a+b", SB_R_ERROR, "a+b", NULL);
    expect_route("GET", "/api/errors/%C3%A4", SB_R_ERROR, "\xc3\xa4", NULL);
    expect_route("GET", "/%61pi/errors", SB_R_ERRORS, NULL, NULL);
    expect_bad_path("api/errors", "start with '/'");
    expect_bad_path("/api/errors/%00", "percent escape");
    expect_bad_path("/api/errors/%zz", "percent escape");
    expect_bad_path("/api/errors/%4", "percent escape");
    expect_bad_path("/api/errors/%ff", "UTF-8");
    char path[SB_PATH_MAX + 2];
    memcpy(path, "/api/errors/", 12);
    memset(path + 12, 'x', SB_SEGMENT_MAX);
    path[12 + SB_SEGMENT_MAX] = '\0';
    expect_route("GET", path, SB_R_ERROR, path + 12, NULL);
    memcpy(path + 12 + SB_SEGMENT_MAX, "x", 2);
    expect_bad_path(path, "at most 400 bytes");
    memset(path + 1, 'x', SB_PATH_MAX);
    path[SB_PATH_MAX + 1] = '\0';
    expect_bad_path(path, "at most 2048 bytes");
}

static void expect_bad_query(const char *qs, const char *field,
                             const char *words)
{
    sb_query_params q;
    sb_error err;
    assert_int_equal(sb__query_parse(qs, &q, &err), SB_INVALID);
    assert_string_equal(err.field, field);
    if (strstr(err.message, words) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", err.message, words);
}

/* S10: query strings: decoding, empty parts, and every limit named. */
static void test_query_strings(void **state)
{
    (void)state;
    static sb_query_params q;
    sb_error err;
    assert_int_equal(
        sb__query_parse("page=2&per_page=50&q=a+b%2Bc&flag&&", &q, &err),
        SB_OK);
    assert_int_equal(q.n, 4);
    assert_string_equal(sb__query_get(&q, "page"), "2");
    assert_string_equal(sb__query_get(&q, "per_page"), "50");
    assert_string_equal(sb__query_get(&q, "q"), "a b+c");
    assert_string_equal(sb__query_get(&q, "flag"), "");
    assert_null(sb__query_get(&q, "sort"));
    assert_int_equal(sb__query_parse(NULL, &q, &err), SB_OK);
    assert_int_equal(q.n, 0);
    assert_int_equal(sb__query_parse("", &q, &err), SB_OK);
    assert_int_equal(q.n, 0);
    expect_bad_query("page=1&page=2", "page", "given twice");
    expect_bad_query("=x", "query", "no name");
    expect_bad_query("q=%zz", "q", "percent escape");
    expect_bad_query("q=%00", "q", "percent escape");
    expect_bad_query("%ff=1", "query", "UTF-8");
    static char big[SB_QUERY_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    expect_bad_query(big, "query", "at most 8192 bytes");
    char many[SB_QUERY_PARAMS * 8 + 16] = "";
    for (int i = 0; i <= SB_QUERY_PARAMS; i++) {
        char one[8];
        snprintf(one, sizeof one, "%sk%d", i ? "&" : "", i);
        strncat(many, one, sizeof many - strlen(many) - 1);
    }
    expect_bad_query(many, "query", "at most 32 query parameters");
    char key[SB_QUERY_KEY_MAX + 4];
    memset(key, 'k', SB_QUERY_KEY_MAX + 1);
    memcpy(key + SB_QUERY_KEY_MAX + 1, "=1", 3);
    expect_bad_query(key, "query", "at most 64 bytes");
    static char value[SB_QUERY_VALUE_MAX + 8];
    memcpy(value, "q=", 2);
    memset(value + 2, 'v', SB_QUERY_VALUE_MAX);
    value[2 + SB_QUERY_VALUE_MAX] = '\0';
    assert_int_equal(sb__query_parse(value, &q, &err), SB_OK);
    memcpy(value + 2 + SB_QUERY_VALUE_MAX, "v", 2);
    expect_bad_query(value, "q", "at most 1024 bytes");
}

/* S7, S10: every route of the table declares, for each of its methods,
 * the body it takes; GET and HEAD take none, and exactly these take one
 * (every other mutation — retry/all, one message's retry or archive, a
 * group's retry, archive, unarchive and comment, a redirect's DELETE ...
 * — takes none, so the server refuses a body there before anything
 * changes). */
static void test_body_kinds(void **state)
{
    (void)state;
    static const struct {
        sb_route_id id;
        int method;
        sb_body_kind body;
    } takes[] = {
        {SB_R_ERRORS_RETRY, SB_HTTP_POST, SB_BODY_ARRAY},
        {SB_R_ERRORS_ARCHIVE, SB_HTTP_POST, SB_BODY_ARRAY},
        {SB_R_ERRORS_ARCHIVE, SB_HTTP_PATCH, SB_BODY_ARRAY},
        {SB_R_ERRORS_UNARCHIVE, SB_HTTP_PATCH, SB_BODY_ARRAY},
        {SB_R_PENDING_RETRY, SB_HTTP_POST, SB_BODY_ARRAY},
        {SB_R_PENDING_RESOLVE, SB_HTTP_PATCH, SB_BODY_OBJECT},
        {SB_R_PENDING_QUEUE_RETRY, SB_HTTP_POST, SB_BODY_OBJECT},
        {SB_R_PENDING_QUEUE_RESOLVE, SB_HTTP_PATCH, SB_BODY_OBJECT},
        {SB_R_EDIT, SB_HTTP_POST, SB_BODY_OBJECT},
        {SB_R_REDIRECTS, SB_HTTP_POST, SB_BODY_OBJECT},
        {SB_R_REDIRECT, SB_HTTP_PUT, SB_BODY_OBJECT},
        {SB_R_SCHEDULE, SB_HTTP_PUT, SB_BODY_OBJECT},
        {SB_R_QUEUE_MESSAGES, SB_HTTP_POST, SB_BODY_OBJECT},
        {SB_R_QUEUE_TTL, SB_HTTP_PUT, SB_BODY_OBJECT},
        {SB_R_QUEUE_LIMITS, SB_HTTP_PUT, SB_BODY_OBJECT},
        {SB_R_FAILED_MESSAGES, SB_HTTP_POST, SB_BODY_OBJECT_OR_ARRAY},
        /* Issue 22. */
        {SB_R_SC_ENDPOINT, SB_HTTP_PATCH, SB_BODY_OBJECT},
        {SB_R_SC_ENDPOINTS_SETTINGS, SB_HTTP_PATCH, SB_BODY_OBJECT},
        {SB_R_SC_ENDPOINT_SETTINGS, SB_HTTP_PATCH, SB_BODY_OBJECT},
        {SB_R_SC_EMAIL, SB_HTTP_POST, SB_BODY_OBJECT},
        {SB_R_SC_EMAIL_TOGGLE, SB_HTTP_POST, SB_BODY_OBJECT},
    };
    size_t n = sb__route_count(), seen = 0;
    assert_true(n > 0);
    const char *pattern;
    sb_route_id id;
    int methods;
    sb_body_kind body;
    for (size_t i = 0; i < n; i++) {
        for (int bit = SB_HTTP_GET; bit <= SB_HTTP_DELETE; bit <<= 1) {
            assert_int_equal(
                sb__route_entry(i, bit, &pattern, &id, &methods, &body), 1);
            if (!(methods & bit)) {
                assert_int_equal(body, SB_BODY_NONE);
                continue;
            }
            if (body == SB_BODY_UNDECLARED)
                fail_msg("%s declares no body kind for method %d", pattern,
                         bit);
            sb_body_kind want = SB_BODY_NONE;
            for (size_t k = 0; k < sizeof takes / sizeof *takes; k++)
                if (takes[k].id == id && takes[k].method == bit)
                    want = takes[k].body;
            if (body != want)
                fail_msg("%s with method %d takes body kind %d, want %d",
                         pattern, bit, body, want);
            seen += want != SB_BODY_NONE;
        }
    }
    assert_int_equal(seen, sizeof takes / sizeof *takes);
    assert_int_equal(
        sb__route_entry(n, SB_HTTP_GET, &pattern, &id, &methods, &body), 0);
    /* The match carries the method's kind. */
    static const struct {
        const char *method, *path;
        sb_body_kind body;
    } samples[] = {
        {"POST", "/api/errors/retry/all", SB_BODY_NONE},
        {"POST", "/api/errors/retry", SB_BODY_ARRAY},
        {"GET", "/api/redirects", SB_BODY_NONE},
        {"POST", "/api/redirects", SB_BODY_OBJECT},
        {"PUT", "/api/redirects/r-1", SB_BODY_OBJECT},
        {"DELETE", "/api/redirects/r-1", SB_BODY_NONE},
        {"POST", "/api/recoverability/groups/g-1/comment", SB_BODY_NONE},
        {"DELETE", "/api/recoverability/groups/g-1/comment", SB_BODY_NONE},
        {"POST", "/api/failed-messages", SB_BODY_OBJECT_OR_ARRAY},
    };
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        sb_route_match m;
        sb_error err;
        assert_int_equal(
            sb__route(samples[i].method, samples[i].path, &m, &err), SB_OK);
        if (m.body != samples[i].body)
            fail_msg("%s %s: body kind %d, want %d", samples[i].method,
                     samples[i].path, m.body, samples[i].body);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_not_found_and_method),
        cmocka_unit_test(test_path_decoding_and_limits),
        cmocka_unit_test(test_query_strings),
        cmocka_unit_test(test_body_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
