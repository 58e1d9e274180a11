"""The data-enable crossing family: one ``DeParams`` in, one task folder out (``tasks/de_*``).

A multi-bit word crosses from a source domain (clock a, ``clk_src_i``) to a destination domain
(clock b, ``clk_dst_i``) as plain wires, through the provided ``cdc_hold_bus`` (trusted/hdl/
cdc_hold.v), held stable by the source while a one-bit qualifier crosses through a synchronizer:
the source takes ``data_i`` into its word register and toggles a qualifier flop on the same edge
when ``send_i`` is high; the destination synchronizes the toggle with ``cdc_sync_bit``, detects
its change and loads the word into ``data_o`` on that change only (``valid_o`` for one cycle).
The destination's load enable is a function of the synchronizer's output alone, which is what
the gate's qualified-crossing rule (CDC-QUAL) accepts.

The defect (``shape``) passes the gate and meets every invariant with ideal wires and a fixed
two-edge synchronizer (late settling off) at every ratio the task runs, and fails only through the
models (late settling on):

  lead   the word is registered one source cycle after the qualifier toggles (a second pipeline
         stage): the destination loads it one cycle early relative to the word, which may be
         young (cdc_hold_bus: changed fewer than two destination edges before the load) and
         read as a mix of old and new bits. Source faster (or equal).
  split  the upper half of the word is written one source cycle after the lower half and the
         qualifier: the source changes the word while its qualifier is in flight.
  short  the qualifier is a one-source-cycle level pulse through cdc_sync_bit (not a toggle):
         the destination (faster) samples it on one or two of its edges, and a sample that
         settles late (cdc_sync.v) loses it -- a word never delivered. Destination faster.

The testbench (``testbench_text``) sends ``sends`` words per run (a stimulus knob drawn per seed:
the detection band is set by it) at times drawn per seed, and checks after every destination edge
that ``valid_o`` marks the next word sent, in order, that ``data_o`` equals it and holds it until
the next, that no word is delivered twice or never, and the latency bound (``LAT_MAX``).

Every output is a pure function of ``DeParams`` (text only, no time, no randomness).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from ...errors import CdcError
from .. import gate_tail, task_files

SHAPES = ("lead", "split", "short")
CAPTURES = ("if", "mux")  # how the destination writes its load: an if, or a recirculating ?:
# Destination cycles within which a word is delivered, once clk_src_i has had SRC_EDGES rising
# edges after the one that took send_i (a toggle and a two-flop synchronizer take 2-3 of them and
# the load one more; a cdc_sync_pulse or a request/acknowledge takes a few more).
LAT_MAX = 10
SRC_EDGES = 2
GAP_SLOW = 16  # each send has a window of at least this many cycles of the slower clock ...
SEND_APART = GAP_SLOW // 2 - 2  # ... and comes in its middle half: sends this many apart at least
MAX_SENDS = 48


@dataclass(frozen=True)
class DeParams:
    id: str
    module: str
    width: int
    shape: str
    capture: str = "if"
    sends: tuple[int, int] = (4, 12)
    run_slow_cycles: int = 600
    visible: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    band: tuple[int, int] = (98, 138)
    ratio_max: float = 4.0
    excursion_max: float = 8.0
    excursion_other: float = 4.0  # excursions with the other clock the faster, up to this ratio
    heldout: bool = False

    def check(self) -> None:
        if self.shape not in SHAPES or self.capture not in CAPTURES:
            raise CdcError(f"{self.id}: shape must be one of {', '.join(SHAPES)} and capture one of "
                           f"{', '.join(CAPTURES)}")
        if not 4 <= self.width <= 32 or not self.module.isidentifier():
            raise CdcError(f"{self.id}: width must be 4..32 and module an identifier")
        if not 1 <= self.sends[0] <= self.sends[1] <= MAX_SENDS or len(self.visible) != 8:
            raise CdcError(f"{self.id}: bad sends (1..{MAX_SENDS}) or visible seeds (8)")
        if self.run_slow_cycles < GAP_SLOW * (self.sends[1] + 2):
            raise CdcError(f"{self.id}: run_slow_cycles too short for {self.sends[1]} sends")
        if not 1.0 < self.ratio_max <= self.excursion_max or self.excursion_other <= 1.0:
            raise CdcError(f"{self.id}: need 1 < ratio_max <= excursion_max and excursion_other > 1")

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def fast(self) -> str:
        """The faster clock: the source for a word that changes late (lead, split), the
        destination for a short qualifier pulse."""
        return "b" if self.shape == "short" else "a"


def from_dict(d: dict) -> DeParams:
    names = {f.name for f in fields(DeParams)}
    bad = sorted(set(d) - names)
    if bad:
        raise CdcError(f"dataen parameters: unknown key(s) {', '.join(bad)[:80]}")
    try:
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()}
        p = DeParams(**kw)
    except TypeError as e:
        raise CdcError(f"dataen parameters: {str(e)[:120]}") from None
    p.check()
    return p


def _lo(p: DeParams) -> int:
    """The split defect's lower half: bits [lo-1:0] cross with the qualifier."""
    return p.width // 2


