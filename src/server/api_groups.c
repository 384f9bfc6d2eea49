/* api_groups.c - failure groups and retry redirects (S4, E13, E19, E20):
 * classifiers, the open (and closed) and archived groups of a classifier
 * with the overlay of their latest group operation in ServiceControl's
 * terms, one group, its acknowledgement, ServiceControl's retry history
 * and sqlbus's own, group comments, and the redirect routes. */
#include "server/api.h"

#include <jansson.h>
#include <string.h>

#define HISTORY_MAX 50

static const char *const classifiers[] = {"Exception Type and Stack Trace",
                                          "Message Type", "Endpoint Address",
                                          "Endpoint Instance", "Endpoint Name"};

static int known_classifier(const char *c)
{
    for (size_t i = 0; i < sizeof classifiers / sizeof *classifiers; i++)
        if (strcmp(c, classifiers[i]) == 0)
            return 1;
    return 0;
}

/* What a history entry names of a group: its title (ServiceControl's
 * originator), classifier and last failure, from its newest message. */
typedef struct group_names {
    char id[37];
    char title[512];
    char type[64];
    int64_t first_us, last_us; /* its messages' oldest and newest failure */
} group_names;

/* The names of group `id` into `g`; a group with no message left keeps
 * them empty. 0 with the failure in `out` when a read failed. */
static int names_of(const sb_api *a, const char *id, group_names *g,
                    sb_api_resp *out)
{
    memset(g, 0, sizeof *g);
    sb__strlcpy(g->id, id, sizeof g->id);
    sb_failed_query q = {
        .size = sizeof q, .status = -1, .group_id = id, .per_page = 1};
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_errors_list(a->store, &q, &s, &n, NULL, &err);
    sb_failed_message *m = NULL;
    if (rc == SB_OK && n > 0) {
        g->last_us = s[0]->last_failure_us;
        rc = sb_errors_get(a->store, s[0]->unique_id, &m, &err);
        if ((rc & 0xff) == SB_NOTFOUND) /* gone since: no names */
            rc = SB_OK;
    }
    sb_free(s);
    s = NULL;
    if (rc == SB_OK && n > 0) { /* the oldest, for ServicePulse's "first" */
        q.ascending = 1;
        if (sb_errors_list(a->store, &q, &s, &n, NULL, &err) == SB_OK && n > 0)
            g->first_us = s[0]->first_failure_us;
        sb_free(s);
    }
    for (size_t i = 0; m != NULL && i < sb_failed_group_count(m); i++) {
        const char *gid, *type, *title;
        sb_failed_group(m, i, &gid, &type, &title);
        if (strcmp(gid, id) == 0) {
            sb__strlcpy(g->title, title, sizeof g->title);
            sb__strlcpy(g->type, type, sizeof g->type);
        }
    }
    sb_failed_message_free(m);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err);
    return 1;
}

/* ServiceControl's operation_status of a group's operation `op` (NULL:
 * none), and whether it waits for its acknowledgement: a retry forwards
 * (Forwarding) and completes (Completed), an archive progresses
 * (ArchiveProgressing) and completes (ArchiveCompleted); one interrupted
 * waits to be resumed (Waiting, ArchiveStarted); a finished one waits
 * for "Dismiss" until acknowledged. An unarchive is none of
 * ServiceControl's group operations: None. */
static const char *sc_status(const sb_group_operation *op, int *ack)
{
    *ack = 0;
    if (op == NULL || strcmp(op->kind, "unarchive") == 0)
        return "None";
    int retry = strcmp(op->kind, "retry") == 0;
    if (strcmp(op->state, "running") == 0)
        return retry ? "Forwarding" : "ArchiveProgressing";
    if (strcmp(op->state, "interrupted") == 0)
        return retry ? "Waiting" : "ArchiveStarted";
    *ack = 1;
    return retry ? "Completed" : "ArchiveCompleted";
}

