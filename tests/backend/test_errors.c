/*
 * test_errors.c - the error store's write path on both backends (rules
 * E1-E11): the acceptance list of the seed's relational persister, as our
 * own tests, plus failed imports and body placement through ingestion.
 */
#include "harness_errors.h"

#include "errors/ids.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* "First failure stored" (E4, E5, E6). */
static void test_first_failure_stored(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_dead_letter(&e, "m-1", "orders", "2026-01-02T03:04:05.000001Z",
                    "System.InvalidOperationException", "{\"id\":1}",
                    ",\"sb-retry-of\":\"u-1\"");
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.rows, 1);
    assert_int_equal(s.messages, 1);
    assert_int_equal(sbt_count(e.bus, "deadletter"), 0); /* E1 */
    sb_failed_message *m = sbe_get(&e, "u-1");
    assert_int_equal(sb_failed_status(m), SB_FAILED_UNRESOLVED);
    assert_int_equal(sb_failed_attempts(m), 1);
    assert_string_equal(sb_failed_field(m, "message_id"), "m-1");
    assert_string_equal(sb_failed_field(m, "failed_queue"), "orders");
    assert_string_equal(sb_failed_field(m, "processing_endpoint"), "Sales");
    assert_string_equal(sb_failed_field(m, "message_type"), "Shop.PlaceOrder");
    assert_string_equal(sb_failed_field(m, "exception_type"),
                        "System.InvalidOperationException");
    assert_int_equal(sb_failed_first_failure_us(m), 1767323045000001LL);
    size_t len = 0;
    const char *body = sb_failed_body(m, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(body, "{\"id\":1}", 8);
    assert_non_null(strstr(sb_failed_headers(m), "sb-failed-queue"));
    /* E12: the five classifiers (no instance id here: four groups). */
    assert_true(sb_failed_group_count(m) >= 4);
    int saw_stack = 0;
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *id, *type, *title;
        sbt_ok(sb_failed_group(m, i, &id, &type, &title), NULL, "group");
        assert_int_equal(strlen(id), 36);
        if (strcmp(type, "Exception Type and Stack Trace") == 0) {
            saw_stack = 1;
            assert_non_null(strstr(title, "Shop.Orders.Place"));
            assert_null(strstr(title, "line 42"));
        }
    }
    assert_true(saw_stack);
    sb_failed_message_free(m);
    sbe_close(&e);
}

/* "A later attempt replaces the data"; "two attempts in one batch fold";
 * "an older attempt counts but overwrites neither data nor groups";
 * "redelivery of the same attempt is not a new attempt" (E8, E10). */
static void test_attempts_fold_and_guard(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    const char *retry = ",\"sb-retry-of\":\"u-2\"";
    sbe_dead_letter(&e, "m-2", "orders", "2026-01-02T00:00:02Z", "First", "a",
                    retry);
    sbe_dead_letter(&e, "m-2", "orders", "2026-01-02T00:00:03Z", "Second", "b",
                    retry);
    sbe_ingest(&e);
    sb_failed_message *m = sbe_get(&e, "u-2");
    assert_int_equal(sb_failed_attempts(m), 2);
    assert_string_equal(sb_failed_field(m, "exception_type"), "Second");
    sb_failed_message_free(m);
    /* An older attempt: counted, overwrites nothing. */
    sbe_dead_letter(&e, "m-2", "orders", "2026-01-02T00:00:01Z", "Older", "c",
                    retry);
    sbe_ingest(&e);
    m = sbe_get(&e, "u-2");
    assert_int_equal(sb_failed_attempts(m), 3);
    assert_string_equal(sb_failed_field(m, "exception_type"), "Second");
    assert_int_equal(sb_failed_first_failure_us(m), 1767312001000000LL);
    assert_int_equal(sb_failed_last_failure_us(m), 1767312003000000LL);
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *type, *title;
        sb_failed_group(m, i, NULL, &type, &title);
        if (strcmp(type, "Exception Type and Stack Trace") == 0)
            assert_non_null(strstr(title, "Second"));
    }
    sb_failed_message_free(m);
    /* The newest attempt delivered again: not a new attempt. */
    sbe_dead_letter(&e, "m-2", "orders", "2026-01-02T00:00:03Z", "Second", "b",
                    retry);
    sbe_ingest(&e);
    m = sbe_get(&e, "u-2");
    assert_int_equal(sb_failed_attempts(m), 3);
    sb_failed_message_free(m);
    /* A later attempt replaces the data and the groups. */
    sbe_dead_letter(&e, "m-2", "payments", "2026-01-02T00:00:09Z", "Third", "d",
                    retry);
    sbe_ingest(&e);
    m = sbe_get(&e, "u-2");
    assert_int_equal(sb_failed_attempts(m), 4);
    assert_string_equal(sb_failed_field(m, "exception_type"), "Third");
    assert_string_equal(sb_failed_field(m, "failed_queue"), "payments");
    int third = 0;
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *type, *title;
        sb_failed_group(m, i, NULL, &type, &title);
        third += strcmp(type, "Endpoint Address") == 0 &&
                 strcmp(title, "payments") == 0;
        assert_false(strcmp(type, "Endpoint Address") == 0 &&
                     strcmp(title, "orders") == 0);
    }
    assert_int_equal(third, 1);
    sb_failed_message_free(m);
    sbe_close(&e);
}

/* Attempts of message m-1 (endpoint Sales, so its unique id is derived,
 * E6) submitted as `sqlbus errors import` does: one failed message per
 * time of failure "2026-01-02T00:00:0<s>Z", exception type "E<s>", all in
 * one call (so one ingestion batch). */
static void submit_attempts(sbe_env *e, const int *secs, size_t n)
{
    sb_failed_submission m[4];
    char headers[4][512];
    assert_true(n <= 4);
    for (size_t i = 0; i < n; i++) {
        snprintf(headers[i], sizeof headers[i],
                 "{\"sb-message-id\":\"m-1\",\"sb-failed-queue\":\"orders\","
                 "\"sb-processing-endpoint\":\"Sales\","
                 "\"sb-time-of-failure\":\"2026-01-02T00:00:0%dZ\","
                 "\"sb-exception-type\":\"E%d\"}",
                 secs[i], secs[i]);
        memset(&m[i], 0, sizeof m[i]);
        m[i].headers_json = headers[i];
        m[i].body = "{}";
        m[i].len = 2;
    }
    sb_error err;
    sbt_ok(sb_errors_submit(e->store, m, n, &err), &err, "submit");
}

static int64_t at_second(int s)
{
    return 1767312000000000LL + (int64_t)s * 1000000;
}

/* The stored attempt count, window and newest data of m-1. */
static void expect_m1(sbe_env *e, const char *uid, int64_t attempts, int first,
                      int last, const char *exception_type)
{
    sb_failed_message *m = sbe_get(e, uid);
    assert_int_equal(sb_failed_attempts(m), attempts);
    assert_int_equal(sb_failed_first_failure_us(m), at_second(first));
    assert_int_equal(sb_failed_last_failure_us(m), at_second(last));
    assert_string_equal(sb_failed_field(m, "exception_type"), exception_type);
    sb_failed_message_free(m);
}

/* Issue 19, defect 2 (E8, E9, E10): an attempt is identified by its
 * message's unique id and its time of failure, and each is counted
 * exactly once whatever the order and however often it arrives: within
 * a batch, across batches, older or newer than the stored one. A
 * delivery of an attempt already stored changes nothing (a replayed
 * import leaves a resolved message resolved); its keys go with the
 * message (E21), and a store without them (made by an older version)
 * gets its stored attempts' keys at open. */
static void test_attempt_counted_once(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    char uid[37];
    sb__deterministic_guid_str("m-1", "Sales", uid);
    static const int three[] = {1, 2, 3};
    submit_attempts(&e, three, 3);
    sbe_ingest(&e);
    expect_m1(&e, uid, 3, 1, 3, "E3");
    static const int again[] = {3, 1, 2}; /* the newest, then older ones */
    int64_t written = 0;
    for (size_t i = 0; i < 3; i++) {
        submit_attempts(&e, &again[i], 1);
        sb_ingest_stats st = sbe_ingest(&e);
        assert_int_equal(st.rows, 1);
        written += st.messages;
        expect_m1(&e, uid, 3, 1, 3, "E3");
    }
    assert_int_equal(written, 0); /* nothing was written */
    /* One batch: a new, older attempt and a duplicate of the newest. */
    static const int mixed[] = {0, 3};
    submit_attempts(&e, mixed, 2);
    sb_ingest_stats st = sbe_ingest(&e);
    assert_int_equal(st.batches, 1);
    expect_m1(&e, uid, 4, 0, 3, "E3");
    /* The same new attempt twice in one batch counts once. */
    static const int twice[] = {4, 4, 2};
    submit_attempts(&e, twice, 3);
    sbe_ingest(&e);
    expect_m1(&e, uid, 5, 0, 4, "E4");
    /* Resolved meanwhile, then the import replayed: still resolved. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE %sfailed_messages SET status = 2, status_changed_at = "
             "status_changed_at - 7200000000",
             e.prefix);
    sbt_exec(e.bus, sql);
    static const int replay[] = {0, 1, 2, 3};
    submit_attempts(&e, replay, 4);
    sbe_ingest(&e);
    assert_int_equal(sbe_status(&e, uid, NULL), SB_FAILED_RESOLVED);
    expect_m1(&e, uid, 5, 0, 4, "E4");
    /* An older store: its messages have no keys until it is opened. */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_message_attempts WHERE "
             "unique_message_id = $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, uid), 5);
    char drop[256];
    snprintf(drop, sizeof drop, "DROP TABLE %sfailed_message_attempts",
             e.prefix);
    sbt_exec(e.bus, drop);
    sb_errors_close(e.store);
    sb_error err;
    sbt_ok(sb_errors_open(e.bus, NULL, &e.store, &err), &err, "reopen");
    assert_int_equal(sbt_native_scalar(sql, uid), 2); /* first and last */
    static const int newest[] = {4};
    submit_attempts(&e, newest, 1);
    sbe_ingest(&e);
    expect_m1(&e, uid, 5, 0, 4, "E4");
    /* E21: the keys go with the message; the same attempt then makes a
     * new failed message. */
    int64_t deleted = 0;
    sbt_ok(sb_errors_expire(e.store, 3600 * 1000LL, &deleted, &err), &err,
           "expire");
    assert_int_equal(deleted, 1);
    assert_int_equal(sbt_native_scalar(sql, uid), 0);
    submit_attempts(&e, newest, 1);
    sbe_ingest(&e);
    expect_m1(&e, uid, 1, 4, 4, "E4");
    assert_int_equal(sbe_status(&e, uid, NULL), SB_FAILED_UNRESOLVED);
    sbe_close(&e);
}

/* The same through dead-letter rows as the transport writes them (E1,
 * E8, E10): a message dead-lettered again with the same time of failure,
 * in the same batch and in a later one, and attempts arriving out of
 * order; the groups and counts follow the newest attempt only. */
