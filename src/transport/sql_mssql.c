/* sql_mssql.c - the transport's statements for SQL Server (T-SQL, through
 * ODBC). Every time comes from the database clock (SYSUTCDATETIME(), kept
 * to the microsecond, into datetime2(7), T5). Claims skip rows other
 * consumers hold with UPDLOCK, ROWLOCK, READPAST in the order of the
 * dequeue index (T14). Every queue comparison carries the padding
 * sentinel (db/tsql.h). Statements whose row count fences a lease end in
 * SELECT @@ROWCOUNT (read by the ODBC driver), so a server-wide SET
 * NOCOUNT ON cannot make a settled message look lost. */
#include "db/tsql.h"
#include "transport/sql_dialect.h"

#include <stddef.h>

#define SAME_QUEUE(col, param) SB_TSQL_SAME(col, param)
#define PLUS_MS(ms) SB_TSQL_PLUS_MS(ms)
#define MINUS_MS(ms) SB_TSQL_MINUS_MS(ms)
#define NOW SB_TSQL_NOW
#define READY                                                                  \
    "available_at <= " NOW " AND (locked_until IS NULL OR "                    \
    "locked_until <= " NOW ")"
#define ROWCOUNT SB_TSQL_ROWCOUNT
/* The rows a claim takes: the oldest ready ones of $1, at most $5, skipping
 * rows other transactions hold. As on SQLite, a claim (and a renewal)
 * moves available_at to the lease's end, so leased rows leave the front
 * of the dequeue index and the next claim's seek stops at the first ready
 * row instead of walking every message in flight. */
#define CLAIMABLE_AS(prio, order)                                              \
    "WITH c AS (SELECT TOP (CAST($5 AS int)) id, payload, headers, "           \
    "attempts, locked_until, lock_id, created_at, available_at, queue, "       \
    "priority, expires_at FROM {p}messages WITH (UPDLOCK, ROWLOCK, READPAST) " \
    "WHERE " SAME_QUEUE("queue", "$1") " AND " prio READY " ORDER BY " order   \
                                       ") "
/* A queue without priorities claims priority 0 only: the claim index's
 * seek on (queue, priority); a prioritized queue orders by priority
 * first (T34). */
#define CLAIMABLE CLAIMABLE_AS("priority = 0 AND ", "available_at, created_at")
/* The claim's update. */
#define CLAIM_UPDATE                                                                                   \
    "UPDATE c SET attempts = attempts + 1, locked_until = " PLUS_MS("$3") ", available_at = " PLUS_MS( \
        "$3") ", lock_id = $4 OUTPUT inserted.id, "                                                    \
              "inserted.payload, inserted.headers, inserted.attempts, "                                \
              "inserted.lock_id, inserted.created_at, inserted.queue, "                                \
              "deleted.available_at, deleted.priority, "                                               \
              "deleted.expires_at INTO @claimed; "
#define CLAIMED_TABLE                                                          \
    "DECLARE @claimed TABLE (id uniqueidentifier, payload varbinary(max), "    \
    "headers nvarchar(max), attempts int, lock_id uniqueidentifier, "          \
    "created_at datetime2, queue nvarchar(200), available_at datetime2, "      \
    "priority smallint, expires_at datetime2); "
/* Every claim returns the message, then available_at, the priority and
 * the expiry (T40), in that order (transport.h, SB_CLAIM_COL_*). OUTPUT
 * returns rows in no promised order: the claim hands them back in the
 * index's (the order they were claimed in: available_at before the claim
 * moved it). */
#define CLAIMED_ROWS_BY(order)                                                 \
    "SELECT id, payload, headers, attempts, lock_id, created_at, queue, "      \
    "available_at, priority, expires_at FROM @claimed ORDER BY " order
#define CLAIMED_ROWS CLAIMED_ROWS_BY("available_at, created_at")
/* The failed queue a dead letter's headers name. */
#define FAILED_QUEUE "JSON_VALUE(headers, '$.\"sb-failed-queue\"')"

/* T36: a queue's token bucket refilled to now: what rate_at left, plus
 * rate_limit per rate_interval_ms since, at most rate_limit; full when
 * never drawn from. NULL without a rate limit. */
#define SINCE_MS                                                               \
    "DATEDIFF_BIG(microsecond, COALESCE(rate_at, " NOW "), " NOW ") / 1000.0"
#define REFILLED                                                               \
    "(COALESCE(rate_tokens, rate_limit) + CASE WHEN " SINCE_MS                 \
    " > 0 THEN " SINCE_MS " ELSE 0 END * rate_limit / rate_interval_ms)"
#define TOKENS                                                                 \
    "CASE WHEN " REFILLED " > rate_limit THEN CAST(rate_limit AS float) "      \
    "ELSE " REFILLED " END"

