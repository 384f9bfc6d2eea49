/* redirect.c - retry redirects (E20): retries and edits of messages that
 * failed on one queue go to another. A queue has at most one redirect and
 * redirects never chain; both are checked against the whole (small) table
 * under a table lock, so two concurrent changes cannot build a chain. */
#include "errors/errors.h"
#include "errors/ids.h"

#include <string.h>

typedef struct redirect_ctx {
    sb_errors *e;
    const char *id;   /* update and remove */
    const char *from; /* add */
    const char *to;
    sb_redirect out;
} redirect_ctx;

static int read_all(sb_conn *c, sb_errors *e, sb_rows **rows, sb_error *err)
{
    return sb__query(c, e->sql.s[ER_REDIRECTS], NULL, 0, rows, NULL, err);
}

/* Every redirect, read under the table lock that serialises changes. */
static int lock_and_read(sb_conn *c, sb_errors *e, sb_rows **rows,
                         sb_error *err)
{
    int rc =
        sb__query(c, e->sql.s[ER_REDIRECTS_LOCK], NULL, 0, NULL, NULL, err);
    return rc == SB_OK ? read_all(c, e, rows, err) : rc;
}

static void fill(sb_redirect *r, const sb_rows *rows, size_t i)
{
    memset(r, 0, sizeof *r);
    r->size = sizeof *r;
    sb__strlcpy(r->id, sb__rows_text(rows, i, 0), sizeof r->id);
    sb__strlcpy(r->from_queue, sb__rows_text(rows, i, 1), sizeof r->from_queue);
    sb__strlcpy(r->to_queue, sb__rows_text(rows, i, 2), sizeof r->to_queue);
    r->last_modified_us = sb__rows_int(rows, i, 3);
}

/* SB_CONFLICT when from -> to would join a chain or re-point `from`
 * (other than the redirect `self`). */
static int check_chain(const sb_rows *rows, const char *self, const char *from,
                       const char *to, sb_error *err)
{
    for (size_t i = 0; i < rows->nrows; i++) {
        const char *id = sb__rows_text(rows, i, 0);
        const char *f = sb__rows_text(rows, i, 1);
        const char *t = sb__rows_text(rows, i, 2);
        if (self != NULL && strcmp(id, self) == 0)
            continue;
        if (strcmp(f, from) == 0)
            return sb__err(err, SB_CONFLICT, "from_queue",
                           "queue %s is already redirected to %s", from, t);
        if (strcmp(t, from) == 0)
            return sb__err(err, SB_CONFLICT, "from_queue",
                           "queue %s is the target of the redirect from %s: "
                           "redirects cannot chain",
                           from, f);
        if (strcmp(f, to) == 0)
            return sb__err(err, SB_CONFLICT, "to_queue",
                           "queue %s is itself redirected to %s: redirects "
                           "cannot chain",
                           to, t);
    }
    return SB_OK;
}

static int put(sb_conn *c, redirect_ctx *x, const char *id, const char *from,
               sb_error *err)
{
    int64_t now = sb__wall_us();
    sb_value p[4] = {sb__v_text(id), sb__v_text(from), sb__v_text(x->to),
                     sb__v_int(now)};
    sb__strlcpy(x->out.id, id, sizeof x->out.id);
    sb__strlcpy(x->out.from_queue, from, sizeof x->out.from_queue);
    sb__strlcpy(x->out.to_queue, x->to, sizeof x->out.to_queue);
    x->out.last_modified_us = now;
    return sb__errors_race(
        x->e, sb__query(c, x->e->sql.s[ER_REDIRECT_PUT], p, 4, NULL, NULL, err),
        err);
}

static int add_tx(sb_conn *c, void *vctx, sb_error *err)
{
    redirect_ctx *x = vctx;
    sb_rows *rows = NULL;
    int rc = lock_and_read(c, x->e, &rows, err);
    for (size_t i = 0; rc == SB_OK && i < rows->nrows; i++)
        if (strcmp(sb__rows_text(rows, i, 1), x->from) == 0 &&
            strcmp(sb__rows_text(rows, i, 2), x->to) == 0) {
            fill(&x->out, rows, i); /* the same redirect again */
            sb__rows_free(rows);
            return SB_OK;
        }
    if (rc == SB_OK)
        rc = check_chain(rows, NULL, x->from, x->to, err);
    char id[37];
    sb__deterministic_guid_str(x->from, NULL, id);
    if (rc == SB_OK)
        rc = put(c, x, id, x->from, err);
    sb__rows_free(rows);
    return rc;
}

