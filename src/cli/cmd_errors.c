/* cmd_errors.c - `sqlbus errors ingest|show` (rules E23, E24): one
 * ingestion pass over the dead-letter queue, and one failed message with
 * its groups and body. The other error-store commands come with their
 * operations. */
#include "cli.h"

#include <string.h>

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL };

/* Only global options and --json (when `json` is not NULL); the first
 * positional argument, if `arg` is not NULL. Returns CLI_OK, an exit
 * code, or -1 after --help. */
static int parse(cli_ctx *ctx, int argc, char **argv, const char *usage,
                 int *json, const char **arg)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON}, CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        if (c == 'h') {
            fputs(usage, stdout);
            return -1;
        }
        if (c == OPT_JSON && json != NULL) {
            *json = 1;
            continue;
        }
        return cli_bad_option(ctx, c, argv);
    }
    if (arg != NULL) {
        if (optind >= argc)
            return cli_usage_error(ctx, "the unique message id is required");
        *arg = argv[optind++];
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"",
                               argv[optind]);
    return CLI_OK;
}

static int open_store(cli_ctx *ctx, sb_bus **bus, sb_errors **store)
{
    int rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, bus);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_open(*bus, NULL, store, &err);
    if (src != SB_OK) {
        sb_close(*bus);
        return cli_report(src, &err);
    }
    return CLI_OK;
}

static int cmd_ingest(cli_ctx *ctx, int argc, char **argv)
{
    int json = 0;
    int rc = parse(ctx, argc, argv, cli_usage_errors_ingest, &json, NULL);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = open_store(ctx, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    sb_ingest_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_ingest(store, &s, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else if (json)
        printf("{\"batches\": %lld, \"rows\": %lld, \"messages\": %lld, "
               "\"failed_imports\": %lld, \"confirmations\": %lld}\n",
               (long long)s.batches, (long long)s.rows, (long long)s.messages,
               (long long)s.failed_imports, (long long)s.confirmations);
    else
        printf("ingested %lld dead-lettered rows into %lld failed messages "
               "(%lld failed imports, %lld retries confirmed)\n",
               (long long)s.rows, (long long)s.messages,
               (long long)s.failed_imports, (long long)s.confirmations);
    sb_errors_close(store);
    sb_close(bus);
    return rc;
}

static const char *const status_names[] = {"unresolved", "retry_issued",
                                           "resolved", "archived"};
static const char *const fields[] = {
    "message_id",   "message_type",   "failed_queue",      "processing_endpoint",
    "host",         "instance_id",    "exception_type",    "exception_message",
    "conversation_id"};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static void show_json(const sb_failed_message *m)
{
    printf("{\"unique_message_id\": ");
    cli_json_str(stdout, sb_failed_unique_id(m));
    printf(", \"status\": \"%s\", \"attempts\": %lld, "
           "\"first_time_of_failure_us\": %lld, "
           "\"last_time_of_failure_us\": %lld",
           status_names[sb_failed_status(m) & 3],
           (long long)sb_failed_attempts(m),
           (long long)sb_failed_first_failure_us(m),
           (long long)sb_failed_last_failure_us(m));
    for (size_t i = 0; i < N_FIELDS; i++) {
        const char *v = sb_failed_field(m, fields[i]);
        printf(", \"%s\": ", fields[i]);
        if (v == NULL)
            fputs("null", stdout);
        else
            cli_json_str(stdout, v);
    }
    fputs(", \"groups\": [", stdout);
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *id, *type, *title;
        sb_failed_group(m, i, &id, &type, &title);
        fputs(i ? ", {\"id\": " : "{\"id\": ", stdout);
        cli_json_str(stdout, id);
        fputs(", \"type\": ", stdout);
        cli_json_str(stdout, type);
        fputs(", \"title\": ", stdout);
        cli_json_str(stdout, title);
        fputs("}", stdout);
    }
    size_t len = 0;
    sb_failed_body(m, &len);
    printf("], \"body_size\": %zu, \"body_stored_externally\": %s, "
           "\"headers\": %s}\n",
           len, sb_failed_body_stored_externally(m) ? "true" : "false",
           sb_failed_headers(m) ? sb_failed_headers(m) : "{}");
}

static void show_text(const sb_failed_message *m)
{
    printf("unique id:  %s\nstatus:     %s\nattempts:   %lld\n",
           sb_failed_unique_id(m), status_names[sb_failed_status(m) & 3],
           (long long)sb_failed_attempts(m));
    for (size_t i = 0; i < N_FIELDS; i++) {
        const char *v = sb_failed_field(m, fields[i]);
        if (v != NULL)
            printf("%-11s %s\n", fields[i], v);
    }
    for (size_t i = 0; i < sb_failed_group_count(m); i++) {
        const char *type, *title;
        sb_failed_group(m, i, NULL, &type, &title);
        printf("group:      %s: %s\n", type, title);
    }
    size_t len = 0;
    sb_failed_body(m, &len);
    printf("body:       %zu bytes%s\n", len,
           sb_failed_body_stored_externally(m) ? " (body store)" : "");
}

static int cmd_show(cli_ctx *ctx, int argc, char **argv)
{
    int json = 0;
    const char *id = NULL;
    int rc = parse(ctx, argc, argv, cli_usage_errors_show, &json, &id);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = open_store(ctx, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    sb_failed_message *m = NULL;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_get(store, id, &m, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else if (json)
        show_json(m);
    else
        show_text(m);
    sb_failed_message_free(m);
    sb_errors_close(store);
    sb_close(bus);
    return rc;
}

/* `sqlbus errors ingest|show` (E24): returns an exit code. */
int cli_cmd_errors(cli_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        const char *cmd;
        cli_cmd_fn fn;
    } subs[] = {{"ingest", "errors ingest", cmd_ingest},
                {"show", "errors show", cmd_show}};
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(cli_usage_errors, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(argv[1], subs[i].name) == 0) {
            ctx->cmd = subs[i].cmd;
            return subs[i].fn(ctx, argc - 1, argv + 1);
        }
    }
    return cli_usage_error(ctx, "unknown errors command \"%s\" (ingest, "
                           "show)", argv[1]);
}