static void test_dead_letter_delivered_twice(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    const char *retry = ",\"sb-retry-of\":\"u-dup\"";
    sbe_dead_letter(&e, "m-d", "orders", "2026-01-02T00:00:05Z", "Five", "a",
                    retry);
    sbe_dead_letter(&e, "m-d", "orders", "2026-01-02T00:00:05Z", "Five", "a",
                    retry);
    sbe_ingest(&e);
    int64_t attempts = 0;
    sbe_status(&e, "u-dup", &attempts);
    assert_int_equal(attempts, 1);
    static const char *const arrivals[] = {"03", "05", "04", "03", "05", "04"};
    static const int64_t expected[] = {2, 2, 3, 3, 3, 3};
    for (size_t i = 0; i < sizeof arrivals / sizeof *arrivals; i++) {
        char when[32], type[16];
        snprintf(when, sizeof when, "2026-01-02T00:00:%sZ", arrivals[i]);
        snprintf(type, sizeof type, "At%s", arrivals[i]);
        sbe_dead_letter(&e, "m-d", i % 2 ? "payments" : "orders", when, type,
                        "b", retry);
        sbe_ingest(&e);
        sbe_status(&e, "u-dup", &attempts);
        assert_int_equal(attempts, expected[i]);
    }
    /* One batch: a new, older attempt beside a copy of the newest that
     * differs (another queue): counted once, the copy changes nothing. */
    sbe_dead_letter(&e, "m-d", "payments", "2026-01-02T00:00:05Z", "Copy", "c",
                    retry);
    sbe_dead_letter(&e, "m-d", "payments", "2026-01-02T00:00:02Z", "At02", "c",
                    retry);
    sbe_ingest(&e);
    sb_failed_message *m = sbe_get(&e, "u-dup");
    assert_int_equal(sb_failed_attempts(m), 4);
    assert_int_equal(sb_failed_first_failure_us(m), at_second(2));
    assert_int_equal(sb_failed_last_failure_us(m), at_second(5));
    assert_string_equal(sb_failed_field(m, "exception_type"), "Five");
    assert_string_equal(sb_failed_field(m, "failed_queue"), "orders");
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *type, *title;
        sb_failed_group(m, i, NULL, &type, &title);
        assert_false(strcmp(type, "Endpoint Address") == 0 &&
                     strcmp(title, "payments") == 0);
    }
    sb_failed_message_free(m);
    assert_int_equal(sbt_count(e.bus, "deadletter"), 0); /* E1 */
    sbe_close(&e); /* the counts agree with the rows */
}

/* "Re-failure of a resolved message restarts its retention clock, of an
 * unresolved one keeps it"; "confirmation resolves and drops the claim";
 * "fail + confirm in one batch ends resolved" (E9, E10, E16). */
static void test_status_and_confirmation(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    const char *retry = ",\"sb-retry-of\":\"u-3\"";
    sbe_dead_letter(&e, "m-3", "orders", "2026-01-02T00:00:01Z", "X", "a",
                    retry);
    sbe_ingest(&e);
    sb_failed_message *m = sbe_get(&e, "u-3");
    int64_t changed = sb_failed_status_changed_us(m);
    sb_failed_message_free(m);
    sbt_sleep_ms(5);
    sbe_dead_letter(&e, "m-3", "orders", "2026-01-02T00:00:02Z", "X", "a",
                    retry);
    sbe_ingest(&e);
    m = sbe_get(&e, "u-3");
    assert_int_equal(sb_failed_status_changed_us(m), changed); /* kept */
    sb_failed_message_free(m);
    /* A retry acknowledgement resolves it; a claim row goes with it. */
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO %sretry_claims VALUES ('u-3', NULL, 1)", e.prefix);
    sbt_exec(e.bus, sql);
    sb_outgoing ack;
    memset(&ack, 0, sizeof ack);
    ack.headers_json = "{\"ServiceControl.Retry.Successful\":\"2026-01-03\","
                       "\"ServiceControl.Retry.UniqueMessageId\":\"u-3\"}";
    sb_error err;
    sbt_ok(sb_publish(e.bus, NULL, "deadletter", &ack, NULL, &err), &err,
           "ack");
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.confirmations, 1);
    m = sbe_get(&e, "u-3");
    assert_int_equal(sb_failed_status(m), SB_FAILED_RESOLVED);
    int64_t resolved_at = sb_failed_status_changed_us(m);
    assert_true(resolved_at > changed);
    sb_failed_message_free(m);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sretry_claims WHERE unique_message_id = "
             "$1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "u-3"), 0);
    sbt_sleep_ms(5);
    /* Fails again: unresolved, and the retention clock restarts. */
    sbe_dead_letter(&e, "m-3", "orders", "2026-01-02T00:00:05Z", "X", "a",
                    retry);
    /* ... and in the same batch a confirmation: it ends resolved. */
    sbt_ok(sb_publish(e.bus, NULL, "deadletter", &ack, NULL, &err), &err,
           "ack");
    sbe_ingest(&e);
    m = sbe_get(&e, "u-3");
    assert_int_equal(sb_failed_status(m), SB_FAILED_RESOLVED);
    assert_int_equal(sb_failed_attempts(m), 3);
    sb_failed_message_free(m);
    sbe_dead_letter(&e, "m-3", "orders", "2026-01-02T00:00:07Z", "X", "a",
                    retry);
    sbe_ingest(&e);
    m = sbe_get(&e, "u-3");
    assert_int_equal(sb_failed_status(m), SB_FAILED_UNRESOLVED);
    assert_true(sb_failed_status_changed_us(m) > resolved_at);
    sb_failed_message_free(m);
    sbe_close(&e);
}

/* `head` (a format with the table prefix's %s) then `where`, run as a
 * one-row query with $1 = `param`. */
static long prefixed_scalar(const sbe_env *e, const char *head,
                            const char *where, const char *param)
{
    char sql[512];
    snprintf(sql, sizeof sql, head, e->prefix);
    size_t n = strlen(sql);
    snprintf(sql + n, sizeof sql - n, "%s", where);
    return sbt_native_scalar(sql, param);
}

/* One dead letter of the row-set test: message `i` failed on queue
 * rs-(i % 7) at second `sec` with exception R<i>-<sec>. */
static void row_set_letter(sbe_env *e, int i, int sec)
{
    char uid[16], queue[16], when[32], type[32], body[64];
    snprintf(uid, sizeof uid, "rs-%d", i);
    snprintf(queue, sizeof queue, "rs-%d", i % 7);
    snprintf(when, sizeof when, "2026-01-02T00:%02d:%02dZ", sec / 60, sec % 60);
    snprintf(type, sizeof type, "R%d-%d", i, sec);
    snprintf(body, sizeof body, "{\"n\":%d,\"s\":%d}", i, sec);
    sbe_dead_letter_as(e, uid, queue, when, type, body);
}

/* "A batch larger than one statement's budget" (E10, E11): the write
 * path binds its rows as parameters, a batch in one statement of the
 * next power of two rows with the rest bound NULL, or in statements as
 * large as the driver's parameter cap allows and a padded last one: 511
 * messages (a 512-row upsert; 2,044 group rows, four a message, in one
 * of 2,048; through ODBC's 2,100 parameters, upserts of 64 rows and
 * group rows of 512). Each row lands whole and in
 * its own place: new rows, then a second batch of later attempts of
 * every third message (updates), and a third replaying the first (no
 * change). */
static void test_large_batch(void **state)
{
    (void)state;
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.ingest_batch_size = 1000;
    sbe_env e;
    sbe_open_opts(&e, &o);
    enum { N = 511 };
    for (int i = 0; i < N; i++)
        row_set_letter(&e, i, 1);
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.rows, N);
    assert_int_equal(s.messages, N);
    assert_int_equal(s.batches, 1);
    int later = 0;
    for (int i = 0; i < N; i += 3, later++)
        row_set_letter(&e, i, 2 + i % 50);
    s = sbe_ingest(&e);
    assert_int_equal(s.messages, later);
    for (int i = 0; i < N; i++)
        row_set_letter(&e, i, 1);
    s = sbe_ingest(&e);
    assert_int_equal(s.rows, N);
    assert_int_equal(s.messages, 0);
    for (int i = 0; i < N; i++) {
        char uid[16], queue[16], type[32], body[64];
        int sec = i % 3 == 0 ? 2 + i % 50 : 1;
        snprintf(uid, sizeof uid, "rs-%d", i);
        snprintf(queue, sizeof queue, "rs-%d", i % 7);
        snprintf(type, sizeof type, "R%d-%d", i, sec);
        snprintf(body, sizeof body, "{\"n\":%d,\"s\":%d}", i, sec);
        sb_failed_message *m = sbe_get(&e, uid);
        assert_int_equal(sb_failed_attempts(m), i % 3 == 0 ? 2 : 1);
        assert_int_equal(sb_failed_first_failure_us(m), at_second(1));
        assert_int_equal(sb_failed_last_failure_us(m), at_second(sec));
        assert_string_equal(sb_failed_field(m, "failed_queue"), queue);
        assert_string_equal(sb_failed_field(m, "exception_type"), type);
        assert_string_equal(sb_failed_body_text(m), body);
        sb_failed_message_free(m);
    }
    /* Every message has the groups of its newest attempt only (E9 step
     * 2), as many as the first message has. */
    static const char groups[] =
        "SELECT count(*) FROM %sfailed_message_groups WHERE ";
    long each = prefixed_scalar(&e, groups, "unique_message_id = $1", "rs-1");
    assert_int_equal(each, 4); /* no host: no "Endpoint Instance" group */
    assert_int_equal(
        prefixed_scalar(&e, groups, "unique_message_id <> $1", "none"),
        each * N);
    assert_int_equal(prefixed_scalar(&e, groups,
                                     "type = 'Exception Type and Stack "
                                     "Trace' AND title LIKE 'R%' AND "
                                     "unique_message_id <> $1",
                                     "none"),
                     N);
    assert_int_equal(prefixed_scalar(&e, groups,
                                     "unique_message_id = $1 AND title "
                                     "LIKE 'R3-5%'",
                                     "rs-3"),
                     1);
    assert_int_equal(sbe_count_mismatches(&e), 0);
    sbe_close(&e);
}

/* E3: a row without a failed queue is kept in failed_imports with the
 * reason, and leaves the dead-letter queue; E6: without sb-retry-of the
 * id is derived from message id + endpoint. */
static void test_failed_import_and_derived_id(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = "x";
    o.payload_len = 1;
    o.headers_json = "{\"sb-message-id\":\"lost\"}";
    sb_error err;
    sbt_ok(sb_publish(e.bus, NULL, "deadletter", &o, NULL, &err), &err, "p");
    sbe_dead_letter(&e, "derived-1", "orders@host", "2026-01-02T00:00:01Z", "X",
                    "a", NULL);
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.failed_imports, 1);
    assert_int_equal(s.messages, 1);
    int64_t n = 0;
    sbt_ok(sb_errors_failed_import_count(e.store, &n, &err), &err, "count");
    assert_int_equal(n, 1);
    assert_int_equal(sbt_count(e.bus, "deadletter"), 0);
    /* E6: a deterministic UUID of message id + processing endpoint. */
    char uid[37];
    sb__deterministic_guid_str("derived-1", "Sales", uid);
    sb_failed_message *m = sbe_get(&e, uid);
    assert_string_equal(sb_failed_field(m, "failed_queue"), "orders@host");
    sb_failed_message_free(m);
    sbe_close(&e);
}

/* SQL Server's keys (errors.h, SB_MS_*): a unique id longer than 400
 * bytes, or ending in a space (which its = ignores), goes to
 * failed_imports there with the reason; a longer failed queue is cut to
 * 200 bytes on a UTF-8 boundary, the headers keeping it whole. The other
 * backends store both as they are. On every backend an id differing in a
 * trailing space or in case finds nothing. */
