/* select.c - walking the messages an operation selects (E14, E17, E19):
 * one selector (ids, group, failed queue, endpoint or all), a status and
 * an optional last-modified range, in keyset order over unique ids,
 * batches of at most 1,000, each in its own transaction, so a long
 * operation commits as it goes. A retry, archive or unarchive of a whole
 * group is also a row of group_operations: taken before the first batch
 * (one operation per group at a time), advanced in each batch's
 * transaction (so its progress is exactly what committed) and resumed
 * from its cursor when its process died. A caller's own record of the
 * operation (sb_errors_op_hook: the durable operations, operations.c) is
 * kept in the same transactions. */
#include "errors/sql_int.h"

#include <string.h>

#define BATCH 1000
#define MAX_IDS 10000
#define OP_LEASE_US (60LL * 1000 * 1000)
#define MAX_GROUP_IDS 1000

int sb__errors_check_selection(const sb_failed_selection *s, sb_error *err)
{
    if (s == NULL)
        return sb__err(err, SB_INVALID, "selection",
                       "selection must not be NULL");
    if (s->size != 0 && s->size < sizeof *s)
        return sb__err(err, SB_INVALID, "size",
                       "sb_failed_selection.size is smaller than any "
                       "version");
    int n = (s->n_ids > 0) + (s->group_id != NULL) + (s->failed_queue != NULL) +
            (s->endpoint != NULL) + (s->all != 0);
    if (n != 1)
        return sb__err(err, SB_INVALID, "selection",
                       "choose exactly one of ids, group_id, failed_queue, "
                       "endpoint and all (got %d)",
                       n);
    if (s->n_ids > 0 && s->ids == NULL)
        return sb__err(err, SB_INVALID, "ids", "ids is NULL but n_ids is %zu",
                       s->n_ids);
    if (s->n_ids > MAX_IDS)
        return sb__err(err, SB_INVALID, "n_ids",
                       "at most %d ids per call (got %zu)", MAX_IDS, s->n_ids);
    for (size_t i = 0; i < s->n_ids; i++)
        if (s->ids[i] == NULL || s->ids[i][0] == '\0' ||
            strlen(s->ids[i]) > 400)
            return sb__err(err, SB_INVALID, "ids",
                           "ids[%zu] must be 1 to 400 bytes", i);
    const char *const texts[] = {s->group_id, s->failed_queue, s->endpoint};
    const char *const names[] = {"group_id", "failed_queue", "endpoint"};
    for (size_t i = 0; i < 3; i++)
        if (texts[i] != NULL && (texts[i][0] == '\0' || strlen(texts[i]) > 400))
            return sb__err(err, SB_INVALID, names[i],
                           "%s must be 1 to 400 bytes", names[i]);
    if (s->modified_from_us < 0 || s->modified_to_us < 0)
        return sb__err(err, SB_INVALID,
                       s->modified_from_us < 0 ? "modified_from_us"
                                               : "modified_to_us",
                       "a modified time must be 0 (open) or microseconds "
                       "since the epoch");
    if (s->modified_to_us != 0 && s->modified_from_us > s->modified_to_us)
        return sb__err(err, SB_INVALID, "modified_from_us",
                       "modified_from_us (%lld) is after modified_to_us "
                       "(%lld)",
                       (long long)s->modified_from_us,
                       (long long)s->modified_to_us);
    return SB_OK;
}

typedef struct walk {
    sb_errors *e;
    const sb_failed_selection *sel;
    int status;
    const char *kind;              /* a group operation's kind, or NULL */
    const sb_errors_op_hook *hook; /* the caller's record, or NULL */
    const char *ids_json;          /* the selection's ids, or "" */
    sb_batch_fn fn;
    void *user;
    char after[512]; /* committed keyset cursor */
    /* this batch's, applied once its transaction committed */
    char batch_after[512];
    int64_t batch_changed;
    int done;
    char *page_sql; /* this selection's statements */
    char *count_sql;
    char owner[37]; /* this run's token on its group operation */
    int nothing;    /* it selected nothing, and no operation row was taken */
    int64_t total;  /* selected when it started */
    int64_t so_far; /* changed, including a resumed run's */
} walk;

