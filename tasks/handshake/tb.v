// Testbench of the handshake task (hidden from the agent).
// Stimulus: the requester's user raises start_i after a random idle gap and holds it until it
// is taken (start_i && ready_o on a clk_a edge). Plusarg gap_max bounds the idle gap (cycles).
// Invariant checked (the bug report's): every request taken is served exactly once and then
// acknowledged exactly once, in that order, and no request waits longer than wd_a clk_a plus
// wd_slow clk_b cycles (a hang; a bound in cycles of each clock holds at every ratio, so it also
// holds on the hidden seeds' ratio excursions, cdc_env/sim/seeds.py). At least min_done requests must complete in a run of 400 clk_b cycles (BUG.md: one per 20 on average; scaled by
// run_pct on a shortened excursion seed), or the design does not keep up.
// Every output is checked: done_o and served_o by the counts above (each pulse is counted, so a
// pulse held two cycles counts twice); ready_o must be low while a request is outstanding
// (sampled 1 ps after each clk_a edge, after done_o is counted) and must return high within wd_a
// clk_a plus wd_slow clk_b cycles of the requester becoming idle (the last acknowledgement, or
// reset release).
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR hs_tb
module hs_tb;
`include "cdc_tb.vh"
  reg        start = 1'b0;
  wire       ready, done, served;
  reg [31:0] rng_a;
  reg [31:0] gap = 32'd0;
  reg [31:0] gap_max, min_done, run_pct, wd_slow, wd_a;
  reg [31:0] taken = 32'd0, served_n = 32'd0, done_n = 32'd0;
  reg [63:0] t_taken = 64'd0;
  reg [63:0] t_idle = 64'd0;    // when the requester last became idle (reset release, last done)
  reg [63:0] t_wd = 64'd0;      // wd_a clk_a + wd_slow clk_b cycles in ps (set at the first clk_a edge out of reset)
  reg [63:0] hang_k = 64'd0;    // whole clk_a periods in t_wd
  reg [63:0] hang_left = 64'd0; // clk_a edges, from the one that took the request, before a hang
  reg [8*160-1:0] msg;

  hs_top dut (
    .clk_a_i(clk_a), .rst_a_ni(rst_an), .clk_b_i(clk_b), .rst_b_ni(rst_bn),
    .start_i(start), .ready_o(ready), .done_o(done), .served_o(served)
  );

  initial begin
    if (!$value$plusargs("gap_max=%d", gap_max)) gap_max = 32'd8;
    if (!$value$plusargs("min_done=%d", min_done)) min_done = 32'd20;
    // A shortened excursion seed (cdc_env/sim/seeds.py) asks for the same rate: run_pct percent.
    if ($value$plusargs("run_pct=%d", run_pct)) min_done = (min_done * run_pct) / 32'd100;
    if (!$value$plusargs("wd_slow=%d", wd_slow)) wd_slow = 32'd64;
    if (!$value$plusargs("wd_a=%d", wd_a)) wd_a = 32'd32;
    rng_a = stim_key;
  end

  // Requester side: drive start_i, count requests taken and acknowledged.
  // Per-edge code is written for Icarus's cost: $time is read only where it is used, conditions
  // that need it are nested (Icarus evaluates both sides of &&), observations fold in place.
  always @(posedge clk_a) if (rst_an && !run_over) begin
    if (t_wd == 64'd0) begin
      t_wd = wd_slow * 2 * half_b + wd_a * 2 * half_a;
      hang_k = t_wd / (2 * half_a);
      if (t_idle == 64'd0) t_idle = $time + 64'd1;  // the first output sample, below
    end
    `CDC_FOLD({60'd1, ready, done, start, 1'b1})
    if (start && ready) begin
      taken = taken + 32'd1;
      t_taken = $time;
      hang_left = hang_k + 64'd1;
      `CDC_NOTE_CHECK
      if (taken != done_n + 32'd1) begin
        $sformat(msg, "request %0d taken while %0d still unacknowledged", taken, taken - done_n - 1);
        tb_fail(msg);
      end
      // Next value of start_i (here and below).
      start <= 1'b0;
      rng_a = xs32(rng_a);
      gap = rng_a % (gap_max + 32'd1);
    end else if (!start) begin
      if (gap == 32'd0) start <= 1'b1;
      else gap = gap - 32'd1;
    end
    // Hang: $time - t_taken > t_wd, counted in clk_a edges (this process runs on every one, at
    // t_taken + 2*half_a*m on the m-th after the request was taken): it fails at m = hang_k + 1.
    if (taken > done_n) if (hang_left != 64'd0) hang_left = hang_left - 64'd1;
    else begin
      $sformat(msg, "hang: request %0d not acknowledged %0d ps after it was taken", taken, $time - t_taken);
      tb_fail(msg);
    end
    // Outputs are sampled 1 ps after their own clock edge (a time no clock edge can share), so
    // the order of samples across domains is the real order of the register updates. (The same
    // process as the requester's: one wake-up per clk_a edge instead of two.)
    #1;
    if ((^{ready, done}) === 1'bx) tb_fail("X or Z on an output: ready_o/done_o");
    if (done) begin
      t_idle = $time;
      done_n = done_n + 32'd1;
      `CDC_NOTE_CHECK
      if (done_n > served_n) begin
        $sformat(msg, "request %0d acknowledged before it was served (served %0d)", done_n, served_n);
        tb_fail(msg);
      end
    end
    if (taken > done_n) begin
      if (ready) begin
        $sformat(msg, "ready_o high while request %0d is unacknowledged", taken);
        tb_fail(msg);
      end
    end else if (!ready) if (taken == done_n) if (($time - t_idle) > t_wd) begin
      $sformat(msg, "ready_o low %0d ps after the requester became idle (%0d requests done)",
               $time - t_idle, done_n);
      tb_fail(msg);
    end
  end

  // Acknowledger side: every served pulse must belong to a taken request.
  always @(posedge clk_b) if (rst_bn && !run_over) begin
    #1;
    if ((^served) === 1'bx) tb_fail("X or Z on an output: served_o");  // ^z is x; Verilator reads 1'bz as 0
    `CDC_FOLD({63'd2, served})
    if (served) begin
      served_n = served_n + 32'd1;
      `CDC_NOTE_CHECK
      if (served_n > taken) begin
        $sformat(msg, "served %0d requests but only %0d were taken", served_n, taken);
        tb_fail(msg);
      end
    end
  end

  task final_check;
    begin
      if (served_n < done_n || served_n > taken) begin
        $sformat(msg, "end of run: taken %0d, served %0d, acknowledged %0d", taken, served_n, done_n);
        tb_fail(msg);
      end
      if (done_n < min_done) begin
        $sformat(msg, "only %0d requests completed (need %0d): no progress", done_n, min_done);
        tb_fail(msg);
      end
    end
  endtask
endmodule
