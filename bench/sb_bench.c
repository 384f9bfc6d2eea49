/*
 * sb_bench - the sqlbus benchmark driver (rules P5, P7, P8, P12 of
 * shared/spec/performance.md). Started by bench/run; usable by hand.
 *
 *   sb_bench burndown   --url URL --jobs N --handlers H [--phase P]
 *   sb_bench latency    --url URL --rate R --seconds S [--handlers 4]
 *   sb_bench xmin       --url URL --rate R [--before 20 --hold 60 --after 30]
 *   sb_bench raw-sqlite --db PATH --jobs N --batch B [--phase P]
 *
 * --phase preload|drain|both (default both) splits a burn-down so that the
 * harness can checkpoint the database between loading and draining.
 *
 * Each scenario prints exactly one JSON object on stdout (its result) and
 * human-readable progress on stderr. Exit status 0 = measured, 2 = usage,
 * 1 = the run failed (the JSON then has "ok":false and an "error").
 *
 * Build without the library (raw-sqlite only) for testing:
 *   cc -O2 -DSB_BENCH_NO_SQLBUS bench/sb_bench.c bench/common.c -lsqlite3 \
 *      -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#ifndef SB_BENCH_NO_SQLBUS
#include "sqlbus.h"
#include <libpq-fe.h>
#endif

#define BENCH_NAME "sb_bench"
#include "common.h"

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

/* Nanoseconds as microseconds / milliseconds, for the reports. */
static double us_of(int64_t ns)
{
    return (double)ns / 1e3;
}

static double ms_of(int64_t ns)
{
    return (double)ns / 1e6;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* xorshift PRNG for ids (quality is irrelevant here). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

/* A UUIDv7-shaped id (ms timestamp + monotonic counter + random), the same
 * shape sqlbus writes, so the raw loop's primary-key index behaves alike. */
static void uuid7_text(char out[37])
{
    static int64_t last_ms;
    static uint32_t seq;
    int64_t ms = wall_us() / 1000;
    if (ms == last_ms)
        seq++;
    else {
        last_ms = ms;
        seq = (uint32_t)(rng_next() & 0x3ff);
    }
    uint8_t b[16];
    for (int i = 0; i < 6; i++)
        b[i] = (uint8_t)(ms >> (40 - 8 * i));
    uint16_t s12 = (uint16_t)(seq & 0xfff);
    b[6] = (uint8_t)(0x70 | (s12 >> 8));
    b[7] = (uint8_t)(s12 & 0xff);
    uint64_t r = rng_next();
    for (int i = 8; i < 16; i++)
        b[i] = (uint8_t)(r >> (8 * (i - 8)));
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    static const char hx[] = "0123456789abcdef";
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hx[b[i] >> 4];
        out[o++] = hx[b[i] & 15];
    }
    out[o] = 0;
}

/* ------------------------------------------------------------------ */
/* argument parsing                                                      */
/* ------------------------------------------------------------------ */
enum { MAX_WORKERS = 16 };

typedef struct args {
    const char *url;
    const char *db;
    const char *queue;
    const char *phase;
    const char *sync;
    int64_t jobs;
    int handlers;
    int batch;
    int pool;
    long long counts_flush_ms; /* --counts-flush: 0 = default, -1 = off */
    int prefetch;              /* --prefetch: 0 = default, -1 = none (T15) */
    int workers; /* --workers: burn-down workers sharing --handlers */
    int publishers;
    double rate;
    double seconds;
    double warmup;
    int64_t timeout_s;
    int64_t stall_s;
    double before, hold, after; /* xmin windows, s */
    int no_hold; /* xmin: the control run, nobody holds an xmin */
} args;

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->queue = "bench";
    a->phase = "both";
    a->sync = "full";
    a->jobs = 100000;
    a->handlers = 1;
    a->workers = 1;
    a->batch = 1;
    a->rate = 1000;
    a->seconds = 30;
    a->warmup = 1;
    a->timeout_s = 600;
    a->stall_s = 30;
    a->before = 20;
    a->hold = 60;
    a->after = 30;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(k, name) == 0 && v && (i++, 1))
        if (OPT("--url"))
            a->url = v;
        else if (OPT("--db"))
            a->db = v;
        else if (OPT("--queue"))
            a->queue = v;
        else if (OPT("--phase"))
            a->phase = v;
        else if (OPT("--sync"))
            a->sync = v;
        else if (OPT("--jobs"))
            a->jobs = strtoll(v, NULL, 10);
        else if (OPT("--handlers"))
            a->handlers = (int)strtol(v, NULL, 10);
        else if (OPT("--batch"))
            a->batch = (int)strtol(v, NULL, 10);
        else if (OPT("--publishers"))
            a->publishers = (int)strtol(v, NULL, 10);
        else if (OPT("--pool"))
            a->pool = (int)strtol(v, NULL, 10);
        else if (OPT("--counts-flush"))
            a->counts_flush_ms = strtoll(v, NULL, 10);
        else if (OPT("--workers"))
            a->workers = (int)strtol(v, NULL, 10);
        else if (OPT("--prefetch"))
            a->prefetch = (int)strtol(v, NULL, 10);
        else if (OPT("--rate"))
            a->rate = atof(v);
        else if (OPT("--seconds"))
            a->seconds = atof(v);
        else if (OPT("--warmup"))
            a->warmup = atof(v);
        else if (strcmp(k, "--no-hold") == 0)
            a->no_hold = 1;
        else if (OPT("--before"))
            a->before = atof(v);
        else if (OPT("--hold"))
            a->hold = atof(v);
        else if (OPT("--after"))
            a->after = atof(v);
        else if (OPT("--timeout"))
            a->timeout_s = strtoll(v, NULL, 10);
        else if (OPT("--stall"))
            a->stall_s = strtoll(v, NULL, 10);
        else {
            logf_("unknown or incomplete option %s", k);
            return -1;
        }
