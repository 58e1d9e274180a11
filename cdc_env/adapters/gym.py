"""A Gymnasium environment over ``CdcRepairEnv``: text observations, tool calls as actions.

    import gymnasium as gym
    env = gym.make("cdc_env.adapters.gym:cdc_env/handshake")   # gymnasium imports the module first

    # or: import cdc_env.adapters.gym (registers cdc_env/<task> for every public task, every no-bug
    # control -- cdc_env/handshake_control ... -- and cdc_env/<family> per catalogue), then
    # gym.make("cdc_env/handshake")
    obs, info = env.reset(seed=0)               # obs: the task prompt; info["tools"]: the tool schemas
    obs, reward, terminated, truncated, info = env.step({"tool": "read", "arguments": {"path": "hs_top.v"}})

Actions: ``{"tool": name, "arguments": dict or JSON text}`` (or the JSON text of that object, or a
``(name, arguments)`` pair) -- exactly one tool call, as ``CdcRepairEnv.step`` takes it. Any action
is accepted and counted; a malformed one is answered with an error observation, never an
exception.

Observations: the text for the model. ``info`` holds everything else of the step result
(``error``, budgets, ``report`` on the last step -- the grader's report is for the harness, not
the model) and, after ``reset``, ``task``, ``editable``, ``tools`` (the OpenAI tool definitions)
and ``system_prompt``.

Rewards: 1.0 or 0.0 on the step that ends the episode, 0.0 before. ``terminated``: the agent
submitted; ``truncated``: the tool-call budget ran out and the environment submitted the design
as it stood (``TimeLimit`` wrappers that truncate earlier should call ``env.unwrapped.finalize()``
to grade the design before resetting).

``reset(seed=, options={"task": T})`` chooses the task: a public task id, a task folder, a
catalogue entry (``"fifo@17"``), or a family name with a catalogue (``"fifo"``, ``"reset"``) --
an entry of that family's catalogue picked by the seed (families/catalogue.py: every entry has
passed the variant gate), so a seed names one gated variant and a stream of seeds a stream of
them. Nothing uncatalogued is generated or served. Without ``options`` the task
given to the constructor is used. ``options={"rung": R}`` serves the episode at an information rung
(``full``, the default, ``symptom`` or ``minimal``: cdc_env.rungs); no-bug controls are tasks like
any other (``"handshake_control"``).

``action_space.sample()`` draws only side-effect-free calls (``read``, ``contract``): it exists for
``check_env`` and smoke tests, not as a policy.

Vector environments: ``gymnasium.vector.AsyncVectorEnv(fns, shared_memory=False)`` (text
observations and tool-call actions have no shared-memory layout, so gymnasium's default
``shared_memory=True`` is refused with a message naming the switch); ``SyncVectorEnv`` as is.

Not covered: rendering beyond ``"ansi"``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from ..env import DEFAULT_HIDDEN, CdcRepairEnv
from ..errors import CdcError
from ..prompts import AGENT_SYSTEM_PROMPT
from ..rungs import check_rung
from ..task import Task, control_ids, list_tasks, load_task
from ..tools import TOOL_NAMES

MAX_TEXT = 1 << 20  # characters: more than any observation the environment produces


class TextSpace(spaces.Space[str]):
    """Any Unicode text up to ``max_length`` characters (gymnasium's Text space allows only a fixed
    character set; observations here hold compiler output and Verilog)."""

    def __init__(self, max_length: int = MAX_TEXT, seed: int | None = None) -> None:
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        size = int(self.np_random.integers(0, 64))
        return "".join(chr(int(c)) for c in self.np_random.integers(32, 127, size=size))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace({self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length


class ToolCallSpace(spaces.Space[dict]):
    """One tool call: ``{"tool": str, "arguments": dict | str}``."""

    def __init__(self, editable: str = "", seed: int | None = None) -> None:
        self.editable = editable
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> dict:
        if self.np_random.integers(0, 2):
            return {"tool": "contract", "arguments": {}}
        return {"tool": "read", "arguments": {"path": self.editable}}

    def contains(self, x: Any) -> bool:
        return (isinstance(x, dict) and set(x) <= {"tool", "arguments"} and isinstance(x.get("tool"), str)
                and isinstance(x.get("arguments", {}), dict | str))

    def __repr__(self) -> str:
        return "ToolCallSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ToolCallSpace)


def catalogue_draw(family: str, rng: Any) -> str:
    """The catalogue id (``fifo@17``) of ``family``'s entry picked with ``rng`` (a numpy Generator)."""
    from ..families import catalogue

    es = catalogue.entries(family)
    if not es:
        raise CdcError(f"the {family} family has no catalogue entries "
                       f"(cdc-env catalogue mint --family {family})")
    return es[int(rng.integers(0, len(es)))]["id"]


def catalogued_families() -> list[str]:
    from ..families import catalogue, names

    return [f for f in names() if catalogue.entries(f)]


