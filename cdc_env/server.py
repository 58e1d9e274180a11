"""The HTTP server: CdcRepairEnv episodes and one-shot grades for any language or RL stack (SPEC §6, §9).

``create_app(ServerConfig(...))`` builds a FastAPI app (OpenAPI document at ``/openapi.json``):

    GET    /v1/health                    liveness and load
    GET    /v1/tasks                     the tasks this server serves (only those named at start)
    GET    /v1/tools                     the five tools, OpenAI function-calling format
    POST   /v1/episodes                  start an episode -> episode_id + the first observation
    POST   /v1/episodes/{id}/step        one tool call -> exactly CdcRepairEnv.step's result
    DELETE /v1/episodes/{id}             close an episode (its scratch space is freed)
    POST   /v1/grade                     grade a one-shot submission -> the grade report

Every error is JSON ``{"error": {"code", "message"}}`` with a fitting status: 401 without the
bearer token (compared in constant time; every path, the OpenAPI document included), 404 for a
task or episode the server does not have, 410 for an episode that expired or was closed, 413 for a
body over the size cap, 422 for a body that does not fit the schema, 429 when the live-episode cap
is reached, 503 when the worker pool is saturated or a worker died.

Concurrency: episode state (a CdcRepairEnv, a few KB) lives in the server process. Tool calls that
cannot simulate (read, write, contract, bad calls) are answered on the event loop in microseconds;
calls that may simulate (run_visible, submit, and any call that spends the last tool call, which
auto-submits) ship the environment to a bounded pool of worker processes and take it back with the
result, so the event loop never waits on a simulator or the static gate. Calls on one episode are
serialized; separate episodes run in parallel up to the pool size. Each episode has its own scratch
folder under the server's scratch root (every grade's temporary files go there); it is removed
when the episode is closed or expires after ``idle_timeout`` seconds without a request.

Tasks are resolved once at start: a request names a task by id and the id is looked up in that
table only, so no request string ever reaches the file system (no guessing, no path tricks).

Connections: the listening socket is TCP with TCP_NODELAY (no 40 ms delayed-ACK stall on
keep-alive). A connection must send a request's head within ``header_timeout`` seconds and its
body within ``body_timeout``; above ``max_connections`` open connections the oldest one without a
request in progress is closed, so idle or half-open connections cannot starve token holders.
Bodies nested deeper than ``MAX_JSON_DEPTH`` are 422 before anything parses them; tool arguments
are checked against the tool's JSON Schema before an environment is shipped to a worker (a bad
call is answered in-process, as CdcRepairEnv answers it). A call whose worker died is retried
once on a fresh pool (the environment is shipped by value, so the dead worker had no effect).
Episode ids carry the server instance: an id from before a restart is 410, not 404.

Not covered: TLS (put a reverse proxy in front for remote use), rate limiting per client,
persistence of episodes across restarts, and the model loop itself (see the client and runners).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import hmac
import logging
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import __version__, tools
from .env import CdcRepairEnv, _parse_args
from .errors import CdcError
from .grade import grade
from .proc import bwrap_path
from .report import report_schema
from .task import Task, load_task

log = logging.getLogger("cdc_env.server")

API = "/v1"
MAX_STEPS_CAP = 200  # per-episode tool-call budget a client may ask for
MAX_SIM_RUNS_CAP = 50  # per-episode simulation budget a client may ask for
DEFAULT_MAX_BODY = 1 << 20  # bytes; a submission is at most 256 KiB of text, JSON-escaped
_ENDED_MEMORY = 10_000  # how many expired/closed episode ids are remembered for a clear 410
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
MAX_JSON_DEPTH = 32  # nesting of a request body (and of JSON-text tool arguments)
_INSTANCE_LEN = 8  # an episode id starts with the server instance's id


# ---------------------------------------------------------------------- configuration


@dataclass
class ServerConfig:
    """What one server serves and its limits.

    tasks: id -> Task, exactly the tasks named at start (see ``resolve_tasks``).
    token: the bearer token every request must carry, or None (then bind to loopback only).
    workers: size of the simulation pool (processes); default the number of usable cores.
    max_episodes: live episodes at once; a start beyond it is 429.
    idle_timeout: seconds without a request after which an episode expires.
    max_body: request bodies above this many bytes are 413.
    hidden, sim: defaults for episodes and grades that do not choose.
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
    hidden: int | str = "all"
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
        self.max_pending = self.max_pending or self.max_episodes + 4 * self.workers
        for name, value in (("workers", self.workers), ("max_episodes", self.max_episodes),
                            ("max_body", self.max_body), ("idle_timeout", self.idle_timeout),
                            ("header_timeout", self.header_timeout), ("body_timeout", self.body_timeout),
                            ("max_connections", self.max_connections)):
            if value <= 0:
                raise CdcError(f"{name} must be positive, not {value}")
        if self.sim not in ("icarus", "verilator", "auto"):
            raise CdcError(f"unknown simulator '{self.sim}' (icarus, verilator, auto)")


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


