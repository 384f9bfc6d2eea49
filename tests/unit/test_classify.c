/* test_classify.c - SQLSTATE classification (no database needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
