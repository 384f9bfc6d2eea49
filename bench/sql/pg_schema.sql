-- The transport table of sqlbus on PostgreSQL (default prefix "sqlbus_"),
-- copied from the DDL in src/transport/sql_postgres.c so the pgbench
-- baseline (rule P5) runs the same claim and settle SQL on the same table and
-- indexes without the library. bench/run warns when `sqlbus schema` differs.
DROP TABLE IF EXISTS sqlbus_messages;
CREATE TABLE IF NOT EXISTS sqlbus_messages (
  id uuid NOT NULL PRIMARY KEY,
  queue text COLLATE "C" NOT NULL,
  payload bytea NOT NULL,
  headers text NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  available_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  lock_id uuid,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  dead_letter_reason text
) WITH (fillfactor = 50);
CREATE INDEX IF NOT EXISTS sqlbus_messages_ready_idx
  ON sqlbus_messages (queue, available_at, created_at);
CREATE INDEX IF NOT EXISTS sqlbus_messages_created_idx
  ON sqlbus_messages (created_at);
