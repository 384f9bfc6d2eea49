/* sql.c - the error store's statements for one dialect and table prefix.
 * The set-based statements take their rows as one JSON array parameter
 * (PostgreSQL json_to_recordset, SQLite json_each, SQL Server OPENJSON),
 * so a chunk is one fixed statement text whatever its size, far from
 * every backend's parameter limit (E11). The upsert's guards (E10) are
 * generated from the column list below, the same for every backend.
 * PostgreSQL's and SQLite's statements are built here; SQL Server's in
 * sql_mssql.c, from the same column list and guard generator. */
#include "errors/sql_int.h"

#include <string.h>

typedef sb_err_column column;
typedef sb_err_dialect dialect;

const sb_err_column sb__err_columns[] = {
    {"unique_message_id", 't', 0, SB_MS_ID_MAX},
    {"number_of_processing_attempts", 'i', 0, 0},
    {"first_time_of_failure", 'i', 0, 0},
    {"last_time_of_failure", 'i', 0, 0},
    {"last_attempted_at", 'i', 0, 0},
    {"message_id", 't', 1, 0},
    {"message_type", 't', 1, SB_MS_TYPE_MAX},
    {"failed_queue", 't', 1, SB_MS_QUEUE_MAX},
    {"processing_endpoint", 't', 1, SB_MS_ENDPOINT_MAX},
    {"host", 't', 1, 0},
    {"host_id", 't', 1, 0},
    {"instance_id", 't', 1, 0},
    {"exception_type", 't', 1, 0},
    {"exception_message", 't', 1, 0},
    {"time_sent", 'i', 1, 0},
    {"conversation_id", 't', 1, 0},
    {"is_system", 'i', 1, 0},
    {"headers", 't', 1, 0},
    {"body_text", 't', 1, 0},
    {"body_size", 'i', 1, 0},
    {"body_content_type", 't', 1, 0},
    {"body_stored_externally", 'i', 1, 0},
};
#define columns sb__err_columns
#define N_COLUMNS (sizeof sb__err_columns / sizeof sb__err_columns[0])
const size_t sb__err_n_columns = N_COLUMNS;

/* Times are microseconds since the epoch on both backends: they come from
 * failure headers, not from the database clock. The indexes serve the
 * list's pages (docs/errors.md, "Which pages are fast"); the time index
 * serves the pages of every status, or of several (the HTTP API's
 * default and its status lists). The queue index
 * is in (message type, unique id) order within a queue, so one queue's
 * page sorted by type reads only that page (P11); the status at its end
 * filters inside the index. It replaced (failed_queue, status). The
 * message id and conversation indexes serve a message's lookup by its
 * message id and a conversation's messages (the HTTP API's message
 * views, issue 22). */
static const char ddl_tail[] =
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_status_idx\n"
    "  ON {p}failed_messages (status, last_time_of_failure);\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_time_idx\n"
    "  ON {p}failed_messages (last_time_of_failure, unique_message_id);\n"
    "DROP INDEX IF EXISTS {p}failed_messages_queue_idx;\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_queue_type_idx\n"
    "  ON {p}failed_messages (failed_queue, message_type,\n"
    "  unique_message_id, status);\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_type_idx\n"
    "  ON {p}failed_messages (message_type);\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_attempts_idx\n"
    "  ON {p}failed_messages (status, number_of_processing_attempts,\n"
    "  unique_message_id);\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_retention_idx\n"
    "  ON {p}failed_messages (status_changed_at) WHERE status IN (2, 3);\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_message_id_idx\n"
    "  ON {p}failed_messages (substr(message_id, 1, " SB_ERR_PREFIX_INDEXED
    "));\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_conversation_idx\n"
    "  ON {p}failed_messages (substr(conversation_id, 1, " SB_ERR_PREFIX_INDEXED
    "));\n"
    "CREATE TABLE IF NOT EXISTS {p}failed_message_groups (\n"
    "  unique_message_id TEXT NOT NULL,\n"
    "  group_id TEXT NOT NULL,\n"
    "  title TEXT NOT NULL,\n"
    "  type TEXT NOT NULL,\n"
    "  PRIMARY KEY (unique_message_id, group_id)\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_message_groups_type_idx\n"
    "  ON {p}failed_message_groups (type, group_id);\n"
    "CREATE TABLE IF NOT EXISTS {p}group_comments (\n"
    "  group_id TEXT NOT NULL PRIMARY KEY,\n"
    "  comment TEXT NOT NULL,\n"
    "  last_modified BIGINT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS {p}known_endpoints (\n"
    "  id TEXT NOT NULL PRIMARY KEY,\n"
    "  name TEXT NOT NULL,\n"
    "  host_id TEXT,\n"
    "  host TEXT,\n"
    "  monitored INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS {p}retry_claims (\n"
    "  unique_message_id TEXT NOT NULL PRIMARY KEY,\n"
    "  batch_id TEXT,\n"
    "  created_at BIGINT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS {p}group_operations (\n"
    "  group_id TEXT NOT NULL PRIMARY KEY,\n"
    "  kind TEXT NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  owner TEXT NOT NULL,\n"
    "  total BIGINT NOT NULL,\n"
    "  done BIGINT NOT NULL,\n"
    "  cursor_id TEXT NOT NULL,\n"
    "  started_at BIGINT NOT NULL,\n"
    "  updated_at BIGINT NOT NULL,\n"
    "  finished_at BIGINT\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS {p}message_edits (\n"
    "  unique_message_id TEXT NOT NULL PRIMARY KEY,\n"
    "  edit_message_id TEXT NOT NULL,\n"
    "  created_at BIGINT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS {p}redirects (\n"
    "  id TEXT NOT NULL PRIMARY KEY,\n"
    "  from_queue TEXT NOT NULL UNIQUE,\n"
    "  to_queue TEXT NOT NULL,\n"
    "  last_modified BIGINT NOT NULL\n"
    ");\n";

