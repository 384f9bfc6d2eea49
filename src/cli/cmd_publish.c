/* cmd_publish.c - `sqlbus publish`: one message from a file or stdin, or
 * one per line with --lines, committed in batches (rules T9-T11, T29). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#define BATCH_MAX 1000
#define BATCH_BYTES (4u * 1024 * 1024)
/* Reading stops here; the library's own limit (max_payload_bytes) is
 * lower and names itself in the error. */
#define READ_CAP ((size_t)256 * 1024 * 1024)

typedef struct pub_opts {
    const char *queue;
    const char *id;
    int64_t delay_ms;
    int64_t priority;
    int64_t expires_ms;     /* T40: 0 for never */
    const char *unique_key; /* T38 */
    int unique_policy;
    int64_t unique_window_ms;
    int lines;
    int json;
    const char *file;
    cli_header_flags headers;
} pub_opts;

enum {
    OPT_QUEUE = CLI_OPT_FIRST_LOCAL,
    OPT_ID,
    OPT_DELAY,
    OPT_PRIORITY,
    OPT_EXPIRES,
    OPT_UNIQUE_KEY,
    OPT_UNIQUE_POLICY,
    OPT_UNIQUE_WINDOW,
    OPT_HEADER,
    OPT_LINES,
    OPT_JSON
};

/* --unique-policy (T38). */
static int parse_policy(cli_ctx *ctx, const char *text, pub_opts *o)
{
    static const char *const names[] = {"active", "queued", "window"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            o->unique_policy = i;
            return CLI_OK;
        }
    return cli_usage_error(ctx,
                           "--unique-policy must be active, queued or window "
                           "(got \"%s\")",
                           text);
}

/* The T38 flags agree: a policy or window needs a key, a window the
 * window policy and the other way round. */
static int check_unique_flags(cli_ctx *ctx, const pub_opts *o, int policy_set)
{
    if (o->unique_key == NULL && (policy_set || o->unique_window_ms > 0))
        return cli_usage_error(ctx, "--unique-policy and --unique-window need "
                                    "--unique-key");
    if ((o->unique_policy == SB_UNIQUE_WINDOW) != (o->unique_window_ms > 0))
        return cli_usage_error(ctx, "--unique-policy window and "
                                    "--unique-window D go together");
    if (o->unique_key != NULL && o->lines)
        return cli_usage_error(ctx, "--unique-key is one message's key: not "
                                    "with --lines");
    return CLI_OK;
}

static int parse(cli_ctx *ctx, int argc, char **argv, pub_opts *o)
{
    static const struct option longopts[] = {
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"id", required_argument, NULL, OPT_ID},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"priority", required_argument, NULL, OPT_PRIORITY},
        {"expires-in", required_argument, NULL, OPT_EXPIRES},
        {"unique-key", required_argument, NULL, OPT_UNIQUE_KEY},
        {"unique-policy", required_argument, NULL, OPT_UNIQUE_POLICY},
        {"unique-window", required_argument, NULL, OPT_UNIQUE_WINDOW},
        {"header", required_argument, NULL, OPT_HEADER},
        {"lines", no_argument, NULL, OPT_LINES},
        {"json", no_argument, NULL, OPT_JSON},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK, policy_set = 0;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_publish, stdout); return -1;
        case OPT_QUEUE:
            o->queue = optarg;
            rc = cli_check_queue(ctx, "--queue", optarg);
            break;
        case OPT_ID: o->id = optarg; break;
        case OPT_DELAY:
            rc = cli_parse_duration(ctx, "--delay", optarg, 0,
                                    3650LL * 86400000, &o->delay_ms);
            break;
        case OPT_PRIORITY:
            rc = cli_parse_int(ctx, "--priority", optarg, SB_PRIORITY_MIN,
                               SB_PRIORITY_MAX, &o->priority);
            break;
        case OPT_EXPIRES:
            rc = cli_parse_duration(ctx, "--expires-in", optarg, 1,
                                    SB_TTL_MAX_MS, &o->expires_ms);
            break;
        case OPT_UNIQUE_KEY: o->unique_key = optarg; break;
        case OPT_UNIQUE_POLICY:
            rc = parse_policy(ctx, optarg, o);
            policy_set = 1;
            break;
        case OPT_UNIQUE_WINDOW:
            rc = cli_parse_duration(ctx, "--unique-window", optarg, 1,
                                    SB_TTL_MAX_MS, &o->unique_window_ms);
            break;
        case OPT_HEADER:
            rc = cli_header_flag_add(ctx, &o->headers, optarg,
                                     CLI_MAX_HEADER_FLAGS);
            break;
        case OPT_LINES: o->lines = 1; break;
        case OPT_JSON: o->json = 1; break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (o->queue == NULL)
        return cli_usage_error(ctx, "--queue is required");
    if (o->id != NULL && o->lines)
        return cli_usage_error(ctx, "--id names one message; it cannot be "
                                    "combined with --lines");
    rc = check_unique_flags(ctx, o, policy_set);
    if (rc != CLI_OK)
        return rc;
    if (optind < argc)
        o->file = argv[optind++];
    if (optind < argc)
        return cli_usage_error(ctx,
                               "unexpected argument \"%s\" (publish "
                               "reads one FILE or stdin)",
                               argv[optind]);
    return CLI_OK;
}

