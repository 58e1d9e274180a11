"""CDC-REDUNDANT decides by source (issue 35, class D): copies of one bit crossing into one domain
are one crossing, whatever their edge, delay or enable; a register computed from two bits and a
loop of copies are not copies of a source bit."""

from __future__ import annotations

from cdc_env import paths
from cdc_env.gate import run_gate
from cdc_env.task import load_task

HACK = paths.fixtures_dir() / "hs-pulse-ack-half-cycle-copy" / "submission.v"
COPY = ("  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
        "    if (!rst_b_ni) ack_n_q <= 1'b0;\n    else ack_n_q <= ack_p_q;\n  end\n")


def _redundant(text: str) -> list[str]:
    task = load_task("handshake")
    res = run_gate(task, {task.editable: text})
    return [f["message"] for f in res.findings if f["rule"] == "CDC-REDUNDANT"]


def _with_copy(copy: str) -> str:
    text = HACK.read_text()
    assert COPY in text
    return text.replace(COPY, copy)


def test_a_falling_edge_copy_of_a_pulse_is_the_pulse() -> None:
    msgs = _redundant(HACK.read_text())
    assert len(msgs) == 1 and "'ack_p_q' (with its copies 'ack_n_q')" in msgs[0], msgs


def test_a_delayed_inverted_copy_two_flops_deep_is_the_bit() -> None:
    two = ("  reg ack_m_q;\n"
           "  always @(posedge clk_b_i) ack_m_q <= ack_p_q;\n"
           "  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
           "    if (!rst_b_ni) ack_n_q <= 1'b1;\n    else ack_n_q <= ~ack_m_q;\n  end\n")
    text = _with_copy(two).replace("wire       ack_or = ack_p_s | ack_n_s;",
                                   "wire       ack_or = ack_p_s | ~ack_n_s;")
    msgs = _redundant(text)
    assert len(msgs) == 1 and "ack_p_q" in msgs[0], msgs


def test_a_copy_taken_under_an_enable_is_still_the_bit() -> None:
    sampled = ("  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
               "    if (!rst_b_ni) ack_n_q <= 1'b0;\n    else if (seen_q) ack_n_q <= ack_p_q;\n  end\n")
    msgs = _redundant(_with_copy(sampled))
    assert len(msgs) == 1 and "ack_p_q" in msgs[0], msgs


def test_a_register_computed_from_two_bits_is_its_own_source() -> None:
    mixed = ("  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
             "    if (!rst_b_ni) ack_n_q <= 1'b0;\n    else ack_n_q <= ack_p_q & seen_q;\n  end\n")
    assert _redundant(_with_copy(mixed)) == []


def test_a_twisted_ring_has_no_source_outside_it() -> None:
    """Every bit of a free-running Johnson ring is a delay of the one before, in a loop: no bit is
    a copy of a source outside the ring, so its bits through one bus are three bits, not one."""
    ring = ("  reg [2:0] j_q;\n"
            "  always @(posedge clk_b_i or negedge rst_b_ni) begin\n"
            "    if (!rst_b_ni) j_q <= 3'b000;\n    else j_q <= {j_q[1:0], ~j_q[2]};\n  end\n"
            "  wire [2:0] j_s;\n"
            "  cdc_sync_bus #(.WIDTH(3)) u_j (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(j_q), .q_o(j_s));\n"
            "  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
            "    if (!rst_b_ni) ack_n_q <= 1'b0;\n    else ack_n_q <= ack_p_q & seen_q;\n  end\n")
    text = _with_copy(ring).replace("wire       ack_or = ack_p_s | ack_n_s;",
                                    "wire       ack_or = ack_p_s | ack_n_s | (j_s == 3'b101);")
    assert _redundant(text) == []


def test_the_baseline_rule_alone_missed_the_copy() -> None:
    """With copies not followed (each input its own source) the hack has no finding: the test can
    fail, and it is _copy_root that refuses it."""
    import cdc_env.gate.cdc as cdc

    real = cdc._copy_root
    try:
        cdc._copy_root = lambda a, b: b
        assert _redundant(HACK.read_text()) == []
    finally:
        cdc._copy_root = real


def test_a_johnson_sequence_whose_first_bit_is_logic_of_its_last_is_a_ring() -> None:
    """ok-hs-johnson-sequence-task-casez: bit 0's next value is a casez of the sequence that
    computes ~seq_q[2] whatever the select (a truth table on one variable), so bits 1 and 2, copies
    taken under an enable, are a ring, not copies of bit 0 (refused while only wires were followed)."""
    text = (paths.fixtures_dir() / "ok-hs-johnson-sequence-task-casez" / "submission.v").read_text()
    assert _redundant(text) == []


def test_a_copy_through_a_select_that_no_longer_matters_is_a_copy() -> None:
    muxed = ("  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
             "    if (!rst_b_ni) ack_n_q <= 1'b0;\n    else ack_n_q <= seen_q ? ack_p_q : ack_p_q;\n  end\n")
    msgs = _redundant(_with_copy(muxed))
    assert len(msgs) == 1 and "ack_p_q" in msgs[0], msgs


def test_a_copy_gated_by_an_up_flag_is_a_copy() -> None:
    """``ack_p_q & up_b_q``, up_b_q a flop that is 1 from its first edge out of reset on: after
    start-up it is the pulse itself (it passed every seed before _settled_flops)."""
    gated = ("  reg up_b_q;\n  always @(posedge clk_b_i or negedge rst_b_ni) begin\n"
             "    if (!rst_b_ni) up_b_q <= 1'b0;\n    else up_b_q <= 1'b1;\n  end\n"
             "  always @(negedge clk_b_i or negedge rst_b_ni) begin\n"
             "    if (!rst_b_ni) ack_n_q <= 1'b0;\n    else ack_n_q <= ack_p_q & up_b_q;\n  end\n")
    msgs = _redundant(_with_copy(gated))
    assert len(msgs) == 1 and "ack_p_q" in msgs[0], msgs
