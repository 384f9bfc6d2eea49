/*
 * core.h - internal services shared by every module: allocation, errors,
 * logging, clocks, randomness, UUIDs, MD5, capped buffers, JSON headers,
 * JSON paths, validation, UTF-16, time zones and schedules (cron
 * expressions, intervals). Nothing here touches a database.
 */
#ifndef SB_CORE_H
#define SB_CORE_H

#include "sqlbus.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef SB_DEBUG
#include <assert.h>
#define SB_ASSERT(x) assert(x)
#else
#define SB_ASSERT(x) ((void)0)
#endif

#if defined(__GNUC__)
#define SB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SB_PRINTF(a, b)
#endif

/* ---- allocation (alloc.c) ---- */
void *sb__malloc(size_t n);
/* calloc with a multiplication-overflow check. */
void *sb__calloc(size_t count, size_t size);
void *sb__realloc(void *p, size_t n);
void sb__free(void *p);
/* NULL in -> NULL out; otherwise a copy or NULL on OOM. */
char *sb__strdup(const char *s);
char *sb__strndup(const char *s, size_t n);
void *sb__memdup(const void *p, size_t n);
/* A list the library returns (include/sqlbus.h, "Lists"): one block of
 * `n` pointers, then, at offset *elems_at (aligned for any type), the `n`
 * elements of `elem_size` bytes, zeroed. The caller's stride is the
 * pointer's, never the element's, so an element type may grow at its end.
 * NULL on overflow or out of memory; `n` must be > 0. Use SB__LIST_NEW. */
void *sb__list_alloc(size_t n, size_t ptr_size, size_t elem_size,
                     size_t *elems_at);
/* Allocate `list` (a T **) with `n` (> 0) zeroed elements, each pointer
 * set; `list` is NULL on failure. Free the whole list with sb__free. */
#define SB__LIST_NEW(list, n)                                                  \
    do {                                                                       \
        size_t sb__n_ = (n), sb__at_ = 0;                                      \
        (list) =                                                               \
            sb__list_alloc(sb__n_, sizeof *(list), sizeof **(list), &sb__at_); \
        for (size_t sb__i_ = 0; (list) != NULL && sb__i_ < sb__n_; sb__i_++)   \
            (list)[sb__i_] =                                                   \
                (void *)((char *)(list) + sb__at_ + sb__i_ * sizeof **(list)); \
    } while (0)
/* How many allocations have failed on the calling thread so far; compare
 * before and after a call into a library that hides out-of-memory. */
unsigned long sb__alloc_failures(void);

/* ---- errors (error.c) ---- */
/* Fill `err` (may be NULL) and return `code`. `field` may be NULL. */
int sb__err(sb_error *err, int code, const char *field, const char *fmt, ...)
    SB_PRINTF(4, 5);
/* Bounded string copy that always terminates; returns 1 if truncated. */
int sb__strlcpy(char *dst, const char *src, size_t cap);

/* ---- logging (log.c) ---- */
typedef struct sb_logger {
    sb_log_fn fn;
    void *user;
    int level;
} sb_logger;
void sb__log(const sb_logger *lg, int level, const char *component,
             const char *fmt, ...) SB_PRINTF(4, 5);

/* ---- clocks and sleeping (clock.c) ---- */
int64_t sb__mono_us(void);
int64_t sb__wall_us(void);
void sb__sleep_us(int64_t us);
/* Days from 1970-01-01 to year-month-day in the proleptic Gregorian
 * calendar (negative before 1970); the date is not checked. */
int64_t sb__days_from_civil(int64_t y, int64_t m, int64_t d);
/* The inverse: the date `days` after 1970-01-01 (month 1-12, day 1-31). */
void sb__civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* ---- condition variables on the monotonic clock (sync.c) ---- */
void sb__cond_init_monotonic(pthread_cond_t *cv);
/* Wait on `cv` until signalled or the monotonic time `until_us` (may wake
 * early; callers re-check their condition). */
