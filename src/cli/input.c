/* input.c - read a command's payload from FILE or stdin (request,
 * respond), stopping early when SIGINT/SIGTERM arrives. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/* Reading stops here; the library's own limit (max_payload_bytes) is
 * lower and names itself in the error. */
#define READ_CAP ((size_t)256 * 1024 * 1024)

/* Read up to `n` bytes, giving up when a signal arrives: returns bytes
 * read, 0 at EOF, -1 on error, -2 on a signal. */
static ssize_t read_some(int fd, char *buf, size_t n)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                          {.fd = cli_signal_fd(), .events = POLLIN}};
    for (;;) {
        if (cli_signal_count() > 0)
            return -2;
        int r = poll(p, 2, -1);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0 || p[0].revents == 0)
            continue;
        ssize_t got = read(fd, buf, n);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        return got;
    }
}

/* Read FILE or stdin into `out`; prints errors, returns an exit code. */
int cli_read_payload(const char *file, sb_buf *out)
{
    sb__buf_init(out, READ_CAP);
    int fd = STDIN_FILENO;
    if (file != NULL && strcmp(file, "-") != 0) {
        fd = open(file, O_RDONLY);
        if (fd < 0) {
            cli_errorf("cannot open %s: %s", file, strerror(errno));
            return CLI_ERROR;
        }
    }
    char chunk[65536];
    ssize_t got;
    while ((got = read_some(fd, chunk, sizeof chunk)) > 0)
        if (sb__buf_append(out, chunk, (size_t)got) != SB_OK)
            break;
    int saved = errno;
    if (fd != STDIN_FILENO)
        close(fd);
    if (got == -2)
        return CLI_INTERRUPTED;
    if (got < 0) {
        cli_errorf("cannot read the payload: %s", strerror(saved));
        return CLI_ERROR;
    }
    if (out->failed) {
        cli_errorf(out->failed == SB_TOOBIG
                       ? "the payload is larger than %zu bytes"
                       : "out of memory reading the payload (%zu bytes)",
                   READ_CAP);
        return out->failed == SB_TOOBIG ? CLI_USAGE : CLI_ERROR;
    }
    return CLI_OK;
}
