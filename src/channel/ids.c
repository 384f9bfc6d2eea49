/* ids.c - the channel's table of live correlation ids: a chained hash map
 * from the id's bytes to its waiters, cursor and delivery queue, so that
 * finding the waiters of a reply costs the same with ten or ten thousand
 * waiters (G8). Every function runs with the channel lock held. */
#include "channel/channel.h"

#include <string.h>

#define TOLERANCE_US 1000000 /* C13: created_at >= registration - 1 s */

static uint64_t hash_of(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

sb_live_id *sb__ids_find(sb_channel *ch, const char *corr)
{
    if (ch->n_buckets == 0)
        return NULL;
    uint64_t h = hash_of(corr);
    for (sb_live_id *id = ch->buckets[h & (ch->n_buckets - 1)]; id;
         id = id->hnext)
        if (id->hash == h && strcmp(id->corr, corr) == 0)
            return id;
    return NULL;
}

static int grow(sb_channel *ch)
{
    size_t n = ch->n_buckets ? ch->n_buckets * 2 : 64;
    sb_live_id **b = sb__calloc(n, sizeof *b);
    if (b == NULL)
        return SB_NOMEM;
    for (size_t i = 0; i < ch->n_buckets; i++) {
        sb_live_id *id = ch->buckets[i];
        while (id != NULL) {
            sb_live_id *next = id->hnext;
            id->hnext = b[id->hash & (n - 1)];
            b[id->hash & (n - 1)] = id;
            id = next;
        }
    }
    sb__free(ch->buckets);
    ch->buckets = b;
    ch->n_buckets = n;
    return SB_OK;
}

static sb_live_id *create(sb_channel *ch, const char *corr)
{
    if (ch->n_ids >= ch->n_buckets && grow(ch) != SB_OK)
        return NULL;
    sb_live_id *id = sb__calloc(1, sizeof *id);
    if (id == NULL || (id->corr = sb__strdup(corr)) == NULL) {
        sb__free(id);
        return NULL;
    }
    id->hash = hash_of(corr);
    id->from_us = INT64_MAX;
    size_t b = id->hash & (ch->n_buckets - 1);
    id->hnext = ch->buckets[b];
    ch->buckets[b] = id;
    ch->n_ids++;
    return id;
}

int sb__ids_add_waiter(sb_channel *ch, sb_waiter *w)
{
    sb_live_id *id = sb__ids_find(ch, w->corr);
    if (id == NULL && (id = create(ch, w->corr)) == NULL)
        return SB_NOMEM;
    w->id = id;
    w->id_next = id->waiters;
    id->waiters = w;
    ch->n_waiters++;
    int64_t from = w->started_at_us - TOLERANCE_US;
    if (from < id->from_us)
        id->from_us = from;
    /* A reply stored before this waiter registered is found at once. */
    id->reread = 1;
    sb__scan_request(ch, id);
    return SB_OK;
}

static void free_id(sb_channel *ch, sb_live_id *id)
{
    sb_live_id **pp = &ch->buckets[id->hash & (ch->n_buckets - 1)];
    while (*pp != id)
        pp = &(*pp)->hnext;
    *pp = id->hnext;
    ch->n_ids--;
    while (id->q_head != NULL) {
        sb_reply *r = id->q_head;
        id->q_head = r->next;
        sb_reply_free(r);
    }
    sb__free(id->corr);
    sb__free(id);
}

void sb__ids_release(sb_channel *ch, sb_live_id *id)
{
    if (id->waiters == NULL && id->pins == 0 && !id->running && !id->ready &&
        !id->scan_queued)
        free_id(ch, id);
}

void sb__ids_remove_waiter(sb_channel *ch, sb_waiter *w)
{
    sb_live_id *id = w->id;
    if (id == NULL)
        return;
    for (sb_waiter **pp = &id->waiters; *pp; pp = &(*pp)->id_next) {
        if (*pp == w) {
            *pp = w->id_next;
            break;
        }
    }
    w->id = NULL;
    w->id_next = NULL;
    ch->n_waiters--;
    /* The earliest watermark may have belonged to this waiter. */
    id->from_us = INT64_MAX;
    for (sb_waiter *o = id->waiters; o; o = o->id_next)
        if (o->started_at_us - TOLERANCE_US < id->from_us)
            id->from_us = o->started_at_us - TOLERANCE_US;
    if (id->waiters == NULL) {
        /* Nobody left to deliver to: drop what was queued. */
        while (id->q_head != NULL) {
            sb_reply *r = id->q_head;
            id->q_head = r->next;
            sb_reply_free(r);
        }
        id->q_tail = NULL;
        id->q_len = 0;
    }
    sb__ids_release(ch, id);
}

int sb__ids_pin_all(sb_channel *ch, sb_live_id ***out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (ch->n_ids == 0)
        return SB_OK;
    sb_live_id **ids = sb__calloc(ch->n_ids, sizeof *ids);
    if (ids == NULL)
        return SB_NOMEM;
    size_t n = 0;
    for (size_t b = 0; b < ch->n_buckets; b++)
        for (sb_live_id *id = ch->buckets[b]; id; id = id->hnext) {
            id->pins++;
            ids[n++] = id;
        }
    *out = ids;
    *n_out = n;
    return SB_OK;
}

void sb__ids_unpin_all(sb_channel *ch, sb_live_id **ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ids[i]->pins--;
        sb__ids_release(ch, ids[i]);
    }
    sb__free(ids);
}

int sb__ids_awaited(sb_channel *ch, const char *corr, int64_t created_us)
{
    sb_live_id *id = sb__ids_find(ch, corr);
    for (sb_waiter *w = id ? id->waiters : NULL; w; w = w->id_next)
        if (!w->ended && created_us >= w->started_at_us - TOLERANCE_US)
            return 1;
    return 0;
}

int sb__ids_backlog_json(sb_channel *ch, sb_buf *b)
{
    int first = 1;
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < ch->n_buckets; i++)
        for (sb_live_id *id = ch->buckets[i]; id; id = id->hnext) {
            if (!id->running && id->q_len == 0 && !id->gap)
                continue;
            const sb_waiter *w = id->waiters;
            while (w != NULL && w->ended)
                w = w->id_next;
            if (w == NULL)
                continue;
            if (!first)
                sb__buf_puts(b, ",");
            sb__buf_json_str(b, id->corr);
            first = 0;
        }
    sb__buf_puts(b, "]");
    return b->failed;
}

void sb__ids_free_all(sb_channel *ch)
{
    for (size_t b = 0; b < ch->n_buckets; b++)
        while (ch->buckets[b] != NULL)
            free_id(ch, ch->buckets[b]);
    sb__free(ch->buckets);
    ch->buckets = NULL;
    ch->n_buckets = 0;
}

/* Queue a targeted scan of `id` (C14: coalesced, bounded; overflow asks
 * for a full sweep) and wake the loop; the channel lock is held. */
void sb__scan_request(sb_channel *ch, sb_live_id *id)
{
    if (id->scan_queued)
        return; /* coalesced */
    if (ch->n_scan >= SB_SCAN_QUEUE_MAX) {
        ch->full_requested = 1;
    } else {
        id->scan_queued = 1;
        id->scan_next = NULL;
        if (ch->scan_tail)
            ch->scan_tail->scan_next = id;
        else
            ch->scan_head = id;
        ch->scan_tail = id;
        ch->n_scan++;
    }
    pthread_cond_broadcast(&ch->loop_cv);
}
