/* wake.c - cross-process wake-ups for the channel (C14): PostgreSQL
 * NOTIFY on a dedicated LISTEN connection (proven by a self-sent
 * notification before it counts), and on SQLite the WAL watch of src/db.
 * Both only request scans; the periodic sweep stays the correctness
 * path. */
#include "channel/channel.h"

/* A notification names the correlation id of a new reply: a targeted
 * scan of that id if it has waiters here. "" (after a reconnect) asks for
 * a full sweep; self-check notifications of other processes are ignored
 * as unknown ids. */
static void notified(void *user, const char *payload)
{
    sb_channel *ch = user;
    if (payload[0] == '\0')
        sb__channel_request_full(ch);
    else
        sb__channel_hint(ch, payload);
}

/* SQLite: a commit somewhere on the host. Each id's scan starts at its
 * cursor, so a sweep costs one index probe per live id. */
static void wal_changed(void *user)
{
    sb__channel_request_full(user);
}

void sb__channel_wake_start(sb_channel *ch)
{
    if (ch->bus->dialect == SB_DIALECT_POSTGRES) {
        if (ch->bus->notify >= 0)
            sb__wake_listener_start(ch->bus, ch->notify_channel, NULL, notified,
                                    ch, &ch->listener);
        return;
    }
    if (ch->bus->dialect == SB_DIALECT_SQLITE && ch->bus->notify >= 0)
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
