/*
 * test_ingress.c - the response-ingress queue (C24) on both backends:
 * replies published by external producers, their correlation id taken
 * from the header or from JSON paths, and rows without an id or over the
 * size budget dead-lettered with a reason instead of redelivered forever.
 */
#include "harness.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct env {
    char prefix[64];
    sb_bus *bus;
    sb_channel *ch;
} env;

static void env_open(env *e, size_t budget)
{
    memset(e, 0, sizeof e[0]);
    snprintf(e->prefix, sizeof e->prefix, "%s", sbt_new_prefix());
    e->bus = sbt_open(e->prefix, NULL);
    sb_channel_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.default_timeout_ms = 20000;
    o.confirmation_timeout_ms = 1000;
    o.full_sweep_interval_ms = 100;
    sb_error err;
    sbt_ok(sb_channel_open(e->bus, &o, &e->ch, &err), &err, "channel open");
    static const char *const paths[] = {"$.correlationId",
                                        "meta.envelope.correlation_id"};
    sb_ingress_options io;
    memset(&io, 0, sizeof io);
    io.size = sizeof io;
    io.json_paths = paths;
    io.n_json_paths = 2;
    io.max_bytes = budget;
    sbt_ok(sb_channel_start_ingress(e->ch, &io, &err), &err, "ingress");
}

static void env_close(env *e)
{
    sb_channel_close(e->ch);
    sbt_drop(e->bus, e->prefix);
    sb_close(e->bus);
}

/* Publish a raw reply to the ingress queue. */
static void produce(env *e, const char *payload, const char *headers)
{
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = payload;
    o.payload_len = strlen(payload);
    o.headers_json = headers;
    sb_error err;
    sbt_ok(sb_publish(e->bus, NULL, "response", &o, NULL, &err), &err,
           "publish");
}

static sb_waiter *attach(env *e, const char *cid)
{
    sb_waiter *w = NULL;
    sb_error err;
    sbt_ok(sb_attach(e->ch, cid, NULL, &w, &err), &err, "attach");
    return w;
}

static void expect_reply(sb_waiter *w, int want_rc, const char *want)
{
    sb_reply *r = NULL;
    sb_error err;
    int rc = sb_waiter_wait(w, &r, &err);
    if (rc != want_rc)
        fail_msg("wait: %s (%s)", sb_strerror(rc), err.message);
    assert_non_null(r);
    if (want_rc == SB_REPLY_ERROR) {
        assert_string_equal(sb_reply_error_type(r), want);
    } else {
        size_t len = 0;
        const char *data = sb_reply_data(r, &len);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(data, want, len);
    }
    sb_reply_free(r);
    sb_waiter_free(w);
}

/* C24: the header first, then the JSON paths in order; nested JSON
 * strings unwrapped; member names case-insensitive. */
static void test_header_then_json_paths(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0);
    char a[64], b[64], c[64];
    snprintf(a, sizeof a, "hdr-%ld", (long)getpid());
    snprintf(b, sizeof b, "top-%ld", (long)getpid());
    snprintf(c, sizeof c, "nested-%ld", (long)getpid());
    sb_waiter *wa = attach(&e, a), *wb = attach(&e, b), *wc = attach(&e, c);
    char headers[128], body[256], nested[256];
    /* The header wins over a payload that names another id. */
    snprintf(headers, sizeof headers, "{\"sb-correlation-id\":\"%s\"}", a);
    snprintf(body, sizeof body, "{\"correlationId\":\"%s\"}", b);
    produce(&e, body, headers);
    expect_reply(wa, SB_OK, body);
    produce(&e, body, NULL);
    expect_reply(wb, SB_OK, body);
    snprintf(nested, sizeof nested,
             "{\"META\":\"{\\\"Envelope\\\":{\\\"Correlation_ID\\\":"
             "\\\"%s\\\"}}\"}",
             c);
    produce(&e, nested, NULL);
    expect_reply(wc, SB_OK, nested);
    uint64_t in = 0, dropped = 0;
    assert_int_equal(sb_channel_ingress_counts(e.ch, &in, &dropped), SB_OK);
    assert_int_equal(in, 3);
    assert_int_equal(dropped, 0);
    env_close(&e);
}

