/* waiter.c - the two ways to wait (C1), outcomes and their cleanup order
 * (C4), cancellation and the bounded drain (C5), blocking and eventfd
 * waiting (C6). */
#define _GNU_SOURCE
#include "channel/channel.h"

#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

void sb__waiter_poke(sb_waiter *w)
{
    uint64_t one = 1;
    if (w->efd >= 0 && write(w->efd, &one, sizeof one) < 0) {
        /* The counter is saturated: already readable, nothing lost. */
    }
}

static void drain_fd(sb_waiter *w)
{
    uint64_t v;
    while (w->efd >= 0 && read(w->efd, &v, sizeof v) > 0) {
    }
}

static void waiter_free(sb_waiter *w)
{
    while (w->progress_head != NULL) {
        sb_reply *r = w->progress_head;
        w->progress_head = r->next;
        sb_reply_free(r);
    }
    sb_reply_free(w->result);
    sb__free(w->seen);
    sb__free(w->corr);
    if (w->efd >= 0)
        close(w->efd);
    pthread_cond_destroy(&w->cv);
    sb__free(w);
}

void sb__waiter_release(sb_waiter *w)
{
    sb_channel *ch = w->ch;
    pthread_mutex_lock(&ch->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&ch->mu);
    if (last)
        waiter_free(w);
}

int sb__waiter_finish_locked(sb_waiter *w, int rc, const sb_reply *r)
{
    if (w->ended)
        return 0;
    w->ended = 1;
    w->outcome = rc;
    if (r != NULL)
        w->result = sb__reply_copy(r);
    if (r != NULL && w->result == NULL)
        w->outcome = SB_NOMEM;
    sb__ids_remove_waiter(w->ch, w);
    pthread_cond_broadcast(&w->cv);
    sb__waiter_poke(w);
    return 1;
}

typedef struct forget_ctx {
    sb_waiter *w;
} forget_ctx;

static int forget_tx(sb_conn *c, void *vctx, sb_error *err)
{
    sb_waiter *w = ((forget_ctx *)vctx)->w;
    sb_value p[2] = {sb__v_text(w->corr), sb__v_text(w->reg_id)};
    /* The recovery registration goes first (trap 18). */
    int rc =
        sb__query(c, CH_SQL(w->ch, forget_recovery), p, 2, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(w->ch, unsubscribe), p, 2, NULL, NULL, err);
    return rc;
}

void sb__waiter_delete_rows(sb_waiter *w)
{
    forget_ctx x = {w};
    sb_error err;
    int rc = sb__db_run_tx(w->ch->bus->pool, NULL, forget_tx, &x, &err);
    if (rc != SB_OK) /* rows expire on their own: heartbeats stop */
        sb__log(&w->ch->bus->log, SB_LOG_WARN, "channel",
                "could not remove the rows of waiter %s: %s", w->reg_id,
                err.message);
}

void sb__waiter_cleanup(sb_waiter *w)
{
    if (w->cleaned)
        return;
    w->cleaned = 1;
    sb__waiter_delete_rows(w);
}

int64_t sb__channel_expire(sb_channel *ch, int64_t now)
{
    enum { BATCH = 64 };
    sb_waiter *due[BATCH];
    int n = 0;
    int64_t next = INT64_MAX;
    pthread_mutex_lock(&ch->mu);
    for (size_t b = 0; b < ch->n_buckets && n < BATCH; b++) {
        sb_live_id *id = ch->buckets[b];
        while (id != NULL && n < BATCH) {
            /* Finishing the last waiter may free the id. */
            sb_live_id *next_id = id->hnext;
            sb_waiter *w = id->waiters;
            while (w != NULL) {
                sb_waiter *following = w->id_next;
                if (!w->delivering && now >= w->deadline_us && n < BATCH) {
                    if (sb__waiter_finish_locked(w, SB_TIMEOUT, NULL)) {
                        w->refs++;
                        due[n++] = w;
                    }
                } else if (w->deadline_us < next) {
                    next = w->deadline_us;
                }
                w = following;
            }
            id = next_id;
        }
    }
    pthread_mutex_unlock(&ch->mu);
    for (int i = 0; i < n; i++) {
        sb__waiter_cleanup(due[i]);
        sb__waiter_release(due[i]);
    }
    return n == BATCH ? now : next;
}

