/* errors_query.c - the read side of `sqlbus errors` (rules E13, E22,
 * E23, E24): `list` (filters, sort, pages), `search`, `body` (the raw
 * bytes) and `groups` (with each group's latest operation, and comments). */
#include "cli.h"

#include <string.h>

enum {
    OPT_JSON = CLI_OPT_FIRST_LOCAL,
    OPT_STATUS,
    OPT_QUEUE,
    OPT_ENDPOINT,
    OPT_GROUP,
    OPT_TYPE,
    OPT_SORT,
    OPT_ASC,
    OPT_PAGE,
    OPT_PER_PAGE,
    OPT_LIMIT,
    OPT_CLASSIFIER,
    OPT_ARCHIVED,
    OPT_DELETE
};

#define EXCEPTION_COLUMNS 60
#define COMMENT_COLUMNS 40

/* The first line of `s`, at most `cols` code points, controls blanked. */
static void first_line(char *out, size_t cap, const char *s, size_t cols)
{
    size_t n = 0, seen = 0;
    if (s == NULL)
        s = "";
    for (; s[n] != '\0' && s[n] != '\n' && s[n] != '\r'; n++) {
        if (((unsigned char)s[n] & 0xc0) != 0x80 && ++seen > cols)
            break;
        if (n + 4 >= cap)
            break;
    }
    n = sb__utf8_cut(s, n); /* never end inside a character */
    memcpy(out, s, n);
    out[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)out[i] < 0x20)
            out[i] = ' ';
}

static void json_time(FILE *f, const char *name, int64_t us)
{
    char when[40];
    fprintf(f, ", \"%s\": ", name);
    if (us <= 0) {
        fputs("null", f);
        return;
    }
    cli_format_time(when, sizeof when, us);
    cli_json_str(f, when);
}

static void json_text(FILE *f, const char *name, const char *v)
{
    fprintf(f, ", \"%s\": ", name);
    cli_json_str(f, v[0] != '\0' ? v : NULL);
}

/* One summary as a JSON object on one line. */
static void summary_json(FILE *f, const sb_failed_summary *s)
{
    fputs("{\"unique_message_id\": ", f);
    cli_json_str(f, s->unique_id);
    fprintf(f, ", \"status\": \"%s\", \"attempts\": %lld",
            cli_errors_status_name(s->status), (long long)s->attempts);
    json_time(f, "last_time_of_failure", s->last_failure_us);
    json_text(f, "message_type", s->message_type);
    json_text(f, "failed_queue", s->failed_queue);
    json_text(f, "exception_type", s->exception_type);
    json_text(f, "exception_message", s->exception_message);
    fputc('}', f);
}

static void summaries_json(FILE *f, sb_failed_summary *const *s, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        fputs(i == 0 ? "\n  " : ",\n  ", f);
        summary_json(f, s[i]);
    }
    fputs(n == 0 ? "]" : "\n]", f);
}

static int summary_table(sb_failed_summary *const *s, size_t n)
{
    static const char *const head[] = {"UNIQUE-ID", "STATUS", "ATTEMPTS", "AGE",
                                       "QUEUE",     "TYPE",   "EXCEPTION"};
    cli_table t;
    cli_table_init(&t, 7, head, 0x0c);
    int64_t now = sb__wall_us();
    for (size_t i = 0; i < n; i++) {
        char attempts[24], age[32], exc[EXCEPTION_COLUMNS * 4 + 8];
        char line[sizeof s[i]->exception_type + sizeof exc + 4];
        snprintf(attempts, sizeof attempts, "%lld", (long long)s[i]->attempts);
        cli_format_age(age, sizeof age, (now - s[i]->last_failure_us) / 1000);
        first_line(exc, sizeof exc, s[i]->exception_message, EXCEPTION_COLUMNS);
        snprintf(line, sizeof line, "%s%s%s",
                 s[i]->exception_type[0] ? s[i]->exception_type : "-",
                 exc[0] ? ": " : "", exc);
        const char *row[] = {s[i]->unique_id,
                             cli_errors_status_name(s[i]->status),
                             attempts,
                             age,
                             s[i]->failed_queue[0] ? s[i]->failed_queue : "-",
                             s[i]->message_type[0] ? s[i]->message_type : "-",
                             line};
        cli_table_add(&t, row);
    }
    int rc = cli_table_print(&t, stdout);
    cli_table_free(&t);
    return rc;
}

typedef struct query_opts {
    sb_failed_query q;
    int json;
    int64_t limit;
    const char *classifier;
    int archived;
    int delete_comment;
} query_opts;

