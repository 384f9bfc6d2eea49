/* edit.c - edit and retry (E18): an unresolved message is sent again as
 * an edited copy under a new message id, with sb-edit-of = its unique id,
 * and marked resolved, in one transaction. An edit claim per message
 * (insert-if-absent) makes a second edit a no-op. Locked headers (ids,
 * correlation, the failure headers) keep their stored values. */
#include "errors/errors.h"

#include <string.h>
#include <strings.h>

/* Room for every locked header the stored message carries. */
#define MAX_LOCKED 64

static int is_locked(const char *key)
{
    for (const char *const *l = sb_errors_locked_headers(); *l != NULL; l++)
        if (strcasecmp(*l, key) == 0)
            return 1;
    return 0;
}

typedef struct edit_ctx {
    sb_errors *e;
    const char *uid;
    const void *body;
    size_t len;
    const char *headers;
    char new_id[37];
    int ignored;
} edit_ctx;

/* SB_INVALID naming the first locked header the edit gives a value other
 * than the stored one, or gives when the message has none. */
static int refused_change(const char *stored, const char *edited, sb_error *err)
{
    char **kv = NULL;
    size_t n = 0;
    int rc = sb__headers_parse(edited, &kv, &n);
    if (rc != SB_OK)
        return sb__err(err, rc, "headers", "headers are not a JSON object");
    for (size_t i = 0; rc == SB_OK && i < n; i++) {
        if (!is_locked(kv[2 * i]))
            continue;
        unsigned long fails = sb__alloc_failures();
        char *was = sb__headers_get(stored, kv[2 * i]);
        if (was == NULL && sb__alloc_failures() != fails)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        else if (was == NULL || strcmp(was, kv[2 * i + 1]) != 0)
            rc = sb__err(err, SB_INVALID, kv[2 * i],
                         "header %s is locked: an edit may give it only "
                         "with its stored value",
                         kv[2 * i]);
        sb__free(was);
    }
    sb__headers_free(kv, n);
    return rc;
}

/* The copy's headers: the edit's, plus the locked headers it left out,
 * without the failure headers, with the new id and sb-edit-of. */
static int copy_headers(const char *stored, const edit_ctx *x, char **out,
                        sb_error *err)
{
    char **kv = NULL;
    size_t n = 0;
    int rc = sb__headers_parse(stored, &kv, &n);
    if (rc != SB_OK)
        return sb__err(err, rc, NULL, "stored headers are unreadable");
    const char *keep[2 * MAX_LOCKED + 1];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 2 * MAX_LOCKED; i++) {
        char *now = sb__headers_get(x->headers, kv[2 * i]);
        if (now == NULL && is_locked(kv[2 * i])) {
            keep[k++] = kv[2 * i];
            keep[k++] = kv[2 * i + 1];
        }
        sb__free(now);
    }
    keep[k] = NULL;
    char *merged = NULL, *clean = NULL;
    size_t nf = 0;
    const char *const *f = sb__errors_failure_headers(&nf);
    rc = sb__headers_merge(x->headers, keep, &merged, err);
    if (rc == SB_OK)
        rc = sb__headers_without(merged, f, nf, &clean, err);
    char *nsb_id = sb__headers_get(stored, "NServiceBus.MessageId");
    int nsb = nsb_id != NULL;
    sb__free(nsb_id);
    const char *ids[] = {"sb-message-id",
                         x->new_id,
                         "sb-edit-of",
                         x->uid,
                         nsb ? "NServiceBus.MessageId" : NULL,
                         x->new_id,
                         NULL};
    if (rc == SB_OK)
        rc = sb__headers_merge(clean, ids, out, err);
    sb__free(merged);
    sb__free(clean);
    sb__headers_free(kv, n);
    return rc;
}

