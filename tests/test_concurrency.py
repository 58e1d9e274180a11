"""Grades running side by side: threads of one process (fixtures replay, grade-batch's pool, the
HTTP server) and processes sharing one cache ($CDC_ENV_CACHE). A grade's result must not depend
on what runs next to it.

* A model handed out by the Verilator model cache must be executable at once, whatever another
  thread of the grading process forks meanwhile (the gate forks its analysis): a file the grading
  process holds open for writing is inherited by every child forked in that instant, and Linux
  refuses to exec a file open for writing anywhere (ETXTBSY; the seed runner reported it as
  "exit status 127" and the seed failed -- a wrong verdict under load).
* Processes that put, get and evict model-cache entries at the same time never hand out a torn
  entry and never leave one that blocks the key for good.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from cdc_env.sim import verilator
from cdc_env.sim.seeds import plan_seed, visible_seeds
from cdc_env.sim.stage import run_seeds
from cdc_env.task import load_task

from .test_verilator import needs_verilator, vl_cache  # noqa: F401 -- the fixture is used by name


def _handshake_design() -> tuple[object, dict[str, str]]:
    task = load_task("handshake")
    return task, {task.editable: task.reference_text, **{r: task.text(r) for r in task.sources}}


@needs_verilator
def test_a_fork_while_a_cached_model_is_handed_out_cannot_fail_its_seeds(vl_cache, tmp_path, monkeypatch):  # noqa: F811
    """The interleaving of the red-team's "exit status 127", injected: every time the grading
    process copies file data (os.sendfile, what shutil's copies use) another "thread" forks a
    child that lives on (as the gate's analysis does). The seeds of the cache hit must still run."""
    task, design = _handshake_design()
    sim = verilator.Verilator()
    assert sim.build(task, design, tmp_path / "a").status == "pass"  # the cache holds the model now
    children: list[int] = []
    real_sendfile = os.sendfile

    def forking_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        pid = os.fork()
        if pid == 0:  # holds every descriptor the parent had open at this instant
            time.sleep(5.0)
            os._exit(0)
        children.append(pid)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", forking_sendfile)
    try:
        build = sim.build(task, design, tmp_path / "b")
        assert build.status == "pass" and build.extra["model_cache"] == "hit"
        assert children, "the injection never fired: the test would prove nothing"
        # as a grade runs them: the stage's trusted runner (an exec failure there was "exit status
        # 127", a failing seed), then one seed in a sandbox of its own (bwrap's exec: a tool_error)
        for r in run_seeds(sim, build, task, visible_seeds(task), settle=True):
            assert r.status == "pass", f"seed {r.seed}: {r.reason}"
        r = sim.run_seed(build, plan_seed(task, visible_seeds(task)[0]), settle=True)
        assert r.status == "pass", r.reason
    finally:
        monkeypatch.undo()
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


_WORKER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from cdc_env.sim import verilator
    verilator._model_cache = lambda: Path(sys.argv[1])
    role, n, keys = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    work = Path(sys.argv[1]).parent / f"work-{os.getpid()}"
    work.mkdir()
    bad = 0
    for i in range(n):
        key = keys[i % len(keys)]
        if role == "put":
            data = key.encode() * 50000
            (work / "Vtb").write_bytes(data)
            (work / verilator.HAZARDS_FILE).write_text("[]")
            verilator._cache_put(key, work, "log of " + key)
        elif role == "evict":
            verilator._cache_evict(Path(sys.argv[1]), limit=0)
        else:
            for f in ("Vtb", verilator.HAZARDS_FILE):
                (work / f).unlink(missing_ok=True)
            log = verilator._cache_get(key, work)
            if log is not None:
                if (log != "log of " + key or (work / "Vtb").read_bytes() != key.encode() * 50000
                        or (work / verilator.HAZARDS_FILE).read_text() != "[]"):
                    bad += 1
    print("BAD", bad)
""")


def test_processes_putting_getting_and_evicting_one_cache_never_see_a_torn_entry(tmp_path, monkeypatch):
    """Real processes on one shared model cache: two put, two get, one evicts everything it can
    (a bound of 0), all at once. A hit always hands out a whole entry, and afterwards every key is
    either whole or absent and can be stored again."""
    models = tmp_path / "verilator-models"
    keys = [f"{i:064x}" for i in range(4)]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    roles = ["put", "put", "get", "get", "evict"]
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(models), role, "150", *keys], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for role in roles]
    outs = [p.communicate(timeout=300) for p in procs]
    for (out, err), p in zip(outs, procs, strict=True):
        assert p.returncode == 0, err[-2000:]
        assert out.strip() == "BAD 0", out
    monkeypatch.setattr(verilator, "_model_cache", lambda: models)
    assert {e.name for e in models.iterdir()} <= set(keys)  # no scratch left behind
    for key in keys:
        log = _get(tmp_path, key)
        assert log in (None, "log of " + key)
        if log is None:
            _put(tmp_path, key, "again")
            assert _get(tmp_path, key) == "again"


def test_a_half_evicted_entry_does_not_block_its_key(tmp_path, monkeypatch):
    """An evictor killed inside its rmtree leaves part of an entry (with or without its mark).
    Such an entry is never handed out, and the next put of its key replaces it."""
    models = tmp_path / "verilator-models"
    monkeypatch.setattr(verilator, "_model_cache", lambda: models)
    for key, left in (("a" * 64, ("ok", "log")), ("b" * 64, ("Vtb", verilator.HAZARDS_FILE))):
        (models / key).mkdir(parents=True)
        for name in left:
            (models / key / name).write_text("")
        assert _get(tmp_path, key) is None
        _put(tmp_path, key, "stored again")
        assert _get(tmp_path, key) == "stored again"


def _put(tmp_path: Path, key: str, log: str) -> None:
    work = tmp_path / "put"
    work.mkdir(exist_ok=True)
    (work / "Vtb").write_bytes(b"model of " + key.encode())
    (work / verilator.HAZARDS_FILE).write_text("[]")
    verilator._cache_put(key, work, log)


def _get(tmp_path: Path, key: str) -> str | None:
    out = tmp_path / "get"
    out.mkdir(exist_ok=True)
    for f in out.iterdir():
        f.unlink()
    log = verilator._cache_get(key, out)
    if log is not None:
        assert (out / "Vtb").is_file() and (out / verilator.HAZARDS_FILE).read_text() == "[]"
    return log


_RW = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from cdc_env import paths
    path, role, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    bad = 0
    for i in range(n):
        if role == "write":
            doc = json.dumps({"i": i, "pad": "x" * (1 << 20)})
            paths.write_atomic(path, doc) if sys.argv[4] == "atomic" else path.write_text(doc)
        else:
            try:
                json.loads(path.read_text())
            except FileNotFoundError:
                pass
            except ValueError:
                bad += 1
    print("BAD", bad)
""")


def _race(path: Path, how: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    procs = [subprocess.Popen([sys.executable, "-c", _RW, str(path), role, n, how], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for role, n in (("write", "60"), ("read", "400"), ("read", "400"))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-500:] for _, e in outs]
    return [o.strip() for o, _ in outs[1:]]


def test_a_file_rewritten_in_the_shared_cache_is_never_read_half_written(tmp_path):
    """Certificates and measured cost models are rewritten while other processes read them:
    paths.write_atomic (a scratch name, then a rename) never lets a reader see a torn file.
    The same race with a plain write_text shows why (when the scheduler lets it show: not
    asserted)."""
    assert _race(tmp_path / "cert.json", "atomic") == ["BAD 0", "BAD 0"]
    assert not [p for p in tmp_path.iterdir() if p.name != "cert.json"]  # no scratch left


def test_eviction_deletes_scratch_a_dead_process_left_and_keeps_scratch_in_use(tmp_path):
    """A ``put-`` or ``del-`` folder older than SCRATCH_STALE_S was left by a process that died
    (killed while storing or deleting): eviction deletes it. A younger one may be another
    process's store in progress: kept, and never counted or evicted as an entry."""
    models = tmp_path / "verilator-models"
    old = time.time() - verilator.SCRATCH_STALE_S - 60
    for name, age in (("put-old", old), ("del-old", old), ("put-new", None)):
        (models / name).mkdir(parents=True)
        (models / name / "Vtb").write_bytes(b"x" * 100)
        if age is not None:
            os.utime(models / name, (age, age))
    verilator._cache_evict(models, limit=0)
    assert sorted(p.name for p in models.iterdir()) == ["put-new"]


def _open_descriptors(_job: object) -> dict:
    return {"fds": sorted(int(n) for n in os.listdir("/proc/self/fd"))}


def test_the_gates_analysis_child_holds_no_other_threads_descriptors():
    """The gate's analysis is a fork of the grading process; a copy of another thread's pipe or
    half-copied model held there for seconds kept that pipe from its EOF and the model's exec
    from running (ETXTBSY). The child keeps 0-2 and its own result pipe only."""
    from cdc_env.gate import _in_child

    r, w = os.pipe()  # stands for another thread's descriptors
    try:
        out, _cpu, detail = _in_child(_open_descriptors, None)
    finally:
        os.close(r)
        os.close(w)
    assert out is not None, detail
    extra = [fd for fd in out["fds"] if fd > 2]
    assert r not in extra and w not in extra, out
    assert len(extra) <= 2, out  # the result pipe, and the descriptor listdir itself opened
