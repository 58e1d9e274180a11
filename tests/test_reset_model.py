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

from cdc_env import paths, resetfam

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
