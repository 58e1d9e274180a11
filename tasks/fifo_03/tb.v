// Testbench of FIFO variant fifo_03 (hidden from the agent); cdc_env.fifo.generator wrote it.
// Stimulus: once both resets are released, the writer offers a word on each clk_a cycle with
// probability wr_pct percent (a plusarg); the words are a keyed hash of their index.
// Invariant checked (the bug report's): every word read equals the word written, in order, none
// lost, none duplicated, never read before it was written (the FIFO was empty); reads come in
// bursts of 3; the reader is never idle for lat_rd clk_b plus lat_wr clk_a cycles while a
// burst's worth of words written at least that long ago waits (the read latency; it also ends a
// hang); at least min_reads words move. How many words a design holds is not bounded (storage
// plus any registers it adds, e.g. a registered output): a word lost shows as a wrong word or as
// a reader idle while words wait. With +cdc_gray_check=1 (hidden seeds) the crossings may change
// at most one bit per source clock edge in total (cdc_tb.vh).
// Every output is checked against this reference model (each check is stated in BUG.md):
//   full    liveness: high for at most wd_full slow-clock cycles in a row (the reader is always
//           willing); overflow shows as a lost or wrong word. Where the level checks run, high only
//           when the words written minus those read 6 clk_a + 1 clk_b cycles ago
//           reach FULL_MIN (the depth; with a reserved block, the fill at which less than a
//           block is free).
//   busy    after each clk_b edge: high exactly while a burst is under way (its first word read,
//           its last not yet).
//   level   after every clk_b edge (hidden seeds; on every seed when no word was written in the
//           window): the words written as of some time in the last 6 clk_b + 1 clk_a
//           cycles (a value the write count held in that window) minus the words read (as of this
//           or the previous clk_b edge); when no word was written in that window, exactly the fill.
//   wlevel  at every clk_a edge (hidden seeds; on every seed when no word was read in the window):
//           the words written (as of this or the previous clk_a edge) minus the words read as of
//           some time in the last 6 clk_a + 1 clk_b cycles.
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR fifo_tb
module fifo_tb;
`include "cdc_tb.vh"
  localparam integer BURST = 3;
  localparam HAS_LEVEL = 1'b0, HAS_BUSY = 1'b1, HAS_WLEVEL = 1'b0;
  localparam integer FULL_MIN = 8;
  reg          push = 1'b0;
  reg  [11:0] wdata = 0;
  wire         full, rvalid;
  wire [11:0] rdata;
  wire [3:0]  level, wlevel;
  wire         busy;
  reg  [31:0]  rng_w, wr_pct, min_reads, lat_rd, lat_wr, wd_full;
  reg  [31:0]  wr_lat = 32'd0;                    // writes older than lat (the read latency)
  reg  [63:0]  lat = 64'd0;
  reg  [31:0]  written = 32'd0, read_n = 32'd0, in_burst = 32'd0;
  reg  [31:0]  wr_prev = 32'd0, rd_prev = 32'd0;  // written / read as of the previous own edge
  reg  [31:0]  wr_old = 32'd0, rd_old = 32'd0;    // writes / reads older than lag_r / lag_w
  reg  [63:0]  wr_t [0:255];                      // time of each write / read, by index mod 256
  reg  [63:0]  rd_t [0:255];
  reg  [63:0]  t_progress = 64'd0, t_full = 64'd0, slow = 64'd0, lag_r = 64'd0, lag_w = 64'd0;
  reg          full_on = 1'b0;
  reg          seeded = 1'b0;
  reg  [63:0]  now_w, now_r;                      // $time, read once per writer / reader edge
  reg  [31:0]  wd_idx = 32'hffffffff;             // the index whose word wdata holds (none yet)
  reg  [8*160-1:0] msg;

  cdc_fifo dut (
    .i_wclk(clk_a),
    .i_wrst_n(rst_an),
    .i_push(push),
    .i_data(wdata),
    .o_full(full),
    .i_rclk(clk_b),
    .i_rrst_n(rst_bn),
    .o_valid(rvalid),
    .o_data(rdata),
    .o_busy(busy)
  );
  assign level = 0;
  assign wlevel = 0;

  // The word with index k: a keyed hash, so a stale, lost or repeated word shows.
  function [11:0] word(input [31:0] k);
    word = xs32(xs32(k ^ stim_key) + k);
  endfunction

  // Observations fold into the trace hash with `CDC_FOLD_KNOWN (cdc_tb.vh): an unknown (X) value
  // folds as a fixed marker, so the hash stays a number.

  initial begin
    if (!$value$plusargs("wr_pct=%d", wr_pct)) wr_pct = 32'd60;
    if (!$value$plusargs("min_reads=%d", min_reads)) min_reads = 32'd12;
    if (!$value$plusargs("lat_rd=%d", lat_rd)) lat_rd = 32'd10;
    if (!$value$plusargs("lat_wr=%d", lat_wr)) lat_wr = 32'd2;
    if (!$value$plusargs("wd_full=%d", wd_full)) wd_full = 32'd32;
  end

  // Writer (clk_a): check the write side's outputs as they stand before this edge, count accepted
  // words, offer the next one. Both domains start together: a register of the other domain is
  // only defined once that domain has seen a clock in reset.
  always @(posedge clk_a) if (rst_an && rst_bn && !run_over) begin
    now_w = $time;
    if (!seeded) begin
      rng_w = stim_key ^ 32'h5bd1e995;
      slow = 2 * ((half_a > half_b) ? half_a : half_b);
      lag_r = 12 * half_b + 2 * half_a;
      lag_w = 12 * half_a + 2 * half_b;
      lat = lat_rd * 2 * half_b + lat_wr * 2 * half_a;
      seeded = 1'b1;
    end
    // (| joins fields that share no bit, as ^ did; Icarus ORs by words but XORs bit by bit)
    `CDC_FOLD_KNOWN(({32'd1, 29'd0, push, full, 1'b1} | (wlevel << 8)))
    if (HAS_WLEVEL) begin
      while (rd_old < read_n && rd_t[rd_old[7:0]] + lag_w <= now_w) rd_old = rd_old + 32'd1;
      if (^wlevel === 1'bx) tb_fail("write level is X or Z");
      if (rd_old == read_n || gray_check_on) begin  // quiet for lag_w ps, or a hidden seed
        if (rd_old == read_n) note_check;  // counted as before: per-edge checks are extra
        if ({28'd0, wlevel} + read_n < wr_prev || {28'd0, wlevel} + rd_old > written) begin
          $sformat(msg, "write level %0d outside %0d-%0d: the fill (%0d written, %0d read) over the last %0d ps of reads",
                   wlevel, wr_prev - read_n, written - rd_old, written, read_n, lag_w);
          tb_fail(msg);
        end
      end
    end
    if (full !== 1'b0 && full !== 1'b1) tb_fail("full is X or Z");
    if (full === 1'b1) begin
      // Full only with the storage full as the writer can know it: the words written minus those
      // read more than lag_w ps ago, at least FULL_MIN (DEPTH; with a reserved block, the fill at
      // which fewer than a block are free). Checked where the level checks are.
      while (rd_old < read_n && rd_t[rd_old[7:0]] + lag_w <= now_w) rd_old = rd_old + 32'd1;
      if ((rd_old == read_n || gray_check_on) && written - rd_old < FULL_MIN) begin
        $sformat(msg, "full with at most %0d words stored over the last %0d ps of reads (full needs %0d)",
                 written - rd_old, lag_w, FULL_MIN);
        tb_fail(msg);
      end
      if (!full_on) t_full = now_w;
      full_on = 1'b1;
      if (now_w - t_full > wd_full * slow) begin
        $sformat(msg, "full stuck: high for %0d ps (more than %0d slow cycles) while the reader is willing",
                 now_w - t_full, wd_full);
        tb_fail(msg);
      end
    end else full_on = 1'b0;
    wr_prev = written;
    if (push && !full) begin
      wr_t[written[7:0]] = now_w;
      written = written + 32'd1;
    end
    if (written != wd_idx) begin  // the next word, computed once per index (wdata keeps it)
      wd_idx = written;
      wdata <= word(written);
    end
    rng_w = xs32(rng_w);
    push <= (rng_w % 100) < wr_pct;
  end

  // Reader (clk_b), sampled 1 ps after the edge: check every word as it arrives, then the read
  // side's status outputs.
  always @(posedge clk_b) if (rst_an && rst_bn && !run_over) begin
    #1;
    now_r = $time;
    // A word is folded only when it was written (what a design shows on rdata before that is
    // its own business, and X on Icarus would not match Verilator).
    `CDC_FOLD_KNOWN(({24'd2, busy, rvalid, level, (rvalid && read_n < written) ? rdata : 12'd0}))
    if (rvalid !== 1'b0 && rvalid !== 1'b1) tb_fail("rvalid is X or Z");
    if (rvalid) begin
      note_check;
      if (read_n >= written) begin
        $sformat(msg, "read word %0d but only %0d were written (read from an empty FIFO)", read_n, written);
        tb_fail(msg);
      end
      if (rdata !== word(read_n)) begin
        if (^rdata === 1'bx) $sformat(msg, "word %0d: read a word never written", read_n);
        else $sformat(msg, "word %0d: read %0h, expected %0h", read_n, rdata, word(read_n));
        tb_fail(msg);
      end
      rd_t[read_n[7:0]] = now_r;
      read_n = read_n + 32'd1;
      in_burst = (in_burst + 32'd1) % BURST;
      t_progress = now_r;
    end else if (in_burst != 32'd0) begin
      $sformat(msg, "burst broken after %0d of %0d words", in_burst, BURST);
      tb_fail(msg);
    end
    if (HAS_BUSY) begin
      note_check;
      if (busy !== (in_burst != 32'd0)) begin
        $sformat(msg, "busy is %b after %0d of a burst's %0d words", busy, in_burst, BURST);
        tb_fail(msg);
      end
    end
    if (HAS_LEVEL && seeded) begin
      while (wr_old < written && wr_t[wr_old[7:0]] + lag_r <= now_r) wr_old = wr_old + 32'd1;
      if (^level === 1'bx) tb_fail("read level is X or Z");
      if (wr_old == written || gray_check_on) begin  // quiet for lag_r ps, or a hidden seed
        if (wr_old == written) note_check;  // counted as before: per-edge checks are extra
        if ({28'd0, level} + read_n < wr_old || {28'd0, level} + rd_prev > written) begin
          $sformat(msg, "read level %0d outside %0d-%0d: the fill (%0d written, %0d read) over the last %0d ps of writes",
                   level, wr_old - read_n, written - rd_prev, written, read_n, lag_r);
          tb_fail(msg);
        end
      end
    end
    rd_prev = read_n;
    // Read latency: no read in the last lat ps (t_progress: the latest read, or the first sample)
    // while a burst's worth of the words written lat ps ago or earlier waits.
    while (wr_lat < written && wr_t[wr_lat[7:0]] + lat <= now_r) wr_lat = wr_lat + 32'd1;
    if (t_progress == 64'd0) t_progress = now_r;
    if (wr_lat - read_n >= BURST) if (now_r - t_progress > lat) begin
      $sformat(msg, "read latency: %0d words from %0d clk_b + %0d clk_a cycles ago wait, no read for %0d ps",
               wr_lat - read_n, lat_rd, lat_wr, now_r - t_progress);
      tb_fail(msg);
    end
  end

  task final_check;
    begin
      if (read_n < min_reads) begin
        $sformat(msg, "only %0d words read (need %0d): no progress", read_n, min_reads);
        tb_fail(msg);
      end
    end
  endtask
endmodule
