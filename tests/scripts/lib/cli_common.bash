# cli_common.bash - sourced by tests/scripts/cli_*.sh (not a test itself:
# ctest only runs tests/scripts/*.sh).
#
# Environment (set by tests/CMakeLists.txt):
#   SQLBUS               the sqlbus binary
#   SQLBUS_TEST_BACKEND  sqlite | postgresql
#   SQLBUS_TEST_PG_URL   PostgreSQL URL; without it the postgresql run is
#                        skipped (exit 77)
# Each test gets its own temp dir and table prefix t<pid>_, so tests that
# share one PostgreSQL database never see each other's rows.
set -euo pipefail

: "${SQLBUS:?SQLBUS must name the sqlbus binary}"
backend=${SQLBUS_TEST_BACKEND:-sqlite}
prefix="t$$_"
bg_pids=()

if ! command -v jq >/dev/null 2>&1; then
    echo "FAIL: these tests need jq (apt-get install jq)" >&2
    exit 1
fi

case "$backend" in
sqlite) ;;
postgresql)
    if [ -z "${SQLBUS_TEST_PG_URL:-}" ]; then
        echo "skipped: SQLBUS_TEST_PG_URL is not set"
        exit 77
    fi
    ;;
*)
    echo "FAIL: unknown SQLBUS_TEST_BACKEND=$backend" >&2
    exit 1
    ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sqlbus-cli.XXXXXX")
if [ "$backend" = sqlite ]; then
    export SQLBUS_DB="sqlite:$tmp/test.db"
else
    export SQLBUS_DB="$SQLBUS_TEST_PG_URL"
fi

# Drop this test's tables (PostgreSQL; SQLite lives in $tmp).
drop_tables() {
    [ "$backend" = postgresql ] || return 0
    command -v psql >/dev/null 2>&1 || return 0
    psql -qAt "$SQLBUS_DB" -c "SELECT format('DROP TABLE IF EXISTS %I CASCADE;', tablename) FROM pg_tables WHERE left(tablename, length('$prefix')) = '$prefix'" 2>/dev/null |
        psql -q "$SQLBUS_DB" >/dev/null 2>&1 || true
}

# cleanup [RC]: the exit trap (RC: the script's status, for a trap of a
# test's own that ran commands first).
cleanup() {
    local rc=${1:-$?}
    for p in "${bg_pids[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
    done
    # Handler processes a test recorded (they run in their own groups).
    for f in "$tmp"/*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
    done
    drop_tables
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
        echo "--- test failed (rc=$rc); files kept in $tmp" >&2
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT
drop_tables

# private_cluster: a PostgreSQL cluster of this test's own (tests/pg-cluster)
# becomes $SQLBUS_DB, for tests that stop or restart the server; $cluster
# and $pgdir name it for "$cluster" stop|start|restart "$pgdir". Stopped and
# removed at exit. Its folder is under /tmp: the cluster runs as postgres,
# who cannot enter this test's private $tmp.
private_cluster() {
    cluster="$(dirname "${BASH_SOURCE[0]}")/../../pg-cluster"
    pgdir=$(mktemp -d "${TMPDIR:-/tmp}/sqlbus-private-pg.XXXXXX")
    trap 'rc=$?; "$cluster" stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir"; cleanup $rc' EXIT
    SQLBUS_DB=$("$cluster" start "$pgdir") || fail "could not start a private PostgreSQL cluster"
    export SQLBUS_DB
}

# sql STATEMENT: run SQL on this test's database with the backend's own
# client; have_sql: that client is installed.
sql() {
    if [ "$backend" = sqlite ]; then
        sqlite3 "${SQLBUS_DB#sqlite:}" "$1"
    else
        psql -qAt "$SQLBUS_DB" -c "$1"
    fi
}
have_sql() {
    if [ "$backend" = sqlite ]; then command -v sqlite3 >/dev/null; else command -v psql >/dev/null; fi
}

# sb ARGS...: the CLI on this test's database and prefix. (A function: to
# run it in the background with a pid that can be signalled, write
# "$SQLBUS" --prefix "$prefix" ... & instead.)
sb() { "$SQLBUS" --prefix "$prefix" "$@"; }

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() { echo "ok: $*"; }

# expect_exit CODE CMD...: run CMD, keep stdout/stderr in $tmp/out and
# $tmp/err, and fail unless it exits with CODE.
expect_exit() {
    local want=$1
    shift
    local got=0
    "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
    if [ "$got" -ne "$want" ]; then
        echo "stdout:" >&2
        cat "$tmp/out" >&2
        echo "stderr:" >&2
        cat "$tmp/err" >&2
        fail "expected exit $want, got $got: $*"
    fi
}

# expect_err TEXT: the last expect_exit's stderr contains TEXT.
expect_err() {
    grep -qF -- "$1" "$tmp/err" || {
        cat "$tmp/err" >&2
        fail "stderr does not contain: $1"
    }
}

# count QUEUE FIELD: a field of `sqlbus queues --json` (0 when absent).
count() {
    sb queues --json | jq -r --arg q "$1" --arg f "$2" \
        '([.[] | select(.queue == $q) | .[$f]] + [0])[0]'
}

# expect_count QUEUE FIELD N
expect_count() {
    local got
    got=$(count "$1" "$2")
    [ "$got" = "$3" ] || fail "queue $1: $2 is $got, expected $3"
}

# wait_for_file PATH [SECONDS]
wait_for_file() {
    local i=0 limit=$((${2:-20} * 10))
    while [ ! -e "$1" ]; do
        i=$((i + 1))
        [ $i -le $limit ] || fail "timed out waiting for $1"
        sleep 0.1
    done
}

# handler NAME BODY: write an executable bash handler script to $tmp/NAME.
handler() {
    printf '#!/usr/bin/env bash\nset -u\n%s\n' "$2" >"$tmp/$1"
    chmod +x "$tmp/$1"
}

# wait_exit PID [SECONDS]: wait for a background process to exit, killing
# it and failing the test after SECONDS (default 30); its exit status is
# left in $wait_rc.
# shellcheck disable=SC2034 # wait_rc is read by the caller
wait_exit() {
    local pid=$1 limit=$((${2:-30} * 10)) i=0 state
    while :; do
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
        [ "$state" = Z ] || [ "$state" = gone ] && break
        i=$((i + 1))
        if [ $i -gt $limit ]; then
            kill -KILL "$pid" 2>/dev/null || true
            fail "process $pid did not exit within ${2:-30}s"
        fi
        sleep 0.1
    done
    wait_rc=0
    { wait "$pid"; } 2>/dev/null || wait_rc=$?
}

# is_alive PID: the process exists and is not a zombie (in a container
# without an init that reaps, killed orphans stay zombies).
is_alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo gone)
    [ "$state" != Z ] && [ "$state" != gone ]
}