void sb__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         int64_t until_us);

/* ---- randomness (random.c) ---- */
/* Fill `buf` from getrandom(2); never fails (falls back to a mixed clock
 * counter if the kernel refuses, which only matters for jitter). */
void sb__random_bytes(void *buf, size_t n);
uint64_t sb__random_u64(void);
/* A delay in [base/2, base] microseconds; full jitter halves herds. */
int64_t sb__jitter_us(int64_t base_us);

/* ---- UUIDs (uuid.c) ---- */
void sb__uuid7_at(char out[37], int64_t unix_ms);
/* The canonical text of 16 bytes taken in order: 8-4-4-4-12 lower-case
 * hex digits and a NUL. */
void sb__uuid_format(const uint8_t b[16], char out[37]);
/* The name-based UUID (RFC 9562 version 3: MD5) of `len` bytes of `name`
 * (borrowed; may be NULL when `len` is 0) in namespace `ns`: the same
 * inputs give the same id in every process. Thread-safe. */
void sb__uuid3(const uint8_t ns[16], const void *name, size_t len,
               char out[37]);
/* Canonicalise a UUID text (any case, 36 chars) into lower case `out`;
 * SB_INVALID if it is not a UUID. */
int sb__uuid_normalize(const char *in, char out[37]);

/* ---- MD5 (md5.c) ---- */
/* The RFC 1321 digest of `len` bytes at `data` (borrowed; may be NULL when
 * `len` is 0). For ids that must match other tools (rule E6), not for
 * security. Thread-safe. */
void sb__md5(const void *data, size_t len, uint8_t out[16]);
/* The digest of the bytes at `a` followed by those at `b`, without
 * building the concatenation (so no allocation and no failure). */
void sb__md5_concat(const void *a, size_t alen, const void *b, size_t blen,
                    uint8_t out[16]);

/* ---- capped buffers (buf.c) ---- */
typedef struct sb_buf {
    char *data; /* NUL-terminated while not failed */
    size_t len;
    size_t cap;
    size_t max; /* hard cap on len */
    int failed; /* sticky: SB_NOMEM or SB_TOOBIG after the first failure */
} sb_buf;
void sb__buf_init(sb_buf *b, size_t max);
int sb__buf_append(sb_buf *b, const void *p, size_t n);
int sb__buf_puts(sb_buf *b, const char *s);
int sb__buf_printf(sb_buf *b, const char *fmt, ...) SB_PRINTF(2, 3);
/* The decimal digits of `v`, as printf's %lld without printf's cost: the
 * error store writes hundreds of numbers a message. */
int sb__buf_int(sb_buf *b, int64_t v);
void sb__buf_reset(sb_buf *b);
void sb__buf_free(sb_buf *b);
/* Hand the data to the caller (transferred, sb__free) and reset. */
char *sb__buf_detach(sb_buf *b);
/* Append `s` (UTF-8; NULL = "") as a JSON string literal, escaping quotes,
 * backslashes and control characters. */
int sb__buf_json_str(sb_buf *b, const char *s);
/* The same for `len` bytes (no NUL inside). */
int sb__buf_json_mem(sb_buf *b, const char *s, size_t len);

/* ---- JSON headers (json.c) ---- */
#define SB_MAX_HEADERS_BYTES (64 * 1024)
/* Validate a JSON object of string -> string within the header limit. */
int sb__headers_validate(const char *json, size_t len, sb_error *err);
/* The same, and what a message being published may carry: its
 * sb-correlation-id (any spelling of the name) a correlation id as
 * sb_validate_correlation_id has it (rule C7), so every publisher -- the
 * library, the CLI, the HTTP API -- is held to the one check. */
int sb__headers_validate_outgoing(const char *json, size_t len, sb_error *err);
/* Copy of one header's value (case-insensitive key), or NULL. */
char *sb__headers_get(const char *json, const char *key);
/* A new headers object: `json` (may be NULL) with each key/value pair of
 * `kv` (NULL-terminated list, values may be NULL to skip) set. */
