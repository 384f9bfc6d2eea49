/* api_mutate.c - the error store's changes (S4, S5): every retry,
 * archive, unarchive, pending retry and resolve is accepted as a durable
 * operation (202 Accepted, Location: /api/operations/{id}) and run by
 * the library (sb_operations_submit), unless it picks nothing (200 with
 * the operation of 0, or 404 for a message or group that does not
 * exist: issue 20.6); edit-and-retry of one message runs at once, so a
 * refused header is a 400 naming it. */
#include "server/api.h"

#include <jansson.h>
#include <string.h>

#include "server/isotime.h"

#define MAX_IDS 10000

/* Issue 20.6: whether what `sel` names exists at all, when it picked
 * nothing: the one message of a message's route (`one`), or the group;
 * else 0 with the 404 naming "id" (or the failure) in `out`. */
static int named_exists(const sb_api *a, const sb_failed_selection *sel,
                        int one, sb_api_resp *out)
{
    if (sel->group_id != NULL)
        return sb__api_group_known(a, sel->group_id, out);
    if (!one)
        return 1;
    sb_failed_message *m = NULL;
    sb_error err;
    int rc = sb_errors_get(a->store, sel->ids[0], &m, &err);
    sb_failed_message_free(m);
    if (rc == SB_NOTFOUND)
        return sb__api_error(out, 404, "not_found", "id",
                             "no failed message %.100s", sel->ids[0]);
    return rc == SB_OK ? 1 : sb__api_fail(out, rc, &err);
}

/* Accept `kind` over `sel`: 202 with the operation. A selection that
 * picks nothing writes no row (issue 20.6): 404 when the message of a
 * message's route (`one`) or the group does not exist, else 200 with the
 * operation of 0 (no id, no Location: there is nothing to follow). */
