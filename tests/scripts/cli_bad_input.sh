#!/usr/bin/env bash
# cli_bad_input.sh - input the program refuses with the exit code that
# says what went wrong, instead of a retryable 5 or a silent substitute
# (issue 20, items 7 and 9; docs/cli.md "Exit codes", "Global options",
# "sqlbus publish", "errors groups"; rules T3, T29-T33, E13).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# issue 20.7, exit code 2: a PostgreSQL (or ODBC) URL that cannot name a
# server is a usage error, refused before any connection (no server
# needed).
for url in 'postgresql://127.0.0.1:99999/x' 'host=127.0.0.1 bogus=1' \
    'postgresql://[::1' 'postgresql://127.0.0.1:5432,h:1x/x' \
    'host=127.0.0.1 sslmode=bogus' \
    'odbc+postgresql:Driver={sqlbus no such driver};Server=127.0.0.1'; do
    expect_exit 2 "$SQLBUS" --db "$url" queues
    expect_err "(field: url)"
done
expect_exit 2 "$SQLBUS" --db 'postgresql://127.0.0.1:99999/x' queues
expect_err 'port must be 1 to 65535 (got "99999")'
expect_exit 2 "$SQLBUS" --db 'host=127.0.0.1 bogus=1' queues
expect_err 'invalid connection option "bogus"'
ok "malformed database URLs exit 2"

# issue 20.7, exit code 5: a refused connection is transient, and exits
# 5 only after the library's retries (six attempts), which -vv logs.
expect_exit 5 "$SQLBUS" -vv --db 'postgresql://127.0.0.1:1/x' queues
expect_err 'retry 5 of 5'
expect_err 'Connection refused'
ok "a refused connection exits 5 after the retries"

if [ "$backend" = postgresql ]; then
    # issue 20.7, exit code 1: the server answered and refused us for
    # good (3D000 invalid_catalog_name, 28000 invalid_authorization):
    # retrying cannot help, so not 5.
    base=${SQLBUS_DB%/*}
    expect_exit 1 "$SQLBUS" --db "$base/sqlbus_no_such_db" queues
    expect_err 'database "sqlbus_no_such_db" does not exist'
    role_url=$(sed 's#://[^@/]*@#://sqlbus_no_such_role@#' <<<"$SQLBUS_DB")
    expect_exit 1 "$SQLBUS" --db "$role_url" queues
    expect_err 'role "sqlbus_no_such_role" does not exist'
    ok "an unknown database or role exits 1"
else
    # issue 20.7, exit code 1: a SQLite file that cannot be opened is not
    # an outage: a missing directory, a directory, a directory nobody may
    # write to (/proc refuses new files even to root).
    expect_exit 1 "$SQLBUS" --db "sqlite:$tmp/no/such/dir/x.db" queues
    expect_err "$tmp/no/such/dir/x.db"
    expect_err 'no such file or directory'
    mkdir "$tmp/dir.db"
    expect_exit 1 "$SQLBUS" --db "sqlite:$tmp/dir.db" queues
    expect_err 'is a directory'
    expect_exit 1 "$SQLBUS" --db "sqlite:/proc/sqlbus-test.db" queues
    if [ "$(id -u)" -ne 0 ]; then
        mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
        expect_exit 1 "$SQLBUS" --db "sqlite:$tmp/ro/x.db" queues
        expect_err 'permission denied'
    fi
    ok "a SQLite file that cannot be opened exits 1"
fi

# issue 20.9, T29: a header value that is not UTF-8 is refused, naming
# the header, instead of being stored as a placeholder text.
printf 'x' >"$tmp/body"
expect_exit 2 sb publish --queue hdr --header $'bad=\xff\xfe' "$tmp/body"
expect_err '--header bad'
expect_err 'not valid UTF-8'
expect_exit 2 sb publish --queue hdr --header $'b\xffd=v' "$tmp/body"
expect_err 'not valid UTF-8'
expect_count hdr ready 0
expect_exit 2 sb errors edit 0190a0b0-1234-7000-8000-000000000001 \
    --allow-edit --header $'bad=\xff'
expect_err '--header bad'
ok "a header value that is not UTF-8 exits 2"

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

# issue 20.9, T3: Unicode white space at either end of a queue name is
# refused as ASCII white space is (U+00A0, U+3000, U+2028, U+FEFF); inside
# a name it is an ordinary character.
for ws in $'\xc2\xa0' $'\xe3\x80\x80' $'\xe2\x80\xa8' $'\xef\xbb\xbf'; do
    expect_exit 2 sb publish --queue "${ws}q" "$tmp/body"
    expect_err 'must not start or end with white space'
    expect_exit 2 sb publish --queue "q${ws}" "$tmp/body"
    expect_err 'must not start or end with white space'
    expect_exit 2 sb work --queue "q${ws}" --once -- true
done
expect_exit 0 sb publish --queue $'in\xc2\xa0side' "$tmp/body"
ok "queue names with Unicode white space at an end exit 2"

# issue 20.9, E13: an unknown classifier is a usage error listing the
# classifiers, not an empty table (the HTTP API answers [] as
# ServiceControl does, issue 22).
expect_exit 2 sb errors groups --classifier bogus
expect_err 'classifier'
for c in 'Exception Type and Stack Trace' 'Message Type' 'Endpoint Address' \
    'Endpoint Instance' 'Endpoint Name'; do
    expect_err "$c"
done
expect_exit 0 sb errors groups --classifier 'Message Type'
ok "errors groups --classifier bogus exits 2"
