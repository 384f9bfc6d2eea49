/* sql.c - the channel's statements for one bus (prefix substituted). */
#include "channel/channel.h"

#include <string.h>

int sb__channel_sql_new(int dialect, const char *prefix, sb_channel_sql *out,
                        sb_error *err)
{
    const sb_channel_templates *t =
        dialect == SB_DIALECT_SQLITE     ? &sb__channel_sql_sqlite
        : dialect == SB_DIALECT_POSTGRES ? &sb__channel_sql_postgres
        : dialect == SB_DIALECT_MSSQL    ? &sb__channel_sql_mssql
                                         : NULL;
    memset(out, 0, sizeof *out);
    if (t == NULL)
        return sb__err(err, SB_INVALID, "backend",
                       "the channel has no SQL for this backend");
    /* The order of the enum in channel.h. */
    const char *all[] = {t->ddl,
                         t->lock,
                         t->watermark,
                         t->seq_next,
                         t->subscribe,
                         t->save_recovery,
                         t->unsubscribe,
                         t->forget_recovery,
                         t->live,
                         t->insert,
                         t->stored,
                         t->scan,
                         t->claim,
                         t->acked,
                         t->recover,
                         t->registrations,
                         t->prune_messages,
                         t->prune_subscribers,
                         t->prune_recovery,
                         t->notify,
                         t->reply_by_id,
                         t->registration,
                         t->subscribe_many,
                         t->orphans,
                         t->mark_dispatched,
                         t->list_registrations,
                         t->count_stale,
                         t->scan_many,
                         t->count_states};
    int rc = SB_OK;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        out->s[i] = sb__sql_subst(all[i], prefix, &rc);
    if (rc != SB_OK) {
        sb__channel_sql_free(out);
        return sb__err(err, rc, NULL, "out of memory");
    }
    return SB_OK;
}

void sb__channel_sql_free(sb_channel_sql *sql)
{
    for (size_t i = 0; i < sizeof sql->s / sizeof sql->s[0]; i++) {
        sb__free(sql->s[i]);
        sql->s[i] = NULL;
    }
}

int sb_channel_schema_sql(const char *backend, const char *table_prefix,
                          char **out, sb_error *err)
{
    return sb__ddl_for(backend, table_prefix, sb__channel_sql_sqlite.ddl,
                       sb__channel_sql_postgres.ddl,
                       sb__channel_sql_mssql.ddl, "channel", out, err);
}
