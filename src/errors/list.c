/* list.c - the failed-message list (E23): optional filters, one of a
 * fixed set of sort keys (never caller text in SQL), offset pages with the
 * total for paging headers, and the unique id as the tie-breaker so pages
 * never repeat or skip a row between equal keys. */
#include "errors/classify.h"
#include "errors/sql_int.h"

#include <string.h>

#define DEFAULT_PER_PAGE 50
#define MAX_PER_PAGE 500
#define MAX_PAGE 1000000

typedef struct sort_key {
    const char *name;
    const char *column;
} sort_key;

static const sort_key sort_keys[] = {
    {"time_of_failure", "last_time_of_failure"},
    {"message_type", "message_type"},
    {"failed_queue", "failed_queue"},
    {"attempts", "number_of_processing_attempts"},
    {"status_changed", "status_changed_at"},
    /* Issue 22 (ServiceControl's keys): a missing value sorts as the
     * smallest on every backend (PostgreSQL puts NULLs last when
     * ascending, SQLite and SQL Server first). */
    {"message_id", "COALESCE(message_id, '')"},
    {"status", "status"},
    {"time_sent", "COALESCE(time_sent, 0)"},
};

/* The set filters only, numbered from $1, with their values in `p` (up
 * to 14); returns how many. A filter written for every call as "($n = ''
 * OR column = $n)" gives one plan for all of them, and it scans the whole
 * table (P11: 0.5 s and more at 1,000,000 messages); a text per set of
 * filters lets each use its index. The statements stay parameterized:
 * statuses are numbers from the caller's mask, never its text. */
static size_t filters(int dialect, const sb_failed_query *q, sb_buf *b,
                      sb_value *p)
{
    static const char *const cond[] = {
        "failed_queue = ",
        "processing_endpoint = ",
        "unique_message_id IN (SELECT unique_message_id FROM "
        "{p}failed_message_groups WHERE group_id = ",
        "message_type = ",
        "message_id = ",
        "conversation_id = "};
    static const char *const col[] = {"failed_queue", "processing_endpoint",
                                      "group_id",     "message_type",
                                      "message_id",   "conversation_id"};
    const char *text[] = {q->failed_queue, q->endpoint,   q->group_id,
                          q->message_type, q->message_id, q->conversation_id};
    int ms = dialect == SB_DIALECT_MSSQL;
    size_t n = 0;
    sb__buf_puts(b, ms ? " FROM {p}failed_messages f WHERE 1 = 1"
                       : " FROM {p}failed_messages f WHERE true");
    if (q->statuses != 0) {
        sb__buf_puts(b, " AND status IN (");
        for (int st = 0, k = 0; st <= SB_FAILED_ARCHIVED; st++)
            if (q->statuses & SB_FAILED_BIT(st)) {
                p[n++] = sb__v_int(st);
                sb__buf_printf(b, "%s$%zu", k++ ? ", " : "", n);
            }
        sb__buf_puts(b, ")");
    } else if (q->status >= 0) {
        p[n++] = sb__v_int(q->status);
        sb__buf_printf(b, " AND status = $%zu", n);
    }
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        if (text[i] == NULL || text[i][0] == '\0')
            continue;
        p[n++] = sb__v_text(text[i]);
        if (ms) /* a caller's value: exact, padding or not (sql_int.h) */
            sb__buf_printf(b,
                           " AND %s$%zu COLLATE " SB_MS_BIN2 " AND %s + "
                           "N'.' = $%zu + N'.' COLLATE " SB_MS_BIN2 "%s",
                           cond[i], n, col[i], n, i == 2 ? ")" : "");
        else if (i >= 4) /* the indexed prefix, then the rest (sql_int.h) */
            sb__buf_printf(b,
                           " AND substr(%s, 1, " SB_ERR_PREFIX_INDEXED
                           ") = substr($%zu, 1, " SB_ERR_PREFIX_INDEXED
                           ") AND substr(%s, " SB_ERR_PREFIX_REST
                           ") = substr($%zu, " SB_ERR_PREFIX_REST ")",
                           col[i], n, col[i], n);
        else
            sb__buf_printf(b, " AND %s$%zu%s", cond[i], n, i == 2 ? ")" : "");
    }
    if (q->modified_from_us != 0) {
        p[n++] = sb__v_int(q->modified_from_us);
        sb__buf_printf(b, " AND last_modified >= $%zu", n);
    }
    if (q->modified_to_us != 0) {
        p[n++] = sb__v_int(q->modified_to_us);
        sb__buf_printf(b, " AND last_modified <= $%zu", n);
    }
    if (q->failed_from_us != 0) {
        p[n++] = sb__v_int(q->failed_from_us);
        sb__buf_printf(b, " AND last_time_of_failure >= $%zu", n);
    }
    if (q->failed_to_us != 0) {
        p[n++] = sb__v_int(q->failed_to_us);
        sb__buf_printf(b, " AND last_time_of_failure <= $%zu", n);
    }
    return n;
}

