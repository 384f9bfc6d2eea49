/*
 * test_fault_http.c - "fail the Nth allocation" over the HTTP API's
 * request handling (issue 18; style rule 7): what `sqlbus serve` runs for
 * a request between libmicrohttpd's callbacks, on a real SQLite file.
 *
 * Each run takes one request the way src/server/http.c does: the body
 * gathered into its capped buffer, the path routed (router.c), the query
 * string rebuilt and parsed (sb__api_query), a response made
 * (sb__api_resp_new), the route's handler run (sb__api_handle, which
 * parses a JSON body first), the response made ready for the wire
 * (sb__api_resp_finish) and, for an error, its JSON object written
 * (sb__api_error_body) -- the same functions, so the allocations walked
 * are the server's and the library's, all through the one seam
 * (sb_set_allocator, tests/failalloc.h). What http.c does with
 * libmicrohttpd itself (headers, tokens, ETags) allocates through
 * libmicrohttpd and is not walked.
 *
 * For each request the walk counts the allocations of a run without
 * failures (this thread's: fa_only_this_thread, so the count does not
 * depend on the operations worker's thread -- but for a connection the
 * pool may open when the worker holds one, so an operation's count may
 * differ by one from one process to the next), then runs it once for
 * each N with the Nth failing, each time on a copy of one prepared
 * database with a new bus, error store and (where the route needs them)
 * durable operations, and checks:
 *  - the answer is the one of a run without failures (status, code,
 *    headers, and the body with its ids and times masked), or 503
 *    "unavailable" (what out of memory is, S7) with a JSON error object
 *    {"error", "message"}: never a 2xx with a cut or empty body, never a
 *    4xx that blames the request for the server's memory;
 *  - nothing leaks: every block allocated through the seam is freed once
 *    the response and the objects are (LSan checks the rest under
 *    `make check-asan`);
 *  - nothing is half-written: after a write answered with an error, the
 *    same request made again (allocator working) answers as a run without
 *    failures did, and once the operations it started have run, the store
 *    reads back (public API: messages, statuses, counts, groups and their
 *    comments, search, redirects, operations, queues) as after a run that
 *    never failed. A change that committed must be answered as such.
 *
 * A walk visits every N up to a few hundred and then every stride-th
 * (each case says its own); the run prints each case's count and runs.
 * SQLite only, like test_fault_walk.c (tests/fault/fault_db.h holds what
 * the two share).
 *
 * To chase a finding: SB_FAULT_CASE=substring walks the cases whose name
 * has it and SB_FAULT_N=N only their run failing the Nth allocation,
 * SB_FAULT_VERBOSE=1 prints each run whose answer was not the clean one,
 * SB_FAULT_BACKTRACE=1 the stack of every failed allocation, and
 * SB_FAULT_KEEP_GOING=1 prints every finding instead of stopping at the
 * first.
 */
#include "failalloc.h"
#include "backend/harness.h"
#include "fault/fault_db.h"

#include "server/api.h"
#include "server/router.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A finding of the walk fails the test, or with SB_FAULT_KEEP_GOING=1 is
 * printed and counted, and the walk goes on (to see them all at once). */
static long findings;
#define FINDING(...)                                                           \
    do {                                                                       \
        if (getenv("SB_FAULT_KEEP_GOING") == NULL)                             \
            fail_msg(__VA_ARGS__);                                             \
        printf("FINDING: " __VA_ARGS__);                                       \
        printf("\n");                                                          \
        findings++;                                                            \
    } while (0)

/* ------------------------------------------------------------------ */
/* the prepared store */

static const char *const prefix = "fh_";

/* Ids of the prepared database, the same in every copy: the failed
 * messages msg-0 .. msg-5 (uid), a group of msg-0 (with a comment), a
 * redirect, a finished operation. */
#define N_FAILED 6
static char uid[N_FAILED][401];
static char group_id[64], redirect_id[64], op_id[64];

typedef struct fh_ctx {
    char url[400];
    sb_bus *bus;
    sb_errors *store;
    sb_operations *ops;
    sb_api api;
    long n;         /* the N of this run (0: counting run) */
    int failed_ops; /* operations that ended "failed" (fingerprint) */
} fh_ctx;

static sb_options bus_options(const fh_ctx *x, int verify)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = x->url;
    o.table_prefix = prefix;
    o.log = quiet_log;
    o.durability = SB_DURABILITY_NORMAL;
    /* The WAL watch's thread polls its stop flag every 200 ms, and the
     * operations worker's stop would wait for it: poll (the worker is
     * woken in-process when an operation is submitted). */
    o.notify = -1;
    if (verify)
        o.schema_mode = SB_SCHEMA_VERIFY;
    return o;
}

static void open_all(fh_ctx *x, int verify, int with_ops)
{
    sb_options o = bus_options(x, verify);
    sb_error err;
    sbt_ok(sb_open(&o, &x->bus, &err), &err, "open");
    sb_errors_options eo;
    memset(&eo, 0, sizeof eo);
    eo.size = sizeof eo;
    eo.max_body_size = 64; /* longer bodies go to the body store (E7) */
    eo.allow_edit = 1;
    sbt_ok(sb_errors_open(x->bus, &eo, &x->store, &err), &err, "errors open");
    if (with_ops) {
        sb_operations_options oo;
        memset(&oo, 0, sizeof oo);
        oo.size = sizeof oo;
        oo.log = quiet_log;
        sbt_ok(sb_operations_open(x->store, &oo, &x->ops, &err), &err,
               "operations open");
    }
    /* As `serve --allow-edit` fills it, with the API on the main bus. */
    x->api = (sb_api){.bus = x->bus,
                      .store = x->store,
                      .ops = x->ops,
                      .backend = sb_backend_name(x->bus),
                      .retention_ms = 86400000,
                      .edit_enabled = 1};
}

