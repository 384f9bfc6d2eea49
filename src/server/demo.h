/*
 * demo.h - the built-in workload of `sqlbus serve --demo` (S2, S3): a
 * small web shop whose endpoints publish, handle, fail and dead-letter
 * NServiceBus-shaped messages and exchange request/reply jobs over the
 * channel, so every screen of the dashboard fills within seconds. It runs
 * through the public API only, in its own threads; see
 * docs/internals/server.md, "Demo workload (--demo)".
 */
#ifndef SB_SERVER_DEMO_H
#define SB_SERVER_DEMO_H

#include <stdint.h>

#include "sqlbus.h"

typedef struct sb_demo sb_demo;

typedef struct sb_demo_options {
    sb_log_fn log; /* one line at start and at stop, outages, first
                          reply and error reply (may be NULL) */
    void *log_user;
    double rate;   /* messages per second in all, approximately
                          (0: 5; at most 1000) */
    uint64_t seed; /* the PRNG of every choice (0: a fixed default,
                          so two runs place the same orders and request
                          the same reports) */
} sb_demo_options;

/*
 * Start the workload on `bus` (borrowed; it must outlive the demo):
 * opens its channel on it (one per process: the server must not open
 * another on the same bus), registers the recovery handler
 * "demo.recovery", starts its workers, its publisher and its requester,
 * then logs one line with its settings. On success `*out` is the
 * caller's to stop with sb__demo_stop; on failure nothing keeps running
 * and `err` says why (SB_INVALID naming "rate", or the error of the bus,
 * channel or worker that could not start).
 */
int sb__demo_start(sb_bus *bus, const sb_demo_options *opts, sb_demo **out,
                   sb_error *err);

/*
 * Stop the publisher and the requester (its open waiters are freed, so
 * their recovery registrations go), then the workers (a handler under
 * way cuts its simulated work short and finishes) and the channel, log a
 * summary and free. Returns within about 2 s.
 * NULL-safe; not concurrent with itself.
 */
void sb__demo_stop(sb_demo *d);

#endif
