// The library's side of a split Verilator build (cdc_env/sim/verilator.py, "Split build"):
// included in the library's top module, which carries the testbench's module name and
// instantiates the design under the testbench's instance name (so every %m is the one of a
// build of one model). The primitives' monitor calls (trusted/hdl/cdc_monitor.vh) land here and
// go on, through the C++ main (CDC_SPLIT_DESIGN), to the testbench's exports (cdc_split_tb.vh).
  import "DPI-C" context task cdc_dpi_sync_note(input int n);
  import "DPI-C" context task cdc_dpi_src_edge(input bit dst_is_a, output longint unsigned edge_t);
  import "DPI-C" context task cdc_dpi_sync_fail(input bit [8*160-1:0] why);
  import "DPI-C" context task cdc_dpi_recovery_fail();
  import "DPI-C" context task cdc_dpi_bus_note(input int n, input bit [8*80-1:0] who);
  task cdc_sync_note(input integer n); cdc_dpi_sync_note(n); endtask
  task cdc_src_edge(input dst_is_a, output [63:0] edge_t);
    longint unsigned e;
    cdc_dpi_src_edge(dst_is_a, e);
    edge_t = e;
  endtask
  task cdc_sync_fail(input [8*160-1:0] why); cdc_dpi_sync_fail(why); endtask
  task cdc_recovery_fail; cdc_dpi_recovery_fail(); endtask
  task cdc_bus_note(input integer n, input [8*80-1:0] who); cdc_dpi_bus_note(n, who); endtask
