"""Where grades run: one interface, two backends.

``GradeJob`` is one grade (id, task, submission, sim, hidden). A ``Backend`` grades jobs
somewhere else and hands back each job's report:

* ``submit(job) -> concurrent.futures.Future`` -- thread-safe; the future's result is the report
  (``run_job``'s dict). It never raises for a grade: a grader exception, a worker that died more
  than ``max_attempts`` times, a node that could not run the grade all come back as a structured
  ``tool_error`` row carrying ``batch_error`` (not a result: ``grade-batch --resume`` re-runs it).
* ``grade(job) -> dict`` -- ``submit(job).result()``: the blocking call a caller that already has
  its own threads uses (this is how ``cdc-env eval`` grades through a backend; see docs/scale.md).
* ``start() -> list[dict]`` -- checks every machine (``node_check``) and warms it; returns one row
  per node. ``close()`` releases everything.

Backends:

* ``LocalPool(workers)`` -- a process pool on this machine. Each worker process lives for the
  whole run, so its imports (pyslang, the gate), its lru-caches and the Verilator runtime (built
  once into the cache by ``warm``) stay warm. A worker that dies (killed, out of memory) breaks
  the pool: the pool is rebuilt and every grade that was in flight is submitted again, at most
  ``max_attempts`` times per grade; a grade is recorded once, by whoever consumes the future.
* ``RayBackend(address)`` -- an existing Ray cluster (``"auto"``, ``"ray://host:10001"``,
  ``"host:6379"``), or a local one when ``address`` is ``"local"``. One Ray task per grade
  (``num_cpus=1``), retried by Ray when its worker or node dies (``max_retries``). The task grades
  in a lean child process of its Ray worker (``LeanGrader``), not in the Ray worker itself. The package and
  its task data are shipped to every node through Ray's runtime environment (``py_modules``: a
  staged copy of ``cdc_env`` with ``_data/`` bundled), so every node grades with the driver's own
  code and task files, not whatever is installed there. At start one check task is pinned to
  each alive node: iverilog, bubblewrap (that it runs), the Verilator runtime cache (built if
  missing, for runs that may use Verilator) and the fingerprints of the task files. A node that
  fails is reported and never used: grades are then pinned to the nodes that passed.

Ray is imported only by ``RayBackend`` (the ``cdc_env[ray]`` extra); the core never imports it.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .errors import CdcError


def sims() -> tuple[str, ...]:
    """The simulator names a job may ask for: every registered backend, and "auto"."""
    from .sim import names  # noqa: PLC0415

    return (*names(), "auto")


@dataclass(frozen=True)
class GradeJob:
    """One grade. ``id`` is the caller's key (a string or an int), echoed in the result."""

    id: str | int
    task: str
    submission: str
    sim: str = "icarus"
    hidden: int | str = "all"
    jobs: int = 1  # seed processes in parallel inside this grade (the batch parallelises across grades)
    gate: bool = True  # the static gate (eval grades a gate-refused submission again with it off)


def error_row(job: GradeJob, reason: str) -> dict:
    """A grade that could not be made (not a verdict on the submission): tool_error + batch_error."""
    return {"id": job.id, "task": job.task, "verdict": "tool_error", "reward": 0, "failed_stage": None,
            "overfit": False, "reason": reason[:2000], "stages": [], "findings": [], "seeds": {},
            "cpu_s": 0.0, "wall_s": 0.0, "batch_error": True}


