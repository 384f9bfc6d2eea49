/*
 * isotime.h - ISO 8601 times of the HTTP API (docs/http-api.md): written
 * as UTC with milliseconds, read with an optional fraction and zone, and
 * the `modified=FROM...TO` ranges of ServiceControl's lists. Pure: no I/O,
 * no allocation, no locale; fuzzed with the router.
 */
#ifndef SB_SERVER_ISOTIME_H
#define SB_SERVER_ISOTIME_H

#include "core/core.h"

#define SB_ISO_TIME_LEN 32 /* "2026-12-01T21:00:00.123Z" and its NUL */

/* `us` (microseconds since the Unix epoch, years 1970 to 9999) as
 * "YYYY-MM-DDTHH:MM:SS.mmmZ" into `out` (SB_ISO_TIME_LEN bytes). */
void sb__iso_time(int64_t us, char *out);

/* Parse `len` bytes: "YYYY-MM-DD", optionally followed by "THH:MM",
 * ":SS", a fraction of 1 to 9 digits, and "Z" or "+HH:MM" / "-HH:MM"
 * (no zone is UTC). Years 1970 to 9999. SB_INVALID when it is anything
 * else (nothing written to *us). */
int sb__iso_parse(const char *s, size_t len, int64_t *us);

/* A ServiceControl range "FROM...TO", either end empty for an open end
 * (0). SB_INVALID naming `field`: no "...", an end that is not a time, or
 * FROM after TO. */
int sb__iso_range(const char *s, const char *field, int64_t *from, int64_t *to,
                  sb_error *err);

#endif
