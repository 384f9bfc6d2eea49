/* store.c - opening and closing the error store, creating its tables
 * (under the transport's cross-process schema lock) and checking their
 * columns; on SQL Server also the full-text catalog and index, outside
 * any transaction. */
#include "errors/errors.h"

#include <string.h>

#define DEFAULT_BATCH 256
#define MAX_BATCH 5000
#define DEFAULT_BODY (100 * 1024)
#define MAX_BODY (16 * 1024 * 1024)

/* E10: a store made before the attempts' keys gets those it can know
 * (sql.c, ER_ATTEMPTS_FILL), once: afterwards the table is never empty
 * while the store holds messages. */
static int fill_attempts(sb_conn *c, sb_errors *e, sb_error *err)
{
    sb_rows *rows = NULL;
    int rc =
        sb__query(c, e->sql.s[ER_ATTEMPTS_STATE], NULL, 0, &rows, NULL, err);
    int fill = rc == SB_OK && rows->nrows == 1 && sb__rows_int(rows, 0, 0) == 1;
    sb__rows_free(rows);
    if (rc == SB_OK && fill)
        rc = sb__exec(c, e->sql.s[ER_ATTEMPTS_FILL], err);
    return rc;
}

static int create_tx(sb_conn *c, void *ctx, sb_error *err)
{
    sb_errors *e = ctx;
    int rc = SB_OK;
    /* SQL Server's lock is a batch (sp_getapplock and its return code),
     * as the transport runs it (transport/schema.c). */
    if (e->bus->sql->lock != NULL)
        rc = e->bus->dialect == SB_DIALECT_MSSQL
                 ? sb__exec(c, e->bus->sql->lock, err)
                 : sb__query(c, e->bus->sql->lock, NULL, 0, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__exec(c, e->sql.s[ER_DDL], err);
    if (rc == SB_OK)
        rc = sb__errors_counts_ensure(c, e, err);
    if (rc == SB_OK)
        rc = fill_attempts(c, e, err);
    return rc;
}

/* E22 on SQL Server: CREATE FULLTEXT cannot run in a user transaction,
 * so the catalog and index are made on a pooled connection in autocommit
 * (the batch takes its own lock, and does nothing on a server without
 * Full-Text Search). A failure (no permission, say) is logged and the
 * store opens: everything but search works, and search says what is
 * missing (search.c). */
static void create_fulltext(sb_errors *e)
{
    sb_conn *c = NULL;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb__pool_acquire(e->bus->pool, 30000, &c, &err);
    if (rc == SB_OK) {
        rc = sb__exec(c, e->sql.s[ER_FULLTEXT], &err);
        sb__pool_release(e->bus->pool, c);
    }
    if (rc != SB_OK)
        sb__log(&e->bus->log, SB_LOG_WARN, "errors",
                "the full-text index of %sfailed_messages could not be "
                "created (search will fail until it exists): %s",
                e->bus->prefix, err.message);
}

int sb__errors_race(const sb_errors *e, int rc, sb_error *err)
{
    if ((rc & 0xff) != SB_CONFLICT || e->bus->dialect != SB_DIALECT_MSSQL ||
        (err != NULL && err->native != 2627 && err->native != 2601))
        return rc;
    if (err != NULL) {
        sb_error was = *err;
        sb__err(err, SB_BUSY, NULL,
                "an insert raced another of the same key; retried, it "
                "finds the row (%.400s)",
                was.message);
        err->native = was.native;
        sb__strlcpy(err->sqlstate, was.sqlstate, sizeof err->sqlstate);
    }
    return SB_BUSY;
}

int sb_errors_open(sb_bus *bus, const sb_errors_options *opts, sb_errors **out,
                   sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    sb_errors_options z;
    memset(&z, 0, sizeof z);
    const sb_errors_options *o = opts ? opts : &z;
    if (o->size != 0 && o->size < sizeof *o)
        return sb__err(err, SB_INVALID, "size",
                       "sb_errors_options.size is smaller than any version");
    if (o->ingest_batch_size < 0 || o->ingest_batch_size > MAX_BATCH)
        return sb__err(err, SB_INVALID, "ingest_batch_size",
                       "ingest_batch_size must be 0 (default %d) to %d",
                       DEFAULT_BATCH, MAX_BATCH);
    if (o->max_body_size > MAX_BODY)
        return sb__err(err, SB_INVALID, "max_body_size",
                       "max_body_size must be at most %d bytes (16 MiB)",
                       MAX_BODY);
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    sb_errors *e = sb__calloc(1, sizeof *e);
    if (e == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    e->bus = bus;
    e->batch_size = o->ingest_batch_size ? o->ingest_batch_size : DEFAULT_BATCH;
    e->max_body = o->max_body_size ? o->max_body_size : DEFAULT_BODY;
    e->allow_edit = o->allow_edit != 0;
    if (pthread_mutex_init(&e->rows_mu, NULL) != 0) {
        sb__free(e);
        return sb__err(err, SB_NOMEM, NULL, "cannot create a mutex");
    }
    rc = sb__errors_sql_new(bus->dialect, bus->prefix, &e->sql, err);
    if (rc == SB_OK && bus->schema_mode != SB_SCHEMA_NONE) {
        sb_error ddl_err;
        int ddl_rc =
            bus->schema_mode == SB_SCHEMA_AUTO
                ? sb__db_run_tx(bus->pool, NULL, create_tx, e, &ddl_err)
                : SB_OK;
        /* T7: each column the store's DDL declares is there, so a table
         * of another shape is named with its fix at open. */
        rc = sb__schema_after_ddl(bus, e->sql.s[ER_DDL], ddl_rc, &ddl_err, err);
    }
    if (rc == SB_OK && bus->schema_mode == SB_SCHEMA_AUTO &&
        bus->dialect == SB_DIALECT_MSSQL)
        create_fulltext(e);
    if (rc != SB_OK) {
        sb_errors_close(e);
        return rc;
    }
    *out = e;
    return SB_OK;
}

void sb_errors_close(sb_errors *e)
{
    if (e == NULL)
        return;
    sb__errors_sql_free(&e->sql);
    for (size_t k = 0; k < ERV_N; k++)
        for (size_t j = 0; j <= SB_ERRORS_ROWS_LOG; j++)
            sb__free(e->rows[k][j]);
    pthread_mutex_destroy(&e->rows_mu);
    sb__free(e);
}
