"""Generator of asynchronous-FIFO task variants: one ``FifoParams`` in, one task folder out.

The design is the classic Gray-pointer asynchronous FIFO (Cummings, SNUG 2002): write domain
``a``, read domain ``b``, binary and Gray pointers one bit wider than the address, each pointer
crossing through a ``cdc_sync_bus`` (or per-bit ``cdc_sync_bit``), full from the synchronized read
pointer, the read side's fill count from the synchronized write pointer. The storage is the
provided ``cdc_ram`` primitive (trusted/hdl/cdc_sync.v): written in the write domain, read in the
read domain, with a model in which an entry written less than one read cycle ago may read old
bits; no task declares ``cross_memories``. The read side commits to a burst of ``burst`` words
(any length, not only a power of two) once its synchronized fill count reaches ``burst``, and
then reads one word per cycle until the burst is done.

The testbench checks every output: the words (scoreboard), bursts, the read latency (the reader
is never idle for ``LAT_RD`` read plus ``LAT_WR`` write cycles while a burst's worth of words
written that long ago waits), the minimum traffic, ``full``'s liveness (``full_watchdog``), and the
status outputs ``busy``
(exact), ``level`` and ``wlevel`` (exact once the other side has been quiet for ``LAG_OWN`` own
plus ``LAG_OTHER`` other-side cycles); the bug report states each of these to the agent.

The defect (``shape``) is one way of crossing a pointer that is not Gray coded:

  bus_binary    the binary write count through ``cdc_sync_bus``
  bit_binary    the binary write count through one ``cdc_sync_bit`` per bit
  dst_gray      the binary write count through ``cdc_sync_bus``, Gray conversion after it
  rd_binary     (extra shape) the binary read count crossing into the write domain
  early_publish (extra shape) the write pointer advances one write cycle before the word is
                stored (a pipelined memory write); caught through cdc_ram's storage model (a
                read of an entry written less than two read cycles earlier may see old bits)
  reset_domain  (extra shape) the read side's pointer registers are reset by the write domain's
                reset (its release is asynchronous to the read clock)

Every output is a pure function of ``FifoParams``: text only, no time, no randomness, so a
variant regenerates byte for byte. What it does not do: choose parameters (variants.py and the
family's draws in __init__.py do) or check the gate (taskgate.py does). The generated texts still
name this module ``cdc_env.fifo.generator`` and ``cdc_env/fifo/variants.py``, its place before
the move to cdc_env/families/: the committed tasks stay byte-identical.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ...errors import CdcError
from .. import gate_tail, params_from_dict, params_json, task_files

SHAPES = ("bus_binary", "bit_binary", "dst_gray")
EXTRA_SHAPES = ("rd_binary", "early_publish", "reset_domain")
EXTRAS = ("level", "busy", "wlevel")

# Naming styles: logical name -> name in the generated design. Ports first, then internals.
# One row per style, names in the order of _STYLE_KEYS.
_STYLE_KEYS = (
    "wclk", "wrst", "push", "wdata", "full", "rclk", "rrst", "rvalid", "rdata", "level", "busy", "wlevel",
    "mem", "mrd", "wbin", "wgray", "wsrc", "rgray_w", "rbin_w", "wfill", "rbin", "rgray", "wsync_q",
    "wgray_r", "wbin_r", "rfill", "left", "u_wsync", "u_rsync", "pend", "pdata", "credit", "wspace", "b2g",
    "g2b",
)
_STYLE_ROWS: dict[str, str] = {
    "lowrisc": (
        "clk_wr_i rst_wr_ni wr_valid_i wr_data_i wr_full_o clk_rd_i rst_rd_ni rd_valid_o rd_data_o "
        "rd_level_o rd_busy_o wr_level_o u_storage storage_rdata wr_ptr_bin_q wr_ptr_gray_q wr_ptr_src "
        "rd_ptr_gray_wclk rd_ptr_bin_wclk wr_fill rd_ptr_bin_q rd_ptr_gray_q wr_ptr_sync_rclk "
        "wr_ptr_gray_rclk wr_ptr_bin_rclk rd_fill burst_left_q u_wr_ptr_sync u_rd_ptr_sync wr_pend_q "
        "wr_pend_data_q wr_credit_q wr_space bin2gray gray2bin"),
    "cummings": (
        "wclk wrst_n winc wdata wfull rclk rrst_n rvalid rdata rlevel rbusy wlevel u_mem mem_rdata wbin "
        "wptr wptr_src wq2_rptr wq2_rbin wcount rbin rptr rq2_wraw rq2_wptr rq2_wbin rcount rleft sync_w2r "
        "sync_r2w wpend wpend_data wcredit wspace bin2gray gray2bin"),
    "prefix": (
        "i_wclk i_wrst_n i_push i_data o_full i_rclk i_rrst_n o_valid o_data o_level o_busy o_wlevel "
        "inst_ram ram_rdata wr_cnt_r wr_code_r wr_cross rd_code_sync rd_cnt_sync wr_used rd_cnt_r "
        "rd_code_r wr_raw_sync wr_code_sync wr_cnt_sync rd_used rd_remain_r inst_sync_wr inst_sync_rd "
        "wr_pend_r wr_pend_data_r wr_credit_r wr_free f_to_gray f_from_gray"),
    "srcdst": (
        "src_clk src_rst_n src_push src_data src_full dst_clk dst_rst_n dst_valid dst_data dst_level "
        "dst_busy src_level u_buffer buffer_rdata src_head src_head_gray src_head_x src_tail_gray_s "
        "src_tail_s src_used dst_tail dst_tail_gray dst_head_raw_s dst_head_gray_s dst_head_s dst_avail "
        "dst_todo u_head_sync u_tail_sync src_pend src_pend_data src_credit src_free to_gray from_gray"),
    # Reserved for held-out variants (never used by a committed training variant).
    "camel": (
        "wrClk wrRstN wrPush wrData wrFull rdClk rdRstN rdValid rdData rdLevel rdBusy wrLevel dataMem "
        "dataMemRd wrCount wrCode wrCross rdCodeW rdCountW wrUsed rdCount rdCode wrRawR wrCodeR wrCountR "
        "rdAvail rdLeft syncWrPtr syncRdPtr wrPend wrPendData wrCredit wrSpace binToGray grayToBin"),
}
STYLES: dict[str, dict[str, str]] = {name: dict(zip(_STYLE_KEYS, row.split(), strict=True))
                                     for name, row in _STYLE_ROWS.items()}


@dataclass(frozen=True)
class FifoParams:
    """Everything a variant is made of. ``generate()`` is a pure function of this."""

    id: str
    module: str
    style: str
    width: int  # data width, 4..32
    aw: int  # address width: depth = 2**aw
    burst: int  # burst length, 2 .. depth-1
    shape: str
    extras: tuple[str, ...] = ()
    run_slow_cycles: int = 300
    wr_pct: tuple[int, int] = (30, 90)  # per-seed push probability range, percent
    visible: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    band: tuple[int, int] = (98, 138)
    wr_block: int = 0  # >0: the writer reserves space in blocks of this many words (see below)
    fast: str = "either"  # which side is the fast clock on the seeds: "a" (writer), "b" or "either"
    heldout: bool = False
    ratio_max: float = 16.0  # the seeds' largest clock ratio (fast:slow)
    low_band: float = 0.0  # share of seeds drawn from ratios 1:1-2:1 (0: log-uniform over the range)

    @property
    def depth(self) -> int:
        return 1 << self.aw

    def check(self) -> None:
        if self.style not in STYLES:
            raise CdcError(f"unknown naming style '{self.style}' (choose {', '.join(STYLES)})")
        if self.shape not in SHAPES + EXTRA_SHAPES:
            raise CdcError(f"unknown defect shape '{self.shape}' (choose {', '.join(SHAPES + EXTRA_SHAPES)})")
        if not 4 <= self.width <= 32:
            raise CdcError("data width must be 4..32")
        if not 2 <= self.aw <= 6:
            raise CdcError("address width must be 2..6 (depth 4..64)")
        if not 2 <= self.burst < self.depth:
            raise CdcError(f"burst must be 2..{self.depth - 1} for depth {self.depth}")
        if not self.module.isidentifier() or self.module.startswith(("fifo_tb", "cdc_sync")):
            raise CdcError(f"bad module name '{self.module}'")
        if self.fast not in ("a", "b", "either"):
            raise CdcError("fast must be a, b or either")
        if not 1.0 <= self.ratio_max <= 16.0:
            raise CdcError("ratio_max must be 1..16")
        if not 0.0 <= self.low_band < 1.0:
            raise CdcError("low_band must be 0..1")
        if not 0 <= self.wr_block < self.depth:
            raise CdcError(f"wr_block must be 0..{self.depth - 1}")
        bad = [e for e in self.extras if e not in EXTRAS]
        if bad:
            raise CdcError(f"unknown extra outputs {bad} (choose {', '.join(EXTRAS)})")

    def to_json(self) -> str:
        return params_json(self, {"ratio_max": 16.0, "low_band": 0.0})

    @classmethod
    def from_dict(cls, d: dict) -> FifoParams:
        return params_from_dict(cls, d)


# ----------------------------------------------------------------------------------------------
# The design


def _header(p: FifoParams, kind: str) -> str:
    n = STYLES[p.style]
    what = {
        "defect": "",
        "reference": "\n// Fix: the write pointer now crosses Gray coded (one bit changes per write),\n"
                     "// registered in the write domain, and is converted back to binary after the\n"
                     "// synchronizer.",
        "clean": "",
    }[kind]
    if kind == "reference" and p.shape == "rd_binary":
        what = ("\n// Fix: the read pointer now crosses Gray coded (one bit changes per read),\n"
                "// registered in the read domain, and is converted back to binary after the\n"
                "// synchronizer.")
    if kind == "reference" and p.shape == "early_publish":
        what = "\n// Fix: the write pointer advances in the same cycle as the word is stored."
    if kind == "reference" and p.shape == "reset_domain":
        what = "\n// Fix: every read-domain register is reset by the read domain's own reset."
    return f"""// {p.module} -- asynchronous FIFO, {p.depth} words of {p.width} bits, with a burst reader.
