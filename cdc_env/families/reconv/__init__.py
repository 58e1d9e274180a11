"""The reconvergence family (``reconv``, tasks ``rc_*``): one ``RcParams`` in, one task folder out.

The design has two clock domains. Domain a (the source) holds a small state machine that steps
through ``N`` states in a fixed cyclic order, one step per ``clk_a`` edge on which the step input
is high. Domain b (the destination) shows the source's state on an output, decoded (one-hot, an
index, the code itself, a pair of enables). The defect: each bit of the source's state register
crosses through its own ``cdc_sync_bit``, and the destination decodes the bits together. Where one
step of the source's encoding changes two or more bits, the late-settling model (SPEC section 4)
may let one bit arrive a destination cycle after the others, and the decoded combination is then,
for one cycle, a state the source never had in that order (or no state at all). With late
settling off every bit of a step arrives on the same edge and the defect passes every seed.

The repair (the reference): the state as a unit-distance code of its index (Gray for 4 and 8
states, Johnson for 6), which changes one bit per step, through one ``cdc_sync_bus``; the
destination decodes the code. Other correct repairs (registry fixtures ``ok-rc-*``): a
destination that ignores a combination until it has held for two cycles, or takes only the
successor of the state it shows; an illegal code held on (one-hot sources: every mix of one step
is illegal); a pulse per step and a destination counter. The qualified word (the state held
stable while a one-bit qualifier crosses) is correct too, but today's gate refuses its raw word
(CDC-RAW) until the data-enable family's qualifier rule lands; no variant depends on it.

The testbench (``testbench_text``) raises the step input for one ``clk_a`` cycle at a time,
``steps`` times per run (a stimulus knob drawn per seed: it sets the detection band), with at
least ``HOLD_A`` ``clk_a`` and ``HOLD_B`` ``clk_b`` cycles between steps, and checks 1 ps after
every rising ``clk_b`` edge, and 1 ps after every other change of the output, that the output
shows the state the destination showed last or the source's next state after it once the source
has taken that step (so only states the source had, in its order, none skipped), and, at the
samples, the source's latest state within ``LAT_B`` ``clk_b`` plus ``LAT_A`` ``clk_a`` cycles of
its step. On hidden seeds the harness also sums the synchronizer input bits changed per source
edge (``CDC_EDGE_BITS`` = ``Encoding.step_bits``).

Every output is a pure function of ``RcParams`` (text only, no time, no randomness). The committed
variants are ``VARIANTS``; ``python -m cdc_env.families.reconv`` (or ``write_all()``) rewrites their
folders and tests/test_reconv_family.py checks that they match.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from ...errors import CdcError
from .. import Draw, Region, gate_tail, task_files, write_files

LAT_B = 8  # the destination shows a step within this many clk_b cycles ...
LAT_A = 2  # ... plus this many clk_a cycles
HOLD_B = 12  # the testbench leaves at least this many clk_b cycles between two steps ...
HOLD_A = 4  # ... and at least this many clk_a cycles
EXCURSION = 16.0  # ratio excursions of the hidden seeds (every 20th): the fast side up to 16:1


@dataclass(frozen=True)
class Encoding:
    """How the source holds its state: ``codes[i]`` is state i's code (``width`` bits)."""

    width: int
    codes: tuple[int, ...]
    what: str

    @property
    def n(self) -> int:
        return len(self.codes)

    def step_bits(self) -> int:
        """The most bits one step changes (the crossing's per-edge limit in the testbench)."""
        return max(bin(self.codes[i] ^ self.codes[(i + 1) % self.n]).count("1") for i in range(self.n))


def _gray(n: int) -> tuple[int, ...]:
    return tuple(i ^ (i >> 1) for i in range(n))


def _johnson(bits: int) -> tuple[int, ...]:
    out, v = [], 0
    for _ in range(2 * bits):
        out.append(v)
        v = ((v << 1) | (1 - (v >> (bits - 1)))) & ((1 << bits) - 1)
    return tuple(out)


