/* statements.c - every statement text of the transport by name, for
 * review (sb_schema_statements, `sqlbus schema print --statements`), on
 * SQL Server with the session and transaction batches the driver sends,
 * and the naming the channel's and the error store's walks share. */
#include "transport/transport.h"

#include "db/tsql.h"

#include <stddef.h>
#include <stdio.h>

/* The fields of sb_transport_sql (transport.h), each named. */
static const struct {
    const char *name;
    size_t off;
} fields[] = {
#define F(f)                                                                   \
    {                                                                          \
#f, offsetof(sb_transport_sql, f)                                      \
    }
    F(ddl),
    F(upgrade),
    F(lock),
    F(index_ddl),
    {"insert_1", offsetof(sb_transport_sql, insert[0])},
    {"insert_10", offsetof(sb_transport_sql, insert[1])},
    {"insert_100", offsetof(sb_transport_sql, insert[2])},
    {"insert_ex_1", offsetof(sb_transport_sql, insert_ex[0])},
    {"insert_ex_10", offsetof(sb_transport_sql, insert_ex[1])},
    {"insert_ex_100", offsetof(sb_transport_sql, insert_ex[2])},
    F(claim),
    F(claim_prio),
    F(claim_delete),
    F(claim_from),
    F(xmin_holder),
    F(ack),
    F(nak),
    F(hand_back),
    F(renew),
    F(ack_many),
    F(renew_many),
    F(hand_back_many),
    F(dead_letter),
    F(dlq_insert),
    F(delete_any),
    F(pending),
    F(stats),
    F(dlq_stats),
    F(dlq_list),
    F(peek),
    F(prune),
    F(columns),
    F(indexes),
    F(notify),
    F(counts_add),
    F(counts_list),
    F(counts_prune),
    F(mark_prioritized),
    F(settings_get),
    F(settings_list),
    F(settings_pause),
    F(settings_ttl),
    F(settings_limits),
    F(limit_lock),
    F(limit_running),
    F(limit_take),
    F(expire_due),
    F(expire_ttl),
    F(clock_now),
    F(cancel_key_get),
    F(unique_lock),
    F(unique_holder),
    F(unique_window_get),
    F(unique_window_put),
    F(unique_prune),
    F(cancel_get),
    F(progress_set),
    F(schedule_put),
    F(schedule_remove),
    F(schedule_list),
    F(schedule_due),
    F(schedule_settle),
    F(schedule_wake),
    F(heartbeat_beat),
    F(heartbeat_stop),
    F(heartbeat_list),
    F(heartbeat_monitor),
    F(heartbeat_remove),
    F(setting_get),
    F(setting_put),
    F(setting_remove),
    F(setting_list),
#undef F
};
_Static_assert(sizeof fields / sizeof fields[0] ==
                   sizeof(sb_transport_sql) / sizeof(char *),
               "every statement of the transport has a name");

void sb__statement_emit(sb_statement_fn fn, void *user, const char *module,
                        const char *name, const char *sql)
{
    if (sql == NULL || sql[0] == '\0') /* not sent on this backend */
        return;
    char full[128];
    snprintf(full, sizeof full, "%s.%s", module, name);
    fn(full, sql, user);
}

int sb__statements_begin(const char *backend, const char *table_prefix,
                         sb_statement_fn fn, int *dialect, sb_error *err)
{
    sb_error_clear(err);
    if (fn == NULL)
        return sb__err(err, SB_INVALID, "fn", "fn must not be NULL");
    return sb__backend_dialect(backend, table_prefix, dialect, err);
}

int sb_schema_statements(const char *backend, const char *table_prefix,
                         sb_statement_fn fn, void *user, sb_error *err)
{
    int dialect = 0;
    int rc = sb__statements_begin(backend, table_prefix, fn, &dialect, err);
    sb_transport_sql *s = NULL;
    if (rc == SB_OK)
        rc = sb__transport_sql_new(
            dialect, table_prefix ? table_prefix : "sqlbus_", &s, err);
    if (rc != SB_OK)
        return rc;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        sb__statement_emit(fn, user, "transport", fields[i].name,
                           *(char **)(void *)((char *)s + fields[i].off));
    sb__transport_sql_free(s);
    if (dialect == SB_DIALECT_MSSQL) { /* what the driver sends (odbc.c) */
        sb__statement_emit(fn, user, "db", "session",
                           SB_TSQL_SESSION SB_TSQL_COMPAT_LEVEL);
        sb__statement_emit(fn, user, "db", "begin", SB_TSQL_BEGIN);
        sb__statement_emit(fn, user, "db", "commit", SB_TSQL_COMMIT);
        sb__statement_emit(fn, user, "db", "rollback", SB_TSQL_ROLLBACK);
    }
    return SB_OK;
}
