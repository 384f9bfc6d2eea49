/* settings.c - a queue's settings in {prefix}queue_settings (T34, T35,
 * T36, T40): read by the workers once every SB_SETTINGS_REFRESH_MS and by
 * sb_claim in its transaction; pause and resume; the limits; the time to
 * live. A
 * queue with no row has none: no row is written for a queue that never
 * had a setting. */
#include "transport/transport.h"

#include <string.h>

/* One row of settings_get (or settings_list from column `at`). */
static void read_settings(const sb_rows *rows, size_t r, size_t at,
                          sb_settings *out)
{
    out->found = 1;
    out->paused = (int)sb__rows_int(rows, r, at);
    out->prioritized = (int)sb__rows_int(rows, r, at + 1);
    out->max_running = (int)sb__rows_int(rows, r, at + 2);
    out->rate_limit = (int)sb__rows_int(rows, r, at + 3);
    out->rate_interval_ms = sb__rows_int(rows, r, at + 4);
    out->ttl_ms = sb__rows_int(rows, r, at + 5);
}

int sb__settings_get_on(sb_bus *bus, sb_conn *c, const char *queue,
                        sb_settings *out, sb_error *err)
{
    memset(out, 0, sizeof *out);
    sb_value p = sb__v_text(queue);
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->settings_get, &p, 1, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows > 0)
        read_settings(rows, 0, 0, out);
    sb__rows_free(rows);
    return rc;
}

typedef struct get_ctx {
    sb_bus *bus;
    const char *queue;
    sb_settings *out;
} get_ctx;

static int get_tx(sb_conn *c, void *vctx, sb_error *err)
{
    get_ctx *x = vctx;
    int rc = sb__settings_get_on(x->bus, c, x->queue, x->out, err);
    if (rc == SB_OK)
        rc = sb__clock_offset_on(x->bus, c, &x->out->clock_offset_us, err);
    return rc;
}

int sb__settings_get(sb_bus *bus, const char *queue, sb_settings *out,
                     sb_error *err)
{
    get_ctx x = {bus, queue, out};
    memset(out, 0, sizeof *out);
    return sb__db_run_tx(bus->pool, NULL, get_tx, &x, err);
}

int sb__settings_list_on(sb_bus *bus, sb_conn *c, sb_settings_fn fn, void *user,
                         sb_error *err)
{
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->settings_list, NULL, 0, &rows, NULL, err);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        sb_settings s;
        read_settings(rows, r, 1, &s);
        const char *queue = sb__rows_text(rows, r, 0);
        if (queue != NULL)
            rc = fn(queue, &s, user, err);
    }
    sb__rows_free(rows);
    return rc;
}

typedef struct write_ctx {
    sb_bus *bus;
    const char *sql;
    sb_value p[5]; /* queue, the values; now_us set by the transaction */
    size_t n;      /* parameters, now_us the last */
} write_ctx;

static int write_tx(sb_conn *c, void *vctx, sb_error *err)
{
    write_ctx *x = vctx;
    x->p[x->n - 1] = sb__v_int(sb__bus_now_us(x->bus));
    return sb__query(c, x->sql, x->p, x->n, NULL, NULL, err);
}

/* Settings of a queue written by `sql` ($1 queue, then the `n` values,
 * then now_us), its row made when it has none. */
static int write_settings(sb_bus *bus, const char *queue, const char *sql,
                          const sb_value *values, size_t n, sb_error *err)
{
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    write_ctx x = {bus, sql, {sb__v_text(queue)}, n + 2};
    memcpy(x.p + 1, values, n * sizeof *values);
    return sb__db_run_tx(bus->pool, NULL, write_tx, &x, err);
}

static int write_setting(sb_bus *bus, const char *queue, const char *sql,
                         sb_value value, sb_error *err)
{
    return write_settings(bus, queue, sql, &value, 1, err);
}

static int check_queue(sb_bus *bus, const char *queue, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    return sb_validate_queue_name(queue, err);
}

int sb_queue_pause(sb_bus *bus, const char *queue, sb_error *err)
{
    int rc = check_queue(bus, queue, err);
    return rc != SB_OK ? rc
                       : write_setting(bus, queue, bus->sql->settings_pause,
                                       sb__v_int(1), err);
}

