/* wake.c - cross-process wake-ups for the channel (C14): PostgreSQL
 * NOTIFY on a dedicated LISTEN connection, and on SQLite the WAL watch of
 * src/db. Both only request a scan; the periodic sweep stays the
 * correctness path. */
#include "channel/channel.h"

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

static void wal_changed(void *user)
{
    request_scan(user);
}

void sb__channel_wake_start(sb_channel *ch)
{
    if (ch->bus->dialect == SB_DIALECT_POSTGRES) {
        if (ch->bus->notify >= 0)
            sb__wake_listener_start(ch->bus, ch->notify_channel, NULL,
                                    notified, ch, &ch->listener);
        return;
    }
    ch->wal = sb__wal_watch_start(sb__pool_config(ch->bus->pool)->target,
                                  &ch->bus->log, wal_changed, ch);
}

void sb__channel_wake_stop(sb_channel *ch)
{
    sb__wake_listener_stop(ch->listener);
    ch->listener = NULL;
    sb__wal_watch_stop(ch->wal);
    ch->wal = NULL;
}
