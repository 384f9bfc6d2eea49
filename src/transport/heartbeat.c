/* heartbeat.c - endpoint liveness (issue 22, docs/internals/liveness.md):
 * the bus's beater, a thread started by the first worker that writes one
 * row per endpoint instance of this process to {prefix}heartbeats every
 * heartbeat_interval_ms, the graceful stop of an instance, and the list,
 * mute and removal of instances. A worker's own paths never touch the
 * table: the beat is one short transaction per interval. */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The namespaces of the name-based UUIDs (fixed: an instance keeps its id
 * across restarts and versions). */
static const uint8_t host_ns[16] = {0x5b, 0x0e, 0x3a, 0x71, 0x2c, 0x94,
                                    0x4d, 0x1f, 0x8e, 0x62, 0x07, 0xc9,
                                    0x3b, 0xa4, 0x55, 0xd0};
static const uint8_t instance_ns[16] = {0xa1, 0x47, 0x0c, 0x9e, 0x63, 0xd2,
                                        0x48, 0x35, 0x9b, 0x1a, 0x7f, 0x20,
                                        0xe8, 0x54, 0xc6, 0x0b};

typedef struct beat_entry {
    char endpoint[201];
    char id[37];
    int refs;   /* workers of this bus running the endpoint */
    int beaten; /* a beat of it was written */
    struct beat_entry *next;
} beat_entry;

struct sb_beater {
    sb_bus *bus;
    int64_t every_us;
    char host_id[37];
    int64_t pid;
    pthread_mutex_t mu; /* the list and the thread's state */
    pthread_cond_t cv;
    /* Endpoints of this bus; one whose `refs` fell to 0 waits for its
     * stop, which only the thread (or sb_close) writes: a worker's stop
     * never waits for the database on liveness's account, and a stop is
     * never followed by a beat of the instance it stopped. */
    beat_entry *entries;
    int checked;  /* the table's presence was looked at */
    int off;      /* no table under SB_SCHEMA_VERIFY: no beats */
    int started;  /* the thread runs */
    int stopping; /* sb_close */
    int wake;     /* a new or stopped endpoint: a pass now */
    int failing;  /* the last pass failed (logged once) */
    pthread_t thread;
};

/* This host's id: the name-based UUID of its name and, when readable, its
 * machine id (containers of one image may share a machine id, not a
 * name). */
static void host_id_of(const char *host, char out[37])
{
    char text[256 + 64] = "";
    char machine[64] = "";
    FILE *f = fopen("/etc/machine-id", "r");
    if (f != NULL) {
        if (fgets(machine, sizeof machine, f) == NULL)
            machine[0] = '\0';
        fclose(f);
        machine[strcspn(machine, "\r\n")] = '\0';
    }
    int n = snprintf(text, sizeof text, "%s\n%s", host, machine);
    size_t len = n < 0                     ? 0
                 : (size_t)n < sizeof text ? (size_t)n
                                           : sizeof text - 1;
    sb__uuid3(host_ns, text, len, out);
}

static void instance_id_of(const char *endpoint, const char *host_id,
                           char out[37])
{
    char text[201 + 40];
    int n = snprintf(text, sizeof text, "%s\n%s", endpoint, host_id);
    size_t len = n < 0                     ? 0
                 : (size_t)n < sizeof text ? (size_t)n
                                           : sizeof text - 1;
    sb__uuid3(instance_ns, text, len, out);
}

