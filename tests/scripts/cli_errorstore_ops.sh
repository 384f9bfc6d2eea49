#!/usr/bin/env bash
# cli_errorstore_ops.sh - the `sqlbus errors` commands beyond ingest/show
# (rule E24): import (E2) and reimport (E3), list/search/body/groups
# (E13, E22, E23), retry/archive/unarchive/resolve with selections and
# last-modified ranges (E14, E17, E19), group operations that exclude each
# other (E19, conflict exit code 6), edit (E18), redirects (E20) and
# ingest --follow. Real processes on a real database, both backends.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# line QUEUE ID [EXTRA-HEADERS-JSON]: one import line for a failure on QUEUE.
line() {
    jq -cn --arg q "$1" --arg id "$2" --argjson x "${3:-{\}}" \
        '{headers: ({"sb-failed-queue": $q, "sb-message-id": $id,
                     "sb-exception-type": "Shop.OutOfStock",
                     "sb-exception-message": "no stock"} + $x),
          body: ("{\"id\":\"" + $id + "\"}")}'
}

# ---- E2: import --------------------------------------------------------
# 1,500 lines (two chunks of the library's 1,000) on queue qa, one with a
# distinctive message type, one binary body, blank lines skipped.
for i in $(seq 1 1500); do printf 'qa-%05d\n' "$i"; done |
    jq -cR '{headers: {"sb-failed-queue": "qa", "sb-message-id": .,
             "sb-exception-type": "Shop.OutOfStock",
             "sb-exception-message": "no stock"},
             body: ("{\"id\":\"" + . + "\"}")}' >"$tmp/qa.jsonl"
{
    line qb b-1 '{"sb-message-type": "Shop.OrderPlaced"}'
    echo
    jq -cn '{headers: {"NServiceBus.MessageId": "bin-1",
                       "NServiceBus.FailedQ": "qb@host",
                       "NServiceBus.TimeOfFailure": "2026-01-02 03:04:05:678901 Z",
                       "NServiceBus.ExceptionInfo.ExceptionType": "Timeout"},
             body_base64: "AAEC/wBhYg=="}'
} >"$tmp/qb.jsonl"
printf '\000\001\002\377\000ab' >"$tmp/bin.expected"

# A bad line after the first chunk: the whole file is refused, nothing is
# imported, exit 2 names the line and the field (E2).
cp "$tmp/qa.jsonl" "$tmp/bad.jsonl"
sed -i '1200s/.*/{"headers": {"sb-message-id": "x"}, "body": "b"}/' "$tmp/bad.jsonl"
expect_exit 2 sb errors import "$tmp/bad.jsonl"
expect_err "line 1200: headers:"
expect_err "nothing imported"
[ "$(sb dlq list --json | jq length)" = 0 ] || fail "a refused import wrote dead letters"
sed -i '7s/.*/{"headers": {"sb-failed-queue": "q"}, "body_base64": "%%%"}/' "$tmp/bad.jsonl"
expect_exit 2 sb errors import "$tmp/bad.jsonl"
expect_err "line 7: body_base64: is not valid base64"
printf '{"headers": {"sb-failed-queue": 5}, "body": "b"}\n' >"$tmp/bad2.jsonl"
expect_exit 2 sb errors import "$tmp/bad2.jsonl"
expect_err "line 1: headers.sb-failed-queue: a header value must be a string"
printf '{"headers": {}, "body": "b", "extra": 1}\n' >"$tmp/bad3.jsonl"
expect_exit 2 sb errors import "$tmp/bad3.jsonl"
expect_err "line 1: extra: unknown field"
printf 'not json\n' | expect_exit 2 sb errors import -
expect_err "line 1: line: not valid JSON"
[ "$(sb dlq list --json | jq length)" = 0 ] || fail "a refused import wrote dead letters"
expect_exit 2 sb errors import
expect_err "give the file to import"
ok "E2: a file with a bad line imports nothing and names line, field and problem (exit 2)"

expect_exit 0 sb errors import "$tmp/qa.jsonl" --ingest --json
jq -e '.imported == 1500 and .ingest.messages == 1500 and .ingest.failed_imports == 0' \
    "$tmp/out" >/dev/null || fail "import --ingest --json: $(cat "$tmp/out")"
