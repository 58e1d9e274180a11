"""Property-based tests of the HTTP server against its own OpenAPI document (schemathesis + hypothesis).

Every operation of the document is called with generated requests on a real uvicorn server on
127.0.0.1; every answer must be free of server errors (no 5xx), conform to the document (status
code, content type, body schema), and every error must be ``{"error": {"code", "message"}}``.
A second test sends arbitrary JSON bodies to the step endpoint of live episodes, where generated
task names could never reach (they 404): the environment must answer every malformed call itself.
Submissions are never generated on purpose (a grade costs seconds of CPU); a generated task name
is a random string and 404s before anything is graded.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is missing (pip install -e .[test])")
httpx = pytest.importorskip("httpx", reason="the server extra is not installed (pip install -e .[server])")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from cdc_env.server import ServerConfig, resolve_tasks, serve_in_thread  # noqa: E402
from tests.conftest import needs_bwrap, needs_icarus  # noqa: E402

pytestmark = [needs_icarus, needs_bwrap]
TOKEN = "schema-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def assert_well_formed(resp) -> None:
    if resp.status_code < 400:
        return
    body = resp.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str), body
    assert body["error"]["code"] and body["error"]["message"], body


@pytest.fixture(scope="module")
def server():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), token=TOKEN, workers=1, max_episodes=1000,
                       max_body=64 * 1024)
    with serve_in_thread(cfg) as srv:
        yield srv


@pytest.fixture(scope="module")
def api_schema(server):
    doc = httpx.get(server.url + "/openapi.json", headers=AUTH, timeout=30).json()
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    return schemathesis.openapi.from_dict(doc)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_answers_to_its_document(case, server):
    resp = case.call(base_url=server.url, headers=AUTH)
    case.validate_response(resp, checks=CHECKS)
    assert_well_formed(resp)


SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=40))
JSON = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10),
                                                                                       kids, max_size=4),
                    max_leaves=12)
TOOL = st.sampled_from(["read", "write", "contract", "run_visible", "bogus", ""]) | JSON
PATHS = st.sampled_from(["hs_top.v", "CONTRACT.md", "../tb.v"]) | st.text(max_size=30)
ARGS = JSON | st.fixed_dictionaries({}, optional={"path": PATHS, "content": st.text(max_size=200)})


@given(body=st.fixed_dictionaries({"tool": TOOL}, optional={"arguments": ARGS}) | JSON)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_arbitrary_step_bodies_on_a_live_episode(server, body):
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=60) as c:
        ep = getattr(test_arbitrary_step_bodies_on_a_live_episode, "episode", None)
        if ep is None or ep["steps_left"] <= 2:  # never reach the last call (it would auto-submit)
            if ep is not None:
                c.delete(f"/v1/episodes/{ep['episode_id']}")
            start = {"task": "handshake", "max_steps": 200, "max_sim_runs": 0}
            ep = c.post("/v1/episodes", json=start).json()
            test_arbitrary_step_bodies_on_a_live_episode.episode = ep
        resp = c.post(f"/v1/episodes/{ep['episode_id']}/step", json=body)
        assert resp.status_code < 500, resp.text
        assert_well_formed(resp)
        if isinstance(body, dict) and set(body) <= {"tool", "arguments"} and "tool" in body:
            assert resp.status_code == 200, resp.text  # any JSON tool call is the environment's to answer
            out = resp.json()
            assert out["report"] is None and not out["done"]
            ep["steps_left"] = out["steps_left"]
        else:
            assert resp.status_code == 422
