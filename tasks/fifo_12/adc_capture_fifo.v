// adc_capture_fifo -- asynchronous FIFO, 16 words of 16 bits, with a burst reader.
// Write side (src_clk): a word is stored on every src_clk edge with src_push high and
// src_full low. Read side (dst_clk): once the read side sees at least 13 words, it
// commits to a burst and reads 13 words on consecutive dst_clk cycles, each with
// dst_valid high and the word on dst_data.
// Pointers are one bit wider than the address; the fill count is the difference of the
// write and read pointers.
module adc_capture_fifo (
  input  wire          src_clk,
  input  wire          src_rst_n,
  input  wire          src_push,
  input  wire [15:0]   src_data,
  output wire          src_full,
  input  wire          dst_clk,
  input  wire          dst_rst_n,
  output reg           dst_valid,
  output reg  [15:0]   dst_data,
  output wire [4:0]   src_level
);
  localparam integer DEPTH = 16;
  localparam integer BURST = 13;

  wire [15:0] buffer_rdata;   // storage word at the read pointer (u_buffer, a cdc_ram)

  function [4:0] to_gray(input [4:0] b);
    to_gray = b ^ (b >> 1);
  endfunction

  function [4:0] from_gray(input [4:0] g);
    integer k;
    begin
      from_gray[4] = g[4];
      for (k = 3; k >= 0; k = k - 1) from_gray[k] = from_gray[k + 1] ^ g[k];
    end
  endfunction

  // ---------------- write domain (src_clk) ----------------
  reg  [4:0] src_head;   // write pointer, binary
  wire [4:0] src_tail_gray_s;   // read pointer, synchronized into the write domain
  wire [4:0] src_tail_s = from_gray(src_tail_gray_s);
  wire [4:0] src_used = src_head - src_tail_s;
  assign src_full = (src_used == DEPTH);

  always @(posedge src_clk or negedge src_rst_n) begin
    if (!src_rst_n) begin
      src_head <= 0;
    end else if (src_push && !src_full) begin
      src_head <= src_head + 1'b1;
    end
  end

  // ---------------- read domain (dst_clk) ----------------
  reg  [4:0] dst_tail;   // read pointer, binary
  reg  [4:0] dst_tail_gray;   // read pointer, Gray coded: crosses to the write side
  reg  [3:0] dst_todo;   // words left in the current burst
  wire [4:0] dst_head_raw_s;   // write pointer, synchronized into the read domain
  // Gray code the synchronized pointer, then decode it again.
  wire [4:0] dst_head_gray_s = to_gray(dst_head_raw_s);
  wire [4:0] dst_head_s = from_gray(dst_head_gray_s);
  wire [4:0] dst_avail = dst_head_s - dst_tail;
  wire        rd_take = (dst_todo != 0) || (dst_avail >= BURST);

  always @(posedge dst_clk or negedge dst_rst_n) begin
    if (!dst_rst_n) begin
      dst_tail <= 0;
      dst_tail_gray <= 0;
      dst_todo <= 0;
      dst_valid <= 1'b0;
      dst_data <= 0;
    end else begin
      dst_valid <= rd_take;
      if (rd_take) begin
        dst_data <= buffer_rdata;
        dst_tail <= dst_tail + 1'b1;
        dst_tail_gray <= to_gray(dst_tail + 1'b1);
        dst_todo <= ((dst_todo != 0) ? dst_todo : 4'd13) - 1'b1;
      end
    end
  end
  assign src_level = src_used;

  // ---------------- crossings ----------------
  // Storage: written in the src_clk domain, read in the dst_clk domain.
  cdc_ram #(.WIDTH(16), .AW(4)) u_buffer (
    .wclk_i(src_clk), .we_i(src_push && !src_full), .waddr_i(src_head[3:0]), .wdata_i(src_data),
    .rclk_i(dst_clk), .raddr_i(dst_tail[3:0]), .rdata_o(buffer_rdata));
  cdc_sync_bus #(.WIDTH(5)) u_head_sync (
    .clk_i(dst_clk), .rst_ni(dst_rst_n), .d_i(src_head), .q_o(dst_head_raw_s));
  cdc_sync_bus #(.WIDTH(5)) u_tail_sync (
    .clk_i(src_clk), .rst_ni(src_rst_n), .d_i(dst_tail_gray), .q_o(src_tail_gray_s));
endmodule
