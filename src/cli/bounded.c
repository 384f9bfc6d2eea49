/* bounded.c - run a step that may block in a database call on a thread
 * of its own and wait for it at most a given time: how `sqlbus work`
 * keeps its exit bounded when the database stops answering (a server
 * that hangs keeps its TCP connections open, so no socket error ever
 * ends the call). */
#include "cli.h"

#include <pthread.h>

typedef struct bounded {
    void (*fn)(void *);
    void *user;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} bounded;

static void *run(void *arg)
{
    bounded *b = arg;
    b->fn(b->user);
    pthread_mutex_lock(&b->mu);
    b->done = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/*
 * Run fn(user) and wait at most `ms` milliseconds for it. Returns 1 when
 * it finished (on its thread, or inline when no thread could be started),
 * 0 when it is still running: its thread is then left to it (detached,
 * with its bookkeeping), and the caller must end the program with _Exit,
 * since `user` stays in use. Not thread-safe with itself for one `user`.
 */
int cli_run_bounded(void (*fn)(void *), void *user, int64_t ms)
{
    bounded *b = sb__calloc(1, sizeof *b);
    pthread_t t;
    if (b == NULL) {
        fn(user);
        return 1;
    }
    b->fn = fn;
    b->user = user;
    pthread_mutex_init(&b->mu, NULL);
    sb__cond_init_monotonic(&b->cv);
    if (pthread_create(&t, NULL, run, b) != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        sb__free(b);
        fn(user);
        return 1;
    }
    int64_t until = sb__mono_us() + ms * 1000;
    pthread_mutex_lock(&b->mu);
    while (!b->done && sb__mono_us() < until)
        sb__cond_wait_until(&b->cv, &b->mu, until);
    int done = b->done;
    pthread_mutex_unlock(&b->mu);
    if (!done) {
        pthread_detach(t);
        return 0;
    }
    pthread_join(t, NULL);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    sb__free(b);
    return 1;
}