sb errors import - <"$tmp/qb.jsonl" >"$tmp/out"
grep -q '^imported 2 messages into the dead-letter queue$' "$tmp/out" ||
    fail "import from stdin: $(cat "$tmp/out")"
[ "$(sb dlq list --json | jq length)" = 2 ] || fail "import without --ingest: not in the dead-letter queue"
ok "E2: import FILE --ingest --json and import - (stdin), in chunks of 1,000"

# ---- ingest --follow -----------------------------------------------------
"$SQLBUS" --prefix "$prefix" errors ingest --follow --interval 50ms --json \
    >"$tmp/follow.out" 2>"$tmp/follow.err" &
fpid=$!
bg_pids+=("$fpid")
for _ in $(seq 1 100); do
    [ -s "$tmp/follow.out" ] && break
    sleep 0.1
done
jq -e -s '.[0].rows == 2 and .[0].messages == 2' "$tmp/follow.out" >/dev/null ||
    fail "ingest --follow first pass: $(cat "$tmp/follow.out")"
line qb b-2 | sb errors import - >/dev/null
for _ in $(seq 1 100); do
    [ "$(wc -l <"$tmp/follow.out")" -ge 2 ] && break
    sleep 0.1
done
[ "$(wc -l <"$tmp/follow.out")" = 2 ] || fail "ingest --follow did not pick up the import: $(cat "$tmp/follow.out")"
kill -TERM "$fpid"
wait_exit "$fpid" 20
[ "$wait_rc" = 0 ] || fail "ingest --follow exited $wait_rc on SIGTERM: $(cat "$tmp/follow.err")"
grep -q "stopped after" "$tmp/follow.err" || fail "no summary: $(cat "$tmp/follow.err")"
expect_exit 2 sb errors ingest --interval 1s
expect_err "--interval needs --follow"
expect_exit 2 sb errors ingest --follow --interval 1ms
expect_err "--interval must be 10ms..1h"
ok "ingest --follow: a JSON line per pass that did something, exit 0 on SIGTERM"

# ---- E23: list -------------------------------------------------------------
expect_exit 0 sb errors list --json --per-page 500 --page 2 --queue qa --sort failed_queue --asc
jq -e '.total == 1500 and .page == 2 and .per_page == 500 and (.items | length) == 500
    and (.items[0] | keys) == ["attempts","exception_message","exception_type",
        "failed_queue","last_time_of_failure","message_type","status","unique_message_id"]
    and .items[0].status == "unresolved" and .items[0].failed_queue == "qa"' "$tmp/out" >/dev/null ||
    fail "list --json: $(head -c 600 "$tmp/out")"
expect_exit 0 sb errors list --queue qb
grep -q '^UNIQUE-ID  *STATUS  *ATTEMPTS' "$tmp/out" || fail "list table: $(cat "$tmp/out")"
[ "$(grep -c unresolved "$tmp/out")" = 2 ] || fail "list --queue qb: $(cat "$tmp/out")"
expect_exit 0 sb errors list --status any --type Shop.OrderPlaced --json
jq -e '.total == 1 and .items[0].message_type == "Shop.OrderPlaced"' "$tmp/out" >/dev/null ||
    fail "list --type: $(cat "$tmp/out")"
expect_exit 2 sb errors list --per-page 501
expect_err "--per-page must be 1..500 (got 501)"
expect_exit 2 sb errors list --status broken
expect_err "--status must be unresolved, retry_issued, resolved, archived or any"
expect_exit 2 sb errors list --sort body
expect_err "--sort must be time_of_failure"
expect_exit 2 sb errors list --limit 5
expect_err "option --limit is not valid here"
ok "E23: list with filters, sort, pages; JSON {total, page, per_page, items}; bad flags exit 2"

# ---- E22: search; body -------------------------------------------------------
expect_exit 0 sb errors search OrderPlaced zzznomatch --json
jq -e 'length == 1 and .[0].message_type == "Shop.OrderPlaced"' "$tmp/out" >/dev/null ||
    fail "search OrderPlaced: $(cat "$tmp/out")"
