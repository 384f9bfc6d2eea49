/*
 * sb_errors_bench.c - the error store's ingestion rate (P10, goal G6):
 * dead-lettered messages with 1 KiB bodies and realistic failure headers,
 * a share of them repeated failures of earlier messages, ingested by
 * sb_errors_ingest; failed messages per second. Public API only.
 *
 *   sb_errors_bench ingest --url URL [--rows 100000] [--repeat-pct 20]
 *                          [--body 1024] [--batch 256]
 *
 * Prints one JSON object on stdout; progress on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqlbus.h"

#define BENCH_NAME "sb_errors_bench"
#include "common.h"

#define PRELOAD_BATCH 1000

typedef struct eargs {
    const char *url;
    long long rows, repeat_pct, body, batch;
} eargs;

static int num(const char *text, long long min, long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, eargs *a)
{
    memset(a, 0, sizeof *a);
    a->rows = 100000;
    a->repeat_pct = 20;
    a->body = 1024;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = v == NULL;
        if (!bad && strcmp(k, "--url") == 0)
            a->url = v;
        else if (!bad && strcmp(k, "--rows") == 0)
            bad = num(v, 1, 10000000, &a->rows);
        else if (!bad && strcmp(k, "--repeat-pct") == 0)
            bad = num(v, 0, 90, &a->repeat_pct);
        else if (!bad && strcmp(k, "--body") == 0)
            bad = num(v, 0, 1 << 20, &a->body);
        else if (!bad && strcmp(k, "--batch") == 0)
            bad = num(v, 0, 5000, &a->batch);
        else
            bad = 1;
        if (bad) {
            logf_("bad option %s", k);
            return -1;
        }
        i++;
    }
    return a->url ? 0 : -1;
}

/* Row i: a new failure of message i, or (repeat_pct of the time) a later
 * failure of an earlier message, with the headers the transport writes. */
static void row_headers(const eargs *a, long long i, char *out, size_t cap)
{
    long long mid = i;
    if (i > 10 && (i * 7919) % 100 < a->repeat_pct)
        mid = (i * 104729) % (i / 2 + 1);
    time_t t = (time_t)(1767225600 + i / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, cap,
             "{\"sb-message-id\":\"msg-%lld\",\"sb-failed-queue\":\"q%lld\","
             "\"sb-time-of-failure\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ\","
             "\"sb-processing-endpoint\":\"Billing\",\"sb-attempts\":\"5\","
             "\"sb-exception-type\":\"Shop.PaymentDeclined\","
             "\"sb-exception-message\":\"card %lld declined by the issuer\","
             "\"sb-exception-stacktrace\":\"Shop.PaymentDeclined: card "
             "declined\\n   at Shop.Billing.Charge(Order o) in "
             "/src/Billing.cs:line %lld\\n   at Shop.Billing.Handle(Msg m) "
             "in /src/Billing.cs:line 12\",\"sb-message-type\":"
             "\"Shop.ChargeCard, Shop.Messages, Version=1.0.0.0\","
             "\"sb-dead-letter-reason\":\"max attempts (5) reached\"}",
             mid, mid % 8, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)(i % 1000) * 1000,
             mid, 40 + mid % 5);
}

static int preload(sb_bus *bus, const eargs *a)
{
    sb_outgoing *m = calloc(PRELOAD_BATCH, sizeof *m);
    char(*h)[1024] = calloc(PRELOAD_BATCH, sizeof *h);
    char *body = malloc((size_t)a->body + 1);
    if (m == NULL || h == NULL || body == NULL) {
        free(m);
        free(h);
        free(body);
        return -1;
    }
    for (long long k = 0; k < a->body; k++)
        body[k] = (char)('a' + k % 26);
    int rc = SB_OK;
    for (long long at = 0; rc == SB_OK && at < a->rows; at += PRELOAD_BATCH) {
        size_t n = (size_t)(a->rows - at < PRELOAD_BATCH ? a->rows - at
                                                         : PRELOAD_BATCH);
        for (size_t i = 0; i < n; i++) {
            row_headers(a, at + (long long)i, h[i], sizeof h[i]);
            m[i].payload = body;
            m[i].payload_len = (size_t)a->body;
            m[i].headers_json = h[i];
        }
        sb_error err;
        rc = sb_publish_batch(bus, NULL, "deadletter", m, n, NULL, &err);
        if (rc != SB_OK)
            logf_("preload: %s", err.message);
    }
    free(m);
    free(h);
    free(body);
    return rc == SB_OK ? 0 : -1;
}

static int cmd_ingest(const eargs *a)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = a->url;
    o.log = bench_log;
    o.log_level = SB_LOG_WARN;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    sb_error err;
    sb_errors_options eo;
    memset(&eo, 0, sizeof eo);
    eo.size = sizeof eo;
    eo.ingest_batch_size = (int)a->batch;
    if (sb_open(&o, &bus, &err) != SB_OK ||
        sb_errors_open(bus, &eo, &store, &err) != SB_OK) {
        fail_json("errors-ingest", err.message);
        sb_close(bus);
        return 1;
    }
    logf_("preloading %lld dead-lettered rows ...", a->rows);
    if (preload(bus, a) != 0) {
        fail_json("errors-ingest", "preload failed");
        sb_errors_close(store);
        sb_close(bus);
        return 1;
    }
    sb_ingest_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    int64_t t0 = mono_ns();
    int rc = sb_errors_ingest(store, &s, &err);
    double secs = (double)(mono_ns() - t0) / 1e9;
    if (rc != SB_OK) {
        fail_json("errors-ingest", err.message);
    } else {
        printf("{\"scenario\":\"errors-ingest\",\"ok\":true,\"rows\":%" PRId64
               ",\"messages\":%" PRId64 ",\"batches\":%" PRId64
               ",\"failed_imports\":%" PRId64 ",\"body_bytes\":%lld,"
               "\"repeat_pct\":%lld,\"seconds\":%.3f,\"rows_per_s\":%.1f}\n",
               s.rows, s.messages, s.batches, s.failed_imports, a->body,
               a->repeat_pct, secs, (double)s.rows / secs);
    }
    sb_errors_close(store);
    sb_close(bus);
    return rc == SB_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    eargs a;
    if (argc < 2 || strcmp(argv[1], "ingest") != 0 ||
        parse(argc, argv, &a) != 0) {
        fprintf(stderr, "usage: sb_errors_bench ingest --url URL [--rows N] "
                        "[--repeat-pct 20] [--body 1024] [--batch 256]\n");
        return 2;
    }
    return cmd_ingest(&a);
}
