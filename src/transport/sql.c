/* sql.c - turns a backend's templates into the statements of one bus:
 * substitutes the table prefix and builds the multi-row inserts. */
#include "db/tsql.h"
#include "transport/sql_dialect.h"
#include "transport/transport.h"

#include <string.h>

char *sb__sql_subst(const char *tpl, const char *prefix, int *rc)
{
    if (tpl == NULL || *rc != SB_OK)
        return NULL;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    for (const char *p = tpl; *p;) {
        const char *hit = strstr(p, "{p}");
        if (hit == NULL) {
            sb__buf_puts(&b, p);
            break;
        }
        sb__buf_append(&b, p, (size_t)(hit - p));
        sb__buf_puts(&b, prefix);
        p = hit + 3;
    }
    char *s = sb__buf_detach(&b);
    if (s == NULL)
        *rc = SB_NOMEM;
    return s;
}

/* The text built in `b` (freed) with the prefix substituted. */
static char *subst_built(sb_buf *b, const char *prefix, int *rc)
{
    char *tpl = sb__buf_detach(b);
    if (tpl == NULL) {
        *rc = SB_NOMEM;
        return NULL;
    }
    char *s = sb__sql_subst(tpl, prefix, rc);
    sb__free(tpl);
    return s;
}

/* One row of a multi-row insert: each "%d" of `row` in turn becomes
 * the next of the row's `width` parameter numbers from `base`, then the
 * row's ordinal (for dialects that dedupe in SQL). */
static void put_row(sb_buf *b, const char *row, int base, int width, int ord)
{
    int k = 0;
    for (const char *p = row; *p; p++) {
        if (p[0] == '%' && p[1] == 'd') {
            sb__buf_printf(b, "%d", k < width ? base + k : ord);
            k++;
            p++;
        } else {
            sb__buf_append(b, p, 1);
        }
    }
}

/* An insert of `rows` rows: $1 queue, $2 now; then `width` per row (4,
 * or SB_INSERT_EX_WIDTH with the options of sb_outgoing_ex: the _ex
 * templates). */
static char *multi_insert(const char *head, const char *row, const char *tail,
                          int width, const char *prefix, int rows, int *rc)
{
    if (*rc != SB_OK || head == NULL)
        return NULL;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    sb__buf_puts(&b, head);
    for (int i = 0; i < rows; i++) {
        if (i > 0)
            sb__buf_puts(&b, ", ");
        put_row(&b, row, 3 + width * i, width, i);
    }
    sb__buf_puts(&b, tail);
    return subst_built(&b, prefix, rc);
}

static const int insert_rows[3] = {1, 10, 100};

/* The index builds with their lock in one batch; whatever fails, the
 * session's LOCK_TIMEOUT is put back (the error, rethrown, keeps its
 * number: 1222 is retried). An attention or a compile error skips the
 * CATCH: then the rollback that follows resets it (db/tsql.h,
 * SB_TSQL_ROLLBACK). */
static char *index_ddl(const sb_sql_templates *t, const char *prefix, int *rc)
{
    if (t->ddl_indexes == NULL || *rc != SB_OK)
        return NULL;
    sb_buf b;
    sb__buf_init(&b, 1 << 20);
    sb__buf_puts(&b, "BEGIN TRY\n");
    sb__buf_puts(&b, t->index_lock);
    sb__buf_puts(&b, t->ddl_indexes);
    sb__buf_puts(&b, SB_TSQL_LOCK_TIMEOUT_RESET
                 ";\nEND TRY\nBEGIN CATCH\n" SB_TSQL_LOCK_TIMEOUT_RESET
                 ";\nTHROW;\nEND CATCH;\n");
    return subst_built(&b, prefix, rc);
}

