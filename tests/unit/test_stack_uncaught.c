/*
 * test_stack_uncaught.c - finding a runtime's report of an uncaught
 * exception in a program's stderr (sb_find_uncaught), which
 * `sqlbus work` uses so a failing handler is grouped by its exception
 * type and first frame (rule E12, issue 19): Python, Java, .NET, Go and
 * Node.js as each runtime prints them, with log lines around them;
 * nothing recognised in plain text, a report cut at the front (the
 * stderr tail is the last 8 KiB) and binary bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "errors/classify.h"

static char *span(const char *text, sb_span s)
{
    char *out = malloc(s.len + 1);
    assert_non_null(out);
    memcpy(out, text + s.off, s.len);
    out[s.len] = '\0';
    return out;
}

/* `text` holds a report of `type` with `message`, whose trace runs from
 * the first occurrence of `first` to the end of the last of `last`, and
 * the classifier groups it under `title`. */
static void expect(const char *text, const char *type, const char *message,
                   const char *first, const char *last, const char *title)
{
    sb_uncaught u;
    memset(&u, 0xa5, sizeof u);
    size_t len = strlen(text);
    if (sb_find_uncaught(text, len, &u) != 1)
        fail_msg("no report found, want %s", type);
    char *t = span(text, u.type), *m = span(text, u.message),
         *tr = span(text, u.trace);
    assert_string_equal(t, type);
    assert_string_equal(m, message);
    const char *a = strstr(text, first);
    assert_non_null(a);
    const char *b = NULL;
    for (const char *p = strstr(text, last); p != NULL; p = strstr(p + 1, last))
        b = p;
    assert_non_null(b);
    if (u.trace.off != (size_t)(a - text) ||
        u.trace.off + u.trace.len != (size_t)(b - text) + strlen(last))
        fail_msg("trace is [%zu, %zu): \"%s\"", u.trace.off,
                 u.trace.off + u.trace.len, tr);
    sb_classify_input in = {
        .exception_type = t, .exception_message = m, .stack_trace = tr};
    sb_group_title g[SB_CLASSIFIER_COUNT];
    assert_int_equal(sb__classify(&in, g), 1);
    assert_string_equal(g[0].title, title);
    free(t);
    free(m);
    free(tr);
}

static void expect_none(const char *text, size_t len)
{
    sb_uncaught u;
    if (sb_find_uncaught(text, len, &u) != 0)
        fail_msg("found a report of type [%zu, +%zu) in \"%.*s\"", u.type.off,
                 u.type.len, (int)len, text);
}

static void test_python(void **state)
{
    (void)state;
    expect("INFO processing order 42\n"
           "Traceback (most recent call last):\n"
           "  File \"/app/worker.py\", line 41, in <module>\n"
           "    handle(sys.stdin.read())\n"
           "  File \"/app/orders.py\", line 3, in handle\n"
           "    raise ValueError(\"quantity must be positive\")\n"
           "ValueError: quantity must be positive\n",
           "ValueError", "quantity must be positive", "Traceback",
           "ValueError: quantity must be positive",
           "ValueError: orders.handle");
    /* Chained: one trace from the first header; the last exception. */
    expect("Traceback (most recent call last):\n"
           "  File \"/app/db.py\", line 12, in fetch\n"
           "    return cursor.execute(sql)\n"
           "sqlite3.OperationalError: database is locked\n"
           "\n"
           "During handling of the above exception, another exception "
           "occurred:\n"
           "\n"
           "Traceback (most recent call last):\n"
           "  File \"/app/repo.py\", line 20, in load\n"
           "    raise RepositoryError(\"load failed\")\n"
           "repo.RepositoryError: load failed\n",
           "repo.RepositoryError", "load failed", "Traceback",
           "repo.RepositoryError: load failed",
           "repo.RepositoryError: repo.load");
    /* No message; CRLF. */
    expect("Traceback (most recent call last):\r\n"
           "  File \"/app/x.py\", line 1, in main\r\n"
           "KeyboardInterrupt\r\n",
           "KeyboardInterrupt", "", "Traceback", "KeyboardInterrupt",
           "KeyboardInterrupt: x.main");
    /* "TYPE: " with nothing after it (found by fuzz_stack). */
    expect("Traceback (most recent call last):\n"
           "  File \"/app/x.py\", line 1, in main\n"
           "RuntimeError: \n",
           "RuntimeError", "", "Traceback",
           "RuntimeError: ", "RuntimeError: x.main");
    /* Two failures: the last one is the one that ended the program. */
    expect("Traceback (most recent call last):\n"
           "  File \"/app/retry.py\", line 5, in attempt\n"
           "TimeoutError: first try\n"
           "retrying\n"
           "Traceback (most recent call last):\n"
           "  File \"/app/main.py\", line 9, in run\n"
           "RuntimeError: gave up\n",
           "RuntimeError", "gave up",
           "Traceback (most recent call last):\n"
           "  File \"/app/main.py\"",
           "RuntimeError: gave up", "RuntimeError: main.run");
}

