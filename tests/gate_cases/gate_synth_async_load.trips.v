// task: handshake
// expect: GATE-SYNTH
// what: two edges in one block that are not a clock and an asynchronous reset: slang parses it, synthesis refuses it (the message names the line)
module hs_top (
  input  wire clk_a_i, input wire rst_a_ni, input wire clk_b_i, input wire rst_b_ni,
  input  wire start_i, output wire ready_o, output reg done_o, output reg served_o
);
  always @(posedge clk_a_i or posedge start_i) done_o <= ~done_o;
  assign ready_o = 1'b1;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) served_o <= 1'b0;
    else served_o <= 1'b0;
endmodule
