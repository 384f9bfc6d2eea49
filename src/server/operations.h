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
