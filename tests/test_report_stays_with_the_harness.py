"""The grade report never reaches a model-facing payload, on every front end.

The report holds what the model must never see: the hidden seed numbers, their outcomes and the
gate's findings. Each front end runs two episodes to a submission -- the reference fix (hidden
seeds graded) and a gate hack (findings) -- on a real server (uvicorn on a socket) or in process,
and every payload a model would be shown is searched for each hidden seed number and each
finding's text:

    env        CdcRepairEnv.step's ``observation``            gym        the observation
    /v1 HTTP   the step result's ``observation``             OpenEnv    the whole step response
    WebSocket  the stock client's whole step result          MCP        the whole tools/call result
    verifiers  what a tool returns to the model              eval       tests/test_eval.py

The harness gets the report from the environment's own field (env, /v1, gym's ``info``) or, for
OpenEnv and MCP, from ``GET /v1/episodes/{id}/report`` with the bearer token, also after the
session closed its episode.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from cdc_env.env import CdcRepairEnv
from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

pytestmark = [needs_icarus, needs_bwrap]

ROOT = Path(__file__).resolve().parents[1]
TASK = load_task("handshake")
HACK = (ROOT / "fixtures" / "cdc-raw-crossing" / "submission.v").read_text()  # refused by CDC-RAW
HIDDEN = 4
TOKEN = "harness-only-token"
SUBMISSIONS = {"fix": TASK.reference_text, "hack": HACK}


def secrets_of(report: dict) -> list[str]:
    """What of a report must not reach the model: its hidden seed numbers and its findings."""
    hidden = (report.get("seeds") or {}).get("hidden") or {}
    out = [str(r["seed"]) for r in hidden.get("results") or []]
    out += [str(r["seed"]) for r in hidden.get("failed") or []]
    out += [f["message"] for f in report.get("findings") or []]
    return out


def leaked(payloads: list, report: dict) -> list[str]:
    text = json.dumps(payloads)
    return [s for s in secrets_of(report) if s in text]


def check(kind: str, payloads: list, report: dict) -> None:
    secrets = secrets_of(report)
    if kind == "fix":
        assert report["verdict"] == "pass" and len(secrets) == HIDDEN  # the seed numbers exist to leak
    else:
        assert report["verdict"] == "refused" and secrets  # the finding exists to leak
    assert leaked(payloads, report) == []


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("fastapi", reason="the server extra is not installed (pip install .[server])")
    from cdc_env.server import ServerConfig, resolve_tasks, serve_in_thread

    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1, hidden=HIDDEN, token=TOKEN)
    with serve_in_thread(cfg) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server):
    httpx = pytest.importorskip("httpx")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300) as c:
        yield c


def harness_report(http, eid: str) -> dict:
    """The report by the harness's own route (authenticated; without the token it is 401)."""
    assert http.get(f"/v1/episodes/{eid}/report", headers={"Authorization": ""}).status_code == 401
    r = http.get(f"/v1/episodes/{eid}/report")
    assert r.status_code == 200, r.text
    return r.json()["report"]


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_env(kind):
    env = CdcRepairEnv("handshake", hidden=HIDDEN)
    seen = [env.reset()["observation"]]
    seen.append(env.step("write", {"path": TASK.editable, "content": SUBMISSIONS[kind]})["observation"])
    res = env.step("submit", {})
    seen.append(res["observation"])
    check(kind, seen, res["report"])


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_gym(kind):
    gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install .[gym])")
    import cdc_env.adapters.gym  # noqa: F401 -- registers the environments

    env = gym.make("cdc_env/handshake", hidden=HIDDEN)
    seen = [env.reset(seed=0)[0]]
    seen.append(env.step({"tool": "write", "arguments": {"path": TASK.editable,
                                                         "content": SUBMISSIONS[kind]}})[0])
    obs, _, _, _, info = env.step({"tool": "submit", "arguments": {}})
    seen.append(obs)
    env.close()
    check(kind, seen, info["report"])


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_verifiers_tool_results(kind):
    pytest.importorskip("verifiers", reason="verifiers is not installed (pip install .[verifiers])")
    from cdc_env.adapters.verifiers import CdcToolset, CdcToolsetConfig

    class Probe(CdcToolset):
        state = SimpleNamespace(verdict=None)  # what verifiers' rollout state holds, for _call to fill

    tools = Probe(CdcToolsetConfig())
    asyncio.run(tools.setup_task(SimpleNamespace(task_id="handshake", hidden=HIDDEN, max_steps=30,
                                                 max_sim_runs=6, sim="icarus", rung="full")))
    seen = [asyncio.run(tools.write(TASK.editable, SUBMISSIONS[kind])), asyncio.run(tools.submit())]
    assert tools.state.verdict == ("pass" if kind == "fix" else "refused")
    report = tools.env._final["report"]  # the episode's own record of the grade
    check(kind, seen, report)


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_http_v1(http, kind):
    start = http.post("/v1/episodes", json={"task": "handshake"}).json()
    eid = start["episode_id"]
    seen = [start["observation"]]
    w = http.post(f"/v1/episodes/{eid}/step", json={"tool": "write", "arguments": {
        "path": TASK.editable, "content": SUBMISSIONS[kind]}}).json()
    res = http.post(f"/v1/episodes/{eid}/step", json={"tool": "submit"}).json()
    seen += [w["observation"], res["observation"]]
    check(kind, seen, res["report"])
    assert harness_report(http, eid) == res["report"]


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_openenv_http(http, kind):
    first = http.post("/openenv/reset", json={"task": "handshake"}).json()
    eid = first["observation"]["episode_id"]
    seen = [first]
    seen.append(http.post("/openenv/step", json={"episode_id": eid, "action": {
        "tool": "write", "arguments": {"path": TASK.editable, "content": SUBMISSIONS[kind]}}}).json())
    last = http.post("/openenv/step", json={"episode_id": eid, "action": {"tool": "submit"}}).json()
    seen.append(last)
    report = harness_report(http, eid)
    assert last["observation"]["verdict"] == report["verdict"] and last["done"]
    check(kind, seen, report)


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_openenv_websocket(server, http, kind):
    pytest.importorskip("openenv.core", reason="openenv-core is not installed (pip install .[openenv])")
    from cdc_env.adapters.openenv import TokenEnvClient

    with TokenEnvClient(f"{server.url}/openenv", token=TOKEN).sync() as env:
        first = env.reset(task="handshake")
        eid = first.observation["episode_id"]
        seen = [first.model_dump() if hasattr(first, "model_dump") else vars(first)]
        for action in ({"tool": "write", "arguments": {"path": TASK.editable, "content": SUBMISSIONS[kind]}},
                       {"tool": "submit", "arguments": {}}):
            r = env.step(action)
            seen.append({"observation": r.observation, "reward": r.reward, "done": r.done})
    assert eid not in server.state.episodes  # the session ended its episode; the report stays
    check(kind, seen, harness_report(http, eid))