/* Read up to `n` bytes, giving up when a signal arrives: returns bytes
 * read, 0 at EOF, -1 on error, -2 on a signal. */
static ssize_t read_some(int fd, char *buf, size_t n)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                          {.fd = cli_signal_fd(), .events = POLLIN}};
    for (;;) {
        if (cli_signal_count() > 0)
            return -2;
        int r = poll(p, 2, -1);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0 || (p[0].revents == 0))
            continue;
        ssize_t got = read(fd, buf, n);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        return got;
    }
}

/* Print the ids of a committed batch. */
static void print_ids(const pub_opts *o, char (*ids)[37], size_t n,
                      size_t *printed)
{
    for (size_t i = 0; i < n; i++) {
        if (o->json) {
            fputs(*printed == 0 ? "\n  " : ",\n  ", stdout);
            cli_json_str(stdout, ids[i]);
        } else {
            puts(ids[i]);
        }
        (*printed)++;
    }
}

/* ---- one message ---- */
static int publish_one(sb_bus *bus, const pub_opts *o, const char *headers,
                       int fd, size_t *printed)
{
    sb_buf body;
    sb__buf_init(&body, READ_CAP);
    char chunk[65536];
    ssize_t got;
    while ((got = read_some(fd, chunk, sizeof chunk)) > 0)
        if (sb__buf_append(&body, chunk, (size_t)got) != SB_OK)
            break;
    int rc = CLI_OK;
    if (got == -2) {
        rc = CLI_INTERRUPTED;
    } else if (got < 0) {
        cli_errorf("cannot read the payload: %s", strerror(errno));
        rc = CLI_ERROR;
    } else if (body.failed) {
        cli_errorf(body.failed == SB_TOOBIG
                       ? "the payload is larger than %zu bytes"
                       : "out of memory reading the payload (%zu bytes)",
                   READ_CAP);
        rc = body.failed == SB_TOOBIG ? CLI_USAGE : CLI_ERROR;
    }
    if (rc != CLI_OK) {
        sb__buf_free(&body);
        return rc;
    }
    sb_outgoing_ex m = {.size = sizeof m,
                        .msg = {.id = o->id,
                                .payload = body.data,
                                .payload_len = body.len,
                                .headers_json = headers,
                                .delay_ms = o->delay_ms},
                        .priority = (int)o->priority,
                        .expires_in_ms = o->expires_ms,
                        .unique_key = o->unique_key,
                        .unique_policy = o->unique_policy,
                        .unique_window_ms = o->unique_window_ms};
    char id[1][37];
    sb_error err;
    sb_error_clear(&err);
    int src = sb_publish_ex(bus, NULL, o->queue, &m, 1, id, &err);
    sb__buf_free(&body);
    if (src != SB_OK)
        return cli_report(src, &err);
    print_ids(o, id, 1, printed);
    return CLI_OK;
}

/* ---- one message per line ---- */
typedef struct batch {
    sb_buf bytes; /* the payloads, back to back */
    size_t off[BATCH_MAX];
    size_t len[BATCH_MAX];
    size_t n;
    sb_outgoing_ex msgs[BATCH_MAX];
    char ids[BATCH_MAX][37];
} batch;

static int flush(sb_bus *bus, const pub_opts *o, const char *headers, batch *b,
                 size_t *printed)
{
    if (b->n == 0)
        return CLI_OK;
    /* data is NULL when every line so far was empty */
    const char *base = b->bytes.data != NULL ? b->bytes.data : "";
    for (size_t i = 0; i < b->n; i++)
        b->msgs[i] = (sb_outgoing_ex){.size = sizeof b->msgs[i],
                                      .msg = {.payload = base + b->off[i],
                                              .payload_len = b->len[i],
                                              .headers_json = headers,
                                              .delay_ms = o->delay_ms},
                                      .priority = (int)o->priority,
                                      .expires_in_ms = o->expires_ms};
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_publish_ex(bus, NULL, o->queue, b->msgs, b->n, b->ids, &err);
    if (rc != SB_OK)
        return cli_report(rc, &err);
    print_ids(o, b->ids, b->n, printed);
    b->n = 0;
    sb__buf_reset(&b->bytes);
    return CLI_OK;
}

