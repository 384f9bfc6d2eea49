#!/usr/bin/env bash
# cli_work_errors.sh - failures of `sqlbus work` in the error store (rules
# T30, E6, E12; issue 19): a handler that dies with a runtime's uncaught
# exception on stderr is grouped by that exception's type and first
# frame, not as "exit:N: No stacktrace"; --endpoint names the processing
# endpoint, the same for every worker process that gives it.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# group CLASSIFIER TITLE: the count of the unresolved group (0 if none).
group() {
    sb errors groups --classifier "$1" --json |
        jq -r --arg t "$2" '([.[] | select(.title == $t) | .count] + [0])[0]'
}

# E12 + T30: a Python-like traceback (a shell script printing a canned
# one: no Python needed) becomes exception type, message and stack trace.
handler py "cat >/dev/null
echo 'INFO: handling order' >&2
cat >&2 <<'TRACE'
Traceback (most recent call last):
  File \"/app/worker.py\", line 41, in <module>
    main()
  File \"/app/orders.py\", line 3, in handle
    raise ValueError(\"quantity must be positive\")
ValueError: quantity must be positive
TRACE
exit 1"
printf '{"qty": -1}' | sb publish --queue orders >/dev/null
printf '{"qty": -2}' | sb publish --queue orders >/dev/null
sb -q work --queue orders --once --max-attempts 1 -- "$tmp/py"
expect_exit 0 sb errors ingest
[ "$(group 'Exception Type and Stack Trace' 'ValueError: orders.handle')" = 2 ] || {
    sb errors groups --json >&2
    fail "the two Python failures are not one group 'ValueError: orders.handle'"
}
[ "$(group 'Exception Type and Stack Trace' 'exit:1: No stacktrace')" = 0 ] ||
    fail "a Python failure was grouped as exit:1"
id=$(sb errors list --json | jq -r '.items[0].unique_message_id')
sb errors show "$id" --json >"$tmp/show.json"
jq -e '.exception_type == "ValueError" and
       .exception_message == "quantity must be positive" and
       (.headers["sb-exception-stacktrace"] | startswith("Traceback (most recent call last):\n")) and
       (.headers["sb-exception-stacktrace"] | endswith("ValueError: quantity must be positive\n--- the command exited with status 1 ---")) and
       (.headers["sb-exception-stacktrace"] | contains("INFO") | not)' \
    "$tmp/show.json" >/dev/null || { cat "$tmp/show.json" >&2; fail "the Python failure's fields"; }
ok "a Python traceback is grouped by exception type and first frame"

# E12: a Go panic (exit 2) and a Node.js error, each grouped by
# its own type and frame.
handler go "cat >/dev/null; printf 'panic: order not found\n\ngoroutine 1 [running]:\nmain.lookup(...)\n\t/app/main.go:7 +0x1d\nmain.main()\n\t/app/main.go:12 +0x45\n' >&2; exit 2"
handler node "cat >/dev/null; printf '/app/x.js:3\n  throw new Error(\"no stock\");\n  ^\n\nError: no stock\n    at Stock.take (/app/x.js:3:9)\n\nNode.js v20.11.0\n' >&2; exit 1"
printf 'g' | sb publish --queue go >/dev/null
printf 'n' | sb publish --queue node >/dev/null
sb -q work --queue go --once --max-attempts 1 -- "$tmp/go"
sb -q work --queue node --once --max-attempts 1 -- "$tmp/node"
expect_exit 0 sb errors ingest
[ "$(group 'Exception Type and Stack Trace' 'panic: main.lookup')" = 1 ] ||
    { sb errors groups --json >&2; fail "Go panic group"; }
[ "$(group 'Exception Type and Stack Trace' 'Error: Stock.take')" = 1 ] ||
    { sb errors groups --json >&2; fail "Node.js error group"; }
ok "a Go panic and a Node.js error are grouped by type and frame"

# T30: stderr without a recognised trace keeps exit:N and the stderr tail.
handler plain "cat >/dev/null; echo 'disk full' >&2; exit 3"
printf 'p' | sb publish --queue plain >/dev/null
sb -q work --queue plain --once --max-attempts 1 -- "$tmp/plain"
expect_exit 0 sb errors ingest
[ "$(group 'Exception Type and Stack Trace' 'exit:3: No stacktrace')" = 1 ] ||
    { sb errors groups --json >&2; fail "plain failure group"; }
id=$(sb errors list --queue plain --json | jq -r '.items[0].unique_message_id')
[ "$(sb errors show "$id" --json | jq -r .exception_message)" = "disk full" ] ||
    fail "plain failure message: $(sb errors show "$id" --json)"
ok "stderr without a trace keeps exit:N and the stderr tail"

# E6 + issue 19: two worker processes with the same --endpoint put their
# failures under one endpoint; without --endpoint it is the queue.
handler fail1 "cat >/dev/null; echo nope >&2; exit 1"
printf 'a' | sb publish --queue ep >/dev/null
sb -q work --queue ep --once --max-attempts 1 --endpoint billing -- "$tmp/fail1"
printf 'b' | sb publish --queue ep >/dev/null
sb -q work --queue ep --once --max-attempts 1 --endpoint billing -- "$tmp/fail1"
printf 'c' | sb publish --queue ep2 >/dev/null
sb -q work --queue ep2 --once --max-attempts 1 -- "$tmp/fail1"
expect_exit 0 sb errors ingest
[ "$(group 'Endpoint Name' billing)" = 2 ] ||
    { sb errors groups --classifier 'Endpoint Name' --json >&2; fail "--endpoint billing group"; }
[ "$(sb errors list --endpoint billing --json | jq -r .total)" = 2 ] ||
    fail "errors list --endpoint billing: $(sb errors list --endpoint billing --json)"
[ "$(group 'Endpoint Name' ep2)" = 1 ] ||
    { sb errors groups --classifier 'Endpoint Name' --json >&2; fail "default endpoint is not the queue"; }
ok "--endpoint: one endpoint for every worker; the queue by default"

# Bad input: the flag and the limit are named; nothing runs.
long=$(head -c 201 /dev/zero | tr '\0' e)
expect_exit 2 sb work --queue ep --endpoint "$long" -- "$tmp/fail1"
expect_err "--endpoint: the endpoint name must be 1 to 200 bytes (got 201)"
expect_exit 2 sb work --queue ep --endpoint "" -- "$tmp/fail1"
expect_err "--endpoint"
expect_exit 2 sb work --queue ep --endpoint "$(printf 'a\tb')" -- "$tmp/fail1"
expect_err "control characters"
ok "--endpoint is validated"
