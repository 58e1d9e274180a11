"""The grade report: its JSON Schema (schemas/report.schema.json), a validator, and a typed view.

``grade()`` returns the report as a plain dict (that is what is written to JSON and sent over HTTP).
``Report.from_dict(d)`` gives a typed view of it with the questions callers ask
(``.stage(name)``, ``.gate_decision``, ``.failing_seeds``); ``.to_dict()`` / ``.to_json()`` give
back exactly the dict it came from (same keys, same order: a byte-identical round trip), so a
report can be read, inspected and re-written without changing it. tests/test_report.py checks
that the dataclasses and the JSON Schema agree field by field.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Literal

from . import paths

STAGE_NAMES = ("allowlist", "gate", "build", "visible", "hidden")
GateDecision = Literal["pass", "refused", "unknown", "not_run"]


@lru_cache(maxsize=1)
def report_schema() -> dict:
    return json.loads(paths.schema_file("report.schema.json").read_text())


def validate_report(report: dict) -> None:
    """Raise ``jsonschema.ValidationError`` if ``report`` does not follow the schema."""
    import jsonschema

    jsonschema.validate(report, report_schema())


def is_parse_only_refusal(findings: list[dict]) -> bool:
    """True when the gate's only findings say it could not parse the design (rule GATE-PARSE):
    the gate could not analyse it, which is not a decision about its CDC structure."""
    return bool(findings) and all(f.get("rule") == "GATE-PARSE" for f in findings)


class _Record:
    """A dataclass mirror of one JSON object: ``from_dict`` keeps the key order and any key it does
    not know, ``to_dict`` gives them back, so the round trip is exact. Optional fields (default
    None) absent from the source stay absent."""

    _keys: tuple[str, ...]
    _extra: dict[str, Any]
    _nested: ClassVar[dict[str, type[_Record]]] = {}  # field -> record type of the items of a list

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        if not isinstance(d, dict):
            raise ValueError(f"{cls.__name__}: expected a JSON object, not {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
        missing = [f.name for f in dataclasses.fields(cls) if f.name in names and f.name not in d
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ValueError(f"{cls.__name__}: missing required field(s) {', '.join(missing)}")
        kwargs: dict[str, Any] = {}
        for k in names & d.keys():
            v = d[k]
            if k in cls._nested and isinstance(v, list):
                v = [cls._nested[k].from_dict(x) for x in v]
            kwargs[k] = v
        obj = cls(**kwargs)
        obj._keys = tuple(d)
        obj._extra = {k: v for k, v in d.items() if k not in names}
        return obj

    def to_dict(self) -> dict[str, Any]:
        keys = self._keys or tuple(f.name for f in dataclasses.fields(self)  # type: ignore[arg-type]
                                   if not f.name.startswith("_") and (getattr(self, f.name) is not None
                                                                     or f.default is dataclasses.MISSING))
        out: dict[str, Any] = {}
        for k in keys:
            v = self._extra[k] if k in self._extra else getattr(self, k)
            if isinstance(v, list):
                v = [x.to_dict() if isinstance(x, _Record) else x for x in v]
            out[k] = v
        return out


def _private() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass
class Stage(_Record):
    """One of the five stages (allowlist, gate, build, visible, hidden) of a grade."""

    name: str
    status: str
    detail: str
    cpu_s: float | None = None
    mode: str | None = None
    mode_reason: str | None = None
    model_cache: str | None = None
    _keys: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _extra: dict[str, Any] = _private()


@dataclass
class Report(_Record):
    """The typed grade report; field meanings: schemas/report.schema.json (the test keeps them in step)."""

    schema_version: int
    task: str
    family: str
    simulator: dict[str, Any]
    settle: bool
    verdict: str
    reward: int
    failed_stage: str | None
    overfit: bool
    reason: str
    stages: list[Stage]
    findings: list[dict[str, Any]]
    seeds: dict[str, Any]
    cpu_s: float
    wall_s: float
    sandbox: bool | None = None
    disabled: list[str] | None = None
    cdc_env_version: str | None = None
    python: str | None = None
    submission_sha256: str | None = None
    fingerprints: dict[str, str] | None = None
    netlist: dict[str, Any] | None = None
    peak_rss_kb: int | None = None
    unsafe_no_sandbox: bool | None = None
    sandbox_selftest: str | None = None
    accounting: dict[str, Any] | None = None
    batch_policy: str | None = None
    control: bool | None = None
    rung: str | None = None
    _keys: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _extra: dict[str, Any] = _private()

    _nested: ClassVar[dict[str, type[_Record]]] = {"stages": Stage}

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps`` of ``to_dict()`` (keyword arguments go to json.dumps)."""
        return json.dumps(self.to_dict(), **kwargs)

    def stage(self, name: str) -> Stage | None:
        """The stage called ``name``, or None when the report has no such stage."""
        if name not in STAGE_NAMES:
            raise ValueError(f"no stage '{name}' (stages: {', '.join(STAGE_NAMES)})")
        return next((s for s in self.stages if s.name == name), None)

    @property
    def gate_decision(self) -> GateDecision | None:
        """The static gate's decision: ``pass``, ``refused``, ``unknown`` (it could not analyse the
        design -- a parse-only refusal -- or had a tool error), ``not_run``; None when an earlier
        stage stopped the grade."""
        gate = self.stage("gate")
        status = gate.status if gate is not None else None
        if status == "refused" and is_parse_only_refusal(self.findings):
            return "unknown"
        if status == "tool_error":
            return "unknown"
        return status if status in ("pass", "refused", "not_run") else None  # type: ignore[return-value]

    @property
    def failing_seeds(self) -> list[dict[str, Any]]:
        """Every seed that did not pass, visible first then hidden: the schema's ``failed`` entries
        (seed, status, reason, ...) with ``stage`` added."""
        return [{"stage": name, **f} for name in ("visible", "hidden")
                for f in (self.seeds.get(name) or {}).get("failed", [])]