#undef OPT
    }
    if (strcmp(a->phase, "both") && strcmp(a->phase, "preload") &&
        strcmp(a->phase, "drain")) {
        logf_("--phase must be preload, drain or both");
        return -1;
    }
    if (a->jobs <= 0 || a->handlers <= 0 || a->batch <= 0 || a->rate <= 0 ||
        a->seconds <= 0) {
        logf_("--jobs, --handlers, --batch, --rate and --seconds must be > 0");
        return -1;
    }
    if (a->workers < 1 || a->workers > MAX_WORKERS ||
        a->workers > a->handlers) {
        logf_("--workers must be 1..%d and at most --handlers (got %d)",
              MAX_WORKERS, a->workers);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* raw-sqlite: the P5 SQLite physical limit, plain sqlite3 calls          */
/* ------------------------------------------------------------------ */

/* The same table, indexes and statements as sqlbus's SQLite transport
 * (src/transport/sql_sqlite.c), without the library around them. */
static const char RAW_DDL[] =
    "CREATE TABLE IF NOT EXISTS sqlbus_messages ("
    " id TEXT NOT NULL PRIMARY KEY,"
    " queue TEXT NOT NULL COLLATE BINARY,"
    " payload BLOB NOT NULL,"
    " headers TEXT NOT NULL DEFAULT '{}',"
    " created_at INTEGER NOT NULL,"
    " available_at INTEGER NOT NULL,"
    " locked_until INTEGER,"
    " lock_id TEXT,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " last_error TEXT,"
    " dead_letter_reason TEXT);"
    "CREATE INDEX IF NOT EXISTS sqlbus_messages_ready_idx"
    " ON sqlbus_messages (queue, available_at, created_at);"
    "CREATE INDEX IF NOT EXISTS sqlbus_messages_created_idx"
    " ON sqlbus_messages (created_at);";

static const char RAW_INSERT[] =
    "INSERT INTO sqlbus_messages (id, queue, payload, headers, created_at,"
    " available_at, attempts) VALUES (?1, ?2, ?3, '{}', ?4, ?4, 0)";

/* Claim: lease the oldest ready rows through the ready index, as the
 * transport does (available_at moves to the lease end; lock_id fences). */
static const char RAW_CLAIM[] =
    "UPDATE sqlbus_messages SET attempts = attempts + 1,"
    " locked_until = ?2, available_at = ?2, lock_id = ?1"
    " WHERE id IN (SELECT id FROM sqlbus_messages WHERE queue = ?3"
    " AND available_at <= ?4 AND (locked_until IS NULL OR locked_until <= ?4)"
    " ORDER BY available_at, created_at LIMIT ?5)"
    " RETURNING id, payload, headers, attempts, lock_id, created_at, queue";

/* Settle: the fenced delete of an ack. */
static const char RAW_DELETE[] =
    "DELETE FROM sqlbus_messages WHERE id = ?1 AND lock_id = ?2";

static int raw_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        logf_("sqlite: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
    }
    return rc;
}

