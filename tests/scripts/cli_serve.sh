#!/usr/bin/env bash
# cli_serve.sh - `sqlbus serve` over real HTTP on loopback (rules S1, S3,
# S7, S8, S9, S10, S11): ingestion of the dead-letter queue while it
# serves, the health routes, JSON errors with their status and field, 404
# against 405, the body cap, JSON-only mutations, the security headers,
# tokens, the loopback rule, the options' limits (--request-timeout's 503
# is serve_timeout.sh's), and a graceful stop on SIGTERM and SIGINT.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

start_server plain

# S8: liveness and readiness.
req health "$base/health"
expect health 200 .status ok
req ready "$base/health/ready"
expect ready 200 .status ready
ok "health and readiness"

# S1 + E1: serve follows the dead-letter queue: a failed message put there
# while it runs lands in the store, and readiness counts the pass.
printf '%s\n' '{"headers": {"sb-failed-queue": "orders", "sb-message-id": "m-1", "sb-exception-type": "Shop.OutOfStock"}, "body": "{\"order\":1}"}' >"$tmp/one.jsonl"
sb errors import "$tmp/one.jsonl" >/dev/null || fail "errors import"
found=""
for i in $(seq 1 100); do
    if sb errors list --json 2>/dev/null | jq -e '.total == 1' >/dev/null 2>&1; then
        found=1
        break
    fi
    sleep 0.1
done
[ -n "$found" ] || fail "serve did not ingest the dead letter: $(sb errors list --json 2>&1)"
req ready2 "$base/health/ready"
expect ready2 200 .status ready .ingestion.failing false .failed_imports 0
jq -e '.ingestion.rows >= 1 and .ingestion.passes >= 1' "$tmp/ready2.json" >/dev/null ||
    fail "readiness does not count the pass: $(cat "$tmp/ready2.json")"
want_ingesters="2 ingesters"
[ "$backend" = sqlite ] && want_ingesters="1 ingester;"
grep -q "ingest: following the dead-letter queue with $want_ingesters" "$tmp/plain.err" ||
    fail "the startup line does not name the default ingesters ($want_ingesters): $(cat "$tmp/plain.err")"
grep -q 'request timeout 10.0s per statement' "$tmp/plain.err" || fail "the http line does not name the default request timeout"
ok "serve ingests the dead-letter queue; readiness reports it"

# S11: every response says nosniff, a restrictive CSP and JSON.
[ "$(header health X-Content-Type-Options)" = nosniff ] || fail "no nosniff header"
header health Content-Security-Policy | grep -q "default-src 'none'" || fail "no CSP header"
header health Content-Type | grep -q '^application/json' || fail "not JSON"
grep -qi '^set-cookie' "$tmp/health.h" && fail "a cookie was set"
ok "security headers, no cookies"

# Issue 22: on loopback with no token and no --cors-origin, any page may
# read the API (ServiceControl's default), preflights included; the
# startup line says so.
grep -q 'http: pages of other origins may call the API: any origin' "$tmp/plain.err" ||
    fail "the startup line does not name the origins: $(cat "$tmp/plain.err")"
req corsget -H 'Origin: http://localhost:9090' "$base/api/errors"
expect corsget 200
[ "$(header corsget Access-Control-Allow-Origin)" = '*' ] ||
    fail "Access-Control-Allow-Origin: $(header corsget Access-Control-Allow-Origin)"
[ -z "$(header corsget Access-Control-Allow-Credentials)" ] || fail "credentials allowed with *"
header corsget Access-Control-Expose-Headers | grep -q 'Total-Count' || fail "Total-Count not exposed"
req corspre -X OPTIONS -H 'Origin: https://ops.example:8443' \
    -H 'Access-Control-Request-Method: POST' "$base/api/recoverability/groups/g-1/errors/retry"
[ "$(cat "$tmp/corspre.status")" = 204 ] || fail "preflight: $(cat "$tmp/corspre.status")"
[ "$(header corspre Access-Control-Allow-Origin)" = '*' ] || fail "preflight without *"
[ "$(header corspre Access-Control-Allow-Methods)" = 'POST, OPTIONS' ] ||
    fail "Access-Control-Allow-Methods: $(header corspre Access-Control-Allow-Methods)"
# S11: with any origin served, a page elsewhere still changes nothing (a
# bodiless POST needs no preflight); a page on this machine may.
req evil -X POST -H 'Origin: https://evil.example' "$base/api/errors/retry/all"
expect evil 403 .error forbidden .field origin
req evilpre -X OPTIONS -H 'Origin: https://evil.example' -H 'Access-Control-Request-Method: POST' \
    -H 'Access-Control-Request-Headers: content-type' "$base/api/errors/retry/all"
