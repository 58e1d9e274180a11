"""Simulator backends and the verdict channel.

A backend builds one scratch directory (testbench + harness + primitives + design) and runs one
seed at a time in it. The verdict of a seed comes only from the testbench: exactly one line
``CDCV <nonce> PASS|FAIL checks=<n> hash=<h> t=<ps> msg=<text>`` carrying this run's 64-bit nonce
and a zero exit status. Anything else -- no such line, two of them, a crash, a flood, a time-out
-- is not a pass.

The verdict channel holds without the static gate: the nonce goes into a pipe (``CDC_VERDICT_FD``)
read by trusted code outside the Verilog before any Verilog runs -- Icarus: the VPI module
runners/icarus/cdc_verdict.c; Verilator: the C++ main -- which prints the line when the
testbench's emit_verdict calls it, and refuses a call from anywhere but the testbench. The nonce
is never a plusarg, an environment variable or a file, and tools run without /proc.

Simulator-specific code lives in one class per simulator; Icarus is here, Verilator in
verilator.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import paths
from .proc import Limits, ProcResult, run_bounded
from .seeds import SeedPlan, plan_seed
from .task import Task

# A build may write large compiled outputs (file_bytes) but prints at most out_bytes.
BUILD_LIMITS = Limits(wall_s=300.0, cpu_s=300, mem_bytes=4 << 30, out_bytes=1 << 20, file_bytes=1 << 30,
                      pids=64)
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
    files = ["cdc_sync.v", *sorted(str(p.relative_to(workdir)) for p in (workdir / "design").rglob("*")
                                   if p.is_file())]
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

    def seed_argv(self, build: Build, plan: SeedPlan, settle: bool) -> list[str]:
        """The command of one seed, run in the build folder (no nonce: that goes by pipe)."""
        raise NotImplementedError

    def seed_ro_paths(self, build: Build) -> tuple[Path, ...]:
        """Read-only paths a seed needs besides the build folder."""
        return ()


class Icarus(Simulator):
    """Icarus Verilog 11 (Debian ``iverilog``): compile once with iverilog, run vvp per seed."""

    name = "icarus"

    def available(self) -> bool:
        return shutil.which("iverilog") is not None and shutil.which("vvp") is not None

    def version(self) -> str:
        return _icarus_version()

    def build(self, task: Task, design: dict[str, str], workdir: Path, *, sandbox: bool = True) -> Build:
        try:
            vpi = vpi_module(sandbox=sandbox)
        except (OSError, RuntimeError) as exc:
            return Build("tool_error", f"Icarus verdict module: {exc}", workdir)
        files = stage_sources(task, {n: icarus_always_comb(t) for n, t in design.items()}, workdir)
        # -gstrict-expr-width: expression widths as the standard (and the gate's front end) has them
        argv = ["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-L", str(vpi), "-m", VPI_NAME,
                "-s", task.tb_top, "-o", "sim.vvp", *[str(f.relative_to(workdir)) for f in files]]
        proc = run_bounded(argv, workdir, BUILD_LIMITS, sandbox=sandbox, ro_paths=(vpi,), tag="build")
        log = scrub((proc.stdout + proc.stderr).strip(), workdir, task.editable)
        failed = build_failure(proc, log)
        if failed:
            status, log = failed
        else:
            status = "pass" if proc.returncode == 0 and (workdir / "sim.vvp").is_file() else "compile_error"
        cpu, wall, rss = proc.cpu_s, proc.wall_s, proc.max_rss_kb
        if status == "pass":
            alone_argv = ["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-t", "null",
                          "-s", task.top]
            refused, alone = self_contained(alone_argv, workdir, task, sandbox=sandbox)
            cpu, wall, rss = cpu + alone.cpu_s, wall + alone.wall_s, max(rss, alone.max_rss_kb)
            if refused:
                status, log = refused
        return Build(status, log, workdir, cpu, wall, rss,
                     {"vpi": str(vpi), "tb_top": task.tb_top})

    def run_seed(self, build: Build, plan: SeedPlan, *, settle: bool, sandbox: bool = True,
                 limits: Limits = SEED_LIMITS) -> SeedResult:
        nonce = new_nonce()
        vpi = Path(build.extra["vpi"])
        proc = run_with_nonce(self.seed_argv(build, plan, settle), build.workdir, limits,
                              [f"{nonce:016x}", build.extra["tb_top"]], sandbox=sandbox, ro_paths=(vpi,),
                              tag=f"seed{plan.seed}")
        return parse_verdict(plan.seed, proc, nonce)

    def seed_argv(self, build: Build, plan: SeedPlan, settle: bool) -> list[str]:
        return ["vvp", "-n", "sim.vvp", *seed_plusargs(plan, settle)]

    def seed_ro_paths(self, build: Build) -> tuple[Path, ...]:
        return (Path(build.extra["vpi"]),)


VPI_NAME = "cdc_verdict"


def vpi_source() -> Path:
    return paths.data_root() / "runners" / "icarus" / f"{VPI_NAME}.c"


def vpi_module(*, sandbox: bool = True) -> Path:
    """The directory of the cached Icarus verdict module (cdc_verdict.vpi), built on first use
    with iverilog-vpi's flags; keyed by its source and the Icarus version. Raises OSError/RuntimeError."""
    if shutil.which("iverilog-vpi") is None:
        raise RuntimeError("iverilog-vpi is missing (Debian: apt-get install -y iverilog)")
    # iverilog-vpi's own flags, with gcc named directly (its "cc" is a symlink into /etc).
    script = (f'gcc $(iverilog-vpi --cflags) -c -o {VPI_NAME}.o {VPI_NAME}.c && '
              f'gcc $(iverilog-vpi --ldflags) -o {VPI_NAME}.vpi {VPI_NAME}.o $(iverilog-vpi --ldlibs)')
    return cached_binary("icarus-vpi", vpi_source(), f"{VPI_NAME}.vpi", script, _icarus_version(),
                         sandbox=sandbox)


