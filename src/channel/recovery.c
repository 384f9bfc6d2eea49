/* recovery.c - named recovery handlers (C19) and the consumer of the
 * sqlbus.recovery queue (C21): an ordinary transport worker, so a job runs
 * at least once in whichever process registered its handler. */
#include "channel/channel.h"

#include <string.h>

typedef struct recovery_entry {
    sb_recovery_handler h;
    char *name;
    struct recovery_entry *next;
} recovery_entry;

static const recovery_entry *find(sb_channel *ch, const char *name)
{
    for (const recovery_entry *e = ch->handlers; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

static const char *kv_get(char **kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[2 * i], key) == 0)
            return kv[2 * i + 1];
    return NULL;
}

typedef struct job {
    const char *reply_id, *corr, *reg, *handler;
} job;

/* Load the reply and the registration's context; *gone when the
 * registration no longer exists (already handled: nothing to do). */
static int load(sb_channel *ch, const job *j, sb_reply **reply,
                sb_rows **reg_rows, int *gone, sb_error *err)
{
    *reply = NULL;
    *reg_rows = NULL;
    *gone = 0;
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(ch->bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value id = sb__v_text(j->reply_id);
    sb_rows *rows = NULL;
    rc = sb__query(c, CH_SQL(ch, reply_by_id), &id, 1, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 1)
        *reply = sb__reply_from_row(rows, 0);
    sb__rows_free(rows);
    sb_value p[2] = {sb__v_text(j->corr), sb__v_text(j->reg)};
    if (rc == SB_OK)
        rc = sb__query(c, CH_SQL(ch, registration), p, 2, reg_rows, NULL, err);
    sb__pool_release(ch->bus->pool, c);
    if (rc == SB_OK && (*reg_rows)->nrows == 0)
        *gone = 1;
    else if (rc == SB_OK && *reply == NULL)
        rc = sb__err(err, SB_NOTFOUND, "reply_id",
                     "reply %s is gone (past its retention)", j->reply_id);
    return rc;
}

typedef struct forget_ctx {
    sb_channel *ch;
    const job *j;
} forget_ctx;

static int forget_tx(sb_conn *c, void *vctx, sb_error *err)
{
    forget_ctx *x = vctx;
    sb_value p[2] = {sb__v_text(x->j->corr), sb__v_text(x->j->reg)};
    return sb__query(c, CH_SQL(x->ch, forget_recovery), p, 2, NULL, NULL, err);
}

static int run_job(sb_channel *ch, const job *j, sb_delivery *d)
{
    pthread_mutex_lock(&ch->handlers_mu);
    const recovery_entry *e = j->handler ? find(ch, j->handler) : NULL;
    sb_recovery_handler h;
    if (e != NULL)
        h = e->h;
    pthread_mutex_unlock(&ch->handlers_mu);
    if (e == NULL) {
        /* Another process may know it; after max attempts the job is
         * dead-lettered and so reaches the error store (C21). */
        sb_delivery_fail(d, "recovery:unknown-handler",
                         j->handler ? j->handler : "(no handler named)", NULL);
        return SB_NOTFOUND;
    }
    sb_reply *reply = NULL;
    sb_rows *reg = NULL;
    int gone = 0;
    sb_error err;
    int rc = load(ch, j, &reply, &reg, &gone, &err);
    if (rc != SB_OK || gone) {
        if (rc != SB_OK)
            sb_delivery_fail(d, "recovery:load", err.message, NULL);
        sb_reply_free(reply);
        sb__rows_free(reg);
        return rc;
    }
    const sb_value *ctx = sb__rows_at(reg, 0, 1);
    const void *cp = ctx->type == SB_V_NULL ? NULL : ctx->p;
    size_t cl = ctx->type == SB_V_NULL ? 0 : ctx->len;
    /* Default FAIL: nothing resumes by omission (C19, trap 3). */
    int verdict = h.classify ? h.classify(reply, h.user) : SB_RECOVERY_FAIL;
    if (verdict == SB_RECOVERY_KEEP_WAITING) {
        rc = SB_OK; /* the registration stays armed (trap 2) */
    } else {
        sb_recovery_fn fn = verdict == SB_RECOVERY_RESUME ? h.resume : h.fail;
        rc = fn ? fn(reply, cp, cl, h.user) : SB_OK;
        if (rc == SB_OK) {
            forget_ctx x = {ch, j};
            rc = sb__db_run_tx(ch->bus->pool, NULL, forget_tx, &x, &err);
            /* A failed delete after a successful callback is retried as a
             * delete, never as a failed reply (trap 51): the callback is
             * idempotent by contract. */
        } else {
            sb_delivery_fail(d, "recovery:callback", "the callback failed",
                             NULL);
        }
    }
    sb_reply_free(reply);
    sb__rows_free(reg);
    return rc;
}

static int recovery_handler(sb_delivery *d, void *user)
{
    sb_channel *ch = user;
    const sb_msg *m = sb_delivery_msg(d);
    size_t len;
    const char *payload = sb_msg_payload(m, &len);
    char **kv = NULL;
    size_t n = 0;
    if (sb__headers_parse(payload, &kv, &n) != SB_OK) {
        sb_delivery_dead_letter(d, "recovery job is not a JSON object");
        return SB_OK;
    }
    job j = {kv_get(kv, n, "reply_id"), kv_get(kv, n, "correlation_id"),
             kv_get(kv, n, "registration_id"), kv_get(kv, n, "handler")};
    int rc;
    if (j.reply_id == NULL || j.corr == NULL || j.reg == NULL) {
        sb_delivery_dead_letter(d, "recovery job lacks its ids");
        rc = SB_OK;
    } else {
        rc = run_job(ch, &j, d);
    }
    sb__headers_free(kv, n);
    return rc;
}

int sb_channel_add_recovery_handler(sb_channel *ch,
                                    const sb_recovery_handler *h, sb_error *err)
{
    sb_error_clear(err);
    if (ch == NULL || h == NULL)
        return sb__err(err, SB_INVALID, ch ? "handler" : "channel",
                       "arguments must not be NULL");
    if (h->size != 0 && h->size < sizeof *h)
        return sb__err(err, SB_INVALID, "size",
                       "sb_recovery_handler.size is smaller than any version");
    int rc =
        sb__validate_name(h->name, 200, "name", "recovery handler name", err);
    if (rc != SB_OK)
        return rc;
    recovery_entry *e = sb__calloc(1, sizeof *e);
    if (e == NULL || (e->name = sb__strdup(h->name)) == NULL) {
        sb__free(e);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    e->h = *h;
    e->h.name = e->name;
    pthread_mutex_lock(&ch->handlers_mu);
    if (find(ch, h->name) != NULL) {
        pthread_mutex_unlock(&ch->handlers_mu);
        sb__free(e->name);
        sb__free(e);
        return sb__err(err, SB_CONFLICT, "name",
                       "a recovery handler \"%.64s\" is already registered",
                       h->name);
    }
    if (ch->recovery_worker == NULL) {
        sb_worker_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.queue = SB_RECOVERY_QUEUE;
        o.handler = recovery_handler;
        o.user = ch;
        o.concurrency = 2;
        o.max_attempts = ch->o.recovery_max_attempts;
        o.redelivery_delay_ms = ch->o.recovery_retry_ms;
        o.empty_poll_ms = ch->o.full_sweep_interval_ms / 4 + 1;
        o.max_poll_ms = ch->o.full_sweep_interval_ms;
        rc = sb__worker_start_internal(ch->bus, &o, &ch->recovery_worker, err);
    }
    if (rc == SB_OK) {
        e->next = ch->handlers;
        ch->handlers = e;
    } else {
        sb__free(e->name);
        sb__free(e);
    }
    pthread_mutex_unlock(&ch->handlers_mu);
    return rc;
}

void sb__channel_recovery_close(sb_channel *ch)
{
    sb_worker_free(ch->recovery_worker);
    ch->recovery_worker = NULL;
    while (ch->handlers != NULL) {
        recovery_entry *e = ch->handlers;
        ch->handlers = e->next;
        sb__free(e->name);
        sb__free(e);
    }
}
