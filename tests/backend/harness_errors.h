/*
 * harness_errors.h - helpers of the error store's conformance tests: a
 * bus and a store on a fresh prefix, dead-letter rows as the transport
 * writes them, one ingestion pass, reading a message back.
 */
#ifndef SBT_HARNESS_ERRORS_H
#define SBT_HARNESS_ERRORS_H

#include "harness.h"

typedef struct sbe_env {
    char prefix[64];
    sb_bus *bus;
    sb_errors *store;
} sbe_env;

/* Open a bus and a store (`o` may be NULL) on a fresh prefix. */
void sbe_open_opts(sbe_env *e, const sb_errors_options *o);
void sbe_open(sbe_env *e);
/* The same with a bus that starts no thread (no counts flusher), for
 * tests that fork: POSIX allows a child of a threaded process only
 * async-signal-safe calls, and a driver's lock held by another thread at
 * the fork would never be released in the child (unixODBC's are global). */
void sbe_open_single_threaded(sbe_env *e);
/* Rows of failed_counts that differ from the counts of the rows
 * themselves (and stale or negative ones); 0 when they agree. */
long sbe_count_mismatches(const sbe_env *e);
/* Check the counts (E13, E23), close both and drop every table of the
 * prefix. */
void sbe_close(sbe_env *e);
/* A dead-letter row as the transport writes one: sqlbus failure headers
 * for message `mid` that failed on `queue` at `when` (ISO 8601), endpoint
 * Sales; `extra` (may be NULL) is appended to the headers object. */
void sbe_dead_letter(sbe_env *e, const char *mid, const char *queue,
                     const char *when, const char *exc_type, const char *body,
                     const char *extra);
/* A dead letter whose unique id is `uid` (as sb-retry-of). */
void sbe_dead_letter_as(sbe_env *e, const char *uid, const char *queue,
                        const char *when, const char *exc_type,
                        const char *body);
/* One ingestion pass; asserts success. */
sb_ingest_stats sbe_ingest(sbe_env *e);
/* `n` dead letters that failed on `queue` (endpoint Sales, exception X,
 * one time of failure), unique ids "<queue>-00000"..., published in
 * batches of 500, then ingested. */
void sbe_seed_failed(sbe_env *e, const char *queue, int n);
/* The id of the "Endpoint Address" group of `queue` over messages of
 * `status` (it must exist). */
void sbe_group_of(sbe_env *e, const char *queue, int status, char id[37]);
/* E22 on SQL Server: whether the server has Full-Text Search; without it
 * asserts that search is refused, clearly, and returns 0 (the caller
 * skips its searches). 1 on the other backends. */
int sbe_search_available(sbe_env *e);
/* SQL Server: wait until the full-text index has caught up with the
 * table (it follows asynchronously); a no-op elsewhere (SQLite's and
 * PostgreSQL's are written in the ingestion transaction). */
void sbe_await_search(sbe_env *e);
/* The stored message `uid`; asserts it exists. */
sb_failed_message *sbe_get(sbe_env *e, const char *uid);
/* Its status, and its attempts when `attempts` is not NULL. */
int sbe_status(sbe_env *e, const char *uid, int64_t *attempts);

#endif
