/*
 * tsql.h - pieces of T-SQL text that every module's SQL Server dialect
 * shares (the statements themselves live with each module). Macros that
 * expand to string literals, so statements stay compile-time constants.
 */
#ifndef SB_TSQL_H
#define SB_TSQL_H

#include "sqlbus.h"

#include <stdbool.h>
#include <stdint.h>

/* Collation of every identity column and of each exact comparison:
 * ordinal, so nothing the library treats as distinct is folded (case
 * under _CI_, accents under _AI_). */
#define SB_TSQL_BIN2 "Latin1_General_100_BIN2"

/* `col` equals `val` exactly. SQL Server pads the shorter side of = with
 * spaces under every collation, binary ones included, so "a" = "a " is
 * true; the sentinel defeats that, and the binary collation a column on
 * a case-insensitive one. The plain comparison stays first so an index
 * on `col` is still sought. */
#define SB_TSQL_SAME(col, val)                                                 \
    col " = " val " AND " col " + N'.' = " val " + N'.' COLLATE " SB_TSQL_BIN2

/* The database clock, as stored: whole microseconds (datetime2(7) holds
 * 100 ns, and a time read back as microseconds must compare equal to the
 * row it came from, so every stored "now" is rounded to the microsecond
 * once, here). */
#define SB_TSQL_NOW "CAST(SYSUTCDATETIME() AS datetime2(6))"
#define SB_TSQL_EPOCH "CAST('19700101' AS datetime2(7))"
/* The database clock in microseconds since the epoch (as stored). */
#define SB_TSQL_NOW_US                                                         \
    "DATEDIFF_BIG(microsecond, " SB_TSQL_EPOCH ", " SB_TSQL_NOW ")"
/* A bigint of microseconds since the epoch as datetime2(7). DATEADD takes
 * an int: days, then seconds, then microseconds. */
#define SB_TSQL_FROM_US(us)                                                    \
    "DATEADD(microsecond, CAST(" us " % 1000000 AS int), DATEADD(second, "     \
    "CAST((" us " / 1000000) % 86400 AS int), DATEADD(day, CAST(" us           \
    " / 86400000000 AS int), " SB_TSQL_EPOCH ")))"
/* Now plus / minus a bigint of milliseconds `ms` (days first: delays
 * reach 100 years, past an int of milliseconds). */
#define SB_TSQL_PLUS_MS(ms)                                                    \
    "DATEADD(millisecond, CAST(" ms " % 86400000 AS int), DATEADD(day, "       \
    "CAST(" ms " / 86400000 AS int), " SB_TSQL_NOW "))"
#define SB_TSQL_MINUS_MS(ms)                                                   \
    "DATEADD(millisecond, -CAST(" ms " % 86400000 AS int), DATEADD(day, "      \
    "-CAST(" ms " / 86400000 AS int), " SB_TSQL_NOW "))"

/* Ends a statement whose caller reads the row count: the ODBC driver
 * takes it from this result, which a server-wide SET NOCOUNT ON cannot
 * hide (db.h). */
#define SB_TSQL_ROWCOUNT "; SELECT @@ROWCOUNT"

/* sqlbus's own error numbers, thrown by the batches that take an
 * application lock (SB_TSQL_APPLOCK_CHECK) and classified by the ODBC
 * driver (db/classify.c): one per return code of sp_getapplock that is
 * not a grant, so a parameter error is never read as a lock timeout. */
#define SB_TSQL_APPLOCK_TIMEOUT 51222    /* -1: the wait timed out */
#define SB_TSQL_APPLOCK_CALL_ERROR 51223 /* -999: parameters or the call */
#define SB_TSQL_APPLOCK_DEADLOCK 51224   /* -3: chosen as deadlock victim */
#define SB_TSQL_APPLOCK_CANCELLED 51225  /* -2: the request was cancelled */
#define SB_TSQL_STR_(x) #x
#define SB_TSQL_STR(x) SB_TSQL_STR_(x)

/* The test of sp_getapplock's return code @sb_rc that every lock batch
 * ends with (0 and 1 are grants); `lock` names the lock in the message.
 * THROW takes a literal message, hence one line per code; anything
 * negative that is not -1, -2 or -3 is a call error (-999: a parameter
 * failed validation). With XACT_ABORT on (session_setup) the THROW also
 * ends the transaction. */