// Write side ({n['wclk']}): a word is stored on every {n['wclk']} edge with {n['push']} high and
// {n['full']} low. Read side ({n['rclk']}): once the read side sees at least {p.burst} words, it
// commits to a burst and reads {p.burst} words on consecutive {n['rclk']} cycles, each with
// {n['rvalid']} high and the word on {n['rdata']}.
// Pointers are one bit wider than the address; the fill count is the difference of the
// write and read pointers.{what}
"""


def _ports(p: FifoParams) -> str:
    n = STYLES[p.style]
    aw, w = p.aw, p.width
    lines = [
        f"  input  wire          {n['wclk']},",
        f"  input  wire          {n['wrst']},",
        f"  input  wire          {n['push']},",
        f"  input  wire [{w - 1}:0]   {n['wdata']},",
        f"  output wire          {n['full']},",
        f"  input  wire          {n['rclk']},",
        f"  input  wire          {n['rrst']},",
        f"  output reg           {n['rvalid']},",
        f"  output reg  [{w - 1}:0]   {n['rdata']}",
    ]
    if "level" in p.extras:
        lines.append(f"  output wire [{aw}:0]   {n['level']}")
    if "busy" in p.extras:
        lines.append(f"  output wire          {n['busy']}")
    if "wlevel" in p.extras:
        lines.append(f"  output wire [{aw}:0]   {n['wlevel']}")
    for i in range(len(lines) - 1):
        if not lines[i].endswith(","):
            lines[i] += ","
    return "\n".join(lines)


def _gray_functions(p: FifoParams) -> str:
    n = STYLES[p.style]
    aw = p.aw
    return f"""  function [{aw}:0] {n['b2g']}(input [{aw}:0] b);
    {n['b2g']} = b ^ (b >> 1);
  endfunction

  function [{aw}:0] {n['g2b']}(input [{aw}:0] g);
    integer k;
    begin
      {n['g2b']}[{aw}] = g[{aw}];
      for (k = {aw - 1}; k >= 0; k = k - 1) {n['g2b']}[k] = {n['g2b']}[k + 1] ^ g[k];
    end
  endfunction
