// task: handshake
// expect: POL-INITIAL
// what: a bit flop without a reset (a two-state type starts at 0: an initial value with no initializer written)
// hs_top -- request/acknowledge handshake between a fast requester (clk_a) and a slow
// acknowledger (clk_b). The requester accepts a request from its user (start_i while ready_o),
// signals it to the acknowledger, and pulses done_o once the acknowledger has taken it.
// The acknowledger pulses served_o once per request it takes.
//
// Protocol: two-phase. The requester toggles req_q once per request; the acknowledger serves
// a request whenever its synchronized copy of req_q differs from the last value it served, and
// answers by copying it into ack_q. A request is acknowledged when the synchronized ack_q equals
// req_q again. Both crossings are levels that stay put until the other side answers, so the
// protocol does not depend on synchronizer latency.
module hs_top (
  input  wire clk_a_i,    // requester clock (fast)
  input  wire rst_a_ni,   // requester reset, active low
  input  wire clk_b_i,    // acknowledger clock (slow)
  input  wire rst_b_ni,   // acknowledger reset, active low
  input  wire start_i,    // clk_a: request; taken on a clk_a edge where start_i && ready_o
  output wire ready_o,    // clk_a: the requester is idle
  output reg  done_o,     // clk_a: one-cycle pulse, the request was acknowledged
  output reg  served_o    // clk_b: one-cycle pulse, the acknowledger took a request
);
  // ---------------- requester (clk_a) ----------------
  reg  req_q;      // toggles once per request
  reg  busy_q;
  wire ack_s;      // acknowledger's ack, synchronized into clk_a

  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) begin
      req_q  <= 1'b0;
      busy_q <= 1'b0;
      done_o <= 1'b0;
    end else begin
      done_o <= 1'b0;
      if (!busy_q && start_i) begin
        req_q  <= ~req_q;
        busy_q <= 1'b1;
      end else if (busy_q && ack_s == req_q) begin
        busy_q <= 1'b0;
        done_o <= 1'b1;
      end
    end
  end
  bit dly_q;
  always @(posedge clk_a_i) dly_q <= done_o;
  assign ready_o = !busy_q && !(dly_q && busy_q);

  // ---------------- acknowledger (clk_b) ----------------
  wire req_s;      // requester's req_q, synchronized into clk_b
  reg  seen_q;     // the request toggle last served
  reg  ack_q;      // the request toggle acknowledged (a level)

  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) begin
      seen_q   <= 1'b0;
      ack_q    <= 1'b0;
      served_o <= 1'b0;
    end else begin
      served_o <= 1'b0;
      if (req_s != seen_q) begin
        seen_q   <= req_s;
        ack_q    <= req_s;
        served_o <= 1'b1;
      end
    end
  end

  // ---------------- crossings ----------------
  cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));
  cdc_sync_bit u_ack_sync (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(ack_q), .q_o(ack_s));
endmodule
