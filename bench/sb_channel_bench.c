/*
 * sb_channel_bench - the channel benchmarks (rule P9 and the waiter part of
 * P11; goals G4, G5 and G8 of shared/spec/performance.md). Started by
 * `bench/run channel`; usable by hand. Uses only the public API.
 *
 *   sb_channel_bench rr      --url URL --mode cross|local [--requests N]
 *                            [--inflight K] [--warmup W] [--worker-concurrency C]
 *                            [--max-seconds S] [--warmup-seconds S]
 *   sb_channel_bench respond --url URL [--requests N] [--warmup W]
 *   sb_channel_bench waiters --url URL [--waiters N] [--threads T]
 *                            [--heartbeat-ms H] [--sweep-ms P] [--window S]
 *                            [--server-pid PID]
 *   sb_channel_bench reply-worker --url URL [--queue Q] [--concurrency C]
 *
 * rr: request/reply round trips. K requester threads each loop
 * sb_request_job -> sb_waiter_wait; a round trip is timed from the
 * sb_request_job call to sb_waiter_wait returning. --mode cross starts a
 * second process (this program's reply-worker) that answers through
 * sb_delivery_reply; --mode local runs the same worker on the requester's
 * own bus. The job payload carries the send time and the worker appends
 * the handler's start time (CLOCK_MONOTONIC is one clock for the whole
 * host), which splits the round trip into three phases: the sb_request_job
 * call, job -> handler start, handler start -> sb_waiter_wait returns.
 *
 * respond: the in-process fast path: attach a waiter, sb_respond from
 * another thread, time from the sb_respond call to sb_waiter_wait
 * returning.
 *
 * waiters: N waiters attached on distinct ids in one process (G8): memory
 * (VmRSS/VmHWM from /proc/self/status), CPU over an idle window
 * (getrusage of this process; with --server-pid also the PostgreSQL
 * cluster's processes) and the time to cancel and free them all.
 *
 * reply-worker: the answering process of rr --mode cross: opens a channel
 * (for the reply hook) and an sb_worker, prints "ready", and stops at EOF
 * on stdin; then prints one JSON object with its counters.
 *
 * Common options: --queue Q, --pool P, and --sync full|normal (SQLite
 * synchronous; FULL, the default, is the durable setting of the headline
 * figures; NORMAL only helps diagnose).
 *
 * Each scenario prints exactly one JSON object on stdout and progress on
 * stderr. Exit status 0 = measured, 2 = usage, 1 = the run failed (the JSON
 * then has "ok":false).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "sqlbus.h"

#define BENCH_NAME "sb_channel_bench"
#include "common.h"

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* User + system CPU seconds of a getrusage result. */
static double ru_cpu_s(const struct rusage *ru)
{
    return tv_s(ru->ru_utime) + tv_s(ru->ru_stime);
}

/* ------------------------------------------------------------------ */
/* argument parsing                                                      */
/* ------------------------------------------------------------------ */
typedef struct cargs {
    const char *url;
    const char *queue;
    const char *mode;
    const char *sync;
    int64_t requests;
    int64_t warmup;
    int64_t max_seconds;    /* rr: stop issuing after this long (0 = no cap) */
    int64_t warmup_seconds; /* rr: the same for the warm-up */
    int inflight;
    int worker_concurrency;
    int pool;
    int64_t timeout_ms;
    int64_t waiters;
    int threads;
    int64_t heartbeat_ms;
    int64_t sweep_ms;
    int64_t window_s;
    int64_t settle_ms;
    long server_pid;
} cargs;

/* A whole decimal number in [min, max], else -1 (strtoll with end checks:
 * checksrc bans atoi and friends). */
static int parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, cargs *a)
{
    memset(a, 0, sizeof *a);
    a->queue = "channel-bench";
    a->mode = "cross";
    a->sync = "full";
    a->requests = 500;
    a->warmup = 50;
    a->max_seconds = 0;
    a->warmup_seconds = 3;
    a->inflight = 1;
    a->timeout_ms = 30000;
    a->waiters = 10000;
    a->threads = 4;
    a->heartbeat_ms = 1000;
    a->window_s = 10;
    a->settle_ms = 2000;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t n = 0;
#define OPT(name) (strcmp(k, name) == 0 && v && (i++, 1))
#define NUM(name, lo, hi) (OPT(name) && parse_int(v, lo, hi, &n) == 0)
        if (OPT("--url"))
            a->url = v;
        else if (OPT("--queue"))
            a->queue = v;
        else if (OPT("--mode"))
            a->mode = v;
        else if (OPT("--sync"))
            a->sync = v;
        else if (NUM("--requests", 1, 100000000))
            a->requests = n;
        else if (NUM("--warmup", 0, 100000000))
            a->warmup = n;
        else if (NUM("--max-seconds", 0, 86400))
            a->max_seconds = n;
        else if (NUM("--warmup-seconds", 0, 86400))
            a->warmup_seconds = n;
        else if (NUM("--inflight", 1, 256))
            a->inflight = (int)n;
        else if (NUM("--worker-concurrency", 1, 256) ||
                 NUM("--concurrency", 1, 256))
            a->worker_concurrency = (int)n;
        else if (NUM("--pool", 1, 1000))
            a->pool = (int)n;
        else if (NUM("--timeout-ms", 1, 86400000))
            a->timeout_ms = n;
        else if (NUM("--waiters", 1, 10000000))
            a->waiters = n;
        else if (NUM("--threads", 1, 256))
            a->threads = (int)n;
        else if (NUM("--heartbeat-ms", 0, 86400000))
            a->heartbeat_ms = n;
        else if (NUM("--sweep-ms", 0, 86400000))
            a->sweep_ms = n;
        else if (NUM("--window", 1, 86400))
            a->window_s = n;
        else if (NUM("--settle-ms", 0, 600000))
            a->settle_ms = n;
        else if (NUM("--server-pid", 1, 1 << 30))
            a->server_pid = (long)n;
        else {
            logf_("unknown, incomplete or out-of-range option %s%s%s", k,
                  v ? " " : "", v ? v : "");
            return -1;
        }
#undef NUM
#undef OPT
    }
    if (strcmp(a->mode, "cross") != 0 && strcmp(a->mode, "local") != 0) {
        logf_("--mode must be cross or local");
        return -1;
    }
    if (strcmp(a->sync, "full") != 0 && strcmp(a->sync, "normal") != 0) {
        logf_("--sync must be full or normal");
        return -1;
    }
    if (a->worker_concurrency == 0)
        a->worker_concurrency = a->inflight;
    return 0;
}

