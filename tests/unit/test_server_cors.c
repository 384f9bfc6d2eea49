/*
 * test_server_cors.c - unit tests of which pages may call `sqlbus serve`
 * (src/server/cors.c; issue 22, rules S9, S11): origins as browsers send
 * them, what a page may change, and the Host names a server with no
 * token answers (DNS rebinding).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/cors.h"

static void test_origins(void **state)
{
    (void)state;
    sb_cors c;
    memset(&c, 0, sizeof c);
    sb_error err;
    assert_int_equal(sb__cors_add(&c, "HTTPS://Ops.Example:443/", &err), SB_OK);
    assert_int_equal(sb__cors_add(&c, "http://[::1]:9090", &err), SB_OK);
    /* the scheme's default port and case do not make another origin */
    assert_true(sb__cors_listed(&c, "https://ops.example"));
    assert_true(sb__cors_listed(&c, "http://[::1]:9090"));
    assert_false(sb__cors_listed(&c, "http://ops.example"));
    assert_false(sb__cors_readable(&c, "https://evil.example"));
    static const char *const bad[] = {"ops.example",
                                      "http://ops.example/sp",
                                      "http://ops.example:0",
                                      "http://u@ops.example",
                                      "ftp://x",
                                      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sb__cors_add(&c, bad[i], &err), SB_INVALID);
        assert_string_equal(err.field, "cors_origin");
    }
    /* S11: a page changes nothing unless listed, the server's own (its
     * Host, or a proxy's), or on this machine while any origin reads */
    assert_true(sb__cors_may_change(&c, NULL, "x", NULL));
    assert_true(sb__cors_may_change(&c, "https://ops.example", "x", NULL));
    assert_true(sb__cors_may_change(&c, "http://sb.example:8080",
                                    "sb.example:8080", NULL));
    assert_true(
        sb__cors_may_change(&c, "https://front.example", "x", "front.example"));
    assert_false(sb__cors_may_change(&c, "http://localhost:9", "x", NULL));
    assert_false(sb__cors_may_change(&c, "null", "x", NULL));
    c.any = 1;
    assert_true(sb__cors_may_change(&c, "http://localhost:9", "x", NULL));
    assert_false(sb__cors_may_change(&c, "https://evil.example", "x", NULL));
}

static void test_hosts(void **state)
{
    (void)state;
    sb_hosts h;
    memset(&h, 0, sizeof h);
    assert_true(sb__host_allowed(&h, "rebind.example")); /* tokens: no check */
    h.check = 1;
    static const char *const loop[] = {
        "localhost",    "LocalHost:8080", "app.localhost:1", "127.0.0.1",
        "127.1.2.3:80", "[::1]",          "[::1]:8080"};
    for (size_t i = 0; i < sizeof loop / sizeof loop[0]; i++)
        if (!sb__host_allowed(&h, loop[i]))
            fail_msg("loopback name refused: %s", loop[i]);
    assert_true(sb__host_allowed(&h, NULL)); /* HTTP/1.0: no browser */
    static const char *const other[] = {"rebind.example",
                                        "rebind.example:8080",
                                        "localhost.example",
                                        "xlocalhost",
                                        "128.0.0.1",
                                        "127.0.0.1.example",
                                        "127.0.0",
                                        "127.0.0.256",
                                        "[::2]",
                                        "",
                                        "local host",
                                        "[::1"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (sb__host_allowed(&h, other[i]))
            fail_msg("answered: %s", other[i]);
    sb_error err;
    assert_int_equal(sb__hosts_add(&h, "Proxy.Example", &err), SB_OK);
    assert_int_equal(sb__hosts_add(&h, "10.0.0.7", &err), SB_OK);
    assert_true(sb__host_allowed(&h, "proxy.example:9000"));
    assert_true(sb__host_allowed(&h, "10.0.0.7"));
    assert_false(sb__host_allowed(&h, "other.example"));
    static const char *const bad[] = {"proxy.example:80", "a b", "", "x/y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sb__hosts_add(&h, bad[i], &err), SB_INVALID);
        assert_string_equal(err.field, "allowed_host");
    }
    while (h.n < SB_HOSTS_MAX)
        assert_int_equal(sb__hosts_add(&h, "more.example", &err), SB_OK);
    assert_int_equal(sb__hosts_add(&h, "one.too.many", &err), SB_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origins),
        cmocka_unit_test(test_hosts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
