/* cmd_recovery.c - `sqlbus recovery list|watchdog` (rule C22): recovery
 * registrations with their state, and the stale ones counted and logged.
 * Neither opens a channel: they read the tables through the bus. */
#include "cli.h"

#include <string.h>

#define MAX_STALE_AFTER_MS (3650LL * 86400000)
#define MAX_LIMIT 10000

enum { OPT_STALE_AFTER = CLI_OPT_FIRST_LOCAL, OPT_STATE, OPT_LIMIT, OPT_JSON };

/* Names of enum sb_registration_state, by value. */
static const char *const state_names[] = {"outstanding", "stale", "orphaned",
                                          "dispatched"};
#define N_STATES (sizeof state_names / sizeof state_names[0])

typedef struct rec_opts {
    int64_t stale_after_ms;
    unsigned states; /* SB_REG_BIT()s; 0 = all */
    int64_t limit;
    int json;
} rec_opts;

/* "--state all" or a comma-separated list of state names. */
static int parse_states(const cli_ctx *ctx, const char *text, unsigned *out)
{
    *out = 0;
    if (strcmp(text, "all") == 0)
        return CLI_OK;
    const char *p = text;
    for (;;) {
        size_t n = strcspn(p, ",");
        size_t s = 0;
        while (s < N_STATES && (strlen(state_names[s]) != n ||
                                strncmp(state_names[s], p, n) != 0))
            s++;
        if (s == N_STATES)
            return cli_usage_error(ctx,
                                   "--state must be outstanding, stale, "
                                   "orphaned, dispatched (comma-separated) "
                                   "or all (got \"%s\")",
                                   text);
        *out |= SB_REG_BIT(s);
        if (p[n] == '\0')
            return CLI_OK;
        p += n + 1;
    }
}

/* Parse the flags of `list` (all) or `watchdog` (--stale-after only).
 * Returns CLI_OK, an exit code, or -1 after --help. */
