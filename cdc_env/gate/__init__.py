"""The static gate: synthesis once, source policy, and clock-domain rules on the netlist.

``run_gate(task, files)`` takes the design (file name -> text; the editable file is
``task.editable``), synthesizes it (synth.py: Yosys with the slang front end, primitives as black
boxes) and returns a GateResult: ``pass``, ``refused`` (with findings, each naming its rule,
file:line and what to do) or ``tool_error`` (the gate itself failed; never a pass). A result
that got as far as synthesis carries the netlist: the exact text both simulators build.
Rules and their limitations: docs/gate.md; IDs: rules.py.

Bounds: every file is size- and nesting-checked before a parser sees it, the rules run only on a
netlist within the work bounds (work.py: cells, flop and port bits, netlist size, counted -- a
design over one is refused, GATE-LIMIT, the same at any load), and the analysis runs in a forked
child with an address-space limit (exceeding it is GATE-LIMIT) and a CPU-time backstop far above
what a design within the bounds costs, so no input can make the gate raise or hang. A Yosys
error or crash that ends the child is a refusal that says why (GATE-PARSE with slang's
diagnostics, or GATE-SYNTH). The CPU backstop, the wall-clock guard, or a child that dies before
the policy ran is a tool_error: CPU and wall time grow with the machine's load, so they never
decide a verdict.

What the gate knows about a task beyond its manifest -- names it may not reuse, the domains of
the top's data ports, whether the task provides cdc_ram storage and which outputs carry its
data -- is learned once from the task's own (trusted) files and cached (``task_profile``).
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import resource
import select
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from ..task import Task
from .rules import RULES, finding

# A backstop, not a bound (work.py bounds the analysis): 13-25x what a design at a work bound costs
# (0.8-1.5 CPU-s), 200x what the tasks' and fixtures' designs cost (0.10 at most; docs/gate.md,
# "Work bounds"). Exceeding it is a tool_error.
CPU_BACKSTOP_S = 20  # per analysis (RLIMIT_CPU; the child is killed beyond it)
WALL_LIMIT_S = 120.0  # a guard against a child that stops making progress (6x the CPU backstop)
MEM_HEADROOM = 1 << 30  # address space the child may add to what it inherits
WALL_DETAIL = f"the gate did not finish within {WALL_LIMIT_S:.0f} s of wall time (machine overloaded?)"
CPU_DETAIL = (f"the gate's analysis ran past its {CPU_BACKSTOP_S} CPU-s backstop; a design within the work "
              "bounds (docs/gate.md) costs a small part of that, so the machine or the gate is at fault")


@dataclass
class GateResult:
    status: str  # pass | refused | tool_error
    findings: list[dict] = field(default_factory=list)
    cpu_s: float = 0.0
    detail: str = ""
    netlist: dict | None = None  # {"verilog", "sha256", "cells", "flops", "x_safe", "x_why"}: what the
    # simulators build, and whether any X can exist in it after reset (xsafe.py)
    summary: dict | None = None  # cdc.summary: flops per domain, primitives, crossings

    @property
    def parse_only(self) -> bool:
        """The design did not compile (only GATE-PARSE findings): a compile error, not a CDC verdict."""
        return bool(self.findings) and all(f["rule"] == "GATE-PARSE" for f in self.findings)


@dataclass(frozen=True)
class TaskProfile:
    """What the gate learns from a task's trusted files."""

    reserved: dict[str, str]  # design-unit name -> the task file that defines it
    ports: object  # cdc.Ports


_PROFILES: dict[str, TaskProfile] = {}


def _task_files(task: Task) -> dict[str, str]:
    """The trusted files whose names and macros a design may not take over."""
    out = {**{p.name: p.read_text(encoding="utf-8") for p in paths.primitive_files()},
           **{p.name: p.read_text(encoding="utf-8") for p in paths.tb_includes()},
           task.testbench: task.text(task.testbench)}
    for rel in task.sources:
        out[rel] = task.text(rel)
    return out


def task_profile(task: Task) -> TaskProfile:
    """Learn (once per task content) reserved names, port domains and storage from trusted files."""
    return _profile(task)[0]


