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
    int rc = SB_OK;
#define X(f) out->f = sb__sql_subst(t->f, prefix, &rc);
    SB_CH_STATEMENTS(X)
#undef X
    if (rc != SB_OK) {
        sb__channel_sql_free(out);
        return sb__err(err, rc, NULL, "out of memory");
    }
    return SB_OK;
}

void sb__channel_sql_free(sb_channel_sql *sql)
{
#define X(f)                                                                   \
    sb__free(sql->f);                                                          \
    sql->f = NULL;
    SB_CH_STATEMENTS(X)
#undef X
}

int sb_channel_schema_sql(const char *backend, const char *table_prefix,
                          char **out, sb_error *err)
{
    return sb__ddl_for(backend, table_prefix, sb__channel_sql_sqlite.ddl,
                       sb__channel_sql_postgres.ddl, sb__channel_sql_mssql.ddl,
                       out, err);
}

int sb__channel_next_seq(sb_channel *ch, sb_conn *c, int64_t *seq,
                         sb_error *err)
{
    sb_rows *rows = NULL;
    int rc = sb__query(c, CH_SQL(ch, seq_next), NULL, 0, &rows, NULL, err);
    if (rc == SB_OK && rows->nrows == 1)
        *seq = sb__rows_int(rows, 0, 0);
    else if (rc == SB_OK)
        rc = sb__err(err, SB_SCHEMA_MISMATCH, "channel_ack_seq",
                     "the ack sequence row is missing");
    sb__rows_free(rows);
    return rc;
}