ENCODINGS: dict[str, Encoding] = {
    "bin4": Encoding(2, (0, 1, 2, 3), "a 2-bit binary state number"),
    "bin8": Encoding(3, tuple(range(8)), "a 3-bit binary state number"),
    "bin6": Encoding(3, tuple(range(6)), "a 3-bit binary state number (0 to 5)"),
    "onehot4": Encoding(4, (1, 2, 4, 8), "a 4-bit one-hot state"),
    "onehot6": Encoding(6, (1, 2, 4, 8, 16, 32), "a 6-bit one-hot state"),
    "pair4": Encoding(2, (0b00, 0b11, 0b01, 0b10), "a pair of enable bits (off, both, first, second)"),
    "cmd4": Encoding(3, (0b000, 0b011, 0b110, 0b101), "a 3-bit even-parity command code"),
}
# Output kinds: what the destination shows for state i.
OUTS = ("onehot", "index", "code")
# Output kinds that show the source's own code (a binary state's index, a one-hot state's one-hot
# decode): those are the kind "code" (encoding name prefix -> kinds).
_SAME_AS_CODE = {"bin": ("index",), "one": ("onehot",)}
TRAIN_ENCODINGS = ("bin4", "bin8", "onehot4", "pair4", "cmd4")
HELDOUT_ENCODINGS = ("bin6", "onehot6")
TRAIN_RATIO, HELDOUT_RATIO = 4.0, 6.0


def unit_code(n: int) -> tuple[int, tuple[int, ...]]:
    """A cyclic unit-distance code of n states (width, codes): Gray for 2/4/8, Johnson for 6."""
    if n in (2, 4, 8):
        return max(1, (n - 1).bit_length()), _gray(n)
    if n == 6:
        return 3, _johnson(3)
    raise CdcError(f"no cyclic unit-distance code of {n} states in this family")


@dataclass(frozen=True)
class RcParams:
    id: str
    module: str
    encoding: str
    out_kind: str
    out_name: str  # the destination output's port name (without _o)
    step_name: str  # the step input's port name (without _i)
    state_names: tuple[str, ...]
    steps: tuple[int, int] = (4, 10)
    run_slow_cycles: int = 400
    ratio_max: float = TRAIN_RATIO
    visible: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    band: tuple[int, int] = (98, 138)

    @property
    def enc(self) -> Encoding:
        return ENCODINGS[self.encoding]

    def check(self) -> None:
        if self.encoding not in ENCODINGS or self.out_kind not in OUTS:
            raise CdcError(f"{self.id}: encoding must be one of {', '.join(ENCODINGS)} and out_kind "
                           f"one of {', '.join(OUTS)}")
        if len(self.state_names) != self.enc.n or len(set(self.state_names)) != self.enc.n:
            raise CdcError(f"{self.id}: state_names must name the {self.enc.n} states, each once")
        if not 1 <= self.steps[0] <= self.steps[1] or len(self.visible) != 8:
            raise CdcError(f"{self.id}: bad steps or visible seeds")
        if self.out_kind in _SAME_AS_CODE.get(self.encoding[:3], ()):
            raise CdcError(f"{self.id}: out_kind {self.out_kind} on {self.encoding} is out_kind code")
        if self.enc.step_bits() < 2:
            raise CdcError(f"{self.id}: the encoding must change two bits on some step")
        if not 1.0 < self.ratio_max < EXCURSION:
            raise CdcError(f"{self.id}: ratio_max must be above 1 and below {EXCURSION:g}")
        unit_code(self.enc.n)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @property
    def out_width(self) -> int:
        n = self.enc.n
        return {"onehot": n, "index": max(1, (n - 1).bit_length()), "code": self.enc.width}[self.out_kind]

    def out_value(self, i: int) -> int:
        """What the destination shows for state i."""
        return {"onehot": 1 << i, "index": i, "code": self.enc.codes[i]}[self.out_kind]

    @property
    def out(self) -> str:
        return f"{self.out_name}_o"

    @property
    def step(self) -> str:
        return f"{self.step_name}_i"


