/* settle.c - ack, nak, renew and dead-letter, each fenced by the lease's
 * lock id (T16-T22). A fence that no longer matches is SB_LOST_LEASE and
 * changes nothing. */
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fenced(int rc, int64_t changes, const sb_msg *m, sb_error *err)
{
    if (rc == SB_OK && changes == 0)
        return sb__err(err, SB_LOST_LEASE, "lock_id",
                       "message %s: the lease %s is no longer held", m->id,
                       m->lock_id);
    return rc;
}

/* Whether `headers` may name sb-retry-of (case-insensitive), so the JSON
 * is parsed only for the few jobs that are retries. */
static int may_be_retry(const char *headers)
{
    static const char key[] = "sb-retry-of";
    for (const char *p = headers; p != NULL && *p; p++) {
        size_t i = 0;
        while (key[i] && (p[i] | 0x20) == key[i])
            i++;
        if (key[i] == '\0')
            return 1;
    }
    return 0;
}

/* E16: a retried job that succeeded confirms its retry with a row on the
 * dead-letter queue, written in the ack's transaction (so the ack and the
 * confirmation are never apart); the error store resolves the failed
 * message when it ingests the row. */
static int confirm_retry_on(sb_bus *bus, sb_conn *c, const sb_msg *m,
                            sb_error *err)
{
    if (!may_be_retry(m->headers))
        return SB_OK;
    /* Parsed first: an sb-retry-of lost to a failed allocation would let
     * the ack commit without its confirmation. */
    if (sb__msg_parse_headers(m) != SB_OK)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    const char *uid = sb_msg_header(m, "sb-retry-of");
    if (uid == NULL || uid[0] == '\0')
        return SB_OK;
    const char *kv[] = {"sb-retry-confirmed", "true", "sb-retry-of", uid, NULL};
    char *headers = NULL;
    int rc = sb__headers_merge(NULL, kv, &headers, err);
    char ids[1][37];
    sb__uuid7_at(ids[0], sb__wall_us() / 1000);
    sb_outgoing o = {ids[0], "", 0, headers, 0};
    int immediate = 0;
    if (rc == SB_OK)
        rc = sb__publish_on(bus, c, bus->dlq, &o, 1, ids, &immediate, err);
    sb__free(headers);
    return rc;
}

/* The ack's fenced delete alone, without E16's confirmation. */
static int remove_on(sb_bus *bus, sb_conn *c, const sb_msg *m, sb_error *err)
{
    sb_value p[2] = {sb__v_text(m->id), sb__v_text(m->lock_id)};
    int64_t changes = 0;
    int rc = sb__query(c, bus->sql->ack, p, 2, NULL, &changes, err);
    return fenced(rc, changes, m, err);
}

int sb__ack_on(sb_bus *bus, sb_conn *c, const sb_msg *m, sb_error *err)
{
    int rc = remove_on(bus, c, m, err);
    return rc == SB_OK ? confirm_retry_on(bus, c, m, err) : rc;
}

/* A copy of `s` capped at SB_MAX_ERROR_TEXT bytes without splitting a
 * UTF-8 sequence (the tail is what matters in error text, the head is
 * what matters in a message: keep the head). NULL in, NULL out. */
static char *capped(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s);
    if (n > SB_MAX_ERROR_TEXT)
        n = sb__utf8_cut(s, SB_MAX_ERROR_TEXT);
    return sb__strndup(s, n);
}

