"""Parity certificates and the batched stage: what may batch, what must not, and what is caught.

* a design the two simulators run differently (it passes on Verilator and fails on Icarus) is caught by
  the parity check, gets no certificate, and its grade runs every seed alone, saying why;
* a certified stage batches, and its results equal Icarus's;
* a tampered or a stale certificate is refused and the stage runs seed by seed;
* a harness bug that leaks state between seeds is caught by the shuffled re-run of a random sample;
* Icarus and stages under 24 seeds never batch; before the gate sim="auto" uses Verilator only under a
  certificate (after it, also for a netlist proven X-safe: test_xsafe.py).
(The self-checked policy, the default, is tested in test_batch_policy.py; the tests here that
need the old rule ask for batch_policy="certified".)
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from cdc_env import parity
from cdc_env.grade import grade
from cdc_env.report import validate_report
from cdc_env.sim import certs, costmodel
from cdc_env.sim.icarus import Icarus
from cdc_env.sim.seeds import hidden_seeds
from cdc_env.sim.stage import run_stage
from cdc_env.sim.verilator import Verilator
from cdc_env.task import load_task

from .conftest import needs_icarus
from .test_verilator import needs_verilator, vl_cache  # noqa: F401 -- the fixture is used by name

pytestmark = [needs_icarus, needs_verilator, pytest.mark.usefixtures("vl_cache")]
HIDDEN = 24  # the smallest stage that may batch

# The tests below switch the static gate off to reach the seed stages (it would not refuse this
# design, but they test the stages alone).
RACE = """  // Two unreset flops: X for ever on Icarus (four-state), known on Verilator (two-state). The
  // netlist keeps them (they toggle, so synthesis cannot fold them), so the two simulators
  // disagree -- what parity exists to catch. (Races through initial blocks and delays no longer
  // reach a simulator: synthesis refuses them.)
  reg race_q, race_d;
  always @(posedge clk_a_i) begin race_q <= ~race_q; race_d <= race_q; end
  assign ready_o = !busy_q && (race_q | race_d);"""


def stage_seeds(t) -> list[int]:
    return list(t.seeds.visible) + hidden_seeds(t, HIDDEN)


@pytest.fixture(scope="module")
def hs():
    return load_task("handshake")


@pytest.fixture(scope="module")
def certified(hs):
    """A certificate for the handshake reference fix, visible + 24 hidden seeds, settling on."""
    row = parity.compare_design(hs, hs.reference_text, stage_seeds(hs), settle=True, certify=True)
    assert row.ok and row.certificate, row.as_dict()
    return certs.cert_path(hs, hs.reference_text, True)


def hidden_stage(report: dict) -> dict:
    return next(s for s in report["stages"] if s["name"] == "hidden")


def test_a_simulator_difference_is_caught_and_the_grade_runs_seed_by_seed(hs):
    race = hs.reference_text.replace("  assign ready_o = !busy_q;", RACE)
    assert race != hs.reference_text
    row = parity.compare_design(hs, race, stage_seeds(hs), settle=True, certify=True)
    assert not row.ok and row.icarus_vs_verilator  # parity sees the race ...
    assert not certs.cert_path(hs, race, True).exists()  # ... and issues no certificate
    r = grade(hs, race, sim="verilator", hidden=HIDDEN, gate=False, batch_policy="certified")
    validate_report(r)
    assert r["seeds"]["hidden"]["mode"] == "one-at-a-time"
    assert "no parity certificate" in r["seeds"]["hidden"]["mode_reason"]
    stage = hidden_stage(r)
    assert stage["mode"] == "one-at-a-time" and "every seed ran on its own" in stage["mode_reason"]
    assert grade(hs, race, sim="icarus", hidden=0, gate=False)["verdict"] == "fail"  # it is a real race
    # Under the self-checked policy the stage batches, and gives exactly the Verilator verdict the
    # old rule gave (seed by seed): the race is a difference between simulators, not between modes.
    rs = grade(hs, race, sim="verilator", hidden=HIDDEN, gate=False)
    assert rs["seeds"]["hidden"]["mode"] == "batched"
    assert rs["verdict"] == r["verdict"]
    assert rs["seeds"]["hidden"]["results"] == r["seeds"]["hidden"]["results"]
    # Its certificate is "self-checked", which sim="auto" does not accept (costmodel.choose_simulator).
    assert certs.check_certificate(hs, race, hidden_seeds(hs, HIDDEN), settle=True).basis == "self-checked"


def test_certified_stage_batches_and_equals_icarus(hs, certified):
    rv = grade(hs, hs.reference_text, sim="verilator", hidden=HIDDEN)
    validate_report(rv)
    assert rv["verdict"] == "pass"
    assert rv["seeds"]["hidden"]["mode"] == "batched"
    assert "shuffled re-run of 24 of 24 seeds" in rv["seeds"]["hidden"]["mode_reason"]
    assert rv["seeds"]["visible"]["mode"] == "one-at-a-time"  # 8 seeds: too few to batch
    ri = grade(hs, hs.reference_text, sim="icarus", hidden=HIDDEN)
    assert ri["seeds"]["hidden"]["results"] == rv["seeds"]["hidden"]["results"]
    assert ri["seeds"]["hidden"]["mode"] == "one-at-a-time"  # Icarus never batches


def test_tampered_certificate_is_refused(hs, certified):
    saved = certified.read_text()
    try:
        doc = json.loads(saved)
        first = next(iter(doc["body"]["results"]))
        doc["body"]["results"][first][2] += 1  # claim one more check for one seed
        certified.write_text(json.dumps(doc))
        check = certs.check_certificate(hs, hs.reference_text, stage_seeds(hs), settle=True)
        assert not check.ok and "tampered" in check.reason
        r = grade(hs, hs.reference_text, sim="verilator", hidden=HIDDEN, batch_policy="certified")
        assert r["verdict"] == "pass" and r["seeds"]["hidden"]["mode"] == "one-at-a-time"
        assert "tampered" in r["seeds"]["hidden"]["mode_reason"]
        assert json.loads(certified.read_text()) == doc  # the certified policy never writes one
        # Self-checked: the tampered certificate is not trusted; the stage checks itself and
        # replaces it with a certificate of its own.
        r = grade(hs, hs.reference_text, sim="verilator", hidden=HIDDEN)
        assert r["verdict"] == "pass" and r["seeds"]["hidden"]["mode"] == "batched"
        assert "tampered" in r["seeds"]["hidden"]["mode_reason"]
        assert json.loads(certified.read_text())["body"]["basis"] == "self-checked"
        certified.write_text(saved.replace(hs.id, "event", 1))  # edited anywhere: same refusal
        again = certs.check_certificate(hs, hs.reference_text, stage_seeds(hs), settle=True)
        assert "tampered" in again.reason
    finally:
        certified.write_text(saved)
    assert certs.check_certificate(hs, hs.reference_text, stage_seeds(hs), settle=True).ok


def test_stale_certificate_is_refused(hs, tmp_path):
    """A certificate names what it was issued for; a changed testbench makes it stale."""
    copy = tmp_path / "handshake"
    shutil.copytree(hs.dir, copy)
    t = load_task(copy)
    seeds = list(t.seeds.visible)
    assert parity.compare_design(t, t.reference_text, seeds, settle=False, certify=True).ok
    assert certs.check_certificate(t, t.reference_text, seeds, settle=False).ok
    (copy / t.testbench).write_text(t.path(t.testbench).read_text() + "\n// changed\n")
    check = certs.check_certificate(t, t.reference_text, seeds, settle=False)
    assert not check.ok and "stale" in check.reason and "testbench" in check.reason
    # A different patch, or the other settling mode, has no certificate at all.
    assert not certs.check_certificate(t, t.defective_text, seeds, settle=False).ok
    assert not certs.check_certificate(t, t.reference_text, seeds, settle=True).ok


def test_leaking_harness_is_caught_by_the_shuffled_rerun(hs, certified, tmp_path):
    sim = Verilator()
    leaky = sim.build(hs, {hs.editable: hs.reference_text}, tmp_path / "leaky",
                      harness_defines=("CDC_LEAK_TEST",))
    assert leaky.status == "pass"
    seeds = hidden_seeds(hs, HIDDEN)
    run = run_stage(sim, leaky, hs, seeds, settle=True, design_text=hs.reference_text)
    assert run.mode == "one-at-a-time"
    # This leak makes every seed after a batch's first run with the first one's arguments, so the
    # shuffled re-run agrees with the batch when both start with the same seed (1 in 24 here);
    # then the two lone seeds catch it.
    assert "every seed ran on its own" in run.reason
    assert "the shuffled re-run gave" in run.reason or "the seed alone gave" in run.reason, run.reason
    # Alone, the leaky runner is correct (one seed per process), and the fallback results are Icarus's.
    bi = Icarus().build(hs, {hs.editable: hs.reference_text}, tmp_path / "icarus")
    ref = run_stage(Icarus(), bi, hs, seeds, settle=True, design_text=hs.reference_text)
    assert [r.key() for r in run.results] == [r.key() for r in ref.results]
    # The same stage on a correct runner batches (so it was the leak, not the certificate).
    good = sim.build(hs, {hs.editable: hs.reference_text}, tmp_path / "good")
    assert run_stage(sim, good, hs, seeds, settle=True, design_text=hs.reference_text).mode == "batched"


def test_small_stages_never_batch(hs, certified):
    r = grade(hs, hs.reference_text, sim="verilator", hidden=HIDDEN - 1)
    assert r["seeds"]["hidden"]["mode"] == "one-at-a-time"
    assert "needs 24 or more" in r["seeds"]["hidden"]["mode_reason"]


def test_auto_uses_verilator_only_under_a_certificate(hs, certified):
    sim, why = costmodel.choose_simulator(hs, hs.defective_text, hidden=HIDDEN, settle=True)
    assert sim == "icarus" and "parity certificate" in why
    # A cost model in which Verilator is cheap (as measured for large stages): auto takes it.
    path = costmodel.model_path(hs.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    cheap = costmodel.CostModel(icarus_build=0.05, icarus_seed=0.05, verilator_fixed=0.5,
                           verilator_seed_alone=0.004, verilator_seed_batched=0.001, source="test figures")
    path.write_text(json.dumps({"model": dataclasses.asdict(cheap)}))
    try:
        r = grade(hs, hs.reference_text, sim="auto", hidden=HIDDEN)
        validate_report(r)
        assert r["simulator"]["name"] == "verilator" and "verilator batched" in r["simulator"]["choice"]
        assert r["seeds"]["hidden"]["mode"] == "batched"
    finally:
        path.unlink()
    sim, why = costmodel.choose_simulator(hs, hs.reference_text, hidden=HIDDEN, settle=True)
    assert "shipped with the package" in why  # no measurement in the cache: the shipped model