def _v(width: int, value: int) -> str:
    return f"{width}'b{value:0{width}b}"


def _dst_copy(p: RcParams, width: int) -> str:
    """The defect's destination for the output kind ``code``: the synchronized bits, registered.
    Where the source has no all-zero code (one-hot), all zero is what the synchronizers hold out of
    reset before the source's reset code has crossed: the output keeps its reset state then."""
    q = f"{p.out_name}_q"
    take = (f"{q} <= state_s;" if 0 in p.enc.codes else
            f"if (state_s != {_v(width, 0)}) {q} <= state_s;  // all zero: nothing has crossed yet")
    return f"""
  // ---------------- domain b (clk_b_i): the state as it arrives ----------------
  reg [{width - 1}:0] {q};
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) {q} <= {_v(width, p.enc.codes[0])};
    else {take}
  end
  assign {p.out} = {q};
"""


def _natural(p: RcParams, code: int) -> int:
    """The defect's decode (output kinds onehot and index) of any combination of the synchronized
    bits, legal or not: the legal codes decode to their state; what logic a designer writes gives
    the rest."""
    e = p.enc
    if code in e.codes:
        return p.out_value(e.codes.index(code))
    if p.out_kind == "index" and p.encoding.startswith("onehot"):
        return _or_encode(code, e.n, p.out_width)
    return 0  # no state: the one-hot output all zero, the index 0


def _or_encode(code: int, n: int, width: int) -> int:
    """An OR-encoder of a one-hot vector (bit k of the index is the OR of the inputs whose number has
    bit k set), as one writes it in logic."""
    out = 0
    for k in range(width):
        if any(code >> i & 1 and i >> k & 1 for i in range(n)):
            out |= 1 << k
    return out


def _src_block(p: RcParams, width: int, codes: tuple[int, ...], reg: str, what: str) -> str:
    rows = "".join(f"        {_v(width, codes[i])}: {reg} <= {_v(width, codes[(i + 1) % len(codes)])};"
                   f"  // {p.state_names[i]} -> {p.state_names[(i + 1) % len(codes)]}\n"
                   for i in range(len(codes)))
    return f"""
  // ---------------- domain a (clk_a_i): the source state ----------------
  // {what}
  reg [{width - 1}:0] {reg};
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) {reg} <= {_v(width, codes[0])};
    else if ({p.step}) begin
      case ({reg})
{rows}        default: {reg} <= {_v(width, codes[0])};
      endcase
    end
  end
"""


def _dst_block(p: RcParams, width: int, table: dict[int, int], sig: str, hold: bool) -> str:
    w = p.out_width
    rows = "".join(_dst_row(p, width, c, v) for c, v in sorted(table.items()))
    default = f"{p.out_name}_q <= {p.out_name}_q;  // not a code of the source: keep the last state" \
        if hold else f"{p.out_name}_q <= {_v(w, p.out_value(0))};"
    return f"""
  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [{w - 1}:0] {p.out_name}_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) {p.out_name}_q <= {_v(w, p.out_value(0))};
    else begin
      case ({sig})
{rows}      default: {default}
      endcase
    end
  end
  assign {p.out} = {p.out_name}_q;
"""


def _dst_row(p: RcParams, width: int, code: int, value: int) -> str:
    """One row of the destination's decode (a comment names the state ``value`` shows)."""
    state = next((s for i, s in enumerate(p.state_names) if p.out_value(i) == value), None)
    note = f"  // {state}" if state else ""
    return f"      {_v(width, code)}: {p.out_name}_q <= {_v(p.out_width, value)};{note}\n"