/* The tables, then their indexes (created apart, see index_lock).
 *
 * messages is clustered on created_at, the retention index's key, not a
 * heap: pages a DELETE empties stay allocated to a heap unless it takes
 * TABLOCK (acks delete one row each under row locks), and a nak's longer
 * last_error leaves forwarded rows behind; a clustered table gives
 * emptied pages back. Not on the dequeue key, though that is the order
 * claims take rows in: a claim, a renewal and a nak move available_at,
 * and a row whose clustered key moves is deleted and inserted whole
 * (payload included, when it is in the row) and so is every
 * nonclustered index's entry for it, whose row locator is that key.
 * created_at never changes after the insert: a claim updates the row in
 * place and moves only the ready index's entry, as on a heap, at the
 * price of one key lookup per claimed row; retention deletes a range of
 * the clustered order. Not unique: rows of one publish share created_at
 * and get SQL Server's 4-byte uniquifier, narrower than id in the key.
 * The primary key stays nonclustered (random ids). A table with the
 * created index already (made by an earlier version, a heap) keeps it:
 * turning a full queue into a clustered table blocks it while it is
 * rebuilt, a step for a DBA (docs/backends.md); a table with a clustered
 * index of its own gets the created index nonclustered. */
#define TABLES                                                                 \
    "IF OBJECT_ID(N'{p}messages', N'U') IS NULL\n"                             \
    "CREATE TABLE {p}messages (\n"                                             \
    "  id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,\n"               \
    "  queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,\n"        \
    "  payload varbinary(max) NOT NULL,\n"                                     \
    "  headers nvarchar(max) NOT NULL DEFAULT N'{}',\n"                        \
    "  created_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),\n"           \
    "  available_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),\n"         \
    "  locked_until datetime2(7) NULL,\n"                                      \
    "  lock_id uniqueidentifier NULL,\n"                                       \
    "  attempts int NOT NULL DEFAULT 0,\n"                                     \
    "  last_error nvarchar(max) NULL,\n"                                       \
    "  dead_letter_reason nvarchar(max) NULL,\n"                               \
    "  priority smallint NOT NULL DEFAULT 0,\n"                                \
    "  unique_key nvarchar(255) NULL,\n"                                       \
    "  expires_at datetime2(7) NULL,\n"                                        \
    "  progress nvarchar(max) NULL\n"                                          \
    ");\n"                                                                     \
    "IF OBJECT_ID(N'{p}counts', N'U') IS NULL\n"                               \
    "CREATE TABLE {p}counts (\n"                                               \
    "  queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL "          \
    "PRIMARY KEY,\n"                                                           \
    "  published bigint NOT NULL DEFAULT 0,\n"                                 \
    "  acked bigint NOT NULL DEFAULT 0,\n"                                     \
    "  naked bigint NOT NULL DEFAULT 0,\n"                                     \
    "  dead_lettered bigint NOT NULL DEFAULT 0,\n"                             \
    "  updated_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME()\n"            \
    ");\n"                                                                     \
    "IF OBJECT_ID(N'{p}queue_settings', N'U') IS NULL\n"                       \
    "CREATE TABLE {p}queue_settings (\n"                                       \
    "  queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL "          \
    "PRIMARY KEY,\n"                                                           \
    "  paused int NOT NULL DEFAULT 0,\n"                                       \
    "  prioritized int NOT NULL DEFAULT 0,\n"                                  \
    "  max_running int NULL,\n"                                                \
    "  rate_limit int NULL,\n"                                                 \
    "  rate_interval_ms bigint NULL,\n"                                        \
    "  rate_tokens float NULL,\n"                                              \
    "  rate_at datetime2(7) NULL,\n"                                           \
    "  ttl_ms bigint NULL,\n"                                                  \
    "  updated_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME()\n"            \
    ");\n"                                                                     \
    "IF OBJECT_ID(N'{p}schedules', N'U') IS NULL\n"                            \
    "CREATE TABLE {p}schedules (\n"                                            \
    "  name nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL "           \
    "PRIMARY KEY,\n"                                                           \
    "  queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,\n"        \
    "  cron nvarchar(256) NULL,\n"                                             \
    "  interval_us bigint NULL,\n"                                             \
    "  time_zone nvarchar(128) NULL,\n"                                        \
    "  payload varbinary(max) NOT NULL,\n"                                     \
    "  headers nvarchar(max) NOT NULL DEFAULT N'{}',\n"                        \
    "  missed nvarchar(8) NOT NULL DEFAULT N'skip',\n"                         \
    "  anchor_us bigint NOT NULL,\n"                                           \
    "  last_us bigint NOT NULL,\n"                                             \
    "  next_us bigint NULL,\n"                                                 \
    "  created_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),\n"           \
    "  updated_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME()\n"            \
    ");\n"                                                                     \
    "IF OBJECT_ID(N'{p}unique_keys', N'U') IS NULL\n"                          \
    "CREATE TABLE {p}unique_keys (\n"                                          \
    "  queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,\n"        \
    "  unique_key nvarchar(255) COLLATE Latin1_General_100_BIN2 NOT NULL,\n"   \
    "  message_id uniqueidentifier NOT NULL,\n"                                \
    "  until datetime2(7) NOT NULL,\n"                                         \
    "  PRIMARY KEY (queue, unique_key)\n"                                      \
    ");\n"                                                                     \
    "IF OBJECT_ID(N'{p}heartbeats', N'U') IS NULL\n"                           \
    "CREATE TABLE {p}heartbeats (\n"                                           \
    "  id nvarchar(36) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY "      \
    "KEY,\n"                                                                   \
    "  endpoint nvarchar(200) NOT NULL,\n"                                     \
    "  host nvarchar(255) NOT NULL,\n"                                         \
    "  host_id nvarchar(36) NOT NULL,\n"                                       \
    "  pid bigint NOT NULL,\n"                                                 \
    "  interval_ms bigint NOT NULL,\n"                                         \
    "  started_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),\n"           \
    "  last_beat_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),\n"         \
    "  stopped_at datetime2(7) NULL,\n"                                        \
    "  monitored int NOT NULL DEFAULT 1\n"                                     \
    ");\n"                                                                     \
    "IF OBJECT_ID(N'{p}settings', N'U') IS NULL\n"                             \
    "CREATE TABLE {p}settings (\n"                                             \
    "  name nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY "   \
    "KEY,\n"                                                                   \
    "  value nvarchar(max) NOT NULL,\n"                                        \
    "  updated_at datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME()\n"            \
    ");\n"
