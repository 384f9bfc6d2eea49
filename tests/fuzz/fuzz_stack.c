/*
 * fuzz_stack.c - libFuzzer target for the stack-frame parser and the
 * classifiers of the error store (rule E12): sb__stack_first_frame and
 * sb__classify.
 *
 * Input: the exception message, a NUL byte, then the stack trace (more
 * NULs may follow inside the trace). Without a NUL the whole input is the
 * trace and there is no message.
 *
 * Invariants: the trace is passed in an exact-size copy and every output
 * buffer is exactly `cap` bytes, so ASan sees any read past len or write
 * past cap; the output is NUL-terminated within cap, "" when no frame was
 * found, the same on a second call, free of control characters (tab
 * aside), valid UTF-8 when the trace is, and for every smaller cap the
 * longest prefix of the full output that ends on a character boundary.
 * Removing the message is checked against a naive search: the answer
 * equals the answer for the trace with each occurrence of ": " + message
 * (left to right, not overlapping) masked by a control byte and no
 * message. Classifier titles come in the fixed order, fit in 512 bytes,
 * and are the exception type plus the frame (or "No stacktrace").
 *
 * sb_find_uncaught on the whole input (message, NUL and trace as
 * one text): 0 or 1, the same twice; a report's spans lie inside the
 * text, the type and the message inside the trace, the type 1..255
 * bytes of "[A-Za-z0-9_$.+`]" not starting with a digit or '.' (or Go's
 * "panic" / "fatal error"), and no span holds a NUL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors/classify.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FULL_CAP 512

/* Call the parser with an exact-size output buffer of `cap` bytes;
 * *out is malloc'd (NULL when cap == 0). */
static int frame_at_cap(const char *trace, size_t len, const char *message,
                        size_t cap, char **out)
{
    *out = cap > 0 ? malloc(cap) : NULL;
    if (cap > 0) {
        CHECK(*out != NULL);
        memset(*out, 'Z', cap);
    }
    int rc = sb__stack_first_frame(trace, len, message, *out, cap);
    CHECK(rc == 0 || rc == 1);
    if (cap > 0) {
        CHECK(memchr(*out, '\0', cap) != NULL);
        if (rc == 0)
            CHECK((*out)[0] == '\0');
    }
    return rc;
}

/* Every byte is printable or a tab (control lines are never frames). */
static int printable(const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return 0;
    }
    return 1;
}

/* The longest prefix of s (length n) within `room` bytes that does not
 * end inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n, size_t room)
{
    if (n <= room)
        return n;
    while (room > 0 && ((unsigned char)s[room] & 0xc0) == 0x80)
        room--;
    return room;
}

static void check_caps(const char *trace, size_t len, const char *message,
                       int trace_utf8)
{
    char *full;
    int rc = frame_at_cap(trace, len, message, FULL_CAP, &full);
    size_t n = strlen(full);
    CHECK(rc == 0 || n > 0);
    CHECK(printable(full));
    if (trace_utf8)
        CHECK(sb__utf8_valid(full, n));

    char *again;
    CHECK(frame_at_cap(trace, len, message, FULL_CAP, &again) == rc);
    CHECK(strcmp(again, full) == 0);
    free(again);

    static const size_t caps[] = {0, 1, 2, 3, 4, 5, 8, 17, 64};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        char *out;
        CHECK(frame_at_cap(trace, len, message, caps[i], &out) == rc);
        if (caps[i] > 0) {
            size_t k = strlen(out);
            CHECK(k < caps[i]);
            CHECK(memcmp(out, full, k) == 0);
            if (n < caps[i])
                CHECK(k == n);
            if (trace_utf8)
                CHECK(k == utf8_cut(full, n, caps[i] - 1));
        }
        free(out);
    }
    free(full);
}

/* The same answer from the trace with every ": " + message masked and no
 * message: the two-way search agrees with a naive one. */
static void check_masked(const char *trace, size_t len, const char *message)
{
    size_t m = strlen(message);
    if (m == 0 || (m + 2) * len > 4u * 1024 * 1024)
        return;
    char *masked = malloc(len ? len : 1);
    CHECK(masked != NULL);
    memcpy(masked, trace, len);
    for (size_t p = 0; p + 2 + m <= len;) {
        if (trace[p] == ':' && trace[p + 1] == ' ' &&
            memcmp(trace + p + 2, message, m) == 0) {
            memset(masked + p + 2, '\x01', m);
            p += 2 + m;
        } else {
            p++;
        }
    }
    char *a, *b;
    int ra = frame_at_cap(trace, len, message, FULL_CAP, &a);
    int rb = frame_at_cap(masked, len, NULL, FULL_CAP, &b);
    CHECK(ra == rb);
    CHECK(strcmp(a, b) == 0);
    free(a);
    free(b);
    free(masked);
}

