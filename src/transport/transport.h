/*
 * transport.h - internal declarations of the transport module: the bus,
 * messages, transactions, the per-backend statement set and the worker.
 */
#ifndef SB_TRANSPORT_H
#define SB_TRANSPORT_H

#include "db/db.h"
#include "transport/counts.h"
#include "transport/metrics.h"

#include <pthread.h>
#include <stdatomic.h>

/* The statements of the transport for one backend, with the table prefix
 * already substituted (see sql.c). `$N` placeholders throughout. */
typedef struct sb_transport_sql {
    char *ddl;          /* CREATE ... IF NOT EXISTS, all objects */
    char *upgrade;      /* an earlier version's leftovers removed (schema.c) */
    char *lock;         /* schema lock inside the DDL transaction, or NULL */
    char *index_ddl;    /* the index builds under their own lock in a
                           transaction of their own, or NULL */
    char *insert[3];    /* multi-row publish of 1, 10, 100 rows */
    char *insert_ex[3]; /* the same with a priority and an expiry a row */
    char *claim_prio;   /* the claim of a prioritized queue (T34) */
    char *mark_prioritized; /* $1 queue, $2 now_us */
    char *settings_get;     /* $1 queue: queue_settings' values */
    char *settings_list;    /* every queue's settings */
    char *settings_pause;   /* $1 queue, $2 paused, $3 now_us */
    char *settings_ttl;     /* $1 queue, $2 ttl_ms|NULL, $3 now_us (T40) */
    char *settings_limits;  /* $1 queue, $2..$4 limits|NULL, $5 now_us */
    char *limit_lock;       /* $1 queue, $2 now_us: limits, tokens (T36) */
    char *limit_running;    /* $1 queue, $2 now_us, $3 cap: leased rows */
    char *limit_take;       /* $1 queue, $2 tokens taken, $3 now_us */
    char *expire_due;       /* $1 now_us, $2 limit: expired rows, locked */
    char *expire_ttl;       /* as expire_due, $3 queue, $4 ttl_ms */
    char *clock_now;        /* the database's clock, or NULL (T40) */
    char *cancel_key_get;   /* T38, see sql_dialect.h */
    char *unique_lock, *unique_holder, *unique_window_get;
    char *unique_window_put, *unique_prune;
    char *cancel_get;   /* $1 id, $2 queue, $3 now_us: the row, locked (T39) */
    char *progress_set; /* $1 id, $2 lock_id, $3 progress (T42) */
    char *schedule_put, *schedule_remove, *schedule_list; /* T41 */
    char *schedule_due, *schedule_settle, *schedule_wake;
    char *heartbeat_beat, *heartbeat_stop, *heartbeat_list; /* issue 22 */
    char *heartbeat_monitor, *heartbeat_remove;
    char *setting_get, *setting_put, *setting_remove, *setting_list;
    char *claim; /* $1 queue, $2 now_us, $3 lease_ms, $4 lock_id, $5 max */
    char *claim_delete; /* claim and delete at once (error ingestion) */
    char *claim_from;   /* the claim bounded by a cursor ($6), or NULL */
    char *xmin_holder;  /* xmin.c, or NULL */
    char *ack;          /* $1 id, $2 lock_id */
    char *nak;          /* $1 id, $2 lock_id, $3 now_us, $4 delay_ms, $5 err */
    char *hand_back;    /* $1 id, $2 lock_id, $3 now_us: attempts - 1 */
    char *renew;        /* $1 id, $2 lock_id, $3 now_us, $4 lease_ms */
    char *ack_many;     /* $1 ids (array), $2 id -> lock id (JSON
                           object); RETURNING id */
    char *renew_many;   /* as ack_many, $3 now_us, $4 lease_ms */
    char *hand_back_many; /* as ack_many */
    char *dead_letter;    /* insert copy: $1 new id, $2 dlq, $3 headers,
                           $4 reason, $5 err, $6 now_us, $7 id, $8 lock_id */
    char *dlq_insert;     /* insert a DLQ row from bytes (early-ack mode):
                           $1..$6 as dead_letter, $7 payload, $8 attempts */
    char *delete_any;     /* $1 id, $2 lock_id or NULL */
    char *pending;        /* any ready or leased row of $1 at $2 now_us */
    char *stats;          /* per-queue counts at $1 now_us */
    char *dlq_stats;      /* dead letters by failed queue: $1 dlq */
    char *dlq_list;       /* $1 dlq, $2 failed queue|NULL, $3 older-than ms
                           or NULL, $4 id|NULL, $5 limit|NULL, $6 now_us */
    char *peek;           /* $1 queue, $2 limit, $3 offset: rows as
                           dlq_list, then available_at, locked_until */
    char *prune;          /* $1 dlq, $2 retention ms, $3 batch, $4 now_us */
    char *columns;        /* catalog: name, type, notnull, collation by $1 */
    char *indexes;        /* catalog: key list, is_primary by $1 table */
    char *notify;         /* wake: $1 channel, $2 queue, or NULL */
    char *counts_add;     /* counts.c: see sql_dialect.h */
    char *counts_list;
    char *counts_prune;
} sb_transport_sql;

