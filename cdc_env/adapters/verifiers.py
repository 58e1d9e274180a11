"""A verifiers (v1) taskset: one task per cdc_env task, the five tools as a Toolset, the grader's reward.

    vf-eval cdc-env-verifiers --env.taskset.tasks '["handshake"]' -m MODEL --client.base-url URL \\
        --env.agent.harness.id null --env.agent.runtime.type subprocess --no-push

``CdcTaskset.load()`` yields one ``CdcTask`` per task id in ``config.tasks`` (default: every public
task; no-bug controls by id, ``handshake_control``) and information rung in ``config.rungs``
(default ``["full"]``; ``symptom``, ``minimal``: cdc_env.rungs -- ids other than full's end in
``@<rung>``). A task's prompt is ``cdc_env.prompts.task_prompt`` and its system prompt
``AGENT_SYSTEM_PROMPT`` -- the same text ``cdc-env eval`` sends. Its tools come from
``CdcToolset``, a task-scoped MCP server (one per rollout) that holds a ``CdcRepairEnv`` and answers
``read``, ``write``, ``contract``, ``run_visible`` and ``submit`` with the descriptions and the
parameter schemas of ``tools/*.json`` (argument descriptions, length bounds,
``additionalProperties: false``), unprefixed, so a model sees exactly the tools of the other
harnesses. Budgets and refusals are the environment's own.

Reward (``CdcTask.grade``): the grader's reward of the submitted design (1.0 pass, 0.0 otherwise).
If the rollout ends without a submission (the harness's turn limit, the model stopped calling
tools) the design as it stands is graded, as ``CdcRepairEnv.finalize`` does. Metrics
(``CdcTask.outcome``) explain a 0 without re-grading: ``verdict_<status>`` for every verdict
(1.0 for the rollout's), ``failed_<stage>`` for every stage (1.0 for the first that did not
pass), ``gate_<RULE>`` (1.0 for each rule whose error finding refused the design). Each rollout's
state (``CdcState``) carries the working copy, the verdict, failed stage, gate rules and reward;
the grade report itself stays in the tool server and the reward function, never in the model's
messages.

Run time: with ``--env.agent.harness.id null`` verifiers runs its chat program with ``uv run``,
which on first use downloads that program's dependencies (about 61 MB) into uv's cache; offline,
pre-fill the cache once with network, or use a harness that needs none. The tool server itself
imports only this module's dependencies (no grader work before the first tool call). Its
start-up is the import of ``verifiers.v1`` itself: measured with ``python -X importtime -c
"import cdc_env.adapters.verifiers"`` (verifiers 0.4.0), anthropic, openai and sympy types make up
about 94% of the import time, cdc_env and pyslang about 3% -- so nothing here to cut.

Not covered: a hosted (sandboxed) runtime -- the tool server runs as a local subprocess and needs
bubblewrap and the simulators on the host, like ``cdc-env grade``.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

from .. import tools as cdc_tools
from ..env import DEFAULT_HIDDEN, CdcRepairEnv
from ..grade import GradeOptions, grade
from ..prompts import AGENT_SYSTEM_PROMPT, task_prompt
from ..report import report_schema
from ..rungs import title
from ..task import list_tasks, load_task

__all__ = ["CdcTaskset"]


class CdcState(vf.State):
    """Per-rollout state shared by the tool server and the reward function."""

    design: str | None = None
    """The working copy of the editable file (None: the defect as shipped, untouched)."""
    done: bool = False
    verdict: str | None = None
    failed_stage: str | None = None
    gate_rules: list[str] = Field(default_factory=list)
    """The rules of the gate's error findings (why the gate refused the design)."""
    reward: float | None = None


# The report schema's own vocabularies (one set of names everywhere).
VERDICTS = tuple(report_schema()["properties"]["verdict"]["enum"])
STAGES = tuple(s for s in report_schema()["properties"]["failed_stage"]["enum"] if s)


def record_outcome(state: Any, report: dict) -> None:
    """Copy a grade report's verdict, failed stage, gate rules and reward into a rollout's state."""
    state.verdict = report["verdict"]
    state.failed_stage = report.get("failed_stage")
    findings = report.get("findings") or []
    state.gate_rules = sorted({f["rule"] for f in findings if f.get("severity") == "error"})
    state.reward = float(report["reward"])


class CdcTaskData(vf.TaskData):
    task_id: str
    """A public task id, or the path of a task folder."""
    hidden: int | Literal["all"] = DEFAULT_HIDDEN
    max_steps: int = 30
    max_sim_runs: int = 6
    sim: str = "icarus"
    rung: Literal["full", "symptom", "minimal"] = "full"
    """The information rung the task is told at (never changes the grade)."""


class CdcToolsetConfig(vf.ToolsetConfig):
    pass