/* Whether failed_counts holds the total: with at most one of the value
 * filters set, one status or any, and no time range, it does; *kind and
 * *item say which rows (no value filter: every failed queue's), *status
 * which status (-1 any). Returns 0 when the total must be counted. */
static int counted(const sb_failed_query *q, int *kind, const char **item,
                   int *status)
{
    const char *v[4] = {q->failed_queue, q->endpoint, q->message_type,
                        q->group_id};
    const int kinds[4] = {1, 2, 3, 4};
    int set = 0;
    *kind = 1;
    *item = NULL;
    *status = q->status;
    for (size_t i = 0; i < 4; i++)
        if (v[i] != NULL && v[i][0] != '\0') {
            set++;
            *kind = kinds[i];
            *item = v[i];
        }
    if (q->statuses != 0) {
        *status = -1;
        for (int st = 0; st <= SB_FAILED_ARCHIVED; st++)
            if (q->statuses == SB_FAILED_BIT(st))
                *status = st;
        if (*status < 0 && q->statuses != 0xfu)
            set = 2;
    }
    /* The counts know no message id, conversation or failure time. */
    if (set > 1 || q->modified_from_us != 0 || q->modified_to_us != 0 ||
        (q->message_id != NULL && q->message_id[0] != '\0') ||
        (q->conversation_id != NULL && q->conversation_id[0] != '\0') ||
        q->failed_from_us != 0 || q->failed_to_us != 0)
        *kind = 0;
    return *kind;
}

static int check(const sb_failed_query *q, const sort_key **key, sb_error *err)
{
    if (q->statuses > 0xfu)
        return sb__err(err, SB_INVALID, "statuses",
                       "statuses must be SB_FAILED_BIT()s of 0 to 3");
    if (q->modified_from_us < 0 || q->modified_to_us < 0 ||
        (q->modified_to_us != 0 && q->modified_from_us > q->modified_to_us))
        return sb__err(err, SB_INVALID, "modified",
                       "the modified range must be from <= to, both >= 0");
    if (q->failed_from_us < 0 || q->failed_to_us < 0 ||
        (q->failed_to_us != 0 && q->failed_from_us > q->failed_to_us))
        return sb__err(err, SB_INVALID, "failed",
                       "the time-of-failure range must be from <= to, both "
                       ">= 0");
    if (q->status < -1 || q->status > SB_FAILED_ARCHIVED)
        return sb__err(err, SB_INVALID, "status",
                       "status must be -1 (any) or 0 to 3 (got %d)", q->status);
    if (q->per_page > MAX_PER_PAGE)
        return sb__err(err, SB_INVALID, "per_page",
                       "per_page must be 1 to %d (got %zu)", MAX_PER_PAGE,
                       q->per_page);
    if (q->page > MAX_PAGE)
        return sb__err(err, SB_INVALID, "page",
                       "page must be 1 to %d (got %zu)", MAX_PAGE, q->page);
    *key = &sort_keys[0];
    if (q->sort == NULL)
        return SB_OK;
    for (size_t i = 0; i < sizeof sort_keys / sizeof *sort_keys; i++)
        if (strcmp(q->sort, sort_keys[i].name) == 0) {
            *key = &sort_keys[i];
            return SB_OK;
        }
    return sb__err(err, SB_INVALID, "sort",
                   "sort must be time_of_failure, message_type, "
                   "failed_queue, attempts, status_changed, message_id, "
                   "status or time_sent (got \"%.40s\")",
                   q->sort);
}

/* `src` into `dst` of `cap` bytes, cut on a UTF-8 boundary. */
static void copy_cut(char *dst, size_t cap, const char *src)
{
    sb_text t;
    sb__text_init(&t, dst, cap);
    if (src != NULL)
        sb__text_put(&t, src, strlen(src));
}