def _profile(task: Task) -> tuple[TaskProfile, float]:
    """task_profile, and the CPU-s of the child that learned it now (0 when it was cached): the
    first grade of a task in a process pays for that synthesis, and its report counts it."""
    from . import analysis, cdc, frontend, policy  # noqa: PLC0415 -- pyslang/pyosys load only when the gate runs

    trusted = _task_files(task)
    defective = task.defective_text
    key = hashlib.sha256(json.dumps([str(task.dir), task.top, defective, sorted(trusted.items()),
                                     [d.__dict__ for d in task.domains], task.storage, task.hold]
                                    ).encode()).hexdigest()
    if key in _PROFILES:
        return _PROFILES[key], 0.0
    fe = frontend.parse_all(trusted)
    reserved: dict[str, str] = {task.tb_top: task.testbench}
    for name, p in fe.parses.items():
        for _kind, unit, _loc in policy.unit_names(p):
            reserved.setdefault(unit, name)
    _preload()
    with tempfile.TemporaryDirectory(prefix="cdc-gate-learn-") as tmp:
        job = _job(task, task.files(defective), reserved, None, tmp)
        payload, learn_cpu, detail = _in_child(analysis.learn, job)
        if payload is None:
            from . import synth  # noqa: PLC0415

            detail = "; ".join(f["message"] for f in synth.failure(Path(tmp), task.editable, detail)[:3])
    if payload is None or "inputs" not in payload:
        why = detail or (payload or {}).get("error") or (payload or {}).get("limit")
        raise RuntimeError(f"task {task.id}: its own design does not synthesize in the gate: {why}")
    storage = payload["storage"] if task.storage is None else task.storage
    ports = cdc.Ports(inputs=payload["inputs"], outputs=payload["outputs"],
                      data_outputs=frozenset(payload["data_outputs"]), storage=storage,
                      hold=bool(payload.get("hold", False)) if task.hold is None else task.hold)
    _PROFILES[key] = TaskProfile(reserved=reserved, ports=ports)
    return _PROFILES[key], learn_cpu


def _preload() -> None:
    """Import Yosys in this process once, so that each forked child starts with it loaded (the
    import costs more than a synthesis; pyslang is already loaded by analysis)."""
    from pyosys import libyosys  # noqa: F401, PLC0415


def _job(task: Task, design: dict[str, str], reserved: dict[str, str], ports, workdir: str,
         rules: bool = True):
    from . import analysis  # noqa: PLC0415

    return analysis.Job(top=task.top, editable=task.editable, files=design,
                        clocks={d.clock: d.name for d in task.domains},
                        resets={**{d.reset: d.name for d in task.domains if d.reset},
                                **{r: "async" for r in task.async_resets}},  # cdc.ASYNC
                        reserved=reserved, ports=ports, storage=bool(ports.storage) if ports else False,
                        workdir=workdir, rules=rules)


def run_gate(task: Task, files: dict[str, str], *, skip_rules: frozenset[str] = frozenset(),
             isolate: bool = True, rules: bool = True) -> GateResult:
    """The gate stage. Never raises: bad input is refused, the gate's own failures are tool_error.

    skip_rules: rule IDs to leave out (test-only, to prove that a fixture needs its rule).
    isolate: analyse in a forked, resource-limited child (off only to debug in-process; a Yosys
        error then ends the calling process).
    rules: False synthesizes only (the gate switched off for a test): the result carries the
        netlist, and only a design that does not synthesize is refused.
    """
    cpu0 = time.thread_time()  # the calling thread only (not other grades running in this process)
    children: list[float] = []  # CPU-s of children other than the analysis (learning the task profile)
    try:
        result = _run(task, files, skip_rules, isolate, rules, children)
    except Exception as exc:  # noqa: BLE001 -- the stage's contract: never raise, never pass
        result = GateResult("tool_error", detail=f"the gate failed: {type(exc).__name__}: {exc}"[:500])
    result.cpu_s += time.thread_time() - cpu0 + sum(children)
    return result


