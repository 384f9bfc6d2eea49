/* sql_postgres.c - the transport's statements for PostgreSQL. Every time
 * comes from the database clock (now(), T5); the host-time parameter that
 * SQLite uses is declared but unused here. Claims skip rows other
 * consumers hold (FOR UPDATE SKIP LOCKED, T14). */
#include "transport/sql_dialect.h"

#include <stddef.h>

#define MS "* interval '1 millisecond'"

/* T36: a queue's token bucket refilled to now(): what rate_at left,
 * plus rate_limit per rate_interval_ms since, at most rate_limit; full
 * when never drawn from. NULL without a rate limit. */
#define TOKENS                                                                 \
    "LEAST(rate_limit::float8, COALESCE(rate_tokens, rate_limit) + "           \
    "GREATEST(extract(epoch FROM now() - COALESCE(rate_at, now())), 0) * "     \
    "1000 * rate_limit / rate_interval_ms)"

const sb_sql_templates sb__sql_postgres = {
    .ddl = "CREATE TABLE IF NOT EXISTS {p}messages (\n"
           "  id uuid NOT NULL PRIMARY KEY,\n"
           "  queue text COLLATE \"C\" NOT NULL,\n"
           "  payload bytea NOT NULL,\n"
           "  headers text NOT NULL DEFAULT '{}',\n"
           "  created_at timestamptz NOT NULL DEFAULT now(),\n"
           "  available_at timestamptz NOT NULL DEFAULT now(),\n"
           "  locked_until timestamptz,\n"
           "  lock_id uuid,\n"
           "  attempts integer NOT NULL DEFAULT 0,\n"
           "  last_error text,\n"
           "  dead_letter_reason text,\n"
           "  priority smallint NOT NULL DEFAULT 0,\n"
           "  unique_key text,\n"
           "  expires_at timestamptz,\n"
           "  progress text\n"
           ") WITH (fillfactor = 50);\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_claim_idx\n"
           "  ON {p}messages (queue, priority DESC, available_at, "
           "created_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_created_idx\n"
           "  ON {p}messages (created_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_expires_idx\n"
           "  ON {p}messages (expires_at) WHERE expires_at IS NOT NULL;\n"
           "CREATE INDEX IF NOT EXISTS {p}messages_unique_idx\n"
           "  ON {p}messages (queue, unique_key) WHERE unique_key IS NOT "
           "NULL;\n"
           "CREATE TABLE IF NOT EXISTS {p}counts (\n"
           "  queue text COLLATE \"C\" NOT NULL PRIMARY KEY,\n"
           "  published bigint NOT NULL DEFAULT 0,\n"
           "  acked bigint NOT NULL DEFAULT 0,\n"
           "  naked bigint NOT NULL DEFAULT 0,\n"
           "  dead_lettered bigint NOT NULL DEFAULT 0,\n"
           "  updated_at timestamptz NOT NULL DEFAULT now()\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}queue_settings (\n"
           "  queue text COLLATE \"C\" NOT NULL PRIMARY KEY,\n"
           "  paused integer NOT NULL DEFAULT 0,\n"
           "  prioritized integer NOT NULL DEFAULT 0,\n"
           "  max_running integer,\n"
           "  rate_limit integer,\n"
           "  rate_interval_ms bigint,\n"
           "  rate_tokens double precision,\n"
           "  rate_at timestamptz,\n"
           "  ttl_ms bigint,\n"
           "  updated_at timestamptz NOT NULL DEFAULT now()\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}schedules (\n"
           "  name text COLLATE \"C\" NOT NULL PRIMARY KEY,\n"
           "  queue text COLLATE \"C\" NOT NULL,\n"
           "  cron text,\n"
           "  interval_us bigint,\n"
           "  time_zone text,\n"
           "  payload bytea NOT NULL,\n"
           "  headers text NOT NULL DEFAULT '{}',\n"
           "  missed text NOT NULL DEFAULT 'skip',\n"
           "  anchor_us bigint NOT NULL,\n"
           "  last_us bigint NOT NULL,\n"
           "  next_us bigint,\n"
           "  created_at timestamptz NOT NULL DEFAULT now(),\n"
           "  updated_at timestamptz NOT NULL DEFAULT now()\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}unique_keys (\n"
           "  queue text COLLATE \"C\" NOT NULL,\n"
           "  unique_key text COLLATE \"C\" NOT NULL,\n"
           "  message_id uuid NOT NULL,\n"
           "  until timestamptz NOT NULL,\n"
           "  PRIMARY KEY (queue, unique_key)\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}unique_keys_until_idx\n"
           "  ON {p}unique_keys (until);\n"
           "CREATE TABLE IF NOT EXISTS {p}heartbeats (\n"
           "  id text COLLATE \"C\" NOT NULL PRIMARY KEY,\n"
           "  endpoint text NOT NULL,\n"
           "  host text NOT NULL,\n"
           "  host_id text NOT NULL,\n"
           "  pid bigint NOT NULL,\n"
           "  interval_ms bigint NOT NULL,\n"
           "  started_at timestamptz NOT NULL DEFAULT now(),\n"
           "  last_beat_at timestamptz NOT NULL DEFAULT now(),\n"
           "  stopped_at timestamptz,\n"
           "  monitored integer NOT NULL DEFAULT 1\n"
           ");\n"
           "CREATE TABLE IF NOT EXISTS {p}settings (\n"
           "  name text COLLATE \"C\" NOT NULL PRIMARY KEY,\n"
           "  value text NOT NULL,\n"
           "  updated_at timestamptz NOT NULL DEFAULT now()\n"
           ");\n",
    .upgrade = "DROP INDEX IF EXISTS {p}messages_ready_idx",
    .lock = "SELECT pg_advisory_xact_lock(hashtext('sqlbus-schema:' || "
            "current_schema() || ':{p}'))",
    .insert_head = "INSERT INTO {p}messages (id, queue, payload, headers, "
                   "created_at, available_at, attempts) VALUES ",
    .insert_row =
        "($%d::uuid, $1, $%d, $%d, now(), now() + $%d::int8 " MS ", 0)",
    .insert_tail = " ON CONFLICT (id) DO NOTHING",
    .insert_head_ex = "INSERT INTO {p}messages (id, queue, payload, headers, "
                      "created_at, available_at, attempts, priority, "
                      "expires_at, unique_key) VALUES ",
    .insert_row_ex = "($%d::uuid, $1, $%d, $%d, now(), now() + $%d::int8 " MS
                     ", 0, $%d::int2, now() + $%d::int8 " MS ", $%d::text)",
/* The claimed rows are found again by their tuple ids (ctid), which
     * the subquery's row locks keep in place until the statement writes
     * them: a TID scan, the one plan that does not depend on the
     * statistics. Found by primary key through an id array, a generic
     * plan made while the table was small kept a sequential scan of the
     * whole (grown) table on every claim (684 pages for 2 rows, at 2,000
     * messages a second: docs/internals/transport.md); joined with a
     * CTE, the statistics a held xmin leaves (a few live rows in a table
     * of dead ones) walked the whole primary key. */
/* A queue without priorities claims priority 0 only, which keeps the
 * claim index's seek on (queue, priority) and its stop at the first row
 * not yet available; a prioritized queue (T34) orders by priority first. */
#define PLAIN "AND priority = 0 "
#define BY_TIME "ORDER BY available_at, created_at "
#define BY_PRIORITY "ORDER BY priority DESC, available_at, created_at "
#define READY_AS(bound, prio, order)                                           \
    "SELECT ctid FROM {p}messages WHERE queue = $1 " prio bound                \
    "AND available_at <= now() AND (locked_until IS NULL OR "                  \
    "locked_until <= now()) " order "LIMIT $5 FOR UPDATE SKIP LOCKED"
#define READY(bound) READY_AS(bound, PLAIN, BY_TIME)
/* The bound of the claims through a cursor (claim.c): $6 microseconds
 * since the epoch. */
#define FROM_US                                                                \
    "AND available_at >= 'epoch'::timestamptz + $6::int8 * "                   \
    "interval '1 microsecond' "
#define CLAIM_SET                                                              \
    "UPDATE {p}messages m SET attempts = m.attempts + 1, "                     \
    "locked_until = now() + $3::int8 " MS ", lock_id = $4::uuid "              \
    "WHERE m.ctid = ANY (ARRAY("
/* Every claim returns the message, then available_at, the priority and
 * the expiry (T40), in that order (transport.h, SB_CLAIM_COL_*). */
#define CLAIM_TAIL "m.available_at, m.priority, m.expires_at"
#define CLAIM_RETURNING                                                        \
    ")) RETURNING m.id, m.payload, m.headers, m.attempts, m.lock_id, "         \
    "m.created_at, m.queue, " CLAIM_TAIL
#define CLAIM_UPDATE(bound) CLAIM_SET READY(bound) CLAIM_RETURNING
#define CLAIM_DELETE(bound)                                                          \
    "DELETE FROM {p}messages m WHERE m.ctid = ANY (ARRAY(" READY(                    \
        bound) ")) RETURNING m.id, m.payload, m.headers, m.attempts + 1, $4::uuid, " \
               "m.created_at, m.queue, " CLAIM_TAIL
    .cancel_get = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue, CASE WHEN locked_until > now() THEN 1 "
                  "ELSE 0 END FROM {p}messages WHERE id = $1::uuid AND "
                  "queue = $2 FOR UPDATE",
    .cancel_key_get = "SELECT id, payload, headers, attempts, lock_id, "
                      "created_at, queue, CASE WHEN locked_until > now() "
                      "THEN 1 ELSE 0 END FROM {p}messages WHERE queue = $1 "
                      "AND unique_key = $2 FOR UPDATE",
    /* T38: publishes of one key serialised until their commit ($1: a hash
     * of the queue and the key, claim.c's keyspace apart). */
    .unique_lock = "SELECT pg_advisory_xact_lock($1::int8)",
    .unique_holder = "SELECT id FROM {p}messages WHERE queue = $1 AND "
                     "unique_key = $2 AND ($4::int4 = 0 OR locked_until IS "
                     "NULL OR locked_until <= now()) LIMIT 1",
    .unique_window_get = "SELECT message_id FROM {p}unique_keys WHERE queue "
                         "= $1 AND unique_key = $2 AND until > now()",
    .unique_window_put =
        "INSERT INTO {p}unique_keys (queue, unique_key, message_id, until) "
        "VALUES ($1, $2, $3::uuid, now() + $4::int8 " MS ") ON CONFLICT "
        "(queue, unique_key) DO UPDATE SET message_id = excluded.message_id, "
        "until = excluded.until",
    .unique_prune = "DELETE FROM {p}unique_keys WHERE ctid = ANY (ARRAY("
                    "SELECT ctid FROM {p}unique_keys WHERE until <= now() "
                    "LIMIT $2::int8))",
    .claim = CLAIM_UPDATE(""),
    .claim_delete = CLAIM_DELETE(""),
    /* The claim, starting the index scan at $6 instead of the queue's
     * first entry: the entries of rows deleted or claimed before it are
     * not walked (claim.c). */
    .claim_from = CLAIM_UPDATE(FROM_US),
    /* RETURNING gives no order: claim.c sorts by the priority. */
    .claim_prio = CLAIM_SET READY_AS("", "", BY_PRIORITY) CLAIM_RETURNING,
    .ack = "DELETE FROM {p}messages WHERE id = $1::uuid AND lock_id = $2::uuid",
    /* $2 maps each id to its lock id as a JSON object: a keyed lookup
     * per row (array_position per row was quadratic in the batch), and no
     * join for a stale plan to turn around (docs/internals/transport.md). */
    .ack_many = "DELETE FROM {p}messages m WHERE m.id = ANY ($1::uuid[]) "
                "AND m.lock_id = ($2::jsonb ->> m.id::text)::uuid "
                "RETURNING m.id",
    .renew_many = "UPDATE {p}messages m SET locked_until = now() + $4::int8 " MS
                  " WHERE m.id = ANY ($1::uuid[]) AND m.lock_id = "
                  "($2::jsonb ->> m.id::text)::uuid RETURNING m.id",
    .hand_back_many = "UPDATE {p}messages m SET available_at = now(), "
                      "locked_until = NULL, lock_id = NULL, progress = NULL, "
                      "attempts = GREATEST(m.attempts - 1, 0) "
                      "WHERE m.id = ANY ($1::uuid[]) AND m.lock_id = "
                      "($2::jsonb ->> m.id::text)::uuid RETURNING m.id",
    .nak = "UPDATE {p}messages SET available_at = now() + $4::int8 " MS ", "
           "locked_until = NULL, lock_id = NULL, last_error = $5, "
           "progress = NULL WHERE id = $1::uuid AND lock_id = $2::uuid",
    .hand_back = "UPDATE {p}messages SET available_at = now(), "
                 "locked_until = NULL, lock_id = NULL, progress = NULL, "
                 "attempts = GREATEST(attempts - 1, 0) "
                 "WHERE id = $1::uuid AND lock_id = $2::uuid",
    .progress_set = "UPDATE {p}messages SET progress = $3 WHERE id = "
                    "$1::uuid AND lock_id = $2::uuid",
    .schedule_put =
        "INSERT INTO {p}schedules (name, queue, cron, interval_us, "
        "time_zone, payload, headers, missed, anchor_us, last_us, next_us, "
        "created_at, updated_at) VALUES ($1, $2, $3, $4::int8, $5, $6, $7, "
        "$8, $9::int8, $10::int8, $11::int8, now(), now()) ON CONFLICT "
        "(name) DO UPDATE SET queue = excluded.queue, cron = excluded.cron, "
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
                    "{p}schedules WHERE next_us <= $1::int8 ORDER BY "
                    "next_us, name",
    /* The row lock the update takes orders schedulers racing for one
     * occurrence: the loser waits, then finds last_us moved. */
    .schedule_settle = "UPDATE {p}schedules SET last_us = $2::int8, "
                       "next_us = $3::int8 WHERE name = $1 AND anchor_us = "
                       "$4::int8 AND last_us = $5::int8",
    .schedule_wake = "SELECT MIN(next_us) FROM {p}schedules",
    /* Issue 22: a restart (another pid) or a beat after a graceful
     * stop starts the instance again; monitored is the operator's. */
    .heartbeat_beat =
        "INSERT INTO {p}heartbeats AS h (id, endpoint, host, host_id, pid, "
        "interval_ms, started_at, last_beat_at, stopped_at, monitored) "
        "VALUES ($1, $2, $3, $4, $5::int8, $6::int8, now(), now(), NULL, 1) "
        "ON CONFLICT (id) DO UPDATE SET endpoint = excluded.endpoint, "
        "host = excluded.host, host_id = excluded.host_id, started_at = "
        "CASE WHEN h.pid = excluded.pid AND h.stopped_at IS NULL THEN "
        "h.started_at ELSE excluded.started_at END, pid = excluded.pid, "
        "interval_ms = excluded.interval_ms, last_beat_at = "
        "excluded.last_beat_at, stopped_at = NULL",
    .heartbeat_stop = "UPDATE {p}heartbeats SET stopped_at = now(), "
                      "last_beat_at = now() WHERE id = $1 AND pid = $2::int8",
    .heartbeat_list = "SELECT id, endpoint, host, host_id, pid, interval_ms, "
                      "started_at, last_beat_at, stopped_at, monitored, now() "
                      "FROM {p}heartbeats ORDER BY endpoint, host, id",
    .heartbeat_monitor =
        "UPDATE {p}heartbeats SET monitored = $2::int4 WHERE id = $1",
    .heartbeat_remove = "DELETE FROM {p}heartbeats WHERE id = $1",
    .setting_get = "SELECT value, updated_at FROM {p}settings WHERE name = $1",
    .setting_put = "INSERT INTO {p}settings (name, value, updated_at) VALUES "
                   "($1, $2, now()) ON CONFLICT (name) DO UPDATE SET value = "
                   "excluded.value, updated_at = excluded.updated_at",
    .setting_remove = "DELETE FROM {p}settings WHERE name = $1",
    .setting_list =
        "SELECT name, value, updated_at FROM {p}settings ORDER BY name",
    .renew = "UPDATE {p}messages SET locked_until = now() + $4::int8 " MS
             " WHERE id = $1::uuid AND lock_id = $2::uuid",
    .dead_letter =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, last_error, dead_letter_reason) "
        "SELECT $1::uuid, $2, payload, $3, now(), now(), attempts, $5, $4 "
        "FROM {p}messages WHERE id = $7::uuid AND "
        "($8::uuid IS NULL OR lock_id = $8::uuid)",
    .dlq_insert =
        "INSERT INTO {p}messages (id, queue, payload, headers, created_at, "
        "available_at, attempts, last_error, dead_letter_reason) "
        "VALUES ($1::uuid, $2, $7, $3, now(), now(), $8, $5, $4) "
        "ON CONFLICT (id) DO NOTHING",
    .delete_any = "DELETE FROM {p}messages WHERE id = $1::uuid AND "
                  "($2::uuid IS NULL OR lock_id = $2::uuid)",
    /* The statement's clock, not the transaction's start: a row another
     * connection made ready after this transaction began is pending. */
    .pending =
        "SELECT 1 FROM {p}messages WHERE queue = $1 AND "
        "(available_at <= clock_timestamp() OR locked_until IS NOT NULL) "
        "LIMIT 1",
    .stats =
        "SELECT queue, "
        "count(*) FILTER (WHERE available_at <= now() AND (locked_until IS "
        "NULL OR locked_until <= now())), "
        "count(*) FILTER (WHERE available_at > now() AND locked_until IS "
        "NULL), "
        "count(*) FILTER (WHERE locked_until > now()), "
        "COALESCE((extract(epoch FROM now() - min(created_at) FILTER (WHERE "
        "available_at <= now() AND (locked_until IS NULL OR locked_until <= "
        "now()))) * 1000)::int8, -1) "
        "FROM {p}messages GROUP BY queue ORDER BY queue",
    .dlq_stats = "SELECT headers::json ->> 'sb-failed-queue', count(*) "
                 "FROM {p}messages WHERE queue = $1 GROUP BY 1",
    .dlq_list =
        "SELECT id, payload, headers, attempts, lock_id, created_at, queue "
        "FROM {p}messages WHERE queue = $1 AND ($2::text IS NULL OR "
        "headers::json ->> 'sb-failed-queue' = $2::text) AND "
        "($3::int8 IS NULL OR created_at < now() - $3::int8 " MS ") AND "
        "($4::uuid IS NULL OR id = $4::uuid) ORDER BY created_at, id "
        "LIMIT $5::int8",
    .peek =
        "SELECT id, payload, headers, attempts, NULL::uuid, created_at, "
        "queue, available_at, locked_until, priority, progress, expires_at, "
        "unique_key FROM {p}messages WHERE queue = $1 ORDER BY available_at, created_at, id LIMIT "
        "$2::int8 OFFSET $3::int8",
    .prune = "DELETE FROM {p}messages WHERE id IN (SELECT id FROM "
             "{p}messages WHERE queue = $1 AND created_at < now() - "
             "$2::int8 " MS " LIMIT $3::int8)",
    .columns = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), "
               "a.attnotnull::int, COALESCE(co.collname::text, '') "
               "FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = "
               "a.attcollation WHERE a.attrelid = to_regclass($1) AND "
               "a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
    .indexes = "SELECT ic.relname::text, i.indisprimary::int, "
               "(SELECT string_agg(a.attname::text, ',' ORDER BY k.ord) FROM "
               "unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) "
               "JOIN pg_attribute a ON a.attrelid = i.indrelid AND "
               "a.attnum = k.attnum) FROM pg_index i JOIN pg_class ic ON "
               "ic.oid = i.indexrelid WHERE i.indrelid = to_regclass($1)",
    .notify = "SELECT pg_notify($1, $2)",
    /* Set once: a queue flagged already takes no row lock here. */
    .mark_prioritized =
        "INSERT INTO {p}queue_settings (queue, prioritized, updated_at) "
        "SELECT $1, 1, now() WHERE NOT EXISTS (SELECT 1 FROM "
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
        "($1, $2, now()) ON CONFLICT (queue) DO UPDATE SET paused = "
        "excluded.paused, updated_at = excluded.updated_at",
    .clock_now = "SELECT now()",
    .settings_ttl =
        "INSERT INTO {p}queue_settings (queue, ttl_ms, updated_at) VALUES "
        "($1, $2::int8, now()) ON CONFLICT (queue) DO UPDATE SET ttl_ms = "
        "excluded.ttl_ms, updated_at = excluded.updated_at",
    /* T36: a change of the limits starts with a full bucket. */
    .settings_limits =
        "INSERT INTO {p}queue_settings (queue, max_running, rate_limit, "
        "rate_interval_ms, updated_at) VALUES ($1, $2::int4, $3::int4, "
        "$4::int8, now()) ON CONFLICT (queue) DO UPDATE SET max_running = "
        "excluded.max_running, rate_limit = excluded.rate_limit, "
        "rate_interval_ms = excluded.rate_interval_ms, rate_tokens = NULL, "
        "rate_at = NULL, updated_at = excluded.updated_at",
    /* The row lock serialises the limited claims of the queue; the
     * leased rows are counted in a statement of their own, whose
     * snapshot is taken after the lock is granted, so it sees the rows
     * the previous holder claimed. */
    .limit_lock = "SELECT max_running, rate_limit, rate_interval_ms, "
                  "floor(" TOKENS " * 1000)::int8 FROM {p}queue_settings "
                  "WHERE queue = $1 FOR UPDATE",
    .limit_running = "SELECT count(*) FROM (SELECT 1 FROM {p}messages WHERE "
                     "queue = $1 AND locked_until > now() LIMIT $3::int8) r",
    /* rate_at never moves back: a transaction that waited for the lock
     * began before its holder drew from the bucket. */
    .limit_take = "UPDATE {p}queue_settings SET rate_tokens = " TOKENS
                  " - $2::int8, rate_at = GREATEST(rate_at, now()) WHERE "
                  "queue = $1 AND rate_limit IS NOT NULL",
    /* Rows a consumer is claiming are skipped: the next sweep, or the
     * consumer's own check (T40), takes them. */
    .expire_due = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue FROM {p}messages WHERE expires_at <= "
                  "now() AND (locked_until IS NULL OR locked_until <= now()) "
                  "ORDER BY expires_at LIMIT $2::int8 FOR UPDATE SKIP LOCKED",
    .expire_ttl = "SELECT id, payload, headers, attempts, lock_id, "
                  "created_at, queue FROM {p}messages WHERE queue = $3 AND "
                  "created_at <= now() - $4::int8 " MS " AND (locked_until "
                  "IS NULL OR locked_until <= now()) ORDER BY created_at "
                  "LIMIT $2::int8 FOR UPDATE SKIP LOCKED",
    .counts_add =
        "INSERT INTO {p}counts AS c (queue, published, acked, naked, "
        "dead_lettered, updated_at) VALUES ($1, $2, $3, $4, $5, now()) "
        "ON CONFLICT (queue) DO UPDATE SET "
        "published = c.published + excluded.published, "
        "acked = c.acked + excluded.acked, "
        "naked = c.naked + excluded.naked, "
        "dead_lettered = c.dead_lettered + excluded.dead_lettered, "
        "updated_at = excluded.updated_at",
    .counts_list = "SELECT queue, published, acked, naked, dead_lettered "
                   "FROM {p}counts ORDER BY queue",
    .counts_prune = "DELETE FROM {p}counts WHERE updated_at < now() - "
                    "$2::int8 " MS,
    .xmin_holder =
        "SELECT kind, pid, name, state, usr, xmin_age, age_ms FROM ("
        "SELECT 'backend' AS kind, pid, COALESCE(application_name, '') "
        "AS name, COALESCE(state, '') AS state, COALESCE(usename::text, "
        "'') AS usr, GREATEST(COALESCE(age(backend_xmin), 0), "
        "COALESCE(age(backend_xid), 0))::int8 AS xmin_age, "
        "COALESCE((extract(epoch FROM now() - xact_start) * 1000)::int8, "
        "-1) AS age_ms FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) "
        "UNION ALL SELECT 'replication_slot', COALESCE(active_pid, 0), "
        "slot_name::text, CASE WHEN active THEN 'active' ELSE 'inactive' "
        "END, '', GREATEST(COALESCE(age(xmin), 0), "
        "COALESCE(age(catalog_xmin), 0))::int8, -1 FROM "
        "pg_replication_slots WHERE xmin IS NOT NULL OR catalog_xmin IS "
        "NOT NULL "
        "UNION ALL SELECT 'prepared_transaction', 0, gid, 'prepared', "
        "owner::text, age(transaction)::int8, "
        "(extract(epoch FROM now() - prepared) * 1000)::int8 FROM "
        "pg_prepared_xacts) h ORDER BY xmin_age DESC, age_ms DESC LIMIT 1",
};
