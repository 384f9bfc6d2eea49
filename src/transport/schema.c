/* schema.c - creation under a cross-process lock (T6) and verification
 * against the catalog (T7): column types (with length and scale on SQL
 * Server) and nullability through columns.c, then the primary key, the
 * dequeue index's key and the byte-exact collation of `queue`; the
 * columns of the DDL's other tables (the counts) by name. */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

const sb_column_spec sb__message_columns[] = {
    {"id", "TEXT", "uuid", "uniqueidentifier", 1, NULL},
    {"queue", "TEXT", "text", "nvarchar(200)", 1, NULL},
    {"payload", "BLOB", "bytea", "varbinary(max)", 1, NULL},
    {"headers", "TEXT", "text", "nvarchar(max)", 1, NULL},
    {"created_at", "INTEGER", "timestamp with time zone", "datetime2(7)", 1,
     NULL},
    {"available_at", "INTEGER", "timestamp with time zone", "datetime2(7)", 1,
     NULL},
    {"locked_until", "INTEGER", "timestamp with time zone", "datetime2(7)", 0,
     NULL},
    {"lock_id", "TEXT", "uuid", "uniqueidentifier", 0, NULL},
    {"attempts", "INTEGER", "integer", "int", 1, NULL},
    {"last_error", "TEXT", "text", "nvarchar(max)", 0, NULL},
    {"dead_letter_reason", "TEXT", "text", "nvarchar(max)", 0, NULL},
    {"priority", "INTEGER", "smallint", "smallint", 1, "0"},
    {"unique_key", "TEXT", "text", "nvarchar(255)", 0, NULL},
    {"expires_at", "INTEGER", "timestamp with time zone", "datetime2(7)", 0,
     NULL},
    {"progress", "TEXT", "text", "nvarchar(max)", 0, NULL},
};
const size_t sb__message_column_count =
    sizeof sb__message_columns / sizeof sb__message_columns[0];

/* {prefix}heartbeats (heartbeat.c, issue 22): typed, as its columns are
 * read back by position. */
static const sb_column_spec heartbeat_columns[] = {
    {"id", "TEXT", "text", "nvarchar(36)", 1, NULL},
    {"endpoint", "TEXT", "text", "nvarchar(200)", 1, NULL},
    {"host", "TEXT", "text", "nvarchar(255)", 1, NULL},
    {"host_id", "TEXT", "text", "nvarchar(36)", 1, NULL},
    {"pid", "INTEGER", "bigint", "bigint", 1, NULL},
    {"interval_ms", "INTEGER", "bigint", "bigint", 1, NULL},
    {"started_at", "INTEGER", "timestamp with time zone", "datetime2(7)", 1,
     NULL},
    {"last_beat_at", "INTEGER", "timestamp with time zone", "datetime2(7)", 1,
     NULL},
    {"stopped_at", "INTEGER", "timestamp with time zone", "datetime2(7)", 0,
     NULL},
    {"monitored", "INTEGER", "integer", "int", 1, "1"},
};

/* The heartbeats table's column types, when it exists (a missing one is
 * left to its first use, as every table but the messages'). */
static int check_heartbeats(sb_bus *bus, sb_conn *c, sb_error *err)
{
    char table[SB_MAX_PREFIX_LEN + 16];
    snprintf(table, sizeof table, "%sheartbeats", bus->prefix);
    sb_value p = sb__v_text(table);
    sb_rows *cols = NULL;
    int rc = sb__query(c, bus->sql->columns, &p, 1, &cols, NULL, err);
    if (rc == SB_OK && cols->nrows > 0)
        rc = sb__check_columns(
            bus->dialect, table, heartbeat_columns,
            sizeof heartbeat_columns / sizeof heartbeat_columns[0], cols, err);
    sb__rows_free(cols);
    return rc;
}

