/*
 * test_metrics.c - unit tests of the metrics' pure parts (rule S8): label
 * escaping, the latency bucket a duration falls in (the library's and the
 * server's, which must agree), and the Prometheus text exposition of
 * synthetic snapshots, checked by a small parser of format 0.0.4: every
 * sample follows its family's # HELP and # TYPE, families are contiguous,
 * label values are escaped, histogram buckets are cumulative and end in
 * +Inf equal to _count; a source that could not be read keeps its
 * families without samples and says so in sqlbus_scrape_source_up.
 * The per-type counters: the message type read from headers, the cap of
 * SB_METRICS_TYPES types a queue with its "other" entry, and their
 * families with two escaped labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/metrics_text.h"
#include "transport/metrics.h"

/* ---- a small parser of the text format ---- */

#define MAX_FAMILIES 128
#define MAX_LABELS 8

typedef struct family {
    char name[128];
    char type[16];
    int help, samples;
} family;

typedef struct parsed {
    family f[MAX_FAMILIES];
    int n;
    /* the histogram series being read: its labels without le */
    char hist_series[512];
    double last_le;
    long long last_bucket;
    int saw_inf;
    long long inf_value;
} parsed;

typedef struct sample_line {
    char name[128];
    int n_labels;
    char key[MAX_LABELS][64];
    char value[MAX_LABELS][512]; /* unescaped */
    char number[64];
} sample_line;

static family *find_family(parsed *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->f[i].name, name) == 0)
            return &p->f[i];
    return NULL;
}

/* Parse one sample line; fails the test on bad syntax, including a label
 * value with an unescaped quote or an unknown escape. */
static void parse_sample(const char *line, sample_line *s)
{
    memset(s, 0, sizeof *s);
    const char *p = line;
    size_t n = strcspn(p, "{ ");
    assert_true(n > 0 && n < sizeof s->name);
    memcpy(s->name, p, n);
    p += n;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            assert_true(s->n_labels < MAX_LABELS);
            size_t k = strcspn(p, "=");
            assert_true(k > 0 && k < sizeof s->key[0]);
            memcpy(s->key[s->n_labels], p, k);
            p += k;
            assert_int_equal(*p++, '=');
            assert_int_equal(*p++, '"');
            size_t o = 0;
            while (*p != '"') {
                assert_true(*p != '\0' && *p != '\n');
                char c = *p++;
                if (c == '\\') {
                    c = *p++;
                    assert_true(c == '\\' || c == '"' || c == 'n');
                    if (c == 'n')
                        c = '\n';
                }
                assert_true(o + 1 < sizeof s->value[0]);
                s->value[s->n_labels][o++] = c;
            }
            p++;
            s->n_labels++;
            if (*p == ',')
                p++;
            else
                assert_int_equal(*p, '}');
        }
        p++;
    }
    assert_int_equal(*p++, ' ');
    assert_true(strlen(p) > 0 && strlen(p) < sizeof s->number);
    snprintf(s->number, sizeof s->number, "%s", p);
    char *end = NULL;
    strtod(s->number, &end);
    if (strcmp(s->number, "+Inf") != 0)
        assert_true(end != NULL && *end == '\0');
}

static const char *label(const sample_line *s, const char *key)
{
    for (int i = 0; i < s->n_labels; i++)
        if (strcmp(s->key[i], key) == 0)
            return s->value[i];
    return NULL;
}

/* The labels of `s` but le, as one string: the histogram series. */
static void series_of(const sample_line *s, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < s->n_labels; i++) {
        if (strcmp(s->key[i], "le") == 0)
            continue;
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s=%s;", s->key[i], s->value[i]);
    }
}

