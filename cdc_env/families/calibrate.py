"""Calibrating a drawn variant: its visible seeds, its stimulus, its gate (any family).

``choose_visible`` writes the variant to a scratch folder and applies the project's rule
(``taskgate.suggest_visible``): run the candidate seeds 1, 2, 3, ... on the defective design
(Icarus, late settling on) and keep the first four that fail and the first four that pass. It is
deterministic: the simulation is, and so is the order. It never changes the design or the
stimulus.

``calibrate`` walks a family's search (``Family.search``) for each of a few parameter draws
(``ALT_DRAWS``: draw 0 first, then fresh draws from the same key and label, for a drawn design the
stimulus knobs cannot bring into the band) and keeps the first step whose visible seeds can be
chosen, whose defect is caught within the band on the hidden seeds and (with ``gate``) whose full
variant gate (``taskgate.gate_task``) holds. Held-out minting and the catalogues both use it, so
a step (draw, search index) recorded with an entry re-makes the same texts.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

from ..errors import CdcError
from . import Draw, Family, Region, write_files

CANDIDATES = 64
ALT_DRAWS = 3  # parameter draws tried (each with the whole search) before a variant gives up
Step = tuple[int, int]  # (parameter draw, index into the family's search)


def choose_visible_seeds(files: dict[str, str], vid: str, *, sim: str = "icarus") -> tuple[int, ...]:
    """The visible seeds of a generated task folder (see the module docstring)."""
    from ..task import load_task
    from ..taskgate import suggest_visible

    work = Path(tempfile.mkdtemp(prefix="cdc-cal-"))
    try:
        task = load_task(write_files(files, work / "task"))
        seeds = suggest_visible(task, fails=4, total=8, candidates=CANDIDATES, sim=sim)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(seeds) != 8:
        raise CdcError(f"{vid}: no 4 failing and 4 passing seeds among 1..{CANDIDATES} "
                       f"(got {seeds}); the defect is caught too rarely or too often")
    return tuple(seeds)


def choose_visible(fam: Family, p: Any, *, sim: str = "icarus") -> Any:
    """``p`` with its visible seeds chosen."""
    return replace(p, visible=choose_visible_seeds(fam.generate(p), p.id, sim=sim))


def drawn(fam: Family, key: bytes, label: str, region: Region, vid: str, k: int) -> Any:
    """Parameter draw ``k`` of a variant: ``fam.draw`` on the stream ``label`` (``label/alt<k>``
    for k > 0)."""
    return fam.draw(Draw(key, label if k == 0 else f"{label}/alt{k}"), region, vid)


def at_step(fam: Family, key: bytes, label: str, region: Region, vid: str, step: Step) -> Any:
    """The parameters of a recorded step (visible seeds not chosen)."""
    k, j = step
    got = next(islice(fam.search(drawn(fam, key, label, region, vid, k)), j, None), None)
    if got is None:
        raise CdcError(f"{vid}: the family's search has no step {j} (the generator changed?)")
    return got


def gate_row(fam: Family, q: Any, *, gate: bool, sim: str = "icarus",
             progress: Callable[[str], None] | None = None) -> dict:
    """The band check of ``q`` (visible seeds chosen) and, with ``gate``, its full variant gate."""
    from ..sim.seeds import hidden_seeds
    from ..task import load_task
    from ..taskgate import count_failures, gate_task, hidden_band

    work = Path(tempfile.mkdtemp(prefix="cdc-cal-gate-"))
    try:
        task = load_task(write_files(fam.generate(q), work / q.id))
        lo, hi = hidden_band(task)
        caught, status = count_failures(task, task.defective_text, hidden_seeds(task), settle=True,
                                        sim=sim, hidden_checks=False)
        ok = lo <= caught <= hi and status == "pass"
        if progress:
            progress(f"  {q.id}: defect caught on {caught}/200 (band {lo}-{hi})")
        row = {"task": q.id, "ok": ok, "defect_hidden_fail_settle": caught,
               "problems": [] if ok else [f"defect caught on {caught} hidden seeds (need {lo}-{hi})"]}
        if ok and gate:
            row = gate_task(task, sim=sim)
            row["sim"] = sim
            if progress:
                progress(f"  {q.id} gate: {'ok' if row['ok'] else '; '.join(row['problems'])}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return row


def calibrate(fam: Family, key: bytes, label: str, region: Region, vid: str, *, gate: bool = True,
              sim: str = "icarus", progress: Callable[[str], None] | None = None,
              steps: list[Step] | None = None) -> tuple[Any, dict, Step] | None:
    """The first step (see the module docstring) that holds: (params, gate row, step), or None."""
    todo = steps if steps is not None else [
        (k, j) for k in range(ALT_DRAWS) for j in range(len(list(fam.search(
            drawn(fam, key, label, region, vid, k)))))]
    for step in todo:
        p = at_step(fam, key, label, region, vid, step)
        if progress:
            progress(f"  {vid} draw {step[0]} search step {step[1]}")
        try:
            q = choose_visible(fam, p, sim=sim)
        except CdcError:
            continue
        row = gate_row(fam, q, gate=gate, sim=sim, progress=progress)
        if row["ok"]:
            return q, row, step
    return None
