/*
 * test_server_ops.c - the durable operations `sqlbus serve` runs
 * (sb_operations_*, src/errors/operations.c, rule S5) on every backend,
 * through the public API only: a retry of every unresolved message, or
 * of a group, whose process is killed part way resumes after its job's
 * lease and reports the whole operation, each message retried exactly
 * once; a table of another shape is refused; the calls keep their
 * contract (arguments refused before anything is written).
 */
#include "harness_errors.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MESSAGES 3500 /* four batches of at most 1,000 */
#define KILL_AT 2000  /* after the second batch committed */
#define LEASE_MS 1000 /* the operation job's lease, shortened */

static long scalar(const char *fmt, const char *prefix, const char *param)
{
    char sql[512];
    snprintf(sql, sizeof sql, fmt, prefix);
    return sbt_native_scalar(sql, param);
}

/* The child's kill point: once the operation's committed progress
 * reaches KILL_AT, the process dies as if SIGKILLed from outside. */
static void die_at(const char *id, int64_t done, int64_t total, void *user)
{
    (void)id;
    (void)total;
    (void)user;
    if (done >= KILL_AT)
        raise(SIGKILL);
}

/* S5: serve killed (SIGKILL) during a retry of MESSAGES failed messages
 * on `queue` (`group` NULL: every unresolved one; else that group's),
 * KILL_AT of them done. After the job's lease another process's worker
 * resumes it, and the finished operation reports the whole operation
 * (total MESSAGES, done MESSAGES), not what was left at the resume; every
 * message was re-published exactly once. */
/* When the group's own record of the killed run counts as interrupted
 * (60 s after its last batch): before serve runs again, or only after
 * the resumed job met that record still live. */
enum { AGE_BEFORE, AGE_AFTER_CONFLICT };

static void age_group_record(sbe_env *e)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE %sgroup_operations SET updated_at = updated_at - "
             "61000000",
             e->prefix);
    sbt_exec(e->bus, sql);
}

static void retry_resumes_whole(sbe_env *e, const char *queue,
                                const char *group, int age)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        close(fds[0]);
        sb_bus *cb = sbt_open(e->prefix, NULL);
        sb_errors *store = NULL;
        sb_operations *ops = NULL;
        sb_operations_options oo = {
            .size = sizeof oo, .lease_ms = LEASE_MS, .progress = die_at};
        if (sb_errors_open(cb, NULL, &store, NULL) != SB_OK ||
            sb_operations_open(store, &oo, &ops, NULL) != SB_OK)
            _exit(2);
        sb_failed_selection sel = {
            .size = sizeof sel, .group_id = group, .all = group == NULL};
        sb_operation_info op = {.size = sizeof op};
        sb_error err;
        if (sb_operations_submit(ops, NULL, "retry", &sel, &op, &err) != SB_OK)
            _exit(2);
        if (write(fds[1], op.id, sizeof op.id) != (ssize_t)sizeof op.id)
            _exit(2);
        for (;;)
            pause(); /* the worker's kill, or the alarm */
    }
    close(fds[1]);
    char id[37] = "";
    ssize_t got = read(fds[0], id, sizeof id);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(got, (ssize_t)sizeof id);
    assert_int_equal(scalar("SELECT count(*) FROM %sfailed_messages WHERE "
                            "status = CAST($1 AS INTEGER)",
                            e->prefix, "0"),
                     MESSAGES - KILL_AT);
    /* The group's own operation (E19) is resumed only once it counts as
     * interrupted, 60 s after its last batch: that time passes. */
    if (group != NULL && age == AGE_BEFORE)
        age_group_record(e);

    /* serve again: its worker takes the job once the lease has passed. */
    sb_bus *bus = sbt_open(e->prefix, NULL);
    sb_errors *store = NULL;
    sb_operations *ops = NULL;
    sb_error err;
    sbt_ok(sb_errors_open(bus, NULL, &store, &err), &err, "store");
    sb_operations_options oo = {.size = sizeof oo, .lease_ms = LEASE_MS};
    sbt_ok(sb_operations_open(store, &oo, &ops, &err), &err, "ops");
    sb_operation_info op;
    memset(&op, 0, sizeof op);
    op.size = sizeof op;
    int aged = group == NULL || age == AGE_BEFORE;
    for (int i = 0; i < 300; i++) {
        sbt_ok(sb_operations_get(ops, bus, id, &op, &err), &err, "get");
        if (strcmp(op.state, "completed") == 0 ||
            strcmp(op.state, "failed") == 0)
            break;
        /* The job met the killed run's record still live and was put
         * back for later, not failed: now that record goes stale. */
        if (!aged && scalar("SELECT count(*) FROM %smessages WHERE queue = "
                            "$1 AND last_error IS NOT NULL",
                            e->prefix, SB_OPERATIONS_QUEUE) > 0) {
            age_group_record(e);
            aged = 1;
        }
        sbt_sleep_ms(100);
    }
    if (strcmp(op.state, "completed") != 0)
        fail_msg("the resumed operation is %s after 30 s (done %lld of "
                 "%lld): %s",
                 op.state, (long long)op.done, (long long)op.total, op.error);
    if (op.total != MESSAGES || op.done != MESSAGES)
        fail_msg("the resumed operation reports total %lld, done %lld; "
                 "want the whole operation, %d of %d",
                 (long long)op.total, (long long)op.done, MESSAGES, MESSAGES);
    sb_operations_close(ops);
    sb_errors_close(store);
    sb_close(bus);
    assert_int_equal(scalar("SELECT count(*) FROM %sfailed_messages WHERE "
                            "status = CAST($1 AS INTEGER)",
                            e->prefix, "1"),
                     MESSAGES);
    /* Each message was re-published once: as many jobs on its queue as
     * messages, each with its own headers (sb-retry-of is its id). */
    assert_int_equal(scalar("SELECT count(*) FROM %smessages WHERE queue = "
                            "$1",
                            e->prefix, queue),
                     MESSAGES);
    assert_int_equal(scalar("SELECT count(DISTINCT headers) FROM %smessages "
                            "WHERE queue = $1",
                            e->prefix, queue),
                     MESSAGES);
}

