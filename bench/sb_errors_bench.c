/*
 * sb_errors_bench.c - the error store's benchmarks (P10 / G6 and
 * P11 / G7 of shared/spec/performance.md):
 *
 *   sb_errors_bench ingest --url URL [--rows 100000] [--repeat-pct 20]
 *                          [--body 1024] [--batch 256] [--ingesters 1]
 *                          [--phase all|preload|ingest]
 *       dead-lettered messages with 1 KiB bodies and realistic failure
 *       headers, a share of them repeated failures of earlier messages,
 *       ingested by sb_errors_ingest (--ingesters threads at once, each
 *       one pass over the shared dead-letter queue); failed messages per
 *       second.
 *
 *   sb_errors_bench baseline --url URL [--rows 100000] [--repeat-pct 20]
 *                            [--body 1024] [--batch 256] [--chunk 50]
 *                            [--phase all|create|insert]
 *       the physical limit beside it: the same rows, with the columns and
 *       sizes of the store's failed_messages row, written by multi-row
 *       INSERT statements of --chunk rows, --batch rows per transaction,
 *       into a plain table with only a primary key, through the bus's own
 *       connection (same durability settings), with plain sqlite3 / libpq
 *       calls on sb_tx_native.
 *
 *   sb_errors_bench scale --url URL [--rows 1000000] [--repeat-pct 10]
 *                         [--runs 200] [--chunk 25000]
 *                         [--phase all|populate|query] [--max-seconds 300]
 *       P11: populate the store through ingestion with --rows failed
 *       messages (20 failed queues, 10 endpoints, 30 message types, 50
 *       exception types / stack traces, mixed statuses), then time the
 *       dashboard's queries (--runs each, interleaved): p50 / p99 / max.
 *
 * Each prints one JSON object on stdout; progress on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqlbus.h"
/* The store's unique-id derivation (E6), so that the scale benchmark can
 * read random messages by id without a query to find them. */
#include "errors/ids.h"

#define BENCH_NAME "sb_errors_bench"
#include "common.h"

#define PRELOAD_BATCH 1000
#define HEADERS_CAP 2048

typedef struct eargs {
    const char *cmd, *url, *phase;
    long long rows, repeat_pct, body, batch, chunk, runs, max_seconds;
    long long ingesters;
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
    a->cmd = argv[1];
    int scale = strcmp(a->cmd, "scale") == 0;
    a->rows = scale ? 1000000 : 100000;
    a->repeat_pct = scale ? 10 : 20;
    a->body = 1024;
    a->chunk = scale ? 25000 : 50;
    a->runs = 200;
    a->max_seconds = 300;
    a->ingesters = 1;
    a->phase = "all";
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = v == NULL;
        if (!bad && strcmp(k, "--url") == 0)
            a->url = v;
        else if (!bad && strcmp(k, "--phase") == 0)
            a->phase = v;
        else if (!bad && strcmp(k, "--rows") == 0)
            bad = num(v, 1, 10000000, &a->rows);
        else if (!bad && strcmp(k, "--repeat-pct") == 0)
            bad = num(v, 0, 90, &a->repeat_pct);
        else if (!bad && strcmp(k, "--body") == 0)
            bad = num(v, 0, 1 << 20, &a->body);
        else if (!bad && strcmp(k, "--batch") == 0)
            bad = num(v, 0, 5000, &a->batch);
        else if (!bad && strcmp(k, "--chunk") == 0)
            bad = num(v, 1, 1000000, &a->chunk);
        else if (!bad && strcmp(k, "--runs") == 0)
            bad = num(v, 1, 1000000, &a->runs);
        else if (!bad && strcmp(k, "--max-seconds") == 0)
            bad = num(v, 1, 86400, &a->max_seconds);
        else if (!bad && strcmp(k, "--ingesters") == 0)
            bad = num(v, 1, 8, &a->ingesters);
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

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static void iso_time(int64_t secs, long long micros, char *out, size_t cap)
{
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, micros);
}

/* ------------------------------------------------------------------ */
/* P10 rows: row i is a new failure of message i, or (repeat_pct of the  */
/* time) a later failure of an earlier message.                         */
/* ------------------------------------------------------------------ */

static long long p10_mid(const eargs *a, long long i)
{
    if (i > 10 && (i * 7919) % 100 < a->repeat_pct)
        return (i * 104729) % (i / 2 + 1);
    return i;
}

#define P10_EPOCH 1767225600LL

static void row_headers(const eargs *a, long long i, char *out, size_t cap)
{
    long long mid = p10_mid(a, i);
    char when[96];
    iso_time(P10_EPOCH + i / 1000, (i % 1000) * 1000, when, sizeof when);
    snprintf(out, cap,
             "{\"sb-message-id\":\"msg-%lld\",\"sb-failed-queue\":\"q%lld\","
             "\"sb-time-of-failure\":\"%s\","
             "\"sb-processing-endpoint\":\"Billing\",\"sb-attempts\":\"5\","
             "\"sb-exception-type\":\"Shop.PaymentDeclined\","
             "\"sb-exception-message\":\"card %lld declined by the issuer\","
             "\"sb-exception-stacktrace\":\"Shop.PaymentDeclined: card "
             "declined\\n   at Shop.Billing.Charge(Order o) in "
             "/src/Billing.cs:line %lld\\n   at Shop.Billing.Handle(Msg m) "
             "in /src/Billing.cs:line 12\",\"sb-message-type\":"
             "\"Shop.ChargeCard, Shop.Messages, Version=1.0.0.0\","
             "\"sb-dead-letter-reason\":\"max attempts (5) reached\"}",
             mid, mid % 8, when, mid, 40 + mid % 5);
}

