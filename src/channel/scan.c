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

static int after(int64_t a_us, const char *a_id, int64_t b_us, const char *b_id)
{
    return a_us > b_us || (a_us == b_us && strcmp(a_id, b_id) > 0);
}

/* Admit a row read for `id` and move its cursor past it; 0 if its queue
 * is full (the cursor stays). Lock held. */
static int admit(sb_channel *ch, sb_live_id *id, const sb_reply *r)
{
    if (!sb__exec_admit(ch, id, r, 1))
        return 0;
    if (id->cursor_id[0] == '\0' ||
        after(r->created_at_us, r->id, id->cursor_us, id->cursor_id)) {
        id->cursor_us = r->created_at_us;
        memcpy(id->cursor_id, r->id, 37);
    }
    return 1;
}

/* Where a scan of `id` starts: its waiters' watermark when it must
 * re-read (clears the flag), else a lookback window before its cursor.
 * Lock held. */
static int64_t scan_start(sb_channel *ch, sb_live_id *id)
{
    if (id->reread || id->cursor_id[0] == '\0') {
        id->reread = 0;
        return id->from_us;
    }
    int64_t from = id->cursor_us - lookback_us(ch);
    return from > id->from_us ? from : id->from_us;
}

/* A scan pass of `id` read to the end: without a refusal, every row up to
 * now was admitted in order and the fast path may admit again. */
static void pass_done(sb_channel *ch, sb_live_id *id)
{
    pthread_mutex_lock(&ch->mu);
    if (!id->pass_refused)
        id->gap = 0;
    id->pass_refused = 0;
    pthread_mutex_unlock(&ch->mu);
}

/* Scan one pinned id to exhaustion, or until its queue is full. */
static void scan_id(sb_channel *ch, sb_conn *c, sb_live_id *id)
{
    char after_id[37] = ZERO_UUID;
    pthread_mutex_lock(&ch->mu);
    int64_t after_us = scan_start(ch, id);
    int live = id->waiters != NULL;
    id->pass_refused = 0;
    pthread_mutex_unlock(&ch->mu);
    while (live) {
        sb_value p[5] = {
            sb__v_text(id->corr), sb__v_int(after_us), sb__v_text(after_id),
            sb__v_int(sb__bus_now_us(ch->bus)), sb__v_int(SB_SCAN_PAGE)};
        sb_rows *rows = NULL;
        sb_error err;
        if (sb__query(c, CH_SQL(ch, scan), p, 5, &rows, NULL, &err) != SB_OK) {
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
            full = !admit(ch, id, reply);
            live = id->waiters != NULL;
            pthread_mutex_unlock(&ch->mu);
            if (!full) {
                after_us = reply->created_at_us;
                memcpy(after_id, reply->id, 37);
            }
            sb_reply_free(reply);
        }
        sb__rows_free(rows);
        if (full)
            return;
        if (n < SB_SCAN_PAGE)
            break;
    }
    pass_done(ch, id);
}

void sb__channel_run_scans(sb_channel *ch)
{
    sb_conn *c = NULL;
    sb_error err;
    if (sb__pool_acquire(ch->bus->pool, 5000, &c, &err) != SB_OK) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel", "scan postponed: %s",
                err.message);
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

/* Scan up to SB_SWEEP_BATCH pinned ids with one statement per page, from
 * the earliest of their starts: rows before an id's own start are dropped
 * at admission or already handled. An id whose queue fills keeps its
 * cursor and refuses further rows until it drains (executor.c). */
static void scan_batch(sb_channel *ch, sb_conn *c, sb_live_id **ids, size_t n,
                       sb_buf *b)
{
    sb__buf_reset(b);
    sb__buf_puts(b, "[");
    int64_t after_us = INT64_MAX;
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb__buf_puts(b, ",");
        sb__buf_json_str(b, ids[i]->corr);
        int64_t from = scan_start(ch, ids[i]);
        if (from < after_us)
            after_us = from;
        ids[i]->pass_refused = 0;
    }
    pthread_mutex_unlock(&ch->mu);
    sb__buf_puts(b, "]");
    if (b->failed) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "sweep postponed: out of memory");
        return;
    }
    char after_id[37] = ZERO_UUID;
    for (;;) {
        sb_value p[5] = {
            sb__v_text(b->data), sb__v_int(after_us), sb__v_text(after_id),
            sb__v_int(sb__bus_now_us(ch->bus)), sb__v_int(SB_SCAN_PAGE)};
        sb_rows *rows = NULL;
        sb_error err;
        if (sb__query(c, CH_SQL(ch, scan_many), p, 5, &rows, NULL, &err) !=
            SB_OK) {
            sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                    "sweep failed (retried next time): %s", err.message);
            return;
        }
        size_t got = rows->nrows;
        for (size_t r = 0; r < got; r++) {
            sb_reply *reply = sb__reply_from_row(rows, r);
            if (reply == NULL)
                continue;
            after_us = reply->created_at_us;
            memcpy(after_id, reply->id, 37);
            pthread_mutex_lock(&ch->mu);
            /* Byte-exact, whatever the column's collation did (C7). */
            sb_live_id *id = sb__ids_find(ch, reply->correlation_id);
            if (id != NULL)
                admit(ch, id, reply);
            pthread_mutex_unlock(&ch->mu);
            sb_reply_free(reply);
        }
        sb__rows_free(rows);
        if (got < SB_SCAN_PAGE)
            break;
    }
    for (size_t i = 0; i < n; i++)
        pass_done(ch, ids[i]);
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
    sb_conn *c = NULL;
    sb_error err;
    if (n > 0 && sb__pool_acquire(ch->bus->pool, 5000, &c, &err) != SB_OK)
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel", "sweep postponed: %s",
                err.message);
    if (c != NULL && reconcile) {
        /* Each id from its own watermark, to exhaustion. */
        for (size_t i = 0; i < n; i++)
            scan_id(ch, c, ids[i]);
    } else if (c != NULL) {
        sb_buf b;
        sb__buf_init(&b, (size_t)SB_SWEEP_BATCH * 810);
        for (size_t at = 0; at < n; at += SB_SWEEP_BATCH)
            scan_batch(ch, c, ids + at,
                       n - at < SB_SWEEP_BATCH ? n - at : SB_SWEEP_BATCH, &b);
        sb__buf_free(&b);
    }
    if (c != NULL)
        sb__pool_release(ch->bus->pool, c);
    pthread_mutex_lock(&ch->mu);
    sb__ids_unpin_all(ch, ids, n);
    pthread_mutex_unlock(&ch->mu);
}
