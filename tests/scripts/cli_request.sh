#!/usr/bin/env bash
# cli_request.sh - `sqlbus request`, `respond` and `wait`, and the replies
# `sqlbus work` sends, and --until / --until-prefix (rules C2, C23, C25).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# Background workers are killed by cleanup (bg_pids) whatever happens.

# C23 + C25: a worker's stdout is the reply; request prints it byte for
# byte and exits 0.
"$SQLBUS" --prefix "$prefix" work --queue rq -- sh -c 'tr a-z A-Z' 2>"$tmp/rq.err" &
bg_pids+=($!)
expect_exit 0 sb request --queue rq --timeout 20s <<<"hello"
[ "$(cat "$tmp/out")" = HELLO ] || fail "request printed: $(cat "$tmp/out")"
# No newline is added: the reply is "HELLO\n" exactly (tr kept it).
[ "$(od -An -c "$tmp/out" | tr -d ' ')" = 'HELLO\n' ] || fail "reply bytes: $(od -c "$tmp/out")"
ok "request prints the worker's stdout as the reply"

# C23 + C25: a job dead-lettered after its last attempt answers with an
# error reply (type exit:N, message = stderr tail): exit 2.
"$SQLBUS" --prefix "$prefix" work --queue rqfail --max-attempts 1 -- sh -c 'echo boom >&2; exit 3' 2>"$tmp/rqfail.err" &
bg_pids+=($!)
expect_exit 2 sb request --queue rqfail --timeout 20s <<<"x"
expect_err "exit:3"
expect_err "boom"
ok "a dead-lettered job makes request exit 2 with exit:3"

# C25: no reply within --timeout exits 124.
expect_exit 124 sb wait --correlation-id X --timeout 1s
expect_exit 124 sb request --queue nobody-listens --timeout 1s <<<"x"
ok "timeout exits 124"

# C25: usage errors name the flag.
expect_exit 2 sb request --timeout 1s
expect_err "--queue is required"
expect_exit 2 sb wait --correlation-id X --timeout 0s
expect_err "--timeout"
expect_exit 2 sb respond --correlation-id X --error nocolon </dev/null
expect_err "--error must be TYPE:MESSAGE"
ok "usage errors"

# C1 attach + C25: wait on an id created elsewhere, answered by respond.
"$SQLBUS" --prefix "$prefix" wait --correlation-id abc-1 --timeout 20s >"$tmp/w1.out" 2>"$tmp/w1.err" &
w1=$!
bg_pids+=("$w1")
# Give the waiter time to register (a reply with no live subscriber goes
# to recovery, C12).
i=0
until sb queues >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -le 100 ] || fail "the database never became usable"
    sleep 0.1
done
sleep 0.5
expect_exit 0 sb respond --correlation-id abc-1 <<<"yo"
wait_exit "$w1" 25
[ "$wait_rc" = 0 ] || { cat "$tmp/w1.err" >&2; fail "wait exited $wait_rc"; }
[ "$(cat "$tmp/w1.out")" = yo ] || fail "wait printed: $(cat "$tmp/w1.out")"
ok "wait + respond"

# C3 + C25: respond --error ends the waiter with exit 2, TYPE: MESSAGE and
# the detail on stderr.
"$SQLBUS" --prefix "$prefix" wait --correlation-id abc-2 --timeout 20s >"$tmp/w2.out" 2>"$tmp/w2.err" &
w2=$!
bg_pids+=("$w2")
sleep 1
expect_exit 0 sb respond --correlation-id abc-2 --error 'bad-input:it broke: badly' <<<"the detail"
wait_exit "$w2" 25
[ "$wait_rc" = 2 ] || { cat "$tmp/w2.err" >&2; fail "wait exited $wait_rc"; }
grep -qF 'bad-input: it broke: badly' "$tmp/w2.err" || fail "error reply: $(cat "$tmp/w2.err")"
grep -qF 'the detail' "$tmp/w2.err" || fail "no detail: $(cat "$tmp/w2.err")"
ok "respond --error"

# C2 + C25: --until PATH=VALUE. The handler sends progress replies with
# `sqlbus respond` (JSON that does not match, then a reply that is not
# JSON); its stdout, which matches, is the terminal reply.
handler progress "for s in queued running; do
    printf '{\"status\":\"%s\"}' \"\$s\" | '$SQLBUS' --prefix '$prefix' respond --correlation-id \"\$SQLBUS_CORRELATION_ID\" || exit 1
