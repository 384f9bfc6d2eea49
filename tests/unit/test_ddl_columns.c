/* test_ddl_columns.c - sb__ddl_columns (transport/columns.c): the columns
 * each CREATE TABLE of a DDL text declares, which every module checks
 * against the catalog at open (issue 20.8, rule T7). Read from synthetic
 * texts with the constructs that could mislead it, and from the real DDL
 * of the transport, the channel and the error store on every backend,
 * SQL Server's T-SQL included (no server needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "channel/channel.h"
#include "errors/errors.h"
#include "errors/sql_int.h"
#include "transport/transport.h"

/* "table: col col ...; table: ..." for the columns of `ddl`. */
static void summary(const char *ddl, char *out, size_t cap)
{
    sb_ddl_column *c = NULL;
    size_t n = 0;
    assert_int_equal(sb__ddl_columns(ddl, &c, &n), SB_OK);
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        bool first = i == 0 || c[i].table_len != c[i - 1].table_len ||
                     memcmp(c[i].table, c[i - 1].table, c[i].table_len) != 0;
        int w = first ? snprintf(out + k, cap - k, "%s%.*s: %.*s",
                                 i == 0 ? "" : "; ", (int)c[i].table_len,
                                 c[i].table, (int)c[i].name_len, c[i].def)
                      : snprintf(out + k, cap - k, " %.*s", (int)c[i].name_len,
                                 c[i].def);
        assert_true(w > 0 && (size_t)w < cap - k);
        k += (size_t)w;
    }
    sb__free(c);
}

static void expect(const char *ddl, const char *want)
{
    char got[4096];
    summary(ddl, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("DDL:\n%s\ngot:  %s\nwant: %s", ddl, got, want);
}

static void test_constructs(void **state)
{
    (void)state;
    expect("CREATE TABLE t (a INTEGER, b TEXT NOT NULL)", "t: a b");
    expect("create table if not exists t(a int,b int)", "t: a b");
    expect("CREATE TABLE IF NOT EXISTS s.t (\n  a int\n)", "s.t: a");
    /* Table constraints are not columns; nested parentheses and quoted
     * commas and parentheses stay inside their column. */
    expect("CREATE TABLE t (a text DEFAULT '(,)' NOT NULL,\n"
           "  b numeric(10, 2) CHECK (b > 0),\n"
           "  c timestamptz DEFAULT (now()),\n"
           "  \"d,)\" int,\n"
           "  PRIMARY KEY (a, b), UNIQUE (c), CONSTRAINT k CHECK (a <> ''),\n"
           "  FOREIGN KEY (a) REFERENCES u (x))",
           "t: a b c");
    /* T-SQL: the guard before it, N'' strings, an inline index. */
    expect("IF OBJECT_ID(N'p_t', N'U') IS NULL\nCREATE TABLE p_t (\n"
           "  id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,\n"
           "  h nvarchar(max) NOT NULL DEFAULT N'{}',\n"
           "  INDEX ix (h)\n);",
           "p_t: id h");
    /* Not tables: a virtual table, CREATE TABLE AS, the words inside a
     * string, an identifier that merely ends in "create". */
    expect("CREATE VIRTUAL TABLE f USING fts5(a, b);\n"
           "CREATE TABLE c AS SELECT 1;\n"
           "SELECT 'CREATE TABLE x (y int)';\n"
           "UPDATE recreate TABLE z (w int);",
           "");
    /* Several tables, in order; a list cut short keeps the columns that
     * ended before the cut. */
    expect("CREATE TABLE a (x int); CREATE INDEX i ON a (x);\n"
           "CREATE TABLE b (y int, z int);",
           "a: x; b: y z");
    expect("CREATE TABLE a (x int, y", "a: x");
    expect("", "");
}

/* The tables a module's DDL creates on one backend, with their column
 * counts: "name/count ...". */
static void tables(const char *ddl, char *out, size_t cap)
{
    sb_ddl_column *c = NULL;
    size_t n = 0;
    assert_int_equal(sb__ddl_columns(ddl, &c, &n), SB_OK);
    size_t k = 0, count = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        count++;
        bool last = i + 1 == n || c[i + 1].table_len != c[i].table_len ||
                    memcmp(c[i + 1].table, c[i].table, c[i].table_len) != 0;
        if (!last)
            continue;
        int w = snprintf(out + k, cap - k, "%s%.*s/%zu", k ? " " : "",
                         (int)c[i].table_len, c[i].table, count);
        assert_true(w > 0 && (size_t)w < cap - k);
        k += (size_t)w;
        count = 0;
    }
    sb__free(c);
}

