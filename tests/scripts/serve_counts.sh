#!/usr/bin/env bash
# serve_counts.sh - rules S6 and S8 across processes: messages published
# and handled by other processes (`sqlbus publish`, `sqlbus work --once`,
# each its own process that has exited) show in a running serve's
# throughput chart (/api/stats published and acked) and in /metrics'
# sqlbus_queue_messages_*_total, while serve's own per-process counters
# (sqlbus_messages_*_total) stay empty for that queue. Then a process
# killed with SIGKILL: what it flushed before the kill is counted.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

start_server serve

seq 1 12 | sb publish --queue remote.jobs --lines >/dev/null || fail "publish"
ok "12 published by another process"
sb work --queue remote.jobs --once -- sh -c 'cat >/dev/null' || fail "work --once"
[ "$(sb queues --json | jq '[.[] | select(.queue == "remote.jobs")] | length')" = 0 ] ||
    fail "remote.jobs was not drained"
ok "12 handled and acked by a third process, which has exited"

# The chart: every published and acked message of remote.jobs is in
# exactly one point of serve's /api/stats.
chart_sum() {
    req stats "$base/api/stats?minutes=5"
    jq -e --arg q "$1" --argjson p "$2" --argjson a "$3" '
        [.queues[] | select(.name == $q) | .points[]] as $pts
        | ([$pts[].published] | add) == $p and ([$pts[].acked] | add) == $a' \
        "$tmp/stats.json"
}
within 30 "the other processes' throughput in /api/stats" chart_sum remote.jobs 12 12
ok "/api/stats charts the other processes' 12 published and 12 acked"

req metrics "$base/metrics"
expect metrics 200
grep -qx 'sqlbus_queue_messages_published_total{queue="remote.jobs"} 12' "$tmp/metrics.json" ||
    fail "/metrics has no database-wide published count: $(grep remote.jobs "$tmp/metrics.json")"
grep -qx 'sqlbus_queue_messages_acked_total{queue="remote.jobs"} 12' "$tmp/metrics.json" ||
    fail "/metrics has no database-wide acked count"
grep -qx 'sqlbus_scrape_source_up{source="counts"} 1' "$tmp/metrics.json" ||
    fail "the counts source is not up"
if grep -q '^sqlbus_messages_published_total{queue="remote.jobs"}' "$tmp/metrics.json"; then
    fail "serve's own counters count what it never published"
fi
ok "/metrics: every process's counts by queue; serve's own counters stay its own"

# A worker killed with SIGKILL: what its bus flushed (every second by
# default) before the kill is counted; nothing is counted twice.
seq 1 5 | sb publish --queue remote.killed --lines >/dev/null || fail "publish 5"
"$SQLBUS" --prefix "$prefix" work --queue remote.killed -- sh -c 'cat >/dev/null' 2>"$tmp/worker.err" &
wpid=$!
bg_pids+=("$wpid")
drained() { [ "$(sb queues --json | jq '[.[] | select(.queue == "remote.killed")] | length')" = 0 ]; }
within 30 "the worker to drain remote.killed" drained
sleep 2.5 # more than two flush intervals
kill -KILL "$wpid"
wait "$wpid" 2>/dev/null || true
within 30 "the killed worker's acks in /api/stats" chart_sum remote.killed 5 5
sleep 6 # another sample (every 5 s): the count stays, nothing came twice
chart_sum remote.killed 5 5 || fail "remote.killed's counts changed after the kill: $(cat "$tmp/stats.json")"
ok "a worker killed with SIGKILL after its flush: its 5 acks are counted once"

kill -TERM "$pid"
wait_exit "$pid" 10
ok "serve stopped"