/* Check a whole exposition; `p` gets what it found. */
static void check_exposition(const char *text, parsed *p)
{
    memset(p, 0, sizeof *p);
    family *current = NULL;
    char *copy = strdup(text);
    assert_non_null(copy);
    assert_true(strlen(text) == 0 || text[strlen(text) - 1] == '\n');
    for (char *line = copy, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        assert_non_null(next);
        *next++ = '\0';
        if (strncmp(line, "# HELP ", 7) == 0) {
            char name[128];
            size_t n = strcspn(line + 7, " ");
            assert_true(n > 0 && n < sizeof name);
            memcpy(name, line + 7, n);
            name[n] = '\0';
            /* a family appears once: contiguous */
            assert_null(find_family(p, name));
            assert_true(p->n < MAX_FAMILIES);
            current = &p->f[p->n++];
            snprintf(current->name, sizeof current->name, "%s", name);
            current->help = 1;
            assert_true(strlen(line + 7 + n) > 1); /* some help text */
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            assert_non_null(current);
            size_t n = strlen(current->name);
            assert_int_equal(strncmp(line + 7, current->name, n), 0);
            assert_int_equal(line[7 + n], ' ');
            assert_int_equal(current->type[0], '\0'); /* once, after HELP */
            const char *type = line + 8 + n;
            assert_true(strcmp(type, "counter") == 0 ||
                        strcmp(type, "gauge") == 0 ||
                        strcmp(type, "histogram") == 0);
            snprintf(current->type, sizeof current->type, "%s", type);
            continue;
        }
        assert_int_not_equal(line[0], '#');
        sample_line s;
        parse_sample(line, &s);
        /* the sample belongs to the family of the last HELP/TYPE */
        assert_non_null(current);
        assert_true(current->type[0] != '\0');
        size_t fn = strlen(current->name);
        assert_int_equal(strncmp(s.name, current->name, fn), 0);
        const char *suffix = s.name + fn;
        current->samples++;
        if (strcmp(current->type, "histogram") != 0) {
            assert_string_equal(suffix, "");
            if (strcmp(current->type, "counter") == 0)
                assert_true(strtod(s.number, NULL) >= 0);
            continue;
        }
        char ser[512];
        series_of(&s, ser, sizeof ser);
        if (strcmp(suffix, "_bucket") == 0) {
            const char *le = label(&s, "le");
            assert_non_null(le);
            if (strcmp(ser, p->hist_series) != 0 || p->saw_inf) {
                /* a new series starts with its first bucket */
                snprintf(p->hist_series, sizeof p->hist_series, "%s", ser);
                p->last_le = -1;
                p->last_bucket = 0;
                p->saw_inf = 0;
            }
            long long v = strtoll(s.number, NULL, 10);
            assert_true(v >= p->last_bucket); /* cumulative */
            p->last_bucket = v;
            if (strcmp(le, "+Inf") == 0) {
                p->saw_inf = 1;
                p->inf_value = v;
            } else {
                double b = strtod(le, NULL);
                assert_true(b > p->last_le); /* increasing bounds */
                p->last_le = b;
            }
        } else if (strcmp(suffix, "_sum") == 0) {
            assert_true(p->saw_inf); /* after the +Inf bucket */
            assert_string_equal(ser, p->hist_series);
        } else {
            assert_string_equal(suffix, "_count");
            assert_true(p->saw_inf);
            assert_string_equal(ser, p->hist_series);
            assert_int_equal(strtoll(s.number, NULL, 10), p->inf_value);
        }
    }
    for (int i = 0; i < p->n; i++) {
        assert_true(p->f[i].help);
        assert_true(p->f[i].type[0] != '\0');
    }
    free(copy);
}

/* The text of the sample `name{labels}` (labels as written), or NULL. */
static const char *value_of(const char *text, const char *series)
{
    static char v[64];
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += n) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ') {
            size_t k = strcspn(p + n + 1, "\n");
            snprintf(v, sizeof v, "%.*s", (int)k, p + n + 1);
            return v;
        }
    }
    return NULL;
}

/* ---- tests ---- */

static void test_label_escaping(void **state)
{
    (void)state;
    sb_buf b;
    sb__buf_init(&b, 1024);
    sb__prom_label_value(&b, "a\"b\\c\nd");
    assert_string_equal(b.data, "a\\\"b\\\\c\\nd");
    sb__buf_reset(&b);
    sb__prom_label_value(&b, NULL);
    assert_int_equal(b.len, 0);
    sb__prom_label_value(&b, "plain/{q}");
    assert_string_equal(b.data, "plain/{q}");
    sb__buf_reset(&b);
    sb__prom_label_value(&b, "\\\\\n\"");
    assert_string_equal(b.data, "\\\\\\\\\\n\\\"");
    sb__buf_free(&b);
}

/* A bound belongs to its own bucket (le is inclusive); past the last
 * finite bound is +Inf. The library and the server use the same bounds. */