static void close_all(fh_ctx *x)
{
    sb_operations_close(x->ops);
    x->ops = NULL;
    sb_errors_close(x->store);
    x->store = NULL;
    sb_close(x->bus);
    x->bus = NULL;
}

/* A dead letter as the transport writes one (T21): message msg-<i> that
 * failed on sales (even i) or billing (odd i), with `body`. */
static void dead_letter(fh_ctx *x, int i, const void *body, size_t len,
                        int json)
{
    char headers[2048];
    snprintf(headers, sizeof headers,
             "{\"sb-message-id\":\"msg-%d\",\"sb-failed-queue\":\"%s\","
             "\"sb-time-of-failure\":\"2024-05-0%dT1%d:00:00.000000Z\","
             "\"sb-processing-endpoint\":\"Sales\",\"sb-exception-type\":"
             "\"System.%sException\",\"sb-exception-message\":\"boom %d\","
             "\"sb-exception-stacktrace\":\"System.Exception: boom\\n   at "
             "Shop.Orders.Place(Order o) in /src/Orders.cs:line 4%d\","
             "\"sb-message-type\":\"Shop.PlaceOrder, Shop, Version=1.0\"%s}",
             i, i % 2 ? "billing" : "sales", i + 1, i,
             i % 2 ? "Argument" : "InvalidOperation", i, i,
             json ? ",\"Content-Type\":\"application/json\"" : "");
    sb_outgoing o = {NULL, body, len, headers, 0};
    sb_error err;
    sbt_ok(sb_publish(x->bus, NULL, "deadletter", &o, NULL, &err), &err,
           "dead letter");
}

static int op_finished(const sb_operation_info *op, void *user)
{
    int *busy = user;
    if (strcmp(op->state, "completed") != 0 && strcmp(op->state, "failed") != 0)
        (*busy)++;
    return 0;
}

/* Every operation finished, and its job gone from the worker's queue. */
static void wait_operations(fh_ctx *x)
{
    if (x->ops == NULL)
        return;
    for (int tries = 0;; tries++) {
        int busy = 0;
        sb_error err;
        sbt_ok(
            sb_operations_list(x->ops, x->bus, 200, op_finished, &busy, &err),
            &err, "operations list");
        if (busy == 0 && sbt_count(x->bus, SB_OPERATIONS_QUEUE) == 0)
            return;
        if (tries == 10000) {
            FINDING("N=%ld: %d operation(s) still unfinished after 10 s", x->n,
                    busy);
            return;
        }
        usleep(1000);
    }
}

static int no_registration(const sb_registration *r, void *user)
{
    (void)r;
    (void)user;
    return 1;
}

/* Once, allocator working: six failed messages ingested (msg-3 then
 * archived by an operation, msg-2 retried: a pending retry; msg-4's body
 * binary and msg-5's long, both in the body store), a comment on msg-0's
 * group, a redirect, three messages waiting in "orders". */
static void prepare(void)
{
    fh_ctx x;
    memset(&x, 0, sizeof x);
    remove_db(template_path);
    snprintf(x.url, sizeof x.url, "sqlite:%s", template_path);
    open_all(&x, 0, 1);
    for (int i = 0; i < 4; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"Order\":%d,\"Note\":\"Orders walk\"}",
                 i);
        dead_letter(&x, i, body, strlen(body), 1);
    }
    static const unsigned char binary[] = {0xff, 0xfe, 0x00, 0x01, 0x80};
    dead_letter(&x, 4, binary, sizeof binary, 0);
    char long_body[300];
    memset(long_body, 'o', sizeof long_body);
    memcpy(long_body, "Orders ", 7);
    dead_letter(&x, 5, long_body, sizeof long_body, 0);
    sb_error err;
    sbt_ok(sb_errors_ingest(x.store, NULL, &err), &err, "ingest");

    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sbt_ok(sb_errors_list(x.store, &q, &s, &n, NULL, &err), &err, "list");
    assert_int_equal(n, N_FAILED);
    for (size_t i = 0; i < n; i++) {
        int k = (int)strtol(s[i]->message_id + 4, NULL, 10);
        assert_in_range(k, 0, N_FAILED - 1);
        snprintf(uid[k], sizeof uid[k], "%s", s[i]->unique_id);
    }
    sb_free(s);

    sb_failed_message *m = NULL;
    sbt_ok(sb_errors_get(x.store, uid[0], &m, &err), &err, "get");
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *gid, *type, *title;
        sb_failed_group(m, i, &gid, &type, &title);
        if (strcmp(type, "Exception Type and Stack Trace") == 0)
            snprintf(group_id, sizeof group_id, "%s", gid);
    }
    sb_failed_message_free(m);
    assert_true(group_id[0] != '\0');
    sbt_ok(sb_errors_group_comment(x.store, group_id, "seen by ops", &err),
           &err, "comment");

    sb_redirect d;
    sbt_ok(sb_errors_redirect_add(x.store, "billing", "billing-v2", &d, &err),
           &err, "redirect");
    snprintf(redirect_id, sizeof redirect_id, "%s", d.id);

    const char *archive_ids[1] = {uid[3]};
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.ids = archive_ids;
    sel.n_ids = 1;
    sb_operation_info op;
    memset(&op, 0, sizeof op);
    op.size = sizeof op;
    sbt_ok(sb_operations_submit(x.ops, NULL, "archive", &sel, &op, &err), &err,
           "submit");
    snprintf(op_id, sizeof op_id, "%s", op.id);
    wait_operations(&x);

    const char *retry_ids[1] = {uid[2]};
    sel.ids = retry_ids;
    int64_t retried = 0;
    sbt_ok(sb_errors_retry(x.store, &sel, &retried, &err), &err, "retry");
    assert_int_equal(retried, 1);

    static const unsigned char raw[] = {0x00, 0x9f, 0x92, 0x96};
    sb_outgoing orders[3] = {
        {NULL, "{\"order\":1}", 11, "{\"content-type\":\"application/json\"}",
         0},
        {NULL, raw, sizeof raw, "{\"note\":\"binary\"}", 0},
        {NULL, "later", 5, "{}", 3600000},
    };
    for (int i = 0; i < 3; i++)
        sbt_ok(sb_publish(x.bus, NULL, "orders", &orders[i], NULL, &err), &err,
               "publish");
    /* The channel's tables (GET /api/recovery), which serve makes at its
     * start on the main bus (http.c). */
    sb_registration_query rq = {.size = sizeof rq, .limit = 1};
    sbt_ok(sb_recovery_registrations(x.bus, &rq, no_registration, NULL, &err),
           &err, "recovery");
    close_all(&x);
}

