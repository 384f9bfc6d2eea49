/* api_views.c - ServiceControl's JSON views of a failed message (see
 * views.h): the names and shapes ServicePulse reads, from the store's
 * summary and the newest attempt's headers. */
#include "server/views.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int sb__view_headers(const char *headers, json_t **hj, sb_api_resp *out)
{
    unsigned long fails = sb__alloc_failures();
    *hj = json_loads(headers && headers[0] ? headers : "{}", 0, NULL);
    if (sb__alloc_failures() != fails) {
        json_decref(*hj);
        *hj = NULL;
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory");
    }
    if (*hj != NULL && !json_is_object(*hj)) {
        json_decref(*hj);
        *hj = NULL;
    }
    return 1;
}

const char *sb__view_header(const json_t *hj, const char *const *keys)
{
    for (size_t i = 0; hj != NULL && keys[i] != NULL; i++) {
        const char *v = json_string_value(json_object_get(hj, keys[i]));
        if (v != NULL)
            return v;
    }
    return NULL;
}

void sb__view_summary_of(const sb_failed_message *m, sb_failed_summary *s)
{
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    sb__strlcpy(s->unique_id, sb_failed_unique_id(m), sizeof s->unique_id);
    s->status = sb_failed_status(m);
    s->attempts = sb_failed_attempts(m);
    s->last_failure_us = sb_failed_last_failure_us(m);
    s->first_failure_us = sb_failed_first_failure_us(m);
    s->last_modified_us = sb_failed_last_modified_us(m);
    s->time_sent_us = sb_failed_time_sent_us(m);
    s->is_system = sb_failed_is_system(m);
    static const struct {
        const char *name;
        size_t off, cap;
    } fields[] = {
#define F(n, member)                                                           \
    {n, offsetof(sb_failed_summary, member),                                   \
     sizeof(((sb_failed_summary *)0)->member)}
        F("message_id", message_id),
        F("message_type", message_type),
        F("failed_queue", failed_queue),
        F("processing_endpoint", processing_endpoint),
        F("host", host),
        F("host_id", host_id),
        F("exception_type", exception_type),
        F("exception_message", exception_message),
#undef F
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const char *v = sb_failed_field(m, fields[i].name);
        if (v != NULL)
            sb__strlcpy((char *)s + fields[i].off, v, fields[i].cap);
    }
}

/* `name`: {"name", "host_id", "host"}: the host id ServiceControl's zero
 * GUID when none is known, the others left out when empty. ServicePulse
 * reads the members of both endpoints without checking the object is
 * there. */
static void endpoint(sb_buf *b, int *f, const char *key, const char *name,
                     const char *host_id, const char *host)
{
    sb__json_key(b, f, key);
    int g = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &g, "name", name);
    sb__json_str_m(b, &g, "host_id",
                   host_id && host_id[0] ? host_id : SB_VIEW_NO_HOST_ID);
    sb__json_str_m(b, &g, "host", host);
    sb__buf_puts(b, "}");
}

static const char *const k_source[] = {
    "sb-exception-source", "NServiceBus.ExceptionInfo.Source", NULL};
static const char *const k_trace[] = {
    "sb-exception-stacktrace", "NServiceBus.ExceptionInfo.StackTrace", NULL};
static const char *const k_edit_of[] = {"sb-edit-of", "ServiceControl.EditOf",
                                        NULL};

/* The sending endpoint from NServiceBus's originating headers (the
 * address "queue@machine" when the name or machine is missing). */
static void sender(sb_buf *b, int *f, const json_t *hj, const char *key)
{
    static const char *const k_name[] = {"NServiceBus.OriginatingEndpoint",
                                         NULL};
    static const char *const k_host[] = {"NServiceBus.OriginatingMachine",
                                         NULL};
    static const char *const k_id[] = {"$.diagnostics.originating.hostid",
                                       NULL};
    static const char *const k_address[] = {"NServiceBus.OriginatingAddress",
                                            NULL};
    const char *name = sb__view_header(hj, k_name);
    const char *host = sb__view_header(hj, k_host);
    const char *address = sb__view_header(hj, k_address);
    char queue[256] = "", machine[256] = "";
    if ((name == NULL || host == NULL) && address != NULL) {
        const char *at = strchr(address, '@');
        size_t n = at ? (size_t)(at - address) : strlen(address);
        snprintf(queue, sizeof queue, "%.*s", (int)n, address);
        if (at != NULL)
            sb__strlcpy(machine, at + 1, sizeof machine);
        name = name ? name : queue;
        host = host ? host : machine;
    }
    endpoint(b, f, key, name, sb__view_header(hj, k_id), host);
}

const char *sb__view_content_type(const json_t *hj)
{
    static const char *const keys[] = {"sb-content-type", "Content-Type",
                                       "NServiceBus.ContentType", NULL};
    return sb__view_header(hj, keys);
}