/* The selection's statement: only the filters that are set, numbered
 * after `first` fixed parameters, with their values appended to `p`
 * (returns how many). A filter written for every call as "($n = '' OR
 * column = $n)" gets one plan for all selections, and that plan reads
 * the whole table (P11); a text per combination lets each filter use its
 * index, and the statements stay parameterized and cached. With `b`
 * NULL only the values are written. */
static size_t filters(int dialect, const sb_failed_selection *s,
                      const char *ids_json, sb_buf *b, sb_value *p,
                      size_t first)
{
    int pg = dialect == SB_DIALECT_POSTGRES;
    int ms = dialect == SB_DIALECT_MSSQL;
    size_t n = first;
#define PUT(...)                                                               \
    do {                                                                       \
        if (b != NULL)                                                         \
            sb__buf_printf(b, __VA_ARGS__);                                    \
    } while (0)
/* SQL Server: the caller's values compare exactly (sql_int.h). */
#define MS_SAME(col)                                                           \
    col " = $%zu COLLATE " SB_MS_BIN2 " AND " col " + N'.' = $%zu + N'.' "     \
        "COLLATE " SB_MS_BIN2
    if (s->failed_queue != NULL) {
        p[n++] = sb__v_text(s->failed_queue);
        if (ms)
            PUT(" AND " MS_SAME("failed_queue"), n, n);
        else
            PUT(" AND failed_queue = $%zu", n);
    }
    if (s->endpoint != NULL) {
        p[n++] = sb__v_text(s->endpoint);
        if (ms)
            PUT(" AND " MS_SAME("processing_endpoint"), n, n);
        else
            PUT(" AND processing_endpoint = $%zu", n);
    }
    if (s->group_id != NULL) {
        p[n++] = sb__v_text(s->group_id);
        if (ms)
            PUT(" AND unique_message_id IN (SELECT unique_message_id FROM "
                "{p}failed_message_groups WHERE " MS_SAME("group_id") ")",
                n, n);
        else
            PUT(" AND unique_message_id IN (SELECT unique_message_id FROM "
                "{p}failed_message_groups WHERE group_id = $%zu)",
                n);
    }
    if (s->n_ids > 0) {
        p[n++] = sb__v_text(ids_json);
        if (ms)
            PUT(" AND EXISTS (SELECT 1 FROM OPENJSON(CAST($%zu AS "
                "nvarchar(max))) WITH (v nvarchar(400) '$') AS j WHERE "
                "unique_message_id = j.v COLLATE " SB_MS_BIN2 " AND "
                "unique_message_id + N'.' = j.v + N'.' COLLATE " SB_MS_BIN2 ")",
                n);
        else
            PUT(pg ? " AND unique_message_id = ANY (ARRAY(SELECT "
                     "json_array_elements_text($%zu::json)))"
                   : " AND unique_message_id IN (SELECT value FROM "
                     "json_each($%zu))",
                n);
    }
    if (s->modified_from_us != 0) {
        p[n++] = sb__v_int(s->modified_from_us);
        PUT(" AND last_modified >= $%zu", n);
    }
    if (s->modified_to_us != 0) {
        p[n++] = sb__v_int(s->modified_to_us);
        PUT(" AND last_modified <= $%zu", n);
    }
#undef PUT
#undef MS_SAME
    return n - first;
}

void sb__errors_walk_sql(int dialect, const sb_failed_selection *sel, int count,
                         sb_buf *b)
{
    sb_value p[12];
    if (count) {
        sb__buf_puts(b, "SELECT count(*) FROM {p}failed_messages WHERE "
                        "status = $1");
        filters(dialect, sel, "", b, p, 1);
        return;
    }
    /* The cursor is a stored id: a plain comparison. */
    sb__buf_puts(b, dialect == SB_DIALECT_MSSQL
                        ? "SELECT TOP (CAST($2 AS int)) unique_message_id "
                          "FROM {p}failed_messages WHERE unique_message_id "
                          "> $1 AND status = $3"
                        : "SELECT unique_message_id FROM {p}failed_messages "
                          "WHERE unique_message_id > $1 AND status = $3");
    filters(dialect, sel, "", b, p, 3);
    sb__buf_puts(b, dialect == SB_DIALECT_MSSQL
                        ? " ORDER BY unique_message_id"
                        : " ORDER BY unique_message_id LIMIT $2");
}