int sb__errors_summaries(const sb_rows *rows, sb_failed_summary ***out,
                         size_t *n_out, sb_error *err)
{
    size_t n = rows->nrows;
    sb_failed_summary **list = NULL;
    if (n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t r = 0; r < n; r++) {
        sb_failed_summary *s = list[r];
        s->size = sizeof *s;
        copy_cut(s->unique_id, sizeof s->unique_id, sb__rows_text(rows, r, 0));
        s->status = (int)sb__rows_int(rows, r, 1);
        s->attempts = sb__rows_int(rows, r, 2);
        s->last_failure_us = sb__rows_int(rows, r, 3);
        copy_cut(s->message_type, sizeof s->message_type,
                 sb__rows_text(rows, r, 4));
        copy_cut(s->failed_queue, sizeof s->failed_queue,
                 sb__rows_text(rows, r, 5));
        copy_cut(s->exception_type, sizeof s->exception_type,
                 sb__rows_text(rows, r, 6));
        copy_cut(s->exception_message, sizeof s->exception_message,
                 sb__rows_text(rows, r, 7));
        copy_cut(s->message_id, sizeof s->message_id,
                 sb__rows_text(rows, r, 8));
        copy_cut(s->processing_endpoint, sizeof s->processing_endpoint,
                 sb__rows_text(rows, r, 9));
        copy_cut(s->host, sizeof s->host, sb__rows_text(rows, r, 10));
        copy_cut(s->host_id, sizeof s->host_id, sb__rows_text(rows, r, 11));
        s->first_failure_us = sb__rows_int(rows, r, 12);
        s->last_modified_us = sb__rows_int(rows, r, 13);
        s->time_sent_us = sb__rows_int(rows, r, 14);
        s->is_system = sb__rows_int(rows, r, 15) != 0;
    }
    *out = list;
    *n_out = n;
    return SB_OK;
}

size_t sb__errors_list_sql(int dialect, const sb_failed_query *q,
                           const char *sort_column, sb_buf *b, sb_value *p)
{
    if (sort_column == NULL) {
        sb__buf_puts(b, "SELECT count(*)");
        return filters(dialect, q, b, p);
    }
    const char *dir = q->ascending ? "ASC" : "DESC";
    sb__buf_puts(b, "SELECT " SB__SUMMARY_COLUMNS);
    size_t np = filters(dialect, q, b, p);
    if (dialect == SB_DIALECT_MSSQL)
        sb__buf_printf(b,
                       " ORDER BY %s %s, unique_message_id %s OFFSET CAST($%zu "
                       "AS bigint) ROWS FETCH NEXT CAST($%zu AS bigint) ROWS "
                       "ONLY",
                       sort_column, dir, dir, np + 2, np + 1);
    else
        sb__buf_printf(b,
                       " ORDER BY %s %s, unique_message_id %s LIMIT $%zu "
                       "OFFSET $%zu",
                       sort_column, dir, dir, np + 1, np + 2);
    return np;
}

int sb_errors_list(sb_errors *e, const sb_failed_query *q,
                   sb_failed_summary ***out, size_t *n_out, int64_t *total,
                   sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || q == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "query",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    if (q->size != 0 && q->size < SB_FAILED_QUERY_V1_SIZE)
        return sb__err(err, SB_INVALID, "size",
                       "sb_failed_query.size is smaller than any version");
    /* A caller of the first version has no newer fields: read only its
     * `size` bytes. */
    sb_failed_query qv;
    memset(&qv, 0, sizeof qv);
    memcpy(&qv, q, q->size != 0 && q->size < sizeof qv ? q->size : sizeof qv);
    q = &qv;
    const sort_key *key = NULL;
    int rc = check(q, &key, err);
    if (rc != SB_OK)
        return rc;
    size_t per = q->per_page ? q->per_page : DEFAULT_PER_PAGE;
    size_t page = q->page ? q->page : 1;
    sb_value p[18];
    sb_buf b;
    sb__buf_init(&b, 4096);
    size_t np = sb__errors_list_sql(e->bus->dialect, q, key->column, &b, p);
    p[np] = sb__v_int((int64_t)per);
    p[np + 1] = sb__v_int((int64_t)((page - 1) * per));
    char *page_sql =
        b.failed ? NULL : sb__sql_subst(b.data, e->bus->prefix, &rc);
    int kind = 0, status = -1;
    const char *item = NULL;
    char *count_sql = NULL;
    if (counted(q, &kind, &item, &status) == 0) {
        sb__buf_reset(&b);
        sb__errors_list_sql(e->bus->dialect, q, NULL, &b, p);
        count_sql =
            b.failed ? NULL : sb__sql_subst(b.data, e->bus->prefix, &rc);
    }
    sb__buf_free(&b);
    sb_conn *c = NULL;
    if (page_sql == NULL || (kind == 0 && count_sql == NULL))
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    else
        rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    sb_rows *rows = NULL, *count = NULL;
    if (rc == SB_OK) {
        rc = sb__query(c, page_sql, p, np + 2, &rows, NULL, err);
        if (rc == SB_OK && total != NULL && kind != 0)
            rc = sb__errors_count(c, e, kind, item, status, total, err);
        else if (rc == SB_OK && total != NULL)
            rc = sb__query(c, count_sql, p, np, &count, NULL, err);
        sb__pool_release(e->bus->pool, c);
    }
    if (rc == SB_OK && total != NULL && kind == 0)
        *total = count->nrows ? sb__rows_int(count, 0, 0) : 0;
    if (rc == SB_OK)
        rc = sb__errors_summaries(rows, out, n_out, err);
    sb__rows_free(rows);
    sb__rows_free(count);
    sb__free(page_sql);
    sb__free(count_sql);
    return rc;
}
