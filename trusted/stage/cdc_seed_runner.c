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
 * is emptied, so no seed can leave anything for the next. The build folder is read-only. After
 * a seed times out no further seed is started (as in one-process-per-seed grading).
 *
 * This program holds every nonce of the stage; it is non-dumpable and the sandbox has no /proc
 * and no capabilities, so a seed cannot read them.
 *
 * What one seed could otherwise use against the others or against this runner (the sandbox is
 * shared), closed for each seed by a seccomp filter installed between fork and exec (inherited
 * by everything the seed starts): no signal to this runner, to bubblewrap's init or to every
 * process at once (kill(-1)); no ptrace, process_vm_readv/writev or pidfd_getfd; no SysV IPC
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

/* Empty directory ``path`` (not following links), leaving out ``skip`` (the read-only build
 * folder, mounted inside /tmp when the grader's folders live under /tmp: walking it would cost
 * every seed a failed unlink per build file). */
static void empty_dir(const char* path, const char* skip, int depth) {
    if (depth > 64) return;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return;
    DIR* d = fdopendir(dfd);
    if (!d) { close(dfd); return; }
    struct dirent* e;
    char sub[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) continue;
        if (!strcmp(sub, skip)) continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            empty_dir(sub, skip, depth + 1);
            unlinkat(dfd, e->d_name, AT_REMOVEDIR);  /* fails (kept) if it leads to the build folder */
        } else {
            unlinkat(dfd, e->d_name, 0);
        }
    }
    closedir(d);
}

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
#define MAXF 160
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
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = '\0';
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
        empty_dir("/tmp", cwd, 0);
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
