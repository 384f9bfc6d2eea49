/* cmd_queues.c - `sqlbus queues`: every queue with its counts (T31);
 * `queues pause|resume QUEUE` (T35); `queues cancel QUEUE ID...` (T39);
 * `queues ttl QUEUE D|off` and `queues expire` (T40). */
#include "cli.h"

#include <string.h>

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL, OPT_KEY };

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
        printf(", \"paused\": %s, \"prioritized\": %s, \"ttl_ms\": ",
               q[i]->paused ? "true" : "false",
               q[i]->prioritized ? "true" : "false");
        if (q[i]->ttl_ms > 0)
            printf("%lld}", (long long)q[i]->ttl_ms);
        else
            fputs("null}", stdout);
    }
    fputs(n == 0 ? "]\n" : "\n]\n", stdout);
}

static int print_table(sb_queue_stats *const *q, size_t n)
{
    static const char *const head[] = {
        "QUEUE",         "READY",        "DELAYED", "IN-FLIGHT",
        "DEAD-LETTERED", "OLDEST-READY", "STATE",   "TTL"};
    cli_table t;
    cli_table_init(&t, 8, head, 0x3e); /* numbers right-aligned */
    for (size_t i = 0; i < n; i++) {
        char ready[24], delayed[24], inflight[24], dead[24], age[32], ttl[32];
        snprintf(ready, sizeof ready, "%lld", (long long)q[i]->ready);
        snprintf(delayed, sizeof delayed, "%lld", (long long)q[i]->delayed);
        snprintf(inflight, sizeof inflight, "%lld", (long long)q[i]->in_flight);
        snprintf(dead, sizeof dead, "%lld", (long long)q[i]->dead_lettered);
        cli_format_age(age, sizeof age, q[i]->oldest_ready_age_ms);
        if (q[i]->ttl_ms > 0)
            cli_format_age(ttl, sizeof ttl, q[i]->ttl_ms);
        else
            snprintf(ttl, sizeof ttl, "-");
        const char *row[] = {q[i]->queue,
                             ready,
                             delayed,
                             inflight,
                             dead,
                             age,
                             q[i]->paused ? "paused" : "active",
                             ttl};
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
