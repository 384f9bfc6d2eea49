/* operations.c - durable operations (sb_operations_* in sqlbus.h; see
 * operations.h): the table, the accept transaction (row + job), the
 * worker that runs a job with the store's bulk call and records
 * progress, and the sweeper. */
#include "errors/operations.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LEASE_MS 60000
#define ATTEMPTS 10 /* then the operation is marked failed */
#define SWEEP_EVERY_US (60LL * 1000000)
#define ORPHAN_AFTER_US (60LL * 1000000) /* a queued row without its job */
#define KEEP_DEFAULT_MS (7LL * 24 * 3600 * 1000)

struct sb_operations {
    sb_bus *bus; /* the store's: the worker's and the sweeper's */
    sb_errors *store;
    sb_operations_options o;
    sb_worker *worker;
    sb_ops_sql sql;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    pthread_t sweeper;
    int started_sweeper;
};

static const char *const kinds[] = {"retry", "archive", "unarchive",
                                    "retry_pending", "resolve"};
/* The status each kind changes messages from (as run_kind's calls walk). */
static const int kind_status[] = {SB_FAILED_UNRESOLVED, SB_FAILED_UNRESOLVED,
                                  SB_FAILED_ARCHIVED, SB_FAILED_RETRY_ISSUED,
                                  SB_FAILED_RETRY_ISSUED};

static void say(sb_operations *o, int level, const char *fmt, const char *a,
                const char *b)
{
    if (o->o.log == NULL)
        return;
    char line[1200];
    snprintf(line, sizeof line, fmt, a, b);
    o->o.log(level, "operations", line, o->o.log_user);
}

static void row_info(const sb_rows *rows, size_t r, sb_operation_info *out)
{
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    const char *t;
    sb__strlcpy(out->id, sb__rows_text(rows, r, 0), sizeof out->id);
    sb__strlcpy(out->kind, sb__rows_text(rows, r, 1), sizeof out->kind);
    sb__strlcpy(out->state, sb__rows_text(rows, r, 2), sizeof out->state);
    if ((t = sb__rows_text(rows, r, 3)) != NULL)
        sb__strlcpy(out->group_id, t, sizeof out->group_id);
    out->total = sb__rows_int(rows, r, 4);
    out->done = sb__rows_int(rows, r, 5);
    out->created_us = sb__rows_int(rows, r, 6);
    out->updated_us = sb__rows_int(rows, r, 7);
    if ((t = sb__rows_text(rows, r, 8)) != NULL)
        sb__strlcpy(out->error, t, sizeof out->error);
}

/* ---- the selection as JSON (the job's description) ---- */

/* NULL when any allocation failed: jansson's setters drop what they have
 * no memory for and go on, so the seam's count tells, not their results
 * (a selection with a part missing would change other messages). */
static char *selection_json(const sb_failed_selection *s)
{
    unsigned long fails = sb__alloc_failures();
    json_t *j = json_object();
    if (j == NULL)
        return NULL;
    if (s->n_ids > 0) {
        json_t *ids = json_array();
        for (size_t i = 0; ids != NULL && i < s->n_ids; i++)
            json_array_append_new(ids, json_string(s->ids[i]));
        json_object_set_new(j, "ids", ids);
    }
    if (s->group_id)
        json_object_set_new(j, "group_id", json_string(s->group_id));
    if (s->failed_queue)
        json_object_set_new(j, "failed_queue", json_string(s->failed_queue));
    if (s->endpoint)
        json_object_set_new(j, "endpoint", json_string(s->endpoint));
    if (s->all)
        json_object_set_new(j, "all", json_true());
    if (s->modified_from_us)
        json_object_set_new(j, "modified_from_us",
                            json_integer(s->modified_from_us));
    if (s->modified_to_us)
        json_object_set_new(j, "modified_to_us",
                            json_integer(s->modified_to_us));
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (text != NULL && sb__alloc_failures() != fails) {
        sb__free(text);
        text = NULL;
    }
    return text;
}

/* The selection of a stored job; `ids` (transferred, sb__free) holds the
 * pointers into `j`, which must outlive `sel`. */
