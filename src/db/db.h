/*
 * db.h - the driver-neutral database layer.
 *
 * Modules above (transport, channel and errors) see only this
 * interface: connections from a pool, parameterised statements written
 * once with `$1..$N` placeholders, typed values, materialised result rows,
 * transactions, and result codes already classified from SQLSTATE or
 * SQLite codes into transient (SB_BUSY, SB_UNAVAILABLE) and permanent.
 *
 * A driver (sqlite.c, postgres.c, odbc.c) fills an sb_driver table.
 * Placeholders: SQL text always uses `$N`; a driver rewrites it to its own
 * style (`?N` for SQLite, `?` with a parameter map for ODBC).
 */
#ifndef SB_DB_H
#define SB_DB_H

#include "core/core.h"

#include <stdbool.h>

enum sb_dialect {
    SB_DIALECT_SQLITE = 1,
    SB_DIALECT_POSTGRES = 2,
    SB_DIALECT_MSSQL = 3
};

/* A typed value: statement parameter (borrowed pointers) or result cell
 * (pointers into the sb_rows that holds it). */
enum sb_vtype { SB_V_NULL = 0, SB_V_INT = 1, SB_V_TEXT = 2, SB_V_BLOB = 3 };

typedef struct sb_value {
    int type;      /* enum sb_vtype */
    int64_t i;     /* SB_V_INT */
    const void *p; /* SB_V_TEXT (NUL-terminated in results) / SB_V_BLOB */
    size_t len;    /* bytes of p, without the NUL */
} sb_value;

static inline sb_value sb__v_null(void)
{
    sb_value v = {SB_V_NULL, 0, NULL, 0};
    return v;
}
static inline sb_value sb__v_int(int64_t i)
{
    sb_value v = {SB_V_INT, i, NULL, 0};
    return v;
}
sb_value sb__v_text(const char *s); /* NULL -> SB_V_NULL */
static inline sb_value sb__v_blob(const void *p, size_t len)
{
    sb_value v = {SB_V_BLOB, 0, p, len};
    return v;
}

/*
 * Result rows, materialised. Cells are row-major. Conversions done by the
 * driver so every backend looks the same:
 *   integers, booleans            -> SB_V_INT
 *   text, varchar, uuid (as text) -> SB_V_TEXT (uuid in lower-case form)
 *   bytea / BLOB                  -> SB_V_BLOB
 *   timestamptz                   -> SB_V_INT, microseconds since the Unix
 *                                    epoch (SQLite stores that directly)
 *   SQL NULL                      -> SB_V_NULL
 */
typedef struct sb_rows {
    size_t nrows;
    size_t ncols;
    sb_value *cells; /* nrows * ncols */
    void *arena;     /* driver-owned storage for cell bytes */
} sb_rows;

const sb_value *sb__rows_at(const sb_rows *rows, size_t r, size_t c);
int64_t sb__rows_int(const sb_rows *rows, size_t r, size_t c);
/* Text cell or NULL for SQL NULL. */
const char *sb__rows_text(const sb_rows *rows, size_t r, size_t c);
void sb__rows_free(sb_rows *rows);
/* Build an sb_rows with room for nrows*ncols cells (all NULL); the cell
 * bytes of TEXT/BLOB values are copied in with sb__rows_set_bytes. */
int sb__rows_new(size_t nrows, size_t ncols, sb_rows **out);
int sb__rows_set_bytes(sb_rows *rows, size_t r, size_t c, int type,
                       const void *p, size_t len);
/* Grow to `nrows` rows, the new cells NULL (SB_NOMEM). */
int sb__rows_grow(sb_rows *rows, size_t nrows);

