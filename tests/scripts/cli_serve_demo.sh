#!/usr/bin/env bash
# cli_serve_demo.sh - `sqlbus serve --demo` (rules S2, S3): the built-in
# workload fills what every screen shows within seconds — several demo
# queues, one with depth and others with delayed messages; messages handled
# and passed on; failed messages dead-lettered and ingested into the error
# store with realistic exception types, multi-line stack traces and
# groups; a reply and an error reply over the channel; an outstanding
# recovery registration of the handler demo.recovery — while readiness
# stays "ready". S3: the startup lines (with the URL and the demo's
# settings), then SIGTERM stops it with exit 0 within 10 s, leaving no
# process and no registration behind. Everything is checked with the CLI
# on the same database and curl; waits poll with a deadline.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

start_server serve --demo
port=${base##*:}

# S3: one line per component with its settings; the URL to open.
grep -qF "http: listening on port $port: $base/ (127.0.0.1:0, loopback, no token, request timeout 10.0s per statement)" "$tmp/serve.err" ||
    fail "the listening line does not give the URL: $(cat "$tmp/serve.err")"
grep -q 'ingest: following the dead-letter queue' "$tmp/serve.err" || fail "no startup line for ingestion"
demo_started() { grep -q 'demo: a web shop at ~5.0 messages/s on demo.orders, ' "$tmp/serve.err"; }
within 10 "startup line of the demo" demo_started
grep 'demo: a web shop' "$tmp/serve.err" | grep -q 'recovery handler demo.recovery' || fail "the demo's line does not name its recovery handler"
ok "startup lines: URL, ingestion, the demo's settings"

# Queues (S2): the demo's queues exist; demo.invoices (no consumer) holds
# messages; shipments and reminders wait, delayed; demo.shipping and
# demo.emails are fed only by handled payments, so messages were handled.
queues_filled() {
    sb queues --json | jq -e '
        [.[] | select(.queue | startswith("demo."))] as $d
        | ($d | length) >= 4
          and ([$d[] | select(.queue == "demo.invoices") | .ready] | add // 0) >= 1
          and ([$d[] | .delayed] | add) >= 1
          and ([$d[] | select(.queue == "demo.shipping" or .queue == "demo.emails")] | length) >= 1'
}
within 60 "demo queues with depth and delayed messages" queues_filled
ok "demo queues: depth (demo.invoices), delayed messages, handled payments passed on"

# Failed messages (S2 -> E1): each failure of the opening orders reaches
# the store with its exception type, on its queue.
errors_json() { sb errors list --per-page 500 --json >"$tmp/errors.json"; }
failures_ingested() {
    errors_json || return 1
    jq -e '[.items[] | .exception_type] as $t
        | ($t | index("System.TimeoutException")) != null
          and ($t | index("Shop.Payments.CardDeclinedException")) != null
          and ($t | index("System.Data.SqlClient.SqlException")) != null' "$tmp/errors.json"
}
within 60 "dead-lettered failures with realistic exception types in the error store" failures_ingested
jq -e '[.items[] | select(.exception_type == "System.TimeoutException")][0]
    | .failed_queue == "demo.orders" and .message_type == "Shop.Messages.Commands.PlaceOrder"
      and .exception_message == "The operation timed out after 30 s"' "$tmp/errors.json" >/dev/null ||
    fail "the timeout is not stored as it failed: $(cat "$tmp/errors.json")"
jq -e '[.items[] | select(.exception_type == "Shop.Payments.CardDeclinedException")][0]
    | .failed_queue == "demo.payments" and (.exception_message | test("Card ending 0002 was declined"))' \
    "$tmp/errors.json" >/dev/null || fail "the declined card is not stored as it failed"
id=$(jq -r '[.items[] | select(.exception_type == "System.Data.SqlClient.SqlException")][0].unique_message_id' "$tmp/errors.json")
sb errors show "$id" --json >"$tmp/show.json" || fail "errors show $id"
jq -e '.headers["sb-exception-stacktrace"] | test("deadlock victim") and test("\n   at System.Data.SqlClient.SqlConnection.OnError")' \
    "$tmp/show.json" >/dev/null || fail "no multi-line stack trace: $(cat "$tmp/show.json")"
jq -e '.headers["NServiceBus.EnclosedMessageTypes"] != null and .headers["NServiceBus.ConversationId"] != null
    and .headers["NServiceBus.OriginatingEndpoint"] == "Shop.Sales"' "$tmp/show.json" >/dev/null ||
    fail "the message does not carry NServiceBus headers: $(cat "$tmp/show.json")"
ok "failed messages in the store: timeout, declined card, deadlock, with NServiceBus headers and stack traces"

# Groups: one per failure site (Exception Type and Stack Trace).
groups_made() { sb errors groups --json | jq -e 'length >= 3 and all(.[]; .count >= 1)'; }
within 30 "three failure groups" groups_made
ok "failure groups"

# Channel (S2): a report delivered after its progress replies, a failed
# report answered with an error reply; meanwhile a waiter of demo.recovery
# shows as an outstanding registration.
replied() {
    grep -q 'demo: first report delivered over the channel: RPT-[0-9]*, [1-9][0-9]* progress replies, then done' "$tmp/serve.err" &&
        grep -q 'demo: first error reply over the channel: RPT-[0-9]* failed with System.InvalidOperationException' "$tmp/serve.err"
}
within 60 "reply and error reply over the channel" replied
outstanding() {
    sb recovery list --json | jq -e 'any(.[]; .handler == "demo.recovery" and .state == "outstanding" and .live)'
}
within 30 "outstanding recovery registration" outstanding
ok "request/reply: progress, a reply, an error reply; an outstanding registration"

# S8 while the demo runs: ready, and ingestion has taken rows.
curl -s -o "$tmp/ready.json" -w '%{http_code}' "$base/health/ready" >"$tmp/ready.status" || fail "curl /health/ready"
[ "$(cat "$tmp/ready.status")" = 200 ] || fail "/health/ready: $(cat "$tmp/ready.status") $(cat "$tmp/ready.json")"
jq -e '.status == "ready" and .ingestion.rows >= 3 and .ingestion.failing == false' "$tmp/ready.json" >/dev/null ||
    fail "readiness: $(cat "$tmp/ready.json")"
ok "ready while the demo runs"

# S3: SIGTERM stops the demo first, then the server: exit 0 within 10 s.
kill -TERM "$pid"
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM: $(cat "$tmp/serve.err")"
grep -q 'demo: stopped: [1-9][0-9]* orders, [1-9][0-9]* messages handled' "$tmp/serve.err" ||
    fail "no summary of the demo: $(cat "$tmp/serve.err")"
tail -n1 "$tmp/serve.err" | grep -q 'sqlbus: stopped' || fail "serve did not finish: $(tail -n3 "$tmp/serve.err")"
if grep -E '^sqlbus: error:' "$tmp/serve.err" >&2; then fail "errors were logged"; fi
if pgrep -f -- "--prefix $prefix serve" >/dev/null; then fail "a serve process is left"; fi
left=$(sb recovery list --json | jq length)
[ "$left" = 0 ] || fail "$left recovery registrations left after a graceful stop"
ok "SIGTERM: exit 0, demo summary, no process or registration left"
