/* errors_import.c - `sqlbus errors import FILE.jsonl` (rule E2) and
 * `sqlbus errors reimport` (rule E3).
 *
 * An import is all or nothing for bad input: the whole file is checked
 * before anything is written — each line's shape here (errors_line.c),
 * then the library's check of what ingestion needs
 * (sb_errors_submit_check) — and the first bad line is reported as
 * "line N: FIELD: MESSAGE". Only then is the file read again and
 * submitted in chunks of 1,000 (one transaction each), with progress.
 * stdin is spooled to a temporary file so it can be read twice. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_JSON = CLI_OPT_FIRST_LOCAL, OPT_INGEST };

#define CHUNK 1000
/* A line holds at most one body (16 MiB by default) in base64. */
#define MAX_LINE ((size_t)64 * 1024 * 1024)

typedef struct import_opts {
    const char *file;
    int json;
    int ingest;
} import_opts;

static int parse(cli_ctx *ctx, int argc, char **argv, const char *usage,
                 int takes_file, import_opts *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"ingest", no_argument, NULL, OPT_INGEST},
        CLI_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":" CLI_GLOBAL_SHORTOPTS, longopts,
                            NULL)) != -1) {
        if (cli_global_option(ctx, c, optarg))
            continue;
        switch (c) {
        case 'h': fputs(usage, stdout); return -1;
        case OPT_JSON: o->json = 1; break;
        case OPT_INGEST: o->ingest = 1; break;
        default: return cli_bad_option(ctx, c, argv);
        }
    }
    if (takes_file) {
        if (optind >= argc)
            return cli_usage_error(ctx, "give the file to import (FILE.jsonl "
                                        "or - for stdin)");
        o->file = argv[optind++];
    }
    if (optind < argc)
        return cli_usage_error(ctx, "unexpected argument \"%s\"", argv[optind]);
    return CLI_OK;
}

/* ---- reading the lines ---- */

typedef struct reader {
    FILE *f;
    char *line;
    size_t cap;
    long long lineno;
} reader;

/* The next non-blank line: 1 and its length in *n, 0 at the end, or an
 * exit code (negated) after printing the error. */