/* One statement of the walk for `sel` with the store's prefix (see
 * sb__errors_walk_sql); transferred, NULL with *rc set when memory ran
 * out. */
static char *walk_statement(sb_errors *e, const sb_failed_selection *sel,
                            int count, int *rc)
{
    sb_buf b;
    sb__buf_init(&b, 4096);
    sb__errors_walk_sql(e->bus->dialect, sel, count, &b);
    *rc = b.failed;
    char *sql = *rc == SB_OK ? sb__sql_subst(b.data, e->bus->prefix, rc) : NULL;
    sb__buf_free(&b);
    return sql;
}

/* The page statement's parameters into `p` (12 long): the keyset cursor
 * $1, the limit $2, the status $3, then the filters'; returns how many. */
static size_t page_params(sb_errors *e, const sb_failed_selection *sel,
                          const char *ids, const char *after, int64_t limit,
                          int status, sb_value *p)
{
    p[0] = sb__v_text(after);
    p[1] = sb__v_int(limit);
    p[2] = sb__v_int(status);
    return 3 + filters(e->bus->dialect, sel, ids, NULL, p, 3);
}

/* Both statements of the walk: a page after the keyset cursor, and the
 * count of the whole selection (status $1). */
static int build_sql(walk *w, sb_error *err)
{
    int rc = SB_OK;
    w->page_sql = walk_statement(w->e, w->sel, 0, &rc);
    if (rc == SB_OK)
        w->count_sql = walk_statement(w->e, w->sel, 1, &rc);
    return rc == SB_OK ? SB_OK : sb__err(err, rc, NULL, "out of memory");
}

static int count_selected(sb_conn *c, walk *w, sb_error *err)
{
    sb_value p[12];
    p[0] = sb__v_int(w->status);
    size_t n = 1 + filters(w->e->bus->dialect, w->sel, w->ids_json, NULL, p, 1);
    sb_rows *rows = NULL;
    int rc = sb__query(c, w->count_sql, p, n, &rows, NULL, err);
    if (rc == SB_OK)
        w->total = sb__rows_int(rows, 0, 0);
    sb__rows_free(rows);
    return rc;
}

/* The caller's record at the start (see sb_errors_op_hook). */
static int hook_start(sb_conn *c, walk *w, sb_error *err)
{
    if (w->hook == NULL || w->hook->start == NULL)
        return SB_OK;
    return w->hook->start(c, &w->total, &w->so_far, w->hook->user, err);
}

static int count_tx(sb_conn *c, void *vctx, sb_error *err)
{
    int rc = count_selected(c, vctx, err);
    return rc == SB_OK ? hook_start(c, vctx, err) : rc;
}

/* Whether the group has an operation row (*any), read on `c`. */
static int op_row_exists(sb_conn *c, walk *w, int *any, sb_error *err)
{
    sb_value p = sb__v_text(w->sel->group_id);
    sb_rows *rows = NULL;
    int rc = sb__query(c, w->e->sql.s[ER_OP_GET], &p, 1, &rows, NULL, err);
    *any = rc == SB_OK && rows->nrows > 0;
    sb__rows_free(rows);
    return rc;
}

/* Take the group's operation row: start afresh, resume a stale one of the
 * same kind, or refuse while another is running. A selection of nothing
 * of a group without a row (a group id that names no messages, issue
 * 20.6) takes none: nothing would change, so nothing is written. A
 * caller's record (the hook) has its row already and is kept. */
