/*
 * sql_int.h - what the error store's statement builders share: the
 * failed_messages column list (sql.c), the dialect a statement is built
 * for, and the generators both the PostgreSQL/SQLite upsert and SQL
 * Server's MERGE use, so their guards (E10) cannot drift apart. Private
 * to sql.c, sql_mssql.c and the unit tests.
 */
#ifndef SB_ERRORS_SQL_INT_H
#define SB_ERRORS_SQL_INT_H

#include "db/tsql.h"
#include "errors/errors.h"

/* A column a batch row carries: type 't' text, 'i' integer. `ms_len` is
 * its nvarchar length on SQL Server (0: nvarchar(max)); ingestion cuts
 * the value to fit (errors.h, SB_MS_*). */
typedef struct sb_err_column {
    const char *name;
    char type;
    int payload; /* taken only from an attempt at least as new (E10) */
    int ms_len;
} sb_err_column;

extern const sb_err_column sb__err_columns[];
extern const size_t sb__err_n_columns;

typedef struct sb_err_dialect {
    const char *text, *blob; /* column types (SQLite, PostgreSQL) */
    const char *min, *max;   /* two-argument minimum / maximum, or NULL:
                                a CASE (SQL Server 2017 has no LEAST) */
    const char *now;         /* the current time in microseconds: the
                                host clock ($2) on SQLite, the database
                                clock on PostgreSQL and SQL Server */
    int pg;                  /* PostgreSQL */
    int ms;                  /* SQL Server (T-SQL) */
} sb_err_dialect;

/* The collation every key and name column has on SQL Server, and the
 * exact comparison of a column with a value there: SQL Server pads the
 * shorter side of = with spaces under every collation, so 'a' = 'a '
 * holds; the second comparison, with a sentinel appended, does not pad.
 * The plain one comes first so an index is still sought. `val` may be a
 * parameter or a column of another collation (OPENJSON's): both sides
 * compare under the binary collation (the store's columns are all binary
 * already; db/tsql.h's SB_TSQL_SAME leaves the first comparison to the
 * column's own collation, for tables a migration owns). */
/* Message and conversation ids are indexed by their first characters
 * (SQLite, PostgreSQL): a header value is of any length, and a whole one
 * over PostgreSQL's B-tree limit (about 2.7 KB) would fail its batch.
 * A lookup compares the prefixes, then the rests (list.c): not the whole
 * column with the value, which SQLite would propagate into the prefix
 * term as a constant, leaving it nothing to look up by. */
#define SB_ERR_PREFIX_INDEXED "200"
#define SB_ERR_PREFIX_REST "201"

#define SB_MS_BIN2 SB_TSQL_BIN2
#define SB_MS_SAME(col, val)                                                   \
    col " = " val " COLLATE " SB_MS_BIN2 " AND " col " + N'.' = " val          \
        " + N'.' COLLATE " SB_MS_BIN2
#define SB_MS_ROWCOUNT SB_TSQL_ROWCOUNT
/* The JSON array of strings `param`, one row (column v) per element. */
#define SB_MS_JSON_IDS(param, len)                                             \
    "OPENJSON(CAST(" param " AS nvarchar(max))) WITH (v nvarchar(" len ") '$')"

/* The SET list of the upsert's update branch (E10): `t` qualifies the
 * stored row, `in` the incoming one ("excluded" / "x"). */
void sb__errors_upsert_set(const sb_err_dialect *d, sb_buf *b, const char *t,
                           const char *in);
/* "the smaller (`fn` = min) / larger of qa.col and qb.col" as the dialect
 * writes it. */
void sb__errors_minmax(const sb_err_dialect *d, sb_buf *b, int larger,
                       const char *qa, const char *qb, const char *col);

/* counts.c: IF OBJECT_ID(name) IS NULL EXEC(N'CREATE TRIGGER `name` ON
 * `table` AFTER `ev` AS `body`') - CREATE TRIGGER must open its batch;
 * the body's quotes are doubled. */
void sb__errors_ms_trigger(sb_buf *b, const char *name, const char *table,
                           const char *ev, const char *body);

/* sql_mssql.c: statement `k` in T-SQL into `b`; 0 (nothing written) for
 * a statement whose text is the same on every backend (sql.c's). */
int sb__errors_sql_mssql(const sb_err_dialect *d, int k, sb_buf *b);

#endif
