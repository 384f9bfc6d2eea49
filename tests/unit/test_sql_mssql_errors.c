/* test_sql_mssql_errors.c - the error store's T-SQL pinned to the rules of
 * issue 6 and the seed (no server needed; no SQL Server runs where sqlbus
 * is built, so these are the checks every build makes of that text): the
 * MERGE ... WITH (HOLDLOCK) upsert with each guard of E10, OPENJSON for
 * the batch statements, nothing of PostgreSQL's or SQLite's dialect left,
 * the padding sentinel wherever a caller's value is compared, SELECT
 * @@ROWCOUNT where the caller reads the row count, the parameter cap,
 * and the DDL's types, collations and guards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sql_text.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors/sql_int.h"

#define BIN2 "COLLATE Latin1_General_100_BIN2"
#define NOW "DATEDIFF_BIG(microsecond, '19700101', SYSUTCDATETIME())"

typedef struct named {
    char name[48];
    char *sql; /* owned */
} named;

static const char *const names[ER_N] = {
    "DDL",           "ATTEMPTS_STATE",  "ATTEMPTS_FILL",
    "NEW_ATTEMPTS",  "UPSERT",          "DELETE_GROUPS",
    "INSERT_GROUPS", "ENDPOINTS",       "PUT_BODY",
    "DROP_BODIES",   "CONFIRM",         "DROP_CLAIMS",
    "FAILED_IMPORT", "COUNT_IMPORTS",   "GET",
    "GET_GROUPS",    "GET_BODY",        "GET_HISTORY",
    "CLAIM",         "RETRY_SOURCE",    "SET_STATUS",
    "GROUPS",        "SET_COMMENT",     "DELETE_COMMENT",
    "EXPIRED",       "DELETE_MESSAGES", "ORPHAN_COMMENTS",
    "SEARCH",        "OP_START",        "OP_STEP",
    "OP_END",        "OP_GET",          "OPS_GET",
    "EDIT_CLAIM",    "DROP_EDITS",      "REDIRECTS_LOCK",
    "REDIRECTS",     "REDIRECT_PUT",    "REDIRECT_DELETE",
    "IMPORTS_TAKE",  "IMPORTS_DELETE",  "PRUNE_GROUPS",
    "COUNTS_STATE",  "COUNTS_REBUILD",  "STALE_TAKE",
    "STALE_FIX",     "GROUPS_STALE",    "GROUPS_EXACT",
    "FULLTEXT",      "SEARCH_READY",    "OP_ACK"};

static sb_errors_sql build(int dialect)
{
    assert_non_null(names[ER_N - 1]); /* one name per statement */
    sb_errors_sql s;
    sb_error err;
    assert_int_equal(sb__errors_sql_new(dialect, "t_", &s, &err), SB_OK);
    return s;
}

static void add(named *all, size_t *n, const char *name, sb_buf *b)
{
    assert_int_equal(b->failed, SB_OK);
    int rc = SB_OK;
    snprintf(all[*n].name, sizeof all[*n].name, "%s", name);
    all[*n].sql = sb__sql_subst(b->data, "t_", &rc);
    assert_int_equal(rc, SB_OK);
    (*n)++;
    sb__buf_reset(b);
}

/* Every T-SQL statement the store runs: the fixed set, then the ones
 * built per call (the list's pages and totals, the selection walks, the
 * counts) with every filter they can have. */
static size_t all_statements(named *all)
{
    size_t n = 0;
    sb_errors_sql s = build(SB_DIALECT_MSSQL);
    for (int k = 0; k < ER_N; k++) {
        snprintf(all[n].name, sizeof all[n].name, "%s", names[k]);
        all[n++].sql = s.s[k];
        s.s[k] = NULL;
    }
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    sb_value p[13];
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = 0;
    q.failed_queue = "qa";
    q.endpoint = "Sales";
    q.group_id = "g";
    q.message_type = "T";
    q.modified_from_us = 1;
    q.modified_to_us = 2;
    sb__errors_list_sql(SB_DIALECT_MSSQL, &q, "last_time_of_failure", &b, p);
    add(all, &n, "list page", &b);
    sb__errors_list_sql(SB_DIALECT_MSSQL, &q, NULL, &b, p);
    add(all, &n, "list count", &b);
    q.statuses = SB_FAILED_BIT(0) | SB_FAILED_BIT(3);
    sb__errors_list_sql(SB_DIALECT_MSSQL, &q, "message_type", &b, p);
    add(all, &n, "list page statuses", &b);
    static const char *const ids[] = {"a", "b"};
    sb_failed_selection sel[4];
    memset(sel, 0, sizeof sel);
    sel[0].ids = ids;
    sel[0].n_ids = 2;
    sel[0].modified_from_us = 1;
    sel[0].modified_to_us = 2;
    sel[1].group_id = "g";
    sel[2].failed_queue = "qa";
    sel[3].endpoint = "Sales";
    for (int i = 0; i < 4; i++) {
        char name[32];
        sb__errors_walk_sql(SB_DIALECT_MSSQL, &sel[i], 0, &b);
        snprintf(name, sizeof name, "walk page %d", i);
        add(all, &n, name, &b);
        sb__errors_walk_sql(SB_DIALECT_MSSQL, &sel[i], 1, &b);
        snprintf(name, sizeof name, "walk count %d", i);
        add(all, &n, name, &b);
    }
    for (int item = 0; item < 2; item++)
        for (int st = 0; st < 2; st++) {
            char name[32];
            sb__errors_count_sql(SB_DIALECT_MSSQL, item, st, &b);
            snprintf(name, sizeof name, "count %d %d", item, st);
            add(all, &n, name, &b);
        }
    for (int st = 0; st < 2; st++) {
        char name[32];
        sb__errors_counts_by_sql(SB_DIALECT_MSSQL, st, &b);
        snprintf(name, sizeof name, "counts by %d", st);
        add(all, &n, name, &b);
    }
    sb__buf_free(&b);
    return n;
}

