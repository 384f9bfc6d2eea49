/* cmd_request.c - `sqlbus request`: publish a job that asks for a reply
 * and print the reply (rules C23, C25). */
#include "cli.h"

#include <string.h>

static const cli_await_spec spec = {cli_usage_request, "--queue",
                                    cli_check_queue, 1};

/* `sqlbus request` (C25): exit 0 with the reply on stdout, 2 on an error
 * reply, 124 on timeout. */
int cli_cmd_request(cli_ctx *ctx, int argc, char **argv)
{
    cli_await_opts o = {.timeout_ms = 30000};
    int rc = cli_parse_await(ctx, argc, argv, &spec, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_buf body;
    rc = cli_read_payload(o.file, &body);
    if (rc != CLI_OK) {
        sb__buf_free(&body);
        return rc;
    }
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
        int src = sb_request_job(ch, o.key, body.data, body.len, &wo, &w, &err);
        if (src != SB_OK) {
            rc = cli_report(src, &err);
        } else {
            if (ctx->verbosity >= 1)
                cli_notef(ctx, "request: waiting for the reply to %s",
                          sb_waiter_correlation_id(w));
            rc = cli_await(ctx, w);
            sb_waiter_free(w);
        }
    }
    sb_channel_close(ch);
    if (bus != NULL)
        sb_close(bus);
    sb__buf_free(&body);
    return rc;
}
