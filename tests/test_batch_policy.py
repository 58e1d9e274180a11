"""The batching policies of a Verilator hidden stage (stage.run_stage_batched, docs/certs.md).

* "self-checked" (the default): a first grade batches without a certificate, checked against a
  shuffled re-run of a random sample of its seeds and two seeds alone (drawn after the batch ran),
  and issues a certificate of basis "self-checked"
  that a re-grade then checks against; "certified" (the old rule) runs it seed by seed;
* the policy comes from the keyword, else $CDC_ENV_BATCH_POLICY; an unknown name is a one-line
  error (ValueError; CLI exit 2); the report says which policy ran;
* every channel through which one seed of a batch could reach the next -- files under the batch's
  /tmp ($fopen/$fwrite, $system), the process-wide random state ($urandom), statics that outlive
  a context (class members), simulation time -- either keeps the design out of batching (the
  verdict is then the one-at-a-time verdict) or cannot differ (time restarts per context). For
  the file channel the test also shows the channel is real: the same build batched directly
  gives other results than seed by seed. All with the static gate off.
* sim="auto" does not take Verilator on a self-checked certificate (Verilator has no X/Z).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from cdc_env.grade import grade
from cdc_env.report import validate_report
from cdc_env.sim import certs, costmodel, stage
from cdc_env.sim.base import SEED_LIMITS, BatchRun, Build, SeedResult
from cdc_env.sim.seeds import hidden_seeds, plan_seed
from cdc_env.sim.verilator import Verilator
from cdc_env.task import load_task

from .conftest import needs_icarus
from .test_verilator import needs_verilator, vl_cache  # noqa: F401 -- the fixture is used by name

pytestmark = [needs_icarus, needs_verilator, pytest.mark.usefixtures("vl_cache")]
HIDDEN = 24
READY = "  assign ready_o = !busy_q;"

# Designs that behave differently after an earlier seed of the same process: "marked" holds the
# requester's ready_o low, so a marked seed fails. Each replaces the reference's ready_o line.
FILE_MARK = """  integer mark_fd;
  reg marked = 1'b0;
  initial begin
    mark_fd = $fopen("/tmp/cdc_mark", "r");
    if (mark_fd != 0) begin marked = 1'b1; $fclose(mark_fd); end
    else begin mark_fd = $fopen("/tmp/cdc_mark", "w"); $fwrite(mark_fd, "x"); $fclose(mark_fd); end
  end
  assign ready_o = !busy_q && !marked;"""
SYSTEM_MARK = """  integer st;
  reg marked = 1'b0;
  initial begin
    st = $system("test -e /tmp/cdc_mark2");
    if (st == 0) marked = 1'b1; else st = $system("touch /tmp/cdc_mark2");
  end
  assign ready_o = !busy_q && !marked;"""
RANDOM_MARK = """  reg [31:0] r0;
  reg marked = 1'b0;
  initial begin r0 = $urandom; marked = r0[0] & r0[1]; end
  assign ready_o = !busy_q && !marked;"""
STATIC_MARK = """  class cnt_c;
    static int n = 0;
  endclass
  reg marked = 1'b0;
  initial begin cnt_c::n = cnt_c::n + 1; marked = cnt_c::n > 1; end
  assign ready_o = !busy_q && !marked;"""
RANDCASE_MARK = """  reg marked = 1'b0;
  initial randcase 1: marked = 1'b0; 1: marked = 1'b0; endcase
  assign ready_o = !busy_q && !marked;"""
# Draws on every clock until one marks the design: what a seed draws depends on the process's
# random state when it starts.
POSITION_MARK = """  reg [31:0] r0;
  reg marked = 1'b0;
  always @(posedge clk_a_i) if (!marked) begin r0 = $urandom; marked <= r0[2:0] == 3'd5; end
  assign ready_o = !busy_q && !(marked && r0[3]);"""
# Simulation time: a fresh context per seed starts at 0, so a design keyed on time sees the same
# time batched and alone; reading it takes a system function, which keeps a design out of
# batching all the same.
TIME_MARK = """  reg marked = 1'b0;
  initial begin #1; if ($time != 1 || $realtime != 1.0) marked = 1'b1; end
  assign ready_o = !busy_q && !marked;"""
# Output: a seed's output limit applies to a whole batch, and printing takes a system task.
PRINT_MARK = """  reg marked = 1'b0;
  always @(posedge clk_a_i) $display("cycle");
  assign ready_o = !busy_q && !marked;"""


@pytest.fixture(scope="module")
def hs():
    return load_task("handshake")


def variant(hs, body: str) -> str:
    text = hs.reference_text.replace(READY, body)
    assert text != hs.reference_text
    return text


def keys(report: dict, stage: str = "hidden") -> list:
    return report["seeds"][stage]["results"]


def test_first_grade_batches_self_checked_and_issues_a_certificate(hs):
    text = hs.reference_text + "\n// a new patch\n"
    assert not certs.cert_path(hs, text, True).exists()
    r = grade(hs, text, sim="verilator", hidden=HIDDEN)
    validate_report(r)
    assert r["verdict"] == "pass" and r["batch_policy"] == "self-checked"
    hid = r["seeds"]["hidden"]
    assert hid["mode"] == "batched", hid["mode_reason"]
    assert "self-checked" in hid["mode_reason"] and "shuffled re-run of 24 of 24" in hid["mode_reason"]
    check = certs.check_certificate(hs, text, hidden_seeds(hs, HIDDEN), settle=True)
    assert check.ok and check.basis == "self-checked"
    # The re-grade checks against that certificate as well; its results are the alone results.
    again = grade(hs, text, sim="verilator", hidden=HIDDEN)
    assert again["seeds"]["hidden"]["mode"] == "batched"
    assert "(self-checked) issued" in again["seeds"]["hidden"]["mode_reason"]
    alone = grade(hs, text, sim="verilator", hidden=HIDDEN, batch=False)
    assert keys(alone) == keys(r) == keys(again)
    # The old rule does not take a self-checked certificate for a parity one.
    old = grade(hs, text, sim="verilator", hidden=HIDDEN, batch_policy="certified")
    assert old["seeds"]["hidden"]["mode"] == "one-at-a-time"
    assert "certificate is self-checked" in old["seeds"]["hidden"]["mode_reason"]
    # The same results on Icarus (this patch has no simulator difference).
    assert keys(grade(hs, text, sim="icarus", hidden=HIDDEN)) == keys(r)
    # A self-checked certificate never lets sim="auto" pick Verilator, even one covering every
    # seed and with a cost model in which Verilator is far cheaper.
    every = [SeedResult(seed=d["seed"], status=d["status"], reason="", checks=d["checks"],
                        trace_hash=d["hash"], sim_time_ps=d["t"])
             for d in keys(alone, "visible") + keys(alone)]
    certs.issue_certificate(hs, text, every, settle=True, basis="self-checked")
    cheap = costmodel.CostModel(icarus_build=0.05, icarus_seed=0.05, verilator_fixed=0.5,
                           verilator_seed_alone=0.004, verilator_seed_batched=0.001, source="test figures")
    path = costmodel.model_path(hs.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"model": dataclasses.asdict(cheap)}))
    try:
        sim, why = costmodel.choose_simulator(hs, text, hidden=HIDDEN, settle=True)
    finally:
        path.unlink()
    assert sim == "icarus" and "X/Z" in why


def test_certified_policy_keeps_the_old_rule(hs, monkeypatch):
    text = hs.reference_text + "\n// another new patch\n"
    r = grade(hs, text, sim="verilator", hidden=HIDDEN, batch_policy="certified")
    validate_report(r)
    assert r["batch_policy"] == "certified"
    assert r["seeds"]["hidden"]["mode"] == "one-at-a-time"
    assert "no parity certificate" in r["seeds"]["hidden"]["mode_reason"]
    assert not certs.cert_path(hs, text, True).exists()
    monkeypatch.setenv(certs.BATCH_POLICY_ENV, "certified")
    r2 = grade(hs, text, sim="verilator", hidden=HIDDEN)
    assert r2["batch_policy"] == "certified" and r2["seeds"]["hidden"]["mode"] == "one-at-a-time"
    monkeypatch.setenv(certs.BATCH_POLICY_ENV, "sometimes")
    with pytest.raises(ValueError, match="CDC_ENV_BATCH_POLICY: unknown batching policy 'sometimes'"):
        grade(hs, text, sim="verilator", hidden=HIDDEN)
    with pytest.raises(ValueError, match="batch_policy: unknown"):
        grade(hs, text, sim="verilator", hidden=HIDDEN, batch_policy="never")


def test_cli_batch_policy(hs, tmp_path):
    sub = tmp_path / "sub.v"
    sub.write_text(hs.reference_text)
    cmd = [sys.executable, "-m", "cdc_env.cli", "grade", "handshake", str(sub), "--hidden", "0", "--json"]
    out = subprocess.run([*cmd, "--batch-policy", "certified"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["batch_policy"] == "certified"
    bad = subprocess.run([*cmd, "--batch-policy", "never"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    env_bad = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                             env={**os.environ, certs.BATCH_POLICY_ENV: "sometimes"})
    assert env_bad.returncode == 2 and "Traceback" not in env_bad.stderr
    assert len(env_bad.stderr.strip().splitlines()) == 1 and "sometimes" in env_bad.stderr


@pytest.mark.parametrize("body,hazard", [(FILE_MARK, "file: VL_FOPEN"), (SYSTEM_MARK, "system: VL_SYSTEM"),
                                         (RANDOM_MARK, "random: VL_"), (STATIC_MARK, "class: VlClass"),
                                         (RANDCASE_MARK, "random: VL_RANDOM"),
                                         (TIME_MARK, None), (PRINT_MARK, None)],
                         ids=["file", "system", "random", "static", "randcase", "time", "print"])
def test_a_stateful_build_never_batches_and_matches_one_seed_per_process(hs, body, hazard):
    """Batching is decided from what the build can do (random or stateful runtime calls in the
    generated C++), not from a list of source constructs: randcase, which the old source scan
    missed, keeps the design out like $urandom. Time and output are per context: they batch, and
    the verdict is the one-seed-per-process verdict either way."""
    text = variant(hs, body)
    r = grade(hs, text, sim="verilator", hidden=HIDDEN, gate=False)
    validate_report(r)
    if r["failed_stage"] == "build":
        pytest.skip(f"Verilator does not build this construct: {r['reason'][:120]}")
    hid = r["seeds"].get("hidden")
    assert hid is not None, r["reason"]
    if hazard is not None:
        assert hid["mode"] == "one-at-a-time"
        assert "batching refused: the build calls" in hid["mode_reason"] and hazard in hid["mode_reason"]
        assert not certs.cert_path(hs, text, True).exists()
    alone = grade(hs, text, sim="verilator", hidden=HIDDEN, gate=False, batch=False)
    assert (r["verdict"], keys(r)) == (alone["verdict"], keys(alone))


def test_batch_hazards_come_from_the_build(hs, tmp_path):
    """Dead randomness is removed by Verilator and is no hazard; live randomness is, however it is
    spelled; the reference has none. The result is cached with the model."""
    sim = Verilator()
    dead = variant(hs, READY + "\n  reg [31:0] unused_r;\n  always @(posedge clk_a_i) unused_r <= $urandom;")
    for text, want in ((hs.reference_text, []), (dead, []), (variant(hs, RANDCASE_MARK), ["random"])):
        for attempt in ("build", "cached"):
            b = sim.build(hs, {hs.editable: text}, tmp_path / f"{len(want)}-{attempt}-{hash(text)}")
            assert b.status == "pass", b.log[-300:]
            assert sorted({h.split(":")[0] for h in b.extra["batch_hazards"]}) == want, (attempt, b.extra)


def test_a_design_that_depends_on_its_batch_position_gets_the_one_seed_verdict(hs, tmp_path):
    """Gate off, batching forced (the raw batch runner, no policy): a design that draws $urandom
    on every clock until a draw marks it. Verilator's random state is per thread, so before the
    harness reset it between seeds, a seed's draws depended on how many seeds ran before it in
    the process. Now every seed of a batch draws what it draws alone, in either order."""
    text = variant(hs, POSITION_MARK)
    sim = Verilator()
    b = sim.build(hs, {hs.editable: text}, tmp_path / "b")
    assert b.status == "pass", b.log[-500:]
    plans = [plan_seed(hs, s) for s in hidden_seeds(hs, 8)]
    alone = [sim.run_seed(b, p, settle=True).key() for p in plans]
    assert [r.key() for r in sim.run_batch(b, plans, settle=True).results] == alone
    assert [r.key() for r in sim.run_batch(b, plans[::-1], settle=True).results] == alone[::-1]
    r = grade(hs, text, sim="verilator", hidden=HIDDEN, gate=False)
    alone_grade = grade(hs, text, sim="verilator", hidden=HIDDEN, gate=False, batch=False)

    def per_stage(report: dict) -> dict:
        return {stage: s["results"] for stage, s in report["seeds"].items()}

    assert (r["verdict"], per_stage(r)) == (alone_grade["verdict"], per_stage(alone_grade))


def test_the_file_channel_is_real_in_a_raw_batch(hs, tmp_path):
    """Without the policy, seed 1 of a batch marks /tmp and every later seed fails: the channel the
    policy closes exists (so the test above can fail)."""
    text = variant(hs, FILE_MARK)
    sim = Verilator()
    b = sim.build(hs, {hs.editable: text}, tmp_path / "b")
    assert b.status == "pass", b.log[-500:]
    plans = [plan_seed(hs, s) for s in hidden_seeds(hs, 4)]
    batched = sim.run_batch(b, plans, settle=True).results
    alone = [sim.run_seed(b, p, settle=True) for p in plans]
    assert [r.status for r in alone] == ["pass"] * 4
    assert batched[0].status == "pass" and {r.status for r in batched[1:]} == {"fail"}
    # ... and the self-checked stage (no certificate) would have caught it even without the scan.
    fwd_rev = sim.run_batch(b, plans[::-1], settle=True).results
    assert certs.first_difference(batched, fwd_rev, "a", "b")


def test_time_restarts_for_every_seed_of_a_raw_batch(hs, tmp_path):
    """Even in a raw batch (no policy), a design keyed on simulation time sees what it sees alone."""
    text = variant(hs, TIME_MARK)
    sim = Verilator()
    b = sim.build(hs, {hs.editable: text}, tmp_path / "b")
    assert b.status == "pass", b.log[-500:]
    plans = [plan_seed(hs, s) for s in hidden_seeds(hs, 4)]
    batched = sim.run_batch(b, plans, settle=True).results
    alone = [sim.run_seed(b, p, settle=True) for p in plans]
    assert [r.key() for r in batched] == [r.key() for r in alone]
    assert {r.status for r in alone} == {"pass"}


def test_a_batch_runs_under_one_seeds_limits(hs, tmp_path):
    """A seed may not use more in a batch than alone: a batch over one seed's output limit is
    incomplete, and the stage runs seed by seed."""
    sim = Verilator()
    b = sim.build(hs, {hs.editable: hs.reference_text}, tmp_path / "b")
    seeds = hidden_seeds(hs, HIDDEN)
    tight = dataclasses.replace(SEED_LIMITS, out_bytes=200)
    results, reason, _, _ = stage.run_stage_batched(sim, b, hs, hs.reference_text, seeds, settle=True,
                                                     limits=tight, policy="self-checked")
    assert results is None and "incomplete" in reason and "output" in reason
    ok, _, _, _ = stage.run_stage_batched(sim, b, hs, hs.reference_text, seeds, settle=True,
                                           policy="self-checked")
    assert ok is not None and len(ok) == HIDDEN


def test_no_sandbox_never_batches_self_checked(hs):
    text = hs.reference_text + "\n// unsandboxed\n"
    r = grade(hs, text, sim="verilator", hidden=HIDDEN, sandbox=False)
    assert r["seeds"]["hidden"]["mode"] == "one-at-a-time"
    assert "needs the sandbox" in r["seeds"]["hidden"]["mode_reason"]


def test_certificates_are_pruned_oldest_first(tmp_path, monkeypatch):
    monkeypatch.setattr(certs, "cert_dir", lambda: tmp_path)
    for i in range(6):
        f = tmp_path / f"t-{i}.json"
        f.write_text("{}")
        os.utime(f, (1000 + i, 1000 + i))
    assert certs.prune_certificates(keep=4) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"t-{i}.json" for i in range(2, 6)]
    assert certs.prune_certificates(keep=4) == 0


def test_cost_model_sources(hs, tmp_path, monkeypatch):
    """load_model: the cache's measurement, else the model shipped for the task, else the default."""
    shipped = tmp_path / "cost_models.json"
    model = dataclasses.asdict(costmodel.CostModel(0.1, 0.02, 1.5, 0.01, 0.0005, "measured on a test day"))
    shipped.write_text(json.dumps({"models": {hs.id: model}}))
    monkeypatch.setattr(costmodel, "SHIPPED_MODELS", shipped)
    m = costmodel.load_model(hs)
    assert m.icarus_seed == 0.02 and m.source.startswith("shipped with the package")
    assert costmodel.load_model(load_task("event")) == costmodel.DEFAULT_MODEL  # not shipped: the default
    shipped.write_text(json.dumps({"models": {hs.id: {**model, "icarus_seed": "fast"}}}))
    assert costmodel.load_model(hs) == costmodel.DEFAULT_MODEL  # a malformed entry is not used
    cache = costmodel.model_path(hs.id)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"model": {**model, "source": "cache"}}))
    try:
        assert costmodel.load_model(hs).source == "cache"
    finally:
        cache.unlink()
    rows = [{"task": hs.id, "model": model}]
    costmodel.ship_models(rows, shipped)
    assert json.loads(shipped.read_text())["models"][hs.id] == model


