/* sqlite.c - the SQLite driver: WAL, a busy handler, BEGIN IMMEDIATE for
 * every write transaction (so two writers never deadlock upgrading a read
 * lock), synchronous=FULL unless durability=normal was asked for, and
 * with statement_timeout_ms a per-statement deadline (S10). */
#include "db/db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#define STMT_CACHE 64
/* VM steps between two looks at the clock while a statement has a
 * deadline: a clock read (vDSO, ~20 ns) per ~1,000 steps (a few us). */
#define PROGRESS_STEPS 1000

typedef struct cached_stmt {
    char *sql; /* the caller's text ($N placeholders) */
    uint64_t hash;
    sqlite3_stmt *stmt; /* prepared from the ?N rewrite */
    uint64_t used;
} cached_stmt;

typedef struct sqlite_conn {
    struct sb_conn base;
    sqlite3 *db;
    cached_stmt cache[STMT_CACHE];
    uint64_t tick;
    int64_t busy_timeout_us;
    int64_t busy_since_us; /* first BUSY of the current wait */
    /* S10: statement_timeout_ms (0 = none, and no progress handler). The
     * deadline (monotonic us) is set while a statement runs, 0 between
     * statements; timed_out says the last one was stopped at it. */
    int64_t statement_timeout_ms;
    int64_t deadline_us;
    bool timed_out;
    /* A statement of the open transaction timed out and the transaction
     * was rolled back: later statements fail until it ends (PostgreSQL's
     * 25P02), so none runs outside it in autocommit mode. */
    bool tx_aborted;
} sqlite_conn;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static int classify(int xrc)
{
    switch (xrc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return SB_BUSY;
    case SQLITE_NOMEM: return SB_NOMEM;
    case SQLITE_TOOBIG: return SB_TOOBIG;
    case SQLITE_CONSTRAINT:
        if (xrc == SQLITE_CONSTRAINT_PRIMARYKEY ||
            xrc == SQLITE_CONSTRAINT_UNIQUE)
            return SB_CONFLICT;
        return SB_INVALID;
    case SQLITE_MISMATCH:
    case SQLITE_RANGE: return SB_INVALID;
    default: return SB_BACKEND;
    }
}

static int fail(sqlite_conn *c, int xrc, sb_error *err, const char *what)
{
    if (c->timed_out) {
        /* The progress handler interrupted the statement, or the busy
         * handler stopped waiting for the lock at the deadline. */
        sb__err(err, SB_TIMEOUT, "statement_timeout_ms",
                "the statement ran longer than statement_timeout_ms (%lld "
                "ms) and was cancelled (sqlite: %s)",
                (long long)c->statement_timeout_ms,
                (xrc & 0xff) == SQLITE_BUSY ? "waiting for the write lock"
                                            : "interrupted");
        if (err != NULL)
            err->native = xrc;
        return SB_TIMEOUT;
    }
    int rc = classify(xrc);
    if (err != NULL) {
        sb__err(err, rc, NULL, "sqlite: %s: %s", what,
                c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(xrc));
        err->native = xrc;
    }
    return rc;
}

/* S10: a statement starts (deadline set) and ends (cleared, after its
 * error was classified). Without a limit both are a store or two. */
static void deadline_start(sqlite_conn *c)
{
    c->timed_out = false;
    if (c->statement_timeout_ms > 0)
        c->deadline_us = sb__mono_us() + c->statement_timeout_ms * 1000;
}

static void deadline_end(sqlite_conn *c)
{
    c->deadline_us = 0;
    c->timed_out = false;
}

/* The progress handler (installed only with a limit): nonzero past the
 * deadline, which makes the statement fail with SQLITE_INTERRUPT. SQLite
 * rolls back the transaction of an interrupted write; a read leaves it
 * open. Called only on the connection's own thread. */
static int progress(void *arg)
{
    sqlite_conn *c = arg;
    if (c->deadline_us == 0 || sb__mono_us() < c->deadline_us)
        return 0;
    c->timed_out = true;
    return 1;
}

