/* sql_sqlite.c - the channel's statements for SQLite: host-clock
 * microseconds passed in, the ack sequence a one-row counter bumped in the
 * write transaction (C10, C11). */
#include "channel/channel.h"

const sb_channel_templates sb__channel_sql_sqlite = {
    .ddl = "CREATE TABLE IF NOT EXISTS {p}channel_messages (\n"
           "  id TEXT NOT NULL PRIMARY KEY,\n"
           "  correlation_id TEXT NOT NULL COLLATE BINARY,\n"
           "  reply BLOB NOT NULL,\n"
           "  is_error INTEGER NOT NULL DEFAULT 0,\n"
           "  error_type TEXT,\n"
           "  error_message TEXT,\n"
           "  error_detail TEXT,\n"
           "  created_at INTEGER NOT NULL,\n"
           "  expires_at INTEGER NOT NULL,\n"
           "  acked_at INTEGER,\n"
           "  acked_seq INTEGER,\n"
           "  recovery_claimed INTEGER NOT NULL DEFAULT 0\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_messages_corr_idx\n"
           "  ON {p}channel_messages (correlation_id, created_at, id);\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_messages_exp_idx\n"
           "  ON {p}channel_messages (expires_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_messages_unconfirmed_idx\n"
           "  ON {p}channel_messages (created_at)\n"
           "  WHERE acked_at IS NULL AND recovery_claimed = 0;\n"
           "CREATE TABLE IF NOT EXISTS {p}channel_subscribers (\n"
           "  correlation_id TEXT NOT NULL COLLATE BINARY,\n"
           "  registration_id TEXT NOT NULL,\n"
           "  instance_id TEXT NOT NULL,\n"
           "  expires_at INTEGER NOT NULL,\n"
           "  PRIMARY KEY (correlation_id, registration_id)\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_subscribers_exp_idx\n"
           "  ON {p}channel_subscribers (expires_at);\n"
           "CREATE TABLE IF NOT EXISTS {p}recovery_state (\n"
           "  correlation_id TEXT NOT NULL COLLATE BINARY,\n"
           "  registration_id TEXT NOT NULL,\n"
           "  handler TEXT,\n"
           "  context BLOB,\n"
           "  registered_at INTEGER NOT NULL,\n"
           "  expires_at INTEGER NOT NULL,\n"
           "  dispatched_at INTEGER,\n"
           "  PRIMARY KEY (correlation_id, registration_id)\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}recovery_state_exp_idx\n"
           "  ON {p}recovery_state (expires_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}recovery_state_reg_idx\n"
           "  ON {p}recovery_state (registered_at, correlation_id, "
           "registration_id);\n"
           "CREATE TABLE IF NOT EXISTS {p}channel_ack_seq (\n"
           "  id INTEGER PRIMARY KEY CHECK (id = 1),\n"
           "  value INTEGER NOT NULL\n"
           ");\n"
           "INSERT OR IGNORE INTO {p}channel_ack_seq VALUES (1, 0);\n",
    .lock = NULL,
    .watermark = "SELECT $1, 0",
    .seq_next = "UPDATE {p}channel_ack_seq SET value = value + 1 WHERE id = 1 "
                "RETURNING value",
    .subscribe = "INSERT INTO {p}channel_subscribers VALUES ($1, $2, $3, "
                 "$5 + $4 * 1000) ON CONFLICT (correlation_id, "
                 "registration_id) DO UPDATE SET expires_at = "
                 "excluded.expires_at",
    .save_recovery = "INSERT INTO {p}recovery_state (correlation_id, "
                     "registration_id, handler, context, registered_at, "
                     "expires_at) VALUES ($1, $2, $3, $4, $6, $6 + $5 * "
                     "1000) ON CONFLICT (correlation_id, registration_id) "
                     "DO NOTHING",
    .unsubscribe = "DELETE FROM {p}channel_subscribers WHERE correlation_id "
                   "= $1 AND registration_id = $2",
    .forget_recovery = "DELETE FROM {p}recovery_state WHERE correlation_id = "
                       "$1 AND registration_id = $2",
    .live = "SELECT 1 FROM {p}channel_subscribers WHERE correlation_id = $1 "
            "AND expires_at > $2 LIMIT 1",
    .insert = "INSERT INTO {p}channel_messages (id, correlation_id, reply, "
              "is_error, error_type, error_message, error_detail, created_at, "
              "expires_at, recovery_claimed) VALUES ($1, $2, $3, $4, $5, $6, "
              "$7, $9, $9 + $8 * 1000, $10) ON CONFLICT (id) DO NOTHING "
              "RETURNING created_at",
    .stored = "SELECT created_at, acked_at, acked_seq, recovery_claimed, "
              "correlation_id FROM {p}channel_messages WHERE id = $1",
    .scan = "SELECT id, correlation_id, reply, is_error, error_type, "
            "error_message, error_detail, created_at, acked_at, acked_seq "
            "FROM {p}channel_messages WHERE correlation_id = $1 AND "
            "(created_at > $2 OR (created_at = $2 AND id > $3)) AND "
            "expires_at > $4 AND recovery_claimed = 0 "
            "ORDER BY created_at, id LIMIT $5",
    .claim = "UPDATE {p}channel_messages SET acked_seq = CASE WHEN acked_at "
             "IS NULL THEN $3 ELSE acked_seq END, acked_at = "
             "COALESCE(acked_at, $2) WHERE id = $1 AND recovery_claimed = 0 "
             "AND expires_at > $2 RETURNING acked_at, acked_seq",
    .acked = "SELECT acked_at FROM {p}channel_messages WHERE id = $1",
    .recover = "UPDATE {p}channel_messages SET recovery_claimed = 1 WHERE "
               "id = $1 AND acked_at IS NULL AND recovery_claimed = 0",
    .registrations = "SELECT registration_id, handler FROM {p}recovery_state "
                     "WHERE correlation_id = $1 AND expires_at > $2 "
                     "ORDER BY registration_id",
    .prune_messages = "DELETE FROM {p}channel_messages WHERE rowid IN ("
                      "SELECT rowid FROM {p}channel_messages WHERE "
                      "expires_at < $1 LIMIT 1000)",
    .prune_subscribers = "DELETE FROM {p}channel_subscribers WHERE rowid IN "
                         "(SELECT rowid FROM {p}channel_subscribers WHERE "
                         "expires_at < $1 LIMIT 1000)",
    .prune_recovery = "DELETE FROM {p}recovery_state WHERE rowid IN (SELECT "
                      "rowid FROM {p}recovery_state WHERE expires_at < $1 "
                      "LIMIT 1000)",
    .notify = NULL,
    .reply_by_id = "SELECT id, correlation_id, reply, is_error, error_type, "
                   "error_message, error_detail, created_at, acked_at, "
                   "acked_seq FROM {p}channel_messages WHERE id = $1",
    .registration = "SELECT handler, context FROM {p}recovery_state WHERE "
                    "correlation_id = $1 AND registration_id = $2",
    .subscribe_many = "INSERT INTO {p}channel_subscribers SELECT "
                      "json_extract(value, '$.c'), json_extract(value, "
                      "'$.r'), $2, $4 + $3 * 1000 FROM json_each($1) WHERE "
                      "true ON CONFLICT (correlation_id, registration_id) DO "
                      "UPDATE SET expires_at = excluded.expires_at",
    .scan_many = "SELECT id, correlation_id, reply, is_error, error_type, "
                 "error_message, error_detail, created_at, acked_at, "
                 "acked_seq FROM {p}channel_messages WHERE correlation_id IN "
                 "(SELECT value FROM json_each($1)) AND (created_at > $2 OR "
                 "(created_at = $2 AND id > $3)) AND expires_at > $4 AND "
                 "recovery_claimed = 0 ORDER BY created_at, id LIMIT $5",
    .orphans = "UPDATE {p}channel_messages SET recovery_claimed = 1 WHERE id "
               "IN (SELECT id FROM {p}channel_messages WHERE acked_at IS NULL "
               "AND recovery_claimed = 0 AND created_at < $2 - $1 * 1000 AND "
               "expires_at > $2 AND correlation_id NOT IN (SELECT value FROM "
               "json_each($4)) ORDER BY created_at LIMIT $3) "
               "RETURNING id, correlation_id",
    .mark_dispatched = "UPDATE {p}recovery_state SET dispatched_at = $3 "
                       "WHERE correlation_id = $1 AND registration_id = $2",
    .list_registrations =
        "SELECT correlation_id, registration_id, handler, context, "
        "registered_at, expires_at, dispatched_at, live, state FROM ("
        "SELECT *, CASE WHEN live THEN 0 WHEN dispatched_at IS NOT NULL "
        "THEN 3 WHEN registered_at < $1 - $5 * 1000 THEN 1 ELSE 2 END "
        "AS state FROM (SELECT r.*, EXISTS (SELECT 1 FROM "
        "{p}channel_subscribers s WHERE s.correlation_id = r.correlation_id "
        "AND s.registration_id = r.registration_id AND s.expires_at > $1) "
        "AS live FROM {p}recovery_state r WHERE r.expires_at > $1 AND "
        "(r.registered_at, r.correlation_id, r.registration_id) > "
        "($2, $3, $4))) WHERE $6 = 0 OR (($6 >> state) & 1) = 1 "
        "ORDER BY registered_at, correlation_id, registration_id LIMIT $7",
    .count_stale = "SELECT count(*) FROM {p}recovery_state r WHERE "
                   "r.expires_at > $1 AND r.dispatched_at IS NULL AND "
                   "r.registered_at < $1 - $2 * 1000 AND NOT EXISTS (SELECT "
                   "1 FROM {p}channel_subscribers s WHERE s.correlation_id = "
                   "r.correlation_id AND s.registration_id = "
                   "r.registration_id AND s.expires_at > $1)",
    .count_states =
        "SELECT state, COALESCE(handler, ''), count(*) FROM (SELECT CASE "
        "WHEN EXISTS (SELECT 1 FROM {p}channel_subscribers s WHERE "
        "s.correlation_id = r.correlation_id AND s.registration_id = "
        "r.registration_id AND s.expires_at > $1) THEN 0 WHEN "
        "r.dispatched_at IS NOT NULL THEN 3 WHEN r.registered_at < $1 - $2 "
        "* 1000 THEN 1 ELSE 2 END AS state, CASE WHEN r.dispatched_at IS "
        "NOT NULL THEN r.handler END AS handler FROM {p}recovery_state r "
        "WHERE r.expires_at > $1) GROUP BY 1, 2 ORDER BY 3 DESC, 2",
};
