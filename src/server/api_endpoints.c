/* api_endpoints.c - endpoint liveness over HTTP (issue 22), in the shapes
 * of ServiceControl's heartbeat routes that ServicePulse reads: the
 * endpoint instances the workers' beats wrote (GET /api/endpoints), mute
 * and unmute (PATCH /api/endpoints/{id}), forget (DELETE), the per
 * endpoint "track instances" settings (GET|PATCH /api/endpointssettings)
 * and the counts of beating and failing instances (GET
 * /api/heartbeats/stats). Liveness is the library's judgement
 * (sb_heartbeat.alive, by the database's clock). */
#include "server/api.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* {p}settings names of the tracking settings: this, then the endpoint's
 * name ("" for the default). */
#define TRACK_PREFIX "endpoints.track_instances/"
#define TRACK_DEFAULT 1 /* ServiceControl's initial value */

/* One instance as ServiceControl's EndpointsView, with sqlbus's own
 * fields after. */
static void instance_json(sb_buf *b, const sb_heartbeat *h)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", h->id);
    sb__json_str_m(b, &f, "name", h->endpoint);
    sb__json_str_m(b, &f, "host_display_name", h->host);
    sb__json_bool_m(b, &f, "monitored", h->monitored);
    sb__json_bool_m(b, &f, "monitor_heartbeat", h->monitored);
    sb__json_key(b, &f, "heartbeat_information");
    int g = 1;
    sb__buf_puts(b, "{");
    sb__json_time_m(b, &g, "last_report_at", h->last_beat_us);
    sb__json_str_m(b, &g, "reported_status", h->alive ? "beating" : "dead");
    sb__buf_puts(b, "}");
    sb__json_bool_m(b, &f, "is_sending_heartbeats", h->alive);
    sb__json_str_m(b, &f, "host", h->host);
    sb__json_str_m(b, &f, "host_id", h->host_id);
    sb__json_int_m(b, &f, "pid", h->pid);
    sb__json_time_m(b, &f, "started_at", h->started_us);
    sb__json_time_m(b, &f, "stopped_at", h->stopped_us);
    sb__json_int_m(b, &f, "heartbeat_interval_ms", h->interval_ms);
    sb__buf_puts(b, "}");
}

/* GET /api/endpoints: every instance, by endpoint and host. */
static int list(const sb_api *a, sb_api_resp *out)
{
    sb_heartbeat **h = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_heartbeat_list(a->bus, &h, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb__buf_puts(&out->body, ",");
        instance_json(&out->body, h[i]);
    }
    sb__buf_puts(&out->body, "]");
    out->total = (int64_t)n;
    out->status = 200;
    sb_free(h);
    return 1;
}

