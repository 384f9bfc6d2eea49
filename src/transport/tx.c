/* tx.c - caller-held transactions (T12): the caller's own writes and the
 * messages it publishes commit or roll back together. */
#include "transport/transport.h"

int sb_tx_begin(sb_bus *bus, sb_tx **out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    sb_tx *tx = sb__calloc(1, sizeof *tx);
    if (tx == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    tx->bus = bus;
    rc = sb__pool_acquire(bus->pool, 30000, &tx->conn, err);
    if (rc == SB_OK)
        rc = sb__begin(tx->conn, err);
    if (rc != SB_OK) {
        sb__pool_release(bus->pool, tx->conn);
        sb__free(tx);
        return rc;
    }
    *out = tx;
    return SB_OK;
}

static void tx_free(sb_tx *tx)
{
    sb__count_tx_end(tx, 0);
    sb__pool_release(tx->bus->pool, tx->conn);
    for (int i = 0; i < tx->n_woken; i++)
        sb__free(tx->woken[i]);
    sb__free(tx);
}

int sb_tx_commit(sb_tx *tx, sb_error *err)
{
    if (tx == NULL)
        return sb__err(err, SB_INVALID, "tx", "tx must not be NULL");
    int rc = sb__commit(tx->conn, err);
    sb__count_tx_end(tx, rc == SB_OK);
    if (rc == SB_OK) {
        if (tx->wake_all)
            sb__bus_wake_local(tx->bus, NULL);
        for (int i = 0; !tx->wake_all && i < tx->n_woken; i++)
            sb__bus_wake_local(tx->bus, tx->woken[i]);
    }
    tx_free(tx);
    return rc;
}

void sb_tx_rollback(sb_tx *tx)
{
    if (tx == NULL)
        return;
    sb__rollback(tx->conn);
    tx_free(tx);
}

int sb_tx_exec(sb_tx *tx, const char *sql, sb_error *err)
{
    if (tx == NULL || sql == NULL)
        return sb__err(err, SB_INVALID, tx ? "sql" : "tx",
                       "arguments must not be NULL");
    return sb__exec(tx->conn, sql, err);
}

void *sb_tx_native(sb_tx *tx)
{
    return tx == NULL ? NULL : tx->conn->drv->native(tx->conn);
}
