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
    """Policy findings, the netlist and the rule findings for one design (plain data)."""
    out: list[dict] = []
    if job.rules:
        try:
            fe = frontend.parse_all(job.files)
        except frontend.InputRejected as exc:
            return {"findings": [finding("GATE-INPUT", str(exc), file=job.editable)]}
        for name in job.files:
            out.extend(policy.check_file(fe, name))
        out.extend(policy.check_names(fe, job.editable, job.reserved))
    Path(job.workdir, POLICY_FILE).write_text(json.dumps(out), encoding="utf-8")
    result = synth.synthesize(Path(job.workdir), job.top, job.files)
    if job.top not in result["json"].get("modules", {}):
        return {"findings": out + [finding("GATE-PARSE", f"the design does not define module '{job.top}', "
                                           "the task's top", file=job.editable)]}
    verilog = result["verilog"]
    counts = work.measure(result["json"], job.top, verilog)
    if job.rules and (over := work.over(counts)):  # counted, not timed: the same at any load
        return {"findings": out + [finding("GATE-LIMIT", over, file=job.editable)]}
    summary: dict = {}
    if job.rules:
        fs, summary = cdc.check(result["json"], job.top, job.clocks, job.resets, job.ports, job.storage)
        out.extend(fs)
    else:
        summary = cdc.summary_of(result["json"], job.top, job.clocks, job.resets)
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
            "storage": ports.storage}
