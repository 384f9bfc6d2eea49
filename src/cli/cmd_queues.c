/* cmd_queues.c - `sqlbus queues`: every queue with its counts (T31);
 * `queues pause|resume QUEUE` (T35); `queues limit QUEUE` (T36); `queues
 * cancel QUEUE ID...` (T39); `queues ttl QUEUE D|off` and `queues
 * expire` (T40). */
#include "cli.h"

#include <string.h>

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL, OPT_KEY, OPT_MAX_RUNNING, OPT_RATE };

/* A rate's interval as a user writes it: 1s, 5m, 250ms. */
static void format_interval(char *out, size_t cap, int64_t ms)
{
    static const struct {
        int64_t ms;
        const char *unit;
    } units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ms % units[i].ms == 0) {
            snprintf(out, cap, "%lld%s", (long long)(ms / units[i].ms),
                     units[i].unit);
            return;
        }
    snprintf(out, cap, "%lldms", (long long)ms);
}

/* A queue's limits for the table (T36): "max 5, 100/1s", or "-". */
static void format_limits(char *out, size_t cap, const sb_queue_stats *q)
{
    char every[32];
    format_interval(every, sizeof every, q->rate_interval_ms);
    if (q->max_running > 0 && q->rate_limit > 0)
        snprintf(out, cap, "max %d, %d/%s", q->max_running, q->rate_limit,
                 every);
    else if (q->max_running > 0)
        snprintf(out, cap, "max %d", q->max_running);
    else if (q->rate_limit > 0)
        snprintf(out, cap, "%d/%s", q->rate_limit, every);
    else
        snprintf(out, cap, "-");
}

/* A JSON number, or null for 0 (none). */
static void json_limit(const char *name, int64_t v)
{
    if (v > 0)
        printf(", \"%s\": %lld", name, (long long)v);
    else
        printf(", \"%s\": null", name);
}

static void print_json(sb_queue_stats *const *q, size_t n)
{
    fputs("[", stdout);
    for (size_t i = 0; i < n; i++) {
        fputs(i == 0 ? "\n  {\"queue\": " : ",\n  {\"queue\": ", stdout);
        cli_json_str(stdout, q[i]->queue);
        printf(", \"ready\": %lld, \"delayed\": %lld, \"in_flight\": %lld, "
               "\"dead_lettered\": %lld, \"oldest_ready_age_ms\": ",
               (long long)q[i]->ready, (long long)q[i]->delayed,
               (long long)q[i]->in_flight, (long long)q[i]->dead_lettered);
        if (q[i]->oldest_ready_age_ms < 0)
            fputs("null", stdout);
        else
            printf("%lld", (long long)q[i]->oldest_ready_age_ms);
        printf(", \"paused\": %s, \"prioritized\": %s",
               q[i]->paused ? "true" : "false",
               q[i]->prioritized ? "true" : "false");
        json_limit("ttl_ms", q[i]->ttl_ms);
        json_limit("max_running", q[i]->max_running);
        json_limit("rate_limit", q[i]->rate_limit);
        json_limit("rate_interval_ms", q[i]->rate_interval_ms);
        fputs("}", stdout);
    }
    fputs(n == 0 ? "]\n" : "\n]\n", stdout);
}

static int print_table(sb_queue_stats *const *q, size_t n)
{
    static const char *const head[] = {
        "QUEUE",        "READY", "DELAYED", "IN-FLIGHT", "DEAD-LETTERED",
        "OLDEST-READY", "STATE", "TTL",     "LIMITS"};
    cli_table t;
    cli_table_init(&t, 9, head, 0x3e); /* numbers right-aligned */
    for (size_t i = 0; i < n; i++) {
        char ready[24], delayed[24], inflight[24], dead[24], age[32], ttl[32],
            limits[80];
        snprintf(ready, sizeof ready, "%lld", (long long)q[i]->ready);
        snprintf(delayed, sizeof delayed, "%lld", (long long)q[i]->delayed);
        snprintf(inflight, sizeof inflight, "%lld", (long long)q[i]->in_flight);
        snprintf(dead, sizeof dead, "%lld", (long long)q[i]->dead_lettered);
        cli_format_age(age, sizeof age, q[i]->oldest_ready_age_ms);
        if (q[i]->ttl_ms > 0)
            cli_format_age(ttl, sizeof ttl, q[i]->ttl_ms);
        else
            snprintf(ttl, sizeof ttl, "-");
        format_limits(limits, sizeof limits, q[i]);
        const char *row[] = {q[i]->queue,
                             ready,
                             delayed,
                             inflight,
                             dead,
                             age,
                             q[i]->paused ? "paused" : "active",
                             ttl,
                             limits};
        cli_table_add(&t, row);
    }
    int rc = cli_table_print(&t, stdout);
    cli_table_free(&t);
    return rc;
}

/* The global options of a `queues` verb (argv[0]) and its QUEUE, and
 * --key KEY into *key where `key` is not NULL (cancel); then optind is at
 * the arguments after QUEUE. CLI_OK, or an exit code (-1: --help was
 * printed, exit 0). */
