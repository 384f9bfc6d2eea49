/*
 * sqlbus.h - the public API of libsqlbus.
 *
 * sqlbus turns a relational database (SQLite or PostgreSQL) into a durable
 * messaging backbone. This header is the API reference: every function says
 * what it does, who owns each pointer (borrowed = valid only during the call,
 * copied = the library keeps its own copy, transferred = the receiver frees
 * it), its result codes and its thread safety.
 *
 * Conventions
 *  - Every function that can fail returns an int result code (SB_OK = 0) and
 *    takes an optional `sb_error *` that receives detail. NULL is allowed.
 *  - Options structs carry a `size` field; a zeroed struct means defaults.
 *    Set `size = sizeof(the struct)` so later versions can grow the struct.
 *  - Destructors accept NULL.
 *  - The library never prints and never exits; install a log callback.
 */
#ifndef SQLBUS_H
#define SQLBUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SB_BUILDING_LIBRARY) && defined(__GNUC__)
#define SB_API __attribute__((visibility("default")))
#else
#define SB_API
#endif

#define SB_VERSION_MAJOR 0
#define SB_VERSION_MINOR 1
#define SB_VERSION_PATCH 0
#define SB_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------
 * Result codes: one space for the whole library. The low 8 bits are the
 * primary class; some codes add a detail in the upper bits, so callers may
 * test `(rc & 0xff) == SB_BACKEND`.
 * ---------------------------------------------------------------------- */
/* Every result code once, as X(name, value, text): the constants below,
 * sb_strerror's text and sb_result_name's name all come from this list. */
#define SB_RESULT_CODES(X)                                                     \
    X(SB_OK, 0, "ok")                                                          \
    X(SB_ERROR, 1, "error")              /* unclassified failure */            \
    X(SB_INVALID, 2, "invalid argument") /* sb_error.field names it */         \
    X(SB_NOMEM, 3, "out of memory")      /* an allocation failed */            \
    X(SB_NOTFOUND, 4, "not found")       /* message, queue or object */        \
    /* transient: lock busy, deadlock, serialization */                        \
    X(SB_BUSY, 5, "busy (transient)")                                          \
    X(SB_TIMEOUT, 6, "timed out") /* a deadline passed */                      \
    X(SB_CONFLICT, 7, "conflict") /* uniqueness or state */                    \
    /* permanent database error; see sqlstate/native */                        \
    X(SB_BACKEND, 8, "database error")                                         \
    X(SB_CLOSED, 9, "closed") /* the handle is stopping */                     \
    /* the lease fence (lock_id) no longer matches */                          \
    X(SB_LOST_LEASE, 10, "lease lost")                                         \
    /* the schema is missing or has the wrong shape */                         \
    X(SB_SCHEMA, 11, "schema missing or wrong")                                \
    /* transient: the connection was lost or refused */                        \
    X(SB_UNAVAILABLE, 12, "database unavailable (transient)")                  \
    X(SB_TOOBIG, 13, "too big")    /* a size limit was exceeded */             \
    X(SB_MISUSE, 14, "API misuse") /* called in a wrong state */               \
    /* nothing to do (e.g. no claimable message) */                            \
    X(SB_EMPTY, 15, "empty")                                                   \
    /* a reply may have been consumed: unknown */                              \
    X(SB_INDETERMINATE, 16, "outcome unknown (indeterminate)")                 \
    X(SB_REPLY_ERROR, 17, "error reply") /* the wait ended with one */

/* Extended codes: a primary class in the low 8 bits, a detail above. */
#define SB_RESULT_EXTENDED(X)                                                  \
    X(SB_SCHEMA_MISSING, SB_SCHEMA | (1 << 8), "schema missing")               \
    X(SB_SCHEMA_MISMATCH, SB_SCHEMA | (2 << 8), "schema of the wrong shape")

#define SB_RESULT_ENUM_(name, value, text) name = (value),
enum sb_result {
    SB_RESULT_CODES(SB_RESULT_ENUM_) SB_RESULT_EXTENDED(SB_RESULT_ENUM_)
};
#undef SB_RESULT_ENUM_

/* Static text for a result code (never NULL): an extended code's own, a
 * code with an unknown detail its class's, else "unknown result code".
 * Thread-safe. */
SB_API const char *sb_strerror(int rc);

/* The constant's name of a result code ("SB_BUSY", "SB_SCHEMA_MISSING"),
 * found as sb_strerror finds its text, or "SB_UNKNOWN" (never NULL).
 * Thread-safe. */
SB_API const char *sb_result_name(int rc);

/* True when `rc` is worth retrying later (SB_BUSY, SB_UNAVAILABLE). */
SB_API int sb_is_transient(int rc);

/*
 * Error detail, filled by the function that failed. The caller owns the
 * struct (usually on its stack); the library writes only into it.
 */
typedef struct sb_error {
    int code;          /* the result code returned */
    int native;        /* backend native code (SQLite extended code), or 0 */
    char sqlstate[6];  /* PostgreSQL / ODBC SQLSTATE, or "" */
    char field[64];    /* the input field at fault, or "" */
    char message[512]; /* human-readable detail, always NUL-terminated */
} sb_error;

/* Reset an sb_error to "no error". NULL-safe. */
SB_API void sb_error_clear(sb_error *err);

/* ------------------------------------------------------------------------
 * Allocator seam and logging
 * ---------------------------------------------------------------------- */
typedef struct sb_allocator {
    void *(*malloc_fn)(size_t n, void *user);
    void *(*realloc_fn)(void *p, size_t n, void *user);
    void (*free_fn)(void *p, void *user);
    void *user;
} sb_allocator;

/*
 * Replace the allocator used by every sqlbus object. Call before any other
 * sqlbus function; NULL restores the C library's allocator. This is the one
 * process-wide setting of the library (as in hiredis and libuv), because an
 * allocator must be the same for a pointer's whole life. Not thread-safe.
 */
SB_API void sb_set_allocator(const sb_allocator *a);

/* Free memory that a sqlbus function transferred to the caller. */
SB_API void sb_free(void *p);

/*
 * Lists and structs the library fills. A function that returns a list of
 * structs (sb_queue_list, sb_errors_list, ...) gives `*out` as an array
 * of `*n_out` pointers, one block with the structs they point to: index
 * it as out[i]->field and free it whole with sb_free (NULL when `*n_out`
 * is 0). Only the pointers have a stride, so a struct may grow fields at
 * its end in a later version without breaking a program built against
 * this header. Each such struct starts with `size`: the library sets it
 * to the size it fills (a program built against a newer header sees
 * which fields an older library left out); where the caller owns the
 * struct, the caller sets `size` first (SB_INVALID naming "size" when it
 * is smaller than the first version's) and the library writes no byte
 * past it.
 */

enum sb_log_level {
    SB_LOG_DEBUG = 10,
    SB_LOG_INFO = 20,
    SB_LOG_WARN = 30,
    SB_LOG_ERROR = 40
};

/* A log callback: `component` and `message` are borrowed. */
typedef void (*sb_log_fn)(int level, const char *component, const char *message,
                          void *user);

/* ------------------------------------------------------------------------
 * Parsers shared with the CLI (pure functions, thread-safe)
 * ---------------------------------------------------------------------- */

/* Parse "250ms", "30s", "5m", "2h", "1d", "1500us" or a bare number of
 * milliseconds into milliseconds. SB_INVALID on bad text or overflow. */
SB_API int sb_parse_duration_ms(const char *text, int64_t *out_ms,
                                sb_error *err);

/* Parse "16MiB", "512KiB", "1GB", "100" (bytes) into bytes. */
SB_API int sb_parse_size(const char *text, uint64_t *out_bytes, sb_error *err);

/* Check a queue name against rule T3 (1-200 bytes of UTF-8, no control
 * characters, no leading or trailing white space, ASCII or Unicode:
 * U+00A0, U+2000-U+200B, U+2028, U+3000, U+FEFF, ...). SB_INVALID with
 * field "queue" otherwise. Thread-safe. */
SB_API int sb_validate_queue_name(const char *name, sb_error *err);

/* Write a new UUIDv7 in canonical text form (36 chars + NUL) into `out`. */
SB_API int sb_uuid7(char out[37], sb_error *err);

/* ------------------------------------------------------------------------
 * The bus: one handle per database, safe to share across threads.
 * ---------------------------------------------------------------------- */
typedef struct sb_bus sb_bus;
typedef struct sb_tx sb_tx;
typedef struct sb_msg sb_msg;

enum sb_durability {
    SB_DURABILITY_FULL = 0,  /* SQLite synchronous=FULL (default) */
    SB_DURABILITY_NORMAL = 1 /* SQLite synchronous=NORMAL: a power loss may
                                lose the last commits, never corrupt */
};

enum sb_schema_mode {
    SB_SCHEMA_AUTO = 0,   /* create missing objects, then verify (default) */
    SB_SCHEMA_VERIFY = 1, /* never create: verify only (migrations own it) */
    SB_SCHEMA_NONE = 2    /* neither create nor verify (tools only) */
};

typedef struct sb_options {
    size_t size;
    /* Connection URL (copied): "sqlite:PATH", "PATH.db",
     * "postgresql://...", "postgres://..." or "host=... dbname=...". */
    const char *url;
    /* Prefix of every table (copied; default "sqlbus_"). Letters, digits
     * and '_' only. */
    const char *table_prefix;
    /* PostgreSQL schema (copied; default: the connection's search_path). */
    const char *schema;
    int schema_mode;                  /* enum sb_schema_mode */
    int durability;                   /* enum sb_durability (SQLite only) */
    int pool_size;                    /* connections kept open (default 8) */
    int64_t busy_timeout_ms;          /* SQLite busy_timeout (default 5000) */
    uint64_t max_payload_bytes;       /* default 16 MiB */
    const char *dead_letter_queue;    /* default "deadletter" (copied) */
    int64_t dead_letter_retention_ms; /* 0 = keep dead letters forever */
    int notify;    /* cross-process wake-ups (PostgreSQL NOTIFY,
                             a watch on SQLite's WAL file): 0 = on
                             (default), -1 = off (polling only) */
    sb_log_fn log; /* optional log callback */
    void *log_user;
    int log_level;        /* minimum level passed to `log` (default INFO) */
    const char *endpoint; /* name written to sb-processing-endpoint
                             (copied; default "host:pid") */
    /* Fields below were added after the first version: a caller whose
     * `size` is SB_OPTIONS_V1_SIZE gets their defaults. */
    /* How often this process adds its counts (published, acked, naked,
     * dead-lettered per queue) to the database's {p}counts table, which
     * sb_counts_list reads for every process (S6, S8): 0 = every 1000 ms
     * (default), 10 to 3,600,000 ms, or -1 = never. A background thread
     * writes only when a count moved; sb_close writes the rest. */
    int64_t counts_flush_ms;
    /* The time one SQL statement of this bus may take, 0 to 86,400,000
     * ms; 0 = no limit (default). A statement still running at the limit
     * (waiting for a lock included) is cancelled and its call fails with
     * SB_TIMEOUT, err->field "statement_timeout_ms" (never retried: the
     * statement would take as long again); the transaction it ran in is
     * rolled back, so its later statements and its commit fail
     * (SB_BACKEND). PostgreSQL: `SET statement_timeout` on each pooled
     * connection (0 leaves the server's setting); SQLite: a progress
     * handler that reads the clock every 1,000 VM steps, and the busy
     * handler stops waiting at the limit. For buses that answer people
     * (`sqlbus serve --request-timeout`), not for bulk work. */
    int64_t statement_timeout_ms;
    /* Endpoint liveness (issue 22): while a worker of this bus runs, a
     * thread of the bus writes one row per endpoint to {p}heartbeats
     * every this many ms (one upsert an endpoint, never one a message):
     * 0 = every SB_HEARTBEAT_INTERVAL_DEFAULT_MS (default),
     * SB_HEARTBEAT_INTERVAL_MIN_MS to SB_HEARTBEAT_INTERVAL_MAX_MS, or -1
     * = never. An endpoint is dead once its last beat is
     * SB_HEARTBEAT_GRACE_INTERVALS intervals old, or at once after its
     * last worker stopped gracefully (sb_heartbeat_list). */
    int64_t heartbeat_interval_ms;
} sb_options;

/* The size of sb_options as first published (through `endpoint`). */
#define SB_OPTIONS_V1_SIZE (offsetof(sb_options, endpoint) + sizeof(char *))

/*
 * Open a bus. Connects once to check the URL and (per schema_mode) creates
 * and verifies the schema under a cross-process lock. On success `*out` is
 * a new handle the caller closes with sb_close. Result codes: SB_INVALID
 * (bad URL or option; err->field names it), SB_UNAVAILABLE (the database
 * could not be reached: refused or lost connections are retried first,
 * as in every transaction, six attempts over up to about 0.3 s),
 * SB_SCHEMA, SB_BACKEND (among others a database that refuses the login:
 * unknown database, role or password, err->sqlstate saying which; a
 * SQLite file that cannot be opened), SB_NOMEM.
 */