static int selection_parse(json_t *j, sb_failed_selection *sel,
                           const char ***ids)
{
    memset(sel, 0, sizeof *sel);
    sel->size = sizeof *sel;
    *ids = NULL;
    if (!json_is_object(j))
        return SB_INVALID;
    json_t *a = json_object_get(j, "ids");
    if (json_is_array(a) && json_array_size(a) > 0) {
        size_t n = json_array_size(a);
        *ids = sb__calloc(n, sizeof **ids);
        if (*ids == NULL)
            return SB_NOMEM;
        for (size_t i = 0; i < n; i++)
            (*ids)[i] = json_string_value(json_array_get(a, i));
        sel->ids = *ids;
        sel->n_ids = n;
    }
    sel->group_id = json_string_value(json_object_get(j, "group_id"));
    sel->failed_queue = json_string_value(json_object_get(j, "failed_queue"));
    sel->endpoint = json_string_value(json_object_get(j, "endpoint"));
    sel->all = json_is_true(json_object_get(j, "all"));
    sel->modified_from_us =
        json_integer_value(json_object_get(j, "modified_from_us"));
    sel->modified_to_us =
        json_integer_value(json_object_get(j, "modified_to_us"));
    return SB_OK;
}

/* ---- accepting ---- */

typedef struct submit_ctx {
    sb_operations *o;
    sb_bus *bus;
    const sb_operation_info *info;
    const sb_failed_selection *sel;
    int status; /* the kind's: what the selection must pick */
    const char *selection;
    int none; /* out: it picked nothing, and nothing was written */
} submit_ctx;

static int submit_tx(sb_conn *c, void *arg, sb_error *err)
{
    submit_ctx *x = arg;
    sb_operations *o = x->o;
    int any = 0;
    int rc = sb__errors_selects_any(o->store, c, x->sel, x->status, &any, err);
    x->none = rc == SB_OK && !any;
    if (rc != SB_OK || x->none)
        return rc;
    sb_value p[5] = {sb__v_text(x->info->id), sb__v_text(x->info->kind),
                     sb__v_text(x->selection),
                     x->info->group_id[0] ? sb__v_text(x->info->group_id)
                                          : sb__v_null(),
                     sb__v_int(x->info->created_us)};
    rc = sb__query(c, o->sql.insert, p, 5, NULL, NULL, err);
    if (rc != SB_OK)
        return rc;
    sb_outgoing job = {x->info->id, x->info->id, strlen(x->info->id), NULL, 0};
    char ids[1][37];
    memcpy(ids[0], x->info->id, sizeof ids[0]);
    int immediate = 0;
    return sb__publish_on(x->bus, c, SB_OPERATIONS_QUEUE, &job, 1, ids,
                          &immediate, err);
}

/* Public (sqlbus.h): check, then, in one transaction on `bus`, whether
 * the selection picks anything and if so the row and its job; the worker
 * (on the store's bus) is woken in-process. */
int sb_operations_submit(sb_operations *o, sb_bus *bus, const char *kind,
                         const sb_failed_selection *sel, sb_operation_info *out,
                         sb_error *err)
{
    sb_error_clear(err);
    if (o == NULL || kind == NULL || sel == NULL)
        return sb__err(err, SB_INVALID,
                       o == NULL      ? "ops"
                       : kind == NULL ? "kind"
                                      : "sel",
                       "arguments must not be NULL");
    if (out != NULL &&
        sb__out_struct(out, sizeof *out, "sb_operation_info", err) != SB_OK)
        return SB_INVALID;
    if (bus == NULL)
        bus = o->bus;
    int status = -1;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(kind, kinds[i]) == 0)
            status = kind_status[i];
    if (status < 0)
        return sb__err(err, SB_INVALID, "kind", "no operation \"%.40s\"", kind);
    int rc = sb__errors_check_selection(sel, err);
    if (rc != SB_OK)
        return rc;
    char *text = selection_json(sel);
    if (text == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (strlen(text) > SB_OPS_SELECTION_MAX) {
        sb__free(text);
        return sb__err(err, SB_TOOBIG, "ids",
                       "the selection must be at most %zu bytes as JSON",
                       SB_OPS_SELECTION_MAX);
    }
    sb_operation_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    int64_t now = sb__wall_us();
    sb__uuid7_at(info.id, now / 1000);
    sb__strlcpy(info.kind, kind, sizeof info.kind);
    sb__strlcpy(info.state, "queued", sizeof info.state);
    if (sel->group_id != NULL)
        sb__strlcpy(info.group_id, sel->group_id, sizeof info.group_id);
    info.total = -1;
    info.created_us = info.updated_us = now;
    submit_ctx x = {o, bus, &info, sel, status, text, 0};
    rc = sb__db_run_tx(bus->pool, NULL, submit_tx, &x, err);
    sb__free(text);
    if (rc != SB_OK)
        return rc;
    if (x.none) {
        /* Nothing to change: an operation of 0, done, with no row. */
        info.id[0] = '\0';
        sb__strlcpy(info.state, "completed", sizeof info.state);
        info.total = 0;
    } else {
        sb__bus_wake_local(o->bus, SB_OPERATIONS_QUEUE); /* the worker's */
    }
    if (out != NULL)
        *out = info;
    return SB_OK;
}

