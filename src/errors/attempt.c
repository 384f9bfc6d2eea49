/* attempt.c - one dead-letter row read as a failed processing attempt.
 * sqlbus's own failure headers (sb-*, written by the transport when it
 * dead-letters) and NServiceBus's fault headers map onto the same fields
 * (E2); the headers stay the source of truth and these fields are only
 * what the store indexes (E5). The unique id follows ServiceControl (E6). */
#include "errors/errors.h"
#include "errors/ids.h"

#include <string.h>

/* The first header present among `keys` (NULL-terminated), or NULL. */
static const char *first(const sb_msg *row, const char *const *keys)
{
    for (; *keys; keys++) {
        const char *v = sb_msg_header(row, *keys);
        if (v != NULL && v[0] != '\0')
            return v;
    }
    return NULL;
}

static int dup(const char *v, char **out)
{
    *out = NULL;
    if (v == NULL)
        return SB_OK;
    *out = sb__strdup(v);
    return *out ? SB_OK : SB_NOMEM;
}

/* The part of `v` before `stop` (whole if absent), copied. */
static int dup_until(const char *v, char stop, char **out)
{
    *out = NULL;
    if (v == NULL)
        return SB_OK;
    const char *end = strchr(v, stop);
    size_t n = end ? (size_t)(end - v) : strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n == 0)
        return SB_OK;
    *out = sb__malloc(n + 1);
    if (*out == NULL)
        return SB_NOMEM;
    memcpy(*out, v, n);
    (*out)[n] = '\0';
    return SB_OK;
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

/* "2026-12-01T05:10:00.123456Z" (sqlbus) or "2026-12-01 05:10:00:123456 Z"
 * (NServiceBus), with an optional fraction of up to 7 digits and a zone
 * of Z or +hh:mm / -hh:mm. Returns 0 and microseconds, or -1. */
static int parse_time(const char *s, int64_t *out_us)
{
    int y, mo, d, h, mi, se;
    const char *p = s;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
        digits(&p, 2, &d) || (*p != 'T' && *p != ' '))
        return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
        digits(&p, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    int64_t us = 0;
    if (*p == '.' || *p == ':') {
        p++;
        int64_t scale = 100000;
        int n = 0;
        for (; *p >= '0' && *p <= '9'; p++, n++)
            if (scale > 0) {
                us += (*p - '0') * scale;
                scale /= 10;
            }
        if (n == 0)
            return -1;
    }
    while (*p == ' ')
        p++;
    int64_t offset_s = 0;
    if (*p == '+' || *p == '-') {
        int oh, om, sign = *p == '-' ? -1 : 1;
        p++;
        if (digits(&p, 2, &oh))
            return -1;
        if (*p == ':')
            p++;
        if (digits(&p, 2, &om))
            return -1;
        offset_s = sign * (oh * 3600 + om * 60);
    } else if (*p == 'Z') {
        p++;
    }
    if (*p != '\0')
        return -1;
    int64_t secs = sb__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
                   se - offset_s;
    *out_us = secs * 1000000 + us;
    return 0;
}

static const char *const k_message_id[] = {"sb-message-id",
                                           "NServiceBus.MessageId", NULL};
static const char *const k_failed_queue[] = {"sb-failed-queue",
                                             "NServiceBus.FailedQ", NULL};
static const char *const k_endpoint[] = {
    "sb-processing-endpoint", "NServiceBus.ProcessingEndpoint", NULL};
static const char *const k_time[] = {"sb-time-of-failure",
                                     "NServiceBus.TimeOfFailure", NULL};
static const char *const k_sent[] = {"sb-time-sent", "NServiceBus.TimeSent",
                                     NULL};
static const char *const k_type[] = {
    "sb-exception-type", "NServiceBus.ExceptionInfo.ExceptionType", NULL};
static const char *const k_message[] = {
    "sb-exception-message", "NServiceBus.ExceptionInfo.Message", NULL};
static const char *const k_trace[] = {
    "sb-exception-stacktrace", "NServiceBus.ExceptionInfo.StackTrace", NULL};
static const char *const k_msg_type[] = {
    "sb-message-type", "NServiceBus.EnclosedMessageTypes", NULL};
static const char *const k_retry_of[] = {
    "sb-retry-of", "ServiceControl.Retry.UniqueMessageId", NULL};
static const char *const k_host[] = {"sb-host", "NServiceBus.HostDisplayName",
                                     "NServiceBus.ProcessingMachine", NULL};
static const char *const k_host_id[] = {"sb-host-id", "NServiceBus.HostId",
                                        NULL};
static const char *const k_instance[] = {"sb-instance-id",
                                         "NServiceBus.Metric.InstanceId", NULL};
static const char *const k_conversation[] = {
    "sb-conversation-id", "NServiceBus.ConversationId", NULL};
static const char *const k_content_type[] = {
    "sb-content-type", "NServiceBus.ContentType", "content-type", NULL};