SB_API int sb_open(const sb_options *opts, sb_bus **out, sb_error *err);

/* Close a bus and every connection it holds. Workers must be freed first.
 * NULL-safe. Not concurrent with other calls on the same bus. */
SB_API void sb_close(sb_bus *bus);

/* "sqlite", "postgresql" (also through ODBC) or "mssql". Borrowed, valid
 * until sb_close. */
SB_API const char *sb_backend_name(const sb_bus *bus);

/* ------------------------------------------------------------------------
 * Transactions (rule T12): publish inside the caller's own transaction.
 * ---------------------------------------------------------------------- */

/* Begin a write transaction on a pooled connection. Thread-safe; a tx is
 * used by one thread at a time. */
SB_API int sb_tx_begin(sb_bus *bus, sb_tx **out, sb_error *err);

/* Commit and free the transaction (also frees it on failure). Wakes local
 * and (PostgreSQL) remote workers for the queues published to. */
SB_API int sb_tx_commit(sb_tx *tx, sb_error *err);

/* Roll back and free. NULL-safe. */
SB_API void sb_tx_rollback(sb_tx *tx);

/* Run SQL text without parameters inside the transaction (the caller's own
 * writes). `sql` is borrowed. */
SB_API int sb_tx_exec(sb_tx *tx, const char *sql, sb_error *err);

/* The native connection of the transaction: `sqlite3 *` or `PGconn *`.
 * Borrowed: valid until commit/rollback; do not commit through it. */
SB_API void *sb_tx_native(sb_tx *tx);

/* ------------------------------------------------------------------------
 * Publish (rules T9-T12)
 * ---------------------------------------------------------------------- */
typedef struct sb_outgoing {
    const char *id;      /* optional UUID; NULL = new UUIDv7 */
    const void *payload; /* bytes, may be NULL when payload_len = 0 */
    size_t payload_len;
    const char *headers_json; /* optional JSON object of string->string;
                                 an sb-correlation-id (any spelling) must
                                 pass sb_validate_correlation_id (C7) */
    int64_t delay_ms;         /* >= 0; not claimable before now + delay */
} sb_outgoing;

/*
 * Publish `n` messages to `queue`, all or nothing (T11). With `tx` non-NULL
 * the rows join the caller's transaction (T12); otherwise they commit
 * before return. An id that already exists is success and changes nothing
 * (T9). If `ids_out` is non-NULL it receives the id of each message (37
 * bytes each, caller-owned array of n). Everything is borrowed.
 * Result codes: SB_INVALID (field names the message and the limit),
 * SB_TOOBIG, SB_BUSY/SB_UNAVAILABLE (transient), SB_BACKEND.
 * Thread-safe.
 */
SB_API int sb_publish_batch(sb_bus *bus, sb_tx *tx, const char *queue,
                            const sb_outgoing *msgs, size_t n,
                            char (*ids_out)[37], sb_error *err);

/* Publish one message; see sb_publish_batch. `id_out` may be NULL. */
SB_API int sb_publish(sb_bus *bus, sb_tx *tx, const char *queue,
                      const sb_outgoing *msg, char id_out[37], sb_error *err);

/* A message with the options of the queue features (docs/transport.md,
 * "Queue features"). `size` is sizeof(sb_outgoing_ex) of the caller's
 * build and the stride of an array of them: members added later are read
 * only when `size` covers them. */
#define SB_PRIORITY_MIN (-32768)
#define SB_PRIORITY_MAX 32767
typedef struct sb_outgoing_ex {
    size_t size;
    sb_outgoing msg; /* id, payload, headers, delay, as for sb_publish */
    int priority;    /* T34: claimed highest first within a queue;
                        -32768 to 32767, default 0 */
    /* T40: the message expires this long after its publish, 0 for never
     * (1 ms to SB_TTL_MAX_MS, longer than delay_ms): if no handler has
     * started it by then, it is dead-lettered with reason "expired". */
    int64_t expires_in_ms;
    /* T38: a key the queue holds once (1 to SB_UNIQUE_KEY_MAX bytes of
     * UTF-8, no control characters), or NULL: a publish whose key is held
     * under `unique_policy` is refused with SB_CONFLICT. */
    const char *unique_key;
    int unique_policy;        /* SB_UNIQUE_ACTIVE (0), _QUEUED or _WINDOW */
    int64_t unique_window_ms; /* SB_UNIQUE_WINDOW: 1 ms to SB_TTL_MAX_MS */
} sb_outgoing_ex;

/* T38: when a message's unique key is held. */
enum {
    SB_UNIQUE_ACTIVE = 0, /* while a message with the key waits or runs */
    SB_UNIQUE_QUEUED = 1, /* while one waits (not once a consumer has it) */
    SB_UNIQUE_WINDOW = 2  /* while one waits or runs, and for
                             unique_window_ms after one was published */
};
#define SB_UNIQUE_KEY_MAX 255

/* sb_publish_batch for messages with options: the same rules (T9-T12),
 * all or nothing. A message with a priority other than 0 marks the queue
 * prioritized in the same transaction (T34). Result codes as
 * sb_publish_batch; SB_INVALID names `msgs[i].size` or the option and its
 * limit. Everything is borrowed. Thread-safe. */
SB_API int sb_publish_ex(sb_bus *bus, sb_tx *tx, const char *queue,
                         const sb_outgoing_ex *msgs, size_t n,
                         char (*ids_out)[37], sb_error *err);

/* ------------------------------------------------------------------------
 * Claim and settle (rules T14-T22)
 * ---------------------------------------------------------------------- */

/*
 * Claim up to `max` ready messages of `queue` with a lease of `lease_ms`.
 * On success `*out` is a caller-owned array of `*n_out` messages
 * (transferred: free with sb_msg_free_array); `*n_out` may be 0.
 */
SB_API int sb_claim(sb_bus *bus, const char *queue, int max, int64_t lease_ms,
                    sb_msg ***out, size_t *n_out, sb_error *err);

/* Free one message / an array from sb_claim. NULL-safe. */
SB_API void sb_msg_free(sb_msg *msg);
SB_API void sb_msg_free_array(sb_msg **msgs, size_t n);

/* Accessors. Returned pointers are borrowed from the message. A message
 * is used by one thread at a time: sb_msg_header parses the headers on
 * first use and keeps them in the message. */
SB_API const char *sb_msg_id(const sb_msg *msg);
SB_API const char *sb_msg_queue(const sb_msg *msg);
SB_API const char *sb_msg_lock_id(const sb_msg *msg);
SB_API const void *sb_msg_payload(const sb_msg *msg, size_t *len);
SB_API const char *sb_msg_headers(const sb_msg *msg); /* JSON object */
/* One header's value, or NULL. Keys compare case-insensitively. NULL too
 * when the first use could not allocate the parsed headers; a later call
 * parses again. */
SB_API const char *sb_msg_header(const sb_msg *msg, const char *key);
SB_API int sb_msg_attempts(const sb_msg *msg);
SB_API int64_t sb_msg_created_at_us(const sb_msg *msg); /* Unix us */
/* The sb-correlation-id header, or NULL. */
SB_API const char *sb_msg_correlation_id(const sb_msg *msg);

/* Ack: delete the message, fenced by its lock id (T18). With `tx`
 * non-NULL it joins the caller's transaction. SB_LOST_LEASE when the fence
 * no longer matches. */
SB_API int sb_ack(sb_bus *bus, sb_tx *tx, const sb_msg *msg, sb_error *err);

/* Nak: release for redelivery after `delay_ms`, recording `error_text`
 * (borrowed, may be NULL; capped at 8 KiB). SB_LOST_LEASE as for ack. */
SB_API int sb_nak(sb_bus *bus, const sb_msg *msg, int64_t delay_ms,
                  const char *error_text, sb_error *err);

/* Renew the lease to now + lease_ms, fenced (T16). */
SB_API int sb_renew(sb_bus *bus, const sb_msg *msg, int64_t lease_ms,
                    sb_error *err);

/* The most a message's stored progress holds, in bytes (T42). */
#define SB_MAX_PROGRESS 4096

/* T42: store `text` (UTF-8, at most SB_MAX_PROGRESS bytes; `len` bytes,
 * no NUL needed) as the progress of a claimed message, fenced by its
 * lease like a renewal (SB_LOST_LEASE when it no longer holds). Peek
 * (sb_msg_progress), `GET /api/queues/{q}/messages` and the dashboard
 * show the last value stored; a nak or hand-back clears it. SB_INVALID
 * names `text` (not UTF-8, too long); SB_MISUSE for a message that was
 * not claimed. */
SB_API int sb_set_progress(sb_bus *bus, const sb_msg *msg, const char *text,
                           size_t len, sb_error *err);

/* What went wrong, for dead-letter headers. All fields borrowed/optional. */
typedef struct sb_failure {
    size_t size;
    const char *reason;         /* sb-dead-letter-reason */
    const char *exception_type; /* e.g. "exit:3", "timeout" */
    const char *exception_message;
    const char *stacktrace;
    /* Read only when `size` covers it (a later field): the
     * sb-processing-endpoint of the dead letter; NULL = the bus's
     * endpoint (sb_options). */
    const char *endpoint;
} sb_failure;

/* Move the message to the dead-letter queue with the failure headers and
 * delete the original, in one transaction, fenced (T21, T22). */
SB_API int sb_dead_letter(sb_bus *bus, const sb_msg *msg,
                          const sb_failure *failure, sb_error *err);

/* A byte range [off, off + len) of a text. */
typedef struct sb_span {
    size_t off, len;
} sb_span;

/* Where a runtime's report of an uncaught exception sits in a program's
 * output (sb_find_uncaught), as ranges of that output. */
typedef struct sb_uncaught {
    sb_span type;    /* "ValueError", "java.lang.IllegalStateException" */
    sb_span message; /* may be empty; may span lines (Java) */
    sb_span trace;   /* the report, from its first line to its last */
} sb_uncaught;

/*
 * Find the last report of an uncaught exception in `text` (`len` bytes,
 * need not be NUL-terminated; a line holding a NUL or another control
 * character, tab and a final CR aside, is never part of one): 1 and *out
 * filled, else 0 and *out untouched. So a program's failure can carry
 * its exception (sb_failure, sb_delivery_fail): `sqlbus work` reads its
 * commands' stderr with it, whatever language they are written in, and
 * the error store groups them by exception type and first frame (E12).
 * Recognised:
 *
 *   Python  "Traceback (most recent call last):", its indented entries,
 *           then "TYPE: MESSAGE" (or "TYPE"); chained tracebacks ("During
 *           handling of the above exception..." / "The above exception
 *           was the direct cause...") are one report from the first
 *           header, with the last exception.
 *   Java, .NET, Node.js (V8)   indented "at" frames (as
 *           the error store reads frames) under a header line
 *           "[PREFIX]TYPE[ [CODE]][: MESSAGE]", PREFIX one of
 *           `Exception in thread "NAME" `, "Unhandled exception. ",
 *           "Unhandled Exception: ", "Uncaught ". Without a prefix TYPE
 *           must contain a '.' or end in "Exception" or "Error". The
 *           header is the first such line after the last blank line
 *           among the 16 lines before the first frame; lines between it
 *           and the frame continue the message (Java). A .NET message
 *           ends at " ---> " (an inner exception). The report goes on
 *           over frames, indented lines and "Caused by: " lines.
 *   Go      "panic: MESSAGE" or "fatal error: MESSAGE" (TYPE "panic" or
 *           "fatal error"), then, after blank, indented or "[signal"
 *           lines, a "goroutine N [...]:" line; the report ends at the
 *           first blank or "exit status" line after it.
 *
 * TYPE (but Go's) is at most 255 bytes of letters, digits and "_$.+`",
 * not starting with a digit or '.'. A report whose first lines were cut
 * off (no header, or a "Caused by:" first) is not one. Linear in len;
 * reads no byte outside text[0..len); allocates nothing; thread-safe.
 */
SB_API int sb_find_uncaught(const char *text, size_t len, sb_uncaught *out);

/* ------------------------------------------------------------------------
 * Queue statistics and the dead-letter queue (T31, T32)
 * ---------------------------------------------------------------------- */
