"""The data-enable crossing family (cdc_env/families/dataen) and its qualified-word primitive.

  * The committed variants are exactly what the generator makes, and the family implements the
    protocol: parameters round-trip, ``draw`` stays in its region (training and held-out are
    disjoint in widths and names), ``search`` keeps the design and retunes the stimulus only.
  * cdc_hold_bus (trusted/hdl/cdc_hold.v): with late settling off q_o is d_i; with it on, bits of
    a change may read old at the first and second rising edge of clk_i after it and never at the
    third; the choices differ between instances (keyed by the whole name) and follow the key.
  * The defect is caught by the model alone: with late settling off the defect passes every seed
    it runs (the variant gate's settle-off column, measured on the committed variants in
    docs/family-dataen.md); here one variant's shipped defect passes with settling off and fails
    with it on, on the same seeds.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cdc_env import paths
from cdc_env.errors import CdcError
from cdc_env.families import Draw, get
from cdc_env.families.dataen import FAMILY, HELDOUT_NAMES, HELDOUT_WIDTHS, TRAIN_NAMES, TRAIN_WIDTHS, VARIANTS
from cdc_env.families.dataen.generator import DeParams, from_dict, generate

from .conftest import needs_icarus


@pytest.mark.parametrize("p", VARIANTS, ids=lambda p: p.id)
def test_committed_folders_match_the_generator(p: DeParams) -> None:
    d = paths.tasks_dir() / p.id
    files = generate(p)
    on_disk = {str(f.relative_to(d)) for f in d.rglob("*") if f.is_file()}
    regen = "python -c 'from cdc_env.families import dataen; dataen.write_all()'"
    assert on_disk == set(files), f"regenerate: {regen}"
    for rel, text in files.items():
        assert (d / rel).read_text() == text, f"{p.id}/{rel} differs from the generator"


def test_registry_and_protocol() -> None:
    assert get("dataen") is FAMILY
    assert FAMILY.training() == VARIANTS and len(VARIANTS) >= 6
    for p in VARIANTS:
        assert FAMILY.from_dict(FAMILY.to_dict(p)) == p
        assert FAMILY.region_of(p) == "train"
    with pytest.raises(CdcError, match="unknown key"):
        from_dict({**VARIANTS[0].to_dict(), "bogus": 1})
    with pytest.raises(CdcError, match="shape"):
        from_dict({**VARIANTS[0].to_dict(), "shape": "nope"})


def test_draw_stays_in_its_region_and_regions_are_disjoint() -> None:
    assert not set(TRAIN_WIDTHS) & set(HELDOUT_WIDTHS) and not set(TRAIN_NAMES) & set(HELDOUT_NAMES)
    for region in ("train", "heldout"):
        seen = set()
        for i in range(40):
            p = FAMILY.draw(Draw(b"key", f"t{i}"), region, f"v{i}")
            generate(p)  # every drawn value makes a task
            assert FAMILY.region_of(p) == region
            seen.add((p.width, p.shape, p.capture))
            again = FAMILY.draw(Draw(b"key", f"t{i}"), region, f"v{i}")
            assert again == p  # deterministic from the key
        assert len(seen) > 6
    assert FAMILY.region_of(replace(VARIANTS[0], width=10)) is None


def test_search_retunes_only_the_stimulus() -> None:
    p = VARIANTS[0]
    steps = list(FAMILY.search(p))
    assert steps[0] == p and len(steps) > 3
    for s in steps:
        s.check()
        assert (s.module, s.width, s.shape, s.capture) == (p.module, p.width, p.shape, p.capture)
        assert generate(s)[f"{p.module}.v"] == generate(p)[f"{p.module}.v"]


UNIT_TB = """`timescale 1ps/1ps
module hold_tb;
  reg sclk = 0, dclk = 0;
  reg [15:0] w = 16'h0000;
  wire [15:0] q, q2;
  cdc_hold_bus #(.WIDTH(16)) u_hold (.clk_i(dclk), .d_i(w), .q_o(q));
  cdc_hold_bus #(.WIDTH(16)) u_hold_twin (.clk_i(dclk), .d_i(w), .q_o(q2));
  always #103 dclk = ~dclk;
  reg [15:0] cap, cap_t, c1, c2, c3, t1;
  always @(posedge dclk) begin cap <= q; cap_t <= q2; end  // what a register loading q_o takes
  integer k;
  initial begin
    #1000;
    for (k = 0; k < 32; k = k + 1) begin
      @(negedge dclk) #7 w = ~w ^ k;   // a change between two destination edges
      @(posedge dclk) #1 begin c1 = cap; t1 = cap_t; end
      @(posedge dclk) #1 c2 = cap;
      @(posedge dclk) #1 c3 = cap;
      $display("W %h %h %h %h %h", w, c1, c2, c3, t1);
    end
    $finish;
  end
endmodule
"""


def _run(tmp: Path, *plusargs: str) -> list[list[int]]:
    (tmp / "hold_tb.v").write_text(UNIT_TB)
    r = subprocess.run(["iverilog", "-g2012", "-s", "hold_tb", "-o", "hold.vvp", "hold_tb.v",
                        str(paths.tb_include_dir() / "cdc_hold.v")], cwd=tmp, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["vvp", "-n", "hold.vvp", *plusargs], cwd=tmp, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return [[int(x, 16) for x in line.split()[1:]] for line in r.stdout.splitlines() if line.startswith("W ")]


@needs_icarus
def test_hold_bus_model(tmp_path: Path) -> None:
    off = _run(tmp_path, "+cdc_settle=0", "+cdc_settle_key=7")
    assert off and all(c1 == c2 == c3 == t1 == w for w, c1, c2, c3, t1 in off)  # ideal wires
    on = _run(tmp_path, "+cdc_settle=1", "+cdc_settle_key=7")
    prev = 0
    mixed1 = mixed2 = twins = 0
    for w, c1, c2, c3, t1 in on:
        changed = prev ^ w
        for c in (c1, c2):
            assert (c ^ w) & ~changed == 0  # only bits that changed may read old ...
            assert (c ^ prev) & ~changed == 0  # ... and then they read exactly their old value
        assert (c2 ^ w) & ~(c1 ^ w) == 0  # a bit new at the first edge stays new
        assert c3 == w  # from the third edge on, the new word
        mixed1 += c1 != w
        mixed2 += c2 != w
        twins += c1 != t1
        prev = w
    assert mixed1 > 16 and 0 < mixed2 < mixed1 and twins > 8
    assert _run(tmp_path, "+cdc_settle=1", "+cdc_settle_key=7") == on  # deterministic per key
    assert _run(tmp_path, "+cdc_settle=1", "+cdc_settle_key=8") != on


@needs_icarus
@pytest.mark.parametrize("vid", ["de_01", "de_03"])
def test_defect_is_caught_by_the_model_only(vid: str) -> None:
    from cdc_env.grade import grade  # noqa: PLC0415
    from cdc_env.task import load_task  # noqa: PLC0415

    task = load_task(vid)
    off = grade(task, task.defective_text, hidden=24, settle=False)
    on = grade(task, task.defective_text, hidden=24, settle=True)
    assert off["verdict"] == "pass", off.get("detail")
    assert on["verdict"] == "fail"
    ref = grade(task, task.text(task.reference), hidden=24, settle=True)
    assert ref["verdict"] == "pass", ref.get("detail")
