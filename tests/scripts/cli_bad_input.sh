#!/usr/bin/env bash
# cli_bad_input.sh - input the program refuses with the exit code that
# says what went wrong, instead of a silent substitute (issue 20, item 9;
# docs/cli.md "Global options").
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# issue 20.9, T29-T33 ("--db URL or SQLBUS_DB selects another
# database"): --db '' is refused, not replaced by $SQLBUS_DB or the
# default file.
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && expect_exit 2 "$SQLBUS" --db '' queues)
expect_err '--db must not be empty'
(cd "$tmp/cwd" && expect_exit 2 env -u SQLBUS_DB "$SQLBUS" --db '' queues)
expect_err '--db must not be empty'
(cd "$tmp/cwd" && expect_exit 2 "$SQLBUS" queues --db '')
(cd "$tmp/cwd" && expect_exit 2 "$SQLBUS" --db '' schema print)
expect_err '--db must not be empty'
(cd "$tmp/cwd" && expect_exit 2 "$SQLBUS" --db '' serve --listen 127.0.0.1:0)
expect_err '--db must not be empty'
[ ! -e "$tmp/cwd/sqlbus.db" ] || fail "--db '' created ./sqlbus.db"
ok "--db '' exits 2"
