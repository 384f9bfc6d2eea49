/* common.c - what every subcommand shares: global options, error
 * reporting, flag value parsing and opening the bus. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Record a global option in ctx; 1 if `c` was one, else 0. */
int cli_global_option(cli_ctx *ctx, int c, const char *arg)
{
    switch (c) {
    case CLI_OPT_DB: ctx->db_url = arg; return 1;
    case CLI_OPT_PREFIX: ctx->prefix = arg; return 1;
    case 'v':
        if (ctx->verbosity < 0)
            ctx->verbosity = 0;
        ctx->verbosity++;
        return 1;
    case 'q': ctx->verbosity = -1; return 1;
    default: return 0;
    }
}

static const char *cmd_name(const cli_ctx *ctx)
{
    return ctx->cmd != NULL ? ctx->cmd : "";
}

/* Print a usage error naming the command, plus a hint to its --help.
 * Returns CLI_USAGE. */
int cli_usage_error(const cli_ctx *ctx, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = cmd_name(ctx);
    fprintf(stderr, "sqlbus%s%s: %s\n", name[0] ? " " : "", name, msg);
    fprintf(stderr, "Run 'sqlbus %s%s--help' for usage.\n", name,
            name[0] ? " " : "");
    return CLI_USAGE;
}

/* Explain a getopt_long failure ('?' unknown, ':' missing value). Returns
 * CLI_USAGE. */
int cli_bad_option(const cli_ctx *ctx, int c, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':')
        return cli_usage_error(ctx, "option %s needs a value", arg);
    if (optopt != 0 && optopt < 0x1000 && strncmp(arg, "--", 2) != 0)
        return cli_usage_error(ctx, "unknown option -%c", optopt);
    return cli_usage_error(ctx, "unknown option %s", arg);
}

/* Print "sqlbus: MESSAGE" on stderr, always. */
void cli_errorf(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sqlbus: %s\n", msg);
}

/* Print "sqlbus: MESSAGE" on stderr unless -q. */
void cli_notef(const cli_ctx *ctx, const char *fmt, ...)
{
    if (ctx->verbosity < 0)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sqlbus: %s\n", msg);
}

/* Map a library result code to the documented exit codes. */
int cli_exit_code(int rc)
{
    switch (rc & 0xff) {
    case SB_OK: return CLI_OK;
    case SB_INVALID:
    case SB_TOOBIG: return CLI_USAGE;
    case SB_SCHEMA: return CLI_SCHEMA;
    case SB_NOTFOUND: return CLI_NOTFOUND;
    case SB_BUSY:
    case SB_UNAVAILABLE: return CLI_UNAVAILABLE;
    case SB_CONFLICT: return CLI_CONFLICT;
    default: return CLI_ERROR;
    }
}

/* Print a library error ("sqlbus: <message> (field: X)") and return its
 * exit code. */
int cli_report(int rc, const sb_error *err)
{
    const char *msg =
        err != NULL && err->message[0] ? err->message : sb_strerror(rc);
    if (err != NULL && err->field[0] != '\0')
        fprintf(stderr, "sqlbus: %s (field: %s)\n", msg, err->field);
    else
        fprintf(stderr, "sqlbus: %s\n", msg);
    return cli_exit_code(rc);
}

/* Parse a duration flag within [min_ms, max_ms]; CLI_USAGE with a message
 * naming the flag and the limits. */
int cli_parse_duration(const cli_ctx *ctx, const char *flag, const char *text,
                       int64_t min_ms, int64_t max_ms, int64_t *out)
{
    sb_error err;
    sb_error_clear(&err);
    int64_t ms = 0;
    if (sb_parse_duration_ms(text, &ms, &err) != SB_OK)
        return cli_usage_error(ctx, "%s: %s", flag, err.message);
    if (ms < min_ms || ms > max_ms) {
        char lo[32], hi[32];
        cli_format_age(lo, sizeof lo, min_ms);
        cli_format_age(hi, sizeof hi, max_ms);
        return cli_usage_error(ctx, "%s must be %s..%s (got %s)", flag, lo, hi,
                               text);
    }
    *out = ms;
    return CLI_OK;
}

/* Parse a whole-number flag within [lo, hi]; CLI_USAGE with a message
 * naming the flag and the limits. */
int cli_parse_int(const cli_ctx *ctx, const char *flag, const char *text,
                  int64_t lo, int64_t hi, int64_t *out)
{
    const char *p = text;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (*p < '0' || *p > '9')
        return cli_usage_error(ctx,
                               "%s must be a whole number %lld..%lld "
                               "(got \"%s\")",
                               flag, (long long)lo, (long long)hi, text);
    int64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - (*p - '0')) / 10) {
            v = INT64_MAX;
            while (*p >= '0' && *p <= '9')
                p++;
            break;
        }
        v = v * 10 + (*p - '0');
    }
    if (*p != '\0')
        return cli_usage_error(ctx,
                               "%s must be a whole number %lld..%lld "
                               "(got \"%s\")",
                               flag, (long long)lo, (long long)hi, text);
    if (neg)
        v = -v;
    if (v < lo || v > hi)
        return cli_usage_error(ctx, "%s must be %lld..%lld (got %s)", flag,
                               (long long)lo, (long long)hi, text);
    *out = v;
    return CLI_OK;
}

