"""The reset-domain family: one ``RstParams`` in, one task folder out (``tasks/rst_*``).

The design has two clock domains and one reset input, ``arst_ni``, asynchronous to both clocks
(task.toml ``async_resets``). Each domain runs a small free-running state machine (``MACHINES``)
whose first step out of reset changes several flop bits at once; the correct design makes each
domain's reset from ``arst_ni`` with the provided ``cdc_sync_reset`` clocked by that domain, so
every flop of a domain leaves reset on the same edge.

The defect (``shape``, in domain ``dom``) is one way of releasing that domain's flops on another
timing than their own clock's:

  raw     the machine is reset by ``arst_ni`` directly (no reset synchronizer)
  wrong   the domain's reset synchronizer is clocked by the other domain's clock
  rdc     the domain uses the other domain's synchronized reset (a reset-domain crossing)

Under the late-release model (trusted/hdl/cdc_reset.v) a release close to a flop's clock edge
lets each bit leave reset on that edge or the next, so the machine can take a state it can never
reach; with the model off every defect passes. The testbench (``testbench_text``) pulses
``arst_ni`` ``pulses`` times per run (a stimulus knob drawn per seed: the detection band is set by
it), at times drawn per seed and unrelated to either clock, and checks, 2 ps after each edge of a
domain's clock, that its machine's output is the reset state while ``arst_ni`` is low (or still
being released) and otherwise steps to its successor every cycle, and that it leaves reset within
``LEAVE_MAX`` cycles of a release. On hidden seeds it also checks at the other instants the report
states a property for (``_tb_reset_edges``): 1 ps after every fall and rise of ``arst_ni`` and
after every change of an output while it is low, that every output shows its reset state; 1 ps
after every change of an output while it is high, that a machine stepped to its successor and
``peer_up_o`` did not fall. The stimulus keeps clock edges off both neighbours of every change of
``arst_ni`` (``at_clear``), so none of these checks shares a time step with an edge.
``peer_up_o`` (one domain reports that the other, ``dom``, is out of reset) must not rise before
``dom``'s clock has had ``UP_EDGES`` (2) edges after a release
(hidden seeds, where that clock also stops for up to ``PAUSE_MAX`` slow cycles from the first
release on, so that a fixed wait on the reporting domain's own clock fails; the other domain's
samples meanwhile do not count towards its ``LEAVE_MAX``, so a reset sequence may wait for
``dom``) and must rise within ``UP_MAX`` of the reporting domain's cycles after that.

Every output is a pure function of ``RstParams`` (text only, no time, no randomness); variants
are listed in ``VARIANTS``; ``cdc-env family generate reset --all`` rewrites their folders and
tests/test_reset_model.py checks that they match. The family's protocol (``cdc_env.families``:
regions, draws, search) is in ``__init__.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import CdcError
from .. import gate_tail, params_from_dict, params_json, task_files, write_files

SHAPES = ("raw", "wrong", "rdc")
# Own-clock samples after a release by which a machine must have left its reset state: a reset
# synchronized on the other clock (4 times slower at most) takes up to 3 of its edges.
LEAVE_MAX = 16
UP_MAX = 40  # peer_up_o rises within this many of its own clock's edges once it may
# ... that is, once the reported domain's clock has had this many rising edges after a release:
# a reset synchronized to that clock (cdc_sync_reset) is released on its 2nd edge at the earliest,
# so a domain cannot be out of reset before (a flag released raw, or by the other domain's reset,
# can say so after one edge).
UP_EDGES = 2
# Hidden seeds: the reported domain's clock stops for up to this many slow cycles right after the
# first release, so only a crossing from that domain can tell when it is out of reset.
PAUSE_MAX = 96


@dataclass(frozen=True)
class Machine:
    """A free-running machine of ``width`` bits: reset value, next state (Verilog of ``q``) and
    the same successor in the testbench (Verilog of ``s``); what its invariant is called."""

    width: int
    reset: str
    nxt: str
    what: str
    desc: str


MACHINES: dict[str, Machine] = {
    "ring": Machine(
        4,
        "4'b0001",
        "{q[2:0], q[3]}",
        "one-hot ring",
        "a one-hot ring counter: exactly one bit is high and it moves up one place per cycle",
    ),
    "count": Machine(
        4,
        "4'd3",
        "q + 4'd1",
        "counter",
        "a counter that starts at 3 after reset and counts up by one per cycle (wrapping at 15)",
    ),
    "lfsr": Machine(
        4,
        "4'b1000",
        "{q[2:0], q[3] ^ q[2]}",
        "LFSR",
        "a 4-bit maximal-length LFSR (x^4 + x^3 + 1) that starts at 4'b1000 after reset",
    ),
    # Held-out machines (heldout.py's region; no committed or catalogued training variant uses them).
    "ring6": Machine(
        6,
        "6'b000001",
        "{q[4:0], q[5]}",
        "one-hot ring",
        "a 6-bit one-hot ring counter: exactly one bit is high and it moves up one place per cycle",
    ),
    "count5": Machine(
        5,
        "5'd7",
        "q + 5'd1",
        "counter",
        "a 5-bit counter that starts at 7 after reset and counts up by one per cycle (wrapping at 31)",
    ),
    "lfsr5": Machine(
        5,
        "5'b10000",
        "{q[3:0], q[4] ^ q[2]}",
        "LFSR",
        "a 5-bit maximal-length LFSR (x^5 + x^3 + 1) that starts at 5'b10000 after reset",
    ),
}
TRAIN_MACHINES = ("ring", "count", "lfsr")
HELDOUT_MACHINES = ("ring6", "count5", "lfsr5")


@dataclass(frozen=True)
class RstParams:
    id: str
    module: str
    machine_a: str
    machine_b: str
    shape: str
    dom: str  # the domain whose flops the defect releases on the wrong timing
    pulses: tuple[int, int] = (6, 14)
    run_slow_cycles: int = 400
    visible: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    band: tuple[int, int] = (98, 138)
    heldout: bool = False

    def check(self) -> None:
        if self.shape not in SHAPES or self.dom not in ("a", "b"):
            raise CdcError(f"{self.id}: shape must be one of {', '.join(SHAPES)} and dom a or b")
        if self.machine_a not in MACHINES or self.machine_b not in MACHINES:
            raise CdcError(f"{self.id}: machines must be among {', '.join(MACHINES)}")
        if not 1 <= self.pulses[0] <= self.pulses[1] or len(self.visible) != 8:
            raise CdcError(f"{self.id}: bad pulses or visible seeds")

    def to_json(self) -> str:
        return params_json(self, {"heldout": False})

    @classmethod
    def from_dict(cls, d: dict) -> RstParams:
        return params_from_dict(cls, d)

    def machine(self, d: str) -> Machine:
        return MACHINES[self.machine_a if d == "a" else self.machine_b]

    def out(self, d: str) -> str:
        return f"{self.machine_a if d == 'a' else self.machine_b}_{d}_o"


def _other(d: str) -> str:
    return "b" if d == "a" else "a"


def _domain_block(p: RstParams, d: str) -> str:
    m = p.machine(d)
    q = f"st_{d}_q"
    return f"""
  // ---------------- domain {d} (clk_{d}_i): {m.what} ----------------
  reg [{m.width - 1}:0] {q};
  always @(posedge clk_{d}_i or negedge rst_{d}_n) begin
    if (!rst_{d}_n) {q} <= {m.reset};
    else {q} <= {m.nxt.replace("q", q)};
  end
  assign {p.out(d)} = {q};
