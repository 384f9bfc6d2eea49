/* channel.c - opening and closing a channel, its schema, and the loop
 * thread that sweeps, times out waiters, heartbeats and prunes. */
#define _GNU_SOURCE
#include "channel/channel.h"

#include <stdio.h>
#include <string.h>

static int create_tx(sb_conn *c, void *ctx, sb_error *err)
{
    const sb_channel_sql *sql = ctx;
    int rc = SB_OK;
    if (sql->s[CH_LOCK] != NULL)
        rc = sb__query(c, sql->s[CH_LOCK], NULL, 0, NULL, NULL, err);
    if (rc == SB_OK)
        rc = sb__exec(c, sql->s[CH_DDL], err);
    return rc;
}

int sb__channel_ensure_schema(sb_bus *bus, const sb_channel_sql *sql,
                              sb_error *err)
{
    if (bus->schema_mode != SB_SCHEMA_AUTO)
        return SB_OK;
    return sb__db_run_tx(bus->pool, NULL, create_tx, (void *)sql, err);
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
    const int64_t v[] = {o->default_timeout_ms,    o->confirmation_timeout_ms,
                         o->full_sweep_interval_ms, o->poll_interval_ms,
                         o->heartbeat_interval_ms,  o->heartbeat_timeout_ms,
                         o->message_retention_ms,   o->recovery_expiry_ms,
                         o->drain_timeout_ms,       o->recovery_retry_ms};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] < 0)
            return sb__err(err, SB_INVALID, "opts",
                           "channel durations must not be negative");
    bool pg = ch->bus->dialect == SB_DIALECT_POSTGRES;
    ch->o = *o;
    ch->o.size = sizeof ch->o;
    ch->o.recovery_expiry_ms = def(o->recovery_expiry_ms, 7LL * 86400000);
    ch->o.default_timeout_ms = def(o->default_timeout_ms,
                                   ch->o.recovery_expiry_ms);
    ch->o.confirmation_timeout_ms = def(o->confirmation_timeout_ms, 5000);
    ch->o.full_sweep_interval_ms = def(o->full_sweep_interval_ms,
                                       pg ? 1250 : 1000);
    ch->o.poll_interval_ms = def(o->poll_interval_ms, 250);
    ch->o.heartbeat_interval_ms = def(o->heartbeat_interval_ms, 10000);
    ch->o.heartbeat_timeout_ms = def(o->heartbeat_timeout_ms, 30000);
    ch->o.message_retention_ms = def(o->message_retention_ms, 3600000);
    ch->o.drain_timeout_ms = def(o->drain_timeout_ms, 30000);
    ch->o.recovery_retry_ms = def(o->recovery_retry_ms, 5000);
    if (o->recovery_max_attempts < 0 || o->recovery_max_attempts > 1000)
        return sb__err(err, SB_INVALID, "recovery_max_attempts",
                       "recovery_max_attempts must be 0 (default 5) to 1000");
    ch->o.recovery_max_attempts = o->recovery_max_attempts
                                      ? o->recovery_max_attempts
                                      : 5;
    if (ch->o.heartbeat_timeout_ms <= ch->o.heartbeat_interval_ms)
        return sb__err(err, SB_INVALID, "heartbeat_timeout_ms",
                       "heartbeat_timeout_ms must exceed "
                       "heartbeat_interval_ms");
    ch->instance = sb__strdup(o->instance_id ? o->instance_id
                                             : ch->bus->endpoint);
    size_t n = strlen(ch->bus->prefix) + 32;
    ch->notify_channel = sb__malloc(n);
    if (ch->instance == NULL || ch->notify_channel == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    snprintf(ch->notify_channel, n, "%sreply", ch->bus->prefix);
    return SB_OK;
}

