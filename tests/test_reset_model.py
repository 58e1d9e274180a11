"""The late-release model (trusted/hdl/cdc_reset.v) and the reset-domain family.

Unit level (Icarus, the trusted files alone): a cdc_arst_ff released within an eighth of a period
before its edge leaves reset late in some bits on some releases, never when released earlier or
in the time step of an edge, never with +cdc_settle=0, and always by the following edge;
cdc_sync_reset releases on the 2nd or 3rd edge. Task level: the committed rst_* folders are what
the generator writes, and the synthesized netlist carries the model with a KEY per flop.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cdc_env import paths
from cdc_env.families.rst import generator as resetfam

needs_icarus = pytest.mark.skipif(
    shutil.which("iverilog") is None or shutil.which("vvp") is None,
    reason="Icarus Verilog (iverilog, vvp) is not installed",
)

HALF = 100  # period 200 ps: the window is 8 * (t - r) < 200, i.e. releases less than 25 ps before the edge

UNIT_TB = """
`timescale 1ps / 1ps
module arst_tb;
  reg clk = 1'b0, rst_n = 1'b1;
  wire [15:0] q;
  wire srst_n;
  integer k, d, e;
  cdc_arst_ff #(.WIDTH(16), .ARST_POLARITY(1'b0), .ARST_VALUE(16'h0000), .KEY(32'd77)) u_ff (
    .CLK(clk), .ARST(rst_n), .EN(1'b1), .D(16'hffff), .Q(q));
  cdc_sync_reset #(.KEY(32'd91)) u_sync (.clk_i(clk), .rst_ni(rst_n), .rst_no(srst_n));
  always #100 clk = ~clk;  // rising edges at 100, 300, 500, ...
  initial begin
    #2 rst_n = 1'b0;
    repeat (3) @(posedge clk);  // the first reset spans edges: the model measures the clock period
    for (k = 0; k < 400; k = k + 1) begin
      d = (k % 8 == 0) ? 90 : (k % 8 == 1) ? 25 : (k % 8 == 2) ? 40 : 1 + (k * 7) % 24;
      // a rising edge is at 100 + 200 * n; release d ps before the edge after next
      @(posedge clk); @(negedge clk);
      #(100 - d) rst_n = 1'b1;
      @(posedge clk); #1 $display("FIRST %0d %h", d, q);
      e = 1;
      while (srst_n !== 1'b1 && e < 6) begin @(posedge clk); #1 e = e + 1; end
      $display("SECOND %0d %h SYNC %0d", d, q, e);
      #50 rst_n = 1'b0;
    end
    $finish;
  end
endmodule
"""


@pytest.fixture(scope="module")
def unit_vvp(tmp_path_factory) -> Path:
    if shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog (iverilog) is not installed")
    d = tmp_path_factory.mktemp("arst")
    (d / "arst_tb.v").write_text(UNIT_TB)
    r = subprocess.run(
        [
            "iverilog",
            "-g2012",
            "-s",
            "arst_tb",
            "-o",
            "arst.vvp",
            "arst_tb.v",
            *map(str, paths.primitive_files()),
        ],
        cwd=d,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return d / "arst.vvp"


def _run(vvp: Path, *plusargs: str) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    out = subprocess.run(
        ["vvp", "-n", str(vvp), *plusargs], capture_output=True, text=True, timeout=120
    ).stdout.splitlines()
    first = [(int(ln.split()[1]), int(ln.split()[2], 16)) for ln in out if ln.startswith("FIRST")]
    second = [
        (int(ln.split()[1]), int(ln.split()[2], 16), int(ln.split()[4]))
        for ln in out
        if ln.startswith("SECOND")
    ]
    assert len(first) == 400 and len(second) == 400
    return first, second


@needs_icarus
def test_close_release_is_late_per_bit_and_only_then(unit_vvp: Path) -> None:
    first, second = _run(unit_vvp, "+cdc_settle=1", "+cdc_settle_key=12345")
    close = [q for d, q in first if 0 < d < 25]
    far = [q for d, q in first if d >= 25]
    assert far and all(q == 0xFFFF for q in far), "a release outside the window was late"
    late_bits = [16 - bin(q).count("1") for q in close]
    # per bit a fair coin: about half of 16 bits late, and bits differ from release to release
    assert 6 <= sum(late_bits) / len(late_bits) <= 10, late_bits[:20]
    assert len(set(close)) > 20
    assert all(q == 0xFFFF for _d, q, _s in second), "a late bit did not leave reset on the next edge"
    lat = {d: set() for d, _q, _s in second}
    for d, _q, s in second:
        lat[d].add(s)
    assert all(v == {2} for d, v in lat.items() if d >= 25), lat
    assert set().union(*(v for d, v in lat.items() if 0 < d < 25)) == {2, 3}, lat


@needs_icarus
def test_settle_off_and_keys(unit_vvp: Path) -> None:
    first, _ = _run(unit_vvp, "+cdc_settle=0", "+cdc_settle_key=12345")
    assert all(q == 0xFFFF for _d, q in first)
    a, _ = _run(unit_vvp, "+cdc_settle=1", "+cdc_settle_key=12345")
    b, _ = _run(unit_vvp, "+cdc_settle=1", "+cdc_settle_key=12345")
    c, _ = _run(unit_vvp, "+cdc_settle=1", "+cdc_settle_key=999")
    assert a == b and a != c


RECOVERY_TB = """
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR rec_tb
module rec_tb;
  reg clk = 1'b0, rst_n = 1'b1, hold = 1'b0;
  wire [3:0] q_chg, q_same, q_held;
  wire srst_n;
  integer k, d, fails = 0;
  reg [8*160-1:0] last;
  task cdc_recovery_fail;
    begin fails = fails + 1; $sformat(last, "recovery at t=%0d", $time); end
  endtask
  task cdc_sync_fail(input [8*160-1:0] why); endtask
  task cdc_sync_note(input integer n); endtask
  task cdc_bus_note(input integer n, input [8*80-1:0] who); endtask
  task cdc_src_edge(input dst_is_a, output [63:0] edge_t); edge_t = 64'd0; endtask
  // changes on the first edge out of reset (D differs from the reset value)
  cdc_arst_ff #(.WIDTH(4), .ARST_POLARITY(1'b0), .ARST_VALUE(4'b0001), .KEY(32'd5)) u_chg (
    .CLK(clk), .ARST(rst_n), .EN(1'b1), .D(4'b0010), .Q(q_chg));
  // D equal to the reset value: leaving reset changes nothing
  cdc_arst_ff #(.WIDTH(4), .ARST_POLARITY(1'b0), .ARST_VALUE(4'b0001), .KEY(32'd6)) u_same (
    .CLK(clk), .ARST(rst_n), .EN(1'b1), .D(4'b0001), .Q(q_same));
  // held by its enable on the first edge: changes nothing either
  cdc_arst_ff #(.WIDTH(4), .ARST_POLARITY(1'b0), .ARST_VALUE(4'b0001), .KEY(32'd7)) u_held (
    .CLK(clk), .ARST(rst_n), .EN(hold), .D(4'b0010), .Q(q_held));
  // the reset synchronizer's first flop changes on that edge too, and is exempt
  cdc_sync_reset #(.KEY(32'd91)) u_sync (.clk_i(clk), .rst_ni(rst_n), .rst_no(srst_n));
  always #100 clk = ~clk;  // rising edges at 100, 300, 500, ...
  initial begin
    #2 rst_n = 1'b0;
    repeat (3) @(posedge clk);
    for (k = 0; k < 40; k = k + 1) begin
      d = (k % 2 == 0) ? 10 : 60;  // close (10 ps before the edge) or not (60 ps)
      @(posedge clk); @(negedge clk);
      #(100 - d) rst_n = 1'b1;
      @(posedge clk); #1 $display("REL %0d %0d", d, fails);
      #50 rst_n = 1'b0;
    end
    $display("LAST %0s", last);
    $finish;
  end
endmodule
"""


def _recovery_run(tmp_path: Path, tb: str, settle: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Build ``tb`` (a rec_tb) with the primitives, run it, and return its output lines and, per
    release, (ps before the edge, recovery reports on that release)."""
    (tmp_path / "rec_tb.v").write_text(tb)
    r = subprocess.run(["iverilog", "-g2012", "-s", "rec_tb", "-o", "rec.vvp", "rec_tb.v",
                        *map(str, paths.primitive_files())], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = subprocess.run(["vvp", "-n", "rec.vvp", f"+cdc_settle={settle}", "+cdc_settle_key=3"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120).stdout.splitlines()
    rel = [tuple(map(int, ln.split()[1:])) for ln in out if ln.startswith("REL")]
    assert len(rel) == 40
    return out, [(d, n - (rel[i - 1][1] if i else 0)) for i, (d, n) in enumerate(rel)]


@needs_icarus
@pytest.mark.parametrize("settle", ["1", "0"])
def test_recovery_check_reports_a_close_release_that_changes_a_flop(tmp_path: Path, settle: str) -> None:
    """Only u_chg, and only on close releases, reports to the monitor's cdc_recovery_fail: a flop
    whose D equals its reset value, a disabled one and cdc_sync_reset's first flop never do, nor
    anything with late settling off."""
    out, steps = _recovery_run(tmp_path, RECOVERY_TB, settle)
    if settle == "0":
        assert all(s == 0 for _d, s in steps), steps
        return
    assert all(s == (1 if d == 10 else 0) for d, s in steps), steps
    assert out[-1].startswith("LAST recovery at t="), out[-1]


STOPPED_CLOCK_TB = RECOVERY_TB.replace(
    "always #100 clk = ~clk;", "reg stop = 1'b0;\n  always #100 if (!stop) clk = ~clk;"
).replace(
    "      @(posedge clk); @(negedge clk);\n      #(100 - d) rst_n = 1'b1;",
    # in reset: the clock stops low for 50 periods between two edges, then runs again
    "      @(negedge clk); stop = 1'b1; #10000 stop = 1'b0;\n"
    "      @(posedge clk); @(negedge clk);\n      #(100 - d) rst_n = 1'b1;",
)


@needs_icarus
def test_a_clock_that_stops_in_reset_does_not_widen_the_window(tmp_path: Path) -> None:
    """The period is the shortest interval between two edges in reset: a clock stopped for 50
    periods while the flop is in reset does not make a release 60 ps before the edge (not close:
    8 * 60 >= 200) close, so only the 10 ps releases report (the reset family stops a clock)."""
    assert STOPPED_CLOCK_TB != RECOVERY_TB and "stop = 1'b1" in STOPPED_CLOCK_TB
    _out, steps = _recovery_run(tmp_path, STOPPED_CLOCK_TB, "1")
    assert all(s == (1 if d == 10 else 0) for d, s in steps), steps


def test_the_simulated_netlist_carries_the_model_and_the_rules_see_the_cells() -> None:
    from cdc_env.gate import run_gate
    from cdc_env.task import load_task

    task = load_task("rst_01")
    res = run_gate(task, {task.editable: task.reference_text})
    assert res.status == "pass", res.findings
    text = res.netlist["verilog"]
    keys = re.findall(r"cdc_arst_ff #\((?:[^()]|\([^()]*\))*\.KEY\(32'd(\d+)\)", text)
    # the ring, the counter and the up flag (three flops), keyed apart; the synchronizers too
    assert len(keys) == 3 and len(set(keys)) == 3, keys
    assert len(re.findall(r"cdc_sync_reset #\(\s*\.KEY\(32'd\d+\)", text)) == 2
    assert "always @(posedge clk_a_i, negedge" not in text  # no async flop is left as written
    assert res.summary["flops_per_domain"] == {"a": 5, "b": 4}  # the rules count the Yosys cells


@pytest.mark.parametrize("p", resetfam.VARIANTS, ids=lambda p: p.id)
def test_committed_folders_match_the_generator(p: resetfam.RstParams) -> None:
    folder = paths.tasks_dir() / p.id
    for rel, text in resetfam.generate(p).items():
        assert (folder / rel).read_text(encoding="utf-8") == text, f"{p.id}/{rel} differs: regenerate"


def _recovery_off(text: str) -> set[str]:
    """Instance names of the netlist's cdc_arst_ff cells with the recovery check off."""
    cells = re.findall(r"cdc_arst_ff #\(((?:[^()]|\([^()]*\))*)\)\s*(\S+) \(", text)
    return {name for params, name in cells if ".RECOVERY(1'h0)" in params}


def test_recovery_check_is_off_only_for_flops_that_only_synchronizers_read() -> None:
    """Synthesis exempts a flop whose every reader is a synchronizer's d_i (the fixture's 'domain
    a is up' flag, released out of step); a flop that logic or an output reads keeps the check."""
    from cdc_env.gate import run_gate
    from cdc_env.task import load_task

    task = load_task("rst_01")
    fx = paths.fixtures_dir()
    ok_text = (fx / "ok-rst-raw-assert-run-qualifier" / "submission.v").read_text()
    ok = run_gate(task, {task.editable: ok_text})
    assert ok.status == "pass", ok.findings
    assert _recovery_off(ok.netlist["verilog"]) == {"ff_up_a_q"}
    # the qualifier merged with the same flag is read by the ring's logic: checked
    hack_text = (fx / "rst-one-flop-qualifier-raw-release" / "submission.v").read_text()
    hack = run_gate(task, {task.editable: hack_text})
    assert hack.status == "pass", hack.findings
    assert "ff_up_a_q" in hack.netlist["verilog"] and not _recovery_off(hack.netlist["verilog"])
