/* handler.c - the handler `sqlbus work` gives the worker runtime: one
 * message runs the user's command once (rule T30); its exit status
 * decides ack or nak. */
#include "cli.h"

#include <stdatomic.h>
#include <string.h>

/* Lease lost: the row may already be another consumer's. */
#define ABORT_LEASE_LOST 1
/* A second signal: the user wants out now. */
#define ABORT_FORCED 2

/* Stdout is kept (up to this): it is the reply to a job that asks for
 * one (sb-reply-to, rule C23). */
#define MAX_STDOUT (16u * 1024 * 1024)

typedef struct abort_ctx {
    cli_work *work;
    sb_delivery *d;
} abort_ctx;

static int should_abort(void *user)
{
    abort_ctx *a = user;
    if (cli_signal_count() >= 2)
        return ABORT_FORCED;
    /* While stopping gracefully, cancellation means "stopping", and a
     * running handler is allowed to finish (bounded by --timeout). */
    if (atomic_load(&a->work->stopping) == 0 && sb_delivery_cancelled(a->d))
        return ABORT_LEASE_LOST;
    return 0;
}

/* Make `s` safe as a header / last_error value: valid UTF-8, no NUL. */
static void sanitize(char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80             ? 1
                     : (c & 0xe0) == 0xc0 ? 2
                     : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4
                                          : 0;
        if (c == 0 || len == 0 || len > n - i || !sb__utf8_valid(s + i, len)) {
            s[i++] = '?';
            continue;
        }
        i += len;
    }
}

/* A copy of text[span] (NUL-terminated, owned), or NULL. */
static char *copy_span(const char *text, sb_span span, const char *suffix)
{
    size_t extra = suffix != NULL ? strlen(suffix) : 0;
    char *out = sb__malloc(span.len + extra + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, text + span.off, span.len);
    if (extra > 0)
        memcpy(out + span.len, suffix, extra);
    out[span.len + extra] = '\0';
    return out;
}

/* A command that exited or was killed having printed a runtime's report
 * of an uncaught exception (Python, Java, .NET, Go, Node.js) on stderr:
 * record that exception, with the report as the stack trace, so the
 * error store groups it by exception type and first frame (E12). The
 * exit status stays visible as the trace's last line. 1 if recorded. */
static int fail_with_exception(sb_delivery *d, const cli_child_result *res,
                               const char *status_text)
{
    char type[256];
    sb_uncaught u;
    if (sb_find_uncaught(res->err_tail, res->err_len, &u) != 1)
        return 0;
    char trailer[300];
    snprintf(trailer, sizeof trailer, "\n--- %s ---", status_text);
    char *msg = copy_span(res->err_tail, u.message, NULL);
    char *trace = copy_span(res->err_tail, u.trace, trailer);
    int ok = msg != NULL && trace != NULL && u.type.len < sizeof type;
    if (ok) {
        memcpy(type, res->err_tail + u.type.off, u.type.len);
        type[u.type.len] = '\0';
        sb_delivery_fail(d, type, msg, trace);
    }
    sb__free(msg);
    sb__free(trace);
    return ok;
}

/* Record why the command failed; returns the handler's result. */
static int fail(sb_delivery *d, cli_child_result *res, const cli_work *w)
{
    char type[64];
    char fallback[256];
    const char *what = NULL;
    switch (res->outcome) {
    case CLI_CHILD_EXITED:
        snprintf(type, sizeof type, "exit:%d", res->status);
        snprintf(fallback, sizeof fallback,
                 "the command exited with "
                 "status %d",
                 res->status);
        break;
    case CLI_CHILD_SIGNALED:
        what = cli_signal_name(res->status);
        if (what != NULL)
            snprintf(type, sizeof type, "signal:%s", what);
        else
            snprintf(type, sizeof type, "signal:%d", res->status);
        snprintf(fallback, sizeof fallback, "the command was killed by %s",
                 type + 7);
        break;
    case CLI_CHILD_TIMEOUT:
        snprintf(type, sizeof type, "timeout");
        snprintf(fallback, sizeof fallback,
                 "the command ran longer than "
                 "%lld ms and was killed",
                 (long long)w->timeout_ms);
        break;
    case CLI_CHILD_ABORTED:
        if (res->abort_reason == ABORT_LEASE_LOST) {
            snprintf(type, sizeof type, "lease-lost");
            snprintf(fallback, sizeof fallback,
                     "the lease was lost; the "
                     "command was killed");
        } else {
            snprintf(type, sizeof type, "interrupted");
            snprintf(fallback, sizeof fallback,
                     "sqlbus work was "
                     "interrupted; the command was killed");
        }
        break;
    default: {
        char why[128] = "unknown error";
        strerror_r(res->status, why, sizeof why);
        snprintf(type, sizeof type, "spawn");
        snprintf(fallback, sizeof fallback, "cannot run \"%.80s\": %s",
                 w->argv[0], why);
        break;
    }
    }
    sanitize(res->err_tail, res->err_len);
    /* The final newline of the last line is not part of the message. */
    while (res->err_len > 0 && (res->err_tail[res->err_len - 1] == '\n' ||
                                res->err_tail[res->err_len - 1] == '\r'))
        res->err_tail[--res->err_len] = '\0';
    const char *msg = res->err_len > 0 && res->outcome != CLI_CHILD_SPAWN_FAILED
                          ? res->err_tail
                          : fallback;
    if (!((res->outcome == CLI_CHILD_EXITED ||
           res->outcome == CLI_CHILD_SIGNALED) &&
          fail_with_exception(d, res, fallback)))
        sb_delivery_fail(d, type, msg, NULL);
    if (w->ctx->verbosity >= 1) {
        const sb_msg *m = sb_delivery_msg(d);
        fprintf(stderr,
                "sqlbus: work: message %s attempt %d failed: %s "
                "(%lld ms)\n",
                sb_msg_id(m), sb_msg_attempts(m), type,
                (long long)res->elapsed_ms);
    }
    return SB_ERROR;
}

