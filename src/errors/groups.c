/* groups.c - group views (E13): per classifier, the groups over messages
 * of one status with their count and failure window, newest failure
 * first, capped at 200; and group comments. Read from the counts kept at
 * write time (counts.c); while a window there is stale, it is computed
 * from the group's rows. */
#include "errors/classify.h"
#include "errors/errors.h"

#include <string.h>

#define MAX_GROUPS 200

/* One of the five names of rule E12 (classify.h), compared exactly as
 * the stored group types are. */
static bool known_classifier(const char *c)
{
    static const char *const names[SB_CLASSIFIER_COUNT] = {
        SB_CLASSIFIER_EXCEPTION, SB_CLASSIFIER_MESSAGE_TYPE,
        SB_CLASSIFIER_ENDPOINT_ADDRESS, SB_CLASSIFIER_ENDPOINT_INSTANCE,
        SB_CLASSIFIER_ENDPOINT_NAME};
    for (size_t i = 0; i < SB_CLASSIFIER_COUNT; i++)
        if (strcmp(c, names[i]) == 0)
            return true;
    return false;
}

int sb_errors_groups(sb_errors *e, const char *classifier, int status,
                     sb_failure_group ***out, size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "out",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    if (status < SB_FAILED_UNRESOLVED || status > SB_FAILED_ARCHIVED)
        return sb__err(err, SB_INVALID, "status",
                       "status must be an enum sb_failed_status value (0 to "
                       "3; got %d)",
                       status);
    if (classifier == NULL)
        classifier = SB_CLASSIFIER_EXCEPTION;
    if (!known_classifier(classifier))
        return sb__err(err, SB_INVALID, "classifier",
                       "no classifier \"%.100s\"; the classifiers are "
                       "\"" SB_CLASSIFIER_EXCEPTION
                       "\", \"" SB_CLASSIFIER_MESSAGE_TYPE
                       "\", \"" SB_CLASSIFIER_ENDPOINT_ADDRESS
                       "\", \"" SB_CLASSIFIER_ENDPOINT_INSTANCE
                       "\" and \"" SB_CLASSIFIER_ENDPOINT_NAME "\"",
                       classifier);
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_value p[3] = {sb__v_text(classifier), sb__v_int(status),
                     sb__v_int(MAX_GROUPS)};
    sb_rows *rows = NULL;
    rc = sb__query(c, e->sql.s[ER_GROUPS_STALE], p, 2, &rows, NULL, err);
    int stale = rc == SB_OK && rows->nrows == 1 && sb__rows_int(rows, 0, 0);
    sb__rows_free(rows);
    rows = NULL;
    if (rc == SB_OK)
        rc = sb__query(c, e->sql.s[stale ? ER_GROUPS_EXACT : ER_GROUPS], p, 3,
                       &rows, NULL, err);
    sb__pool_release(e->bus->pool, c);
    size_t n = rc == SB_OK ? rows->nrows : 0;
    sb_failure_group **list = NULL;
    if (n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t r = 0; rc == SB_OK && r < n; r++) {
        sb_failure_group *g = list[r];
        const char *id = sb__rows_text(rows, r, 0);
        const char *type = sb__rows_text(rows, r, 1);
        const char *title = sb__rows_text(rows, r, 2);
        const char *comment = sb__rows_text(rows, r, 6);
        g->size = sizeof *g;
        sb__strlcpy(g->id, id ? id : "", sizeof g->id);
        sb__strlcpy(g->type, type ? type : "", sizeof g->type);
        sb__strlcpy(g->title, title ? title : "", sizeof g->title);
        sb__strlcpy(g->comment, comment ? comment : "", sizeof g->comment);
        g->count = sb__rows_int(rows, r, 3);
        g->first_failure_us = sb__rows_int(rows, r, 4);
        g->last_failure_us = sb__rows_int(rows, r, 5);
    }
    sb__rows_free(rows);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = n;
    return SB_OK;
}

typedef struct comment_ctx {
    sb_errors *e;
    const char *group_id, *comment;
} comment_ctx;

static int comment_tx(sb_conn *c, void *vctx, sb_error *err)
{
    comment_ctx *x = vctx;
    if (x->comment == NULL || x->comment[0] == '\0') {
        sb_value p = sb__v_text(x->group_id);
        return sb__query(c, x->e->sql.s[ER_DELETE_COMMENT], &p, 1, NULL, NULL,
                         err);
    }
    sb_value p[3] = {sb__v_text(x->group_id),
                     sb__v_int(sb__bus_now_us(x->e->bus)),
                     sb__v_text(x->comment)};
    return sb__errors_race(
        x->e, sb__query(c, x->e->sql.s[ER_SET_COMMENT], p, 3, NULL, NULL, err),
        err);
}

int sb_errors_group_comment(sb_errors *e, const char *group_id,
                            const char *comment, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    char id[37];
    if (group_id == NULL || sb__uuid_normalize(group_id, id) != SB_OK)
        return sb__err(err, SB_INVALID, "group_id",
                       "group_id must be a group's UUID");
    if (comment != NULL && strlen(comment) > SB_MAX_COMMENT)
        return sb__err(err, SB_INVALID, "comment",
                       "comment is %zu bytes; the limit is %d", strlen(comment),
                       SB_MAX_COMMENT);
    if (comment != NULL && !sb__utf8_valid(comment, strlen(comment)))
        return sb__err(err, SB_INVALID, "comment",
                       "comment must be valid UTF-8");
    comment_ctx x = {e, id, comment};
    return sb__db_run_tx(e->bus->pool, NULL, comment_tx, &x, err);
}
