/*
 * test_errors_ops.c - the error store's operations on both backends:
 * group operations that exclude each other and resume after a kill (E19),
 * selection by last-modified range (E17, E19), edit and retry (E18),
 * redirects (E20), submissions from outside (E2) and re-imports (E3).
 */
#include "harness_errors.h"

#include "errors/ids.h"

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long count_status(sbe_env *e, int status)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_messages WHERE status = "
             "CAST($1 AS INTEGER)",
             e->prefix);
    char st[8];
    snprintf(st, sizeof st, "%d", status);
    return sbt_native_scalar(sql, st);
}

static sb_failed_selection group_sel(const char *group)
{
    sb_failed_selection s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.group_id = group;
    return s;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

typedef struct probe {
    sbe_env *e;
    const char *group;
    int calls;
    int64_t last_done, total;
    int conflict_rc;
    char conflict_field[64];
} probe;

/* While the group's archive runs, a retry of the same group is refused. */
static void on_progress(int64_t done, int64_t total, void *user)
{
    probe *p = user;
    p->calls++;
    assert_true(done > p->last_done);
    p->last_done = done;
    p->total = total;
    if (p->calls == 1) {
        sb_failed_selection s = group_sel(p->group);
        sb_error err;
        p->conflict_rc = sb_errors_retry(p->e->store, &s, NULL, &err);
        memcpy(p->conflict_field, err.field, sizeof err.field);
    }
}

/* E19: a group archive runs in batches of 1,000 with progress; a retry of
 * the same group is refused while it runs; its record ends completed. */
static void test_group_operation_excludes(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_seed_failed(&e, "qg", 1500);
    char group[37];
    sbe_group_of(&e, "qg", SB_FAILED_UNRESOLVED, group);
    sb_failed_selection s = group_sel(group);
    probe p = {&e, group, 0, 0, 0, 0, ""};
    s.progress = on_progress;
    s.progress_user = &p;
    int64_t changed = 0;
    sb_error err;
    sbt_ok(sb_errors_archive(e.store, &s, 1, &changed, &err), &err,
           "archive group");
    assert_int_equal(changed, 1500);
    assert_int_equal(p.calls, 2);
    assert_int_equal(p.last_done, 1500);
    assert_int_equal(p.total, 1500);
    assert_int_equal(p.conflict_rc, SB_CONFLICT);
    assert_string_equal(p.conflict_field, "group_id");
    assert_int_equal(count_status(&e, SB_FAILED_RETRY_ISSUED), 0);
    sb_group_operation op = {.size = sizeof op};
    sbt_ok(sb_errors_group_operation(e.store, group, &op, &err), &err, "op");
    assert_string_equal(op.kind, "archive");
    assert_string_equal(op.state, "completed");
    assert_int_equal(op.done, 1500);
    assert_int_equal(op.total, 1500);
    assert_true(op.finished_us >= op.started_us);
    /* Times from the host's clock on every backend. */
    assert_true(op.started_us > now_us() - 300000000LL);
    assert_true(op.started_us <= now_us());
    /* Once it has finished, the other kind may start. */
    s.progress = NULL;
    sbt_ok(sb_errors_archive(e.store, &s, 0, &changed, &err), &err,
           "unarchive group");
    assert_int_equal(changed, 1500);
    assert_int_equal(
        sb_errors_group_operation(e.store, "no-such-group", &op, &err),
        SB_NOTFOUND);
    sbe_close(&e);
}

/* E19, issue 22: a finished group operation is acknowledged (ServicePulse's
 * "Dismiss"): its record goes, so the group shows none; one still running
 * (or interrupted, to be resumed) is not; a group with none is
 * SB_NOTFOUND. */
static void test_group_operation_acknowledged(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_seed_failed(&e, "qk", 3);
    char group[37];
    sbe_group_of(&e, "qk", SB_FAILED_UNRESOLVED, group);
    sb_failed_selection s = group_sel(group);
    sb_error err;
    sbt_ok(sb_errors_archive(e.store, &s, 1, NULL, &err), &err, "archive");
    sbt_ok(sb_errors_group_acknowledge(e.store, group, &err), &err, "ack");
    sb_group_operation op = {.size = sizeof op};
    assert_int_equal(sb_errors_group_operation(e.store, group, &op, &err),
                     SB_NOTFOUND);
    assert_int_equal(sb_errors_group_acknowledge(e.store, group, &err),
                     SB_NOTFOUND);
    assert_string_equal(err.field, "group_id");
    /* Running (here: as a process that stopped leaves it): kept. */
    sbt_ok(sb_errors_archive(e.store, &s, 0, NULL, &err), &err, "unarchive");
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE %sgroup_operations SET state = 'running', updated_at = "
             "updated_at - 61000000",
             e.prefix);
    sbt_exec(e.bus, sql);
    assert_int_equal(sb_errors_group_acknowledge(e.store, group, &err),
                     SB_CONFLICT);
    assert_string_equal(err.field, "group_id");
    sbt_ok(sb_errors_group_operation(e.store, group, &op, &err), &err, "op");
    assert_string_equal(op.state, "interrupted");
    assert_int_equal(sb_errors_group_acknowledge(e.store, "", &err),
                     SB_INVALID);
    assert_string_equal(err.field, "group_id");
    sbe_close(&e);
}

