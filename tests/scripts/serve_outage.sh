#!/usr/bin/env bash
# serve_outage.sh - `sqlbus serve` through a database outage (rules S3,
# S8): with its PostgreSQL stopped, serve keeps running, /health answers,
# /health/ready and the API answer 503 naming no SQL, and the loops log the
# outage; once the database is back, readiness recovers and a failed
# message submitted then is ingested — no restart. Runs against a private
# cluster of its own (tests/pg-cluster), so stopping it disturbs no other
# test; SQLite has no server to stop, so its run reports itself skipped.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

if [ "$backend" != postgresql ]; then
    echo "skipped: SQLite has no database server to stop"
    exit 77
fi
private_cluster

start_server outage
req up "$base/health/ready"
expect up 200 .status ready
ok "ready on a private cluster"

# S3: the database goes away; the process stays, liveness stays.
"$cluster" stop "$pgdir" >/dev/null || fail "pg-cluster stop"
req live "$base/health"
expect live 200 .status ok
req down "$base/health/ready"
expect down 503 .error unavailable
jq -r .message "$tmp/down.json" | grep -q "cannot be reached" ||
    fail "readiness does not say why: $(cat "$tmp/down.json")"
req list "$base/api/errors"
expect list 503 .error unavailable
grep -qi 'select\|insert\|relation' "$tmp/list.json" && fail "SQL in an error: $(cat "$tmp/list.json")"
logged=""
for _ in $(seq 1 50); do
    grep -q 'ingestion failed, retrying with back-off' "$tmp/outage.err" && logged=1 && break
    sleep 0.1
done
[ -n "$logged" ] || fail "the outage was not logged: $(cat "$tmp/outage.err")"
[ "$(grep -c 'ingestion failed, retrying' "$tmp/outage.err")" = 1 ] ||
    fail "the outage was logged more than once: $(cat "$tmp/outage.err")"
is_alive "$pid" || fail "serve died in the outage: $(tail -5 "$tmp/outage.err")"
ok "database down: serve lives, /health 200, readiness and the API 503 without SQL, outage logged once"

# S3: the database comes back; no restart of serve.
"$cluster" start "$pgdir" >/dev/null || fail "pg-cluster start again"
back=""
for _ in $(seq 1 150); do
    req again "$base/health/ready"
    if [ "$(cat "$tmp/again.status")" = 200 ]; then
        back=1
        break
    fi
    sleep 0.2
done
[ -n "$back" ] || fail "readiness did not recover: $(cat "$tmp/again.json")"
req submit -X POST -H 'Content-Type: application/json' \
    -d '{"headers": {"sb-failed-queue": "after", "sb-message-id": "after-1", "sb-exception-type": "Shop.Back"}, "body": "{}"}' \
    "$base/api/failed-messages"
expect submit 202 .accepted 1
found=""
for _ in $(seq 1 150); do
    req seen "$base/api/errors?queueaddress=after"
    if [ "$(header seen Total-Count)" = 1 ]; then
        found=1
        break
    fi
    sleep 0.2
done
[ -n "$found" ] || fail "ingestion did not resume: $(tail -5 "$tmp/outage.err")"
grep -q 'ingestion works again' "$tmp/outage.err" || fail "the recovery was not logged"
ok "database back: ready again, ingestion resumed, same process"

# Issue 22: the event log (ServicePulse's Events) tells of the outage:
# ingestion failed, then worked again, newest first.
req events "$base/api/eventlogitems?per_page=500"
expect events 200
jq -e '[.[] | select(.category == "sqlbus" and (.event_type | startswith("Ingestion")))] |
    (.[0].event_type == "IngestionRestored" and .[1].event_type == "IngestionFailed" and
     .[1].severity == "error" and .[0].raised_at >= .[1].raised_at)' "$tmp/events.json" >/dev/null ||
    fail "the event log does not tell of the outage: $(cat "$tmp/events.json")"
ok "the event log tells of the outage"

kill -TERM "$pid"
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM"
ok "SIGTERM after the outage"
