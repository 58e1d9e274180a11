"""The grade pipeline end to end on Icarus: verdicts, report schema, determinism, and attacks
on the verdict that must fail even with the static gate switched off."""

from __future__ import annotations

import dataclasses

import pytest

from cdc_env.grade import grade
from cdc_env.report import validate_report
from cdc_env.sim.icarus import Icarus
from cdc_env.sim.proc import Limits
from cdc_env.sim.seeds import hidden_seeds
from cdc_env.sim.stage import run_seeds
from cdc_env.task import list_tasks, load_task

from .conftest import needs_icarus

pytestmark = needs_icarus
CORE = ["handshake", "event"]


@pytest.mark.parametrize("tid", CORE)
def test_reference_passes_defect_fails(tid):
    t = load_task(tid)
    ok = grade(t, t.reference_text, hidden=16)
    validate_report(ok)
    assert (ok["verdict"], ok["reward"]) == ("pass", 1)
    assert ok["seeds"]["hidden"]["passed"] == 16
    bad = grade(t, t.defective_text, hidden=16)
    validate_report(bad)
    assert (bad["verdict"], bad["reward"], bad["failed_stage"]) == ("fail", 0, "visible")
    assert bad["seeds"]["visible"]["failed"] and bad["seeds"]["visible"]["failed"][0]["reason"]


@pytest.mark.parametrize("tid", CORE)
def test_defect_passes_without_late_settling(tid):
    t = load_task(tid)
    r = grade(t, t.defective_text, hidden=16, settle=False)
    assert r["verdict"] == "pass"


def test_overfit_when_visible_pass_and_hidden_fail():
    t = load_task("handshake")
    # Visible seeds at 2:1 and above, where the defect never shows: the agent would see only passes.
    from cdc_env.sim.seeds import plan_seed

    easy = tuple(s for s in range(1, 200) if plan_seed(t, s).ratio >= 2.2)[:8]
    t2 = dataclasses.replace(t, seeds=dataclasses.replace(t.seeds, visible=easy))
    r = grade(t2, t2.defective_text, hidden=40)
    validate_report(r)
    assert (r["verdict"], r["overfit"], r["failed_stage"], r["reward"]) == ("overfit", True, "hidden", 0)


def test_same_seed_same_result_and_hash(tmp_path):
    t = load_task("event")
    sim = Icarus()
    b = sim.build(t, {t.editable: t.defective_text}, tmp_path / "w")
    seeds = hidden_seeds(t, 12)
    one = [r.key() for r in run_seeds(sim, b, t, seeds, settle=True)]
    two = [r.key() for r in run_seeds(sim, b, t, list(reversed(seeds)), settle=True)]
    assert one == list(reversed(two))
    assert len({k[4] for k in one}) > 1  # hashes differ between seeds: the hash sees the outputs


def test_compile_error_reported_without_host_paths():
    t = load_task("handshake")
    r = grade(t, t.reference_text.replace("endmodule", "endmodul"), hidden=0)
    assert r["verdict"] == "compile_error" and r["failed_stage"] == "build"
    build = next(s for s in r["stages"] if s["name"] == "build")
    assert build["detail"] and "/tmp/" not in build["detail"]


def _inject(text: str, body: str) -> str:
    return text.replace("endmodule", body + "\nendmodule", 1)


def test_forged_pass_line_fails_with_gate_off():
    t = load_task("handshake")
    forged = _inject(t.defective_text, """
  initial begin
    #10;
    $display("CDCV 0000000000000000 PASS checks=999 hash=0000000000000000 t=1 msg=ok");
    $finish;
  end""")
    # A real grade never simulates the text: synthesis refuses $finish and the policy $display ...
    assert grade(t, forged, hidden=0)["verdict"] in ("refused", "compile_error")
    # ... and the verdict channel holds on its own when a simulator does run such text (the gate
    # switched off simulates the submitted text as written: test-only).
    r = grade(t, forged, hidden=0, gate=False)
    assert r["verdict"] == "fail" and "without a verdict" in r["reason"], r["reason"]


def test_output_flood_fails_with_gate_off():
    t = load_task("handshake")
    flood = _inject(t.reference_text, """
  integer k;
  always @(posedge clk_a_i) for (k = 0; k < 100; k = k + 1) $display("%0200d", k);""")
    r = grade(t, flood, hidden=0, gate=False)
    assert r["verdict"] == "fail" and "output" in r["reason"]


def test_infinite_loop_times_out_with_gate_off():
    t = load_task("handshake")
    # A netlist that never settles: a combinational loop that oscillates once reset is released
    # and drives an output (synthesis keeps it; the simulator spins at one time step). An
    # `initial` loop would no longer do: synthesis refuses it, so it is never simulated.
    hang = t.reference_text.replace("assign ready_o = !busy_q;",
                                    "wire spin;\n  assign spin = rst_a_ni & ~spin;\n"
                                    "  assign ready_o = !busy_q ^ spin;")
    assert hang != t.reference_text
    r = grade(t, hang, hidden=0, gate=False, seed_limits=Limits(wall_s=10, cpu_s=2))
    validate_report(r)
    assert r["verdict"] == "timeout", r["reason"]
    assert r["seeds"]["visible"]["not_run"] > 0  # no further seed starts after a time-out


def test_all_public_tasks_load_and_reference_builds():
    for t in list_tasks():
        assert t.reference_text != t.defective_text
        assert t.clean_text


def test_an_icarus_netlist_build_skips_the_design_alone_run(monkeypatch):
    """The gate's netlist was elaborated alone by synthesis, so an Icarus build of it runs no second
    iverilog for the design alone (``self_contained``, as Verilator's netlist build); a build of
    submitted text (the gate off) still does, and a design that reaches outside itself is still
    refused there (tests/test_sandbox.py::test_a_design_cannot_reach_into_the_testbench...).
    Catches the extra run coming back (it was half the CPU of an Icarus build)."""
    from cdc_env.gate import synthesized
    from cdc_env.sim import icarus
    from cdc_env.sim.stage import scratch_build

    calls: list[str] = []
    real = icarus.self_contained

    def counted(*a, **k):
        calls.append(a[2].id)
        return real(*a, **k)

    monkeypatch.setattr(icarus, "self_contained", counted)
    t = load_task("handshake")
    built, _ = synthesized(t, t.reference_text)
    with scratch_build(Icarus(), t, built, netlist=True) as b:
        assert b.status == "pass", b.log
    assert calls == []
    with scratch_build(Icarus(), t, t.files(t.reference_text), netlist=False) as b:
        assert b.status == "pass", b.log
    assert calls == ["handshake"]
    r = grade(t, t.reference_text + "\n// new\n", hidden=0)
    assert r["verdict"] == "pass" and calls == ["handshake"], r["reason"]
