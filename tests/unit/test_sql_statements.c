/* test_sql_statements.c - every statement text of every module, as
 * `sqlbus schema print --statements` dumps it (issue 17): the dump covers
 * every entry of every statement set, on every backend, and no text SQL
 * Server would receive uses a construct T-SQL lacks. No server needed:
 * none runs in CI, so this is the check every build makes of that text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sql_text.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/channel.h"
#include "errors/errors.h"
#include "errors/operations.h"
#include "transport/transport.h"

#define MAX_TEXTS 400

typedef struct dump {
    size_t n;
    char *name[MAX_TEXTS];
    char *sql[MAX_TEXTS];
} dump;

static void keep(const char *name, const char *sql, void *user)
{
    dump *d = user;
    if (d->n == MAX_TEXTS)
        fail_msg("more than %d statements", MAX_TEXTS);
    d->name[d->n] = strdup(name);
    d->sql[d->n] = strdup(sql);
    d->n++;
}

static const char *const backends[] = {"sqlite", "postgresql", "mssql"};
static const int dialects[] = {SB_DIALECT_SQLITE, SB_DIALECT_POSTGRES,
                               SB_DIALECT_MSSQL};

/* The whole dump of `backend`, as the CLI walks it. */
static void dump_all(const char *backend, dump *d)
{
    memset(d, 0, sizeof *d);
    sb_error err;
    assert_int_equal(sb_schema_statements(backend, "t_", keep, d, &err), SB_OK);
    assert_int_equal(sb_channel_statements(backend, "t_", keep, d, &err),
                     SB_OK);
    assert_int_equal(sb_errors_statements(backend, "t_", keep, d, &err), SB_OK);
    assert_int_equal(sb_operations_statements(backend, "t_", keep, d, &err),
                     SB_OK);
}

static void dump_free(dump *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->name[i]);
        free(d->sql[i]);
    }
}

static int dumped(const dump *d, const char *sql)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->sql[i], sql) == 0)
            return 1;
    return 0;
}

static void covered(const dump *d, const char *set, size_t i, const char *sql)
{
    if (sql != NULL && sql[0] != '\0' && !dumped(d, sql))
        fail_msg("%s statement %zu is not in the dump:\n%s", set, i, sql);
}

/* Issue 17: every entry of every statement set of every module is in the
 * dump, read from the sets themselves (not from the dump's name lists). */
static void test_dump_covers_every_set_entry(void **state)
{
    (void)state;
    for (size_t b = 0; b < 3; b++) {
        dump d;
        dump_all(backends[b], &d);
        sb_error err;
        sb_transport_sql *t = NULL;
        assert_int_equal(sb__transport_sql_new(dialects[b], "t_", &t, &err),
                         SB_OK);
        char **f = (char **)(void *)t;
        for (size_t i = 0; i < sizeof *t / sizeof(char *); i++)
            covered(&d, "transport", i, f[i]);
        sb__transport_sql_free(t);
        sb_channel_sql ch;
        assert_int_equal(sb__channel_sql_new(dialects[b], "t_", &ch, &err),
                         SB_OK);
        char **c = (char **)(void *)&ch;
        for (size_t i = 0; i < sizeof ch / sizeof(char *); i++)
            covered(&d, "channel", i, c[i]);
        sb__channel_sql_free(&ch);
        sb_errors_sql es;
        assert_int_equal(sb__errors_sql_new(dialects[b], "t_", &es, &err),
                         SB_OK);
        for (size_t i = 0; i < ER_N; i++)
            covered(&d, "errors", i, es.s[i]);
        sb__errors_sql_free(&es);
        sb_ops_sql ops;
        assert_int_equal(sb__ops_sql_new(dialects[b], "t_", &ops), SB_OK);
        char **o = (char **)(void *)&ops;
        for (size_t i = 0; i < sizeof ops / sizeof(char *); i++)
            covered(&d, "operations", i, o[i]);
        sb__ops_sql_free(&ops);
        dump_free(&d);
    }
}

