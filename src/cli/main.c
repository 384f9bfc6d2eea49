/* main.c - the `sqlbus` program: global options and the subcommand
 * table. The only place in the program that exits. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const cli_command commands[] = {
    {"publish", "publish a message, or one per line with --lines",
     cli_usage_publish, cli_cmd_publish},
    {"work", "run a command once per message of a queue", cli_usage_work,
     cli_cmd_work},
    {"queues", "list queues with their counts", cli_usage_queues,
     cli_cmd_queues},
    {"dlq", "inspect, requeue and purge dead-lettered messages", cli_usage_dlq,
     cli_cmd_dlq},
    {"schema", "print, verify or migrate the database schema", cli_usage_schema,
     cli_cmd_schema},
    {"request", "publish a job and print its reply", cli_usage_request,
     cli_cmd_request},
    {"respond", "send a reply (or an error reply) to a correlation id",
     cli_usage_respond, cli_cmd_respond},
    {"wait", "wait for the reply to a correlation id", cli_usage_wait,
     cli_cmd_wait},
    {"recovery", "list recovery registrations; count the stale ones",
     cli_usage_recovery, cli_cmd_recovery},
    {"errors",
     "the error store: ingest, list, search, retry, archive, "
     "import failed messages",
     cli_usage_errors, cli_cmd_errors},
    {"serve", "serve the HTTP API, the dashboard and metrics", cli_usage_serve,
     cli_cmd_serve},
    {"schedule", "periodic jobs: add, list, remove; run the scheduler",
     cli_usage_schedule, cli_cmd_schedule},
};

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_main_usage(FILE *f)
{
    fputs(cli_usage_main, f);
    fputs("\nCommands:\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fputs("  help      show help for a command (sqlbus help work)\n"
          "\nRun 'sqlbus COMMAND --help' for the options of a command.\n",
          f);
}

/* `sqlbus help [COMMAND [SUBCOMMAND]]`. */
static int run_help(int argc, char **argv)
{
    if (argc < 2) {
        print_main_usage(stdout);
        return CLI_OK;
    }
    const cli_command *c = find_command(argv[1]);
    if (c == NULL) {
        cli_errorf("no command \"%s\" (run 'sqlbus --help' for the list)",
                   argv[1]);
        return CLI_USAGE;
    }
    static const struct {
        const char *cmd;
        const char *name;
        const char *text;
    } subs[] = {{"dlq", "list", cli_usage_dlq_list},
                {"dlq", "show", cli_usage_dlq_show},
                {"dlq", "requeue", cli_usage_dlq_requeue},
                {"dlq", "purge", cli_usage_dlq_purge},
                {"recovery", "list", cli_usage_recovery_list},
                {"recovery", "watchdog", cli_usage_recovery_watchdog},
                {"errors", "ingest", cli_usage_errors_ingest},
                {"errors", "show", cli_usage_errors_show},
                {"errors", "list", cli_usage_errors_list},
                {"errors", "search", cli_usage_errors_search},
                {"errors", "body", cli_usage_errors_body},
                {"errors", "groups", cli_usage_errors_groups},
                {"errors", "retry", cli_usage_errors_retry},
                {"errors", "archive", cli_usage_errors_archive},
                {"errors", "unarchive", cli_usage_errors_unarchive},
                {"errors", "resolve", cli_usage_errors_resolve},
                {"errors", "edit", cli_usage_errors_edit},
                {"errors", "redirect", cli_usage_errors_redirect},
                {"errors", "import", cli_usage_errors_import},
                {"errors", "reimport", cli_usage_errors_reimport}};
    for (size_t i = 0; argc >= 3 && i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(subs[i].cmd, c->name) == 0 &&
            strcmp(subs[i].name, argv[2]) == 0) {
            fputs(subs[i].text, stdout);
            return CLI_OK;
        }
    }
    fputs(c->usage, stdout);
    return CLI_OK;
}

enum { OPT_VERSION = CLI_OPT_FIRST_LOCAL };

/* Parse the options before the command name. Returns -1 to continue,
 * otherwise an exit code. */
static int parse_globals(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_GLOBAL_LONGOPTS,
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORTOPTS, opts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': print_main_usage(stdout); return CLI_OK;
        case OPT_VERSION:
            printf("sqlbus %s\n", SB_VERSION_STRING);
            return CLI_OK;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    cli_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.cmd = NULL;

    int rc = parse_globals(&ctx, argc, argv);
    if (rc >= 0)
        return rc;
    if (optind >= argc) {
        print_main_usage(stderr);
        return CLI_USAGE;
    }
    int first = optind;
    const char *name = argv[first];
    if (strcmp(name, "help") == 0)
        return run_help(argc - first, argv + first);

    const cli_command *cmd = find_command(name);
    if (cmd == NULL) {
        cli_errorf("unknown command \"%s\" (run 'sqlbus --help' for the "
                   "list)",
                   name);
        return CLI_USAGE;
    }
    ctx.cmd = cmd->name;

    /* `work` stops gracefully on the first signal and kills its handler
     * commands on the second; other commands stop at their next safe
     * point on the first. The next one terminates the program. */
    int is_work = strcmp(cmd->name, "work") == 0;
    if (cli_signals_start(is_work ? 2 : 1) != 0)
        return CLI_ERROR;

    rc = cmd->run(&ctx, argc - first, argv + first);
    if (fflush(stdout) != 0 && rc == CLI_OK) {
        cli_errorf("cannot write the output");
        rc = CLI_ERROR;
    }
    if (!is_work && !ctx.signal_stops && cli_first_signal() != 0)
        rc = CLI_INTERRUPTED;
    if (ctx.abandoned) {
        fflush(stderr);
        _Exit(rc);
    }
    exit(rc);
}
