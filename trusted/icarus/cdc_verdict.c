/* cdc_verdict.c -- the Icarus half of cdc_env's verdict channel (a VPI module for vvp).
 *
 * The grader writes this run's 64-bit nonce (16 hex digits) and, on a second line, the
 * testbench's module name into a pipe whose descriptor number is in CDC_VERDICT_FD. At load time -- before any Verilog runs -- this module reads the nonce,
 * closes the pipe and marks the process non-dumpable. The nonce is never a plusarg, an
 * environment variable or a file, and tools run without /proc, so a design cannot read it.
 *
 * $cdc_verdict(pass, checks, hash, t, msg) prints the only line the grader trusts:
 *     CDCV <nonce> PASS|FAIL checks=<n> hash=<h> t=<ps> msg=<text>
 * It accepts a call only from the harness's task emit_verdict in the top-level testbench module; a call from anywhere else (the design) prints a FAIL line and ends the run.
 * Every accepted call prints a line; the grader accepts exactly one.
 *
 * Several seeds per vvp process ("zygote" mode, used by trusted/stage/cdc_seed_runner.c): with
 * CDC_ZYGOTE_FD=<req>,<resp> instead of CDC_VERDICT_FD, the module holds no nonce at load. At the
 * start of simulation -- the design compiled, time 0, before any Verilog statement, static
 * initialiser or plusarg read has run -- it becomes a fork server: for each request line
 *     <nonce>\t<tb_top>\t<plusarg>\x1f<plusarg>...
 * it forks a child that takes the nonce and the plusargs (written into vvp's own argument slots,
 * placeholders "+cdc_zygote_slot" on the command line, so $value$plusargs reads them) and runs the
 * simulation from that untouched time-0 image. Every seed therefore starts from byte-for-byte the
 * state a fresh vvp would have: nothing one seed does reaches another (separate address spaces).
 * The server answers "P <pid>" on fork and "X <status> <cpu_us> <maxrss_kb> <leftover>" after
 * wait4; it is a child subreaper, so anything a seed left running becomes its child and is
 * reported (leftover=1: the runner then kills the whole sandbox and runs the remaining seeds one
 * process each). The runner's seccomp filter, inherited, forbids a seed to signal the server.
 * The server learns a seed's nonce only when it forks that seed, and wipes it after the fork.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vpi_user.h>

static char nonce[17];
static char tb_top[256];
static int have_nonce;

static void read_nonce(void) {
    const char* e = getenv("CDC_VERDICT_FD");
    if (e == NULL) return;
    int fd = atoi(e);
    char buf[300];
    ssize_t got = 0;
    while (got < (ssize_t)sizeof buf - 1) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0) break;
        got += n;
    }
    close(fd);
    buf[got] = '\0';
    char* nl = strchr(buf, '\n');
    if (nl == NULL || nl - buf != 16) return;
    char* end = strchr(nl + 1, '\n');
    if (end == NULL || end - nl - 1 <= 0 || end - nl - 1 >= (long)sizeof tb_top) return;
    memcpy(tb_top, nl + 1, end - nl - 1);
    tb_top[end - nl - 1] = '\0';
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)buf[i]) || isupper((unsigned char)buf[i])) return;
    memcpy(nonce, buf, 16);
    nonce[16] = '\0';
    have_nonce = 1;
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int from_testbench(vpiHandle call) {
    vpiHandle scope = vpi_handle(vpiScope, call);
    if (scope == NULL || vpi_get(vpiType, scope) != vpiTask) return 0;
    const char* name = vpi_get_str(vpiName, scope);
    if (name == NULL || strcmp(name, "emit_verdict") != 0) return 0;
    vpiHandle mod = vpi_handle(vpiScope, scope);
    if (mod == NULL || vpi_get(vpiType, mod) != vpiModule) return 0;
    const char* mname = vpi_get_str(vpiName, mod);
    /* a top-level module named as the grader's testbench */
    return vpi_handle(vpiScope, mod) == NULL && mname != NULL && strcmp(mname, tb_top) == 0;
}

static const char* arg_str(vpiHandle it, int format) {
    static char buf[4][512];
    static int slot;
    vpiHandle a = it ? vpi_scan(it) : NULL;
    if (a == NULL) return "";
    s_vpi_value v;
    v.format = format;
    vpi_get_value(a, &v);
    char* out = buf[slot++ & 3];
    const char* s = v.value.str ? v.value.str : "";
    while (*s == ' ') s++;
    snprintf(out, 512, "%s", s);
    for (char* p = out; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return out;
}

static PLI_INT32 verdict_calltf(PLI_BYTE8* unused) {
    (void)unused;
    vpiHandle call = vpi_handle(vpiSysTfCall, NULL);
    if (!have_nonce) {
        vpi_printf("CDCV-SETUP-ERROR the verdict channel has no nonce\n");
        vpi_control(vpiFinish, 1);
        return 0;
    }
    if (!from_testbench(call)) {
        vpi_printf("CDCV %s FAIL checks=0 hash=0000000000000000 t=0 msg=verdict routine called outside "
                   "the testbench\n", nonce);
        vpi_control(vpiFinish, 1);
        return 0;
    }
    vpiHandle it = vpi_iterate(vpiArgument, call);
    char pass[8], checks[32], hash[32], t[32];
    snprintf(pass, sizeof pass, "%s", arg_str(it, vpiDecStrVal));
    snprintf(checks, sizeof checks, "%s", arg_str(it, vpiDecStrVal));
    snprintf(hash, sizeof hash, "%s", arg_str(it, vpiHexStrVal));
    snprintf(t, sizeof t, "%s", arg_str(it, vpiDecStrVal));
    const char* msg = arg_str(it, vpiStringVal);
    if (it) vpi_free_object(it);
    char hash16[17];
    size_t hl = strlen(hash);
    memset(hash16, '0', 16);
    hash16[16] = '\0';
    if (hl <= 16) memcpy(hash16 + 16 - hl, hash, hl);
    vpi_printf("CDCV %s %s checks=%s hash=%s t=%s msg=%s\n", nonce, strcmp(pass, "1") == 0 ? "PASS" : "FAIL",
               checks, hash16, t, msg);
    vpi_mcd_flush(1);
    return 0;
}

/* ---- zygote mode ---- */
#define ZYGOTE_SLOT "+cdc_zygote_slot"
static int zyg_req = -1, zyg_resp = -1;

static void zyg_write(const char* s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(zyg_resp, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3);
        s += w;
        n -= (size_t)w;
    }
}