/* Names are unique and say their module; texts are never empty. */
static void test_dump_names(void **state)
{
    (void)state;
    static const char *const modules[] = {"transport.", "channel.", "errors.",
                                          "operations.", "db."};
    for (size_t b = 0; b < 3; b++) {
        dump d;
        dump_all(backends[b], &d);
        assert_true(d.n > 100);
        for (size_t i = 0; i < d.n; i++) {
            int known = 0;
            for (size_t m = 0; m < 5; m++)
                known |=
                    strncmp(d.name[i], modules[m], strlen(modules[m])) == 0;
            if (!known)
                fail_msg("%s: statement name %s", backends[b], d.name[i]);
            assert_true(d.sql[i][0] != '\0');
            for (size_t j = i + 1; j < d.n; j++)
                if (strcmp(d.name[i], d.name[j]) == 0)
                    fail_msg("%s: %s twice", backends[b], d.name[i]);
        }
        dump_free(&d);
    }
}

/* `sql` with its string literals ('...', quotes doubled inside) and
 * -- comments blanked, so only the statement's own words are checked. */
static char *code_only(const char *sql)
{
    char *s = strdup(sql);
    int in_str = 0, in_comment = 0;
    for (char *p = s; *p; p++) {
        if (in_comment) {
            if (*p == '\n')
                in_comment = 0;
            else
                *p = ' ';
        } else if (in_str) {
            if (*p == '\'' && p[1] == '\'') {
                p[0] = p[1] = ' ';
                p++;
            } else if (*p == '\'') {
                in_str = 0;
            } else {
                *p = ' ';
            }
        } else if (*p == '\'') {
            in_str = 1;
        } else if (*p == '-' && p[1] == '-') {
            in_comment = 1;
            *p = ' ';
        }
    }
    return s;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '@' || c == '#';
}

/* Whether `word` occurs in `s` as a word of its own, any case. */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = s; *p; p++)
        if (strncasecmp(p, word, n) == 0 && (p == s || !word_char(p[-1])) &&
            !word_char(p[n]))
            return 1;
    return 0;
}

/* What T-SQL lacks: the check itself must see each one. */
static const char *tsql_defect(const char *sql)
{
    char *s = code_only(sql);
    const char *why = NULL;
    if (has_word(s, "LIMIT"))
        why = "LIMIT (T-SQL has TOP / OFFSET ... FETCH)";
    else if (strstr(s, "::") != NULL)
        why = ":: casts";
    else if (has_word(s, "RETURNING"))
        why = "RETURNING (T-SQL has OUTPUT)";
    else if (has_word(s, "TEXT"))
        why = "TEXT columns (no keys, no comparison with nvarchar)";
    else if (has_word(s, "ILIKE") || has_word(s, "SERIAL") ||
             has_word(s, "BOOLEAN"))
        why = "a PostgreSQL type or operator";
    for (const char *p = s; why == NULL && (p = strstr(p, "ON CONFLICT")); p++)
        why = "ON CONFLICT (T-SQL has MERGE)";
    /* T-SQL has IF NOT EXISTS (subquery), not CREATE ... IF NOT EXISTS. */
    for (const char *p = s; why == NULL && (p = strstr(p, "IF NOT EXISTS"));
         p++) {
        const char *q = p + strlen("IF NOT EXISTS");
        while (*q == ' ' || *q == '\n')
            q++;
        if (*q != '(')
            why = "CREATE ... IF NOT EXISTS";
    }
    free(s);
    return why;
}

/* The check above, on texts that have each defect and on texts that are
 * fine (so the walk below cannot pass by finding nothing). */
static void test_tsql_check_itself(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "SELECT a FROM t LIMIT $1",
        "SELECT $1::bigint",
        "DELETE FROM t WHERE a = 1 RETURNING id",
        "CREATE TABLE t (id TEXT NOT NULL PRIMARY KEY)",
        "INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO NOTHING",
        "CREATE TABLE IF NOT EXISTS t (a int)",
        "CREATE INDEX IF NOT EXISTS i ON t (a)",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tsql_defect(bad[i]) == NULL)
            fail_msg("not caught: %s", bad[i]);
    static const char *const good[] = {
        "IF NOT EXISTS (SELECT 1 FROM sys.indexes) EXEC(N'CREATE INDEX i "
        "ON t (a)')",
        "SELECT TOP (CAST($1 AS int)) search_text FROM t",
        "THROW 51222, N'no LIMIT here: text and RETURNING :: are words', 1",
        "-- the LIMIT of a TEXT\nSELECT 1",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (tsql_defect(good[i]) != NULL)
            fail_msg("wrongly caught (%s): %s", tsql_defect(good[i]), good[i]);
}