int sb__headers_merge(const char *json, const char *const *kv, char **out,
                      sb_error *err);

/* A new headers object: `json` without the `n` keys listed. */
int sb__headers_without(const char *json, const char *const *keys, size_t n,
                        char **out, sb_error *err);
/* Parse a headers object into `*kv` (transferred): key0, value0, key1,
 * value1, ... with `*n` pairs. Free with sb__headers_free. */
int sb__headers_parse(const char *json, char ***kv, size_t *n);
void sb__headers_free(char **kv, size_t n);

/* ---- the message type of a headers object (msgtype.c) ---- */
enum {
    SB_MTYPE_NONE = 0,    /* no type (or headers that are not an object) */
    SB_MTYPE_FOUND = 1,   /* the type is in `out` */
    SB_MTYPE_TOO_LONG = 2 /* a type of `cap` bytes or more */
};
/* The message type of `json` (may be NULL) into `out` (`cap` bytes):
 * sb-message-type, else NServiceBus.EnclosedMessageTypes (keys in any
 * case, the first non-empty one), cut at its first ';' or ',' without
 * trailing blanks -- the type the error store records. One pass over the
 * text and no allocation unless a key or the value chosen holds an
 * escape or the text is not a plain object of strings (then a full
 * parse). `out` is "" unless SB_MTYPE_FOUND. Pure; thread-safe. */
int sb__headers_message_type(const char *json, char *out, size_t cap);

/* ---- JSON paths (json_path.c) ---- */
#define SB_JSON_PATH_MAX 512  /* bytes of one path */
#define SB_JSON_PATH_STEPS 64 /* member names and indexes of one path */
#define SB_JSON_PATHS_MAX 32  /* paths tried by one extraction */
#define SB_JSON_UNWRAP_MAX 8  /* JSON strings walked into, per path */
/* Check a path expression: optional "$.", member names separated by '.',
 * each followed by any "[N]" array indexes ("$.headers.CorrelationId",
 * "data.items[0].id"). SB_INVALID naming "path" and the problem. */
int sb__json_path_check(const char *path, sb_error *err);
/* The first of `paths` (tried in order) that leads to a string (as is) or
 * an integer (decimal) in the JSON document `doc` of `len` bytes (rule
 * C24). Member names compare ASCII-case-insensitively, an exact-case
 * member first; a string holding a JSON object or array is walked into.
 * `len` is checked against `budget` before anything is parsed. *out is
 * transferred (sb__free). SB_OK, SB_TOOBIG (over budget), SB_INVALID (a
 * bad path, or the document is not JSON: field "payload"), SB_NOTFOUND
 * (no path matched), SB_NOMEM. Thread-safe. */
int sb__json_extract_text(const void *doc, size_t len, const char *const *paths,
                          size_t n_paths, size_t budget, char **out,
                          sb_error *err);
/* sb__json_extract_text, then the value must be a valid correlation id
 * (C7): SB_INVALID naming "correlation_id" when it is not. */
int sb__json_extract(const void *doc, size_t len, const char *const *paths,
                     size_t n_paths, size_t budget, char **out, sb_error *err);

/* ---- validation (validate.c) ---- */
/* A name compared byte-exactly (queue names T3, correlation ids C7):
 * 1..max_len bytes of valid UTF-8, no control characters, no leading or
 * trailing white space. `what` words the message, `field` names the
 * input. */
int sb__validate_name(const char *name, size_t max_len, const char *field,
                      const char *what, sb_error *err);
/* Letters, digits and '_', not starting with a digit, 1..max_len bytes. */
int sb__validate_identifier(const char *name, size_t max_len, const char *field,
                            sb_error *err);
/* The byte a URL's "%XX" at `p` (p[0] == '%', `avail` bytes from p on)
 * stands for, or -1 when it is not two hex digits or is %00. */
