/* api_own.c - sqlbus's own routes (S6): queue depths, peeking and
 * publishing, failed messages submitted from outside (E2), and the
 * recovery registrations (C22). */
#include "server/api.h"

#include <jansson.h>
#include <string.h>

#include "server/stats.h"

#define PUBLISH_MAX_HEADERS 64
#define SUBMIT_MAX 1000
#define RECOVERY_LIST 200

/* Every queue's counts: the sampler's newest (see api.h), or read now. */
static int queue_counts(const sb_api *a, sb_queue_stats ***q, size_t *n,
                        sb_error *err)
{
    sb_error_clear(err);
    int rc = sb__stats_queues(a->stats, SB_API_QUEUES_MAX_AGE_MS, q, n, NULL);
    if (rc == SB_NOMEM)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    return rc == SB_OK ? SB_OK : sb_queue_list(a->bus, q, n, err);
}

static int queues(const sb_api *a, sb_api_resp *out)
{
    sb_queue_stats **q = NULL;
    size_t n = 0;
    sb_error err;
    int rc = queue_counts(a, &q, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb_buf *b = &out->body;
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        int f = 1;
        sb__buf_puts(b, i ? ",{" : "{");
        sb__json_str_m(b, &f, "name", q[i]->queue);
        sb__json_int_m(b, &f, "ready", q[i]->ready);
        sb__json_int_m(b, &f, "delayed", q[i]->delayed);
        sb__json_int_m(b, &f, "in_flight", q[i]->in_flight);
        sb__json_int_m(b, &f, "dead_lettered", q[i]->dead_lettered);
        if (q[i]->oldest_ready_age_ms >= 0)
            sb__json_int_m(b, &f, "oldest_ready_age_ms",
                           q[i]->oldest_ready_age_ms);
        sb__json_bool_m(b, &f, "paused", q[i]->paused);
        sb__json_bool_m(b, &f, "prioritized", q[i]->prioritized);
        if (q[i]->ttl_ms > 0)
            sb__json_int_m(b, &f, "ttl_ms", q[i]->ttl_ms);
        if (q[i]->max_running > 0)
            sb__json_int_m(b, &f, "max_running", q[i]->max_running);
        if (q[i]->rate_limit > 0) {
            sb__json_int_m(b, &f, "rate_limit", q[i]->rate_limit);
            sb__json_int_m(b, &f, "rate_interval_ms", q[i]->rate_interval_ms);
        }
        sb__buf_puts(b, "}");
    }
    sb__buf_puts(b, "]");
    out->total = (int64_t)n;
    out->status = 200;
    sb_free(q);
    return 1;
}

static void peeked(sb_buf *b, const sb_msg *m, int64_t now_us)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", sb_msg_id(m));
    sb__json_int_m(b, &f, "attempts", sb_msg_attempts(m));
    sb__json_time_m(b, &f, "created_at", sb_msg_created_at_us(m));
    sb__json_time_m(b, &f, "available_at", sb_msg_available_at_us(m));
    int64_t lease = sb_msg_locked_until_us(m);
    const char *state = lease > now_us                       ? "in_flight"
                        : sb_msg_available_at_us(m) > now_us ? "delayed"
                                                             : "ready";
    sb__json_str_m(b, &f, "state", state);
    sb__json_int_m(b, &f, "priority", sb_msg_priority(m));
    if (sb_msg_progress(m) != NULL)
        sb__json_str_m(b, &f, "progress", sb_msg_progress(m));
    if (sb_msg_expires_at_us(m) > 0)
        sb__json_time_m(b, &f, "expires_at", sb_msg_expires_at_us(m));
    if (sb_msg_unique_key(m) != NULL)
        sb__json_str_m(b, &f, "unique_key", sb_msg_unique_key(m));
    sb__json_key(b, &f, "headers");
    sb__buf_puts(b, sb_msg_headers(m));
    size_t len = 0;
    const char *p = sb_msg_payload(m, &len);
    sb__json_int_m(b, &f, "body_size", (int64_t)len);
    if (sb__utf8_valid(p, len) && memchr(p, '\0', len) == NULL) {
        sb__json_key(b, &f, "body");
        sb__buf_json_mem(b, p, len);
    } else {
        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                  "qrstuvwxyz0123456789+/";
        const unsigned char *u = (const unsigned char *)p;
        sb__json_key(b, &f, "body_base64");
        sb__buf_puts(b, "\"");
        for (size_t i = 0; i < len; i += 3) {
            unsigned v = (unsigned)u[i] << 16 |
                         (i + 1 < len ? (unsigned)u[i + 1] << 8 : 0) |
                         (i + 2 < len ? u[i + 2] : 0);
            char e[4] = {tbl[v >> 18 & 63], tbl[v >> 12 & 63],
                         i + 1 < len ? tbl[v >> 6 & 63] : '=',
                         i + 2 < len ? tbl[v & 63] : '='};
            sb__buf_append(b, e, 4);
        }
        sb__buf_puts(b, "\"");
    }
    sb__buf_puts(b, "}");
}

