/*
 * stack.c - the first stack frame of an exception's stack trace, for the
 * "Exception Type and Stack Trace" classifier (rule E12). The formats and
 * the choice of frame are described at sb__stack_first_frame in
 * classify.h.
 *
 * One pass over the lines. Each line is read by a fixed set of matchers,
 * each of which scans it a bounded number of times, and the message
 * search is linear, so the work is linear in the trace on any input: no
 * regular expressions, no rescanning, no allocation.
 */
#include "errors/classify.h"

#include <string.h>

#define NONE SIZE_MAX

/* ---- the message search ---- */

/*
 * Crochemore-Perrin two-way string matching (J. ACM 38(3), 1991): linear
 * time and constant space for any needle and haystack, where a naive
 * search is quadratic on inputs like "aaa...ab". The needle is ": "
 * followed by the exception message, read through needle_at() so no copy
 * is made. Indexes below 0 are held as SIZE_MAX and wrap on purpose.
 */
typedef struct finder {
    const unsigned char *msg;
    size_t n;    /* needle length: 2 + message length */
    size_t ms;   /* last index of the left half of the critical
                    factorisation; SIZE_MAX when that half is empty */
    size_t p;    /* shift after the right half matched and the left not */
    size_t mem0; /* bytes known to match after that shift (periodic) */
} finder;

static unsigned char needle_at(const finder *f, size_t i)
{
    SB_ASSERT(i < f->n);
    return i < 2 ? (unsigned char)": "[i] : f->msg[i - 2];
}

/* The maximal suffix of the needle under the byte order (its reverse when
 * `rev`): returns the index before it starts and sets its period. */
static size_t max_suffix(const finder *f, bool rev, size_t *period)
{
    size_t ip = SIZE_MAX, jp = 0, k = 1, p = 1;
    while (jp + k < f->n) {
        unsigned char a = needle_at(f, ip + k), b = needle_at(f, jp + k);
        if (a == b) {
            if (k == p) {
                jp += p;
                k = 1;
            } else {
                k++;
            }
        } else if (rev ? a < b : a > b) {
            jp += k;
            k = 1;
            p = jp - ip;
        } else {
            ip = jp++;
            k = p = 1;
        }
    }
    *period = p;
    return ip;
}

static void finder_init(finder *f, const char *msg, size_t msg_len)
{
    f->msg = (const unsigned char *)msg;
    f->n = msg_len + 2;
    size_t p1, p2;
    size_t ms1 = max_suffix(f, false, &p1);
    size_t ms2 = max_suffix(f, true, &p2);
    /* The later of the two starts gives a critical factorisation (+1 so
     * SIZE_MAX, an empty left half, is the smallest). */
    f->ms = ms2 + 1 > ms1 + 1 ? ms2 : ms1;
    f->p = ms2 + 1 > ms1 + 1 ? p2 : p1;
    bool periodic = true;
    for (size_t i = 0; i < f->ms + 1 && periodic; i++)
        periodic = needle_at(f, i) == needle_at(f, i + f->p);
    if (periodic) {
        f->mem0 = f->n - f->p;
    } else {
        size_t right = f->n - f->ms - 1;
        f->mem0 = 0;
        f->p = (f->ms > right ? f->ms : right) + 1;
    }
}

/* The offset of the first needle in h[from..len), or NONE. */
static size_t finder_find(const finder *f, const unsigned char *h, size_t len,
                          size_t from)
{
    size_t pos = from, mem = 0;
    while (pos <= len && len - pos >= f->n) {
        size_t k = f->ms + 1 > mem ? f->ms + 1 : mem;
        while (k < f->n && needle_at(f, k) == h[pos + k])
            k++;
        if (k < f->n) {
            pos += k - f->ms;
            mem = 0;
            continue;
        }
        k = f->ms + 1;
        while (k > mem && needle_at(f, k - 1) == h[pos + k - 1])
            k--;
        if (k <= mem)
            return pos;
        pos += f->p;
        mem = f->mem0;
    }
    return NONE;
}

/* ---- lines ---- */

