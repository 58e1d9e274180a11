"""The grade pipeline: allowlist -> static gate -> build -> visible seeds -> hidden seeds -> verdict.

``grade()`` rebuilds from the submission alone in a fresh scratch directory, never from an
agent's workspace, and returns the report (a dict valid against schemas/report.schema.json, built
through ``report.Report``). Stages stop at the first failure; later stages are reported as
``skipped``. Only ``pass`` scores. ``verdict()`` is the pure rule that turns the stages into the
verdict. Everything that runs a simulator lives in ``cdc_env.sim``; this module imports only
that layer, the gate and the submission allowlist (plus task, report, paths and errors).

Verdict labels: pass, fail, overfit (visible seeds pass, hidden fail), compile_error, refused
(allowlist or gate), timeout, tool_error (the grader could not decide; never a pass or a fail).
"""

from __future__ import annotations

import hashlib
import platform
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TypedDict, Unpack

from . import paths
from ._version import __version__
from .errors import CdcError, clip_quoted
from .gate import run_gate
from .report import STAGE_NAMES, Report, Stage
from .sim import capable, get_simulator
from .sim import names as sim_names
from .sim.base import SEED_LIMITS, SeedResult, Simulator
from .sim.certs import batch_policy as resolve_batch_policy
from .sim.costmodel import choose_simulator
from .sim.proc import Limits, SelfTest, accounting, cpu_meter, selftest
from .sim.seeds import hidden_for, parse_hidden, plan_seed, visible_seeds
from .sim.stage import Progress, run_stage, scratch_build, seed_status
from .submission import Allowlisted as Allowed
from .submission import allowlist
from .task import Task, load_task

SCHEMA_VERSION = 1
# The report's keys in the order grade() has always written them.
REPORT_KEYS = ("schema_version", "task", "family", "simulator", "settle", "sandbox", "unsafe_no_sandbox",
               "sandbox_selftest", "accounting", "cdc_env_version", "python", "submission_sha256", "stages",
               "findings", "seeds", "verdict", "reward", "failed_stage", "overfit", "reason", "disabled",
               "batch_policy", "fingerprints", "netlist", "cpu_s", "wall_s", "peak_rss_kb", "control")


