// gray_fifo -- asynchronous FIFO, 8 words of 10 bits, with a burst reader.
// Write side (clk_wr_i): a word is stored on every clk_wr_i edge with wr_valid_i high and
// wr_full_o low. Read side (clk_rd_i): once the read side sees at least 5 words, it
// commits to a burst and reads 5 words on consecutive clk_rd_i cycles, each with
// rd_valid_o high and the word on rd_data_o.
// Pointers are one bit wider than the address; the fill count is the difference of the
// write and read pointers.
module gray_fifo (
  input  wire          clk_wr_i,
  input  wire          rst_wr_ni,
  input  wire          wr_valid_i,
  input  wire [9:0]   wr_data_i,
  output wire          wr_full_o,
  input  wire          clk_rd_i,
  input  wire          rst_rd_ni,
  output reg           rd_valid_o,
  output reg  [9:0]   rd_data_o,
  output wire [3:0]   wr_level_o
);
  localparam integer DEPTH = 8;
  localparam integer BURST = 5;

  wire [9:0] storage_rdata;   // storage word at the read pointer (u_storage, a cdc_ram)

  function [3:0] bin2gray(input [3:0] b);
    bin2gray = b ^ (b >> 1);
  endfunction

  function [3:0] gray2bin(input [3:0] g);
    integer k;
    begin
      gray2bin[3] = g[3];
      for (k = 2; k >= 0; k = k - 1) gray2bin[k] = gray2bin[k + 1] ^ g[k];
    end
  endfunction

  // ---------------- write domain (clk_wr_i) ----------------
  reg  [3:0] wr_ptr_bin_q;   // write pointer, binary
  wire [3:0] rd_ptr_gray_wclk;   // read pointer, synchronized into the write domain
  wire [3:0] rd_ptr_bin_wclk = gray2bin(rd_ptr_gray_wclk);
  wire [3:0] wr_fill = wr_ptr_bin_q - rd_ptr_bin_wclk;
  assign wr_full_o = (wr_fill == DEPTH);

  always @(posedge clk_wr_i or negedge rst_wr_ni) begin
    if (!rst_wr_ni) begin
      wr_ptr_bin_q <= 0;
    end else if (wr_valid_i && !wr_full_o) begin
      wr_ptr_bin_q <= wr_ptr_bin_q + 1'b1;
    end
  end

  // ---------------- read domain (clk_rd_i) ----------------
  reg  [3:0] rd_ptr_bin_q;   // read pointer, binary
  reg  [3:0] rd_ptr_gray_q;   // read pointer, Gray coded: crosses to the write side
  reg  [2:0] burst_left_q;   // words left in the current burst
  wire [3:0] wr_ptr_sync_rclk;   // write pointer, synchronized into the read domain
  wire [3:0] wr_ptr_bin_rclk = wr_ptr_sync_rclk;
  wire [3:0] rd_fill = wr_ptr_bin_rclk - rd_ptr_bin_q;
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
      if (rd_take) begin
        rd_data_o <= storage_rdata;
        rd_ptr_bin_q <= rd_ptr_bin_q + 1'b1;
        rd_ptr_gray_q <= bin2gray(rd_ptr_bin_q + 1'b1);
        burst_left_q <= ((burst_left_q != 0) ? burst_left_q : 3'd5) - 1'b1;
      end
    end
  end
  assign wr_level_o = wr_fill;

  // ---------------- crossings ----------------
  // Storage: written in the clk_wr_i domain, read in the clk_rd_i domain.
  cdc_ram #(.WIDTH(10), .AW(3)) u_storage (
    .wclk_i(clk_wr_i), .we_i(wr_valid_i && !wr_full_o), .waddr_i(wr_ptr_bin_q[2:0]), .wdata_i(wr_data_i),
    .rclk_i(clk_rd_i), .raddr_i(rd_ptr_bin_q[2:0]), .rdata_o(storage_rdata));
  genvar gi;
  generate
    for (gi = 0; gi <= 3; gi = gi + 1) begin : g_wr_ptr_sync
      cdc_sync_bit u_wr_ptr_sync (.clk_i(clk_rd_i), .rst_ni(rst_rd_ni),
                                   .d_i(wr_ptr_bin_q[gi]), .q_o(wr_ptr_sync_rclk[gi]));
    end
  endgenerate
  cdc_sync_bus #(.WIDTH(4)) u_rd_ptr_sync (
    .clk_i(clk_wr_i), .rst_ni(rst_wr_ni), .d_i(rd_ptr_gray_q), .q_o(rd_ptr_gray_wclk));
endmodule
