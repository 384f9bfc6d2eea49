/*
 * counts.h - every process's counts in the database (rules S6, S8):
 * a bus adds the counts its process kept in memory (metrics.c) to the
 * {p}counts table, one row per queue, from a background thread every
 * counts_flush_ms and once more at sb_close. The message paths never
 * write it: a flush is one short transaction per interval, only when a
 * count moved. See docs/metrics.md and docs/internals/transport.md.
 */
#ifndef SB_TRANSPORT_COUNTS_H
#define SB_TRANSPORT_COUNTS_H

#include "sqlbus.h"

typedef struct sb_flusher sb_flusher;

/* Start writing `bus`'s counts (after its schema is ensured): sets
 * bus->flusher, or leaves it NULL when counting to the table is off
 * (counts_flush_ms -1, SB_SCHEMA_NONE, or, logged once, the table is
 * missing under SB_SCHEMA_VERIFY). SB_NOMEM; a thread that cannot start
 * is logged and leaves writing to sb_counts_flush and sb_close. */
int sb__flusher_start(sb_bus *bus, sb_error *err);
/* Stop the thread and write what is left (best effort, logged on
 * failure). Before the pool closes. NULL-safe. */
void sb__flusher_stop(sb_flusher *f);

#endif
