/*
 * channel.h - internal declarations of the channel module (see
 * docs/internals/channel.md): statements, the channel, waiters, replies.
 */
#ifndef SB_CHANNEL_H
#define SB_CHANNEL_H

#include "transport/transport.h"

#define SB_RECOVERY_QUEUE "sqlbus.recovery"
#define SB_MAX_ERROR_DETAIL (16 * 1024)
#define SB_SCAN_PAGE 64        /* C15: keyset page per id */
#define SB_EXEC_QUEUE_MAX 1024 /* C16: replies queued per id */
#define SB_SCAN_QUEUE_MAX 4096 /* C14: coalesced hints; then a full sweep */
#define SB_DELIVERY_THREADS 4  /* C16: executors shared by all ids */
#define SB_CONFIRM_MAX 65536   /* C12: replies awaiting confirmation */
#define SB_HEARTBEAT_BATCH 500 /* C17: subscriber rows per statement */
#define SB_SWEEP_BATCH 500     /* C14: ids per sweep statement */
#define SB_ORPHAN_BATCH 100    /* C12: unconfirmed replies per scan */

/* The channel's statements, by name: each backend's templates ({p} =
 * table prefix) and a bus's built set have one field each, in this order
 * (sql.c builds them, statements.c names them for review). */
#define SB_CH_STATEMENTS(X)                                                    \
    X(ddl)                                                                     \
    X(lock)                                                                    \
    X(watermark) /* -> now_us, seq ($1 now_us for SQLite) */                   \
    X(seq_next)  /* SQLite only: bump the counter, -> value */                 \
    /* upsert: $1 corr, $2 reg, $3 inst, $4 ttl_ms, $5 now_us */               \
    X(subscribe)                                                               \
    /* $1 corr, $2 reg, $3 handler, $4 ctx, $5 ttl_ms, $6 now_us */            \
    X(save_recovery)                                                           \
    X(unsubscribe)     /* $1 corr, $2 reg */                                   \
    X(forget_recovery) /* $1 corr, $2 reg */                                   \
    X(live)            /* any live subscriber: $1 corr, $2 now_us */           \
    /* $1 id, $2 corr, $3 reply, $4 is_error, $5 type, $6 msg, $7 detail,    \
     * $8 ttl_ms, $9 now_us, $10 recovery_claimed; RETURNING created_at */ \
    X(insert)                                                                  \
    /* $1 id -> created_at, acked_at, acked_seq, recovery_claimed,           \
     * correlation_id */ \
    X(stored)                                                                  \
    /* $1 corr, $2 after_us, $3 after_id, $4 now, $5 limit -> row columns    \
     * (see reply.c) */ \
    X(scan)                                                                    \
    /* $1 id, $2 now_us, $3 seq (SQLite) -> acked_at, acked_seq */             \
    X(claim)                                                                   \
    X(acked)         /* $1 id -> acked_at (NULL if not yet) */                 \
    X(recover)       /* $1 id: the recovery claim; changes = won */            \
    X(registrations) /* $1 corr, $2 now_us -> reg, handler */                  \
    X(prune_messages)                                                          \
    X(prune_subscribers)                                                       \
    X(prune_recovery)                                                          \
    X(notify)       /* PostgreSQL: $1 channel, $2 corr */                      \
    X(reply_by_id)  /* $1 id -> the scan's columns */                          \
    X(registration) /* $1 corr, $2 reg -> handler, context */                  \
    /* $1 JSON [{"c":corr,"r":reg}], $2 inst, $3 ttl_ms, $4 now_us */          \
    X(subscribe_many)                                                          \
    /* $1 older_than_ms, $2 now_us, $3 limit, $4 JSON array of ids to        \
     * leave alone: claim unconfirmed replies -> id, corr */ \
    X(orphans)                                                                 \
    X(mark_dispatched) /* $1 corr, $2 reg, $3 now_us */                        \
    /* $1 now_us, keyset cursor $2 after_us, $3 after_corr, $4 after_reg;    \
     * $5 stale_ms, $6 state mask (0 = all), $7 limit -> corr, reg,          \
     * handler, context, registered_at, expires_at, dispatched_at, live,     \
     * state */ \
    X(list_registrations)                                                      \
    X(count_stale) /* $1 now_us, $2 stale_ms -> count */                       \
    X(scan_many)   /* the scan for a JSON array of ids ($1) */                 \
    /* $1 now_us, $2 stale_ms -> state, handler of a dispatched one ('' */     \
    /* otherwise), count; most first */                                        \
    X(count_states)

