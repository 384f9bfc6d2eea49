/*
 * test_transport.c - the transport conformance suite (spec transport.md),
 * run once per backend by ctest. Each test names the rules it proves.
 */
#include "harness.h"
#include "transport/transport.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    const char *prefix;
    char prefix_copy[64];
    sb_bus *bus;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->prefix_copy, sizeof f->prefix_copy, "%s", sbt_new_prefix());
    f->prefix = f->prefix_copy;
    f->bus = sbt_open(f->prefix, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sbt_drop(f->bus, f->prefix);
    sb_close(f->bus);
    free(f);
    return 0;
}

static sb_msg *claim_one(sb_bus *bus, const char *queue, int64_t lease_ms)
{
    sb_msg **msgs = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(bus, queue, 1, lease_ms, &msgs, &n, &err), &err, "claim");
    if (n == 0) {
        sb_msg_free_array(msgs, n);
        return NULL;
    }
    sb_msg *m = msgs[0];
    msgs[0] = NULL;
    sb_msg_free_array(msgs, n);
    return m;
}

static void publish_text(sb_bus *bus, const char *queue, const char *text,
                         const char *id, int64_t delay_ms, char out[37])
{
    sb_outgoing o = {id, text, strlen(text), NULL, delay_ms};
    sb_error err;
    sbt_ok(sb_publish(bus, NULL, queue, &o, out, &err), &err, "publish");
}

/* T1, T14, T18: publish, claim returns every field, ack deletes. */
static void test_publish_claim_ack(void **state)
{
    fixture *f = *state;
    char id[37];
    sb_outgoing o = {NULL, "hello\0world", 11,
                     "{\"sb-correlation-id\":\"c-1\"}", 0};
    sb_error err;
    sbt_ok(sb_publish(f->bus, NULL, "q", &o, id, &err), &err, "publish");
    sb_msg *m = claim_one(f->bus, "q", 30000);
    assert_non_null(m);
    assert_string_equal(sb_msg_id(m), id);
    assert_string_equal(sb_msg_queue(m), "q");
    size_t len;
    const void *p = sb_msg_payload(m, &len);
    assert_int_equal(len, 11);
    assert_memory_equal(p, "hello\0world", 11);
    assert_int_equal(sb_msg_attempts(m), 1);
    assert_int_equal(strlen(sb_msg_lock_id(m)), 36);
    assert_string_equal(sb_msg_correlation_id(m), "c-1");
    assert_string_equal(sb_msg_header(m, "SB-Correlation-ID"), "c-1");
    assert_true(sb_msg_created_at_us(m) > 1600000000000000LL);
    /* Leased: nobody else can claim it (T14). */
    assert_null(claim_one(f->bus, "q", 30000));
    sbt_ok(sb_ack(f->bus, NULL, m, &err), &err, "ack");
    assert_int_equal(sbt_count(f->bus, "q"), 0);
    /* A second ack of the same lease finds nothing (T18). */
    assert_int_equal(sb_ack(f->bus, NULL, m, &err), SB_LOST_LEASE);
    sb_msg_free(m);
}

/* T3: queue names compare byte-exactly; "q", "Q" and "q" with a soft
 * hyphen (U+00AD, which collations may ignore) differ. (White space at
 * an end, such as a trailing U+00A0, is refused: issue 20.9.) */
static void test_queue_names_byte_exact(void **state)
{
    fixture *f = *state;
    publish_text(f->bus, "orders", "a", NULL, 0, NULL);
    publish_text(f->bus, "Orders", "b", NULL, 0, NULL);
    assert_null(claim_one(f->bus, "orde\xc2\xadrs", 1000));
    sb_msg *m = claim_one(f->bus, "Orders", 1000);
    assert_non_null(m);
    size_t len;
    assert_memory_equal(sb_msg_payload(m, &len), "b", 1);
    sb_msg_free(m);
    m = claim_one(f->bus, "orders", 1000);
    assert_non_null(m);
    assert_memory_equal(sb_msg_payload(m, &len), "a", 1);
    sb_msg_free(m);
}

/* T3 and the ODBC driver's UTF-16 (docs/backends.md): a queue name,
 * headers and a payload outside ASCII come back byte for byte, through
 * claim, peek and the queue list. The long header crosses the driver's
 * 4,000-unit LONG type and its 2,047-unit read pieces, with a surrogate
 * pair cut by the first piece's end. */
static void test_non_ascii_round_trip(void **state)
{
    fixture *f = *state;
    const char *queue = "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80";
    static const char mix[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    static const char payload[] = "pay \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                                  "\0\xff";
    char headers[16384];
    size_t k = (size_t)snprintf(headers, sizeof headers,
                                "{\"greeting\":\"%s\",\"cl\xc3\xa9\":\"%s\","
                                "\"long\":\"",
                                mix, mix);
    /* The first piece holds 2,047 UTF-16 units: the emoji's high half is
     * the last of them. A unit per lead byte, two for a 4-byte one. */
    size_t units = 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)headers[i];
        units += (c & 0xc0) != 0x80 ? 1 : 0;
        units += c >= 0xf0 ? 1 : 0;
    }
    while (units < 2046) {
        headers[k++] = 'x';
        units++;
    }
    memcpy(headers + k, "\xf0\x9f\x98\x80", 4);
    k += 4;
    for (int i = 0; i < 700; i++) { /* 2,800 more units, 6,300 bytes */
        memcpy(headers + k, mix, sizeof mix - 1);
        k += sizeof mix - 1;
    }
    memcpy(headers + k, "\"}", 3);
    k += 2;
    assert_true(k < sizeof headers);

    char id[37];
    sb_outgoing o = {NULL, payload, sizeof payload - 1, headers, 0};
    sb_error err;
    sbt_ok(sb_publish(f->bus, NULL, queue, &o, id, &err), &err, "publish");
    assert_int_equal(sbt_count(f->bus, queue), 1);

    sb_msg **pm = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_peek(f->bus, queue, 0, 10, &pm, &n, &err), &err, "peek");
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_queue(pm[0]), queue);
    assert_int_equal(strlen(sb_msg_headers(pm[0])), k);
    assert_memory_equal(sb_msg_headers(pm[0]), headers, k + 1);
    sb_msg_free_array(pm, n);

    sb_queue_stats **s = NULL;
    sbt_ok(sb_queue_list(f->bus, &s, &n, &err), &err, "queues");
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->queue, queue) == 0)
            seen = s[i]->ready == 1;
    assert_true(seen);
    sb_free(s);

    sb_msg *m = claim_one(f->bus, queue, 30000);
    assert_non_null(m);
    assert_string_equal(sb_msg_id(m), id);
    assert_string_equal(sb_msg_queue(m), queue);
    assert_memory_equal(sb_msg_headers(m), headers, k + 1);
    assert_string_equal(sb_msg_header(m, "greeting"), mix);
    assert_string_equal(sb_msg_header(m, "CL\xc3\xa9"), mix);
    size_t len = 0;
    const void *p = sb_msg_payload(m, &len);
    assert_int_equal(len, sizeof payload - 1);
    assert_memory_equal(p, payload, sizeof payload - 1);
    sbt_ok(sb_ack(f->bus, NULL, m, &err), &err, "ack");
    sb_msg_free(m);
    assert_int_equal(sbt_count(f->bus, queue), 0);
}