static int peek(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *queue = r->m->captures[0];
    size_t page = 1, per = SB_API_DEFAULT_PER_PAGE;
    if (!sb__page_params(r->q, &page, &per, out))
        return 1;
    sb_error err;
    sb_queue_stats **q = NULL;
    size_t n = 0;
    int rc = sb_validate_queue_name(queue, &err);
    if (rc == SB_OK)
        rc = queue_counts(a, &q, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(q[i]->queue, queue) == 0)
            total = q[i]->ready + q[i]->delayed + q[i]->in_flight;
    sb_free(q);
    sb_msg **msgs = NULL;
    rc = sb_queue_peek(a->bus, queue, (page - 1) * per, per, &msgs, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb_buf path;
    sb__buf_init(&path, SB_SEGMENT_MAX * 3 + 32);
    sb__buf_puts(&path, "/api/queues/");
    sb__url_encode(&path, queue);
    sb__buf_puts(&path, "/messages");
    if (path.failed) {
        sb__buf_free(&path);
        sb_msg_free_array(msgs, n);
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory"), 1;
    }
    sb__page_headers(out, path.data, r->q, page, per, total);
    sb__buf_free(&path);
    int64_t now = sb__wall_us();
    sb__buf_puts(&out->body, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb__buf_puts(&out->body, ",");
        peeked(&out->body, msgs[i], now);
    }
    sb__buf_puts(&out->body, "]");
    sb_msg_free_array(msgs, n);
    out->status = 200;
    return 1;
}

/* A JSON object of strings as compact text (transferred, sb__free), or
 * NULL with the 400 naming `field`. NULL `obj` gives "{}". */
static char *string_object(const json_t *obj, const char *field,
                           sb_api_resp *out)
{
    if (obj == NULL)
        obj = json_object();
    else
        json_incref((json_t *)obj);
    if (obj == NULL) {
        sb__api_error(out, 503, "unavailable", NULL, "out of memory");
        return NULL;
    }
    if (!json_is_object(obj) || json_object_size(obj) > PUBLISH_MAX_HEADERS) {
        json_decref((json_t *)obj);
        sb__api_error(out, 400, "invalid", field,
                      "%s must be an object of at most %d strings", field,
                      PUBLISH_MAX_HEADERS);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!json_is_string(v)) {
            json_decref((json_t *)obj);
            sb__api_error(out, 400, "invalid", field,
                          "%s: \"%.60s\" must be a string", field, k);
            return NULL;
        }
    }
    /* jansson's dump drops bytes it has no memory for: any failure seen
     * by the allocator discards the text. */
    unsigned long fails = sb__alloc_failures();
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref((json_t *)obj);
    if (text != NULL && sb__alloc_failures() != fails) {
        sb__free(text);
        text = NULL;
    }
    if (text == NULL)
        sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    return text;
}

/* sb_publish names a part of the message it refuses "msgs[0].X": the
 * request's name for it ("payload" is the request's "body"). */
static void request_field(sb_error *err)
{
    static const char prefix[] = "msgs[0].";
    if (strncmp(err->field, prefix, sizeof prefix - 1) != 0)
        return;
    const char *part = err->field + sizeof prefix - 1;
    char name[sizeof err->field];
    snprintf(name, sizeof name, "%s",
             strcmp(part, "payload") == 0 ? "body" : part);
    memcpy(err->field, name, sizeof name);
}

/* A whole number of `field` in 1..SB_TTL_MAX_MS, or absent (0); else a
 * 400 naming it (0 when `zero_ok`: none). */