/* After a statement stopped at its deadline: end the transaction it ran
 * in, as PostgreSQL does (a timed-out read would otherwise leave it open
 * and a later COMMIT would keep the writes before it). The deadline is
 * cleared first, so the ROLLBACK itself is not interrupted. */
static void rollback_timed_out(sqlite_conn *c)
{
    if (!sqlite3_get_autocommit(c->db))
        (void)sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    if (c->base.in_tx)
        c->tx_aborted = true;
}

static int aborted(sb_error *err)
{
    return sb__err(err, SB_BACKEND, NULL,
                   "the transaction was rolled back when a statement in it "
                   "ran longer than statement_timeout_ms");
}

/* Run SQL without parameters; with several statements (sqlite3_exec)
 * the deadline covers them all. */
static int run_exec(sqlite_conn *c, const char *sql, sb_error *err)
{
    deadline_start(c);
    int xrc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    int rc = xrc == SQLITE_OK
                 ? SB_OK
                 : fail(c, sqlite3_extended_errcode(c->db), err, "exec");
    deadline_end(c);
    if (rc == SB_TIMEOUT)
        rollback_timed_out(c);
    return rc;
}

static int sl_exec(sb_conn *conn, const char *sql, sb_error *err)
{
    sqlite_conn *c = (sqlite_conn *)conn;
    if (c->tx_aborted)
        return aborted(err);
    return run_exec(c, sql, err);
}

static void sl_close(sb_conn *conn)
{
    sqlite_conn *c = (sqlite_conn *)conn;
    if (c == NULL)
        return;
    for (int i = 0; i < STMT_CACHE; i++) {
        sqlite3_finalize(c->cache[i].stmt);
        sb__free(c->cache[i].sql);
    }
    sqlite3_close_v2(c->db);
    sb__free(c);
}

/* Switching a new file to WAL needs a moment of exclusive access, and
 * SQLite answers BUSY at once instead of calling the busy handler when
 * another process is opening the same new file: retry within the busy
 * timeout. An existing WAL database answers at once. */
static int enable_wal(sqlite_conn *c, int64_t busy_timeout_ms, sb_error *err)
{
    int64_t deadline = sb__mono_us() + busy_timeout_ms * 1000;
    for (;;) {
        int rc = sl_exec(&c->base, "PRAGMA journal_mode=WAL;", err);
        if (rc != SB_BUSY || sb__mono_us() >= deadline)
            return rc;
        sb__sleep_us(sb__jitter_us(5000));
    }
}

/* The busy handler. SQLite's own (busy_timeout) sleeps 1, 2, 5, 10 ...
 * ms between tries, so a writer that waits behind a commit of a fraction
 * of a millisecond loses milliseconds; this one retries every 50 us for
 * the first millisecond, every 250 us up to 10 ms, then every 2 ms, until
 * the timeout. Called only on the connection's own thread. */
static int busy_wait(void *arg, int count)
{
    sqlite_conn *c = arg;
    int64_t now = sb__mono_us();
    if (count == 0)
        c->busy_since_us = now;
    int64_t waited = now - c->busy_since_us;
    if (waited >= c->busy_timeout_us)
        return 0;
    /* A statement with a deadline waits for the lock until then only,
     * as PostgreSQL's statement_timeout counts lock waits (S10). */
    if (c->deadline_us != 0 && now >= c->deadline_us) {
        c->timed_out = true;
        return 0;
    }
    sb__sleep_us(waited < 1000 ? 50 : waited < 10000 ? 250 : 2000);
    return 1;
}

/* Why the file could not be opened, from the system's errno: SQLite's
 * own text is "unable to open database file" whatever the cause. NULL
 * for an errno without a sentence here. */
static const char *open_reason(int sys_errno)
{
    switch (sys_errno) {
    case ENOENT:
        return "no such file or directory (sqlbus creates the file, not its "
               "directory)";
    case EISDIR: return "it is a directory";
    case EACCES:
    case EPERM: return "permission denied";
    case EROFS: return "read-only file system";
    default: return NULL;
    }
}