def design_text(p: RcParams, kind: str) -> str:
    e = p.enc
    if kind == "defect":
        src = _src_block(p, e.width, e.codes, "state_q", e.what)
        cross = f"\n  // {'-' * 16} crossing: each state bit through its own synchronizer {'-' * 16}\n"
        cross += f"  wire [{e.width - 1}:0] state_s;\n"
        cross += "".join(f"  cdc_sync_bit u_sync_{k} (.clk_i(clk_b_i), .rst_ni(rst_b_ni), "
                         f".d_i(state_q[{k}]), .q_o(state_s[{k}]));\n" for k in range(e.width))
        if p.out_kind == "code":
            dst = _dst_copy(p, e.width)
        else:
            table = {c: _natural(p, c) for c in range(1 << e.width)}
            dst = _dst_block(p, e.width, table, "state_s", hold=False)
        fix = ""
    else:
        gw, gc = unit_code(e.n)
        src = _src_block(p, gw, gc, "state_q", "the state number in a unit-distance code (one bit per step)")
        cross = (f"\n  // {'-' * 16} crossing: the whole code through one synchronizer {'-' * 16}\n"
                 f"  wire [{gw - 1}:0] state_s;\n"
                 f"  cdc_sync_bus #(.WIDTH({gw})) u_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q), "
                 ".q_o(state_s));\n")
        table = {gc[i]: p.out_value(i) for i in range(e.n)}
        dst = _dst_block(p, gw, table, "state_s", hold=True)
        fix = "" if kind == "clean" else (
            "\n// Fix: the source keeps its state in a code that changes one bit per step (Gray or Johnson)\n"
            "// and the whole code crosses through one cdc_sync_bus, so the destination sees each state\n"
            "// or the one before it, never a mix of two.")
    names = ", ".join(p.state_names)
    head = textwrap.fill(
        f"{p.module} -- a state machine in domain a (clk_a_i) that steps through {e.n} states in a "
        f"fixed order ({names}, then {p.state_names[0]} again), one step per clk_a_i edge on which "
        f"{p.step} is high; domain b (clk_b_i) shows the state on {p.out} ({_out_desc(p)}).",
        96, initial_indent="// ", subsequent_indent="// ", break_on_hyphens=False)
    return f"""{head}{fix}
module {p.module} (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       {p.step},
  output wire [{p.out_width - 1}:0] {p.out}
);
{src}{cross}{dst}endmodule
"""


def _out_desc(p: RcParams) -> str:
    return {"onehot": f"one-hot: bit i is state i, {p.state_names[0]} first",
            "index": f"the state's number: {p.state_names[0]} is 0",
            "code": "the state's code, as the source encodes it"}[p.out_kind]


def _out_table(p: RcParams) -> str:
    return ", ".join(f"{p.state_names[i]} = {_v(p.out_width, p.out_value(i))}" for i in range(p.enc.n))