/* The flags of list, search and groups; `allowed` is a mask of
 * 1 << (OPT_x - OPT_JSON). Returns CLI_OK, an exit code, or -1 after
 * --help. Operands stay in argv[optind..]. */
static int parse_query(cli_ctx *ctx, int argc, char **argv, unsigned allowed,
                       const char *usage, query_opts *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"status", required_argument, NULL, OPT_STATUS},
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"endpoint", required_argument, NULL, OPT_ENDPOINT},
        {"group", required_argument, NULL, OPT_GROUP},
        {"type", required_argument, NULL, OPT_TYPE},
        {"sort", required_argument, NULL, OPT_SORT},
        {"asc", no_argument, NULL, OPT_ASC},
        {"page", required_argument, NULL, OPT_PAGE},
        {"per-page", required_argument, NULL, OPT_PER_PAGE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"classifier", required_argument, NULL, OPT_CLASSIFIER},
        {"archived", no_argument, NULL, OPT_ARCHIVED},
        {"delete", no_argument, NULL, OPT_DELETE},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    static const char *const sorts[] = {"time_of_failure", "message_type",
                                        "failed_queue", "attempts",
                                        "status_changed"};
    int c, rc = CLI_OK, li = 0;
    int64_t v = 0;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            &li)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        if (c == 'h') {
            fputs(usage, stdout);
            return -1;
        }
        if (c < OPT_JSON || c > OPT_DELETE)
            return cli_bad_option(ctx, c, argv);
        if (!(allowed & (1u << (c - OPT_JSON))))
            return cli_usage_error(ctx, "option --%s is not valid here",
                                   longopts[li].name);
        switch (c) {
        case OPT_JSON: o->json = 1; break;
        case OPT_STATUS:
            o->q.status = cli_errors_status_parse(optarg);
            if (o->q.status == -2)
                rc = cli_usage_error(ctx,
                                     "--status must be unresolved, "
                                     "retry_issued, resolved, archived or "
                                     "any (got \"%s\")",
                                     optarg);
            break;
        case OPT_QUEUE:
            o->q.failed_queue = optarg;
            rc = cli_check_queue(ctx, "--queue", optarg);
            break;
        case OPT_ENDPOINT: o->q.endpoint = optarg; break;
        case OPT_GROUP: o->q.group_id = optarg; break;
        case OPT_TYPE: o->q.message_type = optarg; break;
        case OPT_SORT:
            o->q.sort = NULL;
            for (size_t i = 0; i < sizeof sorts / sizeof sorts[0]; i++)
                if (strcmp(optarg, sorts[i]) == 0)
                    o->q.sort = sorts[i];
            if (o->q.sort == NULL)
                rc = cli_usage_error(ctx,
                                     "--sort must be time_of_failure, "
                                     "message_type, failed_queue, attempts "
                                     "or status_changed (got \"%s\")",
                                     optarg);
            break;
        case OPT_ASC: o->q.ascending = 1; break;
        case OPT_PAGE:
            rc = cli_parse_int(ctx, "--page", optarg, 1, 1000000, &v);
            o->q.page = (size_t)v;
            break;
        case OPT_PER_PAGE:
            rc = cli_parse_int(ctx, "--per-page", optarg, 1, 500, &v);
            o->q.per_page = (size_t)v;
            break;
        case OPT_LIMIT:
            rc = cli_parse_int(ctx, "--limit", optarg, 1, 1000, &o->limit);
            break;
        case OPT_CLASSIFIER: o->classifier = optarg; break;
        case OPT_ARCHIVED: o->archived = 1; break;
        case OPT_DELETE: o->delete_comment = 1; break;
        }
    }
    return rc;
}

#define BIT(x) (1u << ((x)-OPT_JSON))

