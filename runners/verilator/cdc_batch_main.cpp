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
//       CDCB <tag> END <index> finished=<0|1>
//   where <tag> is a per-batch nonce given only on this command line (the design cannot read
//   it: its plusargs are the seed's line alone). The grader splits the output on these frames
//   and reads each seed's verdict line from its own frame.
//
// What this file does not do: it does not bound a seed's time or memory (the whole process is
// bounded by the grader, and any batch that does not complete cleanly is re-run seed by seed);
// it does not catch $fatal/$stop (Verilator ends the process; the batch is then incomplete).
// CDC_LEAK_TEST (a -D flag, tests only) plants a harness bug that leaks state between seeds, to
// prove that the grader's reverse-order re-run catches such a bug.

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Vtb.h"
#include "verilated.h"

// Simulate one seed in its own context; return whether $finish was reached.
static bool run_one(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    argv.push_back("Vtb");
    for (const auto& a : args) argv.push_back(a.c_str());
    const std::unique_ptr<VerilatedContext> owned{new VerilatedContext};
    VerilatedContext* contextp = owned.get();
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
    if (argc >= 4 && std::strcmp(argv[1], "--cdc-batch") == 0) {
        std::ifstream in(argv[2]);
        if (!in) {
            std::fprintf(stderr, "cdc batch: cannot read %s\n", argv[2]);
            return 2;
        }
        const std::string tag = argv[3];
        std::string line;
        long index = 0;
        std::vector<std::string> args;
        while (std::getline(in, line)) {
#ifndef CDC_LEAK_TEST
            args.clear();  // without this (the test-only bug) a seed also sees every earlier seed's arguments
#endif
            std::istringstream words(line);
            for (std::string w; words >> w;) args.push_back(w);
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
    std::vector<std::string> args(argv + 1, argv + argc);
    run_one(args);
    std::fflush(stdout);
    return 0;
}
