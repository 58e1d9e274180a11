// task: de_01
// expect: pass
// what: a case statement recirculating the register
// word_xfer -- a 8-bit word from the source domain (clk_src_i) to the destination domain
// (clk_dst_i), held stable by the source while a one-bit qualifier crosses.
module word_xfer (
  input  wire        clk_src_i,
  input  wire        rst_src_ni,
  input  wire        send_i,
  input  wire [7:0] data_i,
  input  wire        clk_dst_i,
  input  wire        rst_dst_ni,
  output wire        valid_o,
  output wire [7:0] data_o
);

  // ---------------- source domain (clk_src_i) ----------------
  // send_i takes data_i into word_q and toggles qual_q on the same edge: the word is stable from
  // then until the next send, while the toggle crosses.
  reg [7:0] word_q;
  reg        qual_q;
  always @(posedge clk_src_i or negedge rst_src_ni) begin
    if (!rst_src_ni) begin
      word_q <= 8'd0;
      qual_q <= 1'b0;
    end else if (send_i) begin
      word_q <= data_i;
      qual_q <= ~qual_q;
    end
  end

  // ---------------- destination domain (clk_dst_i) ----------------
  // The qualifier crosses through a synchronizer; the word crosses as wires (cdc_hold_bus) and is
  // loaded only when the synchronized qualifier changes.
  wire        qual_s;
  wire [7:0] word_s;
  cdc_sync_bit u_qual_sync (.clk_i(clk_dst_i), .rst_ni(rst_dst_ni), .d_i(qual_q), .q_o(qual_s));
  cdc_hold_bus #(.WIDTH(8)) u_word (.clk_i(clk_dst_i), .d_i(word_q), .q_o(word_s));
  reg         qual_d, vld_q;
  reg  [7:0] out_q;  // loaded by a case on the qualifier
  wire        take = qual_s ^ qual_d;
  always @(posedge clk_dst_i or negedge rst_dst_ni) begin
    if (!rst_dst_ni) begin
      qual_d <= 1'b0;
      vld_q  <= 1'b0;
      out_q  <= 8'd0;
    end else begin
      qual_d <= qual_s;
      vld_q  <= take;
      case (take)
        1'b1: out_q <= word_s;
        default: out_q <= out_q;
      endcase
    end
  end
  assign valid_o = vld_q;
  assign data_o  = out_q;
endmodule
