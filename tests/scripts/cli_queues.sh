#!/usr/bin/env bash
# cli_queues.sh - `sqlbus queues`: counts per queue as a table and as JSON
# (rule T31).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T31: an empty database lists no queues.
[ "$(sb queues --json)" = "[]" ] || fail "empty database: $(sb queues --json)"

# Build: qa has 2 ready + 1 delayed; qb has 1 dead-lettered; qc has 1
# in flight (a handler is running).
printf '1' | sb publish --queue qa >/dev/null
printf '2' | sb publish --queue qa >/dev/null
printf '3' | sb publish --queue qa --delay 1h >/dev/null
printf 'x' | sb publish --queue qb >/dev/null
sb work --queue qb --once --max-attempts 1 -- false
printf 'y' | sb publish --queue qc >/dev/null
handler busy "touch '$tmp/busy.started'; sleep 3"
"$SQLBUS" --prefix "$prefix" work --queue qc -- "$tmp/busy" 2>/dev/null &
pid=$!
bg_pids+=("$pid")
wait_for_file "$tmp/busy.started"
sleep 0.2

# T31: --json is an array of objects with these fields and types.
sb queues --json >"$tmp/q.json"
jq -e 'type == "array" and length >= 3 and all(.[];
        (.queue | type) == "string" and (.ready | type) == "number" and
        (.delayed | type) == "number" and (.in_flight | type) == "number" and
        (.dead_lettered | type) == "number" and
        ((.oldest_ready_age_ms | type) == "number" or .oldest_ready_age_ms == null))' \
    "$tmp/q.json" >/dev/null || { cat "$tmp/q.json" >&2; fail "queues --json shape"; }
jq -e '.[] | select(.queue == "qa") | .ready == 2 and .delayed == 1 and
        .in_flight == 0 and .dead_lettered == 0 and .oldest_ready_age_ms >= 0' \
    "$tmp/q.json" >/dev/null || fail "qa counts: $(jq -c '.[] | select(.queue == "qa")' "$tmp/q.json")"
jq -e '.[] | select(.queue == "qb") | .ready == 0 and .dead_lettered == 1 and
        .oldest_ready_age_ms == null' \
    "$tmp/q.json" >/dev/null || fail "qb counts: $(jq -c '.[] | select(.queue == "qb")' "$tmp/q.json")"
jq -e '.[] | select(.queue == "qc") | .in_flight == 1 and .ready == 0' \
    "$tmp/q.json" >/dev/null || fail "qc counts: $(jq -c '.[] | select(.queue == "qc")' "$tmp/q.json")"
ok "queues --json"

# T31: the table has a header and one aligned row per queue.
sb queues >"$tmp/q.txt"
head -n1 "$tmp/q.txt" | grep -q '^QUEUE  *READY  *DELAYED  *IN-FLIGHT  *DEAD-LETTERED  *OLDEST-READY  *STATE  *TTL  *LIMITS$' ||
    fail "table header: $(head -n1 "$tmp/q.txt")"
grep -Eq '^qa +2 +1 +0 +0 +[0-9][^ ]* +active +- +-$' "$tmp/q.txt" || fail "qa row: $(cat "$tmp/q.txt")"
grep -Eq '^qb +0 +0 +0 +1 +- +active +- +-$' "$tmp/q.txt" || fail "qb row: $(cat "$tmp/q.txt")"
# Every row is as wide as the header up to the last column's start.
col=$(head -n1 "$tmp/q.txt" | awk '{print index($0, "OLDEST-READY")}')
awk -v c="$col" 'NR > 1 && substr($0, c - 2, 2) != "  " { exit 1 }' "$tmp/q.txt" ||
    fail "columns not aligned: $(cat "$tmp/q.txt")"
ok "queues table"

kill -TERM "$pid"
wait_exit "$pid" 30
[ $wait_rc -eq 0 ] || fail "worker exited $wait_rc after SIGTERM"

# T35: pause and resume. A paused queue is listed paused (an empty one
# too), accepts publishes, and gives nothing to `work --once`, which exits
# since nothing may run; resumed, the same command takes its messages.
expect_exit 0 sb queues pause qa
[ "$(cat "$tmp/out")" = "queue qa paused" ] || fail "pause said: $(cat "$tmp/out")"
expect_exit 0 sb queues pause qempty
jq -e '.[] | select(.queue == "qempty") | .paused == true and .ready == 0' \
    <(sb queues --json) >/dev/null || fail "an empty paused queue is not listed"
