/* sql_postgres.c - the channel's statements for PostgreSQL: every time
 * that decides a delivery is the database clock (C11); the ack sequence is
 * a SEQUENCE with CACHE 1 so draws are monotonic across sessions (C10). */
#include "channel/channel.h"

#define MS "* interval '1 millisecond'"
#define US_TS(p)                                                               \
    "(timestamptz 'epoch' + " p "::int8 * interval '1 microsecond')"

const sb_channel_templates sb__channel_sql_postgres = {
    .ddl = "CREATE SEQUENCE IF NOT EXISTS {p}channel_ack_seq AS bigint "
           "START 1 INCREMENT 1 CACHE 1 NO CYCLE;\n"
           "CREATE TABLE IF NOT EXISTS {p}channel_messages (\n"
           "  id uuid NOT NULL PRIMARY KEY,\n"
           "  correlation_id text COLLATE \"C\" NOT NULL,\n"
           "  reply bytea NOT NULL,\n"
           "  is_error boolean NOT NULL DEFAULT false,\n"
           "  error_type text,\n"
           "  error_message text,\n"
           "  error_detail text,\n"
           "  created_at timestamptz NOT NULL DEFAULT now(),\n"
           "  expires_at timestamptz NOT NULL,\n"
           "  acked_at timestamptz,\n"
           "  acked_seq bigint,\n"
           "  recovery_claimed boolean NOT NULL DEFAULT false\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_messages_corr_idx\n"
           "  ON {p}channel_messages (correlation_id, created_at, id);\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_messages_exp_idx\n"
           "  ON {p}channel_messages (expires_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_messages_unconfirmed_idx\n"
           "  ON {p}channel_messages (created_at)\n"
           "  WHERE acked_at IS NULL AND NOT recovery_claimed;\n"
           "CREATE TABLE IF NOT EXISTS {p}channel_subscribers (\n"
           "  correlation_id text COLLATE \"C\" NOT NULL,\n"
           "  registration_id uuid NOT NULL,\n"
           "  instance_id text NOT NULL,\n"
           "  expires_at timestamptz NOT NULL,\n"
           "  PRIMARY KEY (correlation_id, registration_id)\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}channel_subscribers_exp_idx\n"
           "  ON {p}channel_subscribers (expires_at);\n"
           "CREATE TABLE IF NOT EXISTS {p}recovery_state (\n"
           "  correlation_id text COLLATE \"C\" NOT NULL,\n"
           "  registration_id uuid NOT NULL,\n"
           "  handler text,\n"
           "  context bytea,\n"
           "  registered_at timestamptz NOT NULL DEFAULT now(),\n"
           "  expires_at timestamptz NOT NULL,\n"
           "  dispatched_at timestamptz,\n"
           "  PRIMARY KEY (correlation_id, registration_id)\n"
           ");\n"
           "CREATE INDEX IF NOT EXISTS {p}recovery_state_exp_idx\n"
           "  ON {p}recovery_state (expires_at);\n"
           "CREATE INDEX IF NOT EXISTS {p}recovery_state_reg_idx\n"
           "  ON {p}recovery_state (registered_at, correlation_id, "
           "registration_id);\n",
    .lock = "SELECT pg_advisory_xact_lock(hashtext('sqlbus-schema:' || "
            "current_schema() || ':{p}'))",
    .watermark = "SELECT (extract(epoch FROM now()) * 1000000)::int8, "
                 "nextval('{p}channel_ack_seq')",
    .seq_next = NULL,
    .subscribe = "INSERT INTO {p}channel_subscribers VALUES ($1, $2::uuid, "
                 "$3, now() + $4::int8 " MS ") ON CONFLICT (correlation_id, "
                 "registration_id) DO UPDATE SET expires_at = "
                 "excluded.expires_at",
    .save_recovery = "INSERT INTO {p}recovery_state (correlation_id, "
                     "registration_id, handler, context, registered_at, "
                     "expires_at) VALUES ($1, $2::uuid, $3, $4, now(), "
                     "now() + $5::int8 " MS ") ON CONFLICT (correlation_id, "
                     "registration_id) DO NOTHING",
    .unsubscribe = "DELETE FROM {p}channel_subscribers WHERE correlation_id "
                   "= $1 AND registration_id = $2::uuid",
    .forget_recovery = "DELETE FROM {p}recovery_state WHERE correlation_id = "
                       "$1 AND registration_id = $2::uuid",
    .live = "SELECT 1 FROM {p}channel_subscribers WHERE correlation_id = $1 "
            "AND expires_at > now() LIMIT 1",
    .insert = "INSERT INTO {p}channel_messages (id, correlation_id, reply, "
              "is_error, error_type, error_message, error_detail, created_at, "
              "expires_at, recovery_claimed) VALUES ($1::uuid, $2, $3, "
              "$4::int8 <> 0, $5, $6, $7, now(), now() + $8::int8 " MS ", "
              "$10::int8 <> 0) ON CONFLICT (id) DO NOTHING RETURNING "
              "created_at",
    .stored = "SELECT created_at, acked_at, acked_seq, recovery_claimed, "
              "correlation_id FROM {p}channel_messages WHERE id = $1::uuid",
    .scan = "SELECT id, correlation_id, reply, is_error, error_type, "
            "error_message, error_detail, created_at, acked_at, acked_seq "
            "FROM {p}channel_messages WHERE correlation_id = $1 AND "
            "(created_at, id) > (" US_TS(
                "$2") ", $3::uuid) AND "
                      "expires_at > now() AND NOT recovery_claimed "
                      "ORDER BY created_at, id LIMIT $5",
    .claim = "UPDATE {p}channel_messages SET acked_seq = CASE WHEN acked_at "
             "IS NULL THEN nextval('{p}channel_ack_seq') ELSE acked_seq END, "
             "acked_at = COALESCE(acked_at, now()) WHERE id = $1::uuid AND "
             "NOT recovery_claimed AND expires_at > now() "
             "RETURNING acked_at, acked_seq",
    .acked = "SELECT acked_at FROM {p}channel_messages WHERE id = $1::uuid",
    .recover = "UPDATE {p}channel_messages SET recovery_claimed = true WHERE "
               "id = $1::uuid AND acked_at IS NULL AND NOT recovery_claimed",
    .registrations = "SELECT registration_id, handler FROM {p}recovery_state "
                     "WHERE correlation_id = $1 AND expires_at > now() "
                     "ORDER BY registration_id",
    .prune_messages = "DELETE FROM {p}channel_messages WHERE ctid IN ("
                      "SELECT ctid FROM {p}channel_messages WHERE "
                      "expires_at < now() LIMIT 1000)",
    .prune_subscribers = "DELETE FROM {p}channel_subscribers WHERE ctid IN "
                         "(SELECT ctid FROM {p}channel_subscribers WHERE "
                         "expires_at < now() LIMIT 1000)",
    .prune_recovery = "DELETE FROM {p}recovery_state WHERE ctid IN (SELECT "
                      "ctid FROM {p}recovery_state WHERE expires_at < now() "
                      "LIMIT 1000)",
    .notify = "SELECT pg_notify($1, $2)",
    .reply_by_id = "SELECT id, correlation_id, reply, is_error, error_type, "
                   "error_message, error_detail, created_at, acked_at, "
                   "acked_seq FROM {p}channel_messages WHERE id = $1::uuid",
    .registration = "SELECT handler, context FROM {p}recovery_state WHERE "
                    "correlation_id = $1 AND registration_id = $2::uuid",
    .subscribe_many = "INSERT INTO {p}channel_subscribers SELECT x.c, x.r, "
                      "$2, now() + $3::int8 " MS " FROM json_to_recordset("
                      "$1::json) AS x(c text, r uuid) ON CONFLICT "
                      "(correlation_id, registration_id) DO UPDATE SET "
                      "expires_at = excluded.expires_at",
    .scan_many = "SELECT id, correlation_id, reply, is_error, error_type, "
                 "error_message, error_detail, created_at, acked_at, "
                 "acked_seq FROM {p}channel_messages WHERE correlation_id = "
                 "ANY (ARRAY(SELECT json_array_elements_text($1::json))) AND "
                 "(created_at, id) > (" US_TS(
                     "$2") ", $3::uuid) AND "
                           "expires_at > now() AND NOT recovery_claimed "
                           "ORDER BY created_at, id LIMIT $5",
    .orphans = "UPDATE {p}channel_messages SET recovery_claimed = true "
               "WHERE id IN (SELECT id FROM {p}channel_messages WHERE "
               "acked_at IS NULL AND NOT recovery_claimed AND created_at < "
               "now() - $1::int8 " MS " AND expires_at > now() AND NOT "
               "correlation_id = ANY (ARRAY(SELECT json_array_elements_text("
               "$4::json))) ORDER BY created_at LIMIT $3 FOR UPDATE SKIP "
               "LOCKED) AND acked_at IS NULL AND NOT recovery_claimed "
               "RETURNING id, correlation_id",
    .mark_dispatched = "UPDATE {p}recovery_state SET dispatched_at = now() "
                       "WHERE correlation_id = $1 AND registration_id = "
                       "$2::uuid",
    .list_registrations =
        "SELECT correlation_id, registration_id, handler, context, "
        "registered_at, expires_at, dispatched_at, live, state FROM ("
        "SELECT *, CASE WHEN live THEN 0 WHEN dispatched_at IS NOT NULL "
        "THEN 3 WHEN registered_at < now() - $5::int8 " MS " THEN 1 ELSE 2 "
        "END AS state FROM (SELECT r.*, EXISTS (SELECT 1 FROM "
        "{p}channel_subscribers s WHERE s.correlation_id = r.correlation_id "
        "AND s.registration_id = r.registration_id AND s.expires_at > "
        "now()) AS live FROM {p}recovery_state r WHERE r.expires_at > now() "
        "AND (r.registered_at, r.correlation_id, r.registration_id) > (" US_TS(
            "$2") ", $3, $4::uuid)) a) b WHERE $6::int8 = 0 OR "
                  "(($6::int8 >> state) & 1) = 1 ORDER BY registered_at, "
                  "correlation_id, registration_id LIMIT $7",
    .count_stale = "SELECT count(*) FROM {p}recovery_state r WHERE "
                   "r.expires_at > now() AND r.dispatched_at IS NULL AND "
                   "r.registered_at < now() - $2::int8 " MS " AND NOT EXISTS "
                   "(SELECT 1 FROM {p}channel_subscribers s WHERE "
                   "s.correlation_id = r.correlation_id AND "
                   "s.registration_id = r.registration_id AND s.expires_at > "
                   "now())",
    .count_states =
        "SELECT state, COALESCE(handler, ''), count(*) FROM (SELECT CASE "
        "WHEN EXISTS (SELECT 1 FROM {p}channel_subscribers s WHERE "
        "s.correlation_id = r.correlation_id AND s.registration_id = "
        "r.registration_id AND s.expires_at > now()) THEN 0 WHEN "
        "r.dispatched_at IS NOT NULL THEN 3 WHEN r.registered_at < now() - "
        "$2::int8 " MS " THEN 1 ELSE 2 END AS state, CASE WHEN "
        "r.dispatched_at IS NOT NULL THEN r.handler END AS handler FROM "
        "{p}recovery_state r WHERE r.expires_at > now()) a GROUP BY 1, 2 "
        "ORDER BY 3 DESC, 2",
};
