/* retry.c - run a unit of work in a transaction, retrying transient
 * faults (busy, deadlock, serialization failure, lost connection) with
 * bounded, jittered exponential back-off. */
#include "db/db.h"

int sb__db_run_tx(sb_pool *pool, const sb_retry_policy *policy, sb_tx_fn fn,
                  void *ctx, sb_error *err)
{
    int max_attempts =
        policy && policy->max_attempts ? policy->max_attempts : 6;
    int64_t delay =
        policy && policy->first_delay_us ? policy->first_delay_us : 10000;
    int64_t max_delay =
        policy && policy->max_delay_us ? policy->max_delay_us : 1000000;
    int rc = SB_ERROR;
    for (int attempt = 1;; attempt++) {
        sb_conn *c = NULL;
        rc = sb__pool_acquire(pool, 30000, &c, err);
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
        if (rc == SB_OK || !sb_is_transient(rc) || attempt >= max_attempts)
            return rc;
        sb__log(&sb__pool_config(pool)->log, SB_LOG_DEBUG, "db",
                "transient failure (%s), retry %d of %d",
                err ? err->message : sb_strerror(rc), attempt,
                max_attempts - 1);
        sb__sleep_us(sb__jitter_us(delay));
        delay = delay * 2 > max_delay ? max_delay : delay * 2;
    }
}
