"""The CPU cost of a grade: measuring it (``cdc-env cost``) and the cost model behind ``sim="auto"``.

**What is measured.** For each task, a grade of its reference fix in three set-ups, each building
its Verilator model (the per-patch model cache is off while measuring, so the figures are a first
grade's): Icarus at 8
visible + 32 hidden seeds, Verilator batched at 8 + 200 and Verilator one seed per process at
8 + 200; each the maximum of ``runs`` runs. The CPU of a grade is ``report["cpu_s"]``: user +
system seconds of the grading process itself while it grades plus every tool process it starts,
each tool run measured by its own cgroup (bubblewrap and everything inside it; see proc.py).
``report["accounting"]`` says how it was measured; on a host without usable cgroups the figures
come from ``wait4`` and the sandbox shell's ``times`` and are lower bounds (12-35% low on this
machine before cgroups). The Python interpreter's start-up and imports are not part of a grade
(a server or an environment imports once). The Verilator runtime is built once per Verilator
version and cached, so it is not part of a grade; its one-time cost is reported separately. Peak
memory is the largest cgroup peak of one tool run of a grade (resident memory plus the page cache
that run charged), from the same sandboxed grades.

**The model.** From those reports: Icarus build and per-seed cost, Verilator fixed cost (the model
build) and per-seed cost alone and batched. Batched stages also pay a reverse-order re-run and two
seeds alone (parity.py), and the model counts them. ``load_model`` reads, in order: the model
``cdc-env cost`` saved in the cache for this task (``$CDC_ENV_CACHE/cost/<task>.json``), the
measured model shipped with the package for this task (``cdc_env/cost_models.json``, written by
``cdc-env cost --ship``), and last ``DEFAULT_MODEL`` (one task's figures; the report's
``simulator.choice`` names which source was used).

**What ``sim="auto"`` may choose.** ``choose_simulator`` predicts each plan's cost (Icarus;
Verilator one at a time; Verilator batched, for a hidden stage of BATCH_MIN_SEEDS or more) and
picks the cheapest it may use. Verilator is a candidate only where a parity certificate of basis
``parity`` covers every seed of the grade -- one issued by ``cdc-env parity --certify`` or
``cdc-env cost``, after Icarus, Verilator alone and Verilator batched agreed on this exact patch.
A first grade (a new patch, what RL produces) therefore runs on Icarus under ``auto``, however
cheap Verilator is. The reason is that Verilator is two-state: X and Z do not exist there. The
harness fails a seed on Icarus when X or Z reaches a synchronizer input after reset, and a design
can pass or fail on an X it creates (a register never reset, a read of an undriven net, an
out-of-range table read). On Verilator that X is a 0 or a 1, so the same patch can pass there and
fail on Icarus. If ``auto`` picked Verilator from cost alone, the verdict would depend on a cost
figure, and a submission could buy a pass by making Icarus dearer. No static check we have tells
exactly which designs would see an X at run time, and the X fixtures that fail on both
simulators today prove nothing about the next one. A certificate of basis ``self-checked``
(issued by a batched grade's own checks) compares Verilator only with itself, so it does not
count here either. To grade first grades on Verilator, ask for it (``sim="verilator"``): the
verdict is then Verilator's, by choice, not by a cost figure.

Not covered: wall-clock time (grades run in parallel threads; CPU is what an operator pays for),
and failing submissions, which stop early and cost less.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from . import verilator
from .grade import grade
from .parity import BATCH_MIN_SEEDS, check_certificate, compare_design
from .seeds import hidden_seeds, visible_seeds
from .simulators import get_simulator
from .submission import allowlist
from .task import Task

SETUPS = (  # (label, simulator, hidden seeds, batching allowed)
    ("icarus_8+32", "icarus", 32, False),
    ("verilator_batched_8+200", "verilator", 200, True),
    ("verilator_alone_8+200", "verilator", 200, False),
)


@dataclass
class CostModel:
    """CPU-seconds of the parts of a grade that differ between plans (gate and allowlist do not)."""

    icarus_build: float
    icarus_seed: float
    verilator_fixed: float  # the model build, runtime cached
    verilator_seed_alone: float
    verilator_seed_batched: float  # one seed in one batched pass
    source: str

    def icarus(self, n_visible: int, n_hidden: int) -> float:
        return self.icarus_build + (n_visible + n_hidden) * self.icarus_seed

    def verilator_alone(self, n_visible: int, n_hidden: int) -> float:
        return self.verilator_fixed + (n_visible + n_hidden) * self.verilator_seed_alone

    def verilator_batched(self, n_visible: int, n_hidden: int) -> float:
        """Visible seeds alone (a stage under 24 seeds never batches); hidden batched twice + 2 alone."""
        return (self.verilator_fixed + (n_visible + 2) * self.verilator_seed_alone
                + 2 * n_hidden * self.verilator_seed_batched)

    def crossover(self, n_visible: int = 8, limit: int = 100_000) -> int | None:
        """The smallest hidden stage at which batched Verilator is cheaper than Icarus."""
        n = BATCH_MIN_SEEDS
        while n <= limit:
            if self.verilator_batched(n_visible, n) < self.icarus(n_visible, n):
                return n
            n += 1
        return None


# Measured on the 2-core development machine with one cgroup per tool run (`cdc-env cost
# handshake --runs 3`, 2026-12-01: the task with the cheapest Icarus seeds, so the figures favour
# Icarus), plus the design-alone elaboration check added after that run (0.02 CPU-s on Icarus,
# 0.09 on Verilator, measured apart); used for a task that has no measurement of its own in the
# cache. The figures before cgroup accounting (0.004 / 0.0253 / 1.08 / 0.0104 / 0.00068) missed
# what ran inside the sandbox.
DEFAULT_MODEL = CostModel(icarus_build=0.056, icarus_seed=0.0398, verilator_fixed=1.94,
                          verilator_seed_alone=0.0169, verilator_seed_batched=0.00069,
                          source="built-in figures (no measurement for this task in the cache)")


def model_path(task_id: str) -> Path:
    return verilator.cache_root() / "cost" / f"{task_id}.json"


SHIPPED_MODELS = Path(__file__).with_name("cost_models.json")


def _model_from(d: object) -> CostModel | None:
    names = {f.name for f in fields(CostModel)}
    if not isinstance(d, dict) or set(d) != names:
        return None
    try:
        return CostModel(**{k: (str(v) if k == "source" else float(v)) for k, v in d.items()})
    except (TypeError, ValueError):
        return None


def load_model(task: Task) -> CostModel:
    """This task's cost model: the cache's measurement, else the shipped one, else DEFAULT_MODEL."""
    try:
        m = _model_from(json.loads(model_path(task.id).read_text())["model"])
        if m is not None:
            return m
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        m = _model_from(json.loads(SHIPPED_MODELS.read_text())["models"][task.id])
        if m is not None:
            return CostModel(**{**asdict(m), "source": f"shipped with the package ({m.source})"})
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return DEFAULT_MODEL


def ship_models(rows: list[dict], path: Path = SHIPPED_MODELS) -> Path:
    """Merge the models of ``rows`` (from measure_task) into the shipped file; return its path."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {}
    models = doc.get("models", {}) if isinstance(doc, dict) else {}
    for r in rows:
        models[r["task"]] = r["model"]
    doc = {"about": "cdc-env cost --ship: measured cost models per task (cdc_env/cost.py)",
           "models": dict(sorted(models.items()))}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def choose_simulator(task: Task, submission: str | bytes, *, hidden: int | str | None, settle: bool,
                     batch: bool = True) -> tuple[str, str]:
    """``(simulator name, reason)`` for ``grade(sim="auto")``: the cheapest plan it may use.

    Verilator is a candidate only when a valid certificate of basis "parity" (Icarus compared)
    covers every seed the grade will run, so "auto" never gives a verdict Icarus would not give
    (module docstring: why a first grade stays on Icarus); batched Verilator only for a hidden
    stage of BATCH_MIN_SEEDS or more, and only when ``batch``.
    """
    vis = visible_seeds(task)
    hid = [] if not hidden else hidden_seeds(task, None if hidden == "all" else int(hidden))
    if not get_simulator("verilator").available():
        return "icarus", "auto: icarus (Verilator is not installed)"
    allowed = allowlist(task, submission)
    if not allowed.ok:
        return "icarus", "auto: icarus (the submission does not pass the allowlist; nothing is built)"
    cert = check_certificate(task, allowed.text, vis + hid, settle=settle)
    if not cert.ok:
        return "icarus", f"auto: icarus (Verilator needs a parity certificate: {cert.reason})"
    if cert.basis != "parity":
        return "icarus", ("auto: icarus (Verilator needs a certificate that compared it with Icarus; "
                          f"this patch's is {cert.basis}: Verilator has no X/Z)")
    m = load_model(task)
    plans = {"icarus": m.icarus(len(vis), len(hid)),
             "verilator one-at-a-time": m.verilator_alone(len(vis), len(hid))}
    if batch and len(hid) >= BATCH_MIN_SEEDS:
        plans["verilator batched"] = m.verilator_batched(len(vis), len(hid))
    best = min(plans, key=lambda k: plans[k])
    figures = ", ".join(f"{k} {v:.2f}" for k, v in sorted(plans.items(), key=lambda kv: kv[1]))
    return best.split()[0], f"auto: {best} (predicted CPU-s: {figures}; cost model: {m.source})"


