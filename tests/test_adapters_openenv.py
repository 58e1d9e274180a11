"""OpenEnv-compatible routes, driven by the real openenv-core client (WebSocket) and plain HTTP:
an episode to reward 1 with the reference fix."""

from __future__ import annotations

import pytest

from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

pytest.importorskip("fastapi", reason="the server extra is not installed (pip install .[server])")
pytest.importorskip("websockets", reason="websockets is not installed (pip install .[server])")
openenv = pytest.importorskip("openenv.core", reason="openenv-core is not installed (pip install .[test])")
httpx = pytest.importorskip("httpx")
pytestmark = [needs_icarus, needs_bwrap]

from cdc_env.server import ServerConfig, resolve_tasks, serve_in_thread  # noqa: E402


@pytest.fixture(scope="module")
def server():
    cfg = ServerConfig(tasks=resolve_tasks(["handshake", "event"]), workers=1, hidden=4, max_episodes=2)
    with serve_in_thread(cfg) as srv:
        yield srv


def test_openenv_client_over_websocket_to_reward_1(server):
    from openenv.core.generic_client import GenericEnvClient

    task = load_task("handshake")
    with GenericEnvClient(base_url=f"{server.url}/openenv").sync() as env:
        first = env.reset(task="handshake", seed=0)
        obs = first.observation
        assert obs["text"].startswith("Task: handshake") and first.reward is None and not first.done
        assert [t["function"]["name"] for t in obs["tools"]] and obs["system_prompt"]
        state = env.state()
        assert (state["episode_id"], state["step_count"]) == (obs["episode_id"], 0)
        r = env.step({"tool": "write", "arguments": {"path": task.editable, "content": task.reference_text}})
        assert r.observation["error"] is None and r.reward is None and not r.done
        r = env.step({"tool": "submit", "arguments": {}})
        assert r.done and r.reward == 1.0 and r.observation["verdict"] == "pass"
        assert "report" not in r.observation  # the harness's: GET /v1/episodes/{id}/report
        assert env.state()["step_count"] == 2
    # the session's episode ended with its connection (the server ends it right after it answers
    # the client's close, so the client can be back first: wait for it as the leaving tests do)
    import time

    for _ in range(600):
        if obs["episode_id"] not in server.state.episodes:
            break
        time.sleep(0.1)
    assert obs["episode_id"] not in server.state.episodes


def test_openenv_errors_are_error_messages(server):
    from openenv.core.generic_client import GenericEnvClient

    with GenericEnvClient(base_url=f"{server.url}/openenv").sync() as env:
        with pytest.raises(RuntimeError, match="reset before the first step"):
            env.step({"tool": "read", "arguments": {}})
        with pytest.raises(RuntimeError, match="does not serve a task"):
            env.reset(task="no_such_task")
        env.reset(task="event")
        bad = env.step({"tool": "nope"})
        assert bad.observation["error"] == "unknown_tool" and not bad.done


def test_openenv_http_routes_are_stateful_by_episode_id(server):
    task = load_task("event")
    with httpx.Client(base_url=f"{server.url}/openenv", timeout=120) as c:
        assert c.get("/health").json()["status"] == "healthy"
        assert set(c.get("/schema").json()) == {"action", "observation", "state"}
        first = c.post("/reset", json={"task": "event", "hidden": 2}).json()
        eid = first["observation"]["episode_id"]
        assert c.post("/step", json={"action": {"tool": "contract"}}).status_code == 422  # no episode_id
        w = c.post("/step", json={"action": {"tool": "write", "arguments": {"path": task.editable,
                                                                           "content": task.reference_text}},
                                  "episode_id": eid}).json()
        assert w["observation"]["error"] is None
        s = c.post("/step", json={"action": {"tool": "submit"}, "episode_id": eid}).json()
        assert s["done"] and s["reward"] == 1.0
        assert c.get("/state", params={"episode_id": eid}).json()["done"] is True


