/* cmd_serve.c - `sqlbus serve` (S1-S3, S9, S10): open the bus and the
 * error store, and a second pair for the HTTP API whose statements are
 * cancelled at --request-timeout, read the tokens, run ingestion and
 * housekeeping, serve HTTP (and with --demo a built-in workload) until
 * SIGINT/SIGTERM. */
#include "cli.h"
#include "server/demo.h"
#include "server/server.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_LISTEN = CLI_OPT_FIRST_LOCAL,
    OPT_TOKEN_FILE,
    OPT_RETENTION,
    OPT_ALLOW_EDIT,
    OPT_DEMO,
    OPT_REQUEST_TIMEOUT,
    OPT_INGESTERS,
    OPT_MAX_CONNECTIONS,
    OPT_MAX_PER_IP,
    OPT_HEADER_TIMEOUT,
    OPT_CORS_ORIGIN,
    OPT_ALLOWED_HOST,
    OPT_CHECK_INTERVAL
};

/* Issue 22: --cors-origin values kept (the server checks them). */
#define CORS_ORIGINS_MAX 16
/* Issue 22: --allowed-host values kept (the server checks them). */
#define ALLOWED_HOSTS_MAX 16

/* Ingestion threads by default: PostgreSQL (and SQL Server) runs one
 * pass's statements on one database core, so two passes at once use two
 * (docs/benchmarks.md, P10: 1.9x); SQLite has one writer at a time. */
#define INGESTERS_DEFAULT 2

#define RETENTION_MIN_MS (3600LL * 1000)
#define RETENTION_MAX_MS (365LL * 24 * 3600 * 1000)

#define TOKEN_LINE_MAX (SB_SERVER_TOKEN_MAX + 16)

/* S9: a token file holds "admin:TOKEN" and "read:TOKEN" lines (blank
 * lines and lines starting with '#' aside). Prints its errors. */
static int read_tokens(const char *path, char *admin, char *read)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        cli_errorf("cannot read the token file %s", path);
        return CLI_USAGE;
    }
    char line[TOKEN_LINE_MAX + 2];
    int n = 0, rc = CLI_OK;
    while (rc == CLI_OK && fgets(line, sizeof line, f) != NULL) {
        n++;
        size_t len = strcspn(line, "\r\n");
        if (line[len] == '\0' && !feof(f)) {
            cli_errorf("%s:%d: a line must be at most %d bytes", path, n,
                       TOKEN_LINE_MAX);
            rc = CLI_USAGE;
            break;
        }
        line[len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        char *dst = strncmp(line, "admin:", 6) == 0  ? admin
                    : strncmp(line, "read:", 5) == 0 ? read
                                                     : NULL;
        const char *tok = dst == admin ? line + 6 : line + 5;
        if (dst == NULL || tok[0] == '\0' ||
            strlen(tok) > SB_SERVER_TOKEN_MAX) {
            cli_errorf("%s:%d: expected admin:TOKEN or read:TOKEN (a token "
                       "of 1 to %d bytes)",
                       path, n, SB_SERVER_TOKEN_MAX);
            rc = CLI_USAGE;
            break;
        }
        memcpy(dst, tok, strlen(tok) + 1);
    }
    fclose(f);
    return rc;
}

/* The log callback of the server's components: their informational
 * lines read like serve's own ("sqlbus: demo: ..."), unless -q; debug
 * lines only with -v; warnings and errors as the bus logs them. */
static void serve_log(int level, const char *component, const char *message,
                      void *user)
{
    const cli_ctx *ctx = user;
    if (level >= SB_LOG_WARN)
        cli_log(level, component, message, user);
    else if (level >= SB_LOG_INFO || ctx->verbosity > 0)
        cli_notef(ctx, "%s: %s", component != NULL ? component : "-", message);
}

