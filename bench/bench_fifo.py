"""Benchmark (not a test): CPU-seconds per FIFO grade, 8 visible + N hidden seeds, per variant.

Grades each variant's reference fix -- a grade that runs every stage -- ``--runs`` times and
reports the maximum CPU-s per variant (user + system of every tool, simulator processes
included, as the report's ``cpu_s``), the mean over the variants and the mean CPU per seed run.
SPEC section 8's figure for the original: Icarus at 32 hidden seeds, mean 13.0 CPU-s; the
target here is a mean of at most 3.

    python bench/bench_fifo.py                      # every committed FIFO variant, Icarus, 8+32
    python bench/bench_fifo.py --hidden 200 --sim verilator
    python bench/bench_fifo.py --heldout DIR        # also the variants minted into DIR
    python bench/bench_fifo.py --evidence [--seeds 200]   # extra defect shapes: settle on vs off
    python bench/bench_fifo.py --modes per-seed stage     # one sandbox per seed vs per stage, side by side
    python bench/bench_fifo.py --sim verilator --hidden 200 --one-at-a-time --modes per-seed stage

It measures; it asserts nothing. Other load on the machine inflates the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from cdc_env.grade import grade
from cdc_env.task import Task, list_tasks, load_task


def fifo_tasks(heldout: Path | None) -> list[Task]:
    tasks = [t for t in list_tasks() if t.family == "fifo"]
    if heldout is not None:
        tasks += [load_task(d) for d in sorted(heldout.iterdir()) if (d / "task.toml").is_file()]
    return tasks


def shape_evidence(seeds: int) -> list[dict]:
    """Each extra defect shape's defect on ``seeds`` hidden seeds, late settling on and off
    (Gray check off): how often it is caught, split by which side is fast."""
    import shutil
    import tempfile

    from cdc_env.families import write_files
    from cdc_env.families.fifo.generator import generate
    from cdc_env.families.fifo.variants import EVIDENCE, EXTRA
    from cdc_env.sim import get_simulator
    from cdc_env.sim.seeds import hidden_seeds, plan_seed
    from cdc_env.sim.stage import run_seeds

    rows = []
    for p in EXTRA + EVIDENCE:
        work = Path(tempfile.mkdtemp(prefix="cdc-evidence-"))
        try:
            t = load_task(write_files(generate(p), work / p.id))
            sim = get_simulator("icarus")
            b = sim.build(t, {t.editable: t.defective_text}, work / "b")
            hid = hidden_seeds(t, seeds)
            row: dict = {"task": p.id, "shape": p.shape, "seeds": len(hid)}
            for settle in (True, False):
                res = run_seeds(sim, b, t, hid, settle=settle, hidden_checks=False)
                failed = [r for r in res if r.status != "pass"]
                key = "settle_on" if settle else "settle_off"
                row[key] = {"fail": len(failed),
                            "fail_fast_a": sum(plan_seed(t, r.seed).fast == "a" for r in failed),
                            "fail_fast_b": sum(plan_seed(t, r.seed).fast == "b" for r in failed),
                            "failing_seeds": sorted(r.seed for r in failed),
                            "reasons": sorted({re.sub(r"\b[0-9a-f]+\b", "N", r.reason)[:60]
                                               for r in failed})}
            row["same_seeds_fail"] = row["settle_on"]["failing_seeds"] == row["settle_off"]["failing_seeds"]
            rows.append(row)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tasks", nargs="*", help="task ids (default: every FIFO variant)")
    ap.add_argument("--heldout", type=Path, help="a folder of minted held-out variants to include")
    ap.add_argument("--evidence", action="store_true", help="the extra defect shapes, settle on vs off")
    ap.add_argument("--seeds", type=int, default=200, help="hidden seeds for --evidence")
    ap.add_argument("--modes", nargs="+", default=["stage"], choices=["stage", "per-seed"],
                    help="seed sandboxing: one per stage chunk (the default) and/or one per seed")
    ap.add_argument("--one-at-a-time", action="store_true", help="no batched Verilator seeds (batch=False)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.evidence:
        rows = shape_evidence(args.seeds)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        for r in rows:
            on, off = r["settle_on"], r["settle_off"]
            why = "; ".join(sorted(set(on["reasons"] + off["reasons"])))
            print(f"{r['task']:14} {r['shape']:14} settle on {on['fail']:3}/{r['seeds']} "
                  f"(fast a {on['fail_fast_a']}, b {on['fail_fast_b']})  "
                  f"settle off {off['fail']:3}/{r['seeds']}"
                  f"  same seeds: {r['same_seeds_fail']}  {why}")
        return 0
    tasks = [load_task(t) for t in args.tasks] if args.tasks else fifo_tasks(args.heldout)
    import os

    from cdc_env.sim.stage import STAGE_ENV

    summaries = {}
    for mode in args.modes:
        os.environ[STAGE_ENV] = "1" if mode == "stage" else "0"
        summary = measure(tasks, args, mode)
        if summary is None:
            return 1
        summaries[mode] = summary
    if args.json:
        print(json.dumps(summaries if len(summaries) > 1 else summaries[args.modes[0]], indent=2))
    elif len(summaries) > 1:
        print("\nside by side (max CPU-s of the runs per variant):")
        print(f"{'task':20}" + "".join(f"{m:>12}" for m in summaries))
        for i, t in enumerate(tasks):
            print(f"{t.id:20}" + "".join(f"{m['variants'][i]['cpu_s_max']:12.2f}"
                                           for m in summaries.values()))
        print(f"{'mean':20}" + "".join(f"{s['mean_cpu_s']:12.3f}" for s in summaries.values()))
    return 0


def measure(tasks: list[Task], args: argparse.Namespace, mode: str) -> dict | None:
    rows = []
    for t in tasks:
        runs = []
        for _ in range(args.runs):
            kw = {"batch": False} if args.one_at_a_time else {}
            r = grade(t, t.reference_text, sim=args.sim, hidden=args.hidden, **kw)
            if r["verdict"] != "pass":
                print(f"{t.id}: the reference fix did not pass ({r['verdict']}: {r['reason']})",
                      file=sys.stderr)
                return None
            seeds = sum(len(s["results"]) for s in r["seeds"].values())
            runs.append((r["cpu_s"], r["wall_s"], seeds))
        cpu = max(c for c, _, _ in runs)
        rows.append({"task": t.id, "cpu_s_max": cpu, "cpu_s_runs": [c for c, _, _ in runs],
                     "wall_s_max": max(w for _, w, _ in runs), "seeds": runs[0][2],
                     "cpu_ms_per_seed": round(1000 * cpu / runs[0][2], 1)})
        if not args.json:
            print(f"{mode:9} {t.id:20} {cpu:6.2f} CPU-s  ({rows[-1]['cpu_ms_per_seed']} ms/seed incl. build, "
                  f"runs {[c for c, _, _ in runs]})", flush=True)
    mean = statistics.mean(r["cpu_s_max"] for r in rows)
    summary = {"sim": args.sim, "hidden": args.hidden, "runs": args.runs, "mode": mode,
               "one_at_a_time": args.one_at_a_time, "variants": rows,
               "mean_cpu_s": round(mean, 3), "min_cpu_s": min(r["cpu_s_max"] for r in rows),
               "max_cpu_s": max(r["cpu_s_max"] for r in rows)}
    if not args.json:
        print(f"{mode}: mean {summary['mean_cpu_s']} CPU-s per grade (min {summary['min_cpu_s']}, "
              f"max {summary['max_cpu_s']}), {args.sim}, 8+{args.hidden} seeds, max of {args.runs} runs")
    return summary

if __name__ == "__main__":
    raise SystemExit(main())
