/* peek.c - reading a queue's messages without claiming them (T31, for
 * `GET /api/queues/{q}/messages` and the dashboard): in dequeue order,
 * paged, with each row's availability and lease so a reader can tell
 * ready, delayed and in-flight apart. No lock is taken. */
#include "transport/transport.h"

#define PEEK_MAX 500
#define PEEK_OFFSET_MAX 1000000

int sb_queue_peek(sb_bus *bus, const char *queue, size_t offset, size_t limit,
                  sb_msg ***out, size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    int rc = sb_validate_queue_name(queue, err);
    if (rc != SB_OK)
        return rc;
    if (limit < 1 || limit > PEEK_MAX)
        return sb__err(err, SB_INVALID, "limit",
                       "limit must be 1 to %d (got %zu)", PEEK_MAX, limit);
    if (offset > PEEK_OFFSET_MAX)
        return sb__err(err, SB_INVALID, "offset",
                       "offset must be at most %d (got %zu)", PEEK_OFFSET_MAX,
                       offset);
    rc = sb__bus_ensure_schema(bus, err);
    sb_conn *c = NULL;
    if (rc == SB_OK)
        rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p[3] = {sb__v_text(queue), sb__v_int((int64_t)limit),
                     sb__v_int((int64_t)offset)};
    sb_rows *rows = NULL;
    rc = sb__query(c, bus->sql->peek, p, 3, &rows, NULL, err);
    sb__pool_release(bus->pool, c);
    if (rc != SB_OK)
        return rc;
    size_t n = rows->nrows, k = 0;
    sb_msg **arr = n ? sb__calloc(n, sizeof *arr) : NULL;
    if (n > 0 && arr == NULL)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (; rc == SB_OK && k < n; k++) {
        rc = sb__msg_from_row(rows, k, &arr[k]);
        if (rc != SB_OK) {
            rc = sb__err(err, rc, NULL, "could not read a queued message: %s",
                         sb_strerror(rc));
            break;
        }
        arr[k]->available_at_us = sb__rows_int(rows, k, 7);
        arr[k]->locked_until_us = sb__rows_int(rows, k, 8);
        arr[k]->priority = (int)sb__rows_int(rows, k, 9);
        arr[k]->expires_at_us = sb__rows_int(rows, k, 11);
        const char *progress = sb__rows_text(rows, k, 10);
        const char *key = sb__rows_text(rows, k, 12);
        if ((progress != NULL &&
             (arr[k]->progress = sb__strdup(progress)) == NULL) ||
            (key != NULL && (arr[k]->unique_key = sb__strdup(key)) == NULL)) {
            k++; /* freed with the others */
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
            break;
        }
    }
    sb__rows_free(rows);
    if (rc != SB_OK) {
        sb_msg_free_array(arr, k);
        return rc;
    }
    *out = arr;
    *n_out = n;
    return SB_OK;
}

int64_t sb_msg_available_at_us(const sb_msg *msg)
{
    return msg ? msg->available_at_us : 0;
}

int64_t sb_msg_locked_until_us(const sb_msg *msg)
{
    return msg ? msg->locked_until_us : 0;
}

int sb_msg_priority(const sb_msg *msg)
{
    return msg ? msg->priority : 0;
}

const char *sb_msg_progress(const sb_msg *msg)
{
    return msg ? msg->progress : NULL;
}

int64_t sb_msg_expires_at_us(const sb_msg *msg)
{
    return msg ? msg->expires_at_us : 0;
}

const char *sb_msg_unique_key(const sb_msg *msg)
{
    return msg ? msg->unique_key : NULL;
}
