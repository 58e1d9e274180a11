// hs_top -- request/acknowledge handshake between a fast requester (clk_a) and a slow
// acknowledger (clk_b), four-phase: req rises, ack rises, req falls, ack falls. Every crossing
// is a level held until the other side answers, so the protocol is latency-insensitive.
module hs_top (
  input  wire clk_a_i,
  input  wire rst_a_ni,
  input  wire clk_b_i,
  input  wire rst_b_ni,
  input  wire start_i,
  output wire ready_o,
  output reg  done_o,
  output reg  served_o
);
  localparam [1:0] A_IDLE = 2'd0, A_REQ = 2'd1, A_REL = 2'd2;
  reg  [1:0] a_state_q;
  reg        req_q;
  wire       ack_s;

  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) begin
      a_state_q <= A_IDLE;
      req_q     <= 1'b0;
      done_o    <= 1'b0;
    end else begin
      done_o <= 1'b0;
      case (a_state_q)
        A_IDLE: if (start_i) begin req_q <= 1'b1; a_state_q <= A_REQ; end
        A_REQ:  if (ack_s) begin req_q <= 1'b0; done_o <= 1'b1; a_state_q <= A_REL; end
        A_REL:  if (!ack_s) a_state_q <= A_IDLE;
        default: a_state_q <= A_IDLE;
      endcase
    end
  end
  assign ready_o = (a_state_q == A_IDLE);

  wire req_s;
  reg  ack_q;

  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) begin
      ack_q    <= 1'b0;
      served_o <= 1'b0;
    end else begin
      served_o <= req_s && !ack_q;
      ack_q    <= req_s;
    end
  end

  cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));
  cdc_sync_bit u_ack_sync (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(ack_q), .q_o(ack_s));
endmodule
