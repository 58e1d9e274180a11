"""The static gate: policy and clock-domain structure rules, run before anything is built.

``run_gate(task, files)`` takes the design as the grader will build it (file name -> text; the
editable file is ``task.editable``) and returns a GateResult: ``pass``, ``refused`` (with
findings, each naming its rule, file:line and what to do) or ``tool_error`` (the gate itself
failed; never a pass). Rules and their limitations: docs/gate.md; IDs: rules.py.

Bounds: every file is size- and nesting-checked before the front end sees it, and the analysis
runs in a forked child with a CPU-time and address-space limit, so no input can make the gate
raise or hang: exceeding the CPU or memory budget is a refusal (GATE-LIMIT, deterministic);
exceeding the wall-clock guard or crashing is a tool_error.

What the gate knows about a task beyond its manifest -- names it may not reuse, macro names of
the other files, the domains of the top's data ports -- is learned once from the task's own
(trusted) files and cached (``task_profile``).
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import resource
import select
import signal
import time
import traceback
from dataclasses import dataclass, field

from .. import paths
from ..task import Task
from .rules import RULES, finding

CPU_LIMIT_S = 1  # per analysis (RLIMIT_CPU; the child is killed beyond it)
WALL_LIMIT_S = 20.0  # a guard against a child that stops making progress (machine overload)
MEM_HEADROOM = 1 << 30  # address space the child may add to what it inherits


@dataclass
class GateResult:
    status: str  # pass | refused | tool_error
    findings: list[dict] = field(default_factory=list)
    cpu_s: float = 0.0
    detail: str = ""
    elab: dict | None = None  # what the gate elaborated (netlist.Netlist.elaboration), if it got that far


@dataclass(frozen=True)
class TaskProfile:
    """What the gate learns from a task's trusted files."""

    reserved: dict[str, str]  # design-unit name -> the task file that defines it
    shared_macros: dict[str, str]  # macro name -> the task file that uses it
    ports: object  # domains.PortDomains


_PROFILES: dict[str, TaskProfile] = {}


def _task_files(task: Task) -> dict[str, str]:
    """The trusted files whose names and macros a design may not take over."""
    out = {"cdc_sync.v": paths.primitives_file().read_text(encoding="utf-8"),
           **{p.name: p.read_text(encoding="utf-8") for p in paths.tb_includes()},
           task.testbench: task.text(task.testbench)}
    for rel in task.sources:
        out[rel] = task.text(rel)
    return out


def task_profile(task: Task) -> TaskProfile:
    """Learn (once per task content) reserved names, shared macros and the top's port domains."""
    from . import analysis  # noqa: PLC0415 -- pyslang loads only when the gate runs

    trusted = _task_files(task)
    defective = task.defective_text
    key = hashlib.sha256(json.dumps([str(task.dir), task.top, defective, sorted(trusted.items()),
                                     [d.__dict__ for d in task.domains]]).encode()).hexdigest()
    if key not in _PROFILES:
        _PROFILES[key] = analysis.learn_profile(task, trusted, defective, TaskProfile)
    return _PROFILES[key]


def run_gate(task: Task, files: dict[str, str], *, skip_rules: frozenset[str] = frozenset(),
             isolate: bool = True) -> GateResult:
    """The gate stage. Never raises: bad input is refused, the gate's own failures are tool_error.

    skip_rules: rule IDs to leave out (test-only, to prove that a fixture needs its rule).
    isolate: analyse in a forked, resource-limited child (off only to debug in-process).
    """
    cpu0 = time.thread_time()  # the calling thread only (not other grades running in this process)
    try:
        result = _run(task, files, skip_rules, isolate)
    except Exception as exc:  # noqa: BLE001 -- the stage's contract: never raise, never pass
        result = GateResult("tool_error", detail=f"the gate failed: {type(exc).__name__}: {exc}"[:500])
    result.cpu_s += time.thread_time() - cpu0
    return result


def _run(task: Task, files: dict[str, str], skip_rules: frozenset[str], isolate: bool) -> GateResult:
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
    profile = task_profile(task)
    job = analysis.Job(top=task.top, editable=task.editable, files=design,
                       clocks={d.clock: d.name for d in task.domains},
                       resets={d.reset: d.name for d in task.domains},
                       cross_memories=tuple(task.cross_memories), profile=profile)
    if isolate and hasattr(os, "fork"):
        payload, cpu, detail = _in_child(analysis.analyse, job)
    else:
        payload, cpu, detail = analysis.analyse(job), 0.0, ""
    if payload is None:
        return GateResult("tool_error", cpu_s=cpu, detail=detail)
    if "limit" in payload:
        return GateResult("refused", [finding("GATE-LIMIT", payload["limit"], file=task.editable)], cpu,
                          payload["limit"])
    if "error" in payload:
        return GateResult("tool_error", cpu_s=cpu, detail=payload["error"])
    fs = [f for f in payload["findings"] if f["rule"] not in skip_rules]
    errors = [f for f in fs if f["severity"] == "error"]
    elab = payload.get("elab")
    if errors:
        rules = sorted({f["rule"] for f in errors})
        return GateResult("refused", fs, cpu, f"{len(errors)} finding(s): {', '.join(rules)}", elab)
    return GateResult("pass", fs, cpu, "no findings" if not fs else f"{len(fs)} warning(s)", elab)


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
            faulthandler.disable()  # a crash here is reported by the parent, not dumped on stderr
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 1))
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
        return None, cpu, (f"the gate did not finish within {WALL_LIMIT_S:.0f} s of wall time "
                           "(machine overloaded?)")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or sig == signal.SIGKILL and cpu >= CPU_LIMIT_S:
            return ({"limit": f"analysing the design took more than {CPU_LIMIT_S} CPU-s; simplify it"},
                    cpu, "")
        return None, cpu, f"the gate's analysis crashed ({signal.Signals(sig).name})"
    try:
        return json.loads(b"".join(chunks).decode("utf-8")), cpu, ""
    except (ValueError, UnicodeDecodeError):
        return None, cpu, f"the gate's analysis exited with status {os.WEXITSTATUS(status)} and no result"
