/*
 * errors.h - internal declarations of the error store (see
 * docs/internals/errors.md): statements, attempts, the fold.
 */
#ifndef SB_ERRORS_H
#define SB_ERRORS_H

#include "transport/transport.h"

/* E11: rows per set-based statement of SQL Server's write path, whose
 * rows travel as one JSON parameter, so no parameter limit applies (its
 * 2,100 included: a chunk binds one parameter, OPENJSON's); the counts'
 * statement triggers (counts.c) cost per statement, so a default batch
 * (256) is one statement. SQLite and PostgreSQL bind their rows as
 * parameters instead (SB_ERRORS_ROWS_LOG below). */
#define SB_ERRORS_CHUNK 1000
#define SB_MAX_GROUPS 5 /* E12: one per classifier */

/* SQL Server's key and name columns are bounded (an index key holds at
 * most 900 bytes clustered, 1,700 nonclustered; nvarchar is 2 bytes a
 * UTF-16 unit, and n UTF-8 bytes are never more than n units): unique
 * ids as long as the API accepts them (400 bytes), failed queues as long
 * as a valid queue name (200), message types 200 (so the queue index,
 * queue + type + unique id + status, stays under 1,700 bytes), endpoints
 * 400 (a counts key). Ingestion cuts a longer failed queue, endpoint or
 * message type on a UTF-8 boundary and drops its trailing spaces (the
 * headers keep the whole value, E5); a message whose unique id is longer
 * or ends in a space goes to failed_imports (sql_mssql.c). */
#define SB_MS_ID_MAX 400
#define SB_MS_QUEUE_MAX 200
#define SB_MS_TYPE_MAX 200
#define SB_MS_ENDPOINT_MAX 400

/* Statement indexes (sql.c builds them for one dialect and prefix). */
enum {
    ER_DDL,
    ER_ATTEMPTS_STATE,
    ER_ATTEMPTS_FILL,
    ER_NEW_ATTEMPTS,
    ER_UPSERT,
    ER_DELETE_GROUPS,
    ER_INSERT_GROUPS,
    ER_ENDPOINTS,
    ER_PUT_BODY,
    ER_DROP_BODIES,
    ER_CONFIRM,
    ER_DROP_CLAIMS,
    ER_FAILED_IMPORT,
    ER_COUNT_IMPORTS,
    ER_GET,
    ER_GET_GROUPS,
    ER_GET_BODY,
    ER_GET_HISTORY,
    ER_CLAIM,
    ER_RETRY_SOURCE,
    ER_SET_STATUS,
    ER_GROUPS,
    ER_SET_COMMENT,
    ER_DELETE_COMMENT,
    ER_EXPIRED,
    ER_DELETE_MESSAGES,
    ER_ORPHAN_COMMENTS,
    ER_SEARCH,
    ER_OP_START,
    ER_OP_STEP,
    ER_OP_END,
    ER_OP_GET,
    ER_OPS_GET,
    ER_EDIT_CLAIM,
    ER_DROP_EDITS,
    ER_REDIRECTS_LOCK,
    ER_REDIRECTS,
    ER_REDIRECT_PUT,
    ER_REDIRECT_DELETE,
    ER_IMPORTS_TAKE,
    ER_IMPORTS_DELETE,
    ER_PRUNE_GROUPS,
    ER_COUNTS_STATE,
    ER_COUNTS_REBUILD,
    ER_STALE_TAKE,
    ER_STALE_FIX,
    ER_GROUPS_STALE,
    ER_GROUPS_EXACT,
    /* SQL Server only ("" elsewhere): the full-text catalog and index
     * (outside any transaction), and whether search can run. */
    ER_FULLTEXT,
    ER_SEARCH_READY,
    ER_OP_ACK,
    ER_N
};

/* E10, E11 on SQLite and PostgreSQL: the write path's row sets are
 * multi-row VALUES with the rows as bound parameters, one statement for
 * each power of two up to 2^SB_ERRORS_ROWS_LOG rows; a batch of n rows
 * runs the one of the next power of two, its last rows bound NULL and
 * dropped by the statement, so the counts' statement triggers fire once
 * (chunks of 50 cost PostgreSQL ~30 %). Parsing the rows out of one
 * JSON parameter (json_each + json_extract on SQLite) cost more than the
 * writes. SQL Server keeps one JSON parameter a chunk (OPENJSON, under
 * its 2,100 parameter cap). At 2,048 rows the groups of a default batch
 * (256 messages, 5 groups each) bind 8,192 parameters and the upsert of
 * 1,024 messages 24,576 (SQLite allows 32,766, PostgreSQL 65,535); the
 * driver's cap lowers the largest statement (ODBC: 2,100). */