static int next_line(reader *r, size_t *n)
{
    for (;;) {
        errno = 0;
        ssize_t got = getline(&r->line, &r->cap, r->f);
        if (got < 0) {
            if (ferror(r->f)) {
                cli_errorf("cannot read the input: %s", strerror(errno));
                return -CLI_ERROR;
            }
            return 0;
        }
        r->lineno++;
        size_t len = (size_t)got;
        while (len > 0 &&
               (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
            len--;
        if (len > MAX_LINE) {
            cli_errorf("line %lld: line: longer than %zu bytes; nothing "
                       "imported",
                       r->lineno, MAX_LINE);
            return -CLI_USAGE;
        }
        if (strspn(r->line, " \t") >= len)
            continue; /* a blank line */
        *n = len;
        return 1;
    }
}

/* A chunk of parsed lines. */
typedef struct chunk {
    cli_import_msg msg[CHUNK];
    sb_failed_submission sub[CHUNK];
    long long lineno[CHUNK];
    size_t n;
} chunk;

static void chunk_clear(chunk *c)
{
    for (size_t i = 0; i < c->n; i++)
        cli_import_msg_free(&c->msg[i]);
    c->n = 0;
}

/* Fill `c` with up to CHUNK lines. 1 when it holds any, 0 at the end, or
 * a negated exit code after printing the first bad line. */
static int fill(reader *r, chunk *c)
{
    chunk_clear(c);
    while (c->n < CHUNK) {
        size_t len = 0;
        int got = next_line(r, &len);
        if (got <= 0)
            return got < 0 ? got : c->n > 0;
        sb_error err;
        sb_error_clear(&err);
        int src = cli_import_parse_line(r->line, len, &c->msg[c->n], &err);
        if (src != SB_OK) {
            if (src != SB_INVALID)
                return -cli_report(src, &err);
            cli_errorf("line %lld: %s: %s; nothing imported", r->lineno,
                       err.field, err.message);
            return -CLI_USAGE;
        }
        c->lineno[c->n] = r->lineno;
        c->sub[c->n].headers_json = c->msg[c->n].headers_json;
        c->sub[c->n].body = c->msg[c->n].body;
        c->sub[c->n].len = c->msg[c->n].len;
        c->n++;
    }
    return 1;
}

/* Report a refused submission as "line N: FIELD: MESSAGE" (the library
 * names msgs[i].headers or msgs[i].body). Returns the exit code. */
static int report_refused(const chunk *c, int src, const sb_error *err,
                          const char *suffix)
{
    const char *f = err->field;
    if ((src & 0xff) == SB_INVALID && strncmp(f, "msgs[", 5) == 0) {
        char *end = NULL;
        unsigned long i = strtoul(f + 5, &end, 10);
        if (end != NULL && end[0] == ']' && i < c->n) {
            const char *field = end[1] == '.' ? end + 2 : "line";
            cli_errorf("line %lld: %s: %s%s", c->lineno[i], field, err->message,
                       suffix);
            return CLI_USAGE;
        }
    }
    return cli_report(src, err);
}

/* ---- the two passes ---- */

/* Check every line; *count receives the number of messages. */
static int check_all(sb_errors *store, reader *r, chunk *c, long long *count)
{
    int rc = CLI_OK;
    *count = 0;
    int got = 0;
    while (rc == CLI_OK && (got = fill(r, c)) > 0) {
        sb_error err;
        sb_error_clear(&err);
        int src = sb_errors_submit_check(store, c->sub, c->n, &err);
        if (src != SB_OK) {
            rc = report_refused(c, src, &err, "; nothing imported");
            break;
        }
        *count += (long long)c->n;
        if (cli_signal_count() > 0)
            rc = CLI_INTERRUPTED;
    }
    if (rc == CLI_OK && got < 0)
        rc = -got;
    chunk_clear(c);
    return rc;
}

static int submit_all(const cli_ctx *ctx, sb_errors *store, reader *r, chunk *c,
                      long long total, long long *done)
{
    cli_progress bar;
    cli_progress_begin(&bar, ctx, "import", total);
    int rc = CLI_OK, got;
    while ((got = fill(r, c)) > 0) {
        sb_error err;
        sb_error_clear(&err);
        int src = sb_errors_submit(store, c->sub, c->n, &err);
        if (src != SB_OK) {
            rc = report_refused(c, src, &err, "");
            break;
        }
        *done += (long long)c->n;
        cli_progress_update(&bar, *done, -1);
        if (cli_signal_count() > 0) {
            rc = CLI_INTERRUPTED;
            break;
        }
    }
    if (rc == CLI_OK && got < 0)
        rc = -got;
    cli_progress_end(&bar);
    chunk_clear(c);
    return rc;
}

/* Open FILE, or spool stdin into a temporary file (read twice). */
static int open_input(const char *file, FILE **out)
{
    if (strcmp(file, "-") != 0) {
        *out = fopen(file, "rb");
        if (*out == NULL) {
            cli_errorf("cannot open %s: %s", file, strerror(errno));
            return CLI_ERROR;
        }
        return CLI_OK;
    }
    FILE *t = tmpfile();
    if (t == NULL) {
        cli_errorf("cannot create a temporary file for stdin: %s",
                   strerror(errno));
        return CLI_ERROR;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
        if (fwrite(buf, 1, n, t) != n) {
            cli_errorf("cannot spool stdin: %s", strerror(errno));
            fclose(t);
            return CLI_ERROR;
        }
        if (cli_signal_count() > 0) {
            fclose(t);
            return CLI_INTERRUPTED;
        }
    }
    if (ferror(stdin)) {
        cli_errorf("cannot read stdin: %s", strerror(errno));
        fclose(t);
        return CLI_ERROR;
    }
    rewind(t);
    *out = t;
    return CLI_OK;
}

/* One ingestion pass after an import or a reimport (--ingest). */
static int ingest_once(sb_errors *store, sb_ingest_stats *s)
{
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_ingest(store, s, &err);
    return src == SB_OK ? CLI_OK : cli_report(src, &err);
}

static void stats_json(const sb_ingest_stats *s)
{
    printf(", \"ingest\": {\"rows\": %lld, \"messages\": %lld, "
           "\"failed_imports\": %lld}",
           (long long)s->rows, (long long)s->messages,
           (long long)s->failed_imports);
}

static void stats_note(const cli_ctx *ctx, const sb_ingest_stats *s)
{
    cli_notef(ctx,
              "ingested %lld dead-lettered rows into %lld failed "
              "messages (%lld failed imports)",
              (long long)s->rows, (long long)s->messages,
              (long long)s->failed_imports);
}

/* `sqlbus errors import FILE.jsonl|-` (E2): returns an exit code. */
int cli_errors_import(cli_ctx *ctx, int argc, char **argv)
{
    import_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(ctx, argc, argv, cli_usage_errors_import, 1, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    reader r;
    memset(&r, 0, sizeof r);
    rc = open_input(o.file, &r.f);
    if (rc != CLI_OK)
        return rc;
    chunk *c = sb__calloc(1, sizeof *c);
    if (c == NULL) {
        fclose(r.f);
        cli_errorf("out of memory");
        return CLI_ERROR;
    }
    long long total = 0, done = 0;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc == CLI_OK)
        rc = check_all(store, &r, c, &total);
    if (rc == CLI_OK) {
        rewind(r.f);
        r.lineno = 0;
        rc = submit_all(ctx, store, &r, c, total, &done);
        if (rc != CLI_OK && done > 0)
            cli_errorf("imported %lld of %lld messages before the error", done,
                       total);
    }
    sb_ingest_stats st;
    memset(&st, 0, sizeof st);
    if (rc == CLI_OK && o.ingest)
        rc = ingest_once(store, &st);
    if (rc == CLI_OK && o.json) {
        printf("{\"imported\": %lld", done);
        if (o.ingest)
            stats_json(&st);
        fputs("}\n", stdout);
    } else if (rc == CLI_OK) {
        printf("imported %lld message%s into the dead-letter queue\n", done,
               done == 1 ? "" : "s");
        if (o.ingest)
            stats_note(ctx, &st);
        else if (done > 0)
            cli_notef(ctx, "the next 'sqlbus errors ingest' (or a running "
                           "'ingest --follow') stores them");
    }
    cli_errors_close(bus, store);
    sb__free(c);
    free(r.line);
    fclose(r.f);
    return rc;
}

/* `sqlbus errors reimport` (E3): returns an exit code. */
int cli_errors_reimport(cli_ctx *ctx, int argc, char **argv)
{
    import_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(ctx, argc, argv, cli_usage_errors_reimport, 0, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    sb_bus *bus = NULL;
    sb_errors *store = NULL;
    rc = cli_errors_open(ctx, 0, &bus, &store);
    if (rc != CLI_OK)
        return rc;
    int64_t moved = 0, left = 0;
    sb_error err;
    sb_error_clear(&err);
    int src = sb_errors_reimport(store, &moved, &err);
    if (src != SB_OK)
        rc = cli_report(src, &err);
    sb_ingest_stats st;
    memset(&st, 0, sizeof st);
    if (rc == CLI_OK && o.ingest)
        rc = ingest_once(store, &st);
    if (rc == CLI_OK &&
        (src = sb_errors_failed_import_count(store, &left, &err)) != SB_OK)
        rc = cli_report(src, &err);
    if (rc == CLI_OK && o.json) {
        printf("{\"moved\": %lld", (long long)moved);
        if (o.ingest)
            stats_json(&st);
        printf(", \"failed_imports\": %lld}\n", (long long)left);
    } else if (rc == CLI_OK) {
        printf("moved %lld failed import%s back to the dead-letter queue\n",
               (long long)moved, moved == 1 ? "" : "s");
        if (o.ingest)
            stats_note(ctx, &st);
        else if (moved > 0)
            cli_notef(ctx, "run 'sqlbus errors ingest' (or add --ingest) to "
                           "try them again");
        if (o.ingest && left > 0)
            cli_notef(ctx,
                      "%lld still cannot be ingested: see their reasons "
                      "in the failed_imports table",
                      (long long)left);
    }
    cli_errors_close(bus, store);
    return rc;
}