@pytest.mark.parametrize("kind", SUBMISSIONS)
def test_mcp(http, kind):
    def rpc(method: str, **params) -> dict:
        r = http.post("/openenv/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
        assert r.status_code == 200
        return r.json()

    sid = rpc("openenv/session/create", task="handshake")["result"]["session_id"]
    seen = [rpc("tools/call", session_id=sid, name="write",
                arguments={"path": TASK.editable, "content": SUBMISSIONS[kind]})]
    done = rpc("tools/call", session_id=sid, name="submit", arguments={})
    seen.append(done)
    assert rpc("openenv/session/close", session_id=sid)["result"]["closed"] is True
    report = harness_report(http, sid)  # still there after the session closed its episode
    sc = done["result"]["structuredContent"]
    assert sc == {"reward": float(report["reward"]), "done": True, "error": None,
                  "verdict": report["verdict"]}
    check(kind, seen, report)


def test_the_report_route_before_a_submission_and_for_an_unknown_episode(http):
    eid = http.post("/v1/episodes", json={"task": "handshake"}).json()["episode_id"]
    r = http.get(f"/v1/episodes/{eid}/report")
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_submitted"
    http.delete(f"/v1/episodes/{eid}")
    assert http.get(f"/v1/episodes/{eid}/report").json()["error"]["code"] == "episode_closed"
    assert http.get("/v1/episodes/nosuchepisode/report").status_code == 404