printf '4' | sb publish --queue qa >/dev/null
sb queues >"$tmp/q.txt"
grep -Eq '^qa +3 +1 +0 +0 +[0-9][^ ]* +paused +- +-$' "$tmp/q.txt" || fail "qa paused row: $(cat "$tmp/q.txt")"
handler record 'cat >>"$SQLBUS_TEST_LOG"; echo >>"$SQLBUS_TEST_LOG"'
export SQLBUS_TEST_LOG=$tmp/handled.log
: >"$SQLBUS_TEST_LOG"
expect_exit 0 timeout 60 "$SQLBUS" --prefix "$prefix" work --queue qa --once -- "$tmp/record"
[ ! -s "$SQLBUS_TEST_LOG" ] || fail "a paused queue ran: $(cat "$SQLBUS_TEST_LOG")"
jq -e '.[] | select(.queue == "qa") | .paused == true and .ready == 3' \
    <(sb queues --json) >/dev/null || fail "qa after work on a paused queue: $(sb queues --json)"
expect_exit 0 sb queues resume qa
[ "$(cat "$tmp/out")" = "queue qa resumed" ] || fail "resume said: $(cat "$tmp/out")"
expect_exit 0 timeout 60 "$SQLBUS" --prefix "$prefix" work --queue qa --once -- "$tmp/record"
[ "$(grep -c . "$SQLBUS_TEST_LOG")" -eq 3 ] || fail "resumed: handled $(cat "$SQLBUS_TEST_LOG")"
ok "queues pause / resume (T35)"

# T35: bad input names the argument; nothing changes.
expect_exit 2 sb queues pause
expect_err "queues pause needs the QUEUE"
expect_exit 2 sb queues resume qa qb
expect_err 'unexpected argument "qb"'
expect_exit 2 sb queues pause "$(printf 'a\tb')"
expect_err "QUEUE"
jq -e '[.[] | select(.paused)] | map(.queue) == ["qempty"]' <(sb queues --json) >/dev/null ||
    fail "paused queues after bad input: $(sb queues --json)"
ok "queues pause / resume input errors"

# T34: publish --priority: one worker takes the highest first; the queue
# is listed prioritized.
printf 'low' | sb publish --queue qp --priority -5 >/dev/null
printf 'mid' | sb publish --queue qp >/dev/null
printf 'high' | sb publish --queue qp --priority 7 >/dev/null
printf 'top\n' | sb publish --queue qp --priority 9 --lines >/dev/null
printf 'top2' | sb publish --queue qp --priority 8 >/dev/null
jq -e '.[] | select(.queue == "qp") | .prioritized == true' <(sb queues --json) >/dev/null ||
    fail "qp not prioritized: $(sb queues --json)"
: >"$SQLBUS_TEST_LOG"
expect_exit 0 timeout 60 "$SQLBUS" --prefix "$prefix" work --queue qp --once --concurrency 1 -- "$tmp/record"
[ "$(tr '\n' ' ' <"$SQLBUS_TEST_LOG")" = "top top2 high mid low " ] ||
    fail "priority order: $(tr '\n' ' ' <"$SQLBUS_TEST_LOG")"
expect_exit 2 sb publish --queue qp --priority 32768 /dev/null
expect_err "--priority must be -32768..32767 (got 32768)"
expect_exit 2 sb publish --queue qp --priority high /dev/null
expect_err "--priority"
ok "publish --priority (T34)"

# T39: queues cancel dead-letters waiting and delayed messages by id with
# reason "cancelled"; an id no longer there exits 4 after the others; a
# bad id exits 2; the dead-letter queue's own messages are not cancelled.
id1=$(printf 'one' | sb publish --queue qc)
id2=$(printf 'two' | sb publish --queue qc --delay 1h)
id3=$(printf 'three' | sb publish --queue qc)
expect_exit 0 sb queues cancel qc "$id1" "$id2"
grep -q "message $id1 cancelled (waiting)" "$tmp/out" || fail "cancel said: $(cat "$tmp/out")"
grep -q "message $id2 cancelled (waiting)" "$tmp/out" || fail "cancel said: $(cat "$tmp/out")"
jq -e '.[] | select(.queue == "qc") | .ready == 1 and .delayed == 0' <(sb queues --json) >/dev/null ||
    fail "qc after the cancel: $(sb queues --json)"
