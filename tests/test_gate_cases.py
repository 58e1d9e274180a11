"""The gate's fixture pairs (tests/gate_cases/): every rule is tripped by at least one fixture
and not tripped by at least one near-miss, and every task's own designs pass the gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_env.gate import run_gate
from cdc_env.gate.rules import RULES
from cdc_env.task import load_task, task_ids

CASES = Path(__file__).parent / "gate_cases"


def _header(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines()[:5]:
        if line.startswith("// ") and ":" in line:
            key, _, value = line[3:].partition(":")
            out[key.strip()] = value.strip()
    return out


ALL = sorted(CASES.glob("*.v"))


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_case(path):
    h = _header(path)
    task = load_task(h["task"])
    res = run_gate(task, {task.editable: path.read_text()})
    rules = {f["rule"] for f in res.findings}
    if h["expect"] == "pass":
        assert res.status == "pass", res.findings
        assert all(f["severity"] == "warning" for f in res.findings), res.findings
    else:
        assert res.status == "refused", (res.status, res.detail)
        assert h["expect"] in rules, res.findings
        for f in res.findings:
            assert set(f) == {"rule", "severity", "file", "line", "message"}
            assert f["rule"] in RULES and f["message"]
        mine = [f for f in res.findings if f["rule"] == h["expect"]]
        assert all(f["file"] == task.editable for f in mine)
        assert any(isinstance(f["line"], int) for f in mine) or h["expect"].startswith("GATE-")


# Every rule is decided by run_gate alone (issue 22: the build comparison is gone). GATE-INTERNAL
# has no design that trips it: a trip is a bug of the gate, proved by fault injection in
# tests/test_gate_integrity.py and counted by bench/bench_gate_fuzz.py (issue 36).
BUILD_RULES: set[str] = {"GATE-INTERNAL"}


def test_every_rule_has_a_trips_and_a_near_miss_fixture():
    trips = {_header(p)["expect"] for p in ALL if ".trips" in p.name}
    near = {p.name.split(".")[0] for p in ALL if ".near" in p.name}
    assert set(RULES) - BUILD_RULES <= trips, sorted(set(RULES) - BUILD_RULES - trips)
    stems = {r.lower().replace("-", "_") for r in set(RULES) - BUILD_RULES}
    assert stems <= near, sorted(stems - near)
    assert all(_header(p)["expect"] == "pass" for p in ALL if ".near" in p.name)


def test_rewire_message_says_rewired():
    task = load_task("handshake")
    for name in ("cdc_rewire.trips.v", "cdc_rewire_reset.trips.v", "cdc_rewire_otherreset.trips.v"):
        res = run_gate(task, {task.editable: (CASES / name).read_text()})
        assert any("synchronizer clock/reset rewired" in f["message"] for f in res.findings), name


def test_messages_name_the_signal():
    task = load_task("handshake")
    res = run_gate(task, {task.editable: (CASES / "cdc_raw_generate.trips.v").read_text()})
    assert any("busy_q" in f["message"] and "req_raw" in f["message"] and "cdc_sync" in f["message"]
               for f in res.findings if f["rule"] == "CDC-RAW"), res.findings


@pytest.mark.parametrize("tid", task_ids())
@pytest.mark.parametrize("which", ["defective", "clean", "reference"])
def test_task_designs_pass_the_gate(tid, which):
    task = load_task(tid)
    text = {"defective": task.defective_text, "clean": task.clean_text,
            "reference": task.reference_text}[which]
    res = run_gate(task, task.files(text))
    assert (res.status, res.findings) == ("pass", []), res.detail
