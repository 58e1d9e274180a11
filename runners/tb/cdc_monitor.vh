// cdc_monitor.vh -- what the synchronizer primitives share within one simulation (included
// inside the module that the macro CDC_SYNC_MONITOR names; every testbench gets it through
// cdc_tb.vh). cdc_upd_t_a / cdc_upd_t_b hold the time at which any synchronizer input from
// domain a / b last changed: the source domain's "latest update" of the late-settling model
// (tasks/common/cdc_sync.v). Written only by the primitives, read only by them.

  reg [63:0] cdc_upd_t_a = 64'd0;
  reg [63:0] cdc_upd_t_b = 64'd0;

  task cdc_src_update(input src_is_a);
    if (src_is_a) cdc_upd_t_a = $time;
    else cdc_upd_t_b = $time;
  endtask
