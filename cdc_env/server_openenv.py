"""OpenEnv-compatible routes on the server, under ``/openenv`` (an ``openenv-core`` client's base URL
is ``http://HOST:PORT/openenv``):

    WS     /openenv/ws         one session = one episode at a time: {"type": "reset"|"step"|"state"|"close"}
    POST   /openenv/reset      start an episode -> {"observation", "reward", "done"}
    POST   /openenv/step       one tool call; the body names the episode: {"action", "episode_id"}
    GET    /openenv/state      ?episode_id=... -> {"episode_id", "step_count", ...}
    GET    /openenv/health, /openenv/metadata, /openenv/schema
    GET    /openenv/openapi.json   these routes' OpenAPI document (paths relative to /openenv)
    POST   /openenv/mcp        MCP JSON-RPC: initialize, tools/list, tools/call, and OpenEnv's
                               openenv/session/create|close (a session is an episode)

``openenv validate --url http://HOST:PORT/openenv`` passes all 6 of its criteria
(tests/test_adapters_openenv.py runs it).

Messages and bodies are OpenEnv's: reset data ``{"seed", "episode_id", "task", "max_steps",
"max_sim_runs", "hidden", "sim"}`` (all optional; ``task`` defaults to the first task served),
an action ``{"tool": name, "arguments": object or JSON text}``, and results
``{"observation": {...}, "reward": float | null, "done": bool}``. The observation holds ``text``
(for the model) and the rest of ``CdcRepairEnv.step``'s result (``error``, budgets,
``episode_id``; after reset ``task``, ``editable``, ``tools`` with the OpenAI tool definitions and
``system_prompt``; on the last step ``verdict``, the grade's one word) -- never the grade report:
an OpenEnv observation and an MCP result are model-facing, so the report (hidden seeds, their
outcomes, the gate's findings) is only at the harness's own route ``GET /v1/episodes/{id}/report``,
authenticated like every other. ``reward`` is null until the step that ends the episode, then 1.0
or 0.0.

Episodes are the server's own (``EnvServer``): the same cap, idle time-out, worker pool and
sandbox as ``/v1/episodes``. Unlike OpenEnv's stock HTTP routes, ours are not stateless:
``/openenv/reset`` starts an episode and its ``episode_id`` must come with each ``/openenv/step``
(as a top-level field, which OpenEnv's StepRequest allows). A WebSocket session ends its episode
when it closes. With a bearer token the WebSocket handshake must carry ``Authorization: Bearer
<token>`` like every HTTP request (the stock openenv client sends no headers: use it on loopback
without a token, or ``cdc_env.adapters.openenv.TokenEnvClient``, the stock ``GenericEnvClient``
that sends the header).

MCP (``POST /openenv/mcp``): ``tools/list`` gives the five tools with ``inputSchema`` exactly
``tools/*.json``'s parameters; ``tools/call`` needs a ``session_id`` from
``openenv/session/create`` (params: the reset data above), and returns the observation text as
its content, ``isError`` for a refused call, and ``reward``/``done``/``error``/``verdict`` in
``structuredContent`` (what the agent may see; the report: ``GET /v1/episodes/{id}/report``).
Errors are JSON-RPC error objects (HTTP 200).

Not covered: OpenEnv's production mode (no ``/reset``), MCP over the WebSocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from . import tools
from ._version import __version__
from .prompts import AGENT_SYSTEM_PROMPT
from .server.episodes import EnvServer
from .server.errors import _ERROR_RESPONSES, ApiError
from .server.limits import MAX_JSON_DEPTH, _token_digest, json_depth
from .server.models import StartRequest, StepRequest

PREFIX = "/openenv"
_LOG = logging.getLogger("cdc_env.server")
_RESET_KEYS = {"seed", "episode_id", "task", "max_steps", "max_sim_runs", "hidden", "sim", "rung"}

ACTION_SCHEMA = {
    "type": "object", "required": ["tool"], "additionalProperties": True,
    "properties": {
        "tool": {"type": "string", "enum": list(tools.TOOL_NAMES), "description": "the tool to call"},
        "arguments": {"description": "the tool's arguments: an object, or the JSON text of one"}},
}
OBSERVATION_SCHEMA = {
    "type": "object", "required": ["text", "episode_id"],
    "properties": {"text": {"type": "string", "description": "the text for the model"},
                   "episode_id": {"type": "string"},
                   "error": {"type": ["string", "null"]},
                   "verdict": {"type": ["string", "null"],
                               "description": "the grade's verdict word on the step that ends the episode"}},
}
STATE_SCHEMA = {
    "type": "object", "required": ["episode_id", "step_count"],
    "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer"}},
}


def _result(eid: str, res: dict, first: bool = False) -> dict:
    """CdcRepairEnv's result dict -> OpenEnv's {"observation", "reward", "done"}: model-facing, so
    the grade report is left out (the verdict word stays; the report is GET /v1/episodes/{id}/report)."""
    obs = {"text": res["observation"], "episode_id": eid,
           **{k: v for k, v in res.items() if k not in ("observation", "reward", "done", "tools",
                                                         "episode_id", "idle_timeout_s", "report")}}
    if first:
        obs.update(tools=tools.tool_definitions(), system_prompt=AGENT_SYSTEM_PROMPT)
    else:
        obs["verdict"] = None if res.get("report") is None else res["report"]["verdict"]
    reward = None if res.get("reward") is None else float(res["reward"])
    return {"observation": obs, "reward": reward, "done": bool(res["done"])}


class _Session:
    """OpenEnv operations over the server's episodes (shared by the HTTP and WebSocket routes)."""

    def __init__(self, server: EnvServer) -> None:
        self.server = server

    async def reset(self, data: dict) -> tuple[str, dict]:
        if not isinstance(data, dict):
            raise ApiError(422, "bad_request", "reset data must be a JSON object")
        unknown = set(data) - _RESET_KEYS
        if unknown:
            raise ApiError(422, "bad_request", f"unknown reset field(s): {', '.join(sorted(unknown))[:200]} "
                                               f"(known: {', '.join(sorted(_RESET_KEYS))})")
        task = data.get("task") or next(iter(self.server.config.tasks))
        fields = {k: data[k] for k in ("max_steps", "max_sim_runs", "hidden", "sim", "rung")
                  if data.get(k) is not None}
        try:
            req = StartRequest(task=task, **fields)
        except ValueError as exc:
            raise ApiError(422, "bad_request", str(exc).splitlines()[0][:300]) from None
        out = await self.server.start(req)
        return out["episode_id"], _result(out["episode_id"], out, first=True)

    async def step(self, eid: str, action: Any) -> dict:
        if not isinstance(action, dict):
            raise ApiError(422, "bad_request", 'an action is a JSON object {"tool": ..., "arguments": ...}')
        req = StepRequest(tool=action.get("tool"), arguments=action.get("arguments"))
        res = await self.server.step(eid, req)
        return _result(eid, res)

    def state(self, eid: str | None) -> dict:
        if eid is None:
            return {"episode_id": None, "step_count": 0}
        env = self.server.episode(eid).env
        return {"episode_id": eid, "step_count": env.steps_used, "task": env.task.id, "done": env.done,
                "steps_left": env.max_steps - env.steps_used,
                "sim_runs_left": env.max_sim_runs - env.sim_runs_used}

    async def close(self, eid: str) -> None:
        """Close a live episode, or one already closed (idempotent); an id this server never issued
        or that expired is an ApiError (404 / 410), never a quiet ``closed``."""
        if eid in self.server.episodes:
            await self.server.close(eid)
        elif self.server.ended.get(eid) != "closed":
            self.server._gone(eid)

    async def end(self, eid: str | None) -> None:
        if eid is not None and eid in self.server.episodes:
            await self.server.close(eid)