static void check_classify(const char *trace_text, const char *message)
{
    static const char type[] = "Fuzz.Error";
    sb_classify_input in = {.exception_type = type,
                            .exception_message = message,
                            .stack_trace = trace_text,
                            .message_type = "Fuzz.Message",
                            .failed_queue = trace_text,
                            .instance_id = "",
                            .endpoint_name = message};
    sb_group_title out[SB_CLASSIFIER_COUNT];
    memset(out, 'Z', sizeof out);
    size_t n = sb__classify(&in, out);
    int has_queue = trace_text[0] != '\0';
    int has_name = message != NULL && message[0] != '\0';
    CHECK(n == 2 + (size_t)has_queue + (size_t)has_name);
    for (size_t i = 0; i < SB_CLASSIFIER_COUNT; i++) {
        CHECK(memchr(out[i].title, '\0', sizeof out[i].title) != NULL);
        if (i >= n)
            CHECK(out[i].classifier == NULL && out[i].title[0] == '\0');
    }

    char frame[FULL_CAP];
    size_t tlen = strlen(trace_text);
    int rc =
        sb__stack_first_frame(trace_text, tlen, message, frame, sizeof frame);
    const char *rest = rc ? frame : "No stacktrace";
    size_t head = strlen(type) + 2;
    CHECK(strcmp(out[0].classifier, SB_CLASSIFIER_EXCEPTION) == 0);
    CHECK(strncmp(out[0].title, "Fuzz.Error: ", head) == 0);
    CHECK(strncmp(out[0].title + head, rest, strlen(out[0].title) - head) == 0);
    if (head + strlen(rest) < sizeof out[0].title)
        CHECK(strcmp(out[0].title + head, rest) == 0);

    CHECK(strcmp(out[1].classifier, SB_CLASSIFIER_MESSAGE_TYPE) == 0);
    CHECK(strcmp(out[1].title, "Fuzz.Message") == 0);
    size_t i = 2;
    if (has_queue) {
        CHECK(strcmp(out[i].classifier, SB_CLASSIFIER_ENDPOINT_ADDRESS) == 0);
        size_t k = strlen(out[i].title);
        CHECK(memcmp(out[i].title, trace_text, k) == 0);
        if (sb__utf8_valid(trace_text, tlen))
            CHECK(k == utf8_cut(trace_text, tlen, sizeof out[i].title - 1));
        i++;
    }
    if (has_name) {
        CHECK(strcmp(out[i].classifier, SB_CLASSIFIER_ENDPOINT_NAME) == 0);
        size_t k = strlen(out[i].title);
        CHECK(strncmp(out[i].title, message, k) == 0);
    }
}

static int inside(sb_span in, sb_span out)
{
    return in.off >= out.off && in.len <= out.len &&
           in.off - out.off <= out.len - in.len;
}

static void check_uncaught(const uint8_t *data, size_t size)
{
    /* Exact size, so a read past size is caught. */
    char *text = malloc(size ? size : 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    sb_uncaught u, again;
    int rc = sb_find_uncaught(text, size, &u);
    CHECK(rc == 0 || rc == 1);
    CHECK(sb_find_uncaught(text, size, &again) == rc);
    if (rc == 1) {
        CHECK(memcmp(&u, &again, sizeof u) == 0);
        sb_span all = {0, size};
        CHECK(inside(u.trace, all));
        CHECK(inside(u.type, u.trace));
        CHECK(inside(u.message, u.trace));
        CHECK(u.type.len >= 1 && u.type.len <= 255);
        int go =
            (u.type.len == 5 && memcmp(text + u.type.off, "panic", 5) == 0) ||
            (u.type.len == 11 &&
             memcmp(text + u.type.off, "fatal error", 11) == 0);
        for (size_t i = 0; i < u.type.len && !go; i++) {
            char c = text[u.type.off + i];
            CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.' ||
                  c == '+' || c == '`');
        }
        char c0 = text[u.type.off];
        CHECK(!(c0 >= '0' && c0 <= '9') && c0 != '.');
        CHECK(memchr(text + u.trace.off, '\0', u.trace.len) == NULL);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_uncaught(data, size);

    const uint8_t *nul = memchr(data, '\0', size);
    size_t msg_len = nul != NULL ? (size_t)(nul - data) : 0;
    size_t start = nul != NULL ? msg_len + 1 : 0;
    size_t len = size - start;

    char *message = NULL;
    if (nul != NULL) {
        message = malloc(msg_len + 1);
        if (message == NULL)
            return 0;
        memcpy(message, data, msg_len);
        message[msg_len] = '\0';
    }
    /* Exact size, so a read past len is caught. */
    char *trace = malloc(len ? len : 1);
    char *text = malloc(len + 1);
    if (trace == NULL || text == NULL) {
        free(message);
        free(trace);
        free(text);
        return 0;
    }
    memcpy(trace, data + start, len);
    memcpy(text, data + start, len);
    text[len] = '\0';

    int trace_utf8 = sb__utf8_valid(trace, len);
    check_caps(trace, len, message, trace_utf8);
    if (message != NULL)
        check_masked(trace, len, message);
    check_classify(text, message);

    free(message);
    free(trace);
    free(text);
    return 0;
}
