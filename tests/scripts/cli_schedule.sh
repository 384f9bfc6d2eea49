#!/usr/bin/env bash
# cli_schedule.sh - `sqlbus schedule` (rule T41, periodic jobs): usage
# errors naming the flag and the limit, add/list/remove, and two real
# `schedule run` processes at once publishing each occurrence of an
# every-second schedule exactly once, stopped by SIGTERM.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T41: help documents every flag.
expect_exit 0 sb schedule --help
for flag in --cron --every --queue --tz --missed --payload --header --json --once; do
    grep -q -- "$flag" "$tmp/out" || fail "schedule --help does not mention $flag"
done
expect_exit 0 "$SQLBUS" help schedule
ok "T41 schedule --help"

# T41: usage errors exit 2 naming the flag and the limit, before anything
# is stored.
expect_exit 2 sb schedule add s1 --every 1s
expect_err "--queue"
expect_exit 2 sb schedule add s1 --queue q
expect_err "--cron EXPR or --every D"
expect_exit 2 sb schedule add s1 --queue q --every 500ms
expect_err "--every"
expect_err "1.0s..366d"
expect_exit 2 sb schedule add s1 --queue q --every 400d
expect_err "--every"
expect_exit 2 sb schedule add s1 --queue q --every 1s --cron '* * * * *'
expect_err "not both"
expect_exit 2 sb schedule add s1 --queue q --every 1s --tz Europe/Berlin
expect_err "--tz"
expect_exit 2 sb schedule add s1 --queue q --cron '0 24 * * *'
expect_err "0-23"
expect_err "--cron"
expect_exit 2 sb schedule add s1 --queue q --cron '@daily' --tz No/Such_Zone
expect_err "unknown time zone"
expect_err "--tz"
expect_exit 2 sb schedule add s1 --queue q --every 1s --missed later
expect_err "--missed"
expect_exit 2 sb schedule add s1 --queue q --every 1s --header nokey
expect_exit 2 sb schedule add "$(printf 'x%.0s' {1..201})" --queue q --every 1s
expect_err "1 to 200 bytes"
expect_exit 2 sb schedule frobnicate
expect_exit 0 sb schedule list --json
[ "$(cat "$tmp/out")" = "[]" ] || fail "refused adds stored something: $(cat "$tmp/out")"
ok "T41 usage errors"

# T41: add, replace, list, remove; remove of a missing one exits 4.
expect_exit 0 sb schedule add nightly --cron '30 2 * * *' --tz Europe/Berlin \
    --queue reports --missed once --payload '{"report":"daily"}' --header sb-message-type=Report
[ "$(cat "$tmp/out")" = "schedule nightly saved" ] || fail "add said: $(cat "$tmp/out")"
expect_exit 0 sb schedule list --json
jq -e 'length == 1 and .[0].name == "nightly" and .[0].queue == "reports" and
        .[0].cron == "30 2 * * *" and .[0].time_zone == "Europe/Berlin" and
        .[0].missed == "once" and .[0].every_ms == null and
        .[0].payload_bytes == 18 and (.[0].next | test("T0[01]:30:00.000000Z$"))' \
    "$tmp/out" >/dev/null || fail "list --json: $(cat "$tmp/out")"
expect_exit 0 sb schedule list
grep -Eq '^nightly +reports +30 2 \* \* \* +Europe/Berlin +once +[0-9-]+T' "$tmp/out" ||
    fail "list table: $(cat "$tmp/out")"
expect_exit 0 sb schedule add nightly --every 1h --queue reports
expect_exit 0 sb schedule list --json
jq -e '.[0].every_ms == 3600000 and .[0].cron == null and .[0].missed == "skip"' \
    "$tmp/out" >/dev/null || fail "replaced: $(cat "$tmp/out")"
expect_exit 0 sb schedule remove nightly
[ "$(cat "$tmp/out")" = "schedule nightly removed" ] || fail "remove said: $(cat "$tmp/out")"
expect_exit 4 sb schedule remove nightly
expect_err "no schedule named"
ok "T41 add, list, remove"

# T41: two schedulers at once, real processes, one message per
# occurrence. The schedule starts when it is added; both run for about
# five seconds and are stopped by SIGTERM (exit 0).
expect_exit 0 sb schedule add tick --every 1s --queue ticks --payload tick
start=$(sb schedule list --json | jq -r '.[0].last')
"$SQLBUS" --prefix "$prefix" schedule run 2>"$tmp/run1.err" &
p1=$!
bg_pids+=("$p1")
"$SQLBUS" --prefix "$prefix" schedule run 2>"$tmp/run2.err" &
p2=$!
bg_pids+=("$p2")
sleep 5.5
kill -TERM "$p1" "$p2"
wait_exit "$p1" 30
[ "$wait_rc" -eq 0 ] || fail "scheduler 1 exited $wait_rc after SIGTERM: $(cat "$tmp/run1.err")"
wait_exit "$p2" 30
[ "$wait_rc" -eq 0 ] || fail "scheduler 2 exited $wait_rc after SIGTERM: $(cat "$tmp/run2.err")"
last=$(sb schedule list --json | jq -r '.[0].last')
secs() { jq -rn --arg t "$1" '$t | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601'; }
want=$(($(secs "$last") - $(secs "$start")))
[ "$want" -ge 4 ] || fail "only $want occurrences ran in 5.5 s (from $start to $last)"
if [ "$backend" = sqlite ]; then
    occ="json_extract(headers, '\$.\"sb-schedule-occurrence\"')"
else
    occ="headers::json ->> 'sb-schedule-occurrence'"
fi
got=$(sql "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(DISTINCT $occ) FROM ${prefix}messages WHERE queue = 'ticks'")
[ "$got" = "$want $want $want" ] ||
    fail "messages, distinct ids, distinct occurrences: $got; expected $want of each"
expect_count ticks ready "$want"
published=$(cat "$tmp/run1.err" "$tmp/run2.err" | sed -n 's/.*scheduler stopped: \([0-9]*\) messages published.*/\1/p' | paste -sd+)
published=$((published))
[ "$published" = "$want" ] || fail "the schedulers say they published $published, expected $want"
ok "T41 two schedulers publish each occurrence once ($want occurrences)"