static void test_java(void **state)
{
    (void)state;
    expect("Exception in thread \"main\" java.lang.IllegalStateException: "
           "Order 42 already shipped\n"
           "\tat com.acme.orders.ShipmentPolicy.ensureNotShipped("
           "ShipmentPolicy.java:87)\n"
           "\tat com.acme.orders.Main.main(Main.java:10)\n"
           "Caused by: java.sql.SQLException: connection reset\n"
           "\tat com.acme.db.Pool.get(Pool.java:40)\n"
           "\t... 2 more\n",
           "java.lang.IllegalStateException", "Order 42 already shipped",
           "Exception in thread", "\t... 2 more",
           "java.lang.IllegalStateException: "
           "com.acme.orders.ShipmentPolicy.ensureNotShipped");
    /* printStackTrace() without the thread line, a multi-line message,
     * after log lines. */
    expect("12:00:01 starting\n"
           "com.acme.ValidationException: 2 errors:\n"
           "quantity: must be positive\n"
           "\tat com.acme.Validator.check(Validator.java:5)\n",
           "com.acme.ValidationException",
           "2 errors:\nquantity: must be positive",
           "com.acme.ValidationException",
           "\tat com.acme.Validator.check(Validator.java:5)",
           "com.acme.ValidationException: com.acme.Validator.check");
}

static void test_dotnet(void **state)
{
    (void)state;
    expect("Unhandled exception. System.InvalidOperationException: Order "
           "42 cannot be shipped twice\n"
           "   at Acme.Shipping.Policy.Ensure(Order order) in "
           "/src/Policy.cs:line 87\n"
           "   at Acme.Program.Main(String[] args) in /src/Program.cs:line 5\n",
           "System.InvalidOperationException",
           "Order 42 cannot be shipped twice", "Unhandled exception.",
           "/src/Program.cs:line 5",
           "System.InvalidOperationException: "
           "Acme.Shipping.Policy.Ensure(Order order)");
    /* An inner exception: the outer type, its message up to " ---> ". */
    expect("Unhandled exception. System.AggregateException: One or more "
           "errors occurred. ---> System.TimeoutException: db timeout\n"
           "   at Acme.Db.Query() in /src/Db.cs:line 9\n"
           "   --- End of inner exception stack trace ---\n"
           "   at Acme.Program.Main() in /src/Program.cs:line 3\n",
           "System.AggregateException", "One or more errors occurred.",
           "Unhandled exception.", "/src/Program.cs:line 3",
           "System.AggregateException: Acme.Program.Main()");
}

static void test_go(void **state)
{
    (void)state;
    expect("2024/05/01 12:00:00 handling 42\n"
           "panic: order 42 not found\n"
           "\n"
           "goroutine 1 [running]:\n"
           "main.lookup(...)\n"
           "\t/app/main.go:7 +0x1d\n"
           "main.main()\n"
           "\t/app/main.go:12 +0x45\n"
           "exit status 2\n",
           "panic", "order 42 not found", "panic:", "main.go:12 +0x45",
           "panic: main.lookup");
    expect("panic: runtime error: invalid memory address or nil pointer "
           "dereference\n"
           "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 "
           "pc=0x4a5b2c]\n"
           "\n"
           "goroutine 1 [running]:\n"
           "main.(*Server).handle(0xc000010000)\n"
           "\t/src/main.go:12 +0x1d\n",
           "panic",
           "runtime error: invalid memory address or nil pointer dereference",
           "panic:", "main.go:12 +0x1d", "panic: main.(*Server).handle");
    expect("fatal error: all goroutines are asleep - deadlock!\n"
           "\n"
           "goroutine 1 [chan receive]:\n"
           "main.main()\n"
           "\t/app/main.go:5 +0x2a\n",
           "fatal error", "all goroutines are asleep - deadlock!",
           "fatal error", "+0x2a", "fatal error: main.main");
}

