/* claim.c - claims with leases (T14): one ordered index scan per claim,
 * attempts incremented and a fresh lock id set in the same statement. */
#include "transport/transport.h"

#include <string.h>

int sb__claim_on(sb_bus *bus, sb_conn *c, const char *queue, int max,
                 int64_t lease_ms, int delete_now, sb_msg ***out,
                 size_t *n_out, sb_error *err)
{
    char lock_id[37];
    sb__uuid7_at(lock_id, sb__wall_us() / 1000);
    sb_value p[5] = {sb__v_text(queue), sb__v_int(sb__bus_now_us(bus)),
                     sb__v_int(lease_ms), sb__v_text(lock_id),
                     sb__v_int(max)};
    sb_rows *rows = NULL;
    int64_t t0 = sb__mono_us();
    int rc = sb__query(c, delete_now ? bus->sql->claim_delete : bus->sql->claim,
                       p, 5, &rows, NULL, err);
    sb__count_claim(bus, t0, rc);
    if (rc != SB_OK || rows->nrows == 0) {
        sb__rows_free(rows);
        return rc;
    }
    sb_msg **arr = sb__realloc(*out, (*n_out + rows->nrows) * sizeof *arr);
    if (arr == NULL) {
        sb__rows_free(rows);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    *out = arr;
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        rc = sb__msg_from_row(rows, r, &arr[*n_out]);
        if (rc == SB_OK)
            (*n_out)++;
        else
            sb__err(err, rc, NULL, "could not read a claimed row");
    }
    sb__rows_free(rows);
    return rc;
}

typedef struct claim_ctx {
    sb_bus *bus;
    const char *queue;
    int max;
    int64_t lease_ms;
    sb_msg **msgs;
    size_t n;
} claim_ctx;

static int claim_tx(sb_conn *c, void *vctx, sb_error *err)
{
    claim_ctx *x = vctx;
    /* A retried transaction starts from nothing claimed. */
    sb_msg_free_array(x->msgs, x->n);
    x->msgs = NULL;
    x->n = 0;
    return sb__claim_on(x->bus, c, x->queue, x->max, x->lease_ms, 0, &x->msgs,
                        &x->n, err);
}

int sb_claim(sb_bus *bus, const char *queue, int max, int64_t lease_ms,
             sb_msg ***out, size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    int rc = sb_validate_queue_name(queue, err);
    if (rc != SB_OK)
        return rc;
    if (max < 1 || max > 10000)
        return sb__err(err, SB_INVALID, "max",
                       "max must be 1 to 10000 (got %d)", max);
    if (lease_ms < 1 || lease_ms > 86400000LL)
        return sb__err(err, SB_INVALID, "lease_ms",
                       "lease must be 1 ms to 24 h (got %lld ms)",
                       (long long)lease_ms);
    rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    claim_ctx x = {bus, queue, max, lease_ms, NULL, 0};
    rc = sb__db_run_tx(bus->pool, NULL, claim_tx, &x, err);
    if (rc != SB_OK) {
        sb_msg_free_array(x.msgs, x.n);
        return rc;
    }
    *out = x.msgs;
    *n_out = x.n;
    return SB_OK;
}