def testbench_text(p: RcParams) -> str:
    e, w = p.enc, p.out_width
    dec = "".join(f"      {i}: dec = {_v(w, p.out_value(i))};\n" for i in range(e.n))
    o = p.out
    return f"""// Testbench of reconvergence task {p.id} (generated by cdc_env.families.reconv; hidden from
// agents).
// Stimulus: once both resets are released, {p.step} (step here) is raised for one clk_a cycle
// +steps times per run, after gaps drawn per seed around the run's length over steps + 1, never
// shorter than {HOLD_A} clk_a cycles and {HOLD_B} clk_b cycles. The source's state number src_n counts
// the steps taken (the clk_a edges on which step is high). Checks, 1 ps after every rising clk_b
// edge once rst_b is released: {o} is the decode of the state the destination showed last
// (dst_n) or of the next one, dst_n + 1, when the source has taken that step -- only states the
// source had, in its order, none skipped; it shows the source's latest state within {LAT_B} clk_b
// plus {LAT_A} clk_a cycles of the step; X or Z fails. The same order check runs 1 ps after every
// other change of the output (between samples). Every synchronizer input bit that changes
// counts towards the per-edge limit (CDC_EDGE_BITS, hidden seeds).
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR rc_tb
`define CDC_EDGE_BITS {e.step_bits()}
module rc_tb;
`include "cdc_tb.vh"
  reg        step = 1'b0;
  wire [{w - 1}:0] {o};
  reg [31:0] steps, rng_r;
  reg [31:0] src_n = 32'd0;     // steps the source has taken
  reg [31:0] dst_n = 32'd0;     // the state the destination shows (a step count)
  reg [31:0] wait_a = 32'd0;    // clk_a edges before the next step
  reg [31:0] gap_a, hold_a, mean_a;
  reg        started = 1'b0;
  reg [63:0] t_step = 64'd0;    // time of the latest step
  reg [63:0] lat_ps;
  reg [8*160-1:0] msg;

  {p.module} dut (
    .clk_a_i(clk_a), .rst_a_ni(rst_an), .clk_b_i(clk_b), .rst_b_ni(rst_bn),
    .{p.step}(step), .{o}({o})
  );

  // What the destination shows for state number k (the cycle has {e.n} states).
  function [{w - 1}:0] dec(input [31:0] k);
    case (k % {e.n})
{dec}      default: dec = {{{w}{{1'bx}}}};
    endcase
  endfunction

  // Source side: drive step (one clk_a cycle high per step) and count the steps taken.
  always @(posedge clk_a) if (rst_an && rst_bn && !run_over) begin
    if (!started) begin
      // Set up at the first clk_a edge with both resets released: the harness has read its
      // plusargs by then (initial blocks race at time 0, in another order on each simulator).
      started = 1'b1;
      if (!$value$plusargs("steps=%d", steps)) steps = 32'd6;
      rng_r = stim_key ^ 32'h3c6ef372;
      lat_ps = {LAT_B} * 2 * half_b + {LAT_A} * 2 * half_a;
      // At least {HOLD_A} clk_a and {HOLD_B} clk_b cycles between steps, in clk_a cycles.
      hold_a = ({HOLD_B} * 2 * half_b + 2 * half_a - 1) / (2 * half_a);
      if (hold_a < {HOLD_A}) hold_a = {HOLD_A};
      mean_a = ((t_end - $time) / (2 * half_a)) / (steps + 32'd1);
      rng_r = xs32(rng_r);
      wait_a = mean_a / 2 + rng_r % (mean_a + 32'd1);
    end
    if (step) begin
      src_n = src_n + 32'd1;
      t_step = $time;
      `CDC_FOLD({{32'd1, src_n}})
    end
    if (wait_a != 32'd0) begin
      wait_a = wait_a - 32'd1;
      step <= 1'b0;
    end else begin
      step <= 1'b1;
      rng_r = xs32(rng_r);
      gap_a = mean_a / 2 + rng_r % (mean_a + 32'd1);
      wait_a = (gap_a > hold_a) ? gap_a : hold_a;
    end
  end

  // The order check: {o} shows the state shown last (dst_n) or, once the source has taken that
  // step, the next one (dst_n advances then); X or Z fails.
  task order_check;
    begin
      if ((^{o}) === 1'bx) tb_fail("X or Z on an output: {o}");
      else if ({o} !== dec(dst_n)) begin
        if (src_n > dst_n && {o} === dec(dst_n + 32'd1)) dst_n = dst_n + 32'd1;
        else begin
          $sformat(msg, "{o} went from %b to %b at t=%0d: not a state of the source in its order (step %0d)",
                   dec(dst_n), {o}, $time, src_n);
          tb_fail(msg);
        end
      end
    end
  endtask

  // Destination side, 1 ps after each rising clk_b edge (no clock edge shares that time): the
  // order check, then the latency bound.
  always @(posedge clk_b) if (rst_bn && !run_over) begin
    #1;
    `CDC_FOLD({{32'd2, {32 - w}'d0, {o}}})
    `CDC_NOTE_CHECK
    order_check;
    if (!run_over && src_n != dst_n && ($time - t_step) > lat_ps) begin
      $sformat(msg, "{o} = %b still shows step %0d's state %0d ps after step %0d (t=%0d)",
               {o}, dst_n, $time - t_step, src_n, $time);
      tb_fail(msg);
    end
  end

  // Between samples: 1 ps after every change of {o} at another time than a sample (a change on
  // a falling clk_b edge, say), the same order check, so the output never shows another state
  // between samples either. It folds and counts nothing: a simulator that shows a glitch within
  // a time step triggers it where another does not, but both see the same settled value 1 ps
  // later, and a value that did not change passes it. A sample time (1 ps after a rising clk_b
  // edge) is left to the sampler above, so the two never share a time step.
  always @({o}) if (rst_seen && rst_bn && !run_over) begin
    #1;
    if (rst_bn && !run_over && !($time - 64'd1 >= ofs_b && ($time - 64'd1 - ofs_b) % (2 * half_b) == 64'd0))
      order_check;
  end

  task final_check;
    begin
      if (src_n == 32'd0) tb_fail("the source never stepped");
    end
  endtask
endmodule
"""