def _stage_cpu(report: dict, name: str) -> float:
    return next((s.get("cpu_s", 0.0) for s in report["stages"] if s["name"] == name), 0.0)


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
                r = grade(task, ref, sim=sim, hidden=n, batch=batch, sandbox=sandbox)
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
    ic, vb, va = (reports[label] for label, *_ in SETUPS)
    model = fit_model(ic, vb, va, n_visible=len(visible_seeds(task)),
                      source=f"measured {time.strftime('%Y-%m-%d', time.gmtime())}, max of {runs} runs")
    fixed = model.verilator_fixed
    vis = len(visible_seeds(task))
    rss = max(r.get("peak_rss_kb", 0) for rs in reports.values() for r in rs)
    row.update(accounting=ic[-1].get("accounting", {}).get("method", "rusage"))
    row.update(fixed_cpu_s=round(fixed, 3), crossover=model.crossover(vis), peak_rss_mib=round(rss / 1024, 1),
               model=asdict(model), runtime_once_cpu_s=runtime_once_cpu())
    if save:
        p = model_path(task.id)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"task": task.id, "model": asdict(model), "row": row}, indent=1))
    return row


def fit_model(ic: list[dict], vb: list[dict], va: list[dict], *, n_visible: int, source: str) -> CostModel:
    """The cost model that reproduces the measured totals (maxima over runs) of the three set-ups.

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
    i_seed = (worst(ic, lambda r: r["cpu_s"]) - common - i_build) / (n_visible + 32)
    v_alone = (worst(va, lambda r: r["cpu_s"]) - common - v_fixed) / (n_visible + 200)
    v_batched = (worst(vb, lambda r: r["cpu_s"]) - common - v_fixed - (n_visible + 2) * v_alone) / 400
    return CostModel(icarus_build=round(i_build, 4), icarus_seed=round(max(i_seed, 0.0), 5),
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
