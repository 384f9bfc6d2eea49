#!/usr/bin/env bash
# checksrc.sh - refuse banned C library calls (style rule 10, after curl's
# checksrc): strcpy, strcat, sprintf, vsprintf, gets, strtok, atoi, atol,
# sscanf. Use bounded, checked equivalents (sb__strlcpy, sb_buf, snprintf,
# strtoll with end checks, sb_parse_*). In the library's modules (src/core,
# db, transport, channel, errors) also malloc, calloc, realloc, free (the
# allocator seam, src/core/alloc.c, is the one exception), printf,
# fprintf, puts, fputs, putchar, exit, _Exit and abort: a library
# allocates through sb__malloc, reports on the caller's sb_error and logs
# through the caller's callback.
#
# Usage: scripts/checksrc.sh [ROOT]
#   ROOT defaults to $SB_SOURCE_DIR, else the directory above this script.
# Scans every .c and .h under ROOT/{src,include,tests,examples,bench}.
# Comments and string/character literals are ignored, so prose may name a
# banned function. Prints FILE:LINE: name(...) for each use; exit 1 if any.
set -euo pipefail

root=${1:-${SB_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
if [[ ! -d $root ]]; then
    echo "checksrc: no such directory: $root" >&2
    exit 2
fi

dirs=()
for d in src include tests examples bench; do
    [[ -d $root/$d ]] && dirs+=("$root/$d")
done
if ((${#dirs[@]} == 0)); then
    echo "checksrc: nothing to check under $root" >&2
    exit 2
fi

mapfile -d '' files < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
if ((${#files[@]} == 0)); then
    echo "checksrc: no .c/.h files under $root" >&2
    exit 2
fi

# awk strips /* */ comments (across lines), // comments and the contents of
# "..." and '...' literals, then looks for a call: the name not preceded by
# an identifier character (so snprintf, vsnprintf, fgets, strtok_r and
# atoll pass) and followed by optional blanks and "(".
status=0
awk '
FNR == 1 { inblock = 0 }
{
    line = $0; out = ""; i = 1; n = length(line)
    while (i <= n) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (inblock) {
            if (c2 == "*/") { inblock = 0; i += 2; out = out " " } else i++
            continue
        }
        if (c2 == "/*") { inblock = 1; i += 2; continue }
        if (c2 == "//") break
        if (c == "\"" || c == "\047") {
            q = c; out = out q; i++
            while (i <= n) {
                d = substr(line, i, 1)
                if (d == "\\") { i += 2; continue }
                if (d == q) break
                i++
            }
            out = out q; i++
            continue
        }
        out = out c; i++
    }
    rest = out
    # The library allocates through the seam and never prints or exits:
    # raw allocation, output and exit calls are banned in its modules.
    if (FILENAME ~ /\/src\/(core|db|transport|channel|errors)\// &&
        FILENAME !~ /\/src\/core\/alloc\.c$/) {
        lib = rest
        while (match(lib, /(^|[^A-Za-z0-9_.>])(malloc|calloc|realloc|free|printf|fprintf|puts|fputs|putchar|exit|_Exit|abort)[ \t]*\(/)) {
            hit = substr(lib, RSTART, RLENGTH)
            sub(/^[^A-Za-z_]/, "", hit)
            sub(/[ \t]*\($/, "", hit)
            printf "%s:%d: %s() in the library (use the allocator seam, sb_error or the log callback): %s\n", FILENAME, FNR, hit, $0
            found = 1
            lib = substr(lib, RSTART + RLENGTH)
        }
    }
    while (match(rest, /(^|[^A-Za-z0-9_])(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|sscanf)[ \t]*\(/)) {
        hit = substr(rest, RSTART, RLENGTH)
        sub(/^[^A-Za-z_]/, "", hit)
        sub(/[ \t]*\($/, "", hit)
        printf "%s:%d: banned function %s(): %s\n", FILENAME, FNR, hit, $0
        found = 1
        rest = substr(rest, RSTART + RLENGTH)
    }
}
END { exit found ? 1 : 0 }
' "${files[@]}" || status=$?

if ((status == 1)); then
    echo "checksrc: banned functions found (see style rule 10)" >&2
    exit 1
elif ((status != 0)); then
    echo "checksrc: awk failed ($status)" >&2
    exit 2
fi
echo "checksrc: ${#files[@]} files clean"
