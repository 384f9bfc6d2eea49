/* ingress.c - the response-ingress queue (C24): rows that external
 * producers publish to a queue (default "response") become replies. The
 * correlation id comes from the sb-correlation-id header, else from the
 * first configured JSON path that names one in the payload. A row over
 * the size budget or without a usable id is logged, counted and
 * dead-lettered with the reason: never redelivered forever, never lost. */
#include "channel/channel.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_BUDGET (1024 * 1024)
#define MAX_PATHS 16

static int ingest(sb_delivery *d, void *user)
{
    sb_channel *ch = user;
    sb_ingress *in = ch->ingress;
    const sb_msg *m = sb_delivery_msg(d);
    size_t len = 0;
    const void *data = sb_msg_payload(m, &len);
    sb_error err;
    sb_error_clear(&err);
    char reason[sizeof err.message];
    reason[0] = '\0';
    char *found = NULL;
    const char *corr = NULL;
    /* The budget first: nothing larger is parsed (C24). */
    if (len > in->budget) {
        snprintf(reason, sizeof reason,
                 "ingress: the reply is %zu bytes; the budget is %zu", len,
                 in->budget);
    } else if (sb__msg_parse_headers(m) != SB_OK) {
        /* Not dead-lettered as a row without an id: retried later. */
        return SB_NOMEM;
    } else {
        corr = sb_msg_correlation_id(m);
        if (corr == NULL || corr[0] == '\0') {
            int rc = in->n_paths > 0
                         ? sb__json_extract(
                               data, len, (const char *const *)in->paths,
                               in->n_paths, in->budget, &found, &err)
                         : SB_NOTFOUND;
            if (rc == SB_OK)
                corr = found;
            else if (rc == SB_NOMEM)
                return rc; /* retried, not dead-lettered as unusable */
            else if (rc == SB_NOTFOUND)
                snprintf(reason, sizeof reason,
                         "ingress: no sb-correlation-id header and no "
                         "configured JSON path names one");
            else
                snprintf(reason, sizeof reason, "ingress: %.480s", err.message);
        }
    }
    int rc = SB_OK;
    if (reason[0] == '\0') {
        const char *type = sb_msg_header(m, "sb-error-type");
        /* The message id is the reply id: a redelivered row is a no-op. */
        if (type != NULL && type[0] != '\0')
            rc = sb_respond_error(ch, corr, type,
                                  sb_msg_header(m, "sb-error-message"), NULL,
                                  sb_msg_id(m), &err);
        else
            rc = sb_respond(ch, corr, data, len, sb_msg_id(m), &err);
        if (rc == SB_INVALID)
            snprintf(reason, sizeof reason, "ingress: %.480s", err.message);
    }
    sb__free(found);
    pthread_mutex_lock(&ch->mu);
    if (reason[0] != '\0')
        in->dropped++;
    else if (rc == SB_OK)
        in->ingested++;
    pthread_mutex_unlock(&ch->mu);
    if (reason[0] != '\0') {
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel", "%s (message %s)",
                reason, sb_msg_id(m));
        sb_delivery_dead_letter(d, reason);
        return SB_OK;
    }
    return rc; /* a transient failure: the transport retries the row */
}