/* T9: publishing an existing id again is success and changes nothing. */
static void test_idempotent_publish(void **state)
{
    fixture *f = *state;
    const char *id = "0190A0B1-C2D3-7E4F-8A9B-0C1D2E3F4A5B";
    char out[37];
    publish_text(f->bus, "q", "first", id, 0, out);
    assert_string_equal(out, "0190a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b");
    publish_text(f->bus, "q", "second", id, 0, NULL);
    publish_text(f->bus, "q", "third", out, 0, NULL);
    assert_int_equal(sbt_count(f->bus, "q"), 1);
    sb_msg *m = claim_one(f->bus, "q", 1000);
    size_t len;
    assert_memory_equal(sb_msg_payload(m, &len), "first", 5);
    sb_msg_free(m);
}

/* T10: a delayed message is not claimable before its time. */
static void test_delayed_publish(void **state)
{
    fixture *f = *state;
    publish_text(f->bus, "q", "later", NULL, 700, NULL);
    assert_null(claim_one(f->bus, "q", 1000));
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_list(f->bus, &s, &n, &err), &err, "stats");
    assert_int_equal(n, 1);
    assert_int_equal(s[0]->delayed, 1);
    assert_int_equal(s[0]->ready, 0);
    sb_free(s);
    sbt_sleep_ms(900);
    sb_msg *m = claim_one(f->bus, "q", 1000);
    assert_non_null(m);
    sb_msg_free(m);
}

/* T31 (S6, the dashboard's peek): a queue read in dequeue order without
 * claiming, paged, each row's availability and lease shown and no lease
 * id handed out; bad arguments named. */
static void test_peek(void **state)
{
    fixture *f = *state;
    char ready1[37], ready2[37], later[37];
    publish_text(f->bus, "pq", "one", NULL, 0, ready1);
    sbt_sleep_ms(5);
    publish_text(f->bus, "pq", "two", NULL, 0, ready2);
    publish_text(f->bus, "pq", "later", NULL, 60000, later);
    publish_text(f->bus, "other", "x", NULL, 0, NULL);
    sb_msg *leased = claim_one(f->bus, "pq", 30000);
    assert_non_null(leased);
    assert_string_equal(sb_msg_id(leased), ready1);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_queue_peek(f->bus, "pq", 0, 10, &m, &n, &err), &err, "peek");
    assert_int_equal(n, 3);
    /* Index order: ready2 before the delayed one; the leased one sits by
     * its availability, which SQLite moves to the lease's end and
     * PostgreSQL keeps. */
    size_t at_ready = 3, at_leased = 3;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(sb_msg_id(m[i]), ready2) == 0)
            at_ready = i;
        if (strcmp(sb_msg_id(m[i]), ready1) == 0)
            at_leased = i;
    }
    assert_true(at_ready < 2 && at_leased < 2);
    assert_int_equal(sb_msg_locked_until_us(m[at_ready]), 0);
    assert_true(sb_msg_locked_until_us(m[at_leased]) >
                sb_msg_created_at_us(m[at_leased]));
    assert_int_equal(sb_msg_attempts(m[at_leased]), 1);
    assert_string_equal(sb_msg_lock_id(m[at_leased]), "");
    assert_string_equal(sb_msg_id(m[2]), later);
    assert_true(sb_msg_available_at_us(m[2]) >
                sb_msg_created_at_us(m[2]) + 50000000);
    size_t len = 0;
    const char *p = sb_msg_payload(m[2], &len);
    assert_int_equal(len, 5);
    assert_memory_equal(p, "later", 5);
    sb_msg_free_array(m, n);
    /* Pages. */
    sbt_ok(sb_queue_peek(f->bus, "pq", 2, 10, &m, &n, &err), &err, "page");
    assert_int_equal(n, 1);
    assert_string_equal(sb_msg_id(m[0]), later);
    sb_msg_free_array(m, n);
    sbt_ok(sb_queue_peek(f->bus, "pq", 5, 10, &m, &n, &err), &err, "past");
    assert_int_equal(n, 0);
    sb_msg_free_array(m, n);
    /* Peeking claimed nothing: the leased row keeps its lease. */
    sbt_ok(sb_ack(f->bus, NULL, leased, &err), &err, "ack");
    sb_msg_free(leased);
    assert_int_equal(sb_queue_peek(f->bus, "pq", 0, 0, &m, &n, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "limit");
    assert_int_equal(sb_queue_peek(f->bus, "pq", 0, 501, &m, &n, &err),
                     SB_INVALID);
    assert_int_equal(sb_queue_peek(f->bus, "", 0, 1, &m, &n, &err), SB_INVALID);
}

