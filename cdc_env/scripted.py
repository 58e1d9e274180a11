"""Scripted agents: fixed move lists (``agents/scripted/*.json``) replayed against CdcRepairEnv.

An agent file names its moves (tool + arguments, optionally repeated) and what must happen: per
move the error code and text the observation must hold, at the end the verdict, reward, budgets
used, whether the environment auto-submitted, and which design was submitted. Arguments may use
``{editable}``, ``{top}`` and ``{id}``; a ``content`` of ``{"design": KIND}`` is built here from
the task (``reference``, ``defective``, ``raw_crossing``, ``compile_error``), so one agent file
serves every task.

Every run also checks what must hold on every step (budgets count one per call, no host path in
any observation, no report before the end). An agent whose expectation needs the static gate
(``requires_gate``) is reported as ``skip`` while the gate does not run.

Adds ``cdc-env scripted [AGENT ...] [--task ...] [--json]``. Not covered: model-driven agents
(see the eval runners), HTTP (the server's client runs these same files).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import paths
from .env import CdcRepairEnv
from .errors import CdcError
from .grade import sha256
from .report import Report
from .task import Task, list_tasks, load_task

DESIGN_KINDS = ("reference", "defective", "raw_crossing", "compile_error")
_PARENS = r"(?:[^()]|\([^()]*\))*"  # text with at most one level of nested parentheses
_INSTANCE = re.compile(rf"\b(cdc_sync_bit|cdc_sync_bus|cdc_sync_pulse|cdc_sync_reset)\b"
                       rf"\s*(?:#\s*\({_PARENS}\)\s*)?\w+\s*\(({_PARENS})\)\s*;", re.S)
_PORT = re.compile(r"\.(\w+)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_THROUGH = {"d_i": "q_o", "pulse_i": "pulse_o", "rst_ni": "rst_no"}


def agents_dir() -> Path:
    return paths.agents_dir("scripted")


def load_agents() -> dict[str, dict]:
    """Every scripted agent by name, in file-name order."""
    out: dict[str, dict] = {}
    for p in sorted(agents_dir().glob("*.json")):
        try:
            agent = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CdcError(f"cannot read scripted agent {p}: {exc}") from None
        if not isinstance(agent.get("moves"), list) or agent.get("name") != p.stem:
            raise CdcError(f"{p}: a scripted agent needs 'name' (= the file name) and a list of 'moves'")
        out[p.stem] = agent
    return out


def raw_crossing(text: str) -> str:
    """Replace every synchronizer instance by a plain assignment of its input to its output."""

    def wire(m: re.Match) -> str:
        ports = dict(_PORT.findall(m.group(2)))
        for src, dst in _THROUGH.items():
            if src in ports and dst in ports:
                return f"assign {ports[dst].strip()} = {ports[src].strip()};"
        return m.group(0)

    out, n = _INSTANCE.subn(wire, text)
    if n == 0 or out == text:
        raise CdcError("raw_crossing: the design has no synchronizer instance to remove")
    return out


def compile_error(text: str) -> str:
    """The design with a syntax error just before its last ``endmodule``."""
    cut = text.rfind("endmodule")
    if cut < 0:
        raise CdcError("compile_error: the design has no endmodule")
    return text[:cut] + "  wire cdc_scripted_broken = ;\n" + text[cut:]


def design_text(task: Task, kind: str) -> str:
    """One of the task's designs (Task.design), or a variant of the defective one made here."""
    if kind in ("reference", "defective"):
        return task.design(kind)
    if kind == "raw_crossing":
        return raw_crossing(task.given_text)
    if kind == "compile_error":
        return compile_error(task.given_text)
    raise CdcError(f"unknown design kind '{kind}' (known: {', '.join(DESIGN_KINDS)})")


def _fill(value: object, task: Task) -> object:
    """Substitute placeholders and build ``{"design": KIND}`` contents."""
    if isinstance(value, str):
        return value.format(editable=task.editable, top=task.top, id=task.id)
    if isinstance(value, dict) and set(value) == {"design"}:
        return design_text(task, value["design"])
    if isinstance(value, dict):
        return {k: _fill(v, task) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, task) for v in value]
    return value


def _matches(expected: object, got: object) -> bool:
    return got in expected if isinstance(expected, list) else got == expected


@dataclass
class ScriptedRun:
    agent: str
    task: str
    outcome: str = "ok"  # ok | FAIL | skip
    problems: list[str] = field(default_factory=list)
    transcript: list[dict] = field(default_factory=list)  # every observation the model would see
    final: dict = field(default_factory=dict)
    report: dict | None = None
    expected: str = ""
    note: str = ""  # why the run was skipped

    @property
    def observations(self) -> list[str]:
        return [t["observation"] for t in self.transcript]

    def got(self) -> str:
        if self.report is None:
            return "no submission"
        r = self.report
        tail = f"@{r['failed_stage']}" if r["failed_stage"] else ""
        return f"{r['verdict']}{tail}" + (" (auto-submit)" if self.final.get("auto_submitted") else "")

    def row(self) -> dict:
        return {"agent": self.agent, "task": self.task, "expected": self.expected, "got": self.got(),
                "reward": None if self.report is None else self.report["reward"],
                "steps_used": self.final.get("steps_used"), "sim_runs_used": self.final.get("sim_runs_used"),
                "outcome": self.outcome, "problems": self.problems, "note": self.note}


