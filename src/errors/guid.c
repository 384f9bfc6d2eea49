/* guid.c - ServiceControl's DeterministicGuid (rule E6): an MD5 digest laid
 * out the way .NET's Guid(byte[]) prints it, so ids match those existing
 * links, in-flight retry headers and migrated rows already carry. */
#include "errors/ids.h"

#include <string.h>

/* Guid(byte[]) takes bytes 0-3, 4-5 and 6-7 as little-endian integers and
 * prints each as a number, most significant digit first; the last eight
 * bytes print in order. */
static void format_net_guid(const uint8_t digest[16], char out[37])
{
    static const unsigned char order[16] = {3, 2, 1,  0,  5,  4,  7,  6,
                                            8, 9, 10, 11, 12, 13, 14, 15};
    uint8_t b[16];
    for (int i = 0; i < 16; i++)
        b[i] = digest[order[i]];
    sb__uuid_format(b, out);
}

void sb__deterministic_guid(const void *data, size_t len, char out[37])
{
    uint8_t digest[16];
    sb__md5(data, len, digest);
    format_net_guid(digest, out);
}

void sb__deterministic_guid_str(const char *a, const char *b, char out[37])
{
    uint8_t digest[16];
    sb__md5_concat(a, a != NULL ? strlen(a) : 0, b, b != NULL ? strlen(b) : 0,
                   digest);
    format_net_guid(digest, out);
}

/* Public (sqlbus.h): the same derivation for callers of the library. */
void sb_deterministic_guid(const char *a, const char *b, char out[37])
{
    sb__deterministic_guid_str(a, b, out);
}
