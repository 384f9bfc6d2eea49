/* executor.c - delivery serialised per correlation id on a bounded queue
 * (C16): a few threads take ids from a ready FIFO, one reply at a time, so
 * one slow `until` predicate holds one id and one thread, never the
 * others. Admission never blocks: a full queue leaves the row unclaimed in
 * the database and only that id is rescanned once its queue drains. */
#include "channel/channel.h"

#include <string.h>

/* Already handled by every waiter of the id, or already queued. */
static int known(const sb_live_id *id, const sb_reply *r)
{
    for (const sb_reply *q = id->q_head; q; q = q->next)
        if (strcmp(q->id, r->id) == 0)
            return 1;
    for (const sb_waiter *w = id->waiters; w; w = w->id_next) {
        size_t i = 0;
        while (i < w->n_seen && memcmp(w->seen[i], r->id, 37) != 0)
            i++;
        if (i == w->n_seen)
            return 0;
    }
    return 1;
}

static void make_ready(sb_channel *ch, sb_live_id *id)
{
    if (id->ready || id->running)
        return;
    id->ready = 1;
    id->ready_next = NULL;
    if (ch->ready_tail)
        ch->ready_tail->ready_next = id;
    else
        ch->ready_head = id;
    ch->ready_tail = id;
    pthread_cond_signal(&ch->exec_cv);
}

int sb__exec_admit(sb_channel *ch, sb_live_id *id, const sb_reply *r,
                   int from_scan)
{
    /* Older than every waiter's watermark (a batched sweep reads from the
     * earliest cursor of many ids), or already handled. */
    if (id->waiters == NULL || r->created_at_us < id->from_us || known(id, r))
        return 1;
    /* Once a row was refused, replies are admitted only by a scan reading
     * in order from the cursor, so the predicate sees them in order (C2). */
    if ((id->gap && !from_scan) || id->pass_refused)
        return 0;
    sb_reply *copy = id->q_len < SB_EXEC_QUEUE_MAX ? sb__reply_copy(r) : NULL;
    if (copy == NULL) {
        /* Full (or out of memory): rescan when the queue drains, or at
         * the next sweep if nothing is queued. */
        id->gap = 1;
        id->pass_refused = from_scan;
        return 0;
    }
    if (id->q_tail)
        id->q_tail->next = copy;
    else
        id->q_head = copy;
    id->q_tail = copy;
    id->q_len++;
    make_ready(ch, id);
    return 1;
}

static void *exec_main(void *arg)
{
    sb_channel *ch = arg;
    pthread_mutex_lock(&ch->mu);
    for (;;) {
        while (!ch->exec_stopping && ch->ready_head == NULL)
            pthread_cond_wait(&ch->exec_cv, &ch->mu);
        if (ch->exec_stopping)
            break;
        sb_live_id *id = ch->ready_head;
        ch->ready_head = id->ready_next;
        if (ch->ready_head == NULL)
            ch->ready_tail = NULL;
        id->ready = 0;
        sb_reply *r = id->q_head;
        if (r == NULL) {
            sb__ids_release(ch, id);
            continue;
        }
        id->q_head = r->next;
        if (id->q_head == NULL)
            id->q_tail = NULL;
        id->q_len--;
        r->next = NULL;
        id->running = 1;
        pthread_mutex_unlock(&ch->mu);
        sb__channel_deliver(ch, id, r);
        sb_reply_free(r);
        pthread_mutex_lock(&ch->mu);
        id->running = 0;
        if (id->q_head != NULL) {
            make_ready(ch, id); /* to the back: ids take turns */
        } else if (id->gap) {
            sb__scan_request(ch, id);
        }
        sb__ids_release(ch, id);
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}

int sb__exec_start(sb_channel *ch, sb_error *err)
{
    for (int i = 0; i < SB_DELIVERY_THREADS; i++) {
        if (pthread_create(&ch->exec[i], NULL, exec_main, ch) != 0) {
            sb__exec_stop(ch);
            return sb__err(err, SB_NOMEM, NULL,
                           "could not start the channel's delivery threads");
        }
        ch->n_exec++;
    }
    return SB_OK;
}

void sb__exec_stop(sb_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->exec_stopping = 1;
    pthread_cond_broadcast(&ch->exec_cv);
    pthread_mutex_unlock(&ch->mu);
    for (int i = 0; i < ch->n_exec; i++)
        pthread_join(ch->exec[i], NULL);
    ch->n_exec = 0;
}