int sb__nak_on(sb_bus *bus, sb_conn *c, const sb_msg *m, int64_t delay_ms,
               const char *error_text, sb_error *err)
{
    char *text = capped(error_text);
    if (error_text != NULL && text == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_value p[5] = {sb__v_text(m->id), sb__v_text(m->lock_id),
                     sb__v_int(sb__bus_now_us(bus)), sb__v_int(delay_ms),
                     sb__v_text(text)};
    int64_t changes = 0;
    int rc = sb__query(c, bus->sql->nak, p, 5, NULL, &changes, err);
    sb__free(text);
    return fenced(rc, changes, m, err);
}

int sb__hand_back_on(sb_bus *bus, sb_conn *c, const sb_msg *m, sb_error *err)
{
    sb_value p[3] = {sb__v_text(m->id), sb__v_text(m->lock_id),
                     sb__v_int(sb__bus_now_us(bus))};
    int64_t changes = 0;
    int rc = sb__query(c, bus->sql->hand_back, p, 3, NULL, &changes, err);
    return fenced(rc, changes, m, err);
}

int sb__renew_on(sb_bus *bus, sb_conn *c, const sb_msg *m, int64_t lease_ms,
                 sb_error *err)
{
    sb_value p[4] = {sb__v_text(m->id), sb__v_text(m->lock_id),
                     sb__v_int(sb__bus_now_us(bus)), sb__v_int(lease_ms)};
    int64_t changes = 0;
    int rc = sb__query(c, bus->sql->renew, p, 4, NULL, &changes, err);
    return fenced(rc, changes, m, err);
}

const char *sb__failure_endpoint(const sb_bus *bus, const sb_failure *f)
{
    if (f != NULL &&
        f->size >= offsetof(sb_failure, endpoint) + sizeof f->endpoint &&
        f->endpoint != NULL && f->endpoint[0] != '\0')
        return f->endpoint;
    return bus->endpoint;
}

/* The dead-letter headers of T21, merged over the message's own. */
static int failure_headers(sb_bus *bus, const sb_msg *m, const sb_failure *f,
                           char **out, sb_error *err)
{
    char when[64], attempts[16];
    int64_t now = sb__wall_us();
    time_t secs = (time_t)(now / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (long long)(now % 1000000));
    snprintf(attempts, sizeof attempts, "%d", m->attempts);
    char *msg = capped(f ? f->exception_message : NULL);
    char *trace = capped(f ? f->stacktrace : NULL);
    /* A NULL copy would leave its header out of the dead letter. */
    if ((f && f->exception_message && msg == NULL) ||
        (f && f->stacktrace && trace == NULL)) {
        sb__free(msg);
        sb__free(trace);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    const char *kv[] = {"sb-dead-letter-reason",
                        f && f->reason ? f->reason : "dead-lettered",
                        "sb-failed-queue",
                        m->queue,
                        "sb-time-of-failure",
                        when,
                        "sb-processing-endpoint",
                        sb__failure_endpoint(bus, f),
                        "sb-host",
                        bus->host,
                        "sb-attempts",
                        attempts,
                        "sb-message-id",
                        m->id,
                        "sb-exception-type",
                        f ? f->exception_type : NULL,
                        "sb-exception-message",
                        msg,
                        "sb-exception-stacktrace",
                        trace,
                        NULL};
    int rc = sb__headers_merge(m->headers, kv, out, err);
    sb__free(msg);
    sb__free(trace);
    return rc;
}

int sb__dead_letter_on(sb_bus *bus, sb_conn *c, const sb_msg *m,
                       const sb_failure *f, int fence, sb_error *err)
{
    char *headers = NULL;
    int rc = failure_headers(bus, m, f, &headers, err);
    if (rc != SB_OK)
        return rc;
    char new_id[37];
    sb__uuid7_at(new_id, sb__wall_us() / 1000);
    const char *reason = f && f->reason ? f->reason : "dead-lettered";
    char *text = capped(f ? f->exception_message : NULL);
    if (f && f->exception_message && text == NULL) {
        sb__free(headers);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    sb_value p[8] = {
        sb__v_text(new_id),  sb__v_text(bus->dlq),
        sb__v_text(headers), sb__v_text(reason),
        sb__v_text(text),    sb__v_int(sb__bus_now_us(bus)),
        sb__v_text(m->id),   fence ? sb__v_text(m->lock_id) : sb__v_null()};
    int64_t changes = 0;
    rc = sb__query(c, bus->sql->dead_letter, p, 8, NULL, &changes, err);
    rc = fenced(rc, changes, m, err);
    if (rc == SB_OK) {
        /* The original goes in the same transaction (T21). */
        sb_value d[2] = {sb__v_text(m->id),
                         fence ? sb__v_text(m->lock_id) : sb__v_null()};
        rc = sb__query(c, bus->sql->delete_any, d, 2, NULL, &changes, err);
        rc = fenced(rc, changes, m, err);
    }
    sb__free(headers);
    sb__free(text);
    return rc;
}

typedef struct id_slot {
    const char *id;
    size_t i;
} id_slot;

static int by_id(const void *a, const void *b)
{
    return strcmp(((const id_slot *)a)->id, ((const id_slot *)b)->id);
}

/* Clear lost[i] for each msgs[i] whose id came back in `rows`: a sorted
 * copy and a binary search per row, as a batch holds hundreds. */
static int mark_returned(sb_msg *const *msgs, size_t n, sb_rows *rows,
                         int *lost, sb_error *err)
{
    id_slot *sorted = sb__calloc(n, sizeof *sorted);
    if (sorted == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        sorted[i].id = msgs[i]->id;
        sorted[i].i = i;
    }
    qsort(sorted, n, sizeof *sorted, by_id);
    for (size_t r = 0; r < rows->nrows; r++) {
        id_slot key = {sb__rows_text(rows, r, 0), 0};
        const id_slot *hit =
            key.id ? bsearch(&key, sorted, n, sizeof *sorted, by_id) : NULL;
        if (hit != NULL)
            lost[hit->i] = 0;
    }
    sb__free(sorted);
    return SB_OK;
}

/* A set-based statement over `msgs`, ready to run: $1 the ids as a
 * PostgreSQL array literal, $2 a JSON object from each id to its lock id;
 * the returned ids are the ones still fenced. Every lost[i] starts set. */
int sb__many_prepare(sb_bus *bus, const char *sql, sb_msg *const *msgs,
                     size_t n, int64_t lease_ms, int *lost, sb_many_call *mc,
                     sb_call *call, sb_error *err)
{
    sb__buf_init(&mc->ids, 8 + n * 37);
    sb__buf_init(&mc->locks, 8 + n * 80);
    mc->rows = NULL;
    sb__buf_puts(&mc->ids, "{");
    sb__buf_puts(&mc->locks, "{");
    for (size_t i = 0; i < n; i++) {
        const char *sep = i ? "," : "";
        sb__buf_puts(&mc->ids, sep);
        sb__buf_puts(&mc->ids, msgs[i]->id);
        sb__buf_puts(&mc->locks, sep);
        sb__buf_puts(&mc->locks, "\"");
        sb__buf_puts(&mc->locks, msgs[i]->id);
        sb__buf_puts(&mc->locks, "\":\"");
        sb__buf_puts(&mc->locks, msgs[i]->lock_id);
        sb__buf_puts(&mc->locks, "\"");
        lost[i] = 1;
    }
    sb__buf_puts(&mc->ids, "}");
    sb__buf_puts(&mc->locks, "}");
    int rc = mc->ids.failed ? mc->ids.failed : mc->locks.failed;
    if (rc != SB_OK) {
        sb__buf_free(&mc->ids);
        sb__buf_free(&mc->locks);
        return sb__err(err, rc, NULL, "out of memory");
    }
    mc->p[0] = sb__v_text(mc->ids.data);
    mc->p[1] = sb__v_text(mc->locks.data);
    mc->p[2] = sb__v_int(sb__bus_now_us(bus));
    mc->p[3] = sb__v_int(lease_ms);
    *call = (sb_call){sql, mc->p, lease_ms >= 0 ? 4 : 2, &mc->rows, NULL};
    return SB_OK;
}

int sb__many_finish(sb_many_call *mc, sb_msg *const *msgs, size_t n, int *lost,
                    int rc, sb_error *err)
{
    if (rc == SB_OK)
        rc = mark_returned(msgs, n, mc->rows, lost, err);
    sb__rows_free(mc->rows);
    mc->rows = NULL;
    sb__buf_free(&mc->ids);
    sb__buf_free(&mc->locks);
    return rc;
}

static int many_on(sb_bus *bus, sb_conn *c, const char *sql,
                   sb_msg *const *msgs, size_t n, int64_t lease_ms, int *lost,
                   sb_error *err)
{
    sb_many_call mc;
    sb_call call;
    int rc =
        sb__many_prepare(bus, sql, msgs, n, lease_ms, lost, &mc, &call, err);
    if (rc != SB_OK)
        return rc;
    rc =
        sb__query(c, call.sql, call.params, call.nparams, call.rows, NULL, err);
    return sb__many_finish(&mc, msgs, n, lost, rc, err);
}

int sb__remove_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs, size_t n,
                       int *lost, sb_error *err)
{
    if (n > 1 && bus->sql->ack_many != NULL)
        return many_on(bus, c, bus->sql->ack_many, msgs, n, -1, lost, err);
    for (size_t i = 0; i < n; i++) {
        int rc = remove_on(bus, c, msgs[i], err);
        lost[i] = rc == SB_LOST_LEASE;
        if (rc != SB_OK && rc != SB_LOST_LEASE)
            return rc;
    }
    return SB_OK;
}

int sb__needs_confirm(const sb_msg *m)
{
    return may_be_retry(m->headers);
}

int sb__ack_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs, size_t n,
                    int *lost, sb_error *err)
{
    int rc = sb__remove_many_on(bus, c, msgs, n, lost, err);
    for (size_t i = 0; rc == SB_OK && i < n; i++)
        if (!lost[i])
            rc = confirm_retry_on(bus, c, msgs[i], err);
    return rc;
}

int sb__renew_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs, size_t n,
                      int64_t lease_ms, int *lost, sb_error *err)
{
    if (n > 1 && bus->sql->renew_many != NULL)
        return many_on(bus, c, bus->sql->renew_many, msgs, n, lease_ms, lost,
                       err);
    for (size_t i = 0; i < n; i++) {
        int rc = sb__renew_on(bus, c, msgs[i], lease_ms, err);
        lost[i] = rc == SB_LOST_LEASE;
        if (rc != SB_OK && rc != SB_LOST_LEASE)
            return rc;
    }
    return SB_OK;
}

