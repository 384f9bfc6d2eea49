/* expire.c - expiry of waiting messages (T40): a message's own expiry
 * (sb_outgoing_ex.expires_in_ms) or its queue's time to live, checked by
 * every claim before a handler runs and by the sweep (sb_queue_expire)
 * for messages no consumer claims. An expired message is dead-lettered
 * with reason "expired", never dropped. The sweep also deletes the
 * unique keys' windows that have ended (T38). */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

/* The rows one sweep transaction dead-letters at most. */
#define SWEEP_BATCH 500

int sb__clock_offset_on(sb_bus *bus, sb_conn *c, int64_t *offset_us,
                        sb_error *err)
{
    *offset_us = 0;
    if (bus->sql->clock_now == NULL)
        return SB_OK;
    sb_rows *rows = NULL;
    int64_t before = sb__wall_us();
    int rc = sb__query(c, bus->sql->clock_now, NULL, 0, &rows, NULL, err);
    int64_t after = sb__wall_us();
    if (rc == SB_OK && rows->nrows > 0)
        *offset_us = sb__rows_int(rows, 0, 0) - (before + (after - before) / 2);
    sb__rows_free(rows);
    return rc;
}

int sb__msg_expired(const sb_msg *m, int64_t ttl_ms, int64_t clock_offset_us)
{
    int64_t due = m->expires_at_us;
    if (ttl_ms > 0) {
        int64_t by_ttl = m->created_at_us + ttl_ms * 1000;
        if (due == 0 || by_ttl < due)
            due = by_ttl;
    }
    if (due == 0)
        return 0;
    return due <= sb__wall_us() + clock_offset_us;
}

static sb_failure expired_failure(const char *why)
{
    sb_failure f = {sizeof f, "expired", "expired", why, NULL, NULL};
    return f;
}

int sb__expire_claimed_on(sb_bus *bus, sb_conn *c, const sb_msg *m,
                          sb_error *err)
{
    sb_failure f = expired_failure("its time to live passed before a "
                                   "handler ran it");
    return sb__dead_letter_on(bus, c, m, &f, 1, err);
}

typedef struct sweep_ctx {
    sb_bus *bus;
    const char *sql;
    sb_value p[4];
    size_t np;
    const char *why;
    sb_msg **msgs; /* dead-lettered by the transaction, counted after */
    size_t n;
} sweep_ctx;

static int sweep_tx(sb_conn *c, void *vctx, sb_error *err)
{
    sweep_ctx *x = vctx;
    sb_msg_free_array(x->msgs, x->n);
    x->msgs = NULL;
    x->n = 0;
    sb_rows *rows = NULL;
    int rc = sb__query(c, x->sql, x->p, x->np, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows > 0) {
        x->msgs = sb__calloc(rows->nrows, sizeof *x->msgs);
        if (x->msgs == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        rc = sb__msg_from_row(rows, r, &x->msgs[x->n]);
        if (rc != SB_OK) {
            rc = sb__err(err, rc, NULL, "could not read an expired row");
            break;
        }
        sb_failure f = expired_failure(x->why);
        /* Unfenced: the row is locked and no lease holds it. */
        rc = sb__dead_letter_on(x->bus, c, x->msgs[x->n++], &f, 0, err);
    }
    sb__rows_free(rows);
    return rc;
}

/* Sweep batches of `x`'s statement until it finds fewer than a batch or
 * `*left` is spent; the dead letters counted into *done. */
static int sweep(sweep_ctx *x, size_t *left, size_t *done, sb_error *err)
{
    int rc = SB_OK;
    while (rc == SB_OK && *left > 0) {
        size_t batch = *left < SWEEP_BATCH ? *left : SWEEP_BATCH;
        x->p[0] = sb__v_int(sb__bus_now_us(x->bus));
        x->p[1] = sb__v_int((int64_t)batch);
        rc = sb__db_run_tx(x->bus->pool, NULL, sweep_tx, x, err);
        size_t got = rc == SB_OK ? x->n : 0;
        for (size_t i = 0; i < x->n; i++)
            sb__count_msg(x->bus, x->msgs[i], SB_COUNT_DEAD, rc);
        sb_msg_free_array(x->msgs, x->n);
        x->msgs = NULL;
        x->n = 0;
        *left -= got;
        *done += got;
        if (got < batch)
            break;
    }
    return rc;
}

typedef struct ttl_list {
    char (*queue)[201];
    int64_t *ttl_ms;
    size_t n, cap;
} ttl_list;

static int note_ttl(const char *queue, const sb_settings *s, void *user,
                    sb_error *err)
{
    ttl_list *l = user;
    if (s->ttl_ms <= 0)
        return SB_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char(*q)[201] = sb__realloc(l->queue, cap * sizeof *q);
        if (q != NULL)
            l->queue = q;
        int64_t *t = sb__realloc(l->ttl_ms, cap * sizeof *t);
        if (t != NULL)
            l->ttl_ms = t;
        if (q == NULL || t == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        l->cap = cap;
    }
    sb__strlcpy(l->queue[l->n], queue, sizeof l->queue[l->n]);
    l->ttl_ms[l->n++] = s->ttl_ms;
    return SB_OK;
}

typedef struct list_ctx {
    sb_bus *bus;
    ttl_list *list;
} list_ctx;

static int list_tx(sb_conn *c, void *vctx, sb_error *err)
{
    list_ctx *x = vctx;
    x->list->n = 0;
    return sb__settings_list_on(x->bus, c, note_ttl, x->list, err);
}

int sb_queue_expire(sb_bus *bus, size_t max, size_t *expired, sb_error *err)
{
    sb_error_clear(err);
    if (expired != NULL)
        *expired = 0;
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    if (max < 1 || max > SB_EXPIRE_MAX)
        return sb__err(err, SB_INVALID, "max", "max must be 1 to %d (got %zu)",
                       SB_EXPIRE_MAX, max);
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    size_t left = max, done = 0;
    sweep_ctx x = {.bus = bus,
                   .sql = bus->sql->expire_due,
                   .np = 2,
                   .why = "its expiry passed before it was delivered"};
    rc = sweep(&x, &left, &done, err);
    ttl_list l = {0};
    if (rc == SB_OK && left > 0) {
        list_ctx lx = {bus, &l};
        rc = sb__db_run_tx(bus->pool, NULL, list_tx, &lx, err);
    }
    for (size_t i = 0; rc == SB_OK && i < l.n && left > 0; i++) {
        char why[128];
        snprintf(why, sizeof why,
                 "its queue's time to live (%lld ms) passed before it was "
                 "delivered",
                 (long long)l.ttl_ms[i]);
        sweep_ctx q = {.bus = bus,
                       .sql = bus->sql->expire_ttl,
                       .p = {sb__v_null(), sb__v_null(), sb__v_text(l.queue[i]),
                             sb__v_int(l.ttl_ms[i])},
                       .np = 4,
                       .why = why};
        rc = sweep(&q, &left, &done, err);
    }
    sb__free(l.queue);
    sb__free(l.ttl_ms);
    /* T38: the windows of unique keys that have ended go with them. */
    if (rc == SB_OK)
        rc = sb__unique_prune(bus, SWEEP_BATCH, err);
    if (expired != NULL)
        *expired = done;
    return rc;
}
