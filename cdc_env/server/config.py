"""What one server serves and its limits (ServerConfig), and the table of tasks it serves."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..env import DEFAULT_HIDDEN
from ..errors import CdcError
from ..sim import names
from ..sim.seeds import parse_hidden
from ..task import Task, load_task

API = "/v1"
MAX_STEPS_CAP = 200  # per-episode tool-call budget a client may ask for
MAX_SIM_RUNS_CAP = 50  # per-episode simulation budget a client may ask for
_INTEGERS = ("workers", "max_episodes", "max_body", "max_connections")
DEFAULT_MAX_BODY = 1 << 20  # bytes; a submission is at most 256 KiB of text, JSON-escaped


@dataclass
class ServerConfig:
    """What one server serves and its limits.

    tasks: id -> Task, exactly the tasks named at start (see ``resolve_tasks``).
    token: the bearer token every request must carry, or None (then bind to loopback only).
    workers: size of the simulation pool (processes); default the number of usable cores.
    max_episodes: live episodes at once; a start beyond it is 429.
    idle_timeout: seconds without a request after which an episode expires.
    max_body: request bodies above this many bytes are 413.
    hidden, sim: defaults for episodes and grades that do not choose (hidden: ``env.DEFAULT_HIDDEN``).
    max_pending: simulation jobs queued or running at once; beyond it requests are 503.
    scratch_root: parent of the server's scratch folder (default: the system temp dir).
    header_timeout, body_timeout: seconds a connection has to send a request's head / body.
    max_connections: open connections at once (beyond it the oldest idle one is closed).
    """

    tasks: dict[str, Task]
    token: str | None = None
    workers: int = 0
    max_episodes: int = 100
    idle_timeout: float = 600.0
    max_body: int = DEFAULT_MAX_BODY
    hidden: int | str = DEFAULT_HIDDEN  # the environment's default, as for CdcRepairEnv, gym, verifiers
    sim: str = "icarus"
    max_pending: int = 0
    scratch_root: Path | None = None
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 4096

    def __post_init__(self) -> None:
        if not self.tasks:
            raise CdcError("the server needs at least one task to serve")
        if self.token is not None and not self.token.strip():
            raise CdcError("the bearer token is empty")
        self.workers = self.workers or len(os.sched_getaffinity(0)) or 1
        for name, value in (("workers", self.workers), ("max_episodes", self.max_episodes),
                            ("max_body", self.max_body), ("idle_timeout", self.idle_timeout),
                            ("header_timeout", self.header_timeout), ("body_timeout", self.body_timeout),
                            ("max_connections", self.max_connections)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or value <= 0:
                raise CdcError(f"{name} must be a positive finite number, not {value!r}")
            if name in _INTEGERS and value != int(value):
                raise CdcError(f"{name} must be a whole number, not {value!r}")
        self.max_pending = self.max_pending or self.max_episodes + 4 * self.workers
        try:
            self.hidden = parse_hidden(self.hidden)
        except ValueError as exc:
            raise CdcError(str(exc)) from None
        if self.sim not in (*names(), "auto"):
            raise CdcError(f"unknown simulator '{self.sim}' ({', '.join((*names(), 'auto'))})")


def resolve_tasks(names: list[str]) -> dict[str, Task]:
    """Load the named tasks (public ids or task-folder paths, held-out ones included) by id.

    A held-out task is served only when its folder is named here; two tasks with one id are an error.
    """
    out: dict[str, Task] = {}
    for name in names:
        task = load_task(name)
        if task.id in out and out[task.id].dir != task.dir:
            raise CdcError(f"two tasks named at start share the id '{task.id}': "
                           f"{out[task.id].dir} and {task.dir}")
        out[task.id] = task
    return out
