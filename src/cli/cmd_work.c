/* cmd_work.c - `sqlbus work`: run a command once per message of a queue
 * through the library's worker runtime (rules T26, T30); jobs from
 * `sqlbus request` are answered with the command's stdout (C23). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KILL_GRACE_MS 2000
/* How long the worker's last join and the closes may take after the stop:
 * when the stop found the database unavailable, and otherwise. */
#define CLOSE_BOUND_DOWN_MS 2000
#define CLOSE_BOUND_MS 10000

/* Retry back-off (T37). The defaults are the library's (worker.c,
 * apply_defaults): 5 s fixed, 1 s doubling to 5 min exponential. They are
 * passed explicitly so the limits checked here are the ones that apply. */
#define BACKOFF_FIXED_DEFAULT_MS 5000
#define BACKOFF_EXP_DEFAULT_MS 1000
#define BACKOFF_MAX_DEFAULT_MS 300000
#define BACKOFF_FACTOR_DEFAULT 2.0
#define BACKOFF_FACTOR_MIN 1.1
#define BACKOFF_FACTOR_MAX 10.0
#define BACKOFF_LIMIT_MS (7LL * 86400000)

enum { BACKOFF_UNSET = -1, BACKOFF_FIXED = 0, BACKOFF_EXPONENTIAL = 1 };

/* What is closed after the stop (close_all, on a bounded thread). */
typedef struct closing {
    sb_worker *w;
    sb_channel *ch;
    sb_bus *bus;
} closing;

static void close_all(void *arg)
{
    closing *cl = arg;
    sb_worker_free(cl->w);
    sb_channel_close(cl->ch);
    sb_close(cl->bus);
}

typedef struct work_opts {
    const char *queue;
    int64_t concurrency;
    int64_t max_attempts;
    int64_t timeout_ms;
    int64_t lease_ms;
    int64_t delay_ms;                 /* --delay; -1 = not given */
    int backoff;                      /* BACKOFF_*; BACKOFF_UNSET = not given */
    int64_t base_ms;                  /* --backoff-base; -1 = not given */
    int64_t max_ms;                   /* --backoff-max; -1 = not given */
    double factor;                    /* --backoff-factor; 0 = not given */
    const char *base_text, *max_text; /* as given, for messages */
    int64_t prefetch;                 /* -1 = the library's default; 0 = none */
    int64_t heartbeat_ms;             /* 0 = the library's default; -1 = off */
    int once;
    const char *endpoint; /* sb-processing-endpoint; NULL = the queue */
    char **argv;          /* the handler command */
} work_opts;

enum {
    OPT_QUEUE = CLI_OPT_FIRST_LOCAL,
    OPT_CONCURRENCY,
    OPT_MAX_ATTEMPTS,
    OPT_TIMEOUT,
    OPT_LEASE,
    OPT_DELAY,
    OPT_ONCE,
    OPT_ENDPOINT,
    OPT_PREFETCH,
    OPT_BACKOFF,
    OPT_BACKOFF_BASE,
    OPT_BACKOFF_MAX,
    OPT_BACKOFF_FACTOR,
    OPT_HEARTBEAT
};

/* --backoff-factor: a decimal number within the limits, nothing after it. */
static int parse_factor(cli_ctx *ctx, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double f = strtod(text, &end);
    /* Only plain decimals: strtod would take "inf", "nan" and hex too. */
    int plain = text[0] >= '0' && text[0] <= '9';
    for (const char *p = text; plain && *p != '\0'; p++)
        plain = (*p >= '0' && *p <= '9') || *p == '.';
    if (!plain || end == text || *end != '\0' || errno != 0 || !isfinite(f) ||
        f < BACKOFF_FACTOR_MIN || f > BACKOFF_FACTOR_MAX)
        return cli_usage_error(ctx,
                               "--backoff-factor must be %.1f..%.0f (got %s)",
                               BACKOFF_FACTOR_MIN, BACKOFF_FACTOR_MAX, text);
    *out = f;
    return CLI_OK;
}