static void test_key_limits(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    char uid[402], extra[600], queue[251];
    memset(uid, 'k', 401);
    uid[401] = '\0';
    snprintf(extra, sizeof extra, ",\"sb-retry-of\":\"%s\"", uid);
    sbe_dead_letter(&e, "kl-1", "qk", "2026-01-02T00:00:01Z", "X", "a", extra);
    sbe_dead_letter(&e, "kl-2", "qk", "2026-01-02T00:00:01Z", "X", "a",
                    ",\"sb-retry-of\":\"uk-2 \"");
    /* 199 bytes, a two-byte character across the 200th, 49 more. */
    memset(queue, 'q', 250);
    queue[199] = '\xc3';
    queue[200] = '\xa9';
    queue[250] = '\0';
    sbe_dead_letter(&e, "kl-3", queue, "2026-01-02T00:00:01Z", "X", "a",
                    ",\"sb-retry-of\":\"uk-3\"");
    sb_ingest_stats s = sbe_ingest(&e);
    int ms = sbt_is_mssql();
    assert_int_equal(s.failed_imports, ms ? 2 : 0);
    assert_int_equal(s.messages, ms ? 1 : 3);
    sb_failed_message *m = sbe_get(&e, "uk-3");
    const char *fq = sb_failed_field(m, "failed_queue");
    assert_int_equal(strlen(fq), ms ? 199 : 250);
    assert_memory_equal(fq, queue, strlen(fq));
    assert_non_null(strstr(sb_failed_headers(m), queue));
    sb_failed_message_free(m);
    sb_failed_message *x = NULL;
    sb_error err;
    assert_int_equal(sb_errors_get(e.store, "uk-3 ", &x, &err), SB_NOTFOUND);
    assert_int_equal(sb_errors_get(e.store, "UK-3", &x, &err), SB_NOTFOUND);
    sbe_close(&e);
}

/* E7 through ingestion: a body over the cap is served whole from the body
 * store with a UTF-8-safe inline prefix; binary has no inline text. */
static void test_body_placement(void **state)
{
    (void)state;
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.max_body_size = 10;
    sbe_env e;
    sbe_open_opts(&e, &o);
    sbe_dead_letter(&e, "b-1", "orders", "2026-01-02T00:00:01Z", "X",
                    "0123456789", ",\"sb-retry-of\":\"ub-1\"");
    sbe_dead_letter(&e, "b-2", "orders", "2026-01-02T00:00:01Z", "X",
                    "012345678\xc3\xa4", ",\"sb-retry-of\":\"ub-2\"");
    sbe_ingest(&e);
    sb_failed_message *m = sbe_get(&e, "ub-1");
    assert_false(sb_failed_body_stored_externally(m));
    assert_string_equal(sb_failed_body_text(m), "0123456789");
    sb_failed_message_free(m);
    m = sbe_get(&e, "ub-2");
    assert_true(sb_failed_body_stored_externally(m));
    assert_string_equal(sb_failed_body_text(m), "012345678");
    size_t len = 0;
    const char *body = sb_failed_body(m, &len);
    assert_int_equal(len, 11);
    assert_memory_equal(body, "012345678\xc3\xa4", 11);
    sb_failed_message_free(m);
    sbe_close(&e);
}

typedef struct ingester {
    sb_bus *bus;
    int rc;
    sb_ingest_stats stats;
} ingester;

static void *ingest_main(void *arg)
{
    ingester *g = arg;
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.ingest_batch_size = 7;
    sb_errors *store = NULL;
    sb_error err;
    g->stats.size = sizeof g->stats;
    g->rc = sb_errors_open(g->bus, &o, &store, &err);
    if (g->rc == SB_OK)
        g->rc = sb_errors_ingest(store, &g->stats, &err);
    sb_errors_close(store);
    return NULL;
}

/* "Two concurrent ingesters on the same messages neither collide nor lose
 * attempts and leave only the newest attempt's groups" (E8-E10); "an
 * endpoint recorded concurrently is inserted once and keeps its monitored
 * flag" (E9 step 3). Every attempt is dead-lettered twice, so the two
 * ingesters also meet copies of one attempt, and count it once (E10,
 * issue 19). */
static void test_concurrent_ingesters(void **state)
{
    (void)state;
    enum { MESSAGES = 12, ATTEMPTS = 6, COPIES = 2 };
    sbe_env e;
    sbe_open(&e);
    /* Attempt k of message i fails on queue q<k>: the newest (k = 5) must
     * own the Endpoint Address group. Interleaved so both ingesters see
     * attempts of every message; the copies follow in the other order,
     * so the newest attempt's copies meet it in flight, and the older
     * ones come after newer attempts. */
    for (int c = 0; c < COPIES * ATTEMPTS; c++)
        for (int i = 0; i < MESSAGES; i++) {
            int k = c < ATTEMPTS ? c : COPIES * ATTEMPTS - 1 - c;
            char uid[16], queue[16], when[64];
            snprintf(uid, sizeof uid, "uc-%d", i);
            snprintf(queue, sizeof queue, "q%d", k);
            snprintf(when, sizeof when, "2026-01-02T00:00:%02dZ", 10 + k);
            sbe_dead_letter_as(&e, uid, queue, when, "X", "a");
        }
    ingester g[2] = {{e.bus, 0, {0}}, {e.bus, 0, {0}}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, ingest_main, &g[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(g[0].rc, SB_OK);
    assert_int_equal(g[1].rc, SB_OK);
    assert_int_equal(g[0].stats.rows + g[1].stats.rows,
                     MESSAGES * ATTEMPTS * COPIES);
    assert_int_equal(sbt_count(e.bus, "deadletter"), 0);
    for (int i = 0; i < MESSAGES; i++) {
        char uid[32];
        snprintf(uid, sizeof uid, "uc-%d", i);
        sb_failed_message *m = sbe_get(&e, uid);
        assert_int_equal(sb_failed_attempts(m), ATTEMPTS);
        assert_string_equal(sb_failed_field(m, "failed_queue"), "q5");
        int addresses = 0;
        for (size_t k = 0; k < sb_failed_group_count(m); k++) {
            const char *type, *title;
            sb_failed_group(m, k, NULL, &type, &title);
            if (strcmp(type, "Endpoint Address") == 0) {
                addresses++;
                assert_string_equal(title, "q5");
            }
        }
        assert_int_equal(addresses, 1);
        sb_failed_message_free(m);
    }
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sknown_endpoints WHERE name = $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "Sales"), 1);
    /* The user's flag survives later ingestion. */
    snprintf(sql, sizeof sql, "UPDATE %sknown_endpoints SET monitored = 1",
             e.prefix);
    sbt_exec(e.bus, sql);
    sbe_dead_letter(&e, "c-0", "q9", "2026-01-02T00:01:00Z", "X", "a",
                    ",\"sb-retry-of\":\"uc-0\"");
    sbe_ingest(&e);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sknown_endpoints WHERE name = $1 AND "
             "monitored = 1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "Sales"), 1);
    sbe_close(&e);
}

/* "Ingestion killed mid-batch loses and duplicates nothing" (E1): a child
 * ingests many small batches and is SIGKILLed; what it committed left the
 * queue, what it did not is still there, and a second pass ends with every
 * message stored once. */
static void test_killed_ingester(void **state)
{
    (void)state;
    enum { N = 400 };
    sbe_env e;
    sbe_open_single_threaded(&e);
    for (int i = 0; i < N; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "uk-%d", i);
        sbe_dead_letter_as(&e, uid, "orders", "2026-01-02T00:00:01Z", "X", "a");
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", e.prefix);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        sb_bus *cb = sbt_open(prefix, NULL);
        sb_errors_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.ingest_batch_size = 3;
        sb_errors *store = NULL;
        if (sb_errors_open(cb, &o, &store, NULL) != SB_OK)
            _exit(2);
        sb_errors_ingest(store, NULL, NULL);
        _exit(0);
    }
    /* Kill it about half-way, inside whichever batch is open then. */
    long left = N;
    for (int i = 0; i < 5000 && left > N / 2; i++) {
        sbt_sleep_ms(2);
        left = sbt_count(e.bus, "deadletter");
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_messages WHERE "
             "unique_message_id <> $1",
             e.prefix);
    long stored = sbt_native_scalar(sql, "");
    left = sbt_count(e.bus, "deadletter");
    printf("killed ingester: %ld stored, %ld left\n", stored, left);
    assert_int_equal(stored + left, N); /* nothing lost, nothing twice */
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.rows, left);
    assert_int_equal(sbt_native_scalar(sql, ""), N);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_messages WHERE "
             "number_of_processing_attempts <> 1 AND unique_message_id <> $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, ""), 0);
    sbe_close(&e);
}

typedef struct flaky {
    atomic_int fail; /* fail while set */
    atomic_int runs;
} flaky;

static int flaky_handler(sb_delivery *d, void *user)
{
    flaky *f = user;
    atomic_fetch_add(&f->runs, 1);
    if (atomic_load(&f->fail)) {
        sb_delivery_fail(d, "Shop.OutOfStock", "no stock", NULL);
        return SB_ERROR;
    }
    return SB_OK;
}

/* Run a worker on `queue` until it is idle. */
static void drain(sbe_env *e, const char *queue, flaky *f)
{
    sb_worker_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.queue = queue;
    o.handler = flaky_handler;
    o.user = f;
    o.max_attempts = 1;
    sb_worker *w = NULL;
    sb_error err;
    sbt_ok(sb_worker_start(e->bus, &o, &w, &err), &err, "worker");
    assert_int_equal(sb_worker_wait_idle(w, 20000), SB_OK);
    sb_worker_free(w);
}

/* The unique id ingestion derives for the only dead-letter row (E6). */
static void dead_letter_uid(sbe_env *e, char out[37])
{
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(e->bus, NULL, &d, &n, &err), &err, "dlq list");
    assert_int_equal(n, 1);
    sb__deterministic_guid_str(sb_msg_header(d[0], "sb-message-id"),
                               sb_msg_header(d[0], "sb-processing-endpoint"),
                               out);
    sb_msg_free_array(d, n);
}

/* The full round trip through a real worker (E14-E16): fail ->
 * dead-letter -> ingest -> retry -> fails again -> same row, attempts + 1
 * -> retry -> the worker succeeds -> the ack's confirmation is ingested ->
 * resolved, claim gone. */
static void test_retry_round_trip(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    flaky f;
    atomic_init(&f.fail, 1);
    atomic_init(&f.runs, 0);
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = "{\"order\":7}";
    o.payload_len = strlen(o.payload);
    o.headers_json = "{\"trace\":\"abc\"}";
    sb_error err;
    sbt_ok(sb_publish(e.bus, NULL, "shop", &o, NULL, &err), &err, "publish");
    drain(&e, "shop", &f);
    char uid[37];
    dead_letter_uid(&e, uid);
    sbe_ingest(&e);
    int64_t attempts = 0;
    assert_int_equal(sbe_status(&e, uid, &attempts), SB_FAILED_UNRESOLVED);
    assert_int_equal(attempts, 1);

    /* Retry by queue; a second retry finds nothing unresolved. */
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.failed_queue = "shop";
    int64_t n = 0;
    sbt_ok(sb_errors_retry(e.store, &sel, &n, &err), &err, "retry");
    assert_int_equal(n, 1);
    assert_int_equal(sbe_status(&e, uid, NULL), SB_FAILED_RETRY_ISSUED);
    sbt_ok(sb_errors_retry(e.store, &sel, &n, &err), &err, "retry again");
    assert_int_equal(n, 0);
    assert_int_equal(sbt_count(e.bus, "shop"), 1);

    /* It fails again: the same row, one more attempt, no claim left. */
    drain(&e, "shop", &f);
    sbe_ingest(&e);
    assert_int_equal(sbe_status(&e, uid, &attempts), SB_FAILED_UNRESOLVED);
    assert_int_equal(attempts, 2);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sretry_claims WHERE unique_message_id = "
             "$1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, uid), 0);

    /* Retried by id, and this time the worker succeeds. */
    const char *ids[1] = {uid};
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.ids = ids;
    sel.n_ids = 1;
    sbt_ok(sb_errors_retry(e.store, &sel, &n, &err), &err, "retry by id");
    assert_int_equal(n, 1);
    assert_int_equal(sbt_native_scalar(sql, uid), 1);
    atomic_store(&f.fail, 0);
    drain(&e, "shop", &f);
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.confirmations, 1);
    assert_int_equal(sbe_status(&e, uid, &attempts), SB_FAILED_RESOLVED);
    assert_int_equal(attempts, 2);
    assert_int_equal(sbt_native_scalar(sql, uid), 0);
    assert_int_equal(atomic_load(&f.runs), 3);
    sbe_close(&e);
}

