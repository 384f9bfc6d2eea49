/* dispatch.c - delivering stored replies to local waiters: the delivery
 * claim and watermark (C9, C13), the sweep (C14, C15), heartbeats (C17),
 * pruning (C18) and handing replies to recovery (C21). */
#include "channel/channel.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TOLERANCE_US 1000000 /* C13: created_at >= registration - 1 s */

int sb__channel_next_seq(sb_channel *ch, sb_conn *c, int64_t *seq,
                         sb_error *err)
{
    sb_rows *rows = NULL;
    int rc = sb__query(c, CH_SQL(ch, CH_SEQ_NEXT), NULL, 0, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 1)
        *seq = sb__rows_int(rows, 0, 0);
    else if (rc == SB_OK)
        rc = sb__err(err, SB_SCHEMA_MISMATCH, "channel_ack_seq",
                     "the ack sequence row is missing");
    sb__rows_free(rows);
    return rc;
}

static int seen(const sb_waiter *w, const char *id)
{
    for (size_t i = 0; i < w->n_seen; i++)
        if (memcmp(w->seen[i], id, 37) == 0)
            return 1;
    return 0;
}

static int mark_seen(sb_waiter *w, const char *id)
{
    if (w->n_seen == w->cap_seen) {
        size_t cap = w->cap_seen ? w->cap_seen * 2 : 8;
        char(*n)[37] = sb__realloc(w->seen, cap * sizeof *n);
        if (n == NULL)
            return SB_NOMEM;
        w->seen = n;
        w->cap_seen = cap;
    }
    memcpy(w->seen[w->n_seen++], id, 37);
    return SB_OK;
}

typedef struct claim_ctx {
    sb_channel *ch;
    const char *id;
    int won;
    int64_t acked_at, acked_seq;
} claim_ctx;

/* The delivery claim: sets acked_at (and acked_seq on the null -> acked
 * transition only), gated on recovery_claimed alone so every process with
 * a waiter can win it (fan-out, C13). */
static int claim_tx(sb_conn *c, void *vctx, sb_error *err)
{
    claim_ctx *x = vctx;
    sb_channel *ch = x->ch;
    int64_t seq = 0;
    int rc = SB_OK;
    if (CH_SQL(ch, CH_SEQ_NEXT) != NULL)
        rc = sb__channel_next_seq(ch, c, &seq, err);
    sb_value p[3] = {sb__v_text(x->id), sb__v_int(sb__bus_now_us(ch->bus)),
                     sb__v_int(seq)};
    sb_rows *rows = NULL;
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, CH_CLAIM), p, 3, &rows, NULL, err);
    x->won = rc == SB_OK && rows->nrows == 1;
    if (x->won) {
        x->acked_at = sb__rows_int(rows, 0, 0);
        x->acked_seq = sb__rows_int(rows, 0, 1);
    }
    sb__rows_free(rows);
    return rc;
}

/* History (C9): acknowledged strictly before this waiter registered. */
static int is_history(const sb_waiter *w, int64_t acked_at, int64_t seq)
{
    if (acked_at < w->started_at_us)
        return 1;
    return acked_at == w->started_at_us && seq < w->started_seq;
}

