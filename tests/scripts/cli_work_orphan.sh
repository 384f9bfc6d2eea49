#!/usr/bin/env bash
# cli_work_orphan.sh - a handler of `sqlbus work` never outlives its
# worker (rule T30, issue 19): SIGKILL of the worker kills the command and
# the processes it started; a timeout kills the command's whole process
# group; the command's stdin holds the whole payload even when the worker
# dies while the command runs.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# gone_within SECONDS PID...: every PID has exited (zombies count as gone:
# in a container without a reaping init, killed orphans stay zombies).
gone_within() {
    local limit=$(($1 * 10)) i=0 p alive
    shift
    while :; do
        alive=
        for p in "$@"; do
            is_alive "$p" && alive="$alive $p"
        done
        [ -z "$alive" ] && return 0
        i=$((i + 1))
        [ $i -le $limit ] || {
            ps -o pid,ppid,pgid,stat,args -p "${alive# }" >&2 || true
            return 1
        }
        sleep 0.1
    done
}

# T30: SIGKILL of `sqlbus work` kills the running command and its
# children (a background `sleep`), so a second worker that runs the
# message after the lease never runs it beside a survivor.
handler slow "sleep 1000 & echo \$! > '$tmp/child.pid'
echo \$\$ > '$tmp/handler.pid'
wait"
printf 'slow' | sb publish --queue orphan >/dev/null
"$SQLBUS" --prefix "$prefix" work --queue orphan --lease 30s -- "$tmp/slow" \
    2>"$tmp/worker.err" &
worker=$!
bg_pids+=("$worker")
wait_for_file "$tmp/handler.pid"
wait_for_file "$tmp/child.pid"
hpid=$(cat "$tmp/handler.pid")
cpid=$(cat "$tmp/child.pid")
is_alive "$hpid" && is_alive "$cpid" || fail "the handler is not running"
kill -KILL "$worker"
wait_exit "$worker" 10
gone_within 2 "$hpid" "$cpid" ||
    fail "the handler ($hpid) or its child ($cpid) survived SIGKILL of the worker"
ok "SIGKILL of the worker kills the handler and its child"

# T30: the same with several handlers running at once.
handler many "sleep 1000 & echo \$! > '$tmp/many-child.'\$SQLBUS_MESSAGE_ID.pid
echo \$\$ > '$tmp/many.'\$SQLBUS_MESSAGE_ID.pid
wait"
ids=()
for i in 1 2 3; do ids+=("$(printf 'm%s' $i | sb publish --queue many)"); done
"$SQLBUS" --prefix "$prefix" work --queue many --concurrency 3 -- "$tmp/many" \
    2>"$tmp/worker-many.err" &
worker=$!
bg_pids+=("$worker")
pids=()
for id in "${ids[@]}"; do
    wait_for_file "$tmp/many.$id.pid"
    wait_for_file "$tmp/many-child.$id.pid"
    pids+=("$(cat "$tmp/many.$id.pid")" "$(cat "$tmp/many-child.$id.pid")")
done
kill -KILL "$worker"
wait_exit "$worker" 10
gone_within 2 "${pids[@]}" ||
    fail "a handler or its child survived SIGKILL of a worker running three"
ok "SIGKILL of the worker kills every running handler and its children"

# T30: a timeout kills the command's whole process group: its child and
# a grandchild that ignores SIGTERM.
handler deep "trap '' TERM
sleep 1000 & echo \$! > '$tmp/deep-child.pid'
bash -c 'trap \"\" TERM; sleep 1000 & echo \$! > \"$tmp/deep-grandchild.pid\"; wait' &
wait"
printf 'deep' | sb publish --queue deep >/dev/null
sb work --queue deep --once --max-attempts 1 --timeout 1s -- "$tmp/deep"
[ "$(sb dlq list --queue deep --json | jq -r '.[0].exception_type')" = timeout ] ||
    fail "deep handler not failed with timeout"
gone_within 2 "$(cat "$tmp/deep-child.pid")" "$(cat "$tmp/deep-grandchild.pid")" ||
    fail "a descendant of the handler survived its timeout"
ok "a timeout kills the handler's descendants"

# T30: the command's stdin holds the whole payload before the command
# starts. The handler hands its stdin to a reader that left the process
# group (setsid: nothing of sqlbus can kill it) and waits until the worker
# is dead before reading; it must still read every byte, never a payload
# cut short by the worker's death.
if command -v setsid >/dev/null 2>&1; then
    head -c 1048576 /dev/zero | tr '\0' p >"$tmp/payload"
    # (fd 3: bash gives a background job /dev/null as its stdin)
    handler reader "exec 3<&0
setsid bash -c 'echo \$\$ > \"$tmp/reader.pid\"
while [ ! -e \"$tmp/go\" ]; do sleep 0.05; done
wc -c <&3 > \"$tmp/len\"' &
wait_for() { while [ ! -e \"\$1\" ]; do sleep 0.05; done; }
wait_for '$tmp/reader.pid'
echo \$\$ > '$tmp/started.pid'
sleep 1000"
    sb publish --queue trunc "$tmp/payload" >/dev/null
    "$SQLBUS" --prefix "$prefix" work --queue trunc -- "$tmp/reader" \
        2>"$tmp/worker2.err" &
    worker=$!
    bg_pids+=("$worker")
    wait_for_file "$tmp/started.pid"
    kill -KILL "$worker"
    wait_exit "$worker" 10
    touch "$tmp/go"
    wait_for_file "$tmp/len"
    len=$(tr -d ' ' <"$tmp/len")
    [ "$len" = 1048576 ] ||
        fail "the handler's stdin held $len of 1048576 bytes after the worker died"
    ok "stdin holds the whole payload even when the worker dies"
else
    echo "skipped the payload case: no setsid"
fi