/* E14: exactly one selector, named in the error. */
static void test_retry_selection_rules(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sb_error err;
    assert_int_equal(sb_errors_retry(e.store, &sel, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "selection");
    sel.all = 1;
    sel.failed_queue = "q";
    assert_int_equal(sb_errors_retry(e.store, &sel, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "selection");
    sel.failed_queue = NULL;
    int64_t n = -1;
    sbt_ok(sb_errors_retry(e.store, &sel, &n, &err), &err, "retry all");
    assert_int_equal(n, 0);
    sbe_close(&e);
}

/* E13: group views per classifier with counts and failure windows, newest
 * failure first; comments set, shown and deleted; bad input named. */
static void test_group_views(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    /* Three messages on queue a (two with exception X), one on b. */
    sbe_dead_letter(&e, "g-1", "qa", "2026-01-02T00:00:01Z", "X", "1",
                    ",\"sb-retry-of\":\"ug-1\"");
    sbe_dead_letter(&e, "g-2", "qa", "2026-01-02T00:00:05Z", "X", "2",
                    ",\"sb-retry-of\":\"ug-2\"");
    sbe_dead_letter(&e, "g-3", "qa", "2026-01-02T00:00:03Z", "Y", "3",
                    ",\"sb-retry-of\":\"ug-3\"");
    sbe_dead_letter(&e, "g-4", "qb", "2026-01-02T00:00:09Z", "Y", "4",
                    ",\"sb-retry-of\":\"ug-4\"");
    sbe_ingest(&e);
    sb_failure_group **g = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_groups(e.store, "Endpoint Address", SB_FAILED_UNRESOLVED,
                            &g, &n, &err),
           &err, "groups");
    assert_int_equal(n, 2);
    assert_string_equal(g[0]->title, "qb"); /* newest failure first */
    assert_int_equal(g[0]->count, 1);
    assert_string_equal(g[1]->title, "qa");
    assert_int_equal(g[1]->count, 3);
    assert_int_equal(g[1]->first_failure_us, 1767312001000000LL);
    assert_int_equal(g[1]->last_failure_us, 1767312005000000LL);
    char qa[37];
    memcpy(qa, g[1]->id, sizeof qa);
    sb_free(g);
    /* The default classifier: exception type and first frame. */
    sbt_ok(sb_errors_groups(e.store, NULL, SB_FAILED_UNRESOLVED, &g, &n, &err),
           &err, "exception groups");
    assert_int_equal(n, 2);
    assert_string_equal(g[0]->type, "Exception Type and Stack Trace");
    assert_int_equal(g[0]->count + g[1]->count, 4);
    sb_free(g);
    /* Nothing is archived. */
    sbt_ok(sb_errors_groups(e.store, NULL, SB_FAILED_ARCHIVED, &g, &n, &err),
           &err, "archived groups");
    assert_int_equal(n, 0);
    sb_free(g);
    /* Comments. */
    sbt_ok(sb_errors_group_comment(e.store, qa, "looking into it", &err), &err,
           "comment");
    sbt_ok(sb_errors_groups(e.store, "Endpoint Address", SB_FAILED_UNRESOLVED,
                            &g, &n, &err),
           &err, "groups");
    assert_string_equal(g[1]->comment, "looking into it");
    assert_string_equal(g[0]->comment, "");
    sb_free(g);
    sbt_ok(sb_errors_group_comment(e.store, qa, NULL, &err), &err, "delete");
    sbt_ok(sb_errors_groups(e.store, "Endpoint Address", SB_FAILED_UNRESOLVED,
                            &g, &n, &err),
           &err, "groups");
    assert_string_equal(g[1]->comment, "");
    sb_free(g);
    char big[SB_MAX_COMMENT + 2];
    memset(big, 'c', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(sb_errors_group_comment(e.store, qa, big, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "comment");
    assert_int_equal(sb_errors_group_comment(e.store, "nope", "x", &err),
                     SB_INVALID);
    assert_string_equal(err.field, "group_id");
    assert_int_equal(sb_errors_groups(e.store, NULL, 9, &g, &n, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "status");
    /* issue 20.9, E13: a classifier that is none of the five is refused,
     * naming them, not answered with no groups. */
    g = (sb_failure_group **)&n; /* must be reset to NULL */
    n = 7;
    assert_int_equal(
        sb_errors_groups(e.store, "bogus", SB_FAILED_UNRESOLVED, &g, &n, &err),
        SB_INVALID);
    assert_null(g);
    assert_int_equal(n, 0);
    assert_string_equal(err.field, "classifier");
    static const char *const names[] = {"Exception Type and Stack Trace",
                                        "Message Type", "Endpoint Address",
                                        "Endpoint Instance", "Endpoint Name"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        assert_non_null(strstr(err.message, names[i]));
    assert_non_null(strstr(err.message, "bogus"));
    assert_int_equal(sb_errors_groups(e.store, "message type",
                                      SB_FAILED_UNRESOLVED, &g, &n, &err),
                     SB_INVALID);
    sbe_close(&e);
}

/* The "Endpoint Address" group of `queue` in `status`: its count and
 * window, or count -1 when the view does not list it. */
static sb_failure_group address_group(sbe_env *e, const char *queue, int status)
{
    sb_failure_group **g = NULL, out;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_groups(e->store, "Endpoint Address", status, &g, &n, &err),
           &err, "groups");
    memset(&out, 0, sizeof out);
    out.count = -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(g[i]->title, queue) == 0)
            out = *g[i];
    sb_free(g);
    return out;
}

/* The list's total for one filter, and the same count made by the
 * database from the rows themselves. */
static void check_total(sbe_env *e, const sb_failed_query *q, const char *where,
                        const char *value)
{
    int64_t total = -1;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_list(e->store, q, &s, &n, &total, &err), &err, "list");
    sb_free(s);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %sfailed_messages WHERE %s",
             e->prefix, where);
    assert_int_equal(total, sbt_native_scalar(sql, value));
}

/* E13, E23: counts kept at write time. A group's window narrows when the
 * message at its end leaves (archive) and widens again when it comes back
 * (a new failure); a stale window is computed by the reader; every list
 * total with at most one value filter comes from the counts and equals
 * the rows' own count; a store whose counts are missing rebuilds them when
 * it opens. */
static void test_counts(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_dead_letter_as(&e, "uc-1", "qa", "2026-01-02T00:00:01Z", "X", "1");
    sbe_dead_letter_as(&e, "uc-2", "qa", "2026-01-02T00:00:05Z", "X", "2");
    sbe_dead_letter_as(&e, "uc-3", "qa", "2026-01-02T00:00:03Z", "Y", "3");
    sbe_dead_letter_as(&e, "uc-4", "qb", "2026-01-02T00:00:09Z", "Y", "4");
    sbe_ingest(&e);
    const int64_t t1 = 1767312001000000LL, t3 = 1767312003000000LL,
                  t5 = 1767312005000000LL, t7 = 1767312007000000LL;
    sb_failure_group g = address_group(&e, "qa", SB_FAILED_UNRESOLVED);
    assert_int_equal(g.count, 3);
    assert_int_equal(g.first_failure_us, t1);
    assert_int_equal(g.last_failure_us, t5);

    /* The newest of qa is archived: qa's window ends at the next one. */
    const char *ids[] = {"uc-2"};
    sb_failed_selection sel = {0};
    sel.ids = ids;
    sel.n_ids = 1;
    int64_t changed = 0;
    sb_error err;
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive");
    assert_int_equal(changed, 1);
    g = address_group(&e, "qa", SB_FAILED_UNRESOLVED);
    assert_int_equal(g.count, 2);
    assert_int_equal(g.first_failure_us, t1);
    assert_int_equal(g.last_failure_us, t3);
    g = address_group(&e, "qa", SB_FAILED_ARCHIVED);
    assert_int_equal(g.count, 1);
    assert_int_equal(g.first_failure_us, t5);
    assert_int_equal(g.last_failure_us, t5);
    assert_int_equal(sbe_count_mismatches(&e), 0);

    /* A stale window (as a concurrent change leaves it) is read right. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE %sfailed_counts SET stale = 1, first_us = 0, last_us = "
             "0 WHERE kind = 4 AND title = 'qa' AND status = 0",
             e.prefix);
    sbt_exec(e.bus, sql);
    g = address_group(&e, "qa", SB_FAILED_UNRESOLVED);
    assert_int_equal(g.count, 2);
    assert_int_equal(g.first_failure_us, t1);
    assert_int_equal(g.last_failure_us, t3);

    /* It fails again: unresolved, and the window widens to the new
     * failure; the next writer has refreshed the stale row. */
    sbe_dead_letter_as(&e, "uc-2", "qa", "2026-01-02T00:00:07Z", "X", "2");
    sbe_ingest(&e);
    g = address_group(&e, "qa", SB_FAILED_UNRESOLVED);
    assert_int_equal(g.count, 3);
    assert_int_equal(g.first_failure_us, t1);
    assert_int_equal(g.last_failure_us, t7);
    assert_int_equal(address_group(&e, "qa", SB_FAILED_ARCHIVED).count, -1);
    assert_int_equal(sbe_count_mismatches(&e), 0);

    /* Totals, from the counts, against the rows' own count. */
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive again");
    sb_failed_query q = {0};
    q.status = -1;
    check_total(&e, &q, "length($1) > 0", "x");
    q.status = SB_FAILED_UNRESOLVED;
    check_total(&e, &q, "status = 0 AND length($1) > 0", "x");
    q.failed_queue = "qa";
    check_total(&e, &q, "status = 0 AND failed_queue = $1", "qa");
    q.status = -1;
    check_total(&e, &q, "failed_queue = $1", "qa");
    q.failed_queue = NULL;
    q.endpoint = "Sales";
    check_total(&e, &q, "processing_endpoint = $1", "Sales");
    q.endpoint = NULL;
    sb_failed_message *m = sbe_get(&e, "uc-1");
    char type[256];
    const char *mt = sb_failed_field(m, "message_type");
    snprintf(type, sizeof type, "%s", mt ? mt : "none");
    sb_failed_message_free(m);
    q.message_type = type;
    check_total(&e, &q, "message_type = $1", type);
    q.message_type = NULL;
    g = address_group(&e, "qa", SB_FAILED_UNRESOLVED);
    q.group_id = g.id;
    q.status = SB_FAILED_UNRESOLVED;
    check_total(&e, &q, "status = 0 AND failed_queue = $1", "qa");
    /* Two value filters: counted from the rows. */
    q.failed_queue = "qa";
    check_total(&e, &q, "status = 0 AND failed_queue = $1", "qa");

    /* A store without its counts (made before they existed) rebuilds them
     * when it opens. */
    snprintf(sql, sizeof sql, "DELETE FROM %sfailed_counts", e.prefix);
    sbt_exec(e.bus, sql);
    assert_true(sbe_count_mismatches(&e) > 0);
    sb_errors_close(e.store);
    sbt_ok(sb_errors_open(e.bus, NULL, &e.store, &err), &err, "reopen");
    assert_int_equal(sbe_count_mismatches(&e), 0);
    assert_int_equal(address_group(&e, "qa", SB_FAILED_UNRESOLVED).count, 2);
    sbe_close(&e);
}

/* E21: resolved and archived messages older than the retention period go
 * with their groups, bodies and orphaned comments; unresolved ones and
 * recent ones stay; the period is checked. */
static void test_retention(void **state)
{
    (void)state;
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.max_body_size = 4; /* bodies go to the body store */
    sbe_env e;
    sbe_open_opts(&e, &o);
    for (int i = 1; i <= 3; i++) {
        char uid[16], queue[16];
        snprintf(uid, sizeof uid, "ur-%d", i);
        snprintf(queue, sizeof queue, "qr%d", i);
        sbe_dead_letter_as(&e, uid, queue, "2026-01-02T00:00:01Z", "X",
                           "a long body");
    }
    sbe_ingest(&e);
    /* ur-1 resolved long ago, ur-2 archived long ago, ur-3 unresolved long
     * ago: only the first two may go. The comment is on ur-2's own queue
     * group, which then has no message left. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE %sfailed_messages SET status = CASE unique_message_id "
             "WHEN 'ur-1' THEN 2 WHEN 'ur-2' THEN 3 ELSE 0 END, "
             "status_changed_at = status_changed_at - 7200000000",
             e.prefix);
    sbt_exec(e.bus, sql);
    sb_failure_group **g = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_groups(e.store, "Endpoint Address", SB_FAILED_ARCHIVED, &g,
                            &n, &err),
           &err, "groups");
    assert_int_equal(n, 1);
    sbt_ok(sb_errors_group_comment(e.store, g[0]->id, "gone soon", &err), &err,
           "comment");
    sb_free(g);
    int64_t deleted = -1;
    assert_int_equal(sb_errors_expire(e.store, 60000, &deleted, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "retention_ms");
    sbt_ok(sb_errors_expire(e.store, 3 * 3600 * 1000LL, &deleted, &err), &err,
           "expire 3h");
    assert_int_equal(deleted, 0); /* not old enough yet */
    sbt_ok(sb_errors_expire(e.store, 3600 * 1000LL, &deleted, &err), &err,
           "expire 1h");
    assert_int_equal(deleted, 2);
    sb_failed_message *m = NULL;
    assert_int_equal(sb_errors_get(e.store, "ur-1", &m, &err), SB_NOTFOUND);
    assert_int_equal(sb_errors_get(e.store, "ur-2", &m, &err), SB_NOTFOUND);
    m = sbe_get(&e, "ur-3");
    size_t len = 0;
    sb_failed_body(m, &len);
    assert_int_equal(len, 11);
    sb_failed_message_free(m);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %smessage_bodies WHERE unique_message_id "
             "<> $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "ur-3"), 0);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_message_groups WHERE "
             "unique_message_id <> $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "ur-3"), 0);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sgroup_comments WHERE comment <> $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, ""), 0);
    sbe_close(&e);
}

/* E19: archive a whole group (in batches that commit), see it in the
 * archived group view, unarchive a selection by id; retry leaves archived
 * messages alone. */
static void test_archive(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    for (int i = 0; i < 5; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "ua-%d", i);
        sbe_dead_letter_as(&e, uid, i < 3 ? "qa" : "qz", "2026-01-02T00:00:01Z",
                           "X", "b");
    }
    sbe_ingest(&e);
    sb_failure_group **g = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_groups(e.store, "Endpoint Address", SB_FAILED_UNRESOLVED,
                            &g, &n, &err),
           &err, "groups");
    char qa[37];
    memcpy(qa, strcmp(g[0]->title, "qa") == 0 ? g[0]->id : g[1]->id, sizeof qa);
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.group_id = qa;
    int64_t changed = 0;
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive group");
    assert_int_equal(changed, 3);
    sb_free(g);
    sbt_ok(sb_errors_groups(e.store, "Endpoint Address", SB_FAILED_ARCHIVED, &g,
                            &n, &err),
           &err, "archived groups");
    assert_int_equal(n, 1);
    assert_string_equal(g[0]->title, "qa");
    assert_int_equal(g[0]->count, 3);
    sb_free(g);
    /* Archiving again changes nothing; retry of all skips archived. */
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err, "again");
    assert_int_equal(changed, 0);
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.all = 1;
    int64_t retried = 0;
    sbt_ok(sb_errors_retry(e.store, &sel, &retried, &err), &err, "retry all");
    assert_int_equal(retried, 2);
    assert_int_equal(sbe_status(&e, "ua-0", NULL), SB_FAILED_ARCHIVED);
    /* Unarchive two by id. */
    const char *ids[2] = {"ua-0", "ua-1"};
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.ids = ids;
    sel.n_ids = 2;
    sbt_ok(sb_errors_archive(e.store, &sel, 0, &changed, &err), &err,
           "unarchive");
    assert_int_equal(changed, 2);
    assert_int_equal(sbe_status(&e, "ua-0", NULL), SB_FAILED_UNRESOLVED);
    assert_int_equal(sbe_status(&e, "ua-2", NULL), SB_FAILED_ARCHIVED);
    sbe_close(&e);
}