typedef struct register_ctx {
    sb_waiter *w;
    const sb_wait_options *o;
    sb_in_tx_fn in_tx; /* work written in the same transaction, or NULL */
    void *in_tx_user;
} register_ctx;

/* One transaction: the watermark (database now and a sequence draw), the
 * subscriber row, then the recovery registration (C1, C10, C20). */
static int register_tx(sb_conn *c, void *vctx, sb_error *err)
{
    register_ctx *x = vctx;
    sb_waiter *w = x->w;
    sb_channel *ch = w->ch;
    int64_t now = sb__bus_now_us(ch->bus);
    sb_value np = sb__v_int(now);
    sb_rows *rows = NULL;
    int rc = sb__query(c, CH_SQL(ch, watermark), &np, 1, &rows, NULL, err);
    if (rc != SB_OK)
        return rc;
    w->started_at_us = sb__rows_int(rows, 0, 0);
    w->started_seq = sb__rows_int(rows, 0, 1);
    sb__rows_free(rows);
    if (CH_SQL(ch, seq_next) != NULL)
        rc = sb__channel_next_seq(ch, c, &w->started_seq, err);
    sb_value s[5] = {sb__v_text(w->corr), sb__v_text(w->reg_id),
                     sb__v_text(ch->instance),
                     sb__v_int(ch->o.heartbeat_timeout_ms), np};
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, subscribe), s, 5, NULL, NULL, err);
    const sb_wait_options *o = x->o;
    sb_value r[6] = {
        sb__v_text(w->corr),
        sb__v_text(w->reg_id),
        sb__v_text(o ? o->recovery_handler : NULL),
        o && o->recovery_context
            ? sb__v_blob(o->recovery_context, o->recovery_context_len)
            : sb__v_null(),
        sb__v_int(ch->o.recovery_expiry_ms),
        np};
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, save_recovery), r, 6, NULL, NULL, err);
    /* Written after the registration and committed with it: nobody can
     * see the work before the waiter exists (C1). */
    if (rc == SB_OK && x->in_tx != NULL)
        rc = x->in_tx(c, w->corr, x->in_tx_user, err);
    return rc;
}

static int check_wait_options(const sb_wait_options *o, sb_error *err)
{
    if (o == NULL)
        return SB_OK;
    if (o->size != 0 && o->size < sizeof *o)
        return sb__err(err, SB_INVALID, "size",
                       "sb_wait_options.size is smaller than any version");
    if (o->timeout_ms < 0)
        return sb__err(err, SB_INVALID, "timeout_ms",
                       "timeout must not be negative");
    if (o->recovery_handler != NULL)
        return sb__validate_name(o->recovery_handler, 200, "recovery_handler",
                                 "recovery handler name", err);
    if (o->recovery_context_len > 64 * 1024)
        return sb__err(err, SB_INVALID, "recovery_context",
                       "recovery context is %zu bytes; the limit is 65536",
                       o->recovery_context_len);
    return SB_OK;
}

