/* api_schedules.c - periodic jobs over HTTP (T41): GET /api/schedules
 * lists them with their next occurrence, PUT /api/schedules/{name} adds
 * or replaces one, DELETE /api/schedules/{name} removes one. */
#include "server/api.h"

#include <jansson.h>
#include <string.h>

static void schedule_json(sb_buf *b, const sb_schedule_info *s)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "name", s->name);
    sb__json_str_m(b, &f, "queue", s->queue);
    if (s->cron[0] != '\0') {
        sb__json_str_m(b, &f, "cron", s->cron);
        sb__json_str_m(b, &f, "time_zone", s->time_zone);
    } else {
        sb__json_int_m(b, &f, "every_ms", s->every_ms);
    }
    sb__json_str_m(b, &f, "missed",
                   s->missed == SB_SCHEDULE_MISSED_ONCE ? "once" : "skip");
    sb__json_int_m(b, &f, "body_size", s->payload_len);
    sb__json_time_m(b, &f, "last", s->last_us);
    if (s->next_us >= 0)
        sb__json_time_m(b, &f, "next", s->next_us);
    sb__buf_puts(b, "}");
}

/* GET /api/schedules: every schedule, by name. */
static int list(const sb_api *a, sb_api_resp *out)
{
    sb_schedule_info **s = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_schedule_list(a->bus, &s, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb__buf_puts(&out->body, ",");
        schedule_json(&out->body, s[i]);
    }
    sb__buf_puts(&out->body, "]");
    out->total = (int64_t)n;
    out->status = 200;
    sb_free(s);
    return 1;
}

/* The stored schedule `name` as the answer (200), after a put. */
static int answer_one(const sb_api *a, const char *name, sb_api_resp *out)
{
    sb_schedule_info **s = NULL;
    size_t n = 0;
    sb_error err;
    int rc = sb_schedule_list(a->bus, &s, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->name, name) == 0)
            schedule_json(&out->body, s[i]);
    out->status = out->body.len > 0 ? 200 : 404;
    if (out->status == 404)
        sb__api_error(out, 404, "not_found", "name",
                      "schedule %s was removed meanwhile", name);
    sb_free(s);
    return 1;
}

/* A member that must be a string when present: its value, or NULL (and
 * *ok 0 with the 400 naming it). */
static const char *opt_string(const json_t *j, const char *name, int *ok,
                              sb_api_resp *out)
{
    const json_t *v = *ok ? json_object_get(j, name) : NULL;
    if (v != NULL && !json_is_string(v))
        *ok = sb__api_error(out, 400, "invalid", name, "%s must be a string",
                            name);
    return *ok && v != NULL ? json_string_value(v) : NULL;
}

/* PUT /api/schedules/{name}: {"queue", "cron" | "every_ms", "time_zone",
 * "missed": "skip"|"once", "body" (a string), "headers" (an object of
 * strings)}; the library's checks answer 400 naming the field. */
static int put(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"queue",     "cron",   "every_ms",
                                        "time_zone", "missed", "body",
                                        "headers",   NULL};
    const json_t *j = r->json;
    int ok = sb__api_known_fields(j, known, out);
    sb_schedule_def d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.name = r->m->captures[0];
    d.queue = opt_string(j, "queue", &ok, out);
    d.cron = opt_string(j, "cron", &ok, out);
    d.time_zone = opt_string(j, "time_zone", &ok, out);
    const char *missed = opt_string(j, "missed", &ok, out);
    const char *body = opt_string(j, "body", &ok, out);
    const json_t *every = ok ? json_object_get(j, "every_ms") : NULL;
    if (ok && every != NULL && !json_is_integer(every))
        ok = sb__api_error(out, 400, "invalid", "every_ms",
                           "every_ms must be a whole number of milliseconds");
    if (ok && d.queue == NULL)
        ok = sb__api_error(out, 400, "invalid", "queue", "queue is required");
    if (ok && missed != NULL && strcmp(missed, "skip") != 0 &&
        strcmp(missed, "once") != 0)
        ok = sb__api_error(out, 400, "invalid", "missed",
                           "missed must be \"skip\" or \"once\"");
    const json_t *hv = ok ? json_object_get(j, "headers") : NULL;
    if (ok && hv != NULL && !json_is_object(hv))
        ok = sb__api_error(out, 400, "invalid", "headers",
                           "headers must be an object of strings");
    char *headers = NULL;
    if (ok && hv != NULL && (headers = json_dumps(hv, JSON_COMPACT)) == NULL)
        ok = sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    if (ok) {
        d.every_ms = every ? json_integer_value(every) : 0;
        d.missed = missed && strcmp(missed, "once") == 0
                       ? SB_SCHEDULE_MISSED_ONCE
                       : SB_SCHEDULE_MISSED_SKIP;
        d.payload = body;
        d.payload_len = body ? strlen(body) : 0;
        d.headers_json = headers;
        sb_error err;
        int rc = sb_schedule_put(a->bus, &d, &err);
        if (rc != SB_OK)
            sb__api_fail(out, rc, &err);
        else
            answer_one(a, d.name, out);
    }
    sb__free(headers);
    return 1;
}

/* DELETE /api/schedules/{name}: 200, or 404 naming "name". */
static int remove_one(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_error err;
    int rc = sb_schedule_remove(a->bus, r->m->captures[0], &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_str_m(&out->body, &f, "name", r->m->captures[0]);
    sb__json_bool_m(&out->body, &f, "removed", 1);
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

int sb__api_schedules(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    switch (r->m->route) {
    case SB_R_SCHEDULES: return list(a, out);
    case SB_R_SCHEDULE:
        return r->method == SB_HTTP_PUT ? put(a, r, out)
                                        : remove_one(a, r, out);
    default: return 0;
    }
}
