/* tzload.c - the one part of time zones that does I/O: a zone name
 * checked, its TZif file read from the system's tz database, and the
 * bytes handed to sb__tzif_parse. Never TZ, tzset or localtime: those are
 * process-wide, and every schedule names its own zone. */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sb__tz_name_check(const char *name, sb_error *err)
{
    if (name == NULL || name[0] == '\0')
        return sb__err(err, SB_INVALID, "time_zone", "time zone is empty");
    size_t len = strnlen(name, SB_TZ_NAME_MAX + 1);
    if (len > SB_TZ_NAME_MAX)
        return sb__err(err, SB_INVALID, "time_zone",
                       "time zone name is longer than %d bytes",
                       SB_TZ_NAME_MAX);
    if (name[0] == '/')
        return sb__err(err, SB_INVALID, "time_zone",
                       "time zone \"%s\" must be a name such as "
                       "Europe/Berlin, not a path",
                       name);
    if (strstr(name, "..") != NULL)
        return sb__err(err, SB_INVALID, "time_zone",
                       "time zone \"%s\" may not contain \"..\"", name);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '+' || c == '-' ||
                  c == '/';
        if (!ok)
            return sb__err(err, SB_INVALID, "time_zone",
                           "time zone name has a character outside A-Z a-z "
                           "0-9 _ + - / at byte %zu",
                           i + 1);
        if (c == '/' && (name[i + 1] == '/' || name[i + 1] == '\0'))
            return sb__err(err, SB_INVALID, "time_zone",
                           "time zone \"%s\" has an empty path component",
                           name);
    }
    return SB_OK;
}

/* The whole file at `fd` (at most SB_TZIF_MAX bytes) into *out
 * (transferred). */
static int read_all(int fd, const char *name, uint8_t **out, size_t *len,
                    sb_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return sb__err(err, SB_ERROR, "time_zone", "time zone \"%s\": %s", name,
                       strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sb__err(err, SB_NOTFOUND, "time_zone",
                       "unknown time zone \"%s\" (not a zone file)", name);
    if (st.st_size > SB_TZIF_MAX)
        return sb__err(err, SB_INVALID, "time_zone",
                       "time zone \"%s\": the file is over %d bytes", name,
                       SB_TZIF_MAX);
    size_t cap = (size_t)st.st_size + 1, n = 0; /* +1 sees growth */
    uint8_t *buf = sb__malloc(cap);
    if (buf == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (;;) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            sb__free(buf);
            return sb__err(err, SB_ERROR, "time_zone", "time zone \"%s\": %s",
                           name, strerror(e));
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n == cap) {
            sb__free(buf);
            return sb__err(err, SB_ERROR, "time_zone",
                           "time zone \"%s\": the file grew while read", name);
        }
    }
    *out = buf;
    *len = n;
    return SB_OK;
}

int sb__tz_load(const char *dir, const char *name, sb_tz **out, sb_error *err)
{
    int rc = sb__tz_name_check(name, err);
    if (rc != SB_OK)
        return rc;
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return sb__tz_from_rule("UTC0", out, err);
    char path[4096 + SB_TZ_NAME_MAX + 2];
    int w = snprintf(path, sizeof path, "%s/%s", dir ? dir : SB_TZ_DIR, name);
    if (w < 0 || (size_t)w >= sizeof path)
        return sb__err(err, SB_INVALID, "time_zone",
                       "time zone directory is too long");
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return sb__err(err, SB_NOTFOUND, "time_zone",
                           "unknown time zone \"%s\" (no %s)", name, path);
        return sb__err(err, SB_ERROR, "time_zone", "time zone \"%s\": %s: %s",
                       name, path, strerror(errno));
    }
    uint8_t *data = NULL;
    size_t len = 0;
    rc = read_all(fd, name, &data, &len, err);
    close(fd);
    if (rc != SB_OK)
        return rc;
    sb_error perr;
    rc = sb__tzif_parse(data, len, out, &perr);
    sb__free(data);
    if (rc == SB_NOMEM)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (rc != SB_OK)
        return sb__err(err, SB_INVALID, "time_zone", "time zone \"%s\": %s",
                       name, perr.message);
    return SB_OK;
}
