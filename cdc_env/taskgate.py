"""The variant gate of SPEC section 2, checked for every task before it ships.

For each task: the clean design and the reference fix must pass every hidden seed with late
settling on; the defective design must pass every hidden seed of the stated clock range (not the
ratio excursions, see cdc_env/sim/seeds.py) with settling off, be caught on a
share of them with it on (the task's ``[gate] defect_hidden_fail`` band, default 98-138 of 200),
and fail 3 to 5 of the 8 visible seeds.
"""

from __future__ import annotations

import tomllib

from .gate import synthesized
from .sim import get_simulator
from .sim.seeds import hidden_seeds, is_excursion, visible_seeds
from .sim.stage import Progress, build_and_run
from .task import Task

DEFAULT_BAND = (98, 138)
VISIBLE_BAND = (3, 5)


def hidden_band(task: Task) -> tuple[int, int]:
    m = tomllib.loads((task.dir / "task.toml").read_text())
    lo, hi = m.get("gate", {}).get("defect_hidden_fail", DEFAULT_BAND)
    return int(lo), int(hi)


def count_failures(task: Task, text: str, seeds: list[int], *, settle: bool, sim: str = "icarus",
                   progress: Progress | None = None, stage: str = "",
                   hidden_checks: bool | None = None) -> tuple[int, str]:
    """Build ``text`` as the editable file and run ``seeds``; return (failures, build status).

    hidden_checks: as in ``seeds.plan_seed``. The defect's band is measured with them off: the
    FIFO family's Gray check catches a binary pointer on every hidden seed by design.
    """
    b, res = build_and_run(get_simulator(sim), task, synthesized(task, text)[0], seeds, settle=settle,
                           progress=progress, stage=stage, hidden_checks=hidden_checks,
                           prefix="cdc-taskgate-")
    if b.status != "pass":
        return len(seeds), b.status
    if any(r.status == "tool_error" for r in res):
        return len(seeds), "tool_error"
    return sum(r.status != "pass" for r in res), "pass"


def gate_task(task: Task, *, sim: str = "icarus", progress: Progress | None = None) -> dict:
    hid, vis = hidden_seeds(task), visible_seeds(task)
    lo, hi = hidden_band(task)
    row: dict = {"task": task.id, "hidden": len(hid), "visible": len(vis), "band": [lo, hi]}
    row["clean_fail"], s1 = count_failures(task, task.clean_text, hid, settle=True, sim=sim,
                                           progress=progress, stage=f"{task.id} clean")
    row["reference_fail"], s2 = count_failures(task, task.reference_text, hid, settle=True, sim=sim,
                                               progress=progress, stage=f"{task.id} reference")
    row["defect_visible_fail"], s3 = count_failures(task, task.defective_text, vis, settle=True, sim=sim)
    row["defect_hidden_fail_settle"], s4 = count_failures(
        task, task.defective_text, hid, settle=True, sim=sim, progress=progress,
        stage=f"{task.id} defect+settle", hidden_checks=False)
    # Settling off, the defect must pass every hidden seed of the stated clock range ("ordinary
    # simulation never shows it"); a ratio excursion (seeds.is_excursion: outside that range, by
    # the bug report's "Clocking") may show an early announcement without late settling, which is
    # what it is there for.
    in_range = [s for s in hid if not is_excursion(task, s)]
    row["defect_hidden_fail_nosettle"], s5 = count_failures(
        task, task.defective_text, in_range, settle=False, sim=sim, progress=progress,
        stage=f"{task.id} defect-settle", hidden_checks=False)
    problems = [f"build/tool status {s}" for s in {s1, s2, s3, s4, s5} if s != "pass"]
    if row["clean_fail"]:
        problems.append("clean design fails hidden seeds")
    if row["reference_fail"]:
        problems.append("reference fix fails hidden seeds")
    if not VISIBLE_BAND[0] <= row["defect_visible_fail"] <= VISIBLE_BAND[1]:
        problems.append(f"defect fails {row['defect_visible_fail']}/8 visible seeds (need 3-5)")
    if not lo <= row["defect_hidden_fail_settle"] <= hi:
        problems.append(f"defect caught on {row['defect_hidden_fail_settle']} hidden seeds (need {lo}-{hi})")
    if row["defect_hidden_fail_nosettle"]:
        problems.append("defect fails without late settling")
    row["ok"] = not problems
    row["problems"] = problems
    return row


def suggest_visible(task: Task, *, fails: int = 4, total: int = 8, candidates: int = 48,
                    sim: str = "icarus") -> list[int]:
    """Visible seeds for a task: the first ``fails`` candidates (seeds 1, 2, ...) on which the
    defect fails with late settling, then the first passing ones, so that an agent sees a failure
    while it works but not only failures. Candidates never include hidden seeds."""
    hid = set(hidden_seeds(task))
    cands = [s for s in range(1, candidates + 1) if s not in hid]
    b, res = build_and_run(get_simulator(sim), task, synthesized(task, task.design("defective"))[0], cands,
                           settle=True,
                           prefix="cdc-visible-")
    if b.status != "pass":
        return []
    failing = [r.seed for r in res if r.status != "pass"][:fails]
    passing = [r.seed for r in res if r.status == "pass"][: total - len(failing)]
    return sorted(failing + passing)
