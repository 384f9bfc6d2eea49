/* claim.c - claims with leases (T14): one ordered index scan per claim,
 * attempts incremented and a fresh lock id set in the same statement; a
 * consumer's claims start that scan at its cursor (sb__claim_next_on). */
#include "transport/transport.h"

#include <stdlib.h>
#include <string.h>

typedef struct by_priority {
    int64_t priority, created_at;
    size_t row;
} by_priority;

static int priority_first(const void *a, const void *b)
{
    const by_priority *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->created_at != y->created_at)
        return x->created_at < y->created_at ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* A prioritized claim's rows in the order they were claimed in: highest
 * priority first, then oldest. RETURNING promises no order. SB_NOMEM. */
static int sort_claimed(sb_msg **arr, const sb_rows *rows)
{
    by_priority *k = sb__calloc(rows->nrows, sizeof *k);
    sb_msg **tmp = sb__calloc(rows->nrows, sizeof *tmp);
    if (k == NULL || tmp == NULL) {
        sb__free(k);
        sb__free(tmp);
        return SB_NOMEM;
    }
    for (size_t r = 0; r < rows->nrows; r++) {
        k[r].priority = sb__rows_int(rows, r, SB_CLAIM_COL_PRIORITY);
        k[r].created_at = sb__rows_int(rows, r, 5);
        k[r].row = r;
        tmp[r] = arr[r];
    }
    qsort(k, rows->nrows, sizeof *k, priority_first);
    for (size_t r = 0; r < rows->nrows; r++)
        arr[r] = tmp[k[r].row];
    sb__free(k);
    sb__free(tmp);
    return SB_OK;
}

/* Append the claimed rows to *out (SB_CLAIM_COLS); the newest
 * available_at among them goes to *newest_us (the cursor's bound, where
 * claims do not move available_at); a prioritized claim's are sorted. */
static int take_rows(const sb_rows *rows, int prio, int64_t *newest_us,
                     sb_msg ***out, size_t *n_out, sb_error *err)
{
    size_t first = *n_out;
    if (rows->nrows == 0)
        return SB_OK;
    sb_msg **arr = sb__realloc(*out, (*n_out + rows->nrows) * sizeof *arr);
    if (arr == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    *out = arr;
    int rc = SB_OK;
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        rc = sb__msg_from_row(rows, r, &arr[*n_out]);
        if (rc != SB_OK) {
            sb__err(err, rc, NULL, "could not read a claimed row");
            break;
        }
        sb_msg *m = arr[(*n_out)++];
        m->expires_at_us = sb__rows_int(rows, r, SB_CLAIM_COL_EXPIRES);
        int64_t at = sb__rows_int(rows, r, SB_CLAIM_COL_AVAILABLE);
        if (at > *newest_us)
            *newest_us = at;
    }
    if (rc == SB_OK && prio && *n_out - first == rows->nrows &&
        sort_claimed(*out + first, rows) != SB_OK)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    return rc;
}

/* A claim statement's parameters; `from_us` >= 0 selects the bounded
 * form (which only claims: no consumer through a cursor deletes as it
 * claims); `prio` the prioritized one (T34: unbounded, never deleting). */
static void claim_params(sb_bus *bus, const char *queue, int max,
                         int64_t lease_ms, int delete_now, int64_t from_us,
                         int prio, sb_claim_call *cc, sb_call *call)
{
    sb__uuid7_at(cc->lock_id, sb__wall_us() / 1000);
    cc->p[0] = sb__v_text(queue);
    cc->p[1] = sb__v_int(sb__bus_now_us(bus));
    cc->p[2] = sb__v_int(lease_ms);
    cc->p[3] = sb__v_text(cc->lock_id);
    cc->p[4] = sb__v_int(max);
    cc->p[5] = sb__v_int(from_us);
    cc->rows = NULL;
    cc->prio = prio;
    cc->t0 = sb__mono_us();
    const char *sql = delete_now ? bus->sql->claim_delete : bus->sql->claim;
    if (prio) {
        sql = bus->sql->claim_prio;
        from_us = -1;
    } else if (from_us >= 0) {
        sql = bus->sql->claim_from;
    }
    *call = (sb_call){sql, cc->p, from_us >= 0 ? 6 : 5, &cc->rows, NULL};
}

/* One claim statement, run at once. */
static int claim_run(sb_bus *bus, sb_conn *c, const char *queue, int max,
                     int64_t lease_ms, int delete_now, int64_t from_us,
                     int prio, int64_t *newest_us, sb_msg ***out, size_t *n_out,
                     sb_error *err)
{
    sb_claim_call cc;
    sb_call call;
    claim_params(bus, queue, max, lease_ms, delete_now, from_us, prio, &cc,
                 &call);
    int rc =
        sb__query(c, call.sql, call.params, call.nparams, call.rows, NULL, err);
    sb__count_claim(bus, cc.t0, rc);
    if (rc == SB_OK)
        rc = take_rows(cc.rows, prio, newest_us, out, n_out, err);
    sb__rows_free(cc.rows);
    return rc;
}

