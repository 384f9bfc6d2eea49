/* errors_ops.c - `sqlbus errors retry|archive|unarchive|resolve` (rules
 * E14, E17, E19, E24): one selection syntax for the four operations
 * (unique ids, --group, --queue, --endpoint or --all, narrowed by a
 * last-modified range), a progress bar on a terminal, the count changed. */
#include "cli.h"

#include <string.h>

enum {
    OPT_JSON = CLI_OPT_FIRST_LOCAL,
    OPT_GROUP,
    OPT_QUEUE,
    OPT_ENDPOINT,
    OPT_ALL,
    OPT_FROM,
    OPT_TO,
    OPT_PENDING
};

/* The library's limit on ids per call; more are sent in several calls. */
#define IDS_PER_CALL 10000

enum op_kind {
    OP_RETRY,
    OP_RETRY_PENDING,
    OP_ARCHIVE,
    OP_UNARCHIVE,
    OP_RESOLVE
};

typedef struct op_args {
    sb_failed_selection sel;
    int json;
    int pending;
    char **ids;
    size_t n_ids;
} op_args;

static int parse_time_flag(const cli_ctx *ctx, const char *flag,
                           const char *text, int64_t *out)
{
    if (cli_parse_time_us(text, out) == 0 && *out > 0)
        return CLI_OK;
    return cli_usage_error(ctx,
                           "%s must be an ISO 8601 time with a zone "
                           "(2026-01-02T03:04:05Z) or Unix seconds (got "
                           "\"%s\")",
                           flag, text);
}

static int parse_ops(cli_ctx *ctx, int argc, char **argv, int pending_ok,
                     const char *usage, op_args *a)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"group", required_argument, NULL, OPT_GROUP},
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"endpoint", required_argument, NULL, OPT_ENDPOINT},
        {"all", no_argument, NULL, OPT_ALL},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"pending", no_argument, NULL, OPT_PENDING},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->sel.size = sizeof a->sel;
    int c, rc = CLI_OK;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(usage, stdout); return -1;
        case OPT_JSON: a->json = 1; break;
        case OPT_GROUP: a->sel.group_id = optarg; break;
        case OPT_QUEUE:
            a->sel.failed_queue = optarg;
            rc = cli_check_queue(ctx, "--queue", optarg);
            break;
        case OPT_ENDPOINT: a->sel.endpoint = optarg; break;
        case OPT_ALL: a->sel.all = 1; break;
        case OPT_FROM:
            rc = parse_time_flag(ctx, "--from", optarg,
                                 &a->sel.modified_from_us);
            break;
        case OPT_TO:
            rc = parse_time_flag(ctx, "--to", optarg, &a->sel.modified_to_us);
            break;
        case OPT_PENDING:
            if (!pending_ok)
                return cli_usage_error(ctx, "option --pending is not valid "
                                            "here");
            a->pending = 1;
            break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    a->ids = argv + optind;
    a->n_ids = (size_t)(argc - optind);
    int selectors = (a->n_ids > 0) + (a->sel.group_id != NULL) +
                    (a->sel.failed_queue != NULL) + (a->sel.endpoint != NULL) +
                    a->sel.all;
    int ranged = a->sel.modified_from_us != 0 || a->sel.modified_to_us != 0;
    if (selectors == 0 && ranged)
        a->sel.all = 1; /* a range alone: everything in it */
    else if (selectors != 1)
        return cli_usage_error(ctx,
                               "choose exactly one of: unique ids, "
                               "--group ID, --queue Q, --endpoint E, --all "
                               "(got %d)",
                               selectors);
    if (a->sel.modified_to_us != 0 &&
        a->sel.modified_from_us > a->sel.modified_to_us)
        return cli_usage_error(ctx, "--from is after --to");
    return CLI_OK;
}