def _source(p: DeParams, kind: str) -> str:
    w = p.width
    if kind != "defect":
        return f"""
  // ---------------- source domain (clk_src_i) ----------------
  // send_i takes data_i into word_q and toggles qual_q on the same edge: the word is stable from
  // then until the next send, while the toggle crosses.
  reg [{w - 1}:0] word_q;
  reg        qual_q;
  always @(posedge clk_src_i or negedge rst_src_ni) begin
    if (!rst_src_ni) begin
      word_q <= {w}'d0;
      qual_q <= 1'b0;
    end else if (send_i) begin
      word_q <= data_i;
      qual_q <= ~qual_q;
    end
  end
"""
    if p.shape == "lead":
        return f"""
  // ---------------- source domain (clk_src_i) ----------------
  // send_i takes data_i into a staging register and toggles qual_q; the word register follows
  // one cycle later.
  reg [{w - 1}:0] stage_q, word_q;
  reg        qual_q, send_q;
  always @(posedge clk_src_i or negedge rst_src_ni) begin
    if (!rst_src_ni) begin
      stage_q <= {w}'d0;
      word_q  <= {w}'d0;
      qual_q  <= 1'b0;
      send_q  <= 1'b0;
    end else begin
      send_q <= send_i;
      if (send_i) begin
        stage_q <= data_i;
        qual_q  <= ~qual_q;
      end
      if (send_q) word_q <= stage_q;
    end
  end
"""
    if p.shape == "split":
        lo = _lo(p)
        return f"""
  // ---------------- source domain (clk_src_i) ----------------
  // send_i takes the low half of data_i into word_q and toggles qual_q; the high half goes
  // through a staging register and reaches word_q one cycle later.
  reg [{w - 1}:0] word_q;
  reg [{w - lo - 1}:0] high_q;
  reg        qual_q, send_q;
  always @(posedge clk_src_i or negedge rst_src_ni) begin
    if (!rst_src_ni) begin
      word_q <= {w}'d0;
      high_q <= {w - lo}'d0;
      qual_q <= 1'b0;
      send_q <= 1'b0;
    end else begin
      send_q <= send_i;
      if (send_i) begin
        word_q[{lo - 1}:0] <= data_i[{lo - 1}:0];
        high_q <= data_i[{w - 1}:{lo}];
        qual_q <= ~qual_q;
      end
      if (send_q) word_q[{w - 1}:{lo}] <= high_q;
    end
  end
"""
    return f"""
  // ---------------- source domain (clk_src_i) ----------------
  // send_i takes data_i into word_q and raises qual_q for that one cycle.
  reg [{w - 1}:0] word_q;
  reg        qual_q;
  always @(posedge clk_src_i or negedge rst_src_ni) begin
    if (!rst_src_ni) begin
      word_q <= {w}'d0;
      qual_q <= 1'b0;
    end else begin
      qual_q <= send_i;
      if (send_i) word_q <= data_i;
    end
  end
"""