[ "$(cat "$tmp/evilpre.status")" = 204 ] || fail "the preflight of a page elsewhere: $(cat "$tmp/evilpre.status")"
req eviljson -X POST -H 'Origin: https://evil.example' -H 'Content-Type: application/json' "$base/api/errors/retry/all"
expect eviljson 403 .field origin
req local -X POST -H 'Origin: http://localhost:9090' -H 'Content-Type: application/json' \
    "$base/api/errors/queues/no.such.queue/retry"
expect local 200 .total 0
req self -X POST -H "Origin: $base" -H 'Content-Type: application/json' \
    "$base/api/errors/queues/no.such.queue/retry"
expect self 200 .total 0
ok "CORS: any origin on loopback with no token; changes from this machine only"

# S7: 404, 405 with Allow, 400 naming the field and the limit.
req nf "$base/api/nothing"
expect nf 404 .error not_found
req na -X DELETE "$base/api/errors"
expect na 405 .error method_not_allowed
[ "$(header na Allow)" = "GET, HEAD" ] || fail "Allow: $(header na Allow)"
req badpath "$base/api/errors/%zz"
expect badpath 400 .error invalid .field path
req twice "$base/api/errors?page=1&page=2"
expect twice 400 .field page
long=$(head -c 1100 /dev/zero | tr '\0' x)
req longq "$base/api/errors?q=$long"
expect longq 400 .field q
jq -r .message "$tmp/longq.json" | grep -q '1024 bytes' || fail "the limit is not named: $(cat "$tmp/longq.json")"
ok "JSON errors: 404, 405, 400 naming the field and limit"

# S11: a mutation must be JSON (415); S10: bodies over 1 MiB are 413.
req form -X POST -d 'a=1' "$base/api/errors/retry"
expect form 415 .error unsupported_media_type
head -c 1100000 /dev/zero | tr '\0' a >"$tmp/big"
req big -X POST -H 'Content-Type: application/json' --data-binary @"$tmp/big" "$base/api/errors/retry"
expect big 413 .error too_large .field body
# E18: without --allow-edit an edit is refused.
req noedit -X POST -H 'Content-Type: application/json' -d '{"message_body": "{}"}' "$base/api/edit/some-id"
expect noedit 409 .error conflict
ok "JSON-only mutations, body cap, editing off by default"

# S3: SIGTERM stops it, exit 0.
kill -TERM "$pid"
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM: $(cat "$tmp/plain.err")"
ok "SIGTERM stops serve"

# S9: tokens. Admin may do anything, read only GET/HEAD; /health is open.
printf '# tokens\nadmin:adm-secret\nread:read-secret\n' >"$tmp/tokens"
start_server tokens --token-file "$tmp/tokens"
req open "$base/health"
expect open 200
req none "$base/api/errors"
expect none 401 .error unauthorized
[ "$(header none WWW-Authenticate)" = Bearer ] || fail "no WWW-Authenticate"
req wrong -H 'Authorization: Bearer adm-secreT' "$base/api/errors"
expect wrong 401
req reader -H 'Authorization: Bearer read-secret' "$base/api/errors"
expect reader 200
# Issue 22: with tokens and no --cors-origin, no other page may call it.
grep -q 'may call the API: none' "$tmp/tokens.err" || fail "the startup line: $(cat "$tmp/tokens.err")"
req tokcors -H 'Origin: http://localhost:9090' -H 'Authorization: Bearer read-secret' "$base/api/errors"
expect tokcors 200
[ -z "$(header tokcors Access-Control-Allow-Origin)" ] || fail "a page may read with tokens and no --cors-origin"
req tokpre -X OPTIONS -H 'Origin: http://localhost:9090' -H 'Access-Control-Request-Method: GET' "$base/api/errors"
expect tokpre 403 .field origin
req readpost -X POST -H 'Authorization: Bearer read-secret' -H 'Content-Type: application/json' -d '{}' "$base/api/errors/retry"
expect readpost 403 .error forbidden
req adminpost -X POST -H 'Authorization: Bearer adm-secret' -H 'Content-Type: application/json' -d '["no-such-id"]' "$base/api/errors/retry"
expect adminpost 200 .state completed .total 0
set -m
kill -INT "$pid"
set +m
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGINT"
ok "tokens: admin, read-only, none; SIGINT stops serve"