int sb_queue_resume(sb_bus *bus, const char *queue, sb_error *err)
{
    int rc = check_queue(bus, queue, err);
    return rc != SB_OK ? rc
                       : write_setting(bus, queue, bus->sql->settings_pause,
                                       sb__v_int(0), err);
}

int sb_queue_set_ttl(sb_bus *bus, const char *queue, int64_t ttl_ms,
                     sb_error *err)
{
    int rc = check_queue(bus, queue, err);
    if (rc != SB_OK)
        return rc;
    if (ttl_ms < 0 || ttl_ms > SB_TTL_MAX_MS)
        return sb__err(err, SB_INVALID, "ttl_ms",
                       "a time to live is 1 ms to 100 years (%lld ms), or 0 "
                       "for none (got %lld)",
                       (long long)SB_TTL_MAX_MS, (long long)ttl_ms);
    if (ttl_ms > 0 && strcmp(queue, bus->dlq) == 0)
        return sb__err(err, SB_INVALID, "queue",
                       "%s is the dead-letter queue: its messages do not "
                       "expire (the error store's retention removes them)",
                       queue);
    return write_setting(bus, queue, bus->sql->settings_ttl,
                         ttl_ms > 0 ? sb__v_int(ttl_ms) : sb__v_null(), err);
}

/* A limit's value as stored: NULL for none. */
static sb_value limit_value(int64_t v)
{
    return v > 0 ? sb__v_int(v) : sb__v_null();
}

static int check_limits(const sb_queue_limits *l, sb_error *err)
{
    if (l == NULL)
        return sb__err(err, SB_INVALID, "limits", "limits must not be NULL");
    if (l->size < sizeof *l)
        return sb__err(err, SB_INVALID, "limits->size",
                       "size must be sizeof(sb_queue_limits), at least %zu "
                       "(got %zu)",
                       sizeof *l, l->size);
    if (l->max_running < 0 || l->max_running > SB_MAX_RUNNING_MAX)
        return sb__err(err, SB_INVALID, "max_running",
                       "max_running is 1 to %d, or 0 for no limit (got %d)",
                       SB_MAX_RUNNING_MAX, l->max_running);
    if (l->rate_limit < 0 || l->rate_limit > SB_RATE_LIMIT_MAX)
        return sb__err(err, SB_INVALID, "rate_limit",
                       "rate_limit is 1 to %d claims, or 0 for no limit "
                       "(got %d)",
                       SB_RATE_LIMIT_MAX, l->rate_limit);
    if (l->rate_limit == 0 && l->rate_interval_ms != 0)
        return sb__err(err, SB_INVALID, "rate_interval_ms",
                       "rate_interval_ms is 0 without a rate_limit (got %lld)",
                       (long long)l->rate_interval_ms);
    if (l->rate_limit > 0 && (l->rate_interval_ms < 1 ||
                              l->rate_interval_ms > SB_RATE_INTERVAL_MAX_MS))
        return sb__err(err, SB_INVALID, "rate_interval_ms",
                       "rate_interval_ms is 1 ms to a day (%lld ms) with a "
                       "rate_limit (got %lld)",
                       (long long)SB_RATE_INTERVAL_MAX_MS,
                       (long long)l->rate_interval_ms);
    return SB_OK;
}

int sb_queue_set_limits(sb_bus *bus, const char *queue,
                        const sb_queue_limits *limits, sb_error *err)
{
    int rc = check_queue(bus, queue, err);
    if (rc == SB_OK)
        rc = check_limits(limits, err);
    if (rc != SB_OK)
        return rc;
    if ((limits->max_running > 0 || limits->rate_limit > 0) &&
        strcmp(queue, bus->dlq) == 0)
        return sb__err(err, SB_INVALID, "queue",
                       "%s is the dead-letter queue: nothing claims from it "
                       "but the error store's ingestion, which takes no "
                       "limits",
                       queue);
    sb_value v[3] = {limit_value(limits->max_running),
                     limit_value(limits->rate_limit),
                     limit_value(limits->rate_interval_ms)};
    return write_settings(bus, queue, bus->sql->settings_limits, v, 3, err);
}
