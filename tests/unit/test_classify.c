/* test_classify.c - SQLSTATE classification (no database needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "db/db.h"
#include "db/tsql.h"

typedef struct {
    const char *state;
    int code;
} mapping;

static void check(const mapping *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int got = sb__classify_sqlstate(m[i].state);
        if (got != m[i].code)
            fail_msg("SQLSTATE %s: got %d, want %d",
                     m[i].state ? m[i].state : "(null)", got, m[i].code);
    }
}

static void test_connection_class(void **state)
{
    (void)state;
    static const mapping m[] = {
        {"08000", SB_UNAVAILABLE}, {"08003", SB_UNAVAILABLE},
        {"08006", SB_UNAVAILABLE}, {"08001", SB_UNAVAILABLE},
        {"08004", SB_UNAVAILABLE}, {"08P01", SB_UNAVAILABLE},
    };
    check(m, sizeof m / sizeof m[0]);
}

static void test_transient_busy(void **state)
{
    (void)state;
    static const mapping m[] = {
        {"40001", SB_BUSY}, {"40P01", SB_BUSY}, {"55P03", SB_BUSY},
        {"53000", SB_BUSY}, {"53100", SB_BUSY}, {"53200", SB_BUSY},
        {"53400", SB_BUSY},
    };
    check(m, sizeof m / sizeof m[0]);
}

static void test_shutdown_and_refusal(void **state)
{
    (void)state;
    static const mapping m[] = {
        {"57P01", SB_UNAVAILABLE},
        {"57P02", SB_UNAVAILABLE},
        {"57P03", SB_UNAVAILABLE},
        {"53300", SB_UNAVAILABLE},
        /* query_canceled (statement_timeout, S10) is a timeout, other
         * class-57 states are not transient connection losses. */
        {"57014", SB_TIMEOUT},
        {"57P04", SB_BACKEND},
    };
    check(m, sizeof m / sizeof m[0]);
}

static void test_permanent(void **state)
{
    (void)state;
    static const mapping m[] = {
        {"23505", SB_CONFLICT},        {"42P01", SB_SCHEMA_MISSING},
        {"42703", SB_SCHEMA_MISMATCH}, {"22001", SB_INVALID},
        {"22P02", SB_INVALID},         {"22003", SB_INVALID},
        {"23502", SB_INVALID},         {"23503", SB_INVALID},
        {"23514", SB_INVALID},         {"23000", SB_INVALID},
        {"42601", SB_BACKEND},         {"42P07", SB_BACKEND},
        {"25P02", SB_BACKEND},         {"40002", SB_BACKEND},
        {"40003", SB_BACKEND},         {"55000", SB_BACKEND},
        {"XX000", SB_BACKEND},         {"26000", SB_BACKEND},
        {"0A000", SB_BACKEND},
    };
    check(m, sizeof m / sizeof m[0]);
}

static void test_missing_sqlstate(void **state)
{
    (void)state;
    assert_int_equal(sb__classify_sqlstate(NULL), SB_UNAVAILABLE);
    assert_int_equal(sb__classify_sqlstate(""), SB_UNAVAILABLE);
    /* Malformed text is not a transient fault. */
    assert_int_equal(sb__classify_sqlstate("0"), SB_BACKEND);
    assert_int_equal(sb__classify_sqlstate("4"), SB_BACKEND);
}

static void test_transient_helper_agrees(void **state)
{
    (void)state;
    assert_true(sb_is_transient(sb__classify_sqlstate("40001")));
    assert_true(sb_is_transient(sb__classify_sqlstate("08006")));
    assert_false(sb_is_transient(sb__classify_sqlstate("23505")));
    /* A cancelled statement would run as long again: never retried. */
    assert_false(sb_is_transient(sb__classify_sqlstate("57014")));
    assert_int_equal(sb__classify_sqlstate("42P01") & 0xff, SB_SCHEMA);
}

/* SQL Server's native numbers, sqlbus's own THROWs after sp_getapplock
 * among them (db/tsql.h): a timeout, a cancel and a deadlock are busy
 * (retried), -999 a call error (never retried as a timeout); numbers
 * that decide nothing leave it to the SQLSTATE. */
static void test_mssql_native(void **state)
{
    (void)state;
    static const struct {
        long native;
        int code;
    } m[] = {
        {1205, SB_BUSY},          {1222, SB_BUSY},
        {51222, SB_BUSY},         {51223, SB_BACKEND},
        {51224, SB_BUSY},         {51225, SB_BUSY},
        {2627, SB_CONFLICT},      {2601, SB_CONFLICT},
        {208, SB_SCHEMA_MISSING}, {207, SB_SCHEMA_MISMATCH},
        {40613, SB_UNAVAILABLE},  {0, SB_OK},
        {50000, SB_OK},           {8152, SB_OK},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        int got = sb__classify_mssql_native(m[i].native);
        if (got != m[i].code)
            fail_msg("native %ld: got %d, want %d", m[i].native, got,
                     m[i].code);
    }
    assert_int_equal(SB_TSQL_APPLOCK_TIMEOUT, 51222);
    assert_int_equal(SB_TSQL_APPLOCK_CALL_ERROR, 51223);
    assert_int_equal(SB_TSQL_APPLOCK_DEADLOCK, 51224);
    assert_int_equal(SB_TSQL_APPLOCK_CANCELLED, 51225);
    assert_false(sb_is_transient(sb__classify_mssql_native(51223)));
    assert_true(sb_is_transient(sb__classify_mssql_native(51222)));
}