/* Issue 17: no statement of any module reaches SQL Server in another
 * dialect. */
static void test_mssql_statements_are_tsql(void **state)
{
    (void)state;
    dump d;
    dump_all("mssql", &d);
    for (size_t i = 0; i < d.n; i++) {
        const char *why = tsql_defect(d.sql[i]);
        if (why != NULL)
            fail_msg("%s uses %s:\n%s", d.name[i], why, d.sql[i]);
    }
    dump_free(&d);
}

/* S5 on SQL Server: the operations table's T-SQL (issue 17). */
static void test_operations_tsql(void **state)
{
    (void)state;
    sb_ops_sql s;
    assert_int_equal(sb__ops_sql_new(SB_DIALECT_MSSQL, "t_", &s), SB_OK);
    sbt_has("ddl", s.ddl,
            "IF OBJECT_ID(N't_operations', N'U') IS NULL\n"
            "CREATE TABLE t_operations (");
    sbt_has("ddl", s.ddl,
            "id nvarchar(36) COLLATE Latin1_General_100_BIN2 NOT NULL "
            "PRIMARY KEY");
    sbt_has("ddl", s.ddl, "created_at datetime2(7) NOT NULL");
    sbt_has("ddl", s.ddl,
            "EXEC(N'CREATE INDEX t_operations_created_idx ON "
            "t_operations (created_at)')");
    sbt_has("recent", s.recent, "SELECT TOP (CAST($1 AS int)) ");
    sbt_has("recent", s.recent, "ORDER BY created_at DESC, id DESC");
    sbt_has("orphans", s.orphans, "SELECT TOP (100) id");
    /* Ids from a request compare exactly, trailing spaces included. */
    const char *by_id[] = {s.get, s.start, s.total, s.figures, s.step, s.end};
    for (size_t i = 0; i < sizeof by_id / sizeof by_id[0]; i++)
        sbt_has("by id", by_id[i],
                "id = $1 AND id + N'.' = $1 + N'.' COLLATE "
                "Latin1_General_100_BIN2");
    /* Times: microseconds in, microseconds out. */
    sbt_has("insert", s.insert, "DATEADD(microsecond, CAST($5 % 1000000");
    sbt_has("get", s.get,
            "DATEDIFF_BIG(microsecond, CAST('19700101' AS datetime2(7)), "
            "created_at)");
    sbt_has("prune", s.prune, "updated_at < DATEADD(microsecond, CAST($1");
    sb__ops_sql_free(&s);
    /* SQLite and PostgreSQL keep their text. */
    assert_int_equal(sb__ops_sql_new(SB_DIALECT_POSTGRES, "t_", &s), SB_OK);
    sbt_has("recent", s.recent, "LIMIT $1");
    sbt_has("ddl", s.ddl, "CREATE TABLE IF NOT EXISTS t_operations");
    sb__ops_sql_free(&s);
}

/* Bad input names the field. */
static void test_statements_bad_input(void **state)
{
    (void)state;
    dump d = {0};
    sb_error err;
    assert_int_equal(sb_schema_statements("oracle", NULL, keep, &d, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "backend");
    assert_int_equal(
        sb_channel_statements("sqlite", "bad prefix", keep, &d, &err),
        SB_INVALID);
    assert_string_equal(err.field, "table_prefix");
    assert_int_equal(sb_errors_statements("sqlite", NULL, NULL, &d, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "fn");
    assert_int_equal(sb_operations_statements(NULL, NULL, keep, &d, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "backend");
    assert_int_equal(d.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_covers_every_set_entry),
        cmocka_unit_test(test_dump_names),
        cmocka_unit_test(test_tsql_check_itself),
        cmocka_unit_test(test_mssql_statements_are_tsql),
        cmocka_unit_test(test_operations_tsql),
        cmocka_unit_test(test_statements_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