/* The exception of the newest attempt (ServiceControl's
 * ExceptionDetails); `whole` adds what the headers hold. */
static void exception(sb_buf *b, int *f, const sb_failed_summary *s, int whole,
                      const json_t *hj)
{
    sb__json_key(b, f, "exception");
    int g = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &g, "exception_type", s->exception_type);
    sb__json_str_m(b, &g, "message", s->exception_message);
    if (whole) {
        /* ServiceControl's Source is null when unknown; ServicePulse
         * reads the member, so it is always there. */
        const char *src = sb__view_header(hj, k_source);
        sb__json_key(b, &g, "source");
        if (src != NULL && src[0] != '\0')
            sb__buf_json_str(b, src);
        else
            sb__buf_puts(b, "null");
        sb__json_str_m(b, &g, "stack_trace", sb__view_header(hj, k_trace));
    }
    sb__buf_puts(b, "}");
}

void sb__view_failed(sb_buf *b, const sb_failed_summary *s, int whole,
                     const json_t *hj)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", s->unique_id);
    sb__json_str_m(b, &f, "message_id", s->message_id);
    sb__json_str_m(b, &f, "message_type", s->message_type);
    sb__json_time_m(b, &f, "time_sent", s->time_sent_us);
    sb__json_bool_m(b, &f, "is_system_message", s->is_system);
    exception(b, &f, s, whole, hj);
    sb__json_int_m(b, &f, "number_of_processing_attempts", s->attempts);
    sb__json_str_m(b, &f, "status", sb__api_status_name(s->status));
    if (whole)
        sender(b, &f, hj, "sending_endpoint");
    endpoint(b, &f, "receiving_endpoint", s->processing_endpoint, s->host_id,
             s->host);
    sb__json_str_m(b, &f, "queue_address", s->failed_queue);
    sb__json_time_m(b, &f, "time_of_failure", s->last_failure_us);
    sb__json_time_m(b, &f, "first_time_of_failure", s->first_failure_us);
    sb__json_time_m(b, &f, "last_modified", s->last_modified_us);
    if (whole) {
        const char *edit_of = sb__view_header(hj, k_edit_of);
        sb__json_bool_m(b, &f, "edited", edit_of != NULL && edit_of[0]);
        sb__json_str_m(b, &f, "edit_of", edit_of);
    }
    sb__buf_puts(b, "}");
}

void sb__view_failed_list(sb_buf *b, sb_failed_summary *const *s, size_t n)
{
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb__buf_puts(b, ",");
        sb__view_failed(b, s[i], 0, NULL);
    }
    sb__buf_puts(b, "]");
}

void sb__view_body_url(sb_buf *b, const char *unique_id)
{
    sb__buf_puts(b, "\"/messages/");
    sb__url_encode(b, unique_id);
    sb__buf_puts(b, "/body\"");
}

/* ServiceControl's relational store keeps the newest attempt only and
 * gives one empty attempt for each earlier one, so clients that count
 * them show the number; RavenDB kept 10 at most, which is the most given
 * here. */
#define ATTEMPTS_SHOWN 10

void sb__view_failed_message(sb_buf *b, const sb_failed_message *m,
                             const sb_failed_summary *s, const json_t *hj)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", s->unique_id);
    sb__json_key(b, &f, "processing_attempts");
    sb__buf_puts(b, "[");
    int64_t earlier = s->attempts > ATTEMPTS_SHOWN ? ATTEMPTS_SHOWN - 1
                      : s->attempts > 1            ? s->attempts - 1
                                                   : 0;
    for (int64_t i = 0; i < earlier; i++)
        sb__buf_puts(b, "{\"message_metadata\":{},\"headers\":{}},");
    /* The newest attempt, whole. The metadata's names are ServiceControl's
     * dictionary keys, not snake_case. */
    int g = 1;
    sb__buf_puts(b, "{");
    sb__json_key(b, &g, "message_metadata");
    int k = 1;
    sb__buf_puts(b, "{");
    size_t body_len = 0;
    sb_failed_body(m, &body_len);
    sb__json_bool_m(b, &k, "IsSystemMessage", s->is_system);
    sb__json_int_m(b, &k, "ContentLength", (int64_t)body_len);
    sb__json_str_m(b, &k, "MessageId", s->message_id);
    sb__json_str_m(b, &k, "MessageType", s->message_type);
    sb__json_str_m(b, &k, "ConversationId",
                   sb_failed_field(m, "conversation_id"));
    sb__json_str_m(b, &k, "ContentType", sb__view_content_type(hj));
    sender(b, &k, hj, "SendingEndpoint");
    endpoint(b, &k, "ReceivingEndpoint", s->processing_endpoint, s->host_id,
             s->host);
    sb__json_time_m(b, &k, "TimeSent", s->time_sent_us);
    sb__buf_puts(b, "}");
    sb__json_key(b, &g, "failure_details");
    k = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &k, "address_of_failing_endpoint", s->failed_queue);
    sb__json_time_m(b, &k, "time_of_failure", s->last_failure_us);
    exception(b, &k, s, 1, hj);
    sb__buf_puts(b, "}");
    sb__json_time_m(b, &g, "attempted_at", s->last_failure_us);
    sb__json_str_m(b, &g, "message_id", s->message_id);
    /* The text of a body kept in the row; a body in the body store (or
     * binary) is served by its body_url only. */
    if (!sb_failed_body_stored_externally(m))
        sb__json_str_m(b, &g, "body", sb_failed_body_text(m));
    sb__json_key(b, &g, "headers");
    sb__buf_puts(b, hj != NULL ? sb_failed_headers(m) : "{}");
    sb__buf_puts(b, "}]");
    sb__json_key(b, &f, "failure_groups");
    sb__buf_puts(b, "[");
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *gid, *type, *title;
        sb_failed_group(m, i, &gid, &type, &title);
        k = 1;
        sb__buf_puts(b, i ? ",{" : "{");
        sb__json_str_m(b, &k, "id", gid);
        sb__json_str_m(b, &k, "title", title);
        sb__json_str_m(b, &k, "type", type);
        sb__buf_puts(b, "}");
    }
    sb__buf_puts(b, "]");
    sb__json_str_m(b, &f, "unique_message_id", s->unique_id);
    sb__json_str_m(b, &f, "status", sb__api_status_name(s->status));
    sb__buf_puts(b, "}");
}