/* What a driver needs to connect (the parsed URL plus options). */
typedef struct sb_db_config {
    int dialect;             /* enum sb_dialect: the SQL spoken */
    bool odbc;               /* reached through ODBC (odbc.c) */
    char *target;            /* SQLite path, libpq conninfo or ODBC
                                connection string (owned) */
    int durability;          /* enum sb_durability (SQLite) */
    int64_t busy_timeout_ms; /* SQLite busy_timeout */
    /* SQLite: WAL pages after which a commit checkpoints (URL option
     * wal_autocheckpoint; SB_WAL_AUTOCHECKPOINT_*). */
    int64_t wal_autocheckpoint;
    char *schema; /* PostgreSQL schema or NULL (owned) */
    /* Each statement's time limit (sb_options.statement_timeout_ms); 0 =
     * none. A statement cancelled at it fails with SB_TIMEOUT, field
     * "statement_timeout_ms". */
    int64_t statement_timeout_ms;
    sb_logger log;
} sb_db_config;

/* SQLite's checkpoint after this many WAL pages (4 KiB each), not
 * SQLite's 1,000: the error store's ingestion of 100,000 dead letters
 * went from ~2,600 to ~3,400 msg/s (fewer copies of the same hot pages
 * into the database file, and fewer fsyncs of it), the transport's
 * burn-down unchanged (docs/benchmarks.md); the WAL file grows to about
 * 40 MiB between checkpoints. */
#define SB_WAL_AUTOCHECKPOINT_DEFAULT 10000
#define SB_WAL_AUTOCHECKPOINT_MIN 100
#define SB_WAL_AUTOCHECKPOINT_MAX 1000000

/*
 * Parse a connection URL (rule: spec README §3) into `cfg` (owned strings;
 * release with sb__db_config_free). Accepts "sqlite:PATH",
 * "sqlite://PATH", a bare path ending in ".db", "postgresql://...",
 * "postgres://..." and libpq "key=value" strings. SQLite URLs may carry
 * "?durability=normal|full&busy_timeout=MS&wal_autocheckpoint=PAGES".
 * Free of I/O; fuzzed.
 */
int sb__db_parse_url(const char *url, sb_db_config *cfg, sb_error *err);
void sb__db_config_free(sb_db_config *cfg);
/* Check a libpq "port" value (one port, or a comma-separated list, one
 * per host; an empty entry is the default port) as libpq reads it: each
 * a decimal integer 1 to 65535, white space around it allowed. SB_OK, or
 * SB_INVALID with field "url" naming the port. Pure; thread-safe. */
int sb__pg_check_ports(const char *ports, sb_error *err);

typedef struct sb_conn sb_conn;

/* One statement of a pipeline (sb__pipeline): text and parameters in, as
 * for sb__query; `rows` and `changes` (each may be NULL) receive its
 * result. */
typedef struct sb_call {
    const char *sql;
    const sb_value *params;
    size_t nparams;
    sb_rows **rows;
    int64_t *changes;
} sb_call;

typedef struct sb_driver {
    const char *name; /* "sqlite", "postgresql" */
    int dialect;
    size_t max_params; /* parameters one statement may bind */
    int (*connect)(const sb_db_config *cfg, sb_conn **out, sb_error *err);
    void (*close)(sb_conn *c);
    /* Run one or more statements without parameters or results. */
    int (*exec)(sb_conn *c, const char *sql, sb_error *err);
    /* Run one statement with parameters. `rows` may be NULL when the
     * caller wants no result; `changes` (may be NULL) receives the number
     * of rows inserted/updated/deleted. Prepared statements are cached
     * per connection keyed by the SQL text.
     * SQL Server (dialect SB_DIALECT_MSSQL) only: a text that ends,
     * trailing blanks and ';' aside, with `SELECT @@ROWCOUNT` (any case)
     * reports its row count through that result, so a server-wide SET
     * NOCOUNT ON cannot hide it: results without columns before it are
     * skipped, the first result with columns is `rows`, and `changes` is
     * its row 0, column 0 as an integer (0 without a row; 0 and no rows
     * when no result has columns). */
    int (*query)(sb_conn *c, const char *sql, const sb_value *params,
                 size_t nparams, sb_rows **rows, int64_t *changes,
                 sb_error *err);
    /* Optional (NULL: sb__pipeline runs the calls one by one): run the
     * calls in order, then COMMIT if `commit`, in one round trip. As
     * sb__pipeline says. */
    int (*pipeline)(sb_conn *c, const sb_call *calls, size_t n, int commit,
                    size_t *failed, sb_error *err);
    int (*begin)(sb_conn *c, sb_error *err); /* a write transaction */
    int (*commit)(sb_conn *c, sb_error *err);
    int (*rollback)(sb_conn *c); /* best effort */
    /* The native handle: sqlite3 * or PGconn *. */
    void *(*native)(sb_conn *c);
    /* True once the connection is unusable and must be discarded. */
    bool (*broken)(sb_conn *c);
} sb_driver;

