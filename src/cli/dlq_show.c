/* dlq_show.c - `sqlbus dlq show ID`: one dead letter in full, and the
 * JSON form of a dead letter that `dlq list --json` shares. */
#include "cli.h"

#include <string.h>

/* A header holding a decimal count, or `fallback`. */
static long long header_count(const sb_msg *m, const char *key,
                              long long fallback)
{
    const char *v = sb_msg_header(m, key);
    if (v == NULL || *v == '\0')
        return fallback;
    long long n = 0;
    for (const char *p = v; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || n > 1000000000LL)
            return fallback;
        n = n * 10 + (*p - '0');
    }
    return n;
}

static void json_field(FILE *f, int indent, const char *name, const char *value,
                       int *first)
{
    fprintf(f, "%s\n%*s\"%s\": ", *first ? "{" : ",", indent + 2, "", name);
    *first = 0;
    cli_json_str(f, value);
}

/* Write one dead letter as a JSON object; see cli.h. */
void cli_dlq_json(FILE *f, const sb_msg *m, int with_payload, int indent)
{
    int first = 1;
    char when[40];
    cli_format_time(when, sizeof when, sb_msg_created_at_us(m));
    size_t len = 0;
    const void *payload = sb_msg_payload(m, &len);
    json_field(f, indent, "id", sb_msg_id(m), &first);
    json_field(f, indent, "queue", sb_msg_queue(m), &first);
    json_field(f, indent, "failed_queue", sb_msg_header(m, "sb-failed-queue"),
               &first);
    json_field(f, indent, "original_id", sb_msg_header(m, "sb-message-id"),
               &first);
    fprintf(f, ",\n%*s\"attempts\": %lld", indent + 2, "",
            header_count(m, "sb-attempts", sb_msg_attempts(m)));
    json_field(f, indent, "dead_lettered_at", when, &first);
    json_field(f, indent, "dead_letter_reason",
               sb_msg_header(m, "sb-dead-letter-reason"), &first);
    json_field(f, indent, "exception_type",
               sb_msg_header(m, "sb-exception-type"), &first);
    json_field(f, indent, "exception_message",
               sb_msg_header(m, "sb-exception-message"), &first);
    fprintf(f, ",\n%*s\"payload_bytes\": %zu", indent + 2, "", len);
    fprintf(f, ",\n%*s\"headers\": ", indent + 2, "");
    const char *h = sb_msg_headers(m);
    cli_json_pretty(f, h != NULL && *h != '\0' ? h : "{}", indent + 2);
    if (with_payload) {
        int text = cli_is_text(payload, len);
        json_field(f, indent, "payload_encoding", text ? "utf-8" : "base64",
                   &first);
        fprintf(f, ",\n%*s\"payload\": ", indent + 2, "");
        if (text) {
            cli_json_strn(f, payload, len);
        } else {
            fputc('"', f);
            cli_base64(f, payload, len);
            fputc('"', f);
        }
    }
    fprintf(f, "\n%*s}", indent, "");
}

static void show_text(const sb_msg *m)
{
    char when[40];
    cli_format_time(when, sizeof when, sb_msg_created_at_us(m));
    const char *fq = sb_msg_header(m, "sb-failed-queue");
    const char *orig = sb_msg_header(m, "sb-message-id");
    const char *type = sb_msg_header(m, "sb-exception-type");
    const char *reason = sb_msg_header(m, "sb-dead-letter-reason");
    printf("id:              %s\n", sb_msg_id(m));
    printf("queue:           %s\n", sb_msg_queue(m));
    printf("failed queue:    %s\n", fq != NULL ? fq : "-");
    printf("original id:     %s\n", orig != NULL ? orig : "-");
    printf("attempts:        %lld\n",
           header_count(m, "sb-attempts", sb_msg_attempts(m)));
    printf("dead-lettered:   %s\n", when);
    printf("reason:          %s\n", reason != NULL ? reason : "-");
    printf("exception type:  %s\n", type != NULL ? type : "-");
    const char *h = sb_msg_headers(m);
    fputs("headers:\n  ", stdout);
    cli_json_pretty(stdout, h != NULL && *h != '\0' ? h : "{}", 2);
    fputc('\n', stdout);
    size_t len = 0;
    const void *payload = sb_msg_payload(m, &len);
    if (cli_is_text(payload, len)) {
        printf("payload (%zu bytes):\n", len);
        fwrite(payload, 1, len, stdout);
        if (len > 0 && ((const char *)payload)[len - 1] != '\n')
            fputc('\n', stdout);
    } else {
        printf("payload (%zu bytes, not UTF-8 text; hex dump):\n", len);
        cli_hexdump(stdout, payload, len);
    }
}

/* `sqlbus dlq show ID` (T32): returns an exit code (4 when unknown). */
int cli_dlq_show(cli_ctx *ctx, int argc, char **argv)
{
    cli_dlq_args a;
    int rc = cli_dlq_parse(ctx, argc, argv, CLI_DLQ_BIT(JSON),
                           cli_usage_dlq_show, &a);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (a.noperands != 1)
        return cli_usage_error(ctx, "give exactly one dead-letter id (from "
                                    "'sqlbus dlq list')");
    a.filter.id = a.operands[0];
    a.filter.limit = 1;

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
    } else if (n == 0) {
        cli_errorf("no dead-lettered message with id %s", a.filter.id);
        rc = CLI_NOTFOUND;
    } else if (a.json) {
        cli_dlq_json(stdout, msgs[0], 1, 0);
        fputc('\n', stdout);
    } else {
        show_text(msgs[0]);
    }
    sb_msg_free_array(msgs, n);
    sb_close(bus);
    return rc;
}