#define SB_ERRORS_ROWS_LOG 11
enum { ERV_ATTEMPTS, ERV_UPSERT, ERV_GROUPS, ERV_N };
/* Parameters a row: the keys (unique id, time), the upsert's columns
 * (sql.c's list, then on PostgreSQL the search literal and its flag),
 * the groups (unique id, group id, title, classifier). SQLite's upsert
 * binds the clock as $1 before its rows. */
#define SB__ERRORS_ATTEMPT_WIDTH 2
#define SB__ERRORS_UPSERT_WIDTH(pg) (22 + ((pg) ? 2 : 0))
#define SB__ERRORS_GROUP_WIDTH 4

typedef struct sb_errors_sql {
    char *s[ER_N];
} sb_errors_sql;

int sb__errors_sql_new(int dialect, const char *prefix, sb_errors_sql *out,
                       sb_error *err);
void sb__errors_sql_free(sb_errors_sql *sql);
/* The row set `kind` (ERV_*) of `n` rows for SQLite or PostgreSQL, the
 * prefix put in, in *out (the caller frees it). */
int sb__errors_rows_sql(int dialect, const char *prefix, int kind, size_t n,
                        char **out);
/* The position of a failed_messages column in the rows of ER_GET. */
int sb__errors_column(const char *name);

struct sb_errors {
    sb_bus *bus;
    sb_errors_sql sql;
    int batch_size;
    size_t max_body;
    int allow_edit;
    /* The row sets' statements (SQLite, PostgreSQL), each built at its
     * first use under rows_mu: all of them take ~20 ms of CPU, which a
     * store that never ingests (a CLI query) should not pay. */
    pthread_mutex_t rows_mu;
    char *rows[ERV_N][SB_ERRORS_ROWS_LOG + 1];
};

/* One dead-letter row read as a failed processing attempt (E2, E5). The
 * strings are owned by the attempt; NULL when the headers lack them. */
typedef struct sb_attempt {
    char *unique_id; /* E6 */
    char *message_id, *message_type, *failed_queue, *processing_endpoint;
    char *host, *host_id, *instance_id;
    char *exception_type, *exception_message, *stack_trace;
    char *conversation_id, *content_type;
    int is_system;
    int retry_confirmed; /* a retry acknowledgement, not a failure */
    int64_t time_of_failure_us, time_sent_us; /* 0 = unknown (sent) */
    const sb_msg *row;                        /* headers and body (borrowed) */
} sb_attempt;

/* SQL Server: an insert-if-absent (NOT EXISTS under UPDLOCK, HOLDLOCK)
 * that lost a race for a new key fails with a duplicate key (SB_CONFLICT,
 * native 2627 / 2601). Returned as SB_BUSY, so sb__db_run_tx runs the
 * transaction again, which then finds the row, as ON CONFLICT would have
 * at once; `rc` unchanged elsewhere. For the rc of such a statement (or
 * of a transaction made only of them and reads). */
int sb__errors_race(const sb_errors *e, int rc, sb_error *err);
/* ingest.c: why SQL Server's store cannot hold a message of `unique_id`
 * (longer than SB_MS_ID_MAX, or ending in a space), or NULL. */
const char *sb__errors_unfit_id(int dialect, const char *unique_id);

/* Map a dead-letter row; SB_INVALID with the reason in err->message when
 * it cannot be ingested (E3). */
int sb__attempt_from_row(const sb_msg *row, sb_attempt *out, sb_error *err);
void sb__attempt_clear(sb_attempt *a);

/* One failed message after the fold (E8): the newest attempt, the number
 * of distinct failure times and the failure window. An attempt is known
 * by its message's unique id and its time of failure (E10): `times` are
 * the batch's distinct ones, ascending (`n_times` of them), `of` the
 * attempt of each (the later in the batch of equal ones). Ingestion then
 * folds the row again over the attempts new to the store. */
typedef struct sb_folded {
    const sb_attempt *newest;
    int64_t attempts;
    int64_t first_us, last_us;
    const int64_t *times;
    const sb_attempt *const *of;
    size_t n_times;
} sb_folded;

