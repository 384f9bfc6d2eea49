/* retry.c - sending failed messages back to their queues (E14, E15): in
 * one transaction per batch of at most 1,000, claim each message
 * (insert-if-absent: a message is in at most one outstanding retry),
 * re-publish its stored body and headers without the failure headers and
 * with sb-retry-of = its unique id, and mark it retry_issued. A message
 * that cannot be re-published keeps its status and loses its claim. */
#include "errors/errors.h"

#include <string.h>

#define RETRY_BATCH 1000

/* Failure headers a retried copy must not carry: they describe the
 * failure, not the message. */
static const char *const failure_headers[] = {
    "sb-dead-letter-reason",
    "sb-failed-queue",
    "sb-time-of-failure",
    "sb-processing-endpoint",
    "sb-attempts",
    "sb-exception-type",
    "sb-exception-message",
    "sb-exception-stacktrace",
    "sb-retry-of",
    "NServiceBus.FailedQ",
    "NServiceBus.TimeOfFailure",
    "NServiceBus.ExceptionInfo.ExceptionType",
    "NServiceBus.ExceptionInfo.Message",
    "NServiceBus.ExceptionInfo.StackTrace",
    "NServiceBus.ExceptionInfo.Source",
    "NServiceBus.ExceptionInfo.HelpLink",
    "ServiceControl.Retry.UniqueMessageId"};

typedef struct retry_ctx {
    sb_errors *e;
    const sb_retry_selection *sel;
    char *ids_json;      /* the selection's ids, or "" */
    char after[512];     /* keyset cursor over unique ids (committed) */
    /* this batch's, applied once its transaction committed (a retried
     * transaction starts them over) */
    char batch_after[512];
    int64_t batch_retried;
    int done;
} retry_ctx;

/* Re-publish one claimed message; 1 if it went out, 0 if it cannot be
 * (its claim is then removed, E15). */
static int republish(retry_ctx *x, sb_conn *c, const char *uid, int *sent,
                     sb_error *err)
{
    sb_errors *e = x->e;
    sb_value id = sb__v_text(uid);
    sb_rows *rows = NULL;
    *sent = 0;
    int rc = sb__query(c, e->sql.s[ER_RETRY_SOURCE], &id, 1, &rows, NULL,
                       err);
    if (rc != SB_OK || rows->nrows != 1) {
        sb__rows_free(rows);
        return rc;
    }
    const char *headers = sb__rows_text(rows, 0, 0);
    const char *queue = sb__rows_text(rows, 0, 1);
    const void *body = sb__rows_text(rows, 0, 2);
    size_t len = sb__rows_at(rows, 0, 2)->len;
    if (sb__rows_int(rows, 0, 3) != 0) {
        body = sb__rows_at(rows, 0, 4)->p;
        len = sb__rows_at(rows, 0, 4)->len;
    }
    sb_error why;
    char *clean = NULL, *out = NULL;
    const char *kv[] = {"sb-retry-of", uid, NULL};
    int ok = queue != NULL && sb_validate_queue_name(queue, &why) == SB_OK &&
             (body != NULL || len == 0);
    if (ok)
        rc = sb__headers_without(headers ? headers : "{}", failure_headers,
                                 sizeof failure_headers /
                                     sizeof failure_headers[0],
                                 &clean, err);
    if (ok && rc == SB_OK)
        rc = sb__headers_merge(clean, kv, &out, err);
    if (ok && rc == SB_OK) {
        char ids[1][37];
        sb__uuid7_at(ids[0], sb__wall_us() / 1000);
        sb_outgoing o = {ids[0], body ? body : "", len, out, 0};
        int immediate = 0;
        rc = sb__publish_on(e->bus, c, queue, &o, 1, ids, &immediate, err);
        *sent = rc == SB_OK;
    }
    sb__free(clean);
    sb__free(out);
    sb__rows_free(rows);
    return rc;
}