/* Replace every "{p}" in `tpl` with `prefix` (a validated identifier).
 * NULL in, NULL out; sets *rc to SB_NOMEM on failure and does nothing once
 * *rc is not SB_OK, so a caller substitutes a whole set and checks once. */
char *sb__sql_subst(const char *tpl, const char *prefix, int *rc);
/* Build the statement set of `dialect` for `prefix`. */
int sb__transport_sql_new(int dialect, const char *prefix,
                          sb_transport_sql **out, sb_error *err);
void sb__transport_sql_free(sb_transport_sql *sql);

/* One expected column of a table checked against the catalog: the
 * messages table's (schema.c), the durable operations' table's
 * (errors/operations_sql.c). Types as each backend's catalog query
 * (sb_transport_sql.columns) spells them, compared case-insensitively. */
typedef struct sb_column_spec {
    const char *name;
    const char *sqlite_type;
    const char *pg_type;
    const char *mssql_type;
    int notnull;
    /* The default a NOT NULL column added to an existing table takes
     * (so ADD COLUMN can add it), or NULL. */
    const char *dflt;
} sb_column_spec;
extern const sb_column_spec sb__message_columns[];
extern const size_t sb__message_column_count;

/* Check the `n` columns of `spec` against `rows`, the catalog's rows of
 * `table` (name, type, notnull, collation: sb_transport_sql.columns) on a
 * backend of `dialect` (SB_DIALECT_*): each column present, of its type,
 * NOT NULL where the spec says so. Columns the spec does not name, and
 * collations, are left to the caller. SB_OK, or SB_SCHEMA_MISMATCH for the
 * first column that fails, with err's field the column and its message
 * "table T: what; fix: statement" in the dialect. All arguments are
 * borrowed; `table` is only printed. Reads nothing shared: thread-safe. */
int sb__check_columns(int dialect, const char *table,
                      const sb_column_spec *spec, size_t n, const sb_rows *rows,
                      sb_error *err);

/* One column a CREATE TABLE of a DDL text declares: slices of that text
 * (borrowed from it, not NUL-terminated). */
typedef struct sb_ddl_column {
    const char *table; /* the table's name, `table_len` bytes */
    size_t table_len;
    const char *def; /* the column's definition, its name first */
    size_t def_len;
    size_t name_len; /* of the name at `def` */
} sb_ddl_column;

/* The columns of every CREATE TABLE in `ddl` (any dialect's: IF NOT
 * EXISTS, T-SQL's IF OBJECT_ID guards, quoted strings and nested
 * parentheses; table constraints skipped; CREATE VIRTUAL TABLE is not a
 * table), in order, into a new array (`*out`, sb__free; slices of
 * `ddl`). SB_OK or SB_NOMEM. Pure: no I/O; thread-safe. */