int sb__channel_deliver(sb_channel *ch, const sb_reply *r)
{
    enum { MAX_AT_ONCE = 256 };
    sb_waiter *ws[MAX_AT_ONCE];
    int n = 0;
    pthread_mutex_lock(&ch->mu);
    for (sb_waiter *w = ch->waiters; w && n < MAX_AT_ONCE; w = w->next) {
        /* Byte-exact, whatever the column's collation did (C7, trap 22). */
        if (w->ended || strcmp(w->corr, r->correlation_id) != 0 ||
            seen(w, r->id) ||
            r->created_at_us < w->started_at_us - TOLERANCE_US)
            continue;
        if (mark_seen(w, r->id) != SB_OK)
            continue; /* out of memory: the next sweep tries again */
        w->refs++;
        ws[n++] = w;
    }
    pthread_mutex_unlock(&ch->mu);
    if (n == 0)
        return 0;
    claim_ctx x = {ch, r->id, 0, 0, 0};
    sb_error err;
    int rc = sb__db_run_tx(ch->bus->pool, NULL, claim_tx, &x, &err);
    int delivered = 0;
    for (int i = 0; i < n; i++) {
        sb_waiter *w = ws[i];
        if (rc != SB_OK || !x.won || is_history(w, x.acked_at, x.acked_seq)) {
            if (rc != SB_OK) {
                /* Not delivered: let a later sweep try again. */
                pthread_mutex_lock(&ch->mu);
                if (w->n_seen > 0)
                    w->n_seen--;
                pthread_mutex_unlock(&ch->mu);
            }
            sb__waiter_release(w);
            continue;
        }
        pthread_mutex_lock(&ch->mu);
        while (!w->ended && w->delivering)
            pthread_cond_wait(&w->cv, &ch->mu);
        if (w->ended) {
            pthread_mutex_unlock(&ch->mu);
            sb__waiter_release(w);
            continue;
        }
        w->delivering = 1;
        pthread_mutex_unlock(&ch->mu);
        /* C2, C3: an error reply ends the wait whatever the predicate. */
        int terminal = r->is_error || w->until == NULL ||
                       w->until(r, w->until_user) != 0;
        int mine = 0;
        pthread_mutex_lock(&ch->mu);
        w->delivering = 0;
        if (terminal) {
            mine = sb__waiter_finish_locked(
                w, r->is_error ? SB_REPLY_ERROR : SB_OK, r);
        } else if (!w->ended) {
            sb_reply *copy = sb__reply_copy(r);
            if (copy != NULL) {
                if (w->progress_tail)
                    w->progress_tail->next = copy;
                else
                    w->progress_head = copy;
                w->progress_tail = copy;
                uint64_t one = 1;
                if (write(w->efd, &one, sizeof one) < 0) {
                    /* saturated: already readable */
                }
            }
        }
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&ch->mu);
        if (mine)
            sb__waiter_cleanup(w);
        delivered++;
        sb__waiter_release(w);
    }
    if (rc != SB_OK)
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "delivery claim of reply %s failed: %s", r->id, err.message);
    return delivered;
}

/* Distinct correlation ids of live waiters with the earliest watermark of
 * each, copied so the sweep runs without the lock. */
typedef struct live_id {
    char *corr;
    int64_t from_us;
} live_id;

static int snapshot_ids(sb_channel *ch, live_id **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    pthread_mutex_lock(&ch->mu);
    size_t cap = 0;
    for (sb_waiter *w = ch->waiters; w; w = w->next)
        cap++;
    live_id *ids = cap ? sb__calloc(cap, sizeof *ids) : NULL;
    size_t n = 0;
    for (sb_waiter *w = ch->waiters; ids && w; w = w->next) {
        if (w->ended)
            continue;
        size_t i = 0;
        while (i < n && strcmp(ids[i].corr, w->corr) != 0)
            i++;
        int64_t from = w->started_at_us - TOLERANCE_US;
        if (i < n) {
            if (from < ids[i].from_us)
                ids[i].from_us = from;
            continue;
        }
        ids[n].corr = sb__strdup(w->corr);
        ids[n].from_us = from;
        if (ids[n].corr != NULL)
            n++;
    }
    pthread_mutex_unlock(&ch->mu);
    *out = ids;
    *n_out = n;
    return cap && ids == NULL ? SB_NOMEM : SB_OK;
}

/* Read every reply of one id from `from_us` in keyset pages to exhaustion
 * (C15: a terminal reply is never stranded behind progress replies). */
static void scan_id(sb_channel *ch, sb_conn *c, const live_id *id)
{
    int64_t after_us = id->from_us;
    char after_id[37] = "00000000-0000-0000-0000-000000000000";
    for (;;) {
        sb_value p[5] = {sb__v_text(id->corr), sb__v_int(after_us),
                         sb__v_text(after_id),
                         sb__v_int(sb__bus_now_us(ch->bus)),
                         sb__v_int(SB_SCAN_PAGE)};
        sb_rows *rows = NULL;
        sb_error err;
        if (sb__query(c, CH_SQL(ch, CH_SCAN), p, 5, &rows, NULL, &err) !=
            SB_OK) {
            sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                    "sweep failed: %s", err.message);
            return;
        }
        size_t n = rows->nrows;
        for (size_t r = 0; r < n; r++) {
            const char *corr = sb__rows_text(rows, r, 1);
            sb_reply *reply = NULL;
            if (corr != NULL && strcmp(corr, id->corr) == 0)
                reply = sb__reply_from_row(rows, r);
            if (reply != NULL) {
                after_us = reply->created_at_us;
                memcpy(after_id, reply->id, 37);
                sb__channel_deliver(ch, reply);
                sb_reply_free(reply);
            }
        }
        sb__rows_free(rows);
        if (n < SB_SCAN_PAGE)
            return;
    }
}

