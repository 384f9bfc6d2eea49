/* await.c - what `request`, `respond` and `wait` share: opening the
 * channel and waiting for a reply while staying interruptible (rules C4,
 * C6, C25). The reply is printed byte for byte. */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/* Open the channel with the library's defaults; prints the error. */
int cli_open_channel(sb_bus *bus, sb_channel **out)
{
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_channel_open(bus, NULL, out, &err);
    if (rc != SB_OK) {
        *out = NULL;
        return cli_report(rc, &err);
    }
    return CLI_OK;
}

#define MAX_TIMEOUT_MS (7LL * 86400000)

enum {
    OPT_KEY = CLI_OPT_FIRST_LOCAL,
    OPT_TIMEOUT,
    OPT_UNTIL,
    OPT_UNTIL_PREFIX
};

int cli_parse_await(cli_ctx *ctx, int argc, char **argv,
                    const cli_await_spec *spec, cli_await_opts *o)
{
    const struct option longopts[] = {
        {spec->key_flag + 2, required_argument, NULL, OPT_KEY},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"until", required_argument, NULL, OPT_UNTIL},
        {"until-prefix", required_argument, NULL, OPT_UNTIL_PREFIX},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(spec->usage, stdout); return -1;
        case OPT_KEY:
            o->key = optarg;
            rc = spec->check(ctx, spec->key_flag, optarg);
            break;
        case OPT_TIMEOUT:
            rc = cli_parse_duration(ctx, "--timeout", optarg, 1, MAX_TIMEOUT_MS,
                                    &o->timeout_ms);
            break;
        case OPT_UNTIL: rc = cli_until_set_expr(ctx, optarg, &o->until); break;
        case OPT_UNTIL_PREFIX:
            rc = cli_until_set_prefix(ctx, optarg, &o->until);
            break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (o->key == NULL)
        return cli_usage_error(ctx, "%s is required", spec->key_flag);
    if (spec->takes_file && optind < argc)
        o->file = argv[optind++];
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"%s",
                               argv[optind],
                               spec->takes_file ? " (request reads one "
                                                  "FILE or stdin)"
                                                : "");
    return CLI_OK;
}

/* Write all of `n` bytes to `f`; 0 or -1. */
static int write_all(FILE *f, const void *p, size_t n)
{
    return n == 0 || fwrite(p, 1, n, f) == n ? 0 : -1;
}

/* A progress reply (C2): its bytes on stderr, ending with a newline. */
static void print_progress(const sb_reply *r)
{
    size_t len = 0;
    const char *data = sb_reply_data(r, &len);
    if (write_all(stderr, data, len) == 0 &&
        (len == 0 || data[len - 1] != '\n'))
        fputc('\n', stderr);
    fflush(stderr);
}

/* The outcome of the wait as an exit code; prints what it says. */
static int report_outcome(int rc, sb_reply *r, const sb_error *err)
{
    if (rc == SB_OK) {
        size_t len = 0;
        const void *data = r != NULL ? sb_reply_data(r, &len) : NULL;
        if (write_all(stdout, data, len) != 0) {
            cli_errorf("cannot write the reply: %s", strerror(errno));
            return CLI_ERROR;
        }
        return CLI_OK;
    }
    if (rc == SB_REPLY_ERROR && r != NULL) {
        const char *type = sb_reply_error_type(r);
        const char *msg = sb_reply_error_message(r);
        const char *detail = sb_reply_error_detail(r);
        fprintf(stderr, "%s: %s\n", type ? type : "error", msg ? msg : "");
        if (detail != NULL && detail[0] != '\0')
            fprintf(stderr, "%s\n", detail);
        return CLI_REPLY_ERROR;
    }
    if (rc == SB_TIMEOUT) {
        cli_errorf("no reply within the timeout (--timeout)");
        return CLI_TIMEOUT;
    }
    if (rc == SB_INDETERMINATE) {
        cli_errorf("the outcome is unknown: a reply may have been consumed "
                   "while the wait was cancelled");
        return CLI_ERROR;
    }
    return cli_report(rc, err);
}

/* Poll the waiter's eventfd and the signal pipe; take replies as they
 * come (C6). Returns an exit code. */
int cli_await(const cli_ctx *ctx, sb_waiter *w)
{
    (void)ctx;
    struct pollfd p[2] = {{.fd = sb_waiter_fd(w), .events = POLLIN},
                          {.fd = cli_signal_fd(), .events = POLLIN}};
    int cancelled = 0;
    for (;;) {
        /* A signal cancels the wait; the outcome (SB_CLOSED if the
         * cancellation won, else the reply that beat it) is taken below.
         * main turns the exit code into 130 either way. */
        if (!cancelled && cli_signal_count() > 0) {
            cancelled = 1;
            sb_waiter_cancel(w);
        }
        sb_reply *r = NULL;
        sb_error err;
        sb_error_clear(&err);
        int rc = sb_waiter_take(w, &r, &err);
        if (rc == SB_EMPTY) {
            /* A timeout bounds the poll in case a wakeup is missed. */
            if (poll(p, 2, 1000) < 0 && errno != EINTR) {
                cli_errorf("poll: %s", strerror(errno));
                return CLI_ERROR;
            }
            continue;
        }
        if (rc == SB_OK && !sb_waiter_done(w)) {
            print_progress(r);
            sb_reply_free(r);
            continue;
        }
        if (rc == SB_CLOSED && cancelled)
            return CLI_INTERRUPTED;
        int code = report_outcome(rc, r, &err);
        sb_reply_free(r);
        return code;
    }
}
