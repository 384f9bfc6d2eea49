/*
 * metrics.h - this process's counters of one bus (rule S8, sb_bus_metrics):
 * per queue published / acked / naked / dead-lettered, and latency
 * histograms of claim statements and handler calls. Relaxed C11 atomics
 * only: a message path pays a few atomic adds, never a lock or a system
 * call. A queue's slot is found in a fixed open-addressing table, without
 * a lock once the queue has been seen; the first sight of a queue takes a
 * mutex. Queues past SB_METRICS_QUEUES share one "other" slot.
 * Each queue's slot also keeps, once the queue counted a message, a table
 * of its message types (sb_bus_metrics_by_type) built the same way: the
 * first SB_METRICS_TYPES by name, the rest in the table's "other" slot,
 * messages without a type in its "none" slot.
 * See docs/metrics.md and docs/internals/server.md ("Metrics and stats").
 */
#ifndef SB_TRANSPORT_METRICS_H
#define SB_TRANSPORT_METRICS_H

#include "sqlbus.h"

#include <stdint.h>

enum sb_count_kind {
    SB_COUNT_NONE = -1, /* an outcome that is not counted (hand-back) */
    SB_COUNT_PUBLISHED = 0,
    SB_COUNT_ACKED,
    SB_COUNT_NAKED,
    SB_COUNT_DEAD,
    SB_COUNT_KINDS
};

typedef struct sb_counters sb_counters;
typedef struct sb_count_slot sb_count_slot;
typedef struct sb_type_slot sb_type_slot;
typedef struct sb_tx_counts sb_tx_counts;

/* A bus's counters; `dlq` (copied) names its dead-letter queue in
 * snapshots. SB_NOMEM. */
int sb__counters_new(const char *dlq, sb_counters **out, sb_error *err);
/* NULL-safe. Not concurrent with any other use. */
void sb__counters_free(sb_counters *c);

/* The slot of `queue` (NULL or beyond the cap: the "other" slot); NULL
 * only when `c` is NULL. Lock-free for a queue seen before. The slot lives
 * as long as `c`. Thread-safe. */
sb_count_slot *sb__counters_slot(sb_counters *c, const char *queue);
/* Add `n` to one count of a slot (kind SB_COUNT_NONE or a NULL slot: no
 * op). Thread-safe, lock-free. */
void sb__counters_add(sb_count_slot *s, int kind, int64_t n);

/* The slot of the message type named by `headers` (a headers object, may
 * be NULL) under the queue slot `qs` of `c`: "none" without a type,
 * "other" past the queue's SB_METRICS_TYPES or for an over-long type.
 * Reads the headers once (sb__headers_message_type); lock-free for a type
 * seen before. NULL when `c` or `qs` is NULL, or when the queue's table
 * could not be allocated (nothing is counted by type then). Thread-safe. */
sb_type_slot *sb__counters_type(sb_counters *c, sb_count_slot *qs,
                                const char *headers);
/* Add `n` to one count of a type slot (kind SB_COUNT_NONE or a NULL slot:
 * no op). Thread-safe, lock-free. */
void sb__type_add(sb_type_slot *t, int kind, int64_t n);
/* The per-type list of sb_bus_metrics_by_type from `c` (see there):
 * SB_OK, or SB_NOMEM. `*out` is NULL when `*n_out` is 0. Thread-safe. */
int sb__counters_types(sb_counters *c, sb_type_counts ***out, size_t *n_out);

/* The bucket of a duration: the first bound >= `us`, or the +Inf bucket
 * (SB_METRICS_BUCKETS - 1). Pure. */
int sb__latency_bucket(int64_t us);
/* The bucket bounds (microseconds; the last is INT64_MAX). */
extern const int64_t sb__latency_le_us[SB_METRICS_BUCKETS];

/* Hooks of the message paths. Each passes `rc` through and counts only
 * when it is SB_OK, so a call site stays one line. */
int sb__count(sb_bus *bus, const char *queue, int kind, int64_t n, int rc);
/* As sb__count for a message's queue; `m` is read only when rc is SB_OK. */
int sb__count_msg(sb_bus *bus, const sb_msg *m, int kind, int rc);
/* Inside a caller's sb_tx: held by the transaction and counted when it
 * commits (sb__count_tx_end). On out of memory it counts at once. */
int sb__count_tx(sb_tx *tx, const char *queue, int kind, int64_t n, int rc);
int sb__count_tx_msg(sb_tx *tx, const sb_msg *m, int kind, int rc);
/* A publish of `msgs[0..n-1]` to `queue` succeeded (`rc` SB_OK): count
 * them for the queue and each for its message type; inside `tx` (may be
 * NULL) at its commit. Passes `rc` through. */
int sb__count_publish(sb_bus *bus, sb_tx *tx, const char *queue,
                      const sb_outgoing *msgs, size_t n, int rc);
/* The transaction ended: apply its counts if `committed`, then drop them.
 * Idempotent. */
void sb__count_tx_end(sb_tx *tx, int committed);

/* A claim statement that started at monotonic `t0_us` has returned `rc`:
 * record its duration when it succeeded. */
void sb__count_claim(sb_bus *bus, int64_t t0_us, int rc);
/* Run a worker's handler and record how long it took, also for its
 * message type `t` (may be NULL). */
int sb__count_handler(sb_bus *bus, sb_type_slot *t, sb_handler_fn fn,
                      sb_delivery *d, void *user);

#endif
