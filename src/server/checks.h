/*
 * checks.h - sqlbus's own health checks (issue 22; docs/internals/
 * liveness.md): database reachable, failed imports, error ingestion,
 * recovery backlog, held xmin (PostgreSQL). Evaluated on demand from
 * what readiness, /metrics and the sampler read already; shown as
 * ServiceControl's custom checks (api_sc_checks.c) and e-mailed when
 * they change (notify.c).
 */
#ifndef SB_SERVER_CHECKS_H
#define SB_SERVER_CHECKS_H

#include "server/api.h"

#define SB_CHECKS 5

typedef struct sb_check {
    const char *name;     /* "Database reachable", ... */
    const char *category; /* "sqlbus: storage", ... */
    char id[37];          /* a GUID derived from the name */
    int applies;          /* listed at all (xmin: PostgreSQL only) */
    int failing;
    int dismissed; /* a failing check an operator dismissed */
    char reason[384];
} sb_check;

/* Every check into c[], in one order. Reads only. */
void sb__checks_evaluate(const sb_api *a, sb_check c[SB_CHECKS]);
/* Mark the dismissed failing checks; forget the dismissals of the checks
 * that pass (their next failure shows). Best effort: a store that cannot
 * be read marks nothing. */
void sb__checks_apply_dismissals(const sb_api *a, sb_check c[SB_CHECKS]);
/* Dismiss check `id` (any case) until it passes; its id as evaluated in
 * `known`. SB_NOTFOUND naming "id" when no check has it. */
int sb__checks_dismiss(const sb_api *a, const char *id, char known[37],
                       sb_error *err);
/* This host's name and a GUID derived from it: the checks' origin. */
void sb__checks_origin(char host[256], char host_id[37]);

#endif
