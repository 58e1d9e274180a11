// ring_select -- a state machine in domain a (clk_a_i) that steps through 4 states in a fixed
// order (S0, S1, S2, S3, then S0 again), one step per clk_a_i edge on which next_i is high;
// domain b (clk_b_i) shows the state on sel_o (the state's code, as the source encodes it).
// Fix: the source keeps its state in a code that changes one bit per step (Gray or Johnson)
// and the whole code crosses through one cdc_sync_bus, so the destination sees each state
// or the one before it, never a mix of two.
module ring_select (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       next_i,
  output wire [3:0] sel_o
);

  // ---------------- domain a (clk_a_i): the source state ----------------
  // the state number in a unit-distance code (one bit per step)
  reg [1:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 2'b00;
    else if (next_i) begin
      case (state_q)
        2'b00: state_q <= 2'b01;  // S0 -> S1
        2'b01: state_q <= 2'b11;  // S1 -> S2
        2'b11: state_q <= 2'b10;  // S2 -> S3
        2'b10: state_q <= 2'b00;  // S3 -> S0
        default: state_q <= 2'b00;
      endcase
    end
  end

  // ---------------- crossing: the whole code through one synchronizer ----------------
  wire [1:0] state_s;
  cdc_sync_bus #(.WIDTH(2)) u_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q), .q_o(state_s));

  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [3:0] sel_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) sel_q <= 4'b0001;
    else begin
      case (state_s)
      2'b00: sel_q <= 4'b0001;  // S0
      2'b01: sel_q <= 4'b0010;  // S1
      2'b10: sel_q <= 4'b1000;  // S3
      2'b11: sel_q <= 4'b0100;  // S2
      default: sel_q <= sel_q;  // not a code of the source: keep the last state
      endcase
    end
  end
  assign sel_o = sel_q;
endmodule
