/* test_sql_mssql.c - the transport's T-SQL pinned to the rules of issue 6
 * and the seed (no server needed; no SQL Server runs in CI, so these are
 * the checks every build makes of that text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sql_text.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/tsql.h"
#include "transport/sql_dialect.h"
#include "transport/transport.h"

#define SENTINEL_1                                                             \
    "queue = $1 AND queue + N'.' = $1 + N'.' COLLATE Latin1_General_100_BIN2"

typedef struct named {
    const char *name;
    const char *sql;
} named;

static sb_transport_sql *build(void)
{
    sb_transport_sql *s = NULL;
    sb_error err;
    assert_int_equal(sb__transport_sql_new(SB_DIALECT_MSSQL, "t_", &s, &err),
                     SB_OK);
    return s;
}

/* The script of `schema print --backend mssql` before the prefix is
 * put in: the tables, then the indexes. */
static const char *mssql_schema(void)
{
    static char text[16384];
    int n = snprintf(text, sizeof text, "%s%s", sb__sql_mssql_tables,
                     sb__sql_mssql_indexes);
    if (n < 0 || (size_t)n >= sizeof text)
        fail_msg("the SQL Server schema is over %zu bytes", sizeof text);
    return text;
}

static size_t all_of(const sb_transport_sql *s, named out[64])
{
    const named all[] = {
        {"ddl", s->ddl},
        {"lock", s->lock},
        {"index_ddl", s->index_ddl},
        {"insert1", s->insert[0]},
        {"insert10", s->insert[1]},
        {"insert100", s->insert[2]},
        {"claim", s->claim},
        {"claim_delete", s->claim_delete},
        {"ack", s->ack},
        {"nak", s->nak},
        {"hand_back", s->hand_back},
        {"renew", s->renew},
        {"dead_letter", s->dead_letter},
        {"dlq_insert", s->dlq_insert},
        {"delete_any", s->delete_any},
        {"pending", s->pending},
        {"stats", s->stats},
        {"dlq_stats", s->dlq_stats},
        {"dlq_list", s->dlq_list},
        {"peek", s->peek},
        {"prune", s->prune},
        {"columns", s->columns},
        {"indexes", s->indexes},
        {"counts_add", s->counts_add},
        {"counts_list", s->counts_list},
        {"counts_prune", s->counts_prune},
        {"upgrade", s->upgrade},
        {"insert_ex1", s->insert_ex[0]},
        {"insert_ex10", s->insert_ex[1]},
        {"insert_ex100", s->insert_ex[2]},
        {"claim_prio", s->claim_prio},
        {"mark_prioritized", s->mark_prioritized},
        {"settings_get", s->settings_get},
        {"settings_list", s->settings_list},
        {"settings_pause", s->settings_pause},
        {"cancel_get", s->cancel_get},
        {"progress_set", s->progress_set},
        {"schedule_put", s->schedule_put},
        {"schedule_remove", s->schedule_remove},
        {"schedule_list", s->schedule_list},
        {"schedule_due", s->schedule_due},
        {"schedule_settle", s->schedule_settle},
        {"schedule_wake", s->schedule_wake},
        {"heartbeat_beat", s->heartbeat_beat},
        {"heartbeat_stop", s->heartbeat_stop},
        {"heartbeat_list", s->heartbeat_list},
        {"heartbeat_monitor", s->heartbeat_monitor},
        {"heartbeat_remove", s->heartbeat_remove},
        {"setting_get", s->setting_get},
        {"setting_put", s->setting_put},
        {"setting_remove", s->setting_remove},
        {"setting_list", s->setting_list},
    };
    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        if (all[i].sql == NULL)
            fail_msg("statement %s is missing", all[i].name);
        out[i] = all[i];
    }
    return n;
}

/* T14 and the seed: the claim skips held rows, in the dequeue index's
 * order, matching the queue exactly. */
static void test_claim_shape(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    const named c[] = {{"claim", s->claim}, {"claim_delete", s->claim_delete}};
    for (size_t i = 0; i < 2; i++) {
        sbt_has(c[i].name, c[i].sql, "WITH (UPDLOCK, ROWLOCK, READPAST)");
        sbt_has(c[i].name, c[i].sql, "ORDER BY available_at, created_at)");
        sbt_has(c[i].name, c[i].sql, SENTINEL_1);
        sbt_has(c[i].name, c[i].sql, "SELECT TOP (CAST($5 AS int))");
        /* OUTPUT promises no order: the rows come back sorted. */
        sbt_has(c[i].name, c[i].sql,
                "FROM @claimed ORDER BY available_at, created_at");
    }
    sbt_has("claim", s->claim, "attempts = attempts + 1");
    sbt_has("claim", s->claim, "lock_id = $4");
    /* Leased rows leave the front of the dequeue index. */
    sbt_has("claim", s->claim, ", available_at = DATEADD(millisecond, CAST($3");
    sbt_has("claim", s->claim,
            "deleted.available_at, deleted.priority, deleted.expires_at INTO "
            "@claimed");
    sbt_has("renew", s->renew, ", available_at = DATEADD(millisecond, CAST($4");
    sbt_has("claim_delete", s->claim_delete, "deleted.attempts + 1");
    sb__transport_sql_free(s);
}

