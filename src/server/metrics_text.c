/* metrics_text.c - the Prometheus text exposition of a metrics snapshot
 * (see metrics_text.h). Every family gets its # HELP and # TYPE lines,
 * even with no sample, so the set of families does not change with the
 * state of the database. */
#include "server/metrics_text.h"

#include <stdio.h>
#include <string.h>

const int64_t sb__prom_le_us[SB_METRICS_BUCKETS] = {
    100,     250,     500,     1000,     2500,     5000,
    10000,   25000,   50000,   100000,   250000,   500000,
    1000000, 2500000, 5000000, 10000000, INT64_MAX};

int sb__prom_bucket(int64_t us)
{
    int i = 0;
    while (i < SB_METRICS_BUCKETS - 1 && us > sb__prom_le_us[i])
        i++;
    return i;
}

void sb__prom_label_value(sb_buf *b, const char *v)
{
    const char *run = v ? v : "";
    for (const char *p = run;; p++) {
        const char *esc = *p == '\\'   ? "\\\\"
                          : *p == '"'  ? "\\\""
                          : *p == '\n' ? "\\n"
                                       : NULL;
        if (esc == NULL && *p != '\0')
            continue;
        sb__buf_append(b, run, (size_t)(p - run));
        if (esc == NULL)
            return;
        sb__buf_puts(b, esc);
        run = p + 1;
    }
}

/* Microseconds as decimal seconds, without trailing zeros ("0.00025",
 * "2.5", "10"). */
static void put_seconds(sb_buf *b, int64_t us)
{
    if (us < 0) {
        sb__buf_puts(b, "-");
        us = -us;
    }
    char frac[8];
    int64_t f = us % 1000000;
    int len = 6;
    snprintf(frac, sizeof frac, "%06lld", (long long)f);
    while (len > 0 && frac[len - 1] == '0')
        len--;
    frac[len] = '\0';
    sb__buf_printf(b, "%lld%s%s", (long long)(us / 1000000), len ? "." : "",
                   frac);
}

