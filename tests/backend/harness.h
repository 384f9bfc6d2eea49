/*
 * harness.h - shared by the conformance suite: picks the backend from
 * SQLBUS_TEST_BACKEND (sqlite | postgresql), gives every test its own
 * table prefix (so tests may share one PostgreSQL database and run in
 * parallel), and cleans up. A PostgreSQL run without SQLBUS_TEST_PG_URL
 * exits 77, which ctest reports as skipped, never as passed.
 */
#ifndef SBT_HARNESS_H
#define SBT_HARNESS_H

#include "sqlbus.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

/* Resolve the backend; call first in main(). */
void sbt_init(void);
/* "sqlite", "postgresql", "odbc-postgresql" or "mssql". */
const char *sbt_backend(void);
int sbt_is_pg(void);
/* SQLBUS_TEST_BACKEND=mssql: SQL Server at SQLBUS_TEST_MSSQL (the run
 * exits 77, "skipped: no SQL Server configured", without it). */
int sbt_is_mssql(void);
/* The odbc+postgresql: URL (psqlODBC) of a postgresql://USER@HOST:PORT/DB
 * URL, into out. */
void sbt_odbc_url_of(const char *pg_url, char *out, size_t cap);
/* libpq's URL of this run's PostgreSQL database (also on the
 * odbc-postgresql backend), for native connections; "" on SQLite. */
const char *sbt_pg_url(void);
/* The database URL of this run (borrowed). */
const char *sbt_url(void);
/* A fresh table prefix for one test ("t<pid>_<n>_"), borrowed until the
 * next call. */
const char *sbt_new_prefix(void);
/* Open a bus on the run's database with `prefix`; `opts` may be NULL. */
sb_bus *sbt_open(const char *prefix, const sb_options *opts);
/* Drop the transport's and the channel's tables of `prefix` (PostgreSQL,
 * SQL Server); SQLite files are removed at exit. */
void sbt_drop(sb_bus *bus, const char *prefix);
/* Run SQL through a transaction of `bus`; asserts success. */
void sbt_exec(sb_bus *bus, const char *sql);
/* Count rows of `queue` in the prefix's messages table. */
long sbt_count(sb_bus *bus, const char *queue);
/* Publish n messages "m<i>" to queue; ids returned if ids != NULL. */
void sbt_publish_n(sb_bus *bus, const char *queue, int n, char (*ids)[37]);
/* Rows of `table` (without prefix) for one correlation id, read through a
 * native connection (libpq or sqlite3), outside the library. */
long sbt_native_count(const char *prefix, const char *table, const char *cid);
/* The integer a one-row query returns ($1 = `param`, which it must use),
 * through a native connection (SQL Server: a connection of the ODBC
 * driver layer, apart from the bus); fails the test on errors. */
long sbt_native_scalar(const char *sql, const char *param);
/* SQL Server and PostgreSQL: run a batch on such a connection, in
 * autocommit (for statements a transaction refuses, as DROP FULLTEXT
 * CATALOG, and for DDL a test sets up). */
void sbt_native_exec(const char *sql);
/* Hold the write lock of the prefix's transport table through a native
 * connection (PostgreSQL: LOCK TABLE ... IN EXCLUSIVE MODE; SQLite: BEGIN
 * IMMEDIATE) until released: the library's writes wait meanwhile. Not on
 * SQL Server. */
typedef struct sbt_hold sbt_hold;
sbt_hold *sbt_hold_writes(const char *prefix);
/* Release the hold; `sql` (or NULL) runs under it first and commits. */
void sbt_release_writes(sbt_hold *h, const char *sql);
/* Sleep for ms milliseconds. */
void sbt_sleep_ms(long ms);
/* Fail the test with the error's message unless rc is SB_OK. */
void sbt_ok(int rc, const sb_error *err, const char *what);

#endif