static void free_all(named *all, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb__free(all[i].sql);
}

static const char *find(named *all, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].name, name) == 0)
            return all[i].sql;
    fail_msg("no statement %s", name);
    return NULL;
}

static void ends_with(const char *name, const char *sql, const char *tail)
{
    size_t len = strlen(sql), tl = strlen(tail);
    if (len < tl || strcmp(sql + len - tl, tail) != 0)
        fail_msg("%s does not end in \"%s\":\n%s", name, tail, sql);
}

#define ALL(all, n)                                                            \
    named all[ER_N + 32];                                                      \
    size_t n = all_statements(all)

/* E10 and the seed: MERGE ... WITH (HOLDLOCK) over the OPENJSON rows, the
 * update branch with every guard PostgreSQL's ON CONFLICT has (generated
 * from the same column list), the stored newest attempt time returned
 * through a table variable (failed_messages has triggers). */
static void test_upsert_is_a_guarded_merge(void **state)
{
    (void)state;
    ALL(all, n);
    const char *m = find(all, n, "UPSERT");
    sbt_has(
        "upsert", m,
        "DECLARE @sb_won TABLE (unique_message_id nvarchar(400), "
        "last_attempted_at bigint); MERGE t_failed_messages WITH (HOLDLOCK) "
        "AS t USING (SELECT * FROM OPENJSON(CAST($1 AS nvarchar(max))) WITH "
        "(unique_message_id nvarchar(400) '$.unique_message_id', ");
    sbt_has("upsert", m,
            "AS x ON t.unique_message_id = x.unique_message_id " BIN2
            " WHEN MATCHED THEN UPDATE SET status = 0, ");
    sbt_has("upsert", m,
            "status_changed_at = CASE WHEN t.status <> 0 THEN " NOW
            " ELSE t.status_changed_at END, last_modified = " NOW ",");
    /* The incoming count is of the attempts new to the store (see
     * test_attempts_counted_once). */
    sbt_has("upsert", m,
            "number_of_processing_attempts = t.number_of_processing_attempts + "
            "x.number_of_processing_attempts, first_time_of_failure = ");
    sbt_has("upsert", m,
            "first_time_of_failure = CASE WHEN t.first_time_of_failure <= "
            "x.first_time_of_failure THEN t.first_time_of_failure ELSE "
            "x.first_time_of_failure END");
    sbt_has("upsert", m,
            "last_time_of_failure = CASE WHEN t.last_time_of_failure >= "
            "x.last_time_of_failure THEN t.last_time_of_failure ELSE "
            "x.last_time_of_failure END");
    sbt_has("upsert", m,
            "last_attempted_at = CASE WHEN t.last_attempted_at >= "
            "x.last_attempted_at THEN t.last_attempted_at ELSE "
            "x.last_attempted_at END");
    /* Every payload column, and the search words, only from an attempt at
     * least as new; the same columns are guarded on PostgreSQL. */
    sb_errors_sql pg = build(SB_DIALECT_POSTGRES);
    char want[512];
    int payload = 0;
    for (size_t i = 0; i < sb__err_n_columns; i++) {
        const char *c = sb__err_columns[i].name;
        snprintf(want, sizeof want, "%s nvarchar(", c);
        if (sb__err_columns[i].type == 't')
            sbt_has("upsert rows", m, want);
        if (!sb__err_columns[i].payload)
            continue;
        payload++;
        snprintf(want, sizeof want,
                 ", %s = CASE WHEN x.last_attempted_at >= t.last_attempted_at "
                 "THEN x.%s ELSE t.%s END",
                 c, c, c);
        sbt_has("upsert", m, want);
        snprintf(want, sizeof want,
                 ", %s = CASE WHEN excluded.last_attempted_at >= "
                 "t_failed_messages.last_attempted_at THEN excluded.%s ELSE "
                 "t_failed_messages.%s END",
                 c, c, c);
        sbt_has("pg upsert", pg.s[ER_UPSERT], want);
    }
    assert_true(payload >= 17);
    sbt_has(
        "upsert", m,
        ", search_text = CASE WHEN x.last_attempted_at >= t.last_attempted_at "
        "THEN x.search_text ELSE t.search_text END");
    sbt_has("upsert", m,
            "WHEN NOT MATCHED THEN INSERT (status, status_changed_at, "
            "last_modified, unique_message_id,");
    sbt_has("upsert", m, "VALUES (0, " NOW ", " NOW ", x.unique_message_id,");
    sbt_has(
        "upsert", m,
        "OUTPUT inserted.unique_message_id, inserted.last_attempted_at INTO "
        "@sb_won; SELECT unique_message_id, last_attempted_at FROM @sb_won");
    sbt_lacks("upsert", m,
              "OUTPUT inserted.unique_message_id, "
              "inserted.last_attempted_at;");
    sb__errors_sql_free(&pg);
    free_all(all, n);
}

