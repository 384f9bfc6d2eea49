/*
 * failalloc.h - the "fail the Nth allocation" allocator of the tests
 * (style rule 7, after SQLite's faultsim and curl's torture tests), shared
 * by every test that walks error paths through the allocator seam
 * (sb_set_allocator).
 *
 * It counts the malloc and realloc calls that reach the seam since it was
 * last armed, fails the Nth of them (returns NULL once; a failed realloc
 * leaves the old block valid), and keeps the number of live blocks, so a
 * walk can tell a leak from a success. The counters are atomics: the
 * library's background threads (workers, the channel, the counts flusher)
 * allocate through the same seam while the test thread runs.
 *
 * By default every thread's allocations count. fa_only_this_thread()
 * narrows counting and failing to the calling thread, so the count of a
 * call is the same from one run to the next whatever the background
 * threads do (they still allocate and free through the seam, and their
 * blocks are still in fa_live()).
 *
 * Header-only (static inline functions, static state): include it in one
 * file of a test executable.
 */
#ifndef SBT_FAILALLOC_H
#define SBT_FAILALLOC_H

#include "sqlbus.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
    atomic_long nth;    /* fail this counted call (1-based); 0 = never */
    atomic_long calls;  /* counted malloc + realloc calls since fa_arm */
    atomic_long live;   /* blocks currently allocated through the seam */
    atomic_long failed; /* calls failed on purpose, ever */
    atomic_int this_thread_only; /* count only threads marked below */
} fa;

/* Set on the thread fa_only_this_thread() was called from. */
static _Thread_local int fa_marked;

/* Called (on the allocating thread) with N each time the Nth call is
 * failed, if set: a test may print where, to find the path that broke. */
static void (*fa_on_fail)(long nth);

/* Whether this call counts, and whether it is the one to fail. */
static inline int fa_should_fail(void *user)
{
    if (user != &fa) {
        fprintf(stderr, "failalloc: called with a foreign user pointer\n");
        abort();
    }
    if (atomic_load(&fa.this_thread_only) && !fa_marked)
        return 0;
    long n = atomic_fetch_add(&fa.calls, 1) + 1;
    if (n != atomic_load(&fa.nth))
        return 0;
    atomic_fetch_add(&fa.failed, 1);
    if (fa_on_fail != NULL)
        fa_on_fail(n);
    return 1;
}

static inline void *fa_malloc(size_t n, void *user)
{
    if (fa_should_fail(user))
        return NULL;
    void *p = malloc(n);
    if (p != NULL)
        atomic_fetch_add(&fa.live, 1);
    return p;
}

static inline void *fa_realloc(void *p, size_t n, void *user)
{
    if (fa_should_fail(user))
        return NULL; /* the old block stays valid, as with realloc */
    void *q = realloc(p, n);
    if (q != NULL && p == NULL)
        atomic_fetch_add(&fa.live, 1);
    return q;
}

static inline void fa_free(void *p, void *user)
{
    if (user != &fa) {
        fprintf(stderr, "failalloc: called with a foreign user pointer\n");
        abort();
    }
    if (p != NULL) {
        atomic_fetch_sub(&fa.live, 1);
        free(p);
    }
}

/* Reset every counter and install the allocator (no failure armed, every
 * thread counted). Call before the library allocates anything. */
static inline void fa_install(void)
{
    atomic_store(&fa.nth, 0);
    atomic_store(&fa.calls, 0);
    atomic_store(&fa.live, 0);
    atomic_store(&fa.failed, 0);
    atomic_store(&fa.this_thread_only, 0);
    static const sb_allocator a = {fa_malloc, fa_realloc, fa_free, &fa};
    sb_set_allocator(&a);
}

/* Put the C library's allocator back. Every block must have been freed. */
static inline void fa_uninstall(void)
{
    sb_set_allocator(NULL);
}

/* Count (and fail) only the calling thread's allocations from now on. */
static inline void fa_only_this_thread(void)
{
    fa_marked = 1;
    atomic_store(&fa.this_thread_only, 1);
}

/* Count every thread's allocations again. */
static inline void fa_all_threads(void)
{
    atomic_store(&fa.this_thread_only, 0);
}

/* Start counting from zero and fail the `nth` counted call (0 = none). */
static inline void fa_arm(long nth)
{
    atomic_store(&fa.nth, 0);
    atomic_store(&fa.calls, 0);
    atomic_store(&fa.nth, nth);
}

/* Stop failing; returns the calls counted since fa_arm. */
static inline long fa_disarm(void)
{
    atomic_store(&fa.nth, 0);
    return atomic_load(&fa.calls);
}

/* Counted calls since fa_arm, blocks live now, failures injected ever. */
static inline long fa_calls(void)
{
    return atomic_load(&fa.calls);
}

static inline long fa_live(void)
{
    return atomic_load(&fa.live);
}

static inline long fa_failed(void)
{
    return atomic_load(&fa.failed);
}

#endif