/* One group with its operation overlay `op` (NULL: none) in
 * ServiceControl's GroupOperation shape: operation_status, _failed,
 * _progress and need_user_acknowledgement always (ServicePulse polls
 * every second while the status is missing), the rest with an
 * operation, and sqlbus's own kind and state of it (operation_kind,
 * operation_state: running, completed, failed, interrupted). */
static void group_json(sb_buf *b, const sb_failure_group *g,
                       const sb_group_operation *op)
{
    int f = 1, ack = 0;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", g->id);
    sb__json_str_m(b, &f, "title", g->title);
    sb__json_str_m(b, &f, "type", g->type);
    sb__json_int_m(b, &f, "count", g->count);
    sb__json_time_m(b, &f, "first", g->first_failure_us);
    sb__json_time_m(b, &f, "last", g->last_failure_us);
    sb__json_str_m(b, &f, "comment", g->comment);
    const char *status = sc_status(op, &ack);
    if (strcmp(status, "None") == 0)
        op = NULL;
    sb__json_str_m(b, &f, "operation_status", status);
    sb__json_bool_m(b, &f, "operation_failed",
                    op != NULL && strcmp(op->state, "failed") == 0);
    sb__json_bool_m(b, &f, "need_user_acknowledgement", ack);
    sb__json_key(b, &f, "operation_progress");
    sb__buf_printf(b, "%.3f",
                   op == NULL      ? 0.0
                   : op->total > 0 ? (double)op->done / (double)op->total
                   : ack           ? 1.0
                                   : 0.0);
    if (op != NULL) {
        sb__json_str_m(b, &f, "operation_kind", op->kind);
        sb__json_str_m(b, &f, "operation_state", op->state);
        sb__json_int_m(b, &f, "operation_messages_completed_count", op->done);
        sb__json_int_m(b, &f, "operation_remaining_count",
                       op->total > op->done ? op->total - op->done : 0);
        sb__json_time_m(b, &f, "operation_start_time", op->started_us);
        sb__json_time_m(b, &f, "operation_completion_time", op->finished_us);
    }
    sb__buf_puts(b, "}");
}

/* The groups named by the newest operations, each once. */
typedef struct op_groups {
    char id[HISTORY_MAX][37];
    const char *ids[HISTORY_MAX];
    size_t n;
} op_groups;

static int op_group_member(const sb_operation_info *op, void *user)
{
    op_groups *w = user;
    if (op->group_id[0] == '\0' || w->n == HISTORY_MAX)
        return 0;
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->id[i], op->group_id) == 0)
            return 0;
    sb__strlcpy(w->id[w->n], op->group_id, sizeof w->id[w->n]);
    w->ids[w->n] = w->id[w->n];
    w->n++;
    return 0;
}

/* ServiceControl's closed groups of `classifier`: groups no longer open
 * (their messages retried or archived) whose finished operation waits
 * for its acknowledgement, found among the newest operations' groups
 * (of `title` only, when it is not NULL);
 * each counts the messages its operation changed, and carries sqlbus's
 * "closed": true. Written after the
 * `*n` entries of `b`, counted in *n. 0 with the failure in `out`. */
