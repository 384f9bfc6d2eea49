/* random.c - kernel randomness for UUIDs, lock ids and back-off jitter. */
#define _GNU_SOURCE
#include "core.h"

#include <string.h>
#include <sys/random.h>

void sb__random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got <= 0)
            break;
        p += got;
        n -= (size_t)got;
    }
    /* Only reached if the kernel refused: mix the clocks so jitter still
     * spreads; UUID uniqueness then rests on the timestamp part. */
    uint64_t x = (uint64_t)sb__mono_us() ^ ((uint64_t)sb__wall_us() << 17);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
}

uint64_t sb__random_u64(void)
{
    uint64_t v;
    sb__random_bytes(&v, sizeof v);
    return v;
}

int64_t sb__jitter_us(int64_t base_us)
{
    if (base_us <= 1)
        return base_us;
    int64_t half = base_us / 2;
    return half + (int64_t)(sb__random_u64() % (uint64_t)(base_us - half + 1));
}
