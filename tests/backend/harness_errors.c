/* harness_errors.c - see harness_errors.h. */
#include "harness_errors.h"

#include <stdio.h>
#include <string.h>

static void open_env(sbe_env *e, const sb_options *bo,
                     const sb_errors_options *o)
{
    memset(e, 0, sizeof *e);
    snprintf(e->prefix, sizeof e->prefix, "%s", sbt_new_prefix());
    e->bus = sbt_open(e->prefix, bo);
    sb_error err;
    sbt_ok(sb_errors_open(e->bus, o, &e->store, &err), &err, "errors open");
}

void sbe_open_opts(sbe_env *e, const sb_errors_options *o)
{
    open_env(e, NULL, o);
}

void sbe_open(sbe_env *e)
{
    open_env(e, NULL, NULL);
}

void sbe_open_single_threaded(sbe_env *e)
{
    static const sb_options no_flusher = {.counts_flush_ms = -1};
    open_env(e, &no_flusher, NULL);
}

long sbe_count_mismatches(const sbe_env *e)
{
    /* The counts as they must be, computed from the rows themselves. */
    char truth[2048], sql[6144];
    const char *p = e->prefix;
    snprintf(truth, sizeof truth,
             "SELECT 1 AS kind, coalesce(failed_queue, '') AS item, status, "
             "count(*) AS n, CAST(NULL AS BIGINT) AS f, CAST(NULL AS BIGINT) "
             "AS l FROM %sfailed_messages GROUP BY coalesce(failed_queue, "
             "''), status UNION ALL SELECT 2, coalesce(processing_endpoint, "
             "''), status, count(*), NULL, NULL FROM %sfailed_messages GROUP "
             "BY coalesce(processing_endpoint, ''), status UNION ALL SELECT "
             "3, coalesce(message_type, ''), status, count(*), NULL, NULL "
             "FROM %sfailed_messages GROUP BY coalesce(message_type, ''), "
             "status UNION ALL SELECT 4, g.group_id, f.status, count(*), "
             "min(f.first_time_of_failure), max(f.last_time_of_failure) FROM "
             "%sfailed_message_groups g JOIN %sfailed_messages f ON "
             "f.unique_message_id = g.unique_message_id GROUP BY g.group_id, "
             "f.status",
             p, p, p, p, p);
    snprintf(
        sql, sizeof sql,
        "SELECT (SELECT count(*) FROM (%s EXCEPT SELECT kind, item, "
        "status, n, first_us, last_us FROM %sfailed_counts WHERE n > 0) "
        "a) + (SELECT count(*) FROM (SELECT kind, item, status, n, "
        "first_us, last_us FROM %sfailed_counts WHERE n > 0 EXCEPT "
        "SELECT * FROM (%s) t) b) + (SELECT count(*) FROM %sfailed_counts WHERE stale = 1 OR "
        "n < 0) + (SELECT count(*) FROM %sfailed_counts WHERE n = 0 AND "
        "(first_us IS NOT NULL OR last_us IS NOT NULL)) + "
        "%s($1) - %s($1)",
        truth, p, p, truth, p, p, sbt_is_mssql() ? "LEN" : "length",
        sbt_is_mssql() ? "LEN" : "length");
    return sbt_native_scalar(sql, "x");
}

/* The error store's tables, dropped by sbe_close on PostgreSQL and SQL
 * Server (a SQLite store goes with its file). */
static const char *const tables[] = {
    "failed_messages",        "failed_message_groups",
    "group_comments",         "known_endpoints",
    "retry_claims",           "failed_imports",
    "message_bodies",         "group_operations",
    "message_edits",          "redirects",
    "failed_counts",          "failed_message_history",
    "failed_message_attempts"};

