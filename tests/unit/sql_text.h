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
static inline void sbt_has(const char *name, const char *sql,
                           const char *want)
{
    if (sql == NULL || strstr(sql, want) == NULL)
        fail_msg("%s lacks \"%s\":\n%s", name, want, sql ? sql : "(none)");
}

/* Fail if `sql` contains `bad`. */
static inline void sbt_lacks(const char *name, const char *sql,
                             const char *bad)
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

#endif
