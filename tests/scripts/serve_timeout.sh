#!/usr/bin/env bash
# serve_timeout.sh - rule S10's time per request over real HTTP: `sqlbus
# serve --request-timeout` runs the API on a bus of its own whose SQL
# statements are cancelled at the limit, and such a request answers 503
# {"error": "timeout"} with Retry-After: 1.
#
# Deterministic, not a race: another session holds a lock the request's
# statement needs, for as long as the test wants, so that statement would
# wait forever without the limit (SQLite: the write lock, BEGIN IMMEDIATE,
# which serve's busy handler gives up on at the statement's deadline rather
# than after busy_timeout's 5 s; PostgreSQL: LOCK TABLE on the messages
# table, whose wait statement_timeout counts). Nothing is timed beyond
# curl's own cap. Then: the timed-out publish left nothing behind, the
# same server publishes once the lock is gone, and ingestion, which runs
# on serve's own bus without a limit, waited out the lock without an
# error.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

limit_ms=500
start_server timeout --request-timeout ${limit_ms}ms
grep -q "request timeout ${limit_ms}ms per statement" "$tmp/timeout.err" ||
    fail "the startup line does not name the request timeout: $(cat "$tmp/timeout.err")"

publish() { # NAME: POST one message to queue slow.q
    req "$1" -m 20 -X POST -H 'Content-Type: application/json' \
        -d "{\"body\": {\"n\": \"$1\"}}" "$base/api/queues/slow.q/messages"
}
publish before
expect before 201
ok "the API publishes under a ${limit_ms} ms limit"

# The lock holder: a client reading its commands from a FIFO, so the
# lock is held until the test says so.
mkfifo "$tmp/lock.in"
if [ "$backend" = sqlite ]; then
    sqlite3 "${SQLBUS_DB#sqlite:}" <"$tmp/lock.in" >"$tmp/lock.out" 2>&1 &
else
    psql -X -q -v ON_ERROR_STOP=1 "$SQLBUS_DB" <"$tmp/lock.in" >"$tmp/lock.out" 2>&1 &
fi
bg_pids+=("$!")
lock_pid=$!
exec 3>"$tmp/lock.in"
if [ "$backend" = sqlite ]; then
    printf '.timeout 5000\nBEGIN IMMEDIATE;\n.print locked\n' >&3
else
    printf 'BEGIN;\nLOCK TABLE %smessages IN ACCESS EXCLUSIVE MODE;\n\\echo locked\n' "$prefix" >&3
fi
for i in $(seq 1 100); do
    grep -q '^locked$' "$tmp/lock.out" && break
    is_alive "$lock_pid" || fail "the lock holder exited: $(cat "$tmp/lock.out")"
    sleep 0.1
done
grep -q '^locked$' "$tmp/lock.out" || fail "no lock: $(cat "$tmp/lock.out")"
ready_before=$(curl -s -m 20 "$base/health/ready" | jq -c .ingestion)

# S10: the write waits for the lock until the limit, then 503 timeout.
publish blocked
expect blocked 503 .error timeout .field null
jq -r .message "$tmp/blocked.json" |
    grep -qF "the request took longer than the server's limit of $limit_ms ms (--request-timeout)" ||
    fail "the message does not name the limit: $(cat "$tmp/blocked.json")"
[ "$(header blocked Retry-After)" = 1 ] || fail "no Retry-After: 1: $(cat "$tmp/blocked.h")"
if [ "$backend" = postgresql ]; then
    # ACCESS EXCLUSIVE blocks reads too: a peek times out the same way.
    req peek -m 20 "$base/api/queues/slow.q/messages"
    expect peek 503 .error timeout
else
    # WAL readers never wait for the writer.
    req peek -m 20 "$base/api/queues/slow.q/messages"
    expect peek 200
fi
req live -m 20 "$base/health"
expect live 200 .status ok
ok "a statement held past --request-timeout answers 503 timeout with Retry-After: 1"

# Held past several ingestion passes (one a second), then released.
sleep 2.5
if [ "$backend" = sqlite ]; then
    printf 'ROLLBACK;\n.quit\n' >&3
else
    printf 'ROLLBACK;\n\\q\n' >&3
fi
exec 3>&-
wait_exit "$lock_pid" 10

publish after
expect after 201
sb queues --json >"$tmp/queues.json"
jq -e '[.[] | select(.queue == "slow.q")][0].ready == 2' "$tmp/queues.json" >/dev/null ||
    fail "slow.q should hold the two published messages only: $(cat "$tmp/queues.json")"
req peek2 -m 20 "$base/api/queues/slow.q/messages"
expect peek2 200 length 2
ok "the timed-out publish left nothing; the same server publishes after the lock"

# Ingestion is on serve's own bus, without the limit: its passes during
# the lock waited for it instead of failing (on PostgreSQL every pass
# reads the locked table).
ready_after=""
for i in $(seq 1 50); do
    ready_after=$(curl -s -m 20 "$base/health/ready" | jq -c .ingestion)
    [ "$(jq .passes <<<"$ready_after")" -gt "$(jq .passes <<<"$ready_before")" ] && break
    sleep 0.1
done
[ "$(jq .errors <<<"$ready_after")" = "$(jq .errors <<<"$ready_before")" ] ||
    fail "ingestion failed while the lock was held: before $ready_before, after $ready_after"
[ "$(jq .failing <<<"$ready_after")" = false ] || fail "ingestion is failing: $ready_after"
ok "ingestion waited out the lock without an error (no request limit)"

kill -TERM "$pid"
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM: $(cat "$tmp/timeout.err")"
ok "SIGTERM stops serve"