[ "$(sb dlq list --json | jq "[.[] | select(.dead_letter_reason == \"cancelled\")] | length")" -eq 2 ] ||
    fail "cancelled dead letters: $(sb dlq list --json)"
expect_exit 4 sb queues cancel qc "$id1" "$id3"
expect_err "queue qc has no message $id1"
grep -q "message $id3 cancelled" "$tmp/out" || fail "the id after a missing one: $(cat "$tmp/out")"
expect_exit 2 sb queues cancel qc not-a-uuid
expect_err "a message id is a UUID"
expect_exit 2 sb queues cancel qc
expect_err "queues cancel needs the ID"
expect_exit 2 sb queues cancel deadletter "$id1"
expect_err "is the dead-letter queue"
ok "queues cancel (T39)"

# T40: publish --expires-in and a queue's time to live; a message past
# either is dead-lettered "expired" by `queues expire` (or the claim);
# bad durations exit 2 naming the flag.
printf 'soon' | sb publish --queue qe --expires-in 100ms >/dev/null
printf 'later' | sb publish --queue qe --expires-in 1h >/dev/null
printf 'old' | sb publish --queue qt >/dev/null
expect_exit 0 sb queues ttl qt 200ms
grep -q "queue qt: messages expire 200ms after their publish" "$tmp/out" || fail "ttl said: $(cat "$tmp/out")"
jq -e '.[] | select(.queue == "qt") | .ttl_ms == 200' <(sb queues --json) >/dev/null ||
    fail "qt ttl: $(sb queues --json)"
sleep 0.4
expect_exit 0 sb queues expire
grep -q "^2 expired messages dead-lettered" "$tmp/out" || fail "expire said: $(cat "$tmp/out")"
[ "$(sb dlq list --json | jq "[.[] | select(.dead_letter_reason == \"expired\")] | length")" -eq 2 ] ||
    fail "expired dead letters: $(sb dlq list --json)"
jq -e '.[] | select(.queue == "qe") | .ready == 1' <(sb queues --json) >/dev/null ||
    fail "qe after the sweep: $(sb queues --json)"
expect_exit 0 sb queues ttl qt off
jq -e '.[] | select(.queue == "qt") | .ttl_ms == null' <(sb queues --json) >/dev/null ||
    fail "qt ttl off: $(sb queues --json)"
expect_exit 2 sb publish --queue qe --expires-in 1s --delay 1m /dev/null
expect_err "must be longer than delay_ms"
expect_exit 2 sb publish --queue qe --expires-in 0s /dev/null
expect_err "--expires-in"
expect_exit 2 sb queues ttl qt soon
expect_err "TTL"
expect_exit 2 sb queues ttl qt
expect_err "queues ttl needs QUEUE and one duration"
expect_exit 2 sb queues ttl deadletter 1h
expect_err "is the dead-letter queue"
ok "publish --expires-in, queues ttl, queues expire (T40)"

# T38: publish --unique-key refuses a key another message holds (exit 6,
# naming the holder); --unique-policy queued frees it once a consumer has
# the message; queues cancel --key cancels by the key; bad flags exit 2.
held=$(printf 'a' | sb publish --queue qk --unique-key order-7)
expect_exit 6 sb publish --queue qk --unique-key order-7 /dev/null
expect_err "unique key \"order-7\" of queue qk is held by message $held"
expect_exit 0 sb queues cancel qk --key order-7
grep -q '^1 message holding unique key "order-7" cancelled' "$tmp/out" || fail "cancel --key said: $(cat "$tmp/out")"
expect_exit 0 sb publish --queue qk --unique-key order-7 /dev/null
expect_exit 4 sb queues cancel qk --key nobody-holds-this
expect_err "queue qk has no message holding unique key \"nobody-holds-this\""
expect_exit 2 sb queues cancel qk --key order-7 "$held"
expect_err "takes no IDs"
printf 'w' | sb publish --queue qw --unique-key nightly --unique-policy window --unique-window 1h >/dev/null
expect_exit 0 sb queues cancel qw --key nightly
expect_exit 6 sb publish --queue qw --unique-key nightly --unique-policy window --unique-window 1h /dev/null
expect_err "(policy window)"
expect_exit 2 sb publish --queue qk --unique-policy queued /dev/null
expect_err "need --unique-key"
expect_exit 2 sb publish --queue qk --unique-key k --unique-policy window /dev/null
expect_err "--unique-policy window and --unique-window D go together"
expect_exit 2 sb publish --queue qk --unique-key k --unique-policy sometimes /dev/null
expect_err "--unique-policy must be active, queued or window"
expect_exit 2 sb publish --queue qk --unique-key "$(printf 'a\tb')" /dev/null
expect_err "no control characters"
ok "publish --unique-key, queues cancel --key (T38)"
# T36: queues limit sets max_running and a rate (N/D), keeps the limit a
# command does not name, and `off` removes one; the table's LIMITS and
# --json show them; a limited queue's worker still drains it (`work
# --once` exits when done); bad values exit 2 naming the flag and the
# limit; the dead-letter queue takes no limits.
expect_exit 0 sb queues limit ql --max-running 2
[ "$(cat "$tmp/out")" = "queue ql: limits max 2" ] || fail "limit said: $(cat "$tmp/out")"
expect_exit 0 sb queues limit ql --rate 50/1s
[ "$(cat "$tmp/out")" = "queue ql: limits max 2, 50/1s" ] || fail "limit said: $(cat "$tmp/out")"
jq -e '.[] | select(.queue == "ql") | .max_running == 2 and .rate_limit == 50 and
        .rate_interval_ms == 1000' <(sb queues --json) >/dev/null ||
    fail "ql limits: $(sb queues --json)"
jq -e '.[] | select(.queue == "qa") | .max_running == null and .rate_limit == null and
        .rate_interval_ms == null' <(sb queues --json) >/dev/null ||
    fail "qa has limits: $(sb queues --json)"
sb queues >"$tmp/q.txt"
grep -Eq '^ql +0 +0 +0 +0 +- +active +- +max 2, 50/1s$' "$tmp/q.txt" || fail "ql row: $(cat "$tmp/q.txt")"
for i in 1 2 3 4 5; do printf '%s' "$i" | sb publish --queue ql >/dev/null; done
: >"$SQLBUS_TEST_LOG"
expect_exit 0 timeout 60 "$SQLBUS" --prefix "$prefix" work --queue ql --once --concurrency 4 -- "$tmp/record"
# (Handlers run side by side: their lines may interleave; count digits.)
[ "$(tr -cd '0-9' <"$SQLBUS_TEST_LOG" | fold -w1 | sort | tr -d '\n')" = 12345 ] ||
    fail "limited queue handled: $(cat "$SQLBUS_TEST_LOG")"
expect_exit 0 sb queues limit ql --rate 5/1m
[ "$(cat "$tmp/out")" = "queue ql: limits max 2, 5/1m" ] || fail "limit said: $(cat "$tmp/out")"
expect_exit 0 sb queues limit ql --max-running off
expect_exit 0 sb queues limit ql --rate off
[ "$(cat "$tmp/out")" = "queue ql: no limits" ] || fail "limit off said: $(cat "$tmp/out")"
jq -e '.[] | select(.queue == "ql") | .max_running == null and .rate_limit == null' \
    <(sb queues --json) >/dev/null || fail "ql limits off: $(sb queues --json)"
expect_exit 2 sb queues limit ql --max-running 10001
expect_err "--max-running must be 1..10000 (got 10001)"
expect_exit 2 sb queues limit ql --rate 100
expect_err "--rate is N/D"
expect_exit 2 sb queues limit ql --rate 0/1s
expect_err "--rate must be 1..1000000 (got 0)"
expect_exit 2 sb queues limit ql --rate 5/2d
expect_err "--rate must be 1ms..1d00h (got 2d)"
expect_exit 2 sb queues limit ql
expect_err "queues limit needs --max-running N|off or --rate N/D|off"
expect_exit 2 sb queues limit --max-running 3
expect_err "queues limit needs the QUEUE"
expect_exit 2 sb queues limit deadletter --max-running 3
expect_err "is the dead-letter queue"
jq -e '[.[] | select(.max_running != null or .rate_limit != null)] == []' \
    <(sb queues --json) >/dev/null || fail "limits after bad input: $(sb queues --json)"
ok "queues limit (T36)"
