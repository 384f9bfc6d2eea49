/* address.c - the listen address of `sqlbus serve` (S1, S9): "HOST:PORT"
 * with HOST an IPv4 or bracketed IPv6 address or "localhost", and whether
 * it is loopback (then no token is needed). */
#include "server/server.h"

#include "core/core.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define HOST_MAX 64

int sb__listen_parse(const char *text, struct sockaddr_storage *out,
                     socklen_t *len, int *loopback, sb_error *err)
{
    memset(out, 0, sizeof *out);
    *loopback = 0;
    const char *colon = text ? strrchr(text, ':') : NULL;
    if (colon == NULL || colon == text)
        return sb__err(err, SB_INVALID, "listen",
                       "listen must be HOST:PORT, e.g. 127.0.0.1:8080 (got "
                       "\"%.80s\")",
                       text ? text : "");
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return sb__err(err, SB_INVALID, "listen",
                       "the port must be 0 to 65535 (got \"%.20s\")",
                       colon + 1);
    size_t hl = (size_t)(colon - text);
    const char *h = text;
    int v6 = h[0] == '[';
    if (v6 && (hl < 3 || h[hl - 1] != ']'))
        return sb__err(err, SB_INVALID, "listen",
                       "an IPv6 host must be in brackets, e.g. [::1]:8080");
    if (v6) {
        h++;
        hl -= 2;
    }
    if (hl >= HOST_MAX)
        return sb__err(err, SB_INVALID, "listen",
                       "the host must be at most %d bytes", HOST_MAX - 1);
    char host[HOST_MAX];
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (!v6 && strcmp(host, "localhost") == 0)
        memcpy(host, "127.0.0.1", 10);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)out;
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return sb__err(err, SB_INVALID, "listen",
                           "\"%s\" is not an IPv6 address", host);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
        *len = sizeof *a;
        return SB_OK;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)out;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return sb__err(err, SB_INVALID, "listen",
                       "\"%s\" is not an IPv4 address (or localhost)", host);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    *len = sizeof *a;
    return SB_OK;
}
