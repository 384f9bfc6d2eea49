/* listen.c - a thread with its own connection that turns PostgreSQL
 * NOTIFY on one channel into a local callback: a worker's pump (T13), the
 * channel's targeted scans (C14). */
#include "transport/transport.h"

#include <string.h>

struct sb_wake_listener {
    sb_bus *bus;
    char *channel;
    char *filter; /* payload to react to, or NULL for any */
    void (*fn)(void *user, const char *payload);
    void *user;
    atomic_int stop;
    atomic_int up; /* listening, proven by a self-sent notification */
    pthread_t thread;
};

/* Whether a wake-up concerns this listener: its queue (the payload up to
 * SB_WAKE_ORIGIN_SEP) matches the filter, and it does not come from this
 * bus's own publishes, which woke its workers in process already. An
 * empty payload (a wake-up of every queue) always does. */
static int wanted(const sb_wake_listener *l, char *payload)
{
    char *sep = strchr(payload, SB_WAKE_ORIGIN_SEP);
    if (sep != NULL) {
        if (strcmp(sep + 1, l->bus->origin) == 0)
            return 0;
        *sep = '\0';
    }
    return l->filter == NULL || payload[0] == '\0' ||
           strcmp(payload, l->filter) == 0;
}

static void *listen_main(void *arg)
{
    sb_wake_listener *l = arg;
    const sb_db_config *cfg = sb__pool_config(l->bus->pool);
    sb_listener *conn = NULL;
    int64_t backoff = 100000;
    char payload[512];
    while (!atomic_load(&l->stop)) {
        sb_error err;
        if (conn == NULL) {
            if (sb__listener_open(cfg, l->channel, &conn, &err) != SB_OK) {
                sb__log(&l->bus->log, SB_LOG_DEBUG, "listen",
                        "LISTEN failed (%s); polling meanwhile", err.message);
                for (int64_t t = 0; t < backoff && !atomic_load(&l->stop);
                     t += 50000)
                    sb__sleep_us(50000);
                backoff = backoff * 2 > 5000000 ? 5000000 : backoff * 2;
                continue;
            }
            backoff = 100000;
            atomic_store(&l->up, 1);
            /* Anything published while we were not listening: poll now. */
            l->fn(l->user, "");
        }
        int rc = sb__listener_wait(conn, 200, payload, sizeof payload, &err);
        if (rc == SB_OK) {
            if (wanted(l, payload))
                l->fn(l->user, payload);
        } else if (rc != SB_TIMEOUT) {
            atomic_store(&l->up, 0);
            sb__listener_close(conn);
            conn = NULL;
        }
    }
    sb__listener_close(conn);
    return NULL;
}

void sb__wake_listener_start(sb_bus *bus, const char *channel,
                             const char *filter,
                             void (*fn)(void *user, const char *payload),
                             void *user, sb_wake_listener **out)
{
    *out = NULL;
    sb_wake_listener *l = sb__calloc(1, sizeof *l);
    if (l == NULL)
        return;
    l->bus = bus;
    l->channel = sb__strdup(channel);
    l->filter = filter ? sb__strdup(filter) : NULL;
    l->fn = fn;
    l->user = user;
    if (l->channel == NULL || (filter != NULL && l->filter == NULL) ||
        pthread_create(&l->thread, NULL, listen_main, l) != 0) {
        sb__free(l->channel);
        sb__free(l->filter);
        sb__free(l);
        return;
    }
    *out = l;
}

int sb__wake_listener_up(sb_wake_listener *l)
{
    return l != NULL && atomic_load(&l->up);
}

void sb__wake_listener_stop(sb_wake_listener *l)
{
    if (l == NULL)
        return;
    atomic_store(&l->stop, 1);
    pthread_join(l->thread, NULL);
    sb__free(l->channel);
    sb__free(l->filter);
    sb__free(l);
}
