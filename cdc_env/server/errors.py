"""The one error shape of the HTTP API: ``{"error": {"code", "message"}}`` with a fitting status."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in ((400, "malformed request"), (401, "missing or wrong bearer token"),
                       (404, "no such task, episode or path on this server"),
                       (409, "the episode has no report yet (not submitted)"),
                       (410, "the episode expired or was closed"), (413, "request body too large"),
                       (415, "the body is not sent as application/json"),
                       (422, "the body does not fit the schema"), (429, "too many live episodes"),
                       (503, "the worker pool is saturated or a worker failed"))
}

_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                 405: "method_not_allowed", 409: "conflict", 410: "gone", 413: "body_too_large",
                 415: "unsupported_media_type",
                 422: "bad_request", 429: "too_many_requests", 503: "unavailable"}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)
