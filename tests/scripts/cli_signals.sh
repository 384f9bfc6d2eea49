#!/usr/bin/env bash
# cli_signals.sh - stopping `sqlbus work`: SIGTERM is graceful (the running
# handler completes, nothing more is claimed); SIGKILL mid-handler means
# redelivery after the lease with the attempt counted (rules T15, T16,
# T17, T20, T26, T30; transport.md "Tests that must exist": a worker
# process killed with SIGKILL mid-handler).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T26 + T30: SIGTERM while a handler runs: it completes and is acked, the
# worker exits 0, and the other messages stay ready.
for i in 1 2 3 4 5; do printf 'm%s' $i | sb publish --queue term >/dev/null; done
handler slow "echo \"start \$SQLBUS_MESSAGE_ID\" >> '$tmp/log'
touch '$tmp/started'
sleep 2
echo \"done \$SQLBUS_MESSAGE_ID\" >> '$tmp/log'"
"$SQLBUS" --prefix "$prefix" work --queue term --concurrency 1 -- "$tmp/slow" 2>"$tmp/term.err" &
pid=$!
bg_pids+=("$pid")
wait_for_file "$tmp/started"
kill -TERM "$pid"
wait_exit "$pid" 30
[ $wait_rc -eq 0 ] || fail "sqlbus work exited $wait_rc after SIGTERM: $(cat "$tmp/term.err")"
[ "$(grep -c '^start' "$tmp/log")" = 1 ] || fail "claimed after SIGTERM: $(cat "$tmp/log")"
[ "$(grep -c '^done' "$tmp/log")" = 1 ] || fail "the running handler did not complete: $(cat "$tmp/log")"
expect_count term ready 4
expect_count term in_flight 0
grep -q '1 acked' "$tmp/term.err" || fail "summary after SIGTERM: $(cat "$tmp/term.err")"
ok "SIGTERM stops work gracefully"

# T26: SIGINT behaves the same. (Job control on: a non-interactive shell
# starts background commands with SIGINT ignored.)
rm -f "$tmp/started" "$tmp/log"
set -m
"$SQLBUS" --prefix "$prefix" work --queue term --concurrency 2 -- "$tmp/slow" 2>"$tmp/int.err" &
pid=$!
set +m
bg_pids+=("$pid")
wait_for_file "$tmp/started"
kill -INT "$pid"
wait_exit "$pid" 30
[ $wait_rc -eq 0 ] || fail "sqlbus work exited $wait_rc after SIGINT: $(cat "$tmp/int.err")"
starts=$(grep -c '^start' "$tmp/log")
dones=$(grep -c '^done' "$tmp/log")
[ "$starts" = "$dones" ] || fail "SIGINT: $starts started, $dones done"
expect_count term ready $((4 - dones))
expect_count term in_flight 0
ok "SIGINT stops work gracefully"

# T17 + T20 + T30: SIGKILL mid-handler; a second `work --once` gets the
# message after the 2 s lease, with SQLBUS_ATTEMPT=2.
printf 'crash' | sb publish --queue crash >/dev/null
handler hang "echo \"\$SQLBUS_ATTEMPT\" >> '$tmp/attempts'
echo \$\$ > '$tmp/hang.pid'
exec sleep 60"
"$SQLBUS" --prefix "$prefix" work --queue crash --lease 2s -- "$tmp/hang" 2>/dev/null &
pid=$!
bg_pids+=("$pid")
wait_for_file "$tmp/hang.pid"
kill -KILL "$pid"
wait_exit "$pid" 10
kill -KILL "$(cat "$tmp/hang.pid")" 2>/dev/null || true
expect_count crash in_flight 1
handler record "echo \"\$SQLBUS_ATTEMPT\" >> '$tmp/attempts'; cat > '$tmp/redelivered'"
start=$(date +%s)
sb work --queue crash --once --lease 2s -- "$tmp/record"
took=$(($(date +%s) - start))
[ "$(tr '\n' , <"$tmp/attempts")" = "1,2," ] || fail "attempts: $(cat "$tmp/attempts")"
[ "$(cat "$tmp/redelivered")" = crash ] || fail "redelivered payload"
[ $took -lt 20 ] || fail "redelivery took ${took}s with a 2 s lease"
expect_count crash ready 0
expect_count crash in_flight 0
ok "SIGKILL mid-handler: redelivered after the lease with attempt 2"

