/* counts.c - counts kept at write time (E13, E23; G7): one row of
 * failed_counts per (kind, item, status) with the number of messages,
 * and for groups the failure window of those messages. Triggers keep it,
 * in the transaction of whatever statement changes failed_messages or
 * failed_message_groups, so no write path can forget it: row triggers on
 * SQLite (one writer at a time), statement triggers over transition
 * tables on PostgreSQL (one aggregated statement per change, keys in
 * order), AFTER triggers over inserted / deleted on SQL Server (the same
 * aggregation as PostgreSQL's, applied with UPDATE ... FROM and MERGE). A
 * window only widens while messages join; when a message at one of its
 * ends leaves, the row is marked stale, readers compute a stale window
 * from the group's rows, and writers refresh stale rows at the end of
 * each ingestion pass and bulk operation. */
#include "errors/classify.h"
#include "errors/sql_int.h"

#include <stdio.h>
#include <string.h>

#define C "{p}failed_counts"
#define FM "{p}failed_messages"
#define FG "{p}failed_message_groups"
/* The rows of group `id` (of type `type`) whose message has `status`. */
#define GROUP_ROWS(type, id, status)                                           \
    " FROM " FG " g JOIN " FM " f ON f.unique_message_id = "                   \
    "g.unique_message_id WHERE g.type = " type " AND g.group_id = " id         \
    " AND f.status = " status
#define REFRESH_BATCH 50
#define REFRESH_MAX 2000 /* rows per call: the rest waits for the next */

/* The columns counted per value (kinds 1-3); kind 4 is a group. */
static const char *const scalar_col[] = {NULL, "failed_queue",
                                         "processing_endpoint", "message_type"};
#define N_SCALAR 3

static const char table_ddl[] =
    "CREATE TABLE IF NOT EXISTS " C " (\n"
    "  kind INTEGER NOT NULL,\n"
    "  item %s NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  n BIGINT NOT NULL,\n"
    "  first_us BIGINT,\n"
    "  last_us BIGINT,\n"
    "  stale INTEGER NOT NULL DEFAULT 0,\n"
    "  group_type %s,\n"
    "  title %s,\n"
    "  PRIMARY KEY (kind, item, status)\n"
    ");\n"
    "CREATE INDEX IF NOT EXISTS {p}failed_counts_stale_idx ON " C
    " (kind, item, status) WHERE stale = 1;\n";

/* A member joins: add its count (excluded.n, 0 when it only widens) and
 * widen the window; an empty row takes the member's window. `q` is the
 * target's qualifier ("c." on PostgreSQL). */
static void add_set(sb_buf *b, int pg)
{
    const char *q = pg ? "c." : "";
    sb__buf_printf(
        b,
        "n = %sn + excluded.n, first_us = CASE WHEN %sn = 0 OR "
        "%sfirst_us IS NULL THEN excluded.first_us ELSE %s(%sfirst_us, "
        "excluded.first_us) END, last_us = CASE WHEN %sn = 0 OR "
        "%slast_us IS NULL THEN excluded.last_us ELSE %s(%slast_us, "
        "excluded.last_us) END",
        q, q, q, pg ? "LEAST" : "min", q, q, q, pg ? "GREATEST" : "max", q);
}

/* `k` members leave, the earliest first failure `f` and the latest last
 * failure `l` among them: stale when one was at an end of the window;
 * an emptied row forgets its window. */
static void remove_set(sb_buf *b, int pg, const char *k, const char *f,
                       const char *l)
{
    const char *q = pg ? "c." : "";
    sb__buf_printf(b,
                   "stale = CASE WHEN %sn = %s THEN 0 WHEN %s <= %sfirst_us OR "
                   "%s >= %slast_us THEN 1 ELSE %sstale END, n = %sn - %s, "
                   "first_us = CASE WHEN %sn = %s THEN NULL ELSE %sfirst_us "
                   "END, last_us = CASE WHEN %sn = %s THEN NULL ELSE "
                   "%slast_us END",
                   q, k, f, q, l, q, q, q, k, q, k, q, q, k, q);
}

/* ---- SQLite: row triggers ---- */

static void sqlite_scalar_move(sb_buf *b, int kind, int update)
{
    const char *col = scalar_col[kind];
    sb__buf_printf(b,
                   "  UPDATE " C " SET n = n - 1 WHERE kind = %d AND item = "
                   "coalesce(old.%s, '') AND status = old.status",
                   kind, col);
    if (!update) {
        sb__buf_puts(b, ";\n");
        return;
    }
    sb__buf_printf(b,
                   " AND (old.status <> new.status OR old.%s IS NOT new.%s);\n"
                   "  INSERT INTO " C " (kind, item, status, n) SELECT %d, "
                   "coalesce(new.%s, ''), new.status, 1 WHERE old.status <> "
                   "new.status OR old.%s IS NOT new.%s ON CONFLICT (kind, "
                   "item, status) DO UPDATE SET n = n + 1;\n",
                   col, col, kind, col, col, col);
}

/* The old row leaves its values, and its groups' status (on an update,
 * only what changed). */
static void sqlite_leave(sb_buf *b, int update)
{
    for (int k = 1; k <= N_SCALAR; k++)
        sqlite_scalar_move(b, k, update);
    sb__buf_puts(b, "  UPDATE " C " SET ");
    remove_set(b, 0, "1", "old.first_time_of_failure",
               "old.last_time_of_failure");
    sb__buf_printf(b,
                   " WHERE %skind = 4 AND status = old.status AND item IN "
                   "(SELECT group_id FROM " FG " WHERE unique_message_id = "
                   "old.unique_message_id);\n",
                   update ? "old.status <> new.status AND " : "");
}

