"""Benchmark: is a grade's ``report["cpu_s"]`` the CPU the grade really cost?

Each measurement starts a fresh Python worker inside a cgroup of its own (cgroup v1 ``cpuacct``
or cgroup v2, whichever this host offers; root or a delegated subtree is needed), lets it import
cdc_env, then reads the cgroup's CPU usage, tells the worker to grade a task's reference fix, and
reads the usage again when the report arrives. Everything the grade runs -- the grading process,
bubblewrap, compilers, simulators and anything they start -- is inside that cgroup, so the
difference is an independent measurement of the whole grade (the interpreter's start-up and
imports are excluded on both sides, as the report excludes them). Also shown: ``peak_rss_kb``
against the worker cgroup's memory peak where the host has a memory controller.

    python bench/bench_accounting.py [--runs 2] [--json] [CASE ...]

CASE is task:sim:hidden (default: handshake:icarus:32 fifo_01:icarus:32 handshake:verilator:200
fifo_01:verilator:200). ``--concurrency N`` runs N grades of the case at once in the worker's
threads (as an in-process eval with --concurrency does) and compares the SUM of their reports'
cpu_s with the cgroup: each grade must count only its own threads, not the others'. Not a test:
it measures and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cdc_env.sim.proc import accounting

DEFAULT_CASES = ["handshake:icarus:32", "fifo_01:icarus:32", "handshake:verilator:200",
                 "fifo_01:verilator:200"]

WORKER = r"""
import json, sys
from concurrent.futures import ThreadPoolExecutor
from cdc_env.grade import grade
from cdc_env.task import load_task
print("ready", flush=True)
for line in sys.stdin:
    task, sim, hidden, n = line.split()
    t = load_task(task)
    def one(_):
        return grade(t, t.reference_text, sim=sim, hidden=int(hidden), batch=False)
    with ThreadPoolExecutor(int(n)) as pool:
        rs = list(pool.map(one, range(int(n))))
    print(json.dumps({"verdict": ",".join(sorted({r["verdict"] for r in rs})),
                      "cpu_s": round(sum(r["cpu_s"] for r in rs), 3),
                      "peak_rss_kb": max(r["peak_rss_kb"] for r in rs),
                      "accounting": rs[0]["accounting"]}), flush=True)
"""


class BenchCgroup:
    """A cgroup for the worker: cpu usage (ns) and memory peak (bytes), v2 or v1."""

    def __init__(self) -> None:
        acc = accounting()
        if acc.method == "rusage":
            raise SystemExit(f"this host offers no writable cgroup: {acc.reason}")
        name = f"cdc-bench-{os.getpid()}"
        self.v2 = acc.method == "cgroup-v2"
        self.dirs = {ctrl: base / name for ctrl, base in acc.dirs}
        for d in self.dirs.values():
            d.mkdir()

    def join_fn(self):
        paths = [str(d / "cgroup.procs") for d in self.dirs.values()]

        def join() -> None:
            for p in paths:
                with open(p, "w") as f:
                    f.write("0")
        return join

    def cpu_s(self) -> float:
        if self.v2:
            for line in (self.dirs[""] / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
            return 0.0
        return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9

    def reset_peak(self) -> None:
        p = self.dirs["memory"] / "memory.max_usage_in_bytes" if not self.v2 else None
        if p is not None and p.exists():
            p.write_text("0")

    def peak_kb(self) -> int:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        p = self.dirs["" if self.v2 else "memory"] / name
        try:
            return int(p.read_text()) // 1024
        except (OSError, ValueError):
            return 0

    def remove(self) -> None:
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def measure(cases: list[str], runs: int, concurrency: int = 1) -> list[dict]:
    cg = BenchCgroup()
    rows = []
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        w = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, preexec_fn=cg.join_fn(), env=env)
        try:
            assert w.stdout is not None and w.stdin is not None
            if w.stdout.readline().strip() != "ready":
                raise SystemExit("the worker did not start")
            for case in cases:
                task, sim, hidden = case.split(":")
                for _ in range(runs):
                    cg.reset_peak()
                    before = cg.cpu_s()
                    w.stdin.write(f"{task} {sim} {hidden} {concurrency}\n")
                    w.stdin.flush()
                    rep = json.loads(w.stdout.readline())
                    outside = cg.cpu_s() - before
                    err = round(100 * (rep["cpu_s"] - outside) / outside, 2) if outside else None
                    rows.append({"case": case, "concurrency": concurrency, "verdict": rep["verdict"],
                                 "report_cpu_s": rep["cpu_s"],
                                 "cgroup_cpu_s": round(outside, 3), "error_pct": err,
                                 "report_peak_rss_kb": rep["peak_rss_kb"], "cgroup_peak_kb": cg.peak_kb(),
                                 "accounting": rep["accounting"]["method"]})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        finally:
            w.stdin.close() if w.stdin else None
            w.wait(timeout=60)
    finally:
        cg.remove()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", default=DEFAULT_CASES)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=1,
                    help="grades of each case at once in the worker (report: the sum of their cpu_s)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = measure(a.cases, a.runs, a.concurrency)
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"accounting: {accounting().method} ({accounting().reason})")
    print(f"grades at once in the worker: {a.concurrency} (report cpu_s: their sum)")
    print("| case (task:sim:hidden) | report cpu_s | cgroup CPU-s of the whole grade | error "
          "| report peak MiB | worker cgroup peak MiB |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['report_cpu_s']:.3f} | {r['cgroup_cpu_s']:.3f} | {r['error_pct']:+.1f}% | "
              f"{r['report_peak_rss_kb'] / 1024:.0f} | {r['cgroup_peak_kb'] / 1024:.0f} |")


if __name__ == "__main__":
    main()
