#!/usr/bin/env bash
# cli_errorstore.sh - `sqlbus errors ingest|show` (rules E1, E3, E23, E24):
# a job fails its last attempt, the dead-letter row is ingested into the
# error store and shown; imported attempts count once each (E8, E10).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

printf '{"order":42}' | sb publish --queue eq --header sb-retry-of=u-cli >/dev/null
handler oops "echo 'no stock' >&2; exit 3"
sb work --queue eq --once --max-attempts 1 -- "$tmp/oops"
[ "$(sb dlq list --json | jq length)" = 1 ] || fail "no dead letter: $(sb dlq list --json)"

# E1: one pass moves the dead-letter row into the store, in one transaction.
expect_exit 0 sb errors ingest --json
jq -e '.rows == 1 and .messages == 1 and .failed_imports == 0' "$tmp/out" >/dev/null ||
    fail "ingest counts: $(cat "$tmp/out")"
[ "$(sb dlq list --json)" = "[]" ] || fail "the dead-letter row is still there"
ok "errors ingest"

# E24: show, as JSON and as text.
expect_exit 0 sb errors show u-cli --json
jq -e '.status == "unresolved" and .attempts == 1 and .failed_queue == "eq"
    and .exception_type == "exit:3" and .body_size == 12
    and (.groups | map(.type) | index("Endpoint Address") != null)' "$tmp/out" >/dev/null ||
    fail "errors show --json: $(cat "$tmp/out")"
expect_exit 0 sb errors show u-cli
grep -q '^attempts: *1$' "$tmp/out" || fail "errors show: $(cat "$tmp/out")"
grep -q '^group: *Endpoint Address: eq$' "$tmp/out" || fail "errors show groups: $(cat "$tmp/out")"
ok "errors show"

# E3: a row that is not a failure is kept as a failed import, not dropped.
printf 'x' | sb publish --queue deadletter >/dev/null
expect_exit 0 sb errors ingest --json
jq -e '.rows == 1 and .failed_imports == 1' "$tmp/out" >/dev/null ||
    fail "failed import: $(cat "$tmp/out")"
ok "failed imports"

# E8, E10 (issue 19): an attempt is counted once however often it is
# imported: three attempts, the same three again, then a new older one
# beside a copy of the newest.
attempts() { # SECONDS...: one import line per attempt of u-imp
    for s in "$@"; do
        jq -cn --arg t "2026-01-02T00:00:0${s}Z" '{headers: {
            "sb-failed-queue": "eq", "sb-message-id": "m-1",
            "sb-retry-of": "u-imp", "sb-time-of-failure": $t,
            "sb-exception-type": "Oops"}, body: "{}"}'
    done >"$tmp/attempts.jsonl"
    expect_exit 0 sb errors import "$tmp/attempts.jsonl" --ingest --json
    expect_exit 0 sb errors show u-imp --json
}
attempts 1 2 3
jq -e '.attempts == 3' "$tmp/out" >/dev/null || fail "3 attempts: $(cat "$tmp/out")"
attempts 3
attempts 1 2
jq -e '.attempts == 3' "$tmp/out" >/dev/null || fail "imported again: $(cat "$tmp/out")"
attempts 0 3
jq -e '.attempts == 4' "$tmp/out" >/dev/null || fail "a new and an old one: $(cat "$tmp/out")"
ok "errors import: each attempt counted once"

# Usage and lookups: exit 2 for usage, 4 for an unknown id.
expect_exit 4 sb errors show no-such-id
expect_exit 2 sb errors show
expect_err "unique message id is required"
expect_exit 2 sb errors frobnicate
expect_err "unknown errors command"
ok "errors usage"