static int op_start_tx(sb_conn *c, void *vctx, sb_error *err)
{
    walk *w = vctx;
    const char *group = w->sel->group_id;
    int rc = count_selected(c, w, err);
    if (rc == SB_OK && w->total == 0 && w->hook == NULL) {
        int any = 0;
        rc = op_row_exists(c, w, &any, err);
        w->nothing = rc == SB_OK && !any;
        if (w->nothing)
            return SB_OK;
    }
    int64_t now = sb__wall_us();
    sb_value p[6] = {sb__v_text(group),    sb__v_text(w->kind),
                     sb__v_text(w->owner), sb__v_int(w->total),
                     sb__v_int(now),       sb__v_int(now - OP_LEASE_US)};
    sb_rows *rows = NULL;
    if (rc == SB_OK)
        rc = sb__errors_race(
            w->e,
            sb__query(c, w->e->sql.s[ER_OP_START], p, 6, &rows, NULL, err),
            err);
    if (rc == SB_OK && rows->nrows == 1) {
        w->total = sb__rows_int(rows, 0, 0);
        w->so_far = sb__rows_int(rows, 0, 1);
        const char *cursor = sb__rows_text(rows, 0, 2);
        sb__strlcpy(w->after, cursor ? cursor : "", sizeof w->after);
    }
    int taken = rc == SB_OK && rows->nrows == 1;
    sb__rows_free(rows);
    rows = NULL;
    if (taken)
        rc = hook_start(c, w, err);
    if (rc != SB_OK || taken)
        return rc;
    rc = sb__query(c, w->e->sql.s[ER_OP_GET], p, 1, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 1)
        rc = sb__err(err, SB_CONFLICT, "group_id",
                     "group %s has an operation running: %s, %lld of %lld "
                     "done; start this when it has finished, or 60 s after "
                     "its last batch if its process stopped",
                     group, sb__rows_text(rows, 0, 0),
                     (long long)sb__rows_int(rows, 0, 3),
                     (long long)sb__rows_int(rows, 0, 2));
    else if (rc == SB_OK)
        rc = sb__err(err, SB_CONFLICT, "group_id",
                     "group %s: its operation changed while starting; try "
                     "again",
                     group);
    sb__rows_free(rows);
    return rc;
}

typedef struct op_end {
    walk *w;
    const char *state;
} op_end;

static int op_end_tx(sb_conn *c, void *vctx, sb_error *err)
{
    op_end *x = vctx;
    int64_t now = sb__wall_us();
    sb_value p[4] = {sb__v_text(x->state), sb__v_int(now),
                     sb__v_text(x->w->sel->group_id), sb__v_text(x->w->owner)};
    return sb__query(c, x->w->e->sql.s[ER_OP_END], p, 4, NULL, NULL, err);
}

/* The batch's progress, fenced by this run's token. */
static int op_step(sb_conn *c, walk *w, sb_error *err)
{
    int64_t changes = 0;
    sb_value p[5] = {sb__v_int(w->batch_changed), sb__v_text(w->batch_after),
                     sb__v_int(sb__wall_us()), sb__v_text(w->sel->group_id),
                     sb__v_text(w->owner)};
    int rc = sb__query(c, w->e->sql.s[ER_OP_STEP], p, 5, NULL, &changes, err);
    if (rc == SB_OK && changes != 1)
        rc = sb__err(err, SB_CONFLICT, "group_id",
                     "the %s of group %s was taken over by another process "
                     "after 60 s without progress",
                     w->kind, w->sel->group_id);
    return rc;
}

