"""A task that still declares ``cross_memories``: the declared memory is matched by its exact path
below the top and may only carry data. The task is a copy of the handshake
task with a manifest that declares ``log_q``, so the test does not depend on any shipped task
declaring a memory."""

from __future__ import annotations

import shutil

import pytest

from cdc_env import paths
from cdc_env.gate import run_gate
from cdc_env.task import load_task

ANCHOR = "  // ---------------- crossings ----------------"
LOG = """  // A log written by domain a, read by domain b (the memory the task declares).
  reg  [1:0] wptr_q;
  reg  [7:0] word_q;
  reg  [7:0] LOGNAME [0:3];
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) begin wptr_q <= 2'd0; word_q <= 8'd0; end
    else if (!busy_q && start_i) begin wptr_q <= wptr_q + 2'd1; word_q <= word_q + 8'd3; end
  always @(posedge clk_a_i)
    if (!busy_q && start_i) LOGNAME[wptr_q] <= word_q;
  reg  [1:0] rptr_q;
  reg  [7:0] got_q;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) begin rptr_q <= 2'd0; got_q <= 8'd0; end
    else if (req_s != seen_q) begin rptr_q <= rptr_q + 2'd1; got_q <= LOGNAME[rptr_q]; end
"""


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    d = tmp_path_factory.mktemp("tasks") / "hs_declared"
    shutil.copytree(paths.tasks_dir() / "handshake", d)
    toml = (d / "task.toml").read_text()
    toml = toml.replace('id = "handshake"', 'id = "hs_declared"').replace(
        "\n[clocks.a]", '\ncross_memories = ["log_q"]\n\n[clocks.a]', 1)
    (d / "task.toml").write_text(toml)
    t = load_task(d)
    assert t.cross_memories == ("log_q",) or list(t.cross_memories) == ["log_q"]
    return t


def gate(task, body: str, extra_modules: str = ""):
    text = task.reference_text.replace(ANCHOR, body + ANCHOR) + extra_modules
    return run_gate(task, {task.editable: text})


def errors(res) -> set[str]:
    return {f["rule"] for f in res.findings if f["severity"] == "error"}


def test_the_declared_memory_at_its_exact_path_carries_data(task):
    res = gate(task, LOG.replace("LOGNAME", "log_q"))
    assert errors(res) == set(), res.findings


def test_a_memory_of_the_same_name_in_a_generate_block_is_another_memory(task):
    body = LOG.replace("LOGNAME", "log_q") + """  generate begin : g_more
    reg [7:0] log_q [0:0];
    always @(posedge clk_a_i) log_q[0] <= word_q;
    reg [7:0] peek_q;
    always @(posedge clk_b_i) peek_q <= log_q[0];
  end endgenerate
"""
    res = gate(task, body)
    assert errors(res) == {"CDC-MEM"}
    assert any("g_more.log_q" in f["message"] for f in res.findings)


def test_a_memory_of_the_same_name_in_a_helper_module_is_another_memory(task):
    body = LOG.replace("LOGNAME", "log_q") + """  wire [7:0] side;
  side_log u_side (.clk_i(clk_a_i), .d_i(word_q), .q_o(side));
  reg [7:0] side_b_q;
  always @(posedge clk_b_i) side_b_q <= side;
"""
    helper = """
module side_log (input wire clk_i, input wire [7:0] d_i, output wire [7:0] q_o);
  reg [7:0] log_q [0:0];
  always @(posedge clk_i) log_q[0] <= d_i;
  assign q_o = log_q[0];
endmodule
"""
    res = gate(task, body, helper)
    assert errors(res) == {"CDC-MEM"}
    assert any("u_side.log_q" in f["message"] for f in res.findings)


@pytest.mark.parametrize("use", [
    "  reg stop_q;\n  always @(posedge clk_b_i) if (log_q[rptr_q] == 8'd9) stop_q <= 1'b1;\n",
    "  reg stop_q;\n  always @(posedge clk_b_i) if (got_q == 8'd9) stop_q <= 1'b1;\n",
    "  reg [1:0] pick_q;\n  always @(posedge clk_b_i)\n"
    "    case (got_q[1:0]) 2'd0: pick_q <= 2'd1; default: pick_q <= 2'd0; endcase\n",
])
def test_the_declared_memory_in_control_is_refused(task, use):
    res = gate(task, LOG.replace("LOGNAME", "log_q") + use)
    assert errors(res) == {"CDC-MEM"}
    assert any("condition" in f["message"] for f in res.findings)


def test_written_from_both_domains_is_refused(task):
    body = LOG.replace("LOGNAME", "log_q") + "  always @(posedge clk_b_i) log_q[0] <= got_q;\n"
    res = gate(task, body)
    assert res.status == "refused" and "CDC-MEM" in errors(res)