typedef struct sb_channel_templates {
#define X(f) const char *f;
    SB_CH_STATEMENTS(X)
#undef X
} sb_channel_templates;

extern const sb_channel_templates sb__channel_sql_sqlite;
extern const sb_channel_templates sb__channel_sql_postgres;
extern const sb_channel_templates sb__channel_sql_mssql;

typedef struct sb_channel_sql {
#define X(f) char *f;
    SB_CH_STATEMENTS(X)
#undef X
} sb_channel_sql;

/* A recovery registration as listed (public handle sb_registration):
 * strings and context borrowed from the rows of the page being listed. */
struct sb_registration {
    const char *correlation_id, *registration_id, *handler;
    const void *context;
    size_t context_len;
    int64_t registered_at_us, expires_at_us, dispatched_at_us;
    int state; /* enum sb_registration_state */
    int live;
};

/* A reply (public handle sb_reply). */
struct sb_reply {
    char id[37];
    char *correlation_id;
    void *data;
    size_t len;
    int is_error;
    char *error_type, *error_message, *error_detail;
    int64_t created_at_us;
    int64_t acked_at_us; /* 0 = not acknowledged when read */
    int64_t acked_seq;
    struct sb_reply *next; /* in a waiter's progress queue */
};

sb_reply *sb__reply_from_row(const sb_rows *rows, size_t r);
sb_reply *sb__reply_copy(const sb_reply *r);

struct sb_channel;
struct sb_waiter;

/* One correlation id with live waiters in this process: its waiters, its
 * keyset cursor (C15) and its bounded delivery queue (C16). Owned by the
 * channel's id table and guarded by the channel lock. */
typedef struct sb_live_id {
    char *corr;
    uint64_t hash;
    struct sb_live_id *hnext;  /* hash chain */
    struct sb_waiter *waiters; /* linked by id_next */
    int64_t from_us;           /* earliest watermark - tolerance */
    int64_t cursor_us;         /* rows up to (cursor_us, cursor_id) */
    char cursor_id[37];        /* were admitted; "" = none yet */
    int reread;                /* next scan starts at from_us */
    sb_reply *q_head, *q_tail; /* admitted, not yet delivered */
    int q_len;
    int running;      /* on a delivery thread */
    int ready;        /* in the ready FIFO */
    int gap;          /* a row was refused: only a scan from
                                      the cursor may admit until one reads
                                      to the end without a refusal */
    int pass_refused; /* this scan pass refused a row */
    int scan_queued;  /* in the scan FIFO */
    int pins;         /* a scan runs without the lock */
    struct sb_live_id *ready_next, *scan_next;
} sb_live_id;

struct sb_waiter {
    struct sb_channel *ch;
    char *corr;
    sb_live_id *id; /* NULL once ended */
    struct sb_waiter *id_next;
    char reg_id[37];
    int64_t started_at_us; /* database clock */
    int64_t started_seq;
    int64_t deadline_us; /* monotonic */
    sb_until_fn until;
    void *until_user;
    pthread_cond_t cv;
    int efd;           /* created on first sb_waiter_fd; -1 before */
    int delivering;    /* a delivery to this waiter is running */
    int ended;         /* the outcome is decided */
    int outcome;       /* its result code (SB_OK is 0) */
    int outcome_taken; /* returned by wait or take */
    sb_reply *result;  /* terminal or error reply (outcome's) */
    sb_reply *progress_head, *progress_tail;
    char (*seen)[37]; /* reply ids already handled */
    size_t n_seen, cap_seen;
    int cleaned; /* rows deleted */
    int refs;    /* the caller + any running delivery */
};

/* A stored reply whose confirmation is pending (C12 step 4). */
typedef struct sb_pending {
    char id[37];
    char *corr;
    int64_t created_us; /* the row's created_at */
    int64_t due_us;     /* monotonic */
} sb_pending;

/* ingress.c: the response-ingress consumer (C24). */
typedef struct sb_ingress {
    sb_worker *worker;
    char **paths;
    size_t n_paths;
    size_t budget;
    uint64_t ingested, dropped; /* under the channel lock */
} sb_ingress;