def include_openenv(app: FastAPI) -> None:
    """Add the OpenEnv routes to the server's app (``create_app`` calls this)."""
    server: EnvServer = app.state.env_server
    session = _Session(server)
    config = server.config
    want = None if config.token is None else _token_digest(f"Bearer {config.token}".encode())

    @app.get(f"{PREFIX}/health", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_health() -> JSONResponse:
        """OpenEnv health check."""
        return JSONResponse({"status": "healthy"})

    @app.get(f"{PREFIX}/metadata", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_metadata() -> JSONResponse:
        """OpenEnv environment metadata."""
        about = ("Repair clock-domain-crossing bugs in Verilog through five tools; graded by a "
                 "gaming-resistant verifier. Tasks: " + ", ".join(config.tasks))
        return JSONResponse({"name": "cdc_env", "version": __version__, "description": about})

    @app.get(f"{PREFIX}/schema", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_schema() -> JSONResponse:
        """JSON schemas of the action, the observation and the state."""
        return JSONResponse({"action": ACTION_SCHEMA, "observation": OBSERVATION_SCHEMA,
                             "state": STATE_SCHEMA})

    @app.get(f"{PREFIX}/openapi.json", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_openapi() -> JSONResponse:
        """The OpenAPI document of the OpenEnv routes, paths relative to /openenv."""
        return JSONResponse(openenv_openapi(app))

    @app.post(f"{PREFIX}/mcp", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_mcp(request: Request) -> JSONResponse:
        """MCP JSON-RPC 2.0 (initialize, tools/list, tools/call, openenv/session/create|close)."""
        try:
            msg = json.loads(await request.body() or b"null", parse_constant=_no_constant)
        except ValueError as exc:
            why = str(exc) if isinstance(exc, _NotJson) else "the body is not JSON"
            return JSONResponse(_rpc_error(None, -32700, f"parse error: {why}"))
        return JSONResponse(await mcp_call(session, msg))

    @app.post(f"{PREFIX}/reset", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_reset(request: Request) -> JSONResponse:
        """Start an episode; its id is in observation.episode_id (send it with every step)."""
        body = await _json_body(request, default={})
        _, out = await session.reset(body)
        return JSONResponse(out)

    @app.post(f"{PREFIX}/step", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_step(request: Request) -> JSONResponse:
        """One tool call in the episode named by the body's episode_id."""
        body = await _json_body(request)
        eid = body.get("episode_id") if isinstance(body, dict) else None
        if not isinstance(eid, str) or not eid:
            raise ApiError(422, "bad_request",
                           "this server's episodes are stateful: send the episode_id that /openenv/reset "
                           'returned, {"action": {...}, "episode_id": "..."}')
        return JSONResponse(await session.step(eid, body.get("action")))

    @app.get(f"{PREFIX}/state", tags=["openenv"], responses=_ERROR_RESPONSES)
    async def oe_state(episode_id: str) -> JSONResponse:
        """The episode's state: episode_id, step_count, budgets left."""
        return JSONResponse(session.state(episode_id))

    @app.websocket(f"{PREFIX}/ws")
    async def oe_ws(ws: WebSocket) -> None:
        if want is not None:
            got = _token_digest(ws.headers.get("authorization", "").encode("latin-1", "replace"))
            if not hmac.compare_digest(got, want):
                await ws.close(code=1008, reason="this server requires 'Authorization: Bearer <token>'")
                return
        await ws.accept()
        await _ws_session(ws, session, config.idle_timeout, config.max_body)


async def _ws_session(ws: WebSocket, session: _Session, idle_timeout: float, max_body: int) -> None:
    """One WebSocket session: messages until the client closes, leaves or idles out.

    Each message is its own bounded read: at most ``max_body`` bytes (uvicorn closes with 1009
    above it, see ``server.limits.ws_limits``) within ``idle_timeout`` seconds of the last reply
    (else close 1001). The session lives as long as its episode's idle timeout allows; it is not
    bound by the HTTP request deadlines. A binary frame is closed with 1003, a message nested more
    than MAX_JSON_DEPTH levels with 1008, an internal failure with 1011 -- close codes, never a
    traceback -- and the episode ends with the session however it ends.
    """
    eid: str | None = None
    close = (1000, "")
    try:
        while True:
            try:
                message = await asyncio.wait_for(ws.receive(), timeout=idle_timeout)
            except TimeoutError:
                close = (1001, f"no message for {idle_timeout:g} s (the server's idle timeout)")
                break
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text")
            if raw is None:
                close = (1003, "binary frames are not supported: send JSON text")
                break
            if len(raw.encode("utf-8", "replace")) > max_body:
                close = (1009, f"the message exceeds {max_body} bytes")
                break
            if json_depth(raw) > MAX_JSON_DEPTH:
                close = (1008, f"the message is nested more than {MAX_JSON_DEPTH} levels deep")
                break
            try:
                msg = json.loads(raw)
            except ValueError:
                await _ws_error(ws, "the message is not JSON", "INVALID_JSON")
                continue
            kind = msg.get("type") if isinstance(msg, dict) else None
            if kind == "close":
                break
            if kind == "reset":  # a new episode replaces the session's current one
                await session.end(eid)
                eid = None
            try:
                reply = await _ws_reply(session, kind, msg, eid)
            except ApiError as exc:
                await _ws_error(ws, exc.message, exc.code)
                continue
            if reply is None:
                await _ws_error(ws, f"unknown message type {str(kind)[:40]!r} (reset, step, state, close)",
                                "UNKNOWN_TYPE")
                continue
            eid, out = reply
            await ws.send_text(json.dumps(out))
    except (WebSocketDisconnect, OSError, RuntimeError):
        return  # the client left (mid-reply, or its close raced ours): nothing to tell it
    except Exception as exc:  # noqa: BLE001 -- one line in the log and a close code, not a traceback
        _LOG.error("openenv websocket: internal error: %s: %s", type(exc).__name__, str(exc)[:300])
        close = (1011, "internal error")
    finally:
        await session.end(eid)
    with contextlib.suppress(WebSocketDisconnect, OSError, RuntimeError):
        await ws.close(code=close[0], reason=close[1][:120])


async def _ws_reply(session: _Session, kind: object, msg: dict,
                    eid: str | None) -> tuple[str | None, dict] | None:
    """(the session's episode id after the message, the reply); None for an unknown type."""
    if kind == "reset":
        eid, out = await session.reset(msg.get("data") or {})
        return eid, {"type": "observation", "data": out}
    if kind == "step":
        if eid is None:
            raise ApiError(409, "no_episode", "send a reset before the first step")
        return eid, {"type": "observation", "data": await session.step(eid, msg.get("data"))}
    if kind == "state":
        return eid, {"type": "state", "data": session.state(eid)}
    return None


def openenv_openapi(app: FastAPI) -> dict:
    """The app's OpenAPI document cut to the /openenv routes, their paths relative to /openenv
    (what ``openenv validate`` reads to tell simulation mode: /reset, /step and /state)."""
    doc = app.openapi()
    paths = {p[len(PREFIX):]: v for p, v in doc.get("paths", {}).items() if p.startswith(PREFIX + "/")}
    return {**{k: v for k, v in doc.items() if k != "paths"}, "paths": paths,
            "servers": [{"url": PREFIX}],
            "info": {**doc.get("info", {}), "title": "cdc_env (OpenEnv)", "version": __version__}}


MCP_PROTOCOL = "2025-06-18"


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> None:
    """``NaN``, ``Infinity`` and ``-Infinity``: Python's json reads them, JSON has no such values."""
    raise _NotJson(f"{name} is not a JSON value")


def _valid_id(rid: Any) -> bool:
    """A JSON-RPC id this server answers to: a string, an integer or null (JSON-RPC 2.0: ids
    should not be fractional; a float such as 1e400, which Python reads as inf, is refused)."""
    return rid is None or (isinstance(rid, (str, int)) and not isinstance(rid, bool)
                           and (not isinstance(rid, str) or len(rid) <= 200))


def _rpc_error(rid: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def mcp_tools() -> list[dict]:
    """The five tools as MCP tools: name, description, and inputSchema = tools/*.json's parameters."""
    return [{"name": d["function"]["name"], "description": d["function"]["description"],
             "inputSchema": d["function"]["parameters"]} for d in tools.tool_definitions()]


async def mcp_call(session: _Session, msg: Any) -> dict:
    """One MCP JSON-RPC request -> its response (errors as JSON-RPC error objects, never raised)."""
    if isinstance(msg, dict) and not _valid_id(msg.get("id")):
        return _rpc_error(None, -32600, "invalid request: the id must be a string (at most 200 "
                                        "characters), an integer or null")
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return _rpc_error(msg.get("id") if isinstance(msg, dict) else None, -32600,
                          'invalid request: {"jsonrpc": "2.0", "method": ..., "params": {...}, "id": ...}')
    rid, method, params = msg.get("id"), msg["method"], msg.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(rid, -32602, "params must be an object")
    params = {k: v for k, v in params.items() if k != "_meta"}  # MCP's reserved metadata field
    try:
        if method == "initialize":
            result: dict = {"protocolVersion": MCP_PROTOCOL, "capabilities": {"tools": {}},
                            "serverInfo": {"name": "cdc_env", "version": __version__}}
        elif method == "tools/list":
            result = {"tools": mcp_tools()}
        elif method == "openenv/session/create":
            eid, _ = await session.reset(params)  # a misspelt field is refused, never dropped
            result = {"session_id": eid}
        elif method == "openenv/session/close":
            sid = params.get("session_id")
            if not isinstance(sid, str) or not sid:
                return _rpc_error(rid, -32602, "openenv/session/close needs a session_id")
            await session.close(sid)
            result = {"session_id": sid, "closed": True}
        elif method == "tools/call":
            eid = params.get("session_id")
            if not isinstance(eid, str) or not eid:
                return _rpc_error(rid, -32602, "tools/call needs the session_id that openenv/session/create "
                                               "returned (a session is an episode)")
            out = await session.step(eid, {"tool": params.get("name"), "arguments": params.get("arguments")})
            obs = out["observation"]
            result = {"content": [{"type": "text", "text": obs["text"]}],
                      "isError": obs.get("error") is not None,
                      "structuredContent": {"reward": out["reward"], "done": out["done"],
                                            "error": obs.get("error"), "verdict": obs.get("verdict")}}
        else:
            return _rpc_error(rid, -32601, f"unknown method {method[:60]!r} (initialize, tools/list, "
                                           "tools/call, openenv/session/create, openenv/session/close)")
    except ApiError as exc:
        return _rpc_error(rid, -32000, exc.message)
    except ValueError as exc:  # a request model refused the params (e.g. a tool name that is not text)
        return _rpc_error(rid, -32602, str(exc).splitlines()[0][:300])
    return {"jsonrpc": "2.0", "id": rid, "result": result}


async def _json_body(request: Request, default: Any = None) -> Any:
    raw = await request.body()
    if not raw.strip():
        if default is None:
            raise ApiError(422, "bad_request", "the body must be a JSON object")
        return default
    try:
        body = json.loads(raw)
    except ValueError:
        raise ApiError(400, "bad_request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(422, "bad_request", "the body must be a JSON object")
    return body


async def _ws_error(ws: WebSocket, message: str, code: str) -> None:
    await ws.send_text(json.dumps({"type": "error", "data": {"message": message, "code": code}}))
