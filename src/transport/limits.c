/* limits.c - T36: the claims of a queue with a concurrency or rate limit.
 * Only such a queue's claims come here (a queue without limits claims as
 * before, with no statement more): its settings row is locked for the
 * claim's transaction, which serialises the queue's limited claims in
 * every process; the leased rows are counted, the bucket refilled, and
 * the claim takes no more than both allow; the tokens taken are written
 * back before the commit. */
#include "transport/transport.h"

#include <string.h>

int sb__limit_begin(sb_bus *bus, sb_conn *c, const char *queue, int max,
                    sb_limit_grant *g, sb_error *err)
{
    memset(g, 0, sizeof *g);
    g->allowed = max;
    g->now_us = sb__bus_now_us(bus);
    sb_value p[3] = {sb__v_text(queue), sb__v_int(g->now_us), sb__v_null()};
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->limit_lock, p, 2, &rows, NULL, err);
    if (rc != SB_OK || rows->nrows == 0) {
        sb__rows_free(rows); /* no row: no limit any more */
        return rc;
    }
    int max_running = (int)sb__rows_int(rows, 0, 0);
    g->rate_limit = (int)sb__rows_int(rows, 0, 1);
    g->rate_interval_ms = sb__rows_int(rows, 0, 2);
    g->milli_tokens = sb__rows_int(rows, 0, 3);
    sb__rows_free(rows);
    if (g->rate_limit > 0 && g->rate_interval_ms > 0) {
        int64_t whole = g->milli_tokens / 1000;
        if (whole < g->allowed)
            g->allowed = whole > 0 ? (int)whole : 0;
    } else {
        g->rate_limit = 0;
    }
    if (max_running <= 0 || g->allowed == 0)
        return SB_OK;
    p[2] = sb__v_int(max_running);
    rc = sb__query(c, bus->sql->limit_running, p, 3, &rows, NULL, err);
    if (rc == SB_OK) {
        int64_t room = max_running - sb__rows_int(rows, 0, 0);
        if (room < g->allowed) {
            g->allowed = room > 0 ? (int)room : 0;
            g->by_running = 1;
        }
    }
    sb__rows_free(rows);
    return rc;
}

int sb__limit_end(sb_bus *bus, sb_conn *c, const char *queue,
                  const sb_limit_grant *g, size_t taken, sb_error *err)
{
    if (g->rate_limit == 0 || taken == 0)
        return SB_OK; /* the bucket refills from where it was */
    sb_value p[3] = {sb__v_text(queue), sb__v_int((int64_t)taken),
                     sb__v_int(g->now_us)};
    return sb__query(c, bus->sql->limit_take, p, 3, NULL, NULL, err);
}

int64_t sb__limit_wait_us(const sb_limit_grant *g, size_t taken)
{
    if (g->rate_limit == 0)
        return 0;
    int64_t left = g->milli_tokens - (int64_t)taken * 1000;
    if (left >= 1000)
        return 0;
    if (left < 0)
        left = 0;
    /* (1000 - left) thousandths of a token, a token every
     * rate_interval_ms / rate_limit. */
    int64_t us = (1000 - left) * g->rate_interval_ms / g->rate_limit;
    return us > 0 ? us : 1;
}
