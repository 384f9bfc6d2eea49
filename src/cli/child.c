/* child.c - run one handler command: start it in its own process group
 * with the payload on its stdin, capture stdout and the tail of stderr,
 * and enforce the timeout. One poll loop reads both pipes while it waits,
 * so a child that writes a lot cannot deadlock us. Runs on worker
 * threads, several at once.
 *
 * A command never outlives its worker (issue 19: after a SIGKILL of the
 * worker a second worker ran the same message beside the survivor):
 *
 * - The command gets PR_SET_PDEATHSIG(SIGKILL), and compares getppid()
 *   with its parent's pid taken before the fork, in case the worker died
 *   before prctl. PDEATHSIG fires when the *thread* that forked exits,
 *   not the process: the command is forked by the handler thread that
 *   runs it, and that thread stays in cli_child_run until it has reaped
 *   the command, so it cannot exit while the command lives (the worker's
 *   pool of handler threads is fixed for its life, too).
 * - PDEATHSIG reaches the command only, not what it started. The
 *   command's whole process group is killed by the keeper: a process
 *   forked once when `sqlbus work` starts (small and single-threaded
 *   then), in a process group of its own, that holds the read end of a
 *   pipe. Every command, before it execs, writes its pgid into the pipe
 *   (and the worker writes it again, as gone, once it has reaped the
 *   command). When the worker process ends in any way, SIGKILL included,
 *   the kernel closes the write end; the keeper reads EOF and kills every
 *   group still registered with SIGKILL. A pipe belongs to the process,
 *   so no thread's exit sets it off. The registration happens before
 *   exec, so the command has started nothing yet that could escape.
 *
 * The payload is written whole into a sealed memfd before the fork, and
 * that memfd is the command's stdin: the command only ever reads the
 * whole payload, and a worker that dies before the write is done has
 * started nothing.
 *
 * The command is started with vfork (as posix_spawn does): between it and
 * exec only async-signal-safe calls, on data prepared before (the
 * resolved path, argv, envp, descriptors).
 *
 * Descriptor 3 is the write end of a third pipe, for progress (T42): the
 * same poll loop reads it, line by line, and hands the latest line to
 * the spec's progress_fn at most every CLI_PROGRESS_EVERY_MS, and the
 * last one when the command ends, so a command that prints a line per
 * item costs at most a few writes a second. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define POLL_SLICE_MS 50
/* How long to keep reading after the child exited, in case a grandchild
 * still holds its pipes open. */
#define DRAIN_GRACE_US 200000
#define IO_CHUNK 65536
/* Groups the keeper can hold at once (concurrency is at most 256). */
#define KEEPER_GROUPS 1024

/* What goes through the keeper's pipe: one write each, atomic. */
enum { KEEP_ADD = 1, KEEP_DEL = 2 };
typedef struct keeper_msg {
    int op;
    pid_t pgid;
} keeper_msg;

