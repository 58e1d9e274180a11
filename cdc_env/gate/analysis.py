"""One gate analysis, start to end: source policy, synthesis, clock-domain rules on the netlist.

``analyse(job)`` is what runs inside the gate's resource-limited child: it takes plain data and
returns plain data, so it can cross a pipe. Synthesis can end the child (a Yosys error exits the
process), so the policy findings are left in the job's work directory before synthesis starts;
``after_exit`` turns what the child left there into findings. ``learn`` runs the same synthesis
on a task's own design to learn its port domains (cdc.learn). The rules run only on a netlist
within the work bounds (work.py: counted, so the verdict is the same at any load); this module
does not bound time or memory or catch crashes (__init__.py does).
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import cdc, frontend, policy, synth, work, xsafe
from .rules import finding


@dataclass
class Job:
    top: str
    editable: str
    files: dict[str, str]  # design files in build order, editable first
    clocks: dict[str, str]  # top clock port -> domain
    resets: dict[str, str]  # top reset port -> domain
    reserved: dict[str, str]  # design-unit name -> the trusted file that defines it
    ports: cdc.Ports | None  # what the task's own design says about the top's ports
    storage: bool  # the task provides cdc_ram storage
    workdir: str  # an empty scratch directory of the parent's
    rules: bool = True  # False: synthesis only (the gate is switched off; the netlist is still what runs)


POLICY_FILE = "policy.json"


def analyse(job: Job) -> dict:
    """Policy findings, the netlist and the rule findings for one design (plain data).

    Never raises for a design: an exception of the gate's own code (a bug that this input
    triggers) is a GATE-INTERNAL finding after the policy's findings so far -- a refusal, never a
    pass, deterministic for the input -- that names the line being analysed and carries the
    exception and the last frames (``internal``) for the maintainers. What the bounded child
    turns into GATE-LIMIT (MemoryError, RecursionError) is left to it."""
    out: list[dict] = []
    where: dict = {}
    try:
        return _analyse(job, out, where)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 -- a gate bug: refused with the cause, never a pass
        return {"findings": out + [internal_finding(exc, job.editable, **where)]}


def internal_finding(exc: BaseException, editable: str, stage: str = "analysis", file: str | None = None,
                     line: int | None = None) -> dict:
    """GATE-INTERNAL: the gate's code raised ``exc`` while analysing the design (at ``stage``,
    on ``file``:``line`` when known). The message says what to do; ``internal`` keeps the
    exception and its last frames, which the agent is not meant to act on."""
    at = f"line {line}" if line else "the construct you changed last"
    f = finding("GATE-INTERNAL", f"the gate could not analyse the design ({stage} failed: an internal "
                "error of the grader, recorded for its maintainers); the design is refused, never passed "
                f"-- writing {at} in plainer RTL avoids it", file=file or editable, line=line)
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)
    f["internal"] = f"{type(exc).__name__}: {exc}"[:300] + " | " + " ".join(
        ln.strip() for ln in frames[1:-1])[-600:]
    return f


def _analyse(job: Job, out: list[dict], where: dict) -> dict:
    if job.rules:
        where["stage"] = "parsing"
        try:
            fe = frontend.parse_all(job.files)
        except frontend.InputRejected as exc:
            return {"findings": [finding("GATE-INPUT", str(exc), file=job.editable)]}
        for name in job.files:
            where.update(stage="the source policy", file=name, line=None)
            out.extend(policy.check_file(fe, name, where))
        where.update(stage="the source policy", file=None, line=None)
        out.extend(policy.check_names(fe, job.editable, job.reserved))
    where.update(stage="synthesis", file=None, line=None)
    Path(job.workdir, POLICY_FILE).write_text(json.dumps(out), encoding="utf-8")
    try:
        result = synth.synthesize(Path(job.workdir), job.top, job.files)
    except work.OverBound as exc:  # counted, not timed: the same at any load
        return {"findings": out + [finding("GATE-LIMIT", str(exc), file=job.editable)]}
    if job.top not in result["json"].get("modules", {}):
        return {"findings": out + [finding("GATE-PARSE", f"the design does not define module '{job.top}', "
                                           "the task's top", file=job.editable)]}
    out.extend(result.get("drivers", []))
    verilog = result["verilog"]
    counts = work.measure(result["json"], job.top, verilog)
    if job.rules and (over := work.over(counts)):  # counted, not timed: the same at any load
        return {"findings": out + [finding("GATE-LIMIT", over, file=job.editable)]}
    summary: dict = {}
    where["stage"] = "the clock-domain rules"
    if job.rules:
        fs, summary = cdc.check(result["json"], job.top, job.clocks, job.resets, job.ports, job.storage)
        out.extend(fs)
    else:
        summary = cdc.summary_of(result["json"], job.top, job.clocks, job.resets)
    where["stage"] = "the X check"
    x_safe, x_why = xsafe.check(result["json"], job.top, job.clocks, job.resets)
    return {"findings": cdc.dedupe(out),
            "netlist": {"verilog": verilog, "sha256": synth.netlist_hash(verilog),
                        "cells": summary.get("cells", 0), "flops": summary.get("flops", 0),
                        "x_safe": x_safe, "x_why": x_why, "work": counts},
            "summary": summary}


def after_exit(job: Job, why: str) -> list[dict]:
    """Findings when the child ended without a result: the policy's (if it got that far) and why
    synthesis stopped (slang's errors, or Yosys's own)."""
    try:
        out = json.loads(Path(job.workdir, POLICY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    # Synthesis stopping on a construct the policy already reported says nothing new.
    seen = {(f["file"], f["line"]) for f in out}
    fails = [f for f in synth.failure(Path(job.workdir), job.editable, why)
             if f["rule"] != "GATE-SYNTH" or (f["file"], f["line"]) not in seen]
    return cdc.dedupe(out + (fails if fails or out else synth.failure(Path(job.workdir), job.editable, why)))


def learn(job: Job) -> dict:
    """The top's port domains and data outputs, from the task's own design (run in the child)."""
    result = synth.synthesize(Path(job.workdir), job.top, job.files)
    ports = cdc.learn(result["json"], job.top, job.clocks, job.resets)
    return {"inputs": ports.inputs, "outputs": ports.outputs, "data_outputs": sorted(ports.data_outputs),
            "storage": ports.storage, "hold": ports.hold}
