/* settings.c - a queue's settings in {prefix}queue_settings (T34, T35):
 * read by the workers once every SB_SETTINGS_REFRESH_MS and by sb_claim
 * in its transaction; pause and resume. A queue with no row has none: no
 * row is written for a queue that never had a setting. */
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
    return sb__settings_get_on(x->bus, c, x->queue, x->out, err);
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

typedef struct pause_ctx {
    sb_bus *bus;
    const char *queue;
    int paused;
} pause_ctx;

static int pause_tx(sb_conn *c, void *vctx, sb_error *err)
{
    pause_ctx *x = vctx;
    sb_value p[3] = {sb__v_text(x->queue), sb__v_int(x->paused),
                     sb__v_int(sb__bus_now_us(x->bus))};
    return sb__query(c, x->bus->sql->settings_pause, p, 3, NULL, NULL, err);
}

static int set_paused(sb_bus *bus, const char *queue, int paused, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    int rc = sb_validate_queue_name(queue, err);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    pause_ctx x = {bus, queue, paused};
    return sb__db_run_tx(bus->pool, NULL, pause_tx, &x, err);
}

int sb_queue_pause(sb_bus *bus, const char *queue, sb_error *err)
{
    return set_paused(bus, queue, 1, err);
}

int sb_queue_resume(sb_bus *bus, const char *queue, sb_error *err)
{
    return set_paused(bus, queue, 0, err);
}
