"""Choosing a variant's visible seeds.

``choose_visible`` writes the variant to a scratch folder and applies the project's rule
(``taskgate.suggest_visible``): run the candidate seeds 1, 2, 3, ... on the defective design
(Icarus, late settling on) and keep the first four that fail and the first four that pass. It is
deterministic: the simulation is, and so is the order. It does not run the full gate
(``taskgate.gate_task`` does) and never changes the design or the stimulus.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ..errors import CdcError
from ..task import load_task
from ..taskgate import suggest_visible
from .generator import FifoParams, write_task

CANDIDATES = 64


def choose_visible(p: FifoParams, *, sim: str = "icarus") -> FifoParams:
    """``p`` with its visible seeds chosen (see the module docstring)."""
    work = Path(tempfile.mkdtemp(prefix="cdc-fifo-cal-"))
    try:
        task = load_task(write_task(p, work / "task"))
        seeds = suggest_visible(task, fails=4, total=8, candidates=CANDIDATES, sim=sim)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(seeds) != 8:
        raise CdcError(f"{p.id}: no 4 failing and 4 passing seeds among 1..{CANDIDATES} "
                       f"(got {seeds}); the defect is caught too rarely or too often")
    return replace(p, visible=tuple(seeds))
