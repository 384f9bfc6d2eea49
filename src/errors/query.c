/* query.c - reading one failed message back: its columns, its headers
 * (the source of truth, E5), its groups and its body, from the body store
 * when it is stored there (E7: the inline prefix is never served as the
 * body). */
#include "errors/errors.h"

#include <string.h>

struct sb_failed_message {
    sb_rows *row;     /* the failed_messages row (ER_GET) */
    sb_rows *groups;  /* ER_GET_GROUPS */
    sb_rows *body;    /* ER_GET_BODY, when stored externally */
    sb_rows *history; /* ER_GET_HISTORY, newest first */
};

static int load(sb_conn *c, sb_errors *e, const char *id, sb_failed_message *m,
                sb_error *err)
{
    sb_value p = sb__v_text(id);
    int rc = sb__query(c, e->sql.s[ER_GET], &p, 1, &m->row, NULL, err);
    if (rc == SB_OK && m->row->nrows == 0)
        return sb__err(err, SB_NOTFOUND, "unique_message_id",
                       "no failed message %.64s", id);
    if (rc == SB_OK)
        rc =
            sb__query(c, e->sql.s[ER_GET_GROUPS], &p, 1, &m->groups, NULL, err);
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[ER_GET_HISTORY], &p, 1, &m->history, NULL,
                       err);
    if (rc == SB_OK && sb_failed_body_stored_externally(m))
        rc = sb__query(c, e->sql.s[ER_GET_BODY], &p, 1, &m->body, NULL, err);
    return rc;
}

int sb_errors_get(sb_errors *e, const char *unique_message_id,
                  sb_failed_message **out, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || unique_message_id == NULL || out == NULL)
        return sb__err(err, SB_INVALID,
                       e == NULL     ? "errors"
                       : out == NULL ? "out"
                                     : "unique_message_id",
                       "arguments must not be NULL");
    *out = NULL;
    sb_failed_message *m = sb__calloc(1, sizeof *m);
    if (m == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc == SB_OK) {
        rc = load(c, e, unique_message_id, m, err);
        sb__pool_release(e->bus->pool, c);
    }
    if (rc != SB_OK) {
        sb_failed_message_free(m);
        return rc;
    }
    *out = m;
    return SB_OK;
}

void sb_failed_message_free(sb_failed_message *m)
{
    if (m == NULL)
        return;
    sb__rows_free(m->row);
    sb__rows_free(m->groups);
    sb__rows_free(m->body);
    sb__rows_free(m->history);
    sb__free(m);
}

static const char *text(const sb_failed_message *m, const char *column)
{
    int k = sb__errors_column(column);
    return k < 0 ? NULL : sb__rows_text(m->row, 0, (size_t)k);
}

static int64_t integer(const sb_failed_message *m, const char *column)
{
    int k = sb__errors_column(column);
    return k < 0 ? 0 : sb__rows_int(m->row, 0, (size_t)k);
}

const char *sb_failed_unique_id(const sb_failed_message *m)
{
    return text(m, "unique_message_id");
}

int sb_failed_status(const sb_failed_message *m)
{
    return (int)sb__rows_int(m->row, 0, 0);
}

int64_t sb_failed_status_changed_us(const sb_failed_message *m)
{
    return sb__rows_int(m->row, 0, 1);
}

int64_t sb_failed_last_modified_us(const sb_failed_message *m)
{
    return sb__rows_int(m->row, 0, 2);
}

int64_t sb_failed_time_sent_us(const sb_failed_message *m)
{
    return integer(m, "time_sent");
}

int sb_failed_is_system(const sb_failed_message *m)
{
    return integer(m, "is_system") != 0;
}

int64_t sb_failed_attempts(const sb_failed_message *m)
{
    return integer(m, "number_of_processing_attempts");
}

int64_t sb_failed_first_failure_us(const sb_failed_message *m)
{
    return integer(m, "first_time_of_failure");
}

int64_t sb_failed_last_failure_us(const sb_failed_message *m)
{
    return integer(m, "last_time_of_failure");
}

const char *sb_failed_field(const sb_failed_message *m, const char *name)
{
    static const char *const allowed[] = {
        "message_id",          "message_type",   "failed_queue",
        "processing_endpoint", "host",           "host_id",
        "instance_id",         "exception_type", "exception_message",
        "conversation_id"};
    for (size_t i = 0; name != NULL && i < sizeof allowed / sizeof *allowed;
         i++)
        if (strcmp(allowed[i], name) == 0)
            return text(m, name);
    return NULL;
}

const char *sb_failed_headers(const sb_failed_message *m)
{
    return text(m, "headers");
}

int sb_failed_body_stored_externally(const sb_failed_message *m)
{
    return integer(m, "body_stored_externally") != 0;
}

const char *sb_failed_body_text(const sb_failed_message *m)
{
    return text(m, "body_text");
}

const void *sb_failed_body(const sb_failed_message *m, size_t *len)
{
    if (sb_failed_body_stored_externally(m)) {
        if (m->body == NULL || m->body->nrows == 0) {
            if (len != NULL)
                *len = 0;
            return NULL;
        }
        const sb_value *v = sb__rows_at(m->body, 0, 0);
        if (len != NULL)
            *len = v->len;
        return v->p;
    }
    const char *t = sb_failed_body_text(m);
    if (len != NULL)
        *len = t ? strlen(t) : 0;
    return t ? t : "";
}

size_t sb_failed_group_count(const sb_failed_message *m)
{
    return m->groups ? m->groups->nrows : 0;
}

int sb_failed_group(const sb_failed_message *m, size_t i, const char **id,
                    const char **type, const char **title)
{
    if (i >= sb_failed_group_count(m))
        return SB_NOTFOUND;
    if (id != NULL)
        *id = sb__rows_text(m->groups, i, 0);
    if (type != NULL)
        *type = sb__rows_text(m->groups, i, 1);
    if (title != NULL)
        *title = sb__rows_text(m->groups, i, 2);
    return SB_OK;
}

size_t sb_failed_history_count(const sb_failed_message *m)
{
    return m != NULL && m->history != NULL ? m->history->nrows : 0;
}

int sb_failed_history(const sb_failed_message *m, size_t i, int *status,
                      int *previous, int64_t *at_us)
{
    size_t n = sb_failed_history_count(m);
    if (i >= n)
        return SB_NOTFOUND;
    size_t r = n - 1 - i; /* read newest first, handed out oldest first */
    if (status != NULL)
        *status = (int)sb__rows_int(m->history, r, 0);
    if (previous != NULL)
        *previous = (int)sb__rows_int(m->history, r, 1);
    if (at_us != NULL)
        *at_us = sb__rows_int(m->history, r, 2);
    return SB_OK;
}
