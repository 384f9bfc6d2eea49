/* xmin.c - what holds back PostgreSQL's xmin horizon (sb_xmin_holder_get):
 * the oldest backend, replication slot or prepared transaction whose xmin
 * keeps the versions and index entries of acked and claimed rows alive,
 * and the rate-limited warning that names it (docs/backends.md). */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

#define XMIN_WARN_EVERY_US 60000000LL

static void copy_cell(const sb_rows *rows, size_t col, char *dst, size_t cap)
{
    const char *v = sb__rows_text(rows, 0, col);
    sb__strlcpy(dst, v ? v : "", cap);
}

static void warn(sb_bus *bus, const sb_xmin_holder *h, int64_t warn_after_ms)
{
    if (warn_after_ms < 0 || (h->age_ms >= 0 && h->age_ms < warn_after_ms))
        return;
    int64_t now = sb__mono_us();
    int64_t last = atomic_load(&bus->xmin_warned_us);
    if (last != 0 && now - last < XMIN_WARN_EVERY_US &&
        atomic_load(&bus->xmin_warned_pid) == h->pid)
        return;
    if (!atomic_compare_exchange_strong(&bus->xmin_warned_us, &last, now))
        return; /* another thread warns */
    atomic_store(&bus->xmin_warned_pid, h->pid);
    char age[48] = "";
    if (h->age_ms >= 0)
        snprintf(age, sizeof age, ", transaction open %lld s",
                 (long long)(h->age_ms / 1000));
    sb__log(&bus->log, SB_LOG_WARN, "transport",
            "%s pid %d (name '%s', user '%s', state '%s'%s) holds the "
            "oldest xmin, %lld transactions old: the versions and index "
            "entries of acked and claimed messages cannot be removed "
            "until it ends, and scans of %s walk them",
            h->kind, h->pid, h->name, h->user, h->state, age,
            (long long)h->xmin_age, bus->table);
}

int sb__xmin_holder_on(sb_bus *bus, sb_conn *c, int64_t warn_after_ms,
                       sb_xmin_holder *out, sb_error *err)
{
    size_t size = out->size;
    memset(out, 0, sizeof *out);
    out->size = size;
    sb_rows *rows = NULL;
    int rc = sb__query(c, bus->sql->xmin_holder, NULL, 0, &rows, NULL, err);
    if (rc != SB_OK || rows->nrows == 0) {
        sb__rows_free(rows);
        return rc;
    }
    out->found = 1;
    copy_cell(rows, 0, out->kind, sizeof out->kind);
    out->pid = (int)sb__rows_int(rows, 0, 1);
    copy_cell(rows, 2, out->name, sizeof out->name);
    copy_cell(rows, 3, out->state, sizeof out->state);
    copy_cell(rows, 4, out->user, sizeof out->user);
    out->xmin_age = sb__rows_int(rows, 0, 5);
    out->age_ms = sb__rows_int(rows, 0, 6);
    sb__rows_free(rows);
    warn(bus, out, warn_after_ms);
    return SB_OK;
}

int sb_xmin_holder_get(sb_bus *bus, int64_t warn_after_ms, sb_xmin_holder *out,
                       sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus ? "out" : "bus",
                       "arguments must not be NULL");
    if (out->size < sizeof *out)
        return sb__err(err, SB_INVALID, "size",
                       "out->size must be at least %zu (got %zu)", sizeof *out,
                       out->size);
    if (bus->sql->xmin_holder == NULL)
        return sb__err(err, SB_INVALID, "bus",
                       "only a PostgreSQL bus has an xmin horizon (this "
                       "one is %s)",
                       sb_backend_name(bus));
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    if (rc != SB_OK)
        return rc;
    rc = sb__xmin_holder_on(bus, c, warn_after_ms, out, err);
    sb__pool_release(bus->pool, c);
    return rc;
}

void sb__xmin_check(sb_bus *bus)
{
    if (bus->sql->xmin_holder == NULL)
        return;
    int64_t last = atomic_load(&bus->xmin_warned_us);
    if (last != 0 && sb__mono_us() - last < XMIN_WARN_EVERY_US)
        return;
    sb_conn *c = NULL;
    sb_error e;
    if (sb__pool_acquire(bus->pool, 0, &c, &e) != SB_OK)
        return; /* no idle connection: the next slow scan asks again */
    sb_xmin_holder h;
    h.size = sizeof h;
    sb__xmin_holder_on(bus, c, SB_XMIN_WARN_SLOW_MS, &h, &e);
    sb__pool_release(bus->pool, c);
}
