/* notify.c - the health-check notification thread of `sqlbus serve` (see
 * notify.h and docs/internals/liveness.md, "Notifications"). */
#include "server/notify.h"

#include "core/core.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "server/api.h"
#include "server/checks.h"
#include "server/isotime.h"
#include "server/mail.h"

#define TEXT_MAX ((size_t)16 << 10)

struct sb_notify {
    sb_api api;
    int64_t interval_ms;
    sb_log_fn log;
    void *log_user;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    atomic_int abandon; /* set with stopping: a send under way gives up */
    sb_notify_state st; /* under mu */
    /* the thread's own */
    int notified[SB_CHECKS]; /* failing, as last mailed (0 at start) */
    json_t *settings;        /* as last read: the database may be down */
    int send_failing;        /* the last send failed (logged once) */
    int read_failing;        /* the settings could not be read (logged) */
};

static void say(sb_notify *n, int level, const char *what, const char *why)
{
    if (n->log == NULL)
        return;
    char line[1024];
    snprintf(line, sizeof line, "%s%s", what, why);
    n->log(level, "notify", line, n->log_user);
}

/* Wait up to `ms` or until stopping; returns whether stopping. */
static int nap(sb_notify *n, int64_t ms)
{
    int64_t until = sb__mono_us() + ms * 1000;
    pthread_mutex_lock(&n->mu);
    while (!n->stopping && sb__mono_us() < until)
        sb__cond_wait_until(&n->cv, &n->mu, until);
    int stop = n->stopping;
    pthread_mutex_unlock(&n->mu);
    return stop;
}

/* The settings as stored now, or as last read when the store cannot be
 * read (the outage may be what is to be mailed); NULL when none could be
 * read yet. */
static const json_t *settings(sb_notify *n)
{
    json_t *s = NULL;
    sb_error err;
    if (sb__mail_load(n->api.bus, &s, &err) == SB_OK) {
        json_decref(n->settings);
        n->settings = s;
        if (n->read_failing)
            say(n, SB_LOG_INFO, "the e-mail settings can be read again", "");
        n->read_failing = 0;
    } else if (!n->read_failing) {
        n->read_failing = 1;
        say(n, SB_LOG_WARN,
            "the e-mail settings cannot be read; using the last ones read: ",
            err.message);
    }
    return n->settings;
}

static int enabled(const json_t *s)
{
    const char *server = json_string_value(json_object_get(s, "smtp_server"));
    return json_is_true(json_object_get(s, "enabled")) && server != NULL &&
           server[0] != '\0';
}

/* The message for the changes of c[] from what was mailed. */
static void compose(const sb_notify *n, const sb_check c[SB_CHECKS],
                    const char *host, sb_buf *subject, sb_buf *text)
{
    int changed = 0, failing = 0, applying = 0, last = -1;
    for (int i = 0; i < SB_CHECKS; i++) {
        if (!c[i].applies)
            continue;
        applying++;
        failing += c[i].failing;
        if (c[i].failing != n->notified[i]) {
            changed++;
            last = i;
        }
    }
    if (changed == 1)
        sb__buf_printf(subject, "[sqlbus] %s: %s %s", host, c[last].name,
                       c[last].failing ? "failed" : "passes again");
    else
        sb__buf_printf(subject, "[sqlbus] %s: %d health checks changed", host,
                       changed);
    char at[40];
    sb__iso_time(sb__wall_us(), at);
    sb__buf_printf(text,
                   "sqlbus serve on %s (%s) found %s health check%s changed "
                   "at %s:\n\n",
                   host, n->api.backend, changed == 1 ? "this" : "these",
                   changed == 1 ? "" : "s", at);
    for (int i = 0; i < SB_CHECKS; i++) {
        if (!c[i].applies || c[i].failing == n->notified[i])
            continue;
        sb__buf_printf(text, "%s  %s (%s)\n", c[i].failing ? "FAIL" : "PASS",
                       c[i].name, c[i].category);
        if (c[i].failing)
            sb__buf_printf(text, "      %s\n", c[i].reason);
    }
    sb__buf_printf(text,
                   "\nFailing now: %d of %d checks. ServicePulse's Custom "
                   "Checks screen, or GET /api/customchecks, lists them.\n",
                   failing, applying);
}