/* One request line (without the newline) into buf; 0 at end of input or on a bad line. */
static int zyg_read_line(char* buf, size_t cap) {
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(zyg_req, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        if (c == '\n') break;
        if (n + 1 >= cap) return 0;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return 1;
}

/* In the child: take the request's nonce, testbench name and plusargs. 0 on a bad request. */
static int zyg_take(char* line) {
    char* tab = strchr(line, '\t');
    if (tab == NULL || tab - line != 16) return 0;
    char* top = tab + 1;
    char* tab2 = strchr(top, '\t');
    if (tab2 == NULL || tab2 == top || tab2 - top >= (long)sizeof tb_top) return 0;
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)line[i]) || isupper((unsigned char)line[i])) return 0;
    s_vpi_vlog_info info;
    memset(&info, 0, sizeof info);
    if (!vpi_get_vlog_info(&info) || info.argv == NULL) return 0;
    char* args = tab2 + 1;
    for (int i = 0; i < info.argc; i++) {
        if (info.argv[i] == NULL || strcmp(info.argv[i], ZYGOTE_SLOT) != 0) continue;
        char* a = args;
        if (a != NULL && *a != '\0') {
            char* sep = strchr(a, '\x1f');
            if (sep) *sep = '\0';
            args = sep ? sep + 1 : NULL;
            info.argv[i] = strdup(a);
        } else {
            args = NULL;
            info.argv[i] = (char*)"";  /* no plusarg: skipped by $value$plusargs / $test$plusargs */
        }
    }
    if (args != NULL && *args != '\0') return 0;  /* more plusargs than slots */
    memcpy(nonce, line, 16);
    nonce[16] = '\0';
    memcpy(tb_top, top, tab2 - top);
    tb_top[tab2 - top] = '\0';
    have_nonce = 1;
    return 1;
}

static PLI_INT32 zygote_serve(p_cb_data unused) {
    (void)unused;
    static char line[65536];
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    zyg_write("ready\n");
    for (;;) {
        fflush(NULL);
        vpi_mcd_flush(1);
        if (!zyg_read_line(line, sizeof line)) _exit(0);
        pid_t pid = fork();
        if (pid < 0) _exit(2);
        if (pid == 0) {
            close(zyg_req);
            close(zyg_resp);
            setpgid(0, 0);
            prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
            if (!zyg_take(line)) {
                vpi_printf("CDCV-SETUP-ERROR bad zygote request\n");
                vpi_mcd_flush(1);
                _exit(2);
            }
            memset(line, 0, sizeof line);  /* the plusargs were copied */
            return 0;  /* this child now runs the simulation from time 0 */
        }
        memset(line, 0, sizeof line);
        char msg[160];
        snprintf(msg, sizeof msg, "P %d\n", (int)pid);
        zyg_write(msg);
        int status = 0;
        struct rusage ru;
        memset(&ru, 0, sizeof ru);
        while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
        int leftover = 0;
        for (;;) {  /* whatever the seed started and left: reported, never carried to the next seed */
            pid_t r = waitpid(-1, NULL, WNOHANG);
            if (r > 0) { leftover = 1; continue; }
            if (r == 0) leftover = 1;
            break;
        }
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        long long cpu_us = (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                           (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
        snprintf(msg, sizeof msg, "X %d %lld %ld %d\n", code, cpu_us, ru.ru_maxrss, leftover);
        zyg_write(msg);
        if (leftover) _exit(0);
    }
}

static int zygote_setup(void) {
    const char* e = getenv("CDC_ZYGOTE_FD");
    if (e == NULL) return 0;
    if (sscanf(e, "%d,%d", &zyg_req, &zyg_resp) != 2) _exit(2);
    unsetenv("CDC_ZYGOTE_FD");
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    s_cb_data cb;
    memset(&cb, 0, sizeof cb);
    cb.reason = cbStartOfSimulation;
    cb.cb_rtn = zygote_serve;
    vpi_register_cb(&cb);
    return 1;
}

static void register_verdict(void) {
    static int done;  /* a module named twice (vvp -m and the .vvp file) is started twice */
    if (done) return;
    done = 1;
    if (!zygote_setup()) read_nonce();
    s_vpi_systf_data tf;
    memset(&tf, 0, sizeof tf);
    tf.type = vpiSysTask;
    tf.tfname = "$cdc_verdict";
    tf.calltf = verdict_calltf;
    vpi_register_systf(&tf);
}

void (*vlog_startup_routines[])(void) = {register_verdict, 0};