/* E8, E10 (issue 19): an attempt is its message's unique id and time of
 * failure, counted once: the batch's keys are inserted where absent
 * (under a key-range lock, as the other inserts-if-absent) and those
 * inserted are returned, through a table variable, for the caller to
 * fold the rows again over them; the MERGE adds that count whatever the
 * stored newest attempt is. The keys are a table of their own, filled at open for a store made
 * before it, and deleted with their message by a trigger. */
static void test_attempts_counted_once(void **state)
{
    (void)state;
    ALL(all, n);
    assert_string_equal(
        find(all, n, "NEW_ATTEMPTS"),
        "DECLARE @sb_new TABLE (unique_message_id nvarchar(400), "
        "time_of_failure bigint); INSERT INTO t_failed_message_attempts "
        "(unique_message_id, time_of_failure) OUTPUT "
        "inserted.unique_message_id, inserted.time_of_failure INTO @sb_new "
        "SELECT x.u, x.t FROM (SELECT DISTINCT j.u " BIN2 " AS u, j.t FROM "
        "OPENJSON(CAST($1 AS nvarchar(max))) WITH (u nvarchar(400) '$.u', t "
        "bigint '$.t') AS j) AS x WHERE NOT EXISTS (SELECT 1 FROM "
        "t_failed_message_attempts AS o WITH (UPDLOCK, HOLDLOCK) WHERE "
        "o.unique_message_id = x.u AND o.time_of_failure = x.t); SELECT "
        "unique_message_id, time_of_failure FROM @sb_new");
    const char *m = find(all, n, "UPSERT");
    sbt_lacks("upsert", m, "x.last_attempted_at = t.last_attempted_at");
    const char *d = find(all, n, "DDL");
    sbt_has("DDL", d,
            "IF OBJECT_ID(N't_failed_message_attempts', N'U') IS NULL\nCREATE "
            "TABLE t_failed_message_attempts (\n  unique_message_id "
            "nvarchar(400) " BIN2 " NOT NULL,\n  time_of_failure bigint NOT "
            "NULL,\n  PRIMARY KEY (unique_message_id, time_of_failure)\n);");
    assert_true(2 * SB_MS_ID_MAX + 8 <= 900); /* its clustered key */
    /* An older store: its messages' first and newest attempts, where
     * absent, when the open finds the keys empty beside messages. */
    assert_string_equal(
        find(all, n, "ATTEMPTS_STATE"),
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM t_failed_messages) AND NOT "
        "EXISTS (SELECT 1 FROM t_failed_message_attempts) THEN 1 ELSE 0 "
        "END");
    assert_string_equal(
        find(all, n, "ATTEMPTS_FILL"),
        "INSERT INTO t_failed_message_attempts (unique_message_id, "
        "time_of_failure) SELECT x.u, x.t FROM (SELECT unique_message_id AS "
        "u, first_time_of_failure AS t FROM t_failed_messages UNION SELECT "
        "unique_message_id, last_attempted_at FROM t_failed_messages) AS x "
        "WHERE NOT EXISTS (SELECT 1 FROM t_failed_message_attempts AS o WITH "
        "(UPDLOCK, HOLDLOCK) WHERE o.unique_message_id = x.u AND "
        "o.time_of_failure = x.t)");
    sbt_has(
        "DDL", d,
        "IF OBJECT_ID(N't_fa_fm_del', N'TR') IS NULL EXEC(N'CREATE TRIGGER "
        "t_fa_fm_del ON t_failed_messages AFTER DELETE AS BEGIN SET NOCOUNT "
        "ON; DELETE a FROM t_failed_message_attempts AS a JOIN deleted AS od "
        "ON a.unique_message_id = od.unique_message_id; END')");
    /* The same semantics on PostgreSQL and SQLite. */
    for (int k = 0; k < 2; k++) {
        sb_errors_sql o = build(k ? SB_DIALECT_POSTGRES : SB_DIALECT_SQLITE);
        sbt_has("new attempts", o.s[ER_NEW_ATTEMPTS],
                "ON CONFLICT (unique_message_id, time_of_failure) DO NOTHING "
                "RETURNING unique_message_id, time_of_failure");
        sbt_has("upsert", o.s[ER_UPSERT],
                "number_of_processing_attempts = "
                "t_failed_messages.number_of_processing_attempts + "
                "excluded.number_of_processing_attempts, ");
        sbt_has("DDL", o.s[ER_DDL],
                "PRIMARY KEY (unique_message_id, time_of_failure)");
        sbt_has(
            "fill", o.s[ER_ATTEMPTS_FILL],
            "SELECT unique_message_id, first_time_of_failure FROM "
            "t_failed_messages UNION SELECT unique_message_id, "
            "last_attempted_at FROM t_failed_messages WHERE true ON CONFLICT "
            "DO NOTHING");
        sbt_lacks("DDL", o.s[ER_DDL], "INSERT INTO t_failed_message_attempts");
        sbt_has("DDL", o.s[ER_DDL],
                k ? "t_fa_fm_del AFTER DELETE" : "t_fa_fm_ad AFTER DELETE");
        sb__errors_sql_free(&o);
    }
    free_all(all, n);
}

