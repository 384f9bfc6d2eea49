/*
 * operations.h - internals of the error store's durable operations (S5;
 * the public calls are sb_operations_* in sqlbus.h, the design note is
 * docs/internals/errors.md "Durable operations"): a bulk change accepted
 * is a row of {p}operations and a job on the internal queue
 * SB_OPERATIONS_QUEUE, written in one transaction; a transport worker runs
 * the job with the store's bulk call and records its progress in the row,
 * in the transaction of each batch. A process that dies mid-operation
 * leaves the job leased; the lease expires and the job runs again, which
 * is safe because every bulk change is idempotent over its status filter;
 * the row keeps the first run's total and the done its batches committed,
 * so the resumed operation reports the whole of it.
 *
 * What stays internal is the statement set (operations_sql.c), which the
 * statement checks of the tests walk by name.
 */
#ifndef SB_ERRORS_OPERATIONS_H
#define SB_ERRORS_OPERATIONS_H

#include "errors/errors.h"

#define SB_OPS_SELECTION_MAX ((size_t)2 << 20) /* bytes of a selection */

/* The table's statements (operations_sql.c), by name: the DDL ($p
 * substituted), then $1.. as operations.c binds them. */
#define SB_OPS_STATEMENTS(X)                                                   \
    X(ddl)     /* the table and its index */                                   \
    X(insert)  /* $1 id, $2 kind, $3 selection, $4 group, $5 now_us */         \
    X(get)     /* $1 id -> the row's columns, then selection */                \
    X(recent)  /* $1 limit: newest first */                                    \
    X(start)   /* $1 id, $2 now_us */                                          \
    X(total)   /* $1 id, $2 total, $3 done, $4 now_us: first run only */       \
    X(figures) /* $1 id -> total, done */                                      \
    X(step)    /* $1 id, $2 changed, $3 now_us */                              \
    X(end)     /* $1 id, $2 state, $3 now_us, $4 error */                      \
    X(orphans) /* $1 cutoff_us: queued rows without a job */                   \
    X(prune)   /* $1 cutoff_us: finished rows */

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

/* The table's columns as each backend's catalog spells their types
 * (operations_sql.c), checked at open by sb__check_columns. */
extern const sb_column_spec sb__ops_columns[];
extern const size_t sb__ops_n_columns;

/* The templates of `dialect` (SB_DIALECT_*). Static; thread-safe. */
const sb_ops_templates *sb__ops_templates(int dialect);
/* How many statements a set has; statement `i` of `t` and its name (both
 * static). Thread-safe. */
size_t sb__ops_n_statements(void);
const char *sb__ops_statement(const sb_ops_templates *t, size_t i,
                              const char **name);
/* Build `dialect`'s set for `prefix` into `out` (each text transferred:
 * sb__ops_sql_free): SB_OK or SB_NOMEM (out then holds nothing). */
int sb__ops_sql_new(int dialect, const char *prefix, sb_ops_sql *out);
/* Free every text of `s` and clear it; a cleared set is fine. */
void sb__ops_sql_free(sb_ops_sql *s);

#endif
