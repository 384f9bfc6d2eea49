/* archive.c - archive and unarchive (E19): by id, selection, group, failed
 * queue, endpoint or all, in batches of 1,000 that each commit, so a long
 * group operation makes progress and is resumed by running it again. An
 * archived message keeps its row (and expires after the retention period,
 * E21); unarchiving makes it unresolved again. */
#include "errors/errors.h"

static int set_batch(sb_conn *c, sb_errors *e, const char *ids, size_t n,
                     void *user, int64_t *changed, sb_error *err)
{
    const int *to = user;
    sb_value p[3] = {sb__v_text(ids), sb__v_int(sb__bus_now_us(e->bus)),
                     sb__v_int(*to)};
    int rc = sb__query(c, e->sql.s[ER_SET_STATUS], p, 3, NULL, NULL, err);
    if (rc == SB_OK)
        *changed += (int64_t)n;
    return rc;
}

int sb_errors_archive(sb_errors *e, const sb_failed_selection *sel, int archive,
                      int64_t *changed, sb_error *err)
{
    return sb__errors_archive(e, sel, archive, NULL, changed, err);
}

int sb__errors_archive(sb_errors *e, const sb_failed_selection *sel,
                       int archive, const sb_errors_op_hook *hook,
                       int64_t *changed, sb_error *err)
{
    sb_error_clear(err);
    int64_t n = 0;
    if (changed != NULL)
        *changed = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = sb__errors_check_selection(sel, err);
    int to = archive ? SB_FAILED_ARCHIVED : SB_FAILED_UNRESOLVED;
    int from = archive ? SB_FAILED_UNRESOLVED : SB_FAILED_ARCHIVED;
    if (rc == SB_OK)
        rc = sb__errors_each_batch(e, sel, from,
                                   archive ? "archive" : "unarchive", hook,
                                   set_batch, &to, &n, err);
    if (changed != NULL)
        *changed = n;
    return rc;
}
