"""X safety of variable part-selects (gate/xsafe.py, docs/parity.md "X safety", source 4).

``v[i*16 +: 16]`` synthesizes to a ``$shiftx`` (X where it reads past ``v``) whose index is 32 or
33 bits wide. The check accepts it when the index provably keeps the whole select inside ``v``
(bounded through reset flops, muxes and arithmetic that cannot wrap) and refuses an index that
can pass the end, be negative, or come from unreset state. Before, any index wider than the
vector allowed was refused, so such a read kept a first grade on Icarus under ``sim="auto"``.

A *write* ``v[i*16 +: 16] <= d`` stays refused: synthesis makes it a ``$bwmux`` of ``v`` and a
``$shiftx`` of ``d`` at a negative index, masked by a ``$shift`` of ones. The mask hides the X on
Icarus, but Verilator computes that partly out-of-range select differently in its in-range bits:
``ok-evt-counter-bank-indexed`` (a correct design) fails every seed on Verilator and passes on
Icarus, so accepting it would change its verdict under ``sim="verilator"`` and ``auto``.
"""

from __future__ import annotations

import pytest

from cdc_env.fixtures import load_fixtures
from cdc_env.gate import run_gate
from cdc_env.gate.xsafe import check
from cdc_env.parity import compare_design, stage_seed_list
from cdc_env.sim import get_simulator
from cdc_env.sim.seeds import visible_seeds
from cdc_env.sim.stage import build_and_run
from cdc_env.task import load_task

from .test_verilator import needs_verilator, vl_cache  # noqa: F401 -- the fixture is used by name

CLOCKS, RESETS = {"clk": "a"}, {"rst_n": "a"}
# bits: 2 clk, 3 rst_n, 4..5 data inputs, 10.. nets made by cells; outputs q (bits 60..63)
PORTS = {
    "clk": {"direction": "input", "bits": [2]},
    "rst_n": {"direction": "input", "bits": [3]},
    "d": {"direction": "input", "bits": [4, 5]},
    "q": {"direction": "output", "bits": [60, 61, 62, 63]},
}


def _cell(t: str, params: dict, conns: dict, outs: tuple[str, ...] = ("Q", "Y")) -> dict:
    return {"type": t, "parameters": params, "connections": conns,
            "port_directions": {p: "output" if p in outs else "input" for p in conns}}


def _net(*cells: dict) -> dict:
    return {"modules": {"top": {"ports": PORTS, "netnames": {},
                                "cells": {f"c{i}": c for i, c in enumerate(cells)}}}}


def _flop(d: list, q: list, reset: str = "0") -> dict:
    """A flop reset by the task reset to ``reset`` (a bit string, MSB first)."""
    return _cell("$adff", {"ARST_POLARITY": 0, "ARST_VALUE": reset, "WIDTH": len(q)},
                 {"CLK": [2], "ARST": [3], "D": d, "Q": q})


def _read(index: list, a_w: int = 32, y_w: int = 16, signed: int = 1) -> tuple[dict, dict]:
    """``$shiftx``: a y_w-bit window of an a_w-bit vector (bits 100..) at ``index``, and a cell
    that reads the window (an unread window is pruned by synthesis anyway)."""
    y = list(range(200, 200 + y_w))
    return (_cell("$shiftx", {"A_WIDTH": a_w, "B_WIDTH": len(index), "Y_WIDTH": y_w, "B_SIGNED": signed},
                  {"A": list(range(100, 100 + a_w)), "B": index, "Y": y}),
            _cell("$reduce_xor", {}, {"A": y, "Y": [300]}))


def _at(bit: int, pos: int, width: int = 33) -> list:
    """An index that is ``bit`` at position ``pos`` and constant 0 elsewhere (slang's ``k*16``
    with a one-bit k, zero-extended by a sign bit)."""
    return [bit if i == pos else "0" for i in range(width)]


# One-bit kind flop (bit 10, reset 0, D from input 4)
KIND = _flop([4], [10])