static void expect_tables(const char *what, const char *ddl, const char *want)
{
    char got[2048];
    tables(ddl, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("%s:\ngot:  %s\nwant: %s", what, got, want);
}

static void test_module_ddl(void **state)
{
    (void)state;
    static const int dialects[] = {SB_DIALECT_SQLITE, SB_DIALECT_POSTGRES,
                                   SB_DIALECT_MSSQL};
    static const char *const errors_common =
        "x_failed_message_groups/4 x_group_comments/3 x_known_endpoints/5 "
        "x_retry_claims/3 x_group_operations/10 x_message_edits/3 "
        "x_redirects/4";
    for (size_t d = 0; d < 3; d++) {
        int dialect = dialects[d];
        sb_error err;
        sb_transport_sql *t = NULL;
        assert_int_equal(sb__transport_sql_new(dialect, "x_", &t, &err), SB_OK);
        expect_tables("transport", t->ddl,
                      "x_messages/15 x_counts/6 x_queue_settings/10 "
                      "x_schedules/13 x_unique_keys/4 x_heartbeats/10 "
                      "x_settings/3");
        /* The messages table declares the typed check's columns, in its
         * order (schema.c). */
        sb_ddl_column *c = NULL;
        size_t n = 0;
        assert_int_equal(sb__ddl_columns(t->ddl, &c, &n), SB_OK);
        for (size_t i = 0; i < sb__message_column_count; i++) {
            const char *name = sb__message_columns[i].name;
            assert_int_equal(c[i].name_len, strlen(name));
            assert_memory_equal(c[i].def, name, strlen(name));
        }
        sb__free(c);
        sb__transport_sql_free(t);

        sb_channel_sql ch;
        assert_int_equal(sb__channel_sql_new(dialect, "x_", &ch, &err), SB_OK);
        expect_tables("channel", ch.ddl,
                      dialect == SB_DIALECT_SQLITE
                          ? "x_channel_messages/12 x_channel_subscribers/4 "
                            "x_recovery_state/7 x_channel_ack_seq/2"
                          : "x_channel_messages/12 x_channel_subscribers/4 "
                            "x_recovery_state/7");
        sb__channel_sql_free(&ch);

        sb_errors_sql es;
        assert_int_equal(sb__errors_sql_new(dialect, "x_", &es, &err), SB_OK);
        char want[1024];
        /* failed_messages: its listed columns, status, status_changed_at,
         * last_modified, and the search columns of each backend. */
        size_t fm = sb__err_n_columns + 3 +
                    (dialect == SB_DIALECT_POSTGRES ? 1
                     : dialect == SB_DIALECT_MSSQL  ? 2
                                                    : 0);
        if (dialect == SB_DIALECT_MSSQL)
            snprintf(want, sizeof want,
                     "x_failed_messages/%zu %s x_message_bodies/3 "
                     "x_failed_imports/6 x_failed_message_attempts/2 "
                     "x_failed_counts/9 x_failed_message_history/4",
                     fm, errors_common);
        else
            snprintf(want, sizeof want,
                     "x_failed_messages/%zu %s x_failed_message_attempts/2 "
                     "x_message_bodies/3 x_failed_imports/6 "
                     "x_failed_counts/9 x_failed_message_history/4",
                     fm, errors_common);
        expect_tables("errors", es.s[ER_DDL], want);
        sb__errors_sql_free(&es);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constructs),
        cmocka_unit_test(test_module_ddl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
