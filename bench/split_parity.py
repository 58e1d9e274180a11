"""Check (not a benchmark): the split Verilator build against the one-model build, seed by seed.

    python bench/split_parity.py [TASK ...] [--hidden 24] [--designs reference,defective]

For each task (default: every task and control) and design (the reference fix's netlist, the
shipped defect's), builds the gate's netlist both ways (``CDC_ENV_VL_SPLIT`` 0 and 1, model cache
off), runs the visible and the first N hidden seeds alone on both and batched on the split
build, and compares status, reason, checks, trace hash and simulated time with the one model's
lone runs. Prints one table row per task and design; exit 1 if any seed differs or a split
build fell back to one model (docs/parity.md, "Split build").
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from cdc_env.gate import synthesized
from cdc_env.sim import verilator
from cdc_env.sim.seeds import hidden_seeds, plan_seed, visible_seeds
from cdc_env.task import list_controls, list_tasks, load_task


def _key(r) -> tuple:
    return (r.status, r.reason, r.checks, r.trace_hash, r.sim_time_ps)


def _text(task, design: str) -> str:
    if design == "defective":
        return task.text(task.editable)
    ref = task.path(task.reference)
    return (ref / task.editable if ref.is_dir() else ref).read_text()


def compare(task, design: str, hidden: int, scratch: Path) -> tuple[str, bool]:
    netlist = synthesized(task, _text(task, design))[0]
    sim = verilator.Verilator()
    builds = {}
    for mode in ("0", "1"):
        os.environ[verilator.SPLIT_ENV] = mode
        builds[mode] = sim.build_netlist(task, netlist, scratch / f"{task.id}-{design}-{mode}")
    one, split = builds["0"], builds["1"]
    if one.status != "pass" or split.status != "pass" or split.extra.get("split") != "yes":
        why = split.extra.get("split", "") or split.log[-200:]
        return f"| {task.id} | {design} | one {one.status}, split {split.status}: {why!r} | | | | no |", False
    plans = [plan_seed(task, s) for s in visible_seeds(task) + hidden_seeds(task, hidden)]
    alone = [_key(sim.run_seed(one, p, settle=True)) for p in plans]
    split_runs = [_key(sim.run_seed(split, p, settle=True)) for p in plans]
    batch_runs = [_key(r) for r in sim.run_batch(split, plans, settle=True).results]
    split_alone = sum(k == a for k, a in zip(split_runs, alone, strict=True))
    batched = sum(k == a for k, a in zip(batch_runs, alone, strict=True))
    fails = sum(a[0] == "fail" for a in alone)
    ok = split_alone == batched == len(plans)
    verdict = "yes" if ok else "no"
    row = f"| {task.id} | {design} | {len(plans)} | {split_alone} | {batched} | {fails} | {verdict} |"
    return row, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--hidden", type=int, default=24)
    ap.add_argument("--designs", default="reference,defective")
    args = ap.parse_args()
    tasks = [load_task(t) for t in args.tasks] if args.tasks else list_tasks() + list_controls()
    designs = [d for d in args.designs.split(",") if d]
    if not verilator.Verilator().available():
        print(verilator.Verilator().missing(), file=sys.stderr)
        return 2
    os.environ[verilator.MODEL_CACHE_ENV] = "0"
    print("| task | design | seeds | split = one model, alone | split batched = one model alone "
          "| fail | ok |")
    print("|---|---|---|---|---|---|---|")
    all_ok = True
    with tempfile.TemporaryDirectory(prefix="cdc-split-") as tmp:
        for task in tasks:
            for design in designs:
                row, ok = compare(task, design, args.hidden, Path(tmp))
                all_ok &= ok
                print(row, flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
