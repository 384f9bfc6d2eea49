/*
 * rawhead.h - bytes hidden behind a NUL in a request head (issue 20.4,
 * rule S9). libmicrohttpd 0.9.75 reads the head in place and hands over
 * C strings, so a value such as "Bearer TOKEN\0junk" reaches sqlbus as
 * "Bearer TOKEN": the NUL and what follows it are dropped, and a token
 * check passes on a header that is not the token. The raw bytes are still
 * in libmicrohttpd's buffer, where it has ended each part it split with
 * NULs: between the end of a header's value and the next line there is
 * nothing but those line-ending NULs, unless the value held a NUL of its
 * own (or the line was folded onto the next, obsolete since RFC 7230,
 * whose continuation 0.9.75 leaves there too). Pure: no I/O, no
 * allocation; unit-tested.
 */
#ifndef SB_SERVER_RAWHEAD_H
#define SB_SERVER_RAWHEAD_H

#include <stddef.h>

/* One header line as libmicrohttpd holds it: pointers into the head. */
typedef struct sb_head_field {
    const char *name;
    const char *value; /* ends at libmicrohttpd's NUL */
} sb_head_field;

/* The request head in libmicrohttpd's buffer: [start, start + len), the
 * method first and the empty line last (its request header size). */
typedef struct sb_raw_head {
    const char *start;           /* the method, as the access handler gets it */
    size_t len;                  /* the head's bytes */
    const char *target;          /* the request target as the URI log callback
                             got it (NULL: not known) */
    size_t target_len;           /* its strlen then, before anything cut it */
    const char *version;         /* the HTTP version, as the handler gets it */
    const sb_head_field *fields; /* every header, in the order of lines */
    size_t n_fields;
} sb_raw_head;

/* Where a NUL of the client's hides bytes in `h`: SB_HEAD_CLEAN (none),
 * SB_HEAD_LINE (the request line; *part is "method" or "path") or
 * SB_HEAD_HEADER (*part is the header's name, borrowed from `h`). A part
 * whose pointers lie outside the head (rebuilt elsewhere by
 * libmicrohttpd) is not looked at. */
enum { SB_HEAD_CLEAN, SB_HEAD_LINE, SB_HEAD_HEADER };
int sb__head_hidden(const sb_raw_head *h, const char **part);

#endif
