// task: rst_01
// expect: pass
// what: a cdc_sync_reset's rst_no (the Q of a flop of its clock's domain) synchronized into the other domain as a level
// ring_pair -- two free-running state machines, one per clock domain, and one reset.
// Domain a (clk_a_i) runs a one-hot ring counter: exactly one bit is high and it moves up one place per cycle;
// domain b (clk_b_i) runs a counter that starts at 3 after reset and counts up by one per cycle (wrapping at 15).
// arst_ni is the system reset: active low, asserted and released at any time, asynchronous to
// both clocks.
// Fix: each domain's reset is made from arst_ni by a cdc_sync_reset clocked by
// that domain's own clock, so every flop of a domain leaves reset on the same edge.
module ring_pair (
  input  wire       clk_a_i,
  input  wire       clk_b_i,
  input  wire       arst_ni,
  output wire [3:0] ring_a_o,
  output wire [3:0] count_b_o,
  output wire       peer_up_o
);
  // ---------------- resets ----------------
  wire rst_a_n, rst_b_n;
  cdc_sync_reset u_rst_a (.clk_i(clk_a_i), .rst_ni(arst_ni), .rst_no(rst_a_n));
  cdc_sync_reset u_rst_b (.clk_i(clk_b_i), .rst_ni(arst_ni), .rst_no(rst_b_n));

  // ---------------- domain a (clk_a_i): one-hot ring ----------------
  reg [3:0] st_a_q;
  always @(posedge clk_a_i or negedge rst_a_n) begin
    if (!rst_a_n) st_a_q <= 4'b0001;
    else st_a_q <= {st_a_q[2:0], st_a_q[3]};
  end
  assign ring_a_o = st_a_q;

  // ---------------- domain b (clk_b_i): counter ----------------
  reg [3:0] st_b_q;
  always @(posedge clk_b_i or negedge rst_b_n) begin
    if (!rst_b_n) st_b_q <= 4'd3;
    else st_b_q <= st_b_q + 4'd1;
  end
  assign count_b_o = st_b_q;

  // domain a's own synchronized reset, carried into domain b as a level
  cdc_sync_bit u_up_sync (.clk_i(clk_b_i), .rst_ni(rst_b_n), .d_i(rst_a_n), .q_o(peer_up_o));
endmodule