def _run(task: Task, files: dict[str, str], skip_rules: frozenset[str], isolate: bool,
         rules: bool, children: list[float]) -> GateResult:
    from . import analysis  # noqa: PLC0415
    from .frontend import input_problem  # noqa: PLC0415

    unknown = sorted(set(skip_rules) - set(RULES))
    if unknown:
        return GateResult("tool_error", detail=f"unknown rule IDs to skip: {', '.join(unknown)}")
    if not isinstance(files, dict) or task.editable not in files:
        return GateResult("refused", [finding("GATE-INPUT", f"the design has no {task.editable}",
                                              file=task.editable)], detail="no editable file")
    design = {task.editable: files[task.editable]}
    for rel in task.sources:
        design[rel] = files[rel] if rel in files else task.text(rel)
    problems = [(n, p) for n, t in design.items() if (p := input_problem(n, t)) is not None]
    if problems:
        fs = [finding("GATE-INPUT", p, file=n) for n, p in problems]
        return GateResult("refused", fs, detail=problems[0][1])
    profile, learn_cpu = _profile(task)
    children.append(learn_cpu)
    _preload()
    with tempfile.TemporaryDirectory(prefix="cdc-gate-") as tmp:
        job = _job(task, design, profile.reserved, profile.ports, tmp, rules)
        if isolate and hasattr(os, "fork"):
            payload, cpu, detail = _in_child(analysis.analyse, job)
        else:
            payload, cpu, detail = analysis.analyse(job), 0.0, ""
        if payload is None and detail not in (WALL_DETAIL, CPU_DETAIL):
            fs = analysis.after_exit(job, detail)
            if fs:
                payload = {"findings": fs}
    if payload is None:
        return GateResult("tool_error", cpu_s=cpu, detail=detail)
    if "limit" in payload:
        return GateResult("refused", [finding("GATE-LIMIT", payload["limit"], file=task.editable)], cpu,
                          payload["limit"])
    if "error" in payload:
        return GateResult("tool_error", cpu_s=cpu, detail=payload["error"])
    fs = [f for f in payload["findings"] if f["rule"] not in skip_rules]
    if not rules:
        fs = [f for f in fs if f["rule"] in ("GATE-PARSE", "GATE-SYNTH", "GATE-INPUT", "GATE-INTERNAL")]
    errors = [f for f in fs if f["severity"] == "error"]
    netlist, summary = payload.get("netlist"), payload.get("summary")
    if errors or netlist is None:
        rules_hit = sorted({f["rule"] for f in errors}) or ["GATE-SYNTH"]
        detail = f"{len(errors)} finding(s): {', '.join(rules_hit)}"
        bug = next((f["internal"] for f in errors if f["rule"] == "GATE-INTERNAL"), None)
        if bug:  # a gate bug this input triggers: refused, and the cause stays in the report
            detail += f"; internal error: {bug}"
        return GateResult("refused", fs, cpu, detail, netlist, summary)
    return GateResult("pass", fs, cpu, "no findings" if not fs else f"{len(fs)} warning(s)", netlist, summary)


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _in_child(fn, job) -> tuple[dict | None, float, str]:
    """Run ``fn(job)`` in a forked child under CPU and memory limits; return (payload, cpu, detail)."""
    limit_as = _address_space() + MEM_HEADROOM
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            os.close(r)
            # Every descriptor but 0-2 and the result pipe is another thread's (the grader runs
            # grades side by side in threads): a copy held here for seconds kept their pipes from
            # reaching EOF and a model being copied open for writing (ETXTBSY on its exec).
            os.closerange(3, w)
            os.closerange(w + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            faulthandler.disable()  # a crash here is reported by the parent, not dumped on stderr
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_BACKSTOP_S, CPU_BACKSTOP_S + 1))
            if limit_as:
                resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
            try:
                out = fn(job)
            except MemoryError:
                out = {"limit": "analysing the design exceeded the gate's memory budget; simplify it"}
            except RecursionError:
                out = {"limit": "the design is nested too deeply for the gate to analyse"}
            except BaseException as exc:  # noqa: BLE001 -- reported to the parent as tool_error
                out = {"error": f"{type(exc).__name__}: {exc} "
                                f"[{traceback.format_exc(limit=-3).splitlines()[-3:]}]"[:800]}
            data = json.dumps(out).encode("utf-8")
            view = memoryview(data)
            while view:
                n = os.write(w, view)
                view = view[n:]
        except BaseException:  # noqa: BLE001
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    chunks: list[bytes] = []
    deadline = time.monotonic() + WALL_LIMIT_S
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if not ready:
                continue
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _pid, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    if timed_out:
        return None, cpu, WALL_DETAIL
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or sig == signal.SIGKILL and cpu >= CPU_BACKSTOP_S:
            return None, cpu, CPU_DETAIL
        return None, cpu, f"the gate's analysis crashed ({signal.Signals(sig).name})"
    try:
        return json.loads(b"".join(chunks).decode("utf-8")), cpu, ""
    except (ValueError, UnicodeDecodeError):
        return None, cpu, f"the gate's analysis exited with status {os.WEXITSTATUS(status)} and no result"


def synthesized(task: Task, text: str) -> tuple[dict[str, str], str]:
    """The files a simulator builds for ``text`` as the editable file: the synthesized netlist (in
    place of the editable file and the read-only sources), and the netlist text. For tools that
    simulate a task's own designs (gate-tasks, parity); raises CdcError if it does not synthesize."""
    from ..errors import CdcError  # noqa: PLC0415

    g = run_gate(task, task.files(text), rules=False)
    if g.netlist is None:
        why = g.findings[0]["message"] if g.findings else g.detail
        raise CdcError(f"task {task.id}: the design does not synthesize: {why}")
    return {task.editable: g.netlist["verilog"]}, g.netlist["verilog"]
