/*
 * test_classify_errors.c - the failure classifiers of the error store
 * (rule E12) and the stack-frame parser behind "Exception Type and Stack
 * Trace": realistic traces of .NET, Mono, Java, Python, Go, JavaScript and
 * C backtrace_symbols, the exception-message removal, inner exceptions,
 * truncation on UTF-8 boundaries, and adversarial inputs that must stay
 * linear. (SQLSTATE classification is in test_classify.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "errors/classify.h"

/* ------------------------------------------------------------------ */
/* helpers */

/* The frame of `len` bytes of `trace` must be `want` (NULL: none). */
static void expect_frame_n(const char *trace, size_t len, const char *message,
                           const char *want)
{
    char out[512];
    memset(out, 'Z', sizeof out);
    int rc = sb__stack_first_frame(trace, len, message, out, sizeof out);
    if (want == NULL) {
        if (rc != 0)
            fail_msg("want no frame, got \"%s\"", out);
        assert_string_equal(out, "");
    } else {
        if (rc != 1)
            fail_msg("no frame found, want \"%s\"", want);
        assert_string_equal(out, want);
    }
}

static void expect_frame(const char *trace, const char *message,
                         const char *want)
{
    expect_frame_n(trace, strlen(trace), message, want);
}

/* A heap buffer of `n` bytes repeating `pattern` (test-owned, free). */
static char *repeat(const char *pattern, size_t n)
{
    size_t k = strlen(pattern);
    char *s = malloc(n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = pattern[i % k];
    s[n] = '\0';
    return s;
}

/* ------------------------------------------------------------------ */
/* .NET */

static const char dotnet_trace[] =
    "System.InvalidOperationException: Order 42 cannot be shipped twice\n"
    "   at Acme.Shipping.ShipmentPolicy.EnsureNotShipped(Order order, "
    "DateTime now) in /src/Acme.Shipping/ShipmentPolicy.cs:line 87\n"
    "   at Acme.Shipping.ShipOrderHandler.Handle(ShipOrder message, "
    "IMessageHandlerContext context) in "
    "/src/Acme.Shipping/ShipOrderHandler.cs:line 31\n"
    "   at NServiceBus.Pipeline.MessageHandler.Invoke(Object message, "
    "IMessageHandlerContext handlerContext)\n";

static void test_dotnet_frames(void **state)
{
    (void)state;
    expect_frame(dotnet_trace, "Order 42 cannot be shipped twice",
                 "Acme.Shipping.ShipmentPolicy.EnsureNotShipped(Order order, "
                 "DateTime now)");
    expect_frame(dotnet_trace, NULL,
                 "Acme.Shipping.ShipmentPolicy.EnsureNotShipped(Order order, "
                 "DateTime now)");
    /* A release build without symbols: no " in file:line". */
    expect_frame("System.DivideByZeroException: Attempted to divide by zero."
                 "\r\n   at Acme.Billing.Invoice.AverageLine()\r\n"
                 "   at Acme.Billing.InvoiceHandler.Handle(Invoice invoice)"
                 "\r\n",
                 "Attempted to divide by zero.",
                 "Acme.Billing.Invoice.AverageLine()");
    /* Windows paths, generics, an async state machine; blanks squeezed. */
    expect_frame("System.ArgumentException: Value does not fall within the "
                 "expected range.\r\n"
                 "   at Acme.Store.Cache`1.Put[TKey](TKey  key,\tT value) in "
                 "C:\\build\\src\\Acme.Store\\Cache.cs:line 12\r\n"
                 "   at Acme.Store.Loader.<LoadAsync>d__4.MoveNext() in "
                 "C:\\build\\src\\Acme.Store\\Loader.cs:line 40\r\n",
                 NULL, "Acme.Store.Cache`1.Put[TKey](TKey key, T value)");
    expect_frame("System.Exception: boom\r\n"
                 "   at Acme.Store.Loader.<LoadAsync>d__4.MoveNext()\r\n"
                 "--- End of stack trace from previous location ---\r\n"
                 "   at Acme.Store.Api.GetAsync(String id)\r\n",
                 "boom", "Acme.Store.Loader.<LoadAsync>d__4.MoveNext()");
}

/* The same failure site in two builds groups together (rule E12): paths
 * and line numbers differ, the frame does not. */
static void test_same_site_across_builds(void **state)
{
    (void)state;
    static const char *const builds[][2] = {
        {"System.TimeoutException: The operation has timed out.\n"
         "   at Acme.Remote.Client.Call(String method) in "
         "/home/ci/build-1841/src/Client.cs:line 88\n",
         "Acme.Remote.Client.Call(String method)"},
        {"System.TimeoutException: The operation has timed out.\r\n"
         "   at Acme.Remote.Client.Call(String method) in "
         "D:\\agent\\_work\\7\\s\\src\\Client.cs:line 91\r\n",
         "Acme.Remote.Client.Call(String method)"},
        {"System.TimeoutException: The operation has timed out.\n"
         "  at Acme.Remote.Client.Call (System.String method) [0x0001c] in "
         "<5e3f0a1b2c3d4e5f60718293a4b5c6d7>:0 \n",
         "Acme.Remote.Client.Call(System.String method)"},
        {"System.TimeoutException: The operation has timed out.\n"
         "  at Acme.Remote.Client.Call (System.String method) [0x00020] in "
         "<0a1b2c3d4e5f60718293a4b5c6d7e8f9>:0 \n",
         "Acme.Remote.Client.Call(System.String method)"},
    };
    for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++)
        expect_frame(builds[i][0], "The operation has timed out.",
                     builds[i][1]);
}

/* The message is removed first: a message that carries lines looking like
 * frames must not be taken for the thrown site. */