def cached_binary(kind: str, source: Path, product: str, script: str, salt: str, *,
                  sandbox: bool = True) -> Path:
    """The cache directory holding ``product``, built once from ``source`` by ``script`` (in the
    sandbox) and keyed by the source, the script and ``salt``. Raises OSError/RuntimeError."""
    from .verilator import cache_root  # noqa: PLC0415 -- verilator imports this module

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


# ---------------------------------------------------------------- one sandbox per stage (issue 15)

RUNNER = "cdc_seed_runner"
# One sandbox per chunk of a stage with the trusted runner (the default); "0": one sandbox per
# seed. Every gate-off proof of tests/test_sandbox.py runs under both.
STAGE_ENV = "CDC_ENV_STAGE_SANDBOX"
_RECORD = re.compile(rb"R (\d+) (-?\d+) (\d+) (\d+) ([01]) ([01]) (\d+) (\d+)\n")


def stage_runner(*, sandbox: bool = True) -> Path:
    """The cached trusted seed runner (runners/stage/cdc_seed_runner.c), built with gcc."""
    src = paths.data_root() / "runners" / "stage" / f"{RUNNER}.c"
    return cached_binary("seed-runner", src, RUNNER, f"gcc -O2 -o {RUNNER} {RUNNER}.c", "1", sandbox=sandbox)


def stage_sandbox_on() -> bool:
    """One sandbox per chunk of a seed stage (default) unless ``CDC_ENV_STAGE_SANDBOX=0``."""
    return os.environ.get(STAGE_ENV, "1") != "0"


