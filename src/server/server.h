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
/* S10: `--request-timeout` (the API bus's statement_timeout_ms): default,
 * limits, and the API bus's connections (two per request thread). */
#define SB_SERVER_REQUEST_TIMEOUT_MS 10000
#define SB_SERVER_REQUEST_TIMEOUT_MIN_MS 10
#define SB_SERVER_REQUEST_TIMEOUT_MAX_MS (3600LL * 1000)
#define SB_SERVER_API_POOL 4
/* S10, slow clients: connections at once, from one address, and the time
 * a request head may take to arrive whole (`--max-connections`,
 * `--max-connections-per-ip`, `--header-timeout`): defaults and limits. */
#define SB_SERVER_MAX_CONNECTIONS 256
#define SB_SERVER_MAX_PER_IP 32
#define SB_SERVER_CONNECTIONS_MAX 10000
#define SB_SERVER_HEADER_TIMEOUT_MS 10000
#define SB_SERVER_HEADER_TIMEOUT_MIN_MS 100
#define SB_SERVER_HEADER_TIMEOUT_MAX_MS (3600LL * 1000)
/* Issue 22: `--check-interval`, how often the health-check e-mails
 * (notify.h) evaluate sqlbus's own checks: default and limits. */
#define SB_SERVER_CHECK_INTERVAL_MS 30000
#define SB_SERVER_CHECK_INTERVAL_MIN_MS 1000
#define SB_SERVER_CHECK_INTERVAL_MAX_MS (3600LL * 1000)

/* Issue 22: the ServiceControl version every answer names
 * (X-Particular-Version). ServicePulse turns screens on by it: 5.2.0
 * (redirect conflicts' X-Particular-Reason), 5.9.0 (endpoint settings),
 * 6.6.0 (its minimum: below it nags to upgrade) and, in 2.10.2, 6.19.0
 * (license details); 6.19.2 is ServiceControl's newest release, so no
 * "newer version" notice either. docs/http-api.md, "Using
 * ServicePulse". */
#define SB_SERVER_SC_VERSION "6.19.2"

typedef struct sb_server sb_server;

typedef struct sb_server_options {
    const char *listen;        /* "HOST:PORT" (NULL: SB_SERVER_LISTEN); port
                                0 takes a free one (sb__server_port) */
    const char *admin_token;   /* S9: NULL or "" = none */
    const char *read_token;    /* S9: GET and HEAD only; NULL or "" = none */
    size_t max_body;           /* S10: request body cap (0: 1 MiB) */
    unsigned threads;          /* request threads (0: 2) */
    unsigned timeout_s;        /* idle connection timeout (0: 30 s) */
    unsigned max_connections;  /* at once (0: SB_SERVER_MAX_CONNECTIONS; at
                                 least `threads`) */
    unsigned max_per_ip;       /* at once from one address (0:
                                 SB_SERVER_MAX_PER_IP) */
    int64_t header_timeout_ms; /* a request head arrives whole within this
                                  of the connection's start or its last
                                  answer, else the connection is shut
                                  down (0: SB_SERVER_HEADER_TIMEOUT_MS) */
    sb_errors *store;          /* borrowed, optional: failed imports (S8)
                                and the operations worker (S5) */
    /* S10: the bus the API's requests run on (borrowed, optional: NULL =
     * the server's bus), opened with statement_timeout_ms set so that no
     * request's statement runs past it, on the same database and prefix;
     * the operations worker and the stats sampler stay on the server's
     * bus; from the start on, api_bus counts its traffic in the server
     * bus's counters (sb_bus_count_into), so /metrics and the charts
     * count one process: nothing else may use api_bus during
     * sb__server_start, and no worker may run on it. `api_store` is the
     * error store over it (required with a store). */
    sb_bus *api_bus;
    sb_errors *api_store;
    int64_t request_timeout_ms; /* api_bus's limit, named by the 503
                                   "timeout" error; 0 = none */
    sb_loops *loops;            /* borrowed, optional: ingestion state (S8) */
    int64_t retention_ms;       /* E21, reported by /api/configuration */
    int edit_enabled;           /* E18: the store was opened with allow_edit */
    sb_log_fn log;              /* the operations worker's log, may be NULL */
    void *log_user;
    /* Issue 22: the origins whose pages may call the API (cors.h):
     * "*" (any) or "http(s)://HOST[:PORT]", or the one word "none".
     * None given: any origin when listening on loopback with no token,
     * else none (the server's own pages only). */
    const char *const *cors_origins;
    size_t n_cors_origins;
    /* Issue 22: with no token, the Host names answered besides loopback
     * ones (cors.h, sb_hosts): a proxy's, say. Ignored with tokens. */
    const char *const *allowed_hosts;
    size_t n_allowed_hosts;
    /* Issue 22: how often sqlbus's own checks are evaluated for the
     * e-mail notifications (notify.h; `--check-interval`; 0:
     * SB_SERVER_CHECK_INTERVAL_MS). */
    int64_t check_interval_ms;
} sb_server_options;

/* address.c: parse "HOST:PORT" ("[v6]:PORT" for IPv6; HOST an address
 * or "localhost") into *out; *loopback says whether it is a loopback
 * address. SB_INVALID naming "listen" and what is wrong. */
int sb__listen_parse(const char *text, struct sockaddr_storage *out,
                     socklen_t *len, int *loopback, sb_error *err);

/* http.c: start serving `bus` (borrowed; must outlive the server), with
 * the durable operations (sb_operations_open) when a store is given;
 * requests run on opts->api_bus when set. Refuses a non-loopback address
 * without an admin token (S9). */
int sb__server_start(sb_bus *bus, const sb_server_options *opts,
                     sb_server **out, sb_error *err);
/* The port bound. */
int sb__server_port(const sb_server *s);
/* Issue 22: which origins may call the API, for serve's startup line
 * ("any origin", the list, or "none"), into `out` (`cap` bytes). */
void sb__server_cors_text(const sb_server *s, char *out, size_t cap);
/* Stop accepting, finish the requests in flight, free. NULL-safe. */
void sb__server_stop(sb_server *s);

#endif