static void sqlite_ddl(sb_buf *b)
{
    /* A new message: its values, and any group rows already there. */
    sb__buf_puts(b, "CREATE TRIGGER IF NOT EXISTS {p}fc_fm_ai AFTER INSERT "
                    "ON " FM " BEGIN\n");
    for (int k = 1; k <= N_SCALAR; k++)
        sb__buf_printf(b,
                       "  INSERT INTO " C " (kind, item, status, n) VALUES "
                       "(%d, coalesce(new.%s, ''), new.status, 1) ON CONFLICT "
                       "(kind, item, status) DO UPDATE SET n = n + 1;\n",
                       k, scalar_col[k]);
    sb__buf_puts(b, "  INSERT INTO " C " (kind, item, status, n, first_us, "
                    "last_us, group_type, title) SELECT 4, group_id, "
                    "new.status, 1, new.first_time_of_failure, "
                    "new.last_time_of_failure, type, title FROM " FG
                    " WHERE unique_message_id = new.unique_message_id ON "
                    "CONFLICT (kind, item, status) DO UPDATE SET ");
    add_set(b, 0);
    sb__buf_puts(b, ";\nEND;\n");

    /* A changed message: moved between values or statuses, or widened. */
    sb__buf_puts(b, "CREATE TRIGGER IF NOT EXISTS {p}fc_fm_au AFTER UPDATE "
                    "ON " FM " WHEN old.status <> new.status OR "
                    "old.first_time_of_failure <> new.first_time_of_failure "
                    "OR old.last_time_of_failure <> new.last_time_of_failure");
    for (int k = 1; k <= N_SCALAR; k++)
        sb__buf_printf(b, " OR old.%s IS NOT new.%s", scalar_col[k],
                       scalar_col[k]);
    sb__buf_puts(b, " BEGIN\n");
    sqlite_leave(b, 1);
    sb__buf_puts(b, "  INSERT INTO " C " (kind, item, status, n, first_us, "
                    "last_us, group_type, title) SELECT 4, group_id, "
                    "new.status, old.status <> new.status, "
                    "new.first_time_of_failure, new.last_time_of_failure, "
                    "type, title FROM " FG " WHERE unique_message_id = "
                    "new.unique_message_id AND (old.status <> new.status OR "
                    "old.first_time_of_failure <> new.first_time_of_failure "
                    "OR old.last_time_of_failure <> "
                    "new.last_time_of_failure) ON CONFLICT (kind, item, "
                    "status) DO UPDATE SET ");
    add_set(b, 0);
    sb__buf_puts(b, ";\nEND;\n");

    /* A deleted message: out of its values and its remaining groups. */
    sb__buf_puts(b, "CREATE TRIGGER IF NOT EXISTS {p}fc_fm_ad AFTER DELETE "
                    "ON " FM " BEGIN\n");
    sqlite_leave(b, 0);
    sb__buf_puts(b, "END;\n");

    /* Group rows: counted with their message's status and window. */
    sb__buf_puts(b, "CREATE TRIGGER IF NOT EXISTS {p}fc_fg_ai AFTER INSERT "
                    "ON " FG " BEGIN\n  INSERT INTO " C " (kind, item, "
                    "status, n, first_us, last_us, group_type, title) SELECT "
                    "4, new.group_id, status, 1, first_time_of_failure, "
                    "last_time_of_failure, new.type, new.title FROM " FM
                    " WHERE unique_message_id = new.unique_message_id ON "
                    "CONFLICT (kind, item, status) DO UPDATE SET ");
    add_set(b, 0);
    sb__buf_puts(b, ";\nEND;\n");
    sb__buf_puts(b, "CREATE TRIGGER IF NOT EXISTS {p}fc_fg_ad AFTER DELETE "
                    "ON " FG " BEGIN\n  UPDATE " C " SET ");
    remove_set(b, 0, "1",
               "(SELECT first_time_of_failure FROM " FM
               " WHERE unique_message_id = old.unique_message_id)",
               "(SELECT last_time_of_failure FROM " FM
               " WHERE unique_message_id = old.unique_message_id)");
    sb__buf_puts(b, " WHERE kind = 4 AND item = old.group_id AND status = "
                    "(SELECT status FROM " FM " WHERE unique_message_id = "
                    "old.unique_message_id);\nEND;\n");
}

/* ---- PostgreSQL: statement triggers over transition tables ---- */

/* The tuples a statement removes or adds, as SELECTs over the transition
 * tables `od` (old rows) and `nw` (new rows). Removals are (kind, item,
 * status, f, l); additions (kind, item, status, dn, f, l, type, title). */
enum { PG_FM_INS, PG_FM_UPD, PG_FM_DEL, PG_FG_INS, PG_FG_DEL, PG_N };

static const char *const pg_name[PG_N] = {"fm_ins", "fm_upd", "fm_del",
                                          "fg_ins", "fg_del"};
#define PAIRS "od JOIN nw ON nw.unique_message_id = od.unique_message_id"
/* A message's group rows, or a group row's message, probed through the
 * table's index for each transition row. As plain joins, the planner
 * chose a hash join over the whole table whenever its statistics lagged
 * (a store filled faster than autovacuum analyzes it): a scan of 300,000
 * group rows for every statement, 70 ms each (OFFSET 0 keeps the
 * subquery from being flattened back into a join). */
#define GROUPS_OF(r)                                                           \
    " CROSS JOIN LATERAL (SELECT g.group_id, g.type, g.title FROM " FG         \
    " g WHERE g.unique_message_id = " r ".unique_message_id OFFSET 0) g"
