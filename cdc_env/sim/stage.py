"""Running the seeds of a build: one seed per process, one sandbox per chunk of a stage, batched
stages, and the one recipe "scratch dir -> build -> run seeds -> clean up" (``scratch_build``,
``build_and_run``) that the grade and every measuring tool (parity, cost, taskgate) use.

Batching (``run_stage_batched``) is used only by a backend with the ``batching`` capability, and
every batch is checked: a batched run, a re-run of a random sample of its seeds in a shuffled order
(a second batch process), and two seeds alone, all drawn by a secure RNG after the batch ran, must
agree (and agree with a certificate where one exists, certs.py). Anything
else -- and any batch that does not complete -- makes every seed run on its own, with the reason.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..task import Task
from .base import (
    SEED_LIMITS,
    BatchIncomplete,
    Build,
    SeedResult,
    Simulator,
    cached_binary,
    new_nonce,
    parse_verdict,
)
from .certs import (
    CertCheck,
    check_certificate,
    first_difference,
    issue_certificate,
    prune_certificates,
)
from .proc import Limits, ProcResult, accounting, carry_cpu, run_bounded
from .seeds import SeedPlan, plan_seed

BATCH_MIN_SEEDS = 24
# The check re-run of a batched stage: this many of its seeds (at least BATCH_MIN_SEEDS, at least a
# tenth of the stage, never more than the stage), drawn by a secure RNG after the batch ran and run
# in a shuffled order in a second batch process (docs/parity.md, "A first grade's batching policy").
CHECK_SAMPLE_MIN = BATCH_MIN_SEEDS
CHECK_SAMPLE_FRACTION = 10  # one seed in ten
Progress = Callable[[str, int, int], None]  # (stage, done, total)


# ---------------------------------------------------------------- one sandbox per stage (issue 15)

RUNNER = "cdc_seed_runner"
# A stage's seeds are split over at most ``jobs`` sandboxes of at least this many seeds each: a
# sandbox costs ~0.035 CPU-s (bubblewrap, the runner, vvp loading the design) whatever it runs, and
# a handshake seed ~0.012, so an 8-seed visible stage runs in one sandbox instead of two
# (measured, session 8: 2 seeds 0.059 CPU-s, 16 seeds 0.218 in one sandbox).
MIN_CHUNK_SEEDS = 8
# One sandbox per chunk of a stage with the trusted runner (the default); "0": one sandbox per
# seed. Every gate-off proof of tests/test_sandbox.py runs under both.
STAGE_ENV = "CDC_ENV_STAGE_SANDBOX"
# "0": no zygote (every seed of a stage sandbox exec'd afresh, as before issue 26)
ZYGOTE_ENV = "CDC_ENV_ZYGOTE"
_RECORD = re.compile(rb"R (\d+) (-?\d+) (\d+) (\d+) ([01]) ([01]) (\d+) (\d+)(?: ([01]))?\n")


def stage_runner(*, sandbox: bool = True) -> Path:
    """The cached trusted seed runner (trusted/stage/cdc_seed_runner.c), built with gcc."""
    src = paths.trusted_source("stage", f"{RUNNER}.c")
    return cached_binary("seed-runner", src, RUNNER, f"gcc -O2 -o {RUNNER} {RUNNER}.c", "1", sandbox=sandbox)


def zygote_on() -> bool:
    """Seeds forked from one simulator process per stage sandbox, where the backend can
    (``Simulator.zygote_argv``), unless ``CDC_ENV_ZYGOTE=0``."""
    return os.environ.get(ZYGOTE_ENV, "1") != "0"


def stage_sandbox_on() -> bool:
    """One sandbox per chunk of a seed stage (default) unless ``CDC_ENV_STAGE_SANDBOX=0``."""
    return os.environ.get(STAGE_ENV, "1") != "0"


def run_seeds_staged(sim: Simulator, build: Build, task: Task, seeds: list[int], *, settle: bool,
                     jobs: int, limits: Limits = SEED_LIMITS, hidden_checks: bool | None = None,
                     progress: Progress | None = None, stage: str = "seeds") -> list[SeedResult]:
    """``seeds`` in at most ``jobs`` sandboxes (contiguous chunks of at least MIN_CHUNK_SEEDS seeds,
    in parallel), one trusted runner each;
    a chunk whose runner failed runs seed by seed in a sandbox per seed. Results in seed order;
    after a time-out a chunk starts no further seed."""
    plans = [plan_seed(task, s, hidden_checks=hidden_checks) for s in seeds]
    k = max(1, min(jobs, len(plans) // MIN_CHUNK_SEEDS))
    size = -(-len(plans) // k)
    chunks = [plans[i:i + size] for i in range(0, len(plans), size)]
    done = 0

    def one(idx_chunk: tuple[int, list[SeedPlan]]) -> list[SeedResult]:
        idx, chunk = idx_chunk
        res = run_stage_sandboxed(sim, build, chunk, settle=settle, limits=limits, tag=f"stage{idx}")
        if res is None:
            res = []
            for plan in chunk:
                res.append(sim.run_seed(build, plan, settle=settle, sandbox=True, limits=limits))
                if res[-1].status == "timeout":
                    break
        return res

    out: list[SeedResult] = []
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        for res in pool.map(carry_cpu(one), enumerate(chunks)):
            out += res
            done += len(res)
            if progress:
                progress(stage, done, len(seeds))
    return out


class _ReportStream:
    """The runner's report, parsed record by record as it arrives: each seed's output is turned
    into its SeedResult at once and dropped, so the grading process holds at most one record
    (a seed's capped stdout and stderr), not a whole chunk's output (hundreds of MiB for a
    printing design). ``bad``: a record did not parse or came out of order (the whole report is
    then not used); ``pending``: bytes of an unfinished record are left (a torn report)."""

    def __init__(self, plans: list[SeedPlan], nonces: list[int], accounting_method: str) -> None:
        self.plans, self.nonces, self.method = plans, nonces, accounting_method
        self.results: list[SeedResult] = []
        self.bad = False
        self._buf = bytearray()

    @property
    def pending(self) -> bool:
        return bool(self._buf)

    def feed(self, chunk: bytes) -> None:
        if self.bad:
            return  # keep draining the pipe (the runner must not block), but use nothing
        self._buf += chunk
        while self._buf and not self.bad:
            m = _RECORD.match(self._buf)
            if m is None:
                # an unfinished header is at most a line of digits; anything else is not a record
                if b"\n" in self._buf[:200] or len(self._buf) >= 200:
                    self.bad = True
                return
            idx, code, cpu_us, rss, tout, flood, lo, le, forked = (int(g or 0) for g in m.groups())
            body = m.end()
            if len(self._buf) < body + lo + le:
                return
            if idx != len(self.results) or idx >= len(self.plans):
                self.bad = True
                return
            out = bytes(self._buf[body:body + lo]).decode("utf-8", "replace")
            err = bytes(self._buf[body + lo:body + lo + le]).decode("utf-8", "replace")
            del self._buf[:body + lo + le]
            seed_proc = ProcResult(code, out, err, cpu_us / 1e6, 0.0, rss, bool(tout), bool(flood),
                                   accounting=self.method)
            self.results.append(parse_verdict(self.plans[idx].seed, seed_proc, self.nonces[idx]))
            self.results[-1].forked = bool(forked)


def run_stage_sandboxed(sim: Simulator, build: Build, plans: list[SeedPlan], *, settle: bool,
                        limits: Limits = SEED_LIMITS, tag: str = "stage") -> list[SeedResult] | None:
    """Run ``plans`` one after another in ONE sandbox, each seed a fresh process started by the
    trusted runner with its own limits, nonce and empty /tmp; per-seed CPU from the runner's
    ``wait4``, the rest of the sandbox's cost (bubblewrap, the runner) spread evenly over the
    seeds so that the stage total is the cgroup's. Returns None when the runner itself failed
    (the caller then runs every seed in its own sandbox). After a time-out no further seed runs.
    """
    try:
        runner = stage_runner()
    except (OSError, RuntimeError):
        return None
    nonces = [new_nonce() for _ in plans]
    lines = [f"limits {limits.cpu_s} {limits.mem_bytes} {limits.file_bytes or limits.out_bytes} "
             f"{int(limits.wall_s * 1000)} {limits.out_bytes}"]
    tb_top = build.extra.get("tb_top", "-")
    zygote = sim.zygote_argv(build) if zygote_on() and len(plans) > 1 else None
    if zygote is not None and not any("\t" in a or "\n" in a or "\x1f" in a for a in zygote[0]):
        lines.append(f"zygote {zygote[1]}\t" + "\x1f".join(zygote[0]))
    for plan, nonce in zip(plans, nonces, strict=True):
        argv = sim.seed_argv(build, plan, settle)
        if any("\t" in a or "\n" in a or "\x1f" in a for a in argv):
            return None
        lines.append(f"{nonce:016x}\t{tb_top}\t" + "\x1f".join(argv))
    n = len(plans)
    # The runner's own RLIMIT_FSIZE must be at least a seed's: a process cannot raise its hard
    # limit, so a smaller one (it was the runner's 64 KiB output cap) became every seed's.
    stage_limits = Limits(wall_s=min(limits.wall_s * n + 30.0, 3600.0), cpu_s=limits.cpu_s * n + 10,
                          mem_bytes=limits.mem_bytes, out_bytes=1 << 16,
                          file_bytes=limits.file_bytes or limits.out_bytes, pids=limits.pids + 4,
                          tmp_bytes=limits.tmp_bytes)
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    report = _ReportStream(plans, nonces, accounting().method)

    def feed() -> None:
        payload = memoryview(("\n".join(lines) + "\n").encode())
        try:
            while payload:
                payload = payload[os.write(job_w, payload):]
        except OSError:
            pass
        finally:
            os.close(job_w)

    def drain() -> None:
        with os.fdopen(res_r, "rb") as f:
            while chunk := f.read1(1 << 16):
                report.feed(chunk)

    threads = [threading.Thread(target=carry_cpu(feed, fresh=True), daemon=True),
               threading.Thread(target=carry_cpu(drain, fresh=True), daemon=True)]
    for t in threads:
        t.start()
    env = {"CDC_STAGE_FD": str(job_r), "CDC_RESULT_FD": str(res_w)}
    try:
        proc = run_bounded([str(runner / RUNNER)], build.workdir, stage_limits, env={**os.environ, **env},
                           sandbox=True, ro_paths=(runner, *sim.seed_ro_paths(build)), sandbox_env=env,
                           tag=tag, pass_fds=(job_r, res_w), writable=False)
    finally:
        os.close(job_r)
        os.close(res_w)
        for t in threads:
            t.join(timeout=30)
    if proc.returncode != 0 or proc.sandbox_error or proc.timed_out or report.bad or report.pending:
        return None
    results = report.results
    if len(results) != n and not (results and results[-1].status == "timeout"):
        return None
    overhead = max(proc.cpu_s - sum(r.cpu_s for r in results), 0.0) / max(len(results), 1)
    for r in results:
        r.cpu_s += overhead
        r.max_rss_kb = max(r.max_rss_kb, proc.max_rss_kb)  # the stage cgroup's peak covers every seed
    return results


def seed_status(results: list[SeedResult]) -> str:
    statuses = {r.status for r in results}
    for s in ("tool_error", "fail", "timeout"):
        if s in statuses:
            return s
    return "pass"


def run_seeds(sim: Simulator, build: Build, task: Task, seeds: list[int], *, settle: bool,
              sandbox: bool = True, jobs: int | None = None, progress: Progress | None = None,
              stage: str = "seeds", limits: Limits = SEED_LIMITS,
              hidden_checks: bool | None = None) -> list[SeedResult]:
    """Run ``seeds`` one process each (in parallel threads); results in the order given.

    hidden_checks: as in ``seeds.plan_seed`` (default: on for hidden seeds only).

    After a seed times out no further seed is started (a design that hangs would otherwise cost
    a time-out per seed); the seeds not run are simply absent from the result.
    """
    jobs = max(1, jobs or os.cpu_count() or 1)
    if sandbox and stage_sandbox_on() and len(seeds) > 1:  # one sandbox per chunk of seeds (issue 15)
        return run_seeds_staged(sim, build, task, seeds, settle=settle, jobs=jobs, limits=limits,
                                hidden_checks=hidden_checks, progress=progress, stage=stage)
    done = 0
    out: list[SeedResult] = []
    stop = threading.Event()

    def one(seed: int) -> SeedResult | None:
        if stop.is_set():
            return None
        res = sim.run_seed(build, plan_seed(task, seed, hidden_checks=hidden_checks), settle=settle,
                           sandbox=sandbox, limits=limits)
        if res.status == "timeout":
            stop.set()
        return res

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for res in pool.map(carry_cpu(one), seeds):
            done += 1
            if res is not None:
                out.append(res)
            if progress:
                progress(stage, done, len(seeds))
    return out


@dataclass
class StageRun:
    results: list[SeedResult]
    mode: str  # "one-at-a-time" | "batched"
    reason: str
    cpu_s: float
    max_rss_kb: int
    policy: str = ""  # the batching policy in force ("" where batching was not considered)


def run_stage(sim: Simulator, build: Build, task: Task, seeds: list[int], *, settle: bool,
              design_text: str, batch: bool = True, sandbox: bool = True, jobs: int | None = None,
              progress: Progress | None = None, stage: str = "seeds",
              limits: Limits = SEED_LIMITS, policy: str = "self-checked") -> StageRun:
    """One seed stage of a grade: batched where the backend can and ``policy`` allows it, else one
    per seed.

    Batching needs a backend with the ``batching`` capability, ``batch`` and a stage of at least
    BATCH_MIN_SEEDS seeds; policy "certified" also needs a valid certificate for the patch, policy
    "self-checked" a design without constructs that could carry state between seeds
    (run_stage_batched). The batch must agree with a shuffled re-run of a random sample of its
    seeds and two seeds run alone. Otherwise -- and whenever any of that fails -- every seed runs
    in its own process. The returned mode, reason and policy go into the report.
    """
    cpu, rss = 0.0, 0
    if not sim.batching:
        reason = f"{sim.name} runs every seed in its own process"
    elif not batch:
        reason = "batching switched off by the caller"
    elif len(seeds) < BATCH_MIN_SEEDS:
        reason = f"stage of {len(seeds)} seeds (batching needs {BATCH_MIN_SEEDS} or more)"
    else:
        results, reason, cpu, rss = run_stage_batched(sim, build, task, design_text, seeds,
                                                      settle=settle, sandbox=sandbox, limits=limits,
                                                      policy=policy)
        if results is not None:
            if progress:
                progress(stage, len(seeds), len(seeds))
            return StageRun(results, "batched", reason, cpu, rss, policy)
        reason += "; every seed ran on its own"
    results = run_seeds(sim, build, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                        progress=progress, stage=stage, limits=limits)
    # Whether the seeds were forked from one process (SeedResult.forked) is not in the reason: it
    # depends on how many seeds a sandbox got, i.e. on the machine's parallelism, and a report
    # must read the same on every backend (tests/test_eval.py compares them).
    return StageRun(results, "one-at-a-time", reason, cpu + sum(r.cpu_s for r in results),
                    max([rss] + [r.max_rss_kb for r in results]), policy)


@contextmanager
def scratch_build(sim: Simulator, task: Task, design: dict[str, str], *, sandbox: bool = True,
                  keep_dir: Path | None = None, prefix: str = "cdc-build-",
                  netlist: bool = False) -> Iterator[Build]:
    """Build ``design`` with ``sim`` in a fresh scratch directory, which is deleted on exit (copied
    to ``keep_dir`` first when given, as evidence). ``netlist``: ``design`` is the gate's netlist
    (``Simulator.build_netlist``)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        build = sim.build_netlist if netlist else sim.build
        yield build(task, design, work, sandbox=sandbox)
    finally:
        if keep_dir is not None:
            shutil.copytree(work, keep_dir, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def build_and_run(sim: Simulator, task: Task, design: dict[str, str], seeds: list[int], *, settle: bool,
                  sandbox: bool = True, jobs: int | None = None, progress: Progress | None = None,
                  stage: str = "seeds", hidden_checks: bool | None = None,
                  prefix: str = "cdc-build-") -> tuple[Build, list[SeedResult]]:
    """Scratch dir -> build -> run ``seeds`` (``run_seeds``) -> clean up: (the build, the results;
    none when the build did not pass)."""
    with scratch_build(sim, task, design, sandbox=sandbox, prefix=prefix) as b:
        if b.status != "pass":
            return b, []
        return b, run_seeds(sim, b, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                            progress=progress, stage=stage, hidden_checks=hidden_checks)


def _batch_refusal(build: Build) -> str:
    """Why this build's seeds may not share a process, from what the build itself can do
    (``verilator.batch_hazards``: random or stateful runtime calls in the generated C++), or ''."""
    hazards = build.extra.get("batch_hazards")
    if hazards is None:
        return "batching refused: the build does not say what it can do (no batch hazard scan)"
    if hazards:
        return (f"batching refused: the build calls {', '.join(hazards[:4])} (state that could pass "
                "between seeds in one process)")
    return ""


def check_sample_size(n: int) -> int:
    """How many of a batched stage's ``n`` seeds its check re-run runs again (shuffled)."""
    return min(n, max(CHECK_SAMPLE_MIN, -(-n // CHECK_SAMPLE_FRACTION)))


def run_stage_batched(sim: Simulator, build: Build, task: Task, design_text: str,
                      seeds: list[int], *, settle: bool, sandbox: bool = True,
                      cert: CertCheck | None = None, rng: secrets.SystemRandom | None = None,
                      limits: Limits = SEED_LIMITS, policy: str = "certified",
                      ) -> tuple[list[SeedResult] | None, str, float, int]:
    """Batched run + a shuffled re-run of a random sample + two seeds alone, checked against each
    other (and a certificate).

    The sample (``check_sample_size`` seeds), its order and the two lone seeds are drawn with
    ``rng`` (a ``secrets.SystemRandom``) only after the batched run has completed, so nothing the
    batch ran could depend on them.

    ``policy`` "certified": only under a valid certificate, and the results must equal it.
    "self-checked": a valid certificate is checked against where there is one; without one the
    stage still batches, unless the sandbox is off (a batch's scratch is then not private), and on
    agreement a certificate with basis "self-checked" is issued. Under either policy a build that
    can carry state between seeds in one process (``_batch_refusal``) never batches.
    Returns (results or None when the batch must not be trusted, reason, CPU spent, peak RSS).
    """
    cert = cert or check_certificate(task, design_text, seeds, settle=settle)
    if policy == "certified" and not cert.ok:
        return None, cert.reason, 0.0, 0
    if policy == "certified" and cert.basis != "parity":  # the old rule: Icarus must have agreed
        return None, (f"the certificate is {cert.basis}, and the certified policy needs one from "
                      "parity --certify or cost"), 0.0, 0
    refused = _batch_refusal(build)
    if refused:
        return None, refused, 0.0, 0
    if policy == "self-checked" and not cert.ok:
        if not sandbox:
            return None, "self-checked batching needs the sandbox (each batch's private /tmp)", 0.0, 0
    plans = [plan_seed(task, s) for s in seeds]
    cpu, rss = 0.0, 0
    # A whole batch runs under the limits of one seed alone: no seed can use more time, memory,
    # processes or output in a batch than it may alone (a batch that needs more is incomplete,
    # and every seed then runs alone under its own limits).
    try:
        fwd = sim.run_batch(build, plans, settle=settle, sandbox=sandbox, tag="batch", limits=limits)
        cpu, rss = cpu + fwd.cpu_s, max(rss, fwd.max_rss_kb)
        # Drawn only now, after the batch ran: a sample of the seeds in a random order (rng.sample
        # returns them shuffled), re-run as a batch of their own.
        rng = rng or secrets.SystemRandom()
        order = rng.sample(range(len(plans)), check_sample_size(len(plans)))
        again = sim.run_batch(build, [plans[i] for i in order], settle=settle, sandbox=sandbox,
                              tag="batch-check", limits=limits)
        cpu, rss = cpu + again.cpu_s, max(rss, again.max_rss_kb)
    except BatchIncomplete as exc:
        proc = exc.proc
        return None, f"batched run incomplete ({exc})", cpu + (proc.cpu_s if proc else 0.0), rss
    lone_seeds = rng.sample(seeds, 2)
    lone = [sim.run_seed(build, plan_seed(task, s), settle=settle, sandbox=sandbox, limits=limits)
            for s in lone_seeds]
    cpu += sum(r.cpu_s for r in lone)
    rss = max([rss] + [r.max_rss_kb for r in lone])
    diff = (first_difference(again.results, fwd.results, "the shuffled re-run", "the batched run",
                             subset=True)
            or first_difference(lone, fwd.results, "the seed alone", "the batched run", subset=True))
    if not diff and cert.ok:
        certified = [SeedResult(seed=k[0], status=k[1], reason=k[2], checks=k[3], trace_hash=k[4],
                                sim_time_ps=k[5]) for k in (cert.results[s] for s in seeds)]
        diff = first_difference(fwd.results, certified, "the batched run", "the certificate")
    if diff:
        return None, f"batched results disagreed ({diff})", cpu, rss
    checks = (f"shuffled re-run of {len(order)} of {len(plans)} seeds and seeds {lone_seeds[0]}, "
              f"{lone_seeds[1]} alone agreed")
    if cert.ok:
        return fwd.results, f"{cert.reason}; {checks}", cpu, rss
    issued = ""
    if not cert.readable:  # never replace a genuine certificate that covers other seeds
        issued = "; certificate " + issue_certificate(task, design_text, fwd.results, settle=settle,
                                                      basis="self-checked").name + " issued"
        if rng.random() < 1 / 64:  # every first grade issues one: keep the folder bounded, cheaply
            prune_certificates()
    return fwd.results, f"self-checked ({cert.reason}): {checks}{issued}", cpu, rss
