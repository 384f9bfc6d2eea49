/*
 * fault_db.h - what the "fail the Nth allocation" walks over a real
 * SQLite file share (test_fault_walk.c over the public API,
 * test_fault_http.c over the HTTP API's request handling): the template
 * file a walk prepares once per case and the run file each run copies it
 * to, in a private directory on /dev/shm when there is one (a run's cost
 * is then the library's, not the disk's fsyncs), removed at exit; the
 * store's messages and groups read back as text, to compare a run's end
 * state with a clean run's; and the small helpers of a walk (a silent
 * log, a monotonic clock, the stack of a failed allocation).
 *
 * Header-only (static functions and state), like failalloc.h: include it
 * in one file of a test executable, after backend/harness.h (cmocka).
 */
#ifndef SBT_FAULT_DB_H
#define SBT_FAULT_DB_H

#include "backend/harness.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* files */

static char dir[256];
static char template_path[300], run_path[300];

static void remove_db(const char *path)
{
    static const char *const ext[] = {"", "-wal", "-shm"};
    char p[320];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, ext[i]);
        unlink(p);
    }
}

static void remove_dir(void)
{
    remove_db(template_path);
    remove_db(run_path);
    rmdir(dir);
}

static void make_dir(void)
{
    const char *const bases[] = {"/dev/shm", "/tmp"};
    for (size_t i = 0; i < 2 && dir[0] == '\0'; i++) {
        snprintf(dir, sizeof dir, "%s/sqlbus-fault.XXXXXX", bases[i]);
        if (mkdtemp(dir) == NULL)
            dir[0] = '\0';
    }
    if (dir[0] == '\0') {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(template_path, sizeof template_path, "%s/template.db", dir);
    snprintf(run_path, sizeof run_path, "%s/run.db", dir);
    atexit(remove_dir);
}

/* Copy the template (closed, so its WAL is checkpointed away) to the run
 * file; no template, no file. */
static void copy_template(void)
{
    remove_db(run_path);
    int in = open(template_path, O_RDONLY);
    if (in < 0 && errno == ENOENT)
        return;
    int out = open(run_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0)
        fail_msg("copy %s: %s", template_path, strerror(errno));
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            fail_msg("copy: %s", strerror(errno));
    close(in);
    close(out);
}

/* ------------------------------------------------------------------ */
/* helpers */

/* SB_FAULT_BACKTRACE=1: the stack of each failed allocation on stderr
 * (addresses: `addr2line -f -e test_fault_walk +OFFSET` names them). */
static void print_backtrace(long nth)
{
    void *frames[32];
    int n = backtrace(frames, 32);
    fprintf(stderr, "failed allocation N=%ld:\n", nth);
    backtrace_symbols_fd(frames, n, 2);
}

static void quiet_log(int level, const char *component, const char *message,
                      void *user)
{
    (void)level;
    (void)component;
    (void)message;
    (void)user;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* the store, read back */

/* Append to out[*len..cap) what the public API reads of the store's
 * messages: every message (id, queue, status, attempts, groups, body
 * size and place, history) in one list of up to `per_page` (0 = the
 * list's default), then the open and archived groups (with their
 * comments when `comments`). Fails the test (run `n`) when the status
 * counts kept by triggers differ from the rows. */
static void fd_store_fingerprint(sb_errors *store, long n, size_t per_page,
                                 int comments, char *out, size_t cap,
                                 size_t *len)
{
#define FD_ADD(...)                                                            \
    *len +=                                                                    \
        (size_t)snprintf(out + *len, *len < cap ? cap - *len : 0, __VA_ARGS__)
    sb_error err;
    sb_failed_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.status = -1;
    q.sort = "failed_queue";
    q.ascending = 1;
    q.per_page = per_page;
    sb_failed_summary **s = NULL;
    size_t k = 0;
    int64_t total = 0;
    sbt_ok(sb_errors_list(store, &q, &s, &k, &total, &err), &err, "list");
    FD_ADD("total %lld:", (long long)total);
    int64_t by_status[4] = {0};
    for (size_t i = 0; i < k; i++) {
        sb_failed_message *m = NULL;
        sbt_ok(sb_errors_get(store, s[i]->unique_id, &m, &err), &err, "get");
        size_t body = 0;
        sb_failed_body(m, &body);
        FD_ADD(" [%s %s %d %lld g%zu b%zu%s h%zu]",
               sb_failed_field(m, "message_id"), s[i]->failed_queue,
               s[i]->status, (long long)s[i]->attempts,
               sb_failed_group_count(m), body,
               sb_failed_body_stored_externally(m) ? "x" : "",
               sb_failed_history_count(m));
        by_status[s[i]->status]++;
        sb_failed_message_free(m);
    }
    sb_free(s);
    int64_t counts[4];
    sbt_ok(sb_errors_status_counts(store, counts, &err), &err, "counts");
    for (int st = 0; st < 4; st++)
        if (counts[st] != by_status[st])
            fail_msg("N=%ld: status %d: the counts say %lld, the rows %lld", n,
                     st, (long long)counts[st], (long long)by_status[st]);
    for (int st = 0; st < 4; st += 3) {
        sb_failure_group **g = NULL;
        sbt_ok(sb_errors_groups(store, NULL, st, &g, &k, &err), &err, "groups");
        for (size_t i = 0; i < k; i++) {
            FD_ADD(" {%s %lld", g[i]->title, (long long)g[i]->count);
            if (comments)
                FD_ADD(" \"%s\"}", g[i]->comment);
            else
                FD_ADD("}");
        }
        sb_free(g);
    }
#undef FD_ADD
}

#endif