def _dest(p: DeParams, kind: str) -> str:
    w = p.width
    short = kind == "defect" and p.shape == "short"
    take = "qual_s & ~qual_d" if short else "qual_s ^ qual_d"
    what = "rises" if short else "changes"
    load = ("      if (take) out_q <= word_s;\n" if p.capture == "if"
            else "      out_q  <= take ? word_s : out_q;\n")
    return f"""
  // ---------------- destination domain (clk_dst_i) ----------------
  // The qualifier crosses through a synchronizer; the word crosses as wires (cdc_hold_bus) and is
  // loaded only when the synchronized qualifier {what}.
  wire        qual_s;
  wire [{w - 1}:0] word_s;
  cdc_sync_bit u_qual_sync (.clk_i(clk_dst_i), .rst_ni(rst_dst_ni), .d_i(qual_q), .q_o(qual_s));
  cdc_hold_bus #(.WIDTH({w})) u_word (.clk_i(clk_dst_i), .d_i(word_q), .q_o(word_s));
  reg         qual_d, vld_q;
  reg  [{w - 1}:0] out_q;
  wire        take = {take};
  always @(posedge clk_dst_i or negedge rst_dst_ni) begin
    if (!rst_dst_ni) begin
      qual_d <= 1'b0;
      vld_q  <= 1'b0;
      out_q  <= {w}'d0;
    end else begin
      qual_d <= qual_s;
      vld_q  <= take;
{load}    end
  end
  assign valid_o = vld_q;
  assign data_o  = out_q;
"""


def design_text(p: DeParams, kind: str) -> str:
    fix = {
        "defect": "",
        "clean": "",
        "reference": "\n// Fix: the word register and the qualifier toggle change on the same source edge,\n"
        "// so the word has been stable for two destination edges or more when the synchronized\n"
        "// toggle loads it.",
    }[kind]
    return f"""// {p.module} -- a {p.width}-bit word from the source domain (clk_src_i) to the destination
// domain (clk_dst_i), held stable by the source while a one-bit qualifier crosses.{fix}
module {p.module} (
  input  wire        clk_src_i,
  input  wire        rst_src_ni,
  input  wire        send_i,
  input  wire [{p.width - 1}:0] data_i,
  input  wire        clk_dst_i,
  input  wire        rst_dst_ni,
  output wire        valid_o,
  output wire [{p.width - 1}:0] data_o
);
{_source(p, kind)}{_dest(p, kind)}endmodule
"""


