/* cdc_seed_runner.c -- the trusted runner of one seed stage inside one sandbox.
 *
 * The grader starts one bubblewrap sandbox per stage (or per chunk of a stage) instead of one per
 * seed, and this program inside it runs the seeds one after another, each in a fresh process:
 *
 *   job (fd $CDC_STAGE_FD, read whole, then closed):
 *     limits <cpu_s> <as_bytes> <fsize_bytes> <wall_ms> <out_bytes>
 *     <nonce>\t<tb_top>\t<arg0>\x1f<arg1>\x1f...          one line per seed
 *   results (fd $CDC_RESULT_FD), one record per seed run, in order:
 *     R <index> <status> <cpu_us> <maxrss_kb> <timed_out> <flooded> <out_len> <err_len>\n<out><err>
 *     status: the exit code, or -<signal>.
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

static int install_filter(pid_t runner, pid_t runner_pgrp) {
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
    unsigned kill_targets[] = {(unsigned)runner, (unsigned)-1, 1u, (unsigned)-runner_pgrp};
    deny_arg0(&p, SYS_kill, kill_targets, 4);
    unsigned one_pid[] = {(unsigned)runner, 1u};
    /* no resource limit, priority or scheduling change for the runner or bubblewrap's init (a
     * seed could otherwise shrink the runner's limits or starve it); priorities by group or
     * user, and I/O priorities, reach them too: refused outright */
    deny_arg0(&p, SYS_prlimit64, one_pid, 2);
    deny_nr(&p, SYS_setpriority);
    deny_nr(&p, SYS_ioprio_set);
    deny_arg0(&p, SYS_sched_setaffinity, one_pid, 2);
    deny_arg0(&p, SYS_sched_setscheduler, one_pid, 2);
    deny_arg0(&p, SYS_sched_setparam, one_pid, 2);
#ifdef SYS_sched_setattr
    deny_arg0(&p, SYS_sched_setattr, one_pid, 2);
#endif
    deny_arg0(&p, SYS_tkill, one_pid, 2);
    deny_arg0(&p, SYS_tgkill, one_pid, 2);
    deny_arg0(&p, SYS_rt_sigqueueinfo, kill_targets, 4);
    deny_arg0(&p, SYS_rt_tgsigqueueinfo, one_pid, 2);
