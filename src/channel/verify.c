/* verify.c - SQL Server: the channel's tables and ack sequence checked
 * against the catalog when a channel opens, with the seed's rules: ids
 * compared ordinally need a binary collation (any other folds what the
 * library treats as distinct), times must be datetime2(7) (a lower scale
 * rounds on store and could put a time below a watermark already seen),
 * primary keys are judged by their key columns only, and the sequence is
 * the monotonic clock it stands for (bigint, +1, no cycle, the bigint
 * maximum: a lower one passes today and fails in production with 11728).
 * A table that is absent is not yet migrated: the next use reports it.
 * Secondary indexes are not checked, channel_messages' clustered one
 * (sql_mssql.c) included: a heap or another clustering gives the same
 * answers, it only keeps emptied pages (docs/backends.md). */
#include "channel/channel.h"
#include "db/tsql.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct col_rule {
    const char *table; /* without the prefix */
    const char *column;
    const char *type; /* as the catalog query spells it, or NULL */
    int binary;       /* needs a _BIN / _BIN2 collation */
} col_rule;

static const col_rule rules[] = {
    {"channel_messages", "id", NULL, 1},
    {"channel_messages", "correlation_id", NULL, 1},
    {"channel_messages", "created_at", "datetime2(7)", 0},
    {"channel_messages", "expires_at", "datetime2(7)", 0},
    {"channel_messages", "acked_at", "datetime2(7)", 0},
    {"channel_messages", "acked_seq", "bigint", 0},
    {"channel_subscribers", "correlation_id", NULL, 1},
    {"channel_subscribers", "registration_id", NULL, 1},
    {"channel_subscribers", "expires_at", "datetime2(7)", 0},
    {"recovery_state", "correlation_id", NULL, 1},
    {"recovery_state", "registration_id", NULL, 1},
    {"recovery_state", "registered_at", "datetime2(7)", 0},
    {"recovery_state", "expires_at", "datetime2(7)", 0},
    {"recovery_state", "dispatched_at", "datetime2(7)", 0},
};

static const struct {
    const char *table, *keys;
} primary_keys[] = {
    {"channel_messages", "id"},
    {"channel_subscribers", "correlation_id,registration_id"},
    {"recovery_state", "correlation_id,registration_id"},
};

const char sb__channel_seq_sql[] =
    "SELECT TYPE_NAME(system_type_id), CAST(increment AS bigint), "
    "CAST(is_cycling AS int), CAST(maximum_value AS bigint) FROM "
    "sys.sequences WHERE object_id = OBJECT_ID($1, N'SO')";

static int is_binary(const char *collation)
{
    size_t n = strlen(collation);
    return (n >= 4 && strcmp(collation + n - 4, "_BIN") == 0) ||
           (n >= 5 && strcmp(collation + n - 5, "_BIN2") == 0);
}

static int mismatch(sb_error *err, const char *field, const char *table,
                    const char *what, const char *fix)
{
    return sb__err(err, SB_SCHEMA_MISMATCH, field, "table %s: %s; fix: %s",
                   table, what, fix);
}

/* The rules of one table against its catalog rows (name, type, notnull,
 * collation); absent columns are for the statements to report. */
static int check_table(const char *bare, const char *table, const sb_rows *cols,
                       sb_error *err)
{
    char what[256], fix[320];
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const col_rule *w = &rules[i];
        if (strcmp(w->table, bare) != 0)
            continue;
        for (size_t r = 0; r < cols->nrows; r++) {
            const char *name = sb__rows_text(cols, r, 0);
            if (name == NULL || strcmp(name, w->column) != 0)
                continue;
            const char *type = sb__rows_text(cols, r, 1);
            const char *coll = sb__rows_text(cols, r, 3);
            int notnull = (int)sb__rows_int(cols, r, 2);
            if (w->type != NULL && (type == NULL || strcmp(type, w->type))) {
                snprintf(what, sizeof what,
                         "column %s has type %s, expected "
                         "%s",
                         w->column, type ? type : "(none)", w->type);
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s %s "
                         "%sNULL",
                         table, w->column, w->type, notnull ? "NOT " : "");
                return mismatch(err, w->column, table, what, fix);
            }
            if (w->binary && !is_binary(coll ? coll : "")) {
                snprintf(what, sizeof what,
                         "column %s has collation \"%s\"; "
                         "ids compare ordinally only under a binary one",
                         w->column, coll ? coll : "");
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s %s "
                         "COLLATE " SB_TSQL_BIN2 " %sNULL (drop and recreate "
                         "the indexes on it around that)",
                         table, w->column, type ? type : "",
                         notnull ? "NOT " : "");
                return mismatch(err, w->column, table, what, fix);
            }
        }
    }
    return SB_OK;
}