#define MESSAGE_OF(r)                                                          \
    " CROSS JOIN LATERAL (SELECT f.status, f.first_time_of_failure, "          \
    "f.last_time_of_failure FROM " FM " f WHERE f.unique_message_id = " r      \
    ".unique_message_id OFFSET 0) f"
#define TIMES(t) t ".first_time_of_failure, " t ".last_time_of_failure"

static void union_all(sb_buf *b, int *first)
{
    sb__buf_puts(b, *first ? "" : " UNION ALL ");
    *first = 0;
}

/* The value kinds (1-3) of a message leaving (`add` 0: the old row) or
 * joining (1: the new row) its values; an update moves only the rows
 * whose status or value changed. */
static void pg_scalar(sb_buf *b, int t, int add, int *first)
{
    const char *r = add ? "nw" : "od";
    for (int k = 1; k <= N_SCALAR; k++) {
        union_all(b, first);
        sb__buf_printf(b,
                       "SELECT %d AS kind, coalesce(%s.%s, '') AS item, "
                       "%s.status, %sNULL::int8 AS f, NULL::int8 AS l%s "
                       "FROM %s",
                       k, r, scalar_col[k], r, add ? "1 AS dn, " : "",
                       add ? ", NULL::text AS gt, NULL::text AS ti" : "",
                       t == PG_FM_UPD ? PAIRS : r);
        if (t == PG_FM_UPD)
            sb__buf_printf(b,
                           " WHERE od.status <> nw.status OR od.%s IS "
                           "DISTINCT FROM nw.%s",
                           scalar_col[k], scalar_col[k]);
    }
}

/* What differs between the two dialects' transition rows: the scalar
 * kinds' SELECTs, the old and new rows (with an update's pairs), and a
 * row's group rows or a group row's message. */
typedef struct trig_rows {
    void (*scalar)(sb_buf *b, int t, int add, int *first);
    const char *pairs, *old_rows, *new_rows;
    const char *groups_od, *groups_nw, *message_od, *message_nw;
} trig_rows;

static int removals(sb_buf *b, int t, const trig_rows *d)
{
    int first = 1;
    if (t == PG_FM_UPD || t == PG_FM_DEL) {
        d->scalar(b, t, 0, &first);
        union_all(b, &first);
        sb__buf_printf(
            b, "SELECT 4, g.group_id, od.status, " TIMES("od") " FROM %s%s%s",
            t == PG_FM_UPD ? d->pairs : d->old_rows, d->groups_od,
            t == PG_FM_UPD ? " WHERE od.status <> nw.status" : "");
    }
    if (t == PG_FG_DEL) {
        union_all(b, &first);
        sb__buf_printf(b,
                       "SELECT 4 AS kind, od.group_id AS item, f.status, "
                       "f.first_time_of_failure AS f, "
                       "f.last_time_of_failure AS l FROM %s%s",
                       d->old_rows, d->message_od);
    }
    return !first;
}

static int additions(sb_buf *b, int t, const trig_rows *d)
{
    int first = 1;
    if (t == PG_FM_INS || t == PG_FM_UPD)
        d->scalar(b, t, 1, &first);
    if (t == PG_FM_INS) {
        union_all(b, &first);
        sb__buf_printf(b,
                       "SELECT 4, g.group_id, nw.status, 1, " TIMES(
                           "nw") ", g.type, g.title FROM %s%s",
                       d->new_rows, d->groups_nw);
    }
    if (t == PG_FM_UPD) {
        union_all(b, &first);
        sb__buf_printf(b,
                       "SELECT 4, g.group_id, nw.status, CASE WHEN "
                       "od.status <> nw.status THEN 1 ELSE 0 END, " TIMES(
                           "nw") ", g.type, g.title FROM %s%s WHERE "
                                 "od.status <> nw.status OR "
                                 "od.first_time_of_failure <> "
                                 "nw.first_time_of_failure OR "
                                 "od.last_time_of_failure <> "
                                 "nw.last_time_of_failure",
                       d->pairs, d->groups_nw);
    }
    if (t == PG_FG_INS) {
        union_all(b, &first);
        sb__buf_printf(b,
                       "SELECT 4 AS kind, nw.group_id AS item, f.status, "
                       "1 AS dn, f.first_time_of_failure AS f, "
                       "f.last_time_of_failure AS l, nw.type AS gt, "
                       "nw.title AS ti FROM %s%s",
                       d->new_rows, d->message_nw);
    }
    return !first;
}

static const trig_rows pg_rows = {pg_scalar,
                                  PAIRS,
                                  "od",
                                  "nw",
                                  GROUPS_OF("od"),
                                  GROUPS_OF("nw"),
                                  MESSAGE_OF("od"),
                                  MESSAGE_OF("nw")};

/* plpgsql keeps a statement's plan for the session, made when it first
 * ran: on a new store's empty tables that plan scans them, and kept
 * scanning as they grew (28 ms a statement by 100,000 messages). With
 * sequential scans off the plan probes the indexes, whatever the tables'
 * size when it was made; the transition tables are not scanned that way. */