/* GET /api/heartbeats/stats: the monitored instances beating and not. */
static int stats(const sb_api *a, sb_api_resp *out)
{
    sb_heartbeat **h = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_heartbeat_list(a->bus, &h, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int64_t active = 0, failing = 0;
    for (size_t i = 0; i < n; i++) {
        if (!h[i]->monitored)
            continue;
        if (h[i]->alive)
            active++;
        else
            failing++;
    }
    sb_free(h);
    sb__buf_printf(&out->body, "{\"active\":%lld,\"failing\":%lld}",
                   (long long)active, (long long)failing);
    out->status = 200;
    return 1;
}

/* The boolean member `name` of the body, required; 0 with the 400
 * naming it in `out` when it is missing or not a boolean, or when the
 * body has another member. */
static int body_bool(const sb_api_req *r, const char *name, int *v,
                     sb_api_resp *out)
{
    const char *const known[] = {name, NULL};
    if (!sb__api_known_fields(r->json, known, out))
        return 0;
    json_t *j = json_object_get(r->json, name);
    if (!json_is_boolean(j)) {
        sb__api_error(out, 400, "invalid", name, "%s must be true or false%s",
                      name, j == NULL ? " (it is required)" : "");
        return 0;
    }
    *v = json_is_true(j);
    return 1;
}

/* PATCH /api/endpoints/{id} {"monitor_heartbeat": bool}: the instance
 * as it is now. */
static int patch(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *id = r->m->captures[0];
    int monitored = 0;
    if (!body_bool(r, "monitor_heartbeat", &monitored, out))
        return 1;
    sb_error err;
    int rc = sb_heartbeat_monitor(a->bus, id, monitored, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb_heartbeat **h = NULL;
    size_t n = 0;
    rc = sb_heartbeat_list(a->bus, &h, &n, &err);
    if (rc != SB_OK) {
        /* Committed: answered without the view rather than as a failure
         * of the change. */
        sb__buf_printf(&out->body, "{\"id\":");
        sb__buf_json_str(&out->body, id);
        sb__buf_printf(&out->body, ",\"monitor_heartbeat\":%s}",
                       monitored ? "true" : "false");
        out->status = 200;
        return 1;
    }
    for (size_t i = 0; i < n && out->body.len == 0; i++)
        if (strcasecmp(h[i]->id, id) == 0)
            instance_json(&out->body, h[i]);
    sb_free(h);
    if (out->body.len == 0)
        return sb__api_error(out, 404, "not_found", "id",
                             "endpoint instance %.40s was removed meanwhile",
                             id),
               1;
    out->status = 200;
    return 1;
}

/* DELETE /api/endpoints/{id}. */
static int remove_one(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *id = r->m->captures[0];
    sb_error err;
    int rc = sb_heartbeat_remove(a->bus, id, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "{\"id\":");
    sb__buf_json_str(&out->body, id);
    sb__buf_puts(&out->body, ",\"removed\":true}");
    out->status = 200;
    return 1;
}

typedef struct track_list {
    sb_buf *b;
    int default_value;
    int have_default;
} track_list;

static int on_track(const char *name, const char *value, int64_t updated_us,
                    void *user)
{
    (void)updated_us;
    track_list *t = user;
    const char *endpoint = name + strlen(TRACK_PREFIX);
    int v = strcmp(value, "false") != 0;
    if (endpoint[0] == '\0') {
        t->default_value = v;
        t->have_default = 1;
        return 0;
    }
    int f = 1;
    sb__buf_puts(t->b, ",{");
    sb__json_str_m(t->b, &f, "name", endpoint);
    sb__json_bool_m(t->b, &f, "track_instances", v);
    sb__buf_puts(t->b, "}");
    return 0;
}

/* GET /api/endpointssettings: the default (name "") first, then every
 * endpoint that has its own, by name. */
static int settings_list(const sb_api *a, sb_api_resp *out)
{
    sb_buf rest;
    sb__buf_init(&rest, SB_API_BODY_MAX);
    track_list t = {&rest, TRACK_DEFAULT, 0};
    sb_error err;
    int rc = sb_setting_list(a->bus, TRACK_PREFIX, on_track, &t, &err);
    if (rc != SB_OK) {
        sb__buf_free(&rest);
        return sb__api_fail(out, rc, &err), 1;
    }
    sb__buf_printf(&out->body, "[{\"name\":\"\",\"track_instances\":%s}",
                   t.default_value ? "true" : "false");
    if (rest.len > 0 && !rest.failed)
        sb__buf_append(&out->body, rest.data, rest.len);
    sb__buf_puts(&out->body, "]");
    if (rest.failed)
        out->body.failed = SB_NOMEM;
    sb__buf_free(&rest);
    out->status = 200;
    return 1;
}

/* PATCH /api/endpointssettings[/{name}] {"track_instances": bool}. */
static int settings_patch(const sb_api *a, const sb_api_req *r,
                          const char *endpoint, sb_api_resp *out)
{
    int v = 0;
    if (!body_bool(r, "track_instances", &v, out))
        return 1;
    sb_error err;
    sb_error_clear(&err);
    if (endpoint[0] != '\0' &&
        sb__validate_name(endpoint, 200, "name", "the endpoint name", &err) !=
            SB_OK)
        return sb__api_fail(out, SB_INVALID, &err), 1;
    char key[sizeof TRACK_PREFIX + 201];
    snprintf(key, sizeof key, "%s%s", TRACK_PREFIX, endpoint);
    int rc = sb_setting_put(a->bus, key, v ? "true" : "false", &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_key(&out->body, &f, "name");
    sb__buf_json_str(&out->body, endpoint);
    sb__json_bool_m(&out->body, &f, "track_instances", v);
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

int sb__api_endpoints(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    switch (r->m->route) {
    case SB_R_SC_ENDPOINTS: return list(a, out);
    case SB_R_SC_HEARTBEAT_STATS: return stats(a, out);
    case SB_R_SC_ENDPOINT:
        return r->method == SB_HTTP_PATCH ? patch(a, r, out)
                                          : remove_one(a, r, out);
    case SB_R_SC_ENDPOINTS_SETTINGS:
        return r->method == SB_HTTP_PATCH ? settings_patch(a, r, "", out)
                                          : settings_list(a, out);
    case SB_R_SC_ENDPOINT_SETTINGS:
        return settings_patch(a, r, r->m->captures[0], out);
    default: return 0;
    }
}
