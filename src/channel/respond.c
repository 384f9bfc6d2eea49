/* respond.c - publishing a reply (C12): the live check, the idempotent
 * insert, the same-process fast path, and the hand-over to the background
 * confirmer (confirm.c) whose recovery claim makes a live waiter and
 * recovery exclusive. */
#include "channel/channel.h"

#include <string.h>

typedef struct respond_ctx {
    sb_channel *ch;
    sb_reply *r; /* the reply as stored */
    int live_local;
    int live;      /* some waiter may take it */
    int settled;   /* a duplicate already acked or recovered */
    int recovered; /* handed to recovery by this call */
} respond_ctx;

static int local_waiter(sb_channel *ch, const char *corr)
{
    pthread_mutex_lock(&ch->mu);
    int live = sb__ids_find(ch, corr) != NULL;
    pthread_mutex_unlock(&ch->mu);
    return live;
}

static int insert_tx(sb_conn *c, void *vctx, sb_error *err)
{
    respond_ctx *x = vctx;
    sb_channel *ch = x->ch;
    sb_reply *r = x->r;
    int64_t now = sb__bus_now_us(ch->bus);
    x->settled = x->recovered = 0;
    x->live = x->live_local;
    int rc = SB_OK;
    if (!x->live) {
        sb_value p[2] = {sb__v_text(r->correlation_id), sb__v_int(now)};
        sb_rows *rows = NULL;
        rc = sb__query(c, CH_SQL(ch, live), p, 2, &rows, NULL, err);
        x->live = rc == SB_OK && rows->nrows > 0;
        sb__rows_free(rows);
    }
    if (rc != SB_OK)
        return rc;
    /* No live waiter anywhere: recovery owns it at once (C12 step 1). The
     * row is still stored, claimed, so a retried respond is a no-op. */
    sb_value p[10] = {sb__v_text(r->id),
                      sb__v_text(r->correlation_id),
                      sb__v_blob(r->data, r->len),
                      sb__v_int(r->is_error),
                      sb__v_text(r->error_type),
                      sb__v_text(r->error_message),
                      sb__v_text(r->error_detail),
                      sb__v_int(ch->o.message_retention_ms),
                      sb__v_int(now),
                      sb__v_int(x->live ? 0 : 1)};
    sb_rows *rows = NULL;
    rc = sb__query(c, CH_SQL(ch, insert), p, 10, &rows, NULL, err);
    if (rc != SB_OK)
        return rc;
    if (rows->nrows == 1) {
        r->created_at_us = sb__rows_int(rows, 0, 0);
        sb__rows_free(rows);
        if (!x->live) {
            x->recovered = 1;
            return sb__channel_enqueue_recovery(ch, c, r->correlation_id, r->id,
                                                err);
        }
        if (CH_SQL(ch, notify) != NULL) {
            sb_value np[2] = {sb__v_text(ch->notify_channel),
                              sb__v_text(r->correlation_id)};
            rc = sb__query(c, CH_SQL(ch, notify), np, 2, NULL, NULL, err);
        }
        return rc;
    }
    sb__rows_free(rows);
    /* A retried respond: judge by the stored row (C12 step 2). */
    sb_value id = sb__v_text(r->id);
    rc = sb__query(c, CH_SQL(ch, stored), &id, 1, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 1) {
        const char *corr = sb__rows_text(rows, 0, 4);
        if (corr == NULL || strcmp(corr, r->correlation_id) != 0)
            rc = sb__err(err, SB_CONFLICT, "reply_id",
                         "reply id %s is already used by another "
                         "correlation id",
                         r->id);
        r->created_at_us = sb__rows_int(rows, 0, 0);
        x->settled = sb__rows_at(rows, 0, 1)->type != SB_V_NULL ||
                     sb__rows_int(rows, 0, 3) != 0;
        x->live = 1;
    }
    sb__rows_free(rows);
    return rc;
}

static int respond(sb_channel *ch, sb_reply *r, sb_error *err)
{
    respond_ctx x = {ch, r, local_waiter(ch, r->correlation_id), 0, 0, 0};
    int rc = sb__db_run_tx(ch->bus->pool, NULL, insert_tx, &x, err);
    if (rc != SB_OK || x.recovered || x.settled)
        return rc;
    /* Same-process waiters get it now, with the server's created_at; a
     * full queue leaves it to the next scan (C16). */
    pthread_mutex_lock(&ch->mu);
    sb_live_id *id = sb__ids_find(ch, r->correlation_id);
    if (id != NULL)
        sb__exec_admit(ch, id, r, 0);
    pthread_mutex_unlock(&ch->mu);
    /* Other processes were notified in the insert's transaction; the
     * confirmer gives them confirmation_timeout_ms (C12 step 4). */
    sb__confirm_add(ch, r);
    return SB_OK;
}

static int build(sb_channel *ch, const char *corr, const char *reply_id,
                 sb_reply *r, sb_error *err)
{
    if (ch == NULL)
        return sb__err(err, SB_INVALID, "channel", "channel must not be NULL");
    int rc = sb_validate_correlation_id(corr, err);
    if (rc != SB_OK)
        return rc;
    if (reply_id != NULL) {
        if (sb__uuid_normalize(reply_id, r->id) != SB_OK)
            return sb__err(err, SB_INVALID, "reply_id",
                           "reply_id must be a UUID");
    } else {
        sb__uuid7_at(r->id, sb__wall_us() / 1000);
    }
    r->correlation_id = (char *)corr;
    return SB_OK;
}

int sb_respond(sb_channel *ch, const char *correlation_id, const void *data,
               size_t len, const char *reply_id, sb_error *err)
{
    sb_error_clear(err);
    sb_reply r;
    memset(&r, 0, sizeof r);
    int rc = build(ch, correlation_id, reply_id, &r, err);
    if (rc != SB_OK)
        return rc;
    if (data == NULL && len > 0)
        return sb__err(err, SB_INVALID, "data", "data is NULL but len is %zu",
                       len);
    if (len > ch->bus->max_payload)
        return sb__err(err, SB_INVALID, "data",
                       "reply is %zu bytes; max_payload_bytes is %llu", len,
                       (unsigned long long)ch->bus->max_payload);
    r.data = (void *)(data ? data : "");
    r.len = len;
    return respond(ch, &r, err);
}

int sb_respond_error(sb_channel *ch, const char *correlation_id,
                     const char *type, const char *message, const char *detail,
                     const char *reply_id, sb_error *err)
{
    sb_error_clear(err);
    sb_reply r;
    memset(&r, 0, sizeof r);
    int rc = build(ch, correlation_id, reply_id, &r, err);
    if (rc != SB_OK)
        return rc;
    if (type == NULL || type[0] == '\0')
        return sb__err(err, SB_INVALID, "type", "an error reply needs a type");
    if (strlen(type) > 200 || (message != NULL && strlen(message) > 8192))
        return sb__err(err, SB_INVALID, strlen(type) > 200 ? "type" : "message",
                       "error type is limited to 200 bytes and the message "
                       "to 8192");
    if (detail != NULL && strlen(detail) > SB_MAX_ERROR_DETAIL)
        return sb__err(err, SB_INVALID, "detail",
                       "detail is %zu bytes; the limit is %d", strlen(detail),
                       SB_MAX_ERROR_DETAIL);
    r.is_error = 1;
    r.error_type = (char *)type;
    r.error_message = (char *)message;
    r.error_detail = (char *)detail;
    r.data = (void *)"";
    return respond(ch, &r, err);
}
