/* child.c - run one handler command: spawn it in its own process group,
 * feed the payload to its stdin, capture stdout and the tail of stderr,
 * and enforce the timeout. One poll loop does all three, so a child that
 * never reads its stdin (or writes a lot before reading) cannot deadlock
 * us. Runs on worker threads, several at once. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define POLL_SLICE_MS 50
/* How long to keep reading after the child exited, in case a grandchild
 * still holds its pipes open. */
#define DRAIN_GRACE_US 200000
#define IO_CHUNK 65536

/* Serialises "create pipes, mark them close-on-exec, spawn": without it a
 * child spawned by another thread could inherit our pipe ends before
 * FD_CLOEXEC is set, and our EOF would never come. */
static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct {
    int sig;
    const char *name;
} signal_names[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
    {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
    {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
    {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
    {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
    {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
    {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGSYS, "SIGSYS"},
};

/* Name of a signal from a fixed table (strsignal is neither stable nor
 * thread-safe). Static string or NULL. Thread-safe. */
const char *cli_signal_name(int sig)
{
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
        if (signal_names[i].sig == sig)
            return signal_names[i].name;
    return NULL;
}

/* The last CLI_STDERR_TAIL bytes of a stream. */
typedef struct ring {
    char data[CLI_STDERR_TAIL];
    size_t start, len;
    int wrapped; /* bytes were dropped from the front */
} ring;

static void ring_put(ring *r, const char *p, size_t n)
{
    if (n >= CLI_STDERR_TAIL) {
        memcpy(r->data, p + n - CLI_STDERR_TAIL, CLI_STDERR_TAIL);
        r->start = 0;
        r->wrapped = r->wrapped || n > CLI_STDERR_TAIL || r->len > 0;
        r->len = CLI_STDERR_TAIL;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (r->len == CLI_STDERR_TAIL) {
            r->data[r->start] = p[i];
            r->start = (r->start + 1) % CLI_STDERR_TAIL;
            r->wrapped = 1;
        } else {
            r->data[(r->start + r->len) % CLI_STDERR_TAIL] = p[i];
            r->len++;
        }
    }
}

/* Copy the ring into `out`; after a wrap, skip a cut UTF-8 sequence. */
static size_t ring_read(const ring *r, char *out)
{
    size_t skip = 0;
    if (r->wrapped)
        while (skip < r->len && skip < 3 &&
               ((unsigned char)r->data[(r->start + skip) % CLI_STDERR_TAIL] &
                0xc0) == 0x80)
            skip++;
    size_t n = 0;
    for (size_t i = skip; i < r->len; i++)
        out[n++] = r->data[(r->start + i) % CLI_STDERR_TAIL];
    out[n] = '\0';
    return n;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int make_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(fds[i], F_GETFD);
        if (fl < 0 || fcntl(fds[i], F_SETFD, fl | FD_CLOEXEC) < 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
    }
    return 0;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Spawn argv with our three pipes; returns 0 or an errno value. */
static int spawn(const cli_child_spec *spec, pid_t *pid, int *in_fd,
                 int *out_fd, int *err_fd)
{
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc;

    pthread_mutex_lock(&spawn_lock);
    if (make_pipe(pin) != 0 || make_pipe(pout) != 0 || make_pipe(perr) != 0) {
        rc = errno != 0 ? errno : EMFILE;
        for (int i = 0; i < 2; i++) {
            close_fd(&pin[i]);
            close_fd(&pout[i]);
            close_fd(&perr[i]);
        }
        pthread_mutex_unlock(&spawn_lock);
        return rc;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pin[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pout[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, perr[1], STDERR_FILENO);

    /* Own process group (so a timeout kills the whole tree and a Ctrl-C
     * on the terminal reaches only sqlbus), an empty signal mask (ours
     * blocks SIGINT/SIGTERM) and default actions for what we ignore. */
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                        POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);

    rc = posix_spawnp(pid, spec->argv[0], &fa, &attr, spec->argv,
                      spec->envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    pthread_mutex_unlock(&spawn_lock);
    if (rc != 0) {
        close(pin[1]);
        close(pout[0]);
        close(perr[0]);
        return rc;
    }
    *in_fd = pin[1];
    *out_fd = pout[0];
    *err_fd = perr[0];
    set_nonblock(*in_fd);
    set_nonblock(*out_fd);
    set_nonblock(*err_fd);
    return 0;
}

typedef struct run_state {
    const cli_child_spec *spec;
    cli_child_result *res;
    int in_fd, out_fd, err_fd;
    size_t written;
    ring err;
    char chunk[IO_CHUNK];
} run_state;

static void feed_stdin(run_state *s)
{
    const char *p = s->spec->input;
    while (s->written < s->spec->input_len) {
        size_t n = s->spec->input_len - s->written;
        if (n > IO_CHUNK)
            n = IO_CHUNK;
        ssize_t w = write(s->in_fd, p + s->written, n);
        if (w > 0) {
            s->written += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        break; /* EPIPE: the child closed its stdin; it wants no more */
    }
    close_fd(&s->in_fd);
}

static void keep_stdout(run_state *s, const char *p, size_t n)
{
    cli_child_result *res = s->res;
    size_t room = s->spec->max_stdout > res->out.len
                      ? s->spec->max_stdout - res->out.len
                      : 0;
    if (n > room) {
        res->out_truncated = 1;
        n = room;
    }
    if (n > 0 && sb__buf_append(&res->out, p, n) != SB_OK)
        res->out_truncated = 1;
}

/* Read what is there; close the descriptor at EOF. */
static void drain(run_state *s, int *fd, int is_stdout)
{
    for (;;) {
        ssize_t r = read(*fd, s->chunk, sizeof s->chunk);
        if (r > 0) {
            if (is_stdout)
                keep_stdout(s, s->chunk, (size_t)r);
            else
                ring_put(&s->err, s->chunk, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        close_fd(fd);
        return;
    }
}

static void poll_once(run_state *s, int timeout_ms)
{
    struct pollfd pfd[3];
    int n = 0, iin = -1, iout = -1, ierr = -1;
    if (s->in_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->in_fd, .events = POLLOUT};
        iin = n++;
    }
    if (s->out_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->out_fd, .events = POLLIN};
        iout = n++;
    }
    if (s->err_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->err_fd, .events = POLLIN};
        ierr = n++;
    }
    if (poll(pfd, (nfds_t)n, timeout_ms) <= 0)
        return;
    if (iin >= 0 && pfd[iin].revents != 0)
        feed_stdin(s);
    if (iout >= 0 && pfd[iout].revents != 0)
        drain(s, &s->out_fd, 1);
    if (ierr >= 0 && pfd[ierr].revents != 0)
        drain(s, &s->err_fd, 0);
}

/* Supervise the running child until it has exited and its pipes are
 * drained. Sets the outcome. */
static void supervise(run_state *s, pid_t pid)
{
    const cli_child_spec *spec = s->spec;
    cli_child_result *res = s->res;
    int64_t start = sb__mono_us();
    int64_t deadline = start + spec->timeout_ms * 1000;
    int64_t term_at = 0, exited_at = 0;
    int killing = 0; /* 0 no, 1 SIGTERM sent, 2 SIGKILL sent */
    int exited = 0, status = 0;
    /* With every pipe at EOF there is nothing to poll: the child is
     * usually a moment away from being reapable, so check again soon,
     * backing off to the full slice. */
    int nap_ms = 1;

    if (spec->input_len == 0)
        close_fd(&s->in_fd);
    for (;;) {
        int64_t now = sb__mono_us();
        if (!exited) {
            pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid || (r < 0 && errno == ECHILD)) {
                exited = 1;
                exited_at = now;
                close_fd(&s->in_fd);
            }
        }
        if (exited && ((s->out_fd < 0 && s->err_fd < 0) ||
                       now - exited_at > DRAIN_GRACE_US))
            break;
        if (!exited && killing == 0) {
            int reason = 0;
            if (now >= deadline)
                res->outcome = CLI_CHILD_TIMEOUT;
            else if (spec->abort_fn != NULL &&
                     (reason = spec->abort_fn(spec->abort_user)) != 0) {
                res->outcome = CLI_CHILD_ABORTED;
                res->abort_reason = reason;
            }
            if (res->outcome != 0) {
                kill(-pid, SIGTERM);
                killing = 1;
                term_at = now;
            }
        } else if (!exited && killing == 1 &&
                   now - term_at >= spec->kill_grace_ms * 1000) {
            kill(-pid, SIGKILL);
            killing = 2;
        }
        int wait_ms = POLL_SLICE_MS;
        if (s->in_fd < 0 && s->out_fd < 0 && s->err_fd < 0) {
            wait_ms = nap_ms;
            nap_ms = nap_ms * 2 < POLL_SLICE_MS ? nap_ms * 2 : POLL_SLICE_MS;
        }
        if (!exited && killing == 0 && (deadline - now) / 1000 < wait_ms)
            wait_ms = (int)((deadline - now) / 1000) + 1;
        poll_once(s, wait_ms);
    }
    if (killing != 0) {
        /* Leave nothing of the tree behind (a grandchild may outlive
         * the group leader's SIGTERM). */
        kill(-pid, SIGKILL);
    } else if (WIFEXITED(status)) {
        res->outcome = CLI_CHILD_EXITED;
        res->status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->outcome = CLI_CHILD_SIGNALED;
        res->status = WTERMSIG(status);
    } else {
        res->outcome = CLI_CHILD_EXITED;
        res->status = 255;
    }
    res->elapsed_ms = (sb__mono_us() - start) / 1000;
}

/* Run one handler command to completion (see cli.h). `res` is always
 * filled; free it with cli_child_result_free. Thread-safe. */
void cli_child_run(const cli_child_spec *spec, cli_child_result *res)
{
    memset(res, 0, sizeof *res);
    sb__buf_init(&res->out, spec->max_stdout + 1);

    run_state *s = sb__calloc(1, sizeof *s);
    if (s == NULL) {
        res->outcome = CLI_CHILD_SPAWN_FAILED;
        res->status = ENOMEM;
        return;
    }
    s->spec = spec;
    s->res = res;
    s->in_fd = s->out_fd = s->err_fd = -1;

    pid_t pid = 0;
    int rc = spawn(spec, &pid, &s->in_fd, &s->out_fd, &s->err_fd);
    if (rc != 0) {
        res->outcome = CLI_CHILD_SPAWN_FAILED;
        res->status = rc;
        sb__free(s);
        return;
    }
    supervise(s, pid);
    close_fd(&s->in_fd);
    close_fd(&s->out_fd);
    close_fd(&s->err_fd);
    res->err_len = ring_read(&s->err, res->err_tail);
    sb__free(s);
}

/* Release what cli_child_run allocated in `res` (not `res` itself). */
void cli_child_result_free(cli_child_result *res)
{
    sb__buf_free(&res->out);
}
