"""The base of every simulator backend: the Simulator interface, builds and seed results, limits,
and the helpers every backend uses (staging sources, scrubbing messages, the verdict channel,
the self-contained elaboration check, cached trusted binaries).

A backend builds one scratch directory (testbench + harness + primitives + design) and runs one
seed at a time in it. The verdict of a seed comes only from the testbench: exactly one line
``CDCV <nonce> PASS|FAIL checks=<n> hash=<h> t=<ps> msg=<text>`` carrying this run's 64-bit nonce
and a zero exit status. Anything else -- no such line, two of them, a crash, a flood, a time-out
-- is not a pass.

The verdict channel holds without the static gate: the nonce goes into a pipe (``CDC_VERDICT_FD``)
read by trusted code outside the Verilog before any Verilog runs -- Icarus: the VPI module
trusted/icarus/cdc_verdict.c; Verilator: the C++ main -- which prints the line when the
testbench's emit_verdict calls it, and refuses a call from anywhere but the testbench. The nonce
is never a plusarg, an environment variable or a file, and tools run without /proc.

Simulator-specific code lives in one module per backend (icarus.py, verilator.py), registered in
``cdc_env.sim`` with its capability flags.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from .. import paths
from ..task import Task
from .proc import Limits, ProcResult, run_bounded
from .seeds import SeedPlan

# A build may write large compiled outputs (file_bytes) but prints at most out_bytes.
BUILD_LIMITS = Limits(wall_s=300.0, cpu_s=300, mem_bytes=4 << 30, out_bytes=1 << 20, file_bytes=1 << 30,
                      pids=64, tmp_bytes=1 << 30)
SEED_LIMITS = Limits(wall_s=30.0, cpu_s=5, mem_bytes=1 << 30, out_bytes=1 << 20, pids=32)  # ~0.1 CPU-s a seed
VERDICT_FD_ENV = "CDC_VERDICT_FD"
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
    forked: bool = False  # forked at time 0 from the stage's one simulator process (stage.py, zygote)

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
    files = [workdir / "tb_top.v"]
    for prim in paths.primitive_files():
        shutil.copyfile(prim, workdir / prim.name)
        files.append(workdir / prim.name)
    for name, text in design.items():
        dest = workdir / "design" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        files.append(dest)
    return files


def scrub(text: str, workdir: Path, editable: str | None = None) -> str:
    """Strip host paths from tool output (what an agent may see) and, given the editable file's
    name, every quoted source line and caret line of a message about any other file."""
    text = text.replace(str(workdir) + "/", "").replace(str(workdir), ".")
    return strip_quoted(text, editable) if editable is not None else text


_MSG_FILE = re.compile(r"(?:^|\s)(?P<file>[\w./-]+\.(?:s?v|vh|svh|cpp|h)):\d+")
_QUOTED = re.compile(r"^\s*(?:\d+\s*)?\|")  # Verilator's "   12 | text" and "      |  ^~~"


def strip_quoted(log: str, editable: str) -> str:
    """Drop the quoted source and caret lines of every message that is not about ``editable``
    (the testbench, the harness and the primitives must not be shown to the agent)."""
    keep = ("design/" + editable, editable)
    out, current_ok = [], True
    for line in log.splitlines():
        if _QUOTED.match(line):
            if current_ok:
                out.append(line)
            continue
        m = _MSG_FILE.search(line)
        if m:
            current_ok = m["file"] in keep
        out.append(line)
    return "\n".join(out)


def build_failure(proc: ProcResult, log: str) -> tuple[str, str] | None:
    """(status, log) when a build step did not complete for a reason other than the design's
    text: the sandbox failed (tool_error) or a bound was hit (compile_error, saying which)."""
    if proc.sandbox_error:
        return "tool_error", "the sandbox failed: " + proc.sandbox_error
    if proc.returncode == 127 and "cannot start" in proc.stderr:
        return "tool_error", log
    if proc.timed_out or proc.output_exceeded or proc.limit:
        what = ("time" if proc.timed_out else "output" if proc.output_exceeded
                else "memory" if proc.limit == "memory" else "process-count")
        return "compile_error", (log[-2000:] + f"\nbuild exceeded its {what} limit").strip()
    return None


SELF_CONTAINED = ("the design refers to something outside itself (it does not elaborate on its own, "
                  "with the task's top module as the only top): a design may use only its own ports, "
                  "signals and the provided primitives")


def self_contained(argv: list[str], workdir: Path, task: Task, *, sandbox: bool,
                   ro_paths: tuple[Path, ...] = (),
                   env: dict[str, str] | None = None) -> tuple[tuple[str, str] | None, ProcResult]:
    """Elaborate the design alone (primitives + design files, the task's top as the only top).

    Run after the full build succeeded (so a plain error gets the compiler's own messages). A
    design that names anything of the testbench (an upward hierarchical reference, a call of its
    tasks, a defparam or bind into it) does not elaborate alone, whatever the static gate says:
    ((status, log) of the refusal or None when the design stands on its own, the run).
    """
    design = sorted(str(p.relative_to(workdir)) for p in (workdir / "design").rglob("*") if p.is_file())
    files = [*(p.name for p in paths.primitive_files()), *design]
    proc = run_bounded([*argv, *files], workdir, BUILD_LIMITS, sandbox=sandbox, ro_paths=ro_paths,
                       env={**os.environ, **(env or {})}, sandbox_env=env, tag="alone")
    log = scrub((proc.stdout + proc.stderr).strip(), workdir, task.editable)
    failed = build_failure(proc, log)
    if failed:
        return failed, proc
    if proc.returncode != 0:
        return ("compile_error", (SELF_CONTAINED + "\n" + log[-3000:]).strip()), proc
    return None, proc


def seed_plusargs(plan: SeedPlan, settle: bool) -> list[str]:
    """A seed's plusargs, without the nonce (the nonce goes only to the verdict channel)."""
    return [a for a in plan.plusargs(settle=settle, nonce=0) if not a.startswith("+cdc_nonce=")]


@contextmanager
def verdict_pipe(lines: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """A pipe holding ``lines`` for the verdict channel: (read descriptor, environment to pass)."""
    r, w = os.pipe()
    try:
        os.write(w, "".join(ln + "\n" for ln in lines).encode())
    finally:
        os.close(w)
    try:
        yield r, {VERDICT_FD_ENV: str(r)}
    finally:
        os.close(r)


def run_with_nonce(argv: list[str], workdir: Path, limits: Limits, secrets_: list[str], *, sandbox: bool,
                   ro_paths: tuple[Path, ...] = (), tag: str) -> ProcResult:
    """A simulation: run_bounded with ``secrets_`` on the verdict pipe, the build folder read-only
    (no seed can alter what later seeds run) and a /tmp of its own."""
    with verdict_pipe(secrets_) as (fd, env):
        return run_bounded(argv, workdir, limits, env={**os.environ, **env}, sandbox=sandbox,
                           ro_paths=ro_paths, sandbox_env=env, tag=tag, pass_fds=(fd,), writable=False)


def new_nonce() -> int:
    return secrets.randbits(64)


# What the stage runner's child writes first on the seed's stderr when the simulator could not be
# started (trusted/stage/cdc_seed_runner.c).
RUNNER_FAILED = "CDC-RUNNER: "


def parse_verdict(seed: int, proc: ProcResult, nonce: int) -> SeedResult:
    """Turn one simulator run into a seed result, trusting only the nonce-bearing line."""
    tag = f"{nonce:016x}"
    lines = [m for m in (_VERDICT.match(ln) for ln in proc.stdout.splitlines()) if m and m["nonce"] == tag]
    res = SeedResult(seed=seed, status="fail", cpu_s=proc.cpu_s, max_rss_kb=proc.max_rss_kb)
    if proc.sandbox_error:
        res.status, res.reason = "tool_error", "the sandbox failed: " + proc.sandbox_error[:200]
        return res
    if proc.timed_out:
        res.status, res.reason = "timeout", "simulation exceeded its time limit"
        return res
    if proc.output_exceeded:
        res.reason = "simulation output exceeded its limit"
        return res
    if proc.returncode in (126, 127) and proc.stderr.startswith(RUNNER_FAILED) and not lines:
        # the stage runner's child failed before the simulator ran (trusted/stage): nothing judged
        res.status, res.reason = "tool_error", proc.stderr.splitlines()[0][len(RUNNER_FAILED):][:200]
        return res
    if "CDCV-SETUP-ERROR" in proc.stdout and not lines:
        res.status, res.reason = "tool_error", "testbench set-up error: " + proc.stdout.strip()[-200:]
        return res
    if len(lines) != 1:
        if len(lines) > 1:
            res.reason = "more than one verdict line"
        elif proc.limit:
            what = "memory" if proc.limit == "memory" else "process-count"
            res.reason = f"simulation exceeded its {what} limit"
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


class Simulator(ABC):
    """One simulator backend. Capability flags (class attributes) are what callers branch on:

    * ``batching``: ``run_batch`` runs many seeds in one process (a stage of a grade may then
      batch, under the checks of ``stage.run_stage_batched``);
    * ``four_state``: models X and Z (a two-state simulator may pass a design on an X that a
      four-state one fails, so ``sim="auto"`` needs a parity certificate before choosing it).
    """

    name: ClassVar[str] = "?"
    title: ClassVar[str] = "?"  # the name shown to a person ("Icarus Verilog")
    batching: ClassVar[bool] = False
    four_state: ClassVar[bool] = False

    @abstractmethod
    def available(self) -> bool:
        """Whether the tools this backend runs are installed."""

    def missing(self) -> str:
        """When not ``available()``: one line naming what is missing and how to install it."""
        return f"{self.title} is not installed (cdc-env doctor says what to install)"

    @abstractmethod
    def version(self) -> str:
        """The simulator's version (goes into reports and certificates)."""

    @abstractmethod
    def build(self, task: Task, design: dict[str, str], workdir: Path, *, sandbox: bool = True) -> Build:
        """Stage the sources of ``task`` with ``design`` in ``workdir`` and build them."""

    def build_netlist(self, task: Task, design: dict[str, str], workdir: Path, *,
                      sandbox: bool = True) -> Build:
        """``build`` for a design that is the gate's netlist (``gate.synthesized`` / a grade's gate
        stage). Synthesis elaborated it with the task's own sources and the primitives alone --
        nothing of the testbench -- so it cannot name the testbench, and a backend may skip its
        own design-alone elaboration (``self_contained``). The default builds as ``build`` does."""
        return self.build(task, design, workdir, sandbox=sandbox)

    @abstractmethod
    def seed_argv(self, build: Build, plan: SeedPlan, settle: bool) -> list[str]:
        """The command of one seed, run in the build folder (no nonce: that goes by pipe)."""

    def verdict_secrets(self, build: Build, nonce: int) -> list[str]:
        """The lines the verdict pipe carries for one seed (the nonce first)."""
        return [f"{nonce:016x}"]

    def seed_ro_paths(self, build: Build) -> tuple[Path, ...]:
        """Read-only paths a seed needs besides the build folder."""
        return ()

    def zygote_argv(self, build: Build) -> tuple[list[str], int] | None:
        """Where the seeds of a stage can be forked at time 0 from one simulator process (the stage
        runner's zygote mode, trusted/stage/cdc_seed_runner.c): (the command of that process, n),
        where every seed's ``seed_argv`` starts with the same first n arguments and the rest are
        its plusargs. None: every seed is a fresh process."""
        return None

    def run_seed(self, build: Build, plan: SeedPlan, *, settle: bool, sandbox: bool = True,
                 limits: Limits = SEED_LIMITS) -> SeedResult:
        """One seed in a process (and sandbox) of its own."""
        nonce = new_nonce()
        proc = run_with_nonce(self.seed_argv(build, plan, settle), build.workdir, limits,
                              self.verdict_secrets(build, nonce), sandbox=sandbox,
                              ro_paths=self.seed_ro_paths(build), tag=f"seed{plan.seed}")
        return parse_verdict(plan.seed, proc, nonce)

    def run_batch(self, build: Build, plans: list[SeedPlan], *, settle: bool, sandbox: bool = True,
                  tag: str = "batch", limits: Limits | None = None) -> BatchRun:
        """Many seeds in one process (only where ``batching``). Raises BatchIncomplete."""
        raise BatchIncomplete(f"{self.name} does not run seeds in batches")


class BatchIncomplete(Exception):
    """A batch that did not end cleanly; ``str()`` says why. Its seeds must run one at a time."""

    def __init__(self, reason: str, proc: ProcResult | None = None) -> None:
        super().__init__(reason)
        self.proc = proc


@dataclass
class BatchRun:
    results: list[SeedResult]  # in the order of the plans given
    cpu_s: float  # the whole process, start-up included
    max_rss_kb: int


CACHE_ENV = "CDC_ENV_CACHE"


def cache_root() -> Path:
    """The cache of built runtimes, trusted binaries and certificates (``paths.cache_root``:
    $CDC_ENV_CACHE, else $XDG_CACHE_HOME/cdc_env, else ~/.cache/cdc_env)."""
    return paths.cache_root()


def cached_binary(kind: str, source: Path, product: str, script: str, salt: str, *,
                  sandbox: bool = True) -> Path:
    """The cache directory holding ``product``, built once from ``source`` by ``script`` (in the
    sandbox) and keyed by the source, the script and ``salt``. Raises OSError/RuntimeError."""
    src = source.read_bytes()
    key = hashlib.sha256(src + script.encode() + salt.encode()).hexdigest()[:16]
    base = cache_root() / kind
    final = base / key
    if (final / product).is_file():
        return final
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=base))
    try:
        (work / source.name).write_bytes(src)
        proc = run_bounded(["/bin/sh", "-c", script], work, BUILD_LIMITS, sandbox=sandbox, tag="tool")
        if proc.returncode != 0 or not (work / product).is_file():
            raise RuntimeError(f"building {product} failed: "
                               + (proc.sandbox_error or proc.stderr or proc.stdout)[-500:])
        for p in work.iterdir():
            if p.name != product:
                p.unlink()
        try:
            work.rename(final)
        except OSError:
            if not (final / product).is_file():
                raise
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


