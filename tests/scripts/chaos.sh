#!/usr/bin/env bash
# chaos.sh - the outside tester's chaos run, bounded in time, counting
# every payload (transport.md "Tests that must exist": consumers in
# separate processes, a worker killed with SIGKILL mid-handler, the
# database restarted under load; rules T14, T17, T20, T21, T26, E1, E2).
#
# 1. Transport: SB_CHAOS_MESSAGES payloads, SB_CHAOS_WORKERS `sqlbus work`
#    processes, one of them SIGKILLed every 1-3 s for SB_CHAOS_SECONDS and
#    started again; on PostgreSQL the server is also restarted with
#    `-m immediate` and later stopped for a few seconds while `sqlbus
#    serve` runs beside the workers (readiness 503, then 200). Every
#    payload must run at least once; a payload that runs twice must run
#    again with a higher attempt (a redelivery after a lease, never two
#    holders of one lease); the workers that were not killed and serve
#    must survive the database's restarts by themselves.
# 2. Ingestion: SB_CHAOS_DEAD_LETTERS dead letters, `sqlbus errors ingest`
#    SIGKILLed mid-pass again and again, then one pass to the end: every
#    dead letter is one failed message with one attempt, none lost, none
#    counted twice (attempts, group counts, status history), and the
#    dead-letter queue is empty.
# PostgreSQL runs on a private cluster of its own, so restarting it
# disturbs no other test.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

messages=${SB_CHAOS_MESSAGES:-3000}
workers=${SB_CHAOS_WORKERS:-3}
chaos_seconds=${SB_CHAOS_SECONDS:-30}
dead_letters=${SB_CHAOS_DEAD_LETTERS:-8000}

if [ "$backend" = postgresql ]; then private_cluster; fi

# --- 1. transport -------------------------------------------------------
seq 1 "$messages" | sed 's/^/p-/' | sb publish --queue chaos --lines >/dev/null
expect_count chaos ready "$messages"

# Each run appends "payload attempt" in one write (< PIPE_BUF, O_APPEND):
# lines never interleave, whoever is killed.
handler run "p=\$(cat)
sleep 0.1
echo \"\$p \$SQLBUS_ATTEMPT\" >> '$tmp/runs'"
: >"$tmp/runs"

worker_pid=()
start_worker() {
    "$SQLBUS" --prefix "$prefix" work --queue chaos --concurrency 4 --lease 2s \
        --max-attempts 0 --delay 0s -- "$tmp/run" 2>>"$tmp/worker$1.err" &
    worker_pid[$1]=$!
    bg_pids+=("$!")
}
# No worker may die by itself: only the kills below end one.
check_workers() {
    local i
    for i in $(seq 0 $((workers - 1))); do
        is_alive "${worker_pid[$i]}" ||
            fail "worker $i died by itself ($1): $(tail -n 5 "$tmp/worker$i.err")"
    done
}
for i in $(seq 0 $((workers - 1))); do start_worker "$i"; done

pid=""
if [ "$backend" = postgresql ]; then
    start_server serve
fi

ready_status() {
    req ready "$base/health/ready"
    cat "$tmp/ready.status"
}

kills=0 restarts=0 outage_seen=""
deadline=$((SECONDS + chaos_seconds))
step=0
# On PostgreSQL the run goes on past the deadline (up to a minute) until
# the database has had all its turns: a loaded machine slows the steps.
more_turns() { [ "$backend" = postgresql ] && [ -z "$outage_seen" ] && [ $SECONDS -lt $((deadline + 60)) ]; }
while [ $SECONDS -lt $deadline ] || more_turns; do
    sleep "$((1 + RANDOM % 3))"
    check_workers "step $step"
    step=$((step + 1))
    # The database's turns come before a worker's restart, so a worker is
    # never half-started when the server goes away (a start that cannot
    # reach the database exits 5, as documented).
    if [ "$backend" = postgresql ]; then
        case $step in
        3 | 6)
            "$cluster" restart "$pgdir" >/dev/null || fail "pg-cluster restart"
            restarts=$((restarts + 1))
            ;;
        8)
            # An outage of a few seconds under workers and serve.
            "$cluster" stop "$pgdir" >/dev/null || fail "pg-cluster stop"
            sleep 1
            [ "$(ready_status)" = 503 ] || fail "readiness during the outage: $(cat "$tmp/ready.json")"
            outage_seen=1
            sleep 3
            "$cluster" start "$pgdir" >/dev/null || fail "pg-cluster start"
            ;;
        esac
        is_alive "$pid" || fail "serve died: $(tail -n 5 "$tmp/serve.err")"
        check_workers "after the database's turn at step $step"
        # The workers reconnect by themselves: runs resume (while work is
        # left), without a restart.
        done_before=$(wc -l <"$tmp/runs")
        for _ in $(seq 1 150); do
            [ "$(wc -l <"$tmp/runs")" -gt "$done_before" ] && break
            [ "$(count chaos ready)" = 0 ] && break
            sleep 0.1
        done
        [ "$(wc -l <"$tmp/runs")" -gt "$done_before" ] || [ "$(count chaos ready)" = 0 ] ||
            fail "no run within 15 s of the database's turn at step $step"
    fi
    victim=$((RANDOM % workers))
    kill -KILL "${worker_pid[$victim]}"
    wait "${worker_pid[$victim]}" 2>/dev/null || true
    kills=$((kills + 1))
    start_worker "$victim"
done
[ $kills -ge 5 ] || fail "only $kills kills in ${chaos_seconds}s"
if [ "$backend" = postgresql ]; then
    [ $restarts -eq 2 ] || fail "the server was restarted $restarts times, not 2 (raise SB_CHAOS_SECONDS)"
    [ -n "$outage_seen" ] || fail "no outage in ${chaos_seconds}s (raise SB_CHAOS_SECONDS)"