expect_exit 2 sb errors search OrderPlaced --limit 1001
expect_err "--limit must be 1..1000 (got 1001)"
expect_exit 2 sb errors search
expect_err "give the words to search for"
ok "E22: search WORDS --json; --limit is 1..1000"

bin=$(sb errors list --queue qb@host --json | jq -r '.items[0].unique_message_id')
sb errors body "$bin" >"$tmp/bin.got"
cmp "$tmp/bin.expected" "$tmp/bin.got" || fail "errors body is not byte for byte"
expect_exit 4 sb errors body no-such-id
expect_exit 2 sb errors body
expect_err "the unique message id is required"
ok "E24: body writes the stored bytes (NUL, 0xff) to stdout; exit 4 when unknown"

# ---- E13: groups and comments -------------------------------------------------
expect_exit 0 sb errors groups --classifier "Endpoint Address" --json
jq -e '(.[0] | keys) == ["classifier","comment","count","first_time_of_failure","id",
        "last_time_of_failure","operation","title"]
    and (map(select(.title == "qa"))[0].count == 1500)
    and (map(select(.title == "qa"))[0].operation == null)' "$tmp/out" >/dev/null ||
    fail "groups --json: $(cat "$tmp/out")"
group=$(jq -r 'map(select(.title == "qa"))[0].id' "$tmp/out")
expect_exit 0 sb errors groups comment "$group" "stock sync broken; fixed in 4.2"
expect_exit 0 sb errors groups --classifier "Endpoint Address" --json
jq -e --arg g "$group" 'map(select(.id == $g))[0].comment == "stock sync broken; fixed in 4.2"' \
    "$tmp/out" >/dev/null || fail "comment not set: $(cat "$tmp/out")"
long=$(printf 'c%.0s' $(seq 1 1001))
expect_exit 2 sb errors groups comment "$group" "$long"
expect_err "at most 1000 bytes (got 1001)"
expect_exit 2 sb errors groups comment "$group"
expect_err "give the group id and the comment text"
expect_exit 0 sb errors groups comment "$group" --delete
expect_exit 0 sb errors groups --classifier "Endpoint Address" --json
jq -e --arg g "$group" 'map(select(.id == $g))[0].comment == null' "$tmp/out" >/dev/null ||
    fail "comment not deleted: $(cat "$tmp/out")"
expect_exit 0 sb errors groups
grep -q '^ID  *COUNT  *AGE  *OPERATION  *TITLE' "$tmp/out" || fail "groups table: $(cat "$tmp/out")"
ok "E13: groups with counts, window, operation and comment; comment set/delete; 1000-byte cap"

# ---- E19: archive / unarchive a group; the conflict exit code -----------------
expect_exit 2 sb errors archive
expect_err "choose exactly one of"
expect_exit 2 sb errors archive --group "$group" --all
expect_err "(got 2)"
expect_exit 2 sb errors archive --all --from 2026-13-01T00:00:00Z
expect_err "--from must be an ISO 8601 time"
expect_exit 2 sb errors unarchive --all --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z
expect_err "--from is after --to"
expect_exit 0 sb errors archive --group "$group" --json
jq -e '.changed == 1500' "$tmp/out" >/dev/null || fail "archive --group: $(cat "$tmp/out")"
expect_exit 0 sb errors groups --classifier "Endpoint Address" --archived --json
jq -e --arg g "$group" 'map(select(.id == $g))[0] | .count == 1500 and .operation.kind == "archive"
    and .operation.state == "completed" and .operation.done == 1500 and .operation.total == 1500' \
    "$tmp/out" >/dev/null || fail "archived group's operation: $(cat "$tmp/out")"
# The operation's times come from the host's clock on both backends.
jq -e --arg g "$group" 'map(select(.id == $g))[0].operation | (.started_at | type == "string")
    and (.finished_at | type == "string")' "$tmp/out" >/dev/null || fail "operation times: $(cat "$tmp/out")"
ok "E19: archive --group --json {\"changed\": 1500}; the group shows its completed operation"

# Issue 20.6: a group operation over a group id that names no messages
# changes nothing and writes no operation row.
for op in retry archive unarchive; do
    expect_exit 0 sb errors "$op" --group no-such-group --json
    jq -e '.changed == 0' "$tmp/out" >/dev/null || fail "$op of no group: $(cat "$tmp/out")"
