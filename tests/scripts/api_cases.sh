#!/usr/bin/env bash
# api_cases.sh - the HTTP API's data-driven cases (rules S4-S12): every
# file of tests/api/*.case is one request and what its response must be,
# run in name order against a real `sqlbus serve` on loopback, with the
# same seeded store on each backend. Tokens are configured, so each case
# runs with the admin token unless it says otherwise; the pages of
# http://servicepulse.test may call the API (--cors-origin, issue 22).
#
# A case file (one directive per line; '#' starts a comment line):
#   request: METHOD PATH          the request (PATH may hold {{VAR}})
#   auth: admin | read | none | bad   which token to send (default admin)
#   header: NAME: VALUE           a request header (repeatable); a
#                                 mutation is sent as application/json
#                                 unless it names its own Content-Type
#   body: TEXT                    the request body (JSON, one line)
#   body-fill: N                  a body of N bytes of 'a' (limits)
#   status: CODE                  the expected status
#   expect-header: NAME: VALUE    a response header, exactly
#   expect-header-match: NAME: RE a response header matching a regex
#   expect-header-nomatch: NAME: RE  ... not matching it
#   no-header: NAME               a header that must be absent
#   expect-json: JQ               a jq filter that must be true of the body
#   expect-body-match: RE         a line of the body matches a regex (text)
#   expect-empty                  no body at all (304, HEAD)
#   capture: VAR JQ               remember a value of the body as {{VAR}}
#   capture-header: VAR NAME      remember a response header as {{VAR}}
#   wait-until: PATH JQ           before the request: poll GET PATH (10 s)
#                                 until JQ is true of its body
#   raw: TEXT                     instead of request:, send TEXT over a raw
#                                 socket (what curl will not send: a NUL,
#                                 a bad Content-Length, a path with ../);
#                                 Python escapes (\r\n, \x00), {{VAR}}s
#                                 and {{ADMIN_TOKEN}}; auth: and header:
#                                 do not apply. Status 000: the server
#                                 closed without an answer (within 20 s)
#   raw-trickle: MS               with raw:, one byte every MS ms
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"

cases_dir="$here/../api"
admin_token=api-admin-token
read_token=api-read-token
printf 'admin:%s\nread:%s\n' "$admin_token" "$read_token" >"$tmp/tokens"

# The seed: six failed messages (two queues, two exception types, one
# NServiceBus-shaped: its sender, hosts, source, conversation and the
# edit it is a copy of, as ServicePulse shows them), and messages
# waiting in two queues.
seed() {
    local i q t
    : >"$tmp/seed.jsonl"
    for i in 1 2 3 4 5; do
        q=orders
        t=System.TimeoutException
        [ "$i" -gt 3 ] && q=payments
        [ "$i" -eq 5 ] && t=Shop.CardDeclinedException
        printf '{"headers": {"sb-failed-queue": "%s", "sb-message-id": "0192f0b0-0000-7000-8000-00000000000%d", "sb-processing-endpoint": "%s", "sb-exception-type": "%s", "sb-exception-message": "failure %d", "sb-exception-stacktrace": "%s: failure\\n   at Shop.Handle() in Shop.cs:line %d", "sb-message-type": "Shop.PlaceOrder", "sb-time-of-failure": "2026-11-30T10:00:0%dZ", "Content-Type": "application/json"}, "body": "{\\"order\\": %d}"}\n' \
            "$q" "$i" "${q^}" "$t" "$i" "$t" "$((i * 10))" "$i" "$i" >>"$tmp/seed.jsonl"
    done
    printf '{"headers": {"NServiceBus.MessageId": "nsb-1", "NServiceBus.FailedQ": "billing", "NServiceBus.ProcessingEndpoint": "Billing", "NServiceBus.EnclosedMessageTypes": "Shop.Bill, Shop", "NServiceBus.ExceptionInfo.ExceptionType": "System.InvalidOperationException", "NServiceBus.ExceptionInfo.Message": "bad state", "NServiceBus.TimeOfFailure": "2026-11-30 10:00:09:000000 Z", "NServiceBus.TimeSent": "2026-11-30 09:59:59:000000 Z", "NServiceBus.ExceptionInfo.Source": "Shop.Billing", "NServiceBus.ExceptionInfo.StackTrace": "System.InvalidOperationException: bad state\\n   at Shop.Billing.Handle()", "NServiceBus.OriginatingEndpoint": "Shop.Web", "NServiceBus.OriginatingMachine": "web-2", "$.diagnostics.originating.hostid": "5b0c8f1e-4a55-4ad0-9d3a-2f3c4e5d6a7b", "NServiceBus.HostId": "9e3f0d2c-1b4a-4c5d-8e6f-7a8b9c0d1e2f", "NServiceBus.HostDisplayName": "billing-1", "NServiceBus.ConversationId": "conv-nsb-1", "NServiceBus.MessageIntent": "Send", "ServiceControl.EditOf": "0c7b4c4e-0000-4000-8000-000000000001"}, "body": "<bill/>"}\n' >>"$tmp/seed.jsonl"
    sb errors import "$tmp/seed.jsonl" >/dev/null || fail "errors import"
    printf '{"job": 1}\n{"job": 2}\n{"job": 3}\n' |
        sb publish --queue work.ready --lines >/dev/null || fail "publish"
    echo '{"job": "later"}' | sb publish --queue work.later --delay 1h >/dev/null ||
        fail "publish delayed"
}

