/* dlq.c - inspecting, re-publishing, purging and pruning dead letters
 * (T25, T32). Bulk operations work in bounded batches so they never hold
 * a long lock, and report progress. */
#include "transport/transport.h"

#include <string.h>

#define BATCH 1000
#define REQUEUE_BATCH 100

/* Headers that dead-lettering added; requeue removes them. */
static const char *const failure_keys[] = {
    "sb-dead-letter-reason",
    "sb-failed-queue",
    "sb-time-of-failure",
    "sb-processing-endpoint",
    "sb-attempts",
    "sb-message-id",
    "sb-exception-type",
    "sb-exception-message",
    "sb-exception-stacktrace",
    "sb-host",
};

static int check_filter(const sb_dlq_filter *f, sb_error *err)
{
    if (f == NULL)
        return SB_OK;
    if (f->failed_queue != NULL) {
        int rc = sb_validate_queue_name(f->failed_queue, err);
        if (rc != SB_OK)
            return rc;
    }
    if (f->older_than_ms < 0)
        return sb__err(err, SB_INVALID, "older_than_ms",
                       "older_than must not be negative");
    char norm[37];
    if (f->id != NULL && sb__uuid_normalize(f->id, norm) != SB_OK)
        return sb__err(err, SB_INVALID, "id", "id must be a UUID");
    return SB_OK;
}

/* Query one page of dead letters on `c`. */
static int list_on(sb_bus *bus, sb_conn *c, const sb_dlq_filter *f,
                   size_t limit, sb_msg ***out, size_t *n, sb_error *err)
{
    char norm[37] = "";
    if (f && f->id)
        sb__uuid_normalize(f->id, norm);
    sb_value p[6] = {sb__v_text(bus->dlq),
                     sb__v_text(f ? f->failed_queue : NULL),
                     f && f->older_than_ms > 0 ? sb__v_int(f->older_than_ms)
                                               : sb__v_null(),
                     norm[0] ? sb__v_text(norm) : sb__v_null(),
                     limit > 0 ? sb__v_int((int64_t)limit) : sb__v_null(),
                     sb__v_int(sb__bus_now_us(bus))};
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->dlq_list, p, 6, &rows, NULL, err);
    if (rc != SB_OK)
        return rc;
    sb_msg **arr = rows->nrows ? sb__calloc(rows->nrows, sizeof *arr) : NULL;
    if (rows->nrows && arr == NULL)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    size_t k = 0;
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++, k++)
        rc = sb__msg_from_row(rows, r, &arr[r]);
    sb__rows_free(rows);
    if (rc != SB_OK) {
        sb_msg_free_array(arr, k);
        return sb__err(err, rc, NULL, "could not read a dead letter: %s",
                       sb_strerror(rc));
    }
    *out = arr;
    *n = k;
    return SB_OK;
}

int sb_dlq_list(sb_bus *bus, const sb_dlq_filter *filter, sb_msg ***out,
                size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    int rc = check_filter(filter, err);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    sb_conn *c = NULL;
    if (rc == SB_OK)
        rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    size_t limit = filter && filter->limit ? filter->limit : 100;
    rc = list_on(bus, c, filter, limit, out, n_out, err);
    sb__pool_release(bus->pool, c);
    return rc;
}

typedef struct bulk_ctx {
    sb_bus *bus;
    const sb_dlq_filter *filter;
    int requeue;
    int64_t done_now; /* rows handled by this transaction */
} bulk_ctx;

/* Re-publish one dead letter to its failed queue: original id, failure
 * headers removed, attempts reset; then delete the dead letter. */
static int requeue_one(sb_bus *bus, sb_conn *c, const sb_msg *m, sb_error *err)
{
    /* Parsed first: headers lost to a failed allocation would read as
     * absent (no failed queue: refused as invalid). */
    if (sb__msg_parse_headers(m) != SB_OK)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    const char *queue = sb_msg_header(m, "sb-failed-queue");
    const char *orig = sb_msg_header(m, "sb-message-id");
    char id[37];
    if (orig == NULL || sb__uuid_normalize(orig, id) != SB_OK)
        memcpy(id, m->id, sizeof id);
    if (queue == NULL || sb_validate_queue_name(queue, NULL) != SB_OK)
        return sb__err(err, SB_INVALID, "sb-failed-queue",
                       "dead letter %s has no valid sb-failed-queue header",
                       m->id);
    char *queue_copy = sb__strdup(queue);
    char *headers = NULL;
    int rc =
        queue_copy
            ? sb__headers_without(m->headers, failure_keys,
                                  sizeof failure_keys / sizeof failure_keys[0],
                                  &headers, err)
            : sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (rc == SB_OK) {
        sb_outgoing o = {id, m->payload, m->payload_len, headers, 0};
        char ids[1][37];
        memcpy(ids[0], id, 37);
        int immediate = 0;
        rc = sb__publish_on(bus, c, queue_copy, &o, 1, ids, &immediate, err);
    }
    if (rc == SB_OK) {
        sb_value d[2] = {sb__v_text(m->id), sb__v_null()};
        rc = sb__query(c, bus->sql->delete_any, d, 2, NULL, NULL, err);
    }
    sb__free(headers);
    sb__free(queue_copy);
    return rc;
}