/* One evaluation: mail the changes, if any, when notifications are on. */
static void evaluate(sb_notify *n)
{
    const json_t *s = settings(n);
    if (s == NULL || !enabled(s))
        return;
    sb_check c[SB_CHECKS];
    sb__checks_evaluate(&n->api, c);
    pthread_mutex_lock(&n->mu);
    n->st.evaluations++;
    pthread_mutex_unlock(&n->mu);
    int changed = 0;
    for (int i = 0; i < SB_CHECKS; i++)
        changed += c[i].applies && c[i].failing != n->notified[i];
    if (changed == 0)
        return;
    char host[256], host_id[37];
    sb__checks_origin(host, host_id);
    sb_buf subject, text;
    sb__buf_init(&subject, 512);
    sb__buf_init(&text, TEXT_MAX);
    compose(n, c, host, &subject, &text);
    sb_error err;
    int rc = subject.failed || text.failed
                 ? sb__err(&err, SB_NOMEM, NULL, "out of memory")
                 : sb__mail_send(s, subject.data, text.data, &n->abandon, &err);
    sb__buf_free(&subject);
    sb__buf_free(&text);
    if (rc == SB_CLOSED)
        return; /* stopping */
    pthread_mutex_lock(&n->mu);
    if (rc == SB_OK)
        n->st.sent++;
    else
        n->st.failed++;
    pthread_mutex_unlock(&n->mu);
    if (rc != SB_OK) {
        if (!n->send_failing)
            say(n, SB_LOG_WARN,
                "a health-check notification was not sent (tried again at "
                "the next check): ",
                err.message);
        n->send_failing = 1;
        return;
    }
    if (n->send_failing)
        say(n, SB_LOG_INFO, "health-check notifications are sent again", "");
    n->send_failing = 0;
    for (int i = 0; i < SB_CHECKS; i++)
        if (c[i].applies)
            n->notified[i] = c[i].failing;
}

static void *run(void *arg)
{
    sb_notify *n = arg;
    while (!nap(n, n->interval_ms))
        evaluate(n);
    return NULL;
}

int sb__notify_start(const sb_api *a, int64_t interval_ms, sb_log_fn log,
                     void *log_user, sb_notify **out, sb_error *err)
{
    *out = NULL;
    if (interval_ms == 0)
        interval_ms = SB_SERVER_CHECK_INTERVAL_MS;
    if (interval_ms < SB_SERVER_CHECK_INTERVAL_MIN_MS ||
        interval_ms > SB_SERVER_CHECK_INTERVAL_MAX_MS)
        return sb__err(err, SB_INVALID, "check_interval",
                       "check_interval must be %d ms to %lld ms",
                       SB_SERVER_CHECK_INTERVAL_MIN_MS,
                       (long long)SB_SERVER_CHECK_INTERVAL_MAX_MS);
    int rc = sb__mail_global_init(err);
    if (rc != SB_OK)
        return rc;
    sb_notify *n = sb__calloc(1, sizeof *n);
    if (n == NULL) {
        sb__mail_global_cleanup();
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    n->api = *a;
    n->interval_ms = interval_ms;
    n->log = log;
    n->log_user = log_user;
    pthread_mutex_init(&n->mu, NULL);
    sb__cond_init_monotonic(&n->cv);
    if (pthread_create(&n->thread, NULL, run, n) != 0) {
        pthread_cond_destroy(&n->cv);
        pthread_mutex_destroy(&n->mu);
        sb__free(n);
        sb__mail_global_cleanup();
        return sb__err(err, SB_NOMEM, NULL,
                       "the notification thread could not start");
    }
    *out = n;
    return SB_OK;
}

void sb__notify_state(sb_notify *n, sb_notify_state *out)
{
    memset(out, 0, sizeof *out);
    if (n == NULL)
        return;
    pthread_mutex_lock(&n->mu);
    *out = n->st;
    pthread_mutex_unlock(&n->mu);
}

int sb__notify_test(const sb_api *a, sb_error *err)
{
    json_t *s = NULL;
    int rc = sb__mail_load(a->bus, &s, err);
    if (rc != SB_OK)
        return rc;
    char host[256], host_id[37], at[40], subject[320], text[1024];
    sb__checks_origin(host, host_id);
    sb__iso_time(sb__wall_us(), at);
    snprintf(subject, sizeof subject, "[sqlbus] %s: test notification", host);
    snprintf(text, sizeof text,
             "This is a test notification from sqlbus serve on %s (%s), sent "
             "at %s.\n\nHealth-check notifications are %s: while they are "
             "on, sqlbus mails these addresses when one of its own checks "
             "starts failing and when it passes again.\n",
             host, a->backend, at,
             enabled(s) ? "on"
                        : "off (turn them on in ServicePulse, or POST "
                          "/api/notifications/email/toggle)");
    rc = sb__mail_send(s, subject, text, NULL, err);
    json_decref(s);
    return rc;
}

void sb__notify_stop(sb_notify *n)
{
    if (n == NULL)
        return;
    pthread_mutex_lock(&n->mu);
    n->stopping = 1;
    atomic_store(&n->abandon, 1);
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    json_decref(n->settings);
    sb__free(n);
    sb__mail_global_cleanup();
}