static int ttl_field(const json_t *j, const char *field, int zero_ok,
                     int64_t *out, sb_api_resp *resp)
{
    const json_t *v = json_object_get(j, field);
    *out = 0;
    if (v == NULL || (zero_ok && json_is_null(v)))
        return 1;
    if (!json_is_integer(v) || json_integer_value(v) < (zero_ok ? 0 : 1) ||
        json_integer_value(v) > SB_TTL_MAX_MS)
        return sb__api_error(resp, 400, "invalid", field,
                             "%s must be a whole number of milliseconds, %d "
                             "to %lld (100 years)",
                             field, zero_ok ? 0 : 1, (long long)SB_TTL_MAX_MS);
    *out = (int64_t)json_integer_value(v);
    return 1;
}

/* T38: "unique_policy" as SB_UNIQUE_*; absent is "active". 0 and a 400
 * naming it for another value. */
static int unique_policy(const json_t *j, int *out, sb_api_resp *resp)
{
    static const char *const names[] = {"active", "queued", "window"};
    const json_t *v = json_object_get(j, "unique_policy");
    *out = SB_UNIQUE_ACTIVE;
    if (v == NULL)
        return 1;
    for (int i = 0; json_is_string(v) && i < 3; i++)
        if (strcmp(json_string_value(v), names[i]) == 0) {
            *out = i;
            return 1;
        }
    return sb__api_error(resp, 400, "invalid", "unique_policy",
                         "unique_policy must be \"active\", \"queued\" or "
                         "\"window\"");
}

/* POST /api/queues/{q}/messages: {"body": value, "headers": {..},
 * "delay_ms": n, "priority": n, "expires_in_ms": n, "unique_key": text,
 * "unique_policy": name, "unique_window_ms": n}; the Idempotency-Key
 * header names the message (a UUID as it is, any other text through a
 * deterministic GUID of the queue and the key), so the same request twice
 * publishes once (T9). A held unique key is a 409 (T38). */
static int publish(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {
        "body",          "headers",          "delay_ms",
        "priority",      "expires_in_ms",    "unique_key",
        "unique_policy", "unique_window_ms", NULL};
    const char *queue = r->m->captures[0];
    const json_t *j = r->json;
    char *headers = NULL, *payload = NULL;
    int ok = sb__api_known_fields(j, known, out);
    json_t *body = ok ? json_object_get(j, "body") : NULL;
    if (ok && body == NULL)
        ok = sb__api_error(out, 400, "invalid", "body",
                           "body (the message: a string or any JSON value) "
                           "is required");
    json_t *delay = ok ? json_object_get(j, "delay_ms") : NULL;
    if (ok && delay != NULL &&
        (!json_is_integer(delay) || json_integer_value(delay) < 0))
        ok = sb__api_error(out, 400, "invalid", "delay_ms",
                           "delay_ms must be a whole number >= 0");
    json_t *prio = ok ? json_object_get(j, "priority") : NULL;
    if (ok && prio != NULL &&
        (!json_is_integer(prio) || json_integer_value(prio) < SB_PRIORITY_MIN ||
         json_integer_value(prio) > SB_PRIORITY_MAX))
        ok = sb__api_error(out, 400, "invalid", "priority",
                           "priority must be a whole number %d to %d",
                           SB_PRIORITY_MIN, SB_PRIORITY_MAX);
    int64_t expires = 0, window = 0;
    if (ok)
        ok = ttl_field(j, "expires_in_ms", 0, &expires, out);
    json_t *ukey = ok ? json_object_get(j, "unique_key") : NULL;
    if (ok && ukey != NULL &&
        (!json_is_string(ukey) ||
         strlen(json_string_value(ukey)) != json_string_length(ukey)))
        ok = sb__api_error(out, 400, "invalid", "unique_key",
                           "unique_key must be a string without NUL");
    int policy = SB_UNIQUE_ACTIVE;
    if (ok)
        ok = unique_policy(j, &policy, out);
    if (ok)
        ok = ttl_field(j, "unique_window_ms", 0, &window, out);
    if (ok)
        ok = (headers = string_object(json_object_get(j, "headers"), "headers",
                                      out)) != NULL;
    const char *text = NULL;
    size_t len = 0;
    if (ok && json_is_string(body)) {
        text = json_string_value(body);
        len = json_string_length(body);
    } else if (ok) {
        /* A dump that lost bytes to an allocation failure would be
         * published as the message: discarded (see string_object). */
        unsigned long fails = sb__alloc_failures();
        payload = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (payload != NULL && sb__alloc_failures() != fails) {
            sb__free(payload);
            payload = NULL;
        }
        text = payload;
        len = payload ? strlen(payload) : 0;
        if (payload == NULL)
            ok = sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    }
    char id[37] = "";
    const char *key = r->idempotency_key;
    if (ok && key != NULL && key[0] != '\0') {
        if (strlen(key) > 256)
            ok = sb__api_error(out, 400, "invalid", "Idempotency-Key",
                               "Idempotency-Key must be 1 to 256 bytes");
        else if (sb__uuid_normalize(key, id) != SB_OK)
            sb_deterministic_guid(queue, key, id);
    }
    if (ok) {
        sb_outgoing_ex o = {sizeof o,
                            {id[0] ? id : NULL, text, len, headers,
                             delay ? json_integer_value(delay) : 0},
                            prio ? (int)json_integer_value(prio) : 0,
                            expires,
                            ukey ? json_string_value(ukey) : NULL,
                            policy,
                            window};
        char out_id[1][37];
        sb_error err;
        int rc = sb_publish_ex(a->bus, NULL, queue, &o, 1, out_id, &err);
        if (rc != SB_OK) {
            request_field(&err);
            sb__api_fail(out, rc, &err);
        } else {
            sb__buf_puts(&out->body, "{\"id\":");
            sb__buf_json_str(&out->body, out_id[0]);
            sb__buf_puts(&out->body, "}");
            out->status = 201;
        }
    }
    sb__free(headers);
    sb__free(payload);
    return 1;
}