static int open_bus(const cargs *a, sb_bus **bus)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.url = a->url;
    o.pool_size = a->pool; /* 0 = the library's default */
    /* SQLite synchronous=FULL unless --sync normal (diagnosis only). */
    o.durability = strcmp(a->sync, "normal") == 0 ? SB_DURABILITY_NORMAL
                                                  : SB_DURABILITY_FULL;
    o.log = bench_log;
    o.log_level = SB_LOG_WARN;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_open(&o, bus, &err);
    if (rc != SB_OK)
        logf_("sb_open(%s): %s: %s", a->url, sb_strerror(rc), err.message);
    return rc;
}

static int open_channel(sb_bus *bus, const sb_channel_options *o,
                        sb_channel **ch)
{
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_channel_open(bus, o, ch, &err);
    if (rc != SB_OK)
        logf_("sb_channel_open: %s: %s", sb_strerror(rc), err.message);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the answering worker (reply-worker process, or in-process for local)  */
/* ------------------------------------------------------------------ */

static atomic_llong handled, handler_errors;

/* Echo the payload and append the handler's start time: "<payload> <ns>". */
static int reply_handler(sb_delivery *d, void *user)
{
    (void)user;
    int64_t start = mono_ns();
    size_t len = 0;
    const char *p = sb_msg_payload(sb_delivery_msg(d), &len);
    char buf[192];
    if (p == NULL || len > 128) {
        atomic_fetch_add(&handler_errors, 1);
        sb_delivery_fail(d, "bench", "unexpected payload", NULL);
        return SB_ERROR;
    }
    memcpy(buf, p, len);
    int n = snprintf(buf + len, sizeof buf - len, " %" PRId64, start);
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_delivery_reply(d, buf, len + (size_t)n, &err);
    if (rc != SB_OK) {
        atomic_fetch_add(&handler_errors, 1);
        logf_("sb_delivery_reply: %s: %s", sb_strerror(rc), err.message);
        return rc;
    }
    atomic_fetch_add(&handled, 1);
    return SB_OK;
}

static int start_reply_worker(sb_bus *bus, const cargs *a, sb_worker **w)
{
    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = a->queue;
    wo.handler = reply_handler;
    wo.concurrency = a->worker_concurrency;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_worker_start(bus, &wo, w, &err);
    if (rc != SB_OK)
        logf_("sb_worker_start: %s: %s", sb_strerror(rc), err.message);
    return rc;
}

static int cmd_reply_worker(const cargs *a)
{
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    sb_worker *w = NULL;
    if (open_bus(a, &bus) != SB_OK || open_channel(bus, NULL, &ch) != SB_OK ||
        start_reply_worker(bus, a, &w) != SB_OK) {
        sb_channel_close(ch);
        sb_close(bus);
        fail_json("reply-worker", "start failed");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char buf[64];
    for (;;) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    sb_worker_stats st;
    sb_worker_stop(w, NULL);
    sb_worker_get_stats(w, &st);
    sb_worker_free(w);
    sb_channel_close(ch);
    sb_close(bus);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"scenario\":\"reply-worker\",\"ok\":true,\"handled\":%lld,"
           "\"handler_errors\":%lld,\"acked\":%" PRId64 ",\"naked\":%" PRId64
           ",\"dead_lettered\":%" PRId64 ",\"cpu_s\":%.3f}\n",
           (long long)atomic_load(&handled),
           (long long)atomic_load(&handler_errors), st.acked, st.naked,
           st.dead_lettered, ru_cpu_s(&ru));
    fflush(stdout);
    return 0;
}

/* A reply-worker child process: stdin is a pipe we hold open (EOF stops
 * it, also if this process dies), stdout a pipe we read. */
typedef struct child {
    pid_t pid;
    int to_fd, from_fd;
} child;

static int spawn_worker(const cargs *a, child *c)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        logf_("readlink /proc/self/exe: %s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    char conc[16];
    snprintf(conc, sizeof conc, "%d", a->worker_concurrency);
    /* execv takes char *const[]: the literals are never written. */
    char *argv[] = {self,
                    (char *)"reply-worker",
                    (char *)"--url",
                    (char *)a->url,
                    (char *)"--queue",
                    (char *)a->queue,
                    (char *)"--concurrency",
                    conc,
                    (char *)"--sync",
                    (char *)a->sync,
                    NULL};
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) {
        logf_("pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    /* Called before this process starts any thread. */
    pid_t pid = fork();
    if (pid < 0) {
        logf_("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execv(self, argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->to_fd = in[1];
    c->from_fd = out[0];
    /* Wait for "ready" (the worker has its channel and worker running). */
    char line[256];
    size_t got = 0;
    int64_t deadline = mono_ns() + 60000000000LL;
    while (got < sizeof line - 1) {
        struct pollfd p = {c->from_fd, POLLIN, 0};
        int64_t left = (deadline - mono_ns()) / 1000000;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t r = read(c->from_fd, line + got, sizeof line - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        line[got] = '\0';
        if (strchr(line, '\n') != NULL) {
            if (strncmp(line, "ready\n", 6) == 0)
                return 0;
            break;
        }
    }
    logf_("the reply-worker process did not report ready");
    close(c->to_fd);
    close(c->from_fd);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return -1;
}

/* A number field of a flat JSON line, or -1. */
static long long json_ll(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

/* Stop the child (EOF on its stdin), read its JSON line and reap it. */
static void stop_worker(child *c, char *json, size_t cap, double *cpu_s)
{
    close(c->to_fd);
    size_t got = 0;
    json[0] = '\0';
    for (;;) {
        struct pollfd p = {c->from_fd, POLLIN, 0};
        if (poll(&p, 1, 60000) <= 0)
            break;
        ssize_t r = read(c->from_fd, json + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        json[got] = '\0';
        if (got >= cap - 1)
            break;
    }
    close(c->from_fd);
    /* The child reports its own CPU time (getrusage) in its JSON. */
    int status = 0;
    waitpid(c->pid, &status, 0);
    *cpu_s = -1;
    const char *k = strstr(json, "\"cpu_s\":");
    if (k != NULL)
        *cpu_s = strtod(k + 8, NULL);
    char *nl = strchr(json, '\n');
    if (nl != NULL)
        *nl = '\0';
}

/* ------------------------------------------------------------------ */
/* rr: request/reply round trips (P9, G4, G5)                            */
/* ------------------------------------------------------------------ */
typedef struct rr_shared {
    sb_channel *ch;
    const cargs *a;
    atomic_llong next; /* next request index of the phase */
    int64_t count;     /* requests in the phase */
    int64_t stop_ns;   /* no new request after this (monotonic), 0 = none */
    int record;
} rr_shared;

typedef struct rr_thread {
    rr_shared *s;
    pthread_t th;
    hist total, call, to_handler, reply;
    int64_t errors, mismatched;
    char first_error[640];
} rr_thread;

static void rr_error(rr_thread *t, const char *what, int rc,
                     const sb_error *err)
{
    if (t->errors++ == 0)
        snprintf(t->first_error, sizeof t->first_error, "%s: %s: %s", what,
                 sb_strerror(rc), err ? err->message : "");
}

static void *rr_main(void *arg)
{
    rr_thread *t = arg;
    rr_shared *s = t->s;
    for (;;) {
        if (s->stop_ns != 0 && mono_ns() >= s->stop_ns)
            break;
        long long idx = atomic_fetch_add(&s->next, 1);
        if (idx >= s->count)
            break;
        char payload[64];
        int64_t t0 = mono_ns();
        int len = snprintf(payload, sizeof payload, "%lld %" PRId64, idx, t0);
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.timeout_ms = s->a->timeout_ms;
        sb_waiter *w = NULL;
        sb_error err;
        sb_error_clear(&err);
        int rc = sb_request_job(s->ch, s->a->queue, payload, (size_t)len, &wo,
                                &w, &err);
        int64_t t1 = mono_ns();
        if (rc != SB_OK) {
            rr_error(t, "sb_request_job", rc, &err);
            continue;
        }
        sb_reply *r = NULL;
        rc = sb_waiter_wait(w, &r, &err);
        int64_t t2 = mono_ns();
        if (rc != SB_OK) {
            rr_error(t, "sb_waiter_wait", rc, &err);
        } else {
            /* The reply must be this request's: "<payload> <handler ns>". */
            size_t rlen = 0;
            const char *d = sb_reply_data(r, &rlen);
            char buf[192];
            int64_t th = -1;
            if (d != NULL && rlen > (size_t)len && rlen < sizeof buf &&
                memcmp(d, payload, (size_t)len) == 0 && d[len] == ' ') {
                memcpy(buf, d, rlen);
                buf[rlen] = '\0';
                char *end = NULL;
                long long v = strtoll(buf + len + 1, &end, 10);
                if (end != buf + len + 1 && *end == '\0')
                    th = v;
            }
            if (th < 0) {
                if (t->mismatched++ == 0)
                    logf_("rr: reply does not match request %lld", idx);
            } else if (s->record) {
                hist_add(&t->total, t2 - t0);
                hist_add(&t->call, t1 - t0);
                hist_add(&t->to_handler, th - t1);
                hist_add(&t->reply, t2 - th);
            }
        }
        sb_reply_free(r);
        sb_waiter_free(w);
    }
    return NULL;
}

/* Run `count` requests on `k` threads (none started after `max_s`
 * seconds when max_s > 0); merge into `agg` if recording. */
static int rr_phase(rr_shared *s, int k, int64_t count, int64_t max_s,
                    int record, rr_thread *agg, double *secs)
{
    rr_thread *ts = calloc((size_t)k, sizeof *ts);
    if (ts == NULL)
        return -1;
    atomic_store(&s->next, 0);
    s->count = count;
    s->record = record;
    int64_t t0 = mono_ns();
    s->stop_ns = max_s > 0 ? t0 + max_s * 1000000000LL : 0;
    int started = 0;
    for (int i = 0; i < k; i++) {
        ts[i].s = s;
        hist_init(&ts[i].total);
        hist_init(&ts[i].call);
        hist_init(&ts[i].to_handler);
        hist_init(&ts[i].reply);
        if (pthread_create(&ts[i].th, NULL, rr_main, &ts[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(ts[i].th, NULL);
    *secs = (double)(mono_ns() - t0) / 1e9;
    for (int i = 0; i < started; i++) {
        hist_merge(&agg->total, &ts[i].total);
        hist_merge(&agg->call, &ts[i].call);
        hist_merge(&agg->to_handler, &ts[i].to_handler);
        hist_merge(&agg->reply, &ts[i].reply);
        agg->errors += ts[i].errors;
        agg->mismatched += ts[i].mismatched;
        if (agg->first_error[0] == '\0' && ts[i].first_error[0] != '\0')
            memcpy(agg->first_error, ts[i].first_error,
                   sizeof agg->first_error);
    }
    free(ts);
    return started == k ? 0 : -1;
}

static int cmd_rr(const cargs *a)
{
    if (a->url == NULL) {
        logf_("rr needs --url");
        return 2;
    }
    int cross = strcmp(a->mode, "cross") == 0;
    child c;
    memset(&c, 0, sizeof c);
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    sb_worker *w = NULL;
    /* Create the schema (transport and channel tables) first, so the two
     * processes never race to create it; then fork the worker while this
     * process holds no connection and runs no thread. */
    if (open_bus(a, &bus) != SB_OK || open_channel(bus, NULL, &ch) != SB_OK) {
        sb_close(bus);
        fail_json("rr", "sb_open or sb_channel_open failed");
        return 1;
    }
    sb_channel_close(ch);
    sb_close(bus);
    ch = NULL;
    bus = NULL;
    if (cross && spawn_worker(a, &c) != 0) {
        fail_json("rr", "could not start the reply-worker process");
        return 1;
    }
    if (open_bus(a, &bus) != SB_OK || open_channel(bus, NULL, &ch) != SB_OK ||
        (!cross && start_reply_worker(bus, a, &w) != SB_OK)) {
        sb_channel_close(ch);
        sb_close(bus);
        if (cross) {
            char j[1024];
            double cpu;
            stop_worker(&c, j, sizeof j, &cpu);
        }
        fail_json("rr", "channel or worker start failed");
        return 1;
    }
    struct rusage ru0, ru1;
    rr_shared s;
    memset(&s, 0, sizeof s);
    s.ch = ch;
    s.a = a;
    rr_thread agg;
    memset(&agg, 0, sizeof agg);
    hist_init(&agg.total);
    hist_init(&agg.call);
    hist_init(&agg.to_handler);
    hist_init(&agg.reply);
    double warm_s = 0, secs = 0;
    int rc = 0;
    if (a->warmup > 0)
        rc = rr_phase(&s, a->inflight, a->warmup, a->warmup_seconds, 0, &agg,
                      &warm_s);
    int64_t warm_errors = agg.errors + agg.mismatched;
    getrusage(RUSAGE_SELF, &ru0);
    if (rc == 0)
        rc = rr_phase(&s, a->inflight, a->requests, a->max_seconds, 1, &agg,
                      &secs);
    getrusage(RUSAGE_SELF, &ru1);
    if (w != NULL) {
        sb_worker_stop(w, NULL);
        sb_worker_free(w);
    }
    sb_channel_close(ch);
    const char *backend = sb_backend_name(bus);
    char wjson[1024] = "";
    double worker_cpu = -1;
    if (cross)
        stop_worker(&c, wjson, sizeof wjson, &worker_cpu);
    /* The time cap may stop the run early ("truncated"): every request
     * issued must still have come back right. */
    int64_t issued =
        atomic_load(&s.next) < a->requests ? atomic_load(&s.next) : a->requests;
    int truncated = issued < a->requests;
    int ok = rc == 0 && agg.errors == 0 && agg.mismatched == 0 &&
             agg.total.n == (uint64_t)issued && issued > 0;
    if (!ok)
        logf_("rr: PROBLEM errors=%" PRId64 " (warm-up included: %" PRId64
              ") mismatched=%" PRId64 " measured=%" PRIu64 " of %" PRId64
              " first error: %s",
              agg.errors, warm_errors, agg.mismatched, agg.total.n, a->requests,
              agg.first_error);
    printf(
        "{\"scenario\":\"rr\",\"ok\":%s,\"backend\":\"%s\",\"mode\":\"%s\","
        "\"sqlite_sync\":\"%s\",\"inflight\":%d,\"worker_concurrency\":%d,\"requests\":%" PRId64
        ",\"warmup\":%" PRId64 ",\"measured\":%" PRIu64
        ",\"truncated\":%s,\"max_seconds\":%" PRId64 ",\"errors\":%" PRId64
        ",\"mismatched\":%" PRId64
        ",\"seconds\":%.4f,\"pairs_per_s\":%.1f,\"warmup_s\":%.3f,",
        ok ? "true" : "false", backend, a->mode, a->sync, a->inflight,
        a->worker_concurrency, a->requests, a->warmup, agg.total.n,
        truncated ? "true" : "false", a->max_seconds, agg.errors,
        agg.mismatched, secs, secs > 0 ? (double)agg.total.n / secs : 0.0,
        warm_s);
    printf("\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
           "\"mean_us\":%.1f,\"min_us\":%.1f,",
           (double)hist_pct(&agg.total, 50) / 1e3,
           (double)hist_pct(&agg.total, 90) / 1e3,
           (double)hist_pct(&agg.total, 99) / 1e3, (double)agg.total.max / 1e3,
           agg.total.n ? agg.total.sum / (double)agg.total.n / 1e3 : 0.0,
           agg.total.n ? (double)agg.total.min / 1e3 : 0.0);
    hist_json("request_call", &agg.call);
    putchar(',');
    hist_json("to_handler", &agg.to_handler);
    putchar(',');
    hist_json("handler_to_wake", &agg.reply);
    /* The worker's figures are flattened: bench/run reads flat JSON. */
    printf(",\"requester_cpu_s\":%.3f,\"worker_cpu_s\":",
           ru_cpu_s(&ru1) - ru_cpu_s(&ru0));
    if (worker_cpu >= 0)
        printf("%.3f", worker_cpu);
    else
        printf("null");
    printf(",\"worker_handled\":%lld,\"first_error\":",
           cross ? json_ll(wjson, "handled")
                 : (long long)atomic_load(&handled));
    json_str(stdout, agg.first_error);
    printf(",\"sqlbus_version\":\"%s\"}\n", SB_VERSION_STRING);
    fflush(stdout);
    sb_close(bus);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* respond: raw in-process sb_respond -> waiter (the fast path)           */
/* ------------------------------------------------------------------ */
typedef struct resp_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sb_channel *ch;
    char id[37];
    int pending; /* an id to answer */
    int done;    /* its sb_respond returned */
    int stop;
    int rc;
    int64_t t0, t1;
    char err[640];
} resp_shared;

static void *responder_main(void *arg)
{
    resp_shared *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->pending && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop)
            break;
        char id[37];
        memcpy(id, s->id, sizeof id);
        s->pending = 0;
        pthread_mutex_unlock(&s->mu);
        sb_error err;
        sb_error_clear(&err);
        int64_t t0 = mono_ns();
        int rc = sb_respond(s->ch, id, "pong", 4, NULL, &err);
        int64_t t1 = mono_ns();
        pthread_mutex_lock(&s->mu);
        s->rc = rc;
        s->t0 = t0;
        s->t1 = t1;
        if (rc != SB_OK)
            snprintf(s->err, sizeof s->err, "sb_respond: %s: %s",
                     sb_strerror(rc), err.message);
        s->done = 1;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static int cmd_respond(const cargs *a)
{
    if (a->url == NULL) {
        logf_("respond needs --url");
        return 2;
    }
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    if (open_bus(a, &bus) != SB_OK || open_channel(bus, NULL, &ch) != SB_OK) {
        sb_close(bus);
        fail_json("respond", "sb_open or sb_channel_open failed");
        return 1;
    }
    resp_shared s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.ch = ch;
    pthread_t th;
    if (pthread_create(&th, NULL, responder_main, &s) != 0) {
        sb_channel_close(ch);
        sb_close(bus);
        fail_json("respond", "pthread_create failed");
        return 1;
    }
    hist wake, call, attach;
    hist_init(&wake);
    hist_init(&call);
    hist_init(&attach);
    int64_t errors = 0;
    char first_error[640] = "";
    int64_t total = a->warmup + a->requests;
    int64_t t_start = 0;
    for (int64_t i = 0; i < total; i++) {
        if (i == a->warmup)
            t_start = mono_ns();
        char id[37];
        sb_error err;
        sb_error_clear(&err);
        sb_uuid7(id, NULL);
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.timeout_ms = a->timeout_ms;
        sb_waiter *w = NULL;
        int64_t a0 = mono_ns();
        int rc = sb_attach(ch, id, &wo, &w, &err);
        int64_t a1 = mono_ns();
        if (rc != SB_OK) {
            if (errors++ == 0)
                snprintf(first_error, sizeof first_error, "sb_attach: %s: %s",
                         sb_strerror(rc), err.message);
            continue;
        }
        pthread_mutex_lock(&s.mu);
        memcpy(s.id, id, sizeof id);
        s.pending = 1;
        s.done = 0;
        pthread_cond_broadcast(&s.cv);
        pthread_mutex_unlock(&s.mu);
        sb_reply *r = NULL;
        rc = sb_waiter_wait(w, &r, &err);
        int64_t t2 = mono_ns();
        pthread_mutex_lock(&s.mu);
        while (!s.done)
            pthread_cond_wait(&s.cv, &s.mu);
        int rrc = s.rc;
        int64_t t0 = s.t0, t1 = s.t1;
        if (rrc != SB_OK && errors++ == 0)
            snprintf(first_error, sizeof first_error, "%s", s.err);
        pthread_mutex_unlock(&s.mu);
        size_t len = 0;
        const char *d = rc == SB_OK ? sb_reply_data(r, &len) : NULL;
        if (rc != SB_OK || len != 4 || memcmp(d, "pong", 4) != 0) {
            if (errors++ == 0)
                snprintf(first_error, sizeof first_error,
                         "sb_waiter_wait: %s: %s", sb_strerror(rc),
                         err.message);
        } else if (i >= a->warmup && rrc == SB_OK) {
            hist_add(&wake, t2 - t0);
            hist_add(&call, t1 - t0);
            hist_add(&attach, a1 - a0);
        }
        sb_reply_free(r);
        sb_waiter_free(w);
    }
    double secs = (double)(mono_ns() - t_start) / 1e9;
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(th, NULL);
    sb_channel_close(ch);
    int ok = errors == 0 && wake.n == (uint64_t)a->requests;
    if (!ok)
        logf_("respond: PROBLEM errors=%" PRId64 " measured=%" PRIu64
              " first error: %s",
              errors, wake.n, first_error);
    printf("{\"scenario\":\"respond\",\"ok\":%s,\"backend\":\"%s\","
           "\"requests\":%" PRId64 ",\"warmup\":%" PRId64
           ",\"measured\":%" PRIu64 ",\"errors\":%" PRId64 ",\"seconds\":%.4f,",
           ok ? "true" : "false", sb_backend_name(bus), a->requests, a->warmup,
           wake.n, errors, secs);
    printf("\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,",
           (double)hist_pct(&wake, 50) / 1e3, (double)hist_pct(&wake, 90) / 1e3,
           (double)hist_pct(&wake, 99) / 1e3, (double)wake.max / 1e3);
    hist_json("respond_call", &call);
    putchar(',');
    hist_json("attach", &attach);
    printf(",\"first_error\":");
    json_str(stdout, first_error);
    printf("}\n");
    fflush(stdout);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    sb_close(bus);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* waiters: N concurrent waiters in one process (G8)                     */
/* ------------------------------------------------------------------ */

/* A "Vm...:  123 kB" field of /proc/self/status in KiB, or -1. */
static int64_t proc_status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    char line[256];
    size_t fl = strlen(field);
    int64_t v = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
            char *end = NULL;
            long long n = strtoll(line + fl + 1, &end, 10);
            if (end != line + fl + 1)
                v = n;
            break;
        }
    }
    fclose(f);
    return v;
}

static int64_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int64_t n = 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 2; /* . and .. */
}

/* utime + stime (clock ticks) of one /proc/PID/stat, and its parent. */
static int proc_stat(const char *pid, long *ppid, long long *ticks)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold blanks and parentheses: fields start after
     * the last ')'. Then: state ppid pgrp session tty tpgid flags minflt
     * cminflt majflt cmajflt utime stime. */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return -1;
    p++;
    long long fields[13];
    for (int i = 0; i < 13; i++) {
        while (*p == ' ')
            p++;
        if (i == 0) { /* state: one character */
            p++;
            fields[0] = 0;
            continue;
        }
        char *end = NULL;
        fields[i] = strtoll(p, &end, 10);
        if (end == p)
            return -1;
        p = end;
    }
    *ppid = (long)fields[1];
    *ticks = fields[11] + fields[12];
    return 0;
}

/* CPU seconds used so far by `pid` and its children (not reaped ones):
 * the processes of a PostgreSQL cluster when `pid` is its postmaster. */
static double tree_cpu_s(long pid)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return -1;
    long long ticks = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        long ppid = 0;
        long long t = 0;
        char *end = NULL;
        long self = strtol(e->d_name, &end, 10);
        if (proc_stat(e->d_name, &ppid, &t) == 0 &&
            (self == pid || ppid == pid))
            ticks += t;
    }
    closedir(d);
    long hz = sysconf(_SC_CLK_TCK);
    return (double)ticks / (double)(hz > 0 ? hz : 100);
}

/* Machine-wide busy and total jiffies from /proc/stat. */
static void machine_cpu(long long *busy, long long *total)
{
    *busy = *total = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return;
    char line[512];
    if (fgets(line, sizeof line, f) != NULL && strncmp(line, "cpu ", 4) == 0) {
        char *p = line + 4;
        for (int i = 0; i < 8; i++) {
            char *end = NULL;
            long long v = strtoll(p, &end, 10);
            if (end == p)
                break;
            p = end;
            *total += v;
            if (i != 3 && i != 4) /* idle, iowait */
                *busy += v;
        }
    }
    fclose(f);
}

typedef struct wt_ctx {
    sb_channel *ch;
    sb_waiter **ws;
    int64_t from, to; /* this thread's slice of ws */
    int64_t timeout_ms;
    int64_t failed;
    char first_error[640];
} wt_ctx;

static void *attach_main(void *arg)
{
    wt_ctx *x = arg;
    for (int64_t i = x->from; i < x->to; i++) {
        char id[37];
        sb_error err;
        sb_error_clear(&err);
        sb_uuid7(id, NULL);
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.timeout_ms = x->timeout_ms;
        int rc = sb_attach(x->ch, id, &wo, &x->ws[i], &err);
        if (rc != SB_OK && x->failed++ == 0)
            snprintf(x->first_error, sizeof x->first_error, "sb_attach: %s: %s",
                     sb_strerror(rc), err.message);
    }
    return NULL;
}

/* Newest first: the channel keeps its live waiters newest first, so this
 * order is also the cheapest to unlink. */
static void *free_main(void *arg)
{
    wt_ctx *x = arg;
    for (int64_t i = x->to - 1; i >= x->from; i--) {
        sb_waiter_free(x->ws[i]);
        x->ws[i] = NULL;
    }
    return NULL;
}

static int run_slices(sb_channel *ch, sb_waiter **ws, int64_t n, int threads,
                      int64_t timeout_ms, void *(*fn)(void *), int64_t *failed,
                      char *first_error, size_t cap)
{
    wt_ctx *xs = calloc((size_t)threads, sizeof *xs);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    if (xs == NULL || th == NULL) {
        free(xs);
        free(th);
        return -1;
    }
    int started = 0;
    for (int t = 0; t < threads; t++) {
        xs[t].ch = ch;
        xs[t].ws = ws;
        xs[t].from = n * t / threads;
        xs[t].to = n * (t + 1) / threads;
        xs[t].timeout_ms = timeout_ms;
        if (pthread_create(&th[t], NULL, fn, &xs[t]) != 0)
            break;
        started++;
    }
    for (int t = 0; t < started; t++) {
        pthread_join(th[t], NULL);
        *failed += xs[t].failed;
        if (first_error[0] == '\0' && xs[t].first_error[0] != '\0')
            snprintf(first_error, cap, "%s", xs[t].first_error);
    }
    free(xs);
    free(th);
    return started == threads ? 0 : -1;
}

static int cmd_waiters(const cargs *a)
{
    if (a->url == NULL) {
        logf_("waiters needs --url");
        return 2;
    }
    /* Reported, not raised: waiters hold no descriptor until
     * sb_waiter_fd is called (fds_before / fds_after show it). */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);

    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    sb_channel_options co;
    memset(&co, 0, sizeof co);
    co.size = sizeof co;
    co.heartbeat_interval_ms = a->heartbeat_ms;    /* 0 = default 10 s */
    co.heartbeat_timeout_ms = a->heartbeat_ms * 3; /* 0 = default 30 s */
    /* 0 = the channel's defaults (full sweep 1 s on SQLite, 5 s on
     * PostgreSQL with LISTEN up; reconciliation 30 s). */
    co.full_sweep_interval_ms = a->sweep_ms;
    co.reconcile_interval_ms = a->sweep_ms;
    if (open_bus(a, &bus) != SB_OK || open_channel(bus, &co, &ch) != SB_OK) {
        sb_close(bus);
        fail_json("waiters", "sb_open or sb_channel_open failed");
        return 1;
    }
    const char *backend = sb_backend_name(bus);
    int64_t n = a->waiters;
    int64_t timeout_ms = 3600000; /* far beyond the run */
    sb_waiter **ws = calloc((size_t)n, sizeof *ws);
    if (ws == NULL) {
        sb_channel_close(ch);
        sb_close(bus);
        fail_json("waiters", "out of memory");
        return 1;
    }
    /* Warm-up: open the pool's connections and prepare the statements. */
    int64_t failed = 0;
    char first_error[640] = "";
    int warm = a->threads * 4 < 64 ? a->threads * 4 : 64;
    run_slices(ch, ws, warm, a->threads, timeout_ms, attach_main, &failed,
               first_error, sizeof first_error);
    run_slices(ch, ws, warm, a->threads, timeout_ms, free_main, &failed,
               first_error, sizeof first_error);
    sleep_ns(500000000LL);

    int64_t rss0 = proc_status_kib("VmRSS"), hwm0 = proc_status_kib("VmHWM");
    int64_t fds0 = open_fds();
    logf_("waiters: attaching %" PRId64 " waiters on distinct ids with %d "
          "threads (%s)",
          n, a->threads, backend);
    int64_t t0 = mono_ns();
    run_slices(ch, ws, n, a->threads, timeout_ms, attach_main, &failed,
               first_error, sizeof first_error);
    double attach_s = (double)(mono_ns() - t0) / 1e9;
    logf_("waiters: attached in %.2f s (%" PRId64 " failed); settling %" PRId64
          " ms, then an idle window of %" PRId64 " s",
          attach_s, failed, a->settle_ms, a->window_s);
    /* Let the scans requested by the attaches run out before the window. */
    sleep_ns(a->settle_ms * 1000000LL);
    int64_t rss1 = proc_status_kib("VmRSS"), hwm1 = proc_status_kib("VmHWM");
    int64_t fds1 = open_fds();

    /* The idle window: nothing but the channel's own threads runs. */
    struct rusage ru0, ru1;
    long long mb0, mt0, mb1, mt1;
    double srv0 = a->server_pid ? tree_cpu_s(a->server_pid) : 0;
    machine_cpu(&mb0, &mt0);
    getrusage(RUSAGE_SELF, &ru0);
    int64_t w0 = mono_ns();
    sleep_ns(a->window_s * 1000000000LL);
    getrusage(RUSAGE_SELF, &ru1);
    int64_t w1 = mono_ns();
    machine_cpu(&mb1, &mt1);
    double srv1 = a->server_pid ? tree_cpu_s(a->server_pid) : 0;
    double wall = (double)(w1 - w0) / 1e9;
    double user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
    double sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
    double proc_pct = 100.0 * (user_s + sys_s) / wall;
    double srv_pct = a->server_pid ? 100.0 * (srv1 - srv0) / wall : 0;
    double machine_pct =
        mt1 > mt0 ? 100.0 * (double)(mb1 - mb0) / (double)(mt1 - mt0) : -1;
    int64_t rss2 = proc_status_kib("VmRSS");

    /* No waiter may have ended during the run. */
    int64_t ended = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ws[i] == NULL)
            continue;
        sb_reply *r = NULL;
        if (sb_waiter_take(ws[i], &r, NULL) != SB_EMPTY)
            ended++;
        sb_reply_free(r);
    }

    logf_("waiters: window done (process %.1f%% of one core); cancelling "
          "and freeing",
          proc_pct);
    int64_t c0 = mono_ns();
    int64_t ffail = 0;
    run_slices(ch, ws, n, a->threads, timeout_ms, free_main, &ffail,
               first_error, sizeof first_error);
    double cleanup_s = (double)(mono_ns() - c0) / 1e9;
    int64_t rss3 = proc_status_kib("VmRSS"), hwm3 = proc_status_kib("VmHWM");
    int64_t fds3 = open_fds();
    int64_t cl0 = mono_ns();
    sb_channel_close(ch);
    double close_s = (double)(mono_ns() - cl0) / 1e9;

    /* Per-round cost, scaled to the default 10 s interval: meaningful when
     * no periodic sweep ran in the window (sweep interval >= window). */
    int64_t hb = a->heartbeat_ms ? a->heartbeat_ms : 10000;
    int64_t sweep = a->sweep_ms;
    int hb_only = sweep >= a->window_s * 1000;
    double total_pct = proc_pct + srv_pct;
    int ok = failed == 0 && ended == 0;
    printf("{\"scenario\":\"waiters\",\"ok\":%s,\"backend\":\"%s\","
           "\"waiters\":%" PRId64 ",\"threads\":%d,\"failed\":%" PRId64
           ",\"ended_early\":%" PRId64 ",\"heartbeat_interval_ms\":%" PRId64
           ",\"heartbeat_timeout_ms\":%" PRId64
           ",\"sweep_interval_ms\":%" PRId64
           ",\"heartbeat_only\":%s,\"nofile_limit\":%llu,",
           ok ? "true" : "false", backend, n, a->threads, failed, ended, hb,
           hb * 3, sweep, hb_only ? "true" : "false",
           (unsigned long long)rl.rlim_cur);
    printf("\"attach_s\":%.3f,\"attach_per_s\":%.1f,\"settle_ms\":%" PRId64
           ",\"rss_before_kib\":%" PRId64 ",\"rss_after_kib\":%" PRId64
           ",\"rss_delta_kib\":%" PRId64 ",\"hwm_before_kib\":%" PRId64
           ",\"hwm_after_kib\":%" PRId64 ",\"hwm_delta_kib\":%" PRId64
           ",\"bytes_per_waiter\":%.0f,\"rss_after_window_kib\":%" PRId64
           ",\"fds_before\":%" PRId64 ",\"fds_after\":%" PRId64 ",",
           attach_s, attach_s > 0 ? (double)n / attach_s : 0.0, a->settle_ms,
           rss0, rss1, rss1 - rss0, hwm0, hwm1, hwm1 - hwm0,
           (double)(rss1 - rss0) * 1024.0 / (double)n, rss2, fds0, fds1);
    printf("\"window_s\":%.3f,\"user_s\":%.3f,\"sys_s\":%.3f,"
           "\"process_cpu_pct_one_core\":%.2f,\"server_cpu_s\":%.3f,"
           "\"server_cpu_pct_one_core\":",
           wall, user_s, sys_s, proc_pct, a->server_pid ? srv1 - srv0 : 0.0);
    if (a->server_pid)
        printf("%.2f", srv_pct);
    else
        printf("null");
    printf(",\"total_cpu_pct_one_core\":%.2f,"
           "\"machine_busy_pct_all_cores\":%.1f,"
           "\"scaled_total_cpu_pct_at_10s\":",
           total_pct, machine_pct);
    if (hb_only)
        printf("%.3f", total_pct * (double)hb / 10000.0);
    else
        printf("null");
    printf(",\"cleanup_s\":%.3f,\"cleanup_failed\":%" PRId64
           ",\"rss_after_cleanup_kib\":%" PRId64 ",\"hwm_end_kib\":%" PRId64
           ",\"fds_after_cleanup\":%" PRId64 ",\"channel_close_s\":%.3f,"
           "\"first_error\":",
           cleanup_s, ffail, rss3, hwm3, fds3, close_s);
    json_str(stdout, first_error);
    printf(",\"sqlbus_version\":\"%s\"}\n", SB_VERSION_STRING);
    fflush(stdout);
    free(ws);
    sb_close(bus);
    return ok ? 0 : 1;
}

static void usage(void)
{
    fprintf(
        stderr,
        "usage: sb_channel_bench rr      --url URL --mode cross|local [--requests 500] [--inflight 1]\n"
        "                                [--warmup 50] [--worker-concurrency =inflight] [--timeout-ms 30000]\n"
        "                                [--max-seconds 0 (no cap)] [--warmup-seconds 3]\n"
        "       sb_channel_bench respond --url URL [--requests 500] [--warmup 50]\n"
        "       sb_channel_bench waiters --url URL [--waiters 10000] [--threads 4] [--heartbeat-ms 1000]\n"
        "                                [--sweep-ms 0 (=default)] [--window 10] [--settle-ms 2000] [--server-pid PID]\n"
        "       sb_channel_bench reply-worker --url URL [--queue Q] [--concurrency C]\n"
        "common: [--queue channel-bench] [--pool P] [--sync full|normal (SQLite)]\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *cmd = argv[1];
    cargs a;
    if (parse_args(argc, argv, &a) != 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(cmd, "rr") == 0)
        return cmd_rr(&a);
    if (strcmp(cmd, "respond") == 0)
        return cmd_respond(&a);
    if (strcmp(cmd, "waiters") == 0)
        return cmd_waiters(&a);
    if (strcmp(cmd, "reply-worker") == 0) {
        if (a.url == NULL) {
            logf_("reply-worker needs --url");
            return 2;
        }
        return cmd_reply_worker(&a);
    }
    usage();
    return 2;
}