def thread_cpu() -> dict[int, float]:
    """CPU seconds of each live thread of this process (Linux ``/proc/self/task``; empty elsewhere)."""
    out: dict[int, float] = {}
    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return out
    for t in tasks:
        try:
            out[int(t.name)] = int((t / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
    return out


def foreign_cpu(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU that threads alive before and after a grade, other than the grading thread, used
    meanwhile: not the grade's (Ray's io and polling threads in a Ray worker, the pool's feeder).
    The grade's own seed threads are born and joined inside the grade, so they are not among them."""
    me = threading.get_native_id()
    return sum(after[t] - before[t] for t in before.keys() & after.keys() if t != me and after[t] > before[t])


def run_job(job: GradeJob) -> dict:
    """Grade ``job`` in this process; the report with ``id`` first. Never raises.

    ``cpu_s`` is the grade's own CPU, measured the same way wherever it runs: ``grade`` counts the
    process's CPU while it ran plus its tool runs (their cgroups), and the CPU of the threads that
    are not the grade's -- a Ray worker's own threads, measured per thread -- is taken out of it."""
    try:
        from .grade import GradeOptions, grade
        from .task import load_task

        before = thread_cpu()
        report = grade(load_task(job.task), job.submission,
                       GradeOptions(sim=job.sim, hidden=job.hidden, jobs=job.jobs, gate=job.gate))
        other = foreign_cpu(before, thread_cpu())
        if other and isinstance(report.get("cpu_s"), (int, float)):
            report["cpu_s"] = round(max(0.0, report["cpu_s"] - other), 3)
    except Exception as exc:  # a grader bug must not take the batch down; it is recorded
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return error_row(job, f"the grader raised {tb}")
    return {"id": job.id, **report}


def data_fingerprint() -> str:
    """SHA-256 over the task data a grade depends on (tasks, trusted HDL and runners)."""
    from . import paths

    h = hashlib.sha256()
    for top in (paths.tasks_dir(), paths.trusted_dir()):
        for p in sorted(top.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(str(p.relative_to(top.parent)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def warm(sim: str) -> dict:
    """Import the grader and, for a run that may use Verilator, build or load its cached runtime."""
    from . import grade as _grade  # noqa: F401 -- the import is the warming
    from .gate import run_gate  # noqa: F401

    out: dict = {}
    if sim in ("verilator", "auto"):  # the Verilator runtime library, built once per version
        from .sim.verilator import runtime

        t0 = time.process_time()
        rt = runtime()
        out["verilator_runtime"] = str(rt.dir)
        out["verilator_runtime_built_cpu_s"] = round(rt.built_cpu_s + time.process_time() - t0, 3)
    return out


def node_check(sim: str = "icarus") -> dict:
    """Can this machine grade? iverilog, a working bubblewrap, the Verilator runtime (when ``sim``
    may use Verilator), and the task data's fingerprint. ``ok`` is False with ``problems`` if not."""
    from ._version import __version__
    from .sim.proc import bwrap_path

    problems: list[str] = []
    row: dict = {"host": platform.node(), "pid": os.getpid(), "cdc_env_version": __version__,
                 "python": platform.python_version(), "package": str(Path(__file__).resolve().parent)}
    if shutil.which("iverilog") is None or shutil.which("vvp") is None:
        problems.append("iverilog/vvp not on PATH")
    bwrap = bwrap_path()
    if bwrap is None:
        problems.append("bubblewrap (bwrap) not on PATH")
    else:
        try:
            proc = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--", "/bin/true"],
                                  capture_output=True, timeout=30)
            if proc.returncode != 0:
                problems.append("bubblewrap cannot run here: "
                                + proc.stderr.decode("utf-8", "replace").strip()[:200])
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"bubblewrap cannot run here: {exc}")
    try:
        row.update(warm(sim))
    except Exception as exc:
        problems.append(f"warming the grader failed: {str(exc).splitlines()[0][:300]}")
    try:
        row["data_sha256"] = data_fingerprint()
    except OSError as exc:
        problems.append(f"task data unreadable: {exc}")
    row["ok"] = not problems
    row["problems"] = problems
    return row


class Backend:
    """The interface; see the module docstring."""

    name = "backend"
    slots = 1  # how many grades it runs at once (the batch keeps about twice that in flight)

    def start(self) -> list[dict]:
        raise NotImplementedError

    def submit(self, job: GradeJob) -> cf.Future:
        raise NotImplementedError

    def grade(self, job: GradeJob) -> dict:
        return self.submit(job).result()

    def close(self) -> None:
        pass

    def info(self) -> dict:
        return {"backend": self.name, "slots": self.slots}

    def __enter__(self) -> Backend:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------- local process pool

def _pool_init(sim: str, owner: int = 0) -> None:
    if owner:
        _die_with_owner(owner)
    try:
        warm(sim)
    except Exception:  # reported by start()'s node check; a grade will say tool_error itself
        pass


def _die_with_owner(owner: int) -> None:
    """A pool worker ends when the process that made the pool (``owner``, e.g. grade-batch) ends,
    however it ends (SIGKILL included), and takes the forkserver, its parent, with it: the kernel
    signals the worker when the forkserver dies (PR_SET_PDEATHSIG), and a thread waits on a pidfd
    of the owner (exact: no pid reuse) and then kills the forkserver and exits. Without this, a
    killed grade-batch left its forkserver and every worker running."""
    import ctypes  # noqa: PLC0415
    import select  # noqa: PLC0415
    import signal  # noqa: PLC0415

    server = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    try:
        fd = os.pidfd_open(owner)
    except (OSError, AttributeError):  # the owner is already gone (or no pidfd here)
        fd = None
        if not _alive(owner):
            os._exit(1)
    if fd is None or os.getppid() != server:
        return

    def watch() -> None:
        select.select([fd], [], [])
        if os.getppid() == server:
            with contextlib.suppress(OSError):
                os.kill(server, signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="cdc-owner-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalPool(Backend):
    """A pool of long-lived worker processes on this machine."""

    name = "pool"

    def __init__(self, workers: int, sim: str = "icarus", max_attempts: int = 3) -> None:
        if workers < 1:
            raise CdcError("--workers must be 1 or more")
        self.slots, self.sim, self.max_attempts = workers, sim, max_attempts
        self._lock = threading.Lock()
        self._pool: cf.ProcessPoolExecutor | None = None
        self._generation = 0
        self.restarts = 0
        self.nodes: list[dict] = []

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        # forkserver: workers never inherit the caller's threads or open files
        ctx = multiprocessing.get_context("forkserver")
        return cf.ProcessPoolExecutor(self.slots, mp_context=ctx, initializer=_pool_init,
                                      initargs=(self.sim, os.getpid()))

    def start(self) -> list[dict]:
        with self._lock:
            if self._pool is None:
                self._pool = self._new_pool()
        for attempt in range(1, self.max_attempts + 1):
            generation = self._generation
            try:
                self.nodes = [self._pool.submit(node_check, self.sim).result()]
                break
            except cf.process.BrokenProcessPool:
                self._restart(generation)
                if attempt == self.max_attempts:
                    raise CdcError("the worker pool keeps dying while it starts") from None
        return self.nodes

    def _restart(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation or self._pool is None:
                return  # someone else already rebuilt it
            old = self._pool
            self._pool = self._new_pool()
            self._generation += 1
            self.restarts += 1
        old.shutdown(wait=False, cancel_futures=True)

    def _dispatch(self, job: GradeJob, out: cf.Future, attempt: int) -> None:
        with self._lock:
            pool, generation = self._pool, self._generation
        if pool is None:
            out.set_result(error_row(job, "the pool is closed"))
            return
        try:
            fut = pool.submit(run_job, job)
        except (cf.process.BrokenProcessPool, RuntimeError):
            self._restart(generation)
            self._dispatch(job, out, attempt) if attempt < self.max_attempts else out.set_result(
                error_row(job, "the worker pool kept breaking"))
            return

        def done(f: cf.Future) -> None:
            exc = f.exception()
            if exc is None:
                out.set_result(f.result())
                return
            if isinstance(exc, cf.process.BrokenProcessPool) or isinstance(exc, cf.CancelledError):
                self._restart(generation)
                if attempt < self.max_attempts:
                    self._dispatch(job, out, attempt + 1)
                else:
                    out.set_result(error_row(job, f"a worker died while grading it, {attempt} times"))
                return
            out.set_result(error_row(job, f"the worker failed: {exc!r}"))

        fut.add_done_callback(done)

    def submit(self, job: GradeJob) -> cf.Future:
        out: cf.Future = cf.Future()
        self._dispatch(job, out, 1)
        return out

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def info(self) -> dict:
        return {**super().info(), "workers": self.slots, "restarts": self.restarts}


# ---------------------------------------------------------------------- Ray

def stage_package(dest: Path) -> Path:
    """A copy of the ``cdc_env`` package with its run-time data bundled under ``_data/`` (the wheel's
    layout, see paths.py): what Ray ships to every node. Returns the package folder."""
    from . import paths

    src = Path(__file__).resolve().parent
    pkg = dest / "cdc_env"
    shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_data"))
    data = paths.data_root()
    for name in ("tasks", "trusted", "agents", "tools", "fixtures", "catalogues"):
        if (data / name).is_dir():
            shutil.copytree(data / name, pkg / "_data" / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return pkg


def ray_runtime_env(folder: Path) -> dict:
    """The job-level Ray runtime environment that ships this package (code and task data, staged
    into ``folder``) to every node: Ray uploads it once and each node unpacks it in front of its
    own ``sys.path``."""
    return {"py_modules": [str(stage_package(folder))]}


# ---------------------------------------------------------------------- a lean grading process

class LeanGrader:
    """One child process that grades jobs sent to it (JSON lines on its stdin and stdout).

    A grade starts ~20 processes (the gate's forked analysis, the build, one per seed), each with
    ``fork`` (a ``preexec_fn`` joins the tool run's cgroup and sets its limits). Forking costs in
    proportion to the parent's memory map: from a Ray worker -- Ray's core worker, its threads, the
    object store mapped in -- it cost about 45 ms of CPU more per grade than from a pool worker
    (+13% per grade at hidden=8, measured). So a Ray task does not grade in the Ray worker: it hands
    the job to this child, a plain Python process started once per Ray worker, which stays warm
    like a pool worker. A child that dies is started again; the job is retried ``attempts`` times.
    """

    def __init__(self, attempts: int = 2) -> None:
        self.attempts = attempts
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        root = str(Path(__file__).resolve().parent.parent)  # the shipped copy on a Ray node
        path = [root, *filter(None, [os.environ.get("PYTHONPATH")])]
        code = "from cdc_env.backends import serve_jobs; serve_jobs()"
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(path)})

    def grade(self, job: GradeJob) -> dict:
        with self._lock:
            for _ in range(self.attempts):
                if self._proc is None or self._proc.poll() is not None:
                    self._proc = self._start()
                try:
                    self._proc.stdin.write(json.dumps(asdict(job)).encode() + b"\n")
                    self._proc.stdin.flush()
                    line = self._proc.stdout.readline()
                except OSError:
                    line = b""
                if line:
                    return json.loads(line)
                self.close()
            return error_row(job, f"the grading process died while grading it, {self.attempts} times")

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()


def serve_jobs() -> None:
    """The lean grader's loop: a GradeJob as JSON per line in, its report as JSON per line out."""
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the reply channel
    for line in sys.stdin.buffer:
        out.write(json.dumps(run_job(GradeJob(**json.loads(line)))).encode() + b"\n")
        out.flush()


_LEAN: LeanGrader | None = None


def run_job_lean(job: GradeJob) -> dict:
    """``run_job`` in this process's lean grading child (what a Ray task runs; see ``LeanGrader``)."""
    global _LEAN
    if _LEAN is None:
        _LEAN = LeanGrader()
    return _LEAN.grade(job)


# A cluster started for the run (``--ray local``) starts no idle workers: a job that ships the
# package runs in workers made with its runtime environment, so the ones Ray prestarts without it
# would only import Ray, idle and poll (about 1 CPU-s each at start); and no metrics are collected
# (nobody reads them; a periodic export in every process).
LOCAL_SYSTEM_CONFIG = {"enable_worker_prestart": False, "prestart_worker_first_driver": False,
                       "enable_metrics_collection": False}


class RayBackend(Backend):
    """One Ray task per grade on an existing cluster (or a local one for ``address="local"``)."""

    name = "ray"

    def __init__(self, address: str = "auto", sim: str = "icarus", ship: bool = True,
                 max_retries: int = 3, check_timeout_s: float = 900.0,
                 init_kwargs: dict | None = None, lean: bool = True) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise CdcError("--ray needs Ray: pip install 'cdc_env[ray]'") from None
        self.address, self.sim, self.ship, self.lean = address, sim, ship, lean
        self.max_retries, self.check_timeout_s = max_retries, check_timeout_s
        self.init_kwargs = init_kwargs or {}
        self._tmp: str | None = None
        self._started_ray = False
        self._good: list[str] = []
        self._pin = False
        self._rr = 0
        self._lock = threading.Lock()
        self.nodes: list[dict] = []

    def start(self) -> list[dict]:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if ray.is_initialized():
            if self.ship:
                raise CdcError("Ray is already initialised by the caller, so the package cannot be "
                               "shipped: pass runtime_env=ray_runtime_env(folder) to ray.init, or ship=False")
        else:
            kwargs = dict(self.init_kwargs)
            env = dict(kwargs.pop("runtime_env", None) or {})
            if self.ship:
                self._tmp = tempfile.mkdtemp(prefix="cdc-ray-pkg-")
                shipped = ray_runtime_env(Path(self._tmp))["py_modules"]
                env["py_modules"] = [*env.get("py_modules", []), *shipped]
            try:
                if self.address == "local":
                    kwargs["_system_config"] = {**LOCAL_SYSTEM_CONFIG, **kwargs.get("_system_config", {})}
                    ray.init(include_dashboard=False, log_to_driver=False, runtime_env=env, **kwargs)
                else:
                    ray.init(address=self.address, log_to_driver=False, runtime_env=env, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                self.close()
                raise CdcError(f"cannot join the Ray cluster at {self.address}: "
                               f"{str(exc).splitlines()[0]}") from None
            self._started_ray = True
        self._check = ray.remote(num_cpus=1, max_retries=0)(node_check)  # warms a grading worker
        self._remote = ray.remote(num_cpus=1, max_retries=self.max_retries,
                                  retry_exceptions=False)(run_job_lean if self.lean else run_job)
        want = data_fingerprint()
        alive = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
        refs = {n["NodeID"]: self._check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(self.sim) for n in alive}
        rows = []
        for node in alive:
            nid = node["NodeID"]
            try:
                row = ray.get(refs[nid], timeout=self.check_timeout_s)
            except Exception as exc:
                row = {"ok": False, "problems": [f"the check did not finish: {str(exc).splitlines()[0]}"]}
            if row.get("ok") and row.get("data_sha256") != want:
                row["ok"] = False
                row.setdefault("problems", []).append("its task data differ from the driver's")
            rows.append({"node_id": nid, "address": node.get("NodeManagerAddress"),
                         "cpus": node.get("Resources", {}).get("CPU", 0), **row})
        self.nodes = rows
        self._good = [r["node_id"] for r in rows if r["ok"]]
        if not self._good:
            self.close()
            raise CdcError("no Ray node can grade: " + "; ".join(
                f"{r.get('address')}: {', '.join(r['problems'])}" for r in rows) if rows
                else "the Ray cluster has no alive node with CPUs")
        self._pin = len(self._good) < len(rows)  # pin grades only when some node must be avoided
        self.slots = max(1, int(sum(r["cpus"] for r in rows if r["ok"])))
        return rows

    def submit(self, job: GradeJob) -> cf.Future:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        fn = self._remote
        if self._pin:
            with self._lock:
                node = self._good[self._rr % len(self._good)]
                self._rr += 1
            fn = fn.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
        ref_future = fn.remote(job).future()
        out: cf.Future = cf.Future()

        def done(f: cf.Future) -> None:
            exc = f.exception()
            out.set_result(f.result() if exc is None else
                           error_row(job, f"Ray could not run the grade ({type(exc).__name__}: "
                                          f"{str(exc).splitlines()[0] if str(exc) else ''})"))

        ref_future.add_done_callback(done)
        return out

    def close(self) -> None:
        import ray

        if self._started_ray and ray.is_initialized():
            ray.shutdown()
            self._started_ray = False
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def info(self) -> dict:
        return {**super().info(), "address": self.address, "shipped_package": self.ship,
                "pinned_to_good_nodes": self._pin}


def make_backend(*, workers: int | None = None, ray: str | None = None, sim: str = "icarus",
                 ship: bool = True, quiet: bool = False) -> Backend:
    """The backend a command line asked for: ``ray`` (an address, ``auto`` or ``local``) or a local
    pool of ``workers`` processes (default: one per CPU). ``quiet`` keeps Ray's INFO lines (cluster
    start, dashboard) off stderr."""
    if ray:
        import logging  # noqa: PLC0415

        return RayBackend(ray, sim=sim, ship=ship,
                          init_kwargs={"logging_level": logging.WARNING} if quiet else None)
    return LocalPool(workers or os.cpu_count() or 1, sim=sim)


def job_dict(job: GradeJob) -> dict:
    return asdict(job)


def grade_function(backend: Backend) -> Callable[..., dict]:
    """A drop-in for ``cdc_env.grade`` that grades on ``backend`` (started by the caller): the same
    arguments ``(task, submission, options, **keywords)``, of whose ``GradeOptions`` a backend takes ``sim``,
    ``hidden`` and ``gate`` (the others must be their defaults: a backend always grades under
    bubblewrap, with the default limits, batching and no test-only switch); returns the report.
    Thread-safe, blocking: each calling thread waits for its own grade while the backend runs many
    at once. A grade that could not be made comes back as a ``tool_error`` report with ``batch_error``."""
    from .grade import GradeOptions, options_from  # noqa: PLC0415 -- the grader loads where a grade runs

    carried = ("sim", "hidden", "gate")

    def grade_on_backend(task: object, submission: str | bytes, options: GradeOptions | None = None,
                         **keywords: Any) -> dict:
        opts = options_from(options, keywords)
        other = [f.name for f in fields(GradeOptions) if f.name not in carried
                 and getattr(opts, f.name) != getattr(GradeOptions(), f.name)]
        if other == ["sandbox"]:
            raise CdcError("a backend always grades under bubblewrap; sandbox=False grades in-process only")
        if other:
            raise CdcError(f"a backend carries only {', '.join(carried)} of a grade's options, "
                           f"not {other[0]}")
        tid = task if isinstance(task, str) else task.id  # type: ignore[attr-defined]
        text = submission.decode("utf-8", "replace") if isinstance(submission, bytes) else submission
        row = backend.grade(GradeJob(id=0, task=tid, submission=text, sim=opts.sim, hidden=opts.hidden or 0,
                                     gate=opts.gate))
        row.pop("id", None)
        return row

    return grade_on_backend
