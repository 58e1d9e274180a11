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
        files = stage_sources(task, {n: icarus_always_comb(t) for n, t in design.items()}, workdir)
        # -gstrict-expr-width: expression widths as the standard (and the gate's front end) has them
        argv = ["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-s", task.tb_top, "-o", "sim.vvp",
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


# ----- what Icarus built (differential elaboration; compared with the gate's by gate/diverge.py) -----
_VVP_SCOPE = re.compile(r'^(S_0x[0-9a-f]+) \.scope (\w+)[^,]*, "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"'
                        r'(?:[^;]*, (S_0x[0-9a-f]+))?[^;]*;\s*$')
_VVP_PARAM = re.compile(r'^P_0x[0-9a-f]+ \.param/l "((?:[^"\\]|\\.)*)" [^,]*, (\+?)C4<([01xz]+)>;\s*$')


def icarus_elaboration(vvp_text: str, tb_top: str, top: str, primitives: frozenset[str]) -> dict | None:
    """The design Icarus built, read from its compiled .vvp: primitive instances (path, module),
    helper-instance and generate scopes, and integer parameter values, with paths below the
    testbench's instance of ``top`` (unnamed generate blocks as genblk*). None if that instance
    is not found. Inside a primitive only its own parameters are read, not its internals."""
    scopes: dict[str, tuple[str, str, str, str | None]] = {}  # addr -> (kind, name, type, parent)
    params: list[tuple[str, str, str]] = []  # (scope addr, name, value)
    current = None
    for line in vvp_text.splitlines():
        if line.startswith("S_0x"):
            m = _VVP_SCOPE.match(line)
            if m:
                scopes[m[1]] = (m[2], m[3], m[4], m[5])
                current = m[1]
        elif line.startswith("P_0x") and current is not None:
            m = _VVP_PARAM.match(line)
            if m and not set(m[3]) & {"x", "z"}:
                v = int(m[3], 2) - ((1 << len(m[3])) if m[2] == "+" and m[3][0] == "1" else 0)
                params.append((current, m[1], str(v)))
    duts = [a for a, (k, _n, t, par) in scopes.items()
            if k == "module" and t == top and par in scopes and scopes[par][2] == tb_top]
    if len(duts) != 1:
        return None
    dut = duts[0]

    def chain(addr: str) -> tuple[str, int, bool] | None:
        """(path below the dut, primitives in the chain, self is a primitive), None if not below it."""
        names: list[str] = []
        prims = 0
        a: str | None = addr
        while a is not None and a != dut:
            kind, name, typ, par = scopes[a]
            if kind not in ("module", "generate"):
                return None
            prims += kind == "module" and typ in primitives
            names.insert(0, name)
            a = par
        if a != dut:
            return None
        kind, _n, typ, _p = scopes[addr]
        return ".".join(names), prims, kind == "module" and typ in primitives

    info = {a: chain(a) for a in scopes if a != dut}
    out: dict = {"prims": [], "params": [], "scopes": []}
    for addr, c in info.items():
        if c is None:
            continue
        p, n, is_prim = c
        if is_prim and n == 1:
            out["prims"].append([_generic_path(p), scopes[addr][2]])
        elif n == 0:
            out["scopes"].append(_generic_path(p))
    for addr, name, value in params:
        if addr == dut:
            out["params"].append([name, value])
            continue
        c = info.get(addr)
        if c is not None and (c[1] == 0 or (c[2] and c[1] == 1)):
            out["params"].append([_generic_path(c[0] + "." + name), value])
    for k in out:
        out[k].sort()
    return out


def _generic_path(path: str) -> str:
    return re.sub(r"\bgenblk\d+", "genblk*", path)


# ----- always_comb on Icarus 11 -----
_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\\\S+|`?[A-Za-z_$][A-Za-z0-9_$]*|.', re.S)


_LOCAL_TYPES = frozenset({"reg", "integer", "logic", "int", "bit", "byte", "shortint", "longint", "time",
                          "genvar", "var"})


_STATEMENT_PREFIXES = frozenset({"begin", "end", "automatic", "static", "const"})


def _function_with_locals(toks: list[str]) -> bool:
    """Whether some function declares a variable of its own (the trigger of the Icarus 11 hang)."""
    words = [t for t in toks if not t.isspace() and not t.startswith(("//", "/*"))]
    inside = False
    head = True  # the function's header statement (its name and ANSI ports)
    first: str | None = None  # first word of the current statement
    prev = ""
    for w in words:
        if w == "function":
            inside, head, first = True, True, None
        elif w == "endfunction":
            inside = False
        elif inside:
            if first is None and w not in _STATEMENT_PREFIXES:
                first = w
            if not head and (first in _LOCAL_TYPES or (first == "for" and prev == "(" and w in _LOCAL_TYPES)):
                return True
            if w == ";":
                head, first = False, None
        prev = w
    return False


def icarus_always_comb(text: str) -> str:
    """The design text Icarus 11 compiles: ``always_comb`` as ``always @*`` in a file that
    declares a function with variables of its own.

    Icarus 11 makes an always_comb block sensitive to the variables of the functions it calls,
    so two such blocks calling one function with a local loop variable wake each other forever
    at time 0. ``always @*`` is sensitive to what the block itself reads (the arguments), which
    for the gate's subset -- no function may carry state between calls (POL-CONSTRUCT) -- is the
    same combinational logic, except that ``always @*`` does not also run at time 0. Done on the
    token stream: comments, strings and escaped identifiers are never touched. A file without
    such a function is compiled as written.
    """
    if "always_comb" not in text or "function" not in text:
        return text
    toks = _TOKENS.findall(text)
    if "function" not in toks or "always_comb" not in toks or not _function_with_locals(toks):
        return text
    return "".join("always @*" if t == "always_comb" else t for t in toks)