/* ------------------------------------------------------------------ */
/* P11 rows: ~20 failed queues of 10 endpoints, 30 message types, 50     */
/* exception types with their own stack traces, words for the search.   */
/* ------------------------------------------------------------------ */

static const char *const endpoints[10] = {
    "Sales",   "Billing",   "Shipping",  "Inventory", "Payments",
    "Notices", "Customers", "Reporting", "Catalog",   "Returns"};

#define SCALE_EPOCH 1764547200LL /* 2025-12-01 */

static int scale_queue(long long m)
{
    return (int)(mix((uint64_t)m) % 20);
}

static void scale_queue_name(int q, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s", endpoints[q / 2], q % 2 ? ".Priority" : "");
}

static void scale_message_id(long long m, char *out, size_t cap)
{
    snprintf(out, cap, "msg-%07lld", m);
}

/* The unique id ingestion gives message m (E6). */
static void scale_unique_id(long long m, char out[37])
{
    char mid[32];
    scale_message_id(m, mid, sizeof mid);
    sb__deterministic_guid_str(mid, endpoints[scale_queue(m) / 2], out);
}

/* Row r, a failure of message m: headers and body. */
static void scale_row(long long r, long long m, char *h, size_t hcap,
                      char *body, size_t body_len)
{
    int q = scale_queue(m);
    const char *ep = endpoints[q / 2];
    char queue[40], mid[32], when[96];
    scale_queue_name(q, queue, sizeof queue);
    scale_message_id(m, mid, sizeof mid);
    iso_time(SCALE_EPOCH + r * 2, (long long)(mix((uint64_t)r) % 1000000), when,
             sizeof when);
    int ex = (int)(mix((uint64_t)m + 77) % 50);
    int mt = (int)(mix((uint64_t)m + 99) % 3);
    int host = (int)(mix((uint64_t)m + 5) % 4);
    snprintf(h, hcap,
             "{\"sb-message-id\":\"%s\",\"sb-failed-queue\":\"%s\","
             "\"sb-time-of-failure\":\"%s\",\"sb-processing-endpoint\":"
             "\"%s\",\"sb-host\":\"node-%d\",\"sb-host-id\":\"host-%d\","
             "\"sb-instance-id\":\"%s-node-%d\",\"sb-attempts\":\"5\","
             "\"sb-conversation-id\":\"conv-%07lld\","
             "\"sb-exception-type\":\"Shop.Errors.Failure%02d\","
             "\"sb-exception-message\":\"failure %02d while handling order "
             "ord%07lld\",\"sb-exception-stacktrace\":\"Shop.Errors."
             "Failure%02d: failure %02d\\n   at Shop.%s.Handler%02d.Handle("
             "Msg m) in /src/%s/Handler%02d.cs:line %d\\n   at "
             "Shop.Pipeline.Invoke(Context c) in /src/Pipeline.cs:line "
             "42\",\"sb-message-type\":\"Shop.%s.Command%d, Shop.Messages, "
             "Version=1.0.0.0\",\"sb-content-type\":\"application/json\","
             "\"sb-dead-letter-reason\":\"max attempts (5) reached\"}",
             mid, queue, when, ep, host, host, ep, host, m, ex, ex, m, ex, ex,
             ep, ex, ep, ex, 30 + ex, ep, mt);
    static const char filler[] = " lorem ipsum dolor sit amet consectetur "
                                 "adipiscing elit sed do eiusmod tempor";
    int n = snprintf(body, body_len + 1,
                     "{\"orderId\":\"ord%07lld\",\"customer\":\"cust%05lld\","
                     "\"tag\":\"tag%02lld\",\"note\":\"",
                     m, (long long)(mix((uint64_t)m + 3) % 50000), m % 100);
    size_t at = n > 0 ? (size_t)n : 0;
    if (at > body_len)
        at = body_len;
    while (at + 2 < body_len) {
        body[at] = filler[at % (sizeof filler - 1)];
        at++;
    }
    if (at + 2 == body_len) {
        body[at++] = '"';
        body[at++] = '}';
    }
    body[body_len] = '\0';
}

/* ------------------------------------------------------------------ */
/* opening                                                              */
/* ------------------------------------------------------------------ */

