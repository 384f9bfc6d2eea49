/*
 * tsql.h - pieces of T-SQL text that every module's SQL Server dialect
 * shares (the statements themselves live with each module). Macros that
 * expand to string literals, so statements stay compile-time constants.
 */
#ifndef SB_TSQL_H
#define SB_TSQL_H

#include <stdbool.h>

/* Collation of every identity column and of each exact comparison:
 * ordinal, so nothing the library treats as distinct is folded (case
 * under _CI_, accents under _AI_). */
#define SB_TSQL_BIN2 "Latin1_General_100_BIN2"

/* `col` equals `val` exactly. SQL Server pads the shorter side of = with
 * spaces under every collation, binary ones included, so "a" = "a " is
 * true; the sentinel defeats that, and the binary collation a column on
 * a case-insensitive one. The plain comparison stays first so an index
 * on `col` is still sought. */
#define SB_TSQL_SAME(col, val)                                               \
    col " = " val " AND " col " + N'.' = " val                               \
        " + N'.' COLLATE " SB_TSQL_BIN2

/* The database clock, as stored: whole microseconds (datetime2(7) holds
 * 100 ns, and a time read back as microseconds must compare equal to the
 * row it came from, so every stored "now" is rounded to the microsecond
 * once, here). */
#define SB_TSQL_NOW "CAST(SYSUTCDATETIME() AS datetime2(6))"
#define SB_TSQL_EPOCH "CAST('19700101' AS datetime2(7))"
/* The database clock in microseconds since the epoch (as stored). */
#define SB_TSQL_NOW_US                                                       \
    "DATEDIFF_BIG(microsecond, " SB_TSQL_EPOCH ", " SB_TSQL_NOW ")"
/* A bigint of microseconds since the epoch as datetime2(7). DATEADD takes
 * an int: days, then seconds, then microseconds. */
#define SB_TSQL_FROM_US(us)                                                  \
    "DATEADD(microsecond, CAST(" us " % 1000000 AS int), DATEADD(second, "   \
    "CAST((" us " / 1000000) % 86400 AS int), DATEADD(day, CAST(" us         \
    " / 86400000000 AS int), " SB_TSQL_EPOCH ")))"
/* Now plus / minus a bigint of milliseconds `ms` (days first: delays
 * reach 100 years, past an int of milliseconds). */
#define SB_TSQL_PLUS_MS(ms)                                                  \
    "DATEADD(millisecond, CAST(" ms " % 86400000 AS int), DATEADD(day, "      \
    "CAST(" ms " / 86400000 AS int), " SB_TSQL_NOW "))"
#define SB_TSQL_MINUS_MS(ms)                                                 \
    "DATEADD(millisecond, -CAST(" ms " % 86400000 AS int), DATEADD(day, "     \
    "-CAST(" ms " / 86400000 AS int), " SB_TSQL_NOW "))"

/* Ends a statement whose caller reads the row count: the ODBC driver
 * takes it from this result, which a server-wide SET NOCOUNT ON cannot
 * hide (db.h). */
#define SB_TSQL_ROWCOUNT "; SELECT @@ROWCOUNT"

/* The schema-wide DDL lock, held to the end of the transaction (run with
 * sb__exec: a batch). A wait past 30 s fails as 51222, which the driver
 * counts as a lock timeout (retried). */
#define SB_TSQL_SCHEMA_LOCK                                                  \
    "DECLARE @sb_rc int, @sb_res nvarchar(255) = N'sqlbus:ddl:' + "          \
    "SCHEMA_NAME();\n"                                                       \
    "EXEC @sb_rc = sp_getapplock @Resource = @sb_res, @LockMode = "          \
    "N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = 30000;\n"     \
    "IF @sb_rc < 0 THROW 51222, N'sqlbus: timed out waiting for the schema " \
    "lock (sp_getapplock)', 1;\n"

/* Whether `sql` ends, trailing blanks and ';' aside, with SELECT
 * @@ROWCOUNT (any case, blanks between; SELECT a word of its own): the
 * statements whose row count the ODBC driver reads from that result
 * (db.h). Pure. */
bool sb__tsql_ends_with_rowcount(const char *sql);

#endif
