#!/usr/bin/env bash
# cli_errors.sh - bad input: a clear error naming the flag and the limit,
# exit 2, nothing stored (spec README §2; rules T3, T4, T8, T29, T30;
# transport.md "Tests that must exist": bad input).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T3: a queue name with a control character.
expect_exit 2 sb publish --queue $'bad\x01name' </dev/null
expect_err "control characters"
expect_err "--queue"
# T3: 201 bytes is over the limit; 200 is fine.
long201=$(printf 'q%.0s' $(seq 1 201))
long200=${long201:1}
expect_exit 2 sb publish --queue "$long201" </dev/null
expect_err "1 to 200 bytes (got 201)"
expect_exit 2 sb work --queue "$long201" -- true
expect_err "200"
expect_exit 2 sb dlq list --queue "$long201"
expect_err "200"
# T3: leading or trailing white space.
expect_exit 2 sb publish --queue ' padded' </dev/null
expect_err "white space"
# T3: an empty name.
expect_exit 2 sb publish --queue '' </dev/null
expect_err "1 to 200 bytes (got 0)"
printf 'ok' | sb publish --queue "$long200" >/dev/null
ok "invalid queue names are refused with the limit named"

# T30: --concurrency, --max-attempts, --timeout, --lease out of range.
expect_exit 2 sb work --queue w --concurrency 0 -- true
expect_err "--concurrency must be 1..256 (got 0)"
expect_exit 2 sb work --queue w --concurrency 257 -- true
expect_err "--concurrency must be 1..256 (got 257)"
expect_exit 2 sb work --queue w --concurrency four -- true
expect_err "--concurrency"
expect_exit 2 sb work --queue w --prefetch 10001 -- true
expect_err "--prefetch must be 0..10000 (got 10001)"
expect_exit 2 sb work --queue w --max-attempts -1 -- true
expect_err "--max-attempts"
expect_exit 2 sb work --queue w --timeout 0s -- true
expect_err "--timeout"
expect_exit 2 sb work --queue w --lease 10ms -- true
expect_err "--lease"
ok "work flag values are range-checked"

# T29 + T30: bad durations name the flag.
expect_exit 2 sb publish --queue w --delay 5parsecs </dev/null
expect_err "--delay"
expect_err "unknown unit"
expect_exit 2 sb publish --queue w --delay -5s </dev/null
expect_err "--delay"
expect_exit 2 sb work --queue w --delay soon -- true
expect_err "--delay"
expect_exit 2 sb dlq list --older-than yesterday
expect_err "--older-than"
ok "bad durations"

# T29-T33: usage errors (unknown flag or command, missing values and
# operands) exit 2.
expect_exit 2 sb publish --queue w --bogus </dev/null
expect_err "unknown option --bogus"
expect_exit 2 sb publish --queue </dev/null
expect_err "needs a value"
expect_exit 2 sb publish </dev/null
expect_err "--queue is required"
expect_exit 2 sb work --queue w
expect_err "command"
expect_exit 2 sb work --queue w -- /nonexistent/handler
expect_err "command not found"
expect_exit 2 sb frobnicate
expect_err "unknown command"
expect_exit 2 sb dlq frob
expect_exit 2 sb schema frob
expect_exit 2 "$SQLBUS"
expect_exit 2 sb publish --queue w --id 0190a0b0-0000-7000-8000-000000000001 --lines </dev/null
expect_err "--lines"
ok "usage errors exit 2"

# T29: a malformed --header.
expect_exit 2 sb publish --queue w --header novalue </dev/null
expect_err "--header"
expect_exit 2 sb publish --queue w --header =v </dev/null
expect_err "--header"
ok "malformed --header"

# T4: a payload over max_payload_bytes (16 MiB by default) names the limit.
head -c $((16 * 1024 * 1024 + 1)) /dev/zero >"$tmp/too-big"
expect_exit 2 sb publish --queue w "$tmp/too-big"
expect_err "16777216"
rm -f "$tmp/too-big"
ok "oversized payload"

# T9: an id that is not a UUID.
expect_exit 2 sb publish --queue w --id not-a-uuid </dev/null
expect_err "id"
ok "malformed --id"

# T8: an invalid table prefix.
expect_exit 2 "$SQLBUS" --prefix 'bad-prefix' queues
expect_err "prefix"
ok "invalid --prefix"

# Spec README §2: nothing of the above was stored.
sb queues --json | jq -e --arg q "$long200" '[.[].queue] == [$q]' >/dev/null ||
    fail "bad input stored something: $(sb queues --json)"
ok "nothing stored by bad input"

# Spec README §2 (exit codes, docs/cli.md): an unavailable database
# (nothing listens on port 1) exits 5.
expect_exit 5 "$SQLBUS" --db 'postgresql://sqlbus@127.0.0.1:1/none?connect_timeout=2' queues
ok "an unreachable database exits 5"

# SQL Server through FreeTDS (Debian's tdsodbc) with no server listening:
# the driver loads, the refusal is a lost connection (exit 5, retryable)
# and the message says who refused.
expect_exit 5 "$SQLBUS" --db 'mssql://sa:secret@127.0.0.1:1/shop?driver=FreeTDS' queues
expect_err "FreeTDS"
ok "an mssql:// URL with no server listening exits 5 naming the driver"

# psqlODBC's ANSI build cannot take the UTF-16 text the ODBC driver sends:
# refused at connect, naming the driver to use instead.
if [ "$backend" = postgresql ]; then
    u=${SQLBUS_TEST_PG_URL#postgresql://}  # USER@HOST:PORT/DB
    user=${u%%@*} rest=${u#*@}
    hp=${rest%%/*} db=${rest#*/}
    expect_exit 2 "$SQLBUS" --db "odbc+postgresql:Driver={PostgreSQL ANSI};Server=${hp%:*};Port=${hp##*:};Database=${db%%\?*};Uid=$user" queues
    expect_err "use Driver={PostgreSQL Unicode}"
    ok "psqlODBC's ANSI driver is refused with the fix"
fi
