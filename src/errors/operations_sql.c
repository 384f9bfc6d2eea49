/* operations_sql.c - the statements of the durable operations' table
 * (operations.h), one set per dialect, and the table's expected columns.
 * SQLite and PostgreSQL share one text; SQL Server's keys are bounded,
 * binary-collated nvarchar compared with the padding sentinel (tsql.h),
 * its times datetime2(7) as the transport's are, written and read as
 * microseconds since the epoch, and its limits TOP. */
#include "errors/operations.h"

#include "db/tsql.h"

#include <stddef.h>

#define COLS                                                                   \
    "id, kind, state, group_id, total, done, created_at, "                     \
    "updated_at, error"

static const sb_ops_templates portable = {
    .ddl = "CREATE TABLE IF NOT EXISTS {p}operations (\n"
           "  id TEXT NOT NULL PRIMARY KEY,\n"
           "  kind TEXT NOT NULL,\n"
           "  selection TEXT NOT NULL,\n"
           "  state TEXT NOT NULL,\n"
           "  group_id TEXT,\n"
           "  total BIGINT NOT NULL,\n"
           "  done BIGINT NOT NULL,\n"
           "  created_at BIGINT NOT NULL,\n"
           "  updated_at BIGINT NOT NULL,\n"
           "  error TEXT\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}operations_created_idx ON "
           "{p}operations (created_at);\n",
    .insert = "INSERT INTO {p}operations (id, kind, selection, state, "
              "group_id, total, done, created_at, updated_at) VALUES ($1, "
              "$2, $3, 'queued', $4, -1, 0, $5, $5)",
    .get = "SELECT " COLS ", selection FROM {p}operations WHERE id = $1",
    .recent = "SELECT " COLS " FROM {p}operations ORDER BY created_at DESC, "
              "id DESC LIMIT $1",
    .start = "UPDATE {p}operations SET state = 'running', updated_at = $2, "
             "error = NULL WHERE id = $1",
    .total = "UPDATE {p}operations SET total = $2, done = $3, updated_at = "
             "$4 WHERE id = $1 AND total < 0",
    .figures = "SELECT total, done FROM {p}operations WHERE id = $1",
    .step = "UPDATE {p}operations SET done = done + $2, updated_at = $3 "
            "WHERE id = $1",
    .end = "UPDATE {p}operations SET state = $2, total = CASE WHEN total < "
           "done THEN done ELSE total END, updated_at = $3, error = $4 WHERE "
           "id = $1",
    .orphans = "SELECT id FROM {p}operations WHERE state = 'queued' AND "
               "updated_at < $1 ORDER BY created_at LIMIT 100",
    .prune = "DELETE FROM {p}operations WHERE state IN ('completed', "
             "'failed') AND updated_at < $1",
};

#define MS_KEY(n) "nvarchar(" #n ") COLLATE " SB_TSQL_BIN2
#define MS_ID SB_TSQL_SAME("id", "$1")
#define MS_US(col) "DATEDIFF_BIG(microsecond, " SB_TSQL_EPOCH ", " col ")"
#define MS_COLS                                                                \
    "id, kind, state, group_id, total, done, " MS_US("created_at") ", " MS_US( \
        "updated_at") ", error"

/* The index is made through EXEC so the batch compiles before the table
 * it names exists (a table of an older shape then reaches the column
 * check's message, not a compile error). */
static const sb_ops_templates tsql = {
    .ddl =
        "IF OBJECT_ID(N'{p}operations', N'U') IS NULL\n"
        "CREATE TABLE {p}operations (\n"
        "  id " MS_KEY(
            36) " NOT NULL PRIMARY KEY,\n"
                "  kind " MS_KEY(
                    20) " NOT NULL,\n"
                        "  selection nvarchar(max) NOT NULL,\n"
                        "  state " MS_KEY(
                            20) " NOT NULL,\n"
                                "  group_id " MS_KEY(
                                    400) ",\n"
                                         "  total bigint NOT NULL,\n"
                                         "  done bigint NOT NULL,\n"
                                         "  created_at datetime2(7) NOT NULL,\n"
                                         "  updated_at datetime2(7) NOT NULL,\n"
                                         "  error nvarchar(max)\n"
                                         ");\n"
                                         "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "
                                         "OBJECT_ID(N'{p}operations', N'U') AND name = "
                                         "N'{p}operations_created_idx')\n"
                                         "EXEC(N'CREATE INDEX {p}operations_created_idx ON {p}operations "
                                         "(created_at)');\n",
    .insert = "INSERT INTO {p}operations (id, kind, selection, state, "
              "group_id, total, done, created_at, updated_at) VALUES ($1, "
              "$2, $3, N'queued', $4, -1, 0, " SB_TSQL_FROM_US(
                  "$5") ", " SB_TSQL_FROM_US("$5") ")",
    .get = "SELECT " MS_COLS ", selection FROM {p}operations WHERE " MS_ID,
    .recent = "SELECT TOP (CAST($1 AS int)) " MS_COLS " FROM {p}operations "
              "ORDER BY created_at DESC, id DESC",
    .start =
        "UPDATE {p}operations SET state = N'running', updated_at = " SB_TSQL_FROM_US(
            "$2") ", error = NULL WHERE " MS_ID,
    .total =
        "UPDATE {p}operations SET total = $2, done = $3, updated_at = " SB_TSQL_FROM_US(
            "$4") " WHERE " MS_ID " AND total < 0",
    .figures = "SELECT total, done FROM {p}operations WHERE " MS_ID,
    .step =
        "UPDATE {p}operations SET done = done + $2, updated_at = " SB_TSQL_FROM_US(
            "$3") " WHERE " MS_ID,
    .end = "UPDATE {p}operations SET state = $2, total = CASE WHEN total < "
           "done THEN done ELSE total END, updated_at = " SB_TSQL_FROM_US(
               "$3") ", error = $4 WHERE " MS_ID,
    .orphans = "SELECT TOP (100) id FROM {p}operations WHERE state = "
               "N'queued' AND updated_at < " SB_TSQL_FROM_US(
                   "$1") " ORDER BY created_at",
    .prune = "DELETE FROM {p}operations WHERE state IN (N'completed', "
             "N'failed') AND updated_at < " SB_TSQL_FROM_US("$1"),
};