#ifdef SYS_pidfd_open
    deny_arg0(&p, SYS_pidfd_open, one_pid, 2);
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
    if (pid == 0) _exit(install_filter(self, pgrp) == 0 && kill(self, 0) != 0 && errno == EPERM ? 0 : 1);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void close_others(int keep) {
    int low = keep > 3 ? (int)syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) : 0;
    if (low != 0 || syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) != 0) {
        struct rlimit rl;  /* no close_range: every descriptor up to the limit */
        int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1048576 ? (int)rl.rlim_cur : 1048576;
        for (int fd = 3; fd < top; fd++)
            if (fd != keep) close(fd);
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

    long cpu_s = 0, wall_ms = 0;
    unsigned long long as_bytes = 0, fsize = 0, out_cap = 0;
    char* save = NULL;
    char* line = strtok_r(job, "\n", &save);
    if (!line || sscanf(line, "limits %ld %llu %llu %ld %llu", &cpu_s, &as_bytes, &fsize, &wall_ms, &out_cap) != 5) {
        fprintf(stderr, "cdc_seed_runner: bad job header\n");
        return 2;
    }
    int index = 0;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        char* nonce = line;
        char* tab = strchr(nonce, '\t');
        if (!tab) return 2;
        *tab = '\0';
        char* tb_top = tab + 1;
        tab = strchr(tb_top, '\t');
        if (!tab) return 2;
        *tab = '\0';
        char* args = tab + 1;
        char* argv[512];
        int argc = 0;
        for (char* a = args; a && argc < 511;) {
            char* sep = strchr(a, '\x1f');
            if (sep) *sep = '\0';
            argv[argc++] = a;
            a = sep ? sep + 1 : NULL;
        }
        argv[argc] = NULL;

        int np[2], op[2], ep[2];
        if (pipe(np) || pipe(op) || pipe(ep)) return 2;
        char payload[600];
        int plen = snprintf(payload, sizeof payload, "%s\n%s\n", nonce, tb_top);
        write_all(np[1], payload, (size_t)plen);
        close(np[1]);
        memset(nonce, 0, strlen(nonce));

        pid_t pid = fork();
        if (pid < 0) return 2;
        if (pid == 0) {
            setpgid(0, 0);
            struct rlimit rl;
            rl.rlim_cur = (rlim_t)cpu_s; rl.rlim_max = (rlim_t)cpu_s + 1;
            setrlimit(RLIMIT_CPU, &rl);
            rl.rlim_cur = rl.rlim_max = (rlim_t)as_bytes;
            setrlimit(RLIMIT_AS, &rl);
            rl.rlim_cur = rl.rlim_max = (rlim_t)fsize;
            setrlimit(RLIMIT_FSIZE, &rl);
            rl.rlim_cur = rl.rlim_max = 0;
            setrlimit(RLIMIT_CORE, &rl);
            setrlimit(RLIMIT_MSGQUEUE, &rl);
            dup2(op[1], 1);
            dup2(ep[1], 2);
            int devnull = open("/dev/null", O_RDONLY);
            if (devnull >= 0) dup2(devnull, 0);
            char fdnum[16];
            snprintf(fdnum, sizeof fdnum, "%d", np[0]);
            setenv("CDC_VERDICT_FD", fdnum, 1);
            close_others(np[0]);
            signal(SIGPIPE, SIG_DFL);
            if (install_filter(self, pgrp) != 0) _exit(126);
            execvp(argv[0], argv);
            _exit(127);
        }
        close(np[0]);
        close(op[1]);
        close(ep[1]);
        struct buf out = {malloc(out_cap + 1), 0}, err = {malloc(out_cap + 1), 0};
        int flooded = 0, timed_out = 0, open_out = 1, open_err = 1, exited = 0, status = 0;
        struct rusage ru;
        memset(&ru, 0, sizeof ru);
        long long deadline = now_ms() + wall_ms;
        while (!exited) {
            struct pollfd pf[2] = {{open_out ? op[0] : -1, POLLIN, 0}, {open_err ? ep[0] : -1, POLLIN, 0}};
            long long left = deadline - now_ms();
            if (left <= 0) { timed_out = 1; break; }
            int r = poll(pf, 2, (int)(left > 20 ? 20 : left));
            if (r < 0 && errno != EINTR) break;
            if (open_out && pf[0].revents && collect(op[0], &out, out_cap, &flooded) == 0) open_out = 0;
            if (open_err && pf[1].revents && collect(ep[0], &err, out_cap, &flooded) == 0) open_err = 0;
            if (flooded) break;
            if (wait4(pid, &status, WNOHANG, &ru) == pid) exited = 1;
        }
        if (exited) {  /* drain what the seed wrote; its leftovers must not hold us */
            fcntl(op[0], F_SETFL, O_NONBLOCK);
            fcntl(ep[0], F_SETFL, O_NONBLOCK);
            while (open_out && !flooded) {
                ssize_t got = collect(op[0], &out, out_cap, &flooded);
                if (got <= 0) break;
            }
            while (open_err && !flooded) {
                ssize_t got = collect(ep[0], &err, out_cap, &flooded);
                if (got <= 0) break;
            }
        } else {
            kill(-pid, SIGKILL);
            while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
        }
        close(op[0]);
        close(ep[0]);
        kill(-1, SIGKILL);  /* whatever the seed left behind, in this PID namespace (atomic: no fork escapes it) */
        for (;;) {  /* every one of them is our descendant (we are the subreaper): wait until all are gone */
            if (waitpid(-1, NULL, 0) > 0) continue;
            if (errno == EINTR) continue;
            break;  /* ECHILD */
        }
        int tmp_fd = open_tmp();
        int emptied = tmp_fd >= 0 && empty_at(tmp_fd, 0) == 0;
        if (tmp_fd >= 0) close(tmp_fd);
        if (!emptied) {  /* never start a seed on what an earlier one left */
            fprintf(stderr, "cdc_seed_runner: /tmp could not be emptied after seed %d\n", index);
            return 2;
        }
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        long long cpu_us = (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                           (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
        if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU ||
                                    (WTERMSIG(status) == SIGKILL && cpu_us >= (long long)cpu_s * 1000000)))
            timed_out = 1;  /* the CPU limit: a time-out, as in one sandbox per seed */
        char head[256];
        int hl = snprintf(head, sizeof head, "R %d %d %lld %ld %d %d %zu %zu\n", index, code, cpu_us,
                          ru.ru_maxrss, timed_out, flooded, out.len, err.len);
        write_all(res_fd, head, (size_t)hl);
        write_all(res_fd, out.data, out.len);
        write_all(res_fd, err.data, err.len);
        free(out.data);
        free(err.data);
        index++;
        if (timed_out) break;
    }
    return 0;
}
