// ring_select -- a state machine in domain a (clk_a_i) that steps through 4 states in a fixed
// order (S0, S1, S2, S3, then S0 again), one step per clk_a_i edge on which next_i is high;
// domain b (clk_b_i) shows the state on sel_o (the state's code, as the source encodes it).
module ring_select (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       next_i,
  output wire [3:0] sel_o
);

  // ---------------- domain a (clk_a_i): the source state ----------------
  // a 4-bit one-hot state
  reg [3:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 4'b0001;
    else if (next_i) begin
      case (state_q)
        4'b0001: state_q <= 4'b0010;  // S0 -> S1
        4'b0010: state_q <= 4'b0100;  // S1 -> S2
        4'b0100: state_q <= 4'b1000;  // S2 -> S3
        4'b1000: state_q <= 4'b0001;  // S3 -> S0
        default: state_q <= 4'b0001;
      endcase
    end
  end

  // ---------------- crossing: each state bit through its own synchronizer ----------------
  wire [3:0] state_s;
  cdc_sync_bit u_sync_0 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[0]), .q_o(state_s[0]));
  cdc_sync_bit u_sync_1 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[1]), .q_o(state_s[1]));
  cdc_sync_bit u_sync_2 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[2]), .q_o(state_s[2]));
  cdc_sync_bit u_sync_3 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[3]), .q_o(state_s[3]));

  // ---------------- domain b (clk_b_i): the state as it arrives ----------------
  reg [3:0] sel_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) sel_q <= 4'b0001;
    else if (state_s != 4'b0000) sel_q <= state_s;  // all zero: nothing has crossed yet
  end
  assign sel_o = sel_q;
endmodule
