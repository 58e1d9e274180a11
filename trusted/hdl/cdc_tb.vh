// cdc_tb.vh -- the testbench harness shared by every task's testbench (included inside the
// testbench module). It owns everything the verdict depends on:
//   * two clocks from plusargs, in integer picoseconds, arranged so that no two edges ever
//     coincide: every clk_a edge falls at a time = 1 (mod 4), every clk_b edge at 3 (mod 4),
//     resets assert and release and the run stops at even times;
//   * the reset sequence (tasks/common/CONTRACT.md, "Reset sequence"): both resets start high,
//     fall together at t = T_RST_ASSERT (2 ps, before any clock edge: ofs_a, ofs_b >= 3), so
//     every asynchronous-reset flop sees a real assertion edge at once, and each rises half a
//     period (+1 ps) after the first rising edge of its own clock at or after the later of the
//     two clocks' fourth rising edges. Each domain is thus held in reset for at least 4 edges of
//     its own clock, and no domain leaves reset before the other has had 4 edges in reset, so
//     every flop of both domains (asynchronous or synchronous reset) is known before either
//     side runs;
//   * the verdict, handed to trusted code outside the Verilog that holds the run's nonce;
//   * the trace hash (FNV-1a over 64-bit words; fold() is called by the task's monitors);
//   * the check counter -- a run that checked nothing fails;
//   * the verdict line: "CDCV <nonce> PASS|FAIL checks=<n> hash=<h> t=<ps> msg=<text>", printed
//     once, then $finish. The grader accepts exactly one line carrying its nonce.
// Every testbench defines CDC_SYNC_MONITOR as its own module name before including this file
// (the tasks the primitives call, declared by cdc_monitor.vh: cdc_src_edge, cdc_sync_fail,
// cdc_sync_note and cdc_bus_note, below).
// The including testbench provides `task final_check;` (end-of-run conditions) and calls
// fold(), note_check() and tb_fail(msg).
// Plusargs read here: half_a, half_b, ofs_a, ofs_b, t_end, stim_key,
// cdc_gray_check (optional, default 0).

`include "cdc_monitor.vh"

  reg        clk_a = 1'b0;
  reg        clk_b = 1'b0;
  // Resets start deasserted and fall at T_RST_ASSERT: a real negedge, the same on both
  // simulators (a reset held low from time 0 has no edge, and an asynchronous-reset flop then
  // stays X until its first clock edge).
  localparam [63:0] T_RST_ASSERT = 64'd2;
  localparam [63:0] RST_EDGES = 64'd4;  // rising edges of each clock before either reset releases
  reg        rst_seen = 1'b0;  // the resets have been asserted (X before that is not a design's)
  reg        rst_an = 1'b1;
  reg        rst_bn = 1'b1;
  reg [63:0] half_a, half_b, ofs_a, ofs_b, t_end;
  reg [63:0] t_known, t_rel_a, t_rel_b;
  // stim_key is set by its declaration (static initialisation runs before every initial block in
  // both simulators), so a testbench's own initial block may read it at time 0 without racing
  // the initial block below -- Verilator and Icarus order initial blocks differently.
  reg [31:0] stim_key = cdc_plusarg_u32("stim_key=%d");
  reg [63:0] trace_h = 64'hcbf29ce484222325;
  reg [31:0] checks = 32'd0;
  reg        run_over = 1'b0;

  // `CDC_FOLD(v) is fold(v) written in place, and `CDC_FOLD_KNOWN(v) folds an unknown (X or Z)
  // v as a fixed marker, so the hash stays a number: for per-edge code, where a task call costs
  // Icarus as much as the fold itself (v is a 64-bit expression; the macros are statements).
  // The XOR of FNV-1a is written (h | v) - (h & v): Icarus 11 XORs a vector bit by bit (~110
  // instructions a bit, 7,000 for 64) but ORs, ANDs and subtracts it a word at a time. It is the
  // same number when neither side has an X or Z bit; when one has, both forms are unknown after
  // the multiplication (an arithmetic operand with an X or Z bit makes the whole result X), so
  // the hash is the same in every case. `CDC_FOLD_KNOWN's test for an X or Z bit, likewise:
  // v - v is unknown exactly when v has one (^v === 1'bx, without the bit-by-bit reduction).
`define CDC_FOLD(v) begin fold_x = (v); trace_h = ((trace_h | fold_x) - (trace_h & fold_x)) * 64'h00000100000001b3; end
`define CDC_FOLD_KNOWN(v) begin fold_v = (v); `CDC_FOLD(((fold_v - fold_v) !== 64'd0) ? 64'hbad0bad0bad0bad0 : fold_v) end
  reg [63:0] fold_v, fold_x;
  task fold(input [63:0] v);
    `CDC_FOLD(v)
  endtask