typedef struct sb_queue_stats {
    size_t size; /* filled by the library ("Lists" above) */
    char queue[201];
    int64_t ready;
    int64_t delayed;
    int64_t in_flight;
    int64_t dead_lettered; /* rows in the DLQ whose sb-failed-queue is this */
    int64_t oldest_ready_age_ms; /* -1 when nothing is ready */
    /* The queue's settings (T34, T35): 0 where it has none. */
    int paused;      /* claims stopped (sb_queue_pause) */
    int prioritized; /* some message had a priority other than 0 */
    int64_t ttl_ms;  /* T40: its time to live (sb_queue_set_ttl), 0: none */
    /* T36: its limits (sb_queue_set_limits), 0: none. */
    int max_running;          /* messages leased at once */
    int rate_limit;           /* claims per rate_interval_ms */
    int64_t rate_interval_ms; /* 0 without a rate limit */
} sb_queue_stats;

/* List every queue: those with rows, and those with settings (a paused
 * queue with no messages too). `*out` is a transferred list ("Lists"
 * above: free with sb_free). */
SB_API int sb_queue_list(sb_bus *bus, sb_queue_stats ***out, size_t *n_out,
                         sb_error *err);

/* Pause a queue (T35): every worker of it, in any process, stops claiming
 * within SB_SETTINGS_REFRESH_MS; messages it holds run and settle;
 * publishes are still accepted; sb_claim returns nothing. Idempotent.
 * SB_INVALID (queue), transient and backend codes. Thread-safe. */
SB_API int sb_queue_pause(sb_bus *bus, const char *queue, sb_error *err);
/* Resume a paused queue (T35): claims start again within
 * SB_SETTINGS_REFRESH_MS. Resuming a queue that is not paused changes
 * nothing. */
SB_API int sb_queue_resume(sb_bus *bus, const char *queue, sb_error *err);
/* How often a worker reads its queue's settings (pause, priorities). */
#define SB_SETTINGS_REFRESH_MS 1000

/* T40: the longest time to live, of a queue or a message: 100 years. */
#define SB_TTL_MAX_MS (100LL * 365 * 86400 * 1000)
/* T40: give `queue` a time to live of `ttl_ms` (1 ms to SB_TTL_MAX_MS; 0
 * removes it): a message of the queue that no handler has started
 * `ttl_ms` after its publish is dead-lettered with reason "expired", by
 * the claim that finds it or by sb_queue_expire. It applies to the
 * messages waiting already; a message's own expiry
 * (sb_outgoing_ex.expires_in_ms) applies when it is sooner. Workers see
 * a change within SB_SETTINGS_REFRESH_MS. SB_INVALID names `ttl_ms` and
 * the limit, or `queue` for the dead-letter queue. Thread-safe. */
SB_API int sb_queue_set_ttl(sb_bus *bus, const char *queue, int64_t ttl_ms,
                            sb_error *err);
/* T36: a queue's limits. `size` is sizeof(sb_queue_limits) of the
 * caller's build: members added later are read only when it covers
 * them. All 0 (no limit) clears them. */
#define SB_MAX_RUNNING_MAX 10000
#define SB_RATE_LIMIT_MAX 1000000
#define SB_RATE_INTERVAL_MAX_MS 86400000LL
typedef struct sb_queue_limits {
    size_t size;
    /* At most this many messages of the queue leased at once, by every
     * worker and sb_claim of any process or host: 1 to
     * SB_MAX_RUNNING_MAX, 0 for no limit. */
    int max_running;
    /* At most rate_limit claims per rate_interval_ms (a token bucket of
     * rate_limit tokens, refilled continuously): rate_limit 1 to
     * SB_RATE_LIMIT_MAX with rate_interval_ms 1 ms to
     * SB_RATE_INTERVAL_MAX_MS (a day), or both 0 for no limit. */
    int rate_limit;
    int64_t rate_interval_ms;
} sb_queue_limits;
/* T36: set (or clear) the limits of `queue`; the bucket starts full.
 * Enforced in the claim, across processes and hosts: sb_claim at once,
 * workers within SB_SETTINGS_REFRESH_MS. SB_INVALID names `limits`,
 * `limits->size` or the field and its limit, or `queue` for the
 * dead-letter queue; nothing is changed then. `limits` is borrowed.
 * Transient and backend codes. Thread-safe. */
SB_API int sb_queue_set_limits(sb_bus *bus, const char *queue,
                               const sb_queue_limits *limits, sb_error *err);
/* The most messages one sb_queue_expire call dead-letters. */
#define SB_EXPIRE_MAX 100000
/* T40: dead-letter, with reason "expired", up to `max` (1 to
 * SB_EXPIRE_MAX) messages of any queue whose expiry or queue's time to
 * live has passed and that no consumer holds, in transactions of up to
 * 500; `*expired` (may be NULL) counts them, also when a later batch
 * fails. `sqlbus serve` runs it every SB_EXPIRE_EVERY_MS. Thread-safe. */
SB_API int sb_queue_expire(sb_bus *bus, size_t max, size_t *expired,
                           sb_error *err);
#define SB_EXPIRE_EVERY_MS 1000

/* What sb_cancel found (T39). */
enum {
    SB_CANCEL_WAITING = 1, /* ready or delayed: no consumer had it */
    SB_CANCEL_RUNNING = 2  /* a consumer held its lease */
};

/* T39: cancel message `id` of `queue`: it is dead-lettered at once with
 * reason "cancelled", in one transaction (never dropped). A consumer that
 * held it (*outcome SB_CANCEL_RUNNING; else SB_CANCEL_WAITING) finds its
 * lease gone at its next renewal, so its handler's sb_delivery_cancelled
 * turns true, and its ack is refused (SB_LOST_LEASE). SB_NOTFOUND when
 * the queue has no message `id` (already settled, or never there); the
 * dead-letter queue's own messages are not cancelled (SB_INVALID, field
 * "queue"). `outcome` may be NULL. */
SB_API int sb_cancel(sb_bus *bus, const char *queue, const char *id,
                     int *outcome, sb_error *err);
/* T39, T38: cancel, as sb_cancel does, every message of `queue` holding
 * unique key `key` (waiting or running; usually one); `*cancelled` (may
 * be NULL) counts them. SB_NOTFOUND naming "unique_key" when none holds
 * it; SB_INVALID naming "unique_key" for a key outside T38's limits. */
SB_API int sb_cancel_key(sb_bus *bus, const char *queue, const char *key,
                         size_t *cancelled, sb_error *err);

/* T41: periodic jobs. A schedule publishes a message to its queue at
 * each occurrence of a cron expression (in a time zone) or of a fixed
 * interval; the schedules live in {prefix}schedules, and any number of
 * schedulers (sb_schedule_run_due, in any process on any host) publish
 * each occurrence once: its message id is derived from the schedule's
 * name and the occurrence, and the occurrence is recorded in the
 * publish's transaction. */
/* Later than this, an occurrence is missed. */
#define SB_SCHEDULE_GRACE_MS 60000
enum {
    SB_SCHEDULE_MISSED_SKIP = 0, /* missed occurrences are dropped */
    SB_SCHEDULE_MISSED_ONCE = 1  /* one message stands for all of them */
};
/* A schedule to add or replace. `size` is sizeof(sb_schedule_def) of the
 * caller's build. Everything is borrowed. */
typedef struct sb_schedule_def {
    size_t size;
    const char *name;  /* unique; T3's rules for queue names */
    const char *queue; /* where its messages go */
    /* A 5-field cron expression (minute hour day-of-month month
     * day-of-week, or @hourly ...; docs/internals/cron.md), or NULL for
     * an interval. */
    const char *cron;
    int64_t every_ms;      /* cron NULL: 1 s to 366 days, else 0 */
    const char *time_zone; /* the cron's zone ("Europe/Berlin"); NULL =
                              "UTC"; must be NULL for an interval */
    int missed;            /* SB_SCHEDULE_MISSED_* */
    const void *payload;   /* each message's bytes (may be NULL when
                              payload_len is 0); max_payload_bytes */
    size_t payload_len;
    const char *headers_json; /* each message's headers, or NULL; as
                                 sb_publish checks them */
    /* Occurrences after this instant (microseconds since the epoch) run;
     * 0 = now. An interval's occurrences are start + k * every. */
    int64_t start_us;
} sb_schedule_def;

/* Add schedule def->name, or replace it whole: its occurrences up to
 * start_us count as run. SB_INVALID naming the field (name, queue, cron,
 * every_ms, time_zone, missed, payload, headers, size) and its limit;
 * nothing is stored then. Transient and backend codes. Thread-safe. */
SB_API int sb_schedule_put(sb_bus *bus, const sb_schedule_def *def,
                           sb_error *err);
/* Remove schedule `name`: SB_NOTFOUND when there is none. Messages it
 * published stay. Thread-safe. */
SB_API int sb_schedule_remove(sb_bus *bus, const char *name, sb_error *err);

/* One schedule as sb_schedule_list gives it ("Lists" above). Instants in
 * microseconds since the epoch. */
typedef struct sb_schedule_info {
    size_t size; /* filled by the library */
    char name[201];
    char queue[201];
    char cron[257];      /* "" for an interval */
    int64_t every_ms;    /* 0 for a cron expression */
    char time_zone[129]; /* "" for an interval */
    int missed;          /* SB_SCHEDULE_MISSED_* */
    int64_t payload_len;
    int64_t last_us; /* every occurrence up to it ran (or was missed) */
    int64_t next_us; /* the next occurrence; -1: none before year 10000 */
    int64_t created_us, updated_us; /* the database's clock */
} sb_schedule_info;

/* Every schedule, by name. `*out` is a transferred list ("Lists" above:
 * free with sb_free). Thread-safe. */
SB_API int sb_schedule_list(sb_bus *bus, sb_schedule_info ***out, size_t *n_out,
                            sb_error *err);

/* One step of a scheduler at `now_us` (microseconds since the epoch,
 * the caller's clock): for each schedule whose next occurrence has come,
 * publish what is due (at most one message an occurrence, missed ones
 * skipped or folded as the schedule says; SB_SCHEDULE_GRACE_MS late is
 * missed) and record it in the same transaction. Schedulers racing for
 * an occurrence publish it once. `*published` (may be NULL) counts this
 * call's messages; `*next_wake_us` (may be NULL) is the earliest next
 * occurrence of any schedule (-1: none): call again then, or sooner to
 * see schedules added meanwhile. Transient and backend codes. Thread-safe. */
SB_API int sb_schedule_run_due(sb_bus *bus, int64_t now_us, int *published,
                               int64_t *next_wake_us, sb_error *err);

/* Endpoint liveness (issue 22; docs/transport.md, "Endpoint liveness").
 * Every worker started with sb_worker_start registers its endpoint (its
 * `endpoint` option, else its queue) with its bus, which beats for it
 * every sb_options.heartbeat_interval_ms: one row per endpoint instance
 * (the endpoint on a host) in {prefix}heartbeats. */
#define SB_HEARTBEAT_INTERVAL_DEFAULT_MS 10000
#define SB_HEARTBEAT_INTERVAL_MIN_MS 100
#define SB_HEARTBEAT_INTERVAL_MAX_MS 3600000
/* An instance whose last beat is this many of its own intervals old is
 * dead (40 s at the default interval). */
#define SB_HEARTBEAT_GRACE_INTERVALS 4

/* One endpoint instance as sb_heartbeat_list gives it ("Lists" above).
 * Instants in microseconds since the epoch, by the database's clock
 * (SQLite: the writer's). */
typedef struct sb_heartbeat {
    size_t size; /* filled by the library */
    char id[37]; /* stable: a name-based UUID of endpoint and host_id */
    char endpoint[201];
    char host[256];
    char host_id[37];    /* a name-based UUID of the host's name and id */
    int64_t pid;         /* the process that beat last */
    int64_t interval_ms; /* its interval */
    int64_t started_us;  /* when that process started beating for it */
    int64_t last_beat_us;
    int64_t stopped_us; /* its last worker stopped gracefully; 0: not */
    int64_t now_us;     /* the database's clock when it was listed */
    int monitored;      /* 0: muted (sb_heartbeat_monitor) */
    int alive;          /* beating: not stopped, and its last beat at most
                           SB_HEARTBEAT_GRACE_INTERVALS intervals old */
} sb_heartbeat;

/* Every endpoint instance, by endpoint and host. `*out` is a transferred
 * list ("Lists" above: free with sb_free). Transient and backend codes.
 * Thread-safe. */
SB_API int sb_heartbeat_list(sb_bus *bus, sb_heartbeat ***out, size_t *n_out,
                             sb_error *err);
/* Mute (`monitored` 0) or unmute (1) instance `id`; kept across its
 * beats. SB_NOTFOUND naming "id" when there is none; SB_INVALID naming
 * "id" when it is not a UUID. Thread-safe. */
SB_API int sb_heartbeat_monitor(sb_bus *bus, const char *id, int monitored,
                                sb_error *err);
/* Forget instance `id` (a process still running it writes it again at
 * its next beat). SB_NOTFOUND / SB_INVALID as sb_heartbeat_monitor. */
