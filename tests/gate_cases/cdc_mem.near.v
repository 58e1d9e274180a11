// task: event
// expect: pass
// what: a memory written and read in one domain (the clean event design)
// evt_top -- counts events of two kinds from a fast source domain (clk_a) in a slow counting
// domain (clk_b): one pulse synchronizer per kind, generated from a loop.
module evt_top (
  input  wire        clk_a_i,
  input  wire        rst_a_ni,
  input  wire        clk_b_i,
  input  wire        rst_b_ni,
  input  wire        evt_i,
  input  wire        evt_kind_i,
  output wire [15:0] data_cnt_o,
  output wire [15:0] mark_cnt_o
);
  reg  [1:0]  ev_q;
  wire [1:0]  ev_s;
  reg  [15:0] cnt_q [0:1];

  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) ev_q <= 2'b00;
    else ev_q <= {evt_i & evt_kind_i, evt_i & ~evt_kind_i};

  genvar k;
  generate
    for (k = 0; k < 2; k = k + 1) begin : g_kind
      cdc_sync_pulse u_sync (
        .src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(ev_q[k]),
        .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(ev_s[k])
      );
      always @(posedge clk_b_i or negedge rst_b_ni)
        if (!rst_b_ni) cnt_q[k] <= 16'd0;
        else if (ev_s[k]) cnt_q[k] <= cnt_q[k] + 16'd1;
    end
  endgenerate

  assign data_cnt_o = cnt_q[0];
  assign mark_cnt_o = cnt_q[1];
endmodule
