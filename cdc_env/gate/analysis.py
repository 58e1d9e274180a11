"""One gate analysis, start to end: parse, policy, elaborate, netlist, clock-domain rules.

``analyse(job)`` is what runs inside the gate's resource-limited child: it takes plain data and
returns plain data (``{"findings": [...]}``), so it can cross a pipe. ``learn_profile`` runs
the same front end on a task's trusted files to learn what the gate holds a submission to.
This module does not bound resources or catch crashes (__init__.py does).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyslang import DiagnosticEngine, ast

from .. import paths
from ..task import Task
from . import domains, frontend, netlist, policy
from .rules import finding

PRIMITIVES_NAME = "cdc_sync.v"


@dataclass
class Job:
    top: str
    editable: str
    files: dict[str, str]  # design files in build order, editable first
    clocks: dict[str, str]  # top clock port -> domain
    resets: dict[str, str]  # top reset port -> domain
    cross_memories: tuple[str, ...]
    profile: object  # TaskProfile


# pyslang's elaboration limits (frontend._bag). Hitting one is not a parse error to be shown by a
# simulator build (a generate loop past the step limit cost a build 18.8 s and 4.1 GiB): it is a
# GATE-LIMIT refusal, and grade() builds nothing for it.
ELABORATION_LIMIT_DIAGS = {"MaxGenerateStepsExceeded", "MaxInstanceDepthExceeded", "MaxInstanceArrayExceeded",
                           "ConstEvalExceededMaxSteps", "ConstEvalExceededMaxCallDepth",
                           "ConstEvalExceededMaxSize", "EnumValueCountExceeded", "ExceededMaxIncludeDepth",
                           "ValueExceedsMaxBitWidth"}


def _diag_code(d) -> str:
    return str(d.code).removeprefix("DiagCode(").rstrip(")")


def elaborate(job_files: dict[str, str], top: str, sets: list[str] | None = None,
              editable: str | None = None) -> tuple[frontend.FrontEnd, ast.Compilation, list[dict]]:
    """Parse ``job_files`` (plus the primitives) and elaborate under ``top``.

    Returns (front end, compilation, findings from the front end's diagnostics).
    """
    files = dict(job_files)
    fe = frontend.parse_all(files, sets)
    prim_tree = frontend.parse_into(fe, PRIMITIVES_NAME, paths.primitives_file().read_text(encoding="utf-8"))
    trees = [prim_tree] + [fe.parses[n][frontend.PRIMARY_SET].tree for n in files]
    comp = frontend.elaborate(fe, trees, top)
    out: list[dict] = []
    engine = DiagnosticEngine(fe.sm)
    for d in comp.getAllDiagnostics():
        if not d.isError():
            continue
        code = _diag_code(d)
        if code in frontend.IGNORED_ERRORS:
            continue
        file, line = fe.line_of(d.location)
        if file == PRIMITIVES_NAME:
            continue
        file = file or editable
        msg = engine.formatMessage(d)
        if code in ELABORATION_LIMIT_DIAGS:  # a limit is a refusal, never a build
            out.append(finding("GATE-LIMIT", f"{msg} -- the design exceeds the gate's elaboration limits; "
                               "simplify it", file=file, line=line))
        elif code in frontend.HIERREF_DIAGS and "." in _source_at(fe, d):
            out.append(finding("POL-HIERREF", f"a hierarchical reference that does not resolve in the "
                               f"design ({msg}); a design may use only its own ports and signals",
                               file=file, line=line))
        else:
            out.append(finding("GATE-PARSE", f"{msg} -- fix the code so it compiles", file=file, line=line))
        if len(out) >= 20:
            break
    return fe, comp, out


def _source_at(fe: frontend.FrontEnd, d) -> str:
    """The source text of a diagnostic's first range (to tell a dotted name from a plain one)."""
    try:
        r = d.ranges[0]
        text = fe.sm.getSourceText(r.start.buffer)
        return text[r.start.offset:r.end.offset + 1]
    except Exception:  # noqa: BLE001 -- only a hint for classifying the diagnostic
        return ""


def _top_instance(comp, top: str):
    for inst in comp.getRoot().topInstances:
        if inst.name == top:
            return inst
    return None


def analyse(job: Job) -> dict:
    """All findings for one design (plain data)."""
    try:
        fe, comp, parse_findings = elaborate(job.files, job.top, editable=job.editable)
    except frontend.InputRejected as exc:
        return {"findings": [finding("GATE-INPUT", str(exc), file=job.editable)]}
    out: list[dict] = []
    for name in job.files:
        out.extend(policy.check_file(fe, name, job.profile.shared_macros))
    out.extend(policy.check_names(fe, job.editable, job.profile.reserved))
    policy_lines = {(f["file"], f["line"]) for f in out}
    out.extend(f for f in parse_findings if (f["file"], f["line"]) not in policy_lines)
    if parse_findings:  # the elaborated design is incomplete: structure would be guesswork
        return {"findings": _dedupe(out)}
    inst = _top_instance(comp, job.top)
    if inst is None:
        out.append(finding("GATE-PARSE", f"the design does not define module '{job.top}', the task's top",
                           file=job.editable))
        return {"findings": out}
    net = netlist.build(fe, inst)
    for text, file, line in net.hierrefs:
        out.append(finding("POL-HIERREF", f"'{text}' is a hierarchical reference; a design may use only "
                           "its own ports and signals (no reaching into the testbench or a primitive)",
                           file=file, line=line))
    for msg, file, line in net.port_findings:
        out.append(finding("POL-PORTDIR", msg, file=file, line=line))
    structure, _ports, block_domains = domains.check(net, job.clocks, job.resets, job.cross_memories,
                                                     job.profile.ports, with_blocks=True)
    for sub, var, file, line in net.static_state:
        doms = sorted({block_domains.get(b) or "combinational logic" for b in net.calls.get(sub, set())})
        where = (f" (it is called in {' and '.join(doms)})" if len(doms) > 1 else
                 f" (every call is in {doms[0]}, but the grader does not rely on call order)" if doms else "")
        out.append(finding("POL-CONSTRUCT", f"'{var}' in {sub} is a static variable that may be read before "
                           f"the call assigns it, so it carries state from one call to the next{where}; "
                           f"declare {sub} automatic or assign '{var}' first", file=file, line=line))
    out.extend(structure)
    return {"findings": _dedupe(out), "elab": net.elaboration()}


def _dedupe(fs: list[dict]) -> list[dict]:
    seen: set[tuple] = set()
    out = []
    for f in fs:
        key = (f["rule"], f["file"], f["line"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def learn_profile(task: Task, trusted: dict[str, str], defective: str, profile_cls: type):
    """Reserved unit names and shared macros of the task's files; port domains of its design."""
    fe = frontend.parse_all(trusted, [frontend.PRIMARY_SET])
    reserved: dict[str, str] = {task.tb_top: task.testbench}
    shared: dict[str, str] = {}
    for name, per_set in fe.parses.items():
        p = per_set[frontend.PRIMARY_SET]
        for _kind, unit, _loc in policy.unit_names(p):
            reserved.setdefault(unit, name)
        for macro in policy.macro_names(p):
            shared.setdefault(macro, name)
    files = task.files(defective)
    fe2, comp, errors = elaborate(files, task.top, [frontend.PRIMARY_SET])
    inst = _top_instance(comp, task.top)
    if errors or inst is None:
        raise RuntimeError(f"task {task.id}: its own design does not elaborate in the gate: "
                           f"{errors[:1] or 'no top ' + task.top}")
    net = netlist.build(fe2, inst)
    _f, ports, _b = domains.check(net, {d.clock: d.name for d in task.domains},
                              {d.reset: d.name for d in task.domains}, tuple(task.cross_memories), None,
                                  with_blocks=True)
    return profile_cls(reserved=reserved, shared_macros=shared, ports=ports)