/* T40: every claim returns the expiry after available_at and the
 * priority (SB_CLAIM_COL_*), and the server's clock is read apart; a
 * message's expiry is its publish time plus expires_ms, NULL without one;
 * the sweeps lock the rows they dead-letter and skip held ones, and only
 * rows no lease holds; a queue's time to live is an upsert; the expiry
 * index is filtered to the rows that have one. */
static void test_expiry_shape(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    const named c[] = {{"claim", s->claim},
                       {"claim_delete", s->claim_delete},
                       {"claim_prio", s->claim_prio}};
    for (size_t i = 0; i < 3; i++) {
        sbt_has(c[i].name, c[i].sql,
                "SELECT id, payload, headers, attempts, lock_id, created_at, "
                "queue, available_at, priority, expires_at FROM @claimed "
                "ORDER BY ");
        sbt_has(c[i].name, c[i].sql,
                "priority smallint, expires_at datetime2)");
    }
    sbt_has("insert_ex1", s->insert_ex[0],
            "v.priority, DATEADD(millisecond, CAST(v.expires_ms % 86400000");
    sbt_has("insert_ex1", s->insert_ex[0],
            "CAST(x.expires_ms AS bigint) AS expires_ms");
    const named w[] = {{"expire_due", s->expire_due},
                       {"expire_ttl", s->expire_ttl}};
    for (size_t i = 0; i < 2; i++) {
        sbt_has(w[i].name, w[i].sql, "SELECT TOP (CAST($2 AS int)) id, ");
        sbt_has(w[i].name, w[i].sql, "WITH (UPDLOCK, ROWLOCK, READPAST)");
        sbt_has(w[i].name, w[i].sql,
                "AND (locked_until IS NULL OR locked_until <= "
                "CAST(SYSUTCDATETIME() AS datetime2(6)))");
    }
    sbt_has("expire_due", s->expire_due,
            "WHERE expires_at <= CAST(SYSUTCDATETIME() AS datetime2(6))");
    sbt_has("expire_ttl", s->expire_ttl,
            "queue = $3 AND queue + N'.' = $3 + N'.' COLLATE "
            "Latin1_General_100_BIN2");
    sbt_has("expire_ttl", s->expire_ttl,
            "created_at <= DATEADD(millisecond, -CAST($4 % 86400000");
    sbt_has("clock_now", s->clock_now,
            "SELECT CAST(SYSUTCDATETIME() AS datetime2(6))");
    sbt_has("settings_ttl", s->settings_ttl,
            "WHEN MATCHED THEN UPDATE SET ttl_ms = x.ttl_ms");
    sbt_has("schema", mssql_schema(),
            "CREATE INDEX {p}messages_expires_idx\n  ON {p}messages "
            "(expires_at) WHERE expires_at IS NOT NULL;");
    sb__transport_sql_free(s);
}

/* T38: a key's publishes are serialised by an application lock owned
 * by the transaction and checked; the holder and window lookups and the
 * cancel by key compare the queue and the key exactly (the padding
 * sentinel, binary collation); a window is an upsert; the index of keys
 * is filtered to the rows that have one. */
static void test_unique_shape(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    sbt_has("unique_lock", s->unique_lock,
            "N'sqlbus:uk:' + CAST($1 AS nvarchar(30))");
    sbt_has("unique_lock", s->unique_lock,
            "@LockMode = N'Exclusive', @LockOwner = N'Transaction'");
    sbt_has("unique_lock", s->unique_lock, "IF @sb_rc = -1 THROW");
    sbt_has("unique_holder", s->unique_holder,
            "unique_key = $2 AND unique_key + N'.' = $2 + N'.' COLLATE "
            "Latin1_General_100_BIN2");
    sbt_has("unique_holder", s->unique_holder,
            "(CAST($4 AS int) = 0 OR locked_until IS NULL OR locked_until <= "
            "CAST(SYSUTCDATETIME() AS datetime2(6)))");
    sbt_has("unique_window_get", s->unique_window_get,
            "AND until > CAST(SYSUTCDATETIME() AS datetime2(6))");
    sbt_has("unique_window_put", s->unique_window_put,
            "MERGE t_unique_keys WITH (HOLDLOCK)");
    sbt_has("unique_prune", s->unique_prune,
            "DELETE TOP (CAST($2 AS int)) FROM t_unique_keys WHERE until <=");
    sbt_has("cancel_key_get", s->cancel_key_get,
            "FROM t_messages WITH (UPDLOCK, ROWLOCK) WHERE queue = $1");
    sbt_has("peek", s->peek, "expires_at, unique_key FROM");
    sbt_has("schema", mssql_schema(),
            "CREATE INDEX {p}messages_unique_idx\n  ON {p}messages (queue, "
            "unique_key) WHERE unique_key IS NOT NULL;");
    sbt_has("schema", mssql_schema(),
            "unique_key nvarchar(255) COLLATE Latin1_General_100_BIN2 NOT "
            "NULL");
    sbt_has("schema", mssql_schema(),
            "CREATE INDEX {p}unique_keys_until_idx ON {p}unique_keys "
            "(until);");
    sb__transport_sql_free(s);
}