/* Settle --delay and the --backoff flags into one back-off (T37), or
 * refuse a contradiction naming both flags. --delay D is the fixed
 * back-off: the same as --backoff fixed --backoff-base D. */
static int resolve_backoff(cli_ctx *ctx, work_opts *o)
{
    if (o->delay_ms >= 0) {
        if (o->backoff == BACKOFF_EXPONENTIAL)
            return cli_usage_error(
                ctx, "--delay and --backoff exponential cannot be combined: "
                     "--delay D is --backoff fixed --backoff-base D (give "
                     "--backoff-base for the exponential back-off)");
        if (o->base_ms >= 0)
            return cli_usage_error(
                ctx, "--delay and --backoff-base cannot be combined: "
                     "--delay D is --backoff fixed --backoff-base D");
        if (o->max_ms >= 0 || o->factor > 0)
            return cli_usage_error(
                ctx,
                "--delay and %s cannot be combined: --delay is the fixed "
                "back-off; %s belongs to --backoff exponential",
                o->max_ms >= 0 ? "--backoff-max" : "--backoff-factor",
                o->max_ms >= 0 ? "--backoff-max" : "--backoff-factor");
        o->backoff = BACKOFF_FIXED;
        o->base_ms = o->delay_ms;
    }
    if (o->backoff != BACKOFF_EXPONENTIAL) {
        if (o->max_ms >= 0 || o->factor > 0)
            return cli_usage_error(
                ctx,
                "%s needs --backoff exponential (a fixed back-off, "
                "the default, waits --backoff-base every time)",
                o->max_ms >= 0 ? "--backoff-max" : "--backoff-factor");
        o->backoff = BACKOFF_FIXED;
        if (o->base_ms < 0)
            o->base_ms = BACKOFF_FIXED_DEFAULT_MS;
        return CLI_OK;
    }
    if (o->base_ms == 0)
        return cli_usage_error(
            ctx,
            "--backoff-base must be 1ms..7d with --backoff exponential "
            "(got %s)",
            o->base_text);
    if (o->factor <= 0)
        o->factor = BACKOFF_FACTOR_DEFAULT;
    char base[32], max[32];
    int64_t b = o->base_ms >= 0 ? o->base_ms : BACKOFF_EXP_DEFAULT_MS;
    int64_t m = o->max_ms >= 0 ? o->max_ms : BACKOFF_MAX_DEFAULT_MS;
    if (b > m) {
        cli_format_age(base, sizeof base, b);
        cli_format_age(max, sizeof max, m);
        return cli_usage_error(
            ctx, "--backoff-base (%s%s) must not exceed --backoff-max (%s%s)",
            o->base_ms >= 0 ? o->base_text : base,
            o->base_ms >= 0 ? "" : ", the default",
            o->max_ms >= 0 ? o->max_text : max,
            o->max_ms >= 0 ? "" : ", the default");
    }
    o->base_ms = b;
    o->max_ms = m;
    return CLI_OK;
}

