#!/usr/bin/env bash
# cli_work.sh - `sqlbus work`: ack on exit 0, nak with exit:N and then
# dead-letter after --max-attempts, signal:NAME, timeout, and the handler
# environment (rules T19-T21, T27, T30).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T30: exit 0 acks: every message ran once and the queue is empty.
for i in 1 2 3; do printf 'ok %s' $i | sb publish --queue acks >/dev/null; done
sb work --queue acks --once --concurrency 2 -- sh -c "printf '%s\\n' \"\$(cat)\" >> '$tmp/acks'"
[ "$(sort "$tmp/acks" | tr '\n' ,)" = "ok 1,ok 2,ok 3," ] || fail "handled: $(cat "$tmp/acks")"
expect_count acks ready 0
expect_count acks in_flight 0
expect_count acks delayed 0
ok "exit 0 acks"

# T30 + T19 + T20 + T21: a non-zero exit naks with exception type exit:N
# and the stderr tail; after --max-attempts it is dead-lettered with the
# sb-* headers, in the dead-letter queue only.
handler fail3 "echo \"attempt \$SQLBUS_ATTEMPT\" >> '$tmp/attempts'
echo 'first stderr line' >&2
echo \"boom on attempt \$SQLBUS_ATTEMPT\" >&2
exit 3"
orig=$(printf 'bad payload' | sb publish --queue fails)
sb work --queue fails --once --max-attempts 2 --delay 0s -- "$tmp/fail3"
[ "$(tr '\n' , <"$tmp/attempts")" = "attempt 1,attempt 2," ] ||
    fail "attempts: $(cat "$tmp/attempts")"
expect_count fails ready 0
expect_count fails delayed 0
expect_count fails dead_lettered 1
sb dlq list --queue fails --json >"$tmp/dl.json"
[ "$(jq length "$tmp/dl.json")" = 1 ] || fail "dlq list: $(cat "$tmp/dl.json")"
dl=$(jq -r '.[0].id' "$tmp/dl.json")
sb dlq show "$dl" --json >"$tmp/show.json"
jq -e --arg orig "$orig" '
    .headers["sb-exception-type"] == "exit:3" and
    .exception_type == "exit:3" and
    (.headers["sb-exception-message"] | contains("boom on attempt 2")) and
    (.headers["sb-exception-message"] | contains("first stderr line")) and
    .headers["sb-failed-queue"] == "fails" and .failed_queue == "fails" and
    .headers["sb-message-id"] == $orig and .original_id == $orig and
    .headers["sb-attempts"] == "2" and .attempts == 2 and
    (.headers["sb-dead-letter-reason"] | length > 0) and
    (.headers | has("sb-time-of-failure")) and
    (.headers | has("sb-processing-endpoint")) and
    .payload == "bad payload" and .payload_encoding == "utf-8"' \
    "$tmp/show.json" >/dev/null || { cat "$tmp/show.json" >&2; fail "dead letter headers"; }
ok "non-zero exit naks, then dead-letters with exit:3 and the stderr tail"

# T30: only the tail of stderr (<= 8 KiB) is kept.
handler noisy "head -c 100000 /dev/zero | tr '\\0' x >&2; echo '<end>' >&2; exit 1"
printf 'noisy' | sb publish --queue noisy >/dev/null
sb work --queue noisy --once --max-attempts 1 -- "$tmp/noisy"
dl=$(sb dlq list --queue noisy --json | jq -r '.[0].id')
msg=$(sb dlq show "$dl" --json | jq -r '.exception_message')
[ "${#msg}" -le 8192 ] && [ "${#msg}" -ge 8000 ] || fail "stderr tail is ${#msg} bytes"
[[ $msg == *"<end>" ]] || fail "stderr tail does not end with the last line"
ok "stderr tail capped at 8 KiB"

# T30: killed by a signal -> exception type signal:SIGKILL.
printf 'die' | sb publish --queue sig >/dev/null
sb work --queue sig --once --max-attempts 1 -- sh -c 'kill -KILL $$'
dl=$(sb dlq list --queue sig --json | jq -r '.[0].id')
[ "$(sb dlq show "$dl" --json | jq -r .exception_type)" = signal:SIGKILL ] ||
    fail "signal: $(sb dlq show "$dl" --json)"
ok "a handler killed by SIGKILL fails with signal:SIGKILL"

