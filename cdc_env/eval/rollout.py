"""One rollout, one-shot or agentic: the conversation, the tool steps, the grade (and, for a gate
refusal, the gate-off regrade the structural-validity gap needs), its results.jsonl row and its
trajectory file."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..env import CdcRepairEnv
from ..grade import GradeOptions, grade
from ..prompts import REMINDER, agent_messages, oneshot_messages
from ..report import GateDecision, Report
from ..task import Task
from .client import Endpoint, EndpointError, Reply
from .grading import Grader
from .parse import parse_answer
from .results import NOT_RESULTS
from .settings import EvalSettings


@dataclass
class Rollout:
    """What one rollout produced; ``row()`` is its results.jsonl line."""

    task: Task
    sample: int
    settings: EvalSettings
    rung: str = "full"
    messages: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    submission: str | None = None
    report: dict | None = None
    gate_off_report: dict | None = None
    label: str = "endpoint_error"
    failed_stage: str | None = None
    refusal: str | None = None
    parse: str | None = None
    error: str | None = None
    tool_calls: int = 0
    malformed_args: int = 0
    unknown_tools: int = 0
    sim_runs: int = 0
    reminders: int = 0
    harness_submitted: bool = False
    auto_submitted: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0
    wall_s: float = 0.0
    grader: Grader = field(default=grade, repr=False)  # local, or a backend's (scale.md)

    @property
    def grade_options(self) -> GradeOptions:
        """What the rollout's submission is graded with (EvalSettings checked sim and hidden)."""
        return GradeOptions(sim=self.settings.sim, hidden=self.settings.hidden)

    def ask(self, endpoint: Endpoint, tools: list[dict] | None = None) -> Reply:
        try:
            reply, retries = endpoint.chat(self.messages, tools)
        except EndpointError as exc:
            self.retries += exc.retries
            raise
        self.retries += retries
        self.tokens_in += reply.tokens_in
        self.tokens_out += reply.tokens_out
        return reply

    def refused(self, reply: Reply) -> None:
        self.messages.append(reply.message)
        self.label, self.failed_stage, self.refusal = "refused", "model", reply.refusal

    def graded(self, submission: str, report: dict) -> None:
        """Take a grade report; for a gate refusal, also grade with the gate off (for the gap)."""
        self.submission, self.report = submission, report
        self.label, self.failed_stage = report["verdict"], report["failed_stage"]
        if gate_result(report) == "refused":
            self.gate_off_report = self.grader(self.task, submission, replace(self.grade_options, gate=False))

    def row(self, out_dir: Path) -> dict:
        r = self.report
        gate = gate_result(r)
        findings = list(dict.fromkeys(f["rule"] for f in r["findings"])) if r else []
        return {
            "task": self.task.id, "family": self.task.family, "rung": self.rung, "control": self.task.control,
            "changed": changed(self.task, self.submission), "mode": self.settings.mode,
            "model": self.settings.model, "sample": self.sample,
            "reward": None if self.label in NOT_RESULTS else (r["reward"] if r else 0),
            "label": self.label, "overfit": bool(r and r["overfit"]),
            "failed_stage": self.failed_stage, "findings": findings,
            "tool_calls": self.tool_calls, "sim_runs": self.sim_runs,
            "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "wall_s": round(self.wall_s, 3),
            "grade_cpu_s": r["cpu_s"] if r else 0.0,
            "trajectory": str(self.trajectory_path(out_dir).relative_to(out_dir)),
            # beyond the required fields
            "gate": gate,
            "sim_verdict": _sim_verdict(r, gate, self.gate_off_report),
            "gap_cpu_s": self.gate_off_report["cpu_s"] if self.gate_off_report else 0.0,
            "refusal": self.refusal, "parse": self.parse, "error": self.error,
            "malformed_args": self.malformed_args, "unknown_tools": self.unknown_tools,
            "reminders": self.reminders, "harness_submitted": self.harness_submitted,
            "auto_submitted": self.auto_submitted, "retries": self.retries,
        }

    def trajectory_path(self, out_dir: Path) -> Path:
        sample = f"s{self.sample}" if self.rung == "full" else f"{self.rung}-s{self.sample}"
        return out_dir / "rollouts" / self.task.id / sample / "trajectory.json"

    def save(self, out_dir: Path) -> None:
        path = self.trajectory_path(out_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"task": self.task.id, "rung": self.rung, "sample": self.sample, "mode": self.settings.mode,
                "model": self.settings.model, "label": self.label, "messages": self.messages,
                "steps": self.steps, "submission": self.submission, "report": self.report,
                "gate_off_report": self.gate_off_report}
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.replace("\r\n", "\n").strip().splitlines()]


