/* harness_errors.c - see harness_errors.h. */
#include "harness_errors.h"

#include <stdio.h>
#include <string.h>

void sbe_open_opts(sbe_env *e, const sb_errors_options *o)
{
    memset(e, 0, sizeof *e);
    snprintf(e->prefix, sizeof e->prefix, "%s", sbt_new_prefix());
    e->bus = sbt_open(e->prefix, NULL);
    sb_error err;
    sbt_ok(sb_errors_open(e->bus, o, &e->store, &err), &err, "errors open");
}

void sbe_open(sbe_env *e)
{
    sbe_open_opts(e, NULL);
}

void sbe_close(sbe_env *e)
{
    sb_errors_close(e->store);
    if (sbt_is_pg()) {
        static const char *const tables[] = {
            "failed_messages", "failed_message_groups", "group_comments",
            "known_endpoints", "retry_claims",          "failed_imports",
            "message_bodies",  "group_operations",      "message_edits",
            "redirects"};
        for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
            char sql[256];
            snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s%s",
                     e->prefix, tables[i]);
            sbt_exec(e->bus, sql);
        }
    }
    sbt_drop(e->bus, e->prefix);
    sb_close(e->bus);
}

void sbe_dead_letter(sbe_env *e, const char *mid, const char *queue,
                     const char *when, const char *exc_type,
                     const char *body, const char *extra)
{
    char headers[2048];
    snprintf(headers, sizeof headers,
             "{\"sb-message-id\":\"%s\",\"sb-failed-queue\":\"%s\","
             "\"sb-time-of-failure\":\"%s\",\"sb-processing-endpoint\":"
             "\"Sales\",\"sb-exception-type\":\"%s\","
             "\"sb-exception-message\":\"boom at %s\","
             "\"sb-exception-stacktrace\":\"System.Exception: boom\\n   at "
             "Shop.Orders.Place(Order o) in /src/Orders.cs:line 42\","
             "\"sb-message-type\":\"Shop.PlaceOrder, Shop, Version=1.0\""
             "%s}",
             mid, queue, when, exc_type, when, extra ? extra : "");
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = body;
    o.payload_len = strlen(body);
    o.headers_json = headers;
    sb_error err;
    sbt_ok(sb_publish(e->bus, NULL, "deadletter", &o, NULL, &err), &err,
           "publish to the dead-letter queue");
}

void sbe_dead_letter_as(sbe_env *e, const char *uid, const char *queue,
                        const char *when, const char *exc_type,
                        const char *body)
{
    char extra[128];
    snprintf(extra, sizeof extra, ",\"sb-retry-of\":\"%s\"", uid);
    sbe_dead_letter(e, uid, queue, when, exc_type, body, extra);
}

sb_ingest_stats sbe_ingest(sbe_env *e)
{
    sb_ingest_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    sb_error err;
    sbt_ok(sb_errors_ingest(e->store, &s, &err), &err, "ingest");
    return s;
}

sb_failed_message *sbe_get(sbe_env *e, const char *uid)
{
    sb_failed_message *m = NULL;
    sb_error err;
    sbt_ok(sb_errors_get(e->store, uid, &m, &err), &err, uid);
    return m;
}

int sbe_status(sbe_env *e, const char *uid, int64_t *attempts)
{
    sb_failed_message *m = sbe_get(e, uid);
    int st = sb_failed_status(m);
    if (attempts != NULL)
        *attempts = sb_failed_attempts(m);
    sb_failed_message_free(m);
    return st;
}