int sb__ddl_columns(const char *ddl, sb_ddl_column **out, size_t *n_out);

/* T7 for every table `ddl` creates (sb__ddl_columns): each column the DDL
 * declares must be in the catalog (bus->sql->columns). SB_OK, or
 * SB_SCHEMA_MISMATCH for the first that is not, err's field the column
 * and its message "table T: column C is missing; fix: ALTER TABLE T ADD
 * COLUMN <its definition>" (on SQLite, where ADD COLUMN cannot add a key
 * or a NOT NULL column without a default: recreate the table). A table
 * that does not exist is skipped: under SB_SCHEMA_VERIFY it is reported
 * by its first use. Types are not compared (sb__check_columns does, for
 * the tables that list them). Takes a pooled connection of `bus`. */
int sb__check_ddl_tables(sb_bus *bus, const char *ddl, sb_error *err);

/* A store made by an earlier version: on `c`, inside the caller's
 * transaction, add each column of `later` (a NULL-terminated list of the
 * columns added to the DDL since its first release) that the tables of
 * `ddl` declare and the catalog (`columns_sql`) lacks, with its
 * definition from `ddl` (ALTER TABLE ... ADD COLUMN). Any other column
 * missing (a table of another shape: issue 20.8) fails with
 * SB_SCHEMA_MISMATCH naming it and the fix, as sb__check_ddl_tables
 * reports it, and so does one of `later` that cannot be added so.
 * Absent tables are left to the DDL. `*added` counts the columns added. */
int sb__ddl_add_missing(sb_conn *c, int dialect, const char *columns_sql,
                        const char *ddl, const char *const *later, int *added,
                        sb_error *err);

/* After running `ddl` (`ddl_rc`, its error in `ddl_err`): check its
 * tables (sb__check_ddl_tables). A table of another shape makes the DDL
 * itself fail (an index over a column it lacks, in the database's own
 * words), so a mismatch found is the error reported; otherwise the
 * DDL's error, or the check's result when the DDL succeeded. */
int sb__schema_after_ddl(sb_bus *bus, const char *ddl, int ddl_rc,
                         const sb_error *ddl_err, sb_error *err);

/* Endpoint liveness (heartbeat.c, issue 22). The bus's beater, made at
 * open when heartbeat_interval_ms is not -1 (no thread until the first
 * registration); freed at close, which marks every endpoint it still beat
 * for stopped (one attempt). */
typedef struct sb_beater sb_beater;
int sb__beater_new(sb_bus *bus, int64_t interval_ms, sb_error *err);
void sb__beater_free(sb_beater *b);
/* A worker of `endpoint` starts / stops on `bus`: the first starts its
 * beats (at once), the last one's stop is written at once by the beater's
 * thread. Never fail and never wait for the database; a no-op when
 * liveness is off, under SB_SCHEMA_NONE, or (logged once) when the table
 * is missing under SB_SCHEMA_VERIFY. */
void sb__beat_register(sb_bus *bus, const char *endpoint);
void sb__beat_unregister(sb_bus *bus, const char *endpoint);
/* sb_worker_start for the library's own workers (the durable operations',
 * the channel's recovery and ingress): they do not beat, as they are not
 * the program's endpoints. */
int sb__worker_start_internal(sb_bus *bus, const sb_worker_options *opts,
                              sb_worker **out, sb_error *err);

/* In-process wake-ups: a worker registers interest in its queue. */
typedef struct sb_waker {
    const char *queue;
    void (*fn)(void *user);
    void *user;
    struct sb_waker *next;
} sb_waker;

