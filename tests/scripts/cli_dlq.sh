#!/usr/bin/env bash
# cli_dlq.sh - `sqlbus dlq list|show|requeue|purge` (rule T32).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# Dead letters: two from queue da, one (binary payload) from db.
printf 'alpha' | sb publish --queue da >/dev/null
printf 'beta' | sb publish --queue da >/dev/null
printf '\x00\x01\xfe\xffbinary' | sb publish --queue db >/dev/null
handler oops "echo 'it went wrong' >&2; exit 1"
sb work --queue da --once --max-attempts 1 -- "$tmp/oops"
sb work --queue db --once --max-attempts 1 -- "$tmp/oops"

# T32: list, filtered by source queue, as JSON and as a table.
[ "$(sb dlq list --json | jq length)" = 3 ] || fail "dlq list: $(sb dlq list --json)"
[ "$(sb dlq list --queue da --json | jq length)" = 2 ] || fail "dlq list --queue da"
[ "$(sb dlq list --queue db --json | jq -r '.[0].failed_queue')" = db ] || fail "failed_queue"
[ "$(sb dlq list --queue nope --json)" = "[]" ] || fail "unknown source queue"
[ "$(sb dlq list --limit 1 --json | jq length)" = 1 ] || fail "dlq list --limit 1"
sb dlq list --json | jq -e 'all(.[]; .exception_type == "exit:1" and
    .exception_message == "it went wrong" and .attempts == 1 and
    (.dead_lettered_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T")))' >/dev/null ||
    fail "dlq list fields: $(sb dlq list --json)"
sb dlq list >"$tmp/list.txt"
head -n1 "$tmp/list.txt" | grep -q '^ID  *FAILED-QUEUE  *ATTEMPTS  *AGE  *EXCEPTION  *MESSAGE$' ||
    fail "dlq list header: $(head -n1 "$tmp/list.txt")"
[ "$(grep -c 'exit:1  *it went wrong' "$tmp/list.txt")" = 3 ] || fail "dlq list rows: $(cat "$tmp/list.txt")"
ok "dlq list"

# T32: age filter: nothing is older than an hour yet; all are older than 1ms.
[ "$(sb dlq list --older-than 1h --json)" = "[]" ] || fail "--older-than 1h"
sleep 0.1
[ "$(sb dlq list --older-than 1ms --json | jq length)" = 3 ] || fail "--older-than 1ms"
ok "dlq list --older-than"

# T32: show, as text (raw payload / hex dump) and JSON (base64 when binary).
a=$(sb dlq list --queue da --json | jq -r '.[0].id')
sb dlq show "$a" >"$tmp/show.txt"
grep -q '^failed queue: *da$' "$tmp/show.txt" || fail "show: $(cat "$tmp/show.txt")"
grep -q '^exception type: *exit:1$' "$tmp/show.txt" || fail "show type"
grep -q '"sb-exception-message": "it went wrong"' "$tmp/show.txt" || fail "show headers are not pretty-printed"
grep -qx 'alpha' "$tmp/show.txt" || fail "show payload"
b=$(sb dlq list --queue db --json | jq -r '.[0].id')
sb dlq show "$b" >"$tmp/showb.txt"
grep -q 'hex dump' "$tmp/showb.txt" || fail "binary payload not hex-dumped: $(cat "$tmp/showb.txt")"
grep -q '^00000000  00 01 fe ff 62 69 6e 61' "$tmp/showb.txt" || fail "hex dump: $(cat "$tmp/showb.txt")"
sb dlq show "$b" --json | jq -e '.payload_encoding == "base64" and
    (.payload | @base64d | length) > 0 and .payload == "AAH+/2JpbmFyeQ=="' >/dev/null ||
    fail "binary payload in JSON: $(sb dlq show "$b" --json)"
ok "dlq show"

# T32: show of an unknown id exits 4.
expect_exit 4 sb dlq show 0190a0b0-0000-7000-8000-00000000ffff
expect_err "no dead-lettered message with id"
ok "dlq show of an unknown id exits 4"

# T32: bulk operations need a filter or --all.
expect_exit 2 sb dlq requeue
expect_err "--all"
expect_exit 2 sb dlq purge
expect_err "--all"
[ "$(sb dlq list --json | jq length)" = 3 ] || fail "a refused bulk operation changed something"
ok "bulk operations need a filter or --all"

# T32: requeue puts the messages back on their original queue, attempts
# reset, and out of the dead-letter queue.
expect_exit 0 sb dlq requeue --queue da
grep -qx 'requeued 2 messages' "$tmp/out" || fail "requeue output: $(cat "$tmp/out")"
expect_count da ready 2
expect_count da dead_lettered 0
[ "$(sb dlq list --queue da --json)" = "[]" ] || fail "requeued letters still in the DLQ"
handler good "echo \"\$SQLBUS_ATTEMPT \$(cat)\" >> '$tmp/requeued'"
sb work --queue da --once -- "$tmp/good"
[ "$(sort "$tmp/requeued" | tr '\n' ,)" = "1 alpha,1 beta," ] || fail "requeued runs: $(cat "$tmp/requeued")"
ok "dlq requeue --queue"

# T32: requeue --id moves exactly one.
expect_exit 0 sb dlq requeue --id "$b"
grep -qx 'requeued 1 message' "$tmp/out" || fail "requeue --id output: $(cat "$tmp/out")"
expect_count db ready 1
sb work --queue db --once --max-attempts 1 -- "$tmp/oops"
ok "dlq requeue --id"

# T32: purge with a filter that matches nothing, then with one that does.
expect_exit 0 sb dlq purge --older-than 1h
grep -qx 'purged 0 messages' "$tmp/out" || fail "purge --older-than: $(cat "$tmp/out")"
printf 'gamma' | sb publish --queue dc >/dev/null
sb work --queue dc --once --max-attempts 1 -- "$tmp/oops"
expect_exit 0 sb dlq purge --queue db
grep -qx 'purged 1 message' "$tmp/out" || fail "purge --queue: $(cat "$tmp/out")"
[ "$(sb dlq list --json | jq -r '[.[].failed_queue] | join(",")')" = dc ] || fail "purge removed the wrong letters"
expect_exit 0 sb dlq purge --all
grep -qx 'purged 1 message' "$tmp/out" || fail "purge --all: $(cat "$tmp/out")"
[ "$(sb dlq list --json)" = "[]" ] || fail "purge --all left letters"
ok "dlq purge"
