/* jsonout.c - writing JSON for --json output: string literals with
 * proper escaping, re-indenting the library's compact JSON, base64. */
#include "cli.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at p[0..n), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    size_t len = p[0] < 0x80             ? 1
                 : (p[0] & 0xe0) == 0xc0 ? 2
                 : (p[0] & 0xf0) == 0xe0 ? 3
                 : (p[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n)
        return 0;
    return sb__utf8_valid((const char *)p, len) ? len : 0;
}

/* Write `n` bytes as a JSON string literal (invalid UTF-8 -> U+FFFD). */
void cli_json_strn(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        switch (c) {
        case '"':
            fputs("\\\"", f);
            i++;
            continue;
        case '\\':
            fputs("\\\\", f);
            i++;
            continue;
        case '\n':
            fputs("\\n", f);
            i++;
            continue;
        case '\r':
            fputs("\\r", f);
            i++;
            continue;
        case '\t':
            fputs("\\t", f);
            i++;
            continue;
        case '\b':
            fputs("\\b", f);
            i++;
            continue;
        case '\f':
            fputs("\\f", f);
            i++;
            continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
            continue;
        }
        size_t len = utf8_seq(p + i, n - i);
        if (len == 0) {
            fputs("\\ufffd", f);
            i++;
            continue;
        }
        fwrite(p + i, 1, len, f);
        i += len;
    }
    fputc('"', f);
}

/* Write a NUL-terminated string as a JSON string literal; NULL as null. */
void cli_json_str(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    cli_json_strn(f, s, strlen(s));
}

static void newline(FILE *f, int indent, int depth)
{
    fputc('\n', f);
    for (int i = 0; i < indent + 2 * depth; i++)
        fputc(' ', f);
}

/* A purely lexical re-indenter: valid input gives valid, equal output. */
void cli_json_pretty(FILE *f, const char *json, int indent)
{
    int depth = 0;
    int in_str = 0;
    for (const char *p = json; *p != '\0'; p++) {
        char c = *p;
        if (in_str) {
            fputc(c, f);
            if (c == '\\' && p[1] != '\0')
                fputc(*++p, f);
            else if (c == '"')
                in_str = 0;
            continue;
        }
        switch (c) {
        case '"':
            in_str = 1;
            fputc(c, f);
            break;
        case '{':
        case '[': {
            const char *q = p + 1;
            while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')
                q++;
            if (*q == '}' || *q == ']') { /* keep {} and [] together */
                fputc(c, f);
                fputc(*q, f);
                p = q;
                break;
            }
            fputc(c, f);
            newline(f, indent, ++depth);
            break;
        }
        case '}':
        case ']':
            newline(f, indent, depth > 0 ? --depth : 0);
            fputc(c, f);
            break;
        case ',':
            fputc(c, f);
            newline(f, indent, depth);
            break;
        case ':': fputs(": ", f); break;
        case ' ':
        case '\n':
        case '\t':
        case '\r': break;
        default: fputc(c, f);
        }
    }
}

/* Write bytes as padded standard base64. */
void cli_base64(FILE *f, const void *data, size_t n)
{
    static const char tbl[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        fputc(tbl[v >> 18], f);
        fputc(tbl[(v >> 12) & 63], f);
        fputc(tbl[(v >> 6) & 63], f);
        fputc(tbl[v & 63], f);
    }
    if (i < n) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        fputc(tbl[v >> 18], f);
        fputc(tbl[(v >> 12) & 63], f);
        fputc(i + 1 < n ? tbl[(v >> 6) & 63] : '=', f);
        fputc('=', f);
    }
}
