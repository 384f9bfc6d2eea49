/* test_sql_mssql_channel.c - the channel's T-SQL pinned to the rules of
 * issue 6 and the seed (no server needed: none runs in CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sql_text.h"
#include <string.h>

#include "channel/channel.h"

static sb_channel_sql built;

static int setup(void **state)
{
    (void)state;
    sb_error err;
    return sb__channel_sql_new(SB_DIALECT_MSSQL, "t_", &built, &err);
}

static int teardown(void **state)
{
    (void)state;
    sb__channel_sql_free(&built);
    return 0;
}

static const char *sql(int k)
{
    return built.s[k];
}

static void has(int k, const char *want)
{
    sbt_has("statement", sql(k), want);
}

static void lacks(int k, const char *bad)
{
    sbt_lacks("statement", sql(k), bad);
}

/* C10 and the seed: the ack sequence is bigint, steps by one, never
 * cycles, has the bigint maximum; NEXT VALUE FOR may not sit in a CASE,
 * so it is its own statement and the claim takes the value as $3. */
static void test_ack_sequence(void **state)
{
    (void)state;
    has(CH_DDL, "CREATE SEQUENCE t_channel_ack_seq AS bigint START WITH 1 "
                "INCREMENT BY 1 MINVALUE 1 NO CYCLE;");
    lacks(CH_DDL, "MAXVALUE");
    has(CH_SEQ_NEXT, "SELECT NEXT VALUE FOR t_channel_ack_seq");
    has(CH_CLAIM, "CASE WHEN acked_at IS NULL THEN $3 ELSE acked_seq END");
    lacks(CH_CLAIM, "NEXT VALUE");
    has(CH_WATERMARK, "DATEDIFF_BIG(microsecond, ");
}

/* Identity columns compare ordinally; every time is datetime2(7). */
static void test_schema(void **state)
{
    (void)state;
    has(CH_DDL, "correlation_id nvarchar(400) COLLATE "
                "Latin1_General_100_BIN2 NOT NULL");
    has(CH_DDL, "registration_id char(36) COLLATE Latin1_General_100_BIN2");
    has(CH_DDL, "id char(36) COLLATE Latin1_General_100_BIN2 NOT NULL "
                "PRIMARY KEY NONCLUSTERED");
    lacks(CH_DDL, "datetime2 ");
    lacks(CH_DDL, "datetime2(3)");
    assert_int_equal(sbt_count(sql(CH_DDL), "datetime2(7)"), 7);
    has(CH_DDL, "WHERE acked_at IS NULL AND recovery_claimed = 0');");
    has(CH_LOCK, "sp_getapplock");
    has(CH_LOCK, "N'sqlbus:ddl:' + SCHEMA_NAME()");
    sbt_applock_checked("lock", sql(CH_LOCK));
}

/* Issue 17: the DDL batch compiles as one unit, so every CREATE INDEX
 * runs through EXEC (a column an older table lacks then fails no
 * compilation, and the catalog check says what is wrong), each where
 * absent; the text inside EXEC(N'...') has no lone quote. */
static void test_ddl_indexes_through_exec(void **state)
{
    (void)state;
    const char *ddl = sql(CH_DDL);
    size_t creates = sbt_count(ddl, "CREATE INDEX ") +
                     sbt_count(ddl, "CREATE UNIQUE CLUSTERED INDEX ");
    assert_int_equal(creates, 7);
    assert_int_equal(sbt_count(ddl, "EXEC(N'CREATE INDEX "), 6);
    assert_int_equal(
        sbt_count(ddl, "EXEC(N'CREATE UNIQUE CLUSTERED INDEX "), 1);
    assert_int_equal(sbt_count(ddl, "')\nEXEC(N'CREATE INDEX "), 6);
    has(CH_DDL, "AND name = N't_channel_messages_corr_idx')\nEXEC(N'CREATE "
                "INDEX t_channel_messages_corr_idx ON t_channel_messages "
                "(correlation_id, created_at, id)');\n");
    has(CH_DDL, "EXEC(N'CREATE INDEX t_channel_messages_unconfirmed_idx ON "
                "t_channel_messages (created_at) WHERE acked_at IS NULL AND "
                "recovery_claimed = 0');\n");
    has(CH_DDL, "EXEC(N'CREATE INDEX t_recovery_state_reg_idx ON "
                "t_recovery_state (registered_at, correlation_id, "
                "registration_id)');\n");
    for (const char *p = ddl; (p = strstr(p, "EXEC(N'")) != NULL;) {
        p += strlen("EXEC(N'");
        const char *end = strstr(p, "');\n");
        assert_non_null(end);
        for (const char *q = p; q < end; q++) {
            if (*q != '\'')
                continue;
            if (q[1] != '\'')
                fail_msg("a lone quote inside EXEC:\n%.*s", (int)(end - p),
                         p);
            q++;
        }
        p = end;
    }
}

