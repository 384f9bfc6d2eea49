/*
 * views.h - ServiceControl's JSON views of a failed message (rule S4,
 * issue 22), written by api_views.c for the routes that answer with
 * them: FailedMessageView (the lists, errors/last), MessagesView
 * (message search, messages2, conversations) and FailedMessage
 * (errors/{id}). What ServicePulse's screens read is in
 * docs/http-api.md.
 */
#ifndef SB_SERVER_VIEWS_H
#define SB_SERVER_VIEWS_H

#include "server/api.h"

struct json_t;

/* ServiceControl's value for a host id nobody sent. */
#define SB_VIEW_NO_HOST_ID "00000000-0000-0000-0000-000000000000"

/* A stored message's headers parsed (NULL or "" read as "{}") into *hj
 * (transferred, json_decref; NULL when they are not a JSON object: shown
 * as none). 0 with the 503 in `out` when memory ran out: jansson reports
 * that as a syntax error or drops bytes, and an answer without the
 * headers would not be the message's. */
int sb__view_headers(const char *headers, struct json_t **hj, sb_api_resp *out);

/* The value of the first of the NULL-terminated `keys` that `hj` holds as
 * a string, or NULL. Borrowed from `hj`. */
const char *sb__view_header(const struct json_t *hj, const char *const *keys);

/* The message's summary (what a list holds) from the whole message, into
 * `s` (caller-owned). */
void sb__view_summary_of(const sb_failed_message *m, sb_failed_summary *s);

/* FailedMessageView of `s`. `whole` (one message read whole, with its
 * headers `hj`, NULL when they are not JSON) adds what only the headers
 * hold: the exception's source and stack trace, the sending endpoint,
 * edited and edit_of; a list (0) leaves those out. The receiving
 * endpoint is always there. */
void sb__view_failed(sb_buf *b, const sb_failed_summary *s, int whole,
                     const struct json_t *hj);

/* ServiceControl's FailedMessage of `m` (its summary `s`, its headers
 * `hj`, NULL when they are not JSON): the failure groups and the
 * processing attempts, the newest whole (metadata, failure details,
 * headers, the body's text when it is kept in the row). */
void sb__view_failed_message(sb_buf *b, const sb_failed_message *m,
                             const sb_failed_summary *s,
                             const struct json_t *hj);

/* ServiceControl's MessagesView of `m` (its summary `s`, its headers
 * `hj`, NULL when they are not JSON): the message as the "messages"
 * routes list it, its headers as a list of {key, value}, its status in
 * ServiceControl's MessageStatus, its body_url. */
void sb__view_message(sb_buf *b, const sb_failed_message *m,
                      const sb_failed_summary *s, const struct json_t *hj);

/* The body's content type named by the headers, or NULL. Borrowed. */
const char *sb__view_content_type(const struct json_t *hj);

/* A JSON array of the FailedMessageViews of a list. */
void sb__view_failed_list(sb_buf *b, sb_failed_summary *const *s, size_t n);

/* The body's URL relative to the API root, as ServiceControl gives it:
 * "/messages/{id}/body" (a JSON string with its quotes). */
void sb__view_body_url(sb_buf *b, const char *unique_id);

/* api_messages.c: ServiceControl's message routes over the failed
 * messages (messages/search/{keyword}, messages2, conversations/{id}),
 * each entry a MessagesView. 1 when `r` is one of them (handled). */
int sb__api_messages(const sb_api *a, const sb_api_req *r, sb_api_resp *out);

#endif