SB_API int sb_heartbeat_remove(sb_bus *bus, const char *id, sb_error *err);

/* Settings (issue 22): small named documents in {prefix}settings, kept
 * between runs and shared by every process of the database (`sqlbus
 * serve` keeps its e-mail settings and endpoint settings there). A name
 * is 1 to SB_SETTING_NAME_MAX bytes of UTF-8 without control
 * characters; a value at most SB_SETTING_VALUE_MAX bytes of UTF-8
 * (JSON by convention). */
#define SB_SETTING_NAME_MAX 400
#define SB_SETTING_VALUE_MAX 65536
/* Setting `name`'s value into `*value` (transferred: sb_free) and, when
 * `updated_us` is not NULL, when it was last written. SB_NOTFOUND naming
 * "name" when there is none. Thread-safe. */
SB_API int sb_setting_get(sb_bus *bus, const char *name, char **value,
                          int64_t *updated_us, sb_error *err);
/* Store `value` as setting `name`, replacing any. SB_INVALID naming
 * "name" or "value" and the limit. Thread-safe. */
SB_API int sb_setting_put(sb_bus *bus, const char *name, const char *value,
                          sb_error *err);
/* Remove setting `name`: SB_NOTFOUND when there is none. */
SB_API int sb_setting_remove(sb_bus *bus, const char *name, sb_error *err);
/* Called once per setting; everything is borrowed for the call. Return
 * 0 to go on, anything else to stop (the call still returns SB_OK). */
typedef int (*sb_setting_fn)(const char *name, const char *value,
                             int64_t updated_us, void *user);
/* Every setting whose name starts with `prefix` (NULL or "" for all), by
 * name, to `fn` on the caller's thread with no connection held.
 * Thread-safe. */
SB_API int sb_setting_list(sb_bus *bus, const char *prefix, sb_setting_fn fn,
                           void *user, sb_error *err);

/* This process's own counts on one bus since sb_open (S8; docs/metrics.md).
 * Other processes on the same database count their own: these are not
 * totals of the database (sb_counts_list gives those). */
#define SB_METRICS_QUEUES 64  /* queues counted by name; the rest in `other` */
#define SB_METRICS_BUCKETS 17 /* latency buckets, the last one +Inf */

/* sb_bus_counters embeds this struct in an array, so its layout is fixed
 * (it has no `size`): new per-queue counters come as a new struct. */
typedef struct sb_queue_counts {
    char queue[201];       /* "" for `other` */
    int64_t published;     /* messages accepted by publish calls (an id that
                              already existed too), counted at commit */
    int64_t acked;         /* acked (workers: handler succeeded, settled) */
    int64_t naked;         /* released for redelivery */
    int64_t dead_lettered; /* moved to the dead-letter queue */
} sb_queue_counts;

typedef struct sb_latency_histogram {
    int64_t count;  /* observations: the sum of counts[] */
    int64_t sum_us; /* their total duration */
    /* Upper bounds in microseconds (100 us to 10 s); le_us[last] is
     * INT64_MAX, the +Inf bucket. */
    int64_t le_us[SB_METRICS_BUCKETS];
    /* Observations in (le_us[i-1], le_us[i]]: per bucket, not cumulative. */
    int64_t counts[SB_METRICS_BUCKETS];
} sb_latency_histogram;

typedef struct sb_bus_counters {
    size_t size;                 /* set to sizeof(sb_bus_counters) */
    int64_t opened_at_us;        /* Unix microseconds of sb_open */
    char dead_letter_queue[201]; /* the bus's dead-letter queue */
    size_t n_queues;             /* entries of queues[] in use */
    sb_queue_counts queues[SB_METRICS_QUEUES]; /* in order of first use */
    sb_queue_counts other;        /* every queue past the first 64, summed */
    sb_latency_histogram claim;   /* claim statements (sb_claim, workers,
                                    error ingestion), successful ones */
    sb_latency_histogram handler; /* worker handler calls */
} sb_bus_counters;

/* Copy the counters into `*out` (caller-owned; set out->size first: at
 * least sizeof(sb_bus_counters) of this version; only `size` bytes are
 * written). Counting costs the message paths a few relaxed atomic adds
 * and two clock reads per claim statement and handler call. SB_INVALID for
 * NULL arguments or a short `size`. Thread-safe; the snapshot is not one
 * instant: counters move while it is read. */
SB_API int sb_bus_metrics(sb_bus *bus, sb_bus_counters *out, sb_error *err);

/* The same counts by queue and message type (docs/metrics.md). A
 * message's type is its sb-message-type header, else the first type of
 * NServiceBus.EnclosedMessageTypes without its assembly (what the error
 * store records). Each queue counts its first SB_METRICS_TYPES types by
 * name; later ones, and types longer than 200 bytes, are summed in the
 * queue's `other` entry. */
#define SB_METRICS_TYPES 100

typedef struct sb_type_counts {
    size_t size;     /* filled by the library ("Lists" above) */
    char queue[201]; /* "" for the queues past the first SB_METRICS_QUEUES,
                        summed (sb_bus_counters.other) */
    char type[201];  /* the message type; "" for messages without one, and
                        for `other` */
    int other;       /* 1: this queue's types past its first
                        SB_METRICS_TYPES, summed */
    int64_t published;
    int64_t acked;
    int64_t naked;
    int64_t dead_lettered;
    sb_latency_histogram handler; /* this type's worker handler calls */
} sb_type_counts;

/* This process's counts on `bus` by queue and message type: a transferred
 * list ("Lists" above: free with sb_free), queues in order of first use,
 * and in each the messages without a type, then the named types in order
 * of first use, then `other`; an entry that counted nothing is left out.
 * Counted with the per-queue counters, at the same moments; a queue that
 * sees no typed message has only its untyped entry. SB_INVALID for NULL
 * arguments, SB_NOMEM. Thread-safe; not one instant, like sb_bus_metrics. */
SB_API int sb_bus_metrics_by_type(sb_bus *bus, sb_type_counts ***out,
                                  size_t *n_out, sb_error *err);

/* Count `bus`'s traffic in `owner`'s counters from now on instead of its
 * own, so that sb_bus_metrics of either reports both and one flush writes
 * them to {p}counts: a process with two buses on one database and prefix
 * (`sqlbus serve` answers its API on a bus of its own, opened with
 * statement_timeout_ms) counts as one process. What `bus` counted before
 * is written by its own flusher first, which then stops. Call it before
 * `bus` is used by another thread and before any worker starts on it;
 * `owner` (borrowed) must outlive `bus`. Nothing happens when either is
 * NULL or they are the same bus. Not thread-safe. */
SB_API void sb_bus_count_into(sb_bus *bus, sb_bus *owner);

/* Every process's counts, per queue, as the processes have added them to
 * the {p}counts table (sb_options.counts_flush_ms): totals since the
 * queue's row was first written, each at most one flush interval behind
 * (a killed process loses its last interval). `queue` "" sums the queues
 * past a process's first SB_METRICS_QUEUES. Ordered by queue. `*out` is
 * transferred (sb_free). SB_SCHEMA_MISSING when the table is absent (a
 * schema from before it, under SB_SCHEMA_VERIFY). */
SB_API int sb_counts_list(sb_bus *bus, sb_queue_counts **out, size_t *n_out,
                          sb_error *err);

/* What holds back PostgreSQL's xmin horizon (docs/backends.md): while a
 * snapshot or transaction id older than a row's deletion is alive, the
 * row's versions and index entries stay, and every scan walks them. */
typedef struct sb_xmin_holder {
    size_t size;      /* set to sizeof(sb_xmin_holder) */
    int found;        /* 0: no session, slot or prepared transaction
                             holds an xmin (the fields below are empty) */
    char kind[24];    /* "backend", "replication_slot" or
                             "prepared_transaction" */
    int pid;          /* the backend's pid (a slot's active_pid); 0
                             when there is none */
    char name[64];    /* application_name, slot name or the prepared
                             transaction's gid */
    char state[32];   /* pg_stat_activity.state ("idle in
                             transaction", "active" ...), "active" /
                             "inactive" for a slot, "prepared" */
    char user[64];    /* the role ("" for a slot) */
    int64_t xmin_age; /* transactions since its xmin or xid */
    int64_t age_ms;   /* since the transaction began (a backend) or
                             was prepared; -1 for a slot */
} sb_xmin_holder;

/* The oldest xmin holder of the bus's PostgreSQL cluster other than the
 * calling connection: client and other backends of pg_stat_activity with
 * a backend_xmin or backend_xid, replication slots with an xmin or
 * catalog_xmin, prepared transactions; the one with the oldest xmin (the
 * longest open on a tie). When `warn_after_ms` >= 0 and the holder's
 * transaction is at least that old (a slot: always), a warning naming it
 * goes to the bus's log, at most once a minute per bus unless the holder
 * changes. SB_INVALID for a bus of another backend (`bus`) or a short
 * `size`. Thread-safe. */
SB_API int sb_xmin_holder_get(sb_bus *bus, int64_t warn_after_ms,
                              sb_xmin_holder *out, sb_error *err);

/* Add this process's counts that moved since the last write to {p}counts
 * now, instead of at the next interval. SB_MISUSE when counting to the
 * table is off (counts_flush_ms -1, SB_SCHEMA_NONE, or the table is
 * missing); database errors as sb_tx_commit. Thread-safe. */
SB_API int sb_counts_flush(sb_bus *bus, sb_error *err);

typedef struct sb_dlq_filter {
    size_t size;
    const char *failed_queue; /* only letters from this queue, or NULL */
    int64_t older_than_ms;    /* only letters older than this, 0 = any */
    const char *id;           /* only this dead-letter id, or NULL */
    size_t limit;             /* 0 = no limit (list: default 100) */
} sb_dlq_filter;

/* List dead letters (newest last). `*out` is a transferred array of
 * messages (sb_msg_free_array); lease fields are empty. */
SB_API int sb_dlq_list(sb_bus *bus, const sb_dlq_filter *filter, sb_msg ***out,
                       size_t *n_out, sb_error *err);

/* Read up to `limit` (1 to 500) messages of `queue` from `offset` (at most
 * 1,000,000) in dequeue order, without claiming them: ready ones first,
 * then delayed and leased ones by when they become available. `*out` is a
 * transferred array (sb_msg_free_array); lease ids are empty, so a peeked
 * message cannot be settled. SB_INVALID names `queue`, `limit` or
 * `offset`. Thread-safe. */
SB_API int sb_queue_peek(sb_bus *bus, const char *queue, size_t offset,
                         size_t limit, sb_msg ***out, size_t *n_out,
                         sb_error *err);
/* For a peeked message: when it is (or was) available, and the end of its
 * lease (0 when not leased); Unix microseconds of the database clock.
 * Other messages answer 0. */
SB_API int64_t sb_msg_available_at_us(const sb_msg *msg);
SB_API int64_t sb_msg_locked_until_us(const sb_msg *msg);
/* For a peeked message: its priority (T34), and the progress last stored
 * for it (T42; NUL-terminated, NULL when none). Other messages answer 0
 * and NULL. */
SB_API int sb_msg_priority(const sb_msg *msg);
SB_API const char *sb_msg_progress(const sb_msg *msg);
/* T40: the message's own expiry (sb_outgoing_ex.expires_in_ms after its
 * publish), microseconds since the epoch in the database's clock; 0 when
 * it has none (its queue's time to live is not included). From
 * sb_queue_peek and sb_claim. */
SB_API int64_t sb_msg_expires_at_us(const sb_msg *msg);
/* T38: the message's unique key, or NULL. From sb_queue_peek. */
SB_API const char *sb_msg_unique_key(const sb_msg *msg);

/* Progress callback for bulk operations: done so far, total (or -1). */
typedef void (*sb_progress_fn)(int64_t done, int64_t total, void *user);

/* Re-publish matching dead letters to their original queue, each in one
 * transaction with its delete, attempts reset. `*moved` gets the count. */
SB_API int sb_dlq_requeue(sb_bus *bus, const sb_dlq_filter *filter,
                          sb_progress_fn progress, void *user, int64_t *moved,
                          sb_error *err);

/* Delete matching dead letters in bounded batches. */
SB_API int sb_dlq_purge(sb_bus *bus, const sb_dlq_filter *filter,
                        sb_progress_fn progress, void *user, int64_t *purged,
                        sb_error *err);

/* Delete dead letters older than the bus's dead_letter_retention_ms in
 * bounded batches (T25). `*deleted` may be NULL. */
SB_API int sb_dlq_prune(sb_bus *bus, int64_t *deleted, sb_error *err);

/* ------------------------------------------------------------------------
 * Schema (T6-T8, T33)
 * ---------------------------------------------------------------------- */

