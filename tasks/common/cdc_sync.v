// cdc_sync.v -- the provided clock-domain-crossing synchronizer primitives.
//
// Shared, read-only, by every task. Three primitives:
//   cdc_sync_bus   #(WIDTH)  two-flop synchronizer for a bus that changes at most one bit per
//                            source update (a Gray-coded value); WIDTH=1 is a level synchronizer
//   cdc_sync_bit             one-bit level synchronizer (cdc_sync_bus with WIDTH=1)
//   cdc_sync_pulse           toggle-based pulse synchronizer (source toggle flop + cdc_sync_bit
//                            + destination edge detect)
//
// Behaviour modelled (the late-settling model, SPEC section 4). This module is the one place
// where late settling lives:
//   * Each bit is sampled by a first flop on every destination edge and passed to a second flop;
//     q_o is the second flop, so a stable input is seen after 2 destination edges.
//   * A bit whose input differs from what the first flop holds, and which changed in the source
//     domain's latest update, may "settle late": the first flop keeps its old value for one more
//     destination edge. The choice is made per bit, per edge, by a PRNG keyed by the run's settle
//     key and this instance's hierarchical name, so every simulator makes the same choices for
//     the same seed.
//   * "The source domain's latest update" is shared by every instance: each one records, in the
//     testbench's monitor (runners/tb/cdc_monitor.vh, named by the macro CDC_SYNC_MONITOR), the
//     time at which any synchronizer input from its source domain last changed, so a Gray pointer
//     split over one cdc_sync_bit per bit behaves exactly like the same pointer through one
//     cdc_sync_bus: a bit that changed on an earlier source edge has settled. An instance knows
//     its own domain from the time of its clock edges (task clock a edges fall at 1 (mod 4) ps,
//     clock b edges at 3). Without a monitor (unit tests of a primitive alone) the latest update
//     is this instance's own: all changes of d_i within one simulation time step.
//   * A bit that settled late on one edge always resolves on the next: latency is 2 or 3
//     destination cycles, never 1 or 4.
//   * Hence a Gray-coded bus is seen at its current value or one step behind, while a binary
//     count whose update flips several bits can be sampled as any mix of old and new bits.
//
// What this model does NOT do: no X values, no oscillation, no settling longer than one extra
// cycle, no failure rates that depend on time. It does not check that its input is registered
// in the source domain or Gray coded -- the static gate and the testbench do that.
//
// Run-time switches (plusargs read here only; task designs may not read plusargs):
//   +cdc_settle=0|1        late settling off (demo: fixed 2-cycle latency) or on (default 1)
//   +cdc_settle_key=<u32>  the seed's settling key
//
// Gray check hook (used by the FIFO family's testbenches; absent unless the testbench defines
// the macro CDC_GRAY_MONITOR before this file is compiled): every change of d_i reports the
// number of bits that changed for the first time in the current time step to
// `CDC_GRAY_MONITOR.cdc_sync_note(n) (runners/tb/cdc_tb.vh). No two clock edges coincide, so the
// sum over all instances in one time step is what one source clock edge changed across every
// crossing; the testbench fails the seed when it exceeds one. Instances report themselves, so
// the check follows the primitives whatever the signals are called. The hook reads d_i only and
// never touches the synchronizer state: q_o is the same with and without it.
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
  reg [WIDTH-1:0] s1_q, s2_q;       // first and second synchronizer flops
  reg [WIDTH-1:0] deferred_q;       // bits that settled late on the previous edge
  reg [WIDTH-1:0] last_d;           // d_i as of its latest change
  reg [WIDTH-1:0] upd_mask;         // bits changed in the latest source update
  reg [63:0]      upd_time;         // simulation time of the latest source update
  reg [31:0]      inst_key;         // FNV-1a of this instance's hierarchical name
  reg [31:0]      settle_key;
  reg [31:0]      edge_n;           // destination edges since reset release
  reg             settle_on;
  reg [WIDTH-1:0] late;
  reg [31:0]      edge_h, bit_h;
  reg [8*256-1:0] name;
  integer         i, j, c, skip;
  reg [63:0]      chg_t [0:WIDTH-1];  // simulation time of each bit's latest change
  reg [WIDTH-1:0] recent;           // bits that changed in the source domain's latest update
  reg             any_chg;