static int submit_op(const sb_api *a, const char *kind,
                     const sb_failed_selection *sel, int one, sb_api_resp *out)
{
    sb_operation_info op = {.size = sizeof op};
    sb_error err;
    int rc = sb_operations_submit(a->ops, a->bus, kind, sel, &op, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    if (op.id[0] == '\0') {
        if (named_exists(a, sel, one, out)) {
            sb__api_op_json(&out->body, &op);
            out->status = 200;
        }
        return 1;
    }
    snprintf(out->location, sizeof out->location, "/api/operations/%s", op.id);
    sb__api_op_json(&out->body, &op);
    out->status = 202;
    return 1;
}

/* The ids of a JSON array (`arr`), pointers into it, in *ids
 * (transferred, sb__free). 0 with the error in `out` (`status` for an
 * empty id: 400, or 422 where ServiceControl answers so). */
static int ids_of(const json_t *arr, const char *field, unsigned status,
                  const char ***ids, size_t *n, sb_api_resp *out)
{
    *ids = NULL;
    *n = 0;
    if (!json_is_array(arr) || json_array_size(arr) == 0 ||
        json_array_size(arr) > MAX_IDS)
        return sb__api_error(out, 400, "invalid", field,
                             "%s must be an array of 1 to %d message ids",
                             field, MAX_IDS);
    size_t k = json_array_size(arr);
    *ids = sb__calloc(k, sizeof **ids);
    if (*ids == NULL)
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    for (size_t i = 0; i < k; i++) {
        const char *v = json_string_value(json_array_get(arr, i));
        if (v == NULL || v[0] == '\0' || strlen(v) > SB_SEGMENT_MAX) {
            sb__free(*ids);
            *ids = NULL;
            return sb__api_error(
                out, status, status == 422 ? "unprocessable" : "invalid", field,
                "%s[%zu] must be a message id (a string of "
                "1 to %d bytes)",
                field, i, SB_SEGMENT_MAX);
        }
        (*ids)[i] = v;
    }
    *n = k;
    return 1;
}

/* A body that is an array of ids: accept `kind` over them. */
static int by_ids(const sb_api *a, const sb_api_req *r, const char *kind,
                  unsigned empty_status, sb_api_resp *out)
{
    const char **ids = NULL;
    size_t n = 0;
    if (ids_of(r->json, "body", empty_status, &ids, &n, out)) {
        sb_failed_selection sel = {.size = sizeof sel, .ids = ids, .n_ids = n};
        submit_op(a, kind, &sel, 0, out);
    }
    sb__free(ids);
    return 1;
}

/* An ISO time member of `j` (absent: 0). 0 with the 400 when it is not a
 * time. */
static int time_of(const json_t *j, const char *name, int64_t *us,
                   sb_api_resp *out)
{
    *us = 0;
    const json_t *v = json_object_get(j, name);
    if (v == NULL || json_is_null(v))
        return 1;
    const char *t = json_string_value(v);
    if (t == NULL || sb__iso_parse(t, strlen(t), us) != SB_OK)
        return sb__api_error(out, 400, "invalid", name,
                             "%s must be an ISO 8601 time such as "
                             "2026-12-01T10:00:00Z",
                             name);
    return 1;
}

/* The pending-retry bodies: {"uniquemessageids": [...]} or {"from",
 * "to"} (resolve), {"queueaddress", "from", "to"} (the queue forms). */
static int pending(const sb_api *a, const sb_api_req *r, const char *kind,
                   int queue_form, sb_api_resp *out)
{
    static const char *const known_ids[] = {"uniquemessageids", "from", "to",
                                            NULL};
    static const char *const known_queue[] = {"queueaddress", "from", "to",
                                              NULL};
    const json_t *j = r->json;
    sb_failed_selection sel = {.size = sizeof sel};
    const char **ids = NULL;
    size_t n = 0;
    int ok =
        sb__api_known_fields(j, queue_form ? known_queue : known_ids, out) &&
        time_of(j, "from", &sel.modified_from_us, out) &&
        time_of(j, "to", &sel.modified_to_us, out);
    if (ok && queue_form) {
        sel.failed_queue =
            json_string_value(json_object_get(j, "queueaddress"));
        if (sel.failed_queue == NULL)
            ok = sb__api_error(out, 400, "invalid", "queueaddress",
                               "queueaddress (a string) is required");
    } else if (ok && json_object_get(j, "uniquemessageids") != NULL) {
        ok = ids_of(json_object_get(j, "uniquemessageids"), "uniquemessageids",
                    400, &ids, &n, out);
        sel.ids = ids;
        sel.n_ids = n;
    } else if (ok) {
        sel.all = 1;
    }
    if (ok)
        submit_op(a, kind, &sel, 0, out);
    sb__free(ids);
    return 1;
}

/* PATCH /api/errors/{from}...{to}/unarchive: archived messages last
 * modified in the range. */
static int unarchive_range(const sb_api *a, const sb_route_match *m,
                           sb_api_resp *out)
{
    sb_failed_selection sel = {.size = sizeof sel, .all = 1};
    const char *names[2] = {"from", "to"};
    int64_t *ends[2] = {&sel.modified_from_us, &sel.modified_to_us};
    for (size_t i = 0; i < 2; i++)
        if (sb__iso_parse(m->captures[i], strlen(m->captures[i]), ends[i]) !=
            SB_OK)
            return sb__api_error(out, 400, "invalid", names[i],
                                 "%s must be an ISO 8601 time such as "
                                 "2026-12-01T10:00:00Z",
                                 names[i]),
                   1;
    if (sel.modified_from_us > sel.modified_to_us)
        return sb__api_error(out, 400, "invalid", "from",
                             "from must not be after to"),
               1;
    return submit_op(a, "unarchive", &sel, 0, out);
}

/* POST /api/edit/{id}: {"message_body": text, "message_headers": {..}}. */
static int edit(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"message_body", "message_headers",
                                        NULL};
    if (!a->edit_enabled)
        return sb__api_error(out, 409, "conflict", NULL,
                             "editing is off: start serve with "
                             "--allow-edit"),
               1;
    const json_t *j = r->json;
    const char *body = json_string_value(json_object_get(j, "message_body"));
    json_t *headers = json_object_get(j, "message_headers");
    int ok = sb__api_known_fields(j, known, out);
    if (ok && body == NULL)
        ok = sb__api_error(out, 400, "invalid", "message_body",
                           "message_body (a string) is required");
    if (ok && !json_is_object(headers))
        ok = sb__api_error(out, 400, "invalid", "message_headers",
                           "message_headers (the whole new header set, an "
                           "object of strings) is required");
    if (ok) {
        const char *k;
        json_t *v;
        json_object_foreach(headers, k, v)
        {
            if (!json_is_string(v)) {
                ok = sb__api_error(out, 400, "invalid", "message_headers",
                                   "header \"%.60s\" must be a string", k);
                break;
            }
        }
    }
    /* jansson's dump drops bytes it has no memory for: any failure seen
     * by the allocator discards the text. */
    unsigned long fails = sb__alloc_failures();
    char *htext = ok ? json_dumps(headers, JSON_COMPACT) : NULL;
    if (ok && (htext == NULL || sb__alloc_failures() != fails))
        ok = sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    if (ok) {
        int ignored = 0;
        char new_id[37] = "";
        sb_error err;
        int rc =
            sb_errors_edit_retry(a->store, r->m->captures[0], body,
                                 strlen(body), htext, &ignored, new_id, &err);
        if (rc != SB_OK) {
            sb__api_fail(out, rc, &err);
        } else {
            int f = 1;
            sb__buf_puts(&out->body, "{");
            sb__json_bool_m(&out->body, &f, "edit_ignored", ignored);
            sb__json_str_m(&out->body, &f, "edit_id", new_id);
            sb__buf_puts(&out->body, "}");
            out->status = 202;
        }
    }
    sb__free(htext);
    return 1;
}