"""


def _write_crossing(p: FifoParams, kind: str) -> tuple[str, str, str]:
    """(write-domain Gray register needed?, crossing text, read-side decode text)."""
    n = STYLES[p.style]
    aw = p.aw
    gray_src = kind != "defect" or p.shape not in SHAPES
    # Only the defect crosses bit by bit: under the late-settling model (as in hardware) one
    # cdc_sync_bit per bit does not keep the bits of a pointer aligned -- a bit that changed a
    # few source edges ago may still settle late -- so the fix uses the bus synchronizer.
    per_bit = p.shape == "bit_binary" and kind == "defect"
    src = n["wgray"] if gray_src else n["wbin"]
    if per_bit:
        cross = f"""  genvar gi;
  generate
    for (gi = 0; gi <= {aw}; gi = gi + 1) begin : g_wr_ptr_sync
      cdc_sync_bit {n['u_wsync']} (.clk_i({n['rclk']}), .rst_ni({n['rrst']}),
                                   .d_i({src}[gi]), .q_o({n['wsync_q']}[gi]));
    end
  endgenerate
"""
    else:
        cross = (f"  cdc_sync_bus #(.WIDTH({aw + 1})) {n['u_wsync']} (\n"
                 f"    .clk_i({n['rclk']}), .rst_ni({n['rrst']}), .d_i({src}), .q_o({n['wsync_q']}));\n")
    if gray_src:
        decode = f"""  wire [{aw}:0] {n['wgray_r']} = {n['wsync_q']};
  wire [{aw}:0] {n['wbin_r']} = {n['g2b']}({n['wgray_r']});
"""
    elif p.shape == "dst_gray":
        decode = f"""  // Gray code the synchronized pointer, then decode it again.
  wire [{aw}:0] {n['wgray_r']} = {n['b2g']}({n['wsync_q']});
  wire [{aw}:0] {n['wbin_r']} = {n['g2b']}({n['wgray_r']});
