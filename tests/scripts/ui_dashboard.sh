#!/usr/bin/env bash
# ui_dashboard.sh - the dashboard in a real browser (rule S15): Debian's
# chromium driven by playwright-core (tests/ui/journey.mjs) against a real
# `sqlbus serve` on loopback, once per backend. Seeds queues with
# `sqlbus publish` and failed messages in two groups with
# `sqlbus errors import`, then walks the journey: Overview, Failed
# messages, search, a message's detail, retry one, archive a group with
# its progress, the counts on Overview changed; then, on a server with
# tokens, the token prompt and the Bearer header. On failure journey.mjs
# saves a screenshot in the test's temp dir and prints its path.
#
# Skips (77) only when chromium or tests/ui/node_modules is missing and
# SQLBUS_REQUIRE_UI is unset (scripts/install-deps.sh installs both).
here=$(cd "$(dirname "$0")" && pwd)
src=${SB_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
ui="$src/tests/ui"
chromium=${SQLBUS_CHROMIUM:-/usr/bin/chromium}

missing=""
command -v node >/dev/null 2>&1 || missing="node"
[ -x "$chromium" ] || missing="${missing:+$missing, }chromium ($chromium)"
[ -d "$ui/node_modules/playwright-core" ] || missing="${missing:+$missing, }tests/ui/node_modules (npm ci in tests/ui)"
if [ -n "$missing" ]; then
    if [ -n "${SQLBUS_REQUIRE_UI:-}" ]; then
        echo "FAIL: the UI tests need: $missing (scripts/install-deps.sh installs them)" >&2
        exit 1
    fi
    echo "skipped: the UI tests need: $missing (scripts/install-deps.sh installs them)"
    exit 77
fi

# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

# iso MINUTES-AGO: an ISO 8601 UTC time with milliseconds.
iso() { date -u -d "@$(($(date +%s) - $1 * 60))" +%Y-%m-%dT%H:%M:%S.000Z; }

# failed QUEUE TYPE ENDPOINT EXCEPTION MESSAGE TRACE ID MINUTES-AGO BODY
failed() {
    jq -nc --arg q "$1" --arg t "$2" --arg e "$3" --arg x "$4" --arg m "$5" \
        --arg st "$6" --arg id "$7" --arg when "$(iso "$8")" --arg sent "$(iso "$(($8 + 1))")" --arg body "$9" \
        '{headers: {"sb-failed-queue": $q, "sb-message-id": $id, "sb-message-type": $t,
                    "sb-processing-endpoint": $e, "sb-exception-type": $x,
                    "sb-exception-message": $m, "sb-exception-stacktrace": $st,
                    "sb-time-of-failure": $when, "sb-time-sent": $sent, "sb-host": "web-1",
                    "sb-content-type": "application/json", "sb-conversation-id": ("conv-" + $id)},
          body: $body}'
}

# Two failure groups the journey tells apart: six timeouts of
# Shop.PlaceOrder on orders (the one archived), three declined cards on
# billing. One order carries a word the search finds.
trace_timeout='System.TimeoutException: the stock service did not answer in 30 s
   at Shop.Stock.Client.Reserve(Sku sku) in /src/Shop/Stock/Client.cs:line 88
   at Shop.Sales.PlaceOrderHandler.Handle(PlaceOrder message) in /src/Shop/Sales/PlaceOrderHandler.cs:line 41'