/* E11: the batch statements read one JSON array parameter with OPENJSON;
 * inserts-if-absent fold their rows by key and lock the key range. */
static void test_batches_through_openjson(void **state)
{
    (void)state;
    ALL(all, n);
    static const char *const json[] = {
        "UPSERT",      "DELETE_GROUPS",   "INSERT_GROUPS", "ENDPOINTS",
        "DROP_BODIES", "CONFIRM",         "DROP_CLAIMS",   "CLAIM",
        "SET_STATUS",  "DELETE_MESSAGES", "DROP_EDITS",    "PRUNE_GROUPS",
        "OPS_GET",     "NEW_ATTEMPTS"};
    for (size_t i = 0; i < sizeof json / sizeof *json; i++)
        sbt_has(json[i], find(all, n, json[i]),
                "OPENJSON(CAST($1 AS nvarchar(max)))");
    sbt_has("PRUNE_GROUPS", find(all, n, "PRUNE_GROUPS"),
            "unique_message_id + N'|' + group_id NOT IN (SELECT j.v " BIN2
            " FROM OPENJSON(CAST($2 AS nvarchar(max)))");
    static const char *const absent[] = {"INSERT_GROUPS", "ENDPOINTS",
                                         "CLAIM",         "FAILED_IMPORT",
                                         "EDIT_CLAIM",    "NEW_ATTEMPTS"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        sbt_has(absent[i], find(all, n, absent[i]),
                "NOT EXISTS (SELECT 1 FROM t_");
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        sbt_has(absent[i], find(all, n, absent[i]), "WITH (UPDLOCK, HOLDLOCK)");
    sbt_has("ENDPOINTS", find(all, n, "ENDPOINTS"),
            "ROW_NUMBER() OVER (PARTITION BY y.i ORDER BY y.ord)");
    sbt_has("ENDPOINTS", find(all, n, "ENDPOINTS"),
            "CAST(a.[key] AS int) AS ord, j.i " BIN2 " AS i");
    sbt_has("INSERT_GROUPS", find(all, n, "INSERT_GROUPS"),
            "ROW_NUMBER() OVER (PARTITION BY y.u, y.g ORDER BY y.ord)");
    sbt_has("INSERT_GROUPS", find(all, n, "INSERT_GROUPS"), "WHERE x.rn = 1");
    sbt_has("CLAIM", find(all, n, "CLAIM"),
            "OUTPUT inserted.unique_message_id INTO @sb_claimed");
    /* Upserts of one row are merges too. */
    static const char *const merges[] = {"PUT_BODY", "SET_COMMENT",
                                         "REDIRECT_PUT", "OP_START"};
    for (size_t i = 0; i < sizeof merges / sizeof *merges; i++) {
        sbt_has(merges[i], find(all, n, merges[i]), "MERGE t_");
        sbt_has(merges[i], find(all, n, merges[i]), " WITH (HOLDLOCK) AS ");
    }
    sbt_has(
        "OP_START", find(all, n, "OP_START"),
        "WHEN MATCHED AND (o.state <> N'running' OR o.updated_at < $6) THEN "
        "UPDATE SET");
    sbt_has("OP_START", find(all, n, "OP_START"),
            "OUTPUT inserted.total, inserted.done, inserted.cursor_id INTO "
            "@sb_op; SELECT total, done, cursor_id FROM @sb_op");
    free_all(all, n);
}

/* Nothing of another dialect is left anywhere, triggers included. */
static void test_no_foreign_dialect(void **state)
{
    (void)state;
    ALL(all, n);
    static const char *const bad[] = {"::",
                                      "now()",
                                      " LIMIT ",
                                      "RETURNING",
                                      "ON CONFLICT",
                                      "json_each",
                                      "json_to_recordset",
                                      "json_array_elements",
                                      "||",
                                      "{p}",
                                      "WHERE true",
                                      "LEAST(",
                                      "GREATEST(",
                                      "IS DISTINCT FROM",
                                      "FOR UPDATE",
                                      "SKIP LOCKED",
                                      "excluded.",
                                      "LATERAL",
                                      "plpgsql",
                                      "OFFSET 0",
                                      "tsvector",
                                      "tsquery",
                                      "GETDATE",
                                      "SYSDATETIME()",
                                      "CREATE TABLE IF",
                                      "CREATE INDEX IF",
                                      "BOOLEAN",
                                      " TEXT",
                                      "BYTEA",
                                      "ANY (",
                                      "LOCK TABLE"};
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
            sbt_lacks(all[i].name, all[i].sql, bad[b]);
    free_all(all, n);
}

/* Whether `p` (just after "<col> = ") starts the sentinel form for the
 * value there: "<v> COLLATE ... AND <col> + N'.' = <v> + N'.' COLLATE". */
static int sentinel_at(const char *col, const char *p)
{
    char v[32], want[256];
    size_t k = 0;
    while (p[k] && p[k] != ' ' && p[k] != ')' && k + 1 < sizeof v) {
        v[k] = p[k];
        k++;
    }
    v[k] = '\0';
    snprintf(want, sizeof want, "%s " BIN2 " AND %s + N'.' = %s + N'.' " BIN2,
             v, col, v);
    return strncmp(p, want, strlen(want)) == 0;
}

/* Every comparison of an id or name column with a caller's value (a
 * parameter, or a JSON element of a caller's array) carries the padding
 * sentinel: SQL Server finds 'a' = 'a ' under every collation. The
 * exceptions compare values the store read from its own tables or made
 * itself (sql_mssql.c says so at each). */
static void test_sentinel_on_callers_values(void **state)
{
    (void)state;
    ALL(all, n);
    static const char *const cols[] = {"unique_message_id",
                                       "group_id",
                                       "failed_queue",
                                       "processing_endpoint",
                                       "message_type",
                                       "group_type",
                                       "item",
                                       "id"};
    static const struct {
        const char *stmt, *col;
    } trusted[] = {
        {"FAILED_IMPORT", "id"},             /* a dead-letter row's id */
        {"IMPORTS_DELETE", "id"},            /* read from failed_imports */
        {"DELETE_COMMENT", "group_id"},      /* a normalized UUID */
        {"EDIT_CLAIM", "unique_message_id"}, /* found exactly just before */
        {"SET_COMMENT", "group_id"},         /* a normalized UUID */
        {"STALE_FIX", "group_id"},           /* read from failed_counts */
        {"STALE_FIX", "item"},
    };
    int checked = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
            char pat[64];
            snprintf(pat, sizeof pat, "%s = ", cols[c]);
            for (const char *p = all[i].sql; (p = strstr(p, pat)) != NULL;
                 p += strlen(pat)) {
                /* a whole column name, not the end of a longer one */
                if (p > all[i].sql &&
                    (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))
                    continue;
                const char *v = p + strlen(pat);
                int param = v[0] == '$' || strncmp(v, "j.v", 3) == 0 ||
                            strncmp(v, "x.group_id", 10) == 0;
                if (!param)
                    continue;
                int ok = 0;
                for (size_t t = 0; t < sizeof trusted / sizeof *trusted; t++)
                    ok |= strcmp(trusted[t].stmt, all[i].name) == 0 &&
                          strcmp(trusted[t].col, cols[c]) == 0;
                /* the column as the statement qualifies it */
                char qual[48] = "";
                if (p >= all[i].sql + 2 && p[-1] == '.')
                    snprintf(qual, sizeof qual, "%c.%s", p[-2], cols[c]);
                else
                    snprintf(qual, sizeof qual, "%s", cols[c]);
                if (!ok && !sentinel_at(qual, v))
                    fail_msg("%s compares %s with %.12s without the "
                             "sentinel:\n%s",
                             all[i].name, cols[c], v, all[i].sql);
                checked++;
            }
        }
    assert_true(checked >= 30);
    /* Spot checks of the forms. */
    sbt_has("GET", find(all, n, "GET"),
            "WHERE unique_message_id = $1 " BIN2
            " AND unique_message_id + N'.' "
            "= $1 + N'.' " BIN2);
    sbt_has("list page", find(all, n, "list page"),
            "group_id = $4 " BIN2 " AND group_id + N'.' = $4 + N'.' " BIN2 ")");
    sbt_has("walk page 0", find(all, n, "walk page 0"),
            "unique_message_id = j.v " BIN2
            " AND unique_message_id + N'.' = j.v "
            "+ N'.' " BIN2);
    free_all(all, n);
}

