// Wrapper for the cocotb unit tests of the synchronizer primitives: an 8-bit cdc_sync_bus, the
// same bus through eight cdc_sync_bit, and a cdc_sync_pulse, all into dst_clk. Python drives it.
`timescale 1ps / 1ps
// The primitives' shared state lives here (as it does in every task testbench).
`define CDC_SYNC_MONITOR prim_top
module prim_top (
  input  wire       src_clk,
  input  wire       dst_clk,
  input  wire       rst_n,
  input  wire [7:0] d,
  output wire [7:0] q,
  output wire [7:0] q_bits,
  input  wire       pulse,
  output wire       pulse_q
);
`include "cdc_monitor.vh"
  cdc_sync_bus #(.WIDTH(8)) u_bus (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d), .q_o(q));
  // The same bus through one cdc_sync_bit per bit (a Gray pointer crossed the textbook way).
  genvar k;
  generate
    for (k = 0; k < 8; k = k + 1) begin : g_bit
      cdc_sync_bit u_bit (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d[k]), .q_o(q_bits[k]));
    end
  endgenerate
  cdc_sync_pulse u_pulse (
    .src_clk_i(src_clk), .src_rst_ni(rst_n), .pulse_i(pulse),
    .dst_clk_i(dst_clk), .dst_rst_ni(rst_n), .pulse_o(pulse_q)
  );
endmodule