/* One library call for `kind` over `sel`; adds to *changed. */
static int run_op(sb_errors *store, int kind, const sb_failed_selection *sel,
                  int64_t *changed, sb_error *err)
{
    int64_t n = 0;
    int rc;
    switch (kind) {
    case OP_RETRY: rc = sb_errors_retry(store, sel, &n, err); break;
    case OP_RETRY_PENDING:
        rc = sb_errors_retry_pending(store, sel, &n, err);
        break;
    case OP_ARCHIVE: rc = sb_errors_archive(store, sel, 1, &n, err); break;
    case OP_UNARCHIVE: rc = sb_errors_archive(store, sel, 0, &n, err); break;
    default: rc = sb_errors_resolve(store, sel, &n, err); break;
    }
    *changed += n;
    return rc;
}

typedef struct op_progress {
    cli_progress bar;
    int64_t before; /* changed by earlier calls (ids in several calls) */
    int64_t total;  /* -1 until known */
} op_progress;

static void on_progress(int64_t done, int64_t total, void *user)
{
    op_progress *p = user;
    cli_progress_update(&p->bar, p->before + done,
                        p->total >= 0 ? p->total : total);
}

static int operation(cli_ctx *ctx, int argc, char **argv, int kind,
                     const char *usage)
{
    static const char *const labels[] = {"retry", "retry", "archive",
                                         "unarchive", "resolve"};
    static const char *const done_text[] = {
        "retried %lld message%s", "retried %lld pending message%s",
        "archived %lld message%s", "unarchived %lld message%s",
        "resolved %lld pending retr%s"};
    op_args a;
    int rc = parse_ops(ctx, argc, argv, kind == OP_RETRY, usage, &a);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (a.pending)
        kind = OP_RETRY_PENDING;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    op_progress prog;
    prog.before = 0;
    prog.total = a.n_ids > IDS_PER_CALL ? (int64_t)a.n_ids : -1;
    cli_progress_begin(&prog.bar, ctx, labels[kind], prog.total);
    a.sel.progress = on_progress;
    a.sel.progress_user = &prog;
    int64_t changed = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = SB_OK;
    if (a.n_ids == 0) {
        src = run_op(store, kind, &a.sel, &changed, &err);
    } else {
        for (size_t at = 0; src == SB_OK && at < a.n_ids; at += IDS_PER_CALL) {
            size_t k =
                a.n_ids - at < IDS_PER_CALL ? a.n_ids - at : IDS_PER_CALL;
            a.sel.ids = (const char *const *)(a.ids + at);
            a.sel.n_ids = k;
            prog.before = changed;
            src = run_op(store, kind, &a.sel, &changed, &err);
        }
    }
    cli_progress_end(&prog.bar);
    int plural = changed != 1;
    const char *suffix =
        kind == OP_RESOLVE ? (plural ? "ies" : "y") : (plural ? "s" : "");
    if (src != SB_OK) {
        rc = cli_report(src, &err);
        if (rc == CLI_CONFLICT && a.sel.group_id != NULL)
            cli_errorf("'sqlbus errors groups' shows the operation and its "
                       "progress");
        if (changed > 0) {
            char msg[128];
            snprintf(msg, sizeof msg, done_text[kind], (long long)changed,
                     suffix);
            cli_errorf("%s before the error", msg);
        }
    } else if (a.json) {
        printf("{\"changed\": %lld}\n", (long long)changed);
    } else {
        printf(done_text[kind], (long long)changed, suffix);
        fputc('\n', stdout);
    }
    cli_errors_close(bus, store);
    return rc;
}

/* `sqlbus errors retry` (E14; --pending: E17). */
int cli_errors_retry(cli_ctx *ctx, int argc, char **argv)
{
    return operation(ctx, argc, argv, OP_RETRY, cli_usage_errors_retry);
}

/* `sqlbus errors archive` (E19). */
int cli_errors_archive(cli_ctx *ctx, int argc, char **argv)
{
    return operation(ctx, argc, argv, OP_ARCHIVE, cli_usage_errors_archive);
}

/* `sqlbus errors unarchive` (E19). */
int cli_errors_unarchive(cli_ctx *ctx, int argc, char **argv)
{
    return operation(ctx, argc, argv, OP_UNARCHIVE, cli_usage_errors_unarchive);
}

/* `sqlbus errors resolve` (E17): pending retries resolved by hand. */
int cli_errors_resolve(cli_ctx *ctx, int argc, char **argv)
{
    return operation(ctx, argc, argv, OP_RESOLVE, cli_usage_errors_resolve);
}
