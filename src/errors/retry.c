/* retry.c - sending failed messages back to their queues (E14, E15): in
 * one transaction per batch of at most 1,000, claim each message
 * (insert-if-absent: a message is in at most one outstanding retry),
 * re-publish its stored body and headers without the failure headers and
 * with sb-retry-of = its unique id, and mark it retry_issued. A message
 * that cannot be re-published keeps its status and loses its claim. */
#include "errors/errors.h"

#include <string.h>

/* Re-publish one claimed message: *sent = 1 if it went out, 0 if it
 * cannot be (an invalid failed queue): its claim is then removed (E15). */
static int republish(sb_conn *c, sb_errors *e, const char *uid, int *sent,
                     sb_error *err)
{
    sb_value id = sb__v_text(uid);
    sb_rows *rows = NULL;
    *sent = 0;
    int rc = sb__query(c, e->sql.s[ER_RETRY_SOURCE], &id, 1, &rows, NULL, err);
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
    size_t nf = 0;
    const char *const *failure = sb__errors_failure_headers(&nf);
    const char *kv[] = {"sb-retry-of", uid, NULL};
    int ok = queue != NULL && sb_validate_queue_name(queue, &why) == SB_OK &&
             (body != NULL || len == 0);
    if (ok)
        rc = sb__headers_without(headers ? headers : "{}", failure, nf, &clean,
                                 err);
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

/* One batch of selected unresolved messages: claims (those already in an
 * outstanding retry are skipped), re-publish, status. */
static int retry_batch(sb_conn *c, sb_errors *e, const char *ids, size_t n,
                       void *user, int64_t *changed, sb_error *err)
{
    (void)user;
    char batch_id[37];
    sb__uuid7_at(batch_id, sb__wall_us() / 1000);
    int64_t now = sb__bus_now_us(e->bus);
    sb_value cp[3] = {sb__v_text(ids), sb__v_int(now), sb__v_text(batch_id)};
    sb_rows *claimed = NULL;
    int rc = sb__errors_race(
        e, sb__query(c, e->sql.s[ER_CLAIM], cp, 3, &claimed, NULL, err), err);
    sb_buf sent, unsent;
    sb__buf_init(&sent, n * 1100 + 16);
    sb__buf_init(&unsent, n * 1100 + 16);
    sb__buf_puts(&sent, "[");
    sb__buf_puts(&unsent, "[");
    for (size_t r = 0; rc == SB_OK && r < claimed->nrows; r++) {
        const char *uid = sb__rows_text(claimed, r, 0);
        int ok = 0;
        rc = republish(c, e, uid, &ok, err);
        sb_buf *to = ok ? &sent : &unsent;
        sb__buf_puts(to, to->len > 1 ? "," : "");
        sb__buf_json_str(to, uid);
        *changed += ok;
    }
    sb__buf_puts(&sent, "]");
    sb__buf_puts(&unsent, "]");
    if (rc == SB_OK && (sent.failed || unsent.failed))
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_value mp[3] = {sb__v_text(sent.data), sb__v_int(now),
                      sb__v_int(SB_FAILED_RETRY_ISSUED)};
    if (rc == SB_OK && sent.len > 2)
        rc = sb__query(c, e->sql.s[ER_SET_STATUS], mp, 3, NULL, NULL, err);
    sb_value up[2] = {sb__v_text(unsent.data), sb__v_int(now)};
    if (rc == SB_OK && unsent.len > 2)
        rc = sb__query(c, e->sql.s[ER_DROP_CLAIMS], up, 2, NULL, NULL, err);
    sb__buf_free(&sent);
    sb__buf_free(&unsent);
    sb__rows_free(claimed);
    return rc;
}

int sb_errors_retry(sb_errors *e, const sb_failed_selection *sel,
                    int64_t *retried, sb_error *err)
{
    return sb__errors_retry(e, sel, NULL, retried, err);
}

int sb__errors_retry(sb_errors *e, const sb_failed_selection *sel,
                     const sb_errors_op_hook *hook, int64_t *retried,
                     sb_error *err)
{
    sb_error_clear(err);
    int64_t n = 0;
    if (retried != NULL)
        *retried = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = sb__errors_check_selection(sel, err);
    if (rc == SB_OK)
        rc = sb__errors_each_batch(e, sel, SB_FAILED_UNRESOLVED, "retry", hook,
                                   retry_batch, NULL, &n, err);
    if (retried != NULL)
        *retried = n;
    return rc;
}

/* E17: a pending retry sent again: its claim and status are reset first,
 * so the retry batch claims it afresh. */
static int retry_pending_batch(sb_conn *c, sb_errors *e, const char *ids,
                               size_t n, void *user, int64_t *changed,
                               sb_error *err)
{
    sb_value p[3] = {sb__v_text(ids), sb__v_int(sb__bus_now_us(e->bus)),
                     sb__v_int(SB_FAILED_UNRESOLVED)};
    int rc = sb__query(c, e->sql.s[ER_DROP_CLAIMS], p, 2, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[ER_SET_STATUS], p, 3, NULL, NULL, err);
    return rc == SB_OK ? retry_batch(c, e, ids, n, user, changed, err) : rc;
}

/* E17: a pending retry resolved by hand (the operator knows it worked). */
static int resolve_batch(sb_conn *c, sb_errors *e, const char *ids, size_t n,
                         void *user, int64_t *changed, sb_error *err)
{
    (void)user;
    sb_value p[3] = {sb__v_text(ids), sb__v_int(sb__bus_now_us(e->bus)),
                     sb__v_int(SB_FAILED_RESOLVED)};
    int rc = sb__query(c, e->sql.s[ER_SET_STATUS], p, 3, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[ER_DROP_CLAIMS], p, 2, NULL, NULL, err);
    if (rc == SB_OK)
        *changed += (int64_t)n;
    return rc;
}

static int on_pending(sb_errors *e, const sb_failed_selection *sel,
                      const sb_errors_op_hook *hook, sb_batch_fn fn,
                      int64_t *count, sb_error *err)
{
    sb_error_clear(err);
    int64_t n = 0;
    if (count != NULL)
        *count = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = sb__errors_check_selection(sel, err);
    if (rc == SB_OK)
        rc = sb__errors_each_batch(e, sel, SB_FAILED_RETRY_ISSUED, NULL, hook,
                                   fn, NULL, &n, err);
    if (count != NULL)
        *count = n;
    return rc;
}

int sb_errors_retry_pending(sb_errors *e, const sb_failed_selection *sel,
                            int64_t *retried, sb_error *err)
{
    return on_pending(e, sel, NULL, retry_pending_batch, retried, err);
}

int sb_errors_resolve(sb_errors *e, const sb_failed_selection *sel,
                      int64_t *resolved, sb_error *err)
{
    return on_pending(e, sel, NULL, resolve_batch, resolved, err);
}

int sb__errors_retry_pending(sb_errors *e, const sb_failed_selection *sel,
                             const sb_errors_op_hook *hook, int64_t *retried,
                             sb_error *err)
{
    return on_pending(e, sel, hook, retry_pending_batch, retried, err);
}

int sb__errors_resolve(sb_errors *e, const sb_failed_selection *sel,
                       const sb_errors_op_hook *hook, int64_t *resolved,
                       sb_error *err)
{
    return on_pending(e, sel, hook, resolve_batch, resolved, err);
}
