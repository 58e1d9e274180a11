"""The HTTP server and its client against a real uvicorn server on 127.0.0.1 (ephemeral ports).

Covers: the bearer token (401 on every path), served tasks only (unlisted and held-out tasks 404,
no path tricks), expired and closed episodes (410 with a clear message), the body cap (413, with
and without Content-Length), the live-episode cap (429), scripted agents giving the same results
over HTTP as in-process, one-shot grades equal to in-process grades, 50 concurrent episodes with no
scratch left behind, the event loop answering while a simulation runs, and ``cdc-env serve``.
Property-based testing against the OpenAPI document is in test_server_schema.py.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest

httpx = pytest.importorskip("httpx", reason="the server extra is not installed (pip install -e .[server])")
pytest.importorskip("fastapi", reason="the server extra is not installed (pip install -e .[server])")
pytest.importorskip("uvicorn", reason="the server extra is not installed (pip install -e .[server])")

from cdc_env.client import HttpEnv, ServerClient, ServerError  # noqa: E402
from cdc_env.grade import grade  # noqa: E402
from cdc_env.scripted import load_agents, run_agent  # noqa: E402
from cdc_env.server import ServerConfig, resolve_tasks, serve_in_thread  # noqa: E402
from cdc_env.task import load_task, task_ids  # noqa: E402
from tests.conftest import needs_bwrap, needs_icarus  # noqa: E402

pytestmark = [needs_icarus, needs_bwrap]
TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HIDDEN = 2  # hidden seeds per submission: the server path, not the grader, is under test here


def assert_error(resp: httpx.Response, status: int, code: str | None = None) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["code"], str) and body["error"]["message"], body
    if code is not None:
        assert body["error"]["code"] == code, body
    return body["error"]


@pytest.fixture(scope="module")
def heldout_dir(tmp_path_factory) -> Path:
    """A held-out-style task folder outside the repository (a renamed copy of handshake)."""
    src = load_task("handshake").dir
    dst = tmp_path_factory.mktemp("minted") / "hs_heldout"
    shutil.copytree(src, dst)
    toml = (dst / "task.toml").read_text()
    (dst / "task.toml").write_text(toml.replace('id = "handshake"', 'id = "hs_heldout"\nheldout = true', 1))
    return dst


@pytest.fixture(scope="module")
def server():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake", "event"]), token=TOKEN, workers=2, max_episodes=60)
    with serve_in_thread(cfg) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=300) as c:
        yield c


def start(http: httpx.Client, task: str = "handshake", **kw) -> dict:
    resp = http.post("/v1/episodes", json={"task": task, **kw})
    assert resp.status_code == 201, resp.text
    return resp.json()


# ---------------------------------------------------------------------- token


def test_every_request_without_the_right_token_is_401(server, http):
    eid = start(http)["episode_id"]
    calls = [("GET", "/v1/health", None), ("GET", "/v1/tasks", None), ("GET", "/v1/tools", None),
             ("GET", "/openapi.json", None), ("GET", "/no/such/path", None),
             ("POST", "/v1/episodes", {"task": "handshake"}),
             ("POST", f"/v1/episodes/{eid}/step", {"tool": "read", "arguments": {"path": "hs_top.v"}}),
             ("DELETE", f"/v1/episodes/{eid}", None),
             ("POST", "/v1/grade", {"task": "handshake", "submission": "x"})]
    wrong = [{}, {"Authorization": ""}, {"Authorization": TOKEN}, {"Authorization": f"Bearer {TOKEN}x"},
             {"Authorization": f"Bearer {TOKEN[:-1]}"}, {"Authorization": f"bearer  {TOKEN}"},
             {"Authorization": f"Basic {TOKEN}"}, {"X-Token": TOKEN}]
    with httpx.Client(base_url=server.url, timeout=30) as anon:
        for method, path, body in calls:
            for headers in wrong:
                resp = anon.request(method, path, json=body, headers=headers)
                err = assert_error(resp, 401, "unauthorized")
                assert TOKEN not in err["message"]
    # nothing above reached the app: the episode is still live and untouched
    assert http.post(f"/v1/episodes/{eid}/step", json={"tool": "contract"}).json()["steps_used"] == 1
    assert http.get("/v1/health").status_code == 200
    assert http.delete(f"/v1/episodes/{eid}").status_code == 200


def test_the_client_raises_a_clear_error_for_a_wrong_token(server):
    with pytest.raises(ServerError) as exc:
        HttpEnv("handshake", server.url, token="wrong").reset()
    assert exc.value.status == 401 and exc.value.code == "unauthorized"


# ---------------------------------------------------------------------- served tasks only


def test_only_the_named_tasks_are_listed_and_reachable(server, http, heldout_dir):
    listed = http.get("/v1/tasks").json()["tasks"]
    assert [t["id"] for t in listed] == ["handshake", "event"]
    public_not_named = [t for t in task_ids() if t not in ("handshake", "event")]
    guesses = ["hs_heldout", str(heldout_dir), str(heldout_dir / "task.toml"), "../handshake",
               "tasks/handshake", "handshake/", "./handshake", "HANDSHAKE", "handshake\x00",
               "%2e%2e/handshake",
               str(load_task("handshake").dir), "common", "", *public_not_named]
    for name in guesses:
        assert_error(http.post("/v1/episodes", json={"task": name}), 404, "task_not_found")
        assert_error(http.post("/v1/grade", json={"task": name, "submission": "module m; endmodule"}), 404,
                     "task_not_found")
    for path in ("/v1/tasks/hs_heldout", "/v1/tasks/../episodes", "/v1/episodes/../../tasks"):
        assert http.get(path).status_code in (404, 405)


def test_a_heldout_task_is_served_only_when_named(heldout_dir):
    cfg = ServerConfig(tasks=resolve_tasks(["handshake", str(heldout_dir)]), workers=1)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        assert [t["id"] for t in c.get("/v1/tasks").json()["tasks"]] == ["handshake", "hs_heldout"]
        first = c.post("/v1/episodes", json={"task": "hs_heldout"}).json()
        assert first["task"] == "hs_heldout" and "Task: hs_heldout" in first["observation"]
        assert str(heldout_dir) not in json.dumps(first)


# ---------------------------------------------------------------------- episode life cycle


def test_expired_and_closed_episodes_answer_410_and_free_their_scratch():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1, idle_timeout=0.5)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        eid = c.post("/v1/episodes", json={"task": "handshake", "hidden": 0}).json()["episode_id"]
        res = c.post(f"/v1/episodes/{eid}/step", json={"tool": "run_visible"})
        assert res.status_code == 200 and res.json()["sim_runs_used"] == 1
        assert (srv.state.scratch_root / f"ep-{eid}").is_dir()
        for _ in range(100):  # bounded: expiry is 0.5 s after the last request
            time.sleep(0.1)
            if eid not in srv.state.episodes:
                break
        err = assert_error(c.post(f"/v1/episodes/{eid}/step", json={"tool": "read"}), 410, "episode_expired")
        assert "expired" in err["message"] and "new episode" in err["message"]
        assert not (srv.state.scratch_root / f"ep-{eid}").exists()
        assert_error(c.delete(f"/v1/episodes/{eid}"), 410, "episode_expired")

        env = HttpEnv("handshake", srv.url)
        env.reset()
        gone = env.episode_id
        srv.state.episodes[gone].last_used -= 10  # as if idle for 10 s
        with pytest.raises(ServerError) as exc:
            env.step("read", {"path": "hs_top.v"})
        assert exc.value.status == 410 and exc.value.code == "episode_expired"
        env.close()

        eid = c.post("/v1/episodes", json={"task": "handshake"}).json()["episode_id"]
        assert c.delete(f"/v1/episodes/{eid}").json() == {"episode_id": eid, "closed": True}
        assert_error(c.post(f"/v1/episodes/{eid}/step", json={"tool": "read"}), 410, "episode_closed")
        assert_error(c.post("/v1/episodes/AAAAAAAAAAAAAAAAAAAAAAAA/step", json={"tool": "read"}), 404,
                     "episode_not_found")
        assert_error(c.post("/v1/episodes/a.b/step", json={"tool": "read"}), 422)
    assert not srv.state.scratch_root.exists()


def test_the_live_episode_cap_is_429():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1, max_episodes=2)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        ids = [c.post("/v1/episodes", json={"task": "handshake"}).json()["episode_id"] for _ in range(2)]
        assert_error(c.post("/v1/episodes", json={"task": "handshake"}), 429, "episode_limit")
        c.delete(f"/v1/episodes/{ids[0]}")
        assert c.post("/v1/episodes", json={"task": "handshake"}).status_code == 201


def test_budget_requests_beyond_the_caps_are_refused(http):
    for body in ({"max_steps": 0}, {"max_steps": 10_000}, {"max_sim_runs": -1}, {"hidden": 201},
                 {"hidden": "some"}, {"sim": "modelsim"}, {"max_steps": "5"}, {"extra": 1}):
        assert_error(http.post("/v1/episodes", json={"task": "handshake", **body}), 422, "bad_request")


# ---------------------------------------------------------------------- request size


def test_oversize_bodies_are_413_with_or_without_content_length():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1, max_body=4096)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        eid = c.post("/v1/episodes", json={"task": "handshake"}).json()["episode_id"]
        big = {"tool": "write", "arguments": {"path": "hs_top.v", "content": "x" * 5000}}
        assert_error(c.post(f"/v1/episodes/{eid}/step", json=big), 413, "body_too_large")

        def chunks():
            data = json.dumps(big).encode()
            for i in range(0, len(data), 1000):
                yield data[i:i + 1000]

        resp = c.post(f"/v1/episodes/{eid}/step", content=chunks(),
                      headers={"content-type": "application/json"})
        assert_error(resp, 413, "body_too_large")
        assert_error(c.post("/v1/grade", json={"task": "handshake", "submission": "y" * 5000}), 413)
        # just under the cap still works, and the refused calls did not count
        small = {"tool": "write", "arguments": {"path": "hs_top.v", "content": "x" * 3000}}
        assert c.post(f"/v1/episodes/{eid}/step", json=small).json()["steps_used"] == 1


# ---------------------------------------------------------------------- same results as in-process


@pytest.mark.parametrize("agent", sorted(load_agents()))
def test_scripted_agents_give_the_same_results_over_http(server, agent):
    spec = load_agents()[agent]
    local = run_agent(spec, "handshake", hidden=HIDDEN)
    remote = run_agent(spec, "handshake", hidden=HIDDEN,
                       make_env=functools.partial(HttpEnv, url=server.url, token=TOKEN))
    assert remote.outcome == local.outcome, remote.problems
    assert remote.row() == local.row()
    assert remote.transcript == local.transcript  # every step's result but the report, keys included
    assert (remote.report is None) == (local.report is None)
    if local.report is not None:
        assert remote.report["reward"] == local.report["reward"]
        assert _seed_results(remote.report) == _seed_results(local.report)


def _seed_results(report: dict) -> dict:
    return {stage: [(r["seed"], r["status"], r["hash"]) for r in s["results"]]
            for stage, s in report["seeds"].items()}


def test_one_shot_grade_equals_the_in_process_grade(server):
    client = ServerClient(server.url, token=TOKEN)
    doc = client.http.get(server.url + "/openapi.json").json()  # the report's schema is in the document
    task = load_task("event")
    for text in (task.reference_text, task.defective_text):
        remote = client.grade("event", text, hidden=HIDDEN)
        local = grade(task, text, hidden=HIDDEN)
        assert (remote["verdict"], remote["reward"], remote["failed_stage"]) == \
               (local["verdict"], local["reward"], local["failed_stage"])
        assert _seed_results(remote) == _seed_results(local)
        assert remote["submission_sha256"] == local["submission_sha256"]
        jsonschema.validate(remote, {"$ref": "#/components/schemas/GradeReport",
                                     "components": doc["components"]})
    client.close()


def test_tool_definitions_match(server):
    from cdc_env.tools import tool_definitions

    assert HttpEnv("handshake", server.url, token=TOKEN).tool_definitions() == tool_definitions()


# ---------------------------------------------------------------------- concurrency


def test_fifty_concurrent_episodes_complete_correctly_and_leave_no_scratch(server):
    n = 50
    barrier = threading.Barrier(n, timeout=120)
    live_at_barrier: list[int] = []
    tasks = {t: load_task(t) for t in ("handshake", "event")}

    def episode(i: int) -> tuple[int, int | None, int | None]:
        task = tasks["handshake" if i % 2 else "event"]
        submit = i % 10 == 0  # 5 submissions, hidden 0..2; the rest read/write/contract and close
        want = 1 if i % 20 == 0 else 0  # reference fix, or the defective design
        env = HttpEnv(task, server.url, token=TOKEN, hidden=i % 3, max_steps=8)
        try:
            env.reset()
            if barrier.wait() == 0:
                live_at_barrier.append(server.state.health()["episodes"])
            assert env.step("read", {"path": task.editable})["observation"].startswith(task.defective_text)
            text = task.reference_text if want else task.defective_text + f"\n// episode {i}\n"
            assert env.step("write", {"path": task.editable, "content": text})["error"] is None
            assert "cdc_sync_bit" in env.step("contract")["observation"]
            assert env.step("read", {"path": "../tb.v"})["error"] == "refused"
            if not submit:
                return i, None, None
            out = env.step("submit", {})
            assert out["done"] and out["report"]["task"] == task.id
            return i, out["reward"], want
        finally:
            env.close()

    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(episode, range(n)))
    assert live_at_barrier == [n]
    graded = [(i, got, want) for i, got, want in results if want is not None]
    assert len(graded) == 5 and all(got == want for _, got, want in graded), graded
    assert server.state.health()["episodes"] == 0
    assert server.state.health()["jobs_in_flight"] == 0
    assert list(server.state.scratch_root.iterdir()) == []


def test_the_event_loop_answers_while_a_simulation_runs(server, http):
    busy = start(http, hidden=HIDDEN)["episode_id"]
    other = start(http)["episode_id"]
    done = threading.Event()

    def submit() -> None:
        http.post(f"/v1/episodes/{busy}/step", json={"tool": "submit"})
        done.set()

    t = threading.Thread(target=submit)
    t.start()
    answered_during = 0
    for _ in range(3000):  # bounded; the submit takes at least one visible-seed stage
        if done.is_set():
            break
        if server.state.jobs_in_flight:
            res = http.post(f"/v1/episodes/{other}/step", json={"tool": "contract"})
            health = http.get("/v1/health").json()
            if res.status_code == 200 and health["jobs_in_flight"] and not done.is_set():
                answered_during += 1
        time.sleep(0.005)
    t.join(timeout=300)
    for eid in (busy, other):
        http.delete(f"/v1/episodes/{eid}")
    assert answered_during >= 1


def test_a_call_whose_worker_died_is_retried_once_and_has_no_effect():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=300) as c:
        eid = c.post("/v1/episodes", json={"task": "handshake", "hidden": 32}).json()["episode_id"]
        answer: list[httpx.Response] = []
        t = threading.Thread(target=lambda: answer.append(
            c.post(f"/v1/episodes/{eid}/step", json={"tool": "submit"})))
        t.start()
        pids: list[int] = []
        for _ in range(3000):  # bounded: wait until the worker process exists and the job is in flight
            pool = srv.state._pool
            pids = list(getattr(pool, "_processes", None) or {})
            if pids and srv.state.jobs_in_flight:
                break
            time.sleep(0.01)
        for pid in pids:  # the test's own worker processes, by id
            os.kill(pid, signal.SIGKILL)
        t.join(timeout=300)
        out = answer[0].json()
        assert answer[0].status_code == 200, out
        assert out["steps_used"] == 1 and out["done"] and out["reward"] == 0  # the defect, graded once
        assert srv.state._pool is not None and not (set(srv.state._pool._processes or {}) & set(pids))


def test_a_call_that_kills_its_worker_twice_is_a_503_with_no_effect():
    import asyncio

    from cdc_env.server import ApiError, EnvServer

    state = EnvServer(ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1))

    async def go() -> ApiError:
        await state.startup()
        try:
            await state.run_job(os._exit, 3)
        except ApiError as exc:
            return exc
        finally:
            await state.shutdown()
        raise AssertionError("the call did not fail")

    err = asyncio.run(go())
    assert err.status == 503 and err.code == "worker_failed" and "no effect" in err.message


# ---------------------------------------------------------------------- the command line


def _serve(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cdc_env.cli", "serve", "--port", "0", "--json", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def test_cdc_env_serve_says_it_is_loopback_only_without_a_token():
    proc = _serve("--tasks", "handshake", "--workers", "1")
    try:
        info = json.loads(proc.stdout.readline())
        assert info["url"].startswith("http://127.0.0.1:") and info["token"] is False
        assert "loopback only" in info["access"]
        assert httpx.get(info["url"] + "/v1/health", timeout=30).json()["tasks"] == 1
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def test_cdc_env_serve_with_a_token_from_the_environment():
    proc = _serve("--tasks", "handshake", "--token-env", "CDC_TEST_TOKEN", "--workers", "1",
                  env={"CDC_TEST_TOKEN": TOKEN})
    try:
        info = json.loads(proc.stdout.readline())
        assert info["token"] is True
        assert httpx.get(info["url"] + "/v1/health", timeout=30).status_code == 401
        assert httpx.get(info["url"] + "/v1/health", headers=AUTH, timeout=30).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


@pytest.mark.parametrize("args", [["--tasks", "handshake", "--host", "0.0.0.0"],
                                  ["--tasks", "handshake", "--token-env", "CDC_SURELY_UNSET_VAR"],
                                  ["--tasks", "no_such_task"], []])
def test_cdc_env_serve_refuses_bad_setups_in_one_line(args):
    env = {k: v for k, v in os.environ.items() if k != "CDC_SURELY_UNSET_VAR"}
    r = subprocess.run([sys.executable, "-m", "cdc_env.cli", "serve", "--port", "0", *args],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("cdc-env: ") and "Traceback" not in r.stderr


# ---------------------------------------------------------------------- connection hardening


def test_accepted_connections_have_tcp_nodelay():
    import socket as _socket

    from cdc_env.server import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == _socket.IPPROTO_TCP
        assert sock.getsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY) == 1
    finally:
        sock.close()


def test_half_sent_requests_are_dropped_and_token_holders_still_served():
    import socket as _socket

    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1, token="t0k", header_timeout=0.5,
                       body_timeout=0.5, max_connections=64)
    with serve_in_thread(cfg) as srv:
        host, port = srv.url.removeprefix("http://").split(":")
        half = []
        for i in range(100):  # more than the cap: the oldest idle ones are closed to make room
            s = _socket.create_connection((host, int(port)))
            if i % 2:
                s.sendall(b"POST /v1/grade HTTP/1.1\r\nHost: x\r\n")  # a head never finished
            half.append(s)
        ok = httpx.get(srv.url + "/v1/health", headers={"Authorization": "Bearer t0k"}, timeout=30)
        assert ok.status_code == 200
        body = _socket.create_connection((host, int(port)))
        body.sendall(b"POST /v1/grade HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0k\r\n"
                     b"Content-Length: 100\r\n\r\n{")  # a body never finished
        for s in [*half[-10:], body]:  # every one is closed by the server within the timeouts
            s.settimeout(20)  # a connection the server keeps open fails this with a timeout
            while s.recv(1 << 16):
                pass
        for s in [*half, body]:
            s.close()


def test_deep_arguments_are_a_422_not_a_500():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        eid = c.post("/v1/episodes", json={"task": "handshake"}).json()["episode_id"]
        deep = "[" * 900 + "]" * 900
        r = c.post(f"/v1/episodes/{eid}/step", content='{"tool": "run_visible", "arguments": ' + deep + "}",
                   headers={"Content-Type": "application/json"})
        assert_error(r, 422)
        r = c.post(f"/v1/episodes/{eid}/step", json={"tool": "run_visible", "arguments": deep})
        assert_error(r, 422)
        # a shallow but wrong call is answered by the environment itself, with no worker involved
        r = c.post(f"/v1/episodes/{eid}/step", json={"tool": "run_visible", "arguments": {"x": [1]}})
        assert r.status_code == 200 and r.json()["error"] == "bad_arguments"
        assert srv.state._pool is None


def test_an_episode_id_from_before_a_restart_is_410():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        old = c.post("/v1/episodes", json={"task": "handshake"}).json()["episode_id"]
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        err = assert_error(c.post(f"/v1/episodes/{old}/step", json={"tool": "contract"}), 410)
        assert "restart" in err["message"]
        assert_error(c.post("/v1/episodes/nope/step", json={"tool": "contract"}), 404)


def test_grade_dash_reads_at_most_the_limit_plus_one_byte():
    from cdc_env.submission import MAX_BYTES

    proc = subprocess.run([sys.executable, "-m", "cdc_env.cli", "grade", "handshake", "-", "--json"],
                          input=b"x" * (MAX_BYTES * 4), capture_output=True, timeout=120)
    out = json.loads(proc.stdout)
    assert out["verdict"] == "refused" and f"{MAX_BYTES + 1} bytes" in out["reason"]


def test_one_hidden_default_on_every_environment_front_end():
    """CdcRepairEnv, gym, verifiers, ServerConfig and `cdc-env serve` all default to
    env.DEFAULT_HIDDEN (serve defaulted to all while the env took 32: issue 37)."""
    import inspect

    from cdc_env.cli import build_parser
    from cdc_env.env import DEFAULT_HIDDEN, CdcRepairEnv
    from cdc_env.server.config import ServerConfig

    assert inspect.signature(CdcRepairEnv).parameters["hidden"].default == DEFAULT_HIDDEN
    assert ServerConfig(tasks=resolve_tasks(["handshake"])).hidden == DEFAULT_HIDDEN
    args = build_parser("serve").parse_args(["serve", "--tasks", "handshake"])
    assert str(args.hidden) == str(DEFAULT_HIDDEN)
    import importlib

    def gym_default(m):
        return inspect.signature(m.CdcGymEnv).parameters["hidden"].default

    def verifiers_default(m):
        return m.CdcTasksetConfig.model_fields["hidden"].default

    for module, get in (("cdc_env.adapters.gym", gym_default),
                        ("cdc_env.adapters.verifiers", verifiers_default)):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        assert get(mod) == DEFAULT_HIDDEN, module


def test_liveness_needs_no_token_and_a_form_body_is_told_the_header():
    """GET /v1/live (and OpenEnv's /openenv/health) answer without the token and say nothing else;
    a body sent as a form (curl -d without -H) or with no Content-Type gets 415 naming the header
    (it was a 422 'Input should be a valid dictionary': issue 37)."""
    cfg = ServerConfig(tasks=resolve_tasks(["handshake"]), workers=1, token="tok")
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        assert c.get("/v1/live").json() == {"status": "ok"}
        assert c.get("/openenv/health").status_code == 200
        assert c.get("/v1/health").status_code == 401 and c.post("/v1/live").status_code == 401
        auth = {"Authorization": "Bearer tok"}
        for ctype in ("application/x-www-form-urlencoded", "text/plain", None):
            headers = {**auth, **({"Content-Type": ctype} if ctype else {})}
            r = c.post("/v1/episodes", content=b'{"task": "handshake"}', headers=headers)
            assert r.status_code == 415 and "Content-Type: application/json" in r.json()["error"]["message"]
        ok = {**auth, "Content-Type": "application/json; charset=utf-8"}
        assert c.post("/v1/episodes", content=b'{"task": "handshake"}', headers=ok).status_code == 201
        doc = c.get("/openapi.json", headers=auth).json()
        assert doc["paths"]["/v1/live"]["get"]["security"] == []


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("jq") is None,
                    reason="curl or jq is missing")
def test_the_readme_curl_episode_runs_as_written_to_reward_1(tmp_path):
    """The README's shell block (its port made free): it waits on /v1/live, writes a fix with
    jq --rawfile, submits for reward 1, fetches the verdict from the report route and closes."""
    import re
    import socket

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    (tmp_path / "tasks").symlink_to(root / "tasks")  # the block runs from a checkout's folder
    block = re.search(r"### Over HTTP.*?```sh\n(.*?)```", readme, re.S).group(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    block = block.replace("8765", str(port))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(root)}
    script = f"set -e\n{block}\nkill %1; wait\n"
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env=env)
    assert p.returncode in (0, 143), p.stderr[-2000:]
    out = p.stdout
    assert '"reward": 1' in out and '"done": true' in out, out[-2000:]
    assert "\npass\n" in out and out.rstrip().endswith("true"), out[-800:]
