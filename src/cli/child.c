/* child.c - run one handler command: start it in its own process group
 * with the payload on its stdin, capture stdout and the tail of stderr,
 * and enforce the timeout. One poll loop reads both pipes while it waits,
 * so a child that writes a lot cannot deadlock us. Runs on worker
 * threads, several at once.
 *
 * The process tree of one run (issue 19: a handler must never outlive
 * its worker, nor start on a payload cut short):
 *
 *   worker thread --fork--> keeper --fork+exec--> command --> ...
 *
 * The keeper is a forked copy of sqlbus that never execs. It leads the
 * process group the command and everything the command starts belong
 * to, waits for the command, reports its wait status, and - when the
 * worker dies, whatever the cause, SIGKILL included - kills the whole
 * group with SIGKILL, itself last. It learns of the worker's death from
 * a "life" pipe: the worker holds the write end, the kernel closes it
 * when the worker process ends, and the keeper's read end then reports
 * POLLHUP. A pipe belongs to the process, not to a thread, so a worker
 * thread that exits (a pool shrinking) kills nothing; PR_SET_PDEATHSIG on
 * the keeper would fire when the forking *thread* exits, and SIGKILL
 * would leave the keeper no moment to kill the group. The command itself
 * gets PR_SET_PDEATHSIG(SIGKILL): its parent is the single-threaded
 * keeper, so should the keeper be killed outright the command dies too
 * (and a keeper that died between fork and prctl is caught by comparing
 * getppid() with its pid).
 *
 * The payload is written whole into a sealed memfd before the keeper is
 * forked, and that memfd is the command's stdin: the command can only
 * ever read the whole payload, and a worker that dies before the write
 * is done has started nothing.
 *
 * Between fork and exec only async-signal-safe calls are made (the
 * worker has other threads); everything the keeper needs - the resolved
 * path, argv, envp, the descriptors - is prepared before fork. */
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

/* The keeper's descriptors: the first three are the command's stdio. */
enum { FD_PAYLOAD, FD_STDOUT, FD_STDERR, FD_LIFE, FD_REPORT, FD_COUNT };

/* What the keeper (or the command, when exec fails) tells the worker
 * through the report pipe. */
enum { REPORT_EXEC_ERRNO = 1, REPORT_STATUS = 2 };
typedef struct report {
    int kind, value;
} report;

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

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- after fork: async-signal-safe calls only ---- */

/* Everything the keeper needs, prepared before fork. */
typedef struct launch {
    const char *path;
    char *const *argv;
    char *const *envp;
    int fds[FD_COUNT];
} launch;

static void send_report(int fd, int kind, int value)
{
    report r = {kind, value};
    ssize_t w = write(fd, &r, sizeof r);
    (void)w; /* if it fails the worker reads the keeper's exit status */
}

static void on_sigchld(int sig)
{
    (void)sig; /* only to interrupt ppoll */
}

/* The command: die with the keeper, take default signal actions and an
 * empty mask (the worker blocks SIGINT/SIGTERM and ignores SIGPIPE), and
 * exec. Descriptors 0-2 are its stdio; 3 and 4 close on exec. */
_Noreturn static void run_command(const launch *l, pid_t keeper)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != keeper)
        _exit(127); /* the keeper is gone already */
    static const int defaults[] = {SIGPIPE, SIGINT, SIGTERM, SIGCHLD};
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
    send_report(FD_REPORT, REPORT_EXEC_ERRNO, errno);
    _exit(127);
}