static int create_tx(sb_conn *c, void *ctx, sb_error *err)
{
    sb_bus *bus = ctx;
    int rc = SB_OK;
    /* SQL Server's lock is a batch (sp_getapplock and its return code). */
    if (bus->sql->lock != NULL)
        rc = bus->dialect == SB_DIALECT_MSSQL
                 ? sb__exec(c, bus->sql->lock, err)
                 : sb__query(c, bus->sql->lock, NULL, 0, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__exec(c, bus->sql->ddl, err);
    return rc;
}

static int index_tx(sb_conn *c, void *ctx, sb_error *err)
{
    sb_bus *bus = ctx;
    return sb__exec(c, bus->sql->index_ddl, err);
}

static int mismatch(sb_bus *bus, sb_error *err, const char *column,
                    const char *what, const char *fix)
{
    sb__err(err, SB_SCHEMA_MISMATCH, column, "table %s: %s; fix: %s",
            bus->table, what, fix);
    return SB_SCHEMA_MISMATCH;
}

/* The columns (columns.c), then what only this table asks of one:
 * on PostgreSQL queue's collation. */
static int check_columns(sb_bus *bus, const sb_rows *rows, sb_error *err)
{
    int rc = sb__check_columns(bus->dialect, bus->table, sb__message_columns,
                               sb__message_column_count, rows, err);
    if (rc != SB_OK || bus->dialect != SB_DIALECT_POSTGRES)
        return rc;
    /* SQL Server: any collation will do, as the seed allows for a table a
     * migration owns: every statement compares queue with a binary
     * collation and the padding sentinel itself (sql_mssql.c). SQLite:
     * the dequeue index's key collation is checked (check_indexes). */
    for (size_t r = 0; r < rows->nrows; r++) {
        const char *name = sb__rows_text(rows, r, 0);
        if (name == NULL || strcmp(name, "queue") != 0)
            continue;
        const char *coll = sb__rows_text(rows, r, 3);
        if (coll != NULL && strcmp(coll, "C") == 0)
            return SB_OK;
        char what[256], fix[256];
        snprintf(what, sizeof what,
                 "column queue has collation \"%s\"; queue names compare "
                 "byte-exactly only under \"C\"",
                 coll ? coll : "");
        snprintf(fix, sizeof fix,
                 "ALTER TABLE %s ALTER COLUMN queue TYPE text COLLATE \"C\"",
                 bus->table);
        return mismatch(bus, err, "queue", what, fix);
    }
    return SB_OK;
}

/* Key text of an index as the catalog reports it, without collations. */
static void key_names(const char *keys, char *out, size_t cap)
{
    size_t o = 0;
    bool skip = false;
    for (const char *p = keys; *p && o + 1 < cap; p++) {
        if (*p == ' ')
            skip = true;
        else if (*p == ',')
            skip = false;
        if (!skip)
            out[o++] = *p;
    }
    out[o] = '\0';
}

static int check_indexes(sb_bus *bus, const sb_rows *rows, sb_error *err)
{
    bool have_pk = false, have_ready = false, have_created = false;
    /* SQLite's claim index is two partial ones (sql_sqlite.c): the rows
     * of priority 0 without it as a key, the others with it. */
    bool sqlite = bus->dialect == SB_DIALECT_SQLITE, have_plain = !sqlite;
    char names[256];
    for (size_t r = 0; r < rows->nrows; r++) {
        const char *keys = sb__rows_text(rows, r, 2);
        if (keys == NULL)
            continue;
        key_names(keys, names, sizeof names);
        if (sb__rows_int(rows, r, 1) && strcmp(names, "id") == 0)
            have_pk = true;
        if (sqlite && strcmp(names, "queue,available_at,created_at") == 0 &&
            strncmp(keys, "queue BINARY,", 13) == 0)
            have_plain = true;
        if (strcmp(names, "queue,priority,available_at,created_at") == 0) {
            /* SQLite reports each key's collation: queue must be BINARY. */
            if (bus->dialect == SB_DIALECT_SQLITE &&
                strncmp(keys, "queue BINARY,", 13) != 0)
                continue;
            have_ready = true;
        }
        /* On SQL Server the clustered index on tables sqlbus creates, a
         * nonclustered one on older heaps (sql_mssql.c): either will do. */
        if (strcmp(names, "created_at") == 0)
            have_created = true;
    }
    char fix[300];
    if (!have_pk) {
        snprintf(fix, sizeof fix, "ALTER TABLE %s ADD PRIMARY KEY%s (id)",
                 bus->table,
                 bus->dialect == SB_DIALECT_MSSQL ? " NONCLUSTERED" : "");
        return mismatch(bus, err, "id", "the primary key is not (id)", fix);
    }
    if (!have_ready) {
        snprintf(fix, sizeof fix,
                 "CREATE INDEX %s_claim_idx ON %s (queue, priority DESC, "
                 "available_at, created_at)",
                 bus->table, bus->table);
        return mismatch(bus, err, "queue",
                        "the dequeue index on (queue, priority DESC, "
                        "available_at, created_at) is missing",
                        fix);
    }
    if (!have_plain) {
        snprintf(fix, sizeof fix,
                 "CREATE INDEX %s_plain_idx ON %s (queue, available_at, "
                 "created_at) WHERE priority = 0",
                 bus->table, bus->table);
        return mismatch(bus, err, "queue",
                        "the dequeue index of priority 0 on (queue, "
                        "available_at, created_at) is missing",
                        fix);
    }
    if (!have_created) {
        snprintf(fix, sizeof fix,
                 "CREATE INDEX %s_created_idx ON %s (created_at)", bus->table,
                 bus->table);
        return mismatch(bus, err, "created_at",
                        "the retention index on (created_at) is missing", fix);
    }
    return SB_OK;
}

int sb_schema_verify(sb_bus *bus, sb_error *err)
{
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p = sb__v_text(bus->table);
    sb_rows *cols = NULL, *idx = NULL;
    rc = sb__query(c, bus->sql->columns, &p, 1, &cols, NULL, err);
    if (rc == SB_OK && cols->nrows == 0)
        rc = sb__err(err, SB_SCHEMA_MISSING, NULL,
                     "table %s does not exist; create it with `sqlbus schema "
                     "migrate` or apply `sqlbus schema print`",
                     bus->table);
    if (rc == SB_OK)
        rc = check_columns(bus, cols, err);
    if (rc == SB_OK)
        rc = sb__query(c, bus->sql->indexes, &p, 1, &idx, NULL, err);
    if (rc == SB_OK)
        rc = check_indexes(bus, idx, err);
    if (rc == SB_OK)
        rc = check_heartbeats(bus, c, err);
    sb__rows_free(cols);
    sb__rows_free(idx);
    sb__pool_release(bus->pool, c);
    /* The other tables of the DDL ({prefix}counts): their columns. */
    if (rc == SB_OK)
        rc = sb__check_ddl_tables(bus, bus->sql->ddl, err);
    if (rc == SB_OK)
        atomic_store(&bus->schema_ok, 1);
    return rc;
}

/* The columns of the messages table added since its first release
 * (issue 21): a store without them is upgraded by an AUTO open. */
static const char *const added_later[] = {"priority", "unique_key",
                                          "expires_at", "progress", NULL};

/* A store made by an earlier version: the columns it lacks added, and
 * what the upgrade statement removes, under the schema lock. */
static int upgrade_tx(sb_conn *c, void *ctx, sb_error *err)
{
    sb_bus *bus = ctx;
    int rc = SB_OK, added = 0;
    if (bus->sql->lock != NULL)
        rc = bus->dialect == SB_DIALECT_MSSQL
                 ? sb__exec(c, bus->sql->lock, err)
                 : sb__query(c, bus->sql->lock, NULL, 0, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__ddl_add_missing(c, bus->dialect, bus->sql->columns,
                                 bus->sql->ddl, added_later, &added, err);
    if (rc == SB_OK && added > 0 && bus->sql->upgrade != NULL)
        rc = sb__exec(c, bus->sql->upgrade, err);
    return rc;
}

static int create_all(sb_bus *bus, sb_error *err)
{
    int rc = sb__db_run_tx(bus->pool, NULL, create_tx, bus, err);
    if (rc == SB_OK && bus->sql->index_ddl != NULL)
        rc = sb__db_run_tx(bus->pool, NULL, index_tx, bus, err);
    return rc;
}

int sb_schema_migrate(sb_bus *bus, sb_error *err)
{
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    sb_error ddl_err;
    int rc = create_all(bus, &ddl_err);
    if (rc == SB_OK) {
        rc = sb_schema_verify(bus, err);
        if (rc != SB_SCHEMA_MISMATCH)
            return rc;
    }
    /* A table of another shape fails the DDL first (the claim index names
     * a column it lacks), in the database's words. A store an earlier
     * version made lacks only columns the DDL can add: added, the DDL
     * runs again (T7). */
    sb_error why;
    int vrc = sb_schema_verify(bus, &why);
    if (vrc == SB_SCHEMA_MISMATCH) {
        int urc = sb__db_run_tx(bus->pool, NULL, upgrade_tx, bus, &why);
        if (urc == SB_OK) {
            rc = create_all(bus, &ddl_err);
            vrc = sb_schema_verify(bus, &why);
        } else if (urc != SB_SCHEMA_MISMATCH) {
            vrc = urc;
        }
    }
    if (vrc == SB_OK)
        return SB_OK;
    if ((vrc & 0xff) == SB_SCHEMA && vrc != SB_SCHEMA_MISSING) {
        if (err != NULL)
            *err = why;
        return vrc;
    }
    if (err != NULL)
        *err = rc != SB_OK ? ddl_err : why;
    return rc != SB_OK ? rc : vrc;
}

int sb__bus_ensure_schema(sb_bus *bus, sb_error *err)
{
    if (atomic_load(&bus->schema_ok) || bus->schema_mode == SB_SCHEMA_NONE)
        return SB_OK;
    if (bus->schema_mode == SB_SCHEMA_AUTO)
        return sb_schema_migrate(bus, err);
    return sb_schema_verify(bus, err);
}
