/* deadline.c - the request-head deadline (see deadline.h): a table of
 * the open connections, each with the time it began waiting for a head,
 * and a thread that shuts down (shutdown(2), both ways) every socket
 * whose head is late. libmicrohttpd then reads the end of the stream and
 * closes the connection itself, in its own thread, so the socket is only
 * ever closed by its owner; the slot is freed under the same lock before
 * that close, so a descriptor number reused by a new connection is never
 * shut down by mistake. */
#include "server/deadline.h"

#include "core/core.h"

#include <pthread.h>
#include <sys/socket.h>

/* The thread looks at least this often, and at each earliest deadline. */
#define TICK_US 1000000

struct sb_deadline_slot {
    int fd;
    int used;
    int waiting;      /* for a head, since `since_us` */
    int64_t since_us; /* monotonic */
    sb_deadline_slot *next_free;
};

struct sb_deadline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int stopping;
    int64_t limit_us;
    unsigned n;
    sb_deadline_slot *slots;
    sb_deadline_slot *free_list;
};

/* Shut down the late ones; the earliest deadline still to come. Under
 * the lock. */
static int64_t expire(sb_deadline *d, int64_t now)
{
    int64_t next = now + TICK_US;
    for (unsigned i = 0; i < d->n; i++) {
        sb_deadline_slot *s = &d->slots[i];
        if (!s->used || !s->waiting)
            continue;
        int64_t due = s->since_us + d->limit_us;
        if (due <= now) {
            shutdown(s->fd, SHUT_RDWR);
            s->waiting = 0;
        } else if (due < next) {
            next = due;
        }
    }
    return next;
}

static void *run(void *arg)
{
    sb_deadline *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stopping) {
        int64_t next = expire(d, sb__mono_us());
        sb__cond_wait_until(&d->cv, &d->mu, next);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void deadline_free(sb_deadline *d)
{
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    sb__free(d->slots);
    sb__free(d);
}

int sb__deadline_start(unsigned slots, int64_t limit_ms, sb_deadline **out,
                       sb_error *err)
{
    sb_error_clear(err);
    *out = NULL;
    if (slots == 0)
        return sb__err(err, SB_INVALID, "slots",
                       "the head deadline needs at least one slot");
    if (limit_ms <= 0 || limit_ms > INT64_MAX / 1000)
        return sb__err(err, SB_INVALID, "limit_ms",
                       "the head deadline must be a positive time");
    sb_deadline *d = sb__calloc(1, sizeof *d);
    if (d == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    pthread_mutex_init(&d->mu, NULL);
    sb__cond_init_monotonic(&d->cv);
    d->limit_us = limit_ms * 1000;
    d->n = slots;
    d->slots = sb__calloc(slots, sizeof *d->slots);
    if (d->slots == NULL) {
        deadline_free(d);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (unsigned i = slots; i-- > 0;) {
        d->slots[i].next_free = d->free_list;
        d->free_list = &d->slots[i];
    }
    if (pthread_create(&d->thread, NULL, run, d) != 0) {
        deadline_free(d);
        return sb__err(err, SB_ERROR, NULL,
                       "could not start the head deadline's thread");
    }
    *out = d;
    return SB_OK;
}

void sb__deadline_stop(sb_deadline *d)
{
    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stopping = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    deadline_free(d);
}

/* Start or stop a slot's clock. */
static void set_waiting(sb_deadline *d, sb_deadline_slot *s, int waiting)
{
    if (d == NULL || s == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    s->waiting = waiting;
    s->since_us = sb__mono_us();
    pthread_mutex_unlock(&d->mu);
}

sb_deadline_slot *sb__deadline_open(sb_deadline *d, int fd)
{
    if (d == NULL)
        return NULL;
    pthread_mutex_lock(&d->mu);
    sb_deadline_slot *s = d->free_list;
    if (s != NULL) {
        d->free_list = s->next_free;
        s->next_free = NULL;
        s->fd = fd;
        s->used = 1;
        s->waiting = 1;
        s->since_us = sb__mono_us();
    }
    pthread_mutex_unlock(&d->mu);
    return s;
}

void sb__deadline_head(sb_deadline *d, sb_deadline_slot *slot)
{
    set_waiting(d, slot, 0);
}

void sb__deadline_wait(sb_deadline *d, sb_deadline_slot *slot)
{
    set_waiting(d, slot, 1);
}

void sb__deadline_close(sb_deadline *d, sb_deadline_slot *slot)
{
    if (d == NULL || slot == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    slot->used = 0;
    slot->waiting = 0;
    slot->fd = -1;
    slot->next_free = d->free_list;
    d->free_list = slot;
    pthread_mutex_unlock(&d->mu);
}
