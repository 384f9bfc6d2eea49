/* md5.c - MD5 (RFC 1321), written from the RFC's description. It derives
 * ids that must equal those of other tools (rule E6); it is not used for
 * anything that needs collision resistance. */
#include "core.h"

#include <string.h>

/* T[i] = floor(2^32 * |sin(i + 1)|), RFC 1321 section 3.4 (the table was
 * generated from that formula). */
static const uint32_t md5_t[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
    0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
    0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* Left-rotation amounts, four per round. */
static const unsigned char md5_s[4][4] = {
    {7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

static uint32_t rotl(uint32_t x, unsigned s)
{
    return (x << s) | (x >> (32 - s));
}

/* Fold one 64-byte block into the state (RFC 1321 section 3.4). The
 * sixteen words are little-endian whatever the host's byte order. */
static void md5_block(uint32_t st[4], const unsigned char *blk)
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)blk[4 * i] | (uint32_t)blk[4 * i + 1] << 8 |
               (uint32_t)blk[4 * i + 2] << 16 | (uint32_t)blk[4 * i + 3] << 24;
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
    for (int i = 0; i < 64; i++) {
        int round = i / 16;
        uint32_t f;
        int k;
        switch (round) {
        case 0: /* F */
            f = (b & c) | (~b & d);
            k = i;
            break;
        case 1: /* G */
            f = (b & d) | (c & ~d);
            k = (1 + 5 * i) % 16;
            break;
        case 2: /* H */
            f = b ^ c ^ d;
            k = (5 + 3 * i) % 16;
            break;
        default: /* I */
            f = c ^ (b | ~d);
            k = (7 * i) % 16;
            break;
        }
        /* The RFC's rotating [ABCD ...] [DABC ...] operations, written
         * as one operation that renames the registers after each step. */
        uint32_t t = d;
        d = c;
        c = b;
        b = b + rotl(a + f + x[k] + md5_t[i], md5_s[round][i % 4]);
        a = t;
    }
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
}

void sb__md5_concat(const void *a, size_t alen, const void *b, size_t blen,
                    uint8_t out[16])
{
    uint32_t st[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    unsigned char blk[64];
    size_t fill = 0;
    const unsigned char *part[2] = {a, b};
    size_t part_len[2] = {alen, blen};
    for (int p = 0; p < 2; p++) {
        const unsigned char *s = part[p];
        size_t n = part_len[p];
        while (n > 0) {
            if (fill == 0 && n >= 64) {
                md5_block(st, s);
                s += 64;
                n -= 64;
                continue;
            }
            size_t take = 64 - fill < n ? 64 - fill : n;
            memcpy(blk + fill, s, take);
            fill += take;
            s += take;
            n -= take;
            if (fill == 64) {
                md5_block(st, blk);
                fill = 0;
            }
        }
    }
    /* Padding (sections 3.1 and 3.2): one 1 bit, zeros up to 56 bytes
     * into a block, then the message length in bits mod 2^64, low byte
     * first. */
    uint64_t bits = ((uint64_t)alen + (uint64_t)blen) * 8;
    blk[fill++] = 0x80;
    if (fill > 56) {
        memset(blk + fill, 0, 64 - fill);
        md5_block(st, blk);
        fill = 0;
    }
    memset(blk + fill, 0, 56 - fill);
    for (int i = 0; i < 8; i++)
        blk[56 + i] = (unsigned char)(bits >> (8 * i));
    md5_block(st, blk);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(st[i] >> (8 * j));
}

void sb__md5(const void *data, size_t len, uint8_t out[16])
{
    sb__md5_concat(data, len, NULL, 0, out);
}