static int verb_args(cli_ctx *ctx, int argc, char **argv, const char **queue,
                     const char **key)
{
    static const struct option plain[] = {CLI_GLOBAL_LONGOPTS,
                                          {NULL, 0, NULL, 0}};
    static const struct option keyed[] = {
        {"key", required_argument, NULL, OPT_KEY},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS,
                            key != NULL ? keyed : plain, NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        if (c == OPT_KEY && key != NULL) {
            *key = optarg;
            continue;
        }
        if (c == 'h') {
            fputs(cli_usage_queues, stdout);
            return -1;
        }
        return cli_bad_option(ctx, c, argv);
    }
    if (optind >= argc)
        return cli_usage_error(ctx, "queues %s needs the QUEUE to %s", argv[0],
                               argv[0]);
    *queue = argv[optind++];
    return cli_check_queue(ctx, "QUEUE", *queue);
}

/* `sqlbus queues cancel QUEUE --key KEY` (T38). */
static int cancel_key(cli_ctx *ctx, const char *queue, const char *key,
                      int argc, char **argv)
{
    if (optind < argc)
        return cli_usage_error(ctx,
                               "queues cancel QUEUE --key KEY takes no "
                               "IDs (got \"%s\")",
                               argv[optind]);
    sb_bus *bus = NULL;
    int rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_cancel_key(bus, queue, key, &n, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else
        printf("%zu message%s holding unique key \"%s\" cancelled: "
               "dead-lettered with reason \"cancelled\"\n",
               n, n == 1 ? "" : "s", key);
    sb_close(bus);
    return rc;
}

/* `sqlbus queues cancel QUEUE ID...` (T39) or `--key KEY` (T38). */
static int cancel(cli_ctx *ctx, int argc, char **argv)
{
    const char *queue = NULL, *key = NULL;
    int rc = verb_args(ctx, argc, argv, &queue, &key);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (key != NULL)
        return cancel_key(ctx, queue, key, argc, argv);
    if (optind >= argc)
        return cli_usage_error(ctx, "queues cancel needs the ID of at least "
                                    "one message");
    int first = optind;
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    for (int i = first; i < argc; i++) {
        sb_error err;
        sb_error_clear(&err);
        int outcome = 0;
        int src = sb_cancel(bus, queue, argv[i], &outcome, &err);
        if (src != SB_OK) {
            int code = cli_report(src, &err);
            if (rc == CLI_OK)
                rc = code;
            if (src != SB_NOTFOUND)
                break; /* not about this ID: the next would fail alike */
            continue;
        }
        printf("message %s cancelled (%s): dead-lettered with reason "
               "\"cancelled\"\n",
               argv[i],
               outcome == SB_CANCEL_RUNNING ? "a consumer held it" : "waiting");
    }
    sb_close(bus);
    return rc;
}

/* `sqlbus queues pause|resume QUEUE` (T35), argv[0] the verb. */
static int set_paused(cli_ctx *ctx, int argc, char **argv, int pause)
{
    const char *queue = NULL;
    int rc = verb_args(ctx, argc, argv, &queue, NULL);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src = pause ? sb_queue_pause(bus, queue, &err)
                    : sb_queue_resume(bus, queue, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else
        printf("queue %s %s\n", queue, pause ? "paused" : "resumed");
    sb_close(bus);
    return rc;
}

/* `sqlbus queues ttl QUEUE D|off` (T40). */
static int set_ttl(cli_ctx *ctx, int argc, char **argv)
{
    const char *queue = NULL;
    int rc = verb_args(ctx, argc, argv, &queue, NULL);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (optind != argc - 1)
        return cli_usage_error(ctx, "queues ttl needs QUEUE and one duration "
                                    "(1ms to 100 years), or off");
    int64_t ttl = 0;
    if (strcmp(argv[optind], "off") != 0) {
        rc = cli_parse_duration(ctx, "TTL", argv[optind], 1, SB_TTL_MAX_MS,
                                &ttl);
        if (rc != CLI_OK)
            return rc;
    }
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_queue_set_ttl(bus, queue, ttl, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else if (ttl > 0)
        printf("queue %s: messages expire %s after their publish\n", queue,
               argv[optind]);
    else
        printf("queue %s: no time to live\n", queue);
    sb_close(bus);
    return rc;
}

/* `--rate N/D` or off (T36) into `*limit` and `*every_ms` (0, 0: off). */
static int parse_rate(cli_ctx *ctx, const char *text, int64_t *limit,
                      int64_t *every_ms)
{
    *limit = *every_ms = 0;
    if (strcmp(text, "off") == 0)
        return CLI_OK;
    const char *slash = strchr(text, '/');
    char count[32];
    if (slash == NULL || (size_t)(slash - text) >= sizeof count)
        return cli_usage_error(ctx,
                               "--rate is N/D, at most N claims per "
                               "duration D (100/1s, 5/1m), or off (got %s)",
                               text);
    memcpy(count, text, (size_t)(slash - text));
    count[slash - text] = '\0';
    int rc = cli_parse_int(ctx, "--rate", count, 1, SB_RATE_LIMIT_MAX, limit);
    if (rc == CLI_OK)
        rc = cli_parse_duration(ctx, "--rate", slash + 1, 1,
                                SB_RATE_INTERVAL_MAX_MS, every_ms);
    return rc;
}

/* The limits `queue` has now (T36), to keep those a command leaves. */
static int current_limits(sb_bus *bus, const char *queue, sb_queue_limits *l,
                          sb_error *err)
{
    sb_queue_stats **q = NULL;
    size_t n = 0;
    int rc = sb_queue_list(bus, &q, &n, err);
    for (size_t i = 0; rc == SB_OK && i < n; i++)
        if (strcmp(q[i]->queue, queue) == 0) {
            l->max_running = q[i]->max_running;
            l->rate_limit = q[i]->rate_limit;
            l->rate_interval_ms = q[i]->rate_interval_ms;
        }
    sb_free(q);
    return rc;
}

/* `sqlbus queues limit QUEUE [--max-running N|off] [--rate N/D|off]`
 * (T36): a limit not named keeps its value. */
static int set_limits(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"max-running", required_argument, NULL, OPT_MAX_RUNNING},
        {"rate", required_argument, NULL, OPT_RATE},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK, set_max = 0, set_rate = 0;
    int64_t max = 0, rate = 0, every = 0;
    opterr = 0;
    optind = 0;
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_queues, stdout); return CLI_OK;
        case OPT_MAX_RUNNING:
            set_max = 1;
            max = 0;
            if (strcmp(optarg, "off") != 0)
                rc = cli_parse_int(ctx, "--max-running", optarg, 1,
                                   SB_MAX_RUNNING_MAX, &max);
            break;
        case OPT_RATE:
            set_rate = 1;
            rc = parse_rate(ctx, optarg, &rate, &every);
            break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (optind >= argc)
        return cli_usage_error(ctx, "queues limit needs the QUEUE to limit");
    const char *queue = argv[optind++];
    rc = cli_check_queue(ctx, "QUEUE", queue);
    if (rc != CLI_OK)
        return rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    if (!set_max && !set_rate)
        return cli_usage_error(ctx, "queues limit needs --max-running N|off "
                                    "or --rate N/D|off");
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_queue_limits l = {sizeof l, 0, 0, 0};
    sb_error err;
    sb_error_clear(&err);
    int src = current_limits(bus, queue, &l, &err);
    if (set_max)
        l.max_running = (int)max;
    if (set_rate) {
        l.rate_limit = (int)rate;
        l.rate_interval_ms = every;
    }
    if (src == SB_OK)
        src = sb_queue_set_limits(bus, queue, &l, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else {
        sb_queue_stats shown = {.max_running = l.max_running,
                                .rate_limit = l.rate_limit,
                                .rate_interval_ms = l.rate_interval_ms};
        char text[80];
        format_limits(text, sizeof text, &shown);
        if (strcmp(text, "-") == 0)
            printf("queue %s: no limits\n", queue);
        else
            printf("queue %s: limits %s\n", queue, text);
    }
    sb_close(bus);
    return rc;
}

/* `sqlbus queues expire` (T40): one sweep of every queue. */
static int expire(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {CLI_GLOBAL_LONGOPTS,
                                             {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        if (c == 'h') {
            fputs(cli_usage_queues, stdout);
            return CLI_OK;
        }
        return cli_bad_option(ctx, c, argv);
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    sb_bus *bus = NULL;
    int rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_queue_expire(bus, SB_EXPIRE_MAX, &n, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    printf("%zu expired message%s dead-lettered\n", n, n == 1 ? "" : "s");
    sb_close(bus);
    return rc;
}

/* `sqlbus queues [--json]` (T31): returns an exit code. */
int cli_cmd_queues(cli_ctx *ctx, int argc, char **argv)
{
    if (argc > 1 &&
        (strcmp(argv[1], "pause") == 0 || strcmp(argv[1], "resume") == 0))
        return set_paused(ctx, argc - 1, argv + 1, argv[1][0] == 'p');
    if (argc > 1 && strcmp(argv[1], "cancel") == 0)
        return cancel(ctx, argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "ttl") == 0)
        return set_ttl(ctx, argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "limit") == 0)
        return set_limits(ctx, argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "expire") == 0)
        return expire(ctx, argc - 1, argv + 1);
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, json = 0;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_queues, stdout); return CLI_OK;
        case OPT_JSON: json = 1; break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);

    sb_bus *bus = NULL;
    int rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_queue_stats **q = NULL;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_queue_list(bus, &q, &n, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else if (json) {
        print_json(q, n);
    } else {
        rc = print_table(q, n);
    }
    sb_free(q);
    sb_close(bus);
    return rc;
}
