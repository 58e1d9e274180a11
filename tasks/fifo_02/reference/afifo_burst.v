// afifo_burst -- asynchronous FIFO, 16 words of 8 bits, with a burst reader.
// Write side (wclk): a word is stored on every wclk edge with winc high and
// wfull low. Read side (rclk): once the read side sees at least 6 words, it
// commits to a burst and reads 6 words on consecutive rclk cycles, each with
// rvalid high and the word on rdata.
// Pointers are one bit wider than the address; the fill count is the difference of the
// write and read pointers.
// Fix: the write pointer now crosses Gray coded (one bit changes per write),
// registered in the write domain, and is converted back to binary after the
// synchronizer.
module afifo_burst (
  input  wire          wclk,
  input  wire          wrst_n,
  input  wire          winc,
  input  wire [7:0]   wdata,
  output wire          wfull,
  input  wire          rclk,
  input  wire          rrst_n,
  output reg           rvalid,
  output reg  [7:0]   rdata
);
  localparam integer DEPTH = 16;
  localparam integer BURST = 6;

  wire [7:0] mem_rdata;   // storage word at the read pointer (u_mem, a cdc_ram)

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

  // ---------------- write domain (wclk) ----------------
  reg  [4:0] wbin;   // write pointer, binary
  reg  [4:0] wptr;   // write pointer, Gray coded: crosses to the read side
  wire [4:0] wq2_rptr;   // read pointer, synchronized into the write domain
  wire [4:0] wq2_rbin = gray2bin(wq2_rptr);
  wire [4:0] wcount = wbin - wq2_rbin;
  assign wfull = (wcount == DEPTH);

  always @(posedge wclk or negedge wrst_n) begin
    if (!wrst_n) begin
      wbin <= 0;
      wptr <= 0;
    end else if (winc && !wfull) begin
      wbin <= wbin + 1'b1;
      wptr <= bin2gray(wbin + 1'b1);
    end
  end

  // ---------------- read domain (rclk) ----------------
  reg  [4:0] rbin;   // read pointer, binary
  reg  [4:0] rptr;   // read pointer, Gray coded: crosses to the write side
  reg  [2:0] rleft;   // words left in the current burst
  wire [4:0] rq2_wraw;   // write pointer, synchronized into the read domain
  wire [4:0] rq2_wptr = rq2_wraw;
  wire [4:0] rq2_wbin = gray2bin(rq2_wptr);
  wire [4:0] rcount = rq2_wbin - rbin;
  wire        rd_take = (rleft != 0) || (rcount >= BURST);

  always @(posedge rclk or negedge rrst_n) begin
    if (!rrst_n) begin
      rbin <= 0;
      rptr <= 0;
      rleft <= 0;
      rvalid <= 1'b0;
      rdata <= 0;
    end else begin
      rvalid <= rd_take;
      if (rd_take) begin
        rdata <= mem_rdata;
        rbin <= rbin + 1'b1;
        rptr <= bin2gray(rbin + 1'b1);
        rleft <= ((rleft != 0) ? rleft : 3'd6) - 1'b1;
      end
    end
  end

  // ---------------- crossings ----------------
  // Storage: written in the wclk domain, read in the rclk domain.
  cdc_ram #(.WIDTH(8), .AW(4)) u_mem (
    .wclk_i(wclk), .we_i(winc && !wfull), .waddr_i(wbin[3:0]), .wdata_i(wdata),
    .rclk_i(rclk), .raddr_i(rbin[3:0]), .rdata_o(mem_rdata));
  cdc_sync_bus #(.WIDTH(5)) sync_w2r (
    .clk_i(rclk), .rst_ni(rrst_n), .d_i(wptr), .q_o(rq2_wraw));
  cdc_sync_bus #(.WIDTH(5)) sync_r2w (
    .clk_i(wclk), .rst_ni(wrst_n), .d_i(rptr), .q_o(wq2_rptr));
endmodule
