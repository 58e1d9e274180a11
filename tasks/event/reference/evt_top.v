// evt_top -- counts events that happen in a fast source domain (clk_a) in a slow counting
// domain (clk_b). Each event is a one-cycle evt_i pulse with a kind bit (0: data, 1: marker);
// the counting domain keeps one counter per kind, incremented when the event arrives.
//
// Each kind has its own pulse synchronizer, so an event and its kind arrive together by
// construction: nothing depends on two synchronizers having the same latency.
module evt_top (
  input  wire        clk_a_i,       // source clock (fast)
  input  wire        rst_a_ni,      // source reset, active low
  input  wire        clk_b_i,       // counting clock (slow)
  input  wire        rst_b_ni,      // counting reset, active low
  input  wire        evt_i,         // clk_a: one-cycle event
  input  wire        evt_kind_i,    // clk_a: kind of the event, valid with evt_i
  output reg  [15:0] data_cnt_o,    // clk_b: data events counted
  output reg  [15:0] mark_cnt_o     // clk_b: marker events counted
);
  reg  data_q, mark_q;
  wire data_s, mark_s;

  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) begin
      data_q <= 1'b0;
      mark_q <= 1'b0;
    end else begin
      data_q <= evt_i && !evt_kind_i;
      mark_q <= evt_i && evt_kind_i;
    end
  end

  cdc_sync_pulse u_data_sync (
    .src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(data_q),
    .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(data_s)
  );
  cdc_sync_pulse u_mark_sync (
    .src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(mark_q),
    .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(mark_s)
  );

  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) begin
      data_cnt_o <= 16'd0;
      mark_cnt_o <= 16'd0;
    end else begin
      if (data_s) data_cnt_o <= data_cnt_o + 16'd1;
      if (mark_s) mark_cnt_o <= mark_cnt_o + 16'd1;
    end
  end
endmodule
