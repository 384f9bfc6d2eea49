/* select.c - walking the messages an operation selects (E14, E19): one
 * selector (ids, group, failed queue, endpoint or all) and a status, in
 * keyset order over unique ids, batches of at most 1,000, each in its own
 * transaction, so a long group operation commits as it goes and can be
 * resumed by running it again. */
#include "errors/errors.h"

#include <string.h>

#define BATCH 1000
#define MAX_IDS 10000

int sb__errors_check_selection(const sb_failed_selection *s, sb_error *err)
{
    if (s == NULL)
        return sb__err(err, SB_INVALID, "selection",
                       "selection must not be NULL");
    if (s->size != 0 && s->size < sizeof *s)
        return sb__err(err, SB_INVALID, "size",
                       "sb_failed_selection.size is smaller than any "
                       "version");
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
    if (s->n_ids > MAX_IDS)
        return sb__err(err, SB_INVALID, "n_ids",
                       "at most %d ids per call (got %zu)", MAX_IDS,
                       s->n_ids);
    for (size_t i = 0; i < s->n_ids; i++)
        if (s->ids[i] == NULL || s->ids[i][0] == '\0' ||
            strlen(s->ids[i]) > 400)
            return sb__err(err, SB_INVALID, "ids",
                           "ids[%zu] must be 1 to 400 bytes", i);
    return SB_OK;
}

typedef struct walk {
    sb_errors *e;
    const sb_failed_selection *sel;
    int status;
    const char *ids_json;     /* the selection's ids, or "" */
    sb_batch_fn fn;
    void *user;
    char after[512];          /* committed keyset cursor */
    /* this batch's, applied once its transaction committed */
    char batch_after[512];
    int64_t batch_changed;
    int done;
} walk;

static int walk_tx(sb_conn *c, void *vctx, sb_error *err)
{
    walk *w = vctx;
    const sb_failed_selection *s = w->sel;
    memcpy(w->batch_after, w->after, sizeof w->after);
    w->batch_changed = 0;
    sb_value p[7] = {sb__v_text(w->after),
                     sb__v_text(s->failed_queue ? s->failed_queue : ""),
                     sb__v_text(s->endpoint ? s->endpoint : ""),
                     sb__v_text(s->group_id ? s->group_id : ""),
                     sb__v_int(BATCH),
                     sb__v_text(w->ids_json),
                     sb__v_int(w->status)};
    sb_rows *rows = NULL;
    int rc = sb__query(c, w->e->sql.s[ER_SELECT], p, 7, &rows, NULL, err);
    size_t n = rc == SB_OK ? rows->nrows : 0;
    w->done = rc == SB_OK && n < BATCH;
    sb_buf b;
    sb__buf_init(&b, (size_t)BATCH * 1100);
    sb__buf_puts(&b, "[");
    for (size_t r = 0; r < n; r++) {
        sb__buf_puts(&b, r ? "," : "");
        sb__buf_json_str(&b, sb__rows_text(rows, r, 0));
        sb__strlcpy(w->batch_after, sb__rows_text(rows, r, 0),
                    sizeof w->batch_after);
    }
    sb__buf_puts(&b, "]");
    sb__rows_free(rows);
    if (rc == SB_OK && b.failed)
        rc = sb__err(err, b.failed, NULL, "out of memory");
    if (rc == SB_OK && n > 0)
        rc = w->fn(c, w->e, b.data, n, w->user, &w->batch_changed, err);
    sb__buf_free(&b);
    return rc;
}

int sb__errors_each_batch(sb_errors *e, const sb_failed_selection *sel,
                          int status, sb_batch_fn fn, void *user,
                          int64_t *changed, sb_error *err)
{
    walk w;
    memset(&w, 0, sizeof w);
    w.e = e;
    w.sel = sel;
    w.status = status;
    w.fn = fn;
    w.user = user;
    sb_buf ids;
    sb__buf_init(&ids, (size_t)MAX_IDS * 810);
    if (sel->n_ids > 0) {
        sb__buf_puts(&ids, "[");
        for (size_t i = 0; i < sel->n_ids; i++) {
            sb__buf_puts(&ids, i ? "," : "");
            sb__buf_json_str(&ids, sel->ids[i]);
        }
        sb__buf_puts(&ids, "]");
    }
    char *json = ids.failed ? NULL : sb__buf_detach(&ids);
    if (json == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    w.ids_json = json;
    int rc = SB_OK;
    while (rc == SB_OK && !w.done) {
        rc = sb__db_run_tx(e->bus->pool, NULL, walk_tx, &w, err);
        if (rc == SB_OK) {
            memcpy(w.after, w.batch_after, sizeof w.after);
            if (changed != NULL)
                *changed += w.batch_changed;
        }
    }
    sb__free(json);
    return rc;
}