/* E22: full-text search, maintained in the ingestion transaction.
 * Ranking reads every match's vector, so the vector belongs in the row.
 * PostgreSQL moves values out of line, biggest first once compression
 * is not enough, until a row is under the table's toast_tuple_target
 * (2,032 bytes by default: four rows a page); a ~1.6 KB vector (a 1 KiB
 * body's words) is that value, and each match then cost a TOAST index
 * descent and chunk. The store's target is three rows a page
 * (PostgreSQL's formula with 3: (8,192 - 40) / 3, aligned down): the
 * headers and body are compressed in the row first, and such a row
 * (~2.6 KB) keeps its vector; at 1,000,000 messages a frequent-word
 * search took half the time, ingestion unchanged
 * (docs/internals/errors.md, "Speed"). A target set by hand is kept. The
 * vector's own storage stays the default (EXTENDED): kept in the row at
 * any size (MAIN) it pushed headers and body out of line instead and
 * halved ingestion; a store set so is set back. Rows written before keep
 * their layout until rewritten. Checked first, so an open takes no lock
 * on the table. */
static const char search_pg[] =
    "CREATE INDEX IF NOT EXISTS {p}failed_messages_search_idx\n"
    "  ON {p}failed_messages USING gin (search);\n"
    "DO $do$ BEGIN IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid =\n"
    "  '{p}failed_messages'::regclass AND attname = 'search' AND\n"
    "  attstorage <> 'x') THEN ALTER TABLE {p}failed_messages ALTER\n"
    "  COLUMN search SET STORAGE EXTENDED; END IF; END $do$;\n"
    "DO $do$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_class c,\n"
    "  unnest(c.reloptions) o WHERE c.oid = '{p}failed_messages'::regclass\n"
    "  AND o LIKE 'toast\\_tuple\\_target=%') THEN ALTER TABLE\n"
    "  {p}failed_messages SET (toast_tuple_target = 2712); END IF;\n"
    "  END $do$;\n";
/* Stores made while the vector was a generated column (to_tsvector in
 * the database) keep their vectors and take the upsert's from now on. */
static const char search_pg_unbind[] =
    "DO $do$ BEGIN IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid =\n"
    "  '{p}failed_messages'::regclass AND attname = 'search' AND\n"
    "  attgenerated = 's') THEN ALTER TABLE {p}failed_messages ALTER\n"
    "  COLUMN search DROP EXPRESSION; END IF; END $do$;\n";
static const char search_sqlite[] =
    "CREATE VIRTUAL TABLE IF NOT EXISTS {p}failed_messages_fts USING fts5(\n"
    "  message_type, headers, body_text, content = '{p}failed_messages',\n"
    "  tokenize = \"unicode61 separators '.+'\");\n"
    "CREATE TRIGGER IF NOT EXISTS {p}failed_messages_fts_ai AFTER INSERT ON\n"
    "  {p}failed_messages BEGIN INSERT INTO {p}failed_messages_fts (rowid,\n"
    "  message_type, headers, body_text) VALUES (new.rowid, "
    "new.message_type,\n  new.headers, new.body_text); END;\n"
    "CREATE TRIGGER IF NOT EXISTS {p}failed_messages_fts_ad AFTER DELETE ON\n"
    "  {p}failed_messages BEGIN INSERT INTO {p}failed_messages_fts\n"
    "  ({p}failed_messages_fts, rowid, message_type, headers, body_text)\n"
    "  VALUES ('delete', old.rowid, old.message_type, old.headers,\n"
    "  old.body_text); END;\n"
    "CREATE TRIGGER IF NOT EXISTS {p}failed_messages_fts_au AFTER UPDATE OF\n"
    "  message_type, headers, body_text ON {p}failed_messages BEGIN\n"
    "  INSERT INTO {p}failed_messages_fts ({p}failed_messages_fts, rowid,\n"
    "  message_type, headers, body_text) VALUES ('delete', old.rowid,\n"
    "  old.message_type, old.headers, old.body_text);\n"
    "  INSERT INTO {p}failed_messages_fts (rowid, message_type, headers,\n"
    "  body_text) VALUES (new.rowid, new.message_type, new.headers,\n"
    "  new.body_text); END;\n";

/* E10: the attempts the store has counted, one key each: a message's
 * unique id and a time of failure. Identities only (the row keeps the
 * newest attempt's data, E4); each batch inserts its keys first, and only
 * the new ones count. The keys go with their message, by a trigger,
 * whatever deletes it (the retention sweep, or SQL of one's own). */
static const char attempts_sql[] =
    "CREATE TABLE IF NOT EXISTS {p}failed_message_attempts (\n"
    "  unique_message_id TEXT NOT NULL,\n"
    "  time_of_failure BIGINT NOT NULL,\n"
    "  PRIMARY KEY (unique_message_id, time_of_failure)\n"
    ")%s;\n";
static const char attempts_sqlite[] =
    "CREATE TRIGGER IF NOT EXISTS {p}fa_fm_ad AFTER DELETE ON\n"
    "  {p}failed_messages BEGIN DELETE FROM {p}failed_message_attempts\n"
    "  WHERE unique_message_id = old.unique_message_id; END;\n";
/* A row trigger, as the history's: an index probe per deleted message
 * (no seqscan, whatever plan plpgsql cached while the table was small). */
static const char attempts_pg[] =
    "CREATE OR REPLACE FUNCTION {p}fa_drop() RETURNS trigger LANGUAGE\n"
    "  plpgsql SET enable_seqscan = off AS $f$ BEGIN\n"
    "  DELETE FROM {p}failed_message_attempts WHERE unique_message_id =\n"
    "  OLD.unique_message_id; RETURN NULL; END $f$;\n"
    "DO $do$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid =\n"
    "  '{p}failed_messages'::regclass AND tgname = '{p}fa_fm_del') THEN\n"
    "  CREATE TRIGGER {p}fa_fm_del AFTER DELETE ON {p}failed_messages FOR\n"
    "  EACH ROW EXECUTE FUNCTION {p}fa_drop(); END IF; END $do$;\n";