/* The keeper (see the top of the file). Never returns. */
_Noreturn static void run_keeper(const launch *l)
{
    pid_t me = getpid();
    setpgid(0, 0); /* the worker does it too: whoever is first */
    /* Every signal blocked (SIGCHLD is let in only inside ppoll): a
     * SIGTERM to the group is the command's to handle. */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);

    /* Move our descriptors to 0..4 (through copies above 4, so no
     * target overwrites a source) and close every other one: without
     * that a keeper would hold other runs' pipes open. */
    int tmp[FD_COUNT];
    for (int i = 0; i < FD_COUNT; i++) {
        tmp[i] = fcntl(l->fds[i], F_DUPFD_CLOEXEC, FD_COUNT);
        if (tmp[i] < 0) {
            send_report(l->fds[FD_REPORT], REPORT_EXEC_ERRNO, errno);
            _exit(127);
        }
    }
    for (int i = 0; i < FD_COUNT; i++) {
        if (dup2(tmp[i], i) < 0) {
            send_report(tmp[FD_REPORT], REPORT_EXEC_ERRNO, errno);
            _exit(127);
        }
    }
    if (close_range(FD_COUNT, ~0U, 0) != 0)
        for (int fd = FD_COUNT; fd < 65536; fd++)
            close(fd);
    fcntl(FD_LIFE, F_SETFD, FD_CLOEXEC);
    fcntl(FD_REPORT, F_SETFD, FD_CLOEXEC);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);

    /* vfork: the keeper is a copy of the whole worker, and the command
     * needs none of it before exec (and the keeper waits meanwhile). */
    pid_t cmd = vfork();
    if (cmd < 0) {
        send_report(FD_REPORT, REPORT_EXEC_ERRNO, errno);
        _exit(127);
    }
    if (cmd == 0)
        run_command(l, me);
    /* The command's stdio is the command's: EOF on the pipes is its. */
    close(FD_PAYLOAD);
    close(FD_STDOUT);
    close(FD_STDERR);

    sigset_t chld_only = all;
    sigdelset(&chld_only, SIGCHLD);
    int status = 0;
    for (;;) {
        pid_t r = waitpid(cmd, &status, WNOHANG);
        if (r == cmd)
            break;
        if (r < 0 && errno != EINTR) {
            status = 127 << 8; /* cannot happen: the command is ours */
            break;
        }
        struct pollfd p = {.fd = FD_LIFE, .events = POLLIN};
        /* SIGCHLD is blocked outside ppoll, so an exit between waitpid
         * and ppoll interrupts ppoll at once. */
        if (ppoll(&p, 1, NULL, &chld_only) > 0 && p.revents != 0) {
            /* The worker is gone: nobody will ack or nak this run, and
             * another worker will run the message again. Take the whole
             * group down, the keeper with it. */
            kill(-me, SIGKILL);
            _exit(128 + SIGKILL);
        }
    }
    send_report(FD_REPORT, REPORT_STATUS, status);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status)
                            : (128 + WTERMSIG(status)) & 0xff);
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
    pid_t pid;     /* the keeper: the group's leader */
    int life_fd;   /* our end of the life pipe */
    int report_fd; /* what the keeper reports */
    int out_fd, err_fd;
    int exec_errno;      /* reported: the command could not be started */
    int has_status;      /* reported: the command's wait status */
    int command_status;
    ring err;
    char chunk[IO_CHUNK];
} run_state;