/* issue 20.7: ODBC's connect failures by SQLSTATE class: a URL naming no
 * driver or data source is the caller's to fix, a refused login or an
 * unknown database stays so, anything else is an outage. */
static void test_odbc_connect(void **state)
{
    (void)state;
    static const mapping m[] = {
        {"IM002", SB_INVALID},     {"IM003", SB_INVALID},
        {"01000", SB_INVALID},     {"28000", SB_BACKEND},
        {"28P01", SB_BACKEND},     {"3D000", SB_BACKEND},
        {"08001", SB_UNAVAILABLE}, {"08S01", SB_UNAVAILABLE},
        {"HYT00", SB_UNAVAILABLE}, {"", SB_UNAVAILABLE},
        {NULL, SB_UNAVAILABLE},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        int got = sb__classify_odbc_connect(m[i].state);
        if (got != m[i].code)
            fail_msg("ODBC connect SQLSTATE %s: got %d, want %d",
                     m[i].state ? m[i].state : "(null)", got, m[i].code);
    }
}

/* issue 20.7: the SQLSTATE of a libpq connection failure, read from the
 * verbose message (libpq has no result to ask); the text keeps the
 * message and drops the SQLSTATE and the LOCATION line. */
static void test_pg_connect_error(void **state)
{
    (void)state;
    char st[6], msg[256];
    sb__pg_connect_error("connection to server at \"127.0.0.1\", port 5432 "
                         "failed: FATAL:  3D000: database \"nope\" does not "
                         "exist\nLOCATION:  InitPostgres, postinit.c:941\n",
                         st, msg, sizeof msg);
    assert_string_equal(st, "3D000");
    assert_string_equal(msg, "connection to server at \"127.0.0.1\", port "
                             "5432 failed: FATAL:  database \"nope\" does "
                             "not exist\n");
    /* Localised severities and messages: the SQLSTATE is not. */
    sb__pg_connect_error(
        "... failed: FATAL:  28P01: Passwort-Authentifizierung "
        "fehlgeschlagen\nORT:  auth_failed, auth.c:326\n",
        st, msg, sizeof msg);
    assert_string_equal(st, "28P01");
    assert_null(strstr(msg, "28P01"));
    /* No server answer: no SQLSTATE, the message unchanged. */
    const char *refused =
        "connection to server at \"127.0.0.1\", port 1 failed: Connection "
        "refused\n\tIs the server running on that host and accepting TCP/IP "
        "connections?\n";
    sb__pg_connect_error(refused, st, msg, sizeof msg);
    assert_string_equal(st, "");
    assert_string_equal(msg, refused);
    /* Several hosts: the last answer decides. */
    sb__pg_connect_error("connection to server at \"a\" failed: FATAL:  53300: "
                         "sorry, too many clients already\nLOCATION:  x\n"
                         "connection to server at \"b\" failed: FATAL:  "
                         "57P03: the database system is starting up\n",
                         st, msg, sizeof msg);
    assert_string_equal(st, "57P03");
    assert_null(strstr(msg, "53300"));
    assert_null(strstr(msg, "LOCATION"));
    assert_non_null(strstr(msg, "too many clients"));
    /* Not a SQLSTATE: five characters of the wrong kind, or cut short. */
    sb__pg_connect_error("failed: FATAL:  3d000: x", st, msg, sizeof msg);
    assert_string_equal(st, "");
    sb__pg_connect_error("failed: FATAL:  3D00", st, msg, sizeof msg);
    assert_string_equal(st, "");
    assert_string_equal(msg, "failed: FATAL:  3D00");
    /* Cut to the buffer, still terminated. */
    char small[8];
    sb__pg_connect_error("failed: FATAL:  3D000: database", st, small,
                         sizeof small);
    assert_string_equal(st, "3D000");
    assert_string_equal(small, "failed:");
    sb__pg_connect_error("", st, msg, sizeof msg);
    assert_string_equal(st, "");
    assert_string_equal(msg, "");
}

/* issue 20.7: libpq's port values (one, or one per host), refused before
 * connecting when libpq would refuse them at connect time. */
static void test_pg_ports(void **state)
{
    (void)state;
    static const char *const good[] = {
        "5432", "1", "65535", "", "5432,5433", " 5432 ", ",5433", "5432,,1"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        sb_error err;
        if (sb__pg_check_ports(good[i], &err) != SB_OK)
            fail_msg("port \"%s\" refused: %s", good[i], err.message);
    }
    static const char *const bad[] = {
        "0",  "65536", "99999",  "x",         "5432x",
        "-1", "54 32", "5432,0", "1,2,99999", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sb_error err;
        sb_error_clear(&err);
        if (sb__pg_check_ports(bad[i], &err) != SB_INVALID)
            fail_msg("port \"%s\" accepted", bad[i]);
        assert_string_equal(err.field, "url");
        assert_non_null(strstr(err.message, "port must be 1 to 65535"));
    }
    sb_error err;
    sb__pg_check_ports("5432,99999", &err);
    assert_non_null(strstr(err.message, "(got \"99999\")"));
    assert_int_equal(sb__pg_check_ports("0", NULL), SB_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connection_class),
        cmocka_unit_test(test_transient_busy),
        cmocka_unit_test(test_shutdown_and_refusal),
        cmocka_unit_test(test_permanent),
        cmocka_unit_test(test_missing_sqlstate),
        cmocka_unit_test(test_transient_helper_agrees),
        cmocka_unit_test(test_mssql_native),
        cmocka_unit_test(test_odbc_connect),
        cmocka_unit_test(test_pg_connect_error),
        cmocka_unit_test(test_pg_ports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