/* T36: a limited queue's claim locks its settings row until the
 * transaction ends (UPDLOCK, ROWLOCK: no READPAST, a second claimer
 * waits), counts its leased rows (a lease moves available_at to its end,
 * so the claim index is read from now on) up to the limit, refills the
 * bucket from the server's clock, capped at rate_limit, and never moves
 * rate_at back; setting the limits makes the bucket full. */
static void test_limits_shape(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    sbt_has("limit_lock", s->limit_lock,
            "SELECT max_running, rate_limit, rate_interval_ms, "
            "CAST(FLOOR((CASE WHEN (COALESCE(rate_tokens, rate_limit) + ");
    sbt_has("limit_lock", s->limit_lock,
            "FROM t_queue_settings WITH (UPDLOCK, ROWLOCK) WHERE queue = $1 "
            "AND queue + N'.' = $1 + N'.' COLLATE Latin1_General_100_BIN2");
    sbt_lacks("limit_lock", s->limit_lock, "READPAST");
    sbt_has("limit_lock", s->limit_lock,
            "DATEDIFF_BIG(microsecond, COALESCE(rate_at, "
            "CAST(SYSUTCDATETIME() AS datetime2(6))), CAST(SYSUTCDATETIME() "
            "AS datetime2(6))) / 1000.0");
    sbt_has("limit_lock", s->limit_lock,
            " > rate_limit THEN CAST(rate_limit AS float) ELSE ");
    sbt_has("limit_lock", s->limit_lock,
            " * rate_limit / rate_interval_ms) END) * 1000) AS bigint)");
    sbt_has("limit_running", s->limit_running,
            "SELECT COUNT(*) FROM (SELECT TOP (CAST($3 AS int)) 1 AS x FROM "
            "t_messages WHERE queue = $1 AND ");
    sbt_has("limit_running", s->limit_running,
            "AND available_at > CAST(SYSUTCDATETIME() AS datetime2(6)) AND "
            "locked_until > CAST(SYSUTCDATETIME() AS datetime2(6))) AS r");
    sbt_has("limit_take", s->limit_take,
            "UPDATE t_queue_settings SET rate_tokens = (CASE WHEN ");
    sbt_has("limit_take", s->limit_take,
            ") - $2, rate_at = CASE WHEN rate_at > CAST(SYSUTCDATETIME() AS "
            "datetime2(6)) THEN rate_at ELSE CAST(SYSUTCDATETIME() AS "
            "datetime2(6)) END WHERE queue = $1 AND ");
    sbt_has("limit_take", s->limit_take, "AND rate_limit IS NOT NULL");
    sbt_has("settings_limits", s->settings_limits,
            "WHEN MATCHED THEN UPDATE SET max_running = x.max_running, "
            "rate_limit = x.rate_limit, rate_interval_ms = "
            "x.rate_interval_ms, rate_tokens = NULL, rate_at = NULL");
    sbt_has("settings_limits", s->settings_limits,
            "CAST($2 AS int) AS max_running, CAST($3 AS int) AS rate_limit, "
            "CAST($4 AS bigint) AS rate_interval_ms");
    sb__transport_sql_free(s);
}

/* T34: a queue without priorities claims priority 0 in time order (the
 * claim index's seek); a prioritized one orders by priority first. The
 * publish with priorities inserts each row's priority, deduplicated by id
 * as the plain insert is; the queue is flagged once, in the publish's
 * transaction; pausing is an upsert (T35). */
static void test_priority_shape(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    sbt_has("claim", s->claim, "AND priority = 0 AND available_at <= ");
    sbt_has("claim_delete", s->claim_delete, "AND priority = 0 AND ");
    sbt_lacks("claim_prio", s->claim_prio, "priority = 0");
    sbt_has("claim_prio", s->claim_prio,
            "ORDER BY priority DESC, available_at, created_at)");
    sbt_has("claim_prio", s->claim_prio, "WITH (UPDLOCK, ROWLOCK, READPAST)");
    sbt_has("claim_prio", s->claim_prio, "lock_id = $4 OUTPUT");
    sbt_has("insert_ex1", s->insert_ex[0],
            "attempts, priority, expires_at, unique_key) SELECT v.id, $1, "
            "v.payload");
    sbt_has("insert_ex1", s->insert_ex[0], "($3, $4, $5, $6, $7, $8, $9, 0)");
    sbt_has("insert_ex10", s->insert_ex[1],
            "($66, $67, $68, $69, $70, $71, $72, 9)");
    sbt_has("insert_ex1", s->insert_ex[0],
            "AS x (id, payload, headers, delay_ms, priority, expires_ms, "
            "unique_key, ord)");
    sbt_has("insert_ex1", s->insert_ex[0], "WHERE v.rn = 1 AND NOT EXISTS");
    sbt_has("mark_prioritized", s->mark_prioritized,
            "IF NOT EXISTS (SELECT 1 FROM t_queue_settings WHERE queue = $1");
    sbt_has("mark_prioritized", s->mark_prioritized,
            "MERGE t_queue_settings WITH (HOLDLOCK)");
    sbt_has("settings_pause", s->settings_pause,
            "WHEN MATCHED THEN UPDATE SET paused = x.paused");
    sbt_has("upgrade", s->upgrade,
            "DROP INDEX t_messages_ready_idx ON t_messages");
    /* T39: the row locked for the cancel's transaction, with the flag of
     * a lease held now. */
    sbt_has("cancel_get", s->cancel_get,
            "FROM t_messages WITH (UPDLOCK, ROWLOCK) WHERE id = $1 AND "
            "queue = $2");
    /* T42: progress is fenced like a renewal and its row count read;
     * a nak and a hand-back clear it; peek returns it. */
    sbt_has("progress_set", s->progress_set,
            "UPDATE t_messages SET progress = $3 WHERE id = $1 AND lock_id "
            "= $2; SELECT @@ROWCOUNT");
    sbt_has("nak", s->nak, "progress = NULL WHERE id = $1 AND lock_id = $2");
    sbt_has("hand_back", s->hand_back, "lock_id = NULL, progress = NULL");
    sbt_has("peek", s->peek,
            "locked_until, priority, progress, expires_at, unique_key FROM");
    sbt_has("cancel_get", s->cancel_get,
            "CASE WHEN locked_until > CAST(SYSUTCDATETIME() AS datetime2(6)) "
            "THEN 1 ELSE 0 END");
    /* The range of T34 exactly, and no wider an index entry. */
    sbt_has("ddl", s->ddl, "priority smallint NOT NULL DEFAULT 0");
    sbt_has("insert_ex1", s->insert_ex[0], "CAST(x.priority AS smallint)");
    sb__transport_sql_free(s);
}