"""
    else:
        decode = f"  wire [{aw}:0] {n['wbin_r']} = {n['wsync_q']};\n"
    return ("gray" if gray_src else "bin"), cross, decode


def design_text(p: FifoParams, kind: str) -> str:
    """The design: ``kind`` is "defect" (the editable file), "reference" (the fix) or "clean"."""
    p.check()
    n = STYLES[p.style]
    aw, w, depth, burst = p.aw, p.width, p.depth, p.burst
    bw = max(1, burst.bit_length())
    defect = kind == "defect"
    wsrc, w_cross, w_decode = _write_crossing(p, kind)
    rd_binary = defect and p.shape == "rd_binary"
    early = defect and p.shape == "early_publish"
    rrst_for_regs = n["wrst"] if defect and p.shape == "reset_domain" else n["rrst"]
    wgray_decl = f"  reg  [{aw}:0] {n['wgray']};   // write pointer, Gray coded: crosses to the read side\n" \
        if wsrc == "gray" else ""
    wgray_reset = f"      {n['wgray']} <= 0;\n" if wsrc == "gray" else ""
    wgray_next = f"      {n['wgray']} <= {n['b2g']}({n['wbin']} + 1'b1);\n" if wsrc == "gray" else ""
    # Read pointer crossing (Gray unless the defect is the binary read pointer).
    rsrc = n["rbin"] if rd_binary else n["rgray"]
    rgray_decl = "" if rd_binary else \
        f"  reg  [{aw}:0] {n['rgray']};   // read pointer, Gray coded: crosses to the write side\n"
    rgray_reset = "" if rd_binary else f"      {n['rgray']} <= 0;\n"
    rgray_next = "" if rd_binary else f"        {n['rgray']} <= {n['b2g']}({n['rbin']} + 1'b1);\n"
    r_decode = (f"  wire [{aw}:0] {n['rbin_w']} = {n['rgray_w']};\n" if rd_binary
                else f"  wire [{aw}:0] {n['rbin_w']} = {n['g2b']}({n['rgray_w']});\n")
    if early:
        mem_write = f"""
  // The word is stored one cycle after it is accepted (a registered memory write).
  reg          {n['pend']};
  reg  [{w - 1}:0] {n['pdata']};
  reg  [{aw - 1}:0] {n['pend']}_addr;
  always @(posedge {n['wclk']} or negedge {n['wrst']}) begin
    if (!{n['wrst']}) begin
      {n['pend']} <= 1'b0;
      {n['pdata']} <= 0;
      {n['pend']}_addr <= 0;
    end else begin
      {n['pend']} <= {n['push']} && !{n['full']};
      {n['pdata']} <= {n['wdata']};
      {n['pend']}_addr <= {n['wbin']}[{aw - 1}:0];
    end
  end
"""
        mem_we, mem_waddr, mem_wdata = n["pend"], f"{n['pend']}_addr", n["pdata"]
    else:
        mem_write = ""
        mem_we, mem_waddr, mem_wdata = f"{n['push']} && !{n['full']}", f"{n['wbin']}[{aw - 1}:0]", n["wdata"]
    storage = f"""  // Storage: written in the {n['wclk']} domain, read in the {n['rclk']} domain.
  cdc_ram #(.WIDTH({w}), .AW({aw})) {n['mem']} (
    .wclk_i({n['wclk']}), .we_i({mem_we}), .waddr_i({mem_waddr}), .wdata_i({mem_wdata}),
    .rclk_i({n['rclk']}), .raddr_i({n['rbin']}[{aw - 1}:0]), .rdata_o({n['mrd']}));
"""
    if p.wr_block:
        wb, cw = p.wr_block, max(1, p.wr_block.bit_length())
        full_logic = f"""  // The writer reserves space in blocks of {wb} words: once at least {wb} words are
  // free it takes the next {wb} words without looking at the read pointer again.
  reg  [{cw - 1}:0] {n['credit']};   // words left in the reserved block
  wire [{aw}:0] {n['wspace']} = DEPTH - {n['wfill']};
  assign {n['full']} = ({n['credit']} == 0) && ({n['wspace']} < {wb});
"""
        credit_reset = f"      {n['credit']} <= 0;\n"
        credit_next = (f"      {n['credit']} <= (({n['credit']} != 0) ? {n['credit']}"
                       f" : {cw}'d{wb}) - 1'b1;\n")
    else:
        full_logic = f"  assign {n['full']} = ({n['wfill']} == DEPTH);\n"
        credit_reset = credit_next = ""
    extras = ""
    if "level" in p.extras:
        extras += f"  assign {n['level']} = {n['rfill']};\n"
    if "busy" in p.extras:
        extras += f"  assign {n['busy']} = ({n['left']} != 0);\n"
    if "wlevel" in p.extras:
        extras += f"  assign {n['wlevel']} = {n['wfill']};\n"
    wsync_decl = f"  wire [{aw}:0] {n['wsync_q']};   // write pointer, synchronized into the read domain\n"
    return f"""{_header(p, kind)}module {p.module} (
{_ports(p)}
);
  localparam integer DEPTH = {depth};
  localparam integer BURST = {burst};

  wire [{w - 1}:0] {n['mrd']};   // storage word at the read pointer ({n['mem']}, a cdc_ram)

