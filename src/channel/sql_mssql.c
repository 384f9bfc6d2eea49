/* sql_mssql.c - the channel's statements for SQL Server (T-SQL, through
 * ODBC). Every time that decides a delivery is the database clock (C11),
 * stored to the microsecond so a time read back compares equal to its row
 * (db/tsql.h). The ack sequence is a SEQUENCE; NEXT VALUE FOR may not
 * appear inside CASE, so it is drawn by its own statement (seq_next) and
 * passed to the claim, as SQLite's counter is (C10). Identity columns use
 * a binary collation; correlation ids never start or end with white space
 * (validate.c), so = cannot pad one into another. Ids are char(36) in
 * binary order, the order the scan's cursor compares them in (scan.c). */
#include "channel/channel.h"
#include "db/tsql.h"

#define NOW SB_TSQL_NOW
#define BIN2 "COLLATE " SB_TSQL_BIN2
/* The correlation ids of a JSON array parameter, in the columns'
 * collation (OPENJSON's values carry the database's). */
#define IDS_OF(p)                                                              \
    "(SELECT value " BIN2 " FROM OPENJSON(CAST(" p " AS nvarchar(max))))"
/* A keyset position after (created_at, id) = ($2 microseconds, $3). */
#define AFTER_CURSOR                                                           \
    "(created_at > " SB_TSQL_FROM_US(                                          \
        "$2") " OR (created_at = " SB_TSQL_FROM_US("$2") " AND id > $3))"
#define REPLY_COLUMNS                                                          \
    "id, correlation_id, reply, is_error, error_type, error_message, "         \
    "error_detail, created_at, acked_at, acked_seq"
/* A registration's live waiter: its subscriber row, not lapsed. */
#define LIVE_SUBSCRIBER                                                        \
    "EXISTS (SELECT 1 FROM {p}channel_subscribers s WHERE s.correlation_id "   \
    "= r.correlation_id AND s.registration_id = r.registration_id AND "        \
    "s.expires_at > " NOW ")"
#define IF_NO_INDEX(table, name)                                               \
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "              \
    "OBJECT_ID(N'" table "', N'U') AND name = N'" name "')\n"
/* An index created where absent, through EXEC as the error store's are
 * (errors/sql_mssql.c): the DDL batch compiles as one unit, and a CREATE
 * INDEX naming a column that a table of an older shape lacks would fail
 * that compilation (207) before anything ran, where the catalog check
 * (verify.c) says what is wrong and how to fix it. `def` holds no quote. */
#define INDEX(table, name, def)                                                \
    IF_NO_INDEX(table, name)                                                   \
    "EXEC(N'CREATE INDEX " name " ON " table " " def "');\n"

