/* tzif.c - time zones from TZif files (RFC 8536, versions 1 to 4): the
 * transitions and, after the last one, the footer's POSIX TZ rule
 * (tzrule.c); the offset at an instant and the instant of a wall time.
 * Pure: the bytes come from the caller (tzload.c reads the files). */
#include "tz_int.h"

#include <string.h>

#define HEADER 44 /* "TZif", version, 15 unused bytes, six counts */
/* Transitions beyond this are refused: RFC 8536's "big bang" marker is
 * -2^59, and times this far out keep every sum below in range. */
#define FAR (1LL << 60)

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct header {
    uint8_t version;                               /* 0, '2', '3', ... */
    uint32_t isut, isstd, leap, time, type, chars; /* the counts */
} header;

static int bad(sb_error *err, const char *what)
{
    return sb__err(err, SB_INVALID, "tzif", "tzif: %s", what);
}

static int read_header(const uint8_t *p, size_t avail, header *h, sb_error *err)
{
    if (avail < HEADER)
        return bad(err, "truncated header");
    if (memcmp(p, "TZif", 4) != 0)
        return bad(err, "not a TZif file (no \"TZif\" magic)");
    h->version = p[4];
    h->isut = be32(p + 20);
    h->isstd = be32(p + 24);
    h->leap = be32(p + 28);
    h->time = be32(p + 32);
    h->type = be32(p + 36);
    h->chars = be32(p + 40);
    if (h->type == 0 || h->type > 256 || h->chars == 0)
        return bad(err, "a file needs 1 to 256 time types and designations");
    if ((h->isut != 0 && h->isut != h->type) ||
        (h->isstd != 0 && h->isstd != h->type))
        return bad(err, "UT/standard indicator counts do not match the types");
    if (h->leap != 0)
        return bad(err, "leap-second zones (right/...) are not supported");
    return SB_OK;
}

/* The bytes of one data block whose times are `tsize` bytes wide. */
static uint64_t block_size(const header *h, uint64_t tsize)
{
    return (uint64_t)h->time * tsize + h->time + (uint64_t)h->type * 6 +
           h->chars + (uint64_t)h->leap * (tsize + 4) + h->isstd + h->isut;
}

/* Check the block at `p` and, when `z` is not NULL, fill its arrays. */
static int read_block(const uint8_t *p, const header *h, size_t tsize, sb_tz *z,
                      sb_error *err)
{
    const uint8_t *times = p, *idx = p + (size_t)h->time * tsize;
    const uint8_t *types = idx + h->time, *chars = types + (size_t)h->type * 6;
    const uint8_t *flags = chars + h->chars; /* no leap records */
    int64_t prev = 0;
    for (uint32_t i = 0; i < h->time; i++) {
        int64_t t = tsize == 4 ? (int64_t)(int32_t)be32(times + i * 4)
                               : be64(times + (size_t)i * 8);
        if (t <= -FAR || t >= FAR)
            return bad(err, "transition time out of range");
        if (i > 0 && t <= prev)
            return bad(err, "transition times are not ascending");
        if (idx[i] >= h->type)
            return bad(err, "transition names a time type that is not there");
        prev = t;
        if (z != NULL)
            z->at[i] = t;
    }
    for (uint32_t i = 0; i < h->type; i++) {
        int32_t off = (int32_t)be32(types + i * 6);
        if (off < -SB_TZ_OFFSET_MAX || off > SB_TZ_OFFSET_MAX)
            return bad(err, "a time type's offset is 26 hours or more");
        if (types[i * 6 + 4] > 1 || types[i * 6 + 5] >= h->chars)
            return bad(err, "a time type is malformed");
    }
    for (uint32_t i = 0; i < h->isstd + h->isut; i++)
        if (flags[i] > 1)
            return bad(err, "a UT/standard indicator is not 0 or 1");
    if (z != NULL) {
        for (uint32_t i = 0; i < h->time; i++)
            z->off[i] = (int32_t)be32(types + (size_t)idx[i] * 6);
        z->off0 = (int32_t)be32(types);
    }
    return SB_OK;
}

/* One block for the struct and both arrays. */
static sb_tz *tz_alloc(size_t n)
{
    size_t at = (sizeof(sb_tz) + _Alignof(int64_t) - 1) / _Alignof(int64_t) *
                _Alignof(int64_t);
    sb_tz *z = sb__malloc(at + n * (sizeof(int64_t) + sizeof(int32_t)));
    if (z == NULL)
        return NULL;
    memset(z, 0, sizeof *z);
    z->n = n;
    z->at = (int64_t *)(void *)((char *)z + at);
    z->off = (int32_t *)(void *)(z->at + n);
    return z;
}