static const char *const k_reply_to[] = {"NServiceBus.ReplyToAddress", NULL};

static int reject(sb_error *err, const char *why)
{
    return sb__err(err, SB_INVALID, "headers", "%s", why);
}

int sb__attempt_from_row(const sb_msg *row, sb_attempt *a, sb_error *err)
{
    memset(a, 0, sizeof *a);
    a->row = row;
    /* Parsed first: headers lost to a failed allocation would read as
     * absent, and the row be stored under another unique id or kept as a
     * failed import. */
    if (sb__msg_parse_headers(row) != SB_OK)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    const char *mid = first(row, k_message_id);
    const char *queue = first(row, k_failed_queue);
    const char *endpoint = first(row, k_endpoint);
    const char *retry_of = first(row, k_retry_of);
    /* A retry acknowledgement: sqlbus's (written with the ack, E16) or
     * ServiceControl's. */
    const char *ok = sb_msg_header(row, "sb-retry-confirmed");
    if (ok == NULL)
        ok = sb_msg_header(row, "ServiceControl.Retry.Successful");
    a->retry_confirmed = ok != NULL && retry_of != NULL;
    int rc = dup(mid ? mid : sb_msg_id(row), &a->message_id);
    if (rc == SB_OK)
        rc = dup(queue, &a->failed_queue);
    /* E6: the endpoint, else the failed queue (or reply-to) before '@'. */
    if (rc == SB_OK && endpoint != NULL)
        rc = dup(endpoint, &a->processing_endpoint);
    else if (rc == SB_OK)
        rc = dup_until(queue ? queue : first(row, k_reply_to), '@',
                       &a->processing_endpoint);
    if (rc == SB_OK && retry_of != NULL) {
        rc = dup(retry_of, &a->unique_id);
    } else if (rc == SB_OK && a->processing_endpoint != NULL) {
        char id[37];
        sb__deterministic_guid_str(a->message_id, a->processing_endpoint, id);
        rc = dup(id, &a->unique_id);
    }
    if (rc != SB_OK) {
        sb__attempt_clear(a);
        return sb__err(err, rc, NULL, "out of memory");
    }
    if (a->retry_confirmed)
        return SB_OK;
    if (a->failed_queue == NULL || a->unique_id == NULL) {
        sb__attempt_clear(a);
        return reject(err, a->unique_id == NULL
                               ? "no failed-queue header and no processing "
                                 "endpoint: cannot derive the message's "
                                 "unique id"
                               : "no failed-queue header "
                                 "(sb-failed-queue or NServiceBus.FailedQ): "
                                 "nothing to retry to");
    }
    const char *when = first(row, k_time);
    if (when == NULL) {
        a->time_of_failure_us = sb_msg_created_at_us(row);
    } else if (parse_time(when, &a->time_of_failure_us) != 0) {
        sb__attempt_clear(a);
        return sb__err(err, SB_INVALID, "headers",
                       "time of failure \"%.64s\" is not a date and time",
                       when);
    }
    const char *sent = first(row, k_sent);
    if (sent != NULL && parse_time(sent, &a->time_sent_us) != 0)
        a->time_sent_us = 0; /* informative only: never a reason to refuse */
    const char *sys = sb_msg_header(row, "NServiceBus.IsSystemMessage");
    a->is_system = sys != NULL && strcmp(sys, "true") == 0;
    /* The first enclosed type, without its assembly qualification. */
    const char *types = first(row, k_msg_type);
    char *first_type = NULL;
    rc = dup_until(types, ';', &first_type);
    if (rc == SB_OK)
        rc = dup_until(first_type, ',', &a->message_type);
    sb__free(first_type);
    if (rc == SB_OK)
        rc = dup(first(row, k_type), &a->exception_type);
    if (rc == SB_OK)
        rc = dup(first(row, k_message), &a->exception_message);
    if (rc == SB_OK)
        rc = dup(first(row, k_trace), &a->stack_trace);
    if (rc == SB_OK)
        rc = dup(first(row, k_host), &a->host);
    if (rc == SB_OK)
        rc = dup(first(row, k_host_id), &a->host_id);
    if (rc == SB_OK)
        rc = dup(first(row, k_instance), &a->instance_id);
    if (rc == SB_OK)
        rc = dup(first(row, k_conversation), &a->conversation_id);
    if (rc == SB_OK)
        rc = dup(first(row, k_content_type), &a->content_type);
    if (rc != SB_OK) {
        sb__attempt_clear(a);
        return sb__err(err, rc, NULL, "out of memory");
    }
    return SB_OK;
}

void sb__attempt_clear(sb_attempt *a)
{
    char *const fields[] = {
        a->unique_id,         a->message_id,          a->message_type,
        a->failed_queue,      a->processing_endpoint, a->host,
        a->host_id,           a->instance_id,         a->exception_type,
        a->exception_message, a->stack_trace,         a->conversation_id,
        a->content_type};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        sb__free(fields[i]);
    memset(a, 0, sizeof *a);
}
