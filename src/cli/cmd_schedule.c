/* cmd_schedule.c - `sqlbus schedule add|list|remove|run` (T41): periodic
 * jobs' definitions, and a scheduler on its own until SIGINT/SIGTERM. */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

enum {
    OPT_CRON = CLI_OPT_FIRST_LOCAL,
    OPT_EVERY,
    OPT_QUEUE,
    OPT_TZ,
    OPT_MISSED,
    OPT_PAYLOAD,
    OPT_HEADER,
    OPT_JSON,
    OPT_ONCE
};

/* The longest a scheduler sleeps: schedules added meanwhile are seen
 * within it. */
#define RUN_MAX_SLEEP_MS 1000

/* Parse the options of a schedule verb (argv[0]) with its own `longopts`
 * (the globals appended by the caller), handing each of its own to `fn`.
 * CLI_OK with optind at the operands, an exit code, or -1 after --help. */
typedef int (*opt_fn)(cli_ctx *ctx, int c, const char *arg, void *user);
static int parse(cli_ctx *ctx, int argc, char **argv,
                 const struct option *longopts, opt_fn fn, void *user)
{
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        if (c == 'h') {
            fputs(cli_usage_schedule, stdout);
            return -1;
        }
        /* getopt gives `fn` only the verb's own options. */
        if (c == '?' || c == ':' || fn == NULL)
            return cli_bad_option(ctx, c, argv);
        int rc = fn(ctx, c, optarg, user);
        if (rc != CLI_OK)
            return rc;
    }
    return CLI_OK;
}

/* The flag or operand of `schedule add` that sets a field of
 * sb_schedule_def. */
static const char *flag_of(const char *field)
{
    static const char *const map[][2] = {
        {"name", "NAME"},        {"queue", "--queue"},   {"cron", "--cron"},
        {"every_ms", "--every"}, {"time_zone", "--tz"},  {"missed", "--missed"},
        {"payload", "payload"},  {"headers", "--header"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(field, map[i][0]) == 0)
            return map[i][1];
    return field;
}

typedef struct add_opts {
    sb_schedule_def d;
    const char *payload_text;
    cli_header_flags headers;
} add_opts;

static int add_opt(cli_ctx *ctx, int c, const char *arg, void *user)
{
    add_opts *o = user;
    int64_t ms = 0;
    int rc = CLI_OK;
    switch (c) {
    case OPT_CRON:
        if (strlen(arg) > SB_CRON_MAX)
            return cli_usage_error(ctx, "--cron is %zu bytes; the limit is %d",
                                   strlen(arg), SB_CRON_MAX);
        o->d.cron = arg;
        break;
    case OPT_EVERY:
        rc = cli_parse_duration(ctx, "--every", arg, SB_EVERY_MIN_US / 1000,
                                SB_EVERY_MAX_US / 1000, &ms);
        o->d.every_ms = ms;
        break;
    case OPT_QUEUE:
        o->d.queue = arg;
        rc = cli_check_queue(ctx, "--queue", arg);
        break;
    case OPT_TZ: o->d.time_zone = arg; break;
    case OPT_MISSED:
        if (strcmp(arg, "skip") == 0)
            o->d.missed = SB_SCHEDULE_MISSED_SKIP;
        else if (strcmp(arg, "once") == 0)
            o->d.missed = SB_SCHEDULE_MISSED_ONCE;
        else
            return cli_usage_error(ctx,
                                   "--missed must be \"skip\" or \"once\" "
                                   "(got \"%s\")",
                                   arg);
        break;
    case OPT_PAYLOAD: o->payload_text = arg; break;
    case OPT_HEADER:
        rc = cli_header_flag_add(ctx, &o->headers, arg, CLI_MAX_HEADER_FLAGS);
        break;
    default: break;
    }
    return rc;
}

/* The flags of `schedule add` that contradict each other or are missing,
 * before anything is read or opened. */
static int add_check(cli_ctx *ctx, const add_opts *o, int noperands)
{
    if (o->d.cron != NULL && o->d.every_ms != 0)
        return cli_usage_error(ctx, "give --cron or --every, not both");
    if (o->d.cron == NULL && o->d.every_ms == 0)
        return cli_usage_error(ctx, "schedule add needs --cron EXPR or "
                                    "--every D (1s to 366d)");
    if (o->d.queue == NULL)
        return cli_usage_error(ctx, "schedule add needs --queue QUEUE");
    if (o->d.time_zone != NULL && o->d.cron == NULL)
        return cli_usage_error(ctx, "--tz applies to --cron; --every counts "
                                    "UTC durations");
    if (o->payload_text != NULL && noperands > 0)
        return cli_usage_error(ctx, "give --payload TEXT or a FILE, not both");
    if (noperands > 1)
        return cli_usage_error(ctx, "schedule add takes at most one FILE");
    return CLI_OK;
}

/* `sqlbus schedule add NAME ...`: argv[0] is "add". */
static int add(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"cron", required_argument, NULL, OPT_CRON},
        {"every", required_argument, NULL, OPT_EVERY},
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"tz", required_argument, NULL, OPT_TZ},
        {"missed", required_argument, NULL, OPT_MISSED},
        {"payload", required_argument, NULL, OPT_PAYLOAD},
        {"header", required_argument, NULL, OPT_HEADER},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    add_opts o;
    memset(&o, 0, sizeof o);
    o.d.size = sizeof o.d;
    int rc = parse(ctx, argc, argv, longopts, add_opt, &o);
    if (rc == CLI_OK && optind >= argc)
        rc = cli_usage_error(ctx, "schedule add needs the NAME of the "
                                  "schedule");
    if (rc == CLI_OK)
        o.d.name = argv[optind++];
    if (rc == CLI_OK)
        rc = add_check(ctx, &o, argc - optind);
    char *headers = NULL;
    if (rc == CLI_OK && o.headers.n > 0) {
        sb_error err;
        sb_error_clear(&err);
        if (sb__headers_merge(NULL, o.headers.kv, &headers, &err) != SB_OK)
            rc = cli_report(SB_NOMEM, &err);
    }
    sb_buf file;
    memset(&file, 0, sizeof file);
    if (rc == CLI_OK && optind < argc) {
        rc = cli_read_payload(argv[optind], &file);
        o.d.payload = file.data;
        o.d.payload_len = file.len;
    } else if (rc == CLI_OK && o.payload_text != NULL) {
        o.d.payload = o.payload_text;
        o.d.payload_len = strlen(o.payload_text);
    }
    o.d.headers_json = headers;
    sb_bus *bus = NULL;
    if (rc == CLI_OK)
        rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc == CLI_OK) {
        sb_error err;
        sb_error_clear(&err);
        int src = sb_schedule_put(bus, &o.d, &err);
        /* The library names the field; the user gave a flag. */
        if (src == SB_INVALID)
            rc = cli_usage_error(ctx, "%s (%s)", err.message,
                                 flag_of(err.field));
        else if (src != SB_OK)
            rc = cli_report(src, &err);
        else
            printf("schedule %s saved\n", o.d.name);
    }
    sb_close(bus);
    sb__buf_free(&file);
    sb__free(headers);
    cli_header_flags_free(&o.headers);
    return rc < 0 ? CLI_OK : rc;
}

