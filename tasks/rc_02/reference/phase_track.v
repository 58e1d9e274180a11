// phase_track -- a state machine in domain a (clk_a_i) that steps through 8 states in a fixed
// order (P0, P1, P2, P3, P4, P5, P6, P7, then P0 again), one step per clk_a_i edge on which
// advance_i is high; domain b (clk_b_i) shows the state on phase_o (the state's code, as the
// source encodes it).
// Fix: the source keeps its state in a code that changes one bit per step (Gray or Johnson)
// and the whole code crosses through one cdc_sync_bus, so the destination sees each state
// or the one before it, never a mix of two.
module phase_track (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       advance_i,
  output wire [2:0] phase_o
);

  // ---------------- domain a (clk_a_i): the source state ----------------
  // the state number in a unit-distance code (one bit per step)
  reg [2:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 3'b000;
    else if (advance_i) begin
      case (state_q)
        3'b000: state_q <= 3'b001;  // P0 -> P1
        3'b001: state_q <= 3'b011;  // P1 -> P2
        3'b011: state_q <= 3'b010;  // P2 -> P3
        3'b010: state_q <= 3'b110;  // P3 -> P4
        3'b110: state_q <= 3'b111;  // P4 -> P5
        3'b111: state_q <= 3'b101;  // P5 -> P6
        3'b101: state_q <= 3'b100;  // P6 -> P7
        3'b100: state_q <= 3'b000;  // P7 -> P0
        default: state_q <= 3'b000;
      endcase
    end
  end

  // ---------------- crossing: the whole code through one synchronizer ----------------
  wire [2:0] state_s;
  cdc_sync_bus #(.WIDTH(3)) u_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q), .q_o(state_s));

  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [2:0] phase_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) phase_q <= 3'b000;
    else begin
      case (state_s)
      3'b000: phase_q <= 3'b000;  // P0
      3'b001: phase_q <= 3'b001;  // P1
      3'b010: phase_q <= 3'b011;  // P3
      3'b011: phase_q <= 3'b010;  // P2
      3'b100: phase_q <= 3'b111;  // P7
      3'b101: phase_q <= 3'b110;  // P6
      3'b110: phase_q <= 3'b100;  // P4
      3'b111: phase_q <= 3'b101;  // P5
      default: phase_q <= phase_q;  // not a code of the source: keep the last state
      endcase
    end
  end
  assign phase_o = phase_q;
endmodule