int sb__beater_new(sb_bus *bus, int64_t interval_ms, sb_error *err)
{
    bus->beater = NULL;
    if (interval_ms < 0)
        return SB_OK;
    sb_beater *b = sb__calloc(1, sizeof *b);
    if (b == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    b->bus = bus;
    b->every_us =
        (interval_ms ? interval_ms : SB_HEARTBEAT_INTERVAL_DEFAULT_MS) * 1000;
    b->pid = (int64_t)getpid();
    host_id_of(bus->host, b->host_id);
    pthread_mutex_init(&b->mu, NULL);
    sb__cond_init_monotonic(&b->cv);
    bus->beater = b;
    return SB_OK;
}

/* ---- the beat ---- */

typedef struct beat_item {
    char id[37];
    char endpoint[201];
    int beat; /* write a beat */
    int stop; /* then its stop */
} beat_item;

typedef struct beat_ctx {
    sb_beater *b;
    size_t n;
    beat_item *items;
} beat_ctx;

static int beat_tx(sb_conn *c, void *arg, sb_error *err)
{
    beat_ctx *x = arg;
    sb_bus *bus = x->b->bus;
    int64_t now = sb__bus_now_us(bus);
    int rc = SB_OK;
    for (size_t i = 0; rc == SB_OK && i < x->n; i++) {
        const beat_item *it = &x->items[i];
        if (it->beat) {
            sb_value p[7] = {
                sb__v_text(it->id),    sb__v_text(it->endpoint),
                sb__v_text(bus->host), sb__v_text(x->b->host_id),
                sb__v_int(x->b->pid),  sb__v_int(x->b->every_us / 1000),
                sb__v_int(now)};
            rc = sb__query(c, bus->sql->heartbeat_beat, p, 7, NULL, NULL, err);
        }
        if (rc == SB_OK && it->stop) {
            sb_value p[3] = {sb__v_text(it->id), sb__v_int(x->b->pid),
                             sb__v_int(now)};
            rc = sb__query(c, bus->sql->heartbeat_stop, p, 3, NULL, NULL, err);
        }
    }
    return rc;
}

/* One pass: a beat for every running endpoint and the stop of every
 * stopped one (all of them at close), in one transaction; the stopped
 * ones are forgotten whatever the outcome (a stop not written leaves the
 * grace to tell). */
static void pass(sb_beater *b, int closing)
{
    pthread_mutex_lock(&b->mu);
    size_t n = 0;
    for (beat_entry *e = b->entries; e; e = e->next)
        n++;
    beat_ctx x = {b, 0, n > 0 ? sb__calloc(n, sizeof *x.items) : NULL};
    for (beat_entry *e = b->entries; x.items && e; e = e->next) {
        beat_item *it = &x.items[x.n++];
        memcpy(it->id, e->id, sizeof it->id);
        memcpy(it->endpoint, e->endpoint, sizeof it->endpoint);
        it->stop = closing || e->refs == 0;
        /* One that stops before its first beat (a short run) is written
         * first, so it shows as having run and stopped. */
        it->beat = !it->stop || !e->beaten;
    }
    pthread_mutex_unlock(&b->mu);
    if (n > 0 && x.items == NULL) {
        sb__log(&b->bus->log, SB_LOG_WARN, "heartbeat",
                "no memory for this interval's beat");
        return;
    }
    if (x.n > 0) {
        sb_error err;
        sb_retry_policy policy = {.max_attempts = closing ? 1 : 2};
        int rc = sb__db_run_tx(b->bus->pool, &policy, beat_tx, &x, &err);
        if (rc != SB_OK && (!b->failing || closing))
            sb__log(&b->bus->log, SB_LOG_WARN, "heartbeat",
                    "this process's endpoints could not %s (%s: %s); "
                    "others see them dead once their last beat is %d "
                    "intervals old",
                    closing ? "be marked stopped" : "beat", sb_strerror(rc),
                    err.message, SB_HEARTBEAT_GRACE_INTERVALS);
        else if (rc == SB_OK && b->failing)
            sb__log(&b->bus->log, SB_LOG_INFO, "heartbeat",
                    "this process's endpoints beat again");
        b->failing = rc != SB_OK;
    }
    /* Forget the stopped endpoints this pass stopped (unless a worker
     * registered one again meanwhile: it beats at the next pass); the
     * others have beaten once this pass wrote. */
    pthread_mutex_lock(&b->mu);
    for (beat_entry **pp = &b->entries; *pp != NULL;) {
        beat_entry *e = *pp;
        int stopped = 0;
        for (size_t i = 0; i < x.n; i++) {
            if (strcmp(x.items[i].id, e->id) != 0)
                continue;
            stopped = x.items[i].stop;
            e->beaten |= !b->failing && x.items[i].beat;
        }
        if (stopped && (closing || e->refs == 0)) {
            *pp = e->next;
            sb__free(e);
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&b->mu);
    sb__free(x.items);
}

static void *beater_main(void *arg)
{
    sb_beater *b = arg;
    int64_t next = sb__mono_us();
    for (;;) {
        pthread_mutex_lock(&b->mu);
        while (!b->stopping && !b->wake && sb__mono_us() < next)
            sb__cond_wait_until(&b->cv, &b->mu, next);
        int stop = b->stopping;
        int woken = b->wake;
        b->wake = 0;
        pthread_mutex_unlock(&b->mu);
        if (stop)
            break;
        pass(b, 0);
        /* A wake-up (an endpoint added or stopped) keeps the schedule. */
        if (!woken || sb__mono_us() >= next)
            next = sb__mono_us() + b->every_us;
    }
    return NULL;
}

/* Whether {p}heartbeats exists (1), does not (0), or could not be read
 * (taken as present: the beat itself will say what is wrong). */
static int table_present(sb_bus *bus)
{
    char name[SB_MAX_PREFIX_LEN + 16];
    snprintf(name, sizeof name, "%sheartbeats", bus->prefix);
    sb_error err;
    sb_conn *c = NULL;
    if (sb__pool_acquire(bus->pool, 5000, &c, &err) != SB_OK)
        return 1;
    sb_value p = sb__v_text(name);
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->columns, &p, 1, &rows, NULL, &err);
    sb__pool_release(bus->pool, c);
    int present = rc != SB_OK || rows->nrows > 0;
    sb__rows_free(rows);
    return present;
}

void sb__beat_register(sb_bus *bus, const char *endpoint)
{
    sb_beater *b = bus->beater;
    if (b == NULL || bus->schema_mode == SB_SCHEMA_NONE)
        return;
    pthread_mutex_lock(&b->mu);
    if (!b->checked) {
        /* Once, before the first beat: a store whose migrations own the
         * schema may lack the table (as {p}counts, counts.c). */
        b->checked = 1;
        if (bus->schema_mode == SB_SCHEMA_VERIFY && !table_present(bus)) {
            b->off = 1;
            sb__log(&bus->log, SB_LOG_WARN, "heartbeat",
                    "table %sheartbeats does not exist, so this process's "
                    "endpoints do not beat; create it from `sqlbus schema "
                    "print`",
                    bus->prefix);
        }
    }
    if (b->off || b->stopping) {
        pthread_mutex_unlock(&b->mu);
        return;
    }
    beat_entry *e = b->entries;
    while (e != NULL && strcmp(e->endpoint, endpoint) != 0)
        e = e->next;
    if (e != NULL) {
        if (e->refs++ == 0) { /* its stop may be under way: beat again */
            b->wake = 1;
            pthread_cond_signal(&b->cv);
        }
        pthread_mutex_unlock(&b->mu);
        return;
    }
    e = sb__calloc(1, sizeof *e);
    if (e == NULL) {
        pthread_mutex_unlock(&b->mu);
        sb__log(&bus->log, SB_LOG_WARN, "heartbeat",
                "no memory to register endpoint %s: it does not beat",
                endpoint);
        return;
    }
    sb__strlcpy(e->endpoint, endpoint, sizeof e->endpoint);
    instance_id_of(e->endpoint, b->host_id, e->id);
    e->refs = 1;
    e->next = b->entries;
    b->entries = e;
    b->wake = 1;
    if (!b->started) {
        b->started = pthread_create(&b->thread, NULL, beater_main, b) == 0;
        if (!b->started)
            sb__log(&bus->log, SB_LOG_WARN, "heartbeat",
                    "could not start the heartbeat thread: this process's "
                    "endpoints do not beat");
    }
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void sb__beat_unregister(sb_bus *bus, const char *endpoint)
{
    sb_beater *b = bus->beater;
    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mu);
    beat_entry *e = b->entries;
    while (e != NULL && strcmp(e->endpoint, endpoint) != 0)
        e = e->next;
    /* The last worker of the endpoint: it is dead now, not after the
     * grace; the thread writes the stop at once. */
    if (e != NULL && e->refs > 0 && --e->refs == 0) {
        b->wake = 1;
        pthread_cond_signal(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

void sb__beater_free(sb_beater *b)
{
    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mu);
    b->stopping = 1;
    pthread_cond_signal(&b->cv);
    int started = b->started;
    pthread_mutex_unlock(&b->mu);
    if (started)
        pthread_join(b->thread, NULL);
    /* This bus beats no more: every endpoint it beat for is stopped. */
    if (b->entries != NULL)
        pass(b, 1);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    sb__free(b);
}

/* ---- the list, mute and removal ---- */

typedef struct list_ctx {
    sb_bus *bus;
    sb_rows *rows;
} list_ctx;

static int list_tx(sb_conn *c, void *arg, sb_error *err)
{
    list_ctx *x = arg;
    sb__rows_free(x->rows);
    x->rows = NULL;
    sb_value p = sb__v_int(sb__bus_now_us(x->bus));
    return sb__query(c, x->bus->sql->heartbeat_list, &p, 1, &x->rows, NULL,
                     err);
}

static void text_into(char *dst, size_t cap, const char *s)
{
    sb__strlcpy(dst, s != NULL ? s : "", cap);
}

/* Row `r` of heartbeat_list into `h`. */
static void read_row(const sb_rows *rows, size_t r, sb_heartbeat *h)
{
    h->size = sizeof *h;
    text_into(h->id, sizeof h->id, sb__rows_text(rows, r, 0));
    text_into(h->endpoint, sizeof h->endpoint, sb__rows_text(rows, r, 1));
    text_into(h->host, sizeof h->host, sb__rows_text(rows, r, 2));
    text_into(h->host_id, sizeof h->host_id, sb__rows_text(rows, r, 3));
    h->pid = sb__rows_int(rows, r, 4);
    h->interval_ms = sb__rows_int(rows, r, 5);
    h->started_us = sb__rows_int(rows, r, 6);
    h->last_beat_us = sb__rows_int(rows, r, 7);
    h->stopped_us = sb__rows_at(rows, r, 8)->type == SB_V_NULL
                        ? 0
                        : sb__rows_int(rows, r, 8);
    h->monitored = sb__rows_int(rows, r, 9) != 0;
    h->now_us = sb__rows_int(rows, r, 10);
    int64_t interval =
        h->interval_ms > 0 ? h->interval_ms : SB_HEARTBEAT_INTERVAL_DEFAULT_MS;
    int64_t grace_us = interval * 1000 * SB_HEARTBEAT_GRACE_INTERVALS;
    h->alive = h->stopped_us == 0 && h->now_us - h->last_beat_us <= grace_us;
}

int sb_heartbeat_list(sb_bus *bus, sb_heartbeat ***out, size_t *n_out,
                      sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    list_ctx x = {bus, NULL};
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, list_tx, &x, err);
    size_t n = rc == SB_OK ? x.rows->nrows : 0;
    sb_heartbeat **list = NULL;
    if (n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        for (size_t i = 0; list != NULL && i < n; i++)
            read_row(x.rows, i, list[i]);
    }
    sb__rows_free(x.rows);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = n;
    return SB_OK;
}

typedef struct change_ctx {
    sb_bus *bus;
    const char *sql;
    sb_value p[2];
    size_t np;
    int64_t changed;
} change_ctx;

static int change_tx(sb_conn *c, void *arg, sb_error *err)
{
    change_ctx *x = arg;
    return sb__query(c, x->sql, x->p, x->np, NULL, &x->changed, err);
}

/* Mute, unmute or remove instance `id` (already checked). */
static int change(sb_bus *bus, const char *sql, const char *id, int monitored,
                  size_t np, sb_error *err)
{
    change_ctx x = {bus, sql, {sb__v_text(id), sb__v_int(monitored)}, np, 0};
    int rc = sb__bus_ensure_schema(bus, err);
    if (rc == SB_OK)
        rc = sb__db_run_tx(bus->pool, NULL, change_tx, &x, err);
    if (rc == SB_OK && x.changed == 0)
        rc = sb__err(err, SB_NOTFOUND, "id", "no endpoint instance %s", id);
    return rc;
}

static int check_id(sb_bus *bus, const char *id, char out[37], sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    if (id == NULL || strlen(id) != 36 || sb__uuid_normalize(id, out) != SB_OK)
        return sb__err(err, SB_INVALID, "id",
                       "id must be a UUID (36 characters)");
    return SB_OK;
}

int sb_heartbeat_monitor(sb_bus *bus, const char *id, int monitored,
                         sb_error *err)
{
    char canon[37];
    int rc = check_id(bus, id, canon, err);
    if (rc != SB_OK)
        return rc;
    return change(bus, bus->sql->heartbeat_monitor, canon, monitored ? 1 : 0, 2,
                  err);
}

int sb_heartbeat_remove(sb_bus *bus, const char *id, sb_error *err)
{
    char canon[37];
    int rc = check_id(bus, id, canon, err);
    if (rc != SB_OK)
        return rc;
    return change(bus, bus->sql->heartbeat_remove, canon, 0, 1, err);
}
