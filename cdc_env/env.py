"""CdcRepairEnv: the agentic environment -- five budgeted tools over one task (SPEC section 6).

What an agent harness calls in its ``env.step`` loop. The environment holds the agent's working
copy of the editable file (in memory: no agent-supplied path ever reaches the file system),
answers the five tools, counts the budgets, and grades with ``cdc_env.grade.grade`` -- the same
pipeline, simulators and sandbox as ``cdc-env grade``. The grader's report goes to the harness in
its own field and never into the text meant for the model.

Not covered here: the model loop itself (runners), HTTP (server), and how a harness turns
observations into chat messages.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from . import paths, tools
from .errors import CdcError, clip_quoted
from .grade import GradeOptions, grade
from .prompts import CONTRACT_NAME, task_prompt
from .report import Report
from .rungs import check_rung
from .sim import get_simulator
from .sim.proc import bwrap_path
from .sim.seeds import hidden_for, parse_hidden
from .submission import MAX_BYTES
from .task import Task, load_task

_LOG_LINES = 40
# Hidden seeds per submission unless the caller says otherwise, on every environment front end
# (CdcRepairEnv, gym, verifiers, cdc-env serve's episodes and one-shot grades, OpenEnv, MCP): cheap
# enough for training. The graders that publish numbers (grade, grade-batch, eval) default to all.
DEFAULT_HIDDEN = 32


class CdcRepairEnv:
    """One task, five tools, two budgets; an episode runs from ``reset()`` until ``done``.

    Args:
        task_dir: a public task id (``"handshake"``), the path of a task folder, or a loaded Task.
        repo_root: a checkout whose ``tasks/`` folder holds ``task_dir`` when it is an id
            (default: the installed package's tasks). The primitives and the contract always come
            from the package, as they do for the grader.
        max_steps: the tool-call budget of an episode (>= 1).
        max_sim_runs: the simulation budget of an episode (>= 0): how many ``run_visible`` calls
            may simulate.
        hidden: hidden seeds graded on submission: a number N (the first N; default 32, which
            keeps a training grade cheap), ``"all"`` (what ``cdc-env eval`` and the published
            numbers use), or 0.
        sim: ``"icarus"``, ``"verilator"`` or ``"auto"`` (as for ``grade``).
        gate: the static gate, on for every real use. ``False`` exists only so that tests can
            prove the sandbox holds on its own.
        sandbox: run every build and simulation under bubblewrap (the default, and required:
            without ``bwrap`` the constructor raises). ``False`` only where bubblewrap cannot
            run; the static gate is then the only guard.
        grader: what grades a ``submit`` (default ``cdc_env.grade.grade``, here in this process):
            any function with ``grade``'s positional arguments ``(task, text, options)`` (a
            ``GradeOptions``) returning its report, e.g. ``cdc_env.backends.grade_function(backend)`` to
            grade on a local pool or a Ray cluster. ``run_visible`` always runs here.
        rung: the information rung episodes are served at unless ``reset`` says otherwise:
            ``full`` (the bug report), ``symptom`` or ``minimal`` (cdc_env.rungs). It changes only
            the text of the first observation, never the grade.

    Episode rules:
        * ``reset(rung=None)`` starts an episode: the working copy becomes the task's given file
          (the defect; for a no-bug control, the clean design) and both budgets are full. It
          returns the first observation, told at ``rung`` (default: the constructor's). Call it
          again at any time to start over; nothing of the previous episode carries over.
        * ``step(tool_name, args)`` makes one tool call. ``args`` is a dict or the JSON text of
          one (as Chat Completions delivers it); ``None`` or ``""`` mean no arguments. Whatever
          the name and arguments, ``step`` returns a result and never raises for them.
        * **Every** call counts against the tool-call budget: unknown tool names, arguments that
          do not fit the tool's JSON Schema, refused paths and refused simulation runs included.
        * ``run_visible`` also costs one simulation run, whether the design builds or not. Once
          the simulation budget is spent it is refused (no simulation) but still costs a call.
        * ``submit`` grades the working copy (allowlist, static gate, build, visible seeds,
          ``hidden`` seeds) and ends the episode.
        * If a call that is not ``submit`` spends the last tool call, the environment submits the
          working copy itself on that same step (``auto_submitted`` is true); the tool's own
          answer is still in the observation.
        * ``done`` is Gymnasium's ``terminated or truncated``: ``auto_submitted`` true means the
          episode was truncated by the tool-call budget; otherwise the agent submitted.
        * ``finalize()`` ends an episode the harness truncates (its own turn or token limit): it
          grades the working copy as ``submit`` would and returns that step's result, with
          ``truncated`` true. After ``done`` it returns the episode's final result again.
        * ``astep`` and ``areset`` are the same calls for asyncio harnesses: they run in a worker
          thread, so a grade does not block the event loop.
        * After ``done``, ``step`` changes nothing and answers with an error observation
          (``error == "episode_over"``), ``done`` true and no reward; call ``reset()`` for a new
          episode. ``close()`` ends the environment; any later call raises ``CdcError``, as does
          ``step`` before the first ``reset`` (harness errors, not agent errors).
        * Calls on one environment are serialized by a lock; separate environments share nothing
          (each grade has its own scratch directory, removed when the grade ends).

    What ``run_visible`` shows: it runs the grader's own pipeline with no hidden seeds, so it
    reports what the agent's next submission would meet up to the visible seeds -- an allowlist
    refusal, **the static gate's findings** (they concern only the agent's own file, and they are
    exactly what a submission would be refused for; a refused design is not simulated), compiler
    errors with host paths removed, and per failing visible seed its clock ratio, the simulated
    time of the failure and the testbench's one-line reason. Nothing the design prints reaches the
    agent, only the testbench's verdict line.

    What the model never sees: the grader's report, the verdict and reward of a submission, the
    hidden seeds and their results, the testbench, the reference fix. ``step`` returns the report
    in ``report`` (a separate field) for the harness, which must not pass it on.

    Result of ``step`` (a JSON-ready dict; ``reset`` returns the same keys plus ``task``,
    ``editable`` and ``tools``, the tool names):
        observation (str): the text for the model.
        error (str | None): None, or why the call did nothing useful: ``unknown_tool``,
            ``bad_arguments``, ``refused`` (a path or content the tool does not accept),
            ``budget`` (simulation budget spent), ``episode_over``, ``tool_error`` (run_visible
            could not decide: an infrastructure failure, not the design's fault; still counted).
        done (bool), auto_submitted (bool).
        steps_used, steps_left, sim_runs_used, sim_runs_left (int).
        reward (int | None): 1 or 0 on the step that ended the episode, else None.
        report (dict | None): the grade report on that same step, else None.
    """

    def __init__(self, task_dir: str | Path | Task, repo_root: str | Path | None = None, *,
                 max_steps: int = 30, max_sim_runs: int = 6, hidden: int | str | None = DEFAULT_HIDDEN,
                 sim: str = "icarus", gate: bool = True, sandbox: bool = True,
                 grader: Callable[..., dict] | None = None, rung: str = "full") -> None:
        try:
            self._configure(task_dir, repo_root, max_steps=max_steps, max_sim_runs=max_sim_runs,
                            hidden=hidden, sim=sim, gate=gate, sandbox=sandbox, grader=grader, rung=rung)
        except CdcError as exc:  # the message quotes the caller's input, which may be any size
            raise CdcError(clip_quoted(str(exc))) from None

    def _configure(self, task_dir: str | Path | Task, repo_root: str | Path | None, *, max_steps: int,
                   max_sim_runs: int, hidden: int | str | None, sim: str, gate: bool, sandbox: bool,
                   grader: Callable[..., dict] | None, rung: str) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise CdcError(f"max_steps must be an integer >= 1, not {max_steps!r}")
        if isinstance(max_sim_runs, bool) or not isinstance(max_sim_runs, int) or max_sim_runs < 0:
            raise CdcError(f"max_sim_runs must be an integer >= 0, not {max_sim_runs!r}")
        if isinstance(task_dir, Task):
            self.task = task_dir
        elif repo_root is not None and not (Path(task_dir) / "task.toml").is_file():
            self.task = load_task(Path(repo_root) / "tasks" / str(task_dir))
        else:
            self.task = load_task(task_dir)
        if hidden is not None:
            try:
                hidden_for(self.task, hidden)  # the task's own bound, as grade() checks it
                hidden = parse_hidden(hidden)
            except ValueError as exc:
                raise CdcError(str(exc)) from None
        if sim != "auto":
            get_simulator(sim)  # an unknown simulator is the caller's error, raised now
        if sandbox and bwrap_path() is None:
            raise CdcError("CdcRepairEnv runs agent designs under bubblewrap, which is missing: "
                           "apt-get install -y bubblewrap (or pass sandbox=False to rely on the gate alone)")
        self.rung = check_rung(rung)
        self.episode_rung = self.rung  # the rung of the current episode (reset may choose another)
        self.sim, self.hidden, self.gate, self.sandbox = sim, hidden, gate, sandbox
        # what a submit is graded with, checked once (the task's bound on hidden was checked above)
        self.grade_options = GradeOptions(sim=sim, hidden=hidden, gate=gate, sandbox=sandbox)
        self._grader = grader
        self.max_steps, self.max_sim_runs = max_steps, max_sim_runs
        self._contract = paths.contract_file().read_text(encoding="utf-8")
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self._new_episode()

    # ------------------------------------------------------------------ episode life cycle

    def _new_episode(self) -> None:
        self._final: dict | None = None
        self._design = self.task.given_text
        self._steps = 0
        self._sim_runs = 0
        self._done = False

    def reset(self, rung: str | None = None) -> dict:
        """Start a new episode; return its first observation (task, bug report at ``rung``, file,
        tools, budgets). The result also says ``rung`` and whether the task is a no-bug ``control``
        (for the harness; the observation never says it)."""
        rung = self.rung if rung is None else check_rung(rung)
        with self._lock:
            self._check_open()
            self._new_episode()
            self._started = True
            self.episode_rung = rung
            t = self.task
            out = self._result(task_prompt(t, self.max_steps, self.max_sim_runs, rung))
            out.update(task=t.id, editable=t.editable, tools=list(tools.TOOL_NAMES), rung=rung,
                       control=t.control)
            return out

    def finalize(self) -> dict:
        """Grade the working copy now (the harness truncated the episode) and end the episode.

        Returns the result of that last step (``done`` true, ``reward`` and ``report`` set,
        ``truncated`` true); once the episode is over, its final result again. Costs no tool call.
        """
        with self._lock:
            self._check_open()
            if not self._started:
                raise CdcError("call reset() before finalize()")
            if self._final is None:
                text = (f"The episode was ended by the harness: your current {self.task.editable} has been "
                        "submitted as it is.")
                self._final = self._result(text, report=self._submit())
                self._final["truncated"] = True
            return dict(self._final)

    async def areset(self, rung: str | None = None) -> dict:
        """``reset()`` for asyncio harnesses (runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.reset, rung)

    async def astep(self, tool_name: object, args: object = None) -> dict:
        """``step()`` for asyncio harnesses: a grade runs in a worker thread, off the event loop."""
        import asyncio

        return await asyncio.to_thread(self.step, tool_name, args)

    async def afinalize(self) -> dict:
        """``finalize()`` for asyncio harnesses."""
        import asyncio

        return await asyncio.to_thread(self.finalize)

    def close(self) -> None:
        """End the environment. Holds no files or processes between calls; idempotent."""
        self._closed = True
        self._design = ""

    def __enter__(self) -> CdcRepairEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tool_definitions(self) -> list[dict]:
        """The five tools in the OpenAI function-calling format."""
        return tools.tool_definitions()

    @property
    def done(self) -> bool:
        """Whether the current episode is over (submitted, auto-submitted or finalized)."""
        return self._done

    @property
    def steps_used(self) -> int:
        """Tool calls made in the current episode."""
        return self._steps

    @property
    def sim_runs_used(self) -> int:
        """Simulation runs (run_visible) made in the current episode."""
        return self._sim_runs

    @property
    def design(self) -> str:
        """The agent's current working copy of the editable file (for harnesses and tests)."""
        return self._design

    def _check_open(self) -> None:
        if self._closed:
            raise CdcError("this CdcRepairEnv is closed; create a new one")

    # ------------------------------------------------------------------ one tool call

    def step(self, tool_name: object, args: object = None) -> dict:
        """Make one tool call; see the class docstring for the rules and the result's keys."""
        with self._lock:
            self._check_open()
            if not self._started:
                raise CdcError("call reset() before step()")
            if self._done:
                return self._result("The episode is over; no more tool calls are accepted.",
                                    error="episode_over")
            self._steps += 1
            text, error, submitted = self._dispatch(tool_name, args)
            if submitted is None and self._steps >= self.max_steps:
                submitted = self._submit()
                text += (f"\n\nThat was your last tool call: your current {self.task.editable} has been "
                         "submitted. The episode is over.")
                out = self._result(text, error=error, auto=True, report=submitted)
            else:
                out = self._result(text, error=error, report=submitted)
            if submitted is not None:
                self._final = {**out, "truncated": False}
            return out

    def _dispatch(self, tool_name: object, args: object) -> tuple[str, str | None, dict | None]:
        """(observation, error code, report if the episode was submitted)."""
        if not isinstance(tool_name, str) or tool_name not in tools.TOOL_NAMES:
            if not isinstance(tool_name, str):  # never repr() arbitrary objects: unbounded size
                what = "nothing" if tool_name is None else f"a value of type {type(tool_name).__name__}"
                return ('Error: an action names one tool by its name, a string, with its arguments '
                        '({"tool": "read", "arguments": {"path": "..."}}), not ' + what
                        + f". The tools are: {', '.join(tools.TOOL_NAMES)}.", "unknown_tool", None)
            shown = repr(tool_name) if len(tool_name) <= 60 else repr(tool_name[:60]) + "..."
            return (f"Error: there is no tool {shown}. The tools are: {', '.join(tools.TOOL_NAMES)}.",
                    "unknown_tool", None)
        parsed, problem = _parse_args(args)
        if problem is None:
            problem = tools.check_arguments(tool_name, parsed)
        if problem is not None:
            return (f"Error: bad arguments for {tool_name}: {problem}. "
                    f"Call it as {tools.signature(tool_name)}.", "bad_arguments", None)
        if tool_name == "submit":
            report = self._submit()
            return (f"Your {self.task.editable} has been submitted for grading. The episode is over.",
                    None, report)
        handler = {"read": self._read, "write": self._write, "contract": self._contract_tool,
                   "run_visible": self._run_visible}[tool_name]
        text, error = handler(**parsed)
        return text, error, None

    def _result(self, observation: str, *, error: str | None = None, auto: bool = False,
                report: dict | None = None) -> dict:
        if report is not None:
            self._done = True
        if not self._done and error != "episode_over":
            observation += (f"\n\n[{self.max_steps - self._steps} tool calls and "
                            f"{self.max_sim_runs - self._sim_runs} simulation runs left]")
        return {
            "observation": observation,
            "error": error,
            "done": self._done,
            "auto_submitted": auto,
            "steps_used": self._steps,
            "steps_left": self.max_steps - self._steps,
            "sim_runs_used": self._sim_runs,
            "sim_runs_left": self.max_sim_runs - self._sim_runs,
            "reward": None if report is None else report["reward"],
            "report": report,
        }

    # ------------------------------------------------------------------ the tools

    def _refuse_path(self, path: str, verb: str, allowed: list[str]) -> str:
        shown = repr(path) if len(path) <= 80 else repr(path[:80]) + "..."
        return (f"Refused: you may not {verb} {shown}. You may {verb} only "
                f"{' and '.join(allowed)}, by exactly that name.")

    def _name_of(self, path: str) -> str:
        return path[2:] if path.startswith("./") else path

    def _read(self, path: str) -> tuple[str, str | None]:
        name = self._name_of(path)
        if name == self.task.editable:
            return self._design, None
        if name == CONTRACT_NAME:
            return self._contract, None
        return self._refuse_path(path, "read", [self.task.editable, CONTRACT_NAME]), "refused"

    def _write(self, path: str, content: str) -> tuple[str, str | None]:
        if self._name_of(path) != self.task.editable:
            return self._refuse_path(path, "write", [self.task.editable]), "refused"
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError:
            return "Refused: the content is not valid UTF-8 text (it holds unpaired surrogates).", "refused"
        if size > MAX_BYTES:
            return f"Refused: the content is {size} bytes; the limit is {MAX_BYTES} bytes.", "refused"
        if "\x00" in content:
            return "Refused: the content holds NUL characters; it must be Verilog text.", "refused"
        self._design = content
        return f"Wrote {size} bytes to {self.task.editable}.", None

    def _contract_tool(self) -> tuple[str, str | None]:
        return self._contract, None

    def _submit(self) -> dict:
        report = (self._grader or grade)(self.task, self._design, self.grade_options)
        return {**report, "rung": self.episode_rung}  # what the episode was told; the grade is the same

    def _run_visible(self) -> tuple[str, str | None]:
        if self._sim_runs >= self.max_sim_runs:
            return (f"Refused: the simulation budget ({self.max_sim_runs} runs) is spent; nothing was "
                    "simulated. You can still read, write and submit.", "budget")
        self._sim_runs += 1
        report = grade(self.task, self._design, replace(self.grade_options, hidden=0))
        return describe_visible_run(self.task, report), ("tool_error" if report["verdict"] == "tool_error"
                                                          else None)


def _parse_args(args: object) -> tuple[object, str | None]:
    if args is None or (isinstance(args, str) and not args.strip()):
        return {}, None
    if isinstance(args, str | bytes):
        try:
            return json.loads(args), None
        except (ValueError, RecursionError):
            return None, "the arguments are not valid JSON"
    return args, None


# ---------------------------------------------------------------------- run_visible's text

def scrub_host_paths(text: str, task: Task) -> str:
    """Remove scratch directories, the task folder and the package's data paths from tool output."""
    tmp = re.escape(tempfile.gettempdir().rstrip("/"))
    text = re.sub(tmp + r"/cdc-[^/\s:]*/?", "", text)
    for root in sorted({str(task.dir), str(paths.data_root())}, key=len, reverse=True):
        text = text.replace(root + "/", "").replace(root, ".")
    return text.replace(f"design/{task.editable}", task.editable)


def _clip_log(log: str) -> str:
    lines = log.strip().splitlines()
    if len(lines) > _LOG_LINES:
        lines = lines[:_LOG_LINES] + [f"... ({len(lines) - _LOG_LINES} more lines)"]
    return "\n".join(ln if len(ln) <= 300 else ln[:300] + "..." for ln in lines)


def describe_visible_run(task: Task, report: dict) -> str:
    """The model's view of a visible-seeds-only grade: nothing but the agent's own runs."""
    rep = Report.from_dict(report)
    allowlist, gate, build = rep.stage("allowlist"), rep.stage("gate"), rep.stage("build")
    try:
        sim = get_simulator(rep.simulator["name"]).title
    except (KeyError, ValueError, CdcError):
        sim = rep.simulator["name"]
    head = "run_visible: "
    if allowlist is None or allowlist.status != "pass":
        detail = allowlist.detail if allowlist else "no allowlist stage"
        return head + f"the design was not accepted: {detail}. Nothing was simulated."
    status = gate.status if gate else None
    if build is not None and build.status == "compile_error" and status == "refused":
        # The design does not compile: synthesis (slang) reported errors; nothing was simulated.
        log = _clip_log(scrub_host_paths(build.detail, task)) or "(no compiler output)"
        return f"{head}the design does not compile.\nCompiler output:\n{log}"
    if status == "refused":
        lines = [head + "the static checks refused the design; nothing was built or simulated. "
                 "A submission would be refused for the same reasons:"]
        for f in rep.findings:
            where = ":".join(str(x) for x in (f.get("file"), f.get("line")) if x)
            lines.append(f"  [{f['rule']}] {where + ' ' if where else ''}{f['message']}")
        return scrub_host_paths("\n".join(lines), task)
    if status == "tool_error":
        return head + "the static checks could not run (a tool error, not a fault of your design)."
    gate_line = {"pass": "Static checks: passed.", "not_run": "Static checks: not run."}.get(status or "", "")
    if build is not None and build.status == "compile_error":
        log = _clip_log(scrub_host_paths(build.detail, task)) or "(no compiler output)"
        return f"{head}the design does not compile ({sim}). {gate_line}\nCompiler output:\n{log}"
    if build is None or build.status != "pass":
        return head + f"the simulator could not build the design (a tool error with {sim}, not a fault " \
                      "of your design)."
    vis = report["seeds"].get("visible")
    if not vis:
        return head + "no visible seeds were run (a tool error)."
    times = {r["seed"]: r["t"] for r in vis["results"]}
    clocks = {d.name: d.clock for d in task.domains}
    skipped = vis.get("not_run", 0)
    stopped = f" {skipped} were not run: the run stopped early after the failures below." if skipped else ""
    lines = [f"{head}{vis['passed']} of {vis['count']} visible seeds pass (late settling on).{stopped} "
             f"{gate_line} Build: ok ({sim})."]
    if vis["failed"]:
        lines.append("Failing seeds:")
    for f in vis["failed"]:
        fast = clocks.get(f.get("fast", ""), "?")
        slow = next((c for n, c in clocks.items() if n != f.get("fast")), "?")
        ratio = f"{fast} is {f.get('ratio', 0):.3f}x faster than {slow}"
        if f["status"] == "fail":
            t = times.get(f["seed"], 0)
            what = f"FAIL at t={t} ps ({t / 1e6:.3f} us): {f['reason']}" if t else f"FAIL: {f['reason']}"
        elif f["status"] == "timeout":
            what = "TIMEOUT: the simulation exceeded its time limit"
        else:
            what = "TOOL ERROR: the simulator could not run this seed (not a fault of your design)"
        lines.append(f"  seed {f['seed']} ({ratio}): {what}")
    passing = [str(r["seed"]) for r in vis["results"] if r["status"] == "pass"]
    if passing:
        lines.append(f"Passing seeds: {', '.join(passing)}.")
    return scrub_host_paths("\n".join(lines), task)
