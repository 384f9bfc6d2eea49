/* publish.c - idempotent, delayed, batch and transactional publish
 * (T9-T13). Input is checked in full before anything is written, so bad
 * input never leaves a partial batch. */
#include "transport/transport.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MAX_BATCH 100000

static int check_msg(const sb_bus *bus, const sb_outgoing *m, size_t i,
                     char id[37], sb_error *err)
{
    char field[64];
    if (m->payload == NULL && m->payload_len > 0) {
        snprintf(field, sizeof field, "msgs[%zu].payload", i);
        return sb__err(err, SB_INVALID, field,
                       "payload is NULL but "
                       "payload_len is %zu",
                       m->payload_len);
    }
    if (m->payload_len > bus->max_payload) {
        snprintf(field, sizeof field, "msgs[%zu].payload", i);
        return sb__err(err, SB_INVALID, field,
                       "payload is %zu bytes; max_payload_bytes is %llu",
                       m->payload_len, (unsigned long long)bus->max_payload);
    }
    if (m->delay_ms < 0 || m->delay_ms > 100LL * 365 * 86400 * 1000) {
        snprintf(field, sizeof field, "msgs[%zu].delay_ms", i);
        return sb__err(err, SB_INVALID, field,
                       "delay must be 0 to 100 years in ms (got %lld)",
                       (long long)m->delay_ms);
    }
    if (m->headers_json != NULL) {
        int rc = sb__headers_validate_outgoing(m->headers_json,
                                               strlen(m->headers_json), err);
        if (rc != SB_OK) {
            if (err != NULL)
                snprintf(err->field, sizeof err->field, "msgs[%zu].headers", i);
            return rc;
        }
    }
    if (m->id != NULL) {
        if (sb__uuid_normalize(m->id, id) != SB_OK) {
            snprintf(field, sizeof field, "msgs[%zu].id", i);
            return sb__err(err, SB_INVALID, field,
                           "id must be a UUID (8-4-4-4-12 hex digits)");
        }
    } else {
        sb__uuid7_at(id, sb__wall_us() / 1000);
    }
    return SB_OK;
}

/* Chunks of rows sent in one round trip (sb__pipeline). */
#define PUBLISH_PIPE 8

/* sb_publish_ex's options, an entry a message (the _ex inserts). */
typedef struct ex_opts {
    int *prio;           /* T34 */
    int64_t *expires_ms; /* T40: 0 for none */
    sb_unique_opts u;    /* T38 */
    int any_prio;        /* some priority is not 0 */
    int any_key;         /* some message has a unique key */
} ex_opts;

/* `self_woken`: the caller wakes this bus's workers itself after the
 * commit, so the NOTIFY names this bus as its origin and their listeners
 * skip it. `commit`: the transaction is this publish's own. `ex`: the
 * messages' options, or NULL when every one has the defaults. */
