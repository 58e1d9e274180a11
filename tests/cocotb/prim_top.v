// Wrapper for the cocotb unit tests of the synchronizer primitives: an 8-bit cdc_sync_bus, the
// same bus through eight cdc_sync_bit, two more 8-bit buses with long names, and a
// cdc_sync_pulse, all into dst_clk. Python drives it.
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
  output wire       pulse_q,
  output wire [7:0] q_l1,
  output wire [7:0] q_l2
);
`include "cdc_monitor.vh"
  // dst_clk edges fall at 1 (mod 4) ps, so the primitives take it for task clock a and ask for
  // the latest edge of clock b: that of src_clk, recorded as it happens (either polarity).
  reg [63:0] src_edge_t = 64'hffffffffffffffff;
  always @(posedge src_clk) src_edge_t = $time;
  always @(negedge src_clk) src_edge_t = $time;
  task cdc_src_edge(input dst_is_a, output [63:0] edge_t);
    edge_t = src_edge_t;
  endtask
  // What the primitives report, counted for the tests to read (a testbench fails the run instead).
  integer sync_fails = 0;   // cdc_sync_fail calls while out of reset
  integer bus_notes = 0;    // cdc_bus_note calls (n > 1 bits of one bus changed in one time step)
  integer bus_note_max = 0;
  task cdc_sync_fail(input [8*160-1:0] why);
    if (rst_n) begin
      sync_fails = sync_fails + 1;
      $display("prim_top: %0s", why);
    end
  endtask
  integer recovery_fails = 0;  // cdc_recovery_fail calls (cdc_arst_ff's recovery check)
  task cdc_recovery_fail;
    recovery_fails = recovery_fails + 1;
  endtask
  integer sync_notes = 0;   // cdc_sync_note calls (the per-time-step sum is the testbench's)
  task cdc_sync_note(input integer n);
    sync_notes = sync_notes + 1;
  endtask
  task cdc_bus_note(input integer n, input [8*80-1:0] who);
    begin
      bus_notes = bus_notes + 1;
      if (n > bus_note_max) bus_note_max = n;
    end
  endtask
  cdc_sync_bus #(.WIDTH(8)) u_bus (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d), .q_o(q));
  // The same bus through one cdc_sync_bit per bit (a Gray pointer crossed the textbook way).
  genvar k;
  generate
    for (k = 0; k < 8; k = k + 1) begin : g_bit
      cdc_sync_bit u_bit (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d[k]), .q_o(q_bits[k]));
    end
  endgenerate
  // Two buses on the same input whose hierarchical names share their last 300 characters: the
  // instance key hashes the whole name, so their late choices must differ.
  generate
    if (1) begin : g_l1
      cdc_sync_bus #(.WIDTH(8)) long_name_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d), .q_o(q_l1));
    end
    if (1) begin : g_l2
      cdc_sync_bus #(.WIDTH(8)) long_name_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz (.clk_i(dst_clk), .rst_ni(rst_n), .d_i(d), .q_o(q_l2));
    end
  endgenerate
  cdc_sync_pulse u_pulse (
    .src_clk_i(src_clk), .src_rst_ni(rst_n), .pulse_i(pulse),
    .dst_clk_i(dst_clk), .dst_rst_ni(rst_n), .pulse_o(pulse_q)
  );
endmodule