def test_every_task_has_a_shipped_cost_model():
    from cdc_env.task import list_tasks

    doc = json.loads(costmodel.SHIPPED_MODELS.read_text())
    missing = [t.id for t in list_tasks() if costmodel._model_from(doc["models"].get(t.id)) is None]
    assert not missing, f"no shipped cost model for {missing}: run cdc-env cost --ship"


class _FakeBatcher:
    """A stand-in simulator that records what the batched stage asks of it. ``leak``: a seed's
    result depends on the seed that ran before it in the same process (a grader bug)."""

    def __init__(self, log: list, leak: bool = False):
        self.log, self.leak = log, leak

    def _result(self, seed: int, before: int | None) -> SeedResult:
        h = f"{seed:x}" + (f"-{before:x}" if self.leak and before is not None else "")
        return SeedResult(seed=seed, status="pass", checks=3, trace_hash=h, sim_time_ps=seed)

    def run_batch(self, build, plans, *, settle, sandbox=True, tag="batch", limits=None):
        seeds = [p.seed for p in plans]
        self.log.append(("batch", tag, seeds))
        before = [None, *seeds[:-1]]
        return BatchRun([self._result(s, b) for s, b in zip(seeds, before, strict=True)], 0.0, 0)

    def run_seed(self, build, plan, *, settle, sandbox=True, limits=None):
        self.log.append(("alone", plan.seed))
        return self._result(plan.seed, None)