def sha256(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def fingerprints(task: Task, design_text: str | None) -> dict[str, str]:
    fp = {
        "primitives": sha256(paths.primitives_bytes()),
        "harness": sha256(b"".join(p.read_bytes() for p in paths.tb_includes())),
        "testbench": sha256(task.path(task.testbench).read_bytes()),
    }
    if design_text is not None:
        fp["design"] = sha256(design_text)
    return fp


class OptionsError(CdcError, ValueError):
    """A grade option with a bad value (one line). A ``ValueError`` too: callers that turn a bad
    value into a bad input line (grade-batch, the server) catch that."""


SWITCHES = ("allowlist", "gate", "settle", "stage:visible", "stage:hidden")  # and "rule:<ID>"


@dataclass(frozen=True)
class GradeOptions:
    """How a grade runs, one value, checked once when it is made (``OptionsError``, one line).

    sim: a registered simulator (``sim.names()``: "icarus", "verilator", ...) or "auto" (the
        cheaper one for this grade, from measured costs; see sim.costmodel.choose_simulator -- the
        choice and its reason are in report["simulator"]).
    hidden: ``"all"`` (every hidden seed), a whole number N (the first N), or 0 / None (no hidden
        stage); checked against the task's hidden-seed count when the grade starts.
    settle: late settling on (the default; off is the demo switch).
    gate: the static gate (off only for tests that prove a later stage or the sandbox).
    sandbox: run every tool under bubblewrap. No working sandbox (bubblewrap missing, or its
        start-up self-test failing) is a tool_error; False is the explicit unsafe opt-in, recorded
        in report["unsafe_no_sandbox"].
    jobs: seed processes in parallel (None or 0: one per core).
    batch: let a batching backend (Verilator) batch stages of 24+ seeds (see sim.stage.run_stage).
    batch_policy: "self-checked" (batch a first grade too, checked against itself; the default)
        or "certified" (batch only under a parity certificate for the exact patch); None reads
        $CDC_ENV_BATCH_POLICY when the grade starts. Recorded in report["batch_policy"].
    seed_limits: time, CPU, memory and output bounds of one seed's simulation (one at a time).
    disable: test-only switches that prove a fixture is caught where it should be (never use
        them to grade): "allowlist" (take the submission as the file's text, unchecked), "gate",
        "rule:<ID>" (the gate skips that rule), "settle" (late settling off),
        "stage:visible" / "stage:hidden" (skip that seed stage). Recorded in report["disabled"].
    """

    sim: str = "icarus"
    hidden: int | str | None = "all"
    settle: bool = True
    gate: bool = True
    sandbox: bool = True
    jobs: int | None = None
    batch: bool = True
    batch_policy: str | None = None
    seed_limits: Limits = SEED_LIMITS
    disable: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.sim, str) or (self.sim != "auto" and self.sim not in sim_names()):
            raise OptionsError(f"sim: unknown simulator {str(self.sim)[:40]!r} "
                               f"(one of: {', '.join([*sim_names(), 'auto'])})")
        if self.hidden is not None:  # "all", a whole number, or its decimal text; the task bounds it later
            try:
                object.__setattr__(self, "hidden", parse_hidden(self.hidden))
            except ValueError as exc:
                raise OptionsError(clip_quoted(str(exc))) from None
        for name in ("settle", "gate", "sandbox", "batch"):
            if not isinstance(getattr(self, name), bool):
                raise OptionsError(f"{name}: {str(getattr(self, name))[:40]!r} is not True or False")
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int)
                                      or self.jobs < 0):
            raise OptionsError(f"jobs: {str(self.jobs)[:40]!r} is not None or a whole number >= 0")
        if self.batch_policy is not None:
            try:
                resolve_batch_policy(self.batch_policy)
            except ValueError as exc:
                raise OptionsError(clip_quoted(str(exc))) from None
        if not isinstance(self.seed_limits, Limits):
            raise OptionsError(f"seed_limits: a {type(self.seed_limits).__name__}, not sim.proc.Limits")
        if isinstance(self.disable, str) or not all(isinstance(d, str) for d in self.disable):
            raise OptionsError("disable: a set of switch names, not "
                               f"{type(self.disable).__name__} {str(self.disable)[:40]!r}")
        bad = sorted(d for d in self.disable if d not in SWITCHES and not (d.startswith("rule:") and d[5:]))
        if bad:
            raise OptionsError(f"disable: unknown switch {bad[0][:40]!r} (one of: {', '.join(SWITCHES)}, "
                               "rule:<ID>)")
        object.__setattr__(self, "disable", frozenset(self.disable))

    def resolved(self) -> GradeOptions:
        """The options a grade runs with: the switches in ``disable`` applied (gate, settle off) and
        the batching policy read ($CDC_ENV_BATCH_POLICY when None)."""
        try:
            policy = resolve_batch_policy(self.batch_policy)
        except ValueError as exc:  # an unknown name in $CDC_ENV_BATCH_POLICY
            raise OptionsError(clip_quoted(str(exc))) from None
        return replace(self, gate=self.gate and "gate" not in self.disable,
                       settle=self.settle and "settle" not in self.disable, batch_policy=policy)


class GradeKeywords(TypedDict, total=False):
    """``grade()``'s keywords: the fields of ``GradeOptions``."""

    sim: str
    hidden: int | str | None
    settle: bool
    gate: bool
    sandbox: bool
    jobs: int | None
    batch: bool
    batch_policy: str | None
    seed_limits: Limits
    disable: frozenset[str] | set[str]


OPTION_NAMES = frozenset(f.name for f in fields(GradeOptions))


def options_from(options: GradeOptions | None, keywords: GradeKeywords) -> GradeOptions:
    """``options`` (default ``GradeOptions()``) with the fields named in ``keywords`` replaced: what
    ``grade(task, text, options, **keywords)`` grades with. An unknown keyword is a TypeError."""
    unknown = sorted(set(keywords) - OPTION_NAMES)
    if unknown:
        raise TypeError(f"grade() got an unexpected keyword argument {unknown[0]!r}")
    if not keywords:
        return options or GradeOptions()
    return replace(options, **keywords) if options is not None else GradeOptions(**keywords)


