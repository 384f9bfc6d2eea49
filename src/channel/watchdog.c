/* watchdog.c - listing recovery registrations with their state and the
 * stale-registration watchdog (C22). Both run on the bus alone, so a tool
 * can inspect registrations without opening a channel and its threads. */
#include "channel/channel.h"

#include <string.h>

#define DEFAULT_STALE_MS (24LL * 3600000)
#define MAX_STALE_MS (3650LL * 86400000)
#define DEFAULT_LIMIT 1000
#define MAX_LIMIT 10000
#define PAGE 256       /* rows read per query */
#define LOGGED_MAX 100 /* stale registrations the watchdog names */

static int check_stale_after(int64_t ms, sb_error *err)
{
    if (ms < 0 || ms > MAX_STALE_MS)
        return sb__err(err, SB_INVALID, "stale_after_ms",
                       "stale_after_ms must be 0 (24 h) to %lld (3650 days)",
                       (long long)MAX_STALE_MS);
    return SB_OK;
}

static int check_query(const sb_registration_query *q, sb_error *err)
{
    if (q->size != 0 && q->size < sizeof *q)
        return sb__err(err, SB_INVALID, "size",
                       "sb_registration_query.size is smaller than any "
                       "version");
    int rc = check_stale_after(q->stale_after_ms, err);
    if (rc != SB_OK)
        return rc;
    unsigned all = SB_REG_BIT(SB_REG_OUTSTANDING) | SB_REG_BIT(SB_REG_STALE) |
                   SB_REG_BIT(SB_REG_ORPHANED) | SB_REG_BIT(SB_REG_DISPATCHED);
    if ((q->states & ~all) != 0)
        return sb__err(err, SB_INVALID, "states",
                       "states must be 0 (all) or SB_REG_BIT()s of "
                       "enum sb_registration_state (got 0x%x)",
                       q->states);
    if (q->limit > MAX_LIMIT)
        return sb__err(err, SB_INVALID, "limit",
                       "limit must be 0 (%d) to %d (got %zu)", DEFAULT_LIMIT,
                       MAX_LIMIT, q->limit);
    if (q->after_correlation_id == NULL) {
        if (q->after_registration_id != NULL || q->after_registered_at_us)
            return sb__err(err, SB_INVALID, "after_correlation_id",
                           "the cursor needs after_correlation_id with "
                           "after_registered_at_us and "
                           "after_registration_id");
        return SB_OK;
    }
    rc = sb__validate_name(q->after_correlation_id, 400, "after_correlation_id",
                           "correlation id", err);
    if (rc != SB_OK)
        return rc;
    char reg[37];
    if (q->after_registration_id == NULL ||
        sb__uuid_normalize(q->after_registration_id, reg) != SB_OK)
        return sb__err(err, SB_INVALID, "after_registration_id",
                       "after_registration_id must be the UUID of the "
                       "cursor's registration");
    if (q->after_registered_at_us < 0)
        return sb__err(err, SB_INVALID, "after_registered_at_us",
                       "after_registered_at_us must not be negative");
    return SB_OK;
}

/* The channel's statements for `bus`, its tables created when the bus
 * creates its schema. Free with sb__channel_sql_free. */
static int open_sql(sb_bus *bus, sb_channel_sql *sql, sb_error *err)
{
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc == SB_OK)
        rc = sb__channel_sql_new(bus->dialect, bus->prefix, sql, err);
    if (rc == SB_OK) {
        rc = sb__channel_ensure_schema(bus, sql, err);
        if (rc != SB_OK)
            sb__channel_sql_free(sql);
    }
    return rc;
}

static int run_query(sb_bus *bus, const char *sql, const sb_value *p, size_t n,
                     sb_rows **rows, sb_error *err)
{
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    rc = sb__query(c, sql, p, n, rows, NULL, err);
    sb__pool_release(bus->pool, c);
    return rc;
}

static void from_row(const sb_rows *rows, size_t r, sb_registration *out)
{
    const sb_value *ctx = sb__rows_at(rows, r, 3);
    out->correlation_id = sb__rows_text(rows, r, 0);
    out->registration_id = sb__rows_text(rows, r, 1);
    out->handler = sb__rows_text(rows, r, 2);
    out->context = ctx->type == SB_V_NULL ? NULL : ctx->p;
    out->context_len = ctx->type == SB_V_NULL ? 0 : ctx->len;
    out->registered_at_us = sb__rows_int(rows, r, 4);
    out->expires_at_us = sb__rows_int(rows, r, 5);
    out->dispatched_at_us = sb__rows_int(rows, r, 6);
    out->live = sb__rows_int(rows, r, 7) != 0;
    out->state = (int)sb__rows_int(rows, r, 8);
}