static int raw_preload(sqlite3 *db, const char *queue, int64_t n)
{
    sqlite3_stmt *ins = NULL;
    if (sqlite3_prepare_v2(db, RAW_INSERT, -1, &ins, NULL) != SQLITE_OK) {
        logf_("prepare insert: %s", sqlite3_errmsg(db));
        return -1;
    }
    for (int64_t i = 0; i < n;) {
        if (raw_exec(db, "BEGIN IMMEDIATE") != SQLITE_OK)
            return -1;
        for (int k = 0; k < 1000 && i < n; k++, i++) {
            char id[37], payload[32];
            uuid7_text(id);
            int plen = snprintf(payload, sizeof payload, "%" PRId64, i);
            sqlite3_bind_text(ins, 1, id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(ins, 2, queue, -1, SQLITE_STATIC);
            sqlite3_bind_blob(ins, 3, payload, plen, SQLITE_TRANSIENT);
            sqlite3_bind_int64(ins, 4, wall_us());
            if (sqlite3_step(ins) != SQLITE_DONE) {
                logf_("insert: %s", sqlite3_errmsg(db));
                return -1;
            }
            sqlite3_reset(ins);
        }
        if (raw_exec(db, "COMMIT") != SQLITE_OK)
            return -1;
    }
    sqlite3_finalize(ins);
    return 0;
}

static int cmd_raw_sqlite(const args *a)
{
    const char *path = a->db;
    if (!path && a->url)
        path = strncmp(a->url, "sqlite:", 7) == 0 ? a->url + 7 : a->url;
    if (!path) {
        logf_("raw-sqlite needs --db PATH");
        return 2;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        fail_json("raw-sqlite", "cannot open database");
        return 1;
    }
    sqlite3_busy_timeout(db, 5000);
    char pragma[128];
    snprintf(pragma, sizeof pragma,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s", a->sync);
    if (raw_exec(db, pragma) || raw_exec(db, RAW_DDL)) {
        fail_json("raw-sqlite", "setup failed");
        return 1;
    }
    int64_t preload_ns = 0;
    if (strcmp(a->phase, "drain") != 0) {
        int64_t t0 = mono_ns();
        if (raw_preload(db, a->queue, a->jobs) != 0) {
            fail_json("raw-sqlite", "preload failed");
            return 1;
        }
        preload_ns = mono_ns() - t0;
        logf_("raw-sqlite: preloaded %" PRId64 " jobs in %.2f s", a->jobs,
              (double)preload_ns / 1e9);
    }
    if (strcmp(a->phase, "preload") == 0) {
        printf("{\"scenario\":\"raw-sqlite\",\"phase\":\"preload\",\"ok\":true,"
               "\"jobs\":%" PRId64 ",\"preload_s\":%.4f}\n",
               a->jobs, (double)preload_ns / 1e9);
        sqlite3_close(db);
        return 0;
    }

    sqlite3_stmt *claim = NULL, *del = NULL;
    if (sqlite3_prepare_v2(db, RAW_CLAIM, -1, &claim, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, RAW_DELETE, -1, &del, NULL) != SQLITE_OK) {
        logf_("prepare: %s", sqlite3_errmsg(db));
        fail_json("raw-sqlite", "prepare failed");
        return 1;
    }
    const int B = a->batch;
    char(*ids)[37] = calloc((size_t)B, 37);
    int64_t done = 0, txs = 0, payload_bytes = 0;
    int64_t t0 = mono_ns();
    for (;;) {
        if (raw_exec(db, "BEGIN IMMEDIATE") != SQLITE_OK)
            goto fail;
        char lock_id[37];
        uuid7_text(lock_id);
        int64_t now = wall_us();
        sqlite3_bind_text(claim, 1, lock_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(claim, 2, now + 30000000LL);
        sqlite3_bind_text(claim, 3, a->queue, -1, SQLITE_STATIC);
        sqlite3_bind_int64(claim, 4, now);
        sqlite3_bind_int(claim, 5, B);
        int got = 0, rc;
        while ((rc = sqlite3_step(claim)) == SQLITE_ROW) {
            if (got < B) {
                const unsigned char *id = sqlite3_column_text(claim, 0);
                snprintf(ids[got], 37, "%s", (const char *)id);
                payload_bytes += sqlite3_column_bytes(claim, 1);
                got++;
            }
        }
        if (rc != SQLITE_DONE) {
            logf_("claim: %s", sqlite3_errmsg(db));
            goto fail;
        }
        sqlite3_reset(claim);
        for (int k = 0; k < got; k++) {
            sqlite3_bind_text(del, 1, ids[k], -1, SQLITE_STATIC);
            sqlite3_bind_text(del, 2, lock_id, -1, SQLITE_STATIC);
            if (sqlite3_step(del) != SQLITE_DONE || sqlite3_changes(db) != 1) {
                logf_("delete: %s", sqlite3_errmsg(db));
                goto fail;
            }
            sqlite3_reset(del);
        }
        if (raw_exec(db, "COMMIT") != SQLITE_OK)
            goto fail;
        txs++;
        done += got;
        if (got == 0)
            break;
    }
    int64_t el = mono_ns() - t0;
    printf("{\"scenario\":\"raw-sqlite\",\"ok\":true,\"jobs\":%" PRId64
           ",\"batch\":%d,\"synchronous\":",
           done, B);
    json_str(stdout, a->sync);
    printf(",\"transactions\":%" PRId64 ",\"payload_bytes\":%" PRId64
           ",\"seconds\":%.4f,\"jobs_per_s\":%.1f,\"sqlite_version\":",
           txs, payload_bytes, (double)el / 1e9,
           (double)done / ((double)el / 1e9));
    json_str(stdout, sqlite3_libversion());
    printf(",\"preload_s\":%.4f}\n", (double)preload_ns / 1e9);
    sqlite3_finalize(claim);
    sqlite3_finalize(del);
    sqlite3_close(db);
    free(ids);
    return 0;
fail:
    fail_json("raw-sqlite", "drain failed");
    return 1;
}

#ifndef SB_BENCH_NO_SQLBUS
/* ------------------------------------------------------------------ */
/* sqlbus scenarios                                                      */
/* ------------------------------------------------------------------ */

static int open_bus(const args *a, sb_bus **bus)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = a->url;
    o.pool_size = a->pool; /* 0 = the library's default */
    o.counts_flush_ms = a->counts_flush_ms;
    o.log = bench_log;
    o.log_level = SB_LOG_WARN;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_open(&o, bus, &err);
    if (rc != SB_OK)
        logf_("sb_open(%s): %s: %s", a->url, sb_strerror(rc), err.message);
    return rc;
}

static int publish_preload(sb_bus *bus, const args *a)
{
    enum { BATCH = 1000 };
    sb_outgoing *m = calloc(BATCH, sizeof *m);
    char(*pl)[24] = calloc(BATCH, 24);
    if (!m || !pl)
        return SB_NOMEM;
    int rc = SB_OK;
    for (int64_t i = 0; i < a->jobs && rc == SB_OK;) {
        size_t n = 0;
        for (; n < BATCH && i < a->jobs; n++, i++) {
            int len = snprintf(pl[n], 24, "%" PRId64, i);
            m[n].payload = pl[n];
            m[n].payload_len = (size_t)len;
        }
        sb_error err;
        sb_error_clear(&err);
        rc = sb_publish_batch(bus, NULL, a->queue, m, n, NULL, &err);
        if (rc != SB_OK)
            logf_("sb_publish_batch: %s: %s", sb_strerror(rc), err.message);
    }
    free(m);
    free(pl);
    return rc;
}

/* Ready + delayed messages of a queue (-1 when sb_queue_list fails). */
static int64_t queue_ready(sb_bus *bus, const char *queue)
{
    sb_queue_stats **qs = NULL;
    size_t nq = 0;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_queue_list(bus, &qs, &nq, &err);
    if (rc != SB_OK) {
        logf_("sb_queue_list: %s: %s", sb_strerror(rc), err.message);
        return -1;
    }
    int64_t n = 0;
    for (size_t i = 0; i < nq; i++)
        if (strcmp(qs[i]->queue, queue) == 0)
            n = qs[i]->ready + qs[i]->delayed;
    sb_free(qs);
    return n;
}

/* Burn-down: every handler call marks its job's index so lost and
 * duplicated deliveries are detected, not just counted. */
typedef struct burn_ctx {
    int64_t jobs;
    atomic_uchar *seen;
    atomic_llong calls, dups, bad;
    atomic_llong first_call_ns;
} burn_ctx;

static int burn_handler(sb_delivery *d, void *user)
{
    burn_ctx *c = user;
    long long zero = 0;
    atomic_compare_exchange_strong(&c->first_call_ns, &zero,
                                   (long long)mono_ns());
    atomic_fetch_add(&c->calls, 1);
    size_t len = 0;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    char buf[24];
    if (!p || len == 0 || len >= sizeof buf) {
        atomic_fetch_add(&c->bad, 1);
        return SB_OK;
    }
    memcpy(buf, p, len);
    buf[len] = 0;
    char *end = NULL;
    long long idx = strtoll(buf, &end, 10);
    if (*end || idx < 0 || idx >= c->jobs) {
        atomic_fetch_add(&c->bad, 1);
        return SB_OK;
    }
    if (atomic_exchange(&c->seen[idx], 1))
        atomic_fetch_add(&c->dups, 1);
    return SB_OK;
}

static void sum_stats(sb_worker *const *ws, int n, sb_worker_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        sb_worker_stats s;
        memset(&s, 0, sizeof s);
        sb_worker_get_stats(ws[i], &s);
        out->acked += s.acked;
        out->naked += s.naked;
        out->dead_lettered += s.dead_lettered;
        out->lost_leases += s.lost_leases;
    }
}

static int cmd_burndown(const args *a)
{
    if (!a->url) {
        logf_("burndown needs --url");
        return 2;
    }
    sb_bus *bus = NULL;
    if (open_bus(a, &bus) != SB_OK) {
        fail_json("burndown", "sb_open failed");
        return 1;
    }
    const char *backend = sb_backend_name(bus);
    int64_t preload_ns = 0;
    if (strcmp(a->phase, "drain") != 0) {
        int64_t t0 = mono_ns();
        if (publish_preload(bus, a) != SB_OK) {
            fail_json("burndown", "preload failed");
            sb_close(bus);
            return 1;
        }
        preload_ns = mono_ns() - t0;
        logf_("burndown: published %" PRId64 " jobs in %.2f s (%.0f/s)",
              a->jobs, (double)preload_ns / 1e9,
              (double)a->jobs / ((double)preload_ns / 1e9));
    }
    if (strcmp(a->phase, "drain") != 0) {
        /* The queue must hold exactly what was published. */
        int64_t ready = queue_ready(bus, a->queue);
        if (ready != a->jobs) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "sb_publish_batch returned SB_OK for %" PRId64
                     " messages but the queue holds %" PRId64 " ready",
                     a->jobs, ready);
            logf_("burndown: PROBLEM %s", msg);
            fail_json("burndown", msg);
            sb_close(bus);
            return 1;
        }
    }
    if (strcmp(a->phase, "preload") == 0) {
        printf("{\"scenario\":\"burndown\",\"phase\":\"preload\",\"ok\":true,"
               "\"backend\":\"%s\",\"jobs\":%" PRId64 ",\"preload_s\":%.4f,"
               "\"publish_per_s\":%.1f}\n",
               backend, a->jobs, (double)preload_ns / 1e9,
               (double)a->jobs / ((double)preload_ns / 1e9));
        sb_close(bus);
        return 0;
    }

    burn_ctx c;
    memset(&c, 0, sizeof c);
    c.jobs = a->jobs;
    c.seen = calloc((size_t)a->jobs, sizeof *c.seen);
    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = a->queue;
    wo.handler = burn_handler;
    wo.user = &c;
    wo.prefetch = a->prefetch;

    /* --workers W: W workers in this process share --handlers. */
    sb_worker *ws[MAX_WORKERS] = {NULL};
    sb_error err;
    sb_error_clear(&err);
    int64_t t0 = mono_ns();
    for (int i = 0; i < a->workers; i++) {
        wo.concurrency =
            a->handlers / a->workers + (i < a->handlers % a->workers);
        int rc = sb_worker_start(bus, &wo, &ws[i], &err);
        if (rc != SB_OK) {
            logf_("sb_worker_start: %s: %s", sb_strerror(rc), err.message);
            fail_json("burndown", "sb_worker_start failed");
            for (int j = 0; j < i; j++) {
                sb_worker_stop(ws[j], &err);
                sb_worker_free(ws[j]);
            }
            sb_close(bus);
            return 1;
        }
    }
    sb_worker_stats st;
    int64_t last_progress = t0, last_acked = -1, t_end = 0;
    int hung = 0;
    for (;;) {
        sum_stats(ws, a->workers, &st);
        int64_t now = mono_ns();
        if (st.acked >= a->jobs) {
            t_end = now;
            break;
        }
        if (st.acked != last_acked) {
            last_acked = st.acked;
            last_progress = now;
        }
        if (now - last_progress > a->stall_s * 1000000000LL ||
            now - t0 > a->timeout_s * 1000000000LL) {
            hung = 1;
            t_end = now;
            break;
        }
        sleep_ns(200000); /* 0.2 ms: the stats read is an in-process copy */
    }
    double secs = (double)(t_end - t0) / 1e9;
    /* Let stragglers (duplicates) show up, then stop and check the queue. */
    sleep_ns(hung ? 0 : 100000000LL);
    int stop_rc = SB_OK;
    for (int i = 0; i < a->workers; i++) {
        sb_error_clear(&err);
        int rc = sb_worker_stop(ws[i], &err);
        if (stop_rc == SB_OK)
            stop_rc = rc;
    }
    sum_stats(ws, a->workers, &st);
    for (int i = 0; i < a->workers; i++)
        sb_worker_free(ws[i]);

    int64_t left_ready = -1, left_inflight = -1;
    sb_queue_stats **qs = NULL;
    size_t nq = 0;
    sb_error_clear(&err);
    if (sb_queue_list(bus, &qs, &nq, &err) == SB_OK) {
        left_ready = 0;
        left_inflight = 0;
        for (size_t i = 0; i < nq; i++)
            if (strcmp(qs[i]->queue, a->queue) == 0) {
                left_ready = qs[i]->ready + qs[i]->delayed;
                left_inflight = qs[i]->in_flight;
            }
        sb_free(qs);
    }
    int64_t missing = 0;
    for (int64_t i = 0; i < a->jobs; i++)
        if (!atomic_load(&c.seen[i]))
            missing++;
    double first_claim_s =
        c.first_call_ns ? (double)(c.first_call_ns - t0) / 1e9 : -1;
    int ok = !hung && missing == 0 && c.dups == 0 && c.bad == 0 &&
             st.acked == a->jobs && left_ready == 0 && left_inflight == 0;
    if (!ok)
        logf_("burndown: PROBLEM hung=%d acked=%" PRId64
              " calls=%lld missing=%" PRId64
              " dups=%lld bad=%lld naked=%" PRId64 " dead=%" PRId64
              " lost=%" PRId64 " left_ready=%" PRId64 " left_inflight=%" PRId64,
              hung, st.acked, (long long)c.calls, missing, (long long)c.dups,
              (long long)c.bad, st.naked, st.dead_lettered, st.lost_leases,
              left_ready, left_inflight);
    printf(
        "{\"scenario\":\"burndown\",\"ok\":%s,\"backend\":\"%s\",\"jobs\":%" PRId64
        ",\"handlers\":%d,\"workers\":%d,\"pool_size\":%d,\"seconds\":%.4f,\"jobs_per_s\":%.1f,"
        "\"first_claim_s\":%.4f,\"acked\":%" PRId64 ",\"handler_calls\":%lld,"
        "\"missing\":%" PRId64 ",\"duplicates\":%lld,\"naked\":%" PRId64
        ",\"dead_lettered\":%" PRId64 ",\"lost_leases\":%" PRId64
        ",\"left_ready\":%" PRId64 ",\"left_in_flight\":%" PRId64
        ",\"hung\":%s,\"stop_rc\":%d,\"preload_s\":%.4f,\"sqlbus_version\":\"%s\"}\n",
        ok ? "true" : "false", backend, a->jobs, a->handlers, a->workers,
        a->pool, secs, (double)st.acked / secs, first_claim_s, st.acked,
        (long long)c.calls, missing, (long long)c.dups, st.naked,
        st.dead_lettered, st.lost_leases, left_ready, left_inflight,
        hung ? "true" : "false", stop_rc, (double)preload_ns / 1e9,
        SB_VERSION_STRING);
    fflush(stdout);
    free(c.seen);
    sb_close(bus);
    return ok ? 0 : 1;
}

