"""The bounded pool of worker processes that runs everything that may simulate.

Jobs get their inputs by value (an environment is pickled to a worker and back with the result),
so the server adopts nothing until a job returns. A dead worker breaks the whole pool and fails
every call on it; such a call had no effect and is retried once on a fresh pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..env import CdcRepairEnv
from ..grade import GradeOptions, grade
from ..task import Task
from .errors import ApiError

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


class PortableEnv(CdcRepairEnv):
    """A CdcRepairEnv that can be pickled to a worker process and back (its locks are rebuilt)."""

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if not isinstance(v, _LOCK_TYPES)}
        state["__locks__"] = {k: _LOCK_TYPES.index(type(v)) for k, v in self.__dict__.items()
                              if isinstance(v, _LOCK_TYPES)}
        return state

    def __setstate__(self, state: dict) -> None:
        locks = state.pop("__locks__", {})
        self.__dict__.update(state)
        for name, kind in locks.items():
            setattr(self, name, (threading.Lock, threading.RLock)[kind]())


@contextlib.contextmanager
def _scratch(path: str) -> Iterator[None]:
    """Make ``path`` the temp dir of everything a grade creates (grade folders, builds)."""
    Path(path).mkdir(parents=True, exist_ok=True)
    old = tempfile.tempdir
    tempfile.tempdir = path
    try:
        yield
    finally:
        tempfile.tempdir = old


def _worker_init(root: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server shuts the pool down itself
    tempfile.tempdir = root


def _worker_step(env: PortableEnv, tool: object, args: object, scratch: str) -> tuple[dict, PortableEnv]:
    with _scratch(scratch):
        out = env.step(tool, args)
    return out, env


def _worker_grade(task: Task, submission: str, sim: str, hidden: int | str, scratch: str) -> dict:
    try:
        with _scratch(scratch):
            return grade(task, submission, GradeOptions(sim=sim, hidden=hidden))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class WorkerPool:
    """``workers`` spawned processes (temp dir: ``root``); at most ``max_pending`` jobs at once (else 503)."""

    def __init__(self, workers: int, max_pending: int) -> None:
        self.workers = workers
        self.max_pending = max_pending
        self.root = Path()
        self.executor: ProcessPoolExecutor | None = None  # made on the first job
        self.jobs_in_flight = 0

    def start(self, root: Path) -> None:
        self.root = root

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init, initargs=(str(self.root),))

    async def run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in a worker; 503 when saturated, or when the worker died twice on this call."""
        if self.jobs_in_flight >= self.max_pending:
            raise ApiError(503, "busy", f"{self.jobs_in_flight} simulation jobs are queued or running; "
                                        "try again later")
        self.jobs_in_flight += 1
        try:
            # A dead worker breaks the whole pool and fails every call on it, including calls on
            # other workers. Jobs get their inputs by value and the server adopts nothing until a
            # job returns, so a call whose worker died had no effect: it is retried once.
            for attempt in (1, 2):
                if self.executor is None:
                    self.executor = self._new_executor()
                pool = self.executor
                try:
                    return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
                except BrokenProcessPool:
                    if self.executor is pool:
                        pool.shutdown(wait=False, cancel_futures=True)
                        self.executor = None
                    if attempt == 2:
                        raise ApiError(503, "worker_failed", "a simulation worker died twice on this call; "
                                                             "the call had no effect") from None
            raise AssertionError("unreachable")
        finally:
            self.jobs_in_flight -= 1

    def shutdown(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None
