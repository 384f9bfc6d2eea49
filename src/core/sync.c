/* sync.c - condition variables on the monotonic clock, so deadlines do not
 * move when the wall clock is set. */
#include "core.h"

#include <time.h>

void sb__cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void sb__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         int64_t until_us)
{
    int64_t left = until_us - sb__mono_us();
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (left % 1000000) * 1000;
    ts.tv_sec += (time_t)(left / 1000000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(cv, mu, &ts);
}
