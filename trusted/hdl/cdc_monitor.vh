// cdc_monitor.vh -- the interface between the synchronizer primitives (trusted/hdl/cdc_sync.v)
// and the module that the macro CDC_SYNC_MONITOR names (every task testbench, through
// cdc_tb.vh; the cocotb wrapper tests/cocotb/prim_top.v). The includer provides five tasks,
// which the primitives call by hierarchical name:
//
//   cdc_src_edge(dst_is_a, edge_t)
//       the time of the latest edge, rising or falling, at or before now, of the SOURCE clock of
//       a synchronizer clocked by task clock a (dst_is_a = 1, source clock b) or b (source a);
//       ~0 when that clock has had no edge yet. The testbench computes it from its own clock
//       parameters, so no design signal and no other synchronizer can move it: which crossings
//       may settle late is not the design's to choose.
//   cdc_sync_fail(msg)
//       a synchronizer saw what its contract excludes (X or Z on d_i, a hierarchical name too
//       long to key); the testbench fails the run once both resets are released.
//   cdc_sync_note(n)
//       n > 0 bits of one synchronizer input changed for the first time in the current time step
//       (one source clock edge). The testbench sums them over every instance per time step and,
//       on hidden seeds, fails the run when the sum exceeds its limit (CDC_EDGE_BITS).
//   cdc_recovery_fail
//       a design flop (cdc_arst_ff, trusted/hdl/cdc_reset.v) left its asynchronous reset within an
//       eighth of a period before its clock edge and changes on that edge (a recovery violation);
//       the testbench fails the run on hidden seeds (+cdc_gray_check=1).
//   cdc_bus_note(n, who)
//       n > 1 bits of one cdc_sync_bus input (instance name `who`, its last 80 characters)
//       changed in one time step, i.e. on one source clock edge: the one-bit-per-source-edge
//       rule. The testbench fails the run on hidden seeds (+cdc_gray_check=1).
//
// This file declares what the includer shares with the primitives (nothing at present beyond
// the tasks above); it is kept so that every includer names the same interface.