struct sb_bus {
    sb_pool *pool;
    sb_transport_sql *sql;
    int dialect;
    char *prefix;
    char *table;   /* prefix + "messages" */
    char *channel; /* NOTIFY channel: prefix + "wake" */
    /* This bus in its wake-ups' payloads (SB_WAKE_ORIGIN_SEP, then 16 hex
     * digits): its own publishes wake its workers in process at commit,
     * so their listeners skip the NOTIFY that comes back. */
    char origin[17];
    char *dlq;
    char *endpoint;
    char *host; /* this host's name, for the dead letters' sb-host */
    uint64_t max_payload;
    int64_t retention_ms;
    int schema_mode;
    int notify;
    sb_logger log;
    atomic_int schema_ok;        /* verified once per bus */
    atomic_llong last_prune_us;  /* monotonic, for T25's once a minute */
    atomic_llong xmin_warned_us; /* monotonic, xmin.c's once a minute */
    atomic_int xmin_warned_pid;  /* the holder it named */
    pthread_mutex_t wake_mu;
    sb_waker *wakers;
    /* Set by a higher module (the channel) so workers can answer jobs
     * that carry sb-reply-to (C23, T27); `failure` is NULL for a success;
     * `progress` marks a reply that does not end the wait. */
    int (*reply_hook)(void *user, const sb_msg *job, const void *data,
                      size_t len, const sb_failure *failure, int progress);
    void *reply_hook_user;
    sb_counters *counters;   /* this process's counts (metrics.c, S8) */
    int64_t counts_flush_ms; /* -1: counts are not written (counts.c) */
    sb_flusher *flusher;     /* counts.c; NULL when not writing */
    int counters_borrowed;   /* another bus's (sb_bus_count_into) */
    sb_beater *beater;       /* heartbeat.c; NULL when liveness is off */
};

struct sb_msg {
    char id[37];
    char lock_id[37];
    char *queue;
    void *payload;
    size_t payload_len;
    char *headers;
    int attempts;
    int64_t created_at_us;
    int64_t available_at_us; /* set by sb_queue_peek only */
    int64_t locked_until_us; /* sb_queue_peek: 0 when not leased */
    int priority;            /* sb_queue_peek only (T34) */
    char *progress;          /* sb_queue_peek only (T42), or NULL */
    char *unique_key;        /* sb_queue_peek only (T38), or NULL */
    /* T40: its own expiry (0: none), in the database's clock. */
    int64_t expires_at_us;
    char **kv; /* headers parsed on first lookup: key, value, key, ... */
    size_t n_kv;
};

struct sb_tx {
    sb_bus *bus;
    sb_conn *conn;
    /* queues published to, for wake-ups after commit (small list) */
    char *woken[8];
    int n_woken;
    int wake_all;
    sb_tx_counts *counts; /* counted at commit (metrics.c) */
};

/* Make sure the schema exists / matches (per schema_mode) before use. */
int sb__bus_ensure_schema(sb_bus *bus, sb_error *err);
/* Now for SQLite statements (host clock, us); 0 on server backends, where
 * the SQL uses now(). */
int64_t sb__bus_now_us(const sb_bus *bus);
/* Signal local workers waiting on `queue` (NULL = all). */
void sb__bus_wake_local(sb_bus *bus, const char *queue);
void sb__bus_add_waker(sb_bus *bus, sb_waker *w);
void sb__bus_remove_waker(sb_bus *bus, sb_waker *w);

/* Publish rows on an open transaction connection (other modules' and the
 * transport's own bulk operations; counted for sb_bus_metrics when
 * written). Adds NOTIFY for immediate rows on PostgreSQL. */
int sb__publish_on(sb_bus *bus, sb_conn *c, const char *queue,
                   const sb_outgoing *msgs, size_t n, char (*ids)[37],
                   int *any_immediate, sb_error *err);