typedef struct scanner {
    const char *t;
    size_t len;
    size_t pos; /* start of the next line; > len when done */
    bool holes; /* a message to remove was given */
    finder f;
    size_t hole, hole_end; /* the next hole [hole, hole_end); NONE: none */
} scanner;

typedef struct line {
    const char *s;
    size_t n;      /* without the '\n' and a final '\r' */
    bool opaque;   /* holds a hole or a control character */
    size_t arrows; /* " ---> " outside the holes */
} line;

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_xdigit(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void next_hole(scanner *sc, size_t from)
{
    size_t at = sc->holes ? finder_find(&sc->f, (const unsigned char *)sc->t,
                                        sc->len, from)
                          : NONE;
    sc->hole = at == NONE ? NONE : at + 2;
    sc->hole_end = at == NONE ? NONE : at + sc->f.n;
}

static void scanner_init(scanner *sc, const char *trace, size_t len,
                         const char *message)
{
    sc->t = trace;
    sc->len = len;
    sc->pos = 0;
    size_t m = message != NULL ? strlen(message) : 0;
    sc->holes = m > 0 && m <= len;
    if (sc->holes)
        finder_init(&sc->f, message, m);
    next_hole(sc, 0);
}

static size_t newline_from(const scanner *sc, size_t from)
{
    const char *nl = memchr(sc->t + from, '\n', sc->len - from);
    return nl != NULL ? (size_t)(nl - sc->t) : sc->len;
}

static size_t count_arrows(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i + 6 <= n; i++) {
        if (s[i] == ' ' && memcmp(s + i, " ---> ", 6) == 0) {
            count++;
            i += 5;
        }
    }
    return count;
}

/* The next line. A hole's newlines do not end a line, so the text around
 * a removed message stays one line. */
static bool next_line(scanner *sc, line *ln)
{
    if (sc->pos > sc->len)
        return false;
    size_t start = sc->pos, seg = start, arrows = 0;
    bool opaque = false;
    size_t nl = newline_from(sc, start);
    while (sc->hole <= nl) {
        arrows += count_arrows(sc->t + seg, sc->hole - seg);
        seg = sc->hole_end;
        opaque = true;
        nl = newline_from(sc, sc->hole_end);
        next_hole(sc, sc->hole_end);
    }
    size_t end = nl;
    if (end > start && sc->t[end - 1] == '\r')
        end--;
    if (seg < end)
        arrows += count_arrows(sc->t + seg, end - seg);
    for (size_t i = start; i < end && !opaque; i++) {
        unsigned char c = (unsigned char)sc->t[i];
        opaque = (c < 0x20 && c != '\t') || c == 0x7f;
    }
    ln->s = sc->t + start;
    ln->n = end - start;
    ln->opaque = opaque;
    ln->arrows = arrows;
    sc->pos = nl + 1;
    return true;
}

/* ---- text helpers (each reads s[0..n) a bounded number of times) ---- */

static size_t skip_blanks(const char *s, size_t i, size_t n)
{
    while (i < n && is_blank(s[i]))
        i++;
    return i;
}

static size_t trim_end(const char *s, size_t n)
{
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    return n;
}

static bool has_prefix(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s + n - k, lit, k) == 0;
}

/* s[0..n) with blanks trimmed at both ends equals `lit`. */
static bool is_exactly(const char *s, size_t n, const char *lit)
{
    n = trim_end(s, n);
    size_t i = skip_blanks(s, 0, n);
    return n - i == strlen(lit) && memcmp(s + i, lit, n - i) == 0;
}

static size_t index_of(const char *s, size_t from, size_t n, char c)
{
    const char *p = from < n ? memchr(s + from, c, n - from) : NULL;
    return p != NULL ? (size_t)(p - s) : n;
}

static bool has_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (is_blank(s[i]))
            return true;
    return false;
}

/* ASCII-case-insensitive search for a literal of lower-case letters. */
static bool contains_ci(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && (s[i + j] | 0x20) == lit[j])
            j++;
        if (j == k)
            return true;
    }
    return false;
}

