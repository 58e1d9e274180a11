"""The grade pipeline: allowlist -> static gate -> build -> visible seeds -> hidden seeds -> verdict.

``grade()`` rebuilds from the submission alone in a fresh scratch directory, never from an
agent's workspace, and returns the report (a dict valid against schemas/report.schema.json).
Stages stop at the first failure; later stages are reported as ``skipped``. Only ``pass`` scores.

Verdict labels: pass, fail, overfit (visible seeds pass, hidden fail), compile_error, refused
(allowlist or gate), timeout, tool_error (the grader could not decide; never a pass or a fail).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import paths
from ._version import __version__
from .gate import run_gate
from .parity import BATCH_MIN_SEEDS, StageRun, run_stage_batched
from .parity import batch_policy as resolve_batch_policy
from .proc import Limits, accounting, selftest
from .seeds import hidden_seeds, plan_seed, visible_seeds
from .simulators import (
    SEED_LIMITS,
    Build,
    SeedResult,
    Simulator,
    get_simulator,
    run_seeds_staged,
    stage_sandbox_on,
)
from .submission import Allowlisted as Allowed
from .submission import allowlist
from .task import Task, load_task

SCHEMA_VERSION = 1
Progress = Callable[[str, int, int], None]  # (stage, done, total)


def sha256(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def fingerprints(task: Task, design_text: str | None) -> dict[str, str]:
    fp = {
        "primitives": sha256(paths.primitives_file().read_bytes()),
        "harness": sha256(b"".join(p.read_bytes() for p in paths.tb_includes())),
        "testbench": sha256(task.path(task.testbench).read_bytes()),
    }
    if design_text is not None:
        fp["design"] = sha256(design_text)
    return fp


def _stage(name: str, status: str, detail: str = "", **extra) -> dict:
    return {"name": name, "status": status, "detail": detail, **extra}


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
        for res in pool.map(one, seeds):
            done += 1
            if res is not None:
                out.append(res)
            if progress:
                progress(stage, done, len(seeds))
    return out


def run_stage(sim: Simulator, build: Build, task: Task, seeds: list[int], *, settle: bool,
              design_text: str, batch: bool = True, sandbox: bool = True, jobs: int | None = None,
              progress: Progress | None = None, stage: str = "seeds",
              limits: Limits = SEED_LIMITS, policy: str = "self-checked") -> StageRun:
    """One seed stage of a grade: batched on Verilator where ``policy`` allows it, else one per seed.

    Batching needs Verilator, ``batch`` and a stage of at least BATCH_MIN_SEEDS seeds; policy
    "certified" also needs a valid certificate for the patch, policy "self-checked" a design
    without constructs that could carry state between seeds (parity.run_stage_batched). The batch
    must agree with its own reverse-order re-run and two seeds run alone. Otherwise -- and
    whenever any of that fails -- every seed runs in its own process. Icarus never batches. The
    returned mode, reason and policy go into the report.
    """
    cpu, rss = 0.0, 0
    if sim.name != "verilator":
        reason = f"{sim.name} runs every seed in its own process"
    elif not batch:
        reason = "batching switched off by the caller"
    elif len(seeds) < BATCH_MIN_SEEDS:
        reason = f"stage of {len(seeds)} seeds (batching needs {BATCH_MIN_SEEDS} or more)"
    else:
        results, reason, cpu, rss = run_stage_batched(sim, build, task, design_text, seeds,  # type: ignore[arg-type]
                                                      settle=settle, sandbox=sandbox, limits=limits,
                                                      policy=policy)
        if results is not None:
            if progress:
                progress(stage, len(seeds), len(seeds))
            return StageRun(results, "batched", reason, cpu, rss, policy)
        reason += "; every seed ran on its own"
    results = run_seeds(sim, build, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                        progress=progress, stage=stage, limits=limits)
    return StageRun(results, "one-at-a-time", reason, cpu + sum(r.cpu_s for r in results),
                    max([rss] + [r.max_rss_kb for r in results]), policy)


def seed_summary(task: Task, results: list[SeedResult], planned: int) -> dict:
    failed = []
    for r in results:
        if r.status != "pass":
            plan = plan_seed(task, r.seed)
            failed.append({"seed": r.seed, "status": r.status, "reason": r.reason,
                           "ratio": round(plan.ratio, 3), "fast": plan.fast})
    return {
        "count": planned,
        "passed": sum(r.status == "pass" for r in results),
        "not_run": planned - len(results),
        "failed": failed,
        "results": [{"seed": r.seed, "status": r.status, "checks": r.checks, "hash": r.trace_hash,
                     "t": r.sim_time_ps} for r in results],
    }


def grade(task: Task | str, submission: str | bytes, *, sim: str = "icarus",
          hidden: int | str | None = "all", settle: bool = True, gate: bool = True,
          sandbox: bool = True, jobs: int | None = None, progress: Progress | None = None,
          keep_dir: Path | None = None, batch: bool = True, seed_limits: Limits = SEED_LIMITS,
          disable: frozenset[str] | set[str] = frozenset(), batch_policy: str | None = None) -> dict:
    """Grade ``submission`` for ``task``; return the report.

    hidden: ``"all"`` (every hidden seed), an int N (the first N), or 0 / None (no hidden stage).
    settle: late settling on (the default; off is the demo switch).
    gate: the static gate (off only for tests that prove a later stage or the sandbox).
    sandbox: run every tool under bubblewrap. No working sandbox (bubblewrap missing, or its
        start-up self-test failing) is a tool_error; False is the explicit unsafe opt-in, recorded
        in report["unsafe_no_sandbox"].
    keep_dir: keep the scratch directory there instead of deleting it (evidence).
    sim: "icarus", "verilator", or "auto" (the cheaper one for this grade, from measured costs;
        see cost.choose_simulator -- the choice and its reason are in report["simulator"]).
    batch: let Verilator batch stages of 24+ seeds (see run_stage).
    batch_policy: "self-checked" (batch a first grade too, checked against itself; the default)
        or "certified" (batch only under a parity certificate for the exact patch); None reads
        $CDC_ENV_BATCH_POLICY. An unknown name raises ValueError. Recorded in report["batch_policy"].
    seed_limits: time, CPU, memory and output bounds of one seed's simulation (one at a time).
    disable: test-only switches that prove a fixture is caught where it should be (never use
        them to grade): "allowlist" (take the submission as the file's text, unchecked), "gate",
        "rule:<ID>" (the gate skips that rule), "settle" (late settling off),
        "stage:visible" / "stage:hidden" (skip that seed stage). Recorded in report["disabled"].
    """
    disable = frozenset(disable)
    policy = resolve_batch_policy(batch_policy)  # ValueError for an unknown name, before any work
    if "gate" in disable:
        gate = False
    if "settle" in disable:
        settle = False
    t0 = time.monotonic()
    cpu0 = time.process_time()
    task = load_task(task) if isinstance(task, str) else task
    choice = ""
    if sim == "auto":
        from .cost import choose_simulator  # noqa: PLC0415 -- cost imports grade

        sim, choice = choose_simulator(task, submission, hidden=hidden, settle=settle, batch=batch)
    simulator = get_simulator(sim)
    first_selftest = sandbox and selftest.cache_info().currsize == 0
    box = selftest() if sandbox else None
    report: dict = {
        "schema_version": SCHEMA_VERSION,
        "task": task.id,
        "family": task.family,
        "simulator": {"name": simulator.name, "version": simulator.version(),
                      **({"choice": choice} if choice else {})},
        "settle": settle,
        "sandbox": sandbox,
        "unsafe_no_sandbox": not sandbox,
        "sandbox_selftest": box.reason if box else "not run (sandbox switched off by the caller)",
        "accounting": accounting().as_report(),
        "cdc_env_version": __version__,
        "python": platform.python_version(),
        "submission_sha256": sha256(submission if isinstance(submission, (str, bytes)) else b""),
        "stages": [],
        "findings": [],
        "seeds": {},
        "verdict": "tool_error",
        "reward": 0,
        "failed_stage": None,
        "overfit": False,
        "reason": "",
        "disabled": sorted(disable),
        "batch_policy": policy,
    }
    stages: list[dict] = report["stages"]
    child_cpu = box.cpu_s if box is not None and first_selftest else 0.0  # once per process
    peak_rss = 0

    def finish(verdict: str, failed_stage: str | None, reason: str) -> dict:
        done_names = {s["name"] for s in stages}
        for name in ("allowlist", "gate", "build", "visible", "hidden"):
            if name not in done_names:
                stages.append(_stage(name, "skipped"))
        order = ["allowlist", "gate", "build", "visible", "hidden"]
        stages.sort(key=lambda s: order.index(s["name"]))
        report.update(verdict=verdict, reward=1 if verdict == "pass" else 0,
                      failed_stage=failed_stage, reason=reason, overfit=verdict == "overfit")
        report["cpu_s"] = round(child_cpu + time.process_time() - cpu0, 3)
        report["wall_s"] = round(time.monotonic() - t0, 3)
        report["peak_rss_kb"] = peak_rss
        return report

    if box is not None and not box.ok:
        stages.append(_stage("build", "tool_error", box.reason))
        return finish("tool_error", "build", box.reason)

    # 1. Allowlist
    if "allowlist" in disable:  # test-only: the submission is taken as the file's text, unchecked
        raw = submission.decode("utf-8", "replace") if isinstance(submission, bytes) else submission
        allowed = Allowed(True, raw, form="unchecked")
    else:
        allowed = allowlist(task, submission)
    if not allowed.ok:
        stages.append(_stage("allowlist", "refused", allowed.reason))
        return finish("refused", "allowlist", allowed.reason)
    stages.append(_stage("allowlist", "pass", f"{task.editable} ({allowed.form})"))
    design = {task.editable: allowed.text}
    for rel in task.sources:
        design[rel] = task.text(rel)
    report["fingerprints"] = fingerprints(task, allowed.text)

    # 2. Static gate. A design the gate cannot parse goes on to the build, so that the agent
    # gets the compiler's own messages; if the simulator does build it, it is refused all the same.
    parse_only = False
    if gate:
        off = frozenset(d.split(":", 1)[1] for d in disable if d.startswith("rule:"))
        g = run_gate(task, design, skip_rules=off)  # skip_rules: test-only (fixture proofs)
        report["findings"] = g.findings
        stages.append(_stage("gate", g.status, g.detail, cpu_s=round(g.cpu_s, 4)))
        parse_only = bool(g.findings) and all(f["rule"] == "GATE-PARSE" for f in g.findings)
        if g.status == "refused" and not parse_only:
            first = g.findings[0]["message"] if g.findings else g.detail
            return finish("refused", "gate", first)
        if g.status == "tool_error":
            return finish("tool_error", "gate", g.detail)
    else:
        stages.append(_stage("gate", "not_run", "switched off by the caller (test-only)"))

    if not simulator.available():
        stages.append(_stage("build", "tool_error", f"{simulator.name} is not installed"))
        return finish("tool_error", "build", f"{simulator.name} is not installed")

    work = Path(tempfile.mkdtemp(prefix="cdc-grade-"))
    try:
        # 3. Build
        b = simulator.build(task, design, work, sandbox=sandbox)
        child_cpu += b.cpu_s
        peak_rss = max(peak_rss, b.max_rss_kb)
        cache = {"model_cache": b.extra["model_cache"]} if "model_cache" in b.extra else {}
        stages.append(_stage("build", b.status, b.log[-4000:], cpu_s=round(b.cpu_s, 3), **cache))
        if b.status != "pass":
            return finish(b.status, "build", "the design does not build" if b.status == "compile_error"
                          else b.log[-300:])
        if gate and parse_only:
            # The gate could not analyse a design that the simulator accepts: never let that
            # through (a front-end difference must not become a way around the gate).
            return finish("refused", "gate", g.findings[0]["message"])
        if gate and "rule:GATE-DIVERGE" not in disable:  # differential elaboration (gate/diverge.py)
            from .gate.diverge import check_build  # noqa: PLC0415
            from .gate.rules import finding  # noqa: PLC0415

            div = check_build(simulator.name, work, task.tb_top, task.top, g.elab, list(design), sandbox)
            child_cpu += div.cpu_s
            if div.status is not None:
                gate_stage = next(s for s in stages if s["name"] == "gate")
                gate_stage.update(status=div.status, detail=div.detail[:500])
                if div.status == "refused":
                    report["findings"].append(finding("GATE-DIVERGE", div.detail, file=task.editable))
                return finish(div.status, "gate", div.detail)

        # 4. Visible seeds, 5. hidden seeds
        stage_seeds = [("visible", visible_seeds(task))]
        if hidden:
            stage_seeds.append(("hidden", hidden_seeds(task, None if hidden == "all" else int(hidden))))
        stage_seeds = [(n, s) for n, s in stage_seeds if f"stage:{n}" not in disable]
        for name, seeds in stage_seeds:
            run = run_stage(simulator, b, task, seeds, settle=settle, design_text=allowed.text, batch=batch,
                            sandbox=sandbox, jobs=jobs, progress=progress, stage=name,
                            limits=seed_limits, policy=policy)
            results = run.results
            child_cpu += run.cpu_s
            peak_rss = max(peak_rss, run.max_rss_kb)
            summary = seed_summary(task, results, len(seeds))
            summary.update(mode=run.mode, mode_reason=run.reason)
            report["seeds"][name] = summary
            status = seed_status(results)
            detail = f"{summary['passed']}/{summary['count']} seeds pass ({run.mode})"
            stages.append(_stage(name, status, detail,
                                 cpu_s=round(run.cpu_s, 3), mode=run.mode, mode_reason=run.reason))
            if status != "pass":
                first = summary["failed"][0]
                reason = f"{name} seed {first['seed']}: {first['reason']}"
                if status == "tool_error":
                    return finish("tool_error", name, reason)
                if name == "hidden":
                    return finish("overfit", name, reason)
                return finish(status, name, reason)
        return finish("pass", None, "")
    finally:
        if keep_dir is not None:
            shutil.copytree(work, keep_dir, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
