#!/usr/bin/env bash
# cli_recovery.sh - `sqlbus recovery list` and `sqlbus recovery watchdog`
# (rule C22): registrations of real waiter processes, some killed with
# SIGKILL, as a table and as JSON with their states; the stale count; usage
# errors.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# C22: a database without registrations (nor a channel ever opened) lists
# none and has none stale.
[ "$(sb recovery list --json)" = "[]" ] || fail "empty list: $(sb recovery list --json)"
expect_exit 0 sb recovery watchdog
[ "$(cat "$tmp/out")" = "0 stale registrations" ] || fail "watchdog: $(cat "$tmp/out")"
ok "empty database"

# Three waiters; every `sqlbus wait` stores a recovery registration.
declare -A pid
for id in live-1 orphan-1 sent-1; do
    "$SQLBUS" --prefix "$prefix" wait --correlation-id "$id" --timeout 5m >/dev/null 2>"$tmp/$id.err" &
    pid[$id]=$!
    bg_pids+=("$!")
done
i=0
until [ "$(sb recovery list --json 2>/dev/null | jq length)" = 3 ]; do
    i=$((i + 1))
    [ $i -le 200 ] || fail "the waiters never registered: $(sb recovery list 2>&1)"
    sleep 0.1
done
sb recovery list --json >"$tmp/r.json"
jq -e 'length == 3 and all(.[]; .state == "outstanding" and .live == true and
        .dispatched_at == null)' "$tmp/r.json" >/dev/null ||
    fail "live waiters: $(cat "$tmp/r.json")"
ok "live waiters are outstanding"

# Two waiter processes die without cleaning up. Their subscriber rows lapse
# after the heartbeat timeout (30 s); until then they still count as live,
# so the reply to sent-1 waits out the confirmation timeout (5 s) and is
# then claimed for recovery: its registration is dispatched.
kill -KILL "${pid[orphan-1]}" "${pid[sent-1]}"
wait_exit "${pid[orphan-1]}" 10
wait_exit "${pid[sent-1]}" 10
expect_exit 0 sb respond --correlation-id sent-1 <<<"late"
jq_state() {
    sb recovery list --json "${@:2}" | jq -r --arg c "$1" '.[] | select(.correlation_id == $c) | .state'
}
# Both subscriber rows lapse 30 s after their last heartbeat, which differ
# by the moments between the two waiters' starts: wait for both.
i=0
until [ "$(jq_state orphan-1)" = orphaned ] && [ "$(jq_state sent-1)" = dispatched ]; do
    i=$((i + 1))
    [ $i -le 60 ] || fail "orphan-1 never orphaned or sent-1 never dispatched: $(sb recovery list 2>&1)"
    sleep 1
done

# C22: --json carries every field with its type.
sb recovery list --json >"$tmp/r.json"
jq -e 'length == 3 and all(.[];
        (.correlation_id | type) == "string" and
        (.registration_id | test("^[0-9a-f-]{36}$")) and .handler == null and
        (.state | type) == "string" and (.live | type) == "boolean" and
        (.registered_at | type) == "string" and (.expires_at | type) == "string" and
        (.age_ms | type) == "number" and .age_ms >= 0 and
        .context_encoding == null and .context == null)' "$tmp/r.json" >/dev/null ||
    fail "list --json shape: $(cat "$tmp/r.json")"
jq -e '.[] | select(.correlation_id == "live-1") | .state == "outstanding" and .live and .dispatched_at == null' \
    "$tmp/r.json" >/dev/null || fail "live-1: $(cat "$tmp/r.json")"
jq -e '.[] | select(.correlation_id == "orphan-1") | .state == "orphaned" and (.live | not) and .dispatched_at == null' \
    "$tmp/r.json" >/dev/null || fail "orphan-1: $(cat "$tmp/r.json")"
