/*
 * sql_text.h - checks of statement text for the unit tests that pin a
 * dialect's SQL (test_sql_mssql*.c): included by each, one executable
 * apiece.
 */
#ifndef SBT_SQL_TEXT_H
#define SBT_SQL_TEXT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

/* Fail unless statement `name`'s text `sql` contains `want`. */
static inline void sbt_has(const char *name, const char *sql, const char *want)
{
    if (sql == NULL || strstr(sql, want) == NULL)
        fail_msg("%s lacks \"%s\":\n%s", name, want, sql ? sql : "(none)");
}

/* Fail if `sql` contains `bad`. */
static inline void sbt_lacks(const char *name, const char *sql, const char *bad)
{
    if (sql != NULL && strstr(sql, bad) != NULL)
        fail_msg("%s contains \"%s\":\n%s", name, bad, sql);
}

/* How many times `what` occurs in `s`. */
static inline size_t sbt_count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* Fail unless every sp_getapplock of the batch `sql` is followed by the
 * shared test of its return code (db/tsql.h, SB_TSQL_APPLOCK_CHECK): -1
 * a timeout (51222), -2 cancelled (51225), -3 a deadlock victim (51224),
 * anything else negative (-999) a call error (51223), the catch-all last
 * so it never takes -1. */
static inline void sbt_applock_checked(const char *name, const char *sql)
{
    static const char *const want[] = {
        "IF @sb_rc = -1 THROW 51222, N'sqlbus: timed out waiting for the ",
        "IF @sb_rc = -2 THROW 51225, N'sqlbus: the request for the ",
        "IF @sb_rc = -3 THROW 51224, N'sqlbus: chosen as deadlock victim ",
        "IF @sb_rc < 0 THROW 51223, N'sqlbus: sp_getapplock failed for the "};
    size_t locks = sbt_count(sql, "EXEC @sb_rc = sp_getapplock ");
    if (locks == 0)
        fail_msg("%s takes no application lock:\n%s", name, sql);
    const char *prev = strstr(sql, "EXEC @sb_rc = sp_getapplock ");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        sbt_has(name, sql, want[i]);
        if (sbt_count(sql, want[i]) != locks)
            fail_msg("%s: %zu locks but \"%s\" %zu times", name, locks, want[i],
                     sbt_count(sql, want[i]));
        const char *at = strstr(sql, want[i]);
        if (at < prev)
            fail_msg("%s: \"%s\" out of order:\n%s", name, want[i], sql);
        prev = at;
    }
    sbt_has(name, sql, "parameter validation or other call error (-999)");
    sbt_lacks(name, sql, "IF @sb_rc < 0 THROW 51222");
}

#endif