const sb_channel_templates sb__channel_sql_mssql = {
    .ddl =
        "IF NOT EXISTS (SELECT 1 FROM sys.sequences WHERE name = "
        "N'{p}channel_ack_seq' AND schema_id = SCHEMA_ID())\n"
        "CREATE SEQUENCE {p}channel_ack_seq AS bigint START WITH 1 "
        "INCREMENT BY 1 MINVALUE 1 NO CYCLE;\n"
        "IF OBJECT_ID(N'{p}channel_messages', N'U') IS NULL\n"
        "BEGIN\n"
        "CREATE TABLE {p}channel_messages (\n"
        "  id char(36) " BIN2 " NOT NULL PRIMARY KEY NONCLUSTERED,\n"
        "  correlation_id nvarchar(400) " BIN2 " NOT NULL,\n"
        "  reply varbinary(max) NOT NULL,\n"
        "  is_error bit NOT NULL DEFAULT 0,\n"
        "  error_type nvarchar(max) NULL,\n"
        "  error_message nvarchar(max) NULL,\n"
        "  error_detail nvarchar(max) NULL,\n"
        "  created_at datetime2(7) NOT NULL,\n"
        "  expires_at datetime2(7) NOT NULL,\n"
        "  acked_at datetime2(7) NULL,\n"
        "  acked_seq bigint NULL,\n"
        "  recovery_claimed bit NOT NULL DEFAULT 0\n"
        ");\n"
        /* Clustered on (created_at, id), made with the table: the order
         * replies are written in (created_at is the clock at insert) and
         * roughly the order the prune deletes them in (expires_at is
         * created_at plus their time to live), the recovery claim's
         * order (orphans) and each waiter's within its correlation id.
         * Inserts append and the prune empties whole pages at the old
         * end, which SQL Server deallocates; in a heap (the primary key
         * nonclustered) those pages stay allocated unless each DELETE
         * takes TABLOCK. Unique through id, and narrow (44 bytes), as
         * every other index carries it as its row locator, which
         * correlation_id (up to 800 bytes) would make wide. A heap made
         * by an earlier version stays one: converting it is a DBA's step
         * (docs/backends.md), not a rebuild at some process's open. */
        "EXEC(N'CREATE UNIQUE CLUSTERED INDEX {p}channel_messages_time_idx "
        "ON {p}channel_messages (created_at, id)');\n"
        "END;\n" INDEX(
            "{p}channel_messages", "{p}channel_messages_corr_idx",
            "(correlation_id, created_at, id)") INDEX("{p}channel_messages",
                                                      "{p}channel_messages_exp_idx",
                                                      "(expires_at)")
            INDEX(
                "{p}channel_messages", "{p}channel_messages_unconfirmed_idx",
                "(created_at) WHERE acked_at IS NULL AND recovery_claimed = 0") "IF OBJECT_ID(N'{p}channel_subscribers', N'U') IS NULL\n"
                                                                                "CREATE TABLE {p}channel_subscribers (\n"
                                                                                "  correlation_id nvarchar(400) " BIN2
                                                                                " NOT NULL,\n"
                                                                                "  registration_id char(36) " BIN2
                                                                                " NOT NULL,\n"
                                                                                "  instance_id nvarchar(200) NOT NULL,\n"
                                                                                "  expires_at datetime2(7) NOT NULL,\n"
                                                                                "  PRIMARY KEY (correlation_id, registration_id)\n"
                                                                                ");\n" INDEX(
                                                                                    "{p}channel_subscribers",
                                                                                    "{p}channel_subscribers_exp_idx",
                                                                                    "(expires_at)") "IF OBJECT_ID(N'{p}recovery_state', N'U') IS NULL\n"
                                                                                                    "CREATE TABLE {p}recovery_state (\n"
                                                                                                    "  correlation_id nvarchar(400) " BIN2
                                                                                                    " NOT NULL,\n"
                                                                                                    "  registration_id char(36) " BIN2
                                                                                                    " NOT NULL,\n"
                                                                                                    "  handler nvarchar(200) NULL,\n"
                                                                                                    "  context varbinary(max) NULL,\n"
                                                                                                    "  registered_at datetime2(7) NOT NULL,\n"
                                                                                                    "  expires_at datetime2(7) NOT NULL,\n"
                                                                                                    "  dispatched_at datetime2(7) NULL,\n"
                                                                                                    "  PRIMARY KEY (correlation_id, registration_id)\n"
                                                                                                    ");\n" INDEX(
                                                                                                        "{p}recovery_state",
                                                                                                        "{p}recovery_state_exp_idx",
                                                                                                        "(expires_at)")
                                                                                                        INDEX(
                                                                                                            "{p}recovery_state",
                                                                                                            "{p}recovery_state_reg_idx",
                                                                                                            "(registered_at, correlation_id, registration_id)"),
    .lock = SB_TSQL_SCHEMA_LOCK,
    .watermark = "SELECT " SB_TSQL_NOW_US ", 0",
    .seq_next = "SELECT NEXT VALUE FOR {p}channel_ack_seq",
    .subscribe =
        "MERGE {p}channel_subscribers WITH (HOLDLOCK) AS s USING (SELECT "
        "CAST($1 AS nvarchar(400)) AS c, CAST($2 AS char(36)) AS r) AS x ON "
        "s.correlation_id = x.c AND s.registration_id = x.r WHEN MATCHED "
        "THEN UPDATE SET expires_at = " SB_TSQL_PLUS_MS(
            "$4") " WHEN NOT MATCHED THEN INSERT (correlation_id, registration_id, "
                  "instance_id, expires_at) VALUES (x.c, x.r, $3, " SB_TSQL_PLUS_MS(
                      "$4") ");",
    .save_recovery =
        "INSERT INTO {p}recovery_state (correlation_id, registration_id, "
        "handler, context, registered_at, expires_at) SELECT $1, $2, $3, "
        "CAST($4 AS varbinary(max)), " NOW ", " SB_TSQL_PLUS_MS(
            "$5") " WHERE NOT EXISTS (SELECT 1 FROM {p}recovery_state WITH (UPDLOCK, "
                  "HOLDLOCK) WHERE correlation_id = $1 AND registration_id = $2)",
    .unsubscribe = "DELETE FROM {p}channel_subscribers WHERE correlation_id "
                   "= $1 AND registration_id = $2",
    .forget_recovery = "DELETE FROM {p}recovery_state WHERE correlation_id = "
                       "$1 AND registration_id = $2",
    .live = "SELECT TOP (1) 1 FROM {p}channel_subscribers WHERE "
            "correlation_id = $1 AND expires_at > " NOW,
    /* ON CONFLICT DO NOTHING RETURNING created_at: the row's time only
     * when this statement inserted it. */
    .insert =
        "DECLARE @stored TABLE (created_at datetime2(7)); "
        "INSERT INTO {p}channel_messages (id, correlation_id, reply, "
        "is_error, error_type, error_message, error_detail, created_at, "
        "expires_at, recovery_claimed) OUTPUT inserted.created_at INTO "
        "@stored SELECT $1, $2, $3, CASE WHEN $4 <> 0 THEN 1 ELSE 0 END, $5, "
        "$6, $7, " NOW ", " SB_TSQL_PLUS_MS(
            "$8") ", CASE WHEN $10 <> 0 "
                  "THEN 1 ELSE 0 END WHERE NOT EXISTS (SELECT 1 FROM "
                  "{p}channel_messages WITH (UPDLOCK, HOLDLOCK) WHERE id = $1); "
                  "SELECT created_at FROM @stored",
    .stored = "SELECT created_at, acked_at, acked_seq, recovery_claimed, "
              "correlation_id FROM {p}channel_messages WHERE id = $1",
    .scan = "SELECT TOP (CAST($5 AS int)) " REPLY_COLUMNS " FROM "
            "{p}channel_messages WHERE correlation_id = $1 AND " AFTER_CURSOR
            " AND expires_at > " NOW " AND recovery_claimed = 0 ORDER BY "
            "created_at, id",
    /* $3: the sequence value seq_next drew; taken only on the null ->
     * acked transition (SET sees the row as it was). */
    .claim = "UPDATE {p}channel_messages SET acked_seq = CASE WHEN acked_at "
             "IS NULL THEN $3 ELSE acked_seq END, acked_at = "
             "COALESCE(acked_at, " NOW ") OUTPUT inserted.acked_at, "
             "inserted.acked_seq WHERE id = $1 AND recovery_claimed = 0 AND "
             "expires_at > " NOW,
    .acked = "SELECT acked_at FROM {p}channel_messages WHERE id = $1",
    .recover =
        "UPDATE {p}channel_messages SET recovery_claimed = 1 WHERE "
        "id = $1 AND acked_at IS NULL AND recovery_claimed = 0" SB_TSQL_ROWCOUNT,
    .registrations = "SELECT registration_id, handler FROM {p}recovery_state "
                     "WHERE correlation_id = $1 AND expires_at > " NOW
                     " ORDER BY registration_id",
    .prune_messages = "DELETE TOP (1000) FROM {p}channel_messages WHERE "
                      "expires_at < " NOW,
    .prune_subscribers = "DELETE TOP (1000) FROM {p}channel_subscribers "
                         "WHERE expires_at < " NOW,
    .prune_recovery = "DELETE TOP (1000) FROM {p}recovery_state WHERE "
                      "expires_at < " NOW,
    .notify = NULL,
    .reply_by_id = "SELECT " REPLY_COLUMNS " FROM {p}channel_messages WHERE "
                   "id = $1",
    .registration = "SELECT handler, context FROM {p}recovery_state WHERE "
                    "correlation_id = $1 AND registration_id = $2",
    .subscribe_many =
        "MERGE {p}channel_subscribers WITH (HOLDLOCK) AS s USING (SELECT c " BIN2
        " AS c, r " BIN2 " AS r FROM OPENJSON(CAST($1 AS "
        "nvarchar(max))) WITH (c nvarchar(400) '$.c', r char(36) '$.r')) AS "
        "x ON s.correlation_id = x.c AND s.registration_id = x.r WHEN "
        "MATCHED THEN UPDATE SET expires_at = " SB_TSQL_PLUS_MS(
            "$3") " WHEN NOT MATCHED THEN INSERT (correlation_id, registration_id, "
                  "instance_id, expires_at) VALUES (x.c, x.r, $2, " SB_TSQL_PLUS_MS(
                      "$3") ");",
    .scan_many = "SELECT TOP (CAST($5 AS int)) " REPLY_COLUMNS " FROM "
                 "{p}channel_messages WHERE correlation_id IN " IDS_OF(
                     "$1") " AND " AFTER_CURSOR " AND expires_at > " NOW " AND "
                           "recovery_claimed = 0 ORDER BY created_at, id",
    /* Replies no waiter confirmed within $1 ms, of ids with no waiter in
     * this process ($4), at most $3, skipping rows others hold. */
    .orphans =
        "WITH o AS (SELECT TOP (CAST($3 AS int)) id, correlation_id, "
        "recovery_claimed FROM {p}channel_messages WITH (UPDLOCK, ROWLOCK, "
        "READPAST) WHERE acked_at IS NULL AND recovery_claimed = 0 AND "
        "created_at < " SB_TSQL_MINUS_MS(
            "$1") " AND expires_at > " NOW
                  " AND correlation_id NOT IN " IDS_OF(
                      "$4") " ORDER BY created_at) "
                            "UPDATE o SET recovery_claimed = 1 OUTPUT inserted.id, "
                            "inserted.correlation_id",
    .mark_dispatched = "UPDATE {p}recovery_state SET dispatched_at = " NOW
                       " WHERE correlation_id = $1 AND registration_id = $2",
    /* States: 0 live, 1 stale, 2 orphaned, 3 dispatched; $6 a bit mask of
     * the wanted ones (0 = all); keyset after ($2 us, $3, $4). */
    .list_registrations =
        "SELECT TOP (CAST($7 AS int)) correlation_id, registration_id, "
        "handler, context, registered_at, expires_at, dispatched_at, live, "
        "state FROM (SELECT a.*, CASE WHEN a.live = 1 THEN 0 WHEN "
        "a.dispatched_at IS NOT NULL THEN 3 WHEN a.registered_at < " SB_TSQL_MINUS_MS(
            "$5") " THEN 1 ELSE 2 END AS state FROM (SELECT "
                  "r.correlation_id, r.registration_id, r.handler, r.context, "
                  "r.registered_at, r.expires_at, r.dispatched_at, CASE WHEN " LIVE_SUBSCRIBER
                  " THEN 1 ELSE 0 END AS live FROM {p}recovery_state r "
                  "WHERE r.expires_at > " NOW
                  " AND (r.registered_at > " SB_TSQL_FROM_US("$2") " OR (r.registered_at = " SB_TSQL_FROM_US(
                      "$2") " AND (r.correlation_id > $3 OR (r.correlation_id = $3 AND "
                            "r.registration_id > $4))))) a) b WHERE $6 = 0 OR (CAST($6 AS "
                            "bigint) / POWER(CAST(2 AS bigint), state)) % 2 = 1 ORDER BY "
                            "registered_at, correlation_id, registration_id",
    .count_stale =
        "SELECT COUNT(*) FROM {p}recovery_state r WHERE "
        "r.expires_at > " NOW " AND r.dispatched_at IS NULL AND "
        "r.registered_at < " SB_TSQL_MINUS_MS("$2") " AND NOT " LIVE_SUBSCRIBER,
    .count_states =
        "SELECT state, COALESCE(handler, N''), COUNT(*) FROM (SELECT CASE "
        "WHEN " LIVE_SUBSCRIBER " THEN 0 WHEN r.dispatched_at IS NOT NULL "
        "THEN 3 WHEN r.registered_at < " SB_TSQL_MINUS_MS(
            "$2") " THEN 1 "
                  "ELSE 2 END AS state, CASE WHEN r.dispatched_at IS NOT NULL THEN "
                  "r.handler END AS handler FROM {p}recovery_state r WHERE "
                  "r.expires_at > " NOW ") a GROUP BY state, handler ORDER BY "
                  "COUNT(*) DESC, COALESCE(handler, N'')",
};