jq -e '.[] | select(.correlation_id == "sent-1") | .state == "dispatched" and (.live | not) and
        (.dispatched_at | type) == "string" and .dispatched_at >= .registered_at' \
    "$tmp/r.json" >/dev/null || fail "sent-1: $(cat "$tmp/r.json")"
ok "list --json: outstanding, orphaned, dispatched"

# C22: older than --stale-after with no live waiter and nothing dispatched
# is stale; --state filters.
[ "$(jq_state orphan-1 --stale-after 1s)" = stale ] || fail "orphan-1 not stale after 1s"
[ "$(jq_state sent-1 --stale-after 1s)" = dispatched ] || fail "sent-1 not dispatched"
[ "$(sb recovery list --json --state stale --stale-after 1s | jq -c 'map(.correlation_id)')" = '["orphan-1"]' ] ||
    fail "--state stale: $(sb recovery list --json --state stale --stale-after 1s)"
[ "$(sb recovery list --json --state outstanding,dispatched | jq -c 'map(.correlation_id) | sort')" = '["live-1","sent-1"]' ] ||
    fail "--state outstanding,dispatched: $(sb recovery list --json --state outstanding,dispatched)"
[ "$(sb recovery list --json --limit 1 | jq length)" = 1 ] || fail "--limit 1"
ok "--stale-after, --state and --limit"

# C22: the table, and the counts on stderr.
expect_exit 0 sb recovery list
head -n1 "$tmp/out" | grep -Eq '^CORRELATION-ID +REGISTRATION-ID +HANDLER +STATE +AGE +DISPATCHED$' ||
    fail "table header: $(head -n1 "$tmp/out")"
grep -Eq '^live-1 +[0-9a-f-]{36} +- +outstanding +[0-9].* +-$' "$tmp/out" || fail "live-1 row: $(cat "$tmp/out")"
grep -Eq '^orphan-1 +[0-9a-f-]{36} +- +orphaned +[0-9].* +-$' "$tmp/out" || fail "orphan-1 row: $(cat "$tmp/out")"
grep -Eq '^sent-1 +[0-9a-f-]{36} +- +dispatched +[0-9].* ago$' "$tmp/out" || fail "sent-1 row: $(cat "$tmp/out")"
[ "$(wc -l <"$tmp/out")" = 4 ] || fail "table rows: $(cat "$tmp/out")"
expect_err "3 registrations: 1 outstanding, 0 stale, 1 orphaned, 1 dispatched"
expect_exit 0 sb recovery list --limit 2
expect_err "(the --limit; raise it for more)"
expect_exit 0 sb -q recovery list
[ ! -s "$tmp/err" ] || fail "-q printed: $(cat "$tmp/err")"
ok "list table"

# C22: the watchdog counts and names the stale registration; exit 0.
expect_exit 0 sb recovery watchdog
[ "$(cat "$tmp/out")" = "0 stale registrations" ] || fail "watchdog 24h: $(cat "$tmp/out")"
expect_exit 0 sb recovery watchdog --stale-after 1s
[ "$(cat "$tmp/out")" = "1 stale registration" ] || fail "watchdog 1s: $(cat "$tmp/out")"
expect_err "warning: recovery: stale registration"
expect_err "orphan-1"
ok "watchdog"

# Usage errors name the flag and its limit (exit 2).
expect_exit 2 sb recovery list --state bogus
expect_err "--state must be outstanding, stale, orphaned, dispatched"
expect_exit 2 sb recovery list --limit 0
expect_err "--limit must be 1..10000"
expect_exit 2 sb recovery list --stale-after 0s
expect_err "--stale-after must be"
expect_exit 2 sb recovery list extra
expect_err 'unexpected argument "extra"'
expect_exit 2 sb recovery watchdog --json
expect_err "option --json is not valid here"
expect_exit 2 sb recovery nosuch
expect_err 'unknown recovery command "nosuch"'
expect_exit 2 sb recovery
ok "usage errors"