static int check_key(const char *bare, const char *table, const sb_rows *idx,
                     sb_error *err)
{
    const char *want = NULL;
    for (size_t i = 0; i < sizeof primary_keys / sizeof primary_keys[0]; i++)
        if (strcmp(primary_keys[i].table, bare) == 0)
            want = primary_keys[i].keys;
    for (size_t r = 0; r < idx->nrows; r++) {
        const char *keys = sb__rows_text(idx, r, 2);
        if (sb__rows_int(idx, r, 1) && keys != NULL && strcmp(keys, want) == 0)
            return SB_OK;
    }
    char what[160], fix[300];
    snprintf(what, sizeof what, "the primary key is not (%s)", want);
    snprintf(fix, sizeof fix, "ALTER TABLE %s ADD PRIMARY KEY (%s)", table,
             want);
    return mismatch(err, "primary key", table, what, fix);
}

static int check_sequence(sb_bus *bus, sb_conn *c, sb_error *err)
{
    char name[SB_MAX_PREFIX_LEN + 32];
    snprintf(name, sizeof name, "%schannel_ack_seq", bus->prefix);
    sb_value p = sb__v_text(name);
    sb_rows *rows = NULL;
    int rc = sb__query(c, sb__channel_seq_sql, &p, 1, &rows, NULL, err);
    if (rc != SB_OK || rows->nrows == 0) {
        sb__rows_free(rows);
        return rc;
    }
    const char *type = sb__rows_text(rows, 0, 0);
    int ok = type != NULL && strcmp(type, "bigint") == 0 &&
             sb__rows_int(rows, 0, 1) == 1 && sb__rows_int(rows, 0, 2) == 0 &&
             sb__rows_int(rows, 0, 3) == INT64_MAX;
    sb__rows_free(rows);
    if (ok)
        return SB_OK;
    char fix[300];
    snprintf(fix, sizeof fix,
             "ALTER SEQUENCE %s INCREMENT BY 1 NO MAXVALUE "
             "NO CYCLE (a sequence of another type: drop it and create it AS "
             "bigint, starting past the highest acked_seq)",
             name);
    return sb__err(err, SB_SCHEMA_MISMATCH, "channel_ack_seq",
                   "sequence %s must be bigint, INCREMENT BY 1, NO CYCLE, "
                   "with the bigint maximum; fix: %s",
                   name, fix);
}

int sb__channel_verify(sb_bus *bus, sb_error *err)
{
    static const char *const tables[] = {
        "channel_messages", "channel_subscribers", "recovery_state"};
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    for (size_t t = 0; rc == SB_OK && t < 3; t++) {
        char table[SB_MAX_PREFIX_LEN + 32];
        snprintf(table, sizeof table, "%s%s", bus->prefix, tables[t]);
        sb_value p = sb__v_text(table);
        sb_rows *cols = NULL, *idx = NULL;
        rc = sb__query(c, bus->sql->columns, &p, 1, &cols, NULL, err);
        if (rc == SB_OK && cols->nrows > 0) {
            rc = check_table(tables[t], table, cols, err);
            if (rc == SB_OK)
                rc = sb__query(c, bus->sql->indexes, &p, 1, &idx, NULL, err);
            if (rc == SB_OK)
                rc = check_key(tables[t], table, idx, err);
        }
        sb__rows_free(cols);
        sb__rows_free(idx);
    }
    if (rc == SB_OK)
        rc = check_sequence(bus, c, err);
    if (c != NULL)
        sb__pool_release(bus->pool, c);
    return rc;
}
