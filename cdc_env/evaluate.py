"""Model runs: one-shot and agentic evaluation against any OpenAI-compatible Chat Completions endpoint.

``run_eval(settings, out_dir)`` first runs the controls (``cdc_env.fixtures.run_controls``: correct
fixes must pass, hacks must be caught; if one misbehaves nothing is written and no model is
called), then runs ``samples`` rollouts per task, ``concurrency`` at a time, through the official
``openai`` client, and leaves in ``out_dir``:

    results.jsonl      one row per finished rollout (``ROW_FIELDS`` and a few more)
    metadata.json      versions, seeds, settings, the endpoint without secrets, the controls
    summary.json/.md   pass rate by task and family, overfit rate, structural-validity gap,
                       unbiased pass@k, refusals, parse failures, endpoint errors
    rollouts/<task>/s<k>/trajectory.json   the conversation, each tool step, the submission and
                       the grade report(s): the evidence to re-grade without re-running the model

Two modes:
    oneshot: one request (bug report, the editable file, the timing contract, the answer format);
        the answer is read by ``parse_answer`` and graded with ``cdc_env.grade.grade``.
    agentic: the tool-calling loop over ``CdcRepairEnv``'s five tools until submit or a budget
        ends the episode. A reply without a tool call gets one reminder per episode; the next
        one without a tool call makes the harness submit the design as it stands.

Row labels: the grader's verdicts (pass, fail, overfit, compile_error, refused, timeout,
tool_error) and, from the model side, ``refused`` with ``failed_stage == "model"`` (a refusal or
content filter, the endpoint's reason kept in ``refusal``), ``refused_parse`` (one-shot: no
gradable answer; reward 0, counted on its own) and ``endpoint_error`` (the endpoint kept failing
after bounded retries; not a result: ``--resume`` runs it again). ``endpoint_error`` and
``tool_error`` rows are not results: their ``reward`` is null and every rate leaves them out,
with their count shown beside it.

Before anything else the endpoint is reached once (``Endpoint.check``): an unreachable endpoint
stops the run within seconds with one line, before the controls spend minutes.

The grader's report never enters the conversation: the model sees only ``observation`` texts.
For a submission refused by the static gate the harness also grades it with the gate off (the
simulation verdict the structural-validity gap needs); that report goes to the trajectory only.

Not covered: streaming requests, the Responses API, model-specific prompt tuning, cost in money.
"""

from __future__ import annotations

import json
import math
import platform
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ._version import __version__
from .env import CdcRepairEnv
from .errors import CdcError
from .grade import grade
from .prompts import AGENT_SYSTEM_PROMPT, REMINDER, SYSTEM_PROMPT, agent_messages, oneshot_messages
from .sim import get_simulator
from .sim.seeds import hidden_seeds, visible_seeds
from .task import Task, list_tasks, load_task

MODES = ("oneshot", "agentic")
ROW_FIELDS = ("task", "family", "mode", "model", "sample", "reward", "label", "overfit", "failed_stage",
              "findings", "tool_calls", "sim_runs", "tokens_in", "tokens_out", "wall_s", "grade_cpu_s",
              "trajectory")
OPERATIONAL = ("concurrency", "timeout_s", "retries", "backoff_s", "backoff_cap_s", "samples")
NOT_RESULTS = ("endpoint_error", "tool_error")  # rows that say nothing about the model: reward null
Controls = Callable[[str], tuple[bool, list[dict], str]]
Progress = Callable[[dict, int, int], None]  # (row just finished, done, total)

ONESHOT_SYSTEM, AGENT_SYSTEM = SYSTEM_PROMPT, AGENT_SYSTEM_PROMPT  # the names this module used to define


class ControlsFailed(CdcError):
    """The controls misbehaved: the grader cannot be trusted, so the run reports nothing."""


class EndpointUnavailable(CdcError):
    """The endpoint cannot be reached, or refuses every request: the run stops (exit status 1)."""


class EndpointError(Exception):
    """The endpoint failed in a way retries did not cure (or that retrying cannot cure).

    ``fatal``: it would fail the same way for every rollout (bad key, no such model or route), so
    the run stops instead of filling the results with errors.
    """

    def __init__(self, message: str, fatal: bool = False, retries: int = 0) -> None:
        super().__init__(message)
        self.fatal, self.retries = fatal, retries


