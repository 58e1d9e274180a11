/* cdc_seed_runner.c -- the trusted runner of one seed stage inside one sandbox.
 *
 * The grader starts one bubblewrap sandbox per stage (or per chunk of a stage) instead of one per
 * seed, and this program inside it runs the seeds one after another, each in a fresh process:
 *
 *   job (fd $CDC_STAGE_FD, read whole, then closed):
 *     limits <cpu_s> <as_bytes> <fsize_bytes> <wall_ms> <out_bytes>
 *     <nonce>\t<tb_top>\t<arg0>\x1f<arg1>\x1f...          one line per seed
 *   results (fd $CDC_RESULT_FD), one record per seed run, in order:
 *     R <index> <status> <cpu_us> <maxrss_kb> <timed_out> <flooded> <out_len> <err_len> <forked>\n<out><err>
 *     status: the exit code, or -<signal>; forked: 1 when the seed was forked from the zygote.
 *   optional second job line "zygote <n>\t<arg0>\x1f<arg1>...": start that simulator once and
 *     fork from it every seed whose argv begins with its first n arguments (below, "zygote").
 *
 * Per seed: a fresh process in its own process group with its own RLIMIT_CPU / AS / FSIZE / CORE
 * and wall-clock deadline; stdout and stderr through pipes capped at out_bytes (a flood kills
 * it); its nonce on a pipe of its own (CDC_VERDICT_FD, read by the VPI module or the Verilator
 * main before any Verilog runs). After each seed every process left in the sandbox's PID
 * namespace is killed (kill(-1)), orphans are reaped (this program is their subreaper) and /tmp
 * (a size-bounded tmpfs) is emptied completely, whatever the modes, depth or path lengths a seed
 * left; if it cannot be, the runner stops (exit 2) and the grader runs the chunk seed by seed. The build folder is read-only. After
 * a seed times out no further seed is started (as in one-process-per-seed grading).
 *
 * Zygote mode (see the block comment above zyg_start): seeds forked from one simulator process
 * instead of exec'd; after a normal forked seed nothing is killed (the zygote reports anything a
 * seed left, and then everything is killed and the rest run as fresh processes). The filter then
 * also protects the zygote from its seeds.
 *
 * This program holds every nonce of the stage; it is non-dumpable and the sandbox has no /proc
 * and no capabilities, so a seed cannot read them.
 *
 * What one seed could otherwise use against the others or against this runner (the sandbox is
 * shared), closed for each seed by a seccomp filter installed between fork and exec (inherited
 * by everything the seed starts): no signal to this runner, to bubblewrap's init or to every
 * process at once (kill(-1)); no prlimit, priority or scheduling change of the runner; no ptrace, process_vm_readv/writev or pidfd_getfd; no SysV IPC
 * object, POSIX message queue or key (they outlive the process in the sandbox's namespaces).
 * Descriptors other than 0-2 and the seed's own nonce pipe are closed (close_range); the only
 * writable place is /tmp (the grader remounts / and /dev read-only), emptied after each seed.
 * If the filter cannot be installed here the runner exits 2 before any seed (the grader then
 * runs one sandbox per seed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char* read_all(int fd, size_t* len) {
    size_t cap = 1 << 16, n = 0;
    char* buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3);
        p += w;
        n -= (size_t)w;
    }
}

/* /tmp's own structure before any seed ran: the directories bubblewrap created in the tmpfs as
 * mount points for the build folder and read-only paths that live under the host's /tmp (kept,
 * and emptied inside), and the tmpfs's device (an entry on another device is a mount point: never
 * touched). */
#define MAX_KEPT 256
static ino_t g_kept[MAX_KEPT];
static int g_nkept = 0;
static dev_t g_tmp_dev;

static int is_kept(const struct stat* st) {
    for (int i = 0; i < g_nkept; i++)
        if (g_kept[i] == st->st_ino) return 1;
    return 0;
}