static void test_dotnet_message_removed(void **state)
{
    (void)state;
    static const char message[] =
        "Remote call failed: System.TimeoutException: The operation has "
        "timed out.\r\n"
        "   at Acme.Remote.Client.Call(String method)\r\n"
        "   at Acme.Remote.Client.Invoke()";
    static const char trace[] =
        "Acme.Integration.RemoteCallException: Remote call failed: "
        "System.TimeoutException: The operation has timed out.\r\n"
        "   at Acme.Remote.Client.Call(String method)\r\n"
        "   at Acme.Remote.Client.Invoke()\r\n"
        "   at Acme.Integration.Bridge.Forward(Envelope envelope) in "
        "/src/Bridge.cs:line 40\r\n"
        "   at Acme.Integration.Handler.Handle(Envelope envelope) in "
        "/src/Handler.cs:line 12\r\n";
    expect_frame(trace, message,
                 "Acme.Integration.Bridge.Forward(Envelope envelope)");
    /* Without the message the fake frame wins: the removal is what
     * makes the difference. */
    expect_frame(trace, NULL, "Acme.Remote.Client.Call(String method)");

    /* The short message "at X.Y()" of the brief, on its own line. */
    expect_frame("System.Exception: step failed\n   at X.Y()\n"
                 "   at Acme.Flow.Runner.Step(Int32 n)\n",
                 "step failed\n   at X.Y()", "Acme.Flow.Runner.Step(Int32 n)");

    /* Only an occurrence after ": " is removed: the same text inside a
     * frame line stays. */
    expect_frame("System.Exception: Save\n"
                 "   at Acme.Orders.Repository.Save(Order order)\n",
                 "Save", "Acme.Orders.Repository.Save(Order order)");
    /* What is left of a line that held the message is header text, even
     * when it looks like a frame. */
    expect_frame("   at A.B(Key: x)\n   at C.D()\n", "x", "C.D()");
    expect_frame("   at A.B(Key: x)\n   at C.D()\n", NULL, "A.B(Key: x)");
    /* A message that is not in the trace changes nothing. */
    expect_frame(dotnet_trace, "something else entirely",
                 "Acme.Shipping.ShipmentPolicy.EnsureNotShipped(Order order, "
                 "DateTime now)");
}

/* Inner exceptions: the inner traces come first; the outermost exception
 * threw at the first frame after as many end markers as the header has
 * " ---> " arrows. */
static void test_dotnet_inner_exceptions(void **state)
{
    (void)state;
    /* .NET Core: each inner exception on its own header line. */
    static const char core[] =
        "System.Net.Http.HttpRequestException: Connection refused "
        "(payments.internal:443)\n"
        " ---> System.Net.Sockets.SocketException (111): Connection "
        "refused\n"
        "   at System.Net.Sockets.Socket.AwaitableSocketAsyncEventArgs."
        "ThrowException(SocketError error, CancellationToken "
        "cancellationToken)\n"
        "   at System.Net.Http.HttpConnectionPool.ConnectToTcpHostAsync("
        "String host, Int32 port, HttpRequestMessage initialRequest, "
        "Boolean async, CancellationToken cancellationToken)\n"
        "   --- End of inner exception stack trace ---\n"
        "   at System.Net.Http.HttpConnectionPool.ConnectAsync("
        "HttpRequestMessage request, Boolean async, CancellationToken "
        "cancellationToken)\n"
        "   at Acme.Payments.Gateway.ChargeAsync(Payment payment) in "
        "/src/Acme.Payments/Gateway.cs:line 58\n";
    expect_frame(core, "Connection refused (payments.internal:443)",
                 "System.Net.Http.HttpConnectionPool.ConnectAsync("
                 "HttpRequestMessage request, Boolean async, "
                 "CancellationToken cancellationToken)");

    /* .NET Framework: all arrows on the first line, CRLF, two levels; the
     * innermost exception was never thrown, so its marker comes first. */
    static const char framework[] =
        "System.InvalidOperationException: Could not save order 42 ---> "
        "System.Data.SqlClient.SqlException: Execution Timeout Expired. "
        "---> System.ComponentModel.Win32Exception: The wait operation "
        "timed out\r\n"
        "   --- End of inner exception stack trace ---\r\n"
        "   at System.Data.SqlClient.SqlConnection.OnError(SqlException "
        "exception, Boolean breakConnection, Action`1 wrapCloseInAction)\r\n"
        "   at System.Data.SqlClient.SqlCommand.ExecuteNonQuery()\r\n"
        "   at Acme.Orders.OrderRepository.Save(Order order) in "
        "C:\\build\\src\\Acme.Orders\\OrderRepository.cs:line 112\r\n"
        "   --- End of inner exception stack trace ---\r\n"
        "   at Acme.Orders.OrderRepository.Save(Order order) in "
        "C:\\build\\src\\Acme.Orders\\OrderRepository.cs:line 118\r\n"
        "   at Acme.Orders.PlaceOrderHandler.Handle(PlaceOrder message) in "
        "C:\\build\\src\\Acme.Orders\\PlaceOrderHandler.cs:line 24\r\n";
    /* The arrows on the message's line still count around the hole. */
    expect_frame(framework, "Could not save order 42",
                 "Acme.Orders.OrderRepository.Save(Order order)");
    expect_frame(framework, NULL,
                 "Acme.Orders.OrderRepository.Save(Order order)");

    /* Cut short after the inner trace: the first frame after the last
     * end marker that has one, here the inner exception's. */
    expect_frame("System.AggregateException: One or more errors occurred.\n"
                 " ---> System.Exception: disk full\n"
                 "   at Acme.Files.Writer.Flush()\n"
                 "   at Acme.Files.Writer.Dispose()\n",
                 "One or more errors occurred.", "Acme.Files.Writer.Flush()");
    /* The listing of inner exceptions after the outer trace of an
     * AggregateException is not read once the outer frame is known. */
    expect_frame("System.AggregateException: One or more errors occurred. "
                 "(disk full)\n"
                 " ---> System.Exception: disk full\n"
                 "   at Acme.Files.Writer.Flush()\n"
                 "   --- End of inner exception stack trace ---\n"
                 "   at System.Threading.Tasks.Task.Wait()\n"
                 "   at Acme.Files.Batch.Run()\n"
                 " ---> (Inner Exception #0) System.Exception: disk full\n"
                 "   at Acme.Files.Writer.Flush()\n"
                 "   --- End of inner exception stack trace ---\n"
                 "   at Acme.Files.Other.Place()<---\n",
                 "One or more errors occurred. (disk full)",
                 "System.Threading.Tasks.Task.Wait()");
}