def test_finished_episodes_do_not_count_against_the_cap(server):
    """max_episodes is 2: two finished episodes do not stop a third (or a fourth) from starting."""
    with httpx.Client(base_url=server.url, timeout=120) as c:
        for _ in range(4):
            r = c.post("/v1/episodes", json={"task": "event", "max_steps": 1})
            assert r.status_code == 201, r.text
            done = c.post(f"/v1/episodes/{r.json()['episode_id']}/step", json={"tool": "contract"}).json()
            assert done["done"]  # the one call spent the budget: auto-submitted
        live = [c.post("/v1/episodes", json={"task": "event"}) for _ in range(3)]
        assert [r.status_code for r in live] == [201, 201, 429]  # unfinished ones still do
        for r in live[:2]:
            c.delete(f"/v1/episodes/{r.json()['episode_id']}")


def test_websocket_needs_the_token_when_the_server_has_one():
    import asyncio
    import json

    from websockets.asyncio.client import connect

    cfg = ServerConfig(tasks=resolve_tasks(["event"]), workers=1, hidden=2, token="s3cret-token")
    with serve_in_thread(cfg) as srv:
        url = srv.url.replace("http://", "ws://") + "/openenv/ws"

        async def talk(headers: dict) -> dict:
            async with connect(url, additional_headers=headers) as ws:
                await ws.send(json.dumps({"type": "reset", "data": {}}))
                return json.loads(await ws.recv())

        with pytest.raises(Exception):  # noqa: B017 -- refused at the handshake or closed at once
            asyncio.run(talk({}))
        with pytest.raises(Exception):  # noqa: B017
            asyncio.run(talk({"Authorization": "Bearer wrong"}))
        ok = asyncio.run(talk({"Authorization": "Bearer s3cret-token"}))
        assert ok["type"] == "observation" and ok["data"]["observation"]["text"].startswith("Task: event")


def test_a_websocket_episode_lasts_longer_than_a_minute(server):
    """The body deadline of the upgrade request (30 s) used to close every WebSocket session and
    end its episode. A session lives as long as the episode's idle timeout allows: here an episode
    of more than 60 s, with pauses longer than the body deadline, over the stock client."""
    import time

    from openenv.core.generic_client import GenericEnvClient

    task = load_task("handshake")
    assert server.state.config.body_timeout < 35
    start = time.monotonic()
    with GenericEnvClient(base_url=f"{server.url}/openenv", message_timeout_s=300).sync() as env:
        env.reset(task="handshake")
        time.sleep(server.state.config.body_timeout + 5)
        r = env.step({"tool": "write", "arguments": {"path": task.editable, "content": task.reference_text}})
        assert r.observation["error"] is None
        time.sleep(30)
        r = env.step({"tool": "submit", "arguments": {}})
        assert r.done and r.reward == 1.0
    assert time.monotonic() - start > 60


def _ws_url(srv) -> str:
    return srv.url.replace("http://", "ws://") + "/openenv/ws"


@pytest.fixture
def server_log():
    """Records of the server's loggers (uvicorn's do not reach the root logger)."""
    import logging

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.WARNING)
    loggers = [logging.getLogger(n) for n in ("uvicorn.error", "uvicorn", "cdc_env.server")]
    for lg in loggers:
        lg.addHandler(handler)
    yield records
    for lg in loggers:
        lg.removeHandler(handler)


def test_bad_websocket_messages_get_close_codes_not_tracebacks(server, server_log):
    import asyncio
    import json

    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    async def close_code(payload: str | bytes) -> int:
        async with connect(_ws_url(server), max_size=None) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"task": "event"}}))
            assert json.loads(await ws.recv())["type"] == "observation"
            await ws.send(payload)
            try:
                await ws.recv()
            except ConnectionClosed as exc:
                return exc.rcvd.code if exc.rcvd else -1
            return 0

    before = set(server.state.episodes)
    assert asyncio.run(close_code(b"\x00\x01binary")) == 1003
    assert asyncio.run(close_code("[" * 100_000)) == 1008
    assert asyncio.run(close_code('{"type": "state", "pad": "' + "x" * (2 << 20) + '"}')) == 1009
    assert not [r.getMessage() for r in server_log if r.levelname in ("ERROR", "CRITICAL")]
    assert set(server.state.episodes) <= before  # every session's episode ended with it