@pytest.mark.parametrize(
    ("cells", "safe", "why"),
    [
        # kind*16 with kind a reset flop (or a data input): 0 or 16, and 16 + 16 <= 32
        ((KIND, *_read(_at(10, 4))), True, "flops"),
        ((*_read(_at(4, 4)),), True, "flops"),
        # ... but 32 + 16 > 32: reading past the end gives X
        ((KIND, *_read(_at(10, 5))), False, "past its vector"),
        # a sign bit that can be 1: a negative index reads below bit 0
        ((KIND, *_read([*_at(10, 4, 32), 10])), False, "past its vector"),
        # a 2-bit counter (bits 11..12, its own +1 through a loop) times 16 via $mul: up to 48
        ((_flop([13, 14], [11, 12], "00"),
          _cell("$add", {"A_SIGNED": 0, "B_SIGNED": 0, "A_WIDTH": 2, "B_WIDTH": 2, "Y_WIDTH": 2},
                {"A": [11, 12], "B": ["1", "0"], "Y": [13, 14]}),
          _cell("$mul", {"A_SIGNED": 0, "B_SIGNED": 0, "A_WIDTH": 2, "B_WIDTH": 32, "Y_WIDTH": 32},
                {"A": [11, 12], "B": _at("1", 4, 32), "Y": list(range(20, 52))}),
          *_read([*range(20, 52), "0"])), False, "past its vector"),
        # ... the same index into a 64-bit vector stays inside (48 + 16 <= 64)
        ((_flop([13, 14], [11, 12], "00"),
          _cell("$add", {"A_SIGNED": 0, "B_SIGNED": 0, "A_WIDTH": 2, "B_WIDTH": 2, "Y_WIDTH": 2},
                {"A": [11, 12], "B": ["1", "0"], "Y": [13, 14]}),
          _cell("$mul", {"A_SIGNED": 0, "B_SIGNED": 0, "A_WIDTH": 2, "B_WIDTH": 32, "Y_WIDTH": 32},
                {"A": [11, 12], "B": _at("1", 4, 32), "Y": list(range(20, 52))}),
          *_read([*range(20, 52), "0"], a_w=64)), True, "flops"),
        # a 5-bit flop loaded with 0 or 16 through a mux: bounded by 16, not by its width (31)
        ((_flop(list(range(15, 20)), list(range(10, 15)), "00000"),
          _cell("$mux", {"WIDTH": 5}, {"A": ["0"] * 5, "B": ["0", "0", "0", "0", "1"], "S": [4],
                                       "Y": list(range(15, 20))}),
          *_read([*range(10, 15), "0"])), True, "flops"),
        # a difference can wrap below zero (kind - 1 is 15 when kind is 0): bounded by its width only
        ((KIND, _cell("$sub", {"A_SIGNED": 0, "B_SIGNED": 0, "A_WIDTH": 1, "B_WIDTH": 1, "Y_WIDTH": 4},
                      {"A": [10], "B": ["1"], "Y": [20, 21, 22, 23]}),
          *_read([20, 21, 22, 23, "0"], a_w=16, y_w=4)), False, "past its vector"),
    ],
)
def test_a_read_is_x_safe_only_when_its_index_stays_inside(cells, safe, why):
    ok, reason = check(_net(*cells), "top", CLOCKS, RESETS)
    assert ok is safe and why in reason, reason


def _write(shift_b: list | None = None) -> tuple[dict, ...]:
    """v' = $bwmux(v, $shiftx(d, -i), $shift(ones, -i)): a 4-bit field written into a 8-bit v
    (bits 100..107) at i = kind*4 (kind: bit 10), as synthesis makes of ``v[kind*4 +: 4] <= d``."""
    neg = list(range(30, 35))  # -i, 5 bits signed
    sx_y = list(range(40, 48))
    sh_y = list(range(50, 58))
    cells = [
        KIND,
        _cell("$neg", {"A_SIGNED": 1, "A_WIDTH": 4, "Y_WIDTH": 5}, {"A": ["0", "0", 10, "0"], "Y": neg}),
        _cell("$shiftx", {"A_WIDTH": 4, "B_WIDTH": 5, "Y_WIDTH": 8, "B_SIGNED": 1},
              {"A": [4, 5, 4, 5], "B": neg, "Y": sx_y}),
        _cell("$shift", {"A_SIGNED": 0, "A_WIDTH": 4, "B_WIDTH": 5, "Y_WIDTH": 8, "B_SIGNED": 1},
              {"A": ["1"] * 4, "B": shift_b or neg, "Y": sh_y}),
        _cell("$bwmux", {"WIDTH": 8}, {"A": list(range(100, 108)), "B": sx_y, "S": sh_y,
                                       "Y": list(range(110, 118))}),
    ]
    return tuple(cells)


@pytest.mark.parametrize("cells", [_write(), _write(shift_b=[4, "0", "0", "0", "0"])])
def test_a_masked_write_through_a_variable_part_select_is_refused(cells):
    """The masked write (and any other select at an index that can be negative) is refused: its
    X bits are masked off, but the simulators disagree on the select's in-range bits."""
    ok, reason = check(_net(*cells), "top", CLOCKS, RESETS)
    assert not ok and "past its vector" in reason, reason


def _bank(replacement: str) -> str:
    """ok-evt-counter-bank-indexed with its counter bank's always block replaced."""
    fx = next(f for f in load_fixtures() if f.name == "ok-evt-counter-bank-indexed")
    text = fx.submission().decode()
    bank = text[text.index("  reg  [31:0] cnt_q;"):text.index("  always @* begin")]
    return text.replace(bank, replacement) if replacement else text


def _x_safe(text: str) -> tuple[bool, str]:
    task = load_task("event")
    g = run_gate(task, task.files(text))
    assert g.status == "pass" and g.netlist is not None, g.findings
    return g.netlist["x_safe"], g.netlist["x_why"]