/* E22 on SQLite: the best $2 matches by bm25, then newest first, reading
 * failed_messages only for the rows returned. Joining every match to its
 * row before the LIMIT read a row (a random page of the biggest table) for
 * each of them: 10,000 for a word in 1 % of 1,000,000 messages, ~16,000
 * page reads a search, so the search ran at the speed of the OS page cache
 * (docs/internals/errors.md, "Speed"). Here:
 *   r   every match's score, from the FTS tables alone (index + docsize);
 *   n   the cut (the $2-th best score; NULL with fewer matches), k the
 *       matches better than it, t those equal to it (ties);
 *   w   when ties are many, the newest $2 - k of them from the time index
 *       (newest first, stopping at the last one needed), reading at most
 *       16 entries a tie, about the cost of reading the tied rows (the
 *       fallback); tried only when ties spread evenly over max(rowid)
 *       messages would be found within that: t * t * 16 >= ($2 - k) *
 *       max(rowid) (a store of messages of one shape ties them all);
 *   then the rows better than the cut, plus w's rows if w found them all,
 *   else every row up to the cut, each read by rowid, and sorted. The
 *   CROSS JOINs keep the match lists outermost. */
static const char search_sqlite_select[] =
    "WITH r AS MATERIALIZED (SELECT rowid AS id, bm25({p}failed_messages_fts)"
    " AS b FROM {p}failed_messages_fts WHERE {p}failed_messages_fts MATCH $1),"
    " c AS MATERIALIZED (SELECT b FROM r ORDER BY b LIMIT 1 OFFSET $2 - 1),"
    " n AS MATERIALIZED (SELECT max(c.b) AS cut, sum(r.b < c.b) AS k,"
    " sum(r.b = c.b) AS t FROM r, c),"
    " w AS MATERIALIZED (SELECT x.id FROM (SELECT rowid AS id FROM"
    " {p}failed_messages ORDER BY last_time_of_failure DESC LIMIT (SELECT"
    " CASE WHEN t * t * 16 >= ($2 - k) * (SELECT max(rowid) FROM"
    " {p}failed_messages) THEN t * 16 ELSE 0 END FROM n)) x WHERE x.id IN"
    " (SELECT id FROM r, n WHERE r.b = n.cut) LIMIT (SELECT coalesce($2 - k,"
    " 0) FROM n)),"
    " ok AS MATERIALIZED (SELECT (SELECT count(*) FROM w) = (SELECT"
    " coalesce($2 - k, -1) FROM n) AS v)"
    " SELECT " SB__SUMMARY_COLUMNS " FROM (SELECT " SB__SUMMARY_COLUMNS
    ", r.b AS rank FROM r CROSS JOIN {p}failed_messages f ON f.rowid = r.id"
    " WHERE r.b < (SELECT cut FROM n) OR (NOT (SELECT v FROM ok) AND"
    " (r.b <= (SELECT cut FROM n) OR (SELECT cut FROM n) IS NULL))"
    " UNION ALL SELECT " SB__SUMMARY_COLUMNS ", (SELECT cut FROM n) FROM w"
    " CROSS JOIN {p}failed_messages f ON f.rowid = w.id WHERE (SELECT v FROM"
    " ok)) f ORDER BY rank, f.last_time_of_failure DESC LIMIT $2";

static const dialect sqlite_dialect = {"TEXT", "BLOB", "min", "max",
                                       "$2",   0,      0};
static const dialect pg_dialect = {
    "TEXT COLLATE \"C\"",
    "BYTEA",
    "LEAST",
    "GREATEST",
    "(extract(epoch FROM now()) * 1000000)::int8",
    1,
    0};
/* The database clock, as PostgreSQL's: DATEDIFF_BIG (2016 and later)
 * counts the microseconds since the epoch of SYSUTCDATETIME() (UTC,
 * datetime2(7)). */
static const dialect ms_dialect = {
    NULL,
    NULL,
    NULL,
    NULL,
    "DATEDIFF_BIG(microsecond, '19700101', SYSUTCDATETIME())",
    0,
    1};

void sb__errors_minmax(const sb_err_dialect *d, sb_buf *b, int larger,
                       const char *qa, const char *qb, const char *col)
{
    if (d->ms)
        sb__buf_printf(b, "CASE WHEN %s.%s %s %s.%s THEN %s.%s ELSE %s.%s END",
                       qa, col, larger ? ">=" : "<=", qb, col, qa, col, qb,
                       col);
    else
        sb__buf_printf(b, "%s(%s.%s, %s.%s)", larger ? d->max : d->min, qa, col,
                       qb, col);
}

/* The incoming row's `col`: SQL Server's MERGE source has no clock
 * columns, so those are the clock itself (what PostgreSQL's excluded row
 * holds, the insert's values). */
static void incoming(const dialect *d, sb_buf *b, const char *in,
                     const char *col)
{
    if (d->ms && (strcmp(col, "status_changed_at") == 0 ||
                  strcmp(col, "last_modified") == 0))
        sb__buf_puts(b, d->now);
    else
        sb__buf_printf(b, "%s.%s", in, col);
}

