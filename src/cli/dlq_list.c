/* dlq_list.c - `sqlbus dlq list`: dead letters, filtered by source queue
 * and age, as a table or JSON. */
#include "cli.h"

#include <string.h>

#define MESSAGE_COLUMNS 60

/* The first line of `s`, at most MESSAGE_COLUMNS code points. */
static void first_line(char *out, size_t cap, const char *s)
{
    size_t n = 0, cols = 0;
    if (s == NULL)
        s = "";
    for (; s[n] != '\0' && s[n] != '\n' && s[n] != '\r'; n++) {
        if (((unsigned char)s[n] & 0xc0) != 0x80 && ++cols > MESSAGE_COLUMNS)
            break;
        if (n + 4 >= cap)
            break;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)out[i] < 0x20)
            out[i] = ' ';
}

static int print_table(sb_msg **msgs, size_t n)
{
    static const char *const head[] = {"ID",  "FAILED-QUEUE", "ATTEMPTS",
                                       "AGE", "EXCEPTION",    "MESSAGE"};
    cli_table t;
    cli_table_init(&t, 6, head, 0x0c);
    int64_t now = sb__wall_us();
    for (size_t i = 0; i < n; i++) {
        const sb_msg *m = msgs[i];
        const char *attempts = sb_msg_header(m, "sb-attempts");
        char age[32], msg[MESSAGE_COLUMNS * 4 + 8];
        cli_format_age(age, sizeof age, (now - sb_msg_created_at_us(m)) / 1000);
        first_line(msg, sizeof msg, sb_msg_header(m, "sb-exception-message"));
        const char *type = sb_msg_header(m, "sb-exception-type");
        const char *fq = sb_msg_header(m, "sb-failed-queue");
        const char *row[] = {sb_msg_id(m),
                             fq != NULL ? fq : "-",
                             attempts != NULL ? attempts : "-",
                             age,
                             type != NULL ? type : "-",
                             msg};
        cli_table_add(&t, row);
    }
    int rc = cli_table_print(&t, stdout);
    cli_table_free(&t);
    return rc;
}

/* `sqlbus dlq list` (T32): returns an exit code. */
int cli_dlq_list(cli_ctx *ctx, int argc, char **argv)
{
    cli_dlq_args a;
    int rc = cli_dlq_parse(ctx, argc, argv,
                           CLI_DLQ_BIT(QUEUE) | CLI_DLQ_BIT(OLDER) |
                               CLI_DLQ_BIT(LIMIT) | CLI_DLQ_BIT(JSON),
                           cli_usage_dlq_list, &a);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (a.noperands > 0)
        return cli_usage_error(ctx, "unexpected argument \"%s\"",
                               a.operands[0]);
    if (a.filter.limit == 0)
        a.filter.limit = 100;

    sb_bus *bus = NULL;
    rc = cli_open_bus(ctx, SB_SCHEMA_AUTO, &bus);
    if (rc != CLI_OK)
        return rc;
    sb_msg **msgs = NULL;
    size_t n = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_dlq_list(bus, &a.filter, &msgs, &n, &err);
    if (src != SB_OK) {
        rc = cli_report(src, &err);
    } else if (a.json) {
        fputs("[", stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i == 0 ? "\n  " : ",\n  ", stdout);
            cli_dlq_json(stdout, msgs[i], 0, 2);
        }
        fputs(n == 0 ? "]\n" : "\n]\n", stdout);
    } else {
        rc = print_table(msgs, n);
        if (rc == CLI_OK && n == a.filter.limit)
            cli_notef(ctx,
                      "showing %zu dead letters (the --limit); raise "
                      "it for more",
                      n);
    }
    sb_msg_free_array(msgs, n);
    sb_close(bus);
    return rc;
}