/* One batch: candidates after the cursor, claims, re-publish, status. */
static int retry_tx(sb_conn *c, void *vctx, sb_error *err)
{
    retry_ctx *x = vctx;
    sb_errors *e = x->e;
    const sb_retry_selection *s = x->sel;
    memcpy(x->batch_after, x->after, sizeof x->after);
    x->batch_retried = 0;
    sb_value p[6] = {sb__v_text(x->after),
                     sb__v_text(s->failed_queue ? s->failed_queue : ""),
                     sb__v_text(s->endpoint ? s->endpoint : ""),
                     sb__v_text(s->group_id ? s->group_id : ""),
                     sb__v_int(RETRY_BATCH),
                     sb__v_text(x->ids_json)};
    sb_rows *cand = NULL, *claimed = NULL;
    int rc = sb__query(c, e->sql.s[ER_RETRY_CANDIDATES], p, 6, &cand, NULL,
                       err);
    x->done = rc == SB_OK && cand->nrows < RETRY_BATCH;
    sb_buf b;
    sb__buf_init(&b, (size_t)RETRY_BATCH * 1100);
    sb__buf_puts(&b, "[");
    for (size_t r = 0; rc == SB_OK && r < cand->nrows; r++) {
        sb__buf_puts(&b, r ? "," : "");
        sb__buf_json_str(&b, sb__rows_text(cand, r, 0));
        sb__strlcpy(x->batch_after, sb__rows_text(cand, r, 0),
                    sizeof x->batch_after);
    }
    sb__buf_puts(&b, "]");
    char batch_id[37];
    sb__uuid7_at(batch_id, sb__wall_us() / 1000);
    sb_value cp[3] = {sb__v_text(b.data), sb__v_int(sb__bus_now_us(e->bus)),
                      sb__v_text(batch_id)};
    if (rc == SB_OK && cand->nrows > 0)
        rc = b.failed ? sb__err(err, b.failed, NULL, "out of memory")
                      : sb__query(c, e->sql.s[ER_CLAIM], cp, 3, &claimed,
                                  NULL, err);
    sb_buf sent, unsent;
    sb__buf_init(&sent, (size_t)RETRY_BATCH * 1100);
    sb__buf_init(&unsent, (size_t)RETRY_BATCH * 1100);
    sb__buf_puts(&sent, "[");
    sb__buf_puts(&unsent, "[");
    for (size_t r = 0; rc == SB_OK && claimed && r < claimed->nrows; r++) {
        const char *uid = sb__rows_text(claimed, r, 0);
        int ok = 0;
        rc = republish(x, c, uid, &ok, err);
        sb_buf *to = ok ? &sent : &unsent;
        sb__buf_puts(to, to->len > 1 ? "," : "");
        sb__buf_json_str(to, uid);
        x->batch_retried += ok;
    }
    sb__buf_puts(&sent, "]");
    sb__buf_puts(&unsent, "]");
    if (rc == SB_OK && (sent.failed || unsent.failed))
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_value mp[2] = {sb__v_text(sent.data),
                      sb__v_int(sb__bus_now_us(e->bus))};
    if (rc == SB_OK && sent.len > 2)
        rc = sb__query(c, e->sql.s[ER_MARK_RETRIED], mp, 2, NULL, NULL, err);
    sb_value up[2] = {sb__v_text(unsent.data), mp[1]};
    if (rc == SB_OK && unsent.len > 2)
        rc = sb__query(c, e->sql.s[ER_DROP_CLAIMS], up, 2, NULL, NULL, err);
    sb__buf_free(&sent);
    sb__buf_free(&unsent);
    sb__buf_free(&b);
    sb__rows_free(cand);
    sb__rows_free(claimed);
    return rc;
}

static int check_selection(const sb_retry_selection *s, sb_error *err)
{
    if (s == NULL)
        return sb__err(err, SB_INVALID, "selection",
                       "selection must not be NULL");
    if (s->size != 0 && s->size < sizeof *s)
        return sb__err(err, SB_INVALID, "size",
                       "sb_retry_selection.size is smaller than any version");
    int n = (s->n_ids > 0) + (s->group_id != NULL) +
            (s->failed_queue != NULL) + (s->endpoint != NULL) + (s->all != 0);
    if (n != 1)
        return sb__err(err, SB_INVALID, "selection",
                       "choose exactly one of ids, group_id, failed_queue, "
                       "endpoint and all (got %d)",
                       n);
    if (s->n_ids > 0 && s->ids == NULL)
        return sb__err(err, SB_INVALID, "ids",
                       "ids is NULL but n_ids is %zu", s->n_ids);
    if (s->n_ids > 10000)
        return sb__err(err, SB_INVALID, "n_ids",
                       "at most 10000 ids per call (got %zu)", s->n_ids);
    for (size_t i = 0; i < s->n_ids; i++)
        if (s->ids[i] == NULL || s->ids[i][0] == '\0' ||
            strlen(s->ids[i]) > 400)
            return sb__err(err, SB_INVALID, "ids",
                           "ids[%zu] must be 1 to 400 bytes", i);
    return SB_OK;
}

int sb_errors_retry(sb_errors *e, const sb_retry_selection *sel,
                    int64_t *retried, sb_error *err)
{
    sb_error_clear(err);
    if (retried != NULL)
        *retried = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = check_selection(sel, err);
    if (rc != SB_OK)
        return rc;
    retry_ctx x;
    memset(&x, 0, sizeof x);
    x.e = e;
    x.sel = sel;
    sb_buf ids;
    sb__buf_init(&ids, (size_t)10000 * 810);
    if (sel->n_ids > 0) {
        sb__buf_puts(&ids, "[");
        for (size_t i = 0; i < sel->n_ids; i++) {
            sb__buf_puts(&ids, i ? "," : "");
            sb__buf_json_str(&ids, sel->ids[i]);
        }
        sb__buf_puts(&ids, "]");
    }
    x.ids_json = ids.failed ? NULL : sb__buf_detach(&ids);
    if (x.ids_json == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    int64_t total = 0;
    while (rc == SB_OK && !x.done) {
        rc = sb__db_run_tx(e->bus->pool, NULL, retry_tx, &x, err);
        if (rc == SB_OK) {
            memcpy(x.after, x.batch_after, sizeof x.after);
            total += x.batch_retried;
        }
    }
    sb__free(x.ids_json);
    if (retried != NULL)
        *retried = total;
    return rc;
}