int sb__hand_back_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs,
                          size_t n, int *lost, sb_error *err)
{
    if (n > 1 && bus->sql->hand_back_many != NULL)
        return many_on(bus, c, bus->sql->hand_back_many, msgs, n, -1, lost,
                       err);
    for (size_t i = 0; i < n; i++) {
        int rc = sb__hand_back_on(bus, c, msgs[i], err);
        lost[i] = rc == SB_LOST_LEASE;
        if (rc != SB_OK && rc != SB_LOST_LEASE)
            return rc;
    }
    return SB_OK;
}

/* One-shot wrappers: each runs its statement in its own transaction,
 * retried on transient faults (fenced statements are safe to repeat). */
typedef struct settle_ctx {
    sb_bus *bus;
    const sb_msg *m;
    int op;
    int64_t ms;
    const char *text;
    const sb_failure *f;
} settle_ctx;

enum { OP_ACK, OP_NAK, OP_RENEW, OP_DEAD };

static int settle_tx(sb_conn *c, void *vctx, sb_error *err)
{
    settle_ctx *x = vctx;
    switch (x->op) {
    case OP_ACK: return sb__ack_on(x->bus, c, x->m, err);
    case OP_NAK: return sb__nak_on(x->bus, c, x->m, x->ms, x->text, err);
    case OP_RENEW: return sb__renew_on(x->bus, c, x->m, x->ms, err);
    default: return sb__dead_letter_on(x->bus, c, x->m, x->f, 1, err);
    }
}