void sb__errors_upsert_set(const sb_err_dialect *d, sb_buf *b, const char *t,
                           const char *in)
{
    sb__buf_printf(b,
                   "status = 0, status_changed_at = CASE WHEN %s.status "
                   "<> 0 THEN ",
                   t);
    incoming(d, b, in, "status_changed_at");
    sb__buf_printf(b, " ELSE %s.status_changed_at END, last_modified = ", t);
    incoming(d, b, in, "last_modified");
    /* The incoming row holds only attempts new to the store
     * (ER_NEW_ATTEMPTS kept their keys first; a row with none is not
     * sent). */
    sb__buf_printf(b,
                   ", number_of_processing_attempts = "
                   "%s.number_of_processing_attempts + "
                   "%s.number_of_processing_attempts, "
                   "first_time_of_failure = ",
                   t, in);
    sb__errors_minmax(d, b, 0, t, in, "first_time_of_failure");
    sb__buf_puts(b, ", last_time_of_failure = ");
    sb__errors_minmax(d, b, 1, t, in, "last_time_of_failure");
    sb__buf_puts(b, ", last_attempted_at = ");
    sb__errors_minmax(d, b, 1, t, in, "last_attempted_at");
    for (size_t i = 0; i < N_COLUMNS; i++)
        if (columns[i].payload)
            sb__buf_printf(b,
                           ", %s = CASE WHEN %s.last_attempted_at >= "
                           "%s.last_attempted_at THEN %s.%s ELSE %s.%s "
                           "END",
                           columns[i].name, in, t, in, columns[i].name, t,
                           columns[i].name);
    /* E22: the words search finds follow the payload. */
    const char *search = d->pg ? "search" : d->ms ? "search_text" : NULL;
    if (search != NULL)
        sb__buf_printf(b,
                       ", %s = CASE WHEN %s.last_attempted_at >= "
                       "%s.last_attempted_at THEN %s.%s ELSE "
                       "%s.%s END",
                       search, in, t, in, search, t, search);
}

/* "FROM <the rows of the JSON array $1>" and how a field is read. */
static void rows_from(const dialect *d, sb_buf *b, const column *cols, size_t n)
{
    if (!d->pg) {
        sb__buf_puts(b, " FROM json_each($1)");
        return;
    }
    sb__buf_puts(b, " FROM json_to_recordset($1::json) AS x(");
    for (size_t i = 0; i < n; i++)
        sb__buf_printf(b, "%s%s %s", i ? ", " : "", cols[i].name,
                       cols[i].type == 'i' ? "int8" : "text");
    sb__buf_puts(b, ")");
}

static void field(const dialect *d, sb_buf *b, const char *name)
{
    if (d->pg)
        sb__buf_printf(b, "x.%s", name);
    else
        sb__buf_printf(b, "json_extract(value, '$.%s')", name);
}

/* `ddl` with each TEXT column typed for the dialect: on PostgreSQL every
 * unique id and group id compares under COLLATE "C", so a join between
 * two tables can use either side's index (mixed collations cannot). */
static void put_ddl(const dialect *d, sb_buf *b, const char *ddl)
{
    const char *p = ddl;
    for (const char *hit; (hit = strstr(p, "TEXT")) != NULL; p = hit + 4) {
        sb__buf_append(b, p, (size_t)(hit - p));
        sb__buf_puts(b, d->text);
    }
    sb__buf_puts(b, p);
}

static void build_ddl(const dialect *d, sb_buf *b)
{
    sb__buf_puts(b, "CREATE TABLE IF NOT EXISTS {p}failed_messages (\n");
    for (size_t i = 0; i < N_COLUMNS; i++) {
        sb__buf_printf(b, "  %s %s%s,\n", columns[i].name,
                       columns[i].type == 'i' ? "BIGINT" : d->text,
                       i == 0               ? " NOT NULL PRIMARY KEY"
                       : columns[i].payload ? ""
                                            : " NOT NULL");
        if (i == 0)
            sb__buf_puts(b, "  status INTEGER NOT NULL DEFAULT 0,\n"
                            "  status_changed_at BIGINT NOT NULL,\n"
                            "  last_modified BIGINT NOT NULL,\n");
    }
    if (d->pg) /* E22: the words cut by words.c, written by the upsert */
        sb__buf_puts(b, "  search tsvector,\n");
    b->len -= 2; /* the last ",\n" */
    b->data[b->len] = '\0';
    sb__buf_puts(b, "\n);\n");
    put_ddl(d, b, ddl_tail);
    sb_buf keys;
    sb__buf_init(&keys, 4096);
    sb__buf_printf(&keys, attempts_sql, d->pg ? "" : " WITHOUT ROWID");
    if (keys.failed)
        b->failed = keys.failed;
    else
        put_ddl(d, b, keys.data);
    sb__buf_free(&keys);
    sb__buf_puts(b, d->pg ? attempts_pg : attempts_sqlite);
    sb__buf_puts(b, d->pg ? search_pg : search_sqlite);
    if (d->pg)
        sb__buf_puts(b, search_pg_unbind);
    sb_buf tables;
    sb__buf_init(&tables, 4096);
    sb__buf_printf(&tables,
                   "CREATE TABLE IF NOT EXISTS {p}message_bodies (\n"
                   "  unique_message_id TEXT NOT NULL PRIMARY KEY,\n"
                   "  body %s NOT NULL,\n"
                   "  content_type TEXT\n"
                   ");\n"
                   "CREATE TABLE IF NOT EXISTS {p}failed_imports (\n"
                   "  id TEXT NOT NULL PRIMARY KEY,\n"
                   "  dead_letter_id TEXT NOT NULL,\n"
                   "  headers TEXT NOT NULL,\n"
                   "  body %s NOT NULL,\n"
                   "  reason TEXT NOT NULL,\n"
                   "  created_at BIGINT NOT NULL\n"
                   ");\n",
                   d->blob, d->blob);
    if (tables.failed)
        b->failed = tables.failed;
    else
        put_ddl(d, b, tables.data);
    sb__buf_free(&tables);
    sb__errors_counts_ddl(d->pg ? SB_DIALECT_POSTGRES : SB_DIALECT_SQLITE,
                          d->text, b);
    sb__errors_history_ddl(d->pg ? SB_DIALECT_POSTGRES : SB_DIALECT_SQLITE,
                           d->text, b);
}