def bug_report(p: RcParams) -> str:
    e = p.enc
    names = ", ".join(f"`{s}`" for s in p.state_names)
    text = f"""# Bug report: `{p.module}` shows states its source never had

**Design.** `{p.module}` has two clock domains, `clk_a_i` (reset `rst_a_ni`) and `clk_b_i` (reset
`rst_b_ni`). Domain a holds a state machine that steps through {e.n} states in a fixed order
({names}, then `{p.state_names[0]}` again), one step on each `clk_a_i` edge on which `{p.step}` is
high; it starts in `{p.state_names[0]}` after reset. Domain b shows the state on `{p.out}`
({_out_desc(p)}: {_out_table(p)}).

**Symptom.** Now and then `{p.out}` shows, for a cycle, a state out of order, or a value that is no
state at all, right after the source steps. Not every run shows it, and ordinary simulation never
shows it.

**Invariant the fix must keep.** `{p.out}` only ever shows states the source had, in the source's
order, none skipped: on every `clk_b_i` cycle it shows the state it showed last or the next one,
and the next one only once the source has taken that step (checked 1 ps after every rising
`clk_b_i` edge and 1 ps after every other change of `{p.out}`). After a step it shows the
source's new state within {LAT_B} cycles of `clk_b_i` plus {LAT_A} cycles of `clk_a_i`.
`{p.out}` is never X or Z. The environment raises `{p.step}` for one `clk_a_i` cycle at a time
and leaves at least {HOLD_A} cycles of `clk_a_i` and {HOLD_B} cycles of `clk_b_i` between two
steps. The port list and the meaning of every port stay as they are. All the crossings into one
domain together change at most {e.step_bits()} bits per clock edge of the other domain (summed
over every synchronizer; the grader checks this). Both clocks may be anywhere from equal to
{p.ratio_max:g}:1 (either side faster), with any phase.

**Clocking.** Correctness may not rest on how fast the other clock runs: a state may not be shown
before the source has it, however the clocks compare. So some hidden seeds run outside the range
above (either side faster by up to {EXCURSION:g}:1). This is fair because every bound above is
stated in cycles of each clock, which a correct design meets at any ratio.

**What you may change.** Only `{p.module}.v`. Every signal that crosses between the clock domains
must go through one of the provided primitives: a synchronizer (`cdc_sync_bit`, `cdc_sync_bus`,
`cdc_sync_pulse`), or a word through `cdc_hold_bus` loaded under a synchronized qualifier (the
contract's "qualified data crossings"); read their timing contract with the `contract` tool.
"""
    paras = text.split("\n\n")
    return "\n\n".join(para if para.startswith("#")
                       else textwrap.fill(" ".join(para.split()), 96, break_on_hyphens=False)
                       for para in paras).rstrip() + "\n"


def _heldout_line(p: RcParams) -> str:
    """``heldout = true`` for a value of the held-out region (held-out tasks are never listed);
    nothing for a training value, whose manifest predates the line."""
    held = p.ratio_max == HELDOUT_RATIO and p.encoding in _encodings("heldout")
    return "heldout = true\n" if held else ""