/* ------------------------------------------------------------------ */
/* the state, read back through the public API */

static char *mask(const char *s, size_t len);

typedef struct op_text {
    char text[8192];
    int failed;
} op_text;

static int op_line(const sb_operation_info *op, void *user)
{
    op_text *t = user;
    char *out = t->text;
    size_t len = strlen(out);
    t->failed += strcmp(op->state, "failed") == 0;
    snprintf(out + len, 8192 - len, " op{%s %s %lld/%lld%s}", op->kind,
             op->state, (long long)op->done, (long long)op->total,
             op->group_id[0] ? " group" : "");
    return 0;
}

/* What the API reads of the store and its queues, as text: every message
 * (status, attempts, groups, body, history), the status counts (kept by
 * triggers) against the rows, the groups with their comments, search,
 * failed imports, redirects, operations, and every queue's depth. */
static void fingerprint(fh_ctx *x, char *out, size_t cap)
{
    size_t len = 0;
#define ADD(...)                                                               \
    len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, __VA_ARGS__)
    sb_error err;
    fd_store_fingerprint(x->store, x->n, 500, 1, out, cap, &len);
    size_t n = 0;
    sb_failed_summary **found = NULL;
    sbt_ok(sb_errors_search(x->store, "Orders", 100, &found, &n, &err), &err,
           "search");
    ADD(" found %zu", n);
    sb_free(found);
    int64_t imports = -1;
    sbt_ok(sb_errors_failed_import_count(x->store, &imports, &err), &err,
           "failed imports");
    ADD(" imports %lld", (long long)imports);
    sb_redirect **d = NULL;
    sbt_ok(sb_errors_redirects(x->store, &d, &n, &err), &err, "redirects");
    for (size_t i = 0; i < n; i++)
        ADD(" %s->%s", d[i]->from_queue, d[i]->to_queue);
    sb_free(d);
    if (x->ops != NULL) {
        op_text ops;
        memset(&ops, 0, sizeof ops);
        sbt_ok(sb_operations_list(x->ops, x->bus, 200, op_line, &ops, &err),
               &err, "operations");
        ADD("%s", ops.text);
        x->failed_ops = ops.failed;
    }
    /* Every queue's messages, in dequeue order: the headers and the
     * payload (its size when it is not text) of each. */
    sb_queue_stats **qs = NULL;
    size_t nq = 0;
    sbt_ok(sb_queue_list(x->bus, &qs, &nq, &err), &err, "queue list");
    for (size_t i = 0; i < nq; i++) {
        ADD(" %s:%lld", qs[i]->queue,
            (long long)(qs[i]->ready + qs[i]->delayed + qs[i]->in_flight));
        sb_msg **msgs = NULL;
        sbt_ok(sb_queue_peek(x->bus, qs[i]->queue, 0, 100, &msgs, &n, &err),
               &err, "peek");
        for (size_t k = 0; k < n; k++) {
            size_t plen = 0;
            const char *p = sb_msg_payload(msgs[k], &plen);
            int text = 1;
            for (size_t b = 0; b < plen && text; b++)
                text = p[b] >= 0x20 && p[b] < 0x7f;
            ADD(" <%s ", sb_msg_headers(msgs[k]));
            if (text)
                ADD("%.*s>", (int)plen, p);
            else
                ADD("%zu bytes>", plen);
        }
        sb_msg_free_array(msgs, n);
    }
    sb_free(qs);
#undef ADD
    assert_true(len < cap);
    /* ids and times of what a run writes (an operation, an edit's copy,
     * a publish) differ from run to run */
    char *masked = mask(out, len);
    snprintf(out, cap, "%s", masked);
    free(masked);
}

