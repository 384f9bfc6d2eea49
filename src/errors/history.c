/* history.c - each failed message's status history (E23, for the
 * dashboard's message detail, S13): a row of failed_message_history per
 * change of status (retry issued, resolved, archived, unarchived, failed
 * again), written by a row trigger in the transaction of whatever
 * statement changes the status, so no write path can forget it, and
 * removed with the message. The first failure is the message's own
 * first_time_of_failure, so ingesting a new message writes nothing here;
 * a trigger that fires only when the status changes costs ingestion
 * nothing for the re-failures of unresolved messages. */
#include "errors/sql_int.h"

#define HISTORY "{p}failed_message_history"
#define FM "{p}failed_messages"

static const char table_ddl[] =
    "CREATE TABLE IF NOT EXISTS " HISTORY " (\n"
    "  unique_message_id %s NOT NULL,\n"
    "  changed_at BIGINT NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  previous INTEGER NOT NULL\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_message_history_idx ON " HISTORY
    " (unique_message_id, changed_at);\n";

static const char sqlite_ddl[] =
    "CREATE TRIGGER IF NOT EXISTS {p}fh_fm_au AFTER UPDATE OF status ON " FM
    " WHEN old.status <> new.status BEGIN\n"
    "  INSERT INTO " HISTORY " (unique_message_id, changed_at, status, "
    "previous) VALUES (new.unique_message_id, new.status_changed_at, "
    "new.status, old.status);\n"
    "END;\n"
    "CREATE TRIGGER IF NOT EXISTS {p}fh_fm_ad AFTER DELETE ON " FM " BEGIN\n"
    "  DELETE FROM " HISTORY " WHERE unique_message_id = "
    "old.unique_message_id;\n"
    "END;\n";

/* Row triggers with a WHEN clause: a statement that changes no status
 * queues no event (a statement trigger would copy every updated row into
 * its transition table first). */
static const char pg_ddl[] =
    "CREATE OR REPLACE FUNCTION {p}fh_change() RETURNS trigger LANGUAGE "
    "plpgsql AS $f$ BEGIN\n"
    "  IF TG_OP = 'DELETE' THEN\n"
    "    DELETE FROM " HISTORY " WHERE unique_message_id = "
    "OLD.unique_message_id;\n"
    "  ELSE\n"
    "    INSERT INTO " HISTORY " (unique_message_id, changed_at, status, "
    "previous) VALUES (NEW.unique_message_id, NEW.status_changed_at, "
    "NEW.status, OLD.status);\n"
    "  END IF;\n"
    "  RETURN NULL;\n"
    "END $f$;\n"
    "DO $do$ BEGIN\n"
    "IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '" FM
    "'::regclass AND tgname = '{p}fh_fm_upd') THEN\n"
    "  CREATE TRIGGER {p}fh_fm_upd AFTER UPDATE OF status ON " FM
    " FOR EACH ROW WHEN (OLD.status <> NEW.status) EXECUTE FUNCTION "
    "{p}fh_change();\n"
    "END IF;\n"
    "IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '" FM
    "'::regclass AND tgname = '{p}fh_fm_del') THEN\n"
    "  CREATE TRIGGER {p}fh_fm_del AFTER DELETE ON " FM
    " FOR EACH ROW EXECUTE FUNCTION {p}fh_change();\n"
    "END IF;\n"
    "END $do$;\n";

/* SQL Server: statement triggers over inserted / deleted (it has no row
 * triggers); the update one returns at once unless the statement set
 * status, and writes only the rows whose status changed. The history is
 * clustered on its lookup key, so the delete with a message and the read
 * of its newest changes are range seeks. */
static const char ms_table_ddl[] =
    "IF OBJECT_ID(N'" HISTORY "', N'U') IS NULL\n"
    "CREATE TABLE " HISTORY " (\n"
    "  unique_message_id nvarchar(400) COLLATE " SB_MS_BIN2 " NOT NULL,\n"
    "  changed_at bigint NOT NULL,\n"
    "  status int NOT NULL,\n"
    "  previous int NOT NULL\n"
    ");\n"
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = "
    "OBJECT_ID(N'" HISTORY "', N'U') AND name = "
    "N'{p}failed_message_history_idx')\n"
    "EXEC(N'CREATE CLUSTERED INDEX {p}failed_message_history_idx ON " HISTORY
    " (unique_message_id, changed_at)');\n";

static void ms_ddl(sb_buf *b)
{
    sb__buf_puts(b, ms_table_ddl);
    sb__errors_ms_trigger(
        b, "{p}fh_fm_upd", FM, "UPDATE",
        "BEGIN SET NOCOUNT ON; IF NOT UPDATE(status) RETURN; INSERT INTO " HISTORY
        " (unique_message_id, changed_at, status, previous) SELECT "
        "nw.unique_message_id, nw.status_changed_at, nw.status, od.status "
        "FROM inserted AS nw JOIN deleted AS od ON od.unique_message_id = "
        "nw.unique_message_id WHERE od.status <> nw.status; END");
    sb__errors_ms_trigger(
        b, "{p}fh_fm_del", FM, "DELETE",
        "BEGIN SET NOCOUNT ON; DELETE h FROM " HISTORY " AS h JOIN deleted "
        "AS od ON h.unique_message_id = od.unique_message_id; END");
}

void sb__errors_history_ddl(int dialect, const char *text_type, sb_buf *b)
{
    if (dialect == SB_DIALECT_MSSQL) {
        ms_ddl(b);
        return;
    }
    sb__buf_printf(b, table_ddl, text_type);
    sb__buf_puts(b, dialect == SB_DIALECT_POSTGRES ? pg_ddl : sqlite_ddl);
}

void sb__errors_history_sql(int dialect, sb_buf *b)
{
    /* The newest SB_HISTORY_MAX, read oldest first by the accessors; on
     * SQL Server the id is a caller's (the sentinel: sql_int.h). */
    if (dialect == SB_DIALECT_MSSQL)
        sb__buf_printf(
            b,
            "SELECT TOP (%d) status, previous, changed_at FROM " HISTORY
            " WHERE " SB_MS_SAME("unique_message_id",
                                 "$1") " ORDER BY changed_at DESC",
            SB_HISTORY_MAX);
    else
        sb__buf_printf(b,
                       "SELECT status, previous, changed_at FROM " HISTORY
                       " WHERE unique_message_id = $1 ORDER BY changed_at "
                       "DESC LIMIT %d",
                       SB_HISTORY_MAX);
}
