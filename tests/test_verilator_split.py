"""The split Verilator build (cdc_env/sim/verilator.py, "Split build"): the design with its
primitives as a library per patch, the testbench compiled once per task. It must give what a
build of one model gives, seed by seed (status, reason, checks, trace hash), alone and batched --
including seeds that a primitive's monitor call fails, where the library's evaluation order
matters -- and reuse the testbench's object across patches."""

from __future__ import annotations

import pytest

from cdc_env.gate import synthesized
from cdc_env.sim import verilator
from cdc_env.sim.seeds import hidden_seeds, plan_seed, visible_seeds
from cdc_env.task import load_task

from .test_verilator import needs_verilator, vl_cache  # noqa: F401  (vl_cache: a pytest fixture)


def _netlist(task, text: str) -> dict[str, str]:
    return synthesized(task, text)[0]


def _reference(task) -> str:
    ref = task.path(task.reference)
    return (ref / task.editable if ref.is_dir() else ref).read_text()


def _key(r) -> tuple:
    return (r.status, r.reason, r.checks, r.trace_hash, r.sim_time_ps)


def test_the_library_top_names_what_one_model_names():
    task = load_task("fifo_01")
    top = verilator.split_lib_top(task, _netlist(task, task.text(task.editable)))
    assert top is not None
    assert f"module {task.tb_top}(" in top  # the testbench's module name: %m starts with it
    assert f"  {task.top} dut(" in top  # the testbench's instance name
    assert "input [15:0] wr_data_i;" in top and "output [4:0] wr_level_o;" in top
    assert f'`include "{verilator.SPLIT_LIB}"' in top


def test_a_functions_inputs_are_not_ports():
    """Yosys writes a $pmux as a function with inputs of its own, after the ports (seen on
    handshake_control): those are not the design's ports."""
    task = load_task("fifo_01")
    netlist = ("module async_fifo(a, q);\n  input a;\n  wire a;\n  output [1:0] q;\n  wire [1:0] q;\n"
               "  function [1:0] f;\n    input [1:0] a;\n    input [5:0] b;\n    f = a;\n  endfunction\n"
               "  assign q = f(2'b01, 6'd0);\nendmodule\n")
    top = verilator.split_lib_top(task, {task.editable: netlist})
    assert top is not None
    assert f"module {task.tb_top}(a, q);" in top and "input [5:0] b;" not in top
    assert "async_fifo dut(.a(a), .q(q));" in top


@pytest.mark.parametrize("netlist", [
    "module async_fifo(a, b);\n  input a;\nendmodule\n",  # a listed port without its declaration
    "module async_fifo(a, b);\n  input a;\n  inout b;\nendmodule\n",  # an inout port
    "module async_fifo(a);\n  input a;\nendmodule\nmodule other(b);\n  input b;\nendmodule\n",  # two modules
    "module not_the_top(a);\n  input a;\nendmodule\n",
    "module async_fifo();\nendmodule\n",  # no ports
])
def test_a_netlist_not_of_the_plain_form_is_one_model(netlist):
    task = load_task("fifo_01")
    assert verilator.split_lib_top(task, {task.editable: netlist}) is None


@needs_verilator
@pytest.mark.parametrize("tid,which", [("fifo_01", "defect"), ("fifo_01", "reference"),
                                       ("handshake", "defect"), ("rst_01", "defect")])
def test_the_split_build_gives_what_one_model_gives(vl_cache, tmp_path, monkeypatch, tid, which):  # noqa: F811
    """Every seed alike, alone and batched. The defects fail hidden seeds through the primitives'
    monitor calls (gray check, recovery): without the wrapper's #0 those counted fewer checks."""
    monkeypatch.setenv(verilator.MODEL_CACHE_ENV, "0")
    task = load_task(tid)
    text = _reference(task) if which == "reference" else task.text(task.editable)
    design = _netlist(task, text)
    sim = verilator.Verilator()
    monkeypatch.setenv(verilator.SPLIT_ENV, "0")
    one = sim.build_netlist(task, design, tmp_path / "one")
    monkeypatch.setenv(verilator.SPLIT_ENV, "1")
    split = sim.build_netlist(task, design, tmp_path / "split")
    assert one.status == split.status == "pass", split.log
    assert "split" not in one.extra and split.extra["split"] == "yes"
    assert split.extra["batch_hazards"] == one.extra["batch_hazards"]
    plans = [plan_seed(task, s) for s in visible_seeds(task) + hidden_seeds(task, 24)]
    alone = [_key(sim.run_seed(one, p, settle=True)) for p in plans]
    assert [_key(sim.run_seed(split, p, settle=True)) for p in plans] == alone
    assert [_key(r) for r in sim.run_batch(split, plans, settle=True).results] == alone
    if which == "defect":
        assert any(k[0] == "fail" for k in alone)  # the comparison covers failing seeds


@needs_verilator
def test_the_testbench_is_compiled_once_per_task(vl_cache, tmp_path, monkeypatch):  # noqa: F811
    """A second patch with the same ports reuses the testbench's object; only the library is
    built, and the patch's model is its own."""
    monkeypatch.setenv(verilator.MODEL_CACHE_ENV, "0")
    monkeypatch.setenv(verilator.SPLIT_ENV, "1")
    task = load_task("fifo_01")
    sim = verilator.Verilator()
    first = sim.build_netlist(task, _netlist(task, task.text(task.editable)), tmp_path / "a")
    second = sim.build_netlist(task, _netlist(task, _reference(task)), tmp_path / "b")
    assert first.status == second.status == "pass"
    assert second.extra["tb_cache"] == "hit"
    assert first.extra["model_key"] != second.extra["model_key"]


def test_the_wrapper_edits_refuse_an_unexpected_wrapper(tmp_path):
    sv, cpp = tmp_path / "x.sv", tmp_path / "x.cpp"
    sv.write_text("module x;\nendmodule\n")  # no hash, no sequential block: not Verilator's wrapper
    cpp.write_text("")
    with pytest.raises(ValueError, match="unexpected protected-library wrapper"):
        verilator._normalize_wrapper(sv, cpp)


def test_a_certificate_names_the_kind_of_build(monkeypatch, tmp_path):
    """A parity certificate covers whether netlists build split and the split's trusted HDL: one
    issued for the one-model build does not vouch for a split build, and the other way round."""
    from cdc_env.sim import certs  # noqa: PLC0415

    monkeypatch.setenv(verilator.SPLIT_ENV, "0")
    one = certs.runner_fingerprint()
    monkeypatch.setenv(verilator.SPLIT_ENV, "1")
    split = certs.runner_fingerprint()
    assert one != split
    # The split's HDL is part of it: a changed library top changes the fingerprint.
    trusted = tmp_path / "verilator"
    trusted.mkdir()
    real = verilator.paths.trusted_source
    for name in (verilator.SPLIT_TB, verilator.SPLIT_LIB):
        (trusted / name).write_bytes(real("verilator", name).read_bytes())
    (trusted / verilator.SPLIT_LIB).write_text((trusted / verilator.SPLIT_LIB).read_text() + "// changed\n")

    def patched(kind: str, name: str):
        return trusted / name if kind == "verilator" and name in (verilator.SPLIT_TB, verilator.SPLIT_LIB) \
            else real(kind, name)

    monkeypatch.setattr(verilator.paths, "trusted_source", patched)
    assert certs.runner_fingerprint() != split
