"""The server package: every name ``cdc_env.server`` exported as one module still imports from it,
and the package's light parts load no web framework."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed (pip install cdc-env[server])")

import cdc_env.server as server  # noqa: E402

# What server.py exported before the split and its importers use (server_cli, server_openenv,
# tests, bench): each must resolve from the package.
BEFORE = ("ServerConfig", "resolve_tasks", "serve_in_thread", "ApiError", "EnvServer", "bind", "create_app",
          "is_loopback", "uvicorn_server", "DEFAULT_MAX_BODY", "MAX_JSON_DEPTH", "json_depth", "PortableEnv",
          "GuardMiddleware", "guarded_protocol", "RunningServer", "StartRequest", "StepRequest",
          "GradeRequest", "StepResult", "StartResult", "_ERROR_RESPONSES", "_token_digest", "error_response",
          "API")


@pytest.mark.parametrize("name", BEFORE)
def test_every_name_resolves_to_its_module(name):
    value = getattr(server, name)
    module = importlib.import_module(f"cdc_env.server.{server._EXPORTS[name]}")
    assert value is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        server.nope  # noqa: B018
    assert set(server.__all__) <= set(dir(server))


def test_the_config_loads_no_web_framework():
    code = ("import json, sys\nfrom cdc_env.server.config import DEFAULT_MAX_BODY, ServerConfig\n"
            "print(json.dumps(sorted(m for m in ('fastapi', 'pydantic', 'starlette', 'uvicorn') "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    assert json.loads(out.stdout) == []
