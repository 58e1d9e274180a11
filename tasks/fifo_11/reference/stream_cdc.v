// stream_cdc -- asynchronous FIFO, 8 words of 32 bits, with a burst reader.
// Write side (i_wclk): a word is stored on every i_wclk edge with i_push high and
// o_full low. Read side (i_rclk): once the read side sees at least 7 words, it
// commits to a burst and reads 7 words on consecutive i_rclk cycles, each with
// o_valid high and the word on o_data.
// Pointers are one bit wider than the address; the fill count is the difference of the
// write and read pointers.
// Fix: the write pointer now crosses Gray coded (one bit changes per write),
// registered in the write domain, and is converted back to binary after the
// synchronizer.
module stream_cdc (
  input  wire          i_wclk,
  input  wire          i_wrst_n,
  input  wire          i_push,
  input  wire [31:0]   i_data,
  output wire          o_full,
  input  wire          i_rclk,
  input  wire          i_rrst_n,
  output reg           o_valid,
  output reg  [31:0]   o_data,
  output wire [3:0]   o_level,
  output wire          o_busy,
  output wire [3:0]   o_wlevel
);
  localparam integer DEPTH = 8;
  localparam integer BURST = 7;

  wire [31:0] ram_rdata;   // storage word at the read pointer (inst_ram, a cdc_ram)

  function [3:0] f_to_gray(input [3:0] b);
    f_to_gray = b ^ (b >> 1);
  endfunction

  function [3:0] f_from_gray(input [3:0] g);
    integer k;
    begin
      f_from_gray[3] = g[3];
      for (k = 2; k >= 0; k = k - 1) f_from_gray[k] = f_from_gray[k + 1] ^ g[k];
    end
  endfunction

  // ---------------- write domain (i_wclk) ----------------
  reg  [3:0] wr_cnt_r;   // write pointer, binary
  reg  [3:0] wr_code_r;   // write pointer, Gray coded: crosses to the read side
  wire [3:0] rd_code_sync;   // read pointer, synchronized into the write domain
  wire [3:0] rd_cnt_sync = f_from_gray(rd_code_sync);
  wire [3:0] wr_used = wr_cnt_r - rd_cnt_sync;
  assign o_full = (wr_used == DEPTH);

  always @(posedge i_wclk or negedge i_wrst_n) begin
    if (!i_wrst_n) begin
      wr_cnt_r <= 0;
      wr_code_r <= 0;
    end else if (i_push && !o_full) begin
      wr_cnt_r <= wr_cnt_r + 1'b1;
      wr_code_r <= f_to_gray(wr_cnt_r + 1'b1);
    end
  end

  // ---------------- read domain (i_rclk) ----------------
  reg  [3:0] rd_cnt_r;   // read pointer, binary
  reg  [3:0] rd_code_r;   // read pointer, Gray coded: crosses to the write side
  reg  [2:0] rd_remain_r;   // words left in the current burst
  wire [3:0] wr_raw_sync;   // write pointer, synchronized into the read domain
  wire [3:0] wr_code_sync = wr_raw_sync;
  wire [3:0] wr_cnt_sync = f_from_gray(wr_code_sync);
  wire [3:0] rd_used = wr_cnt_sync - rd_cnt_r;
  wire        rd_take = (rd_remain_r != 0) || (rd_used >= BURST);

  always @(posedge i_rclk or negedge i_rrst_n) begin
    if (!i_rrst_n) begin
      rd_cnt_r <= 0;
      rd_code_r <= 0;
      rd_remain_r <= 0;
      o_valid <= 1'b0;
      o_data <= 0;
    end else begin
      o_valid <= rd_take;
      if (rd_take) begin
        o_data <= ram_rdata;
        rd_cnt_r <= rd_cnt_r + 1'b1;
        rd_code_r <= f_to_gray(rd_cnt_r + 1'b1);
        rd_remain_r <= ((rd_remain_r != 0) ? rd_remain_r : 3'd7) - 1'b1;
      end
    end
  end
  assign o_level = rd_used;
  assign o_busy = (rd_remain_r != 0);
  assign o_wlevel = wr_used;

  // ---------------- crossings ----------------
  // Storage: written in the i_wclk domain, read in the i_rclk domain.
  cdc_ram #(.WIDTH(32), .AW(3)) inst_ram (
    .wclk_i(i_wclk), .we_i(i_push && !o_full), .waddr_i(wr_cnt_r[2:0]), .wdata_i(i_data),
    .rclk_i(i_rclk), .raddr_i(rd_cnt_r[2:0]), .rdata_o(ram_rdata));
  cdc_sync_bus #(.WIDTH(4)) inst_sync_wr (
    .clk_i(i_rclk), .rst_ni(i_rrst_n), .d_i(wr_code_r), .q_o(wr_raw_sync));
  cdc_sync_bus #(.WIDTH(4)) inst_sync_rd (
    .clk_i(i_wclk), .rst_ni(i_wrst_n), .d_i(rd_code_r), .q_o(rd_code_sync));
endmodule
