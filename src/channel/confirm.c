/* confirm.c - the background confirmer (C12 steps 4-5). A reply stored
 * for a live waiter gets confirmation_timeout_ms, on the monotonic clock,
 * for some waiter to claim it; then the recovery claim (`recovery_claimed
 * = true WHERE acked_at IS NULL`) decides, atomically, whether recovery
 * owns it. A reply that a waiter of this process still awaits is not
 * claimed while that waiter lives, however long its predicate or its
 * full queue holds the reply back: the waiter itself is the confirmation
 * (C12 step 3), and the entry waits another timeout. The responder is
 * never held. If this process dies first, the
 * orphan scan of any process claims replies that stayed unconfirmed for
 * twice its confirmation timeout, so every reply still ends in delivery or
 * recovery. */
#include "channel/channel.h"

#include <string.h>

#define DUE_BATCH 256

void sb__confirm_add(sb_channel *ch, const sb_reply *r)
{
    char *corr = sb__strdup(r->correlation_id);
    pthread_mutex_lock(&ch->mu);
    if (ch->pend_len == ch->pend_cap && ch->pend_cap < SB_CONFIRM_MAX &&
        corr != NULL) {
        size_t cap = ch->pend_cap ? ch->pend_cap * 2 : 64;
        sb_pending *n = sb__calloc(cap, sizeof *n);
        if (n != NULL) {
            for (size_t i = 0; i < ch->pend_len; i++)
                n[i] = ch->pend[(ch->pend_head + i) % ch->pend_cap];
            sb__free(ch->pend);
            ch->pend = n;
            ch->pend_cap = cap;
            ch->pend_head = 0;
        }
    }
    if (corr == NULL || ch->pend_len == ch->pend_cap) {
        pthread_mutex_unlock(&ch->mu);
        sb__free(corr);
        sb__log(&ch->bus->log, SB_LOG_DEBUG, "channel",
                "reply %s: confirmation left to the orphan scan", r->id);
        return;
    }
    sb_pending *p = &ch->pend[(ch->pend_head + ch->pend_len) % ch->pend_cap];
    memcpy(p->id, r->id, 37);
    p->corr = corr;
    p->created_us = r->created_at_us;
    p->due_us = sb__mono_us() + ch->o.confirmation_timeout_ms * 1000;
    if (ch->pend_len++ == 0)
        pthread_cond_broadcast(&ch->loop_cv);
    pthread_mutex_unlock(&ch->mu);
}

typedef struct due_ctx {
    sb_channel *ch;
    sb_pending *due;
    size_t n;
    const int *awaited; /* per entry: a live waiter here still awaits it */
    int *settled;       /* per entry: confirmed or claimed, drop it */
} due_ctx;

/* Due entries: the recovery claim, and recovery's jobs in the same
 * transaction (C21). An entry a live local waiter still awaits, and while
 * closing an entry not yet due, is dropped only once a waiter confirmed
 * it. */
static int due_tx(sb_conn *c, void *vctx, sb_error *err)
{
    due_ctx *x = vctx;
    sb_channel *ch = x->ch;
    int64_t now = sb__mono_us();
    int rc = SB_OK;
    for (size_t i = 0; rc == SB_OK && i < x->n; i++) {
        sb_value id = sb__v_text(x->due[i].id);
        x->settled[i] = 0;
        if (x->due[i].due_us > now || x->awaited[i]) {
            sb_rows *rows = NULL;
            rc = sb__query(c, CH_SQL(ch, acked), &id, 1, &rows, NULL, err);
            x->settled[i] =
                rc == SB_OK && (rows->nrows == 0 ||
                                sb__rows_at(rows, 0, 0)->type != SB_V_NULL);
            sb__rows_free(rows);
            continue;
        }
        int64_t won = 0;
        rc = sb__query(c, CH_SQL(ch, recover), &id, 1, NULL, &won, err);
        if (rc == SB_OK && won == 1)
            rc = sb__channel_enqueue_recovery(ch, c, x->due[i].corr,
                                              x->due[i].id, err);
        x->settled[i] = 1;
    }
    return rc;
}