static int closed_groups(const sb_api *a, const char *classifier,
                         const char *title, sb_failure_group *const *open,
                         size_t n_open, sb_buf *b, size_t *n, sb_api_resp *out)
{
    op_groups *w = sb__calloc(1, sizeof *w);
    sb_group_operation **ops = NULL;
    size_t n_ops = 0;
    sb_error err;
    if (w == NULL)
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    int rc = sb_operations_list(a->ops, a->bus, HISTORY_MAX, op_group_member, w,
                                &err);
    size_t k = 0; /* the ones not open */
    for (size_t i = 0; rc == SB_OK && i < w->n; i++) {
        int is_open = 0;
        for (size_t j = 0; j < n_open && !is_open; j++)
            is_open = strcmp(open[j]->id, w->ids[i]) == 0;
        if (!is_open)
            w->ids[k++] = w->ids[i];
    }
    if (rc == SB_OK && k > 0)
        rc =
            sb_errors_group_operations(a->store, w->ids, k, &ops, &n_ops, &err);
    int ok = rc == SB_OK ? 1 : sb__api_fail(out, rc, &err);
    for (size_t i = 0; ok && i < n_ops; i++) {
        int ack = 0;
        sc_status(ops[i], &ack);
        group_names names;
        if (!ack || !(ok = names_of(a, ops[i]->group_id, &names, out)) ||
            strcmp(names.type, classifier) != 0 ||
            (title != NULL && strcmp(names.title, title) != 0))
            continue;
        sb_failure_group g;
        memset(&g, 0, sizeof g);
        g.size = sizeof g;
        sb__strlcpy(g.id, names.id, sizeof g.id);
        sb__strlcpy(g.title, names.title, sizeof g.title);
        sb__strlcpy(g.type, names.type, sizeof g.type);
        g.count = ops[i]->done;
        g.first_failure_us =
            names.first_us > 0 ? names.first_us : names.last_us;
        g.last_failure_us = names.last_us;
        if ((*n)++ > 0)
            sb__buf_puts(b, ",");
        group_json(b, &g, ops[i]);
        if (!b->failed && b->len > 0) /* reopen it for sqlbus's mark */
            b->data[--b->len] = '\0';
        sb__buf_puts(b, ",\"closed\":true}");
    }
    sb_free(ops);
    sb__free(w);
    return ok;
}

/* The groups of `classifier` over messages of `status`; `title` (NULL:
 * any) narrows them to the one with that title (ServiceControl's
 * classifierFilter). */
static int groups(const sb_api *a, const char *classifier, int status,
                  const char *title, sb_api_resp *out)
{
    if (!known_classifier(classifier)) {
        /* S12: never put in a statement; as ServiceControl answers it
         * (ServicePulse may send one a cookie kept, or "undefined"). */
        sb__buf_puts(&out->body, "[]");
        out->total = 0;
        out->status = 200;
        return 1;
    }
    sb_failure_group **g = NULL;
    size_t n = 0, n_ops = 0;
    sb_error err;
    int rc = sb_errors_groups(a->store, classifier, status, &g, &n, &err);
    if (rc == SB_OK && title != NULL) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(g[i]->title, title) == 0)
                g[k++] = g[i];
        n = k;
    }
    /* The overlay in one read, not one per group. */
    const char **ids = n ? sb__calloc(n, sizeof *ids) : NULL;
    sb_group_operation **ops = NULL;
    if (rc == SB_OK && n > 0 && ids == NULL)
        rc = sb__err(&err, SB_NOMEM, NULL, "out of memory");
    for (size_t i = 0; rc == SB_OK && i < n; i++)
        ids[i] = g[i]->id;
    if (rc == SB_OK)
        rc = sb_errors_group_operations(a->store, ids, n, &ops, &n_ops, &err);
    sb__free(ids);
    if (rc != SB_OK) {
        sb_free(g);
        return sb__api_fail(out, rc, &err), 1;
    }
    sb__buf_puts(&out->body, "[");
    for (size_t i = 0; i < n; i++) {
        const sb_group_operation *op = NULL;
        for (size_t k = 0; k < n_ops && op == NULL; k++)
            if (strcmp(ops[k]->group_id, g[i]->id) == 0)
                op = ops[k];
        if (i > 0)
            sb__buf_puts(&out->body, ",");
        group_json(&out->body, g[i], op);
    }
    size_t listed = n;
    /* Without durable operations (a caller of the handlers that opened
     * none) no operation has a record to show. */
    int ok =
        status != SB_FAILED_UNRESOLVED || a->ops == NULL ||
        closed_groups(a, classifier, title, g, n, &out->body, &listed, out);
    sb__buf_puts(&out->body, "]");
    if (ok) {
        out->total = (int64_t)listed;
        out->status = 200;
    } else {
        sb__buf_reset(&out->body);
    }
    sb_free(ops);
    sb_free(g);
    return 1;
}