def manifest_text(p: RcParams) -> str:
    return f"""# Reconvergence variant {p.id}, generated by cdc_env.families.reconv (do not edit by hand;
# regenerate).
# Parameters: {p.to_json()}
id = "{p.id}"
family = "reconv"
title = "{p.module} shows states its source never had"
top = "{p.module}"
editable = "{p.module}.v"
testbench = "tb.v"
tb_top = "rc_tb"
bug_report = "BUG.md"
hold = true  # the state may also cross as a qualified word (cdc_hold_bus, gate rule CDC-QUAL)
{_heldout_line(p)}reference = "reference/{p.module}.v"
clean = "clean/{p.module}.v"

# Domain a holds the source state, domain b shows it.
[clocks.a]
clock = "clk_a_i"
reset = "rst_a_ni"
[clocks.b]
clock = "clk_b_i"
reset = "rst_b_ni"

[seeds]
fast = "either"
ratio_min = 1.0
ratio_max = {p.ratio_max:.1f}
low_band = 0.5
run_slow_cycles = {p.run_slow_cycles}
hidden_count = 200
excursion_max = {EXCURSION:.1f}  # ratio excursions on 5% of hidden seeds (BUG.md, "Clocking")
visible = [{", ".join(str(s) for s in p.visible)}]  # cdc-env gate-tasks --suggest-visible

{gate_tail({"steps": p.steps}, p.band)}"""


def generate(p: RcParams) -> dict[str, str]:
    """Every file of the task folder, as {relative path: text}."""
    p.check()
    return task_files(p.module, manifest_text(p), testbench_text(p), bug_report(p),
                      lambda kind: design_text(p, kind))


def write_task(p: RcParams, out: Path, *, force: bool = False) -> Path:
    return write_files(generate(p), out, force=force)


# Visible seeds: chosen by `cdc-env gate-tasks --suggest-visible` (Icarus, late settling on);
# steps: the stimulus knob, set (as search() would) so that the hidden count lies in the band.
VARIANTS: tuple[RcParams, ...] = (
    RcParams("rc_01", "mode_ctrl", "bin4", "onehot", "mode", "step",
             ("IDLE", "ARM", "RUN", "DONE"), visible=(1, 2, 3, 4, 5, 6, 18, 20)),
    RcParams("rc_02", "phase_track", "bin8", "code", "phase", "advance",
             ("P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7"), visible=(1, 2, 3, 4, 5, 9, 12, 13)),
    RcParams("rc_03", "ring_select", "onehot4", "code", "sel", "next",
             ("S0", "S1", "S2", "S3"), visible=(1, 2, 3, 4, 5, 6, 7, 8)),
    RcParams("rc_04", "enable_pair", "pair4", "code", "en", "step",
             ("OFF", "BOTH", "FIRST", "SECOND"), steps=(3, 9), visible=(1, 2, 3, 4, 5, 10, 11, 15)),
    RcParams("rc_05", "cmd_decode", "cmd4", "onehot", "cmd", "issue",
             ("NOP", "LOAD", "SHIFT", "STORE"), steps=(2, 6), visible=(1, 2, 3, 4, 5, 10, 12, 14)),
    RcParams("rc_06", "slot_index", "onehot4", "index", "slot", "rotate",
             ("SLOT0", "SLOT1", "SLOT2", "SLOT3"), visible=(1, 2, 3, 4, 5, 6, 8, 9)),
)


def write_all(root: Path | None = None) -> list[Path]:
    """Rewrite every committed variant's folder (``tasks/<id>/`` by default)."""
    from ... import paths  # noqa: PLC0415

    base = Path(root) if root is not None else paths.tasks_dir()
    return [write_task(p, base / p.id, force=True) for p in VARIANTS]