`ifdef CDC_SYNC_MONITOR
  reg             dom_known;        // this instance's (destination) domain is known
  reg             dst_is_a;         // clocked by task clock a (so its source is domain b)
  reg [63:0]      src_t;
`endif
`ifdef CDC_GRAY_MONITOR
  integer         gray_n, gray_i;   // Gray check hook: bits newly changed in this time step
`endif

  function [31:0] mix32(input [31:0] x);
    reg [31:0] y;
    begin
      y = x ^ (x >> 16);
      y = y * 32'h7feb352d;
      y = y ^ (y >> 15);
      y = y * 32'h846ca68b;
      mix32 = y ^ (y >> 16);
    end
  endfunction

  initial begin
    settle_on = 1'b1;
    settle_key = 32'd0;
    if ($value$plusargs("cdc_settle=%d", c)) settle_on = (c != 0);
    if (!$value$plusargs("cdc_settle_key=%d", settle_key)) settle_key = 32'd0;
    // Key the instance by its hierarchical name, without a leading "TOP." (Verilator adds one).
    $sformat(name, "%m");
    inst_key = 32'h811c9dc5;
    skip = -1;  // -1: before the first character
    for (i = 255; i >= 0; i = i - 1) begin
      c = name[8*i +: 8];
      if (c != 0) begin
        if (skip < 0) skip = (i >= 3 && name[8*i+7 -: 32] == "TOP.") ? 4 : 0;
        if (skip > 0) skip = skip - 1;
        else inst_key = (inst_key ^ c) * 32'h01000193;
      end
    end
    for (j = 0; j < WIDTH; j = j + 1) chg_t[j] = 64'd0;
