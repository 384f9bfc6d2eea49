/*
 * worker.c - consume a queue with the libsqlbus worker runtime.
 *
 *   worker URL QUEUE [CONCURRENCY]
 *
 * Starts an sb_worker with CONCURRENCY handler threads (default 1). The
 * handler prints each payload and returns SB_OK, which acks (deletes) the
 * message. A payload that starts with "fail" is a failure: the handler
 * records why with sb_delivery_fail and returns non-zero, so the runtime
 * naks it for redelivery and, once max_attempts (3 here) deliveries have
 * failed, moves it to the dead-letter queue with the failure headers
 * (see `sqlbus dlq list`).
 *
 * The program runs until the queue is idle (sb_worker_wait_idle: nothing
 * ready or leased), then stops the worker and prints its counters. SIGINT
 * or SIGTERM stop it early, gracefully: running handlers finish, claimed
 * but unstarted messages are handed back to the queue.
 *
 * Output: one line per delivery on stdout, then a final line
 *   stats: acked=A naked=N dead_lettered=D lost_leases=L handed_back=H
 * Exit code 0 on success (also after a signal), 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlbus.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    stop_requested = sig;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s URL QUEUE [CONCURRENCY]\n"
            "  URL          sqlite:PATH, PATH.db or postgresql://...\n"
            "  QUEUE        the queue to consume\n"
            "  CONCURRENCY  handler threads, 1..256 (default 1)\n",
            prog);
}

static void report(const char *what, int rc, const sb_error *err)
{
    fprintf(stderr, "worker: %s failed: %s", what,
            err->message[0] != '\0' ? err->message : sb_strerror(rc));
    if (err->field[0] != '\0')
        fprintf(stderr, " (field: %s)", err->field);
    fprintf(stderr, " [%s]\n", sb_strerror(rc));
}

/* The library never prints: route its warnings and errors to stderr. */
static void log_to_stderr(int level, const char *component, const char *message,
                          void *user)
{
    (void)user;
    const char *name = level >= SB_LOG_ERROR  ? "error"
                       : level >= SB_LOG_WARN ? "warning"
                                              : "info";
    fprintf(stderr, "worker: [%s] %s: %s\n", name, component, message);
}

/*
 * The handler. It runs on a worker thread (several at once with
 * CONCURRENCY > 1); `d` is valid only during the call. Each output line is
 * one printf call, so lines of concurrent handlers do not interleave.
 */
static int handle(sb_delivery *d, void *user)
{
    (void)user;
    const sb_msg *msg = sb_delivery_msg(d);
    size_t len = 0;
    const char *payload = sb_msg_payload(msg, &len);
    if (payload == NULL)
        payload = "";
    /* Show at most 200 bytes, without a trailing newline. */
    size_t n = len > 200 ? 200 : len;
    while (n > 0 && (payload[n - 1] == '\n' || payload[n - 1] == '\r'))
        n--;
    int shown = (int)n;
    const char *type = sb_msg_header(msg, "sb-message-type");

    if (len >= 4 && memcmp(payload, "fail", 4) == 0) {
        printf("failed  %s attempt %d: %.*s\n", sb_msg_id(msg),
               sb_msg_attempts(msg), shown, payload);
        /* Recorded as last_error, and as sb-exception-type and
         * sb-exception-message once the message is dead-lettered. */
        sb_delivery_fail(d, "example:fail", "the payload starts with \"fail\"",
                         NULL);
        return SB_ERROR;
    }
    printf("handled %s attempt %d type %s: %.*s\n", sb_msg_id(msg),
           sb_msg_attempts(msg), type != NULL ? type : "-", shown, payload);
    return SB_OK; /* ack */
}

static int parse_concurrency(const char *text, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 1 || v > 256)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        usage(argv[0]);
        return 1;
    }
    const char *url = argv[1];
    const char *queue = argv[2];
    int concurrency = 1;
    if (argc == 4 && parse_concurrency(argv[3], &concurrency) != 0) {
        fprintf(stderr, "worker: CONCURRENCY must be 1..256 (got \"%s\")\n",
                argv[3]);
        return 1;
    }
    /* Line-buffered even into a pipe, so output keeps its order. */
    setvbuf(stdout, NULL, _IOLBF, 0);

    /*
     * Signals: block SIGINT and SIGTERM while the library starts its
     * threads, so they inherit the mask and only this thread receives
     * them. The handler only sets a flag; the loop below stops the worker,
     * since sb_worker_stop must not be called from a signal handler.
     */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    if (sigaction(SIGINT, &sa, NULL) != 0 ||
        sigaction(SIGTERM, &sa, NULL) != 0 ||
        pthread_sigmask(SIG_BLOCK, &sigs, &old) != 0) {
        perror("worker: signals");
        return 1;
    }

    sb_error err;
    sb_error_clear(&err);
    sb_options opts;
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.url = url;
    opts.log = log_to_stderr;
    opts.log_level = SB_LOG_WARN;

    sb_bus *bus = NULL;
    int rc = sb_open(&opts, &bus, &err);
    if (rc != SB_OK) {
        report("sb_open", rc, &err);
        return 1;
    }

    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = queue;
    wo.handler = handle;
    wo.concurrency = concurrency;
    wo.max_attempts = 3;         /* then dead-letter */
    wo.redelivery_delay_ms = -1; /* retry at once (the default waits 5 s) */
    sb_worker *w = NULL;
    rc = sb_worker_start(bus, &wo, &w, &err);
    if (rc != SB_OK) {
        report("sb_worker_start", rc, &err);
        sb_close(bus);
        return 1;
    }
    /* The worker's threads exist now: let this thread take the signals. */
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    /*
     * Run until the queue is idle. A delayed message does not count as
     * work, which is why failures are retried at once above: with a retry
     * delay the worker would go idle before the last retry was due.
     * Waiting in short slices lets a signal interrupt the wait.
     */
    int status = 0;
    for (;;) {
        if (stop_requested) {
            fprintf(stderr, "worker: %s, stopping\n",
                    stop_requested == SIGINT ? "interrupted" : "terminated");
            break;
        }
        rc = sb_worker_wait_idle(w, 200);
        if (rc == SB_OK)
            break;
        if (rc != SB_TIMEOUT) {
            fprintf(stderr, "worker: the worker ended early: %s\n",
                    sb_strerror(rc));
            status = 1;
            break;
        }
    }

    /* Graceful stop: no new claims, running handlers finish. */
    rc = sb_worker_stop(w, &err);
    if (rc != SB_OK) {
        report("sb_worker_stop", rc, &err);
        status = 1;
    }
    sb_worker_stats st;
    sb_worker_get_stats(w, &st);
    printf("stats: acked=%lld naked=%lld dead_lettered=%lld "
           "lost_leases=%lld handed_back=%lld\n",
           (long long)st.acked, (long long)st.naked,
           (long long)st.dead_lettered, (long long)st.lost_leases,
           (long long)st.handed_back);
    sb_worker_free(w); /* workers are freed before their bus */
    sb_close(bus);
    if (fflush(stdout) != 0) {
        perror("worker: stdout");
        status = 1;
    }
    return status;
}