def changed(task: Task, submission: str | None) -> bool | None:
    """Whether a submission differs from the design the agent was given (trailing white space and
    line endings aside); None when nothing was submitted. For a no-bug control this is an edit."""
    if submission is None:
        return None
    return _lines(submission) != _lines(task.given_text)


def gate_result(report: dict | None) -> GateDecision | None:
    """The static gate's decision (``Report.gate_decision``): ``pass``, ``refused``, ``unknown`` (a
    parse-only refusal or a tool error), ``not_run``; None without a report, for a grade a backend
    could not make (``batch_error``), or when an earlier stage stopped the grade."""
    if report is None or report.get("batch_error"):
        return None
    return Report.from_dict(report).gate_decision


def _sim_verdict(report: dict | None, gate: GateDecision | None, gate_off: dict | None) -> str | None:
    """The verdict of simulation alone: the report's own when the gate (``gate_result(report)``)
    passed or did not run, the gate-off one when it refused."""
    if report is None:
        return None
    if gate == "refused":
        return gate_off["verdict"] if gate_off else None
    return report["verdict"] if gate in ("pass", "not_run") else None


def run_oneshot(ro: Rollout, endpoint: Endpoint) -> None:
    ro.messages = oneshot_messages(ro.task, ro.rung)
    reply = ro.ask(endpoint)
    if reply.refusal is not None:
        return ro.refused(reply)
    ro.messages.append(reply.message)
    parsed = parse_answer(reply.message.get("content"), reply.finish_reason, ro.task.top)
    ro.parse = parsed.how
    if parsed.text is None:
        ro.label, ro.failed_stage = "refused_parse", "parse"
        return
    ro.graded(parsed.text, ro.grader(ro.task, parsed.text, ro.grade_options))


def run_agentic(ro: Rollout, endpoint: Endpoint) -> None:
    s = ro.settings
    with CdcRepairEnv(ro.task, max_steps=s.max_steps, max_sim_runs=s.max_sim_runs, hidden=s.hidden,
                      sim=s.sim, grader=ro.grader, rung=ro.rung) as env:
        first = env.reset()
        ro.messages = agent_messages(ro.task, s.max_steps, s.max_sim_runs, ro.rung)
        ro.messages[-1]["content"] = first["observation"]  # the prompt plus the budget line
        tools = env.tool_definitions()
        done: dict | None = None
        while done is None:
            reply = ro.ask(endpoint, tools)
            if reply.refusal is not None:
                return ro.refused(reply)
            ro.messages.append(reply.message)
            calls = reply.message.get("tool_calls", [])
            if not calls:
                if ro.reminders:
                    ro.harness_submitted = True
                    done = env.step("submit", {})
                    ro.steps.append(_step_log("submit (by the harness)", {}, done))
                    break
                ro.reminders += 1
                ro.messages.append({"role": "user", "content": REMINDER.format(editable=ro.task.editable)})
                continue
            for call in calls:
                name, args = call["function"]["name"], call["function"]["arguments"]
                if done is not None:  # calls after the one that ended the episode are not run
                    ro.steps.append({"tool": name, "skipped": "the episode was over"})
                    continue
                res = env.step(name, args)
                ro.tool_calls += 1
                ro.malformed_args += res["error"] == "bad_arguments"
                ro.unknown_tools += res["error"] == "unknown_tool"
                ro.messages.append({"role": "tool", "tool_call_id": call["id"],
                                    "content": res["observation"]})
                ro.steps.append(_step_log(name, args, res))
                ro.sim_runs = res["sim_runs_used"]
                if res["done"]:
                    done = res
        ro.auto_submitted = done["auto_submitted"]
        ro.graded(env.design, done["report"])


def _step_log(name: str, args: object, res: dict) -> dict:
    """A tool step for the trajectory: everything but the report (kept once, at the top)."""
    return {"tool": name, "arguments": args, **{k: v for k, v in res.items() if k != "report"}}


def run_rollout(task: Task, sample: int, settings: EvalSettings, endpoint: Endpoint, out_dir: Path,
                grader: Grader = grade, rung: str = "full") -> dict:
    """Run, grade and save one rollout at ``rung``; return its row. Endpoint failures become a row too."""
    ro = Rollout(task, sample, settings, rung=rung, grader=grader)
    t0 = time.monotonic()
    try:
        (run_oneshot if settings.mode == "oneshot" else run_agentic)(ro, endpoint)
    except EndpointError as exc:
        if exc.fatal:
            raise
        ro.label, ro.failed_stage, ro.error = "endpoint_error", "endpoint", str(exc)
    ro.wall_s = time.monotonic() - t0
    ro.save(out_dir)
    return ro.row(out_dir)