fi

# Every payload, then an empty queue; the surviving workers drain it.
drained=""
for _ in $(seq 1 600); do
    if [ "$(sort -u -k1,1 "$tmp/runs" | wc -l)" -ge "$messages" ] &&
        [ "$(count chaos ready)" = 0 ] && [ "$(count chaos in_flight)" = 0 ]; then
        drained=1
        break
    fi
    check_workers "draining"
    sleep 0.2
done
[ -n "$drained" ] || fail "not drained in 120 s: $(sort -u -k1,1 "$tmp/runs" | wc -l) of $messages payloads ran; queue $(sb queues --json)"

for i in $(seq 0 $((workers - 1))); do kill -TERM "${worker_pid[$i]}"; done
for i in $(seq 0 $((workers - 1))); do
    wait_exit "${worker_pid[$i]}" 60
    [ "$wait_rc" -eq 0 ] || fail "worker $i exited $wait_rc after SIGTERM: $(tail -n 5 "$tmp/worker$i.err")"
done

# 0 lost: each payload ran.
missing=$(comm -23 <(seq 1 "$messages" | sed 's/^/p-/' | sort) <(cut -d' ' -f1 "$tmp/runs" | sort -u))
[ -z "$missing" ] || fail "payloads never ran: $(echo "$missing" | head -5 | tr '\n' ' ')"
# A payload that ran twice ran again under a new lease: never the same
# attempt twice.
same=$(sort "$tmp/runs" | uniq -d | head -5)
[ -z "$same" ] || fail "the same attempt ran twice: $same"
expect_count chaos ready 0
expect_count deadletter ready 0
runs=$(wc -l <"$tmp/runs")
if [ "$backend" = postgresql ]; then
    [ "$(ready_status)" = 200 ] || fail "readiness after the outage: $(cat "$tmp/ready.json")"
    kill -TERM "$pid"
    wait_exit "$pid" 20
    [ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM: $(tail -n 5 "$tmp/serve.err")"
fi
ok "transport: $messages payloads, $kills workers SIGKILLed, $restarts server restarts: 0 lost, $((runs - messages)) redelivered with a higher attempt"

# --- 2. ingestion -------------------------------------------------------
seq 1 "$dead_letters" | sed 's/^/dead-/' |
    sb publish --queue deadletter --lines --header sb-failed-queue=chaos \
        --header sb-exception-type=Chaos.Failed --header sb-exception-message=boom >/dev/null
expect_count deadletter ready "$dead_letters"
mid_pass=0
before=$dead_letters
# The kill comes at 50-150 % of a delay that follows the machine's
# speed: a pass killed before it moved anything makes the next delay
# 200 ms longer; one that moved more than half of what was left, half
# as long (20 ms at least), so fast builds are caught mid-pass too.
delay_ms=200
for _ in $(seq 1 20); do
    [ $mid_pass -ge 5 ] && break
    "$SQLBUS" --prefix "$prefix" errors ingest >/dev/null 2>>"$tmp/ingest.err" &
    ingest=$!
    sleep "$(awk -v ms=$((delay_ms * (50 + RANDOM % 101) / 100)) 'BEGIN{printf "%.3f", ms / 1000}')"
    kill -KILL "$ingest" 2>/dev/null || true
    wait "$ingest" 2>/dev/null || true
    # Killed mid-pass: it had moved some batches, not all of them.
    after=$(count deadletter ready)
    [ "$after" -lt "$before" ] && [ "$after" -gt 0 ] && mid_pass=$((mid_pass + 1))
    if [ "$after" -eq "$before" ]; then
        delay_ms=$((delay_ms + 200))
    elif [ $((before - after)) -gt $((before / 2)) ]; then
        delay_ms=$((delay_ms / 2 > 20 ? delay_ms / 2 : 20))
    fi
    [ "$after" -gt 0 ] || break
    before=$after
done
[ $mid_pass -ge 3 ] || fail "only $mid_pass ingestion passes were killed mid-pass (raise SB_CHAOS_DEAD_LETTERS)"
left=$(count deadletter ready)
sb errors ingest >/dev/null 2>>"$tmp/ingest.err" || fail "the last ingestion pass: $(tail -n 5 "$tmp/ingest.err")"
expect_count deadletter ready 0
sb errors list --status any --per-page 1 --json >"$tmp/total.json"
[ "$(jq -r .total "$tmp/total.json")" = "$dead_letters" ] ||
    fail "failed messages: $(jq -r .total "$tmp/total.json"), want $dead_letters"
sb errors list --status any --sort attempts --per-page 1 --json >"$tmp/most.json"
[ "$(jq -r '.items[0].attempts' "$tmp/most.json")" = 1 ] ||
    fail "an attempt was counted twice: $(cat "$tmp/most.json")"
# E10, E12, E13: the one group counts every message once, each message has
# one stored attempt, and ingestion changed no status (no history row).
sb errors groups --json >"$tmp/groups.json"
[ "$(jq '[.[].count] | add' "$tmp/groups.json")" = "$dead_letters" ] ||
    fail "group counts: $(cat "$tmp/groups.json"), want $dead_letters in all"
if have_sql; then
    attempts=$(sql "SELECT count(*) FROM ${prefix}failed_message_attempts")
    [ "$attempts" = "$dead_letters" ] || fail "stored attempts: $attempts, want $dead_letters"
    history=$(sql "SELECT count(*) FROM ${prefix}failed_message_history")
    [ "$history" = 0 ] || fail "status history rows after ingestion only: $history, want 0"
fi
ok "ingestion: $dead_letters dead letters, $mid_pass passes SIGKILLed ($left left before the last): 0 lost, 0 counted twice in attempts, groups or history"