static void *loop_main(void *arg);

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
    rc = copy_options(ch, opts, err);
    if (rc == SB_OK)
        rc = sb__channel_sql_new(bus->dialect, bus->prefix, &ch->sql, err);
    if (rc == SB_OK)
        rc = sb__channel_ensure_schema(bus, &ch->sql, err);
    if (rc == SB_OK && pthread_create(&ch->loop, NULL, loop_main, ch) != 0)
        rc = sb__err(err, SB_NOMEM, NULL, "could not start the channel thread");
    if (rc != SB_OK) {
        sb__channel_sql_free(&ch->sql);
        sb__free(ch->instance);
        sb__free(ch->notify_channel);
        pthread_mutex_destroy(&ch->mu);
        pthread_mutex_destroy(&ch->handlers_mu);
        pthread_cond_destroy(&ch->loop_cv);
        sb__free(ch);
        return rc;
    }
    sb__channel_jobs_attach(ch);
    sb__channel_wake_start(ch);
    *out = ch;
    return SB_OK;
}

void sb_channel_close(sb_channel *ch)
{
    if (ch == NULL)
        return;
    sb__channel_jobs_detach(ch);
    sb__channel_wake_stop(ch);
    sb__channel_recovery_close(ch);
    pthread_mutex_lock(&ch->mu);
    ch->stopping = 1;
    pthread_cond_broadcast(&ch->loop_cv);
    pthread_mutex_unlock(&ch->mu);
    pthread_join(ch->loop, NULL);
    /* Waiters still open end with SB_CLOSED; their owners free them. */
    for (;;) {
        pthread_mutex_lock(&ch->mu);
        sb_waiter *w = ch->waiters;
        pthread_mutex_unlock(&ch->mu);
        if (w == NULL)
            break;
        sb_waiter_cancel(w);
    }
    sb__channel_sql_free(&ch->sql);
    sb__free(ch->instance);
    sb__free(ch->notify_channel);
    pthread_mutex_destroy(&ch->mu);
    pthread_mutex_destroy(&ch->handlers_mu);
    pthread_cond_destroy(&ch->loop_cv);
    sb__free(ch);
}

static void *loop_main(void *arg)
{
    sb_channel *ch = arg;
    int64_t poll_us = ch->o.poll_interval_ms * 1000;
    int64_t next_sweep = sb__mono_us() + poll_us;
    ch->next_heartbeat_us = sb__mono_us() + ch->o.heartbeat_interval_ms * 1000;
    ch->next_prune_us = sb__mono_us() + 60000000;
    pthread_mutex_lock(&ch->mu);
    while (!ch->stopping) {
        int64_t now = sb__mono_us();
        int due = now >= next_sweep || ch->scan_requested;
        if (due) {
            ch->scan_requested = 0;
            pthread_mutex_unlock(&ch->mu);
            sb__channel_sweep(ch);
            pthread_mutex_lock(&ch->mu);
            /* Absolute deadlines: a requested scan never moves the next
             * periodic sweep (C14). */
            if (now >= next_sweep)
                next_sweep += poll_us * ((now - next_sweep) / poll_us + 1);
            continue;
        }
        if (now >= ch->next_heartbeat_us) {
            ch->next_heartbeat_us = now + ch->o.heartbeat_interval_ms * 1000;
            pthread_mutex_unlock(&ch->mu);
            sb__channel_heartbeat(ch);
            pthread_mutex_lock(&ch->mu);
            continue;
        }
        if (now >= ch->next_prune_us) {
            ch->next_prune_us = now + 60000000;
            pthread_mutex_unlock(&ch->mu);
            sb__channel_prune(ch);
            pthread_mutex_lock(&ch->mu);
            continue;
        }
        pthread_mutex_unlock(&ch->mu);
        int64_t until = sb__channel_expire(ch, now);
        pthread_mutex_lock(&ch->mu);
        if (next_sweep < until)
            until = next_sweep;
        if (ch->next_heartbeat_us < until)
            until = ch->next_heartbeat_us;
        if (!ch->stopping && !ch->scan_requested)
            sb__cond_wait_until(&ch->loop_cv, &ch->mu, until);
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}