static int found(sb_failed_summary *const *s, size_t n, const char *uid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->unique_id, uid) == 0)
            return 1;
    return 0;
}

/* E22: words ORed over message type, headers and body text; '.' breaks
 * words (Order finds Shop.PlaceOrder's parts, PlaceOrder finds it) and the
 * words of one query word are a phrase; case folds beyond ASCII; a later
 * attempt's data replaces what is searchable; bad queries named. */
static void test_search(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_dead_letter(&e, "s-1", "qs", "2026-01-02T00:00:01Z", "X",
                    "{\"sku\":\"blue-widget\"}", ",\"sb-retry-of\":\"us-1\"");
    sbe_dead_letter(&e, "s-2", "qs", "2026-01-02T00:00:01Z", "X",
                    "{\"sku\":\"red-gadget\"}", ",\"sb-retry-of\":\"us-2\"");
    sbe_ingest(&e);
    if (!sbe_search_available(&e)) {
        sbe_close(&e);
        return;
    }
    sbe_await_search(&e);
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    /* The message type is "Shop.PlaceOrder" (see dead_letter). */
    sbt_ok(sb_errors_search(e.store, "PlaceOrder", 10, &s, &n, &err), &err,
           "search type");
    assert_int_equal(n, 2);
    assert_string_equal(s[0]->message_type, "Shop.PlaceOrder");
    sb_free(s);
    sbt_ok(sb_errors_search(e.store, "widget", 10, &s, &n, &err), &err,
           "search body");
    assert_int_equal(n, 1);
    assert_true(found(s, n, "us-1"));
    sb_free(s);
    sbt_ok(sb_errors_search(e.store, "widget gadget", 10, &s, &n, &err), &err,
           "OR");
    assert_int_equal(n, 2);
    sb_free(s);
    sbt_ok(sb_errors_search(e.store, "nothing-like-this", 10, &s, &n, &err),
           &err, "no hit");
    assert_int_equal(n, 0);
    sb_free(s);
    /* A newer attempt replaces the searchable body. */
    sbe_dead_letter(&e, "s-1", "qs", "2026-01-02T00:00:09Z", "X",
                    "{\"sku\":\"green-sprocket\"}",
                    ",\"sb-retry-of\":\"us-1\"");
    sbe_ingest(&e);
    sbe_await_search(&e);
    sbt_ok(sb_errors_search(e.store, "widget", 10, &s, &n, &err), &err,
           "old body");
    assert_int_equal(n, 0);
    sb_free(s);
    sbt_ok(sb_errors_search(e.store, "sprocket", 10, &s, &n, &err), &err,
           "new body");
    assert_int_equal(n, 1);
    sb_free(s);
    /* The words of one query word are a phrase, in order. */
    sbt_ok(sb_errors_search(e.store, "green.sprocket", 10, &s, &n, &err), &err,
           "phrase");
    assert_int_equal(n, 1);
    sb_free(s);
    sbt_ok(sb_errors_search(e.store, "sprocket.green", 10, &s, &n, &err), &err,
           "phrase order");
    assert_int_equal(n, 0);
    sb_free(s);
    /* Case folds beyond ASCII; punctuation beyond ASCII breaks words. */
    sbe_dead_letter(&e, "s-3", "qs", "2026-01-02T00:00:01Z", "X",
                    "{\"note\":\"\xc2\xab\xc3\x84RGER\xc2\xbb\"}",
                    ",\"sb-retry-of\":\"us-3\"");
    sbe_ingest(&e);
    sbe_await_search(&e);
    sbt_ok(sb_errors_search(e.store, "\xc3\xa4rger", 10, &s, &n, &err), &err,
           "non-ASCII case");
    assert_int_equal(n, 1);
    assert_true(found(s, n, "us-3"));
    sb_free(s);
    assert_int_equal(sb_errors_search(e.store, "  ", 10, &s, &n, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "query");
    assert_int_equal(sb_errors_search(e.store, " . !? ", 10, &s, &n, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "query");
    assert_int_equal(sb_errors_search(e.store, "x", 0, &s, &n, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "limit");
    /* Quotes and operators are words, never syntax. */
    sbt_ok(sb_errors_search(e.store, "\"a\" -b OR (c", 10, &s, &n, &err), &err,
           "odd query");
    sb_free(s);
    sbe_close(&e);
}

/* E22: a message is found by a word of its body, of its exception message
 * and of any header's value as soon as the ingestion pass that stored it
 * has returned (SQLite and PostgreSQL index in that transaction; SQL
 * Server's full-text index follows within the wait of sbe_await_search). */
static void test_search_fields(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    const char *headers =
        "{\"sb-message-id\":\"f-1\",\"sb-failed-queue\":\"qf\","
        "\"sb-exception-type\":\"Shop.Failed\","
        "\"sb-exception-message\":\"warehouse quokka unreachable\","
        "\"x-tenant\":\"contoso-narwhal\"}";
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = "{\"note\":\"pangolin\"}";
    o.payload_len = strlen(o.payload);
    o.headers_json = headers;
    sb_error err;
    sbt_ok(sb_publish(e.bus, NULL, "deadletter", &o, NULL, &err), &err,
           "publish");
    sbe_dead_letter(&e, "f-2", "qf", "2026-01-02T00:00:01Z", "X", "{}", NULL);
    sbe_ingest(&e);
    if (!sbe_search_available(&e)) {
        sbe_close(&e);
        return;
    }
    sbe_await_search(&e);
    const char *words[] = {"pangolin", "quokka", "narwhal", "contoso-narwhal"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        sb_failed_summary **s = NULL;
        size_t n = 0;
        sbt_ok(sb_errors_search(e.store, words[i], 10, &s, &n, &err), &err,
               words[i]);
        assert_int_equal(n, 1);
        assert_string_equal(s[0]->message_id, "f-1");
        sb_free(s);
    }
    sbe_close(&e);
}

/* A search of `word` with `limit` returns exactly the unique ids
 * `want` (NULL-terminated), in that order. */
static void search_is(sbe_env *e, const char *word, size_t limit,
                      const char *const *want)
{
    sb_failed_summary **s = NULL;
    size_t n = 0, w = 0;
    sb_error err;
    sbt_ok(sb_errors_search(e->store, word, limit, &s, &n, &err), &err, word);
    while (want[w] != NULL)
        w++;
    assert_int_equal(n, w);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(s[i]->unique_id, want[i]);
    sb_free(s);
}

/* ALTER TABLE <prefix>failed_messages `change`, on a native connection. */
static void alter_failed_messages(const sbe_env *e, const char *change)
{
    char sql[160];
    snprintf(sql, sizeof sql, "ALTER TABLE %sfailed_messages %s", e->prefix,
             change);
    sbt_native_exec(sql);
}

/* The toast_tuple_target of the store's failed_messages (0: none set). */
static long toast_target(const sbe_env *e)
{
    return sbt_native_scalar(
        "SELECT coalesce((SELECT substr(o, 20)::int8 FROM pg_class c, "
        "unnest(c.reloptions) o WHERE c.oid = ($1 || 'failed_messages')::"
        "regclass AND o LIKE 'toast\\_tuple\\_target=%'), 0)",
        e->prefix);
}

static void reopen(sbe_env *e)
{
    sb_errors *again = NULL;
    sb_error err;
    sbt_ok(sb_errors_open(e->bus, NULL, &again, &err), &err, "open again");
    sb_errors_close(again);
}

/* E22 on PostgreSQL: the vector's storage is the default (kept in line
 * at any size, STORAGE MAIN, it halved ingestion) and the table's
 * toast_tuple_target is three rows a page, so a ~2.6 KB row keeps its
 * vector. An open sets a store made with MAIN back and gives a store
 * without a target the store's; a target set by hand is kept. */
static void pg_layout_set_at_open(sbe_env *e)
{
    alter_failed_messages(e, "ALTER COLUMN search SET STORAGE MAIN");
    alter_failed_messages(e, "RESET (toast_tuple_target)");
    assert_int_equal(toast_target(e), 0);
    reopen(e);
    assert_int_equal(
        sbt_native_scalar("SELECT count(*) FROM pg_attribute WHERE "
                          "attrelid = ($1 || 'failed_messages')::"
                          "regclass AND attname = 'search' AND "
                          "attstorage = 'x'",
                          e->prefix),
        1);
    assert_int_equal(toast_target(e), 2712);
    alter_failed_messages(e, "SET (toast_tuple_target = 4000)");
    reopen(e);
    assert_int_equal(toast_target(e), 4000);
}

/* E22: best rank first, then newest first among equals, whichever way the
 * store finds them: few ties (read by id), many ties (SQLite: newest
 * first from the time index), and many ties that are all old (SQLite: the
 * time index gives up, and they are read by id). Every message has the
 * same shape, so equal words rank exactly equal. */
static void test_search_order(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    char uid[32], when[32];
    /* Three with "zeta" twice (the best), 40 with it once, in an order
     * unlike their times: tie i failed at second 100 + (i * 17) % 40. */
    for (int i = 1; i <= 3; i++) {
        snprintf(uid, sizeof uid, "zb-%03d", i);
        snprintf(when, sizeof when, "2026-01-02T00:00:%02dZ", 10 * i);
        sbe_dead_letter_as(&e, uid, "qs", when, "X", "{\"w\":\"zeta zeta\"}");
    }
    for (int i = 0; i < 40; i++) {
        snprintf(uid, sizeof uid, "zt-%03d", i);
        int sec = 100 + (i * 17) % 40;
        snprintf(when, sizeof when, "2026-01-02T00:%02d:%02dZ", sec / 60,
                 sec % 60);
        sbe_dead_letter_as(&e, uid, "qs", when, "X", "{\"w\":\"zeta xxxx\"}");
    }
    /* Ten "omega", older than everything else, and 160 newer without
     * either word. */
    for (int i = 0; i < 10; i++) {
        snprintf(uid, sizeof uid, "om-%03d", i);
        snprintf(when, sizeof when, "2026-01-01T00:00:%02dZ", (i * 7) % 10);
        sbe_dead_letter_as(&e, uid, "qs", when, "X", "{\"w\":\"omega xxx\"}");
    }
    for (int i = 0; i < 160; i++) {
        snprintf(uid, sizeof uid, "zf-%03d", i);
        snprintf(when, sizeof when, "2026-01-02T01:%02d:%02dZ", i / 60, i % 60);
        sbe_dead_letter_as(&e, uid, "qs", when, "X", "{\"w\":\"yyyy xxxx\"}");
    }
    sbe_ingest(&e);
    if (!sbe_search_available(&e)) {
        sbe_close(&e);
        return;
    }
    sbe_await_search(&e);
    /* The best three: equal, so newest first. */
    static const char *const top3[] = {"zb-003", "zb-002", "zb-001", NULL};
    search_is(&e, "zeta", 3, top3);
    /* Then the newest ties: zt-i failed at second 100 + (i * 17) % 40,
     * so zt-007 (139), zt-014 (138), zt-021, zt-028, zt-035. */
    static const char *const top8[] = {"zb-003", "zb-002", "zb-001",
                                       "zt-007", "zt-014", "zt-021",
                                       "zt-028", "zt-035", NULL};
    search_is(&e, "zeta", 8, top8);
    /* More asked for than there are: all 43, the ties newest first. */
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_search(e.store, "zeta", 50, &s, &n, &err), &err, "all");
    assert_int_equal(n, 43);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(s[i]->unique_id, top3[i]);
    for (size_t i = 4; i < n; i++)
        assert_true(s[i]->last_failure_us < s[i - 1]->last_failure_us);
    assert_string_equal(s[42]->unique_id, "zt-000");
    sb_free(s);
    /* Old ties behind 160 newer messages: om-i failed at second
     * (i * 7) % 10 of the day before. */
    static const char *const omega[] = {"om-007", "om-004", "om-001",
                                        "om-008", "om-005", NULL};
    search_is(&e, "omega", 5, omega);
    if (sbt_is_pg())
        pg_layout_set_at_open(&e);
    sbe_close(&e);
}

/* E23: filters, whitelisted sort keys, pages without repeats or gaps, the
 * total for paging headers; bad input named. */
static void test_list(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    for (int i = 0; i < 7; i++) {
        char uid[16], when[40];
        snprintf(uid, sizeof uid, "ul-%d", i);
        snprintf(when, sizeof when, "2026-01-02T00:00:%02dZ", 10 + i);
        sbe_dead_letter_as(&e, uid, i % 2 ? "odd" : "even", when, "X", "b");
    }
    sbe_ingest(&e);
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    q.per_page = 3;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sb_error err;
    char seen[7] = {0};
    for (size_t page = 1; page <= 3; page++) {
        q.page = page;
        sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "list");
        assert_int_equal(total, 7);
        assert_int_equal(n, page < 3 ? 3 : 1);
        for (size_t i = 0; i < n; i++) {
            int k = s[i]->unique_id[3] - '0';
            assert_false(seen[k]);
            seen[k] = 1;
            /* Newest failure first: ul-6 on page 1, ul-0 last. */
            assert_int_equal(k, 6 - (int)((page - 1) * 3 + i));
        }
        sb_free(s);
    }
    /* A filter, ascending. */
    q.page = 1;
    q.per_page = 0;
    q.failed_queue = "odd";
    q.ascending = 1;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "odd");
    assert_int_equal(total, 3);
    assert_string_equal(s[0]->unique_id, "ul-1");
    assert_string_equal(s[2]->unique_id, "ul-5");
    assert_string_equal(s[0]->failed_queue, "odd");
    sb_free(s);
    /* Status filter and another sort key. */
    q.failed_queue = NULL;
    q.status = SB_FAILED_ARCHIVED;
    q.sort = "attempts";
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "archived");
    assert_int_equal(n, 0);
    assert_int_equal(total, 0);
    sb_free(s);
    q.sort = "id; DROP TABLE x";
    assert_int_equal(sb_errors_list(e.store, &q, &s, &n, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "sort");
    q.sort = NULL;
    q.per_page = 501;
    assert_int_equal(sb_errors_list(e.store, &q, &s, &n, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "per_page");
    sbe_close(&e);
}

/* E23 (the HTTP API's lists, S4): several statuses at once, a
 * last-modified range, the view's fields, per-value counts, and a caller
 * of the first sb_failed_query (whose newer fields are never read). */
static void test_list_views(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    /* A second of slack: last_modified may come from the database's
     * clock. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t before = ((int64_t)ts.tv_sec - 1) * 1000000;
    for (int i = 0; i < 5; i++) {
        char uid[16], when[40];
        snprintf(uid, sizeof uid, "uv-%d", i);
        snprintf(when, sizeof when, "2026-01-03T00:00:%02dZ", 10 + i);
        sbe_dead_letter_as(&e, uid, i < 3 ? "qv-a" : "qv-b", when, "X", "b");
    }
    sbe_ingest(&e);
    const char *ids[] = {"uv-0", "uv-3"};
    sb_failed_selection sel = {0};
    sel.ids = ids;
    sel.n_ids = 2;
    int64_t changed = 0;
    sb_error err;
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive");
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    q.statuses =
        SB_FAILED_BIT(SB_FAILED_ARCHIVED) | SB_FAILED_BIT(SB_FAILED_RESOLVED);
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "two");
    assert_int_equal(total, 2);
    assert_int_equal(n, 2);
    assert_string_equal(s[0]->unique_id, "uv-3");
    assert_int_equal(s[0]->status, SB_FAILED_ARCHIVED);
    assert_true(s[0]->first_failure_us > 0);
    assert_true(s[0]->last_modified_us >= before);
    assert_string_equal(s[0]->processing_endpoint, "Sales");
    assert_string_equal(s[0]->message_id, "uv-3");
    /* The view's times are the message's own. */
    sb_failed_message *m = sbe_get(&e, "uv-3");
    assert_int_equal(sb_failed_last_modified_us(m), s[0]->last_modified_us);
    assert_int_equal(sb_failed_time_sent_us(m), s[0]->time_sent_us);
    assert_int_equal(sb_failed_is_system(m), s[0]->is_system);
    assert_true(sb_failed_last_modified_us(m) >=
                sb_failed_status_changed_us(m));
    sb_failed_message_free(m);
    sb_free(s);
    /* One status through the mask counts like `status`; all four too. */
    q.statuses = SB_FAILED_BIT(SB_FAILED_UNRESOLVED);
    check_total(&e, &q, "status = 0 AND length($1) > 0", "x");
    q.statuses = 0xf;
    check_total(&e, &q, "length($1) > 0", "x");
    q.statuses =
        SB_FAILED_BIT(SB_FAILED_UNRESOLVED) | SB_FAILED_BIT(SB_FAILED_ARCHIVED);
    q.failed_queue = "qv-a";
    check_total(&e, &q, "status IN (0, 3) AND failed_queue = $1", "qv-a");
    q.failed_queue = NULL;
    /* The last-modified range: everything is newer than `before`. */
    q.statuses = 0;
    q.modified_from_us = before;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "from");
    assert_int_equal(total, 5);
    sb_free(s);
    q.modified_from_us = 0;
    q.modified_to_us = before - 1;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "to");
    assert_int_equal(total, 0);
    sb_free(s);
    q.modified_from_us = before + 1000;
    q.modified_to_us = before;
    assert_int_equal(sb_errors_list(e.store, &q, &s, &n, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "modified");
    q.modified_from_us = q.modified_to_us = 0;
    q.statuses = 1u << 4;
    assert_int_equal(sb_errors_list(e.store, &q, &s, &n, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "statuses");
    /* A first-version caller: garbage after its size is never read. */
    q.size = SB_FAILED_QUERY_V1_SIZE;
    q.statuses = 0xdead;
    q.modified_to_us = 1;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "v1");
    assert_int_equal(total, 5);
    sb_free(s);
    q.size = SB_FAILED_QUERY_V1_SIZE - 1;
    assert_int_equal(sb_errors_list(e.store, &q, &s, &n, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "size");
    /* Every status at once: 3 unresolved, 2 archived. */
    int64_t by_status[4] = {-1, -1, -1, -1};
    sbt_ok(sb_errors_status_counts(e.store, by_status, &err), &err,
           "status counts");
    assert_int_equal(by_status[SB_FAILED_UNRESOLVED], 3);
    assert_int_equal(by_status[SB_FAILED_RETRY_ISSUED], 0);
    assert_int_equal(by_status[SB_FAILED_RESOLVED], 0);
    assert_int_equal(by_status[SB_FAILED_ARCHIVED], 2);
    /* Counts per failed queue: unresolved only, and every status. */
    sb_failed_count **c = NULL;
    sbt_ok(sb_errors_counts(e.store, "failed_queue", SB_FAILED_UNRESOLVED, 10,
                            &c, &n, &err),
           &err, "counts");
    assert_int_equal(n, 2);
    assert_string_equal(c[0]->name, "qv-a");
    assert_int_equal(c[0]->count, 2);
    assert_string_equal(c[1]->name, "qv-b");
    assert_int_equal(c[1]->count, 1);
    sb_free(c);
    sbt_ok(sb_errors_counts(e.store, "failed_queue", -1, 1, &c, &n, &err), &err,
           "counts, any");
    assert_int_equal(n, 1);
    assert_int_equal(c[0]->count, 3);
    sb_free(c);
    sbt_ok(sb_errors_counts(e.store, "endpoint", -1, 10, &c, &n, &err), &err,
           "endpoints");
    assert_int_equal(n, 1);
    assert_string_equal(c[0]->name, "Sales");
    assert_int_equal(c[0]->count, 5);
    sb_free(c);
    assert_int_equal(
        sb_errors_counts(e.store, "host; DROP", -1, 10, &c, &n, &err),
        SB_INVALID);
    assert_string_equal(err.field, "by");
    assert_int_equal(
        sb_errors_counts(e.store, "message_type", -1, 1001, &c, &n, &err),
        SB_INVALID);
    assert_string_equal(err.field, "limit");
    sbe_close(&e);
}

/* The HTTP API's message views (issue 22): a message looked up by its
 * message id (two failures of one message in two endpoints' stores share
 * it; ids alike in their indexed prefix still differ), a conversation's
 * messages, a time-of-failure range, and a caller of the second
 * sb_failed_query, whose newer fields are never read. */
static void test_list_lookups(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    char long_a[256], long_b[256];
    memset(long_a, 'x', 250);
    long_a[250] = '\0';
    memcpy(long_b, long_a, sizeof long_a);
    long_a[249] = 'a';
    long_b[249] = 'b';
    static const struct {
        const char *uid, *conversation;
        int mid; /* 0 shared, 1 own, 2 long_a, 3 long_b */
    } m[] = {{"lk-1", "conv-a", 0},
             {"lk-2", "conv-a", 0},
             {"lk-3", "conv-a", 1},
             {"lk-4", "conv-b", 2},
             {"lk-5", "conv-b", 3}};
    for (size_t i = 0; i < 5; i++) {
        char when[40], extra[160];
        snprintf(when, sizeof when, "2026-01-04T00:00:%02zuZ", 10 + i * 10);
        snprintf(extra, sizeof extra,
                 ",\"sb-retry-of\":\"%s\",\"sb-conversation-id\":\"%s\"",
                 m[i].uid, m[i].conversation);
        const char *mid = m[i].mid == 0   ? "m-shared"
                          : m[i].mid == 1 ? m[i].uid
                          : m[i].mid == 2 ? long_a
                                          : long_b;
        sbe_dead_letter(&e, mid, "ql", when, "X", "b", extra);
    }
    sbe_ingest(&e);
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    q.message_id = "m-shared";
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sb_error err;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "mid");
    assert_int_equal(total, 2);
    assert_int_equal(n, 2);
    assert_string_equal(s[0]->unique_id, "lk-2");
    assert_string_equal(s[1]->unique_id, "lk-1");
    assert_string_equal(s[0]->message_id, "m-shared");
    sb_free(s);
    q.message_id = long_b;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "long");
    assert_int_equal(total, 1);
    assert_string_equal(s[0]->unique_id, "lk-5");
    sb_free(s);
    q.message_id = "m-none";
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "none");
    assert_int_equal(total, 0);
    assert_int_equal(n, 0);
    sb_free(s);
    /* A conversation, with a status: one of its three archived. */
    const char *ids[] = {"lk-3"};
    sb_failed_selection sel = {0};
    sel.ids = ids;
    sel.n_ids = 1;
    int64_t changed = 0;
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive");
    q.message_id = NULL;
    q.conversation_id = "conv-a";
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "conv");
    assert_int_equal(total, 3);
    sb_free(s);
    q.status = SB_FAILED_UNRESOLVED;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err,
           "conv, unresolved");
    assert_int_equal(total, 2);
    assert_string_equal(s[0]->unique_id, "lk-2");
    sb_free(s);
    /* Failed from lk-2's time to lk-4's: three. */
    q.status = -1;
    q.conversation_id = NULL;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "all");
    assert_int_equal(total, 5);
    int64_t t4 = s[1]->last_failure_us, t2 = s[3]->last_failure_us;
    assert_string_equal(s[1]->unique_id, "lk-4");
    sb_free(s);
    q.failed_from_us = t2;
    q.failed_to_us = t4;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "range");
    assert_int_equal(total, 3);
    assert_string_equal(s[0]->unique_id, "lk-4");
    assert_string_equal(s[2]->unique_id, "lk-2");
    sb_free(s);
    q.failed_to_us = 0;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "from");
    assert_int_equal(total, 4);
    sb_free(s);
    q.failed_from_us = t4 + 1;
    q.failed_to_us = t4;
    assert_int_equal(sb_errors_list(e.store, &q, &s, &n, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "failed");
    /* A second-version caller: the fields after its size are not read. */
    q.size = SB_FAILED_QUERY_V2_SIZE;
    q.message_id = "m-none";
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, &total, &err), &err, "v2");
    assert_int_equal(total, 5);
    sb_free(s);
    sbe_close(&e);
}