static const char *missed_name(int missed)
{
    return missed == SB_SCHEDULE_MISSED_ONCE ? "once" : "skip";
}

static void print_json(sb_schedule_info *const *s, size_t n)
{
    fputs("[", stdout);
    for (size_t i = 0; i < n; i++) {
        char last[40], next[40];
        cli_format_time(last, sizeof last, s[i]->last_us);
        cli_format_time(next, sizeof next, s[i]->next_us);
        fputs(i == 0 ? "\n  {\"name\": " : ",\n  {\"name\": ", stdout);
        cli_json_str(stdout, s[i]->name);
        fputs(", \"queue\": ", stdout);
        cli_json_str(stdout, s[i]->queue);
        fputs(", \"cron\": ", stdout);
        if (s[i]->cron[0] != '\0')
            cli_json_str(stdout, s[i]->cron);
        else
            fputs("null", stdout);
        if (s[i]->every_ms > 0)
            printf(", \"every_ms\": %lld", (long long)s[i]->every_ms);
        else
            fputs(", \"every_ms\": null", stdout);
        fputs(", \"time_zone\": ", stdout);
        if (s[i]->time_zone[0] != '\0')
            cli_json_str(stdout, s[i]->time_zone);
        else
            fputs("null", stdout);
        printf(", \"missed\": \"%s\", \"payload_bytes\": %lld, \"last\": "
               "\"%s\", \"next\": ",
               missed_name(s[i]->missed), (long long)s[i]->payload_len, last);
        if (s[i]->next_us < 0)
            fputs("null}", stdout);
        else
            printf("\"%s\"}", next);
    }
    fputs(n == 0 ? "]\n" : "\n]\n", stdout);
}