def _fake_stage(hs, tmp_path, sim, n: int, rng=None):
    build = Build("pass", "", tmp_path, extra={"batch_hazards": []})
    cert = certs.CertCheck(False, "no certificate (test)", tmp_path / "none.json", readable=True)
    seeds = hidden_seeds(hs, n)
    return seeds, stage.run_stage_batched(sim, build, hs, hs.reference_text, seeds, settle=True,
                                          cert=cert, rng=rng, policy="self-checked")


def test_check_sample_size():
    assert [stage.check_sample_size(n) for n in (24, 32, 200, 240, 241, 1000)] == [24, 24, 24, 24, 25, 100]


def test_the_check_sample_is_drawn_after_the_batch_and_is_not_predictable(hs, tmp_path, monkeypatch):
    """The re-run's seeds, their order and the two lone seeds come from a secure RNG that is
    created and first used only after the batched run returned; two stages draw different ones."""
    log: list = []

    class Recording(stage.secrets.SystemRandom):
        def __init__(self, *a, **k):
            log.append(("rng created",))
            super().__init__(*a, **k)

        def sample(self, population, k, **kw):
            log.append(("rng sample", k))
            return super().sample(population, k, **kw)

    monkeypatch.setattr(stage.secrets, "SystemRandom", Recording)
    sim = _FakeBatcher(log)
    seeds, (results, reason, _, _) = _fake_stage(hs, tmp_path, sim, 200)
    assert results is not None and "shuffled re-run of 24 of 200 seeds" in reason, reason
    kinds = [e[0] for e in log]
    assert kinds[0] == "batch" and log[0][1:] == ("batch", seeds)  # the whole stage first, in order
    assert kinds[1:3] == ["rng created", "rng sample"]  # the RNG exists only after the batch ran
    check = log[3]
    assert check[:2] == ("batch", "batch-check") and len(check[2]) == 24 == len(set(check[2]))
    assert set(check[2]) <= set(seeds)
    assert kinds[4:] == ["rng sample", "alone", "alone"]
    # Not predictable: another stage draws another sample in another order (two equal draws of 24
    # of 200 in order: probability below 1e-50).
    log.clear()
    _fake_stage(hs, tmp_path, sim, 200)
    again = next(e for e in log if e[:2] == ("batch", "batch-check"))
    assert again[2] != check[2]
    # A sample is shuffled: 24 of 24 seeds come back as a permutation, not in the stage's order
    # nor its reverse (each draw: probability 2/24! of either).
    log.clear()
    small, _ = _fake_stage(hs, tmp_path, sim, 24)
    order = next(e for e in log if e[:2] == ("batch", "batch-check"))[2]
    assert sorted(order) == sorted(small) and order not in (small, small[::-1])