@dataclass
class Step:
    """One stage as the pipeline ran it: the report's stage, the report's reason should this stage
    decide the verdict, and whether its failure is deferred (a parse-only gate refusal decides
    only if no later stage fails: the agent then gets the compiler's own messages)."""

    stage: Stage
    reason: str = ""
    deferred: bool = False


_PASSING = frozenset({"pass", "not_run", "skipped"})


def verdict(steps: list[Step]) -> tuple[str, str | None, str]:
    """``(verdict, failed_stage, reason)`` of a grade from its stages, in pipeline order.

    The first stage that did not pass decides (a deferred one only when no later stage fails):
    ``tool_error`` stays ``tool_error`` (never a pass or a fail); a hidden seed stage that fails
    or times out is ``overfit`` (the visible seeds passed); otherwise the stage's status is the
    verdict (refused, compile_error, fail, timeout). No failing stage: ``pass``.
    """
    pending: Step | None = None
    for step in steps:
        if step.stage.status in _PASSING:
            continue
        if step.deferred:
            pending = pending or step
            continue
        pending = step
        break
    if pending is None:
        return "pass", None, ""
    name, status = pending.stage.name, pending.stage.status
    if status != "tool_error" and name == "hidden":
        return "overfit", name, pending.reason
    return status, name, pending.reason


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


def grade(task: Task | str, submission: str | bytes, options: GradeOptions | None = None, *,
          progress: Progress | None = None, keep_dir: Path | None = None,
          **keywords: Unpack[GradeKeywords]) -> dict:
    """Grade ``submission`` for ``task``; return the report.

    ``options`` says how (``GradeOptions``: simulator, hidden seeds, settle, gate, sandbox, jobs,
    batching, limits, test-only switches); the keywords are its fields, for callers that name a few
    (``grade(task, text, sim="verilator", hidden=8)``), and replace those fields of ``options``
    when both are given. A bad value is an ``OptionsError`` (a CdcError and a ValueError, one
    line) before anything runs. ``progress`` is told of each seed; ``keep_dir`` keeps the scratch
    directory there instead of deleting it (evidence).
    """
    opts = options_from(options, keywords).resolved()  # the policy read now, before any work
    t0 = time.monotonic()
    with cpu_meter() as meter:  # this grade's own threads only (not other grades in the process)
        task = load_task(task) if isinstance(task, str) else task
        hidden_for(task, opts.hidden)  # a bad ``hidden`` is the caller's ValueError, before anything runs
        choice = ""
        sim = opts.sim
        if opts.sim == "auto":  # before the gate: a certificate, else Icarus; after it, the X safety
            sim, choice = choose_simulator(task, submission, hidden=opts.hidden, settle=opts.settle,
                                           batch=opts.batch)
        simulator = get_simulator(sim)
        first_selftest = opts.sandbox and selftest.cache_info().currsize == 0
        box = selftest() if opts.sandbox else None
        report = Report(
            schema_version=SCHEMA_VERSION, task=task.id, family=task.family, control=task.control or None,
            simulator={"name": simulator.name, "version": simulator.version(),
                       **({"choice": choice} if choice else {})},
            settle=opts.settle, sandbox=opts.sandbox, unsafe_no_sandbox=not opts.sandbox,
            sandbox_selftest=box.reason if box else "not run (sandbox switched off by the caller)",
            accounting=accounting().as_report(), cdc_env_version=__version__,
            python=platform.python_version(),
            submission_sha256=sha256(submission if isinstance(submission, (str, bytes)) else b""),
            stages=[], findings=[], seeds={}, verdict="tool_error", reward=0, failed_stage=None,
            overfit=False, reason="", disabled=sorted(opts.disable), batch_policy=opts.batch_policy,
            cpu_s=0.0, wall_s=0.0, peak_rss_kb=0)
        run = _Run(report, task, opts, progress, keep_dir,
                   child_cpu=box.cpu_s if box is not None and first_selftest else 0.0)  # once per process
        steps = _pipeline(run, simulator, submission, box)
        done = {s.stage.name for s in steps}
        steps += [Step(Stage(name, "skipped", "")) for name in STAGE_NAMES if name not in done]
        steps.sort(key=lambda s: STAGE_NAMES.index(s.stage.name))
        v, failed_stage, reason = verdict(steps)
        report.stages = [s.stage for s in steps]
        report.verdict, report.reward, report.failed_stage = v, 1 if v == "pass" else 0, failed_stage
        report.reason, report.overfit = reason, v == "overfit"
        report.cpu_s = round(run.child_cpu + meter.total(), 3)
    report.wall_s = round(time.monotonic() - t0, 3)
    report._keys = tuple(k for k in REPORT_KEYS if k not in ("fingerprints", "netlist", "control")
                         or getattr(report, k) is not None)
    return report.to_dict()