/* What every settlement of one message asks first (clearing `err`): a
 * bus, and a message that was claimed. */
static int check_claimed(const sb_bus *bus, const sb_msg *m, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || m == NULL)
        return sb__err(err, SB_INVALID, bus ? "msg" : "bus",
                       "arguments must not be NULL");
    if (m->lock_id[0] == '\0')
        return sb__err(err, SB_MISUSE, "msg",
                       "message %s was not claimed (it has no lease)", m->id);
    return SB_OK;
}

static int settle(settle_ctx *x, sb_error *err)
{
    int rc = check_claimed(x->bus, x->m, err);
    if (rc != SB_OK)
        return rc;
    if (x->ms < 0 || x->ms > 86400000LL * 365)
        return sb__err(
            err, SB_INVALID, x->op == OP_RENEW ? "lease_ms" : "delay_ms",
            "must be 0 to 365 days in ms (got %lld)", (long long)x->ms);
    return sb__db_run_tx(x->bus->pool, NULL, settle_tx, x, err);
}

int sb_ack(sb_bus *bus, sb_tx *tx, const sb_msg *msg, sb_error *err)
{
    if (tx != NULL) {
        int rc = check_claimed(bus, msg, err);
        if (rc != SB_OK)
            return rc;
        return sb__count_tx_msg(tx, msg, SB_COUNT_ACKED,
                                sb__ack_on(bus, tx->conn, msg, err));
    }
    settle_ctx x = {bus, msg, OP_ACK, 0, NULL, NULL};
    return sb__count_msg(bus, msg, SB_COUNT_ACKED, settle(&x, err));
}

