"""The cost model behind ``sim="auto"`` (measured by ``cdc-env cost``, cost.py).

**The model.** From the reports of those measured grades: Icarus build and per-seed cost,
Verilator fixed cost (the model build) and per-seed cost alone and batched. Batched stages also
pay a shuffled re-run of a sample of their seeds and two seeds alone (stage.run_stage_batched),
and the model counts them. ``load_model`` reads, in order: the model
``cdc-env cost`` saved in the cache for this task (``$CDC_ENV_CACHE/cost/<task>.json``), the
measured model shipped with the package for this task (``cdc_env/cost_models.json``, written by
``cdc-env cost --ship``), and last ``DEFAULT_MODEL`` (one task's figures; the report's
``simulator.choice`` names which source was used).

**What ``sim="auto"`` may choose.** ``choose_simulator`` predicts each plan's cost (Icarus;
Verilator one at a time; Verilator batched, for a hidden stage of BATCH_MIN_SEEDS or more) and
picks the cheapest it may use. Verilator is two-state: X and Z do not exist there, and a design
can pass or fail on an X (an unreset register, a division by zero, a read past a vector's end)
that Verilator resolves to 0 or 1 -- the same patch could pass there and fail on Icarus, and if
``auto`` ignored that, a submission could buy a pass by making Icarus dearer. So Verilator is a
candidate only under one of two licences: a parity certificate of basis ``parity`` covering every
seed of the grade (Icarus, Verilator alone and batched agreed on this exact patch), or -- for a
first grade -- the gate's proof that no X or Z can exist in the synthesized netlist after reset
(``gate/xsafe.py``; the argument is in docs/parity.md, "X safety"). ``grade`` chooses once before
the gate (certificate or Icarus) and again after it, with the netlist's X safety. A netlist the
check refuses stays on Icarus, whatever the cost; a certificate of basis ``self-checked`` compares
Verilator only with itself and is no licence. The plan itself comes from the measured cost model,
so ``auto`` follows the measurements (e.g. Icarus at 8+32 where its seeds are cheap, batched
Verilator at 8+200), never a hard-coded simulator.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..submission import allowlist
from ..task import Task
from . import get_simulator
from .base import cache_root
from .certs import check_certificate
from .seeds import hidden_for, visible_seeds
from .stage import BATCH_MIN_SEEDS, check_sample_size


@dataclass
class CostModel:
    """CPU-seconds of the parts of a grade that differ between plans (gate and allowlist do not)."""

    icarus_build: float
    icarus_seed: float
    verilator_fixed: float  # the model build, runtime cached
    verilator_seed_alone: float
    verilator_seed_batched: float  # one seed in one batched pass
    source: str
    # What an Icarus grade costs beyond its build that does not grow with its seeds (the stages'
    # set-up, reading their results). Fitted from two seed counts (cost.py): from one (8+32) that
    # part was spread over 40 seeds and Icarus was priced 20-50% high at 8+200. A saved model
    # without it (the one-count fit) is not read (_model_from): the shipped models have it.
    icarus_fixed: float = 0.0

    def icarus(self, n_visible: int, n_hidden: int) -> float:
        return self.icarus_build + self.icarus_fixed + (n_visible + n_hidden) * self.icarus_seed

    def verilator_alone(self, n_visible: int, n_hidden: int) -> float:
        return self.verilator_fixed + (n_visible + n_hidden) * self.verilator_seed_alone

    def verilator_batched(self, n_visible: int, n_hidden: int) -> float:
        """Visible seeds alone (a stage under 24 seeds never batches); hidden batched, its check
        sample (stage.check_sample_size) batched again, and 2 seeds alone."""
        return (self.verilator_fixed + (n_visible + 2) * self.verilator_seed_alone
                + (n_hidden + check_sample_size(n_hidden)) * self.verilator_seed_batched)

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
    return cache_root() / "cost" / f"{task_id}.json"


SHIPPED_MODELS = Path(__file__).parent.parent / "cost_models.json"


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
        # a no-bug control grades its task's designs: it shares the task's shipped model
        m = _model_from(json.loads(SHIPPED_MODELS.read_text())["models"][task.base or task.id])
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
    doc = {"about": "cdc-env cost --ship: measured cost models per task (cdc_env/sim/costmodel.py)",
           "models": dict(sorted(models.items()))}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def choose_simulator(task: Task, submission: str | bytes, *, hidden: int | str | None, settle: bool,
                     batch: bool = True, x_safe: tuple[bool, str] | None = None,
                     batch_needs_certificate: bool = False) -> tuple[str, str]:
    """``(simulator name, reason)`` for ``grade(sim="auto")``: the cheapest plan it may use.

    Verilator is a candidate only when a valid certificate of basis "parity" (Icarus compared)
    covers every seed the grade will run, or when ``x_safe`` (the gate's verdict on the
    synthesized netlist, gate/xsafe.py: ``(safe, why)``) says no X or Z can exist in the design
    after reset -- so "auto" never gives a verdict Icarus would not give because of X (module
    docstring); batched Verilator only for a hidden stage of BATCH_MIN_SEEDS or more, and only
    when ``batch`` (and, with ``batch_needs_certificate`` -- the "certified" batching policy --
    only under the certificate). Without a certificate and before the gate has run (``x_safe``
    None): Icarus.
    """
    vis = visible_seeds(task)
    hid = hidden_for(task, hidden)
    if not get_simulator("verilator").available():
        return "icarus", "auto: icarus (Verilator is not installed)"
    allowed = allowlist(task, submission)
    if not allowed.ok:
        return "icarus", "auto: icarus (the submission does not pass the allowlist; nothing is built)"
    cert = check_certificate(task, allowed.text, vis + hid, settle=settle)
    licence = "certificate"
    if not (cert.ok and cert.basis == "parity"):
        if x_safe is not None and x_safe[0]:
            licence = f"netlist X-safe: {x_safe[1]}"
        elif x_safe is not None:
            return "icarus", f"auto: icarus (the netlist is not X-safe: {x_safe[1]})"
        elif not cert.ok:
            return "icarus", f"auto: icarus (Verilator needs a parity certificate: {cert.reason})"
        else:
            return "icarus", ("auto: icarus (Verilator needs a certificate that compared it with Icarus; "
                              f"this patch's is {cert.basis}: Verilator has no X/Z)")
    m = load_model(task)
    plans = {"icarus": m.icarus(len(vis), len(hid)),
             "verilator one-at-a-time": m.verilator_alone(len(vis), len(hid))}
    if batch and len(hid) >= BATCH_MIN_SEEDS and (licence == "certificate" or not batch_needs_certificate):
        plans["verilator batched"] = m.verilator_batched(len(vis), len(hid))
    best = min(plans, key=lambda k: plans[k])
    figures = ", ".join(f"{k} {v:.2f}" for k, v in sorted(plans.items(), key=lambda kv: kv[1]))
    return best.split()[0], f"auto: {best} ({licence}; predicted CPU-s: {figures}; cost model: {m.source})"
