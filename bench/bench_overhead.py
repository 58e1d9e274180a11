"""Benchmark: harness overhead -- a seed stage's CPU under the grader against the bare simulator.

    python bench/bench_overhead.py [TASK ...] [--seeds 32] [--runs 3] [--json]

For each task (its reference fix) the design is built once per simulator (as a grade builds it,
in the sandbox). Then the same hidden seeds run

* **under the grader**: ``sim.stage.run_stage`` -- sandbox, cgroup, verdict pipe, parsing, and on
  Verilator the self-checked batched stage (batched + a shuffled re-run of a random sample of
  ``stage.check_sample_size`` seeds + two seeds alone) as
  well as one seed per process;
* **bare**: the simulator alone on the same build and the same plusargs, one process per seed,
  no sandbox, no Python in the loop beyond starting it (``vvp -n sim.vvp +...`` /
  ``./Vtb +...``; for the batched mode the same work as the self-checked stage: ``./Vtb
  --cdc-batch`` over the stage, then over a random sample of it, plus two seeds alone), CPU
  from the children's rusage. The verdict pipe is still given (without it the testbench stops
  at its first verdict), and every bare run's verdict is checked to pass.

The ratio grader / bare is the harness overhead (target <= 1.3). Minimum of ``--runs`` per side
(the least disturbed by other jobs on a shared machine). Not a test: it measures and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cdc_env.sim import get_simulator
from cdc_env.sim.base import new_nonce, parse_verdict, seed_plusargs, verdict_pipe
from cdc_env.sim.proc import ProcResult
from cdc_env.sim.seeds import hidden_seeds, plan_seed
from cdc_env.sim.stage import check_sample_size, run_stage
from cdc_env.task import load_task


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def bare_run(argv: list[str], workdir: Path, secrets_: list[str]) -> tuple[float, str]:
    with verdict_pipe(secrets_) as (fd, env):
        c0 = _children_cpu()
        out = subprocess.run(argv, cwd=workdir, env={**os.environ, **env}, pass_fds=(fd,),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
        return _children_cpu() - c0, out.stdout


def bare_stage(sim_name: str, build, task, seeds: list[int], *, batched: bool) -> float:
    sim = get_simulator(sim_name)
    plans = [plan_seed(task, s) for s in seeds]
    extra = [build.extra["tb_top"]] if sim_name == "icarus" else []
    total = 0.0
    if batched:  # the same work as the self-checked stage: the stage, its check sample, two seeds alone
        sample = random.sample(plans, check_sample_size(len(plans)))
        for order in (plans, sample):
            seed_file = build.workdir / ".bare.seeds"
            seed_file.write_text("".join(" ".join(seed_plusargs(p, True)) + "\n" for p in order))
            nonces = [f"{new_nonce():016x}" for _ in order]
            cpu, out = bare_run(["./Vtb", "--cdc-batch", seed_file.name], build.workdir, ["0" * 16, *nonces])
            passed = sum(f"CDCV {n} PASS" in out for n in nonces)
            if passed != len(order):
                raise RuntimeError(f"bare batch: {passed}/{len(order)} seeds passed")
            total += cpu
        plans = plans[:2]
    for p in plans:
        nonce = new_nonce()
        cpu, out = bare_run(sim.seed_argv(build, p, True), build.workdir, [f"{nonce:016x}", *extra])
        r = parse_verdict(p.seed, ProcResult(0, out, "", cpu, 0.0, 0, False, False), nonce)
        if r.status != "pass":
            raise RuntimeError(f"bare {sim_name} seed {p.seed}: {r.status} {r.reason}")
        total += cpu
    return total


def measure(task_id: str, n_seeds: int, runs: int) -> dict:
    task = load_task(task_id)
    seeds = hidden_seeds(task, n_seeds)
    row: dict = {"task": task_id, "seeds": n_seeds}
    work = Path(tempfile.mkdtemp(prefix="cdc-overhead-"))
    try:
        for sim_name in ("icarus", "verilator"):
            sim = get_simulator(sim_name)
            b = sim.build(task, {task.editable: task.reference_text,
                                 **{r: task.text(r) for r in task.sources}}, work / sim_name)
            if b.status != "pass":
                raise RuntimeError(f"{task_id} {sim_name}: build {b.status}")
            modes = [("alone", False)] + ([("batched", True)] if sim_name == "verilator" else [])
            for mode, batch in modes:
                graded, bare = [], []
                for _ in range(runs):
                    run = run_stage(sim, b, task, seeds, settle=True, design_text=task.reference_text,
                                    batch=batch, stage="hidden", policy="self-checked")
                    want = "batched" if batch else "one-at-a-time"
                    if run.mode != want or any(r.status != "pass" for r in run.results):
                        raise RuntimeError(f"{task_id} {sim_name}: stage ran {run.mode} ({run.reason})")
                    graded.append(run.cpu_s)
                    bare.append(bare_stage(sim_name, b, task, seeds, batched=batch))
                g, w = min(graded), min(bare)
                row[f"{sim_name}_{mode}"] = {"grader_cpu_s": round(g, 3), "bare_cpu_s": round(w, 3),
                                             "ratio": round(g / w, 2) if w else None}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*", default=["handshake", "fifo_01"])
    ap.add_argument("--seeds", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [measure(t, args.seeds, args.runs) for t in args.tasks]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        return
    print(f"{args.seeds} hidden seeds, minimum of {args.runs} runs")
    print("| task | mode | grader CPU-s | bare CPU-s | ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        for k, v in r.items():
            if isinstance(v, dict):
                print(f"| {r['task']} | {k.replace('_', ' ')} | {v['grader_cpu_s']:.3f} | "
                      f"{v['bare_cpu_s']:.3f} | {v['ratio']} |")


if __name__ == "__main__":
    main()
