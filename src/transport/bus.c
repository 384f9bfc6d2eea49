/* bus.c - the bus handle: options, the connection pool, the statement set
 * and in-process wake-ups. */
#define _GNU_SOURCE
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_PAYLOAD_MAX (16ULL * 1024 * 1024)
#define MAX_STATEMENT_TIMEOUT_MS (24LL * 3600 * 1000)

static int copy_opts(sb_bus *bus, const sb_options *o, sb_error *err)
{
    const char *prefix = o->table_prefix ? o->table_prefix : "sqlbus_";
    int rc =
        sb__validate_identifier(prefix, SB_MAX_PREFIX_LEN, "table_prefix", err);
    if (rc != SB_OK)
        return rc;
    if (o->schema != NULL) {
        rc = sb__validate_identifier(o->schema, 63, "schema", err);
        if (rc != SB_OK)
            return rc;
    }
    const char *dlq =
        o->dead_letter_queue ? o->dead_letter_queue : "deadletter";
    rc = sb_validate_queue_name(dlq, err);
    if (rc != SB_OK) {
        if (err != NULL)
            sb__strlcpy(err->field, "dead_letter_queue", sizeof err->field);
        return rc;
    }
    if (o->pool_size < 0 || o->pool_size > 1000)
        return sb__err(err, SB_INVALID, "pool_size",
                       "pool_size must be 0 (default 8) to 1000 (got %d)",
                       o->pool_size);
    if (o->schema_mode < SB_SCHEMA_AUTO || o->schema_mode > SB_SCHEMA_NONE)
        return sb__err(err, SB_INVALID, "schema_mode",
                       "schema_mode must be AUTO, VERIFY or NONE");
    if (o->durability != SB_DURABILITY_FULL &&
        o->durability != SB_DURABILITY_NORMAL)
        return sb__err(err, SB_INVALID, "durability",
                       "durability must be FULL or NORMAL");
    if (o->counts_flush_ms != -1 && o->counts_flush_ms != 0 &&
        (o->counts_flush_ms < 10 || o->counts_flush_ms > 3600000))
        return sb__err(err, SB_INVALID, "counts_flush_ms",
                       "counts_flush_ms must be 0 (default 1000), 10 to "
                       "3600000, or -1 (never) (got %lld)",
                       (long long)o->counts_flush_ms);
    if (o->busy_timeout_ms < 0 || o->dead_letter_retention_ms < 0)
        return sb__err(err, SB_INVALID,
                       o->busy_timeout_ms < 0 ? "busy_timeout_ms"
                                              : "dead_letter_retention_ms",
                       "durations must not be negative");
    if (o->statement_timeout_ms < 0 ||
        o->statement_timeout_ms > MAX_STATEMENT_TIMEOUT_MS)
        return sb__err(err, SB_INVALID, "statement_timeout_ms",
                       "statement_timeout_ms must be 0 (no limit) to "
                       "%lld (24 h) (got %lld)",
                       (long long)MAX_STATEMENT_TIMEOUT_MS,
                       (long long)o->statement_timeout_ms);
    if (o->heartbeat_interval_ms != -1 && o->heartbeat_interval_ms != 0 &&
        (o->heartbeat_interval_ms < SB_HEARTBEAT_INTERVAL_MIN_MS ||
         o->heartbeat_interval_ms > SB_HEARTBEAT_INTERVAL_MAX_MS))
        return sb__err(
            err, SB_INVALID, "heartbeat_interval_ms",
            "heartbeat_interval_ms must be 0 (default %d), %d to "
            "%d, or -1 (never) (got %lld)",
            SB_HEARTBEAT_INTERVAL_DEFAULT_MS, SB_HEARTBEAT_INTERVAL_MIN_MS,
            SB_HEARTBEAT_INTERVAL_MAX_MS, (long long)o->heartbeat_interval_ms);
    char host[128] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char endpoint[200];
    snprintf(endpoint, sizeof endpoint, "%s:%ld", host, (long)getpid());
    bus->prefix = sb__strdup(prefix);
    bus->dlq = sb__strdup(dlq);
    bus->endpoint = sb__strdup(o->endpoint ? o->endpoint : endpoint);
    bus->host = sb__strdup(host);
    size_t n = strlen(prefix) + 16;
    bus->table = sb__malloc(n);
    bus->channel = sb__malloc(n);
    if (!bus->prefix || !bus->dlq || !bus->endpoint || !bus->host ||
        !bus->table || !bus->channel)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    snprintf(bus->table, n, "%smessages", prefix);
    snprintf(bus->channel, n, "%swake", prefix);
    snprintf(bus->origin, sizeof bus->origin, "%016llx",
             (unsigned long long)sb__random_u64());
    bus->max_payload =
        o->max_payload_bytes ? o->max_payload_bytes : DEFAULT_PAYLOAD_MAX;
    bus->retention_ms = o->dead_letter_retention_ms;
    bus->schema_mode = o->schema_mode;
    bus->notify = o->notify;
    bus->counts_flush_ms = o->counts_flush_ms;
    bus->log.fn = o->log;
    bus->log.user = o->log_user;
    bus->log.level = o->log_level ? o->log_level : SB_LOG_INFO;
    return SB_OK;
}

