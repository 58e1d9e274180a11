"""The gate's stated policy for legal-but-unusual designs, its test-only rule switch, its
failure modes (tool_error, never a pass), the grade report and the ``cdc-env check`` command."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path

import pytest

from cdc_env.cli import main
from cdc_env.gate import _in_child, run_gate
from cdc_env.grade import grade
from cdc_env.report import validate_report
from cdc_env.task import load_task

HS = load_task("handshake")
CASES = Path(__file__).parent / "gate_cases"
REQ_SYNC = "  cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));"
ACK_SYNC = "  cdc_sync_bit u_ack_sync (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(ack_q), .q_o(ack_s));"


def gate(text: str, task=HS, **kw):
    return run_gate(task, {task.editable: text}, **kw)


def edit(pairs, text: str | None = None) -> str:
    text = text if text is not None else HS.reference_text
    for a, b in pairs:
        assert a in text, a
        text = text.replace(a, b, 1)
    return text


LEGAL = {
    # One wrapper module instantiated for both directions: each instance has its own domains.
    "wrapper_used_in_both_directions": edit([
        (REQ_SYNC, "  hs_wrap u_req_sync (.ck(clk_b_i), .rn(rst_b_ni), .d(req_q), .q(req_s));"),
        (ACK_SYNC, "  hs_wrap u_ack_sync (.ck(clk_a_i), .rn(rst_a_ni), .d(ack_q), .q(ack_s));"),
    ]) + ("module hs_wrap (input wire ck, input wire rn, input wire d, output wire q);\n"
          "  cdc_sync_bit u_s (.clk_i(ck), .rst_ni(rn), .d_i(d), .q_o(q));\nendmodule\n"),
    # A Gray conversion written as a function, registered in the source domain.
    "gray_function_into_a_register": edit([
        ("  reg  busy_q;", "  reg  busy_q;\n  reg  [1:0] cnt_q, gray_q;\n  wire [1:0] gray_s;\n"
         "  function automatic [1:0] to_gray(input [1:0] b); to_gray = b ^ (b >> 1); endfunction"),
        ("      req_q  <= 1'b0;\n", "      req_q  <= 1'b0;\n      cnt_q <= 2'd0;\n      gray_q <= 2'd0;\n"),
        ("        req_q  <= ~req_q;", "        req_q  <= ~req_q;\n        cnt_q <= cnt_q + 2'd1;\n"
         "        gray_q <= to_gray(cnt_q + 2'd1);"),
        (REQ_SYNC, REQ_SYNC + "\n  cdc_sync_bus #(.WIDTH(2)) u_cnt_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni),"
         " .d_i(gray_q), .q_o(gray_s));"),
    ]),
    # A blocking temporary inside a clocked block, and a user task without timing.
    "blocking_temp_and_task": edit([
        ("  reg  ack_q;      // the request toggle acknowledged (a level)",
         "  reg  ack_q;\n  reg  fresh;\n"
         "  task automatic take(input v); begin seen_q <= v; ack_q <= v; end endtask"),
        ("      if (req_s != seen_q) begin\n        seen_q   <= req_s;\n        ack_q    <= req_s;",
         "      fresh = req_s != seen_q;\n      if (fresh) begin\n        take(req_s);"),
    ]),
    # Generate loop of synchronizers, localparams, `default_nettype none.
    "generate_localparam_nettype": "`default_nettype none\n" + load_task("event").clean_text,
}


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_but_unusual_designs_pass(name):
    task = load_task("event") if name == "generate_localparam_nettype" else HS
    res = gate(LEGAL[name], task)
    assert (res.status, res.findings) == ("pass", []), res.findings


def test_intra_assignment_delay_is_refused():
    res = gate(edit([("        ack_q    <= req_s;", "        ack_q    <= #0 req_s;")]))
    assert [f["rule"] for f in res.findings] == ["POL-DELAY"]


def test_task_reading_a_foreign_register_is_a_raw_crossing():
    text = edit([("  reg  ack_q;      // the request toggle acknowledged (a level)",
                  "  reg  ack_q;\n  task automatic take(input v); begin seen_q <= v ^ busy_q; end endtask"),
                 ("        seen_q   <= req_s;", "        take(req_s);")])
    assert "CDC-RAW" in {f["rule"] for f in gate(text).findings}


def test_skip_rules_leaves_a_rule_out_and_rejects_unknown_ids():
    text = (CASES / "cdc_rewire.trips.v").read_text()
    assert gate(text).status == "refused"
    assert gate(text, skip_rules=frozenset({"CDC-REWIRE"})).status == "pass"
    assert gate(text, skip_rules=frozenset({"NO-SUCH-RULE"})).status == "tool_error"


def test_a_task_the_gate_cannot_understand_is_a_tool_error_not_a_pass(tmp_path):
    broken = dataclasses.replace(HS, top="no_such_top", id="broken")
    res = gate(HS.reference_text, broken)
    assert res.status == "tool_error" and "no_such_top" in res.detail


def test_a_crashing_analysis_is_a_tool_error():
    payload, _cpu, detail = _in_child(lambda job: os.kill(os.getpid(), signal.SIGSEGV), None)
    assert payload is None and "SIGSEGV" in detail
    payload, _cpu, _detail = _in_child(lambda job: 1 // 0, None)
    assert "ZeroDivisionError" in payload["error"]


def test_grade_report_embeds_the_findings():
    report = grade(HS, (CASES / "cdc_rewire.trips.v").read_text(), hidden=0, sandbox=False)
    validate_report(report)
    assert (report["verdict"], report["failed_stage"], report["reward"]) == ("refused", "gate", 0)
    assert report["findings"] and report["findings"][0]["rule"] == "CDC-REWIRE"
    assert "synchronizer clock/reset rewired" in report["reason"]
    stage = next(s for s in report["stages"] if s["name"] == "gate")
    assert stage["status"] == "refused" and stage["cpu_s"] > 0


def test_cli_check(capsys):
    assert main(["check", "handshake", str(HS.path(HS.reference))]) == 0
    capsys.readouterr()
    assert main(["check", "handshake", str(CASES / "cdc_handsync.trips.v"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "refused" and out["findings"][0]["rule"] == "CDC-HANDSYNC"
    assert main(["check", "handshake", str(CASES / "pol_syscall.trips.v")]) == 1
    text = capsys.readouterr().out
    assert "hs_top.v:" in text and "[POL-SYSCALL]" in text
    assert main(["check", "handshake", "/no/such/file"]) == 2


def test_a_two_state_flop_without_reset_is_told_why_it_has_an_initial_value():
    """A `bit` register without a reset has no initializer to remove: the finding says the type
    gives it its initial value and what to write instead (red2)."""
    from cdc_env.task import load_task

    case = Path(__file__).parent / "gate_cases" / "pol_initial_bit_flop.trips.v"
    task = load_task("handshake")
    res = run_gate(task, {task.editable: case.read_text()})
    msgs = [f["message"] for f in res.findings if f["rule"] == "POL-INITIAL"]
    assert res.status == "refused" and msgs, res.findings
    assert "two-state type" in msgs[0] and "give the register a reset" in msgs[0], msgs[0]
