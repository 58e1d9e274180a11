"""The CPU cost of a grade: measuring it (``cdc-env cost``), a measuring tool above the grade.

**What is measured.** For each task, a grade of its reference fix in three set-ups, each building
its Verilator model (the per-patch model cache is off while measuring, so the figures are a first
grade's): Icarus at 8
visible + 32 hidden seeds, Verilator batched at 8 + 200 and Verilator one seed per process at
8 + 200; each the maximum of ``runs`` runs. The CPU of a grade is ``report["cpu_s"]``: user +
system seconds of the grading process itself while it grades plus every tool process it starts,
each tool run measured by its own cgroup (bubblewrap and everything inside it; see sim/proc.py).
The grading process's own part is the CPU time of the grade's threads only (sim/proc.py
``cpu_meter``), so grades running concurrently in one process do not charge each other.
``report["accounting"]`` says how it was measured; on a host without usable cgroups the figures
come from ``wait4`` and the sandbox shell's ``times`` and are lower bounds (12-35% low on this
machine before cgroups). The Python interpreter's start-up and imports are not part of a grade
(a server or an environment imports once). The Verilator runtime is built once per Verilator
version and cached, so it is not part of a grade; its one-time cost is reported separately. Peak
memory is the largest cgroup peak of one tool run of a grade (resident memory plus the page cache
that run charged), from the same sandboxed grades.

The model fitted from these figures and ``sim="auto"``'s choice live in sim/costmodel.py.

Not covered: wall-clock time (grades run in parallel threads; CPU is what an operator pays for),
and failing submissions, which stop early and cost less.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict

from . import paths
from .grade import GradeOptions, grade
from .parity import compare_design
from .report import Report
from .sim import verilator
from .sim.certs import check_certificate
from .sim.costmodel import CostModel, model_path
from .sim.seeds import hidden_seeds, visible_seeds
from .sim.stage import check_sample_size
from .task import Task

SETUPS = (  # (label, simulator, hidden seeds, batching allowed)
    ("icarus_8+32", "icarus", 32, False),
    ("icarus_8+200", "icarus", 200, False),  # two seed counts: the per-seed figure and the fixed part
    ("verilator_batched_8+200", "verilator", 200, True),
    ("verilator_alone_8+200", "verilator", 200, False),
)


def _stage_cpu(report: dict, name: str) -> float:
    stage = Report.from_dict(report).stage(name)
    return (stage.cpu_s or 0.0) if stage is not None else 0.0


def measure_task(task: Task, *, runs: int = 3, sandbox: bool = True, save: bool = True,
                 progress=None) -> dict:
    """Measure the three set-ups for ``task``'s reference fix; return one table row (and save the model)."""
    ref = task.reference_text
    seeds = visible_seeds(task) + hidden_seeds(task)
    # The batched set-up needs a certificate for the reference fix (issued once; not counted).
    parity_ok = check_certificate(task, ref, seeds, settle=True).ok or compare_design(
        task, ref, seeds, settle=True, design="reference", sandbox=sandbox, certify=True).ok
    row: dict = {"task": task.id, "family": task.family, "runs": runs, "parity_ok": parity_ok,
                 "verilator": verilator.verilator_version(), "setups": {}}
    reports: dict[str, list[dict]] = {}
    # Every measured grade builds its model (the per-patch model cache is off while measuring):
    # the model predicts what a grade of a patch costs, not a re-grade of the reference fix.
    cache_was = os.environ.get(verilator.MODEL_CACHE_ENV)
    os.environ[verilator.MODEL_CACHE_ENV] = "0"
    try:
        for label, sim, n, batch in SETUPS:
            reports[label] = []
            for _ in range(runs):
                if progress:
                    progress(f"{task.id} {label}", len(reports[label]), runs)
                r = grade(task, ref, GradeOptions(sim=sim, hidden=n, batch=batch, sandbox=sandbox))
                if r["verdict"] != "pass":
                    raise RuntimeError(f"{task.id}: the reference fix did not pass ({label}): {r['reason']}")
                reports[label].append(r)
            rs = reports[label]
            row["setups"][label] = {
                "cpu_s": round(max(r["cpu_s"] for r in rs), 3),
                "cpu_s_runs": [r["cpu_s"] for r in rs],
                "hidden_mode": rs[-1]["seeds"]["hidden"].get("mode", ""),
                "hidden_mode_reason": rs[-1]["seeds"]["hidden"].get("mode_reason", ""),
            }
    finally:
        if cache_was is None:
            os.environ.pop(verilator.MODEL_CACHE_ENV, None)
        else:
            os.environ[verilator.MODEL_CACHE_ENV] = cache_was
    ic, ic200, vb, va = (reports[label] for label, *_ in SETUPS)
    model = fit_model(ic, vb, va, ic200=ic200, n_visible=len(visible_seeds(task)),
                      source=f"measured {time.strftime('%Y-%m-%d', time.gmtime())}, max of {runs} runs")
    fixed = model.verilator_fixed
    vis = len(visible_seeds(task))
    rss = max(r.get("peak_rss_kb", 0) for rs in reports.values() for r in rs)
    row.update(accounting=ic[-1].get("accounting", {}).get("method", "rusage"))
    row.update(fixed_cpu_s=round(fixed, 3), crossover=model.crossover(vis), peak_rss_mib=round(rss / 1024, 1),
               model=asdict(model), runtime_once_cpu_s=runtime_once_cpu())
    if save:
        # the shared cache: a grade choosing its simulator may read it meanwhile
        doc = {"task": task.id, "model": asdict(model), "row": row}
        paths.write_atomic(model_path(task.id), json.dumps(doc, indent=1))
    return row


