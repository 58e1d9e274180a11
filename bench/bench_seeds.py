"""Benchmark: CPU-seconds per grade against the number of hidden seeds, per simulator and mode.

    python bench/bench_seeds.py [TASK ...] [--hidden 8,32,64,128,200] [--runs 1] [--modes ...] [--json]

For each task's reference fix and each hidden-stage size N (plus the task's visible seeds):

* ``icarus``: ``grade(sim="icarus")`` -- one process per seed (Icarus never batches);
* ``verilator_alone``: a *first grade* on Verilator with batching off -- a new patch each run
  (a comment with a fresh nonce) and the per-patch model cache off (the gate's netlist drops
  comments, so a new comment alone would find the model cached), so the model is built
  (``report["cpu_s"]`` includes it);
* ``verilator_first``: a first grade under the self-checked policy (the default): the model is
  built (model cache off, as above), the hidden stage (N >= 24) batches, re-runs a random sample
  of max(24, N/10) of its seeds in a shuffled order and runs two seeds alone, and issues a
  certificate;
* ``verilator_regrade``: the same patch graded again: the model comes from the per-patch cache
  (on for both grades of this mode) and the stage is checked against the certificate as well;
* ``auto_first``: a first grade under ``sim="auto"`` (model cache off, as above): the simulator
  the cost model picks for the X-safe netlist (``hidden_mode`` and stderr say what ran).

A first-grade mode fails (RuntimeError) if the report's build stage says the model came from a
cache (``model_cache: hit``), so running this script with another tree on PYTHONPATH (bench_pair
against an older commit) cannot measure a cached model by mistake.

The CPU of a grade is ``report["cpu_s"]`` (the grading process plus every tool process, each
tool run measured by its own cgroup). Maximum of ``--runs`` runs. Core-hours per million grades
= CPU-s x 1e6 / 3600. Not a test: it measures and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys

from cdc_env.grade import grade
from cdc_env.sim.verilator import MODEL_CACHE_ENV
from cdc_env.task import load_task

MODES = ("icarus", "verilator_alone", "verilator_first", "verilator_regrade", "auto_first")


def one(task, n: int, mode: str, patch: str) -> dict:
    if mode in ("verilator_alone", "verilator_first", "auto_first"):
        os.environ[MODEL_CACHE_ENV] = "0"  # a first grade builds its model
    else:
        os.environ.pop(MODEL_CACHE_ENV, None)
    if mode == "icarus":
        r = grade(task, patch, sim="icarus", hidden=n)
    elif mode == "verilator_alone":
        r = grade(task, patch, sim="verilator", hidden=n, batch=False)
    elif mode == "auto_first":
        r = grade(task, patch, sim="auto", hidden=n)
    else:
        r = grade(task, patch, sim="verilator", hidden=n, batch_policy="self-checked")
    if r["verdict"] != "pass":
        raise RuntimeError(f"{task.id} {mode} {n}: {r['verdict']} {r['reason']}")
    build = next((s for s in r["stages"] if s["name"] == "build"), {})
    if mode in ("verilator_alone", "verilator_first") and build.get("model_cache") == "hit":
        raise RuntimeError(f"{task.id} {mode} {n}: a first grade found its model cached")
    return r


def measure(task_id: str, sizes: list[int], runs: int, modes: tuple[str, ...] = MODES) -> dict:
    task = load_task(task_id)
    row: dict = {"task": task_id, "visible": len(task.seeds.visible), "cpu_s": {}, "hidden_mode": {}}
    for mode in modes:
        for n in sizes:
            cpus = []
            for _ in range(runs):
                patch = task.reference_text + f"\n// bench {secrets.token_hex(8)}\n"  # a new patch
                r = one(task, n, mode, patch)
                if mode == "verilator_regrade":  # the first grade above cached the model
                    r = one(task, n, mode, patch)
                cpus.append(r["cpu_s"])
            row["cpu_s"][f"{mode}@{n}"] = round(max(cpus), 3)
            row["hidden_mode"][f"{mode}@{n}"] = f"{r['simulator']['name']} {r['seeds']['hidden']['mode']}"
            print(f"{task_id} {mode} 8+{n}: {max(cpus):.2f} CPU-s ({row['hidden_mode'][f'{mode}@{n}']})",
                  file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*", default=["handshake", "event", "fifo_01", "fifo_07"])
    ap.add_argument("--hidden", default="8,32,64,128,200")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.hidden.split(",")]
    modes = tuple(args.modes)
    rows = [measure(t, sizes, args.runs, modes) for t in args.tasks]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        return
    cols = " | ".join(f"8+{n}" for n in sizes)
    print(f"| task | mode | {cols} | core-h per 1e6 grades at 8+32 / 8+200 |")
    print("|---|---|" + "---|" * len(sizes) + "---|")
    for r in rows:
        for mode in modes:
            cells = [r["cpu_s"][f"{mode}@{n}"] for n in sizes]
            ch = " / ".join(f"{r['cpu_s'][f'{mode}@{n}'] * 1e6 / 3600:,.0f}" for n in (32, 200) if n in sizes)
            print(f"| {r['task']} | {mode.replace('_', ' ')} | " + " | ".join(f"{c:.2f}" for c in cells)
                  + f" | {ch} |")


if __name__ == "__main__":
    main()
