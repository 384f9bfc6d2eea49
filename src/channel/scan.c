/* scan.c - finding replies in the database for local waiters (C14, C15).
 * Hints (a NOTIFY naming an id, a new waiter, a drained queue) queue a
 * targeted scan of one id in a bounded FIFO whose overflow asks for a full
 * sweep; the loop thread also sweeps every id on an absolute schedule.
 * Each id reads with a keyset cursor over (created_at, id) in pages of 64
 * to exhaustion, starting a lookback window before its cursor so rows
 * whose insert committed late are still seen; a reconciliation pass and a
 * new waiter re-read from the waiters' watermark. */
#include "channel/channel.h"

#include <string.h>

#define ZERO_UUID "00000000-0000-0000-0000-000000000000"

void sb__scan_request(sb_channel *ch, sb_live_id *id)
{
    if (id->scan_queued)
        return; /* coalesced */
    if (ch->n_scan >= SB_SCAN_QUEUE_MAX) {
        ch->full_requested = 1;
    } else {
        id->scan_queued = 1;
        id->scan_next = NULL;
        if (ch->scan_tail)
            ch->scan_tail->scan_next = id;
        else
            ch->scan_head = id;
        ch->scan_tail = id;
        ch->n_scan++;
    }
    pthread_cond_broadcast(&ch->loop_cv);
}

void sb__channel_hint(sb_channel *ch, const char *corr)
{
    pthread_mutex_lock(&ch->mu);
    sb_live_id *id = sb__ids_find(ch, corr);
    if (id != NULL)
        sb__scan_request(ch, id);
    pthread_mutex_unlock(&ch->mu);
}

void sb__channel_request_full(sb_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->full_requested = 1;
    pthread_cond_broadcast(&ch->loop_cv);
    pthread_mutex_unlock(&ch->mu);
}

static int64_t lookback_us(const sb_channel *ch)
{
    int64_t half = ch->o.confirmation_timeout_ms * 500;
    return half < 2000000 ? half : 2000000;
}

static int after(int64_t a_us, const char *a_id, int64_t b_us,
                 const char *b_id)
{
    return a_us > b_us || (a_us == b_us && strcmp(a_id, b_id) > 0);
}

/* Scan one pinned id to exhaustion, or until its queue is full. */
static void scan_id(sb_channel *ch, sb_conn *c, sb_live_id *id)
{
    int64_t after_us;
    char after_id[37] = ZERO_UUID;
    pthread_mutex_lock(&ch->mu);
    if (id->reread || id->cursor_id[0] == '\0') {
        id->reread = 0;
        after_us = id->from_us;
    } else {
        after_us = id->cursor_us - lookback_us(ch);
        if (id->from_us > after_us)
            after_us = id->from_us;
    }
    int live = id->waiters != NULL;
    pthread_mutex_unlock(&ch->mu);
    while (live) {
        sb_value p[5] = {sb__v_text(id->corr), sb__v_int(after_us),
                         sb__v_text(after_id),
                         sb__v_int(sb__bus_now_us(ch->bus)),
                         sb__v_int(SB_SCAN_PAGE)};
        sb_rows *rows = NULL;
        sb_error err;
        if (sb__query(c, CH_SQL(ch, CH_SCAN), p, 5, &rows, NULL, &err) !=
            SB_OK) {
            sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                    "scan failed (the next sweep retries): %s", err.message);
            return;
        }
        size_t n = rows->nrows;
        int full = 0;
        for (size_t r = 0; r < n && !full; r++) {
            const char *corr = sb__rows_text(rows, r, 1);
            /* Byte-exact, whatever the column's collation did (C7). */
            if (corr == NULL || strcmp(corr, id->corr) != 0)
                continue;
            sb_reply *reply = sb__reply_from_row(rows, r);
            if (reply == NULL)
                break;
            pthread_mutex_lock(&ch->mu);
            full = !sb__exec_admit(ch, id, reply);
            if (!full) {
                if (id->cursor_id[0] == '\0' ||
                    after(reply->created_at_us, reply->id, id->cursor_us,
                          id->cursor_id)) {
                    id->cursor_us = reply->created_at_us;
                    memcpy(id->cursor_id, reply->id, 37);
                }
                after_us = reply->created_at_us;
                memcpy(after_id, reply->id, 37);
            }
            live = id->waiters != NULL;
            pthread_mutex_unlock(&ch->mu);
            sb_reply_free(reply);
        }
        sb__rows_free(rows);
        if (full || n < SB_SCAN_PAGE)
            return;
    }
}

void sb__channel_run_scans(sb_channel *ch)
{
    sb_conn *c = NULL;
    sb_error err;
    if (sb__pool_acquire(ch->bus->pool, 5000, &c, &err) != SB_OK) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "scan postponed: %s", err.message);
        sb__channel_request_full(ch); /* nothing queued is forgotten */
        return;
    }
    pthread_mutex_lock(&ch->mu);
    while (ch->scan_head != NULL && !ch->stopping) {
        sb_live_id *id = ch->scan_head;
        ch->scan_head = id->scan_next;
        if (ch->scan_head == NULL)
            ch->scan_tail = NULL;
        ch->n_scan--;
        id->scan_queued = 0;
        id->pins++;
        pthread_mutex_unlock(&ch->mu);
        scan_id(ch, c, id);
        pthread_mutex_lock(&ch->mu);
        id->pins--;
        sb__ids_release(ch, id);
    }
    pthread_mutex_unlock(&ch->mu);
    sb__pool_release(ch->bus->pool, c);
}

void sb__channel_sweep(sb_channel *ch, int reconcile)
{
    sb_live_id **ids = NULL;
    size_t n = 0;
    pthread_mutex_lock(&ch->mu);
    int rc = sb__ids_pin_all(ch, &ids, &n);
    for (size_t i = 0; reconcile && i < n; i++)
        ids[i]->reread = 1;
    pthread_mutex_unlock(&ch->mu);
    if (rc != SB_OK) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "sweep postponed: out of memory");
        return;
    }
    if (n > 0) {
        sb_conn *c = NULL;
        sb_error err;
        if (sb__pool_acquire(ch->bus->pool, 5000, &c, &err) == SB_OK) {
            for (size_t i = 0; i < n; i++)
                scan_id(ch, c, ids[i]);
            sb__pool_release(ch->bus->pool, c);
        } else {
            sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                    "sweep postponed: %s", err.message);
        }
    }
    pthread_mutex_lock(&ch->mu);
    sb__ids_unpin_all(ch, ids, n);
    pthread_mutex_unlock(&ch->mu);
}
