/* api_sc_checks.c - sqlbus's own health as ServiceControl's custom checks,
 * and the event log (issue 22), for ServicePulse's Custom checks and
 * Events screens. Nothing here writes on its own account but a
 * dismissal: the checks are evaluated on each request (checks.c); the
 * event log is read from what the store keeps (durable operations, the
 * heartbeat rows) and from the outages the sampler saw. */
#include "server/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/checks.h"
#include "server/loops.h"
#include "server/stats.h"

#define ORIGIN_NAME "sqlbus serve"

static void check_json(sb_buf *b, const sb_check *c, int64_t now_us,
                       const char *host, const char *host_id)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", c->id);
    sb__json_str_m(b, &f, "custom_check_id", c->name);
    sb__json_str_m(b, &f, "category", c->category);
    sb__json_str_m(b, &f, "status", c->failing ? "Fail" : "Pass");
    sb__json_time_m(b, &f, "reported_at", now_us);
    if (c->failing)
        sb__json_str_m(b, &f, "failure_reason", c->reason);
    sb__json_key(b, &f, "originating_endpoint");
    int g = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &g, "name", ORIGIN_NAME);
    sb__json_str_m(b, &g, "host_id", host_id);
    sb__json_str_m(b, &g, "host", host);
    sb__buf_puts(b, "}}");
}

/* GET /api/customchecks[?status=fail|pass][&page&per_page]. */
static int list_checks(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *status = sb__query_get(r->q, "status");
    int want = -1; /* -1 all, 1 failing, 0 passing */
    if (status != NULL && status[0] != '\0') {
        if (strcasecmp(status, "fail") == 0)
            want = 1;
        else if (strcasecmp(status, "pass") == 0)
            want = 0;
        else
            return sb__api_error(out, 400, "invalid", "status",
                                 "status must be fail or pass"),
                   1;
    }
    size_t page = 1, per_page = SB_API_DEFAULT_PER_PAGE;
    if (!sb__page_params(r->q, &page, &per_page, out))
        return 1;
    sb_check c[SB_CHECKS];
    sb__checks_evaluate(a, c);
    sb__checks_apply_dismissals(a, c);
    char host[256], host_id[37];
    sb__checks_origin(host, host_id);
    int64_t now = sb__wall_us();
    size_t total = 0, listed = 0;
    sb__buf_puts(&out->body, "[");
    for (int i = 0; i < SB_CHECKS; i++) {
        if (!c[i].applies || c[i].dismissed ||
            (want >= 0 && c[i].failing != want))
            continue;
        total++;
        if (total <= (page - 1) * per_page || listed == per_page)
            continue;
        if (listed++ > 0)
            sb__buf_puts(&out->body, ",");
        check_json(&out->body, &c[i], now, host, host_id);
    }
    sb__buf_puts(&out->body, "]");
    sb__page_headers(out, "/api/customchecks", r->q, page, per_page,
                     (int64_t)total);
    out->status = 200;
    return 1;
}

/* DELETE /api/customchecks/{id}: dismiss the check's current failure. */
static int dismiss(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *id = r->m->captures[0];
    char known[37];
    sb_error err;
    int rc = sb__checks_dismiss(a, id, known, &err);
    if (rc == SB_NOTFOUND)
        return sb__api_error(out, 404, "not_found", "id",
                             "no custom check %.40s", id),
               1;
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "{\"id\":");
    sb__buf_json_str(&out->body, known);
    sb__buf_puts(&out->body, ",\"dismissed\":true}");
    out->status = 200;
    return 1;
}

/* ---- the event log ---- */

#define EVENTS_OPS 200 /* the newest operations read */

typedef struct event {
    char id[37];
    char description[512];
    const char *severity; /* "critical", "error", "warning", "info" */
    int64_t raised_us;
    char related[2][96]; /* "" when unused */
    const char *category;
    const char *event_type;
} event;

typedef struct events {
    event *e;
    size_t n, cap;
    int nomem;
} events;

static event *add(events *v, const char *key_a, const char *key_b)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        event *e = sb__realloc(v->e, cap * sizeof *e);
        if (e == NULL) {
            v->nomem = 1;
            return NULL;
        }
        v->e = e;
        v->cap = cap;
    }
    event *e = &v->e[v->n++];
    memset(e, 0, sizeof *e);
    sb_deterministic_guid(key_a, key_b, e->id);
    e->severity = "info";
    return e;
}

static const char *op_words(const char *kind)
{
    return strcmp(kind, "retry") == 0           ? "Retry"
           : strcmp(kind, "archive") == 0       ? "Delete (archive)"
           : strcmp(kind, "unarchive") == 0     ? "Restore (unarchive)"
           : strcmp(kind, "retry_pending") == 0 ? "Retry of pending retries"
           : strcmp(kind, "resolve") == 0       ? "Resolve"
                                                : kind;
}

