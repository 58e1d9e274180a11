"""The FastAPI app: routes, request/response handling and error mapping (module docs: cdc_env.server)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import tools
from .._version import __version__
from .config import API, ServerConfig
from .episodes import EnvServer
from .errors import _ERROR_RESPONSES, _STATUS_CODES, ApiError, error_response
from .limits import GuardMiddleware
from .models import (
    Closed,
    EpisodeId,
    EpisodeReport,
    GradeRequest,
    Health,
    StartRequest,
    StartResult,
    StepRequest,
    StepResult,
    TaskList,
    ToolList,
)
from .openapi import install_openapi

log = logging.getLogger("cdc_env.server")


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

    @app.get(f"{API}/live", responses=_ERROR_RESPONSES, tags=["server"])
    async def live() -> JSONResponse:
        """Liveness: answers without the bearer token and says nothing else (/v1/health has the load)."""
        return JSONResponse({"status": "ok"})

    @app.get(f"{API}/tasks", response_model=TaskList, responses=_ERROR_RESPONSES, tags=["tasks"])
    async def list_tasks() -> JSONResponse:
        """The tasks this server serves: exactly those named when it started."""
        return JSONResponse({"tasks": [
            {"id": t.id, "family": t.family, "title": t.title, "editable": t.editable,
             "visible_seeds": len(t.seeds.visible), "hidden_seeds": t.seeds.hidden_count,
             "control": t.control}
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

    @app.get(f"{API}/episodes/{{episode_id}}/report", response_model=EpisodeReport,
             responses=_ERROR_RESPONSES, tags=["episodes"])
    async def episode_report(episode_id: EpisodeId) -> JSONResponse:
        """The grade report of a submitted episode, whichever front end ran it (/v1, OpenEnv HTTP,
        WebSocket or MCP), also after it ended: for the harness, never the model."""
        return JSONResponse(state.report(episode_id))

    @app.delete(f"{API}/episodes/{{episode_id}}", response_model=Closed, responses=_ERROR_RESPONSES,
                tags=["episodes"])
    async def close_episode(episode_id: EpisodeId) -> JSONResponse:
        """Close an episode and free its scratch space."""
        return JSONResponse(await state.close(episode_id))

    @app.post(f"{API}/grade", response_model=dict[str, Any], responses=_ERROR_RESPONSES, tags=["grade"])
    async def grade_once(req: GradeRequest) -> JSONResponse:
        """Grade a one-shot submission; the grade report (report.schema.json), as `cdc-env grade --json`."""
        return JSONResponse(await state.grade(req))

    install_openapi(app, config.token)
    from ..server_openenv import include_openenv  # noqa: PLC0415 -- OpenEnv routes (their own module)
    include_openenv(app)
    app.add_middleware(GuardMiddleware, token=config.token, max_body=config.max_body)
    return app
