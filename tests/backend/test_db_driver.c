/*
 * test_db_driver.c - the driver-neutral database layer against a real
 * backend: value round trips (text outside ASCII at the ODBC driver's
 * UTF-16 boundaries too), placeholders, change counts, transactions,
 * error classification, the statement cache, pipelines and (PostgreSQL)
 * the deferred BEGIN, the statements' refresh and a connection killed from
 * another session.
 *
 * SQLBUS_TEST_BACKEND=sqlite (default) uses a temporary file in /tmp;
 * SQLBUS_TEST_BACKEND=postgresql uses SQLBUS_TEST_PG_URL or exits 77.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db.h"
#include "harness.h"

#include <libpq-fe.h>

typedef struct fixture {
    bool pg;   /* PostgreSQL's SQL (libpq, or psqlODBC with odbc) */
    bool odbc; /* the ODBC driver (odbc.c) */
    char odbc_url[1024];
    const char *url; /* the URL given to sb__db_parse_url */
    char path[64];   /* SQLite file */
    char sqlite_url[96];
    sb_db_config cfg;
    const sb_driver *drv;
    sb_conn *c;
    char table[48];
} fixture;

static fixture fx;

/* ---- helpers ---- */

/* SQL text with every "@T" replaced by the test table's name. */
static const char *sql_t(char *buf, size_t cap, const char *tmpl)
{
    size_t k = 0;
    for (const char *p = tmpl; *p != '\0'; p++) {
        if (p[0] == '@' && p[1] == 'T') {
            size_t n = strlen(fx.table);
            assert_true(k + n < cap);
            memcpy(buf + k, fx.table, n);
            k += n;
            p++;
        } else {
            assert_true(k + 1 < cap);
            buf[k++] = *p;
        }
    }
    buf[k] = '\0';
    return buf;
}

static void exec_ok(sb_conn *c, const char *tmpl)
{
    char sql[1024];
    sb_error err;
    sb_error_clear(&err);
    int rc = sb__exec(c, sql_t(sql, sizeof sql, tmpl), &err);
    if (rc != SB_OK)
        fail_msg("exec %s: rc %d: %s", sql, rc, err.message);
}

static sb_rows *query_ok(sb_conn *c, const char *tmpl, const sb_value *params,
                         size_t n, int64_t *changes)
{
    char sql[1024];
    sb_error err;
    sb_error_clear(&err);
    sb_rows *rows = NULL;
    int rc = sb__query(c, sql_t(sql, sizeof sql, tmpl), params, n, &rows,
                       changes, &err);
    if (rc != SB_OK)
        fail_msg("query %s: rc %d: %s", sql, rc, err.message);
    assert_non_null(rows);
    return rows;
}

static int query_rc(sb_conn *c, const char *tmpl, const sb_value *params,
                    size_t n, sb_error *err)
{
    char sql[1024];
    sb_rows *rows = NULL;
    sb_error_clear(err);
    int rc =
        sb__query(c, sql_t(sql, sizeof sql, tmpl), params, n, &rows, NULL, err);
    if (rc == SB_OK)
        assert_non_null(rows);
    else
        assert_null(rows);
    sb__rows_free(rows);
    return rc;
}

static int64_t count_where(const char *cond_tmpl)
{
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "SELECT count(*) FROM @T WHERE %s", cond_tmpl);
    sb_rows *rows = query_ok(fx.c, tmpl, NULL, 0, NULL);
    assert_int_equal(rows->nrows, 1);
    const sb_value *v = sb__rows_at(rows, 0, 0);
    assert_int_equal(v->type, SB_V_INT);
    int64_t n = v->i;
    sb__rows_free(rows);
    return n;
}

static sb_conn *connect_cfg(const sb_db_config *cfg)
{
    sb_error err;
    sb_error_clear(&err);
    sb_conn *c = NULL;
    int rc = fx.drv->connect(cfg, &c, &err);
    if (rc != SB_OK)
        fail_msg("connect: rc %d: %s", rc, err.message);
    assert_non_null(c);
    assert_ptr_equal(c->drv, fx.drv);
    assert_false(c->in_tx);
    return c;
}

static void assert_text(const sb_rows *rows, size_t r, size_t c,
                        const char *want)
{
    const sb_value *v = sb__rows_at(rows, r, c);
    assert_non_null(v);
    if (v->type != SB_V_TEXT)
        fail_msg("cell (%zu,%zu): type %d, want TEXT \"%s\"", r, c, v->type,
                 want);
    assert_int_equal(v->len, strlen(want));
    assert_string_equal(v->p, want);
    assert_ptr_equal(sb__rows_text(rows, r, c), v->p);
}

static void assert_int_cell(const sb_rows *rows, size_t r, size_t c,
                            int64_t want)
{
    const sb_value *v = sb__rows_at(rows, r, c);
    assert_non_null(v);
    if (v->type != SB_V_INT)
        fail_msg("cell (%zu,%zu): type %d, want INT %lld", r, c, v->type,
                 (long long)want);
    if (v->i != want)
        fail_msg("cell (%zu,%zu): %lld, want %lld", r, c, (long long)v->i,
                 (long long)want);
    assert_true(sb__rows_int(rows, r, c) == want);
}

static void assert_null_cell(const sb_rows *rows, size_t r, size_t c)
{
    const sb_value *v = sb__rows_at(rows, r, c);
    assert_non_null(v);
    assert_int_equal(v->type, SB_V_NULL);
    assert_null(sb__rows_text(rows, r, c));
    assert_true(sb__rows_int(rows, r, c) == 0);
}

/* ---- setup ---- */

static int group_setup(void **state)
{
    (void)state;
    sb_error err;
    sb_error_clear(&err);
    const char *url = fx.url;
    if (!fx.pg) {
        snprintf(fx.path, sizeof fx.path, "/tmp/sqlbus-drvtest-XXXXXX");
        int fd = mkstemp(fx.path);
        if (fd < 0)
            return -1;
        close(fd);
        snprintf(fx.sqlite_url, sizeof fx.sqlite_url, "sqlite:%s", fx.path);
        url = fx.sqlite_url;
    }
    int rc = sb__db_parse_url(url, &fx.cfg, &err);
    if (rc != SB_OK) {
        fprintf(stderr, "parse_url(%s): %s\n", url, err.message);
        return -1;
    }
    fx.drv = sb__driver_for(&fx.cfg);
    if (fx.drv == NULL)
        return -1;
    rc = fx.drv->connect(&fx.cfg, &fx.c, &err);
    if (rc != SB_OK) {
        fprintf(stderr, "connect: %s\n", err.message);
        return -1;
    }
    snprintf(fx.table, sizeof fx.table, "drvtest_%ld", (long)getpid());
    char sql[512];
    if (fx.pg)
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %s (id bigint PRIMARY KEY, i bigint, t text, "
                 "b bytea, ts timestamptz)",
                 fx.table);
    else
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %s (id INTEGER PRIMARY KEY, i INTEGER, t TEXT, "
                 "b BLOB, ts INTEGER)",
                 fx.table);
    rc = sb__exec(fx.c, sql, &err);
    if (rc != SB_OK) {
        fprintf(stderr, "create table: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (fx.c != NULL) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", fx.table);
        sb__rollback(fx.c);
        if (!fx.drv->broken(fx.c))
            (void)sb__exec(fx.c, sql, NULL);
        fx.drv->close(fx.c);
        fx.c = NULL;
    }
    sb__db_config_free(&fx.cfg);
    if (!fx.pg && fx.path[0] != '\0') {
        char p[96];
        unlink(fx.path);
        snprintf(p, sizeof p, "%s-wal", fx.path);
        unlink(p);
        snprintf(p, sizeof p, "%s-shm", fx.path);
        unlink(p);
        snprintf(p, sizeof p, "%s-journal", fx.path);
        unlink(p);
    }
    return 0;
}

