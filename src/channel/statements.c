/* statements.c - the channel's statement texts by name, for review
 * (sb_channel_statements, `sqlbus schema print --statements`). */
#include "channel/channel.h"

int sb_channel_statements(const char *backend, const char *table_prefix,
                          sb_statement_fn fn, void *user, sb_error *err)
{
    int dialect = 0;
    int rc = sb__statements_begin(backend, table_prefix, fn, &dialect, err);
    sb_channel_sql s;
    if (rc == SB_OK)
        rc = sb__channel_sql_new(
            dialect, table_prefix ? table_prefix : "sqlbus_", &s, err);
    if (rc != SB_OK)
        return rc;
#define X(f) sb__statement_emit(fn, user, "channel", #f, s.f);
    SB_CH_STATEMENTS(X)
#undef X
    sb__channel_sql_free(&s);
    if (dialect == SB_DIALECT_MSSQL) /* the open's catalog check */
        sb__statement_emit(fn, user, "channel", "verify_sequence",
                           sb__channel_seq_sql);
    return SB_OK;
}