/* C23: the command's stdout is the reply the runtime sends when the
 * handler returns SB_OK. A reply that does not fit fails the message. */
static int set_reply(sb_delivery *d, const cli_child_result *res)
{
    char msg[256];
    if (res->out_truncated) {
        snprintf(msg, sizeof msg,
                 "the command's stdout is larger than "
                 "%u bytes and cannot be the reply",
                 MAX_STDOUT);
        sb_delivery_fail(d, "reply", msg, NULL);
        return SB_ERROR;
    }
    sb_error err;
    sb_error_clear(&err);
    /* res->out.data is NUL-terminated (or NULL when empty). */
    int rc = sb_delivery_reply(d, res->out.len > 0 ? res->out.data : NULL,
                               res->out.len, &err);
    if (rc != SB_OK) {
        sb_delivery_fail(d, "reply", err.message, NULL);
        return SB_ERROR;
    }
    return SB_OK;
}

/* T42: a line the command wrote to $SQLBUS_PROGRESS_FD is the message's
 * progress (and, for a request job, a progress reply to its waiter). One
 * that cannot be stored (not UTF-8) is skipped, with a line at -v. */
static void report_progress(void *user, const char *line, size_t len)
{
    abort_ctx *a = user;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_delivery_progress(a->d, line, len, &err);
    if (rc != SB_OK && rc != SB_LOST_LEASE && a->work->ctx->verbosity >= 1)
        fprintf(stderr, "sqlbus: work: message %s: progress not stored: %s\n",
                sb_msg_id(sb_delivery_msg(a->d)), err.message);
}

/* The sb_handler_fn of `sqlbus work`: runs the command for one delivery
 * and returns SB_OK to ack, or records the failure and returns SB_ERROR.
 * Runs on worker threads. */
int cli_work_handler(sb_delivery *d, void *user)
{
    cli_work *w = user;
    const sb_msg *m = sb_delivery_msg(d);
    char **envp = cli_env_for(m);
    if (envp == NULL) {
        sb_delivery_fail(d, "sqlbus",
                         "out of memory building the "
                         "environment",
                         NULL);
        return SB_NOMEM;
    }
    abort_ctx actx = {w, d};
    cli_child_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.argv = w->argv;
    spec.envp = envp;
    spec.input = sb_msg_payload(m, &spec.input_len);
    spec.timeout_ms = w->timeout_ms;
    spec.kill_grace_ms = w->kill_grace_ms;
    spec.max_stdout = MAX_STDOUT;
    spec.abort_fn = should_abort;
    spec.abort_user = &actx;
    spec.keeper_fd = w->keeper_fd;
    spec.progress_fn = report_progress;
    spec.progress_user = &actx;

    cli_child_result res;
    cli_child_run(&spec, &res);
    cli_env_free(envp);

    int rc;
    if (res.outcome == CLI_CHILD_EXITED && res.status == 0) {
        if (w->ctx->verbosity >= 2)
            fprintf(stderr,
                    "sqlbus: work: message %s done (%lld ms, "
                    "%zu bytes of output)\n",
                    sb_msg_id(m), (long long)res.elapsed_ms, res.out.len);
        rc = sb_msg_header(m, "sb-reply-to") != NULL ? set_reply(d, &res)
                                                     : SB_OK;
    } else {
        rc = fail(d, &res, w);
    }
    cli_child_result_free(&res);
    return rc;
}
