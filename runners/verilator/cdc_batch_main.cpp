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
//     ./Vtb --cdc-batch <file> <tag>
//   <file> holds one seed per line: that seed's plusargs separated by single spaces. For each
//   line a *fresh* VerilatedContext and a *fresh* model are built from exactly that line's
//   arguments and destroyed afterwards, so no simulation state can pass from one seed to the
//   next through the model or the context. Each seed's output is framed by
//       CDCB <tag> BEGIN <index>
//       CDCB <tag> END <index> finished=<0|1> cpu_ns=<n>
//   where <tag> is a per-batch nonce given only on this command line (the design cannot read
//   it: its plusargs are the seed's line alone). The grader splits the output on these frames
//   and reads each seed's verdict line from its own frame.
//
// What this file does not do: it does not bound a seed's time or memory (the whole process is
// bounded by the grader, and any batch that does not complete cleanly is re-run seed by seed);
// it does not catch $fatal/$stop (Verilator ends the process; the batch is then incomplete).
// CDC_LEAK_TEST is a deliberate harness bug for tests only: the model of the previous seed is
// reused instead of a fresh one, so state leaks from seed to seed.

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Vtb.h"
#include "verilated.h"

static long long cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Simulate one seed in its own context; return whether $finish was reached.
static bool run_one(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    argv.push_back("Vtb");
    for (const auto& a : args) argv.push_back(a.c_str());
    const std::unique_ptr<VerilatedContext> contextp{new VerilatedContext};
    contextp->threads(1);
    contextp->quiet(true);
    contextp->commandArgs(static_cast<int>(argv.size()), argv.data());
#ifdef CDC_LEAK_TEST
    static Vtb* leaked = nullptr;  // test-only harness bug: one model for every seed
    if (!leaked) leaked = new Vtb{contextp.get(), ""};
    Vtb* topp = leaked;
#else
    const std::unique_ptr<Vtb> owned{new Vtb{contextp.get(), ""}};
    Vtb* topp = owned.get();
#endif
    while (!contextp->gotFinish()) {
        topp->eval();
        if (!topp->eventsPending()) break;
        contextp->time(topp->nextTimeSlot());
    }
    const bool finished = contextp->gotFinish();
#ifndef CDC_LEAK_TEST
    topp->final();
#endif
    return finished;
}

int main(int argc, char** argv) {
    if (argc >= 4 && std::strcmp(argv[1], "--cdc-batch") == 0) {
        std::ifstream in(argv[2]);
        if (!in) {
            std::fprintf(stderr, "cdc batch: cannot read %s\n", argv[2]);
            return 2;
        }
        const std::string tag = argv[3];
        std::string line;
        long index = 0;
        while (std::getline(in, line)) {
            std::vector<std::string> args;
            std::istringstream words(line);
            for (std::string w; words >> w;) args.push_back(w);
            std::printf("CDCB %s BEGIN %ld\n", tag.c_str(), index);
            std::fflush(stdout);
            const long long t0 = cpu_ns();
            const bool finished = run_one(args);
            std::fflush(stdout);
            std::printf("CDCB %s END %ld finished=%d cpu_ns=%lld\n", tag.c_str(), index,
                        finished ? 1 : 0, cpu_ns() - t0);
            std::fflush(stdout);
            ++index;
        }
        return 0;
    }
    std::vector<std::string> args(argv + 1, argv + argc);
    run_one(args);
    std::fflush(stdout);
    return 0;
}
