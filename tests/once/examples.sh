#!/usr/bin/env bash
# once/examples.sh - the installed library, as a user gets it.
#
#  1. `cmake --install` the build tree into a temporary prefix and check the
#     layout: bin/sqlbus, include/sqlbus.h, libsqlbus.a, libsqlbus.so and a
#     sqlbus.pc that points into that prefix (GNUInstallDirs may choose lib
#     or lib/<multiarch>).
#  2. The installed sqlbus.h compiles on its own (C11, -Werror -pedantic).
#  3. The installed libsqlbus.so exports only sb_* symbols, exactly the
#     list in tests/exports.txt.
#  4. examples/ builds with its Makefile through pkg-config, shared and
#     static, warnings as errors.
#  5. For each variant: producer publishes N + 1 messages (a batch of N
#     and one inside its own transaction, with a row of example_orders),
#     the installed CLI publishes one "fail" message, worker acks the N + 1
#     and dead-letters the "fail" message after 3 attempts; `sqlbus queues
#     --json` and `sqlbus dlq list --json` agree.
#  6. SIGINT stops the worker gracefully: exit 0, counters printed, no
#     message lost or left leased.
set -euo pipefail
export LC_ALL=C
src=${SB_SOURCE_DIR:?SB_SOURCE_DIR must point at the source tree}
build=${SB_BUILD_DIR:?SB_BUILD_DIR must point at the build tree}
N=7

# A sanitizer build (SB_SANITIZE=ON) installs an instrumented library: the
# examples must then be built with the same compiler and sanitizers.
san_flags=
cache=$build/CMakeCache.txt
if grep -Eiq '^SB_SANITIZE:BOOL=(ON|1|TRUE|YES|Y)$' "$cache" 2>/dev/null; then
    san_flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
    build_cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")
    CC=${CC:-${build_cc:-cc}}
fi
CC=${CC:-cc}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
for tool in "$CC" make pkg-config nm jq; do
    command -v "$tool" >/dev/null 2>&1 || fail "this test needs $tool"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# Print a log file and fail.
fail_log() {
    local log=$1
    shift
    echo "FAIL: $*" >&2
    echo "--- $log:" >&2
    cat "$log" >&2 || true
    exit 1
}

# ---- 1. install ---------------------------------------------------------
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    fail_log "$tmp/install.log" "cmake --install $build --prefix $prefix failed"

