/* cmd_request.c - `sqlbus request`: publish a job that asks for a reply
 * and print the reply (rules C23, C25). */
#include "cli.h"

#include <string.h>

#define MAX_TIMEOUT_MS (7LL * 86400000)

typedef struct req_opts {
    const char *queue;
    int64_t timeout_ms;
    cli_until until; /* none: the first reply completes */
    const char *file;
} req_opts;

enum {
    OPT_QUEUE = CLI_OPT_FIRST_LOCAL,
    OPT_TIMEOUT,
    OPT_UNTIL,
    OPT_UNTIL_PREFIX
};

static int parse(cli_ctx *ctx, int argc, char **argv, req_opts *o)
{
    static const struct option longopts[] = {
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"until", required_argument, NULL, OPT_UNTIL},
        {"until-prefix", required_argument, NULL, OPT_UNTIL_PREFIX},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK && (c = getopt_long(argc, argv,
                                            ":" CLI_GLOBAL_SHORTOPTS,
                                            longopts, NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h':
            fputs(cli_usage_request, stdout);
            return -1;
        case OPT_QUEUE:
            o->queue = optarg;
            rc = cli_check_queue(ctx, "--queue", optarg);
            break;
        case OPT_TIMEOUT:
            rc = cli_parse_duration(ctx, "--timeout", optarg, 1,
                                    MAX_TIMEOUT_MS, &o->timeout_ms);
            break;
        case OPT_UNTIL:
            rc = cli_until_set_expr(ctx, optarg, &o->until);
            break;
        case OPT_UNTIL_PREFIX:
            rc = cli_until_set_prefix(ctx, optarg, &o->until);
            break;
        default:
            return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (o->queue == NULL)
        return cli_usage_error(ctx, "--queue is required");
    if (optind < argc)
        o->file = argv[optind++];
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\" (request "
                               "reads one FILE or stdin)", argv[optind]);
    return CLI_OK;
}

/* `sqlbus request` (C25): exit 0 with the reply on stdout, 2 on an error
 * reply, 124 on timeout. */
int cli_cmd_request(cli_ctx *ctx, int argc, char **argv)
{
    req_opts o = {.timeout_ms = 30000};
    int rc = parse(ctx, argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_buf body;
    rc = cli_read_payload(o.file, &body);
    if (rc != CLI_OK) {
        sb__buf_free(&body);
        return rc;
    }
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc == CLI_OK)
        rc = cli_open_channel(bus, &ch);
    if (rc == CLI_OK) {
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.timeout_ms = o.timeout_ms;
        cli_until_apply(&o.until, &wo);
        sb_error err;
        sb_error_clear(&err);
        sb_waiter *w = NULL;
        int src = sb_request_job(ch, o.queue, body.data, body.len, &wo, &w,
                                 &err);
        if (src != SB_OK) {
            rc = cli_report(src, &err);
        } else {
            if (ctx->verbosity >= 1)
                cli_notef(ctx, "request: waiting for the reply to %s",
                          sb_waiter_correlation_id(w));
            rc = cli_await(ctx, w);
            sb_waiter_free(w);
        }
    }
    sb_channel_close(ch);
    if (bus != NULL)
        sb_close(bus);
    sb__buf_free(&body);
    return rc;
}