static void family(sb_buf *b, const char *name, const char *type,
                   const char *help)
{
    sb__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* `name{k1="v1",k2="v2"}` with the labels that are set (k1 NULL: none). */
static void series(sb_buf *b, const char *name, const char *suffix,
                   const char *k1, const char *v1, const char *k2,
                   const char *v2)
{
    sb__buf_printf(b, "%s%s", name, suffix ? suffix : "");
    if (k1 == NULL && k2 == NULL)
        return;
    sb__buf_puts(b, "{");
    if (k1 != NULL) {
        sb__buf_printf(b, "%s=\"", k1);
        sb__prom_label_value(b, v1);
        sb__buf_puts(b, "\"");
    }
    if (k2 != NULL) {
        sb__buf_printf(b, "%s%s=\"", k1 ? "," : "", k2);
        sb__prom_label_value(b, v2);
        sb__buf_puts(b, "\"");
    }
    sb__buf_puts(b, "}");
}

static void sample(sb_buf *b, const char *name, const char *k1, const char *v1,
                   const char *k2, const char *v2, int64_t v)
{
    series(b, name, NULL, k1, v1, k2, v2);
    sb__buf_printf(b, " %lld\n", (long long)v);
}

static void sample_seconds(sb_buf *b, const char *name, const char *k1,
                           const char *v1, int64_t us)
{
    series(b, name, NULL, k1, v1, NULL, NULL);
    sb__buf_puts(b, " ");
    put_seconds(b, us);
    sb__buf_puts(b, "\n");
}

/* Cumulative buckets ending in +Inf, then _sum and _count; _count is the
 * +Inf bucket, so the two agree whatever the snapshot says. Labels k/v and
 * k2/v2 when set (k NULL: none; k2 NULL: one). */
static void histogram2(sb_buf *b, const char *name, const char *k,
                       const char *v, const char *k2, const char *v2,
                       const sb_latency_histogram *h)
{
    int64_t cum = 0;
    for (int i = 0; i < SB_METRICS_BUCKETS; i++) {
        cum += h->counts[i];
        int inf = i == SB_METRICS_BUCKETS - 1 || h->le_us[i] == INT64_MAX;
        sb__buf_printf(b, "%s_bucket{", name);
        for (int j = 0; j < 2; j++) {
            const char *key = j == 0 ? k : k2, *val = j == 0 ? v : v2;
            if (key == NULL || (j == 1 && k == NULL))
                continue;
            sb__buf_printf(b, "%s=\"", key);
            sb__prom_label_value(b, val);
            sb__buf_puts(b, "\",");
        }
        sb__buf_puts(b, "le=\"");
        if (inf)
            sb__buf_puts(b, "+Inf");
        else
            put_seconds(b, h->le_us[i]);
        sb__buf_printf(b, "\"} %lld\n", (long long)cum);
        if (inf)
            break;
    }
    if (k == NULL)
        k2 = NULL;
    series(b, name, "_sum", k, v, k2, v2);
    sb__buf_puts(b, " ");
    put_seconds(b, h->sum_us);
    sb__buf_puts(b, "\n");
    series(b, name, "_count", k, v, k2, v2);
    sb__buf_printf(b, " %lld\n", (long long)cum);
}

static void histogram(sb_buf *b, const char *name, const char *k, const char *v,
                      const sb_latency_histogram *h)
{
    histogram2(b, name, k, v, NULL, NULL, h);
}

/* ---- the families ---- */

enum { D_READY, D_DELAYED, D_IN_FLIGHT, D_DEAD, D_AGE };

static void depth(sb_buf *b, const sb_metrics_snapshot *s)
{
    static const struct {
        const char *name, *help;
    } f[] = {
        {"sqlbus_queue_ready",
         "Messages ready to be claimed (database: every process)."},
        {"sqlbus_queue_delayed", "Messages not available yet (delayed or "
                                 "naked with a delay)."},
        {"sqlbus_queue_in_flight", "Messages claimed under a live lease."},
        {"sqlbus_queue_dead_lettered",
         "Dead letters whose failed queue is this queue."},
        {"sqlbus_queue_oldest_ready_age_seconds",
         "Age of the oldest ready message (0 when none is ready)."},
    };
    size_t n = s->queues_ok ? s->n_queues : 0;
    if (n > SB_METRICS_QUEUE_LABELS)
        n = SB_METRICS_QUEUE_LABELS;
    for (int k = D_READY; k <= D_AGE; k++) {
        family(b, f[k].name, "gauge", f[k].help);
        for (size_t i = 0; i < n; i++) {
            const sb_queue_stats *q = s->queues[i];
            if (k == D_AGE) {
                int64_t ms =
                    q->oldest_ready_age_ms < 0 ? 0 : q->oldest_ready_age_ms;
                sample_seconds(b, f[k].name, "queue", q->queue, ms * 1000);
                continue;
            }
            int64_t v = k == D_READY       ? q->ready
                        : k == D_DELAYED   ? q->delayed
                        : k == D_IN_FLIGHT ? q->in_flight
                                           : q->dead_lettered;
            sample(b, f[k].name, "queue", q->queue, NULL, NULL, v);
        }
    }
    family(b, "sqlbus_queues", "gauge",
           "Queues with rows in the database (the queue gauges show at most "
           "500, by name).");
    if (s->queues_ok)
        sample(b, "sqlbus_queues", NULL, NULL, NULL, NULL,
               (int64_t)s->n_queues);
}

static int64_t count_of(const sb_queue_counts *q, int k)
{
    return k == 0   ? q->published
           : k == 1 ? q->acked
           : k == 2 ? q->naked
                    : q->dead_lettered;
}

/* The four message counters (published, acked, naked, dead-lettered) of
 * `who` ("this process" or "every process") under names prefix_KIND_total,
 * one sample per queue of q[0..n-1] ("" and `other`, when it counted
 * anything, labelled "(other)"). */
static void message_counters(sb_buf *b, const char *prefix, const char *who,
                             const sb_queue_counts *q, size_t n,
                             const sb_queue_counts *other)
{
    static const char *const kind[] = {"published", "acked", "naked",
                                       "dead_lettered"};
    static const char *const what[] = {
        "Messages published by %s, by queue.",
        "Messages acked by %s, by queue.",
        "Messages released for redelivery by %s, by queue.",
        "Messages dead-lettered by %s, by failed queue."};
    for (int k = 0; k < 4; k++) {
        char name[64], help[96];
        snprintf(name, sizeof name, "%s_%s_total", prefix, kind[k]);
        snprintf(help, sizeof help, what[k], who);
        family(b, name, "counter", help);
        for (size_t i = 0; i < n; i++)
            sample(b, name, "queue", q[i].queue[0] ? q[i].queue : "(other)",
                   NULL, NULL, count_of(&q[i], k));
        if (other != NULL && (other->published || other->acked ||
                              other->naked || other->dead_lettered))
            sample(b, name, "queue", "(other)", NULL, NULL, count_of(other, k));
    }
}

static void counters(sb_buf *b, const sb_metrics_snapshot *s)
{
    const sb_bus_counters *c = s->counters;
    message_counters(b, "sqlbus_messages", "this process", c ? c->queues : NULL,
                     c ? c->n_queues : 0, c ? &c->other : NULL);
    family(b, "sqlbus_claim_duration_seconds", "histogram",
           "Duration of this process's claim statements.");
    if (c != NULL)
        histogram(b, "sqlbus_claim_duration_seconds", NULL, NULL, &c->claim);
    family(b, "sqlbus_handler_duration_seconds", "histogram",
           "Duration of this process's worker handler calls.");
    if (c != NULL)
        histogram(b, "sqlbus_handler_duration_seconds", NULL, NULL,
                  &c->handler);
    family(b, "sqlbus_metrics_start_time_seconds", "gauge",
           "When this process's counters started (the bus was opened), "
           "Unix time.");
    if (c != NULL)
        sample_seconds(b, "sqlbus_metrics_start_time_seconds", NULL, NULL,
                       c->opened_at_us);
}

/* This process's counts by queue and message type (sb_bus_metrics_by_type):
 * "(other)" for the queues past the first 64 and for a queue's types past
 * its first 100; "" for messages without a type. */
static void by_type(sb_buf *b, const sb_metrics_snapshot *s)
{
    static const char *const kind[] = {"published", "acked", "naked",
                                       "dead_lettered"};
    static const char *const what[] = {
        "Messages published by this process, by queue and message type.",
        "Messages acked by this process, by queue and message type.",
        "Messages released for redelivery by this process, by queue and "
        "message type.",
        "Messages dead-lettered by this process, by failed queue and "
        "message type."};
    for (int k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, "sqlbus_messages_%s_by_type_total",
                 kind[k]);
        family(b, name, "counter", what[k]);
        for (size_t i = 0; i < s->n_types; i++) {
            const sb_type_counts *t = s->types[i];
            int64_t v = k == 0   ? t->published
                        : k == 1 ? t->acked
                        : k == 2 ? t->naked
                                 : t->dead_lettered;
            sample(b, name, "queue", t->queue[0] ? t->queue : "(other)", "type",
                   t->other ? "(other)" : t->type, v);
        }
    }
    family(b, "sqlbus_handler_duration_by_type_seconds", "histogram",
           "Duration of this process's worker handler calls, by queue and "
           "message type.");
    for (size_t i = 0; i < s->n_types; i++) {
        const sb_type_counts *t = s->types[i];
        if (t->handler.count > 0)
            histogram2(b, "sqlbus_handler_duration_by_type_seconds", "queue",
                       t->queue[0] ? t->queue : "(other)", "type",
                       t->other ? "(other)" : t->type, &t->handler);
    }
}