@dataclass
class EvalSettings:
    """What a run is; everything but the ``OPERATIONAL`` settings must match for ``--resume``."""

    mode: str
    base_url: str
    model: str
    tasks: list[str]
    api_key_env: str = "OPENAI_API_KEY"
    samples: int = 1
    concurrency: int = 1
    hidden: int | str = "all"
    sim: str = "icarus"
    max_steps: int = 30
    max_sim_runs: int = 6
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 300.0
    retries: int = 4
    backoff_s: float = 2.0
    backoff_cap_s: float = 60.0

    def check(self) -> None:
        if self.mode not in MODES:
            raise CdcError(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        for name in ("samples", "concurrency", "max_steps"):
            if getattr(self, name) < 1:
                raise CdcError(f"{name.replace('_', '-')} must be 1 or more")
        if self.max_sim_runs < 0 or self.retries < 0 or self.timeout_s <= 0:
            raise CdcError("--max-sim-runs and --retries must be 0 or more, --timeout more than 0")
        if not urlsplit(self.base_url).scheme.startswith("http"):
            raise CdcError(f"--base-url must be an http(s) URL, not {redact_url(self.base_url)!r}")
        get_simulator(self.sim)

    def run_key(self) -> dict:
        """The settings that define the results (how the run is driven may change on resume)."""
        d = asdict(self)
        for name in OPERATIONAL:
            d.pop(name)
        d["base_url"] = redact_url(self.base_url)
        return d


def redact_url(url: str) -> str:
    """The URL without user info, query or fragment (where keys tend to hide)."""
    p = urlsplit(url)
    host = p.hostname or ""
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, "", ""))


def is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def resolve_tasks(names: list[str] | None) -> list[Task]:
    """Task ids or family names (``fifo``) to tasks, in order, without repeats; none means all."""
    public = list_tasks()
    if not names:
        return public
    out: dict[str, Task] = {}
    for name in names:
        family = [t for t in public if t.family == name]
        for t in family or [load_task(name)]:
            out.setdefault(t.id, t)
    return list(out.values())


# ---------------------------------------------------------------------- one-shot prompt and parser

@dataclass
class ParsedAnswer:
    text: str | None  # the submission, or None: refused_parse
    how: str  # which block was taken, or why nothing could be


_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`\n]*$")
_MODULE = re.compile(r"\bmodule\b.*?\bendmodule\b", re.S)
_DIFF_START = re.compile(r"^(--- |diff --git |@@ )", re.M)


def _blocks(text: str) -> list[tuple[str, str, bool]]:
    """Fenced blocks as (language tag, content, closed)."""
    lines = text.split("\n")
    out: list[tuple[str, str, bool]] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, tag, body = m.group(1), m.group(2).lower(), []
        i += 1
        closed = False
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                closed = True
                break
            if stripped.endswith(fence) and not stripped.startswith(fence[0]):  # "endmodule```"
                body.append(line.rstrip()[: -len(fence)])
                closed = True
                break
            body.append(line)
            i += 1
        out.append((tag, "\n".join(body) + "\n", closed))
        i += 1
    return out


def _gradable(tag: str, content: str) -> bool:
    if tag in ("diff", "patch") or _DIFF_START.match(content.lstrip()):
        return bool(content.strip())
    return _MODULE.search(content) is not None


def parse_answer(text: str | None, finish_reason: str | None = None, top: str | None = None) -> ParsedAnswer:
    """The submission in a one-shot answer, lenient about form, strict about what cannot be graded.

    Taken: the last fenced block (```, ~~~, any or no language tag) that holds a complete module
    (``module`` ... ``endmodule``) or a unified diff (the grader accepts both) -- of those, the last
    that defines ``module <top>`` when ``top`` is given and one does; a block whose closing
    fence is missing only if it still ends with ``endmodule`` and the reply was not cut off; with no
    fence at all, a reply that is nothing but Verilog (it starts like Verilog and ends with
    ``endmodule``). Anything else is ``refused_parse`` (``text`` None) with the reason.
    """
    if text is None or not text.strip():
        return ParsedAnswer(None, "the reply is empty")
    blocks = _blocks(text)
    cut = finish_reason == "length"
    candidates = []
    for n, (tag, content, closed) in enumerate(blocks, 1):
        if not _gradable(tag, content):
            continue
        if not closed and (cut or not content.rstrip().endswith("endmodule")):
            continue
        candidates.append((n, tag, content))
    if candidates:
        defines_top = [c for c in candidates if top and re.search(rf"\bmodule\s+{re.escape(top)}\b", c[2])]
        n, tag, content = (defines_top or candidates)[-1]
        return ParsedAnswer(content, f"fenced block {n} of {len(blocks)}" + (f" ({tag})" if tag else ""))
    if not blocks:
        bare = text.strip()
        starts = re.match(r"(module\b|`|//|/\*)", bare)
        if starts and bare.endswith("endmodule") and _MODULE.search(bare) and not cut:
            return ParsedAnswer(bare + "\n", "the whole reply (bare Verilog, no fence)")
        return ParsedAnswer(None, "no fenced code block" + (" (the reply was cut off)" if cut else ""))
    if cut:
        return ParsedAnswer(None, "the reply was cut off (finish_reason length) before a complete block")
    return ParsedAnswer(None, f"none of the {len(blocks)} fenced blocks holds a complete module "
                              "(module ... endmodule) or a diff")


