// cmd_decode -- a state machine in domain a (clk_a_i) that steps through 4 states in a fixed
// order (NOP, LOAD, SHIFT, STORE, then NOP again), one step per clk_a_i edge on which issue_i
// is high; domain b (clk_b_i) shows the state on cmd_o (one-hot: bit i is state i, NOP first).
module cmd_decode (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       issue_i,
  output wire [3:0] cmd_o
);

  // ---------------- domain a (clk_a_i): the source state ----------------
  // a 3-bit even-parity command code
  reg [2:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 3'b000;
    else if (issue_i) begin
      case (state_q)
        3'b000: state_q <= 3'b011;  // NOP -> LOAD
        3'b011: state_q <= 3'b110;  // LOAD -> SHIFT
        3'b110: state_q <= 3'b101;  // SHIFT -> STORE
        3'b101: state_q <= 3'b000;  // STORE -> NOP
        default: state_q <= 3'b000;
      endcase
    end
  end

  // ---------------- crossing: each state bit through its own synchronizer ----------------
  wire [2:0] state_s;
  cdc_sync_bit u_sync_0 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[0]), .q_o(state_s[0]));
  cdc_sync_bit u_sync_1 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[1]), .q_o(state_s[1]));
  cdc_sync_bit u_sync_2 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q[2]), .q_o(state_s[2]));

  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [3:0] cmd_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) cmd_q <= 4'b0001;
    else begin
      case (state_s)
      3'b000: cmd_q <= 4'b0001;  // NOP
      3'b001: cmd_q <= 4'b0000;
      3'b010: cmd_q <= 4'b0000;
      3'b011: cmd_q <= 4'b0010;  // LOAD
      3'b100: cmd_q <= 4'b0000;
      3'b101: cmd_q <= 4'b1000;  // STORE
      3'b110: cmd_q <= 4'b0100;  // SHIFT
      3'b111: cmd_q <= 4'b0000;
      default: cmd_q <= 4'b0001;
      endcase
    end
  end
  assign cmd_o = cmd_q;
endmodule