int sb__claim_on(sb_bus *bus, sb_conn *c, const char *queue, int max,
                 int64_t lease_ms, int delete_now, sb_msg ***out, size_t *n_out,
                 sb_error *err)
{
    int64_t newest = 0;
    return claim_run(bus, c, queue, max, lease_ms, delete_now, -1, 0, &newest,
                     out, n_out, err);
}

/* Why a cursor: an ack deletes its row and a claim updates it, and while
 * any snapshot older than those changes is held (a long transaction, an
 * idle-in-transaction session, a replication slot's xmin), neither the
 * heap versions nor their index entries can be removed or marked dead.
 * A claim that starts at the queue's first entry walks every one of them
 * and visits its heap page: 32,000 entries, 11,600 buffers and ~8 ms a
 * claim after 60 s at 500 msg/s, where the bounded scan reads 7 buffers.
 * Rows are ordered by available_at, which claims and renewals never move,
 * so what a consumer claimed last marks where the claimable rows begin:
 * below it lie the rows it and its peers hold or settled. What can still
 * appear below it: rows of publish transactions that began earlier and
 * committed later (their available_at is their transaction's start; the
 * slack covers transactions up to SB_CLAIM_SLACK_US), leases that
 * expired, naks and hand-backs of other consumers; the periodic full
 * scan claims those, in order, within SB_CLAIM_FULL_EVERY_US. */
/* Whether the cursor's next claim may start at its bound. */
static int use_bound(const sb_bus *bus, const sb_claim_cursor *cur, int64_t now)
{
    return bus->sql->claim_from != NULL && !cur->prioritized &&
           cur->floor_us > 0 && now - cur->full_at_us < SB_CLAIM_FULL_EVERY_US;
}

/* After an empty bounded claim: an idle consumer looks below the bound
 * before it says the queue is empty, as often as the full scan's cost
 * allows. 0: not now (*pending, if asked, is 1: it cannot tell). */
static int full_after_empty(const sb_claim_cursor *cur, int *pending,
                            int64_t now)
{
    int64_t gap = cur->full_cost_us * 50;
    if (gap < SB_CLAIM_FULL_IDLE_US)
        gap = SB_CLAIM_FULL_IDLE_US;
    if (pending == NULL || now - cur->full_at_us < gap) {
        if (pending)
            *pending = 1;
        return 0;
    }
    return 1;
}

/* After a full scan that began at `t0` and claimed `got` rows: an empty
 * one asks whether anything is pending; its cost paces the next, and a
 * slow one looks for a held xmin. */
static int full_done(sb_bus *bus, sb_conn *c, sb_claim_cursor *cur,
                     const char *queue, int *pending, size_t got, int64_t t0,
                     int rc, sb_error *err)
{
    if (rc == SB_OK && pending != NULL) {
        *pending = 1;
        if (got == 0)
            rc = sb__pending_on(bus, c, queue, pending, err);
    }
    cur->full_cost_us = sb__mono_us() - t0;
    if (rc == SB_OK && cur->full_cost_us >= SB_CLAIM_SLOW_FULL_US)
        sb__xmin_check(bus);
    return rc;
}

static int claim_full(sb_bus *bus, sb_conn *c, sb_claim_cursor *cur,
                      const char *queue, int max, int64_t lease_ms,
                      int *pending, sb_msg ***out, size_t *n_out, sb_error *err)
{
    int64_t now = sb__mono_us();
    size_t before = *n_out;
    cur->full_at_us = now;
    int rc = claim_run(bus, c, queue, max, lease_ms, 0, -1, cur->prioritized,
                       &cur->floor_us, out, n_out, err);
    return full_done(bus, c, cur, queue, pending, *n_out - before, now, rc,
                     err);
}

int sb__claim_next_on(sb_bus *bus, sb_conn *c, sb_claim_cursor *cur,
                      const char *queue, int max, int64_t lease_ms,
                      int *pending, sb_msg ***out, size_t *n_out, sb_error *err)
{
    int64_t now = sb__mono_us();
    if (use_bound(bus, cur, now)) {
        size_t before = *n_out;
        int64_t from = cur->floor_us - SB_CLAIM_SLACK_US;
        int rc = claim_run(bus, c, queue, max, lease_ms, 0, from > 0 ? from : 0,
                           0, &cur->floor_us, out, n_out, err);
        if (rc != SB_OK || *n_out > before ||
            !full_after_empty(cur, pending, now))
            return rc;
    }
    return claim_full(bus, c, cur, queue, max, lease_ms, pending, out, n_out,
                      err);
}