/* The newest message of group `id` (of any status) into *s (transferred,
 * sb_free) and the group's size into *total (optional); 0 with the 404
 * naming "id", or the failure, in `out`. */
static int group_message(const sb_api *a, const char *id, int status,
                         sb_failed_summary ***s, int64_t *total,
                         sb_api_resp *out)
{
    sb_failed_query q = {
        .size = sizeof q, .status = status, .group_id = id, .per_page = 1};
    size_t n = 0;
    sb_error err;
    int rc = sb_errors_list(a->store, &q, s, &n, total, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err);
    if (n == 0) {
        sb_free(*s);
        *s = NULL;
        return sb__api_error(out, 404, "not_found", "id",
                             "no failure group %.100s", id);
    }
    return 1;
}

int sb__api_group_known(const sb_api *a, const char *id, sb_api_resp *out)
{
    sb_failed_summary **s = NULL;
    int known = group_message(a, id, -1, &s, NULL, out);
    sb_free(s);
    return known;
}

/* One group over its messages of `status` (-1: any; archived: the
 * archived group): its classifier and title from one of them, its counts
 * and window from the classifier's list when it is among the 200 newest,
 * else counted. */
static int group(const sb_api *a, const char *id, int status, sb_api_resp *out)
{
    sb_failed_summary **s = NULL;
    int64_t total = 0;
    if (!group_message(a, id, status, &s, &total, out))
        return 1;
    sb_error err;
    sb_failed_message *m = NULL;
    int rc = sb_errors_get(a->store, s[0]->unique_id, &m, &err);
    sb_free(s);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb_failure_group g;
    memset(&g, 0, sizeof g);
    g.size = sizeof g;
    sb__strlcpy(g.id, id, sizeof g.id);
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *gid, *type, *title;
        sb_failed_group(m, i, &gid, &type, &title);
        if (strcmp(gid, id) == 0) {
            sb__strlcpy(g.type, type, sizeof g.type);
            sb__strlcpy(g.title, title, sizeof g.title);
        }
    }
    sb_failed_message_free(m);
    g.count = total;
    int found = 0;
    for (int st = status < 0 ? SB_FAILED_UNRESOLVED : status;
         rc == SB_OK && !found && st <= SB_FAILED_ARCHIVED;
         st += SB_FAILED_ARCHIVED) {
        sb_failure_group **all = NULL;
        size_t k = 0;
        rc = sb_errors_groups(a->store, g.type, st, &all, &k, &err);
        for (size_t i = 0; rc == SB_OK && i < k && !found; i++)
            if (strcmp(all[i]->id, id) == 0) {
                g = *all[i];
                found = 1;
            }
        sb_free(all);
    }
    sb_group_operation op;
    op.size = sizeof op;
    int has_op = 0;
    if (rc == SB_OK) {
        rc = sb_errors_group_operation(a->store, id, &op, &err);
        has_op = rc == SB_OK;
        if (rc == SB_NOTFOUND)
            rc = SB_OK;
    }
    /* A read that failed is the answer's failure, not a group without
     * its window, comment or operation. */
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    group_json(&out->body, &g, has_op ? &op : NULL);
    out->status = 200;
    return 1;
}

static void op_json(sb_buf *b, const sb_operation_info *o)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", o->id);
    sb__json_str_m(b, &f, "kind", o->kind);
    sb__json_str_m(b, &f, "state", o->state);
    sb__json_str_m(b, &f, "group_id", o->group_id);
    if (o->total >= 0)
        sb__json_int_m(b, &f, "total", o->total);
    sb__json_int_m(b, &f, "done", o->done);
    sb__json_time_m(b, &f, "created", o->created_us);
    sb__json_time_m(b, &f, "updated", o->updated_us);
    sb__json_str_m(b, &f, "error", o->error);
    sb__buf_puts(b, "}");
}

void sb__api_op_json(sb_buf *b, const sb_operation_info *o)
{
    op_json(b, o);
}

/* The list being written: members so far, and whether only group
 * operations go in. */
typedef struct op_list {
    sb_buf *b;
    int groups_only;
    int k;
} op_list;