/* The claim index: queue, then priority (highest first), then readiness.
 * A store made before priorities had the same index without priority
 * (messages_ready_idx); the upgrade drops it (.upgrade). */
#define INDEXES                                                                \
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "              \
    "OBJECT_ID(N'{p}messages', N'U') AND name = N'{p}messages_claim_idx')\n"   \
    "CREATE INDEX {p}messages_claim_idx\n"                                     \
    "  ON {p}messages (queue, priority DESC, available_at, created_at);\n"     \
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "              \
    "OBJECT_ID(N'{p}messages', N'U') AND name = "                              \
    "N'{p}messages_created_idx')\n"                                            \
    "BEGIN\n"                                                                  \
    "IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "                  \
    "OBJECT_ID(N'{p}messages', N'U') AND type = 1)\n"                          \
    "CREATE INDEX {p}messages_created_idx\n"                                   \
    "  ON {p}messages (created_at);\n"                                         \
    "ELSE\n"                                                                   \
    "CREATE CLUSTERED INDEX {p}messages_created_idx\n"                         \
    "  ON {p}messages (created_at);\n"                                         \
    "END;\n"                                                                   \
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "              \
    "OBJECT_ID(N'{p}messages', N'U') AND name = "                              \
    "N'{p}messages_expires_idx')\n"                                            \
    "CREATE INDEX {p}messages_expires_idx\n"                                   \
    "  ON {p}messages (expires_at) WHERE expires_at IS NOT NULL;\n"            \
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "              \
    "OBJECT_ID(N'{p}messages', N'U') AND name = "                              \
    "N'{p}messages_unique_idx')\n"                                             \
    "CREATE INDEX {p}messages_unique_idx\n"                                    \
    "  ON {p}messages (queue, unique_key) WHERE unique_key IS NOT NULL;\n"     \
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "              \
    "OBJECT_ID(N'{p}unique_keys', N'U') AND name = "                           \
    "N'{p}unique_keys_until_idx')\n"                                           \
    "CREATE INDEX {p}unique_keys_until_idx ON {p}unique_keys (until);\n"

