/* columns.c - tables' columns against the catalog (T7). Two checks, one
 * way of reporting: the typed one for the tables whose every column's
 * type matters (the messages table, schema.c; the durable operations'
 * table, errors/operations.c: each expected column present, of its type,
 * NOT NULL where it must be), and for every table sqlbus creates, each
 * column its own DDL declares present (sb__check_ddl_tables), so a table
 * of another shape is reported at open, naming the column and the
 * statement that fixes it, before a statement or an index build runs
 * into it. */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* SQLite cannot change a column's type or nullability in place, nor add
 * a NOT NULL column without a default or a key column. */
static void sqlite_fix(char *fix, size_t cap, const char *table)
{
    snprintf(fix, cap,
             "recreate %s from `sqlbus schema print --backend sqlite` and copy "
             "the rows",
             table);
}

static int missing(const char *table, const char *column, const char *fix,
                   sb_error *err)
{
    return sb__err(err, SB_SCHEMA_MISMATCH, column,
                   "table %s: column %s is missing; fix: %s", table, column,
                   fix);
}

/* The catalog row of `name` in `rows` (name, type, notnull, collation),
 * or rows->nrows. */
static size_t find_column(const sb_rows *rows, const char *name, size_t len)
{
    size_t r = 0;
    for (; r < rows->nrows; r++) {
        const char *got = sb__rows_text(rows, r, 0);
        if (got != NULL && strlen(got) == len && memcmp(got, name, len) == 0)
            break;
    }
    return r;
}

int sb__check_columns(int dialect, const char *table,
                      const sb_column_spec *spec, size_t n, const sb_rows *rows,
                      sb_error *err)
{
    char what[256], fix[320];
    bool pg = dialect == SB_DIALECT_POSTGRES;
    bool ms = dialect == SB_DIALECT_MSSQL;
    /* Missing columns first: a table made by hand or by another product
     * is told what it lacks before what it has differs. */
    for (size_t i = 0; i < n; i++) {
        const sb_column_spec *s = &spec[i];
        if (find_column(rows, s->name, strlen(s->name)) < rows->nrows)
            continue;
        const char *want = pg   ? s->pg_type
                           : ms ? s->mssql_type
                                : s->sqlite_type;
        if (!pg && !ms && s->notnull && s->dflt == NULL)
            sqlite_fix(fix, sizeof fix, table);
        else
            snprintf(fix, sizeof fix, "ALTER TABLE %s ADD%s %s %s%s%s%s", table,
                     ms ? "" : " COLUMN", s->name, want,
                     s->notnull ? " NOT NULL" : "",
                     s->dflt != NULL ? " DEFAULT " : "",
                     s->dflt != NULL ? s->dflt : "");
        return missing(table, s->name, fix, err);
    }
    for (size_t i = 0; i < n; i++) {
        const sb_column_spec *s = &spec[i];
        const char *want = pg   ? s->pg_type
                           : ms ? s->mssql_type
                                : s->sqlite_type;
        size_t r = find_column(rows, s->name, strlen(s->name));
        const char *type = sb__rows_text(rows, r, 1);
        if (type == NULL || strcasecmp(type, want) != 0) {
            snprintf(what, sizeof what, "column %s has type %s, expected %s",
                     s->name, type && type[0] ? type : "(none)", want);
            if (pg)
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s::%s",
                         table, s->name, want, s->name, want);
            else if (ms)
                snprintf(fix, sizeof fix, "ALTER TABLE %s ALTER COLUMN %s %s%s",
                         table, s->name, want,
                         s->notnull ? " NOT NULL" : " NULL");
            else
                sqlite_fix(fix, sizeof fix, table);
        } else if (s->notnull && sb__rows_int(rows, r, 2) == 0) {
            snprintf(what, sizeof what, "column %s allows NULL", s->name);
            if (pg)
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s SET NOT NULL", table,
                         s->name);
            else if (ms)
                snprintf(fix, sizeof fix,
                         "ALTER TABLE %s ALTER COLUMN %s %s NOT NULL", table,
                         s->name, want);
            else
                sqlite_fix(fix, sizeof fix, table);
        } else {
            continue;
        }
        return sb__err(err, SB_SCHEMA_MISMATCH, s->name,
                       "table %s: %s; fix: %s", table, what, fix);
    }
    return SB_OK;
}

