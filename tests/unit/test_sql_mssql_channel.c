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

/* Statement `f` of the built set has / lacks a text. */
#define has(f, want) sbt_has(#f, built.f, want)
#define lacks(f, bad) sbt_lacks(#f, built.f, bad)

/* Every statement of the built set with its name, in the list's order. */
typedef struct named {
    const char *name, *sql;
} named;

static size_t all(named out[64])
{
    size_t n = 0;
#define X(f) out[n++] = (named){#f, built.f};
    SB_CH_STATEMENTS(X)
#undef X
    return n;
}

/* C10 and the seed: the ack sequence is bigint, steps by one, never
 * cycles, has the bigint maximum; NEXT VALUE FOR may not sit in a CASE,
 * so it is its own statement and the claim takes the value as $3. */
static void test_ack_sequence(void **state)
{
    (void)state;
    has(ddl, "CREATE SEQUENCE t_channel_ack_seq AS bigint START WITH 1 "
             "INCREMENT BY 1 MINVALUE 1 NO CYCLE;");
    lacks(ddl, "MAXVALUE");
    has(seq_next, "SELECT NEXT VALUE FOR t_channel_ack_seq");
    has(claim, "CASE WHEN acked_at IS NULL THEN $3 ELSE acked_seq END");
    lacks(claim, "NEXT VALUE");
    has(watermark, "DATEDIFF_BIG(microsecond, ");
}

/* Identity columns compare ordinally; every time is datetime2(7). */
static void test_schema(void **state)
{
    (void)state;
    has(ddl, "correlation_id nvarchar(400) COLLATE "
             "Latin1_General_100_BIN2 NOT NULL");
    has(ddl, "registration_id char(36) COLLATE Latin1_General_100_BIN2");
    has(ddl, "id char(36) COLLATE Latin1_General_100_BIN2 NOT NULL "
             "PRIMARY KEY NONCLUSTERED");
    lacks(ddl, "datetime2 ");
    lacks(ddl, "datetime2(3)");
    assert_int_equal(sbt_count(built.ddl, "datetime2(7)"), 7);
    has(ddl, "WHERE acked_at IS NULL AND recovery_claimed = 0');");
    has(lock, "sp_getapplock");
    has(lock, "N'sqlbus:ddl:' + SCHEMA_NAME()");
    sbt_applock_checked("lock", built.lock);
}

/* Issue 17: the DDL batch compiles as one unit, so every CREATE INDEX
 * runs through EXEC (a column an older table lacks then fails no
 * compilation, and the catalog check says what is wrong), each where
 * absent; the text inside EXEC(N'...') has no lone quote. */