/* ------------------------------------------------------------------ */
/* Mono */

static void test_mono(void **state)
{
    (void)state;
    static const char trace[] =
        "System.NullReferenceException: Object reference not set to an "
        "instance of an object\n"
        "  at Acme.Inventory.StockLevel.Reserve (System.String sku, "
        "System.Int32 quantity) [0x0001c] in "
        "<0a1b2c3d4e5f60718293a4b5c6d7e8f9>:0 \n"
        "  at Acme.Inventory.ReserveStockHandler.Handle "
        "(Acme.Messages.ReserveStock message) [0x00008] in "
        "<0a1b2c3d4e5f60718293a4b5c6d7e8f9>:0 \n";
    expect_frame(trace, "Object reference not set to an instance of an object",
                 "Acme.Inventory.StockLevel.Reserve(System.String sku, "
                 "System.Int32 quantity)");
    /* Older Mono: "<filename unknown>", a native offset, no parameters. */
    expect_frame("System.Exception: x\n"
                 "  at Acme.Jobs.Nightly.Run () [0x00000] in <filename "
                 "unknown>:0\n",
                 "x", "Acme.Jobs.Nightly.Run()");
    expect_frame("System.Exception: x\n"
                 "  at Acme.Jobs.Nightly.Run (int attempt) <0x00057>\n",
                 "x", "Acme.Jobs.Nightly.Run(int attempt)");
    /* Without anything after the parameters: still Mono, not V8. */
    expect_frame("System.Exception: x\n"
                 "  at Acme.Jobs.Nightly.Run (System.String name)\n",
                 "x", "Acme.Jobs.Nightly.Run(System.String name)");
    /* A wrapper frame keeps the method, not "(wrapper ...)". */
    expect_frame("System.Reflection.TargetInvocationException: Exception "
                 "has been thrown by the target of an invocation.\n"
                 "  at (wrapper managed-to-native) System.Reflection."
                 "RuntimeMethodInfo.InternalInvoke(System.Reflection."
                 "RuntimeMethodInfo,object,object[],System.Exception&)\n",
                 "Exception has been thrown by the target of an invocation.",
                 "System.Reflection.RuntimeMethodInfo.InternalInvoke("
                 "System.Reflection.RuntimeMethodInfo,object,object[],"
                 "System.Exception&)");
}

/* ------------------------------------------------------------------ */
/* Java */

static void test_java(void **state)
{
    (void)state;
    /* The top exception's first frame, not the cause's. */
    static const char trace[] =
        "java.lang.IllegalStateException: Order 42 already shipped\n"
        "\tat com.acme.orders.ShipmentPolicy.ensureNotShipped("
        "ShipmentPolicy.java:87)\n"
        "\tat com.acme.orders.ShipOrderHandler.handle("
        "ShipOrderHandler.java:31)\n"
        "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl."
        "invoke0(Native Method)\n"
        "\tat java.base/java.lang.Thread.run(Thread.java:833)\n"
        "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 "
        "- Connection is not available, request timed out after 30000ms.\n"
        "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException("
        "HikariPool.java:696)\n"
        "\t... 4 more\n";
    expect_frame(trace, "Order 42 already shipped",
                 "com.acme.orders.ShipmentPolicy.ensureNotShipped");
    /* Module and class-loader prefixes go. */
    expect_frame("Exception in thread \"main\" "
                 "java.lang.IndexOutOfBoundsException: Index 5 out of "
                 "bounds for length 3\n"
                 "\tat java.base/jdk.internal.util.Preconditions.outOfBounds("
                 "Preconditions.java:64)\n",
                 "Index 5 out of bounds for length 3",
                 "jdk.internal.util.Preconditions.outOfBounds");
    expect_frame("java.lang.RuntimeException: x\n"
                 "\tat app//com.acme.Main.main(Main.java:5)\n",
                 "x", "com.acme.Main.main");
    expect_frame("java.lang.RuntimeException: x\n"
                 "\tat java.base@17.0.2/java.lang.Object.wait(Native "
                 "Method)\n",
                 "x", "java.lang.Object.wait");
    /* No debug info, Kotlin, a logback packaging suffix. */
    expect_frame("java.lang.RuntimeException: x\n"
                 "\tat com.acme.Foo.bar(Unknown Source)\n",
                 "x", "com.acme.Foo.bar");
    expect_frame("java.lang.RuntimeException: x\n"
                 "\tat com.acme.Orders.place(Orders.kt:12) "
                 "~[orders-1.4.jar:1.4]\n",
                 "x", "com.acme.Orders.place");
    expect_frame("java.lang.RuntimeException: x\n"
                 "\tat com.acme.Orders.place(Orders.java)\n",
                 "x", "com.acme.Orders.place");
    /* A hidden class's address is dropped. */
    expect_frame("java.lang.NullPointerException\n"
                 "\tat com.acme.orders.Orders$$Lambda$14/0x0000000800c03000."
                 "accept(Unknown Source)\n",
                 NULL, "com.acme.orders.Orders$$Lambda$14.accept");
    /* A name that is nothing but an address is no frame (found by
     * fuzz_stack: it rendered as ""). */
    expect_frame("java.lang.NullPointerException\n"
                 "\tat app///0x00000008(Unknown Source)\n"
                 "\tat com.acme.Foo.bar(Foo.java:3)\n",
                 NULL, "com.acme.Foo.bar");
}