/* Every process's counts, from the database's counts table. */
static void totals(sb_buf *b, const sb_metrics_snapshot *s)
{
    message_counters(b, "sqlbus_queue_messages",
                     "every process (the counts table)", s->totals,
                     s->totals_ok ? s->n_totals : 0, NULL);
}

static void ingestion(sb_buf *b, const sb_metrics_snapshot *s)
{
    static const struct {
        const char *name, *type, *help;
    } f[] = {
        {"sqlbus_ingestion_passes_total", "counter",
         "Ingestion passes over the dead-letter queue."},
        {"sqlbus_ingestion_rows_total", "counter",
         "Dead-letter rows ingested into the error store."},
        {"sqlbus_ingestion_messages_total", "counter",
         "Failed-message rows written by ingestion (after folding)."},
        {"sqlbus_ingestion_errors_total", "counter",
         "Ingestion passes that failed."},
        {"sqlbus_ingestion_failing", "gauge",
         "1 while the last ingestion pass failed."},
        {"sqlbus_housekeeping_runs_total", "counter",
         "Housekeeping runs (retention, pruning, watchdog)."},
        {"sqlbus_retention_expired_total", "counter",
         "Failed messages deleted by the retention sweep."},
    };
    const sb_loops_state *l = &s->loops;
    const int64_t v[] = {l->passes,  l->rows,   l->messages, l->errors,
                         l->failing, l->sweeps, l->expired};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        family(b, f[k].name, f[k].type, f[k].help);
        if (s->loops_ok)
            sample(b, f[k].name, NULL, NULL, NULL, NULL, v[k]);
    }
    family(b, "sqlbus_ingestion_lag_seconds", "gauge",
           "Age of the oldest row waiting in the dead-letter queue (0 when "
           "empty).");
    if (s->lag_ok)
        sample_seconds(b, "sqlbus_ingestion_lag_seconds", NULL, NULL,
                       (s->lag_ms < 0 ? 0 : s->lag_ms) * 1000);
}