static int on_op(const sb_operation_info *o, void *user)
{
    events *v = user;
    char of[96] = "";
    if (o->group_id[0] != '\0')
        snprintf(of, sizeof of, " of group %s", o->group_id);
    event *e = add(v, o->id, "requested");
    if (e == NULL)
        return 1;
    if (o->total >= 0)
        snprintf(e->description, sizeof e->description,
                 "%s%s of %lld message%s requested", op_words(o->kind), of,
                 (long long)o->total, o->total == 1 ? "" : "s");
    else
        snprintf(e->description, sizeof e->description, "%s%s requested",
                 op_words(o->kind), of);
    e->raised_us = o->created_us;
    snprintf(e->related[0], sizeof e->related[0], "/operations/%s", o->id);
    if (o->group_id[0] != '\0')
        snprintf(e->related[1], sizeof e->related[1],
                 "/recoverability/groups/%s", o->group_id);
    e->category = "Recoverability";
    e->event_type = "OperationRequested";
    int done = strcmp(o->state, "completed") == 0;
    int failed = strcmp(o->state, "failed") == 0;
    if (!done && !failed)
        return 0;
    event *r = add(v, o->id, o->state);
    if (r == NULL)
        return 1;
    if (done)
        snprintf(r->description, sizeof r->description,
                 "%s%s completed: %lld message%s changed", op_words(o->kind),
                 of, (long long)o->done, o->done == 1 ? "" : "s");
    else
        snprintf(r->description, sizeof r->description, "%s%s failed: %s",
                 op_words(o->kind), of, o->error);
    r->severity = done ? "info" : "error";
    r->raised_us = o->updated_us;
    memcpy(r->related, e->related, sizeof r->related);
    r->category = "Recoverability";
    r->event_type = done ? "OperationCompleted" : "OperationFailed";
    return 0;
}

/* The instances' starts, stops and failures to beat. */
static void heartbeat_events(sb_heartbeat **h, size_t n, events *v)
{
    for (size_t i = 0; i < n && !v->nomem; i++) {
        char at[64];
        snprintf(at, sizeof at, "%lld", (long long)h[i]->started_us);
        event *e = add(v, h[i]->id, at);
        if (e == NULL)
            return;
        snprintf(e->description, sizeof e->description,
                 "Endpoint %s started on %s (pid %lld)", h[i]->endpoint,
                 h[i]->host, (long long)h[i]->pid);
        e->raised_us = h[i]->started_us;
        snprintf(e->related[0], sizeof e->related[0], "/endpoint/%s", h[i]->id);
        e->category = "HeartbeatMonitoring";
        e->event_type = "EndpointStarted";
        if (h[i]->alive)
            continue;
        e = add(v, h[i]->id, h[i]->stopped_us ? "stopped" : "dead");
        if (e == NULL)
            return;
        if (h[i]->stopped_us != 0) {
            snprintf(e->description, sizeof e->description,
                     "Endpoint %s on %s stopped", h[i]->endpoint, h[i]->host);
            e->raised_us = h[i]->stopped_us;
            e->event_type = "EndpointStopped";
        } else if (h[i]->monitored) {
            int64_t grace =
                h[i]->interval_ms * 1000LL * SB_HEARTBEAT_GRACE_INTERVALS;
            snprintf(e->description, sizeof e->description,
                     "Endpoint %s on %s failed to send heartbeats",
                     h[i]->endpoint, h[i]->host);
            e->severity = "error";
            e->raised_us = h[i]->last_beat_us + grace;
            e->event_type = "EndpointFailedToHeartbeat";
        } else {
            v->n--; /* muted: no failure is raised */
            continue;
        }
        snprintf(e->related[0], sizeof e->related[0], "/endpoint/%s", h[i]->id);
        e->category = "HeartbeatMonitoring";
    }
}

static void outage_events(const sb_api *a, events *v)
{
    sb_stats_outage o[SB_STATS_OUTAGES];
    size_t n = sb__stats_outages(a->stats, o, SB_STATS_OUTAGES);
    for (size_t i = 0; i < n && !v->nomem; i++) {
        char at[32];
        snprintf(at, sizeof at, "%lld", (long long)o[i].start_us);
        event *e = add(v, "sqlbus-outage", at);
        if (e == NULL)
            return;
        sb__strlcpy(e->description,
                    "The database could not be reached by sqlbus serve",
                    sizeof e->description);
        e->severity = "critical";
        e->raised_us = o[i].start_us;
        e->category = "sqlbus";
        e->event_type = "DatabaseUnreachable";
        if (o[i].end_us == 0)
            continue;
        e = add(v, "sqlbus-restored", at);
        if (e == NULL)
            return;
        snprintf(e->description, sizeof e->description,
                 "The database answers again, after %lld s",
                 (long long)((o[i].end_us - o[i].start_us) / 1000000));
        e->raised_us = o[i].end_us;
        e->category = "sqlbus";
        e->event_type = "DatabaseRestored";
    }
}