static void die_after_first_batch(int64_t done, int64_t total, void *user)
{
    (void)done;
    (void)total;
    (void)user;
    raise(SIGKILL);
}

/* E19: a group unarchive killed after its first batch keeps its progress;
 * it blocks the group while its lease lasts, shows as interrupted after,
 * and running it again resumes where it stopped. */
static void test_group_operation_resumes(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open_single_threaded(&e);
    sbe_seed_failed(&e, "qr", 1500);
    char group[37];
    sbe_group_of(&e, "qr", SB_FAILED_UNRESOLVED, group);
    sb_failed_selection s = group_sel(group);
    sb_error err;
    sbt_ok(sb_errors_archive(e.store, &s, 1, NULL, &err), &err, "archive");
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        sb_bus *cb = sbt_open(e.prefix, NULL);
        sb_errors *store = NULL;
        if (sb_errors_open(cb, NULL, &store, NULL) != SB_OK)
            _exit(2);
        sb_failed_selection cs = group_sel(group);
        cs.progress = die_after_first_batch;
        sb_errors_archive(store, &cs, 0, NULL, NULL);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(count_status(&e, SB_FAILED_UNRESOLVED), 1000);
    sb_group_operation op = {.size = sizeof op};
    sbt_ok(sb_errors_group_operation(e.store, group, &op, &err), &err, "op");
    assert_string_equal(op.state, "running");
    assert_int_equal(op.done, 1000);
    /* Its lease still holds: neither kind may start. */
    assert_int_equal(sb_errors_retry(e.store, &s, NULL, &err), SB_CONFLICT);
    assert_int_equal(sb_errors_archive(e.store, &s, 0, NULL, &err),
                     SB_CONFLICT);
    assert_non_null(strstr(err.message, "1000 of 1500"));
    /* Sixty seconds later it counts as interrupted and is resumed. */
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE %sgroup_operations SET updated_at = updated_at - "
             "61000000",
             e.prefix);
    sbt_exec(e.bus, sql);
    sbt_ok(sb_errors_group_operation(e.store, group, &op, &err), &err, "op");
    assert_string_equal(op.state, "interrupted");
    int64_t changed = 0;
    sbt_ok(sb_errors_archive(e.store, &s, 0, &changed, &err), &err, "resume");
    assert_int_equal(changed, 500);
    sbt_ok(sb_errors_group_operation(e.store, group, &op, &err), &err, "op");
    assert_string_equal(op.state, "completed");
    assert_string_equal(op.kind, "unarchive");
    assert_int_equal(op.done, 1500);
    assert_int_equal(op.total, 1500);
    assert_int_equal(count_status(&e, SB_FAILED_UNRESOLVED), 1500);
    sbe_close(&e);
}

static sb_failed_selection ids_sel(const char *const *ids, size_t n)
{
    sb_failed_selection s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.ids = ids;
    s.n_ids = n;
    return s;
}

/* E19: unarchive by last-modified range; E17: pending retries retried and
 * resolved by queue and time range; the range is checked. */
