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
  // a 4-bit one-hot state
  reg [3:0] state_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) state_q <= 4'b0001;
    else if (rotate_i) begin
      case (state_q)
        4'b0001: state_q <= 4'b0010;  // SLOT0 -> SLOT1
        4'b0010: state_q <= 4'b0100;  // SLOT1 -> SLOT2
        4'b0100: state_q <= 4'b1000;  // SLOT2 -> SLOT3
        4'b1000: state_q <= 4'b0001;  // SLOT3 -> SLOT0
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

  // ---------------- domain b (clk_b_i): the decoded state ----------------
  reg [1:0] slot_q;
  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) slot_q <= 2'b00;
    else begin
      case (state_s)
      4'b0000: slot_q <= 2'b00;  // SLOT0
      4'b0001: slot_q <= 2'b00;  // SLOT0
      4'b0010: slot_q <= 2'b01;  // SLOT1
      4'b0011: slot_q <= 2'b01;  // SLOT1
      4'b0100: slot_q <= 2'b10;  // SLOT2
      4'b0101: slot_q <= 2'b10;  // SLOT2
      4'b0110: slot_q <= 2'b11;  // SLOT3
      4'b0111: slot_q <= 2'b11;  // SLOT3
      4'b1000: slot_q <= 2'b11;  // SLOT3
      4'b1001: slot_q <= 2'b11;  // SLOT3
      4'b1010: slot_q <= 2'b11;  // SLOT3
      4'b1011: slot_q <= 2'b11;  // SLOT3
      4'b1100: slot_q <= 2'b11;  // SLOT3
      4'b1101: slot_q <= 2'b11;  // SLOT3
      4'b1110: slot_q <= 2'b11;  // SLOT3
      4'b1111: slot_q <= 2'b11;  // SLOT3
      default: slot_q <= 2'b00;
      endcase
    end
  end
  assign slot_o = slot_q;
endmodule