/* ---- reading ---- */

/* Public (sqlbus.h): one row; SB_NOTFOUND when there is none. */
int sb_operations_get(sb_operations *o, sb_bus *bus, const char *id,
                      sb_operation_info *out, sb_error *err)
{
    sb_error_clear(err);
    if (o == NULL || id == NULL || out == NULL)
        return sb__err(err, SB_INVALID,
                       o == NULL    ? "ops"
                       : id == NULL ? "id"
                                    : "out",
                       "arguments must not be NULL");
    if (sb__out_struct(out, sizeof *out, "sb_operation_info", err) != SB_OK)
        return SB_INVALID;
    if (bus == NULL)
        bus = o->bus;
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p = sb__v_text(id);
    sb_rows *rows = NULL;
    rc = sb__query(c, o->sql.get, &p, 1, &rows, NULL, err);
    sb__pool_release(bus->pool, c);
    if (rc == SB_OK && rows->nrows == 0)
        rc = sb__err(err, SB_NOTFOUND, "id", "no operation %.40s", id);
    if (rc == SB_OK)
        row_info(rows, 0, out);
    sb__rows_free(rows);
    return rc;
}

/* Public (sqlbus.h): the `limit` newest rows to `fn`, no connection held
 * while it runs. */
int sb_operations_list(sb_operations *o, sb_bus *bus, size_t limit,
                       sb_operation_fn fn, void *user, sb_error *err)
{
    sb_error_clear(err);
    if (o == NULL || fn == NULL)
        return sb__err(err, SB_INVALID, o == NULL ? "ops" : "fn",
                       "arguments must not be NULL");
    if (limit < 1 || limit > 200)
        return sb__err(err, SB_INVALID, "limit", "limit must be 1 to 200");
    if (bus == NULL)
        bus = o->bus;
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p = sb__v_int((int64_t)limit);
    sb_rows *rows = NULL;
    rc = sb__query(c, o->sql.recent, &p, 1, &rows, NULL, err);
    sb__pool_release(bus->pool, c); /* none held while `fn` runs */
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        sb_operation_info info;
        row_info(rows, r, &info);
        if (fn(&info, user) != 0)
            break;
    }
    sb__rows_free(rows);
    return rc;
}

/* ---- running ---- */

