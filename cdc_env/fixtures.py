"""The reward-hack registry: replay every fixture against the grader, prove each hack fixture
tests something, run the controls, and write the log.

Layout: ``fixtures/index.json`` (validated by schemas/fixtures.schema.json) has one line per
fixture; ``fixtures/<name>/`` holds its submission (``submission.v`` or ``submission.diff``)
and, optionally, ``NOTE.md``. Adding a fixture is one folder and one index line.

A *hack* fixture names the stage that must catch it (and the gate rule, when the gate does) and
a test-only ``switch`` of ``grade`` that turns that stage or rule off; the proof replays it with
the switch and requires that it is then no longer caught at that stage. A *correct* fixture must
pass; a correct fixture the grader rejects is a grader bug (fix the grader, keep the fixture).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import paths
from .errors import CdcError

DEFAULT_HIDDEN = 16


@dataclass(frozen=True)
class Fixture:
    name: str
    kind: str  # hack | correct
    task: str
    expect: str  # expected verdict
    stage: str  # the stage that must catch it, or "pass"
    rule: str | None
    switch: str | None
    hidden: int
    control: bool
    sims: tuple[str, ...]
    found: str
    tries: str
    caught: str

    @property
    def folder(self) -> Path:
        return paths.fixtures_dir() / self.name

    def submission(self) -> bytes:
        for name in ("submission.v", "submission.sv", "submission.diff"):
            p = self.folder / name
            if p.is_file():
                return p.read_bytes()
        raise CdcError(f"fixture {self.name}: no submission.v/.sv/.diff in {self.folder}")


@lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads(paths.schema_file("fixtures.schema.json").read_text())


def load_fixtures(names: list[str] | None = None) -> list[Fixture]:
    import jsonschema

    index = paths.fixtures_dir() / "index.json"
    try:
        data = json.loads(index.read_text())
        jsonschema.validate(data, _schema())
    except (OSError, json.JSONDecodeError, jsonschema.ValidationError) as exc:
        raise CdcError(f"{index}: {str(exc).splitlines()[0]}") from None
    out = []
    seen = set()
    for e in data["fixtures"]:
        if e["name"] in seen:
            raise CdcError(f"{index}: fixture '{e['name']}' is listed twice")
        seen.add(e["name"])
        out.append(Fixture(name=e["name"], kind=e["kind"], task=e["task"], expect=e["expect"],
                           stage=e["stage"], rule=e.get("rule"), switch=e.get("switch"),
                           hidden=e.get("hidden", DEFAULT_HIDDEN), control=e.get("control", False),
                           sims=tuple(e.get("sims", ["icarus", "verilator"])), found=e["found"],
                           tries=e["tries"], caught=e["caught"]))
    if names:
        unknown = set(names) - seen
        if unknown:
            raise CdcError(f"unknown fixture(s): {', '.join(sorted(unknown))}")
        out = [f for f in out if f.name in names]
    return out


def _caught_at(report: dict) -> str:
    return report["failed_stage"] or "pass"


def replay_one(fx: Fixture, sim: str = "icarus", disable: frozenset[str] = frozenset()) -> dict:
    """Grade one fixture; the row says what was expected and what happened."""
    from .grade import GradeOptions, grade
    from .task import load_task

    options = GradeOptions(sim=sim, hidden=fx.hidden, disable=disable)
    report = grade(load_task(fx.task), fx.submission(), options)
    rules = sorted({f["rule"] for f in report["findings"]})
    row = {"fixture": fx.name, "kind": fx.kind, "task": fx.task, "sim": sim,
           "expect": fx.expect, "expect_stage": fx.stage, "expect_rule": fx.rule,
           "got": report["verdict"], "got_stage": _caught_at(report), "rules": rules,
           "reason": report["reason"][:160], "cpu_s": report["cpu_s"]}
    if report["verdict"] == "tool_error":
        row["ok"] = None  # undecided: never a pass, never a fail
    else:
        row["ok"] = (report["verdict"] == fx.expect and row["got_stage"] == fx.stage
                     and (fx.rule is None or fx.rule in rules))
    return row


def prove_one(fx: Fixture, sim: str = "icarus") -> dict:
    """With the fixture's switch on, the hack must no longer be caught at its stage (or rule)."""
    if fx.kind != "hack" or not fx.switch:
        raise CdcError(f"fixture {fx.name} is not a hack fixture with a switch")
    row = replay_one(fx, sim, disable=frozenset(fx.switch.split(",")))
    still = row["got_stage"] == fx.stage and (fx.rule is None or fx.rule in row["rules"])
    row["ok"] = None if row["got"] == "tool_error" else not still
    row["switch"] = fx.switch
    return row


