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
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import __version__, paths
from .gate import run_gate
from .proc import bwrap_path
from .seeds import hidden_seeds, plan_seed, visible_seeds
from .simulators import Build, SeedResult, Simulator, get_simulator
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
        "harness": sha256((paths.tb_include_dir() / "cdc_tb.vh").read_bytes()),
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
              stage: str = "seeds") -> list[SeedResult]:
    """Run ``seeds`` one process each (in parallel threads); results in the order given."""
    jobs = max(1, jobs or os.cpu_count() or 1)
    done = 0
    out: list[SeedResult] = []

    def one(seed: int) -> SeedResult:
        return sim.run_seed(build, plan_seed(task, seed), settle=settle, sandbox=sandbox)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for res in pool.map(one, seeds):
            out.append(res)
            done += 1
            if progress:
                progress(stage, done, len(seeds))
    return out


def seed_summary(task: Task, results: list[SeedResult]) -> dict:
    failed = []
    for r in results:
        if r.status != "pass":
            plan = plan_seed(task, r.seed)
            failed.append({"seed": r.seed, "status": r.status, "reason": r.reason,
                           "ratio": round(plan.ratio, 3), "fast": plan.fast})
    return {
        "count": len(results),
        "passed": sum(r.status == "pass" for r in results),
        "failed": failed,
        "results": [{"seed": r.seed, "status": r.status, "checks": r.checks, "hash": r.trace_hash,
                     "t": r.sim_time_ps} for r in results],
    }


def grade(task: Task | str, submission: str | bytes, *, sim: str = "icarus",
          hidden: int | str | None = "all", settle: bool = True, gate: bool = True,
          sandbox: bool = True, jobs: int | None = None, progress: Progress | None = None,
          keep_dir: Path | None = None) -> dict:
    """Grade ``submission`` for ``task``; return the report.

    hidden: ``"all"`` (every hidden seed), an int N (the first N), or 0 / None (no hidden stage).
    settle: late settling on (the default; off is the demo switch).
    gate: the static gate (off only for tests that prove a later stage or the sandbox).
    sandbox: run every tool under bubblewrap (off only where bubblewrap cannot run).
    keep_dir: keep the scratch directory there instead of deleting it (evidence).
    """
    t0 = time.monotonic()
    cpu0 = time.process_time()
    task = load_task(task) if isinstance(task, str) else task
    simulator = get_simulator(sim)
    if sandbox and bwrap_path() is None:
        sandbox = False  # reported below; a caller that needs the sandbox checks first
    report: dict = {
        "schema_version": SCHEMA_VERSION,
        "task": task.id,
        "family": task.family,
        "simulator": {"name": simulator.name, "version": simulator.version()},
        "settle": settle,
        "sandbox": sandbox,
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
    }
    stages: list[dict] = report["stages"]
    child_cpu = 0.0
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

    # 1. Allowlist
    allowed = allowlist(task, submission)
    if not allowed.ok:
        stages.append(_stage("allowlist", "refused", allowed.reason))
        return finish("refused", "allowlist", allowed.reason)
    stages.append(_stage("allowlist", "pass", f"{task.editable} ({allowed.form})"))
    design = {task.editable: allowed.text}
    for rel in task.sources:
        design[rel] = task.text(rel)
    report["fingerprints"] = fingerprints(task, allowed.text)

    # 2. Static gate
    if gate:
        g = run_gate(task, design)
        report["findings"] = g.findings
        stages.append(_stage("gate", g.status, g.detail, cpu_s=round(g.cpu_s, 4)))
        if g.status == "refused":
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
        stages.append(_stage("build", b.status, b.log[-4000:], cpu_s=round(b.cpu_s, 3)))
        if b.status != "pass":
            return finish(b.status, "build", "the design does not build" if b.status == "compile_error"
                          else b.log[-300:])

        # 4. Visible seeds, 5. hidden seeds
        stage_seeds = [("visible", visible_seeds(task))]
        if hidden:
            stage_seeds.append(("hidden", hidden_seeds(task, None if hidden == "all" else int(hidden))))
        for name, seeds in stage_seeds:
            results = run_seeds(simulator, b, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                                progress=progress, stage=name)
            child_cpu += sum(r.cpu_s for r in results)
            peak_rss = max([peak_rss] + [r.max_rss_kb for r in results])
            summary = seed_summary(task, results)
            report["seeds"][name] = summary
            status = seed_status(results)
            stages.append(_stage(name, status, f"{summary['passed']}/{summary['count']} seeds pass",
                                 cpu_s=round(sum(r.cpu_s for r in results), 3)))
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
