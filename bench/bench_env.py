"""Benchmark of CdcRepairEnv's tools (a measurement, not a test).

Per task: the latency of ``read``, ``write`` and ``contract`` (one ``env.step`` each, including
argument checking; median / 95th percentile / max over ``--calls`` calls), and the wall time of
``run_visible`` (gate + build + the 8 visible seeds in the sandbox; median / max over ``--runs``
runs) on the defective design and on the reference fix (``run_visible_fixed``: every seed runs to
its end), with the CPU-seconds of that fixed run by stage (load-independent). Targets from issue
6: read/write/contract <= 5 ms, run_visible <= 1.5 s, judged on the 95th percentile (the max for
run_visible, whose sample is small); the fast tools get one untimed warm-up call each. The load
average is printed with the table: on a shared machine wall times follow it.

    python bench/bench_env.py [--tasks handshake event] [--calls 200] [--runs 3] [--sim icarus] [--json]

Figures depend on the machine and on what else runs on it; note both with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from cdc_env.env import CdcRepairEnv
from cdc_env.grade import grade
from cdc_env.task import list_tasks, load_task

TARGET_MS = {"read": 5.0, "write": 5.0, "contract": 5.0, "run_visible": 1500.0,
             "run_visible_fixed": 1500.0}


def _time_ms(env: CdcRepairEnv, name: str, args: dict, n: int) -> list[float]:
    if not name.startswith("run_visible"):
        env.step(name, args)  # warm-up, untimed: first-call imports and schema compilation
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        res = env.step(name, args)
        out.append((time.perf_counter() - t0) * 1000)
        assert res["error"] is None, res["observation"]
    return out


def row_p95(xs: list[float]) -> float:
    """The 95th percentile of sorted samples (the max when there are fewer than 20)."""
    return xs[min(len(xs) - 1, int(0.95 * len(xs)))]


def bench_task(task_id: str, *, calls: int, runs: int, sim: str) -> dict:
    env = CdcRepairEnv(task_id, max_steps=3 * calls + 2 * runs + 5, max_sim_runs=2 * runs, hidden=0, sim=sim)
    env.reset()
    ed = env.task.editable
    row: dict = {"task": task_id, "sim": sim}
    samples = {
        "read": _time_ms(env, "read", {"path": ed}, calls),
        "write": _time_ms(env, "write", {"path": ed, "content": env.task.defective_text}, calls),
        "contract": _time_ms(env, "contract", {}, calls),
        "run_visible": _time_ms(env, "run_visible", {}, runs),
    }
    # The reference fix runs every seed to its end: the longest honest run_visible.
    env.step("write", {"path": ed, "content": env.task.reference_text})
    samples["run_visible_fixed"] = _time_ms(env, "run_visible", {}, runs)
    env.close()
    rep = grade(load_task(task_id), load_task(task_id).reference_text, sim=sim, hidden=0)
    row["fixed_cpu_s"] = {s["name"]: s.get("cpu_s", 0.0) for s in rep["stages"] if s.get("cpu_s")}
    row["fixed_cpu_s"]["total"] = rep["cpu_s"]
    for name, xs in samples.items():
        xs = sorted(xs)
        row[name] = {"median_ms": round(statistics.median(xs), 3),
                     "p95_ms": round(row_p95(xs), 3),
                     "max_ms": round(xs[-1], 3), "n": len(xs),
                     "target_ms": TARGET_MS[name], "within_target": row_p95(xs) <= TARGET_MS[name]}
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="*", help="task ids (default: every public task)")
    p.add_argument("--calls", type=int, default=200, help="calls per fast tool")
    p.add_argument("--runs", type=int, default=3, help="run_visible calls per task")
    p.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    tasks = a.tasks or [t.id for t in list_tasks()]
    load = os.getloadavg()
    rows = [bench_task(t, calls=a.calls, runs=a.runs, sim=a.sim) for t in tasks]
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"load average before: {load[0]:.2f}, after: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)\n")
    print("| task | tool | median ms | p95 ms | max ms | n | target ms | within | CPU-s (fixed design) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for name in TARGET_MS:
            m = r[name]
            cpu = ", ".join(f"{k} {v:g}" for k, v in r["fixed_cpu_s"].items())
            cpu = cpu if name == "run_visible_fixed" else ""
            print(f"| {r['task']} | {name} | {m['median_ms']} | {m['p95_ms']} | {m['max_ms']} | {m['n']} | "
                  f"{m['target_ms']:g} | {'yes' if m['within_target'] else 'NO'} | {cpu} |")


if __name__ == "__main__":
    main()