static void pg_function(sb_buf *b, int t)
{
    sb__buf_printf(b,
                   "CREATE OR REPLACE FUNCTION {p}fc_%s() RETURNS trigger "
                   "LANGUAGE plpgsql SET enable_seqscan = off AS "
                   "$fn$\nBEGIN\n",
                   pg_name[t]);
    size_t mark = b->len;
    sb__buf_puts(b, "  UPDATE " C " c SET ");
    remove_set(b, 1, "r.k", "r.rf", "r.rl");
    sb__buf_puts(b, " FROM (SELECT kind, item, status, count(*) AS k, "
                    "min(f) AS rf, max(l) AS rl FROM (");
    if (removals(b, t, &pg_rows))
        sb__buf_puts(b, ") t GROUP BY kind, item, status) r WHERE c.kind = "
                        "r.kind AND c.item = r.item AND c.status = "
                        "r.status;\n");
    else
        b->len = mark;
    mark = b->len;
    sb__buf_puts(b, "  INSERT INTO " C " AS c (kind, item, status, n, "
                    "first_us, last_us, group_type, title) SELECT kind, "
                    "item, status, sum(dn), min(f), max(l), max(gt), "
                    "max(ti) FROM (");
    if (additions(b, t, &pg_rows)) {
        sb__buf_puts(b, ") t GROUP BY kind, item, status ORDER BY kind, "
                        "item, status ON CONFLICT (kind, item, status) DO "
                        "UPDATE SET ");
        add_set(b, 1);
        sb__buf_puts(b, ";\n");
    } else {
        b->len = mark;
    }
    sb__buf_puts(b, "  RETURN NULL;\nEND $fn$;\n"); /* terminates it again */
}

static void pg_ddl(sb_buf *b)
{
    for (int t = 0; t < PG_N; t++)
        pg_function(b, t);
    /* CREATE TRIGGER has no IF NOT EXISTS before PostgreSQL 14. */
    sb__buf_puts(b, "DO $do$ BEGIN\n");
    for (int t = 0; t < PG_N; t++) {
        int fm = t <= PG_FM_DEL;
        const char *ev = t == PG_FM_INS || t == PG_FG_INS ? "INSERT"
                         : t == PG_FM_UPD                 ? "UPDATE"
                                                          : "DELETE";
        const char *ref = t == PG_FM_UPD ? "OLD TABLE AS od NEW TABLE AS nw"
                          : t == PG_FM_INS || t == PG_FG_INS
                              ? "NEW TABLE AS nw"
                              : "OLD TABLE AS od";
        sb__buf_printf(b,
                       "IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid "
                       "= '%s'::regclass AND tgname = '{p}fc_%s') THEN\n"
                       "  CREATE TRIGGER {p}fc_%s AFTER %s ON %s REFERENCING "
                       "%s FOR EACH STATEMENT EXECUTE FUNCTION {p}fc_%s();\n"
                       "END IF;\n",
                       fm ? FM : FG, pg_name[t], pg_name[t], ev, fm ? FM : FG,
                       ref, pg_name[t]);
    }
    sb__buf_puts(b, "END $do$;\n");
}

static void ms_ddl(sb_buf *b);

void sb__errors_counts_ddl(int dialect, const char *text_type, sb_buf *b)
{
    if (dialect == SB_DIALECT_MSSQL) {
        ms_ddl(b);
        return;
    }
    sb__buf_printf(b, table_ddl, text_type, text_type, text_type);
    if (dialect == SB_DIALECT_POSTGRES)
        pg_ddl(b);
    else
        sqlite_ddl(b);
}

/* ---- SQL Server: AFTER triggers over inserted / deleted ---- */

/* The same removals and additions as PostgreSQL's, over the trigger's
 * pseudo-tables: `deleted AS od` (old rows) and `inserted AS nw` (new
 * rows). NULLs are typed (a UNION's first branch types its columns).
 * Each trigger is created through EXEC (CREATE TRIGGER must open its
 * batch), once: a trigger of that name is left as it is. */
#define MS_PAIRS                                                               \
    "deleted AS od JOIN inserted AS nw ON nw.unique_message_id = "             \
    "od.unique_message_id"
#define MS_GROUPS_OF(r)                                                        \
    " JOIN " FG " AS g ON g.unique_message_id = " r ".unique_message_id"
#define MS_MESSAGE_OF(r)                                                       \
    " JOIN " FM " AS f ON f.unique_message_id = " r ".unique_message_id"

static void ms_scalar(sb_buf *b, int t, int add, int *first)
{
    const char *r = add ? "nw" : "od";
    for (int k = 1; k <= N_SCALAR; k++) {
        const char *col = scalar_col[k];
        union_all(b, first);
        sb__buf_printf(b,
                       "SELECT %d AS kind, coalesce(%s.%s, '') AS item, "
                       "%s.status, %sCAST(NULL AS bigint) AS f, CAST(NULL AS "
                       "bigint) AS l%s FROM %s",
                       k, r, col, r, add ? "1 AS dn, " : "",
                       add ? ", CAST(NULL AS nvarchar(100)) AS gt, CAST(NULL "
                             "AS nvarchar(max)) AS ti"
                           : "",
                       t == PG_FM_UPD ? MS_PAIRS
                       : add          ? "inserted AS nw"
                                      : "deleted AS od");
        /* IS DISTINCT FROM, which SQL Server 2017 lacks. */
        if (t == PG_FM_UPD)
            sb__buf_printf(b,
                           " WHERE od.status <> nw.status OR od.%s <> nw.%s "
                           "OR (od.%s IS NULL AND nw.%s IS NOT NULL) OR "
                           "(od.%s IS NOT NULL AND nw.%s IS NULL)",
                           col, col, col, col, col, col);
    }
}

static const trig_rows ms_rows = {ms_scalar,           MS_PAIRS,
                                  "deleted AS od",     "inserted AS nw",
                                  MS_GROUPS_OF("od"),  MS_GROUPS_OF("nw"),
                                  MS_MESSAGE_OF("od"), MS_MESSAGE_OF("nw")};