/* A queue's settings (settings.c): all 0 when it has no row. */
typedef struct sb_settings {
    int found;       /* it has a row */
    int paused;      /* T35 */
    int prioritized; /* T34: claims order by priority */
    int max_running, rate_limit;
    int64_t rate_interval_ms, ttl_ms;
    int64_t clock_offset_us; /* sb__settings_get only: the database's
                                clock less the host's (T40) */
} sb_settings;

/* T36 (limits.c): what a limited queue's claim may take. */
typedef struct sb_limit_grant {
    int allowed;    /* rows this claim may take, 0 to its max */
    int by_running; /* max_running cut it below the max */
    int rate_limit; /* the bucket's capacity, 0: no rate limit */
    int64_t rate_interval_ms;
    int64_t milli_tokens; /* the bucket before the claim, in thousandths */
    int64_t now_us;       /* the claim's host time (SQLite's clock) */
} sb_limit_grant;
/* On `c`, in the claim's transaction, before the claim of up to `max`
 * rows of `queue`: lock the queue's settings row until the transaction
 * ends, count its leased rows, refill its bucket; `g->allowed` is what
 * the claim may take (`max` when the row has no limit any more). Call
 * sb__limit_end with what the claim took before the commit. Transient
 * and backend codes. */
int sb__limit_begin(sb_bus *bus, sb_conn *c, const char *queue, int max,
                    sb_limit_grant *g, sb_error *err);
/* Take `taken` tokens from the bucket sb__limit_begin refilled. */
int sb__limit_end(sb_bus *bus, sb_conn *c, const char *queue,
                  const sb_limit_grant *g, size_t taken, sb_error *err);
/* After a claim that took `taken` rows under `g`: how long until the
 * bucket holds a whole token again (microseconds), 0 when it does or
 * there is no rate limit. */
int64_t sb__limit_wait_us(const sb_limit_grant *g, size_t taken);

/* The settings of `queue`, on an open transaction or in one of their own.
 * Transient and backend codes. */
int sb__settings_get_on(sb_bus *bus, sb_conn *c, const char *queue,
                        sb_settings *out, sb_error *err);
int sb__settings_get(sb_bus *bus, const char *queue, sb_settings *out,
                     sb_error *err);
/* `fn` for every queue with settings, in queue order, until one fails. */
typedef int (*sb_settings_fn)(const char *queue, const sb_settings *s,
                              void *user, sb_error *err);
int sb__settings_list_on(sb_bus *bus, sb_conn *c, sb_settings_fn fn, void *user,
                         sb_error *err);

/* Claim on an open transaction. Appends to *out (array grown as needed).
 * `delete_now` deletes the claimed rows in the same statement (the error
 * store's ingestion, whose transaction writes them elsewhere). */
int sb__claim_on(sb_bus *bus, sb_conn *c, const char *queue, int max,
                 int64_t lease_ms, int delete_now, sb_msg ***out, size_t *n_out,
                 sb_error *err);

/* A consumer's position in its queue (claim.c): the newest available_at
 * it claimed (database clock, microseconds since the epoch; 0 = none
 * yet) and when it last scanned the queue from its first entry. */
typedef struct sb_claim_cursor {
    int prioritized; /* the queue's claims order by priority (T34) */
    int64_t floor_us;
    int64_t full_at_us;   /* sb__mono_us() of the last full scan */
    int64_t full_cost_us; /* how long it took */
} sb_claim_cursor;

/* A full scan at least this often (microseconds). An empty bounded claim
 * of an idle consumer falls back to one after 50 times the last one's
 * cost, within these bounds, so full scans take at most ~2 % of the
 * consumer's time however many dead entries they walk. */
#define SB_CLAIM_FULL_EVERY_US 1000000
#define SB_CLAIM_FULL_IDLE_US 100000
/* The bounded scan starts this far before the cursor (microseconds). */
#define SB_CLAIM_SLACK_US 1000000