/* Open the bus once (schema_mode AUTO creates the transport table) so
 * bench/run can compare sqlbus's own table with the baselines' copy. */
static int cmd_schema(const args *a)
{
    if (!a->url) {
        logf_("schema needs --url");
        return 2;
    }
    sb_bus *bus = NULL;
    if (open_bus(a, &bus) != SB_OK) {
        fail_json("schema", "sb_open failed");
        return 1;
    }
    printf("{\"scenario\":\"schema\",\"ok\":true,\"backend\":\"%s\"}\n",
           sb_backend_name(bus));
    sb_close(bus);
    return 0;
}

/* ---- latency (P8) ---- */
typedef struct lat_ctx {
    pthread_mutex_t mu;
    hist h; /* enqueue -> handler start, ns */
    /* From the publish call's return (its commit seen by the publisher)
     * to the handler's start; 0 when the handler started first. */
    hist after;
    int64_t measure_from_ns; /* publishes before this are warm-up */
    atomic_llong received, measured_received;
    atomic_llong *returned; /* per publish call: when it returned, or 0 */
    int64_t max_calls;
    atomic_llong calls;
} lat_ctx;

static int lat_handler(sb_delivery *d, void *user)
{
    int64_t now = mono_ns();
    lat_ctx *c = user;
    size_t len = 0;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    char buf[32];
    if (p && len > 0 && len < sizeof buf) {
        memcpy(buf, p, len);
        buf[len] = 0;
        char *end = NULL;
        int64_t sent = strtoll(buf, &end, 10);
        int64_t call = strtoll(end, NULL, 10);
        int64_t back = c->returned && call >= 0 && call < c->max_calls
                           ? atomic_load(&c->returned[call])
                           : 0;
        if (sent >= c->measure_from_ns) {
            pthread_mutex_lock(&c->mu);
            hist_add(&c->h, now - sent);
            if (c->returned)
                hist_add(&c->after, back > 0 && now > back ? now - back : 0);
            pthread_mutex_unlock(&c->mu);
            atomic_fetch_add(&c->measured_received, 1);
        }
    }
    atomic_fetch_add(&c->received, 1);
    return SB_OK;
}

