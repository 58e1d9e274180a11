"""Static gate (placeholder until the gate lands): reports honestly that it did not run."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..task import Task


@dataclass
class GateResult:
    status: str  # pass | refused | tool_error | not_run
    findings: list[dict] = field(default_factory=list)
    cpu_s: float = 0.0
    detail: str = ""


def run_gate(task: Task, files: dict[str, str]) -> GateResult:
    return GateResult(status="not_run", detail="the static gate is not implemented yet")
