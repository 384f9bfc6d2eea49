/* jobs.c - requests carried by transport jobs and the replies workers
 * send back (C23): the channel registers the bus's reply hook, so the
 * transport never includes the channel. */
#include "channel/channel.h"

#include <string.h>

typedef struct job_trigger {
    sb_channel *ch;
    const char *queue;
    const void *payload;
    size_t len;
    char id[37];   /* fixed, so a retried transaction writes it again */
    int immediate; /* wake this process's workers after the commit */
} job_trigger;

/* The job, in the registration's transaction: the request and its work
 * commit together (one fsync on SQLite), and a failed publish leaves
 * nothing registered. */
static int publish_job(sb_conn *c, const char *correlation_id, void *user,
                       sb_error *err)
{
    job_trigger *t = user;
    const char *kv[] = {"sb-correlation-id", correlation_id, "sb-reply-to",
                        t->ch->instance, NULL};
    char *headers = NULL;
    int rc = sb__headers_merge(NULL, kv, &headers, err);
    if (rc != SB_OK)
        return rc;
    sb_outgoing o = {t->id, t->payload, t->len, headers, 0};
    char ids[1][37];
    memcpy(ids[0], t->id, 37);
    t->immediate = 0;
    rc =
        sb__publish_on(t->ch->bus, c, t->queue, &o, 1, ids, &t->immediate, err);
    sb__free(headers);
    return rc;
}

int sb_request_job(sb_channel *ch, const char *queue, const void *payload,
                   size_t len, const sb_wait_options *opts, sb_waiter **out,
                   sb_error *err)
{
    sb_error_clear(err);
    if (ch == NULL || out == NULL)
        return sb__err(err, SB_INVALID, ch ? "out" : "channel",
                       "arguments must not be NULL");
    *out = NULL;
    int rc = sb_validate_queue_name(queue, err);
    if (rc != SB_OK)
        return rc;
    if (payload == NULL && len > 0)
        return sb__err(err, SB_INVALID, "payload",
                       "payload is NULL but len is %zu", len);
    if (len > ch->bus->max_payload)
        return sb__err(err, SB_INVALID, "payload",
                       "payload is %zu bytes; max_payload_bytes is %llu", len,
                       (unsigned long long)ch->bus->max_payload);
    job_trigger t = {ch, queue, payload ? payload : "", len, {0}, 0};
    sb__uuid7_at(t.id, sb__wall_us() / 1000);
    rc = sb__request_in_tx(ch, opts, publish_job, &t, out, err);
    if (rc == SB_OK && t.immediate)
        sb__bus_wake_local(ch->bus, queue);
    return rc;
}

/* The reply hook: the job's id is the final reply's id, so a job that
 * runs twice (at least once) replies once; progress replies get fresh
 * ids. */
static int reply_hook(void *user, const sb_msg *job, const void *data,
                      size_t len, const sb_failure *failure, int progress)
{
    sb_channel *ch = user;
    const char *corr = sb_msg_correlation_id(job);
    const char *reply_id = progress ? NULL : sb_msg_id(job);
    sb_error err;
    int rc;
    if (failure == NULL)
        rc = sb_respond(ch, corr, data, len, reply_id, &err);
    else
        rc = sb_respond_error(ch, corr, failure->exception_type,
                              failure->exception_message, failure->stacktrace,
                              reply_id, &err);
    if (rc != SB_OK)
        sb__log(&ch->bus->log, SB_LOG_WARN, "channel",
                "could not send the reply of job %s: %s", sb_msg_id(job),
                err.message);
    return rc;
}

void sb__channel_jobs_attach(sb_channel *ch)
{
    ch->bus->reply_hook_user = ch;
    ch->bus->reply_hook = reply_hook;
}

void sb__channel_jobs_detach(sb_channel *ch)
{
    if (ch->bus->reply_hook_user == ch) {
        ch->bus->reply_hook = NULL;
        ch->bus->reply_hook_user = NULL;
    }
}