typedef struct pub_ctx {
    sb_bus *bus;
    const args *a;
    lat_ctx *lc;
    int64_t start_ns, end_ns;
    int64_t sent, measured_sent, errors, behind, calls;
    int64_t last_pub_ns, max_late_ns;
    int index, count; /* this thread publishes slots index, index+count, ... */
    hist call;        /* sb_publish call duration, ns */
    atomic_llong *per_sec; /* NULL, or publishes per second since start_ns */
    int nsec;
} pub_ctx;

/* Publishes this thread's slots of the fixed schedule. With --batch B > 1
 * one call publishes every slot already due (at most B) in one
 * transaction, as a busy producer would; each message carries the time
 * its publish call began, so its commit is inside the latency. */
static void *publisher(void *arg)
{
    pub_ctx *p = arg;
    const double interval = 1e9 / p->a->rate;
    const int batch = p->a->batch > 1 ? p->a->batch : 1;
    sb_outgoing *m = calloc((size_t)batch, sizeof *m);
    if (m == NULL) {
        p->errors++;
        return NULL;
    }
    char payload[48];
    for (int64_t i = p->index;;) {
        int64_t due = p->start_ns + (int64_t)((double)i * interval);
        if (due >= p->end_ns)
            break;
        int64_t now = mono_ns();
        if (now < due)
            sleep_ns(due - now);
        else {
            if (now - due > 1000000)
                p->behind++; /* > 1 ms late: the publisher is not keeping up */
            if (now - due > p->max_late_ns)
                p->max_late_ns = now - due;
        }
        int64_t t = mono_ns();
        int64_t call = atomic_fetch_add(&p->lc->calls, 1);
        int len =
            snprintf(payload, sizeof payload, "%" PRId64 " %" PRId64, t, call);
        int n = 0;
        do {
            memset(&m[n], 0, sizeof m[n]);
            m[n].payload = payload;
            m[n].payload_len = (size_t)len;
            n++;
            i += p->count;
            due = p->start_ns + (int64_t)((double)i * interval);
        } while (n < batch && due <= t && due < p->end_ns);
        sb_error err;
        sb_error_clear(&err);
        int rc = n == 1
                     ? sb_publish(p->bus, NULL, p->a->queue, &m[0], NULL, &err)
                     : sb_publish_batch(p->bus, NULL, p->a->queue, m, (size_t)n,
                                        NULL, &err);
        int64_t t2 = mono_ns();
        if (p->lc->returned && call < p->lc->max_calls)
            atomic_store(&p->lc->returned[call], t2);
        if (rc != SB_OK) {
            if (p->errors++ < 5)
                logf_("sb_publish: %s: %s", sb_strerror(rc), err.message);
            continue;
        }
        p->sent += n;
        p->calls++;
        p->last_pub_ns = t2;
        if (p->per_sec) {
            int64_t sec = (t - p->start_ns) / 1000000000LL;
            if (sec >= 0 && sec < p->nsec)
                atomic_fetch_add(&p->per_sec[sec], n);
        }
        if (t >= p->lc->measure_from_ns) {
            p->measured_sent += n;
            hist_add(&p->call, t2 - t);
        }
    }
    free(m);
    return NULL;
}

