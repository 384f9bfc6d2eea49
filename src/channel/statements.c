/* statements.c - the channel's statement texts by name, for review
 * (sb_channel_statements, `sqlbus schema print --statements`). */
#include "channel/channel.h"

/* In the order of the CH_ enum (channel.h). */
static const char *const names[] = {
    "ddl",              "lock",              "watermark",
    "seq_next",         "subscribe",         "save_recovery",
    "unsubscribe",      "forget_recovery",   "live",
    "insert",           "stored",            "scan",
    "claim",            "acked",             "recover",
    "registrations",    "prune_messages",    "prune_subscribers",
    "prune_recovery",   "notify",            "reply_by_id",
    "registration",     "subscribe_many",    "orphans",
    "mark_dispatched",  "list_registrations", "count_stale",
    "scan_many",        "count_states",
};
_Static_assert(sizeof names / sizeof names[0] == CH_COUNT_STATES + 1 &&
                   sizeof names / sizeof names[0] ==
                       sizeof(((sb_channel_sql *)0)->s) / sizeof(char *),
               "every statement of the channel has a name");

int sb_channel_statements(const char *backend, const char *table_prefix,
                          sb_statement_fn fn, void *user, sb_error *err)
{
    int dialect = 0;
    int rc = sb__statements_begin(backend, table_prefix, fn, &dialect, err);
    sb_channel_sql s;
    if (rc == SB_OK)
        rc = sb__channel_sql_new(dialect,
                                 table_prefix ? table_prefix : "sqlbus_", &s,
                                 err);
    if (rc != SB_OK)
        return rc;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        sb__statement_emit(fn, user, "channel", names[i], s.s[i]);
    sb__channel_sql_free(&s);
    if (dialect == SB_DIALECT_MSSQL) /* the open's catalog check */
        sb__statement_emit(fn, user, "channel", "verify_sequence",
                           sb__channel_seq_sql);
    return SB_OK;
}