/* A consumer's claim on an open transaction (T14), through its cursor:
 * where the backend has a bounded form, the index scan starts
 * SB_CLAIM_SLACK_US before the newest available_at claimed so far instead
 * of at the queue's first entry, so it does not walk the entries of the
 * rows acked or claimed before it (which a held xmin keeps alive); a full
 * scan at most SB_CLAIM_FULL_EVERY_US apart finds what lies below (rows
 * of transactions that committed late, expired leases, T17). With
 * `pending` set, an empty claim also tells whether the queue holds a
 * ready or leased row: 1 when a bounded claim cannot tell. */
int sb__claim_next_on(sb_bus *bus, sb_conn *c, sb_claim_cursor *cur,
                      const char *queue, int max, int64_t lease_ms,
                      int *pending, sb_msg ***out, size_t *n_out,
                      sb_error *err);

/* sb__claim_next_on in two halves around a pipeline (sb__pipeline),
 * so that a worker's claim shares one round trip with its settlements
 * and its commit: prepare fills `call` (borrowing `cc`) with the claim
 * the cursor chooses; finish takes the claimed rows (`rc`: the
 * pipeline's outcome for this call) and, where an empty claim calls for
 * it, runs the full scan and the pending probe on `c` in their own
 * statements. Call finish whenever prepare ran. */
/* The columns of every claim statement: the message's seven (as
 * sb__msg_from_row reads them), then available_at, the priority and the
 * expiry. */
#define SB_CLAIM_COL_AVAILABLE 7
#define SB_CLAIM_COL_PRIORITY 8
#define SB_CLAIM_COL_EXPIRES 9
/* The parameters a row of the _ex inserts: id, payload, headers, delay,
 * priority, expiry, unique key. */
#define SB_INSERT_EX_WIDTH 7

/* T38: the unique keys of a batch, an entry a message (keys[i] NULL for
 * none). */
typedef struct sb_unique_opts {
    const char **keys;
    int *policy;
    int64_t *window_ms;
} sb_unique_opts;
/* SB_INVALID naming `field` unless `key` is 1 to SB_UNIQUE_KEY_MAX bytes
 * of UTF-8 without control characters. */
int sb__unique_key_check(const char *key, const char *field, sb_error *err);
/* In a publish's transaction, before its rows are inserted: lock each
 * keyed message's key (in one order for every batch), refuse the batch
 * with SB_CONFLICT naming msgs[i].unique_key when a message or window
 * holds it (not the message itself: T9), and open the windows of
 * SB_UNIQUE_WINDOW keys. */
int sb__unique_check_on(sb_bus *bus, sb_conn *c, const char *queue,
                        const sb_unique_opts *u, size_t n, char (*ids)[37],
                        sb_error *err);
/* Delete up to `max` key windows that have ended. */
int sb__unique_prune(sb_bus *bus, size_t max, sb_error *err);

/* T40: whether claimed message `m` is past its expiry, or older than the
 * queue's time to live `ttl_ms` (0: none), now by the database's clock:
 * the host's plus `clock_offset_us` (sb__clock_offset_on). */
int sb__msg_expired(const sb_msg *m, int64_t ttl_ms, int64_t clock_offset_us);
/* The database's clock less the host's, in microseconds (0 where they
 * are one: SQLite). Transient and backend codes. */
int sb__clock_offset_on(sb_bus *bus, sb_conn *c, int64_t *offset_us,
                        sb_error *err);
/* Dead-letter claimed message `m` with reason "expired", fenced by its
 * lease (T40). As sb__dead_letter_on. */
int sb__expire_claimed_on(sb_bus *bus, sb_conn *c, const sb_msg *m,
                          sb_error *err);

typedef struct sb_claim_call {
    sb_value p[6];
    char lock_id[37];
    int full;   /* from the queue's first entry */
    int prio;   /* the prioritized claim (T34) */
    int64_t t0; /* sb__mono_us() when prepared */
    sb_rows *rows;
} sb_claim_call;
void sb__claim_prepare(sb_bus *bus, sb_claim_cursor *cur, const char *queue,
                       int max, int64_t lease_ms, sb_claim_call *cc,
                       sb_call *call);