/* The statements whose callers read the row count end in SELECT
 * @@ROWCOUNT (read by the ODBC driver, whatever NOCOUNT says); no other
 * statement needs it. */
static void test_rowcount_where_changes_are_read(void **state)
{
    (void)state;
    ALL(all, n);
    /* select.c's fence and acknowledgement (issue 22) and edit.c's claim:
     * the only callers of changes. */
    ends_with("OP_STEP", find(all, n, "OP_STEP"), "; SELECT @@ROWCOUNT");
    ends_with("OP_ACK", find(all, n, "OP_ACK"), "; SELECT @@ROWCOUNT");
    ends_with("EDIT_CLAIM", find(all, n, "EDIT_CLAIM"), "; SELECT @@ROWCOUNT");
    int with = 0;
    for (size_t i = 0; i < n; i++)
        with += strstr(all[i].sql, "@@ROWCOUNT") != NULL;
    assert_int_equal(with, 3);
    /* The triggers keep their own counts from the client. */
    const char *ddl = find(all, n, "DDL");
    int triggers = 0;
    for (const char *p = ddl; (p = strstr(p, "CREATE TRIGGER")) != NULL; p++)
        triggers++;
    int quiet = 0;
    for (const char *p = ddl;
         (p = strstr(p, "AS BEGIN SET NOCOUNT ON;")) != NULL; p++)
        quiet++;
    assert_int_equal(triggers, 8);
    assert_int_equal(quiet, 8);
    free_all(all, n);
}