/* ------------------------------------------------------------------ */
/* one request, as http.c takes it */

typedef struct fh_case {
    const char *name;
    const char *method;
    const char *target; /* path and query; {U0}..{U5}, {G}, {R}, {OP} */
    const char *body;   /* NULL: none */
    const char *idempotency_key;
    unsigned want; /* the status of a run without failures */
    int writes;    /* check the state after each run */
    int ops;       /* the route needs durable operations */
    long every_upto, stride;
} fh_case;

/* What went on the wire, the body with ids and times masked. */
typedef struct answer {
    unsigned status;
    char code[64];
    char message[512];
    char field[64];
    char content_type[128];
    long long total;
    char link[2048];
    char location[512];
    char *body; /* libc malloc, NUL-terminated */
    size_t body_len;
} answer;

/* The request of a case with the prepared ids put in. */
typedef struct request {
    char method[8];
    char path[4096];
    char query[1024];
    char body[2048];
    int has_body;
    const char *idempotency_key;
} request;

static void expand(const char *in, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = in; *p && len + 1 < cap;) {
        const char *v = NULL;
        size_t skip = 0;
        if (p[0] == '{' && p[1] == 'U' && p[2] >= '0' && p[2] <= '5' &&
            p[3] == '}') {
            v = uid[p[2] - '0'];
            skip = 4;
        } else if (strncmp(p, "{G}", 3) == 0) {
            v = group_id;
            skip = 3;
        } else if (strncmp(p, "{R}", 3) == 0) {
            v = redirect_id;
            skip = 3;
        } else if (strncmp(p, "{OP}", 4) == 0) {
            v = op_id;
            skip = 4;
        }
        if (v != NULL) {
            len += (size_t)snprintf(out + len, cap - len, "%s", v);
            p += skip;
        } else {
            out[len++] = *p++;
            out[len] = '\0';
        }
    }
    assert_true(len + 1 < cap);
}

static void make_request(const fh_case *c, request *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->method, sizeof r->method, "%s", c->method);
    char target[4096];
    expand(c->target, target, sizeof target);
    char *qm = strchr(target, '?');
    if (qm != NULL) {
        *qm = '\0';
        snprintf(r->query, sizeof r->query, "%s", qm + 1);
    }
    snprintf(r->path, sizeof r->path, "%s", target);
    if (c->body != NULL) {
        expand(c->body, r->body, sizeof r->body);
        r->has_body = 1;
    }
    r->idempotency_key = c->idempotency_key;
}

/* Mask what differs from run to run: UUIDs (an operation's, an edit's
 * new message) and ISO times (an operation's), queue ages. */
static char *mask(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i, dig = 0;
        /* a UUID: 8-4-4-4-12 hex digits */
        static const int groups[] = {8, 4, 4, 4, 12};
        int uuid = 1;
        for (int g = 0; g < 5 && uuid; g++) {
            for (int h = 0; h < groups[g]; h++, j++)
                if (j >= len || !strchr("0123456789abcdefABCDEF", s[j])) {
                    uuid = 0;
                    break;
                }
            if (uuid && g < 4) {
                if (j >= len || s[j] != '-')
                    uuid = 0;
                j++;
            }
        }
        if (uuid) {
            memcpy(out + k, "<id>", 4);
            k += 4;
            i = j;
            continue;
        }
        /* a time: 2024-05-01T10:00:00[.fraction]Z */
        j = i;
        while (j < len && s[j] >= '0' && s[j] <= '9')
            j++, dig++;
        if (dig == 4 && j + 15 <= len && s[j] == '-' && s[j + 3] == '-' &&
            s[j + 6] == 'T') {
            j += 15;
            while (j < len && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.'))
                j++;
            if (j < len && s[j] == 'Z')
                j++;
            memcpy(out + k, "<t>", 3);
            k += 3;
            i = j;
            continue;
        }
        if (i >= 9 && strncmp(s + i - 9, "_age_ms\":", 9) == 0 && dig > 0) {
            out[k++] = '0';
            i += dig;
            continue;
        }
        out[k++] = s[i++];
    }
    out[k] = '\0';
    return out;
}

static void answer_free(answer *a)
{
    free(a->body);
    memset(a, 0, sizeof *a);
}

/* An error on the wire: http.c's send_error_after. */
static void wire_error(answer *ans, unsigned status, const char *code,
                       const char *message, const char *field)
{
    sb_buf b;
    sb__buf_init(&b, 4096);
    const char *text = sb__api_error_body(&b, &status, code, message, field);
    if (text != b.data) { /* no memory for the object: its fixed 503 */
        code = "unavailable";
        message = "out of memory";
        field = NULL;
    }
    ans->status = status;
    snprintf(ans->code, sizeof ans->code, "%s", code);
    snprintf(ans->message, sizeof ans->message, "%s", message);
    snprintf(ans->field, sizeof ans->field, "%s", field ? field : "");
    ans->body_len = strlen(text);
    ans->body = malloc(ans->body_len + 1);
    memcpy(ans->body, text, ans->body_len + 1);
    sb__buf_free(&b);
}

