/* stats.c - the sampler behind `GET /api/stats` (see stats.h). One thread
 * reads every source without the lock, then writes one point into a ring
 * under it; readers render JSON from the ring under the same lock. */
#include "server/stats.h"

#include "server/isotime.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_INTERVAL_MS 10000
#define MIN_INTERVAL_MS 100
#define MAX_INTERVAL_MS 600000
#define RING_SPAN_MS 3600000LL

enum { V_READY, V_IN_FLIGHT, V_DEAD, V_PUBLISHED, V_ACKED, N_V };

typedef struct point {
    int64_t t_us; /* wall clock */
    int queues_ok, ingest_ok, failed_ok;
    uint64_t present; /* bit i: queue slot i has values in this point */
    int64_t v[SB_STATS_QUEUES][N_V];
    int64_t rows;
    int64_t unresolved, archived;
} point;

/* A queue's slot; free again once no point of the ring uses it. */
typedef struct qslot {
    char name[201];
    int used;
    uint64_t last_seq; /* the last sample that had it */
} qslot;

struct sb_stats {
    sb_bus *bus;
    sb_errors *store;
    sb_loops *loops;
    int interval_ms;
    sb_log_fn log;
    void *log_user;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    pthread_t thread;
    /* under mu */
    point *ring;
    size_t cap, head, n; /* head: where the next point goes */
    uint64_t seq;        /* points written so far */
    qslot slots[SB_STATS_QUEUES];
    sb_queue_stats **last_q; /* the newest sample's queues (all of them) */
    size_t last_nq;
    int64_t last_q_us; /* its wall-clock time; 0 until one is read */
    /* the sampler thread's own: every process's counts (sb_counts_list)
     * at the last sample and now */
    sb_queue_counts *prev, *cur;
    size_t n_prev, n_cur;
    int have_prev; /* prev holds a reading */
    int pair;      /* this sample has two readings to subtract */
    int64_t prev_rows;
    int down;
    /* under mu: the outages seen, a ring (outage_next: the next slot) */
    sb_stats_outage outages[SB_STATS_OUTAGES];
    size_t n_outages, outage_next;
};

static void say(sb_stats *s, int level, const char *msg, const char *detail)
{
    if (s->log == NULL)
        return;
    char line[768];
    snprintf(line, sizeof line, "%s%s", msg, detail ? detail : "");
    s->log(level, "stats", line, s->log_user);
}

/* The slot of `name` (under mu), taking a free one for a new queue: one
 * never used, or one whose last point has left the ring. -1: no room. */
static int slot_of(sb_stats *s, const char *name)
{
    int free_at = -1;
    for (int i = 0; i < SB_STATS_QUEUES; i++) {
        qslot *q = &s->slots[i];
        if (q->used && strcmp(q->name, name) == 0)
            return i;
        if (free_at < 0 && (!q->used || q->last_seq + s->cap <= s->seq))
            free_at = i;
    }
    if (free_at < 0)
        return -1;
    qslot *q = &s->slots[free_at];
    if (q->used) {
        /* Its points are gone from the ring, but clear the bit anyway so
         * a point can never show two queues' values under one name. */
        for (size_t i = 0; i < s->cap; i++)
            s->ring[i].present &= ~(1ull << free_at);
    }
    sb__strlcpy(q->name, name, sizeof q->name);
    q->used = 1;
    return free_at;
}

static const sb_queue_counts *counts_of(const sb_queue_counts *c, size_t n,
                                        const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].queue, name) == 0)
            return &c[i];
    return NULL;
}

/* Every process's published / acked of `name` since the last sample (0
 * without two readings; a row pruned and written again counts from 0). */
static void deltas(const sb_stats *s, const char *name, int64_t *pub,
                   int64_t *ack)
{
    *pub = *ack = 0;
    if (!s->pair)
        return;
    const sb_queue_counts *now = counts_of(s->cur, s->n_cur, name);
    const sb_queue_counts *before = counts_of(s->prev, s->n_prev, name);
    if (now == NULL)
        return;
    *pub = now->published - (before ? before->published : 0);
    *ack = now->acked - (before ? before->acked : 0);
    if (*pub < 0 || *ack < 0) { /* the row was pruned and written again */
        *pub = now->published;
        *ack = now->acked;
    }
}

