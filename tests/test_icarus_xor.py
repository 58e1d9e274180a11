"""The harness and the primitives write a ^ b as (a | b) - (a & b) where Icarus would XOR bit by
bit (cdc_tb.vh's `CDC_FOLD / `CDC_FOLD_KNOWN, xs32, the primitives' mix32/mix64): the trace hash
and every hash stay the numbers they were, X and Z operands included."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cdc_env import paths

from .conftest import needs_icarus

# Operands with 0/1 bits only, and with X or Z bits in low, high and every position. For each
# pair: the old fold and the new one (the harness's own macro, on a copy of the harness's state),
# the old X test and the new one, and a plain a ^ b against (a | b) - (a & b) on 2-state values.
_TB = r"""
`timescale 1ps / 1ps
module xor_tb;
HARNESS
  reg [63:0] trace_h;
  reg [63:0] vals [0:11];
  reg [63:0] h0, a, b, old_h, v;
  integer i, j, bad, bad_x, bad_2;
  initial begin
    vals[0] = 64'd0; vals[1] = 64'hffffffffffffffff; vals[2] = 64'h0123456789abcdef;
    vals[3] = 64'hfedcba9876543210; vals[4] = 64'h000000000000000x; vals[5] = 64'hx000000000000000;
    vals[6] = 64'h00000000z0000000; vals[7] = {64{1'bx}}; vals[8] = {64{1'bz}};
    vals[9] = 64'h8000000000000001; vals[10] = 64'hcbf29ce484222325; vals[11] = 64'h1x2z3x4z5x6z7x8z;
    bad = 0; bad_x = 0; bad_2 = 0;
    for (i = 0; i < 12; i = i + 1)
      for (j = 0; j < 12; j = j + 1) begin
        a = vals[i]; b = vals[j];
        old_h = (a ^ b) * 64'h00000100000001b3;
        trace_h = a;
        `CDC_FOLD(b)
        if (trace_h !== old_h) bad = bad + 1;
        old_h = (a ^ ((^b === 1'bx) ? 64'hbad0bad0bad0bad0 : b)) * 64'h00000100000001b3;
        trace_h = a;
        `CDC_FOLD_KNOWN(b)
        if (trace_h !== old_h) bad_x = bad_x + 1;
        if ((^a !== 1'bx) && (^b !== 1'bx) && ((a ^ b) !== ((a | b) - (a & b)))) bad_2 = bad_2 + 1;
      end
    $display("XORTEST bad=%0d bad_x=%0d bad_2=%0d xs32=%0d", bad, bad_x, bad_2, xs32(32'd12345));
    $finish;
  end
endmodule
"""


def _xs32_reference(x: int) -> int:
    y = x or 0x6D2B79F5
    y ^= (y << 13) & 0xFFFFFFFF
    y ^= y >> 17
    return y ^ ((y << 5) & 0xFFFFFFFF)


@needs_icarus
def test_the_fold_and_xs32_are_the_xor_forms(tmp_path: Path) -> None:
    # the harness's own text: the fold macros, their variables and xs32
    vh = paths.trusted_source("hdl", "cdc_tb.vh").read_text()
    macros = [ln for ln in vh.splitlines() if ln.startswith(("`define CDC_FOLD", "  reg [63:0] fold_v"))]
    xs32 = vh[vh.index("  function [31:0] xs32"):vh.index("endfunction", vh.index("function [31:0] xs32"))]
    assert len(macros) == 3, macros
    harness = "\n".join(macros) + "\n" + xs32 + "endfunction"
    (tmp_path / "xor_tb.v").write_text(_TB.replace("HARNESS", harness))
    subprocess.run(["iverilog", "-g2012", "-o", "x.vvp", "xor_tb.v"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run(["vvp", "-n", "x.vvp"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("XORTEST"))
    assert line == f"XORTEST bad=0 bad_x=0 bad_2=0 xs32={_xs32_reference(12345)}", out