def test_a_leak_between_seeds_is_caught_by_the_shuffled_rerun(hs, tmp_path):
    """A grader bug through which a seed sees the seed before it changes the sampled seeds' results
    in the re-run (they follow other seeds there): the stage does not batch."""
    for n in (24, 64, 200):
        seeds, (results, reason, _, _) = _fake_stage(hs, tmp_path, _FakeBatcher([], leak=True), n)
        assert results is None and "the shuffled re-run gave" in reason, reason
        _, (results, reason, _, _) = _fake_stage(hs, tmp_path, _FakeBatcher([]), n)
        assert results is not None, reason


def test_leaking_harness_is_caught_when_the_sample_is_part_of_the_stage(hs, tmp_path):
    """The real leaking runner (CDC_LEAK_TEST: a seed also sees every earlier seed's arguments) on
    a stage larger than its check sample (64 seeds, 24 re-run): caught, every seed runs alone."""
    sim = Verilator()
    leaky = sim.build(hs, {hs.editable: hs.reference_text}, tmp_path / "leaky",
                      harness_defines=("CDC_LEAK_TEST",))
    assert leaky.status == "pass"
    seeds = hidden_seeds(hs, 64)
    run = stage.run_stage(sim, leaky, hs, seeds, settle=True, design_text=hs.reference_text)
    assert run.mode == "one-at-a-time" and "every seed ran on its own" in run.reason
    assert "the shuffled re-run gave" in run.reason or "the seed alone gave" in run.reason, run.reason


