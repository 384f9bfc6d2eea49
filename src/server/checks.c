/* checks.c - sqlbus's own health checks (see checks.h): each evaluated
 * from what readiness, /metrics and the sampler read already, and the
 * dismissals kept in {prefix}settings. */
#include "server/checks.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server/loops.h"
#include "server/stats.h"

#define DISMISSED_PREFIX "customchecks.dismissed/"
/* Ingestion failing this long fails its check (as readiness). */
#define INGEST_FAILED_FOR_MS 30000
/* The dead-letter queue's oldest ready message older than this: ingestion
 * is behind. */
#define INGEST_LAG_MS 60000
/* The oldest xmin held this long by a transaction, or this many
 * transactions behind by a slot (PostgreSQL). */
#define XMIN_HELD_MS 60000
#define XMIN_SLOT_AGE 100000
/* The sampler's newest queue counts, when this fresh. */
#define SAMPLE_MAX_AGE_MS 30000

enum { C_DATABASE, C_IMPORTS, C_INGESTION, C_RECOVERY, C_XMIN };

static const struct {
    const char *name, *category;
} check_defs[SB_CHECKS] = {
    {"Database reachable", "sqlbus: storage"},
    {"Failed imports", "sqlbus: ingestion"},
    {"Error ingestion", "sqlbus: ingestion"},
    {"Recovery backlog", "sqlbus: channel"},
    {"Held xmin", "sqlbus: storage"},
};

static void fail(sb_check *c, const char *fmt, ...) SB_PRINTF(2, 3);
static void fail(sb_check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    c->failing = 1;
}

/* The dead-letter queue's oldest ready message's age from the sampler's
 * newest sample (-1: none ready, or no fresh sample). */
static int64_t dlq_oldest_ms(const sb_api *a)
{
    sb_bus_counters *m = sb__calloc(1, sizeof *m);
    if (m == NULL)
        return -1;
    m->size = sizeof *m;
    sb_error err;
    int64_t age = -1;
    sb_queue_stats **q = NULL;
    size_t n = 0;
    if (sb_bus_metrics(a->bus, m, &err) == SB_OK &&
        sb__stats_queues(a->stats, SAMPLE_MAX_AGE_MS, &q, &n, NULL) == SB_OK) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(q[i]->queue, m->dead_letter_queue) == 0)
                age = q[i]->oldest_ready_age_ms;
        sb_free(q);
    }
    sb__free(m);
    return age;
}

void sb__checks_evaluate(const sb_api *a, sb_check c[SB_CHECKS])
{
    memset(c, 0, sizeof(sb_check) * SB_CHECKS);
    for (int i = 0; i < SB_CHECKS; i++) {
        c[i].name = check_defs[i].name;
        c[i].category = check_defs[i].category;
        c[i].applies = 1;
        sb_deterministic_guid("sqlbus-custom-check", c[i].name, c[i].id);
    }
    sb_error err;
    int64_t imports = 0;
    int rc = a->store != NULL
                 ? sb_errors_failed_import_count(a->store, &imports, &err)
                 : sb_schema_verify(a->bus, &err);
    if (rc != SB_OK) {
        fail(&c[C_DATABASE], "the database does not answer: %s",
             sb_strerror(rc));
        /* Nothing else can be read now. */
        for (int i = C_IMPORTS; i < SB_CHECKS; i++)
            c[i].applies = 0;
        return;
    }
    if (a->store == NULL)
        c[C_IMPORTS].applies = 0;
    else if (imports > 0)
        fail(&c[C_IMPORTS],
             "%lld dead letter%s could not be imported into the error store "
             "(`sqlbus errors reimport` sends them through ingestion again)",
             (long long)imports, imports == 1 ? "" : "s");
    if (a->loops == NULL) {
        c[C_INGESTION].applies = 0;
    } else {
        sb_loops_state st;
        memset(&st, 0, sizeof st);
        sb__loops_state(a->loops, &st);
        int64_t lag = dlq_oldest_ms(a);
        if (st.failing &&
            (st.last_ok_age_ms < 0 || st.last_ok_age_ms > INGEST_FAILED_FOR_MS))
            fail(&c[C_INGESTION],
                 "error ingestion has failed for %lld s (%lld failed passes "
                 "in all)",
                 (long long)(st.last_ok_age_ms < 0 ? 0
                                                   : st.last_ok_age_ms / 1000),
                 (long long)st.errors);
        else if (lag > INGEST_LAG_MS)
            fail(&c[C_INGESTION],
                 "the oldest dead letter waiting for ingestion is %lld s old",
                 (long long)(lag / 1000));
    }
    sb_registration_counts rcnt;
    memset(&rcnt, 0, sizeof rcnt);
    rcnt.size = sizeof rcnt;
    rc = sb_recovery_counts(a->bus, 0, &rcnt, &err);
    if (rc != SB_OK)
        fail(&c[C_RECOVERY], "the recovery registrations could not be read: %s",
             sb_strerror(rc));
    else if (rcnt.by_state[SB_REG_STALE] > 0)
        fail(&c[C_RECOVERY],
             "%lld registration%s of waiters that are gone wait for the "
             "recovery watchdog",
             (long long)rcnt.by_state[SB_REG_STALE],
             rcnt.by_state[SB_REG_STALE] == 1 ? "" : "s");
    sb_xmin_holder h;
    memset(&h, 0, sizeof h);
    h.size = sizeof h;
    rc = sb_xmin_holder_get(a->bus, -1, &h, &err);
    if (rc == SB_INVALID && strcmp(err.field, "bus") == 0)
        c[C_XMIN].applies = 0; /* not PostgreSQL */
    else if (rc != SB_OK)
        fail(&c[C_XMIN], "the oldest xmin could not be read: %s",
             sb_strerror(rc));
    else if (h.found && h.age_ms >= XMIN_HELD_MS)
        fail(&c[C_XMIN],
             "%s %d (%s, %s) has held the oldest xmin for %lld s: dead rows "
             "of the queues cannot be cleaned up meanwhile",
             h.kind, h.pid, h.name[0] ? h.name : "no name",
             h.state[0] ? h.state : "no state", (long long)(h.age_ms / 1000));
    else if (h.found && h.age_ms < 0 && h.xmin_age >= XMIN_SLOT_AGE)
        fail(&c[C_XMIN],
             "%s %s holds the oldest xmin %lld transactions back: dead rows "
             "of the queues cannot be cleaned up meanwhile",
             h.kind, h.name, (long long)h.xmin_age);
}

