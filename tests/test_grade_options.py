"""A grade's options are one value (``GradeOptions``): checked once when made, a one-line error for a
bad value, the same report whether ``grade()`` is given the object or its keywords, and no function
in grade.py with more than 8 parameters."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from cdc_env.errors import CdcError
from cdc_env.grade import GradeOptions, OptionsError, grade
from cdc_env.sim.base import SEED_LIMITS
from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

GRADE_PY = Path(__file__).resolve().parents[1] / "cdc_env" / "grade.py"
MAX_PARAMETERS = 8


def test_no_function_in_grade_py_takes_more_than_8_parameters():
    tree = ast.parse(GRADE_PY.read_text(encoding="utf-8"))
    counts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            counts[node.name] = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                                 + (a.vararg is not None) + (a.kwarg is not None))
    assert "grade" in counts and "_pipeline" in counts and "_simulate" in counts
    assert {n: k for n, k in counts.items() if k > MAX_PARAMETERS} == {}


@pytest.mark.parametrize(("field", "value", "starts"), [
    ("sim", "icarsu", "sim: unknown simulator 'icarsu'"),
    ("hidden", -1, "hidden must be a number"),
    ("hidden", True, "hidden must be a number"),
    ("hidden", "x" * 5000, "hidden must be a number"),
    ("settle", "yes", "settle: 'yes' is not True or False"),
    ("gate", 1, "gate: '1' is not True or False"),
    ("sandbox", None, "sandbox: 'None' is not True or False"),
    ("batch", 0, "batch: '0' is not True or False"),
    ("jobs", -2, "jobs: '-2' is not None or a whole number >= 0"),
    ("jobs", 2.5, "jobs: '2.5'"),
    ("batch_policy", "certifed", "batch_policy: unknown batching policy 'certifed'"),
    ("seed_limits", {"cpu_s": 1}, "seed_limits: a dict, not sim.proc.Limits"),
    ("disable", "gate", "disable: a set of switch names, not str"),
    ("disable", {"rule:"}, "disable: unknown switch 'rule:'"),
    ("disable", {"stage:hiden"}, "disable: unknown switch 'stage:hiden'"),
])
def test_a_bad_value_is_one_line_before_anything_runs(field, value, starts):
    with pytest.raises(OptionsError) as err:
        GradeOptions(**{field: value})
    msg = str(err.value)
    assert isinstance(err.value, CdcError) and isinstance(err.value, ValueError)
    assert msg.startswith(starts) and "\n" not in msg and len(msg) < 300, msg
    with pytest.raises(OptionsError):  # grade()'s keywords are checked the same way, before any work
        grade("handshake", "", **{field: value})


def test_good_values_and_their_normal_form():
    o = GradeOptions(sim="auto", hidden="8", jobs=0, disable={"rule:RAW_CROSSING", "stage:hidden"},
                     batch_policy="certified", seed_limits=SEED_LIMITS)
    assert o.hidden == 8 and o.disable == frozenset({"rule:RAW_CROSSING", "stage:hidden"})
    assert GradeOptions(hidden=None).hidden is None and GradeOptions().hidden == "all"
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.sim = "icarus"  # type: ignore[misc]
    r = GradeOptions(disable={"gate", "settle"}).resolved()
    assert (r.gate, r.settle, r.batch_policy) == (False, False, "self-checked")
    with pytest.raises(TypeError, match="hiden"):
        grade("handshake", "", hiden=0)


def _same(a: dict, b: dict) -> dict:
    timing = {"cpu_s", "wall_s", "peak_rss_kb", "accounting", "sandbox_selftest"}
    strip = {k: v for k, v in a.items() if k not in timing}
    other = {k: v for k, v in b.items() if k not in timing}
    for rep in (strip, other):
        rep["stages"] = [{k: v for k, v in s.items() if k != "cpu_s"} for s in rep["stages"]]
    assert strip == other
    return strip


@needs_icarus
@needs_bwrap
def test_the_object_and_the_keywords_give_the_same_report():
    task = load_task("handshake")
    by_keywords = grade(task, task.reference_text, sim="icarus", hidden=1, settle=False,
                        disable={"stage:hidden"})
    opts = GradeOptions(sim="icarus", hidden=1, settle=False, disable=frozenset({"stage:hidden"}))
    by_object = grade(task, task.reference_text, opts)
    rep = _same(by_keywords, by_object)
    assert rep["verdict"] == "pass" and rep["settle"] is False and rep["disabled"] == ["stage:hidden"]
    assert list(rep["seeds"]) == ["visible"]
    # a keyword replaces that field of the object
    again = grade(task, task.reference_text, GradeOptions(sim="icarus", hidden=1, settle=True),
                  settle=False, disable={"stage:hidden"})
    _same(again, by_object)