struct sb_channel {
    sb_bus *bus;
    sb_channel_sql sql;
    sb_channel_options o;
    int sweep_fixed; /* full_sweep_interval_ms was given */
    char *instance;
    char *notify_channel;
    pthread_mutex_t mu;
    pthread_cond_t loop_cv;
    pthread_t loop;
    int stopping;
    /* ids.c: live ids by correlation id */
    sb_live_id **buckets;
    size_t n_buckets, n_ids, n_waiters;
    /* scan.c: ids to scan soon, and a full sweep when requested */
    sb_live_id *scan_head, *scan_tail;
    size_t n_scan;
    int full_requested;
    /* executor.c: ids with queued replies, and the delivery threads */
    sb_live_id *ready_head, *ready_tail;
    pthread_cond_t exec_cv;
    pthread_t exec[SB_DELIVERY_THREADS];
    int n_exec, exec_stopping;
    /* confirm.c: the FIFO of pending confirmations (due times ascend) */
    sb_pending *pend;
    size_t pend_cap, pend_head, pend_len;
    int draining; /* closing: drop confirmed entries early */
    int64_t next_heartbeat_us, next_prune_us, next_orphans_us;
    /* recovery.c: handlers of this process and the queue's consumer */
    pthread_mutex_t handlers_mu;
    struct recovery_entry *handlers;
    sb_worker *recovery_worker;
    sb_ingress *ingress;
    /* wake.c: cross-process wake-ups */
    sb_wake_listener *listener;
    sb_wal_watch *wal;
};

/* ids.c (channel lock held). */
sb_live_id *sb__ids_find(struct sb_channel *ch, const char *corr);
/* Link a registered waiter to its id (created if new); the id rereads
 * from the new waiter's watermark at its next scan. */
int sb__ids_add_waiter(struct sb_channel *ch, struct sb_waiter *w);
/* Unlink an ending waiter; frees its id when nothing else uses it. */
void sb__ids_remove_waiter(struct sb_channel *ch, struct sb_waiter *w);
/* Free `id` if it has no waiters, no queue, no pins and no FIFO place. */
void sb__ids_release(struct sb_channel *ch, sb_live_id *id);
/* Every live id, pinned, for use without the lock; unpin with
 * sb__ids_unpin_all. */
int sb__ids_pin_all(struct sb_channel *ch, sb_live_id ***out, size_t *n);
void sb__ids_unpin_all(struct sb_channel *ch, sb_live_id **ids, size_t n);
void sb__ids_free_all(struct sb_channel *ch);
/* Queue a targeted scan of `id` and wake the loop (C14). */
void sb__scan_request(struct sb_channel *ch, sb_live_id *id);
/* 1 if a waiter of this process that has not ended is waiting on `corr`
 * and its watermark admits a reply created at `created_us`: that waiter
 * is live and will claim the reply itself (C12 step 3). */
int sb__ids_awaited(struct sb_channel *ch, const char *corr,
                    int64_t created_us);
/* Append to `b` a JSON array of the ids whose live waiters here still hold
 * replies back (a delivery running, replies queued, or refused rows waiting
 * for their rescan); b->failed if it did not fit. */
int sb__ids_backlog_json(struct sb_channel *ch, sb_buf *b);

/* executor.c (C16). Admit a reply for delivery to the waiters of `id`
 * (copied; channel lock held): 1 if queued or already handled, 0 if
 * refused: the queue is full (the row stays unclaimed; the id is rescanned
 * once its queue drains), or, for the fast path (`from_scan` 0), an
 * earlier row is still waiting for that rescan. */
int sb__exec_admit(struct sb_channel *ch, sb_live_id *id, const sb_reply *r,
                   int from_scan);
int sb__exec_start(struct sb_channel *ch, sb_error *err);
void sb__exec_stop(struct sb_channel *ch);

/* scan.c (C14, C15). */
void sb__channel_hint(struct sb_channel *ch, const char *corr);
void sb__channel_request_full(struct sb_channel *ch);
/* Loop thread, without the lock: scan the queued ids; sweep every id. */
void sb__channel_run_scans(struct sb_channel *ch);
void sb__channel_sweep(struct sb_channel *ch, int reconcile);

/* confirm.c (C12 steps 4-5). */
void sb__confirm_add(struct sb_channel *ch, const sb_reply *r);
/* Loop thread, without the lock: settle due confirmations; returns the
 * next due time (monotonic us, INT64_MAX if none). */
int64_t sb__confirm_run(struct sb_channel *ch, int64_t now);
/* Claim replies no confirmer settled (their publisher died). */
void sb__confirm_orphans(struct sb_channel *ch);
void sb__confirm_free(struct sb_channel *ch);