/* S10: the HTTP API's own bus and store: the same database, prefix and
 * log as serve's, each statement cancelled at `timeout_ms`, a small pool,
 * and no schema work (serve's bus created and verified the schema a
 * moment ago; a check at open would itself run under the limit, and
 * /health/ready verifies through this bus on every probe). Ingestion,
 * housekeeping, the operations worker and the demo keep serve's bus,
 * without a limit: bulk work legitimately takes long. Prints its errors;
 * on success the caller closes both with cli_errors_close. */
static int open_api(const cli_ctx *ctx, int allow_edit, int64_t timeout_ms,
                    sb_bus **bus, sb_errors **store)
{
    *bus = NULL;
    *store = NULL;
    sb_options o;
    cli_bus_options(ctx, SB_SCHEMA_NONE, &o);
    o.statement_timeout_ms = timeout_ms;
    o.pool_size = SB_SERVER_API_POOL;
    sb_error err;
    sb_error_clear(&err);
    int rc = sb_open(&o, bus, &err);
    if (rc == SB_OK) {
        sb_errors_options eo;
        memset(&eo, 0, sizeof eo);
        eo.size = sizeof eo;
        eo.allow_edit = allow_edit;
        rc = sb_errors_open(*bus, &eo, store, &err);
    }
    if (rc != SB_OK) {
        cli_errors_close(*bus, *store);
        *bus = NULL;
        *store = NULL;
        return cli_report(rc, &err);
    }
    return CLI_OK;
}

/* The URL to open for `listen` bound on `port`: a wildcard address is
 * reached through loopback. */
static void listen_url(char *out, size_t cap, const char *listen, int port)
{
    const char *colon = strrchr(listen, ':');
    size_t n = colon != NULL ? (size_t)(colon - listen) : strlen(listen);
    char host[128];
    if (n >= sizeof host)
        n = sizeof host - 1;
    memcpy(host, listen, n);
    host[n] = '\0';
    const char *h = strcmp(host, "0.0.0.0") == 0 || host[0] == '\0'
                        ? "127.0.0.1"
                    : strcmp(host, "[::]") == 0 ? "[::1]"
                                                : host;
    snprintf(out, cap, "http://%s:%d/", h, port);
}

