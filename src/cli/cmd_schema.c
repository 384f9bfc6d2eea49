/* cmd_schema.c - `sqlbus schema print|verify|migrate` (rules T7, T33). */
#include "cli.h"

#include <string.h>

enum { OPT_BACKEND = CLI_OPT_FIRST_LOCAL, OPT_STATEMENTS };

/* The backend a URL names, without connecting (for `schema print`). */
static const char *backend_of_url(const char *url)
{
    if (strncmp(url, "postgresql:", 11) == 0 ||
        strncmp(url, "postgres:", 9) == 0 ||
        strncmp(url, "odbc+postgresql:", 16) == 0)
        return "postgresql";
    if (strncmp(url, "mssql:", 6) == 0 || strncmp(url, "odbc:", 5) == 0)
        return "mssql";
    if (strchr(url, '=') != NULL)
        return "postgresql";
    return "sqlite";
}

/* Parse the flags; `print` (NULL for verify and migrate) gets --backend
 * and --statements. Returns CLI_OK, an exit code, or -1 after --help. */
static int parse(cli_ctx *ctx, int argc, char **argv, const char *usage,
                 const char **backend, int *statements)
{
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"statements", no_argument, NULL, OPT_STATEMENTS},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(usage, stdout); return -1;
        case OPT_STATEMENTS:
            if (statements == NULL)
                return cli_usage_error(ctx, "--statements is only for "
                                            "'schema print'");
            *statements = 1;
            break;
        case OPT_BACKEND:
            if (statements == NULL)
                return cli_usage_error(ctx,
                                       "--backend is only for 'schema "
                                       "print'; verify and migrate use --db");
            if (strcmp(optarg, "sqlite") != 0 &&
                strcmp(optarg, "postgresql") != 0 &&
                strcmp(optarg, "mssql") != 0)
                return cli_usage_error(ctx,
                                       "--backend must be sqlite, "
                                       "postgresql or mssql (got \"%s\")",
                                       optarg);
            *backend = optarg;
            break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    return CLI_OK;
}

/* One statement of --statements: its name, its text, a blank line. */
static void print_statement(const char *name, const char *sql, void *user)
{
    (void)user;
    size_t n = strlen(sql);
    printf("-- %s\n%s%s\n", name, sql, n > 0 && sql[n - 1] == '\n' ? "" : "\n");
}

static int schema_print(cli_ctx *ctx, int argc, char **argv)
{
    const char *backend = NULL;
    int statements = 0;
    int rc = parse(ctx, argc, argv, cli_usage_schema, &backend, &statements);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (backend == NULL) {
        rc = cli_check_db(ctx);
        if (rc != CLI_OK)
            return rc;
        backend = backend_of_url(cli_db_url(ctx));
    }
    /* The transport's, the channel's, the error store's, its durable
     * operations' (the table `sqlbus serve` uses). */
    int (*const walks[])(const char *, const char *, sb_statement_fn, void *,
                         sb_error *) = {
        sb_schema_statements, sb_channel_statements, sb_errors_statements,
        sb_operations_statements};
    int (*const parts[])(const char *, const char *, char **, sb_error *) = {
        sb_schema_sql, sb_channel_schema_sql, sb_errors_schema_sql,
        sb_operations_schema_sql};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char *sql = NULL;
        sb_error err;
        sb_error_clear(&err);
        int src = statements ? walks[i](backend, ctx->prefix, print_statement,
                                        NULL, &err)
                             : parts[i](backend, ctx->prefix, &sql, &err);
        if (src != SB_OK)
            return cli_report(src, &err);
        if (sql == NULL)
            continue;
        fputs(sql, stdout);
        if (sql[0] != '\0' && sql[strlen(sql) - 1] != '\n')
            fputc('\n', stdout);
        sb_free(sql);
    }
    return CLI_OK;
}

/* verify and migrate: open without touching the schema, then act. */
static int schema_check(cli_ctx *ctx, int argc, char **argv, int migrate)
{
    const char *unused = NULL;
    int rc = parse(ctx, argc, argv, cli_usage_schema, &unused, NULL);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_NONE, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src =
        migrate ? sb_schema_migrate(bus, &err) : sb_schema_verify(bus, &err);
    if (src == SB_OK) {
        printf("schema %s (%s, %s)\n", migrate ? "migrated and verified" : "ok",
               sb_backend_name(bus), cli_db_url(ctx));
    } else {
        rc = cli_report(src, &err);
        if ((src & 0xff) == SB_SCHEMA && !migrate)
            fputs("sqlbus: run 'sqlbus schema migrate' (or apply the "
                  "statement above) to fix it\n",
                  stderr);
    }
    sb_close(bus);
    return rc;
}

/* `sqlbus schema print|verify|migrate` (T33): returns an exit code (3 on a
 * missing or wrong schema). */
int cli_cmd_schema(cli_ctx *ctx, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(cli_usage_schema, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (strcmp(argv[1], "print") == 0) {
        ctx->cmd = "schema print";
        return schema_print(ctx, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "verify") == 0) {
        ctx->cmd = "schema verify";
        return schema_check(ctx, argc - 1, argv + 1, 0);
    }
    if (strcmp(argv[1], "migrate") == 0) {
        ctx->cmd = "schema migrate";
        return schema_check(ctx, argc - 1, argv + 1, 1);
    }
    return cli_usage_error(ctx,
                           "unknown schema command \"%s\" (print, "
                           "verify, migrate)",
                           argv[1]);
}
