#!/usr/bin/env bash
# cli_publish.sh - `sqlbus publish`: one message, --lines, --json, --id
# idempotency, --delay and --header (rules T9, T10, T11, T29, T30).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
uuid_re='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'

# T29: one message from stdin prints its id.
id=$(printf 'hello' | sb publish --queue q1)
[[ $id =~ $uuid_re ]] || fail "publish printed \"$id\", not an id"
# T29: one message from a FILE, and from "-".
printf 'from a file\n' >"$tmp/body"
id2=$(sb publish --queue q1 "$tmp/body")
id3=$(printf 'dash' | sb publish --queue q1 -)
[[ $id2 =~ $uuid_re && $id3 =~ $uuid_re ]] || fail "bad ids $id2 $id3"
[ "$id" != "$id2" ] || fail "two publishes got the same id"
expect_count q1 ready 3
ok "publish one message from stdin, FILE and -"

# T29 + T30: the payload reaches the handler byte for byte (binary too).
head -c 70000 /dev/urandom >"$tmp/binary"
sb publish --queue bin "$tmp/binary" >/dev/null
sb work --queue bin --once -- sh -c "cat > '$tmp/got'"
cmp "$tmp/binary" "$tmp/got" || fail "binary payload changed on the way"
ok "binary payload delivered unchanged"

# T29 + T11: --lines publishes one message per line, in batches; --json
# prints the ids as a JSON array.
seq 1 2500 | sed 's/^/job /' | sb publish --queue lines --lines --json >"$tmp/ids.json"
[ "$(jq length "$tmp/ids.json")" = 2500 ] || fail "--json did not list 2500 ids"
[ "$(jq -r '.[]' "$tmp/ids.json" | sort -u | wc -l)" = 2500 ] || fail "ids not unique"
jq -e --arg re "$uuid_re" 'all(.[]; test($re))' "$tmp/ids.json" >/dev/null ||
    fail "--json entries are not ids"
expect_count lines ready 2500
# Without --json: one id per line; a last line without a newline counts.
printf 'a\nb\nc' | sb publish --queue lines2 --lines >"$tmp/ids.txt"
[ "$(wc -l <"$tmp/ids.txt")" = 3 ] || fail "--lines printed $(wc -l <"$tmp/ids.txt") ids for 3 lines"
expect_count lines2 ready 3
sb work --queue lines2 --once -- sh -c "cat >> '$tmp/lines2'; echo >> '$tmp/lines2'"
[ "$(sort "$tmp/lines2" | tr '\n' ' ')" = "a b c " ] || fail "--lines payloads: $(cat "$tmp/lines2")"
# Empty input publishes nothing; --json still prints an array.
[ "$(sb publish --queue lines3 --lines --json </dev/null | jq length)" = 0 ] ||
    fail "empty --lines --json is not []"
ok "publish --lines and --json"

# T9: publishing the same --id twice stores one message (the first).
uid=0190a0b0-1234-7000-8000-000000000001
a=$(printf 'first' | sb publish --queue idem --id "$uid")
b=$(printf 'second' | sb publish --queue idem --id "$uid")
[ "$a" = "$uid" ] && [ "$b" = "$uid" ] || fail "--id printed $a / $b"
expect_count idem ready 1
sb work --queue idem --once -- sh -c "cat > '$tmp/idem'"
[ "$(cat "$tmp/idem")" = first ] || fail "idempotent publish changed the payload"
ok "publish --id is idempotent"

# T10 + T30: a delayed message is not claimable early; `work --once`
# leaves it for a later run, and runs it once it is due.
printf 'later' | sb publish --queue delayed --delay 1h >/dev/null
printf 'soon' | sb publish --queue delayed2 --delay 2s >/dev/null
expect_count delayed delayed 1
expect_count delayed ready 0
sb work --queue delayed --once -- sh -c "echo ran >> '$tmp/ran'"
sb work --queue delayed2 --once -- sh -c "echo ran >> '$tmp/ran'"
[ ! -e "$tmp/ran" ] || fail "a delayed message ran before it was due"
expect_count delayed delayed 1
sleep 2.5
sb work --queue delayed2 --once -- sh -c "cat >> '$tmp/ran'"
[ "$(cat "$tmp/ran")" = soon ] || fail "the due message did not run"
ok "publish --delay"

# T29 + T30: --header K=V builds a JSON object the handler receives.
printf 'x' | sb publish --queue hdr --header color=blue \
    --header 'quote=say "hi"\ok' --header 'eq=a=b' >/dev/null
sb work --queue hdr --once -- sh -c "printf '%s' \"\$SQLBUS_HEADERS\" > '$tmp/headers'"
jq -e '.color == "blue" and .quote == "say \"hi\"\\ok" and .eq == "a=b"' \
    "$tmp/headers" >/dev/null || fail "headers arrived as $(cat "$tmp/headers")"
ok "publish --header"