/* s ends with ':' and decimal digits ("x.js:3:1", "Orders.java:42"). */
static bool ends_with_line_number(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && is_digit(s[i - 1]))
        i--;
    return i < n && i > 0 && s[i - 1] == ':';
}

/* The part of a path after its last '/' or '\\'. */
static void base_name(const char **s, size_t *n)
{
    size_t start = 0;
    for (size_t i = 0; i < *n; i++)
        if ((*s)[i] == '/' || (*s)[i] == '\\')
            start = i + 1;
    *s += start;
    *n -= start;
}

/* ---- frames ---- */

enum frame_kind {
    FRAME_NONE,    /* no frame */
    FRAME_SKIP,    /* a frame line that is never the answer */
    FRAME_CALL,    /* .NET, Mono: a(b), b squeezed */
    FRAME_NAME,    /* Go, JavaScript: a */
    FRAME_JAVA,    /* a without hidden-class addresses */
    FRAME_ANON,    /* JavaScript frame without a function name */
    FRAME_C,       /* a(b) */
    FRAME_C_NOSYM, /* a(?) */
    FRAME_PYTHON   /* a.b */
};

typedef struct frame {
    int kind;
    const char *a, *b;
    size_t an, bn;
} frame;

static bool set_frame(frame *f, int kind, const char *a, size_t an,
                      const char *b, size_t bn)
{
    f->kind = kind;
    f->a = a;
    f->an = an;
    f->b = b;
    f->bn = bn;
    return true;
}

/* What a Java frame has in parentheses: a source location, never a
 * .NET parameter list ("String s" has a blank, "Int32" no line number). */
