"""Fuzzed tool calls (hypothesis): random tool names, wrong types, huge strings, unicode, nested
junk, JSON text and broken JSON. Every call returns a well-formed result whose budgets add up;
a malformed call is an error observation, never an exception.

The environment here grades no hidden seeds and has no simulation budget, so a fuzzed
``run_visible`` never simulates; a ``submit`` that happens to be well-formed grades the visible
seeds only.
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_env.env import CdcRepairEnv
from cdc_env.tools import TOOL_NAMES

KEYS = {"observation", "error", "done", "auto_submitted", "steps_used", "steps_left", "sim_runs_used",
        "sim_runs_left", "reward", "report"}
ERRORS = {None, "unknown_tool", "bad_arguments", "refused", "budget", "episode_over", "tool_error"}

names = st.one_of(
    st.sampled_from(TOOL_NAMES),
    st.sampled_from([t.upper() for t in TOOL_NAMES] + [t + " " for t in TOOL_NAMES] + ["", "read\x00"]),
    st.text(max_size=40),
    st.integers(), st.none(), st.binary(max_size=20), st.lists(st.text(max_size=5), max_size=3),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                    st.text(max_size=60), st.sampled_from(["hs_top.v", "./hs_top.v", "CONTRACT.md",
                                                           "../tb.v", "/etc/passwd", "tb.v"]))
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=12)
huge = st.sampled_from(["x" * 300_000, "\u00e9" * 140_000, "\U0001f600" * 70_000, "[" * 50_000,
                        '{"path": "' + "a" * 100_000 + '"}'])
arguments = st.one_of(
    junk,
    st.fixed_dictionaries({"path": scalars}),
    st.fixed_dictionaries({"path": scalars, "content": st.one_of(scalars, huge)}),
    st.dictionaries(st.sampled_from(["path", "content", "x"]), junk, max_size=3),
    junk.map(json.dumps),
    st.text(max_size=80),  # mostly broken JSON
    huge,
    st.binary(max_size=40),
)


def _check(out: dict, env: CdcRepairEnv, before: int, was_done: bool) -> None:
    assert set(out) == KEYS
    assert isinstance(out["observation"], str) and out["observation"]
    assert out["error"] in ERRORS
    assert out["steps_used"] + out["steps_left"] == env.max_steps
    assert out["sim_runs_used"] + out["sim_runs_left"] == env.max_sim_runs
    assert out["steps_used"] == (before if was_done else before + 1)
    json.dumps({k: v for k, v in out.items() if k != "report"})  # JSON-ready
    if out["error"] in ("unknown_tool", "bad_arguments"):
        assert out["observation"].startswith("Error") and len(out["observation"]) < 1000
    assert (out["report"] is not None) == (out["reward"] is not None)


needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog is not installed")


@needs_icarus
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, args=arguments)
def test_one_fuzzed_call_never_raises(name, args):
    env = CdcRepairEnv("handshake", max_sim_runs=0, hidden=0)
    env.reset()
    out = env.step(name, args)
    _check(out, env, 0, False)
    if name not in TOOL_NAMES:
        assert out["error"] == "unknown_tool"
    env.close()


@needs_icarus
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(names, arguments), min_size=1, max_size=14))
def test_fuzzed_episodes_keep_budgets_consistent(calls):
    env = CdcRepairEnv("handshake", max_steps=10, max_sim_runs=0, hidden=0)
    env.reset()
    used, done = 0, False
    for name, args in calls:
        out = env.step(name, args)
        _check(out, env, used, done)
        if done:
            assert out["error"] == "episode_over" and out["report"] is None
        used, done = out["steps_used"], out["done"]
    if used == env.max_steps:
        assert done  # the budget ran out: the environment submitted
    env.close()


def test_deeply_nested_names_and_arguments_are_error_observations():
    env = CdcRepairEnv("handshake", max_sim_runs=0, hidden=0)
    env.reset()
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    nested_dict: dict = {}
    for _ in range(100_000):
        nested_dict = {"path": nested_dict}
    calls = [(deep, None), ("read", deep), ("read", nested_dict), ("write", "[" * 100_000),
             ("read", '{"path": ' * 50_000)]
    for i, (name, args) in enumerate(calls):
        out = env.step(name, args)
        _check(out, env, i, False)
        assert out["error"] in ("unknown_tool", "bad_arguments")