class CdcGymEnv(gymnasium.Env):
    """See the module docstring. Keyword arguments go to ``CdcRepairEnv`` (budgets, hidden, sim)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, task: str | Path | Task = "handshake", *, max_steps: int = 30, max_sim_runs: int = 6,
                 hidden: int | str = DEFAULT_HIDDEN, sim: str = "icarus", render_mode: str | None = None,
                 **env_kwargs: Any) -> None:
        if render_mode not in (None, "ansi"):
            raise CdcError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.render_mode = render_mode
        self.default_task = task
        self.env_kwargs = dict(max_steps=max_steps, max_sim_runs=max_sim_runs, hidden=hidden, sim=sim,
                               **env_kwargs)
        self._scratch = Path(tempfile.mkdtemp(prefix="cdc-gym-"))
        self._env: CdcRepairEnv | None = None
        self._last_obs = ""
        self.observation_space = TextSpace()
        self.action_space = ToolCallSpace()
        self._open(self._resolve(task))

    # ------------------------------------------------------------------ tasks

    def _resolve(self, name: str | Path | Task) -> Task:
        if isinstance(name, Task):
            return name
        from ..families import REGISTRY

        if str(name) in REGISTRY and not (Path(str(name)) / "task.toml").is_file():
            return load_task(catalogue_draw(str(name), self.np_random))
        return load_task(name)

    def _open(self, task: Task) -> None:
        if self._env is not None and (self._env.task.dir, self._env.task.id) == (task.dir, task.id):
            return
        if self._env is not None:
            self._env.close()
        self._env = CdcRepairEnv(task, **self.env_kwargs)
        self.action_space.editable = task.editable  # the same space object: its seed stays

    @property
    def env(self) -> CdcRepairEnv:
        """The underlying CdcRepairEnv of the current task."""
        assert self._env is not None
        return self._env

    # ------------------------------------------------------------------ Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        options = options or {}
        unknown = set(options) - {"task", "rung"}
        if unknown:
            raise CdcError(f"unknown reset option(s): {', '.join(sorted(unknown))} (known: rung, task)")
        rung = check_rung(options.get("rung"))
        self._open(self._resolve(options.get("task", self.default_task)))
        first = self.env.reset(rung)
        info = {k: v for k, v in first.items() if k not in ("observation", "tools")}
        info.update(tools=self.env.tool_definitions(), tool_names=list(TOOL_NAMES),
                    system_prompt=AGENT_SYSTEM_PROMPT)
        self._last_obs = first["observation"]
        return first["observation"], info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        name, args = _parse_action(action)
        res = self.env.step(name, args)
        return self._out(res)

    def finalize(self) -> tuple[str, float, bool, bool, dict]:
        """Grade the current design now (the harness truncates the episode); a step-shaped result."""
        res = self.env.finalize()
        obs, reward, _, _, info = self._out(res)
        return obs, reward, False, True, info

    def _out(self, res: dict) -> tuple[str, float, bool, bool, dict]:
        info = {k: v for k, v in res.items() if k != "observation"}
        reward = float(res["reward"]) if res["reward"] is not None else 0.0
        truncated = bool(res["done"] and (res["auto_submitted"] or res.get("truncated")))
        terminated = bool(res["done"] and not truncated)
        self._last_obs = res["observation"]
        return res["observation"], reward, terminated, truncated, info

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None
        shutil.rmtree(self._scratch, ignore_errors=True)
        super().close()


def _parse_action(action: Any) -> tuple[object, object]:
    """(tool name, arguments) from any of the accepted action shapes; garbage passes through, to be
    answered by CdcRepairEnv as an unknown tool or bad arguments."""
    if isinstance(action, str | bytes):
        try:
            action = json.loads(action)
        except ValueError:
            return action if isinstance(action, str) else None, None
    if isinstance(action, tuple | list) and len(action) == 2:
        return action[0], action[1]
    if isinstance(action, dict):
        return action.get("tool", action.get("name")), action.get("arguments")
    return action, None  # e.g. 42: the environment says what an action is


def register_envs() -> list[str]:
    """Register ``cdc_env/<task>`` for every public task, every no-bug control and
    ``cdc_env/<family>`` for every family with a catalogue (its gated entries, drawn by the seed).
    Gymnasium 1.x has no plugin entry point (0.x's ``gymnasium.envs`` group was removed in 1.0):
    its way to make without importing first is the ``"module:id"`` form,
    ``gym.make("cdc_env.adapters.gym:cdc_env/handshake")``."""
    ids = []
    for name in [t.id for t in list_tasks()] + list(control_ids()) + catalogued_families():
        env_id = f"cdc_env/{name}"
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="cdc_env.adapters.gym:CdcGymEnv", kwargs={"task": name},
                               disable_env_checker=False)
        ids.append(env_id)
    return ids


ENV_IDS = register_envs()
