/* notify_postgres.c - LISTEN/NOTIFY wake-up hints on a dedicated libpq
 * connection. Only hints: a missed notification costs latency, never a
 * message. */
#include "db/db.h"

#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#define SELF_CHECK_US 5000000

struct sb_listener {
    PGconn *pg;
};

/* Server notices ("terminating connection ...") are not ours to print. */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* The connection counts as listening only once a notification it sent
 * itself comes back (C14): a LISTEN that a pooler or a failover silently
 * dropped never passes. Other notifications read meanwhile are dropped;
 * the caller scans after every (re)connect anyway. */
static int self_check(sb_listener *l, const char *channel, sb_error *err)
{
    char token[37], sql[256];
    sb__uuid7_at(token, sb__wall_us() / 1000);
    snprintf(sql, sizeof sql, "NOTIFY \"%s\", 'sqlbus-self-check:%s'", channel,
             token);
    PGresult *r = PQexec(l->pg, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    int64_t deadline = sb__mono_us() + SELF_CHECK_US;
    char payload[128];
    while (ok) {
        int64_t left = (deadline - sb__mono_us()) / 1000;
        if (left <= 0)
            break;
        sb_error ignored;
        int rc = sb__listener_wait(l, left, payload, sizeof payload, &ignored);
        if (rc == SB_OK && strncmp(payload, "sqlbus-self-check:", 18) == 0 &&
            strcmp(payload + 18, token) == 0)
            return SB_OK;
        if (rc != SB_OK && rc != SB_TIMEOUT)
            break;
    }
    return sb__err(err, SB_UNAVAILABLE, NULL,
                   "listen: the self-sent notification did not return "
                   "within %d s",
                   SELF_CHECK_US / 1000000);
}

int sb__listener_open(const sb_db_config *cfg, const char *channel,
                      sb_listener **out, sb_error *err)
{
    *out = NULL;
    if (cfg->dialect != SB_DIALECT_POSTGRES)
        return sb__err(err, SB_MISUSE, NULL, "LISTEN needs PostgreSQL");
    sb_listener *l = sb__calloc(1, sizeof *l);
    if (l == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    l->pg = PQconnectdb(cfg->target);
    PQsetNoticeProcessor(l->pg, quiet, NULL);
    if (PQstatus(l->pg) != CONNECTION_OK) {
        sb__err(err, SB_UNAVAILABLE, NULL, "listen: %s", PQerrorMessage(l->pg));
        sb__listener_close(l);
        return SB_UNAVAILABLE;
    }
    /* The channel is prefix + "wake", built from a validated identifier. */
    char sql[128];
    snprintf(sql, sizeof sql, "LISTEN \"%s\"", channel);
    PGresult *r = PQexec(l->pg, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok || self_check(l, channel, err) != SB_OK) {
        if (!ok)
            sb__err(err, SB_UNAVAILABLE, NULL, "listen: %s",
                    PQerrorMessage(l->pg));
        sb__listener_close(l);
        return SB_UNAVAILABLE;
    }
    *out = l;
    return SB_OK;
}

int sb__listener_wait(sb_listener *l, int64_t timeout_ms, char *payload,
                      size_t cap, sb_error *err)
{
    for (;;) {
        PGnotify *n = PQnotifies(l->pg);
        if (n != NULL) {
            sb__strlcpy(payload, n->extra ? n->extra : "", cap);
            PQfreemem(n);
            return SB_OK;
        }
        struct pollfd pfd = {PQsocket(l->pg), POLLIN, 0};
        if (pfd.fd < 0)
            return sb__err(err, SB_UNAVAILABLE, NULL, "listen: no socket");
        int got = poll(&pfd, 1, (int)timeout_ms);
        if (got == 0)
            return SB_TIMEOUT;
        if (got < 0)
            return SB_TIMEOUT; /* EINTR: the caller loops */
        if (!PQconsumeInput(l->pg) || PQstatus(l->pg) != CONNECTION_OK)
            return sb__err(err, SB_UNAVAILABLE, NULL, "listen: %s",
                           PQerrorMessage(l->pg));
        timeout_ms = 0;
        n = PQnotifies(l->pg);
        if (n == NULL)
            return SB_TIMEOUT;
        sb__strlcpy(payload, n->extra ? n->extra : "", cap);
        PQfreemem(n);
        return SB_OK;
    }
}

void sb__listener_close(sb_listener *l)
{
    if (l == NULL)
        return;
    PQfinish(l->pg);
    sb__free(l);
}