/* The error of an open that failed. A file that cannot be opened (SQLite's
 * CANTOPEN: no directory, a directory, no permission) stays so until
 * someone changes the path or the file system, so it is SB_BACKEND, not
 * the SB_UNAVAILABLE of an outage that callers retry; BUSY and NOMEM keep
 * their classes. Field "url"; the SQLite code in `native`. */
static int open_failed(sqlite_conn *c, const char *path, int xrc, sb_error *err)
{
    int rc = classify(xrc);
    if (err == NULL)
        return rc;
    int sys = c->db != NULL ? sqlite3_system_errno(c->db) : 0;
    const char *why = open_reason(sys);
    char other[32] = "";
    if (why == NULL && sys != 0) {
        snprintf(other, sizeof other, "system error %d", sys);
        why = other;
    }
    sb__err(err, rc, "url", "cannot open the SQLite database %.300s: %s%s%s",
            path, c->db != NULL ? sqlite3_errmsg(c->db) : sqlite3_errstr(xrc),
            why != NULL ? ": " : "", why != NULL ? why : "");
    err->native = xrc;
    return rc;
}

static int sl_connect(const sb_db_config *cfg, sb_conn **out, sb_error *err)
{
    *out = NULL;
    sqlite_conn *c = sb__calloc(1, sizeof *c);
    if (c == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    c->base.drv = sb__driver_sqlite();
    c->base.opened_us = sb__mono_us();
    int xrc = sqlite3_open_v2(
        cfg->target, &c->db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (xrc != SQLITE_OK) {
        int rc = open_failed(c, cfg->target, xrc, err);
        sl_close(&c->base);
        return rc;
    }
    sqlite3_extended_result_codes(c->db, 1);
    c->busy_timeout_us = cfg->busy_timeout_ms * 1000;
    sqlite3_busy_handler(c->db, busy_wait, c);
    /* S10: without a limit no handler, so statements pay nothing. */
    c->statement_timeout_ms = cfg->statement_timeout_ms;
    if (c->statement_timeout_ms > 0)
        sqlite3_progress_handler(c->db, PROGRESS_STEPS, progress, c);
    /* journal_mode=WAL needs a moment of exclusive access the first time;
     * the busy handler covers a concurrent first start. */
    const char *sync = cfg->durability == SB_DURABILITY_NORMAL
                           ? "PRAGMA synchronous=NORMAL;"
                           : "PRAGMA synchronous=FULL;";
    int rc = enable_wal(c, cfg->busy_timeout_ms, err);
    if (rc == SB_OK)
        rc = sl_exec(&c->base, sync, err);
    /* A page cache of up to 16 MiB a connection instead of SQLite's 2 MiB:
     * the error store's ingestion re-read B-tree pages from the OS cache
     * (8-10 % faster at 40,000 rows, docs/benchmarks.md). Pages are
     * allocated as they are read, so a small database stays small.
     * Temporary storage in memory: a statement that writes many rows
     * inside a transaction (the store's upserts, a chunk a statement)
     * keeps a statement journal of every page it changes, and on disk
     * that was as many bytes again as the WAL (docs/backends.md). */
    if (rc == SB_OK)
        rc =
            sl_exec(&c->base,
                    "PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;", err);
    /* Checkpoints every SB_WAL_AUTOCHECKPOINT_DEFAULT pages unless the
     * URL says otherwise (db.h: why not SQLite's 1,000). */
    if (rc == SB_OK) {
        char pragma[64];
        int64_t pages = cfg->wal_autocheckpoint > 0
                            ? cfg->wal_autocheckpoint
                            : SB_WAL_AUTOCHECKPOINT_DEFAULT;
        snprintf(pragma, sizeof pragma, "PRAGMA wal_autocheckpoint=%lld;",
                 (long long)pages);
        rc = sl_exec(&c->base, pragma, err);
    }
    if (rc != SB_OK) {
        sl_close(&c->base);
        return rc;
    }
    *out = &c->base;
    return SB_OK;
}

/* Rewrite $N placeholders to SQLite's ?N. Our SQL never has '$' inside a
 * literal, so a plain scan is enough. */
static char *rewrite(const char *sql)
{
    char *s = sb__strdup(sql);
    if (s == NULL)
        return NULL;
    for (char *p = s; *p; p++)
        if (p[0] == '$' && p[1] >= '0' && p[1] <= '9')
            p[0] = '?';
    return s;
}

static int prepare(sqlite_conn *c, const char *sql, sqlite3_stmt **out,
                   sb_error *err)
{
    uint64_t h = fnv1a(sql);
    int victim = 0;
    for (int i = 0; i < STMT_CACHE; i++) {
        cached_stmt *e = &c->cache[i];
        if (e->stmt != NULL && e->hash == h && strcmp(e->sql, sql) == 0) {
            e->used = ++c->tick;
            *out = e->stmt;
            return SB_OK;
        }
        if (e->used < c->cache[victim].used)
            victim = i;
    }
    char *text = rewrite(sql);
    char *key = sb__strdup(sql);
    if (text == NULL || key == NULL) {
        sb__free(text);
        sb__free(key);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    sqlite3_stmt *st = NULL;
    int xrc = sqlite3_prepare_v3(c->db, text, -1, SQLITE_PREPARE_PERSISTENT,
                                 &st, NULL);
    sb__free(text);
    if (xrc != SQLITE_OK) {
        sb__free(key);
        return fail(c, sqlite3_extended_errcode(c->db), err, "prepare");
    }
    cached_stmt *e = &c->cache[victim];
    sqlite3_finalize(e->stmt);
    sb__free(e->sql);
    e->sql = key;
    e->hash = h;
    e->stmt = st;
    e->used = ++c->tick;
    *out = st;
    return SB_OK;
}

static int bind(sqlite_conn *c, sqlite3_stmt *st, const sb_value *params,
                size_t n, sb_error *err)
{
    int want = sqlite3_bind_parameter_count(st);
    if ((size_t)want > n)
        return sb__err(err, SB_MISUSE, NULL,
                       "statement wants %d parameters, got %zu", want, n);
    for (int i = 0; i < want; i++) {
        const sb_value *v = &params[i];
        int xrc;
        switch (v->type) {
        case SB_V_INT: xrc = sqlite3_bind_int64(st, i + 1, v->i); break;
        case SB_V_TEXT:
            xrc = sqlite3_bind_text64(st, i + 1, v->p, v->len, SQLITE_STATIC,
                                      SQLITE_UTF8);
            break;
        case SB_V_BLOB:
            xrc = v->len == 0 ? sqlite3_bind_zeroblob(st, i + 1, 0)
                              : sqlite3_bind_blob64(st, i + 1, v->p, v->len,
                                                    SQLITE_STATIC);
            break;
        default: xrc = sqlite3_bind_null(st, i + 1); break;
        }
        if (xrc != SQLITE_OK)
            return fail(c, xrc, err, "bind");
    }
    return SB_OK;
}

/* The cell (r, col) of `rows` read from the statement's current row: an
 * integer in place, text and blobs copied once, into the rows' arena. */
static int read_cell(sb_rows *rows, size_t r, sqlite3_stmt *st, int col)
{
    size_t c = (size_t)col;
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_INTEGER:
        rows->cells[r * rows->ncols + c] =
            sb__v_int(sqlite3_column_int64(st, col));
        return SB_OK;
    case SQLITE_FLOAT:
        rows->cells[r * rows->ncols + c] =
            sb__v_int((int64_t)sqlite3_column_double(st, col));
        return SB_OK;
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
        int type =
            sqlite3_column_type(st, col) == SQLITE_TEXT ? SB_V_TEXT : SB_V_BLOB;
        const void *p = type == SB_V_TEXT
                            ? (const void *)sqlite3_column_text(st, col)
                            : sqlite3_column_blob(st, col);
        size_t len = (size_t)sqlite3_column_bytes(st, col);
        if (p == NULL && len != 0)
            return SB_NOMEM; /* SQLite could not convert the value */
        return sb__rows_set_bytes(rows, r, c, type, p, len);
    }
    default: return SB_OK; /* SQL NULL: the cell already is */
    }
}

/* Room for row r in `*rows`, made at the first row and doubled as rows
 * come: the count is known only at SQLITE_DONE. */
static int room_for_row(sb_rows **rows, size_t ncols, size_t r)
{
    if (*rows == NULL)
        return sb__rows_new(16, ncols, rows);
    if (r < (*rows)->nrows)
        return SB_OK;
    return sb__rows_grow(*rows, (*rows)->nrows * 2);
}

static int sl_query(sb_conn *conn, const char *sql, const sb_value *params,
                    size_t nparams, sb_rows **rows, int64_t *changes,
                    sb_error *err)
{
    sqlite_conn *c = (sqlite_conn *)conn;
    if (rows != NULL)
        *rows = NULL;
    if (c->tx_aborted)
        return aborted(err);
    sqlite3_stmt *st = NULL;
    int rc = prepare(c, sql, &st, err);
    if (rc != SB_OK)
        return rc;
    rc = bind(c, st, params, nparams, err);
    int ncols = sqlite3_column_count(st);
    sb_rows *got = NULL;
    size_t n = 0;
    deadline_start(c);
    while (rc == SB_OK) {
        int xrc = sqlite3_step(st);
        if (xrc == SQLITE_DONE)
            break;
        if (xrc != SQLITE_ROW) {
            rc = fail(c, sqlite3_extended_errcode(c->db), err, "step");
            break;
        }
        if (rows == NULL || ncols == 0)
            continue;
        int xr = room_for_row(&got, (size_t)ncols, n);
        for (int i = 0; xr == SB_OK && i < ncols; i++)
            xr = read_cell(got, n, st, i);
        if (xr != SB_OK)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        n++;
    }
    deadline_end(c);
    if (rc == SB_OK && changes != NULL)
        *changes = sqlite3_changes64(c->db);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SB_TIMEOUT)
        rollback_timed_out(c);
    if (rc == SB_OK && rows != NULL && got == NULL) {
        rc = sb__rows_new(0, (size_t)(ncols > 0 ? ncols : 0), &got);
        if (rc != SB_OK)
            sb__err(err, rc, NULL, "out of memory");
    }
    if (rc != SB_OK) {
        sb__rows_free(got);
        return rc;
    }
    if (rows != NULL) {
        got->nrows = n; /* the cells past it were room, never read */
        *rows = got;
    }
    return rc;
}