class CdcToolset(vf.Toolset[CdcToolsetConfig, CdcState]):
    """The five tools over one CdcRepairEnv (task-scoped: one server per rollout)."""

    TOOL_PREFIX = None  # the tools keep their own names: read, write, contract, run_visible, submit

    def __init__(self, config: CdcToolsetConfig) -> None:
        super().__init__(config)
        self.env: CdcRepairEnv | None = None

    async def setup_task(self, task: Any) -> None:
        d = getattr(task, "data", task)  # verifiers passes the task data
        self.env = CdcRepairEnv(d.task_id, hidden=d.hidden, max_steps=d.max_steps,
                                max_sim_runs=d.max_sim_runs, sim=d.sim, rung=d.rung)
        self.env.reset()

    def _call(self, name: str, args: dict) -> str:
        if self.env is None:
            return "Error: the environment is not set up."
        res = self.env.step(name, args)
        self.state.design = self.env.design
        if res["done"]:
            self.state.done = True
            if res["report"]:
                record_outcome(self.state, res["report"])
        return res["observation"]

    async def read(self, path: str) -> str:
        return self._call("read", {"path": path})

    async def write(self, path: str, content: str) -> str:
        return self._call("write", {"path": path, "content": content})

    async def contract(self) -> str:
        return self._call("contract", {})

    async def run_visible(self) -> str:  # simulates: off the server's event loop
        return await asyncio.to_thread(self._call, "run_visible", {})

    async def submit(self) -> str:
        return await asyncio.to_thread(self._call, "submit", {})

    def register(self, mcp: Any) -> None:
        """Each tool with the description and the whole parameter schema of tools/*.json (MCP would
        otherwise derive a schema from the Python signature, without descriptions or bounds)."""
        for d in cdc_tools.tool_definitions():
            name = d["function"]["name"]
            mcp.add_tool(self._with_state(getattr(self, name)), name=name,
                         description=d["function"]["description"])
            mcp._tool_manager.get_tool(name).parameters = copy.deepcopy(d["function"]["parameters"])


class CdcTaskConfig(vf.TaskConfig):
    tools: CdcToolsetConfig = CdcToolsetConfig()


class CdcTask(vf.Task[CdcTaskData, CdcState, CdcTaskConfig]):
    @classmethod
    def toolsets(cls, config: CdcTaskConfig) -> list[vf.Toolset]:
        return [CdcToolset(config.tools)]

    @property
    def key(self) -> str:
        rung = "" if self.data.rung == "full" else f"@{self.data.rung}"
        return f"cdc_env/{self.data.task_id}{rung}"

    @vf.stop
    async def submitted(self, trace: vf.Trace) -> bool:
        """End the rollout once the episode is over (submitted or out of tool calls)."""
        return bool(getattr(trace.state, "done", False))

    async def _graded(self, trace: vf.Trace) -> Any:
        """The rollout's state with its outcome: the submitted design's, else (no submission) the
        working copy graded as it stands, once (metrics and reward share it)."""
        state = trace.state
        if getattr(state, "verdict", None) is None:
            task = load_task(self.data.task_id)
            design = getattr(state, "design", None) or task.given_text
            report = await asyncio.to_thread(grade, task, design,
                                             GradeOptions(sim=self.data.sim, hidden=self.data.hidden))
            record_outcome(state, report)
        return state

    @vf.metric
    async def outcome(self, trace: vf.Trace) -> dict[str, float]:
        """verdict_<status>, failed_<stage>, gate_<RULE>: why a rollout scored what it did."""
        state = await self._graded(trace)
        out = {f"verdict_{v}": float(state.verdict == v) for v in VERDICTS}
        out.update({f"failed_{st}": float(state.failed_stage == st) for st in STAGES})
        out.update({f"gate_{rule}": 1.0 for rule in state.gate_rules})
        return out

    @vf.reward(weight=1.0)
    async def grade(self, trace: vf.Trace) -> float:
        """The grader's reward: the submitted design's, else the working copy's as it stands."""
        return float((await self._graded(trace)).reward)


class CdcTasksetConfig(vf.TasksetConfig):
    tasks: list[str] = Field(default_factory=list)
    """Task ids or task folders (default: every public task)."""
    hidden: int | Literal["all"] = DEFAULT_HIDDEN
    max_steps: int = 30
    max_sim_runs: int = 6
    sim: str = "icarus"
    rungs: list[Literal["full", "symptom", "minimal"]] = Field(default_factory=lambda: ["full"], min_length=1)
    """Information rungs: one task per task id and rung (at least one: no rung would load no task)."""
    task: CdcTaskConfig = CdcTaskConfig()


class CdcTaskset(vf.Taskset[CdcTask, CdcTasksetConfig]):
    """One task per cdc_env task."""

    def load(self):
        c = self.config
        for tid in c.tasks or [t.id for t in list_tasks()]:
            t = load_task(tid)
            for rung in dict.fromkeys(c.rungs):
                key = t.id if rung == "full" else f"{t.id}@{rung}"
                yield CdcTask(CdcTaskData(id=key, name=key, description=title(t, rung), task_id=tid,
                                          prompt=task_prompt(t, c.max_steps, c.max_sim_runs, rung),
                                          system_prompt=AGENT_SYSTEM_PROMPT, hidden=c.hidden,
                                          max_steps=c.max_steps, max_sim_runs=c.max_sim_runs, sim=c.sim,
                                          rung=rung),
                              c.task)


if __name__ == "__main__":  # the tool server's process (verifiers starts it with python -m)
    CdcToolset.run()
