#!/usr/bin/env bash
# demo.sh - a short end-to-end tour of the sqlbus CLI on SQLite (`make run`).
#   bash scripts/demo.sh [PATH/TO/sqlbus]
# Publishes 1,000 jobs and one that fails, drains them with four handlers,
# and shows the queues and the dead-letter queue. Takes a few seconds.
set -euo pipefail
sqlbus=${1:-build/sqlbus}
[ -x "$sqlbus" ] || { echo "demo: no sqlbus binary at $sqlbus (run make build)" >&2; exit 1; }
db=./sqlbus.db
export SQLBUS_DB="sqlite:$db"

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }

step "Start from an empty database ($db)"
rm -f "$db" "$db-wal" "$db-shm" "$db-journal"

step "Publish 1,000 messages, one per line: 'job 1' .. 'job 1000'"
seq 1 1000 | sed 's/^/job /' | "$sqlbus" publish --queue demo --lines >/dev/null

step "Publish one message its handler will fail on: 'fail'"
printf 'fail' | "$sqlbus" publish --queue demo

step "Queue counts before the workers run"
"$sqlbus" queues

step "Drain: 4 handlers; 'fail' exits 1 and is dead-lettered after 2 attempts"
"$sqlbus" work --queue demo --concurrency 4 --max-attempts 2 --delay 0s --once -- \
    sh -c 'payload=$(cat)
           if [ "$payload" = fail ]; then
               echo "cannot process \"$payload\" (attempt $SQLBUS_ATTEMPT)" >&2
               exit 1
           fi'

step "Queue counts after: demo is empty, one dead letter"
"$sqlbus" queues

step "The dead-letter queue"
"$sqlbus" dlq list

id=$("$sqlbus" dlq list --queue demo --json | sed -n 's/^ *"id": "\(.*\)",$/\1/p' | head -n1)
if [ -n "$id" ]; then
    step "One dead letter in full"
    "$sqlbus" dlq show "$id"
fi

step "Done. Try: $sqlbus --help, $sqlbus dlq requeue --queue demo"