@dataclass
class _Run:
    """One grade under way: its report, its task, its resolved options, where it reports progress
    and keeps its scratch, and the CPU its tools used (``child_cpu``)."""

    report: Report
    task: Task
    opts: GradeOptions
    progress: Progress | None
    keep_dir: Path | None
    child_cpu: float = 0.0


def _pipeline(run: _Run, simulator: Simulator, submission: str | bytes, box: SelfTest | None) -> list[Step]:
    """Run the stages up to the first that stops the grade; fill ``run.report``'s findings, seeds,
    fingerprints and peak memory, and ``run.child_cpu`` (the tools' CPU); return the steps. With
    ``sim="auto"``, once the gate has passed, the choice is made again with the netlist's X safety
    (costmodel.choose_simulator)."""
    report, task, opts, disable = run.report, run.task, run.opts, run.opts.disable
    steps: list[Step] = []
    if box is not None and not box.ok:
        return [Step(Stage("build", "tool_error", box.reason), box.reason)]

    # 1. Allowlist
    if "allowlist" in disable:  # test-only: the submission is taken as the file's text, unchecked
        raw = submission.decode("utf-8", "replace") if isinstance(submission, bytes) else submission
        allowed = Allowed(True, raw, form="unchecked")
    else:
        allowed = allowlist(task, submission)
    if not allowed.ok:
        return [Step(Stage("allowlist", "refused", allowed.reason), allowed.reason)]
    steps.append(Step(Stage("allowlist", "pass", f"{task.editable} ({allowed.form})")))
    design = task.files(allowed.text)
    report.fingerprints = fingerprints(task, allowed.text)

    # 2. Static gate: synthesis (one netlist) and the rules on it. The netlist is what the
    # simulators build, never the submitted text -- except with the gate switched off (test-only).
    if not opts.gate:
        # Test-only: no gate at all, and the submitted text is simulated as written (the sandbox's
        # proofs need designs that synthesis would never let through: file and process probes in
        # initial blocks). Every real grade simulates the netlist below.
        steps.append(Step(Stage("gate", "not_run", "switched off by the caller (test-only): the "
                                "submitted text is simulated as written")))
        return _simulate(run, simulator, steps, design, allowed.text, netlist=False)
    off = frozenset(d.split(":", 1)[1] for d in disable if d.startswith("rule:"))
    own = time.thread_time()
    g = run_gate(task, design, skip_rules=off)  # skip_rules: test-only (fixture proofs)
    # the gate's forked analysis child: its CPU (the thread's own part is on the meter already)
    run.child_cpu += max(g.cpu_s - (time.thread_time() - own), 0.0)
    if g.netlist is not None:
        report.netlist = {k: g.netlist[k] for k in ("sha256", "cells", "flops")}
    if g.parse_only:  # the design does not compile: slang's diagnostics are the compiler output
        log = "\n".join(f"{f['file'] or task.editable}:{f['line'] or '?'}: error: "
                        f"{f['message'].removesuffix(' -- fix the code so it compiles')}" for f in g.findings)
        report.findings = g.findings
        steps.append(Step(Stage("gate", "refused", g.detail, cpu_s=round(g.cpu_s, 4)),
                          g.findings[0]["message"], deferred=True))
        return [*steps, Step(Stage("build", "compile_error", log, cpu_s=0.0), "the design does not build")]
    report.findings = g.findings
    first = g.findings[0]["message"] if g.findings else g.detail
    steps.append(Step(Stage("gate", g.status, g.detail, cpu_s=round(g.cpu_s, 4)),
                      first if g.status == "refused" else g.detail))
    if g.status != "pass":
        return steps
    assert g.netlist is not None
    if opts.sim == "auto" and "x_safe" in g.netlist:
        name, choice = choose_simulator(task, allowed.text, hidden=opts.hidden, settle=opts.settle,
                                        batch=opts.batch, x_safe=(g.netlist["x_safe"], g.netlist["x_why"]),
                                        batch_needs_certificate=opts.batch_policy == "certified")
        simulator = get_simulator(name)
        report.simulator = {"name": simulator.name, "version": simulator.version(), "choice": choice}
    elif not simulator.four_state and not g.netlist.get("x_safe", False) and capable("four_state"):
        # A two-state simulator asked for by name: its verdict on a netlist that is not X-safe could
        # differ from the four-state one (an unreset flop is 0 there, X on Icarus), so such a design
        # could pass only because of the simulator the caller pinned. The verdict must not depend on
        # that: the grade runs on the four-state simulator, and the report says why.
        asked = simulator.name
        simulator = get_simulator(capable("four_state")[0])
        why = g.netlist.get("x_why", "not checked")
        report.simulator = {"name": simulator.name, "version": simulator.version(),
                            "choice": f"{asked} asked for, but the netlist is not X-safe ({why}): graded on "
                                      f"{simulator.name}, whose four-state verdict a two-state simulation "
                                      "could change"}
    built = {task.editable: g.netlist["verilog"]}  # the netlist holds the task's read-only sources, flattened
    return _simulate(run, simulator, steps, built, allowed.text, netlist=True)


