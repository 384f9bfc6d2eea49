# serve_common.bash - sourced after cli_common.bash by the tests that run
# `sqlbus serve` over real HTTP (not a test itself).

command -v curl >/dev/null || fail "these tests need curl (apt-get install curl)"

# start_server NAME ARGS...: `sqlbus serve` on a free loopback port with
# this test's database and prefix; sets $pid and $base. Its stderr is in
# $tmp/NAME.err.
start_server() {
    local name=$1
    shift
    : >"$tmp/$name.err"
    "$SQLBUS" --prefix "$prefix" serve --listen 127.0.0.1:0 "$@" 2>"$tmp/$name.err" &
    pid=$!
    bg_pids+=("$pid")
    local i port=""
    for i in $(seq 1 300); do
        port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$tmp/$name.err")
        [ -n "$port" ] && break
        is_alive "$pid" || fail "serve exited: $(cat "$tmp/$name.err")"
        sleep 0.1
    done
    [ -n "$port" ] || fail "serve did not report its port: $(cat "$tmp/$name.err")"
    base="http://127.0.0.1:$port"
}

# req NAME CURL-ARGS...: the response's status in $tmp/NAME.status,
# headers in $tmp/NAME.h, body in $tmp/NAME.json.
req() {
    local name=$1
    shift
    curl -s -o "$tmp/$name.json" -D "$tmp/$name.h" -w '%{http_code}' "$@" >"$tmp/$name.status" ||
        fail "curl $*"
}

# expect NAME STATUS [JQ-FILTER VALUE]...: the status, and each filter's
# value in the body.
expect() {
    local name=$1 status=$2
    shift 2
    [ "$(cat "$tmp/$name.status")" = "$status" ] ||
        fail "$name: status $(cat "$tmp/$name.status"), want $status: $(cat "$tmp/$name.json")"
    while [ $# -ge 2 ]; do
        local got
        got=$(jq -r "$1" "$tmp/$name.json")
        [ "$got" = "$2" ] || fail "$name: $1 is \"$got\", want \"$2\""
        shift 2
    done
}

# header NAME FIELD: one response header's value (case-insensitive name).
header() { tr -d '\r' <"$tmp/$1.h" | sed -n "s/^$2: //Ip" | head -n1; }

# within SECONDS WHAT CMD...: poll CMD (every 0.25 s) until it succeeds;
# fail naming WHAT after SECONDS, or as soon as serve ($pid) has exited.
within() {
    local limit=$1 what=$2
    shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        is_alive "$pid" || fail "serve exited while waiting for $what: $(cat "$tmp/serve.err")"
        [ $SECONDS -lt $deadline ] || fail "no $what within ${limit}s"
        sleep 0.25
    done
}
