"""The gate's finer points that the gate_cases pairs do not pin down: which comments are pragmas,
how wide an unsized literal is, where a byte-order mark is refused, how POL-CONSTRUCT names the
domains, and which synchronizer pairs are (not) redundant."""

from __future__ import annotations

import pytest

from cdc_env.gate import run_gate
from cdc_env.gate.policy import _PRAGMA
from cdc_env.task import load_task

TASK = load_task("handshake")
REF = TASK.reference_text
ANCHOR = "  // ---------------- crossings ----------------"
REQ = "  cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));"


def rules(text: str) -> set[str]:
    return {f["rule"] for f in run_gate(TASK, {TASK.editable: text}).findings if f["severity"] == "error"}


@pytest.mark.parametrize("body", [
    " verilator lint_off WIDTH", "verilator public", " synopsys translate_off", " synthesis translate_off",
    " synthesis full_case", " pragma translate_off", " translate_on", " lint_off", " coverage_off",
    " pragma protect begin", " xilinx keep"])
def test_tool_pragmas_are_recognised(body):
    assert _PRAGMA.match(body)


@pytest.mark.parametrize("body", [
    " Icarus and Verilator both build this", " Synthesis: two flops per bit", " synthesis: nothing special",
    " Verilator lint is clean", " Pragma-free design", " pragma is a word too", " Translate nothing",
    " VCS users: see below", " the synthesis tool keeps these"])
def test_english_comments_are_not_pragmas(body):
    assert not _PRAGMA.match(body)


def _literal(lit: str) -> set[str]:
    return rules(REF.replace(REQ, f"  localparam integer LW = $bits({lit});\n" + REQ))


@pytest.mark.parametrize("lit", ["'h1_0000_0000", "'d4294967296", "'b1" + "0" * 32, "'o40000000000",
                                 "4294967296", "'hx_0000_0000", "'sd5000000000"])
def test_unsized_literals_wider_than_32_bits_are_refused(lit):
    assert _literal(lit) == {"POL-LITERAL"}


@pytest.mark.parametrize("lit", ["'hFFFF_FFFF", "'d4294967295", "4294967295", "36'hF_0000_0000", "'1",
                                 "'h0000_0000_0000_0001", "64'd5000000000"])
def test_literals_within_32_bits_or_sized_pass(lit):
    assert _literal(lit) == set()


def test_a_byte_order_mark_in_the_middle_is_refused_by_the_gate_too():
    res = run_gate(TASK, {TASK.editable: REF.replace("module hs_top", "\ufeffmodule hs_top")})
    assert res.status == "refused" and res.findings[0]["rule"] == "GATE-INPUT"
    assert "byte-order mark" in res.findings[0]["message"]


STALE = """  function [3:0] keep(input [3:0] x);
    reg [3:0] t;
    begin
      if (x[0]) t = x;
      keep = t;
    end
  endfunction
  reg [3:0] ka_q, kb_q;
  always @(posedge clk_a_i) ka_q <= keep({3'd0, req_q});
"""


def test_pol_construct_names_one_domain_when_every_call_is_in_it():
    (f,) = [f for f in run_gate(TASK, {TASK.editable: REF.replace(ANCHOR, STALE + ANCHOR)}).findings
            if f["rule"] == "POL-CONSTRUCT"]
    assert "every call is in domain a" in f["message"] and "domain b" not in f["message"]


def test_pol_construct_names_both_domains_when_called_in_both():
    text = REF.replace(ANCHOR, STALE + "  always @(posedge clk_b_i) kb_q <= keep({3'd0, seen_q});\n" + ANCHOR)
    (f,) = [f for f in run_gate(TASK, {TASK.editable: text}).findings if f["rule"] == "POL-CONSTRUCT"]
    assert "called in domain a and domain b" in f["message"]