int sb__tzif_parse(const void *data, size_t len, sb_tz **out, sb_error *err)
{
    const uint8_t *p = data;
    if (len > SB_TZIF_MAX)
        return sb__err(err, SB_TOOBIG, "tzif",
                       "tzif: the file is over %d bytes", SB_TZIF_MAX);
    header h;
    memset(&h, 0, sizeof h);
    int rc = read_header(p, len, &h, err);
    if (rc != SB_OK)
        return rc;
    uint64_t size = block_size(&h, 4);
    if (size > len - HEADER)
        return bad(err, "truncated data");
    const uint8_t *block = p + HEADER;
    size_t tsize = 4;
    const uint8_t *end = block + size; /* what follows the data used */
    if (h.version != 0) {
        /* Version 2 and later: skip the 32-bit block (checked for what a
         * version 1 reader would trip on), read the 64-bit one. */
        if ((rc = read_block(block, &h, 4, NULL, err)) != SB_OK)
            return rc;
        const uint8_t *h2 = block + size;
        size_t avail = len - (size_t)(h2 - p);
        header v1 = h;
        if ((rc = read_header(h2, avail, &h, err)) != SB_OK)
            return rc;
        if (h.version != v1.version)
            return bad(err, "the two headers' versions differ");
        tsize = 8;
        size = block_size(&h, 8);
        if (size > avail - HEADER)
            return bad(err, "truncated data");
        block = h2 + HEADER;
        end = block + size;
    }
    if ((rc = read_block(block, &h, tsize, NULL, err)) != SB_OK)
        return rc;

    /* The footer: "\n" TZ string "\n", then nothing. */
    sb_tzrule rule;
    memset(&rule, 0, sizeof rule);
    bool has_rule = false;
    size_t rest = len - (size_t)(end - p);
    if (h.version != 0) {
        if (rest < 2 || end[0] != '\n')
            return bad(err, "the footer is missing");
        const uint8_t *nl = memchr(end + 1, '\n', rest - 1);
        if (nl == NULL)
            return bad(err, "the footer is not terminated");
        size_t flen = (size_t)(nl - end - 1);
        if ((size_t)(nl - p) + 1 != len)
            return bad(err, "bytes follow the footer");
        if (flen > 0) {
            sb_error ferr;
            if (sb__tzrule_parse((const char *)end + 1, flen, &rule, &ferr) !=
                SB_OK)
                return sb__err(err, SB_INVALID, "tzif", "tzif: footer: %s",
                               ferr.message);
            has_rule = true;
        }
    } else if (rest != 0) {
        return bad(err, "bytes follow the data");
    }

    sb_tz *z = tz_alloc(h.time);
    if (z == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    (void)read_block(block, &h, tsize, z, NULL); /* checked above */
    z->has_rule = has_rule;
    if (has_rule)
        z->rule = rule;
    *out = z;
    return SB_OK;
}

int sb__tz_from_rule(const char *rule, sb_tz **out, sb_error *err)
{
    sb_tzrule r;
    size_t len = rule == NULL ? 0 : strnlen(rule, SB_TZ_RULE_MAX + 1);
    int rc = sb__tzrule_parse(rule, len, &r, err);
    if (rc != SB_OK)
        return rc;
    sb_tz *z = tz_alloc(0);
    if (z == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    z->has_rule = true;
    z->rule = r;
    z->off0 = r.std_off;
    *out = z;
    return SB_OK;
}

void sb__tz_free(sb_tz *tz)
{
    sb__free(tz);
}

int32_t sb__tz_offset(const sb_tz *tz, int64_t utc, int64_t *next_change)
{
    int64_t next = INT64_MAX;
    int32_t off;
    if (tz->n == 0 || utc >= tz->at[tz->n - 1]) {
        /* From the last transition on the rule speaks (as tzcode's and
         * Python's readers have it; a well-made file's rule agrees with
         * the last transition there). */
        if (tz->has_rule) {
            off = sb__tzrule_offset(&tz->rule, utc, &next);
        } else {
            off = tz->n == 0 ? tz->off0 : tz->off[tz->n - 1];
        }
    } else if (utc < tz->at[0]) {
        off = tz->off0;
        next = tz->at[0];
    } else {
        /* at[lo] <= utc < at[hi] */
        size_t lo = 0, hi = tz->n - 1;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (tz->at[mid] <= utc)
                lo = mid;
            else
                hi = mid;
        }
        off = tz->off[lo];
        next = tz->at[hi];
    }
    if (next_change != NULL)
        *next_change = next;
    return off;
}

int64_t sb__tz_resolve(const sb_tz *tz, int64_t wall)
{
    /* Walk the spans of constant offset from an instant whose wall time
     * is surely earlier (offsets are under 26 h): in each span the wall
     * clock runs forward, so the first instant reaching `wall` is either
     * inside a span or the start of one that begins past it (a gap). The
     * walk ends within 26 h past `wall`, where every span is past it. */
    int64_t u = wall - (SB_TZ_OFFSET_MAX + 1);
    for (;;) {
        int64_t change;
        int32_t off = sb__tz_offset(tz, u, &change);
        int64_t cand = wall - off;
        if (cand < u)
            return u; /* the clock jumped over `wall` at u */
        if (cand < change)
            return cand;
        u = change;
    }
}