/* S5: POST /api/errors/retry/all, serve killed part way. */
static void test_retry_all_resumes_whole(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open_single_threaded(&e);
    sbe_seed_failed(&e, "qk", MESSAGES);
    retry_resumes_whole(&e, "qk", NULL, AGE_BEFORE);
    sbe_close(&e);
}

/* S5, E19: a group's retry, serve killed part way: the operation and the
 * group's own record both resume. */
static void group_retry_resumes(int age)
{
    sbe_env e;
    sbe_open_single_threaded(&e);
    sbe_seed_failed(&e, "qg", MESSAGES);
    char group[37];
    sbe_group_of(&e, "qg", SB_FAILED_UNRESOLVED, group);
    retry_resumes_whole(&e, "qg", group, age);
    sb_group_operation g = {.size = sizeof g};
    sb_error err;
    sbt_ok(sb_errors_group_operation(e.store, group, &g, &err), &err,
           "group operation");
    assert_string_equal(g.state, "completed");
    assert_int_equal(g.total, MESSAGES);
    assert_int_equal(g.done, MESSAGES);
    sbe_close(&e);
}

static void test_group_retry_resumes_whole(void **state)
{
    (void)state;
    group_retry_resumes(AGE_BEFORE);
}

/* S5, E19: the job of a killed group retry comes back (its lease lapsed)
 * while the group's record of the killed run still counts as live; the
 * job waits for that record to go stale instead of failing. */
static void test_group_retry_resumes_after_conflict(void **state)
{
    (void)state;
    group_retry_resumes(AGE_AFTER_CONFLICT);
}

/* Issue 17: the operations table is checked against the catalog at
 * start. One of another shape (a key of another type, a column missing)
 * is refused with SB_SCHEMA_MISMATCH naming the column and the fix for
 * that table, as the messages table's check does; its rows stay. */