static void record_structure(int dfd, int depth) {
    if (depth > 64) return;
    int scan = dup(dfd);
    DIR* d = scan >= 0 ? fdopendir(scan) : NULL;
    if (!d) { if (scan >= 0) close(scan); return; }
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (st.st_dev != g_tmp_dev || g_nkept >= MAX_KEPT) continue;
        g_kept[g_nkept++] = st.st_ino;
        int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) { record_structure(sub, depth + 1); close(sub); }
    }
    closedir(d);
}

/* Empty the directory open at ``dfd`` completely, whatever a seed did to it: modes 000 or 500
 * (each directory is made 0700 first; the runner owns what a seed created, both being the
 * sandbox's uid), any depth and any path length (no path is ever built: a subdirectory's entries
 * are moved up into ``dfd`` with renameat, so at most two directories are open at once and the
 * work is linear in the number of entries). Kept directories (``record_structure``) stay and are
 * emptied in turn; mount points are left alone. Returns 0 when nothing else is left. */
static int empty_at(int dfd, int depth) {
    static unsigned long moved = 0;
    if (depth > 64) return -1;
    for (int pass = 0; pass < 1000000; pass++) {
        int left = 0, progress = 0, failed = 0;
        int scan = dup(dfd);
        if (scan < 0) return -1;
        DIR* d = fdopendir(scan);
        if (!d) { close(scan); return -1; }
        rewinddir(d);
        struct dirent* e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            struct stat st;
            if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            if (st.st_dev != g_tmp_dev) continue;  /* a mount point */
            if (S_ISDIR(st.st_mode) && is_kept(&st)) {
                if (pass > 0) continue;
                fchmodat(dfd, e->d_name, 0700, 0);
                int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0 || empty_at(sub, depth + 1) != 0) failed = 1;
                if (sub >= 0) close(sub);
                continue;
            }
            left++;
            if (!S_ISDIR(st.st_mode)) {
                if (unlinkat(dfd, e->d_name, 0) == 0) { progress++; left--; }
                continue;
            }
            fchmodat(dfd, e->d_name, 0700, 0);
            if (unlinkat(dfd, e->d_name, AT_REMOVEDIR) == 0) { progress++; left--; continue; }
            int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) continue;
            DIR* sd = fdopendir(sub);
            if (!sd) { close(sub); continue; }
            struct dirent* f;
            while ((f = readdir(sd)) != NULL) {
                if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, "..")) continue;
                struct stat fs;
                if (fstatat(sub, f->d_name, &fs, AT_SYMLINK_NOFOLLOW) != 0) continue;
                if (!S_ISDIR(fs.st_mode)) { if (unlinkat(sub, f->d_name, 0) == 0) progress++; continue; }
                for (int tries = 0; tries < 64; tries++) {  /* up one level, under a fresh name */
                    char name[64];
                    snprintf(name, sizeof name, ".cdc-up-%lu", moved++);
                    if (syscall(SYS_renameat2, sub, f->d_name, dfd, name, 1u /* RENAME_NOREPLACE */) == 0) {
                        progress++;
                        break;
                    }
                    if (errno != EEXIST) break;
                }
            }
            closedir(sd);
        }
        closedir(d);
        if (failed) return -1;
        if (left == 0) return 0;
        if (progress == 0) return -1;
    }
    return -1;
}

static int open_tmp(void) { return open("/tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }

struct buf { char* data; size_t len; };

/* Read what is there; returns 0 at end of file. Keeps at most cap bytes; more sets *flooded. */
static ssize_t collect(int fd, struct buf* b, size_t cap, int* flooded) {
    char tmp[65536];
    ssize_t r = read(fd, tmp, sizeof tmp);
    if (r < 0) return errno == EINTR ? 1 : -1;
    size_t room = cap > b->len ? cap - b->len : 0;
    size_t take = (size_t)r < room ? (size_t)r : room;
    memcpy(b->data + b->len, tmp, take);
    b->len += take;
    if ((size_t)r > room) *flooded = 1;
    return r;
}

/* ---- the per-seed seccomp filter ---- */
#define MAXF 256
struct filt { struct sock_filter f[MAXF]; int n; };
static void emit(struct filt* p, struct sock_filter x) { if (p->n < MAXF) p->f[p->n++] = x; }
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))
#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* syscall nr: deny outright */
static void deny_nr(struct filt* p, int nr) {
    emit(p, (struct sock_filter)LD_NR);
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1));
    emit(p, (struct sock_filter)DENY);
}