mapfile -t pcs < <(find "$prefix" -name sqlbus.pc)
((${#pcs[@]} == 1)) ||
    fail "expected one installed sqlbus.pc under $prefix, found ${#pcs[@]}:" \
         "${pcs[*]:-none}"
pcdir=$(dirname "${pcs[0]}")
export PKG_CONFIG_PATH=$pcdir
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
pkg-config --exists --print-errors sqlbus || fail "pkg-config rejects $pcdir/sqlbus.pc"

version=$(pkg-config --modversion sqlbus)
want_version=$(sed -nE 's/^#define SB_VERSION_STRING "(.*)"$/\1/p' "$src/include/sqlbus.h")
[[ $version == "$want_version" ]] ||
    fail "sqlbus.pc says version $version, sqlbus.h says $want_version"

# The .pc paths must lead into the prefix installed to, not the configured
# CMAKE_INSTALL_PREFIX.
libdir=$(pkg-config --variable=libdir sqlbus)
includedir=$(pkg-config --variable=includedir sqlbus)
real_prefix=$(realpath "$prefix")
[[ -d $libdir && $(realpath "$libdir") == "$real_prefix"/* ]] ||
    fail "sqlbus.pc libdir '$libdir' is not inside the install prefix $prefix"
[[ -d $includedir && $(realpath "$includedir") == "$real_prefix"/* ]] ||
    fail "sqlbus.pc includedir '$includedir' is not inside the install prefix $prefix"
[[ $(realpath "$libdir") == $(realpath "$pcdir/..") ]] ||
    fail "sqlbus.pc is in $pcdir but its libdir is $libdir"
for f in "$includedir/sqlbus.h" "$libdir/libsqlbus.a" "$libdir/libsqlbus.so" \
         "$prefix/bin/sqlbus"; do
    [[ -e $f ]] || fail "$f was not installed"
done
cmp -s "$includedir/sqlbus.h" "$src/include/sqlbus.h" ||
    fail "the installed sqlbus.h differs from include/sqlbus.h"
sqlbus=$prefix/bin/sqlbus
"$sqlbus" --version >/dev/null || fail "the installed $sqlbus does not run"

# ---- 2. the header on its own --------------------------------------------
cat >"$tmp/header.c" <<'C'
#include <sqlbus.h>
int sb_header_check(void);
int sb_header_check(void) { return (int)sizeof(sb_error) + SB_OK; }
C
read -ra pc_cflags <<<"$(pkg-config --cflags sqlbus)"
"$CC" -std=c11 -Wall -Wextra -Werror -pedantic "${pc_cflags[@]}" \
    -c "$tmp/header.c" -o "$tmp/header.o" 2>"$tmp/header.log" ||
    fail_log "$tmp/header.log" "the installed sqlbus.h does not compile standalone" \
             "with $CC -std=c11 -Wall -Wextra -Werror -pedantic"

# ---- 3. exported symbols --------------------------------------------------
so=$libdir/libsqlbus.so
nm -D --defined-only "$so" | awk 'NF >= 3 {print $3}' | sort >"$tmp/exported"
[[ -s $tmp/exported ]] || fail "nm -D found no exported symbols in $so"
if grep -v '^sb_' "$tmp/exported" >"$tmp/foreign"; then
    echo "FAIL: the installed $so exports symbols outside sb_*:" >&2
    cat "$tmp/foreign" >&2
    exit 1
fi
diff -u --label tests/exports.txt --label "installed libsqlbus.so" \
    "$src/tests/exports.txt" "$tmp/exported" >&2 ||
    fail "the installed libsqlbus.so exports differ from tests/exports.txt"

# ---- 4. build the examples ------------------------------------------------
cp -R "$src/examples" "$tmp/examples"
rm -f "$tmp/examples"/{producer,worker,producer-static,worker-static}
ex_cflags="-std=c11 -O2 -g -Wall -Wextra -Wpedantic -Wshadow"
ex_cflags+=" -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror"
ex_cflags+=${san_flags:+ $san_flags}
make -C "$tmp/examples" CC="$CC" CFLAGS="$ex_cflags" all static \
    >"$tmp/make.log" 2>&1 ||
    fail_log "$tmp/make.log" "make -C examples (shared and static) failed"
for p in producer worker producer-static worker-static; do
    [[ -x $tmp/examples/$p ]] || fail_log "$tmp/make.log" "make did not build $p"
done
if command -v readelf >/dev/null 2>&1; then
    for p in producer worker; do
        readelf -d "$tmp/examples/$p" | grep -q 'NEEDED.*libsqlbus\.so' ||
            fail "$p is not linked with the shared libsqlbus"
    done
    for p in producer-static worker-static; do
        if readelf -d "$tmp/examples/$p" | grep -q 'NEEDED.*libsqlbus\.so'; then
            fail "$p needs libsqlbus.so; the static build must not"
        fi
    done
fi

# ---- 5. run them ----------------------------------------------------------
# jq over `sqlbus queues --json`: field $2 of queue $1 (0 when absent).
queue_field() {
    "$sqlbus" --db "$url" queues --json |
        jq -r --arg q "$1" --arg f "$2" \
            '[.[] | select(.queue == $q)][0] // {} | .[$f] // 0'
}

run_variant() {
    local variant=$1 suffix=$2 db=$3
    local producer=$tmp/examples/producer$suffix worker=$tmp/examples/worker$suffix
    local queue=orders out=$tmp/$variant
    url=sqlite:$db
    rm -f "$db" "$db-wal" "$db-shm"

    # producer: N in a batch + 1 in a transaction.
    "$producer" "$url" "$queue" "$N" >"$out.producer" 2>"$out.producer.err" ||
        fail_log "$out.producer.err" "$variant: producer exited $?"
    local ids
    ids=$(wc -l <"$out.producer")
    ((ids == N + 1)) ||
        fail_log "$out.producer" "$variant: producer printed $ids ids, want $((N + 1))"
    grep -Evq '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' \
        "$out.producer" && fail_log "$out.producer" "$variant: producer printed a non-UUIDv7 line"
    [[ $(sort -u "$out.producer" | wc -l) -eq $((N + 1)) ]] ||
        fail_log "$out.producer" "$variant: producer printed duplicate ids"
    [[ $(queue_field "$queue" ready) -eq $((N + 1)) ]] ||
        fail "$variant: $queue holds $(queue_field "$queue" ready) ready messages" \
             "after the producer, want $((N + 1))"

    # One poison message, through the installed CLI.
    local fail_id
    fail_id=$(printf 'fail: card declined' |
        "$sqlbus" --db "$url" publish --queue "$queue" --header sb-message-type=order) ||
        fail "$variant: sqlbus publish of the fail message failed"

    # worker: runs until the queue is idle.
    local rc=0
    timeout 120 "$worker" "$url" "$queue" 2 >"$out.worker" 2>"$out.worker.err" || rc=$?
    ((rc == 0)) || { cat "$out.worker" >&2; fail_log "$out.worker.err" "$variant: worker exited $rc"; }

    local stats want
    stats=$(grep '^stats: ' "$out.worker" || true)
    want="stats: acked=$((N + 1)) naked=2 dead_lettered=1 lost_leases=0 handed_back=0"
    [[ $stats == "$want" ]] ||
        fail_log "$out.worker" "$variant: worker counters are '$stats', want '$want'"
    local i
    for ((i = 1; i <= N + 1; i++)); do
        [[ $(grep -c "^handled .* type order: order $i\$" "$out.worker") -eq 1 ]] ||
            fail_log "$out.worker" "$variant: 'order $i' was not handled exactly once"
    done
    [[ $(grep -c "^failed  $fail_id attempt [123]: fail: card declined\$" "$out.worker") -eq 3 ]] ||
        fail_log "$out.worker" "$variant: the fail message did not fail 3 times"

    # The queue is empty; the poison message is the one dead letter.
    local f
    for f in ready delayed in_flight; do
        [[ $(queue_field "$queue" "$f") -eq 0 ]] ||
            fail "$variant: $queue has $f=$(queue_field "$queue" "$f") after the worker"
    done
    [[ $(queue_field "$queue" dead_lettered) -eq 1 ]] ||
        fail "$variant: queues --json counts $(queue_field "$queue" dead_lettered)" \
             "dead letters of $queue, want 1"
    "$sqlbus" --db "$url" dlq list --queue "$queue" --json >"$out.dlq" ||
        fail "$variant: sqlbus dlq list --json failed"
    local got
    got=$(jq -r 'length' "$out.dlq")
    ((got == 1)) || fail_log "$out.dlq" "$variant: dlq list shows $got letters, want 1"
    got=$(jq -r '.[0] | [.original_id, .failed_queue, .attempts, .exception_type,
                         .headers["sb-message-type"]] | join(" ")' "$out.dlq")
    want="$fail_id $queue 3 example:fail order"
    [[ $got == "$want" ]] ||
        fail_log "$out.dlq" "$variant: the dead letter is '$got', want '$want'"
    echo "examples: $variant: $((N + 1)) acked, 1 dead-lettered ($fail_id)"
}

LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    run_variant shared "" "$tmp/ex.db"
run_variant static -static "$tmp/ex-static.db"

# The transactional publish also wrote the application's own row.
if command -v sqlite3 >/dev/null 2>&1; then
    n=$(sqlite3 "$tmp/ex.db" 'SELECT group_concat(n) FROM example_orders')
    [[ $n == "$((N + 1))" ]] ||
        fail "example_orders holds '$n', want the one row $((N + 1))"
fi

# ---- 6. SIGINT stops the worker gracefully --------------------------------
url=sqlite:$tmp/sigint.db
total=5000
"$tmp/examples/producer-static" "$url" big $((total - 1)) >/dev/null 2>"$tmp/sig.producer.err" ||
    fail_log "$tmp/sig.producer.err" "producer of $total messages failed"
"$tmp/examples/worker-static" "$url" big 2 >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
for ((i = 0; i < 200; i++)); do
    grep -q '^handled ' "$tmp/sig.out" 2>/dev/null && break
    sleep 0.05
done
kill -INT "$pid" 2>/dev/null || true
rc=0
wait "$pid" || rc=$?
((rc == 0)) || fail_log "$tmp/sig.err" "worker exited $rc after SIGINT, want 0"
acked=$(sed -nE 's/^stats: acked=([0-9]+) .*/\1/p' "$tmp/sig.out")
[[ -n $acked ]] || fail_log "$tmp/sig.out" "worker printed no counters after SIGINT"
left=$(queue_field big ready)
inflight=$(queue_field big in_flight)
((acked + left == total && inflight == 0)) ||
    fail "after SIGINT: $acked acked + $left ready != $total, or $inflight still leased"
if ((acked < total)); then
    grep -q 'interrupted, stopping' "$tmp/sig.err" ||
        fail_log "$tmp/sig.err" "worker stopped early without saying it was interrupted"
    echo "examples: SIGINT: stopped after $acked of $total, $left left in the queue"
else
    echo "examples: SIGINT: the worker finished all $total before the signal"
fi
echo "examples: ok"