# T30: the timeout kills the whole process group and fails with
# "timeout"; a grandchild is killed too.
handler slow "sleep 60 & echo \$! > '$tmp/grandchild.pid'; wait"
printf 'slow' | sb publish --queue slow >/dev/null
start=$(date +%s)
sb work --queue slow --once --max-attempts 1 --timeout 1s -- "$tmp/slow"
took=$(($(date +%s) - start))
[ $took -lt 15 ] || fail "--timeout 1s took ${took}s"
dl=$(sb dlq list --queue slow --json | jq -r '.[0].id')
[ "$(sb dlq show "$dl" --json | jq -r .exception_type)" = timeout ] ||
    fail "timeout: $(sb dlq show "$dl" --json)"
sleep 0.5
if is_alive "$(cat "$tmp/grandchild.pid")"; then
    fail "the handler's child survived the timeout"
fi
ok "--timeout kills the process group and fails with timeout"

# T30: a handler that ignores SIGTERM is killed with SIGKILL after the
# grace period.
handler stubborn "trap '' TERM; sleep 30 & echo \$! > '$tmp/stubborn.pid'; wait; wait"
printf 'x' | sb publish --queue stubborn >/dev/null
start=$(date +%s)
sb work --queue stubborn --once --max-attempts 1 --timeout 1s -- "$tmp/stubborn"
took=$(($(date +%s) - start))
[ $took -lt 15 ] || fail "stubborn handler took ${took}s"
[ "$(sb dlq list --queue stubborn --json | jq -r '.[0].exception_type')" = timeout ] ||
    fail "stubborn handler not failed with timeout"
ok "SIGKILL after the grace period"

# T30 + T27: the environment given to the handler.
handler env "{
printf 'id=%s\n' \"\$SQLBUS_MESSAGE_ID\"
printf 'queue=%s\n' \"\$SQLBUS_QUEUE\"
printf 'attempt=%s\n' \"\$SQLBUS_ATTEMPT\"
printf 'corr=%s\n' \"\${SQLBUS_CORRELATION_ID-<unset>}\"
} > \"$tmp/env.\$SQLBUS_MESSAGE_ID\"
printf '%s' \"\$SQLBUS_HEADERS\" > \"$tmp/headers.\$SQLBUS_MESSAGE_ID\""
e1=$(printf 'a' | sb publish --queue 'env q' --header sb-correlation-id=corr-42 --header x=y)
e2=$(printf 'b' | sb publish --queue 'env q')
# An inherited SQLBUS_CORRELATION_ID must not leak into a message without one.
SQLBUS_CORRELATION_ID=stale sb work --queue 'env q' --once -- "$tmp/env"
printf 'id=%s\nqueue=env q\nattempt=1\ncorr=corr-42\n' "$e1" | diff - "$tmp/env.$e1" ||
    fail "environment of the first message"
printf 'id=%s\nqueue=env q\nattempt=1\ncorr=<unset>\n' "$e2" | diff - "$tmp/env.$e2" ||
    fail "environment of the second message"
jq -e '.x == "y" and .["sb-correlation-id"] == "corr-42"' "$tmp/headers.$e1" >/dev/null ||
    fail "SQLBUS_HEADERS: $(cat "$tmp/headers.$e1")"
jq -e 'type == "object"' "$tmp/headers.$e2" >/dev/null || fail "SQLBUS_HEADERS not an object"
ok "handler environment"

# T30: SQLBUS_ATTEMPT counts deliveries; --max-attempts 0 is unlimited.
handler third "n=\$SQLBUS_ATTEMPT; echo \$n >> '$tmp/third.out'; [ \$n -ge 7 ]"
printf 'x' | sb publish --queue third >/dev/null
sb work --queue third --once --max-attempts 0 --delay 0s -- "$tmp/third"
[ "$(tail -n1 "$tmp/third.out")" = 7 ] && [ "$(wc -l <"$tmp/third.out")" = 7 ] ||
    fail "attempts with --max-attempts 0: $(tr '\n' ' ' <"$tmp/third.out")"
expect_count third dead_lettered 0
ok "--max-attempts 0 retries until success"

# T30: a handler that never reads its stdin, and one that writes a lot of
# stdout before reading, cannot deadlock the worker.
head -c 2000000 /dev/zero >"$tmp/big"
sb publish --queue big "$tmp/big" >/dev/null
sb publish --queue big "$tmp/big" >/dev/null
sb work --queue big --once --timeout 20s -- true
handler chatty "head -c 1000000 /dev/zero; cat >/dev/null"
sb publish --queue big "$tmp/big" >/dev/null
sb work --queue big --once --timeout 20s -- "$tmp/chatty"
expect_count big ready 0
expect_count big dead_lettered 0
ok "no deadlock on stdin/stdout"