{_gray_functions(p)}
  // ---------------- write domain ({n['wclk']}) ----------------
  reg  [{aw}:0] {n['wbin']};   // write pointer, binary
{wgray_decl}  wire [{aw}:0] {n['rgray_w']};   // read pointer, synchronized into the write domain
{r_decode}  wire [{aw}:0] {n['wfill']} = {n['wbin']} - {n['rbin_w']};
{full_logic}
  always @(posedge {n['wclk']} or negedge {n['wrst']}) begin
    if (!{n['wrst']}) begin
      {n['wbin']} <= 0;
{wgray_reset}{credit_reset}    end else if ({n['push']} && !{n['full']}) begin
      {n['wbin']} <= {n['wbin']} + 1'b1;
{wgray_next}{credit_next}    end
  end
{mem_write}
  // ---------------- read domain ({n['rclk']}) ----------------
  reg  [{aw}:0] {n['rbin']};   // read pointer, binary
{rgray_decl}  reg  [{bw - 1}:0] {n['left']};   // words left in the current burst
{wsync_decl}{w_decode}  wire [{aw}:0] {n['rfill']} = {n['wbin_r']} - {n['rbin']};
  wire        rd_take = ({n['left']} != 0) || ({n['rfill']} >= BURST);

  always @(posedge {n['rclk']} or negedge {rrst_for_regs}) begin
    if (!{rrst_for_regs}) begin
      {n['rbin']} <= 0;
{rgray_reset}      {n['left']} <= 0;
      {n['rvalid']} <= 1'b0;
      {n['rdata']} <= 0;
    end else begin
      {n['rvalid']} <= rd_take;
      if (rd_take) begin
        {n['rdata']} <= {n['mrd']};
        {n['rbin']} <= {n['rbin']} + 1'b1;
{rgray_next}        {n['left']} <= (({n['left']} != 0) ? {n['left']} : {bw}'d{burst}) - 1'b1;
      end
    end
  end
{extras}
  // ---------------- crossings ----------------
{storage}{w_cross}  cdc_sync_bus #(.WIDTH({aw + 1})) {n['u_rsync']} (
    .clk_i({n['wclk']}), .rst_ni({n['wrst']}), .d_i({rsrc}), .q_o({n['rgray_w']}));
endmodule
"""


# ----------------------------------------------------------------------------------------------
# The testbench


# Bounds of the testbench's checks on the status outputs and the write side's liveness (stated in
# the bug report, which the agent reads). LAG_OWN / LAG_OTHER: a status output may reflect an event
# of the other domain up to LAG_OWN of its own clock cycles plus LAG_OTHER of the other's late
# (a pointer registered a cycle later, synchronizers with extra stages); FULL_SLOW: full may stay
# high this many slow-clock cycles (plus the writer's block, if any) while the reader is willing.
LAG_OWN = 6
LAG_OTHER = 1
FULL_SLOW = 32
# Read latency: the reader may not stay idle for LAT_RD clk_rd plus LAT_WR clk_wr cycles while a
# burst's worth of words written at least that long ago waits. A bound in cycles of each clock
# holds at every ratio (the reference starts a burst about 1 clk_wr + 4 clk_rd cycles after the
# word that completes it; LAG_OWN + LAG_OTHER of pointer lag plus a registered output and a burst
# decision fit). It replaces a hang watchdog in slow-clock cycles, which let a design delay its
# reads by 15 registers -- enough to hide a pointer published a write cycle before its word.
LAT_RD = 10
LAT_WR = 2


def excursions(p: FifoParams) -> tuple[float, float]:
    """The manifest's ratio excursions (cdc_env/sim/seeds.py): the fast side up to twice
    ratio_max (four times, for a range below 8:1), and, for a task with a fixed fast side, the
    other side faster up to 16:1. The early_publish shape too: a reader more than about 4:1 faster
    reads the word its planted pointer announced before the write even without late settling,
    which is what these seeds are for (a design that publishes early and hides it by waiting is
    caught the same way); the variant gate's settling-off count is over the in-range seeds
    (cdc_env/taskgate.py)."""
    same = p.ratio_max * (2.0 if p.ratio_max >= 8.0 else 4.0)
    return same, (16.0 if p.fast != "either" else 0.0)


def full_watchdog(p: FifoParams) -> int:
    """Slow-clock cycles ``full`` may stay high while the reader is willing (always, here): a
    correct design frees a slot within ~8 (the reader sees the full FIFO, reads one word, and
    the read pointer crosses back); a writer that reserves blocks needs a block's worth."""
    return FULL_SLOW + p.wr_block


def _level_check(aw: int, side: str, port: str, guard: str, log: str, count: str, lag: str,
                 other: str, low: str, high: str, bound_lo: str, bound_hi: str, now: str) -> str:
    """The testbench's check of one level output (``port``): ``log`` is the other side's time
    log (``rd_t``/``wr_t``) and ``count`` its event count, and ``{log}_old`` counts the other
    side's events older than ``lag`` ps. The level is own count minus the other side's count as
    this side has seen it, which may be any value that count held within the last ``lag`` ps (it
    only grows, by one, so every value from ``{log}_old`` to ``count``) and may lag this side's
    own count by one edge: ``low``/``high`` are the two bounds, written as conditions on level +
    a count that fail the seed. Checked on every edge of the level's own clock on hidden seeds
    (``gray_check_on``, like the one-bit rule: the variant gate measures the planted binary
    pointer's band without them, since a level computed from it shows its mixes at once), and on
    every seed once the other side has been quiet for ``lag`` ps (then the bounds are the fill).
    ``now`` names the variable holding $time in the calling block."""
    lvl = f"{{{31 - aw}'d0, {port}}}"
    fmt = (f"{side} level %0d outside %0d-%0d: the fill (%0d written, %0d read) "
           f"over the last %0d ps of {other}s")
    return f"""    if ({guard}) begin
      while ({log}_old < {count} && {log}_t[{log}_old[7:0]] + {lag} <= {now}) {log}_old = {log}_old + 32'd1;
      if (^{port} === 1'bx) tb_fail("{side} level is X or Z");
      if ({log}_old == {count} || gray_check_on) begin  // quiet for {lag} ps, or a hidden seed
        if ({log}_old == {count}) note_check;  // counted as before: per-edge checks are extra
        if ({lvl} + {low} || {lvl} + {high}) begin
          $sformat(msg, "{fmt}",
                   {port}, {bound_lo}, {bound_hi}, written, read_n, {lag});
          tb_fail(msg);
        end
      end
    end
"""


