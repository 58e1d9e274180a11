// cdc_sync.v -- the provided clock-domain-crossing synchronizer primitives.
//
// Shared, read-only, by every task. Four primitives:
//   cdc_sync_bus   #(WIDTH)  two-flop synchronizer for a bus that changes at most one bit per
//                            source update (a Gray-coded value); WIDTH=1 is a level synchronizer
//   cdc_sync_bit             one-bit level synchronizer (cdc_sync_bus with WIDTH=1)
//   cdc_sync_pulse           toggle-based pulse synchronizer (source toggle flop + cdc_sync_bit
//                            + destination edge detect)
//   cdc_ram        #(WIDTH, AW)  storage written in one domain and read in the other (a FIFO's
//                            memory); a read of an entry written less than two read cycles
//                            ago may return old bits
//
// Behaviour modelled (the late-settling model; README, "Late settling"). This module is the one place
// where late settling lives:
//   * Each bit is sampled by a first flop on every destination edge and passed to a second flop;
//     q_o is the second flop, so a stable input is seen after 2 destination edges.
//   * Eligibility. On a destination edge at time t, a bit is eligible to settle late when
//       - its input differs from what the first flop holds,
//       - it did not settle late on the previous edge, and
//       - its input last changed within the settling window: after this instance's previous
//         sampling edge and at or after the latest edge, rising or falling, of the SOURCE clock
//         at or before t. Any change in that window counts, whatever its offset from the source
//         edge (not only a change exactly at the edge's time). A change made before the source
//         clock's latest edge (half a source period or more before t) has settled and is never
//         late: so a Gray pointer, which changes one bit per source edge, is seen at its value
//         or one step behind however fast its source runs. Both polarities count, so a register
//         clocked on the falling edge is timed like one on the rising edge, and data that
//         changes one source edge before its strobe is never late relative to it.
//     The source clock is the task clock that does not drive clk_i. The instance learns which
//     task clock drives it from the time of its own edges (clock a edges fall at 1 (mod 4) ps,
//     clock b edges at 3) and asks the testbench for the source clock's latest edge time
//     (cdc_src_edge in trusted/hdl/cdc_monitor.vh, the module named by the macro
//     CDC_SYNC_MONITOR), which the testbench computes from its own clock parameters. Nothing
//     else enters: no other instance's activity and no design signal, so a design cannot choose
//     which of its crossings may settle late. A Gray pointer split over one cdc_sync_bit per
//     bit therefore behaves exactly like the same pointer through one cdc_sync_bus.
//     Without a monitor (unit tests of a primitive alone) the window is this instance's own
//     latest change: every bit of d_i that changed in the time step of its latest change.
//   * A change is any transition of a bit, X and Z included (0->X, X->1, 1->Z, ...: case
//     inequality), for eligibility and for the Gray check hooks below.
//   * An eligible bit settles late or not by a PRNG: the first flop keeps its old value for one
//     more destination edge. The choice is made per bit, per edge, from the run's settle key, this
//     instance's key and the edge count. The instance key is a 64-bit keyed hash (SplitMix64's
//     finaliser per character, seeded by the settle key) of the WHOLE hierarchical name %m,
//     without Verilator's leading "TOP.", so every simulator makes the same choices for the same
//     seed; two instances share a stream only if their names are equal, and which distinct names
//     would collide changes with every seed. Names of 4096 characters or more are refused
//     (cdc_sync_fail at the first edge after reset), since %m is read into a 4096-character
//     buffer. Edges with no eligible bit compute no hash at all, and an edge with no change of d_i
//     since the previous edge (and no deferred bit, no X or Z, an accepted name) does only the
//     two-flop shift: none of its bits can be eligible (tests/test_sync_fastpath.py checks that
//     this shortcut changes no verdict).
//   * A bit that settled late on one edge always resolves on the next: latency is 2 or 3
//     destination cycles, never 1 or 4.
//   * Hence a Gray-coded bus is seen at its current value or one step behind, while a binary
//     count whose update flips several bits can be sampled as any mix of old and new bits.
//   * X and Z are outside the contract. With a monitor, an X or Z on d_i (at any change of d_i
//     and on every destination edge out of reset) calls cdc_sync_fail, and the testbench fails
//     the seed once both resets are released. Without a monitor the primitive cannot fail a run:
//     it prints one warning line and models the bit as a change (never as a value).
//   * Instances are independent: each draws its own late choices, also when two of them are fed
//     from the same source signal (the static gate refuses such redundant synchronizers, rule
//     CDC-REDUNDANT, so that ORing copies cannot beat the loss a short pulse may suffer).
//
// What this model does NOT do: produce X values, oscillate, settle later than one extra
// cycle, or vary failure rates with time. It does not check that its input is registered in the
// source domain -- the static gate does that.
//
// Run-time switches (plusargs read here only; task designs may not read plusargs):
//   +cdc_settle=0|1        late settling off (demo: fixed 2-cycle latency) or on (default 1)
//   +cdc_settle_key=<u32>  the seed's settling key
//
// One-bit-per-source-edge rule (every testbench, through the monitor): a cdc_sync_bus wider than
// one bit whose d_i changes in more than one bit in one time step calls
// `CDC_SYNC_MONITOR.cdc_bus_note(n, name); the testbench fails the seed on hidden seeds
// (+cdc_gray_check=1). No two clock edges of different clocks coincide, so one time step is one
// source clock edge.
//
// Sum across instances (every testbench, through the monitor): every change of d_i reports the
// number of bits that changed for the first time in the current time step to
// `CDC_SYNC_MONITOR.cdc_sync_note(n) (trusted/hdl/cdc_tb.vh). The sum over all instances in one
// time step is what one source clock edge changed across every crossing into the other domain;
// on hidden seeds the testbench fails the seed when it exceeds the task's limit (CDC_EDGE_BITS:
// 1, or 2 where the task's invariant lets an event and its kind cross on one edge). Instances
// report themselves, so the check follows the primitives whatever the signals are called, and
// copies of one bit through separate synchronizers count once each. The hooks read d_i only and
// never touch the
// synchronizer state: q_o is the same with and without them.
//
// No $random/$urandom: their streams differ between simulators.
`timescale 1ps / 1ps

module cdc_sync_bus #(
  parameter integer WIDTH = 1
) (
  input  wire             clk_i,
  input  wire             rst_ni,
  input  wire [WIDTH-1:0] d_i,
  output wire [WIDTH-1:0] q_o
);
  localparam integer NAME_MAX = 4096;  // characters of %m kept; a longer name is refused
  reg [WIDTH-1:0] s1_q, s2_q;       // first and second synchronizer flops
  reg [WIDTH-1:0] deferred_q;       // bits that settled late on the previous edge
  reg             slow;             // the next destination edge takes the full path
  reg             d_x;              // d_i had an X or Z bit at the latest full-path edge
  reg [WIDTH-1:0] fresh;            // bits that changed since the previous destination edge
  reg [WIDTH-1:0] last_d;           // d_i as of its latest change
  reg [WIDTH-1:0] upd_mask;         // bits changed in the time step upd_time
  reg [63:0]      upd_time;         // simulation time of this instance's latest input change
  reg [63:0]      chg_t [0:WIDTH-1];  // simulation time of each bit's latest change
  reg [31:0]      inst_key;         // keyed hash of this instance's whole hierarchical name
  reg [63:0]      name_h;
  reg [31:0]      settle_key;
  reg [31:0]      edge_n;           // destination edges since reset release
  reg             settle_on;
  reg             name_bad;         // the name did not fit in NAME_MAX characters
  reg [WIDTH-1:0] cand;             // bits that differ from the first flop and may settle late
  reg [WIDTH-1:0] late, late2;
  reg [31:0]      base_h, edge_h, bit_h;
  reg             edge_h_ok;
  reg [63:0]      src_t;            // latest edge of the source clock
  reg [63:0]      prev_edge_t;      // time of this instance's previous sampling (clk_i) edge
  reg [63:0]      now_t, ct;        // $time read once per change; a bit's change time
  reg [WIDTH-1:0] diff, new_m;      // bits changed by this change of d_i; those new in the time step
  reg [8*NAME_MAX-1:0] name;        // %m, filled only for names of 256 characters or more
  reg [8*256-1:0] name_s;           // %m
  reg             name_long;
  reg [8*80-1:0]  who;              // the name's last 80 characters, for messages
  reg [8*160-1:0] msg;
  integer         i, j, c, skip, nlen, bus_n, top, k;
`ifdef CDC_SYNC_MONITOR
  reg             dom_known;        // this instance's (destination) domain is known
  reg             dst_is_a;         // clocked by task clock a (so its source is clock b)
