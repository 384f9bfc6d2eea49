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
