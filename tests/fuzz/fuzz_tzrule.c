/*
 * fuzz_tzrule.c - libFuzzer target for sb__tzrule_parse, the POSIX TZ
 * strings of TZif footers, and the offsets a rule gives
 * (core/tzrule.c).
 *
 * Invariants: the parser answers SB_OK or SB_INVALID from the given
 * bytes alone (no NUL needed), names the "tz_rule" field on refusal and
 * leaves the output alone. An accepted rule has offsets within 24:59:59,
 * dates in their ranges and times within 167 hours; at any instant its
 * offset is the standard or the DST one, the next change is later, and
 * the offset holds until just before it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tz_int.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_date(const sb_tzrule_date *d)
{
    if (d->kind == 'J')
        CHECK(d->n >= 1 && d->n <= 365);
    else if (d->kind == 'D')
        CHECK(d->n >= 0 && d->n <= 365);
    else
        CHECK(d->kind == 'M' && d->m >= 1 && d->m <= 12 && d->w >= 1 &&
              d->w <= 5 && d->d >= 0 && d->d <= 6);
    CHECK(d->time >= -167 * 3600 - 3599 && d->time <= 167 * 3600 + 3599);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so a read past `size` is caught by ASan. */
    char *s = malloc(size ? size : 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    sb_tzrule r;
    memset(&r, 0xab, sizeof r);
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb__tzrule_parse(s, size, &r, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    if (rc != SB_OK) {
        CHECK(((uint8_t *)&r)[0] == 0xab);
        CHECK(strcmp(err.field, "tz_rule") == 0);
        for (const char *p = err.message; *p; p++)
            CHECK(*p >= 0x20 && *p < 0x7f);
        free(s);
        return 0;
    }
    CHECK(r.std_off >= -89999 && r.std_off <= 89999);
    CHECK(r.dst_off >= -89999 && r.dst_off <= 93599);
    if (r.has_dst) {
        check_date(&r.start);
        check_date(&r.end);
    }
    static const int64_t at[] = {-62135596800LL + 1000000,
                                 -86400,
                                 0,
                                 1767225600,
                                 1774745999,
                                 1792889999,
                                 4102444800LL,
                                 253402300799LL - 1000000};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        int64_t next = 0;
        int32_t off = sb__tzrule_offset(&r, at[i], &next);
        CHECK(off == r.std_off || off == r.dst_off);
        CHECK(next > at[i]);
        if (next != INT64_MAX) {
            CHECK(r.has_dst);
            CHECK(sb__tzrule_offset(&r, next - 1, NULL) == off);
        }
    }
    free(s);
    return 0;
}