/* ---- the columns a DDL text declares ---- */

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static bool space_char(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *skip_space(const char *p)
{
    while (space_char(*p))
        p++;
    return p;
}

/* `p` (at a word boundary before it) starts the keyword `w`, in any case,
 * followed by a character that cannot continue a word. */
static bool keyword(const char *p, const char *w)
{
    size_t n = strlen(w);
    return strncasecmp(p, w, n) == 0 && !ident_char(p[n]);
}

/* Past a quoted string or identifier starting at `p` ('...' or "...",
 * the quote doubled inside). */
static const char *skip_quoted(const char *p)
{
    char q = *p++;
    while (*p != '\0') {
        if (*p == q && p[1] == q)
            p += 2;
        else if (*p == q)
            return p + 1;
        else
            p++;
    }
    return p;
}

/* An item of a CREATE TABLE's list that is a table constraint, not a
 * column. */
static bool constraint_item(const char *p)
{
    static const char *const words[] = {"CONSTRAINT", "PRIMARY", "UNIQUE",
                                        "FOREIGN",    "CHECK",   "EXCLUDE",
                                        "INDEX",      "PERIOD",  "LIKE"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (keyword(p, words[i]))
            return true;
    return false;
}

typedef struct ddl_list {
    sb_ddl_column *v;
    size_t n, cap;
    int rc;
} ddl_list;

static void add_column(ddl_list *l, const char *table, size_t table_len,
                       const char *item, const char *end)
{
    item = skip_space(item);
    while (end > item && space_char(end[-1]))
        end--;
    if (item == end || constraint_item(item) || l->rc != SB_OK)
        return;
    size_t name_len = 0;
    while (item + name_len < end && ident_char(item[name_len]))
        name_len++;
    if (name_len == 0)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        sb_ddl_column *v = sb__realloc(l->v, cap * sizeof *v);
        if (v == NULL) {
            l->rc = SB_NOMEM;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    sb_ddl_column *c = &l->v[l->n++];
    c->table = table;
    c->table_len = table_len;
    c->def = item;
    c->def_len = (size_t)(end - item);
    c->name_len = name_len;
}

/* The column list of a CREATE TABLE whose "(" is at `p`; returns the
 * position after its ")". */
static const char *table_body(ddl_list *l, const char *table, size_t table_len,
                              const char *p)
{
    int depth = 1;
    const char *item = ++p;
    while (*p != '\0') {
        if (*p == '\'' || *p == '"') {
            p = skip_quoted(p);
            continue;
        }
        if (*p == '(')
            depth++;
        else if (*p == ')' && --depth == 0) {
            add_column(l, table, table_len, item, p);
            return p + 1;
        } else if (*p == ',' && depth == 1) {
            add_column(l, table, table_len, item, p);
            item = p + 1;
        }
        p++;
    }
    return p;
}

int sb__ddl_columns(const char *ddl, sb_ddl_column **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    ddl_list l = {NULL, 0, 0, SB_OK};
    const char *p = ddl;
    while (*p != '\0' && l.rc == SB_OK) {
        if (*p == '\'' || *p == '"') {
            p = skip_quoted(p);
            continue;
        }
        if ((p == ddl || !ident_char(p[-1])) && keyword(p, "CREATE")) {
            const char *q = skip_space(p + 6);
            if (q > p + 6 && keyword(q, "TABLE")) {
                q = skip_space(q + 5);
                if (keyword(q, "IF")) {
                    q = skip_space(q + 2);
                    if (keyword(q, "NOT"))
                        q = skip_space(skip_space(q + 3) + 6);
                }
                const char *name = q;
                while (ident_char(*q) || *q == '.')
                    q++;
                size_t name_len = (size_t)(q - name);
                q = skip_space(q);
                if (name_len > 0 && *q == '(') {
                    p = table_body(&l, name, name_len, q);
                    continue;
                }
            }
            p += 6;
            continue;
        }
        p++;
    }
    if (l.rc != SB_OK) {
        sb__free(l.v);
        return l.rc;
    }
    *out = l.v;
    *n_out = l.n;
    return SB_OK;
}

/* The fix for column `c` of `table` missing: its definition from the DDL
 * added; on SQLite, where ADD COLUMN takes no key, no UNIQUE and no NOT
 * NULL without a default, the table recreated instead. Returns whether
 * the fix is that ALTER TABLE (a statement that can run as it is). */
static bool ddl_fix(int dialect, const char *table, const sb_ddl_column *c,
                    char *fix, size_t cap)
{
    char def[256];
    size_t k = 0;
    for (size_t i = 0; i < c->def_len && k + 1 < sizeof def; i++) {
        char ch = space_char(c->def[i]) ? ' ' : c->def[i];
        if (ch == ' ' && k > 0 && def[k - 1] == ' ')
            continue;
        def[k++] = ch;
    }
    def[k] = '\0';
    bool key = false, not_null = false, has_default = false;
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && ident_char(def[i - 1]))
            continue;
        key = key || keyword(def + i, "PRIMARY") || keyword(def + i, "UNIQUE");
        not_null = not_null || keyword(def + i, "NOT");
        has_default = has_default || keyword(def + i, "DEFAULT");
    }
    if (key || (not_null && !has_default)) {
        if (dialect == SB_DIALECT_SQLITE) {
            sqlite_fix(fix, cap, table);
            return false;
        }
        snprintf(fix, cap, "ALTER TABLE %s ADD%s %s", table,
                 dialect == SB_DIALECT_MSSQL ? "" : " COLUMN", def);
        return false;
    }
    snprintf(fix, cap, "ALTER TABLE %s ADD%s %s", table,
             dialect == SB_DIALECT_MSSQL ? "" : " COLUMN", def);
    return true;
}

/* For each table of `cols` that exists, in runs of one table: `fn` on
 * each declared column the catalog lacks, until one fails. */
typedef int (*absent_fn)(const char *table, const sb_ddl_column *col,
                         void *user, sb_error *err);

static int each_absent(sb_conn *c, const char *columns_sql,
                       const sb_ddl_column *cols, size_t n, absent_fn fn,
                       void *user, sb_error *err)
{
    int rc = SB_OK;
    for (size_t i = 0; rc == SB_OK && i < n;) {
        size_t end = i;
        while (end < n && cols[end].table_len == cols[i].table_len &&
               memcmp(cols[end].table, cols[i].table, cols[i].table_len) == 0)
            end++;
        char table[SB_MAX_PREFIX_LEN + 64];
        snprintf(table, sizeof table, "%.*s", (int)cols[i].table_len,
                 cols[i].table);
        sb_value p = sb__v_text(table);
        sb_rows *rows = NULL;
        rc = sb__query(c, columns_sql, &p, 1, &rows, NULL, err);
        /* An absent table is not yet migrated (T7): its next use says so. */
        for (size_t k = i; rc == SB_OK && rows->nrows > 0 && k < end; k++)
            if (find_column(rows, cols[k].def, cols[k].name_len) == rows->nrows)
                rc = fn(table, &cols[k], user, err);
        sb__rows_free(rows);
        i = end;
    }
    return rc;
}

typedef struct absent_ctx {
    int dialect;
    sb_conn *c;
    const char *const *later; /* the columns an upgrade may add */
    int added;
} absent_ctx;

static bool added_later(const absent_ctx *x, const sb_ddl_column *col)
{
    for (const char *const *n = x->later; n != NULL && *n != NULL; n++)
        if (strlen(*n) == col->name_len &&
            memcmp(*n, col->def, col->name_len) == 0)
            return true;
    return false;
}

static int report_absent(const char *table, const sb_ddl_column *col,
                         void *user, sb_error *err)
{
    absent_ctx *x = user;
    char name[64], fix[400];
    snprintf(name, sizeof name, "%.*s", (int)col->name_len, col->def);
    ddl_fix(x->dialect, table, col, fix, sizeof fix);
    return missing(table, name, fix, err);
}

static int add_absent(const char *table, const sb_ddl_column *col, void *user,
                      sb_error *err)
{
    absent_ctx *x = user;
    char fix[400];
    if (!added_later(x, col) ||
        !ddl_fix(x->dialect, table, col, fix, sizeof fix))
        return report_absent(table, col, user, err);
    int rc = sb__exec(x->c, fix, err);
    if (rc == SB_OK)
        x->added++;
    return rc;
}

int sb__ddl_add_missing(sb_conn *c, int dialect, const char *columns_sql,
                        const char *ddl, const char *const *later, int *added,
                        sb_error *err)
{
    *added = 0;
    sb_ddl_column *cols = NULL;
    size_t n = 0;
    int rc = sb__ddl_columns(ddl, &cols, &n);
    if (rc != SB_OK)
        return sb__err(err, rc, NULL, "out of memory");
    absent_ctx x = {dialect, c, later, 0};
    rc = each_absent(c, columns_sql, cols, n, add_absent, &x, err);
    sb__free(cols);
    *added = x.added;
    return rc;
}

int sb__check_ddl_tables(sb_bus *bus, const char *ddl, sb_error *err)
{
    sb_ddl_column *cols = NULL;
    size_t n = 0;
    int rc = sb__ddl_columns(ddl, &cols, &n);
    if (rc != SB_OK)
        return sb__err(err, rc, NULL, "out of memory");
    sb_conn *c = NULL;
    if (n > 0)
        rc = sb__pool_acquire(bus->pool, 30000, &c, err);
    absent_ctx x = {bus->dialect, c, NULL, 0};
    if (rc == SB_OK)
        rc = each_absent(c, bus->sql->columns, cols, n, report_absent, &x, err);
    if (c != NULL)
        sb__pool_release(bus->pool, c);
    sb__free(cols);
    return rc;
}

int sb__schema_after_ddl(sb_bus *bus, const char *ddl, int ddl_rc,
                         const sb_error *ddl_err, sb_error *err)
{
    sb_error mine;
    int rc = sb__check_ddl_tables(bus, ddl, ddl_rc == SB_OK ? err : &mine);
    if (ddl_rc == SB_OK || rc == SB_SCHEMA_MISMATCH) {
        if (ddl_rc != SB_OK && err != NULL)
            *err = mine;
        return rc;
    }
    if (err != NULL && ddl_err != NULL)
        *err = *ddl_err;
    return ddl_rc;
}
