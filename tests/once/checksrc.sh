#!/usr/bin/env bash
# once/checksrc.sh - the banned-function check (style rule 10) over the
# whole tree. First proves the checker can fail: a planted strcpy/sprintf
# must be reported with file:line while snprintf, fgets and names inside
# comments and strings pass.
set -euo pipefail
src=${SB_SOURCE_DIR:?SB_SOURCE_DIR must point at the source tree}
check=$src/scripts/checksrc.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
cat > "$tmp/src/planted.c" <<'C'
/* strcpy(a, b) in a comment is not a call */
static void f(char *a, const char *b)
{
    snprintf(a, 8, "%s", "sprintf(");
    strcpy(a, b);
    (void)fgets(a, 8, stdin);
    int n = atoi (b);
}
C
if out=$(bash "$check" "$tmp" 2>&1); then
    echo "FAIL: checksrc passed a tree with strcpy and atoi" >&2
    exit 1
fi
grep -q "planted.c:5: banned function strcpy" <<<"$out" || {
    echo "FAIL: strcpy on line 5 not reported:" >&2; echo "$out" >&2; exit 1; }
grep -q "planted.c:7: banned function atoi" <<<"$out" || {
    echo "FAIL: atoi on line 7 not reported:" >&2; echo "$out" >&2; exit 1; }
if grep -q "planted.c:[1346]:" <<<"$out"; then
    echo "FAIL: false positive:" >&2; echo "$out" >&2; exit 1
fi

# The real tree.
bash "$check" "$src"