static void test_bucket_choice(void **state)
{
    (void)state;
    static const struct {
        int64_t us;
        int bucket;
    } cases[] = {
        {0, 0},          {-5, 0},       {100, 0},       {101, 1},
        {250, 1},        {251, 2},      {999, 3},       {1000, 3},
        {1001, 4},       {9999999, 15}, {10000000, 15}, {10000001, 16},
        {INT64_MAX, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(sb__prom_bucket(cases[i].us), cases[i].bucket);
        assert_int_equal(sb__latency_bucket(cases[i].us), cases[i].bucket);
    }
    for (int i = 0; i < SB_METRICS_BUCKETS; i++)
        assert_true(sb__prom_le_us[i] == sb__latency_le_us[i]);
    assert_true(sb__prom_le_us[SB_METRICS_BUCKETS - 1] == INT64_MAX);
    for (int64_t us = 0; us < 12000000; us += 997)
        assert_int_equal(sb__prom_bucket(us), sb__latency_bucket(us));
}

static void fill_histogram(sb_latency_histogram *h, int64_t seed)
{
    memset(h, 0, sizeof *h);
    for (int i = 0; i < SB_METRICS_BUCKETS; i++) {
        h->le_us[i] = sb__prom_le_us[i];
        h->counts[i] = (seed * (i + 1)) % 7;
        h->count += h->counts[i];
    }
    h->sum_us = 1234567 * seed;
}

/* A snapshot with every source, odd names, a route with more statuses
 * than it keeps. */
static void test_exposition_is_valid(void **state)
{
    (void)state;
    static sb_queue_stats queues[3];
    memset(queues, 0, sizeof queues);
    snprintf(queues[0].queue, sizeof queues[0].queue, "orders");
    queues[0].ready = 5;
    queues[0].delayed = 1;
    queues[0].in_flight = 2;
    queues[0].dead_lettered = 3;
    queues[0].oldest_ready_age_ms = 1500;
    snprintf(queues[1].queue, sizeof queues[1].queue, "we\"ird\\q\nx");
    queues[1].oldest_ready_age_ms = -1;
    snprintf(queues[2].queue, sizeof queues[2].queue, "deadletter");
    queues[2].ready = 4;
    queues[2].oldest_ready_age_ms = 250;
    static sb_bus_counters c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    c.opened_at_us = 1700000000123456LL;
    c.n_queues = 2;
    snprintf(c.queues[0].queue, sizeof c.queues[0].queue, "orders");
    c.queues[0].published = 10;
    c.queues[0].acked = 7;
    c.queues[0].naked = 2;
    c.queues[0].dead_lettered = 1;
    snprintf(c.queues[1].queue, sizeof c.queues[1].queue, "we\"ird\\q\nx");
    c.other.published = 9;
    fill_histogram(&c.claim, 3);
    fill_histogram(&c.handler, 5);
    sb_metrics_dispatched disp[2] = {{"billing", 2}, {"", 1}};
    sb_metrics_http_route http[2];
    memset(http, 0, sizeof http);
    http[0].pattern = "/api/queues/{q}/messages";
    http[0].n_status = 2;
    http[0].status[0] = 200;
    http[0].requests[0] = 11;
    http[0].status[1] = 404;
    http[0].requests[1] = 1;
    http[0].other_status = 4;
    fill_histogram(&http[0].duration, 2);
    http[1].pattern = "unmatched";
    http[1].n_status = 1;
    http[1].status[0] = 404;
    http[1].requests[0] = 3;
    fill_histogram(&http[1].duration, 1);

    sb_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    sb_queue_stats *list[3] = {&queues[0], &queues[1], &queues[2]};
    s.queues_ok = 1;
    s.queues = list;
    s.n_queues = 3;
    s.lag_ok = 1;
    s.lag_ms = 250;
    s.counters = &c;
    static sb_queue_counts totals[2];
    snprintf(totals[0].queue, sizeof totals[0].queue, "%s", "orders");
    totals[0].published = 70;
    totals[0].dead_lettered = 2;
    totals[1].acked = 5; /* queue "": the queues past a process's 64 */
    s.totals_ok = 1;
    s.totals = totals;
    s.n_totals = 2;
    s.loops_ok = 1;
    s.loops.passes = 40;
    s.loops.rows = 12;
    s.loops.errors = 1;
    s.failed_ok = 1;
    s.failed[0] = 6;
    s.failed[3] = 2;
    s.imports_ok = 1;
    s.failed_imports = 1;
    s.recovery_ok = 1;
    s.registrations[0] = 4;
    s.registrations[3] = 3;
    s.waiters = 4;
    s.dispatched = disp;
    s.n_dispatched = 2;
    s.http = http;
    s.n_http = 2;

    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    assert_int_equal(sb__metrics_text(&s, &b), SB_OK);
    parsed p;
    check_exposition(b.data, &p);

    static const char *const want[] = {
        "sqlbus_queue_ready",
        "sqlbus_queue_delayed",
        "sqlbus_queue_in_flight",
        "sqlbus_queue_dead_lettered",
        "sqlbus_queue_oldest_ready_age_seconds",
        "sqlbus_messages_published_total",
        "sqlbus_messages_acked_total",
        "sqlbus_messages_naked_total",
        "sqlbus_messages_dead_lettered_total",
        "sqlbus_queue_messages_published_total",
        "sqlbus_queue_messages_acked_total",
        "sqlbus_queue_messages_naked_total",
        "sqlbus_queue_messages_dead_lettered_total",
        "sqlbus_claim_duration_seconds",
        "sqlbus_handler_duration_seconds",
        "sqlbus_ingestion_passes_total",
        "sqlbus_ingestion_rows_total",
        "sqlbus_ingestion_errors_total",
        "sqlbus_ingestion_lag_seconds",
        "sqlbus_failed_messages",
        "sqlbus_failed_imports",
        "sqlbus_recovery_registrations",
        "sqlbus_channel_waiters",
        "sqlbus_recovery_dispatched",
        "sqlbus_http_requests_total",
        "sqlbus_http_request_duration_seconds",
        "sqlbus_scrape_source_up"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        family *f = find_family(&p, want[i]);
        if (f == NULL || f->samples == 0)
            fail_msg("family %s missing or empty", want[i]);
    }
    const char *t = b.data;
    assert_string_equal(value_of(t, "sqlbus_queue_ready{queue=\"orders\"}"),
                        "5");
    assert_string_equal(
        value_of(t, "sqlbus_queue_oldest_ready_age_seconds{queue=\"orders\"}"),
        "1.5");
    /* no ready message: age 0; the name escaped */
    assert_string_equal(value_of(t,
                                 "sqlbus_queue_oldest_ready_age_seconds{queue="
                                 "\"we\\\"ird\\\\q\\nx\"}"),
                        "0");
    assert_string_equal(value_of(t, "sqlbus_ingestion_lag_seconds"), "0.25");
    assert_string_equal(
        value_of(t, "sqlbus_messages_published_total{queue=\"orders\"}"), "10");
    assert_string_equal(
        value_of(t, "sqlbus_messages_published_total{queue=\"(other)\"}"), "9");
    /* Every process's counts (the counts table): "" is labelled (other). */
    assert_string_equal(
        value_of(t, "sqlbus_queue_messages_published_total{queue=\"orders\"}"),
        "70");
    assert_string_equal(
        value_of(t, "sqlbus_queue_messages_dead_lettered_total{queue="
                    "\"orders\"}"),
        "2");
    assert_string_equal(
        value_of(t, "sqlbus_queue_messages_acked_total{queue=\"(other)\"}"),
        "5");
    assert_string_equal(
        value_of(t, "sqlbus_scrape_source_up{source=\"counts\"}"), "1");
    assert_string_equal(
        value_of(t, "sqlbus_failed_messages{status=\"retryIssued\"}"), "0");
    assert_string_equal(
        value_of(t, "sqlbus_failed_messages{status=\"archived\"}"), "2");
    assert_string_equal(
        value_of(t, "sqlbus_recovery_dispatched{handler=\"billing\"}"), "2");
    assert_string_equal(
        value_of(t, "sqlbus_http_requests_total{route=\"/api/queues/{q}/"
                    "messages\",status=\"other\"}"),
        "4");
    assert_string_equal(
        value_of(t, "sqlbus_http_requests_total{route=\"unmatched\","
                    "status=\"404\"}"),
        "3");
    /* claim: counts[i] = 3 * (i + 1) % 7 -> 3, 6: cumulative 9 at 250 us */
    assert_string_equal(
        value_of(t, "sqlbus_claim_duration_seconds_bucket{le=\"0.00025\"}"),
        "9");
    char want_count[32];
    snprintf(want_count, sizeof want_count, "%lld", (long long)c.claim.count);
    assert_string_equal(
        value_of(t, "sqlbus_claim_duration_seconds_bucket{le=\"+Inf\"}"),
        want_count);
    assert_string_equal(value_of(t, "sqlbus_claim_duration_seconds_count"),
                        want_count);
    assert_string_equal(value_of(t, "sqlbus_claim_duration_seconds_sum"),
                        "3.703701");
    assert_string_equal(value_of(t, "sqlbus_metrics_start_time_seconds"),
                        "1700000000.123456");
    assert_string_equal(
        value_of(t, "sqlbus_scrape_source_up{source=\"queues\"}"), "1");
    sb__buf_free(&b);
}

/* Sources that could not be read: families stay, samples go, and
 * sqlbus_scrape_source_up says which. No counters, no HTTP: still valid. */
static void test_sources_down(void **state)
{
    (void)state;
    sb_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    assert_int_equal(sb__metrics_text(&s, &b), SB_OK);
    parsed p;
    check_exposition(b.data, &p);
    family *f = find_family(&p, "sqlbus_queue_ready");
    assert_non_null(f);
    assert_int_equal(f->samples, 0);
    assert_non_null(find_family(&p, "sqlbus_failed_messages"));
    assert_int_equal(find_family(&p, "sqlbus_failed_messages")->samples, 0);
    assert_int_equal(find_family(&p, "sqlbus_claim_duration_seconds")->samples,
                     0);
    assert_string_equal(
        value_of(b.data, "sqlbus_scrape_source_up{source=\"queues\"}"), "0");
    assert_string_equal(
        value_of(b.data, "sqlbus_scrape_source_up{source=\"recovery\"}"), "0");
    assert_string_equal(
        value_of(b.data, "sqlbus_scrape_source_up{source=\"counts\"}"), "0");
    assert_int_equal(
        find_family(&p, "sqlbus_queue_messages_acked_total")->samples, 0);
    assert_null(strstr(b.data, "(other)"));
    sb__buf_free(&b);
}

/* Label cardinality: at most SB_METRICS_QUEUE_LABELS queues per gauge;
 * sqlbus_queues still counts them all. */
static void test_queue_labels_capped(void **state)
{
    (void)state;
    size_t n = SB_METRICS_QUEUE_LABELS + 20;
    sb_queue_stats *all = calloc(n, sizeof *all);
    sb_queue_stats **q = calloc(n, sizeof *q);
    assert_non_null(all);
    assert_non_null(q);
    for (size_t i = 0; i < n; i++) {
        q[i] = &all[i];
        snprintf(q[i]->queue, sizeof q[i]->queue, "q%04zu", i);
        q[i]->ready = 1;
    }
    sb_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    s.queues_ok = 1;
    s.queues = q;
    s.n_queues = n;
    sb_buf b;
    sb__buf_init(&b, 4 << 20);
    assert_int_equal(sb__metrics_text(&s, &b), SB_OK);
    parsed p;
    check_exposition(b.data, &p);
    assert_int_equal(find_family(&p, "sqlbus_queue_ready")->samples,
                     SB_METRICS_QUEUE_LABELS);
    char want[16];
    snprintf(want, sizeof want, "%zu", n);
    assert_string_equal(value_of(b.data, "sqlbus_queues"), want);
    sb__buf_free(&b);
    free(q);
    free(all);
}

/* A buffer cap is reported, not overrun. */
static void test_buffer_cap(void **state)
{
    (void)state;
    sb_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    sb_buf b;
    sb__buf_init(&b, 100);
    assert_int_equal(sb__metrics_text(&s, &b), SB_TOOBIG);
    sb__buf_free(&b);
}

/* T43: the message type the per-type metrics read from a headers object: the
 * error store's (sb-message-type, else the first enclosed NServiceBus
 * type without its assembly), keys in any case, whatever the JSON looks
 * like (the one-pass scan and the full parse it falls back to agree). */
static void test_message_type(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int rc;
        const char *type;
    } cases[] = {
        {NULL, SB_MTYPE_NONE, ""},
        {"", SB_MTYPE_NONE, ""},
        {"{}", SB_MTYPE_NONE, ""},
        {" { } ", SB_MTYPE_NONE, ""},
        {"{\"a\":\"b\"}", SB_MTYPE_NONE, ""},
        {"{\"sb-message-type\":\"Shop.OrderPlaced\"}", SB_MTYPE_FOUND,
         "Shop.OrderPlaced"},
        {" {\n \"x\" : \"y\" ,\"SB-Message-TYPE\" : \"A.B\" } ", SB_MTYPE_FOUND,
         "A.B"},
        {"{\"NServiceBus.EnclosedMessageTypes\":\"Shop.Messages.PlaceOrder, "
         "Shop.Messages, Version=1.0.0.0, Culture=neutral;Shop.IOrder, "
         "Shop\"}",
         SB_MTYPE_FOUND, "Shop.Messages.PlaceOrder"},
        {"{\"nservicebus.enclosedmessagetypes\":\"T1 ;T2\"}", SB_MTYPE_FOUND,
         "T1"},
        /* sb-message-type first, wherever it is; an empty one does not
         * count */
        {"{\"NServiceBus.EnclosedMessageTypes\":\"N\",\"sb-message-type\":"
         "\"S\"}",
         SB_MTYPE_FOUND, "S"},
        {"{\"sb-message-type\":\"\",\"NServiceBus.EnclosedMessageTypes\":"
         "\"N, Asm\"}",
         SB_MTYPE_FOUND, "N"},
        {"{\"sb-message-type\":\" ;x\"}", SB_MTYPE_NONE, ""},
        {"{\"sb-message-type\":\"\"}", SB_MTYPE_NONE, ""},
        /* escapes and values that are not strings: the full parse */
        {"{\"sb-message-type\":\"a\\\"b\\\\c\\nd\"}", SB_MTYPE_FOUND,
         "a\"b\\c\nd"},
        {"{\"sb-message-typ\\u0065\":\"Esc\"}", SB_MTYPE_FOUND, "Esc"},
        {"{\"n\":1,\"sb-message-type\":\"AfterNumber\"}", SB_MTYPE_FOUND,
         "AfterNumber"},
        {"{\"x\":\"q\\\"uote\",\"sb-message-type\":\"T\"}", SB_MTYPE_FOUND,
         "T"},
        /* not JSON, not an object */
        {"{", SB_MTYPE_NONE, ""},
        {"{\"sb-message-type\":\"unterminated", SB_MTYPE_NONE, ""},
        {"[\"sb-message-type\",\"X\"]", SB_MTYPE_NONE, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[201];
        int rc = sb__headers_message_type(cases[i].json, out, sizeof out);
        if (rc != cases[i].rc || strcmp(out, cases[i].type) != 0)
            fail_msg("case %zu (%s): rc %d type \"%s\", want %d \"%s\"", i,
                     cases[i].json ? cases[i].json : "NULL", rc, out,
                     cases[i].rc, cases[i].type);
    }
    /* A type of cap bytes or more is too long (counted as other). */
    char json[400], out[201];
    snprintf(json, sizeof json, "{\"sb-message-type\":\"%0201d\"}", 7);
    assert_int_equal(sb__headers_message_type(json, out, sizeof out),
                     SB_MTYPE_TOO_LONG);
    assert_string_equal(out, "");
    snprintf(json, sizeof json, "{\"sb-message-type\":\"%0201d, Asm\"}", 7);
    assert_int_equal(sb__headers_message_type(json, out, sizeof out),
                     SB_MTYPE_TOO_LONG);
    snprintf(json, sizeof json, "{\"sb-message-type\":\"%0200d, Asm\"}", 7);
    assert_int_equal(sb__headers_message_type(json, out, sizeof out),
                     SB_MTYPE_FOUND);
    assert_int_equal(strlen(out), 200);
}

static const sb_type_counts *type_entry(sb_type_counts **list, size_t n,
                                        const char *queue, const char *type,
                                        int other)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i]->queue, queue) == 0 &&
            strcmp(list[i]->type, type) == 0 && list[i]->other == other)
            return list[i];
    return NULL;
}

