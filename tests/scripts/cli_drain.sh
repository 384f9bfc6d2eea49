#!/usr/bin/env bash
# cli_drain.sh - `sqlbus work --once` drains 1,000 messages with
# concurrency 4, each handled exactly once; then two worker processes
# compete for another 1,000 (rules T14, T15, T26, T30; transport.md
# "Tests that must exist": N concurrent consumers).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T11 + T29: 1,000 messages in one --lines publish.
seq 1 1000 | sed 's/^/job /' | sb publish --queue drain --lines >"$tmp/published"
[ "$(wc -l <"$tmp/published")" = 1000 ] || fail "published $(wc -l <"$tmp/published")"
expect_count drain ready 1000

# T14 + T26 + T30: four handler threads, every message acked exactly once.
handler record "cat >/dev/null; echo \"\$SQLBUS_MESSAGE_ID\" >> '$tmp/handled'"
sb work --queue drain --concurrency 4 --once -- "$tmp/record" 2>"$tmp/summary"
[ -z "$(sort "$tmp/handled" | uniq -d)" ] || fail "messages handled twice: $(sort "$tmp/handled" | uniq -d | head)"
[ "$(wc -l <"$tmp/handled")" = 1000 ] || fail "handled $(wc -l <"$tmp/handled") of 1000"
diff <(sort "$tmp/published") <(sort "$tmp/handled") >/dev/null || fail "handled ids differ from published ids"
expect_count drain ready 0
expect_count drain in_flight 0
grep -q '1000 acked' "$tmp/summary" || fail "summary: $(cat "$tmp/summary")"
ok "work --once --concurrency 4 drains 1000 messages exactly once"

# T14: two processes with two handlers each compete for one queue: still
# exactly once, nothing lost.
seq 1 1000 | sb publish --queue race --lines >"$tmp/published2"
handler record2 "cat >/dev/null; echo \"\$SQLBUS_MESSAGE_ID\" >> '$tmp/handled2'"
"$SQLBUS" --prefix "$prefix" work --queue race --concurrency 2 --once -- "$tmp/record2" 2>"$tmp/w1" &
w1=$!
bg_pids+=("$w1")
"$SQLBUS" --prefix "$prefix" work --queue race --concurrency 2 --once -- "$tmp/record2" 2>"$tmp/w2" &
w2=$!
bg_pids+=("$w2")
wait_exit "$w1" 120
[ $wait_rc -eq 0 ] || fail "worker 1 failed: $(cat "$tmp/w1")"
wait_exit "$w2" 120
[ $wait_rc -eq 0 ] || fail "worker 2 failed: $(cat "$tmp/w2")"
[ -z "$(sort "$tmp/handled2" | uniq -d)" ] || fail "messages handled twice across processes"
[ "$(wc -l <"$tmp/handled2")" = 1000 ] || fail "handled $(wc -l <"$tmp/handled2") of 1000 across processes"
expect_count race ready 0
ok "two worker processes: every message exactly once"
