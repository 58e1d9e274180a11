"""cdc_ram, the provided cross-domain storage primitive (interfaces.md item 2): the gate accepts it
with write ports from the wclk_i domain and the read address from the rclk_i domain, refuses it
rewired or fed from the wrong domain, and refuses any other memory that crosses domains.

Until the FIFO branch appends cdc_ram to trusted/hdl/cdc_sync.v, the tests append the module
(port list as specified) to a copy of the primitives file."""

from __future__ import annotations

import pytest

from cdc_env import paths
from cdc_env.gate import run_gate
from cdc_env.task import load_task

CDC_RAM = """
module cdc_ram #(parameter integer WIDTH = 8, parameter integer AW = 4) (
  input  wire             wclk_i,
  input  wire             we_i,
  input  wire [AW-1:0]    waddr_i,
  input  wire [WIDTH-1:0] wdata_i,
  input  wire             rclk_i,
  input  wire [AW-1:0]    raddr_i,
  output wire [WIDTH-1:0] rdata_o
);
  reg [WIDTH-1:0] mem_q [0:(1<<AW)-1];
  always @(posedge wclk_i) if (we_i) mem_q[waddr_i] <= wdata_i;
  assign rdata_o = mem_q[raddr_i];
endmodule
"""

TASK = load_task("handshake")
ANCHOR = "  // ---------------- crossings ----------------"
RAM_OK = """  // A small log: domain a writes one entry per request, domain b reads the entry it serves.
  reg  [1:0] wptr_q;
  reg  [7:0] word_q;
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) begin wptr_q <= 2'd0; word_q <= 8'd0; end
    else if (!busy_q && start_i) begin wptr_q <= wptr_q + 2'd1; word_q <= word_q + 8'd3; end
  reg  [1:0] rptr_q;
  reg  [7:0] got_q;
  wire [7:0] rdata;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) begin rptr_q <= 2'd0; got_q <= 8'd0; end
    else if (req_s != seen_q) begin rptr_q <= rptr_q + 2'd1; got_q <= rdata; end
  cdc_ram #(.WIDTH(8), .AW(2)) u_log (.wclk_i(WCLK), .we_i(!busy_q && start_i), .waddr_i(wptr_q),
                                      .wdata_i(word_q), .rclk_i(clk_b_i), .raddr_i(RADDR), .rdata_o(rdata));
"""


@pytest.fixture(autouse=True)
def primitives_with_cdc_ram(tmp_path, monkeypatch):
    text = paths.primitives_file().read_text(encoding="utf-8")
    if "module cdc_ram" not in text:
        prim = tmp_path / "cdc_sync.v"
        prim.write_text(text + CDC_RAM, encoding="utf-8")
        monkeypatch.setattr(paths, "primitives_file", lambda: prim)


def gate(wclk: str = "clk_a_i", raddr: str = "rptr_q", extra: str = ""):
    body = RAM_OK.replace("WCLK", wclk).replace("RADDR", raddr) + extra
    return run_gate(TASK, {TASK.editable: TASK.reference_text.replace(ANCHOR, body + ANCHOR)})


def test_cdc_ram_used_as_specified_passes():
    res = gate()
    assert (res.status, res.findings) == ("pass", []), res.findings


def test_read_address_from_the_write_domain_is_a_raw_crossing():
    res = gate(raddr="wptr_q")
    assert "CDC-RAW" in {f["rule"] for f in res.findings}
    assert any("raddr_i of u_log" in f["message"] for f in res.findings)


def test_write_clock_not_a_task_clock_is_rewired():
    res = gate(wclk="busy_q")
    assert any(f["rule"] == "CDC-REWIRE" and "wclk_i" in f["message"] for f in res.findings)


def test_write_side_in_the_read_clock_domain_is_refused():
    res = gate(wclk="clk_b_i")
    assert res.status == "refused"
    assert {"CDC-RAW"} & {f["rule"] for f in res.findings}


def test_any_other_memory_crossing_domains_is_cdc_mem():
    extra = """  reg [7:0] shadow_q [0:3];
  reg [7:0] peek_q;
  always @(posedge clk_a_i) shadow_q[wptr_q] <= word_q;
  always @(posedge clk_b_i) peek_q <= shadow_q[rptr_q];
"""
    res = gate(extra=extra)
    assert [f["rule"] for f in res.findings if f["severity"] == "error"] == ["CDC-MEM"]