/* The transport's DDL for `backend` ("sqlite", "postgresql" or "mssql")
 * with `table_prefix` (NULL = default); sb_channel_schema_sql gives the
 * channel's, sb_errors_schema_sql the error store's. Transferred: free
 * with sb_free. */
SB_API int sb_schema_sql(const char *backend, const char *table_prefix,
                         char **out, sb_error *err);

/* Every statement text the transport can send on `backend` ("sqlite",
 * "postgresql" or "mssql"), with `table_prefix` (NULL = default) put in:
 * `fn` is called once a statement, in a fixed order, with its name
 * ("transport.claim") and its text ($1.. placeholders; a schema script
 * may hold several statements). sb_channel_statements and
 * sb_errors_statements give the channel's and the error store's; the
 * error store's queries built from a caller's filters come as one
 * statement per shape. On "mssql" the transport's walk ends with the
 * session and transaction batches the ODBC driver sends ("db.session",
 * ...). For review (`sqlbus schema print --statements`): nothing
 * connects. */
typedef void (*sb_statement_fn)(const char *name, const char *sql, void *user);
SB_API int sb_schema_statements(const char *backend, const char *table_prefix,
                                sb_statement_fn fn, void *user, sb_error *err);

/* Verify the transport's schema against the catalog now: the messages
 * table's columns, key and indexes, and the columns of {prefix}counts
 * when it exists. SB_SCHEMA_MISMATCH names the column or index (a
 * column the table lacks before one of another type) and err->message
 * carries the statement that fixes it. */
SB_API int sb_schema_verify(sb_bus *bus, sb_error *err);

/* Create missing objects under the cross-process lock, then verify. When
 * the creation fails on a table of another shape (an index over a column
 * the table lacks), the verification's SB_SCHEMA_MISMATCH is returned,
 * not the database's error. */
SB_API int sb_schema_migrate(sb_bus *bus, sb_error *err);

/* ------------------------------------------------------------------------
 * Worker runtime (T15-T27)
 * ---------------------------------------------------------------------- */
typedef struct sb_worker sb_worker;
typedef struct sb_delivery sb_delivery;

/*
 * A handler: return SB_OK to ack. Any other return naks (or dead-letters
 * when attempts are spent), using the failure recorded with
 * sb_delivery_fail if any. Runs on a worker thread; `d` is borrowed for
 * the call.
 */
typedef int (*sb_handler_fn)(sb_delivery *d, void *user);

enum sb_ack_mode {
    SB_ACK_AFTER_HANDLER = 0, /* settle when the handler returns (default) */
    SB_ACK_AFTER_ENQUEUE = 1  /* accept into a bounded in-memory queue;
                                 delete as a background thread takes it,
                                 before its handler runs (T23) */
};

/* Called (on a worker thread) when an early-acked message fails. */
typedef void (*sb_background_failure_fn)(const sb_msg *msg,
                                         const sb_failure *failure, void *user);

typedef struct sb_worker_options {
    size_t size;
    const char *queue;     /* required (copied) */
    sb_handler_fn handler; /* required */
    void *user;
    int concurrency;             /* handler threads (default 1, max 256) */
    int64_t lease_ms;            /* default 30000 */
    int max_attempts;            /* 0 = default 5; -1 = unlimited */
    int64_t redelivery_delay_ms; /* nak delay (0 = default 5000;
                                    -1 = redeliver at once) */
    double redelivery_factor;    /* > 1: exponential back-off per attempt */
    int64_t redelivery_max_ms;   /* cap of the exponential delay (300000) */
    int64_t empty_poll_ms;       /* first poll delay when empty (250) */
    int64_t max_poll_ms;         /* adaptive back-off cap (2000) */
    int64_t stop_timeout_ms;     /* running handlers' budget on stop (30000) */
    int ack_mode;                /* enum sb_ack_mode */
    int background_workers;      /* required with SB_ACK_AFTER_ENQUEUE */
    int background_capacity;     /* required with SB_ACK_AFTER_ENQUEUE */
    int64_t drain_timeout_ms;    /* default 20000 */
    sb_background_failure_fn on_background_failure;
    /* Read only when `size` covers it (a later field; copied): the
     * endpoint this worker's dead letters name (sb-processing-endpoint),
     * for a process that hosts several services; NULL = the bus's
     * endpoint. At most 200 bytes of UTF-8. */
    const char *endpoint;
    /* Since 0.3 (read when `size` covers it): rows claimed ahead of the
     * handlers into a local buffer (T15), each holding a renewed lease
     * while it waits. 0 = the default (SB_PREFETCH_DEFAULT);
     * SB_PREFETCH_NONE claims only for idle handlers (T15's "prefetch =
     * 0": for long jobs, where sharing a queue fairly between workers
     * matters more than throughput); at most SB_PREFETCH_MAX. The buffer
     * never holds more than 100 ms (nor half a lease) of work, judged by
     * the handlers' measured run time, nor more than about 64 MiB of
     * messages (their average size so far). Not used with SB_ACK_AFTER_ENQUEUE,
     * whose buffer is background_capacity. */
    int prefetch;
} sb_worker_options;
/* The size of the first sb_worker_options, which such callers pass. */
#define SB_WORKER_OPTIONS_V1_SIZE offsetof(sb_worker_options, endpoint)
#define SB_PREFETCH_NONE (-1)
#define SB_PREFETCH_DEFAULT 4000
#define SB_PREFETCH_MAX 10000

/* Start a worker. The options are copied; `bus` is borrowed and must
 * outlive the worker. If this fails the handler never runs. */
SB_API int sb_worker_start(sb_bus *bus, const sb_worker_options *opts,
                           sb_worker **out, sb_error *err);

/* Stop gracefully (T26): no new claims, running handlers get
 * stop_timeout_ms (drain_timeout_ms after enqueue), unstarted rows are
 * handed back. Returns within that budget (plus about a second) whatever
 * the database does: SB_OK when every handler finished and every write was
 * made; SB_UNAVAILABLE when handlers finished but settlements or
 * hand-backs could not be written (their rows return after the lease);
 * SB_TIMEOUT (field stop_timeout_ms) when handlers are still running.
 * Idempotent; safe from any thread except a handler of this worker. */
SB_API int sb_worker_stop(sb_worker *w, sb_error *err);

/* Block until the queue has had no ready or leased message for one poll
 * while this worker was idle, or until `timeout_ms` (-1 = forever).
 * Returns SB_OK when idle, SB_TIMEOUT otherwise. */
SB_API int sb_worker_wait_idle(sb_worker *w, int64_t timeout_ms);

/* Stop if needed and free. NULL-safe. */
SB_API void sb_worker_free(sb_worker *w);

typedef struct sb_worker_stats {
    int64_t acked, naked, dead_lettered, lost_leases, handed_back;
} sb_worker_stats;

/* Counters since start. Thread-safe. */
SB_API void sb_worker_get_stats(const sb_worker *w, sb_worker_stats *out);

/* Delivery accessors (borrowed, valid during the handler call). */
SB_API const sb_msg *sb_delivery_msg(const sb_delivery *d);

/* Record why the handler failed; copied (a text that cannot be copied for
 * lack of memory is left out). Used by the nak / dead letter. */
SB_API void sb_delivery_fail(sb_delivery *d, const char *exception_type,
                             const char *message, const char *detail);

/* Set the reply to a job that carries sb-reply-to (published by
 * sb_request_job): sent to the waiter when the handler returns SB_OK
 * (C23). `data` is copied. Without it a successful job replies with no
 * bytes. */
SB_API int sb_delivery_reply(sb_delivery *d, const void *data, size_t len,
                             sb_error *err);

/* Report progress (T27, T42). On any job it is stored on the message
 * (sb_set_progress: UTF-8, at most SB_MAX_PROGRESS bytes, else
 * SB_INVALID naming `data`), for peek and the dashboard. A job that
 * carries sb-reply-to also sends it to the requester now as a progress
 * reply (the waiter's `until` sees it as progress; blocks like
 * sb_respond; any bytes) and stores it only when it is such text;
 * SB_MISUSE when no channel is open on the bus. In early-ack mode the
 * row is gone before the handler runs: nothing is stored. */
SB_API int sb_delivery_progress(sb_delivery *d, const void *data, size_t len,
                                sb_error *err);

/* Ask for the message to be dead-lettered now (poison, T22): the handler's
 * return value is then ignored. `reason` is copied. */
SB_API void sb_delivery_dead_letter(sb_delivery *d, const char *reason);

/* Renew the lease now (the runtime also renews every lease/3). Returns
 * SB_LOST_LEASE once the fence no longer matches. */
SB_API int sb_delivery_renew(sb_delivery *d, sb_error *err);

/* True once the lease was lost (T16) or the worker is stopping: a long
 * handler should check it and return early. */
SB_API int sb_delivery_cancelled(const sb_delivery *d);

/* ------------------------------------------------------------------------
 * Channel: awaited replies by correlation id, with crash recovery
 * (docs/channel.md, rules C1-C25). A channel belongs to one bus and runs
 * background threads (sweeps, heartbeats, recovery); open one per process.
 * ---------------------------------------------------------------------- */
typedef struct sb_channel sb_channel;
typedef struct sb_waiter sb_waiter;
typedef struct sb_reply sb_reply;

typedef struct sb_channel_options {
    size_t size;
    int64_t default_timeout_ms;      /* waits without a timeout (7 days) */
    int64_t confirmation_timeout_ms; /* C12 step 4 (5000) */
    int64_t full_sweep_interval_ms;  /* C14 (PostgreSQL 5000 while LISTEN
                                        is up, else 1250; SQLite 1000) */
    int64_t reconcile_interval_ms;   /* C15: re-read every live id from its
                                        waiters' watermark (30000) */
    int64_t heartbeat_interval_ms;   /* C17 (10000) */
    int64_t heartbeat_timeout_ms;    /* subscriber row lifetime (30000) */
    int64_t message_retention_ms;    /* reply rows (3600000) */
    int64_t recovery_expiry_ms;      /* registrations (7 days) */
    int64_t drain_timeout_ms;        /* C5 (30000) */
    const char *instance_id;         /* copied; default the bus endpoint */
    int64_t recovery_retry_ms;       /* recovery job nak delay (5000) */
    int recovery_max_attempts;       /* then dead-lettered (5) */
} sb_channel_options;

/* Open the channel of `bus` (borrowed; must outlive the channel): creates
 * or verifies its tables and starts its threads. */
SB_API int sb_channel_open(sb_bus *bus, const sb_channel_options *opts,
                           sb_channel **out, sb_error *err);

/* Stop the threads and free. Free the channel's waiters and stop workers
 * of the same bus that answer requests first: a waiter still open is
 * cancelled and must not be used afterwards. NULL-safe. */
SB_API void sb_channel_close(sb_channel *ch);

/* Reply accessors; pointers are borrowed from the reply. */
SB_API const char *sb_reply_id(const sb_reply *r);
SB_API const char *sb_reply_correlation_id(const sb_reply *r);
SB_API const void *sb_reply_data(const sb_reply *r, size_t *len);
SB_API int sb_reply_is_error(const sb_reply *r);
SB_API const char *sb_reply_error_type(const sb_reply *r);
SB_API const char *sb_reply_error_message(const sb_reply *r);
SB_API const char *sb_reply_error_detail(const sb_reply *r);
SB_API int64_t sb_reply_created_at_us(const sb_reply *r);
SB_API void sb_reply_free(sb_reply *r);

/* C2: 0 = progress (keep waiting), 1 = terminal. Runs on a channel thread,
 * never concurrently for one waiter; `r` is borrowed for the call. */
typedef int (*sb_until_fn)(const sb_reply *r, void *user);

/* C1: sends the work somewhere, knowing the correlation id (borrowed).
 * Runs on the caller's thread after the waiter and its recovery
 * registration exist. Return SB_OK, or an error to abort the request. */
typedef int (*sb_trigger_fn)(const char *correlation_id, void *user);

typedef struct sb_wait_options {
    size_t size;
    int64_t timeout_ms; /* 0 = the channel default */
    sb_until_fn until;  /* NULL = the first reply completes */
    void *until_user;
    const char *recovery_handler; /* copied; NULL = none */
    const void *recovery_context; /* copied; handed to the handler */
    size_t recovery_context_len;
} sb_wait_options;

/* C1 request: generate a correlation id, register the waiter and its
 * recovery registration, then run `trigger`. If the trigger fails, nothing
 * stays registered and its result code is returned. */
SB_API int sb_request(sb_channel *ch, const sb_wait_options *opts,
                      sb_trigger_fn trigger, void *user, sb_waiter **out,
                      sb_error *err);

/* C1 attach: wait on a correlation id created elsewhere (C7 rules). */
SB_API int sb_attach(sb_channel *ch, const char *correlation_id,
                     const sb_wait_options *opts, sb_waiter **out,
                     sb_error *err);