/* Issue 22: the health-check e-mails (notify.h). */
static void notifications(sb_buf *b, const sb_metrics_snapshot *s)
{
    static const struct {
        const char *name, *help;
    } f[] = {
        {"sqlbus_notify_evaluations_total",
         "Evaluations of sqlbus's own checks with e-mail notifications on."},
        {"sqlbus_notify_sent_total",
         "Health-check notifications the SMTP relay took."},
        {"sqlbus_notify_failed_total",
         "Health-check notifications the SMTP relay did not take (each is "
         "tried again at the next evaluation)."},
    };
    const int64_t v[] = {s->notify.evaluations, s->notify.sent,
                         s->notify.failed};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        family(b, f[k].name, "counter", f[k].help);
        if (s->notify_ok)
            sample(b, f[k].name, NULL, NULL, NULL, NULL, v[k]);
    }
}

static void failed(sb_buf *b, const sb_metrics_snapshot *s)
{
    static const char *const status[] = {"unresolved", "retryIssued",
                                         "resolved", "archived"};
    family(b, "sqlbus_failed_messages", "gauge",
           "Failed messages in the error store, by status.");
    for (int i = 0; s->failed_ok && i < 4; i++)
        sample(b, "sqlbus_failed_messages", "status", status[i], NULL, NULL,
               s->failed[i]);
    family(b, "sqlbus_failed_imports", "gauge",
           "Dead-letter rows kept as failed imports (not ingestible).");
    if (s->imports_ok)
        sample(b, "sqlbus_failed_imports", NULL, NULL, NULL, NULL,
               s->failed_imports);
}

static void recovery(sb_buf *b, const sb_metrics_snapshot *s)
{
    static const char *const state[] = {"outstanding", "stale", "orphaned",
                                        "dispatched"};
    family(b, "sqlbus_recovery_registrations", "gauge",
           "Unexpired recovery registrations, by state.");
    for (int i = 0; s->recovery_ok && i < 4; i++)
        sample(b, "sqlbus_recovery_registrations", "state", state[i], NULL,
               NULL, s->registrations[i]);
    family(b, "sqlbus_channel_waiters", "gauge",
           "Waiters alive in any process (registrations with a live "
           "waiter).");
    if (s->recovery_ok)
        sample(b, "sqlbus_channel_waiters", NULL, NULL, NULL, NULL, s->waiters);
    family(b, "sqlbus_recovery_dispatched", "gauge",
           "Registrations handed to recovery and not completed yet, by "
           "recovery handler.");
    for (size_t i = 0; s->recovery_ok && i < s->n_dispatched; i++)
        sample(b, "sqlbus_recovery_dispatched", "handler",
               s->dispatched[i].handler, NULL, NULL, s->dispatched[i].n);
    if (s->recovery_ok && s->dispatched_other > 0)
        sample(b, "sqlbus_recovery_dispatched", "handler", "(other)", NULL,
               NULL, s->dispatched_other);
}