const sb_column_spec sb__ops_columns[] = {
    {"id", "TEXT", "text", "nvarchar(36)", 1, NULL},
    {"kind", "TEXT", "text", "nvarchar(20)", 1, NULL},
    {"selection", "TEXT", "text", "nvarchar(max)", 1, NULL},
    {"state", "TEXT", "text", "nvarchar(20)", 1, NULL},
    {"group_id", "TEXT", "text", "nvarchar(400)", 0, NULL},
    {"total", "BIGINT", "bigint", "bigint", 1, NULL},
    {"done", "BIGINT", "bigint", "bigint", 1, NULL},
    {"created_at", "BIGINT", "bigint", "datetime2(7)", 1, NULL},
    {"updated_at", "BIGINT", "bigint", "datetime2(7)", 1, NULL},
    {"error", "TEXT", "text", "nvarchar(max)", 0, NULL},
};
const size_t sb__ops_n_columns =
    sizeof sb__ops_columns / sizeof sb__ops_columns[0];

/* Every statement by name, in the list's order (operations.h). */
static const struct {
    const char *name;
    size_t tpl, built;
} names[] = {
#define X(f) {#f, offsetof(sb_ops_templates, f), offsetof(sb_ops_sql, f)},
    SB_OPS_STATEMENTS(X)
#undef X
};

const sb_ops_templates *sb__ops_templates(int dialect)
{
    return dialect == SB_DIALECT_MSSQL ? &tsql : &portable;
}

size_t sb__ops_n_statements(void)
{
    return sizeof names / sizeof names[0];
}

const char *sb__ops_statement(const sb_ops_templates *t, size_t i,
                              const char **name)
{
    const char *const *text =
        (const char *const *)(const void *)((const char *)t + names[i].tpl);
    *name = names[i].name;
    return *text;
}

static char **slot(sb_ops_sql *s, size_t i)
{
    return (char **)(void *)((char *)s + names[i].built);
}

int sb__ops_sql_new(int dialect, const char *prefix, sb_ops_sql *out)
{
    const sb_ops_templates *t = sb__ops_templates(dialect);
    int rc = SB_OK;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *name;
        *slot(out, i) =
            sb__sql_subst(sb__ops_statement(t, i, &name), prefix, &rc);
    }
    if (rc != SB_OK)
        sb__ops_sql_free(out);
    return rc;
}

void sb__ops_sql_free(sb_ops_sql *s)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        sb__free(*slot(s, i));
        *slot(s, i) = NULL;
    }
}

/* Public (sqlbus.h): every statement of the set, named "operations.*". */
int sb_operations_statements(const char *backend, const char *table_prefix,
                             sb_statement_fn fn, void *user, sb_error *err)
{
    int dialect = 0;
    int rc = sb__statements_begin(backend, table_prefix, fn, &dialect, err);
    sb_ops_sql s = {0};
    if (rc == SB_OK &&
        sb__ops_sql_new(dialect, table_prefix ? table_prefix : "sqlbus_", &s) !=
            SB_OK)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (rc != SB_OK)
        return rc;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        sb__statement_emit(fn, user, "operations", names[i].name, *slot(&s, i));
    sb__ops_sql_free(&s);
    return SB_OK;
}

/* Public (sqlbus.h): the table's DDL for `backend`; transferred. */
int sb_operations_schema_sql(const char *backend, const char *table_prefix,
                             char **out, sb_error *err)
{
    return sb__ddl_for(backend, table_prefix, portable.ddl, portable.ddl,
                       tsql.ddl, out, err);
}