/* T11: a batch is all or nothing; bad input stores nothing. */
static void test_batch_all_or_nothing(void **state)
{
    fixture *f = *state;
    sb_outgoing m[250];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 250; i++) {
        m[i].payload = "x";
        m[i].payload_len = 1;
    }
    m[137].headers_json = "{\"k\": 1}";
    sb_error err;
    assert_int_equal(sb_publish_batch(f->bus, NULL, "q", m, 250, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "msgs[137].headers");
    assert_int_equal(sbt_count(f->bus, "q"), 0);
    m[137].headers_json = NULL;
    char ids[250][37];
    sbt_ok(sb_publish_batch(f->bus, NULL, "q", m, 250, ids, &err), &err,
           "batch");
    assert_int_equal(sbt_count(f->bus, "q"), 250);
    assert_string_not_equal(ids[0], ids[249]);
}

/* T12: a message published inside the caller's transaction exists iff
 * the caller's own writes commit. */
static void test_transactional_publish(void **state)
{
    fixture *f = *state;
    char sql[256];
    snprintf(sql, sizeof sql, "CREATE TABLE %sorders (n integer)", f->prefix);
    sbt_exec(f->bus, sql);
    sb_error err;
    for (int commit = 0; commit < 2; commit++) {
        sb_tx *tx = NULL;
        sbt_ok(sb_tx_begin(f->bus, &tx, &err), &err, "begin");
        assert_non_null(sb_tx_native(tx));
        snprintf(sql, sizeof sql, "INSERT INTO %sorders VALUES (%d)", f->prefix,
                 commit);
        sbt_ok(sb_tx_exec(tx, sql, &err), &err, "own write");
        sb_outgoing o = {NULL, "x", 1, NULL, 0};
        sbt_ok(sb_publish(f->bus, tx, "q", &o, NULL, &err), &err, "publish");
        if (commit)
            sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
        else
            sb_tx_rollback(tx);
        assert_int_equal(sbt_count(f->bus, "q"), commit);
    }
    snprintf(sql, sizeof sql, "DROP TABLE %sorders", f->prefix);
    sbt_exec(f->bus, sql);
}

/* T16, T17, T18, T19, T21: a lapsed lease is redelivered with its attempt
 * count, and the stale lock id can no longer ack, nak, renew or
 * dead-letter. */
static void test_lease_expiry_and_fencing(void **state)
{
    fixture *f = *state;
    publish_text(f->bus, "q", "x", NULL, 0, NULL);
    sb_msg *stale = claim_one(f->bus, "q", 300);
    assert_non_null(stale);
    sbt_sleep_ms(450);
    sb_msg *fresh = claim_one(f->bus, "q", 30000);
    assert_non_null(fresh);
    assert_string_equal(sb_msg_id(fresh), sb_msg_id(stale));
    assert_int_equal(sb_msg_attempts(fresh), 2);
    assert_string_not_equal(sb_msg_lock_id(fresh), sb_msg_lock_id(stale));
    sb_error err;
    assert_int_equal(sb_ack(f->bus, NULL, stale, &err), SB_LOST_LEASE);
    assert_string_equal(err.field, "lock_id");
    assert_int_equal(sb_nak(f->bus, stale, 0, "x", &err), SB_LOST_LEASE);
    assert_int_equal(sb_renew(f->bus, stale, 1000, &err), SB_LOST_LEASE);
    assert_int_equal(sb_dead_letter(f->bus, stale, NULL, &err), SB_LOST_LEASE);
    assert_int_equal(sbt_count(f->bus, "deadletter"), 0);
    assert_int_equal(sbt_count(f->bus, "q"), 1);
    sbt_ok(sb_renew(f->bus, fresh, 30000, &err), &err, "renew");
    sbt_ok(sb_ack(f->bus, NULL, fresh, &err), &err, "ack");
    sb_msg_free(stale);
    sb_msg_free(fresh);
}

/* T16: renewal extends the lease past its first end. */
static void test_renew_extends(void **state)
{
    fixture *f = *state;
    publish_text(f->bus, "q", "x", NULL, 0, NULL);
    sb_msg *m = claim_one(f->bus, "q", 400);
    sb_error err;
    for (int i = 0; i < 4; i++) {
        sbt_sleep_ms(200);
        sbt_ok(sb_renew(f->bus, m, 400, &err), &err, "renew");
    }
    assert_null(claim_one(f->bus, "q", 1000));
    sbt_ok(sb_ack(f->bus, NULL, m, &err), &err, "ack");
    sb_msg_free(m);
}

/* T19: a nak records the error and honours the delay. */
static void test_nak_delay(void **state)
{
    fixture *f = *state;
    publish_text(f->bus, "q", "x", NULL, 0, NULL);
    sb_msg *m = claim_one(f->bus, "q", 30000);
    sb_error err;
    sbt_ok(sb_nak(f->bus, m, 600, "boom", &err), &err, "nak");
    sb_msg_free(m);
    assert_null(claim_one(f->bus, "q", 1000));
    sbt_sleep_ms(800);
    m = claim_one(f->bus, "q", 1000);
    assert_non_null(m);
    assert_int_equal(sb_msg_attempts(m), 2);
    sb_msg_free(m);
}

static sb_msg *dlq_only(sb_bus *bus)
{
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(bus, NULL, &d, &n, &err), &err, "dlq list");
    assert_int_equal(n, 1);
    sb_msg *m = d[0];
    d[0] = NULL;
    sb_msg_free_array(d, n);
    return m;
}

/* T21, T22: dead-lettering moves the message with every failure header
 * and removes the original, in one transaction. */