int sb__percent_byte(const char *p, size_t avail);
/* A caller-owned result struct whose first member is `size_t size`:
 * SB_INVALID naming "size" when it is under `want` (`type` names the
 * struct), else zero it, keeping `size`. */
int sb__out_struct(void *out, size_t want, const char *type, sb_error *err);
/* Check `len` bytes are valid UTF-8 (no overlongs, no surrogates). */
bool sb__utf8_valid(const char *s, size_t len);

/* ---- UTF-8-safe cuts (text.c) ---- */
/* The length at most `n` at which `s` may be cut without splitting a
 * character: `n` backed up over continuation bytes. s[n] must be
 * readable (`n` at most strlen(s), or inside a buffer that long). Pure. */
size_t sb__utf8_cut(const char *s, size_t n);

/* Text built into a caller's buffer: always NUL-terminated; the first
 * piece that does not fit is cut on a UTF-8 boundary (never inside a
 * multi-byte character) and everything after it is dropped. */
typedef struct sb_text {
    char *out;
    size_t cap, len;
    bool full;
} sb_text;
/* Start empty text in `out` of `cap` bytes (cap == 0: nothing is ever
 * written and `out` may be NULL). */
void sb__text_init(sb_text *t, char *out, size_t cap);
/* Append `n` bytes of `s`. */
void sb__text_put(sb_text *t, const char *s, size_t n);

/* ---- UTF-16 (utf16.c), for ODBC's SQL_C_WCHAR ---- */
/* `len` bytes of UTF-8 at `s` (borrowed) as UTF-16 in native uint16_t
 * units: *out (transferred, sb__free) holds *units units and a 0 unit
 * after them; past U+FFFF, surrogate pairs. SB_INVALID when `s` is not
 * valid UTF-8 (overlongs, surrogates, past U+10FFFF, truncated or stray
 * bytes), SB_NOMEM. */
int sb__utf8_to_utf16(const char *s, size_t len, uint16_t **out, size_t *units);
/* `units` UTF-16 units at `u` (borrowed) as NUL-terminated UTF-8: *out
 * (transferred, sb__free), *len bytes without the NUL. An unpaired
 * surrogate becomes U+FFFD. SB_NOMEM. */
int sb__utf16_to_utf8(const uint16_t *u, size_t units, char **out, size_t *len);

/* ---- time zones (tzif.c, tzrule.c; the loader tzload.c) ----
 * A zone maps UTC to local wall time and back without the process's TZ,
 * tzset or localtime (process-wide state, not thread-safe): the
 * transitions of a TZif file (RFC 8536) and, after the last one, the
 * POSIX TZ rule of its footer. Instants and wall times are seconds since
 * the Unix epoch (a wall time counts local seconds as if they were UTC);
 * offsets are seconds east of UTC. A zone is immutable once built, so
 * threads may share one. docs/internals/cron.md has the rules. */
typedef struct sb_tz sb_tz;
#define SB_TZIF_MAX (256 * 1024) /* bytes of one TZif file */
#define SB_TZ_RULE_MAX 128       /* bytes of one POSIX TZ string */
#define SB_TZ_NAME_MAX 128       /* bytes of one zone name */
#define SB_TZ_OFFSET_MAX 93599   /* |offset| < 26 h, as RFC 8536 bounds it */
#define SB_TZ_DIR "/usr/share/zoneinfo"
/* A zone from the `len` bytes of a TZif file (versions 1 to 4) at `data`
 * (borrowed). *out is transferred (sb__tz_free). SB_INVALID naming "tzif"
 * (a malformed file, leap-second records, an offset of 26 h or more, a
 * footer that is not a POSIX TZ string), SB_TOOBIG (over SB_TZIF_MAX),
 * SB_NOMEM. Pure. */
int sb__tzif_parse(const void *data, size_t len, sb_tz **out, sb_error *err);
/* A zone from a POSIX TZ string alone ("UTC0", "CET-1CEST,M3.5.0,M10.5.0/3",
 * "<+0330>-3:30"), as a TZif footer has it. *out is transferred.
 * SB_INVALID naming "tz_rule", SB_NOMEM. Pure. */