/* Every comparison of queue with a value carries the padding sentinel
 * after the plain (index-seeking) one. */
static void test_queue_sentinel_everywhere(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    named all[64];
    size_t n = all_of(s, all);
    for (size_t i = 0; i < n; i++) {
        const char *p = all[i].sql;
        while ((p = strstr(p, "queue = ")) != NULL) {
            /* "c.queue = x.queue" in the counts MERGE; "queue = $1" else. */
            const char *rhs = p + strlen("queue = ");
            char lhs_col[16] = "queue", arg[16];
            size_t k = 0;
            while (rhs[k] && rhs[k] != ' ' && k + 1 < sizeof arg) {
                arg[k] = rhs[k];
                k++;
            }
            arg[k] = '\0';
            if (p > all[i].sql && p[-1] == '.')
                snprintf(lhs_col, sizeof lhs_col, "%.2squeue", p - 2);
            char want[160];
            snprintf(want, sizeof want,
                     "%s = %s AND %s + N'.' = %s + N'.' COLLATE "
                     "Latin1_General_100_BIN2",
                     lhs_col, arg, lhs_col, arg);
            sbt_has(all[i].name, all[i].sql, want);
            p = rhs;
        }
    }
    sb__transport_sql_free(s);
}

/* Lease fences and bounded deletes count through SELECT @@ROWCOUNT, which
 * a server-wide SET NOCOUNT ON cannot hide (the driver reads it). */
static void test_fences_count_by_rowcount(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    const named f[] = {{"ack", s->ack},
                       {"nak", s->nak},
                       {"hand_back", s->hand_back},
                       {"renew", s->renew},
                       {"dead_letter", s->dead_letter},
                       {"delete_any", s->delete_any},
                       {"prune", s->prune}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        size_t len = strlen(f[i].sql);
        const char *tail = "; SELECT @@ROWCOUNT";
        if (len < strlen(tail) ||
            strcmp(f[i].sql + len - strlen(tail), tail) != 0)
            fail_msg("%s does not end in SELECT @@ROWCOUNT:\n%s", f[i].name,
                     f[i].sql);
    }
    for (size_t i = 0; i < 4; i++)
        sbt_has(f[i].name, f[i].sql, "WHERE id = $1 AND lock_id = $2");
    /* Retention deletes in bounded batches. */
    sbt_has("prune", s->prune, "DELETE TOP (CAST($3 AS int))");
    sb__transport_sql_free(s);
}

/* T3: idempotent publish - insert where absent under a key-range lock,
 * duplicates within one statement folded (first wins), and the largest
 * insert far under SQL Server's 2,100-parameter cap. */
static void test_publish_insert_if_absent(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    for (int i = 0; i < 3; i++) {
        sbt_has("insert", s->insert[i],
                "NOT EXISTS (SELECT 1 FROM t_messages AS m WITH (UPDLOCK, "
                "HOLDLOCK) WHERE m.id = v.id)");
        sbt_has("insert", s->insert[i],
                "ROW_NUMBER() OVER (PARTITION BY x.id ORDER BY x.ord)");
        sbt_has("insert", s->insert[i], "WHERE v.rn = 1");
    }
    int max = 0;
    for (const char *p = s->insert[2]; (p = strchr(p, '$')) != NULL; p++) {
        int v = (int)strtol(p + 1, NULL, 10);
        if (v > max)
            max = v;
    }
    assert_int_equal(max, 2 + 4 * 100);
    assert_true(max < 2100);
    /* The 100 rows carry ordinals 0..99. */
    sbt_has("insert100", s->insert[2], ", 99)");
    sbt_has("dlq_insert", s->dlq_insert, "WITH (UPDLOCK, HOLDLOCK)");
    sb__transport_sql_free(s);
}

/* T5 and the seed's schema: database time as datetime2(7), binary queue
 * collation, a nonclustered key, the dequeue index, DDL under
 * sp_getapplock (schema-wide for tables, table-scoped with a bounded
 * LOCK_TIMEOUT for indexes). */
