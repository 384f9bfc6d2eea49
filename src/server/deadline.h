/*
 * deadline.h - the request-head deadline of `sqlbus serve` (S10,
 * docs/internals/server.md "Slow clients"): a connection that has not
 * sent a whole request head within the limit of its start, or of the end
 * of its previous answer, is shut down, however steadily it trickles
 * bytes (libmicrohttpd's own timeout only counts idle time). Opaque
 * handle; errors on the caller's sb_error; no globals.
 */
#ifndef SB_SERVER_DEADLINE_H
#define SB_SERVER_DEADLINE_H

#include <stdint.h>

#include "sqlbus.h"

typedef struct sb_deadline sb_deadline;
/* One watched connection (a slot of the watcher's table). */
typedef struct sb_deadline_slot sb_deadline_slot;

/* Start the watcher thread over at most `slots` connections at once (at
 * least 1), each shut down `limit_ms` (> 0) after it began waiting for a
 * request head that has not arrived whole. SB_INVALID naming "slots" or
 * "limit_ms"; SB_NOMEM; SB_ERROR when the thread cannot start. */
int sb__deadline_start(unsigned slots, int64_t limit_ms, sb_deadline **out,
                       sb_error *err);
/* Stop the thread and free the table; the sockets are left as they are.
 * NULL-safe; no other call may run on `d` during or after it. */
void sb__deadline_stop(sb_deadline *d);

/* A connection on socket `fd` (borrowed: its owner closes it, after
 * sb__deadline_close) has begun and waits for its first head from now:
 * its slot, or NULL when every slot is taken or `d` is NULL (then it is
 * not watched). Thread-safe, like the three below, which are no-ops on a
 * NULL `d` or `slot`. */
sb_deadline_slot *sb__deadline_open(sb_deadline *d, int fd);
/* The connection's request head has arrived whole: its clock stops. */
void sb__deadline_head(sb_deadline *d, sb_deadline_slot *slot);
/* Its answer has been sent: it waits for the next head from now. */
void sb__deadline_wait(sb_deadline *d, sb_deadline_slot *slot);
/* The connection is closing: the slot is free. Must come before the
 * socket is closed, so the watcher never shuts down a reused descriptor. */
void sb__deadline_close(sb_deadline *d, sb_deadline_slot *slot);

#endif