/* One trigger's body: nothing when its statement changed no row; the
 * removals with one UPDATE ... FROM, the additions with one MERGE (its
 * HOLDLOCK makes a concurrent first insert of a key wait, then update).
 * SET NOCOUNT ON keeps the trigger's own row counts from the client. */
static void ms_body(sb_buf *b, int t)
{
    int ins = t == PG_FM_INS || t == PG_FG_INS;
    sb__buf_printf(b,
                   "BEGIN SET NOCOUNT ON; IF NOT EXISTS (SELECT 1 FROM "
                   "%s) RETURN; ",
                   ins ? "inserted" : "deleted");
    size_t mark = b->len;
    sb__buf_puts(b, "UPDATE c SET ");
    remove_set(b, 1, "r.k", "r.rf", "r.rl");
    sb__buf_puts(b, " FROM " C " AS c JOIN (SELECT kind, item, status, "
                    "COUNT(*) AS k, MIN(f) AS rf, MAX(l) AS rl FROM (");
    if (removals(b, t, &ms_rows))
        sb__buf_puts(b, ") AS t GROUP BY kind, item, status) AS r ON c.kind "
                        "= r.kind AND c.item = r.item AND c.status = "
                        "r.status; ");
    else
        b->len = mark;
    mark = b->len;
    sb__buf_puts(b, "MERGE " C " WITH (HOLDLOCK) AS c USING (SELECT kind, "
                    "item, status, SUM(dn) AS n, MIN(f) AS first_us, MAX(l) "
                    "AS last_us, MAX(gt) AS group_type, MAX(ti) AS title "
                    "FROM (");
    if (additions(b, t, &ms_rows)) {
        sb__buf_puts(b, ") AS t GROUP BY kind, item, status) AS x ON c.kind "
                        "= x.kind AND c.item = x.item AND c.status = "
                        "x.status WHEN MATCHED THEN UPDATE SET n = c.n + "
                        "x.n, first_us = CASE WHEN c.n = 0 OR c.first_us IS "
                        "NULL THEN x.first_us ELSE CASE WHEN c.first_us <= "
                        "x.first_us THEN c.first_us ELSE x.first_us END END, "
                        "last_us = CASE WHEN c.n = 0 OR c.last_us IS NULL "
                        "THEN x.last_us ELSE CASE WHEN c.last_us >= "
                        "x.last_us THEN c.last_us ELSE x.last_us END END WHEN "
                        "NOT MATCHED THEN INSERT (kind, item, status, n, "
                        "first_us, last_us, group_type, title) VALUES "
                        "(x.kind, x.item, x.status, x.n, x.first_us, "
                        "x.last_us, x.group_type, x.title); ");
    } else {
        b->len = mark;
    }
    sb__buf_puts(b, "END");
    b->data[b->len] = '\0';
}

/* `s` as the body of an N'...' literal (quotes doubled). */
static void ms_quoted(sb_buf *b, const char *s)
{
    for (const char *q; (q = strchr(s, '\'')) != NULL; s = q + 1) {
        sb__buf_append(b, s, (size_t)(q - s) + 1);
        sb__buf_puts(b, "'");
    }
    sb__buf_puts(b, s);
}

void sb__errors_ms_trigger(sb_buf *b, const char *name, const char *table,
                           const char *ev, const char *body)
{
    sb__buf_printf(b,
                   "IF OBJECT_ID(N'%s', N'TR') IS NULL EXEC(N'CREATE TRIGGER "
                   "%s ON %s AFTER %s AS ",
                   name, name, table, ev);
    ms_quoted(b, body);
    sb__buf_puts(b, "');\n");
}

static void ms_ddl(sb_buf *b)
{
    sb__buf_puts(b, "IF OBJECT_ID(N'" C "', N'U') IS NULL\n"
                    "CREATE TABLE " C " (\n"
                    "  kind int NOT NULL,\n"
                    "  item nvarchar(400) COLLATE " SB_MS_BIN2 " NOT NULL,\n"
                    "  status int NOT NULL,\n"
                    "  n bigint NOT NULL,\n"
                    "  first_us bigint,\n"
                    "  last_us bigint,\n"
                    "  stale int NOT NULL DEFAULT 0,\n"
                    "  group_type nvarchar(100) COLLATE " SB_MS_BIN2 ",\n"
                    "  title nvarchar(max),\n"
                    "  PRIMARY KEY (kind, item, status)\n"
                    ");\n"
                    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id "
                    "= OBJECT_ID(N'" C "', N'U') AND name = "
                    "N'{p}failed_counts_stale_idx')\n"
                    "EXEC(N'CREATE INDEX {p}failed_counts_stale_idx ON " C
                    " (kind, item, status) WHERE stale = 1');\n");
    sb_buf body;
    sb__buf_init(&body, 64 * 1024);
    for (int t = 0; t < PG_N; t++) {
        int fm = t <= PG_FM_DEL;
        const char *ev = t == PG_FM_INS || t == PG_FG_INS ? "INSERT"
                         : t == PG_FM_UPD                 ? "UPDATE"
                                                          : "DELETE";
        char name[64];
        snprintf(name, sizeof name, "{p}fc_%s", pg_name[t]);
        sb__buf_reset(&body);
        ms_body(&body, t);
        if (body.failed)
            b->failed = body.failed;
        else
            sb__errors_ms_trigger(b, name, fm ? FM : FG, ev, body.data);
    }
    sb__buf_free(&body);
}