def fit_model(ic: list[dict], vb: list[dict], va: list[dict], *, n_visible: int, source: str,
              ic200: list[dict] | None = None) -> CostModel:
    """The cost model that reproduces the measured totals (maxima over runs) of the set-ups.

    Icarus at two seed counts (``ic`` at 8+32, ``ic200`` at 8+200) gives a line: its slope is the
    per-seed figure, its intercept beyond the build the fixed part. Without ``ic200`` the fixed
    part is taken as 0 (every non-build CPU-s per seed), which prices Icarus high at 8+200.

    Per-seed figures are taken from whole-grade totals, not from the seed stages alone, so they
    include what a seed costs the grading process (starting its process, reading its output).
    The part of a grade common to every plan is taken to be the static gate's CPU; the grading
    process's remaining overhead is small and lands in the per-seed figures.
    """
    def worst(rs: list[dict], key) -> float:
        return max(key(r) for r in rs)

    common = worst(ic + vb + va, lambda r: _stage_cpu(r, "gate"))
    i_build = worst(ic, lambda r: _stage_cpu(r, "build"))
    v_fixed = worst(vb + va, lambda r: _stage_cpu(r, "build"))
    i32 = worst(ic, lambda r: r["cpu_s"]) - common - i_build
    i_seed, i_fixed = i32 / (n_visible + 32), 0.0
    if ic200:
        i200 = worst(ic200, lambda r: r["cpu_s"]) - common - worst(ic200, lambda r: _stage_cpu(r, "build"))
        i_seed = max((i200 - i32) / (200 - 32), 0.0)
        i_fixed = max(i32 - (n_visible + 32) * i_seed, 0.0)
    v_alone = (worst(va, lambda r: r["cpu_s"]) - common - v_fixed) / (n_visible + 200)
    v_batched = ((worst(vb, lambda r: r["cpu_s"]) - common - v_fixed - (n_visible + 2) * v_alone)
                 / (200 + check_sample_size(200)))  # the batch and its check sample
    return CostModel(icarus_build=round(i_build, 4), icarus_fixed=round(i_fixed, 4),
                     icarus_seed=round(max(i_seed, 0.0), 5),
                     verilator_fixed=round(v_fixed, 4), verilator_seed_alone=round(max(v_alone, 0.0), 5),
                     verilator_seed_batched=round(max(v_batched, 0.0), 6), source=source)


def runtime_once_cpu() -> float | None:
    """CPU-seconds the cached Verilator runtime took to build, as recorded when it was built."""
    try:
        rt = verilator.runtime()
        return float((rt.dir / "cpu_s").read_text())
    except (OSError, ValueError, RuntimeError):
        return None


def format_table(rows: list[dict]) -> str:
    out = ["| task | Icarus 8+32 | Verilator batched 8+200 | Verilator alone 8+200 | fixed (model build) "
           "| crossover (hidden seeds) | peak RSS MiB | hidden mode (batched set-up) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["setups"]
        out.append(f"| {r['task']} | {s['icarus_8+32']['cpu_s']:.2f} | "
                   f"{s['verilator_batched_8+200']['cpu_s']:.2f} | "
                   f"{s['verilator_alone_8+200']['cpu_s']:.2f} | {r['fixed_cpu_s']:.2f} | "
                   f"{r['crossover'] if r['crossover'] is not None else 'never'} | {r['peak_rss_mib']} | "
                   f"{s['verilator_batched_8+200']['hidden_mode']} |")
    return "\n".join(out)