`ifdef CDC_SYNC_MONITOR
    dom_known = 1'b0;
    dst_is_a = 1'b0;
`endif
    edge_n = 32'd0;
    upd_time = 64'd0;
    upd_mask = {WIDTH{1'b0}};
    last_d = {WIDTH{1'b0}};
  end

  // Track which bits changed in the latest source update. Changes within one time step
  // accumulate (a bus assembled from several registers updates in several delta cycles).
  always @(d_i) begin
    if ($time != upd_time) upd_mask = {WIDTH{1'b0}};
`ifdef CDC_GRAY_MONITOR
    // Gray check hook (see the header): report the bits newly changed in this time step.
    gray_n = 0;
    for (gray_i = 0; gray_i < WIDTH; gray_i = gray_i + 1)
      if (((d_i[gray_i] ^ last_d[gray_i]) & ~upd_mask[gray_i]) === 1'b1) gray_n = gray_n + 1;
    `CDC_GRAY_MONITOR.cdc_sync_note(gray_n);
`endif
    upd_mask = upd_mask | (d_i ^ last_d);
    any_chg = 1'b0;
    for (j = 0; j < WIDTH; j = j + 1)
      if ((d_i[j] ^ last_d[j]) === 1'b1) begin
        chg_t[j] = $time;
        any_chg = 1'b1;
      end
`ifdef CDC_SYNC_MONITOR
    if (any_chg && dom_known) `CDC_SYNC_MONITOR.cdc_src_update(!dst_is_a);
`endif
    last_d = d_i;
    upd_time = $time;
  end

`ifdef CDC_SYNC_MONITOR
  // Which task clock drives this instance: its edges fall at 1 (mod 4) ps for clock a, 3 for b.
  always @(posedge clk_i) if (!dom_known) begin
    dst_is_a = ($time % 4 == 1);
    dom_known = 1'b1;
  end
`endif

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_q       <= {WIDTH{1'b0}};
      s2_q       <= {WIDTH{1'b0}};
      deferred_q <= {WIDTH{1'b0}};
      edge_n     = 32'd0;
    end else begin
      edge_n = edge_n + 32'd1;
      edge_h = mix32(mix32(settle_key ^ inst_key) ^ edge_n);
`ifdef CDC_SYNC_MONITOR
      src_t = dst_is_a ? `CDC_SYNC_MONITOR.cdc_upd_t_b : `CDC_SYNC_MONITOR.cdc_upd_t_a;
      for (i = 0; i < WIDTH; i = i + 1) recent[i] = dom_known ? (chg_t[i] == src_t) : upd_mask[i];
`else
      recent = upd_mask;
`endif
      for (i = 0; i < WIDTH; i = i + 1) begin
        bit_h = mix32(edge_h + i * 32'h9e3779b9);
        late[i] = settle_on & ~deferred_q[i] & recent[i] & (d_i[i] ^ s1_q[i]) & bit_h[0];
      end
      s1_q       <= (d_i & ~late) | (s1_q & late);
      s2_q       <= s1_q;
      deferred_q <= late;
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
//   * An entry is "young" from its write until the first rising edge of rclk_i after it: it was
//     written less than one read-domain cycle before the read-domain edge that captures it.
//   * Each write chooses, per bit, whether that bit's new value arrives late (a fair coin per
//     bit, from the seed's settling key, this instance's key and the number of writes so far).
//     While the entry is young, a late bit reads its value from before this write; once the
//     entry is old, every bit reads the written value.
//   * Why one read-domain cycle: it is the most a data path between domains is allowed to take
//     (the usual max-delay constraint on such a path is one destination period), and it is far
//     below what any correct reader waits. A correct FIFO publishes a word through a
//     synchronized pointer that the reader sees 2 or 3 of its cycles after the write, and only
//     then reads the word, so it never reads a young entry and never sees this model. A design
//     that uses the storage as a mailbox (a pointer, a flag or a count carried in an entry and
//     read without a synchronizer), or that publishes a pointer before its data, reads entries
//     that are young and may see a mix of old and new bits.
//   * The window is measured from the rising edges of rclk_i: a reader that registers rdata_o on
//     another edge sees the rule as "written since the latest rising edge of rclk_i".
//   * With +cdc_settle=0 every read returns the latest written value (ideal storage).
//   * Entries never written read X on four-state simulators (Icarus) and 0 on two-state ones.
//   * Two writes to one entry within one read cycle: a late bit reads the value it had before
//     the latest write.
// The instance key is a 64-bit FNV-1a of this instance's whole hierarchical name (without a
// leading "TOP.", which Verilator adds); a name longer than the buffer stops the simulation
// with a message (no verdict: the seed fails). No $random/$urandom: their streams differ
// between simulators.
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
  localparam integer NAME_CHARS = 1024;
  localparam integer CHUNKS = (WIDTH + 31) / 32;

  reg [WIDTH-1:0] mem   [0:DEPTH-1];  // the written values
  reg [WIDTH-1:0] flip  [0:DEPTH-1];  // bits of the latest write that arrive late (old ^ new)
  reg [63:0]      wr_t  [0:DEPTH-1];  // time of each entry's latest write
  reg [63:0]      rd_t;               // time of the latest rising edge of rclk_i
  reg [63:0]      inst_key;           // FNV-1a (64-bit) of this instance's hierarchical name
  reg [31:0]      settle_key;
  reg [31:0]      wr_n;               // writes so far
  reg             settle_on;
  reg [WIDTH-1:0] late;
  reg [31:0]      wr_h, chunk_h;
  reg [8*NAME_CHARS-1:0] name;
  integer         i, c, skip;

  function [31:0] mix32(input [31:0] x);
    reg [31:0] y;
    begin
      y = x ^ (x >> 16);
      y = y * 32'h7feb352d;
      y = y ^ (y >> 15);
      y = y * 32'h846ca68b;
      mix32 = y ^ (y >> 16);
    end
  endfunction

  initial begin
    settle_on = 1'b1;
    settle_key = 32'd0;
    if ($value$plusargs("cdc_settle=%d", c)) settle_on = (c != 0);
    if (!$value$plusargs("cdc_settle_key=%d", settle_key)) settle_key = 32'd0;
    $sformat(name, "%m");
    if (name[8*NAME_CHARS-1 -: 8] != 8'd0) begin
      $display("cdc_ram: hierarchical name longer than %0d characters", NAME_CHARS - 1);
      $finish;
    end
    inst_key = 64'hcbf29ce484222325;
    skip = -1;  // -1: before the first character
    for (i = NAME_CHARS - 1; i >= 0; i = i - 1) begin
      c = name[8*i +: 8];
      if (c != 0) begin
        if (skip < 0) skip = (i >= 3 && name[8*i+7 -: 32] == "TOP.") ? 4 : 0;
        if (skip > 0) skip = skip - 1;
        else inst_key = (inst_key ^ c) * 64'h00000100000001b3;
      end
    end
    for (i = 0; i < DEPTH; i = i + 1) begin
      flip[i] = {WIDTH{1'b0}};
      wr_t[i] = 64'd0;
    end
    rd_t = 64'd0;
    wr_n = 32'd0;
  end

  always @(posedge wclk_i) if (we_i) begin
    late = {WIDTH{1'b0}};
    if (settle_on) begin
      wr_n = wr_n + 32'd1;
      wr_h = mix32(mix32(settle_key ^ inst_key[31:0]) ^ inst_key[63:32] ^ mix32(wr_n));
      for (i = 0; i < CHUNKS; i = i + 1) begin
        chunk_h = mix32(wr_h + i * 32'h9e3779b9);
        for (c = 0; c < 32; c = c + 1)
          if (32 * i + c < WIDTH) late[32 * i + c] = chunk_h[c];
      end
    end
    flip[waddr_i] <= (mem[waddr_i] ^ wdata_i) & late;
    mem[waddr_i]  <= wdata_i;
    wr_t[waddr_i] <= $time;
  end

  // The read-domain edge that captures rdata_o sees rd_t as the previous edge's time (a
  // nonblocking update), so "young" is "written after the previous rising edge of rclk_i".
  always @(posedge rclk_i) rd_t <= $time;

  assign rdata_o = mem[raddr_i] ^ ((wr_t[raddr_i] > rd_t) ? flip[raddr_i] : {WIDTH{1'b0}});
endmodule
