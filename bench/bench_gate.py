"""Benchmark: static-gate time per submission, for every task's defective, clean and reference files.

Measures ``run_gate`` exactly as the grader calls it (synthesis, policy and netlist rules in the
forked, resource-limited child), after one warm-up call per task so that interpreter start, the
pyslang and pyosys imports and the per-task profile (learned once per task and cached) are excluded.
Reports wall and CPU seconds (parent + child) per submission: median and maximum over ``--repeat``
runs. Target (issue 22): synthesis plus rules <= 0.1 CPU-s per submission, worst case.
With ``--cases`` it also runs every design of tests/gate_cases/ (the rules' trips and near-miss
designs: hierarchical helpers, unrolled function loops, memories...), except the GATE-LIMIT
trip (it exists to exhaust the gate's memory budget) and the designs next to the work bounds
(gate_limit_*: bench/bench_gate_work.py measures those).

    python bench/bench_gate.py [--repeat 5] [--cases] [--json] [TASK ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from cdc_env.gate import run_gate
from cdc_env.task import load_task, task_ids

TARGET_S = 0.1
CASES = Path(__file__).resolve().parent.parent / "tests" / "gate_cases"


def _case_task(path: Path) -> str:
    for line in path.read_text().splitlines()[:5]:
        if line.startswith("// task:"):
            return line.split(":", 1)[1].strip()
    return "handshake"


def bench(task_id: str, repeat: int, designs: list[tuple[str, str]] | None = None) -> list[dict]:
    task = load_task(task_id)
    sources = {rel: task.text(rel) for rel in task.sources}
    run_gate(task, {task.editable: task.reference_text, **sources})  # warm-up: import + profile
    rows = []
    for label, text in designs or (("defective", task.defective_text), ("clean", task.clean_text),
                                   ("reference", task.reference_text)):
        walls, cpus, status = [], [], set()
        for _ in range(repeat):
            t0 = time.perf_counter()
            res = run_gate(task, {task.editable: text, **sources})
            walls.append(time.perf_counter() - t0)
            cpus.append(res.cpu_s)
            status.add(res.status)
        rows.append({"task": task_id, "design": label, "status": "/".join(sorted(status)),
                     "wall_median_s": round(statistics.median(walls), 4), "wall_max_s": round(max(walls), 4),
                     "cpu_median_s": round(statistics.median(cpus), 4), "cpu_max_s": round(max(cpus), 4)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cases", action="store_true", help="also every design in tests/gate_cases/")
    args = ap.parse_args(argv)
    rows = []
    for tid in args.tasks or task_ids():
        rows.extend(bench(tid, max(1, args.repeat)))
    if args.cases:
        by_task: dict[str, list[tuple[str, str]]] = {}
        for p in sorted(CASES.glob("*.v")):
            if not p.name.startswith(("gate_limit.trips", "gate_limit_")):
                by_task.setdefault(_case_task(p), []).append((p.stem, p.read_text()))
        for tid, designs in by_task.items():
            for r in bench(tid, max(1, args.repeat), designs):
                r["status"] = "case:" + r["status"]
                rows.append(r)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print("| task | design | status | wall median s | wall max s | CPU median s | CPU max s |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['task']} | {r['design']} | {r['status']} | {r['wall_median_s']} | "
                  f"{r['wall_max_s']} | {r['cpu_median_s']} | {r['cpu_max_s']} |")
        worst_wall = max(r["wall_max_s"] for r in rows)
        worst_cpu = max(r["cpu_max_s"] for r in rows)
        print(f"\nworst wall {worst_wall} s, worst CPU {worst_cpu} s per submission; target <= "
              f"{TARGET_S} CPU-s: "
              f"{'met' if worst_cpu <= TARGET_S else 'NOT met'}")
    return 0 if all(r["status"] == "pass" or r["status"].startswith("case:") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
