/*
 * notify.h - health-check notifications by e-mail (issue 22), as
 * ServiceControl's: a thread of `sqlbus serve` evaluates sqlbus's own
 * checks (checks.h) every interval and, while the e-mail notifications
 * are enabled and name a relay (mail.h), mails each change of a check
 * from passing to failing and back, the changes of one evaluation in one
 * message. A message the relay does not take is sent again at the next
 * evaluation, with what is true then; its failure is logged once per
 * failing streak. Each serve process mails what it sees.
 */
#ifndef SB_SERVER_NOTIFY_H
#define SB_SERVER_NOTIFY_H

#include <stdint.h>

#include "sqlbus.h"

struct sb_api;

typedef struct sb_notify sb_notify;

typedef struct sb_notify_state {
    int64_t evaluations; /* with notifications on */
    int64_t sent;        /* messages the relay took */
    int64_t failed;      /* messages it did not */
} sb_notify_state;

/* Start the thread over `a` (copied; what it points to is borrowed and
 * must outlive the thread), evaluating every `interval_ms` (0:
 * SB_SERVER_CHECK_INTERVAL_MS). SB_INVALID naming "check_interval"
 * outside SB_SERVER_CHECK_INTERVAL_MIN_MS..SB_SERVER_CHECK_INTERVAL_MAX_MS. */
int sb__notify_start(const struct sb_api *a, int64_t interval_ms, sb_log_fn log,
                     void *log_user, sb_notify **out, sb_error *err);
/* A consistent copy of the counters; zeros for NULL. Thread-safe. */
void sb__notify_state(sb_notify *n, sb_notify_state *out);
/* The message a test sends (POST /api/notifications/email/test). */
int sb__notify_test(const struct sb_api *a, sb_error *err);
/* Stop: a send under way is abandoned within about a second. NULL-safe. */
void sb__notify_stop(sb_notify *n);

#endif