seed
# Issue 22, endpoint liveness: Shipping runs for the whole suite and
# beats every second; Stopped ran once and stopped gracefully.
"$SQLBUS" --prefix "$prefix" work --queue liveness.shipping --endpoint Shipping \
    --heartbeat 1s -- true 2>"$tmp/shipping.err" &
bg_pids+=("$!")
sb work --queue liveness.stopped --endpoint Stopped --once -- true 2>/dev/null ||
    fail "work --once (Stopped)"
start_server api --token-file "$tmp/tokens" --allow-edit \
    --cors-origin http://servicepulse.test
for i in $(seq 1 100); do
    n=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $admin_token" "$base/api/errors" |
        tr -d '\r' | sed -n 's/^Total-Count: //Ip')
    [ "$n" = 6 ] && break
    sleep 0.1
done
[ "$n" = 6 ] || fail "serve did not ingest the seed (Total-Count $n): $(cat "$tmp/api.err")"

declare -A vars
vars[ADMIN_TOKEN]=$admin_token
vars[SELF_ORIGIN]=$base
raw_py="$here/lib/http_raw.py"

subst() {
    local s=$1 k
    for k in "${!vars[@]}"; do
        s=${s//"{{$k}}"/"${vars[$k]}"}
    done
    printf '%s' "$s"
}

wait_until() {
    local path=$1 filter=$2 i
    for i in $(seq 1 100); do
        curl -s -H "Authorization: Bearer $admin_token" "$base$path" >"$tmp/wait.json"
        jq -e "$filter" "$tmp/wait.json" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

run_case() {
    local file=$1 name method="" path="" auth=admin body="" body_file="" status=""
    local own_ct="" raw="" trickle=0
    local -a hdrs=() checks=()
    name=$(basename "$file" .case)
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
        '#'* | '') ;;
        request:*)
            read -r method path <<<"${line#request: }"
            path=$(subst "$path")
            ;;
        auth:*) auth=${line#auth: } ;;
        header:*)
            hdrs+=(-H "$(subst "${line#header: }")")
            case "${line,,}" in "header: content-type:"*) own_ct=1 ;; esac
            ;;
        body:*) body=$(subst "${line#body: }") ;;
        raw:*) raw=$(subst "${line#raw: }") ;;
        raw-trickle:*) trickle=${line#raw-trickle: } ;;
        body-fill:*)
            head -c "${line#body-fill: }" /dev/zero | tr '\0' a >"$tmp/fill"
            body_file="$tmp/fill"
            ;;
        wait-until:*)
            local w=${line#wait-until: }
            wait_until "$(subst "${w%% *}")" "$(subst "${w#* }")" ||
                fail "$name: $w never became true: $(cat "$tmp/wait.json")"
            ;;
        status:*) status=${line#status: } ;;
        *) checks+=("$line") ;;
        esac
    done <"$file"
    [ -n "$status" ] || fail "$name: needs status:"
    if [ -n "$raw" ]; then
        method=RAW path=
        python3 "$raw_py" exchange "${base##*:}" "$raw" 20 "$trickle" "$tmp/$name" ||
            fail "$name: the server neither answered nor closed within 20 s"
    else
        [ -n "$method" ] || fail "$name: needs request: or raw:"
        curl_case "$name" "$method" "$path" "$auth" "$body" "$body_file" "$own_ct" "${hdrs[@]}"
    fi
    check_case "$name" "$method" "$path" "$status" "${checks[@]}"
}

