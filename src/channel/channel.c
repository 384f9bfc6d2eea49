/* channel.c - opening and closing a channel, its schema, and the loop
 * thread that scans, sweeps, confirms, times out waiters, heartbeats and
 * prunes. */
#define _GNU_SOURCE
#include "channel/channel.h"

#include <stdio.h>
#include <string.h>

static int create_tx(sb_conn *c, void *ctx, sb_error *err)
{
    const sb_channel_sql *sql = ctx;
    int rc = SB_OK;
    /* SQL Server's lock is a batch (sp_getapplock and its return code). */
    if (sql->lock != NULL)
        rc = c->drv->dialect == SB_DIALECT_MSSQL
                 ? sb__exec(c, sql->lock, err)
                 : sb__query(c, sql->lock, NULL, 0, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__exec(c, sql->ddl, err);
    return rc;
}

int sb__channel_ensure_schema(sb_bus *bus, const sb_channel_sql *sql,
                              sb_error *err)
{
    if (bus->schema_mode == SB_SCHEMA_NONE)
        return SB_OK;
    sb_error ddl_err;
    int rc = SB_OK;
    if (bus->schema_mode == SB_SCHEMA_AUTO)
        rc = sb__db_run_tx(bus->pool, NULL, create_tx, (void *)sql, &ddl_err);
    /* T7 on every backend: each column the DDL declares is there (a table
     * of another shape is named with the fix, not left to a statement's
     * "no such column"); on SQL Server then types, collations, keys. */
    rc = sb__schema_after_ddl(bus, sql->ddl, rc, &ddl_err, err);
    if (rc == SB_OK && bus->dialect == SB_DIALECT_MSSQL)
        rc = sb__channel_verify(bus, err);
    return rc;
}

static int64_t def(int64_t v, int64_t d)
{
    return v > 0 ? v : d;
}

static int copy_options(sb_channel *ch, const sb_channel_options *o,
                        sb_error *err)
{
    sb_channel_options z;
    memset(&z, 0, sizeof z);
    if (o == NULL)
        o = &z;
    if (o->size != 0 && o->size < sizeof *o)
        return sb__err(err, SB_INVALID, "size",
                       "sb_channel_options.size is smaller than any version");
    const int64_t v[] = {o->default_timeout_ms,     o->confirmation_timeout_ms,
                         o->full_sweep_interval_ms, o->reconcile_interval_ms,
                         o->heartbeat_interval_ms,  o->heartbeat_timeout_ms,
                         o->message_retention_ms,   o->recovery_expiry_ms,
                         o->drain_timeout_ms,       o->recovery_retry_ms};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] < 0)
            return sb__err(err, SB_INVALID, "opts",
                           "channel durations must not be negative");
    int dialect = ch->bus->dialect;
    ch->o = *o;
    ch->o.size = sizeof ch->o;
    ch->o.recovery_expiry_ms = def(o->recovery_expiry_ms, 7LL * 86400000);
    ch->o.default_timeout_ms =
        def(o->default_timeout_ms, ch->o.recovery_expiry_ms);
    ch->o.confirmation_timeout_ms = def(o->confirmation_timeout_ms, 5000);
    ch->sweep_fixed = o->full_sweep_interval_ms > 0;
    /* SQL Server has no notifications: polling is how other processes'
     * replies arrive (an idle channel, no live ids, queries nothing). */
    ch->o.full_sweep_interval_ms =
        def(o->full_sweep_interval_ms, dialect == SB_DIALECT_POSTGRES ? 1250
                                       : dialect == SB_DIALECT_MSSQL  ? 250
                                                                      : 1000);
    ch->o.reconcile_interval_ms = def(o->reconcile_interval_ms, 30000);
    ch->o.heartbeat_interval_ms = def(o->heartbeat_interval_ms, 10000);
    ch->o.heartbeat_timeout_ms = def(o->heartbeat_timeout_ms, 30000);
    ch->o.message_retention_ms = def(o->message_retention_ms, 3600000);
    ch->o.drain_timeout_ms = def(o->drain_timeout_ms, 30000);
    ch->o.recovery_retry_ms = def(o->recovery_retry_ms, 5000);
    if (o->recovery_max_attempts < 0 || o->recovery_max_attempts > 1000)
        return sb__err(err, SB_INVALID, "recovery_max_attempts",
                       "recovery_max_attempts must be 0 (default 5) to 1000");
    ch->o.recovery_max_attempts =
        o->recovery_max_attempts ? o->recovery_max_attempts : 5;
    if (ch->o.heartbeat_timeout_ms <= ch->o.heartbeat_interval_ms)
        return sb__err(err, SB_INVALID, "heartbeat_timeout_ms",
                       "heartbeat_timeout_ms must exceed "
                       "heartbeat_interval_ms");
    ch->instance =
        sb__strdup(o->instance_id ? o->instance_id : ch->bus->endpoint);
    size_t n = strlen(ch->bus->prefix) + 32;
    ch->notify_channel = sb__malloc(n);
    if (ch->instance == NULL || ch->notify_channel == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    snprintf(ch->notify_channel, n, "%sreply", ch->bus->prefix);
    return SB_OK;
}