void sbe_close(sbe_env *e)
{
    sb_errors_close(e->store);
    /* E13, E23: every test ends with counts that match its rows. */
    assert_int_equal(sbe_count_mismatches(e), 0);
    if (sbt_is_pg()) {
        static const char *const functions[] = {"fm_ins", "fm_upd", "fm_del",
                                                "fg_ins", "fg_del"};
        for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
            char sql[256];
            snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s%s", e->prefix,
                     tables[i]);
            sbt_exec(e->bus, sql);
        }
        for (size_t i = 0; i < sizeof functions / sizeof *functions; i++) {
            char sql[256];
            snprintf(sql, sizeof sql, "DROP FUNCTION IF EXISTS %sfc_%s()",
                     e->prefix, functions[i]);
            sbt_exec(e->bus, sql);
        }
        /* The history's and the attempt keys' trigger functions. */
        static const char *const others[] = {"fh_change", "fa_drop"};
        for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
            char sql[256];
            snprintf(sql, sizeof sql, "DROP FUNCTION IF EXISTS %s%s()",
                     e->prefix, others[i]);
            sbt_exec(e->bus, sql);
        }
    }
    if (sbt_is_mssql()) {
        /* The triggers and the full-text index go with their tables; the
         * full-text catalog refuses a transaction, so all of it runs in
         * autocommit (a catalog that will not go yet is left behind). */
        char sql[4096];
        size_t len = (size_t)snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS ");
        for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
            len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s%s",
                                    i ? ", " : "", e->prefix, tables[i]);
        snprintf(sql + len, sizeof sql - len,
                 "; IF EXISTS (SELECT 1 FROM sys.fulltext_catalogs WHERE name "
                 "= N'%sfailed_messages_ftc') BEGIN TRY DROP FULLTEXT CATALOG "
                 "%sfailed_messages_ftc END TRY BEGIN CATCH END CATCH",
                 e->prefix, e->prefix);
        sbt_native_exec(sql);
    }
    sbt_drop(e->bus, e->prefix);
    sb_close(e->bus);
}

void sbe_dead_letter(sbe_env *e, const char *mid, const char *queue,
                     const char *when, const char *exc_type, const char *body,
                     const char *extra)
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

int sbe_search_available(sbe_env *e)
{
    if (!sbt_is_mssql())
        return 1;
    long installed = sbt_native_scalar(
        "SELECT CAST(COALESCE(FULLTEXTSERVICEPROPERTY('IsFullTextInstalled'), "
        "0) AS int) + LEN($1) - LEN($1)",
        e->prefix);
    if (installed == 1)
        return 1;
    /* Everything else works; search says what is missing. */
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    assert_int_equal(sb_errors_search(e->store, "x", 10, &s, &n, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "backend");
    assert_non_null(strstr(err.message, "full-text search is not installed "
                                        "on this SQL Server"));
    printf("SQL Server without Full-Text Search: search refused as it "
           "should be; the rest of this test is skipped\n");
    return 0;
}

void sbe_await_search(sbe_env *e)
{
    if (!sbt_is_mssql())
        return;
    /* The full-text index follows the table asynchronously (change
     * tracking AUTO): wait until it has nothing pending. */
    for (int i = 0; i < 600; i++) {
        long busy = sbt_native_scalar(
            "SELECT COALESCE(CAST(OBJECTPROPERTYEX(OBJECT_ID($1 + "
            "N'failed_messages'), 'TableFulltextPendingChanges') AS int), 0) "
            "+ COALESCE(CAST(OBJECTPROPERTYEX(OBJECT_ID($1 + "
            "N'failed_messages'), 'TableFulltextPopulateStatus') AS int), 0)",
            e->prefix);
        if (busy == 0)
            return;
        sbt_sleep_ms(100);
    }
    fail_msg("the full-text index of %sfailed_messages did not catch up in "
             "60 s",
             e->prefix);
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

void sbe_seed_failed(sbe_env *e, const char *queue, int n)
{
    enum { CHUNK = 500 };
    static char headers[CHUNK][512];
    sb_outgoing o[CHUNK];
    for (int at = 0; at < n; at += CHUNK) {
        int k = n - at < CHUNK ? n - at : CHUNK;
        for (int i = 0; i < k; i++) {
            snprintf(headers[i], sizeof headers[i],
                     "{\"sb-retry-of\":\"%s-%05d\",\"sb-failed-queue\":"
                     "\"%s\",\"sb-time-of-failure\":"
                     "\"2026-01-02T00:00:01Z\",\"sb-exception-type\":\"X\","
                     "\"sb-processing-endpoint\":\"Sales\"}",
                     queue, at + i, queue);
            memset(&o[i], 0, sizeof o[i]);
            o[i].payload = "body";
            o[i].payload_len = 4;
            o[i].headers_json = headers[i];
        }
        sb_error err;
        sbt_ok(sb_publish_batch(e->bus, NULL, "deadletter", o, (size_t)k, NULL,
                                &err),
               &err, "seed");
    }
    sbe_ingest(e);
}

void sbe_group_of(sbe_env *e, const char *queue, int status, char id[37])
{
    sb_failure_group **g = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_groups(e->store, "Endpoint Address", status, &g, &n, &err),
           &err, "groups");
    id[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(g[i]->title, queue) == 0)
            memcpy(id, g[i]->id, 37);
    sb_free(g);
    assert_true(id[0] != '\0');
}
