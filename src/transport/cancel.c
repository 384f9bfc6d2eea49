/* cancel.c - cancelling a message by id (T39), or every message holding
 * a unique key (T38): read under a row lock, and dead-lettered with
 * reason "cancelled" in the same transaction, whoever holds its lease. A consumer that held it finds the row gone at its next
 * renewal or settlement: that is how its handler learns of the cancel
 * (sb_delivery_cancelled) and why its ack is refused. */
#include "transport/transport.h"

#include <string.h>

typedef struct cancel_ctx {
    sb_bus *bus;
    const char *queue, *id, *key; /* by id, or by unique key (T38) */
    sb_msg **msgs;                /* the cancelled messages, for their counts */
    size_t n;
    int outcome; /* of the last one */
} cancel_ctx;

static void forget(cancel_ctx *x)
{
    sb_msg_free_array(x->msgs, x->n);
    x->msgs = NULL;
    x->n = 0;
}

static int cancel_tx(sb_conn *c, void *vctx, sb_error *err)
{
    cancel_ctx *x = vctx;
    forget(x);
    sb_value p[3] = {x->key ? sb__v_text(x->queue) : sb__v_text(x->id),
                     x->key ? sb__v_text(x->key) : sb__v_text(x->queue),
                     sb__v_int(sb__bus_now_us(x->bus))};
    sb_rows *rows = NULL;
    int rc = sb__query(
        c, x->key ? x->bus->sql->cancel_key_get : x->bus->sql->cancel_get, p, 3,
        &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 0)
        rc = x->key ? sb__err(err, SB_NOTFOUND, "unique_key",
                              "queue %s has no message holding unique key "
                              "\"%s\"",
                              x->queue, x->key)
                    : sb__err(err, SB_NOTFOUND, "id",
                              "queue %s has no message %s (settled already, "
                              "or never published there)",
                              x->queue, x->id);
    if (rc == SB_OK &&
        (x->msgs = sb__calloc(rows->nrows, sizeof *x->msgs)) == NULL)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        x->outcome =
            sb__rows_int(rows, r, 7) ? SB_CANCEL_RUNNING : SB_CANCEL_WAITING;
        rc = sb__msg_from_row(rows, r, &x->msgs[x->n]);
        if (rc != SB_OK) {
            rc = sb__err(err, rc, NULL, "out of memory");
            break;
        }
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
        rc = sb__dead_letter_on(x->bus, c, x->msgs[x->n++], &f, 0, err);
    }
    sb__rows_free(rows);
    return rc;
}

/* The checks of both cancels: the bus, the queue, not the DLQ. */
static int check_cancel(sb_bus *bus, const char *queue, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    int rc = sb_validate_queue_name(queue, err);
    if (rc == SB_OK && strcmp(queue, bus->dlq) == 0)
        rc = sb__err(err, SB_INVALID, "queue",
                     "%s is the dead-letter queue: its messages are "
                     "retried or removed through the error store, not "
                     "cancelled",
                     queue);
    return rc;
}

/* Run the cancel `x` and count what it dead-lettered. */
static int run_cancel(cancel_ctx *x, sb_error *err)
{
    int rc = sb__bus_ensure_schema(x->bus, err);
    if (rc == SB_OK)
        rc = sb__db_run_tx(x->bus->pool, NULL, cancel_tx, x, err);
    for (size_t i = 0; i < x->n; i++)
        rc = sb__count_msg(x->bus, x->msgs[i], SB_COUNT_DEAD, rc);
    return rc;
}

int sb_cancel(sb_bus *bus, const char *queue, const char *id, int *outcome,
              sb_error *err)
{
    if (outcome != NULL)
        *outcome = 0;
    int rc = check_cancel(bus, queue, err);
    if (rc != SB_OK)
        return rc;
    char norm[37];
    if (id == NULL || sb__uuid_normalize(id, norm) != SB_OK)
        return sb__err(err, SB_INVALID, "id",
                       "a message id is a UUID (got \"%.64s\")",
                       id ? id : "(null)");
    cancel_ctx x = {bus, queue, norm, NULL, NULL, 0, 0};
    rc = run_cancel(&x, err);
    forget(&x);
    if (rc == SB_OK && outcome != NULL)
        *outcome = x.outcome;
    return rc;
}

int sb_cancel_key(sb_bus *bus, const char *queue, const char *key,
                  size_t *cancelled, sb_error *err)
{
    if (cancelled != NULL)
        *cancelled = 0;
    int rc = check_cancel(bus, queue, err);
    if (rc == SB_OK && key == NULL)
        rc = sb__err(err, SB_INVALID, "unique_key",
                     "unique_key must not be NULL");
    if (rc == SB_OK)
        rc = sb__unique_key_check(key, "unique_key", err);
    if (rc != SB_OK)
        return rc;
    cancel_ctx x = {bus, queue, NULL, key, NULL, 0, 0};
    rc = run_cancel(&x, err);
    if (rc == SB_OK && cancelled != NULL)
        *cancelled = x.n;
    forget(&x);
    return rc;
}