static void test_modified_range(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sbe_seed_failed(&e, "qm", 4);
    sb_error err;
    const char *early[] = {"qm-00000", "qm-00001"};
    const char *late[] = {"qm-00002", "qm-00003"};
    sb_failed_selection s = ids_sel(early, 2);
    sbt_ok(sb_errors_archive(e.store, &s, 1, NULL, &err), &err, "archive");
    sbt_sleep_ms(50);
    int64_t mid = now_us();
    sbt_sleep_ms(50);
    s = ids_sel(late, 2);
    sbt_ok(sb_errors_archive(e.store, &s, 1, NULL, &err), &err, "archive");
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.all = 1;
    s.modified_from_us = mid;
    int64_t changed = 0;
    sbt_ok(sb_errors_archive(e.store, &s, 0, &changed, &err), &err,
           "unarchive range");
    assert_int_equal(changed, 2);
    assert_int_equal(sbe_status(&e, "qm-00001", NULL), SB_FAILED_ARCHIVED);
    assert_int_equal(sbe_status(&e, "qm-00002", NULL), SB_FAILED_UNRESOLVED);
    /* Pending retries: the two late ones retried, then one resolved by a
     * range that ends before the second was sent. */
    s = ids_sel(late, 1);
    sbt_ok(sb_errors_retry(e.store, &s, NULL, &err), &err, "retry 1");
    sbt_sleep_ms(50);
    int64_t between = now_us();
    sbt_sleep_ms(50);
    s = ids_sel(late + 1, 1);
    sbt_ok(sb_errors_retry(e.store, &s, NULL, &err), &err, "retry 2");
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.failed_queue = "qm";
    s.modified_to_us = between;
    sbt_ok(sb_errors_resolve(e.store, &s, &changed, &err), &err, "resolve");
    assert_int_equal(changed, 1);
    assert_int_equal(sbe_status(&e, "qm-00002", NULL), SB_FAILED_RESOLVED);
    assert_int_equal(sbe_status(&e, "qm-00003", NULL), SB_FAILED_RETRY_ISSUED);
    s.modified_to_us = 0;
    s.modified_from_us = between;
    sbt_ok(sb_errors_retry_pending(e.store, &s, &changed, &err), &err,
           "retry pending");
    assert_int_equal(changed, 1);
    assert_int_equal(sbt_count(e.bus, "qm"), 3);
    /* A range that ends before it starts, or a negative time. */
    s.modified_to_us = between - 1;
    assert_int_equal(sb_errors_resolve(e.store, &s, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "modified_from_us");
    s.modified_from_us = -5;
    s.modified_to_us = 0;
    assert_int_equal(sb_errors_archive(e.store, &s, 1, NULL, &err), SB_INVALID);
    assert_string_equal(err.field, "modified_from_us");
    sbe_close(&e);
}

/* The only message on `queue`, claimed and acked; asserts there is one. */
static sb_msg *take(sbe_env *e, const char *queue)
{
    sb_msg **m = NULL;
    size_t n = 0;
    sb_error err;
    sbt_ok(sb_claim(e->bus, queue, 10, 30000, &m, &n, &err), &err, "claim");
    assert_int_equal(n, 1);
    sb_msg *one = m[0];
    sb_free(m);
    sbt_ok(sb_ack(e->bus, NULL, one, &err), &err, "ack");
    return one;
}

/* E18: an edited copy under a new id with sb-edit-of, the original
 * resolved; locked headers refused; a second edit ignored; off unless
 * enabled. */
static void test_edit_and_retry(void **state)
{
    (void)state;
    sbe_env off;
    sbe_open(&off);
    sb_error err;
    int ignored = -1;
    assert_int_equal(sb_errors_edit_retry(off.store, "x", "b", 1, "{}",
                                          &ignored, NULL, &err),
                     SB_MISUSE);
    assert_string_equal(err.field, "allow_edit");
    sbe_close(&off);

    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.allow_edit = 1;
    sbe_env e;
    sbe_open_opts(&e, &o);
    sbe_dead_letter(&e, "m-1", "shop", "2026-01-02T00:00:01Z", "X",
                    "{\"qty\":0}", ",\"sb-correlation-id\":\"c-1\"");
    sbe_ingest(&e);
    char uid[37];
    sb__deterministic_guid_str("m-1", "Sales", uid);
    /* A locked header changed: refused, nothing sent, nothing changed. */
    const char *bad = "{\"sb-correlation-id\":\"c-2\"}";
    assert_int_equal(
        sb_errors_edit_retry(e.store, uid, "{}", 2, bad, &ignored, NULL, &err),
        SB_INVALID);
    assert_string_equal(err.field, "sb-correlation-id");
    /* ... and so is adding one the message lacks. */
    assert_int_equal(sb_errors_edit_retry(e.store, uid, "{}", 2,
                                          "{\"NServiceBus.MessageId\":\"x\"}",
                                          &ignored, NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "NServiceBus.MessageId");
    assert_int_equal(sbt_count(e.bus, "shop"), 0);
    assert_int_equal(sbe_status(&e, uid, NULL), SB_FAILED_UNRESOLVED);
    /* The edit: a new body and header; the correlation id left out is
     * kept; the failure headers given are dropped. */
    const char *h = "{\"trace\":\"t-9\",\"sb-exception-type\":\"X\"}";
    char new_id[37];
    sbt_ok(sb_errors_edit_retry(e.store, uid, "{\"qty\":1}", 9, h, &ignored,
                                new_id, &err),
           &err, "edit");
    assert_int_equal(ignored, 0);
    assert_int_equal(sbe_status(&e, uid, NULL), SB_FAILED_RESOLVED);
    sb_msg *copy = take(&e, "shop");
    assert_string_equal(sb_msg_id(copy), new_id);
    size_t len = 0;
    const void *body = sb_msg_payload(copy, &len);
    assert_int_equal(len, 9);
    assert_memory_equal(body, "{\"qty\":1}", 9);
    assert_string_equal(sb_msg_header(copy, "sb-edit-of"), uid);
    assert_string_equal(sb_msg_header(copy, "sb-message-id"), new_id);
    assert_string_equal(sb_msg_header(copy, "sb-correlation-id"), "c-1");
    assert_string_equal(sb_msg_header(copy, "trace"), "t-9");
    assert_null(sb_msg_header(copy, "sb-exception-type"));
    assert_null(sb_msg_header(copy, "sb-failed-queue"));
    sb_msg_free(copy);
    /* A second edit of the same message is ignored. */
    sbt_ok(sb_errors_edit_retry(e.store, uid, "{}", 2, "{}", &ignored, new_id,
                                &err),
           &err, "edit again");
    assert_int_equal(ignored, 1);
    assert_string_equal(new_id, "");
    assert_int_equal(sbt_count(e.bus, "shop"), 0);
    /* Only unresolved messages; unknown ids; empty bodies. */
    sbe_dead_letter(&e, "m-2", "shop", "2026-01-02T00:00:01Z", "X", "b", NULL);
    sbe_ingest(&e);
    char uid2[37];
    sb__deterministic_guid_str("m-2", "Sales", uid2);
    const char *ids[] = {uid2};
    sb_failed_selection s = ids_sel(ids, 1);
    sbt_ok(sb_errors_archive(e.store, &s, 1, NULL, &err), &err, "archive");
    assert_int_equal(
        sb_errors_edit_retry(e.store, uid2, "b", 1, "{}", &ignored, NULL, &err),
        SB_CONFLICT);
    assert_int_equal(sb_errors_edit_retry(e.store, "nope", "b", 1, "{}",
                                          &ignored, NULL, &err),
                     SB_NOTFOUND);
    assert_int_equal(
        sb_errors_edit_retry(e.store, uid2, "", 0, "{}", &ignored, NULL, &err),
        SB_INVALID);
    assert_string_equal(err.field, "body");
    assert_int_equal(sb_errors_edit_retry(e.store, uid2, "b", 1, "[1]",
                                          &ignored, NULL, &err),
                     SB_INVALID);
    /* The archived message took no edit claim: it can be edited once
     * unarchived. */
    sbt_ok(sb_errors_archive(e.store, &s, 0, NULL, &err), &err, "unarchive");
    sbt_ok(sb_errors_edit_retry(e.store, uid2, "b2", 2, "{}", &ignored, NULL,
                                &err),
           &err, "edit unarchived");
    assert_int_equal(ignored, 0);
    /* E21: an edited message's record expires with it. */
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %smessage_edits WHERE unique_message_id "
             "= $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, uid), 1);
    snprintf(sql, sizeof sql,
             "UPDATE %sfailed_messages SET status_changed_at = "
             "status_changed_at - 7200000000",
             e.prefix);
    sbt_exec(e.bus, sql);
    int64_t deleted = 0;
    sbt_ok(sb_errors_expire(e.store, 3600LL * 1000, &deleted, &err), &err,
           "expire");
    assert_int_equal(deleted, 2);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %smessage_edits WHERE unique_message_id "
             "<> $1",
             e.prefix);
    assert_int_equal(sbt_native_scalar(sql, ""), 0);
    sbe_close(&e);
}

/* E18: the locked headers include identity and every failure header. */
static void test_locked_headers(void **state)
{
    (void)state;
    static const char *const want[] = {
        "sb-message-id",     "sb-correlation-id", "NServiceBus.MessageId",
        "sb-exception-type", "sb-failed-queue",   "NServiceBus.FailedQ"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = 0;
        for (const char *const *l = sb_errors_locked_headers(); *l; l++)
            found |= strcmp(*l, want[i]) == 0;
        if (!found)
            fail_msg("%s is not locked", want[i]);
    }
}

/* E20: retries and edits follow a redirect; duplicates and chains are
 * refused naming the field; update and idempotent removal. */
static void test_redirects(void **state)
{
    (void)state;
    sb_errors_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.allow_edit = 1;
    sbe_env e;
    sbe_open_opts(&e, &o);
    sb_error err;
    sb_redirect r = {.size = sizeof r};
    sbt_ok(sb_errors_redirect_add(e.store, "qa", "qb", &r, &err), &err, "add");
    assert_string_equal(r.from_queue, "qa");
    assert_int_equal(strlen(r.id), 36);
    assert_true(r.last_modified_us > now_us() - 300000000LL);
    sb_redirect again = {.size = sizeof again};
    sbt_ok(sb_errors_redirect_add(e.store, "qa", "qb", &again, &err), &err,
           "the same again");
    assert_string_equal(again.id, r.id);
    assert_int_equal(sb_errors_redirect_add(e.store, "qa", "qc", NULL, &err),
                     SB_CONFLICT);
    assert_string_equal(err.field, "from_queue");
    assert_int_equal(sb_errors_redirect_add(e.store, "qb", "qc", NULL, &err),
                     SB_CONFLICT); /* qb is qa's target */
    assert_string_equal(err.field, "from_queue");
    assert_int_equal(sb_errors_redirect_add(e.store, "qz", "qa", NULL, &err),
                     SB_CONFLICT); /* qa is itself redirected */
    assert_string_equal(err.field, "to_queue");
    assert_int_equal(sb_errors_redirect_add(e.store, "qa", "qa", NULL, &err),
                     SB_INVALID);
    assert_int_equal(sb_errors_redirect_add(e.store, "", "qb", NULL, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "from_queue");
    /* A retry of a message that failed on qa goes to qb, and so does an
     * edit. */
    sbe_dead_letter_as(&e, "u-1", "qa", "2026-01-02T00:00:01Z", "X", "b");
    sbe_dead_letter_as(&e, "u-2", "qa", "2026-01-02T00:00:01Z", "X", "b");
    sbe_ingest(&e);
    const char *one[] = {"u-1"};
    sb_failed_selection s = ids_sel(one, 1);
    sbt_ok(sb_errors_retry(e.store, &s, NULL, &err), &err, "retry");
    assert_int_equal(sbt_count(e.bus, "qa"), 0);
    assert_int_equal(sbt_count(e.bus, "qb"), 1);
    sbt_ok(sb_errors_edit_retry(e.store, "u-2", "e", 1, "{}", NULL, NULL, &err),
           &err, "edit");
    assert_int_equal(sbt_count(e.bus, "qb"), 2);
    /* Update: the target changes, chains still refused. */
    sbt_ok(sb_errors_redirect_add(e.store, "qx", "qy", NULL, &err), &err,
           "add qx");
    assert_int_equal(sb_errors_redirect_update(e.store, r.id, "qx", &err),
                     SB_CONFLICT);
    assert_string_equal(err.field, "to_queue");
    sbt_ok(sb_errors_redirect_update(e.store, r.id, "qc", &err), &err,
           "update");
    assert_int_equal(sb_errors_redirect_update(e.store, "nope", "qc", &err),
                     SB_NOTFOUND);
    sb_redirect **all = NULL;
    size_t n = 0;
    sbt_ok(sb_errors_redirects(e.store, &all, &n, &err), &err, "list");
    assert_int_equal(n, 2);
    assert_string_equal(all[0]->from_queue, "qa");
    assert_string_equal(all[0]->to_queue, "qc");
    assert_string_equal(all[1]->from_queue, "qx");
    assert_true(all[0]->last_modified_us >= r.last_modified_us);
    sb_free(all);
    sbt_ok(sb_errors_redirect_remove(e.store, r.id, &err), &err, "remove");
    sbt_ok(sb_errors_redirect_remove(e.store, r.id, &err), &err, "again");
    sbt_ok(sb_errors_redirects(e.store, &all, &n, &err), &err, "list");
    assert_int_equal(n, 1);
    sb_free(all);
    sbe_close(&e);
}

/* E2: submissions are checked as ingestion reads them, all or nothing;
 * E3: failed imports go back to the dead-letter queue with their bodies. */
static void test_submit_and_reimport(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sb_failed_submission m[2] = {
        {"{\"sb-failed-queue\":\"orders\",\"sb-message-id\":\"s-1\","
         "\"sb-processing-endpoint\":\"Sales\"}",
         "one", 3},
        {"{\"NServiceBus.MessageId\":\"s-2\"}", "two", 3}};
    sb_error err;
    assert_int_equal(sb_errors_submit_check(e.store, m, 2, &err), SB_INVALID);
    assert_string_equal(err.field, "msgs[1].headers");
    assert_int_equal(sb_errors_submit(e.store, m, 2, &err), SB_INVALID);
    assert_string_equal(err.field, "msgs[1].headers");
    assert_int_equal(sbt_count(e.bus, "deadletter"), 0);
    m[1].headers_json = "{\"NServiceBus.MessageId\":\"s-2\","
                        "\"NServiceBus.FailedQ\":\"billing@host\","
                        "\"NServiceBus.TimeOfFailure\":"
                        "\"2026-01-02 03:04:05:678901 Z\"}";
    sbt_ok(sb_errors_submit_check(e.store, m, 2, &err), &err, "check");
    assert_int_equal(sbt_count(e.bus, "deadletter"), 0);
    sbt_ok(sb_errors_submit(e.store, m, 2, &err), &err, "submit");
    assert_int_equal(sbt_count(e.bus, "deadletter"), 2);
    sb_ingest_stats st = sbe_ingest(&e);
    assert_int_equal(st.messages, 2);
    assert_int_equal(sb_errors_submit(e.store, m, 1001, &err), SB_INVALID);
    assert_string_equal(err.field, "n");
    /* A row ingestion cannot use, kept with its body and sent back. */
    sb_outgoing o;
    memset(&o, 0, sizeof o);
    o.payload = "kept-body";
    o.payload_len = 9;
    o.headers_json = "{\"sb-message-id\":\"lost\"}";
    sbt_ok(sb_publish(e.bus, NULL, "deadletter", &o, NULL, &err), &err, "p");
    st = sbe_ingest(&e);
    assert_int_equal(st.failed_imports, 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %sfailed_imports WHERE %s(body) = 9 AND "
             "reason <> $1",
             e.prefix, sbt_is_mssql() ? "DATALENGTH" : "length");
    assert_int_equal(sbt_native_scalar(sql, ""), 1);
    int64_t moved = 0;
    sbt_ok(sb_errors_reimport(e.store, &moved, &err), &err, "reimport");
    assert_int_equal(moved, 1);
    assert_int_equal(sbt_native_scalar(sql, ""), 0);
    sb_msg **d = NULL;
    size_t n = 0;
    sbt_ok(sb_dlq_list(e.bus, NULL, &d, &n, &err), &err, "dlq");
    assert_int_equal(n, 1);
    size_t len = 0;
    const void *body = sb_msg_payload(d[0], &len);
    assert_int_equal(len, 9);
    assert_memory_equal(body, "kept-body", 9);
    assert_string_equal(sb_msg_header(d[0], "sb-message-id"), "lost");
    sb_msg_free_array(d, n);
    /* Still unusable: back in failed_imports, with its reason. */
    st = sbe_ingest(&e);
    assert_int_equal(st.failed_imports, 1);
    assert_int_equal(sbt_native_scalar(sql, ""), 1);
    sbt_ok(sb_errors_reimport(e.store, &moved, &err), &err, "reimport");
    assert_int_equal(moved, 1);
    sbe_close(&e);
}

/* The first fields of sb_redirect and sb_failed_summary, as a program
 * built against an older, shorter header declares them. */
typedef struct {
    size_t size;
    char id[37];
    char from_queue[201];
} old_redirect;
typedef struct {
    size_t size;
    char unique_id[401];
    int status;
} old_summary;

/* Issue 18 (ABI of returned lists, sqlbus.h "Lists"): a list is indexed
 * by pointer, so a caller whose struct is shorter than the library's
 * still reads every element right; each element says the size the
 * library filled; a struct the caller owns is refused, and nothing is
 * written to it or to the database, when its `size` is short. */
static void test_lists_keep_their_stride(void **state)
{
    (void)state;
    sbe_env e;
    sbe_open(&e);
    sb_error err;
    sbt_ok(sb_errors_redirect_add(e.store, "qa", "qb", NULL, &err), &err,
           "add qa");
    sbt_ok(sb_errors_redirect_add(e.store, "qx", "qy", NULL, &err), &err,
           "add qx");
    sb_redirect **all = NULL;
    size_t n = 0;
    sbt_ok(sb_errors_redirects(e.store, &all, &n, &err), &err, "list");
    assert_int_equal(n, 2);
    old_redirect **old = (old_redirect **)(void *)all;
    assert_string_equal(old[0]->from_queue, "qa");
    assert_string_equal(old[1]->from_queue, "qx");
    for (size_t i = 0; i < n; i++)
        assert_int_equal(all[i]->size, sizeof(sb_redirect));
    sb_free(all);

    sbe_dead_letter_as(&e, "u-1", "qa", "2026-01-02T00:00:01Z", "X", "b");
    sbe_dead_letter_as(&e, "u-2", "qa", "2026-01-02T00:00:02Z", "X", "b");
    sbe_ingest(&e);
    sb_failed_query q = {.size = sizeof q,
                         .status = -1,
                         .sort = "time_of_failure",
                         .ascending = 1};
    sb_failed_summary **s = NULL;
    sbt_ok(sb_errors_list(e.store, &q, &s, &n, NULL, &err), &err, "list");
    assert_int_equal(n, 2);
    old_summary **olds = (old_summary **)(void *)s;
    assert_string_equal(olds[0]->unique_id, "u-1");
    assert_string_equal(olds[1]->unique_id, "u-2");
    assert_int_equal(olds[1]->status, SB_FAILED_UNRESOLVED);
    assert_int_equal(s[1]->size, sizeof(sb_failed_summary));
    sb_free(s);

    /* A caller-owned struct with a short size: refused, untouched. */
    sb_redirect r;
    memset(&r, 0xab, sizeof r);
    r.size = offsetof(sb_redirect, last_modified_us);
    assert_int_equal(sb_errors_redirect_add(e.store, "qm", "qn", &r, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "size");
    assert_int_equal((unsigned char)r.id[0], 0xab);
    sbt_ok(sb_errors_redirects(e.store, &all, &n, &err), &err, "list");
    assert_int_equal(n, 2); /* qm was not added */
    sb_free(all);
    sb_group_operation op;
    memset(&op, 0, sizeof op);
    assert_int_equal(sb_errors_group_operation(e.store, "g", &op, &err),
                     SB_INVALID);
    assert_string_equal(err.field, "size");
    sbe_close(&e);
}

int main(void)
{
    sbt_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_operation_excludes),
        cmocka_unit_test(test_group_operation_resumes),
        cmocka_unit_test(test_group_operation_acknowledged),
        cmocka_unit_test(test_modified_range),
        cmocka_unit_test(test_edit_and_retry),
        cmocka_unit_test(test_locked_headers),
        cmocka_unit_test(test_redirects),
        cmocka_unit_test(test_lists_keep_their_stride),
        cmocka_unit_test(test_submit_and_reimport),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
