/* sql_sqlite.c - the transport's statements for SQLite. Times are integer
 * microseconds of the host clock, passed in as parameters (T5). A claim
 * also moves available_at to the lease's end so leased rows leave the front
 * of the dequeue index and the next claim stops at the first ready row. */
#include "transport/sql_dialect.h"

#include <stddef.h>

/* The claim index is split in two partial indexes: the rows of priority
 * 0 in (queue, available_at, created_at), exactly the dequeue index of
 * before priorities, and the others in (queue, priority DESC, ...). A
 * queue that never had a priority claims through the first, with
 * `priority = 0` (the partial index's own condition, which lets the
 * planner use it), and its writes carry no priority in any index entry:
 * one index with priority as its second key cost the plain burn-down 2%
 * in key compares (docs/benchmarks.md). A prioritized queue (T34) reads
 * three ordered runs (above 0 through the second index, 0 through the
 * first, below 0 through the second) and merges them.
 *
 * A claim picks its rows by rowid, which every index entry holds, so each
 * claimed row is found in the table directly, not through the primary
 * key's index on id again: 7% of a plain drain's instructions
 * (docs/benchmarks.md, "Issue 21: the no-cost rule by instruction
 * count"). Rowids are stable inside the statement's transaction. */
#define PLAIN "AND priority = 0 "
#define BY_TIME "ORDER BY available_at, created_at "
#define READY_ROWS                                                             \
    "AND available_at <= $2 AND (locked_until IS NULL OR locked_until <= $2) "
#define READY(prio, order)                                                     \
    "SELECT rowid FROM {p}messages WHERE queue = $1 " prio READY_ROWS order    \
    "LIMIT $5"
#define PRIO_RUN(cond, order)                                                  \
    "SELECT * FROM (SELECT rowid AS rid, priority, available_at, "             \
    "created_at FROM {p}messages WHERE queue = $1 AND " cond                   \
    " " READY_ROWS order "LIMIT $5)"
#define BY_PRIORITY "ORDER BY priority DESC, available_at, created_at "
#define ABOVE_0 "priority <> 0 AND priority > 0"
#define BELOW_0 "priority <> 0 AND priority < 0"
#define READY_BY_PRIORITY                                                      \
    "SELECT rid FROM (" PRIO_RUN(ABOVE_0, BY_PRIORITY) " UNION ALL " PRIO_RUN( \
        "priority = 0",                                                        \
        BY_TIME) " UNION ALL " PRIO_RUN(BELOW_0,                               \
                                        BY_PRIORITY) " ORDER BY 2 DESC, 3, 4 LIMIT $5)"
#define CLAIM_SET                                                              \
    "UPDATE {p}messages SET attempts = attempts + 1, "                         \
    "locked_until = $2 + $3 * 1000, available_at = $2 + $3 * 1000, "           \
    "lock_id = $4 WHERE rowid IN ("
/* Every claim returns the message, then available_at, the priority and
 * the expiry (T40), in that order (transport.h, SB_CLAIM_COL_*). */
#define CLAIM_TAIL "available_at, priority, expires_at"
#define CLAIM_RETURNING                                                        \
    ") RETURNING id, payload, headers, attempts, lock_id, created_at, "        \
    "queue, " CLAIM_TAIL

/* T36: a queue's token bucket refilled to `now` (microseconds): what
 * rate_at left, plus rate_limit per rate_interval_ms since, at most
 * rate_limit; full when never drawn from. NULL without a rate limit. */
#define TOKENS(now)                                                            \
    "MIN(rate_limit * 1.0, COALESCE(rate_tokens, rate_limit) + MAX(" now       \
    " - COALESCE(rate_at, " now "), 0) / 1000.0 * rate_limit / "               \
    "rate_interval_ms)"
#define LEASED "available_at > $2 AND locked_until > $2"