static int op_member(const sb_operation_info *op, void *user)
{
    op_list *l = user;
    if (l->groups_only && op->group_id[0] == '\0')
        return 0;
    if (l->k++ > 0)
        sb__buf_puts(l->b, ",");
    op_json(l->b, op);
    return 0;
}

/* The newest operations (all of them, or only group ones), written as
 * they come. */
static int operations(const sb_api *a, int groups_only, sb_api_resp *out)
{
    sb_error err;
    op_list l = {&out->body, groups_only, 0};
    sb__buf_puts(&out->body, "[");
    int rc =
        sb_operations_list(a->ops, a->bus, HISTORY_MAX, op_member, &l, &err);
    if (rc != SB_OK) {
        sb__buf_reset(&out->body);
        return sb__api_fail(out, rc, &err), 1;
    }
    sb__buf_puts(&out->body, "]");
    out->total = l.k;
    out->status = 200;
    return 1;
}

/* ---- ServiceControl's retry history (issue 22) ---- */

#define HISTORY_SHOWN 10 /* ServiceControl keeps the 10 newest */

/* The finished retries among the newest operations, newest first. */
typedef struct retries {
    sb_operation_info op[HISTORY_MAX];
    size_t n;
} retries;

static int retry_member(const sb_operation_info *op, void *user)
{
    retries *r = user;
    int retry = strcmp(op->kind, "retry") == 0 ||
                strcmp(op->kind, "retry_pending") == 0;
    int finished =
        strcmp(op->state, "completed") == 0 || strcmp(op->state, "failed") == 0;
    if (retry && finished && r->n < HISTORY_MAX)
        r->op[r->n++] = *op;
    return 0;
}

/* GET recoverability/history: ServiceControl's RetryHistory. The
 * historic operations are the 10 newest finished retries (a group's
 * named by its group id, titled by the group); the unacknowledged ones
 * the finished group retries whose group still shows its operation (not
 * acknowledged: DELETE recoverability/unacknowledgedgroups/{id}). The
 * store records an operation's kind and group but not which other
 * selection it had: those are retry_type "unknown". */