/* A handler's response on the wire: http.c's send_api. */
static void wire_api(answer *ans, sb_api_resp *a)
{
    sb__api_resp_finish(a);
    if (a->code != NULL) {
        wire_error(ans, a->status, a->code, a->message, a->field);
        return;
    }
    ans->status = a->status;
    snprintf(ans->content_type, sizeof ans->content_type, "%s",
             a->content_type);
    ans->total = a->total;
    snprintf(ans->link, sizeof ans->link, "%s", a->link);
    snprintf(ans->location, sizeof ans->location, "%s", a->location);
    ans->body_len = a->body.len;
    ans->body = malloc(a->body.len + 1);
    if (a->body.len > 0)
        memcpy(ans->body, a->body.data, a->body.len);
    ans->body[a->body.len] = '\0';
}

/* The request through http.c's on_request, respond and dispatch, minus
 * what only libmicrohttpd does (tokens, Content-Type, the body cap). */
static void serve(fh_ctx *x, const request *rq, answer *ans)
{
    memset(ans, 0, sizeof *ans);
    /* on_request: the body as it comes in */
    sb_buf body;
    sb__buf_init(&body, SB_SERVER_MAX_BODY);
    if (rq->has_body)
        sb__buf_append(&body, rq->body, strlen(rq->body));
    /* respond */
    int method = sb__http_method(rq->method);
    sb_route_match m;
    sb_error err;
    int rc = sb__route(rq->method, rq->path, &m, &err);
    if (rc == SB_INVALID) {
        wire_error(ans, 400, "invalid", err.message, err.field);
    } else if (rc == SB_NOTFOUND && m.allowed == 0) {
        wire_error(ans, 404, "not_found", "no such route", NULL);
    } else if (rc == SB_NOTFOUND) {
        wire_error(ans, 405, "method_not_allowed",
                   "this route does not take that method", NULL);
    } else if (body.failed) {
        wire_error(ans, 503, "unavailable", "out of memory", NULL);
    } else if (m.body != SB_BODY_OBJECT && m.body != SB_BODY_ARRAY &&
               m.body != SB_BODY_OBJECT_OR_ARRAY && body.len > 0) {
        wire_error(ans, 400, "invalid", "this route takes no request body",
                   "body");
    } else {
        sb_buf qt;
        sb__buf_init(&qt, SB_QUERY_MAX + 1);
        if (rq->query[0] != '\0')
            sb__buf_puts(&qt, rq->query); /* add_arg */
        sb_query_params *q = NULL;
        rc = sb__api_query(&qt, &q, &err);
        sb__buf_free(&qt);
        if (rc == SB_NOMEM) {
            wire_error(ans, 503, "unavailable", "out of memory", NULL);
        } else if (rc != SB_OK) {
            wire_error(ans, 400, "invalid", err.message, err.field);
        } else {
            /* dispatch */
            sb_api_req req = {.method = method,
                              .m = &m,
                              .q = q,
                              .body = body.data ? body.data : "",
                              .body_len = body.len,
                              .idempotency_key = rq->idempotency_key};
            sb_api_resp *a = sb__api_resp_new(0);
            if (a == NULL) {
                wire_error(ans, 503, "unavailable", "out of memory", NULL);
            } else {
                sb__api_handle(&x->api, &req, a);
                wire_api(ans, a);
                sb__api_resp_free(a);
            }
        }
        sb__free(q);
    }
    sb__buf_free(&body);
}

/* ------------------------------------------------------------------ */
/* checks (the allocator works again) */

static void describe(const answer *a, char *out, size_t cap)
{
    snprintf(out, cap, "%u %s%s%s [%.300s]", a->status,
             a->code[0] ? a->code : "", a->code[0] ? ": " : "",
             a->code[0] ? a->message : "", a->body ? a->body : "(no body)");
}

/* An error answer is S7's object, of the code the response names. */
static void check_error_body(const fh_case *c, long n, const answer *a)
{
    json_error_t e;
    json_t *j = json_loads(a->body, 0, &e);
    const char *code = json_string_value(json_object_get(j, "error"));
    const char *msg = json_string_value(json_object_get(j, "message"));
    int ok = json_is_object(j) && code != NULL && strcmp(code, a->code) == 0 &&
             msg != NULL && msg[0] != '\0';
    json_decref(j);
    if (!ok)
        FINDING("%s: N=%ld: %u %s without its error object: %s", c->name, n,
                a->status, a->code, a->body);
}

/* The answer of a run without failures, set by the counting run. */
static answer clean;
static char *clean_body, *clean_location, *clean_link;

static int same_as_clean(const answer *a)
{
    if (a->status != clean.status || strcmp(a->code, clean.code) != 0 ||
        strcmp(a->field, clean.field) != 0 ||
        strcmp(a->message, clean.message) != 0 ||
        strcmp(a->content_type, clean.content_type) != 0 ||
        a->total != clean.total)
        return 0;
    char *b = mask(a->body, a->body_len);
    char *l = mask(a->location, strlen(a->location));
    char *k = mask(a->link, strlen(a->link));
    int same = strcmp(b, clean_body) == 0 && strcmp(l, clean_location) == 0 &&
               strcmp(k, clean_link) == 0;
    free(b);
    free(l);
    free(k);
    return same;
}

static void set_clean(const fh_case *c, const answer *a)
{
    char d[1024];
    describe(a, d, sizeof d);
    if (a->status != c->want)
        fail_msg("%s: the run without failures answered %s, want %u", c->name,
                 d, c->want);
    if (a->code[0] != '\0')
        check_error_body(c, 0, a);
    else if (a->status >= 400)
        fail_msg("%s: %s without an error code", c->name, d);
    free(clean_body);
    free(clean_location);
    free(clean_link);
    answer_free(&clean);
    clean = *a;
    clean.body = NULL;
    clean_body = mask(a->body, a->body_len);
    clean_location = mask(a->location, strlen(a->location));
    clean_link = mask(a->link, strlen(a->link));
    if (getenv("SB_FAULT_VERBOSE") != NULL)
        printf("  %s: clean answer %s\n", c->name, d);
}