/* The keyset cursor between pages (the last row listed). */
typedef struct cursor {
    int64_t at_us;
    char *corr; /* owned */
    char reg[37];
} cursor;

static int cursor_set(cursor *k, const sb_registration *r)
{
    char *corr = sb__strdup(r->correlation_id);
    if (corr == NULL)
        return SB_NOMEM;
    sb__free(k->corr);
    k->corr = corr;
    k->at_us = r->registered_at_us;
    sb__strlcpy(k->reg, r->registration_id, sizeof k->reg);
    return SB_OK;
}

/* List with validated arguments and prepared statements (see
 * sb_recovery_registrations). */
static int list(sb_bus *bus, const sb_channel_sql *sql,
                const sb_registration_query *q, sb_registration_fn fn,
                void *user, sb_error *err)
{
    /* Before every row: ids are never empty and times are after 1970. */
    cursor k = {0, NULL, "00000000-0000-0000-0000-000000000000"};
    if (q->after_correlation_id != NULL) {
        k.at_us = q->after_registered_at_us;
        sb__uuid_normalize(q->after_registration_id, k.reg);
    }
    k.corr = sb__strdup(q->after_correlation_id ? q->after_correlation_id : "");
    if (k.corr == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    int64_t stale_ms = q->stale_after_ms ? q->stale_after_ms : DEFAULT_STALE_MS;
    size_t limit = q->limit ? q->limit : DEFAULT_LIMIT;
    size_t done = 0;
    int rc = SB_OK, stop = 0;
    while (rc == SB_OK && !stop && done < limit) {
        size_t want = limit - done < PAGE ? limit - done : PAGE;
        sb_value p[7] = {sb__v_int(sb__bus_now_us(bus)),
                         sb__v_int(k.at_us),
                         sb__v_text(k.corr),
                         sb__v_text(k.reg),
                         sb__v_int(stale_ms),
                         sb__v_int(q->states),
                         sb__v_int((int64_t)want)};
        sb_rows *rows = NULL;
        rc = run_query(bus, sql->list_registrations, p, 7, &rows, err);
        size_t n = rc == SB_OK ? rows->nrows : 0;
        for (size_t r = 0; r < n && !stop; r++) {
            sb_registration reg;
            from_row(rows, r, &reg);
            done++;
            stop = fn(&reg, user) != 0;
            if (!stop && r + 1 == n && cursor_set(&k, &reg) != SB_OK)
                rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        }
        sb__rows_free(rows);
        if (n < want)
            break;
    }
    sb__free(k.corr);
    return rc;
}

int sb_recovery_registrations(sb_bus *bus, const sb_registration_query *q,
                              sb_registration_fn fn, void *user, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || fn == NULL)
        return sb__err(err, SB_INVALID, bus ? "fn" : "bus",
                       "arguments must not be NULL");
    sb_registration_query z;
    memset(&z, 0, sizeof z);
    int rc = check_query(q ? q : &z, err);
    sb_channel_sql sql;
    if (rc == SB_OK)
        rc = open_sql(bus, &sql, err);
    if (rc != SB_OK)
        return rc;
    rc = list(bus, &sql, q ? q : &z, fn, user, err);
    sb__channel_sql_free(&sql);
    return rc;
}

static int log_stale(const sb_registration *r, void *user)
{
    sb_bus *bus = user;
    int64_t age_s = (sb__wall_us() - r->registered_at_us) / 1000000;
    sb__log(&bus->log, SB_LOG_WARN, "recovery",
            "stale registration %s of correlation id %s (handler %s): "
            "registered %llds ago, no live waiter, no reply dispatched",
            r->registration_id, r->correlation_id,
            r->handler ? r->handler : "none", (long long)age_s);
    return 0;
}

/* The statements, for a call taking `stale_after_ms` (checked). */
static int open_stale(sb_bus *bus, int64_t stale_after_ms, sb_channel_sql *sql,
                      sb_error *err)
{
    int rc = check_stale_after(stale_after_ms, err);
    return rc == SB_OK ? open_sql(bus, sql, err) : rc;
}