static int insert_on(sb_bus *bus, sb_conn *c, const char *queue,
                     const sb_outgoing *msgs, const ex_opts *ex, size_t n,
                     char (*ids)[37], int *any_immediate, int self_woken,
                     int commit, sb_error *err)
{
    /* insert[] holds 1-, 10- and 100-row statements; use the largest that
     * fits, so at most 9 + 9 small statements follow the 100-row ones. */
    static const size_t chunk[3] = {100, 10, 1};
    const size_t width = ex != NULL ? SB_INSERT_EX_WIDTH : 4;
    sb_value stack_params[2 + SB_INSERT_EX_WIDTH * 100];
    const int64_t now_us = sb__bus_now_us(bus);
    size_t done = 0;
    int rc = SB_OK;
    /* The queue is flagged prioritized in the publish's transaction, so
     * no claim that sees the rows orders them by time alone. */
    sb_value mp[2] = {sb__v_text(queue), sb__v_int(now_us)};
    if (ex != NULL && ex->any_prio)
        rc = sb__query(c, bus->sql->mark_prioritized, mp, 2, NULL, NULL, err);
    if (rc == SB_OK && ex != NULL && ex->any_key)
        rc = sb__unique_check_on(bus, c, queue, &ex->u, n, ids, err);
    while (rc == SB_OK && done < n) {
        /* Up to PUBLISH_PIPE chunks, the last group with the wake-up and
         * the commit, each group one round trip on PostgreSQL. */
        int kind[PUBLISH_PIPE];
        size_t nch = 0, nvals = 0, at = done;
        while (nch < PUBLISH_PIPE && at < n) {
            int k = 0;
            while (n - at < chunk[k])
                k++;
            kind[nch++] = k;
            nvals += 2 + width * chunk[k];
            at += chunk[k];
        }
        sb_value *params = stack_params;
        if (nvals > sizeof stack_params / sizeof stack_params[0]) {
            params = sb__calloc(nvals, sizeof *params);
            if (params == NULL)
                return sb__err(err, SB_NOMEM, NULL, "out of memory");
        }
        sb_call calls[PUBLISH_PIPE + 1];
        sb_value *p = params;
        size_t row = done;
        for (size_t i = 0; i < nch; i++) {
            size_t rows = chunk[kind[i]];
            const char *sql = ex != NULL ? bus->sql->insert_ex[2 - kind[i]]
                                         : bus->sql->insert[2 - kind[i]];
            calls[i] = (sb_call){sql, p, 2 + width * rows, NULL, NULL};
            *p++ = sb__v_text(queue);
            *p++ = sb__v_int(now_us);
            for (size_t j = 0; j < rows; j++, row++) {
                const sb_outgoing *m = &msgs[row];
                *p++ = sb__v_text(ids[row]);
                *p++ = sb__v_blob(m->payload ? m->payload : "", m->payload_len);
                *p++ = sb__v_text(m->headers_json ? m->headers_json : "{}");
                *p++ = sb__v_int(m->delay_ms);
                if (ex != NULL) {
                    *p++ = sb__v_int(ex->prio[row]);
                    *p++ = ex->expires_ms[row] > 0
                               ? sb__v_int(ex->expires_ms[row])
                               : sb__v_null();
                    *p++ = ex->u.keys[row] != NULL ? sb__v_text(ex->u.keys[row])
                                                   : sb__v_null();
                }
                if (m->delay_ms == 0)
                    *any_immediate = 1;
            }
        }
        int last = at == n;
        /* Delivered at commit; PostgreSQL folds identical notifications of
         * one transaction into one, which is the debounce of T13. */
        char payload[256 + sizeof bus->origin]; /* queue: <= 200 bytes */
        snprintf(payload, sizeof payload, "%s%c%s", queue, SB_WAKE_ORIGIN_SEP,
                 bus->origin);
        sb_value np[2] = {sb__v_text(bus->channel),
                          sb__v_text(self_woken ? payload : queue)};
        if (last && *any_immediate && bus->sql->notify != NULL &&
            bus->notify >= 0)
            calls[nch++] = (sb_call){bus->sql->notify, np, 2, NULL, NULL};
        rc = sb__pipeline(c, calls, nch, last && commit, NULL, err);
        /* SQL Server: two transactions inserting one new id at once can
         * both pass NOT EXISTS; the loser's duplicate key aborts its
         * transaction, and running it again finds the row and skips it. */
        if (rc == SB_CONFLICT && bus->dialect == SB_DIALECT_MSSQL)
            rc = sb__err(err, SB_BUSY, NULL,
                         "publish raced another insert of the same id; "
                         "retried, it is a duplicate (T3)");
        if (params != stack_params)
            sb__free(params);
        done = at;
    }
    return rc;
}

/* For other modules' transactions: counted (S8) when the rows are
 * written, since their commit is out of sight; sb_publish_batch counts at
 * its own commit. */
