/* upkeep.c - the channel's periodic housekeeping: one heartbeat round for
 * every live waiter of the process, batched (C17), and bounded pruning of
 * expired rows (C18). */
#include "channel/channel.h"

#include <string.h>

/* A JSON array of {"c": correlation id, "r": registration id}. */
static int batch_json(sb_waiter *const *ws, size_t n, sb_buf *b)
{
    sb__buf_reset(b);
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        sb__buf_puts(b, i ? ",{\"c\":" : "{\"c\":");
        sb__buf_json_str(b, ws[i]->corr);
        sb__buf_printf(b, ",\"r\":\"%s\"}", ws[i]->reg_id);
    }
    sb__buf_puts(b, "]");
    return b->failed;
}

typedef struct beat_ctx {
    sb_channel *ch;
    sb_waiter **ws;
    size_t n;
} beat_ctx;

static int beat_tx(sb_conn *c, void *vctx, sb_error *err)
{
    beat_ctx *x = vctx;
    sb_channel *ch = x->ch;
    sb_buf b;
    sb__buf_init(&b, (size_t)1 << 20); /* 500 ids of <= 800 escaped bytes */
    int rc = SB_OK;
    for (size_t at = 0; rc == SB_OK && at < x->n; at += SB_HEARTBEAT_BATCH) {
        size_t k =
            x->n - at < SB_HEARTBEAT_BATCH ? x->n - at : SB_HEARTBEAT_BATCH;
        rc = batch_json(x->ws + at, k, &b);
        if (rc != SB_OK) {
            sb__err(err, rc, NULL, "out of memory");
            break;
        }
        sb_value p[4] = {sb__v_text(b.data), sb__v_text(ch->instance),
                         sb__v_int(ch->o.heartbeat_timeout_ms),
                         sb__v_int(sb__bus_now_us(ch->bus))};
        rc = sb__query(c, CH_SQL(ch, subscribe_many), p, 4, NULL, NULL, err);
    }
    sb__buf_free(&b);
    return rc;
}

void sb__channel_heartbeat(sb_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    sb_waiter **ws =
        ch->n_waiters ? sb__calloc(ch->n_waiters, sizeof *ws) : NULL;
    size_t n = 0;
    for (size_t b = 0; ws && b < ch->n_buckets; b++)
        for (sb_live_id *id = ch->buckets[b]; id; id = id->hnext)
            for (sb_waiter *w = id->waiters; w; w = w->id_next) {
                w->refs++;
                ws[n++] = w;
            }
    pthread_mutex_unlock(&ch->mu);
    beat_ctx x = {ch, ws, n};
    sb_error err;
    if (n > 0 && sb__db_run_tx(ch->bus->pool, NULL, beat_tx, &x, &err) != SB_OK)
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "heartbeat failed (retried next round): %s", err.message);
    for (size_t i = 0; i < n; i++) {
        /* A waiter that ended during the round may have had its row
         * re-created by the upsert: delete it again (C17, trap 17). */
        pthread_mutex_lock(&ch->mu);
        int ended = ws[i]->ended;
        pthread_mutex_unlock(&ch->mu);
        if (ended)
            sb__waiter_delete_rows(ws[i]);
        sb__waiter_release(ws[i]);
    }
    sb__free(ws);
}

static int prune_tx(sb_conn *c, void *vctx, sb_error *err)
{
    sb_channel *ch = vctx;
    sb_value now = sb__v_int(sb__bus_now_us(ch->bus));
    int rc = sb__query(c, CH_SQL(ch, prune_messages), &now, 1, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, prune_subscribers), &now, 1, NULL, NULL,
                       err);
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, prune_recovery), &now, 1, NULL, NULL, err);
    return rc;
}

void sb__channel_prune(sb_channel *ch)
{
    sb_error err;
    /* Bounded (1,000 rows a table), logged, never failing anything (C18). */
    if (sb__db_run_tx(ch->bus->pool, NULL, prune_tx, ch, &err) != SB_OK)
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "pruning failed (retried later): %s", err.message);
}
