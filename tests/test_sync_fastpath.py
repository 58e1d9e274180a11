"""cdc_sync_bus's fast path (trusted/hdl/cdc_sync.v) changes no result.

A destination edge with nothing to decide (no change of d_i since the previous edge, no deferred
bit, d_i clean, the name accepted) takes a fast path: the two-flop shift only. Every other edge
takes the full path. The fast path must be a pure shortcut: the same design and seed give the same
verdict line (status, checks, trace hash, end time, message) whether it is taken or every edge
takes the full path. Here both builds run the visible and hidden seeds of designs that exercise
late settling (passing and failing ones, one-bit and Gray-bus crossings, a pulse synchronizer,
reset synchronizers) and every verdict line must agree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cdc_env.gate import synthesized
from cdc_env.sim.base import seed_plusargs, verdict_pipe
from cdc_env.sim.icarus import VPI_NAME, Icarus
from cdc_env.sim.seeds import hidden_seeds, plan_seed, visible_seeds
from cdc_env.task import Task, load_task

from .conftest import needs_icarus

pytestmark = [needs_icarus]

FAST = "end else if (!slow) begin"  # the fast path's test in cdc_sync_bus's edge process
NONCE = "0123456789abcdef"


def _verdicts(task: Task, workdir: Path, seeds: list[int]) -> list[str]:
    """The verdict line of each seed, nonce removed."""
    out = []
    for s in seeds:
        argv = ["vvp", "-n", "sim.vvp", *seed_plusargs(plan_seed(task, s), True)]
        with verdict_pipe([NONCE, task.tb_top]) as (fd, env):
            p = subprocess.run(argv, cwd=workdir, env={**os.environ, **env}, pass_fds=(fd,),
                               capture_output=True, text=True, timeout=600)
        lines = [ln.replace(NONCE + " ", "") for ln in (p.stdout + p.stderr).splitlines() if "CDCV" in ln]
        out.append(f"{s}: {lines}")
    return out


def _full_path_build(task: Task, fast: Path, vpi: str, workdir: Path) -> None:
    """A copy of the build in ``fast`` whose synchronizers take the full path on every edge."""
    shutil.copytree(fast, workdir)
    sync = workdir / "cdc_sync.v"
    text = sync.read_text()
    assert text.count(FAST) == 1, "cdc_sync_bus's fast path moved: update this test"
    sync.write_text(text.replace(FAST, "end else if (1'b0) begin"))
    (workdir / "sim.vvp").unlink()
    srcs = ["tb_top.v", "cdc_sync.v", "cdc_reset.v",
            *sorted(str(p.relative_to(workdir)) for p in (workdir / "design").glob("*.v"))]
    subprocess.run(["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-L", vpi, "-m", VPI_NAME,
                    "-s", task.tb_top, "-o", "sim.vvp", *srcs],
                   cwd=workdir, check=True, capture_output=True, timeout=600)


@pytest.mark.parametrize("task_id,kind", [
    ("handshake", "reference"), ("handshake", "buggy"),
    ("event", "reference"), ("event", "buggy"),
    ("fifo_01", "reference"), ("fifo_01", "buggy"),
    ("rst_01", "reference"),
    ("rc_01", "reference"), ("rc_01", "buggy"),  # bits of one state through separate synchronizers
])
def test_fast_path_changes_no_verdict(task_id: str, kind: str, tmp_path: Path) -> None:
    task = load_task(task_id)
    path = task.path(task.editable) if kind == "buggy" else task.path(f"reference/{task.editable}")
    design, _ = synthesized(task, Path(path).read_text())
    fast = tmp_path / "fast"
    b = Icarus().build(task, design, fast, sandbox=False, standalone=True)
    assert b.status == "pass", b.log
    full = tmp_path / "full"
    _full_path_build(task, fast, b.extra["vpi"], full)
    seeds = list(visible_seeds(task)) + hidden_seeds(task, 8)
    a, b2 = _verdicts(task, fast, seeds), _verdicts(task, full, seeds)
    assert all("CDCV" in ln for ln in a), a
    assert a == b2
