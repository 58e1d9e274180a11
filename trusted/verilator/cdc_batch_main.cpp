// cdc_batch_main.cpp -- the C++ main of every Verilator simulation of cdc_env.
//
// The model is verilated with --prefix Vtb, so this file serves every task unchanged.
//
// One seed (the one-at-a-time mode, and what every batched result is checked against):
//     ./Vtb +plusargs...
//   builds one VerilatedContext and one model from argv, simulates until $finish or until no
//   event is left, runs final blocks and exits 0 -- what Verilator's own --main does, and
//   what Icarus's vvp does.
//
// Many seeds in one process (the batched mode):
//     ./Vtb --cdc-batch <file>
//   <file> holds one seed per line: that seed's plusargs separated by single spaces. For each
//   line a *fresh* VerilatedContext and a *fresh* model are built from exactly that line's
//   arguments and destroyed afterwards, so no simulation state can pass from one seed to the
//   next through the model or the context. Each seed's output is framed by
//       CDCB <tag> BEGIN <index>
//       CDCB <tag> END <index> finished=<0|1>
//   where <tag> is a per-batch nonce read from the verdict pipe (below). The grader splits the
//   output on these frames and reads each seed's verdict line from its own frame.
//
// The verdict channel. The grader writes this run's secrets into a pipe whose descriptor number
// is in CDC_VERDICT_FD: one seed: its 64-bit nonce (16 hex digits); a batch: the frame tag, then
// one nonce per seed, one per line. main() reads them before any model exists, closes the pipe
// and marks the process non-dumpable; they are never plusargs, environment variables or files,
// and the sandbox has no /proc. The testbench's emit_verdict calls the DPI function
// cdc_verdict(), which prints the tagged verdict line with the current seed's nonce; it accepts a
// call only from the top-level testbench's scope (a call from the design prints a FAIL line and
// ends the seed). The grader refuses designs that could run C++ of their own ($c, `systemc_*)
// or import DPI functions (verilator.py), which would otherwise reach this process's memory.
//
// What this file does not do: it does not bound a seed's time or memory (the whole process is
// bounded by the grader, and any batch that does not complete cleanly is re-run seed by seed);
// it does not catch $fatal/$stop (Verilator ends the process; the batch is then incomplete).
// CDC_LEAK_TEST (a -D flag, tests only) plants a harness bug that leaks state between seeds, to
// prove that the grader's check re-run (a random sample of the seeds, shuffled) catches such a bug.

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sys/prctl.h>
#include <unistd.h>

#include "Vtb.h"
#include "Vtb__Dpi.h"
#include "svdpi.h"
#include "verilated.h"

#ifndef CDC_TB_TOP
#error "CDC_TB_TOP (the testbench's module name) must be defined"
#endif

static std::string g_nonce;  // the current seed's nonce; empty: no verdict channel

// Every line of the verdict pipe (CDC_VERDICT_FD), read once; the pipe is closed afterwards.
static std::vector<std::string> read_verdict_pipe() {
    std::vector<std::string> lines;
    const char* e = std::getenv("CDC_VERDICT_FD");
    if (e == nullptr) return lines;
    const int fd = std::atoi(e);
    std::string data;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) data.append(buf, static_cast<size_t>(n));
    close(fd);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    std::istringstream in(data);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

static bool is_nonce(const std::string& s) {
    if (s.size() != 16) return false;
    for (const char c : s)
        if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
    return true;
}

// Called by the testbench's emit_verdict (trusted/hdl/cdc_tb.vh) through DPI.
void cdc_verdict(svBit pass, unsigned int n_checks, unsigned long long hash, unsigned long long t,
                 const char* msg) {
    if (!is_nonce(g_nonce)) {
        std::printf("CDCV-SETUP-ERROR the verdict channel has no nonce\n");
        std::fflush(stdout);
        Verilated::threadContextp()->gotFinish(true);
        return;
    }
    const svScope scope = svGetScope();
    const char* name = scope ? svGetNameFromScope(scope) : nullptr;
    // The testbench's scope is its module name (CDC_TB_TOP, given by the grader on the compiler's
    // command line); the design's are "<testbench>.<instance>...", a package's is its own name.
    const bool from_tb = name != nullptr && std::strcmp(name, CDC_TB_TOP) == 0;
    if (!from_tb) {
        std::printf("CDCV %s FAIL checks=0 hash=0000000000000000 t=0 msg=verdict routine called outside the "
                    "testbench\n", g_nonce.c_str());
        std::fflush(stdout);
        Verilated::threadContextp()->gotFinish(true);
        return;
    }
    std::string text = msg ? msg : "";
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    std::printf("CDCV %s %s checks=%u hash=%016llx t=%llu msg=%s\n", g_nonce.c_str(), pass ? "PASS" : "FAIL",
                n_checks, hash, t, text.c_str());
    std::fflush(stdout);
}

