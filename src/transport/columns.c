/* columns.c - a table's columns against the catalog (T7), for every table
 * whose shape is checked by column (the messages table, schema.c; the
 * durable operations' table, errors/operations.c): each expected column
 * present, of its type, NOT NULL where it must be. The first that is not
 * is reported with the statement that fixes it in the table's dialect. */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* SQLite cannot change a column's type or nullability in place. */
static void sqlite_fix(char *fix, size_t cap, const char *table)
{
    snprintf(fix, cap,
             "recreate %s from `sqlbus schema print --backend sqlite` and copy "
             "the rows",
             table);
}

int sb__check_columns(int dialect, const char *table,
                      const sb_column_spec *spec, size_t n, const sb_rows *rows,
                      sb_error *err)
{
    char what[256], fix[320];
    bool pg = dialect == SB_DIALECT_POSTGRES;
    bool ms = dialect == SB_DIALECT_MSSQL;
    for (size_t i = 0; i < n; i++) {
        const sb_column_spec *s = &spec[i];
        const char *want = pg   ? s->pg_type
                           : ms ? s->mssql_type
                                : s->sqlite_type;
        size_t r = 0;
        while (r < rows->nrows && (sb__rows_text(rows, r, 0) == NULL ||
                                   strcmp(sb__rows_text(rows, r, 0), s->name)))
            r++;
        const char *type = r < rows->nrows ? sb__rows_text(rows, r, 1) : NULL;
        if (r == rows->nrows) {
            snprintf(what, sizeof what, "column %s is missing", s->name);
            snprintf(fix, sizeof fix, "ALTER TABLE %s ADD%s %s %s%s", table,
                     ms ? "" : " COLUMN", s->name, want,
                     s->notnull ? " NOT NULL" : "");
        } else if (type == NULL || strcasecmp(type, want) != 0) {
            snprintf(what, sizeof what, "column %s has type %s, expected %s",
                     s->name, type ? type : "(none)", want);
            if (pg)
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s::%s",
                         table, s->name, want, s->name, want);
            else if (ms)
                snprintf(fix, sizeof fix, "ALTER TABLE %s ALTER COLUMN %s %s%s",
                         table, s->name, want,
                         s->notnull ? " NOT NULL" : " NULL");
            else
                sqlite_fix(fix, sizeof fix, table);
        } else if (s->notnull && sb__rows_int(rows, r, 2) == 0) {
            snprintf(what, sizeof what, "column %s allows NULL", s->name);
            if (pg)
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s SET NOT NULL", table,
                         s->name);
            else if (ms)
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s %s NOT NULL", table,
                         s->name, want);
            else
                sqlite_fix(fix, sizeof fix, table);
        } else {
            continue;
        }
        return sb__err(err, SB_SCHEMA_MISMATCH, s->name,
                       "table %s: %s; fix: %s", table, what, fix);
    }
    return SB_OK;
}