static int parse(cli_ctx *ctx, int argc, char **argv, int is_list,
                 const char *usage, rec_opts *o)
{
    static const struct option longopts[] = {
        {"stale-after", required_argument, NULL, OPT_STALE_AFTER},
        {"state", required_argument, NULL, OPT_STATE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"json", no_argument, NULL, OPT_JSON},
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
        if (c == 'h') {
            fputs(usage, stdout);
            return -1;
        }
        if (!is_list && c > OPT_STALE_AFTER && c <= OPT_JSON)
            return cli_usage_error(ctx, "option %s is not valid here",
                                   argv[optind - 1]);
        switch (c) {
        case OPT_STALE_AFTER:
            rc = cli_parse_duration(ctx, "--stale-after", optarg, 1,
                                    MAX_STALE_AFTER_MS, &o->stale_after_ms);
            break;
        case OPT_STATE: rc = parse_states(ctx, optarg, &o->states); break;
        case OPT_LIMIT:
            rc = cli_parse_int(ctx, "--limit", optarg, 1, MAX_LIMIT, &o->limit);
            break;
        case OPT_JSON: o->json = 1; break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (rc != CLI_OK)
        return rc;
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    return CLI_OK;
}

/* What `list` gathers: a table or JSON written as rows arrive, and the
 * count per state for the summary. */
typedef struct lister {
    int json;
    cli_table table;
    int64_t now_us;
    size_t n;
    size_t per_state[N_STATES];
} lister;

static const char *state_name(int state)
{
    return state >= 0 && (size_t)state < N_STATES ? state_names[state] : "?";
}

static void json_time(const char *name, int64_t us)
{
    printf(", \"%s\": ", name);
    if (us == 0) {
        fputs("null", stdout);
        return;
    }
    char when[40];
    cli_format_time(when, sizeof when, us);
    cli_json_str(stdout, when);
}

static void print_json(const sb_registration *r, const lister *l)
{
    const char *handler = sb_registration_handler(r);
    size_t len = 0;
    const void *ctx = sb_registration_context(r, &len);
    fputs(l->n == 1 ? "\n  {\"correlation_id\": "
                    : ",\n  {\"correlation_id\": ",
          stdout);
    cli_json_str(stdout, sb_registration_correlation_id(r));
    fputs(", \"registration_id\": ", stdout);
    cli_json_str(stdout, sb_registration_id(r));
    fputs(", \"handler\": ", stdout);
    if (handler != NULL)
        cli_json_str(stdout, handler);
    else
        fputs("null", stdout);
    printf(", \"state\": \"%s\", \"live\": %s",
           state_name(sb_registration_state(r)),
           sb_registration_live(r) ? "true" : "false");
    json_time("registered_at", sb_registration_registered_at_us(r));
    json_time("expires_at", sb_registration_expires_at_us(r));
    json_time("dispatched_at", sb_registration_dispatched_at_us(r));
    printf(
        ", \"age_ms\": %lld",
        (long long)((l->now_us - sb_registration_registered_at_us(r)) / 1000));
    if (ctx == NULL) {
        fputs(", \"context_encoding\": null, \"context\": null}", stdout);
    } else if (cli_is_text(ctx, len)) {
        fputs(", \"context_encoding\": \"utf-8\", \"context\": ", stdout);
        cli_json_strn(stdout, ctx, len);
        fputc('}', stdout);
    } else {
        fputs(", \"context_encoding\": \"base64\", \"context\": \"", stdout);
        cli_base64(stdout, ctx, len);
        fputs("\"}", stdout);
    }
}

static void add_row(const sb_registration *r, lister *l)
{
    const char *handler = sb_registration_handler(r);
    int64_t dispatched = sb_registration_dispatched_at_us(r);
    char age[32], ago[40] = "-";
    cli_format_age(age, sizeof age,
                   (l->now_us - sb_registration_registered_at_us(r)) / 1000);
    if (dispatched != 0) {
        char d[32];
        cli_format_age(d, sizeof d, (l->now_us - dispatched) / 1000);
        snprintf(ago, sizeof ago, "%s ago", d);
    }
    const char *row[] = {sb_registration_correlation_id(r),
                         sb_registration_id(r),
                         handler != NULL ? handler : "-",
                         state_name(sb_registration_state(r)),
                         age,
                         ago};
    cli_table_add(&l->table, row);
}

static int on_registration(const sb_registration *r, void *user)
{
    lister *l = user;
    int state = sb_registration_state(r);
    l->n++;
    if (state >= 0 && (size_t)state < N_STATES)
        l->per_state[state]++;
    if (l->json)
        print_json(r, l);
    else
        add_row(r, l);
    return 0;
}

static int cmd_list(cli_ctx *ctx, int argc, char **argv)
{
    rec_opts o = {.limit = 1000};
    int rc = parse(ctx, argc, argv, 1, cli_usage_recovery_list, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    static const char *const head[] = {
        "CORRELATION-ID", "REGISTRATION-ID", "HANDLER", "STATE", "AGE",
        "DISPATCHED"};
    lister l;
    memset(&l, 0, sizeof l);
    l.json = o.json;
    l.now_us = sb__wall_us();
    cli_table_init(&l.table, 6, head, 0x30); /* ages right-aligned */
    sb_registration_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.stale_after_ms = o.stale_after_ms;
    q.states = o.states;
    q.limit = (size_t)o.limit;
    if (l.json)
        fputs("[", stdout);
    sb_error err;
    sb_error_clear(&err);
    int src = sb_recovery_registrations(bus, &q, on_registration, &l, &err);
    if (l.json)
        fputs(l.n == 0 ? "]\n" : "\n]\n", stdout);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else if (!l.json) {
        rc = cli_table_print(&l.table, stdout);
        cli_notef(ctx,
                  "%zu registration%s: %zu outstanding, %zu stale, %zu "
                  "orphaned, %zu dispatched%s",
                  l.n, l.n == 1 ? "" : "s", l.per_state[SB_REG_OUTSTANDING],
                  l.per_state[SB_REG_STALE], l.per_state[SB_REG_ORPHANED],
                  l.per_state[SB_REG_DISPATCHED],
                  l.n == q.limit ? " (the --limit; raise it for more)" : "");
    }
    cli_table_free(&l.table);
    sb_close(bus);
    return rc;
}

static int cmd_watchdog(cli_ctx *ctx, int argc, char **argv)
{
    rec_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(ctx, argc, argv, 0, cli_usage_recovery_watchdog, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    int64_t stale = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_recovery_watchdog(bus, o.stale_after_ms, &stale, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    else
        printf("%lld stale registration%s\n", (long long)stale,
               stale == 1 ? "" : "s");
    sb_close(bus);
    return rc;
}

/* `sqlbus recovery SUBCOMMAND ...`: dispatch to list or watchdog. Returns
 * an exit code. */
int cli_cmd_recovery(cli_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        const char *cmd;
        cli_cmd_fn fn;
    } subs[] = {{"list", "recovery list", cmd_list},
                {"watchdog", "recovery watchdog", cmd_watchdog}};
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(cli_usage_recovery, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(argv[1], subs[i].name) == 0) {
            ctx->cmd = subs[i].cmd;
            return subs[i].fn(ctx, argc - 1, argv + 1);
        }
    }
    return cli_usage_error(ctx,
                           "unknown recovery command \"%s\" (list, "
                           "watchdog)",
                           argv[1]);
}