#ifdef CDC_SPLIT_DESIGN
// A split build (cdc_env/sim/verilator.py, "Split build"): the design is a library model of its
// own, and its synchronizer primitives' monitor calls arrive here (the library's DPI imports,
// trusted/verilator/cdc_split_lib.vh) and go on to the testbench's exports of the same tasks
// (cdc_split_tb.vh), called in the testbench's scope, at once, as in a build of one model.
extern "C" {
int cdc_dpi_sync_note(int n);
int cdc_dpi_src_edge(svBit dst_is_a, unsigned long long* edge_t);
int cdc_dpi_sync_fail(const svBitVecVal* why);
int cdc_dpi_recovery_fail();
int cdc_dpi_bus_note(int n, const svBitVecVal* who);
}
namespace {
struct InTestbench {  // the testbench's scope for one call, the caller's restored after it
    svScope old;
    InTestbench() : old{svSetScope(svGetScopeFromName(CDC_TB_TOP))} {}
    ~InTestbench() { svSetScope(old); }
};
}  // namespace
int cdc_dpi_sync_note(int n) { InTestbench s; cdc_x_sync_note(n); return 0; }
int cdc_dpi_src_edge(svBit dst_is_a, unsigned long long* edge_t) {
    InTestbench s;
    cdc_x_src_edge(dst_is_a, edge_t);
    return 0;
}
int cdc_dpi_sync_fail(const svBitVecVal* why) { InTestbench s; cdc_x_sync_fail(why); return 0; }
int cdc_dpi_recovery_fail() { InTestbench s; cdc_x_recovery_fail(); return 0; }
int cdc_dpi_bus_note(int n, const svBitVecVal* who) { InTestbench s; cdc_x_bus_note(n, who); return 0; }
#endif

// Put the process's random state back where a fresh process starts. Verilator 5 keeps it per
// thread, not per context: a thread-local generator, re-seeded from lrand48() whenever the
// global seed epoch changes (VerilatedContext::randSeed bumps it). So: lrand48's state to its
// initial value (POSIX: as if seed48 had never been called), std::rand's to srand(1), and a new
// epoch, after which the generator re-seeds from that lrand48 exactly as in a fresh process.
// The grader also keeps any build with random calls out of batching (verilator.batch_hazards);
// this makes a batch equal one seed per process even where that check were to miss one.
static void reset_process_random_state(VerilatedContext* contextp) {
    unsigned short initial[3] = {0x330E, 0xABCD, 0x1234};
    seed48(initial);
    std::srand(1);
    contextp->randSeed(0);
}

// Simulate one seed in its own context; return whether $finish was reached.
static bool run_one(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    argv.push_back("Vtb");
    for (const auto& a : args) argv.push_back(a.c_str());
    const std::unique_ptr<VerilatedContext> owned{new VerilatedContext};
    VerilatedContext* contextp = owned.get();
    reset_process_random_state(contextp);
    contextp->threads(1);
    contextp->quiet(true);
    contextp->commandArgs(static_cast<int>(argv.size()), argv.data());
    const std::unique_ptr<Vtb> topp{new Vtb{contextp, ""}};
    while (!contextp->gotFinish()) {
        topp->eval();
        if (!topp->eventsPending()) break;
        contextp->time(topp->nextTimeSlot());
    }
    const bool finished = contextp->gotFinish();
    topp->final();
    return finished;
}

int main(int argc, char** argv) {
    const std::vector<std::string> secrets = read_verdict_pipe();
    if (argc >= 3 && std::strcmp(argv[1], "--cdc-batch") == 0) {
        std::ifstream in(argv[2]);
        if (!in) {
            std::fprintf(stderr, "cdc batch: cannot read %s\n", argv[2]);
            return 2;
        }
        const std::string tag = secrets.empty() ? std::string() : secrets[0];
        std::string line;
        long index = 0;
        std::vector<std::string> args;
        while (std::getline(in, line)) {
#ifndef CDC_LEAK_TEST
            args.clear();  // without this (the test-only bug) a seed also sees every earlier seed's arguments
#endif
            std::istringstream words(line);
            for (std::string w; words >> w;) args.push_back(w);
            g_nonce = static_cast<size_t>(index) + 1 < secrets.size() ? secrets[static_cast<size_t>(index) + 1] : "";
            std::printf("CDCB %s BEGIN %ld\n", tag.c_str(), index);
            std::fflush(stdout);
            const bool finished = run_one(args);
            std::fflush(stdout);
            std::printf("CDCB %s END %ld finished=%d\n", tag.c_str(), index, finished ? 1 : 0);
            std::fflush(stdout);
            ++index;
        }
        return 0;
    }
    if (!secrets.empty()) g_nonce = secrets[0];
    std::vector<std::string> args(argv + 1, argv + argc);
    run_one(args);
    std::fflush(stdout);
    return 0;
}
