/* api.c - the handlers' dispatch (see api.h): by route, with the
 * request body parsed and of the shape the route declares before its
 * handler runs (S7, S10). What the handlers share (errors by result
 * code, the JSON member writers, unknown fields, status names) is
 * api_util.c's. */
#include "server/api.h"

#include <jansson.h>
#include <string.h>

/* ---- request bodies ---- */

static size_t depth(const json_t *j)
{
    size_t d = 0;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            size_t x = depth(v);
            d = x > d ? x : d;
            if (d > SB_API_JSON_DEPTH)
                break;
        }
        return d + 1;
    }
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            size_t x = depth(v);
            d = x > d ? x : d;
            if (d > SB_API_JSON_DEPTH)
                break;
        }
        return d + 1;
    }
    return 1;
}

/* The request body as JSON (jansson), at most SB_API_JSON_DEPTH deep and
 * of the shape `kind`; NULL with the 400 in `out` when it is not. The
 * result is transferred (json_decref). */
static json_t *parse_body(const sb_api_req *r, sb_body_kind kind,
                          sb_api_resp *out)
{
    if (r->body_len == 0) {
        sb__api_error(out, 400, "invalid", "body",
                      "the request needs a JSON body");
        return NULL;
    }
    json_error_t e;
    unsigned long fails = sb__alloc_failures();
    json_t *j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &e);
    if (sb__alloc_failures() != fails) {
        /* jansson reports out of memory as a syntax error, or drops
         * bytes it could not keep: the server's fault, not the body's. */
        json_decref(j);
        sb__api_error(out, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    if (j == NULL) {
        /* jansson ends its text with the bytes it stopped at ("invalid
         * token near 'abc'"): the body's own, which S7 keeps out of an
         * error; the line and column say where. */
        const char *near = strstr(e.text, " near ");
        int len = near != NULL ? (int)(near - e.text) : (int)strlen(e.text);
        sb__api_error(out, 400, "invalid", "body",
                      "the body is not JSON: %.*s (line %d, column %d)", len,
                      e.text, e.line, e.column);
        return NULL;
    }
    if (depth(j) > SB_API_JSON_DEPTH) {
        json_decref(j);
        sb__api_error(out, 400, "invalid", "body",
                      "the body must be nested at most %d deep",
                      SB_API_JSON_DEPTH);
        return NULL;
    }
    int fits = kind == SB_BODY_OBJECT  ? json_is_object(j)
               : kind == SB_BODY_ARRAY ? json_is_array(j)
                                       : json_is_object(j) || json_is_array(j);
    if (!fits) {
        json_decref(j);
        sb__api_error(out, 400, "invalid", "body",
                      kind == SB_BODY_OBJECT  ? "the body must be a JSON object"
                      : kind == SB_BODY_ARRAY ? "the body must be a JSON array"
                                              : "the body must be a JSON "
                                                "object or an array of them");
        return NULL;
    }
    return j;
}

void sb__api_handle(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_body_kind kind = r->m->body;
    sb_api_req req = *r;
    json_t *j = NULL;
    if (kind == SB_BODY_OBJECT || kind == SB_BODY_ARRAY ||
        kind == SB_BODY_OBJECT_OR_ARRAY) {
        j = parse_body(r, kind, out);
        if (j == NULL)
            return;
        req.json = j;
    }
    if (!(sb__api_root(&req, out) || sb__api_errors_read(a, &req, out) ||
          sb__api_groups(a, &req, out) || sb__api_errors_write(a, &req, out) ||
          sb__api_own(a, &req, out) || sb__api_schedules(a, &req, out) ||
          sb__api_endpoints(a, &req, out) || sb__api_sc_checks(a, &req, out) ||
          sb__api_sc_misc(a, &req, out)))
        /* Every route of the router has a handler; this would be a route
         * added to the table without one. */
        sb__api_error(out, 500, "internal", NULL, "no handler for %s",
                      r->m->pattern);
    json_decref(j);
}

/* ---- what http.c runs around the handler ---- */

int sb__api_query(const sb_buf *text, sb_query_params **out, sb_error *err)
{
    *out = NULL;
    sb_query_params *q = sb__malloc(sizeof *q);
    int rc = q == NULL || text->failed == SB_NOMEM
                 ? sb__err(err, SB_NOMEM, NULL, "out of memory")
             : text->failed
                 ? sb__err(err, SB_INVALID, "query",
                           "the query string must be at most %d "
                           "bytes",
                           SB_QUERY_MAX)
                 : sb__query_parse(text->len ? text->data : "", q, err);
    if (rc != SB_OK) {
        sb__free(q);
        return rc;
    }
    *out = q;
    return SB_OK;
}

sb_api_resp *sb__api_resp_new(int64_t timeout_ms)
{
    sb_api_resp *out = sb__calloc(1, sizeof *out);
    if (out == NULL)
        return NULL;
    sb__buf_init(&out->body, SB_API_BODY_MAX);
    if (sb__buf_printf(&out->body, "%*s", (int)SB_API_BODY_RESERVE - 1, "") !=
        SB_OK) {
        sb__api_resp_free(out);
        return NULL;
    }
    sb__buf_reset(&out->body); /* the room stays */
    out->total = -1;
    out->timeout_ms = timeout_ms;
    return out;
}

void sb__api_resp_free(sb_api_resp *out)
{
    if (out == NULL)
        return;
    sb__buf_free(&out->body);
    sb__free(out);
}

void sb__api_resp_finish(sb_api_resp *out)
{
    if (out->code == NULL && out->body.failed)
        sb__api_error(out, 503, "unavailable", NULL,
                      "the response is too large or memory ran out");
}