def testbench_text(p: FifoParams) -> str:
    n = STYLES[p.style]
    aw, w = p.aw, p.width
    conns = [f".{n['wclk']}(clk_a)", f".{n['wrst']}(rst_an)", f".{n['push']}(push)",
             f".{n['wdata']}(wdata)", f".{n['full']}(full)", f".{n['rclk']}(clk_b)",
             f".{n['rrst']}(rst_bn)", f".{n['rvalid']}(rvalid)", f".{n['rdata']}(rdata)"]
    conns += [f".{n[e]}({e})" for e in EXTRAS if e in p.extras]
    conn_text = ",\n    ".join(conns)
    has = {e: ("1'b1" if e in p.extras else "1'b0") for e in EXTRAS}
    level_w = _level_check(aw, "write", "wlevel", "HAS_WLEVEL", "rd", "read_n", "lag_w", "read",
                           "read_n < wr_prev", "rd_old > written", "wr_prev - read_n", "written - rd_old",
                           "now_w")
    level_r = _level_check(aw, "read", "level", "HAS_LEVEL && seeded", "wr", "written", "lag_r", "write",
                           "read_n < wr_old", "rd_prev > written", "wr_old - read_n", "written - rd_prev",
                           "now_r")
    return f"""// Testbench of FIFO variant {p.id} (hidden from the agent); cdc_env.fifo.generator wrote it.
// Stimulus: once both resets are released, the writer offers a word on each clk_a cycle with
// probability wr_pct percent (a plusarg); the words are a keyed hash of their index.
// Invariant checked (the bug report's): every word read equals the word written, in order, none
// lost, none duplicated, never read before it was written (the FIFO was empty); reads come in
// bursts of {p.burst}; the reader is never idle for lat_rd clk_b plus lat_wr clk_a cycles while a
// burst's worth of words written at least that long ago waits (the read latency; it also ends a
// hang); at least min_reads words move. How many words a design holds is not bounded (storage
// plus any registers it adds, e.g. a registered output): a word lost shows as a wrong word or as
// a reader idle while words wait. With +cdc_gray_check=1 (hidden seeds) the crossings may change
// at most one bit per source clock edge in total (cdc_tb.vh).
// Every output is checked against this reference model (each check is stated in BUG.md):
//   full    liveness: high for at most wd_full slow-clock cycles in a row (the reader is always
//           willing); overflow shows as a lost or wrong word. Where the level checks run, high only
//           when the words written minus those read {LAG_OWN} clk_a + {LAG_OTHER} clk_b cycles ago
//           reach FULL_MIN (the depth; with a reserved block, the fill at which less than a
//           block is free).
//   busy    after each clk_b edge: high exactly while a burst is under way (its first word read,
//           its last not yet).
//   level   after every clk_b edge (hidden seeds; on every seed when no word was written in the
//           window): the words written as of some time in the last {LAG_OWN} clk_b + {LAG_OTHER} clk_a
//           cycles (a value the write count held in that window) minus the words read (as of this
//           or the previous clk_b edge); when no word was written in that window, exactly the fill.
//   wlevel  at every clk_a edge (hidden seeds; on every seed when no word was read in the window):
//           the words written (as of this or the previous clk_a edge) minus the words read as of
//           some time in the last {LAG_OWN} clk_a + {LAG_OTHER} clk_b cycles.
`timescale 1ps / 1ps
`define CDC_SYNC_MONITOR fifo_tb
module fifo_tb;
`include "cdc_tb.vh"
  localparam integer BURST = {p.burst};
  localparam HAS_LEVEL = {has['level']}, HAS_BUSY = {has['busy']}, HAS_WLEVEL = {has['wlevel']};
  localparam integer FULL_MIN = {p.depth - p.wr_block + 1 if p.wr_block else p.depth};
  reg          push = 1'b0;
  reg  [{w - 1}:0] wdata = 0;
  wire         full, rvalid;
  wire [{w - 1}:0] rdata;
  wire [{aw}:0]  level, wlevel;
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

  {p.module} dut (
    {conn_text}
  );
{_tie_unused(p)}
  // The word with index k: a keyed hash, so a stale, lost or repeated word shows.
  function [{w - 1}:0] word(input [31:0] k);
    word = xs32(xs32(k ^ stim_key) + k);
  endfunction

  // Observations fold into the trace hash with `CDC_FOLD_KNOWN (cdc_tb.vh): an unknown (X) value
  // folds as a fixed marker, so the hash stays a number.

  initial begin
    if (!$value$plusargs("wr_pct=%d", wr_pct)) wr_pct = 32'd60;
    if (!$value$plusargs("min_reads=%d", min_reads)) min_reads = 32'd{min_reads(p)};
    if (!$value$plusargs("lat_rd=%d", lat_rd)) lat_rd = 32'd{LAT_RD};
    if (!$value$plusargs("lat_wr=%d", lat_wr)) lat_wr = 32'd{LAT_WR};
    if (!$value$plusargs("wd_full=%d", wd_full)) wd_full = 32'd{full_watchdog(p)};
  end

  // Writer (clk_a): check the write side's outputs as they stand before this edge, count accepted
  // words, offer the next one. Both domains start together: a register of the other domain is
  // only defined once that domain has seen a clock in reset.
  always @(posedge clk_a) if (rst_an && rst_bn && !run_over) begin
    now_w = $time;
    if (!seeded) begin
      rng_w = stim_key ^ 32'h5bd1e995;
      slow = 2 * ((half_a > half_b) ? half_a : half_b);
      lag_r = {2 * LAG_OWN} * half_b + {2 * LAG_OTHER} * half_a;
      lag_w = {2 * LAG_OWN} * half_a + {2 * LAG_OTHER} * half_b;
      lat = lat_rd * 2 * half_b + lat_wr * 2 * half_a;
      seeded = 1'b1;
    end
    // (| joins fields that share no bit, as ^ did; Icarus ORs by words but XORs bit by bit)
    `CDC_FOLD_KNOWN(({{32'd1, 29'd0, push, full, 1'b1}} | (wlevel << 8)))
{level_w}    if (full !== 1'b0 && full !== 1'b1) tb_fail("full is X or Z");
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
    `CDC_FOLD_KNOWN(({{24'd2, busy, rvalid, level, (rvalid && read_n < written) ? rdata : {w}'d0}}))
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
{level_r}    rd_prev = read_n;
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
"""


