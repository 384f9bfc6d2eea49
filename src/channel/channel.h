/*
 * channel.h - internal declarations of the channel module (see
 * docs/internals/channel.md): statements, the channel, waiters, replies.
 */
#ifndef SB_CHANNEL_H
#define SB_CHANNEL_H

#include "transport/transport.h"

#define SB_RECOVERY_QUEUE "sqlbus.recovery"
#define SB_MAX_ERROR_DETAIL (16 * 1024)
#define SB_SCAN_PAGE 64

/* Statement templates of one backend ({p} = table prefix). */
typedef struct sb_channel_templates {
    const char *ddl, *lock;
    const char *watermark;    /* -> now_us, seq ($1 now_us for SQLite) */
    const char *seq_next;     /* SQLite only: bump the counter, -> value */
    const char *subscribe;    /* upsert: $1 corr, $2 reg, $3 inst, $4 ttl_ms,
                                 $5 now_us */
    const char *save_recovery; /* $1 corr, $2 reg, $3 handler, $4 ctx,
                                  $5 ttl_ms, $6 now_us */
    const char *unsubscribe;  /* $1 corr, $2 reg */
    const char *forget_recovery; /* $1 corr, $2 reg */
    const char *live;         /* any live subscriber: $1 corr, $2 now_us */
    const char *insert;       /* $1 id, $2 corr, $3 reply, $4 is_error,
                                 $5 type, $6 msg, $7 detail, $8 ttl_ms,
                                 $9 now_us, $10 recovery_claimed;
                                 RETURNING created_at */
    const char *stored;       /* $1 id -> created_at, acked_at, acked_seq,
                                 recovery_claimed, correlation_id */
    const char *scan;         /* $1 corr, $2 after_us, $3 after_id, $4 now,
                                 $5 limit -> row columns (see reply.c) */
    const char *claim;        /* $1 id, $2 now_us, $3 seq (SQLite) ->
                                 acked_at, acked_seq */
    const char *acked;        /* $1 id -> acked_at (NULL if not yet) */
    const char *recover;      /* $1 id: the recovery claim; changes = won */
    const char *registrations; /* $1 corr, $2 now_us -> reg, handler */
    const char *prune_messages, *prune_subscribers, *prune_recovery;
    const char *notify;       /* PostgreSQL: $1 channel, $2 corr */
    const char *reply_by_id;  /* $1 id -> the scan's columns */
    const char *registration; /* $1 corr, $2 reg -> handler, context */
    const char *mark_dispatched; /* $1 corr, $2 reg, $3 now_us */
    const char *list_registrations; /* $1 now_us, keyset cursor $2 after_us,
                                       $3 after_corr, $4 after_reg;
                                       $5 stale_ms, $6 state mask (0 = all),
                                       $7 limit -> corr, reg, handler,
                                       context, registered_at, expires_at,
                                       dispatched_at, live, state */
    const char *count_stale;  /* $1 now_us, $2 stale_ms -> count */
} sb_channel_templates;

extern const sb_channel_templates sb__channel_sql_sqlite;
extern const sb_channel_templates sb__channel_sql_postgres;

