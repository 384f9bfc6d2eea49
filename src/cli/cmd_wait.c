/* cmd_wait.c - `sqlbus wait`: attach to a correlation id created
 * elsewhere and print its reply (rules C1 attach, C2, C25). */
#include "cli.h"

#include <string.h>

#define MAX_TIMEOUT_MS (7LL * 86400000)

typedef struct wait_opts {
    const char *correlation_id;
    int64_t timeout_ms;
    cli_until until; /* none: the first reply completes */
} wait_opts;

enum {
    OPT_CORRELATION_ID = CLI_OPT_FIRST_LOCAL,
    OPT_TIMEOUT,
    OPT_UNTIL,
    OPT_UNTIL_PREFIX
};

static int parse(cli_ctx *ctx, int argc, char **argv, wait_opts *o)
{
    static const struct option longopts[] = {
        {"correlation-id", required_argument, NULL, OPT_CORRELATION_ID},
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
            fputs(cli_usage_wait, stdout);
            return -1;
        case OPT_CORRELATION_ID:
            o->correlation_id = optarg;
            rc = cli_check_correlation_id(ctx, "--correlation-id", optarg);
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
    if (o->correlation_id == NULL)
        return cli_usage_error(ctx, "--correlation-id is required");
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"",
                               argv[optind]);
    return CLI_OK;
}

/* `sqlbus wait` (C25): exit 0 with the reply on stdout, 2 on an error
 * reply, 124 on timeout. */
int cli_cmd_wait(cli_ctx *ctx, int argc, char **argv)
{
    wait_opts o = {.timeout_ms = 30000};
    int rc = parse(ctx, argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
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
        int src = sb_attach(ch, o.correlation_id, &wo, &w, &err);
        if (src != SB_OK) {
            rc = cli_report(src, &err);
        } else {
            rc = cli_await(ctx, w);
            sb_waiter_free(w);
        }
    }
    sb_channel_close(ch);
    if (bus != NULL)
        sb_close(bus);
    return rc;
}
