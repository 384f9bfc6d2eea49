/*
 * test_server_deadline.c - unit tests of `sqlbus serve`'s request-head
 * deadline (src/server/deadline.c; issue 20.1, rule S10) over socket
 * pairs: a connection whose head is late is shut down (its peer reads the
 * end of the stream), one whose head arrived is not, the clock starts
 * again after an answer, and the table's slots are counted and reused.
 * No timing assertion beyond "within a generous bound".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "server/deadline.h"

/* A connected pair: [0] is the server's side, [1] the client's. */
static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

/* Whether the client side reads the end of the stream within `ms`. */
static int ended_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return 0;
    char c;
    return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

static void test_late_head_is_shut_down(void **state)
{
    (void)state;
    sb_deadline *d = NULL;
    sb_error err;
    assert_int_equal(sb__deadline_start(4, 50, &d, &err), SB_OK);
    int sv[2];
    pair(sv);
    sb_deadline_slot *s = sb__deadline_open(d, sv[0]);
    assert_non_null(s);
    assert_true(ended_within(sv[1], 10000));
    sb__deadline_close(d, s);
    sb__deadline_stop(d);
    close(sv[0]);
    close(sv[1]);
}

static void test_head_stops_the_clock_and_an_answer_restarts_it(void **state)
{
    (void)state;
    sb_deadline *d = NULL;
    sb_error err;
    assert_int_equal(sb__deadline_start(4, 50, &d, &err), SB_OK);
    int sv[2];
    pair(sv);
    sb_deadline_slot *s = sb__deadline_open(d, sv[0]);
    assert_non_null(s);
    sb__deadline_head(d, s);
    /* Well past the deadline, and past the thread's tick: still open. */
    assert_false(ended_within(sv[1], 1500));
    assert_int_equal(send(sv[1], "x", 1, 0), 1);
    sb__deadline_wait(d, s);
    assert_true(ended_within(sv[1], 10000));
    sb__deadline_close(d, s);
    sb__deadline_stop(d);
    close(sv[0]);
    close(sv[1]);
}

static void test_slots_are_counted_and_reused(void **state)
{
    (void)state;
    sb_deadline *d = NULL;
    sb_error err;
    assert_int_equal(sb__deadline_start(2, 60000, &d, &err), SB_OK);
    sb_deadline_slot *a = sb__deadline_open(d, 100);
    sb_deadline_slot *b = sb__deadline_open(d, 101);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_null(sb__deadline_open(d, 102)); /* full: not watched */
    sb__deadline_close(d, a);
    assert_ptr_equal(sb__deadline_open(d, 103), a);
    /* NULL handles and slots are no-ops. */
    sb__deadline_head(d, NULL);
    sb__deadline_wait(NULL, b);
    sb__deadline_close(NULL, b);
    assert_null(sb__deadline_open(NULL, 104));
    sb__deadline_stop(d);
    sb__deadline_stop(NULL);
}

static void test_arguments(void **state)
{
    (void)state;
    sb_deadline *d = (sb_deadline *)&d;
    sb_error err;
    assert_int_equal(sb__deadline_start(0, 1000, &d, &err), SB_INVALID);
    assert_string_equal(err.field, "slots");
    assert_null(d);
    assert_int_equal(sb__deadline_start(1, 0, &d, &err), SB_INVALID);
    assert_string_equal(err.field, "limit_ms");
    assert_int_equal(sb__deadline_start(1, -5, &d, &err), SB_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_head_is_shut_down),
        cmocka_unit_test(test_head_stops_the_clock_and_an_answer_restarts_it),
        cmocka_unit_test(test_slots_are_counted_and_reused),
        cmocka_unit_test(test_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