/* Issue 17: channel_messages is clustered on (created_at, id), the order
 * replies are written, pruned and claimed for recovery in, made with the
 * table (an earlier version's heap is a DBA's to convert); the primary
 * key stays nonclustered and is what verification checks. */
static void test_channel_messages_clustered(void **state)
{
    (void)state;
    has(CH_DDL, "IF OBJECT_ID(N't_channel_messages', N'U') IS NULL\n"
                "BEGIN\nCREATE TABLE t_channel_messages (\n");
    has(CH_DDL, "  recovery_claimed bit NOT NULL DEFAULT 0\n);\n"
                "EXEC(N'CREATE UNIQUE CLUSTERED INDEX "
                "t_channel_messages_time_idx ON t_channel_messages "
                "(created_at, id)');\nEND;\n");
    assert_int_equal(sbt_count(sql(CH_DDL), "CLUSTERED INDEX"), 1);
    has(CH_ORPHANS, "ORDER BY created_at)");
    has(CH_SCAN, "ORDER BY created_at, id");
}

/* C11: every time written or compared is the database clock, written to
 * the microsecond so a time read back matches its row exactly (the scan's
 * keyset cursor and the watchdog's pages compare them). */
static void test_clock(void **state)
{
    (void)state;
    for (int k = CH_WATERMARK; k <= CH_COUNT_STATES; k++) {
        if (sql(k) == NULL)
            continue;
        size_t bare = sbt_count(sql(k), "SYSUTCDATETIME()");
        size_t rounded =
            sbt_count(sql(k), "CAST(SYSUTCDATETIME() AS datetime2(6))");
        if (bare != rounded)
            fail_msg("statement %d reads the clock unrounded:\n%s", k, sql(k));
        lacks(k, "GETDATE");
    }
    has(CH_SCAN, "DATEADD(microsecond, CAST($2 % 1000000 AS int)");
}

/* Fences and bounded deletes: the recovery claim's row count through
 * SELECT @@ROWCOUNT; prunes in DELETE TOP (1000) batches; the orphan scan
 * skips rows others hold. */
static void test_counts_and_batches(void **state)
{
    (void)state;
    has(CH_RECOVER, "; SELECT @@ROWCOUNT");
    has(CH_PRUNE_MESSAGES, "DELETE TOP (1000) FROM t_channel_messages");
    has(CH_PRUNE_SUBSCRIBERS, "DELETE TOP (1000) FROM t_channel_subscribers");
    has(CH_PRUNE_RECOVERY, "DELETE TOP (1000) FROM t_recovery_state");
    has(CH_ORPHANS, "WITH (UPDLOCK, ROWLOCK, READPAST)");
    has(CH_INSERT, "WITH (UPDLOCK, HOLDLOCK) WHERE id = $1");
    has(CH_SAVE_RECOVERY, "WITH (UPDLOCK, HOLDLOCK)");
    has(CH_SUBSCRIBE, "MERGE t_channel_subscribers WITH (HOLDLOCK)");
    has(CH_SUBSCRIBE_MANY, "MERGE t_channel_subscribers WITH (HOLDLOCK)");
}

/* JSON arrays are read with OPENJSON, its values put in the columns'
 * binary collation (else = between them is a collation conflict). */
static void test_json_arrays(void **state)
{
    (void)state;
    const int k[] = {CH_SCAN_MANY, CH_ORPHANS};
    for (size_t i = 0; i < 2; i++)
        has(k[i], "(SELECT value COLLATE Latin1_General_100_BIN2 FROM "
                  "OPENJSON(CAST(");
    has(CH_SUBSCRIBE_MANY, "SELECT c COLLATE Latin1_General_100_BIN2 AS c, "
                           "r COLLATE Latin1_General_100_BIN2 AS r FROM "
                           "OPENJSON(");
    /* A NULL context is a NULL varchar: only an explicit CAST puts it in
     * varbinary. */
    has(CH_SAVE_RECOVERY, "CAST($4 AS varbinary(max))");
}

/* Nothing of another dialect is left. */
static void test_no_foreign_dialect(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "::",      "now()",     " LIMIT ", "RETURNING", "ON CONFLICT",
        "nextval", "json_each", "json_",   ">>",        "ctid",
        "rowid",   "{p}",       "true",    "false",     "GROUP BY 1"};
    for (int k = CH_DDL; k <= CH_COUNT_STATES; k++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
            lacks(k, bad[b]);
    assert_null(sql(CH_NOTIFY));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ack_sequence),
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_counts_and_batches),
        cmocka_unit_test(test_json_arrays),
        cmocka_unit_test(test_no_foreign_dialect),
        cmocka_unit_test(test_ddl_indexes_through_exec),
        cmocka_unit_test(test_channel_messages_clustered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