def testbench_text(p: DeParams) -> str:
    w = p.width
    return f"""// Testbench of data-enable task {p.id} (generated by cdc_env.families.dataen; hidden from
// agents).
// Stimulus: once both resets are released, +sends words, each sent by raising send_i for one
// clk_src_i cycle with a word drawn per seed on data_i, at a time drawn per seed in the middle half
// of its own window of at least {GAP_SLOW} cycles of the slower clock (so sends are at least
// {SEND_APART} slow cycles apart); inputs change 1 ps after a rising edge of clk_src_i (an even time no
// clock edge shares). Checks, 1 ps after every rising edge of clk_dst_i: no X or
// Z on an output; valid_o high means data_o is the oldest word sent and not yet delivered (a
// valid_o with none outstanding fails); with valid_o low, data_o holds the word delivered last
// (0 before the first); a word outstanding once clk_src_i has had {SRC_EDGES} rising edges after the one
// that took send_i is delivered within {LAT_MAX} clk_dst_i cycles; at the end every word sent was delivered.
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR de_tb
module de_tb;
`include "cdc_tb.vh"
  reg        send = 1'b0;
  reg [{w - 1}:0] data = {w}'d0;
  wire       valid;
  wire [{w - 1}:0] dout;
  reg [{w - 1}:0] sent [0:{MAX_SENDS - 1}];  // the words sent, in order
  reg [31:0] took [0:{MAX_SENDS - 1}];      // src_n after the clk_src_i edge that took each one
  reg [31:0] n_sent = 32'd0, n_got = 32'd0, src_n = 32'd0, wait_d = 32'd0;
  reg [31:0] sends, rng_r;
  reg [{w - 1}:0] last = {w}'d0;
  reg        on = 1'b0;
  reg [63:0] slow, gap, t0, t_at;
  reg [8*160-1:0] msg;
  integer    k;

  {p.module} dut (
    .clk_src_i(clk_a), .rst_src_ni(rst_an), .send_i(send), .data_i(data),
    .clk_dst_i(clk_b), .rst_dst_ni(rst_bn), .valid_o(valid), .data_o(dout)
  );

  // A delay in [lo, lo + span) picoseconds.
  function [63:0] draw(input [63:0] lo, input [63:0] span);
    begin
      rng_r = xs32(rng_r);
      draw = lo + rng_r % (span + 1);
    end
  endfunction

  always @(posedge clk_a) begin
    src_n = src_n + 32'd1;
    if (send && n_sent < {MAX_SENDS}) begin  // this edge takes the word
      sent[n_sent] = data;
      took[n_sent] = src_n;
      n_sent = n_sent + 32'd1;
    end
  end

  initial begin
    if (!$value$plusargs("sends=%d", sends)) sends = 32'd{p.sends[0]};
    if (sends > 32'd{MAX_SENDS}) sends = 32'd{MAX_SENDS};
    rng_r = stim_key ^ 32'h44454e31;
    #(T_RST_ASSERT);
    slow = 2 * ((half_a > half_b) ? half_a : half_b);
    #(((t_rel_a > t_rel_b) ? t_rel_a : t_rel_b) - $time);
    on = 1'b1;
    // Window k of gap ps starts at t0 + k * gap; its send comes in the window's middle half. A
    // send whose window would end within {GAP_SLOW} slow cycles of the run's end is not made (a
    // short run: every word sent has time to arrive).
    t0 = $time;
    gap = (t_end - t0) / (sends + 1);
    if (gap < {GAP_SLOW} * slow) gap = {GAP_SLOW} * slow;
    for (k = 0; k < sends; k = k + 1) begin
      t_at = t0 + k * gap + draw(gap / 4, gap / 2);
      if (t0 + (k + 1) * gap + {GAP_SLOW} * slow <= t_end) begin
        #(t_at - $time);
        @(posedge clk_a) #1;
        send = 1'b1;
        rng_r = xs32(rng_r);
        data = rng_r[{w - 1}:0];
        @(posedge clk_a) #1;
        send = 1'b0;
      end
    end
  end

  always @(posedge clk_b) if (on && !run_over) begin
    #1;
    `CDC_FOLD_KNOWN({{32'd1, {31 - w}'d0, valid, dout}})
    `CDC_NOTE_CHECK
    if (valid !== 1'b0 && valid !== 1'b1) tb_fail("X or Z on an output: valid_o");
    else if ((^dout) === 1'bx) tb_fail("X or Z on an output: data_o");
    else if (valid) begin
      if (n_got >= n_sent) begin
        $sformat(msg, "valid_o with no word outstanding (t=%0d): %0d sent, %0d delivered",
                 $time, n_sent, n_got);
        tb_fail(msg);
      end else if (dout !== sent[n_got]) begin
        $sformat(msg, "word %0d delivered as %h, sent as %h (t=%0d)", n_got, dout, sent[n_got], $time);
        tb_fail(msg);
      end
      last = dout;
      n_got = n_got + 32'd1;
      wait_d = 32'd0;
    end else if (dout !== last) begin
      $sformat(msg, "data_o changed to %h without valid_o (t=%0d): it holds the word delivered last, %h",
               dout, $time, last);
      tb_fail(msg);
    end else if (n_got < n_sent && src_n - took[n_got] >= 32'd{SRC_EDGES}) begin
      wait_d = wait_d + 32'd1;
      if (wait_d > 32'd{LAT_MAX}) begin
        $sformat(msg, "word %0d not delivered within {LAT_MAX} clk_dst_i cycles (t=%0d)", n_got, $time);
        tb_fail(msg);
      end
    end
  end

  task final_check;
    begin
      if (!on) tb_fail("the resets were never released");
      else if (n_got != n_sent) begin
        $sformat(msg, "%0d words sent, %0d delivered", n_sent, n_got);
        tb_fail(msg);
      end
    end
  endtask
endmodule
"""


def _ratio(p: DeParams) -> str:
    side = "source" if p.fast == "a" else "destination"
    return f"anywhere from equal to {p.ratio_max:g}:1 ({side} faster), with any phase"