SB_API const char *sb_waiter_correlation_id(const sb_waiter *w);

/*
 * Block until the outcome (C4): SB_OK with the terminal reply in `*reply`
 * (transferred), SB_REPLY_ERROR with the error reply in `*reply`,
 * SB_TIMEOUT, SB_CLOSED (cancelled or the channel closed) or
 * SB_INDETERMINATE (C5). Progress replies are skipped; read them with
 * sb_waiter_take. Thread-safe.
 */
SB_API int sb_waiter_wait(sb_waiter *w, sb_reply **reply, sb_error *err);

/* C6: an eventfd readable whenever sb_waiter_take has something. */
SB_API int sb_waiter_fd(const sb_waiter *w);

/* Non-blocking: the next progress reply (SB_EMPTY when none, `*reply`
 * transferred), or the outcome as sb_waiter_wait returns it. */
SB_API int sb_waiter_take(sb_waiter *w, sb_reply **reply, sb_error *err);

/* 1 once sb_waiter_wait or sb_waiter_take has returned the outcome: the
 * reply sb_waiter_take returned last was the terminal one. */
SB_API int sb_waiter_done(const sb_waiter *w);

/* Cancel (C4, C5) and return the wait's outcome: SB_CLOSED if the
 * cancellation decided it, the earlier outcome otherwise (SB_OK when a
 * reply won the race), SB_INDETERMINATE if a delivery could not finish
 * within the drain. */
SB_API int sb_waiter_cancel(sb_waiter *w);

/* Cancel if still waiting, clean up and free. NULL-safe. */
SB_API void sb_waiter_free(sb_waiter *w);

/* C23: a request whose work is a job on `queue` carrying
 * sb-correlation-id and sb-reply-to, written in the same transaction as
 * the waiter's registration (so no worker can see it earlier, and a
 * failed publish leaves nothing registered); a worker's
 * sb_delivery_reply (or `sqlbus work`'s stdout) comes back as the reply,
 * and an error reply if the job is dead-lettered. The job's payload is
 * borrowed. */
SB_API int sb_request_job(sb_channel *ch, const char *queue,
                          const void *payload, size_t len,
                          const sb_wait_options *opts, sb_waiter **out,
                          sb_error *err);

/* C12: publish a reply (data borrowed). `reply_id` (optional UUID) makes a
 * retried respond a no-op. Returns once the reply is stored (or handed to
 * recovery when no waiter is live); a background confirmer then gives a
 * waiter confirmation_timeout_ms to claim it before recovery does.
 * sb_channel_close waits for pending confirmations. */
SB_API int sb_respond(sb_channel *ch, const char *correlation_id,
                      const void *data, size_t len, const char *reply_id,
                      sb_error *err);

/* C3: an error reply (detail capped at 16 KiB). */
SB_API int sb_respond_error(sb_channel *ch, const char *correlation_id,
                            const char *type, const char *message,
                            const char *detail, const char *reply_id,
                            sb_error *err);

/* Recovery (C19-C21): what to do with a reply whose waiter is gone. */
enum sb_recovery_verdict {
    SB_RECOVERY_FAIL = 0,        /* run `fail` (the default) */
    SB_RECOVERY_RESUME = 1,      /* run `resume` */
    SB_RECOVERY_KEEP_WAITING = 2 /* no callback; the registration stays */
};

/* Callbacks get the reply (borrowed), the context saved at registration
 * (borrowed) and `user`. They run at least once per registration: make
 * them idempotent. Return SB_OK when done (the registration is deleted),
 * anything else to have the job retried. */
typedef int (*sb_recovery_fn)(const sb_reply *reply, const void *context,
                              size_t context_len, void *user);

typedef struct sb_recovery_handler {
    size_t size;
    const char *name; /* copied; matches sb_wait_options.recovery_handler */
    int (*classify)(const sb_reply *reply, void *user); /* NULL = FAIL */
    sb_recovery_fn resume;
    sb_recovery_fn fail;
    void *user;
} sb_recovery_handler;

/* Register a handler in this process and start consuming the
 * sqlbus.recovery queue (once). Thread-safe; if it fails no callback of
 * `h` ever runs. */
SB_API int sb_channel_add_recovery_handler(sb_channel *ch,
                                           const sb_recovery_handler *h,
                                           sb_error *err);

/* C24: a response-ingress queue. Rows external producers publish to
 * `queue` become replies: the correlation id is the sb-correlation-id
 * header, else the first of `json_paths` that names one in the JSON
 * payload (member names case-insensitive; string values holding JSON are
 * unwrapped; "$.a.b", "a.items[0].id"). An sb-error-type header (with
 * sb-error-message) makes an error reply. A row over `max_bytes` or
 * without a valid id is logged, counted and dead-lettered with the
 * reason. The row's message id is the reply id, so a redelivered row is a
 * no-op. */
typedef struct sb_ingress_options {
    size_t size;
    const char *queue;             /* default "response" */
    const char *const *json_paths; /* copied; up to 16 */
    size_t n_json_paths;
    size_t max_bytes; /* size budget (1 MiB, at most the
                                       bus's max_payload_bytes) */
    int concurrency;  /* handlers (1) */
} sb_ingress_options;

/* Start consuming the ingress queue (one per channel; stopped by
 * sb_channel_close). */
SB_API int sb_channel_start_ingress(sb_channel *ch,
                                    const sb_ingress_options *opts,
                                    sb_error *err);

/* Rows turned into replies and rows dropped since the ingress started;
 * SB_EMPTY if no ingress runs. Thread-safe. */
SB_API int sb_channel_ingress_counts(sb_channel *ch, uint64_t *ingested,
                                     uint64_t *dropped);

/* Recovery registrations and the watchdog (C22). These take the bus, not a
 * channel: they start no thread and work in a process that never opens a
 * channel (the `sqlbus recovery` commands). With SB_SCHEMA_AUTO they create
 * the channel's tables if missing. */
typedef struct sb_registration sb_registration;

/* Each registration is in exactly one state, by the database clock. A live
 * waiter has an unexpired subscriber row for the same correlation id and
 * registration (its process heartbeats it); a live waiter decides the state
 * first, then a dispatch, then the age. */
enum sb_registration_state {
    SB_REG_OUTSTANDING = 0, /* a live waiter */
    SB_REG_STALE = 1,       /* no live waiter, never dispatched, registered
                               longer ago than stale_after */
    SB_REG_ORPHANED = 2,    /* no live waiter, never dispatched, younger */
    SB_REG_DISPATCHED = 3   /* no live waiter; a recovery job was enqueued
                               (dispatched_at set) and no callback has
                               completed it yet (a successful one deletes
                               the registration; KEEP_WAITING keeps it) */
};
/* The bit of a state in sb_registration_query.states. */
#define SB_REG_BIT(state) (1u << (state))

typedef struct sb_registration_query {
    size_t size;
    int64_t stale_after_ms; /* STALE threshold: 0 = 24 h; at most 3650 d */
    unsigned states;        /* SB_REG_BIT()s to list; 0 = every state */
    size_t limit;           /* rows per call: 0 = 1000; at most 10000 */
    /* Keyset cursor (borrowed): the registered_at_us, correlation id and
     * registration id of the last row of the previous call, all three;
     * after_correlation_id NULL (and the others 0 / NULL) starts with the
     * oldest registration. */
    int64_t after_registered_at_us;
    const char *after_correlation_id;
    const char *after_registration_id;
} sb_registration_query;

/* Called once per registration; `r` is borrowed for the call. Return 0 to
 * go on, anything else to stop the listing (the call still returns
 * SB_OK). */
typedef int (*sb_registration_fn)(const sb_registration *r, void *user);

/*
 * List unexpired recovery registrations of `bus` ordered by (registered_at,
 * correlation id, registration id), at most `q->limit` of them, calling
 * `fn` for each on the caller's thread (no database connection is held
 * while it runs). `q` may be NULL for the defaults. Page by passing the
 * last row back as the cursor: each registration that exists throughout
 * is listed exactly once. If the arguments are rejected `fn` never runs.
 * Result codes: SB_INVALID (err->field names the input and its limit),
 * SB_SCHEMA, SB_BUSY/SB_UNAVAILABLE, SB_BACKEND, SB_NOMEM. Thread-safe.
 */
SB_API int sb_recovery_registrations(sb_bus *bus,
                                     const sb_registration_query *q,
                                     sb_registration_fn fn, void *user,
                                     sb_error *err);

/*
 * The watchdog (C22): count registrations that are STALE for
 * `stale_after_ms` (0 = 24 h; at most 3650 days) — older than that, with
 * no live waiter and never dispatched — and log the oldest 100 of them at
 * SB_LOG_WARN through the bus's log callback (component "recovery"), plus
 * one line with the total when there are more. `*stale_count` (may be
 * NULL) receives the count. Result codes as sb_recovery_registrations.
 * Thread-safe.
 */
SB_API int sb_recovery_watchdog(sb_bus *bus, int64_t stale_after_ms,
                                int64_t *stale_count, sb_error *err);

/* How many unexpired registrations are in each state, counted in the
 * database in one statement (however many there are), and the dispatched
 * ones by recovery handler. */
#define SB_REG_COUNT_HANDLERS 32
typedef struct sb_handler_count {
    char handler[201]; /* "" when the waiter named no handler */
    int64_t n;
} sb_handler_count;
typedef struct sb_registration_counts {
    size_t size;         /* set to sizeof(sb_registration_counts) */
    int64_t by_state[4]; /* by enum sb_registration_state */
    size_t n_handlers;   /* entries of dispatched[] in use */
    sb_handler_count dispatched[SB_REG_COUNT_HANDLERS]; /* SB_REG_DISPATCHED
                                                            by handler, most
                                                            first */
    int64_t dispatched_other; /* handlers past the first 32, summed */
} sb_registration_counts;

/* Fill `*out` (caller-owned; set out->size first) with the counts as of
 * the database clock now; STALE is as in sb_registration_query
 * (`stale_after_ms` 0 = 24 h). Result codes as
 * sb_recovery_registrations. Thread-safe. */
SB_API int sb_recovery_counts(sb_bus *bus, int64_t stale_after_ms,
                              sb_registration_counts *out, sb_error *err);

/* Registration accessors; pointers are borrowed from `r`. Times are Unix
 * microseconds from the database clock (SQLite: the writer's clock). */
SB_API const char *sb_registration_correlation_id(const sb_registration *r);
SB_API const char *sb_registration_id(const sb_registration *r);
/* The recovery handler's name, or NULL when the waiter named none. */
SB_API const char *sb_registration_handler(const sb_registration *r);
/* The context saved at registration (NULL, *len 0 when none). */
SB_API const void *sb_registration_context(const sb_registration *r,
                                           size_t *len);
SB_API int64_t sb_registration_registered_at_us(const sb_registration *r);
SB_API int64_t sb_registration_expires_at_us(const sb_registration *r);
/* The last dispatch to recovery, or 0 if never. */
SB_API int64_t sb_registration_dispatched_at_us(const sb_registration *r);
/* enum sb_registration_state. */
SB_API int sb_registration_state(const sb_registration *r);
/* 1 when a live waiter exists (the state is then SB_REG_OUTSTANDING). */
SB_API int sb_registration_live(const sb_registration *r);

/* The channel's DDL (C10: three tables, the ack sequence, their indexes)
 * for `backend` with `table_prefix`, for teams whose migrations own the
 * schema. Transferred: free with sb_free. */
SB_API int sb_channel_schema_sql(const char *backend, const char *table_prefix,
                                 char **out, sb_error *err);
/* The channel's statements, as sb_schema_statements gives the
 * transport's ("channel.claim", ...). */
SB_API int sb_channel_statements(const char *backend, const char *table_prefix,
                                 sb_statement_fn fn, void *user, sb_error *err);

/* Check a correlation id against rule C7. */
SB_API int sb_validate_correlation_id(const char *id, sb_error *err);

/* ------------------------------------------------------------------------
 * Error store: dead-lettered messages ingested into a queryable store,
 * one row per failed message (docs/errors.md, rules E1-E24).
 * ---------------------------------------------------------------------- */
typedef struct sb_errors sb_errors;
typedef struct sb_failed_message sb_failed_message;

typedef struct sb_errors_options {
    size_t size;
    int ingest_batch_size; /* E1: dead-letter rows per transaction (256;
                                1 to 5000) */
    size_t max_body_size;  /* E7: inline text cap in bytes (102400; at
                                most 16 MiB); larger or binary bodies go to
                                the body store */
    int allow_edit;        /* E18: 1 = sb_errors_edit_retry is allowed */
} sb_errors_options;

/* Open the store of `bus` (borrowed; must outlive it): creates or checks
 * its tables. Starts no thread. */
