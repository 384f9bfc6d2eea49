/* retention.c - the retention sweep (E21): resolved and archived messages
 * older than the retention period, measured from status_changed_at, go in
 * bounded batches with their bodies, group rows and orphaned comments. The
 * cutoff is taken from the clock at every batch, so a changed period takes
 * effect without rewriting rows; a partial index on status_changed_at
 * restricted to the two statuses keeps the scan cheap. */
#include "errors/errors.h"

#include <string.h>

#define EXPIRE_BATCH 1000
#define MIN_RETENTION_MS (3600LL * 1000)
#define MAX_RETENTION_MS (365LL * 86400 * 1000)

typedef struct expire_ctx {
    sb_errors *e;
    int64_t retention_ms;
    int64_t batch; /* messages deleted by this transaction */
} expire_ctx;

static int expire_tx(sb_conn *c, void *vctx, sb_error *err)
{
    expire_ctx *x = vctx;
    sb_errors *e = x->e;
    int64_t now = sb__bus_now_us(e->bus);
    sb_value p[3] = {sb__v_int(x->retention_ms), sb__v_int(now),
                     sb__v_int(EXPIRE_BATCH)};
    sb_rows *rows = NULL;
    x->batch = 0;
    int rc = sb__query(c, e->sql.s[ER_EXPIRED], p, 3, &rows, NULL, err);
    if (rc != SB_OK || rows->nrows == 0) {
        sb__rows_free(rows);
        return rc;
    }
    sb_buf ids;
    sb__buf_init(&ids, (size_t)EXPIRE_BATCH * 1100);
    sb__buf_puts(&ids, "[");
    for (size_t r = 0; r < rows->nrows; r++) {
        sb__buf_puts(&ids, r ? "," : "");
        sb__buf_json_str(&ids, sb__rows_text(rows, r, 0));
    }
    sb__buf_puts(&ids, "]");
    x->batch = (int64_t)rows->nrows;
    sb__rows_free(rows);
    if (ids.failed)
        rc = sb__err(err, ids.failed, NULL, "out of memory");
    sb_value d[2] = {sb__v_text(ids.data), sb__v_int(now)};
    const int steps[] = {ER_DROP_BODIES, ER_DELETE_GROUPS, ER_DROP_CLAIMS,
                         ER_DROP_EDITS, ER_DELETE_MESSAGES};
    for (size_t i = 0; rc == SB_OK && i < sizeof steps / sizeof *steps; i++)
        rc = sb__query(c, e->sql.s[steps[i]], d, 2, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[ER_ORPHAN_COMMENTS], NULL, 0, NULL, NULL,
                       err);
    sb__buf_free(&ids);
    return rc;
}

int sb_errors_expire(sb_errors *e, int64_t retention_ms, int64_t *deleted,
                     sb_error *err)
{
    sb_error_clear(err);
    if (deleted != NULL)
        *deleted = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    if (retention_ms < MIN_RETENTION_MS || retention_ms > MAX_RETENTION_MS)
        return sb__err(err, SB_INVALID, "retention_ms",
                       "retention must be 1 hour to 365 days (%lld to %lld "
                       "ms; got %lld)",
                       (long long)MIN_RETENTION_MS, (long long)MAX_RETENTION_MS,
                       (long long)retention_ms);
    expire_ctx x = {e, retention_ms, 0};
    int rc, swept = 0;
    do {
        rc = sb__db_run_tx(e->bus->pool, NULL, expire_tx, &x, err);
        if (rc == SB_OK && deleted != NULL)
            *deleted += x.batch;
        if (rc == SB_OK && x.batch > 0)
            swept = 1;
    } while (rc == SB_OK && x.batch == EXPIRE_BATCH);
    if (swept) /* the batches that committed */
        sb__errors_refresh_windows(e);
    return rc;
}
