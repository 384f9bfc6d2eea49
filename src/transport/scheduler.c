/* scheduler.c - one step of a scheduler (T41): the schedules whose next
 * occurrence has come publish what sb__schedule_due says is due, each
 * publish in the transaction that records the occurrence as run.
 *
 * Any number of schedulers may run at once, in any process on any host,
 * with no lock of their own. The record is a compare-and-set of the
 * schedule's row (last_us and anchor_us as read): of schedulers that read
 * the same row, one moves last_us and publishes; the others update no row
 * (their update waits for the winner's row lock, then finds last_us
 * moved) and roll back. The message id is a name-based UUID of the
 * schedule's name and the occurrence, so a publish that did reach the
 * table twice (a replaced schedule naming an occurrence again) is one
 * message while the first is queued (T9). */
#include "transport/schedules.h"

#include <stdio.h>
#include <string.h>

/* The namespace of the message ids: the 16 bytes of "sqlbus schedules". */
static const uint8_t id_namespace[16] = {'s', 'q', 'l', 'b', 'u', 's',
                                         ' ', 's', 'c', 'h', 'e', 'd',
                                         'u', 'l', 'e', 's'};

/* Rounds of one schedule in one step: sb__schedule_due publishes one
 * message a call, and its policies fold any outage into two calls. */
#define MAX_ROUNDS 16

/* The id of the message of `name`'s occurrence at `occurrence_us`. */
static void occurrence_id(const char *name, int64_t occurrence_us, char out[37])
{
    char key[32 + 201];
    int n =
        snprintf(key, sizeof key, "%lld/%s", (long long)occurrence_us, name);
    sb__uuid3(id_namespace, key, (size_t)n < sizeof key ? (size_t)n : 0, out);
}

/* `us` as RFC 3339 UTC with microseconds ("2026-03-29T01:00:00.000000Z"). */
static void format_instant(int64_t us, char *out, size_t cap)
{
    int64_t secs = us / 1000000, frac = us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    int64_t y = 0;
    int m = 0, d = 0;
    sb__civil_from_days(days, &y, &m, &d);
    snprintf(out, cap, "%04lld-%02d-%02dT%02d:%02d:%02d.%06lldZ", (long long)y,
             m, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60),
             (long long)frac);
}

/* One due row (schedule_due's columns), its timing built. */
typedef struct due_row {
    const char *name, *queue;
    const void *payload;
    size_t payload_len;
    const char *headers;
    sb_missed missed;
    int64_t anchor_us, last_us;
    sb_sched_timing t;
} due_row;

typedef struct settle_ctx {
    sb_bus *bus;
    const due_row *row;
    const sb_due *due;
    int64_t changed; /* rows the compare-and-set updated */
} settle_ctx;

/* The headers of the row with the schedule's own: its name, the
 * occurrence, and for missed ones folded into this message the last. */
static int message_headers(const due_row *row, const sb_due *d, char **out,
                           sb_error *err)
{
    char at[40], until[40];
    format_instant(d->occurrence_us, at, sizeof at);
    format_instant(d->missed_last_us, until, sizeof until);
    const char *kv[] = {
        "sb-schedule",
        row->name,
        "sb-schedule-occurrence",
        at,
        "sb-schedule-missed-until",
        d->missed && d->occurrence_us == d->missed_first_us ? until : NULL,
        NULL};
    return sb__headers_merge(row->headers, kv, out, err);
}

static int settle_tx(sb_conn *c, void *vctx, sb_error *err)
{
    settle_ctx *x = vctx;
    const due_row *row = x->row;
    const sb_due *d = x->due;
    int64_t next = d->next_us;
    sb_value p[5] = {sb__v_text(row->name), sb__v_int(d->last_us),
                     next < 0 ? sb__v_null() : sb__v_int(next),
                     sb__v_int(row->anchor_us), sb__v_int(row->last_us)};
    x->changed = 0;
    int rc = sb__query(c, x->bus->sql->schedule_settle, p, 5, NULL, &x->changed,
                       err);
    if (rc != SB_OK || x->changed == 0 || !d->publish)
        return rc;
    char *headers = NULL;
    rc = message_headers(row, d, &headers, err);
    if (rc != SB_OK)
        return rc;
    char ids[1][37];
    occurrence_id(row->name, d->occurrence_us, ids[0]);
    sb_outgoing m = {ids[0], row->payload, row->payload_len, headers, 0};
    int immediate = 0;
    rc = sb__publish_on(x->bus, c, row->queue, &m, 1, ids, &immediate, err);
    sb__free(headers);
    return rc;
}

/* Run one due schedule until nothing more is due at `now_us` or another
 * scheduler moved it. */
