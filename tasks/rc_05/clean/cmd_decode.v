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
  // the state number in a unit-distance code (one bit per step)
  reg [1:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 2'b00;
    else if (issue_i) begin
      case (state_q)
        2'b00: state_q <= 2'b01;  // NOP -> LOAD
        2'b01: state_q <= 2'b11;  // LOAD -> SHIFT
        2'b11: state_q <= 2'b10;  // SHIFT -> STORE
        2'b10: state_q <= 2'b00;  // STORE -> NOP
        default: state_q <= 2'b00;
      endcase
    end
  end

  // ---------------- crossing: the whole code through one synchronizer ----------------
  wire [1:0] state_s;
  cdc_sync_bus #(.WIDTH(2)) u_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q), .q_o(state_s));

  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [3:0] cmd_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) cmd_q <= 4'b0001;
    else begin
      case (state_s)
      2'b00: cmd_q <= 4'b0001;  // NOP
      2'b01: cmd_q <= 4'b0010;  // LOAD
      2'b10: cmd_q <= 4'b1000;  // STORE
      2'b11: cmd_q <= 4'b0100;  // SHIFT
      default: cmd_q <= cmd_q;  // not a code of the source: keep the last state
      endcase
    end
  end
  assign cmd_o = cmd_q;
endmodule