`define CDC_NOTE_CHECK checks = checks + 32'd1;
  task note_check;
    `CDC_NOTE_CHECK
  endtask

  // The verdict line is printed by trusted code outside the Verilog, which alone holds the run's
  // nonce (read from a pipe before any Verilog runs; never a plusarg, env var or file): the C++
  // main of a Verilator build (DPI cdc_verdict) or the Icarus VPI module ($cdc_verdict). Both
  // accept a call only from this task in the top-level testbench.
`ifdef VERILATOR
  import "DPI-C" context function void cdc_verdict(input bit pass, input int unsigned n_checks,
                                                   input longint unsigned hash, input longint unsigned t,
                                                   input string msg);
`endif
  task emit_verdict(input pass, input [8*160-1:0] msg);
    begin
      if (!run_over) begin
        run_over = 1'b1;
`ifdef VERILATOR
        cdc_verdict(pass, checks, trace_h, $time, $sformatf("%0s", msg));
`else
        $cdc_verdict(pass, checks, trace_h, $time, msg);
`endif
        $finish;
      end
    end
  endtask

  task tb_fail(input [8*160-1:0] msg);
    emit_verdict(1'b0, msg);
  endtask

  // One-bit-per-source-edge rule summed over every synchronizer, in every family. Every
  // synchronizer instance calls cdc_sync_note(n) with the bits of its d_i that changed for the
  // first time in the current time step (trusted/hdl/cdc_sync.v). No two clock edges coincide,
  // so one time step is one source clock edge, and the sum over every synchronizer is what that
  // edge changed across all crossings into the other domain. With +cdc_gray_check=1 (the grader
  // passes it on hidden seeds) a sum above CDC_EDGE_BITS, once both resets are released, fails
  // the seed. CDC_EDGE_BITS is 1 unless the testbench defines it before including this file (the
  // event task: 2, an event and its kind; each task's BUG.md states its limit). Counting is by
  // primitive instance: renaming, splitting a value across primitives or sending copies of one
  // bit through separate synchronizers changes nothing.
`ifndef CDC_EDGE_BITS
`define CDC_EDGE_BITS 1
`endif
  reg        gray_check_on;
  reg [63:0] gray_t = 64'hffffffffffffffff;
  reg [31:0] gray_bits = 32'd0;
  reg [8*160-1:0] msg_gray;

  reg [63:0] gray_now;
  task cdc_sync_note(input integer n);
    begin
      if (rst_seen && rst_an && rst_bn && !run_over && n > 0) begin
        gray_now = $time;  // read once (Icarus pays for each read)
        if (gray_now != gray_t) begin
          gray_t = gray_now;
          gray_bits = 32'd0;
        end
        gray_bits = gray_bits + n;
        if (gray_check_on && gray_bits > `CDC_EDGE_BITS) begin
          $sformat(msg_gray, "gray check: %0d synchronizer input bits changed on one source clock edge at t=%0d (at most %0d)",
                   gray_bits, $time, `CDC_EDGE_BITS);
          tb_fail(msg_gray);
        end
      end
    end
  endtask

  // ---- Late-settling model: what the primitives read and call (cdc_monitor.vh) ----
  // The time of the latest edge, rising or falling, at or before now, of the source clock of a
  // synchronizer clocked by clock a (dst_is_a) or b: the other task clock. Computed from the
  // clock parameters (the clocks below have an edge at ofs + k*half, k = 0, 1, ...), so it costs
  // nothing per clock edge and nothing a design does can move it. Either polarity counts: a
  // source register clocked on the falling edge is timed like one clocked on the rising edge.
  task cdc_src_edge(input dst_is_a, output [63:0] edge_t);
    reg [63:0] ofs, half, now;
    begin
      now = $time;  // read once (Icarus pays for each read)
      ofs = dst_is_a ? ofs_b : ofs_a;
      half = dst_is_a ? half_b : half_a;
      edge_t = (now < ofs) ? 64'hffffffffffffffff : ofs + ((now - ofs) / half) * half;
    end
  endtask

  // Whether either task clock has an edge (rising or falling) at time t, from the same clock
  // parameters as cdc_src_edge (an edge at ofs + k*half): for a testbench that keeps its own
  // stimulus changes and checks off the clocks' time steps (the reset family's at_clear). A clock
  // a testbench gates only loses edges, so a time this calls free stays free.
  function cdc_clock_edge_at(input [63:0] t);
    cdc_clock_edge_at = (t >= ofs_a && (t - ofs_a) % half_a == 64'd0) ||
                        (t >= ofs_b && (t - ofs_b) % half_b == 64'd0);
  endfunction

  // A synchronizer saw what the contract excludes (X or Z on its input, see CONTRACT.md). Before
  // both resets are released anything goes; after, the seed fails.
  task cdc_sync_fail(input [8*160-1:0] why);
    if (rst_seen && rst_an && rst_bn && !run_over) tb_fail(why);
  endtask

  // The recovery check of the late-release model (trusted/hdl/cdc_reset.v): a flop left its
  // asynchronous reset close before its clock edge and changes on that edge, so it may go
  // metastable and its readers may disagree. With +cdc_gray_check=1 (hidden seeds) the seed fails,
  // whatever the harness resets are doing: no correct design releases a flop out of step and
  // changes it on that edge (the provided cdc_sync_reset's first flop is exempt in the model).
  reg [8*160-1:0] msg_recovery;
  task cdc_recovery_fail;
    if (gray_check_on && !run_over) begin
      $sformat(msg_recovery, "recovery: a flop left its asynchronous reset less than 1/8 period before its clock edge at t=%0d and changes on that edge",
               $time);
      tb_fail(msg_recovery);
    end
  endtask

  // One-bit-per-source-edge rule for every cdc_sync_bus wider than one bit, in every testbench:
  // an instance reports n > 1 when that many bits of its d_i changed in one time step (one source
  // clock edge). With +cdc_gray_check=1 (hidden seeds), once both resets are released, the seed
  // fails. The FIFO family's check below also sums over instances.
  reg [8*160-1:0] msg_bus;
  task cdc_bus_note(input integer n, input [8*80-1:0] who);
    if (gray_check_on && rst_seen && rst_an && rst_bn && !run_over) begin
      $sformat(msg_bus, "gray check: %0d bits of %0s.d_i changed on one source clock edge at t=%0d",
               n, who, $time);
      tb_fail(msg_bus);
    end
  endtask

  // A 32-bit plusarg, or 0 when it is absent (the initial block below reports it missing).
  function [31:0] cdc_plusarg_u32(input [8*32-1:0] fmt);
    reg [31:0] v;
    begin
      if (!$value$plusargs(fmt, v)) v = 32'd0;
      cdc_plusarg_u32 = v;
    end
  endfunction

  // Deterministic stimulus PRNG (xorshift32), one state per caller.
  function [31:0] xs32(input [31:0] x);
    reg [31:0] y, s;
    begin
      y = (x == 32'd0) ? 32'h6d2b79f5 : x;
      s = y << 13; y = (y | s) - (y & s);  // y ^ s (see `CDC_FOLD: Icarus XORs bit by bit)
      s = y >> 17; y = (y | s) - (y & s);
      s = y << 5;  xs32 = (y | s) - (y & s);
    end
  endfunction

  // Reset release of a clock with first edge ofs and half period half: half a period (+1 ps, an
  // even time no edge shares) after its first rising edge at or after t_known.
  function [63:0] rst_release(input [63:0] ofs, input [63:0] half, input [63:0] t_known_i);
    reg [63:0] k;
    begin
      k = (t_known_i - ofs + 2 * half - 1) / (2 * half);
      rst_release = ofs + 2 * half * k + half / 2 + 1;
    end
  endfunction

  initial begin
    if (!$value$plusargs("half_a=%d", half_a) ||
        !$value$plusargs("half_b=%d", half_b) || !$value$plusargs("ofs_a=%d", ofs_a) ||
        !$value$plusargs("ofs_b=%d", ofs_b) || !$value$plusargs("t_end=%d", t_end) ||
        !$value$plusargs("stim_key=%d", stim_key)) begin
      $display("CDCV-SETUP-ERROR missing plusarg");
      $finish;
    end
    if (ofs_a <= T_RST_ASSERT || ofs_b <= T_RST_ASSERT) begin
      $display("CDCV-SETUP-ERROR a clock's first edge is not after the reset assertion");
      $finish;
    end
    // Both clocks' RST_EDGES-th rising edges (at ofs + 2*half*k, k = 0, 1, ...); the later one.
    t_rel_a = ofs_a + 2 * half_a * (RST_EDGES - 1);
    t_rel_b = ofs_b + 2 * half_b * (RST_EDGES - 1);
    t_known = (t_rel_a > t_rel_b) ? t_rel_a : t_rel_b;
    t_rel_a = rst_release(ofs_a, half_a, t_known);
    t_rel_b = rst_release(ofs_b, half_b, t_known);
    gray_check_on = 1'b0;
    if ($value$plusargs("cdc_gray_check=%d", gray_bits)) gray_check_on = (gray_bits != 32'd0);
    gray_bits = 32'd0;
    fork
      begin #(ofs_a); forever begin clk_a = 1'b1; #(half_a); clk_a = 1'b0; #(half_a); end end
      begin #(ofs_b); forever begin clk_b = 1'b1; #(half_b); clk_b = 1'b0; #(half_b); end end
      begin #(T_RST_ASSERT); rst_an = 1'b0; rst_bn = 1'b0; rst_seen = 1'b1; end
      begin #(t_rel_a); rst_an = 1'b1; end
      begin #(t_rel_b); rst_bn = 1'b1; end
      begin
        #(t_end);
        final_check;
        if (checks == 32'd0) tb_fail("no checks were performed");
        else emit_verdict(1'b1, "ok");
      end
    join
  end