/* ---- statements ---- */

/* SQL Server: TOP for LIMIT, the sentinel where a caller's classifier is
 * compared (groups.c passes it through unchecked). */
static void ms_counts_sql(int k, sb_buf *b)
{
    switch (k) {
    case ER_COUNTS_STATE:
        sb__buf_puts(b, "SELECT (SELECT count(*) FROM (SELECT TOP (1) 1 AS x "
                        "FROM " C ") a), (SELECT count(*) FROM (SELECT TOP "
                        "(1) 1 AS x FROM " FM ") b)");
        return;
    case ER_STALE_TAKE: /* rows other refreshers hold are skipped */
        sb__buf_printf(b,
                       "SELECT TOP (%d) item, status FROM " C " WITH "
                       "(UPDLOCK, ROWLOCK, READPAST) WHERE stale = 1 AND "
                       "kind = 4 ORDER BY kind, item, status",
                       REFRESH_BATCH);
        return;
    case ER_STALE_FIX: /* $1 group (read from the table), $2 status */
        sb__buf_puts(b, "UPDATE c SET first_us = s.fu, last_us = s.lu, "
                        "stale = 0 FROM " C " AS c CROSS APPLY (SELECT "
                        "min(f.first_time_of_failure) AS fu, "
                        "max(f.last_time_of_failure) AS lu" GROUP_ROWS(
                            "c.group_type", "$1",
                            "$2") ") AS s WHERE c.kind = 4 AND c.item = $1 AND "
                                  "c.status = $2");
        return;
    case ER_GROUPS_STALE: /* $1 classifier, $2 status */
        sb__buf_puts(b, "SELECT count(*) FROM (SELECT TOP (1) 1 AS x FROM " C
                        " WHERE stale = 1 AND kind = 4 AND " SB_MS_SAME(
                            "group_type", "$1") " AND status = $2) s");
        return;
    case ER_GROUPS: /* $1 classifier, $2 status, $3 limit */
        sb__buf_puts(
            b, "SELECT TOP (CAST($3 AS int)) item, group_type, "
               "title, n, first_us, last_us, (SELECT comment FROM "
               "{p}group_comments WHERE group_id = c.item) FROM " C
               " c WHERE c.kind = 4 AND " SB_MS_SAME(
                   "c.group_type",
                   "$1") " AND c.status = $2 AND c.n > 0 ORDER BY last_us "
                         "DESC, item");
        return;
    case ER_GROUPS_EXACT:
        sb__buf_puts(
            b,
            "SELECT TOP (CAST($3 AS int)) item, group_type, title, "
            "n, fu, lu, (SELECT comment FROM {p}group_comments "
            "WHERE group_id = w.item) FROM (SELECT c.item, "
            "c.group_type, c.title, c.n, CASE WHEN c.stale = 1 THEN "
            "(SELECT min(f.first_time_of_failure)" GROUP_ROWS(
                "c.group_type", "c.item",
                "c.status") ") ELSE c.first_us END AS fu, CASE WHEN c.stale = 1 "
                            "THEN (SELECT max(f.last_time_of_failure)" GROUP_ROWS(
                                "c.group_type", "c.item",
                                "c.status") ") ELSE c.last_us END AS lu FROM " C
                                            " c WHERE c.kind = "
                                            "4 AND " SB_MS_SAME(
                                                "c.group_type",
                                                "$1") " AND c.status = $2 AND c.n > 0) w ORDER BY lu DESC, "
                                                      "item");
        return;
    default: /* ER_COUNTS_REBUILD: the same text everywhere */
        sb__errors_counts_sql(SB_DIALECT_SQLITE, k, b);
        return;
    }
}