/* One message of test_mixed_run: what the operations made of it. */
typedef struct mixed_model {
    char uid[16], queue[4];
    int status, attempts;
    int history[8][2]; /* (status, previous), oldest first */
    size_t n_history;
} mixed_model;

static void mixed_set(mixed_model *m, int status)
{
    if (m->status == status)
        return;
    m->history[m->n_history][0] = status;
    m->history[m->n_history++][1] = m->status;
    m->status = status;
}

/* Archive (1), unarchive (0) or retry (-1) the models whose index has
 * `i % mod == rest`, through the library, and note it in the models. */
static void mixed_op(sbe_env *e, mixed_model *ms, size_t n, size_t mod,
                     size_t rest, int op)
{
    const char *ids[64];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i % mod == rest)
            ids[k++] = ms[i].uid;
    sb_failed_selection sel = {0};
    sel.ids = ids;
    sel.n_ids = k;
    int64_t changed = 0;
    sb_error err;
    if (op < 0)
        sbt_ok(sb_errors_retry(e->store, &sel, &changed, &err), &err, "retry");
    else
        sbt_ok(sb_errors_archive(e->store, &sel, op, &changed, &err), &err,
               "archive");
    int64_t want = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % mod != rest)
            continue;
        /* E14: a retry takes unresolved messages; archived ones stay. */
        if (op < 0 && ms[i].status != SB_FAILED_UNRESOLVED)
            continue;
        size_t before = ms[i].n_history;
        mixed_set(&ms[i], op < 0   ? SB_FAILED_RETRY_ISSUED
                          : op > 0 ? SB_FAILED_ARCHIVED
                                   : SB_FAILED_UNRESOLVED);
        want += ms[i].n_history != before;
    }
    assert_int_equal(changed, want);
}