done
if have_sql; then
    [ "$(sql "SELECT count(*) FROM ${prefix}group_operations WHERE group_id = 'no-such-group'")" = 0 ] ||
        fail "an operation over no messages wrote a group operation row"
fi
ok "issue 20.6: retry, archive, unarchive of a group with no messages write no row"

if have_sql; then
    # A process that died mid-operation leaves it "running" for 60 s: a
    # retry or unarchive of the group is refused with exit 6 (E19).
    now=$(date +%s%6N)
    sql "UPDATE ${prefix}group_operations SET state = 'running', done = 1000, finished_at = NULL, updated_at = $now WHERE group_id = '$group'"
    expect_exit 6 sb errors unarchive --group "$group"
    expect_err "has an operation running: archive, 1000 of 1500 done"
    expect_err "'sqlbus errors groups' shows the operation"
    expect_exit 6 sb errors retry --group "$group" --json
    [ ! -s "$tmp/out" ] || fail "a refused operation printed a count: $(cat "$tmp/out")"
    sql "UPDATE ${prefix}group_operations SET state = 'completed', finished_at = $now WHERE group_id = '$group'"
    ok "E19: a group operation refused because another runs exits 6 naming it"
else
    ok "E19 conflict check skipped: no sqlite3/psql client"
fi

# Unarchive by last-modified range: a range in the past selects nothing;
# one around now selects the group (E17, E19).
expect_exit 0 sb errors unarchive --all --to 2000-01-01T00:00:00Z --json
jq -e '.changed == 0' "$tmp/out" >/dev/null || fail "unarchive past range: $(cat "$tmp/out")"
from=$(($(date +%s) - 3600))
expect_exit 0 sb errors unarchive --from "$from" --to "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
grep -q '^unarchived 1500 messages$' "$tmp/out" || fail "unarchive range: $(cat "$tmp/out")"
ok "E17, E19: unarchive by last-modified range (--from Unix seconds, --to ISO 8601)"

# ---- E20: redirects ---------------------------------------------------------------
expect_exit 0 sb errors redirect add qb qb-v2 --json
jq -e '.from_queue == "qb" and .to_queue == "qb-v2" and (.id | length) == 36' "$tmp/out" >/dev/null ||
    fail "redirect add --json: $(cat "$tmp/out")"
rid=$(jq -r .id "$tmp/out")
expect_exit 0 sb errors redirect add qb qb-v2
expect_exit 6 sb errors redirect add qb qc
expect_err "field: from_queue"
expect_exit 6 sb errors redirect add qb-v2 qc
expect_exit 2 sb errors redirect add qb
expect_err "redirect add takes FROM-QUEUE TO-QUEUE"
expect_exit 2 sb errors redirect add qb "$long"
expect_err "TO-QUEUE"
expect_exit 4 sb errors redirect update 00000000-0000-0000-0000-000000000000 qc
expect_exit 0 sb errors redirect list --json
jq -e --arg r "$rid" 'length == 1 and .[0].id == $r and .[0].to_queue == "qb-v2"' "$tmp/out" >/dev/null ||
    fail "redirect list: $(cat "$tmp/out")"
ok "E20: redirect add/list; the same again is fine; conflicts and chains exit 6"