static void test_dead_letter_headers(void **state)
{
    fixture *f = *state;
    char id[37];
    sb_outgoing o = {NULL, "body", 4, "{\"app\":\"v\"}", 0};
    sb_error err;
    sbt_ok(sb_publish(f->bus, NULL, "jobs", &o, id, &err), &err, "publish");
    sb_msg *m = claim_one(f->bus, "jobs", 30000);
    sb_failure fl = {.size = sizeof fl,
                     .reason = "poison",
                     .exception_type = "ValueError",
                     .exception_message = "bad value",
                     .stacktrace = "frame 1\nframe 2"};
    sbt_ok(sb_dead_letter(f->bus, m, &fl, &err), &err, "dead letter");
    sb_msg_free(m);
    assert_int_equal(sbt_count(f->bus, "jobs"), 0);
    sb_msg *d = dlq_only(f->bus);
    assert_string_equal(sb_msg_queue(d), "deadletter");
    assert_string_not_equal(sb_msg_id(d), id);
    assert_string_equal(sb_msg_header(d, "sb-message-id"), id);
    assert_string_equal(sb_msg_header(d, "sb-failed-queue"), "jobs");
    assert_string_equal(sb_msg_header(d, "sb-dead-letter-reason"), "poison");
    assert_string_equal(sb_msg_header(d, "sb-exception-type"), "ValueError");
    assert_string_equal(sb_msg_header(d, "sb-exception-message"), "bad value");
    assert_string_equal(sb_msg_header(d, "sb-exception-stacktrace"),
                        "frame 1\nframe 2");
    assert_string_equal(sb_msg_header(d, "sb-attempts"), "1");
    assert_non_null(sb_msg_header(d, "sb-time-of-failure"));
    assert_non_null(sb_msg_header(d, "sb-processing-endpoint"));
    assert_true(strlen(sb_msg_header(d, "sb-host")) > 0);
    assert_string_equal(sb_msg_header(d, "app"), "v");
    size_t len;
    assert_memory_equal(sb_msg_payload(d, &len), "body", 4);
    sb_msg_free(d);
    sb_queue_stats **s = NULL;
    size_t n = 0;
    sbt_ok(sb_queue_list(f->bus, &s, &n, &err), &err, "stats");
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i]->queue, "jobs") == 0) {
            assert_int_equal(s[i]->dead_lettered, 1);
            seen = 1;
        }
    assert_true(seen);
    sb_free(s);
}

/* T21: an injected failure between the insert and the delete leaves
 * neither a duplicate nor a loss; the retry then moves it exactly once. */
static void test_dead_letter_atomic_under_failure(void **state)
{
    fixture *f = *state;
    char sql[600];
    if (sbt_is_mssql()) {
        snprintf(sql, sizeof sql,
                 "CREATE TRIGGER %sboom ON %smessages AFTER DELETE AS "
                 "THROW 50000, 'injected', 1;",
                 f->prefix, f->prefix);
    } else if (sbt_is_pg()) {
        snprintf(sql, sizeof sql,
                 "CREATE FUNCTION %sboom() RETURNS trigger LANGUAGE plpgsql "
                 "AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$; "
                 "CREATE TRIGGER %sboom BEFORE DELETE ON %smessages "
                 "FOR EACH ROW EXECUTE FUNCTION %sboom()",
                 f->prefix, f->prefix, f->prefix, f->prefix);
    } else {
        snprintf(sql, sizeof sql,
                 "CREATE TRIGGER %sboom BEFORE DELETE ON %smessages "
                 "BEGIN SELECT RAISE(ABORT, 'injected'); END",
                 f->prefix, f->prefix);
    }
    publish_text(f->bus, "q", "x", NULL, 0, NULL);
    sb_msg *m = claim_one(f->bus, "q", 30000);
    sbt_exec(f->bus, sql);
    sb_error err;
    int rc = sb_dead_letter(f->bus, m, NULL, &err);
    assert_int_not_equal(rc, SB_OK);
    assert_int_equal(sbt_count(f->bus, "q"), 1);
    assert_int_equal(sbt_count(f->bus, "deadletter"), 0);
    snprintf(sql, sizeof sql, "DROP TRIGGER %sboom%s%smessages", f->prefix,
             sbt_is_pg() ? " ON " : "", sbt_is_pg() ? f->prefix : "");
    if (!sbt_is_pg())
        snprintf(sql, sizeof sql, "DROP TRIGGER %sboom", f->prefix);
    sbt_exec(f->bus, sql);
    sbt_ok(sb_dead_letter(f->bus, m, NULL, &err), &err, "dead letter");
    assert_int_equal(sbt_count(f->bus, "q"), 0);
    assert_int_equal(sbt_count(f->bus, "deadletter"), 1);
    sb_msg_free(m);
    if (sbt_is_pg()) {
        snprintf(sql, sizeof sql, "DROP FUNCTION %sboom()", f->prefix);
        sbt_exec(f->bus, sql);
    }
}

/* T4, T3, T8 and "bad input": each a clear error naming the field and the
 * limit; nothing stored. */