def _send_one_text_frame(url: str, size: int) -> tuple[int | None, str, str]:
    """A client that writes a whole text frame of ``size`` bytes before it reads anything, as a
    client blocked in ``send`` does, then reads the server's close frame, answers it with its own
    and reads to the end: (the close code it read or None, its reason, how the connection ended:
    "eof", or the error the send or the read met)."""
    import base64
    import os
    import socket
    import struct

    host, port = url.removeprefix("http://").rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=120)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall((f"GET /openenv/ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        assert head.startswith(b"HTTP/1.1 101"), head[:80]
        data = head.split(b"\r\n\r\n", 1)[1]
        ended = "eof"
        try:  # FIN + text, 64-bit length, a zero mask (so the payload goes as it is)
            s.sendall(bytes([0x81, 0x80 | 127]) + struct.pack("!Q", size) + bytes(4))
            chunk = b"x" * (1 << 16)
            for done in range(0, size, len(chunk)):
                s.sendall(chunk[:size - done])
        except OSError as exc:
            ended = f"send: {exc.strerror}"
        try:
            while len(data) < 2 or len(data) < 2 + (data[1] & 0x7F):
                if not (block := s.recv(1 << 16)):
                    break
                data += block
            s.sendall(bytes([0x88, 0x82]) + bytes(4) + b"\x03\xf1")  # our close (1009), as RFC 6455 asks
            while block := s.recv(1 << 16):
                data += block
        except OSError as exc:
            ended = f"recv: {exc.strerror}" if ended == "eof" else ended
    finally:
        s.close()
    if len(data) >= 4 and data[0] == 0x88:
        return struct.unpack("!H", data[2:4])[0], data[4:2 + (data[1] & 0x7F)].decode(), ended
    return None, "", ended


def test_the_frame_cursor_follows_frames_without_their_payloads():
    """What the lingering close counts on: payload bytes never read as a header (a payload full of
    close-frame look-alikes), headers split across reads, 7-, 16- and 64-bit lengths, masked or not."""
    import struct

    from cdc_env.server.limits import FrameCursor

    def frame(op: int, payload: bytes, masked: bool = True) -> bytes:
        n = len(payload)
        size = bytes([n]) if n < 126 else bytes([126]) + struct.pack("!H", n) if n < 1 << 16 \
            else bytes([127]) + struct.pack("!Q", n)
        size = bytes([size[0] | (0x80 if masked else 0)]) + size[1:]
        return bytes([0x80 | op]) + size + (bytes(4) if masked else b"") + payload

    fake_close = frame(0x8, b"\x03\xe8") * 40
    stream = (frame(0x1, fake_close) + frame(0x2, b"x" * 70_000) + frame(0x1, fake_close * 300)
              + frame(0x9, b"", masked=False) + frame(0x8, b"\x03\xf1"))
    for step in (1, 3, 7, 4096, len(stream)):
        cursor, ops = FrameCursor(), []
        for i in range(0, len(stream), step):
            ops += cursor.feed(stream[i:i + step])
        assert ops == [0x1, 0x2, 0x1, 0x9, 0x8], step


def test_a_message_far_over_max_body_gets_close_1009_not_a_reset():
    """A message 10x and 1000x --max-body: the server sends close 1009 and reads the rest of the
    message away before it closes the socket. (Before, it closed the socket with the client's bytes
    unread, the kernel answered with a TCP reset, and a client still writing -- the stock sync
    client among them -- lost the close frame: a connection error instead of 1009.)"""
    import json

    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    limit = 64 << 10
    cfg = ServerConfig(tasks=resolve_tasks(["event"]), workers=1, hidden=4, max_episodes=2, max_body=limit)
    with serve_in_thread(cfg) as srv:
        for times in (10, 1000):
            code, reason, ended = _send_one_text_frame(srv.url, times * limit)
            assert (code, ended) == (1009, "eof"), (times, code, reason, ended)
            assert str(limit) in reason
            for _ in range(3):  # the stock client: its send writes the whole message, then it reads
                with connect(_ws_url(srv), max_size=None) as ws:
                    ws.send(json.dumps({"type": "reset", "data": {"task": "event"}}))
                    assert json.loads(ws.recv())["type"] == "observation"
                    with pytest.raises(ConnectionClosed) as closed:
                        ws.send('{"type": "state", "pad": "' + "x" * (times * limit) + '"}')
                        ws.recv()
                    got = closed.value.rcvd
                    assert got is not None and got.code == 1009, (times, closed.value)


def test_a_client_that_leaves_mid_grade_leaves_no_traceback_and_no_episode(server, server_log):
    import asyncio
    import json
    import time

    from websockets.asyncio.client import connect

    before = set(server.state.episodes)

    async def leave() -> str:
        async with connect(_ws_url(server)) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"task": "handshake"}}))
            eid = json.loads(await ws.recv())["data"]["observation"]["episode_id"]
            await ws.send(json.dumps({"type": "step", "data": {"tool": "submit"}}))
            ws.transport.abort()  # gone without a close frame, while the server grades
            return eid

    async def close_and_leave() -> str:
        async with connect(_ws_url(server)) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"task": "event"}}))
            eid = json.loads(await ws.recv())["data"]["observation"]["episode_id"]
            await ws.send(json.dumps({"type": "close"}))
            ws.transport.abort()  # the server's close finds nobody
            return eid

    async def just_leave() -> str:
        ws = await connect(_ws_url(server))
        await ws.send(json.dumps({"type": "reset", "data": {"task": "event"}}))
        eid = json.loads(await ws.recv())["data"]["observation"]["episode_id"]
        ws.transport.abort()  # an idle session's client vanishes
        return eid

    for eid in (asyncio.run(leave()), asyncio.run(close_and_leave()), asyncio.run(just_leave())):
        for _ in range(600):  # the grade finishes, the reply finds nobody, the episode ends
            if eid not in server.state.episodes:
                break
            time.sleep(0.1)
        assert eid not in server.state.episodes
    time.sleep(0.5)  # let the server finish with both connections
    assert set(server.state.episodes) <= before
    assert not [r.getMessage() for r in server_log if r.levelname in ("ERROR", "CRITICAL")]