done
echo 'not json' | '$SQLBUS' --prefix '$prefix' respond --correlation-id \"\$SQLBUS_CORRELATION_ID\" || exit 1
printf '{\"Status\":\"done\",\"n\":3}'"
"$SQLBUS" --prefix "$prefix" work --queue rqu -- "$tmp/progress" 2>"$tmp/rqu.err" &
bg_pids+=($!)
expect_exit 0 sb request --queue rqu --until 'status=done' --timeout 30s <<<"go"
[ "$(cat "$tmp/out")" = '{"Status":"done","n":3}' ] || fail "request --until printed: $(cat "$tmp/out")"
expect_err '{"status":"queued"}'
expect_err '{"status":"running"}'
expect_err 'not json'
# The progress replies came in order, before the terminal one.
[ "$(grep -n . "$tmp/err" | grep -F -e queued -e running -e 'not json' | cut -d: -f1 | tr '\n' ' ')" = "1 2 3 " ] ||
    fail "progress order: $(cat "$tmp/err")"
ok "request --until PATH=VALUE ends on the matching reply after progress"

# C2 + C25: --until PATH!=VALUE on `wait`, through a JSON string holding
# JSON, with names matched case-insensitively; a reply without the path
# and one that is not JSON are progress.
"$SQLBUS" --prefix "$prefix" wait --correlation-id abc-3 --until '$.body.items[0].state!=pending' --timeout 30s >"$tmp/w3.out" 2>"$tmp/w3.err" &
w3=$!
bg_pids+=("$w3")
sleep 1
printf '%s' '{"body":"{\"items\":[{\"state\":\"pending\"}]}"}' | sb respond --correlation-id abc-3
printf '%s' '{"other":1}' | sb respond --correlation-id abc-3
printf '%s' 'plain text' | sb respond --correlation-id abc-3
printf '%s' '{"Body":"{\"Items\":[{\"State\":\"shipped\"}]}"}' | sb respond --correlation-id abc-3
wait_exit "$w3" 35
[ "$wait_rc" = 0 ] || { cat "$tmp/w3.err" >&2; fail "wait --until exited $wait_rc"; }
[ "$(cat "$tmp/w3.out")" = '{"Body":"{\"Items\":[{\"State\":\"shipped\"}]}"}' ] || fail "wait --until printed: $(cat "$tmp/w3.out")"
grep -qF 'pending' "$tmp/w3.err" || fail "no progress: $(cat "$tmp/w3.err")"
grep -qF 'plain text' "$tmp/w3.err" || fail "no progress: $(cat "$tmp/w3.err")"
ok "wait --until PATH!=VALUE"

# C2 + C25: --until PATH ends on the first reply that has a value there;
# an integer counts.
"$SQLBUS" --prefix "$prefix" wait --correlation-id abc-4 --until result --timeout 30s >"$tmp/w4.out" 2>"$tmp/w4.err" &
w4=$!
bg_pids+=("$w4")
sleep 1
printf '%s' '{"progress":50,"result":null}' | sb respond --correlation-id abc-4
printf '%s' '{"result":42}' | sb respond --correlation-id abc-4
wait_exit "$w4" 35
[ "$wait_rc" = 0 ] || { cat "$tmp/w4.err" >&2; fail "wait --until PATH exited $wait_rc"; }
[ "$(cat "$tmp/w4.out")" = '{"result":42}' ] || fail "wait --until PATH printed: $(cat "$tmp/w4.out")"
grep -qF '"progress":50' "$tmp/w4.err" || fail "no progress: $(cat "$tmp/w4.err")"
ok "wait --until PATH"

# C2 + C25: --until-prefix on `wait`: only a reply starting with the prefix
# ends the wait.
"$SQLBUS" --prefix "$prefix" wait --correlation-id abc-5 --until-prefix DONE --timeout 30s >"$tmp/w5.out" 2>"$tmp/w5.err" &
w5=$!
bg_pids+=("$w5")
sleep 1
printf '%s' 'step 1, not DONE' | sb respond --correlation-id abc-5
printf '%s' 'DONE: all of it' | sb respond --correlation-id abc-5
wait_exit "$w5" 35
[ "$wait_rc" = 0 ] || { cat "$tmp/w5.err" >&2; fail "wait --until-prefix exited $wait_rc"; }
[ "$(cat "$tmp/w5.out")" = 'DONE: all of it' ] || fail "wait --until-prefix printed: $(cat "$tmp/w5.out")"
grep -qF 'step 1' "$tmp/w5.err" || fail "no progress: $(cat "$tmp/w5.err")"
ok "wait --until-prefix"

# C25: --until is checked before anything is published: usage errors
# (exit 2) name the flag and the problem.
expect_exit 2 sb request --queue rqu --until 'a..b=1' <<<"x"
expect_err "--until"
expect_err "empty member name"
expect_exit 2 sb request --queue rqu --until '=done' <<<"x"
expect_err "--until: path is empty"
expect_exit 2 sb wait --correlation-id X --until 'items[x]'
expect_err "[digits]"
expect_exit 2 sb request --queue rqu --until status=done --until-prefix d <<<"x"
expect_err "--until and --until-prefix cannot be combined"
expect_exit 2 sb wait --correlation-id X --until-prefix d --until status
expect_err "--until and --until-prefix cannot be combined"
expect_count rqu ready 0
ok "--until usage errors"