/* E11 and SQL Server's cap: no statement binds 2,100 parameters; a chunk
 * of SB_ERRORS_CHUNK rows is one parameter. */
static void test_parameters_under_the_cap(void **state)
{
    (void)state;
    ALL(all, n);
    for (size_t i = 0; i < n; i++) {
        long max = 0, bound = 0;
        for (const char *p = all[i].sql; (p = strchr(p, '$')) != NULL; p++) {
            if (p[1] < '1' || p[1] > '9')
                continue; /* a JSON path ('$.x', '$') */
            long v = strtol(p + 1, NULL, 10);
            bound++; /* the driver binds each use */
            if (v > max)
                max = v;
        }
        if (max >= 2100 || bound >= 2100)
            fail_msg("%s binds %ld parameters (largest $%ld)", all[i].name,
                     bound, max);
    }
    /* The batch statements whatever the chunk's size. */
    static const char *const one[] = {"UPSERT", "INSERT_GROUPS", "ENDPOINTS",
                                      "DELETE_GROUPS", "CONFIRM"};
    for (size_t i = 0; i < sizeof one / sizeof *one; i++) {
        const char *s = find(all, n, one[i]);
        for (const char *p = s; (p = strchr(p, '$')) != NULL; p++)
            if (p[1] >= '1' && p[1] <= '9' && p[1] != '1')
                fail_msg("%s uses a parameter beyond $1:\n%s", one[i], s);
    }
    free_all(all, n);
}

/* The schema: IF OBJECT_ID / sys.indexes guards, binary collations on
 * every key, bounded keys within SQL Server's index limits, times as
 * bigint microseconds, bodies varbinary(max), the filtered indexes,
 * triggers created through EXEC, and no full-text DDL inside the DDL
 * transaction. */
static void test_schema(void **state)
{
    (void)state;
    ALL(all, n);
    const char *d = find(all, n, "DDL");
    static const char *const tables[] = {
        "failed_messages",        "failed_message_groups",
        "group_comments",         "known_endpoints",
        "retry_claims",           "group_operations",
        "message_edits",          "redirects",
        "message_bodies",         "failed_imports",
        "failed_counts",          "failed_message_history",
        "failed_message_attempts"};
    char want[256];
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        snprintf(want, sizeof want,
                 "IF OBJECT_ID(N't_%s', N'U') IS NULL\nCREATE TABLE t_%s (",
                 tables[i], tables[i]);
        sbt_has("DDL", d, want);
    }
    sbt_has("DDL", d,
            "unique_message_id nvarchar(400) " BIN2 " NOT NULL PRIMARY KEY,");
    sbt_has("DDL", d, "message_type nvarchar(200) " BIN2 ",");
    sbt_has("DDL", d, "failed_queue nvarchar(200) " BIN2 ",");
    sbt_has("DDL", d, "processing_endpoint nvarchar(400) " BIN2 ",");
    sbt_has("DDL", d, "group_id nvarchar(36) " BIN2 " NOT NULL,");
    sbt_has("DDL", d, "item nvarchar(400) " BIN2 " NOT NULL,");
    sbt_has("DDL", d, "from_queue nvarchar(200) " BIN2 " NOT NULL UNIQUE,");
    sbt_has("DDL", d, "status_changed_at bigint NOT NULL,");
    sbt_has("DDL", d, "first_time_of_failure bigint NOT NULL,");
    sbt_has("DDL", d, "time_sent bigint,");
    sbt_has("DDL", d, "headers nvarchar(max),");
    sbt_has("DDL", d, "body varbinary(max) NOT NULL,");
    sbt_has("DDL", d, "search_text nvarchar(max),");
    sbt_has("DDL", d, "ft_id bigint IDENTITY(1, 1) NOT NULL,");
    sbt_has("DDL", d,
            "CONSTRAINT t_failed_messages_ft_key UNIQUE NONCLUSTERED (ft_id)");
    /* Failure times come from headers: no datetime column here. */
    sbt_lacks("DDL", d, "datetime");
    sbt_has("DDL", d,
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "
            "OBJECT_ID(N't_failed_messages', N'U') AND name = "
            "N't_failed_messages_queue_type_idx')\nEXEC(N'CREATE INDEX "
            "t_failed_messages_queue_type_idx ON t_failed_messages "
            "(failed_queue, message_type, unique_message_id, status)');");
    sbt_has("DDL", d, "(status_changed_at) WHERE status IN (2, 3)");
    sbt_has("DDL", d, "(kind, item, status) WHERE stale = 1");
    sbt_has("DDL", d,
            "IF OBJECT_ID(N't_fc_fm_ins', N'TR') IS NULL EXEC(N'CREATE TRIGGER "
            "t_fc_fm_ins ON t_failed_messages AFTER INSERT AS BEGIN");
    sbt_has("DDL", d, "t_fc_fm_upd ON t_failed_messages AFTER UPDATE");
    sbt_has("DDL", d, "t_fc_fm_del ON t_failed_messages AFTER DELETE");
    sbt_has("DDL", d, "t_fc_fg_ins ON t_failed_message_groups AFTER INSERT");
    sbt_has("DDL", d, "t_fc_fg_del ON t_failed_message_groups AFTER DELETE");
    sbt_has("DDL", d,
            "t_fh_fm_upd ON t_failed_messages AFTER UPDATE AS BEGIN SET "
            "NOCOUNT ON; IF NOT UPDATE(status) RETURN;");
    /* Quotes inside the EXEC'd trigger text are doubled. */
    sbt_has("DDL", d, "coalesce(nw.failed_queue, '''') AS item");
    sbt_has("DDL", d, "MERGE t_failed_counts WITH (HOLDLOCK) AS c USING");
    sbt_lacks("DDL", d, "FULLTEXT");
    /* Key sizes (2 bytes a unit) within the index limits. */
    assert_true(2 * (SB_MS_QUEUE_MAX + SB_MS_TYPE_MAX + SB_MS_ID_MAX) + 4 <=
                1700);                           /* the queue index */
    assert_true(2 * (SB_MS_ID_MAX + 36) <= 900); /* groups' clustered key */
    assert_true(4 + 2 * SB_MS_ENDPOINT_MAX + 4 <= 900); /* counts' key */
    assert_true(SB_MS_ID_MAX >= 400);                   /* the API's id limit */
    assert_true(SB_MS_QUEUE_MAX >= 200);                /* a valid queue name */
    free_all(all, n);
}

