"""The gate never raises and never hangs: random text, truncated and mutated Verilog, deep
nesting and oversized inputs all end in findings or a refusal (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_env.gate import run_gate
from cdc_env.task import load_task

TASK = load_task("handshake")
REF = TASK.reference_text
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VERILOG_BITS = ["module", "endmodule", "begin", "end", "always", "@(posedge clk_a_i)", "assign", "(", ")",
                "[", "]", "{", "}", ";", "`define X", "`X", "`ifdef", "`endif", "$clog2(", "#(", ".", "<=",
                "=", "cdc_sync_bit", "wire", "reg", "function", "endfunction", "generate", "endgenerate",
                "\n", " ", "/*", "*/", "//", "\"", "'", "`", "\\"]


def _check(text: str) -> None:
    res = run_gate(TASK, {TASK.editable: text})
    assert res.status in ("pass", "refused"), (res.status, res.detail)
    if res.status == "refused":
        assert res.findings and all(f["message"] for f in res.findings)


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes(data):
    _check(data.decode("latin-1"))


@FUZZ
@given(st.integers(min_value=0, max_value=len(REF)))
def test_truncated_reference(n):
    _check(REF[:n])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(REF)), st.integers(0, 8), st.sampled_from(VERILOG_BITS)),
                min_size=1, max_size=6))
def test_mutated_reference(edits):
    text = REF
    for pos, cut, insert in edits:
        pos = min(pos, len(text))
        text = text[:pos] + insert + text[pos + cut:]
    _check(text)


@FUZZ
@given(st.lists(st.sampled_from(VERILOG_BITS), max_size=300))
def test_token_soup(parts):
    _check(" ".join(parts))


@pytest.mark.parametrize("opener,closer", [("(", ")"), ("begin ", "end "), ("if (start_i) ", ""),
                                           ("{", "}"), ("`ifdef A ", "`endif ")])
@pytest.mark.parametrize("depth", [50, 5000, 100000])
def test_deep_nesting(opener, closer, depth):
    body = opener * depth + "1'b0" + closer * depth
    _check(f"module hs_top(input wire a); wire y; assign y = {body}; endmodule\n")
    _check(f"module hs_top(input wire a); reg y; always @* {opener * depth} y = 1'b0; {closer * depth}"
           " endmodule\n")


def test_five_megabytes_is_refused_before_parsing():
    big = REF + "// " + "x" * (5 << 20) + "\n"
    res = run_gate(TASK, {TASK.editable: big})
    assert res.status == "refused" and res.findings[0]["rule"] == "GATE-INPUT"
    many_lines = "\n" * (5 << 20)
    res = run_gate(TASK, {TASK.editable: many_lines})
    assert res.status == "refused" and res.findings[0]["rule"] == "GATE-INPUT"


def test_five_megabytes_of_valid_verilog_is_refused():
    blob = REF + "module filler; wire w; endmodule\n" * ((5 << 20) // 34)
    res = run_gate(TASK, {TASK.editable: blob})
    assert res.status == "refused" and res.findings[0]["rule"] == "GATE-INPUT"


@pytest.mark.parametrize("bad", [None, 42, b"module hs_top; endmodule", "nul\x00byte", "\ud800"])
def test_non_text_is_refused(bad):
    res = run_gate(TASK, {TASK.editable: bad})
    assert res.status == "refused" and res.findings[0]["rule"] == "GATE-INPUT"


def test_missing_editable_file_is_refused():
    res = run_gate(TASK, {"other.v": REF})
    assert res.status == "refused" and res.findings[0]["rule"] == "GATE-INPUT"