/* A row set's statement (SQLite, PostgreSQL): INSERT INTO `into`
 * SELECT `select` FROM (VALUES <n rows>) AS v WHERE column1 IS NOT NULL
 * `tail`. Each row is one parameter a column of `types` ('t' text, 'i'
 * integer), numbered from `first`; the first row carries PostgreSQL's
 * types, which the other rows take. A caller with fewer rows binds the
 * rest NULL, and the WHERE drops them: a batch runs one statement of the
 * next power of two, whatever its size (errors.h, SB_ERRORS_ROWS_LOG). */
static void build_set(const dialect *d, sb_buf *b, const char *into,
                      const char *select, size_t n, size_t first,
                      const char *types, const char *tail)
{
    size_t width = strlen(types);
    sb__buf_printf(b, "INSERT INTO %s SELECT %s FROM (VALUES ", into, select);
    for (size_t r = 0; r < n; r++) {
        sb__buf_puts(b, r > 0 ? "), (" : "(");
        for (size_t i = 0; i < width; i++)
            sb__buf_printf(b, "%s$%zu%s", i > 0 ? ", " : "",
                           first + r * width + i,
                           !d->pg || r > 0   ? ""
                           : types[i] == 'i' ? "::int8"
                                             : "::text");
    }
    sb__buf_printf(b, ")) AS v WHERE column1 IS NOT NULL %s", tail);
}

/* E10: one set-based conditional upsert of up to `n` rows bound as
 * parameters (build_set; SQLite binds its clock as $1 before them),
 * RETURNING the stored newest attempt time, so the caller knows whose
 * groups now stand. On PostgreSQL each row also carries words.c's
 * search literal and whether the database must lower it. SQL Server's
 * MERGE is sql_mssql.c's. */
static void build_upsert(const dialect *d, sb_buf *b, size_t n)
{
    const char *now = d->pg ? d->now : "$1";
    char types[N_COLUMNS + 3];
    sb_buf into, sel;
    sb__buf_init(&into, 4096);
    sb__buf_init(&sel, 4096);
    sb__buf_puts(&into, "{p}failed_messages (status, status_changed_at, "
                        "last_modified");
    sb__buf_printf(&sel, "0, %s, %s", now, now);
    for (size_t i = 0; i < N_COLUMNS; i++) {
        sb__buf_printf(&into, ", %s", columns[i].name);
        sb__buf_printf(&sel, ", column%zu", i + 1);
        types[i] = columns[i].type;
    }
    types[N_COLUMNS] = '\0';
    if (d->pg) {
        sb__buf_puts(&into, ", search");
        sb__buf_printf(&sel,
                       ", (CASE WHEN column%zu = 1 THEN lower(column%zu) "
                       "ELSE column%zu END)::tsvector",
                       N_COLUMNS + 2, N_COLUMNS + 1, N_COLUMNS + 1);
        memcpy(types + N_COLUMNS, "ti", 3);
    }
    sb__buf_puts(&into, ")");
    sb_buf tail;
    sb__buf_init(&tail, 64 * 1024);
    sb__buf_puts(&tail, "ON CONFLICT (unique_message_id) DO UPDATE SET ");
    sb__errors_upsert_set(d, &tail, "{p}failed_messages", "excluded");
    sb__buf_puts(&tail, " RETURNING unique_message_id, last_attempted_at");
    if (into.failed || sel.failed || tail.failed)
        b->failed = SB_NOMEM;
    else
        build_set(d, b, into.data, sel.data, n, d->pg ? 1 : 2, types,
                  tail.data);
    sb__buf_free(&into);
    sb__buf_free(&sel);
    sb__buf_free(&tail);
}

_Static_assert(N_COLUMNS + 2 == SB__ERRORS_UPSERT_WIDTH(1),
               "the upsert's parameters are the columns (and the search "
               "literal and its flag)");

static const column endpoint_cols[] = {
    {"i", 't', 0, 0}, {"n", 't', 0, 0}, {"h", 't', 0, 0}, {"m", 't', 0, 0}};

/* INSERT INTO table SELECT <fields> FROM <rows> WHERE true <tail>. */
static void build_insert(const dialect *d, sb_buf *b, const char *table,
                         const column *cols, size_t n, const char *tail)
{
    sb__buf_printf(b, "INSERT INTO %s SELECT ", table);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb__buf_puts(b, ", ");
        field(d, b, cols[i].name);
    }
    rows_from(d, b, cols, n);
    sb__buf_printf(b, " WHERE true %s", tail);
}

/* The statements whose rows are bound as parameters (SQLite,
 * PostgreSQL), `n` rows. */
static void build_rows(const dialect *d, int kind, size_t n, sb_buf *b)
{
    switch (kind) {
    case ERV_ATTEMPTS: /* the keys inserted */
        build_set(d, b,
                  "{p}failed_message_attempts (unique_message_id, "
                  "time_of_failure)",
                  "column1, column2", n, 1, "ti",
                  "ON CONFLICT (unique_message_id, time_of_failure) DO "
                  "NOTHING RETURNING unique_message_id, time_of_failure");
        break;
    case ERV_UPSERT: build_upsert(d, b, n); break;
    default:
        build_set(d, b, "{p}failed_message_groups",
                  "column1, column2, column3, column4", n, 1, "tttt",
                  "ON CONFLICT (unique_message_id, group_id) DO NOTHING");
        break;
    }
}

