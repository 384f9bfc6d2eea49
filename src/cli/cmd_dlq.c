/* cmd_dlq.c - `sqlbus dlq list|show|requeue|purge` (rule T32): the
 * subcommand table, the filter flags they share, and the two bulk
 * operations. */
#include "cli.h"

#include <string.h>

/* Shared flag parser of the dlq subcommands; pointers in `a` borrow from
 * argv. Returns CLI_OK, an exit code, or -1 after --help. */
int cli_dlq_parse(cli_ctx *ctx, int argc, char **argv, unsigned allowed,
                  const char *usage, cli_dlq_args *a)
{
    static const struct option longopts[] = {
        {"queue", required_argument, NULL, CLI_DLQ_QUEUE},
        {"older-than", required_argument, NULL, CLI_DLQ_OLDER},
        {"id", required_argument, NULL, CLI_DLQ_ID},
        {"limit", required_argument, NULL, CLI_DLQ_LIMIT},
        {"all", no_argument, NULL, CLI_DLQ_ALL},
        {"json", no_argument, NULL, CLI_DLQ_JSON},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->filter.size = sizeof a->filter;
    int c, rc = CLI_OK;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        if (c == 'h') {
            fputs(usage, stdout);
            return -1;
        }
        if (c < CLI_DLQ_QUEUE || c > CLI_DLQ_JSON ||
            !(allowed & (1u << (c - CLI_DLQ_QUEUE)))) {
            if (c == ':' || c == '?')
                return cli_bad_option(ctx, c, argv);
            return cli_usage_error(ctx, "option %s is not valid here",
                                   argv[optind - 1]);
        }
        int64_t v = 0;
        switch (c) {
        case CLI_DLQ_QUEUE:
            a->filter.failed_queue = optarg;
            rc = cli_check_queue(ctx, "--queue", optarg);
            break;
        case CLI_DLQ_OLDER:
            rc =
                cli_parse_duration(ctx, "--older-than", optarg, 1,
                                   3650LL * 86400000, &a->filter.older_than_ms);
            break;
        case CLI_DLQ_ID: a->filter.id = optarg; break;
        case CLI_DLQ_LIMIT:
            rc = cli_parse_int(ctx, "--limit", optarg, 1, 1000000, &v);
            a->filter.limit = (size_t)v;
            break;
        case CLI_DLQ_ALL: a->all = 1; break;
        case CLI_DLQ_JSON: a->json = 1; break;
        }
    }
    if (rc != CLI_OK)
        return rc;
    a->operands = argv + optind;
    a->noperands = argc - optind;
    return CLI_OK;
}

typedef int (*bulk_fn)(sb_bus *, const sb_dlq_filter *, sb_progress_fn, void *,
                       int64_t *, sb_error *);

/* requeue and purge: the same shape, different verbs. */
static int bulk(cli_ctx *ctx, int argc, char **argv, const char *usage,
                const char *verb, const char *done, bulk_fn fn)
{
    cli_dlq_args a;
    int rc = cli_dlq_parse(ctx, argc, argv,
                           CLI_DLQ_BIT(QUEUE) | CLI_DLQ_BIT(OLDER) |
                               CLI_DLQ_BIT(ID) | CLI_DLQ_BIT(ALL),
                           usage, &a);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (a.noperands > 0)
        return cli_usage_error(ctx,
                               "unexpected argument \"%s\" (use --id "
                               "ID to select one message)",
                               a.operands[0]);
    int filtered = a.filter.failed_queue != NULL ||
                   a.filter.older_than_ms > 0 || a.filter.id != NULL;
    if (!filtered && !a.all)
        return cli_usage_error(ctx,
                               "refusing to %s every dead-lettered "
                               "message: give --queue, --older-than or --id, "
                               "or --all",
                               verb);
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    cli_progress prog;
    cli_progress_begin(&prog, ctx, verb, -1);
    int64_t count = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = fn(bus, &a.filter, cli_progress_cb, &prog, &count, &err);
    cli_progress_end(&prog);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
        if (count > 0)
            cli_errorf("%s %lld message%s before the error", done,
                       (long long)count, count == 1 ? "" : "s");
    } else {
        printf("%s %lld message%s\n", done, (long long)count,
               count == 1 ? "" : "s");
    }
    sb_close(bus);
    return rc;
}

static int cmd_requeue(cli_ctx *ctx, int argc, char **argv)
{
    return bulk(ctx, argc, argv, cli_usage_dlq_requeue, "requeue", "requeued",
                sb_dlq_requeue);
}

static int cmd_purge(cli_ctx *ctx, int argc, char **argv)
{
    return bulk(ctx, argc, argv, cli_usage_dlq_purge, "purge", "purged",
                sb_dlq_purge);
}

/* `sqlbus dlq SUBCOMMAND ...`: dispatch to list, show, requeue or purge.
 * Returns an exit code. */
int cli_cmd_dlq(cli_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        const char *cmd;
        cli_cmd_fn fn;
    } subs[] = {{"list", "dlq list", cli_dlq_list},
                {"show", "dlq show", cli_dlq_show},
                {"requeue", "dlq requeue", cmd_requeue},
                {"purge", "dlq purge", cmd_purge}};
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(cli_usage_dlq, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(argv[1], subs[i].name) == 0) {
            ctx->cmd = subs[i].cmd;
            return subs[i].fn(ctx, argc - 1, argv + 1);
        }
    }
    return cli_usage_error(ctx,
                           "unknown dlq command \"%s\" (list, show, "
                           "requeue, purge)",
                           argv[1]);
}
