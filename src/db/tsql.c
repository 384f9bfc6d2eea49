/* tsql.c - see tsql.h: what the ODBC driver reads of T-SQL text. */
#include "db/tsql.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
           ch == '\f' || ch == '\v';
}

bool sb__tsql_ends_with_rowcount(const char *sql)
{
    static const char tail[] = "@@ROWCOUNT";
    size_t n = strlen(sql), tl = sizeof tail - 1;
    while (n > 0 && (is_blank(sql[n - 1]) || sql[n - 1] == ';'))
        n--;
    if (n < tl || strncasecmp(sql + n - tl, tail, tl) != 0)
        return false;
    n -= tl;
    size_t before = n;
    while (n > 0 && is_blank(sql[n - 1]))
        n--;
    if (n == before || n < 6 || strncasecmp(sql + n - 6, "SELECT", 6) != 0)
        return false;
    n -= 6;
    if (n == 0)
        return true;
    char ch = sql[n - 1]; /* SELECT must be a word of its own */
    return !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
             (ch >= '0' && ch <= '9') || ch == '_' || ch == '@' ||
             ch == '#' || ch == '$');
}