/* syscall nr: deny when the low 32 bits of args[0] equal one of vals (a pid_t) */
static void deny_arg0(struct filt* p, int nr, const unsigned* vals, int nv) {
    emit(p, (struct sock_filter)LD_NR);
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, (unsigned char)(1 + 2 * nv + 1)));
    emit(p, (struct sock_filter)LD_ARG0);  /* little-endian: the low word of args[0] */
    for (int i = 0; i < nv; i++) {
        emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, vals[i], 0, 1));
        emit(p, (struct sock_filter)DENY);
    }
    emit(p, (struct sock_filter)ALLOW);  /* this syscall, any other target */
}

static int install_filter(pid_t runner, pid_t runner_pgrp, pid_t server) {
    struct filt p = {.n = 0};
    emit(&p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
#if defined(__x86_64__)
    emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
#elif defined(__aarch64__)
    emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_AARCH64, 1, 0));
#else
#error "cdc_seed_runner: add this architecture's AUDIT_ARCH"
#endif
    emit(&p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#if defined(__x86_64__)
    emit(&p, (struct sock_filter)LD_NR);  /* x32 calls: refused */
    emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
    emit(&p, (struct sock_filter)DENY);
#endif
    int outright[] = {SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_shmget, SYS_msgget,
                      SYS_semget, SYS_mq_open, SYS_add_key, SYS_request_key, SYS_keyctl,
#ifdef SYS_pidfd_getfd
                      SYS_pidfd_getfd,
#endif
    };
    for (size_t i = 0; i < sizeof outright / sizeof outright[0]; i++) deny_nr(&p, outright[i]);
    /* server: the zygote (a process of its own group) when seeds are forked from one, else 0 */
    unsigned kill_targets[] = {(unsigned)runner, (unsigned)-1, 1u, (unsigned)-runner_pgrp,
                               (unsigned)server, (unsigned)-server};
    int nk = server > 0 ? 6 : 4, np = server > 0 ? 3 : 2;
    deny_arg0(&p, SYS_kill, kill_targets, nk);
    unsigned one_pid[] = {(unsigned)runner, 1u, (unsigned)server};
    /* no resource limit, priority or scheduling change for the runner or bubblewrap's init (a
     * seed could otherwise shrink the runner's limits or starve it); priorities by group or
     * user, and I/O priorities, reach them too: refused outright */
    deny_arg0(&p, SYS_prlimit64, one_pid, np);
    deny_nr(&p, SYS_setpriority);
    deny_nr(&p, SYS_ioprio_set);
    deny_arg0(&p, SYS_sched_setaffinity, one_pid, np);
    deny_arg0(&p, SYS_sched_setscheduler, one_pid, np);
    deny_arg0(&p, SYS_sched_setparam, one_pid, np);
#ifdef SYS_sched_setattr
    deny_arg0(&p, SYS_sched_setattr, one_pid, np);
#endif
    deny_arg0(&p, SYS_tkill, one_pid, np);
    deny_arg0(&p, SYS_tgkill, one_pid, np);
    deny_arg0(&p, SYS_rt_sigqueueinfo, kill_targets, nk);
    deny_arg0(&p, SYS_rt_tgsigqueueinfo, one_pid, np);
#ifdef SYS_pidfd_open
    deny_arg0(&p, SYS_pidfd_open, one_pid, np);
#endif
    emit(&p, (struct sock_filter)ALLOW);
    if (p.n >= MAXF) return -1;
    struct sock_fprog prog = {(unsigned short)p.n, p.f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return -1;
    /* SPEC_ALLOW: the kernel does not force its speculative-store-bypass mitigation on the seed
     * because of the filter (it guards a process's own data from itself; a seed in its own
     * sandbox never had it either). Kernels without the flag: plain. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog) == 0) return 0;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* Can the filter be installed here? (a child tries; the runner refuses to run seeds if not) */
static int filter_works(pid_t self, pid_t pgrp) {
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) _exit(install_filter(self, pgrp, 0) == 0 && kill(self, 0) != 0 && errno == EPERM ? 0 : 1);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Close every descriptor from lo up (close_range, else one by one up to the limit). */
static void close_from(int lo) {
    if (syscall(SYS_close_range, (unsigned)lo, ~0u, 0u) != 0) {
        struct rlimit rl;
        int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1048576 ? (int)rl.rlim_cur : 1048576;
        for (int fd = lo; fd < top; fd++) close(fd);
    }
}

static long g_cpu_s, g_wall_ms;
static unsigned long long g_as, g_fsize, g_out_cap;
static pid_t g_self, g_pgrp;

/* In a freshly forked child: its own process group, the seed's limits, stdout/stderr onto the
 * given pipes, stdin /dev/null, the descriptors in keep[] as 3, 4, ... (named in env_name as
 * "3" or "3,4"), every other descriptor closed, the seccomp filter, exec. server: protect this
 * process itself from what it forks (a zygote), else 0. Never returns. */
static void exec_child(char** argv, int out_fd, int err_fd, const int* keep, int nkeep, const char* env_name,
                       int server) {
    setpgid(0, 0);
    struct rlimit rl;
    rl.rlim_cur = (rlim_t)g_cpu_s; rl.rlim_max = (rlim_t)g_cpu_s + 1;
    setrlimit(RLIMIT_CPU, &rl);
    rl.rlim_cur = rl.rlim_max = (rlim_t)g_as;
    setrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = rl.rlim_max = (rlim_t)g_fsize;
    setrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = rl.rlim_max = 0;
    setrlimit(RLIMIT_CORE, &rl);
    setrlimit(RLIMIT_MSGQUEUE, &rl);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    int hi[4];
    for (int i = 0; i < nkeep && i < 4; i++) hi[i] = fcntl(keep[i], F_DUPFD, 64);
    for (int i = 0; i < nkeep && i < 4; i++) dup2(hi[i], 3 + i);
    close_from(3 + nkeep);
    setenv(env_name, nkeep == 1 ? "3" : "3,4", 1);
    signal(SIGPIPE, SIG_DFL);
    /* The two ways this child can fail before the simulator runs say so first on its stderr
     * (the seed's own pipe, empty until now), so the grader reports a tool error, not a seed
     * that failed: a simulator that could not be started judged nothing. */
    if (install_filter(g_self, g_pgrp, server ? getpid() : 0) != 0) {
        dprintf(2, "CDC-RUNNER: the seccomp filter could not be installed\n");
        _exit(126);
    }
    execvp(argv[0], argv);
    dprintf(2, "CDC-RUNNER: cannot start the simulator: %s\n", strerror(errno));
    _exit(127);
}

struct seed_res {
    int code, timed_out, flooded;
    long long cpu_us;
    long maxrss;
    struct buf out, err;
};

/* Kill every process this program can signal in the sandbox (atomic: no fork escapes it) and
 * wait until all are gone (every one is our descendant: we are the subreaper). */
static void kill_all(void) {
    kill(-1, SIGKILL);
    for (;;) {
        if (waitpid(-1, NULL, 0) > 0) continue;
        if (errno == EINTR) continue;
        break;  /* ECHILD */
    }
}

static long long children_cpu_us(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0) return 0;
    return (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
           (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
}

/* The CPU limit ended the seed: a time-out, as in one sandbox per seed. */
static void note_status(struct seed_res* r, int status) {
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU ||
                                (WTERMSIG(status) == SIGKILL && r->cpu_us >= (long long)g_cpu_s * 1000000)))
        r->timed_out = 1;
}

static void drain(int fd, int open_, struct buf* b, int* flooded) {
    fcntl(fd, F_SETFL, O_NONBLOCK);
    while (open_ && !*flooded) {
        ssize_t got = collect(fd, b, g_out_cap, flooded);
        if (got <= 0) break;
    }
}

/* One seed in a fresh process (exec). Everything it left is killed and reaped afterwards. */
static void run_exec(char** argv, const char* nonce, const char* tb_top, struct seed_res* r) {
    int np[2], op[2], ep[2];
    if (pipe(np) || pipe(op) || pipe(ep)) exit(2);
    char payload[600];
    int plen = snprintf(payload, sizeof payload, "%s\n%s\n", nonce, tb_top);
    write_all(np[1], payload, (size_t)plen);
    close(np[1]);
    pid_t pid = fork();
    if (pid < 0) exit(2);
    if (pid == 0) exec_child(argv, op[1], ep[1], &np[0], 1, "CDC_VERDICT_FD", 0);
    close(np[0]);
    close(op[1]);
    close(ep[1]);
    int open_out = 1, open_err = 1, exited = 0, status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    long long deadline = now_ms() + g_wall_ms;
    while (!exited) {
        struct pollfd pf[2] = {{open_out ? op[0] : -1, POLLIN, 0}, {open_err ? ep[0] : -1, POLLIN, 0}};
        long long left = deadline - now_ms();
        if (left <= 0) { r->timed_out = 1; break; }
        int n = poll(pf, 2, (int)(left > 20 ? 20 : left));
        if (n < 0 && errno != EINTR) break;
        if (open_out && pf[0].revents && collect(op[0], &r->out, g_out_cap, &r->flooded) == 0) open_out = 0;
        if (open_err && pf[1].revents && collect(ep[0], &r->err, g_out_cap, &r->flooded) == 0) open_err = 0;
        if (r->flooded) break;
        if (wait4(pid, &status, WNOHANG, &ru) == pid) exited = 1;
    }
    if (exited) {  /* drain what the seed wrote; its leftovers must not hold us */
        drain(op[0], open_out, &r->out, &r->flooded);
        drain(ep[0], open_err, &r->err, &r->flooded);
    } else {
        kill(-pid, SIGKILL);
        while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
    }
    close(op[0]);
    close(ep[0]);
    kill_all();  /* whatever the seed left behind, in this PID namespace */
    r->cpu_us = (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
    r->maxrss = ru.ru_maxrss;
    note_status(r, status);
}

/* ---- several seeds forked from one simulator process at time 0 (a zygote) ----
 * The zygote is the simulator started with the stage's common argv (plusargs replaced by
 * placeholders) and CDC_ZYGOTE_FD=<requests>,<answers>; its trusted verdict module (Icarus:
 * trusted/icarus/cdc_verdict.c) stops at the start of simulation, before any Verilog ran, and
 * forks one child per request "<nonce>\t<tb_top>\t<plusargs>", answering "P <pid>" and then
 * "X <status> <cpu_us> <maxrss_kb> <leftover>". Each seed is thus a fresh copy of the same time-0
 * process. It runs under the seed's limits (set on the zygote, inherited; RLIMIT_CPU counts from
 * the fork) and this program's filter, which also forbids any signal, prlimit or scheduling change
 * aimed at the zygote. The zygote learns a nonce only when it forks that seed. Anything unusual --
 * the zygote not ready, gone, a time-out, a flood, a process left behind, a seed killed by SIGKILL
 * other than for its CPU limit (the chunk's memory limit, which in this mode also holds the
 * zygote) -- ends zygote mode: the whole sandbox is killed, and the seed (if it has no complete
 * result, or was killed so) and every later one run as fresh processes, as without a zygote, the
 * seed on an emptied /tmp. */
struct zygote {
    int alive, req, resp, out, err, open_out, open_err;
    struct buf pre_out, pre_err;  /* what the simulator printed while loading: every seed's too */
    char line[256];
    size_t line_len;
    long long base_us, reported_us;
};

static int try_write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The next answer line of the zygote: 1 with z->line set, 0 not yet, -1 gone. */
static int zyg_answer(struct zygote* z) {
    for (;;) {
        char c;
        ssize_t n = read(z->resp, &c, 1);
        if (n < 0 && (errno == EINTR)) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        if (n <= 0) return -1;
        if (c == '\n') { z->line[z->line_len] = '\0'; z->line_len = 0; return 1; }
        if (z->line_len + 1 >= sizeof z->line) return -1;
        z->line[z->line_len++] = c;
    }
}

static void zyg_end(struct zygote* z) {
    if (!z->alive) return;
    kill_all();
    close(z->req);
    close(z->resp);
    close(z->out);
    close(z->err);
    z->alive = 0;
}

/* Wait (until the deadline) for an answer line, collecting stdout/stderr into out/err.
 * 1: a line; 0: deadline; -1: the zygote is gone; 2: flood. */
static int zyg_wait(struct zygote* z, long long deadline, struct buf* out, struct buf* err, int* flooded) {
    for (;;) {
        int got = zyg_answer(z);
        if (got != 0) return got;
        long long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd pf[3] = {{z->open_out ? z->out : -1, POLLIN, 0}, {z->open_err ? z->err : -1, POLLIN, 0},
                               {z->resp, POLLIN, 0}};
        int n = poll(pf, 3, (int)(left > 1000 ? 1000 : left));
        if (n < 0 && errno != EINTR) return -1;
        if (z->open_out && pf[0].revents && collect(z->out, out, g_out_cap, flooded) == 0) z->open_out = 0;
        if (z->open_err && pf[1].revents && collect(z->err, err, g_out_cap, flooded) == 0) z->open_err = 0;
        if (*flooded) return 2;
    }
}

static void zyg_start(struct zygote* z, char** argv) {
    memset(z, 0, sizeof *z);
    int rq[2], rs[2], op[2], ep[2];
    if (pipe(rq) || pipe(rs) || pipe(op) || pipe(ep)) return;
    z->base_us = children_cpu_us();
    pid_t pid = fork();
    if (pid < 0) return;
    if (pid == 0) {
        int keep[2] = {rq[0], rs[1]};
        exec_child(argv, op[1], ep[1], keep, 2, "CDC_ZYGOTE_FD", 1);
    }
    close(rq[0]);
    close(rs[1]);
    close(op[1]);
    close(ep[1]);
    z->req = rq[1];
    z->resp = rs[0];
    z->out = op[0];
    z->err = ep[0];
    z->open_out = z->open_err = 1;
    fcntl(z->resp, F_SETFL, O_NONBLOCK);
    fcntl(z->out, F_SETFL, O_NONBLOCK);
    fcntl(z->err, F_SETFL, O_NONBLOCK);
    z->pre_out.data = malloc(g_out_cap + 1);
    z->pre_err.data = malloc(g_out_cap + 1);
    z->alive = 1;
    int flooded = 0;
    int got = zyg_wait(z, now_ms() + g_wall_ms, &z->pre_out, &z->pre_err, &flooded);
    if (got != 1 || strcmp(z->line, "ready") != 0) zyg_end(z);
}

/* One seed forked from the zygote: 1 with its result in r; 0 when the zygote was lost before the
 * seed had a complete result (the caller runs the seed as a fresh process). */
static int run_zygote(struct zygote* z, const char* request, struct seed_res* r) {
    memcpy(r->out.data, z->pre_out.data, z->pre_out.len);
    r->out.len = z->pre_out.len;
    memcpy(r->err.data, z->pre_err.data, z->pre_err.len);
    r->err.len = z->pre_err.len;
    if (try_write_all(z->req, request, strlen(request)) != 0) { zyg_end(z); return 0; }
    long long deadline = now_ms() + g_wall_ms;
    for (;;) {
        int got = zyg_wait(z, deadline, &r->out, &r->err, &r->flooded);
        int code, leftover;
        long long cpu_us;
        long maxrss;
        if (got == 1 && z->line[0] == 'P') continue;
        if (got == 1 && sscanf(z->line, "X %d %lld %ld %d", &code, &cpu_us, &maxrss, &leftover) == 4) {
            /* the seed has exited: everything it wrote is in the pipes */
            drain(z->out, z->open_out, &r->out, &r->flooded);
            drain(z->err, z->open_err, &r->err, &r->flooded);
            r->cpu_us = cpu_us;
            r->maxrss = maxrss;
            z->reported_us += cpu_us;
            int status = code >= 0 ? (code & 0xff) << 8 : (-code) & 0x7f;  /* back to a wait status */
            note_status(r, status);
            if (code == -SIGKILL && !r->timed_out && !r->flooded) {
                /* Killed, but not by its CPU limit: the chunk's memory limit (the OOM killer), which
                 * here also holds the zygote's image. A fresh process has no zygote beside it, so the
                 * seed runs again as one (its result is then the one without a zygote). */
                zyg_end(z);
                return 0;
            }
            if (leftover || r->flooded) zyg_end(z);
            return 1;
        }
        if (got == 0 || got == 2) {  /* time-out or flood: the seed's own doing */
            if (got == 0) r->timed_out = 1;
            zyg_end(z);
            long long spent = children_cpu_us() - z->base_us - z->reported_us;
            r->cpu_us = spent > 0 ? spent : 0;
            r->code = -SIGKILL;
            return 1;
        }
        zyg_end(z);  /* gone, or an answer that does not parse */
        return 0;
    }
}

int main(void) {
    /* After each seed this program kills every process it can signal (kill(-1)). That is only
     * safe inside a PID namespace of its own, where it is bubblewrap's child (pid 2) or init
     * (pid 1); anywhere else it would kill the host's processes. Refuse to run there. */
    if (getpid() > 2) { fprintf(stderr, "cdc_seed_runner: not in a PID namespace of its own; refusing\n"); return 2; }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    const char* sfd = getenv("CDC_STAGE_FD");
    const char* rfd = getenv("CDC_RESULT_FD");
    if (!sfd || !rfd) { fprintf(stderr, "cdc_seed_runner: no job\n"); return 2; }
    int job_fd = atoi(sfd), res_fd = atoi(rfd);
    size_t job_len;
    char* job = read_all(job_fd, &job_len);
    close(job_fd);
    unsetenv("CDC_STAGE_FD");
    unsetenv("CDC_RESULT_FD");
    fcntl(res_fd, F_SETFD, FD_CLOEXEC);
    pid_t self = getpid(), pgrp = getpgrp();
    int tmp_fd = open_tmp();
    struct stat tmp_st;
    if (tmp_fd < 0 || fstat(tmp_fd, &tmp_st) != 0) { fprintf(stderr, "cdc_seed_runner: no /tmp\n"); return 2; }
    g_tmp_dev = tmp_st.st_dev;
    record_structure(tmp_fd, 0);
    close(tmp_fd);
    if (!filter_works(self, pgrp)) { fprintf(stderr, "cdc_seed_runner: cannot install the seccomp filter\n"); return 2; }

    char* save = NULL;
    char* line = strtok_r(job, "\n", &save);
    if (!line || sscanf(line, "limits %ld %llu %llu %ld %llu", &g_cpu_s, &g_as, &g_fsize, &g_wall_ms,
                        &g_out_cap) != 5) {
        fprintf(stderr, "cdc_seed_runner: bad job header\n");
        return 2;
    }
    g_self = self;
    g_pgrp = pgrp;
    /* optional: "zygote <n>\t<arg0>\x1f<arg1>...": seeds whose argv starts with the same first n
     * arguments are forked from this process; the rest of their argv is sent as plusargs */
    struct zygote z;
    memset(&z, 0, sizeof z);
    char* zprefix = NULL;
    size_t zprefix_len = 0;
    line = strtok_r(NULL, "\n", &save);
    int nz = 0;
    if (line && sscanf(line, "zygote %d", &nz) == 1) {
        char* zargs = strchr(line, '\t');
        char* zargv[512];
        int zc = 0;
        if (zargs && nz > 0) {
            zargs++;
            char* end = zargs;  /* the prefix: the first nz args, each followed by \x1f */
            for (int i = 0; i < nz && end; i++) {
                end = strchr(end, '\x1f');
                if (end) end++;
            }
            if (end) {
                zprefix_len = (size_t)(end - zargs);
                zprefix = malloc(zprefix_len + 1);
                memcpy(zprefix, zargs, zprefix_len);
                zprefix[zprefix_len] = '\0';
            }
            for (char* a = zargs; a && zc < 511;) {
                char* sep = strchr(a, '\x1f');
                if (sep) *sep = '\0';
                zargv[zc++] = a;
                a = sep ? sep + 1 : NULL;
            }
            zargv[zc] = NULL;
            if (zprefix) zyg_start(&z, zargv);
            int tmp_fd = open_tmp();  /* nothing the loading left in /tmp reaches a seed */
            int emptied = tmp_fd >= 0 && empty_at(tmp_fd, 0) == 0;
            if (tmp_fd >= 0) close(tmp_fd);
            if (!emptied) return 2;
        }
        line = strtok_r(NULL, "\n", &save);
    }
    int index = 0;
    for (; line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char* nonce = line;
        char* tab = strchr(nonce, '\t');
        if (!tab) return 2;
        *tab = '\0';
        char* tb_top = tab + 1;
        tab = strchr(tb_top, '\t');
        if (!tab) return 2;
        *tab = '\0';
        char* args = tab + 1;
        struct seed_res r;
        memset(&r, 0, sizeof r);
        r.out.data = malloc(g_out_cap + 1);
        r.err.data = malloc(g_out_cap + 1);
        int done = 0;
        if (z.alive && zprefix && strncmp(args, zprefix, zprefix_len) == 0) {
            size_t rl = strlen(nonce) + strlen(tb_top) + strlen(args) + 4;
            char* req = malloc(rl);
            snprintf(req, rl, "%s\t%s\t%s\n", nonce, tb_top, args + zprefix_len);
            done = run_zygote(&z, req, &r);
            memset(req, 0, rl);
            free(req);
            if (!done) {  /* lost: this seed starts again as a fresh process, on an empty /tmp */
                r.out.len = r.err.len = 0;
                r.flooded = r.timed_out = 0;
                r.code = 0;
                r.cpu_us = 0;
                r.maxrss = 0;
                int tmp_fd = open_tmp();
                int emptied = tmp_fd >= 0 && empty_at(tmp_fd, 0) == 0;
                if (tmp_fd >= 0) close(tmp_fd);
                if (!emptied) {
                    fprintf(stderr, "cdc_seed_runner: /tmp could not be emptied after seed %d's zygote was lost\n",
                            index);
                    return 2;
                }
            }
        } else if (z.alive) {
            zyg_end(&z);  /* a seed of another command: no zygote mode from here on */
        }
        if (!done) {
            char* argv[512];
            int argc = 0;
            for (char* a = args; a && argc < 511;) {
                char* sep = strchr(a, '\x1f');
                if (sep) *sep = '\0';
                argv[argc++] = a;
                a = sep ? sep + 1 : NULL;
            }
            argv[argc] = NULL;
            run_exec(argv, nonce, tb_top, &r);
        }
        memset(nonce, 0, strlen(nonce));
        int tmp_fd = open_tmp();
        int emptied = tmp_fd >= 0 && empty_at(tmp_fd, 0) == 0;
        if (tmp_fd >= 0) close(tmp_fd);
        if (!emptied) {  /* never start a seed on what an earlier one left */
            fprintf(stderr, "cdc_seed_runner: /tmp could not be emptied after seed %d\n", index);
            return 2;
        }
        char head[256];
        int hl = snprintf(head, sizeof head, "R %d %d %lld %ld %d %d %zu %zu %d\n", index, r.code, r.cpu_us,
                          r.maxrss, r.timed_out, r.flooded, r.out.len, r.err.len, done);
        write_all(res_fd, head, (size_t)hl);
        write_all(res_fd, r.out.data, r.out.len);
        write_all(res_fd, r.err.data, r.err.len);
        free(r.out.data);
        free(r.err.data);
        index++;
        if (r.timed_out) break;
    }
    zyg_end(&z);
    return 0;
}