/* `sqlbus errors list` (E23): a page of failed messages. */
int cli_errors_list(cli_ctx *ctx, int argc, char **argv)
{
    query_opts o;
    memset(&o, 0, sizeof o);
    o.q.size = sizeof o.q;
    o.q.status = SB_FAILED_UNRESOLVED;
    int rc = parse_query(ctx, argc, argv,
                         BIT(OPT_JSON) | BIT(OPT_STATUS) | BIT(OPT_QUEUE) |
                             BIT(OPT_ENDPOINT) | BIT(OPT_GROUP) |
                             BIT(OPT_TYPE) | BIT(OPT_SORT) | BIT(OPT_ASC) |
                             BIT(OPT_PAGE) | BIT(OPT_PER_PAGE),
                         cli_usage_errors_list, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    if (o.q.page == 0)
        o.q.page = 1;
    if (o.q.per_page == 0)
        o.q.per_page = 50;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    sb_failed_summary **s = NULL;
    size_t n = 0;
    int64_t total = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_list(store, &o.q, &s, &n, &total, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else if (o.json) {
        printf("{\"total\": %lld, \"page\": %zu, \"per_page\": %zu, "
               "\"items\": ",
               (long long)total, o.q.page, o.q.per_page);
        summaries_json(stdout, s, n);
        fputs("}\n", stdout);
    } else {
        rc = summary_table(s, n);
        int64_t pages =
            (total + (int64_t)o.q.per_page - 1) / (int64_t)o.q.per_page;
        if (rc == CLI_OK && pages > 1)
            cli_notef(ctx,
                      "page %zu of %lld (%lld messages); --page N for "
                      "more",
                      o.q.page, (long long)pages, (long long)total);
    }
    sb_free(s);
    cli_errors_close(bus, store);
    return rc;
}

/* `sqlbus errors search WORDS...` (E22): best matches first. */
int cli_errors_search(cli_ctx *ctx, int argc, char **argv)
{
    query_opts o;
    memset(&o, 0, sizeof o);
    o.limit = 50;
    int rc = parse_query(ctx, argc, argv, BIT(OPT_JSON) | BIT(OPT_LIMIT),
                         cli_usage_errors_search, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind >= argc)
        return cli_usage_error(ctx, "give the words to search for");
    sb_buf words;
    sb__buf_init(&words, 4096);
    for (int i = optind; i < argc; i++) {
        if (i > optind)
            sb__buf_puts(&words, " ");
        sb__buf_puts(&words, argv[i]);
    }
    if (words.failed) {
        sb__buf_free(&words);
        return cli_usage_error(ctx, "the search words are longer than 4096 "
                                    "bytes");
    }
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK) {
        sb__buf_free(&words);
        return rc;
    }
    sb_failed_summary **s = NULL;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src =
        sb_errors_search(store, words.data, (size_t)o.limit, &s, &n, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else if (o.json) {
        summaries_json(stdout, s, n);
        fputc('\n', stdout);
    } else {
        rc = summary_table(s, n);
        if (rc == CLI_OK && (int64_t)n == o.limit)
            cli_notef(ctx,
                      "showing the best %zu matches (the --limit); "
                      "raise it for more",
                      n);
    }
    sb_free(s);
    sb__buf_free(&words);
    cli_errors_close(bus, store);
    return rc;
}

/* `sqlbus errors body ID`: the stored body, byte for byte, on stdout. */
int cli_errors_body(cli_ctx *ctx, int argc, char **argv)
{
    const char *id = NULL;
    int rc = cli_errors_parse_plain(ctx, argc, argv, cli_usage_errors_body,
                                    NULL, &id, "the unique message id");
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
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else {
        size_t len = 0;
        const void *body = sb_failed_body(m, &len);
        if (len > 0 && fwrite(body, 1, len, stdout) != len) {
            cli_errorf("cannot write the body");
            rc = CLI_ERROR;
        }
    }
    sb_failed_message_free(m);
    cli_errors_close(bus, store);
    return rc;
}

static void op_json(FILE *f, const sb_group_operation *op)
{
    fputs("{\"kind\": ", f);
    cli_json_str(f, op->kind);
    fputs(", \"state\": ", f);
    cli_json_str(f, op->state);
    fprintf(f, ", \"total\": %lld, \"done\": %lld", (long long)op->total,
            (long long)op->done);
    json_time(f, "started_at", op->started_us);
    json_time(f, "updated_at", op->updated_us);
    json_time(f, "finished_at", op->finished_us);
    fputc('}', f);
}

static void group_json(FILE *f, const sb_failure_group *g,
                       const sb_group_operation *op)
{
    fputs("{\"id\": ", f);
    cli_json_str(f, g->id);
    fputs(", \"classifier\": ", f);
    cli_json_str(f, g->type);
    fputs(", \"title\": ", f);
    cli_json_str(f, g->title);
    fprintf(f, ", \"count\": %lld", (long long)g->count);
    json_time(f, "first_time_of_failure", g->first_failure_us);
    json_time(f, "last_time_of_failure", g->last_failure_us);
    json_text(f, "comment", g->comment);
    fputs(", \"operation\": ", f);
    if (op != NULL)
        op_json(f, op);
    else
        fputs("null", f);
    fputc('}', f);
}

/* `groups comment ID TEXT` / `groups comment ID --delete` (E13). */
static int group_comment(cli_ctx *ctx, int argc, char **argv)
{
    ctx->cmd = "errors groups comment";
    query_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_query(ctx, argc, argv, BIT(OPT_DELETE),
                         cli_usage_errors_groups, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    int want = o.delete_comment ? 1 : 2;
    if (argc - optind != want)
        return cli_usage_error(ctx, o.delete_comment
                                        ? "give the group id (and no text "
                                          "with --delete)"
                                        : "give the group id and the comment "
                                          "text (or --delete)");
    const char *id = argv[optind];
    const char *text = o.delete_comment ? NULL : argv[optind + 1];
    if (text != NULL && text[0] == '\0')
        return cli_usage_error(ctx, "the comment is empty (use --delete to "
                                    "remove it)");
    if (text != NULL && strlen(text) > SB_MAX_COMMENT)
        return cli_usage_error(ctx,
                               "the comment must be at most %d bytes "
                               "(got %zu)",
                               SB_MAX_COMMENT, strlen(text));
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_group_comment(store, id, text, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else
        cli_notef(ctx, "comment %s on group %s",
                  text != NULL ? "set" : "deleted", id);
    cli_errors_close(bus, store);
    return rc;
}

static void op_text(char *out, size_t cap, const sb_group_operation *op)
{
    if (op == NULL)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%s %s %lld/%lld", op->kind, op->state,
                 (long long)op->done, (long long)op->total);
}

static int groups_table(sb_failure_group *const *g,
                        const sb_group_operation *const *op_of, size_t n)
{
    static const char *const head[] = {"ID",        "COUNT", "AGE",
                                       "OPERATION", "TITLE", "COMMENT"};
    cli_table t;
    cli_table_init(&t, 6, head, 0x02);
    int64_t now = sb__wall_us();
    for (size_t i = 0; i < n; i++) {
        char count[24], age[32], op[80], comment[COMMENT_COLUMNS * 4 + 8];
        char title[EXCEPTION_COLUMNS * 4 + 8];
        snprintf(count, sizeof count, "%lld", (long long)g[i]->count);
        cli_format_age(age, sizeof age, (now - g[i]->last_failure_us) / 1000);
        op_text(op, sizeof op, op_of[i]);
        first_line(comment, sizeof comment, g[i]->comment, COMMENT_COLUMNS);
        first_line(title, sizeof title, g[i]->title, EXCEPTION_COLUMNS);
        const char *row[] = {g[i]->id, count, age, op, title, comment};
        cli_table_add(&t, row);
    }
    int rc = cli_table_print(&t, stdout);
    cli_table_free(&t);
    return rc;
}

/* `sqlbus errors groups` (E13): the groups of one classifier with their
 * counts, failure window, comment and latest operation. */
int cli_errors_groups(cli_ctx *ctx, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "comment") == 0)
        return group_comment(ctx, argc - 1, argv + 1);
    query_opts o;
    memset(&o, 0, sizeof o);
    int rc =
        parse_query(ctx, argc, argv,
                    BIT(OPT_JSON) | BIT(OPT_CLASSIFIER) | BIT(OPT_ARCHIVED),
                    cli_usage_errors_groups, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    sb_failure_group **g = NULL;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_groups(
        store, o.classifier,
        o.archived ? SB_FAILED_ARCHIVED : SB_FAILED_UNRESOLVED, &g, &n, &err);
    /* Each group's latest operation, all in one read (at most 200
     * groups, the list's cap, under the read's 1,000). */
    const char **ids = NULL;
    const sb_group_operation **op_of = NULL;
    sb_group_operation **ops = NULL;
    size_t n_ops = 0;
    if (src == SB_OK && n > 0) {
        ids = sb__calloc(n, sizeof *ids);
        op_of = sb__calloc(n, sizeof *op_of);
        if (ids == NULL || op_of == NULL)
            src = sb__err(&err, SB_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; src == SB_OK && i < n; i++)
        ids[i] = g[i]->id;
    if (src == SB_OK && n > 0)
        src = sb_errors_group_operations(store, ids, n, &ops, &n_ops, &err);
    for (size_t i = 0; src == SB_OK && i < n; i++)
        for (size_t k = 0; k < n_ops && op_of[i] == NULL; k++)
            if (strcmp(ops[k]->group_id, g[i]->id) == 0)
                op_of[i] = ops[k];
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else if (o.json) {
        fputc('[', stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i == 0 ? "\n  " : ",\n  ", stdout);
            group_json(stdout, g[i], op_of[i]);
        }
        fputs(n == 0 ? "]\n" : "\n]\n", stdout);
    } else {
        rc = groups_table(g, op_of, n);
    }
    sb_free(ops);
    sb__free(op_of);
    sb__free(ids);
    sb_free(g);
    cli_errors_close(bus, store);
    return rc;
}
