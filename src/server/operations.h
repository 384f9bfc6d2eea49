/*
 * operations.h - durable operations of `sqlbus serve` (S5,
 * docs/internals/server.md "Durable operations"): a bulk change the API
 * accepted is a row of {p}operations and a job on the internal queue
 * sqlbus.operations, written in one transaction; a transport worker runs
 * the job with the library call the CLI uses and records its progress in
 * the row, in the transaction of each batch. A process that dies
 * mid-operation leaves the job leased; the lease expires and the job runs
 * again, which is safe because every bulk change is idempotent over its
 * status filter; the row keeps the first run's total and the done its
 * batches committed, so the resumed operation reports the whole of it.
 */
#ifndef SB_SERVER_OPERATIONS_H
#define SB_SERVER_OPERATIONS_H

#include "server/api.h"

#define SB_OPS_QUEUE "sqlbus.operations"
#define SB_OPS_SELECTION_MAX ((size_t)2 << 20) /* bytes of a selection */

typedef struct sb_ops_options {
    sb_log_fn log; /* may be NULL */
    void *log_user;
    int64_t keep_ms;  /* finished rows kept this long (0: 7 days) */
    int64_t lease_ms; /* an operation job's lease (0: 60 s) */
    /* Optional: called on the worker's thread after each batch of an
     * operation has committed, with the progress its row now holds. */
    void (*progress)(const char *id, int64_t done, int64_t total,
                     void *user);
    void *progress_user;
} sb_ops_options;

/* One operation as the API reports it. */
typedef struct sb_op_info {
    char id[37];
    char kind[24];    /* "retry", "archive", "unarchive", "retry_pending",
                         "resolve" */
    char state[16];   /* "queued", "running", "completed", "failed" */
    char group_id[37]; /* "" unless a group's operation */
    int64_t total;    /* -1 until known */
    int64_t done;
    int64_t created_us, updated_us;
    char error[256];  /* "" unless failed */
} sb_op_info;

/* The table's statements (operations_sql.c), by name: the DDL ($p
 * substituted), then $1.. as operations.c binds them. */
#define SB_OPS_STATEMENTS(X)                                                \
    X(ddl)      /* the table and its index */                              \
    X(insert)   /* $1 id, $2 kind, $3 selection, $4 group, $5 now_us */    \
    X(get)      /* $1 id -> the row's columns, then selection */           \
    X(recent)   /* $1 limit: newest first */                               \
    X(start)    /* $1 id, $2 now_us */                                     \
    X(total)    /* $1 id, $2 total, $3 done, $4 now_us: first run only */  \
    X(figures)  /* $1 id -> total, done */                                 \
    X(step)     /* $1 id, $2 changed, $3 now_us */                         \
    X(end)      /* $1 id, $2 state, $3 now_us, $4 error */                 \
    X(orphans)  /* $1 cutoff_us: queued rows without a job */              \
    X(prune)    /* $1 cutoff_us: finished rows */

typedef struct sb_ops_templates {
#define X(f) const char *f;
    SB_OPS_STATEMENTS(X)
#undef X
} sb_ops_templates;

typedef struct sb_ops_sql {
#define X(f) char *f;
    SB_OPS_STATEMENTS(X)
#undef X
} sb_ops_sql;

/* A column of the table as each backend's catalog spells its type. */
typedef struct sb_ops_column {
    const char *name, *sqlite, *pg, *mssql;
    int notnull;
} sb_ops_column;
extern const sb_ops_column sb__ops_columns[];
extern const size_t sb__ops_n_columns;

/* The templates of `dialect` (SB_DIALECT_*). */
const sb_ops_templates *sb__ops_templates(int dialect);
/* How many statements a set has; statement `i` of `t` and its name. */
size_t sb__ops_n_statements(void);
const char *sb__ops_statement(const sb_ops_templates *t, size_t i,
                              const char **name);
/* Build `dialect`'s set for `prefix` into `out`: SB_OK or SB_NOMEM (out
 * then holds nothing). */
int sb__ops_sql_new(int dialect, const char *prefix, sb_ops_sql *out);
void sb__ops_sql_free(sb_ops_sql *s);

/* Create the table if missing and start the worker (one handler thread)
 * and the sweeper (old rows; jobs of queued rows a crash left without
 * one). `bus` and `store` (opened over `bus`: each batch's transaction
 * writes the row's progress) are borrowed and must outlive the handle. */
int sb__ops_start(sb_bus *bus, sb_errors *store, const sb_ops_options *opts,
                  sb_ops **out, sb_error *err);
/* Stop the worker (the running job finishes or is handed back), join,
 * free. NULL-safe. */
void sb__ops_stop(sb_ops *o);

/* The API's calls below run their statements on `bus` (borrowed: the
 * API's own, under the request time limit, S10; the same database and
 * prefix as the worker's bus), not on the worker's. */

/* Accept an operation of `kind` over `sel` (checked here: SB_INVALID
 * naming the field), all in one transaction on `bus`; the worker is woken
 * in-process; `out` gets the new row. */
int sb__ops_submit(sb_ops *o, sb_bus *bus, const char *kind,
                   const sb_failed_selection *sel, sb_op_info *out,
                   sb_error *err);
/* One operation; SB_NOTFOUND when there is none with `id`. */
int sb__ops_get(sb_ops *o, sb_bus *bus, const char *id, sb_op_info *out,
                sb_error *err);
/* The `limit` newest (1 to 200). `*out` transferred (sb__free). */
int sb__ops_recent(sb_ops *o, sb_bus *bus, size_t limit, sb_op_info **out,
                   size_t *n_out, sb_error *err);

#endif
