/* errors_redirect.c - `sqlbus errors redirect add|update|remove|list`
 * (rule E20): retries and edits of messages that failed on one queue go
 * to another. */
#include "cli.h"

#include <string.h>

static void redirect_json(FILE *f, const sb_redirect *r)
{
    char when[40];
    cli_format_time(when, sizeof when, r->last_modified_us);
    fputs("{\"id\": ", f);
    cli_json_str(f, r->id);
    fputs(", \"from_queue\": ", f);
    cli_json_str(f, r->from_queue);
    fputs(", \"to_queue\": ", f);
    cli_json_str(f, r->to_queue);
    fputs(", \"last_modified\": ", f);
    cli_json_str(f, r->last_modified_us > 0 ? when : NULL);
    fputc('}', f);
}

static int list(cli_ctx *ctx, sb_errors *store, int json)
{
    sb_redirect **r = NULL;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_redirects(store, &r, &n, &err);
    if (src != SB_OK)
        return cli_report(src, &err);
    int rc = CLI_OK;
    if (json) {
        fputc('[', stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i == 0 ? "\n  " : ",\n  ", stdout);
            redirect_json(stdout, r[i]);
        }
        fputs(n == 0 ? "]\n" : "\n]\n", stdout);
    } else {
        static const char *const head[] = {"ID", "FROM-QUEUE", "TO-QUEUE",
                                           "LAST-MODIFIED"};
        cli_table t;
        cli_table_init(&t, 4, head, 0);
        for (size_t i = 0; i < n; i++) {
            char when[40];
            cli_format_time(when, sizeof when, r[i]->last_modified_us);
            const char *row[] = {r[i]->id, r[i]->from_queue, r[i]->to_queue,
                                 r[i]->last_modified_us > 0 ? when : "-"};
            cli_table_add(&t, row);
        }
        rc = cli_table_print(&t, stdout);
        cli_table_free(&t);
        if (rc == CLI_OK && n == 0)
            cli_notef(ctx, "no redirects");
    }
    sb_free(r);
    return rc;
}

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL };

/* Global options and --json (when `json` is not NULL); the operands stay
 * in argv[optind..]. CLI_OK, an exit code, or -1 after --help. */
static int parse(cli_ctx *ctx, int argc, char **argv, int *json)
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
            fputs(cli_usage_errors_redirect, stdout);
            return -1;
        }
        if (c == OPT_JSON && json != NULL) {
            *json = 1;
            continue;
        }
        return cli_bad_option(ctx, c, argv);
    }
    return CLI_OK;
}

/* `sqlbus errors redirect add|update|remove|list` (E20): returns an exit
 * code; SB_CONFLICT (a chain, a queue already redirected) exits 6. */
int cli_errors_redirect(cli_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        int operands;
        const char *what;
    } subs[] = {{"add", 2, "FROM-QUEUE TO-QUEUE"},
                {"update", 2, "ID TO-QUEUE"},
                {"remove", 1, "ID"},
                {"list", 0, "nothing"}};
    enum { ADD, UPDATE, REMOVE, LIST };
    int json = 0;
    if (argc < 2 || argv[1][0] == '-') {
        int rc = parse(ctx, argc, argv, NULL);
        if (rc != CLI_OK)
            return rc < 0 ? CLI_OK : rc;
        return cli_usage_error(ctx, "give add, update, remove or list");
    }
    int k = 0;
    while (k < 4 && strcmp(argv[1], subs[k].name) != 0)
        k++;
    if (k == 4)
        return cli_usage_error(ctx,
                               "unknown redirect command \"%s\" (add, "
                               "update, remove, list)",
                               argv[1]);
    int rc =
        parse(ctx, argc - 1, argv + 1, k == ADD || k == LIST ? &json : NULL);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    char **ops = argv + 1 + optind;
    if (argc - 1 - optind != subs[k].operands)
        return cli_usage_error(ctx, "redirect %s takes %s", subs[k].name,
                               subs[k].what);
    if (k == ADD && ((rc = cli_check_queue(ctx, "FROM-QUEUE", ops[0])) != 0 ||
                     (rc = cli_check_queue(ctx, "TO-QUEUE", ops[1])) != 0))
        return rc;
    if (k == UPDATE && (rc = cli_check_queue(ctx, "TO-QUEUE", ops[1])) != 0)
        return rc;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src = SB_OK;
    sb_redirect r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    switch (k) {
    case ADD:
        src = sb_errors_redirect_add(store, ops[0], ops[1], &r, &err);
        if (src == SB_OK && json) {
            redirect_json(stdout, &r);
            fputc('\n', stdout);
        } else if (src == SB_OK) {
            printf("%s\n", r.id);
            cli_notef(ctx,
                      "retries of messages that failed on %s now go to "
                      "%s",
                      r.from_queue, r.to_queue);
        }
        break;
    case UPDATE:
        src = sb_errors_redirect_update(store, ops[0], ops[1], &err);
        if (src == SB_OK)
            cli_notef(ctx, "redirect %s now goes to %s", ops[0], ops[1]);
        break;
    case REMOVE:
        src = sb_errors_redirect_remove(store, ops[0], &err);
        if (src == SB_OK)
            cli_notef(ctx, "redirect %s removed", ops[0]);
        break;
    default: rc = list(ctx, store, json); break;
    }
    if (src != SB_OK)
        rc = cli_report(src, &err);
    cli_errors_close(bus, store);
    return rc;
}
