// task: handshake
// expect: pass
// what: the same block with the second edge as an asynchronous reset (an if-else on it first): synthesis takes it
module hs_top (
  input  wire clk_a_i, input wire rst_a_ni, input wire clk_b_i, input wire rst_b_ni,
  input  wire start_i, output wire ready_o, output reg done_o, output reg served_o
);
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) done_o <= 1'b0;
    else done_o <= 1'b0;
  assign ready_o = 1'b1;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) served_o <= 1'b0;
    else served_o <= 1'b0;
endmodule