/* Every driver's connection struct starts with this. */
struct sb_conn {
    const sb_driver *drv;
    bool in_tx;
    int64_t opened_us; /* monotonic */
};

const sb_driver *sb__driver_sqlite(void);
const sb_driver *sb__driver_postgres(void);
const sb_driver *sb__driver_odbc(void);
/* The driver of a parsed URL, or NULL if none is built in. */
const sb_driver *sb__driver_for(const sb_db_config *cfg);

/* Thin wrappers so callers read naturally. */
static inline int sb__exec(sb_conn *c, const char *sql, sb_error *err)
{
    return c->drv->exec(c, sql, err);
}
static inline int sb__query(sb_conn *c, const char *sql, const sb_value *params,
                            size_t n, sb_rows **rows, int64_t *changes,
                            sb_error *err)
{
    return c->drv->query(c, sql, params, n, rows, changes, err);
}
int sb__begin(sb_conn *c, sb_error *err);
int sb__commit(sb_conn *c, sb_error *err);
void sb__rollback(sb_conn *c);

/*
 * Run `n` statements in order in the transaction open on `c` and, if
 * `commit`, commit it: on PostgreSQL in one network round trip (libpq's
 * pipeline mode, with the transaction's deferred BEGIN), elsewhere one
 * after the other. Stops at the first failure and returns its code;
 * `*failed` (may be NULL) is its index, or `n` for the commit. Calls
 * before it have their results; calls from it on have none. A failed
 * call leaves the transaction to roll back, as after sb__query; with
 * `commit`, c->in_tx is false afterwards unless a SQLite COMMIT found
 * the database busy (the transaction is still open).
 */
int sb__pipeline(sb_conn *c, const sb_call *calls, size_t n, int commit,
                 size_t *failed, sb_error *err);
/* Whether sb__pipeline saves round trips on `c` (PostgreSQL). */
static inline bool sb__pipelines(const sb_conn *c)
{
    return c->drv->pipeline != NULL;
}

/* ---- the connection pool (pool.c) ---- */
typedef struct sb_pool sb_pool;

/* Create a pool of at most `max` connections. `cfg` is moved into the
 * pool (the caller's struct is zeroed). Opens no connection yet. */
int sb__pool_new(sb_db_config *cfg, int max, sb_pool **out, sb_error *err);
void sb__pool_free(sb_pool *p);
const sb_db_config *sb__pool_config(const sb_pool *p);
/* Take a connection, opening one if none is idle and the pool has room,
 * else waiting up to `timeout_ms` (SB_BUSY when it passes). */
int sb__pool_acquire(sb_pool *p, int64_t timeout_ms, sb_conn **out,
                     sb_error *err);
/* Give a connection back; a broken one (or one still in a transaction,
 * which is rolled back first) is closed instead of kept. */
void sb__pool_release(sb_pool *p, sb_conn *c);

/* SQLite allows one writer per file. Threads of one pool queue on this
 * mutex (first come, first served) instead of polling the file lock in
 * SQLite's busy handler, which sleeps in growing steps and lets a busy
 * writer starve the others. A no-op on server backends. Taken only by
 * sb__db_run_tx, never while a caller holds an sb_tx. */
void sb__pool_write_lock(sb_pool *p);
void sb__pool_write_unlock(sb_pool *p);

/* ---- transient-fault retry (retry.c) ---- */

/* A unit of work run in one transaction on one connection. Must be safe
 * to repeat: it is re-run from the start after a transient fault. */