def _simulate(run: _Run, simulator: Simulator, steps: list[Step], built: dict[str, str], text: str, *,
              netlist: bool) -> list[Step]:
    """Build ``built`` and run the visible and hidden seed stages; ``steps`` so far plus theirs.
    ``netlist``: ``built`` is the gate's netlist (``Simulator.build_netlist``), not the text."""
    report, task, opts = run.report, run.task, run.opts
    if not simulator.available():
        why = simulator.missing()
        return [*steps, Step(Stage("build", "tool_error", why), why)]

    with scratch_build(simulator, task, built, sandbox=opts.sandbox, keep_dir=run.keep_dir,
                       prefix="cdc-grade-", netlist=netlist) as b:
        # 3. Build
        run.child_cpu += b.cpu_s
        report.peak_rss_kb = max(report.peak_rss_kb or 0, b.max_rss_kb)
        steps.append(Step(Stage("build", b.status, b.log[-4000:], cpu_s=round(b.cpu_s, 3),
                                model_cache=b.extra.get("model_cache")),
                          "the design does not build" if b.status == "compile_error" else b.log[-300:]))
        if b.status != "pass":
            return steps

        # 4. Visible seeds, 5. hidden seeds
        stage_seeds = [("visible", visible_seeds(task))]
        if opts.hidden:
            stage_seeds.append(("hidden", hidden_for(task, opts.hidden)))
        stage_seeds = [(n, s) for n, s in stage_seeds if f"stage:{n}" not in opts.disable]
        for name, seeds in stage_seeds:
            ran = run_stage(simulator, b, task, seeds, settle=opts.settle, design_text=text, batch=opts.batch,
                            sandbox=opts.sandbox, jobs=opts.jobs, progress=run.progress, stage=name,
                            limits=opts.seed_limits, policy=opts.batch_policy)
            run.child_cpu += ran.cpu_s
            report.peak_rss_kb = max(report.peak_rss_kb or 0, ran.max_rss_kb)
            summary = seed_summary(task, ran.results, len(seeds))
            summary.update(mode=ran.mode, mode_reason=ran.reason)
            report.seeds[name] = summary
            status = seed_status(ran.results)
            detail = f"{summary['passed']}/{summary['count']} seeds pass ({ran.mode})"
            first = summary["failed"][0] if summary["failed"] else None
            steps.append(Step(Stage(name, status, detail, cpu_s=round(ran.cpu_s, 3), mode=ran.mode,
                                    mode_reason=ran.reason),
                              f"{name} seed {first['seed']}: {first['reason']}" if first else ""))
            if status != "pass":
                return steps
    return steps