static int retry_history(const sb_api *a, sb_api_resp *out)
{
    retries *r = sb__calloc(1, sizeof *r);
    group_names *names = sb__calloc(HISTORY_MAX, sizeof *names);
    const char **ids = sb__calloc(HISTORY_MAX, sizeof *ids);
    sb_group_operation **ops = NULL;
    size_t n_names = 0, n_ops = 0, n_ids = 0;
    sb_error err;
    int ok = 1;
    if (r == NULL || names == NULL || ids == NULL)
        ok = sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    int rc = ok ? sb_operations_list(a->ops, a->bus, HISTORY_MAX, retry_member,
                                     r, &err)
                : SB_OK;
    if (ok && rc != SB_OK)
        ok = sb__api_fail(out, rc, &err);
    /* Each group once: its names, and its operation as it stands. */
    for (size_t i = 0; ok && i < r->n; i++) {
        const char *gid = r->op[i].group_id;
        size_t k = 0;
        while (gid[0] != '\0' && k < n_names && strcmp(names[k].id, gid) != 0)
            k++;
        if (gid[0] != '\0' && k == n_names) {
            ok = names_of(a, gid, &names[n_names], out);
            ids[n_ids++] = names[n_names++].id;
        }
    }
    if (ok && n_ids > 0) {
        rc = sb_errors_group_operations(a->store, ids, n_ids, &ops, &n_ops,
                                        &err);
        if (rc != SB_OK)
            ok = sb__api_fail(out, rc, &err);
    }
    sb_buf *b = &out->body;
    if (ok) {
        sb__buf_puts(b, "{\"historic_operations\":[");
        for (size_t i = 0; i < r->n && i < HISTORY_SHOWN; i++) {
            const sb_operation_info *o = &r->op[i];
            const group_names *g = NULL;
            for (size_t k = 0; o->group_id[0] && k < n_names && !g; k++)
                if (strcmp(names[k].id, o->group_id) == 0)
                    g = &names[k];
            int f = 1;
            sb__buf_puts(b, i ? ",{" : "{");
            sb__json_str_m(b, &f, "request_id", g ? g->id : o->id);
            sb__json_str_m(b, &f, "retry_type", g ? "failureGroup" : "unknown");
            sb__json_time_m(b, &f, "start_time", o->created_us);
            sb__json_time_m(b, &f, "completion_time", o->updated_us);
            sb__json_str_m(b, &f, "originator", g ? g->title : NULL);
            sb__json_bool_m(b, &f, "failed", strcmp(o->state, "failed") == 0);
            sb__json_int_m(b, &f, "number_of_messages_processed", o->done);
            sb__buf_puts(b, "}");
        }
        sb__buf_puts(b, "],\"unacknowledged_operations\":[");
        int k = 0;
        for (size_t i = 0; i < n_ops; i++) {
            const sb_group_operation *o = ops[i];
            if (strcmp(o->kind, "retry") != 0 ||
                (strcmp(o->state, "completed") != 0 &&
                 strcmp(o->state, "failed") != 0))
                continue;
            const group_names *g = NULL;
            for (size_t j = 0; j < n_names && !g; j++)
                if (strcmp(names[j].id, o->group_id) == 0)
                    g = &names[j];
            int f = 1;
            sb__buf_puts(b, k++ ? ",{" : "{");
            sb__json_str_m(b, &f, "request_id", o->group_id);
            sb__json_str_m(b, &f, "retry_type", "failureGroup");
            sb__json_time_m(b, &f, "start_time", o->started_us);
            sb__json_time_m(b, &f, "completion_time", o->finished_us);
            sb__json_time_m(b, &f, "last", g ? g->last_us : 0);
            sb__json_str_m(b, &f, "originator", g ? g->title : NULL);
            sb__json_str_m(b, &f, "classifier", g ? g->type : NULL);
            sb__json_bool_m(b, &f, "failed", strcmp(o->state, "failed") == 0);
            sb__json_int_m(b, &f, "number_of_messages_processed", o->done);
            sb__buf_puts(b, "}");
        }
        sb__buf_puts(b, "]}");
        out->status = 200;
    }
    sb_free(ops);
    sb__free(ids);
    sb__free(names);
    sb__free(r);
    return 1;
}

static int operation(const sb_api *a, const char *id, sb_api_resp *out)
{
    sb_operation_info o = {.size = sizeof o};
    sb_error err;
    int rc = sb_operations_get(a->ops, a->bus, id, &o, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    op_json(&out->body, &o);
    out->status = 200;
    return 1;
}

/* A group's comment set (POST, for a group that has messages: issue
 * 20.6, no row for a group that does not exist) or removed (DELETE,
 * idempotent). */
static int comment(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *text = NULL;
    if (r->method == SB_HTTP_POST) {
        text = sb__query_get(r->q, "comment");
        if (text == NULL || text[0] == '\0')
            return sb__api_error(out, 400, "invalid", "comment",
                                 "comment (a query parameter of 1 to %d "
                                 "bytes) is required",
                                 SB_MAX_COMMENT),
                   1;
        if (!sb__api_group_known(a, r->m->captures[0], out))
            return 1;
    }
    sb_error err;
    int rc = sb_errors_group_comment(a->store, r->m->captures[0], text, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "{}");
    out->status = 200;
    return 1;
}

/* DELETE recoverability/unacknowledgedgroups/{id}: ServicePulse's
 * "Dismiss" of a group's finished retry or archive. 404 when the group
 * has none, 409 while one runs. */
static int acknowledge(const sb_api *a, const char *id, sb_api_resp *out)
{
    sb_error err;
    int rc = sb_errors_group_acknowledge(a->store, id, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "{}");
    out->status = 200;
    return 1;
}

static void redirect_json(sb_buf *b, const sb_redirect *d)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "message_redirect_id", d->id);
    sb__json_str_m(b, &f, "from_physical_address", d->from_queue);
    sb__json_str_m(b, &f, "to_physical_address", d->to_queue);
    sb__json_time_m(b, &f, "last_modified", d->last_modified_us);
    sb__buf_puts(b, "}");
}