int sb__claim_finish(sb_bus *bus, sb_conn *c, sb_claim_cursor *cur,
                     const char *queue, int max, int64_t lease_ms,
                     sb_claim_call *cc, int rc, int *pending, sb_msg ***out,
                     size_t *n_out, sb_error *err);

/* sb_xmin_holder_get on an open connection (xmin.c). */
int sb__xmin_holder_on(sb_bus *bus, sb_conn *c, int64_t warn_after_ms,
                       sb_xmin_holder *out, sb_error *err);
/* A consumer's full scan took SB_CLAIM_SLOW_FULL_US or more: on an idle
 * pooled connection (none: skipped), look for the xmin holder and warn
 * when its transaction is SB_XMIN_WARN_SLOW_MS old (a slot: always); at
 * most once a minute per bus once it warned. Never fails the caller. */
#define SB_CLAIM_SLOW_FULL_US 5000
#define SB_XMIN_WARN_SLOW_MS 10000
void sb__xmin_check(sb_bus *bus);

/* Settlement statements on an open transaction; each returns
 * SB_LOST_LEASE when the fence no longer matches. */
int sb__ack_on(sb_bus *bus, sb_conn *c, const sb_msg *m, sb_error *err);
int sb__nak_on(sb_bus *bus, sb_conn *c, const sb_msg *m, int64_t delay_ms,
               const char *error_text, sb_error *err);
int sb__hand_back_on(sb_bus *bus, sb_conn *c, const sb_msg *m, sb_error *err);
/* SB_OK when `text` (`len` bytes) may be stored as a progress (T42):
 * UTF-8, no NUL, at most SB_MAX_PROGRESS bytes; else SB_INVALID naming
 * `field`. */
int sb__progress_check(const char *text, size_t len, const char *field,
                       sb_error *err);
int sb__renew_on(sb_bus *bus, sb_conn *c, const sb_msg *m, int64_t lease_ms,
                 sb_error *err);
/* The sb-processing-endpoint a dead letter names: the failure's own
 * (when its size covers the field and it is set), else the bus's. */
const char *sb__failure_endpoint(const sb_bus *bus, const sb_failure *f);
int sb__dead_letter_on(sb_bus *bus, sb_conn *c, const sb_msg *m,
                       const sb_failure *f, int fenced, sb_error *err);
/* Ack or renew many messages: `lost[i]` is set for each whose fence no
 * longer matched. One statement where the backend has a set-based form
 * (one round trip on PostgreSQL), else one per message. */
int sb__ack_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs, size_t n,
                    int *lost, sb_error *err);
int sb__renew_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs, size_t n,
                      int64_t lease_ms, int *lost, sb_error *err);
int sb__hand_back_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs,
                          size_t n, int *lost, sb_error *err);
/* Whether acking `m` also writes E16's retry confirmation (a job that
 * may name sb-retry-of), which sb__ack_many_on does after the delete. */
int sb__needs_confirm(const sb_msg *m);
/* A set-based settlement (the dialect's ack_many, renew_many or
 * hand_back_many) prepared for a pipeline (sb__pipeline): `call` borrows
 * `mc`, which holds the parameters and receives the rows. `lease_ms` < 0
 * for the two-parameter statements. sb__many_finish reads the result
 * (`rc`, the pipeline's outcome for this call) into lost[] and frees
 * what prepare allocated; call it whenever prepare returned SB_OK. */
typedef struct sb_many_call {
    sb_buf ids, locks;
    sb_value p[4];
    sb_rows *rows;
} sb_many_call;
int sb__many_prepare(sb_bus *bus, const char *sql, sb_msg *const *msgs,
                     size_t n, int64_t lease_ms, int *lost, sb_many_call *mc,
                     sb_call *call, sb_error *err);
