/*
 * cli.h - declarations shared by the files of the `sqlbus` program.
 *
 * The program uses the library only through include/sqlbus.h; from the
 * internals it borrows core's allocator, capped buffers, JSON headers
 * façade and JSON paths (src/core/core.h). Subcommands return an exit code (enum
 * cli_exit) to main, which is the only place that exits.
 */
#ifndef SB_CLI_H
#define SB_CLI_H

#include "core/core.h"

#include <getopt.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes, documented in docs/cli.md. */
enum cli_exit {
    CLI_OK = 0,
    CLI_ERROR = 1,        /* runtime error */
    CLI_USAGE = 2,        /* bad flag, bad value, bad input */
    CLI_SCHEMA = 3,       /* schema missing or of the wrong shape */
    CLI_NOTFOUND = 4,     /* e.g. `dlq show` of an unknown id */
    CLI_UNAVAILABLE = 5,  /* database unavailable after retries */
    CLI_CONFLICT = 6,     /* refused by the state of the store: a group
                            operation already running, a conflicting
                            redirect, a reply id reused */
    CLI_REPLY_ERROR = 2,  /* request/wait: the reply was an error reply */
    CLI_TIMEOUT = 124,    /* request/wait: no reply within --timeout;
                            work: handlers still running at the stop
                            timeout */
    CLI_INTERRUPTED = 130 /* SIGINT during a non-work command */
};

/* Global options, parsed before and after the subcommand name. */
typedef struct cli_ctx {
    const char *db_url; /* --db, or NULL (then SQLBUS_DB, then default) */
    const char *prefix; /* --prefix, or NULL (library default) */
    int verbosity;      /* -1 with -q, 0 default, 1 per -v */
    const char *cmd;    /* "publish", "dlq list": used in messages */
    int signal_stops;   /* 1: a SIGINT/SIGTERM is the normal way to stop
                            this command (exit 0, not 130) */
    int abandoned;      /* 1: a thread was left inside a database call
                            that never answered: main ends the program
                            with _Exit, running no exit handler beside it */
    int pool_size;      /* connections of the bus (0: the library's 8) */
} cli_ctx;

#define CLI_DEFAULT_DB "sqlite:./sqlbus.db"

/* Values of getopt_long for the global long options. */
enum { CLI_OPT_DB = 0x1000, CLI_OPT_PREFIX, CLI_OPT_FIRST_LOCAL = 0x1100 };

/* Long options every subcommand accepts (append to its own table). */
#define CLI_GLOBAL_LONGOPTS                                                    \
    {"db", required_argument, NULL, CLI_OPT_DB},                               \
        {"prefix", required_argument, NULL, CLI_OPT_PREFIX},                   \
        {"verbose", no_argument, NULL, 'v'},                                   \
        {"quiet", no_argument, NULL, 'q'},                                     \
    {                                                                          \
        "help", no_argument, NULL, 'h'                                         \
    }

/* Short options every subcommand accepts; "+:" = stop at the first
 * operand, report a missing value as ':' (we print our own errors). */
#define CLI_GLOBAL_SHORTOPTS "vqh"

/* ---- a subcommand ---- */
typedef int (*cli_cmd_fn)(cli_ctx *ctx, int argc, char **argv);

typedef struct cli_command {
    const char *name;
    const char *summary; /* one line for `sqlbus --help` */
    const char *usage;   /* full text for `sqlbus help NAME` */
    cli_cmd_fn run;
} cli_command;

/* The subcommands (cmd_*.c). Each parses its own argv (argv[0] is the
 * subcommand name) and returns an enum cli_exit. */