static int open_store(const eargs *a, sb_bus **bus, sb_errors **store,
                      sb_error *err)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = a->url;
    o.log = bench_log;
    o.log_level = SB_LOG_WARN;
    *bus = NULL;
    if (store != NULL)
        *store = NULL;
    if (sb_open(&o, bus, err) != SB_OK)
        return -1;
    if (store == NULL)
        return 0;
    sb_errors_options eo;
    memset(&eo, 0, sizeof eo);
    eo.size = sizeof eo;
    eo.ingest_batch_size = (int)a->batch;
    if (sb_errors_open(*bus, &eo, store, err) != SB_OK) {
        sb_close(*bus);
        *bus = NULL;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* ingest (P10)                                                         */
/* ------------------------------------------------------------------ */

typedef void (*row_fn)(const eargs *a, long long r, char *h, size_t hcap,
                       char *body, void *user);

static void p10_row(const eargs *a, long long r, char *h, size_t hcap,
                    char *body, void *user)
{
    (void)body;
    (void)user;
    row_headers(a, r, h, hcap);
}

/* Dead-letter `n` rows from `first` on, PRELOAD_BATCH per transaction. */
static int preload(sb_bus *bus, const eargs *a, long long first, long long n,
                   row_fn fn, void *user)
{
    sb_outgoing *m = calloc(PRELOAD_BATCH, sizeof *m);
    char(*h)[HEADERS_CAP] = calloc(PRELOAD_BATCH, sizeof *h);
    char *bodies = malloc((size_t)PRELOAD_BATCH * ((size_t)a->body + 1));
    if (m == NULL || h == NULL || bodies == NULL) {
        free(m);
        free(h);
        free(bodies);
        return -1;
    }
    for (long long k = 0; k < a->body; k++)
        bodies[k] = (char)('a' + k % 26);
    int rc = SB_OK;
    for (long long at = 0; rc == SB_OK && at < n; at += PRELOAD_BATCH) {
        size_t cnt = (size_t)(n - at < PRELOAD_BATCH ? n - at : PRELOAD_BATCH);
        for (size_t i = 0; i < cnt; i++) {
            char *body = bodies + i * ((size_t)a->body + 1);
            if (fn == p10_row)
                body = bodies; /* one shared body, as before */
            fn(a, first + at + (long long)i, h[i], sizeof h[i], body, user);
            m[i].payload = body;
            m[i].payload_len = (size_t)a->body;
            m[i].headers_json = h[i];
        }
        sb_error err;
        rc = sb_publish_batch(bus, NULL, "deadletter", m, cnt, NULL, &err);
        if (rc != SB_OK)
            logf_("preload: %s", err.message);
    }
    free(m);
    free(h);
    free(bodies);
    return rc == SB_OK ? 0 : -1;
}

typedef struct ingester {
    pthread_t thread;
    sb_errors *store;
    sb_ingest_stats stats;
    int rc;
    sb_error err;
} ingester;

static void *ingest_thread(void *arg)
{
    ingester *g = arg;
    g->rc = sb_errors_ingest(g->store, &g->stats, &g->err);
    return NULL;
}

/* --ingesters passes at once over the dead-letter queue; their stats
 * summed into *s; the first failure's code and message. */
static int ingest_all(const eargs *a, sb_errors *store, sb_ingest_stats *s,
                      sb_error *err)
{
    ingester g[8];
    long long started = 0;
    memset(g, 0, sizeof g);
    for (; started < a->ingesters; started++) {
        g[started].store = store;
        g[started].stats.size = sizeof g[started].stats;
        if (pthread_create(&g[started].thread, NULL, ingest_thread,
                           &g[started]) != 0)
            break;
    }
    int rc = started == a->ingesters ? SB_OK : SB_ERROR;
    if (rc != SB_OK)
        snprintf(err->message, sizeof err->message, "pthread_create failed");
    for (long long i = 0; i < started; i++) {
        pthread_join(g[i].thread, NULL);
        s->batches += g[i].stats.batches;
        s->rows += g[i].stats.rows;
        s->messages += g[i].stats.messages;
        s->failed_imports += g[i].stats.failed_imports;
        s->confirmations += g[i].stats.confirmations;
        if (g[i].rc != SB_OK && rc == SB_OK) {
            rc = g[i].rc;
            *err = g[i].err;
        }
    }
    return rc;
}

static int cmd_ingest(const eargs *a)
{
    int do_preload = strcmp(a->phase, "ingest") != 0;
    int do_ingest = strcmp(a->phase, "preload") != 0;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    sb_error err;
    if (open_store(a, &bus, &store, &err) != 0) {
        fail_json("errors-ingest", err.message);
        return 1;
    }
    if (do_preload) {
        logf_("preloading %lld dead-lettered rows ...", a->rows);
        if (preload(bus, a, 0, a->rows, p10_row, NULL) != 0) {
            fail_json("errors-ingest", "preload failed");
            sb_errors_close(store);
            sb_close(bus);
            return 1;
        }
        if (!do_ingest)
            printf("{\"scenario\":\"errors-preload\",\"ok\":true,"
                   "\"rows\":%lld}\n",
                   a->rows);
    }
    int rc = SB_OK;
    if (do_ingest) {
        sb_ingest_stats s;
        memset(&s, 0, sizeof s);
        s.size = sizeof s;
        int64_t t0 = mono_ns();
        rc = ingest_all(a, store, &s, &err);
        double secs = (double)(mono_ns() - t0) / 1e9;
        if (rc != SB_OK) {
            fail_json("errors-ingest", err.message);
        } else {
            int ok = s.rows == a->rows && s.failed_imports == 0;
            printf("{\"scenario\":\"errors-ingest\",\"ok\":%s,\"rows\":%" PRId64
                   ",\"messages\":%" PRId64 ",\"batches\":%" PRId64
                   ",\"failed_imports\":%" PRId64 ",\"body_bytes\":%lld,"
                   "\"repeat_pct\":%lld,\"batch\":%lld,\"ingesters\":%lld,"
                   "\"seconds\":%.3f,\"rows_per_s\":%.1f}\n",
                   ok ? "true" : "false", s.rows, s.messages, s.batches,
                   s.failed_imports, a->body, a->repeat_pct,
                   a->batch ? a->batch : 256, a->ingesters, secs,
                   (double)s.rows / secs);
            if (!ok)
                rc = SB_INVALID;
        }
    }
    sb_errors_close(store);
    sb_close(bus);
    return rc == SB_OK ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* baseline (P10): the same rows, plain multi-row INSERTs               */
/* ------------------------------------------------------------------ */

#define B_COLS 25
#define B_TABLE "sb_errors_bench_baseline"

/* The failed_messages columns (src/errors/sql.c), in table order: 't'
 * text, 'i' integer; NOT NULL for the first eight as there. */
static const struct {
    const char *name;
    char type;
} bcols[B_COLS] = {{"unique_message_id", 't'},
                   {"status", 'i'},
                   {"status_changed_at", 'i'},
                   {"last_modified", 'i'},
                   {"number_of_processing_attempts", 'i'},
                   {"first_time_of_failure", 'i'},
                   {"last_time_of_failure", 'i'},
                   {"last_attempted_at", 'i'},
                   {"message_id", 't'},
                   {"message_type", 't'},
                   {"failed_queue", 't'},
                   {"processing_endpoint", 't'},
                   {"host", 't'},
                   {"host_id", 't'},
                   {"instance_id", 't'},
                   {"exception_type", 't'},
                   {"exception_message", 't'},
                   {"time_sent", 'i'},
                   {"conversation_id", 't'},
                   {"is_system", 'i'},
                   {"headers", 't'},
                   {"body_text", 't'},
                   {"body_size", 'i'},
                   {"body_content_type", 't'},
                   {"body_stored_externally", 'i'}};

/* One row's values as text (NULL = SQL NULL); borrowed from `bv`. */
typedef struct brow {
    char uid[40], mid[32], queue[16], exmsg[64], now[24], t[24];
    char headers[HEADERS_CAP];
    const char *v[B_COLS];
} brow;

static void baseline_row(const eargs *a, long long i, int64_t now_us,
                         const char *body, const char *body_size, brow *b)
{
    long long mid = p10_mid(a, i);
    /* A random-looking 36-character id, like the MD5-based unique ids:
     * inserts land all over the primary key, as in the store. */
    uint64_t x = mix((uint64_t)i + 1), y = mix((uint64_t)i + 0x9e3779b9);
    snprintf(b->uid, sizeof b->uid, "%08llx-%04llx-%04llx-%04llx-%012llx",
             (unsigned long long)(x >> 32),
             (unsigned long long)((x >> 16) & 0xffff),
             (unsigned long long)(x & 0xffff), (unsigned long long)(y >> 48),
             (unsigned long long)(y & 0xffffffffffffULL));
    snprintf(b->mid, sizeof b->mid, "msg-%lld", mid);
    snprintf(b->queue, sizeof b->queue, "q%lld", mid % 8);
    snprintf(b->exmsg, sizeof b->exmsg, "card %lld declined by the issuer",
             mid);
    snprintf(b->now, sizeof b->now, "%lld", (long long)now_us);
    snprintf(b->t, sizeof b->t, "%lld",
             (P10_EPOCH + i / 1000) * 1000000LL + (i % 1000) * 1000);
    row_headers(a, i, b->headers, sizeof b->headers);
    const char *v[B_COLS] = {b->uid,     "0",
                             b->now,     b->now,
                             "1",        b->t,
                             b->t,       b->t,
                             b->mid,     "Shop.ChargeCard",
                             b->queue,   "Billing",
                             NULL,       NULL,
                             NULL,       "Shop.PaymentDeclined",
                             b->exmsg,   NULL,
                             NULL,       "0",
                             b->headers, body,
                             body_size,  NULL,
                             "0"};
    memcpy(b->v, v, sizeof v);
}

/* "INSERT INTO t VALUES (...), ... " for n rows, $k or ?k placeholders. */
static char *insert_sql(size_t n, int pg)
{
    size_t cap = 64 + n * B_COLS * 16;
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    size_t at = (size_t)snprintf(s, cap, "INSERT INTO " B_TABLE " VALUES ");
    for (size_t r = 0; r < n; r++)
        for (int c = 0; c < B_COLS; c++)
            at += (size_t)snprintf(s + at, cap - at, "%s%c%zu%s",
                                   c == 0 ? (r ? ",(" : "(") : ",",
                                   pg ? '$' : '?', r * B_COLS + (size_t)c + 1,
                                   c == B_COLS - 1 ? ")" : "");
    return s;
}

static int baseline_create(sb_bus *bus, int pg, sb_error *err)
{
    char ddl[4096];
    size_t at = (size_t)snprintf(ddl, sizeof ddl,
                                 "DROP TABLE IF EXISTS " B_TABLE
                                 "; CREATE TABLE " B_TABLE " (");
    for (int c = 0; c < B_COLS; c++)
        at += (size_t)snprintf(ddl + at, sizeof ddl - at, "%s%s %s%s",
                               c ? ", " : "", bcols[c].name,
                               bcols[c].type == 'i' ? "BIGINT"
                               : pg                 ? "TEXT COLLATE \"C\""
                                                    : "TEXT",
                               c == 0  ? " NOT NULL PRIMARY KEY"
                               : c < 8 ? " NOT NULL"
                                       : "");
    snprintf(ddl + at, sizeof ddl - at, ")");
    sb_tx *tx = NULL;
    if (sb_tx_begin(bus, &tx, err) != SB_OK)
        return -1;
    if (sb_tx_exec(tx, ddl, err) != SB_OK) {
        sb_tx_rollback(tx);
        return -1;
    }
    return sb_tx_commit(tx, err) == SB_OK ? 0 : -1;
}

/* Connections on which the two PostgreSQL statements are prepared. */
#define MAX_PREPARED 16
static PGconn *prepared_on[MAX_PREPARED];

static int pg_insert(PGconn *pg, size_t n, size_t full, const char *sql,
                     const char *const *values, char *why, size_t cap)
{
    const char *name = n == full ? "eb_full" : "eb_part";
    int known = 0;
    for (int i = 0; i < MAX_PREPARED && prepared_on[i] != NULL; i++)
        known |= prepared_on[i] == pg;
    if (!known || n != full) {
        PGresult *res = PQprepare(pg, name, sql, (int)(n * B_COLS), NULL);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        if (!ok) {
            snprintf(why, cap, "prepare: %s", PQerrorMessage(pg));
            return -1;
        }
        if (n == full)
            for (int i = 0; i < MAX_PREPARED; i++)
                if (prepared_on[i] == NULL) {
                    prepared_on[i] = pg;
                    break;
                }
    }
    PGresult *res =
        PQexecPrepared(pg, name, (int)(n * B_COLS), values, NULL, NULL, 0);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        snprintf(why, cap, "insert: %s", PQerrorMessage(pg));
    PQclear(res);
    if (n != full) { /* the last, shorter statement: not kept */
        res = PQexec(pg, "DEALLOCATE eb_part");
        PQclear(res);
    }
    return ok ? 0 : -1;
}

/* The full-chunk statement, prepared once and reused as SQLite's docs
 * advise for bulk inserts (as the PostgreSQL side keeps eb_full): made
 * again for each statement, its prepare dominated the run (SQLite looks
 * each numbered parameter up in a list: 1,250 parameters a statement,
 * 53 % of the time in sqlite3VListNumToName). */
static sqlite3_stmt *sqlite_full;
static sqlite3 *sqlite_full_db; /* the connection it belongs to */

static int sqlite_insert(sqlite3 *db, size_t n, size_t full, const char *sql,
                         const char *const *values, char *why, size_t cap)
{
    if (sqlite_full != NULL && sqlite_full_db != db) {
        sqlite3_finalize(sqlite_full); /* the pool gave another connection */
        sqlite_full = NULL;
    }
    sqlite3_stmt *st = n == full ? sqlite_full : NULL;
    if (st == NULL && sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, cap, "prepare: %s", sqlite3_errmsg(db));
        return -1;
    }
    if (n == full) {
        sqlite_full = st;
        sqlite_full_db = db;
    }
    for (size_t k = 0; k < n * B_COLS; k++) {
        int c = (int)(k % B_COLS);
        int x;
        if (values[k] == NULL)
            x = sqlite3_bind_null(st, (int)k + 1);
        else if (bcols[c].type == 'i')
            x = sqlite3_bind_int64(st, (int)k + 1,
                                   strtoll(values[k], NULL, 10));
        else
            x = sqlite3_bind_text(st, (int)k + 1, values[k], -1, SQLITE_STATIC);
        if (x != SQLITE_OK) {
            snprintf(why, cap, "bind: %s", sqlite3_errmsg(db));
            if (st != sqlite_full)
                sqlite3_finalize(st);
            return -1;
        }
    }
    int x = sqlite3_step(st);
    if (x != SQLITE_DONE)
        snprintf(why, cap, "insert: %s", sqlite3_errmsg(db));
    if (st == sqlite_full) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    } else {
        sqlite3_finalize(st);
    }
    return x == SQLITE_DONE ? 0 : -1;
}