static void test_bad_input(void **state)
{
    fixture *f = *state;
    sb_error err;
    sb_outgoing o = {NULL, "x", 1, NULL, 0};
    assert_int_equal(sb_publish(f->bus, NULL, "bad\001name", &o, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "queue");
    char long_name[202];
    memset(long_name, 'a', 201);
    long_name[201] = '\0';
    assert_int_equal(sb_publish(f->bus, NULL, long_name, &o, NULL, &err),
                     SB_INVALID);
    assert_non_null(strstr(err.message, "200"));
    assert_int_equal(sb_publish(f->bus, NULL, " q", &o, NULL, &err),
                     SB_INVALID);
    o.headers_json = "[1,2]";
    assert_int_equal(sb_publish(f->bus, NULL, "q", &o, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "msgs[0].headers");
    o.headers_json = "{\"a\":";
    assert_int_equal(sb_publish(f->bus, NULL, "q", &o, NULL, &err), SB_INVALID);
    /* Issue 20.5, C7: a correlation id header is a correlation id, under
     * any spelling of its name, as sb_validate_correlation_id says. */
    static const char *const bad_corr[] = {
        "{\"sb-correlation-id\": \"\\u0001\"}", "{\"sb-correlation-id\": \"\"}",
        "{\"SB-Correlation-ID\": \" padded\"}",
        "{\"a\": \"b\", \"sb-correlation-id\": \"\\u0085x\"}"};
    for (size_t i = 0; i < sizeof bad_corr / sizeof *bad_corr; i++) {
        o.headers_json = bad_corr[i];
        assert_int_equal(sb_publish(f->bus, NULL, "q", &o, NULL, &err),
                         SB_INVALID);
        assert_string_equal(err.field, "msgs[0].headers");
        assert_non_null(strcasestr(err.message, "sb-correlation-id"));
    }
    o.headers_json = NULL;
    o.id = "not-a-uuid";
    assert_int_equal(sb_publish(f->bus, NULL, "q", &o, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "msgs[0].id");
    o.id = NULL;
    o.delay_ms = -1;
    assert_int_equal(sb_publish(f->bus, NULL, "q", &o, NULL, &err), SB_INVALID);
    assert_int_equal(sbt_count(f->bus, "q"), 0);

    /* Oversized payload against a small max_payload_bytes (T4). */
    sb_options opts;
    memset(&opts, 0, sizeof opts);
    opts.max_payload_bytes = 1024;
    sb_bus *small = sbt_open(f->prefix, &opts);
    char big[1025];
    memset(big, 'x', sizeof big);
    sb_outgoing b = {NULL, big, sizeof big, NULL, 0};
    assert_int_equal(sb_publish(small, NULL, "q", &b, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "msgs[0].payload");
    assert_non_null(strstr(err.message, "1024"));
    b.payload_len = 1024;
    sbt_ok(sb_publish(small, NULL, "q", &b, NULL, &err), &err, "at the cap");
    sb_close(small);

    /* Invalid identifiers in configuration (T8). */
    const char *bad_prefixes[] = {"1abc", "a-b", "x;drop", "",
                                  "abcdefghijklmnopqrstuvwxyz_0123456789"};
    for (size_t i = 0; i < sizeof bad_prefixes / sizeof *bad_prefixes; i++) {
        sb_options bo;
        memset(&bo, 0, sizeof bo);
        bo.size = sizeof bo;
        bo.url = sbt_url();
        bo.table_prefix = bad_prefixes[i];
        sb_bus *bus = NULL;
        assert_int_equal(sb_open(&bo, &bus, &err), SB_INVALID);
        assert_string_equal(err.field, "table_prefix");
        assert_null(bus);
    }
    sb_options bo;
    memset(&bo, 0, sizeof bo);
    bo.url = sbt_url();
    bo.schema = "public; drop";
    sb_bus *bus = NULL;
    assert_int_equal(sb_open(&bo, &bus, &err), SB_INVALID);
    assert_string_equal(err.field, "schema");
    bo.schema = NULL;
    bo.url = "mysql://nope";
    assert_int_equal(sb_open(&bo, &bus, &err), SB_INVALID);
    assert_string_equal(err.field, "url");
}

/* T7: a wrong column type and a missing index are reported, naming the
 * column and printing the fix; T6: migrate creates what is missing. */
/* The number of indexes named `name` (prefix included) in the catalog. */
static long index_count(const char *name)
{
    return sbt_native_scalar(
        sbt_is_mssql() ? "SELECT count(*) FROM sys.indexes WHERE name = $1"
        : sbt_is_pg()  ? "SELECT count(*) FROM pg_indexes WHERE indexname = $1"
                       : "SELECT count(*) FROM sqlite_master WHERE type = "
                         "'index' AND name = $1",
        name);
}

/* T7, T34: a store made before issue 21 (no priority, unique key,
 * expiry, cancellation or progress columns; the dequeue index without
 * priority) is upgraded by an AUTO open: the columns added, the old index
 * replaced by the claim index, its messages kept and claimable. A VERIFY
 * open names the first missing column and its fix instead. */
static void test_schema_upgrade(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, NULL);
    char ids[2][37];
    sbt_publish_n(bus, "old", 2, ids);
    /* Back to the earlier shape. */
    char sql[2048];
    int k = 0;
    if (sbt_is_mssql())
        k += snprintf(sql + k, sizeof sql - (size_t)k,
                      "DROP INDEX %smessages_claim_idx ON %smessages; "
                      "DROP INDEX %smessages_expires_idx ON %smessages; "
                      "DROP INDEX %smessages_unique_idx ON %smessages; "
                      "DECLARE @n sysname = (SELECT d.name FROM "
                      "sys.default_constraints d WHERE d.parent_object_id = "
                      "OBJECT_ID(N'%smessages') AND d.parent_column_id = "
                      "COLUMNPROPERTY(OBJECT_ID(N'%smessages'), 'priority', "
                      "'ColumnId')); EXEC(N'ALTER TABLE %smessages DROP "
                      "CONSTRAINT ' + @n); ",
                      prefix, prefix, prefix, prefix, prefix, prefix, prefix,
                      prefix, prefix);
    else if (sbt_is_pg())
        k += snprintf(sql + k, sizeof sql - (size_t)k,
                      "DROP INDEX %smessages_claim_idx; DROP INDEX "
                      "%smessages_expires_idx; DROP INDEX "
                      "%smessages_unique_idx; ",
                      prefix, prefix, prefix);
    else
        k += snprintf(sql + k, sizeof sql - (size_t)k,
                      "DROP INDEX %smessages_plain_idx; DROP INDEX "
                      "%smessages_prio_idx; DROP INDEX %smessages_expires_idx; "
                      "DROP INDEX %smessages_unique_idx; ",
                      prefix, prefix, prefix, prefix);
    static const char *const later[] = {"priority", "unique_key", "expires_at",
                                        "progress"};
    for (size_t i = 0; i < 4; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k,
                      "ALTER TABLE %smessages DROP COLUMN %s; ", prefix,
                      later[i]);
    snprintf(sql + k, sizeof sql - (size_t)k,
             "CREATE INDEX %smessages_ready_idx ON %smessages (queue, "
             "available_at, created_at)",
             prefix, prefix);
    if (sbt_is_pg() || sbt_is_mssql())
        sbt_native_exec(sql);
    else
        sbt_exec(bus, sql);
    sb_close(bus);
    char name[96];
    snprintf(name, sizeof name, "%smessages_ready_idx", prefix);
    assert_int_equal(index_count(name), 1);

    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = sbt_url();
    o.table_prefix = prefix;
    o.schema_mode = SB_SCHEMA_VERIFY;
    sb_error err;
    assert_int_equal(sb_open(&o, &bus, &err), SB_SCHEMA_MISMATCH);
    assert_string_equal(err.field, "priority");
    assert_non_null(strstr(err.message, "ADD COLUMN priority"));

    bus = sbt_open(prefix, NULL); /* AUTO */
    sbt_ok(sb_schema_verify(bus, &err), &err, "verify after the upgrade");
    assert_int_equal(index_count(name), 0);
    /* SQLite's claim index is two partial ones (sql_sqlite.c). */
    snprintf(name, sizeof name, "%smessages_%s_idx", prefix,
             sbt_is_pg() || sbt_is_mssql() ? "claim" : "plain");
    assert_int_equal(index_count(name), 1);
    snprintf(name, sizeof name, "%smessages_expires_idx", prefix); /* T40 */
    assert_int_equal(index_count(name), 1);
    snprintf(name, sizeof name, "%smessages_unique_idx", prefix); /* T38 */
    assert_int_equal(index_count(name), 1);
    sb_msg **got = NULL;
    size_t n = 0;
    sbt_ok(sb_claim(bus, "old", 10, 30000, &got, &n, &err), &err, "claim");
    assert_int_equal(n, 2);
    sb_msg_free_array(got, n);
    /* Opening again changes nothing. */
    sb_close(bus);
    bus = sbt_open(prefix, NULL);
    sbt_ok(sb_schema_verify(bus, &err), &err, "verify again");
    sbt_drop(bus, prefix);
    sb_close(bus);
}

static void test_schema_verification(void **state)
{
    fixture *f = *state;
    sb_error err;
    sbt_ok(sb_schema_verify(f->bus, &err), &err, "verify");
    char sql[300];
    int sqlite = !sbt_is_pg() && !sbt_is_mssql();
    /* SQLite's claim index is two partial ones: each is checked. */
    for (int i = 0; i < (sqlite ? 2 : 1); i++) {
        snprintf(sql, sizeof sql, "DROP INDEX %smessages_%s_idx%s%s%s",
                 f->prefix, sqlite ? (i ? "prio" : "plain") : "claim",
                 sbt_is_mssql() ? " ON " : "", sbt_is_mssql() ? f->prefix : "",
                 sbt_is_mssql() ? "messages" : "");
        sbt_exec(f->bus, sql);
        assert_int_equal(sb_schema_verify(f->bus, &err), SB_SCHEMA_MISMATCH);
        assert_non_null(strstr(err.message, "CREATE INDEX"));
        sbt_ok(sb_schema_migrate(f->bus, &err), &err, "migrate");
        sbt_ok(sb_schema_verify(f->bus, &err), &err, "verify after migrate");
    }

    /* A table of the wrong shape under another prefix. */
    const char *p2 = sbt_new_prefix();
    char p2c[64];
    snprintf(p2c, sizeof p2c, "%s", p2);
    if (sbt_is_mssql())
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %smessages (id uniqueidentifier PRIMARY KEY "
                 "NONCLUSTERED, queue nvarchar(200) NOT NULL, payload "
                 "nvarchar(max) NOT NULL)",
                 p2c);
    else if (sbt_is_pg())
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %smessages (id uuid PRIMARY KEY, queue text "
                 "COLLATE \"C\" NOT NULL, payload text NOT NULL)",
                 p2c);
    else
        snprintf(
            sql, sizeof sql,
            "CREATE TABLE %smessages (id TEXT NOT NULL PRIMARY KEY, queue TEXT "
            "NOT NULL, payload TEXT NOT NULL)",
            p2c);
    sbt_exec(f->bus, sql);
    sb_options o;
    memset(&o, 0, sizeof o);
    o.url = sbt_url();
    o.table_prefix = p2c;
    o.schema_mode = SB_SCHEMA_VERIFY;
    sb_bus *bus = NULL;
    assert_int_equal(sb_open(&o, &bus, &err), SB_SCHEMA_MISMATCH);
    /* The columns it lacks first (issue 20.8), then the types. */
    if (strcmp(err.field, "headers") != 0 ||
        strstr(err.message, "column headers is missing") == NULL)
        fail_msg("expected the headers column to be named: %s", err.message);
    assert_non_null(strstr(err.message, "fix:"));
    snprintf(sql, sizeof sql, "DROP TABLE %smessages", p2c);
    sbt_exec(f->bus, sql);
    /* Every column there, the payload of another type. */
    int dialect = sbt_is_mssql() ? SB_DIALECT_MSSQL
                  : sbt_is_pg()  ? SB_DIALECT_POSTGRES
                                 : SB_DIALECT_SQLITE;
    char all[1024];
    int k = snprintf(all, sizeof all, "CREATE TABLE %smessages (", p2c);
    for (size_t i = 0; i < sb__message_column_count; i++) {
        const sb_column_spec *c = &sb__message_columns[i];
        const char *type =
            strcmp(c->name, "payload") == 0
                ? (dialect == SB_DIALECT_MSSQL ? "nvarchar(max)" : "text")
            : dialect == SB_DIALECT_MSSQL    ? c->mssql_type
            : dialect == SB_DIALECT_POSTGRES ? c->pg_type
                                             : c->sqlite_type;
        k += snprintf(all + k, sizeof all - (size_t)k, "%s%s %s%s",
                      i ? ", " : "", c->name, type,
                      c->notnull ? " NOT NULL" : "");
    }
    snprintf(all + k, sizeof all - (size_t)k, ")");
    sbt_exec(f->bus, all);
    assert_int_equal(sb_open(&o, &bus, &err), SB_SCHEMA_MISMATCH);
    if (strcmp(err.field, "payload") != 0 ||
        strstr(err.message, "column payload has type") == NULL)
        fail_msg("expected the payload column's type: %s", err.message);
    assert_non_null(strstr(err.message, "fix:"));
    snprintf(sql, sizeof sql, "DROP TABLE %smessages", p2c);
    sbt_exec(f->bus, sql);

    /* issue 20.8: a table lacking columns, opened with the default AUTO
     * mode, whose index build names a column the table lacks: the
     * missing column is reported, with the fix, not the database's "no
     * such column". The same for the counts table. */
    snprintf(sql, sizeof sql, "CREATE TABLE %smessages (id %s, queue %s)", p2c,
             sbt_is_mssql() ? "uniqueidentifier"
             : sbt_is_pg()  ? "uuid"
                            : "TEXT",
             sbt_is_mssql() ? "nvarchar(200)" : "text");
    sbt_exec(f->bus, sql);
    o.schema_mode = SB_SCHEMA_AUTO;
    assert_int_equal(sb_open(&o, &bus, &err), SB_SCHEMA_MISMATCH);
    assert_string_equal(err.field, "payload");
    if (strstr(err.message, "column payload is missing; fix: ") == NULL)
        fail_msg("missing column not named: %s", err.message);
    snprintf(sql, sizeof sql, "DROP TABLE %smessages", p2c);
    sbt_exec(f->bus, sql);
    snprintf(sql, sizeof sql, "CREATE TABLE %scounts (queue %s PRIMARY KEY)",
             p2c, sbt_is_mssql() ? "nvarchar(200)" : "text");
    sbt_exec(f->bus, sql);
    assert_int_equal(sb_open(&o, &bus, &err), SB_SCHEMA_MISMATCH);
    assert_string_equal(err.field, "published");
    if (strstr(err.message, "counts: column published is missing; fix: "
                            "ALTER TABLE") == NULL)
        fail_msg("counts column not named: %s", err.message);
    snprintf(sql, sizeof sql, "DROP TABLE %scounts", p2c);
    sbt_exec(f->bus, sql);
    /* The messages table that open created before it found the counts'
     * shape. */
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %smessages", p2c);
    sbt_exec(f->bus, sql);
    o.schema_mode = SB_SCHEMA_VERIFY;

    /* VERIFY mode with no table: opens, and the next use reports it. */
    bus = NULL;
    assert_int_equal(sb_open(&o, &bus, &err), SB_OK);
    sb_outgoing m = {NULL, "x", 1, NULL, 0};
    assert_int_equal(sb_publish(bus, NULL, "q", &m, NULL, &err),
                     SB_SCHEMA_MISSING);
    sb_close(bus);
}

/* Counts the retry lines sb_open logs. */
static void count_retries(int level, const char *component, const char *message,
                          void *user)
{
    (void)level;
    (void)component;
    if (strstr(message, "transient failure") != NULL)
        (*(int *)user)++;
}

/* issue 20.7: sb_open retries a refused connection as a transaction
 * would (five retries, logged at DEBUG) before SB_UNAVAILABLE, so the
 * CLI's exit 5 means the retries ran out; a permanent failure returns
 * at once, without a retry. */
static void test_open_connect_retries(void **state)
{
    (void)state;
    if (sbt_is_mssql())
        skip();
    char refused[600];
    if (strcmp(sbt_backend(), "sqlite") == 0)
        snprintf(refused, sizeof refused, "postgresql://127.0.0.1:1/x");
    else if (strcmp(sbt_backend(), "odbc-postgresql") == 0)
        sbt_odbc_url_of("postgresql://postgres@127.0.0.1:1/x", refused,
                        sizeof refused);
    else
        snprintf(refused, sizeof refused, "postgresql://127.0.0.1:1/x");
    int retries = 0;
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = refused;
    o.log = count_retries;
    o.log_user = &retries;
    o.log_level = SB_LOG_DEBUG;
    sb_bus *bus = NULL;
    sb_error err;
    assert_int_equal(sb_open(&o, &bus, &err), SB_UNAVAILABLE);
    assert_null(bus);
    assert_int_equal(retries, 5);

    /* Permanent: a SQLite file whose directory is missing; on the
     * PostgreSQL backends a database that does not exist (not through
     * psqlODBC, which reports that as 08001 like an outage). */
    char permanent[700];
    if (sbt_is_pg() && strcmp(sbt_backend(), "odbc-postgresql") == 0)
        skip();
    if (sbt_is_pg()) {
        snprintf(permanent, sizeof permanent, "%s", sbt_pg_url());
        char *slash = strrchr(permanent, '/');
        assert_non_null(slash);
        snprintf(slash, sizeof permanent - (size_t)(slash - permanent),
                 "/sqlbus_no_such_db");
    } else {
        snprintf(permanent, sizeof permanent,
                 "sqlite:/sqlbus-no-such-directory/%d/x.db", (int)getpid());
    }
    retries = 0;
    o.url = permanent;
    assert_int_equal(sb_open(&o, &bus, &err), SB_BACKEND);
    assert_null(bus);
    assert_int_equal(retries, 0);
    if (sbt_is_pg())
        assert_string_equal(err.sqlstate, "3D000");
}

/* T32: list, requeue (to the original queue, original id, attempts reset)
 * and purge dead letters with filters; T25: retention pruning. */
static void test_dlq_operations(void **state)
{
    fixture *f = *state;
    sb_error err;
    char ids[3][37];
    sbt_publish_n(f->bus, "a", 2, ids);
    sbt_publish_n(f->bus, "b", 1, ids + 2);
    for (int i = 0; i < 3; i++) {
        sb_msg *m = claim_one(f->bus, i < 2 ? "a" : "b", 30000);
        sbt_ok(sb_dead_letter(f->bus, m, NULL, &err), &err, "dl");
        sb_msg_free(m);
    }
    sb_dlq_filter flt = {sizeof flt, "a", 0, NULL, 0};
    sb_msg **d = NULL;
    size_t n = 0;
    sbt_ok(sb_dlq_list(f->bus, &flt, &d, &n, &err), &err, "list a");
    assert_int_equal(n, 2);
    sb_msg_free_array(d, n);
    int64_t moved = 0;
    sbt_ok(sb_dlq_requeue(f->bus, &flt, NULL, NULL, &moved, &err), &err,
           "requeue");
    assert_int_equal(moved, 2);
    assert_int_equal(sbt_count(f->bus, "a"), 2);
    sb_msg *m = claim_one(f->bus, "a", 30000);
    assert_true(strcmp(sb_msg_id(m), ids[0]) == 0 ||
                strcmp(sb_msg_id(m), ids[1]) == 0);
    assert_int_equal(sb_msg_attempts(m), 1);
    assert_null(sb_msg_header(m, "sb-dead-letter-reason"));
    sb_msg_free(m);
    /* Older-than filter: nothing is an hour old. */
    sb_dlq_filter old = {sizeof old, NULL, 3600000, NULL, 0};
    int64_t purged = -1;
    sbt_ok(sb_dlq_purge(f->bus, &old, NULL, NULL, &purged, &err), &err,
           "purge old");
    assert_int_equal(purged, 0);
    sbt_ok(sb_dlq_purge(f->bus, NULL, NULL, NULL, &purged, &err), &err,
           "purge");
    assert_int_equal(purged, 1);
    assert_int_equal(sbt_count(f->bus, "deadletter"), 0);

    /* Retention (T25): a bus with a 200 ms retention prunes old letters. */
    sb_options o;
    memset(&o, 0, sizeof o);
    o.dead_letter_retention_ms = 200;
    sb_bus *rb = sbt_open(f->prefix, &o);
    m = claim_one(rb, "a", 30000);
    sbt_ok(sb_dead_letter(rb, m, NULL, &err), &err, "dl");
    sb_msg_free(m);
    int64_t deleted = -1;
    sbt_ok(sb_dlq_prune(rb, &deleted, &err), &err, "prune young");
    assert_int_equal(deleted, 0);
    sbt_sleep_ms(300);
    sbt_ok(sb_dlq_prune(rb, &deleted, &err), &err, "prune");
    assert_int_equal(deleted, 1);
    sb_close(rb);
}

/* T6: several processes starting at once on an empty database create the
 * schema once, under the lock, and all of them open successfully. */
static void test_concurrent_first_start(void **state)
{
    fixture *f = *state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    /* The children open buses (threads) after fork: the parent must be
     * single-threaded when it forks, so the fixture's bus (its counts
     * flusher is a thread) is closed first and opened again after. */
    sb_close(f->bus);
    f->bus = NULL;
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(go[1]);
            char c;
            if (read(go[0], &c, 1) < 0)
                _exit(3);
            sb_options o;
            memset(&o, 0, sizeof o);
            o.url = sbt_url();
            o.table_prefix = prefix;
            sb_bus *bus = NULL;
            sb_error err;
            int rc = sb_open(&o, &bus, &err);
            if (rc != SB_OK)
                fprintf(stderr, "child %d: %s\n", i, err.message);
            sb_outgoing m = {NULL, "x", 1, NULL, 0};
            if (rc == SB_OK)
                rc = sb_publish(bus, NULL, "q", &m, NULL, &err);
            sb_close(bus);
            _exit(rc == SB_OK ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]); /* EOF releases all children at once */
    for (int i = 0; i < 4; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    f->bus = sbt_open(f->prefix, NULL);
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_error err;
    sbt_ok(sb_schema_verify(bus, &err), &err, "verify");
    assert_int_equal(sbt_count(bus, "q"), 4);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* T24: set-based settlement stays fenced per message: of three claimed
 * messages whose leases were taken over for one, acking all three in one
 * statement deletes two and reports the third lost; renewing likewise. */
static void test_batched_settlement_fenced(void **state)
{
    fixture *f = *state;
    sbt_publish_n(f->bus, "q", 3, NULL);
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(f->bus, "q", 3, 30000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 3);
    /* Another consumer takes over message 1. */
    char sql[300];
    const char *cast = sbt_is_pg() ? "::uuid" : "";
    snprintf(sql, sizeof sql,
             "UPDATE %smessages SET lock_id = "
             "'00000000-0000-7000-8000-000000000001'%s WHERE id = '%s'%s",
             f->prefix, cast, sb_msg_id(m[1]), cast);
    sbt_exec(f->bus, sql);
    int lost[3] = {-1, -1, -1};
    sb_tx *tx = NULL;
    sbt_ok(sb_tx_begin(f->bus, &tx, &err), &err, "begin");
    sbt_ok(sb__renew_many_on(f->bus, tx->conn, m, 3, 60000, lost, &err), &err,
           "renew many");
    assert_int_equal(lost[0], 0);
    assert_int_equal(lost[1], 1);
    assert_int_equal(lost[2], 0);
    sbt_ok(sb__ack_many_on(f->bus, tx->conn, m, 3, lost, &err), &err,
           "ack many");
    sbt_ok(sb_tx_commit(tx, &err), &err, "commit");
    assert_int_equal(lost[0], 0);
    assert_int_equal(lost[1], 1);
    assert_int_equal(lost[2], 0);
    assert_int_equal(sbt_count(f->bus, "q"), 1);
    sb_msg_free_array(m, n);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_publish_claim_ack, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_queue_names_byte_exact, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_non_ascii_round_trip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_idempotent_publish, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delayed_publish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peek, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_all_or_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_transactional_publish, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lease_expiry_and_fencing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_renew_extends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nak_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_headers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_atomic_under_failure,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test(test_open_connect_retries),
        cmocka_unit_test(test_schema_upgrade),
        cmocka_unit_test_setup_teardown(test_schema_verification, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dlq_operations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_first_start, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_batched_settlement_fenced, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name(sbt_backend(), tests, NULL, NULL);
}