static int walk_tx(sb_conn *c, void *vctx, sb_error *err)
{
    walk *w = vctx;
    memcpy(w->batch_after, w->after, sizeof w->after);
    w->batch_changed = 0;
    sb_value p[12];
    size_t np =
        page_params(w->e, w->sel, w->ids_json, w->after, BATCH, w->status, p);
    sb_rows *rows = NULL;
    int rc = sb__query(c, w->page_sql, p, np, &rows, NULL, err);
    size_t n = rc == SB_OK ? rows->nrows : 0;
    w->done = rc == SB_OK && n < BATCH;
    sb_buf b;
    sb__buf_init(&b, (size_t)BATCH * 1100);
    sb__buf_puts(&b, "[");
    for (size_t r = 0; r < n; r++) {
        sb__buf_puts(&b, r ? "," : "");
        sb__buf_json_str(&b, sb__rows_text(rows, r, 0));
        sb__strlcpy(w->batch_after, sb__rows_text(rows, r, 0),
                    sizeof w->batch_after);
    }
    sb__buf_puts(&b, "]");
    sb__rows_free(rows);
    if (rc == SB_OK && b.failed)
        rc = sb__err(err, b.failed, NULL, "out of memory");
    if (rc == SB_OK && n > 0)
        rc = w->fn(c, w->e, b.data, n, w->user, &w->batch_changed, err);
    if (rc == SB_OK && n > 0 && w->owner[0] != '\0')
        rc = op_step(c, w, err);
    if (rc == SB_OK && n > 0 && w->hook != NULL && w->hook->step != NULL)
        rc = w->hook->step(c, w->batch_changed, w->hook->user, err);
    sb__buf_free(&b);
    return rc;
}

static int run_walk(walk *w, int64_t *changed, sb_error *err)
{
    sb_errors *e = w->e;
    int rc = SB_OK;
    if (w->owner[0] != '\0')
        rc = sb__db_run_tx(e->bus->pool, NULL, op_start_tx, w, err);
    else if (w->sel->progress != NULL || w->hook != NULL)
        rc = sb__db_run_tx(e->bus->pool, NULL, count_tx, w, err);
    if (rc != SB_OK || w->nothing) {
        w->owner[0] = '\0';
        return rc;
    }
    while (rc == SB_OK && !w->done) {
        rc = sb__db_run_tx(e->bus->pool, NULL, walk_tx, w, err);
        if (rc != SB_OK)
            break;
        memcpy(w->after, w->batch_after, sizeof w->after);
        *changed += w->batch_changed;
        w->so_far += w->batch_changed;
        if (w->sel->progress != NULL)
            w->sel->progress(w->so_far, w->total, w->sel->progress_user);
    }
    if (w->so_far > 0) /* the batches that committed */
        sb__errors_refresh_windows(e);
    return rc;
}

/* The selection's ids as a JSON array ("" when it names none), the
 * filter's value; transferred (sb__free), NULL when memory ran out. */
static char *ids_json(const sb_failed_selection *sel)
{
    sb_buf ids;
    sb__buf_init(&ids, (size_t)MAX_IDS * 810);
    if (sel->n_ids > 0) {
        sb__buf_puts(&ids, "[");
        for (size_t i = 0; i < sel->n_ids; i++) {
            sb__buf_puts(&ids, i ? "," : "");
            sb__buf_json_str(&ids, sel->ids[i]);
        }
        sb__buf_puts(&ids, "]");
    }
    return sb__buf_detach(&ids); /* NULL when it failed */
}

int sb__errors_selects_any(sb_errors *e, sb_conn *c,
                           const sb_failed_selection *sel, int status, int *any,
                           sb_error *err)
{
    *any = 0;
    char *json = ids_json(sel);
    int rc = json == NULL ? SB_NOMEM : SB_OK;
    char *sql = rc == SB_OK ? walk_statement(e, sel, 0, &rc) : NULL;
    if (rc != SB_OK) {
        sb__free(json);
        sb__free(sql);
        return sb__err(err, rc, NULL, "out of memory");
    }
    sb_value p[12];
    size_t np = page_params(e, sel, json, "", 1, status, p);
    sb_rows *rows = NULL;
    rc = sb__query(c, sql, p, np, &rows, NULL, err);
    if (rc == SB_OK)
        *any = rows->nrows > 0;
    sb__rows_free(rows);
    sb__free(sql);
    sb__free(json);
    return rc;
}