static bool java_location(const char *s, size_t n)
{
    static const char *const words[] = {"Native Method", "Unknown Source",
                                        "Compiled Code"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (n == strlen(words[i]) && memcmp(s, words[i], n) == 0)
            return true;
    if (n == 0 || has_blank(s, n))
        return false;
    return ends_with_line_number(s, n) || has_suffix(s, n, ".java") ||
           has_suffix(s, n, ".kt") || has_suffix(s, n, ".scala") ||
           has_suffix(s, n, ".groovy");
}

/* Drop Java's class-loader and module prefixes ("app//",
 * "java.base@17/"). A '/' before "0x" is a hidden class's address
 * ("Orders$$Lambda$14/0x0000000800c03000.run"), not a prefix; the
 * renderer removes those. */
static void java_strip_prefix(const char **s, size_t *n)
{
    size_t start = 0;
    for (size_t i = 0; i < *n; i++) {
        if ((*s)[i] != '/')
            continue;
        if (has_prefix(*s + i + 1, *n - i - 1, "0x"))
            break;
        start = i + 1;
    }
    *s += start;
    *n -= start;
}

/* What V8 has in parentheses after a function name: a location
 * ("/app/x.js:3:1", "node:internal/..."), "<anonymous>", "native" or
 * "index 0" (Promise.all); Mono has a parameter list there. */
static bool js_location(const char *s, size_t n)
{
    return index_of(s, 0, n, ':') < n ||
           (n == 11 && memcmp(s, "<anonymous>", 11) == 0) ||
           (n == 6 && memcmp(s, "native", 6) == 0) ||
           has_prefix(s, n, "index ");
}

/* Mono's IL offset or file after the parameter list. */
static bool mono_suffix(const char *s, size_t n)
{
    return has_prefix(s, n, " [0x") || has_prefix(s, n, " <0x") ||
           has_prefix(s, n, " in ");
}

/* "Orders.place [as handle]" -> "Orders.place". */
static size_t js_drop_alias(const char *s, size_t n)
{
    for (size_t i = 0; i + 5 <= n; i++)
        if (s[i] == ' ' && memcmp(s + i, " [as ", 5) == 0)
            return i;
    return n;
}

/* An indented "at ..." line: .NET, Mono, Java or JavaScript (V8). */
static bool parse_at(const char *s, size_t n, frame *f)
{
    n = trim_end(s, n);
    size_t i = skip_blanks(s, 0, n);
    if (i == 0 || !has_prefix(s + i, n - i, "at "))
        return false;
    i = skip_blanks(s, i + 3, n);
    bool async = has_prefix(s + i, n - i, "async ");
    if (async)
        i = skip_blanks(s, i + 6, n);
    if (has_prefix(s + i, n - i, "(wrapper ")) { /* Mono wrapper frame */
        i = index_of(s, i, n, ')');
        if (i == n)
            return false;
        i = skip_blanks(s, i + 1, n);
    }
    size_t open = index_of(s, i, n, '(');
    if (open == n) {
        /* V8 without a function name: "at /app/x.js:3:1" */
        if (!(is_exactly(s + i, n - i, "<anonymous>") ||
              (!has_blank(s + i, n - i) &&
               ends_with_line_number(s + i, n - i))))
            return false;
        return set_frame(f, FRAME_ANON, NULL, 0, NULL, 0);
    }
    size_t close = index_of(s, open + 1, n, ')');
    if (open == i || close == n)
        return false;
    const char *name = s + i, *args = s + open + 1;
    size_t name_n = open - i, args_n = close - open - 1;
    if (s[open - 1] != ' ') {
        if (async || has_blank(name, name_n))
            return false;
        if (!java_location(args, args_n))
            return set_frame(f, FRAME_CALL, name, name_n, args, args_n);
        java_strip_prefix(&name, &name_n);
        /* (a name that is only an address would render empty) */
        return name_n > 0 && name[0] != '/' &&
               set_frame(f, FRAME_JAVA, name, name_n, NULL, 0);
    }
    name_n = trim_end(name, name_n);
    if (!async && !has_blank(name, name_n) &&
        (mono_suffix(s + close + 1, n - close - 1) ||
         !js_location(args, args_n)))
        return set_frame(f, FRAME_CALL, name, name_n, args, args_n);
    name_n = js_drop_alias(name, name_n);
    return name_n > 0 && set_frame(f, FRAME_NAME, name, name_n, NULL, 0);
}

/* The C library's own frames: signal trampolines, abort, raise,
 * __assert_fail, __libc_start_main. */
static bool c_library(const char *s, size_t n)
{
    static const char *const prefixes[] = {"libc.so", "libc-", "ld-linux",
                                           "linux-vdso", "libpthread"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (has_prefix(s, n, prefixes[i]))
            return true;
    return false;
}

/* backtrace_symbols(3): "PATH(SYMBOL+0xOFF) [0xADDR]"; the symbol, or
 * the symbol and offset, may be missing. */
static bool parse_c(const char *s, size_t n, frame *f)
{
    n = trim_end(s, n);
    size_t i = skip_blanks(s, 0, n);
    if (n <= i || s[n - 1] != ']')
        return false;
    size_t lb = n - 1;
    while (lb > i && s[lb] != '[')
        lb--;
    if (s[lb] != '[' || lb < i + 2 || s[lb - 1] != ' ' || s[lb - 2] != ')' ||
        !has_prefix(s + lb + 1, n - lb - 1, "0x") || lb + 3 >= n - 1)
        return false;
    for (size_t k = lb + 3; k < n - 1; k++)
        if (!is_xdigit(s[k]))
            return false;
    size_t close = lb - 2, open = close;
    while (open > i && s[open] != '(')
        open--;
    if (s[open] != '(' || open == i)
        return false;
    const char *bin = s + i, *sym = s + open + 1;
    size_t bin_n = open - i;
    size_t sym_n = index_of(sym, 0, close - open - 1, '+');
    base_name(&bin, &bin_n);
    if (bin_n == 0)
        return false;
    if (c_library(bin, bin_n) || contains_ci(sym, sym_n, "backtrace"))
        return set_frame(f, FRAME_SKIP, NULL, 0, NULL, 0);
    return set_frame(f, sym_n > 0 ? FRAME_C : FRAME_C_NOSYM, bin, bin_n, sym,
                     sym_n);
}

static bool python_header(const line *ln)
{
    return is_exactly(ln->s, ln->n, "Traceback (most recent call last):");
}

/* '  File "/app/orders.py", line 3, in place' */
static bool parse_python(const char *s, size_t n, frame *f)
{
    n = trim_end(s, n);
    size_t i = skip_blanks(s, 0, n);
    if (i == 0 || !has_prefix(s + i, n - i, "File \""))
        return false;
    size_t path = i + 6, q = path;
    while (q < n && !(s[q] == '"' && has_prefix(s + q, n - q, "\", line ")))
        q++;
    if (q == n)
        return false;
    size_t j = q + 8, digits = j;
    while (j < n && is_digit(s[j]))
        j++;
    if (j == digits || !has_prefix(s + j, n - j, ", in ") || j + 5 == n)
        return false;
    const char *mod = s + path;
    size_t mod_n = q - path;
    base_name(&mod, &mod_n);
    if (has_suffix(mod, mod_n, ".py"))
        mod_n -= 3;
    return set_frame(f, FRAME_PYTHON, mod, mod_n, s + j + 5, n - j - 5);
}

/* "goroutine 1 [running]:" */
static bool go_header(const line *ln)
{
    size_t n = trim_end(ln->s, ln->n);
    if (!has_prefix(ln->s, n, "goroutine "))
        return false;
    size_t i = 10;
    while (i < n && is_digit(ln->s[i]))
        i++;
    return i > 10 && has_prefix(ln->s + i, n - i, " [") &&
           has_suffix(ln->s, n, "]:");
}

/* "main.(*Server).handle(0xc000010000, {0x4b2f60, 0x5})": the name ends
 * at the first '(' that does not follow a '.' (a receiver does). */
static bool parse_go(const char *s, size_t n, frame *f)
{
    n = trim_end(s, n);
    if (n == 0 || is_blank(s[0]) || s[n - 1] != ')' ||
        has_prefix(s, n, "created by "))
        return false;
    size_t open = 1;
    while (open < n && !(s[open] == '(' && s[open - 1] != '.'))
        open++;
    if (open == n || has_blank(s, open))
        return false;
    bool runtime = (open == 5 && memcmp(s, "panic", 5) == 0) ||
                   has_prefix(s, open, "runtime.") ||
                   has_prefix(s, open, "runtime/");
    return set_frame(f, runtime ? FRAME_SKIP : FRAME_NAME, s, open, NULL, 0);
}

/* ---- choosing the frame ---- */

static frame no_frame(void)
{
    frame f = {FRAME_NONE, NULL, NULL, 0, 0};
    return f;
}

/* The last "File" entry of the last traceback block: a block runs from
 * its header to the first line that is not indented. */
static frame python_frame(scanner *sc)
{
    frame found = no_frame(), f;
    bool in_block = true;
    line ln;
    while (next_line(sc, &ln)) {
        if (!ln.opaque && python_header(&ln)) {
            in_block = true;
        } else if (in_block) {
            if (!ln.opaque && parse_python(ln.s, ln.n, &f))
                found = f;
            else if (ln.n > 0 && !is_blank(ln.s[0]))
                in_block = false;
        }
    }
    return found;
}

static frame go_frame(scanner *sc)
{
    frame f;
    line ln;
    while (next_line(sc, &ln))
        if (!ln.opaque && parse_go(ln.s, ln.n, &f) && f.kind != FRAME_SKIP)
            return f;
    return no_frame();
}

static frame first_frame(scanner *sc)
{
    frame found = no_frame(), weak = no_frame(), f;
    size_t arrows = 0, markers = 0;
    bool seen = false, after_marker = false;
    line ln;
    while (next_line(sc, &ln)) {
        if (!ln.opaque) {
            if (!seen && python_header(&ln))
                return python_frame(sc);
            if (!seen && go_header(&ln))
                return go_frame(sc);
            if (is_exactly(ln.s, ln.n,
                           "--- End of inner exception stack trace ---")) {
                markers++;
                after_marker = true;
                continue;
            }
            if (parse_at(ln.s, ln.n, &f) || parse_c(ln.s, ln.n, &f)) {
                seen = true;
                if (f.kind == FRAME_C_NOSYM && weak.kind == FRAME_NONE)
                    weak = f;
                if (f.kind == FRAME_SKIP || f.kind == FRAME_C_NOSYM)
                    continue;
                if (found.kind == FRAME_NONE || after_marker)
                    found = f;
                after_marker = false;
                if (markers >= arrows)
                    return found;
                continue;
            }
        }
        if (!seen)
            arrows += ln.arrows;
    }
    return found.kind != FRAME_NONE ? found : weak;
}

/* ---- output ---- */

/* Each run of blanks becomes one space; none at either end. */
static void put_squeezed(sb_text *t, const char *s, size_t n)
{
    n = trim_end(s, n);
    size_t i = skip_blanks(s, 0, n);
    while (i < n) {
        size_t j = i;
        while (j < n && !is_blank(s[j]))
            j++;
        sb__text_put(t, s + i, j - i);
        if (j < n)
            sb__text_put(t, " ", 1);
        i = skip_blanks(s, j, n);
    }
}

/* A Java name without hidden-class addresses ("/0x0000000800c03000"). */
static void put_java(sb_text *t, const char *s, size_t n)
{
    size_t i = 0, run = 0;
    while (i < n) {
        if (s[i] == '/' && has_prefix(s + i + 1, n - i - 1, "0x")) {
            sb__text_put(t, s + run, i - run);
            i += 3;
            while (i < n && is_xdigit(s[i]))
                i++;
            run = i;
        } else {
            i++;
        }
    }
    sb__text_put(t, s + run, n - run);
}

static void render(sb_text *t, const frame *f)
{
    switch (f->kind) {
    case FRAME_CALL:
        sb__text_put(t, f->a, f->an);
        sb__text_put(t, "(", 1);
        put_squeezed(t, f->b, f->bn);
        sb__text_put(t, ")", 1);
        break;
    case FRAME_JAVA: put_java(t, f->a, f->an); break;
    case FRAME_ANON: sb__text_put(t, "<anonymous>", 11); break;
    case FRAME_C:
        sb__text_put(t, f->a, f->an);
        sb__text_put(t, "(", 1);
        sb__text_put(t, f->b, f->bn);
        sb__text_put(t, ")", 1);
        break;
    case FRAME_C_NOSYM:
        sb__text_put(t, f->a, f->an);
        sb__text_put(t, "(?)", 3);
        break;
    case FRAME_PYTHON:
        sb__text_put(t, f->a, f->an);
        sb__text_put(t, ".", 1);
        sb__text_put(t, f->b, f->bn);
        break;
    default: /* FRAME_NAME */ sb__text_put(t, f->a, f->an); break;
    }
}

int sb__stack_first_frame(const char *trace, size_t len,
                          const char *exception_message, char *out, size_t cap)
{
    sb_text t;
    sb__text_init(&t, out, cap);
    if (trace == NULL)
        return 0;
    scanner sc;
    scanner_init(&sc, trace, len, exception_message);
    frame f = first_frame(&sc);
    if (f.kind == FRAME_NONE)
        return 0;
    render(&t, &f);
    return 1;
}

/* ---- uncaught-exception reports (sb_find_uncaught) ---- */

#define TYPE_MAX 255
#define LOOKBACK 16

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The length of the exception type at the start of s[0..n), 0 if none. */
static size_t type_name(const char *s, size_t n)
{
    if (n == 0 || !(is_alpha(s[0]) || s[0] == '_' || s[0] == '$'))
        return 0;
    size_t i = 1;
    while (i < n && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '_' ||
                     s[i] == '$' || s[i] == '.' || s[i] == '+' || s[i] == '`'))
        i++;
    return i <= TYPE_MAX && s[i - 1] != '.' ? i : 0;
}

/* "TYPE", "TYPE:", "TYPE: MESSAGE", each with an optional " [CODE]"
 * after TYPE (Node.js): the type's length and where the message starts
 * (n when there is none). */
static bool exception_line(const char *s, size_t n, size_t *type_n,
                           size_t *msg_at)
{
    size_t t = type_name(s, n), i = t;
    if (t == 0)
        return false;
    if (has_prefix(s + i, n - i, " [")) {
        size_t close = index_of(s, i, n, ']');
        if (close == n || has_blank(s + i + 2, close - i - 2))
            return false;
        i = close + 1;
    }
    *type_n = t;
    if (i == n) {
        *msg_at = n;
        return true;
    }
    if (s[i] != ':')
        return false;
    if (i + 1 == n) {
        *msg_at = n;
        return true;
    }
    if (s[i + 1] != ' ')
        return false;
    *msg_at = skip_blanks(s, i + 2, n);
    return true;
}

/* A type that needs no prefix: qualified, or named like an exception. */
static bool exception_like(const char *s, size_t n)
{
    return index_of(s, 0, n, '.') < n || has_suffix(s, n, "Exception") ||
           has_suffix(s, n, "Error");
}

/* The header of an "at" trace: how far its prefix goes, 0 without one
 * (NONE: not a header at all). */
static size_t header_prefix(const char *s, size_t n)
{
    static const char *const plain[] = {"Unhandled exception. ",
                                        "Unhandled Exception: ", "Uncaught "};
    if (has_prefix(s, n, "Exception in thread \"")) {
        for (size_t i = 21; i + 1 < n; i++)
            if (s[i] == '"' && s[i + 1] == ' ')
                return i + 2;
        return NONE;
    }
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (has_prefix(s, n, plain[i]))
            return strlen(plain[i]);
    return 0;
}

typedef struct past_line {
    size_t off, n;
    bool blank, opaque;
} past_line;

typedef struct finding {
    bool found, growing;
    sb_uncaught u;
} finding;

static sb_span span_of(size_t off, size_t len)
{
    sb_span s = {off, len};
    return s;
}

/* Record a report starting at `start` (the latest start wins). */
static void found_at(finding *f, size_t start, size_t end, size_t type_off,
                     size_t type_n, size_t msg_off, size_t msg_end)
{
    if (f->found && start < f->u.trace.off) {
        f->growing = false;
        return;
    }
    if (msg_end < msg_off) /* "TYPE: " and blanks: no message */
        msg_end = msg_off;
    f->found = true;
    f->growing = true;
    f->u.type = span_of(type_off, type_n);
    f->u.message = span_of(msg_off, msg_end - msg_off);
    f->u.trace = span_of(start, end - start);
}

static void grow_to(finding *f, size_t end)
{
    if (f->growing)
        f->u.trace.len = end - f->u.trace.off;
}

/* The header of the "at" trace whose first frame follows past[] (oldest
 * first, `count` of them): found_at with it, if there is one. */
static void at_header(finding *f, const char *text, const past_line *past,
                      size_t count, size_t frame_end)
{
    /* A blank line, or one with a control byte, is never inside. */
    size_t first = count;
    while (first > 0 && !past[first - 1].blank && !past[first - 1].opaque)
        first--;
    for (size_t k = first; k < count; k++) {
        const past_line *p = &past[k];
        const char *s = text + p->off;
        size_t pre = header_prefix(s, p->n);
        size_t type_n, msg_at;
        if (pre == NONE ||
            !exception_line(s + pre, p->n - pre, &type_n, &msg_at))
            continue;
        if (pre == 0 && !exception_like(s, type_n))
            continue;
        size_t msg_off = p->off + pre + msg_at;
        size_t msg_end = p->off + p->n; /* through the line before the frame */
        if (k + 1 < count)
            msg_end = past[count - 1].off + past[count - 1].n;
        else {
            /* .NET: the outer message ends where the inner one begins. */
            for (size_t i = msg_off; i + 6 <= msg_end; i++)
                if (text[i] == ' ' && memcmp(text + i, " ---> ", 6) == 0) {
                    msg_end = i;
                    break;
                }
        }
        msg_end = msg_off + trim_end(text + msg_off, msg_end - msg_off);
        found_at(f, p->off, frame_end, p->off + pre, type_n, msg_off, msg_end);
        return;
    }
}

static bool python_chain_line(const line *ln)
{
    return is_exactly(ln->s, ln->n,
                      "During handling of the above exception, another "
                      "exception occurred:") ||
           is_exactly(ln->s, ln->n,
                      "The above exception was the direct cause of the "
                      "following exception:");
}

enum { PY_NONE, PY_BLOCK, PY_AFTER, PY_CHAIN };
enum { GO_NONE, GO_PANIC, GO_TRACE };

int sb_find_uncaught(const char *text, size_t len, sb_uncaught *out)
{
    if (text == NULL)
        return 0;
    scanner sc;
    scanner_init(&sc, text, len, NULL);
    finding f;
    memset(&f, 0, sizeof f);
    past_line past[LOOKBACK];
    size_t npast = 0;
    int py = PY_NONE, go = GO_NONE;
    size_t py_start = 0, go_start = 0, go_type_n = 0, go_msg = 0,
           go_msg_end = 0;
    bool in_at = false;
    line ln;
    while (next_line(&sc, &ln)) {
        size_t off = (size_t)(ln.s - text), end = off + ln.n;
        bool blank = trim_end(ln.s, ln.n) == 0;
        bool indented = ln.n > 0 && is_blank(ln.s[0]);
        bool ok = !ln.opaque;

        /* Python */
        if (ok && !indented && python_header(&ln)) {
            if (py != PY_CHAIN)
                py_start = off;
            py = PY_BLOCK;
        } else if (py == PY_BLOCK) {
            size_t type_n, msg_at;
            if (ok && !blank && !indented) {
                if (exception_line(ln.s, ln.n, &type_n, &msg_at)) {
                    found_at(&f, py_start, end, off, type_n, off + msg_at,
                             off + trim_end(ln.s, ln.n));
                    f.growing = false;
                    py = PY_AFTER;
                } else {
                    py = PY_NONE;
                }
            } else if (!ok) {
                py = PY_NONE;
            }
        } else if (py == PY_AFTER || py == PY_CHAIN) {
            if (ok && python_chain_line(&ln))
                py = PY_CHAIN;
            else if (!blank)
                py = PY_NONE;
        }

        /* Go */
        if (go == GO_TRACE) {
            if (blank || !ok || has_prefix(ln.s, ln.n, "exit status ")) {
                go = GO_NONE;
                f.growing = false;
            } else {
                grow_to(&f, end);
            }
        } else if (go == GO_PANIC) {
            if (ok && go_header(&ln)) {
                go = GO_TRACE;
                found_at(&f, go_start, end, go_start, go_type_n, go_msg,
                         go_msg_end);
            } else if (!(blank || (ok && (indented || ln.s[0] == '[')))) {
                go = GO_NONE;
            }
        }
        if (go != GO_TRACE && ok &&
            (has_prefix(ln.s, ln.n, "panic: ") ||
             has_prefix(ln.s, ln.n, "fatal error: "))) {
            go = GO_PANIC;
            go_start = off;
            go_type_n = ln.s[0] == 'p' ? 5 : 11;
            go_msg = off + go_type_n + 2;
            go_msg_end = off + trim_end(ln.s, ln.n);
        }

        /* "at" frames: Java, .NET, Node.js */
        frame fr;
        bool is_frame = ok && py != PY_BLOCK && parse_at(ln.s, ln.n, &fr);
        if (in_at) {
            if (is_frame || (ok && !blank && indented) ||
                (ok && has_prefix(ln.s, ln.n, "Caused by: "))) {
                grow_to(&f, end);
                continue;
            }
            in_at = false;
            f.growing = false;
            npast = 0;
        } else if (is_frame) {
            in_at = true;
            f.growing = false;
            at_header(&f, text, past, npast, end);
            npast = 0;
            continue;
        }
        if (npast == LOOKBACK) {
            memmove(past, past + 1, (LOOKBACK - 1) * sizeof past[0]);
            npast--;
        }
        past[npast].off = off;
        past[npast].n = ln.n;
        past[npast].blank = blank;
        past[npast].opaque = !ok;
        npast++;
    }
    if (!f.found)
        return 0;
    *out = f.u;
    return 1;
}