/* POST /api/failed-messages: {"headers": {..}, "body": text} or an array
 * of up to 1,000 of them; ingested by the next pass (E2). */
static int submit(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"headers", "body", NULL};
    json_t *j = (json_t *)r->json; /* json_pack's "O" takes a reference */
    json_t *arr = json_is_array(j) ? j : json_pack("[O]", j);
    size_t n = json_array_size(arr);
    sb_failed_submission *s = n ? sb__calloc(n, sizeof *s) : NULL;
    char **texts = n ? sb__calloc(n, sizeof *texts) : NULL;
    int ok = 1;
    if (arr == NULL)
        ok = sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    else if (n == 0 || n > SUBMIT_MAX)
        ok = sb__api_error(out, 400, "invalid", "body",
                           "send 1 to %d failed messages", SUBMIT_MAX);
    else if (s == NULL || texts == NULL)
        ok = sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        json_t *m = json_array_get(arr, i);
        if (!json_is_object(m)) {
            ok = sb__api_error(out, 400, "invalid", "body",
                               "failed message %zu must be an object", i);
            break;
        }
        ok = sb__api_known_fields(m, known, out);
        const json_t *body = json_object_get(m, "body");
        if (ok && body != NULL && !json_is_string(body))
            ok = sb__api_error(out, 400, "invalid", "body",
                               "failed message %zu: body must be a string", i);
        if (ok)
            ok = (texts[i] = string_object(json_object_get(m, "headers"),
                                           "headers", out)) != NULL;
        if (ok) {
            s[i].headers_json = texts[i];
            s[i].body = json_string_value(body);
            s[i].len = body ? json_string_length(body) : 0;
        }
    }
    if (ok) {
        sb_error err;
        int rc = sb_errors_submit(a->store, s, n, &err);
        if (rc != SB_OK) {
            sb__api_fail(out, rc, &err);
        } else {
            sb__buf_printf(&out->body, "{\"accepted\":%zu}", n);
            out->status = 202;
        }
    }
    for (size_t i = 0; texts != NULL && i < n; i++)
        sb__free(texts[i]);
    sb__free(texts);
    sb__free(s);
    if (arr != j)
        json_decref(arr);
    return 1;
}

typedef struct recovery_list {
    sb_buf *b;
    size_t listed;
} recovery_list;

static const char *const reg_states[] = {"outstanding", "stale", "orphaned",
                                         "dispatched"};