const sb_sql_templates sb__sql_sqlite = {
    .ddl = "CREATE TABLE IF NOT EXISTS {p}messages (\n"
           "  id TEXT NOT NULL PRIMARY KEY,\n"
           "  queue TEXT NOT NULL COLLATE BINARY,\n"
           "  payload BLOB NOT NULL,\n"
           "  headers TEXT NOT NULL DEFAULT '{}',\n"
           "  created_at INTEGER NOT NULL,\n"
           "  available_at INTEGER NOT NULL,\n"
           "  locked_until INTEGER,\n"
           "  lock_id TEXT,\n"
           "  attempts INTEGER NOT NULL DEFAULT 0,\n"
           "  last_error TEXT,\n"
           "  dead_letter_reason TEXT,\n"
           "  priority INTEGER NOT NULL DEFAULT 0,\n"
           "  unique_key TEXT,\n"
           "  expires_at INTEGER,\n"
           "  progress TEXT\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_plain_idx\n"
           "  ON {p}messages (queue, available_at, created_at)\n"
           "  WHERE priority = 0;\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_prio_idx\n"
           "  ON {p}messages (queue, priority DESC, available_at, created_at)\n"
           "  WHERE priority <> 0;\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_created_idx\n"
           "  ON {p}messages (created_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_expires_idx\n"
           "  ON {p}messages (expires_at) WHERE expires_at IS NOT NULL;\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_unique_idx\n"
           "  ON {p}messages (queue, unique_key) WHERE unique_key IS NOT "
           "NULL;\n"
           "CREATE TABLE IF NOT EXISTS {p}counts (\n"
           "  queue TEXT NOT NULL COLLATE BINARY PRIMARY KEY,\n"
           "  published INTEGER NOT NULL DEFAULT 0,\n"
           "  acked INTEGER NOT NULL DEFAULT 0,\n"
           "  naked INTEGER NOT NULL DEFAULT 0,\n"
           "  dead_lettered INTEGER NOT NULL DEFAULT 0,\n"
           "  updated_at INTEGER NOT NULL\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}queue_settings (\n"
           "  queue TEXT NOT NULL COLLATE BINARY PRIMARY KEY,\n"
           "  paused INTEGER NOT NULL DEFAULT 0,\n"
           "  prioritized INTEGER NOT NULL DEFAULT 0,\n"
           "  max_running INTEGER,\n"
           "  rate_limit INTEGER,\n"
           "  rate_interval_ms INTEGER,\n"
           "  rate_tokens REAL,\n"
           "  rate_at INTEGER,\n"
           "  ttl_ms INTEGER,\n"
           "  updated_at INTEGER NOT NULL DEFAULT 0\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}schedules (\n"
           "  name TEXT NOT NULL COLLATE BINARY PRIMARY KEY,\n"
           "  queue TEXT NOT NULL,\n"
           "  cron TEXT,\n"
           "  interval_us INTEGER,\n"
           "  time_zone TEXT,\n"
           "  payload BLOB NOT NULL,\n"
           "  headers TEXT NOT NULL DEFAULT '{}',\n"
           "  missed TEXT NOT NULL DEFAULT 'skip',\n"
           "  anchor_us INTEGER NOT NULL,\n"
           "  last_us INTEGER NOT NULL,\n"
           "  next_us INTEGER,\n"
           "  created_at INTEGER NOT NULL,\n"
           "  updated_at INTEGER NOT NULL\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}unique_keys (\n"
           "  queue TEXT NOT NULL COLLATE BINARY,\n"
           "  unique_key TEXT NOT NULL COLLATE BINARY,\n"
           "  message_id TEXT NOT NULL,\n"
           "  until INTEGER NOT NULL,\n"
           "  PRIMARY KEY (queue, unique_key)\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}unique_keys_until_idx\n"
           "  ON {p}unique_keys (until);\n"
           "CREATE TABLE IF NOT EXISTS {p}heartbeats (\n"
           "  id TEXT NOT NULL COLLATE BINARY PRIMARY KEY,\n"
           "  endpoint TEXT NOT NULL,\n"
           "  host TEXT NOT NULL,\n"
           "  host_id TEXT NOT NULL,\n"
           "  pid INTEGER NOT NULL,\n"
           "  interval_ms INTEGER NOT NULL,\n"
           "  started_at INTEGER NOT NULL,\n"
           "  last_beat_at INTEGER NOT NULL,\n"
           "  stopped_at INTEGER,\n"
           "  monitored INTEGER NOT NULL DEFAULT 1\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}settings (\n"
           "  name TEXT NOT NULL COLLATE BINARY PRIMARY KEY,\n"
           "  value TEXT NOT NULL,\n"
           "  updated_at INTEGER NOT NULL\n"
           ");\n",
    .upgrade = "DROP INDEX IF EXISTS {p}messages_ready_idx;\n"
               "DROP INDEX IF EXISTS {p}messages_claim_idx",
    .lock = NULL, /* BEGIN IMMEDIATE already serialises writers */
    .insert_head = "INSERT INTO {p}messages (id, queue, payload, headers, "
                   "created_at, available_at, attempts) VALUES ",
    .insert_row = "($%d, $1, $%d, $%d, $2, $2 + $%d * 1000, 0)",
    .insert_tail = " ON CONFLICT (id) DO NOTHING",
    .insert_head_ex = "INSERT INTO {p}messages (id, queue, payload, headers, "
                      "created_at, available_at, attempts, priority, "
                      "expires_at, unique_key) VALUES ",
    .insert_row_ex = "($%d, $1, $%d, $%d, $2, $2 + $%d * 1000, 0, $%d, "
                     "$2 + $%d * 1000, $%d)",
    .cancel_get = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue, CASE WHEN locked_until > $3 THEN 1 "
                  "ELSE 0 END FROM {p}messages WHERE id = $1 AND queue = $2",
    .cancel_key_get = "SELECT id, payload, headers, attempts, lock_id, "
                      "created_at, queue, CASE WHEN locked_until > $3 THEN 1 "
                      "ELSE 0 END FROM {p}messages WHERE queue = $1 AND "
                      "unique_key = $2",
    .unique_lock = NULL, /* BEGIN IMMEDIATE: one writer at a time */
    .unique_holder = "SELECT id FROM {p}messages WHERE queue = $1 AND "
                     "unique_key = $2 AND ($4 = 0 OR locked_until IS NULL OR "
                     "locked_until <= $3) LIMIT 1",
    .unique_window_get = "SELECT message_id FROM {p}unique_keys WHERE queue "
                         "= $1 AND unique_key = $2 AND until > $3",
    .unique_window_put =
        "INSERT INTO {p}unique_keys (queue, unique_key, message_id, until) "
        "VALUES ($1, $2, $3, $5 + $4 * 1000) ON CONFLICT (queue, unique_key) "
        "DO UPDATE SET message_id = excluded.message_id, until = "
        "excluded.until",
    .unique_prune = "DELETE FROM {p}unique_keys WHERE rowid IN (SELECT rowid "
                    "FROM {p}unique_keys WHERE until <= $1 LIMIT $2)",
    .claim = CLAIM_SET READY(PLAIN, BY_TIME) CLAIM_RETURNING,
    /* RETURNING gives no order: claim.c sorts by the priority. */
    .claim_prio = CLAIM_SET READY_BY_PRIORITY CLAIM_RETURNING,
    .claim_delete = "DELETE FROM {p}messages WHERE rowid IN (" READY(
        PLAIN, BY_TIME) ") "
                        "RETURNING id, payload, headers, attempts + 1, $4, "
                        "created_at, queue, " CLAIM_TAIL,
    .ack = "DELETE FROM {p}messages WHERE id = $1 AND lock_id = $2",
    .ack_many = NULL, /* statements cost no round trip in-process */
    .renew_many = NULL,
    .nak = "UPDATE {p}messages SET available_at = $3 + $4 * 1000, "
           "locked_until = NULL, lock_id = NULL, last_error = $5, "
           "progress = NULL WHERE id = $1 AND lock_id = $2",
    .hand_back = "UPDATE {p}messages SET available_at = $3, "
                 "locked_until = NULL, lock_id = NULL, progress = NULL, "
                 "attempts = MAX(attempts - 1, 0) "
                 "WHERE id = $1 AND lock_id = $2",
    .progress_set = "UPDATE {p}messages SET progress = $3 WHERE id = $1 AND "
                    "lock_id = $2",
    .schedule_put =
        "INSERT INTO {p}schedules (name, queue, cron, interval_us, "
        "time_zone, payload, headers, missed, anchor_us, last_us, next_us, "
        "created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
        "$10, $11, $12, $12) ON CONFLICT (name) DO UPDATE SET "
        "queue = excluded.queue, cron = excluded.cron, "
        "interval_us = excluded.interval_us, "
        "time_zone = excluded.time_zone, payload = excluded.payload, "
        "headers = excluded.headers, missed = excluded.missed, "
        "anchor_us = excluded.anchor_us, last_us = excluded.last_us, "
        "next_us = excluded.next_us, updated_at = excluded.updated_at",
    .schedule_remove = "DELETE FROM {p}schedules WHERE name = $1",
    .schedule_list = "SELECT name, queue, cron, interval_us, time_zone, "
                     "missed, length(payload), anchor_us, last_us, next_us, "
                     "created_at, updated_at FROM {p}schedules ORDER BY name",
    .schedule_due = "SELECT name, queue, cron, interval_us, time_zone, "
                    "missed, payload, headers, anchor_us, last_us FROM "
                    "{p}schedules WHERE next_us <= $1 ORDER BY next_us, name",
    .schedule_settle = "UPDATE {p}schedules SET last_us = $2, next_us = $3 "
                       "WHERE name = $1 AND anchor_us = $4 AND last_us = $5",
    .schedule_wake = "SELECT MIN(next_us) FROM {p}schedules",
    /* Issue 22: a restart (another pid) or a beat after a graceful
     * stop starts the instance again; monitored is the operator's. */
    .heartbeat_beat =
        "INSERT INTO {p}heartbeats (id, endpoint, host, host_id, pid, "
        "interval_ms, started_at, last_beat_at, stopped_at, monitored) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $7, NULL, 1) ON CONFLICT (id) "
        "DO UPDATE SET endpoint = excluded.endpoint, host = excluded.host, "
        "host_id = excluded.host_id, started_at = CASE WHEN pid = "
        "excluded.pid AND stopped_at IS NULL THEN started_at ELSE "
        "excluded.started_at END, pid = excluded.pid, interval_ms = "
        "excluded.interval_ms, last_beat_at = excluded.last_beat_at, "
        "stopped_at = NULL",
    .heartbeat_stop = "UPDATE {p}heartbeats SET stopped_at = $3, "
                      "last_beat_at = $3 WHERE id = $1 AND pid = $2",
    .heartbeat_list = "SELECT id, endpoint, host, host_id, pid, interval_ms, "
                      "started_at, last_beat_at, stopped_at, monitored, $1 "
                      "FROM {p}heartbeats ORDER BY endpoint, host, id",
    .heartbeat_monitor =
        "UPDATE {p}heartbeats SET monitored = $2 WHERE id = $1",
    .heartbeat_remove = "DELETE FROM {p}heartbeats WHERE id = $1",
    .setting_get = "SELECT value, updated_at FROM {p}settings WHERE name = $1",
    .setting_put = "INSERT INTO {p}settings (name, value, updated_at) VALUES "
                   "($1, $2, $3) ON CONFLICT (name) DO UPDATE SET value = "
                   "excluded.value, updated_at = excluded.updated_at",
    .setting_remove = "DELETE FROM {p}settings WHERE name = $1",
    .setting_list =
        "SELECT name, value, updated_at FROM {p}settings ORDER BY name",
    .renew = "UPDATE {p}messages SET locked_until = $3 + $4 * 1000, "
             "available_at = $3 + $4 * 1000 "
             "WHERE id = $1 AND lock_id = $2",
    .dead_letter =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, last_error, dead_letter_reason) "
        "SELECT $1, $2, payload, $3, $6, $6, attempts, $5, $4 "
        "FROM {p}messages WHERE id = $7 AND ($8 IS NULL OR lock_id = $8)",
    .dlq_insert =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, last_error, dead_letter_reason) "
        "VALUES ($1, $2, $7, $3, $6, $6, $8, $5, $4) "
        "ON CONFLICT (id) DO NOTHING",
    .delete_any = "DELETE FROM {p}messages WHERE id = $1 AND "
                  "($2 IS NULL OR lock_id = $2)",
    .pending = "SELECT 1 FROM {p}messages WHERE queue = $1 AND "
               "(available_at <= $2 OR locked_until IS NOT NULL) LIMIT 1",
    .stats =
        "SELECT queue, "
        "SUM(CASE WHEN available_at <= $1 AND (locked_until IS NULL OR "
        "locked_until <= $1) THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN available_at > $1 AND locked_until IS NULL "
        "THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN locked_until > $1 THEN 1 ELSE 0 END), "
        "COALESCE(($1 - MIN(CASE WHEN available_at <= $1 AND (locked_until "
        "IS NULL OR locked_until <= $1) THEN created_at END)) / 1000, -1) "
        "FROM {p}messages GROUP BY queue ORDER BY queue",
    .dlq_stats = "SELECT json_extract(headers, '$.\"sb-failed-queue\"'), "
                 "COUNT(*) FROM {p}messages WHERE queue = $1 GROUP BY 1",
    .dlq_list =
        "SELECT id, payload, headers, attempts, lock_id, created_at, queue "
        "FROM {p}messages WHERE queue = $1 AND ($2 IS NULL OR "
        "json_extract(headers, '$.\"sb-failed-queue\"') = $2) AND "
        "($3 IS NULL OR created_at < $6 - $3 * 1000) AND "
        "($4 IS NULL OR id = $4) ORDER BY created_at, id "
        "LIMIT COALESCE($5, -1)",
    .peek = "SELECT id, payload, headers, attempts, NULL, created_at, "
            "queue, available_at, locked_until, priority, progress, "
            "expires_at, unique_key FROM {p}messages WHERE "
            "queue = $1 ORDER BY available_at, created_at, id LIMIT $2 "
            "OFFSET $3",
    .prune = "DELETE FROM {p}messages WHERE id IN (SELECT id FROM "
             "{p}messages WHERE queue = $1 AND created_at < $4 - $2 * 1000 "
             "LIMIT $3)",
    .columns = "SELECT name, upper(type), \"notnull\", '' "
               "FROM pragma_table_info($1)",
    .indexes = "SELECT il.name, il.origin = 'pk', (SELECT group_concat("
               "x.name || ' ' || x.coll, ',') FROM (SELECT name, coll FROM "
               "pragma_index_xinfo(il.name) WHERE key = 1 ORDER BY seqno) x) "
               "FROM pragma_index_list($1) il",
    .notify = NULL,
    .mark_prioritized =
        "INSERT INTO {p}queue_settings (queue, prioritized, updated_at) "
        "SELECT $1, 1, $2 WHERE NOT EXISTS (SELECT 1 FROM "
        "{p}queue_settings WHERE queue = $1 AND prioritized = 1) "
        "ON CONFLICT (queue) DO UPDATE SET prioritized = 1, updated_at = "
        "excluded.updated_at",
    .settings_get = "SELECT paused, prioritized, max_running, rate_limit, "
                    "rate_interval_ms, ttl_ms FROM {p}queue_settings WHERE "
                    "queue = $1",
    .settings_list = "SELECT queue, paused, prioritized, max_running, "
                     "rate_limit, rate_interval_ms, ttl_ms FROM "
                     "{p}queue_settings ORDER BY queue",
    .settings_pause =
        "INSERT INTO {p}queue_settings (queue, paused, updated_at) VALUES "
        "($1, $2, $3) ON CONFLICT (queue) DO UPDATE SET paused = "
        "excluded.paused, updated_at = excluded.updated_at",
    .clock_now = NULL, /* the host's clock is the store's (T5) */
    .settings_ttl =
        "INSERT INTO {p}queue_settings (queue, ttl_ms, updated_at) VALUES "
        "($1, $2, $3) ON CONFLICT (queue) DO UPDATE SET ttl_ms = "
        "excluded.ttl_ms, updated_at = excluded.updated_at",
    /* T36: a change of the limits starts with a full bucket. */
    .settings_limits =
        "INSERT INTO {p}queue_settings (queue, max_running, rate_limit, "
        "rate_interval_ms, updated_at) VALUES ($1, $2, $3, $4, $5) ON "
        "CONFLICT (queue) DO UPDATE SET max_running = excluded.max_running, "
        "rate_limit = excluded.rate_limit, rate_interval_ms = "
        "excluded.rate_interval_ms, rate_tokens = NULL, rate_at = NULL, "
        "updated_at = excluded.updated_at",
    /* The one writer (BEGIN IMMEDIATE) serialises the limited claims. */
    .limit_lock =
        "SELECT max_running, rate_limit, rate_interval_ms, CAST(" TOKENS(
            "$2") " * 1000 AS INTEGER) FROM {p}queue_settings WHERE queue = $1",
    /* A leased row's available_at is its lease's end (the claim and the
     * renewal move both): each partial claim index is read from now on. */
    .limit_running =
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM "
        "{p}messages WHERE queue = $1 AND priority = 0 AND " LEASED
        " LIMIT $3)) + (SELECT count(*) FROM (SELECT 1 FROM "
        "{p}messages WHERE queue = $1 AND priority <> 0 AND " LEASED
        " LIMIT $3))",
    .limit_take = "UPDATE {p}queue_settings SET rate_tokens = " TOKENS(
        "$3") " - $2, rate_at = MAX(COALESCE(rate_at, $3), $3) WHERE queue = "
              "$1 AND rate_limit IS NOT NULL",
    .expire_due = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue FROM {p}messages WHERE expires_at <= $1 "
                  "AND (locked_until IS NULL OR locked_until <= $1) "
                  "ORDER BY expires_at LIMIT $2",
    .expire_ttl = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue FROM {p}messages WHERE queue = $3 AND "
                  "created_at <= $1 - $4 * 1000 AND (locked_until IS NULL OR "
                  "locked_until <= $1) ORDER BY created_at LIMIT $2",
    .counts_add =
        "INSERT INTO {p}counts (queue, published, acked, naked, "
        "dead_lettered, updated_at) VALUES ($1, $2, $3, $4, $5, $6) "
        "ON CONFLICT (queue) DO UPDATE SET "
        "published = published + excluded.published, "
        "acked = acked + excluded.acked, naked = naked + excluded.naked, "
        "dead_lettered = dead_lettered + excluded.dead_lettered, "
        "updated_at = excluded.updated_at",
    .counts_list = "SELECT queue, published, acked, naked, dead_lettered "
                   "FROM {p}counts ORDER BY queue",
    .counts_prune = "DELETE FROM {p}counts WHERE updated_at < $1 - $2 * 1000",
};
