"""Benchmark: the CPU cost of a grade on each simulator and mode, and the Verilator runtime's
one-time build. Not a test: it measures and prints, it asserts nothing.

    python bench/bench_cost.py [TASK ...] [--runs 3] [--runtime] [--json]

Per task (its reference fix): Icarus 8+32, Verilator batched 8+200 and one seed per process
8+200 (max of --runs runs; user + system CPU of the grade and every tool process), the fixed
cost (the model build with the runtime cached), the crossover stage size and the peak RSS of the
largest process -- the same figures as ``cdc-env cost`` (cost.measure_task), which this calls
without saving a cost model. ``--runtime`` also builds the Verilator runtime once in an empty
cache directory and reports its CPU (what the first grade after a Verilator upgrade pays).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from cdc_env import cost
from cdc_env.sim import base, verilator
from cdc_env.task import list_tasks, load_task


def runtime_build_cpu() -> float:
    """CPU-seconds of building the Verilator runtime from nothing (in a throw-away cache)."""
    old = os.environ.get(base.CACHE_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[base.CACHE_ENV] = tmp
        try:
            return verilator.runtime().built_cpu_s
        finally:
            if old is None:
                os.environ.pop(base.CACHE_ENV, None)
            else:
                os.environ[base.CACHE_ENV] = old


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--runtime", action="store_true", help="also time a from-scratch runtime build")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tasks = [load_task(t) for t in args.tasks] if args.tasks else list_tasks()
    rows = [cost.measure_task(t, runs=args.runs, save=False) for t in tasks]
    once = runtime_build_cpu() if args.runtime else None
    if args.json:
        json.dump({"rows": rows, "runtime_build_cpu_s": once}, sys.stdout, indent=2)
        return
    print(cost.format_table(rows))
    if once is not None:
        print(f"\nVerilator runtime built from scratch: {once:.2f} CPU-s (once per Verilator version)")


if __name__ == "__main__":
    main()