static void test_schema_and_locks(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    sbt_has("ddl", s->ddl, "created_at datetime2(7) NOT NULL");
    sbt_has("ddl", s->ddl, "available_at datetime2(7) NOT NULL");
    sbt_has("ddl", s->ddl, "locked_until datetime2(7) NULL");
    sbt_has("ddl", s->ddl,
            "queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL");
    sbt_has("ddl", s->ddl,
            "id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED");
    sbt_has("ddl", s->ddl, "IF OBJECT_ID(N't_messages', N'U') IS NULL");
    sbt_lacks("ddl", s->ddl, "CREATE INDEX");
    sbt_has("lock", s->lock, "sp_getapplock");
    sbt_has("lock", s->lock, "@LockOwner = N'Transaction'");
    sbt_has("lock", s->lock, "N'sqlbus:ddl:' + SCHEMA_NAME();");
    sbt_has("index_ddl", s->index_ddl, "BEGIN TRY");
    sbt_has("index_ddl", s->index_ddl, "SET LOCK_TIMEOUT 10000;");
    sbt_has("index_ddl", s->index_ddl, "SCHEMA_NAME() + N'.t_messages'");
    sbt_has("index_ddl", s->index_ddl,
            "ON t_messages (queue, priority DESC, available_at, created_at)");
    sbt_has("index_ddl", s->index_ddl, "ON t_messages (created_at)");
    sbt_has("index_ddl", s->index_ddl,
            "BEGIN CATCH\nSET LOCK_TIMEOUT -1;\nTHROW;");
    sbt_applock_checked("lock", s->lock);
    sbt_applock_checked("index_ddl", s->index_ddl);
    /* The script for DBAs: tables and indexes, no locks. */
    sbt_lacks("schema", mssql_schema(), "sp_getapplock");
    sbt_has("schema", mssql_schema(), "{p}messages_claim_idx");
    sb__transport_sql_free(s);
}

/* Nothing of another dialect leaks in; every time is the server's UTC. */
static void test_no_foreign_dialect(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    named all[64];
    size_t n = all_of(s, all);
    static const char *const bad[] = {
        "::",      "now()",         " LIMIT ",     "RETURNING", "ON CONFLICT",
        "GETDATE", "SYSDATETIME()", "SKIP LOCKED", "{p}"};
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
            sbt_lacks(all[i].name, all[i].sql, bad[b]);
    assert_null(s->notify);
    assert_null(s->ack_many);
    sb__transport_sql_free(s);
}

/* T33, `schema print --backend mssql`: the transport's script, the
 * channel's (sb_channel_schema_sql) and the error store's
 * (sb_errors_schema_sql) beside it. */
