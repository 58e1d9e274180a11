"""Load benchmark of the HTTP server on loopback (a measurement, not a test; it asserts nothing).

Starts ``cdc-env serve`` as a child process on 127.0.0.1 with a free port, then measures:

1. resident memory (VmRSS) of the server process with 0 live episodes and with ``--episodes``
   live idle ones (each started and given a read and a write of the reference fix, as an agent
   would leave it), and the difference per episode; simulation workers are separate processes,
   reported apart (they are started on the first simulation, so they are 0 here);
2. grades per minute of the task's reference fix (``--hidden`` hidden seeds + the 8 visible) with
   1, 2 and 4 concurrent clients, each level bounded by ``--seconds`` of wall time and ``--grades``
   grades per client (one untimed warm-up grade first, which also starts the workers);
3. latency of cheap calls (read, write) over one keep-alive connection, p50/p95 in ms, first on
   a quiet server, then while ``--idle`` raw connections are held open (half of them with a
   request head never finished) -- the server runs with a bearer token and the measuring client
   holds it.

    python bench/bench_server.py [--task handshake] [--hidden 32] [--workers N] [--seconds 60]
                                 [--grades 20] [--episodes 50] [--calls 400] [--idle 1000]
                                 [--latency-only] [--json]

Figures depend on the machine and on what else runs on it; note both with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from cdc_env.task import load_task


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(x) for x in text]
    return out


TOKEN = "bench-" + os.urandom(8).hex()
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def start_server(task: str, workers: int | None) -> tuple[subprocess.Popen, dict]:
    argv = [sys.executable, "-m", "cdc_env.cli", "serve", "--port", "0", "--json", "--tasks", task,
            "--max-episodes", "1000", "--token-env", "CDC_BENCH_TOKEN"]
    if workers:
        argv += ["--workers", str(workers)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "CDC_BENCH_TOKEN": TOKEN})
    info = json.loads(proc.stdout.readline())
    return proc, info


def memory(url: str, pid: int, task_id: str, episodes: int) -> dict:
    task = load_task(task_id)
    with httpx.Client(base_url=url, timeout=60, headers=AUTH) as c:
        c.get("/v1/health")
        time.sleep(1.0)
        base = rss_kb(pid)
        ids = []
        for _ in range(episodes):
            ep = c.post("/v1/episodes", json={"task": task_id}).json()
            ids.append(ep["episode_id"])
            step = f"/v1/episodes/{ep['episode_id']}/step"
            c.post(step, json={"tool": "read", "arguments": {"path": task.editable}})
            write = {"path": task.editable, "content": task.reference_text}
            c.post(step, json={"tool": "write", "arguments": write})
        time.sleep(1.0)
        loaded = rss_kb(pid)
        live = c.get("/v1/health").json()["episodes"]
        for eid in ids:
            c.delete(f"/v1/episodes/{eid}")
    return {"rss_0_mb": round(base / 1024, 1), f"rss_{episodes}_mb": round(loaded / 1024, 1),
            "per_episode_kb": round((loaded - base) / max(1, episodes), 1), "live": live,
            "worker_rss_mb": round(sum(rss_kb(p) for p in children(pid)) / 1024, 1)}


def throughput(url: str, task_id: str, hidden: int, clients: int, seconds: float, grades: int) -> dict:
    text = load_task(task_id).reference_text
    done: list[float] = []
    bad: list[str] = []
    t0 = time.monotonic()
    stop_at = t0 + seconds

    def client() -> None:
        with httpx.Client(base_url=url, timeout=max(600.0, seconds * 4), headers=AUTH) as c:
            for _ in range(grades):
                if time.monotonic() >= stop_at:
                    return
                r = c.post("/v1/grade", json={"task": task_id, "submission": text, "hidden": hidden})
                if r.status_code != 200 or r.json().get("verdict") != "pass":
                    bad.append(r.text[:200])
                done.append(time.monotonic())

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = max(done, default=t0) - t0
    return {"clients": clients, "grades": len(done), "wall_s": round(wall, 1),
            "grades_per_min": round(60 * len(done) / wall, 1) if wall else 0.0, "errors": len(bad)}


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cheap_calls(url: str, task_id: str, calls: int, pid: int | None = None) -> dict:
    """p50/p95 of read and write calls over one keep-alive connection, in milliseconds, and the
    server process's CPU per call (what the latency would be on an idle core)."""
    task = load_task(task_id)
    cpu0 = cpu_s(pid) if pid else 0.0
    lat: dict[str, list[float]] = {"read": [], "write": []}
    with httpx.Client(base_url=url, timeout=60, headers=AUTH) as c:
        for _ in range(max(1, calls // 50)):
            eid = c.post("/v1/episodes", json={"task": task_id, "max_steps": 200}).json()["episode_id"]
            step = f"/v1/episodes/{eid}/step"
            for i in range(50):
                tool = "read" if i % 2 else "write"
                args = ({"path": task.editable} if tool == "read"
                        else {"path": task.editable, "content": task.reference_text})
                t = time.perf_counter()
                r = c.post(step, json={"tool": tool, "arguments": args})
                lat[tool].append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, r.text[:200]
            c.delete(f"/v1/episodes/{eid}")
    out: dict = {}
    if pid:
        n = sum(len(xs) for xs in lat.values())
        out["server_cpu_ms_per_call"] = round(1000 * (cpu_s(pid) - cpu0) / n, 2)
    for tool, xs in lat.items():
        xs.sort()
        out[tool] = {"n": len(xs), "p50_ms": round(statistics.median(xs), 2),
                     "p95_ms": round(xs[int(0.95 * (len(xs) - 1))], 2)}
    return out


def with_idle_connections(url: str, task_id: str, calls: int, idle: int, pid: int | None = None) -> dict:
    """cheap_calls while ``idle`` connections without a token are open (half with a stalled head)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    socks = []
    try:
        for i in range(idle):
            s = socket.create_connection((host, int(port)))
            if i % 2:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        t = time.perf_counter()
        health = httpx.get(url + "/v1/health", headers=AUTH, timeout=60)
        first_ms = round((time.perf_counter() - t) * 1000, 2)
        lat = cheap_calls(url, task_id, calls, pid)
        still_open = 0
        for s in socks:
            s.setblocking(False)
            try:
                still_open += s.recv(1) != b""
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
    finally:
        for s in socks:
            s.close()
    return {"idle_connections": idle, "health_status": health.status_code, "health_ms": first_ms,
            "calls": lat, "idle_still_open_after": still_open}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="handshake")
    p.add_argument("--hidden", type=int, default=32, help="hidden seeds per grade (default 32)")
    p.add_argument("--workers", type=int, help="server worker processes (default: the server's, cores)")
    p.add_argument("--seconds", type=float, default=60.0, help="wall-time bound per concurrency level")
    p.add_argument("--grades", type=int, default=20, help="grade bound per client per level")
    p.add_argument("--episodes", type=int, default=50, help="idle episodes for the memory figure")
    p.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4], help="concurrent clients")
    p.add_argument("--calls", type=int, default=400, help="cheap calls for the latency figures")
    p.add_argument("--idle", type=int, default=1000, help="idle connections held open while measuring")
    p.add_argument("--latency-only", action="store_true", help="only the latency figures (3.)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    proc, info = start_server(a.task, a.workers)
    try:
        url = info["url"]
        quiet = cheap_calls(url, a.task, a.calls, info["pid"])
        flood = with_idle_connections(url, a.task, a.calls, a.idle, info["pid"])
        if a.latency_only:
            print(json.dumps({"task": a.task, "cheap_calls": quiet, "with_idle": flood,
                              "load_average": os.getloadavg()}, indent=2))
            return
        mem = memory(url, info["pid"], a.task, a.episodes)
        with httpx.Client(base_url=url, timeout=600, headers=AUTH) as c:  # warm-up: starts the workers
            c.post("/v1/grade", json={"task": a.task, "submission": load_task(a.task).reference_text,
                                      "hidden": a.hidden})
        rows = [throughput(url, a.task, a.hidden, n, a.seconds, a.grades) for n in a.levels]
        mem["worker_rss_mb_after_grading"] = round(sum(rss_kb(q) for q in children(info["pid"])) / 1024, 1)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    out = {"task": a.task, "hidden": a.hidden, "workers": info["workers"], "cores": os.cpu_count(),
           "memory": mem, "throughput": rows, "cheap_calls": quiet, "with_idle": flood}
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"server on loopback, task {a.task}, reference fix, 8 visible + {a.hidden} hidden seeds (Icarus), "
          f"{info['workers']} workers, {os.cpu_count()} cores")
    print("| concurrent clients | grades | wall s | grades/min | errors |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['clients']} | {r['grades']} | {r['wall_s']} | {r['grades_per_min']} | {r['errors']} |")
    print(f"\nserver RSS: {mem['rss_0_mb']} MB with 0 episodes, {mem[f'rss_{a.episodes}_mb']} MB with "
          f"{mem['live']} idle episodes ({mem['per_episode_kb']} KB per episode); workers "
          f"{mem['worker_rss_mb_after_grading']} MB in total after grading")
    print(f"cheap calls (keep-alive): read p50 {quiet['read']['p50_ms']} ms, "
          f"write p50 {quiet['write']['p50_ms']} ms; "
          f"with {a.idle} idle connections open: health {flood['health_status']} in {flood['health_ms']} ms, "
          f"read p50 {flood['calls']['read']['p50_ms']} ms, write p50 {flood['calls']['write']['p50_ms']} ms")


if __name__ == "__main__":
    main()