typedef int (*sb_tx_fn)(sb_conn *c, void *ctx, sb_error *err);

typedef struct sb_retry_policy {
    int max_attempts;       /* default 6 */
    int64_t first_delay_us; /* default 10 ms */
    int64_t max_delay_us;   /* default 1 s */
} sb_retry_policy;

/*
 * Run `fn` inside BEGIN .. COMMIT on a pooled connection. Transient
 * failures (SB_BUSY, SB_UNAVAILABLE) roll back, discard a broken
 * connection and retry with jittered exponential back-off. `policy` may
 * be NULL for defaults. `fn` may end with a committing sb__pipeline, so
 * that its last statements and the COMMIT share a round trip; the commit
 * is then not sent again. Returns the last result code.
 */
int sb__db_run_tx(sb_pool *pool, const sb_retry_policy *policy, sb_tx_fn fn,
                  void *ctx, sb_error *err);

/*
 * Open one connection of `pool` and give it back (kept idle), retrying a
 * transient failure (a refused or lost connection, SQLite BUSY) as
 * sb__db_run_tx does: with `policy` (NULL for the defaults: 6 attempts,
 * 10 ms doubling, jittered, about 0.3 s in all), each retry logged at
 * DEBUG. A permanent failure (a bad URL, a refused login) returns at
 * once. Thread-safe as the pool is.
 */
int sb__pool_connect(sb_pool *pool, const sb_retry_policy *policy,
                     sb_error *err);

/* ---- notifications (notify_postgres.c) ---- */
typedef struct sb_listener sb_listener;
/* Open a dedicated connection that LISTENs on `channel` (PostgreSQL
 * only; SB_MISUSE on other dialects). */
int sb__listener_open(const sb_db_config *cfg, const char *channel,
                      sb_listener **out, sb_error *err);
/* Wait up to `timeout_ms` for one notification: SB_OK with its payload
 * copied into `payload`, SB_TIMEOUT, or SB_UNAVAILABLE (reopen it). */
int sb__listener_wait(sb_listener *l, int64_t timeout_ms, char *payload,
                      size_t cap, sb_error *err);
void sb__listener_close(sb_listener *l);

/* ---- SQLite cross-process wake-ups (watch_sqlite.c) ---- */
typedef struct sb_wal_watch sb_wal_watch;
/* Call `fn(user)` on its own thread whenever the WAL file of the SQLite
 * database at `db_path` changes (any commit of any process on the host).
 * NULL when the watch cannot be set up (logged): callers keep polling. */
sb_wal_watch *sb__wal_watch_start(const char *db_path, const sb_logger *log,
                                  void (*fn)(void *user), void *user);
void sb__wal_watch_stop(sb_wal_watch *w);

/* Classify a PostgreSQL SQLSTATE into a result code (exposed for tests
 * and for the ODBC driver, which reports the same SQLSTATEs). */
int sb__classify_sqlstate(const char *sqlstate);
/* Classify a SQL Server native error number (the ODBC driver's first
 * look on that dialect; exposed for tests): SB_OK when the number
 * decides nothing. */
int sb__classify_mssql_native(long native);
/* The result of a failed ODBC connect from its SQLSTATE: class IM (the
 * driver manager knows no such driver or data source) and 01 (only
 * warnings: the driver could not be loaded) SB_INVALID, class
 * 28 (the login was refused) and 3D (no such database) SB_BACKEND, as
 * they stay so; anything else, including no SQLSTATE, SB_UNAVAILABLE.
 * Pure; thread-safe. */
int sb__classify_odbc_connect(const char *sqlstate);
/* Read a libpq connection failure message written with PQERRORS_VERBOSE
 * (what the server sent is "SEVERITY:  SQLSTATE: message", then a
 * "LOCATION:  " line): the last SQLSTATE into `state` ("" when the
 * server never answered), and the message without the SQLSTATEs and the
 * LOCATION lines into `out` (cut to `cap`, always NUL-terminated). Pure;
 * thread-safe. */
void sb__pg_connect_error(const char *verbose, char state[6], char *out,
                          size_t cap);

#endif