# ---- E14, E17: retry, pending retries, resolve ----------------------------------------
b1=$(sb errors list --queue qb --json | jq -r '.items[] | select(.message_type == "Shop.OrderPlaced") | .unique_message_id')
expect_exit 0 sb errors retry "$b1" --json
jq -e '.changed == 1' "$tmp/out" >/dev/null || fail "retry ID: $(cat "$tmp/out")"
expect_count qb-v2 ready 1
expect_count qb ready 0
expect_exit 0 sb errors retry --queue qb
grep -q '^retried 1 message$' "$tmp/out" || fail "retry --queue (b-1 is no longer unresolved): $(cat "$tmp/out")"
expect_exit 0 sb errors list --status retry_issued --json
jq -e '.total == 2' "$tmp/out" >/dev/null || fail "retry_issued: $(cat "$tmp/out")"
expect_exit 0 sb errors retry --pending --queue qb --json
jq -e '.changed == 2' "$tmp/out" >/dev/null || fail "retry --pending: $(cat "$tmp/out")"
expect_count qb-v2 ready 4
expect_exit 2 sb errors archive --pending --all
expect_err "--pending is not valid here"
expect_exit 0 sb errors resolve --all
grep -q '^resolved 2 pending retries$' "$tmp/out" || fail "resolve --all: $(cat "$tmp/out")"
expect_exit 0 sb errors list --status resolved --json
jq -e '.total == 2' "$tmp/out" >/dev/null || fail "resolved: $(cat "$tmp/out")"
expect_exit 0 sb errors redirect update "$rid" qb-v3
expect_exit 0 sb errors redirect remove "$rid"
expect_exit 0 sb errors redirect remove "$rid"
expect_exit 0 sb errors redirect list --json
[ "$(cat "$tmp/out")" = "[]" ] || fail "redirect remove: $(cat "$tmp/out")"
ok "E14, E17, E20: retry IDs / --queue follow the redirect; --pending retries again; resolve"

# ---- E18: edit and retry ------------------------------------------------------------------
e1=$(sb errors list --queue qa --per-page 1 --json | jq -r '.items[0].unique_message_id')
expect_exit 2 sb errors edit "$e1" --body '{"id":"fixed"}'
expect_err "--allow-edit"
expect_exit 2 sb errors edit "$e1" --allow-edit --body x --header sb-message-id=other
expect_err "header sb-message-id is locked"
expect_exit 2 sb errors edit "$e1" --allow-edit --header novalue
expect_err "--header must be KEY=VALUE"
expect_exit 0 sb errors edit "$e1" --allow-edit --body '{"id":"fixed"}' --header x-fix=1 --json
jq -e '.ignored == false and (.message_id | length) == 36' "$tmp/out" >/dev/null ||
    fail "edit --json: $(cat "$tmp/out")"
expect_count qa ready 1
SQLBUS_ALLOW_EDIT=1 expect_exit 0 sb errors edit "$e1" --body again --json
jq -e '.ignored == true and .message_id == null' "$tmp/out" >/dev/null ||
    fail "second edit: $(cat "$tmp/out")"
expect_exit 0 sb errors show "$e1" --json
jq -e '.status == "resolved"' "$tmp/out" >/dev/null || fail "edited original: $(cat "$tmp/out")"
ok "E18: edit needs --allow-edit; locked headers refused (exit 2); the second edit is ignored"

# ---- E3: reimport --------------------------------------------------------------------------
printf 'x' | sb publish --queue deadletter --header sb-message-id=lost >/dev/null
expect_exit 0 sb errors ingest --json
jq -e '.failed_imports == 1' "$tmp/out" >/dev/null || fail "failed import: $(cat "$tmp/out")"
expect_exit 0 sb errors reimport --ingest --json
jq -e '.moved == 1 and .ingest.failed_imports == 1 and .failed_imports == 1' "$tmp/out" >/dev/null ||
    fail "reimport --ingest --json: $(cat "$tmp/out")"
expect_exit 0 sb errors reimport
grep -q '^moved 1 failed import back to the dead-letter queue$' "$tmp/out" ||
    fail "reimport: $(cat "$tmp/out")"
expect_exit 2 sb errors reimport extra
expect_err "unexpected argument"
ok "E3: reimport moves failed imports back; still-unusable rows come back"

# ---- E14: the archive/retry of a queue and --all; usage --------------------------------------
expect_exit 0 sb errors archive --queue qa --json
jq -e '.changed == 1499' "$tmp/out" >/dev/null || fail "archive --queue: $(cat "$tmp/out")"
expect_exit 0 sb errors retry --all --json
jq -e '.changed == 1' "$tmp/out" >/dev/null || fail "retry --all (bin-1 is left): $(cat "$tmp/out")"
expect_count "qb@host" ready 1
expect_exit 2 sb errors frobnicate
expect_err "unknown errors command"
expect_exit 0 sb help errors retry
grep -q -- "--pending" "$tmp/out" || fail "help errors retry"
ok "E24: archive --queue, retry --all; help topics"