static int cmd_baseline(const eargs *a)
{
    int do_create = strcmp(a->phase, "insert") != 0;
    int do_insert = strcmp(a->phase, "create") != 0;
    size_t batch = a->batch ? (size_t)a->batch : 256;
    size_t chunk = (size_t)a->chunk < batch ? (size_t)a->chunk : batch;
    sb_bus *bus = NULL;
    sb_error err;
    if (open_store(a, &bus, NULL, &err) != 0) {
        fail_json("errors-baseline", err.message);
        return 1;
    }
    int pg = strcmp(sb_backend_name(bus), "postgresql") == 0;
    if (do_create && baseline_create(bus, pg, &err) != 0) {
        fail_json("errors-baseline", err.message);
        sb_close(bus);
        return 1;
    }
    if (!do_insert) {
        printf("{\"scenario\":\"errors-baseline-create\",\"ok\":true}\n");
        sb_close(bus);
        return 0;
    }
    char *body = malloc((size_t)a->body + 1);
    brow *rows = calloc(chunk, sizeof *rows);
    const char **values = calloc(chunk * B_COLS, sizeof *values);
    char *full_sql = insert_sql(chunk, pg);
    if (body == NULL || rows == NULL || values == NULL || full_sql == NULL) {
        fail_json("errors-baseline", "out of memory");
        return 1;
    }
    for (long long k = 0; k < a->body; k++)
        body[k] = (char)('a' + k % 26);
    body[a->body] = '\0';
    char body_size[24], why[640] = "";
    snprintf(body_size, sizeof body_size, "%lld", a->body);
    int failed = 0;
    long long done = 0, txs = 0, statements = 0;
    int64_t t0 = mono_ns();
    while (!failed && done < a->rows) {
        sb_tx *tx = NULL;
        if (sb_tx_begin(bus, &tx, &err) != SB_OK) {
            snprintf(why, sizeof why, "begin: %s", err.message);
            failed = 1;
            break;
        }
        void *native = sb_tx_native(tx);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        long long end = done + (long long)batch < a->rows
                            ? done + (long long)batch
                            : a->rows;
        for (long long at = done; !failed && at < end; at += (long long)chunk) {
            size_t n = (size_t)(end - at < (long long)chunk ? end - at
                                                            : (long long)chunk);
            for (size_t r = 0; r < n; r++) {
                baseline_row(a, at + (long long)r, now_us, body, body_size,
                             &rows[r]);
                memcpy(&values[r * B_COLS], rows[r].v, sizeof rows[r].v);
            }
            char *sql = n == chunk ? full_sql : insert_sql(n, pg);
            if (sql == NULL) {
                snprintf(why, sizeof why, "out of memory");
                failed = 1;
                break;
            }
            failed = pg ? pg_insert(native, n, chunk, sql, values, why,
                                    sizeof why) != 0
                        : sqlite_insert(native, n, chunk, sql, values, why,
                                        sizeof why) != 0;
            if (sql != full_sql)
                free(sql);
            statements++;
        }
        if (failed) {
            sb_tx_rollback(tx);
            break;
        }
        if (sb_tx_commit(tx, &err) != SB_OK) {
            snprintf(why, sizeof why, "commit: %s", err.message);
            failed = 1;
            break;
        }
        txs++;
        done = end;
    }
    double secs = (double)(mono_ns() - t0) / 1e9;
    if (failed)
        fail_json("errors-baseline", why);
    else
        printf("{\"scenario\":\"errors-baseline\",\"ok\":true,\"rows\":%lld,"
               "\"transactions\":%lld,\"statements\":%lld,\"rows_per_statement"
               "\":%zu,\"batch\":%zu,\"body_bytes\":%lld,\"repeat_pct\":%lld,"
               "\"seconds\":%.3f,\"rows_per_s\":%.1f}\n",
               done, txs, statements, chunk, batch, a->body, a->repeat_pct,
               secs, (double)done / secs);
    sqlite3_finalize(sqlite_full);
    sqlite_full = NULL;
    free(full_sql);
    free(values);
    free(rows);
    free(body);
    sb_close(bus);
    return failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* scale (P11)                                                          */
/* ------------------------------------------------------------------ */

/* Row r of the populate stream: which message it is a failure of. New
 * messages are numbered in order; repeat_pct of the rows are later
 * failures of a random earlier message. */
typedef struct stream {
    long long next_new; /* messages issued so far */
} stream;

static long long stream_message(const eargs *a, stream *s, long long r)
{
    if (s->next_new > 100 &&
        (long long)(mix((uint64_t)r + 12345) % 100) < a->repeat_pct)
        return (long long)(mix((uint64_t)r + 54321) % (uint64_t)s->next_new);
    return s->next_new++;
}

static void scale_fn(const eargs *a, long long r, char *h, size_t hcap,
                     char *body, void *user)
{
    long long m = stream_message(a, user, r);
    scale_row(r, m, h, hcap, body, (size_t)a->body);
}

static int set_status(sb_errors *e, const char *what, int q, double *secs,
                      int64_t *changed, sb_error *err)
{
    char queue[40];
    scale_queue_name(q, queue, sizeof queue);
    sb_failed_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.size = sizeof sel;
    sel.failed_queue = queue;
    *changed = 0;
    int64_t t0 = mono_ns();
    int rc;
    if (strcmp(what, "archive") == 0)
        rc = sb_errors_archive(e, &sel, 1, changed, err);
    else if (strcmp(what, "retry") == 0)
        rc = sb_errors_retry(e, &sel, changed, err);
    else
        rc = sb_errors_resolve(e, &sel, changed, err);
    *secs += (double)(mono_ns() - t0) / 1e9;
    logf_("%s %s: %" PRId64 " messages", what, queue, *changed);
    return rc;
}

static int scale_populate(const eargs *a, sb_bus *bus, sb_errors *store)
{
    stream s = {0};
    long long r = 0;
    double preload_s = 0, ingest_s = 0;
    sb_ingest_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    sb_error err;
    int64_t t_all = mono_ns();
    while (s.next_new < a->rows) {
        /* Rows until the chunk is full or the last message is issued. */
        long long first = r, n = 0;
        stream probe = s;
        while (n < a->chunk && probe.next_new < a->rows) {
            stream_message(a, &probe, first + n);
            n++;
        }
        int64_t t0 = mono_ns();
        if (preload(bus, a, first, n, scale_fn, &s) != 0) {
            fail_json("errors-scale", "preload failed");
            return 1;
        }
        int64_t t1 = mono_ns();
        if (sb_errors_ingest(store, &st, &err) != SB_OK) {
            fail_json("errors-scale", err.message);
            return 1;
        }
        int64_t t2 = mono_ns();
        preload_s += (double)(t1 - t0) / 1e9;
        ingest_s += (double)(t2 - t1) / 1e9;
        r += n;
        logf_("populate: %lld rows, %" PRId64 " messages; this chunk %.0f "
              "rows/s ingested (%.0f s so far)",
              r, st.messages, (double)n / ((double)(t2 - t1) / 1e9),
              (double)(mono_ns() - t_all) / 1e9);
    }
    /* Mixed statuses through the API: 2 queues archived, 2 retried, one
     * of those resolved by hand. */
    double status_s = 0;
    int64_t archived = 0, retried = 0, resolved = 0, c = 0;
    int rc = SB_OK;
    for (int q = 3; rc == SB_OK && q <= 4; q++) {
        rc = set_status(store, "archive", q, &status_s, &c, &err);
        archived += c;
    }
    for (int q = 5; rc == SB_OK && q <= 6; q++) {
        rc = set_status(store, "retry", q, &status_s, &c, &err);
        retried += c;
    }
    if (rc == SB_OK)
        rc = set_status(store, "resolve", 6, &status_s, &resolved, &err);
    if (rc != SB_OK) {
        fail_json("errors-scale", err.message);
        return 1;
    }
    printf("{\"scenario\":\"errors-scale-populate\",\"ok\":true,\"rows\":%lld,"
           "\"messages\":%lld,\"ingested_rows\":%" PRId64
           ",\"ingested_messages\":%" PRId64 ",\"failed_imports\":%" PRId64
           ",\"repeat_pct\":%lld,\"chunk\":%lld,\"preload_s\":%.1f,"
           "\"ingest_s\":%.1f,\"ingest_rows_per_s\":%.1f,\"archived\":%" PRId64
           ",\"retried\":%" PRId64 ",\"resolved\":%" PRId64
           ",\"status_changes_s\":%.1f,\"seconds\":%.1f}\n",
           r, s.next_new, st.rows, st.messages, st.failed_imports,
           a->repeat_pct, a->chunk, preload_s, ingest_s,
           (double)st.rows / ingest_s, archived, retried, resolved, status_s,
           (double)(mono_ns() - t_all) / 1e9);
    fflush(stdout);
    return 0;
}

enum {
    Q_LIST_FIRST,
    Q_LIST_QUEUE,
    Q_LIST_ATTEMPTS,
    Q_GROUPS,
    Q_GET,
    Q_SEARCH_1PCT,
    Q_SEARCH_RARE,
    Q_N
};
static const char *const qnames[Q_N] = {"list_first_page",
                                        "list_queue_type_asc_page3",
                                        "list_status_attempts",
                                        "groups",
                                        "get",
                                        "search_1pct",
                                        "search_rare"};

static int run_query(sb_errors *e, int q, const eargs *a, long long k,
                     int64_t *found, sb_error *err)
{
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int rc = SB_OK;
    *found = 0;
    sb_failed_query fq;
    memset(&fq, 0, sizeof fq);
    fq.size = sizeof fq;
    char queue[40], word[32], id[37];
    uint64_t x = mix((uint64_t)k * 31 + (uint64_t)q);
    switch (q) {
    case Q_LIST_FIRST: /* the defaults: unresolved, newest first, page 1 */
        rc = sb_errors_list(e, &fq, &s, &n, found, err);
        break;
    case Q_LIST_QUEUE:
        scale_queue_name((int)(x % 20), queue, sizeof queue);
        fq.status = -1;
        fq.failed_queue = queue;
        fq.sort = "message_type";
        fq.ascending = 1;
        fq.page = 3;
        rc = sb_errors_list(e, &fq, &s, &n, found, err);
        break;
    case Q_LIST_ATTEMPTS:
        fq.status = SB_FAILED_UNRESOLVED;
        fq.sort = "attempts";
        rc = sb_errors_list(e, &fq, &s, &n, found, err);
        break;
    case Q_GROUPS: {
        sb_failure_group **g = NULL;
        rc = sb_errors_groups(e, NULL, SB_FAILED_UNRESOLVED, &g, &n, err);
        *found = (int64_t)n;
        sb_free(g);
        return rc;
    }
    case Q_GET: {
        scale_unique_id((long long)(x % (uint64_t)a->rows), id);
        sb_failed_message *m = NULL;
        rc = sb_errors_get(e, id, &m, err);
        *found = m != NULL;
        sb_failed_message_free(m);
        return rc;
    }
    case Q_SEARCH_1PCT:
        snprintf(word, sizeof word, "tag%02lld", (long long)(x % 100));
        rc = sb_errors_search(e, word, 50, &s, &n, err);
        *found = (int64_t)n;
        break;
    case Q_SEARCH_RARE:
        snprintf(word, sizeof word, "ord%07lld",
                 (long long)(x % (uint64_t)a->rows));
        rc = sb_errors_search(e, word, 50, &s, &n, err);
        *found = (int64_t)n;
        break;
    default: break;
    }
    if (rc == SB_OK && q <= Q_LIST_ATTEMPTS && n == 0)
        *found = -1; /* an empty page: the data is not what we think */
    sb_free(s);
    return rc;
}

static int scale_query(const eargs *a, sb_errors *store)
{
    hist h[Q_N];
    int64_t found_min[Q_N], found_max[Q_N];
    long long runs[Q_N] = {0};
    for (int q = 0; q < Q_N; q++) {
        hist_init(&h[q]);
        found_min[q] = INT64_MAX;
        found_max[q] = INT64_MIN;
    }
    sb_error err;
    int64_t t_all = mono_ns(), deadline = t_all + a->max_seconds * 1000000000LL;
    /* One warm-up round (not recorded): every statement prepared once. */
    for (int q = 0; q < Q_N; q++) {
        int64_t f;
        if (run_query(store, q, a, -1, &f, &err) != SB_OK) {
            fail_json("errors-scale", err.message);
            return 1;
        }
    }
    int truncated = 0;
    for (long long k = 0; k < a->runs; k++) {
        for (int q = 0; q < Q_N; q++) {
            int64_t f = 0, t0 = mono_ns();
            int rc = run_query(store, q, a, k, &f, &err);
            int64_t dt = mono_ns() - t0;
            if (rc != SB_OK) {
                fail_json("errors-scale", err.message);
                return 1;
            }
            hist_add(&h[q], dt);
            runs[q]++;
            if (f < found_min[q])
                found_min[q] = f;
            if (f > found_max[q])
                found_max[q] = f;
        }
        if (k % 50 == 49)
            logf_("query: %lld rounds (%.0f s)", k + 1,
                  (double)(mono_ns() - t_all) / 1e9);
        if (mono_ns() > deadline) {
            truncated = 1;
            break;
        }
    }
    printf("{\"scenario\":\"errors-scale-query\",\"ok\":true,\"rows\":%lld,"
           "\"truncated\":%s,\"seconds\":%.1f",
           a->rows, truncated ? "true" : "false",
           (double)(mono_ns() - t_all) / 1e9);
    for (int q = 0; q < Q_N; q++) {
        printf(",\"%s_runs\":%lld,\"%s_found_min\":%" PRId64
               ",\"%s_found_max\":%" PRId64 ",",
               qnames[q], runs[q], qnames[q], found_min[q], qnames[q],
               found_max[q]);
        hist_json(qnames[q], &h[q]);
    }
    printf("}\n");
    return 0;
}

static int cmd_scale(const eargs *a)
{
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    sb_error err;
    if (open_store(a, &bus, &store, &err) != 0) {
        fail_json("errors-scale", err.message);
        return 1;
    }
    int rc = 0;
    if (strcmp(a->phase, "query") != 0)
        rc = scale_populate(a, bus, store);
    if (rc == 0 && strcmp(a->phase, "populate") != 0)
        rc = scale_query(a, store);
    sb_errors_close(store);
    sb_close(bus);
    return rc;
}

int main(int argc, char **argv)
{
    eargs a;
    if (argc < 2 || parse(argc, argv, &a) != 0) {
        fprintf(stderr,
                "usage: sb_errors_bench ingest --url URL [--rows N] "
                "[--repeat-pct 20] [--body 1024] [--batch 256] [--phase "
                "all|preload|ingest]\n"
                "       sb_errors_bench baseline --url URL [--rows N] "
                "[--repeat-pct 20] [--body 1024] [--batch 256] [--chunk 50] "
                "[--phase all|create|insert]\n"
                "       sb_errors_bench scale --url URL [--rows 1000000] "
                "[--repeat-pct 10] [--runs 200] [--chunk 25000] [--phase "
                "all|populate|query] [--max-seconds 300]\n");
        return 2;
    }
    if (strcmp(a.cmd, "ingest") == 0)
        return cmd_ingest(&a);
    if (strcmp(a.cmd, "baseline") == 0)
        return cmd_baseline(&a);
    if (strcmp(a.cmd, "scale") == 0)
        return cmd_scale(&a);
    fprintf(stderr, "unknown command %s\n", a.cmd);
    return 2;
}
