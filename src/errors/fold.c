/* fold.c - a batch's attempts folded in memory into one row per failed
 * message (E8): the newest attempt (by time of failure) supplies the data,
 * the attempt count is the number of distinct failure times (each row
 * keeps them: they identify its attempts, E10), the window is their
 * minimum and maximum. Rows come out sorted by unique id, so
 * concurrent writers take row locks in the same order. */
#include "errors/errors.h"

#include <stdlib.h>
#include <string.h>

typedef struct keyed {
    const sb_attempt *a;
    size_t order; /* position in the batch: the later wins a tie */
} keyed;

static int by_id_then_time(const void *pa, const void *pb)
{
    const keyed *x = pa, *y = pb;
    int c = strcmp(x->a->unique_id, y->a->unique_id);
    if (c != 0)
        return c;
    if (x->a->time_of_failure_us != y->a->time_of_failure_us)
        return x->a->time_of_failure_us < y->a->time_of_failure_us ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

long sb__fold(const sb_attempt *const *attempts, size_t n, sb_folded **out)
{
    *out = NULL;
    if (n == 0)
        return 0;
    keyed *k = sb__calloc(n, sizeof *k);
    /* The rows, then every row's times, then their attempts: int64_t and
     * pointers are as aligned as a row. */
    sb_folded *f =
        sb__calloc(n, sizeof *f + sizeof(int64_t) + sizeof(const sb_attempt *));
    if (k == NULL || f == NULL) {
        sb__free(k);
        sb__free(f);
        return -1;
    }
    int64_t *times = (int64_t *)(void *)(f + n);
    const sb_attempt **of = (const sb_attempt **)(void *)(times + n);
    for (size_t i = 0; i < n; i++) {
        k[i].a = attempts[i];
        k[i].order = i;
    }
    qsort(k, n, sizeof *k, by_id_then_time);
    long m = -1;
    for (size_t i = 0; i < n; i++) {
        const sb_attempt *a = k[i].a;
        int same = m >= 0 && strcmp(f[m].newest->unique_id, a->unique_id) == 0;
        if (!same) {
            m++;
            f[m].first_us = a->time_of_failure_us;
            f[m].attempts = 0;
            f[m].times = times;
            f[m].of = of;
        }
        /* Sorted by time within an id: a new time is a new attempt, and
         * the last one seen is the newest. */
        if (!same || a->time_of_failure_us != f[m].last_us) {
            f[m].attempts++;
            f[m].n_times++;
            *times++ = a->time_of_failure_us;
            of++;
        }
        of[-1] = a;
        f[m].last_us = a->time_of_failure_us;
        f[m].newest = a;
    }
    sb__free(k);
    *out = f;
    return m + 1;
}
