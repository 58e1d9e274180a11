// Wrapper for the cocotb unit tests of the synchronizer primitives: an 8-bit cdc_sync_bus and a
// cdc_sync_pulse, both into dst_clk. Clocks and inputs are driven from Python.
`timescale 1ps / 1ps
module prim_top (
  input  wire       src_clk,
  input  wire       dst_clk,
  input  wire       rst_n,
  input  wire [7:0] d,
  output wire [7:0] q,
  input  wire       pulse,
  output wire       pulse_q
);
  cdc_sync_bus #(.WIDTH(8)) u_bus (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d), .q_o(q));
  cdc_sync_pulse u_pulse (
    .src_clk_i(src_clk), .src_rst_ni(rst_n), .pulse_i(pulse),
    .dst_clk_i(dst_clk), .dst_rst_ni(rst_n), .pulse_o(pulse_q)
  );
endmodule