int sb_open(const sb_options *opts, sb_bus **out, sb_error *err)
{
    sb_error_clear(err);
    if (out == NULL)
        return sb__err(err, SB_INVALID, "out", "out must not be NULL");
    *out = NULL;
    if (opts == NULL || opts->url == NULL)
        return sb__err(err, SB_INVALID, "url", "a database URL is required");
    if (opts->size != 0 && opts->size < SB_OPTIONS_V1_SIZE)
        return sb__err(err, SB_INVALID, "size",
                       "sb_options.size is smaller than any known version");
    /* An older caller's struct ends early: its later fields are defaults. */
    sb_options o;
    memset(&o, 0, sizeof o);
    memcpy(&o, opts,
           opts->size && opts->size < sizeof o ? opts->size : sizeof o);
    opts = &o;
    sb_bus *bus = sb__calloc(1, sizeof *bus);
    if (bus == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    pthread_mutex_init(&bus->wake_mu, NULL);
    int rc = copy_opts(bus, opts, err);
    if (rc == SB_OK)
        rc = sb__counters_new(bus->dlq, &bus->counters, err);
    sb_db_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (rc == SB_OK)
        rc = sb__db_parse_url(opts->url, &cfg, err);
    if (rc == SB_OK) {
        if (opts->durability != SB_DURABILITY_FULL)
            cfg.durability = opts->durability;
        if (opts->busy_timeout_ms > 0)
            cfg.busy_timeout_ms = opts->busy_timeout_ms;
        cfg.statement_timeout_ms = opts->statement_timeout_ms;
        cfg.log = bus->log;
        if (opts->schema != NULL) {
            cfg.schema = sb__strdup(opts->schema);
            if (cfg.schema == NULL)
                rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        }
        bus->dialect = cfg.dialect;
        /* Wake-ups need libpq's LISTEN or SQLite's WAL file: through ODBC
         * the workers and the channel poll (docs/backends.md). */
        if (cfg.odbc)
            bus->notify = -1;
    }
    if (rc == SB_OK)
        rc = sb__pool_new(&cfg, opts->pool_size ? opts->pool_size : 8,
                          &bus->pool, err);
    sb__db_config_free(&cfg);
    if (rc == SB_OK)
        rc = sb__transport_sql_new(bus->dialect, bus->prefix, &bus->sql, err);
    /* Connect once now so a bad URL fails here, not in a worker; a
     * transient failure is retried first, as every transaction's is, so
     * SB_UNAVAILABLE from sb_open means the retries ran out. */
    if (rc == SB_OK)
        rc = sb__pool_connect(bus->pool, NULL, err);
    if (rc == SB_OK && bus->schema_mode != SB_SCHEMA_NONE) {
        rc = sb__bus_ensure_schema(bus, err);
        /* A missing table under VERIFY is re-checked on the next use (T7). */
        if (rc == SB_SCHEMA_MISSING && bus->schema_mode == SB_SCHEMA_VERIFY)
            rc = SB_OK;
    }
    if (rc == SB_OK)
        rc = sb__flusher_start(bus, err);
    if (rc == SB_OK)
        rc = sb__beater_new(bus, opts->heartbeat_interval_ms, err);
    if (rc != SB_OK) {
        sb_close(bus);
        return rc;
    }
    *out = bus;
    return SB_OK;
}

void sb_close(sb_bus *bus)
{
    if (bus == NULL)
        return;
    sb__flusher_stop(bus->flusher);
    sb__beater_free(bus->beater);
    sb__pool_free(bus->pool);
    sb__transport_sql_free(bus->sql);
    if (!bus->counters_borrowed)
        sb__counters_free(bus->counters);
    sb__free(bus->prefix);
    sb__free(bus->table);
    sb__free(bus->channel);
    sb__free(bus->dlq);
    sb__free(bus->endpoint);
    sb__free(bus->host);
    pthread_mutex_destroy(&bus->wake_mu);
    sb__free(bus);
}

/* Public (sqlbus.h): `bus` counts in `owner`'s counters from now on. */
void sb_bus_count_into(sb_bus *bus, sb_bus *owner)
{
    if (bus == NULL || owner == NULL || bus == owner)
        return;
    /* The owner's flusher writes the shared counters: this bus's own
     * flusher would write them twice. It writes what it counted first. */
    sb__flusher_stop(bus->flusher);
    bus->flusher = NULL;
    if (!bus->counters_borrowed)
        sb__counters_free(bus->counters);
    bus->counters = owner->counters;
    bus->counters_borrowed = 1;
}

const char *sb_backend_name(const sb_bus *bus)
{
    return bus == NULL                         ? "none"
           : bus->dialect == SB_DIALECT_SQLITE ? "sqlite"
           : bus->dialect == SB_DIALECT_MSSQL  ? "mssql"
                                               : "postgresql";
}

int64_t sb__bus_now_us(const sb_bus *bus)
{
    return bus->dialect == SB_DIALECT_SQLITE ? sb__wall_us() : 0;
}

void sb__bus_add_waker(sb_bus *bus, sb_waker *w)
{
    pthread_mutex_lock(&bus->wake_mu);
    w->next = bus->wakers;
    bus->wakers = w;
    pthread_mutex_unlock(&bus->wake_mu);
}

void sb__bus_remove_waker(sb_bus *bus, sb_waker *w)
{
    pthread_mutex_lock(&bus->wake_mu);
    for (sb_waker **pp = &bus->wakers; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&bus->wake_mu);
}

void sb__bus_wake_local(sb_bus *bus, const char *queue)
{
    pthread_mutex_lock(&bus->wake_mu);
    for (sb_waker *w = bus->wakers; w; w = w->next)
        if (queue == NULL || strcmp(w->queue, queue) == 0)
            w->fn(w->user);
    pthread_mutex_unlock(&bus->wake_mu);
}