/* A retry of the models with `i % mod == rest` fails again (`confirm` 0)
 * or succeeds (1): the dead letter or the acknowledgement is ingested. */
static void mixed_outcome(sbe_env *e, mixed_model *ms, size_t n, size_t mod,
                          size_t rest, int confirm)
{
    for (size_t i = 0; i < n; i++) {
        if (i % mod != rest)
            continue;
        if (confirm) {
            char headers[256];
            snprintf(headers, sizeof headers,
                     "{\"sb-retry-confirmed\":\"true\","
                     "\"sb-retry-of\":\"%.15s\"}",
                     ms[i].uid);
            sb_outgoing ack;
            memset(&ack, 0, sizeof ack);
            ack.headers_json = headers;
            sb_error err;
            sbt_ok(sb_publish(e->bus, NULL, "deadletter", &ack, NULL, &err),
                   &err, "acknowledgement");
            mixed_set(&ms[i], SB_FAILED_RESOLVED);
        } else {
            sbe_dead_letter_as(e, ms[i].uid, ms[i].queue,
                               "2026-01-02T00:00:09Z", "X", "again");
            ms[i].attempts++;
            mixed_set(&ms[i], SB_FAILED_UNRESOLVED);
        }
    }
    sbe_ingest(e);
}

/* Issue 16's recount: after a mixed run — ingest, archive, retry, a
 * retry failing again or succeeding, unarchive, archive of a re-failed
 * message — each message's status, attempts and status history (E10,
 * E12, E23), each failure group's count per status (E13) and the counts
 * table (sbe_count_mismatches, E13) equal what the operations made,
 * counted again from scratch. */
static void test_mixed_run(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    mixed_model ms[30];
    const size_t n = sizeof ms / sizeof ms[0];
    memset(ms, 0, sizeof ms);
    for (size_t i = 0; i < n; i++) {
        snprintf(ms[i].uid, sizeof ms[i].uid, "mx-%02zu", i);
        snprintf(ms[i].queue, sizeof ms[i].queue, "q%zu", i % 3);
        ms[i].status = SB_FAILED_UNRESOLVED;
        ms[i].attempts = 1;
        sbe_dead_letter_as(&e, ms[i].uid, ms[i].queue, "2026-01-02T00:00:01Z",
                           "X", "first");
    }
    sbe_ingest(&e);
    mixed_op(&e, ms, n, 5, 0, 1);  /* archive */
    mixed_op(&e, ms, n, 5, 1, -1); /* retry ... */
    mixed_op(&e, ms, n, 5, 2, -1);
    mixed_outcome(&e, ms, n, 5, 1, 0); /* ... fails again */
    mixed_outcome(&e, ms, n, 5, 2, 1); /* ... succeeds */
    mixed_op(&e, ms, n, 10, 0, 0);     /* unarchive */
    mixed_op(&e, ms, n, 10, 1, 1);     /* archive the re-failed */
    mixed_op(&e, ms, n, 10, 1, -1);    /* no retry of an archived one */
    for (size_t i = 0; i < n; i++) {
        sb_failed_message *m = sbe_get(&e, ms[i].uid);
        assert_int_equal(sb_failed_status(m), ms[i].status);
        assert_int_equal(sb_failed_attempts(m), ms[i].attempts);
        assert_int_equal(sb_failed_history_count(m), ms[i].n_history);
        for (size_t h = 0; h < ms[i].n_history; h++) {
            int st = -1, prev = -1;
            assert_int_equal(sb_failed_history(m, h, &st, &prev, NULL), SB_OK);
            assert_int_equal(st, ms[i].history[h][0]);
            assert_int_equal(prev, ms[i].history[h][1]);
        }
        sb_failed_message_free(m);
    }
    const int statuses[] = {SB_FAILED_UNRESOLVED, SB_FAILED_ARCHIVED};
    for (size_t q = 0; q < 3; q++) {
        char queue[4];
        snprintf(queue, sizeof queue, "q%zu", q);
        for (size_t s = 0; s < 2; s++) {
            int64_t want = 0;
            for (size_t i = 0; i < n; i++)
                want += strcmp(ms[i].queue, queue) == 0 &&
                        ms[i].status == statuses[s];
            sb_failure_group g = address_group(&e, queue, statuses[s]);
            assert_int_equal(g.count, want > 0 ? want : -1);
        }
    }
    assert_int_equal(sbe_count_mismatches(&e), 0);
    sbe_close(&e);
}