PAST_END = """  reg  [31:0] cnt_q;
  reg  [1:0]  sel_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) begin cnt_q <= 32'd0; sel_q <= 2'd0; end
    else if (data_s || mark_s) begin
      sel_q <= sel_q + 2'd1;
      cnt_q[15:0] <= cnt_q[sel_q*16 +: 16] + 16'd1;
    end
  end
"""


READ_ONLY = """  reg  [31:0] cnt_q;
  wire        kind_s = mark_s;
  wire [15:0] next_s = cnt_q[kind_s*16 +: 16] + 16'd1;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) cnt_q <= 32'd0;
    else if (data_s || mark_s) begin
      if (kind_s) cnt_q[31:16] <= next_s;
      else cnt_q[15:0] <= next_s;
    end
  end
"""


def test_an_indexed_read_is_x_safe_and_its_variants_are_not():
    """The counter bank read through ``cnt_q[kind_s*16 +: 16]`` (a synchronizer's output times 16,
    into 32 bits) and a 2-bit reset counter indexing a 64-bit bank are accepted; the fixture
    itself (a masked write), a 2-bit index into the 32-bit bank (reads cnt_q[47:32] and
    cnt_q[63:48]: X) and a 1-bit index from a flop without a reset are refused."""
    ok, why = _x_safe(_bank(READ_ONLY))
    assert ok, why
    wide = PAST_END.replace("[31:0] cnt_q", "[63:0] cnt_q").replace("32'd0", "64'd0").replace(
        "cnt_q[15:0] <= cnt_q[sel_q*16 +: 16]", "cnt_q[15:0] <= cnt_q[15:0] + cnt_q[sel_q*16 +: 16]")
    wide = wide.replace("      sel_q <= sel_q + 2'd1;\n",
                        "      sel_q <= sel_q + 2'd1;\n      cnt_q[63:16] <= cnt_q[63:16] + 48'd1;\n")
    ok, why = _x_safe(_bank(wide))
    assert ok, why
    for text in (_bank(""), _bank(PAST_END)):
        ok, why = _x_safe(text)
        assert not ok and "can read past its vector" in why, why
    unreset = """  reg  [31:0] cnt_q;
  reg         sel_q;
  always @(posedge clk_b_i) sel_q <= mark_s;
  wire [15:0] next_s = cnt_q[sel_q*16 +: 16] + 16'd1;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) cnt_q <= 32'd0;
    else if (data_s || mark_s) cnt_q[15:0] <= next_s;
  end
"""
    ok, why = _x_safe(_bank(unreset))
    assert not ok and "state without a reset" in why, why


@needs_verilator
def test_an_accepted_indexed_read_gives_the_same_seeds_on_both_simulators(vl_cache):  # noqa: F811
    """What the check accepts may be graded on Verilator: the accepted read gives Icarus's
    results seed by seed (status, checks, trace hash, time), settling on. The same comparison on
    the refused fixture (its masked write) differs on every seed -- why it stays refused."""
    task = load_task("event")
    seeds = stage_seed_list(task, 8)
    row = compare_design(task, _bank(READ_ONLY), seeds, settle=True, design="read-only")
    assert row.ok and row.icarus_fail == 0, (row.build, row.icarus_vs_verilator[:2],
                                             row.batched_vs_single[:2])
    row = compare_design(task, _bank(""), seeds[:2], settle=True, design="masked-write")
    assert row.build == "pass" and len(row.icarus_vs_verilator) == 2, row.as_dict()


def test_the_refused_variant_really_makes_x_on_icarus():
    """The refusal is not over-cautious: the index that passes the end makes X on Icarus, and the
    harness fails the design for it (an X on an output), where a two-state simulator would not."""
    icarus = get_simulator("icarus")
    if not icarus.available():
        pytest.skip("Icarus is not installed")
    task = load_task("event")
    g = run_gate(task, task.files(_bank(PAST_END)))
    b, results = build_and_run(icarus, task, {task.editable: g.netlist["verilog"]}, visible_seeds(task),
                               settle=True)
    assert b.status == "pass", b.log[-400:]
    assert any("X or Z" in r.reason for r in results), [r.reason for r in results]


def test_an_index_behind_a_very_long_chain_is_bounded_by_its_width_not_an_error():
    """A chain of 3000 muxes (each of the previous one with itself, the first of the constant 1)
    in front of a 5-bit index: followed back 50 deep, the index is at most 1; 3000 deep, the bound
    gives up at its depth (its width, 31: the select is refused) instead of running out of stack,
    which the gate's child would report as a finding."""
    def out(i: int) -> list:
        return ["1", "0", "0", "0", "0"] if i < 0 else list(range(1000 + 5 * i, 1005 + 5 * i))

    def chain(n: int) -> list[dict]:
        return [_cell("$mux", {"WIDTH": 5}, {"A": out(i - 1), "B": out(i - 1), "S": [4], "Y": out(i)})
                for i in range(n)]
    for n, safe in ((50, True), (3000, False)):
        index = [*out(n - 1), "0"]
        ok, reason = check(_net(*chain(n), *_read(index, a_w=17)), "top", CLOCKS, RESETS)
        assert ok is safe, (n, reason)
