"""The request and response models of the HTTP API (pydantic; they make the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path as PathParam
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..sim import names as sim_names
from .config import MAX_SIM_RUNS_CAP, MAX_STEPS_CAP


class TaskInfo(BaseModel):
    id: str
    family: str
    title: str
    editable: str
    visible_seeds: int
    hidden_seeds: int
    control: bool = Field(False, description="a no-bug control: the family's clean design is given")


class TaskList(BaseModel):
    tasks: list[TaskInfo]


class ToolList(BaseModel):
    tools: list[dict[str, Any]]


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    tasks: int
    episodes: int
    max_episodes: int
    workers: int
    jobs_in_flight: int
    idle_timeout_s: float


EpisodeId = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9_-]{1,64}$", max_length=64)]
Hidden = Literal["all"] | Annotated[int, Field(ge=0, le=100_000)]


def _known_sim(value: str) -> str:
    known = (*sim_names(), "auto")
    if value not in known:
        raise ValueError(f"unknown simulator {value!r} (known: {', '.join(known)})")
    return value


Sim = Annotated[str, AfterValidator(_known_sim)]  # every registered backend, or "auto"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class StartRequest(_Strict):
    task: str = Field(max_length=200, description="a task id from GET /v1/tasks")
    max_steps: int = Field(30, ge=1, le=MAX_STEPS_CAP, description="tool-call budget")
    max_sim_runs: int = Field(6, ge=0, le=MAX_SIM_RUNS_CAP, description="simulation budget (run_visible)")
    hidden: Hidden | None = Field(None, description="hidden seeds graded on submit; null: server default")
    sim: Sim | None = Field(None, description="simulator; null: the server's default")
    rung: Literal["full", "symptom", "minimal"] | None = Field(
        None, description="information rung of the bug report (never changes the grade); null: full")


class StepRequest(_Strict):
    """Any JSON value is accepted for both fields: the environment answers a malformed call itself
    (``unknown_tool``, ``bad_arguments``) and counts it, exactly as CdcRepairEnv.step does."""

    tool: Any = Field(description="the tool name, as the model gave it (unknown names cost a call)")
    arguments: Any = Field(None, description="the tool's arguments: an object, the JSON text of one, or null")


class GradeRequest(_Strict):
    task: str = Field(max_length=200)
    submission: str = Field(description="the full editable file, or a unified diff against it")
    hidden: Hidden | None = None
    sim: Sim | None = None


class StepResult(BaseModel):
    observation: str
    error: str | None
    done: bool
    auto_submitted: bool
    steps_used: int
    steps_left: int
    sim_runs_used: int
    sim_runs_left: int
    reward: int | None
    report: dict[str, Any] | None = Field(description="the grade report after submit (not for the model)")


class StartResult(StepResult):
    episode_id: str
    task: str
    editable: str
    tools: list[str]
    rung: str
    control: bool
    idle_timeout_s: float


class Closed(BaseModel):
    episode_id: str
    closed: bool


class EpisodeReport(BaseModel):
    episode_id: str
    report: dict[str, Any] = Field(description="the grade report of its submission (not for the model)")