static int parse(cli_ctx *ctx, int argc, char **argv, work_opts *o)
{
    static const struct option longopts[] = {
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
        {"max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"lease", required_argument, NULL, OPT_LEASE},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"once", no_argument, NULL, OPT_ONCE},
        {"endpoint", required_argument, NULL, OPT_ENDPOINT},
        {"prefetch", required_argument, NULL, OPT_PREFETCH},
        {"backoff", required_argument, NULL, OPT_BACKOFF},
        {"backoff-base", required_argument, NULL, OPT_BACKOFF_BASE},
        {"backoff-max", required_argument, NULL, OPT_BACKOFF_MAX},
        {"backoff-factor", required_argument, NULL, OPT_BACKOFF_FACTOR},
        {"heartbeat", required_argument, NULL, OPT_HEARTBEAT},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c, rc = CLI_OK;
    opterr = 0;
    optind = 0;
    /* '+': the handler command's own flags are not ours. */
    while (rc == CLI_OK &&
           (c = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_work, stdout); return -1;
        case OPT_QUEUE:
            o->queue = optarg;
            rc = cli_check_queue(ctx, "--queue", optarg);
            break;
        case OPT_CONCURRENCY:
            rc = cli_parse_int(ctx, "--concurrency", optarg, 1, 256,
                               &o->concurrency);
            break;
        case OPT_MAX_ATTEMPTS:
            rc = cli_parse_int(ctx, "--max-attempts", optarg, 0, 1000000,
                               &o->max_attempts);
            break;
        case OPT_TIMEOUT:
            rc = cli_parse_duration(ctx, "--timeout", optarg, 1, 7LL * 86400000,
                                    &o->timeout_ms);
            break;
        case OPT_LEASE:
            rc = cli_parse_duration(ctx, "--lease", optarg, 1000, 86400000,
                                    &o->lease_ms);
            break;
        case OPT_DELAY:
            rc = cli_parse_duration(ctx, "--delay", optarg, 0, BACKOFF_LIMIT_MS,
                                    &o->delay_ms);
            break;
        case OPT_BACKOFF:
            if (strcmp(optarg, "fixed") == 0)
                o->backoff = BACKOFF_FIXED;
            else if (strcmp(optarg, "exponential") == 0)
                o->backoff = BACKOFF_EXPONENTIAL;
            else
                rc = cli_usage_error(
                    ctx, "--backoff must be fixed or exponential (got %s)",
                    optarg);
            break;
        case OPT_BACKOFF_BASE:
            o->base_text = optarg;
            rc = cli_parse_duration(ctx, "--backoff-base", optarg, 0,
                                    BACKOFF_LIMIT_MS, &o->base_ms);
            break;
        case OPT_BACKOFF_MAX:
            o->max_text = optarg;
            rc = cli_parse_duration(ctx, "--backoff-max", optarg, 1,
                                    BACKOFF_LIMIT_MS, &o->max_ms);
            break;
        case OPT_BACKOFF_FACTOR:
            rc = parse_factor(ctx, optarg, &o->factor);
            break;
        case OPT_ONCE: o->once = 1; break;
        case OPT_HEARTBEAT:
            /* Issue 22: the endpoint's liveness (sb_options). */
            if (strcmp(optarg, "off") == 0)
                o->heartbeat_ms = -1;
            else
                rc = cli_parse_duration(
                    ctx, "--heartbeat", optarg, SB_HEARTBEAT_INTERVAL_MIN_MS,
                    SB_HEARTBEAT_INTERVAL_MAX_MS, &o->heartbeat_ms);
            break;
        case OPT_PREFETCH:
            rc = cli_parse_int(ctx, "--prefetch", optarg, 0, SB_PREFETCH_MAX,
                               &o->prefetch);
            break;
        case OPT_ENDPOINT: {
            sb_error err;
            sb_error_clear(&err);
            o->endpoint = optarg;
            if (sb__validate_name(optarg, 200, "endpoint", "the endpoint name",
                                  &err) != SB_OK)
                rc = cli_usage_error(ctx, "--endpoint: %s", err.message);
            break;
        }
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (o->queue == NULL)
        return cli_usage_error(ctx, "--queue is required");
    rc = resolve_backoff(ctx, o);
    if (rc != CLI_OK)
        return rc;
    if (optind >= argc)
        return cli_usage_error(ctx,
                               "give the command to run after --, e.g. "
                               "sqlbus work --queue %s -- ./handler",
                               o->queue);
    o->argv = argv + optind;
    return CLI_OK;
}

/* Is the command runnable? posix_spawnp would only tell per message. */
static int command_exists(const char *cmd)
{
    if (strchr(cmd, '/') != NULL)
        return access(cmd, X_OK) == 0;
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0')
        path = "/usr/bin:/bin";
    char full[4096];
    while (*path != '\0') {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        int w = n == 0
                    ? snprintf(full, sizeof full, "./%s", cmd)
                    : snprintf(full, sizeof full, "%.*s/%s", (int)n, path, cmd);
        if (w > 0 && (size_t)w < sizeof full && access(full, X_OK) == 0)
            return 1;
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* Block until a signal arrives (poll on the signal pipe). */
static void wait_for_signal(void)
{
    struct pollfd p = {.fd = cli_signal_fd(), .events = POLLIN};
    while (cli_signal_count() == 0) {
        if (poll(&p, 1, 1000) < 0 && errno != EINTR)
            break;
    }
}

/* --once: until the queue holds nothing ready or leased, or a signal. */
static int wait_idle_or_signal(sb_worker *w)
{
    while (cli_signal_count() == 0) {
        int rc = sb_worker_wait_idle(w, 500);
        if (rc == SB_OK)
            return SB_OK;
        if (rc != SB_TIMEOUT)
            return rc;
    }
    return SB_OK;
}

static void summary(const cli_ctx *ctx, const sb_worker *w, int64_t start)
{
    sb_worker_stats st;
    memset(&st, 0, sizeof st);
    sb_worker_get_stats(w, &st);
    char took[32];
    cli_format_age(took, sizeof took, (sb__mono_us() - start) / 1000);
    cli_notef(ctx,
              "work: %lld acked, %lld naked, %lld dead-lettered, "
              "%lld lost leases, %lld handed back (%s)",
              (long long)st.acked, (long long)st.naked,
              (long long)st.dead_lettered, (long long)st.lost_leases,
              (long long)st.handed_back, took);
}

/* `sqlbus work` (T30): runs until a signal (or, with --once, until the
 * queue is idle), then stops the worker gracefully. Returns an exit code. */
int cli_cmd_work(cli_ctx *ctx, int argc, char **argv)
{
    work_opts o = {.concurrency = 1,
                   .max_attempts = 5,
                   .timeout_ms = 30000,
                   .lease_ms = 30000,
                   .delay_ms = -1,
                   .backoff = BACKOFF_UNSET,
                   .base_ms = -1,
                   .max_ms = -1,
                   .prefetch = -1};
    int rc = parse(ctx, argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (!command_exists(o.argv[0]))
        return cli_usage_error(ctx, "command not found: %s", o.argv[0]);

    /* Before the bus and the worker's threads exist: the keeper is a
     * fork of this process (issue 19: no command outlives us). */
    pid_t keeper = 0;
    int keeper_fd = cli_keeper_start(&keeper);
    if (keeper_fd < 0) {
        cli_errorf("cannot start the keeper process: %s", strerror(errno));
        return CLI_ERROR;
    }
    sb_bus *bus = NULL;
    rc = cli_check_db(ctx);
    if (rc == CLI_OK) {
        sb_options bo;
        cli_bus_options(ctx, SB_SCHEMA_AUTO, &bo);
        bo.heartbeat_interval_ms = o.heartbeat_ms;
        sb_error berr;
        sb_error_clear(&berr);
        int brc = sb_open(&bo, &bus, &berr);
        if (brc != SB_OK) {
            bus = NULL;
            rc = cli_report(brc, &berr);
        }
    }
    if (rc != CLI_OK) {
        cli_keeper_stop(keeper_fd, keeper);
        return rc;
    }

    /* C23: the channel registers the bus's reply hook, so jobs published
     * by `sqlbus request` get their replies. Without it work goes on. */
    sb_channel *ch = NULL;
    sb_error cerr;
    sb_error_clear(&cerr);
    int crc = sb_channel_open(bus, NULL, &ch, &cerr);
    if (crc != SB_OK) {
        cli_errorf("warning: cannot open the channel, so requests get no "
                   "replies: %s",
                   cerr.message[0] ? cerr.message : sb_strerror(crc));
        ch = NULL;
    }

    cli_work work;
    memset(&work, 0, sizeof work);
    work.argv = o.argv;
    work.timeout_ms = o.timeout_ms;
    work.kill_grace_ms = KILL_GRACE_MS;
    work.ctx = ctx;
    work.keeper_fd = keeper_fd;
    atomic_init(&work.stopping, 0);

    sb_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.queue = o.queue;
    /* The failures of every worker of a queue share one endpoint (not
     * host:pid), so the error store's endpoint views and unique ids
     * (E6) do not split per process. */
    wo.endpoint = o.endpoint != NULL ? o.endpoint : o.queue;
    wo.handler = cli_work_handler;
    wo.user = &work;
    wo.concurrency = (int)o.concurrency;
    wo.lease_ms = o.lease_ms;
    wo.max_attempts = o.max_attempts == 0 ? -1 : (int)o.max_attempts;
    /* T37: the library's back-off, as resolve_backoff settled it. In the
     * options a delay of 0 means "the default"; -1 means "at once". */
    wo.redelivery_delay_ms = o.base_ms == 0 ? -1 : o.base_ms;
    if (o.backoff == BACKOFF_EXPONENTIAL) {
        wo.redelivery_factor = o.factor;
        wo.redelivery_max_ms = o.max_ms;
    }
    wo.prefetch = o.prefetch < 0    ? 0
                  : o.prefetch == 0 ? SB_PREFETCH_NONE
                                    : (int)o.prefetch;
    /* A running command is bounded by --timeout plus the kill grace; give
     * it that long to finish when we are asked to stop. */
    wo.stop_timeout_ms = o.timeout_ms + KILL_GRACE_MS + 1000;

    sb_error err;
    sb_error_clear(&err);
    sb_worker *w = NULL;
    int64_t start = sb__mono_us();
    int src = sb_worker_start(bus, &wo, &w, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
        sb_channel_close(ch);
        sb_close(bus);
        cli_keeper_stop(keeper_fd, keeper);
        return rc;
    }
    if (ctx->verbosity >= 1) {
        char base[32], max[32];
        cli_format_age(base, sizeof base, o.base_ms);
        cli_format_age(max, sizeof max, o.max_ms);
        if (o.backoff == BACKOFF_EXPONENTIAL)
            cli_notef(ctx,
                      "work: consuming %s with %lld handler(s); a failed "
                      "message waits %s times %g per attempt, at most %s, "
                      "jittered",
                      o.queue, (long long)o.concurrency, base, o.factor, max);
        else
            cli_notef(ctx,
                      "work: consuming %s with %lld handler(s); a failed "
                      "message waits %s",
                      o.queue, (long long)o.concurrency, base);
    }

    if (o.once) {
        src = wait_idle_or_signal(w);
        if (src != SB_OK)
            rc = cli_report(src, NULL);
    } else {
        wait_for_signal();
    }
    if (cli_signal_count() > 0)
        cli_notef(ctx,
                  "work: stopping; running handlers may take up to "
                  "%lld ms (signal again to kill them)",
                  (long long)wo.stop_timeout_ms);
    atomic_store(&work.stopping, 1);
    sb_error_clear(&err);
    src = sb_worker_stop(w, &err);
    if (src != SB_OK && rc == CLI_OK) {
        /* docs/cli.md, "Stopping": 5 = writes left to lease expiry, 124 =
         * handlers still running at the stop timeout. */
        rc = cli_report(src, &err);
        if (src == SB_TIMEOUT)
            rc = CLI_TIMEOUT;
    }
    summary(ctx, w, start);
    /* The last join, the channel's and the bus's close may wait on the
     * database; one that stopped answering must not hold the exit. */
    int64_t bound =
        src == SB_UNAVAILABLE ? CLOSE_BOUND_DOWN_MS : CLOSE_BOUND_MS;
    closing *cl = sb__malloc(sizeof *cl);
    if (cl == NULL) {
        closing now = {w, ch, bus};
        close_all(&now);
    } else {
        *cl = (closing){w, ch, bus};
    }
    if (cl != NULL && cli_run_bounded(close_all, cl, bound)) {
        sb__free(cl);
    } else if (cl != NULL) { /* cl stays with the thread left waiting */
        cli_notef(ctx,
                  "work: the database did not answer within %lld ms "
                  "of the stop; exiting without closing its connections "
                  "(unwritten settlements return when their leases expire)",
                  (long long)bound);
        ctx->abandoned = 1;
        if (rc == CLI_OK)
            rc = CLI_UNAVAILABLE;
    }
    cli_keeper_stop(keeper_fd, keeper);
    return rc;
}