static void test_schema_print(void **state)
{
    (void)state;
    char *sql = NULL;
    sb_error err;
    assert_int_equal(sb_schema_sql("mssql", "app_", &sql, &err), SB_OK);
    sbt_has("print", sql, "CREATE TABLE app_messages");
    sbt_has("print", sql, "CREATE CLUSTERED INDEX app_messages_created_idx");
    sb_free(sql);
    assert_int_equal(sb_channel_schema_sql("mssql", "app_", &sql, &err), SB_OK);
    sbt_has("channel print", sql, "CREATE SEQUENCE app_channel_ack_seq");
    sbt_lacks("channel print", sql, "sp_getapplock");
    sb_free(sql);
    /* The error store's, its full-text part last. */
    assert_int_equal(sb_errors_schema_sql("mssql", "app_", &sql, &err), SB_OK);
    sbt_has("errors print", sql, "CREATE TABLE app_failed_messages");
    const char *ft =
        strstr(sql, "CREATE FULLTEXT INDEX ON app_failed_messages");
    assert_non_null(ft);
    sbt_lacks("errors print, after full-text", ft, "CREATE TABLE");
    sb_free(sql);
    assert_int_equal(sb_errors_schema_sql("oracle", NULL, &sql, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "backend");
}

/* The driver's side of the contract: which texts report their row count
 * through SELECT @@ROWCOUNT (db.h), every fenced statement among them. */
static void test_rowcount_contract(void **state)
{
    (void)state;
    static const char *const yes[] = {
        "UPDATE t SET a = 1; SELECT @@ROWCOUNT",
        "DELETE FROM t WHERE id = $1;\nselect   @@rowcount ; \n",
        "SELECT @@ROWCOUNT", "x;\tSELECT\t@@ROWCOUNT;;"};
    static const char *const no[] = {"UPDATE t SET a = 1",
                                     "SELECT @@ROWCOUNT + 1",
                                     "SELECT @@ROWCOUNTS",
                                     "UNSELECT @@ROWCOUNT",
                                     "x.SELECT@@ROWCOUNT",
                                     "@@ROWCOUNT",
                                     ""};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!sb__tsql_ends_with_rowcount(yes[i]))
            fail_msg("not read as a row count: %s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (sb__tsql_ends_with_rowcount(no[i]))
            fail_msg("read as a row count: %s", no[i]);
    sb_transport_sql *s = build();
    const char *fenced[] = {s->ack,   s->nak,         s->hand_back,
                            s->renew, s->dead_letter, s->delete_any,
                            s->prune};
    for (size_t i = 0; i < sizeof fenced / sizeof fenced[0]; i++)
        assert_true(sb__tsql_ends_with_rowcount(fenced[i]));
    assert_false(sb__tsql_ends_with_rowcount(s->claim));
    sb__transport_sql_free(s);
}

/* Issue 17: messages is clustered (not a heap: pages emptied by acks
 * would stay allocated) on created_at, a key no claim, renewal or nak
 * changes, so those update the row in place; the primary key stays
 * nonclustered; a table that has a clustered index already gets the
 * created index nonclustered, and one that has that index keeps it.
 * Verification finds either. */
static void test_clustered_by_creation_time(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    const char *ix = s->index_ddl;
    sbt_has("index_ddl", ix,
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "
            "OBJECT_ID(N't_messages', N'U') AND name = "
            "N't_messages_created_idx')\nBEGIN\nIF EXISTS (SELECT 1 FROM "
            "sys.indexes WHERE object_id = OBJECT_ID(N't_messages', N'U') AND "
            "type = 1)\nCREATE INDEX t_messages_created_idx\n"
            "  ON t_messages (created_at);\nELSE\n"
            "CREATE CLUSTERED INDEX t_messages_created_idx\n"
            "  ON t_messages (created_at);\nEND;\n");
    assert_int_equal(sbt_count(ix, "CLUSTERED INDEX"), 1);
    sbt_lacks("index_ddl", ix, "CREATE CLUSTERED INDEX t_messages_ready");
    /* What a claim, a renewal and a nak set is outside the clustered key. */
    const char *moves[] = {s->claim, s->renew, s->nak};
    for (size_t i = 0; i < 3; i++)
        sbt_lacks("settle", moves[i], "created_at =");
    sbt_has("ddl", s->ddl, "PRIMARY KEY NONCLUSTERED");
    sbt_lacks("ddl", s->ddl, " CLUSTERED");
    /* The DBA's script makes the same. */
    sbt_has("schema", mssql_schema(),
            "CREATE CLUSTERED INDEX {p}messages_created_idx\n"
            "  ON {p}messages (created_at);");
    sb__transport_sql_free(s);
}

/* Issue 17: the session options forced at connect (filtered indexes and
 * indexed computed columns need them: 1934 otherwise), with the
 * compatibility level read in the same batch. */
static void test_session_guards(void **state)
{
    (void)state;
    static const char *const want[] = {"SET NOCOUNT OFF;",
                                       "SET XACT_ABORT ON;",
                                       "SET ANSI_NULLS ON;",
                                       "SET ANSI_PADDING ON;",
                                       "SET ANSI_WARNINGS ON;",
                                       "SET ARITHABORT ON;",
                                       "SET CONCAT_NULL_YIELDS_NULL ON;",
                                       "SET QUOTED_IDENTIFIER ON;",
                                       "SET NUMERIC_ROUNDABORT OFF;"};
    const char *batch = SB_TSQL_SESSION SB_TSQL_COMPAT_LEVEL;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        sbt_has("session", SB_TSQL_SESSION, want[i]);
    assert_int_equal(sbt_count(SB_TSQL_SESSION, "SET "), 9);
    sbt_has("session", batch,
            "SET NUMERIC_ROUNDABORT OFF; SELECT compatibility_level, DB_NAME() "
            "FROM sys.databases WHERE database_id = DB_ID()");
    /* One result with columns, the last statement: what the driver
     * reads. */
    assert_int_equal(sbt_count(batch, "SELECT"), 1);
    assert_int_equal(SB_TSQL_MIN_COMPAT, 130);
}

/* Issue 17: below compatibility level 130 the connection is refused with
 * a message that names the level, why (OPENJSON, SQL Server 2016) and
 * the fix, instead of the "schema missing" OPENJSON's 208 would read as. */
static void test_compat_refusal(void **state)
{
    (void)state;
    sb_error err;
    sb_error_clear(&err);
    assert_int_equal(sb__tsql_check_compat(130, "shop", &err), SB_OK);
    assert_int_equal(sb__tsql_check_compat(160, NULL, &err), SB_OK);
    assert_int_equal(err.code, SB_OK);
    assert_int_equal(sb__tsql_check_compat(120, "shop", &err), SB_BACKEND);
    assert_int_equal(err.code, SB_BACKEND);
    assert_string_equal(err.field, "compatibility_level");
    assert_string_equal(
        err.message,
        "the SQL Server database [shop] has compatibility level 120; "
        "sqlbus needs 130 (SQL Server 2016) or higher, as its statements "
        "use OPENJSON; fix: ALTER DATABASE [shop] SET COMPATIBILITY_LEVEL "
        "= 130");
    /* The name is an identifier: ']' doubled inside the brackets. */
    assert_int_equal(sb__tsql_check_compat(100, "a]b c", &err), SB_BACKEND);
    sbt_has("refusal", err.message, "level 100;");
    sbt_has("refusal", err.message,
            "ALTER DATABASE [a]]b c] SET COMPATIBILITY_LEVEL = 130");
    /* Unknown name: still the level and the fix's shape. */
    assert_int_equal(sb__tsql_check_compat(110, "", &err), SB_BACKEND);
    sbt_has("refusal", err.message,
            "database in use has compatibility "
            "level 110");
    sbt_has("refusal", err.message,
            "ALTER DATABASE <database> SET "
            "COMPATIBILITY_LEVEL = 130");
    /* A name of 128 characters: the message keeps the fix whole. */
    char longest[129];
    memset(longest, 'n', 128);
    longest[128] = '\0';
    assert_int_equal(sb__tsql_check_compat(120, longest, &err), SB_BACKEND);
    sbt_has("refusal", err.message, "] SET COMPATIBILITY_LEVEL = 130");
    assert_int_equal(sb__tsql_check_compat(120, "x", NULL), SB_BACKEND);
}

/* Issue 17: every rollback on SQL Server puts LOCK_TIMEOUT back, in the
 * rollback's own batch, so a batch that bounded it and was stopped by an
 * attention or a compile error (which skip its CATCH) does not leave the
 * bound on a pooled connection; the batch that sets it resets it itself
 * on both of its paths. */
/* T41: a schedule is found by its name byte-exactly (the padding
 * sentinel, as for queues); the upsert holds its key range so two adds
 * of one name cannot both insert; the scheduler's compare-and-set and the
 * remove report their row counts through SELECT @@ROWCOUNT, which decide
 * whether an occurrence is published and whether a name was there. */
#define SAME_NAME(a, b)                                                        \
    a " = " b " AND " a " + N'.' = " b " + N'.' COLLATE "                      \
      "Latin1_General_100_BIN2"
static void test_schedules_t41(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    sbt_has("ddl", s->ddl,
            "IF OBJECT_ID(N't_schedules', N'U') IS NULL\nCREATE TABLE "
            "t_schedules (\n  name nvarchar(200) COLLATE "
            "Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,");
    sbt_has("ddl", s->ddl, "  last_us bigint NOT NULL,\n");
    sbt_has("schedule_put", s->schedule_put,
            "MERGE t_schedules WITH (HOLDLOCK) AS s USING (SELECT CAST($1 AS "
            "nvarchar(200)) AS name) AS x ON " SAME_NAME("s.name", "x.name"));
    sbt_has("schedule_put", s->schedule_put,
            "WHEN NOT MATCHED THEN INSERT (name, queue, cron, interval_us, "
            "time_zone, payload, headers, missed, anchor_us, last_us, "
            "next_us, created_at, updated_at) VALUES (x.name, $2, $3");
    sbt_has("schedule_remove", s->schedule_remove,
            "DELETE FROM t_schedules WHERE " SAME_NAME(
                "name", "$1") "; SELECT @@ROWCOUNT");
    sbt_has("schedule_settle", s->schedule_settle,
            "UPDATE t_schedules SET last_us = CAST($2 AS bigint), next_us = "
            "CAST($3 AS bigint) WHERE " SAME_NAME(
                "name", "$1") " AND anchor_us = CAST($4 AS bigint) AND "
                              "last_us = CAST($5 AS bigint); SELECT "
                              "@@ROWCOUNT");
    sbt_has("schedule_due", s->schedule_due,
            "FROM t_schedules WHERE next_us <= CAST($1 AS bigint) ORDER BY "
            "next_us, name");
    sbt_has("schedule_list", s->schedule_list, "DATALENGTH(payload)");
    sbt_has("schedule_wake", s->schedule_wake,
            "SELECT MIN(next_us) FROM t_schedules");
    sb__transport_sql_free(s);
}

/* Issue 22: an endpoint instance and a setting are found by their key
 * byte-exactly (the padding sentinel); the beat and the setting's upsert
 * hold their key range so two first writes cannot both insert; the beat
 * keeps the operator's mute and the start of a running process, and
 * clears a graceful stop; mute, removal and a setting's removal report
 * their row counts, which decide SB_NOTFOUND. Every time is the
 * server's. */
static void test_liveness_issue22(void **state)
{
    (void)state;
    sb_transport_sql *s = build();
    sbt_has("ddl", s->ddl,
            "IF OBJECT_ID(N't_heartbeats', N'U') IS NULL\nCREATE TABLE "
            "t_heartbeats (\n  id nvarchar(36) COLLATE "
            "Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,\n  endpoint "
            "nvarchar(200) NOT NULL,\n  host nvarchar(255) NOT NULL,\n  "
            "host_id nvarchar(36) NOT NULL,\n  pid bigint NOT NULL,\n  "
            "interval_ms bigint NOT NULL,\n  started_at datetime2(7) NOT "
            "NULL DEFAULT SYSUTCDATETIME(),\n  last_beat_at datetime2(7) NOT "
            "NULL DEFAULT SYSUTCDATETIME(),\n  stopped_at datetime2(7) "
            "NULL,\n  monitored int NOT NULL DEFAULT 1\n);\n");
    sbt_has("ddl", s->ddl,
            "IF OBJECT_ID(N't_settings', N'U') IS NULL\nCREATE TABLE "
            "t_settings (\n  name nvarchar(200) COLLATE "
            "Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,\n  value "
            "nvarchar(max) NOT NULL,\n  updated_at datetime2(7) NOT NULL "
            "DEFAULT SYSUTCDATETIME()\n);\n");
    sbt_has("heartbeat_beat", s->heartbeat_beat,
            "MERGE t_heartbeats WITH (HOLDLOCK) AS h USING (SELECT CAST($1 "
            "AS nvarchar(36)) AS id) AS x ON " SAME_NAME("h.id", "x.id"));
    sbt_has("heartbeat_beat", s->heartbeat_beat,
            "WHEN MATCHED THEN UPDATE SET endpoint = $2, host = $3, host_id "
            "= $4, started_at = CASE WHEN h.pid = CAST($5 AS bigint) AND "
            "h.stopped_at IS NULL THEN h.started_at ELSE " SB_TSQL_NOW
            " END, pid = CAST($5 AS bigint), interval_ms = CAST($6 AS "
            "bigint), last_beat_at = " SB_TSQL_NOW ", stopped_at = NULL "
            "WHEN NOT MATCHED THEN INSERT (id, endpoint, host, host_id, pid, "
            "interval_ms, started_at, last_beat_at, stopped_at, monitored) "
            "VALUES (x.id, $2, $3, $4, CAST($5 AS bigint), CAST($6 AS "
            "bigint), " SB_TSQL_NOW ", " SB_TSQL_NOW ", NULL, 1);");
    sbt_lacks("heartbeat_beat", s->heartbeat_beat, "monitored =");
    sbt_has("heartbeat_stop", s->heartbeat_stop,
            "UPDATE t_heartbeats SET stopped_at = " SB_TSQL_NOW
            ", last_beat_at = " SB_TSQL_NOW
            " WHERE " SAME_NAME("id", "$1") " AND pid = CAST($2 AS bigint)");
    sbt_has("heartbeat_list", s->heartbeat_list,
            "SELECT id, endpoint, host, host_id, pid, interval_ms, "
            "started_at, last_beat_at, stopped_at, monitored, " SB_TSQL_NOW
            " FROM t_heartbeats ORDER BY endpoint, host, id");
    sbt_has(
        "heartbeat_monitor", s->heartbeat_monitor,
        "UPDATE t_heartbeats SET monitored = CAST($2 AS int) WHERE " SAME_NAME(
            "id", "$1") "; SELECT @@ROWCOUNT");
    sbt_has("heartbeat_remove", s->heartbeat_remove,
            "DELETE FROM t_heartbeats WHERE " SAME_NAME(
                "id", "$1") "; SELECT @@ROWCOUNT");
    sbt_has("setting_get", s->setting_get,
            "SELECT value, updated_at FROM t_settings WHERE " SAME_NAME("name",
                                                                        "$1"));
    sbt_has("setting_put", s->setting_put,
            "MERGE t_settings WITH (HOLDLOCK) AS s USING (SELECT CAST($1 AS "
            "nvarchar(200)) AS name) AS x ON " SAME_NAME(
                "s.name",
                "x.name") " WHEN MATCHED THEN UPDATE SET value = "
                          "$2, updated_at = " SB_TSQL_NOW
                          " WHEN NOT MATCHED THEN INSERT (name, "
                          "value, updated_at) VALUES (x.name, $2, " SB_TSQL_NOW
                          ");");
    sbt_has("setting_remove", s->setting_remove,
            "DELETE FROM t_settings WHERE " SAME_NAME(
                "name", "$1") "; SELECT @@ROWCOUNT");
    sbt_has("setting_list", s->setting_list,
            "SELECT name, value, updated_at FROM t_settings ORDER BY name");
    /* schema print carries both tables. */
    sbt_has("schema", mssql_schema(), "CREATE TABLE {p}heartbeats (");
    sbt_has("schema", mssql_schema(), "CREATE TABLE {p}settings (");
    sb__transport_sql_free(s);
}

static void test_lock_timeout_reset(void **state)
{
    (void)state;
    assert_string_equal(SB_TSQL_ROLLBACK,
                        "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; "
                        "SET LOCK_TIMEOUT -1");
    sb_transport_sql *s = build();
    named all[64];
    size_t n = all_of(s, all);
    for (size_t i = 0; i < n; i++) {
        size_t set = sbt_count(all[i].sql, "SET LOCK_TIMEOUT ");
        size_t reset = sbt_count(all[i].sql, "SET LOCK_TIMEOUT -1;");
        /* Each bound is undone on the way out and in the CATCH. */
        if (set != 0 && reset != 2 * (set - reset))
            fail_msg("%s sets LOCK_TIMEOUT %zu times, resets %zu:\n%s",
                     all[i].name, set - reset, reset, all[i].sql);
    }
    assert_int_equal(sbt_count(s->index_ddl, "SET LOCK_TIMEOUT 10000;"), 1);
    sb__transport_sql_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_shape),
        cmocka_unit_test(test_expiry_shape),
        cmocka_unit_test(test_unique_shape),
        cmocka_unit_test(test_limits_shape),
        cmocka_unit_test(test_priority_shape),
        cmocka_unit_test(test_queue_sentinel_everywhere),
        cmocka_unit_test(test_fences_count_by_rowcount),
        cmocka_unit_test(test_publish_insert_if_absent),
        cmocka_unit_test(test_schema_and_locks),
        cmocka_unit_test(test_no_foreign_dialect),
        cmocka_unit_test(test_schema_print),
        cmocka_unit_test(test_rowcount_contract),
        cmocka_unit_test(test_clustered_by_creation_time),
        cmocka_unit_test(test_session_guards),
        cmocka_unit_test(test_compat_refusal),
        cmocka_unit_test(test_lock_timeout_reset),
        cmocka_unit_test(test_schedules_t41),
        cmocka_unit_test(test_liveness_issue22),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