static int update_tx(sb_conn *c, void *vctx, sb_error *err)
{
    redirect_ctx *x = vctx;
    sb_rows *rows = NULL;
    int rc = lock_and_read(c, x->e, &rows, err);
    size_t at = rows != NULL ? rows->nrows : 0;
    for (size_t i = 0; rc == SB_OK && i < rows->nrows; i++)
        if (strcmp(sb__rows_text(rows, i, 0), x->id) == 0)
            at = i;
    if (rc == SB_OK && at == rows->nrows)
        rc = sb__err(err, SB_NOTFOUND, "id", "no redirect %s", x->id);
    char from[201] = "";
    if (rc == SB_OK)
        sb__strlcpy(from, sb__rows_text(rows, at, 1), sizeof from);
    if (rc == SB_OK && strcmp(from, x->to) == 0)
        rc = sb__err(err, SB_INVALID, "to_queue",
                     "to_queue must differ from the redirect's from_queue "
                     "%s",
                     from);
    if (rc == SB_OK)
        rc = check_chain(rows, x->id, from, x->to, err);
    if (rc == SB_OK)
        rc = put(c, x, x->id, from, err);
    sb__rows_free(rows);
    return rc;
}

static int remove_tx(sb_conn *c, void *vctx, sb_error *err)
{
    redirect_ctx *x = vctx;
    sb_value p = sb__v_text(x->id);
    return sb__query(c, x->e->sql.s[ER_REDIRECT_DELETE], &p, 1, NULL, NULL,
                     err);
}

static int check_id(const char *id, sb_error *err)
{
    if (id == NULL || id[0] == '\0' || strlen(id) > 36)
        return sb__err(err, SB_INVALID, "id",
                       "a redirect id must be 1 to 36 bytes");
    return SB_OK;
}

static int check_queue(const char *q, const char *field, sb_error *err)
{
    sb_error why;
    if (sb_validate_queue_name(q, &why) != SB_OK)
        return sb__err(err, SB_INVALID, field, "%s: %s", field, why.message);
    return SB_OK;
}

int sb_errors_redirect_add(sb_errors *e, const char *from_queue,
                           const char *to_queue, sb_redirect *out,
                           sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = check_queue(from_queue, "from_queue", err);
    if (rc == SB_OK)
        rc = check_queue(to_queue, "to_queue", err);
    if (rc != SB_OK)
        return rc;
    if (strcmp(from_queue, to_queue) == 0)
        return sb__err(err, SB_INVALID, "to_queue",
                       "to_queue must differ from from_queue");
    if (out != NULL &&
        (rc = sb__out_struct(out, sizeof *out, "sb_redirect", err)) != SB_OK)
        return rc;
    redirect_ctx x;
    memset(&x, 0, sizeof x);
    x.e = e;
    x.from = from_queue;
    x.to = to_queue;
    rc = sb__db_run_tx(e->bus->pool, NULL, add_tx, &x, err);
    if (rc == SB_OK && out != NULL)
        *out = x.out;
    return rc;
}

int sb_errors_redirect_update(sb_errors *e, const char *id,
                              const char *to_queue, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = check_id(id, err);
    if (rc == SB_OK)
        rc = check_queue(to_queue, "to_queue", err);
    redirect_ctx x;
    memset(&x, 0, sizeof x);
    x.e = e;
    x.id = id;
    x.to = to_queue;
    return rc == SB_OK ? sb__db_run_tx(e->bus->pool, NULL, update_tx, &x, err)
                       : rc;
}

int sb_errors_redirect_remove(sb_errors *e, const char *id, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    int rc = check_id(id, err);
    redirect_ctx x;
    memset(&x, 0, sizeof x);
    x.e = e;
    x.id = id;
    return rc == SB_OK ? sb__db_run_tx(e->bus->pool, NULL, remove_tx, &x, err)
                       : rc;
}

int sb_errors_redirects(sb_errors *e, sb_redirect ***out, size_t *n_out,
                        sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "out",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_rows *rows = NULL;
    rc = read_all(c, e, &rows, err);
    sb__pool_release(e->bus->pool, c);
    size_t n = rc == SB_OK ? rows->nrows : 0;
    sb_redirect **list = NULL;
    if (n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; rc == SB_OK && i < n; i++)
        fill(list[i], rows, i);
    sb__rows_free(rows);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = n;
    return SB_OK;
}