/* Fill the queues of point `p` (under mu). */
static void put_queues(sb_stats *s, point *p, sb_queue_stats *const *q,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int k = slot_of(s, q[i]->queue);
        if (k < 0)
            continue;
        p->present |= 1ull << k;
        p->v[k][V_READY] = q[i]->ready;
        p->v[k][V_IN_FLIGHT] = q[i]->in_flight;
        p->v[k][V_DEAD] = q[i]->dead_lettered;
        deltas(s, q[i]->queue, &p->v[k][V_PUBLISHED], &p->v[k][V_ACKED]);
        s->slots[k].last_seq = s->seq;
    }
    /* A queue drained empty has no rows, so the list leaves it out; its
     * throughput still counts (its depth is then 0). */
    for (size_t j = 0; j < s->n_cur; j++) {
        const char *name = s->cur[j].queue;
        if (name[0] == '\0') /* past a process's first 64 queues */
            continue;
        int64_t pub, ack;
        deltas(s, name, &pub, &ack);
        if (pub == 0 && ack == 0)
            continue;
        int listed = 0;
        for (size_t i = 0; !listed && i < n; i++)
            listed = strcmp(q[i]->queue, name) == 0;
        int k = listed ? -1 : slot_of(s, name);
        if (k < 0)
            continue;
        p->present |= 1ull << k;
        memset(p->v[k], 0, sizeof p->v[k]);
        p->v[k][V_PUBLISHED] = pub;
        p->v[k][V_ACKED] = ack;
        s->slots[k].last_seq = s->seq;
    }
}

static void take_sample(sb_stats *s)
{
    int64_t t = sb__wall_us();
    sb_error qerr, ferr, cerr;
    sb_free(s->cur);
    int have_counts =
        sb_counts_list(s->bus, &s->cur, &s->n_cur, &cerr) == SB_OK;
    if (!have_counts) {
        s->cur = NULL;
        s->n_cur = 0;
    }
    s->pair = have_counts && s->have_prev;
    sb_queue_stats **q = NULL;
    size_t nq = 0;
    int qrc = sb_queue_list(s->bus, &q, &nq, &qerr);
    int64_t by_status[4] = {0, 0, 0, 0};
    int frc = s->store != NULL
                  ? sb_errors_status_counts(s->store, by_status, &ferr)
                  : SB_OK;
    int64_t unresolved = by_status[SB_FAILED_UNRESOLVED],
            archived = by_status[SB_FAILED_ARCHIVED];
    sb_loops_state ls;
    memset(&ls, 0, sizeof ls);
    if (s->loops != NULL)
        sb__loops_state(s->loops, &ls);

    pthread_mutex_lock(&s->mu);
    point *p = &s->ring[s->head];
    memset(p, 0, sizeof *p);
    p->t_us = t;
    if (qrc == SB_OK) {
        p->queues_ok = 1;
        put_queues(s, p, q, nq);
    }
    if (qrc == SB_OK) { /* kept for /api/queues; the old one goes */
        sb_queue_stats **old = s->last_q;
        s->last_q = q;
        s->last_nq = nq;
        s->last_q_us = t;
        q = old;
    }
    if (s->loops != NULL) {
        p->ingest_ok = 1;
        p->rows = ls.rows - s->prev_rows;
    }
    if (s->store != NULL && frc == SB_OK) {
        p->failed_ok = 1;
        p->unresolved = unresolved;
        p->archived = archived;
    }
    s->head = (s->head + 1) % s->cap;
    if (s->n < s->cap)
        s->n++;
    s->seq++;
    pthread_mutex_unlock(&s->mu);

    sb_free(q);
    if (have_counts) {
        sb_free(s->prev);
        s->prev = s->cur;
        s->n_prev = s->n_cur;
        s->cur = NULL;
        s->n_cur = 0;
    }
    s->have_prev = have_counts;
    s->prev_rows = ls.rows;
    int failed = qrc != SB_OK || frc != SB_OK;
    if (failed && !s->down)
        say(s, SB_LOG_WARN,
            "a sample could not read the database; its points are "
            "skipped until it answers: ",
            qrc != SB_OK ? qerr.message : ferr.message);
    else if (!failed && s->down)
        say(s, SB_LOG_INFO, "the database answers again", NULL);
    if (failed != s->down) {
        pthread_mutex_lock(&s->mu);
        if (failed) {
            s->outages[s->outage_next] =
                (sb_stats_outage){.start_us = sb__wall_us(), .end_us = 0};
            s->outage_next = (s->outage_next + 1) % SB_STATS_OUTAGES;
            if (s->n_outages < SB_STATS_OUTAGES)
                s->n_outages++;
        } else if (s->n_outages > 0) {
            size_t last =
                (s->outage_next + SB_STATS_OUTAGES - 1) % SB_STATS_OUTAGES;
            s->outages[last].end_us = sb__wall_us();
        }
        pthread_mutex_unlock(&s->mu);
    }
    s->down = failed;
}

