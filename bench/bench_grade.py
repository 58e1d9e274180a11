"""Benchmark: CPU-seconds per grade of each task's reference fix on Icarus, at 8+32 and 8+200
seeds (user + system, simulator processes included), as SPEC section 8 measures: the maximum of
``--runs`` runs (median shown too). Not a test: it measures and prints, it asserts nothing.

    python bench/bench_grade.py [TASK ...] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from cdc_env.grade import grade
from cdc_env.task import list_tasks, load_task


def measure(task, hidden: int, runs: int) -> dict:
    cpu, wall = [], []
    for _ in range(runs):
        r = grade(task, task.reference_text, hidden=hidden)
        if r["verdict"] != "pass":
            raise SystemExit(f"{task.id}: reference fix did not pass ({r['verdict']}: {r['reason']})")
        cpu.append(r["cpu_s"])
        wall.append(r["wall_s"])
    return {"cpu_max": max(cpu), "cpu_median": statistics.median(cpu), "wall_median": statistics.median(wall)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tasks = [load_task(t) for t in args.tasks] if args.tasks else list_tasks()
    rows = []
    if not args.json:
        print("| task | 8+32 CPU-s (max) | 8+32 median | 8+32 wall (median) | 8+200 CPU-s (max) "
              "| 8+200 median | 8+200 wall (median) |")
        print("|---|---|---|---|---|---|---|")
    for t in tasks:
        a, b = measure(t, 32, args.runs), measure(t, 200, args.runs)
        rows.append({"task": t.id, "h32": a, "h200": b})
        if not args.json:
            print(f"| {t.id} | {a['cpu_max']:.2f} | {a['cpu_median']:.2f} | {a['wall_median']:.2f} | "
                  f"{b['cpu_max']:.2f} | {b['cpu_median']:.2f} | {b['wall_median']:.2f} |", flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)


if __name__ == "__main__":
    main()