/* T43: the per-type cap: a queue's first SB_METRICS_TYPES types by name, the
 * rest (and over-long ones) in its "other" entry, untyped messages under
 * ""; queues past SB_METRICS_QUEUES keep types too, under queue "". An
 * entry that counted nothing is left out of the list. */
static void test_type_cap(void **state)
{
    (void)state;
    sb_counters *c = NULL;
    assert_int_equal(sb__counters_new("deadletter", &c, NULL), SB_OK);
    sb_type_counts **list = NULL;
    size_t n = 99;
    assert_int_equal(sb__counters_types(c, &list, &n), SB_OK);
    assert_int_equal(n, 0);
    assert_null(list);

    sb_count_slot *q = sb__counters_slot(c, "orders");
    char json[300];
    sb_type_slot *first[SB_METRICS_TYPES + 20];
    for (int i = 0; i < SB_METRICS_TYPES + 20; i++) {
        snprintf(json, sizeof json, "{\"sb-message-type\":\"T%03d\"}", i);
        first[i] = sb__counters_type(c, q, json);
        assert_non_null(first[i]);
        sb__type_add(first[i], SB_COUNT_ACKED, 1);
        /* Found again, lock-free, as the same slot. */
        assert_ptr_equal(sb__counters_type(c, q, json), first[i]);
    }
    for (int i = 0; i < SB_METRICS_TYPES + 20; i++)
        for (int j = 0; j < i; j++)
            if (i < SB_METRICS_TYPES)
                assert_ptr_not_equal(first[i], first[j]);
    /* Past the cap: one shared slot, also for an over-long type. */
    for (int i = SB_METRICS_TYPES + 1; i < SB_METRICS_TYPES + 20; i++)
        assert_ptr_equal(first[i], first[SB_METRICS_TYPES]);
    snprintf(json, sizeof json, "{\"sb-message-type\":\"%0250d\"}", 1);
    assert_ptr_equal(sb__counters_type(c, q, json), first[SB_METRICS_TYPES]);
    /* No type, and kind NONE or a NULL slot count nothing. */
    sb_type_slot *none = sb__counters_type(c, q, "{\"x\":\"y\"}");
    assert_ptr_equal(sb__counters_type(c, q, NULL), none);
    sb__type_add(none, SB_COUNT_PUBLISHED, 5);
    sb__type_add(none, SB_COUNT_NONE, 5);
    sb__type_add(NULL, SB_COUNT_ACKED, 5);
    assert_null(sb__counters_type(NULL, q, json));
    assert_null(sb__counters_type(c, NULL, json));

    /* Queues past the cap share one slot, and its types. */
    for (int i = 0; i < SB_METRICS_QUEUES; i++) {
        char name[16];
        snprintf(name, sizeof name, "q%02d", i);
        (void)sb__counters_slot(c, name);
    }
    sb_count_slot *over = sb__counters_slot(c, "one-too-many");
    sb_type_slot *ot =
        sb__counters_type(c, over, "{\"sb-message-type\":\"Late\"}");
    sb__type_add(ot, SB_COUNT_DEAD, 2);
    /* A type looked up but never counted is left out. */
    sb_count_slot *quiet = sb__counters_slot(c, "q05");
    (void)sb__counters_type(c, quiet, "{\"sb-message-type\":\"Idle\"}");

    assert_int_equal(sb__counters_types(c, &list, &n), SB_OK);
    /* orders: "" + 100 named + other; (other): Late. */
    assert_int_equal(n, 1 + SB_METRICS_TYPES + 1 + 1);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(list[i]->size, sizeof(sb_type_counts));
    const sb_type_counts *e = type_entry(list, n, "orders", "", 0);
    assert_non_null(e);
    assert_int_equal(e->published, 5);
    assert_int_equal(e->acked, 0);
    assert_ptr_equal(list[0], e); /* untyped first */
    e = type_entry(list, n, "orders", "T000", 0);
    assert_ptr_equal(list[1], e);
    assert_int_equal(e->acked, 1);
    e = type_entry(list, n, "orders", "T099", 0);
    assert_non_null(e);
    assert_int_equal(e->acked, 1);
    assert_null(type_entry(list, n, "orders", "T100", 0));
    e = type_entry(list, n, "orders", "", 1);
    assert_non_null(e);
    assert_int_equal(e->acked, 20);
    e = type_entry(list, n, "", "Late", 0);
    assert_non_null(e);
    assert_int_equal(e->dead_lettered, 2);
    assert_ptr_equal(list[n - 1], e);
    assert_null(type_entry(list, n, "q05", "Idle", 0));
    sb_free(list);
    sb__counters_free(c);
}

