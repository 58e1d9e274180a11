// Testbench of the event-crossing task (hidden from the agent).
// Stimulus: events in clk_a, once both resets are released, each separated from the next by at least min_gap_slow clk_b
// periods (the pulse synchronizer's input contract) plus a random extra gap; each event is of
// kind 1 (a marker) with probability markers/n_events (plusargs; so about `markers` markers per
// run), else of kind 0. Events stop drain_a clk_a plus drain_slow clk_b periods before the end of
// the run.
// Invariant checked (the bug report's): neither counter ever exceeds the events of its kind
// sent so far, neither ever decreases, each catches up within catch_a clk_a plus catch_slow clk_b
// periods of the clk_a edge that takes the event (every event taken at least that long ago is
// counted), and at the end of the run both equal what was sent. Both outputs are checked on every
// clk_b edge. The bounds are in cycles of each clock, so they hold at every ratio, also on the
// hidden seeds' ratio excursions (the counting side the faster one; cdc_env/sim/seeds.py).
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR evt_tb
`define CDC_EDGE_BITS 2  // an event and its kind may cross on one clk_a edge (BUG.md)
module evt_tb;
`include "cdc_tb.vh"
  reg         evt = 1'b0, kind = 1'b0;
  wire [15:0] data_cnt, mark_cnt;
  reg  [31:0] rng_a, rng_m;
  reg  [31:0] markers, n_events, min_gap_slow, gap_extra, drain_slow, catch_slow, drain_a, catch_a;
  reg  [63:0] t_catch = 64'd0;  // catch_a + 1 clk_a plus catch_slow clk_b periods, in ps (see below)
  reg  [31:0] sent_data = 32'd0, sent_mark = 32'd0, sent = 32'd0;
  reg         is_mark;
  // Events sent, in order (time and kind), for the catch-up check; `due` of them are old enough
  // to be counted by now, due_data / due_mark of each kind.
  reg  [63:0] ev_t [0:255];
  reg         ev_k [0:255];
  reg  [31:0] due = 32'd0, due_data = 32'd0, due_mark = 32'd0;
  reg  [63:0] t_next = 64'd0, gap_ps;
  reg  [15:0] last_data = 16'd0, last_mark = 16'd0;
  reg  [8*160-1:0] msg;
  reg  [63:0] now_a, now_b;     // $time, read once per clk_a / clk_b edge that needs it
  reg  [31:0] skip_a = 32'd0;   // clk_a edges left before t_next (see the source side)

  evt_top dut (
    .clk_a_i(clk_a), .rst_a_ni(rst_an), .clk_b_i(clk_b), .rst_b_ni(rst_bn),
    .evt_i(evt), .evt_kind_i(kind), .data_cnt_o(data_cnt), .mark_cnt_o(mark_cnt)
  );

  initial begin
    if (!$value$plusargs("markers=%d", markers)) markers = 32'd2;
    if (!$value$plusargs("n_events=%d", n_events)) n_events = 32'd48;
    if (!$value$plusargs("min_gap_slow=%d", min_gap_slow)) min_gap_slow = 32'd4;
    if (!$value$plusargs("gap_extra=%d", gap_extra)) gap_extra = 32'd4;
    if (!$value$plusargs("drain_slow=%d", drain_slow)) drain_slow = 32'd16;
    if (!$value$plusargs("catch_slow=%d", catch_slow)) catch_slow = 32'd10;
    if (!$value$plusargs("drain_a=%d", drain_a)) drain_a = 32'd8;
    if (!$value$plusargs("catch_a=%d", catch_a)) catch_a = 32'd4;
    if (n_events > 32'd256) n_events = 32'd256;
    rng_a = stim_key;
    rng_m = stim_key ^ 32'h5bd1e995;  // the kinds' own stream
  end

  // Source side: issue events with at least min_gap_slow slow periods between them.
  // Per-edge code is written for Icarus's cost: $time is read once per edge, the conditions that
  // need it are nested (Icarus evaluates both sides of &&), observations fold in place.
  // The edges before t_next are skipped by a count (skip_a): this process runs on every clk_a
  // edge, at now_a + 2*half_a*m on the m-th after an event, so those with m < gap_ps / (2*half_a)
  // are the ones before t_next. Once an event would not leave drain time before t_end none can
  // (the time only grows), and the count stops every later check.
  always @(posedge clk_a) if (rst_an && !run_over) begin
    `CDC_FOLD({62'd1, evt, kind})
    if (evt) evt <= 1'b0;
    if (skip_a != 32'd0) skip_a = skip_a - 32'd1;
    else if (rst_bn) if (sent < n_events) begin
     now_a = $time;
     if (now_a >= t_next) if (now_a + (drain_slow + min_gap_slow) * 2 * half_b + drain_a * 2 * half_a >= t_end)
      skip_a = 32'hffffffff;
     else begin
      rng_m = xs32(rng_m);
      is_mark = (rng_m % n_events) < markers;
      kind <= is_mark;
      if (is_mark) sent_mark = sent_mark + 32'd1;
      else sent_data = sent_data + 32'd1;
      evt <= 1'b1;
      ev_t[sent[7:0]] = now_a;
      ev_k[sent[7:0]] = is_mark;
      sent = sent + 32'd1;
      rng_a = xs32(rng_a);
      gap_ps = (min_gap_slow * 2 * half_b) + (rng_a % (gap_extra * 2 * half_b + 64'd1));
      t_next = now_a + gap_ps;
      skip_a = (gap_ps == 64'd0) ? 32'd0 : (gap_ps - 64'd1) / (2 * half_a);
     end
    end
  end

  // Counting side: counters never run ahead of what was sent and never go back.
  always @(posedge clk_b) if (rst_bn && !run_over) begin
    if ((^{data_cnt, mark_cnt}) === 1'bx) tb_fail("X or Z on an output: data_cnt_o/mark_cnt_o");
    `CDC_FOLD({32'd2, data_cnt, mark_cnt})
    `CDC_NOTE_CHECK
    if (data_cnt > sent_data || mark_cnt > sent_mark) begin
      $sformat(msg, "counted %0d data / %0d marker events but only %0d / %0d were sent",
               data_cnt, mark_cnt, sent_data, sent_mark);
      tb_fail(msg);
    end
    if (data_cnt < last_data || mark_cnt < last_mark) begin
      $sformat(msg, "a counter went backwards: data %0d -> %0d, marker %0d -> %0d",
               last_data, data_cnt, last_mark, mark_cnt);
      tb_fail(msg);
    end
    last_data = data_cnt;
    last_mark = mark_cnt;
    // Catch-up: every event counted within catch_a clk_a plus catch_slow clk_b periods of the clk_a
    // edge that takes it (one clk_a period after ev_t, the edge that drove evt).
    if (due < sent) begin  // $time only while an event is in flight
      now_b = $time;
      if (t_catch == 64'd0) t_catch = (catch_a + 32'd1) * 2 * half_a + catch_slow * 2 * half_b;
      while (due < sent && ev_t[due[7:0]] + t_catch <= now_b) begin
        if (ev_k[due[7:0]]) due_mark = due_mark + 32'd1;
        else due_data = due_data + 32'd1;
        due = due + 32'd1;
      end
    end
    if ({16'd0, data_cnt} < due_data || {16'd0, mark_cnt} < due_mark) begin
      $sformat(msg, "counters %0d data / %0d marker lag the events taken %0d clk_a + %0d clk_b periods ago (%0d / %0d)",
               data_cnt, mark_cnt, catch_a, catch_slow, due_data, due_mark);
      tb_fail(msg);
    end
  end

  task final_check;
    begin
      if (data_cnt != sent_data[15:0] || mark_cnt != sent_mark[15:0]) begin
        $sformat(msg, "end of run: counted %0d data / %0d marker events, sent %0d / %0d",
                 data_cnt, mark_cnt, sent_data, sent_mark);
        tb_fail(msg);
      end
      if (sent < 32'd8) tb_fail("fewer than 8 events were sent: run too short");
    end
  endtask
endmodule
