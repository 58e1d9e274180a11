// Testbench of the event-crossing task (hidden from the agent).
// Stimulus: events in clk_a, once both resets are released, each separated from the next by at least min_gap_slow clk_b
// periods (the pulse synchronizer's input contract) plus a random extra gap; `markers` of them
// (a plusarg, usually 0..3) are of kind 1, at random positions, the rest of kind 0. Events stop
// drain_slow clk_b periods before the end of the run.
// Invariant checked (the bug report's): neither counter ever exceeds the events of its kind
// sent so far, neither ever decreases, and at the end of the run both equal what was sent.
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR evt_tb
module evt_tb;
`include "cdc_tb.vh"
  reg         evt = 1'b0, kind = 1'b0;
  wire [15:0] data_cnt, mark_cnt;
  reg  [31:0] rng_a;
  reg  [31:0] markers, n_events, min_gap_slow, gap_extra, drain_slow;
  reg  [31:0] sent_data = 32'd0, sent_mark = 32'd0, sent = 32'd0;
  reg  [31:0] mark_at0, mark_at1, mark_at2, mark_at3;
  reg  [63:0] t_next = 64'd0, gap_ps;
  reg  [15:0] last_data = 16'd0, last_mark = 16'd0;
  reg  [8*160-1:0] msg;

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
    rng_a = stim_key;
    // Marker positions (event indices); an index >= n_events never occurs.
    rng_a = xs32(rng_a); mark_at0 = (markers > 0) ? rng_a % n_events : n_events;
    rng_a = xs32(rng_a); mark_at1 = (markers > 1) ? rng_a % n_events : n_events;
    rng_a = xs32(rng_a); mark_at2 = (markers > 2) ? rng_a % n_events : n_events;
    rng_a = xs32(rng_a); mark_at3 = (markers > 3) ? rng_a % n_events : n_events;
  end

  // Source side: issue events with at least min_gap_slow slow periods between them.
  always @(posedge clk_a) if (rst_an && !run_over) begin
    fold({62'd1, evt, kind});
    evt <= 1'b0;
    if (rst_bn && sent < n_events && $time >= t_next &&
        $time + (drain_slow + min_gap_slow) * 2 * half_b < t_end) begin
      kind <= (sent == mark_at0 || sent == mark_at1 || sent == mark_at2 || sent == mark_at3);
      if (sent == mark_at0 || sent == mark_at1 || sent == mark_at2 || sent == mark_at3)
        sent_mark = sent_mark + 32'd1;
      else
        sent_data = sent_data + 32'd1;
      evt <= 1'b1;
      sent = sent + 32'd1;
      rng_a = xs32(rng_a);
      gap_ps = (min_gap_slow * 2 * half_b) + (rng_a % (gap_extra * 2 * half_b + 64'd1));
      t_next = $time + gap_ps;
    end
  end

  // Counting side: counters never run ahead of what was sent and never go back.
  always @(posedge clk_b) if (rst_bn && !run_over) begin
    if ((^{data_cnt, mark_cnt}) === 1'bx) tb_fail("X or Z on an output: data_cnt_o/mark_cnt_o");
    fold({32'd2, data_cnt, mark_cnt});
    note_check;
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