int sb__errors_each_batch(sb_errors *e, const sb_failed_selection *sel,
                          int status, const char *kind,
                          const sb_errors_op_hook *hook, sb_batch_fn fn,
                          void *user, int64_t *changed, sb_error *err)
{
    /* SQL Server's keys ignore trailing spaces: the operation row of "g "
     * would be that of "g" (every other use of a caller's group id
     * compares exactly). No group id ends in one. */
    size_t gl = sel->group_id != NULL ? strlen(sel->group_id) : 0;
    if (kind != NULL && e->bus->dialect == SB_DIALECT_MSSQL && gl > 0 &&
        sel->group_id[gl - 1] == ' ')
        return sb__err(err, SB_INVALID, "group_id",
                       "group_id must not end with a space");
    walk w;
    memset(&w, 0, sizeof w);
    w.e = e;
    w.sel = sel;
    w.status = status;
    w.kind = kind;
    w.hook = hook;
    w.fn = fn;
    w.user = user;
    if (kind != NULL && sel->group_id != NULL)
        sb__uuid7_at(w.owner, sb__wall_us() / 1000);
    char *json = ids_json(sel);
    if (json == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    w.ids_json = json;
    int64_t n = 0;
    int rc = build_sql(&w, err);
    if (rc == SB_OK)
        rc = run_walk(&w, &n, err);
    else
        w.owner[0] = '\0';
    if (changed != NULL)
        *changed += n;
    if (w.owner[0] != '\0' && (rc & 0xff) != SB_CONFLICT) {
        /* Best effort: a run that cannot record its end shows as
         * interrupted once its lease has passed. */
        op_end x = {&w, rc == SB_OK ? "completed" : "failed"};
        sb_error ignored;
        (void)sb__db_run_tx(e->bus->pool, NULL, op_end_tx, &x, &ignored);
    }
    sb__free(json);
    sb__free(w.page_sql);
    sb__free(w.count_sql);
    return rc;
}

/* Row `r` of ER_OP_GET (kind, state, total, done, started, updated,
 * finished) as the operation of `group_id`; a running one whose process
 * stopped reporting reads "interrupted". */
static void op_of(const sb_rows *rows, size_t r, const char *group_id,
                  sb_group_operation *out)
{
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    sb__strlcpy(out->group_id, group_id, sizeof out->group_id);
    sb__strlcpy(out->kind, sb__rows_text(rows, r, 0), sizeof out->kind);
    sb__strlcpy(out->state, sb__rows_text(rows, r, 1), sizeof out->state);
    out->total = sb__rows_int(rows, r, 2);
    out->done = sb__rows_int(rows, r, 3);
    out->started_us = sb__rows_int(rows, r, 4);
    out->updated_us = sb__rows_int(rows, r, 5);
    out->finished_us = sb__rows_int(rows, r, 6);
    if (strcmp(out->state, "running") == 0 &&
        out->updated_us < sb__wall_us() - OP_LEASE_US)
        sb__strlcpy(out->state, "interrupted", sizeof out->state);
}

int sb_errors_group_operations(sb_errors *e, const char *const *group_ids,
                               size_t n, sb_group_operation ***out,
                               size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || out == NULL || n_out == NULL || (n > 0 && !group_ids))
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "group_ids",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    if (n > MAX_GROUP_IDS)
        return sb__err(err, SB_INVALID, "n", "at most %d groups per call",
                       MAX_GROUP_IDS);
    if (n == 0)
        return SB_OK;
    const size_t id_cap = sizeof((sb_group_operation *)NULL)->group_id;
    sb_buf ids;
    sb__buf_init(&ids, (size_t)MAX_GROUP_IDS * 80);
    sb__buf_puts(&ids, "[");
    for (size_t i = 0; i < n; i++) {
        if (group_ids[i] == NULL || group_ids[i][0] == '\0' ||
            strlen(group_ids[i]) >= id_cap) {
            sb__buf_free(&ids);
            return sb__err(err, SB_INVALID, "group_ids",
                           "group_ids[%zu] must be 1 to %zu bytes", i,
                           id_cap - 1);
        }
        sb__buf_puts(&ids, i ? "," : "");
        sb__buf_json_str(&ids, group_ids[i]);
    }
    sb__buf_puts(&ids, "]");
    if (ids.failed) {
        sb__buf_free(&ids);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    sb_conn *c = NULL;
    sb_rows *rows = NULL;
    int rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc == SB_OK) {
        sb_value p = sb__v_text(ids.data);
        rc = sb__query(c, e->sql.s[ER_OPS_GET], &p, 1, &rows, NULL, err);
        sb__pool_release(e->bus->pool, c);
    }
    sb__buf_free(&ids);
    size_t k = rc == SB_OK ? rows->nrows : 0;
    sb_group_operation **list = NULL;
    if (k > 0) {
        SB__LIST_NEW(list, k);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t r = 0; rc == SB_OK && r < k; r++)
        op_of(rows, r, sb__rows_text(rows, r, 7), list[r]);
    sb__rows_free(rows);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = k;
    return SB_OK;
}

