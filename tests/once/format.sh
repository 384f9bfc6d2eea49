#!/usr/bin/env bash
# once/format.sh - the layout check (style rule 21): every tracked C
# file of src, include, tests, bench and examples is as clang-format
# lays it out with the committed .clang-format (`make format` applies
# it). First proves it can fail: a badly laid out file must be reported.
set -euo pipefail
src=${SB_SOURCE_DIR:?SB_SOURCE_DIR must point at the source tree}
command -v clang-format >/dev/null || {
    echo "FAIL: clang-format is not installed (scripts/install-deps.sh)" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/.clang-format" "$tmp/"
printf 'int f(int a){if(a)return 1;return 0;}\n' > "$tmp/bad.c"
if clang-format --dry-run -Werror "$tmp/bad.c" 2>/dev/null; then
    echo "FAIL: the check passed a badly laid out file" >&2
    exit 1
fi
cd "$src"
mapfile -t files < <(find src include tests bench examples -name '*.[ch]' \
    -not -path '*/node_modules/*' | LC_ALL=C sort)
if ! clang-format --dry-run -Werror "${files[@]}"; then
    echo "format: run 'make format' (clang-format with .clang-format)" >&2
    exit 1
fi
echo "format: ${#files[@]} files laid out"