void sb__channel_sweep(sb_channel *ch)
{
    live_id *ids = NULL;
    size_t n = 0;
    snapshot_ids(ch, &ids, &n);
    if (n > 0) {
        sb_conn *c = NULL;
        sb_error err;
        if (sb__pool_acquire(ch->bus->pool, 5000, &c, &err) == SB_OK) {
            for (size_t i = 0; i < n; i++)
                scan_id(ch, c, &ids[i]);
            sb__pool_release(ch->bus->pool, c);
        }
    }
    for (size_t i = 0; i < n; i++)
        sb__free(ids[i].corr);
    sb__free(ids);
}

typedef struct beat_ctx {
    sb_channel *ch;
    sb_waiter **ws;
    size_t n;
} beat_ctx;

static int beat_tx(sb_conn *c, void *vctx, sb_error *err)
{
    beat_ctx *x = vctx;
    int rc = SB_OK;
    for (size_t i = 0; rc == SB_OK && i < x->n; i++) {
        sb_waiter *w = x->ws[i];
        sb_value s[5] = {sb__v_text(w->corr), sb__v_text(w->reg_id),
                         sb__v_text(x->ch->instance),
                         sb__v_int(x->ch->o.heartbeat_timeout_ms),
                         sb__v_int(sb__bus_now_us(x->ch->bus))};
        rc = sb__query(c, CH_SQL(x->ch, CH_SUBSCRIBE), s, 5, NULL, NULL, err);
    }
    return rc;
}

void sb__channel_heartbeat(sb_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    size_t cap = 0;
    for (sb_waiter *w = ch->waiters; w; w = w->next)
        cap++;
    sb_waiter **ws = cap ? sb__calloc(cap, sizeof *ws) : NULL;
    size_t n = 0;
    for (sb_waiter *w = ch->waiters; ws && w; w = w->next) {
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
    int rc = sb__query(c, CH_SQL(ch, CH_PRUNE_MESSAGES), &now, 1, NULL, NULL,
                       err);
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, CH_PRUNE_SUBSCRIBERS), &now, 1, NULL,
                       NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, CH_PRUNE_RECOVERY), &now, 1, NULL, NULL,
                       err);
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

/* A recovery job's id: the same for the same reply and registration, so a
 * repeated claim can never enqueue a job twice (publish is idempotent). */
static void job_id(const char *reply_id, const char *reg_id, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 36; i++) {
        out[i] = reply_id[i];
        if (reply_id[i] == '-')
            continue;
        h = (h ^ (unsigned char)reg_id[i]) * 1099511628211ULL;
        int a = reply_id[i] <= '9' ? reply_id[i] - '0' : reply_id[i] - 'a' + 10;
        out[i] = hex[(a ^ (int)(h >> 29)) & 15];
    }
    out[14] = '8'; /* version 8: custom, derived */
    out[19] = hex[8 | ((unsigned char)out[19] & 3)];
    out[36] = '\0';
}

int sb__channel_enqueue_recovery(sb_channel *ch, sb_conn *c, const char *corr,
                                 const char *reply_id, sb_error *err)
{
    sb_value p[2] = {sb__v_text(corr), sb__v_int(sb__bus_now_us(ch->bus))};
    sb_rows *rows = NULL;
    int rc = sb__query(c, CH_SQL(ch, CH_REGISTRATIONS), p, 2, &rows, NULL,
                       err);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        char reg[37];
        const char *reg_text = sb__rows_text(rows, r, 0);
        const char *handler = sb__rows_text(rows, r, 1);
        if (reg_text == NULL || sb__uuid_normalize(reg_text, reg) != SB_OK)
            continue;
        const char *kv[] = {"reply_id", reply_id, "correlation_id", corr,
                            "registration_id", reg, "handler", handler,
                            NULL};
        const char *hkv[] = {"sb-correlation-id", corr, NULL};
        char *payload = NULL, *headers = NULL;
        rc = sb__headers_merge(NULL, kv, &payload, err);
        if (rc == SB_OK)
            rc = sb__headers_merge(NULL, hkv, &headers, err);
        char ids[1][37];
        job_id(reply_id, reg, ids[0]);
        sb_outgoing o = {ids[0], payload, payload ? strlen(payload) : 0,
                         headers, 0};
        int immediate = 0;
        if (rc == SB_OK)
            rc = sb__publish_on(ch->bus, c, SB_RECOVERY_QUEUE, &o, 1, ids,
                                &immediate, err);
        /* C22: the watchdog and `recovery list` see the dispatch. */
        sb_value d[3] = {sb__v_text(corr), sb__v_text(reg_text), p[1]};
        if (rc == SB_OK)
            rc = sb__query(c, CH_SQL(ch, CH_MARK_DISPATCHED), d, 3, NULL,
                           NULL, err);
        sb__free(payload);
        sb__free(headers);
    }
    sb__rows_free(rows);
    return rc;
}