# ---------------------------------------------------------------------- worker-side code


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
            return grade(task, submission, sim=sim, hidden=hidden)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------------- the schema


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


class TaskInfo(BaseModel):
    id: str
    family: str
    title: str
    editable: str
    visible_seeds: int
    hidden_seeds: int


class TaskList(BaseModel):
    tasks: list[TaskInfo]


class ToolList(BaseModel):
    tools: list[dict[str, Any]]


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    tasks: int
    episodes: int
    max_episodes: int
    workers: int
    jobs_in_flight: int
    idle_timeout_s: float


EpisodeId = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9_-]{1,64}$", max_length=64)]
Hidden = Literal["all"] | Annotated[int, Field(ge=0, le=100_000)]
Sim = Literal["icarus", "verilator", "auto"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class StartRequest(_Strict):
    task: str = Field(max_length=200, description="a task id from GET /v1/tasks")
    max_steps: int = Field(30, ge=1, le=MAX_STEPS_CAP, description="tool-call budget")
    max_sim_runs: int = Field(6, ge=0, le=MAX_SIM_RUNS_CAP, description="simulation budget (run_visible)")
    hidden: Hidden | None = Field(None, description="hidden seeds graded on submit; null: server default")
    sim: Sim | None = Field(None, description="simulator; null: the server's default")


class StepRequest(_Strict):
    """Any JSON value is accepted for both fields: the environment answers a malformed call itself
    (``unknown_tool``, ``bad_arguments``) and counts it, exactly as CdcRepairEnv.step does."""

    tool: Any = Field(description="the tool name, as the model gave it (unknown names cost a call)")
    arguments: Any = Field(None, description="the tool's arguments: an object, the JSON text of one, or null")


class GradeRequest(_Strict):
    task: str = Field(max_length=200)
    submission: str = Field(description="the full editable file, or a unified diff against it")
    hidden: Hidden | None = None
    sim: Sim | None = None


class StepResult(BaseModel):
    observation: str
    error: str | None
    done: bool
    auto_submitted: bool
    steps_used: int
    steps_left: int
    sim_runs_used: int
    sim_runs_left: int
    reward: int | None
    report: dict[str, Any] | None = Field(description="the grade report after submit (not for the model)")


class StartResult(StepResult):
    episode_id: str
    task: str
    editable: str
    tools: list[str]
    idle_timeout_s: float


class Closed(BaseModel):
    episode_id: str
    closed: bool


_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in ((400, "malformed request"), (401, "missing or wrong bearer token"),
                       (404, "no such task, episode or path on this server"),
                       (410, "the episode expired or was closed"), (413, "request body too large"),
                       (422, "the body does not fit the schema"), (429, "too many live episodes"),
                       (503, "the worker pool is saturated or a worker failed"))
}

_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                 405: "method_not_allowed", 410: "gone", 413: "body_too_large", 415: "unsupported_media_type",
                 422: "bad_request", 429: "too_many_requests", 503: "unavailable"}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


# ---------------------------------------------------------------------- ASGI guards


def _token_digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


