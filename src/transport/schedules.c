/* schedules.c - periodic jobs' definitions in {prefix}schedules (T41):
 * add or replace one (checked in full before anything is written), remove
 * one, list them. The scheduler that publishes their occurrences is
 * scheduler.c. */
#include "transport/schedules.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The first version's sb_schedule_def: through `start_us`. */
#define DEF_MIN_SIZE (offsetof(sb_schedule_def, start_us) + sizeof(int64_t))

int sb__sched_timing(const char *cron, int64_t interval_us, const char *tz_name,
                     int64_t anchor_us, sb_sched_timing *t, sb_error *err)
{
    memset(t, 0, sizeof *t);
    if (cron == NULL) {
        if (sb__every_check(interval_us, anchor_us, NULL) != SB_OK)
            return sb__err(err, SB_INVALID, "every_ms",
                           "every_ms must be 1000 (1 s) to %lld (366 days)",
                           (long long)(SB_EVERY_MAX_US / 1000));
        t->s.every_us = interval_us;
        t->s.anchor_us = anchor_us;
        return SB_OK;
    }
    int rc = sb__cron_parse(cron, &t->cron, err);
    if (rc != SB_OK)
        return rc;
    const char *zone = tz_name != NULL ? tz_name : "UTC";
    rc = sb__tz_load(NULL, zone, &t->tz, err);
    if (rc == SB_NOTFOUND)
        rc = sb__err(err, SB_INVALID, "time_zone",
                     "time_zone: unknown time zone \"%s\" (no such file in "
                     "the tz database)",
                     zone);
    if (rc != SB_OK)
        return rc;
    t->s.cron = &t->cron;
    t->s.tz = t->tz;
    return SB_OK;
}

void sb__sched_timing_free(sb_sched_timing *t)
{
    sb__tz_free(t->tz);
    t->tz = NULL;
}

int64_t sb__sched_next_or_none(const sb_sched_timing *t, int64_t after_us)
{
    int64_t next = -1;
    if (sb__schedule_next(&t->s, after_us, &next, NULL) != SB_OK)
        return -1;
    return next;
}

/* A schedule's name: T3's rules, named as what it is. */
static int check_name(const char *name, sb_error *err)
{
    int rc = sb__validate_name(name, 200, "name", "schedule name", err);
    if (rc == SB_OK && sb_validate_queue_name(name, NULL) != SB_OK)
        rc = sb__err(err, SB_INVALID, "name",
                     "schedule name must not start or end with white space "
                     "(here Unicode white space, such as U+00A0 or U+3000)");
    return rc;
}

/* Every field of `d` but the timing, which sb__sched_timing checks. */
static int check_def(const sb_bus *bus, const sb_schedule_def *d, sb_error *err)
{
    if (d->size < DEF_MIN_SIZE || d->size > 4096)
        return sb__err(err, SB_INVALID, "size",
                       "size must be sizeof(sb_schedule_def) (%zu to 4096; "
                       "got %zu)",
                       DEF_MIN_SIZE, d->size);
    int rc = check_name(d->name, err);
    if (rc == SB_OK)
        rc = sb_validate_queue_name(d->queue, err);
    if (rc != SB_OK)
        return rc;
    if (d->cron != NULL && d->every_ms != 0)
        return sb__err(err, SB_INVALID, "every_ms",
                       "a schedule has a cron expression or every_ms, not "
                       "both");
    if (d->cron == NULL && d->every_ms == 0)
        return sb__err(err, SB_INVALID, "cron",
                       "a schedule needs a cron expression or every_ms");
    if (d->cron == NULL && d->time_zone != NULL)
        return sb__err(err, SB_INVALID, "time_zone",
                       "time_zone applies to a cron expression; an interval "
                       "counts UTC durations");
    if (d->every_ms < 0 || d->every_ms > SB_EVERY_MAX_US / 1000)
        return sb__err(err, SB_INVALID, "every_ms",
                       "every_ms must be 1000 (1 s) to %lld (366 days)",
                       (long long)(SB_EVERY_MAX_US / 1000));
    if (d->time_zone != NULL &&
        (rc = sb__tz_name_check(d->time_zone, err)) != SB_OK)
        return rc;
    if (d->missed != SB_SCHEDULE_MISSED_SKIP &&
        d->missed != SB_SCHEDULE_MISSED_ONCE)
        return sb__err(err, SB_INVALID, "missed",
                       "missed must be SB_SCHEDULE_MISSED_SKIP or "
                       "SB_SCHEDULE_MISSED_ONCE (got %d)",
                       d->missed);
    if (d->payload == NULL && d->payload_len > 0)
        return sb__err(err, SB_INVALID, "payload",
                       "payload is NULL but payload_len is %zu",
                       d->payload_len);
    if (d->payload_len > bus->max_payload)
        return sb__err(err, SB_INVALID, "payload",
                       "payload is %zu bytes; max_payload_bytes is %llu",
                       d->payload_len, (unsigned long long)bus->max_payload);
    if (d->headers_json != NULL) {
        rc = sb__headers_validate_outgoing(d->headers_json,
                                           strlen(d->headers_json), err);
        if (rc != SB_OK && err != NULL)
            snprintf(err->field, sizeof err->field, "headers");
        if (rc != SB_OK)
            return rc;
    }
    if (d->start_us != 0 &&
        (d->start_us < SB_SCHED_MIN_US || d->start_us > SB_SCHED_MAX_US))
        return sb__err(err, SB_INVALID, "start_us",
                       "start_us must be 0 (now) or an instant of the years "
                       "1 to 9999");
    return SB_OK;
}