int cli_cmd_serve(cli_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"error-retention", required_argument, NULL, OPT_RETENTION},
        {"demo", no_argument, NULL, OPT_DEMO},
        {"allow-edit", no_argument, NULL, OPT_ALLOW_EDIT},
        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
        {"ingesters", required_argument, NULL, OPT_INGESTERS},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
        {"max-connections-per-ip", required_argument, NULL, OPT_MAX_PER_IP},
        {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
        {"cors-origin", required_argument, NULL, OPT_CORS_ORIGIN},
        {"allowed-host", required_argument, NULL, OPT_ALLOWED_HOST},
        {"check-interval", required_argument, NULL, OPT_CHECK_INTERVAL},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    const char *listen = SB_SERVER_LISTEN, *token_file = NULL;
    int64_t retention_ms = SB_RETENTION_DEFAULT_MS;
    int64_t request_timeout_ms = SB_SERVER_REQUEST_TIMEOUT_MS;
    int64_t ingesters = 0;
    int64_t max_conns = SB_SERVER_MAX_CONNECTIONS;
    int64_t max_per_ip = SB_SERVER_MAX_PER_IP;
    int64_t header_timeout_ms = SB_SERVER_HEADER_TIMEOUT_MS;
    int64_t check_interval_ms = SB_SERVER_CHECK_INTERVAL_MS;
    const char *cors[CORS_ORIGINS_MAX];
    size_t n_cors = 0;
    const char *hosts[ALLOWED_HOSTS_MAX];
    size_t n_hosts = 0;
    int demo = 0, allow_edit = 0, c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(cli_usage_serve, stdout); return CLI_OK;
        case OPT_LISTEN: listen = optarg; break;
        case OPT_TOKEN_FILE: token_file = optarg; break;
        case OPT_DEMO: demo = 1; break;
        case OPT_ALLOW_EDIT: allow_edit = 1; break;
        case OPT_CORS_ORIGIN:
            if (n_cors == CORS_ORIGINS_MAX)
                return cli_usage_error(ctx,
                                       "--cors-origin may be given at most "
                                       "%d times",
                                       CORS_ORIGINS_MAX);
            cors[n_cors++] = optarg;
            break;
        case OPT_ALLOWED_HOST:
            if (n_hosts == ALLOWED_HOSTS_MAX)
                return cli_usage_error(ctx,
                                       "--allowed-host may be given at most "
                                       "%d times",
                                       ALLOWED_HOSTS_MAX);
            hosts[n_hosts++] = optarg;
            break;
        case OPT_REQUEST_TIMEOUT: {
            int prc = cli_parse_duration(ctx, "--request-timeout", optarg,
                                         SB_SERVER_REQUEST_TIMEOUT_MIN_MS,
                                         SB_SERVER_REQUEST_TIMEOUT_MAX_MS,
                                         &request_timeout_ms);
            if (prc != CLI_OK)
                return prc;
            break;
        }
        case OPT_INGESTERS: {
            int prc = cli_parse_int(ctx, "--ingesters", optarg, 1,
                                    SB_LOOPS_MAX_INGESTERS, &ingesters);
            if (prc != CLI_OK)
                return prc;
            break;
        }
        case OPT_MAX_CONNECTIONS: {
            int prc = cli_parse_int(ctx, "--max-connections", optarg, 2,
                                    SB_SERVER_CONNECTIONS_MAX, &max_conns);
            if (prc != CLI_OK)
                return prc;
            break;
        }
        case OPT_MAX_PER_IP: {
            int prc = cli_parse_int(ctx, "--max-connections-per-ip", optarg, 1,
                                    SB_SERVER_CONNECTIONS_MAX, &max_per_ip);
            if (prc != CLI_OK)
                return prc;
            break;
        }
        case OPT_HEADER_TIMEOUT: {
            int prc = cli_parse_duration(ctx, "--header-timeout", optarg,
                                         SB_SERVER_HEADER_TIMEOUT_MIN_MS,
                                         SB_SERVER_HEADER_TIMEOUT_MAX_MS,
                                         &header_timeout_ms);
            if (prc != CLI_OK)
                return prc;
            break;
        }
        case OPT_CHECK_INTERVAL: {
            int prc = cli_parse_duration(ctx, "--check-interval", optarg,
                                         SB_SERVER_CHECK_INTERVAL_MIN_MS,
                                         SB_SERVER_CHECK_INTERVAL_MAX_MS,
                                         &check_interval_ms);
            if (prc != CLI_OK)
                return prc;
            break;
        }
        case OPT_RETENTION: {
            sb_error perr;
            if (sb_parse_duration_ms(optarg, &retention_ms, &perr) != SB_OK ||
                retention_ms < RETENTION_MIN_MS ||
                retention_ms > RETENTION_MAX_MS)
                return cli_usage_error(ctx,
                                       "--error-retention must be a duration "
                                       "from 1h to 365d (got \"%s\")",
                                       optarg);
            break;
        }
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    char admin[SB_SERVER_TOKEN_MAX + 1] = "",
                                     read[SB_SERVER_TOKEN_MAX + 1] = "";
    const char *env = getenv("SQLBUS_TOKEN");
    if (env != NULL && strlen(env) > SB_SERVER_TOKEN_MAX)
        return cli_usage_error(ctx, "SQLBUS_TOKEN must be at most %d bytes",
                               SB_SERVER_TOKEN_MAX);
    if (env != NULL)
        memcpy(admin, env, strlen(env) + 1);
    if (token_file != NULL) {
        int rc = read_tokens(token_file, admin, read);
        if (rc != CLI_OK)
            return rc;
    }
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    /* The ingesters' connections beside housekeeping, the operations, the
     * stats sampler and the counts flusher. */
    int pool =
        (int)(ingesters > INGESTERS_DEFAULT ? ingesters : INGESTERS_DEFAULT) +
        6;
    ctx->pool_size = pool > 8 ? pool : 0;
    int rc = cli_errors_open(ctx, allow_edit, &bus, &store);
    ctx->pool_size = 0;
    if (rc != CLI_OK)
        return rc;
    if (ingesters == 0)
        ingesters =
            strcmp(sb_backend_name(bus), "sqlite") == 0 ? 1 : INGESTERS_DEFAULT;
    sb_bus *api_bus = NULL;
    sb_errors *api_store = NULL;
    rc = open_api(ctx, allow_edit, request_timeout_ms, &api_bus, &api_store);
    if (rc != CLI_OK) {
        cli_errors_close(bus, store);
        return rc;
    }
    sb_error err;
    sb_loops_options lo = {.retention_ms = retention_ms,
                           .ingesters = (int)ingesters,
                           .log = serve_log,
                           .log_user = ctx};
    sb_loops *loops = NULL;
    int src = sb__loops_start(bus, store, &lo, &loops, &err);
    sb_server_options o = {.listen = listen,
                           .admin_token = admin,
                           .read_token = read,
                           .store = store,
                           .loops = loops,
                           .retention_ms = retention_ms,
                           .edit_enabled = allow_edit,
                           .log = serve_log,
                           .log_user = ctx,
                           .api_bus = api_bus,
                           .api_store = api_store,
                           .request_timeout_ms = request_timeout_ms,
                           .max_connections = (unsigned)max_conns,
                           .max_per_ip = (unsigned)max_per_ip,
                           .header_timeout_ms = header_timeout_ms,
                           .cors_origins = cors,
                           .n_cors_origins = n_cors,
                           .allowed_hosts = hosts,
                           .n_allowed_hosts = n_hosts,
                           .check_interval_ms = check_interval_ms};
    sb_server *srv = NULL;
    if (src == SB_OK)
        src = sb__server_start(bus, &o, &srv, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
        sb__loops_stop(loops);
        cli_errors_close(api_bus, api_store);
        cli_errors_close(bus, store);
        return rc;
    }
    ctx->signal_stops = 1;
    cli_notef(ctx,
              "ingest: following the dead-letter queue with %d "
              "ingester%s; housekeeping: error retention %lld h, first run "
              "in 1 min, then hourly",
              (int)ingesters, ingesters == 1 ? "" : "s",
              (long long)(retention_ms / 3600000));
    char url[200], limit[32], head[32];
    listen_url(url, sizeof url, listen, sb__server_port(srv));
    cli_format_age(limit, sizeof limit, request_timeout_ms);
    cli_format_age(head, sizeof head, header_timeout_ms);
    cli_notef(ctx,
              "http: at most %lld connections, %lld from one address; a "
              "request head must arrive within %s",
              (long long)max_conns, (long long)max_per_ip, head);
    char origins[512];
    sb__server_cors_text(srv, origins, sizeof origins);
    cli_notef(ctx, "http: pages of other origins may call the API: %s",
              origins);
    cli_notef(ctx,
              "http: listening on port %d: %s (%s, %s, request timeout %s "
              "per statement)",
              sb__server_port(srv), url, listen,
              admin[0] || read[0] ? "tokens required" : "loopback, no token",
              limit);
    sb_demo *dm = NULL;
    if (demo) {
        /* S2: after the server is up, so its first messages are served. */
        sb_demo_options dopt = {.log = serve_log, .log_user = ctx};
        src = sb__demo_start(bus, &dopt, &dm, &err);
        if (src != SB_OK) {
            rc = cli_report(src, &err);
            sb__server_stop(srv);
            sb__loops_stop(loops);
            cli_errors_close(api_bus, api_store);
            cli_errors_close(bus, store);
            return rc;
        }
    }
    while (cli_signal_count() == 0) {
        struct pollfd p = {.fd = cli_signal_fd(), .events = POLLIN};
        poll(&p, 1, 1000);
    }
    sb__demo_stop(dm);
    sb__server_stop(srv);
    sb__loops_stop(loops);
    /* The API's bus counts in serve's: it goes first. */
    cli_errors_close(api_bus, api_store);
    cli_errors_close(bus, store);
    cli_notef(ctx, "stopped");
    return CLI_OK;
}