static void http(sb_buf *b, const sb_metrics_snapshot *s)
{
    family(b, "sqlbus_http_requests_total", "counter",
           "HTTP requests answered, by route pattern and status.");
    for (size_t r = 0; r < s->n_http; r++) {
        const sb_metrics_http_route *h = &s->http[r];
        char st[16];
        for (size_t i = 0; i < h->n_status; i++) {
            snprintf(st, sizeof st, "%u", h->status[i]);
            sample(b, "sqlbus_http_requests_total", "route", h->pattern,
                   "status", st, h->requests[i]);
        }
        if (h->other_status > 0)
            sample(b, "sqlbus_http_requests_total", "route", h->pattern,
                   "status", "other", h->other_status);
    }
    family(b, "sqlbus_http_request_duration_seconds", "histogram",
           "Time to answer HTTP requests, by route pattern.");
    for (size_t r = 0; r < s->n_http; r++)
        histogram(b, "sqlbus_http_request_duration_seconds", "route",
                  s->http[r].pattern, &s->http[r].duration);
}

/* The oldest xmin holder of a PostgreSQL bus (docs/backends.md): its age
 * in transactions and seconds, and who it is, as an info gauge. */
static void xmin(sb_buf *b, const sb_metrics_snapshot *s)
{
    const sb_xmin_holder *h = &s->xmin;
    int have = s->xmin_applies && s->xmin_ok && h->found;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", have ? h->pid : 0);
    family(b, "sqlbus_postgres_oldest_xmin_age_transactions", "gauge",
           "Transactions since the oldest xmin or xid still held by a "
           "backend, replication slot or prepared transaction (0: none).");
    if (s->xmin_applies && s->xmin_ok)
        sample(b, "sqlbus_postgres_oldest_xmin_age_transactions", "kind",
               have ? h->kind : "none", "pid", pid, have ? h->xmin_age : 0);
    family(b, "sqlbus_postgres_oldest_xmin_age_seconds", "gauge",
           "Seconds since the transaction holding the oldest xmin began "
           "(a slot has no such time: no sample).");
    if (s->xmin_applies && s->xmin_ok && (!have || h->age_ms >= 0))
        sample_seconds(b, "sqlbus_postgres_oldest_xmin_age_seconds", "pid", pid,
                       have ? h->age_ms * 1000 : 0);
    family(b, "sqlbus_postgres_oldest_xmin_holder_info", "gauge",
           "1 for the holder of the oldest xmin: its kind, pid, name "
           "(application_name, slot or gid), role and state.");
    if (have) {
        const char *k[] = {"kind", "pid", "name", "user", "state"};
        const char *v[] = {h->kind, pid, h->name, h->user, h->state};
        sb__buf_puts(b, "sqlbus_postgres_oldest_xmin_holder_info{");
        for (int i = 0; i < 5; i++) {
            sb__buf_printf(b, "%s%s=\"", i ? "," : "", k[i]);
            sb__prom_label_value(b, v[i]);
            sb__buf_puts(b, "\"");
        }
        sb__buf_puts(b, "} 1\n");
    }
}

int sb__metrics_text(const sb_metrics_snapshot *s, sb_buf *out)
{
    depth(out, s);
    counters(out, s);
    by_type(out, s);
    totals(out, s);
    ingestion(out, s);
    notifications(out, s);
    failed(out, s);
    recovery(out, s);
    http(out, s);
    xmin(out, s);
    static const char *const source[] = {
        "queues", "failed_messages", "failed_imports", "recovery",
        "loops",  "counts",          "postgres_xmin"};
    const int up[] = {s->queues_ok, s->failed_ok, s->imports_ok, s->recovery_ok,
                      s->loops_ok,  s->totals_ok, s->xmin_ok};
    family(out, "sqlbus_scrape_source_up", "gauge",
           "1 when this scrape could read the source (0: its metrics are "
           "left out).");
    for (int i = 0; i < (s->xmin_applies ? 7 : 6); i++)
        sample(out, "sqlbus_scrape_source_up", "source", source[i], NULL, NULL,
               up[i] != 0);
    return out->failed;
}
