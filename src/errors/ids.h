/*
 * ids.h - deterministic ids of the error store (rule E6): the unique
 * message id of a failed message without a retry header, and the same
 * derivation wherever ServiceControl uses it (group ids from classifier
 * name + classification text, ...). Equal inputs give equal ids in
 * sqlbus, ServiceControl and NServiceBus tooling.
 */
#ifndef SB_ERRORS_IDS_H
#define SB_ERRORS_IDS_H

#include "core/core.h"

/* ServiceControl's DeterministicGuid of `len` bytes at `data` (borrowed;
 * may be NULL when `len` is 0): their MD5 digest handed to .NET's
 * Guid(byte[]) constructor, which reads bytes 0-3, 4-5 and 6-7 as
 * little-endian integers, so the text is digest bytes 3 2 1 0 - 5 4 -
 * 7 6 - 8 9 - 10..15 in lower-case hex. Writes 36 characters and a NUL to
 * `out`. Thread-safe. */
void sb__deterministic_guid(const void *data, size_t len, char out[37]);
/* sb__deterministic_guid of the UTF-8 strings `a` then `b`, concatenated
 * without a separator (message id + processing endpoint; classifier name +
 * classification text). Both are borrowed; NULL counts as "". */
void sb__deterministic_guid_str(const char *a, const char *b, char out[37]);

#endif