def test_the_icarus_fit_has_a_fixed_part_from_two_seed_counts():
    """Icarus at 8+32 and 8+200 give a line (issue 37): its slope per seed, its intercept beyond
    the build the fixed part. One count alone spread the fixed part over 40 seeds and priced
    Icarus high at 8+200 (on the reset family: 1.81 predicted, 1.49 measured)."""
    import copy

    from cdc_env.cost import fit_model
    from cdc_env.grade import grade

    hs = load_task("handshake")
    real = grade(hs, hs.reference_text, hidden=0)  # a real report, its CPU figures set below

    def rep(total: float, build: float) -> dict:
        r = copy.deepcopy(real)
        r["cpu_s"] = total
        for st in r["stages"]:
            st["cpu_s"] = {"gate": 0.1, "build": build}.get(st["name"], 0.0)
        return r

    fixed, seed, build = 0.3, 0.005, 0.03
    ic32 = [rep(0.1 + build + fixed + 40 * seed, build)]
    ic200 = [rep(0.1 + build + fixed + 208 * seed, build)]
    v = [rep(0.1 + 1.2 + 208 * 0.004, 1.2)]
    m = fit_model(ic32, v, v, ic200=ic200, n_visible=8, source="test")
    assert abs(m.icarus_fixed - fixed) < 1e-4 and abs(m.icarus_seed - seed) < 1e-5
    assert abs(m.icarus(8, 200) - (build + fixed + 208 * seed)) < 1e-3
    one = fit_model(ic32, v, v, n_visible=8, source="test")  # the old fit: no fixed part
    assert one.icarus_fixed == 0.0 and one.icarus(8, 200) > m.icarus(8, 200) * 1.5


def test_the_shipped_models_have_the_two_count_icarus_fit():
    doc = json.loads(costmodel.SHIPPED_MODELS.read_text())
    assert all("icarus_fixed" in m for m in doc["models"].values()), "run cdc-env cost --ship"