/* Issue 22: the fields of a redirect body, sqlbus's and ServiceControl's
 * (it ignores what it does not know, and ServicePulse sends the
 * redirect's id with a PUT): a wrong type is a 400 naming the field, a
 * field neither knows too (S10). *retry: retryexisting. 0 with the 400
 * in `out`. */
static int redirect_fields(const json_t *j, int *retry, sb_api_resp *out)
{
    static const char *const known[] = {"fromphysicaladdress",
                                        "tophysicaladdress", "id",
                                        "retryexisting", NULL};
    if (!sb__api_known_fields(j, known, out))
        return 0;
    static const char *const text[] = {"fromphysicaladdress",
                                       "tophysicaladdress", "id"};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        const json_t *v = json_object_get(j, text[i]);
        if (v != NULL && !json_is_string(v))
            return sb__api_error(out, 400, "invalid", text[i],
                                 "%s must be a string", text[i]);
    }
    const json_t *v = json_object_get(j, "retryexisting");
    if (v != NULL && !json_is_boolean(v))
        return sb__api_error(out, 400, "invalid", "retryexisting",
                             "retryexisting must be true or false");
    *retry = json_is_true(v);
    return 1;
}

/* Issue 22: the 409 of a redirect, with ServiceControl's reason: the
 * queue is already redirected ("Duplicate", `duplicate`), or the change
 * would chain redirects ("Dependents"). */
static int redirect_conflict(int rc, const sb_error *err, int duplicate,
                             sb_api_resp *out)
{
    sb__api_fail(out, rc, err);
    if ((rc & 0xff) == SB_CONFLICT)
        sb__strlcpy(out->reason, duplicate ? "Duplicate" : "Dependents",
                    sizeof out->reason);
    return 1;
}

static int redirects(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_error err;
    int rc;
    if (r->method == SB_HTTP_GET || r->method == SB_HTTP_HEAD) {
        sb_redirect **d = NULL;
        size_t n = 0;
        rc = sb_errors_redirects(a->store, &d, &n, &err);
        if (rc != SB_OK)
            return sb__api_fail(out, rc, &err), 1;
        sb__buf_puts(&out->body, "[");
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                sb__buf_puts(&out->body, ",");
            redirect_json(&out->body, d[i]);
        }
        sb__buf_puts(&out->body, "]");
        out->total = (int64_t)n;
        out->status = 200;
        sb_free(d);
        return 1;
    }
    const json_t *j = r->json;
    const char *from =
        json_string_value(json_object_get(j, "fromphysicaladdress"));
    const char *to = json_string_value(json_object_get(j, "tophysicaladdress"));
    int retry = 0;
    if (!redirect_fields(j, &retry, out))
        return 1;
    if (from == NULL || to == NULL)
        return sb__api_error(out, 400, "invalid",
                             from == NULL ? "fromphysicaladdress"
                                          : "tophysicaladdress",
                             "fromphysicaladdress and tophysicaladdress "
                             "(strings) are required"),
               1;
    /* What the queue had before: the same redirect again changes
     * nothing and retries nothing (ServiceControl's); another target is
     * a duplicate. */
    sb_redirect **had = NULL;
    size_t n_had = 0;
    rc = sb_errors_redirects(a->store, &had, &n_had, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int exists = 0, same = 0;
    for (size_t i = 0; i < n_had; i++)
        if (strcmp(had[i]->from_queue, from) == 0) {
            exists = 1;
            same = strcmp(had[i]->to_queue, to) == 0;
        }
    sb_free(had);
    sb_redirect d;
    d.size = sizeof d;
    rc = sb_errors_redirect_add(a->store, from, to, &d, &err);
    if (rc != SB_OK)
        return redirect_conflict(rc, &err, exists, out);
    redirect_json(&out->body, &d);
    out->status = 201;
    snprintf(out->location, sizeof out->location, "/api/redirects/%s", d.id);
    if (retry && !same) {
        /* Issue 22: retryexisting re-sends the queue's pending retries,
         * now through the redirect; the answer carries the operation. A
         * redirect made is answered as made: if the operation could not
         * be accepted, it is left out (POST
         * /api/pendingretries/queues/retry does the same). */
        sb_failed_selection sel = {.size = sizeof sel, .failed_queue = from};
        sb_operation_info op = {.size = sizeof op};
        if (sb_operations_submit(a->ops, a->bus, "retry_pending", &sel, &op,
                                 &err) == SB_OK) {
            if (!out->body.failed && out->body.len > 0)
                out->body.data[--out->body.len] = '\0'; /* reopen */
            sb__buf_puts(&out->body, ",\"retry\":");
            sb__api_op_json(&out->body, &op);
            sb__buf_puts(&out->body, "}");
        }
    }
    return 1;
}