static void test_operations_table_of_another_shape(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE TABLE %soperations (id VARCHAR(36) NOT NULL PRIMARY "
             "KEY, kind VARCHAR(20) NOT NULL)",
             e.prefix);
    sbt_exec(e.bus, sql);
    snprintf(sql, sizeof sql,
             "INSERT INTO %soperations (id, kind) VALUES ('x', 'retry')",
             e.prefix);
    sbt_exec(e.bus, sql);
    sb_operations *ops = NULL;
    sb_error err;
    int rc = sb_operations_open(e.store, NULL, &ops, &err);
    if (rc != SB_SCHEMA_MISMATCH)
        fail_msg("start: %d, want SB_SCHEMA_MISMATCH: %s", rc, err.message);
    assert_null(ops);
    /* The columns it lacks come first (issue 20.8). */
    assert_string_equal(err.field, "selection");
    if (strstr(err.message, "column selection is missing") == NULL)
        fail_msg("the message names no missing column: %s", err.message);
    char table[96];
    snprintf(table, sizeof table, "%soperations", e.prefix);
    const char *fix = strstr(err.message, "; fix: ");
    if (fix == NULL || strstr(fix, table) == NULL)
        fail_msg("the message has no fix for %s: %s", table, err.message);
    assert_int_equal(scalar("SELECT count(*) FROM %soperations WHERE kind = "
                            "$1",
                            e.prefix, "retry"),
                     1);
    snprintf(sql, sizeof sql, "DROP TABLE %soperations", e.prefix);
    sbt_exec(e.bus, sql);
    sbe_close(&e);
}

/* What each listed operation's callback saw: the ids in order, and
 * when to stop. */
typedef struct seen {
    int n, stop_at;
    char ids[4][37];
} seen;

static int see(const sb_operation_info *op, void *user)
{
    seen *s = user;
    assert_true(op->size >= sizeof *op);
    if (s->n < 4)
        memcpy(s->ids[s->n], op->id, sizeof op->id);
    s->n++;
    return s->n >= s->stop_at;
}

static int never(const sb_operation_info *op, void *user)
{
    (void)op;
    (void)user;
    fail_msg("the callback ran on a rejected call");
    return 1;
}

/* The operation `id` once it has ended (30 s at most). */
static sb_operation_info ended(sb_operations *ops, const char *id)
{
    sb_operation_info op = {.size = sizeof op};
    sb_error err;
    for (int i = 0; i < 300; i++) {
        sbt_ok(sb_operations_get(ops, NULL, id, &op, &err), &err, "get");
        if (strcmp(op.state, "completed") == 0 ||
            strcmp(op.state, "failed") == 0)
            return op;
        sbt_sleep_ms(100);
    }
    fail_msg("operation %s is %s after 30 s", id, op.state);
    return op;
}

/* Issue 18: the calls `sqlbus serve` uses are public, so their contract
 * is tested here: arguments are refused before anything is written (the
 * callback never runs then), an accepted operation reads back the same
 * from get and list, runs to the end with its whole count, and list
 * gives the newest first and stops when its callback says. */