static void test_ddl_indexes_through_exec(void **state)
{
    (void)state;
    const char *ddl = built.ddl;
    size_t creates = sbt_count(ddl, "CREATE INDEX ") +
                     sbt_count(ddl, "CREATE UNIQUE CLUSTERED INDEX ");
    assert_int_equal(creates, 7);
    assert_int_equal(sbt_count(ddl, "EXEC(N'CREATE INDEX "), 6);
    assert_int_equal(sbt_count(ddl, "EXEC(N'CREATE UNIQUE CLUSTERED INDEX "),
                     1);
    assert_int_equal(sbt_count(ddl, "')\nEXEC(N'CREATE INDEX "), 6);
    has(ddl, "AND name = N't_channel_messages_corr_idx')\nEXEC(N'CREATE "
             "INDEX t_channel_messages_corr_idx ON t_channel_messages "
             "(correlation_id, created_at, id)');\n");
    has(ddl, "EXEC(N'CREATE INDEX t_channel_messages_unconfirmed_idx ON "
             "t_channel_messages (created_at) WHERE acked_at IS NULL AND "
             "recovery_claimed = 0');\n");
    has(ddl, "EXEC(N'CREATE INDEX t_recovery_state_reg_idx ON "
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
                fail_msg("a lone quote inside EXEC:\n%.*s", (int)(end - p), p);
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
    has(ddl, "IF OBJECT_ID(N't_channel_messages', N'U') IS NULL\n"
             "BEGIN\nCREATE TABLE t_channel_messages (\n");
    has(ddl, "  recovery_claimed bit NOT NULL DEFAULT 0\n);\n"
             "EXEC(N'CREATE UNIQUE CLUSTERED INDEX "
             "t_channel_messages_time_idx ON t_channel_messages "
             "(created_at, id)');\nEND;\n");
    assert_int_equal(sbt_count(built.ddl, "CLUSTERED INDEX"), 1);
    has(orphans, "ORDER BY created_at)");
    has(scan, "ORDER BY created_at, id");
}

/* C11: every time written or compared is the database clock, written to
 * the microsecond so a time read back matches its row exactly (the scan's
 * keyset cursor and the watchdog's pages compare them). */
static void test_clock(void **state)
{
    (void)state;
    named a[64];
    size_t n = all(a);
    for (size_t k = 0; k < n; k++) {
        if (a[k].sql == NULL || a[k].sql == built.ddl || a[k].sql == built.lock)
            continue;
        size_t bare = sbt_count(a[k].sql, "SYSUTCDATETIME()");
        size_t rounded =
            sbt_count(a[k].sql, "CAST(SYSUTCDATETIME() AS datetime2(6))");
        if (bare != rounded)
            fail_msg("%s reads the clock unrounded:\n%s", a[k].name, a[k].sql);
        sbt_lacks(a[k].name, a[k].sql, "GETDATE");
    }
    has(scan, "DATEADD(microsecond, CAST($2 % 1000000 AS int)");
}

/* Fences and bounded deletes: the recovery claim's row count through
 * SELECT @@ROWCOUNT; prunes in DELETE TOP (1000) batches; the orphan scan
 * skips rows others hold. */
static void test_counts_and_batches(void **state)
{
    (void)state;
    has(recover, "; SELECT @@ROWCOUNT");
    has(prune_messages, "DELETE TOP (1000) FROM t_channel_messages");
    has(prune_subscribers, "DELETE TOP (1000) FROM t_channel_subscribers");
    has(prune_recovery, "DELETE TOP (1000) FROM t_recovery_state");
    has(orphans, "WITH (UPDLOCK, ROWLOCK, READPAST)");
    has(insert, "WITH (UPDLOCK, HOLDLOCK) WHERE id = $1");
    has(save_recovery, "WITH (UPDLOCK, HOLDLOCK)");
    has(subscribe, "MERGE t_channel_subscribers WITH (HOLDLOCK)");
    has(subscribe_many, "MERGE t_channel_subscribers WITH (HOLDLOCK)");
}

/* JSON arrays are read with OPENJSON, its values put in the columns'
 * binary collation (else = between them is a collation conflict). */
static void test_json_arrays(void **state)
{
    (void)state;
    const named k[] = {{"scan_many", built.scan_many},
                       {"orphans", built.orphans}};
    for (size_t i = 0; i < 2; i++)
        sbt_has(k[i].name, k[i].sql,
                "(SELECT value COLLATE Latin1_General_100_BIN2 FROM "
                "OPENJSON(CAST(");
    has(subscribe_many, "SELECT c COLLATE Latin1_General_100_BIN2 AS c, "
                        "r COLLATE Latin1_General_100_BIN2 AS r FROM "
                        "OPENJSON(");
    /* A NULL context is a NULL varchar: only an explicit CAST puts it in
     * varbinary. */
    has(save_recovery, "CAST($4 AS varbinary(max))");
}

/* Nothing of another dialect is left. */
static void test_no_foreign_dialect(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "::",      "now()",     " LIMIT ", "RETURNING", "ON CONFLICT",
        "nextval", "json_each", "json_",   ">>",        "ctid",
        "rowid",   "{p}",       "true",    "false",     "GROUP BY 1"};
    named a[64];
    size_t n = all(a);
    for (size_t k = 0; k < n; k++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
            sbt_lacks(a[k].name, a[k].sql, bad[b]);
    assert_null(built.notify);
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