/* C24, C3: an sb-error-type header makes an error reply. */
static void test_error_header(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0);
    char cid[64], headers[256];
    snprintf(cid, sizeof cid, "err-%ld", (long)getpid());
    sb_waiter *w = attach(&e, cid);
    snprintf(headers, sizeof headers,
             "{\"sb-correlation-id\":\"%s\",\"sb-error-type\":\"Refused\","
             "\"sb-error-message\":\"no stock\"}",
             cid);
    produce(&e, "{}", headers);
    expect_reply(w, SB_REPLY_ERROR, "Refused");
    env_close(&e);
}

static int dead_lettered(env *e, const char *needle)
{
    sb_msg **d = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_dlq_list(e->bus, NULL, &d, &n, &err), &err, "dlq list");
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        const char *why = sb_msg_header(d[i], "sb-dead-letter-reason");
        found += why != NULL && strstr(why, needle) != NULL;
    }
    sb_msg_free_array(d, n);
    return found;
}

/* C24: no id, an invalid id, and a row over the budget are each logged,
 * counted and dead-lettered with the reason; valid rows keep flowing. */
static void test_unusable_rows_dead_lettered(void **state)
{
    (void)state;
    env e;
    env_open(&e, 128);
    produce(&e, "{\"other\":1}", NULL);
    produce(&e, "not json at all", NULL);
    produce(&e, "{\"correlationId\":\" padded \"}", NULL);
    char big[512];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "{\"correlationId\":\"big\",\"pad\":\"", 30);
    memcpy(big + sizeof big - 3, "\"}", 2);
    produce(&e, big, NULL);
    char cid[64], body[128];
    snprintf(cid, sizeof cid, "after-%ld", (long)getpid());
    sb_waiter *w = attach(&e, cid);
    snprintf(body, sizeof body, "{\"correlationId\":\"%s\"}", cid);
    produce(&e, body, NULL);
    expect_reply(w, SB_OK, body);
    /* The counter moves when a row is judged; its dead letter, and the
     * ack of the row that was answered, commit with the worker's next
     * cycle (T15's group commit), so wait for all three. */
    uint64_t in = 0, dropped = 0;
    for (int i = 0; i < 200 && (dropped < 4 || dead_lettered(&e, "") < 4 ||
                                sbt_count(e.bus, "response") > 0);
         i++) {
        sb_channel_ingress_counts(e.ch, &in, &dropped);
        sbt_sleep_ms(20);
    }
    assert_int_equal(dropped, 4);
    assert_int_equal(dead_lettered(&e, ""), 4);
    assert_int_equal(in, 1);
    assert_int_equal(dead_lettered(&e, "no configured JSON path"), 1);
    assert_int_equal(dead_lettered(&e, "payload"), 1);
    assert_int_equal(dead_lettered(&e, "white space"), 1);
    assert_int_equal(dead_lettered(&e, "the budget is 128"), 1);
    assert_int_equal(sbt_count(e.bus, "response"), 0);
    env_close(&e);
}

/* Bad options name the field and the limit; nothing starts. */
static void test_bad_options(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", sbt_new_prefix());
    sb_bus *bus = sbt_open(prefix, NULL);
    sb_channel *ch = NULL;
    sb_error err;
    sbt_ok(sb_channel_open(bus, NULL, &ch, &err), &err, "channel open");
    static const char *const bad[] = {"a..b"};
    sb_ingress_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.json_paths = bad;
    o.n_json_paths = 1;
    assert_int_equal(sb_channel_start_ingress(ch, &o, &err), SB_INVALID);
    assert_string_equal(err.field, "path");
    o.n_json_paths = 17;
    assert_int_equal(sb_channel_start_ingress(ch, &o, &err), SB_INVALID);
    assert_string_equal(err.field, "n_json_paths");
    o.n_json_paths = 0;
    o.queue = "bad queue\n";
    assert_int_equal(sb_channel_start_ingress(ch, &o, &err), SB_INVALID);
    o.queue = NULL;
    o.max_bytes = (size_t)1 << 40;
    assert_int_equal(sb_channel_start_ingress(ch, &o, &err), SB_INVALID);
    assert_string_equal(err.field, "max_bytes");
    assert_int_equal(sb_channel_ingress_counts(ch, NULL, NULL), SB_EMPTY);
    o.max_bytes = 0;
    sbt_ok(sb_channel_start_ingress(ch, &o, &err), &err, "ingress");
    assert_int_equal(sb_channel_start_ingress(ch, &o, &err), SB_MISUSE);
    sb_channel_close(ch);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_then_json_paths),
        cmocka_unit_test(test_error_header),
        cmocka_unit_test(test_unusable_rows_dead_lettered),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
