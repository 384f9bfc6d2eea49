/* signals.c - SIGINT and SIGTERM are blocked in every thread and taken by
 * one thread with sigwait(), so no library thread ever sees EINTR and the
 * program reacts in ordinary code (a flag and a pipe), never inside a
 * signal handler. */
#include "cli.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int signal_count;
static atomic_int first_signal;
static int graceful;
static int wake_pipe[2] = {-1, -1};

static void *signal_thread(void *arg)
{
    sigset_t *set = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) != 0)
            continue;
        int expected = 0;
        atomic_compare_exchange_strong(&first_signal, &expected, sig);
        int n = atomic_fetch_add(&signal_count, 1) + 1;
        if (wake_pipe[1] >= 0) {
            char b = 1;
            ssize_t w = write(wake_pipe[1], &b, 1);
            (void)w; /* the pipe is non-blocking; full means already woken */
        }
        if (n > graceful) {
            /* Out of patience: die by the signal's default action, so the
             * parent sees the usual 128 + N status. */
            signal(sig, SIG_DFL);
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            pthread_sigmask(SIG_UNBLOCK, &one, NULL);
            raise(sig);
        }
    }
    return NULL;
}

static int set_flags(int fd, int fl)
{
    int cur = fcntl(fd, F_GETFL);
    int fdf = fcntl(fd, F_GETFD);
    if (cur < 0 || fdf < 0)
        return -1;
    if (fcntl(fd, F_SETFL, cur | fl) < 0)
        return -1;
    return fcntl(fd, F_SETFD, fdf | FD_CLOEXEC);
}

/* Route SIGINT/SIGTERM to a sigwait thread (call before creating threads);
 * ignore SIGPIPE. 0 or -1. */
int cli_signals_start(int graceful_rounds)
{
    static sigset_t set;
    graceful = graceful_rounds;
    signal(SIGPIPE, SIG_IGN);
    if (pipe(wake_pipe) != 0 || set_flags(wake_pipe[0], O_NONBLOCK) != 0 ||
        set_flags(wake_pipe[1], O_NONBLOCK) != 0) {
        cli_errorf("cannot create the signal pipe");
        return -1;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) {
        cli_errorf("cannot block signals");
        return -1;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, signal_thread, &set);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        cli_errorf("cannot start the signal thread");
        return -1;
    }
    return 0;
}

/* Number of SIGINT/SIGTERM received so far. Thread-safe. */
int cli_signal_count(void)
{
    return atomic_load(&signal_count);
}

/* The first signal received, or 0. Thread-safe. */
int cli_first_signal(void)
{
    return atomic_load(&first_signal);
}

/* A descriptor that becomes readable when a signal arrives (poll only). */
int cli_signal_fd(void)
{
    return wake_pipe[0];
}
