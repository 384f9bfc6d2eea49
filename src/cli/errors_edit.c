/* errors_edit.c - `sqlbus errors edit ID` (rule E18): send an edited copy
 * of an unresolved failed message and resolve the original, in one
 * transaction. Off unless --allow-edit or SQLBUS_ALLOW_EDIT=1: an edit
 * changes what a system receives, so it is opted into per use. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum {
    OPT_JSON = CLI_OPT_FIRST_LOCAL,
    OPT_BODY,
    OPT_BODY_FILE,
    OPT_HEADER,
    OPT_REMOVE_HEADER,
    OPT_HEADERS_JSON,
    OPT_ALLOW_EDIT
};

#define MAX_HEADER_FLAGS 64

typedef struct edit_args {
    const char *id;
    const char *body;
    const char *body_file;
    const char *headers_file;
    cli_header_flags set;
    const char *remove[MAX_HEADER_FLAGS];
    size_t n_remove;
    int allow;
    int json;
} edit_args;

static int env_allows(void)
{
    const char *v = getenv("SQLBUS_ALLOW_EDIT");
    return v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 ||
                         strcmp(v, "yes") == 0);
}

static int parse(cli_ctx *ctx, int argc, char **argv, edit_args *a)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"body", required_argument, NULL, OPT_BODY},
        {"body-file", required_argument, NULL, OPT_BODY_FILE},
        {"header", required_argument, NULL, OPT_HEADER},
        {"remove-header", required_argument, NULL, OPT_REMOVE_HEADER},
        {"headers-json", required_argument, NULL, OPT_HEADERS_JSON},
        {"allow-edit", no_argument, NULL, OPT_ALLOW_EDIT},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_errors_edit, stdout); return -1;
        case OPT_JSON: a->json = 1; break;
        case OPT_BODY: a->body = optarg; break;
        case OPT_BODY_FILE: a->body_file = optarg; break;
        case OPT_HEADER:
            rc = cli_header_flag_add(ctx, &a->set, optarg, MAX_HEADER_FLAGS);
            break;
        case OPT_REMOVE_HEADER:
            if (a->n_remove >= MAX_HEADER_FLAGS)
                return cli_usage_error(ctx,
                                       "at most %d --remove-header "
                                       "flags",
                                       MAX_HEADER_FLAGS);
            a->remove[a->n_remove++] = optarg;
            break;
        case OPT_HEADERS_JSON: a->headers_file = optarg; break;
        case OPT_ALLOW_EDIT: a->allow = 1; break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (argc - optind != 1)
        return cli_usage_error(ctx, "give exactly one unique message id");
    a->id = argv[optind];
    if (a->body != NULL && a->body_file != NULL)
        return cli_usage_error(ctx, "give --body or --body-file, not both");
    if (!a->allow && !env_allows())
        return cli_usage_error(ctx,
                               "editing is off: add --allow-edit (or "
                               "set SQLBUS_ALLOW_EDIT=1) to send an edited "
                               "copy");
    return CLI_OK;
}

/* The copy's headers: the --headers-json file or the stored ones, with
 * --header set and --remove-header removed. *out is sb__free'd. */
static int build_headers(const edit_args *a, const char *stored, char **out)
{
    sb_buf file;
    sb__buf_init(&file, 0);
    const char *base = stored != NULL ? stored : "{}";
    if (a->headers_file != NULL) {
        int rc = cli_read_payload(a->headers_file, &file);
        if (rc != CLI_OK) {
            sb__buf_free(&file);
            return rc;
        }
        sb_error err;
        sb_error_clear(&err);
        if (sb__headers_validate(file.data, file.len, &err) != SB_OK) {
            cli_errorf("--headers-json %s: %s", a->headers_file, err.message);
            sb__buf_free(&file);
            return CLI_USAGE;
        }
        base = file.data;
    }
    char *merged = NULL;
    sb_error err;
    sb_error_clear(&err);
    int src = sb__headers_merge(base, a->set.kv, &merged, &err);
    if (src == SB_OK && a->n_remove > 0) {
        char *less = NULL;
        src = sb__headers_without(merged, a->remove, a->n_remove, &less, &err);
        sb__free(merged);
        merged = less;
    }
    sb__buf_free(&file);
    if (src != SB_OK) {
        sb__free(merged);
        return cli_report(src, &err);
    }
    *out = merged;
    return CLI_OK;
}

/* `sqlbus errors edit ID` (E18): returns an exit code. */
int cli_errors_edit(cli_ctx *ctx, int argc, char **argv)
{
    edit_args a;
    memset(&a, 0, sizeof a);
    int rc = parse(ctx, argc, argv, &a);
    if (rc != CLI_OK) {
        cli_header_flags_free(&a.set);
        return rc < 0 ? CLI_OK : rc;
    }
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 1, &bus, &store);
    if (rc != CLI_OK) {
        cli_header_flags_free(&a.set);
        return rc;
    }
    sb_failed_message *m = NULL;
    sb_buf body;
    sb__buf_init(&body, 0);
    char *headers = NULL;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_get(store, a.id, &m, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    if (rc == CLI_OK)
        rc = build_headers(&a, sb_failed_headers(m), &headers);
    const void *bytes = NULL;
    size_t len = 0;
    if (rc == CLI_OK && a.body_file != NULL) {
        rc = cli_read_payload(a.body_file, &body);
        bytes = body.data;
        len = body.len;
    } else if (rc == CLI_OK && a.body != NULL) {
        bytes = a.body;
        len = strlen(a.body);
    } else if (rc == CLI_OK) {
        bytes = sb_failed_body(m, &len); /* headers-only edit */
    }
    int ignored = 0;
    char new_id[37] = "";
    if (rc == CLI_OK) {
        src = sb_errors_edit_retry(store, a.id, bytes, len, headers, &ignored,
                                   new_id, &err);
        if (src != SB_OK)
            rc = cli_report(src, &err);
    }
    if (rc == CLI_OK && a.json) {
        printf("{\"ignored\": %s, \"message_id\": ",
               ignored ? "true" : "false");
        cli_json_str(stdout, ignored ? NULL : new_id);
        fputs("}\n", stdout);
    } else if (rc == CLI_OK && ignored) {
        cli_notef(ctx,
                  "message %s was edited before: the first edit stands, "
                  "nothing sent",
                  a.id);
    } else if (rc == CLI_OK) {
        printf("%s\n", new_id);
        cli_notef(ctx, "sent an edited copy of %s; the original is resolved",
                  a.id);
    }
    sb__free(headers);
    sb__buf_free(&body);
    sb_failed_message_free(m);
    cli_errors_close(bus, store);
    cli_header_flags_free(&a.set);
    return rc;
}