static int cmd_latency(const args *a)
{
    if (!a->url) {
        logf_("latency needs --url");
        return 2;
    }
    sb_bus *bus = NULL;
    if (open_bus(a, &bus) != SB_OK) {
        fail_json("latency", "sb_open failed");
        return 1;
    }
    lat_ctx lc;
    memset(&lc, 0, sizeof lc);
    pthread_mutex_init(&lc.mu, NULL);
    hist_init(&lc.h);
    hist_init(&lc.after);
    lc.max_calls = (int64_t)(a->rate * (a->seconds + a->warmup)) + 16;
    lc.returned = calloc((size_t)lc.max_calls, sizeof *lc.returned);
    int handlers = a->handlers > 1 ? a->handlers : 4;

    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = a->queue;
    wo.handler = lat_handler;
    wo.user = &lc;
    wo.concurrency = handlers;
    wo.prefetch = a->prefetch;
    sb_worker *w = NULL;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_worker_start(bus, &wo, &w, &err);
    if (rc != SB_OK) {
        logf_("sb_worker_start: %s: %s", sb_strerror(rc), err.message);
        fail_json("latency", "sb_worker_start failed");
        sb_close(bus);
        return 1;
    }
    sleep_ns(200000000LL); /* let the worker reach its first wait */

    /* One publisher thread by default; --publishers P splits the same
     * fixed schedule over P threads (slot i goes to thread i mod P) when a
     * single thread cannot commit one message per transaction fast enough. */
    int np = a->publishers > 0 ? a->publishers : 1;
    pub_ctx *pubs = calloc((size_t)np, sizeof *pubs);
    pthread_t *th = calloc((size_t)np, sizeof *th);
    int64_t start_ns = mono_ns();
    lc.measure_from_ns = start_ns + (int64_t)(a->warmup * 1e9);
    for (int k = 0; k < np; k++) {
        pubs[k].bus = bus;
        pubs[k].a = a;
        pubs[k].lc = &lc;
        pubs[k].index = k;
        pubs[k].count = np;
        hist_init(&pubs[k].call);
        pubs[k].start_ns = start_ns;
        pubs[k].end_ns = lc.measure_from_ns + (int64_t)(a->seconds * 1e9);
        pthread_create(&th[k], NULL, publisher, &pubs[k]);
    }
    pub_ctx p;
    memset(&p, 0, sizeof p);
    hist_init(&p.call);
    for (int k = 0; k < np; k++) {
        pthread_join(th[k], NULL);
        p.sent += pubs[k].sent;
        p.measured_sent += pubs[k].measured_sent;
        p.errors += pubs[k].errors;
        p.behind += pubs[k].behind;
        p.calls += pubs[k].calls;
        if (pubs[k].last_pub_ns > p.last_pub_ns)
            p.last_pub_ns = pubs[k].last_pub_ns;
        if (pubs[k].max_late_ns > p.max_late_ns)
            p.max_late_ns = pubs[k].max_late_ns;
        for (int b = 0; b < H_BUCKETS; b++)
            p.call.count[b] += pubs[k].call.count[b];
        p.call.n += pubs[k].call.n;
        if (pubs[k].call.max > p.call.max)
            p.call.max = pubs[k].call.max;
    }
    free(pubs);
    free(th);
    int64_t pub_done = mono_ns();
    /* Wait for the tail (up to 10 s). */
    while (atomic_load(&lc.received) < p.sent &&
           mono_ns() - pub_done < 10000000000LL)
        sleep_ns(1000000);
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    sb_worker_stop(w, NULL);
    sb_worker_free(w);

    /* Achieved rate over the measured window, up to the last publish. */
    double measured_s = (double)(p.last_pub_ns - lc.measure_from_ns) / 1e9;
    if (measured_s <= 0)
        measured_s = a->seconds;
    int ok = p.errors == 0 && lc.measured_received == p.measured_sent;
    printf(
        "{\"scenario\":\"latency\",\"ok\":%s,\"backend\":\"%s\",\"handlers\":%d,"
        "\"publishers\":%d,\"batch\":%d,\"publish_calls\":%" PRId64 ","
        "\"unreceived\":%lld,"
        "\"target_rate\":%.1f,\"achieved_rate\":%.1f,\"seconds\":%.1f,"
        "\"warmup_s\":%.1f,\"sent\":%" PRId64 ",\"received\":%lld,"
        "\"measured_sent\":%" PRId64 ",\"measured_received\":%lld,"
        "\"publish_errors\":%" PRId64 ",\"publisher_late\":%" PRId64 ","
        "\"publisher_max_late_ms\":%.1f,"
        "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
        "\"max_us\":%.1f,\"mean_us\":%.1f,\"min_us\":%.1f,"
        "\"publish_p50_us\":%.1f,\"publish_p99_us\":%.1f,"
        "\"after_publish_p50_us\":%.1f,\"after_publish_p99_us\":%.1f,"
        "\"acked\":%" PRId64 "}\n",
        ok ? "true" : "false", sb_backend_name(bus), handlers, np,
        a->batch > 1 ? a->batch : 1, p.calls,
        (long long)(p.measured_sent - lc.measured_received), a->rate,
        (double)p.measured_sent / measured_s, a->seconds, a->warmup, p.sent,
        (long long)lc.received, p.measured_sent,
        (long long)lc.measured_received, p.errors, p.behind,
        (double)p.max_late_ns / 1e6, us_of(hist_pct(&lc.h, 50)),
        us_of(hist_pct(&lc.h, 90)), us_of(hist_pct(&lc.h, 99)),
        us_of(hist_pct(&lc.h, 99.9)), us_of(lc.h.max),
        lc.h.n ? lc.h.sum / (double)lc.h.n / 1e3 : 0.0,
        lc.h.n ? us_of(lc.h.min) : 0.0, us_of(hist_pct(&p.call, 50)),
        us_of(hist_pct(&p.call, 99)), us_of(hist_pct(&lc.after, 50)),
        us_of(hist_pct(&lc.after, 99)), st.acked);
    fflush(stdout);
    free(lc.returned);
    sb_close(bus);
    return ok ? 0 : 1;
}

/* ---- held xmin (P12, G9) ---- */
/* The steady-state workload of `latency` while a second session holds a
 * snapshot (REPEATABLE READ + txid_current()) for --hold seconds. Every
 * second of the run keeps its own histogram (by publish time) and its own
 * count of handler starts (by start time), so the windows before, during
 * and after the hold, and the time to recover, come from one run. */
typedef struct xmin_ctx {
    lat_ctx lc; /* first: publisher() reads the warm-up boundary here */
    int64_t start_ns;
    int nsec;
    hist *by_pub;         /* [nsec] latency of messages published in second s */
    int64_t *pub_recv;    /* [nsec] of those, how many were started */
    int64_t *recv;        /* [nsec] handler starts during second s */
    int64_t *dead, *live; /* [nsec] pg_stat_user_tables, -1 = no sample */
    int64_t hold_at_ns, release_ns;
    atomic_int holder_pid;
    atomic_int holder_ok;
    atomic_int stop;
    const char *url;
    int no_hold;
} xmin_ctx;

static int xmin_sec(const xmin_ctx *x, int64_t t)
{
    int64_t s = (t - x->start_ns) / 1000000000LL;
    if (s < 0)
        s = 0;
    if (s >= x->nsec)
        s = x->nsec - 1;
    return (int)s;
}

static int xmin_handler(sb_delivery *d, void *user)
{
    int64_t now = mono_ns();
    xmin_ctx *x = user;
    size_t len = 0;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    char buf[32];
    pthread_mutex_lock(&x->lc.mu);
    if (p && len > 0 && len < sizeof buf) {
        memcpy(buf, p, len);
        buf[len] = 0;
        int64_t sent = strtoll(buf, NULL, 10);
        int s = xmin_sec(x, sent);
        hist_add(&x->by_pub[s], now - sent);
        x->pub_recv[s]++;
        if (sent >= x->lc.measure_from_ns)
            atomic_fetch_add(&x->lc.measured_received, 1);
    }
    x->recv[xmin_sec(x, now)]++;
    pthread_mutex_unlock(&x->lc.mu);
    atomic_fetch_add(&x->lc.received, 1);
    return SB_OK;
}