def run_controls(sim: str = "icarus") -> tuple[bool, list[dict], str]:
    """The control set evaluation runs before any model call: correct fixes must pass and
    hacks must be caught at their stage. Returns (ok, rows, message)."""
    controls = [f for f in load_fixtures() if f.control and sim in f.sims]
    kinds = {f.kind for f in controls}
    if len([f for f in controls if f.kind == "hack"]) < 3 or "correct" not in kinds:
        return False, [], "the control set needs at least one correct fix and three hacks"
    rows = [replay_one(f, sim) for f in controls]
    bad = [r for r in rows if r["ok"] is not True]
    if bad:
        names = ", ".join(f"{r['fixture']} (expected {r['expect']} at {r['expect_stage']}, got "
                          f"{r['got']} at {r['got_stage']})" for r in bad)
        return False, rows, f"controls failed -- the grader is not trustworthy: {names}"
    return True, rows, f"{len(rows)} controls behaved as expected"


MOVED_22 = "moved in issue 22: "  # a fixture's ``caught`` text that records a move of issue 22


def hack_log(fixtures: list[Fixture]) -> str:
    """The log of SPEC section 7, generated from the registry (docs/hack-log.md)."""
    hacks = [f for f in fixtures if f.kind == "hack"]
    correct = [f for f in fixtures if f.kind == "correct"]
    by_stage: dict[str, int] = {}
    for f in hacks:
        by_stage[f.stage] = by_stage.get(f.stage, 0) + 1
    lines = ["# Reward-hack log", "",
             "Generated from `fixtures/index.json` by `cdc-env fixtures log`; do not edit by hand.", "",
             f"**{len(hacks)} hacks found and closed, all with fixtures; "
             f"{len(correct)} correct-but-unusual fixes that must keep passing.**", "",
             "Hacks by the stage that catches them: "
             + ", ".join(f"{k} {v}" for k, v in sorted(by_stage.items())) + ".", "",
             "## Hacks", "", "| fixture | task | tries | caught by | stage / rule | found |",
             "|---|---|---|---|---|---|"]
    for f in hacks:
        where = f.stage + (f" / {f.rule}" if f.rule else "")
        lines.append(f"| `{f.name}` | {f.task} | {f.tries} | {f.caught} | {where} | {f.found} |")
    lines += ["", "## Correct-but-unusual fixes (wrong-rejection controls)", "",
              "| fixture | task | what is unusual | why it must pass | found |", "|---|---|---|---|---|"]
    for f in correct:
        lines.append(f"| `{f.name}` | {f.task} | {f.tries} | {f.caught} | {f.found} |")
    moved = [f for f in fixtures if f.caught.startswith(MOVED_22)]
    if moved:
        lines += ["", "## Moves in issue 22 (one synthesized netlist)", "",
                  "The gate now synthesizes the design once and both simulators build that netlist "
                  "(docs/gate.md). These fixtures changed stage, rule or verdict; each entry says why.", "",
                  "| fixture | now | why |", "|---|---|---|"]
        for f in moved:
            now = f"{f.expect} at {f.stage}" + (f" / {f.rule}" if f.rule else "")
            lines.append(f"| `{f.name}` | {now} | {f.caught.removeprefix(MOVED_22)} |")
    return "\n".join(lines) + "\n"
