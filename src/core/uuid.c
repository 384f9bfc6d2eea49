/* uuid.c - UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits.
 * Time-ordered ids keep B-tree inserts local in every database. Also
 * name-based UUIDs (version 3), for ids every process derives alike. */
#include "core.h"

#include <string.h>

static const char hexdig[] = "0123456789abcdef";

void sb__uuid7_at(char out[37], int64_t unix_ms)
{
    unsigned char b[16];
    sb__random_bytes(b + 6, 10);
    uint64_t ms = (uint64_t)unix_ms;
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)(0x70 | (b[6] & 0x0f)); /* version 7 */
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f)); /* variant 10 */
    sb__uuid_format(b, out);
}

void sb__uuid3(const uint8_t ns[16], const void *name, size_t len, char out[37])
{
    uint8_t b[16];
    sb__md5_concat(ns, 16, name, len, b);
    b[6] = (uint8_t)(0x30 | (b[6] & 0x0f)); /* version 3 */
    b[8] = (uint8_t)(0x80 | (b[8] & 0x3f)); /* variant 10 */
    sb__uuid_format(b, out);
}

void sb__uuid_format(const uint8_t b[16], char out[37])
{
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hexdig[b[i] >> 4];
        out[o++] = hexdig[b[i] & 15];
    }
    out[36] = '\0';
}

int sb_uuid7(char out[37], sb_error *err)
{
    if (out == NULL)
        return sb__err(err, SB_INVALID, "out", "out must not be NULL");
    sb__uuid7_at(out, sb__wall_us() / 1000);
    return SB_OK;
}

/* Each hex digit's lower-case form, 0 for every other byte: a table, not
 * <ctype.h>, so no locale applies and the claim path (two ids a
 * message) makes no call per character. */
static const char lower_hex[256] = {
    ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
    ['a'] = 'a', ['b'] = 'b', ['c'] = 'c', ['d'] = 'd', ['e'] = 'e',
    ['f'] = 'f', ['A'] = 'a', ['B'] = 'b', ['C'] = 'c', ['D'] = 'd',
    ['E'] = 'e', ['F'] = 'f'};

int sb__uuid_normalize(const char *in, char out[37])
{
    if (in == NULL || strlen(in) != 36)
        return SB_INVALID;
    for (int i = 0; i < 36; i++) {
        unsigned char c = (unsigned char)in[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return SB_INVALID;
            out[i] = '-';
        } else {
            char h = lower_hex[c];
            if (h == 0)
                return SB_INVALID;
            out[i] = h;
        }
    }
    out[36] = '\0';
    return SB_OK;
}
