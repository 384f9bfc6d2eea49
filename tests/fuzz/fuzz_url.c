/*
 * fuzz_url.c - libFuzzer target for sb__db_parse_url / sb__db_config_free.
 *
 * Invariants: SB_OK or SB_INVALID only. On failure the config holds no
 * strings (nothing to leak) and the error names a field. On success the
 * target is not empty: a PostgreSQL target is the URL verbatim; a SQLite
 * target is a prefix-free path taken from the URL, with durability and
 * busy_timeout in range; an ODBC target is the string after odbc: or
 * odbc+postgresql:, or for mssql:// a connection string naming its driver
 * and database. Freeing twice is safe. sb__pg_check_ports on the same
 * bytes agrees with a reference reading of a libpq port list.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = malloc(size + 1);
    if (url == NULL)
        return 0;
    memcpy(url, data, size);
    url[size] = '\0';

    sb_db_config cfg;
    memset(&cfg, 0xa5, sizeof cfg); /* the parser must initialise it */
    sb_error err;
    memset(&err, 0, sizeof err);
    int rc = sb__db_parse_url(url, &cfg, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    if (rc != SB_OK) {
        CHECK(cfg.target == NULL);
        CHECK(cfg.schema == NULL);
        CHECK(err.code == SB_INVALID);
        CHECK(err.field[0] != '\0');
        CHECK(err.message[0] != '\0');
    } else {
        CHECK(cfg.target != NULL);
        CHECK(cfg.target[0] != '\0');
        size_t tlen = strlen(cfg.target);
        if (cfg.odbc) {
            /* odbc: and odbc+postgresql: pass the string on verbatim;
             * mssql:// builds one that names the driver and database. */
            const char *verbatim = strncmp(url, "odbc:", 5) == 0 ? url + 5
                                   : strncmp(url, "odbc+postgresql:", 16) == 0
                                       ? url + 16
                                       : NULL;
            if (verbatim != NULL) {
                CHECK(strcmp(cfg.target, verbatim) == 0);
            } else {
                CHECK(cfg.dialect == SB_DIALECT_MSSQL);
                CHECK(strncmp(cfg.target, "Driver={", 8) == 0);
                CHECK(strstr(cfg.target, ";Database={") != NULL);
            }
        } else if (tlen > strlen(url)) {
            CHECK(0);
        } else if (cfg.dialect == SB_DIALECT_POSTGRES) {
            CHECK(strcmp(cfg.target, url) == 0);
        } else {
            CHECK(cfg.dialect == SB_DIALECT_SQLITE);
            /* the path is a piece of the URL and carries no options */
            CHECK(strstr(url, cfg.target) != NULL);
            CHECK(strchr(cfg.target, '?') == NULL);
            CHECK(cfg.durability == SB_DURABILITY_FULL ||
                  cfg.durability == SB_DURABILITY_NORMAL);
            CHECK(cfg.busy_timeout_ms >= 0);
            CHECK(cfg.busy_timeout_ms <= 999999999);
            CHECK(cfg.wal_autocheckpoint >= SB_WAL_AUTOCHECKPOINT_MIN);
            CHECK(cfg.wal_autocheckpoint <= SB_WAL_AUTOCHECKPOINT_MAX);
        }
        /* the same URL parses the same way again */
        sb_db_config cfg2;
        CHECK(sb__db_parse_url(url, &cfg2, NULL) == SB_OK);
        CHECK(cfg2.dialect == cfg.dialect);
        CHECK(strcmp(cfg2.target, cfg.target) == 0);
        CHECK(cfg2.durability == cfg.durability);
        CHECK(cfg2.busy_timeout_ms == cfg.busy_timeout_ms);
        CHECK(cfg2.wal_autocheckpoint == cfg.wal_autocheckpoint);
        sb__db_config_free(&cfg2);
    }
    sb__db_config_free(&cfg);
    CHECK(cfg.target == NULL && cfg.schema == NULL);
    sb__db_config_free(&cfg); /* twice is safe */
    sb__db_config_free(NULL);

    /* The same bytes as a libpq port list (issue 20.7): accepted exactly
     * when every comma-separated entry is empty or, white space around
     * it aside, a decimal 1 to 65535. */
    memset(&err, 0, sizeof err);
    rc = sb__pg_check_ports(url, &err);
    CHECK(rc == SB_OK || rc == SB_INVALID);
    bool ports_ok = true;
    for (const char *p = url; ports_ok;) {
        const char *end = strchr(p, ',');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        size_t a = strspn(p, " \t\n");
        if (a > n)
            a = n;
        size_t b = n;
        while (b > a && strchr(" \t\n", p[b - 1]) != NULL)
            b--;
        if (a < b) {
            size_t digits = strspn(p + a, "0123456789");
            long v =
                digits == b - a && digits <= 5 ? strtol(p + a, NULL, 10) : 0;
            ports_ok = v >= 1 && v <= 65535;
        }
        if (end == NULL)
            break;
        p = end + 1;
    }
    CHECK((rc == SB_OK) == ports_ok);
    if (rc != SB_OK)
        CHECK(strcmp(err.field, "url") == 0);
    free(url);
    return 0;
}
