/*
 * cron_probe.c - src/core's time zones and cron expressions on the command
 * line, for cron_reference.sh to compare against Python's zoneinfo. One
 * question a line on stdin, tab-separated, one answer a line on stdout:
 *
 *     next EXPR ZONE AFTER_US   -> the next occurrence (us) or "ERR msg"
 *     off ZONE UTC_S            -> the offset (s east) in effect then
 *     resolve ZONE WALL_S       -> the instant of that wall time (s)
 *
 * Zones are loaded from the system's tz database once each.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define MAX_ZONES 1024

static struct {
    char name[SB_TZ_NAME_MAX + 1];
    sb_tz *tz;
} zones[MAX_ZONES];
static int n_zones;

static sb_tz *zone(const char *name, sb_error *err)
{
    for (int i = 0; i < n_zones; i++)
        if (strcmp(zones[i].name, name) == 0)
            return zones[i].tz;
    if (n_zones == MAX_ZONES)
        return NULL;
    sb_tz *tz;
    if (sb__tz_load(NULL, name, &tz, err) != SB_OK)
        return NULL;
    snprintf(zones[n_zones].name, sizeof zones[n_zones].name, "%s", name);
    zones[n_zones++].tz = tz;
    return tz;
}

static int64_t number(const char *s)
{
    return (int64_t)strtoll(s, NULL, 10);
}

int main(void)
{
    char line[1024];
    while (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *f[5] = {0};
        int n = 0;
        for (char *p = line; n < 5 && p != NULL; n++) {
            f[n] = p;
            p = strchr(p, '\t');
            if (p != NULL)
                *p++ = '\0';
        }
        sb_error err;
        memset(&err, 0, sizeof err);
        if (n == 4 && strcmp(f[0], "next") == 0) {
            sb_cron c;
            sb_tz *tz = zone(f[2], &err);
            int64_t next;
            if (tz == NULL || sb__cron_parse(f[1], &c, &err) != SB_OK ||
                sb__cron_next(&c, tz, number(f[3]), &next, &err) != SB_OK)
                printf("ERR %s\n", err.message);
            else
                printf("%" PRId64 "\n", next);
        } else if (n == 3 && strcmp(f[0], "off") == 0) {
            sb_tz *tz = zone(f[1], &err);
            if (tz == NULL)
                printf("ERR %s\n", err.message);
            else
                printf("%" PRId32 "\n", sb__tz_offset(tz, number(f[2]), NULL));
        } else if (n == 3 && strcmp(f[0], "resolve") == 0) {
            sb_tz *tz = zone(f[1], &err);
            if (tz == NULL)
                printf("ERR %s\n", err.message);
            else
                printf("%" PRId64 "\n", sb__tz_resolve(tz, number(f[2])));
        } else {
            printf("ERR bad question\n");
        }
    }
    for (int i = 0; i < n_zones; i++)
        sb__tz_free(zones[i].tz);
    return 0;
}
