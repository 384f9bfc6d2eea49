/* until.c - which reply ends the wait of `request` and `wait` (rules C2,
 * C25): --until-prefix S, or --until PATH, PATH=VALUE, PATH!=VALUE on the
 * reply's JSON. Every other reply is progress. */
#include "cli.h"

#include <string.h>

/* The two flags exclude each other; repeating one keeps the last. */
static int check_exclusive(const cli_ctx *ctx, const cli_until *u, int prefix)
{
    if (u->kind == CLI_UNTIL_NONE || (u->kind == CLI_UNTIL_PREFIX) == prefix)
        return CLI_OK;
    return cli_usage_error(ctx,
                           "--until and --until-prefix cannot be combined");
}

/* --until-prefix S: a reply starting with S ends the wait. */
int cli_until_set_prefix(const cli_ctx *ctx, const char *prefix, cli_until *u)
{
    int rc = check_exclusive(ctx, u, 1);
    if (rc != CLI_OK)
        return rc;
    u->kind = CLI_UNTIL_PREFIX;
    u->text = prefix;
    return CLI_OK;
}

/* --until EXPR: checked now, so a bad path is a usage error before
 * anything is published. */
int cli_until_set_expr(const cli_ctx *ctx, const char *expr, cli_until *u)
{
    int rc = check_exclusive(ctx, u, 0);
    if (rc != CLI_OK)
        return rc;
    /* The path ends at the first '=' (a '!' before it makes "!="), so
     * VALUE may hold any byte and PATH no '='. */
    const char *eq = strchr(expr, '=');
    size_t plen = strlen(expr);
    u->kind = CLI_UNTIL_PRESENT;
    u->text = NULL;
    if (eq != NULL) {
        int ne = eq > expr && eq[-1] == '!';
        plen = (size_t)(eq - expr) - (ne ? 1 : 0);
        u->kind = ne ? CLI_UNTIL_NE : CLI_UNTIL_EQ;
        u->text = eq + 1;
    }
    if (plen > SB_JSON_PATH_MAX)
        return cli_usage_error(ctx,
                               "--until: the path is %zu bytes; the limit "
                               "is %d bytes",
                               plen, SB_JSON_PATH_MAX);
    memcpy(u->path, expr, plen);
    u->path[plen] = '\0';
    sb_error err;
    sb_error_clear(&err);
    if (sb__json_path_check(u->path, &err) != SB_OK)
        return cli_usage_error(ctx,
                               "--until: %s (the forms are PATH, "
                               "PATH=VALUE and PATH!=VALUE)",
                               err.message);
    return CLI_OK;
}

/* C2 predicate of --until-prefix: terminal when the reply starts with
 * the prefix. */
static int until_prefix(const sb_reply *r, void *user)
{
    const cli_until *u = user;
    size_t len = 0, n = strlen(u->text);
    const char *data = sb_reply_data(r, &len);
    return len >= n && (n == 0 || memcmp(data, u->text, n) == 0);
}

/* C2 predicate of --until: terminal when the reply is JSON with a string
 * or integer at the path that matches. A reply that is not JSON, or has
 * no such value, is progress. The reply is already in memory (its size
 * bounded by the library), so no budget of its own applies. */
static int until_expr(const sb_reply *r, void *user)
{
    const cli_until *u = user;
    size_t len = 0;
    const void *data = sb_reply_data(r, &len);
    const char *paths[] = {u->path};
    char *value = NULL;
    if (sb__json_extract_text(data, len, paths, 1, SIZE_MAX, &value, NULL) !=
        SB_OK)
        return 0;
    int terminal = u->kind == CLI_UNTIL_PRESENT ||
                   (strcmp(value, u->text) == 0) == (u->kind == CLI_UNTIL_EQ);
    sb__free(value);
    return terminal;
}

/* Install the predicate; `u` must outlive the wait. */
void cli_until_apply(const cli_until *u, sb_wait_options *wo)
{
    if (u->kind == CLI_UNTIL_NONE)
        return;
    wo->until = u->kind == CLI_UNTIL_PREFIX ? until_prefix : until_expr;
    wo->until_user = (void *)u;
}
