"""The typed Report: it agrees with report.schema.json field by field, and real grade reports
(pass, fail, gate refusal, tool_error) validate, read back typed and round-trip byte for byte."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from cdc_env.grade import grade
from cdc_env.report import Report, Stage, is_parse_only_refusal, report_schema, validate_report
from cdc_env.task import load_task

from .conftest import needs_icarus

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if not f.name.startswith("_")}


def _optional(cls: type, f: dataclasses.Field) -> bool:
    hint = typing.get_type_hints(cls)[f.name]
    return f.default is None and type(None) in typing.get_args(hint)


@pytest.mark.parametrize(("cls", "schema"), [
    (Report, report_schema()),
    (Stage, report_schema()["properties"]["stages"]["items"]),
], ids=["report", "stage"])
def test_dataclass_and_schema_agree_field_by_field(cls, schema):
    fields, props, required = _fields(cls), schema["properties"], set(schema["required"])
    assert set(fields) == set(props), (set(fields) ^ set(props))
    for name, f in fields.items():
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if name in required:
            assert not has_default, f"{cls.__name__}.{name} is required by the schema but has a default"
        else:
            assert _optional(cls, f), f"{cls.__name__}.{name} is optional in the schema: default None"


@pytest.fixture(scope="module")
def task():
    return load_task("handshake")


def _round_trip(report: dict) -> Report:
    validate_report(report)
    typed = Report.from_dict(report)
    assert typed.to_dict() == report
    assert typed.to_json(indent=1) == json.dumps(report, indent=1)  # same keys in the same order
    assert Report.from_dict(json.loads(typed.to_json())).to_dict() == report
    return typed


@needs_icarus
def test_a_pass_report(task):
    r = _round_trip(grade(task, task.reference_text, hidden=4))
    assert r.verdict == "pass" and r.gate_decision == "pass" and r.failing_seeds == []
    assert [s.name for s in r.stages] == ["allowlist", "gate", "build", "visible", "hidden"]
    assert r.stage("hidden").status == "pass" and r.stage("build").cpu_s >= 0


@needs_icarus
def test_a_fail_report_lists_its_failing_seeds(task):
    raw = grade(task, task.defective_text, hidden=4)
    r = _round_trip(raw)
    assert r.verdict == "fail" and r.gate_decision == "pass"
    failed = raw["seeds"]["visible"]["failed"]
    assert failed and [f["seed"] for f in r.failing_seeds] == [f["seed"] for f in failed]
    assert {f["stage"] for f in r.failing_seeds} == {"visible"}


@needs_icarus
def test_a_gate_refusal(task):
    sub = next((FIXTURES / "pol-finish-early").glob("submission.*")).read_text()
    r = _round_trip(grade(task, sub, hidden=4))
    assert (r.verdict, r.failed_stage, r.gate_decision) == ("refused", "gate", "refused")
    assert r.stage("build").status == "skipped" and not is_parse_only_refusal(r.findings)
    assert r.stage("visible") is not None and r.failing_seeds == []


def test_a_tool_error_report(task, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no simulator: the grader cannot decide
    r = _round_trip(grade(task, task.reference_text, hidden=4))
    assert r.verdict == "tool_error" and r.reward == 0 and r.stage("build").status == "tool_error"
    assert r.gate_decision == "pass"


def test_parse_only_refusal_rule():
    findings = [{"rule": "GATE-PARSE", "message": "cannot parse", "file": "hs_top.v"}]
    assert is_parse_only_refusal(findings)
    assert not is_parse_only_refusal([])
    assert not is_parse_only_refusal([*findings, {"rule": "POL-SYSCALL", "message": "$finish"}])


def test_unknown_keys_survive_and_missing_required_ones_are_a_clear_error():
    stage = {"name": "gate", "status": "pass", "detail": "", "future_field": [1, 2]}
    assert Stage.from_dict(stage).to_dict() == stage
    with pytest.raises(ValueError, match="missing required field"):
        Stage.from_dict({"name": "gate"})
    with pytest.raises(ValueError, match="no stage"):
        Report.from_dict({**_minimal(), "stages": []}).stage("gates")


def _minimal() -> dict:
    return {"schema_version": 1, "task": "t", "family": "f", "simulator": {}, "settle": True,
            "verdict": "pass", "reward": 1, "failed_stage": None, "overfit": False, "reason": "",
            "stages": [], "findings": [], "seeds": {}, "cpu_s": 0.0, "wall_s": 0.0}
