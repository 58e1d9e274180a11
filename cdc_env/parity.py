"""Parity between simulators and between run modes: ``cdc-env parity``, a measuring tool above
the grade.

``compare_design`` runs a design's seeds on Icarus one process per seed, Verilator one process
per seed, and Verilator batched, and compares every seed on ``SeedResult.key()`` (seed, status,
reason, checks, trace hash, sim time). ``cdc-env parity`` prints it as a table; a row is a
(task, design, settling mode). With ``certify`` and full agreement it issues a parity
certificate (sim/certs.py), which lets ``sim="auto"`` choose Verilator and the ``certified``
batching policy batch (sim/stage.py ``run_stage_batched``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .gate import synthesized
from .sim import get_simulator
from .sim.base import BatchIncomplete
from .sim.certs import brief, issue_certificate
from .sim.seeds import hidden_seeds, plan_seed, visible_seeds
from .sim.stage import Progress, run_seeds, scratch_build
from .task import Task


@dataclass
class ParityRow:
    task: str
    design: str
    settle: bool
    seeds: int
    identical: int  # seeds where all three runs agree
    icarus_vs_verilator: list[str]  # descriptions of seeds that differ
    batched_vs_single: list[str]
    icarus_fail: int  # seeds that did not pass on Icarus (so the row shows fail paths too)
    cpu_s: dict[str, float]
    build: str = "pass"
    certificate: str = ""

    @property
    def ok(self) -> bool:
        return self.build == "pass" and self.identical == self.seeds

    def as_dict(self) -> dict:
        return {"task": self.task, "design": self.design, "settle": self.settle, "seeds": self.seeds,
                "identical": self.identical, "icarus_vs_verilator": self.icarus_vs_verilator,
                "batched_vs_single": self.batched_vs_single, "icarus_fail": self.icarus_fail,
                "cpu_s": self.cpu_s, "build": self.build, "certificate": self.certificate, "ok": self.ok}


DESIGNS = ("reference", "defective", "clean")


def stage_seed_list(task: Task, which: str | int | list[int]) -> list[int]:
    """'all' (visible + every hidden seed), 'visible', an int N (visible + first N hidden), or a list."""
    if isinstance(which, list):
        return which
    if which == "all":
        return visible_seeds(task) + hidden_seeds(task)
    if which == "visible":
        return visible_seeds(task)
    return visible_seeds(task) + hidden_seeds(task, int(which))


def compare_design(task: Task, text: str, seeds: list[int], *, settle: bool, design: str = "patch",
                   sandbox: bool = True, jobs: int | None = None, certify: bool = False,
                   progress: Progress | None = None) -> ParityRow:
    """Run ``seeds`` on Icarus, Verilator alone and Verilator batched; compare every seed.

    With ``certify`` and full agreement, issue a certificate for these seeds.
    """
    icarus, vl = get_simulator("icarus"), get_simulator("verilator")
    files = synthesized(task, text)[0]  # what a grade simulates: the netlist, never the text
    row = ParityRow(task.id, design, settle, len(seeds), 0, [], [], 0, {})
    with scratch_build(icarus, task, files, sandbox=sandbox, prefix="cdc-parity-", netlist=True) as bi, \
            scratch_build(vl, task, files, sandbox=sandbox, prefix="cdc-parity-", netlist=True) as bv:
        row.cpu_s = {"icarus_build": round(bi.cpu_s, 3), "verilator_build": round(bv.cpu_s, 3)}
        if bi.status != bv.status or bi.status != "pass":
            row.build = f"icarus {bi.status}, verilator {bv.status}"
            return row
        tag = f"{task.id} {design} settle={'on' if settle else 'off'}"
        ri = run_seeds(icarus, bi, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                       progress=progress, stage=f"{tag} icarus")
        rv = run_seeds(vl, bv, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                       progress=progress, stage=f"{tag} verilator")
        try:
            rb = vl.run_batch(bv, [plan_seed(task, s) for s in seeds], settle=settle, sandbox=sandbox)
            batched, batch_cpu = rb.results, rb.cpu_s
        except BatchIncomplete as exc:
            batched, batch_cpu = [], 0.0
            row.batched_vs_single.append(f"batch incomplete: {exc}")
        row.cpu_s.update(icarus=round(sum(r.cpu_s for r in ri), 3),
                         verilator=round(sum(r.cpu_s for r in rv), 3), verilator_batched=round(batch_cpu, 3))
        kv = {r.seed: r.key() for r in rv}
        kb = {r.seed: r.key() for r in batched}
        for r in ri:
            same_sim = kv.get(r.seed) == r.key()
            same_batch = kb.get(r.seed) == kv.get(r.seed)
            if not same_sim:
                row.icarus_vs_verilator.append(
                    f"seed {r.seed}: icarus {brief(r.key())} / verilator "
                    f"{brief(kv[r.seed]) if r.seed in kv else 'nothing'}")
            if batched and not same_batch:
                row.batched_vs_single.append(
                    f"seed {r.seed}: batched {brief(kb[r.seed]) if r.seed in kb else 'nothing'}"
                    f" / alone {brief(kv[r.seed])}")
            row.identical += same_sim and same_batch and bool(batched)
            row.icarus_fail += r.status != "pass"
        if certify and row.ok:
            row.certificate = issue_certificate(task, text, ri, settle=settle).name
        return row
