/*
 * sql_dialect.h - statement templates of one backend. `{p}` stands for the
 * validated table prefix; sql.c substitutes it once per bus. Statements
 * that are the same everywhere would live in sql.c; so far every statement
 * differs in its clock or its casts, so each backend file lists them all.
 */
#ifndef SB_SQL_DIALECT_H
#define SB_SQL_DIALECT_H

typedef struct sb_sql_templates {
    const char *ddl, *lock;
    /* What a store made by an earlier version needs besides its missing
     * columns (schema.c): the dequeue index without priority dropped. */
    const char *upgrade;
    /* Index builds in a transaction of their own under `index_lock`, or
     * NULL when `ddl` creates the indexes too (SQL Server's run apart:
     * their run time grows with the table). */
    const char *ddl_indexes, *index_lock;
    const char *insert_head, *insert_row, *insert_tail;
    /* The insert with a priority per row (5 parameters a row); the tail
     * is insert_tail where insert_tail_ex is NULL. */
    const char *insert_head_ex, *insert_row_ex, *insert_tail_ex;
    /* The claim of a prioritized queue: highest priority first (T34). */
    const char *claim_prio;
    /* {p}queue_settings (T34, T35): $1 queue, $2 now_us flags a queue
     * prioritized; its settings by $1; every queue's; paused set to $2
     * at $3 now_us. */
    const char *mark_prioritized, *settings_get, *settings_list;
    const char *settings_pause;
    /* T40: the queue's time to live $2 (ms, or NULL) at $3 now_us; up
     * to $2 messages past their expiry at $1 now_us, not under a lease,
     * locked for the transaction (expire_due: their own expires_at;
     * expire_ttl: queue $3's, published $4 ms or longer ago). */
    const char *settings_ttl, *expire_due, *expire_ttl;
    /* T40: the database's clock, for the offset of the host's from it;
     * NULL where the host's clock is the store's (SQLite). */
    const char *clock_now;
    /* T38: the messages of queue $1 holding key $2, locked, as cancel_get
     * (flag at $3 now_us); the publish lock of one key ($1, a 64-bit hash
     * of the queue and the key; NULL where the one writer serialises);
     * the id of a message of $1 holding $2 (only one no lease holds at
     * $3 now_us when $4 is 1); a key's window ($1 queue, $2 key, $3 now_us
     * for get; $3 id, $4 window_ms, $5 now_us for put); the prune of ended
     * windows ($1 now_us, $2 limit). */
    const char *cancel_key_get, *unique_lock, *unique_holder;
    const char *unique_window_get, *unique_window_put, *unique_prune;
    /* T36: the limits $2 max_running, $3 rate_limit, $4 rate_interval_ms
     * (each NULL for none) at $5 now_us, the bucket made full; a limited
     * queue's claim: its settings row locked (max_running, rate_limit,
     * rate_interval_ms, the tokens refilled to $2 now_us in thousandths),
     * its leased rows at $2 now_us counted up to $3, $2 tokens taken at
     * $3 now_us. */
    const char *settings_limits, *limit_lock, *limit_running, *limit_take;
    /* T39: message $1 of queue $2, locked for the transaction, with a
     * flag (an eighth column, 1 or 0) saying whether a lease holds it at
     * $3 now_us. */
    const char *cancel_get;
    /* T42: progress $3 of message $1 under lease $2 (fenced). */
    const char *progress_set;
    /* {p}schedules (T41, schedules.c, scheduler.c): the upsert ($1
     * name, $2 queue, $3 cron, $4 interval_us, $5 time_zone, $6 payload,
     * $7 headers, $8 missed, $9 anchor_us, $10 last_us, $11 next_us, $12
     * now_us); the delete by $1; every row; the rows due at $1 now_us;
     * the settlement of $1 (last_us $2, next_us $3) if it still has
     * anchor_us $4 and last_us $5; the earliest next_us. */
    const char *schedule_put, *schedule_remove, *schedule_list;
    const char *schedule_due, *schedule_settle, *schedule_wake;
    /* {p}heartbeats (heartbeat.c, issue 22): the beat ($1 id, $2
     * endpoint, $3 host, $4 host_id, $5 pid, $6 interval_ms, $7 now_us);
     * the graceful stop of $1 while $2 pid holds it ($3 now_us); every
     * row with the database's now as its last column ($1 now_us);
     * monitored set to $2 for $1; the delete of $1 (both with their row
     * counts). */
    const char *heartbeat_beat, *heartbeat_stop, *heartbeat_list;
    const char *heartbeat_monitor, *heartbeat_remove;
    /* {p}settings (settings_store.c): $1's value and updated_at; the
     * upsert ($1 name, $2 value, $3 now_us); the delete of $1 (its row
     * count); every row by name. */
    const char *setting_get, *setting_put, *setting_remove, *setting_list;
    const char *claim, *claim_delete, *ack, *nak, *hand_back, *renew;
    /* The claim with a lower bound on available_at ($6, microseconds
     * since the epoch), returning available_at as an eighth column; NULL
     * where a claim never walks the entries of deleted rows (claim.c). */
    const char *claim_from;
    /* set-based forms, or NULL */
    const char *ack_many, *renew_many, *hand_back_many;
    const char *dead_letter, *dlq_insert, *delete_any, *pending;
    const char *stats, *dlq_stats, *dlq_list, *peek, *prune;
    const char *columns, *indexes, *notify;
    /* {p}counts (counts.c): $1 queue, $2..$5 published, acked, naked,
     * dead-lettered to add, $6 now_us; the list; the prune of rows not
     * written for $2 ms at $1 now_us. */
    const char *counts_add, *counts_list, *counts_prune;
    /* The oldest xmin holder (xmin.c): kind, pid, name, state, user,
     * xmin age, age in ms; NULL where the backend has no such horizon. */
    const char *xmin_holder;
} sb_sql_templates;

extern const sb_sql_templates sb__sql_sqlite;
extern const sb_sql_templates sb__sql_postgres;
extern const sb_sql_templates sb__sql_mssql;
/* SQL Server's tables and indexes, one after the other the script of
 * `schema print` (two literals: one would pass the 4095 bytes ISO C
 * promises a literal). */
extern const char sb__sql_mssql_tables[];
extern const char sb__sql_mssql_indexes[];

#endif
