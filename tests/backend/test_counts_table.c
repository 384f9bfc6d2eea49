/*
 * test_counts_table.c - rules S6 and S8 on every backend: every process's
 * counts reach the database. Buses on one database (each as a process
 * would be) add their published / acked / naked / dead-lettered counts to
 * {p}counts; sb_counts_list sums them per queue; a flush adds only what
 * moved, so flushing twice counts nothing twice; the background thread
 * and sb_close write without being asked; a failed flush keeps its counts
 * for the next one; counts_flush_ms is validated and an older caller's
 * sb_options (SB_OPTIONS_V1_SIZE) never has it read; a schema without
 * the table (SB_SCHEMA_VERIFY) opens, logs once and reports it.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sb_bus *open_with(const char *prefix, int64_t flush_ms, int mode)
{
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.counts_flush_ms = flush_ms;
    o.schema_mode = mode;
    return sbt_open(prefix, &o);
}

static const sb_queue_counts *find(const sb_queue_counts *q, size_t n,
                                   const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(q[i].queue, name) == 0)
            return &q[i];
    return NULL;
}

/* The database's totals of `queue` (zeros when it has no row). */
static sb_queue_counts totals(sb_bus *bus, const char *queue)
{
    sb_queue_counts *q = NULL, none;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_counts_list(bus, &q, &n, &err), &err, "sb_counts_list");
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(q[i - 1].queue, q[i].queue) < 0); /* by queue */
    const sb_queue_counts *k = find(q, n, queue);
    memset(&none, 0, sizeof none);
    sb_queue_counts out = k ? *k : none;
    sb_free(q);
    return out;
}

static void expect(sb_bus *bus, const char *queue, int64_t published,
                   int64_t acked, int64_t naked, int64_t dead)
{
    sb_queue_counts k = totals(bus, queue);
    if (k.published != published || k.acked != acked || k.naked != naked ||
        k.dead_lettered != dead)
        fail_msg("%s: published %lld acked %lld naked %lld dead %lld, want "
                 "%lld %lld %lld %lld",
                 queue, (long long)k.published, (long long)k.acked,
                 (long long)k.naked, (long long)k.dead_lettered,
                 (long long)published, (long long)acked, (long long)naked,
                 (long long)dead);
}

static void flush(sb_bus *bus)
{
    sb_error err;
    sbt_ok(sb_counts_flush(bus, &err), &err, "sb_counts_flush");
}

static sb_msg **claim(sb_bus *bus, const char *queue, int max, size_t *n)
{
    sb_msg **m = NULL;
    sb_error err;
    sbt_ok(sb_claim(bus, queue, max, 30000, &m, n, &err), &err, "claim");
    return m;
}

/* S6/S8: two buses' counts add up per queue; flushing again adds
 * nothing; sb_close writes what is left. */
static void test_buses_add_up(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *a = open_with(prefix, 3600000, SB_SCHEMA_AUTO);
    sb_bus *b = open_with(prefix, 3600000, SB_SCHEMA_AUTO);
    sb_bus *reader = open_with(prefix, -1, SB_SCHEMA_AUTO);
    expect(reader, "orders", 0, 0, 0, 0);

    sbt_publish_n(a, "orders", 5, NULL);
    sbt_publish_n(b, "mail", 2, NULL);
    size_t n = 0;
    sb_msg **m = claim(b, "orders", 4, &n);
    assert_int_equal(n, 4);
    sb_error err;
    sbt_ok(sb_ack(b, NULL, m[0], &err), &err, "ack");
    sbt_ok(sb_ack(b, NULL, m[1], &err), &err, "ack");
    sbt_ok(sb_nak(b, m[2], 0, "try again", &err), &err, "nak");
    sb_failure poison = {.size = sizeof poison, .reason = "poison"};
    sbt_ok(sb_dead_letter(b, m[3], &poison, &err), &err, "dead");
    sb_msg_free_array(m, n);
    /* Nothing is in the table before a flush (the interval is an hour). */
    expect(reader, "orders", 0, 0, 0, 0);

    flush(a);
    expect(reader, "orders", 5, 0, 0, 0);
    flush(b);
    expect(reader, "orders", 5, 2, 1, 1);
    expect(reader, "mail", 2, 0, 0, 0);
    flush(a);
    flush(b);
    expect(reader, "orders", 5, 2, 1, 1);

    sbt_publish_n(a, "orders", 3, NULL);
    sb_close(a); /* writes its last counts */
    expect(reader, "orders", 8, 2, 1, 1);

    sbt_drop(reader, prefix);
    sb_close(b);
    sb_close(reader);
}

