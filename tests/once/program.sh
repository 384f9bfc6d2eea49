#!/usr/bin/env bash
# once/program.sh - the `sqlbus` program is a client of the public API
# (issue 18): it links libsqlbus.so and needs nothing from it but the
# functions of tests/exports.txt (what include/sqlbus.h declares SB_API).
#
#  1. Sources: src/cli and src/server include no internal header but
#     core's (the program compiles its own copy of core, sb__* utilities
#     libsqlbus.so does not export) and their own. A struct body of
#     another module (bus->pool) never shows as a symbol, so this is
#     checked in the text.
#  2. The linked program ($SQLBUS): NEEDED libsqlbus.so.N; no undefined
#     sb__ symbol; every undefined sb_ symbol is listed in
#     tests/exports.txt; no sb symbol in its own dynamic table (its copy
#     of core interposes nothing in the library).
#  3. libsqlbus.so exports no sb__ symbol (abi.sh compares the whole list).
# First both checks are shown to fail: a planted source that includes
# errors/errors.h, and a planted program that needs sb__planted from a
# planted shared library, must each be reported.
set -euo pipefail
export LC_ALL=C
src=${SB_SOURCE_DIR:?SB_SOURCE_DIR must point at the source tree}
build=${SB_BUILD_DIR:?SB_BUILD_DIR must point at the build tree}
program=${SQLBUS:?SQLBUS must name the built sqlbus program}
exports=$src/tests/exports.txt
CC=${CC:-cc}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
for tool in nm readelf "$CC"; do
    command -v "$tool" >/dev/null 2>&1 || fail "this test needs $tool"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every `#include "dir/..."` of ROOT's src/cli and src/server whose dir is
# not core or server, as FILE:LINE: text. Prints nothing when clean.
internal_includes() {
    local root=$1
    grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' \
        "$root"/src/cli/*.[ch] "$root"/src/server/*.[ch] 2>/dev/null |
        grep -vE '#[[:space:]]*include[[:space:]]*"(core|server)/' || true
}

# What BIN needs or offers against the public API, one line per defect.
# Prints nothing when clean.
program_defects() {
    local bin=$1 list=$2 dynamic
    dynamic=$(readelf -d "$bin")
    grep -qE 'NEEDED.*\[libsqlbus\.so\.[0-9]+\]' <<<"$dynamic" ||
        echo "$bin is not linked with the shared libsqlbus"
    nm -D --undefined-only "$bin" | awk '$NF ~ /^sb__/ {
        print "needs the internal symbol " $NF }'
    nm -D --undefined-only "$bin" |
        awk '$NF ~ /^sb_/ && $NF !~ /^sb__/ { print $NF }' |
        sort -u | comm -23 - "$list" | sed 's/^/needs an unlisted symbol /'
    nm -D --defined-only "$bin" | awk '$NF ~ /^sb_/ {
        print "exports " $NF " (interposes on the library)" }'
}

# ---- the checkers can fail ------------------------------------------------
mkdir -p "$tmp/tree/src/cli" "$tmp/tree/src/server"
printf '#include "core/core.h"\n#include "server/api.h"\n' \
    >"$tmp/tree/src/server/good.c"
printf '#include "cli.h"\n#include "errors/errors.h"\n' \
    >"$tmp/tree/src/cli/planted.c"
out=$(internal_includes "$tmp/tree")
grep -q 'planted.c:2:' <<<"$out" ||
    fail "a planted include of errors/errors.h was not reported: $out"
grep -q 'good.c' <<<"$out" && fail "core/ and server/ includes reported: $out"

cat >"$tmp/lib.c" <<'C'
int sb__planted(void) { return 1; }
int sb_listed(void) { return 2; }
C
cat >"$tmp/main.c" <<'C'
int sb__planted(void);
int sb_listed(void);
int main(void) { return sb__planted() + sb_listed(); }
C
"$CC" -shared -fPIC -o "$tmp/libsqlbus.so.0" -Wl,-soname,libsqlbus.so.0 \
    "$tmp/lib.c" || fail "cannot build the planted library"
"$CC" -o "$tmp/planted" "$tmp/main.c" "$tmp/libsqlbus.so.0" ||
    fail "cannot build the planted program"
echo sb_listed >"$tmp/list"
out=$(program_defects "$tmp/planted" "$tmp/list")
grep -q 'needs the internal symbol sb__planted' <<<"$out" ||
    fail "a program needing sb__planted was not reported: $out"
[[ $(wc -l <<<"$out") == 1 ]] || fail "false positives: $out"

# ---- the real tree ----------------------------------------------------------
status=0
out=$(internal_includes "$src")
if [[ -n $out ]]; then
    echo "FAIL: the program includes internal headers of the library" \
         "(use include/sqlbus.h, or move the code into the library):" >&2
    echo "$out" >&2
    status=1
fi
[[ -x $program ]] || fail "$program is not built"
out=$(program_defects "$program" "$exports")
if [[ -n $out ]]; then
    echo "FAIL: $program against the public API:" >&2
    echo "$out" >&2
    status=1
fi
lib=$build/libsqlbus.so
[[ -e $lib ]] || fail "$lib not built"
out=$(nm -D --defined-only "$lib" | awk '$NF ~ /^sb__/ { print $NF }')
if [[ -n $out ]]; then
    echo "FAIL: libsqlbus.so exports internal symbols:" >&2
    echo "$out" >&2
    status=1
fi
if ((status == 0)); then
    n=$(nm -D --undefined-only "$program" | awk '$NF ~ /^sb_/' | wc -l)
    echo "program: $program links libsqlbus.so and uses $n public" \
         "functions, no internal one"
fi
exit $status
