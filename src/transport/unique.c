/* unique.c - unique keys (T38): before a publish inserts its rows, each
 * keyed message's key is locked for the transaction (PostgreSQL's
 * advisory lock, SQL Server's application lock, SQLite's one writer) and
 * looked up; a key held under the message's policy refuses the whole
 * batch with SB_CONFLICT naming the message that holds it. A key's
 * window (SB_UNIQUE_WINDOW) is a row of {prefix}unique_keys, pruned by
 * the expiry sweep through the index on its end (`until`), so the sweep
 * that runs every second reads only the windows that ended. Messages
 * without a key take none of these steps. */
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sb__unique_key_check(const char *key, const char *field, sb_error *err)
{
    size_t len = strlen(key);
    if (len == 0 || len > SB_UNIQUE_KEY_MAX)
        return sb__err(err, SB_INVALID, field,
                       "a unique key is 1 to %d bytes (got %zu)",
                       SB_UNIQUE_KEY_MAX, len);
    if (!sb__utf8_valid(key, len))
        return sb__err(err, SB_INVALID, field,
                       "a unique key is UTF-8 text (got invalid bytes)");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
            return sb__err(err, SB_INVALID, field,
                           "a unique key has no control characters (byte "
                           "%zu is 0x%02x)",
                           i, (unsigned)(unsigned char)key[i]);
    return SB_OK;
}

/* The lock of (queue, key): 64 bits of their MD5, the same in every
 * process. */
static int64_t key_hash(const char *queue, const char *key)
{
    uint8_t d[16];
    sb__md5_concat(queue, strlen(queue) + 1, key, strlen(key), d);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h << 8 | d[i];
    return (int64_t)(h >> 1); /* positive: the same text on every backend */
}

typedef struct keyed {
    int64_t hash;
    const char *key;
    size_t i; /* the message's index in its batch */
} keyed;

static int by_hash(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    int c = strcmp(x->key, y->key);
    if (c != 0)
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

static const char *policy_name(int policy)
{
    return policy == SB_UNIQUE_QUEUED   ? "queued"
           : policy == SB_UNIQUE_WINDOW ? "window"
                                        : "active";
}

static int held(sb_error *err, const char *queue, const sb_unique_opts *u,
                size_t i, const char *holder)
{
    char field[64];
    snprintf(field, sizeof field, "msgs[%zu].unique_key", i);
    return sb__err(err, SB_CONFLICT, field,
                   "unique key \"%s\" of queue %s is held by message %s "
                   "(policy %s)",
                   u->keys[i], queue, holder, policy_name(u->policy[i]));
}

/* The id of a message or window holding message i's key, into `holder`
 * ("" when none). */
static int find_holder(sb_bus *bus, sb_conn *c, const char *queue,
                       const sb_unique_opts *u, size_t i, char holder[37],
                       sb_error *err)
{
    int64_t now = sb__bus_now_us(bus);
    sb_value p[4] = {sb__v_text(queue), sb__v_text(u->keys[i]), sb__v_int(now),
                     sb__v_int(u->policy[i] == SB_UNIQUE_QUEUED)};
    holder[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        const char *sql =
            pass == 0 ? bus->sql->unique_holder : bus->sql->unique_window_get;
        if (pass == 1 && u->policy[i] != SB_UNIQUE_WINDOW)
            break;
        sb_rows *rows = NULL;
        int rc = sb__query(c, sql, p, pass == 0 ? 4 : 3, &rows, NULL, err);
        if (rc == SB_OK && rows->nrows > 0) {
            const char *id = sb__rows_text(rows, 0, 0);
            if (id != NULL && sb__uuid_normalize(id, holder) != SB_OK)
                holder[0] = '\0';
        }
        sb__rows_free(rows);
        if (rc != SB_OK || holder[0] != '\0')
            return rc;
    }
    return SB_OK;
}

int sb__unique_check_on(sb_bus *bus, sb_conn *c, const char *queue,
                        const sb_unique_opts *u, size_t n, char (*ids)[37],
                        sb_error *err)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += u->keys[i] != NULL;
    keyed *k = sb__calloc(m, sizeof *k);
    if (k == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (u->keys[i] != NULL)
            k[m++] = (keyed){key_hash(queue, u->keys[i]), u->keys[i], i};
    /* One order of locks for every batch: no two wait for each other. */
    qsort(k, m, sizeof *k, by_hash);
    int rc = SB_OK;
    for (size_t j = 0; rc == SB_OK && j < m; j++) {
        size_t i = k[j].i;
        if (j > 0 && strcmp(k[j - 1].key, k[j].key) == 0) {
            /* The batch's earlier message holds it (once stored), unless
             * it is this one again (T9: published once). */
            if (strcmp(ids[k[j - 1].i], ids[i]) != 0)
                rc = held(err, queue, u, i, ids[k[j - 1].i]);
            continue;
        }
        sb_value h = sb__v_int(k[j].hash);
        if (bus->sql->unique_lock != NULL &&
            (j == 0 || k[j - 1].hash != k[j].hash))
            rc = sb__query(c, bus->sql->unique_lock, &h, 1, NULL, NULL, err);
        char holder[37];
        if (rc == SB_OK)
            rc = find_holder(bus, c, queue, u, i, holder, err);
        if (rc == SB_OK && holder[0] != '\0' && strcmp(holder, ids[i]) != 0)
            rc = held(err, queue, u, i, holder);
        if (rc == SB_OK && u->policy[i] == SB_UNIQUE_WINDOW &&
            holder[0] == '\0') {
            sb_value p[5] = {sb__v_text(queue), sb__v_text(u->keys[i]),
                             sb__v_text(ids[i]), sb__v_int(u->window_ms[i]),
                             sb__v_int(sb__bus_now_us(bus))};
            rc = sb__query(c, bus->sql->unique_window_put, p, 5, NULL, NULL,
                           err);
        }
    }
    sb__free(k);
    return rc;
}

typedef struct prune_ctx {
    sb_bus *bus;
    size_t max;
} prune_ctx;

static int prune_tx(sb_conn *c, void *vctx, sb_error *err)
{
    prune_ctx *x = vctx;
    sb_value p[2] = {sb__v_int(sb__bus_now_us(x->bus)),
                     sb__v_int((int64_t)x->max)};
    return sb__query(c, x->bus->sql->unique_prune, p, 2, NULL, NULL, err);
}

int sb__unique_prune(sb_bus *bus, size_t max, sb_error *err)
{
    prune_ctx x = {bus, max};
    return sb__db_run_tx(bus->pool, NULL, prune_tx, &x, err);
}