int sb_errors_group_operation(sb_errors *e, const char *group_id,
                              sb_group_operation *out, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || group_id == NULL || out == NULL)
        return sb__err(err, SB_INVALID,
                       e == NULL  ? "errors"
                       : group_id ? "out"
                                  : "group_id",
                       "arguments must not be NULL");
    int rc = sb__out_struct(out, sizeof *out, "sb_group_operation", err);
    if (rc != SB_OK)
        return rc;
    if (group_id[0] == '\0' || strlen(group_id) >= sizeof out->group_id)
        return sb__err(err, SB_INVALID, "group_id",
                       "group_id must be 1 to %zu bytes",
                       sizeof out->group_id - 1);
    sb_conn *c = NULL;
    rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p = sb__v_text(group_id);
    sb_rows *rows = NULL;
    rc = sb__query(c, e->sql.s[ER_OP_GET], &p, 1, &rows, NULL, err);
    sb__pool_release(e->bus->pool, c);
    if (rc == SB_OK && rows->nrows == 0)
        rc = sb__err(err, SB_NOTFOUND, "group_id",
                     "group %s has had no retry, archive or unarchive",
                     group_id);
    if (rc == SB_OK)
        op_of(rows, 0, group_id, out);
    sb__rows_free(rows);
    return rc;
}

typedef struct ack_ctx {
    sb_errors *e;
    const char *group_id;
} ack_ctx;

/* ER_OP_ACK, then (nothing removed) whether a record is there: a running
 * one. */
static int ack_tx(sb_conn *c, void *vctx, sb_error *err)
{
    const ack_ctx *x = vctx;
    sb_errors *e = x->e;
    sb_value p = sb__v_text(x->group_id);
    int64_t changes = 0;
    int rc = sb__query(c, e->sql.s[ER_OP_ACK], &p, 1, NULL, &changes, err);
    sb_rows *rows = NULL;
    if (rc == SB_OK && changes == 0)
        rc = sb__query(c, e->sql.s[ER_OP_GET], &p, 1, &rows, NULL, err);
    if (rc == SB_OK && rows != NULL)
        rc = rows->nrows > 0
                 ? sb__err(err, SB_CONFLICT, "group_id",
                           "the operation of group %s is still running (an "
                           "interrupted one is resumed by starting it again)",
                           x->group_id)
                 : sb__err(err, SB_NOTFOUND, "group_id",
                           "group %s has no operation to acknowledge",
                           x->group_id);
    sb__rows_free(rows);
    return rc;
}

int sb_errors_group_acknowledge(sb_errors *e, const char *group_id,
                                sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || group_id == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "group_id",
                       "arguments must not be NULL");
    if (group_id[0] == '\0' ||
        strlen(group_id) >= sizeof((sb_group_operation *)NULL)->group_id)
        return sb__err(err, SB_INVALID, "group_id",
                       "group_id must be 1 to %zu bytes",
                       sizeof((sb_group_operation *)NULL)->group_id - 1);
    ack_ctx x = {e, group_id};
    return sb__db_run_tx(e->bus->pool, NULL, ack_tx, &x, err);
}
