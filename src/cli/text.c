/* text.c - human-readable output: ages, timestamps, hex dumps and
 * aligned tables. */
#include "cli.h"

#include <string.h>
#include <time.h>

/* Format a duration in ms compactly ("4m05s"); "-" when negative. */
void cli_format_age(char *out, size_t cap, int64_t ms)
{
    if (ms < 0)
        snprintf(out, cap, "-");
    else if (ms < 1000)
        snprintf(out, cap, "%lldms", (long long)ms);
    else if (ms < 60000)
        snprintf(out, cap, "%lld.%llds", (long long)(ms / 1000),
                 (long long)(ms % 1000 / 100));
    else if (ms < 3600000)
        snprintf(out, cap, "%lldm%02llds", (long long)(ms / 60000),
                 (long long)(ms / 1000 % 60));
    else if (ms < 86400000)
        snprintf(out, cap, "%lldh%02lldm", (long long)(ms / 3600000),
                 (long long)(ms / 60000 % 60));
    else
        snprintf(out, cap, "%lldd%02lldh", (long long)(ms / 86400000),
                 (long long)(ms / 3600000 % 24));
}

/* Format Unix microseconds as ISO 8601 UTC with microseconds. */
void cli_format_time(char *out, size_t cap, int64_t unix_us)
{
    int64_t secs = unix_us / 1000000;
    int64_t frac = unix_us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL) {
        snprintf(out, cap, "%lld", (long long)unix_us);
        return;
    }
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (long long)frac);
}

/* True when the bytes are printable UTF-8 text (tab, CR, LF allowed). */
int cli_is_text(const void *p, size_t n)
{
    const unsigned char *s = p;
    if (!sb__utf8_valid((const char *)s, n))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f)
            return 0;
    }
    return 1;
}

/* Write a classic hex dump: offset, 16 hex bytes, ASCII. */
void cli_hexdump(FILE *f, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t off = 0; off < n; off += 16) {
        fprintf(f, "%08zx  ", off);
        for (size_t i = 0; i < 16; i++) {
            if (off + i < n)
                fprintf(f, "%02x ", s[off + i]);
            else
                fputs("   ", f);
            if (i == 7)
                fputc(' ', f);
        }
        fputs(" |", f);
        for (size_t i = 0; i < 16 && off + i < n; i++) {
            unsigned char c = s[off + i];
            fputc(c >= 0x20 && c < 0x7f ? c : '.', f);
        }
        fputs("|\n", f);
    }
}

/* Terminal columns of UTF-8 text, one per code point. */
size_t cli_display_width(const char *s)
{
    size_t w = 0;
    for (; *s != '\0'; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

/* Start a table with its header row (copied). */
void cli_table_init(cli_table *t, size_t ncols, const char *const *header,
                    unsigned right_aligned_mask)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->right = right_aligned_mask;
    cli_table_add(t, header);
}

/* Append a row (cells copied); an allocation failure is sticky. */
void cli_table_add(cli_table *t, const char *const *cells)
{
    if (t->failed)
        return;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **grown = sb__realloc(t->cells, cap * t->ncols * sizeof *grown);
        if (grown == NULL) {
            t->failed = 1;
            return;
        }
        t->cells = grown;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t c = 0; c < t->ncols; c++) {
        row[c] = sb__strdup(cells[c] != NULL ? cells[c] : "");
        if (row[c] == NULL)
            t->failed = 1;
    }
    t->nrows++;
}

/* Print the table with aligned columns; CLI_ERROR after an allocation
 * failure. */
int cli_table_print(const cli_table *t, FILE *f)
{
    if (t->failed) {
        cli_errorf("out of memory");
        return CLI_ERROR;
    }
    size_t width[16] = {0};
    size_t ncols = t->ncols < 16 ? t->ncols : 16;
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < ncols; c++) {
            size_t w = cli_display_width(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            size_t pad = width[c] - cli_display_width(cell);
            int last = c + 1 == ncols;
            if (t->right & (1u << c))
                fprintf(f, "%*s%s", (int)pad, "", cell);
            else if (last)
                fputs(cell, f);
            else
                fprintf(f, "%s%*s", cell, (int)pad, "");
            if (!last)
                fputs("  ", f);
        }
        fputc('\n', f);
    }
    return CLI_OK;
}

/* Free the cells of a table. */
void cli_table_free(cli_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        sb__free(t->cells[i]);
    sb__free(t->cells);
    memset(t, 0, sizeof *t);
}