def _expected_text(exp: dict) -> str:
    def one(v: object) -> str:
        return "|".join(v) if isinstance(v, list) else str(v)

    verdicts, stages = exp.get("verdict", "?"), exp.get("failed_stage")
    if isinstance(verdicts, list) and isinstance(stages, list) and len(verdicts) == len(stages):
        text = " or ".join(f"{v}@{s}" for v, s in zip(verdicts, stages, strict=True))
    else:
        text = one(verdicts) + ("@" + one(stages) if stages else "")
    return text + (" (auto-submit)" if exp.get("auto_submitted") else "")


def _host_paths(task: Task) -> list[str]:
    return [str(task.dir), str(paths.data_root()), tempfile.gettempdir().rstrip("/") + "/cdc-"]


def run_agent(agent: dict, task: Task | str, *, hidden: int | str | None = 32, sim: str = "icarus",
              gate: bool = True, make_env: Callable[..., Any] = CdcRepairEnv) -> ScriptedRun:
    """Replay one scripted agent on one task; check every expectation; never raises for a miss.

    make_env: builds the environment as ``make_env(task, hidden=, sim=, gate=, **budgets)``; any
    object with CdcRepairEnv's ``reset``/``step``/``close`` will do (an HTTP client, say).
    """
    task = load_task(task) if isinstance(task, str) else task
    exp = agent.get("expect", {})
    run = ScriptedRun(agent=agent["name"], task=task.id, expected=_expected_text(exp))
    budgets = agent.get("env", {})
    env = make_env(task, hidden=hidden, sim=sim, gate=gate, **budgets)
    host = _host_paths(task)
    max_steps = 0

    def check_step(label: str, res: dict, before: int) -> None:
        obs = res["observation"]
        run.transcript.append({k: v for k, v in res.items() if k != "report"} | {"call": label})
        if res["steps_used"] + res["steps_left"] != max_steps or res["sim_runs_left"] < 0:
            run.problems.append(f"{label}: budgets inconsistent")
        if res["error"] != "episode_over" and res["steps_used"] != before + 1:
            run.problems.append(f"{label}: tool-call count went {before} -> {res['steps_used']}")
        if any(h in obs for h in host):
            run.problems.append(f"{label}: a host path reached the observation")
        if (res["report"] is None) == res["done"] and res["error"] != "episode_over":
            run.problems.append(f"{label}: report given={res['report'] is not None}, done={res['done']}")

    try:
        first = env.reset()
        max_steps = first["steps_left"]
        run.transcript.append({k: v for k, v in first.items() if k != "report"} | {"call": "reset"})
        moves_done = 0
        total = sum(int(m.get("repeat", 1)) for m in agent["moves"])
        for i, move in enumerate(agent["moves"]):
            args = _fill(move.get("args", {}), task)
            want = _fill(move.get("expect", {}), task)
            for k in range(int(move.get("repeat", 1))):
                if run.final.get("done"):
                    break
                label = f"move {i + 1}" + (f".{k + 1}" if move.get("repeat") else "") + f" {move['tool']}"
                before = run.final.get("steps_used", 0)
                res = env.step(move["tool"], args)
                moves_done += 1
                check_step(label, res, before)
                run.final = {k2: v for k2, v in res.items() if k2 != "report"}
                if res["report"] is not None:
                    run.report = res["report"]
                if "error" in want and res["error"] != want["error"]:
                    run.problems.append(f"{label}: error {res['error']!r}, expected {want['error']!r}")
                for s in want.get("contains", []):
                    if s not in res["observation"]:
                        run.problems.append(f"{label}: observation lacks {s!r}")
        _check_final(run, exp, task, moves_done < total)
    finally:
        env.close()
    if run.outcome != "skip":
        run.outcome = "FAIL" if run.problems else "ok"
    return run


def _check_final(run: ScriptedRun, exp: dict, task: Task, left_over: bool) -> None:
    r = run.report
    if r is None:
        run.problems.append("the episode ended without a submission")
        return
    if exp.get("requires_gate"):
        if Report.from_dict(r).gate_decision == "not_run" and not run.problems:
            run.outcome = "skip"
            run.note = "the static gate does not run yet (run_gate returns not_run); this agent needs it"
            return
    for key in ("verdict", "failed_stage", "reward"):
        if key in exp and not _matches(exp[key], r[key]):
            run.problems.append(f"{key} {r[key]!r}, expected {exp[key]!r}")
    for key in ("auto_submitted", "steps_used", "sim_runs_used"):
        if key in exp and run.final.get(key) != exp[key]:
            run.problems.append(f"{key} {run.final.get(key)!r}, expected {exp[key]!r}")
    if "submitted" in exp and r["submission_sha256"] != sha256(design_text(task, exp["submitted"])):
        run.problems.append(f"the submitted design is not the {exp['submitted']} design")
    if "moves_left_over" in exp and left_over != exp["moves_left_over"]:
        run.problems.append(f"moves left over: {left_over}, expected {exp['moves_left_over']}")


def run_all(names: list[str] | None = None, tasks: list[str] | None = None, **kw) -> list[ScriptedRun]:
    agents = load_agents()
    unknown = [n for n in names or [] if n not in agents]
    if unknown:
        raise CdcError(f"unknown scripted agent(s) {', '.join(unknown)} (known: {', '.join(agents)})")
    chosen = [agents[n] for n in names] if names else list(agents.values())
    task_objs = [load_task(t) for t in tasks] if tasks else list_tasks()
    return [run_agent(a, t, **kw) for t in task_objs for a in chosen]