def test_a_level_and_a_pulse_synchronizer_of_different_signals_are_not_redundant():
    extra = """  reg  tick_q;
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) tick_q <= 1'b0; else tick_q <= start_i && !busy_q;
  wire tick_s;
  cdc_sync_pulse u_tick (.src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(tick_q),
                         .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(tick_s));
  reg  tick_b_q;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) tick_b_q <= 1'b0; else tick_b_q <= tick_s;
"""
    assert rules(REF.replace(ANCHOR, extra + ANCHOR)) == set()


def test_a_pulse_synchronizer_of_a_signal_already_synchronized_is_redundant():
    extra = """  wire req_p;
  cdc_sync_pulse u_req_pulse (.src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(req_q),
                              .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(req_p));
  reg  req_p_q;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) req_p_q <= 1'b0; else req_p_q <= req_p;
"""
    assert "CDC-REDUNDANT" in rules(REF.replace(ANCHOR, extra + ANCHOR))


def test_a_synchronizer_through_a_wire_alias_is_still_redundant():
    extra = "  wire req_alias = req_q;\n  wire req_s3;\n" \
            "  cdc_sync_bit u_req_sync3 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_alias),\n" \
            "                            .q_o(req_s3));\n" \
            "  reg r3_q;\n  always @(posedge clk_b_i) r3_q <= req_s3;\n"
    assert "CDC-REDUNDANT" in rules(REF.replace(ANCHOR, extra + ANCHOR))


def test_the_same_source_into_each_domain_once_is_not_redundant():
    # req_q into domain b (the design's) and ack_q into domain a: one each, different sources.
    assert rules(REF) == set()


def test_a_loop_index_initialised_from_itself_is_a_signal():
    # Domain a leaves k at a value; domain b's loop starts from whatever k holds: a raw crossing.
    extra = """  integer k;
  reg [7:0] cnt_a_q, out_b_q;
  always @(posedge clk_a_i) begin
    cnt_a_q <= cnt_a_q + 8'd1;
    for (k = 0; k < cnt_a_q; k = k + 1) ;
  end
  always @(posedge clk_b_i)
    for (k = k; k < 300; k = k + 300) out_b_q <= k;
"""
    assert "CDC-RAW" in rules(REF.replace(ANCHOR, extra + ANCHOR))


def _func(body: str) -> set[str]:
    f = f"""  function [3:0] h(input [3:0] g);
    reg [3:0] b;
    integer i;
    begin
{body}
      h = b;
    end
  endfunction
  reg [3:0] h_q;
  always @(posedge clk_a_i) h_q <= h({{3'd0, req_q}});
"""
    return rules(REF.replace(ANCHOR, f + ANCHOR))


def test_gray_loop_written_with_if_else_on_the_index_passes():
    assert _func("""      for (i = 3; i >= 0; i = i - 1)
        if (i == 3) b[i] = g[i];
        else b[i] = b[i + 1] ^ g[i];""") == set()


def test_a_loop_that_skips_bits_by_changing_its_index_is_not_unrolled():
    # i = 0, 2 only: b[1] and b[3] keep the previous call's value.
    assert "POL-CONSTRUCT" in _func("""      for (i = 0; i < 4; i = i + 1) begin
        b[i] = g[i];
        i = i + 1;
      end""")


def test_a_loop_that_fills_only_some_bits_is_refused():
    assert "POL-CONSTRUCT" in _func("""      for (i = 0; i < 3; i = i + 1) b[i] = g[i];""")


def test_a_loop_that_breaks_early_is_not_unrolled():
    assert "POL-CONSTRUCT" in _func("""      for (i = 0; i < 4; i = i + 1) begin
        if (g[i]) break;
        b[i] = g[i];
      end""")


def test_a_case_whose_items_are_wider_than_the_selector_is_not_full():
    assert "POL-CONSTRUCT" in _func("""      case (g[1:0])
        3'd0: b = 4'd1;
        3'd1: b = 4'd2;
        3'd2: b = 4'd3;
        3'd7: b = 4'd4;
      endcase""")
    assert _func("""      case (g[1:0])
        2'd0: b = 4'd1;
        2'd1: b = 4'd2;
        2'd2: b = 4'd3;
        2'd3: b = 4'd4;
      endcase""") == set()