int sb__api_errors_write(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const sb_route_match *m = r->m;
    const char *one[1] = {m->captures[0]};
    sb_failed_selection sel = {.size = sizeof sel};
    switch (m->route) {
    case SB_R_ERROR_RETRY:
    case SB_R_ERROR_ARCHIVE:
        sel.ids = one;
        sel.n_ids = 1;
        return submit_op(a, m->route == SB_R_ERROR_RETRY ? "retry" : "archive",
                         &sel, 1, out);
    case SB_R_ERRORS_RETRY: return by_ids(a, r, "retry", 400, out);
    case SB_R_ERRORS_ARCHIVE: return by_ids(a, r, "archive", 422, out);
    case SB_R_ERRORS_UNARCHIVE: return by_ids(a, r, "unarchive", 400, out);
    case SB_R_ERRORS_QUEUE_RETRY:
        sel.failed_queue = m->captures[0];
        return submit_op(a, "retry", &sel, 0, out);
    case SB_R_ENDPOINT_RETRY_ALL:
        sel.endpoint = m->captures[0];
        return submit_op(a, "retry", &sel, 0, out);
    case SB_R_ERRORS_RETRY_ALL:
        sel.all = 1;
        return submit_op(a, "retry", &sel, 0, out);
    case SB_R_ERRORS_UNARCHIVE_RANGE: return unarchive_range(a, m, out);
    case SB_R_GROUP_RETRY:
    case SB_R_GROUP_ARCHIVE:
    case SB_R_GROUP_UNARCHIVE:
        sel.group_id = m->captures[0];
        return submit_op(a,
                         m->route == SB_R_GROUP_RETRY     ? "retry"
                         : m->route == SB_R_GROUP_ARCHIVE ? "archive"
                                                          : "unarchive",
                         &sel, 0, out);
    case SB_R_PENDING_RETRY: return by_ids(a, r, "retry_pending", 400, out);
    case SB_R_PENDING_RESOLVE: return pending(a, r, "resolve", 0, out);
    case SB_R_PENDING_QUEUE_RETRY:
        return pending(a, r, "retry_pending", 1, out);
    case SB_R_PENDING_QUEUE_RESOLVE: return pending(a, r, "resolve", 1, out);
    case SB_R_EDIT: return edit(a, r, out);
    default: return 0;
    }
}
