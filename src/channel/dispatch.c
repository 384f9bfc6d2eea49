/* dispatch.c - delivering one stored reply to the local waiters of its
 * id: the delivery claim, the watermark (C9, C13), the `until` predicate
 * run serially per waiter (C2) and the outcome (C3, C4). */
#include "channel/channel.h"

#include <string.h>

#define TOLERANCE_US 1000000 /* C13: created_at >= registration - 1 s */

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
    const sb_reply *r;
    sb_waiter **ws;
    int n;
    int *cleaned; /* per waiter: its rows were deleted in the claim */
    int won;
    int64_t acked_at, acked_seq;
} claim_ctx;

/* History (C9): acknowledged strictly before this waiter registered. */
static int is_history(const sb_waiter *w, int64_t acked_at, int64_t seq)
{
    if (acked_at < w->started_at_us)
        return 1;
    return acked_at == w->started_at_us && seq < w->started_seq;
}

/* The delivery claim: sets acked_at (and acked_seq on the null -> acked
 * transition only), gated on recovery_claimed alone so every process with
 * a waiter can win it (fan-out, C13). A waiter this reply is sure to end
 * (no predicate, or an error reply) has its rows deleted in the same
 * transaction, recovery row first (C4): one commit instead of two. */
static int claim_tx(sb_conn *c, void *vctx, sb_error *err)
{
    claim_ctx *x = vctx;
    sb_channel *ch = x->ch;
    int64_t seq = 0;
    int rc = SB_OK;
    if (CH_SQL(ch, seq_next) != NULL)
        rc = sb__channel_next_seq(ch, c, &seq, err);
    sb_value p[3] = {sb__v_text(x->r->id), sb__v_int(sb__bus_now_us(ch->bus)),
                     sb__v_int(seq)};
    sb_rows *rows = NULL;
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, claim), p, 3, &rows, NULL, err);
    x->won = rc == SB_OK && rows->nrows == 1;
    if (x->won) {
        x->acked_at = sb__rows_int(rows, 0, 0);
        x->acked_seq = sb__rows_int(rows, 0, 1);
    }
    sb__rows_free(rows);
    for (int i = 0; i < x->n; i++) {
        sb_waiter *w = x->ws[i];
        x->cleaned[i] = 0;
        if (rc != SB_OK || !x->won || (w->until != NULL && !x->r->is_error) ||
            is_history(w, x->acked_at, x->acked_seq))
            continue;
        sb_value f[2] = {sb__v_text(w->corr), sb__v_text(w->reg_id)};
        rc = sb__query(c, CH_SQL(ch, forget_recovery), f, 2, NULL, NULL, err);
        if (rc == SB_OK)
            rc = sb__query(c, CH_SQL(ch, unsubscribe), f, 2, NULL, NULL, err);
        x->cleaned[i] = rc == SB_OK;
    }
    return rc;
}

int sb__channel_deliver(sb_channel *ch, sb_live_id *id, const sb_reply *r)
{
    enum { MAX_AT_ONCE = 256 };
    sb_waiter *ws[MAX_AT_ONCE];
    int cleaned[MAX_AT_ONCE];
    int n = 0;
    pthread_mutex_lock(&ch->mu);
    for (sb_waiter *w = id->waiters; w && n < MAX_AT_ONCE; w = w->id_next) {
        if (w->ended || seen(w, r->id) ||
            r->created_at_us < w->started_at_us - TOLERANCE_US)
            continue;
        if (mark_seen(w, r->id) != SB_OK)
            continue; /* out of memory: the next sweep tries again */
        /* The delivery starts with the claim: a cancel from here on waits
         * for it (C5). Deliveries to one id are serial (executor.c). */
        w->delivering = 1;
        w->refs++;
        ws[n++] = w;
    }
    pthread_mutex_unlock(&ch->mu);
    if (n == 0)
        return 0;
    claim_ctx x = {ch, r, ws, n, cleaned, 0, 0, 0};
    sb_error err;
    int rc = sb__db_run_tx(ch->bus->pool, NULL, claim_tx, &x, &err);
    int delivered = 0;
    for (int i = 0; i < n; i++) {
        sb_waiter *w = ws[i];
        int take =
            rc == SB_OK && x.won && !is_history(w, x.acked_at, x.acked_seq);
        /* C2, C3: an error reply ends the wait whatever the predicate. */
        int terminal = take && (r->is_error || w->until == NULL ||
                                w->until(r, w->until_user) != 0);
        int mine = 0;
        pthread_mutex_lock(&ch->mu);
        w->delivering = 0;
        if (rc != SB_OK && w->n_seen > 0)
            w->n_seen--; /* not delivered: a later scan tries again */
        if (terminal) {
            mine = sb__waiter_finish_locked(
                w, r->is_error ? SB_REPLY_ERROR : SB_OK, r);
            if (mine && cleaned[i])
                w->cleaned = 1;
        } else if (take && !w->ended) {
            sb_reply *copy = sb__reply_copy(r);
            if (copy != NULL) {
                if (w->progress_tail)
                    w->progress_tail->next = copy;
                else
                    w->progress_head = copy;
                w->progress_tail = copy;
                sb__waiter_poke(w);
            }
        }
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&ch->mu);
        if (mine)
            sb__waiter_cleanup(w);
        delivered += take;
        sb__waiter_release(w);
    }
    if (rc != SB_OK) {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "delivery claim of reply %s failed: %s", r->id, err.message);
        /* The cursor already passed it: the next scan of the id starts
         * again from the watermark. */
        pthread_mutex_lock(&ch->mu);
        id->reread = 1;
        pthread_mutex_unlock(&ch->mu);
    }
    return delivered;
}