static const struct {
    int sig;
    const char *name;
} signal_names[] = {
    {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
    {SIGILL, "SIGILL"},       {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
    {SIGBUS, "SIGBUS"},       {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
    {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
    {SIGCHLD, "SIGCHLD"},     {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
    {SIGTSTP, "SIGTSTP"},     {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
    {SIGURG, "SIGURG"},       {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
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

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- the keeper (after fork: async-signal-safe calls only) ---- */

_Noreturn static void run_keeper(int rfd)
{
    /* Its own group: a signal to the worker's job does not reach it, and
     * it ignores every other signal; SIGKILL aside, only the worker's
     * end ends it. */
    setpgid(0, 0);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    /* Nothing of the worker's but the pipe: not its stdio (a shell
     * reading the worker's output must see EOF when the worker ends),
     * not the pipe's write end (or EOF would never come). */
    if (rfd != 0 && dup2(rfd, 0) != 0)
        _exit(1);
    if (close_range(1, ~0U, 0) != 0)
        for (int fd = 1; fd < 65536; fd++)
            close(fd);
    pid_t groups[KEEPER_GROUPS];
    size_t n = 0;
    for (;;) {
        keeper_msg m;
        ssize_t r = read(0, &m, sizeof m);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != (ssize_t)sizeof m)
            break; /* EOF: the worker is gone */
        if (m.op == KEEP_ADD && n < KEEPER_GROUPS && m.pgid > 1) {
            groups[n++] = m.pgid;
        } else if (m.op == KEEP_DEL) {
            for (size_t i = 0; i < n; i++)
                if (groups[i] == m.pgid) {
                    groups[i] = groups[--n];
                    break;
                }
        }
    }
    /* Nobody will ack or nak these runs, and other workers will run the
     * messages again: leave nothing of them running. */
    for (size_t i = 0; i < n; i++)
        kill(-groups[i], SIGKILL);
    _exit(0);
}

/* Start the keeper (see the top of the file); call it while the process
 * is small, before the worker starts. Returns the write end of its pipe
 * (close-on-exec, non-blocking) and sets *pid, or -1 with errno set. */
int cli_keeper_start(pid_t *pid)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t p = fork();
    if (p == 0)
        run_keeper(fds[0]);
    int e = errno;
    close(fds[0]);
    if (p < 0) {
        close(fds[1]);
        errno = e;
        return -1;
    }
    /* A keeper that cannot keep up (stopped) must not block handlers:
     * a registration that does not fit is dropped. */
    int fl = fcntl(fds[1], F_GETFL);
    if (fl >= 0)
        fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
    *pid = p;
    return fds[1];
}

/* Close the keeper's pipe (it then kills what is still registered,
 * normally nothing, and exits) and reap it. */
void cli_keeper_stop(int fd, pid_t pid)
{
    if (fd < 0)
        return;
    close(fd);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static void keeper_send(int fd, int op, pid_t pgid)
{
    if (fd < 0)
        return;
    keeper_msg m = {op, pgid};
    ssize_t w = write(fd, &m, sizeof m);
    (void)w; /* a dead or stopped keeper: PDEATHSIG still holds */
}

/* ---- the command (after vfork: async-signal-safe calls only) ---- */

/* Everything the command needs, prepared before vfork. */
typedef struct launch {
    const char *path;
    char *const *argv;
    char *const *envp;
    int stdio[4]; /* payload memfd, stdout, stderr and progress write ends */
    int keeper_fd;
    pid_t parent;
    volatile int exec_errno; /* set by the child when it cannot exec */
} launch;

_Noreturn static void run_command(launch *l)
{
    /* No signal handler may run here, on the worker's memory, until
     * exec (the mask is emptied just before). */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    setpgid(0, 0); /* the worker does it too: whoever is first */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != l->parent) {
        l->exec_errno = ESRCH; /* the worker is gone already */
        _exit(127);
    }
    keeper_send(l->keeper_fd, KEEP_ADD, getpid());
    /* To 0..3 through copies above 3, so no target overwrites a source;
     * every other descriptor closes on exec. */
    int tmp[4];
    for (int i = 0; i < 4; i++) {
        tmp[i] = fcntl(l->stdio[i], F_DUPFD_CLOEXEC, 4);
        if (tmp[i] < 0) {
            l->exec_errno = errno;
            _exit(127);
        }
    }
    for (int i = 0; i < 4; i++) {
        if (dup2(tmp[i], i) < 0) {
            l->exec_errno = errno;
            _exit(127);
        }
    }
    close_range(CLI_PROGRESS_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    /* Default actions (the worker ignores SIGPIPE) and an empty mask
     * (it blocks SIGINT/SIGTERM). */
    static const int defaults[] = {SIGPIPE, SIGINT, SIGTERM};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        sigaction(defaults[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(l->path, l->argv, l->envp);
    l->exec_errno = errno;
    _exit(127);
}

/* vfork in a function of its own: nothing of the caller's frame can be
 * clobbered. The child has exec'd (or exited) when this returns. */
static pid_t spawn_command(launch *l)
{
    pid_t pid = vfork();
    if (pid == 0)
        run_command(l);
    return pid;
}

/* ---- the worker's side ---- */

/* The path execve gets for `cmd`, searched in PATH as execvp would (but
 * before fork: execvp is not async-signal-safe). 0 or an errno value. */
static int resolve(const char *cmd, char *out, size_t cap)
{
    if (cmd[0] == '\0')
        return ENOENT;
    if (strchr(cmd, '/') != NULL) {
        int w = snprintf(out, cap, "%s", cmd);
        return w > 0 && (size_t)w < cap ? 0 : ENAMETOOLONG;
    }
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0')
        path = "/usr/bin:/bin";
    int found = ENOENT;
    for (;;) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        /* An empty entry is the current directory. */
        int w = n == 0 ? snprintf(out, cap, "./%s", cmd)
                       : snprintf(out, cap, "%.*s/%s", (int)n, path, cmd);
        struct stat st;
        if (w > 0 && (size_t)w < cap && stat(out, &st) == 0 &&
            S_ISREG(st.st_mode)) {
            if (access(out, X_OK) == 0)
                return 0;
            found = EACCES;
        }
        if (colon == NULL)
            break;
        path = colon + 1;
    }
    return found;
}

/* The payload in a sealed memfd, offset 0: the command's stdin. */
static int payload_fd(const cli_child_spec *spec, int *out)
{
    int fd = memfd_create("sqlbus-payload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return errno;
    const char *p = spec->input;
    size_t done = 0;
    while (done < spec->input_len) {
        ssize_t w = write(fd, p + done, spec->input_len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            return e;
        }
        done += (size_t)w;
    }
    /* Read-only from here on, for the command too (best effort). */
    fcntl(fd, F_ADD_SEALS,
          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    if (lseek(fd, 0, SEEK_SET) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    *out = fd;
    return 0;
}

typedef struct run_state {
    const cli_child_spec *spec;
    cli_child_result *res;
    int out_fd, err_fd, prog_fd;
    ring err;
    char chunk[IO_CHUNK];
    /* Progress (T42): the line being read, and the latest whole line not
     * yet handed to progress_fn. */
    char line[SB_MAX_PROGRESS], latest[SB_MAX_PROGRESS];
    size_t line_len, latest_len;
    int has_latest;
    int64_t prog_sent_us;
} run_state;

/* Start the command; returns its pid, or -1 with *rc an errno value. */
static pid_t start(run_state *s, int *rc)
{
    const cli_child_spec *spec = s->spec;
    char path[4096];
    int payload = -1;
    *rc = resolve(spec->argv[0], path, sizeof path);
    if (*rc == 0)
        *rc = payload_fd(spec, &payload);
    if (*rc != 0)
        return -1;
    int out[2] = {-1, -1}, err[2] = {-1, -1}, prog[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(prog, O_CLOEXEC) != 0) {
        *rc = errno;
        close(payload);
        close_fd(&out[0]);
        close_fd(&out[1]);
        close_fd(&err[0]);
        close_fd(&err[1]);
        return -1;
    }
    launch l = {path,
                spec->argv,
                spec->envp,
                {payload, out[1], err[1], prog[1]},
                spec->keeper_fd,
                getpid(),
                0};
    pid_t pid = spawn_command(&l);
    if (pid < 0)
        *rc = errno;
    else if (l.exec_errno != 0)
        *rc = l.exec_errno;
    close(payload);
    close(out[1]);
    close(err[1]);
    close(prog[1]);
    if (pid > 0 && *rc != 0) {
        /* It exited without exec'ing: reap it. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        keeper_send(spec->keeper_fd, KEEP_DEL, pid);
    }
    if (*rc != 0) {
        close(out[0]);
        close(err[0]);
        close(prog[0]);
        return -1;
    }
    setpgid(pid, pid);
    s->out_fd = out[0];
    s->err_fd = err[0];
    s->prog_fd = prog[0];
    set_nonblock(s->out_fd);
    set_nonblock(s->err_fd);
    set_nonblock(s->prog_fd);
    return pid;
}

/* Hand the latest progress line over when it is time (`force`: the
 * command has ended). */
static void flush_progress(run_state *s, int force)
{
    int64_t now = sb__mono_us();
    if (!s->has_latest ||
        (!force && now - s->prog_sent_us < CLI_PROGRESS_EVERY_MS * 1000))
        return;
    s->has_latest = 0;
    s->prog_sent_us = now;
    if (s->spec->progress_fn != NULL)
        s->spec->progress_fn(s->spec->progress_user, s->latest, s->latest_len);
}

/* A whole progress line (or the unterminated rest at EOF) is the latest,
 * unless it is not text (UTF-8 without NUL): that one is skipped. */
static void end_line(run_state *s)
{
    size_t n = s->line_len;
    s->line_len = 0;
    if (n > 0 && s->line[n - 1] == '\r')
        n--;
    n = sb__utf8_cut(s->line, n); /* a line cut at the cap stays whole */
    if (!sb__utf8_valid(s->line, n) || memchr(s->line, 0, n) != NULL)
        return;
    memcpy(s->latest, s->line, n);
    s->latest_len = n;
    s->has_latest = 1;
}

static void take_progress(run_state *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n')
            end_line(s);
        else if (s->line_len < sizeof s->line)
            s->line[s->line_len++] = p[i];
    }
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

enum { FD_STDOUT, FD_STDERR, FD_PROGRESS };

/* Read what is there; close the descriptor at EOF. */
static void drain(run_state *s, int *fd, int which)
{
    for (;;) {
        ssize_t r = read(*fd, s->chunk, sizeof s->chunk);
        if (r > 0) {
            if (which == FD_STDOUT)
                keep_stdout(s, s->chunk, (size_t)r);
            else if (which == FD_STDERR)
                ring_put(&s->err, s->chunk, (size_t)r);
            else
                take_progress(s, s->chunk, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        if (which == FD_PROGRESS && s->line_len > 0)
            end_line(s);
        close_fd(fd);
        return;
    }
}

/* Take the keeper's reports; at EOF the keeper has exited (or is a
 * moment from it), since only it holds the write end. */

static void poll_once(run_state *s, int timeout_ms)
{
    struct pollfd pfd[3];
    int *fds[3] = {&s->out_fd, &s->err_fd, &s->prog_fd};
    int at[3] = {-1, -1, -1}, n = 0;
    for (int i = 0; i < 3; i++)
        if (*fds[i] >= 0) {
            pfd[n] = (struct pollfd){.fd = *fds[i], .events = POLLIN};
            at[i] = n++;
        }
    if (s->has_latest && timeout_ms > CLI_PROGRESS_EVERY_MS)
        timeout_ms = CLI_PROGRESS_EVERY_MS;
    if (poll(pfd, (nfds_t)n, timeout_ms) > 0)
        for (int i = 0; i < 3; i++)
            if (at[i] >= 0 && pfd[at[i]].revents != 0)
                drain(s, fds[i], i);
    flush_progress(s, 0);
}

/* Supervise the running child until it has exited and its pipes are
 * drained. Sets the outcome. */
static void supervise(run_state *s, pid_t pid)
{
    const cli_child_spec *spec = s->spec;
    cli_child_result *res = s->res;
    int64_t start_us = sb__mono_us();
    int64_t deadline = start_us + spec->timeout_ms * 1000;
    int64_t term_at = 0, exited_at = 0;
    int killing = 0; /* 0 no, 1 SIGTERM sent, 2 SIGKILL sent */
    int exited = 0, status = 0;
    /* With both pipes at EOF there is nothing to poll: the child is
     * usually a moment away from being reapable, so check again soon,
     * backing off to the full slice. */
    int nap_ms = 1;

    for (;;) {
        int64_t now = sb__mono_us();
        if (!exited) {
            pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid || (r < 0 && errno == ECHILD)) {
                exited = 1;
                exited_at = now;
            }
        }
        if (exited && ((s->out_fd < 0 && s->err_fd < 0 && s->prog_fd < 0) ||
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
        if (s->out_fd < 0 && s->err_fd < 0 && s->prog_fd < 0) {
            wait_ms = nap_ms;
            nap_ms = nap_ms * 2 < POLL_SLICE_MS ? nap_ms * 2 : POLL_SLICE_MS;
        }
        if (!exited && killing == 0 && (deadline - now) / 1000 < wait_ms)
            wait_ms = (int)((deadline - now) / 1000) + 1;
        poll_once(s, wait_ms);
    }
    if (killing != 0) {
        /* Leave nothing of the group behind (a grandchild may outlive
         * the command's SIGTERM). */
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
    /* Reaped: the keeper need not kill its group should we die now.
     * (What the command left running in it stays, as after any normal
     * exit.) */
    keeper_send(spec->keeper_fd, KEEP_DEL, pid);
    res->elapsed_ms = (sb__mono_us() - start_us) / 1000;
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
    s->out_fd = s->err_fd = s->prog_fd = -1;

    int rc = 0;
    pid_t pid = start(s, &rc);
    if (pid < 0) {
        res->outcome = CLI_CHILD_SPAWN_FAILED;
        res->status = rc;
        sb__free(s);
        return;
    }
    supervise(s, pid);
    flush_progress(s, 1);
    close_fd(&s->out_fd);
    close_fd(&s->err_fd);
    close_fd(&s->prog_fd);
    res->err_len = ring_read(&s->err, res->err_tail);
    sb__free(s);
}

/* Release what cli_child_run allocated in `res` (not `res` itself). */
void cli_child_result_free(cli_child_result *res)
{
    sb__buf_free(&res->out);
}