int64_t sb__confirm_run(sb_channel *ch, int64_t now)
{
    sb_pending due[DUE_BATCH];
    int awaited[DUE_BATCH];
    int settled[DUE_BATCH];
    pthread_mutex_lock(&ch->mu);
    int draining = ch->draining;
    size_t n = 0;
    while (n < ch->pend_len && n < DUE_BATCH) {
        sb_pending *p = &ch->pend[(ch->pend_head + n) % ch->pend_cap];
        if (p->due_us > now && !draining)
            break;
        /* Not while closing: the waiters end with the channel. */
        awaited[n] = !draining && sb__ids_awaited(ch, p->corr, p->created_us);
        due[n++] = *p;
    }
    int64_t next =
        ch->pend_len > 0 ? ch->pend[ch->pend_head].due_us : INT64_MAX;
    pthread_mutex_unlock(&ch->mu);
    if (n == 0)
        return next;
    due_ctx x = {ch, due, n, awaited, settled};
    sb_error err;
    if (sb__db_run_tx(ch->bus->pool, NULL, due_tx, &x, &err) != SB_OK) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "confirmation failed (retried): %s", err.message);
        return now + 100000;
    }
    /* Entries are only taken from the head, by this thread: the first n
     * are still the ones read. Drop the settled prefix; rotate unsettled
     * ones to the back, an awaited one due again a timeout from now (due
     * times still ascend: every other entry was added before now). */
    pthread_mutex_lock(&ch->mu);
    int64_t again = sb__mono_us() + ch->o.confirmation_timeout_ms * 1000;
    for (size_t i = 0; i < n; i++) {
        sb_pending *p = &ch->pend[ch->pend_head];
        ch->pend_head = (ch->pend_head + 1) % ch->pend_cap;
        ch->pend_len--;
        if (settled[i]) {
            sb__free(p->corr);
            continue;
        }
        if (awaited[i])
            p->due_us = again;
        ch->pend[(ch->pend_head + ch->pend_len) % ch->pend_cap] = *p;
        ch->pend_len++;
    }
    next = ch->pend_len > 0 ? ch->pend[ch->pend_head].due_us : INT64_MAX;
    pthread_mutex_unlock(&ch->mu);
    return draining && next != INT64_MAX ? now + 10000 : next;
}

typedef struct orphan_ctx {
    sb_channel *ch;
    const char *backlog; /* JSON array: ids our live waiters hold back */
    size_t claimed;
} orphan_ctx;

static int orphans_tx(sb_conn *c, void *vctx, sb_error *err)
{
    orphan_ctx *x = vctx;
    sb_channel *ch = x->ch;
    sb_value p[4] = {sb__v_int(2 * ch->o.confirmation_timeout_ms),
                     sb__v_int(sb__bus_now_us(ch->bus)),
                     sb__v_int(SB_ORPHAN_BATCH), sb__v_text(x->backlog)};
    sb_rows *rows = NULL;
    int rc = sb__query(c, CH_SQL(ch, orphans), p, 4, &rows, NULL, err);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        char id[37];
        const char *corr = sb__rows_text(rows, r, 1);
        if (corr == NULL ||
            sb__uuid_normalize(sb__rows_text(rows, r, 0), id) != SB_OK)
            continue;
        rc = sb__channel_enqueue_recovery(ch, c, corr, id, err);
        x->claimed++;
    }
    sb__rows_free(rows);
    return rc;
}

/* Replies of ids whose live waiters here hold them back (a slow predicate,
 * a full queue) are left alone: those waiters claim them themselves, and
 * this process's confirmer recovers them if the waiters end first. */
void sb__confirm_orphans(sb_channel *ch)
{
    sb_buf b;
    sb__buf_init(&b, (size_t)16 << 20);
    pthread_mutex_lock(&ch->mu);
    int failed = sb__ids_backlog_json(ch, &b);
    pthread_mutex_unlock(&ch->mu);
    if (failed) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "orphan scan postponed: too many ids with a backlog");
        sb__buf_free(&b);
        return;
    }
    orphan_ctx x = {ch, b.data, 0};
    sb_error err;
    int rc = sb__db_run_tx(ch->bus->pool, NULL, orphans_tx, &x, &err);
    sb__buf_free(&b);
    if (rc != SB_OK)
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "orphan scan failed (retried later): %s", err.message);
    else if (x.claimed > 0)
        sb__log(&ch->bus->log, SB_LOG_INFO, "channel",
                "%zu unconfirmed replies of a stopped publisher handed to "
                "recovery",
                x.claimed);
}

void sb__confirm_free(sb_channel *ch)
{
    for (size_t i = 0; i < ch->pend_len; i++)
        sb__free(ch->pend[(ch->pend_head + i) % ch->pend_cap].corr);
    sb__free(ch->pend);
    ch->pend = NULL;
    ch->pend_cap = ch->pend_len = ch->pend_head = 0;
}
