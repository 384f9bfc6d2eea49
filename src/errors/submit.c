/* submit.c - failed messages from outside (E2) and failed imports sent
 * back (E3). Both write into the dead-letter queue, so every failed
 * message reaches the store by the one ingestion path. A submission is
 * read as ingestion will read it first, so a message ingestion would
 * refuse is refused here, with the reason, instead of becoming a failed
 * import. */
#include "errors/errors.h"

#include <stdio.h>
#include <string.h>

#define MAX_SUBMIT 1000
#define REIMPORT_BATCH 1000

/* SB_INVALID naming msgs[i] when ingestion could not use the message. */
static int check_submission(const sb_errors *e, const sb_failed_submission *s,
                            size_t i, sb_error *err)
{
    char field[64];
    snprintf(field, sizeof field, "msgs[%zu].headers", i);
    if (s->headers_json == NULL)
        return sb__err(err, SB_INVALID, field,
                       "headers must be a JSON object of strings");
    int rc =
        sb__headers_validate(s->headers_json, strlen(s->headers_json), err);
    if (rc != SB_OK) {
        if (err != NULL)
            sb__strlcpy(err->field, field, sizeof err->field);
        return rc;
    }
    if ((s->body == NULL && s->len > 0) || s->len > e->bus->max_payload) {
        snprintf(field, sizeof field, "msgs[%zu].body", i);
        return sb__err(err, SB_INVALID, field,
                       s->body == NULL ? "body is NULL but len is %zu"
                                       : "body is %zu bytes; the limit is "
                                         "max_payload_bytes",
                       s->len);
    }
    sb_msg *m = sb__msg_new();
    char *headers = sb__strdup(s->headers_json);
    if (m == NULL || headers == NULL) {
        sb__free(headers);
        sb_msg_free(m);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    m->headers = headers;
    m->created_at_us = sb__wall_us();
    sb__uuid7_at(m->id, m->created_at_us / 1000);
    sb_attempt a;
    sb_error why;
    rc = sb__attempt_from_row(m, &a, &why);
    if (rc == SB_OK) {
        /* What SQL Server's store cannot key (ingest.c) is refused too. */
        const char *unfit = sb__errors_unfit_id(e->bus->dialect, a.unique_id);
        if (unfit != NULL)
            rc = sb__err(err, SB_INVALID, field, "%s", unfit);
        sb__attempt_clear(&a);
    } else if (rc == SB_INVALID) {
        rc = sb__err(err, SB_INVALID, field, "%s", why.message);
    } else {
        rc = sb__err(err, rc, NULL, "%s", why.message);
    }
    sb_msg_free(m);
    return rc;
}

typedef struct submit_ctx {
    sb_errors *e;
    sb_outgoing *out;
    size_t n;
    char (*ids)[37];
} submit_ctx;

static int submit_tx(sb_conn *c, void *vctx, sb_error *err)
{
    submit_ctx *x = vctx;
    int immediate = 0;
    return sb__publish_on(x->e->bus, c, x->e->bus->dlq, x->out, x->n, x->ids,
                          &immediate, err);
}

int sb_errors_submit(sb_errors *e, const sb_failed_submission *msgs, size_t n,
                     sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    if (n == 0)
        return SB_OK;
    if (msgs == NULL)
        return sb__err(err, SB_INVALID, "msgs", "msgs must not be NULL");
    if (n > MAX_SUBMIT)
        return sb__err(err, SB_INVALID, "n",
                       "at most %d messages per call (got %zu)", MAX_SUBMIT, n);
    int rc = sb_errors_submit_check(e, msgs, n, err);
    if (rc != SB_OK)
        return rc;
    sb_outgoing *out = sb__calloc(n, sizeof *out);
    char(*ids)[37] = sb__calloc(n, sizeof *ids);
    if (out == NULL || ids == NULL)
        rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (size_t i = 0; rc == SB_OK && i < n; i++) {
        sb__uuid7_at(ids[i], sb__wall_us() / 1000);
        out[i].id = ids[i];
        out[i].payload = msgs[i].body;
        out[i].payload_len = msgs[i].len;
        out[i].headers_json = msgs[i].headers_json;
    }
    submit_ctx x = {e, out, n, ids};
    if (rc == SB_OK)
        rc = sb__db_run_tx(e->bus->pool, NULL, submit_tx, &x, err);
    sb__free(out);
    sb__free(ids);
    return rc;
}

int sb_errors_submit_check(sb_errors *e, const sb_failed_submission *msgs,
                           size_t n, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    if (n > 0 && msgs == NULL)
        return sb__err(err, SB_INVALID, "msgs", "msgs must not be NULL");
    int rc = SB_OK;
    for (size_t i = 0; rc == SB_OK && i < n; i++)
        rc = check_submission(e, &msgs[i], i, err);
    return rc;
}

typedef struct reimport_ctx {
    sb_errors *e;
    int64_t moved; /* by this transaction */
} reimport_ctx;

static int reimport_tx(sb_conn *c, void *vctx, sb_error *err)
{
    reimport_ctx *x = vctx;
    sb_errors *e = x->e;
    x->moved = 0;
    sb_value lim = sb__v_int(REIMPORT_BATCH);
    sb_rows *rows = NULL;
    int rc = sb__query(c, e->sql.s[ER_IMPORTS_TAKE], &lim, 1, &rows, NULL, err);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        char ids[1][37];
        const sb_value *body = sb__rows_at(rows, r, 2);
        sb__uuid7_at(ids[0], sb__wall_us() / 1000);
        sb_outgoing o = {ids[0], body->p ? body->p : "", body->len,
                         sb__rows_text(rows, r, 1), 0};
        int immediate = 0;
        rc =
            sb__publish_on(e->bus, c, e->bus->dlq, &o, 1, ids, &immediate, err);
        sb_value id = sb__v_text(sb__rows_text(rows, r, 0));
        if (rc == SB_OK)
            rc = sb__query(c, e->sql.s[ER_IMPORTS_DELETE], &id, 1, NULL, NULL,
                           err);
    }
    if (rc == SB_OK)
        x->moved = (int64_t)rows->nrows;
    sb__rows_free(rows);
    return rc;
}

int sb_errors_reimport(sb_errors *e, int64_t *moved, sb_error *err)
{
    sb_error_clear(err);
    if (moved != NULL)
        *moved = 0;
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    /* Rows that fail again while this runs come back to failed_imports:
     * stop after as many as there were at the start. */
    int64_t left = 0;
    int rc = sb_errors_failed_import_count(e, &left, err);
    reimport_ctx x = {e, 0};
    while (rc == SB_OK && left > 0) {
        rc = sb__db_run_tx(e->bus->pool, NULL, reimport_tx, &x, err);
        if (rc == SB_OK && moved != NULL)
            *moved += x.moved;
        left = x.moved < REIMPORT_BATCH ? 0 : left - x.moved;
    }
    return rc;
}
