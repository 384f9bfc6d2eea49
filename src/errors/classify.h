/*
 * classify.h - the five failure classifiers of the error store (rule E12)
 * and the stack-frame parser behind the first of them. Pure functions: no
 * I/O, no allocation, no shared state; all thread-safe.
 */
#ifndef SB_CLASSIFY_H
#define SB_CLASSIFY_H

#include "core/core.h"

/* Classifier names, in the order sb__classify reports them. They are the
 * group `type` values of the API, so they never change. */
#define SB_CLASSIFIER_EXCEPTION "Exception Type and Stack Trace"
#define SB_CLASSIFIER_MESSAGE_TYPE "Message Type"
#define SB_CLASSIFIER_ENDPOINT_ADDRESS "Endpoint Address"
#define SB_CLASSIFIER_ENDPOINT_INSTANCE "Endpoint Instance"
#define SB_CLASSIFIER_ENDPOINT_NAME "Endpoint Name"
#define SB_CLASSIFIER_COUNT 5

/* What the classifiers read of a failed message's newest attempt. Every
 * field is borrowed, NUL-terminated, and may be NULL (same as ""). */
typedef struct sb_classify_input {
    const char *exception_type, *exception_message, *stack_trace, *message_type,
        *failed_queue, *instance_id, *endpoint_name;
} sb_classify_input;

/* One classification: `classifier` points at one of the SB_CLASSIFIER_*
 * names (static storage), `title` is the group title. */
typedef struct sb_group_title {
    const char *classifier;
    char title[512];
} sb_group_title;

/*
 * Run the five classifiers on `in` and fill out[0..n) with the non-empty
 * classifications, in the fixed order of the SB_CLASSIFIER_* names; returns
 * n (0..5). Entries from n on get a NULL classifier and an empty title.
 *
 *   Exception Type and Stack Trace  none without an exception type;
 *       "<type>: <frame>" with the frame of sb__stack_first_frame, or
 *       "<type>: No stacktrace" when there is no trace or no frame in it.
 *   Message Type       the message type.
 *   Endpoint Address   the failed queue.
 *   Endpoint Instance  the instance id.
 *   Endpoint Name      the endpoint name.
 *
 * An empty or NULL field gives no classification. Titles longer than 511
 * bytes are cut on a UTF-8 character boundary. Linear in the input sizes.
 */
size_t sb__classify(const sb_classify_input *in,
                    sb_group_title out[SB_CLASSIFIER_COUNT]);

/*
 * The site that threw, from a stack trace of `len` bytes (need not be
 * NUL-terminated; NUL bytes are ordinary bytes): 1 if a frame was found,
 * else 0. With cap > 0, `out` receives the frame NUL-terminated, cut on a
 * UTF-8 boundary to at most cap - 1 bytes ("" when none was found); with
 * cap == 0 nothing is written and `out` may be NULL.
 *
 * Addresses, offsets, file names, line and column numbers are dropped so
 * one failure site groups across builds:
 *   .NET   "   at Ns.Type.Method(T a, U b) in /src/F.cs:line 42"
 *            -> "Ns.Type.Method(T a, U b)"
 *   Mono   "  at Ns.Type.Method (System.String s) [0x0001c] in <0a1b>:0"
 *            -> "Ns.Type.Method(System.String s)"
 *   Java   "\tat java.base/java.lang.Thread.run(Thread.java:833)"
 *            -> "java.lang.Thread.run"
 *   JS     "    at async Orders.place (/app/orders.js:12:5)"
 *            -> "Orders.place"; "    at /app/x.js:3:1" -> "<anonymous>"
 *   Go     "main.(*Server).handle(0xc000010000, {0x4b2f60, 0x5})"
 *            -> "main.(*Server).handle"
 *   Python "  File \"/app/orders.py\", line 3, in place" -> "orders.place"
 *   C      "./app(place_order+0x1d) [0x4005d4]" -> "app(place_order)"
 *
 * Which frame:
 *   - The first frame line of the trace; white space inside a parameter
 *     list is squeezed to single spaces.
 *   - .NET/Mono inner exceptions: the header (the lines before the first
 *     frame) names each inner exception after " ---> ", and the inner
 *     frames come first, each inner trace closed by "--- End of inner
 *     exception stack trace ---". The outermost exception threw at the
 *     first frame after as many end markers as the header has arrows; a
 *     trace cut short gives the first frame after the last end marker.
 *   - Java "Caused by:" traces follow the top exception's, so the first
 *     frame is the top exception's.
 *   - Python: the last "File" entry of the last "Traceback (most recent
 *     call last):" block (chained tracebacks end with the one raised
 *     last), as the file's base name without ".py", a dot and the
 *     function: "orders.place", "<stdin>.<module>".
 *   - Go: from the first "goroutine N [...]:" line, the first function
 *     that is not "panic" or in package runtime; arguments are dropped.
 *   - JS: "async " and " [as alias]" are dropped, "new X" is kept, a frame
 *     without a function name is "<anonymous>".
 *   - C backtrace_symbols: the binary's base name and the symbol without
 *     its offset. Frames of the C library (libc, ld-linux, linux-vdso:
 *     signal trampolines, abort, raise, __libc_start_main) and symbols
 *     containing "backtrace" (the dumping helper itself) are skipped; a
 *     frame without a symbol is used, as "app(?)", only when no frame has
 *     one.
 *   - "at" frames (.NET, Mono, Java, JS) must be indented, as every
 *     runtime prints them.
 *
 * The exception message is removed first, because a trace that starts
 * with the exception's ToString() repeats it, and a message may hold lines
 * that look like frames. `exception_message` (may be NULL or "") is looked
 * for after ": ", as the runtimes print it ("System.Exception: text",
 * "ValueError: text"); every such occurrence, found left to right without
 * overlapping, becomes a hole. A line holding a hole, a NUL or another
 * control character (tab and a final CR aside) is never a frame or a
 * header line; " ---> " is still counted outside the holes.
 *
 * Runs in time linear in len plus the message length on any input (the
 * message search is Crochemore-Perrin two-way, no regular expressions),
 * reads no byte outside trace[0..len), and allocates nothing.
 */
int sb__stack_first_frame(const char *trace, size_t len,
                          const char *exception_message, char *out, size_t cap);

/* sb_find_uncaught (include/sqlbus.h) lives in stack.c beside the frame
 * parser whose line and frame matchers it shares. */

#endif