# S9: any address but loopback needs a token; bad listen values named.
expect_exit 2 sb serve --listen 0.0.0.0:0
expect_err "needs an admin token"
expect_exit 2 sb serve --listen 127.0.0.1:99999
expect_err "port must be 0 to 65535"
expect_exit 2 sb serve --listen nowhere:80
expect_err "is not an IPv4 address"
expect_exit 2 sb serve --error-retention 10m
expect_err "--error-retention must be a duration from 1h to 365d"
# S10: --request-timeout is a duration from 10ms to 1h (the 503 it leads
# to is serve_timeout.sh's).
expect_exit 2 sb serve --request-timeout 5ms
expect_err "--request-timeout must be 10ms..1h00m (got 5ms)"
expect_exit 2 sb serve --request-timeout 61m
expect_err "--request-timeout must be 10ms..1h00m (got 61m)"
expect_exit 2 sb serve --request-timeout soon
expect_err "--request-timeout: duration \"soon\""
expect_exit 2 sb serve --request-timeout
expect_err "option --request-timeout needs a value"
expect_exit 2 sb serve --ingesters 0
expect_err "--ingesters must be 1..8 (got 0)"
expect_exit 2 sb serve --ingesters 9
expect_err "--ingesters must be 1..8 (got 9)"
expect_exit 2 sb serve --ingesters two
expect_err "--ingesters must be a whole number 1..8 (got \"two\")"
# Issue 22: --cors-origin is * , none or http(s)://HOST[:PORT].
expect_exit 2 sb serve --cors-origin http://ops.example/servicepulse
expect_err "an origin must be * or http(s)://HOST[:PORT] with no path"
expect_exit 2 sb serve --cors-origin ops.example:9090
expect_err "an origin must be * or http(s)://HOST[:PORT]"
expect_exit 2 sb serve --cors-origin http://ops.example:99999
expect_err "an origin must be"
expect_exit 2 sb serve --cors-origin none --cors-origin http://ops.example
expect_err "--cors-origin none cannot be given with origins"
printf 'root:x\n' >"$tmp/badtokens"
expect_exit 2 sb serve --token-file "$tmp/badtokens"
expect_err "expected admin:TOKEN or read:TOKEN"
ok "loopback rule and bad options named"

# E1 with --ingesters: three passes at once drain a backlog, each dead
# letter ingested once (one attempt each, none left, none twice).
seq 1 3000 | sed 's/^/ing-/' |
    sb publish --queue deadletter --lines --header sb-failed-queue=many \
        --header sb-exception-type=Many.Failed >/dev/null
start_server many --ingesters 3
grep -q "with 3 ingesters" "$tmp/many.err" || fail "no startup line for 3 ingesters: $(cat "$tmp/many.err")"
drained() { [ "$(count deadletter ready)" = 0 ] && [ "$(sb errors list --status any --queue many --per-page 1 --json | jq -r .total)" = 3000 ]; }
within 120 "3000 dead letters ingested by 3 ingesters" drained
sb errors list --status any --queue many --sort attempts --per-page 1 --json >"$tmp/many.json"
[ "$(jq -r '.items[0].attempts' "$tmp/many.json")" = 1 ] || fail "a dead letter was counted twice: $(cat "$tmp/many.json")"
kill -TERM "$pid"
wait_exit "$pid" 20
[ "$wait_rc" -eq 0 ] || fail "serve --ingesters 3 exited $wait_rc after SIGTERM"
ok "--ingesters 3 drains 3000 dead letters, each once"

# Issue 22: a failing check of sqlbus's own shows on ServicePulse's custom
# checks poll (a dead letter that cannot become a failed message is a
# failed import), with its reason; a dismissal hides it while it fails.
printf 'x' | sb publish --queue deadletter >/dev/null
start_server checks
failing() {
    req checks "$base/api/customchecks?status=fail&page=1"
    [ "$(header checks Total-Count)" = 1 ]
}
within 20 "the failed-imports check failing" failing
expect checks 200 '.[0].custom_check_id' 'Failed imports' '.[0].status' Fail
jq -r '.[0].failure_reason' "$tmp/checks.json" | grep -q 'could not be imported' ||
    fail "failure reason: $(cat "$tmp/checks.json")"
req dismiss -X DELETE -H 'Content-Type: application/json' "$base/api/customchecks/$(jq -r '.[0].id' "$tmp/checks.json")"
expect dismiss 200 .dismissed true
req hidden "$base/api/customchecks?status=fail&page=1"
expect hidden 200 length 0
[ "$(header hidden Total-Count)" = 0 ] || fail "a dismissed check is counted: $(cat "$tmp/hidden.h")"
kill -TERM "$pid"
wait_exit "$pid" 20
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM"
ok "custom checks: a failing check, its reason, dismissed (issue 22)"