def _peak_rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def test_what_one_websocket_makes_the_server_hold_is_bounded(server):
    """A burst of compressible messages sent while the server grades: with per-message compression
    one socket read expanded to hundreds of MiB in the server's queue (557 MiB here). Now a message
    is at most max_body bytes on the wire and in memory, so the server process's peak grows by
    little (the server runs in this process; the client's own 15 MiB message counts too)."""
    import asyncio
    import json

    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS (VmHWM)
    except OSError:
        pytest.skip("cannot reset the peak RSS here (/proc/self/clear_refs)")
    base = _peak_rss_kb()
    big = json.dumps({"type": "state", "pad": " " * (15 << 20)})

    async def flood() -> None:
        async with connect(_ws_url(server), compression="deflate", max_size=None) as ws:
            try:
                await ws.send(json.dumps({"type": "reset", "data": {"task": "handshake"}}))
                await ws.recv()
                # while the server grades, the burst waits in the socket, then arrives in one read
                await ws.send(json.dumps({"type": "step", "data": {"tool": "submit"}}))
                for _ in range(40):
                    await ws.send(big)
                while True:
                    await ws.recv()
            except ConnectionClosed:
                pass

    asyncio.run(flood())
    grown_mib = (_peak_rss_kb() - base) / 1024
    print(f"peak RSS grew by {grown_mib:.0f} MiB")
    assert grown_mib < 100, f"the server's process grew by {grown_mib:.0f} MiB"


def test_openenv_validate_passes_every_criterion(server):
    """The real `openenv validate --url` command against the running server: 6 of 6."""
    import json
    import shutil
    import subprocess

    exe = shutil.which("openenv")
    if exe is None:
        pytest.skip("the openenv command (openenv-core) is not on PATH")
    # generous time-outs: a safety net on a loaded machine, not a measurement
    p = subprocess.run([exe, "validate", "--url", f"{server.url}/openenv", "--json", "--timeout", "60"],
                       capture_output=True, text=True, timeout=900)
    report = json.loads(p.stdout)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert failed == [] and p.returncode == 0, failed
    assert report["summary"]["passed_count"] == report["summary"]["total_count"] == 6
    assert report["mode"] == "simulation"