/* ServiceControl's MessageStatus of a failed message, camelCase. */
static const char *message_status(const sb_failed_summary *s)
{
    switch (s->status) {
    case SB_FAILED_RETRY_ISSUED: return "retryIssued";
    case SB_FAILED_RESOLVED: return "resolvedSuccessfully";
    case SB_FAILED_ARCHIVED: return "archivedFailure";
    default: return s->attempts > 1 ? "repeatedFailure" : "failed";
    }
}

/* NServiceBus's MessageIntent as ServiceControl writes its enum
 * (camelCase: "send", "publish", ...), or NULL when none is known. */
static void intent(sb_buf *b, int *f, const json_t *hj)
{
    static const char *const k_intent[] = {"NServiceBus.MessageIntent", NULL};
    static const char *const known[] = {"send",        "publish", "subscribe",
                                        "unsubscribe", "reply",   "init"};
    const char *v = sb__view_header(hj, k_intent);
    for (size_t i = 0; v != NULL && i < sizeof known / sizeof *known; i++)
        if (strcasecmp(v, known[i]) == 0) {
            sb__json_str_m(b, f, "message_intent", known[i]);
            return;
        }
}

void sb__view_message(sb_buf *b, const sb_failed_message *m,
                      const sb_failed_summary *s, const json_t *hj)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_str_m(b, &f, "id", s->unique_id);
    sb__json_str_m(b, &f, "message_id", s->message_id);
    sb__json_str_m(b, &f, "message_type", s->message_type);
    sender(b, &f, hj, "sending_endpoint");
    endpoint(b, &f, "receiving_endpoint", s->processing_endpoint, s->host_id,
             s->host);
    sb__json_time_m(b, &f, "time_sent", s->time_sent_us);
    /* A failed message was processed, and failed, at its time of failure;
     * ServiceControl's error instance has no durations for it. */
    sb__json_time_m(b, &f, "processed_at", s->last_failure_us);
    sb__json_str_m(b, &f, "critical_time", "00:00:00");
    sb__json_str_m(b, &f, "processing_time", "00:00:00");
    sb__json_str_m(b, &f, "delivery_time", "00:00:00");
    sb__json_bool_m(b, &f, "is_system_message", s->is_system);
    sb__json_str_m(b, &f, "conversation_id",
                   sb_failed_field(m, "conversation_id"));
    /* ServicePulse looks headers up in a list of {key, value}. */
    sb__json_key(b, &f, "headers");
    sb__buf_puts(b, "[");
    const char *key;
    json_t *value;
    int k = 0;
    json_object_foreach((json_t *)hj, key, value)
    {
        if (!json_is_string(value))
            continue;
        int g = 1;
        sb__buf_puts(b, k++ ? ",{" : "{");
        sb__json_key(b, &g, "key");
        sb__buf_json_str(b, key);
        sb__json_key(b, &g, "value");
        sb__buf_json_str(b, json_string_value(value));
        sb__buf_puts(b, "}");
    }
    sb__buf_puts(b, "]");
    sb__json_str_m(b, &f, "status", message_status(s));
    intent(b, &f, hj);
    sb__json_key(b, &f, "body_url");
    sb__view_body_url(b, s->unique_id);
    size_t len = 0;
    sb_failed_body(m, &len);
    sb__json_int_m(b, &f, "body_size", (int64_t)len);
    sb__buf_puts(b, "}");
}
