// task: fifo_01
// expect: pass
// what: cdc_ram read data AND-gated by the read strobe into the data output register (bitwise gates are data paths)
// async_fifo -- asynchronous FIFO, 16 words of 16 bits, with a burst reader.
// Write side (clk_wr_i): a word is stored on every clk_wr_i edge with wr_valid_i high and
// wr_full_o low. Read side (clk_rd_i): once the read side sees at least 5 words, it
// commits to a burst and reads 5 words on consecutive clk_rd_i cycles, each with
// rd_valid_o high and the word on rd_data_o.
// Pointers are one bit wider than the address; the fill count is the difference of the
// write and read pointers.
// Fix: the write pointer now crosses Gray coded (one bit changes per write),
// registered in the write domain, and is converted back to binary after the
// synchronizer.
module async_fifo (
  input  wire          clk_wr_i,
  input  wire          rst_wr_ni,
  input  wire          wr_valid_i,
  input  wire [15:0]   wr_data_i,
  output wire          wr_full_o,
  input  wire          clk_rd_i,
  input  wire          rst_rd_ni,
  output reg           rd_valid_o,
  output reg  [15:0]   rd_data_o,
  output wire [4:0]   rd_level_o,
  output wire          rd_busy_o,
  output wire [4:0]   wr_level_o
);
  localparam integer DEPTH = 16;
  localparam integer BURST = 5;

  wire [15:0] storage_rdata;   // storage word at the read pointer (u_storage, a cdc_ram)

  function [4:0] bin2gray(input [4:0] b);
    bin2gray = b ^ (b >> 1);
  endfunction

  function [4:0] gray2bin(input [4:0] g);
    integer k;
    begin
      gray2bin[4] = g[4];
      for (k = 3; k >= 0; k = k - 1) gray2bin[k] = gray2bin[k + 1] ^ g[k];
    end
  endfunction

  // ---------------- write domain (clk_wr_i) ----------------
  reg  [4:0] wr_ptr_bin_q;   // write pointer, binary
  reg  [4:0] wr_ptr_gray_q;   // write pointer, Gray coded: crosses to the read side
  wire [4:0] rd_ptr_gray_wclk;   // read pointer, synchronized into the write domain
  wire [4:0] rd_ptr_bin_wclk = gray2bin(rd_ptr_gray_wclk);
  wire [4:0] wr_fill = wr_ptr_bin_q - rd_ptr_bin_wclk;
  assign wr_full_o = (wr_fill == DEPTH);

  always @(posedge clk_wr_i or negedge rst_wr_ni) begin
    if (!rst_wr_ni) begin
      wr_ptr_bin_q <= 0;
      wr_ptr_gray_q <= 0;
    end else if (wr_valid_i && !wr_full_o) begin
      wr_ptr_bin_q <= wr_ptr_bin_q + 1'b1;
      wr_ptr_gray_q <= bin2gray(wr_ptr_bin_q + 1'b1);
    end
  end

  // ---------------- read domain (clk_rd_i) ----------------
  reg  [4:0] rd_ptr_bin_q;   // read pointer, binary
  reg  [4:0] rd_ptr_gray_q;   // read pointer, Gray coded: crosses to the write side
  reg  [2:0] burst_left_q;   // words left in the current burst
  wire [4:0] wr_ptr_sync_rclk;   // write pointer, synchronized into the read domain
  wire [4:0] wr_ptr_gray_rclk = wr_ptr_sync_rclk;
  wire [4:0] wr_ptr_bin_rclk = gray2bin(wr_ptr_gray_rclk);
  wire [4:0] rd_fill = wr_ptr_bin_rclk - rd_ptr_bin_q;
  wire        rd_take = (burst_left_q != 0) || (rd_fill >= BURST);

  always @(posedge clk_rd_i or negedge rst_rd_ni) begin
    if (!rst_rd_ni) begin
      rd_ptr_bin_q <= 0;
      rd_ptr_gray_q <= 0;
      burst_left_q <= 0;
      rd_valid_o <= 1'b0;
      rd_data_o <= 0;
    end else begin
      rd_valid_o <= rd_take;
      rd_data_o <= storage_rdata & {16{rd_take}};  // AND-gated data: zero when not reading
      if (rd_take) begin
        rd_ptr_bin_q <= rd_ptr_bin_q + 1'b1;
        rd_ptr_gray_q <= bin2gray(rd_ptr_bin_q + 1'b1);
        burst_left_q <= ((burst_left_q != 0) ? burst_left_q : 3'd5) - 1'b1;
      end
    end
  end
  assign rd_level_o = rd_fill;
  assign rd_busy_o = (burst_left_q != 0);
  assign wr_level_o = wr_fill;

  // ---------------- crossings ----------------
  // Storage: written in the clk_wr_i domain, read in the clk_rd_i domain.
  cdc_ram #(.WIDTH(16), .AW(4)) u_storage (
    .wclk_i(clk_wr_i), .we_i(wr_valid_i && !wr_full_o), .waddr_i(wr_ptr_bin_q[3:0]), .wdata_i(wr_data_i),
    .rclk_i(clk_rd_i), .raddr_i(rd_ptr_bin_q[3:0]), .rdata_o(storage_rdata));
  cdc_sync_bus #(.WIDTH(5)) u_wr_ptr_sync (
    .clk_i(clk_rd_i), .rst_ni(rst_rd_ni), .d_i(wr_ptr_gray_q), .q_o(wr_ptr_sync_rclk));
  cdc_sync_bus #(.WIDTH(5)) u_rd_ptr_sync (
    .clk_i(clk_wr_i), .rst_ni(rst_wr_ni), .d_i(rd_ptr_gray_q), .q_o(rd_ptr_gray_wclk));
endmodule
