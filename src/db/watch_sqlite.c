/* watch_sqlite.c - a cross-process wake-up for SQLite on one host: every
 * commit of every process appends to the database's WAL file, so an
 * inotify watch on its directory sees each commit within microseconds.
 * Only a hint: callers keep polling for correctness. */
#define _GNU_SOURCE
#include "db/db.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

struct sb_wal_watch {
    int fd;
    char name[1024]; /* "<db file>-wal" */
    void (*fn)(void *user);
    void *user;
    atomic_int stop;
    pthread_t thread;
};

/* IN_MODIFY fires when a commit's frames are written, which is before
 * the WAL is synced and the wal-index updated: a reader woken at once may
 * not see the commit yet, and nothing is written after it becomes
 * visible. So each burst of events is followed by re-notifications at
 * these delays (us) after its last event, spanning a slow fsync; a new
 * event restarts them. */
static const int64_t follow_up_us[] = {200,  400,  700,   1000, 1500,
                                       2500, 5000, 10000, 30000};
#define N_FOLLOW_UPS (sizeof follow_up_us / sizeof follow_up_us[0])

static void *watch_main(void *arg)
{
    sb_wal_watch *w = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int64_t last_hit = 0;
    size_t next_follow = N_FOLLOW_UPS; /* none pending */
    while (!atomic_load(&w->stop)) {
        int64_t wait_us = 200000;
        if (next_follow < N_FOLLOW_UPS) {
            wait_us = last_hit + follow_up_us[next_follow] - sb__mono_us();
            if (wait_us < 0)
                wait_us = 0;
        }
        struct timespec ts = {(time_t)(wait_us / 1000000),
                              (long)(wait_us % 1000000) * 1000};
        struct pollfd p = {w->fd, POLLIN, 0};
        if (ppoll(&p, 1, &ts, NULL) <= 0) {
            if (next_follow < N_FOLLOW_UPS &&
                sb__mono_us() >= last_hit + follow_up_us[next_follow]) {
                next_follow++;
                w->fn(w->user);
            }
            continue;
        }
        ssize_t n;
        int hit = 0;
        while ((n = read(w->fd, buf, sizeof buf)) > 0) {
            for (char *q = buf; q < buf + n;) {
                const struct inotify_event *e = (const void *)q;
                if (e->len > 0 && strcmp(e->name, w->name) == 0)
                    hit = 1;
                q += sizeof *e + e->len;
            }
        }
        if (hit) {
            last_hit = sb__mono_us();
            next_follow = 0;
            w->fn(w->user);
        }
    }
    return NULL;
}

sb_wal_watch *sb__wal_watch_start(const char *db_path, const sb_logger *log,
                                  void (*fn)(void *user), void *user)
{
    sb_wal_watch *w = sb__calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    const char *slash = strrchr(db_path, '/');
    char dir[4096];
    if (slash == NULL) {
        snprintf(dir, sizeof dir, ".");
        snprintf(w->name, sizeof w->name, "%s-wal", db_path);
    } else {
        snprintf(dir, sizeof dir, "%.*s",
                 (int)(slash == db_path ? 1 : slash - db_path), db_path);
        snprintf(w->name, sizeof w->name, "%s-wal", slash + 1);
    }
    w->fn = fn;
    w->user = user;
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0 || inotify_add_watch(w->fd, dir, IN_MODIFY | IN_CREATE) < 0 ||
        pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        sb__log(log, SB_LOG_INFO, "sqlite",
                "no WAL watch on %s (%s): other processes' commits are seen "
                "at the next poll",
                dir, strerror(errno));
        if (w->fd >= 0)
            close(w->fd);
        sb__free(w);
        return NULL;
    }
    return w;
}

void sb__wal_watch_stop(sb_wal_watch *w)
{
    if (w == NULL)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    close(w->fd);
    sb__free(w);
}