/* select.c: run `fn` on each batch (at most 1,000) of the messages of
 * `status` that `sel` picks, in unique-id order, one transaction per
 * batch; `ids` is the batch as a JSON array of unique ids. A failing
 * batch rolls back alone and ends the walk. With `kind` ("retry",
 * "archive", "unarchive") and a group selector, the walk is that group's
 * operation (E19): exclusive, resumable, with committed progress. */
typedef int (*sb_batch_fn)(sb_conn *c, sb_errors *e, const char *ids, size_t n,
                           void *user, int64_t *changed, sb_error *err);
int sb__errors_check_selection(const sb_failed_selection *s, sb_error *err);
/* The walk's page statement of `sel` ({p} unsubstituted: $1 cursor, $2
 * limit, $3 status, then the filters), or with `count` its count ($1
 * status, then the filters). */
void sb__errors_walk_sql(int dialect, const sb_failed_selection *sel, int count,
                         sb_buf *b);
/* Whether `sel` picks at least one message of `status` now (*any), read
 * on `c`, a connection on the store's database and prefix: the walk's
 * first page, one row long. */
int sb__errors_selects_any(sb_errors *e, sb_conn *c,
                           const sb_failed_selection *sel, int status, int *any,
                           sb_error *err);
/* A caller's record of the operation kept in step with the walk (the
 * durable operations of operations.c, S5). `start` runs in the
 * transaction that counts the selection, before the first batch, with
 * *total the count and *done what a resumed group operation had done
 * (else 0); a record that already holds figures (its operation resumed)
 * replaces both with its own.
 * `step` runs in each batch's transaction after its changes with the
 * batch's count, so the record's progress is exactly what committed. The
 * progress callback of the selection then reports the record's figures.
 * A hook's failure rolls its transaction back and ends the walk. */
typedef struct sb_errors_op_hook {
    int (*start)(sb_conn *c, int64_t *total, int64_t *done, void *user,
                 sb_error *err);
    int (*step)(sb_conn *c, int64_t changed, void *user, sb_error *err);
    void *user;
} sb_errors_op_hook;
int sb__errors_each_batch(sb_errors *e, const sb_failed_selection *sel,
                          int status, const char *kind,
                          const sb_errors_op_hook *hook, sb_batch_fn fn,
                          void *user, int64_t *changed, sb_error *err);
/* retry.c, archive.c: sb_errors_retry, sb_errors_archive,
 * sb_errors_retry_pending and sb_errors_resolve with an operation's
 * record kept by `hook` (NULL: none, as the public calls). */
int sb__errors_retry(sb_errors *e, const sb_failed_selection *sel,
                     const sb_errors_op_hook *hook, int64_t *retried,
                     sb_error *err);
int sb__errors_archive(sb_errors *e, const sb_failed_selection *sel,
                       int archive, const sb_errors_op_hook *hook,
                       int64_t *changed, sb_error *err);
int sb__errors_retry_pending(sb_errors *e, const sb_failed_selection *sel,
                             const sb_errors_op_hook *hook, int64_t *retried,
                             sb_error *err);
int sb__errors_resolve(sb_errors *e, const sb_failed_selection *sel,
                       const sb_errors_op_hook *hook, int64_t *resolved,
                       sb_error *err);

/* headers.c: the headers that describe a failure, which a re-published or
 * edited copy drops (NULL-terminated; `*n` without the NULL). */
const char *const *sb__errors_failure_headers(size_t *n);

/* list.c: summaries from rows of SB__SUMMARY_COLUMNS (of failed_messages
 * aliased f), in that order. */
#define SB__SUMMARY_COLUMNS                                                    \
    "f.unique_message_id, f.status, f.number_of_processing_attempts, "         \
    "f.last_time_of_failure, f.message_type, f.failed_queue, "                 \
    "f.exception_type, f.exception_message, f.message_id, "                    \
    "f.processing_endpoint, f.host, f.host_id, f.first_time_of_failure, "      \
    "f.last_modified, f.time_sent, f.is_system"

int sb__errors_summaries(const sb_rows *rows, sb_failed_summary ***out,
                         size_t *n_out, sb_error *err);
/* The list's page statement ({p} unsubstituted), sorted by `sort_column`
 * (a key from list.c's fixed table), or with `sort_column` NULL its count:
 * the filters' values go to `p` (up to 14), their count is returned; the
 * page takes the page size and offset after them. */
size_t sb__errors_list_sql(int dialect, const sb_failed_query *q,
                           const char *sort_column, sb_buf *b, sb_value *p);