int cli_cmd_publish(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_work(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_queues(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_dlq(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_schema(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_request(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_respond(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_wait(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_recovery(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_errors(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_serve(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_schedule(cli_ctx *ctx, int argc, char **argv);

/* ---- the dlq subcommands (cmd_dlq.c, dlq_list.c, dlq_show.c) ---- */
enum {
    CLI_DLQ_QUEUE = CLI_OPT_FIRST_LOCAL + 0x40,
    CLI_DLQ_OLDER,
    CLI_DLQ_ID,
    CLI_DLQ_LIMIT,
    CLI_DLQ_ALL,
    CLI_DLQ_JSON
};
#define CLI_DLQ_BIT(name) (1u << (CLI_DLQ_##name - CLI_DLQ_QUEUE))

typedef struct cli_dlq_args {
    sb_dlq_filter filter; /* pointers borrowed from argv */
    int all;
    int json;
    char **operands; /* what follows the options */
    int noperands;
} cli_dlq_args;

/* Parse the flags of a dlq subcommand; `allowed` is a mask of
 * CLI_DLQ_BIT()s. Returns CLI_OK, an exit code, or -1 after printing
 * `usage` for --help. */
int cli_dlq_parse(cli_ctx *ctx, int argc, char **argv, unsigned allowed,
                  const char *usage, cli_dlq_args *a);
int cli_dlq_list(cli_ctx *ctx, int argc, char **argv);
int cli_dlq_show(cli_ctx *ctx, int argc, char **argv);
/* Write one dead letter as a JSON object (payload included when
 * `with_payload`), lines after the first indented by `indent`. */
void cli_dlq_json(FILE *f, const sb_msg *m, int with_payload, int indent);

/* ---- the errors subcommands (cmd_errors.c, errors_*.c; rule E24) ---- */

/* Open the bus and its error store (allow_edit for `errors edit`). On
 * failure prints the error and returns its exit code; on success the
 * caller closes both with cli_errors_close. */
int cli_errors_open(const cli_ctx *ctx, int allow_edit, sb_bus **bus,
                    sb_errors **store);
void cli_errors_close(sb_bus *bus, sb_errors *store);
/* Parse a subcommand taking only global options, --json (when `json` is
 * not NULL) and, when `arg` is not NULL, one operand (`arg_name` names it
 * in the error when missing). Returns CLI_OK, an exit code, or -1 after
 * printing `usage` for --help. */
int cli_errors_parse_plain(cli_ctx *ctx, int argc, char **argv,
                           const char *usage, int *json, const char **arg,
                           const char *arg_name);
/* "unresolved", "retry_issued", "resolved", "archived" (static). */
const char *cli_errors_status_name(int status);
/* The status for a name, or -1 for "any", or -2 when unknown. */
int cli_errors_status_parse(const char *name);

int cli_errors_list(cli_ctx *ctx, int argc, char **argv);
int cli_errors_search(cli_ctx *ctx, int argc, char **argv);
int cli_errors_body(cli_ctx *ctx, int argc, char **argv);
int cli_errors_groups(cli_ctx *ctx, int argc, char **argv);
int cli_errors_retry(cli_ctx *ctx, int argc, char **argv);
int cli_errors_archive(cli_ctx *ctx, int argc, char **argv);
int cli_errors_unarchive(cli_ctx *ctx, int argc, char **argv);
int cli_errors_resolve(cli_ctx *ctx, int argc, char **argv);
int cli_errors_edit(cli_ctx *ctx, int argc, char **argv);
int cli_errors_redirect(cli_ctx *ctx, int argc, char **argv);
int cli_errors_import(cli_ctx *ctx, int argc, char **argv);
int cli_errors_reimport(cli_ctx *ctx, int argc, char **argv);

/* errors_line.c: one line of an import file (I/O free). */
typedef struct cli_import_msg {
    char *headers_json; /* compact JSON object of strings (sb__free) */
    char *body;         /* decoded body (sb__free; may hold NUL bytes) */
    size_t len;
} cli_import_msg;
/* Parse `line` (`n` bytes, no newline): a JSON object with "headers" (an
 * object of strings, required) and exactly one of "body" (text) or
 * "body_base64". On error returns SB_INVALID with err->field naming the
 * field ("headers", "body_base64", ...) and err->message the problem;
 * SB_NOMEM. `out` is filled only on SB_OK (free with cli_import_msg_free). */
int cli_import_parse_line(const char *line, size_t n, cli_import_msg *out,
                          sb_error *err);
void cli_import_msg_free(cli_import_msg *m);
/* Decode standard base64 (padding optional, no white space). Returns the
 * decoded length, or -1 when the text is not base64. `out` must hold
 * n / 4 * 3 + 3 bytes. */
long long cli_base64_decode(const char *s, size_t n, unsigned char *out);

/* timearg.c: a point in time given on the command line: ISO 8601 in UTC
 * or with an offset (2026-01-02T03:04:05Z, 2026-01-02T03:04:05.5+02:00,
 * 2026-01-02) or Unix seconds (1767323045). Microseconds since the epoch
 * in *out; -1 when the text is neither (I/O free). */
int cli_parse_time_us(const char *text, int64_t *out);

/* Help texts (help.c). */
extern const char cli_usage_main[];
extern const char cli_usage_publish[];
extern const char cli_usage_work[];
extern const char cli_usage_queues[];
extern const char cli_usage_dlq[];
extern const char cli_usage_dlq_list[];
extern const char cli_usage_dlq_show[];
extern const char cli_usage_dlq_requeue[];
extern const char cli_usage_dlq_purge[];
extern const char cli_usage_schema[];
extern const char cli_usage_request[];
extern const char cli_usage_respond[];
extern const char cli_usage_wait[];
extern const char cli_usage_recovery[];
extern const char cli_usage_errors[];
extern const char cli_usage_serve[];
extern const char cli_usage_schedule[];
extern const char cli_usage_errors_ingest[];
extern const char cli_usage_errors_show[];
extern const char cli_usage_errors_list[];
extern const char cli_usage_errors_search[];
extern const char cli_usage_errors_body[];
extern const char cli_usage_errors_groups[];
extern const char cli_usage_errors_retry[];
extern const char cli_usage_errors_archive[];
extern const char cli_usage_errors_unarchive[];
extern const char cli_usage_errors_resolve[];
extern const char cli_usage_errors_edit[];
extern const char cli_usage_errors_redirect[];
extern const char cli_usage_errors_import[];
extern const char cli_usage_errors_reimport[];
extern const char cli_usage_recovery_list[];
extern const char cli_usage_recovery_watchdog[];

/* ---- common.c: options, errors, opening the bus ---- */

/* Handle a global option returned by getopt_long (`c`, `arg`). Returns 1
 * if it was one (and records it in ctx), 0 if not. 'h' is not handled
 * here: each command prints its own help. */
int cli_global_option(cli_ctx *ctx, int c, const char *arg);

/* Report a getopt_long failure ('?' or ':') for argv[optind - 1] and
 * return CLI_USAGE. */
int cli_bad_option(const cli_ctx *ctx, int c, char **argv);

/* Print "sqlbus CMD: MESSAGE" and a hint to --help on stderr; returns
 * CLI_USAGE. */
int cli_usage_error(const cli_ctx *ctx, const char *fmt, ...) SB_PRINTF(2, 3);

/* Print "sqlbus: MESSAGE" on stderr (not suppressed by -q). */
void cli_errorf(const char *fmt, ...) SB_PRINTF(1, 2);

/* Print "sqlbus: MESSAGE" on stderr unless -q (informational). */
void cli_notef(const cli_ctx *ctx, const char *fmt, ...) SB_PRINTF(2, 3);

/* Print a library error as "sqlbus: <message> (field: X)" and return the
 * exit code for `rc` (see cli_exit_code). */
int cli_report(int rc, const sb_error *err);

/* The exit code for a library result code. */
int cli_exit_code(int rc);

/* Parse a duration flag value into ms within [min_ms, max_ms]; on error
 * print "--FLAG ..." and return CLI_USAGE, else CLI_OK. */
int cli_parse_duration(const cli_ctx *ctx, const char *flag, const char *text,
                       int64_t min_ms, int64_t max_ms, int64_t *out);

/* Parse a decimal integer flag value within [lo, hi]; as above. */
int cli_parse_int(const cli_ctx *ctx, const char *flag, const char *text,
                  int64_t lo, int64_t hi, int64_t *out);

/* Repeated --header KEY=VALUE flags (publish, errors edit): each key is
 * copied, each value borrowed from argv; `kv` is the NULL-terminated
 * key, value, ... list sb__headers_merge takes. */
#define CLI_MAX_HEADER_FLAGS 256
typedef struct cli_header_flags {
    const char *kv[2 * CLI_MAX_HEADER_FLAGS + 1];
    size_t n; /* pairs */
} cli_header_flags;
/* Add one KEY=VALUE (the value may contain '='), at most `max` pairs;
 * CLI_USAGE naming the flag and its limit. */
int cli_header_flag_add(const cli_ctx *ctx, cli_header_flags *h,
                        const char *arg, size_t max);
void cli_header_flags_free(cli_header_flags *h);

/* Check a queue name given with --FLAG (rule T3); CLI_USAGE on error. */
int cli_check_queue(const cli_ctx *ctx, const char *flag, const char *name);
int cli_check_correlation_id(const cli_ctx *ctx, const char *flag,
                             const char *id);

/* The database URL: --db (even empty), else $SQLBUS_DB unless empty,
 * else CLI_DEFAULT_DB. Borrowed. */
const char *cli_db_url(const cli_ctx *ctx);
/* CLI_OK, or CLI_USAGE (printed) when --db was given empty. */
int cli_check_db(const cli_ctx *ctx);

/* The sb_options cli_open_bus uses (URL, prefix, schema_mode, the log
 * at ctx's verbosity), for a caller that sets more before sb_open. */
void cli_bus_options(const cli_ctx *ctx, int schema_mode, sb_options *o);

/* Open the bus for `ctx` with `schema_mode` (enum sb_schema_mode).
 * On failure prints the error and returns its exit code. */
int cli_open_bus(const cli_ctx *ctx, int schema_mode, sb_bus **out);

/* The log callback installed on the bus: writes to stderr. `user` is the
 * cli_ctx. Thread-safe (one fprintf per line). */
void cli_log(int level, const char *component, const char *message, void *user);

/* ---- input.c: reading a payload ---- */

/* Read FILE (stdin when NULL or "-") into `out` (initialised here; free
 * with sb__buf_free). Gives up on a signal (CLI_INTERRUPTED). Prints its
 * errors; returns an exit code. */
int cli_read_payload(const char *file, sb_buf *out);

/* ---- await.c: the channel for request, respond and wait (C23, C25) ---- */

/* Open the channel of `bus` with the default options. On failure prints
 * the error and returns its exit code. */
int cli_open_channel(sb_bus *bus, sb_channel **out);

/* Wait for the outcome of `w` while polling for signals: the terminal
 * reply's bytes go to stdout as they are (exit 0); progress replies (with
 * an `until` predicate) go to stderr as they arrive; an error reply
 * prints "TYPE: MESSAGE" and its detail to stderr (CLI_REPLY_ERROR); a
 * timeout CLI_TIMEOUT; a signal cancels the wait (CLI_INTERRUPTED). */
int cli_await(const cli_ctx *ctx, sb_waiter *w);

/* ---- until.c: which reply ends a wait (C2, C25) ---- */
enum cli_until_kind {
    CLI_UNTIL_NONE = 0, /* the first reply ends the wait */
    CLI_UNTIL_PREFIX,   /* --until-prefix S */
    CLI_UNTIL_PRESENT,  /* --until PATH */
    CLI_UNTIL_EQ,       /* --until PATH=VALUE */
    CLI_UNTIL_NE        /* --until PATH!=VALUE */
};

typedef struct cli_until {
    int kind;         /* enum cli_until_kind */
    const char *text; /* the prefix or VALUE (borrowed from argv) */
    char path[SB_JSON_PATH_MAX + 1];
} cli_until;

/* Record --until-prefix S / --until EXPR in `u` (zeroed before the first
 * call), checking EXPR's path and that the two flags are not combined.
 * Returns CLI_OK, or CLI_USAGE after printing what is wrong. */
int cli_until_set_prefix(const cli_ctx *ctx, const char *prefix, cli_until *u);
int cli_until_set_expr(const cli_ctx *ctx, const char *expr, cli_until *u);

/* Install the predicate of `u` in `wo` (nothing for CLI_UNTIL_NONE). `u`
 * is borrowed: it must outlive the wait. */
void cli_until_apply(const cli_until *u, sb_wait_options *wo);

/* await.c: the options `request` and `wait` share: the one that names
 * what to wait on (`key_flag`, "--queue" or "--correlation-id", checked by
 * `check`),
 * --timeout (1ms..7d), --until / --until-prefix, and for request one FILE.
 * Returns CLI_OK, an exit code, or -1 after --help. */
typedef struct cli_await_spec {
    const char *usage;
    const char *key_flag;
    int (*check)(const cli_ctx *ctx, const char *flag, const char *value);
    int takes_file;
} cli_await_spec;
typedef struct cli_await_opts {
    const char *key;
    int64_t timeout_ms; /* set the default before parsing */
    cli_until until;    /* none: the first reply completes */
    const char *file;
} cli_await_opts;
int cli_parse_await(cli_ctx *ctx, int argc, char **argv,
                    const cli_await_spec *spec, cli_await_opts *o);

/* ---- signals.c: SIGINT/SIGTERM handled by a sigwait thread ---- */

/* Block SIGINT and SIGTERM in every thread (call before any thread is
 * created), ignore SIGPIPE, and start the thread that receives them.
 * `graceful_rounds` is how many signals the program handles itself
 * before the next one terminates it by the default action. Returns 0 or
 * -1 (with a message printed). */
int cli_signals_start(int graceful_rounds);

/* How many SIGINT/SIGTERM have arrived (0 = none). Thread-safe. */
int cli_signal_count(void);

/* The first signal received (SIGINT or SIGTERM), or 0. */
int cli_first_signal(void);

/* A descriptor that becomes readable when a signal arrives (poll it).
 * Never read from it. */
int cli_signal_fd(void);

/* ---- progress.c: a progress bar on a terminal ---- */
typedef struct cli_progress {
    int enabled;       /* stderr is a terminal and not -q */
    const char *label; /* borrowed */
    int64_t total;     /* -1 when unknown */
    int64_t done;
    int64_t start_us;
    int64_t last_draw_us;
    int drawn;
} cli_progress;

/* Start a bar labelled `label` (borrowed) toward `total` (-1 unknown). */
void cli_progress_begin(cli_progress *p, const cli_ctx *ctx, const char *label,
                        int64_t total);
/* Record progress; redraws at most every 100 ms. `total` < 0 keeps the
 * previous total. */
void cli_progress_update(cli_progress *p, int64_t done, int64_t total);
/* Draw the final state and end the line (only if anything was drawn). */
void cli_progress_end(cli_progress *p);
/* An sb_progress_fn whose `user` is a cli_progress. */
void cli_progress_cb(int64_t done, int64_t total, void *user);

/* ---- jsonout.c: writing JSON ---- */

/* Write `s` (NUL-terminated) as a JSON string literal; bytes that are not
 * valid UTF-8 become U+FFFD. */
void cli_json_str(FILE *f, const char *s);
/* Same for `n` bytes (may contain NUL, written as \u0000). */
void cli_json_strn(FILE *f, const char *s, size_t n);
/* Re-indent valid JSON text `json` with two spaces per level, each new
 * line starting with `indent` extra spaces. Empty objects stay "{}". */
void cli_json_pretty(FILE *f, const char *json, int indent);
/* Write `n` bytes as standard base64 (with padding), unquoted. */
void cli_base64(FILE *f, const void *p, size_t n);

/* ---- text.c: human-readable formatting ---- */

/* "850ms", "12.3s", "4m05s", "2h03m", "3d04h"; "-" when ms < 0. */
void cli_format_age(char *out, size_t cap, int64_t ms);
/* "2024-05-01T12:00:00.123456Z" from Unix microseconds. */
void cli_format_time(char *out, size_t cap, int64_t unix_us);
/* True when the bytes are valid UTF-8 with no control characters other
 * than tab, CR and LF: safe to print raw on a terminal. */
int cli_is_text(const void *p, size_t n);
/* Write a hex dump (offset, 16 bytes in hex, printable ASCII). */
void cli_hexdump(FILE *f, const void *p, size_t n);
/* Terminal columns taken by UTF-8 text (one per code point). */
size_t cli_display_width(const char *s);

/* A text table: collected rows, printed with aligned columns. */
typedef struct cli_table {
    size_t ncols;
    size_t nrows; /* including the header row */
    size_t cap;
    char **cells;   /* nrows * ncols copies (sb__free) */
    unsigned right; /* bit i set: column i is right-aligned */
    int failed;     /* an allocation failed */
} cli_table;

/* Start a table with the header cells (copied). */
void cli_table_init(cli_table *t, size_t ncols, const char *const *header,
                    unsigned right_aligned_mask);
/* Add a row of ncols cells (copied; NULL prints as ""). */
void cli_table_add(cli_table *t, const char *const *cells);
/* Print the table to `f`; returns CLI_ERROR if an allocation failed. */
int cli_table_print(const cli_table *t, FILE *f);
void cli_table_free(cli_table *t);

/* ---- child.c: running a handler command for one message ---- */

enum cli_child_outcome {
    CLI_CHILD_EXITED = 1,      /* status = exit code */
    CLI_CHILD_SIGNALED = 2,    /* status = signal number */
    CLI_CHILD_TIMEOUT = 3,     /* killed after the timeout */
    CLI_CHILD_ABORTED = 4,     /* killed because `abort_fn` asked */
    CLI_CHILD_SPAWN_FAILED = 5 /* status = errno */
};

#define CLI_STDERR_TAIL 8192

/* The descriptor a handler command writes its progress to (T42). */
#define CLI_PROGRESS_FD 3
#define CLI_PROGRESS_FD_TEXT "3"
#define CLI_PROGRESS_EVERY_MS 200

typedef struct cli_child_spec {
    char *const *argv; /* command and arguments (borrowed) */
    char *const *envp; /* full environment (borrowed) */
    const void *input; /* written to the child's stdin */
    size_t input_len;
    int64_t timeout_ms;    /* > 0 */
    int64_t kill_grace_ms; /* SIGTERM -> SIGKILL grace */
    size_t max_stdout;     /* bytes of stdout kept; the rest drained */
    /* Polled while the child runs; non-zero kills the child (its process
     * group, SIGTERM then SIGKILL) and the run ends CLI_CHILD_ABORTED
     * with abort_reason = the value. */
    int (*abort_fn)(void *user);
    void *abort_user;
    int keeper_fd; /* cli_keeper_start's pipe, or -1 */
    /* T42: each line the command writes to descriptor CLI_PROGRESS_FD
     * (its environment says which: SQLBUS_PROGRESS_FD), without its
     * newline, cut to SB_MAX_PROGRESS bytes; at most one call each
     * CLI_PROGRESS_EVERY_MS with the latest line, and the last line once
     * the command ends. Called on the thread running the command. NULL:
     * the descriptor is still there, and what is written is dropped. */
    void (*progress_fn)(void *user, const char *line, size_t len);
    void *progress_user;
} cli_child_spec;

typedef struct cli_child_result {
    int outcome;      /* enum cli_child_outcome */
    int status;       /* see the outcome */
    int abort_reason; /* what abort_fn returned, for CLI_CHILD_ABORTED */
    int64_t elapsed_ms;
    sb_buf out;                         /* stdout (up to max_stdout; owned) */
    int out_truncated;                  /* stdout was longer than max_stdout */
    char err_tail[CLI_STDERR_TAIL + 1]; /* last bytes of stderr, NUL-ended */
    size_t err_len;
} cli_child_result;

/* Run `spec->argv` in its own process group with `input` on stdin (a
 * memfd written whole before the command starts) and its stdout/stderr
 * captured, until it exits, the timeout passes or abort_fn asks to stop.
 * The command dies with this process (PR_SET_PDEATHSIG), and with a
 * keeper (`keeper_fd`) its whole process group does (see child.c).
 * Always fills `res` (free with cli_child_result_free). Thread-safe:
 * several handlers run children at once. */
void cli_child_run(const cli_child_spec *spec, cli_child_result *res);
void cli_child_result_free(cli_child_result *res);

/* Start the keeper, which kills the process group of every command
 * still running when this process ends, however it ends. Call it before
 * starting threads that run commands. Returns the descriptor to give
 * cli_child_spec.keeper_fd and sets *pid, or -1 with errno set. */
int cli_keeper_start(pid_t *pid);
/* Stop the keeper once no command runs: close `fd` and reap `pid`. */
void cli_keeper_stop(int fd, pid_t pid);

/* bounded.c: run fn(user) on a thread of its own, waiting at most `ms`;
 * 1 when it finished, 0 when it is left running (then the program must
 * end with _Exit: see cli_ctx.abandoned). */
int cli_run_bounded(void (*fn)(void *), void *user, int64_t ms);

/* Name of a signal ("SIGKILL"), or NULL when not in the table. */
const char *cli_signal_name(int sig);

/* ---- handler.c: the work handler (one message -> one child) ---- */
typedef struct cli_work {
    char *const *argv; /* handler command (borrowed from main) */
    int64_t timeout_ms;
    int64_t kill_grace_ms;
    _Atomic int stopping; /* 1 once main asked the worker to stop; 2 when
                               a second signal asks to kill children */
    int keeper_fd;        /* see cli_keeper_start */
    const cli_ctx *ctx;
} cli_work;

/* The sb_handler_fn of `sqlbus work`; `user` is a cli_work. */
int cli_work_handler(sb_delivery *d, void *user);

/* Build the handler environment: the process environment without any
 * SQLBUS_* delivery variables, plus those of `msg`. Transferred: free
 * with cli_env_free. NULL on out of memory. */
char **cli_env_for(const sb_msg *msg);
void cli_env_free(char **envp);

#endif