/* E22: the full-text catalog and index only where Full-Text Search is
 * installed, outside a transaction, under a session lock; search by
 * CONTAINSTABLE, best rank then newest; a readiness check first. */
static void test_fulltext(void **state)
{
    (void)state;
    ALL(all, n);
    const char *f = find(all, n, "FULLTEXT");
    sbt_has("FULLTEXT", f,
            "IF FULLTEXTSERVICEPROPERTY('IsFullTextInstalled') = 1\nBEGIN\n");
    sbt_has("FULLTEXT", f, "@LockOwner = N'Session'");
    sbt_has("FULLTEXT", f,
            "CREATE FULLTEXT CATALOG t_failed_messages_ftc WITH "
            "ACCENT_SENSITIVITY = ON;");
    sbt_has(
        "FULLTEXT", f,
        "CREATE FULLTEXT INDEX ON t_failed_messages (search_text LANGUAGE 0) "
        "KEY INDEX t_failed_messages_ft_key ON t_failed_messages_ftc WITH "
        "(CHANGE_TRACKING = AUTO, STOPLIST = OFF);");
    sbt_has("FULLTEXT", f, "sp_releaseapplock");
    /* Issue 17: -999 is a call error, not a timeout. */
    sbt_applock_checked("FULLTEXT", f);
    sbt_has("FULLTEXT", f, "the full-text lock (sp_getapplock returned -1)");
    sbt_lacks("FULLTEXT", f, "@LockOwner = N'Transaction'");
    const char *s = find(all, n, "SEARCH");
    sbt_has("SEARCH", s,
            "DECLARE @sb_q nvarchar(4000) = $1; SELECT TOP (CAST($2 "
            "AS int))");
    sbt_has(
        "SEARCH", s,
        "FROM CONTAINSTABLE(t_failed_messages, search_text, @sb_q) AS k JOIN "
        "t_failed_messages AS f ON f.ft_id = k.[KEY] ORDER BY k.RANK DESC, "
        "f.last_time_of_failure DESC");
    sbt_has("SEARCH_READY", find(all, n, "SEARCH_READY"),
            "'TableHasActiveFulltextIndex'");
    /* The other dialects have neither statement. */
    sb_errors_sql pg = build(SB_DIALECT_POSTGRES);
    sb_errors_sql lite = build(SB_DIALECT_SQLITE);
    assert_string_equal(pg.s[ER_FULLTEXT], "");
    assert_string_equal(lite.s[ER_SEARCH_READY], "");
    sb__errors_sql_free(&pg);
    sb__errors_sql_free(&lite);
    free_all(all, n);
}

/* E22's cut on SQL Server: the stored words and the query agree with
 * PostgreSQL's (words.c), in CONTAINS syntax. */
