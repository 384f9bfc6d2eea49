/* reply.c - the reply object handed to waiters and recovery. */
#include "channel/channel.h"

#include <string.h>

/* Columns of the scan statement: id, correlation_id, reply, is_error,
 * error_type, error_message, error_detail, created_at, acked_at,
 * acked_seq. */
sb_reply *sb__reply_from_row(const sb_rows *rows, size_t r)
{
    sb_reply *x = sb__calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    const sb_value *data = sb__rows_at(rows, r, 2);
    const char *id = sb__rows_text(rows, r, 0);
    if (id == NULL || sb__uuid_normalize(id, x->id) != SB_OK) {
        sb__free(x);
        return NULL;
    }
    x->correlation_id = sb__strdup(sb__rows_text(rows, r, 1));
    x->len = data->type == SB_V_NULL ? 0 : data->len;
    x->data = sb__memdup(data->p ? data->p : "", x->len + 1);
    if (x->data != NULL)
        ((char *)x->data)[x->len] = '\0';
    x->is_error = (int)sb__rows_int(rows, r, 3);
    x->error_type = sb__strdup(sb__rows_text(rows, r, 4));
    x->error_message = sb__strdup(sb__rows_text(rows, r, 5));
    x->error_detail = sb__strdup(sb__rows_text(rows, r, 6));
    x->created_at_us = sb__rows_int(rows, r, 7);
    x->acked_at_us = sb__rows_int(rows, r, 8);
    x->acked_seq = sb__rows_int(rows, r, 9);
    if (x->correlation_id == NULL || x->data == NULL) {
        sb_reply_free(x);
        return NULL;
    }
    return x;
}

sb_reply *sb__reply_copy(const sb_reply *r)
{
    sb_reply *x = sb__calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    *x = *r;
    x->next = NULL;
    x->correlation_id = sb__strdup(r->correlation_id);
    x->data = sb__memdup(r->data, r->len + 1);
    x->error_type = sb__strdup(r->error_type);
    x->error_message = sb__strdup(r->error_message);
    x->error_detail = sb__strdup(r->error_detail);
    if (x->correlation_id == NULL || x->data == NULL ||
        (r->error_type && !x->error_type) ||
        (r->error_message && !x->error_message) ||
        (r->error_detail && !x->error_detail)) {
        sb_reply_free(x);
        return NULL;
    }
    return x;
}

void sb_reply_free(sb_reply *r)
{
    if (r == NULL)
        return;
    sb__free(r->correlation_id);
    sb__free(r->data);
    sb__free(r->error_type);
    sb__free(r->error_message);
    sb__free(r->error_detail);
    sb__free(r);
}

const char *sb_reply_id(const sb_reply *r)
{
    return r->id;
}

const char *sb_reply_correlation_id(const sb_reply *r)
{
    return r->correlation_id;
}

const void *sb_reply_data(const sb_reply *r, size_t *len)
{
    if (len != NULL)
        *len = r->len;
    return r->data;
}

int sb_reply_is_error(const sb_reply *r)
{
    return r->is_error;
}

const char *sb_reply_error_type(const sb_reply *r)
{
    return r->error_type;
}

const char *sb_reply_error_message(const sb_reply *r)
{
    return r->error_message;
}

const char *sb_reply_error_detail(const sb_reply *r)
{
    return r->error_detail;
}

int64_t sb_reply_created_at_us(const sb_reply *r)
{
    return r->created_at_us;
}
