/* settings_store.c - small named documents in {prefix}settings (issue 22):
 * get, put, remove and list. What `sqlbus serve` keeps between runs and
 * shares between its processes (e-mail settings, endpoint settings,
 * dismissed checks) lives here; a queue's own settings are settings.c's
 * {prefix}queue_settings. */
#include "transport/transport.h"

#include <string.h>

static int check_name(sb_bus *bus, const char *name, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL)
        return sb__err(err, SB_INVALID, "bus", "bus must not be NULL");
    return sb__validate_name(name, SB_SETTING_NAME_MAX, "name", "setting name",
                             err);
}

typedef struct one_ctx {
    sb_bus *bus;
    const char *sql;
    sb_value p[3];
    size_t np;
    sb_rows *rows;
    int64_t changed;
} one_ctx;

static int one_tx(sb_conn *c, void *arg, sb_error *err)
{
    one_ctx *x = arg;
    sb__rows_free(x->rows);
    x->rows = NULL;
    return sb__query(c, x->sql, x->p, x->np, &x->rows, &x->changed, err);
}

static int run(one_ctx *x, sb_error *err)
{
    int rc = sb__bus_ensure_schema(x->bus, err);
    if (rc == SB_OK)
        rc = sb__db_run_tx(x->bus->pool, NULL, one_tx, x, err);
    return rc;
}

int sb_setting_get(sb_bus *bus, const char *name, char **value,
                   int64_t *updated_us, sb_error *err)
{
    int rc = check_name(bus, name, err);
    if (rc != SB_OK)
        return rc;
    if (value == NULL)
        return sb__err(err, SB_INVALID, "value", "value must not be NULL");
    *value = NULL;
    one_ctx x = {bus, bus->sql->setting_get, {sb__v_text(name)}, 1, NULL, 0};
    rc = run(&x, err);
    if (rc == SB_OK && x.rows->nrows == 0)
        rc = sb__err(err, SB_NOTFOUND, "name", "no setting \"%s\"", name);
    if (rc == SB_OK) {
        const char *v = sb__rows_text(x.rows, 0, 0);
        *value = sb__strdup(v != NULL ? v : "");
        if (*value == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
        else if (updated_us != NULL)
            *updated_us = sb__rows_int(x.rows, 0, 1);
    }
    sb__rows_free(x.rows);
    return rc;
}

int sb_setting_put(sb_bus *bus, const char *name, const char *value,
                   sb_error *err)
{
    int rc = check_name(bus, name, err);
    if (rc != SB_OK)
        return rc;
    size_t len = value != NULL ? strlen(value) : 0;
    if (value == NULL || len > SB_SETTING_VALUE_MAX ||
        !sb__utf8_valid(value, len))
        return sb__err(
            err, SB_INVALID, "value",
            "value must be at most %d bytes of UTF-8 (got %zu "
            "bytes%s)",
            SB_SETTING_VALUE_MAX, len,
            value != NULL && len <= SB_SETTING_VALUE_MAX ? ", not UTF-8" : "");
    one_ctx x = {
        bus,
        bus->sql->setting_put,
        {sb__v_text(name), sb__v_text(value), sb__v_int(sb__bus_now_us(bus))},
        3,
        NULL,
        0};
    rc = run(&x, err);
    sb__rows_free(x.rows);
    return rc;
}

int sb_setting_remove(sb_bus *bus, const char *name, sb_error *err)
{
    int rc = check_name(bus, name, err);
    if (rc != SB_OK)
        return rc;
    one_ctx x = {bus, bus->sql->setting_remove, {sb__v_text(name)}, 1, NULL, 0};
    rc = run(&x, err);
    sb__rows_free(x.rows);
    if (rc == SB_OK && x.changed == 0)
        rc = sb__err(err, SB_NOTFOUND, "name", "no setting \"%s\"", name);
    return rc;
}

int sb_setting_list(sb_bus *bus, const char *prefix, sb_setting_fn fn,
                    void *user, sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || fn == NULL)
        return sb__err(err, SB_INVALID, bus ? "fn" : "bus",
                       "arguments must not be NULL");
    one_ctx x = {bus, bus->sql->setting_list, {{0}}, 0, NULL, 0};
    int rc = run(&x, err);
    size_t plen = prefix != NULL ? strlen(prefix) : 0;
    for (size_t r = 0; rc == SB_OK && r < x.rows->nrows; r++) {
        const char *name = sb__rows_text(x.rows, r, 0);
        const char *value = sb__rows_text(x.rows, r, 1);
        if (name == NULL || strncmp(name, prefix ? prefix : "", plen) != 0)
            continue;
        if (fn(name, value != NULL ? value : "", sb__rows_int(x.rows, r, 2),
               user) != 0)
            break;
    }
    sb__rows_free(x.rows);
    return rc;
}