void sb__errors_counts_sql(int dialect, int k, sb_buf *b)
{
    int pg = dialect == SB_DIALECT_POSTGRES;
    if (dialect == SB_DIALECT_MSSQL) {
        ms_counts_sql(k, b);
        return;
    }
    switch (k) {
    case ER_COUNTS_STATE: /* is a rebuild needed? */
        sb__buf_puts(b, "SELECT (SELECT count(*) FROM (SELECT 1 FROM " C
                        " LIMIT 1) a), (SELECT count(*) FROM (SELECT 1 FROM " FM
                        " LIMIT 1) b)");
        break;
    case ER_COUNTS_REBUILD:
        sb__buf_puts(b, "DELETE FROM " C ";\n");
        for (int kind = 1; kind <= N_SCALAR; kind++)
            sb__buf_printf(b,
                           "INSERT INTO " C " (kind, item, status, n) SELECT "
                           "%d, coalesce(%s, ''), status, count(*) FROM " FM
                           " GROUP BY coalesce(%s, ''), status;\n",
                           kind, scalar_col[kind], scalar_col[kind]);
        sb__buf_puts(b, "INSERT INTO " C " (kind, item, status, n, first_us, "
                        "last_us, group_type, title) SELECT 4, g.group_id, "
                        "f.status, count(*), min(f.first_time_of_failure), "
                        "max(f.last_time_of_failure), max(g.type), "
                        "max(g.title) FROM " FG " g JOIN " FM " f ON "
                        "f.unique_message_id = g.unique_message_id GROUP BY "
                        "g.group_id, f.status;\n");
        break;
    case ER_STALE_TAKE:
        sb__buf_printf(b,
                       "SELECT item, status FROM " C " WHERE stale = 1 AND "
                       "kind = 4 ORDER BY kind, item, status LIMIT %d%s",
                       REFRESH_BATCH, pg ? " FOR UPDATE SKIP LOCKED" : "");
        break;
    case ER_STALE_FIX: /* $1 group, $2 status */
        sb__buf_puts(b,
                     "UPDATE " C " SET (first_us, last_us) = (SELECT "
                     "min(f.first_time_of_failure), "
                     "max(f.last_time_of_failure)" GROUP_ROWS(
                         C ".group_type", "$1",
                         "$2") "), stale = 0 WHERE kind = 4 AND item = $1 AND "
                               "status = $2");
        break;
    case ER_GROUPS_STALE: /* $1 classifier, $2 status */
        sb__buf_puts(b, "SELECT count(*) FROM (SELECT 1 FROM " C " WHERE "
                        "stale = 1 AND kind = 4 AND group_type = $1 AND "
                        "status = $2 LIMIT 1) s");
        break;
    case ER_GROUPS: /* $1 classifier, $2 status, $3 limit */
        sb__buf_puts(b, "SELECT item, group_type, title, n, first_us, "
                        "last_us, (SELECT comment FROM {p}group_comments "
                        "WHERE group_id = c.item) FROM " C " c WHERE c.kind "
                        "= 4 AND c.group_type = $1 AND c.status = $2 AND c.n "
                        "> 0 ORDER BY last_us DESC, item LIMIT $3");
        break;
    case ER_GROUPS_EXACT: /* the same, stale windows computed from the
                             group's rows (a separate statement: its
                             subplans' estimates would make PostgreSQL
                             JIT-compile the plain one, ~240 ms) */
        sb__buf_puts(
            b,
            "SELECT item, group_type, title, n, fu, lu, (SELECT "
            "comment FROM {p}group_comments WHERE group_id = "
            "w.item) FROM (SELECT c.item, c.group_type, c.title, "
            "c.n, CASE WHEN c.stale = 1 THEN (SELECT "
            "min(f.first_time_of_failure)" GROUP_ROWS(
                "c.group_type", "c.item",
                "c.status") ") ELSE c.first_us END AS fu, CASE WHEN c.stale = 1 "
                            "THEN (SELECT max(f.last_time_of_failure)" GROUP_ROWS(
                                "c.group_type", "c.item",
                                "c.status") ") ELSE c.last_us END AS lu FROM " C
                                            " c WHERE c.kind = 4 AND c.group_type = $1 AND c.status "
                                            "= $2 AND c.n > 0) w ORDER BY lu DESC, item LIMIT $3");
        break;
    default: break;
    }
}

int sb__errors_counts_ensure(sb_conn *c, sb_errors *e, sb_error *err)
{
    sb_rows *rows = NULL;
    int rc = sb__query(c, e->sql.s[ER_COUNTS_STATE], NULL, 0, &rows, NULL, err);
    int rebuild = rc == SB_OK && rows->nrows == 1 &&
                  sb__rows_int(rows, 0, 0) == 0 &&
                  sb__rows_int(rows, 0, 1) != 0;
    sb__rows_free(rows);
    if (rc == SB_OK && rebuild)
        rc = sb__exec(c, e->sql.s[ER_COUNTS_REBUILD], err);
    return rc;
}

typedef struct refresh_ctx {
    sb_errors *e;
    size_t fixed;
} refresh_ctx;

static int refresh_tx(sb_conn *c, void *vctx, sb_error *err)
{
    refresh_ctx *x = vctx;
    x->fixed = 0;
    sb_rows *rows = NULL;
    int rc =
        sb__query(c, x->e->sql.s[ER_STALE_TAKE], NULL, 0, &rows, NULL, err);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        sb_value p[2] = {sb__v_text(sb__rows_text(rows, r, 0)),
                         sb__v_int(sb__rows_int(rows, r, 1))};
        rc = sb__query(c, x->e->sql.s[ER_STALE_FIX], p, 2, NULL, NULL, err);
    }
    if (rc == SB_OK)
        x->fixed = rows->nrows;
    sb__rows_free(rows);
    return rc;
}

void sb__errors_refresh_windows(sb_errors *e)
{
    refresh_ctx x = {e, 0};
    size_t done = 0;
    sb_error err;
    int rc;
    do {
        rc = sb__db_run_tx(e->bus->pool, NULL, refresh_tx, &x, &err);
        done += x.fixed;
    } while (rc == SB_OK && x.fixed == REFRESH_BATCH && done < REFRESH_MAX);
    if (rc != SB_OK)
        sb__log(&e->bus->log, SB_LOG_WARN, "errors",
                "the failure windows of changed groups stay marked stale "
                "(the group views count them exactly until a later change "
                "refreshes them): %s",
                err.message);
}

void sb__errors_count_sql(int dialect, int item, int status, sb_buf *b)
{
    size_t np = 1;
    sb__buf_printf(b, "SELECT coalesce(sum(n), 0)%s FROM " C " WHERE kind = $1",
                   dialect == SB_DIALECT_POSTGRES ? "::int8" : "");
    /* SQL Server: the item is a caller's filter value (list.c). */
    if (item && dialect == SB_DIALECT_MSSQL)
        sb__buf_printf(b,
                       " AND item = $%zu COLLATE " SB_MS_BIN2 " AND item + "
                       "N'.' = $%zu + N'.' COLLATE " SB_MS_BIN2,
                       np + 1, np + 1);
    else if (item)
        sb__buf_printf(b, " AND item = $%zu", np + 1);
    np += item != 0;
    if (status)
        sb__buf_printf(b, " AND status = $%zu", np + 1);
}

