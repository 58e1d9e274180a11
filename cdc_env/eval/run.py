"""The run: controls, then every (task, rung, sample) rollout not yet finished, ``concurrency`` at a time;
metadata.json, summary.json/.md; and the progress display on stderr."""

from __future__ import annotations

import json
import platform
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .._version import __version__
from ..errors import CdcError
from ..grade import grade
from ..sim import get_simulator
from ..sim import names as sim_names
from ..sim.seeds import hidden_seeds, visible_seeds
from ..task import Task
from .client import Endpoint, EndpointError, EndpointUnavailable, api_key_for
from .grading import IN_PROCESS, Grader
from .results import Results, row_key
from .rollout import run_rollout
from .settings import OPERATIONAL, EvalSettings, redact_url, resolve_tasks
from .summary import outcome, summarize, summary_markdown

Controls = Callable[[str], tuple[bool, list[dict], str]]
Progress = Callable[[dict, int, int], None]  # (row just finished, done, total)


class ControlsFailed(CdcError):
    """The controls misbehaved: the grader cannot be trusted, so the run reports nothing."""


def default_controls(sim: str) -> tuple[bool, list[dict], str]:
    """The fixture registry's controls on ``sim``; for ``auto``, on every simulator it may choose."""
    try:
        from ..fixtures import run_controls  # noqa: PLC0415 -- the registry is another module's job
    except ImportError as exc:
        return False, [], f"the controls cannot run: cdc_env.fixtures.run_controls is missing ({exc})"
    if sim != "auto":
        return run_controls(sim=sim)
    ok, rows, messages = True, [], []
    for name in sim_names():
        one_ok, one_rows, message = run_controls(sim=name)
        ok, rows = ok and one_ok, rows + [{**r, "sim": name} for r in one_rows]
        messages.append(f"{name}: {message}")
    return ok, rows, "; ".join(messages)


def _simulator(name: str) -> dict:
    """The run's simulator for its metadata: one backend, or ``auto`` with each it may choose."""
    if name != "auto":
        sim = get_simulator(name)
        return {"name": sim.name, "version": sim.version()}
    return {"name": "auto", "versions": {n: get_simulator(n).version() for n in sim_names()}}


def _metadata(settings: EvalSettings, tasks: list[Task], controls: tuple[bool, list[dict], str]) -> dict:
    import openai  # noqa: PLC0415

    count = None if settings.hidden == "all" else settings.hidden  # EvalSettings.check decoded it
    return {
        "schema_version": 1,
        "cdc_env_version": __version__, "openai_version": openai.__version__,
        "python": platform.python_version(), "platform": platform.platform(),
        "simulator": _simulator(settings.sim),
        "endpoint": redact_url(settings.base_url), "api_key_env": settings.api_key_env,
        "settings": settings.run_key() | {k: getattr(settings, k) for k in OPERATIONAL},
        "seeds": {t.id: {"visible": list(visible_seeds(t)),
                         "hidden": hidden_seeds(t, count)}
                  for t in tasks},
        "controls": {"ok": controls[0], "message": controls[2], "count": len(controls[1]),
                     "rows": controls[1]},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def run_eval(settings: EvalSettings, out_dir: str | Path, *, resume: bool = False,
             controls: Controls | None = None, progress: Progress | None = None,
             grader: Grader | None = None, grades_on: dict | None = None,
             say: Callable[[str], None] | None = None) -> dict:
    """Controls, then every (task, rung, sample) rollout not yet finished; returns the summary.

    Raises ``EndpointUnavailable`` when the endpoint cannot be reached (checked first, before the
    controls) or refuses every request, ``ControlsFailed`` (nothing written, no model called) when
    the controls misbehave, and ``CdcError`` on bad settings or an output folder that holds another
    run. ``resume`` continues the run in ``out_dir`` with the same settings; ``samples`` may grow.

    ``grader`` grades the submissions (default ``cdc_env.grade.grade`` in this process): a backend's
    ``grade_function`` puts the one-shot grades, the agentic submit grades and the gate-off regrades
    on a local pool or a Ray cluster (docs/scale.md); ``run_visible`` and the controls stay local.
    ``grades_on`` (the backend's ``info()``) is recorded in metadata.json. ``say`` gets one line
    when the controls have passed, before any model call (the CLI prints it on stderr).
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
        old_key = EvalSettings.old_key({k: v for k, v in old.get("settings", {}).items()
                                        if k not in OPERATIONAL})
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
    if say is not None:
        say(f"controls passed on {settings.sim} before any model call: {message}")

    out.mkdir(parents=True, exist_ok=True)
    finished = results.keep_finished() if resume else []
    if not resume:
        results.path.write_text("", encoding="utf-8")
    meta = _metadata(settings, tasks, (ok, rows, message))
    meta["grades_on"] = grades_on or IN_PROCESS
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")

    done_keys = {row_key(r) for r in finished}
    todo = [(t, rung, k) for t in tasks for rung in settings.rungs for k in range(settings.samples)
            if (t.id, rung, k) not in done_keys]
    all_rows = list(finished)
    total, count = len(todo), 0
    lock = threading.Lock()

    def one(item: tuple[Task, str, int]) -> None:
        nonlocal count
        row = run_rollout(item[0], item[2], settings, endpoint, out, grader or grade, rung=item[1])
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
    """Progress on stderr: rollouts done, passes, refusals (the model's apart from the grader's),
    parse failures, errors, rate and ETA; the no-bug controls' rollouts counted apart.

    On a terminal (``tty``, default: stderr is one) a tqdm bar; elsewhere (CI, a log file) one plain
    line per finished rollout, with no carriage returns or escape codes.
    """

    KEYS = ("pass", "refused (model)", "refused (grader)", "refused_parse", "endpoint_error", "tool_error")

    def __init__(self, tty: bool | None = None) -> None:
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.tally = dict.fromkeys(self.KEYS, 0)  # defect tasks
        self.controls = {"done": 0, "pass": 0}  # no-bug controls
        self.t0 = time.monotonic()
        self.bar = None

    def _counts(self) -> str:
        t, c = self.tally, self.controls
        text = (f"pass {t['pass']}  refused: model {t['refused (model)']} grader {t['refused (grader)']}  "
                f"parse {t['refused_parse']}  errors {t['endpoint_error'] + t['tool_error']}")
        return text + (f"  | controls pass {c['pass']}/{c['done']}" if c["done"] else "")

    def __call__(self, row: dict, done: int, total: int) -> None:
        if row.get("control"):
            self.controls["done"] += 1
            self.controls["pass"] += row["label"] == "pass"
        elif outcome(row) in self.tally:
            self.tally[outcome(row)] += 1
        if self.tty:
            if self.bar is None:
                from tqdm import tqdm  # noqa: PLC0415 -- only a terminal draws a bar

                self.bar = tqdm(total=total, desc="eval", unit="rollout", file=sys.stderr, dynamic_ncols=True)
            self.bar.set_postfix_str(self._counts(), refresh=False)
            self.bar.update(done - self.bar.n)
            if done >= total:
                self.bar.close()
            return
        elapsed = time.monotonic() - self.t0
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"{(total - done) / rate:.0f} s" if rate > 0 and done < total else "-"
        rung = "" if row.get("rung", "full") == "full" else f" [{row['rung']}]"
        print(f"eval {done}/{total}  {row.get('task', '?')}{rung} s{row.get('sample', '?')}: {outcome(row)}  "
              f"{self._counts()}  {60 * rate:.1f} rollouts/min  ETA {eta}", file=sys.stderr, flush=True)