/* The n-th change (oldest first) of a message's status history. */
static void expect_change(sbe_env *e, const char *uid, size_t n, size_t i,
                          int status, int previous)
{
    sb_failed_message *m = sbe_get(e, uid);
    assert_int_equal(sb_failed_history_count(m), n);
    int st = -1, prev = -1;
    int64_t at = 0, before = 0;
    assert_int_equal(sb_failed_history(m, i, &st, &prev, &at), SB_OK);
    assert_int_equal(st, status);
    assert_int_equal(prev, previous);
    assert_true(at >= sb_failed_first_failure_us(m));
    if (i > 0) {
        assert_int_equal(sb_failed_history(m, i - 1, NULL, NULL, &before),
                         SB_OK);
        assert_true(before <= at);
    }
    assert_int_equal(sb_failed_history(m, n, &st, &prev, &at), SB_NOTFOUND);
    sb_failed_message_free(m);
}

/* E23 (S13's message detail): every change of status is recorded, oldest
 * first, by whatever path made it — archive, unarchive, retry, a failure
 * of the retry — and the history goes with its message. */
static void test_status_history(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_dead_letter_as(&e, "uh-1", "qh", "2026-01-02T00:00:01Z", "X", "b");
    sbe_dead_letter_as(&e, "uh-2", "qh", "2026-01-02T00:00:02Z", "X", "b");
    sbe_ingest(&e);
    sb_failed_message *m = sbe_get(&e, "uh-1");
    assert_int_equal(sb_failed_history_count(m), 0);
    sb_failed_message_free(m);
    const char *ids[] = {"uh-1"};
    sb_failed_selection sel = {0};
    sel.ids = ids;
    sel.n_ids = 1;
    int64_t changed = 0;
    sb_error err;
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive");
    expect_change(&e, "uh-1", 1, 0, SB_FAILED_ARCHIVED, SB_FAILED_UNRESOLVED);
    /* Archiving again is no change: nothing recorded. */
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err, "again");
    expect_change(&e, "uh-1", 1, 0, SB_FAILED_ARCHIVED, SB_FAILED_UNRESOLVED);
    sbt_ok(sb_errors_archive(e.store, &sel, 0, &changed, &err), &err,
           "unarchive");
    expect_change(&e, "uh-1", 2, 1, SB_FAILED_UNRESOLVED, SB_FAILED_ARCHIVED);
    int64_t retried = 0;
    sbt_ok(sb_errors_retry(e.store, &sel, &retried, &err), &err, "retry");
    assert_int_equal(retried, 1);
    expect_change(&e, "uh-1", 3, 2, SB_FAILED_RETRY_ISSUED,
                  SB_FAILED_UNRESOLVED);
    /* The retry fails again: ingestion folds it back to unresolved. */
    sbe_dead_letter_as(&e, "uh-1", "qh", "2026-01-02T00:00:09Z", "X", "b");
    sbe_ingest(&e);
    expect_change(&e, "uh-1", 4, 3, SB_FAILED_UNRESOLVED,
                  SB_FAILED_RETRY_ISSUED);
    expect_change(&e, "uh-1", 4, 0, SB_FAILED_ARCHIVED, SB_FAILED_UNRESOLVED);
    /* The other message's history is its own: none. */
    m = sbe_get(&e, "uh-2");
    assert_int_equal(sb_failed_history_count(m), 0);
    sb_failed_message_free(m);
    /* Retention takes the history with the message. */
    sbt_ok(sb_errors_archive(e.store, &sel, 1, &changed, &err), &err,
           "archive for retention");
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE %sfailed_messages SET status_changed_at = "
             "status_changed_at - 7200000000 WHERE unique_message_id = "
             "'uh-1'",
             e.prefix);
    sbt_exec(e.bus, sql);
    int64_t deleted = 0;
    sbt_ok(sb_errors_expire(e.store, 3600000, &deleted, &err), &err, "expire");
    assert_int_equal(deleted, 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_message_history WHERE "
             "unique_message_id = $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "uh-1"), 0);
    sbe_close(&e);
}

/* E17: pending retries listed, sent again (claim reset, a new copy
 * published) and resolved by hand (claim removed). */
static void test_pending_retries(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_dead_letter_as(&e, "up-1", "pq", "2026-01-02T00:00:01Z", "X", "b");
    sbe_dead_letter_as(&e, "up-2", "pq", "2026-01-02T00:00:02Z", "X", "b");
    sbe_ingest(&e);
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.all = 1;
    int64_t n = 0;
    sb_error err;
    sbt_ok(sb_errors_retry(e.store, &sel, &n, &err), &err, "retry all");
    assert_int_equal(n, 2);
    assert_int_equal(sbt_count(e.bus, "pq"), 2);
    /* Listed as pending. */
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = SB_FAILED_RETRY_ISSUED;
    sb_failed_summary **s = NULL;
    size_t got = 0;
    int64_t total = 0;
    sbt_ok(sb_errors_list(e.store, &q, &s, &got, &total, &err), &err, "list");
    assert_int_equal(total, 2);
    sb_free(s);
    /* Sent again: a second copy goes out, the message stays pending. */
    const char *one[1] = {"up-1"};
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.ids = one;
    sel.n_ids = 1;
    sbt_ok(sb_errors_retry_pending(e.store, &sel, &n, &err), &err,
           "retry pending");
    assert_int_equal(n, 1);
    assert_int_equal(sbt_count(e.bus, "pq"), 3);
    assert_int_equal(sbe_status(&e, "up-1", NULL), SB_FAILED_RETRY_ISSUED);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sretry_claims WHERE unique_message_id = "
             "$1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, "up-1"), 1);
    /* Resolved by hand. */
    const char *two[1] = {"up-2"};
    sel.ids = two;
    sbt_ok(sb_errors_resolve(e.store, &sel, &n, &err), &err, "resolve");
    assert_int_equal(n, 1);
    assert_int_equal(sbe_status(&e, "up-2", NULL), SB_FAILED_RESOLVED);
    assert_int_equal(sbt_native_scalar(sql, "up-2"), 0);
    /* Neither applies to a message that is not pending. */
    sbt_ok(sb_errors_retry_pending(e.store, &sel, &n, &err), &err, "again");
    assert_int_equal(n, 0);
    sbe_close(&e);
}

/* E2, E6: a message dead-lettered by an NServiceBus endpoint: its fault
 * headers map onto the same fields, the time uses NServiceBus's wire
 * format, the message type is the first enclosed type without assembly
 * qualification, and the unique id is ServiceControl's (message id +
 * processing endpoint). */
static void test_nservicebus_headers(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = "<Order/>";
    o.payload_len = 8;
    o.headers_json =
        "{\"NServiceBus.MessageId\":\"b1c2-77\","
        "\"NServiceBus.FailedQ\":\"Sales@MACHINE1\","
        "\"NServiceBus.ProcessingEndpoint\":\"Sales\","
        "\"NServiceBus.TimeOfFailure\":\"2026-01-02 03:04:05:123456 Z\","
        "\"NServiceBus.ExceptionInfo.ExceptionType\":"
        "\"System.TimeoutException\","
        "\"NServiceBus.ExceptionInfo.Message\":\"db slow\","
        "\"NServiceBus.ExceptionInfo.StackTrace\":\"System.TimeoutException:"
        " db slow\\r\\n   at Sales.Handler.Handle(PlaceOrder m) in "
        "C:\\\\src\\\\Handler.cs:line 9\","
        "\"NServiceBus.EnclosedMessageTypes\":\"Sales.PlaceOrder, Sales, "
        "Version=1.0.0.0;Sales.IOrder, Sales\","
        "\"NServiceBus.HostId\":\"0f5e\","
        "\"NServiceBus.HostDisplayName\":\"MACHINE1\","
        "\"NServiceBus.ConversationId\":\"conv-1\"}";
    sb_error err;
    sbt_ok(sb_publish(e.bus, NULL, "deadletter", &o, NULL, &err), &err, "p");
    sb_ingest_stats s = sbe_ingest(&e);
    assert_int_equal(s.messages, 1);
    char uid[37];
    sb__deterministic_guid_str("b1c2-77", "Sales", uid);
    sb_failed_message *m = sbe_get(&e, uid);
    assert_string_equal(sb_failed_field(m, "message_id"), "b1c2-77");
    assert_string_equal(sb_failed_field(m, "failed_queue"), "Sales@MACHINE1");
    assert_string_equal(sb_failed_field(m, "processing_endpoint"), "Sales");
    assert_string_equal(sb_failed_field(m, "message_type"), "Sales.PlaceOrder");
    assert_string_equal(sb_failed_field(m, "exception_type"),
                        "System.TimeoutException");
    assert_string_equal(sb_failed_field(m, "host"), "MACHINE1");
    assert_string_equal(sb_failed_field(m, "conversation_id"), "conv-1");
    assert_int_equal(sb_failed_last_failure_us(m), 1767323045123456LL);
    int frame = 0;
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *type, *title;
        sb_failed_group(m, i, NULL, &type, &title);
        frame += strcmp(type, "Exception Type and Stack Trace") == 0 &&
                 strstr(title, "Sales.Handler.Handle") != NULL;
    }
    assert_int_equal(frame, 1);
    sb_failed_message_free(m);
    sbe_close(&e);
}

/* issue 20.8, T7: a store table that lacks a column its DDL declares
 * is refused at open, in either schema mode, naming the column and the
 * fix, not left to the first statement's "no such column". */
static void test_missing_columns(void **state)
{
    (void)state;
    char p[64], sql[256];
    snprintf(p, sizeof p, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(p, NULL);
    snprintf(sql, sizeof sql,
             "CREATE TABLE %sknown_endpoints (id %s NOT NULL PRIMARY KEY)", p,
             sbt_is_mssql() ? "nvarchar(400)" : "text");
    sbt_exec(bus, sql);
    sb_errors *store = NULL;
    sb_error err;
    assert_int_equal(sb_errors_open(bus, NULL, &store, &err),
                     SB_SCHEMA_MISMATCH);
    assert_null(store);
    assert_string_equal(err.field, "name");
    /* SQLite cannot add a NOT NULL column without a default: there the
     * fix is to recreate the table. */
    if (strstr(err.message, "known_endpoints: column name is missing; fix: ") ==
            NULL ||
        strstr(err.message, strcmp(sbt_backend(), "sqlite") == 0
                                ? "recreate"
                                : "ALTER TABLE") == NULL)
        fail_msg("not named with a fix: %s", err.message);
    sb_options o;
    memset(&o, 0, sizeof o);
    o.schema_mode = SB_SCHEMA_VERIFY;
    sb_bus *verify = sbt_open(p, &o);
    assert_int_equal(sb_errors_open(verify, NULL, &store, &err),
                     SB_SCHEMA_MISMATCH);
    assert_string_equal(err.field, "name");
    sb_close(verify);
    snprintf(sql, sizeof sql, "DROP TABLE %sknown_endpoints", p);
    sbt_exec(bus, sql);
    sbt_drop(bus, p);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_failure_stored),
        cmocka_unit_test(test_attempts_fold_and_guard),
        cmocka_unit_test(test_attempt_counted_once),
        cmocka_unit_test(test_dead_letter_delivered_twice),
        cmocka_unit_test(test_status_and_confirmation),
        cmocka_unit_test(test_large_batch),
        cmocka_unit_test(test_failed_import_and_derived_id),
        cmocka_unit_test(test_key_limits),
        cmocka_unit_test(test_body_placement),
        cmocka_unit_test(test_concurrent_ingesters),
        cmocka_unit_test(test_killed_ingester),
        cmocka_unit_test(test_retry_round_trip),
        cmocka_unit_test(test_retry_selection_rules),
        cmocka_unit_test(test_group_views),
        cmocka_unit_test(test_missing_columns),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_archive),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_search_fields),
        cmocka_unit_test(test_search_order),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_list_views),
        cmocka_unit_test(test_list_lookups),
        cmocka_unit_test(test_status_history),
        cmocka_unit_test(test_mixed_run),
        cmocka_unit_test(test_pending_retries),
        cmocka_unit_test(test_nservicebus_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
