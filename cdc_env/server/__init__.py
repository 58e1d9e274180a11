"""The HTTP server: CdcRepairEnv episodes and one-shot grades for any language or RL stack.

``create_app(ServerConfig(...))`` builds a FastAPI app (OpenAPI document at ``/openapi.json``):

    GET    /v1/live                      liveness, without the token (says nothing else)
    GET    /v1/health                    liveness and load
    GET    /v1/tasks                     the tasks this server serves (only those named at start)
    GET    /v1/tools                     the five tools, OpenAI function-calling format
    POST   /v1/episodes                  start an episode -> episode_id + the first observation
    POST   /v1/episodes/{id}/step        one tool call -> exactly CdcRepairEnv.step's result
    GET    /v1/episodes/{id}/report      the grade report of a submitted episode (for the harness)
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
The package, one concern per module: ``config`` (ServerConfig, the task table), ``models`` (request
and response models), ``errors`` (the error shape), ``limits`` (token, body cap, depth and schema
checks, connection deadlines and cap), ``pool`` (worker processes, retries), ``episodes`` (the
state: episodes, lookups, operations), ``openapi`` (the document), ``app`` (routes), ``run``
(socket, uvicorn, a server in a thread). ``from cdc_env.server import X`` works for every name
below; importing ``cdc_env.server.config`` alone loads no web framework.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("API", "MAX_STEPS_CAP", "MAX_SIM_RUNS_CAP", "DEFAULT_MAX_BODY", "ServerConfig",
                     "resolve_tasks"), "config"),
    **dict.fromkeys(("ErrorBody", "ErrorResponse", "ApiError", "error_response", "_ERROR_RESPONSES",
                     "_STATUS_CODES"), "errors"),
    **dict.fromkeys(("TaskInfo", "TaskList", "ToolList", "Health", "EpisodeId", "Hidden", "Sim",
                     "StartRequest", "StepRequest", "GradeRequest", "StepResult", "StartResult", "Closed"),
                    "models"),
    **dict.fromkeys(("MAX_JSON_DEPTH", "GuardMiddleware", "json_depth", "check_arguments",
                     "guarded_protocol", "_token_digest"), "limits"),
    **dict.fromkeys(("PortableEnv", "WorkerPool"), "pool"),
    **dict.fromkeys(("EnvServer",), "episodes"),
    **dict.fromkeys(("create_app",), "app"),
    **dict.fromkeys(("is_loopback", "bind", "uvicorn_server", "RunningServer", "serve_in_thread"), "run"),
}

__all__ = [name for name in _EXPORTS if not name.startswith("_")]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cdc_env.server' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