/* The background thread writes without being asked. */
static void test_thread_writes(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_with(prefix, 50, SB_SCHEMA_AUTO);
    sbt_publish_n(bus, "ticks", 7, NULL);
    int64_t got = 0;
    for (int i = 0; i < 400 && got != 7; i++) {
        sbt_sleep_ms(25);
        got = totals(bus, "ticks").published;
    }
    assert_int_equal(got, 7);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* A failed flush keeps its counts: they are written once, by the next
 * flush that succeeds. */
static void test_failed_flush_keeps_counts(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *bus = open_with(prefix, 3600000, SB_SCHEMA_AUTO);
    sbt_publish_n(bus, "kept", 2, NULL);
    flush(bus);
    char sql[200];
    snprintf(sql, sizeof sql, "DROP TABLE %scounts", prefix);
    sbt_exec(bus, sql);
    sbt_publish_n(bus, "kept", 3, NULL);
    sb_error err;
    assert_int_not_equal(sb_counts_flush(bus, &err), SB_OK);
    assert_int_equal(
        sb_counts_list(bus, &(sb_queue_counts *){NULL}, &(size_t){0}, &err),
        SB_SCHEMA_MISSING);
    assert_non_null(strstr(err.message, "counts does not exist"));
    sbt_ok(sb_schema_migrate(bus, &err), &err, "migrate");
    flush(bus);
    expect(bus, "kept", 3, 0, 0, 0); /* the 2 went with the old table */
    flush(bus);
    expect(bus, "kept", 3, 0, 0, 0);
    sbt_drop(bus, prefix);
    sb_close(bus);
}

/* counts_flush_ms: its range, -1, and an older caller's struct. */
static void test_option(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    const int64_t bad[] = {-2, 1, 9, 3600001};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sb_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.url = sbt_url();
        o.table_prefix = prefix;
        o.counts_flush_ms = bad[i];
        sb_bus *bus = NULL;
        sb_error err;
        assert_int_equal(sb_open(&o, &bus, &err), SB_INVALID);
        assert_null(bus);
        assert_string_equal(err.field, "counts_flush_ms");
        assert_non_null(strstr(err.message, "3600000"));
    }
    sb_bus *off = open_with(prefix, -1, SB_SCHEMA_AUTO);
    sbt_publish_n(off, "quiet", 1, NULL);
    sb_error err;
    assert_int_equal(sb_counts_flush(off, &err), SB_MISUSE);
    assert_string_equal(err.field, "counts_flush_ms");
    sb_close(off);
    sb_bus *reader = open_with(prefix, -1, SB_SCHEMA_AUTO);
    expect(reader, "quiet", 0, 0, 0, 0); /* not written at close either */

    /* A caller built against the first sb_options: the bytes past
     * SB_OPTIONS_V1_SIZE are not its own and are never read. */
    sb_options o;
    memset(&o, 0, sizeof o);
    o.url = sbt_url();
    o.table_prefix = prefix;
    o.size = SB_OPTIONS_V1_SIZE;
    o.counts_flush_ms = 5; /* out of range, but not the caller's field */
    sb_bus *v1 = NULL;
    sbt_ok(sb_open(&o, &v1, &err), &err, "open with the first size");
    sbt_publish_n(v1, "old", 1, NULL);
    flush(v1); /* the default: written */
    expect(reader, "old", 1, 0, 0, 0);
    sb_close(v1);
    o.size = SB_OPTIONS_V1_SIZE - 1;
    assert_int_equal(sb_open(&o, &v1, &err), SB_INVALID);
    assert_string_equal(err.field, "size");

    sbt_drop(reader, prefix);
    sb_close(reader);
}

typedef struct logged {
    int warnings;
    char last[512];
} logged;

static void on_log(int level, const char *component, const char *message,
                   void *user)
{
    logged *l = user;
    if (level >= SB_LOG_WARN && strcmp(component, "counts") == 0) {
        l->warnings++;
        snprintf(l->last, sizeof l->last, "%s", message);
    }
}

/* A schema from before the table, under SB_SCHEMA_VERIFY: the bus opens
 * and works, says once that the counts stay in memory, and reports the
 * missing table to readers. */
static void test_verify_without_table(void **state)
{
    (void)state;
    const char *prefix = sbt_new_prefix();
    sb_bus *owner = open_with(prefix, -1, SB_SCHEMA_AUTO);
    char sql[200];
    snprintf(sql, sizeof sql, "DROP TABLE %scounts", prefix);
    sbt_exec(owner, sql);

    logged l;
    memset(&l, 0, sizeof l);
    sb_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.schema_mode = SB_SCHEMA_VERIFY;
    o.log = on_log;
    o.log_user = &l;
    sb_bus *bus = sbt_open(prefix, &o);
    assert_int_equal(l.warnings, 1);
    assert_non_null(strstr(l.last, "counts does not exist"));
    assert_non_null(strstr(l.last, "schema print"));
    sbt_publish_n(bus, "legacy", 2, NULL);
    assert_int_equal(sbt_count(bus, "legacy"), 2);
    sb_error err;
    assert_int_equal(sb_counts_flush(bus, &err), SB_MISUSE);
    sb_queue_counts *q = NULL;
    size_t n = 0;
    assert_int_equal(sb_counts_list(bus, &q, &n, &err), SB_SCHEMA_MISSING);
    assert_null(q);
    sb_close(bus);
    assert_int_equal(l.warnings, 1); /* closing tried no write */

    sbt_drop(owner, prefix);
    sb_close(owner);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buses_add_up),
        cmocka_unit_test(test_thread_writes),
        cmocka_unit_test(test_failed_flush_keeps_counts),
        cmocka_unit_test(test_option),
        cmocka_unit_test(test_verify_without_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