typedef struct dismissals {
    sb_check *c;
    char stale[SB_CHECKS][37]; /* dismissals of checks that pass now */
    int n_stale;
} dismissals;

static int on_dismissed(const char *name, const char *value, int64_t at,
                        void *user)
{
    (void)value;
    (void)at;
    dismissals *d = user;
    const char *id = name + strlen(DISMISSED_PREFIX);
    for (int i = 0; i < SB_CHECKS; i++) {
        if (strcasecmp(d->c[i].id, id) != 0)
            continue;
        if (d->c[i].failing)
            d->c[i].dismissed = 1;
        else if (d->n_stale < SB_CHECKS)
            sb__strlcpy(d->stale[d->n_stale++], d->c[i].id, 37);
    }
    return 0;
}

void sb__checks_apply_dismissals(const sb_api *a, sb_check c[SB_CHECKS])
{
    if (c[C_DATABASE].failing)
        return;
    dismissals d;
    memset(&d, 0, sizeof d);
    d.c = c;
    sb_error err;
    if (sb_setting_list(a->bus, DISMISSED_PREFIX, on_dismissed, &d, &err) !=
        SB_OK)
        return;
    for (int i = 0; i < d.n_stale; i++) {
        char key[sizeof DISMISSED_PREFIX + 37];
        snprintf(key, sizeof key, "%s%s", DISMISSED_PREFIX, d.stale[i]);
        sb_setting_remove(a->bus, key, &err);
    }
}

void sb__checks_origin(char host[256], char host_id[37])
{
    if (gethostname(host, 255) != 0)
        sb__strlcpy(host, "localhost", 256);
    host[255] = '\0';
    sb_deterministic_guid("sqlbus-host", host, host_id);
}

int sb__checks_dismiss(const sb_api *a, const char *id, char known[37],
                       sb_error *err)
{
    int found = 0;
    for (int i = 0; i < SB_CHECKS && !found; i++) {
        sb_deterministic_guid("sqlbus-custom-check", check_defs[i].name, known);
        found = strcasecmp(known, id) == 0;
    }
    if (!found)
        return sb__err(err, SB_NOTFOUND, "id", "no custom check %.40s", id);
    char key[sizeof DISMISSED_PREFIX + 37], at[32];
    snprintf(key, sizeof key, "%s%s", DISMISSED_PREFIX, known);
    snprintf(at, sizeof at, "%lld", (long long)sb__wall_us());
    return sb_setting_put(a->bus, key, at, err);
}
