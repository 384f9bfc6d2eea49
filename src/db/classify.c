/* classify.c - SQLSTATE to result code. Shared by the PostgreSQL driver
 * and the ODBC driver, which reports the same SQLSTATEs; SQL Server's
 * native numbers beside them. Retry decisions rest on these tables,
 * never on message text. */
#include "db/db.h"
#include "db/tsql.h"

#include <string.h>

static bool is_class(const char *s, const char *cls)
{
    return s[0] == cls[0] && s[1] == cls[1];
}

/*
 * Map a five-character SQLSTATE to a result code: connection and resource
 * problems are transient (SB_UNAVAILABLE, SB_BUSY), a cancelled statement
 * is SB_TIMEOUT, constraint and data problems permanent. NULL or "" (no
 * SQLSTATE: the connection failed before the server answered) is
 * SB_UNAVAILABLE. Pure; thread-safe.
 */
int sb__classify_sqlstate(const char *sqlstate)
{
    if (sqlstate == NULL || sqlstate[0] == '\0')
        return SB_UNAVAILABLE;
    if (sqlstate[1] == '\0')
        return SB_BACKEND;
    /* Class 08: connection exception. */
    if (is_class(sqlstate, "08"))
        return SB_UNAVAILABLE;
    /* Class 40: serialization failure, deadlock detected. */
    if (strcmp(sqlstate, "40001") == 0 || strcmp(sqlstate, "40P01") == 0)
        return SB_BUSY;
    /* lock_not_available (NOWAIT, lock_timeout). */
    if (strcmp(sqlstate, "55P03") == 0)
        return SB_BUSY;
    /* query_canceled: statement_timeout passed (or someone cancelled the
     * statement). Not transient: the same statement would run as long
     * again, so it is never retried. */
    if (strcmp(sqlstate, "57014") == 0)
        return SB_TIMEOUT;
    /* admin_shutdown, crash_shutdown, cannot_connect_now. */
    if (strcmp(sqlstate, "57P01") == 0 || strcmp(sqlstate, "57P02") == 0 ||
        strcmp(sqlstate, "57P03") == 0)
        return SB_UNAVAILABLE;
    /* Class 53: insufficient resources; too_many_connections is a refusal
     * to connect, the others (disk full, out of memory) pass with time. */
    if (strcmp(sqlstate, "53300") == 0)
        return SB_UNAVAILABLE;
    if (is_class(sqlstate, "53"))
        return SB_BUSY;
    if (strcmp(sqlstate, "23505") == 0)
        return SB_CONFLICT;
    if (strcmp(sqlstate, "42P01") == 0)
        return SB_SCHEMA_MISSING;
    if (strcmp(sqlstate, "42703") == 0)
        return SB_SCHEMA_MISMATCH;
    /* Class 22 data exceptions, class 23 other integrity violations. */
    if (is_class(sqlstate, "22") || is_class(sqlstate, "23"))
        return SB_INVALID;
    return SB_BACKEND;
}

/*
 * SQL Server's native error numbers that its SQLSTATEs do not tell apart,
 * sqlbus's own (db/tsql.h) among them; SB_OK for a number that decides
 * nothing (the SQLSTATE does). Pure; thread-safe.
 */
int sb__classify_mssql_native(long native)
{
    switch (native) {
    case 1205:                      /* chosen as deadlock victim */
    case 1222:                      /* lock request time out */
    case SB_TSQL_APPLOCK_TIMEOUT:   /* sp_getapplock: -1, timed out */
    case SB_TSQL_APPLOCK_DEADLOCK:  /* -3: a deadlock victim, as 1205 */
    case SB_TSQL_APPLOCK_CANCELLED: /* -2: cancelled; asking again may
                                       be granted */
        return SB_BUSY;
    /* -999: a parameter or the call itself is wrong; the same call would
     * fail again, so it is never retried as a timeout is. */
    case SB_TSQL_APPLOCK_CALL_ERROR: return SB_BACKEND;
    case 2601: /* duplicate key row in a unique index */
    case 2627: /* PRIMARY KEY / UNIQUE constraint violation */
        return SB_CONFLICT;
    case 208: /* invalid object name */ return SB_SCHEMA_MISSING;
    case 207: /* invalid column name */ return SB_SCHEMA_MISMATCH;
    /* Azure SQL: throttling, failovers, databases moving (transient). */
    case 40197:
    case 40501:
    case 40613:
    case 49918:
    case 49919:
    case 49920:
    case 10928:
    case 10929:
    case 4060:
    case 4221:
    case 10053:
    case 10054:
    case 10060:
    case 233:
    case 64: return SB_UNAVAILABLE;
    default: return SB_OK; /* not decided by the number */
    }
}

int sb__classify_odbc_connect(const char *sqlstate)
{
    if (sqlstate == NULL || sqlstate[0] == '\0' || sqlstate[1] == '\0')
        return SB_UNAVAILABLE;
    /* IM0xx: the URL names a driver or data source that is not there.
     * A failed connect with warnings only (01: connect_state in odbc.c
     * looks past them) is the driver manager failing to load the driver
     * (unixODBC: "01000 Can't open lib ... file not found"). */
    if (is_class(sqlstate, "IM") || is_class(sqlstate, "01"))
        return SB_INVALID;
    /* Invalid authorization, invalid catalog name: a refused login or a
     * database that does not exist, which retrying does not change. */
    if (is_class(sqlstate, "28") || is_class(sqlstate, "3D"))
        return SB_BACKEND;
    return SB_UNAVAILABLE;
}

/* Whether `p` starts a SQLSTATE as libpq's verbose form writes it after
 * the severity: five digits or capital letters, then ": ". */
static bool sqlstate_at(const char *p)
{
    for (int i = 0; i < 5; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'A' && p[i] <= 'Z')))
            return false;
    return p[5] == ':' && p[6] == ' ';
}

/* The connection failure of libpq has no PGresult to ask for its
 * SQLSTATE (PQresultErrorField), so postgres.c asks for the verbose
 * message, where the server's error reads "FATAL:  3D000: database ...":
 * the SQLSTATE follows the severity and its ":  " (a severity may be
 * localised, a SQLSTATE never is). */
void sb__pg_connect_error(const char *verbose, char state[6], char *out,
                          size_t cap)
{
    state[0] = '\0';
    size_t k = 0;
    const char *p = verbose;
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t n = eol != NULL ? (size_t)(eol - p + 1) : strlen(p);
        /* The server's source location, which only the verbose form
         * adds. */
        if (strncmp(p, "LOCATION:  ", 11) == 0) {
            p += n;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (i >= 3 && p[i - 3] == ':' && p[i - 2] == ' ' &&
                p[i - 1] == ' ' && i + 7 <= n && sqlstate_at(p + i)) {
                memcpy(state, p + i, 5);
                state[5] = '\0';
                i += 6;
                continue;
            }
            if (k + 1 < cap)
                out[k++] = p[i];
        }
        p += n;
    }
    if (cap > 0)
        out[k] = '\0';
}