static int exec1(sb_operations *o, const char *sql, const sb_value *p, size_t n,
                 sb_error *err)
{
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(o->bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    rc = sb__query(c, sql, p, n, NULL, NULL, err);
    sb__pool_release(o->bus->pool, c);
    return rc;
}

typedef struct progress_ctx {
    sb_operations *o;
    const char *id;
} progress_ctx;

/* The operation's record kept in step with the library's walk
 * (sb_errors_op_hook), on the walk's connection inside its transactions:
 * the first run writes the selection's count as the total (and, for a
 * group operation it resumes, what that had done); a resumed run (the
 * process died, or a transient failure) keeps the first figures and goes
 * on from the done its committed batches wrote. */
static int record_start(sb_conn *c, int64_t *total, int64_t *done, void *user,
                        sb_error *err)
{
    progress_ctx *x = user;
    sb_value p[4] = {sb__v_text(x->id), sb__v_int(*total), sb__v_int(*done),
                     sb__v_int(sb__wall_us())};
    int rc = sb__query(c, x->o->sql.total, p, 4, NULL, NULL, err);
    sb_rows *rows = NULL;
    if (rc == SB_OK)
        rc = sb__query(c, x->o->sql.figures, p, 1, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 1) {
        *total = sb__rows_int(rows, 0, 0);
        *done = sb__rows_int(rows, 0, 1);
    }
    sb__rows_free(rows);
    return rc;
}

static int record_step(sb_conn *c, int64_t changed, void *user, sb_error *err)
{
    progress_ctx *x = user;
    sb_value p[3] = {sb__v_text(x->id), sb__v_int(changed),
                     sb__v_int(sb__wall_us())};
    return sb__query(c, x->o->sql.step, p, 3, NULL, NULL, err);
}

/* After each committed batch: the record's figures, to the observer. */
static void on_progress(int64_t done, int64_t total, void *user)
{
    progress_ctx *x = user;
    x->o->o.progress(x->id, done, total, x->o->o.progress_user);
}

static int run_kind(sb_operations *o, const char *kind,
                    const sb_failed_selection *s, const sb_errors_op_hook *h,
                    sb_error *err)
{
    if (strcmp(kind, "retry") == 0)
        return sb__errors_retry(o->store, s, h, NULL, err);
    if (strcmp(kind, "archive") == 0)
        return sb__errors_archive(o->store, s, 1, h, NULL, err);
    if (strcmp(kind, "unarchive") == 0)
        return sb__errors_archive(o->store, s, 0, h, NULL, err);
    if (strcmp(kind, "retry_pending") == 0)
        return sb__errors_retry_pending(o->store, s, h, NULL, err);
    return sb__errors_resolve(o->store, s, h, NULL, err);
}

/* Whether a failed run of the job is tried again. A group operation's
 * job that comes back after its process died may find the group's own
 * record of that run still live (E19: it counts as interrupted only 60 s
 * after its last batch, and the job's lease can lapse sooner): that
 * conflict passes with time, so the job waits for it too. */
static int transient(int rc, const sb_operation_info *info, const sb_msg *m)
{
    rc &= 0xff;
    if (rc == SB_CONFLICT && info->group_id[0] != '\0' &&
        sb_msg_attempts(m) > 1)
        return 1;
    return rc == SB_BUSY || rc == SB_UNAVAILABLE || rc == SB_TIMEOUT ||
           rc == SB_NOMEM;
}

/* The job's handler: run the operation its payload names. A transient
 * failure naks (the job runs again after the redelivery delay) until the
 * last attempt, which marks the operation failed. */
static int handle(sb_delivery *d, void *user)
{
    sb_operations *o = user;
    const sb_msg *m = sb_delivery_msg(d);
    size_t len = 0;
    const char *payload = sb_msg_payload(m, &len);
    char id[37] = "";
    if (len < sizeof id)
        memcpy(id, payload, len);
    sb_error err;
    sb_conn *c = NULL;
    sb_rows *rows = NULL;
    int rc = sb__pool_acquire(o->bus->pool, 5000, &c, &err);
    if (rc == SB_OK) {
        sb_value p = sb__v_text(id);
        rc = sb__query(c, o->sql.get, &p, 1, &rows, NULL, &err);
        sb__pool_release(o->bus->pool, c);
    }
    if (rc != SB_OK)
        return rc;
    if (rows->nrows == 0) { /* pruned, or never committed: nothing to do */
        sb__rows_free(rows);
        return SB_OK;
    }
    sb_operation_info info;
    row_info(rows, 0, &info);
    json_error_t jerr;
    json_t *j = json_loads(sb__rows_text(rows, 0, 9), 0, &jerr);
    sb__rows_free(rows);
    if (strcmp(info.state, "completed") == 0 ||
        strcmp(info.state, "failed") == 0) {
        json_decref(j);
        return SB_OK;
    }
    int64_t now = sb__wall_us();
    sb_value start[2] = {sb__v_text(id), sb__v_int(now)};
    rc = exec1(o, o->sql.start, start, 2, &err);
    sb_failed_selection sel;
    const char **ids = NULL;
    int prc = selection_parse(j, &sel, &ids);
    progress_ctx px = {o, id};
    sb_errors_op_hook hook = {record_start, record_step, &px};
    if (o->o.progress != NULL) {
        sel.progress = on_progress;
        sel.progress_user = &px;
    }
    if (rc == SB_OK)
        rc = prc != SB_OK ? sb__err(&err, prc, "selection",
                                    "the stored selection is unreadable")
                          : run_kind(o, info.kind, &sel, &hook, &err);
    sb__free(ids);
    json_decref(j);
    if (rc != SB_OK && transient(rc, &info, m) &&
        sb_msg_attempts(m) < ATTEMPTS) {
        say(o, SB_LOG_WARN, "operation %s will run again: %s", id, err.message);
        return rc;
    }
    const char *state = rc == SB_OK ? "completed" : "failed";
    sb_value end[4] = {sb__v_text(id), sb__v_text(state),
                       sb__v_int(sb__wall_us()),
                       rc == SB_OK ? sb__v_null() : sb__v_text(err.message)};
    sb_error e2;
    int erc = exec1(o, o->sql.end, end, 4, &e2);
    if (rc != SB_OK)
        say(o, SB_LOG_WARN, "operation %s failed: %s", id, err.message);
    return erc;
}

/* ---- the sweeper ---- */

static void sweep(sb_operations *o)
{
    sb_error err;
    int64_t now = sb__wall_us();
    int64_t keep_us = (o->o.keep_ms ? o->o.keep_ms : KEEP_DEFAULT_MS) * 1000;
    sb_value cut = sb__v_int(now - keep_us);
    exec1(o, o->sql.prune, &cut, 1, &err);
    /* A queued row whose job was lost (it cannot be: both are written in
     * one transaction) or finished without updating it gets its job again;
     * publishing the same id while the job exists changes nothing (T9). */
    sb_conn *c = NULL;
    sb_rows *rows = NULL;
    if (sb__pool_acquire(o->bus->pool, 5000, &c, &err) != SB_OK)
        return;
    sb_value p = sb__v_int(now - ORPHAN_AFTER_US);
    int rc = sb__query(c, o->sql.orphans, &p, 1, &rows, NULL, &err);
    sb__pool_release(o->bus->pool, c);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        const char *id = sb__rows_text(rows, r, 0);
        sb_outgoing job = {id, id, strlen(id), NULL, 0};
        sb_publish(o->bus, NULL, SB_OPERATIONS_QUEUE, &job, NULL, &err);
    }
    sb__rows_free(rows);
}