/* ---- rows helpers (no database) ---- */

static void test_rows_helpers(void **state)
{
    (void)state;
    sb_rows *rows = NULL;
    assert_int_equal(sb__rows_new(3, 2, &rows), SB_OK);
    assert_int_equal(rows->nrows, 3);
    assert_int_equal(rows->ncols, 2);
    for (size_t r = 0; r < 3; r++)
        for (size_t c = 0; c < 2; c++)
            assert_null_cell(rows, r, c);

    /* Many small cells and one bigger than an arena block: earlier
     * pointers must stay valid as storage grows. */
    char big[10000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    assert_int_equal(sb__rows_set_bytes(rows, 0, 0, SB_V_TEXT, "abc", 3),
                     SB_OK);
    const char *first = sb__rows_text(rows, 0, 0);
    assert_int_equal(sb__rows_set_bytes(rows, 0, 1, SB_V_BLOB, big, sizeof big),
                     SB_OK);
    static const char nul3[3] = {0, 'x', 0};
    assert_int_equal(sb__rows_set_bytes(rows, 1, 0, SB_V_BLOB, nul3, 3), SB_OK);
    assert_int_equal(sb__rows_set_bytes(rows, 1, 1, SB_V_TEXT, NULL, 0), SB_OK);
    for (int i = 0; i < 2000; i++) /* overwrite: fills several blocks */
        assert_int_equal(sb__rows_set_bytes(rows, 2, 0, SB_V_TEXT, big, 7),
                         SB_OK);
    rows->cells[2 * 2 + 1] = sb__v_int(-5);

    assert_ptr_equal(sb__rows_text(rows, 0, 0), first);
    assert_text(rows, 0, 0, "abc");
    const sb_value *v = sb__rows_at(rows, 0, 1);
    assert_int_equal(v->type, SB_V_BLOB);
    assert_int_equal(v->len, sizeof big);
    assert_memory_equal(v->p, big, sizeof big);
    assert_int_equal(((const char *)v->p)[sizeof big], '\0');
    v = sb__rows_at(rows, 1, 0);
    assert_int_equal(v->len, 3);
    assert_memory_equal(v->p, nul3, 3);
    assert_int_equal(((const char *)v->p)[3], '\0');
    assert_text(rows, 1, 1, "");
    assert_text(rows, 2, 0, "abcdefg");
    assert_int_cell(rows, 2, 1, -5);
    assert_null(sb__rows_text(rows, 2, 1));

    assert_int_equal(sb__rows_set_bytes(rows, 3, 0, SB_V_TEXT, "x", 1),
                     SB_INVALID);
    assert_int_equal(sb__rows_set_bytes(rows, 0, 2, SB_V_TEXT, "x", 1),
                     SB_INVALID);
    assert_int_equal(sb__rows_set_bytes(rows, 0, 0, SB_V_INT, "x", 1),
                     SB_INVALID);
    assert_int_equal(sb__rows_set_bytes(rows, 0, 0, SB_V_NULL, NULL, 0), SB_OK);
    assert_null_cell(rows, 0, 0);
    sb__rows_free(rows);
    sb__rows_free(NULL);

    assert_int_equal(sb__rows_new(0, 5, &rows), SB_OK);
    assert_int_equal(rows->nrows, 0);
    sb__rows_free(rows);
    assert_int_equal(sb__rows_new(SIZE_MAX / 2, 4, &rows), SB_NOMEM);
    assert_null(rows);

    sb_value t = sb__v_text("héllo");
    assert_int_equal(t.type, SB_V_TEXT);
    assert_int_equal(t.len, strlen("héllo"));
    assert_int_equal(sb__v_text(NULL).type, SB_V_NULL);

    sb_db_config dc;
    memset(&dc, 0, sizeof dc);
    dc.dialect = SB_DIALECT_SQLITE;
    assert_ptr_equal(sb__driver_for(&dc), sb__driver_sqlite());
    dc.dialect = SB_DIALECT_POSTGRES;
    assert_ptr_equal(sb__driver_for(&dc), sb__driver_postgres());
    dc.odbc = true; /* the SQL is PostgreSQL's, the driver ODBC */
    assert_ptr_equal(sb__driver_for(&dc), sb__driver_odbc());
    dc.odbc = false;
    dc.dialect = 0;
    assert_null(sb__driver_for(&dc));
    assert_string_equal(sb__driver_postgres()->name, "postgresql");
    assert_int_equal(sb__driver_postgres()->dialect, SB_DIALECT_POSTGRES);
}

/* ---- value round trips ---- */

static void test_value_roundtrip(void **state)
{
    (void)state;
    const char *ins =
        fx.pg ? "INSERT INTO @T (id, i, t, b, ts) VALUES ($1, $2, $3, $4, "
                "TIMESTAMPTZ 'epoch' + $5::bigint * INTERVAL '1 microsecond')"
              : "INSERT INTO @T (id, i, t, b, ts) VALUES ($1, $2, $3, $4, $5)";
    static const char utf8[] = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 "
                               "\xf0\x9f\x98\x80";
    static const unsigned char blob[] = {0, 1, 0, 255, 0, 'z', 0};
    /* 2024-01-02 03:04:05.123456Z */
    const int64_t ts2 = INT64_C(1704164645123456);
    int64_t changes = -1;

    sb_value p1[] = {sb__v_int(1), sb__v_null(), sb__v_null(), sb__v_null(),
                     sb__v_null()};
    sb_rows *rows = query_ok(fx.c, ins, p1, 5, &changes);
    assert_int_equal(changes, 1);
    assert_int_equal(rows->nrows, 0);
    sb__rows_free(rows);

    sb_value p2[] = {sb__v_int(2), sb__v_int(INT64_MAX), sb__v_text(utf8),
                     sb__v_blob(blob, sizeof blob), sb__v_int(ts2)};
    sb__rows_free(query_ok(fx.c, ins, p2, 5, NULL));
    sb_value p3[] = {sb__v_int(3), sb__v_int(INT64_MIN), sb__v_text(""),
                     sb__v_blob("", 0), sb__v_int(0)};
    sb__rows_free(query_ok(fx.c, ins, p3, 5, NULL));
    /* rows == NULL: the caller wants no result. */
    sb_value p4[] = {sb__v_int(4), sb__v_int(-1), sb__v_text("x"),
                     sb__v_blob("\xff", 1), sb__v_int(-1)};
    char sql[512];
    sb_error err;
    sb_error_clear(&err);
    changes = -1;
    assert_int_equal(sb__query(fx.c, sql_t(sql, sizeof sql, ins), p4, 5, NULL,
                               &changes, &err),
                     SB_OK);
    assert_int_equal(changes, 1);

    rows = query_ok(fx.c,
                    "SELECT id, i, t, b, ts FROM @T WHERE id <= 4 ORDER BY id",
                    NULL, 0, NULL);
    assert_int_equal(rows->nrows, 4);
    assert_int_equal(rows->ncols, 5);

    assert_int_cell(rows, 0, 0, 1);
    for (size_t c = 1; c < 5; c++)
        assert_null_cell(rows, 0, c);

    assert_int_cell(rows, 1, 0, 2);
    assert_int_cell(rows, 1, 1, INT64_MAX);
    assert_text(rows, 1, 2, utf8);
    const sb_value *v = sb__rows_at(rows, 1, 3);
    assert_int_equal(v->type, SB_V_BLOB);
    assert_int_equal(v->len, sizeof blob);
    assert_memory_equal(v->p, blob, sizeof blob);
    assert_int_cell(rows, 1, 4, ts2);

    assert_int_cell(rows, 2, 1, INT64_MIN);
    assert_text(rows, 2, 2, "");
    v = sb__rows_at(rows, 2, 3);
    assert_int_equal(v->type, SB_V_BLOB); /* empty, not NULL */
    assert_int_equal(v->len, 0);
    assert_non_null(v->p);
    assert_int_cell(rows, 2, 4, 0);

    assert_int_cell(rows, 3, 1, -1);
    v = sb__rows_at(rows, 3, 3);
    assert_int_equal(v->type, SB_V_BLOB);
    assert_int_equal(v->len, 1);
    assert_int_equal(((const unsigned char *)v->p)[0], 0xff);
    assert_int_cell(rows, 3, 4, -1); /* before the epoch */
    sb__rows_free(rows);

    if (fx.pg) {
        /* The stored timestamp is the instant meant, not just a value that
         * survives our own encode/decode. */
        rows = query_ok(fx.c,
                        "SELECT ts = '2024-01-02 03:04:05.123456+00', "
                        "ts = '2024-01-02 04:04:05.123456+01' FROM @T "
                        "WHERE id = 2",
                        NULL, 0, NULL);
        assert_int_cell(rows, 0, 0, 1);
        assert_int_cell(rows, 0, 1, 1);
        sb__rows_free(rows);
    }
    exec_ok(fx.c, "DELETE FROM @T WHERE id <= 4");
}

/* Text outside ASCII at every length the ODBC driver treats apart (UTF-16
 * both ways: docs/backends.md): empty, one unit, past nvarchar's 4,000
 * units (a LONG type) and across its 2,047-unit read pieces, with a
 * surrogate pair cut by a piece's end; a parameter used twice. */
static void test_text_utf16(void **state)
{
    (void)state;
    static const char mix[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    size_t cap = 20000, k = 2046;
    char *big = malloc(cap);
    assert_non_null(big);
    memset(big, 'a', k);
    memcpy(big + k, "\xf0\x9f\x98\x80", 4); /* its high half ends piece 1 */
    k += 4;
    for (int i = 0; i < 1000; i++) { /* 4,000 units, 9,000 bytes more */
        memcpy(big + k, mix, sizeof mix - 1);
        k += sizeof mix - 1;
    }
    assert_true(k < cap);
    big[k] = '\0';
    const char *texts[] = {"", "\xc3\xa9", mix, big};
    const char *ins = "INSERT INTO @T (id, t) VALUES ($1, $2)";
    for (size_t i = 0; i < 4; i++) {
        sb_value p[] = {sb__v_int(300 + (int64_t)i), sb__v_text(texts[i])};
        int64_t changes = -1;
        sb__rows_free(query_ok(fx.c, ins, p, 2, &changes));
        assert_int_equal(changes, 1);
    }
    sb_rows *rows = query_ok(
        fx.c, "SELECT t FROM @T WHERE id >= 300 AND id < 304 ORDER BY id", NULL,
        0, NULL);
    assert_int_equal(rows->nrows, 4);
    for (size_t i = 0; i < 4; i++)
        assert_text(rows, i, 0, texts[i]);
    sb__rows_free(rows);
    /* Compared on the server: the bytes stored are the text sent. */
    sb_value q[] = {sb__v_text(big)};
    rows =
        query_ok(fx.c, "SELECT count(*), $1 FROM @T WHERE t = $1", q, 1, NULL);
    assert_int_cell(rows, 0, 0, 1);
    assert_text(rows, 0, 1, big);
    sb__rows_free(rows);
    exec_ok(fx.c, "DELETE FROM @T WHERE id >= 300 AND id < 304");
    free(big);
}

/* The ODBC driver converts text to UTF-16 before anything is sent: text
 * that is not UTF-8 fails the statement naming its parameter and leaves
 * an open transaction usable. */
static void test_odbc_invalid_utf8(void **state)
{
    (void)state;
    if (!fx.odbc)
        skip();
    sb_error err;
    sb_error_clear(&err);
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    sb__rows_free(query_ok(fx.c, "INSERT INTO @T (id, t) VALUES (310, 'ok')",
                           NULL, 0, NULL));
    sb_value p[] = {sb__v_int(311), sb__v_text("bad \xc3\x28 byte")};
    assert_int_equal(
        query_rc(fx.c, "INSERT INTO @T (id, t) VALUES ($1, $2)", p, 2, &err),
        SB_INVALID);
    assert_non_null(strstr(err.message, "$2"));
    assert_non_null(strstr(err.message, "UTF-8"));
    p[1] = sb__v_text("\xed\xa0\x80"); /* a surrogate */
    assert_int_equal(query_rc(fx.c, "SELECT $2, $1", p, 2, &err), SB_INVALID);
    assert_non_null(strstr(err.message, "$2"));
    assert_int_equal(sb__commit(fx.c, &err), SB_OK);
    assert_int_equal(count_where("id = 310"), 1);
    assert_int_equal(count_where("id = 311"), 0);
    exec_ok(fx.c, "DELETE FROM @T WHERE id = 310");
}

static void test_pg_types(void **state)
{
    (void)state;
    if (!fx.pg)
        skip();
    sb_rows *rows = query_ok(
        fx.c,
        "SELECT true, false, (-32768)::int2, 2147483647::int4, "
        "(-2147483648)::int4, 4294967295::oid, "
        "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid, "
        "'{\"a\": [1, 2]}'::jsonb, '{\"b\":1}'::json, 'v'::varchar(5), "
        "'ab'::char(4), 'nm'::name, '2000-01-01 00:00:00'::timestamp, "
        "'1970-01-01 00:00:00+00'::timestamptz, 'infinity'::timestamptz, "
        "'-infinity'::timestamptz, '\\x00ff'::bytea, NULL::uuid, "
        "'1969-07-20 20:17:40.5+00'::timestamptz",
        NULL, 0, NULL);
    assert_int_equal(rows->nrows, 1);
    assert_int_equal(rows->ncols, 19);
    assert_int_cell(rows, 0, 0, 1);
    assert_int_cell(rows, 0, 1, 0);
    assert_int_cell(rows, 0, 2, -32768);
    assert_int_cell(rows, 0, 3, 2147483647);
    assert_int_cell(rows, 0, 4, -2147483647 - 1);
    assert_int_cell(rows, 0, 5, INT64_C(4294967295));
    assert_text(rows, 0, 6, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    assert_text(rows, 0, 7, "{\"a\": [1, 2]}");
    assert_text(rows, 0, 8, "{\"b\":1}");
    assert_text(rows, 0, 9, "v");
    assert_text(rows, 0, 10, "ab  ");
    assert_text(rows, 0, 11, "nm");
    assert_int_cell(rows, 0, 12, INT64_C(946684800000000));
    assert_int_cell(rows, 0, 13, 0);
    if (!fx.odbc) { /* psqlODBC gives 9999-12-31 for infinity */
        assert_int_cell(rows, 0, 14, INT64_MAX);
        assert_int_cell(rows, 0, 15, INT64_MIN);
    }
    const sb_value *v = sb__rows_at(rows, 0, 16);
    assert_int_equal(v->type, SB_V_BLOB);
    assert_int_equal(v->len, 2);
    assert_memory_equal(v->p, "\x00\xff", 2);
    assert_null_cell(rows, 0, 17);
    assert_int_cell(rows, 0, 18, INT64_C(-14182939500000));
    sb__rows_free(rows);

    /* No silent truncation: float and numeric need a cast in SQL. */
    sb_error err;
    assert_int_equal(
        query_rc(fx.c, "SELECT 1, 1.5::float8 AS f", NULL, 0, &err),
        SB_BACKEND);
    assert_non_null(strstr(err.message, fx.odbc ? "SQL type" : "701"));
    assert_non_null(strstr(err.message, "\"f\""));
    assert_int_equal(query_rc(fx.c, "SELECT 2.5::numeric AS n", NULL, 0, &err),
                     SB_BACKEND);
    assert_non_null(strstr(err.message, fx.odbc ? "SQL type" : "1700"));
    /* The connection is fine afterwards. */
    rows = query_ok(fx.c, "SELECT 2.5::numeric::text", NULL, 0, NULL);
    assert_text(rows, 0, 0, "2.5");
    sb__rows_free(rows);
}

static void test_placeholders(void **state)
{
    (void)state;
    sb_value p[] = {sb__v_text("a"), sb__v_text("b")};
    sb_rows *rows = query_ok(fx.c, "SELECT $2, $1, $2", p, 2, NULL);
    assert_int_equal(rows->nrows, 1);
    assert_int_equal(rows->ncols, 3);
    assert_text(rows, 0, 0, "b");
    assert_text(rows, 0, 1, "a");
    assert_text(rows, 0, 2, "b");
    sb__rows_free(rows);

    /* The same text again (cached) with other values. */
    sb_value q[] = {sb__v_text("c"), sb__v_null()};
    rows = query_ok(fx.c, "SELECT $2, $1, $2", q, 2, NULL);
    assert_null_cell(rows, 0, 0);
    assert_text(rows, 0, 1, "c");
    assert_null_cell(rows, 0, 2);
    sb__rows_free(rows);
}

static void test_placeholders_dense(void **state)
{
    (void)state;
    sb_value r[10];
    for (int i = 0; i < 10; i++)
        r[i] = sb__v_int(10 + i);
    r[1] = sb__v_text("two");
    /* $10 after $1 (no prefix mix-up), typed by the target columns. */
    const char *sql = "INSERT INTO @T (id, i, t) VALUES ($10, CAST($1 AS "
                      "BIGINT) + $3 + $4 + $5 + $6 + $7 + $8 + $9, $2) "
                      "RETURNING id, i, t";
    int64_t changes = -1;
    sb_rows *rows = query_ok(fx.c, sql, r, 10, &changes);
    assert_int_equal(changes, 1);
    assert_int_equal(rows->nrows, 1);
    assert_int_cell(rows, 0, 0, 19);
    assert_int_cell(rows, 0, 1, 10 + 12 + 13 + 14 + 15 + 16 + 17 + 18);
    assert_text(rows, 0, 2, "two");
    sb__rows_free(rows);
    exec_ok(fx.c, "DELETE FROM @T WHERE id = 19");
}

static void test_changes(void **state)
{
    (void)state;
    const char *ins = "INSERT INTO @T (id, i) VALUES ($1, $2)";
    int64_t changes = -1;
    for (int k = 0; k < 3; k++) {
        sb_value p[] = {sb__v_int(100 + k), sb__v_int(k)};
        sb__rows_free(query_ok(fx.c, ins, p, 2, &changes));
        assert_int_equal(changes, 1);
    }
    sb__rows_free(query_ok(fx.c,
                           "INSERT INTO @T (id, i) VALUES (103, 3), (104, 4)",
                           NULL, 0, &changes));
    assert_int_equal(changes, 2);
    sb_value lim = sb__v_int(100);
    sb__rows_free(query_ok(fx.c, "UPDATE @T SET i = i + 1 WHERE id >= $1", &lim,
                           1, &changes));
    assert_int_equal(changes, 5);
    sb__rows_free(
        query_ok(fx.c, "UPDATE @T SET i = 0 WHERE id = -7", NULL, 0, &changes));
    assert_int_equal(changes, 0);
    sb__rows_free(
        query_ok(fx.c, "DELETE FROM @T WHERE id = 100", NULL, 0, &changes));
    assert_int_equal(changes, 1);
    sb__rows_free(
        query_ok(fx.c, "DELETE FROM @T WHERE id >= $1", &lim, 1, &changes));
    assert_int_equal(changes, 4);
    if (fx.pg) {
        /* A SELECT inserts, updates and deletes nothing. */
        sb__rows_free(
            query_ok(fx.c, "SELECT 1 UNION ALL SELECT 2", NULL, 0, &changes));
        assert_int_equal(changes, 0);
    }
}

static void test_transactions(void **state)
{
    (void)state;
    sb_error err;
    sb_error_clear(&err);
    const char *ins = "INSERT INTO @T (id) VALUES ($1)";

    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    assert_true(fx.c->in_tx);
    sb_value p = sb__v_int(200);
    sb__rows_free(query_ok(fx.c, ins, &p, 1, NULL));
    assert_int_equal(count_where("id = 200"), 1);
    sb__rollback(fx.c);
    assert_false(fx.c->in_tx);
    assert_int_equal(count_where("id = 200"), 0);

    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    p = sb__v_int(201);
    sb__rows_free(query_ok(fx.c, ins, &p, 1, NULL));
    assert_int_equal(sb__commit(fx.c, &err), SB_OK);
    assert_false(fx.c->in_tx);
    assert_int_equal(count_where("id = 201"), 1);

    /* Visible to another connection after commit only. */
    sb_conn *other = connect_cfg(&fx.cfg);
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    p = sb__v_int(202);
    sb__rows_free(query_ok(fx.c, ins, &p, 1, NULL));
    if (fx.pg) { /* readers never block on PostgreSQL */
        sb_rows *rows = query_ok(
            other, "SELECT count(*) FROM @T WHERE id = 202", NULL, 0, NULL);
        assert_int_cell(rows, 0, 0, 0);
        sb__rows_free(rows);
    }
    assert_int_equal(sb__commit(fx.c, &err), SB_OK);
    sb_rows *rows = query_ok(other, "SELECT count(*) FROM @T WHERE id = 202",
                             NULL, 0, NULL);
    assert_int_cell(rows, 0, 0, 1);
    sb__rows_free(rows);
    fx.drv->close(other);

    if (fx.pg) {
        /* An error aborts a PostgreSQL transaction: later statements fail
         * and COMMIT reports the rollback instead of succeeding. */
        assert_int_equal(sb__begin(fx.c, &err), SB_OK);
        p = sb__v_int(203);
        sb__rows_free(query_ok(fx.c, ins, &p, 1, NULL));
        p = sb__v_int(201);
        assert_int_equal(query_rc(fx.c, ins, &p, 1, &err), SB_CONFLICT);
        assert_int_equal(query_rc(fx.c, "SELECT 1", NULL, 0, &err), SB_BACKEND);
        assert_string_equal(err.sqlstate, "25P02");
        sb_error_clear(&err);
        assert_int_not_equal(sb__commit(fx.c, &err), SB_OK);
        assert_int_equal(err.code, SB_BACKEND);
        assert_true(err.message[0] != '\0');
        assert_false(fx.c->in_tx);
        assert_false(fx.drv->broken(fx.c));
        assert_int_equal(count_where("id = 203"), 0);
    }
    exec_ok(fx.c, "DELETE FROM @T WHERE id >= 200 AND id < 300");
}

/* ---- pipelines (sb__pipeline) ---- */

/* The calls run in order with their results, the commit with them; the
 * same on every backend (one round trip on PostgreSQL). */
static void test_pipeline(void **state)
{
    (void)state;
    char ins[128], cnt[128], upd[128];
    sql_t(ins, sizeof ins, "INSERT INTO @T (id, i) VALUES ($1, $2)");
    sql_t(cnt, sizeof cnt, "SELECT count(*) FROM @T WHERE id >= $1");
    sql_t(upd, sizeof upd, "UPDATE @T SET i = i + 1 WHERE id >= $1");
    sb_error err;
    sb_error_clear(&err);
    sb_value a[] = {sb__v_int(500), sb__v_int(1)};
    sb_value b[] = {sb__v_int(501), sb__v_int(2)};
    sb_value from = sb__v_int(500);
    sb_rows *rows = NULL;
    int64_t changes = -1, inserted = -1;
    sb_call calls[] = {{ins, a, 2, NULL, &inserted},
                       {ins, b, 2, NULL, NULL},
                       {cnt, &from, 1, &rows, NULL},
                       {upd, &from, 1, NULL, &changes}};
    size_t failed = 99;

    /* Only inside a transaction. */
    assert_int_equal(sb__pipeline(fx.c, calls, 4, 1, &failed, &err), SB_MISUSE);

    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    assert_int_equal(sb__pipeline(fx.c, calls, 4, 1, &failed, &err), SB_OK);
    assert_int_equal(failed, 4);
    assert_false(fx.c->in_tx); /* committed */
    assert_int_equal(inserted, 1);
    assert_int_cell(rows, 0, 0, 2); /* sees the inserts before it */
    sb__rows_free(rows);
    assert_int_equal(changes, 2);
    sb_conn *other = connect_cfg(&fx.cfg);
    sb_rows *seen = query_ok(other,
                             "SELECT count(*) FROM @T WHERE id >= 500 AND "
                             "i IN (2, 3)", /* 1 + 1 and 2 + 1 */
                             NULL, 0, NULL);
    assert_int_cell(seen, 0, 0, 2);
    sb__rows_free(seen);

    /* A failure stops it: the calls before have run, none after; the
     * transaction is left for the caller to roll back, and nothing of it
     * is committed. */
    sb_value c[] = {sb__v_int(502), sb__v_int(3)};
    sb_value d[] = {sb__v_int(503), sb__v_int(4)};
    changes = -1;
    sb_call bad[] = {{ins, c, 2, NULL, NULL},
                     {ins, a, 2, NULL, NULL}, /* 500 exists */
                     {ins, d, 2, NULL, NULL},
                     {upd, &from, 1, NULL, &changes}};
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    assert_int_equal(sb__pipeline(fx.c, bad, 4, 1, &failed, &err), SB_CONFLICT);
    assert_int_equal(failed, 1);
    assert_int_equal(changes, 0);
    assert_true(fx.c->in_tx);
    sb__rollback(fx.c);
    assert_false(fx.c->in_tx);
    assert_false(fx.drv->broken(fx.c));
    assert_int_equal(count_where("id IN (502, 503)"), 0);

    /* Without the commit, the transaction goes on; more calls than one
     * pipeline holds run in order; an empty pipeline commits too. */
    enum { MANY = 150 };
    sb_value many[MANY][2];
    sb_call mc[MANY];
    for (int k = 0; k < MANY; k++) {
        many[k][0] = sb__v_int(600 + k);
        many[k][1] = sb__v_int(k);
        mc[k] = (sb_call){ins, many[k], 2, NULL, NULL};
    }
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    assert_int_equal(sb__pipeline(fx.c, mc, MANY, 0, &failed, &err), SB_OK);
    assert_int_equal(failed, MANY);
    assert_true(fx.c->in_tx);
    assert_int_equal(count_where("id >= 600 AND id < 750"), MANY);
    assert_int_equal(sb__pipeline(fx.c, NULL, 0, 1, &failed, &err), SB_OK);
    assert_false(fx.c->in_tx);
    seen = query_ok(other, "SELECT count(*) FROM @T WHERE id >= 600", NULL, 0,
                    NULL);
    assert_int_cell(seen, 0, 0, MANY);
    sb__rows_free(seen);
    fx.drv->close(other);
    exec_ok(fx.c, "DELETE FROM @T WHERE id >= 500 AND id < 800");
}

/* PostgreSQL sends BEGIN with the transaction's first statement: a
 * transaction without one sends nothing, and a caller's own statements
 * on the native handle still run inside it. */
static void test_pg_deferred_begin(void **state)
{
    (void)state;
    if (!fx.pg || fx.odbc)
        skip();
    sb_error err;
    sb_error_clear(&err);
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    assert_int_equal(sb__begin(fx.c, &err), SB_MISUSE);
    assert_int_equal(sb__commit(fx.c, &err), SB_OK);
    assert_false(fx.c->in_tx);
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    sb__rollback(fx.c);
    assert_false(fx.c->in_tx);

    char sql[128];
    sql_t(sql, sizeof sql, "INSERT INTO @T (id) VALUES (801)");
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    PGconn *pg = fx.drv->native(fx.c);
    PGresult *res = PQexec(pg, sql);
    assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    sb__rollback(fx.c); /* the native statement goes with it */
    assert_int_equal(count_where("id = 801"), 0);
}

/* A statement is prepared again once a second old (then at doubling
 * ages), so its generic plan is remade for the table's size: the old
 * one is deallocated, not leaked. */
static void test_pg_statement_refresh(void **state)
{
    (void)state;
    if (!fx.pg || fx.odbc)
        skip();
    const char *probe = "SELECT 'refresh-probe', $1::int8";
    const char *names = "SELECT name FROM pg_prepared_statements "
                        "WHERE statement = $1";
    sb_value text = sb__v_text(probe);
    sb_rows *rows = query_ok(fx.c, probe, (sb_value[]){sb__v_int(1)}, 1, NULL);
    sb__rows_free(rows);
    rows = query_ok(fx.c, names, &text, 1, NULL);
    assert_int_equal(rows->nrows, 1);
    char first[32];
    snprintf(first, sizeof first, "%s", sb__rows_text(rows, 0, 0));
    sb__rows_free(rows);
    usleep(1100 * 1000);
    rows = query_ok(fx.c, probe, (sb_value[]){sb__v_int(2)}, 1, NULL);
    assert_int_cell(rows, 0, 1, 2);
    sb__rows_free(rows);
    rows = query_ok(fx.c, names, &text, 1, NULL);
    assert_int_equal(rows->nrows, 1);
    assert_string_not_equal(sb__rows_text(rows, 0, 0), first);
    sb__rows_free(rows);
}

/* ---- errors ---- */

static void test_unique_violation(void **state)
{
    (void)state;
    sb_error err;
    sb_value p[] = {sb__v_int(300), sb__v_text("first")};
    const char *ins = "INSERT INTO @T (id, t) VALUES ($1, $2)";
    sb__rows_free(query_ok(fx.c, ins, p, 2, NULL));
    p[1] = sb__v_text("second");
    assert_int_equal(query_rc(fx.c, ins, p, 2, &err), SB_CONFLICT);
    assert_int_equal(err.code, SB_CONFLICT);
    assert_true(err.message[0] != '\0');
    if (fx.pg) {
        assert_string_equal(err.sqlstate, "23505");
        assert_non_null(strstr(err.message, "300")); /* the detail */
        if (!fx.odbc) /* psqlODBC numbers its own errors */
            assert_int_equal(err.native, 0);
    }
    assert_false(fx.drv->broken(fx.c));
    assert_int_equal(count_where("id = 300 AND t = 'first'"), 1);
    exec_ok(fx.c, "DELETE FROM @T WHERE id = 300");
}

static void test_undefined_table(void **state)
{
    (void)state;
    sb_error err;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM nosuch_%ld", (long)getpid());
    /* SQLite reports a missing table as a plain SQLITE_ERROR; only its
     * message tells, and we never classify by message text. The transport
     * finds missing tables through the catalog instead (schema.c). */
    int want = fx.pg ? SB_SCHEMA_MISSING : SB_BACKEND;
    assert_int_equal(query_rc(fx.c, sql, NULL, 0, &err), want);
    assert_int_equal(err.code, want);
    assert_true(err.message[0] != '\0');
    if (fx.pg)
        assert_string_equal(err.sqlstate, "42P01");
    if (fx.pg) {
        assert_int_equal(
            query_rc(fx.c, "SELECT nosuch_col FROM @T", NULL, 0, &err),
            SB_SCHEMA_MISMATCH);
        assert_string_equal(err.sqlstate, "42703");
    }
}

static void test_syntax_error(void **state)
{
    (void)state;
    sb_error err;
    assert_int_equal(query_rc(fx.c, "SELEC 1", NULL, 0, &err), SB_BACKEND);
    assert_int_equal(err.code, SB_BACKEND);
    assert_true(strlen(err.message) > 5);
    if (fx.pg)
        assert_string_equal(err.sqlstate, "42601");
    sb_error_clear(&err);
    assert_int_equal(sb__exec(fx.c, "SELECT 1; SELEC 2", &err), SB_BACKEND);
    assert_true(err.message[0] != '\0');
    assert_false(fx.drv->broken(fx.c));
    sb_rows *rows = query_ok(fx.c, "SELECT 7", NULL, 0, NULL);
    assert_int_cell(rows, 0, 0, 7);
    sb__rows_free(rows);
}

static void test_exec_multi(void **state)
{
    (void)state;
    exec_ok(fx.c, "INSERT INTO @T (id) VALUES (400); "
                  "INSERT INTO @T (id) VALUES (401);");
    assert_int_equal(count_where("id IN (400, 401)"), 2);
    exec_ok(fx.c, "DELETE FROM @T WHERE id IN (400, 401)");
    assert_int_equal(count_where("id IN (400, 401)"), 0);
    assert_non_null(fx.drv->native(fx.c));
}

/* ---- the statement cache ---- */

static int64_t prepared_count(void)
{
    sb_rows *rows = query_ok(
        fx.c, "SELECT count(*) FROM pg_prepared_statements", NULL, 0, NULL);
    int64_t n = sb__rows_int(rows, 0, 0);
    sb__rows_free(rows);
    return n;
}

static void test_statement_cache(void **state)
{
    (void)state;
    /* More distinct statements than any cache holds, then the first ones
     * again: eviction must neither fail nor return stale results. */
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 150; k++) {
            char sql[96];
            snprintf(sql, sizeof sql, "SELECT %d, $1", k);
            sb_value p = sb__v_text("v");
            sb_rows *rows = query_ok(fx.c, sql, &p, 1, NULL);
            assert_int_cell(rows, 0, 0, k);
            assert_text(rows, 0, 1, "v");
            sb__rows_free(rows);
        }
    }
    if (!fx.pg)
        return;
    int64_t n = prepared_count();
    if (n < 1 || n > 64)
        fail_msg("%lld server-side prepared statements", (long long)n);

    /* A full cache and an aborted transaction: a new statement fails with
     * the transaction's error without evicting anything. */
    sb_error err;
    sb_error_clear(&err);
    assert_int_equal(sb__begin(fx.c, &err), SB_OK);
    /* (exec: abort without touching the statement cache) */
    assert_int_equal(sb__exec(fx.c, "SELEC 1", &err), SB_BACKEND);
    for (int k = 0; k < 3; k++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT 'fresh statement %d'", k);
        assert_int_equal(query_rc(fx.c, sql, NULL, 0, &err), SB_BACKEND);
        assert_string_equal(err.sqlstate, "25P02");
    }
    sb__rollback(fx.c);
    sb_rows *rows = query_ok(fx.c, "SELECT 'fresh statement 0'", NULL, 0, NULL);
    assert_text(rows, 0, 0, "fresh statement 0");
    sb__rows_free(rows);
    /* No statement leaked on the server by a failed eviction. */
    n = prepared_count();
    if (n < 1 || n > 64)
        fail_msg("%lld server-side prepared statements", (long long)n);

    /* Statements deallocated behind the driver's back are prepared again
     * (outside a transaction). */
    exec_ok(fx.c, "DEALLOCATE ALL");
    sb_value p = sb__v_text("again");
    rows = query_ok(fx.c, "SELECT 149, $1", &p, 1, NULL);
    assert_int_cell(rows, 0, 0, 149);
    assert_text(rows, 0, 1, "again");
    sb__rows_free(rows);

    /* The same text with another parameter count is a caller error, not
     * a (class 08) protocol violation. */
    sb_value two[] = {sb__v_text("a"), sb__v_text("b")};
    assert_int_equal(query_rc(fx.c, "SELECT 149, $1", two, 2, &err),
                     SB_INVALID);
    assert_false(fx.drv->broken(fx.c));
}

/* ---- PostgreSQL session behaviour ---- */

typedef struct captured {
    char text[4096];
    int n;
} captured;

static void capture_log(int level, const char *component, const char *message,
                        void *user)
{
    captured *cap = user;
    (void)component;
    if (level == SB_LOG_DEBUG &&
        strlen(cap->text) + strlen(message) + 2 < sizeof cap->text) {
        strncat(cap->text, message, sizeof cap->text - strlen(cap->text) - 1);
        strncat(cap->text, "\n", sizeof cap->text - strlen(cap->text) - 1);
    }
    cap->n++;
}

static void test_pg_notices_logged(void **state)
{
    (void)state;
    if (!fx.pg || fx.odbc) /* libpq's notice processor and session names */
        skip();
    captured cap;
    memset(&cap, 0, sizeof cap);
    sb_db_config cfg = fx.cfg;
    cfg.log.fn = capture_log;
    cfg.log.user = &cap;
    cfg.log.level = SB_LOG_DEBUG;
    sb_conn *c = connect_cfg(&cfg);
    exec_ok(c, "DO $$BEGIN RAISE NOTICE 'sqlbus-notice-%', 42; END$$");
    assert_non_null(strstr(cap.text, "sqlbus-notice-42"));
    sb_rows *rows = query_ok(c,
                             "SELECT current_setting('application_name'), "
                             "current_setting('client_encoding')",
                             NULL, 0, NULL);
    assert_text(rows, 0, 0, "sqlbus");
    assert_text(rows, 0, 1, "UTF8");
    sb__rows_free(rows);
    fx.drv->close(c);
}

/* SQLite checkpoints its WAL after SB_WAL_AUTOCHECKPOINT_DEFAULT pages
 * (db.h), or what the URL's wal_autocheckpoint says; a value out of its
 * range is refused naming the option, as the other URL options are. */
static void test_sqlite_wal_autocheckpoint(void **state)
{
    (void)state;
    if (fx.pg)
        skip();
    sb_rows *rows = query_ok(fx.c, "PRAGMA wal_autocheckpoint", NULL, 0, NULL);
    assert_int_cell(rows, 0, 0, SB_WAL_AUTOCHECKPOINT_DEFAULT);
    sb__rows_free(rows);
    char url[160];
    snprintf(url, sizeof url, "%s?wal_autocheckpoint=2000", fx.sqlite_url);
    sb_db_config cfg;
    sb_error err;
    assert_int_equal(sb__db_parse_url(url, &cfg, &err), SB_OK);
    sb_conn *c = connect_cfg(&cfg);
    rows = query_ok(c, "PRAGMA wal_autocheckpoint", NULL, 0, NULL);
    assert_int_cell(rows, 0, 0, 2000);
    sb__rows_free(rows);
    fx.drv->close(c);
    sb__db_config_free(&cfg);
    static const char *const bad[] = {"99", "1000001", "", "12a",
                                      "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(url, sizeof url, "%s?wal_autocheckpoint=%s", fx.sqlite_url,
                 bad[i]);
        assert_int_equal(sb__db_parse_url(url, &cfg, &err), SB_INVALID);
        assert_string_equal(err.field, "wal_autocheckpoint");
        assert_non_null(strstr(err.message, "100 to 1000000"));
        sb__db_config_free(&cfg);
    }
}

