/*
 * fuzz_router.c - libFuzzer target for the HTTP API's router and
 * query-string parser (src/server/router.c; rules S4, S6, S10).
 *
 * Input: a path, a NUL byte, then a query string (without a NUL the whole
 * input is the path and the query string is empty); both are passed as
 * exact-size NUL-terminated copies.
 *
 * Invariants of a route: the same answer for the same request; with
 * SB_OK the route is a real one, its methods include the request's, at
 * most two captures, each NUL-terminated within its buffer, well-formed
 * UTF-8, at most SB_SEGMENT_MAX bytes; with SB_NOTFOUND no route and no
 * captures, and when methods are named (405) each of them routes the path
 * to one route of the same pattern; with SB_INVALID the field is "path".
 * Of a query string: with SB_OK at most SB_QUERY_PARAMS parameters, keys
 * non-empty, unique, at most SB_QUERY_KEY_MAX bytes, values at most
 * SB_QUERY_VALUE_MAX, all well-formed UTF-8, each found by sb__query_get;
 * otherwise SB_INVALID with a field named. Each query value is also read
 * as an ISO 8601 time and a FROM...TO range (src/server/isotime.c, the
 * `modified` filter): a time read back from its own text is itself, cut
 * to milliseconds; a range has FROM <= TO when both are set.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/isotime.h"
#include "server/router.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {"GET",   "HEAD",   "POST",  "PUT",
                                      "PATCH", "DELETE", "TRACE", "OPTIONS"};

static void check_route(const char *method, const char *path)
{
    static sb_route_match m, again;
    sb_error err;
    int rc = sb__route(method, path, &m, &err);
    CHECK(sb__route(method, path, &again, &err) == rc);
    CHECK(memcmp(&m, &again, sizeof m) == 0);
    if (rc == SB_INVALID) {
        CHECK(strcmp(err.field, "path") == 0);
        return;
    }
    if (rc == SB_OK) {
        CHECK(m.route > SB_R_NONE && m.route < SB_R_COUNT);
        CHECK(m.pattern != NULL);
        CHECK((m.allowed & sb__http_method(method)) != 0);
        CHECK(m.n_captures <= SB_ROUTE_CAPTURES);
        for (size_t i = 0; i < m.n_captures; i++) {
            size_t len = strnlen(m.captures[i], sizeof m.captures[i]);
            CHECK(len < sizeof m.captures[i] && len <= SB_SEGMENT_MAX);
            CHECK(ref_utf8((const unsigned char *)m.captures[i], len));
        }
        return;
    }
    CHECK(rc == SB_NOTFOUND);
    CHECK(m.route == SB_R_NONE && m.n_captures == 0);
    CHECK((m.allowed & sb__http_method(method)) == 0);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        int bit = sb__http_method(methods[i]);
        if (bit == 0 || (m.allowed & bit) == 0)
            continue;
        CHECK(sb__route(methods[i], path, &again, &err) == SB_OK);
        CHECK(again.pattern == m.pattern);
    }
}

static void check_time(const char *v)
{
    int64_t us = -1, again = -1, from = -1, to = -1;
    if (sb__iso_parse(v, strlen(v), &us) == SB_OK) {
        CHECK(us >= 0);
        char text[SB_ISO_TIME_LEN];
        sb__iso_time(us, text);
        CHECK(strlen(text) == 24);
        CHECK(sb__iso_parse(text, strlen(text), &again) == SB_OK);
        CHECK(again == us - us % 1000);
    } else {
        CHECK(us == -1);
    }
    sb_error err;
    if (sb__iso_range(v, "modified", &from, &to, &err) == SB_OK)
        CHECK(from >= 0 && to >= 0 && (from == 0 || to == 0 || from <= to));
    else
        CHECK(strcmp(err.field, "modified") == 0);
}

static void check_query(const char *qs)
{
    static sb_query_params q;
    sb_error err;
    int rc = sb__query_parse(qs, &q, &err);
    if (rc != SB_OK) {
        CHECK(rc == SB_INVALID && err.field[0] != '\0');
        return;
    }
    CHECK(q.n <= SB_QUERY_PARAMS);
    for (size_t i = 0; i < q.n; i++) {
        size_t kl = strnlen(q.p[i].key, sizeof q.p[i].key);
        size_t vl = strnlen(q.p[i].value, sizeof q.p[i].value);
        CHECK(kl > 0 && kl <= SB_QUERY_KEY_MAX);
        CHECK(vl <= SB_QUERY_VALUE_MAX);
        CHECK(ref_utf8((const unsigned char *)q.p[i].key, kl));
        CHECK(ref_utf8((const unsigned char *)q.p[i].value, vl));
        CHECK(sb__query_get(&q, q.p[i].key) == q.p[i].value);
        check_time(q.p[i].value);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size;
    size_t qlen = nul ? size - plen - 1 : 0;
    char *path = malloc(plen + 1);
    char *qs = malloc(qlen + 1);
    CHECK(path != NULL && qs != NULL);
    if (plen > 0)
        memcpy(path, data, plen);
    path[plen] = '\0';
    if (qlen > 0)
        memcpy(qs, nul + 1, qlen);
    qs[qlen] = '\0';
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        check_route(methods[i], path);
    check_query(qs);
    free(path);
    free(qs);
    return 0;
}
