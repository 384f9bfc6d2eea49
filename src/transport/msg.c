/* msg.c - the claimed-message object and its accessors. */
#include "transport/transport.h"

#include <string.h>
#include <strings.h>

sb_msg *sb__msg_new(void)
{
    return sb__calloc(1, sizeof(sb_msg));
}

static int copy_uuid(const sb_rows *rows, size_t r, size_t c, char out[37])
{
    const char *s = sb__rows_text(rows, r, c);
    out[0] = '\0';
    if (s == NULL)
        return SB_OK;
    return sb__uuid_normalize(s, out) == SB_OK ? SB_OK : SB_BACKEND;
}

int sb__msg_from_row(const sb_rows *rows, size_t r, sb_msg **out)
{
    *out = NULL;
    sb_msg *m = sb__msg_new();
    if (m == NULL)
        return SB_NOMEM;
    int rc = copy_uuid(rows, r, 0, m->id);
    if (rc == SB_OK)
        rc = copy_uuid(rows, r, 4, m->lock_id);
    const sb_value *pv = sb__rows_at(rows, r, 1);
    const char *h = sb__rows_text(rows, r, 2);
    const char *q = sb__rows_text(rows, r, 6);
    if (rc == SB_OK) {
        m->payload_len = pv->type == SB_V_NULL ? 0 : pv->len;
        m->payload = sb__memdup(pv->p ? pv->p : "", m->payload_len + 1);
        if (m->payload != NULL)
            ((char *)m->payload)[m->payload_len] = '\0';
        m->headers = sb__strdup(h ? h : "{}");
        m->queue = sb__strdup(q ? q : "");
        if (!m->payload || !m->headers || !m->queue)
            rc = SB_NOMEM;
    }
    m->attempts = (int)sb__rows_int(rows, r, 3);
    m->created_at_us = sb__rows_int(rows, r, 5);
    if (rc != SB_OK) {
        sb_msg_free(m);
        return rc;
    }
    *out = m;
    return SB_OK;
}

void sb_msg_free(sb_msg *m)
{
    if (m == NULL)
        return;
    sb__free(m->queue);
    sb__free(m->payload);
    sb__free(m->headers);
    sb__free(m->progress);
    sb__free(m->unique_key);
    sb__headers_free(m->kv, m->n_kv);
    sb__free(m);
}

void sb_msg_free_array(sb_msg **msgs, size_t n)
{
    if (msgs == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        sb_msg_free(msgs[i]);
    sb__free(msgs);
}

const char *sb_msg_id(const sb_msg *m)
{
    return m->id;
}

const char *sb_msg_queue(const sb_msg *m)
{
    return m->queue;
}

const char *sb_msg_lock_id(const sb_msg *m)
{
    return m->lock_id;
}

const void *sb_msg_payload(const sb_msg *m, size_t *len)
{
    if (len != NULL)
        *len = m->payload_len;
    return m->payload;
}

const char *sb_msg_headers(const sb_msg *m)
{
    return m->headers;
}

int sb__msg_parse_headers(const sb_msg *m)
{
    sb_msg *mm = (sb_msg *)m;
    if (mm->kv != NULL)
        return SB_OK;
    int rc = sb__headers_parse(mm->headers, &mm->kv, &mm->n_kv);
    return rc == SB_NOMEM ? SB_NOMEM : SB_OK;
}

const char *sb_msg_header(const sb_msg *m, const char *key)
{
    sb_msg *mm = (sb_msg *)m;
    if (key == NULL || sb__msg_parse_headers(m) != SB_OK || mm->kv == NULL)
        return NULL;
    for (size_t i = 0; i < mm->n_kv; i++)
        if (strcasecmp(mm->kv[2 * i], key) == 0)
            return mm->kv[2 * i + 1];
    return NULL;
}

int sb_msg_attempts(const sb_msg *m)
{
    return m->attempts;
}

int64_t sb_msg_created_at_us(const sb_msg *m)
{
    return m->created_at_us;
}

const char *sb_msg_correlation_id(const sb_msg *m)
{
    return sb_msg_header(m, "sb-correlation-id");
}