int sb__publish_on(sb_bus *bus, sb_conn *c, const char *queue,
                   const sb_outgoing *msgs, size_t n, char (*ids)[37],
                   int *any_immediate, sb_error *err)
{
    return sb__count_publish(
        bus, NULL, queue, msgs, n,
        insert_on(bus, c, queue, msgs, NULL, n, ids, any_immediate, 0, 0, err));
}

typedef struct publish_ctx {
    sb_bus *bus;
    const char *queue;
    const sb_outgoing *msgs;
    const ex_opts *ex;
    size_t n;
    char (*ids)[37];
    int any_immediate;
} publish_ctx;

static int publish_tx(sb_conn *c, void *vctx, sb_error *err)
{
    publish_ctx *x = vctx;
    x->any_immediate = 0;
    /* Its own transaction: the last statements carry the commit. */
    return insert_on(x->bus, c, x->queue, x->msgs, x->ex, x->n, x->ids,
                     &x->any_immediate, 1, 1, err);
}

static void tx_note_queue(sb_tx *tx, const char *queue)
{
    for (int i = 0; i < tx->n_woken; i++)
        if (strcmp(tx->woken[i], queue) == 0)
            return;
    if (tx->n_woken < (int)(sizeof tx->woken / sizeof tx->woken[0])) {
        char *q = sb__strdup(queue);
        if (q != NULL) {
            tx->woken[tx->n_woken++] = q;
            return;
        }
    }
    tx->wake_all = 1;
}

/* The checks every publish makes before it looks at a message. */
static int check_call(sb_bus *bus, sb_tx *tx, const char *queue,
                      const void *msgs, size_t n, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    int rc = sb_validate_queue_name(queue, err);
    if (rc != SB_OK || n == 0)
        return rc;
    if (msgs == NULL)
        return sb__err(err, SB_INVALID, "msgs", "msgs must not be NULL");
    if (n > MAX_BATCH)
        return sb__err(err, SB_INVALID, "n",
                       "a batch holds at most %d messages (got %zu)", MAX_BATCH,
                       n);
    if (tx != NULL && tx->bus != bus)
        return sb__err(err, SB_MISUSE, "tx",
                       "the transaction belongs to another bus");
    return SB_OK;
}

