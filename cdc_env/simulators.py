"""Simulator backends and the verdict channel.

A backend builds one scratch directory (testbench + harness + primitives + design) and runs one
seed at a time in it. The verdict of a seed comes only from the testbench: exactly one line
``CDCV <nonce> PASS|FAIL checks=<n> hash=<h> t=<ps> msg=<text>`` carrying this run's 64-bit nonce
(passed to the testbench alone, as a plusarg the design may not read) and a zero exit status.
Anything else -- no such line, two of them, a crash, a flood, a time-out -- is not a pass.

Simulator-specific code lives in one class per simulator; Icarus is here, Verilator in
verilator.py.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import paths
from .proc import Limits, ProcResult, run_bounded
from .seeds import SeedPlan
from .task import Task

BUILD_LIMITS = Limits(wall_s=300.0, cpu_s=300, mem_bytes=4 << 30, out_bytes=1 << 20)
SEED_LIMITS = Limits(wall_s=30.0, cpu_s=5, mem_bytes=1 << 30, out_bytes=1 << 20)  # a seed needs ~0.1 CPU-s
_VERDICT = re.compile(
    r"^CDCV (?P<nonce>[0-9a-f]{16}) (?P<v>PASS|FAIL) checks=(?P<checks>\d+) hash=(?P<hash>[0-9a-f]{16})"
    r" t=(?P<t>\d+) msg=(?P<msg>.*)$")


@dataclass
class SeedResult:
    seed: int
    status: str  # pass | fail | timeout | tool_error
    reason: str = ""
    checks: int = 0
    trace_hash: str = ""
    sim_time_ps: int = 0
    cpu_s: float = 0.0
    max_rss_kb: int = 0

    def key(self) -> tuple:
        """What must be identical between simulators and between replays."""
        return (self.seed, self.status, self.reason, self.checks, self.trace_hash, self.sim_time_ps)


@dataclass
class Build:
    status: str  # pass | compile_error | tool_error
    log: str
    workdir: Path
    cpu_s: float = 0.0
    wall_s: float = 0.0
    max_rss_kb: int = 0
    extra: dict = field(default_factory=dict)


def stage_sources(task: Task, design: dict[str, str], workdir: Path) -> list[Path]:
    """Write exactly what a build needs into ``workdir``; return the source files in order.

    ``design`` maps design file names (the editable file and the task's read-only sources) to
    their text. The testbench comes from the task folder and the harness and primitives from
    the package, never from the submission.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    for inc in paths.tb_includes():
        shutil.copyfile(inc, workdir / inc.name)
    shutil.copyfile(task.path(task.testbench), workdir / "tb_top.v")
    shutil.copyfile(paths.primitives_file(), workdir / "cdc_sync.v")
    files = [workdir / "tb_top.v", workdir / "cdc_sync.v"]
    for name, text in design.items():
        dest = workdir / "design" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        files.append(dest)
    return files


def scrub(text: str, workdir: Path) -> str:
    """Strip host paths from tool output (what an agent may see)."""
    text = text.replace(str(workdir) + "/", "").replace(str(workdir), ".")
    return text


def new_nonce() -> int:
    return secrets.randbits(64)


def parse_verdict(seed: int, proc: ProcResult, nonce: int) -> SeedResult:
    """Turn one simulator run into a seed result, trusting only the nonce-bearing line."""
    tag = f"{nonce:016x}"
    lines = [m for m in (_VERDICT.match(ln) for ln in proc.stdout.splitlines()) if m and m["nonce"] == tag]
    res = SeedResult(seed=seed, status="fail", cpu_s=proc.cpu_s, max_rss_kb=proc.max_rss_kb)
    if proc.timed_out:
        res.status, res.reason = "timeout", "simulation exceeded its time limit"
        return res
    if proc.output_exceeded:
        res.reason = "simulation output exceeded its limit"
        return res
    if "CDCV-SETUP-ERROR" in proc.stdout and not lines:
        res.status, res.reason = "tool_error", "testbench set-up error: " + proc.stdout.strip()[-200:]
        return res
    if len(lines) != 1:
        if len(lines) > 1:
            res.reason = "more than one verdict line"
        elif proc.returncode < 0:
            res.reason = f"simulator killed by {proc.signal_name} (resource limit or crash)"
        else:
            res.reason = f"simulation ended without a verdict (exit status {proc.returncode})"
        return res
    m = lines[0]
    res.checks, res.trace_hash, res.sim_time_ps = int(m["checks"]), m["hash"], int(m["t"])
    if proc.returncode != 0:
        res.reason = f"simulator exited with status {proc.returncode} after its verdict"
    elif m["v"] == "PASS" and res.checks > 0:
        res.status, res.reason = "pass", ""
    else:
        res.reason = m["msg"].strip() or "failed"
    return res


class Simulator:
    name = "?"

    def available(self) -> bool:
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def build(self, task: Task, design: dict[str, str], workdir: Path, *, sandbox: bool = True) -> Build:
        raise NotImplementedError

    def run_seed(self, build: Build, plan: SeedPlan, *, settle: bool, sandbox: bool = True,
                 limits: Limits = SEED_LIMITS) -> SeedResult:
        raise NotImplementedError


class Icarus(Simulator):
    """Icarus Verilog 11 (Debian ``iverilog``): compile once with iverilog, run vvp per seed."""

    name = "icarus"

    def available(self) -> bool:
        return shutil.which("iverilog") is not None and shutil.which("vvp") is not None

    def version(self) -> str:
        return _icarus_version()

    def build(self, task: Task, design: dict[str, str], workdir: Path, *, sandbox: bool = True) -> Build:
        files = stage_sources(task, design, workdir)
        argv = ["iverilog", "-g2012", "-I", ".", "-s", task.tb_top, "-o", "sim.vvp",
                *[str(f.relative_to(workdir)) for f in files]]
        proc = run_bounded(argv, workdir, BUILD_LIMITS, sandbox=sandbox, tag="build")
        log = scrub((proc.stdout + proc.stderr).strip(), workdir)
        if proc.timed_out or proc.output_exceeded:
            status = "compile_error"
            log = (log[-2000:] + "\nbuild exceeded its time or output limit").strip()
        elif proc.returncode == 127 and "cannot start" in proc.stderr:
            status = "tool_error"
        else:
            status = "pass" if proc.returncode == 0 and (workdir / "sim.vvp").is_file() else "compile_error"
        return Build(status, log, workdir, proc.cpu_s, proc.wall_s, proc.max_rss_kb)

    def run_seed(self, build: Build, plan: SeedPlan, *, settle: bool, sandbox: bool = True,
                 limits: Limits = SEED_LIMITS) -> SeedResult:
        nonce = new_nonce()
        argv = ["vvp", "-n", "sim.vvp", *plan.plusargs(settle=settle, nonce=nonce)]
        proc = run_bounded(argv, build.workdir, limits, sandbox=sandbox, tag=f"seed{plan.seed}")
        return parse_verdict(plan.seed, proc, nonce)


@lru_cache(maxsize=1)
def _icarus_version() -> str:
    try:
        out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else "unknown"


def get_simulator(name: str) -> Simulator:
    if name == "icarus":
        return Icarus()
    if name == "verilator":
        from .verilator import Verilator  # noqa: PLC0415 -- optional backend

        return Verilator()
    from .errors import CdcError

    raise CdcError(f"unknown simulator '{name}' (choose icarus or verilator)")