def min_reads(p: FifoParams) -> int:
    """Words a working design must move in a run: four bursts, but never more than half of what
    the slowest writer (push probability wr_pct[0], writer the slow side) offers, in whole
    bursts, and at least one burst."""
    offered = p.run_slow_cycles * p.wr_pct[0] // 200
    return min(4 * p.burst, max(p.burst, offered // p.burst * p.burst))


def _tie_unused(p: FifoParams) -> str:
    out = []
    if "level" not in p.extras:
        out.append("  assign level = 0;")
    if "wlevel" not in p.extras:
        out.append("  assign wlevel = 0;")
    if "busy" not in p.extras:
        out.append("  assign busy = 1'b0;")
    return ("\n".join(out) + "\n") if out else ""


# ----------------------------------------------------------------------------------------------
# Manifest, bug report, folder

_SHAPE_SYMPTOM = {
    "rd_binary": "now and then a word is overwritten before it was read (the writer runs over the reader)",
    "early_publish": "now and then the reader gets a word that was never written",
    "reset_domain": "now and then the reader starts wrong just after reset",
}


def _status_text(p: FifoParams) -> str:
    """The status outputs' meaning, as the testbench checks it (empty when there are none)."""
    n = STYLES[p.style]
    lag_r = f"{LAG_OWN} `{n['rclk']}` cycles plus {LAG_OTHER} `{n['wclk']}` cycle"
    lag_w = f"{LAG_OWN} `{n['wclk']}` cycles plus {LAG_OTHER} `{n['rclk']}` cycle"
    items = []
    if "level" in p.extras:
        items.append(f"`{n['level']}` is the number of words the read side sees stored, checked on every "
                     f"`{n['rclk']}` edge: the words written as of some moment in the last {lag_r} (a value "
                     f"the write count really held then) minus the words read (it may lag the reads by "
                     f"one `{n['rclk']}` edge). When no word has been written for that long it is exactly "
                     f"the fill; it is never outside the fill over that window.")
    if "busy" in p.extras:
        items.append(f"`{n['busy']}` is high, after each `{n['rclk']}` edge, exactly while a burst is under "
                     "way: from the edge that reads its first word until the edge that reads its last.")
    if "wlevel" in p.extras:
        items.append(f"`{n['wlevel']}` is the number of words the write side counts as stored, checked on "
                     f"every `{n['wclk']}` edge: the words written (it may lag the writes by one "
                     f"`{n['wclk']}` edge) minus the words read as of some moment in the last {lag_w} (a "
                     f"value the read count really held then). When no word has been read for that long "
                     f"it is exactly the fill; it is never outside the fill over that window.")
    if not items:
        return ""
    return "\n**Status outputs** (checked on every seed). " + " ".join(items) + "\n"


def bug_report(p: FifoParams) -> str:
    n = STYLES[p.style]
    symptom = _SHAPE_SYMPTOM.get(
        p.shape, "now and then the reader gets a word that was never written, or reads ahead of the writer")
    extra_ports = [n[e] for e in EXTRAS if e in p.extras]
    extra = f" and the status outputs ({', '.join(f'`{x}`' for x in extra_ports)})" if extra_ports else ""
    block = ""
    if p.wr_block:
        block = (f" The writer reserves space in blocks: once at least {p.wr_block} words are free,\n"
                 f"`{n['full']}` stays low until {p.wr_block} more words have been written.")
    status = _status_text(p)
    x_same, x_other = excursions(p)
    side = {"either": "either clock", "a": "the writer", "b": "the reader"}[p.fast]
    other = "the reader" if p.fast == "a" else "the writer"
    excursion = " or ".join(([f"{side} faster by up to {x_same:g}:1"] if x_same else [])
                            + ([f"{other} the faster one, by up to {x_other:g}:1"] if x_other else []))
    full_need = (f"more than {p.depth - p.wr_block} of the {p.depth} words" if p.wr_block
                 else f"all {p.depth} words")
    clocks = {"either": "Either clock may be the faster one",
              "a": f"The writer's clock `{n['wclk']}` is the faster one",
              "b": f"The reader's clock `{n['rclk']}` is the faster one"}[p.fast]
    text = f"""# Bug report: asynchronous FIFO `{p.module}` delivers wrong words

**Design.** `{p.module}` carries {p.width}-bit words from a writer (clock `{n['wclk']}`) to a reader
(clock `{n['rclk']}`) through {p.depth} words of storage. The writer offers a word with
`{n['push']}`; it is taken on a `{n['wclk']}` edge where `{n['full']}` is low. Once the read side sees
at least {p.burst} words stored, it reads a burst of exactly {p.burst} words on consecutive
`{n['rclk']}` cycles, each marked by `{n['rvalid']}` with the word on `{n['rdata']}`.{block}

**Symptom.** In the lab, {symptom}. It depends on the clock ratio and phase, and not every run
shows it. Ordinary simulation never shows it.

**Invariant the fix must keep.** Every word read equals the word written, in order: none lost,
none duplicated, none read before it was written; reads come in bursts of exactly {p.burst};
the read side is never idle for {LAT_RD} `{n['rclk']}` plus {LAT_WR} `{n['wclk']}` cycles while
{p.burst} or more
words written at least that long ago wait; `{n['full']}` never stays high for more than
{full_watchdog(p)} slow-clock cycles in a row (the reader is always willing), and is high only while the
storage is full as the write side can know it: the words written minus the words read at least
{LAG_OWN} `{n['wclk']}` plus {LAG_OTHER} `{n['rclk']}` cycles earlier fill {full_need}.
The port list and the meaning of
every port{extra} stay as they are. The storage is the provided `cdc_ram`, and every other signal
that crosses between the domains goes through a provided synchronizer; all the crossings into
one domain together change at most one bit per clock edge of the other domain (the grader
checks this). {clocks}, by up to {p.ratio_max:g}:1, with any phase (equal clocks included).
{status}
**Clocking.** Correctness may not rest on how fast the other clock runs: a word may not be
announced to the reader before it is stored, nor a slot to the writer before its word is read,
however long the other side then waits. So some hidden seeds run outside the range above
({excursion}). This is fair because every bound above is stated in cycles of each clock (the
`{n['full']}` watchdog in cycles of the slower one), which a correct FIFO meets at any ratio.


**What you may change.** Only `{p.module}.v`. Read the synchronizers' timing contract with the
`contract` tool.
"""
    paras = text.split("\n\n")
    return "\n\n".join(para if para.startswith("#")
                       else textwrap.fill(" ".join(para.split()), 96, break_on_hyphens=False)
                       for para in paras).rstrip() + "\n"


def manifest_text(p: FifoParams) -> str:
    n = STYLES[p.style]
    lo, hi = p.wr_pct
    x_same, x_other = excursions(p)
    x_keys = (("excursion_max", x_same), ("excursion_other", x_other))
    x_lines = "\n".join(f"{k} = {v:.1f}" for k, v in x_keys if v)
    x_lines += "  # ratio excursions on 5% of hidden seeds (BUG.md, \"Clocking\")"
    return f"""# FIFO variant {p.id}, generated by cdc_env.fifo.generator (do not edit by hand; regenerate).
# Parameters: {p.to_json()}
id = "{p.id}"
family = "fifo"
title = "Asynchronous FIFO {p.module} delivers wrong words"
top = "{p.module}"
editable = "{p.module}.v"
testbench = "tb.v"
tb_top = "fifo_tb"
bug_report = "BUG.md"
reference = "reference/{p.module}.v"
clean = "clean/{p.module}.v"
heldout = {"true" if p.heldout else "false"}

# Domain a writes, domain b reads.
[clocks.a]
clock = "{n['wclk']}"
reset = "{n['wrst']}"
[clocks.b]
clock = "{n['rclk']}"
reset = "{n['rrst']}"

[seeds]
fast = "{p.fast}"
ratio_min = 1.0
ratio_max = {p.ratio_max:.1f}
low_band = {p.low_band}
run_slow_cycles = {p.run_slow_cycles}
hidden_count = 200
{x_lines}
visible = [{", ".join(str(s) for s in p.visible)}]  # see cdc_env/fifo/variants.py for how they were chosen

{gate_tail({"wr_pct": (lo, hi)}, p.band)}"""


def generate(p: FifoParams) -> dict[str, str]:
    """Every file of the task folder, as {relative path: text}."""
    p.check()
    return task_files(p.module, manifest_text(p), testbench_text(p), bug_report(p),
                      lambda kind: design_text(p, kind))
