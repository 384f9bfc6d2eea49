/* loops.c - ingestion and housekeeping threads of `sqlbus serve` (see
 * loops.h and docs/internals/server.md, "The process"). */
#include "server/loops.h"

#include "core/core.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000

struct sb_loops {
    sb_bus *bus;
    sb_errors *store;
    sb_loops_options o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    pthread_t ingest[SB_LOOPS_MAX_INGESTERS], housekeeping, scheduler;
    int started_ingest, started_housekeeping, started_scheduler;
    sb_loops_state st;
    int64_t last_ok_us;
    int64_t expire_next_us; /* T40: the next expiry sweep is due then */
    int expire_failing;
    /* under mu: ingestion's failing episodes, a ring (episode_next: the
     * next slot) */
    sb_loops_episode episodes[SB_LOOPS_EPISODES];
    size_t n_episodes, episode_next;
};

static void say(sb_loops *l, int level, const char *component, const char *what,
                const char *detail)
{
    if (l->o.log == NULL)
        return;
    char line[1024];
    snprintf(line, sizeof line, "%s%s", what, detail);
    l->o.log(level, component, line, l->o.log_user);
}

/* Wait up to `ms` or until stopping; returns whether stopping. */
static int nap(sb_loops *l, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (!l->stopping && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
        ;
    int stop = l->stopping;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

/* T40: the queues' expired messages dead-lettered, at most every
 * SB_EXPIRE_EVERY_MS, by whichever ingester comes first, before its pass
 * so that the pass ingests them. */
static void expire_queues(sb_loops *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t now = sb__mono_us();
    int due = now >= l->expire_next_us;
    if (due)
        l->expire_next_us = now + SB_EXPIRE_EVERY_MS * 1000LL;
    pthread_mutex_unlock(&l->mu);
    if (!due)
        return;
    size_t n = 0;
    sb_error err;
    int rc = sb_queue_expire(l->bus, SB_EXPIRE_MAX, &n, &err);
    pthread_mutex_lock(&l->mu);
    l->st.queue_expired += (int64_t)n;
    int was_failing = l->expire_failing;
    l->expire_failing = rc != SB_OK;
    pthread_mutex_unlock(&l->mu);
    if (rc != SB_OK && !was_failing)
        say(l, SB_LOG_ERROR, "expire",
            "expiring waiting messages failed, retrying: ", err.message);
    if (rc == SB_OK && was_failing)
        say(l, SB_LOG_INFO, "expire", "expiring waiting messages works again",
            "");
}

/* One ingestion thread. With several, each claims its own batches (the
 * claim skips rows another holds); an outage is logged once, by the
 * thread that sees it first, and its end likewise. */
static void *ingest_loop(void *arg)
{
    sb_loops *l = arg;
    int64_t backoff = BACKOFF_MIN_MS;
    for (;;) {
        expire_queues(l);
        sb_ingest_stats s;
        memset(&s, 0, sizeof s);
        s.size = sizeof s;
        sb_error err;
        int rc = sb_errors_ingest(l->store, &s, &err);
        pthread_mutex_lock(&l->mu);
        int was_failing = l->st.failing;
        l->st.passes++;
        l->st.rows += s.rows;
        l->st.messages += s.messages;
        l->st.failed_imports_ingested += s.failed_imports;
        l->st.failing = rc != SB_OK;
        if (rc != SB_OK)
            l->st.errors++;
        else
            l->last_ok_us = sb__mono_us();
        if (rc != SB_OK && !was_failing) {
            sb_loops_episode *e = &l->episodes[l->episode_next];
            e->start_us = sb__wall_us();
            e->end_us = 0;
            sb__strlcpy(e->error, sb_strerror(rc), sizeof e->error);
            l->episode_next = (l->episode_next + 1) % SB_LOOPS_EPISODES;
            if (l->n_episodes < SB_LOOPS_EPISODES)
                l->n_episodes++;
        } else if (rc == SB_OK && was_failing && l->n_episodes > 0) {
            l->episodes[(l->episode_next + SB_LOOPS_EPISODES - 1) %
                        SB_LOOPS_EPISODES]
                .end_us = sb__wall_us();
        }
        pthread_mutex_unlock(&l->mu);
        if (rc != SB_OK && !was_failing)
            say(l, SB_LOG_ERROR, "ingest",
                "ingestion failed, retrying with back-off: ", err.message);
        if (rc == SB_OK && was_failing)
            say(l, SB_LOG_INFO, "ingest", "ingestion works again", "");
        int64_t wait = rc == SB_OK ? l->o.idle_ms : backoff;
        backoff = rc == SB_OK                    ? BACKOFF_MIN_MS
                  : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                 : backoff * 2;
        if (nap(l, wait))
            return NULL;
    }
}

/* One housekeeping run; returns whether every step worked. */
static int sweep(sb_loops *l)
{
    sb_error err;
    int64_t expired = 0, pruned = 0, stale = 0;
    int rc = sb_errors_expire(l->store, l->o.retention_ms, &expired, &err);
    if (rc == SB_OK)
        rc = sb_dlq_prune(l->bus, &pruned, &err);
    if (rc == SB_OK)
        rc = sb_recovery_watchdog(l->bus, 0, &stale, &err);
    pthread_mutex_lock(&l->mu);
    l->st.sweeps++;
    l->st.expired += expired;
    if (rc == SB_OK)
        l->st.stale_registrations = stale;
    pthread_mutex_unlock(&l->mu);
    if (rc != SB_OK)
        say(l, SB_LOG_ERROR, "housekeeping",
            "housekeeping failed, retrying with back-off: ", err.message);
    return rc == SB_OK;
}

static void *housekeeping_loop(void *arg)
{
    sb_loops *l = arg;
    int64_t backoff = BACKOFF_MIN_MS;
    if (nap(l, l->o.first_sweep_ms))
        return NULL;
    for (;;) {
        int ok = sweep(l);
        int64_t wait = ok ? l->o.housekeeping_ms : backoff;
        backoff = ok                             ? BACKOFF_MIN_MS
                  : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                 : backoff * 2;
        if (nap(l, wait))
            return NULL;
    }
}

/* The scheduler of periodic jobs (T41): a pass, then a nap until the next
 * occurrence, at most SB_LOOPS_SCHEDULER_MAX_MS; other schedulers (other
 * servers, `sqlbus schedule run`) may run beside it. */
static void *scheduler_loop(void *arg)
{
    sb_loops *l = arg;
    int64_t backoff = BACKOFF_MIN_MS;
    int failing = 0;
    for (;;) {
        int published = 0;
        int64_t wake = -1;
        sb_error err;
        int rc =
            sb_schedule_run_due(l->bus, sb__wall_us(), &published, &wake, &err);
        pthread_mutex_lock(&l->mu);
        l->st.scheduled += published;
        pthread_mutex_unlock(&l->mu);
        if (rc != SB_OK && !failing)
            say(l, SB_LOG_ERROR, "schedule",
                "the scheduler failed, retrying with back-off: ", err.message);
        if (rc == SB_OK && failing)
            say(l, SB_LOG_INFO, "schedule", "the scheduler works again", "");
        failing = rc != SB_OK;
        int64_t wait = SB_LOOPS_SCHEDULER_MAX_MS;
        if (rc != SB_OK)
            wait = backoff;
        else if (wake >= 0 && (wake - sb__wall_us()) / 1000 + 1 < wait)
            wait = (wake - sb__wall_us()) / 1000 + 1;
        backoff = rc == SB_OK                    ? BACKOFF_MIN_MS
                  : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                 : backoff * 2;
        if (nap(l, wait < 1 ? 1 : wait))
            return NULL;
    }
}

int sb__loops_start(sb_bus *bus, sb_errors *store, const sb_loops_options *opts,
                    sb_loops **out, sb_error *err)
{
    sb_error_clear(err);
    *out = NULL;
    if (opts->ingesters < 0 || opts->ingesters > SB_LOOPS_MAX_INGESTERS)
        return sb__err(err, SB_INVALID, "ingesters",
                       "ingesters must be from 0 (one) to %d (got %d)",
                       SB_LOOPS_MAX_INGESTERS, opts->ingesters);
    sb_loops *l = sb__calloc(1, sizeof *l);
    if (l == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    l->bus = bus;
    l->store = store;
    l->o = *opts;
    if (l->o.retention_ms == 0)
        l->o.retention_ms = SB_RETENTION_DEFAULT_MS;
    if (l->o.idle_ms == 0)
        l->o.idle_ms = 1000;
    if (l->o.ingesters == 0)
        l->o.ingesters = 1;
    if (l->o.housekeeping_ms == 0)
        l->o.housekeeping_ms = 3600 * 1000;
    if (l->o.first_sweep_ms == 0)
        l->o.first_sweep_ms = 60 * 1000;
    l->st.last_ok_age_ms = -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    while (l->started_ingest < l->o.ingesters &&
           pthread_create(&l->ingest[l->started_ingest], NULL, ingest_loop,
                          l) == 0)
        l->started_ingest++;
    l->started_housekeeping =
        l->started_ingest == l->o.ingesters &&
        pthread_create(&l->housekeeping, NULL, housekeeping_loop, l) == 0;
    l->started_scheduler =
        l->started_housekeeping &&
        pthread_create(&l->scheduler, NULL, scheduler_loop, l) == 0;
    if (!l->started_scheduler) {
        sb__loops_stop(l);
        return sb__err(err, SB_NOMEM, NULL, "cannot start a thread");
    }
    *out = l;
    return SB_OK;
}

void sb__loops_state(sb_loops *l, sb_loops_state *out)
{
    pthread_mutex_lock(&l->mu);
    *out = l->st;
    out->last_ok_age_ms =
        l->last_ok_us ? (sb__mono_us() - l->last_ok_us) / 1000 : -1;
    pthread_mutex_unlock(&l->mu);
}

size_t sb__loops_episodes(sb_loops *l, sb_loops_episode *out, size_t max)
{
    if (l == NULL)
        return 0;
    pthread_mutex_lock(&l->mu);
    size_t n = l->n_episodes < max ? l->n_episodes : max;
    for (size_t i = 0; i < n; i++)
        out[i] = l->episodes[(l->episode_next + SB_LOOPS_EPISODES - 1 - i) %
                             SB_LOOPS_EPISODES];
    pthread_mutex_unlock(&l->mu);
    return n;
}

void sb__loops_stop(sb_loops *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->started_ingest; i++)
        pthread_join(l->ingest[i], NULL);
    if (l->started_housekeeping)
        pthread_join(l->housekeeping, NULL);
    if (l->started_scheduler)
        pthread_join(l->scheduler, NULL);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    sb__free(l);
}