static void test_search_words(void **state)
{
    (void)state;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    const char *texts[3] = {"Shop.PlaceOrder", "{\"sku\":\"blue-WIDGET\"}",
                            NULL};
    size_t lens[3] = {strlen(texts[0]), strlen(texts[1]), 0};
    sb__search_words(&b, texts, lens, 3);
    assert_string_equal(b.data, "shop placeorder sku blue widget");
    sb__buf_reset(&b);
    assert_int_equal(sb__search_contains("Shop.Order  widget", &b), 2);
    assert_string_equal(b.data, "\"shop order\" OR \"widget\"");
    sb__buf_reset(&b);
    assert_int_equal(sb__search_contains("\"a\" -b OR (c", &b), 4);
    assert_string_equal(b.data, "\"a\" OR \"b\" OR \"or\" OR \"c\"");
    sb__buf_reset(&b);
    assert_int_equal(sb__search_contains(" . !? ", &b), 0);
    sb__buf_reset(&b);
    /* Beyond ASCII: punctuation breaks, letters stay (case folds in the
     * full-text index). */
    assert_int_equal(sb__search_contains("\xc2\xab\xc3\x84rger\xc2\xbb", &b),
                     1);
    assert_string_equal(b.data, "\"\xc3\x84rger\"");
    sb__buf_free(&b);
}

/* What SQL Server's keys cannot hold goes to failed_imports there, and
 * nowhere else. */
static void test_unfit_ids(void **state)
{
    (void)state;
    char id[402];
    memset(id, 'a', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    assert_non_null(sb__errors_unfit_id(SB_DIALECT_MSSQL, id)); /* 401 */
    id[400] = '\0';
    assert_null(sb__errors_unfit_id(SB_DIALECT_MSSQL, id));
    assert_non_null(sb__errors_unfit_id(SB_DIALECT_MSSQL, "abc "));
    assert_null(sb__errors_unfit_id(SB_DIALECT_MSSQL, " abc"));
    assert_null(sb__errors_unfit_id(SB_DIALECT_POSTGRES, "abc "));
    assert_null(sb__errors_unfit_id(SB_DIALECT_SQLITE, "abc "));
}

/* The dynamic statements' paging and limits in T-SQL, parameters in the
 * order the callers bind them. */
static void test_paging(void **state)
{
    (void)state;
    ALL(all, n);
    /* list: the filters' values ($1..$7 here), then size and offset */
    const char *p = find(all, n, "list page");
    sbt_has("list page", p, " FROM t_failed_messages f WHERE 1 = 1");
    sbt_has("list page", p,
            "ORDER BY last_time_of_failure DESC, unique_message_id DESC OFFSET "
            "CAST($9 AS bigint) ROWS FETCH NEXT CAST($8 AS bigint) ROWS ONLY");
    sbt_has("walk page 2", find(all, n, "walk page 2"),
            "SELECT TOP (CAST($2 AS int)) unique_message_id FROM "
            "t_failed_messages WHERE unique_message_id > $1 AND status = $3");
    ends_with("walk page 2", find(all, n, "walk page 2"),
              " ORDER BY unique_message_id");
    sbt_has(
        "counts by 1", find(all, n, "counts by 1"),
        "SELECT TOP (CAST($3 AS int)) item, sum(n) FROM t_failed_counts WHERE "
        "kind = $1 AND item <> '' AND status = $2 GROUP BY item");
    sbt_has("counts by 0", find(all, n, "counts by 0"),
            "TOP (CAST($2 AS int))");
    sbt_has("count 1 1", find(all, n, "count 1 1"), "AND status = $3");
    sbt_has(
        "EXPIRED", find(all, n, "EXPIRED"),
        "SELECT TOP (CAST($3 AS int)) unique_message_id FROM "
        "t_failed_messages WHERE status IN (2, 3) AND status_changed_at < " NOW
        " - $1 * 1000");
    sbt_has("IMPORTS_TAKE", find(all, n, "IMPORTS_TAKE"),
            "WITH (UPDLOCK, ROWLOCK, READPAST)");
    sbt_has("STALE_TAKE", find(all, n, "STALE_TAKE"),
            "SELECT TOP (50) item, status FROM t_failed_counts WITH (UPDLOCK, "
            "ROWLOCK, READPAST)");
    sbt_has("REDIRECTS_LOCK", find(all, n, "REDIRECTS_LOCK"),
            "WITH (TABLOCKX, HOLDLOCK)");
    free_all(all, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsert_is_a_guarded_merge),
        cmocka_unit_test(test_attempts_counted_once),
        cmocka_unit_test(test_batches_through_openjson),
        cmocka_unit_test(test_no_foreign_dialect),
        cmocka_unit_test(test_sentinel_on_callers_values),
        cmocka_unit_test(test_rowcount_where_changes_are_read),
        cmocka_unit_test(test_parameters_under_the_cap),
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_fulltext),
        cmocka_unit_test(test_search_words),
        cmocka_unit_test(test_unfit_ids),
        cmocka_unit_test(test_paging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
