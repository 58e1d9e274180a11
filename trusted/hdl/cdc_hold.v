// cdc_hold.v -- the provided qualified-word primitive (trusted, read-only, like cdc_sync.v).
//
//   cdc_hold_bus #(.WIDTH(w)) u (.clk_i(dst_clk), .d_i(src_word_q), .q_o(word_in_dst));
//
// A multi-bit word that crosses as plain wires, held stable by the source while a one-bit
// qualifier crosses through a synchronizer primitive (cdc_sync_bit, cdc_sync_pulse or a
// request/acknowledge). q_o is d_i, combinationally, as the destination domain (clk_i) sees it;
// d_i must be driven directly by registers of the source domain, and q_o may only be loaded into
// destination registers under a synchronized qualifier (the static gate, rule CDC-QUAL; CONTRACT.md,
// "Qualified data crossings").
//
// Behaviour modelled (the data side of the late-settling model, as cdc_ram's young entries): the
// wires from the source registers to the destination registers are timed against neither clock,
// so bits that changed shortly before a destination edge may or may not have arrived.
//   * Each change of d_i chooses, per changed bit, when its new value arrives at q_o: at once
//     (probability 1/2), after one rising edge of clk_i (1/4) or after two (1/4), from the seed's
//     settling key, this instance's key and the time of the change. Until then the bit reads its
//     value from before the change. So a register that loads q_o on the first rising edge of
//     clk_i after a change may see a mix of old and new bits, one that loads it on the second
//     edge may too (fewer of them), and from the third edge on every bit reads the new value.
//   * Why two destination cycles: a correct qualifier is raised with (or after) the word and
//     crosses a two-flop synchronizer, whose output the destination sees after the second
//     destination edge at the earliest; a register enabled by it loads the word on the third edge
//     or later and never sees this model. A destination that loads the word earlier than its
//     qualifier allows, or a source that changes the word while its qualifier is in flight, loads
//     a young word and may see a mix of old and new bits.
//   * A change while an earlier one is still arriving: the late bits read their value from
//     before the latest change (as cdc_ram's two writes to one entry).
//   * With +cdc_settle=0, q_o is d_i (ideal wires).
//   * X or Z: a change from or to a word with an X or Z bit delays nothing (q_o is d_i then):
//     Icarus starts registers at X and Verilator at 0, so the choices may not depend on it.
// The instance key is cdc_sync_bus's: a 64-bit keyed hash (SplitMix64's finaliser per character,
// seeded by the settle key) of the WHOLE hierarchical name %m, without Verilator's leading
// "TOP."; the choices of a change are keyed by its time (no two clock edges of different clocks
// share a time, and d_i is driven by registers only, so d_i changes at most once per time step,
// the same on every simulator). No $random/$urandom: their streams differ between simulators.
//
// Run-time switches (plusargs, as for the synchronizers): +cdc_settle=0|1, +cdc_settle_key=<u32>.
`timescale 1ps / 1ps

module cdc_hold_bus #(
  parameter integer WIDTH = 8
) (
  input  wire             clk_i,  // destination clock (the model's timing)
  input  wire [WIDTH-1:0] d_i,    // the word, from registers of the source domain
  output wire [WIDTH-1:0] q_o     // the word as the destination sees it (load it under a qualifier)
);
  localparam integer CHUNKS = (WIDTH + 31) / 32;
  reg [WIDTH-1:0] cur;              // d_i as of its latest change
  reg [WIDTH-1:0] flip, flip2;      // bits of the latest change arriving late (old ^ new), two edges late
  reg [31:0]      rd_n, wr_n;       // rising edges of clk_i so far; their count at the latest change
  reg [31:0]      inst_key, settle_key, base_h, wr_h, chunk_h, chunk_h2;
  reg [63:0]      name_h, now_t;
  reg             settle_on, name_long;
  reg [32*CHUNKS-1:0] late_w, late2_w;
  reg [8*4096-1:0] name;
  reg [8*256-1:0] name_s;
  integer         i, c, skip, nlen, top, k;

  // a ^ b written (a | b) - (a & b), as in cdc_sync.v (Icarus 11 XORs vectors bit by bit).
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

  function [63:0] mix64(input [63:0] x);
    reg [63:0] y, s;
    begin
      s = x >> 30; y = ((x | s) - (x & s)) * 64'hbf58476d1ce4e5b9;
      s = y >> 27; y = ((y | s) - (y & s)) * 64'h94d049bb133111eb;
      s = y >> 31; mix64 = (y | s) - (y & s);
    end
  endfunction

  function [7:0] name_chr(input integer k);
    name_chr = name_long ? name[8*k +: 8] : name_s[8*k +: 8];
  endfunction

  initial begin
    settle_on = 1'b1;
    settle_key = 32'd0;
    if ($value$plusargs("cdc_settle=%d", c)) settle_on = (c != 0);
    if (!$value$plusargs("cdc_settle_key=%d", settle_key)) settle_key = 32'd0;
    // The instance key, exactly as cdc_sync_bus computes it.
    $sformat(name_s, "%m");
    name_long = (name_s[8*256-1 -: 8] != 8'd0);
    name = {8*4096{1'b0}};
    if (name_long) $sformat(name, "%m");
    name_h = mix64({32'h9e3779b9, settle_key});
    nlen = 0;
    skip = -1;
    top = name_long ? 4095 : -1;
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
          name_h = mix64((name_h | c) - (name_h & c));
          nlen = nlen + 1;
        end
      end
    end
    name_h = mix64(name_h ^ nlen);
    inst_key = name_h[63:32] ^ name_h[31:0];
    base_h = mix32(settle_key ^ inst_key ^ 32'h484f4c44);  // "HOLD": a stream apart from the others'
    flip = {WIDTH{1'b0}};
    flip2 = {WIDTH{1'b0}};
    rd_n = 32'd0;
    wr_n = 32'd0;
  end

  always @(d_i) begin
    flip = {WIDTH{1'b0}};
    flip2 = {WIDTH{1'b0}};
    if (settle_on && (^cur) !== 1'bx && (^d_i) !== 1'bx) begin
      now_t = $time;
      wr_h = mix32(base_h ^ mix32(now_t[31:0] ^ mix32(now_t[63:32])));
      for (i = 0; i < CHUNKS; i = i + 1) begin
        chunk_h = mix32(wr_h + i * 32'h9e3779b9);
        chunk_h2 = mix32(chunk_h ^ 32'h85ebca6b);
        late_w[32 * i +: 32] = chunk_h;
        late2_w[32 * i +: 32] = chunk_h & chunk_h2;
      end
      flip = (cur ^ d_i) & late_w[WIDTH-1:0];
      flip2 = (cur ^ d_i) & late2_w[WIDTH-1:0];
    end
    cur = d_i;
    wr_n = rd_n;
  end

  // Counted with a nonblocking update: the edge that loads q_o sees the count before it. d_i never
  // changes in a time step of clk_i's edges, so rd_n - wr_n is the count of edges since the change.
  always @(posedge clk_i) rd_n <= rd_n + 32'd1;

  assign q_o = cur ^ ((rd_n == wr_n) ? flip : (rd_n == wr_n + 32'd1) ? flip2 : {WIDTH{1'b0}});
endmodule