static int redirect(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_error err;
    int rc;
    const char *id = r->m->captures[0];
    if (r->method == SB_HTTP_DELETE) {
        rc = sb_errors_redirect_remove(a->store, id, &err);
    } else {
        /* ServiceControl's PUT reads the target only: the id and the
         * from address ServicePulse sends beside it are taken, not
         * used. */
        const char *to =
            json_string_value(json_object_get(r->json, "tophysicaladdress"));
        int retry = 0;
        if (!redirect_fields(r->json, &retry, out) || to == NULL) {
            if (out->code == NULL)
                sb__api_error(out, 400, "invalid", "tophysicaladdress",
                              "the body must be an object with "
                              "tophysicaladdress (a string)");
            return 1;
        }
        rc = sb_errors_redirect_update(a->store, id, to, &err);
        if (rc != SB_OK)
            return redirect_conflict(rc, &err, 0, out);
    }
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "{}");
    out->status = 200;
    return 1;
}

int sb__api_groups(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const sb_route_match *m = r->m;
    switch (m->route) {
    case SB_R_CLASSIFIERS:
        sb__buf_puts(&out->body, "[");
        for (size_t i = 0; i < sizeof classifiers / sizeof *classifiers; i++) {
            if (i > 0)
                sb__buf_puts(&out->body, ",");
            sb__buf_json_str(&out->body, classifiers[i]);
        }
        sb__buf_puts(&out->body, "]");
        out->total = sizeof classifiers / sizeof *classifiers;
        out->status = 200;
        return 1;
    case SB_R_GROUPS:
    case SB_R_ARCHIVED_GROUPS: {
        /* ServicePulse sends "undefined" for no filter. */
        const char *title = m->route == SB_R_GROUPS
                                ? sb__query_get(r->q, "classifierFilter")
                                : NULL;
        if (title != NULL && (title[0] == '\0' || !strcmp(title, "undefined")))
            title = NULL;
        return groups(a, m->n_captures ? m->captures[0] : classifiers[0],
                      m->route == SB_R_GROUPS ? SB_FAILED_UNRESOLVED
                                              : SB_FAILED_ARCHIVED,
                      title, out);
    }
    case SB_R_GROUP: return group(a, m->captures[0], -1, out);
    case SB_R_ARCHIVED_GROUP:
        return group(a, m->captures[0], SB_FAILED_ARCHIVED, out);
    case SB_R_HISTORY: return retry_history(a, out);
    case SB_R_OWN_HISTORY: return operations(a, 1, out);
    case SB_R_OPERATIONS: return operations(a, 0, out);
    case SB_R_OPERATION: return operation(a, m->captures[0], out);
    case SB_R_GROUP_COMMENT: return comment(a, r, out);
    case SB_R_GROUP_ACK: return acknowledge(a, r->m->captures[0], out);
    case SB_R_REDIRECTS: return redirects(a, r, out);
    case SB_R_REDIRECT: return redirect(a, r, out);
    default: return 0;
    }
}