static int on_registration(const sb_registration *g, void *user)
{
    recovery_list *w = user;
    int st = sb_registration_state(g);
    sb_buf *b = w->b;
    int f = 1;
    sb__buf_puts(b, w->listed++ ? ",{" : "{");
    sb__json_str_m(b, &f, "correlation_id", sb_registration_correlation_id(g));
    sb__json_str_m(b, &f, "registration_id", sb_registration_id(g));
    sb__json_str_m(b, &f, "handler", sb_registration_handler(g));
    sb__json_str_m(b, &f, "state", st >= 0 && st < 4 ? reg_states[st] : "");
    sb__json_time_m(b, &f, "registered_at",
                    sb_registration_registered_at_us(g));
    sb__json_time_m(b, &f, "expires_at", sb_registration_expires_at_us(g));
    sb__json_time_m(b, &f, "dispatched_at",
                    sb_registration_dispatched_at_us(g));
    sb__buf_puts(b, "}");
    return 0;
}

/* GET /api/recovery: counts by state (in the database, all of them) and
 * the oldest RECOVERY_LIST registrations. */
static int recovery(const sb_api *a, sb_api_resp *out)
{
    sb_registration_counts counts;
    memset(&counts, 0, sizeof counts);
    counts.size = sizeof counts;
    sb_error err;
    int rc = sb_recovery_counts(a->bus, 0, &counts, &err);
    sb_buf list;
    sb__buf_init(&list, SB_API_BODY_MAX);
    recovery_list w = {&list, 0};
    if (rc == SB_OK) {
        sb_registration_query q = {.size = sizeof q, .limit = RECOVERY_LIST};
        rc = sb_recovery_registrations(a->bus, &q, on_registration, &w, &err);
    }
    if (rc != SB_OK) {
        sb__buf_free(&list);
        return sb__api_fail(out, rc, &err), 1;
    }
    sb_buf *b = &out->body;
    sb__buf_puts(b, "{");
    int f = 1;
    for (int i = 0; i < 4; i++)
        sb__json_int_m(b, &f, reg_states[i], counts.by_state[i]);
    sb__json_key(b, &f, "registrations");
    sb__buf_puts(b, "[");
    if (list.len > 0 && !list.failed)
        sb__buf_append(b, list.data, list.len);
    sb__buf_puts(b, "]}");
    sb__buf_free(&list);
    out->status = 200;
    return 1;
}

/* POST /api/queues/{q}/pause and /resume (T35): the queue's state as
 * it is now stored. */
