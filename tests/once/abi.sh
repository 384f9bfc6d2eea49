#!/usr/bin/env bash
# once/abi.sh - the exported-symbol check (style rule 21, after libpq's
# exports.txt). tests/exports.txt is the checked-in list of every symbol
# libsqlbus.so exports: exactly the functions declared SB_API in
# include/sqlbus.h. The test fails with a diff when
#   1. the shared library exports anything else or misses one, or
#   2. the header's SB_API declarations and exports.txt disagree
#      (a new public function must be added to exports.txt on purpose).
# Regenerate after an intended API change with:
#   grep -E '^[[:space:]]*SB_API' include/sqlbus.h | sed -E \
#     's/^[[:space:]]*SB_API[^(]*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(.*/\1/' \
#     | LC_ALL=C sort > tests/exports.txt
set -euo pipefail
export LC_ALL=C
src=${SB_SOURCE_DIR:?SB_SOURCE_DIR must point at the source tree}
build=${SB_BUILD_DIR:?SB_BUILD_DIR must point at the build tree}
want=$src/tests/exports.txt
lib=$build/libsqlbus.so

[[ -s $want ]] || { echo "FAIL: $want is missing or empty" >&2; exit 1; }
if ! sort -c "$want" 2>/dev/null || [[ -n $(uniq -d "$want") ]]; then
    echo "FAIL: $want must be sorted (LC_ALL=C) with no duplicates" >&2
    exit 1
fi
[[ -e $lib ]] || { echo "FAIL: $lib not built" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^_' | sort > "$tmp/exported"
if ! diff -u --label exports.txt --label "libsqlbus.so (nm -D)" "$want" "$tmp/exported"; then
    echo "FAIL: libsqlbus.so exports differ from tests/exports.txt" \
         "(+ exported but not listed, - listed but not exported)" >&2
    status=1
fi

grep -E '^[[:space:]]*SB_API' "$src/include/sqlbus.h" |
    sed -E 's/^[[:space:]]*SB_API[^(]*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(.*/\1/' |
    sort > "$tmp/declared"
if ! diff -u --label exports.txt --label "SB_API in sqlbus.h" "$want" "$tmp/declared"; then
    echo "FAIL: SB_API declarations in include/sqlbus.h differ from" \
         "tests/exports.txt" >&2
    status=1
fi

if ((status == 0)); then
    echo "abi: $(wc -l < "$want") exported symbols match tests/exports.txt"
fi
exit $status
