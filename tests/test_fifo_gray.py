"""The Gray check (hidden seeds only): every crossing, summed over all synchronizer instances, may
change at most one bit per source clock edge. It counts by primitive instance, so a pointer
split across two primitives or a renamed pointer is caught; a correct Gray pointer -- through
one bus or one ``cdc_sync_bit`` per bit -- is not, and the hook leaves behaviour unchanged.

Each case runs with late settling off, where the scoreboard alone cannot see a binary pointer:
what fails the seed is the Gray check and nothing else."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from cdc_env.sim.icarus import Icarus
from cdc_env.sim.seeds import hidden_seeds, plan_seed
from cdc_env.task import load_task

from .conftest import needs_icarus

pytestmark = needs_icarus


def _run(task, text, seeds, *, hidden_checks, settle=False):
    sim = Icarus()
    work = Path(tempfile.mkdtemp(prefix="cdc-test-gray-"))
    b = sim.build(task, {task.editable: text}, work)
    assert b.status == "pass", b.log
    return [sim.run_seed(b, plan_seed(task, s, hidden_checks=hidden_checks), settle=settle) for s in seeds]


def _edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


# fifo_01 (lowrisc names, 5-bit pointers). The write pointer split in two: bit 0 as it is, and
# bits 4:1 Gray coded. Each primitive alone changes at most one bit per write, but on every
# second write both change -- and the read side can see one half new and the other old.
SPLIT = (
    ("  reg  [4:0] wr_ptr_gray_q;   // write pointer, Gray coded: crosses to the read side\n",
     "  reg  [4:0] wr_ptr_gray_q;   // write pointer, Gray coded: crosses to the read side\n"
     "  reg        wr_lo_q;\n  reg  [3:0] wr_hi_gray_q;\n  wire       wr_lo_s;\n  wire [3:0] wr_hi_s;\n"),
    ("      wr_ptr_gray_q <= 0;\n",
     "      wr_ptr_gray_q <= 0;\n      wr_lo_q <= 0;\n      wr_hi_gray_q <= 0;\n"),
    ("      wr_ptr_gray_q <= bin2gray(wr_ptr_bin_q + 1'b1);\n",
     "      wr_ptr_gray_q <= bin2gray(wr_ptr_bin_q + 1'b1);\n"
     "      wr_lo_q <= wr_ptr_bin_q[0] ^ 1'b1;\n"
     "      wr_hi_gray_q <= bin2gray((wr_ptr_bin_q + 1'b1) >> 1);\n"),
    ("  wire [4:0] wr_ptr_bin_rclk = gray2bin(wr_ptr_gray_rclk);",
     "  wire [4:0] wr_ptr_bin_rclk = {gray2bin({1'b0, wr_hi_s}), wr_lo_s};"),
    ("  cdc_sync_bus #(.WIDTH(5)) u_wr_ptr_sync (\n"
     "    .clk_i(clk_rd_i), .rst_ni(rst_rd_ni), .d_i(wr_ptr_gray_q), .q_o(wr_ptr_sync_rclk));\n",
     "  assign wr_ptr_sync_rclk = 5'd0;\n"
     "  cdc_sync_bit u_lo_sync (.clk_i(clk_rd_i), .rst_ni(rst_rd_ni), .d_i(wr_lo_q), .q_o(wr_lo_s));\n"
     "  cdc_sync_bus #(.WIDTH(4)) u_hi_sync (\n"
     "    .clk_i(clk_rd_i), .rst_ni(rst_rd_ni), .d_i(wr_hi_gray_q), .q_o(wr_hi_s));\n"),
)

# The defect of fifo_01 with the pointer, its synchronized copy and the instance renamed.
RENAMED = (("wr_ptr_bin_q", "cfg_status_q"), ("wr_ptr_sync_rclk", "cfg_status_s"),
           ("wr_ptr_bin_rclk", "cfg_status_v"), ("u_wr_ptr_sync", "u_cfg_sync"))


def test_pointer_split_across_two_primitives_is_caught():
    t = load_task("fifo_01")
    split = _edit(t.reference_text, *SPLIT)
    seeds = hidden_seeds(t, 3)
    caught = _run(t, split, seeds, hidden_checks=True)
    assert all(r.status == "fail" and r.reason.startswith("gray check: 2 ") for r in caught), \
        [r.reason for r in caught]
    # Without the Gray check (and without late settling) the split design works: the check,
    # not the scoreboard, is what catches it.
    assert all(r.status == "pass" for r in _run(t, split, seeds, hidden_checks=False))


def test_renamed_binary_pointer_is_caught():
    t = load_task("fifo_01")
    renamed = _edit(t.defective_text, *RENAMED)
    assert "wr_ptr_bin" not in renamed and "u_wr_ptr_sync" not in renamed
    seeds = hidden_seeds(t, 3)
    res = _run(t, renamed, seeds, hidden_checks=True)
    assert all(r.status == "fail" and r.reason.startswith("gray check") for r in res), [r.reason for r in res]
    assert all(r.status == "pass" for r in _run(t, renamed, seeds, hidden_checks=False))


@pytest.mark.parametrize("vid", ["fifo_02", "fifo_03"])  # per-bit binary; Gray made on the far side
def test_every_defect_shape_is_caught(vid):
    t = load_task(vid)
    res = _run(t, t.defective_text, hidden_seeds(t, 2), hidden_checks=True)
    assert all(r.reason.startswith("gray check") for r in res), [r.reason for r in res]


@pytest.mark.parametrize("vid", ["fifo_01", "fifo_02"])  # Gray bus in place of binary bus / per-bit syncs
def test_reference_fix_is_not_caught_and_the_hook_changes_nothing(vid):
    t = load_task(vid)
    seeds = hidden_seeds(t, 3)
    on = _run(t, t.reference_text, seeds, hidden_checks=True, settle=True)
    off = _run(t, t.reference_text, seeds, hidden_checks=False, settle=True)
    assert all(r.status == "pass" for r in on), [r.reason for r in on]
    # Same verdicts, trace hashes and end times: the hooks change nothing the design sees. The
    # check counts differ where the variant has level outputs: hidden seeds also check them on
    # every edge (issue 23), so there they count more checks.
    def seen(r):
        return (r.seed, r.status, r.reason, r.trace_hash, r.sim_time_ps)
    assert [seen(r) for r in on] == [seen(r) for r in off]
    assert all(a.checks >= b.checks for a, b in zip(on, off, strict=True))


def test_visible_seeds_never_run_the_gray_check():
    t = load_task("fifo_01")
    assert not any(plan_seed(t, s).gray_check for s in t.seeds.visible)
    assert all(plan_seed(t, s).gray_check for s in hidden_seeds(t, 5))
    assert "+cdc_gray_check=1" in plan_seed(t, hidden_seeds(t, 1)[0]).plusargs(settle=True, nonce=1)
