"""The OpenAPI document at ``/openapi.json``: the routes' models, the grade report's JSON Schema
(report.schema.json) in place of an untyped object, and the bearer scheme when a token is set."""

from __future__ import annotations

import json
from typing import Any

from ..report import report_schema
from .config import API


def install_openapi(app: Any, token: str | None) -> None:
    """Make ``app`` serve the document described above (built once, on first request)."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            doc = get_openapi(title=app.title, version=app.version, description=app.description,
                              routes=app.routes)
            _document_the_report(doc)
            if token is not None:
                doc.setdefault("components", {})["securitySchemes"] = {
                    "bearerAuth": {"type": "http", "scheme": "bearer"}}
                doc["security"] = [{"bearerAuth": []}]
                from .limits import OPEN_PATHS  # noqa: PLC0415

                for path in OPEN_PATHS & set(doc["paths"]):  # liveness answers without the token
                    doc["paths"][path]["get"]["security"] = []
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi


def _document_the_report(doc: dict) -> None:
    """Put report.schema.json into the document: the grade response and StepResult.report use it."""

    report = json.loads(json.dumps(report_schema()))  # a copy: report_schema() is cached and shared
    defs = report.pop("$defs", {})
    for key in ("$schema", "$id"):
        report.pop(key, None)
    text = json.dumps({"GradeReport": report, **{f"GradeReport_{k}": v for k, v in defs.items()}})
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(json.loads(text.replace('"#/$defs/', '"#/components/schemas/GradeReport_')))
    ref = {"$ref": "#/components/schemas/GradeReport"}
    doc["paths"][f"{API}/grade"]["post"]["responses"]["200"]["content"]["application/json"]["schema"] = ref
    schemas["EpisodeReport"]["properties"]["report"] = {
        **ref, "description": schemas["EpisodeReport"]["properties"]["report"].get("description", "")}
    for name in ("StepResult", "StartResult"):
        prop = schemas[name]["properties"]["report"]
        schemas[name]["properties"]["report"] = {"anyOf": [ref, {"type": "null"}],
                                                 "description": prop.get("description", "")}