/* "... WHERE unique_message_id IN <the ids of the JSON array $1>". */
static void build_in_ids(const dialect *d, sb_buf *b, const char *head)
{
    sb__buf_puts(b, head);
    sb__buf_puts(b, d->pg ? " WHERE unique_message_id = ANY (ARRAY(SELECT "
                            "json_array_elements_text($1::json)))"
                          : " WHERE unique_message_id IN (SELECT value FROM "
                            "json_each($1))");
}

/* ER_OP_START: the existing operation is the same kind, left running by a
 * process that stopped (the WHERE admits only stale running ones). */
#define OP_RESUMES                                                             \
    "({p}group_operations.state = 'running' AND {p}group_operations.kind = "   \
    "excluded.kind)"

static void build(const dialect *d, int k, sb_buf *b)
{
    if (d->ms && sb__errors_sql_mssql(d, k, b))
        return;
    switch (k) {
    case ER_DDL: build_ddl(d, b); break;
    case ER_ATTEMPTS_STATE: /* a store made before the keys (the same
                               text on every backend) */
        sb__buf_puts(b, "SELECT CASE WHEN EXISTS (SELECT 1 FROM "
                        "{p}failed_messages) AND NOT EXISTS (SELECT 1 FROM "
                        "{p}failed_message_attempts) THEN 1 ELSE 0 END");
        break;
    case ER_ATTEMPTS_FILL: /* the keys such a store can know: each
                              message's first and newest attempt (both
                              counted ones, so the fill is right and
                              idempotent anywhere); a full scan, run by
                              the open only when ER_ATTEMPTS_STATE says */
        sb__buf_puts(b, "INSERT INTO {p}failed_message_attempts SELECT "
                        "unique_message_id, first_time_of_failure FROM "
                        "{p}failed_messages UNION SELECT unique_message_id, "
                        "last_attempted_at FROM {p}failed_messages WHERE "
                        "true ON CONFLICT DO NOTHING");
        break;
    /* The row sets, as two rows for review (sb_errors_statements); the
     * write path runs sb__errors_rows_sql's. */
    case ER_NEW_ATTEMPTS: build_rows(d, ERV_ATTEMPTS, 2, b); break;
    case ER_UPSERT: build_rows(d, ERV_UPSERT, 2, b); break;
    case ER_DELETE_GROUPS:
        build_in_ids(d, b, "DELETE FROM {p}failed_message_groups");
        break;
    case ER_INSERT_GROUPS: build_rows(d, ERV_GROUPS, 2, b); break;
    case ER_ENDPOINTS:
        build_insert(d, b, "{p}known_endpoints (id, name, host_id, host)",
                     endpoint_cols, 4, "ON CONFLICT (id) DO NOTHING");
        break;
    case ER_PUT_BODY:
        sb__buf_puts(b, "INSERT INTO {p}message_bodies VALUES ($1, $2, $3) "
                        "ON CONFLICT (unique_message_id) DO UPDATE SET "
                        "body = excluded.body, content_type = "
                        "excluded.content_type");
        break;
    case ER_DROP_BODIES:
        build_in_ids(d, b, "DELETE FROM {p}message_bodies");
        break;
    case ER_CONFIRM:
        sb__buf_printf(b,
                       "UPDATE {p}failed_messages SET status = 2, "
                       "status_changed_at = %s, last_modified = %s",
                       d->now, d->now);
        build_in_ids(d, b, "");
        break;
    case ER_DROP_CLAIMS:
        build_in_ids(d, b, "DELETE FROM {p}retry_claims");
        break;
    case ER_FAILED_IMPORT: /* $1 id, $2 now, $3 dead-letter id, $4 headers,
                              $5 reason, $6 body */
        sb__buf_printf(b,
                       "INSERT INTO {p}failed_imports VALUES ($1, $3, $4, "
                       "$6, $5, %s) ON CONFLICT (id) DO NOTHING",
                       d->now);
        break;
    case ER_IMPORTS_TAKE: /* $1 limit */
        sb__buf_printf(b,
                       "SELECT id, headers, body FROM {p}failed_imports "
                       "ORDER BY created_at, id LIMIT $1%s",
                       d->pg ? " FOR UPDATE SKIP LOCKED" : "");
        break;
    case ER_IMPORTS_DELETE:
        sb__buf_puts(b, "DELETE FROM {p}failed_imports WHERE id = $1");
        break;
    case ER_COUNT_IMPORTS:
        sb__buf_puts(b, "SELECT count(*) FROM {p}failed_imports");
        break;
    case ER_GET:
        sb__buf_puts(b, "SELECT status, status_changed_at, last_modified");
        for (size_t i = 0; i < N_COLUMNS; i++)
            sb__buf_printf(b, ", %s", columns[i].name);
        sb__buf_puts(b, " FROM {p}failed_messages WHERE unique_message_id = "
                        "$1");
        break;
    case ER_GET_GROUPS:
        sb__buf_puts(b, "SELECT group_id, type, title FROM "
                        "{p}failed_message_groups WHERE unique_message_id = "
                        "$1 ORDER BY type, group_id");
        break;
    case ER_GET_BODY:
        sb__buf_puts(b, "SELECT body, content_type FROM {p}message_bodies "
                        "WHERE unique_message_id = $1");
        break;
    case ER_GET_HISTORY:
        sb__errors_history_sql(d->pg ? SB_DIALECT_POSTGRES : SB_DIALECT_SQLITE,
                               b);
        break;
    case ER_OP_START: /* $1 group, $2 kind, $3 owner, $4 total, $5 now,
                         $6 stale before: resumes a stale running operation
                         of the same kind, else starts afresh */
        sb__buf_puts(b,
                     "INSERT INTO {p}group_operations VALUES ($1, $2, "
                     "'running', $3, $4, 0, '', $5, $5, NULL) ON CONFLICT "
                     "(group_id) DO UPDATE SET owner = excluded.owner, "
                     "updated_at = excluded.updated_at, finished_at = NULL, "
                     "total = CASE WHEN " OP_RESUMES " THEN "
                     "{p}group_operations.total ELSE excluded.total END, "
                     "done = CASE WHEN " OP_RESUMES " THEN "
                     "{p}group_operations.done ELSE 0 END, cursor_id = CASE "
                     "WHEN " OP_RESUMES " THEN {p}group_operations.cursor_id "
                     "ELSE '' END, started_at = CASE WHEN " OP_RESUMES
                     " THEN {p}group_operations.started_at ELSE "
                     "excluded.started_at END, kind = excluded.kind, state = "
                     "'running' WHERE {p}group_operations.state <> 'running' "
                     "OR {p}group_operations.updated_at < $6 RETURNING "
                     "total, done, cursor_id");
        break;
    case ER_OP_STEP: /* $1 changed, $2 cursor, $3 now, $4 group, $5 owner */
        sb__buf_puts(b, "UPDATE {p}group_operations SET done = done + $1, "
                        "cursor_id = $2, updated_at = $3 WHERE group_id = $4 "
                        "AND owner = $5");
        break;
    case ER_OP_END: /* $1 state, $2 now, $3 group, $4 owner */
        sb__buf_puts(b, "UPDATE {p}group_operations SET state = $1, "
                        "finished_at = $2, updated_at = $2 WHERE group_id = "
                        "$3 AND owner = $4");
        break;
    case ER_OP_GET:
        sb__buf_puts(b, "SELECT kind, state, total, done, started_at, "
                        "updated_at, finished_at FROM {p}group_operations "
                        "WHERE group_id = $1");
        break;
    case ER_OP_ACK: /* $1 group: a finished operation's record */
        sb__buf_puts(b, "DELETE FROM {p}group_operations WHERE group_id = $1 "
                        "AND state <> 'running'");
        break;
    case ER_OPS_GET: /* $1 JSON array of group ids */
        sb__buf_puts(b, "SELECT kind, state, total, done, started_at, "
                        "updated_at, finished_at, group_id FROM "
                        "{p}group_operations WHERE group_id ");
        sb__buf_puts(b, d->pg ? "= ANY (ARRAY(SELECT "
                                "json_array_elements_text($1::json)))"
                              : "IN (SELECT value FROM json_each($1))");
        break;
    case ER_EDIT_CLAIM: /* $1 unique id, $2 now, $3 edit message id */
        sb__buf_puts(b, "INSERT INTO {p}message_edits VALUES ($1, $3, $2) "
                        "ON CONFLICT (unique_message_id) DO NOTHING");
        break;
    case ER_DROP_EDITS:
        build_in_ids(d, b, "DELETE FROM {p}message_edits");
        break;
    case ER_REDIRECTS_LOCK: /* the chain check reads the whole table */
        sb__buf_puts(b, d->pg ? "LOCK TABLE {p}redirects IN SHARE ROW "
                                "EXCLUSIVE MODE"
                              : "SELECT 1");
        break;
    case ER_REDIRECTS:
        sb__buf_puts(b, "SELECT id, from_queue, to_queue, last_modified FROM "
                        "{p}redirects ORDER BY from_queue");
        break;
    case ER_REDIRECT_PUT: /* $1 id, $2 from, $3 to, $4 now */
        sb__buf_puts(b, "INSERT INTO {p}redirects VALUES ($1, $2, $3, $4) ON "
                        "CONFLICT (id) DO UPDATE SET to_queue = "
                        "excluded.to_queue, last_modified = "
                        "excluded.last_modified");
        break;
    case ER_REDIRECT_DELETE:
        sb__buf_puts(b, "DELETE FROM {p}redirects WHERE id = $1");
        break;
    case ER_CLAIM: /* $1 JSON ids, $2 now (SQLite), $3 batch id */
        sb__buf_printf(b,
                       "INSERT INTO {p}retry_claims SELECT %s, $3, %s FROM "
                       "%s WHERE true ON CONFLICT (unique_message_id) DO "
                       "NOTHING RETURNING unique_message_id",
                       d->pg ? "x" : "value", d->now,
                       d->pg ? "json_array_elements_text($1::json) AS x"
                             : "json_each($1)");
        break;
    case ER_RETRY_SOURCE: /* E20: to the redirect's target if any */
        sb__buf_puts(b, "SELECT f.headers, coalesce(r.to_queue, "
                        "f.failed_queue), f.body_text, "
                        "f.body_stored_externally, m.body, f.status FROM "
                        "{p}failed_messages f LEFT JOIN {p}message_bodies m "
                        "ON m.unique_message_id = f.unique_message_id LEFT "
                        "JOIN {p}redirects r ON r.from_queue = "
                        "f.failed_queue WHERE f.unique_message_id = $1");
        break;
    case ER_SET_STATUS: /* $1 JSON ids, $2 now (SQLite), $3 status */
        sb__buf_printf(b,
                       "UPDATE {p}failed_messages SET status = $3, "
                       "status_changed_at = %s, last_modified = %s",
                       d->now, d->now);
        build_in_ids(d, b, "");
        break;
    case ER_SET_COMMENT: /* $1 group, $2 now (SQLite), $3 comment */
        sb__buf_printf(b,
                       "INSERT INTO {p}group_comments VALUES ($1, $3, %s) "
                       "ON CONFLICT (group_id) DO UPDATE SET comment = "
                       "excluded.comment, last_modified = "
                       "excluded.last_modified",
                       d->now);
        break;
    case ER_DELETE_COMMENT:
        sb__buf_puts(b, "DELETE FROM {p}group_comments WHERE group_id = $1");
        break;
    case ER_EXPIRED: /* $1 retention ms, $2 now (SQLite), $3 limit */
        sb__buf_printf(b,
                       "SELECT unique_message_id FROM {p}failed_messages "
                       "WHERE status IN (2, 3) AND status_changed_at < "
                       "%s - $1 * 1000 LIMIT $3",
                       d->now);
        break;
    case ER_DELETE_MESSAGES:
        build_in_ids(d, b, "DELETE FROM {p}failed_messages");
        break;
    case ER_ORPHAN_COMMENTS:
        sb__buf_puts(b, "DELETE FROM {p}group_comments WHERE group_id NOT IN "
                        "(SELECT group_id FROM {p}failed_message_groups)");
        break;
    case ER_SEARCH: /* $1 query (see search.c), $2 limit */
        if (d->pg)
            sb__buf_puts(b, "SELECT " SB__SUMMARY_COLUMNS
                            " FROM {p}failed_messages f, (SELECT "
                            "lower($1)::tsquery AS q) w WHERE f.search @@ "
                            "w.q ORDER BY ts_rank(f.search, w.q) DESC, "
                            "f.last_time_of_failure DESC LIMIT $2");
        else
            sb__buf_puts(b, search_sqlite_select);
        break;
    case ER_PRUNE_GROUPS: /* $1 JSON ids, $2 JSON "unique id|group id"
                             pairs to keep */
        build_in_ids(d, b, "DELETE FROM {p}failed_message_groups");
        sb__buf_puts(b, d->pg ? " AND unique_message_id || '|' || group_id "
                                "NOT IN (SELECT json_array_elements_text($2::"
                                "json))"
                              : " AND unique_message_id || '|' || group_id "
                                "NOT IN (SELECT value FROM json_each($2))");
        break;
    case ER_FULLTEXT:
    case ER_SEARCH_READY: break; /* SQL Server's */
    default:
        sb__errors_counts_sql(d->pg ? SB_DIALECT_POSTGRES : SB_DIALECT_SQLITE,
                              k, b);
        break;
    }
}