void sb__claim_prepare(sb_bus *bus, sb_claim_cursor *cur, const char *queue,
                       int max, int64_t lease_ms, sb_claim_call *cc,
                       sb_call *call)
{
    int64_t now = sb__mono_us();
    cc->full = !use_bound(bus, cur, now);
    int64_t from = cur->floor_us - SB_CLAIM_SLACK_US;
    if (cc->full)
        cur->full_at_us = now;
    claim_params(bus, queue, max, lease_ms, 0,
                 cc->full ? -1 : (from > 0 ? from : 0), cur->prioritized, cc,
                 call);
}

int sb__claim_finish(sb_bus *bus, sb_conn *c, sb_claim_cursor *cur,
                     const char *queue, int max, int64_t lease_ms,
                     sb_claim_call *cc, int rc, int *pending, sb_msg ***out,
                     size_t *n_out, sb_error *err)
{
    size_t before = *n_out;
    if (rc == SB_OK)
        rc = take_rows(cc->rows, cc->prio, &cur->floor_us, out, n_out, err);
    sb__rows_free(cc->rows);
    cc->rows = NULL;
    sb__count_claim(bus, cc->t0, rc);
    if (rc != SB_OK)
        return rc;
    size_t got = *n_out - before;
    if (cc->full)
        return full_done(bus, c, cur, queue, pending, got, cc->t0, rc, err);
    if (got > 0 || !full_after_empty(cur, pending, sb__mono_us()))
        return SB_OK;
    return claim_full(bus, c, cur, queue, max, lease_ms, pending, out, n_out,
                      err);
}

typedef struct claim_ctx {
    sb_bus *bus;
    const char *queue;
    int max;
    int64_t lease_ms;
    sb_msg **msgs;
    size_t n;
    size_t expired; /* dead-lettered instead (T40), after msgs[n] */
} claim_ctx;

/* T40: the claimed messages past their expiry dead-lettered in the
 * claim's transaction and moved behind the others, which keep their
 * order (counted after the commit). */
static int drop_expired(claim_ctx *x, sb_conn *c, int64_t ttl_ms, sb_error *err)
{
    size_t kept = 0, n = x->n;
    int64_t offset = 0;
    int known = 0;
    for (size_t i = 0; i < n; i++) {
        sb_msg *m = x->msgs[i];
        /* The database's clock is read only when an expiry is in play. */
        if (!known && (ttl_ms > 0 || m->expires_at_us != 0)) {
            int rc = sb__clock_offset_on(x->bus, c, &offset, err);
            if (rc != SB_OK)
                return rc;
            known = 1;
        }
        if (known && sb__msg_expired(m, ttl_ms, offset)) {
            int rc = sb__expire_claimed_on(x->bus, c, m, err);
            if (rc != SB_OK)
                return rc;
            continue;
        }
        x->msgs[i] = x->msgs[kept];
        x->msgs[kept++] = m;
    }
    x->expired = n - kept;
    x->n = kept;
    return SB_OK;
}

static int claim_tx(sb_conn *c, void *vctx, sb_error *err)
{
    claim_ctx *x = vctx;
    /* A retried transaction starts from nothing claimed. */
    sb_msg_free_array(x->msgs, x->n + x->expired);
    x->msgs = NULL;
    x->n = x->expired = 0;
    /* The queue's settings as this transaction sees them (T34-T36). */
    sb_settings st;
    int rc = sb__settings_get_on(x->bus, c, x->queue, &st, err);
    if (rc != SB_OK || st.paused)
        return rc;
    /* T36: a limited queue's claim takes what its limits leave. */
    int max = x->max, limited = st.max_running > 0 || st.rate_limit > 0;
    sb_limit_grant g;
    if (limited) {
        rc = sb__limit_begin(x->bus, c, x->queue, max, &g, err);
        if (rc != SB_OK || g.allowed == 0)
            return rc;
        max = g.allowed;
    }
    int64_t newest = 0;
    rc = claim_run(x->bus, c, x->queue, max, x->lease_ms, 0, -1, st.prioritized,
                   &newest, &x->msgs, &x->n, err);
    if (rc == SB_OK && limited)
        rc = sb__limit_end(x->bus, c, x->queue, &g, x->n, err);
    return rc == SB_OK ? drop_expired(x, c, st.ttl_ms, err) : rc;
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
    claim_ctx x = {bus, queue, max, lease_ms, NULL, 0, 0};
    rc = sb__db_run_tx(bus->pool, NULL, claim_tx, &x, err);
    for (size_t i = 0; i < x.expired; i++) {
        sb__count_msg(bus, x.msgs[x.n + i], SB_COUNT_DEAD, rc);
        sb_msg_free(x.msgs[x.n + i]);
    }
    if (rc != SB_OK) {
        sb_msg_free_array(x.msgs, x.n);
        return rc;
    }
    *out = x.msgs;
    *n_out = x.n;
    return SB_OK;
}
