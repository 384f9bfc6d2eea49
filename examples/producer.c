/*
 * producer.c - publish messages with libsqlbus.
 *
 *   producer URL QUEUE N
 *
 * 1. Publishes N messages ("order 1" .. "order N") to QUEUE in one
 *    sb_publish_batch call: all of them commit, or none does.
 * 2. Shows the transactional outbox: begins a transaction, writes a row of
 *    the application's own table (example_orders) and publishes one more
 *    message ("order N+1") in the same transaction, then commits. The row
 *    and the message become visible together, or not at all.
 *
 * Every message id is printed on stdout, one per line. Errors go to stderr;
 * the exit code is 0 on success and 1 on any failure.
 *
 * Build: see README.md (cc $(pkg-config --cflags sqlbus) producer.c
 *        $(pkg-config --libs sqlbus)).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlbus.h>

/* The largest N accepted on the command line (one batch holds them all). */
#define MAX_MESSAGES 100000L

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s URL QUEUE N\n"
            "  URL    sqlite:PATH, PATH.db or postgresql://...\n"
            "  QUEUE  the queue to publish to\n"
            "  N      messages to publish in one batch (1..%ld)\n",
            prog, MAX_MESSAGES);
}

/* Print a failed call with the library's detail. */
static void report(const char *what, int rc, const sb_error *err)
{
    fprintf(stderr, "producer: %s failed: %s", what,
            err->message[0] != '\0' ? err->message : sb_strerror(rc));
    if (err->field[0] != '\0')
        fprintf(stderr, " (field: %s)", err->field);
    fprintf(stderr, " [%s]\n", sb_strerror(rc));
}

static int parse_count(const char *text, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 1 || v > MAX_MESSAGES)
        return -1;
    *out = v;
    return 0;
}

static const char order_headers[] = "{\"sb-message-type\":\"order\"}";

/* Step 1: N messages in one batch, all or nothing. */
static int publish_batch(sb_bus *bus, const char *queue, long n)
{
    sb_error err;
    sb_error_clear(&err);
    size_t count = (size_t)n;
    sb_outgoing *msgs = calloc(count, sizeof *msgs);
    char(*payloads)[32] = calloc(count, sizeof *payloads);
    char(*ids)[37] = calloc(count, sizeof *ids);
    int status = 1;
    if (msgs == NULL || payloads == NULL || ids == NULL) {
        fprintf(stderr, "producer: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        int len = snprintf(payloads[i], sizeof payloads[i], "order %zu", i + 1);
        msgs[i].payload = payloads[i];
        msgs[i].payload_len = (size_t)len;
        msgs[i].headers_json = order_headers;
        /* id = NULL: the library assigns a new UUIDv7. */
    }
    int rc = sb_publish_batch(bus, NULL, queue, msgs, count, ids, &err);
    if (rc != SB_OK) {
        report("sb_publish_batch", rc, &err);
        goto out;
    }
    for (size_t i = 0; i < count; i++)
        printf("%s\n", ids[i]);
    status = 0;
out:
    free(ids);
    free(payloads);
    free(msgs);
    return status;
}

/* Step 2: the application's own write and a message in one transaction. */
static int publish_in_tx(sb_bus *bus, const char *queue, long n)
{
    sb_error err;
    sb_error_clear(&err);
    sb_tx *tx = NULL;
    int rc = sb_tx_begin(bus, &tx, &err);
    if (rc != SB_OK) {
        report("sb_tx_begin", rc, &err);
        return 1;
    }

    /* The caller's own SQL; this text works on SQLite and PostgreSQL. */
    rc = sb_tx_exec(tx, "CREATE TABLE IF NOT EXISTS example_orders (n integer)",
                    &err);
    if (rc != SB_OK) {
        report("CREATE TABLE example_orders", rc, &err);
        sb_tx_rollback(tx);
        return 1;
    }
    char sql[96];
    snprintf(sql, sizeof sql, "INSERT INTO example_orders (n) VALUES (%ld)",
             n + 1);
    rc = sb_tx_exec(tx, sql, &err);
    if (rc != SB_OK) {
        report("INSERT INTO example_orders", rc, &err);
        sb_tx_rollback(tx);
        return 1;
    }

    char payload[32];
    int len = snprintf(payload, sizeof payload, "order %ld", n + 1);
    sb_outgoing msg = {
        .payload = payload,
        .payload_len = (size_t)len,
        .headers_json = order_headers,
    };
    char id[37];
    rc = sb_publish(bus, tx, queue, &msg, id, &err);
    if (rc != SB_OK) {
        report("sb_publish (in transaction)", rc, &err);
        sb_tx_rollback(tx);
        return 1;
    }

    /* Commit frees the transaction, on success and on failure. Until it
     * returns SB_OK neither the row nor the message exists. */
    rc = sb_tx_commit(tx, &err);
    if (rc != SB_OK) {
        report("sb_tx_commit", rc, &err);
        return 1;
    }
    printf("%s\n", id);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        usage(argv[0]);
        return 1;
    }
    const char *url = argv[1];
    const char *queue = argv[2];
    long n = 0;
    if (parse_count(argv[3], &n) != 0) {
        fprintf(stderr,
                "producer: N must be a number from 1 to %ld "
                "(got \"%s\")\n",
                MAX_MESSAGES, argv[3]);
        usage(argv[0]);
        return 1;
    }

    sb_error err;
    sb_error_clear(&err);
    sb_options opts;
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.url = url; /* the schema is created on first use (SB_SCHEMA_AUTO) */

    sb_bus *bus = NULL;
    int rc = sb_open(&opts, &bus, &err);
    if (rc != SB_OK) {
        report("sb_open", rc, &err);
        return 1;
    }

    int status = publish_batch(bus, queue, n);
    if (status == 0)
        status = publish_in_tx(bus, queue, n);
    if (status == 0) {
        fprintf(stderr, "producer: published %ld messages to \"%s\" on %s\n",
                n + 1, queue, sb_backend_name(bus));
    }
    sb_close(bus);
    if (fflush(stdout) != 0) {
        perror("producer: stdout");
        status = 1;
    }
    return status;
}