int sb__errors_sql_new(int dialect_id, const char *prefix, sb_errors_sql *out,
                       sb_error *err)
{
    memset(out, 0, sizeof *out);
    const dialect *d = dialect_id == SB_DIALECT_SQLITE     ? &sqlite_dialect
                       : dialect_id == SB_DIALECT_POSTGRES ? &pg_dialect
                       : dialect_id == SB_DIALECT_MSSQL    ? &ms_dialect
                                                           : NULL;
    if (d == NULL)
        return sb__err(err, SB_INVALID, "backend",
                       "the error store has no SQL for this backend");
    int rc = SB_OK;
    sb_buf b;
    sb__buf_init(&b, 64 * 1024);
    for (int k = 0; rc == SB_OK && k < ER_N; k++) {
        sb__buf_reset(&b);
        build(d, k, &b);
        rc = b.failed;
        if (rc == SB_OK)
            out->s[k] = sb__sql_subst(b.data, prefix, &rc);
    }
    sb__buf_free(&b);
    if (rc != SB_OK) {
        sb__errors_sql_free(out);
        return sb__err(err, rc, NULL, "out of memory");
    }
    return SB_OK;
}

int sb_errors_schema_sql(const char *backend, const char *table_prefix,
                         char **out, sb_error *err)
{
    if (out == NULL)
        return sb__err(err, SB_INVALID, "out", "out must not be NULL");
    *out = NULL;
    int dialect_id = 0;
    int rc = sb__backend_dialect(backend, table_prefix, &dialect_id, err);
    sb_errors_sql sql;
    if (rc == SB_OK)
        rc = sb__errors_sql_new(
            dialect_id, table_prefix ? table_prefix : "sqlbus_", &sql, err);
    if (rc != SB_OK)
        return rc;
    sb_buf b;
    sb__buf_init(&b, (size_t)16 << 20);
    sb__buf_puts(&b, sql.s[ER_DDL]);
    /* What the open does for a store made before the attempts' keys. */
    sb__buf_puts(&b, "-- The attempts' keys of a store made before them "
                     "(E10; idempotent, a scan of the store).\n");
    sb__buf_puts(&b, sql.s[ER_ATTEMPTS_FILL]);
    sb__buf_puts(&b, ";\n");
    if (sql.s[ER_FULLTEXT] != NULL && sql.s[ER_FULLTEXT][0] != '\0') {
        sb__buf_puts(&b, "-- Search (E22): outside any transaction; nothing "
                         "happens without Full-Text Search.\n");
        sb__buf_puts(&b, sql.s[ER_FULLTEXT]);
    }
    sb__errors_sql_free(&sql);
    *out = sb__buf_detach(&b);
    return *out != NULL ? SB_OK : sb__err(err, SB_NOMEM, NULL, "out of memory");
}

int sb__errors_rows_sql(int dialect_id, const char *prefix, int kind, size_t n,
                        char **out)
{
    *out = NULL;
    const dialect *d = dialect_id == SB_DIALECT_SQLITE     ? &sqlite_dialect
                       : dialect_id == SB_DIALECT_POSTGRES ? &pg_dialect
                                                           : NULL;
    if (d == NULL)
        return SB_INVALID;
    sb_buf b;
    sb__buf_init(&b, (size_t)1 << 20); /* the 2,048-row upsert: ~400 KB */
    build_rows(d, kind, n, &b);
    int rc = b.failed;
    if (rc == SB_OK)
        *out = sb__sql_subst(b.data, prefix, &rc);
    sb__buf_free(&b);
    return rc;
}

void sb__errors_sql_free(sb_errors_sql *sql)
{
    for (size_t i = 0; i < ER_N; i++) {
        sb__free(sql->s[i]);
        sql->s[i] = NULL;
    }
}

/* The column order of ER_GET: status, status_changed_at, last_modified,
 * then `columns`. */
int sb__errors_column(const char *name)
{
    for (size_t i = 0; i < N_COLUMNS; i++)
        if (strcmp(columns[i].name, name) == 0)
            return (int)i + 3;
    return -1;
}