/* ------------------------------------------------------------------ */
/* Python */

static void test_python(void **state)
{
    (void)state;
    expect_frame("Traceback (most recent call last):\n"
                 "  File \"/app/worker.py\", line 41, in handle\n"
                 "    orders.place(msg)\n"
                 "  File \"/app/orders.py\", line 3, in place\n"
                 "    raise ValueError(\"quantity must be positive\")\n"
                 "ValueError: quantity must be positive\n",
                 "quantity must be positive", "orders.place");
    /* Chained: the traceback raised last is the one that counts. */
    static const char chained[] =
        "Traceback (most recent call last):\n"
        "  File \"/app/db.py\", line 12, in fetch\n"
        "    return cursor.execute(sql)\n"
        "sqlite3.OperationalError: database is locked\n"
        "\n"
        "During handling of the above exception, another exception "
        "occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        "  File \"/app/worker.py\", line 41, in handle\n"
        "    repo.load(msg.id)\n"
        "  File \"/app/repo.py\", line 20, in load\n"
        "    raise RepositoryError(\"load failed\")\n"
        "repo.RepositoryError: load failed\n";
    expect_frame(chained, "load failed", "repo.load");
    /* 3.11 caret lines, CRLF, a library frame last. */
    expect_frame("Traceback (most recent call last):\r\n"
                 "  File \"/app/api.py\", line 8, in parse\r\n"
                 "    return json.loads(body)\r\n"
                 "           ^^^^^^^^^^^^^^^^\r\n"
                 "  File \"/usr/lib/python3.11/json/__init__.py\", line 346, "
                 "in loads\r\n"
                 "    return _default_decoder.decode(s)\r\n"
                 "           ^^^^^^^^^^^^^^^^^^^^^^^^^^\r\n"
                 "json.decoder.JSONDecodeError: Expecting value: line 1 "
                 "column 1 (char 0)\r\n",
                 "Expecting value: line 1 column 1 (char 0)", "__init__.loads");
    expect_frame("Traceback (most recent call last):\n"
                 "  File \"C:\\app\\billing\\invoice.py\", line 9, in total\n"
                 "ZeroDivisionError: division by zero\n",
                 "division by zero", "invoice.total");
    expect_frame("Traceback (most recent call last):\n"
                 "  File \"<stdin>\", line 1, in <module>\n"
                 "NameError: name 'x' is not defined\n",
                 NULL, "<stdin>.<module>");
    /* A message holding a traceback: removed, the real one stays. */
    static const char message[] = "upstream said:\n"
                                  "Traceback (most recent call last):\n"
                                  "  File \"/srv/remote.py\", line 1, in boom";
    static const char faked[] =
        "Traceback (most recent call last):\n"
        "  File \"/app/worker.py\", line 41, in handle\n"
        "    raise RuntimeError(text)\n"
        "RuntimeError: upstream said:\n"
        "Traceback (most recent call last):\n"
        "  File \"/srv/remote.py\", line 1, in boom\n";
    expect_frame(faked, message, "worker.handle");
    expect_frame(faked, NULL, "remote.boom");
    /* A header without entries has no frame. */
    expect_frame("Traceback (most recent call last):\n"
                 "KeyError: 'id'\n",
                 NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* Go */

static void test_go(void **state)
{
    (void)state;
    static const char nil_deref[] =
        "panic: runtime error: invalid memory address or nil pointer "
        "dereference\n"
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 "
        "pc=0x4a5b2c]\n"
        "\n"
        "goroutine 1 [running]:\n"
        "main.(*Server).handle(0xc000010000, {0x4b2f60, 0x5})\n"
        "\t/src/server/main.go:12 +0x1d\n"
        "main.main()\n"
        "\t/src/server/main.go:30 +0x45\n"
        "exit status 2\n";
    expect_frame(nil_deref,
                 "runtime error: invalid memory address or nil pointer "
                 "dereference",
                 "main.(*Server).handle");
    /* Runtime frames and the panic call itself are skipped. */
    expect_frame("panic: assignment to entry in nil map\n"
                 "\n"
                 "goroutine 7 [running]:\n"
                 "runtime.mapassign_faststr(0x4c1e40, 0x0, {0x4d2a1b, 0x3})\n"
                 "\t/usr/local/go/src/runtime/map_faststr.go:203 +0x3d4\n"
                 "github.com/acme/orders/store.(*Cache).Put(...)\n"
                 "\t/src/orders/store/cache.go:44\n"
                 "github.com/acme/orders/store.(*Cache).Load(0xc0000a2000, "
                 "{0xc0000b6000, 0x24})\n"
                 "\t/src/orders/store/cache.go:31 +0x12f\n"
                 "created by github.com/acme/orders.Start in goroutine 1\n"
                 "\t/src/orders/start.go:18 +0x8a\n",
                 "assignment to entry in nil map",
                 "github.com/acme/orders/store.(*Cache).Put");
    expect_frame("panic: order 42 not found\n"
                 "\n"
                 "goroutine 1 [running]:\n"
                 "panic({0x4a0e60?, 0xc000012345?})\n"
                 "\t/usr/local/go/src/runtime/panic.go:770 +0x132\n"
                 "main.lookup({0x4b8f2e, 0x2})\n"
                 "\t/app/main.go:9 +0x65\n",
                 "order 42 not found", "main.lookup");
    /* Only runtime frames: none. */
    expect_frame("fatal error: all goroutines are asleep - deadlock!\n"
                 "\n"
                 "goroutine 1 [chan receive]:\n"
                 "runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)\n"
                 "\t/usr/local/go/src/runtime/proc.go:398 +0xce\n",
                 NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* JavaScript (V8) */

static void test_javascript(void **state)
{
    (void)state;
    expect_frame("TypeError: Cannot read properties of undefined (reading "
                 "'id')\n"
                 "    at Orders.place (/app/src/orders.js:12:5)\n"
                 "    at async Worker.handle (/app/src/worker.js:40:7)\n"
                 "    at async Promise.all (index 0)\n",
                 "Cannot read properties of undefined (reading 'id')",
                 "Orders.place");
    expect_frame("Error: payment declined\n"
                 "    at async PaymentService.charge "
                 "(file:///app/src/payments.mjs:88:11)\n",
                 "payment declined", "PaymentService.charge");
    expect_frame("Error: boot failed\n    at /app/src/index.js:3:1\n",
                 "boot failed", "<anonymous>");
    expect_frame("Error: boot failed\n"
                 "    at Object.<anonymous> (/app/src/index.js:3:9)\n"
                 "    at Module._compile (node:internal/modules/cjs/loader:"
                 "1256:14)\n",
                 "boot failed", "Object.<anonymous>");
    expect_frame("Error: no config\n"
                 "    at new OrderService (/app/src/service.js:10:11)\n",
                 "no config", "new OrderService");
    expect_frame("Error: x\n"
                 "    at Router.dispatch [as handle] "
                 "(/app/node_modules/express/lib/router.js:10:3)\n",
                 "x", "Router.dispatch");
    expect_frame("ReferenceError: y is not defined\n"
                 "    at eval (eval at compile (/app/src/tpl.js:5:10), "
                 "<anonymous>:1:7)\n",
                 "y is not defined", "eval");
    expect_frame("RangeError: Invalid array length\n"
                 "    at Array.map (<anonymous>)\n",
                 "Invalid array length", "Array.map");
}

/* ------------------------------------------------------------------ */
/* C backtrace_symbols */

static void test_c_backtrace(void **state)
{
    (void)state;
    /* The dumping helper and the C library's signal trampoline go. */
    expect_frame("./orderd(dump_backtrace+0x2e) [0x55d0c8a0f1b9]\n"
                 "/lib/x86_64-linux-gnu/libc.so.6(+0x42520) "
                 "[0x7f3a2c642520]\n"
                 "./orderd(place_order+0x1d) [0x55d0c8a0f2d4]\n"
                 "./orderd(main+0x4c) [0x55d0c8a0f3a0]\n"
                 "/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x80) "
                 "[0x7f3a2c629e40]\n"
                 "./orderd(_start+0x25) [0x55d0c8a0f0e5]\n",
                 NULL, "orderd(place_order)");
    /* abort() inside libc: the caller. */
    expect_frame("/lib/x86_64-linux-gnu/libc.so.6(pthread_kill+0x12c) "
                 "[0x7f1c9a096a7c]\n"
                 "/lib/x86_64-linux-gnu/libc.so.6(raise+0x16) "
                 "[0x7f1c9a042476]\n"
                 "/lib/x86_64-linux-gnu/libc.so.6(abort+0xd7) "
                 "[0x7f1c9a0287f3]\n"
                 "/usr/lib/libacme.so.2(_ZN4acme5Order5placeEv+0x3a) "
                 "[0x7f1c9a2b113a]\n",
                 NULL, "libacme.so.2(_ZN4acme5Order5placeEv)");
    /* A static function has no symbol: the nearest named frame. */
    expect_frame("./orderd(+0x1189) [0x55d0c8a0f189]\n"
                 "./orderd(main+0x4c) [0x55d0c8a0f3a0]\n",
                 NULL, "orderd(main)");
    /* No symbol anywhere (stripped binary). */
    expect_frame("./orderd(+0x1189) [0x55d0c8a0f189]\n"
                 "./orderd() [0x55d0c8a0f3a0]\n",
                 NULL, "orderd(?)");
    /* Not backtrace_symbols lines. */
    expect_frame("orderd(main+0x4c) [0xzz]\n(x) [0x1]\nabc [0x1]\n", NULL,
                 NULL);
}

/* ------------------------------------------------------------------ */
/* no frame, bounds, truncation */

static void test_no_frame(void **state)
{
    (void)state;
    expect_frame("", NULL, NULL);
    expect_frame("   \r\n\t\n", NULL, NULL);
    expect_frame("System.Exception: nothing below\n", NULL, NULL);
    expect_frame("at Unindented.Frame()\n", NULL, NULL);
    expect_frame("   at\n   at \n   at (\n   at ()\n   at X.Y(\n", NULL, NULL);
    char out[8] = "junk";
    assert_int_equal(sb__stack_first_frame(NULL, 10, NULL, out, sizeof out), 0);
    assert_string_equal(out, "");
    /* Only trace[0..len) is read: the frame after len is not seen. */
    static const char two[] = "System.Exception: x\n   at A.B()\n";
    expect_frame_n(two, strlen(two) - 12, "x", NULL);
    expect_frame_n(two, strlen(two) - 1, "x", "A.B()");
}

static void test_truncation(void **state)
{
    (void)state;
    /* "Zahlungsverkehr." is 16 bytes, then U+00DC (2 bytes). */
    static const char trace[] =
        "System.Exception: abgelehnt\n"
        "   at Zahlungsverkehr.\xc3\x9c"
        "berweisung.Ausf\xc3\xbchren(String empf\xc3\xa4nger)\n";
    static const char full[] =
        "Zahlungsverkehr.\xc3\x9c"
        "berweisung.Ausf\xc3\xbchren(String empf\xc3\xa4nger)";
    size_t len = strlen(trace);
    for (size_t cap = 1; cap <= sizeof full + 1; cap++) {
        char *out = malloc(cap); /* exact size: ASan sees an overwrite */
        assert_non_null(out);
        assert_int_equal(
            sb__stack_first_frame(trace, len, "abgelehnt", out, cap), 1);
        size_t n = strlen(out);
        assert_true(n < cap);
        assert_memory_equal(out, full, n);
        /* the longest prefix that fits and ends on a boundary */
        size_t want = cap - 1 < strlen(full) ? cap - 1 : strlen(full);
        while (want > 0 && ((unsigned char)full[want] & 0xc0) == 0x80)
            want--;
        assert_int_equal(n, want);
        free(out);
    }
    char out[18];
    sb__stack_first_frame(trace, len, NULL, out, sizeof out);
    assert_string_equal(out, "Zahlungsverkehr."); /* not "...\xc3" */
    /* 3- and 4-byte characters. */
    static const char cjk[] = "Error: x\n    at \xe6\xb3\xa8\xe6\x96\x87."
                              "\xf0\x9f\x9b\x92 (/app/a.js:1:1)\n";
    char small[6];
    assert_int_equal(
        sb__stack_first_frame(cjk, strlen(cjk), "x", small, sizeof small), 1);
    assert_string_equal(small, "\xe6\xb3\xa8"); /* 5 bytes would split */
    char mid[10];
    sb__stack_first_frame(cjk, strlen(cjk), "x", mid, sizeof mid);
    assert_string_equal(mid, "\xe6\xb3\xa8\xe6\x96\x87."); /* 9 would split */
    /* cap 0 writes nothing, but still answers */
    assert_int_equal(sb__stack_first_frame(trace, len, NULL, NULL, 0), 1);
    assert_int_equal(sb__stack_first_frame("x", 1, NULL, NULL, 0), 0);
}

/* ------------------------------------------------------------------ */
/* adversarial inputs: each must finish in linear time. A quadratic scan
 * of these megabytes takes hours, so a regression fails on the ctest
 * timeout as well as on the elapsed-time check. */

#define MIB (1024 * 1024)

static void test_adversarial(void **state)
{
    (void)state;
    int64_t t0 = sb__mono_us();
    char out[512];

    char *at = repeat("at at at (((", MIB);
    assert_int_equal(sb__stack_first_frame(at, MIB, NULL, out, sizeof out), 0);
    assert_int_equal(sb__stack_first_frame(at, MIB, "at (((", out, sizeof out),
                     0);
    free(at);
    char *at_lines = repeat("  at at at (((\n", MIB);
    assert_int_equal(
        sb__stack_first_frame(at_lines, MIB, "at", out, sizeof out), 0);
    free(at_lines);

    /* One enormous frame line: found, cut to the buffer. */
    char *huge = repeat("A", 2 * MIB);
    memcpy(huge, "   at ", 6);
    huge[MIB] = '(';
    huge[2 * MIB - 1] = ')';
    assert_int_equal(
        sb__stack_first_frame(huge, 2 * MIB, NULL, out, sizeof out), 1);
    assert_int_equal(strlen(out), sizeof out - 1);
    free(huge);

    /* No newline at all, every matcher's trigger repeated. */
    static const char *const floods[] = {
        "x",       "(",  ")",         "[0x",
        ") [0x1]", "\"", "File \"",   "goroutine 1 [",
        " ---> ",  ":1", "\", line ", "/0x",
        " [as ",
    };
    for (size_t i = 0; i < sizeof floods / sizeof floods[0]; i++) {
        char *f = repeat(floods[i], MIB);
        sb__stack_first_frame(f, MIB, floods[i], out, sizeof out);
        free(f);
    }
    /* Each format's header, then a megabyte of near misses. */
    static const char *const heads[][2] = {
        {"Traceback (most recent call last):\n", "  File \"a\", line 1, in"},
        {"goroutine 1 [running]:\n", "a.(b)(c"},
        {"System.Exception: m ---> ", " ---> "},
        {"", "   --- End of inner exception stack trace ---\n"},
        {"", "./app(f+0x1 [0x1]\n"},
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        size_t h = strlen(heads[i][0]);
        char *f = repeat(heads[i][1], MIB);
        memcpy(f, heads[i][0], h);
        sb__stack_first_frame(f, MIB, NULL, out, sizeof out);
        free(f);
    }

    /* The message search: "aaa...ab" against ": aaa...a" is quadratic
     * for a naive search; a periodic message is the two-way search's
     * hard case; a one-byte message makes a hole every three bytes. */
    char *as = repeat("a", MIB);
    as[0] = ':';
    as[1] = ' ';
    char *needle = repeat("a", MIB / 2);
    needle[MIB / 2 - 1] = 'b';
    assert_int_equal(sb__stack_first_frame(as, MIB, needle, out, sizeof out),
                     0);
    free(needle);
    free(as);
    char *periodic = repeat(": ab", MIB);
    needle = repeat("ab: ", MIB / 3);
    sb__stack_first_frame(periodic, MIB, needle, out, sizeof out);
    free(needle);
    free(periodic);
    char *holes = repeat(": x\n", MIB);
    assert_int_equal(sb__stack_first_frame(holes, MIB, "x", out, sizeof out),
                     0);
    memcpy(holes + MIB - 12, "   at A.B()\n", 12);
    assert_int_equal(sb__stack_first_frame(holes, MIB, "x", out, sizeof out),
                     1);
    assert_string_equal(out, "A.B()");
    free(holes);

    int64_t elapsed = sb__mono_us() - t0;
    if (elapsed > 20 * 1000 * 1000)
        fail_msg("adversarial inputs took %lld us", (long long)elapsed);
}

/* NUL and other control bytes inside len: such a line is no frame, and
 * nothing stops at the NUL. */
static void test_control_bytes(void **state)
{
    (void)state;
    static const char nul[] = "System.Exception: x\n"
                              "   at Fake.Frame()\0 \n"
                              "   at Real.Frame()\n";
    expect_frame_n(nul, sizeof nul - 1, "x", "Real.Frame()");
    static const char lead[] = "\0\0\0\n   at Real.Frame()\n";
    expect_frame_n(lead, sizeof lead - 1, NULL, "Real.Frame()");
    static const char esc[] = "   at Fake.\x1b[31mFrame()\n   at R.F()\n";
    expect_frame(esc, NULL, "R.F()");
    /* A CR is only stripped at the end of a line. */
    expect_frame("   at Fake.Fr\rame()\n   at R.F()\r\n", NULL, "R.F()");
}

/* Removing the message means: each occurrence after ": ", left to right
 * without overlapping, is a hole, and a line holding one is no frame.
 * The same answer must come from the trace with those bytes replaced by a
 * control character and no message. Random traces from frame-like pieces
 * exercise the two-way search against a naive one. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_message_holes_match_naive_search(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        ": ",
        "x",
        "ab",
        "\n",
        "\r\n",
        "   at A.B()\n",
        "   at C.D(int i)\n",
        " ---> ",
        "   --- End of inner exception stack trace ---\n",
        "Traceback (most recent call last):\n",
        "  File \"m.py\", line 1, in f\n",
        "goroutine 1 [running]:\n",
        "main.f()\n",
        "E: ",
    };
    size_t np = sizeof pieces / sizeof pieces[0];
    uint64_t seed = 0x9e3779b97f4a7c15u;
    char trace[2048], masked[2048], message[80];
    for (int round = 0; round < 20000; round++) {
        size_t len = 0, m = 0;
        size_t k = next_random(&seed) % 24;
        for (size_t i = 0; i < k; i++) {
            const char *p = pieces[next_random(&seed) % np];
            memcpy(trace + len, p, strlen(p));
            len += strlen(p);
        }
        k = 1 + next_random(&seed) % 3;
        for (size_t i = 0; i < k; i++) {
            const char *p = pieces[next_random(&seed) % 6];
            memcpy(message + m, p, strlen(p));
            m += strlen(p);
        }
        message[m] = '\0';
        memcpy(masked, trace, len);
        for (size_t p = 0; p + 2 + m <= len;) {
            if (memcmp(trace + p, ": ", 2) == 0 &&
                memcmp(trace + p + 2, message, m) == 0) {
                memset(masked + p + 2, '\x01', m);
                p += 2 + m;
            } else {
                p++;
            }
        }
        char a[64], b[64];
        int ra = sb__stack_first_frame(trace, len, message, a, sizeof a);
        int rb = sb__stack_first_frame(masked, len, NULL, b, sizeof b);
        if (ra != rb || strcmp(a, b) != 0)
            fail_msg("round %d: \"%.*s\" less \"%s\": %d \"%s\", masked %d "
                     "\"%s\"",
                     round, (int)len, trace, message, ra, a, rb, b);
    }
}

/* ------------------------------------------------------------------ */
/* classifiers (rule E12) */

static void test_classify_all(void **state)
{
    (void)state;
    sb_classify_input in = {
        .exception_type = "System.InvalidOperationException",
        .exception_message = "Order 42 cannot be shipped twice",
        .stack_trace = dotnet_trace,
        .message_type = "Acme.Messages.ShipOrder",
        .failed_queue = "shipping",
        .instance_id = "0b6f3a9c2d4e4f1a8b7c6d5e4f3a2b1c",
        .endpoint_name = "Acme.Shipping",
    };
    sb_group_title out[SB_CLASSIFIER_COUNT];
    memset(out, 'Z', sizeof out);
    assert_int_equal(sb__classify(&in, out), 5);
    static const char *const want[][2] = {
        {"Exception Type and Stack Trace",
         "System.InvalidOperationException: Acme.Shipping.ShipmentPolicy."
         "EnsureNotShipped(Order order, DateTime now)"},
        {"Message Type", "Acme.Messages.ShipOrder"},
        {"Endpoint Address", "shipping"},
        {"Endpoint Instance", "0b6f3a9c2d4e4f1a8b7c6d5e4f3a2b1c"},
        {"Endpoint Name", "Acme.Shipping"},
    };
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(out[i].classifier, want[i][0]);
        assert_string_equal(out[i].title, want[i][1]);
    }
    assert_string_equal(SB_CLASSIFIER_EXCEPTION, want[0][0]);
    assert_string_equal(SB_CLASSIFIER_MESSAGE_TYPE, want[1][0]);
    assert_string_equal(SB_CLASSIFIER_ENDPOINT_ADDRESS, want[2][0]);
    assert_string_equal(SB_CLASSIFIER_ENDPOINT_INSTANCE, want[3][0]);
    assert_string_equal(SB_CLASSIFIER_ENDPOINT_NAME, want[4][0]);
}

static void test_classify_no_stacktrace(void **state)
{
    (void)state;
    static const char *const traces[] = {NULL, "", "  \r\n",
                                         "Some.Error: no frames here"};
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        sb_classify_input in = {.exception_type = "Some.Error",
                                .stack_trace = traces[i]};
        sb_group_title out[SB_CLASSIFIER_COUNT];
        assert_int_equal(sb__classify(&in, out), 1);
        assert_string_equal(out[0].classifier, SB_CLASSIFIER_EXCEPTION);
        assert_string_equal(out[0].title, "Some.Error: No stacktrace");
        assert_null(out[1].classifier);
        assert_string_equal(out[1].title, "");
    }
}

static void test_classify_partial(void **state)
{
    (void)state;
    /* No exception type: no exception group, even with a trace. */
    sb_classify_input in = {.exception_type = "",
                            .stack_trace = dotnet_trace,
                            .message_type = "Acme.Messages.ShipOrder",
                            .failed_queue = "",
                            .instance_id = NULL,
                            .endpoint_name = "Acme.Shipping"};
    sb_group_title out[SB_CLASSIFIER_COUNT];
    memset(out, 'Z', sizeof out);
    assert_int_equal(sb__classify(&in, out), 2);
    assert_string_equal(out[0].classifier, SB_CLASSIFIER_MESSAGE_TYPE);
    assert_string_equal(out[0].title, "Acme.Messages.ShipOrder");
    assert_string_equal(out[1].classifier, SB_CLASSIFIER_ENDPOINT_NAME);
    assert_string_equal(out[1].title, "Acme.Shipping");
    for (size_t i = 2; i < SB_CLASSIFIER_COUNT; i++) {
        assert_null(out[i].classifier);
        assert_string_equal(out[i].title, "");
    }
    sb_classify_input empty;
    memset(&empty, 0, sizeof empty);
    assert_int_equal(sb__classify(&empty, out), 0);
    assert_int_equal(sb__classify(NULL, out), 0);
    assert_null(out[0].classifier);
}

/* Titles are cut at 511 bytes, never inside a character. */
static void test_classify_title_utf8_cut(void **state)
{
    (void)state;
    /* 509 bytes, then "é" (2 bytes) ends at 511: fits exactly. */
    char *type = repeat("E", 509);
    char *name = malloc(600);
    assert_non_null(name);
    memcpy(name, type, 509);
    memcpy(name + 509, "\xc3\xa9", 3);
    sb_classify_input in = {.endpoint_name = name};
    sb_group_title out[SB_CLASSIFIER_COUNT];
    assert_int_equal(sb__classify(&in, out), 1);
    assert_int_equal(strlen(out[0].title), 511);
    /* One byte more and the "é" would straddle the end: it goes. */
    memmove(name + 1, name, 512);
    assert_int_equal(sb__classify(&in, out), 1);
    assert_int_equal(strlen(out[0].title), 510);
    assert_memory_equal(out[0].title, name, 510);
    /* A long exception type with a 3-byte character at the edge: the
     * frame and the character are dropped. */
    memcpy(name, type, 508);
    memcpy(name + 508, "\xe2\x82\xac", 4); /* U+20AC ends at 511 */
    in.exception_type = name;
    in.endpoint_name = NULL;
    in.stack_trace = dotnet_trace;
    assert_int_equal(sb__classify(&in, out), 1);
    assert_int_equal(strlen(out[0].title), 511);
    assert_memory_equal(out[0].title, name, 511);
    name[0] = 'F';
    memmove(name + 1, name, 512);
    assert_int_equal(sb__classify(&in, out), 1);
    assert_int_equal(strlen(out[0].title), 509);
    free(type);
    free(name);
}

/* The parser and the classifiers never allocate: with an allocator that
 * counts calls, nothing is asked for. */
static void *count_malloc(size_t n, void *user)
{
    ++*(long *)user;
    return malloc(n);
}

static void *count_realloc(void *p, size_t n, void *user)
{
    ++*(long *)user;
    return realloc(p, n);
}

static void count_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static void test_no_allocation(void **state)
{
    (void)state;
    long calls = 0;
    const sb_allocator a = {count_malloc, count_realloc, count_free, &calls};
    sb_set_allocator(&a);
    sb_classify_input in = {.exception_type = "System.Exception",
                            .exception_message = "Order 42 cannot be "
                                                 "shipped twice",
                            .stack_trace = dotnet_trace,
                            .message_type = "T",
                            .endpoint_name = "E"};
    sb_group_title out[SB_CLASSIFIER_COUNT];
    size_t n = sb__classify(&in, out);
    sb_set_allocator(NULL);
    assert_int_equal(n, 3);
    assert_int_equal(calls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dotnet_frames),
        cmocka_unit_test(test_same_site_across_builds),
        cmocka_unit_test(test_dotnet_message_removed),
        cmocka_unit_test(test_dotnet_inner_exceptions),
        cmocka_unit_test(test_mono),
        cmocka_unit_test(test_java),
        cmocka_unit_test(test_python),
        cmocka_unit_test(test_go),
        cmocka_unit_test(test_javascript),
        cmocka_unit_test(test_c_backtrace),
        cmocka_unit_test(test_no_frame),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_adversarial),
        cmocka_unit_test(test_control_bytes),
        cmocka_unit_test(test_message_holes_match_naive_search),
        cmocka_unit_test(test_classify_all),
        cmocka_unit_test(test_classify_no_stacktrace),
        cmocka_unit_test(test_classify_partial),
        cmocka_unit_test(test_classify_title_utf8_cut),
        cmocka_unit_test(test_no_allocation),
    };
    return cmocka_run_group_tests_name("classify_errors", tests, NULL, NULL);
}
