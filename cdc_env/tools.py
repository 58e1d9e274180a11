"""The agent's five tools as data: loading ``tools/*.json`` and checking tool-call arguments.

Each file is one tool in the OpenAI function-calling format (``{"type": "function", "function":
{"name", "description", "parameters"}}``) whose ``parameters`` is a JSON Schema (draft 2020-12)
for the call's arguments. ``check_arguments`` enforces it with ``jsonschema`` and turns a
violation into one short line an agent can act on (never an echo of a huge argument).

What the tools *do* lives in env.py; this module only knows their shape.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache

import jsonschema

from . import paths
from .errors import CdcError

TOOL_NAMES = ("read", "write", "run_visible", "contract", "submit")
_MAX_MESSAGE = 200


@lru_cache(maxsize=1)
def _load() -> tuple[dict, ...]:
    defs = []
    for name in TOOL_NAMES:
        path = paths.tools_dir() / f"{name}.json"
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CdcError(f"cannot read tool definition {path}: {exc}") from None
        fn = d.get("function", {}) if d.get("type") == "function" else {}
        if fn.get("name") != name or not isinstance(fn.get("parameters"), dict):
            raise CdcError(f"{path}: not an OpenAI function definition named '{name}'")
        jsonschema.Draft202012Validator.check_schema(fn["parameters"])
        defs.append(d)
    return tuple(defs)


def tool_definitions() -> list[dict]:
    """The five tools in the OpenAI function-calling format (a fresh copy the caller may change)."""
    return copy.deepcopy(list(_load()))


@lru_cache(maxsize=1)
def _validators() -> dict[str, jsonschema.Draft202012Validator]:
    return {d["function"]["name"]: jsonschema.Draft202012Validator(d["function"]["parameters"])
            for d in _load()}


def signature(name: str) -> str:
    """``write(path, content)``: the call as a model would write it, for help texts."""
    params = next(d["function"]["parameters"] for d in _load() if d["function"]["name"] == name)
    return f"{name}({', '.join(params.get('properties', {}))})"


def _clip(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


def _describe(err: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in err.absolute_path)
    loc = f"argument '{_clip(where)}'" if where else "the arguments"
    kind = err.validator
    if kind == "type":
        return f"{loc} must be of JSON type {err.validator_value}"
    if kind == "maxLength":
        return f"{loc} is longer than {err.validator_value} characters"
    if kind == "minLength":
        return f"{loc} is empty"
    if kind == "required":
        missing = [k for k in err.validator_value if isinstance(err.instance, dict) and k not in err.instance]
        return f"missing argument(s): {', '.join(missing)}"
    if kind == "additionalProperties":
        extra = sorted(k for k in err.instance if k not in err.schema.get("properties", {}))
        return f"unexpected argument(s): {_clip(', '.join(repr(k) for k in extra))}"
    return _clip(f"{loc}: {err.message}")


def check_arguments(name: str, args: object) -> str | None:
    """None if ``args`` fit tool ``name``'s schema, else a one-line reason. Never raises."""
    validator = _validators().get(name)
    if validator is None:
        return f"unknown tool {_clip(repr(name))}"
    try:
        err = jsonschema.exceptions.best_match(validator.iter_errors(args))
    except RecursionError:
        return "the arguments are nested too deeply"
    return None if err is None else _describe(err)