/* T43: the per-type families in the exposition: two labels, escaped; "(other)"
 * for the other queue and the other types, "" for untyped messages; a
 * handler histogram only for entries that ran a handler. */
static void test_type_exposition(void **state)
{
    (void)state;
    static sb_type_counts t[4];
    memset(t, 0, sizeof t);
    snprintf(t[0].queue, sizeof t[0].queue, "orders");
    snprintf(t[0].type, sizeof t[0].type, "Shop.OrderPlaced");
    t[0].published = 4;
    t[0].acked = 3;
    fill_histogram(&t[0].handler, 2);
    snprintf(t[1].queue, sizeof t[1].queue, "orders");
    snprintf(t[1].type, sizeof t[1].type, "we\"ird\\type\nx");
    t[1].naked = 2;
    snprintf(t[2].queue, sizeof t[2].queue, "orders");
    t[2].other = 1;
    t[2].dead_lettered = 7;
    t[3].published = 9; /* queue "": past the queue cap; type "": none */
    fill_histogram(&t[3].handler, 1);
    sb_type_counts *list[4] = {&t[0], &t[1], &t[2], &t[3]};
    static sb_bus_counters c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    fill_histogram(&c.claim, 1);
    fill_histogram(&c.handler, 1);
    sb_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    s.counters = &c;
    s.types = list;
    s.n_types = 4;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    assert_int_equal(sb__metrics_text(&s, &b), SB_OK);
    parsed p;
    check_exposition(b.data, &p);
    const char *x = b.data;
    assert_string_equal(
        value_of(x, "sqlbus_messages_acked_by_type_total{queue=\"orders\","
                    "type=\"Shop.OrderPlaced\"}"),
        "3");
    assert_string_equal(
        value_of(x, "sqlbus_messages_naked_by_type_total{queue=\"orders\","
                    "type=\"we\\\"ird\\\\type\\nx\"}"),
        "2");
    assert_string_equal(
        value_of(x, "sqlbus_messages_dead_lettered_by_type_total{queue="
                    "\"orders\",type=\"(other)\"}"),
        "7");
    assert_string_equal(
        value_of(x, "sqlbus_messages_published_by_type_total{queue="
                    "\"(other)\",type=\"\"}"),
        "9");
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)t[0].handler.count);
    assert_string_equal(
        value_of(x, "sqlbus_handler_duration_by_type_seconds_count{queue="
                    "\"orders\",type=\"Shop.OrderPlaced\"}"),
        want);
    assert_string_equal(
        value_of(x, "sqlbus_handler_duration_by_type_seconds_bucket{queue="
                    "\"orders\",type=\"Shop.OrderPlaced\",le=\"+Inf\"}"),
        want);
    assert_non_null(value_of(x, "sqlbus_handler_duration_by_type_seconds_sum{"
                                "queue=\"(other)\",type=\"\"}"));
    /* No handler ran for the naked type's entry: no histogram series. */
    assert_null(strstr(x, "sqlbus_handler_duration_by_type_seconds_count{"
                          "queue=\"orders\",type=\"we"));
    family *f = find_family(&p, "sqlbus_messages_acked_by_type_total");
    assert_non_null(f);
    assert_int_equal(f->samples, 4);
    assert_string_equal(f->type, "counter");
    f = find_family(&p, "sqlbus_handler_duration_by_type_seconds");
    assert_non_null(f);
    assert_string_equal(f->type, "histogram");
    /* The per-queue series are untouched by the per-type ones. */
    assert_null(strstr(x, "sqlbus_messages_acked_total{queue=\"orders\""));
    sb__buf_free(&b);

    /* No types: the families are there without samples. */
    s.n_types = 0;
    sb__buf_init(&b, 1 << 20);
    assert_int_equal(sb__metrics_text(&s, &b), SB_OK);
    check_exposition(b.data, &p);
    assert_int_equal(
        find_family(&p, "sqlbus_messages_published_by_type_total")->samples, 0);
    assert_int_equal(
        find_family(&p, "sqlbus_handler_duration_by_type_seconds")->samples, 0);
    sb__buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_bucket_choice),
        cmocka_unit_test(test_exposition_is_valid),
        cmocka_unit_test(test_sources_down),
        cmocka_unit_test(test_queue_labels_capped),
        cmocka_unit_test(test_buffer_cap),
        cmocka_unit_test(test_message_type),
        cmocka_unit_test(test_type_cap),
        cmocka_unit_test(test_type_exposition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