static void *loop_main(void *arg);

static void channel_free(sb_channel *ch)
{
    sb__ids_free_all(ch);
    sb__confirm_free(ch);
    sb__channel_sql_free(&ch->sql);
    sb__free(ch->instance);
    sb__free(ch->notify_channel);
    pthread_mutex_destroy(&ch->mu);
    pthread_mutex_destroy(&ch->handlers_mu);
    pthread_cond_destroy(&ch->loop_cv);
    pthread_cond_destroy(&ch->exec_cv);
    sb__free(ch);
}

int sb_channel_open(sb_bus *bus, const sb_channel_options *opts,
                    sb_channel **out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc != SB_OK)
        return rc;
    sb_channel *ch = sb__calloc(1, sizeof *ch);
    if (ch == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    ch->bus = bus;
    pthread_mutex_init(&ch->mu, NULL);
    pthread_mutex_init(&ch->handlers_mu, NULL);
    sb__cond_init_monotonic(&ch->loop_cv);
    pthread_cond_init(&ch->exec_cv, NULL);
    rc = copy_options(ch, opts, err);
    if (rc == SB_OK)
        rc = sb__channel_sql_new(bus->dialect, bus->prefix, &ch->sql, err);
    if (rc == SB_OK)
        rc = sb__channel_ensure_schema(bus, &ch->sql, err);
    if (rc == SB_OK)
        rc = sb__exec_start(ch, err);
    if (rc == SB_OK) {
        /* Before the loop thread, which reads the listener's state. */
        sb__channel_wake_start(ch);
        if (pthread_create(&ch->loop, NULL, loop_main, ch) != 0) {
            sb__channel_wake_stop(ch);
            sb__exec_stop(ch);
            rc = sb__err(err, SB_NOMEM, NULL,
                         "could not start the channel thread");
        }
    }
    if (rc != SB_OK) {
        channel_free(ch);
        return rc;
    }
    sb__channel_jobs_attach(ch);
    *out = ch;
    return SB_OK;
}

void sb_channel_close(sb_channel *ch)
{
    if (ch == NULL)
        return;
    /* Our own workers first: their handler threads read the bus's reply
     * hook. */
    sb__channel_ingress_close(ch);
    sb__channel_recovery_close(ch);
    sb__channel_jobs_detach(ch);
    /* Pending confirmations finish first (each within its confirmation
     * timeout), so a short-lived responder still settles its replies. */
    pthread_mutex_lock(&ch->mu);
    ch->draining = 1;
    pthread_cond_broadcast(&ch->loop_cv);
    while (ch->pend_len > 0)
        sb__cond_wait_until(&ch->loop_cv, &ch->mu, sb__mono_us() + 10000);
    ch->stopping = 1;
    pthread_cond_broadcast(&ch->loop_cv);
    pthread_mutex_unlock(&ch->mu);
    pthread_join(ch->loop, NULL);
    sb__channel_wake_stop(ch);
    sb__exec_stop(ch);
    /* Waiters still open end with SB_CLOSED; their owners free them. */
    for (;;) {
        pthread_mutex_lock(&ch->mu);
        sb_waiter *w = NULL;
        for (size_t b = 0; w == NULL && b < ch->n_buckets; b++)
            for (sb_live_id *id = ch->buckets[b]; id && !w; id = id->hnext)
                w = id->waiters;
        pthread_mutex_unlock(&ch->mu);
        if (w == NULL)
            break;
        sb_waiter_cancel(w);
    }
    channel_free(ch);
}

