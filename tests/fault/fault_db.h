/*
 * fault_db.h - what the "fail the Nth allocation" walks over a real
 * SQLite file share (test_fault_walk.c over the public API,
 * test_fault_http.c over the HTTP API's request handling): the template
 * file a walk prepares once per case and the run file each run copies it
 * to, in a private directory on /dev/shm when there is one (a run's cost
 * is then the library's, not the disk's fsyncs), removed at exit; and the
 * small helpers of a walk (a silent log, a monotonic clock, the stack of a
 * failed allocation).
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

#endif
