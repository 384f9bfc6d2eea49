/* history.c - each failed message's status history (E23, for the
 * dashboard's message detail, S13): a row of failed_message_history per
 * change of status (retry issued, resolved, archived, unarchived, failed
 * again), written by a row trigger in the transaction of whatever
 * statement changes the status, so no write path can forget it, and
 * removed with the message. The first failure is the message's own
 * first_time_of_failure, so ingesting a new message writes nothing here;
 * a trigger that fires only when the status changes costs ingestion
 * nothing for the re-failures of unresolved messages. */
#include "errors/errors.h"

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
    "CREATE TRIGGER IF NOT EXISTS {p}fh_fm_ad AFTER DELETE ON " FM
    " BEGIN\n"
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

void sb__errors_history_ddl(int pg, const char *text_type, sb_buf *b)
{
    sb__buf_printf(b, table_ddl, text_type);
    sb__buf_puts(b, pg ? pg_ddl : sqlite_ddl);
}

void sb__errors_history_sql(sb_buf *b)
{
    /* The newest SB_HISTORY_MAX, read oldest first by the accessors. */
    sb__buf_printf(b,
                   "SELECT status, previous, changed_at FROM " HISTORY
                   " WHERE unique_message_id = $1 ORDER BY changed_at DESC "
                   "LIMIT %d",
                   SB_HISTORY_MAX);
}