int sb__many_finish(sb_many_call *mc, sb_msg *const *msgs, size_t n, int *lost,
                    int rc, sb_error *err);
/* The fenced deletes of sb__ack_many_on without E16's retry
 * confirmations: an early-ack worker removes a row this way as a
 * background thread takes it, before its handler runs (T23). */
int sb__remove_many_on(sb_bus *bus, sb_conn *c, sb_msg *const *msgs, size_t n,
                       int *lost, sb_error *err);
/* True if `queue` holds a ready or leased message. */
int sb__pending_on(sb_bus *bus, sb_conn *c, const char *queue, int *pending,
                   sb_error *err);
/* Prune dead letters if retention is set and a minute has passed. Never
 * fails the caller: errors are logged. */
void sb__maybe_prune(sb_bus *bus);

/* The dialect of a backend name ("sqlite", "postgresql", "mssql"), after
 * checking `table_prefix` (NULL = the default): SB_INVALID naming
 * "backend" or "table_prefix". */
int sb__backend_dialect(const char *backend, const char *table_prefix,
                        int *dialect, sb_error *err);
/* The DDL of one module for a backend name ("sqlite", "postgresql",
 * "mssql") with the table prefix substituted: sb_schema_sql, the
 * channel's and the operations table's. */
int sb__ddl_for(const char *backend, const char *table_prefix,
                const char *sqlite_ddl, const char *postgres_ddl,
                const char *mssql_ddl, char **out, sb_error *err);

/* statements.c: call `fn` with "module.name" and `sql`, unless `sql` is
 * NULL or "" (a statement the backend does not send). */
void sb__statement_emit(sb_statement_fn fn, void *user, const char *module,
                        const char *name, const char *sql);
/* The checks every sb_*_statements makes first: `fn` given, the backend
 * and prefix valid; `*dialect` set. */
int sb__statements_begin(const char *backend, const char *table_prefix,
                         sb_statement_fn fn, int *dialect, sb_error *err);

/* Separates a wake-up's queue from its origin (a control character, which
 * no queue name holds). */
#define SB_WAKE_ORIGIN_SEP '\x1f'

/* PostgreSQL LISTEN on `channel` on a dedicated connection, reconnecting
 * after outages; `fn(user, payload)` runs on its thread for notifications
 * whose payload equals `filter` (NULL = all; "" after a reconnect). A
 * failure to start only costs latency: polling stays the correctness
 * path (T13, C14). */
typedef struct sb_wake_listener sb_wake_listener;
void sb__wake_listener_start(sb_bus *bus, const char *channel,
                             const char *filter,
                             void (*fn)(void *user, const char *payload),
                             void *user, sb_wake_listener **out);
void sb__wake_listener_stop(sb_wake_listener *l);
/* 1 while the LISTEN connection is up (its self-check passed, C14). */
int sb__wake_listener_up(sb_wake_listener *l);

/* Message helpers. */
sb_msg *sb__msg_new(void);
/* Fill a message from a claim/list row: id, payload, headers, attempts,
 * lock_id, created_at, queue. */
int sb__msg_from_row(const sb_rows *rows, size_t r, sb_msg **out);
/* Parse the headers for sb_msg_header now if not done yet: SB_OK, or
 * SB_NOMEM. sb_msg_header answers NULL for every header when that parse
 * runs out of memory, as if they were absent, so the library's own
 * readers of headers call this first and fail instead of acting on
 * headers they think absent. Headers that are not a JSON object parse as
 * none (SB_OK), as sb_msg_header reads them. */
int sb__msg_parse_headers(const sb_msg *m);

#define SB_MAX_ERROR_TEXT (8 * 1024)
/* Room for the longest derived name ("messages_created_idx" and the
 * longer names of later modules) within PostgreSQL's 63 bytes. */
#define SB_MAX_PREFIX_LEN 30

#endif