def run_seeds_staged(sim: Simulator, build: Build, task: Task, seeds: list[int], *, settle: bool,
                     jobs: int, limits: Limits = SEED_LIMITS, hidden_checks: bool | None = None,
                     progress=None, stage: str = "seeds") -> list[SeedResult]:
    """``seeds`` in ``jobs`` sandboxes (contiguous chunks, in parallel), one trusted runner each;
    a chunk whose runner failed runs seed by seed in a sandbox per seed. Results in seed order;
    after a time-out a chunk starts no further seed."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    plans = [plan_seed(task, s, hidden_checks=hidden_checks) for s in seeds]
    k = max(1, min(jobs, len(plans)))
    size = -(-len(plans) // k)
    chunks = [plans[i:i + size] for i in range(0, len(plans), size)]
    done = 0

    def one(idx_chunk: tuple[int, list[SeedPlan]]) -> list[SeedResult]:
        idx, chunk = idx_chunk
        res = run_stage_sandboxed(sim, build, chunk, settle=settle, limits=limits, tag=f"stage{idx}")
        if res is None:
            res = []
            for plan in chunk:
                res.append(sim.run_seed(build, plan, settle=settle, sandbox=True, limits=limits))
                if res[-1].status == "timeout":
                    break
        return res

    out: list[SeedResult] = []
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        for res in pool.map(one, enumerate(chunks)):
            out += res
            done += len(res)
            if progress:
                progress(stage, done, len(seeds))
    return out


def run_stage_sandboxed(sim: Simulator, build: Build, plans: list[SeedPlan], *, settle: bool,
                        limits: Limits = SEED_LIMITS, tag: str = "stage") -> list[SeedResult] | None:
    """Run ``plans`` one after another in ONE sandbox, each seed a fresh process started by the
    trusted runner with its own limits, nonce and empty /tmp; per-seed CPU from the runner's
    ``wait4``, the rest of the sandbox's cost (bubblewrap, the runner) spread evenly over the
    seeds so that the stage total is the cgroup's. Returns None when the runner itself failed
    (the caller then runs every seed in its own sandbox). After a time-out no further seed runs.
    """
    try:
        runner = stage_runner()
    except (OSError, RuntimeError):
        return None
    nonces = [new_nonce() for _ in plans]
    lines = [f"limits {limits.cpu_s} {limits.mem_bytes} {limits.file_bytes or limits.out_bytes} "
             f"{int(limits.wall_s * 1000)} {limits.out_bytes}"]
    tb_top = build.extra.get("tb_top", "-")
    for plan, nonce in zip(plans, nonces, strict=True):
        argv = sim.seed_argv(build, plan, settle)
        if any("\t" in a or "\n" in a or "\x1f" in a for a in argv):
            return None
        lines.append(f"{nonce:016x}\t{tb_top}\t" + "\x1f".join(argv))
    n = len(plans)
    stage_limits = Limits(wall_s=min(limits.wall_s * n + 30.0, 3600.0), cpu_s=limits.cpu_s * n + 10,
                          mem_bytes=limits.mem_bytes, out_bytes=1 << 16, file_bytes=limits.file_bytes,
                          pids=limits.pids + 4)
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    data = bytearray()

    def feed() -> None:
        payload = memoryview(("\n".join(lines) + "\n").encode())
        try:
            while payload:
                payload = payload[os.write(job_w, payload):]
        except OSError:
            pass
        finally:
            os.close(job_w)

    def drain() -> None:
        with os.fdopen(res_r, "rb") as f:
            while chunk := f.read1(1 << 16):
                data.extend(chunk)

    import threading  # noqa: PLC0415

    threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    env = {"CDC_STAGE_FD": str(job_r), "CDC_RESULT_FD": str(res_w)}
    try:
        proc = run_bounded([str(runner / RUNNER)], build.workdir, stage_limits, env={**os.environ, **env},
                           sandbox=True, ro_paths=(runner, *sim.seed_ro_paths(build)), sandbox_env=env,
                           tag=tag, pass_fds=(job_r, res_w), writable=False)
    finally:
        os.close(job_r)
        os.close(res_w)
        for t in threads:
            t.join(timeout=30)
    if proc.returncode != 0 or proc.sandbox_error or proc.timed_out:
        return None
    results: list[SeedResult] = []
    pos, raw = 0, bytes(data)
    while pos < len(raw):
        m = _RECORD.match(raw, pos)
        if m is None:
            return None
        idx, code, cpu_us, rss, tout, flood, lo, le = (int(g) for g in m.groups())
        body = m.end()
        out = raw[body:body + lo].decode("utf-8", "replace")
        err = raw[body + lo:body + lo + le].decode("utf-8", "replace")
        pos = body + lo + le
        if idx != len(results):
            return None
        seed_proc = ProcResult(code, out, err, cpu_us / 1e6, 0.0, rss, bool(tout), bool(flood),
                               accounting=proc.accounting)
        results.append(parse_verdict(plans[idx].seed, seed_proc, nonces[idx]))
    if len(results) != n and not (results and results[-1].status == "timeout"):
        return None
    overhead = max(proc.cpu_s - sum(r.cpu_s for r in results), 0.0) / max(len(results), 1)
    for r in results:
        r.cpu_s += overhead
        r.max_rss_kb = max(r.max_rss_kb, proc.max_rss_kb)  # the stage cgroup's peak covers every seed
    return results


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
