#!/usr/bin/env bash
# cli_stop_outage.sh - SIGTERM to `sqlbus work` while its database is down
# (rules T26, T30; issue 19): the stop is bounded by the stop timeout
# whatever the database does, and the exit code says what happened
# (docs/cli.md, "Stopping"): 0 when nothing was left to write, 5 when
# settlements could not be written, also when the database hangs rather
# than refuses (their messages come back after the lease, none is lost). Runs against a private cluster of its own
# (tests/pg-cluster), so stopping it disturbs no other test; SQLite has no
# server to stop, so its run reports itself skipped.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

if [ "$backend" != postgresql ]; then
    echo "skipped: SQLite has no database server to stop"
    exit 77
fi
private_cluster

# `work --timeout T` gives running commands T + 3 s to finish on stop; the
# stop may take that plus this margin, never more.
margin=5

# T26: an idle worker, database down, SIGTERM: nothing to write, exit 0.
printf 'one' | sb publish --queue idle >/dev/null
handler touch_it "touch '$tmp/idle-ran'"
"$SQLBUS" --prefix "$prefix" work --queue idle --timeout 3s -- "$tmp/touch_it" 2>"$tmp/idle.err" &
pid=$!
bg_pids+=("$pid")
wait_for_file "$tmp/idle-ran"
for _ in $(seq 1 50); do
    [ "$(count idle ready)" = 0 ] && [ "$(count idle in_flight)" = 0 ] && break
    sleep 0.1
done
"$cluster" stop "$pgdir" >/dev/null || fail "pg-cluster stop"
kill -TERM "$pid"
wait_exit "$pid" $((3 + 3 + margin))
[ "$wait_rc" -eq 0 ] || fail "idle worker, database down: exit $wait_rc, want 0: $(cat "$tmp/idle.err")"
grep -q '1 acked' "$tmp/idle.err" || fail "summary: $(cat "$tmp/idle.err")"
ok "idle worker, database down: SIGTERM exits 0 within the stop timeout"

# T26: a busy worker, database down under its running commands, SIGTERM:
# the commands finish, their acks cannot be written, the stop gives up on
# them within the stop timeout (23 s here, it needs about 3 s), says so and
# exits 5.
"$cluster" start "$pgdir" >/dev/null || fail "pg-cluster start again"
for i in 1 2 3 4; do printf 'b%s' $i | sb publish --queue busy >/dev/null; done
handler slow "echo \"start \$SQLBUS_MESSAGE_ID\" >> '$tmp/log'
sleep 2
echo \"done \$SQLBUS_MESSAGE_ID\" >> '$tmp/log'"
"$SQLBUS" --prefix "$prefix" work --queue busy --concurrency 2 --timeout 20s --lease 2s -- "$tmp/slow" 2>"$tmp/busy.err" &
pid=$!
bg_pids+=("$pid")
for _ in $(seq 1 100); do
    [ -f "$tmp/log" ] && [ "$(grep -c '^start' "$tmp/log")" = 2 ] && break
    sleep 0.1
done
[ "$(grep -c '^start' "$tmp/log")" = 2 ] || fail "two commands did not start: $(cat "$tmp/log" "$tmp/busy.err")"
"$cluster" stop "$pgdir" >/dev/null || fail "pg-cluster stop"
kill -TERM "$pid"
wait_exit "$pid" $((20 + 3 + margin))
[ "$wait_rc" -eq 5 ] || fail "busy worker, database down: exit $wait_rc, want 5: $(cat "$tmp/busy.err")"
[ "$(grep -c '^done' "$tmp/log")" = 2 ] || fail "the running commands did not finish: $(cat "$tmp/log")"
[ "$(grep -c '^start' "$tmp/log")" = 2 ] || fail "claimed after SIGTERM: $(cat "$tmp/log")"
grep -q 'not written' "$tmp/busy.err" || fail "the unwritten settlements are not reported: $(cat "$tmp/busy.err")"
grep -q 'when their leases expire' "$tmp/busy.err" || fail "the report does not say what becomes of them: $(cat "$tmp/busy.err")"
grep -q 'still running' "$tmp/busy.err" && fail "handlers reported running although they finished: $(cat "$tmp/busy.err")"
ok "busy worker, database down: SIGTERM exits 5 within the stop timeout, naming what was not written"

# T26: a database that stops answering (every server process stopped with
# SIGSTOP: connections stay open, no call returns) under a busy worker:
# the stop is bounded all the same; the worker leaves the calls that never
# returned, says so and exits 5.
"$cluster" start "$pgdir" >/dev/null || fail "pg-cluster start again"
for i in 1 2; do printf 'h%s' $i | sb publish --queue hung >/dev/null; done
handler slow_hung "echo \"start \$SQLBUS_MESSAGE_ID\" >> '$tmp/hung.log'
sleep 2
echo \"done \$SQLBUS_MESSAGE_ID\" >> '$tmp/hung.log'"
"$SQLBUS" --prefix "$prefix" work --queue hung --concurrency 2 --timeout 3s --lease 2s -- "$tmp/slow_hung" 2>"$tmp/hung.err" &
pid=$!
bg_pids+=("$pid")
for _ in $(seq 1 100); do
    [ -f "$tmp/hung.log" ] && [ "$(grep -c '^start' "$tmp/hung.log")" = 2 ] && break
    sleep 0.1
done
[ "$(grep -c '^start' "$tmp/hung.log")" = 2 ] || fail "two commands did not start: $(cat "$tmp/hung.log" "$tmp/hung.err")"
postmaster=$(head -n 1 "$pgdir/data/postmaster.pid")
server_pids="$postmaster $(pgrep -P "$postmaster" | tr '\n' ' ')"
# shellcheck disable=SC2086 # one pid a word
kill -STOP $server_pids
kill -TERM "$pid"
wait_exit "$pid" $((3 + 3 + margin))
hung_rc=$wait_rc
# shellcheck disable=SC2086
kill -CONT $server_pids
[ "$hung_rc" -eq 5 ] || fail "busy worker, database hung: exit $hung_rc, want 5: $(cat "$tmp/hung.err")"
grep -q 'did not answer' "$tmp/hung.err" || fail "the hang is not reported: $(cat "$tmp/hung.err")"
ok "busy worker, database hung: SIGTERM exits 5 within the stop timeout"

# Nothing is lost: with the database back, the two unacked messages come
# back after their 2 s lease and all four run (at least once); so do the
# two of the hung database.
handler record "echo \"again \$SQLBUS_MESSAGE_ID\" >> '$tmp/log'"
sb work --queue busy --once --lease 2s -- "$tmp/record" 2>"$tmp/again.err" ||
    fail "work --once after the outage: $(cat "$tmp/again.err")"
expect_count busy ready 0
expect_count busy in_flight 0
ran=$(awk '{print $2}' "$tmp/log" | sort -u | wc -l)
[ "$ran" = 4 ] || fail "$ran of 4 messages ran: $(cat "$tmp/log")"
sb work --queue hung --once --lease 2s -- "$tmp/record" 2>"$tmp/again.err" ||
    fail "work --once after the hang: $(cat "$tmp/again.err")"
expect_count hung ready 0
expect_count hung in_flight 0
ok "database back: every message ran, none lost"