static int edit_tx(sb_conn *c, void *vctx, sb_error *err)
{
    edit_ctx *x = vctx;
    sb_errors *e = x->e;
    x->ignored = 0;
    sb_value id = sb__v_text(x->uid);
    sb_rows *src = NULL;
    int rc = sb__query(c, e->sql.s[ER_RETRY_SOURCE], &id, 1, &src, NULL, err);
    if (rc == SB_OK && src->nrows == 0)
        rc = sb__err(err, SB_NOTFOUND, "unique_message_id",
                     "no failed message %s", x->uid);
    int64_t now = sb__wall_us();
    int64_t claimed = 0;
    sb_value cp[3] = {id, sb__v_int(now), sb__v_text(x->new_id)};
    if (rc == SB_OK)
        rc = sb__errors_race(
            e,
            sb__query(c, e->sql.s[ER_EDIT_CLAIM], cp, 3, NULL, &claimed, err),
            err);
    if (rc == SB_OK && claimed == 0) {
        x->ignored = 1; /* edited before: the first edit stands */
        sb__rows_free(src);
        return SB_OK;
    }
    const char *stored = rc == SB_OK ? sb__rows_text(src, 0, 0) : NULL;
    const char *queue = rc == SB_OK ? sb__rows_text(src, 0, 1) : NULL;
    if (rc == SB_OK && sb__rows_int(src, 0, 5) != SB_FAILED_UNRESOLVED)
        rc = sb__err(err, SB_CONFLICT, "unique_message_id",
                     "message %s is not unresolved: only unresolved messages "
                     "can be edited",
                     x->uid);
    if (rc == SB_OK)
        rc = refused_change(stored ? stored : "{}", x->headers, err);
    if (rc == SB_OK &&
        (queue == NULL || sb_validate_queue_name(queue, NULL) != SB_OK))
        rc = sb__err(err, SB_CONFLICT, "failed_queue",
                     "message %s has no valid queue to send the copy to",
                     x->uid);
    char *headers = NULL;
    if (rc == SB_OK)
        rc = copy_headers(stored ? stored : "{}", x, &headers, err);
    if (rc == SB_OK)
        rc = sb__headers_validate(headers, strlen(headers), err);
    if (rc == SB_OK) {
        char ids[1][37];
        memcpy(ids[0], x->new_id, sizeof ids[0]);
        sb_outgoing o = {x->new_id, x->body, x->len, headers, 0};
        int immediate = 0;
        rc = sb__publish_on(e->bus, c, queue, &o, 1, ids, &immediate, err);
    }
    sb_buf one;
    sb__buf_init(&one, 512);
    sb__buf_puts(&one, "[");
    sb__buf_json_str(&one, x->uid);
    sb__buf_puts(&one, "]");
    sb_value sp[3] = {sb__v_text(one.data), sb__v_int(now),
                      sb__v_int(SB_FAILED_RESOLVED)};
    if (rc == SB_OK && one.failed)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[ER_SET_STATUS], sp, 3, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[ER_DROP_CLAIMS], sp, 2, NULL, NULL, err);
    sb__buf_free(&one);
    sb__free(headers);
    sb__rows_free(src);
    return rc;
}

int sb_errors_edit_retry(sb_errors *e, const char *unique_message_id,
                         const void *body, size_t len, const char *headers_json,
                         int *ignored, char *new_id, sb_error *err)
{
    sb_error_clear(err);
    if (ignored != NULL)
        *ignored = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    if (!e->allow_edit)
        return sb__err(err, SB_MISUSE, "allow_edit",
                       "editing is off: open the store with allow_edit = 1");
    if (unique_message_id == NULL || unique_message_id[0] == '\0' ||
        strlen(unique_message_id) > 400)
        return sb__err(err, SB_INVALID, "unique_message_id",
                       "unique_message_id must be 1 to 400 bytes");
    if (body == NULL && len > 0)
        return sb__err(err, SB_INVALID, "body", "body is NULL but len is %zu",
                       len);
    if (len == 0)
        return sb__err(err, SB_INVALID, "body",
                       "an edited body must not be "
                       "empty");
    if (len > e->bus->max_payload)
        return sb__err(err, SB_INVALID, "body",
                       "body is %zu bytes; max_payload_bytes is %llu", len,
                       (unsigned long long)e->bus->max_payload);
    if (headers_json == NULL)
        return sb__err(err, SB_INVALID, "headers",
                       "headers must be a JSON object of strings");
    int rc = sb__headers_validate(headers_json, strlen(headers_json), err);
    if (rc != SB_OK)
        return rc;
    edit_ctx x;
    memset(&x, 0, sizeof x);
    x.e = e;
    x.uid = unique_message_id;
    x.body = body;
    x.len = len;
    x.headers = headers_json;
    sb__uuid7_at(x.new_id, sb__wall_us() / 1000);
    rc = sb__db_run_tx(e->bus->pool, NULL, edit_tx, &x, err);
    if (rc == SB_OK && !x.ignored)
        sb__errors_refresh_windows(e);
    if (rc == SB_OK && ignored != NULL)
        *ignored = x.ignored;
    if (rc == SB_OK && new_id != NULL)
        memcpy(new_id, x.ignored ? "" : x.new_id, x.ignored ? 1 : 37);
    return rc;
}