/* issue 20.7: a SQLite file that cannot be opened is a permanent error
 * (SB_BACKEND: exit 1), not SB_UNAVAILABLE, which callers retry: a
 * missing directory and a directory stay so. The message names the path
 * and the system's reason; the SQLite code is kept. */
static void test_sqlite_open_failures(void **state)
{
    (void)state;
    if (fx.pg)
        skip();
    char dir[sizeof fx.path + 8];
    snprintf(dir, sizeof dir, "%s.dir", fx.path);
    assert_int_equal(mkdir(dir, 0700), 0);
    char missing[sizeof dir + 32], is_dir[sizeof dir + 16];
    snprintf(missing, sizeof missing, "sqlite:%s/no/such/x.db", dir);
    snprintf(is_dir, sizeof is_dir, "sqlite:%s", dir);
    const struct {
        const char *url, *why;
    } cases[] = {{missing, "no such file or directory"},
                 {is_dir, "it is a directory"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sb_db_config cfg;
        sb_error err;
        sb_error_clear(&err);
        assert_int_equal(sb__db_parse_url(cases[i].url, &cfg, &err), SB_OK);
        sb_conn *c = fx.c; /* must be reset to NULL */
        int rc = fx.drv->connect(&cfg, &c, &err);
        assert_int_equal(rc, SB_BACKEND);
        assert_false(sb_is_transient(rc));
        assert_null(c);
        assert_int_equal(err.code, SB_BACKEND);
        assert_int_equal(err.native, 14); /* SQLITE_CANTOPEN */
        assert_string_equal(err.field, "url");
        assert_non_null(strstr(err.message, cases[i].url + 7));
        if (strstr(err.message, cases[i].why) == NULL)
            fail_msg("no \"%s\" in: %s", cases[i].why, err.message);
        sb__db_config_free(&cfg);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* issue 20.7: a URL libpq cannot use is SB_INVALID naming "url", found
 * before any connection: a port out of range, an unknown option, a URI
 * cut short, an option value libpq refuses. */
static void test_pg_connect_invalid_url(void **state)
{
    (void)state;
    if (!fx.pg || fx.odbc)
        skip();
    static const struct {
        const char *url, *says;
    } cases[] = {
        {"postgresql://127.0.0.1:99999/x", "port must be 1 to 65535"},
        {"postgresql://127.0.0.1:0/x", "port must be 1 to 65535"},
        {"host=127.0.0.1 port=5432x", "port must be 1 to 65535"},
        {"postgresql://a:5432,b:70000/x", "(got \"70000\")"},
        {"host=127.0.0.1 bogus=1", "invalid connection option \"bogus\""},
        {"postgresql://[::1", "IPv6"},
        {"host=127.0.0.1 sslmode=bogus", "sslmode"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sb_db_config cfg;
        sb_error err;
        sb_error_clear(&err);
        assert_int_equal(sb__db_parse_url(cases[i].url, &cfg, &err), SB_OK);
        sb_conn *c = fx.c;
        int rc = fx.drv->connect(&cfg, &c, &err);
        if (rc != SB_INVALID || strstr(err.message, cases[i].says) == NULL)
            fail_msg("%s: %s (%s)", cases[i].url, sb_result_name(rc),
                     err.message);
        assert_null(c);
        assert_string_equal(err.field, "url");
        assert_null(strchr(err.message, '\n'));
        sb__db_config_free(&cfg);
    }
}

/* issue 20.7: when the server answers and refuses, its SQLSTATE decides
 * and is kept: an unknown database (3D000) or role (28000) is
 * permanent, never SB_UNAVAILABLE; the message is libpq's, without the
 * SQLSTATE and LOCATION lines of the verbose form it is read from. */
static void test_pg_connect_refused_by_server(void **state)
{
    (void)state;
    if (!fx.pg || fx.odbc)
        skip();
    char base[512], url[600];
    snprintf(base, sizeof base, "%s", fx.url);
    char *slash = strrchr(base, '/');
    assert_non_null(slash);
    *slash = '\0';
    snprintf(url, sizeof url, "%s/sqlbus_no_such_db", base);
    sb_db_config cfg;
    sb_error err;
    sb_error_clear(&err);
    assert_int_equal(sb__db_parse_url(url, &cfg, &err), SB_OK);
    sb_conn *c = fx.c;
    assert_int_equal(fx.drv->connect(&cfg, &c, &err), SB_BACKEND);
    assert_null(c);
    assert_string_equal(err.sqlstate, "3D000");
    assert_non_null(
        strstr(err.message, "\"sqlbus_no_such_db\" does not exist"));
    assert_null(strstr(err.message, "3D000"));
    assert_null(strstr(err.message, "LOCATION"));
    sb__db_config_free(&cfg);

    char role[600];
    const char *at = strchr(fx.url, '@');
    const char *scheme = strstr(fx.url, "://");
    if (at == NULL || scheme == NULL)
        skip();
    snprintf(role, sizeof role, "%.*ssqlbus_no_such_role%s",
             (int)(scheme + 3 - fx.url), fx.url, at);
    sb_error_clear(&err);
    assert_int_equal(sb__db_parse_url(role, &cfg, &err), SB_OK);
    assert_int_equal(fx.drv->connect(&cfg, &c, &err), SB_BACKEND);
    assert_string_equal(err.sqlstate, "28000");
    assert_non_null(strstr(err.message, "\"sqlbus_no_such_role\""));
    sb__db_config_free(&cfg);
}

/* issue 20.7: through ODBC, a driver that is not installed (unixODBC
 * reports it as a warning, 01000) or a data source that does not exist
 * (IM002) is the URL at fault: SB_INVALID naming "url". */
static void test_odbc_connect_no_driver(void **state)
{
    (void)state;
    if (!fx.odbc)
        skip();
    static const char *const urls[] = {
        "odbc+postgresql:Driver={sqlbus no such driver};Server=127.0.0.1",
        "odbc+postgresql:DSN=sqlbus_no_such_dsn"};
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
        sb_db_config cfg;
        sb_error err;
        sb_error_clear(&err);
        assert_int_equal(sb__db_parse_url(urls[i], &cfg, &err), SB_OK);
        sb_conn *c = fx.c;
        int rc = fx.drv->connect(&cfg, &c, &err);
        if (rc != SB_INVALID)
            fail_msg("%s: %s (%s)", urls[i], sb_result_name(rc), err.message);
        assert_null(c);
        assert_string_equal(err.field, "url");
        sb__db_config_free(&cfg);
    }
}

/* A connect leaves the process's locale alone: psqlODBC derives its
 * client encoding with setlocale(LC_CTYPE, "") unless told the encoding,
 * which changes the locale under every thread and, with two connects at
 * once, frees the name the other is reading. */
static void test_odbc_connect_keeps_locale(void **state)
{
    (void)state;
    if (!fx.odbc)
        skip();
    const char *before = setlocale(LC_CTYPE, NULL);
    assert_string_equal(before, "C");
    assert_int_equal(setenv("LC_ALL", "C.UTF-8", 1), 0);
    sb_conn *c = NULL;
    sb_error err;
    sb_error_clear(&err);
    int rc = fx.drv->connect(&fx.cfg, &c, &err);
    char after[64];
    snprintf(after, sizeof after, "%s", setlocale(LC_CTYPE, NULL));
    setlocale(LC_CTYPE, "C");
    unsetenv("LC_ALL");
    if (rc != SB_OK)
        fail_msg("connect: %s", err.message);
    fx.drv->close(c);
    assert_string_equal(after, "C");
}

static void test_pg_search_path(void **state)
{
    (void)state;
    if (!fx.pg)
        skip();
    char schema[48];
    snprintf(schema, sizeof schema, "drvs_%ld", (long)getpid());
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", schema);
    exec_ok(fx.c, sql);

    sb_db_config cfg = fx.cfg;
    cfg.schema = schema; /* borrowed for the test; not freed */
    sb_conn *c = connect_cfg(&cfg);
    sb_rows *rows = query_ok(c, "SELECT current_schema()", NULL, 0, NULL);
    assert_text(rows, 0, 0, schema); /* type name (19) */
    sb__rows_free(rows);
    exec_ok(c, "CREATE TABLE in_schema (x int)");
    fx.drv->close(c);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_tables WHERE schemaname = '%s' AND "
             "tablename = 'in_schema'",
             schema);
    rows = query_ok(fx.c, sql, NULL, 0, NULL);
    assert_int_cell(rows, 0, 0, 1);
    sb__rows_free(rows);
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", schema);
    exec_ok(fx.c, sql);
}

static void test_pg_connect_refused(void **state)
{
    (void)state;
    if (!fx.pg)
        skip();
    sb_db_config cfg;
    sb_error err;
    sb_error_clear(&err);
    char refused[1024] = "postgresql://postgres@127.0.0.1:1/x";
    if (fx.odbc)
        sbt_odbc_url_of("postgresql://postgres@127.0.0.1:1/x", refused,
                        sizeof refused);
    assert_int_equal(sb__db_parse_url(refused, &cfg, &err), SB_OK);
    sb_conn *c = fx.c; /* must be reset to NULL */
    assert_int_equal(fx.drv->connect(&cfg, &c, &err), SB_UNAVAILABLE);
    assert_null(c);
    assert_int_equal(err.code, SB_UNAVAILABLE);
    assert_true(err.message[0] != '\0');
    assert_null(strchr(err.message, '\n')); /* one line for logs */
    sb__db_config_free(&cfg);
}

/* issue 20.7: a URL of several hosts with a connect_timeout keeps
 * libpq's failover. The first host accepts the connection and never
 * answers (a socket that listens and is never accepted from); after its
 * 2 s the second, the test's server, is connected. */
static void test_pg_connect_failover(void **state)
{
    (void)state;
    if (!fx.pg || fx.odbc)
        skip();
    const char *at = strchr(fx.url, '@');
    const char *scheme = strstr(fx.url, "://");
    const char *path = at != NULL ? strchr(at, '/') : NULL;
    if (at == NULL || scheme == NULL || path == NULL)
        skip();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    char url[1024];
    snprintf(url, sizeof url, "%.*s127.0.0.1:%d,%.*s%s%sconnect_timeout=2",
             (int)(at + 1 - fx.url), fx.url, ntohs(a.sin_port),
             (int)(path - at - 1), at + 1, path,
             strchr(path, '?') != NULL ? "&" : "?");
    sb_db_config cfg;
    sb_error err;
    sb_error_clear(&err);
    assert_int_equal(sb__db_parse_url(url, &cfg, &err), SB_OK);
    sb_conn *c = NULL;
    int rc = fx.drv->connect(&cfg, &c, &err);
    if (rc != SB_OK)
        print_message("connect: %s\n", err.message);
    assert_int_equal(rc, SB_OK);
    assert_non_null(c);
    fx.drv->close(c);
    sb__db_config_free(&cfg);
    close(fd);
}

static void test_pg_terminated_connection(void **state)
{
    (void)state;
    if (!fx.pg)
        skip();
    sb_conn *victim = connect_cfg(&fx.cfg);
    sb_rows *rows = query_ok(victim, "SELECT pg_backend_pid()", NULL, 0, NULL);
    int64_t pid = sb__rows_int(rows, 0, 0);
    sb__rows_free(rows);
    assert_true(pid > 0);
    assert_false(fx.drv->broken(victim));

    /* Wait (up to 5 s) until the backend has exited. */
    sb_value p = sb__v_int(pid);
    rows = query_ok(fx.c, "SELECT pg_terminate_backend($1::int, 5000)", &p, 1,
                    NULL);
    assert_int_cell(rows, 0, 0, 1);
    sb__rows_free(rows);

    sb_error err;
    int rc = query_rc(victim, "SELECT 1", NULL, 0, &err);
    assert_int_equal(rc, SB_UNAVAILABLE);
    assert_int_equal(err.code, SB_UNAVAILABLE);
    assert_true(err.message[0] != '\0');
    assert_null(strchr(err.message, '\n'));
    assert_true(fx.drv->broken(victim));
    /* Stays broken; nothing is sent any more. */
    assert_int_equal(query_rc(victim, "SELECT 1", NULL, 0, &err),
                     SB_UNAVAILABLE);
    assert_int_equal(sb__exec(victim, "SELECT 1", &err), SB_UNAVAILABLE);
    assert_int_equal(sb__begin(victim, &err), SB_UNAVAILABLE);
    sb__rollback(victim);
    fx.drv->close(victim);

    /* Killed inside a transaction: the commit fails as unavailable. */
    victim = connect_cfg(&fx.cfg);
    rows = query_ok(victim, "SELECT pg_backend_pid()", NULL, 0, NULL);
    p = sb__v_int(sb__rows_int(rows, 0, 0));
    sb__rows_free(rows);
    assert_int_equal(sb__begin(victim, &err), SB_OK);
    /* A statement, so the transaction exists on the server (psqlODBC
     * sends BEGIN with the first statement). */
    sb__rows_free(query_ok(victim, "SELECT 1", NULL, 0, NULL));
    rows = query_ok(fx.c, "SELECT pg_terminate_backend($1::int, 5000)", &p, 1,
                    NULL);
    sb__rows_free(rows);
    assert_int_equal(sb__commit(victim, &err), SB_UNAVAILABLE);
    assert_true(fx.drv->broken(victim));
    assert_false(victim->in_tx);
    fx.drv->close(victim);
}

int main(void)
{
    const char *backend = getenv("SQLBUS_TEST_BACKEND");
    fx.odbc = backend != NULL && strcmp(backend, "odbc-postgresql") == 0;
    fx.pg = fx.odbc || (backend != NULL && strcmp(backend, "postgresql") == 0);
    if (backend != NULL && !fx.pg && strcmp(backend, "sqlite") != 0) {
        fprintf(stderr, "unknown SQLBUS_TEST_BACKEND %s\n", backend);
        return 2;
    }
    if (fx.pg) {
        fx.url = getenv("SQLBUS_TEST_PG_URL");
        if (fx.url == NULL || fx.url[0] == '\0') {
            printf("skipped: SQLBUS_TEST_PG_URL not set\n");
            return 77;
        }
        if (fx.odbc) { /* the same database through psqlODBC */
            sbt_odbc_url_of(fx.url, fx.odbc_url, sizeof fx.odbc_url);
            fx.url = fx.odbc_url;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_helpers),
        cmocka_unit_test(test_value_roundtrip),
        cmocka_unit_test(test_text_utf16),
        cmocka_unit_test(test_odbc_invalid_utf8),
        cmocka_unit_test(test_odbc_connect_keeps_locale),
        cmocka_unit_test(test_pg_types),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_placeholders_dense),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_transactions),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_pg_deferred_begin),
        cmocka_unit_test(test_pg_statement_refresh),
        cmocka_unit_test(test_unique_violation),
        cmocka_unit_test(test_undefined_table),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_exec_multi),
        cmocka_unit_test(test_statement_cache),
        cmocka_unit_test(test_pg_notices_logged),
        cmocka_unit_test(test_sqlite_wal_autocheckpoint),
        cmocka_unit_test(test_sqlite_open_failures),
        cmocka_unit_test(test_pg_search_path),
        cmocka_unit_test(test_pg_connect_refused),
        cmocka_unit_test(test_pg_connect_invalid_url),
        cmocka_unit_test(test_pg_connect_refused_by_server),
        cmocka_unit_test(test_pg_connect_failover),
        cmocka_unit_test(test_odbc_connect_no_driver),
        cmocka_unit_test(test_pg_terminated_connection),
    };
    return cmocka_run_group_tests_name(fx.odbc ? "db_driver.odbc-postgresql"
                                       : fx.pg ? "db_driver.postgresql"
                                               : "db_driver.sqlite",
                                       tests, group_setup, group_teardown);
}