static int copy_paths(sb_ingress *in, const sb_ingress_options *o,
                      sb_error *err)
{
    if (o->n_json_paths > MAX_PATHS)
        return sb__err(err, SB_INVALID, "n_json_paths",
                       "at most %d JSON paths; got %zu", MAX_PATHS,
                       o->n_json_paths);
    if (o->n_json_paths > 0 && o->json_paths == NULL)
        return sb__err(err, SB_INVALID, "json_paths",
                       "json_paths is NULL but n_json_paths is %zu",
                       o->n_json_paths);
    for (size_t i = 0; i < o->n_json_paths; i++) {
        int rc = sb__json_path_check(o->json_paths[i], err);
        if (rc != SB_OK)
            return rc;
        in->paths[i] = sb__strdup(o->json_paths[i]);
        if (in->paths[i] == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        in->n_paths++;
    }
    return SB_OK;
}

static void ingress_free(sb_ingress *in)
{
    if (in == NULL)
        return;
    for (size_t i = 0; i < in->n_paths; i++)
        sb__free(in->paths[i]);
    sb__free(in->paths);
    sb__free(in);
}

int sb_channel_start_ingress(sb_channel *ch, const sb_ingress_options *o,
                             sb_error *err)
{
    sb_error_clear(err);
    if (ch == NULL)
        return sb__err(err, SB_INVALID, "channel", "channel must not be NULL");
    sb_ingress_options z;
    memset(&z, 0, sizeof z);
    if (o == NULL)
        o = &z;
    if (o->size != 0 && o->size < sizeof *o)
        return sb__err(err, SB_INVALID, "size",
                       "sb_ingress_options.size is smaller than any version");
    const char *queue = o->queue ? o->queue : "response";
    int rc = sb_validate_queue_name(queue, err);
    if (rc != SB_OK)
        return rc;
    if (o->max_bytes > ch->bus->max_payload)
        return sb__err(err, SB_INVALID, "max_bytes",
                       "max_bytes is %zu; the bus's max_payload_bytes is "
                       "%llu",
                       o->max_bytes, (unsigned long long)ch->bus->max_payload);
    if (o->concurrency < 0 || o->concurrency > 64)
        return sb__err(err, SB_INVALID, "concurrency",
                       "concurrency must be 0 (default 1) to 64");
    sb_ingress *in = sb__calloc(1, sizeof *in);
    if (in == NULL ||
        (in->paths = sb__calloc(MAX_PATHS, sizeof *in->paths)) == NULL) {
        sb__free(in);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    in->budget = o->max_bytes ? o->max_bytes : DEFAULT_BUDGET;
    if (in->budget > ch->bus->max_payload)
        in->budget = (size_t)ch->bus->max_payload;
    rc = copy_paths(in, o, err);
    pthread_mutex_lock(&ch->mu);
    if (rc == SB_OK && ch->ingress != NULL)
        rc = sb__err(err, SB_MISUSE, "queue",
                     "this channel already runs a response-ingress queue");
    if (rc == SB_OK)
        ch->ingress = in;
    pthread_mutex_unlock(&ch->mu);
    if (rc != SB_OK) {
        ingress_free(in);
        return rc;
    }
    sb_worker_options w;
    memset(&w, 0, sizeof w);
    w.size = sizeof w;
    w.queue = queue;
    w.handler = ingest;
    w.user = ch;
    w.concurrency = o->concurrency ? o->concurrency : 1;
    rc = sb__worker_start_internal(ch->bus, &w, &in->worker, err);
    if (rc != SB_OK) {
        pthread_mutex_lock(&ch->mu);
        ch->ingress = NULL;
        pthread_mutex_unlock(&ch->mu);
        ingress_free(in);
    }
    return rc;
}

int sb_channel_ingress_counts(sb_channel *ch, uint64_t *ingested,
                              uint64_t *dropped)
{
    if (ch == NULL)
        return SB_INVALID;
    pthread_mutex_lock(&ch->mu);
    int running = ch->ingress != NULL;
    if (ingested != NULL)
        *ingested = running ? ch->ingress->ingested : 0;
    if (dropped != NULL)
        *dropped = running ? ch->ingress->dropped : 0;
    pthread_mutex_unlock(&ch->mu);
    return running ? SB_OK : SB_EMPTY;
}

void sb__channel_ingress_close(sb_channel *ch)
{
    sb_ingress *in = ch->ingress;
    if (in == NULL)
        return;
    sb_worker_free(in->worker);
    pthread_mutex_lock(&ch->mu);
    ch->ingress = NULL;
    pthread_mutex_unlock(&ch->mu);
    ingress_free(in);
}