/* Error ingestion's failing episodes in this process. */
static void ingestion_events(const sb_api *a, events *v)
{
    sb_loops_episode ep[SB_LOOPS_EPISODES];
    size_t n = sb__loops_episodes(a->loops, ep, SB_LOOPS_EPISODES);
    for (size_t i = 0; i < n && !v->nomem; i++) {
        char at[32];
        snprintf(at, sizeof at, "%lld", (long long)ep[i].start_us);
        event *e = add(v, "sqlbus-ingestion-failed", at);
        if (e == NULL)
            return;
        snprintf(e->description, sizeof e->description,
                 "Error ingestion failed: %s", ep[i].error);
        e->severity = "error";
        e->raised_us = ep[i].start_us;
        e->category = "sqlbus";
        e->event_type = "IngestionFailed";
        if (ep[i].end_us == 0)
            continue;
        e = add(v, "sqlbus-ingestion-restored", at);
        if (e == NULL)
            return;
        snprintf(e->description, sizeof e->description,
                 "Error ingestion works again, after %lld s",
                 (long long)((ep[i].end_us - ep[i].start_us) / 1000000));
        e->raised_us = ep[i].end_us;
        e->category = "sqlbus";
        e->event_type = "IngestionRestored";
    }
}

static int newest_first(const void *pa, const void *pb)
{
    const event *a = pa, *b = pb;
    if (a->raised_us != b->raised_us)
        return a->raised_us < b->raised_us ? 1 : -1;
    return strcmp(a->id, b->id);
}

static void event_json(sb_buf *b, const event *e)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", e->id);
    sb__json_str_m(b, &f, "description", e->description);
    sb__json_str_m(b, &f, "severity", e->severity);
    sb__json_time_m(b, &f, "raised_at", e->raised_us);
    sb__json_key(b, &f, "related_to");
    sb__buf_puts(b, "[");
    for (int i = 0; i < 2 && e->related[i][0] != '\0'; i++) {
        if (i > 0)
            sb__buf_puts(b, ",");
        sb__buf_json_str(b, e->related[i]);
    }
    sb__buf_puts(b, "]");
    sb__json_str_m(b, &f, "category", e->category);
    sb__json_str_m(b, &f, "event_type", e->event_type);
    sb__buf_puts(b, "}");
}

/* GET /api/eventlogitems[?page&per_page]: newest first. */
static int event_log(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    size_t page = 1, per_page = SB_API_DEFAULT_PER_PAGE;
    if (!sb__page_params(r->q, &page, &per_page, out))
        return 1;
    events v = {NULL, 0, 0, 0};
    sb_error err;
    int rc = SB_OK;
    if (a->ops != NULL)
        rc = sb_operations_list(a->ops, a->bus, EVENTS_OPS, on_op, &v, &err);
    sb_heartbeat **h = NULL;
    size_t n = 0;
    if (rc == SB_OK)
        rc = sb_heartbeat_list(a->bus, &h, &n, &err);
    if (rc != SB_OK) {
        sb__free(v.e);
        return sb__api_fail(out, rc, &err), 1;
    }
    heartbeat_events(h, n, &v);
    sb_free(h);
    outage_events(a, &v);
    ingestion_events(a, &v);
    if (v.nomem) {
        sb__free(v.e);
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory"), 1;
    }
    if (v.n > 1)
        qsort(v.e, v.n, sizeof *v.e, newest_first);
    sb__buf_puts(&out->body, "[");
    size_t first = (page - 1) * per_page;
    for (size_t i = first; i < v.n && i < first + per_page; i++) {
        if (i > first)
            sb__buf_puts(&out->body, ",");
        event_json(&out->body, &v.e[i]);
    }
    sb__buf_puts(&out->body, "]");
    sb__page_headers(out, "/api/eventlogitems", r->q, page, per_page,
                     (int64_t)v.n);
    sb__free(v.e);
    out->status = 200;
    return 1;
}

int sb__api_sc_checks(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    switch (r->m->route) {
    case SB_R_SC_CUSTOMCHECKS: return list_checks(a, r, out);
    case SB_R_SC_CUSTOMCHECK: return dismiss(a, r, out);
    case SB_R_SC_EVENTLOG: return event_log(a, r, out);
    default: return 0;
    }
}