static int sl_begin(sb_conn *conn, sb_error *err)
{
    sqlite_conn *c = (sqlite_conn *)conn;
    c->tx_aborted = false;
    return run_exec(c, "BEGIN IMMEDIATE", err);
}

static int sl_commit(sb_conn *conn, sb_error *err)
{
    sqlite_conn *c = (sqlite_conn *)conn;
    if (c->tx_aborted) {
        /* As a PostgreSQL COMMIT of an aborted transaction: it is over. */
        c->tx_aborted = false;
        return sb__err(err, SB_BACKEND, NULL,
                       "the transaction had failed and was rolled back "
                       "(a statement ran longer than statement_timeout_ms)");
    }
    return run_exec(c, "COMMIT", err);
}

static int sl_rollback(sb_conn *conn)
{
    sqlite_conn *c = (sqlite_conn *)conn;
    c->tx_aborted = false;
    if (sqlite3_get_autocommit(c->db))
        return SB_OK;
    return run_exec(c, "ROLLBACK", NULL);
}

static void *sl_native(sb_conn *conn)
{
    return ((sqlite_conn *)conn)->db;
}

static bool sl_broken(sb_conn *conn)
{
    (void)conn;
    return false;
}

static const sb_driver sqlite_driver = {
    .name = "sqlite",
    .dialect = SB_DIALECT_SQLITE,
    .max_params = 32766, /* SQLITE_MAX_VARIABLE_NUMBER since 3.32 */
    .connect = sl_connect,
    .close = sl_close,
    .exec = sl_exec,
    .query = sl_query,
    .begin = sl_begin,
    .commit = sl_commit,
    .rollback = sl_rollback,
    .native = sl_native,
    .broken = sl_broken,
};

const sb_driver *sb__driver_sqlite(void)
{
    return &sqlite_driver;
}
