/*
 * fuzz_tzif.c - libFuzzer target for sb__tzif_parse and the zone it
 * builds (core/tzif.c, with the footer's rule from core/tzrule.c).
 *
 * Invariants: the parser answers SB_OK, SB_INVALID or SB_TOOBIG (over
 * SB_TZIF_MAX only), names the "tzif" field on refusal and leaves the
 * output alone. An accepted zone gives offsets under 26 hours; the next
 * change it reports is later and the offset holds until just before it;
 * the instant of a wall time reaches that wall time, and the second
 * before it does not (the first instant: sb__tz_resolve's contract).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_at(const sb_tz *tz, int64_t u)
{
    int64_t next = 0;
    int32_t off = sb__tz_offset(tz, u, &next);
    CHECK(off >= -SB_TZ_OFFSET_MAX && off <= SB_TZ_OFFSET_MAX);
    CHECK(next > u);
    if (next != INT64_MAX)
        CHECK(sb__tz_offset(tz, next - 1, NULL) == off);
    CHECK(sb__tz_offset(tz, u, NULL) == off);

    int64_t wall = u + off;
    int64_t r = sb__tz_resolve(tz, wall);
    CHECK(r <= u); /* u itself reaches the wall time */
    CHECK(r + sb__tz_offset(tz, r, NULL) >= wall);
    CHECK(r - 1 + sb__tz_offset(tz, r - 1, NULL) < wall);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sb_tz *tz = (sb_tz *)(uintptr_t)1;
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb__tzif_parse(data, size, &tz, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID || rc == SB_TOOBIG);
    CHECK((rc == SB_TOOBIG) == (size > SB_TZIF_MAX));
    if (rc != SB_OK) {
        CHECK(tz == (sb_tz *)(uintptr_t)1);
        CHECK(strcmp(err.field, "tzif") == 0);
        CHECK(strncmp(err.message, "tzif: ", 6) == 0);
        return 0;
    }
    sb_tz *again = NULL;
    CHECK(sb__tzif_parse(data, size, &again, NULL) == SB_OK);

    /* Instants in years 1 to 9999: fixed ones, and some from the bytes. */
    static const int64_t fixed[] = {-62135596800LL + 200000,
                                    -2208988800LL,
                                    0,
                                    1774745999,
                                    1792889999,
                                    2216203200LL,
                                    253402300799LL - 200000};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        check_at(tz, fixed[i]);
        CHECK(sb__tz_offset(again, fixed[i], NULL) ==
              sb__tz_offset(tz, fixed[i], NULL));
    }
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++) {
        h = (h ^ data[i]) * 1099511628211ULL;
        if (i % 64 == 63)
            check_at(tz, (int64_t)(h % 8000000000ULL) - 2000000000);
    }
    sb__tz_free(again);
    sb__tz_free(tz);
    return 0;
}
