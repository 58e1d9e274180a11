"""The Gymnasium adapter against the real gymnasium: check_env, then a whole episode to reward 1."""

from __future__ import annotations

import warnings

import pytest

from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install .[gym] or .[test])")
adapter = pytest.importorskip("cdc_env.adapters.gym")
pytestmark = [needs_icarus, needs_bwrap]


def test_every_public_task_is_registered():
    from cdc_env.task import list_tasks

    ids = set(gym.registry)
    assert {f"cdc_env/{t.id}" for t in list_tasks()} | {"cdc_env/fifo"} <= ids


def test_check_env_then_an_episode_to_reward_1():
    from gymnasium.utils.env_checker import check_env

    env = gym.make("cdc_env/handshake", hidden=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning from the checker fails the test
        check_env(env.unwrapped)
    task = load_task("handshake")
    obs, info = env.reset(seed=0, options={"task": "handshake"})
    assert obs.startswith("Task: handshake") and [t["function"]["name"] for t in info["tools"]]
    obs, reward, term, trunc, info = env.step({"tool": "write", "arguments": {"path": task.editable,
                                                                            "content": task.reference_text}})
    assert (reward, term, trunc, info["error"]) == (0.0, False, False, None)
    obs, reward, term, trunc, info = env.step('{"tool": "submit", "arguments": {}}')
    assert (reward, term, trunc) == (1.0, True, False)
    assert info["report"]["verdict"] == "pass" and info["report"]["seeds"]["hidden"]["count"] == 8
    env.close()


def test_a_malformed_action_is_an_error_observation_not_an_exception():
    env = gym.make("cdc_env/event", hidden=0, max_steps=3)
    env.reset(seed=1)
    for action in ("not json", 42, {"tool": "nope"}):
        obs, reward, term, trunc, info = env.step(action)
        assert info["error"] in ("unknown_tool", "bad_arguments") and reward == 0.0
        if action == 42:  # says what an action is
            assert obs.startswith('Error: an action names one tool by its name, a string, with its '
                                  'arguments ({"tool": "read", "arguments": {"path": "..."}}), not a value '
                                  'of type int.')
    assert trunc and not term  # the third call spent the budget: submitted by the environment
    env.close()


def test_fifo_reset_serves_a_catalogue_entry_per_seed():
    from cdc_env.families import catalogue

    ids = {e["task_id"] for e in catalogue.entries("fifo")}
    env = gym.make("cdc_env/fifo", hidden=0)
    obs_a, info_a = env.reset(seed=7)
    obs_b, _ = env.reset(seed=7)
    seen = {env.reset(seed=s, options={"task": "fifo"})[1]["task"] for s in range(8, 16)}
    assert obs_a == obs_b and info_a["task"] in ids  # a gated catalogue entry, never a fresh draw
    assert seen <= ids and len(seen) > 1
    # the served variant is a real task: its defect as shipped fails on submit
    _, info_c = env.reset(seed=8)
    obs, reward, term, trunc, info = env.step({"tool": "submit", "arguments": {}})
    assert term and info["report"]["task"] == info_c["task"] and reward == 0.0
    obs, _ = env.reset(options={"task": "event"})
    assert obs.startswith("Task: event")
    env.close()


def test_finalize_grades_a_truncated_episode():
    env = gym.make("cdc_env/handshake", hidden=2)
    task = load_task("handshake")
    env.reset(seed=0)
    env.step({"tool": "write", "arguments": {"path": task.editable, "content": task.reference_text}})
    obs, reward, term, trunc, info = env.unwrapped.finalize()
    assert (reward, term, trunc) == (1.0, False, True)
    env.close()


def test_async_vector_env_with_shared_memory_off():
    """AsyncVectorEnv works with shared_memory=False (text spaces have no shared-memory layout; the
    default, True, is refused by gymnasium with its own message naming the switch)."""
    from gymnasium.vector import AsyncVectorEnv

    envs = AsyncVectorEnv([lambda: gym.make("cdc_env/event", hidden=0, max_steps=3)] * 2, shared_memory=False)
    try:
        obs, _ = envs.reset(seed=0)
        assert all(o.startswith("Task: event") for o in obs)
        obs, reward, term, trunc, info = envs.step([{"tool": "contract", "arguments": {}}] * 2)
        assert list(reward) == [0.0, 0.0] and not any(term) and all("synchron" in o.lower() for o in obs)
    finally:
        envs.close()


def test_the_readme_example_runs_as_written_in_a_fresh_interpreter():
    """The README's Gymnasium block, in a new interpreter that has not imported the adapter: check_env
    passes and the episode reaches reward 1 (issue 37)."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    block = re.search(r"### Gymnasium\n\n```python\n(.*?)```", readme, re.S).group(1)
    assert "import cdc_env.adapters" not in block
    p = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", block], capture_output=True,
                       text=True, timeout=600, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split()[:3] == ["1.0", "True", "pass"], p.stdout


def test_every_control_has_an_id():
    from cdc_env.task import control_ids

    assert {f"cdc_env/{c}" for c in control_ids()} <= set(gym.registry)
    env = gym.make("cdc_env/handshake_control", hidden=0)
    obs, _ = env.reset(seed=0)
    assert obs.startswith("Task: handshake"), obs[:80]
    assert env.unwrapped.env.task.control
    env.close()