def test_mcp_lists_the_tools_exactly_and_runs_an_episode_to_reward_1(server):
    from cdc_env.tools import tool_definitions

    task = load_task("handshake")
    with httpx.Client(base_url=f"{server.url}/openenv", timeout=120) as c:
        def rpc(method: str, **params) -> dict:
            r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            assert r.status_code == 200
            return r.json()

        assert rpc("initialize")["result"]["serverInfo"]["name"] == "cdc_env"
        listed = rpc("tools/list")["result"]["tools"]
        assert listed == [{"name": d["function"]["name"], "description": d["function"]["description"],
                           "inputSchema": d["function"]["parameters"]} for d in tool_definitions()]
        assert "error" in rpc("tools/call", name="contract", arguments={})  # no session
        sid = rpc("openenv/session/create", task="handshake", hidden=2)["result"]["session_id"]
        bad = rpc("tools/call", session_id=sid, name="read", arguments={"path": "../tb.v"})["result"]
        assert bad["isError"] and bad["structuredContent"]["done"] is False
        rpc("tools/call", session_id=sid, name="write",
            arguments={"path": task.editable, "content": task.reference_text})
        done = rpc("tools/call", session_id=sid, name="submit", arguments={})["result"]
        assert done["structuredContent"]["reward"] == 1.0 and done["structuredContent"]["done"]
        assert rpc("openenv/session/close", session_id=sid)["result"]["closed"] is True
        assert rpc("nope")["error"]["code"] == -32601
        assert c.post("/mcp", content=b"{").json()["error"]["code"] == -32700


def test_the_stock_client_with_a_token_reaches_reward_1():
    from cdc_env.adapters.openenv import TokenEnvClient

    task = load_task("event")
    cfg = ServerConfig(tasks=resolve_tasks(["event"]), workers=1, hidden=2, token="s3cret-token")
    with serve_in_thread(cfg) as srv:
        with TokenEnvClient(f"{srv.url}/openenv", token="s3cret-token").sync() as env:
            env.reset(task="event")
            env.step({"tool": "write", "arguments": {"path": task.editable, "content": task.reference_text}})
            assert env.step({"tool": "submit", "arguments": {}}).reward == 1.0
        with pytest.raises(ConnectionError):
            with TokenEnvClient(f"{srv.url}/openenv", token="wrong").sync() as env:
                env.reset(task="event")


def test_mcp_refuses_bad_ids_misspelt_fields_and_unknown_sessions(server):
    """JSON-RPC errors, never a 500: ids that are NaN, Infinity, 1e400 (inf), an object; a misspelt
    reset field; closing a session that never existed."""
    with httpx.Client(base_url=f"{server.url}/openenv", timeout=120) as c:
        for raw in ('{"jsonrpc": "2.0", "id": NaN, "method": "tools/list"}',
                    '{"jsonrpc": "2.0", "id": Infinity, "method": "tools/list"}',
                    '{"jsonrpc": "2.0", "id": 1e400, "method": "tools/list"}',
                    '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}',
                    '{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}'):
            r = c.post("/mcp", content=raw.encode(), headers={"Content-Type": "application/json"})
            assert r.status_code == 200, (raw, r.status_code, r.text[:300])
            err = r.json()
            assert err["id"] is None and err["error"]["code"] in (-32700, -32600), (raw, err)

        def rpc(method: str, **params) -> dict:
            body = {"jsonrpc": "2.0", "id": "a", "method": method, "params": params}
            return c.post("/mcp", json=body).json()

        err = rpc("openenv/session/create", task="handshake", hiden=2)["error"]
        assert "unknown reset field(s): hiden" in err["message"]
        err = rpc("openenv/session/close", session_id="never-issued")["error"]
        assert "no such episode" in err["message"]
        sid = rpc("openenv/session/create", task="handshake", _meta={"progressToken": 1})
        sid = sid["result"]["session_id"]
        assert rpc("openenv/session/close", session_id=sid)["result"]["closed"] is True
        assert rpc("openenv/session/close", session_id=sid)["result"]["closed"] is True  # idempotent
