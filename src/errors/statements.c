/* statements.c - the error store's statement texts by name, for review
 * (sb_errors_statements, `sqlbus schema print --statements`): the fixed
 * set (sql.c), then one text per shape of the statements built from a
 * caller's filters (list.c, select.c) - each with every filter set, so
 * every clause they can hold is shown; the sort column of a page is one
 * of list.c's five. */
#include "errors/errors.h"

/* In the order of the ER_ enum (errors.h). */
static const char *const names[] = {
    "ddl",           "attempts_state",  "attempts_fill",
    "new_attempts",  "upsert",          "delete_groups",
    "insert_groups", "endpoints",       "put_body",
    "drop_bodies",   "confirm",         "drop_claims",
    "failed_import", "count_imports",   "get",
    "get_groups",    "get_body",        "get_history",
    "claim",         "retry_source",    "set_status",
    "groups",        "set_comment",     "delete_comment",
    "expired",       "delete_messages", "orphan_comments",
    "search",        "op_start",        "op_step",
    "op_end",        "op_get",          "ops_get",
    "edit_claim",    "drop_edits",      "redirects_lock",
    "redirects",     "redirect_put",    "redirect_delete",
    "imports_take",  "imports_delete",  "prune_groups",
    "counts_state",  "counts_rebuild",  "stale_take",
    "stale_fix",     "groups_stale",    "groups_exact",
    "fulltext",      "search_ready",    "op_ack",
};
_Static_assert(sizeof names / sizeof names[0] == ER_N,
               "every statement of the error store has a name");

/* A built text with the prefix put in, then emitted. */
static int emit_built(sb_statement_fn fn, void *user, const char *name,
                      sb_buf *b, const char *prefix)
{
    int rc = b->failed ? SB_NOMEM : SB_OK;
    char *sql = rc == SB_OK ? sb__sql_subst(b->data, prefix, &rc) : NULL;
    if (rc == SB_OK)
        sb__statement_emit(fn, user, "errors", name, sql);
    sb__free(sql);
    sb__buf_reset(b);
    return rc;
}

static int emit_shapes(int dialect, const char *prefix, sb_statement_fn fn,
                       void *user)
{
    sb_failed_query q = {.size = sizeof q,
                         .failed_queue = "q",
                         .endpoint = "e",
                         .group_id = "g",
                         .message_type = "t",
                         .statuses = SB_FAILED_BIT(SB_FAILED_UNRESOLVED) |
                                     SB_FAILED_BIT(SB_FAILED_RETRY_ISSUED),
                         .modified_from_us = 1,
                         .modified_to_us = 2,
                         .message_id = "m",
                         .conversation_id = "c",
                         .failed_from_us = 3,
                         .failed_to_us = 4};
    static const char *const ids[] = {"id"};
    sb_failed_selection sel = {.size = sizeof sel,
                               .ids = ids,
                               .n_ids = 1,
                               .group_id = "g",
                               .failed_queue = "q",
                               .endpoint = "e",
                               .modified_from_us = 1,
                               .modified_to_us = 2};
    sb_value p[18];
    sb_buf b;
    sb__buf_init(&b, (size_t)1 << 20);
    sb__errors_list_sql(dialect, &q, NULL, &b, p);
    int rc = emit_built(fn, user, "list_count", &b, prefix);
    if (rc == SB_OK) {
        sb__errors_list_sql(dialect, &q, "last_time_of_failure", &b, p);
        rc = emit_built(fn, user, "list_page", &b, prefix);
    }
    if (rc == SB_OK) {
        sb__errors_walk_sql(dialect, &sel, 1, &b);
        rc = emit_built(fn, user, "selection_count", &b, prefix);
    }
    if (rc == SB_OK) {
        sb__errors_walk_sql(dialect, &sel, 0, &b);
        rc = emit_built(fn, user, "selection_page", &b, prefix);
    }
    sb__buf_free(&b);
    return rc;
}

int sb_errors_statements(const char *backend, const char *table_prefix,
                         sb_statement_fn fn, void *user, sb_error *err)
{
    int dialect = 0;
    int rc = sb__statements_begin(backend, table_prefix, fn, &dialect, err);
    const char *prefix = table_prefix ? table_prefix : "sqlbus_";
    sb_errors_sql s;
    if (rc == SB_OK)
        rc = sb__errors_sql_new(dialect, prefix, &s, err);
    if (rc != SB_OK)
        return rc;
    for (size_t i = 0; i < ER_N; i++)
        sb__statement_emit(fn, user, "errors", names[i], s.s[i]);
    sb__errors_sql_free(&s);
    rc = emit_shapes(dialect, prefix, fn, user);
    return rc == SB_OK ? SB_OK : sb__err(err, rc, NULL, "out of memory");
}
