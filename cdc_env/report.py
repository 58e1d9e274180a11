"""The grade report's JSON Schema (schemas/report.schema.json) and a validator for it."""

from __future__ import annotations

import json
from functools import lru_cache

from . import paths


@lru_cache(maxsize=1)
def report_schema() -> dict:
    return json.loads(paths.schema_file("report.schema.json").read_text())


def validate_report(report: dict) -> None:
    """Raise ``jsonschema.ValidationError`` if ``report`` does not follow the schema."""
    import jsonschema

    jsonschema.validate(report, report_schema())