`else
  reg             x_warned;
`endif
`ifdef CDC_SYNC_MONITOR
  integer         gray_n;           // sum hook: bits newly changed in this time step
`endif

  // a ^ b is written (a | b) - (a & b) in the hashes: the same number (no operand here has an X
  // or Z bit), and Icarus 11 XORs a vector bit by bit but ORs, ANDs and subtracts it by words.
  function [31:0] mix32(input [31:0] x);
    reg [31:0] y, s;
    begin
      s = x >> 16; y = (x | s) - (x & s);
      y = y * 32'h7feb352d;
      s = y >> 15; y = (y | s) - (y & s);
      y = y * 32'h846ca68b;
      s = y >> 16; mix32 = (y | s) - (y & s);
    end
  endfunction

  function [63:0] mix64(input [63:0] x);  // SplitMix64's finaliser (a bijection)
    reg [63:0] y, s;
    begin
      s = x >> 30; y = ((x | s) - (x & s)) * 64'hbf58476d1ce4e5b9;
      s = y >> 27; y = ((y | s) - (y & s)) * 64'h94d049bb133111eb;
      s = y >> 31; mix64 = (y | s) - (y & s);
    end
  endfunction

  // Character i of the hierarchical name (0 is the last), from whichever buffer holds it.
  function [7:0] name_chr(input integer k);
    name_chr = name_long ? name[8*k +: 8] : name_s[8*k +: 8];
  endfunction

  // The number of bits set in v, with a shortcut for one.
  function integer ones(input [WIDTH-1:0] v);
    integer k;
    begin
      if ((v & (v - 1'b1)) == {WIDTH{1'b0}}) ones = 1;
      else begin
        ones = 0;
        for (k = 0; k < WIDTH; k = k + 1) ones = ones + v[k];
      end
    end
  endfunction

  initial begin
    settle_on = 1'b1;
    settle_key = 32'd0;
    if ($value$plusargs("cdc_settle=%d", c)) settle_on = (c != 0);
    if (!$value$plusargs("cdc_settle_key=%d", settle_key)) settle_key = 32'd0;
    // Key the instance by its whole hierarchical name, without a leading "TOP." (Verilator adds
    // one), hashed with a 64-bit keyed hash seeded by the run's settle key: distinct names give
    // distinct streams, and which names would collide differs from seed to seed.
    // Short names (the usual case) are read from a 256-character buffer: Icarus copies the whole
    // vector on every variable part-select, so the long one is filled only when needed.
    $sformat(name_s, "%m");
    name_long = (name_s[8*256-1 -: 8] != 8'd0);
    name = {8*NAME_MAX{1'b0}};
    if (name_long) $sformat(name, "%m");
    name_bad = (name[8*NAME_MAX-1 -: 8] != 8'd0);  // %m filled the buffer: possibly truncated
    who = name_long ? name[8*80-1:0] : name_s[8*80-1:0];
    name_h = mix64({32'h9e3779b9, settle_key});
    nlen = 0;
    skip = -1;  // -1: before the first character
    // The loop starts at the name's first character: for a short name, the highest nonzero
    // byte of name_s, found by halving (the characters above it are zero and change nothing
    // below; visiting them cost Icarus a function call each, 256 per instance per run).
    top = name_long ? NAME_MAX - 1 : -1;
    if (!name_long && name_s != {8*256{1'b0}}) begin
      top = 0;
      for (k = 128; k >= 1; k = k / 2)
        if ((name_s >> (8 * (top + k))) != {8*256{1'b0}}) top = top + k;
    end
    for (i = top; i >= 0; i = i - 1) begin
      c = name_chr(i);
      if (c != 0 || skip >= 0) begin
        if (skip < 0)
          skip = (i >= 3 && {name_chr(i), name_chr(i-1), name_chr(i-2), name_chr(i-3)} == "TOP.") ? 4 : 0;
        if (skip > 0) skip = skip - 1;
        else begin
          name_h = mix64((name_h | c) - (name_h & c));  // name_h ^ c
          nlen = nlen + 1;
        end
      end
    end
    name_h = mix64(name_h ^ nlen);
    inst_key = name_h[63:32] ^ name_h[31:0];
    base_h = mix32(settle_key ^ inst_key);
    for (j = 0; j < WIDTH; j = j + 1) chg_t[j] = 64'hffffffffffffffff;
`ifdef CDC_SYNC_MONITOR
    dom_known = 1'b0;
    dst_is_a = 1'b0;
`else
    x_warned = 1'b0;
`endif
    edge_n = 32'd0;
    slow = 1'b1;
    fresh = {WIDTH{1'b0}};
    deferred_q = {WIDTH{1'b0}};
    prev_edge_t = 64'd0;
    upd_time = 64'd0;
    upd_mask = {WIDTH{1'b0}};
    last_d = {WIDTH{1'b0}};
  end

  // Record when each bit last changed. Any transition counts, X and Z included (0->X, X->1, Z->0
  // ...: case inequality). Changes within one time step accumulate in upd_mask (a bus assembled
  // from several registers updates in several delta cycles). Cost: the changed bits are found as
  // one vector (d_i ^ last_d) when neither value has an X or Z bit, bit by bit only otherwise,
  // and $time is read once.
  always @(d_i) begin
    now_t = $time;
    if (now_t != upd_time) begin
      upd_mask = {WIDTH{1'b0}};
      upd_time = now_t;
    end
    if ((^{d_i, last_d}) !== 1'bx) diff = d_i ^ last_d;
    else for (j = 0; j < WIDTH; j = j + 1) diff[j] = (d_i[j] !== last_d[j]);
    new_m = diff & ~upd_mask;
    upd_mask = upd_mask | diff;
    if (WIDTH == 1) begin
      if (diff[0]) chg_t[0] = now_t;
    end else if (diff != {WIDTH{1'b0}})
      for (j = 0; j < WIDTH; j = j + 1) if (diff[j]) chg_t[j] = now_t;
    last_d = d_i;
    fresh = fresh | diff;
    slow = 1'b1;  // the next destination edge decides about this change
`ifdef CDC_SYNC_MONITOR
    // Sum hook (see the header): report the bits newly changed in this time step (one bit, the
    // usual case, without a function call).
    if (new_m != {WIDTH{1'b0}}) begin
      gray_n = ((new_m & (new_m - 1'b1)) == {WIDTH{1'b0}}) ? 1 : ones(new_m);
      `CDC_SYNC_MONITOR.cdc_sync_note(gray_n);
    end
    // One-bit-per-source-edge rule for this bus (see the header).
    if (WIDTH > 1) begin
      bus_n = ((upd_mask & (upd_mask - 1'b1)) == {WIDTH{1'b0}}) ? 0 : ones(upd_mask);  // n > 1 only
      if (bus_n > 1) `CDC_SYNC_MONITOR.cdc_bus_note(bus_n, who);
    end
    if ((^d_i) === 1'bx) begin
      $sformat(msg, "X or Z on synchronizer input %0s.d_i at t=%0d", who, $time);
      `CDC_SYNC_MONITOR.cdc_sync_fail(msg);
    end
`endif
  end

  // The destination edge. Most edges find nothing to do but the two-flop shift: no bit of d_i
  // changed since the previous edge, so no bit is eligible to settle late (its latest change is
  // not after the previous sampling edge), and the full path below would compute late = 0. The
  // full path runs only when `slow` says it may matter: d_i changed since the previous edge (the
  // change process sets it), the previous edge deferred a bit or saw X or Z on d_i, the name is
  // refused, or this is the first edge after reset (which learns the destination domain). Its
  // results are those of the full path in every case; the fast path only skips work whose
  // outcome is known (Icarus pays for every variable read of a per-edge process).
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_q       <= {WIDTH{1'b0}};
      s2_q       <= {WIDTH{1'b0}};
      deferred_q = {WIDTH{1'b0}};
      edge_n     = 32'd0;
      slow       = 1'b1;
    end else if (!slow) begin
      edge_n = edge_n + 32'd1;
      s1_q <= d_i;  // d_i has no X or Z bit here (a slow edge saw it clean and it has not changed)
      s2_q <= s1_q;
      prev_edge_t = $time;
    end else begin
      edge_n = edge_n + 32'd1;
      d_x = ((^d_i) === 1'bx);
`ifdef CDC_SYNC_MONITOR
      // Which task clock drives this instance: its edges fall at 1 (mod 4) ps for clock a, 3 for b.
      if (!dom_known) begin
        dst_is_a = ($time % 4 == 1);
        dom_known = 1'b1;
      end
      if (d_x) begin
        $sformat(msg, "X or Z on synchronizer input %0s.d_i at t=%0d", who, $time);
        `CDC_SYNC_MONITOR.cdc_sync_fail(msg);
      end
      if (name_bad) begin
        $sformat(msg, "a synchronizer's hierarchical name is %0d characters or longer (refused)", NAME_MAX);
        `CDC_SYNC_MONITOR.cdc_sync_fail(msg);
      end
`else
      if (d_x && !x_warned) begin
        x_warned = 1'b1;
        $display("cdc_sync_bus %m: X or Z on d_i at t=%0d (no monitor: cannot fail the run)", $time);
      end
`endif
      // Candidates: bits whose input differs from the first flop and that did not settle late on
      // the previous edge. Without a candidate nothing below is computed (d_i & all ones: the
      // same value as the late-bit blend below with no late bit, Z read as X).
      // Only a bit that changed since the previous edge (fresh) can be eligible; a bit that did
      // not has its latest change at or before the previous edge.
      cand = settle_on ? ((d_i ^ s1_q) & ~deferred_q & fresh) : {WIDTH{1'b0}};
      fresh = {WIDTH{1'b0}};
      late = {WIDTH{1'b0}};
      if (|cand) begin
`ifdef CDC_SYNC_MONITOR
        `CDC_SYNC_MONITOR.cdc_src_edge(dst_is_a, src_t);
`else
        src_t = upd_time;
`endif
        edge_h_ok = 1'b0;
        for (i = 0; i < WIDTH; i = i + 1)
          if (cand[i]) begin
            ct = chg_t[i];
            if (ct != 64'hffffffffffffffff && ct > prev_edge_t && ct >= src_t) begin
              if (!edge_h_ok) begin
                edge_h = mix32(base_h ^ edge_n);
                edge_h_ok = 1'b1;
              end
              bit_h = mix32(edge_h + i * 32'h9e3779b9);
              late[i] = bit_h[0];
            end
          end
        s1_q <= (d_i & ~late) | (s1_q & late);
      end else
        s1_q <= d_i & {WIDTH{1'b1}};
      s2_q <= s1_q;
      deferred_q = late;
      // The next edge may take the fast path only if it has nothing to decide: no deferred bit
      // to resolve, d_i clean, the name accepted (and no change of d_i before it, see above).
      slow = (late != {WIDTH{1'b0}}) || d_x || name_bad;
      prev_edge_t = $time;
    end
  end

  assign q_o = s2_q;
endmodule

module cdc_sync_bit (
  input  wire clk_i,
  input  wire rst_ni,
  input  wire d_i,
  output wire q_o
);
  cdc_sync_bus #(.WIDTH(1)) u_sync (.clk_i(clk_i), .rst_ni(rst_ni), .d_i(d_i), .q_o(q_o));
endmodule

module cdc_sync_pulse (
  input  wire src_clk_i,
  input  wire src_rst_ni,
  input  wire pulse_i,
  input  wire dst_clk_i,
  input  wire dst_rst_ni,
  output wire pulse_o
);
  reg  toggle_q;
  reg  prev_q;
  wire sync_q;

  always @(posedge src_clk_i or negedge src_rst_ni)
    if (!src_rst_ni) toggle_q <= 1'b0;
    else if (pulse_i) toggle_q <= ~toggle_q;

  cdc_sync_bus #(.WIDTH(1)) u_sync (.clk_i(dst_clk_i), .rst_ni(dst_rst_ni), .d_i(toggle_q), .q_o(sync_q));

  always @(posedge dst_clk_i or negedge dst_rst_ni)
    if (!dst_rst_ni) prev_q <= 1'b0;
    else prev_q <= sync_q;

  assign pulse_o = sync_q ^ prev_q;
endmodule

// ------------------------------------------------------------------------------------------------
// cdc_ram -- storage written in one clock domain and read in the other (a FIFO's word memory).
//
//   cdc_ram #(.WIDTH(w), .AW(a)) u (.wclk_i, .we_i, .waddr_i, .wdata_i, .rclk_i, .raddr_i, .rdata_o);
//
// 2**AW entries of WIDTH bits. On a rising edge of wclk_i with we_i high, entry waddr_i takes
// wdata_i. rdata_o is a combinational read of entry raddr_i, meant to be registered on rclk_i.
// Write-side ports (we_i, waddr_i, wdata_i) belong to wclk_i's domain, raddr_i and rdata_o to
// rclk_i's; wclk_i and rclk_i are the two domains' clocks (the static gate checks all of this).
// Only the data crosses here: whatever tells the reader that an entry is ready must cross through
// a synchronizer primitive.
//
// Behaviour modelled (the storage side of the late-settling model, after the idea of OpenTitan's
// prim_cdc_rand_delay: a crossing data path may deliver a transition late). A real memory's read
// path from a just-written cell to the read-domain flop is not timed against rclk_i: bits written
// shortly before a read-domain edge may or may not have arrived. So:
//   * An entry is "young" from its write until the second rising edge of rclk_i after it: it was
//     written less than two read-domain cycles before the read-domain edge that captures it.
//   * Each write chooses, per bit, when that bit's new value arrives: at once (probability 1/2),
//     after one read-domain edge (1/4) or after two (1/4), from the seed's settling key, this
//     instance's key and the time of the write. Until its arrival a bit reads its value from
//     before this write. So a read at the first read-domain edge after a write sees the bits
//     that arrived at once, one at the second edge sees those plus the one-edge bits, and from
//     the third edge on every bit reads the written value. Each bit's arrival is fixed by the
//     write: two reads of a young entry can agree on a mix of old and new bits, so sampling an
//     entry twice and keeping a value only when both reads agree does not hide a mix.
//   * Why two read-domain cycles: a real asynchronous read path from a just-written cell is
//     timed against neither clock; two read cycles is as long as such a path can be while a
//     correct reader still never sees it. A correct FIFO publishes a word through a synchronized
//     pointer that the reader sees 2 or 3 of its cycles after the write (the synchronizer's
//     second flop takes it at the second read edge at the earliest), and only then registers the
//     word, at the third read edge or later: it never reads a young entry and never sees this
//     model. A design that uses the storage as a mailbox (a pointer, a flag or a count carried in
//     an entry and read without a synchronizer), or that publishes a pointer before its data,
//     reads entries that are young and may see a mix of old and new bits.
//   * The window is measured from the rising edges of rclk_i: a reader that registers rdata_o on
//     another edge sees the rule as "written since the second-latest rising edge of rclk_i".
//   * With +cdc_settle=0 every read returns the latest written value (ideal storage).
//   * Every entry holds 0 until it is first written, on every simulator (an X there would make
//     Icarus and Verilator, which has no X, disagree about a design that reads it).
//   * Two writes to one entry within two read cycles: a late bit reads the value it had before
//     the latest write.
//   * Test stress mode (never used by the grader): compiled with CDC_RAM_ALL_LATE defined, every
//     bit of every write arrives two read edges late, so any read of a young entry returns its
//     old value.
// The instance key is cdc_sync_bus's: a 64-bit keyed hash (SplitMix64's finaliser per
// character, seeded by the settle key) of the WHOLE hierarchical name %m, without Verilator's
// leading "TOP."; names of 4096 characters or more are refused, as there. With a monitor (every
// task testbench), X or Z on we_i, or on waddr_i while we_i is high, at a write-clock edge fails
// the seed once both resets are released (cdc_sync_fail), as X on a synchronizer input does.
// No $random/$urandom: their streams differ between simulators.
//
// Run-time switches (plusargs, as for the synchronizers): +cdc_settle=0|1, +cdc_settle_key=<u32>.
module cdc_ram #(
  parameter integer WIDTH = 8,
  parameter integer AW = 4
) (
  input  wire             wclk_i,   // write-domain clock
  input  wire             we_i,     // write enable         (write domain)
  input  wire [AW-1:0]    waddr_i,  // write address        (write domain)
  input  wire [WIDTH-1:0] wdata_i,  // write data           (write domain)
  input  wire             rclk_i,   // read-domain clock (used for the model's timing)
  input  wire [AW-1:0]    raddr_i,  // read address         (read domain)
  output wire [WIDTH-1:0] rdata_o   // combinational read of entry raddr_i (read domain);
);                                  // an entry written < 1 read cycle ago may read old bits
  localparam integer DEPTH = 1 << AW;
  localparam integer NAME_MAX = 4096;  // characters of %m kept; a longer name is refused
  localparam integer CHUNKS = (WIDTH + 31) / 32;

  reg [WIDTH-1:0] mem   [0:DEPTH-1];  // the written values
  reg [WIDTH-1:0] flip  [0:DEPTH-1];  // bits of the latest write that arrive late (old ^ new)
  reg [WIDTH-1:0] flip2 [0:DEPTH-1];  // those of them that arrive two read cycles late
  reg [31:0]      wr_n  [0:DEPTH-1];  // rising edges of rclk_i before each entry's latest write
  reg [31:0]      rd_n;               // rising edges of rclk_i so far
  reg [31:0]      inst_key;           // keyed hash of this instance's whole hierarchical name
  reg [63:0]      name_h;
  reg [31:0]      settle_key, base_h;
  reg [63:0]      wr_t_now;           // time of the write being made
  reg             settle_on;
  reg             name_bad, name_long;
  reg [WIDTH-1:0] late, late2;
  reg [32*CHUNKS-1:0] late_w, late2_w;
  reg [31:0]      wr_h, chunk_h, chunk_h2;
  reg [8*NAME_MAX-1:0] name;          // %m, filled only for names of 256 characters or more
  reg [8*256-1:0] name_s;             // %m
  reg [8*80-1:0]  who;                // the name's last 80 characters, for messages
  reg [8*160-1:0] msg;
  integer         i, c, skip, nlen, top, k;

  // a ^ b is written (a | b) - (a & b) in the hashes: the same number (no operand here has an X
  // or Z bit), and Icarus 11 XORs a vector bit by bit but ORs, ANDs and subtracts it by words.
  function [31:0] mix32(input [31:0] x);
    reg [31:0] y, s;
    begin
      s = x >> 16; y = (x | s) - (x & s);
      y = y * 32'h7feb352d;
      s = y >> 15; y = (y | s) - (y & s);
      y = y * 32'h846ca68b;
      s = y >> 16; mix32 = (y | s) - (y & s);
    end
  endfunction

  function [63:0] mix64(input [63:0] x);  // SplitMix64's finaliser (a bijection)
    reg [63:0] y, s;
    begin
      s = x >> 30; y = ((x | s) - (x & s)) * 64'hbf58476d1ce4e5b9;
      s = y >> 27; y = ((y | s) - (y & s)) * 64'h94d049bb133111eb;
      s = y >> 31; mix64 = (y | s) - (y & s);
    end
  endfunction

  function [7:0] name_chr(input integer k);  // character k of %m (0 is the last)
    name_chr = name_long ? name[8*k +: 8] : name_s[8*k +: 8];
  endfunction

  initial begin
    settle_on = 1'b1;
    settle_key = 32'd0;
    if ($value$plusargs("cdc_settle=%d", c)) settle_on = (c != 0);
    if (!$value$plusargs("cdc_settle_key=%d", settle_key)) settle_key = 32'd0;
    // The instance key, exactly as cdc_sync_bus computes it (see there).
    $sformat(name_s, "%m");
    name_long = (name_s[8*256-1 -: 8] != 8'd0);
    name = {8*NAME_MAX{1'b0}};
    if (name_long) $sformat(name, "%m");
    name_bad = (name[8*NAME_MAX-1 -: 8] != 8'd0);
    who = name_long ? name[8*80-1:0] : name_s[8*80-1:0];
    name_h = mix64({32'h9e3779b9, settle_key});
    nlen = 0;
    skip = -1;  // -1: before the first character
    // The loop starts at the name's first character: for a short name, the highest nonzero
    // byte of name_s, found by halving (the characters above it are zero and change nothing
    // below; visiting them cost Icarus a function call each, 256 per instance per run).
    top = name_long ? NAME_MAX - 1 : -1;
    if (!name_long && name_s != {8*256{1'b0}}) begin
      top = 0;
      for (k = 128; k >= 1; k = k / 2)
        if ((name_s >> (8 * (top + k))) != {8*256{1'b0}}) top = top + k;
    end
    for (i = top; i >= 0; i = i - 1) begin
      c = name_chr(i);
      if (c != 0 || skip >= 0) begin
        if (skip < 0)
          skip = (i >= 3 && {name_chr(i), name_chr(i-1), name_chr(i-2), name_chr(i-3)} == "TOP.") ? 4 : 0;
        if (skip > 0) skip = skip - 1;
        else begin
          name_h = mix64((name_h | c) - (name_h & c));  // name_h ^ c
          nlen = nlen + 1;
        end
      end
    end
    name_h = mix64(name_h ^ nlen);
    inst_key = name_h[63:32] ^ name_h[31:0];
    base_h = mix32(settle_key ^ inst_key ^ 32'h52414d31);  // "RAM1": a stream apart from the synchronizers'
    for (i = 0; i < DEPTH; i = i + 1) begin
      mem[i] = {WIDTH{1'b0}};
      flip[i] = {WIDTH{1'b0}};
      flip2[i] = {WIDTH{1'b0}};
      wr_n[i] = 32'd0;
    end
    rd_n = 32'd0;
  end

  always @(posedge wclk_i) begin
`ifdef CDC_SYNC_MONITOR
    if (we_i !== 1'b0 && (we_i !== 1'b1 || (^waddr_i) === 1'bx)) begin
      $sformat(msg, "X or Z on storage write enable or address %0s at t=%0d", who, $time);
      `CDC_SYNC_MONITOR.cdc_sync_fail(msg);
    end
    if (name_bad) begin
      $sformat(msg, "a storage primitive's hierarchical name is %0d characters or longer (refused)", NAME_MAX);
      `CDC_SYNC_MONITOR.cdc_sync_fail(msg);
    end
`endif
    if (we_i) begin
      // Which bits of this write arrive late: one fair coin per bit (nothing when settling is off).
      late = {WIDTH{1'b0}};
      late2 = {WIDTH{1'b0}};
      if (settle_on) begin
        // Keyed by the write's time, not by a count of writes: a write enable that is X before
        // reset (Icarus) and 0 (Verilator) must not shift the choices of every later write.
        wr_t_now = $time;
        wr_h = mix32(base_h ^ mix32(wr_t_now[31:0] ^ mix32(wr_t_now[63:32])));
        for (i = 0; i < CHUNKS; i = i + 1) begin
          chunk_h = mix32(wr_h + i * 32'h9e3779b9);
          chunk_h2 = mix32(chunk_h ^ 32'h85ebca6b);
          late_w[32 * i +: 32] = chunk_h;
          late2_w[32 * i +: 32] = chunk_h & chunk_h2;
        end
        late = late_w[WIDTH-1:0];
        late2 = late2_w[WIDTH-1:0];
`ifdef CDC_RAM_ALL_LATE
        late = {WIDTH{1'b1}};  // stress mode for tests: every bit of a young entry reads old
        late2 = {WIDTH{1'b1}};
`endif
      end
      flip[waddr_i] <= (mem[waddr_i] ^ wdata_i) & late;
      flip2[waddr_i] <= (mem[waddr_i] ^ wdata_i) & late2;
      mem[waddr_i]  <= wdata_i;
      wr_n[waddr_i] <= rd_n;
    end
  end

  // Read-domain edges are counted (a nonblocking update, so the edge that captures rdata_o sees
  // the count before it); a write records the count it saw. No write shares a time with a
  // read-domain edge, so rd_n - wr_n is the number of read-domain edges since the write: 0 (its
  // late bits read old), 1 (its bits two edges late still read old), 2 or more (all bits new).
  // A 32-bit count rather than two 64-bit times: one variable changes per read edge, so the
  // continuous read below is re-evaluated once (this model's share of a FIFO seed's CPU).
  always @(posedge rclk_i) rd_n <= rd_n + 32'd1;

  assign rdata_o = mem[raddr_i] ^ ((rd_n == wr_n[raddr_i]) ? flip[raddr_i] :
                                   (rd_n == wr_n[raddr_i] + 32'd1) ? flip2[raddr_i] : {WIDTH{1'b0}});
endmodule