static void test_node(void **state)
{
    (void)state;
    expect("/p/x.js:3\n"
           "  throw new Error('msg');\n"
           "  ^\n"
           "\n"
           "Error: msg\n"
           "    at Object.<anonymous> (/p/x.js:3:7)\n"
           "    at Module._compile (node:internal/modules/cjs/loader:1256:14)\n"
           "\n"
           "Node.js v20.11.0\n",
           "Error", "msg", "Error: msg", "loader:1256:14)",
           "Error: Object.<anonymous>");
    expect("TypeError: Cannot read properties of undefined (reading 'id')\n"
           "    at Orders.place (/app/src/orders.js:12:5)\n",
           "TypeError", "Cannot read properties of undefined (reading 'id')",
           "TypeError", "orders.js:12:5)", "TypeError: Orders.place");
    /* A code after the name (assert), properties after the trace. */
    expect("AssertionError [ERR_ASSERTION]: 1 == 2\n"
           "    at check (/app/a.js:2:3) {\n"
           "  code: 'ERR_ASSERTION'\n"
           "}\n",
           "AssertionError", "1 == 2", "AssertionError",
           "  code: 'ERR_ASSERTION'", "AssertionError: check");
}

static void test_nothing_recognised(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "",
        "boom\n",
        "error: cannot open /etc/app.conf: No such file or directory\n",
        /* "at" lines without a header naming an exception type */
        "could not start:\n    at least one queue is required\n",
        "Usage: app [--flag]\n    at /app/x.js:3:1\n",
        /* a header with no trace */
        "Traceback (most recent call last):\n",
        "panic: boom\n",
        "java.lang.IllegalStateException: no frames follow\n",
        /* C backtraces carry no exception type */
        "./app(place_order+0x1d) [0x4005d4]\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        expect_none(texts[i], strlen(texts[i]));
}

static void test_cut_and_binary(void **state)
{
    (void)state;
    /* The tail lost the report's first lines: the header is gone. */
    static const char *const cut[] = {
        "ShipmentPolicy.java:87)\n"
        "\tat com.acme.orders.Main.main(Main.java:10)\n",
        "Caused by: java.sql.SQLException: connection reset\n"
        "\tat com.acme.db.Pool.get(Pool.java:40)\n",
        "  File \"/app/orders.py\", line 3, in handle\n"
        "ValueError: quantity must be positive\n",
        "goroutine 1 [running]:\nmain.main()\n\t/app/main.go:5 +0x2a\n",
    };
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++)
        expect_none(cut[i], strlen(cut[i]));
    /* Binary: NUL and control bytes are never part of a report. */
    static const char bin[] = "\x7f"
                              "ELF\x02\x01\x01\0\0\0Error: x\n"
                              "\0   at f (/a.js:1:1)\n";
    expect_none(bin, sizeof bin - 1);
    char noise[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof noise; i++) {
        x = x * 1103515245u + 12345u;
        noise[i] = (char)(x >> 16);
    }
    sb_uncaught u;
    int rc = sb_find_uncaught(noise, sizeof noise, &u);
    if (rc == 1)
        assert_true(u.trace.off + u.trace.len <= sizeof noise);
    /* A report after binary noise is still found. */
    static const char after[] = "\x01\x02\x03garbage\x1b[0m\n"
                                "Error: late\n    at f (/a.js:1:1)\n";
    assert_int_equal(sb_find_uncaught(after, sizeof after - 1, &u), 1);
    assert_int_equal(u.type.len, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python),
        cmocka_unit_test(test_java),
        cmocka_unit_test(test_dotnet),
        cmocka_unit_test(test_go),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_nothing_recognised),
        cmocka_unit_test(test_cut_and_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