typedef struct sb_channel_sql {
    char *s[25];
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

struct sb_waiter {
    struct sb_channel *ch;
    char *corr;
    char reg_id[37];
    int64_t started_at_us; /* database clock */
    int64_t started_seq;
    int64_t deadline_us;   /* monotonic */
    sb_until_fn until;
    void *until_user;
    pthread_cond_t cv;
    int efd;
    int delivering;        /* a delivery to this waiter is running */
    int ended;             /* the outcome is decided */
    int outcome;           /* its result code (SB_OK is 0) */
    int outcome_taken;     /* returned by wait or take */
    sb_reply *result;      /* terminal or error reply (outcome's) */
    sb_reply *progress_head, *progress_tail;
    char (*seen)[37];      /* reply ids already handled */
    size_t n_seen, cap_seen;
    int cleaned;           /* rows deleted */
    int refs;              /* the caller + any running delivery */
    struct sb_waiter *next; /* in the channel's live list */
};

struct sb_channel {
    sb_bus *bus;
    sb_channel_sql sql;
    sb_channel_options o;
    char *instance;
    char *messages_table, *subscribers_table, *recovery_table, *seq_name;
    char *notify_channel;
    pthread_mutex_t mu;
    pthread_cond_t loop_cv;
    pthread_t loop;
    int stopping;
    struct sb_waiter *waiters; /* live waiters */
    int scan_requested;
    int64_t next_heartbeat_us, next_prune_us;
    /* recovery.c: handlers of this process and the queue's consumer */
    pthread_mutex_t handlers_mu;
    struct recovery_entry *handlers;
    sb_worker *recovery_worker;
    /* wake.c: cross-process wake-ups */
    sb_wake_listener *listener;
    sb_wal_watch *wal;
};

/* wake.c: start / stop the LISTEN connection or the WAL watch (C14). */
void sb__channel_wake_start(struct sb_channel *ch);
void sb__channel_wake_stop(struct sb_channel *ch);

/* jobs.c: become / stop being the bus's reply hook (C23). */
void sb__channel_jobs_attach(struct sb_channel *ch);
void sb__channel_jobs_detach(struct sb_channel *ch);

/* recovery.c: stop the recovery consumer and free the handlers. */
void sb__channel_recovery_close(struct sb_channel *ch);

/* Statement text by index (see sql.c for the order). */
enum {
    CH_DDL, CH_LOCK, CH_WATERMARK, CH_SEQ_NEXT, CH_SUBSCRIBE,
    CH_SAVE_RECOVERY, CH_UNSUBSCRIBE, CH_FORGET_RECOVERY, CH_LIVE, CH_INSERT,
    CH_STORED, CH_SCAN, CH_CLAIM, CH_ACKED, CH_RECOVER, CH_REGISTRATIONS,
    CH_PRUNE_MESSAGES, CH_PRUNE_SUBSCRIBERS, CH_PRUNE_RECOVERY, CH_NOTIFY,
    CH_REPLY_BY_ID, CH_REGISTRATION, CH_MARK_DISPATCHED,
    CH_LIST_REGISTRATIONS, CH_COUNT_STALE
};
#define CH_SQL(ch, k) ((ch)->sql.s[k])

int sb__channel_sql_new(int dialect, const char *prefix, sb_channel_sql *out,
                        sb_error *err);
void sb__channel_sql_free(sb_channel_sql *sql);

/* Create the channel's tables (under the schema lock) when the bus creates
 * its schema (SB_SCHEMA_AUTO); otherwise do nothing. */
int sb__channel_ensure_schema(sb_bus *bus, const sb_channel_sql *sql,
                              sb_error *err);

/* Draw the next ack-sequence value inside the open transaction (SQLite:
 * bump the counter row; PostgreSQL: nextval happens in the statements). */
int sb__channel_next_seq(struct sb_channel *ch, sb_conn *c, int64_t *seq,
                         sb_error *err);

/* Try to deliver a stored reply to local waiters of its id (claim in the
 * database, watermark, until, outcome). Returns how many waiters took it.
 * Locks as needed; call without the channel lock. */
int sb__channel_deliver(struct sb_channel *ch, const sb_reply *r);

/* Hand a reply to recovery inside an open transaction: one job per stored
 * registration on SB_RECOVERY_QUEUE (C21). */
int sb__channel_enqueue_recovery(struct sb_channel *ch, sb_conn *c,
                                 const char *corr, const char *reply_id,
                                 sb_error *err);

/* Scan the database for replies to every live waiter (the sweep). */
void sb__channel_sweep(struct sb_channel *ch);
/* Refresh subscriber rows of live waiters (C17) and prune (C18). */
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
/* Drop a reference taken under the channel lock; frees at zero. */
void sb__waiter_release(struct sb_waiter *w);

#endif
