"""The state behind the app: served tasks, live episodes (with their scratch folders), the pool.

Episode state (a CdcRepairEnv, a few KB) lives in the server process. Calls that cannot simulate
are answered here; calls that may simulate go to the worker pool. Calls on one episode are
serialized; idle episodes expire after ``idle_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import CdcError
from ..sim.proc import bwrap_path
from ..sim.seeds import parse_hidden
from ..task import Task
from .config import ServerConfig
from .errors import ApiError
from .limits import check_arguments
from .models import GradeRequest, StartRequest, StepRequest
from .pool import PortableEnv, WorkerPool, _worker_grade, _worker_step

_ENDED_MEMORY = 10_000  # how many expired/closed episode ids are remembered for a clear 410
_REPORT_MEMORY = 1_000  # how many grade reports of submitted episodes the harness can still fetch
_INSTANCE_LEN = 8  # an episode id starts with the server instance's id


@dataclass
class _Episode:
    id: str
    env: PortableEnv
    scratch: Path
    steps_left: int
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class EnvServer:
    """The state behind the app: served tasks, live episodes, the worker pool."""

    def __init__(self, config: ServerConfig) -> None:
        if bwrap_path() is None:
            raise CdcError("the server runs agent designs under bubblewrap, which is missing: "
                           "apt-get install -y bubblewrap")
        self.config = config
        self.episodes: dict[str, _Episode] = {}
        self.ended: collections.OrderedDict[str, str] = collections.OrderedDict()
        # The grade report of each submitted episode, for the harness's own route
        # (GET /v1/episodes/{id}/report): the OpenEnv observation and MCP's tools/call carry only
        # what the model may see. Kept after the episode ends (a WebSocket or MCP session ends its
        # episode when it closes), the last _REPORT_MEMORY of them.
        self.reports: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self.scratch_root = Path()  # made when the app starts, removed when it stops
        self.pool = WorkerPool(config.workers, config.max_pending)
        self._reaper: asyncio.Task | None = None
        self.instance = secrets.token_hex(_INSTANCE_LEN // 2)  # begins every episode id it issues

    # -- the pool (the names tests and benchmarks use)
    @property
    def jobs_in_flight(self) -> int:
        return self.pool.jobs_in_flight

    @property
    def _pool(self) -> Any:
        """The pool's process executor (None before the first job or after a worker death)."""
        return self.pool.executor

    async def run_job(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in a worker process (see WorkerPool.run)."""
        return await self.pool.run(fn, *args)

    # -- life cycle
    async def startup(self) -> None:
        self.scratch_root = Path(tempfile.mkdtemp(prefix="cdc-serve-", dir=self.config.scratch_root))
        self.pool.start(self.scratch_root)
        self._reaper = asyncio.create_task(self._reap_loop())

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        self.pool.shutdown()
        for eid in list(self.episodes):
            self._end(eid, "closed")
        shutil.rmtree(self.scratch_root, ignore_errors=True)

    async def _reap_loop(self) -> None:
        period = min(30.0, max(0.1, self.config.idle_timeout / 4))
        while True:
            await asyncio.sleep(period)
            self.reap()

    def reap(self) -> int:
        """Expire idle episodes (never one with a call in progress); return how many."""
        now = time.monotonic()
        stale = [e.id for e in self.episodes.values()
                 if not e.busy and now - e.last_used > self.config.idle_timeout]
        for eid in stale:
            self._end(eid, "expired")
        return len(stale)

    def _end(self, eid: str, why: str) -> None:
        ep = self.episodes.pop(eid, None)
        if ep is None:
            return
        ep.env.close()
        shutil.rmtree(ep.scratch, ignore_errors=True)
        self.ended[eid] = why
        while len(self.ended) > _ENDED_MEMORY:
            self.ended.popitem(last=False)

    # -- lookups
    def task(self, task_id: str) -> Task:
        task = self.config.tasks.get(task_id)
        if task is None:
            raise ApiError(404, "task_not_found", f"this server does not serve a task '{task_id[:80]}'; "
                                                  "GET /v1/tasks lists the ones it does")
        return task

    def episode(self, eid: str) -> _Episode:
        ep = self.episodes.get(eid)
        if ep is not None and not ep.busy and time.monotonic() - ep.last_used > self.config.idle_timeout:
            self._end(eid, "expired")
            ep = None
        if ep is None:
            self._gone(eid)
        return ep

    def _gone(self, eid: str) -> None:
        """Raise the error for an episode that is not live: 410 if it expired or was closed, else 404."""
        why = self.ended.get(eid)
        if why == "expired":
            raise ApiError(410, "episode_expired",
                           f"episode {eid} expired after {self.config.idle_timeout:g} s without a request; "
                           "its scratch space is freed. Start a new episode.")
        if why == "closed":
            raise ApiError(410, "episode_closed", f"episode {eid} was closed. Start a new episode.")
        if len(eid) == _INSTANCE_LEN + 24 and not eid.startswith(self.instance):
            raise ApiError(410, "episode_from_earlier_server",
                           f"episode {eid} was started by an earlier run of this server, which has "
                           "restarted since; episodes do not survive a restart. Start a new episode.")
        raise ApiError(404, "episode_not_found", "no such episode on this server")

    def hidden_for(self, task: Task, hidden: int | str | None) -> int | str:
        try:
            return parse_hidden(self.config.hidden if hidden is None else hidden,
                                at_most=task.seeds.hidden_count, task_id=task.id)
        except ValueError as exc:
            raise ApiError(422, "bad_request", str(exc)) from None

    # -- operations
    async def start(self, req: StartRequest) -> dict:
        task = self.task(req.task)
        if len(self.episodes) >= self.config.max_episodes:
            self.reap()
        for ep in sorted(self.episodes.values(), key=lambda e: e.last_used):  # finished ones do not count
            if len(self.episodes) < self.config.max_episodes:
                break
            if ep.env.done and not ep.busy:
                self._end(ep.id, "closed")
        if len(self.episodes) >= self.config.max_episodes:
            raise ApiError(429, "episode_limit", f"{self.config.max_episodes} episodes are live, the limit; "
                                                 "close one or wait for idle ones to expire")
        try:
            env = PortableEnv(task, max_steps=req.max_steps, max_sim_runs=req.max_sim_runs,
                              hidden=self.hidden_for(task, req.hidden), sim=req.sim or self.config.sim,
                              rung=req.rung or "full")
        except CdcError as exc:
            raise ApiError(422, "bad_request", str(exc)) from None
        first = env.reset()
        eid = self.instance + secrets.token_urlsafe(18)
        self.episodes[eid] = _Episode(eid, env, self.scratch_root / f"ep-{eid}", first["steps_left"])
        return {"episode_id": eid, "idle_timeout_s": self.config.idle_timeout, **first}

    async def step(self, eid: str, req: StepRequest) -> dict:
        ep = self.episode(eid)
        ep.busy += 1
        try:
            async with ep.lock:
                if self.episodes.get(eid) is not ep:  # closed while this call waited its turn
                    self._gone(eid)
                args, ok = self.checked_arguments(req.tool, req.arguments)
                if (req.tool in ("run_visible", "submit") and ok) or ep.steps_left <= 1:
                    out, ep.env = await self.run_job(_worker_step, ep.env, req.tool, args, str(ep.scratch))
                else:  # no simulation: answered here (a bad call never reaches a worker)
                    out = ep.env.step(req.tool, args)
                ep.steps_left = out["steps_left"]
                if out.get("report") is not None:
                    self._keep_report(eid, out["report"])
                return out
        finally:
            ep.busy -= 1
            ep.last_used = time.monotonic()

    @staticmethod
    def checked_arguments(tool: object, arguments: object) -> tuple[object, bool]:
        """(arguments, whether they fit the tool's JSON Schema); see limits.check_arguments."""
        return check_arguments(tool, arguments)

    def _keep_report(self, eid: str, report: dict) -> None:
        self.reports[eid] = report
        while len(self.reports) > _REPORT_MEMORY:
            self.reports.popitem(last=False)

    def report(self, eid: str) -> dict:
        """The grade report of a submitted episode, live or ended (for the harness, never the model)."""
        rep = self.reports.get(eid)
        if rep is not None:
            return {"episode_id": eid, "report": rep}
        if eid in self.episodes:
            raise ApiError(409, "not_submitted", f"episode {eid} has not been submitted yet: its report "
                                                 "exists from the step that ends it")
        self._gone(eid)
        raise AssertionError("unreachable")  # _gone always raises

    async def close(self, eid: str) -> dict:
        ep = self.episode(eid)
        ep.busy += 1
        try:
            async with ep.lock:
                self._end(eid, "closed")
        finally:
            ep.busy -= 1
        return {"episode_id": eid, "closed": True}

    async def grade(self, req: GradeRequest) -> dict:
        task = self.task(req.task)
        hidden = self.hidden_for(task, req.hidden)
        scratch = self.scratch_root / f"grade-{secrets.token_hex(8)}"
        try:
            return await self.run_job(_worker_grade, task, req.submission, req.sim or self.config.sim,
                                      hidden, str(scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def health(self) -> dict:
        c = self.config
        return {"status": "ok", "version": __version__, "tasks": len(c.tasks), "episodes": len(self.episodes),
                "max_episodes": c.max_episodes, "workers": c.workers, "jobs_in_flight": self.jobs_in_flight,
                "idle_timeout_s": c.idle_timeout}


