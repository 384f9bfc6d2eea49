/* wake.c - cross-process wake-ups for the channel (C14): PostgreSQL
 * NOTIFY on a dedicated LISTEN connection, and on SQLite a watch on the
 * database's WAL file (every commit of every process on the host appends
 * to it). Both only request a scan; the periodic sweep stays the
 * correctness path. */
#define _GNU_SOURCE
#include "channel/channel.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static void request_scan(sb_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->scan_requested = 1;
    pthread_cond_signal(&ch->loop_cv);
    pthread_mutex_unlock(&ch->mu);
}

static void notified(void *user, const char *payload)
{
    (void)payload; /* any reply may be for a live id: the scan decides */
    request_scan(user);
}

/* The WAL watch: inotify on the database's directory, for "<db>-wal". */
static void *wal_main(void *arg)
{
    sb_channel *ch = arg;
    const char *path = sb__pool_config(ch->bus->pool)->target;
    const char *slash = strrchr(path, '/');
    char dir[4096], name[1024];
    if (slash == NULL) {
        snprintf(dir, sizeof dir, ".");
        snprintf(name, sizeof name, "%s-wal", path);
    } else {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path + (slash == path)),
                 path);
        snprintf(name, sizeof name, "%s-wal", slash + 1);
    }
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0 || inotify_add_watch(fd, dir, IN_MODIFY | IN_CREATE) < 0) {
        sb__log(&ch->bus->log, SB_LOG_INFO, "channel",
                "no WAL watch on %s (%s): replies from other processes "
                "arrive at the poll interval",
                dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (!atomic_load(&ch->wake_stop)) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t n;
        int hit = 0;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
            for (char *q = buf; q < buf + n;) {
                const struct inotify_event *e = (const void *)q;
                if (e->len > 0 && strcmp(e->name, name) == 0)
                    hit = 1;
                q += sizeof *e + e->len;
            }
        }
        if (hit)
            request_scan(ch);
    }
    close(fd);
    return NULL;
}

void sb__channel_wake_start(sb_channel *ch)
{
    if (ch->bus->dialect == SB_DIALECT_POSTGRES) {
        if (ch->bus->notify >= 0)
            sb__wake_listener_start(ch->bus, ch->notify_channel, NULL,
                                    notified, ch, &ch->listener);
        return;
    }
    if (pthread_create(&ch->wal_thread, NULL, wal_main, ch) == 0)
        ch->has_wal_thread = 1;
}

void sb__channel_wake_stop(sb_channel *ch)
{
    sb__wake_listener_stop(ch->listener);
    ch->listener = NULL;
    atomic_store(&ch->wake_stop, 1);
    if (ch->has_wal_thread)
        pthread_join(ch->wal_thread, NULL);
    ch->has_wal_thread = 0;
}