size_t sb__stats_outages(sb_stats *s, sb_stats_outage *out, size_t max)
{
    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_outages < max ? s->n_outages : max;
    for (size_t i = 0; i < n; i++)
        out[i] = s->outages[(s->outage_next + SB_STATS_OUTAGES - 1 - i) %
                            SB_STATS_OUTAGES];
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void *run(void *arg)
{
    sb_stats *s = arg;
    int64_t every = (int64_t)s->interval_ms * 1000;
    int64_t next = sb__mono_us();
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->stopping && sb__mono_us() < next)
            sb__cond_wait_until(&s->cv, &s->mu, next);
        int stop = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        take_sample(s);
        next += every;
        int64_t now = sb__mono_us();
        if (next < now) /* a slow sample: skip the missed ticks */
            next = now + every;
    }
    return NULL;
}

static void stats_free(sb_stats *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    sb__free(s->ring);
    sb_free(s->last_q);
    sb_free(s->prev);
    sb_free(s->cur);
    sb__free(s);
}

int sb__stats_start(sb_bus *bus, sb_errors *store, sb_loops *loops,
                    const sb_stats_options *opts, sb_stats **out, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    int interval =
        opts && opts->interval_ms ? opts->interval_ms : DEFAULT_INTERVAL_MS;
    if (interval < MIN_INTERVAL_MS || interval > MAX_INTERVAL_MS)
        return sb__err(err, SB_INVALID, "interval_ms",
                       "the stats interval must be %d ms to %d ms (got %d)",
                       MIN_INTERVAL_MS, MAX_INTERVAL_MS, interval);
    sb_stats *s = sb__calloc(1, sizeof *s);
    if (s == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    s->bus = bus;
    s->store = store;
    s->loops = loops;
    s->interval_ms = interval;
    s->log = opts ? opts->log : NULL;
    s->log_user = opts ? opts->log_user : NULL;
    s->cap = (size_t)(RING_SPAN_MS / interval);
    if (s->cap > SB_STATS_MAX_POINTS)
        s->cap = SB_STATS_MAX_POINTS;
    if (s->cap < 1)
        s->cap = 1;
    pthread_mutex_init(&s->mu, NULL);
    sb__cond_init_monotonic(&s->cv);
    s->ring = sb__calloc(s->cap, sizeof *s->ring);
    if (s->ring == NULL) {
        stats_free(s);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    /* The first point's counts are those since the sampler started. */
    s->have_prev = sb_counts_list(bus, &s->prev, &s->n_prev, NULL) == SB_OK;
    if (loops != NULL) {
        sb_loops_state ls;
        sb__loops_state(loops, &ls);
        s->prev_rows = ls.rows;
    }
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        stats_free(s);
        return sb__err(err, SB_ERROR, NULL,
                       "could not start the stats "
                       "thread");
    }
    *out = s;
    return SB_OK;
}

void sb__stats_stop(sb_stats *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    stats_free(s);
}

/* ---- JSON ---- */

static void put_time(sb_buf *b, const char *key, int64_t us)
{
    char iso[SB_ISO_TIME_LEN];
    sb__iso_time(us, iso);
    sb__buf_printf(b, "\"%s\":\"%s\"", key, iso);
}

int sb__stats_json(sb_stats *s, int minutes, sb_buf *out, sb_error *err)
{
    sb_error_clear(err);
    if (s == NULL || out == NULL)
        return sb__err(err, SB_INVALID, s ? "out" : "stats",
                       "arguments must not be NULL");
    if (minutes < 1 || minutes > 60)
        return sb__err(err, SB_INVALID, "minutes",
                       "minutes must be 1 to 60 (got %d)", minutes);
    pthread_mutex_lock(&s->mu);
    int64_t now = sb__wall_us();
    int64_t from = now - (int64_t)minutes * 60 * 1000000;
    size_t first = (s->head + s->cap - s->n) % s->cap;
    sb__buf_printf(out, "{\"interval_s\":%d", s->interval_ms / 1000);
    if (s->interval_ms % 1000)
        sb__buf_printf(out, ".%03d", s->interval_ms % 1000);
    sb__buf_puts(out, ",");
    put_time(out, "now", now);

    /* The slots by name: an insertion sort of at most 64. */
    int order[SB_STATS_QUEUES] = {0}, n_order = 0;
    for (int k = 0; k < SB_STATS_QUEUES; k++) {
        if (!s->slots[k].used)
            continue;
        int j = n_order++;
        while (j > 0 &&
               strcmp(s->slots[order[j - 1]].name, s->slots[k].name) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }

    sb__buf_puts(out, ",\"queues\":[");
    int q_written = 0;
    for (int j = 0; j < n_order; j++) {
        int k = order[j];
        int pts = 0;
        for (size_t i = 0; i < s->n; i++) {
            const point *p = &s->ring[(first + i) % s->cap];
            if (p->t_us < from || !(p->present & (1ull << k)))
                continue;
            if (pts++ == 0) {
                sb__buf_puts(out, q_written++ ? ",{\"name\":" : "{\"name\":");
                sb__buf_json_str(out, s->slots[k].name);
                sb__buf_puts(out, ",\"points\":[");
            } else {
                sb__buf_puts(out, ",");
            }
            sb__buf_puts(out, "{");
            put_time(out, "t", p->t_us);
            sb__buf_printf(
                out,
                ",\"ready\":%lld,\"in_flight\":%lld,"
                "\"dead_lettered\":%lld,\"published\":%lld,"
                "\"acked\":%lld}",
                (long long)p->v[k][V_READY], (long long)p->v[k][V_IN_FLIGHT],
                (long long)p->v[k][V_DEAD], (long long)p->v[k][V_PUBLISHED],
                (long long)p->v[k][V_ACKED]);
        }
        if (pts > 0)
            sb__buf_puts(out, "]}");
    }
    sb__buf_puts(out, "],\"ingestion\":[");
    int w = 0;
    for (size_t i = 0; i < s->n; i++) {
        const point *p = &s->ring[(first + i) % s->cap];
        if (p->t_us < from || !p->ingest_ok)
            continue;
        sb__buf_puts(out, w++ ? ",{" : "{");
        put_time(out, "t", p->t_us);
        sb__buf_printf(out, ",\"rows\":%lld}", (long long)p->rows);
    }
    sb__buf_puts(out, "],\"failed\":[");
    w = 0;
    for (size_t i = 0; i < s->n; i++) {
        const point *p = &s->ring[(first + i) % s->cap];
        if (p->t_us < from || !p->failed_ok)
            continue;
        sb__buf_puts(out, w++ ? ",{" : "{");
        put_time(out, "t", p->t_us);
        sb__buf_printf(out, ",\"unresolved\":%lld,\"archived\":%lld}",
                       (long long)p->unresolved, (long long)p->archived);
    }
    sb__buf_puts(out, "]}");
    pthread_mutex_unlock(&s->mu);
    if (out->failed)
        return sb__err(err, out->failed, NULL,
                       out->failed == SB_TOOBIG ? "the stats JSON is over "
                                                  "the buffer's cap"
                                                : "out of memory");
    return SB_OK;
}

int sb__stats_queues(sb_stats *s, int64_t max_age_ms, sb_queue_stats ***out,
                     size_t *n_out, int64_t *at_us)
{
    *out = NULL;
    *n_out = 0;
    if (s == NULL)
        return SB_EMPTY;
    int rc = SB_OK;
    pthread_mutex_lock(&s->mu);
    if (s->last_q_us == 0 || sb__wall_us() - s->last_q_us > max_age_ms * 1000) {
        rc = SB_EMPTY;
    } else if (s->last_nq > 0) {
        SB__LIST_NEW(*out, s->last_nq);
        if (*out == NULL)
            rc = SB_NOMEM;
        for (size_t i = 0; *out != NULL && i < s->last_nq; i++)
            *(*out)[i] = *s->last_q[i];
    }
    if (rc == SB_OK) {
        *n_out = s->last_nq;
        if (at_us != NULL)
            *at_us = s->last_q_us;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