static int set_paused(const sb_api *a, const sb_api_req *r, int pause,
                      sb_api_resp *out)
{
    const char *queue = r->m->captures[0];
    sb_error err;
    int rc = pause ? sb_queue_pause(a->bus, queue, &err)
                   : sb_queue_resume(a->bus, queue, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_str_m(&out->body, &f, "name", queue);
    sb__json_bool_m(&out->body, &f, "paused", pause);
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

/* POST /api/queues/{q}/cancel?unique_key=K (T38, T39): every message
 * of the queue holding the key is dead-lettered "cancelled". */
static int cancel_key(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    const char *queue = r->m->captures[0];
    const char *key = sb__query_get(r->q, "unique_key");
    if (key == NULL)
        return sb__api_error(out, 400, "invalid", "unique_key",
                             "the query parameter unique_key (the key to "
                             "cancel) is required"),
               1;
    size_t n = 0;
    sb_error err;
    int rc = sb_cancel_key(a->bus, queue, key, &n, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_str_m(&out->body, &f, "queue", queue);
    sb__json_str_m(&out->body, &f, "unique_key", key);
    sb__json_int_m(&out->body, &f, "cancelled", (int64_t)n);
    sb__json_str_m(&out->body, &f, "dead_letter_reason", "cancelled");
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

/* PUT /api/queues/{q}/ttl (T40): {"ttl_ms": n}, 0 or null for none. */
static int set_ttl(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"ttl_ms", NULL};
    const char *queue = r->m->captures[0];
    int64_t ttl = 0;
    if (!sb__api_known_fields(r->json, known, out))
        return 1;
    if (json_object_get(r->json, "ttl_ms") == NULL)
        return sb__api_error(out, 400, "invalid", "ttl_ms",
                             "ttl_ms (milliseconds, 0 or null for none) is "
                             "required"),
               1;
    if (!ttl_field(r->json, "ttl_ms", 1, &ttl, out))
        return 1;
    sb_error err;
    int rc = sb_queue_set_ttl(a->bus, queue, ttl, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_str_m(&out->body, &f, "name", queue);
    sb__json_int_m(&out->body, &f, "ttl_ms", ttl);
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

/* A whole number `field` of `j` in 1..`max`, or absent, null or 0 (0:
 * none); else a 400 naming it and the limit. */
static int limit_field(const json_t *j, const char *field, int64_t max,
                       int64_t *out, sb_api_resp *resp)
{
    const json_t *v = json_object_get(j, field);
    *out = 0;
    if (v == NULL || json_is_null(v))
        return 1;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > max)
        return sb__api_error(resp, 400, "invalid", field,
                             "%s must be a whole number, 1 to %lld, or 0 or "
                             "null for none",
                             field, (long long)max);
    *out = (int64_t)json_integer_value(v);
    return 1;
}

/* `name`: `v`, or null for 0 (none). */
static void limit_member(sb_buf *b, int *f, const char *name, int64_t v)
{
    if (v > 0) {
        sb__json_int_m(b, f, name, v);
    } else {
        sb__json_key(b, f, name);
        sb__buf_puts(b, "null");
    }
}

/* PUT /api/queues/{q}/limits (T36): {"max_running": n, "rate_limit": n,
 * "rate_interval_ms": n}, each absent, 0 or null for none; the limits
 * are replaced as a whole. */
static int set_limits(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"max_running", "rate_limit",
                                        "rate_interval_ms", NULL};
    int64_t max = 0, rate = 0, every = 0;
    if (!sb__api_known_fields(r->json, known, out) ||
        !limit_field(r->json, "max_running", SB_MAX_RUNNING_MAX, &max, out) ||
        !limit_field(r->json, "rate_limit", SB_RATE_LIMIT_MAX, &rate, out) ||
        !limit_field(r->json, "rate_interval_ms", SB_RATE_INTERVAL_MAX_MS,
                     &every, out))
        return 1;
    const char *queue = r->m->captures[0];
    sb_queue_limits l = {sizeof l, (int)max, (int)rate, every};
    sb_error err;
    int rc = sb_queue_set_limits(a->bus, queue, &l, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_str_m(&out->body, &f, "name", queue);
    limit_member(&out->body, &f, "max_running", max);
    limit_member(&out->body, &f, "rate_limit", rate);
    limit_member(&out->body, &f, "rate_interval_ms", every);
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

/* POST /api/queues/{q}/messages/{id}/cancel (T39): the message is
 * dead-lettered "cancelled"; the answer says whether a consumer held it. */
static int cancel(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    sb_error err;
    int outcome = 0;
    int rc =
        sb_cancel(a->bus, r->m->captures[0], r->m->captures[1], &outcome, &err);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    int f = 1;
    sb__buf_puts(&out->body, "{");
    sb__json_str_m(&out->body, &f, "queue", r->m->captures[0]);
    sb__json_str_m(&out->body, &f, "id", r->m->captures[1]);
    sb__json_str_m(&out->body, &f, "was",
                   outcome == SB_CANCEL_RUNNING ? "running" : "waiting");
    sb__json_str_m(&out->body, &f, "dead_letter_reason", "cancelled");
    sb__buf_puts(&out->body, "}");
    out->status = 200;
    return 1;
}

int sb__api_own(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    switch (r->m->route) {
    case SB_R_QUEUES: return queues(a, out);
    case SB_R_QUEUE_MESSAGES:
        return r->method == SB_HTTP_POST ? publish(a, r, out) : peek(a, r, out);
    case SB_R_QUEUE_PAUSE: return set_paused(a, r, 1, out);
    case SB_R_QUEUE_RESUME: return set_paused(a, r, 0, out);
    case SB_R_QUEUE_CANCEL: return cancel(a, r, out);
    case SB_R_QUEUE_TTL: return set_ttl(a, r, out);
    case SB_R_QUEUE_CANCEL_KEY: return cancel_key(a, r, out);
    case SB_R_QUEUE_LIMITS: return set_limits(a, r, out);
    case SB_R_FAILED_MESSAGES: return submit(a, r, out);
    case SB_R_RECOVERY: return recovery(a, out);
    default: return 0;
    }
}
