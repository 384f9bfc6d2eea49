/* cmd_wait.c - `sqlbus wait`: attach to a correlation id created
 * elsewhere and print its reply (rules C1 attach, C2, C25). */
#include "cli.h"

#include <string.h>

static const cli_await_spec spec = {cli_usage_wait, "--correlation-id",
                                    cli_check_correlation_id, 0};

/* `sqlbus wait` (C25): exit 0 with the reply on stdout, 2 on an error
 * reply, 124 on timeout. */
int cli_cmd_wait(cli_ctx *ctx, int argc, char **argv)
{
    cli_await_opts o = {.timeout_ms = 30000};
    int rc = cli_parse_await(ctx, argc, argv, &spec, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    sb_channel *ch = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc == CLI_OK)
        rc = cli_open_channel(bus, &ch);
    if (rc == CLI_OK) {
        sb_wait_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.timeout_ms = o.timeout_ms;
        cli_until_apply(&o.until, &wo);
        sb_error err;
        sb_error_clear(&err);
        sb_waiter *w = NULL;
        int src = sb_attach(ch, o.key, &wo, &w, &err);
        if (src != SB_OK) {
            rc = cli_report(src, &err);
        } else {
            rc = cli_await(ctx, w);
            sb_waiter_free(w);
        }
    }
    sb_channel_close(ch);
    if (bus != NULL)
        sb_close(bus);
    return rc;
}
