/* parse.c - durations ("250ms", "30s") and sizes ("16MiB"): free of I/O so
 * they can be fuzzed. */
#include "core.h"

#include <string.h>

/* Parse a non-negative decimal integer prefix; returns chars consumed or
 * 0 on no digits/overflow (sets *overflow). */
static size_t parse_uint(const char *s, uint64_t *out, int *overflow)
{
    uint64_t v = 0;
    size_t i = 0;
    *overflow = 0;
    while (s[i] >= '0' && s[i] <= '9') {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            *overflow = 1;
            return 0;
        }
        v = v * 10 + d;
        i++;
    }
    *out = v;
    return i;
}

int sb_parse_duration_ms(const char *text, int64_t *out_ms, sb_error *err)
{
    static const struct {
        const char *unit;
        uint64_t num, den; /* ms = value * num / den */
    } units[] = {{"us", 1, 1000}, {"ms", 1, 1},      {"s", 1000, 1},
                 {"m", 60000, 1}, {"h", 3600000, 1}, {"d", 86400000, 1},
                 {"", 1, 1}};
    if (text == NULL || text[0] == '\0')
        return sb__err(err, SB_INVALID, "duration", "duration is empty");
    uint64_t v;
    int overflow;
    size_t n = parse_uint(text, &v, &overflow);
    if (n == 0)
        return sb__err(err, SB_INVALID, "duration",
                       overflow ? "duration \"%.40s\" is too large"
                                : "duration \"%.40s\" must start with digits "
                                  "(e.g. 250ms, 30s, 5m)",
                       text);
    const char *u = text + n;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(u, units[i].unit) != 0)
            continue;
        if (v > (uint64_t)INT64_MAX / units[i].num)
            return sb__err(err, SB_INVALID, "duration",
                           "duration \"%.40s\" is too large", text);
        *out_ms = (int64_t)(v * units[i].num / units[i].den);
        return SB_OK;
    }
    return sb__err(err, SB_INVALID, "duration",
                   "duration \"%.40s\" has an unknown unit (use us, ms, s, "
                   "m, h or d)",
                   text);
}

int sb_parse_size(const char *text, uint64_t *out_bytes, sb_error *err)
{
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"KB", 1000},
                 {"KiB", 1024},
                 {"MB", 1000 * 1000},
                 {"MiB", 1024 * 1024},
                 {"GB", 1000 * 1000 * 1000},
                 {"GiB", 1024ULL * 1024 * 1024}};
    if (text == NULL || text[0] == '\0')
        return sb__err(err, SB_INVALID, "size", "size is empty");
    uint64_t v;
    int overflow;
    size_t n = parse_uint(text, &v, &overflow);
    if (n == 0)
        return sb__err(err, SB_INVALID, "size",
                       overflow ? "size \"%.40s\" is too large"
                                : "size \"%.40s\" must start with digits "
                                  "(e.g. 512KiB, 16MiB)",
                       text);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(text + n, units[i].unit) != 0)
            continue;
        if (v > UINT64_MAX / units[i].mul)
            return sb__err(err, SB_INVALID, "size",
                           "size \"%.40s\" is too large", text);
        *out_bytes = v * units[i].mul;
        return SB_OK;
    }
    return sb__err(err, SB_INVALID, "size",
                   "size \"%.40s\" has an unknown unit (use B, KB, KiB, MB, "
                   "MiB, GB or GiB)",
                   text);
}