SB_API int sb_errors_open(sb_bus *bus, const sb_errors_options *opts,
                          sb_errors **out, sb_error *err);
/* NULL-safe. */
SB_API void sb_errors_close(sb_errors *e);

/* The error store's DDL (its tables, indexes and the triggers that keep
 * its counts and status history; on SQL Server then its full-text
 * catalog and index) for `backend` ("sqlite", "postgresql" or "mssql")
 * with `table_prefix` (NULL = default), for teams whose migrations own
 * the schema. Transferred: free with sb_free. */
SB_API int sb_errors_schema_sql(const char *backend, const char *table_prefix,
                                char **out, sb_error *err);
/* The error store's statements, as sb_schema_statements gives the
 * transport's ("errors.upsert", ...). */
SB_API int sb_errors_statements(const char *backend, const char *table_prefix,
                                sb_statement_fn fn, void *user, sb_error *err);

typedef struct sb_ingest_stats {
    size_t size;
    int64_t batches;        /* transactions committed */
    int64_t rows;           /* dead-letter rows consumed */
    int64_t messages;       /* failed-message rows written (after the fold;
                               attempts stored before write none, E10) */
    int64_t failed_imports; /* rows kept in failed_imports with a reason */
    int64_t confirmations;  /* retries confirmed as successful */
} sb_ingest_stats;

/* E1, E23: one ingestion pass: batches of the dead-letter queue, each
 * written and deleted in one transaction, until the queue is empty.
 * `stats` (optional) is added to. Transient faults retry a batch with
 * back-off; replaying a batch changes nothing. Thread-safe: several
 * ingesters (threads or processes) may run at once. */
SB_API int sb_errors_ingest(sb_errors *e, sb_ingest_stats *stats,
                            sb_error *err);

enum sb_failed_status {
    SB_FAILED_UNRESOLVED = 0,
    SB_FAILED_RETRY_ISSUED = 1,
    SB_FAILED_RESOLVED = 2,
    SB_FAILED_ARCHIVED = 3
};

/* E6: ServiceControl's DeterministicGuid of the UTF-8 strings `a` then
 * `b` (both borrowed; NULL counts as ""), concatenated without a
 * separator: their MD5 digest as .NET's Guid(byte[]) prints it, 36
 * lower-case characters and a NUL written to `out`. A failed message's
 * unique id is that of its message id and processing endpoint, a
 * redirect's id that of its from_queue (b NULL); equal inputs give equal
 * ids in sqlbus, ServiceControl and NServiceBus tooling. Thread-safe. */
SB_API void sb_deterministic_guid(const char *a, const char *b, char out[37]);

/* One failed message with its groups and body; SB_NOTFOUND if absent.
 * Transferred: free with sb_failed_message_free. */
SB_API int sb_errors_get(sb_errors *e, const char *unique_message_id,
                         sb_failed_message **out, sb_error *err);
SB_API void sb_failed_message_free(sb_failed_message *m);

/* Accessors; strings are borrowed from `m` and NULL when absent. Times are
 * microseconds since the Unix epoch. */
SB_API const char *sb_failed_unique_id(const sb_failed_message *m);
SB_API int sb_failed_status(const sb_failed_message *m);
SB_API int64_t sb_failed_attempts(const sb_failed_message *m);
SB_API int64_t sb_failed_first_failure_us(const sb_failed_message *m);
SB_API int64_t sb_failed_last_failure_us(const sb_failed_message *m);
SB_API int64_t sb_failed_status_changed_us(const sb_failed_message *m);
/* The row's last change of any kind; when the message was sent (0 when
 * its headers carried no time); 1 for a system (control) message. */
SB_API int64_t sb_failed_last_modified_us(const sb_failed_message *m);
SB_API int64_t sb_failed_time_sent_us(const sb_failed_message *m);
SB_API int sb_failed_is_system(const sb_failed_message *m);
SB_API const char *sb_failed_field(const sb_failed_message *m,
                                   const char *name); /* "message_id",
    "message_type", "failed_queue", "processing_endpoint", "host",
    "host_id", "instance_id", "exception_type", "exception_message",
    "conversation_id" */
SB_API const char *sb_failed_headers(const sb_failed_message *m); /* JSON */
/* The body as stored (from the body store when it is there). */
SB_API const void *sb_failed_body(const sb_failed_message *m, size_t *len);
SB_API int sb_failed_body_stored_externally(const sb_failed_message *m);
/* The inline text (the whole body, or a search prefix when stored
 * externally; NULL for binary bodies). */
SB_API const char *sb_failed_body_text(const sb_failed_message *m);
/* Status history (E23): every change of status (retry issued, resolved,
 * archived, unarchived, failed again), oldest first, the newest 100 of
 * them; the first failure is sb_failed_first_failure_us. `i` from 0 to
 * sb_failed_history_count - 1 (else SB_NOTFOUND); outputs may be NULL. */
SB_API size_t sb_failed_history_count(const sb_failed_message *m);
SB_API int sb_failed_history(const sb_failed_message *m, size_t i, int *status,
                             int *previous, int64_t *at_us);
/* Groups (E12): `i` from 0 to sb_failed_group_count - 1. */
SB_API size_t sb_failed_group_count(const sb_failed_message *m);
SB_API int sb_failed_group(const sb_failed_message *m, size_t i,
                           const char **id, const char **type,
                           const char **title);

/* E14, E17, E19: which failed messages an operation applies to; set
 * exactly one selector, optionally narrowed by a last-modified range. */
typedef struct sb_failed_selection {
    size_t size;
    const char *const *ids; /* these unique ids (up to 10,000) */
    size_t n_ids;
    const char *group_id;     /* every message of a group (a resumable group
                                 operation, see sb_errors_group_operation) */
    const char *failed_queue; /* every message that failed on a queue */
    const char *endpoint;     /* every message of a processing endpoint */
    int all;                  /* every message in the operation's status */
    /* E17, E19: only messages last modified in [from, to] (microseconds
     * since the epoch; 0 = open end). */
    int64_t modified_from_us, modified_to_us;
    /* Optional: called after each committed batch with the messages
     * changed so far and the number selected when the operation started. */
    sb_progress_fn progress;
    void *progress_user;
} sb_failed_selection;

/* E14, E15: re-publish the selected messages to their failed queues (body
 * and headers as stored, without the failure headers, with sb-retry-of =
 * the unique id) and mark them retry_issued, in transactions of at most
 * 1,000. A message already in an outstanding retry is skipped (its claim
 * stands); one that cannot be re-published stays unresolved and keeps no
 * claim. When the retried job is acked, the ack writes a confirmation that
 * the next ingestion pass turns into "resolved" (E16); if it fails again,
 * ingestion folds it into the same row. `*retried` counts the messages
 * sent. */
SB_API int sb_errors_retry(sb_errors *e, const sb_failed_selection *sel,
                           int64_t *retried, sb_error *err);

/* E13: a failure group with its messages of one status. */
#define SB_MAX_COMMENT 1000
typedef struct sb_failure_group {
    size_t size; /* filled by the library ("Lists") */
    char id[37];
    char type[64]; /* the classifier */
    char title[512];
    int64_t count; /* messages in the group */
    int64_t first_failure_us, last_failure_us;
    char comment[SB_MAX_COMMENT + 1]; /* "" when none */
} sb_failure_group;

/* E13: the groups of one classifier (e.g. "Exception Type and Stack
 * Trace"; NULL = that one) over messages of `status`
 * (SB_FAILED_UNRESOLVED for the open groups, SB_FAILED_ARCHIVED for the
 * archived ones), newest failure first, at most 200. A name that is none
 * of the five classifiers is SB_INVALID, field "classifier". `*out` is a
 * transferred list ("Lists": free with sb_free). */
SB_API int sb_errors_groups(sb_errors *e, const char *classifier, int status,
                            sb_failure_group ***out, size_t *n_out,
                            sb_error *err);

/* E13: set a group's comment (at most SB_MAX_COMMENT bytes), or delete it
 * with NULL or "". */
SB_API int sb_errors_group_comment(sb_errors *e, const char *group_id,
                                   const char *comment, sb_error *err);

/* E17: pending retries (status retry_issued; list them with
 * sb_errors_list) sent again — claim and status reset first — or resolved
 * by hand, with their claims removed. */
SB_API int sb_errors_retry_pending(sb_errors *e, const sb_failed_selection *sel,
                                   int64_t *retried, sb_error *err);
SB_API int sb_errors_resolve(sb_errors *e, const sb_failed_selection *sel,
                             int64_t *resolved, sb_error *err);

/* E19: archive the selected unresolved messages (archive = 1), or make
 * the selected archived ones unresolved again (archive = 0), 1,000 per
 * transaction; `*changed` counts them. */
SB_API int sb_errors_archive(sb_errors *e, const sb_failed_selection *sel,
                             int archive, int64_t *changed, sb_error *err);

/* E19: the latest retry, archive or unarchive of a whole group. One runs
 * at a time per group: starting another while one is running answers
 * SB_CONFLICT naming it. Each batch commits its progress with its changes;
 * an operation whose process died ("interrupted": no batch for 60 s) is
 * resumed by starting the same kind again. */
typedef struct sb_group_operation {
    size_t size; /* "Lists": the library's in a list, else set by the caller */
    char group_id[37];
    char kind[16];  /* "retry", "archive", "unarchive" */
    char state[16]; /* "running", "completed", "failed", "interrupted" */
    int64_t total;  /* messages selected when it started */
    int64_t done;   /* changed so far (committed) */
    int64_t started_us, updated_us;
    int64_t finished_us; /* 0 until it ends */
} sb_group_operation;

/* The group's latest operation into `*out` (caller-owned: set out->size
 * first, "Lists"). SB_NOTFOUND when the group never had an operation. */
SB_API int sb_errors_group_operation(sb_errors *e, const char *group_id,
                                     sb_group_operation *out, sb_error *err);
/* Acknowledge the group's latest operation once it has finished
 * ("completed" or "failed"; ServicePulse's "Dismiss"): its record is
 * removed, so the group shows none (and its next operation starts
 * afresh). SB_NOTFOUND naming "group_id" when the group has none,
 * SB_CONFLICT naming it while one runs (an interrupted one too: it is
 * resumed, not dismissed). Thread-safe. */
SB_API int sb_errors_group_acknowledge(sb_errors *e, const char *group_id,
                                       sb_error *err);
/* The latest operations of up to 1,000 groups in one read (a group list's
 * overlay): those that had one, in no order. `*out` is a transferred
 * list ("Lists": free with sb_free). SB_INVALID names `group_ids` or `n`. */
SB_API int sb_errors_group_operations(sb_errors *e,
                                      const char *const *group_ids, size_t n,
                                      sb_group_operation ***out, size_t *n_out,
                                      sb_error *err);

/* E18: edit and retry (only when sb_errors_options.allow_edit is set,
 * else SB_MISUSE). Publishes a copy of an unresolved message with `body`
 * and `headers_json` (a JSON object of strings: the whole new header set)
 * under a new message id with sb-edit-of = the unique id, to its failed
 * queue (or its redirect), and marks the original resolved, in one
 * transaction. A locked header (sb_errors_locked_headers) given with any
 * value but its stored one is refused (SB_INVALID naming it); locked
 * headers left out keep their stored values. A second edit of the same
 * message is ignored: SB_OK with *ignored = 1 and "" in `new_id`.
 * `new_id` (optional, 37 bytes) receives the copy's message id. */
SB_API int sb_errors_edit_retry(sb_errors *e, const char *unique_message_id,
                                const void *body, size_t len,
                                const char *headers_json, int *ignored,
                                char *new_id, sb_error *err);
/* The headers an edit cannot change — identity, correlation and every
 * failure header (static, NULL-terminated). An edit may give one only
 * with its stored value; a copy never carries the failure headers. */
SB_API const char *const *sb_errors_locked_headers(void);

/* E20: a retry redirect: retries (and edits) of messages that failed on
 * `from_queue` go to `to_queue`. */
typedef struct sb_redirect {
    size_t size; /* "Lists": the library's in a list, else set by the caller */
    char id[37]; /* DeterministicGuid of from_queue */
    char from_queue[201];
    char to_queue[201];
    int64_t last_modified_us;
} sb_redirect;

/* Add a redirect. The same one again is SB_OK; a queue already redirected
 * elsewhere, or a chain (from_queue is another redirect's target, or
 * to_queue is itself redirected), is SB_CONFLICT naming the field. `out`
 * (optional, caller-owned: set out->size first) gets the redirect. */
SB_API int sb_errors_redirect_add(sb_errors *e, const char *from_queue,
                                  const char *to_queue, sb_redirect *out,
                                  sb_error *err);