/* wake.c: start / stop the LISTEN connection or the WAL watch (C14). */
void sb__channel_wake_start(struct sb_channel *ch);
void sb__channel_wake_stop(struct sb_channel *ch);

/* jobs.c: become / stop being the bus's reply hook (C23). */
void sb__channel_jobs_attach(struct sb_channel *ch);
void sb__channel_jobs_detach(struct sb_channel *ch);

/* ingress.c: stop the response-ingress consumer. */
void sb__channel_ingress_close(struct sb_channel *ch);

/* recovery.c: stop the recovery consumer and free the handlers. */
void sb__channel_recovery_close(struct sb_channel *ch);

/* A statement of the bus's set by its field name. */
#define CH_SQL(ch, f) ((ch)->sql.f)

int sb__channel_sql_new(int dialect, const char *prefix, sb_channel_sql *out,
                        sb_error *err);
void sb__channel_sql_free(sb_channel_sql *sql);

/* Create the channel's tables (under the schema lock) when the bus creates
 * its schema (SB_SCHEMA_AUTO); then, unless the schema mode is NONE,
 * check each column their DDL declares is there (sb__schema_after_ddl:
 * SB_SCHEMA_MISMATCH naming it and the fix) and on SQL Server verify
 * types, collations and keys (verify.c). */
int sb__channel_ensure_schema(sb_bus *bus, const sb_channel_sql *sql,
                              sb_error *err);
/* verify.c: SQL Server's query of the ack sequence's shape ($1 name). */
extern const char sb__channel_seq_sql[];
/* verify.c: SQL Server's catalog checks of the channel's tables and ack
 * sequence (SB_SCHEMA_MISMATCH naming the column, with the fix). */
int sb__channel_verify(sb_bus *bus, sb_error *err);

/* sql.c: draw the next ack-sequence value inside the open transaction
 * (SQLite: bump the counter row; PostgreSQL: nextval happens in the
 * statements). */
int sb__channel_next_seq(struct sb_channel *ch, sb_conn *c, int64_t *seq,
                         sb_error *err);

/* Deliver a stored reply to the waiters of `id` (claim in the database,
 * watermark, until, outcome); a delivery thread, without the lock.
 * Returns how many waiters took it. */
int sb__channel_deliver(struct sb_channel *ch, sb_live_id *id,
                        const sb_reply *r);

/* recovery.c: hand a reply to recovery inside an open transaction: one job
 * per stored registration on SB_RECOVERY_QUEUE (C21). */
int sb__channel_enqueue_recovery(struct sb_channel *ch, sb_conn *c,
                                 const char *corr, const char *reply_id,
                                 sb_error *err);

/* upkeep.c: refresh subscriber rows of live waiters (C17) and prune
 * (C18). */
void sb__channel_heartbeat(struct sb_channel *ch);
void sb__channel_prune(struct sb_channel *ch);

/* waiter.c: end waiters whose deadline passed (C4); returns the next
 * deadline (monotonic us). Call without the channel lock. */
int64_t sb__channel_expire(struct sb_channel *ch, int64_t now);
/* End a waiter with `rc` (and `reply`, copied) unless it already ended;
 * call with the channel lock held. Returns 1 if this call set the outcome;
 * the caller must then run sb__waiter_cleanup without the lock. */
int sb__waiter_finish_locked(struct sb_waiter *w, int rc, const sb_reply *r);
/* Delete the waiter's recovery row, then its subscriber row (C4, trap 18). */
void sb__waiter_cleanup(struct sb_waiter *w);
/* The same deletes without the once-only guard (heartbeat compensation). */
void sb__waiter_delete_rows(struct sb_waiter *w);
/* A request whose work is written by `fn` inside the registration's own
 * transaction, after its rows (sb_request_job): one commit instead of
 * two, and still nothing can answer before the waiter exists (C1). */
typedef int (*sb_in_tx_fn)(sb_conn *c, const char *corr, void *user,
                           sb_error *err);
int sb__request_in_tx(struct sb_channel *ch, const sb_wait_options *opts,
                      sb_in_tx_fn fn, void *user, sb_waiter **out,
                      sb_error *err);
/* Make the waiter's eventfd readable (if it has one); lock held. */
void sb__waiter_poke(struct sb_waiter *w);
/* Drop a reference taken under the channel lock; frees at zero. */
void sb__waiter_release(struct sb_waiter *w);

#endif
