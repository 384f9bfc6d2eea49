/* cancel.c - cancelling a message by id (T39): read under a row lock, and
 * dead-lettered with reason "cancelled" in the same transaction, whoever
 * holds its lease. A consumer that held it finds the row gone at its next
 * renewal or settlement: that is how its handler learns of the cancel
 * (sb_delivery_cancelled) and why its ack is refused. */
#include "transport/transport.h"

#include <string.h>

typedef struct cancel_ctx {
    sb_bus *bus;
    const char *queue, *id;
    sb_msg *msg; /* the cancelled message, for its counts */
    int outcome;
} cancel_ctx;

static int cancel_tx(sb_conn *c, void *vctx, sb_error *err)
{
    cancel_ctx *x = vctx;
    sb_msg_free(x->msg);
    x->msg = NULL;
    sb_value p[3] = {sb__v_text(x->id), sb__v_text(x->queue),
                     sb__v_int(sb__bus_now_us(x->bus))};
    sb_rows *rows = NULL;
    int rc = sb__query(c, x->bus->sql->cancel_get, p, 3, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 0)
        rc = sb__err(err, SB_NOTFOUND, "id",
                     "queue %s has no message %s (settled already, or never "
                     "published there)",
                     x->queue, x->id);
    if (rc == SB_OK) {
        x->outcome =
            sb__rows_int(rows, 0, 7) ? SB_CANCEL_RUNNING : SB_CANCEL_WAITING;
        rc = sb__msg_from_row(rows, 0, &x->msg);
        if (rc != SB_OK)
            sb__err(err, rc, NULL, "out of memory");
    }
    sb__rows_free(rows);
    if (rc != SB_OK)
        return rc;
    sb_failure f = {sizeof f,
                    "cancelled",
                    "cancelled",
                    x->outcome == SB_CANCEL_RUNNING
                        ? "cancelled while a consumer held it"
                        : "cancelled before it was delivered",
                    NULL,
                    NULL};
    /* Not fenced: the row is locked, and a lease held by another
     * consumer is exactly what a cancel overrides. */
    return sb__dead_letter_on(x->bus, c, x->msg, &f, 0, err);
}

int sb_cancel(sb_bus *bus, const char *queue, const char *id, int *outcome,
              sb_error *err)
{
    sb_error_clear(err);
    if (outcome != NULL)
        *outcome = 0;
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    int rc = sb_validate_queue_name(queue, err);
    if (rc != SB_OK)
        return rc;
    if (strcmp(queue, bus->dlq) == 0)
        return sb__err(err, SB_INVALID, "queue",
                       "%s is the dead-letter queue: its messages are "
                       "retried or removed through the error store, not "
                       "cancelled",
                       queue);
    char norm[37];
    if (id == NULL || sb__uuid_normalize(id, norm) != SB_OK)
        return sb__err(err, SB_INVALID, "id",
                       "a message id is a UUID (got \"%.64s\")",
                       id ? id : "(null)");
    rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    cancel_ctx x = {bus, queue, norm, NULL, 0};
    rc = sb__db_run_tx(bus->pool, NULL, cancel_tx, &x, err);
    if (x.msg != NULL)
        rc = sb__count_msg(bus, x.msg, SB_COUNT_DEAD, rc);
    sb_msg_free(x.msg);
    if (rc == SB_OK && outcome != NULL)
        *outcome = x.outcome;
    return rc;
}