/* C14: PostgreSQL sweeps every 5 s while LISTEN is proven up, 1.25 s
 * otherwise; SQLite every second, besides its WAL-watch wake-ups; SQL
 * Server every 250 ms (polling is all it has). */
static int64_t sweep_us(sb_channel *ch)
{
    if (!ch->sweep_fixed && ch->bus->dialect == SB_DIALECT_POSTGRES &&
        sb__wake_listener_up(ch->listener))
        return 5000000;
    return ch->o.full_sweep_interval_ms * 1000;
}

/* The next multiple of `step` after `due` past `now`: absolute deadlines,
 * never pushed back by other work (C14). */
static int64_t advance(int64_t due, int64_t now, int64_t step)
{
    return now < due ? due : due + step * ((now - due) / step + 1);
}

static void *loop_main(void *arg)
{
    sb_channel *ch = arg;
    int64_t start = sb__mono_us();
    int64_t next_sweep = start + sweep_us(ch);
    int64_t reconcile_us = ch->o.reconcile_interval_ms * 1000;
    int64_t next_reconcile = start + reconcile_us;
    int64_t orphans_us = ch->o.confirmation_timeout_ms * 1000;
    ch->next_heartbeat_us = start + ch->o.heartbeat_interval_ms * 1000;
    ch->next_prune_us = start + 60000000;
    ch->next_orphans_us = start + orphans_us;
    pthread_mutex_lock(&ch->mu);
    while (!ch->stopping) {
        int64_t now = sb__mono_us();
        if (ch->scan_head != NULL) {
            pthread_mutex_unlock(&ch->mu);
            sb__channel_run_scans(ch);
            pthread_mutex_lock(&ch->mu);
            continue;
        }
        if (ch->full_requested || now >= next_sweep) {
            int reconcile = now >= next_reconcile;
            ch->full_requested = 0;
            if (now >= next_sweep)
                next_sweep = advance(next_sweep, now, sweep_us(ch));
            if (reconcile)
                next_reconcile = advance(next_reconcile, now, reconcile_us);
            pthread_mutex_unlock(&ch->mu);
            sb__channel_sweep(ch, reconcile);
            pthread_mutex_lock(&ch->mu);
            continue;
        }
        pthread_mutex_unlock(&ch->mu);
        int64_t until = sb__confirm_run(ch, now);
        if (now >= ch->next_orphans_us) {
            ch->next_orphans_us = advance(ch->next_orphans_us, now, orphans_us);
            sb__confirm_orphans(ch);
        }
        if (now >= ch->next_heartbeat_us) {
            ch->next_heartbeat_us = now + ch->o.heartbeat_interval_ms * 1000;
            sb__channel_heartbeat(ch);
        }
        if (now >= ch->next_prune_us) {
            ch->next_prune_us = now + 60000000;
            sb__channel_prune(ch);
        }
        int64_t expiry = sb__channel_expire(ch, now);
        pthread_mutex_lock(&ch->mu);
        const int64_t times[] = {expiry, next_sweep, ch->next_heartbeat_us,
                                 ch->next_orphans_us, ch->next_prune_us};
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
            if (times[i] < until)
                until = times[i];
        if (ch->pend_len == 0)
            pthread_cond_broadcast(&ch->loop_cv); /* a draining close */
        if (!ch->stopping && ch->scan_head == NULL && !ch->full_requested)
            sb__cond_wait_until(&ch->loop_cv, &ch->mu, until);
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}
