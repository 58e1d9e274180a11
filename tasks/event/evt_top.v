// evt_top -- counts events that happen in a fast source domain (clk_a) in a slow counting
// domain (clk_b). Each event is a one-cycle evt_i pulse with a kind bit (0: data, 1: marker);
// the counting domain keeps one counter per kind, incremented when the event arrives.
//
// The event crosses through the pulse synchronizer; its kind is held in a register in the
// source domain and crosses through a level synchronizer, to be read when the pulse arrives.
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
  reg  kind_q;
  wire kind_s;
  wire evt_s;

  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) kind_q <= 1'b0;
    else if (evt_i) kind_q <= evt_kind_i;
  end

  cdc_sync_pulse u_evt_sync (
    .src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(evt_i),
    .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(evt_s)
  );
  cdc_sync_bit u_kind_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(kind_q), .q_o(kind_s));

  always @(posedge clk_b_i or negedge rst_b_ni) begin
    if (!rst_b_ni) begin
      data_cnt_o <= 16'd0;
      mark_cnt_o <= 16'd0;
    end else if (evt_s) begin
      if (kind_s) mark_cnt_o <= mark_cnt_o + 16'd1;
      else        data_cnt_o <= data_cnt_o + 16'd1;
    end
  end
endmodule