int sb__tz_from_rule(const char *rule, sb_tz **out, sb_error *err);
/* NULL-safe. */
void sb__tz_free(sb_tz *tz);
/* The offset in effect at the instant `utc`; *next_change (may be NULL)
 * gets the first instant after `utc` at which the zone may change it, or
 * INT64_MAX. Thread-safe. */
int32_t sb__tz_offset(const sb_tz *tz, int64_t utc, int64_t *next_change);
/* The instant of wall time `wall`: the first instant whose wall time is
 * `wall` or later. So a wall time that occurs twice (the clock falls back)
 * is its first occurrence, and one that never occurs (the clock jumps
 * forward over it) is the first instant after the gap. Thread-safe. */
int64_t sb__tz_resolve(const sb_tz *tz, int64_t wall);
/* A zone name as sb__tz_load takes it: 1 to SB_TZ_NAME_MAX bytes of
 * [A-Za-z0-9_+-/], not starting with '/', no empty component, no "..".
 * SB_INVALID naming "time_zone". */
int sb__tz_name_check(const char *name, sb_error *err);
/* The zone `name` ("Europe/Berlin") read from `dir`/`name` (dir NULL =
 * SB_TZ_DIR). "UTC" and "Etc/UTC" are built in and need no file. *out is
 * transferred. SB_INVALID naming "time_zone" (a bad name, not a TZif
 * file), SB_NOTFOUND (no such zone), SB_ERROR (the file could not be
 * read), SB_NOMEM. Reads the file; the parsing is sb__tzif_parse's. */
int sb__tz_load(const char *dir, const char *name, sb_tz **out, sb_error *err);

/* ---- cron expressions (cron.c) ---- */
/* A parsed 5-field expression, a value (no allocation): the set bits are
 * the values each field matches. */
typedef struct sb_cron {
    uint64_t minutes; /* bits 0-59 */
    uint32_t hours;   /* bits 0-23 */
    uint32_t mdays;   /* bits 1-31 */
    uint16_t months;  /* bits 1-12 */
    uint8_t wdays;    /* bits 0-6, Sunday 0 */
    /* The field started with '*' ("*", or "*" with a step): unrestricted
     * for the day rule. When both days fields are restricted a day matches
     * if either does (Vixie cron), else both must. */
    bool mday_star, wday_star;
} sb_cron;
#define SB_CRON_MAX 256         /* bytes of one expression */
#define SB_CRON_SEARCH_YEARS 50 /* sb__cron_next's search horizon */
/* Parse "minute hour day-of-month month day-of-week" (`*`, lists, ranges,
 * steps, JAN-DEC and SUN-SAT in any case, 0 and 7 both Sunday) or a macro
 * (@hourly @daily @midnight @weekly @monthly @yearly @annually) into *out.
 * SB_INVALID naming "cron", its message naming the field ("cron: field 2
 * (hour): 24 is out of range 0-23"), also for an expression that never
 * occurs ("0 0 30 2 *"); *out is untouched then. Pure. */
int sb__cron_parse(const char *expr, sb_cron *out, sb_error *err);
/* Whether wall time `wall` (seconds, any second of the minute) matches. */
bool sb__cron_matches(const sb_cron *c, int64_t wall);
/* The first occurrence strictly after `after_us` (microseconds since the
 * epoch, UTC) of `c` read in zone `tz` (borrowed; NULL = UTC): a matching
 * wall time resolved as sb__tz_resolve does, so a time skipped by a jump
 * forward runs at the first instant after the gap, and a repeated one
 * runs once, at its first occurrence. SB_INVALID naming "cron" when none
 * comes within SB_CRON_SEARCH_YEARS or before the year 10000 ("never
 * occurs"), or `after_us` is outside years 1 to 9999. Pure, thread-safe. */
int sb__cron_next(const sb_cron *c, const sb_tz *tz, int64_t after_us,
                  int64_t *next_us, sb_error *err);