const sb_sql_templates sb__sql_mssql = {
    .ddl = TABLES,
    .upgrade = "IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "
               "OBJECT_ID(N'{p}messages', N'U') AND name = "
               "N'{p}messages_ready_idx')\n"
               "DROP INDEX {p}messages_ready_idx ON {p}messages;\n",
    .ddl_indexes = INDEXES,
    .lock = SB_TSQL_SCHEMA_LOCK,
    /* Table-scoped, for the index builds in their own transaction, so
     * other stores' startup DDL never waits for them; LOCK_TIMEOUT bounds
     * the wait for the table's schema lock (1222, retried with jitter). */
    .index_lock =
        "SET LOCK_TIMEOUT 10000;\n"
        "DECLARE @sb_rc int, @sb_res nvarchar(255) = N'sqlbus:ddl:' + "
        "SCHEMA_NAME() + N'.{p}messages';\n"
        "EXEC @sb_rc = sp_getapplock @Resource = @sb_res, @LockMode = "
        "N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = 10000;\n" SB_TSQL_APPLOCK_CHECK(
            "index lock"),
    /* Rows of one statement: deduplicated by id (the first wins, as ON
     * CONFLICT DO NOTHING does), then inserted where absent under a key-
     * range lock; a duplicate-key race still possible is retried by the
     * caller (publish.c). */
    .insert_head =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts) SELECT v.id, $1, v.payload, v.headers, " NOW
        ", " PLUS_MS(
            "v.delay_ms") ", 0 FROM (SELECT "
                          "CAST(x.id AS uniqueidentifier) AS id, x.payload, x.headers, "
                          "x.delay_ms, ROW_NUMBER() OVER (PARTITION BY x.id ORDER BY x.ord) "
                          "AS rn FROM (VALUES ",
    .insert_row = "($%d, $%d, $%d, $%d, %d)",
    .insert_tail =
        ") AS x (id, payload, headers, delay_ms, ord)) AS v WHERE v.rn = 1 "
        "AND NOT EXISTS (SELECT 1 FROM {p}messages AS m WITH (UPDLOCK, "
        "HOLDLOCK) WHERE m.id = v.id)",
    .insert_head_ex =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, priority, expires_at, unique_key) SELECT "
        "v.id, $1, v.payload, v.headers, " NOW ", " PLUS_MS(
            "v.delay_ms") ", "
                          "0, v.priority, " PLUS_MS(
                              "v.expires_ms") ", v.unique_key FROM "
                                              "(SELECT CAST(x.id AS uniqueidentifier) AS id, x.payload, x.headers, "
                                              "x.delay_ms, CAST(x.priority AS smallint) AS priority, "
                                              "CAST(x.expires_ms AS bigint) AS expires_ms, "
                                              "CAST(x.unique_key AS nvarchar(255)) AS unique_key, "
                                              "ROW_NUMBER() OVER (PARTITION BY x.id ORDER BY x.ord) "
                                              "AS rn FROM (VALUES ",
    .insert_row_ex = "($%d, $%d, $%d, $%d, $%d, $%d, $%d, %d)",
    .insert_tail_ex =
        ") AS x (id, payload, headers, delay_ms, priority, expires_ms, "
        "unique_key, ord)) "
        "AS v WHERE "
        "v.rn = 1 AND NOT EXISTS (SELECT 1 FROM {p}messages AS m WITH "
        "(UPDLOCK, HOLDLOCK) WHERE m.id = v.id)",
    .cancel_get = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue, CASE WHEN locked_until > " NOW
                  " THEN 1 ELSE 0 END FROM {p}messages WITH (UPDLOCK, "
                  "ROWLOCK) WHERE id = $1 AND " SAME_QUEUE("queue", "$2"),
    .cancel_key_get = "SELECT id, payload, headers, attempts, lock_id, "
                      "created_at, queue, CASE WHEN locked_until > " NOW
                      " THEN 1 ELSE 0 END FROM {p}messages WITH (UPDLOCK, "
                      "ROWLOCK) WHERE " SAME_QUEUE(
                          "queue", "$1") " AND " SAME_QUEUE("unique_key", "$2"),
    /* T38: publishes of one key serialised until their commit ($1: a hash
     * of the queue and the key). */
    .unique_lock =
        "DECLARE @sb_rc int, @sb_res nvarchar(255) = N'sqlbus:uk:' "
        "+ CAST($1 AS nvarchar(30));\n"
        "EXEC @sb_rc = sp_getapplock @Resource = @sb_res, "
        "@LockMode = N'Exclusive', @LockOwner = N'Transaction', "
        "@LockTimeout = 30000;\n" SB_TSQL_APPLOCK_CHECK("unique key lock"),
    .unique_holder = "SELECT TOP (1) id FROM {p}messages WHERE " SAME_QUEUE(
        "queue",
        "$1") " AND " SAME_QUEUE("unique_key",
                                 "$2") " AND (CAST($4 AS "
                                       "int) = 0 OR locked_until IS NULL OR "
                                       "locked_until <= " NOW ")",
    .unique_window_get =
        "SELECT message_id FROM {p}unique_keys WHERE " SAME_QUEUE(
            "queue", "$1") " AND " SAME_QUEUE("unique_key",
                                              "$2") " AND until > " NOW,
    .unique_window_put =
        "MERGE {p}unique_keys WITH (HOLDLOCK) AS u USING (SELECT CAST($1 AS "
        "nvarchar(200)) AS queue, CAST($2 AS nvarchar(255)) AS unique_key) "
        "AS x ON " SAME_QUEUE("u.queue", "x.queue") " AND " SAME_QUEUE(
            "u.unique_key",
            "x.unique_key") " WHEN MATCHED THEN UPDATE SET "
                            "message_id = CAST($3 AS uniqueidentifier), until = " PLUS_MS(
                                "$4") " WHEN NOT MATCHED THEN INSERT (queue, unique_key, "
                                      "message_id, until) VALUES (x.queue, x.unique_key, CAST($3 "
                                      "AS uniqueidentifier), " PLUS_MS(
                                          "$4") ");",
    .unique_prune = "DELETE TOP (CAST($2 AS int)) FROM {p}unique_keys WHERE "
                    "until <= " NOW,
    .claim = CLAIMED_TABLE CLAIMABLE CLAIM_UPDATE CLAIMED_ROWS,
    /* In the claim's order: highest priority first (T34). */
    .claim_prio = CLAIMED_TABLE CLAIMABLE_AS("", "priority DESC, available_at, "
                                                 "created_at")
        CLAIM_UPDATE CLAIMED_ROWS_BY("priority DESC, available_at, created_at"),
    .claim_delete = CLAIMED_TABLE CLAIMABLE
    "DELETE FROM c OUTPUT deleted.id, deleted.payload, deleted.headers, "
    "deleted.attempts + 1, CAST($4 AS uniqueidentifier), "
    "deleted.created_at, deleted.queue, deleted.available_at, "
    "deleted.priority, deleted.expires_at INTO @claimed; " CLAIMED_ROWS,
    .ack = "DELETE FROM {p}messages WHERE id = $1 AND lock_id = $2" ROWCOUNT,
    .nak = "UPDATE {p}messages SET available_at = " PLUS_MS(
        "$4") ", "
              "locked_until = NULL, lock_id = NULL, last_error = $5, "
              "progress = NULL WHERE id = $1 AND lock_id = $2" ROWCOUNT,
    .hand_back = "UPDATE {p}messages SET available_at = " NOW ", "
                 "locked_until = NULL, lock_id = NULL, progress = NULL, "
                 "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 "
                 "END WHERE id = $1 AND lock_id = $2" ROWCOUNT,
    .progress_set = "UPDATE {p}messages SET progress = $3 WHERE id = $1 AND "
                    "lock_id = $2" ROWCOUNT,
    /* [queue]: an assignment, not a comparison (every comparison of
     * queue carries the sentinel, and the unit tests look for it). */
    .schedule_put =
        "MERGE {p}schedules WITH (HOLDLOCK) AS s USING (SELECT CAST($1 AS "
        "nvarchar(200)) AS name) AS x ON " SAME_QUEUE(
            "s.name",
            "x.name") " WHEN MATCHED THEN UPDATE SET [queue] = $2, "
                      "cron = $3, interval_us = CAST($4 AS bigint), time_zone = $5, "
                      "payload = $6, headers = $7, missed = $8, anchor_us = CAST($9 AS "
                      "bigint), last_us = CAST($10 AS bigint), next_us = CAST($11 AS "
                      "bigint), updated_at = " NOW
                      " WHEN NOT MATCHED THEN INSERT (name, "
                      "queue, cron, interval_us, time_zone, payload, headers, missed, "
                      "anchor_us, last_us, next_us, created_at, updated_at) VALUES "
                      "(x.name, $2, $3, CAST($4 AS bigint), $5, $6, $7, $8, CAST($9 AS "
                      "bigint), CAST($10 AS bigint), CAST($11 AS bigint), " NOW
                      ", " NOW ");",
    .schedule_remove =
        "DELETE FROM {p}schedules WHERE " SAME_QUEUE("name", "$1") ROWCOUNT,
    .schedule_list = "SELECT name, queue, cron, interval_us, time_zone, "
                     "missed, DATALENGTH(payload), anchor_us, last_us, "
                     "next_us, created_at, updated_at FROM {p}schedules "
                     "ORDER BY name",
    .schedule_due = "SELECT name, queue, cron, interval_us, time_zone, "
                    "missed, payload, headers, anchor_us, last_us FROM "
                    "{p}schedules WHERE next_us <= CAST($1 AS bigint) "
                    "ORDER BY next_us, name",
    .schedule_settle =
        "UPDATE {p}schedules SET last_us = CAST($2 AS bigint), next_us = "
        "CAST($3 AS bigint) WHERE " SAME_QUEUE(
            "name", "$1") " AND anchor_us = CAST($4 AS bigint) AND last_us = "
                          "CAST($5 AS bigint)" ROWCOUNT,
    .schedule_wake = "SELECT MIN(next_us) FROM {p}schedules",
    /* Issue 22: the upsert holds the key range so two first beats of
     * one instance cannot both insert; a restart (another pid) or a beat
     * after a graceful stop starts the instance again; monitored is the
     * operator's. Ids and names match byte-exactly (the sentinel). */
    .heartbeat_beat =
        "MERGE {p}heartbeats WITH (HOLDLOCK) AS h USING (SELECT CAST($1 AS "
        "nvarchar(36)) AS id) AS x ON " SAME_QUEUE(
            "h.id", "x.id") " WHEN MATCHED THEN UPDATE SET endpoint = $2, "
                            "host = $3, host_id = $4, started_at = CASE WHEN "
                            "h.pid = CAST($5 AS bigint) AND h.stopped_at IS "
                            "NULL THEN h.started_at ELSE " NOW
                            " END, pid = CAST($5 AS bigint), interval_ms = "
                            "CAST($6 AS bigint), last_beat_at = " NOW
                            ", stopped_at = NULL WHEN NOT MATCHED THEN INSERT "
                            "(id, endpoint, host, host_id, pid, interval_ms, "
                            "started_at, last_beat_at, stopped_at, monitored) "
                            "VALUES (x.id, $2, $3, $4, CAST($5 AS bigint), "
                            "CAST($6 AS bigint), " NOW ", " NOW ", NULL, 1);",
    .heartbeat_stop =
        "UPDATE {p}heartbeats SET stopped_at = " NOW ", last_beat_at = " NOW
        " WHERE " SAME_QUEUE("id", "$1") " AND pid = CAST($2 AS bigint)",
    .heartbeat_list = "SELECT id, endpoint, host, host_id, pid, interval_ms, "
                      "started_at, last_beat_at, stopped_at, monitored, " NOW
                      " FROM {p}heartbeats ORDER BY endpoint, host, id",
    .heartbeat_monitor =
        "UPDATE {p}heartbeats SET monitored = CAST($2 AS int) WHERE " SAME_QUEUE(
            "id", "$1") ROWCOUNT,
    .heartbeat_remove =
        "DELETE FROM {p}heartbeats WHERE " SAME_QUEUE("id", "$1") ROWCOUNT,
    .setting_get =
        "SELECT value, updated_at FROM {p}settings WHERE " SAME_QUEUE("name",
                                                                      "$1"),
    .setting_put =
        "MERGE {p}settings WITH (HOLDLOCK) AS s USING (SELECT CAST($1 AS "
        "nvarchar(200)) AS name) AS x ON " SAME_QUEUE(
            "s.name", "x.name") " WHEN MATCHED THEN UPDATE SET value = $2, "
                                "updated_at = " NOW
                                " WHEN NOT MATCHED THEN INSERT (name, value, "
                                "updated_at) VALUES (x.name, $2, " NOW ");",
    .setting_remove =
        "DELETE FROM {p}settings WHERE " SAME_QUEUE("name", "$1") ROWCOUNT,
    .setting_list =
        "SELECT name, value, updated_at FROM {p}settings ORDER BY name",
    .renew = "UPDATE {p}messages SET locked_until = " PLUS_MS(
        "$4") ", available_at = " PLUS_MS("$4") " WHERE id = $1 AND lock_id = $2" ROWCOUNT,
    .dead_letter =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, last_error, dead_letter_reason) "
        "SELECT CAST($1 AS uniqueidentifier), $2, payload, $3, " NOW ", " NOW
        ", attempts, $5, $4 "
        "FROM {p}messages WHERE id = $7 AND ($8 IS NULL OR lock_id = $8)" ROWCOUNT,
    .dlq_insert =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, last_error, dead_letter_reason) "
        "SELECT CAST($1 AS uniqueidentifier), $2, $7, $3, " NOW ", " NOW
        ", $8, $5, $4 WHERE NOT EXISTS (SELECT 1 FROM "
        "{p}messages WITH (UPDLOCK, HOLDLOCK) WHERE id = $1)",
    .delete_any = "DELETE FROM {p}messages WHERE id = $1 AND "
                  "($2 IS NULL OR lock_id = $2)" ROWCOUNT,
    .pending = "SELECT TOP (1) 1 FROM {p}messages WHERE " SAME_QUEUE(
        "queue", "$1") " AND (available_at <= " NOW
                       " OR locked_until IS NOT NULL)",
    .stats = "SELECT queue, "
             "SUM(CASE WHEN " READY " THEN 1 ELSE 0 END), "
             "SUM(CASE WHEN available_at > " NOW " AND locked_until IS "
             "NULL THEN 1 ELSE 0 END), "
             "SUM(CASE WHEN locked_until > " NOW " THEN 1 ELSE 0 END), "
             "COALESCE(DATEDIFF_BIG(millisecond, MIN(CASE WHEN " READY
             " THEN created_at END), " NOW "), -1) "
             "FROM {p}messages GROUP BY queue ORDER BY queue",
    .dlq_stats =
        "SELECT " FAILED_QUEUE ", COUNT(*) FROM {p}messages WHERE " SAME_QUEUE(
            "queue", "$1") " GROUP BY " FAILED_QUEUE,
    .dlq_list =
        "SELECT TOP (COALESCE(CAST($5 AS bigint), 2147483647)) id, "
        "payload, headers, attempts, lock_id, created_at, queue "
        "FROM {p}messages WHERE " SAME_QUEUE(
            "queue",
            "$1") " AND ($2 IS NULL "
                  "OR " FAILED_QUEUE
                  " = $2) AND ($3 IS NULL OR created_at < " MINUS_MS(
                      "$3") ") AND ($4 IS NULL OR id = $4) ORDER BY created_at, id",
    .peek =
        "SELECT id, payload, headers, attempts, CAST(NULL AS "
        "uniqueidentifier), created_at, queue, available_at, locked_until, "
        "priority, progress, expires_at, unique_key FROM {p}messages WHERE " SAME_QUEUE(
            "queue",
            "$1") " ORDER BY available_at, created_at, id OFFSET CAST($3 AS bigint) "
                  "ROWS FETCH NEXT CAST($2 AS bigint) ROWS ONLY",
    .prune = "DELETE TOP (CAST($3 AS int)) FROM {p}messages WHERE " SAME_QUEUE(
        "queue", "$1") " AND created_at < " MINUS_MS("$2") ROWCOUNT,
    /* Types as their declarations spell them, with length or scale: a
     * datetime2(3) must not pass for datetime2(7). */
    .columns =
        "SELECT c.name, CASE WHEN t.name IN (N'nvarchar', N'nchar') THEN "
        "t.name + N'(' + CASE WHEN c.max_length = -1 THEN N'max' ELSE "
        "CAST(c.max_length / 2 AS nvarchar(10)) END + N')' WHEN t.name IN "
        "(N'varchar', N'char', N'varbinary', N'binary') THEN t.name + N'(' + "
        "CASE WHEN c.max_length = -1 THEN N'max' ELSE CAST(c.max_length AS "
        "nvarchar(10)) END + N')' WHEN t.name IN (N'datetime2', "
        "N'datetimeoffset', N'time') THEN t.name + N'(' + CAST(c.scale AS "
        "nvarchar(10)) + N')' ELSE t.name END, CASE WHEN c.is_nullable = 1 "
        "THEN 0 ELSE 1 END, COALESCE(c.collation_name, N'') FROM sys.columns "
        "AS c JOIN sys.types AS t ON t.user_type_id = c.user_type_id WHERE "
        "c.object_id = OBJECT_ID($1, N'U') ORDER BY c.column_id",
    /* Enabled, unfiltered indexes by their key columns (not included
     * ones), in key order. */
    .indexes =
        "SELECT i.name, CAST(i.is_primary_key AS int), STRING_AGG(col.name, "
        "N',') WITHIN GROUP (ORDER BY ic.key_ordinal) FROM sys.indexes AS i "
        "JOIN sys.index_columns AS ic ON ic.object_id = i.object_id AND "
        "ic.index_id = i.index_id AND ic.key_ordinal > 0 JOIN sys.columns AS "
        "col ON col.object_id = ic.object_id AND col.column_id = "
        "ic.column_id WHERE i.object_id = OBJECT_ID($1, N'U') AND "
        "i.is_disabled = 0 AND i.has_filter = 0 GROUP BY i.index_id, i.name, "
        "i.is_primary_key",
    .notify = NULL,
    /* Set once: a queue flagged already is only read. */
    .mark_prioritized =
        "IF NOT EXISTS (SELECT 1 FROM {p}queue_settings WHERE " SAME_QUEUE(
            "queue",
            "$1") " AND prioritized = 1) "
                  "MERGE {p}queue_settings WITH (HOLDLOCK) AS s USING (SELECT "
                  "CAST($1 AS nvarchar(200)) AS queue) AS x ON " SAME_QUEUE(
                      "s.queue",
                      "x.queue") " WHEN MATCHED THEN UPDATE SET prioritized = 1, "
                                 "updated_at = " NOW
                                 " WHEN NOT MATCHED THEN INSERT (queue, prioritized, "
                                 "updated_at) VALUES (x.queue, 1, " NOW ");",
    .clock_now = "SELECT " NOW,
    .settings_ttl =
        "MERGE {p}queue_settings WITH (HOLDLOCK) AS s USING (SELECT CAST($1 "
        "AS nvarchar(200)) AS queue, CAST($2 AS bigint) AS ttl_ms) AS x "
        "ON " SAME_QUEUE(
            "s.queue",
            "x.queue") " WHEN MATCHED THEN UPDATE SET "
                       "ttl_ms = x.ttl_ms, updated_at = " NOW
                       " WHEN NOT MATCHED THEN "
                       "INSERT (queue, ttl_ms, updated_at) VALUES (x.queue, x.ttl_ms, " NOW
                       ");",
    /* T36: a change of the limits starts with a full bucket. */
    .settings_limits =
        "MERGE {p}queue_settings WITH (HOLDLOCK) AS s USING (SELECT CAST($1 "
        "AS nvarchar(200)) AS queue, CAST($2 AS int) AS max_running, CAST($3 "
        "AS int) AS rate_limit, CAST($4 AS bigint) AS rate_interval_ms) AS x "
        "ON " SAME_QUEUE(
            "s.queue",
            "x.queue") " WHEN MATCHED THEN UPDATE "
                       "SET max_running = x.max_running, rate_limit = x.rate_limit, "
                       "rate_interval_ms = x.rate_interval_ms, rate_tokens = NULL, rate_at "
                       "= NULL, updated_at = " NOW
                       " WHEN NOT MATCHED THEN INSERT (queue, "
                       "max_running, rate_limit, rate_interval_ms, updated_at) VALUES "
                       "(x.queue, x.max_running, x.rate_limit, x.rate_interval_ms, " NOW
                       ");",
    /* The update lock serialises the limited claims of the queue until
     * the transaction ends. */
    .limit_lock = "SELECT max_running, rate_limit, rate_interval_ms, "
                  "CAST(FLOOR((" TOKENS ") * 1000) AS bigint) FROM "
                  "{p}queue_settings WITH (UPDLOCK, ROWLOCK) WHERE " SAME_QUEUE(
                      "queue", "$1"),
    /* A leased row's available_at is its lease's end (the claim and the
     * renewal move both): the claim index is read from now on. */
    .limit_running =
        "SELECT COUNT(*) FROM (SELECT TOP (CAST($3 AS int)) 1 AS x FROM "
        "{p}messages WHERE " SAME_QUEUE(
            "queue", "$1") " AND available_at > " NOW " AND locked_until > " NOW
                           ") AS r",
    .limit_take =
        "UPDATE {p}queue_settings SET rate_tokens = (" TOKENS
        ") - $2, rate_at = CASE WHEN rate_at > " NOW " THEN rate_at ELSE " NOW
        " END WHERE " SAME_QUEUE("queue", "$1") " AND rate_limit IS NOT NULL",
    /* Rows other transactions hold are skipped (READPAST), as a claim
     * skips them; the next sweep takes them. */
    .expire_due = "SELECT TOP (CAST($2 AS int)) id, payload, headers, "
                  "attempts, lock_id, created_at, queue FROM {p}messages "
                  "WITH (UPDLOCK, ROWLOCK, READPAST) WHERE expires_at <= " NOW
                  " AND (locked_until IS NULL OR locked_until <= " NOW
                  ") ORDER BY expires_at",
    .expire_ttl =
        "SELECT TOP (CAST($2 AS int)) id, payload, headers, "
        "attempts, lock_id, created_at, queue FROM {p}messages "
        "WITH (UPDLOCK, ROWLOCK, READPAST) WHERE " SAME_QUEUE(
            "queue",
            "$3") " AND created_at <= " MINUS_MS("$4") " AND (locked_until IS NULL OR locked_until <= " NOW
                                                       ") ORDER BY created_at",
    .settings_get =
        "SELECT paused, prioritized, max_running, rate_limit, "
        "rate_interval_ms, ttl_ms FROM {p}queue_settings WHERE " SAME_QUEUE(
            "queue", "$1"),
    .settings_list = "SELECT queue, paused, prioritized, max_running, "
                     "rate_limit, rate_interval_ms, ttl_ms FROM "
                     "{p}queue_settings ORDER BY queue",
    .settings_pause =
        "MERGE {p}queue_settings WITH (HOLDLOCK) AS s USING (SELECT CAST($1 "
        "AS nvarchar(200)) AS queue, CAST($2 AS int) AS paused) AS x "
        "ON " SAME_QUEUE(
            "s.queue",
            "x.queue") " WHEN MATCHED THEN UPDATE SET paused = x.paused, "
                       "updated_at = " NOW
                       " WHEN NOT MATCHED THEN INSERT (queue, "
                       "paused, updated_at) VALUES (x.queue, x.paused, " NOW
                       ");",
    .counts_add =
        "MERGE {p}counts WITH (HOLDLOCK) AS c USING (SELECT CAST($1 AS "
        "nvarchar(200)) AS queue, CAST($2 AS bigint) AS published, CAST($3 "
        "AS bigint) AS acked, CAST($4 AS bigint) AS naked, CAST($5 AS bigint) "
        "AS dead_lettered) AS x ON " SAME_QUEUE(
            "c.queue",
            "x.queue") " WHEN MATCHED THEN UPDATE SET published = c.published + "
                       "x.published, acked = c.acked + x.acked, naked = c.naked + x.naked, "
                       "dead_lettered = c.dead_lettered + x.dead_lettered, updated_at = " NOW
                       " WHEN NOT MATCHED THEN INSERT (queue, published, "
                       "acked, naked, dead_lettered, updated_at) VALUES (x.queue, "
                       "x.published, x.acked, x.naked, x.dead_lettered, " NOW
                       ");",
    .counts_list = "SELECT queue, published, acked, naked, dead_lettered "
                   "FROM {p}counts ORDER BY queue",
    .counts_prune = "DELETE FROM {p}counts WHERE updated_at < " MINUS_MS("$2"),
};

const char sb__sql_mssql_tables[] = TABLES;
const char sb__sql_mssql_indexes[] = INDEXES;