int sb__errors_count(sb_conn *c, sb_errors *e, int kind, const char *item,
                     int status, int64_t *out, sb_error *err)
{
    sb_buf b;
    sb__buf_init(&b, 1024);
    sb_value p[3];
    size_t np = 0;
    p[np++] = sb__v_int(kind);
    if (item != NULL)
        p[np++] = sb__v_text(item);
    if (status >= 0)
        p[np++] = sb__v_int(status);
    sb__errors_count_sql(e->bus->dialect, item != NULL, status >= 0, &b);
    int rc = b.failed;
    char *sql = rc == SB_OK ? sb__sql_subst(b.data, e->bus->prefix, &rc) : NULL;
    sb__buf_free(&b);
    if (sql == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_rows *rows = NULL;
    rc = sb__query(c, sql, p, np, &rows, NULL, err);
    *out = rc == SB_OK && rows->nrows == 1 ? sb__rows_int(rows, 0, 0) : 0;
    sb__rows_free(rows);
    sb__free(sql);
    return rc;
}

void sb__errors_counts_by_sql(int dialect, int status, sb_buf *b)
{
    int pg = dialect == SB_DIALECT_POSTGRES, ms = dialect == SB_DIALECT_MSSQL;
    size_t np = 1;
    sb__buf_printf(
        b,
        "SELECT %sitem, sum(n)%s FROM " C " WHERE kind = $1 AND "
        "item <> ''",
        ms ? status ? "TOP (CAST($3 AS int)) " : "TOP (CAST($2 AS int)) " : "",
        pg ? "::int8" : "");
    if (status)
        sb__buf_printf(b, " AND status = $%zu", ++np);
    sb__buf_puts(b, " GROUP BY item HAVING sum(n) > 0 ORDER BY 2 DESC, "
                    "item");
    if (!ms)
        sb__buf_printf(b, " LIMIT $%zu", np + 1);
}

int sb_errors_counts(sb_errors *e, const char *by, int status, size_t limit,
                     sb_failed_count ***out, size_t *n_out, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || by == NULL || out == NULL || n_out == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "by",
                       "arguments must not be NULL");
    *out = NULL;
    *n_out = 0;
    static const char *const names[] = {"failed_queue", "endpoint",
                                        "message_type"};
    int kind = 0;
    for (int k = 0; k < N_SCALAR; k++)
        if (strcmp(by, names[k]) == 0)
            kind = k + 1;
    if (kind == 0)
        return sb__err(err, SB_INVALID, "by",
                       "by must be failed_queue, endpoint or message_type");
    if (status < -1 || status > SB_FAILED_ARCHIVED)
        return sb__err(err, SB_INVALID, "status",
                       "status must be -1 (any) or 0 to 3 (got %d)", status);
    if (limit < 1 || limit > 1000)
        return sb__err(err, SB_INVALID, "limit",
                       "limit must be 1 to 1000 (got %zu)", limit);
    sb_buf b;
    sb__buf_init(&b, 1024);
    sb_value p[3];
    size_t np = 0;
    p[np++] = sb__v_int(kind);
    if (status >= 0)
        p[np++] = sb__v_int(status);
    p[np++] = sb__v_int((int64_t)limit);
    sb__errors_counts_by_sql(e->bus->dialect, status >= 0, &b);
    int rc = b.failed;
    char *sql = rc == SB_OK ? sb__sql_subst(b.data, e->bus->prefix, &rc) : NULL;
    sb__buf_free(&b);
    if (sql == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_conn *c = NULL;
    sb_rows *rows = NULL;
    rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc == SB_OK) {
        rc = sb__query(c, sql, p, np, &rows, NULL, err);
        sb__pool_release(e->bus->pool, c);
    }
    sb__free(sql);
    size_t n = rc == SB_OK ? rows->nrows : 0;
    sb_failed_count **list = NULL;
    if (n > 0) {
        SB__LIST_NEW(list, n);
        if (list == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t r = 0; rc == SB_OK && r < n; r++) {
        sb_failed_count *v = list[r];
        sb_text t;
        v->size = sizeof *v;
        sb__text_init(&t, v->name, sizeof v->name);
        const char *name = sb__rows_text(rows, r, 0);
        sb__text_put(&t, name, strlen(name));
        v->count = sb__rows_int(rows, r, 1);
    }
    sb__rows_free(rows);
    if (rc != SB_OK)
        return rc;
    *out = list;
    *n_out = n;
    return SB_OK;
}

int sb_errors_status_counts(sb_errors *e, int64_t counts[4], sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || counts == NULL)
        return sb__err(err, SB_INVALID, e == NULL ? "errors" : "counts",
                       "arguments must not be NULL");
    int rc = SB_OK;
    char *sql =
        sb__sql_subst(e->bus->dialect == SB_DIALECT_POSTGRES
                          ? "SELECT status, coalesce(sum(n), 0)::int8 FROM " C
                            " WHERE kind = 1 GROUP BY status"
                          : "SELECT status, coalesce(sum(n), 0) FROM " C
                            " WHERE kind = 1 GROUP BY status",
                      e->bus->prefix, &rc);
    if (sql == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    sb_conn *c = NULL;
    sb_rows *rows = NULL;
    rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc == SB_OK) {
        rc = sb__query(c, sql, NULL, 0, &rows, NULL, err);
        sb__pool_release(e->bus->pool, c);
    }
    sb__free(sql);
    for (int st = 0; st < 4; st++)
        counts[st] = 0;
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        int64_t st = sb__rows_int(rows, r, 0);
        if (st >= 0 && st < 4)
            counts[st] = sb__rows_int(rows, r, 1);
    }
    sb__rows_free(rows);
    return rc;
}
