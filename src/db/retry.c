/* retry.c - run a unit of work in a transaction, retrying transient
 * faults (busy, deadlock, serialization failure, lost connection) with
 * bounded, jittered exponential back-off; and the first connection of a
 * bus, retried the same way. */
#include "db/db.h"

/* The back-off of one policy (NULL: the defaults). */
typedef struct backoff {
    int max_attempts;
    int64_t delay_us, max_delay_us;
} backoff;

static backoff backoff_of(const sb_retry_policy *policy)
{
    backoff b = {6, 10000, 1000000};
    if (policy != NULL && policy->max_attempts)
        b.max_attempts = policy->max_attempts;
    if (policy != NULL && policy->first_delay_us)
        b.delay_us = policy->first_delay_us;
    if (policy != NULL && policy->max_delay_us)
        b.max_delay_us = policy->max_delay_us;
    return b;
}

/* After failed attempt `attempt` with `rc`: true (having slept the
 * jittered delay and logged why) when another attempt is due. */
static bool again(sb_pool *pool, backoff *b, int attempt, int rc,
                  const sb_error *err)
{
    if (!sb_is_transient(rc) || attempt >= b->max_attempts)
        return false;
    sb__log(&sb__pool_config(pool)->log, SB_LOG_DEBUG, "db",
            "transient failure (%s), retry %d of %d",
            err ? err->message : sb_strerror(rc), attempt, b->max_attempts - 1);
    sb__sleep_us(sb__jitter_us(b->delay_us));
    b->delay_us =
        b->delay_us * 2 > b->max_delay_us ? b->max_delay_us : b->delay_us * 2;
    return true;
}

int sb__db_run_tx(sb_pool *pool, const sb_retry_policy *policy, sb_tx_fn fn,
                  void *ctx, sb_error *err)
{
    backoff b = backoff_of(policy);
    for (int attempt = 1;; attempt++) {
        sb_conn *c = NULL;
        int rc = sb__pool_acquire(pool, 30000, &c, err);
        if (rc == SB_OK) {
            sb__pool_write_lock(pool);
            rc = sb__begin(c, err);
            if (rc == SB_OK)
                rc = fn(c, ctx, err);
            /* `fn` may have committed in its last pipeline. */
            if (rc == SB_OK && c->in_tx)
                rc = sb__commit(c, err);
            if (rc != SB_OK && c->in_tx)
                sb__rollback(c);
            sb__pool_write_unlock(pool);
            sb__pool_release(pool, c);
        }
        if (rc == SB_OK || !again(pool, &b, attempt, rc, err))
            return rc;
    }
}

int sb__pool_connect(sb_pool *pool, const sb_retry_policy *policy,
                     sb_error *err)
{
    backoff b = backoff_of(policy);
    for (int attempt = 1;; attempt++) {
        sb_conn *c = NULL;
        int rc = sb__pool_acquire(pool, 30000, &c, err);
        sb__pool_release(pool, c);
        if (rc == SB_OK || !again(pool, &b, attempt, rc, err))
            return rc;
    }
}