static PGconn *xmin_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) {
        logf_("connect %s: %s", url, PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

static int xmin_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        logf_("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The other session: opens a REPEATABLE READ transaction, takes an xid and
 * a snapshot, and holds both until the release time. */
static void *xmin_holder(void *arg)
{
    xmin_ctx *x = arg;
    PGconn *c = xmin_connect(x->url);
    if (!c)
        return NULL;
    xmin_exec(c, "SET application_name = 'sb_bench xmin holder'");
    sleep_ns(x->hold_at_ns - mono_ns());
    if (x->no_hold) {
        atomic_store(&x->holder_ok, 1); /* the control: same windows */
    } else if (xmin_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ") == 0 &&
               xmin_exec(c, "SELECT txid_current(), count(*) FROM pg_class") ==
                   0) {
        atomic_store(&x->holder_pid, PQbackendPID(c));
        atomic_store(&x->holder_ok, 1);
        logf_("holding an xmin (backend pid %d) until the release",
              PQbackendPID(c));
    }
    sleep_ns(x->release_ns - mono_ns());
    if (!x->no_hold) {
        xmin_exec(c, "COMMIT");
        logf_("xmin released");
    }
    PQfinish(c);
    return NULL;
}

/* Once a second: the table's dead and live tuples. */
static void *xmin_sampler(void *arg)
{
    xmin_ctx *x = arg;
    PGconn *c = xmin_connect(x->url);
    if (!c)
        return NULL;
    for (int64_t k = 1; !atomic_load(&x->stop); k++) {
        sleep_ns(x->start_ns + k * 1000000000LL - mono_ns());
        PGresult *r = PQexec(c, "SELECT n_dead_tup, n_live_tup FROM "
                                "pg_stat_user_tables WHERE relname = "
                                "'sqlbus_messages'");
        int s = xmin_sec(x, mono_ns());
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
            x->dead[s] = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            x->live[s] = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        }
        PQclear(r);
    }
    PQfinish(c);
    return NULL;
}

typedef struct xmin_window {
    const char *name;
    int from, to; /* seconds [from, to) */
    hist h;
    int64_t sent, started, recv;
    int64_t dead_max;
} xmin_window;

static void xmin_window_sum(const xmin_ctx *x, const int64_t *sent,
                            xmin_window *w)
{
    hist_init(&w->h);
    w->sent = w->started = w->recv = 0;
    w->dead_max = -1;
    for (int s = w->from; s < w->to && s < x->nsec; s++) {
        hist_merge(&w->h, &x->by_pub[s]);
        w->sent += sent[s];
        w->started += x->pub_recv[s];
        w->recv += x->recv[s];
        if (x->dead[s] > w->dead_max)
            w->dead_max = x->dead[s];
    }
}

static void xmin_window_json(const xmin_window *w)
{
    double secs = w->to > w->from ? (double)(w->to - w->from) : 1.0;
    printf(",\"%s\":{\"from_s\":%d,\"to_s\":%d,\"sent\":%" PRId64
           ",\"started\":%" PRId64 ",\"received_per_s\":%.1f,"
           "\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
           "\"dead_tup_max\":%" PRId64 "}",
           w->name, w->from, w->to, w->sent, w->started, (double)w->recv / secs,
           us_of(hist_pct(&w->h, 50)), us_of(hist_pct(&w->h, 99)),
           us_of(w->h.max), w->dead_max);
}

static int cmd_xmin(const args *a)
{
    if (!a->url || strncmp(a->url, "postgres", 8) != 0) {
        logf_("xmin needs --url postgresql://...");
        return 2;
    }
    int warm = (int)(a->warmup + 0.5), before = (int)(a->before + 0.5),
        hold = (int)(a->hold + 0.5), after = (int)(a->after + 0.5);
    if (before < 1 || hold < 1 || after < 1) {
        logf_("--before, --hold and --after must be >= 1 s");
        return 2;
    }
    sb_bus *bus = NULL;
    if (open_bus(a, &bus) != SB_OK) {
        fail_json("xmin", "sb_open failed");
        return 1;
    }
    xmin_ctx x;
    memset(&x, 0, sizeof x);
    pthread_mutex_init(&x.lc.mu, NULL);
    hist_init(&x.lc.h);
    x.url = a->url;
    x.no_hold = a->no_hold;
    int tail = 10;
    x.nsec = warm + before + hold + after + tail + 2;
    x.by_pub = calloc((size_t)x.nsec, sizeof *x.by_pub);
    x.pub_recv = calloc((size_t)x.nsec, sizeof *x.pub_recv);
    x.recv = calloc((size_t)x.nsec, sizeof *x.recv);
    x.dead = calloc((size_t)x.nsec, sizeof *x.dead);
    x.live = calloc((size_t)x.nsec, sizeof *x.live);
    int64_t *sent = calloc((size_t)x.nsec, sizeof *sent);
    atomic_llong *per_sec = calloc((size_t)x.nsec, sizeof *per_sec);
    if (!per_sec || !x.by_pub || !x.pub_recv || !x.recv || !x.dead || !x.live ||
        !sent) {
        fail_json("xmin", "out of memory");
        return 1;
    }
    for (int s = 0; s < x.nsec; s++) {
        hist_init(&x.by_pub[s]);
        x.dead[s] = x.live[s] = -1;
    }
    int handlers = a->handlers > 1 ? a->handlers : 4;
    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = a->queue;
    wo.handler = xmin_handler;
    wo.user = &x;
    wo.concurrency = handlers;
    sb_worker *w = NULL;
    sb_error err;
    sb_error_clear(&err);
    if (sb_worker_start(bus, &wo, &w, &err) != SB_OK) {
        logf_("sb_worker_start: %s", err.message);
        fail_json("xmin", "sb_worker_start failed");
        sb_close(bus);
        return 1;
    }
    sleep_ns(200000000LL);

    int np = a->publishers > 0 ? a->publishers : 1;
    pub_ctx *pubs = calloc((size_t)np, sizeof *pubs);
    pthread_t *th = calloc((size_t)np, sizeof *th);
    x.start_ns = mono_ns();
    x.lc.measure_from_ns = x.start_ns + (int64_t)warm * 1000000000LL;
    x.hold_at_ns = x.lc.measure_from_ns + (int64_t)before * 1000000000LL;
    x.release_ns = x.hold_at_ns + (int64_t)hold * 1000000000LL;
    int64_t end_ns = x.release_ns + (int64_t)after * 1000000000LL;
    pthread_t holder, sampler;
    pthread_create(&holder, NULL, xmin_holder, &x);
    pthread_create(&sampler, NULL, xmin_sampler, &x);
    for (int k = 0; k < np; k++) {
        pubs[k].bus = bus;
        pubs[k].a = a;
        pubs[k].lc = &x.lc;
        pubs[k].index = k;
        pubs[k].count = np;
        hist_init(&pubs[k].call);
        pubs[k].start_ns = x.start_ns;
        pubs[k].end_ns = end_ns;
        pubs[k].per_sec = per_sec;
        pubs[k].nsec = x.nsec;
        pthread_create(&th[k], NULL, publisher, &pubs[k]);
    }
    int64_t total_sent = 0, measured_sent = 0, errors = 0;
    for (int k = 0; k < np; k++) {
        pthread_join(th[k], NULL);
        total_sent += pubs[k].sent;
        measured_sent += pubs[k].measured_sent;
        errors += pubs[k].errors;
    }
    for (int k = 0; k < x.nsec; k++)
        sent[k] = atomic_load(&per_sec[k]);
    int64_t pub_done = mono_ns();
    while (atomic_load(&x.lc.received) < total_sent &&
           mono_ns() - pub_done < (int64_t)tail * 1000000000LL)
        sleep_ns(10000000);
    int64_t unreceived = total_sent - atomic_load(&x.lc.received);
    atomic_store(&x.stop, 1);
    pthread_join(holder, NULL);
    pthread_join(sampler, NULL);
    sb_worker_stop(w, NULL);
    sb_worker_free(w);

    int b0 = warm, h0 = warm + before, a0 = h0 + hold, e0 = a0 + after;
    static xmin_window win[3];
    const char *names[3] = {"before", "during", "after"};
    int bounds[4] = {b0, h0, a0, e0};
    for (int k = 0; k < 3; k++) {
        win[k].name = names[k];
        win[k].from = bounds[k];
        win[k].to = bounds[k + 1];
        xmin_window_sum(&x, sent, &win[k]);
    }
    /* Normal bounds come from the window before the hold: a second (by
     * publish time) is normal when all its messages were started and its
     * p99 is at most max(3 x p99 before, p99 before + 10 ms). Recovery =
     * from the release to the first of XMIN_STEADY normal seconds in a
     * row (one noisy second of a shared machine does not undo it); -1
     * when the after window has no such run. */
    enum { XMIN_STEADY = 5 };
    double bound = (double)hist_pct(&win[0].h, 99) * 3.0;
    if (bound < (double)hist_pct(&win[0].h, 99) + 10e6)
        bound = (double)hist_pct(&win[0].h, 99) + 10e6;
    int recovered_at = -1, run = 0;
    for (int s = a0; s < e0 && recovered_at < 0; s++) {
        int normal =
            x.pub_recv[s] >= sent[s] &&
            (x.by_pub[s].n == 0 || hist_pct(&x.by_pub[s], 99) <= bound);
        run = normal ? run + 1 : 0;
        if (run == XMIN_STEADY || (normal && s == e0 - 1))
            recovered_at = s - run + 1;
    }
    /* Seconds on stderr for the reader. */
    logf_(
        "sec  window  sent  started-of-sent  starts/s  p50_ms  p99_ms  dead_tup");
    int last = unreceived > 0 ? e0 + tail : e0;
    for (int s = b0; s < last && s < x.nsec; s++)
        logf_("%3d  %-6s %5" PRId64 " %6" PRId64 " %8" PRId64
              " %9.2f %9.2f %8" PRId64,
              s,
              s < h0   ? "before"
              : s < a0 ? "during"
              : s < e0 ? "after"
                       : "tail",
              sent[s], x.pub_recv[s], x.recv[s],
              ms_of(hist_pct(&x.by_pub[s], 50)),
              ms_of(hist_pct(&x.by_pub[s], 99)), x.dead[s]);
    double r_before = (double)win[0].recv / (win[0].to - win[0].from);
    double r_during = (double)win[1].recv / (win[1].to - win[1].from);
    int ok = errors == 0 && atomic_load(&x.holder_ok);
    printf(
        "{\"scenario\":\"xmin\",\"ok\":%s,\"backend\":\"%s\",\"handlers\":%d,"
        "\"publishers\":%d,\"target_rate\":%.1f,\"warmup_s\":%d,\"held\":%s,"
        "\"before_s\":%d,\"hold_s\":%d,\"after_s\":%d,\"holder_pid\":%d,"
        "\"sent\":%" PRId64 ",\"measured_sent\":%" PRId64
        ",\"publish_errors\":%" PRId64 ",\"unreceived\":%" PRId64
        ",\"throughput_during_over_before\":%.3f,\"recovery_s\":%d,"
        "\"normal_p99_bound_us\":%.1f",
        ok ? "true" : "false", sb_backend_name(bus), handlers, np, a->rate,
        warm, x.no_hold ? "false" : "true", before, hold, after,
        atomic_load(&x.holder_pid), total_sent, measured_sent, errors,
        unreceived, r_before > 0 ? r_during / r_before : 0.0,
        recovered_at < 0 ? -1 : recovered_at - a0, bound / 1e3);
    for (int k = 0; k < 3; k++)
        xmin_window_json(&win[k]);
    printf(",\"series\":[");
    for (int s = 0; s < e0 + tail && s < x.nsec; s++)
        printf("%s[%d,%" PRId64 ",%" PRId64 ",%" PRId64 ",%.0f,%.0f,%" PRId64
               "]",
               s ? "," : "", s, sent[s], x.pub_recv[s], x.recv[s],
               us_of(hist_pct(&x.by_pub[s], 50)),
               us_of(hist_pct(&x.by_pub[s], 99)), x.dead[s]);
    printf("],\"series_columns\":[\"s\",\"sent\",\"started_of_sent\","
           "\"starts\",\"p50_us\",\"p99_us\",\"dead_tup\"]}\n");
    fflush(stdout);
    free(pubs);
    free(th);
    free(x.by_pub);
    free(x.pub_recv);
    free(x.recv);
    free(x.dead);
    free(x.live);
    free(sent);
    free(per_sec);
    sb_close(bus);
    return ok ? 0 : 1;
}
#endif /* SB_BENCH_NO_SQLBUS */

static void usage(void)
{
    fprintf(
        stderr,
        "usage: sb_bench burndown   --url URL --jobs N --handlers H [--phase preload|drain|both] [--pool P] [--counts-flush MS|-1] [--prefetch N|-1]\n"
        "                           [--workers W (share --handlers, 1)]\n"
        "                           [--timeout S (whole drain, 600)] [--stall S (no ack progress, 30)]\n"
        "       sb_bench latency    --url URL --rate R --seconds S [--handlers 4] [--warmup 1] [--publishers 1] [--batch 1] [--prefetch N|-1]\n"
        "       sb_bench xmin       --url postgresql://... --rate R [--before 20] [--hold 60] [--after 30] [--no-hold]\n"
        "                           [--handlers 4] [--warmup 1] [--publishers 1]\n"
        "       sb_bench raw-sqlite --db PATH --jobs N --batch B [--sync full|normal] [--phase ...]\n"
        "       sb_bench schema     --url URL   (open once: creates sqlbus's schema)\n"
        "       sb_bench hist-selftest\n");
}

/* Check the histogram against exact percentiles of a known sample. */
static int cmd_hist_selftest(void)
{
    hist h;
    hist_init(&h);
    for (int64_t v = 1; v <= 1000000; v++)
        hist_add(&h, v * 1000);
    int bad = 0;
    double ps[] = {50, 90, 99, 99.9};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        double exact = ps[i] / 100.0 * 1e9;
        double got = (double)hist_pct(&h, ps[i]);
        double rel = (got - exact) / exact;
        printf("p%.1f exact %.0f got %.0f rel %+.4f\n", ps[i], exact, got, rel);
        if (rel < -0.001 || rel > 0.04)
            bad = 1;
    }
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "hist-selftest") == 0)
        return cmd_hist_selftest();
    args a;
    if (parse_args(argc, argv, &a) != 0) {
        usage();
        return 2;
    }
    rng_state ^= (uint64_t)mono_ns() * 0x2545F4914F6CDD1DULL;
    if (strcmp(cmd, "raw-sqlite") == 0)
        return cmd_raw_sqlite(&a);
#ifndef SB_BENCH_NO_SQLBUS
    if (strcmp(cmd, "burndown") == 0)
        return cmd_burndown(&a);
    if (strcmp(cmd, "latency") == 0)
        return cmd_latency(&a);
    if (strcmp(cmd, "xmin") == 0)
        return cmd_xmin(&a);
    if (strcmp(cmd, "schema") == 0)
        return cmd_schema(&a);
#endif
    usage();
    return 2;
}
