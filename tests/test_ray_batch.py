"""grade-batch on a real local Ray cluster (``ray.init(num_cpus=2)``, started by the backend):
the same verdicts and trace hashes as the local pool, a killed worker loses no result, a node that
cannot grade is reported and not used. Skipped when Ray is not installed (``cdc_env[ray]``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed (pip install 'cdc_env[ray]')")
if shutil.which("iverilog") is None or shutil.which("bwrap") is None:
    pytest.skip("iverilog and bubblewrap are needed on the Ray node", allow_module_level=True)

from cdc_env.backends import LocalPool, RayBackend  # noqa: E402
from cdc_env.batch import BatchRun, compare_results, load_results, run_batch  # noqa: E402
from cdc_env.errors import CdcError  # noqa: E402
from cdc_env.fixtures import load_fixtures  # noqa: E402
from cdc_env.task import load_task  # noqa: E402

INIT = {"num_cpus": 2, "object_store_memory": 100 << 20}


def predictions(path: Path) -> dict[str, str]:
    """Eight lines: fixes, defects, a registry hack per stage that needs no hidden seeds."""
    rows: list[tuple[dict, str]] = []
    for tid in ("handshake", "event", "fifo_01"):
        t = load_task(tid)
        rows.append(({"id": f"fix-{tid}", "task": tid, "submission": t.reference_text}, "pass"))
        rows.append(({"id": f"defect-{tid}", "task": tid, "submission": t.defective_text}, "fail"))
    fx = load_fixtures()
    for stage in ("allowlist", "gate"):
        f = next(f for f in fx if f.kind == "hack" and f.stage == stage)
        rows.append(({"id": f.name, "task": f.task, "submission": f.submission().decode()}, f.expect))
    path.write_text("".join(json.dumps(r) + "\n" for r, _ in rows))
    return {r["id"]: v for r, v in rows}


def ray_worker_pids() -> list[int]:
    """Ray workers that are running a grade right now (Ray titles them ``ray::run_job``)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(b"ray::run_job"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def test_ray_matches_pool_verdicts_and_trace_hashes(tmp_path):
    pred = tmp_path / "p.jsonl"
    expect = predictions(pred)
    pool = run_batch(BatchRun(pred, tmp_path / "pool", hidden=8, progress=False), LocalPool(2))
    ray_backend = RayBackend("local", init_kwargs=INIT)
    ray = run_batch(BatchRun(pred, tmp_path / "ray", hidden=8, progress=False), ray_backend)
    assert compare_results(tmp_path / "pool", tmp_path / "ray") == []
    rows = load_results(tmp_path / "ray" / "results.jsonl")
    assert {k: r["verdict"] for k, r in rows.items()} == expect
    hashes = [s["hash"] for r in rows.values() for st in r["seeds"].values() for s in st["results"]]
    assert len(hashes) > 40 and all(hashes)
    assert ray["backend"]["backend"] == "ray" and ray["nodes"] and all(n["ok"] for n in ray["nodes"])
    assert pool["by_verdict"] == ray["by_verdict"]
    assert ray_backend.nodes[0]["data_sha256"]  # the node's task data matched the driver's


def test_killed_ray_worker_loses_no_result(tmp_path):
    fifo = load_task("fifo_01")
    pred = tmp_path / "p.jsonl"
    ids = [f"f{i}" for i in range(6)]
    pred.write_text("".join(json.dumps({"id": i, "task": "fifo_01", "submission": fifo.reference_text
                                        + f"// {i}\n"}) + "\n" for i in ids))
    killed: list[int] = []
    stop = threading.Event()

    def killer() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed and not stop.is_set():
            pids = ray_worker_pids()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.05)

    t = threading.Thread(target=killer)
    t.start()
    try:
        s = run_batch(BatchRun(pred, tmp_path / "out", hidden=8, progress=False),
                      RayBackend("local", init_kwargs=INIT))
    finally:
        stop.set()
        t.join()
    assert killed, "no Ray worker was seen running a grade"
    got = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in got) == ids  # every grade recorded, once
    assert all(r["verdict"] == "pass" and not r.get("batch_error") for r in got)
    assert s["graded"] == 6 and s["not_graded"] == 0


def test_node_without_tools_is_reported_not_used(tmp_path):
    # A node whose PATH has every program of this one except Icarus.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        for p in Path(d).glob("*") if Path(d).is_dir() else ():
            if p.name not in ("iverilog", "vvp") and not (bin_dir / p.name).exists():
                (bin_dir / p.name).symlink_to(p)
    backend = RayBackend("local", init_kwargs={**INIT, "runtime_env": {"env_vars": {"PATH": str(bin_dir)}}})
    with pytest.raises(CdcError, match="no Ray node can grade: .*iverilog"):
        backend.start()
    import ray

    assert not ray.is_initialized()
