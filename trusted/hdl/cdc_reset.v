// cdc_reset.v -- the reset side of the late-settling model (compiled with cdc_sync.v in every build).
//
// Two modules:
//   cdc_sync_reset   the provided reset synchronizer (a primitive a design instantiates):
//                    asynchronous assertion, deassertion synchronized to clk_i through two flops
//   cdc_arst_ff      the simulation model of every asynchronously reset flop of a design. A design
//                    never instantiates it: the grader's synthesis (cdc_env/gate/synth.py) maps
//                    every $adff / $adffe cell of the netlist to it before the simulators build
//                    the netlist. Parameters and ports are those of the Yosys cells, plus KEY.
//
// Behaviour modelled (the late-release model; tasks/common/CONTRACT.md, "Reset release"):
//   * A flop's asynchronous reset asserts at once, whatever the clock.
//   * A release (deassertion) is "close" to the flop's next active clock edge at time t when it
//     happened at time r < t with 8 * (t - r) < P, P being the flop's clock period (the shortest
//     interval between two consecutive active edges while the flop was in reset: a clock may stop
//     for a while, but never runs faster than its period; no release is close before the period
//     is known): within one eighth of a period before the edge.
//     A release in the time step of an edge (r == t: a reset synchronizer of the flop's own
//     clock releases in the nonblocking region of that edge) comes after that edge and is never
//     close to the next one. The window is an eighth of a period so that a release a quarter
//     period after a rising edge (the testbench's own domain resets) is close to neither edge
//     of either polarity.
//   * On the first active edge after a close release, each bit of the flop independently leaves
//     reset on that edge (takes D as usual) or on the next (keeps its reset value one more
//     edge). The choice is made by a PRNG from the run's settle key (+cdc_settle_key, the one
//     the synchronizers use), the flop's KEY (a hash of its netlist name, given by the grader's
//     synthesis: no design text chooses it) and the release time, so every simulator makes the
//     same choices for the same seed. A release that is not close never delays a bit.
//   * +cdc_settle=0 switches this off with the synchronizers' late settling: every bit leaves
//     reset on the first edge after its release.
//   * No design signal enters the choices: only this flop's own clock, reset and KEY. The only
//     monitor call is the recovery check's, at a close release.
//   * Cost: an active edge out of reset with no release since the previous edge does only what
//     any flop does (Q <= D when enabled). CLK is always rising-edge: synthesis connects a falling-
//     edge flop's clock through an inverter, so that no flop pays for a derived clock but those.
//   * Recovery check (hidden seeds): a close release on which the flop is enabled and D differs
//     from its reset value (some bit would change on that edge) is a recovery violation: the bit
//     may go metastable, and the flops and outputs that read it may each resolve it differently in
//     the next cycle -- which no choice of late bits shows (a flop where one bit changes, a
//     one-flop qualifier read by several flops). The model reports it to the testbench
//     (cdc_recovery_fail, cdc_monitor.vh), which fails the seed when its hidden checks are on
//     (+cdc_gray_check=1), as it does for the one-bit rule. Only the first flop of the provided
//     cdc_sync_reset may go metastable (RECOVERY = 0): its only reader is its second flop. A flop
//     released out of step with its clock passes when it does not change on that edge (held in its
//     reset value by an enable or a synchronous condition from its own clock's reset).
//     For an asynchronous load the mapping's held-value flop changes exactly where the clocked
//     value differs from the loaded one (gate/synth.py), so the check sees the bits that change.
// What this model does NOT do: produce X or metastable values, release a bit earlier than its
// reset deasserts (a removal violation that would make a flop take D on an edge while still in
// reset). Flops with an asynchronous load or per-bit set/reset ($aldff, $dffsr) meet this model
// too: synthesis maps them onto cdc_arst_ff plus a latch of the loaded value (gate/synth.py).
//
// cdc_sync_reset: rst_no falls at once when rst_ni falls and rises on the second rising edge of
// clk_i after rst_ni rises -- or on the third, when the release was close to the first edge
// (its first flop is a cdc_arst_ff and is modelled like every other one). Its KEY is given by the
// grader's synthesis from its instance name, as for the flops.
`timescale 1ps / 1ps

module cdc_arst_ff #(
  parameter integer WIDTH = 1,
  parameter [0:0]   ARST_POLARITY = 1'b1,
  parameter [0:0]   EN_POLARITY = 1'b1,
  parameter [WIDTH-1:0] ARST_VALUE = {WIDTH{1'b0}},
  parameter [31:0]  KEY = 32'd0,
  parameter [0:0]   RECOVERY = 1'b1  // the recovery check (0: cdc_sync_reset's first flop only)
) (
  input  wire             CLK,
  input  wire             ARST,
  input  wire             EN,
  input  wire [WIDTH-1:0] D,
  output reg  [WIDTH-1:0] Q
);
  wire            arst_e = (ARST === ARST_POLARITY);  // the reset is asserted
  reg             settle_on;
  reg [31:0]      settle_key;
  reg [63:0]      last_t;    // time of the latest active edge while in reset
  reg             last_ok;   // there was one in the current reset
  reg [63:0]      period;    // the clock's period: two consecutive active edges in one reset
  reg             per_ok;    // measured
  reg [63:0]      rel_t;     // time of the latest release
  reg             pend;      // released since the latest active edge out of reset
  reg             in_rst;    // the reset was asserted at this flop's latest trigger
  reg [WIDTH-1:0] late;
  reg [31:0]      h, bit_h;
  integer         i, c;

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
    last_ok = 1'b0;
    last_t = 64'd0;
    per_ok = 1'b0;
    period = 64'd0;
    rel_t = 64'd0;
    pend = 1'b0;
    in_rst = 1'b0;
  end

  always @(negedge arst_e) begin
    rel_t = $time;
    pend = 1'b1;
    in_rst = 1'b0;
    last_ok = 1'b0;
  end

  // One trigger of the flop: the reset asserted, or an active clock edge. Out of reset, an edge
  // with no release since the previous one does what any flop does and nothing else.
  always @(posedge CLK or posedge arst_e) begin
    if (arst_e) begin
      // A trigger while the reset was already asserted is a clock edge (an assertion always
      // follows a release, which clears in_rst): two in one reset measure the clock period.
      if (in_rst) begin
        // The shortest interval seen: a clock that stops for a while (the reset family stops one
        // after a release) only lengthens an interval, so the period is never over-estimated.
        if (last_ok && (!per_ok || $time - last_t < period)) begin
          period = $time - last_t;
          per_ok = 1'b1;
        end
        last_t = $time;
        last_ok = 1'b1;
      end
      in_rst = 1'b1;
      Q <= ARST_VALUE;
    end else if (pend) begin
      // The first active edge after a release: late bits when the release was close to it.
      pend = 1'b0;
      late = {WIDTH{1'b0}};
      if (settle_on && per_ok && rel_t < $time && 8 * ($time - rel_t) < period) begin
`ifdef CDC_SYNC_MONITOR
        // The testbench formats the message (once, not in every instance's code) and names the
        // edge, not the flop: two flops failing on one edge call in the simulator's own order.
        if (RECOVERY && EN === EN_POLARITY && D !== ARST_VALUE) `CDC_SYNC_MONITOR.cdc_recovery_fail;
`endif
        h = mix32(mix32(settle_key ^ KEY ^ 32'h52535431) ^ mix32(rel_t[31:0] ^ mix32(rel_t[63:32])));
        for (i = 0; i < WIDTH; i = i + 1) begin
          bit_h = mix32(h + i * 32'h9e3779b9);
          late[i] = bit_h[0];
        end
      end
      // A disabled flop keeps Q: just released, a late bit holds its reset value anyway.
      if (EN === EN_POLARITY) Q <= (D & ~late) | (ARST_VALUE & late);
    end else if (EN === EN_POLARITY) Q <= D;
  end
endmodule

module cdc_sync_reset #(
  parameter [31:0] KEY = 32'd0
) (
  input  wire clk_i,
  input  wire rst_ni,   // asynchronous reset, active low, from any domain or none
  output wire rst_no    // clk_i's domain reset: asserted at once, released synchronously
);
  wire s1_q;
  cdc_arst_ff #(.WIDTH(1), .ARST_POLARITY(1'b0), .ARST_VALUE(1'b0), .KEY(KEY), .RECOVERY(1'b0)) u_s1 (
    .CLK(clk_i), .ARST(rst_ni), .EN(1'b1), .D(1'b1), .Q(s1_q));
  cdc_arst_ff #(.WIDTH(1), .ARST_POLARITY(1'b0), .ARST_VALUE(1'b0), .KEY(KEY ^ 32'h00000001)) u_s2 (
    .CLK(clk_i), .ARST(rst_ni), .EN(1'b1), .D(s1_q), .Q(rst_no));
endmodule
