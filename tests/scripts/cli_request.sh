#!/usr/bin/env bash
# cli_request.sh - `sqlbus request`, `respond` and `wait`, and the replies
# `sqlbus work` sends (rules C23, C25).
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