int cli_header_flag_add(const cli_ctx *ctx, cli_header_flags *h,
                        const char *arg, size_t max)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg)
        return cli_usage_error(ctx,
                               "--header must be KEY=VALUE with a "
                               "non-empty key (got \"%s\")",
                               arg);
    /* Headers are a JSON object of strings: bytes that are not UTF-8
     * cannot be one, and the library would store a placeholder text for
     * the value instead of refusing it. */
    size_t key_len = (size_t)(eq - arg);
    if (!sb__utf8_valid(arg, key_len))
        return cli_usage_error(ctx, "--header: the name is not valid UTF-8");
    if (!sb__utf8_valid(eq + 1, strlen(eq + 1)))
        return cli_usage_error(ctx,
                               "--header %.*s: the value is not valid UTF-8",
                               (int)(key_len > 200 ? 200 : key_len), arg);
    if (max > CLI_MAX_HEADER_FLAGS)
        max = CLI_MAX_HEADER_FLAGS;
    if (h->n >= max)
        return cli_usage_error(ctx,
                               "--header may be given at most %zu "
                               "times",
                               max);
    char *key = sb__strndup(arg, (size_t)(eq - arg));
    if (key == NULL) {
        cli_errorf("out of memory");
        return CLI_ERROR;
    }
    h->kv[2 * h->n] = key;
    h->kv[2 * h->n + 1] = eq + 1;
    h->n++;
    h->kv[2 * h->n] = NULL;
    return CLI_OK;
}

void cli_header_flags_free(cli_header_flags *h)
{
    for (size_t i = 0; i < h->n; i++)
        sb__free((char *)h->kv[2 * i]);
    h->n = 0;
    h->kv[0] = NULL;
}

/* Validate a queue name (T3) given with `flag`; CLI_USAGE naming the
 * limit. */
int cli_check_queue(const cli_ctx *ctx, const char *flag, const char *name)
{
    sb_error err;
    sb_error_clear(&err);
    if (sb_validate_queue_name(name, &err) != SB_OK)
        return cli_usage_error(ctx, "%s: %s", flag, err.message);
    return CLI_OK;
}

/* Check a correlation id (rule C7); a usage error names `flag`. */
int cli_check_correlation_id(const cli_ctx *ctx, const char *flag,
                             const char *id)
{
    sb_error err;
    sb_error_clear(&err);
    if (sb_validate_correlation_id(id, &err) != SB_OK)
        return cli_usage_error(ctx, "%s: %s", flag, err.message);
    return CLI_OK;
}

/* The database URL: --db, $SQLBUS_DB, or the default. Borrowed. An
 * empty --db stays empty (cli_check_db refuses it); an empty $SQLBUS_DB
 * counts as unset, as shells write "SQLBUS_DB= cmd" to unset one. */
const char *cli_db_url(const cli_ctx *ctx)
{
    if (ctx->db_url != NULL)
        return ctx->db_url;
    const char *env = getenv("SQLBUS_DB");
    if (env != NULL && env[0] != '\0')
        return env;
    return CLI_DEFAULT_DB;
}

/* CLI_USAGE for an empty --db, which names no database: quietly using
 * $SQLBUS_DB or ./sqlbus.db instead would act on a database the caller
 * did not name. */
int cli_check_db(const cli_ctx *ctx)
{
    if (ctx->db_url != NULL && ctx->db_url[0] == '\0')
        return cli_usage_error(ctx, "--db must not be empty (a database "
                                    "URL: sqlite:PATH, postgresql://...)");
    return CLI_OK;
}

/* Log callback of the bus: one line per message on stderr. Thread-safe. */
void cli_log(int level, const char *component, const char *message, void *user)
{
    (void)user;
    const char *name = level >= SB_LOG_ERROR  ? "error"
                       : level >= SB_LOG_WARN ? "warning"
                       : level >= SB_LOG_INFO ? "info"
                                              : "debug";
    /* One call per line so lines from worker threads do not interleave. */
    fprintf(stderr, "sqlbus: %s: %s: %s\n", name,
            component != NULL ? component : "-", message);
}

/* The options of ctx's bus (URL, prefix, log level) into *o; the
 * strings are borrowed from ctx and the environment. */
void cli_bus_options(const cli_ctx *ctx, int schema_mode, sb_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->url = cli_db_url(ctx);
    o->table_prefix = ctx->prefix;
    o->schema_mode = schema_mode;
    o->pool_size = ctx->pool_size;
    o->log = cli_log;
    o->log_user = (void *)ctx;
    o->log_level = ctx->verbosity < 0    ? SB_LOG_ERROR
                   : ctx->verbosity == 0 ? SB_LOG_WARN
                   : ctx->verbosity == 1 ? SB_LOG_INFO
                                         : SB_LOG_DEBUG;
}

/* Open the bus for ctx (URL, prefix, log level). On failure prints the
 * error and returns its exit code; on success *out is the caller's to
 * sb_close. */
int cli_open_bus(const cli_ctx *ctx, int schema_mode, sb_bus **out)
{
    *out = NULL;
    int rc = cli_check_db(ctx);
    if (rc != CLI_OK)
        return rc;
    sb_options o;
    cli_bus_options(ctx, schema_mode, &o);
    sb_error err;
    sb_error_clear(&err);
    rc = sb_open(&o, out, &err);
    if (rc != SB_OK) {
        *out = NULL;
        return cli_report(rc, &err);
    }
    return CLI_OK;
}