static void test_operations_public_calls(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_seed_failed(&e, "qa", 3);
    sb_operations *ops = NULL;
    sb_error err;
    sb_operations_options short_opts = {.size = 1};
    assert_int_equal(sb_operations_open(e.store, &short_opts, &ops, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "size");
    assert_null(ops);
    sbt_ok(sb_operations_open(e.store, NULL, &ops, &err), &err, "open");

    sb_failed_selection sel = {.size = sizeof sel, .failed_queue = "qa"};
    sb_failed_selection two = {
        .size = sizeof two, .failed_queue = "qa", .all = 1};
    sb_operation_info op = {.size = sizeof op};
    sb_operation_info short_info = {.size = sizeof short_info - 1};
    assert_int_equal(
        sb_operations_submit(ops, NULL, "explode", &sel, &op, &err),
        SB_INVALID);
    assert_string_equal(err.field, "kind");
    assert_int_equal(
        sb_operations_submit(ops, NULL, "archive", &two, &op, &err),
        SB_INVALID);
    assert_string_equal(err.field, "selection");
    assert_int_equal(
        sb_operations_submit(ops, NULL, "archive", &sel, &short_info, &err),
        SB_INVALID);
    assert_string_equal(err.field, "size");
    assert_int_equal(scalar("SELECT count(*) FROM %soperations WHERE id <> "
                            "$1",
                            e.prefix, ""),
                     0);

    sbt_ok(sb_operations_submit(ops, e.bus, "archive", &sel, &op, &err), &err,
           "submit archive");
    assert_string_equal(op.kind, "archive");
    assert_string_equal(op.state, "queued");
    assert_int_equal(op.total, -1);
    sb_operation_info done = ended(ops, op.id);
    assert_string_equal(done.state, "completed");
    assert_string_equal(done.id, op.id);
    assert_int_equal(done.created_us, op.created_us);
    assert_int_equal(done.total, 3);
    assert_int_equal(done.done, 3);

    sb_operation_info second = {.size = sizeof second};
    sbt_ok(sb_operations_submit(ops, NULL, "unarchive", &sel, &second, &err),
           &err, "submit unarchive");
    assert_string_equal(ended(ops, second.id).state, "completed");
    seen s = {.stop_at = 1};
    sbt_ok(sb_operations_list(ops, NULL, 200, see, &s, &err), &err, "list");
    assert_int_equal(s.n, 1); /* stopped by the callback */
    assert_string_equal(s.ids[0], second.id);
    s = (seen){.stop_at = 10};
    sbt_ok(sb_operations_list(ops, NULL, 200, see, &s, &err), &err, "list");
    assert_int_equal(s.n, 2);
    assert_string_equal(s.ids[0], second.id); /* newest first */
    assert_string_equal(s.ids[1], op.id);
    assert_int_equal(sb_operations_list(ops, NULL, 0, never, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "limit");
    assert_int_equal(
        sb_operations_get(ops, NULL, "no-such-operation", &op, &err),
        SB_NOTFOUND);
    sb_operations_close(ops);
    sb_operations_close(NULL);
    sbe_close(&e);
}

/* Issue 20.6: an operation over a selection that picks nothing in the
 * status its kind changes writes nothing (no row, no job, no group
 * record) and answers an operation of 0 with no id; one that picks
 * something is accepted as ever. */
static void test_empty_selection_writes_nothing(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_seed_failed(&e, "qa", 2);
    sb_operations *ops = NULL;
    sb_error err;
    sbt_ok(sb_operations_open(e.store, NULL, &ops, &err), &err, "open");
    const char *nope[] = {"no-such-message", "nor-this-one"};
    struct {
        const char *kind;
        sb_failed_selection sel;
    } empty[] = {
        {"retry",
         {.size = sizeof(sb_failed_selection), .ids = nope, .n_ids = 2}},
        {"archive",
         {.size = sizeof(sb_failed_selection),
          .group_id = "00000000-0000-0000-0000-000000000000"}},
        {"retry", {.size = sizeof(sb_failed_selection), .failed_queue = "qb"}},
        {"retry", {.size = sizeof(sb_failed_selection), .endpoint = "Nobody"}},
        /* qa's messages exist, but none is archived or retry issued */
        {"unarchive", {.size = sizeof(sb_failed_selection), .all = 1}},
        {"retry_pending", {.size = sizeof(sb_failed_selection), .all = 1}},
        {"resolve",
         {.size = sizeof(sb_failed_selection), .failed_queue = "qa"}},
        {"retry",
         {.size = sizeof(sb_failed_selection),
          .failed_queue = "qa",
          .modified_to_us = 1000000}},
    };
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        sb_operation_info op = {.size = sizeof op};
        sbt_ok(sb_operations_submit(ops, e.bus, empty[i].kind, &empty[i].sel,
                                    &op, &err),
               &err, "submit over nothing");
        assert_string_equal(op.id, "");
        assert_string_equal(op.kind, empty[i].kind);
        assert_string_equal(op.state, "completed");
        assert_int_equal(op.total, 0);
        assert_int_equal(op.done, 0);
    }
    assert_int_equal(scalar("SELECT count(*) FROM %soperations WHERE id <> "
                            "$1",
                            e.prefix, ""),
                     0);
    assert_int_equal(sbt_count(e.bus, SB_OPERATIONS_QUEUE), 0);
    assert_int_equal(scalar("SELECT count(*) FROM %sgroup_operations WHERE "
                            "group_id <> $1",
                            e.prefix, ""),
                     0);
    sb_failed_selection qa = {.size = sizeof qa, .failed_queue = "qa"};
    sb_operation_info op = {.size = sizeof op};
    sbt_ok(sb_operations_submit(ops, NULL, "archive", &qa, &op, &err), &err,
           "submit over qa");
    assert_string_equal(op.state, "queued");
    assert_int_equal(ended(ops, op.id).done, 2);
    sb_operations_close(ops);
    sbe_close(&e);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_all_resumes_whole),
        cmocka_unit_test(test_group_retry_resumes_whole),
        cmocka_unit_test(test_group_retry_resumes_after_conflict),
        cmocka_unit_test(test_operations_table_of_another_shape),
        cmocka_unit_test(test_operations_public_calls),
        cmocka_unit_test(test_empty_selection_writes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