# T20: once the attempts are spent, a message whose worker died is
# dead-lettered without running again.
printf 'crash2' | sb publish --queue crash2 >/dev/null
rm -f "$tmp/hang.pid" "$tmp/attempts"
"$SQLBUS" --prefix "$prefix" work --queue crash2 --lease 2s --max-attempts 1 -- "$tmp/hang" 2>/dev/null &
pid=$!
bg_pids+=("$pid")
wait_for_file "$tmp/hang.pid"
kill -KILL "$pid"
wait_exit "$pid" 10
kill -KILL "$(cat "$tmp/hang.pid")" 2>/dev/null || true
sb work --queue crash2 --once --lease 2s --max-attempts 1 -- "$tmp/record"
[ "$(tr '\n' , <"$tmp/attempts")" = "1," ] || fail "ran again after attempts were spent: $(cat "$tmp/attempts")"
expect_count crash2 dead_lettered 1
ok "spent attempts: dead-lettered without running again"

# T16 + T30: when the lease is lost (here: the fence is changed behind the
# worker's back, as if the lease had lapsed and another consumer had
# claimed the row), the running command is killed and the settlement is a
# no-op counted as a lost lease.
printf 'stolen' | sb publish --queue stolen >/dev/null
rm -f "$tmp/hang.pid" "$tmp/attempts"
"$SQLBUS" --prefix "$prefix" work --queue stolen --lease 3s -- "$tmp/hang" 2>"$tmp/stolen.err" &
pid=$!
bg_pids+=("$pid")
wait_for_file "$tmp/hang.pid"
steal="UPDATE ${prefix}messages SET lock_id = '00000000-0000-4000-8000-000000000000' WHERE queue = 'stolen'"
if [ "$backend" = sqlite ]; then
    sqlite3 -cmd '.timeout 5000' "${SQLBUS_DB#sqlite:}" "$steal"
else
    psql -q "$SQLBUS_DB" -c "$steal"
fi
child=$(cat "$tmp/hang.pid")
for _ in $(seq 1 100); do is_alive "$child" || break; sleep 0.1; done
is_alive "$child" && fail "the command kept running after the lease was lost"
kill -TERM "$pid"
wait_exit "$pid" 30
[ $wait_rc -eq 0 ] || fail "work exited $wait_rc: $(cat "$tmp/stolen.err")"
grep -q '1 lost leases' "$tmp/stolen.err" || fail "summary: $(cat "$tmp/stolen.err")"
expect_count stolen dead_lettered 0
ok "lease lost: the command is killed, the settlement is a no-op"

# Exit codes: SIGINT during a command other than work exits 130 and
# publishes nothing (publish --lines waiting on an open, silent stdin).
mkfifo "$tmp/fifo"
set -m
"$SQLBUS" --prefix "$prefix" publish --queue interrupted --lines <"$tmp/fifo" >"$tmp/int2.out" 2>"$tmp/int2.err" &
pid=$!
set +m
bg_pids+=("$pid")
exec 3>"$tmp/fifo"
printf 'one\ntwo\n' >&3
sleep 0.5
kill -INT "$pid"
wait_exit "$pid" 10
exec 3>&-
[ $wait_rc -eq 130 ] || fail "publish after SIGINT exited $wait_rc: $(cat "$tmp/int2.err")"
[ ! -s "$tmp/int2.out" ] || fail "an interrupted publish printed ids: $(cat "$tmp/int2.out")"
expect_count interrupted ready 0
ok "SIGINT during publish exits 130"