/* history.c: the status history table and its triggers (appended to the
 * DDL), and ER_GET_HISTORY (the newest SB_HISTORY_MAX changes of $1). */
#define SB_HISTORY_MAX 100
void sb__errors_history_ddl(int dialect, const char *text_type, sb_buf *b);
void sb__errors_history_sql(int dialect, sb_buf *b);

/* counts.c: the counts table and the triggers that keep it (appended to
 * the DDL), the statements ER_GROUPS* and ER_COUNTS_* / ER_STALE_*, the
 * rebuild of an empty table over a store that has messages (at open), the
 * refresh of stale group windows (writers call it after their changes)
 * and one count: messages of `kind` (1 failed queue, 2 endpoint, 3
 * message type, 4 group) with `item` (NULL: any) and `status` (-1: any). */
void sb__errors_counts_ddl(int dialect, const char *text_type, sb_buf *b);
void sb__errors_counts_sql(int dialect, int k, sb_buf *b);
int sb__errors_counts_ensure(sb_conn *c, sb_errors *e, sb_error *err);
/* Best effort, after a writer's commit: a refresh that fails (out of
 * memory, the database gone) is logged and leaves the windows marked
 * stale, which the group views then read exactly (and the next writer's
 * refresh fixes); the change it follows is done and is reported so. */
void sb__errors_refresh_windows(sb_errors *e);
int sb__errors_count(sb_conn *c, sb_errors *e, int kind, const char *item,
                     int status, int64_t *out, sb_error *err);
/* Their statements ({p} unsubstituted): the count of kind $1 [and item
 * $2] [and status $next]; the counts per item of kind $1 [and status $2],
 * the limit last. */
void sb__errors_count_sql(int dialect, int item, int status, sb_buf *b);
void sb__errors_counts_by_sql(int dialect, int status, sb_buf *b);

/* words.c, E22 on PostgreSQL: the search index's words, cut by sqlbus.
 * A message's vector covers the first SB_SEARCH_TEXT_MAX bytes of its
 * searchable text; a word longer than SB_SEARCH_WORD_MAX bytes is not
 * indexed (PostgreSQL's lexeme limit); positions stop at PostgreSQL's
 * maximum, and a word keeps its first SB_SEARCH_MAX_POSITIONS.
 * sb__search_vector appends the tsvector literal of `texts` (`lens` bytes
 * each; NULL entries skipped) to `b`, ASCII lowered, each word once with
 * its positions: quotes, colons, commas, digits, spaces and the words
 * only, so it needs no escaping inside a JSON string. Returns 1 when a
 * word holds a byte beyond ASCII (the database must lower the literal),
 * else 0; out of memory marks `b` failed. sb__search_query appends the
 * tsquery of a caller's query, ASCII lowered: its whitespace-separated
 * terms ORed, the words of one term a phrase ('shop' <-> 'order');
 * returns the number of terms. sb__search_term: the next
 * whitespace-separated term of *p (its start in *term, its length
 * returned, 0 at the end); *p moves past it. */
#define SB_SEARCH_TEXT_MAX ((size_t)256 << 10)
#define SB_SEARCH_WORD_MAX 2046
#define SB_SEARCH_MAX_POS 16383u
#define SB_SEARCH_MAX_POSITIONS 255
int sb__search_vector(sb_buf *b, const char *const *texts, const size_t *lens,
                      size_t n);
int sb__search_query(const char *in, sb_buf *b);
size_t sb__search_term(const char **p, const char **term);
/* E22 on SQL Server, the same cut: sb__search_words appends the words of
 * `texts` (the first SB_SEARCH_TEXT_MAX bytes, words over
 * SB_SEARCH_WORD_MAX skipped) in order, one space between, ASCII lowered:
 * the text its full-text index reads, in which every break is a space
 * (letters, digits and the rest of a word need no JSON escaping).
 * sb__search_contains appends a caller's query as a CONTAINS condition:
 * each term's words a quoted phrase ("shop order"), terms ORed; returns
 * the number of terms. */
void sb__search_words(sb_buf *b, const char *const *texts, const size_t *lens,
                      size_t n);
int sb__search_contains(const char *in, sb_buf *b);

/* Fold `n` attempts (failures only) into *out (allocated, sorted by
 * unique id, the rows' `times` and `of` in the same allocation: one
 * sb__free); returns the count or -1 when out of memory. */
long sb__fold(const sb_attempt *const *attempts, size_t n, sb_folded **out);

#endif