static int print_table(sb_schedule_info *const *s, size_t n)
{
    static const char *const head[] = {"NAME", "QUEUE",  "WHEN",
                                       "ZONE", "MISSED", "NEXT"};
    cli_table t;
    cli_table_init(&t, 6, head, 0);
    for (size_t i = 0; i < n; i++) {
        char when[300], next[40];
        if (s[i]->cron[0] != '\0')
            snprintf(when, sizeof when, "%s", s[i]->cron);
        else
            snprintf(when, sizeof when, "every %llds",
                     (long long)(s[i]->every_ms / 1000));
        if (s[i]->next_us < 0)
            snprintf(next, sizeof next, "-");
        else
            cli_format_time(next, sizeof next, s[i]->next_us);
        const char *row[] = {s[i]->name,
                             s[i]->queue,
                             when,
                             s[i]->time_zone[0] ? s[i]->time_zone : "-",
                             missed_name(s[i]->missed),
                             next};
        cli_table_add(&t, row);
    }
    int rc = cli_table_print(&t, stdout);
    cli_table_free(&t);
    return rc;
}

/* The one option of list (--json) and of run (--once): a flag. */
static int flag_opt(cli_ctx *ctx, int c, const char *arg, void *user)
{
    (void)ctx;
    (void)c;
    (void)arg;
    *(int *)user = 1;
    return CLI_OK;
}

/* `sqlbus schedule list [--json]`. */
static int list(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int json = 0;
    int rc = parse(ctx, argc, argv, longopts, flag_opt, &json);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_schedule_info **s = NULL;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_schedule_list(bus, &s, &n, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else if (json)
        print_json(s, n);
    else
        rc = print_table(s, n);
    sb_free(s);
    sb_close(bus);
    return rc;
}

/* `sqlbus schedule remove NAME`: exit 4 when there is none. */
static int remove_one(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {CLI_GLOBAL_LONGOPTS,
                                             {NULL, 0, NULL, 0}};
    int rc = parse(ctx, argc, argv, longopts, NULL, NULL);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind >= argc)
        return cli_usage_error(ctx, "schedule remove needs the NAME of the "
                                    "schedule");
    if (optind + 1 < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"",
                               argv[optind + 1]);
    const char *name = argv[optind];
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_schedule_remove(bus, name, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else
        printf("schedule %s removed\n", name);
    sb_close(bus);
    return rc;
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

/* `sqlbus schedule run [--once]`: scheduler steps until SIGINT/SIGTERM
 * (exit 0), sleeping until the next occurrence, at most
 * RUN_MAX_SLEEP_MS. A database that goes away comes back: the loop
 * keeps going. */
static int run(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"once", no_argument, NULL, OPT_ONCE},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int once = 0;
    int rc = parse(ctx, argc, argv, longopts, flag_opt, &once);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    ctx->signal_stops = 1;
    long long total = 0;
    while (cli_signal_count() == 0) {
        int published = 0;
        int64_t wake = -1, now = sb__wall_us();
        sb_error err;
        sb_error_clear(&err);
        int src = sb_schedule_run_due(bus, now, &published, &wake, &err);
        total += published;
        if (src != SB_OK) {
            rc = cli_exit_code(src);
            cli_report(src, &err);
            if (rc != CLI_UNAVAILABLE || once)
                break;
            rc = CLI_OK;
        }
        if (once)
            break;
        int64_t sleep_ms = RUN_MAX_SLEEP_MS;
        if (wake >= 0 && (wake - sb__wall_us()) / 1000 < sleep_ms)
            sleep_ms = (wake - sb__wall_us()) / 1000 + 1;
        nap(sleep_ms < 1 ? 1 : sleep_ms);
    }
    cli_notef(ctx, "scheduler stopped: %lld messages published", total);
    sb_close(bus);
    return rc;
}

/* `sqlbus schedule VERB ...`: returns an exit code. */
int cli_cmd_schedule(cli_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *verb;
        cli_cmd_fn fn;
    } verbs[] = {
        {"add", add}, {"list", list}, {"remove", remove_one}, {"run", run}};
    if (argc > 1)
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
            if (strcmp(argv[1], verbs[i].verb) == 0)
                return verbs[i].fn(ctx, argc - 1, argv + 1);
    if (argc > 1 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(cli_usage_schedule, stdout);
        return CLI_OK;
    }
    if (argc > 1)
        return cli_usage_error(ctx,
                               "no schedule command \"%s\" (add, list, "
                               "remove, run)",
                               argv[1]);
    return cli_usage_error(ctx, "schedule needs a command: add, list, remove "
                                "or run");
}