def bug_report(p: DeParams) -> str:
    side = "source" if p.fast == "a" else "destination"
    other = "destination" if p.fast == "a" else "source"
    symptom = {
        "lead": "now and then the destination delivers a word that was never sent: some of its "
                "bits are those of the word before",
        "split": "now and then the destination delivers a word that was never sent: its upper "
                 "bits are those of the word before",
        "short": "now and then a word is never delivered",
    }[p.shape]
    return f"""# Bug report: `{p.module}` delivers wrong words across its clock domains

**Design.** `{p.module}` carries {p.width}-bit words from a source (clock `clk_src_i`, reset
`rst_src_ni`) to a destination (clock `clk_dst_i`, reset `rst_dst_ni`). The source sends
`data_i` when `send_i` is high for one `clk_src_i` cycle; the destination presents each word on
`data_o` with `valid_o` high for one `clk_dst_i` cycle. The word crosses as plain wires through
`cdc_hold_bus`, held stable by the source while a one-bit qualifier crosses through a
synchronizer, and the destination loads it only under the synchronized qualifier.

**Symptom.** In the lab, {symptom}. It happens only on some runs, and ordinary simulation never
shows it.

**Invariant the fix must keep.** Every word sent is delivered exactly once, in order, equal to the
word sent: each cycle `valid_o` is high, `data_o` is the oldest word sent and not yet delivered,
and `valid_o` is never high with no word outstanding. While `valid_o` is low, `data_o` holds the
word delivered last (0 after reset). A word is delivered within {LAT_MAX} `clk_dst_i` cycles once
`clk_src_i` has had {SRC_EDGES} rising edges after the one that took `send_i`. No output is ever X or
Z. `send_i` is high for one `clk_src_i` cycle at a time, at least {SEND_APART} cycles of the slower
clock apart. The port list and the meaning of every port stay as they are. All the crossings
into one domain together change at most one bit per clock edge of the other domain (summed over
every synchronizer; the grader checks this; the word's wires through `cdc_hold_bus` are not a
synchronizer and do not count). The clocks run {_ratio(p)}.

**Clocking.** Correctness may not rest on how fast the other clock runs: a word may not be loaded
before it has been stable for as long as its qualifier's crossing takes, however the clocks
compare. So some hidden seeds (one in 20) run outside the range above: the {side} up to
{p.excursion_max:g}:1 faster, or the {other} up to {p.excursion_other:g}:1 faster. This is fair
because every bound above is stated in cycles of each clock, which a correct qualified crossing
meets at any ratio.

**What you may change.** Only `{p.module}.v`. Every signal that crosses between the clock domains
must go through one of the provided primitives: the qualifier through a synchronizer
(`cdc_sync_bit`, `cdc_sync_bus`, `cdc_sync_pulse`), the word through `cdc_hold_bus`, loaded only
into destination registers whose load enable is made of synchronizer outputs and registers of them
(the contract's "qualified data crossings"); read their timing contract with the `contract` tool.
"""


def manifest_text(p: DeParams) -> str:
    return f"""# Data-enable variant {p.id}, generated by cdc_env.families.dataen (do not edit by hand;
# regenerate).
# Parameters: {p.to_json()}
id = "{p.id}"
family = "dataen"
title = "{p.module} delivers wrong words across its clock domains"
top = "{p.module}"
editable = "{p.module}.v"
testbench = "tb.v"
tb_top = "de_tb"
bug_report = "BUG.md"
reference = "reference/{p.module}.v"
clean = "clean/{p.module}.v"
heldout = {"true" if p.heldout else "false"}

# Domain a sends, domain b receives.
[clocks.a]
clock = "clk_src_i"
reset = "rst_src_ni"
[clocks.b]
clock = "clk_dst_i"
reset = "rst_dst_ni"

[seeds]
fast = "{p.fast}"
ratio_min = 1.0
ratio_max = {p.ratio_max:.1f}
low_band = 0.0
run_slow_cycles = {p.run_slow_cycles}
hidden_count = 200
excursion_max = {p.excursion_max:.1f}  # ratio excursions on 5% of hidden seeds (BUG.md, "Clocking")
excursion_other = {p.excursion_other:.1f}  # ... some of them with the other clock the faster
visible = [{", ".join(str(s) for s in p.visible)}]  # cdc-env gate-tasks --suggest-visible

{gate_tail({"sends": p.sends}, p.band)}"""


def generate(p: DeParams) -> dict[str, str]:
    """Every file of the task folder, as {relative path: text}."""
    p.check()
    return task_files(p.module, manifest_text(p), testbench_text(p), bug_report(p),
                      lambda kind: design_text(p, kind))