/* The state after a run without failures (set by the counting run). */
static char clean_state[65536];

static void check_state(const fh_case *c, fh_ctx *x)
{
    static char state[65536];
    wait_operations(x);
    fingerprint(x, state, sizeof state);
    if (x->n == 0) {
        memcpy(clean_state, state, sizeof state);
        if (x->failed_ops > 0)
            fail_msg("%s: an operation failed in the run without failures: "
                     "%s",
                     c->name, state);
        if (getenv("SB_FAULT_VERBOSE") != NULL)
            printf("  %s: clean state: %s\n", c->name, state);
    } else if (strcmp(state, clean_state) != 0) {
        FINDING("%s: N=%ld: the store differs from a run without "
                "failures:\n  %s\nwant\n  %s",
                c->name, x->n, state, clean_state);
    }
}

/* ------------------------------------------------------------------ */
/* one walk */

static void start_run(const fh_case *c, fh_ctx *x, long n)
{
    memset(x, 0, sizeof *x);
    x->n = n;
    copy_template();
    snprintf(x->url, sizeof x->url, "sqlite:%s", run_path);
    open_all(x, 1, c->ops);
}

static void walk(const fh_case *c)
{
    const char *only = getenv("SB_FAULT_CASE");
    if (only != NULL && strstr(c->name, only) == NULL)
        return;
    int64_t t0 = now_ms();
    long live0 = fa_live();
    request rq;
    make_request(c, &rq);
    fh_ctx x;

    /* The counting run: no failure. */
    start_run(c, &x, 0);
    answer a;
    fa_arm(0);
    serve(&x, &rq, &a);
    long count = fa_disarm();
    set_clean(c, &a);
    answer_free(&a);
    if (c->writes)
        check_state(c, &x);
    close_all(&x);
    if (fa_live() != live0)
        fail_msg("%s: the run without failures leaked %ld block(s)", c->name,
                 fa_live() - live0);
    if (count == 0)
        fail_msg("%s: no allocation counted", c->name);

    long walked = 0, unavailable = 0, absorbed = 0, again = 0;
    const char *one = getenv("SB_FAULT_N");
    for (long n = 1; n <= count; n += n < c->every_upto ? 1 : c->stride) {
        if (one != NULL && strtol(one, NULL, 10) != n)
            continue;
        start_run(c, &x, n);
        long failed0 = fa_failed();
        fa_arm(n);
        serve(&x, &rq, &a);
        fa_disarm();
        int injected = fa_failed() != failed0;
        char d[1024];
        describe(&a, d, sizeof d);
        int as_clean = same_as_clean(&a);
        if (as_clean) {
            if (injected)
                absorbed++;
        } else {
            if (!injected)
                FINDING("%s: N=%ld: answered %s with no failure injected",
                        c->name, n, d);
            /* Out of memory is the server's: 503, never a 2xx that is not
             * the whole answer, never a 4xx blaming the request. */
            if (a.status != 503 || strcmp(a.code, "unavailable") != 0)
                FINDING("%s: N=%ld: answered %s, want the clean answer or "
                        "503 unavailable",
                        c->name, n, d);
            check_error_body(c, n, &a);
            unavailable++;
            if (getenv("SB_FAULT_VERBOSE") != NULL)
                printf("  %s: N=%ld: %s\n", c->name, n, d);
            if (c->writes) {
                /* The client tries again. */
                answer b;
                serve(&x, &rq, &b);
                char e[1024];
                describe(&b, e, sizeof e);
                if (!same_as_clean(&b))
                    FINDING("%s: N=%ld: made again after %s, it answered "
                            "%s, not as a run without failures",
                            c->name, n, d, e);
                answer_free(&b);
                again++;
            }
        }
        answer_free(&a);
        if (c->writes)
            check_state(c, &x);
        close_all(&x);
        if (fa_live() != live0) {
            FINDING("%s: N=%ld (%s) leaked %ld block(s)", c->name, n, d,
                    fa_live() - live0);
            live0 = fa_live();
        }
        walked++;
    }
    printf("%-37s %5ld allocations, %4ld runs (every N to %ld, then every "
           "%ld): %ld 503s, %ld absorbed, %ld made again, %lld ms\n",
           c->name, count, walked, c->every_upto, c->stride, unavailable,
           absorbed, again, (long long)(now_ms() - t0));
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* the cases */

#define EDIT_BODY                                                              \
    "{\"message_body\":\"{\\\"Order\\\":0,\\\"fixed\\\":true}\","              \
    "\"message_headers\":{\"sb-failed-queue\":\"sales\",\"note\":"             \
    "\"edited\"}}"

/* Reads: every family of GET routes, and the error answers. */
static const fh_case read_cases[] = {
    {"GET errors (filters, page 2)", "GET",
     "/api/errors?status=unresolved,archived&sort=number_of_processing_"
     "attempts&direction=asc&per_page=2&page=2",
     NULL, NULL, 200, 0, 0, 300, 3},
    {"GET errors/{id}", "GET", "/api/errors/{U0}", NULL, NULL, 200, 0, 0, 300,
     3},
    {"GET errors/last/{id}", "GET", "/api/errors/last/{U1}", NULL, NULL, 200, 0,
     0, 300, 3},
    {"GET sqlbus/errors/{id}", "GET", "/api/sqlbus/errors/{U0}", NULL, NULL,
     200, 0, 0, 300, 3},
    {"GET messages/search/{message id}", "GET", "/api/messages/search/msg-1",
     NULL, NULL, 200, 0, 0, 300, 3},
    {"GET messages/search/{keyword}", "GET",
     "/api/messages/search/InvalidOperationException", NULL, NULL, 200, 0, 0,
     300, 3},
    {"GET messages2", "GET", "/api/messages2?page_size=3&sort=time_sent", NULL,
     NULL, 200, 0, 0, 300, 3},
    {"GET conversations/{id}", "GET", "/api/conversations/none", NULL, NULL,
     200, 0, 0, 300, 3},
    {"GET messages/{id}/body", "GET", "/api/messages/{U0}/body", NULL, NULL,
     200, 0, 0, 300, 3},
    {"GET messages/{id}/body (stored)", "GET", "/api/messages/{U5}/body", NULL,
     NULL, 200, 0, 0, 300, 3},
    {"GET messages/search", "GET", "/api/messages/search?q=Orders%20place",
     NULL, NULL, 200, 0, 0, 300, 3},
    {"GET errors/summary", "GET", "/api/errors/summary", NULL, NULL, 200, 0, 0,
     300, 3},
    {"GET sqlbus/errors/summary", "GET", "/api/sqlbus/errors/summary", NULL,
     NULL, 200, 0, 0, 300, 3},
    {"GET errors/queues/addresses", "GET",
     "/api/errors/queues/addresses?per_page=1", NULL, NULL, 200, 0, 0, 300, 3},
    {"GET endpoints/{name}/errors", "GET", "/api/endpoints/Sales/errors", NULL,
     NULL, 200, 0, 0, 300, 3},
    {"GET recoverability/groups", "GET", "/api/recoverability/groups", NULL,
     NULL, 200, 0, 1, 300, 3},
    {"GET archive/groups/id/{id}, none archived", "GET",
     "/api/archive/groups/id/{G}", NULL, NULL, 404, 0, 0, 300, 3},
    {"GET recoverability/groups/{unknown}", "GET",
     "/api/recoverability/groups/undefined?classifierFilter=x", NULL, NULL, 200,
     0, 0, 300, 3},
    {"GET groups/id/{id}", "GET", "/api/recoverability/groups/id/{G}", NULL,
     NULL, 200, 0, 0, 300, 3},
    {"GET groups/{id}/errors", "GET",
     "/api/recoverability/groups/{G}/errors?sort=time_of_failure", NULL, NULL,
     200, 0, 0, 300, 3},
    {"GET errors/groups (archived)", "GET", "/api/errors/groups", NULL, NULL,
     200, 0, 0, 300, 3},
    {"GET recoverability/history", "GET", "/api/recoverability/history", NULL,
     NULL, 200, 0, 1, 300, 3},
    {"GET sqlbus/recoverability/history", "GET",
     "/api/sqlbus/recoverability/history", NULL, NULL, 200, 0, 1, 300, 3},
    {"404 no group operation to acknowledge", "DELETE",
     "/api/recoverability/unacknowledgedgroups/{G}", NULL, NULL, 404, 0, 0, 300,
     3},
    {"GET operations/{id}", "GET", "/api/operations/{OP}", NULL, NULL, 200, 0,
     1, 300, 3},
    {"GET queues", "GET", "/api/queues", NULL, NULL, 200, 0, 0, 300, 3},
    {"GET queues/{q}/messages", "GET", "/api/queues/orders/messages?per_page=2",
     NULL, NULL, 200, 0, 0, 300, 3},
    {"GET redirects", "GET", "/api/redirects", NULL, NULL, 200, 0, 0, 300, 3},
    {"GET recovery", "GET", "/api/recovery", NULL, NULL, 200, 0, 0, 300, 3},
    {"GET configuration", "GET", "/api/configuration", NULL, NULL, 200, 0, 0,
     300, 3},
    {"GET sqlbus/configuration", "GET", "/api/sqlbus/configuration", NULL, NULL,
     200, 0, 0, 300, 3},
    {"GET endpoints/known", "GET", "/api/endpoints/known", NULL, NULL, 200, 0,
     0, 300, 3},
    {"GET sqlbus/endpoints/known", "GET", "/api/sqlbus/endpoints/known", NULL,
     NULL, 200, 0, 0, 300, 3},
    {"400 bad sort", "GET", "/api/errors?sort=size", NULL, NULL, 400, 0, 0, 300,
     3},
    {"400 parameter given twice", "GET", "/api/errors?page=1&page=2", NULL,
     NULL, 400, 0, 0, 300, 3},
    {"404 no such message", "GET", "/api/errors/no-such-message", NULL, NULL,
     404, 0, 0, 300, 3},
    {"404 no such route", "GET", "/api/nothing/here", NULL, NULL, 404, 0, 0,
     300, 3},
    {"400 body not JSON", "POST", "/api/errors/retry", "[\"{U0}\"", NULL, 400,
     0, 0, 300, 3},
    {"409 edit of an archived one", "POST", "/api/edit/{U3}", EDIT_BODY, NULL,
     409, 0, 0, 300, 3},
};

/* Writes: each of the store's changes, checked for half-written state. */
static const fh_case write_cases[] = {
    {"POST errors/retry (ids)", "POST", "/api/errors/retry",
     "[\"{U0}\",\"{U1}\"]", NULL, 202, 1, 1, 300, 3},
    {"POST groups/{id}/errors/retry", "POST",
     "/api/recoverability/groups/{G}/errors/retry", NULL, NULL, 202, 1, 1, 300,
     3},
    {"PATCH errors/archive (ids)", "PATCH", "/api/errors/archive",
     "[\"{U0}\",\"{U4}\"]", NULL, 202, 1, 1, 300, 3},
    {"PATCH errors/{id}/archive", "PATCH", "/api/errors/{U1}/archive", NULL,
     NULL, 202, 1, 1, 300, 3},
    {"PATCH errors/unarchive (ids)", "PATCH", "/api/errors/unarchive",
     "[\"{U3}\"]", NULL, 202, 1, 1, 300, 3},
    {"PATCH errors/{from}...{to}/unarchive", "PATCH",
     "/api/errors/2000-01-01T00:00:00Z...2099-01-01T00:00:00Z/unarchive", NULL,
     NULL, 202, 1, 1, 300, 3},
    /* issue 20.6: selections that pick nothing write nothing */
    {"PATCH .../unarchive, an empty range", "PATCH",
     "/api/errors/2000-01-01T00:00:00Z...2000-01-02T00:00:00Z/unarchive", NULL,
     NULL, 200, 1, 1, 300, 3},
    {"POST errors/{id}/retry, no such id", "POST",
     "/api/errors/no-such-message/retry", NULL, NULL, 404, 1, 1, 300, 3},
    {"POST groups/{id}/comment, no group", "POST",
     "/api/recoverability/groups/00000000-0000-0000-0000-000000000001/"
     "comment?comment=lost",
     NULL, NULL, 404, 1, 0, 300, 3},
    {"PATCH pendingretries/resolve", "PATCH", "/api/pendingretries/resolve",
     "{\"uniquemessageids\":[\"{U2}\"]}", NULL, 202, 1, 1, 300, 3},
    {"POST edit/{id}", "POST", "/api/edit/{U0}", EDIT_BODY, NULL, 202, 1, 0,
     300, 3},
    {"POST groups/{id}/comment", "POST",
     "/api/recoverability/groups/{G}/comment?comment=looking%20into%20it", NULL,
     NULL, 200, 1, 0, 300, 3},
    {"DELETE groups/{id}/comment", "DELETE",
     "/api/recoverability/groups/{G}/comment", NULL, NULL, 200, 1, 0, 300, 3},
    {"POST redirects", "POST", "/api/redirects",
     "{\"fromphysicaladdress\":\"sales\",\"tophysicaladdress\":\"sales-v2\"}",
     NULL, 201, 1, 0, 300, 3},
    {"PUT redirects/{id}", "PUT", "/api/redirects/{R}",
     "{\"tophysicaladdress\":\"billing-v3\"}", NULL, 200, 1, 0, 300, 3},
    {"DELETE redirects/{id}", "DELETE", "/api/redirects/{R}", NULL, NULL, 200,
     1, 0, 300, 3},
    {"POST queues/{q}/messages", "POST", "/api/queues/orders/messages",
     "{\"body\":{\"order\":7,\"lines\":[{\"sku\":\"A-1\",\"qty\":2},{\"sku\":"
     "\"B-2\",\"qty\":1}],\"note\":\"long enough for the dump to grow its "
     "buffer\"},\"headers\":{\"note\":\"walk\",\"trace\":\"a header long "
     "enough to grow the buffer too\"}}",
     "walk-key-1", 201, 1, 0, 300, 3},
    {"POST queues/{q}/messages (text)", "POST", "/api/queues/orders/messages",
     "{\"body\":\"plain text\",\"delay_ms\":60000}", NULL, 201, 1, 0, 300, 3},
    {"POST failed-messages", "POST", "/api/failed-messages",
     "{\"headers\":{\"sb-failed-queue\":\"imports\",\"sb-exception-type\":"
     "\"System.Exception\"},\"body\":\"{}\"}",
     NULL, 202, 1, 0, 300, 3},
};

static void test_reads(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof read_cases / sizeof *read_cases; i++)
        walk(&read_cases[i]);
}

static void test_writes(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof write_cases / sizeof *write_cases; i++)
        walk(&write_cases[i]);
}

static int setup(void **state)
{
    (void)state;
    prepare();
    fa_only_this_thread();
    return 0;
}

int main(void)
{
    /* Before the library allocates anything (sb_set_allocator). */
    fa_install();
    sbt_init();
    if (strcmp(sbt_backend(), "sqlite") != 0) {
        printf("skipped: the fault walk runs on SQLite only\n");
        return 77;
    }
    make_dir();
    if (getenv("SB_FAULT_BACKTRACE") != NULL)
        fa_on_fail = print_backtrace;
    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the backtraces */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads),
        cmocka_unit_test(test_writes),
    };
    int failed = cmocka_run_group_tests_name("fault_http", tests, setup, NULL);
    if (findings > 0) {
        printf("%ld finding(s)\n", findings);
        return 1;
    }
    return failed;
}