int sb__transport_sql_new(int dialect, const char *prefix,
                          sb_transport_sql **out, sb_error *err)
{
    const sb_sql_templates *t = dialect == SB_DIALECT_SQLITE ? &sb__sql_sqlite
                                : dialect == SB_DIALECT_POSTGRES
                                    ? &sb__sql_postgres
                                : dialect == SB_DIALECT_MSSQL ? &sb__sql_mssql
                                                              : NULL;
    *out = NULL;
    if (t == NULL)
        return sb__err(err, SB_INVALID, "backend",
                       "the transport has no SQL for this backend");
    sb_transport_sql *s = sb__calloc(1, sizeof *s);
    if (s == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    int rc = SB_OK;
    s->ddl = sb__sql_subst(t->ddl, prefix, &rc);
    s->upgrade = sb__sql_subst(t->upgrade, prefix, &rc);
    s->lock = sb__sql_subst(t->lock, prefix, &rc);
    s->index_ddl = index_ddl(t, prefix, &rc);
    for (int i = 0; i < 3; i++) {
        s->insert[i] =
            multi_insert(t->insert_head, t->insert_row, t->insert_tail, 4,
                         prefix, insert_rows[i], &rc);
        s->insert_ex[i] =
            multi_insert(t->insert_head_ex, t->insert_row_ex,
                         t->insert_tail_ex ? t->insert_tail_ex : t->insert_tail,
                         SB_INSERT_EX_WIDTH, prefix, insert_rows[i], &rc);
    }
    s->claim_prio = sb__sql_subst(t->claim_prio, prefix, &rc);
    s->mark_prioritized = sb__sql_subst(t->mark_prioritized, prefix, &rc);
    s->settings_get = sb__sql_subst(t->settings_get, prefix, &rc);
    s->settings_list = sb__sql_subst(t->settings_list, prefix, &rc);
    s->settings_pause = sb__sql_subst(t->settings_pause, prefix, &rc);
    s->settings_ttl = sb__sql_subst(t->settings_ttl, prefix, &rc);
    s->settings_limits = sb__sql_subst(t->settings_limits, prefix, &rc);
    s->limit_lock = sb__sql_subst(t->limit_lock, prefix, &rc);
    s->limit_running = sb__sql_subst(t->limit_running, prefix, &rc);
    s->limit_take = sb__sql_subst(t->limit_take, prefix, &rc);
    s->expire_due = sb__sql_subst(t->expire_due, prefix, &rc);
    s->expire_ttl = sb__sql_subst(t->expire_ttl, prefix, &rc);
    s->clock_now = sb__sql_subst(t->clock_now, prefix, &rc);
    s->cancel_key_get = sb__sql_subst(t->cancel_key_get, prefix, &rc);
    s->unique_lock = sb__sql_subst(t->unique_lock, prefix, &rc);
    s->unique_holder = sb__sql_subst(t->unique_holder, prefix, &rc);
    s->unique_window_get = sb__sql_subst(t->unique_window_get, prefix, &rc);
    s->unique_window_put = sb__sql_subst(t->unique_window_put, prefix, &rc);
    s->unique_prune = sb__sql_subst(t->unique_prune, prefix, &rc);
    s->cancel_get = sb__sql_subst(t->cancel_get, prefix, &rc);
    s->progress_set = sb__sql_subst(t->progress_set, prefix, &rc);
    s->schedule_put = sb__sql_subst(t->schedule_put, prefix, &rc);
    s->schedule_remove = sb__sql_subst(t->schedule_remove, prefix, &rc);
    s->schedule_list = sb__sql_subst(t->schedule_list, prefix, &rc);
    s->schedule_due = sb__sql_subst(t->schedule_due, prefix, &rc);
    s->schedule_settle = sb__sql_subst(t->schedule_settle, prefix, &rc);
    s->schedule_wake = sb__sql_subst(t->schedule_wake, prefix, &rc);
    s->heartbeat_beat = sb__sql_subst(t->heartbeat_beat, prefix, &rc);
    s->heartbeat_stop = sb__sql_subst(t->heartbeat_stop, prefix, &rc);
    s->heartbeat_list = sb__sql_subst(t->heartbeat_list, prefix, &rc);
    s->heartbeat_monitor = sb__sql_subst(t->heartbeat_monitor, prefix, &rc);
    s->heartbeat_remove = sb__sql_subst(t->heartbeat_remove, prefix, &rc);
    s->setting_get = sb__sql_subst(t->setting_get, prefix, &rc);
    s->setting_put = sb__sql_subst(t->setting_put, prefix, &rc);
    s->setting_remove = sb__sql_subst(t->setting_remove, prefix, &rc);
    s->setting_list = sb__sql_subst(t->setting_list, prefix, &rc);
    s->claim = sb__sql_subst(t->claim, prefix, &rc);
    s->claim_delete = sb__sql_subst(t->claim_delete, prefix, &rc);
    s->claim_from = sb__sql_subst(t->claim_from, prefix, &rc);
    s->ack = sb__sql_subst(t->ack, prefix, &rc);
    s->nak = sb__sql_subst(t->nak, prefix, &rc);
    s->hand_back = sb__sql_subst(t->hand_back, prefix, &rc);
    s->renew = sb__sql_subst(t->renew, prefix, &rc);
    s->ack_many = sb__sql_subst(t->ack_many, prefix, &rc);
    s->renew_many = sb__sql_subst(t->renew_many, prefix, &rc);
    s->hand_back_many = sb__sql_subst(t->hand_back_many, prefix, &rc);
    s->dead_letter = sb__sql_subst(t->dead_letter, prefix, &rc);
    s->dlq_insert = sb__sql_subst(t->dlq_insert, prefix, &rc);
    s->delete_any = sb__sql_subst(t->delete_any, prefix, &rc);
    s->pending = sb__sql_subst(t->pending, prefix, &rc);
    s->stats = sb__sql_subst(t->stats, prefix, &rc);
    s->dlq_stats = sb__sql_subst(t->dlq_stats, prefix, &rc);
    s->dlq_list = sb__sql_subst(t->dlq_list, prefix, &rc);
    s->peek = sb__sql_subst(t->peek, prefix, &rc);
    s->prune = sb__sql_subst(t->prune, prefix, &rc);
    s->columns = sb__sql_subst(t->columns, prefix, &rc);
    s->indexes = sb__sql_subst(t->indexes, prefix, &rc);
    s->notify = sb__sql_subst(t->notify, prefix, &rc);
    s->counts_add = sb__sql_subst(t->counts_add, prefix, &rc);
    s->counts_list = sb__sql_subst(t->counts_list, prefix, &rc);
    s->counts_prune = sb__sql_subst(t->counts_prune, prefix, &rc);
    s->xmin_holder = sb__sql_subst(t->xmin_holder, prefix, &rc);
    if (rc != SB_OK) {
        sb__transport_sql_free(s);
        return sb__err(err, rc, NULL, "out of memory");
    }
    *out = s;
    return SB_OK;
}

void sb__transport_sql_free(sb_transport_sql *s)
{
    if (s == NULL)
        return;
    char **all[] = {&s->ddl,
                    &s->upgrade,
                    &s->lock,
                    &s->index_ddl,
                    &s->insert[0],
                    &s->insert[1],
                    &s->insert[2],
                    &s->insert_ex[0],
                    &s->insert_ex[1],
                    &s->insert_ex[2],
                    &s->claim_prio,
                    &s->mark_prioritized,
                    &s->settings_get,
                    &s->settings_list,
                    &s->settings_pause,
                    &s->settings_ttl,
                    &s->settings_limits,
                    &s->limit_lock,
                    &s->limit_running,
                    &s->limit_take,
                    &s->expire_due,
                    &s->expire_ttl,
                    &s->clock_now,
                    &s->cancel_key_get,
                    &s->unique_lock,
                    &s->unique_holder,
                    &s->unique_window_get,
                    &s->unique_window_put,
                    &s->unique_prune,
                    &s->cancel_get,
                    &s->progress_set,
                    &s->schedule_put,
                    &s->schedule_remove,
                    &s->schedule_list,
                    &s->schedule_due,
                    &s->schedule_settle,
                    &s->schedule_wake,
                    &s->heartbeat_beat,
                    &s->heartbeat_stop,
                    &s->heartbeat_list,
                    &s->heartbeat_monitor,
                    &s->heartbeat_remove,
                    &s->setting_get,
                    &s->setting_put,
                    &s->setting_remove,
                    &s->setting_list,
                    &s->claim,
                    &s->claim_delete,
                    &s->claim_from,
                    &s->ack,
                    &s->nak,
                    &s->hand_back,
                    &s->renew,
                    &s->dead_letter,
                    &s->ack_many,
                    &s->renew_many,
                    &s->hand_back_many,
                    &s->dlq_insert,
                    &s->delete_any,
                    &s->pending,
                    &s->stats,
                    &s->dlq_stats,
                    &s->dlq_list,
                    &s->peek,
                    &s->prune,
                    &s->columns,
                    &s->indexes,
                    &s->notify,
                    &s->counts_add,
                    &s->counts_list,
                    &s->counts_prune,
                    &s->xmin_holder};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sb__free(*all[i]);
    sb__free(s);
}

int sb__backend_dialect(const char *backend, const char *table_prefix,
                        int *dialect, sb_error *err)
{
    const char *prefix = table_prefix ? table_prefix : "sqlbus_";
    int rc =
        sb__validate_identifier(prefix, SB_MAX_PREFIX_LEN, "table_prefix", err);
    if (rc != SB_OK)
        return rc;
    if (backend != NULL && strcmp(backend, "sqlite") == 0)
        *dialect = SB_DIALECT_SQLITE;
    else if (backend != NULL && (strcmp(backend, "postgresql") == 0 ||
                                 strcmp(backend, "postgres") == 0))
        *dialect = SB_DIALECT_POSTGRES;
    else if (backend != NULL && strcmp(backend, "mssql") == 0)
        *dialect = SB_DIALECT_MSSQL;
    else
        return sb__err(err, SB_INVALID, "backend",
                       "backend must be \"sqlite\", \"postgresql\" or "
                       "\"mssql\"");
    return SB_OK;
}

int sb__ddl_for(const char *backend, const char *table_prefix,
                const char *sqlite_ddl, const char *postgres_ddl,
                const char *mssql_ddl, char **out, sb_error *err)
{
    if (out == NULL)
        return sb__err(err, SB_INVALID, "out", "out must not be NULL");
    *out = NULL;
    int dialect = 0;
    int rc = sb__backend_dialect(backend, table_prefix, &dialect, err);
    if (rc != SB_OK)
        return rc;
    const char *ddl = dialect == SB_DIALECT_SQLITE     ? sqlite_ddl
                      : dialect == SB_DIALECT_POSTGRES ? postgres_ddl
                                                       : mssql_ddl;
    *out = sb__sql_subst(ddl, table_prefix ? table_prefix : "sqlbus_", &rc);
    return rc == SB_OK ? SB_OK : sb__err(err, rc, NULL, "out of memory");
}

int sb_schema_sql(const char *backend, const char *table_prefix, char **out,
                  sb_error *err)
{
    sb_buf mssql;
    sb__buf_init(&mssql, 1 << 20);
    sb__buf_puts(&mssql, sb__sql_mssql_tables);
    sb__buf_puts(&mssql, sb__sql_mssql_indexes);
    int rc = mssql.failed
                 ? sb__err(err, SB_NOMEM, NULL, "out of memory")
                 : sb__ddl_for(backend, table_prefix, sb__sql_sqlite.ddl,
                               sb__sql_postgres.ddl, mssql.data, out, err);
    sb__buf_free(&mssql);
    return rc;
}