/* Start the keeper; returns 0 or an errno value. */
static int start(run_state *s)
{
    const cli_child_spec *spec = s->spec;
    char path[4096];
    int rc = resolve(spec->argv[0], path, sizeof path);
    int payload = -1;
    if (rc == 0)
        rc = payload_fd(spec, &payload);
    if (rc != 0)
        return rc;
    int fds[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    for (int i = 0; i < 4 && rc == 0; i++)
        if (pipe2(fds[i], O_CLOEXEC) != 0)
            rc = errno;
    pid_t pid = -1;
    if (rc == 0) {
        launch l = {path, spec->argv, spec->envp,
                    {payload, fds[0][1], fds[1][1], fds[2][0], fds[3][1]}};
        pid = fork();
        if (pid == 0)
            run_keeper(&l);
        if (pid < 0)
            rc = errno;
    }
    close(payload);
    for (int i = 0; i < 4; i++) {
        /* The keeper's ends: out, err and report are written there, the
         * life pipe read there. */
        close_fd(i == 2 ? &fds[i][0] : &fds[i][1]);
        if (rc != 0) {
            close_fd(&fds[i][0]);
            close_fd(&fds[i][1]);
        }
    }
    if (rc != 0)
        return rc;
    setpgid(pid, pid);
    s->pid = pid;
    s->out_fd = fds[0][0];
    s->err_fd = fds[1][0];
    s->life_fd = fds[2][1];
    s->report_fd = fds[3][0];
    set_nonblock(s->out_fd);
    set_nonblock(s->err_fd);
    set_nonblock(s->report_fd);
    return 0;
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

/* Take the keeper's reports; at EOF the keeper has exited (or is a
 * moment from it), since only it holds the write end. */
static void read_reports(run_state *s)
{
    for (;;) {
        report r;
        ssize_t n = read(s->report_fd, &r, sizeof r);
        if (n == (ssize_t)sizeof r) {
            if (r.kind == REPORT_EXEC_ERRNO) {
                s->exec_errno = r.value;
            } else if (r.kind == REPORT_STATUS) {
                s->has_status = 1;
                s->command_status = r.value;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        close_fd(&s->report_fd); /* EOF (a report is never split) */
        return;
    }
}

static void poll_once(run_state *s, int timeout_ms)
{
    struct pollfd pfd[3];
    int n = 0, iout = -1, ierr = -1, irep = -1;
    if (s->out_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->out_fd, .events = POLLIN};
        iout = n++;
    }
    if (s->err_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->err_fd, .events = POLLIN};
        ierr = n++;
    }
    if (s->report_fd >= 0) {
        pfd[n] = (struct pollfd){.fd = s->report_fd, .events = POLLIN};
        irep = n++;
    }
    if (poll(pfd, (nfds_t)n, timeout_ms) <= 0)
        return;
    if (iout >= 0 && pfd[iout].revents != 0)
        drain(s, &s->out_fd, 1);
    if (ierr >= 0 && pfd[ierr].revents != 0)
        drain(s, &s->err_fd, 0);
    if (irep >= 0 && pfd[irep].revents != 0)
        read_reports(s);
}

/* The outcome of a keeper that exited with `status` by itself: what it
 * reported of the command, else its own status. */
static void decode(run_state *s, int status)
{
    cli_child_result *res = s->res;
    if (s->report_fd >= 0)
        read_reports(s);
    if (s->exec_errno != 0) {
        res->outcome = CLI_CHILD_SPAWN_FAILED;
        res->status = s->exec_errno;
        return;
    }
    if (s->has_status)
        status = s->command_status;
    if (WIFEXITED(status)) {
        res->outcome = CLI_CHILD_EXITED;
        res->status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->outcome = CLI_CHILD_SIGNALED;
        res->status = WTERMSIG(status);
    } else {
        res->outcome = CLI_CHILD_EXITED;
        res->status = 255;
    }
}

/* Supervise the running child until it has exited and its pipes are
 * drained. Sets the outcome. */
static void supervise(run_state *s)
{
    const cli_child_spec *spec = s->spec;
    cli_child_result *res = s->res;
    pid_t pid = s->pid;
    int64_t start_us = sb__mono_us();
    int64_t deadline = start_us + spec->timeout_ms * 1000;
    int64_t term_at = 0, exited_at = 0;
    int killing = 0; /* 0 no, 1 SIGTERM sent, 2 SIGKILL sent */
    int exited = 0, status = 0;

    for (;;) {
        int64_t now = sb__mono_us();
        if (!exited) {
            /* With the report pipe at EOF the keeper is exiting: wait
             * for it rather than poll for it. */
            pid_t r = waitpid(pid, &status, s->report_fd < 0 ? 0 : WNOHANG);
            if (r == pid || (r < 0 && errno == ECHILD)) {
                exited = 1;
                exited_at = now;
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
        if (!exited && killing == 0 && (deadline - now) / 1000 < wait_ms)
            wait_ms = (int)((deadline - now) / 1000) + 1;
        poll_once(s, wait_ms);
    }
    if (killing != 0) {
        /* Leave nothing of the group behind (a grandchild may outlive
         * the command's SIGTERM). */
        kill(-pid, SIGKILL);
    } else {
        decode(s, status);
    }
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
    s->life_fd = s->report_fd = s->out_fd = s->err_fd = -1;

    int rc = start(s);
    if (rc != 0) {
        res->outcome = CLI_CHILD_SPAWN_FAILED;
        res->status = rc;
        sb__free(s);
        return;
    }
    supervise(s);
    close_fd(&s->out_fd);
    close_fd(&s->err_fd);
    close_fd(&s->report_fd);
    /* Last: the keeper is reaped, so closing the life pipe kills nothing. */
    close_fd(&s->life_fd);
    res->err_len = ring_read(&s->err, res->err_tail);
    sb__free(s);
}

/* Release what cli_child_run allocated in `res` (not `res` itself). */
void cli_child_result_free(cli_child_result *res)
{
    sb__buf_free(&res->out);
}
