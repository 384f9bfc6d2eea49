/* search.c - full-text search (E22): SQLite FTS5 (an external-content
 * table kept by triggers, so ingestion maintains it in its transaction)
 * and a `simple` tsvector with a GIN index on PostgreSQL, written by the
 * upsert from words.c's cut; on SQL Server a full-text index over the
 * words ingestion cuts the same way (search_text), queried with
 * CONTAINSTABLE, when the server has Full-Text Search. The caller's words
 * are ORed and ranked; '.' and '+' break words on every backend, so
 * "Order" finds "Shop.Order", and the words of one caller's word are a
 * phrase ("Shop.Order" finds only the two words in that order). */
#include "errors/errors.h"

#include <string.h>

#define MAX_QUERY 1000
#define MAX_LIMIT 1000

/* The query in SQLite's syntax: '"w1" OR "w2"', each caller's word a
 * quoted phrase (quotes doubled); returns the number of words. */
static int fts5_query(const char *in, sb_buf *b)
{
    int words = 0;
    const char *rest = in, *start = NULL;
    for (size_t len; (len = sb__search_term(&rest, &start)) > 0;) {
        sb__buf_puts(b, words++ ? " OR \"" : "\"");
        for (const char *q = start; q < start + len; q++) {
            if (*q == '"')
                sb__buf_puts(b, "\"\"");
            else
                sb__buf_append(b, q, 1);
        }
        sb__buf_puts(b, "\"");
    }
    return words;
}

/* SQL Server: search needs Full-Text Search on the server and the index
 * sb_errors_open creates when it is there (store.c). Without them the
 * store works and search says what is missing: SB_INVALID naming
 * "backend", as other features a backend lacks. */
static int fulltext_ready(sb_conn *c, sb_errors *e, sb_error *err)
{
    sb_rows *rows = NULL;
    int rc = sb__query(c, e->sql.s[ER_SEARCH_READY], NULL, 0, &rows, NULL, err);
    int installed =
        rc == SB_OK && rows->nrows == 1 && sb__rows_int(rows, 0, 0) == 1;
    int indexed =
        rc == SB_OK && rows->nrows == 1 && sb__rows_int(rows, 0, 1) == 1;
    sb__rows_free(rows);
    if (rc != SB_OK)
        return rc;
    if (!installed)
        return sb__err(err, SB_INVALID, "backend",
                       "full-text search is not installed on this SQL "
                       "Server: install the Full-Text Search feature (SQL "
                       "Server setup, or the mssql-server-fts package on "
                       "Linux), then reopen the store, which creates the "
                       "full-text catalog and index; everything but search "
                       "works without it");
    if (!indexed)
        return sb__err(err, SB_INVALID, "backend",
                       "the full-text index on %sfailed_messages is missing "
                       "or disabled: reopen the store with schema_mode auto "
                       "as a user allowed CREATE FULLTEXT CATALOG (it "
                       "creates it), or create it as docs/backends.md shows",
                       e->bus->prefix);
    return SB_OK;
}

int sb_errors_search(sb_errors *e, const char *query, size_t limit,
                     sb_failed_summary ***out, size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "out",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    if (query == NULL || strlen(query) > MAX_QUERY ||
        !sb__utf8_valid(query, strlen(query)))
        return sb__err(err, SB_INVALID, "query",
                       "query must be valid UTF-8 of at most %d bytes",
                       MAX_QUERY);
    if (limit < 1 || limit > MAX_LIMIT)
        return sb__err(err, SB_INVALID, "limit",
                       "limit must be 1 to %d (got %zu)", MAX_LIMIT, limit);
    sb_buf q;
    sb__buf_init(&q, MAX_QUERY * 3 + 64);
    /* A query with no word (only punctuation, say) is refused on both
     * backends alike, by words.c's cut. */
    int words = sb__search_query(query, &q);
    if (words > 0 && e->bus->dialect == SB_DIALECT_MSSQL) {
        sb__buf_reset(&q);
        words = sb__search_contains(query, &q);
    } else if (words > 0 && e->bus->dialect != SB_DIALECT_POSTGRES) {
        sb__buf_reset(&q);
        words = fts5_query(query, &q);
    }
    /* A failed buffer ran out of memory (its cap fits any query): not a
     * query without words. */
    if (q.failed) {
        int rc = q.failed;
        sb__buf_free(&q);
        return sb__err(err, rc, NULL, "search query: %s", sb_strerror(rc));
    }
    if (words == 0) {
        sb__buf_free(&q);
        return sb__err(err, SB_INVALID, "query",
                       "query must contain at least one word");
    }
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    sb_rows *rows = NULL;
    if (rc == SB_OK && e->bus->dialect == SB_DIALECT_MSSQL)
        rc = fulltext_ready(c, e, err);
    if (rc == SB_OK) {
        sb_value p[2] = {sb__v_text(q.data), sb__v_int((int64_t)limit)};
        rc = sb__query(c, e->sql.s[ER_SEARCH], p, 2, &rows, NULL, err);
    }
    if (c != NULL)
        sb__pool_release(e->bus->pool, c);
    sb__buf_free(&q);
    if (rc == SB_OK)
        rc = sb__errors_summaries(rows, out, n_out, err);
    sb__rows_free(rows);
    return rc;
}