# ---------------------------------------------------------------------- the endpoint

@dataclass
class Reply:
    message: dict  # the assistant message as it goes back into the conversation
    finish_reason: str | None
    refusal: str | None  # the endpoint's reason, when it refused or filtered
    tokens_in: int = 0
    tokens_out: int = 0


class Endpoint:
    """One Chat Completions endpoint through the official client, with bounded retries.

    Retried: 429, 408, 409, 5xx, time-outs and lost connections, up to ``retries`` times, waiting
    the server's ``Retry-After`` (capped) or an exponential backoff with jitter. A 400 whose code
    is ``content_filter`` is a refusal; any other 4xx raises ``EndpointError`` at once.
    """

    def __init__(self, settings: EvalSettings, api_key: str) -> None:
        import openai  # noqa: PLC0415 -- an optional dependency (the eval extra)

        self.openai = openai
        self.s = settings
        # a loopback endpoint (a local server, the stand-in) is never reached through a proxy
        local = {}
        if is_loopback(settings.base_url):
            local["http_client"] = openai.DefaultHttpxClient(trust_env=False)
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=api_key,
                                    timeout=settings.timeout_s, max_retries=0, **local)
        self.retries_used = 0
        self._lock = threading.Lock()

    def check(self, timeout_s: float = 5.0) -> None:
        """Reach the endpoint once (``GET /models``) before anything else runs.

        Raises ``EndpointUnavailable`` with one line when it cannot be reached, does not answer
        within ``timeout_s``, refuses the key (401/403) or fails (5xx). A 404 passes: some servers
        have no model list, and an unknown model still stops the run at its first request.
        """
        oa = self.openai
        where = redact_url(self.s.base_url)
        try:
            self.client.with_options(timeout=min(timeout_s, self.s.timeout_s), max_retries=0).models.list()
        except oa.NotFoundError:
            return
        except oa.APITimeoutError:
            raise EndpointUnavailable(f"the endpoint {where} did not answer within "
                                      f"{min(timeout_s, self.s.timeout_s):g} s; nothing was run") from None
        except oa.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            reason = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
            raise EndpointUnavailable(f"cannot reach the endpoint {where} ({reason[:160]}); "
                                      "nothing was run") from None
        except oa.APIStatusError as exc:
            status = exc.status_code
            if status in (401, 403):
                raise EndpointUnavailable(f"the endpoint {where} refuses the API key from "
                                          f"${self.s.api_key_env} (HTTP {status}); nothing was run") from None
            if status >= 500:
                raise EndpointUnavailable(f"the endpoint {where} fails (HTTP {status}: "
                                          f"{str(exc.message)[:120]}); nothing was run") from None

    def _delay(self, attempt: int, exc: Exception) -> float:
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            if header is not None:
                return min(self.s.backoff_cap_s, max(0.0, float(header)))
        except ValueError:
            pass
        return min(self.s.backoff_cap_s, self.s.backoff_s * 2 ** attempt) * random.uniform(0.5, 1.0)

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> tuple[Reply, int]:
        """(the reply, retries it took)."""
        oa = self.openai
        kw: dict = {"model": self.s.model, "messages": messages}
        if tools:
            kw["tools"] = tools
        if self.s.temperature is not None:
            kw["temperature"] = self.s.temperature
        if self.s.max_tokens is not None:
            kw["max_tokens"] = self.s.max_tokens
        retries = 0
        while True:
            try:
                resp = self.client.chat.completions.create(**kw)
                break
            except oa.BadRequestError as exc:
                if getattr(exc, "code", None) == "content_filter":
                    return Reply({"role": "assistant", "content": None}, "content_filter",
                                 f"content_filter: {exc.message}"), retries
                raise EndpointError(f"HTTP 400: {exc.message}") from None
            except (oa.RateLimitError, oa.InternalServerError, oa.APITimeoutError,
                    oa.APIConnectionError, oa.APIStatusError) as exc:
                status = getattr(exc, "status_code", None)
                retryable = status is None or status in (408, 409, 429) or status >= 500
                what = f"HTTP {status}" if status else type(exc).__name__
                if not retryable:
                    raise EndpointError(f"{what}: {getattr(exc, 'message', exc)}",
                                        fatal=status in (401, 403, 404)) from None
                if retries >= self.s.retries:
                    raise EndpointError(f"{what} after {retries} retries: "
                                        f"{getattr(exc, 'message', exc)}", retries=retries) from None
                time.sleep(self._delay(retries, exc))
                retries += 1
        with self._lock:
            self.retries_used += retries
        if not resp.choices:
            raise EndpointError("the endpoint answered with no choices")
        choice = resp.choices[0]
        msg = choice.message
        calls = [{"id": tc.id, "type": "function",
                  "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
                 for tc in (msg.tool_calls or []) if getattr(tc, "function", None) is not None]
        # null content only beside tool calls: some servers reject an empty assistant turn otherwise
        message: dict = {"role": "assistant", "content": msg.content if msg.content or calls else ""}
        if calls:
            message["tool_calls"] = calls
        refusal = getattr(msg, "refusal", None) or None
        if refusal is None and choice.finish_reason == "content_filter":
            refusal = "content_filter" + (f": {msg.content}" if msg.content else "")
        usage = resp.usage
        return Reply(message, choice.finish_reason, refusal,
                     getattr(usage, "prompt_tokens", 0) or 0 if usage else 0,
                     getattr(usage, "completion_tokens", 0) or 0 if usage else 0), retries


# ---------------------------------------------------------------------- one rollout

@dataclass
class Rollout:
    """What one rollout produced; ``row()`` is its results.jsonl line."""

    task: Task
    sample: int
    settings: EvalSettings
    messages: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    submission: str | None = None
    report: dict | None = None
    gate_off_report: dict | None = None
    label: str = "endpoint_error"
    failed_stage: str | None = None
    refusal: str | None = None
    parse: str | None = None
    error: str | None = None
    tool_calls: int = 0
    malformed_args: int = 0
    unknown_tools: int = 0
    sim_runs: int = 0
    reminders: int = 0
    harness_submitted: bool = False
    auto_submitted: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0
    wall_s: float = 0.0
    grader: Callable[..., dict] = field(default=grade, repr=False)  # local, or a backend's (scale.md)

    def ask(self, endpoint: Endpoint, tools: list[dict] | None = None) -> Reply:
        try:
            reply, retries = endpoint.chat(self.messages, tools)
        except EndpointError as exc:
            self.retries += exc.retries
            raise
        self.retries += retries
        self.tokens_in += reply.tokens_in
        self.tokens_out += reply.tokens_out
        return reply

    def refused(self, reply: Reply) -> None:
        self.messages.append(reply.message)
        self.label, self.failed_stage, self.refusal = "refused", "model", reply.refusal

    def graded(self, submission: str, report: dict) -> None:
        """Take a grade report; for a gate refusal, also grade with the gate off (for the gap)."""
        self.submission, self.report = submission, report
        self.label, self.failed_stage = report["verdict"], report["failed_stage"]
        if gate_result(report) == "refused":
            s = self.settings
            self.gate_off_report = self.grader(self.task, submission, sim=s.sim, hidden=s.hidden, gate=False)

    def row(self, out_dir: Path) -> dict:
        r = self.report
        findings = list(dict.fromkeys(f["rule"] for f in r["findings"])) if r else []
        return {
            "task": self.task.id, "family": self.task.family, "mode": self.settings.mode,
            "model": self.settings.model, "sample": self.sample,
            "reward": None if self.label in NOT_RESULTS else (r["reward"] if r else 0),
            "label": self.label, "overfit": bool(r and r["overfit"]),
            "failed_stage": self.failed_stage, "findings": findings,
            "tool_calls": self.tool_calls, "sim_runs": self.sim_runs,
            "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "wall_s": round(self.wall_s, 3),
            "grade_cpu_s": r["cpu_s"] if r else 0.0,
            "trajectory": str(self.trajectory_path(out_dir).relative_to(out_dir)),
            # beyond the required fields
            "gate": gate_result(r),
            "sim_verdict": _sim_verdict(r, self.gate_off_report),
            "gap_cpu_s": self.gate_off_report["cpu_s"] if self.gate_off_report else 0.0,
            "refusal": self.refusal, "parse": self.parse, "error": self.error,
            "malformed_args": self.malformed_args, "unknown_tools": self.unknown_tools,
            "reminders": self.reminders, "harness_submitted": self.harness_submitted,
            "auto_submitted": self.auto_submitted, "retries": self.retries,
        }

    def trajectory_path(self, out_dir: Path) -> Path:
        return out_dir / "rollouts" / self.task.id / f"s{self.sample}" / "trajectory.json"

    def save(self, out_dir: Path) -> None:
        path = self.trajectory_path(out_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"task": self.task.id, "sample": self.sample, "mode": self.settings.mode,
                "model": self.settings.model, "label": self.label, "messages": self.messages,
                "steps": self.steps, "submission": self.submission, "report": self.report,
                "gate_off_report": self.gate_off_report}
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _stage_status(report: dict, name: str) -> str | None:
    return next((s["status"] for s in report["stages"] if s["name"] == name), None)


def gate_result(report: dict | None) -> str | None:
    """The static gate's decision: ``pass``, ``refused``, ``unknown`` (it could not analyse the
    design -- a parse-only refusal -- or had a tool error), ``not_run``; None without a report or
    when an earlier stage stopped the grade."""
    if report is None:
        return None
    status = _stage_status(report, "gate")
    if status == "refused" and all(f["rule"] == "GATE-PARSE" for f in report["findings"]):
        return "unknown"
    if status == "tool_error":
        return "unknown"
    return status if status in ("pass", "refused", "not_run") else None


def _sim_verdict(report: dict | None, gate_off: dict | None) -> str | None:
    """The verdict of simulation alone: the report's own when the gate passed, else the gate-off one."""
    if report is None:
        return None
    gate = gate_result(report)
    if gate == "refused":
        return gate_off["verdict"] if gate_off else None
    return report["verdict"] if gate in ("pass", "not_run") else None


def run_oneshot(ro: Rollout, endpoint: Endpoint) -> None:
    ro.messages = oneshot_messages(ro.task)
    reply = ro.ask(endpoint)
    if reply.refusal is not None:
        return ro.refused(reply)
    ro.messages.append(reply.message)
    parsed = parse_answer(reply.message.get("content"), reply.finish_reason, ro.task.top)
    ro.parse = parsed.how
    if parsed.text is None:
        ro.label, ro.failed_stage = "refused_parse", "parse"
        return
    s = ro.settings
    ro.graded(parsed.text, ro.grader(ro.task, parsed.text, sim=s.sim, hidden=s.hidden))


def run_agentic(ro: Rollout, endpoint: Endpoint) -> None:
    s = ro.settings
    with CdcRepairEnv(ro.task, max_steps=s.max_steps, max_sim_runs=s.max_sim_runs, hidden=s.hidden,
                      sim=s.sim, grader=ro.grader) as env:
        first = env.reset()
        ro.messages = agent_messages(ro.task, s.max_steps, s.max_sim_runs)
        ro.messages[-1]["content"] = first["observation"]  # the prompt plus the budget line
        tools = env.tool_definitions()
        done: dict | None = None
        while done is None:
            reply = ro.ask(endpoint, tools)
            if reply.refusal is not None:
                return ro.refused(reply)
            ro.messages.append(reply.message)
            calls = reply.message.get("tool_calls", [])
            if not calls:
                if ro.reminders:
                    ro.harness_submitted = True
                    done = env.step("submit", {})
                    ro.steps.append(_step_log("submit (by the harness)", {}, done))
                    break
                ro.reminders += 1
                ro.messages.append({"role": "user", "content": REMINDER.format(editable=ro.task.editable)})
                continue
            for call in calls:
                name, args = call["function"]["name"], call["function"]["arguments"]
                if done is not None:  # calls after the one that ended the episode are not run
                    ro.steps.append({"tool": name, "skipped": "the episode was over"})
                    continue
                res = env.step(name, args)
                ro.tool_calls += 1
                ro.malformed_args += res["error"] == "bad_arguments"
                ro.unknown_tools += res["error"] == "unknown_tool"
                ro.messages.append({"role": "tool", "tool_call_id": call["id"],
                                    "content": res["observation"]})
                ro.steps.append(_step_log(name, args, res))
                ro.sim_runs = res["sim_runs_used"]
                if res["done"]:
                    done = res
        ro.auto_submitted = done["auto_submitted"]
        ro.graded(env.design, done["report"])


def _step_log(name: str, args: object, res: dict) -> dict:
    """A tool step for the trajectory: everything but the report (kept once, at the top)."""
    return {"tool": name, "arguments": args, **{k: v for k, v in res.items() if k != "report"}}


def run_rollout(task: Task, sample: int, settings: EvalSettings, endpoint: Endpoint, out_dir: Path,
                grader: Callable[..., dict] = grade) -> dict:
    """Run, grade and save one rollout; return its row. Endpoint failures become a row too."""
    ro = Rollout(task, sample, settings, grader=grader)
    t0 = time.monotonic()
    try:
        (run_oneshot if settings.mode == "oneshot" else run_agentic)(ro, endpoint)
    except EndpointError as exc:
        if exc.fatal:
            raise
        ro.label, ro.failed_stage, ro.error = "endpoint_error", "endpoint", str(exc)
    ro.wall_s = time.monotonic() - t0
    ro.save(out_dir)
    return ro.row(out_dir)


# ---------------------------------------------------------------------- results and summary

class Results:
    """results.jsonl: append-only, one row per (task, sample); ``--resume`` keeps what finished."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / "results.jsonl"
        self._lock = threading.Lock()

    def load(self) -> list[dict]:
        if not self.path.is_file():
            return []
        rows = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut short by an interrupted run
            if isinstance(row, dict) and "task" in row and "sample" in row:
                rows.append(row)
        return rows

    def keep_finished(self) -> list[dict]:
        """Rewrite the file with one row per rollout, dropping endpoint errors (they run again)."""
        kept: dict[tuple, dict] = {}
        for row in self.load():
            if row["label"] != "endpoint_error":
                kept.setdefault((row["task"], row["sample"]), row)
        rows = list(kept.values())
        self.path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return rows

    def append(self, row: dict) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _counts(rows: list[dict]) -> dict:
    decided = [r for r in rows if r["label"] not in NOT_RESULTS]
    n = len(decided)
    passed = sum(r["label"] == "pass" for r in decided)
    overfit = sum(r["label"] == "overfit" for r in decided)
    rewards = [r["reward"] for r in decided if isinstance(r.get("reward"), int | float)]
    return {"rollouts": len(rows), "decided": n, "not_results": len(rows) - n, "pass": passed,
            "pass_rate": round(passed / n, 4) if n else None,
            "mean_reward": round(sum(rewards) / len(rewards), 4) if rewards else None, "overfit": overfit,
            "overfit_rate": round(overfit / n, 4) if n else None,
            "fail": sum(r["label"] in ("fail", "timeout") for r in rows),
            "compile_error": sum(r["label"] == "compile_error" for r in rows),
            "refused_model": sum(r["label"] == "refused" and r["failed_stage"] == "model" for r in rows),
            "refused_parse": sum(r["label"] == "refused_parse" for r in rows),
            "refused_gate": sum(r["label"] == "refused" and r["failed_stage"] in ("gate", "allowlist")
                                for r in rows),
            "tool_error": sum(r["label"] == "tool_error" for r in rows),
            "endpoint_error": sum(r["label"] == "endpoint_error" for r in rows)}


def summarize(rows: list[dict], samples: int) -> dict:
    """The run's summary (see the module docstring); pure function of the rows."""
    by_task: dict[str, list[dict]] = {}
    by_family: dict[str, list[dict]] = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(r)
        by_family.setdefault(r["family"], []).append(r)
    # Structural-validity gap: among submissions whose simulation passed and whose gate result is
    # decided (pass or refused), the share the gate refused. Unknowns never count.
    sim_pass = [r for r in rows if r.get("sim_verdict") == "pass" and r.get("gate") in ("pass", "refused")]
    gate_refused = sum(r["gate"] == "refused" for r in sim_pass)
    ks = [k for k in (1, 2, 5, 10, 20, 50, 100) if k <= samples] or [1]
    pass_k = {}
    for k in ks:
        per_task = []
        for task_rows in by_task.values():
            decided = [r for r in task_rows if r["label"] not in NOT_RESULTS]
            if len(decided) >= k:
                per_task.append(pass_at_k(len(decided), sum(r["label"] == "pass" for r in decided), k))
        pass_k[f"pass@{k}"] = round(sum(per_task) / len(per_task), 4) if per_task else None
    return {
        "overall": _counts(rows),
        "by_task": {t: {"family": rs[0]["family"], **_counts(rs)} for t, rs in sorted(by_task.items())},
        "by_family": {f: _counts(rs) for f, rs in sorted(by_family.items())},
        "structural_gap": {"sim_pass_gate_decided": len(sim_pass), "gate_refused": gate_refused,
                           "rate": round(gate_refused / len(sim_pass), 4) if sim_pass else None},
        "pass_at_k": pass_k,
        "tokens_in": sum(r["tokens_in"] for r in rows), "tokens_out": sum(r["tokens_out"] for r in rows),
        "grade_cpu_s": round(sum(r["grade_cpu_s"] + r.get("gap_cpu_s", 0.0) for r in rows), 3),
        "malformed_args": sum(r.get("malformed_args", 0) for r in rows),
        "retries": sum(r.get("retries", 0) for r in rows),
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def summary_markdown(summary: dict, title: str = "") -> str:
    """The summary as Markdown tables (what the CLI prints and summary.md holds)."""
    head = ("| {} | rollouts | pass | pass rate | fail | overfit | compile_error | refused (grader) "
            "| refused (model) | refused_parse | tool_error | endpoint_error |")
    lines = [f"### {title}", ""] if title else []

    def table(name: str, groups: dict) -> None:
        lines.append(head.format(name))
        lines.append("|---" * 12 + "|")
        for key, c in groups.items():
            lines.append(f"| {key} | {c['rollouts']} | {c['pass']} | {_pct(c['pass_rate'])} | {c['fail']} "
                         f"| {c['overfit']} | {c['compile_error']} | {c['refused_gate']} "
                         f"| {c['refused_model']} | {c['refused_parse']} "
                         f"| {c['tool_error']} | {c['endpoint_error']} |")

    table("task", summary["by_task"])
    lines.append("")
    table("family", {**summary["by_family"], "**all**": summary["overall"]})
    o, gap = summary["overall"], summary["structural_gap"]
    lines += ["",
              f"- pass rate {_pct(o['pass_rate'])} of {o['decided']} decided rollouts "
              f"({o['not_results']} not results -- {o['endpoint_error']} endpoint_error, "
              f"{o['tool_error']} tool_error -- have reward null and are left out of every rate); "
              + ", ".join(f"{k} {_pct(v)}" for k, v in summary["pass_at_k"].items())
              + " (unbiased, per task, averaged over tasks)",
              f"- overfit rate {_pct(o['overfit_rate'])} (visible seeds pass, hidden fail)",
              f"- structural-validity gap {_pct(gap['rate'])}: {gap['gate_refused']} of "
              f"{gap['sim_pass_gate_decided']} submissions that pass simulation are refused by the "
              "static gate",
              f"- refusals {o['refused_model']}, parse failures {o['refused_parse']}, malformed tool "
              f"arguments {summary['malformed_args']}, endpoint retries {summary['retries']}, "
              f"endpoint errors {o['endpoint_error']} (not results; --resume runs them again)",
              f"- tokens in/out {summary['tokens_in']}/{summary['tokens_out']}, grading "
              f"{summary['grade_cpu_s']} CPU-s"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- the run

def default_controls(sim: str) -> tuple[bool, list[dict], str]:
    try:
        from .fixtures import run_controls  # noqa: PLC0415 -- the registry is another module's job
    except ImportError as exc:
        return False, [], f"the controls cannot run: cdc_env.fixtures.run_controls is missing ({exc})"
    return run_controls(sim=sim)


def api_key_for(settings: EvalSettings) -> str:
    """The API key from the environment variable named by ``api_key_env`` (never from argv or a file).

    A loopback endpoint (a local server, the stand-in) may run without one.
    """
    import os  # noqa: PLC0415

    key = os.environ.get(settings.api_key_env, "")
    if key:
        return key
    if is_loopback(settings.base_url):
        return "no-key"
    raise CdcError(f"no API key: set the environment variable {settings.api_key_env} "
                   "(or name another with --api-key-env)")


def _metadata(settings: EvalSettings, tasks: list[Task], controls: tuple[bool, list[dict], str]) -> dict:
    import openai  # noqa: PLC0415

    sim = get_simulator(settings.sim)
    n_hidden = None if settings.hidden == "all" else int(settings.hidden)
    return {
        "schema_version": 1,
        "cdc_env_version": __version__, "openai_version": openai.__version__,
        "python": platform.python_version(), "platform": platform.platform(),
        "simulator": {"name": sim.name, "version": sim.version()},
        "endpoint": redact_url(settings.base_url), "api_key_env": settings.api_key_env,
        "settings": settings.run_key() | {k: getattr(settings, k) for k in OPERATIONAL},
        "seeds": {t.id: {"visible": list(visible_seeds(t)),
                         "hidden": list(hidden_seeds(t, n_hidden)) if settings.hidden else []}
                  for t in tasks},
        "controls": {"ok": controls[0], "message": controls[2], "count": len(controls[1]),
                     "rows": controls[1]},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def run_eval(settings: EvalSettings, out_dir: str | Path, *, resume: bool = False,
             controls: Controls | None = None, progress: Progress | None = None,
             grader: Callable[..., dict] | None = None, grades_on: dict | None = None) -> dict:
    """Controls, then every (task, sample) rollout not yet finished; returns the summary.

    Raises ``EndpointUnavailable`` when the endpoint cannot be reached (checked first, before the
    controls) or refuses every request, ``ControlsFailed`` (nothing written, no model called) when
    the controls misbehave, and ``CdcError`` on bad settings or an output folder that holds another
    run. ``resume`` continues the run in ``out_dir`` with the same settings; ``samples`` may grow.

    ``grader`` grades the submissions (default ``cdc_env.grade.grade`` in this process): a backend's
    ``grade_function`` puts the one-shot grades, the agentic submit grades and the gate-off regrades
    on a local pool or a Ray cluster (docs/scale.md); ``run_visible`` and the controls stay local.
    ``grades_on`` (the backend's ``info()``) is recorded in metadata.json.
    """
    settings.check()
    tasks = resolve_tasks(settings.tasks)
    settings.tasks = [t.id for t in tasks]
    api_key = api_key_for(settings)
    out = Path(out_dir)
    results = Results(out)
    meta_path = out / "metadata.json"
    if results.path.is_file() and results.load():
        if not resume:
            raise CdcError(f"{out} already holds results; pass --resume to continue that run, "
                           "or choose another --out")
        old = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        old_key = {k: v for k, v in old.get("settings", {}).items() if k not in OPERATIONAL}
        if old_key != settings.run_key():
            changed = sorted(k for k in set(old_key) | set(settings.run_key())
                             if old_key.get(k) != settings.run_key().get(k))
            raise CdcError(f"{out} holds a run with other settings ({', '.join(changed)}); "
                           "--resume needs the same ones")
        old_samples = old.get("settings", {}).get("samples", settings.samples)
        if settings.samples < old_samples:
            raise CdcError(f"{out} holds a run of {old_samples} samples per task; --resume can add samples "
                           f"(--samples {old_samples} or more), not drop them")

    endpoint = Endpoint(settings, api_key)
    endpoint.check()  # before the controls: an unreachable endpoint fails in seconds, not minutes
    ok, rows, message = (controls or default_controls)(settings.sim)
    if not ok:
        raise ControlsFailed(f"the controls failed; no model was called and nothing was written. "
                             f"{message}")

    out.mkdir(parents=True, exist_ok=True)
    finished = results.keep_finished() if resume else []
    if not resume:
        results.path.write_text("", encoding="utf-8")
    meta = _metadata(settings, tasks, (ok, rows, message))
    meta["grades_on"] = grades_on or {"backend": "in-process"}
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")

    done_keys = {(r["task"], r["sample"]) for r in finished}
    todo = [(t, k) for t in tasks for k in range(settings.samples) if (t.id, k) not in done_keys]
    all_rows = list(finished)
    total, count = len(todo), 0
    lock = threading.Lock()

    def one(item: tuple[Task, int]) -> None:
        nonlocal count
        row = run_rollout(item[0], item[1], settings, endpoint, out, grader or grade)
        results.append(row)
        with lock:
            all_rows.append(row)
            count += 1
            if progress:
                progress(row, count, total)

    with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        futures = [pool.submit(one, item) for item in todo]
        try:
            for fut in futures:
                fut.result()
        except BaseException as exc:  # a fatal endpoint error, Ctrl-C: start nothing more
            for f in futures:
                f.cancel()
            if isinstance(exc, EndpointError):
                raise EndpointUnavailable(f"the endpoint refuses every request, run stopped: {exc}") from None
            raise

    summary = summarize(all_rows, settings.samples)
    summary["samples"] = settings.samples
    summary["resumed_rows"] = len(finished)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(summary, f"{settings.mode} -- {settings.model}"),
                                    encoding="utf-8")
    return summary


class ProgressBar:
    """Progress on stderr: rollouts done, passes, refusals, parse failures, errors, rate and ETA.

    On a terminal (``tty``, default: stderr is one) a tqdm bar; elsewhere (CI, a log file) one plain
    line per finished rollout, with no carriage returns or escape codes.
    """

    def __init__(self, tty: bool | None = None) -> None:
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.tally = {"pass": 0, "refused": 0, "refused_parse": 0, "endpoint_error": 0, "tool_error": 0}
        self.t0 = time.monotonic()
        self.bar = None

    def _counts(self) -> str:
        t = self.tally
        return (f"pass {t['pass']}  refused {t['refused']}  parse {t['refused_parse']}  "
                f"errors {t['endpoint_error'] + t['tool_error']}")

    def __call__(self, row: dict, done: int, total: int) -> None:
        if row["label"] in self.tally:
            self.tally[row["label"]] += 1
        if self.tty:
            if self.bar is None:
                from tqdm import tqdm  # noqa: PLC0415 -- the eval extra

                self.bar = tqdm(total=total, desc="eval", unit="rollout", file=sys.stderr, dynamic_ncols=True)
            self.bar.set_postfix_str(self._counts(), refresh=False)
            self.bar.update(done - self.bar.n)
            if done >= total:
                self.bar.close()
            return
        elapsed = time.monotonic() - self.t0
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"{(total - done) / rate:.0f} s" if rate > 0 and done < total else "-"
        print(f"eval {done}/{total}  {row.get('task', '?')} s{row.get('sample', '?')}: {row['label']}  "
              f"{self._counts()}  {60 * rate:.1f} rollouts/min  ETA {eta}", file=sys.stderr, flush=True)