trace_card='Billing.CardDeclinedException: card declined (insufficient funds)
   at Billing.Payments.Gateway.Charge(Card card, Money amount) in /src/Billing/Gateway.cs:line 120
   at Billing.ChargeCardHandler.Handle(ChargeCard message) in /src/Billing/ChargeCardHandler.cs:line 23'
{
    for i in 1 2 3 4 5 6; do
        word="order"
        [ "$i" = 3 ] && word="zanzibar-special"
        failed orders Shop.PlaceOrder Sales System.TimeoutException \
            "the stock service did not answer in 30 s" "$trace_timeout" "order-$i" "$((i * 3))" \
            "{\"order\":$i,\"note\":\"$word\",\"lines\":[{\"sku\":\"A-$i\",\"qty\":2}]}"
    done
    for i in 1 2 3; do
        failed billing Billing.ChargeCard Billing Billing.CardDeclinedException \
            "card declined (insufficient funds)" "$trace_card" "charge-$i" "$((i * 4))" \
            "{\"invoice\":$i,\"amount\":{\"value\":$((i * 25)),\"currency\":\"EUR\"}}"
    done
} >"$tmp/failed.jsonl"
sb errors import "$tmp/failed.jsonl" --ingest >/dev/null || fail "errors import: $(cat "$tmp/failed.jsonl" | head -2)"
seq 1 5 | sed 's/^/{"order": &}/' | sb publish --queue orders --lines >/dev/null || fail "publish orders"
# T40: the emails expire in a week, and their queue has a time to live.
seq 1 2 | sed 's/^/{"email": &}/' | sb publish --queue emails --lines --expires-in 7d >/dev/null ||
    fail "publish emails"
sb queues ttl emails 7d >/dev/null || fail "queues ttl emails"
# T38: a sign-up holds its unique key.
printf '{"user": 42}' | sb publish --queue signups --unique-key welcome-42 >/dev/null ||
    fail "publish signups"
# T36: the emails go out at most 100 a second, 5 at a time.
sb queues limit emails --max-running 5 --rate 100/1s >/dev/null || fail "queues limit emails"
total=$(sb errors list --json | jq -r .total)
[ "$total" = 9 ] || fail "seeded $total failed messages, want 9: $(sb errors list --json)"
ok "seeded 9 failed messages in 2 groups and 7 ready messages"

# T42: a handler reporting progress holds one message of "reports" for
# the whole journey, which reads the progress on the queue's page.
handler reporting 'printf "rendered 3 of 10 pages\n" >&"$SQLBUS_PROGRESS_FD"; sleep 600'
printf '{"report": 1}' | sb publish --queue reports >/dev/null || fail "publish reports"
sb schedule add nightly --cron '0 3 * * *' --tz Europe/Berlin --queue reports --missed once >/dev/null ||
    fail "schedule add nightly"
"$SQLBUS" --prefix "$prefix" work --queue reports --timeout 15m -- "$tmp/reporting" 2>"$tmp/reporting.err" &
reporting_pid=$!

start_server serve

# The page and its files come from the binary, under the strict CSP.
curl -s -D "$tmp/index.h" -o "$tmp/index.html" "$base/" || fail "GET /"
grep -q '<script src="/ui/app.js">' "$tmp/index.html" || fail "GET / is not the dashboard: $(head -c 300 "$tmp/index.html")"
tr -d '\r' <"$tmp/index.h" | grep -qi "^content-security-policy: .*script-src 'self'" ||
    fail "the dashboard has no script-src 'self' CSP: $(cat "$tmp/index.h")"
ok "GET / serves the embedded dashboard under its CSP"

export SB_UI_CHROMIUM="$chromium"
rc=0
node "$ui/journey.mjs" "$base" "$tmp" || rc=$?
[ "$rc" -eq 0 ] || fail "the dashboard journey failed (exit $rc); screenshots in $tmp; serve said: $(tail -5 "$tmp/serve.err")"
ok "dashboard journey: overview, list, search, detail, retry one, archive a group, counts changed"
kill -KILL "$reporting_pid"
wait "$reporting_pid" 2>/dev/null || true

kill -TERM "$pid"
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM: $(tail -5 "$tmp/serve.err")"
ok "serve stopped"

# S9 + S14: with tokens the page still loads, asks for the token on the
# first 401 and sends it as a Bearer header (sessionStorage, no cookies).
printf 'admin:ui-admin-secret\nread:ui-read-secret\n' >"$tmp/tokens"
start_server tokens --token-file "$tmp/tokens"
node "$ui/journey.mjs" "$base" "$tmp" --token ui-admin-secret ||
    fail "the token journey failed; screenshots in $tmp"
ok "dashboard with tokens: prompt, Bearer header, no cookies"
kill -TERM "$pid"
wait_exit "$pid" 10