"""


def _up_block(p: RstParams) -> str:
    d, o = p.dom, _other(p.dom)
    return f"""
  // ---------------- domain {d} is up: a level into domain {o} ----------------
  reg up_{d}_q;
  always @(posedge clk_{d}_i or negedge rst_{d}_n) begin
    if (!rst_{d}_n) up_{d}_q <= 1'b0;
    else up_{d}_q <= 1'b1;
  end
  cdc_sync_bit u_up_sync (.clk_i(clk_{o}_i), .rst_ni(rst_{o}_n), .d_i(up_{d}_q), .q_o(peer_up_o));
"""


def _tb_up(p: RstParams) -> str:
    """The checks of peer_up_o, inside the sampler of its domain (one always block per domain, so
    the trace hash folds in the same order on every simulator). ``up_edges`` is the count of the
    reported domain's clock edges since the latest release, as it was at this sample's own edge."""
    d, o = p.dom, _other(p.dom)
    early = (f"peer_up_o rose before clk_{d}_i had {UP_EDGES} rising edges after arst_ni rose: "
             f"domain {d}'s reset cannot be released yet")
    late = (f"peer_up_o did not rise within {UP_MAX} clk_{o} cycles of clk_{d}_i's edge {UP_EDGES} "
            "after arst_ni rose")
    return f"""    // peer_up_o (domain {o}): domain {d} is out of reset.
    `CDC_FOLD({{32'd3, 31'd0, peer_up_o}})
    if (peer_up_o !== 1'b0 && peer_up_o !== 1'b1) tb_fail("X or Z on an output: peer_up_o");
    if (!arst_n || asserted_up) begin
      if (!arst_n && peer_up_o !== 1'b0) tb_fail("peer_up_o high while arst_ni is low");
      asserted_up = 1'b0;
      up_seen = 1'b0;
      up_wait = 32'd0;
    end else if (peer_up_o) begin
      // Hidden checks: domain {d} is out of reset only once its own clock has released its reset.
      if (gray_check_on && up_edges < {UP_EDGES})
        tb_fail("{early}");
      up_seen = 1'b1;
    end else if (up_seen) tb_fail("peer_up_o fell while arst_ni is high");
    else if (up_edges == {UP_EDGES}) begin
      up_wait = up_wait + 32'd1;
      if (up_wait > {UP_MAX}) tb_fail("{late}");
    end
"""


def _resets(p: RstParams, kind: str) -> str:
    lines = ["  // ---------------- resets ----------------", "  wire rst_a_n, rst_b_n;"]
    for d in ("a", "b"):
        if kind != "defect" or d != p.dom:
            lines.append(
                f"  cdc_sync_reset u_rst_{d} (.clk_i(clk_{d}_i), .rst_ni(arst_ni), .rst_no(rst_{d}_n));"
            )
        elif p.shape == "raw":
            lines.append(f"  assign rst_{d}_n = arst_ni;  // domain {d} is released straight by arst_ni")
        elif p.shape == "wrong":
            lines.append(
                f"  cdc_sync_reset u_rst_{d} (.clk_i(clk_{_other(d)}_i), .rst_ni(arst_ni), "
                f".rst_no(rst_{d}_n));"
            )
        else:
            lines.append(f"  assign rst_{d}_n = rst_{_other(d)}_n;  // one reset for both domains")
    return "\n".join(lines) + "\n"


def design_text(p: RstParams, kind: str) -> str:
    fix = {
        "defect": "",
        "clean": "",
        "reference": "\n// Fix: each domain's reset is made from arst_ni by a cdc_sync_reset clocked by\n"
        "// that domain's own clock, so every flop of a domain leaves reset on the same edge.",
    }[kind]
    ma, mb = p.machine("a"), p.machine("b")
    return f"""// {p.module} -- two free-running state machines, one per clock domain, and one reset.
// Domain a (clk_a_i) runs {ma.desc};
// domain b (clk_b_i) runs {mb.desc}.
// arst_ni is the system reset: active low, asserted and released at any time, asynchronous to
// both clocks.{fix}
module {p.module} (
  input  wire       clk_a_i,
  input  wire       clk_b_i,
  input  wire       arst_ni,
  output wire [{ma.width - 1}:0] {p.out("a")},
  output wire [{mb.width - 1}:0] {p.out("b")},
  output wire       peer_up_o
);
{_resets(p, kind)}{_domain_block(p, "a")}{_domain_block(p, "b")}{_up_block(p)}endmodule
"""


def _clk(p: RstParams, d: str) -> str:
    """The testbench's name of the clock the design gets as clk_<d>_i (the reported domain's may
    stop, on hidden seeds)."""
    return f"clk_{d}_g" if d == p.dom else f"clk_{d}"


def _tb_domain(p: RstParams, d: str) -> str:
    m = p.machine(d)
    w = m.width
    nxt = m.nxt.replace("q", f"prev_{d}")
    first = m.nxt.replace("q", f"rv_{d}")
    # The peer_up_o sampler notes, at its own edge (never a time of the other clock's edges), how
    # many edges the reported domain's clock has had since the latest release.
    snap = f"    up_edges = edges_{p.dom};\n" if d != p.dom else ""
    # While the other domain's clock is stopped, this domain may wait for it (a reset sequence).
    hold = f"hold_{p.dom} ? 32'd0 : " if d != p.dom else ""
    return f"""
  // Domain {d}: {m.what} on {p.out(d)}, sampled 2 ps after each clk_{d} edge (an odd time: arst_n
  // changes at even times only, so a sample never shares a time step with it).
  reg [{w - 1}:0] prev_{d};
  reg [{w - 1}:0] rv_{d} = {m.reset};  // the reset state, as a variable (its successor below)
  reg        seen_{d} = 1'b0;     // a sample was taken since checking began
  reg [31:0] wait_{d} = 32'd0;    // samples in the reset state since the latest release
  always @(posedge {_clk(p, d)}) if (on && !run_over) begin
{snap}    #2;
    `CDC_FOLD({{32'd{1 if d == "a" else 2}, {32 - w}'d0, {p.out(d)}}})  // fold, note_check in place
    `CDC_NOTE_CHECK
    if ((^{p.out(d)}) === 1'bx) tb_fail("X or Z on an output: {p.out(d)}");
    if (!arst_n || asserted_{d}) begin
      // In reset (or asserted since the previous sample): the reset state, at once.
      if (!arst_n && {p.out(d)} !== {m.reset}) begin
        $sformat(msg, "{p.out(d)} = %b while arst_ni is low (reset state {m.reset})", {p.out(d)});
        tb_fail(msg);
      end
      if (arst_n && {p.out(d)} !== {m.reset} && {p.out(d)} !== {first}) begin
        $sformat(msg, "{p.out(d)} = %b after a reset pulse: neither the reset state nor its successor",
                 {p.out(d)});
        tb_fail(msg);
      end
      asserted_{d} = 1'b0;
      wait_{d} = ({p.out(d)} === {m.reset}) ? 32'd0 : {LEAVE_MAX};
    end else if (seen_{d}) begin
      if ({p.out(d)} === {m.reset} && prev_{d} === {m.reset} && wait_{d} < {LEAVE_MAX}) begin
        wait_{d} = {hold}wait_{d} + 32'd1;  // still leaving reset: a synchronized release takes 2-3 edges
      end else if ({p.out(d)} !== {nxt}) begin
        $sformat(msg, "{p.out(d)} went from %b to %b: not the {m.what}'s next state (t=%0d)",
                 prev_{d}, {p.out(d)}, $time);
        tb_fail(msg);
      end else
        wait_{d} = {LEAVE_MAX};
    end
    prev_{d} = {p.out(d)};
    seen_{d} = 1'b1;
{_tb_up(p) if d != p.dom else ""}  end
"""


def testbench_text(p: RstParams) -> str:
    return f"""// Testbench of reset-domain task {p.id} (generated by cdc_env.resetfam; hidden from agents).
// Stimulus: arst_ni (arst_n here) falls with the harness's resets at 2 ps and is first released
// at a time drawn per seed after both harness resets are released; then it is pulsed +pulses
// times more, each pulse asserted and released at times drawn per seed (even picoseconds, so
// never on a clock edge, and unrelated to either clock). Checks, 2 ps after every edge of each
// domain's clock once the first release is done: the output is the machine's reset state while
// arst_n is low; after an assertion it is the reset state or, when the release came before the
// sample, its successor; otherwise it holds the reset state for at most {LEAVE_MAX} samples after
// a release and then steps to its successor on every sample; X or Z fails. peer_up_o is low while
// arst_n is low, never falls while it is high, and rises within {UP_MAX} of its own clock's cycles
// once clk_{p.dom} has had a rising edge after a release. Hidden seeds (+cdc_gray_check=1) also stop
// clk_{p.dom} for a while from the first release on (domain {_other(p.dom)}'s samples meanwhile do not count
// towards its {LEAVE_MAX}) and fail a peer_up_o that rises before that edge: only a crossing from
// domain {p.dom} can know that it has left reset.
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR rst_tb
module rst_tb;
`include "cdc_tb.vh"
  reg        arst_n = 1'b1;
  reg        on = 1'b0;         // checking has begun (the first release of arst_n is done)
  reg        asserted_a = 1'b0, asserted_b = 1'b0;  // arst_n fell since the domain's latest sample
  reg        asserted_up = 1'b0;
  reg        up_seen = 1'b0;     // peer_up_o rose since the latest release
  reg [31:0] up_wait = 32'd0;    // samples without peer_up_o since domain {p.dom} could leave reset
  reg [1:0]  edges_{p.dom} = 2'd0;    // clk_{p.dom} edges (saturating) since the latest release
  reg [1:0]  up_edges = 2'd0;    // edges_{p.dom} at peer_up_o's sampler's latest edge
  reg        hold_{p.dom} = 1'b0;     // clk_{p.dom} is stopped (hidden seeds, after the first release)
  reg [63:0] pause;
  reg [31:0] rng_r;
  reg [31:0] pulses;
  reg [63:0] slow, gap, t_at;
  reg [8*160-1:0] msg;
  integer    k;
  wire [{p.machine("a").width - 1}:0] {p.out("a")};
  wire [{p.machine("b").width - 1}:0] {p.out("b")};
  wire       peer_up_o;

  // The design's clk_{p.dom}_i: clk_{p.dom}, held low while hold_{p.dom} is set (it changes only while
  // clk_{p.dom} is low, never in an edge's time step, so the gated clock never has a short pulse).
  wire       clk_{p.dom}_g = clk_{p.dom} & ~hold_{p.dom};

  {p.module} dut (
    .clk_a_i({_clk(p, "a")}), .clk_b_i({_clk(p, "b")}), .arst_ni(arst_n),
    .{p.out("a")}({p.out("a")}), .{p.out("b")}({p.out("b")}), .peer_up_o(peer_up_o)
  );

  always @(negedge arst_n) begin
    asserted_a = 1'b1;
    asserted_b = 1'b1;
    asserted_up = 1'b1;
    edges_{p.dom} = 2'd0;
  end
  // Edges of the design's clk_{p.dom}_i since the latest release (odd times: arst_n never changes then).
  always @(posedge clk_{p.dom}_g)
    if (arst_n && edges_{p.dom} != 2'd{UP_EDGES}) edges_{p.dom} = edges_{p.dom} + 2'd1;

  // A delay in [lo, lo + span) picoseconds, even (releases and assertions never share a clock edge's time).
  function [63:0] draw(input [63:0] lo, input [63:0] span);
    begin
      rng_r = xs32(rng_r);
      draw = 2 * (lo / 2 + rng_r % (span / 2 + 1));  // even: every change of arst_n is at an even time
    end
  endfunction

  // Wait until t (even), moved on by 2 ps while a clock edge (cdc_clock_edge_at, the harness's
  // clocks as if neither stopped) is 1 ps before or after it: every change of arst_n then has both
  // neighbours free of clock edges, so the checks 1 ps after it (below) and 1 ps after an output
  // changes at a clock edge never share a time step with an edge or with a change of arst_n.
  task at_clear(input [63:0] t);
    begin
      t_at = t;
      while (cdc_clock_edge_at(t_at - 64'd1) || cdc_clock_edge_at(t_at + 64'd1)) t_at = t_at + 64'd2;
      #(t_at - $time);
    end
  endtask

  initial begin
    if (!$value$plusargs("pulses=%d", pulses)) pulses = 32'd8;
    rng_r = stim_key ^ 32'h5a17c3e1;
    #(T_RST_ASSERT);  // the harness has read its plusargs by now (initial blocks race at time 0)
    arst_n = 1'b0;
    slow = 2 * ((half_a > half_b) ? half_a : half_b);
    // First release: after both harness resets (every flop is known), at a drawn time.
    at_clear(((t_rel_a > t_rel_b) ? t_rel_a : t_rel_b) + draw(0, 2 * slow));
    arst_n = 1'b1;
    on = 1'b1;
    if (gray_check_on) begin
      // Hidden seeds: clk_{p.dom} stops for a drawn 0 to {PAUSE_MAX} slow cycles right at this release
      // (a clock that starts late); meanwhile domain {_other(p.dom)} may stay in reset (waiting for it).
      pause = draw(0, {PAUSE_MAX} * slow);
      if (pause != 64'd0) begin
        if (clk_{p.dom}) @(negedge clk_{p.dom}) #1;  // no rising edge after the release before it stops
        hold_{p.dom} = 1'b1;
        #(pause);
        @(negedge clk_{p.dom}) #1 hold_{p.dom} = 1'b0;
      end
    end
    gap = (t_end - $time) / (pulses + 1);
    for (k = 0; k < pulses; k = k + 1) begin
      at_clear($time + draw(gap / 2, gap / 4));  // run, then assert
      arst_n = 1'b0;
      at_clear($time + draw(slow, 2 * slow));    // hold for one to three slow cycles, then release
      arst_n = 1'b1;
    end
  end
{_tb_domain(p, "a")}{_tb_domain(p, "b")}{_tb_reset_edges(p)}
  task final_check;
    begin
      if (!on) tb_fail("arst_ni was never released");
    end
  endtask
endmodule
"""


def _tb_reset_edges(p: RstParams) -> str:
    """Hidden checks at the instants the report states a property for, not only after clock
    edges: 1 ps after every fall and rise of arst_n (an odd time no clock edge shares: see
    at_clear) every output shows its reset state; 1 ps after any change of an output (an even time
    that is no change of arst_n), while arst_n is low every output shows its reset state, and while
    it is high a machine's output has stepped to the successor of the value it last showed (it
    never shows any other state, between samples either) and peer_up_o has not fallen. The
    change-triggered check counts nothing and folds nothing: a simulator that shows a glitch
    within a time step triggers it where another does not, but both see the same settled value
    1 ps later, and a value that did not change passes it."""
    ma, mb = p.machine("a"), p.machine("b")
    oa, ob = p.out("a"), p.out("b")
    rules = [(oa, ma.reset), (ob, mb.reset), ("peer_up_o", "1'b0")]
    pad = 64 - 32 - 1 - ma.width - mb.width - 1
    body = "".join(
        f"""      if ({o} !== {r}) begin
        $sformat(msg, "{o} = %b %0s (t=%0d): not its reset state {r}", {o}, when, $time);
        tb_fail(msg);
      end
""" for o, r in rules)
    steps = "".join(
        f"""        if ({o} !== shown_{d} && {o} !== {m.nxt.replace("q", f"shown_{d}")}) begin
          $sformat(msg, "{o} went from %b to %b between samples (t=%0d): not the {m.what}'s next state",
                   shown_{d}, {o}, $time);
          tb_fail(msg);
        end
        shown_{d} = {o};
""" for d, o, m in (("a", oa, ma), ("b", ob, mb)))
    return f"""
  // At once (hidden seeds): after each fall and rise of arst_n, and on every change of an output,
  // 1 ps later -- not only at the samples after clock edges.
  reg [{ma.width - 1}:0] shown_a;  // each output as of its latest change while arst_n is high
  reg [{mb.width - 1}:0] shown_b;
  reg        shown_up;
  task reset_state_check(input [8*24-1:0] when);
    begin
{body}    end
  endtask
  always @(arst_n) begin
    #1;
    if (on && gray_check_on && !run_over) begin
      `CDC_FOLD({{32'd4, {pad}'d0, arst_n, {oa}, {ob}, peer_up_o}})
      `CDC_NOTE_CHECK
      reset_state_check(arst_n ? "1 ps after arst_ni rose" : "1 ps after arst_ni fell");
      shown_a = {oa};
      shown_b = {ob};
      shown_up = peer_up_o;
    end
  end
  always @({oa} or {ob} or peer_up_o) if (on && gray_check_on && !run_over) begin
    #1;
    if (!run_over) begin
      if (!arst_n) reset_state_check("while arst_ni is low");
      else begin
{steps}        if (shown_up === 1'b1 && peer_up_o !== 1'b1) begin
          $sformat(msg, "peer_up_o fell while arst_ni is high (t=%0d, between samples)", $time);
          tb_fail(msg);
        end
        shown_up = peer_up_o;
      end
    end
  end
"""


def bug_report(p: RstParams) -> str:
    m = p.machine(p.dom)
    out = p.out(p.dom)
    ma, mb = p.machine("a"), p.machine("b")
    d, o = p.dom, _other(p.dom)
    return f"""# Bug report: {p.module} wakes up from reset in an impossible state

**Design.** `{p.module}` has two clock domains, `clk_a_i` and `clk_b_i`, and one reset input,
`arst_ni` (active low), which comes from the system and is asynchronous to both clocks: it may
be asserted and released at any time. Domain a runs {ma.desc}, shown on `{p.out("a")}`; domain b
runs {mb.desc}, shown on `{p.out("b")}`.

**Symptom.** Now and then, right after a reset, `{out}` shows a state its {m.what} can never
reach, and the machine runs on from there. It happens only after some resets, not on every run,
and ordinary simulation never shows it.

**Invariant the fix must keep.** While `arst_ni` is low both outputs show their reset state
(`{p.out("a")}` = {ma.reset}, `{p.out("b")}` = {mb.reset}), from the moment it falls, and until a
clock edge after it rises (checked at once after every fall and rise of `arst_ni` and at every
change of an output while it is low, not only at clock edges). After `arst_ni`
rises, each machine stays in its reset state for at most {LEAVE_MAX} cycles of its own clock and
from then on takes its next state on every cycle of its own clock: it never shows any other
state. `clk_{d}_i` may stop for a while right after a release (a clock that starts late); cycles of
`clk_{o}_i` while it is stopped do not count, so domain {o} may wait for domain {d}.
`peer_up_o` (domain {o}: domain {d} is out of reset) is low while `arst_ni` is low and does not
fall while `arst_ni` stays high. After `arst_ni` rises it says that domain {d} has left reset, which
only domain {d}'s own clock decides: it never rises before `clk_{d}_i` has had {UP_EDGES} rising edges after
`arst_ni` rises (a reset released in step with `clk_{d}_i` is released on its {UP_EDGES}nd edge at the
earliest), and then rises within {UP_MAX} cycles of `clk_{o}_i`. No output is ever X or Z.
The port list and the meaning of every port stay as they are. All the crossings into one
domain together change at most one bit per clock edge of the other domain (summed over every
synchronizer; the grader checks this). Both clocks may be anywhere from equal to 4:1 (either side
faster), with any phase.

**What you may change.** Only `{p.module}.v`. Release every flop's asynchronous reset in step
with that flop's own clock: the provided reset synchronizer `cdc_sync_reset` (asynchronous
assertion, release synchronized to its `clk_i`) makes a domain's reset from any reset input. A
flop released otherwise (by `arst_ni` directly, or by the other domain's reset) is correct only
where the contract's "Reset release" allows it: it does not change on the first edge of its clock
after the release, or only a synchronizer reads it.
Every signal that crosses between the clock domains must go through one of the provided
primitives; read their timing contract with the `contract` tool.
"""


def manifest_text(p: RstParams) -> str:
    return f"""# Reset-domain variant {p.id}, generated by cdc_env.resetfam (do not edit by hand; regenerate).
# Parameters: {p.to_json()}
id = "{p.id}"
family = "reset"
title = "{p.module} wakes up from reset in an impossible state"
top = "{p.module}"
editable = "{p.module}.v"
testbench = "tb.v"
tb_top = "rst_tb"
bug_report = "BUG.md"
reference = "reference/{p.module}.v"
clean = "clean/{p.module}.v"
# arst_ni is asynchronous to both clocks: each domain makes its reset with cdc_sync_reset.
async_resets = ["arst_ni"]
{"heldout = true" + chr(10) if p.heldout else ""}
[clocks.a]
clock = "clk_a_i"
[clocks.b]
clock = "clk_b_i"

[seeds]
fast = "either"
ratio_min = 1.0
ratio_max = 4.0
low_band = 0.5
run_slow_cycles = {p.run_slow_cycles}
hidden_count = 200
visible = [{", ".join(str(s) for s in p.visible)}]  # cdc-env gate-tasks --suggest-visible

{gate_tail({"pulses": p.pulses}, p.band)}"""


def generate(p: RstParams) -> dict[str, str]:
    """Every file of the task folder, as {relative path: text}."""
    p.check()
    return task_files(p.module, manifest_text(p), testbench_text(p), bug_report(p),
                      lambda kind: design_text(p, kind))



# Visible seeds: chosen by `cdc-env gate-tasks --suggest-visible` (the first 4 failing and the
# first 4 passing of seeds 1-48 on the defective design, Icarus, late release on).
VARIANTS: tuple[RstParams, ...] = (
    RstParams("rst_01", "ring_pair", "ring", "count", "raw", "a", visible=(1, 2, 3, 4, 5, 6, 7, 8)),
    RstParams("rst_02", "dual_sequencer", "count", "lfsr", "raw", "b", visible=(1, 2, 3, 4, 5, 9, 10, 13)),
    RstParams("rst_03", "scan_timer", "ring", "lfsr", "wrong", "a", visible=(1, 2, 3, 4, 5, 6, 7, 9)),
    RstParams("rst_04", "frame_counter", "lfsr", "ring", "rdc", "b", visible=(1, 2, 3, 4, 5, 6, 7, 9)),
    RstParams("rst_05", "phase_gen", "count", "ring", "rdc", "a", visible=(1, 2, 3, 4, 5, 6, 7, 8)),
    RstParams("rst_06", "tick_pair", "lfsr", "count", "wrong", "b", visible=(1, 2, 3, 4, 5, 14, 25, 26)),
)


def write_all(root: Path | None = None) -> list[Path]:
    """Rewrite every committed variant's folder (``tasks/<id>/`` by default)."""
    from ... import paths  # noqa: PLC0415

    base = Path(root) if root is not None else paths.tasks_dir()
    return [write_files(generate(p), base / p.id, force=True) for p in VARIANTS]


def by_id(vid: str) -> RstParams | None:
    return next((p for p in VARIANTS if p.id == vid), None)