# T26: the summary line reports what happened.
printf 'x' | sb publish --queue summary >/dev/null
sb work --queue summary --once -- true 2>"$tmp/summary"
grep -q '1 acked' "$tmp/summary" || fail "summary: $(cat "$tmp/summary")"
ok "summary line"

# T37 (retry back-off from the CLI): the delay a failed message gets is
# read from its row (available_at) after each attempt, then the row is
# made ready at once so the next attempt runs without waiting.
have_sql || fail "T37 reads available_at with the backend's client (sqlite3, psql)"
# wait_ms QUEUE: milliseconds until the queue's one row is available, by
# the clock that wrote it (PostgreSQL's now(); on SQLite the library's
# wall clock, in microseconds).
wait_ms() {
    if [ "$backend" = sqlite ]; then
        sql "SELECT (available_at - CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)) / 1000 FROM ${prefix}messages WHERE queue = '$1'"
    else
        sql "SELECT floor(extract(epoch FROM available_at - now()) * 1000)::bigint FROM ${prefix}messages WHERE queue = '$1'"
    fi
}
ready_now() {
    if [ "$backend" = sqlite ]; then
        sql "UPDATE ${prefix}messages SET available_at = 0 WHERE queue = '$1'"
    else
        sql "UPDATE ${prefix}messages SET available_at = now() - interval '1 second' WHERE queue = '$1'"
    fi
}
# expect_delays QUEUE "LO:HI ..." WORK-FLAGS...: one failing attempt per
# LO:HI pair (milliseconds); after each the row must wait LO..HI, less
# up to 5 s for the time between the nak and the reading.
handler always_fails "echo \"\$SQLBUS_ATTEMPT\" >> \"$tmp/\$SQLBUS_QUEUE.attempts\"; exit 1"
expect_delays() {
    local q=$1 ranges=$2 n=0 got lo hi
    shift 2
    printf 'x' | sb publish --queue "$q" >/dev/null
    for r in $ranges; do
        n=$((n + 1))
        lo=${r%:*} hi=${r#*:}
        sb work --queue "$q" --once --max-attempts 0 "$@" -- "$tmp/always_fails" 2>>"$tmp/$q.stderr"
        # Waiting, ready or delayed: a short delay (0.5 s) may have
        # passed by the time a slow build (ASan) reads the counts.
        [ "$(sb queues --json | jq --arg q "$q" '.[] | select(.queue == $q) | .ready + .delayed + .in_flight * 100')" = 1 ] ||
            fail "$q: after attempt $n the message is not waiting: $(sb queues --json)"
        got=$(wait_ms "$q")
        [ "$got" -ge $((lo - 5000)) ] && [ "$got" -le $((hi + 100)) ] ||
            fail "$q: after attempt $n ($*) the message waits ${got} ms, expected ${lo}..${hi}"
        ready_now "$q"
    done
    [ "$(wc -l <"$tmp/$q.attempts")" = "$n" ] && [ "$(tail -n1 "$tmp/$q.attempts")" = "$n" ] ||
        fail "$q: attempts $(tr '\n' ' ' <"$tmp/$q.attempts")"
}
# Exponential, factor 2: 40 s, 80 s, 160 s, then the 5 min cap, each drawn
# between half and all of it (the library's jitter); a fixed delay would
# stay at 40 s and fail the third attempt.
expect_delays expo "20000:40000 40000:80000 80000:160000 150000:300000 150000:300000" \
    --backoff exponential --backoff-base 40s --backoff-max 5m
ok "T37: --backoff exponential doubles the delay per attempt up to --backoff-max, with jitter"
expect_delays expo3 "5000:10000 15000:30000 45000:90000" \
    --backoff exponential --backoff-base 10s --backoff-factor 3 --backoff-max 1h
ok "T37: --backoff-factor 3"
# The default exponential base is the library's 1 s.
expect_delays expo_default "500:1000 1000:2000 2000:4000" --backoff exponential
ok "T37: --backoff exponential defaults to a 1 s base"
# Fixed: --delay D and --backoff fixed --backoff-base D wait exactly D.
expect_delays fixed_delay "30000:30000 30000:30000 30000:30000" --delay 30s
expect_delays fixed_base "30000:30000 30000:30000" --backoff fixed --backoff-base 30s
expect_delays fixed_base_only "20000:20000 20000:20000" --backoff-base 20s
expect_delays fixed_default "5000:5000 5000:5000"
ok "T37: --delay D is --backoff fixed --backoff-base D: no growth, no jitter"

# T37: bad or contradictory back-off flags are usage errors naming the
# flags and the limit, before anything runs.
bad_backoff() {
    local want=$1
    shift
    expect_exit 2 sb work --queue badbackoff --once "$@" -- "$tmp/always_fails"
    expect_err "$want"
}
printf 'x' | sb publish --queue badbackoff >/dev/null
bad_backoff "--backoff must be fixed or exponential (got linear)" --backoff linear
bad_backoff "--backoff-base (10m) must not exceed --backoff-max (5m00s, the default)" \
    --backoff exponential --backoff-base 10m
bad_backoff "--backoff-base (2m) must not exceed --backoff-max (1m)" \
    --backoff exponential --backoff-base 2m --backoff-max 1m
bad_backoff "--backoff-max must be 1ms..7d00h (got 8d)" --backoff exponential --backoff-max 8d
bad_backoff "--backoff-base must be 0ms..7d00h (got 8d)" --backoff-base 8d
bad_backoff "--backoff-base must be 1ms..7d with --backoff exponential (got 0s)" \
    --backoff exponential --backoff-base 0s
bad_backoff "--backoff-factor must be 1.1..10 (got 11)" --backoff exponential --backoff-factor 11
bad_backoff "--backoff-factor must be 1.1..10 (got 1)" --backoff exponential --backoff-factor 1
bad_backoff "--backoff-factor must be 1.1..10 (got inf)" --backoff exponential --backoff-factor inf
bad_backoff "--delay and --backoff exponential cannot be combined" --delay 1s --backoff exponential
bad_backoff "--delay and --backoff-base cannot be combined" --delay 1s --backoff-base 2s
bad_backoff "--delay and --backoff-max cannot be combined" --delay 1s --backoff-max 2s
bad_backoff "--backoff-max needs --backoff exponential" --backoff-max 1m
bad_backoff "--backoff-factor needs --backoff exponential" --backoff fixed --backoff-factor 3
[ ! -e "$tmp/badbackoff.attempts" ] || fail "a refused back-off ran the handler"
expect_count badbackoff ready 1
ok "T37: bad back-off flags exit 2 naming the flag and the limit"

# T42: a command's lines on $SQLBUS_PROGRESS_FD are its message's
# progress while it runs (the latest line; one that is not UTF-8 is
# skipped; a long one is cut to 4096 bytes); a nak clears it.
if have_sql; then
    handler progress '
printf "step 1\n" >&"$SQLBUS_PROGRESS_FD"
printf "half\n way\n\377\376 not text\n" >&"$SQLBUS_PROGRESS_FD"
: >"'"$tmp"'/progress.running"
for _ in $(seq 1 200); do [ -e "'"$tmp"'/progress.go" ] && break; sleep 0.05; done
head -c 5000 /dev/zero | tr "\0" "x" >&"$SQLBUS_PROGRESS_FD"
printf "\n" >&"$SQLBUS_PROGRESS_FD"
for _ in $(seq 1 200); do [ -e "'"$tmp"'/progress.end" ] && break; sleep 0.05; done
exit 3'
    printf 'p' | sb publish --queue progress >/dev/null
    sb work --queue progress --once --max-attempts 5 -- "$tmp/progress" >/dev/null 2>&1 &
    pid=$!
    wait_for_file "$tmp/progress.running"
    seen=""
    for _ in $(seq 1 100); do
        seen=$(sql "SELECT progress FROM ${prefix}messages WHERE queue = 'progress'")
        [ "$seen" = " way" ] && break
        sleep 0.05
    done
    [ "$seen" = " way" ] || fail "progress while running: '$seen'"
    : >"$tmp/progress.go"
    for _ in $(seq 1 100); do
        seen=$(sql "SELECT length(progress) FROM ${prefix}messages WHERE queue = 'progress'")
        [ "$seen" = 4096 ] && break
        sleep 0.05
    done
    [ "$seen" = 4096 ] || fail "a long progress line stored as $seen bytes"
    : >"$tmp/progress.end"
    wait_exit "$pid"
    [ "$(sql "SELECT COALESCE(progress, 'none') FROM ${prefix}messages WHERE queue = 'progress'")" = none ] ||
        fail "progress after the nak: $(sql "SELECT progress FROM ${prefix}messages WHERE queue = 'progress'")"
    ok "T42: progress lines from \$SQLBUS_PROGRESS_FD, cleared by a nak"
fi