int sb_nak(sb_bus *bus, const sb_msg *msg, int64_t delay_ms,
           const char *error_text, sb_error *err)
{
    settle_ctx x = {bus, msg, OP_NAK, delay_ms, error_text, NULL};
    return sb__count_msg(bus, msg, SB_COUNT_NAKED, settle(&x, err));
}

int sb_renew(sb_bus *bus, const sb_msg *msg, int64_t lease_ms, sb_error *err)
{
    settle_ctx x = {bus, msg, OP_RENEW, lease_ms, NULL, NULL};
    if (lease_ms < 1)
        return sb__err(err, SB_INVALID, "lease_ms",
                       "lease must be at least 1 ms");
    return settle(&x, err);
}

typedef struct progress_ctx {
    sb_bus *bus;
    const sb_msg *m;
    char *text;
} progress_ctx;

static int progress_tx(sb_conn *c, void *vctx, sb_error *err)
{
    progress_ctx *x = vctx;
    sb_value p[3] = {sb__v_text(x->m->id), sb__v_text(x->m->lock_id),
                     sb__v_text(x->text)};
    int64_t changes = 0;
    int rc = sb__query(c, x->bus->sql->progress_set, p, 3, NULL, &changes, err);
    return fenced(rc, changes, x->m, err);
}

int sb__progress_check(const char *text, size_t len, const char *field,
                       sb_error *err)
{
    if (text == NULL && len > 0)
        return sb__err(err, SB_INVALID, field, "%s is NULL but len is %zu",
                       field, len);
    if (len > SB_MAX_PROGRESS)
        return sb__err(err, SB_INVALID, field,
                       "progress is at most %d bytes (got %zu)",
                       SB_MAX_PROGRESS, len);
    if (len > 0 && (!sb__utf8_valid(text, len) || memchr(text, 0, len)))
        return sb__err(err, SB_INVALID, field,
                       "progress must be UTF-8 text without NUL bytes");
    return SB_OK;
}

int sb_set_progress(sb_bus *bus, const sb_msg *msg, const char *text,
                    size_t len, sb_error *err)
{
    int rc = check_claimed(bus, msg, err);
    if (rc == SB_OK)
        rc = sb__progress_check(text, len, "text", err);
    if (rc != SB_OK)
        return rc;
    progress_ctx x = {bus, msg, sb__strndup(text ? text : "", len)};
    if (x.text == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    rc = sb__db_run_tx(bus->pool, NULL, progress_tx, &x, err);
    sb__free(x.text);
    return rc;
}

int sb_dead_letter(sb_bus *bus, const sb_msg *msg, const sb_failure *failure,
                   sb_error *err)
{
    settle_ctx x = {bus, msg, OP_DEAD, 0, NULL, failure};
    return sb__count_msg(bus, msg, SB_COUNT_DEAD, settle(&x, err));
}
