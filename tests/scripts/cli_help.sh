#!/usr/bin/env bash
# cli_help.sh - --help for the program and every subcommand, `sqlbus help
# CMD` and --version all exit 0 (rules T29-T33: every command documents
# itself).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

check_help() {
    expect_exit 0 "$@"
    grep -q 'Usage' "$tmp/out" || fail "no usage text from: $*"
    [ ! -s "$tmp/err" ] || fail "help wrote to stderr: $*"
}
check_help "$SQLBUS" --help
check_help "$SQLBUS" -h
check_help "$SQLBUS" help
for cmd in publish work queues dlq schema request respond wait recovery; do
    check_help "$SQLBUS" "$cmd" --help
    check_help "$SQLBUS" help "$cmd"
done
for sub in list show requeue purge; do
    check_help "$SQLBUS" dlq "$sub" --help
    check_help "$SQLBUS" help dlq "$sub"
done
for sub in print verify migrate; do
    check_help "$SQLBUS" schema "$sub" --help
done
for sub in list watchdog; do
    check_help "$SQLBUS" recovery "$sub" --help
    check_help "$SQLBUS" help recovery "$sub"
done
# Help works without a database and does not create one.
(cd "$tmp" && "$SQLBUS" --db "sqlite:$tmp/never.db" work --help >/dev/null)
[ ! -e "$tmp/never.db" ] || fail "--help opened the database"
# Every flag of work is documented in its help.
"$SQLBUS" work --help >"$tmp/work.txt"
for flag in --queue --concurrency --max-attempts --timeout --lease --once --delay \
    --backoff --backoff-base --backoff-max --backoff-factor --heartbeat; do
    grep -q -- "$flag" "$tmp/work.txt" || fail "work --help does not mention $flag"
done
ok "--help for every command"

expect_exit 0 "$SQLBUS" --version
grep -Eq '^sqlbus [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" || fail "--version: $(cat "$tmp/out")"
ok "--version"

# No command: usage on stderr, exit 2; unknown help topic: exit 2.
expect_exit 2 "$SQLBUS"
grep -q Usage "$tmp/err" || fail "no usage on stderr"
expect_exit 2 "$SQLBUS" help nosuch
ok "usage errors"
