// enable_pair -- a state machine in domain a (clk_a_i) that steps through 4 states in a fixed
// order (OFF, BOTH, FIRST, SECOND, then OFF again), one step per clk_a_i edge on which step_i
// is high; domain b (clk_b_i) shows the state on en_o (the state's code, as the source encodes
// it).
module enable_pair (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       step_i,
  output wire [1:0] en_o
);

  // ---------------- domain a (clk_a_i): the source state ----------------
  // a pair of enable bits (off, both, first, second)
  reg [1:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 2'b00;
    else if (step_i) begin
      case (state_q)
        2'b00: state_q <= 2'b11;  // OFF -> BOTH
        2'b11: state_q <= 2'b01;  // BOTH -> FIRST
        2'b01: state_q <= 2'b10;  // FIRST -> SECOND
        2'b10: state_q <= 2'b00;  // SECOND -> OFF
        default: state_q <= 2'b00;
      endcase
    end
  end

  // ---------------- crossing: each state bit through its own synchronizer ----------------
  wire [1:0] state_s;
  cdc_sync_bit u_sync_0 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[0]), .q_o(state_s[0]));
  cdc_sync_bit u_sync_1 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[1]), .q_o(state_s[1]));

  // ---------------- domain b (clk_b_i): the state as it arrives ----------------
  reg [1:0] en_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) en_q <= 2'b00;
    else en_q <= state_s;
  end
  assign en_o = en_q;
endmodule