/* After check_call: `n` >= 1 messages, `ex` NULL or one entry each. */
static int publish_all(sb_bus *bus, sb_tx *tx, const char *queue,
                       const sb_outgoing *msgs, const ex_opts *ex, size_t n,
                       char (*ids_out)[37], sb_error *err)
{
    int rc = SB_OK;
    char(*ids)[37] = ids_out;
    if (ids == NULL) {
        ids = sb__calloc(n, sizeof *ids);
        if (ids == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; rc == SB_OK && i < n; i++)
        rc = check_msg(bus, &msgs[i], i, ids[i], err);
    if (rc == SB_OK)
        rc = sb__bus_ensure_schema(bus, err);
    if (rc == SB_OK && tx != NULL) {
        int immediate = 0;
        rc = insert_on(bus, tx->conn, queue, msgs, ex, n, ids, &immediate, 1, 0,
                       err);
        rc = sb__count_publish(bus, tx, queue, msgs, n, rc);
        if (rc == SB_OK && immediate)
            tx_note_queue(tx, queue);
    } else if (rc == SB_OK) {
        publish_ctx x = {bus, queue, msgs, ex, n, ids, 0};
        rc = sb__db_run_tx(bus->pool, NULL, publish_tx, &x, err);
        rc = sb__count_publish(bus, NULL, queue, msgs, n, rc);
        if (rc == SB_OK && x.any_immediate)
            sb__bus_wake_local(bus, queue);
    }
    if (ids != ids_out)
        sb__free(ids);
    return rc;
}

int sb_publish_batch(sb_bus *bus, sb_tx *tx, const char *queue,
                     const sb_outgoing *msgs, size_t n, char (*ids_out)[37],
                     sb_error *err)
{
    int rc = check_call(bus, tx, queue, msgs, n, err);
    if (rc != SB_OK || n == 0)
        return rc;
    return publish_all(bus, tx, queue, msgs, NULL, n, ids_out, err);
}

/* The smallest sb_outgoing_ex a caller may pass: through `priority`;
 * members after it are read when `size` covers them. */
#define EX_MIN_SIZE (offsetof(sb_outgoing_ex, priority) + sizeof(int))
#define EX_COVERS(stride, member)                                              \
    ((stride) >=                                                               \
     offsetof(sb_outgoing_ex, member) + sizeof(((sb_outgoing_ex *)0)->member))

/* T38: message i's unique key and policy into `u`, checked. */
static int check_unique(const char *queue, const sb_outgoing_ex *m, size_t i,
                        int dlq, sb_unique_opts *u, sb_error *err)
{
    char field[64];
    if (m->unique_key == NULL)
        return SB_OK;
    snprintf(field, sizeof field, "msgs[%zu].unique_key", i);
    int rc = sb__unique_key_check(m->unique_key, field, err);
    if (rc == SB_OK && dlq)
        rc = sb__err(err, SB_INVALID, field,
                     "the dead-letter queue %s takes no unique keys", queue);
    if (rc != SB_OK)
        return rc;
    if (m->unique_policy < SB_UNIQUE_ACTIVE ||
        m->unique_policy > SB_UNIQUE_WINDOW) {
        snprintf(field, sizeof field, "msgs[%zu].unique_policy", i);
        return sb__err(err, SB_INVALID, field,
                       "unique_policy must be SB_UNIQUE_ACTIVE (0), "
                       "SB_UNIQUE_QUEUED (1) or SB_UNIQUE_WINDOW (2) (got %d)",
                       m->unique_policy);
    }
    int64_t w = m->unique_window_ms;
    int window = m->unique_policy == SB_UNIQUE_WINDOW;
    if ((window && (w < 1 || w > SB_TTL_MAX_MS)) || (!window && w != 0)) {
        snprintf(field, sizeof field, "msgs[%zu].unique_window_ms", i);
        return sb__err(err, SB_INVALID, field,
                       window ? "a window is 1 ms to 100 years (got %lld)"
                              : "unique_window_ms is for SB_UNIQUE_WINDOW only "
                                "(got %lld)",
                       (long long)w);
    }
    u->keys[i] = m->unique_key;
    u->policy[i] = m->unique_policy;
    u->window_ms[i] = w;
    return SB_OK;
}

/* Message i's options into `ex`, checked. */
static int check_ex(const sb_bus *bus, const char *queue,
                    const sb_outgoing_ex *m, size_t stride, size_t i,
                    ex_opts *ex, sb_error *err)
{
    char field[64];
    if (m->size != stride) {
        snprintf(field, sizeof field, "msgs[%zu].size", i);
        return sb__err(err, SB_INVALID, field,
                       "every message of a batch has the same size (%zu; "
                       "got %zu)",
                       stride, m->size);
    }
    int prio = m->priority;
    int64_t expires = EX_COVERS(stride, expires_in_ms) ? m->expires_in_ms : 0;
    int dlq = strcmp(queue, bus->dlq) == 0;
    if (prio < SB_PRIORITY_MIN || prio > SB_PRIORITY_MAX) {
        snprintf(field, sizeof field, "msgs[%zu].priority", i);
        return sb__err(err, SB_INVALID, field,
                       "priority must be %d to %d (got %d)", SB_PRIORITY_MIN,
                       SB_PRIORITY_MAX, prio);
    }
    if (prio != 0 && dlq) {
        /* Ingestion claims the dead-letter queue in time order, with
         * priority 0: a letter with another would never be read. */
        snprintf(field, sizeof field, "msgs[%zu].priority", i);
        return sb__err(err, SB_INVALID, field,
                       "the dead-letter queue %s takes no priority (got %d)",
                       queue, prio);
    }
    if (expires < 0 || expires > SB_TTL_MAX_MS) {
        snprintf(field, sizeof field, "msgs[%zu].expires_in_ms", i);
        return sb__err(err, SB_INVALID, field,
                       "expires_in_ms must be 1 ms to 100 years, or 0 for "
                       "never (got %lld)",
                       (long long)expires);
    }
    if (expires > 0 && expires <= m->msg.delay_ms) {
        snprintf(field, sizeof field, "msgs[%zu].expires_in_ms", i);
        return sb__err(err, SB_INVALID, field,
                       "the message would expire before it is due: "
                       "expires_in_ms (%lld) must be longer than delay_ms "
                       "(%lld)",
                       (long long)expires, (long long)m->msg.delay_ms);
    }
    if (expires > 0 && dlq) {
        snprintf(field, sizeof field, "msgs[%zu].expires_in_ms", i);
        return sb__err(err, SB_INVALID, field,
                       "dead letters do not expire (the error store's "
                       "retention removes them)");
    }
    int rc = EX_COVERS(stride, unique_window_ms)
                 ? check_unique(queue, m, i, dlq, &ex->u, err)
                 : SB_OK;
    if (rc != SB_OK)
        return rc;
    ex->any_key = ex->any_key || ex->u.keys[i] != NULL;
    ex->prio[i] = prio;
    ex->expires_ms[i] = expires;
    ex->any_prio = ex->any_prio || prio != 0;
    return SB_OK;
}

int sb_publish_ex(sb_bus *bus, sb_tx *tx, const char *queue,
                  const sb_outgoing_ex *msgs, size_t n, char (*ids_out)[37],
                  sb_error *err)
{
    int rc = check_call(bus, tx, queue, msgs, n, err);
    if (rc != SB_OK || n == 0)
        return rc;
    size_t stride = msgs[0].size;
    if (stride < EX_MIN_SIZE || stride > 4096)
        return sb__err(err, SB_INVALID, "msgs[0].size",
                       "size must be sizeof(sb_outgoing_ex) (%zu to 4096; "
                       "got %zu)",
                       EX_MIN_SIZE, stride);
    sb_outgoing *plain = sb__calloc(n, sizeof *plain);
    ex_opts ex = {sb__calloc(n, sizeof *ex.prio),
                  sb__calloc(n, sizeof *ex.expires_ms),
                  {sb__calloc(n, sizeof *ex.u.keys),
                   sb__calloc(n, sizeof *ex.u.policy),
                   sb__calloc(n, sizeof *ex.u.window_ms)},
                  0,
                  0};
    if (plain == NULL || ex.prio == NULL || ex.expires_ms == NULL ||
        ex.u.keys == NULL || ex.u.policy == NULL || ex.u.window_ms == NULL)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    int any = 0;
    for (size_t i = 0; rc == SB_OK && i < n; i++) {
        const sb_outgoing_ex *m =
            (const sb_outgoing_ex *)(const void *)((const char *)msgs +
                                                   i * stride);
        rc = check_ex(bus, queue, m, stride, i, &ex, err);
        plain[i] = m->msg;
        any = any || ex.prio[i] != 0 || ex.expires_ms[i] != 0 ||
              ex.u.keys[i] != NULL;
    }
    if (rc == SB_OK)
        rc = publish_all(bus, tx, queue, plain, any ? &ex : NULL, n, ids_out,
                         err);
    sb__free(plain);
    sb__free(ex.prio);
    sb__free(ex.expires_ms);
    sb__free(ex.u.keys);
    sb__free(ex.u.policy);
    sb__free(ex.u.window_ms);
    return rc;
}

int sb_publish(sb_bus *bus, sb_tx *tx, const char *queue,
               const sb_outgoing *msg, char id_out[37], sb_error *err)
{
    char ids[1][37];
    int rc = sb_publish_batch(bus, tx, queue, msg, msg ? 1 : 0, ids, err);
    if (msg == NULL && rc == SB_OK)
        rc = sb__err(err, SB_INVALID, "msg", "msg must not be NULL");
    if (rc == SB_OK && id_out != NULL)
        memcpy(id_out, ids[0], 37);
    return rc;
}