static int bulk_tx(sb_conn *c, void *vctx, sb_error *err)
{
    bulk_ctx *x = vctx;
    x->done_now = 0;
    sb_msg **msgs = NULL;
    size_t n = 0;
    int rc = list_on(x->bus, c, x->filter, x->requeue ? REQUEUE_BATCH : BATCH,
                     &msgs, &n, err);
    for (size_t i = 0; rc == SB_OK && i < n; i++) {
        if (x->requeue) {
            rc = requeue_one(x->bus, c, msgs[i], err);
        } else {
            sb_value d[2] = {sb__v_text(msgs[i]->id), sb__v_null()};
            rc = sb__query(c, x->bus->sql->delete_any, d, 2, NULL, NULL, err);
        }
        if (rc == SB_OK)
            x->done_now++;
    }
    sb_msg_free_array(msgs, n);
    return rc;
}

static int bulk(sb_bus *bus, const sb_dlq_filter *filter, int requeue,
                sb_progress_fn progress, void *user, int64_t *count,
                sb_error *err)
{
    sb_error_clear(err);
    if (count != NULL)
        *count = 0;
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    int rc = check_filter(filter, err);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    int64_t done = 0;
    int64_t limit = filter && filter->limit ? (int64_t)filter->limit : -1;
    while (rc == SB_OK) {
        sb_dlq_filter f = filter ? *filter : (sb_dlq_filter){0};
        int64_t batch = requeue ? REQUEUE_BATCH : BATCH;
        if (limit >= 0 && limit - done < batch)
            batch = limit - done;
        if (batch <= 0)
            break;
        f.limit = (size_t)batch;
        bulk_ctx x = {bus, &f, requeue, 0};
        rc = sb__db_run_tx(bus->pool, NULL, bulk_tx, &x, err);
        if (rc != SB_OK || x.done_now == 0)
            break;
        done += x.done_now;
        if (progress != NULL)
            progress(done, -1, user);
    }
    if (requeue && done > 0)
        sb__bus_wake_local(bus, NULL);
    if (count != NULL)
        *count = done;
    return rc;
}

int sb_dlq_requeue(sb_bus *bus, const sb_dlq_filter *filter,
                   sb_progress_fn progress, void *user, int64_t *moved,
                   sb_error *err)
{
    return bulk(bus, filter, 1, progress, user, moved, err);
}

int sb_dlq_purge(sb_bus *bus, const sb_dlq_filter *filter,
                 sb_progress_fn progress, void *user, int64_t *purged,
                 sb_error *err)
{
    return bulk(bus, filter, 0, progress, user, purged, err);
}

typedef struct prune_ctx {
    sb_bus *bus;
    int64_t changes;
} prune_ctx;

static int prune_tx(sb_conn *c, void *vctx, sb_error *err)
{
    prune_ctx *x = vctx;
    sb_value p[4] = {sb__v_text(x->bus->dlq), sb__v_int(x->bus->retention_ms),
                     sb__v_int(BATCH), sb__v_int(sb__bus_now_us(x->bus))};
    return sb__query(c, x->bus->sql->prune, p, 4, NULL, &x->changes, err);
}

int sb_dlq_prune(sb_bus *bus, int64_t *deleted, sb_error *err)
{
    sb_error_clear(err);
    if (deleted != NULL)
        *deleted = 0;
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    if (bus->retention_ms <= 0)
        return SB_OK;
    int rc = sb__bus_ensure_schema(bus, err);
    int64_t start = sb__mono_us(), total = 0;
    /* At most 1,000 rows a statement and 2 s a run (T25). */
    while (rc == SB_OK && sb__mono_us() - start < 2000000) {
        prune_ctx x = {bus, 0};
        rc = sb__db_run_tx(bus->pool, NULL, prune_tx, &x, err);
        total += x.changes;
        if (x.changes < BATCH)
            break;
    }
    if (deleted != NULL)
        *deleted = total;
    return rc;
}

void sb__maybe_prune(sb_bus *bus)
{
    if (bus->retention_ms <= 0)
        return;
    int64_t now = sb__mono_us();
    long long last = atomic_load(&bus->last_prune_us);
    if (last != 0 && now - last < 60000000)
        return;
    if (!atomic_compare_exchange_strong(&bus->last_prune_us, &last, now))
        return;
    sb_error err;
    int64_t n = 0;
    int rc = sb_dlq_prune(bus, &n, &err);
    if (rc != SB_OK)
        sb__log(&bus->log, SB_LOG_WARN, "transport",
                "dead-letter pruning failed (will retry in a minute): %s",
                err.message);
    else if (n > 0)
        sb__log(&bus->log, SB_LOG_INFO, "transport",
                "pruned %lld dead letters older than the retention",
                (long long)n);
}