# ------------------------------------------------------------------ the family protocol
_MODULES = {"train": ("mode_ctrl", "phase_track", "ring_select", "enable_pair", "cmd_decode",
                      "slot_index", "state_mirror", "seq_view", "fsm_shadow", "ctl_relay"),
            "heldout": ("stage_report", "mode_echo", "cycle_watch", "seq_follow")}
_OUT_NAMES = {"train": ("mode", "phase", "sel", "state", "view"), "heldout": ("stage", "sts")}
_STEP_NAMES = {"train": ("step", "advance", "next", "issue"), "heldout": ("go", "tick")}
STEP_SEARCH = ((4, 10), (3, 8), (6, 14), (2, 6), (8, 18), (5, 12), (10, 24), (2, 4))
# The first steps range a draw takes, by (encoding, output kind), else STEP_SEARCH[0]. Measured on
# the defect's hidden seeds (Icarus, 200 each): cmd4 at (4, 10) on 146, at (2, 6) on 132 (every
# step changes two bits); a one-hot state shown as an index at (4, 10) on 93-109 (an OR-encoder
# turns a 0000 mix into state 0, which is in order after state 3), at (5, 12) on 110-123; the
# others at (4, 10) on 104-135, held-out encodings included (onehot6 as an index: 112).
DRAW_STEPS = {("cmd4", "code"): (2, 6), ("cmd4", "onehot"): (2, 6), ("cmd4", "index"): (2, 6),
              ("onehot4", "index"): (5, 12)}


def _encodings(region: Region) -> tuple[str, ...]:
    return TRAIN_ENCODINGS if region == "train" else HELDOUT_ENCODINGS


class ReconvFamily:
    name = "reconv"
    title = "reconvergence: separately synchronized bits of one state decoded together"

    def training(self) -> tuple[RcParams, ...]:
        return VARIANTS

    def generate(self, p: RcParams) -> dict[str, str]:
        return generate(p)

    def to_dict(self, p: RcParams) -> dict:
        return asdict(p)

    def from_dict(self, d: dict) -> RcParams:
        names = {f.name for f in fields(RcParams)}
        if not isinstance(d, dict) or set(d) - names or not {"id", "module", "encoding"} <= set(d):
            raise CdcError(f"reconv parameters: expected the keys {', '.join(sorted(names))}")
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()}
        try:
            p = RcParams(**kw)
            p.check()
        except (TypeError, ValueError) as exc:
            raise CdcError(f"reconv parameters: {exc}") from None
        return p

    def draw(self, d: Draw, region: Region, vid: str) -> RcParams:
        enc = d.choice(_encodings(region))
        kinds = [k for k in OUTS if k not in _SAME_AS_CODE.get(enc[:3], ())]
        out_kind = d.choice(kinds)
        n = ENCODINGS[enc].n
        prefix = d.choice(("S", "ST", "M", "Q"))
        return RcParams(
            id=vid, module=d.choice(_MODULES[region]), encoding=enc, out_kind=out_kind,
            out_name=d.choice(_OUT_NAMES[region]), step_name=d.choice(_STEP_NAMES[region]),
            state_names=tuple(f"{prefix}{i}" for i in range(n)),
            steps=DRAW_STEPS.get((enc, out_kind), STEP_SEARCH[0]),
            ratio_max=TRAIN_RATIO if region == "train" else HELDOUT_RATIO)

    def region_of(self, p: RcParams) -> Region | None:
        for region in ("train", "heldout"):
            ratio = TRAIN_RATIO if region == "train" else HELDOUT_RATIO
            if p.encoding in _encodings(region) and p.ratio_max == ratio:
                return region  # type: ignore[return-value]
        return None

    def search(self, p: RcParams) -> Iterator[RcParams]:
        yield p
        for s in STEP_SEARCH:
            if s != p.steps:
                yield replace(p, steps=s)


FAMILY = ReconvFamily()


def by_id(vid: str) -> RcParams | None:
    return next((p for p in VARIANTS if p.id == vid), None)
