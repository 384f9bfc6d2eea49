/* cmd_errors.c - `sqlbus errors` (rules E23, E24): the subcommand table,
 * opening the store, `ingest` (one pass, or --follow until a signal) and
 * `show`. Queries live in errors_query.c, the selection operations in
 * errors_ops.c, edit in errors_edit.c, redirects in errors_redirect.c,
 * import and reimport in errors_import.c. */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL, OPT_FOLLOW, OPT_INTERVAL };

static const char *const status_names[] = {"unresolved", "retry_issued",
                                           "resolved", "archived"};

/* See cli.h. */
const char *cli_errors_status_name(int status)
{
    return status >= 0 && status <= 3 ? status_names[status] : "unknown";
}

/* See cli.h. */
int cli_errors_status_parse(const char *name)
{
    if (strcmp(name, "any") == 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(name, status_names[i]) == 0)
            return i;
    return -2;
}

/* See cli.h. */
int cli_errors_open(const cli_ctx *ctx, int allow_edit, sb_bus **bus,
                    sb_errors **store)
{
    *store = NULL;
    int rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, bus);
    if (rc != CLI_OK)
        return rc;
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.allow_edit = allow_edit;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_open(*bus, &o, store, &err);
    if (src != SB_OK) {
        sb_close(*bus);
        *bus = NULL;
        return cli_report(src, &err);
    }
    return CLI_OK;
}

/* See cli.h. */
void cli_errors_close(sb_bus *bus, sb_errors *store)
{
    sb_errors_close(store);
    sb_close(bus);
}

/* See cli.h. */
int cli_errors_parse_plain(cli_ctx *ctx, int argc, char **argv,
                           const char *usage, int *json, const char **arg,
                           const char *arg_name)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        CLI_GLOBAL_LONGOPTS,
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
            return cli_usage_error(ctx, "%s is required", arg_name);
        *arg = argv[optind++];
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    return CLI_OK;
}

typedef struct ingest_opts {
    int json;
    int follow;
    int64_t interval_ms;
} ingest_opts;

static int parse_ingest(cli_ctx *ctx, int argc, char **argv, ingest_opts *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"follow", no_argument, NULL, OPT_FOLLOW},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK, interval = 0;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_errors_ingest, stdout); return -1;
        case OPT_JSON: o->json = 1; break;
        case OPT_FOLLOW: o->follow = 1; break;
        case OPT_INTERVAL:
            interval = 1;
            rc = cli_parse_duration(ctx, "--interval", optarg, 10, 3600000,
                                    &o->interval_ms);
            break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    if (interval && !o->follow)
        return cli_usage_error(ctx, "--interval needs --follow");
    return CLI_OK;
}

static void print_stats(const sb_ingest_stats *s, int json)
{
    if (json)
        printf("{\"batches\": %lld, \"rows\": %lld, \"messages\": %lld, "
               "\"failed_imports\": %lld, \"confirmations\": %lld}\n",
               (long long)s->batches, (long long)s->rows,
               (long long)s->messages, (long long)s->failed_imports,
               (long long)s->confirmations);
    else
        printf("ingested %lld dead-lettered rows into %lld failed messages "
               "(%lld failed imports, %lld retries confirmed)\n",
               (long long)s->rows, (long long)s->messages,
               (long long)s->failed_imports, (long long)s->confirmations);
}

/* Sleep up to `ms`, waking early when a signal arrives. */
static void nap(int64_t ms)
{
    struct pollfd p = {.fd = cli_signal_fd(), .events = POLLIN};
    int64_t until = sb__mono_us() + ms * 1000;
    for (;;) {
        int64_t left = (until - sb__mono_us()) / 1000;
        if (left <= 0 || cli_signal_count() > 0)
            return;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return;
    }
}

/* --follow: a pass, then a nap, until SIGINT/SIGTERM; a line (or JSON
 * line) per pass that did something, a total on stderr at the end. A
 * signal is the normal way to stop (exit 0); a pass under way finishes
 * first (its batches are transactions either way). */
static int follow(const cli_ctx *ctx, sb_errors *store, const ingest_opts *o)
{
    sb_ingest_stats total;
    memset(&total, 0, sizeof total);
    int64_t passes = 0;
    while (cli_signal_count() == 0) {
        sb_ingest_stats s;
        memset(&s, 0, sizeof s);
        s.size = sizeof s;
        sb_error err;
        sb_error_clear(&err);
        int src = sb_errors_ingest(store, &s, &err);
        passes++;
        total.batches += s.batches;
        total.rows += s.rows;
        total.messages += s.messages;
        total.failed_imports += s.failed_imports;
        total.confirmations += s.confirmations;
        if (s.rows > 0 || s.confirmations > 0) {
            print_stats(&s, o->json);
            fflush(stdout);
        }
        if (src != SB_OK) {
            int rc = cli_exit_code(src);
            /* A database that went away comes back: keep following. */
            if (rc != CLI_UNAVAILABLE)
                return cli_report(src, &err);
            cli_report(src, &err);
        }
        nap(o->interval_ms);
    }
    cli_notef(ctx,
              "stopped after %lld passes: %lld dead-lettered rows into "
              "%lld failed messages (%lld failed imports, %lld retries "
              "confirmed)",
              (long long)passes, (long long)total.rows,
              (long long)total.messages, (long long)total.failed_imports,
              (long long)total.confirmations);
    return CLI_OK;
}

static int cmd_ingest(cli_ctx *ctx, int argc, char **argv)
{
    ingest_opts o = {0, 0, 1000};
    int rc = parse_ingest(ctx, argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    if (o.follow) {
        ctx->signal_stops = 1;
        rc = follow(ctx, store, &o);
    } else {
        sb_ingest_stats s;
        memset(&s, 0, sizeof s);
        s.size = sizeof s;
        sb_error err;
        sb_error_clear(&err);
        int src = sb_errors_ingest(store, &s, &err);
        if (src != SB_OK)
            rc = cli_report(src, &err);
        else
            print_stats(&s, o.json);
    }
    cli_errors_close(bus, store);
    return rc;
}

static const char *const fields[] = {
    "message_id",     "message_type", "failed_queue",   "processing_endpoint",
    "host",           "instance_id",  "exception_type", "exception_message",
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
    int rc = cli_errors_parse_plain(ctx, argc, argv, cli_usage_errors_show,
                                    &json, &id, "the unique message id");
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
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
    cli_errors_close(bus, store);
    return rc;
}

/* `sqlbus errors SUBCOMMAND ...` (E24): returns an exit code. */
int cli_cmd_errors(cli_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        const char *cmd;
        cli_cmd_fn fn;
    } subs[] = {{"ingest", "errors ingest", cmd_ingest},
                {"list", "errors list", cli_errors_list},
                {"show", "errors show", cmd_show},
                {"body", "errors body", cli_errors_body},
                {"groups", "errors groups", cli_errors_groups},
                {"search", "errors search", cli_errors_search},
                {"retry", "errors retry", cli_errors_retry},
                {"archive", "errors archive", cli_errors_archive},
                {"unarchive", "errors unarchive", cli_errors_unarchive},
                {"resolve", "errors resolve", cli_errors_resolve},
                {"edit", "errors edit", cli_errors_edit},
                {"redirect", "errors redirect", cli_errors_redirect},
                {"import", "errors import", cli_errors_import},
                {"reimport", "errors reimport", cli_errors_reimport}};
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
    return cli_usage_error(ctx,
                           "unknown errors command \"%s\" (ingest, "
                           "list, show, body, groups, search, retry, "
                           "archive, unarchive, resolve, edit, redirect, "
                           "import, reimport)",
                           argv[1]);
}