# curl_case NAME METHOD PATH AUTH BODY BODY_FILE OWN_CT HEADER-ARGS...: the
# request by curl, its answer in $tmp/NAME.*.
curl_case() {
    local name=$1 method=$2 path=$3 auth=$4 body=$5 body_file=$6 own_ct=$7
    shift 7
    local -a hdrs=("$@")
    local -a args=(-X "$method")
    [ "$method" = HEAD ] && args=(-I)
    case "$auth" in
    admin) args+=(-H "Authorization: Bearer $admin_token") ;;
    read) args+=(-H "Authorization: Bearer $read_token") ;;
    bad) args+=(-H "Authorization: Bearer not-$admin_token") ;;
    none) ;;
    *) fail "$name: auth must be admin, read, none or bad" ;;
    esac
    case "$method" in
    POST | PUT | PATCH | DELETE) [ -n "$own_ct" ] || args+=(-H 'Content-Type: application/json') ;;
    esac
    [ -n "$body" ] && args+=(--data-binary "$body")
    [ -n "$body_file" ] && args+=(--data-binary "@$body_file")
    req "$name" "${args[@]}" "${hdrs[@]}" "$base$path"
    # curl -I writes the headers as its output and reads no body.
    if [ "$method" = HEAD ]; then : >"$tmp/$name.json"; fi
}

# check_case NAME METHOD PATH STATUS CHECK...: the answer against the case.
check_case() {
    local name=$1 method=$2 path=$3 status=$4
    shift 4
    local -a checks=("$@")
    local got
    got=$(cat "$tmp/$name.status")
    [ "$got" = "$status" ] ||
        fail "$name: $method $path: status $got, want $status: $(head -c 2000 "$tmp/$name.json")"
    for c in "${checks[@]}"; do
        case "$c" in
        expect-header:*)
            local h=${c#expect-header: }
            local v
            v=$(subst "${h#*: }")
            [ "$(header "$name" "${h%%: *}")" = "$v" ] ||
                fail "$name: header ${h%%: *} is \"$(header "$name" "${h%%: *}")\", want \"$v\""
            ;;
        expect-header-match:*)
            local h
            h=$(subst "${c#expect-header-match: }")
            header "$name" "${h%%: *}" | grep -Eq -- "${h#*: }" ||
                fail "$name: header ${h%%: *} \"$(header "$name" "${h%%: *}")\" does not match ${h#*: }"
            ;;
        expect-header-nomatch:*)
            local h
            h=$(subst "${c#expect-header-nomatch: }")
            ! header "$name" "${h%%: *}" | grep -Eq -- "${h#*: }" ||
                fail "$name: header ${h%%: *} \"$(header "$name" "${h%%: *}")\" matches ${h#*: }"
            ;;
        no-header:*)
            [ -z "$(header "$name" "${c#no-header: }")" ] ||
                fail "$name: header ${c#no-header: } should be absent"
            ;;
        expect-json:*)
            local f
            f=$(subst "${c#expect-json: }")
            jq -e "$f" "$tmp/$name.json" >/dev/null 2>&1 ||
                fail "$name: not true: $f, of: $(head -c 2000 "$tmp/$name.json")"
            ;;
        expect-body-match:*)
            local re
            re=$(subst "${c#expect-body-match: }")
            grep -Eq -- "$re" "$tmp/$name.json" ||
                fail "$name: no line of the body matches $re: $(head -c 2000 "$tmp/$name.json")"
            ;;
        expect-empty)
            [ ! -s "$tmp/$name.json" ] || fail "$name: a body was sent: $(head -c 200 "$tmp/$name.json")"
            ;;
        capture:*)
            local spec=${c#capture: }
            vars[${spec%% *}]=$(jq -r "${spec#* }" "$tmp/$name.json")
            [ -n "${vars[${spec%% *}]}" ] && [ "${vars[${spec%% *}]}" != null ] ||
                fail "$name: nothing to capture with ${spec#* }"
            ;;
        capture-header:*)
            local spec=${c#capture-header: }
            vars[${spec%% *}]=$(header "$name" "${spec#* }")
            [ -n "${vars[${spec%% *}]}" ] || fail "$name: no header ${spec#* } to capture"
            ;;
        *) fail "$name: unknown directive: $c" ;;
        esac
    done
    echo "ok: $name"
}

count=0
# Name order, the same in every locale.
export LC_ALL=C
for f in "$cases_dir"/*.case; do
    run_case "$f"
    count=$((count + 1))
done
[ "$count" -gt 0 ] || fail "no cases in $cases_dir"
echo "ok: $count API cases on $backend"