static int start_waiting(sb_channel *ch, const char *corr,
                         const sb_wait_options *o, sb_in_tx_fn in_tx,
                         void *in_tx_user, sb_waiter **out, sb_error *err)
{
    sb_waiter *w = sb__calloc(1, sizeof *w);
    if (w == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    w->ch = ch;
    w->efd = -1;
    w->corr = sb__strdup(corr);
    w->refs = 1;
    sb__cond_init_monotonic(&w->cv);
    sb__uuid7_at(w->reg_id, sb__wall_us() / 1000);
    if (o != NULL) {
        w->until = o->until;
        w->until_user = o->until_user;
    }
    int64_t timeout =
        o && o->timeout_ms ? o->timeout_ms : ch->o.default_timeout_ms;
    w->deadline_us = sb__mono_us() + timeout * 1000;
    if (w->corr == NULL) {
        waiter_free(w);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    register_ctx x = {w, o, in_tx, in_tx_user};
    int rc = sb__db_run_tx(ch->bus->pool, NULL, register_tx, &x, err);
    if (rc != SB_OK) {
        waiter_free(w);
        return rc;
    }
    pthread_mutex_lock(&ch->mu);
    if (ch->stopping) {
        pthread_mutex_unlock(&ch->mu);
        sb__waiter_cleanup(w);
        waiter_free(w);
        return sb__err(err, SB_CLOSED, NULL, "the channel is closing");
    }
    /* A reply stored before we subscribed is found at once (C12). */
    rc = sb__ids_add_waiter(ch, w);
    pthread_mutex_unlock(&ch->mu);
    if (rc != SB_OK) {
        sb__waiter_cleanup(w);
        waiter_free(w);
        return sb__err(err, rc, NULL, "out of memory");
    }
    *out = w;
    return SB_OK;
}

int sb_attach(sb_channel *ch, const char *correlation_id,
              const sb_wait_options *opts, sb_waiter **out, sb_error *err)
{
    sb_error_clear(err);
    if (ch == NULL || out == NULL)
        return sb__err(err, SB_INVALID, ch ? "out" : "channel",
                       "arguments must not be NULL");
    *out = NULL;
    int rc = sb_validate_correlation_id(correlation_id, err);
    if (rc == SB_OK)
        rc = check_wait_options(opts, err);
    return rc == SB_OK
               ? start_waiting(ch, correlation_id, opts, NULL, NULL, out, err)
               : rc;
}

int sb_request(sb_channel *ch, const sb_wait_options *opts,
               sb_trigger_fn trigger, void *user, sb_waiter **out,
               sb_error *err)
{
    sb_error_clear(err);
    if (ch == NULL || out == NULL)
        return sb__err(err, SB_INVALID, ch ? "out" : "channel",
                       "arguments must not be NULL");
    *out = NULL;
    if (trigger == NULL)
        return sb__err(err, SB_INVALID, "trigger",
                       "a request needs a trigger: an id no one knows can "
                       "never be answered");
    int rc = check_wait_options(opts, err);
    if (rc != SB_OK)
        return rc;
    char id[37];
    sb__uuid7_at(id, sb__wall_us() / 1000);
    sb_waiter *w = NULL;
    rc = start_waiting(ch, id, opts, NULL, NULL, &w, err);
    if (rc != SB_OK)
        return rc;
    /* Only now, with the waiter and its recovery registration stored,
     * may the work be sent (C1, trap 1). */
    rc = trigger(w->corr, user);
    if (rc != SB_OK) {
        pthread_mutex_lock(&ch->mu);
        int mine = sb__waiter_finish_locked(w, rc, NULL);
        pthread_mutex_unlock(&ch->mu);
        if (mine)
            sb__waiter_cleanup(w);
        sb_waiter_free(w);
        return sb__err(err, rc, "trigger", "the trigger failed: %s",
                       sb_strerror(rc));
    }
    *out = w;
    return SB_OK;
}

int sb__request_in_tx(sb_channel *ch, const sb_wait_options *opts,
                      sb_in_tx_fn fn, void *user, sb_waiter **out,
                      sb_error *err)
{
    *out = NULL;
    int rc = check_wait_options(opts, err);
    if (rc != SB_OK)
        return rc;
    char id[37];
    sb__uuid7_at(id, sb__wall_us() / 1000);
    return start_waiting(ch, id, opts, fn, user, out, err);
}

const char *sb_waiter_correlation_id(const sb_waiter *w)
{
    return w->corr;
}

int sb_waiter_fd(const sb_waiter *w)
{
    if (w == NULL)
        return -1;
    /* Created on first use: 10,000 waiters need not hold 10,000 fds. */
    sb_waiter *mw = (sb_waiter *)w;
    pthread_mutex_lock(&w->ch->mu);
    if (mw->efd < 0) {
        mw->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (mw->efd >= 0 &&
            (mw->progress_head != NULL || (mw->ended && !mw->outcome_taken)))
            sb__waiter_poke(mw);
    }
    int fd = mw->efd;
    pthread_mutex_unlock(&w->ch->mu);
    return fd;
}

/* The outcome as a result code and reply (transferred, at most once). */
static int take_outcome_locked(sb_waiter *w, sb_reply **reply)
{
    if (reply != NULL) {
        *reply = w->result;
        w->result = NULL;
    }
    return w->outcome;
}

int sb_waiter_wait(sb_waiter *w, sb_reply **reply, sb_error *err)
{
    sb_error_clear(err);
    if (reply != NULL)
        *reply = NULL;
    if (w == NULL)
        return sb__err(err, SB_INVALID, "waiter", "waiter must not be NULL");
    sb_channel *ch = w->ch;
    int mine = 0;
    pthread_mutex_lock(&ch->mu);
    while (!w->ended) {
        int64_t now = sb__mono_us();
        if (!w->delivering && now >= w->deadline_us) {
            mine = sb__waiter_finish_locked(w, SB_TIMEOUT, NULL);
            break;
        }
        sb__cond_wait_until(&w->cv, &ch->mu,
                            w->delivering ? now + 100000 : w->deadline_us);
    }
    int rc = take_outcome_locked(w, reply);
    w->outcome_taken = 1;
    pthread_mutex_unlock(&ch->mu);
    if (mine)
        sb__waiter_cleanup(w);
    if (rc != SB_OK && rc != SB_REPLY_ERROR)
        sb__err(err, rc, NULL, "wait ended: %s", sb_strerror(rc));
    return rc;
}

int sb_waiter_take(sb_waiter *w, sb_reply **reply, sb_error *err)
{
    sb_error_clear(err);
    if (reply != NULL)
        *reply = NULL;
    if (w == NULL || reply == NULL)
        return sb__err(err, SB_INVALID, w ? "reply" : "waiter",
                       "arguments must not be NULL");
    sb_channel *ch = w->ch;
    int rc;
    pthread_mutex_lock(&ch->mu);
    if (w->progress_head != NULL) {
        *reply = w->progress_head;
        w->progress_head = (*reply)->next;
        if (w->progress_head == NULL)
            w->progress_tail = NULL;
        (*reply)->next = NULL;
        rc = SB_OK;
    } else if (w->ended && !w->outcome_taken) {
        rc = take_outcome_locked(w, reply);
        w->outcome_taken = 1;
    } else {
        rc = w->outcome_taken ? w->outcome : SB_EMPTY;
    }
    if (w->progress_head == NULL && (!w->ended || w->outcome_taken))
        drain_fd(w);
    pthread_mutex_unlock(&ch->mu);
    return rc;
}

int sb_waiter_done(const sb_waiter *w)
{
    sb_channel *ch = w->ch;
    pthread_mutex_lock(&ch->mu);
    int done = w->outcome_taken;
    pthread_mutex_unlock(&ch->mu);
    return done;
}

int sb_waiter_cancel(sb_waiter *w)
{
    if (w == NULL)
        return SB_INVALID;
    sb_channel *ch = w->ch;
    int64_t deadline = sb__mono_us() + ch->o.drain_timeout_ms * 1000;
    int mine = 0, rc;
    pthread_mutex_lock(&ch->mu);
    while (!w->ended && w->delivering && sb__mono_us() < deadline)
        sb__cond_wait_until(&w->cv, &ch->mu, deadline);
    if (!w->ended && w->delivering) {
        /* The reply may already be consumed: never call it cancelled. */
        mine = sb__waiter_finish_locked(w, SB_INDETERMINATE, NULL);
        rc = SB_INDETERMINATE;
    } else if (!w->ended) {
        mine = sb__waiter_finish_locked(w, SB_CLOSED, NULL);
        rc = SB_CLOSED;
    } else {
        rc = w->outcome;
    }
    pthread_mutex_unlock(&ch->mu);
    if (mine)
        sb__waiter_cleanup(w);
    return rc;
}

void sb_waiter_free(sb_waiter *w)
{
    if (w == NULL)
        return;
    sb_waiter_cancel(w);
    sb__waiter_release(w);
}