static int run_row(sb_bus *bus, due_row *row, int64_t now_us, int *published,
                   sb_error *err)
{
    for (int round = 0; round < MAX_ROUNDS; round++) {
        sb_due d;
        int rc = sb__schedule_due(&row->t.s, row->missed, &row->last_us, now_us,
                                  SB_SCHEDULE_GRACE_MS * 1000LL, &d, err);
        if (rc == SB_INVALID) { /* no occurrence before the year 10000 */
            memset(&d, 0, sizeof d);
            d.last_us = row->last_us;
            d.next_us = -1;
        } else if (rc != SB_OK) {
            return rc;
        }
        if (d.missed)
            sb__log(&bus->log, SB_LOG_INFO, "schedule",
                    "schedule %s: occurrences from %lld to %lld us missed "
                    "(%s)",
                    row->name, (long long)d.missed_first_us,
                    (long long)d.missed_last_us,
                    row->missed == SB_MISSED_ONCE ? "one message for them"
                                                  : "skipped");
        settle_ctx x = {bus, row, &d, 0};
        rc = sb__db_run_tx(bus->pool, NULL, settle_tx, &x, err);
        if (rc != SB_OK)
            return rc;
        if (x.changed == 0)
            return SB_OK; /* another scheduler ran it */
        if (d.publish) {
            (*published)++;
            sb__bus_wake_local(bus, row->queue);
        }
        row->last_us = d.last_us;
        if (d.next_us < 0 || d.next_us > now_us)
            return SB_OK;
    }
    return SB_OK;
}

typedef struct query_ctx {
    sb_bus *bus;
    const char *sql;
    const sb_value *p;
    size_t np;
    sb_rows *rows;
} query_ctx;

static int query_tx(sb_conn *c, void *vctx, sb_error *err)
{
    query_ctx *x = vctx;
    sb__rows_free(x->rows);
    x->rows = NULL;
    return sb__query(c, x->sql, x->p, x->np, &x->rows, NULL, err);
}

/* A row whose timing does not build (its zone gone from the tz database,
 * its file unreadable) is looked at again this much later. */
#define RETRY_BROKEN_US (60 * 1000000LL)

/* Row `r` of schedule_due into `row` (borrowing the rows), its timing
 * built. When the timing does not build, SB_NOTFOUND: logged, and the
 * row's next_us moved RETRY_BROKEN_US past `now_us` (nothing else), so
 * it is not due at every step. */
static int read_row(sb_bus *bus, const sb_rows *rows, size_t r, int64_t now_us,
                    due_row *row, sb_error *err)
{
    memset(row, 0, sizeof *row);
    row->name = sb__rows_text(rows, r, 0);
    row->queue = sb__rows_text(rows, r, 1);
    const char *missed = sb__rows_text(rows, r, 5);
    row->missed =
        missed && strcmp(missed, "once") == 0 ? SB_MISSED_ONCE : SB_MISSED_SKIP;
    const sb_value *pl = sb__rows_at(rows, r, 6);
    row->payload = pl->p;
    row->payload_len = pl->len;
    row->headers = sb__rows_text(rows, r, 7);
    row->anchor_us = sb__rows_int(rows, r, 8);
    row->last_us = sb__rows_int(rows, r, 9);
    sb_error why;
    int rc = sb__sched_timing(
        sb__rows_text(rows, r, 2), sb__rows_int(rows, r, 3),
        sb__rows_text(rows, r, 4), row->anchor_us, &row->t, &why);
    if (rc == SB_OK || rc == SB_NOMEM) {
        if (rc != SB_OK && err != NULL)
            *err = why;
        return rc;
    }
    sb__log(&bus->log, SB_LOG_WARN, "schedule",
            "schedule %s skipped for a minute: %s", row->name, why.message);
    sb_due later;
    memset(&later, 0, sizeof later);
    later.last_us = row->last_us;
    later.next_us = now_us + RETRY_BROKEN_US;
    settle_ctx x = {bus, row, &later, 0};
    rc = sb__db_run_tx(bus->pool, NULL, settle_tx, &x, err);
    return rc == SB_OK ? SB_NOTFOUND : rc;
}

int sb_schedule_run_due(sb_bus *bus, int64_t now_us, int *published,
                        int64_t *next_wake_us, sb_error *err)
{
    sb_error_clear(err);
    int count = 0;
    if (published != NULL)
        *published = 0;
    if (next_wake_us != NULL)
        *next_wake_us = -1;
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    if (now_us < SB_SCHED_MIN_US + SB_SCHEDULE_GRACE_MS * 1000LL ||
        now_us > SB_SCHED_MAX_US)
        return sb__err(err, SB_INVALID, "now_us",
                       "now_us must be an instant of the years 1 to 9999");
    int rc = sb__bus_ensure_schema(bus, err);
    sb_value now = sb__v_int(now_us);
    query_ctx q = {bus, bus->sql->schedule_due, &now, 1, NULL};
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, query_tx, &q, err);
    for (size_t r = 0; rc == SB_OK && r < q.rows->nrows; r++) {
        due_row row;
        int rrc = read_row(bus, q.rows, r, now_us, &row, err);
        if (rrc == SB_OK)
            rc = run_row(bus, &row, now_us, &count, err);
        else if (rrc != SB_NOTFOUND)
            rc = rrc;
        sb__sched_timing_free(&row.t);
    }
    sb__rows_free(q.rows);
    if (published != NULL)
        *published = count;
    query_ctx w = {bus, bus->sql->schedule_wake, NULL, 0, NULL};
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, query_tx, &w, err);
    if (rc == SB_OK && next_wake_us != NULL && w.rows->nrows > 0 &&
        sb__rows_at(w.rows, 0, 0)->type != SB_V_NULL)
        *next_wake_us = sb__rows_int(w.rows, 0, 0);
    sb__rows_free(w.rows);
    return rc;
}