typedef struct put_ctx {
    sb_bus *bus;
    const sb_schedule_def *d;
    int64_t start_us, next_us;
} put_ctx;

static int put_tx(sb_conn *c, void *vctx, sb_error *err)
{
    put_ctx *x = vctx;
    const sb_schedule_def *d = x->d;
    sb_value p[12] = {
        sb__v_text(d->name),
        sb__v_text(d->queue),
        sb__v_text(d->cron),
        d->cron == NULL ? sb__v_int(d->every_ms * 1000) : sb__v_null(),
        d->cron == NULL ? sb__v_null()
                        : sb__v_text(d->time_zone ? d->time_zone : "UTC"),
        sb__v_blob(d->payload ? d->payload : "", d->payload_len),
        sb__v_text(d->headers_json ? d->headers_json : "{}"),
        sb__v_text(d->missed == SB_SCHEDULE_MISSED_ONCE ? "once" : "skip"),
        sb__v_int(x->start_us),
        sb__v_int(x->start_us),
        x->next_us < 0 ? sb__v_null() : sb__v_int(x->next_us),
        sb__v_int(sb__wall_us()),
    };
    return sb__query(c, x->bus->sql->schedule_put, p, 12, NULL, NULL, err);
}

int sb_schedule_put(sb_bus *bus, const sb_schedule_def *def, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || def == NULL)
        return sb__err(err, SB_INVALID, bus ? "def" : "bus",
                       "arguments must not be NULL");
    int rc = check_def(bus, def, err);
    if (rc != SB_OK)
        return rc;
    put_ctx x = {bus, def, def->start_us ? def->start_us : sb__wall_us(), -1};
    sb_sched_timing t;
    rc = sb__sched_timing(def->cron, def->every_ms * 1000, def->time_zone,
                          x.start_us, &t, err);
    if (rc == SB_OK)
        x.next_us = sb__sched_next_or_none(&t, x.start_us);
    sb__sched_timing_free(&t);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, put_tx, &x, err);
    return rc;
}

typedef struct remove_ctx {
    sb_bus *bus;
    const char *name;
    int64_t removed;
} remove_ctx;

static int remove_tx(sb_conn *c, void *vctx, sb_error *err)
{
    remove_ctx *x = vctx;
    sb_value p = sb__v_text(x->name);
    return sb__query(c, x->bus->sql->schedule_remove, &p, 1, NULL, &x->removed,
                     err);
}

int sb_schedule_remove(sb_bus *bus, const char *name, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    int rc = check_name(name, err);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    remove_ctx x = {bus, name, 0};
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, remove_tx, &x, err);
    if (rc == SB_OK && x.removed == 0)
        rc =
            sb__err(err, SB_NOTFOUND, "name", "no schedule named \"%s\"", name);
    return rc;
}

typedef struct list_ctx {
    sb_bus *bus;
    sb_rows *rows;
} list_ctx;

static int list_tx(sb_conn *c, void *vctx, sb_error *err)
{
    list_ctx *x = vctx;
    sb__rows_free(x->rows);
    x->rows = NULL;
    return sb__query(c, x->bus->sql->schedule_list, NULL, 0, &x->rows, NULL,
                     err);
}

/* Row `r` of schedule_list into `s`. */
static void read_info(const sb_rows *rows, size_t r, sb_schedule_info *s)
{
    const char *cron = sb__rows_text(rows, r, 2);
    const char *tz = sb__rows_text(rows, r, 4);
    const char *missed = sb__rows_text(rows, r, 5);
    s->size = sizeof *s;
    sb__strlcpy(s->name, sb__rows_text(rows, r, 0), sizeof s->name);
    sb__strlcpy(s->queue, sb__rows_text(rows, r, 1), sizeof s->queue);
    sb__strlcpy(s->cron, cron ? cron : "", sizeof s->cron);
    s->every_ms = cron ? 0 : sb__rows_int(rows, r, 3) / 1000;
    sb__strlcpy(s->time_zone, cron && tz ? tz : "", sizeof s->time_zone);
    s->missed = missed && strcmp(missed, "once") == 0 ? SB_SCHEDULE_MISSED_ONCE
                                                      : SB_SCHEDULE_MISSED_SKIP;
    s->payload_len = sb__rows_int(rows, r, 6);
    s->last_us = sb__rows_int(rows, r, 8);
    s->next_us = sb__rows_at(rows, r, 9)->type == SB_V_NULL
                     ? -1
                     : sb__rows_int(rows, r, 9);
    s->created_us = sb__rows_int(rows, r, 10);
    s->updated_us = sb__rows_int(rows, r, 11);
}

int sb_schedule_list(sb_bus *bus, sb_schedule_info ***out, size_t *n_out,
                     sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    list_ctx x = {bus, NULL};
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, list_tx, &x, err);
    size_t n = rc == SB_OK ? x.rows->nrows : 0;
    sb_schedule_info **list = NULL;
    if (n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        for (size_t i = 0; list != NULL && i < n; i++)
            read_info(x.rows, i, list[i]);
    }
    sb__rows_free(x.rows);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = n;
    return SB_OK;
}
