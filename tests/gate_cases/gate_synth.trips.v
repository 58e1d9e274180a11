// task: handshake
// expect: GATE-SYNTH
// what: a real-valued variable: Yosys's slang frontend stops on it (an assertion failure that ends the synthesis child); the crash is a refusal with a clear message, never a traceback
module hs_top (
  input  wire clk_a_i, input wire rst_a_ni, input wire clk_b_i, input wire rst_b_ni,
  input  wire start_i, output wire ready_o, output reg done_o, output reg served_o
);
  real r;
  always @(posedge clk_a_i) begin
    r = r + 1.5;
    done_o <= (r > 2.0);
  end
  assign ready_o = 1'b1;
  always @(posedge clk_b_i) served_o <= 1'b0;
endmodule
