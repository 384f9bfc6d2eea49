/*
 * body.h - where the error store keeps a failed message's body (rule E7):
 * text inline in body_text, text over the cap in the body store with an
 * inline search prefix, binary in the body store only.
 */
#ifndef SB_ERRORS_BODY_H
#define SB_ERRORS_BODY_H

#include "core/core.h"

typedef struct sb_body_place {
    int is_text;           /* text content type, strict UTF-8, no NUL */
    int inline_text;       /* body_text holds the first inline_len bytes */
    size_t inline_len;     /* the whole body, or a prefix cut on a UTF-8
                              character boundary; 0 for binary */
    int stored_externally; /* the whole body goes to the body store, which
                              is then authoritative (body_text is only a
                              search aid and is never served as the body) */
} sb_body_place;

/* Decide where the `len` bytes at `body` (borrowed; may be NULL when `len`
 * is 0) go, for `cap` = max_body_size_to_store. The body is text when its
 * `content_type` (borrowed; NULL or "" when absent; parameters and case
 * ignored) is absent, text/..., application/json, application/xml,
 * application/javascript or ends in +json or +xml, and the bytes are
 * strictly valid UTF-8 without a NUL byte; any other declared type is
 * binary whatever the bytes. An empty body is empty text kept inline.
 * Text up to `cap` bytes is inline whole; longer text is stored
 * externally with an inline prefix of at most `cap` bytes that never
 * splits a character; binary is stored externally with nothing inline.
 * Fills every field of `out`. Thread-safe. */
void sb__body_place(const void *body, size_t len, const char *content_type,
                    size_t cap, sb_body_place *out);

#endif