/* Change the target of redirect `id` (SB_NOTFOUND, SB_CONFLICT). */
SB_API int sb_errors_redirect_update(sb_errors *e, const char *id,
                                     const char *to_queue, sb_error *err);
/* Remove redirect `id`; removing an absent one is SB_OK. */
SB_API int sb_errors_redirect_remove(sb_errors *e, const char *id,
                                     sb_error *err);
/* Every redirect, by from_queue. `*out` is a transferred list ("Lists":
 * free with sb_free). */
SB_API int sb_errors_redirects(sb_errors *e, sb_redirect ***out, size_t *n_out,
                               sb_error *err);

/* E2: put one failed message into the dead-letter queue from outside (an
 * import, the HTTP API): `headers_json` is a JSON object of strings that
 * must carry what ingestion needs (a failed queue, or NServiceBus fault
 * headers); it is checked first (SB_INVALID naming the header). The next
 * ingestion pass stores it. `n` at most 1,000 per call, one transaction. */
typedef struct sb_failed_submission {
    const char *headers_json;
    const void *body;
    size_t len;
} sb_failed_submission;
SB_API int sb_errors_submit(sb_errors *e, const sb_failed_submission *msgs,
                            size_t n, sb_error *err);
/* The checks of sb_errors_submit alone, writing nothing (any `n`): an
 * import can be checked whole before any of it is submitted. */
SB_API int sb_errors_submit_check(sb_errors *e,
                                  const sb_failed_submission *msgs, size_t n,
                                  sb_error *err);

/* E3: put every kept failed import back into the dead-letter queue (with
 * its headers and body), 1,000 per transaction, for the next ingestion
 * pass; `*moved` counts them. Rows still unusable come back with their
 * reason. */
SB_API int sb_errors_reimport(sb_errors *e, int64_t *moved, sb_error *err);

/* E21: delete resolved and archived messages whose status changed more
 * than `retention_ms` ago (1 hour to 365 days), with their bodies and
 * groups and the comments of groups left empty, in transactions of at most
 * 1,000 messages, until none is left. Unresolved and retry-issued messages
 * never expire. `*deleted` (optional) counts the messages. */
SB_API int sb_errors_expire(sb_errors *e, int64_t retention_ms,
                            int64_t *deleted, sb_error *err);

/* A failed message in a result list; longer strings are cut (on a UTF-8
 * boundary). sb_errors_get reads the whole message. */
typedef struct sb_failed_summary {
    size_t size; /* filled by the library ("Lists") */
    char unique_id[401];
    int status; /* enum sb_failed_status */
    int64_t attempts;
    int64_t last_failure_us;
    char message_type[256];
    char failed_queue[201];
    char exception_type[256];
    char exception_message[512];
    /* What a list view shows besides (ServiceControl's
     * FailedMessageView). Empty / 0 when unknown. */
    char message_id[201];
    char processing_endpoint[201];
    char host[201];
    char host_id[201];
    int64_t first_failure_us;
    int64_t last_modified_us; /* the row's last change (any kind) */
    int64_t time_sent_us;     /* 0 when the headers carried none */
    int is_system;            /* 1 for a system (control) message */
} sb_failed_summary;

/* E23: a page of failed messages, filtered and sorted. Filters are
 * optional (NULL = any). */
typedef struct sb_failed_query {
    size_t size;
    int status; /* enum sb_failed_status, or -1 = any */
    const char *failed_queue;
    const char *endpoint; /* processing endpoint */
    const char *group_id;
    const char *message_type;
    const char *sort; /* "time_of_failure" (default), "message_type",
                                 "failed_queue", "attempts",
                                 "status_changed", "message_id",
                                 "status", "time_sent" */
    int ascending;    /* 0 = newest / largest first */
    size_t page;      /* from 1 (0 = 1) */
    size_t per_page;  /* 1 to 500 (0 = 50) */
    /* Read only when `size` covers them, or `size` is 0 (later fields;
     * SB_FAILED_QUERY_V1_SIZE is the size before them): */
    unsigned statuses;        /* SB_FAILED_BIT()s: any of these; 0 = use
                                 `status` */
    int64_t modified_from_us; /* last modified in [from, to] (microseconds */
    int64_t modified_to_us;   /* since the epoch; 0 = open end) */
    /* Later still (SB_FAILED_QUERY_V2_SIZE is the size before them):
     * exactly this message id or conversation id (NULL or "" = any), and
     * a time of failure in [from, to] (microseconds since the epoch; 0 =
     * open end). */
    const char *message_id;
    const char *conversation_id;
    int64_t failed_from_us, failed_to_us;
} sb_failed_query;
/* The bit of a status in sb_failed_query.statuses. */
#define SB_FAILED_BIT(status) (1u << (status))
/* The size of the first sb_failed_query, which such callers pass. */
#define SB_FAILED_QUERY_V1_SIZE offsetof(sb_failed_query, statuses)
/* The size of the second, before message_id. */
#define SB_FAILED_QUERY_V2_SIZE offsetof(sb_failed_query, message_id)

/* `*out` is a transferred list ("Lists": free with sb_free); `*total`
 * (optional) is the number of matches over all pages. */
SB_API int sb_errors_list(sb_errors *e, const sb_failed_query *q,
                          sb_failed_summary ***out, size_t *n_out,
                          int64_t *total, sb_error *err);

/* E23: the number of failed messages per value of one column, read from
 * the counts kept at write time (cheap at any size). */
typedef struct sb_failed_count {
    size_t size;    /* filled by the library ("Lists") */
    char name[401]; /* cut on a UTF-8 boundary */
    int64_t count;
} sb_failed_count;

/* Counts per `by` ("failed_queue", "endpoint" — the processing endpoint —
 * or "message_type") over messages of `status` (-1 = any), values without
 * a name left out, largest first then by name, at most `limit` (1 to
 * 1000). `*out` is a transferred list ("Lists": free with sb_free).
 * SB_INVALID names `by`, `status` or `limit`. Thread-safe. */
SB_API int sb_errors_counts(sb_errors *e, const char *by, int status,
                            size_t limit, sb_failed_count ***out, size_t *n_out,
                            sb_error *err);

/* E23: the number of failed messages in each status (counts[status],
 * enum sb_failed_status), in one read of the counts kept at write time.
 * Thread-safe. */
SB_API int sb_errors_status_counts(sb_errors *e, int64_t counts[4],
                                   sb_error *err);

/* E22: full-text search over message type, headers and body text. The
 * words of `query` are ORed ('.' and '+' break words, so "Order" finds
 * "Shop.Order"); results best first, at most `limit` (1 to 1000). `*out`
 * is a transferred list ("Lists": free with sb_free). */
SB_API int sb_errors_search(sb_errors *e, const char *query, size_t limit,
                            sb_failed_summary ***out, size_t *n_out,
                            sb_error *err);

/* E3: dead-letter rows kept in failed_imports (they could not become a
 * failed message), for the dashboard and readiness. */
SB_API int sb_errors_failed_import_count(sb_errors *e, int64_t *count,
                                         sb_error *err);

/* ------------------------------------------------------------------------
 * Durable operations (S5): a bulk change of the error store (retry,
 * archive, unarchive, retry_pending, resolve over an sb_failed_selection)
 * accepted as a row of {p}operations and a job on the internal queue
 * SB_OPERATIONS_QUEUE, both in one transaction, then run by a worker with
 * the store's bulk call; each batch's transaction also adds the batch to
 * the row's progress. A process that dies mid-operation leaves the job
 * leased: when the lease lapses, the worker of any process with the
 * operations open on that database runs it again, which is safe because
 * every bulk change is idempotent over its status filter; the row keeps
 * the first run's total and what the committed batches did, so the
 * resumed operation reports the whole of it. A failure that passes
 * (busy, unavailable, timed out, out of memory) runs the job again with
 * back-off, up to its tenth attempt, which marks it failed. What `sqlbus
 * serve` answers its bulk changes with (202 Accepted and the row).
 * ---------------------------------------------------------------------- */
#define SB_OPERATIONS_QUEUE "sqlbus.operations"
typedef struct sb_operations sb_operations;

typedef struct sb_operations_options {
    size_t size;
    sb_log_fn log; /* optional: warnings (component "operations") of
                           a run that failed or will run again */
    void *log_user;
    int64_t keep_ms;  /* finished rows kept this long (0 = 7 days) */
    int64_t lease_ms; /* an operation job's lease (0 = 60 s) */
    /* Optional: called on the worker's thread after each batch of an
     * operation has committed, with the progress its row now holds; `id`
     * is borrowed for the call. */
    void (*progress)(const char *id, int64_t done, int64_t total, void *user);
    void *progress_user;
} sb_operations_options;

/* One operation, as its row holds it. */
typedef struct sb_operation_info {
    size_t size;       /* set to sizeof(sb_operation_info) */
    char id[37];       /* a UUIDv7 */
    char kind[24];     /* "retry", "archive", "unarchive",
                           "retry_pending", "resolve" */
    char state[16];    /* "queued", "running", "completed", "failed" */
    char group_id[37]; /* "" unless the selection named a group */
    int64_t total;     /* messages selected; -1 until the first run
                           counted them */
    int64_t done;      /* changed so far (committed) */
    int64_t created_us, updated_us; /* Unix microseconds */
    char error[256];                /* "" unless failed */
} sb_operation_info;

/* Create {p}operations if missing (under the schema lock), check it
 * against the catalog — a table of another shape is SB_SCHEMA_MISMATCH
 * naming the column, its rows left as they are — and start the worker
 * (one handler thread on SB_OPERATIONS_QUEUE) and a sweeper thread that
 * deletes rows finished more than keep_ms ago and publishes again the
 * job of a row queued for over a minute. `store` (and its bus, on which
 * the operations run) is borrowed and must outlive the handle; `opts`
 * (may be NULL) is copied. If this fails no callback runs. Close with
 * sb_operations_close. */
SB_API int sb_operations_open(sb_errors *store,
                              const sb_operations_options *opts,
                              sb_operations **out, sb_error *err);
/* Stop the sweeper and the worker (the running job finishes or is handed
 * back, as sb_worker_stop), free. NULL-safe. */
SB_API void sb_operations_close(sb_operations *ops);

/* Accept an operation of `kind` over `sel` (borrowed; its progress
 * callback is not used: see sb_operations_options). The kind and the
 * selection are checked first (SB_INVALID naming the field; SB_TOOBIG
 * naming "ids" for a selection over 2 MiB as JSON), then the row and its
 * job are written in one transaction on `bus`, and the worker is woken.
 * A selection that picks no message in the status the kind changes
 * (unresolved for retry and archive, archived for unarchive, retry
 * issued for retry_pending and resolve) writes nothing: SB_OK with
 * `out` an operation of 0 that has no row (id "", state "completed",
 * total and done 0).
 * `bus` (borrowed; NULL = the store's) must be on the store's database
 * and prefix: a bus of its own with statement_timeout_ms bounds the
 * caller's statements without bounding the operation's run. `out`
 * (optional; set out->size first) gets the new row. Thread-safe. */
SB_API int sb_operations_submit(sb_operations *ops, sb_bus *bus,
                                const char *kind,
                                const sb_failed_selection *sel,
                                sb_operation_info *out, sb_error *err);
/* One operation into `*out` (caller-owned; set out->size first: SB_INVALID
 * naming "size" when it is smaller than the first version's); SB_NOTFOUND
 * when there is none with `id`. `bus` as for sb_operations_submit.
 * Thread-safe. */
SB_API int sb_operations_get(sb_operations *ops, sb_bus *bus, const char *id,
                             sb_operation_info *out, sb_error *err);

/* Called once per operation; `op` is borrowed for the call (op->size
 * says how much of it this library fills). Return 0 to go on, anything
 * else to stop (the call still returns SB_OK). */
typedef int (*sb_operation_fn)(const sb_operation_info *op, void *user);
/* The `limit` (1 to 200) newest operations, newest first, each to `fn`
 * on the caller's thread with no database connection held. If the
 * arguments are rejected `fn` never runs. `bus` as for
 * sb_operations_submit. Thread-safe. */
SB_API int sb_operations_list(sb_operations *ops, sb_bus *bus, size_t limit,
                              sb_operation_fn fn, void *user, sb_error *err);

/* The DDL of {p}operations for `backend` with `table_prefix`, as
 * sb_schema_sql gives the transport's, for teams whose migrations own
 * the schema. Transferred: free with sb_free. */
SB_API int sb_operations_schema_sql(const char *backend,
                                    const char *table_prefix, char **out,
                                    sb_error *err);
/* Its statements, as sb_schema_statements gives the transport's
 * ("operations.insert", ...). */
SB_API int sb_operations_statements(const char *backend,
                                    const char *table_prefix,
                                    sb_statement_fn fn, void *user,
                                    sb_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SQLBUS_H */
