"""The reconvergence family (cdc_env/families/reconv, tasks rc_*).

Generator level: the committed rc_* folders are exactly what the generator writes; the family
protocol round-trips its parameters, draws deterministically from a key, keeps its two regions
apart, and refuses bad parameters in one line. Encoding level: every source encoding has a step
that changes two bits or more (the defect needs one) and the repair's code changes one bit per
step, cyclically. Simulation level (Icarus): the shipped defect is caught by the testbench's
order check only with late settling on, and the reference passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cdc_env import families, paths
from cdc_env.errors import CdcError
from cdc_env.families import Draw
from cdc_env.families import reconv as rc
from cdc_env.task import control_ids

needs_icarus = pytest.mark.skipif(
    shutil.which("iverilog") is None or shutil.which("vvp") is None,
    reason="Icarus Verilog (iverilog, vvp) is not installed",
)


@pytest.mark.parametrize("p", rc.VARIANTS, ids=lambda p: p.id)
def test_committed_variant_is_the_generators_output(p: rc.RcParams) -> None:
    base = paths.tasks_dir() / p.id
    files = rc.generate(p)
    on_disk = {str(f.relative_to(base)) for f in base.rglob("*") if f.is_file()}
    assert on_disk == set(files), f"{p.id}: regenerate with python -m cdc_env.families.reconv"
    for rel, text in files.items():
        assert (base / rel).read_text() == text, f"{p.id}/{rel} differs from the generator"


def test_registry_and_control() -> None:
    assert families.get("reconv") is rc.FAMILY
    assert "reconv_control" in control_ids()
    assert rc.FAMILY.training() == rc.VARIANTS
    assert all(rc.FAMILY.region_of(p) == "train" for p in rc.VARIANTS)


def test_parameters_round_trip_and_bad_ones_are_refused() -> None:
    for p in rc.VARIANTS:
        assert rc.FAMILY.from_dict(rc.FAMILY.to_dict(p)) == p
    good = rc.FAMILY.to_dict(rc.VARIANTS[0])
    for bad in ({**good, "encoding": "bin5"}, {**good, "out_kind": "gray"}, {**good, "steps": [5, 2]},
                {**good, "state_names": ["A", "A", "B", "C"]}, {**good, "colour": 1}, {"id": "x"},
                {**good, "ratio_max": 40.0}, {**good, "visible": [1]},
                {**good, "encoding": "bin4", "out_kind": "index"},  # that is out_kind code
                {**good, "encoding": "onehot4", "out_kind": "onehot"}):
        with pytest.raises(CdcError):
            rc.FAMILY.from_dict(bad)


@pytest.mark.parametrize("region", ["train", "heldout"])
def test_draw_is_deterministic_and_stays_in_its_region(region: str) -> None:
    seen = set()
    for k in range(60):
        a = rc.FAMILY.draw(Draw(b"key", f"v{k}"), region, f"x_{k}")
        b = rc.FAMILY.draw(Draw(b"key", f"v{k}"), region, f"x_{k}")
        assert a == b
        assert rc.FAMILY.region_of(a) == region
        files = rc.FAMILY.generate(a)  # every drawn value is a valid task
        assert {"task.toml", "tb.v", "BUG.md"} <= set(files)
        seen.add((a.encoding, a.out_kind))
    assert len(seen) >= 4  # the draw varies the design's shape, not only its names


def test_regions_are_disjoint_and_search_starts_with_the_value() -> None:
    assert not set(rc.TRAIN_ENCODINGS) & set(rc.HELDOUT_ENCODINGS)
    p = rc.VARIANTS[0]
    steps = list(rc.FAMILY.search(p))
    assert steps[0] == p and len({s.steps for s in steps}) == len(steps)
    assert all(s.encoding == p.encoding and s.module == p.module for s in steps)


@pytest.mark.parametrize("name", sorted(rc.ENCODINGS))
def test_encodings_have_a_multibit_step_and_a_unit_distance_repair(name: str) -> None:
    e = rc.ENCODINGS[name]
    assert len(set(e.codes)) == e.n and e.step_bits() >= 2
    width, codes = rc.unit_code(e.n)
    assert len(set(codes)) == e.n and all(c < 1 << width for c in codes)
    for i in range(e.n):
        assert bin(codes[i] ^ codes[(i + 1) % e.n]).count("1") == 1


@needs_icarus
def test_defect_is_caught_only_with_late_settling_and_the_reference_passes() -> None:
    from cdc_env.grade import grade  # noqa: PLC0415

    p = rc.VARIANTS[0]
    base = paths.tasks_dir() / p.id
    defect = (base / f"{p.module}.v").read_text()
    on = grade(p.id, defect, hidden=0)
    assert on["verdict"] == "fail" and "not a state of the source in its order" in on["reason"]
    off = grade(p.id, defect, hidden=8, settle=False)
    assert off["verdict"] == "pass", off["reason"]
    ref = grade(p.id, (base / "reference" / f"{p.module}.v").read_text(), hidden=8)
    assert ref["verdict"] == "pass", ref["reason"]


def test_write_all_into_a_scratch_folder(tmp_path: Path) -> None:
    out = rc.write_all(tmp_path)
    assert [d.name for d in out] == [p.id for p in rc.VARIANTS]
    assert (tmp_path / "rc_01" / "task.toml").read_text().count('family = "reconv"') == 1
