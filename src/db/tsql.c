/* tsql.c - see tsql.h: what the ODBC driver reads of T-SQL text and
 * what it says of a database it refuses. */
#include "db/tsql.h"
#include "core/core.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' ||
           ch == '\v';
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
             (ch >= '0' && ch <= '9') || ch == '_' || ch == '@' || ch == '#' ||
             ch == '$');
}

/* `name` as a bracketed T-SQL identifier (']' doubled) in `out`; cut at
 * `cap` (a sysname is at most 128 characters: 2 * 128 * 4 bytes of UTF-8
 * and the brackets fit the callers' buffer). */
static void bracketed(const char *name, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '[';
    for (const char *p = name; *p && o + 3 < cap; p++) {
        if (*p == ']')
            out[o++] = ']';
        out[o++] = *p;
    }
    out[o++] = ']';
    out[o] = '\0';
}

int sb__tsql_check_compat(int64_t level, const char *db_name, sb_error *err)
{
    if (level >= SB_TSQL_MIN_COMPAT)
        return SB_OK;
    char quoted[1040];
    bool named = db_name != NULL && db_name[0] != '\0';
    if (named)
        bracketed(db_name, quoted, sizeof quoted);
    else
        sb__strlcpy(quoted, "<database>", sizeof quoted);
    /* Without this check the first OPENJSON fails as 208, which reads as
     * "schema missing" and sends the operator after the wrong fix. */
    return sb__err(err, SB_BACKEND, "compatibility_level",
                   "the SQL Server database %s has compatibility level "
                   "%lld; sqlbus needs %d (SQL Server 2016) or higher, as "
                   "its statements use OPENJSON; fix: ALTER DATABASE %s SET "
                   "COMPATIBILITY_LEVEL = %d",
                   named ? quoted : "in use", (long long)level,
                   SB_TSQL_MIN_COMPAT, quoted, SB_TSQL_MIN_COMPAT);
}