class GuardMiddleware:
    """Bearer token (constant-time, before anything else) and the request-size cap (413).

    The body is read here, up to the cap, and replayed to the app: a body over the cap is refused
    whether or not it declares its length, and nothing past the cap is buffered.
    """

    def __init__(self, app: Any, token: str | None, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        self.want = None if token is None else _token_digest(f"Bearer {token}".encode())

    @staticmethod
    async def _send_error(send: Any, status: int, code: str, message: str,
                          headers: dict[str, str] | None = None) -> None:
        await error_response(status, code, message, headers)({"type": "http"}, _no_receive, send)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if self.want is not None:
            got = _token_digest(headers.get("authorization", b""))
            if not hmac.compare_digest(got, self.want):
                await self._send_error(send, 401, "unauthorized",
                                       "this server requires 'Authorization: Bearer <token>'",
                                       {"WWW-Authenticate": "Bearer"})
                return
        declared = headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_body:
                    await self._send_error(send, 413, "body_too_large",
                                           f"the body is {int(declared)} bytes; the limit is {self.max_body}")
                    return
            except ValueError:
                await self._send_error(send, 400, "bad_request", "the Content-Length header is not a number")
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await self._send_error(send, 413, "body_too_large", f"the body exceeds {self.max_body} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if json_depth(body) > MAX_JSON_DEPTH:
            await self._send_error(send, 422, "bad_request",
                                   f"the body is nested more than {MAX_JSON_DEPTH} levels deep")
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _no_receive() -> dict:
    return {"type": "http.disconnect"}


def json_depth(text: bytes | str) -> int:
    """The deepest nesting of [ and { in JSON text (outside strings), without parsing it."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    depth = deepest = 0
    in_str = escaped = False
    for b in data:
        if in_str:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _object_depth(value: object, limit: int) -> int:
    """Nesting depth of a parsed JSON value, counted iteratively; stops once past ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


# ---------------------------------------------------------------------- episodes and the pool


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
        self.jobs_in_flight = 0
        self.scratch_root = Path()  # made when the app starts, removed when it stops
        self._pool: ProcessPoolExecutor | None = None
        self._reaper: asyncio.Task | None = None
        self.instance = secrets.token_hex(_INSTANCE_LEN // 2)  # begins every episode id it issues

    # -- pool
    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.config.workers,
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init, initargs=(str(self.scratch_root),))

    async def run_job(self, fn: Any, *args: Any) -> Any:
        if self.jobs_in_flight >= self.config.max_pending:
            raise ApiError(503, "busy", f"{self.jobs_in_flight} simulation jobs are queued or running; "
                                        "try again later")
        self.jobs_in_flight += 1
        try:
            # A dead worker breaks the whole pool and fails every call on it, including calls on
            # other workers. Jobs get their inputs by value and the server adopts nothing until a
            # job returns, so a call whose worker died had no effect: it is retried once.
            for attempt in (1, 2):
                if self._pool is None:
                    self._pool = self._new_pool()
                pool = self._pool
                try:
                    return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
                except BrokenProcessPool:
                    if self._pool is pool:
                        pool.shutdown(wait=False, cancel_futures=True)
                        self._pool = None
                    if attempt == 2:
                        raise ApiError(503, "worker_failed", "a simulation worker died twice on this call; "
                                                             "the call had no effect") from None
            raise AssertionError("unreachable")
        finally:
            self.jobs_in_flight -= 1

    # -- life cycle
    async def startup(self) -> None:
        self.scratch_root = Path(tempfile.mkdtemp(prefix="cdc-serve-", dir=self.config.scratch_root))
        self._reaper = asyncio.create_task(self._reap_loop())

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
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
        hidden = self.config.hidden if hidden is None else hidden
        if isinstance(hidden, int) and hidden > task.seeds.hidden_count:
            raise ApiError(422, "bad_request", f"hidden must be at most {task.seeds.hidden_count} "
                                               f"for task '{task.id}', or 'all'")
        return hidden

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
                              hidden=self.hidden_for(task, req.hidden), sim=req.sim or self.config.sim)
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
                return out
        finally:
            ep.busy -= 1
            ep.last_used = time.monotonic()

    @staticmethod
    def checked_arguments(tool: object, arguments: object) -> tuple[object, bool]:
        """(arguments, whether they fit the tool's JSON Schema); 422 when nested too deep.

        JSON-text arguments are parsed here (after a depth check on the text), so only plain,
        bounded values are ever pickled to a worker.
        """
        too_deep = (json_depth(arguments) if isinstance(arguments, str | bytes)
                    else _object_depth(arguments, MAX_JSON_DEPTH)) > MAX_JSON_DEPTH
        if too_deep:
            raise ApiError(422, "bad_request",
                           f"the arguments are nested more than {MAX_JSON_DEPTH} levels deep")
        if not isinstance(tool, str) or tool not in tools.TOOL_NAMES:
            return arguments, False
        parsed, problem = _parse_args(arguments)
        if problem is None:
            problem = tools.check_arguments(tool, parsed)
        return (parsed, True) if problem is None else (arguments, False)

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


# ---------------------------------------------------------------------- the app


def create_app(config: ServerConfig) -> FastAPI:
    """The FastAPI app for ``config`` (owns a worker pool and a scratch folder while it runs)."""
    state = EnvServer(config)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await state.startup()
        try:
            yield
        finally:
            await state.shutdown()

    app = FastAPI(title="cdc_env", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Clock-domain-crossing repair episodes and grades. Every error is "
                              '{"error": {"code", "message"}}. The report of a submission is for the '
                              "harness; never show it to the model.")
    app.state.env_server = state

    @app.exception_handler(ApiError)
    async def _api_error(_r: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_r: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code
        if exc.status_code == 404:
            message = "no such path on this server"
        return error_response(exc.status_code, code, message, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for e in exc.errors()[:3]:
            where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            parts.append(f"{where}: {e.get('msg', 'invalid')}"[:200])
        return error_response(422, "bad_request", "; ".join(parts) or "the request does not fit the schema")

    @app.exception_handler(Exception)
    async def _internal(_r: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error")
        return error_response(500, "internal_error",
                              f"internal error ({type(exc).__name__}); see the server log")

    @app.get(f"{API}/health", response_model=Health, responses=_ERROR_RESPONSES, tags=["server"])
    async def health() -> JSONResponse:
        """Liveness and load."""
        return JSONResponse(state.health())

    @app.get(f"{API}/tasks", response_model=TaskList, responses=_ERROR_RESPONSES, tags=["tasks"])
    async def list_tasks() -> JSONResponse:
        """The tasks this server serves: exactly those named when it started."""
        return JSONResponse({"tasks": [
            {"id": t.id, "family": t.family, "title": t.title, "editable": t.editable,
             "visible_seeds": len(t.seeds.visible), "hidden_seeds": t.seeds.hidden_count}
            for t in config.tasks.values()]})

    @app.get(f"{API}/tools", response_model=ToolList, responses=_ERROR_RESPONSES, tags=["episodes"])
    async def tool_list() -> JSONResponse:
        """The five tools in the OpenAI function-calling format."""
        return JSONResponse({"tools": tools.tool_definitions()})

    @app.post(f"{API}/episodes", response_model=StartResult, status_code=201, responses=_ERROR_RESPONSES,
              tags=["episodes"])
    async def start_episode(req: StartRequest) -> JSONResponse:
        """Start an episode: its id and the first observation (CdcRepairEnv.reset)."""
        return JSONResponse(await state.start(req), status_code=201)

    @app.post(f"{API}/episodes/{{episode_id}}/step", response_model=StepResult, responses=_ERROR_RESPONSES,
              tags=["episodes"])
    async def step_episode(episode_id: EpisodeId, req: StepRequest) -> JSONResponse:
        """One tool call: CdcRepairEnv.step's result; after submit, reward and report in their own fields."""
        return JSONResponse(await state.step(episode_id, req))

    @app.delete(f"{API}/episodes/{{episode_id}}", response_model=Closed, responses=_ERROR_RESPONSES,
                tags=["episodes"])
    async def close_episode(episode_id: EpisodeId) -> JSONResponse:
        """Close an episode and free its scratch space."""
        return JSONResponse(await state.close(episode_id))

    @app.post(f"{API}/grade", response_model=dict[str, Any], responses=_ERROR_RESPONSES, tags=["grade"])
    async def grade_once(req: GradeRequest) -> JSONResponse:
        """Grade a one-shot submission; the grade report (report.schema.json), as `cdc-env grade --json`."""
        return JSONResponse(await state.grade(req))

    def openapi() -> dict:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            doc = get_openapi(title=app.title, version=app.version, description=app.description,
                              routes=app.routes)
            _document_the_report(doc)
            if config.token is not None:
                doc.setdefault("components", {})["securitySchemes"] = {
                    "bearerAuth": {"type": "http", "scheme": "bearer"}}
                doc["security"] = [{"bearerAuth": []}]
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    from .server_openenv import include_openenv  # noqa: PLC0415 -- OpenEnv routes (their own module)
    include_openenv(app)
    app.add_middleware(GuardMiddleware, token=config.token, max_body=config.max_body)
    return app


def _document_the_report(doc: dict) -> None:
    """Put report.schema.json into the document: the grade response and StepResult.report use it."""
    import json

    report = json.loads(json.dumps(report_schema()))  # a copy: report_schema() is cached and shared
    defs = report.pop("$defs", {})
    for key in ("$schema", "$id"):
        report.pop(key, None)
    text = json.dumps({"GradeReport": report, **{f"GradeReport_{k}": v for k, v in defs.items()}})
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(json.loads(text.replace('"#/$defs/', '"#/components/schemas/GradeReport_')))
    ref = {"$ref": "#/components/schemas/GradeReport"}
    doc["paths"][f"{API}/grade"]["post"]["responses"]["200"]["content"]["application/json"]["schema"] = ref
    for name in ("StepResult", "StartResult"):
        prop = schemas[name]["properties"]["report"]
        schemas[name]["properties"]["report"] = {"anyOf": [ref, {"type": "null"}],
                                                 "description": prop.get("description", "")}


# ---------------------------------------------------------------------- running it


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``port`` 0 picks a free one; read it back with ``getsockname``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket says it is TCP; without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _raise_fd_limit()
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CdcError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _raise_fd_limit() -> None:
    """Open connections are file descriptors: take the hard limit (idle clients must not starve others)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def guarded_protocol(header_timeout: float, body_timeout: float, max_connections: int) -> type:
    """uvicorn's h11 protocol with a deadline for each request's head and body and a connection cap."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _guard: asyncio.TimerHandle | None = None
        _guard_kind = ""
        _opened = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._opened = time.monotonic()
            self._arm("head")
            if len(self.connections) > max_connections:
                idle = [c for c in self.connections
                        if c is not self and getattr(c, "_is_idle", lambda: False)()]
                victim = min(idle, key=lambda c: c._opened) if idle else self
                victim.transport.close()

        def _is_idle(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self, kind: str) -> None:
            if kind == self._guard_kind:
                return
            if self._guard is not None:
                self._guard.cancel()
                self._guard = None
            self._guard_kind = kind
            if kind:
                delay = header_timeout if kind == "head" else body_timeout
                self._guard = self.loop.call_later(delay, self._expire)

        def _expire(self) -> None:
            self._guard = None
            if not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            state = self.conn.their_state
            self._arm("head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else "")

        def on_response_complete(self) -> None:
            self._arm("")  # between requests uvicorn's keep-alive timeout applies
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._arm("")
            super().connection_lost(exc)

    return GuardedH11Protocol


def uvicorn_server(app: Any, config: ServerConfig | None = None) -> Any:
    import uvicorn

    c = config or getattr(getattr(app, "state", None), "env_server", None)
    c = c.config if isinstance(c, EnvServer) else c
    http = guarded_protocol(c.header_timeout, c.body_timeout, c.max_connections) if c is not None else "h11"
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                         timeout_keep_alive=30, http=http))


@dataclass
class RunningServer:
    url: str
    server: Any
    thread: threading.Thread
    app: Any

    @property
    def state(self) -> EnvServer:
        return self.app.state.env_server

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)


@contextlib.contextmanager
def serve_in_thread(config: ServerConfig, host: str = "127.0.0.1") -> Iterator[RunningServer]:
    """Run a real uvicorn server on ``host`` with an ephemeral port in a thread (tests, benchmarks)."""
    app = create_app(config)
    sock = bind(host, 0)
    server = uvicorn_server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        raise CdcError("the server did not start")
    running = RunningServer(f"http://{host}:{sock.getsockname()[1]}", server, thread, app)
    try:
        yield running
    finally:
        running.stop()
        sock.close()
