/* conn.c - driver lookup and the transaction wrappers every module uses
 * instead of reaching into the driver table. */
#include "db/db.h"

/* The driver for a parsed URL, or NULL if none is built in. Returns a
 * static table; thread-safe. */
const sb_driver *sb__driver_for(const sb_db_config *cfg)
{
    if (cfg->odbc)
        return sb__driver_odbc();
    switch (cfg->dialect) {
    case SB_DIALECT_SQLITE: return sb__driver_sqlite();
    case SB_DIALECT_POSTGRES: return sb__driver_postgres();
    default: return NULL;
    }
}

/* Begin a write transaction on `c` and set c->in_tx on success. Result
 * codes as for the driver's begin. One thread per connection. */
int sb__begin(sb_conn *c, sb_error *err)
{
    int rc = c->drv->begin(c, err);
    if (rc == SB_OK)
        c->in_tx = true;
    return rc;
}

/* Commit the transaction on `c`; clears c->in_tx on success. On failure
 * the driver decides (a SQLite COMMIT that hit SQLITE_BUSY is still open;
 * a failed PostgreSQL COMMIT has ended the transaction). */
int sb__commit(sb_conn *c, sb_error *err)
{
    int rc = c->drv->commit(c, err);
    if (rc == SB_OK)
        c->in_tx = false;
    return rc;
}

/* Roll back the transaction on `c`, best effort (a broken connection is
 * discarded by the pool anyway). NULL-safe. */
void sb__rollback(sb_conn *c)
{
    if (c == NULL)
        return;
    (void)c->drv->rollback(c);
    c->in_tx = false;
}

static int pipeline_each(sb_conn *c, const sb_call *calls, size_t n, int commit,
                         size_t *failed, sb_error *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = sb__query(c, calls[i].sql, calls[i].params, calls[i].nparams,
                           calls[i].rows, calls[i].changes, err);
        if (rc != SB_OK) {
            *failed = i;
            return rc;
        }
    }
    *failed = n;
    return commit ? sb__commit(c, err) : SB_OK;
}

int sb__pipeline(sb_conn *c, const sb_call *calls, size_t n, int commit,
                 size_t *failed, sb_error *err)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (calls[i].rows != NULL)
            *calls[i].rows = NULL;
        if (calls[i].changes != NULL)
            *calls[i].changes = 0;
    }
    if (!c->in_tx)
        return sb__err(err, SB_MISUSE, NULL,
                       "a pipeline runs in an open transaction");
    int rc = c->drv->pipeline != NULL
                 ? c->drv->pipeline(c, calls, n, commit, &at, err)
                 : pipeline_each(c, calls, n, commit, &at, err);
    if (failed != NULL)
        *failed = at;
    return rc;
}