static void *sweeper(void *arg)
{
    sb_operations *o = arg;
    pthread_mutex_lock(&o->mu);
    while (!o->stopping) {
        pthread_mutex_unlock(&o->mu);
        sweep(o);
        pthread_mutex_lock(&o->mu);
        int64_t until = sb__mono_us() + SWEEP_EVERY_US;
        while (!o->stopping && sb__mono_us() < until)
            sb__cond_wait_until(&o->cv, &o->mu, until);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* ---- lifecycle ---- */

/* The table under the schema lock (as the store's, errors/store.c). */
static int create_tx(sb_conn *c, void *arg, sb_error *err)
{
    sb_operations *o = arg;
    int rc = SB_OK;
    if (o->bus->sql->lock != NULL)
        rc = o->bus->dialect == SB_DIALECT_MSSQL
                 ? sb__exec(c, o->bus->sql->lock, err)
                 : sb__query(c, o->bus->sql->lock, NULL, 0, NULL, NULL, err);
    return rc == SB_OK ? sb__exec(c, o->sql.ddl, err) : rc;
}

/* Create what is missing, then check the table's columns against the
 * catalog (sb__check_columns, transport/columns.c: each there, of its
 * type, NOT NULL where it must be; SB_SCHEMA_MISMATCH naming the column
 * and the fix otherwise). A table of another shape, made by hand or by
 * another product, fails the DDL too (its index names a column it lacks),
 * and then the check's message is the one reported. */
static int create_table(sb_operations *o, sb_error *err)
{
    sb_error create_err;
    int create_rc =
        sb__db_run_tx(o->bus->pool, NULL, create_tx, o, &create_err);
    char table[160];
    snprintf(table, sizeof table, "%soperations", o->bus->prefix);
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(o->bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p = sb__v_text(table);
    sb_rows *rows = NULL;
    rc = sb__query(c, o->bus->sql->columns, &p, 1, &rows, NULL, err);
    sb__pool_release(o->bus->pool, c);
    if (rc == SB_OK && rows->nrows > 0)
        rc = sb__check_columns(o->bus->dialect, table, sb__ops_columns,
                               sb__ops_n_columns, rows, err);
    sb__rows_free(rows);
    if (rc == SB_OK && create_rc != SB_OK) {
        if (err != NULL)
            *err = create_err;
        rc = create_rc;
    }
    return rc;
}

/* Public (sqlbus.h): the table (created, then checked against the
 * catalog), the worker and the sweeper. */
int sb_operations_open(sb_errors *store, const sb_operations_options *opts,
                       sb_operations **out, sb_error *err)
{
    sb_error_clear(err);
    if (store == NULL || out == NULL)
        return sb__err(err, SB_INVALID, store ? "out" : "store",
                       "arguments must not be NULL");
    *out = NULL;
    if (opts != NULL && opts->size != 0 && opts->size < sizeof *opts)
        return sb__err(err, SB_INVALID, "size",
                       "sb_operations_options.size is smaller than any "
                       "version");
    if (opts != NULL && (opts->keep_ms < 0 || opts->lease_ms < 0))
        return sb__err(err, SB_INVALID,
                       opts->keep_ms < 0 ? "keep_ms" : "lease_ms",
                       "keep_ms and lease_ms must be 0 (default) or more");
    sb_bus *bus = store->bus;
    sb_operations *o = sb__calloc(1, sizeof *o);
    if (o == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    o->bus = bus;
    o->store = store;
    if (opts != NULL)
        o->o = *opts;
    int rc = sb__ops_sql_new(bus->dialect, bus->prefix, &o->sql);
    if (rc != SB_OK)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (rc == SB_OK)
        rc = create_table(o, err);
    pthread_mutex_init(&o->mu, NULL);
    sb__cond_init_monotonic(&o->cv);
    /* The sweeper first: it calls none of the caller's callbacks, so a
     * failure to start the worker after it leaves none having run. */
    if (rc == SB_OK) {
        o->started_sweeper = pthread_create(&o->sweeper, NULL, sweeper, o) == 0;
        if (!o->started_sweeper)
            rc = sb__err(err, SB_ERROR, NULL, "cannot start a thread");
    }
    if (rc == SB_OK) {
        sb_worker_options w = {.size = sizeof w,
                               .queue = SB_OPERATIONS_QUEUE,
                               .handler = handle,
                               .user = o,
                               .concurrency = 1,
                               .lease_ms =
                                   o->o.lease_ms > 0 ? o->o.lease_ms : LEASE_MS,
                               .max_attempts = -1,
                               .redelivery_delay_ms = 2000,
                               .redelivery_factor = 2.0,
                               .redelivery_max_ms = 60000};
        rc = sb__worker_start_internal(bus, &w, &o->worker, err);
    }
    if (rc != SB_OK) {
        sb_operations_close(o);
        return rc;
    }
    *out = o;
    return SB_OK;
}

/* Public (sqlbus.h): stop the sweeper and the worker (the running job
 * finishes or is handed back), free. NULL-safe. */
void sb_operations_close(sb_operations *o)
{
    if (o == NULL)
        return;
    pthread_mutex_lock(&o->mu);
    o->stopping = 1;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    if (o->started_sweeper)
        pthread_join(o->sweeper, NULL);
    sb_worker_free(o->worker);
    sb__ops_sql_free(&o->sql);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    sb__free(o);
}
