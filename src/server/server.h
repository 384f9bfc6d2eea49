/*
 * server.h - `sqlbus serve` (docs/internals/server.md, rules S1-S15): the
 * HTTP server over one bus. Opaque handle; errors on the caller's
 * sb_error; no globals.
 */
#ifndef SB_SERVER_SERVER_H
#define SB_SERVER_SERVER_H

#include <stddef.h>
#include <sys/socket.h>

#include "server/loops.h"
#include "sqlbus.h"

#define SB_SERVER_LISTEN "127.0.0.1:8080"
#define SB_SERVER_MAX_BODY ((size_t)1 << 20)
#define SB_SERVER_TOKEN_MAX 256

typedef struct sb_server sb_server;

typedef struct sb_server_options {
    const char *listen;      /* "HOST:PORT" (NULL: SB_SERVER_LISTEN); port
                                0 takes a free one (sb__server_port) */
    const char *admin_token; /* S9: NULL or "" = none */
    const char *read_token;  /* S9: GET and HEAD only; NULL or "" = none */
    size_t max_body;         /* S10: request body cap (0: 1 MiB) */
    unsigned threads;        /* request threads (0: 2) */
    unsigned timeout_s;      /* idle connection timeout (0: 30 s) */
    sb_errors *store;        /* borrowed, optional: failed imports (S8) */
    sb_loops *loops;         /* borrowed, optional: ingestion state (S8) */
    int64_t retention_ms;    /* E21, reported by /api/configuration */
    int edit_enabled;        /* E18: the store was opened with allow_edit */
    sb_log_fn log;           /* the operations worker's log, may be NULL */
    void *log_user;
} sb_server_options;

/* address.c: parse "HOST:PORT" ("[v6]:PORT" for IPv6; HOST an address
 * or "localhost") into *out; *loopback says whether it is a loopback
 * address. SB_INVALID naming "listen" and what is wrong. */
int sb__listen_parse(const char *text, struct sockaddr_storage *out,
                     socklen_t *len, int *loopback, sb_error *err);

/* http.c: start serving `bus` (borrowed; must outlive the server), with
 * the durable operations worker (operations.c) when a store is given.
 * Refuses a non-loopback address without an admin token (S9). */
int sb__server_start(sb_bus *bus, const sb_server_options *opts,
                     sb_server **out, sb_error *err);
/* The port bound. */
int sb__server_port(const sb_server *s);
/* Stop accepting, finish the requests in flight, free. NULL-safe. */
void sb__server_stop(sb_server *s);

#endif
