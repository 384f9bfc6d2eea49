/* queues.c - per-queue counts for `sqlbus queues` and the dashboard
 * (T31), and the "anything left?" probe of `work --once`. */
#include "transport/transport.h"

#include <stdlib.h>
#include <string.h>

int sb__pending_on(sb_bus *bus, sb_conn *c, const char *queue, int *pending,
                   sb_error *err)
{
    sb_value p[2] = {sb__v_text(queue), sb__v_int(sb__bus_now_us(bus))};
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->pending, p, 2, &rows, NULL, err);
    *pending = rc == SB_OK && rows->nrows > 0;
    sb__rows_free(rows);
    return rc;
}

static sb_queue_stats *find_or_add(sb_queue_stats **arr, size_t *n,
                                   const char *queue)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*arr)[i].queue, queue) == 0)
            return &(*arr)[i];
    sb_queue_stats *na = sb__realloc(*arr, (*n + 1) * sizeof *na);
    if (na == NULL)
        return NULL;
    *arr = na;
    sb_queue_stats *s = &na[(*n)++];
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    sb__strlcpy(s->queue, queue, sizeof s->queue);
    s->oldest_ready_age_ms = -1;
    return s;
}

static int by_queue(const void *a, const void *b)
{
    return strcmp(((const sb_queue_stats *)a)->queue,
                  ((const sb_queue_stats *)b)->queue);
}

typedef struct list_acc {
    sb_queue_stats *arr;
    size_t n;
} list_acc;

/* A queue's settings into its entry (T34-T36, T40): a paused queue without
 * messages is listed too. */
static int add_settings(const char *queue, const sb_settings *st, void *user,
                        sb_error *err)
{
    list_acc *a = user;
    sb_queue_stats *s = find_or_add(&a->arr, &a->n, queue);
    if (s == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    s->paused = st->paused;
    s->prioritized = st->prioritized;
    s->ttl_ms = st->ttl_ms;
    s->max_running = st->max_running;
    s->rate_limit = st->rate_limit;
    s->rate_interval_ms = st->rate_interval_ms;
    return SB_OK;
}

int sb_queue_list(sb_bus *bus, sb_queue_stats ***out, size_t *n_out,
                  sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    int rc = sb__bus_ensure_schema(bus, err);
    sb_conn *c = NULL;
    if (rc == SB_OK)
        rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value now = sb__v_int(sb__bus_now_us(bus));
    sb_value dlq = sb__v_text(bus->dlq);
    sb_rows *rows = NULL, *dead = NULL;
    rc = sb__query(c, bus->sql->stats, &now, 1, &rows, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, bus->sql->dlq_stats, &dlq, 1, &dead, NULL, err);
    list_acc acc = {NULL, 0};
    if (rc == SB_OK)
        rc = sb__settings_list_on(bus, c, add_settings, &acc, err);
    sb__pool_release(bus->pool, c);
    sb_queue_stats *arr = acc.arr;
    size_t n = acc.n;
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        sb_queue_stats *s = find_or_add(&arr, &n, sb__rows_text(rows, r, 0));
        if (s == NULL) {
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
            break;
        }
        s->ready = sb__rows_int(rows, r, 1);
        s->delayed = sb__rows_int(rows, r, 2);
        s->in_flight = sb__rows_int(rows, r, 3);
        s->oldest_ready_age_ms = sb__rows_int(rows, r, 4);
    }
    for (size_t r = 0; rc == SB_OK && r < dead->nrows; r++) {
        const char *q = sb__rows_text(dead, r, 0);
        if (q == NULL)
            continue;
        sb_queue_stats *s = find_or_add(&arr, &n, q);
        if (s == NULL) {
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
            break;
        }
        s->dead_lettered = sb__rows_int(dead, r, 1);
    }
    sb__rows_free(rows);
    sb__rows_free(dead);
    if (n > 1)
        qsort(arr, n, sizeof *arr, by_queue);
    sb_queue_stats **list = NULL;
    if (rc == SB_OK && n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        for (size_t i = 0; list != NULL && i < n; i++)
            *list[i] = arr[i];
    }
    sb__free(arr);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = n;
    return SB_OK;
}
