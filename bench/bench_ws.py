"""Load run of the OpenEnv WebSocket route on loopback (a measurement, not a test; it asserts nothing).

Starts ``cdc-env serve`` as a child process on 127.0.0.1 with a free port (body deadline
``--body-timeout``, default 5 s, so any session still tied to it would die within the run), then
opens ``--sessions`` WebSocket sessions at once. Each session resets an episode and sends
``--messages`` messages spread over ``--seconds`` (read, state, contract and write steps in turn:
calls that do not simulate), optionally ends with a write of the reference fix and a submit
(``--submit``), and closes. Also measures the server's resident memory (VmRSS) before and at the
peak of the run.

Reported: sessions opened / completed / dropped (closed by the server or the network before the
client closed), messages sent / answered / errors, reply latency p50/p95/max (ms), submits and
their rewards, server RSS.

    python bench/bench_ws.py [--task handshake] [--sessions 50] [--messages 40] [--seconds 90]
                             [--submit 4] [--hidden 4] [--workers 2] [--json]

Figures depend on the machine and on what else runs on it; note both with the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from cdc_env.task import load_task


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("VmRSS:")), 0)


async def session(url: str, k: int, args: argparse.Namespace, task, stats: dict) -> None:
    moves = [{"tool": "read", "arguments": {"path": task.editable}}, "state", {"tool": "contract"},
             {"tool": "write", "arguments": {"path": task.editable, "content": task.defective_text}}]
    gap = args.seconds / max(args.messages, 1)
    stats["opened"] += 1
    try:
        async with connect(url, max_size=None, open_timeout=60) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"task": task.id, "hidden": args.hidden,
                                                                "max_steps": 200}}))
            first = json.loads(await ws.recv())
            if first.get("type") != "observation":
                stats["errors"] += 1
            for i in range(args.messages):
                await asyncio.sleep(gap)
                move = moves[i % len(moves)]
                msg = {"type": "state"} if move == "state" else {"type": "step", "data": move}
                t0 = time.monotonic()
                await ws.send(json.dumps(msg))
                stats["sent"] += 1
                reply = json.loads(await ws.recv())
                stats["latency_ms"].append(1000 * (time.monotonic() - t0))
                stats["answered"] += 1
                if reply.get("type") == "error":
                    stats["errors"] += 1
            if k < args.submit:
                await ws.send(json.dumps({"type": "step", "data": {
                    "tool": "write", "arguments": {"path": task.editable, "content": task.reference_text}}}))
                await ws.recv()
                await ws.send(json.dumps({"type": "step", "data": {"tool": "submit"}}))
                out = json.loads(await ws.recv())
                stats["rewards"].append(out.get("data", {}).get("reward"))
            await ws.send(json.dumps({"type": "close"}))
        stats["completed"] += 1
    except ConnectionClosed as exc:
        stats["dropped"] += 1
        stats["drop_codes"].append(exc.rcvd.code if exc.rcvd else None)
    except (TimeoutError, OSError) as exc:
        stats["dropped"] += 1
        stats["drop_codes"].append(type(exc).__name__)


async def run(url: str, args: argparse.Namespace, pid: int) -> dict:
    task = load_task(args.task)
    stats: dict = {"opened": 0, "completed": 0, "dropped": 0, "drop_codes": [], "sent": 0, "answered": 0,
                   "errors": 0, "latency_ms": [], "rewards": []}
    peak = [rss_kb(pid)]

    async def sample() -> None:
        while True:
            peak.append(rss_kb(pid))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample())
    t0 = time.monotonic()
    await asyncio.gather(*(session(url, k, args, task, stats) for k in range(args.sessions)))
    wall = time.monotonic() - t0
    sampler.cancel()
    lat = sorted(stats.pop("latency_ms"))
    q = statistics.quantiles(lat, n=20) if len(lat) >= 20 else [float("nan")] * 19
    return {**stats, "wall_s": round(wall, 1),
            "latency_ms": {"p50": round(statistics.median(lat), 1) if lat else None,
                           "p95": round(q[18], 1), "max": round(lat[-1], 1) if lat else None},
            "server_rss_mb": {"start": round(peak[0] / 1024, 1), "peak": round(max(peak) / 1024, 1)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="handshake")
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--messages", type=int, default=40, help="messages per session after its reset")
    ap.add_argument("--seconds", type=float, default=90.0, help="how long each session lasts (spread)")
    ap.add_argument("--submit", type=int, default=4, help="sessions that end with the fix and a submit")
    ap.add_argument("--hidden", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--body-timeout", type=float, default=5.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "cdc_env.cli", "serve", "--tasks", args.task,
                               "--port", str(port), "--workers", str(args.workers),
                               "--max-episodes", str(args.sessions + 10), "--body-timeout",
                               str(args.body_timeout)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        result = asyncio.run(run(f"ws://127.0.0.1:{port}/openenv/ws", args, server.pid))
    finally:
        server.send_signal(signal.SIGINT)
        try:
            _, err = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
    result["server_tracebacks"] = err.count("Traceback")
    result["settings"] = {k: v for k, v in vars(args).items() if k != "json"}
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
