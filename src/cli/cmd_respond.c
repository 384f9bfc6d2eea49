/* cmd_respond.c - `sqlbus respond`: publish a reply, or an error reply,
 * to a correlation id (rules C3, C12, C25). */
#include "cli.h"

#include <string.h>
#include <unistd.h>

typedef struct resp_opts {
    const char *correlation_id;
    const char *reply_id;
    const char *error; /* "TYPE:MESSAGE", or NULL */
    const char *file;
} resp_opts;

enum { OPT_CORRELATION_ID = CLI_OPT_FIRST_LOCAL, OPT_REPLY_ID, OPT_ERROR };

static int parse(cli_ctx *ctx, int argc, char **argv, resp_opts *o)
{
    static const struct option longopts[] = {
        {"correlation-id", required_argument, NULL, OPT_CORRELATION_ID},
        {"reply-id", required_argument, NULL, OPT_REPLY_ID},
        {"error", required_argument, NULL, OPT_ERROR},
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
        case 'h': fputs(cli_usage_respond, stdout); return -1;
        case OPT_CORRELATION_ID:
            o->correlation_id = optarg;
            rc = cli_check_correlation_id(ctx, "--correlation-id", optarg);
            break;
        case OPT_REPLY_ID: o->reply_id = optarg; break;
        case OPT_ERROR: {
            const char *colon = strchr(optarg, ':');
            o->error = optarg;
            if (colon == NULL || colon == optarg)
                rc = cli_usage_error(ctx,
                                     "--error must be TYPE:MESSAGE "
                                     "with a non-empty type (got \"%s\")",
                                     optarg);
            break;
        }
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (o->correlation_id == NULL)
        return cli_usage_error(ctx, "--correlation-id is required");
    if (optind < argc)
        o->file = argv[optind++];
    if (optind < argc)
        return cli_usage_error(ctx,
                               "unexpected argument \"%s\" (respond "
                               "reads one FILE or stdin)",
                               argv[optind]);
    return CLI_OK;
}

/* Send the reply or the error reply (the input becomes its detail). */
static int send_reply(sb_channel *ch, const resp_opts *o, const sb_buf *body)
{
    sb_error err;
    sb_error_clear(&err);
    int rc;
    if (o->error == NULL) {
        rc = sb_respond(ch, o->correlation_id, body->data, body->len,
                        o->reply_id, &err);
    } else {
        const char *colon = strchr(o->error, ':');
        char *type = sb__strndup(o->error, (size_t)(colon - o->error));
        if (type == NULL) {
            cli_errorf("out of memory");
            return CLI_ERROR;
        }
        if (body->len > 0 && memchr(body->data, '\0', body->len) != NULL) {
            sb__free(type);
            cli_errorf("the error detail (the input) must be text without "
                       "NUL bytes");
            return CLI_USAGE;
        }
        rc = sb_respond_error(ch, o->correlation_id, type, colon + 1,
                              body->len > 0 ? body->data : NULL, o->reply_id,
                              &err);
        sb__free(type);
    }
    return rc == SB_OK ? CLI_OK : cli_report(rc, &err);
}

/* `sqlbus respond` (C25): exit 0 once the reply was delivered, confirmed
 * or handed to recovery. */
int cli_cmd_respond(cli_ctx *ctx, int argc, char **argv)
{
    resp_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(ctx, argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_buf body;
    /* With --error and no FILE on a terminal, there is no detail. */
    if (o.error != NULL && o.file == NULL && isatty(STDIN_FILENO)) {
        sb__buf_init(&body, 0);
        rc = CLI_OK;
    } else {
        rc = cli_read_payload(o.file, &body);
    }
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    if (rc == CLI_OK)
        rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc == CLI_OK)
        rc = cli_open_channel(bus, &ch);
    if (rc == CLI_OK)
        rc = send_reply(ch, &o, &body);
    sb_channel_close(ch);
    if (bus != NULL)
        sb_close(bus);
    sb__buf_free(&body);
    return rc;
}
