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

# The library's own bans: malloc, printf and exit in a library module are
# reported; the same calls in the program (src/cli) and the seam
# (src/core/alloc.c) are not, nor a member named free (p->free(x)).
rm "$tmp/src/planted.c"
mkdir -p "$tmp/src/errors" "$tmp/src/cli" "$tmp/src/core"
cat > "$tmp/src/errors/planted.c" <<'C'
static void g(struct s *p, char *x)
{
    char *y = malloc(8);
    p->free(x);
    printf("%s", y);
    exit(1);
}
C
cat > "$tmp/src/cli/ok.c" <<'C'
static void h(void) { char *y = malloc(8); free(y); printf("x"); exit(0); }
C
cat > "$tmp/src/core/alloc.c" <<'C'
static void *a(size_t n) { return malloc(n); }
C
if out=$(bash "$check" "$tmp" 2>&1); then
    echo "FAIL: checksrc passed malloc/printf/exit in the library" >&2
    exit 1
fi
for want in "planted.c:3: malloc()" "planted.c:5: printf()" "planted.c:6: exit()"; do
    grep -qF "$want" <<<"$out" || {
        echo "FAIL: $want not reported:" >&2; echo "$out" >&2; exit 1; }
done
if grep -q "planted.c:4:\|ok.c\|alloc.c" <<<"$out"; then
    echo "FAIL: false positive:" >&2; echo "$out" >&2; exit 1
fi

# The real tree.
bash "$check" "$src"
