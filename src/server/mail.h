/*
 * mail.h - e-mail through an SMTP relay (issue 22; docs/http-api.md,
 * "Endpoints, custom checks, events and settings"): the notification
 * settings ServicePulse edits, kept as one JSON object in
 * {prefix}settings, their checks, and one plain-text message sent
 * through the relay they name with libcurl's SMTP client (STARTTLS
 * required when enable_tls is set, TLS from the first byte on port 465,
 * AUTH when an account is set). Blocking; thread-safe between
 * sb__mail_global_init and sb__mail_global_cleanup (notify.c calls them).
 */
#ifndef SB_SERVER_MAIL_H
#define SB_SERVER_MAIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sqlbus.h"

struct json_t;

/* The settings' key in {prefix}settings. The stored object's members:
 * enabled, smtp_server, smtp_port, enable_tls, authentication_account,
 * authentication_password, from, to. */
#define SB_MAIL_SETTING "notifications.email"
#define SB_MAIL_TEXT_MAX 1000   /* bytes of a server, account or list */
#define SB_MAIL_SECRET_MAX 256  /* bytes of the password */
#define SB_MAIL_RCPT_MAX 32     /* addresses in `to` */
#define SB_MAIL_ADDRESS_MAX 254 /* bytes of one address (RFC 5321) */
#define SB_MAIL_TIMEOUT_MS 30000
#define SB_MAIL_CONNECT_TIMEOUT_MS 10000
#define SB_MAIL_PORT_DEFAULT 25

/* libcurl's process-wide state, counted: each init has its cleanup.
 * SB_NOMEM when it cannot be set up. */
int sb__mail_global_init(sb_error *err);
void sb__mail_global_cleanup(void);

/* The stored settings (transferred, json_decref), an empty object when
 * none are stored or what is stored is not an object. */
int sb__mail_load(sb_bus *bus, struct json_t **out, sb_error *err);

/* SB_INVALID naming `field` unless `text` is a relay's name: a DNS name,
 * an IPv4 address, or an IPv6 address (brackets optional). */
int sb__mail_check_server(const char *field, const char *text, sb_error *err);
/* SB_INVALID naming `field` unless `text` is one address (`many` 0) or
 * 1..SB_MAIL_RCPT_MAX addresses separated by commas or semicolons
 * (`many` 1), each local@domain with no space, control character,
 * angle bracket or quote. */
int sb__mail_check_addresses(const char *field, const char *text, int many,
                             sb_error *err);

/* Send `subject` and `text` (UTF-8; lines end in \n) from the settings'
 * `from` to each of their `to` through their relay, within
 * SB_MAIL_TIMEOUT_MS. SB_INVALID naming smtp_server, from or to when
 * one is missing or not valid; SB_UNAVAILABLE with the relay's or the
 * connection's failure in the message when the relay could not be
 * reached, refused TLS or authentication, or refused the message;
 * SB_NOMEM. `stop` (NULL: none) becoming non-zero abandons the send
 * within about a second: SB_CLOSED. */
int sb__mail_send(const struct json_t *settings, const char *subject,
                  const char *text, const atomic_int *stop, sb_error *err);

#endif