/* `stmt` with $1 now, $2 the STALE threshold (0 = 24 h). */
static int run_stale(sb_bus *bus, const char *stmt, int64_t stale_after_ms,
                     sb_rows **rows, sb_error *err)
{
    sb_value p[2] = {
        sb__v_int(sb__bus_now_us(bus)),
        sb__v_int(stale_after_ms ? stale_after_ms : DEFAULT_STALE_MS)};
    return run_query(bus, stmt, p, 2, rows, err);
}

int sb_recovery_watchdog(sb_bus *bus, int64_t stale_after_ms,
                         int64_t *stale_count, sb_error *err)
{
    sb_error_clear(err);
    if (stale_count != NULL)
        *stale_count = 0;
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    sb_channel_sql sql;
    int rc = open_stale(bus, stale_after_ms, &sql, err);
    if (rc != SB_OK)
        return rc;
    int64_t stale_ms = stale_after_ms ? stale_after_ms : DEFAULT_STALE_MS;
    sb_rows *rows = NULL;
    rc = run_stale(bus, sql.count_stale, stale_ms, &rows, err);
    int64_t n = rc == SB_OK && rows->nrows == 1 ? sb__rows_int(rows, 0, 0) : 0;
    sb__rows_free(rows);
    if (rc == SB_OK && n > 0) {
        /* Bounded: name the oldest, count the rest. */
        sb_registration_query q;
        memset(&q, 0, sizeof q);
        q.size = sizeof q;
        q.stale_after_ms = stale_ms;
        q.states = SB_REG_BIT(SB_REG_STALE);
        q.limit = LOGGED_MAX;
        rc = list(bus, &sql, &q, log_stale, bus, err);
        if (rc == SB_OK && n > LOGGED_MAX)
            sb__log(&bus->log, SB_LOG_WARN, "recovery",
                    "%lld stale registrations in all (older than %lld ms "
                    "with no live waiter); the oldest %d are named above",
                    (long long)n, (long long)stale_ms, LOGGED_MAX);
    }
    sb__channel_sql_free(&sql);
    if (rc == SB_OK && stale_count != NULL)
        *stale_count = n;
    return rc;
}

int sb_recovery_counts(sb_bus *bus, int64_t stale_after_ms,
                       sb_registration_counts *out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    int rc = sb__out_struct(out, sizeof *out, "sb_registration_counts", err);
    sb_channel_sql sql;
    if (rc == SB_OK)
        rc = open_stale(bus, stale_after_ms, &sql, err);
    if (rc != SB_OK)
        return rc;
    sb_rows *rows = NULL;
    rc = run_stale(bus, sql.count_states, stale_after_ms, &rows, err);
    sb__channel_sql_free(&sql);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        int64_t st = sb__rows_int(rows, r, 0), n = sb__rows_int(rows, r, 2);
        if (st < 0 || st > SB_REG_DISPATCHED)
            continue;
        out->by_state[st] += n;
        if (st != SB_REG_DISPATCHED)
            continue;
        if (out->n_handlers == SB_REG_COUNT_HANDLERS) {
            out->dispatched_other += n;
            continue;
        }
        sb_handler_count *h = &out->dispatched[out->n_handlers++];
        const char *name = sb__rows_text(rows, r, 1);
        sb__strlcpy(h->handler, name ? name : "", sizeof h->handler);
        h->n = n;
    }
    sb__rows_free(rows);
    return rc;
}

const char *sb_registration_correlation_id(const sb_registration *r)
{
    return r->correlation_id;
}

const char *sb_registration_id(const sb_registration *r)
{
    return r->registration_id;
}

const char *sb_registration_handler(const sb_registration *r)
{
    return r->handler;
}

const void *sb_registration_context(const sb_registration *r, size_t *len)
{
    if (len != NULL)
        *len = r->context_len;
    return r->context;
}

int64_t sb_registration_registered_at_us(const sb_registration *r)
{
    return r->registered_at_us;
}

int64_t sb_registration_expires_at_us(const sb_registration *r)
{
    return r->expires_at_us;
}

int64_t sb_registration_dispatched_at_us(const sb_registration *r)
{
    return r->dispatched_at_us;
}

int sb_registration_state(const sb_registration *r)
{
    return r->state;
}

int sb_registration_live(const sb_registration *r)
{
    return r->live;
}
