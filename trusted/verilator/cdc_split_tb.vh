// The testbench's side of a split Verilator build (cdc_env/sim/verilator.py, "Split build"):
// appended to the testbench's copy of cdc_tb.vh, inside the testbench module, when the design
// is a library model of its own. The synchronizer primitives in that library call the five
// monitor tasks of trusted/hdl/cdc_monitor.vh on their own copy of the testbench's module
// (cdc_split_lib.vh), which forwards each call through the C++ main (cdc_batch_main.cpp,
// CDC_SPLIT_DESIGN) to the DPI exports below: the same tasks of this testbench, called at the
// same point of the simulation as in a build of one model.
  task cdc_x_sync_note(input int n); cdc_sync_note(n); endtask
  task cdc_x_src_edge(input bit dst_is_a, output longint unsigned edge_t);
    reg [63:0] e;
    cdc_src_edge(dst_is_a, e);
    edge_t = e;
  endtask
  task cdc_x_sync_fail(input bit [8*160-1:0] why); cdc_sync_fail(why); endtask
  task cdc_x_recovery_fail(); cdc_recovery_fail; endtask
  task cdc_x_bus_note(input int n, input bit [8*80-1:0] who); cdc_bus_note(n, who); endtask
  export "DPI-C" task cdc_x_sync_note;
  export "DPI-C" task cdc_x_src_edge;
  export "DPI-C" task cdc_x_sync_fail;
  export "DPI-C" task cdc_x_recovery_fail;
  export "DPI-C" task cdc_x_bus_note;