/* ---- schedules: intervals and missed occurrences (schedule.c) ---- */
#define SB_EVERY_MIN_US 1000000LL                   /* 1 s */
#define SB_EVERY_MAX_US (366LL * 86400 * 1000000LL) /* 366 days */
/* Instants the schedules accept: years 1 to 9999, in microseconds. */
#define SB_SCHED_MIN_US (-62135596800LL * 1000000)
#define SB_SCHED_MAX_US (253402300799LL * 1000000 + 999999)
/* One schedule (a value; the pointers are borrowed): a cron expression
 * read in a zone, or a fixed interval `every_us` whose occurrences are
 * anchor_us + k * every_us for k >= 0 (UTC durations: "every 1d" is
 * 86400 s, whatever the zone's clocks do). */
typedef struct sb_schedule {
    const sb_cron *cron; /* NULL for an interval */
    const sb_tz *tz;     /* the cron's zone, NULL = UTC */
    int64_t every_us;    /* SB_EVERY_MIN_US..SB_EVERY_MAX_US */
    int64_t anchor_us;
} sb_schedule;
/* SB_INVALID naming "every" unless every_us is SB_EVERY_MIN_US to
 * SB_EVERY_MAX_US and anchor_us an accepted instant. */
int sb__every_check(int64_t every_us, int64_t anchor_us, sb_error *err);
/* The first occurrence of `s` strictly after `after_us`. SB_INVALID as
 * sb__cron_next or sb__every_check say. Pure, thread-safe. */
int sb__schedule_next(const sb_schedule *s, int64_t after_us, int64_t *next_us,
                      sb_error *err);
/* The last occurrence at or before `at_us`: SB_NOTFOUND when there is
 * none (before an interval's anchor, or a cron's search horizon). */
int sb__schedule_prev(const sb_schedule *s, int64_t at_us, int64_t *prev_us,
                      sb_error *err);

/* What to do with occurrences that were due while nothing ran them. */
typedef enum sb_missed {
    SB_MISSED_SKIP, /* publish none of them; continue from now on */
    SB_MISSED_ONCE  /* publish one occurrence for all of them */
} sb_missed;
/* "skip" or "once"; SB_INVALID naming "missed". */
int sb__missed_parse(const char *text, sb_missed *out, sb_error *err);
/* The answer of sb__schedule_due. Every instant is an occurrence of the
 * schedule, in microseconds UTC; `occurrence_us` is the input of the
 * published message's key, the same for every scheduler that has seen
 * the same `last_us`, so two of them publish an occurrence once. */
typedef struct sb_due {
    bool publish;          /* publish one message now, for occurrence_us */
    int64_t occurrence_us; /* (publish) the occurrence, or, folding
                              missed ones (once), the first of them */
    bool has_last;         /* record last_us as the last occurrence run */
    int64_t last_us;       /* every occurrence up to it is settled */
    int64_t next_us;       /* call again then; at once when <= now_us */
    bool missed;           /* occurrences older than the grace were */
    int64_t missed_first_us, missed_last_us; /* ... folded or dropped */
} sb_due;
/* What is due at `now_us` for schedule `s` whose last occurrence run is
 * *last_us (NULL: none yet; nothing before now_us - grace_us is due then).
 * An occurrence is on time up to `grace_us` (0 to SB_EVERY_MAX_US) late
 * and missed after that. The earliest on-time occurrence is published;
 * missed ones, under SB_MISSED_SKIP, are dropped, and under
 * SB_MISSED_ONCE, folded into one publish keyed by the first of them.
 * One publish a call: the caller publishes, records `last_us` (in the
 * same transaction) and calls again when `next_us` comes. SB_INVALID
 * naming the input at fault. Pure, thread-safe. */
int sb__schedule_due(const sb_schedule *s, sb_missed policy,
                     const int64_t *last_us, int64_t now_us, int64_t grace_us,
                     sb_due *out, sb_error *err);

#endif