/* Append bytes of the current line; `start` = a new line begins. */
static int line_bytes(batch *b, const char *p, size_t n, int start)
{
    if (start) {
        b->off[b->n] = b->bytes.len;
        b->len[b->n] = 0;
    }
    b->len[b->n] += n;
    return sb__buf_append(&b->bytes, p, n);
}

static int publish_lines(const cli_ctx *ctx, sb_bus *bus, const pub_opts *o,
                         const char *headers, int fd, size_t *printed_out)
{
    batch *b = sb__calloc(1, sizeof *b);
    if (b == NULL) {
        cli_errorf("out of memory");
        return CLI_ERROR;
    }
    sb__buf_init(&b->bytes, READ_CAP);
    cli_progress prog;
    cli_progress_begin(&prog, ctx, "publish", -1);
    char chunk[65536];
    size_t printed = 0;
    int in_line = 0; /* bytes of an unfinished line are in the batch */
    int rc = CLI_OK;
    ssize_t got;
    while (rc == CLI_OK && (got = read_some(fd, chunk, sizeof chunk)) != 0) {
        if (got == -2) {
            rc = CLI_INTERRUPTED;
            break;
        }
        if (got < 0) {
            cli_errorf("cannot read the input: %s", strerror(errno));
            rc = CLI_ERROR;
            break;
        }
        const char *p = chunk, *end = chunk + got;
        while (rc == CLI_OK && p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *stop = nl != NULL ? nl : end;
            if (line_bytes(b, p, (size_t)(stop - p), !in_line) != SB_OK) {
                cli_errorf("a line is longer than %zu bytes", READ_CAP);
                rc = CLI_USAGE;
                break;
            }
            in_line = nl == NULL;
            p = nl != NULL ? nl + 1 : end;
            if (nl == NULL)
                break;
            b->n++;
            if (b->n == BATCH_MAX || b->bytes.len >= BATCH_BYTES) {
                rc = flush(bus, o, headers, b, &printed);
                cli_progress_update(&prog, (int64_t)printed, -1);
            }
        }
    }
    if (rc == CLI_OK && in_line)
        b->n++; /* the last line had no newline */
    if (rc == CLI_OK)
        rc = flush(bus, o, headers, b, &printed);
    cli_progress_update(&prog, (int64_t)printed, -1);
    cli_progress_end(&prog);
    if (printed > 0 || rc == CLI_OK)
        cli_notef(ctx, "published %zu message%s to %s", printed,
                  printed == 1 ? "" : "s", o->queue);
    sb__buf_free(&b->bytes);
    sb__free(b);
    *printed_out = printed;
    return rc;
}

/* `sqlbus publish` (T29): returns an exit code; ids go to stdout. */
int cli_cmd_publish(cli_ctx *ctx, int argc, char **argv)
{
    pub_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(ctx, argc, argv, &o);
    if (rc != CLI_OK) {
        cli_header_flags_free(&o.headers);
        return rc < 0 ? CLI_OK : rc;
    }
    char *headers = NULL;
    if (o.headers.n > 0) {
        sb_error err;
        sb_error_clear(&err);
        int src = sb__headers_merge(NULL, o.headers.kv, &headers, &err);
        if (src != SB_OK) {
            cli_header_flags_free(&o.headers);
            return cli_report(src, &err);
        }
    }
    int fd = STDIN_FILENO;
    if (o.file != NULL && strcmp(o.file, "-") != 0) {
        fd = open(o.file, O_RDONLY);
        if (fd < 0) {
            cli_errorf("cannot open %s: %s", o.file, strerror(errno));
            cli_header_flags_free(&o.headers);
            sb__free(headers);
            return CLI_ERROR;
        }
    }
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc == CLI_OK) {
        if (o.json)
            fputs("[", stdout);
        size_t printed = 0;
        rc = o.lines ? publish_lines(ctx, bus, &o, headers, fd, &printed)
                     : publish_one(bus, &o, headers, fd, &printed);
        /* Even after an error the array is closed: it lists exactly the
         * messages that were committed. */
        if (o.json)
            fputs(printed == 0 ? "]\n" : "\n]\n", stdout);
        sb_close(bus);
    }
    if (fd != STDIN_FILENO)
        close(fd);
    cli_header_flags_free(&o.headers);
    sb__free(headers);
    return rc;
}
