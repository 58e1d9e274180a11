// slot_index -- a state machine in domain a (clk_a_i) that steps through 4 states in a fixed
// order (SLOT0, SLOT1, SLOT2, SLOT3, then SLOT0 again), one step per clk_a_i edge on which
// rotate_i is high; domain b (clk_b_i) shows the state on slot_o (the state's number: SLOT0 is
// 0).
module slot_index (
  input  wire       clk_a_i,
  input  wire       rst_a_ni,
  input  wire       clk_b_i,
  input  wire       rst_b_ni,
  input  wire       rotate_i,
  output wire [1:0] slot_o
);

  // ---------------- domain a (clk_a_i): the source state ----------------
  // the state number in a unit-distance code (one bit per step)
  reg [1:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 2'b00;
    else if (rotate_i) begin
      case (state_q)
        2'b00: state_q <= 2'b01;  // SLOT0 -> SLOT1
        2'b01: state_q <= 2'b11;  // SLOT1 -> SLOT2
        2'b11: state_q <= 2'b10;  // SLOT2 -> SLOT3
        2'b10: state_q <= 2'b00;  // SLOT3 -> SLOT0
        default: state_q <= 2'b00;
      endcase
    end
  end

  // ---------------- crossing: the whole code through one synchronizer ----------------
  wire [1:0] state_s;
  cdc_sync_bus #(.WIDTH(2)) u_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(state_q), .q_o(state_s));

  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [1:0] slot_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) slot_q <= 2'b00;
    else begin
      case (state_s)
      2'b00: slot_q <= 2'b00;  // SLOT0
      2'b01: slot_q <= 2'b01;  // SLOT1
      2'b10: slot_q <= 2'b11;  // SLOT3
      2'b11: slot_q <= 2'b10;  // SLOT2
      default: slot_q <= slot_q;  // not a code of the source: keep the last state
      endcase
    end
  end
  assign slot_o = slot_q;
endmodule
