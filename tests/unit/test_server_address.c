/*
 * test_server_address.c - unit tests of `sqlbus serve`'s listen address
 * (src/server/address.c; rules S1, S9): IPv4, bracketed IPv6 and
 * localhost, which are loopback, and every refusal naming "listen".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <netinet/in.h>

#include "server/server.h"

static void expect_ok(const char *text, int family, int port, int loopback)
{
    struct sockaddr_storage a;
    socklen_t len = 0;
    int lb = -1;
    sb_error err;
    if (sb__listen_parse(text, &a, &len, &lb, &err) != SB_OK)
        fail_msg("%s: %s", text, err.message);
    assert_int_equal(a.ss_family, family);
    assert_int_equal(lb, loopback);
    if (family == AF_INET) {
        assert_int_equal(len, sizeof(struct sockaddr_in));
        assert_int_equal(ntohs(((struct sockaddr_in *)&a)->sin_port), port);
    } else {
        assert_int_equal(len, sizeof(struct sockaddr_in6));
        assert_int_equal(ntohs(((struct sockaddr_in6 *)&a)->sin6_port), port);
    }
}

static void expect_bad(const char *text, const char *words)
{
    struct sockaddr_storage a;
    socklen_t len = 0;
    int lb = 0;
    sb_error err;
    assert_int_equal(sb__listen_parse(text, &a, &len, &lb, &err), SB_INVALID);
    assert_string_equal(err.field, "listen");
    if (strstr(err.message, words) == NULL)
        fail_msg("%s: \"%s\" does not say \"%s\"", text, err.message, words);
}

/* S1 and S9: the default and other addresses; loopback is 127/8 and ::1. */
static void test_addresses(void **state)
{
    (void)state;
    expect_ok("127.0.0.1:8080", AF_INET, 8080, 1);
    expect_ok("127.1.2.3:0", AF_INET, 0, 1);
    expect_ok("localhost:65535", AF_INET, 65535, 1);
    expect_ok("0.0.0.0:80", AF_INET, 80, 0);
    expect_ok("192.168.1.5:8080", AF_INET, 8080, 0);
    expect_ok("[::1]:8080", AF_INET6, 8080, 1);
    expect_ok("[::]:8080", AF_INET6, 8080, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_bad(NULL, "HOST:PORT");
    expect_bad("8080", "HOST:PORT");
    expect_bad(":8080", "HOST:PORT");
    expect_bad("127.0.0.1:", "port must be 0 to 65535");
    expect_bad("127.0.0.1:65536", "port must be 0 to 65535");
    expect_bad("127.0.0.1:-1", "port must be 0 to 65535");
    expect_bad("127.0.0.1:80x", "port must be 0 to 65535");
    expect_bad("example.com:80", "is not an IPv4 address");
    expect_bad("[::1:80", "in brackets");
    expect_bad("[zz]:80", "is not an IPv6 address");
    expect_bad("::1:80", "is not an IPv4 address");
    char big[200];
    memset(big, '1', 100);
    memcpy(big + 100, ":80", 4);
    expect_bad(big, "at most 63 bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