#define SB_TSQL_APPLOCK_CHECK(lock)                                                                                                                                            \
    "IF @sb_rc = -1 THROW " SB_TSQL_STR(                                                                                                                                       \
        SB_TSQL_APPLOCK_TIMEOUT) ", N'sqlbus: timed out waiting for the " lock                                                                                                 \
                                 " (sp_getapplock "                                                                                                                            \
                                 "returned -1)', 1;\n"                                                                                                                         \
                                 "IF @sb_rc = -2 THROW " SB_TSQL_STR(                                                                                                          \
                                     SB_TSQL_APPLOCK_CANCELLED) ", N'sqlbus: the request for the " lock                                                                        \
                                                                " was cancelled "                                                                                              \
                                                                "(sp_getapplock returned -2)', 1;\n"                                                                           \
                                                                "IF @sb_rc = -3 THROW " SB_TSQL_STR(                                                                           \
                                                                    SB_TSQL_APPLOCK_DEADLOCK) ", N'sqlbus: chosen as deadlock victim waiting for the " lock                    \
                                                                                              " (sp_getapplock returned -3)', 1;\n"                                            \
                                                                                              "IF @sb_rc < 0 THROW " SB_TSQL_STR(                                              \
                                                                                                  SB_TSQL_APPLOCK_CALL_ERROR) ", N'sqlbus: sp_getapplock failed for the " lock \
                                                                                                                              ": parameter "                                   \
                                                                                                                              "validation or other call error (-999)', 1;\n"

/* The schema-wide DDL lock, held to the end of the transaction (run with
 * sb__exec: a batch). A wait past 30 s fails as 51222, which the driver
 * counts as a lock timeout (retried). */
#define SB_TSQL_SCHEMA_LOCK                                                                     \
    "DECLARE @sb_rc int, @sb_res nvarchar(255) = N'sqlbus:ddl:' + "                             \
    "SCHEMA_NAME();\n"                                                                          \
    "EXEC @sb_rc = sp_getapplock @Resource = @sb_res, @LockMode = "                             \
    "N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = 30000;\n" SB_TSQL_APPLOCK_CHECK( \
        "schema lock")

/* The session's LOCK_TIMEOUT put back to its default (wait forever): a
 * batch that bounds its lock waits (the transport's index builds) resets
 * it itself, but an attention (a client cancel or query timeout) or a
 * compile error ends the batch before its CATCH, and the pooled
 * connection would keep the bound. So every rollback on SQL Server ends
 * with it too (SB_TSQL_ROLLBACK): such a batch runs in a transaction, and
 * whatever aborts it is followed by that rollback before the connection
 * returns to the pool. */
/* Transactions are T-SQL statements on an autocommit connection (odbc.c
 * says why, docs/backends.md "Transactions"). */
#define SB_TSQL_BEGIN "BEGIN TRANSACTION"
#define SB_TSQL_COMMIT "COMMIT TRANSACTION"
#define SB_TSQL_LOCK_TIMEOUT_RESET "SET LOCK_TIMEOUT -1"
#define SB_TSQL_ROLLBACK                                                       \
    "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; " SB_TSQL_LOCK_TIMEOUT_RESET

/* The session options every connection forces at connect, whatever the
 * server's, the database's and the driver's defaults: row counts are read
 * from SQLRowCount (NOCOUNT off); an error ends the transaction
 * (XACT_ABORT); and the seven options that filtered indexes and indexed
 * computed columns require of every statement that writes their tables
 * (error 1934 otherwise: channel_messages and failed_messages have
 * filtered indexes; ODBC drivers leave ARITHABORT off). */
#define SB_TSQL_SESSION                                                        \
    "SET NOCOUNT OFF; SET XACT_ABORT ON; SET ANSI_NULLS ON; "                  \
    "SET ANSI_PADDING ON; SET ANSI_WARNINGS ON; SET ARITHABORT ON; "           \
    "SET CONCAT_NULL_YIELDS_NULL ON; SET QUOTED_IDENTIFIER ON; "               \
    "SET NUMERIC_ROUNDABORT OFF; "

/* The current database's compatibility level and name (a login always
 * sees its own database's row of sys.databases). Sent in the batch of
 * SB_TSQL_SESSION: one round trip. */
#define SB_TSQL_COMPAT_LEVEL                                                   \
    "SELECT compatibility_level, DB_NAME() FROM sys.databases WHERE "          \
    "database_id = DB_ID()"
/* OPENJSON, which every batch statement of the channel and the error
 * store reads its rows with, needs level 130 (SQL Server 2016); below it
 * the function is unknown (error 208, "invalid object name", which would
 * read as a missing table). */
#define SB_TSQL_MIN_COMPAT 130

/* Whether `sql` ends, trailing blanks and ';' aside, with SELECT
 * @@ROWCOUNT (any case, blanks between; SELECT a word of its own): the
 * statements whose row count the ODBC driver reads from that result
 * (db.h). Pure. */
bool sb__tsql_ends_with_rowcount(const char *sql);

/* SB_OK when `level` (the database's compatibility_level) is at least
 * SB_TSQL_MIN_COMPAT; else SB_BACKEND in `err` (field
 * "compatibility_level") with a message naming the level, why 130 is
 * needed and the ALTER DATABASE that fixes it, `db_name` (borrowed; NULL
 * or "" when unknown) quoted as an identifier. Pure; thread-safe. */
int sb__tsql_check_compat(int64_t level, const char *db_name, sb_error *err);

#endif
