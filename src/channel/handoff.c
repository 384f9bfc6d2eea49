/* handoff.c - handing a reply to recovery (C21): one durable job per
 * stored registration on the sqlbus.recovery queue, published in the
 * transaction that won the recovery claim. */
#include "channel/channel.h"

#include <string.h>

/* A recovery job's id: the same for the same reply and registration, so a
 * repeated claim can never enqueue a job twice (publish is idempotent). */
static void job_id(const char *reply_id, const char *reg_id, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 36; i++) {
        out[i] = reply_id[i];
        if (reply_id[i] == '-')
            continue;
        h = (h ^ (unsigned char)reg_id[i]) * 1099511628211ULL;
        int a = reply_id[i] <= '9' ? reply_id[i] - '0' : reply_id[i] - 'a' + 10;
        out[i] = hex[(a ^ (int)(h >> 29)) & 15];
    }
    out[14] = '8'; /* version 8: custom, derived */
    out[19] = hex[8 | ((unsigned char)out[19] & 3)];
    out[36] = '\0';
}

int sb__channel_enqueue_recovery(sb_channel *ch, sb_conn *c, const char *corr,
                                 const char *reply_id, sb_error *err)
{
    sb_value p[2] = {sb__v_text(corr), sb__v_int(sb__bus_now_us(ch->bus))};
    sb_rows *rows = NULL;
    int rc = sb__query(c, CH_SQL(ch, registrations), p, 2, &rows, NULL, err);
    for (size_t r = 0; rc == SB_OK && r < rows->nrows; r++) {
        char reg[37];
        const char *reg_text = sb__rows_text(rows, r, 0);
        const char *handler = sb__rows_text(rows, r, 1);
        if (reg_text == NULL || sb__uuid_normalize(reg_text, reg) != SB_OK)
            continue;
        const char *kv[] = {"reply_id", reply_id,          "correlation_id",
                            corr,       "registration_id", reg,
                            "handler",  handler,           NULL};
        const char *hkv[] = {"sb-correlation-id", corr, NULL};
        char *payload = NULL, *headers = NULL;
        rc = sb__headers_merge(NULL, kv, &payload, err);
        if (rc == SB_OK)
            rc = sb__headers_merge(NULL, hkv, &headers, err);
        char ids[1][37];
        job_id(reply_id, reg, ids[0]);
        sb_outgoing o = {ids[0], payload, payload ? strlen(payload) : 0,
                         headers, 0};
        int immediate = 0;
        if (rc == SB_OK)
            rc = sb__publish_on(ch->bus, c, SB_RECOVERY_QUEUE, &o, 1, ids,
                                &immediate, err);
        /* C22: the watchdog and `recovery list` see the dispatch. */
        sb_value d[3] = {sb__v_text(corr), sb__v_text(reg_text), p[1]};
        if (rc == SB_OK)
            rc = sb__query(c, CH_SQL(ch, mark_dispatched), d, 3, NULL, NULL,
                           err);
        sb__free(payload);
        sb__free(headers);
    }
    sb__rows_free(rows);
    return rc;
}
