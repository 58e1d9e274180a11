"""``cdc-env grade-batch``: grade a predictions file on a backend (backends.py), SWE-bench style.

Input: JSON Lines, one prediction a line::

    {"id": "p1", "task": "handshake", "submission": "<file text or unified diff>",
     "sim": "icarus", "hidden": 32}          # sim and hidden optional (the command's defaults)

An optional ``meta`` field (any JSON) is carried for the caller and ignored; any other field is a
bad line (a misspelt ``hiden`` must not silently grade with the default).

SWE-bench predictions are accepted as they are (``swebench_fields``)::

    {"instance_id": "handshake__run7", "model_name_or_path": "my-model", "model_patch": "<diff>"}

``instance_id`` is the ``id`` and ``model_patch`` the ``submission`` (``null``: the empty patch,
graded and unresolved, as SWE-bench counts it). The task is the line's ``task`` field, else the
part of ``instance_id`` before the first ``__`` (``handshake__run7`` -> ``handshake``; an
``instance_id`` that is a task's name is that task; any other prefix is an unknown task).
``model_name_or_path`` is written into each result row and the summary counts verdicts per model
(``by_model``); it is the graded line's, never a bad or duplicate line's. A ``model_patch`` diff
may be off by up to ``submission.MAX_OFFSET`` lines per hunk, never fuzzed; the report's allowlist
stage records any offset. SWE-bench's ``preds.json`` -- a JSON list of such objects (or an object
of them keyed by ``instance_id``, in a ``.json`` file) -- is read as if each were a line; a bad
"line" is then the item's number.

Output folder:

    results.jsonl   one grade report per line (the report of schemas/report.schema.json with
                    ``id`` first), appended as each grade finishes, in finishing order
    errors.jsonl    one line per bad input line (line number, id if any, reason); never fatal
    run.json        the run's settings (input file and its SHA-256, defaults); ``--resume`` checks them
    summary.json    counts by verdict, failed stage and task, overfit count, CPU-s total and per
                    grade, wall time, throughput, the backend and its node checks; SWE-bench's
                    ``resolved_ids`` (pass), ``unresolved_ids`` (every other verdict but
                    tool_error) and ``error_ids`` (tool_error, not graded, or a bad line's id),
                    and the ``run_id`` if one was given
    summary.md      the same as Markdown

``--resume`` keeps every result already in results.jsonl and grades only the ids not there. Rows
that are not results (``batch_error``: the grade could not be made, e.g. a worker died more than
the retry budget) are dropped and graded again, and so are stale ones: a result whose task or
submission SHA-256 differs from its id's line now (``summary.json``: ``stale_regraded``). Each
id is recorded at most once. A line that cannot be parsed (not JSON, an integer over 4,300
digits, nesting too deep) or whose id, task, submission or model name is not Unicode text (a lone
surrogate such as ``"\ud800"``) is a bad line like any other: nothing else is lost.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .backends import Backend, GradeJob, sims
from .errors import CdcError
from .sim.seeds import parse_hidden

MAX_SUBMISSION = 256 << 10
VERDICTS = ("pass", "fail", "overfit", "compile_error", "refused", "timeout", "tool_error")
TIMING_FIELDS = ("cpu_s", "wall_s", "peak_rss_kb")


@dataclass
class BadLine:
    line: int
    reason: str
    id: object = None

    def row(self) -> dict:
        return {"line": self.line, "id": self.id, "reason": self.reason}


SWEBENCH_FIELDS = {"instance_id": "id", "model_patch": "submission"}
MODEL_FIELD = "model_name_or_path"


def swebench_fields(obj: dict, known_tasks: set[str]) -> dict:
    """A SWE-bench prediction's fields as ours (``instance_id`` -> ``id``, ``model_patch`` ->
    ``submission``, the task from ``task`` or the ``instance_id`` prefix before ``__``); a line
    already in our fields is returned unchanged. ValueError when both spellings of a field are given."""
    if not any(k in obj for k in SWEBENCH_FIELDS):
        return obj
    out = dict(obj)
    for theirs, ours in SWEBENCH_FIELDS.items():
        if theirs in out:
            if ours in out:
                raise ValueError(f"both {theirs} and {ours} given (one names the other)")
            out[ours] = out.pop(theirs)
    if "model_patch" in obj and obj["model_patch"] is None:
        out["submission"] = ""  # SWE-bench: a null patch is the empty patch (graded, unresolved)
    iid = out.get("id")
    if "task" not in out and isinstance(iid, str):
        prefix = iid if iid in known_tasks else iid.split("__", 1)[0]
        if prefix not in known_tasks:
            raise ValueError(f"unknown task {prefix[:80]!r} (from instance_id {iid[:80]!r}: "
                             "'<task>__<name>', or give a task field)")
        out["task"] = prefix
    return out


def _not_text(value: object) -> bool:
    """A JSON string that is not Unicode text: it holds a lone surrogate (``"\ud800"``), which
    cannot be encoded, hashed or written."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def line_model(raw: str) -> str | None:
    """The line's ``model_name_or_path`` (a string), else None."""
    try:
        obj = loads_line(raw)
    except ValueError:
        return None
    model = obj.get(MODEL_FIELD) if isinstance(obj, dict) else None
    return model[:200] if isinstance(model, str) and model else None


def read_models(path: Path, known_tasks: set[str], *, sim: str = "icarus",
                hidden: int | str = "all") -> dict[str, str]:
    """{str(id): model_name_or_path} of the lines that are graded (the first good line of an id):
    a bad line or a later duplicate never names the model its id's result is credited to."""
    models: dict[str, str] = {}
    for raw, item in _iter_items(path, sim=sim, hidden=hidden, known_tasks=known_tasks):
        if isinstance(item, GradeJob) and MODEL_FIELD in raw and (model := line_model(raw)):
            models[str(item.id)] = model
    return models


def by_model(results: list[dict]) -> dict[str, dict]:
    """Verdict counts and pass rate per ``model_name_or_path`` (rows without one are left out)."""
    counts: dict[str, Counter] = {}
    for r in results:
        if r.get(MODEL_FIELD):
            counts.setdefault(r[MODEL_FIELD], Counter())[r["verdict"]] += 1
    return {m: {"graded": sum(c.values()), "pass": c.get("pass", 0),
                "pass_rate": round(c.get("pass", 0) / sum(c.values()), 4), **dict(sorted(c.items()))}
            for m, c in sorted(counts.items())}


def loads_line(raw: str) -> object:
    """json.loads for one line of input, with every way it can fail as a one-line ValueError:
    not JSON, an integer beyond Python's digit limit (4,300), nesting too deep to parse."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise ValueError(f"not usable JSON ({str(exc).splitlines()[0][:120]})") from None


def parse_line(raw: str, lineno: int, *, sim: str, hidden: int | str, known_tasks: set[str]) -> GradeJob:
    """One predictions line -> a GradeJob; ValueError with a one-line reason if it is not one."""
    obj = loads_line(raw)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    obj = swebench_fields(obj, known_tasks)
    if MODEL_FIELD in obj and not isinstance(obj[MODEL_FIELD], str):
        raise ValueError(f"{MODEL_FIELD} must be a string")
    broken = sorted(str(k)[:40].encode("utf-8", "backslashreplace").decode() for k, v in obj.items()
                    if _not_text(k) or _not_text(v))
    if broken:
        raise ValueError(f"{', '.join(broken)[:120]}: not Unicode text (a lone surrogate such as \\ud800)")
    missing = [k for k in ("id", "task", "submission") if k not in obj]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    pid = obj["id"]
    if isinstance(pid, bool) or not isinstance(pid, (str, int)) or pid == "":
        raise ValueError("id must be a non-empty string or an integer")
    if not isinstance(obj["task"], str) or obj["task"] not in known_tasks:
        raise ValueError(f"unknown task {str(obj['task'])[:80]!r}")
    sub = obj["submission"]
    if not isinstance(sub, str):
        raise ValueError("submission must be a string (the file's text or a unified diff)")
    if len(sub.encode("utf-8", "replace")) > MAX_SUBMISSION:
        raise ValueError(f"submission is larger than {MAX_SUBMISSION >> 10} KiB")
    line_sim = obj.get("sim", sim)
    if line_sim not in sims():
        raise ValueError(f"sim must be one of {', '.join(sims())}, not {str(line_sim)[:40]!r}")
    line_hidden = parse_hidden(obj.get("hidden", hidden))
    unknown = set(obj) - {"id", "task", "submission", "sim", "hidden", "meta", MODEL_FIELD}
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))[:120]}")
    return GradeJob(id=pid, task=obj["task"], submission=sub, sim=line_sim, hidden=line_hidden)


def _check_hidden(job: GradeJob) -> None:
    """The line's ``hidden`` against its task's hidden-seed count (``seeds.hidden_for``, the check
    grade() makes): a ValueError here makes the line a bad line instead of a failed grade."""
    from .sim.seeds import hidden_for  # noqa: PLC0415

    hidden_for(_task(job.task), job.hidden)


@lru_cache(maxsize=256)
def _task(task_id: str) -> object:
    from .task import load_task  # noqa: PLC0415

    return load_task(task_id)


def iter_predictions(path: Path, *, sim: str, hidden: int | str,
                     known_tasks: set[str]) -> Iterator[GradeJob | BadLine]:
    """Each non-blank line in file order: a GradeJob, or a BadLine (a later line with an id seen
    before is a bad line; the first one is graded). Streams: memory holds the ids only."""
    for _raw, item in _iter_items(path, sim=sim, hidden=hidden, known_tasks=known_tasks):
        yield item


def _raw_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line; for a JSON-list file (SWE-bench's preds.json,
    first character ``[``, or a ``.json`` object keyed by instance_id), (item number, the item's
    JSON text). CdcError when such a file is not JSON."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith("[") or (path.suffix == ".json" and head.startswith("{")):
        try:
            whole = loads_line(Path(path).read_text(encoding="utf-8", errors="replace"))
        except ValueError as exc:
            raise CdcError(f"{path} is a JSON predictions file but {exc}") from None
        if isinstance(whole, dict):
            whole = list(whole.values())
        if not isinstance(whole, list):
            raise CdcError(f"{path}: a JSON predictions file is a list of predictions")
        for n, item in enumerate(whole, 1):
            yield n, json.dumps(item)
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip():
                yield lineno, raw


def _iter_items(path: Path, *, sim: str, hidden: int | str,
                known_tasks: set[str]) -> Iterator[tuple[str, GradeJob | BadLine]]:
    """``iter_predictions`` with each item's raw line."""
    seen: set[str] = set()
    for lineno, raw in _raw_lines(path):
        try:
            job = parse_line(raw, lineno, sim=sim, hidden=hidden, known_tasks=known_tasks)
            _check_hidden(job)
        except ValueError as exc:
            pid = None
            try:
                obj = loads_line(raw)
                pid = obj.get("id", obj.get("instance_id")) if isinstance(obj, dict) else None
            except ValueError:
                pass
            ok = isinstance(pid, (str, int)) and not _not_text(pid)
            yield raw, BadLine(lineno, str(exc), pid if ok else None)
            continue
        key = str(job.id)
        if key in seen:
            yield raw, BadLine(lineno, f"duplicate id {key[:80]!r} (the first one is graded)", job.id)
            continue
        seen.add(key)
        yield raw, job


def read_predictions(path: Path, *, sim: str, hidden: int | str,
                     known_tasks: set[str]) -> tuple[list[GradeJob], list[BadLine]]:
    """All good jobs in file order and every bad line (``iter_predictions`` into two lists)."""
    jobs: list[GradeJob] = []
    bad: list[BadLine] = []
    for item in iter_predictions(path, sim=sim, hidden=hidden, known_tasks=known_tasks):
        (bad if isinstance(item, BadLine) else jobs).append(item)  # type: ignore[arg-type]
    return jobs, bad


COMPACT = ("id", "task", "verdict", "failed_stage", "overfit", "cpu_s", "batch_error", MODEL_FIELD)


def compact(row: dict) -> dict:
    """What the summary needs of a result row (a full report can be tens of kB)."""
    return {k: row[k] for k in COMPACT if k in row}


def submission_key(job: GradeJob) -> tuple[str, str]:
    """What a kept result must have been graded on: (task, SHA-256 of the submission), as the
    report records them (``task``, ``submission_sha256``)."""
    return job.task, hashlib.sha256(job.submission.encode("utf-8")).hexdigest()


def _is_current(row: dict, expected: tuple[str, str]) -> bool:
    """Whether a result row was graded on this line's task and exact submission (a row without
    the hash, e.g. from an older version, is not)."""
    return (row.get("task"), row.get("submission_sha256")) == expected


def keep_results(path: Path, wanted: set[str], expect: dict[str, tuple[str, str]] | None = None,
                 stale: list[str] | None = None) -> dict[str, dict]:
    """Rewrite results.jsonl in place with the first result of each wanted id (dropping torn lines,
    ``batch_error`` rows and ids no longer in the input); return {str(id): compact row}.

    expect: id -> ``submission_key`` of its line now; a result graded on another task or
    submission is stale: dropped (so it is graded again) and its id appended to ``stale``."""
    kept: dict[str, dict] = {}
    if not path.is_file():
        return kept
    tmp = path.with_suffix(".jsonl.tmp")
    with open(path, encoding="utf-8", errors="replace") as src, open(tmp, "w", encoding="utf-8") as dst:
        for raw in src:
            try:
                row = loads_line(raw)
            except ValueError:
                continue
            if not isinstance(row, dict) or "id" not in row or row.get("batch_error"):
                continue
            key = str(row["id"])
            if key in wanted and key not in kept and expect is not None and not _is_current(row, expect[key]):
                if stale is not None and key not in stale:
                    stale.append(key)
                continue
            if key in wanted and key not in kept:
                kept[key] = compact(row)
                dst.write(raw if raw.endswith("\n") else raw + "\n")
    os.replace(tmp, path)
    return kept


def load_results(path: Path) -> dict[str, dict]:
    """results.jsonl -> {str(id): row}; unreadable lines (a torn last line) are ignored, the first
    row of an id wins, rows with ``batch_error`` are not results."""
    out: dict[str, dict] = {}
    if not path.is_file():
        return out
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            try:
                row = loads_line(raw)
            except ValueError:
                continue
            if isinstance(row, dict) and "id" in row and not row.get("batch_error"):
                out.setdefault(str(row["id"]), row)
    return out


def strip_timing(row: dict) -> dict:
    """A result without its timing fields (what must match between backends and reruns)."""
    if isinstance(row, dict):
        return {k: strip_timing(v) for k, v in row.items() if k not in TIMING_FIELDS}
    if isinstance(row, list):
        return [strip_timing(v) for v in row]
    return row


def compare_results(a: Path, b: Path) -> list[str]:
    """Differences between two results folders, timing fields aside (empty: identical)."""
    ra, rb = load_results(Path(a) / "results.jsonl"), load_results(Path(b) / "results.jsonl")
    diffs = [f"{k}: only in {a}" for k in sorted(ra.keys() - rb.keys())]
    diffs += [f"{k}: only in {b}" for k in sorted(rb.keys() - ra.keys())]
    for k in sorted(ra.keys() & rb.keys()):
        x, y = strip_timing(ra[k]), strip_timing(rb[k])
        if x != y:
            keys = sorted(f for f in set(x) | set(y) if x.get(f) != y.get(f))
            diffs.append(f"{k}: differs in {', '.join(keys)}")
    return diffs


# ---------------------------------------------------------------------- progress

class ProgressLine:
    """Done/total, rate and ETA: a tqdm bar on a terminal, else a plain line every ``every_s``
    seconds and at the end (clean in a log file: no carriage returns)."""

    def __init__(self, total: int, *, enabled: bool = True, tty: bool | None = None,
                 every_s: float = 10.0, stream=None) -> None:
        self.total, self.enabled, self.every_s = total, enabled, every_s
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done, self.t0, self.last = 0, time.monotonic(), 0.0
        self.tally: Counter = Counter()
        self._bar = None
        if enabled and self.tty:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc="grading", unit="grade", file=self.stream, dynamic_ncols=True)

    def rate(self) -> float:
        dt = time.monotonic() - self.t0
        return self.done / dt if dt > 0 else 0.0

    def eta_s(self) -> float | None:
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else None

    def text(self) -> str:
        eta = self.eta_s()
        eta_txt = "-" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
        pct = 100 * self.done / self.total if self.total else 100.0
        tally = " ".join(f"{k} {v}" for k, v in sorted(self.tally.items()))
        return (f"graded {self.done}/{self.total} ({pct:.0f}%)  {self.rate() * 60:.1f}/min  "
                f"ETA {eta_txt}  [{tally}]")

    def update(self, verdict: str) -> None:
        self.done += 1
        self.tally[verdict] += 1
        if not self.enabled:
            return
        if self._bar is not None:
            tally = " ".join(f"{k} {v}" for k, v in sorted(self.tally.items()))
            self._bar.set_postfix_str(tally, refresh=False)
            self._bar.update(1)
            return
        now = time.monotonic()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            print(self.text(), file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# ---------------------------------------------------------------------- running

def grade_many(backend: Backend, jobs: Iterable[GradeJob], *, window: int | None = None
               ) -> Iterator[tuple[GradeJob, dict]]:
    """Grade ``jobs`` on ``backend``; yield (job, row) in finishing order. At most ``window`` grades
    are in flight (default twice the backend's slots), so a million-line file is never all queued.
    The backend must be started. Rows with ``batch_error`` are failures to grade, not verdicts."""
    window = window or max(2, 2 * backend.slots)
    pending: dict[cf.Future, GradeJob] = {}
    it = iter(jobs)
    exhausted = False
    while True:
        while not exhausted and len(pending) < window:
            try:
                job = next(it)
            except StopIteration:
                exhausted = True
                break
            pending[backend.submit(job)] = job
        if not pending:
            return
        finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
        for fut in finished:
            job = pending.pop(fut)
            yield job, fut.result()


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def summarize(rows: list[dict], *, bad_lines: int = 0, wall_s: float | None = None,
              backend: dict | None = None, nodes: list[dict] | None = None, resumed: int = 0,
              total_lines: int | None = None, bad_ids: list | None = None) -> dict:
    """The run's summary; a pure function of the result rows (plus the run facts given).

    SWE-bench's id lists: ``resolved_ids`` (pass), ``unresolved_ids`` (any other verdict except
    tool_error, which is never a pass or a fail), ``error_ids`` (tool_error, a grade that could not
    be made, and the ids of bad lines), each sorted as text."""
    results = [r for r in rows if not r.get("batch_error")]
    errors = [r for r in rows if r.get("batch_error")]
    by_verdict = Counter(r["verdict"] for r in results)
    by_stage = Counter(r.get("failed_stage") or "none (pass)" for r in results)
    by_task: dict[str, Counter] = {}
    for r in results:
        by_task.setdefault(r["task"], Counter())[r["verdict"]] += 1
    cpu = [float(r.get("cpu_s") or 0.0) for r in results]
    total_cpu = sum(cpu)
    out = {
        "graded": len(results),
        "not_graded": len(errors),
        "bad_lines": bad_lines,
        "resumed": resumed,
        "by_verdict": {v: by_verdict.get(v, 0) for v in VERDICTS if by_verdict.get(v)},
        "by_failed_stage": dict(sorted(by_stage.items())),
        "by_task": {t: {"graded": sum(c.values()), "pass": c.get("pass", 0),
                        "pass_rate": round(c.get("pass", 0) / sum(c.values()), 4), **dict(sorted(c.items()))}
                    for t, c in sorted(by_task.items())},
        "pass": by_verdict.get("pass", 0),
        "pass_rate": round(by_verdict.get("pass", 0) / len(results), 4) if results else None,
        "overfit": sum(bool(r.get("overfit")) for r in results),
        "cpu_s": {"total": round(total_cpu, 3),
                  "per_grade_mean": round(total_cpu / len(cpu), 4) if cpu else None,
                  "per_grade_median": round(statistics.median(cpu), 4) if cpu else None,
                  "per_grade_max": round(max(cpu), 4) if cpu else None},
    }
    if models := by_model(results):
        out["by_model"] = models
    out["resolved_ids"] = sorted((r["id"] for r in results if r["verdict"] == "pass"), key=str)
    out["unresolved_ids"] = sorted((r["id"] for r in results if r["verdict"] not in ("pass", "tool_error")),
                                   key=str)
    errored = [r["id"] for r in results if r["verdict"] == "tool_error"] + [r["id"] for r in errors]
    graded_ids = {str(r["id"]) for r in rows}  # a duplicate line's id has its first line's result
    errored += [i for i in bad_ids or [] if i is not None and str(i) not in graded_ids]
    out["error_ids"] = sorted(dict.fromkeys(errored), key=str)
    if total_lines is not None:
        out["lines"] = total_lines
    if wall_s is not None:
        graded_now = len(results) - resumed
        out["wall_s"] = round(wall_s, 3)
        out["grades_per_hour_wall"] = round(3600 * graded_now / wall_s, 1) if wall_s > 0 else None
    if backend is not None:
        out["backend"] = backend
    if nodes is not None:
        out["nodes"] = [{k: n.get(k) for k in ("host", "address", "node_id", "cpus", "ok", "problems")
                         if k in n} for n in nodes]
    return out


def summary_markdown(s: dict, title: str = "grade-batch") -> str:
    lines = [f"### {title}", "",
             f"- graded {s['graded']}" + (f" of {s['lines']} lines" if "lines" in s else "")
             + f"; pass {s['pass']} ({_pct(s['pass'], s['graded'])}); overfit {s['overfit']}; "
             f"bad lines {s['bad_lines']}; not graded (worker/grader failure) {s['not_graded']}"
             + (f"; {s['resumed']} kept from an earlier run" if s.get("resumed") else ""),
             f"- CPU {s['cpu_s']['total']} s in all, {s['cpu_s']['per_grade_mean']} s per grade "
             f"(median {s['cpu_s']['per_grade_median']}, max {s['cpu_s']['per_grade_max']})"]
    if s.get("wall_s") is not None:
        lines.append(f"- wall {s['wall_s']} s, {s.get('grades_per_hour_wall')} grades/hour")
    if s.get("backend"):
        b = s["backend"]
        lines.append(f"- backend {b.get('backend')}: "
                     + ", ".join(f"{k} {v}" for k, v in b.items() if k != "backend"))
    for n in s.get("nodes") or []:
        where = n.get("address") or n.get("host")
        lines.append(f"- node {where}: " + ("ok" if n.get("ok") else
                                            "NOT USED: " + "; ".join(n.get("problems") or [])))
    lines += ["", "| verdict | count |", "|---|---|"]
    lines += [f"| {v} | {c} |" for v, c in s["by_verdict"].items()]
    lines += ["", "| failed stage | count |", "|---|---|"]
    lines += [f"| {k} | {c} |" for k, c in s["by_failed_stage"].items()]
    cols = [v for v in VERDICTS if any(v in t for t in s["by_task"].values())]
    lines += ["", "| task | graded | pass rate | " + " | ".join(cols) + " |",
              "|---|---|---|" + "---|" * len(cols)]
    for t, c in s["by_task"].items():
        lines.append(f"| {t} | {c['graded']} | {_pct(c['pass'], c['graded'])} | "
                     + " | ".join(str(c.get(v, 0)) for v in cols) + " |")
    if s.get("by_model"):
        lines += ["", "| model | graded | pass rate | " + " | ".join(cols) + " |",
                  "|---|---|---|" + "---|" * len(cols)]
        for m, c in s["by_model"].items():
            lines.append(f"| {m} | {c['graded']} | {_pct(c['pass'], c['graded'])} | "
                         + " | ".join(str(c.get(v, 0)) for v in cols) + " |")
    return "\n".join(lines) + "\n"


@dataclass
class BatchRun:
    predictions: Path
    out: Path
    sim: str = "icarus"
    hidden: int | str = "all"
    resume: bool = False
    jobs_per_grade: int = 1
    on_bad_line: Callable[[BadLine], None] | None = None
    progress: bool = True
    progress_tty: bool | None = None
    run_id: str | None = None  # SWE-bench's --run_id: recorded in run.json and summary.json
    summary: dict = field(default_factory=dict)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_batch(run: BatchRun, backend: Backend) -> dict:
    """Read, resume, grade on ``backend`` (started here, closed here), write; return the summary."""
    from .task import control_ids, list_tasks

    pred = Path(run.predictions)
    if not pred.is_file():
        raise CdcError(f"no such predictions file: {pred}")
    out = Path(run.out)
    if out.exists() and not out.is_dir():
        raise CdcError(f"--out {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    settings = {"predictions": str(pred.resolve()), "predictions_sha256": _file_sha256(pred),
                "sim": run.sim, "hidden": run.hidden, **({"run_id": run.run_id} if run.run_id else {})}
    run_json = out / "run.json"
    if results_path.exists() and results_path.stat().st_size and not run.resume:
        raise CdcError(f"{results_path} already has results: pass --resume to continue it, "
                       "or choose another --out")
    if run.resume and run_json.is_file():
        before = json.loads(run_json.read_text())
        changed = [k for k in ("sim", "hidden") if before.get(k) != settings[k]]
        if changed:
            raise CdcError(f"--resume with other settings than the run in {out}: "
                           + ", ".join(f"{k} {before.get(k)!r} -> {settings[k]!r}" for k in changed))
    run_json.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")

    known = {t.id for t in list_tasks()} | set(control_ids())  # no-bug controls grade like any task
    # Pass 1: bad lines and the ids (no submission is kept in memory).
    bad: list[BadLine] = []
    ids: set[str] = set()
    expect: dict[str, tuple[str, str]] = {}  # id -> (task, submission hash): a kept result must match
    models: dict[str, str] = {}  # id -> the graded line's model_name_or_path (see read_models)
    with open(out / "errors.jsonl", "w", encoding="utf-8") as err:
        for raw, item in _iter_items(pred, sim=run.sim, hidden=run.hidden, known_tasks=known):
            if isinstance(item, BadLine):
                bad.append(item)
                err.write(json.dumps(item.row()) + "\n")
                if run.on_bad_line:
                    run.on_bad_line(item)
            else:
                ids.add(str(item.id))
                expect[str(item.id)] = submission_key(item)
                if MODEL_FIELD in raw and (model := line_model(raw)):
                    models[str(item.id)] = model
    stale: list[str] = []
    kept = keep_results(results_path, ids, expect, stale) if run.resume else {}
    if not run.resume:
        results_path.write_text("", encoding="utf-8")

    def todo() -> Iterator[GradeJob]:  # pass 2: stream the jobs still to grade
        for item in iter_predictions(pred, sim=run.sim, hidden=run.hidden, known_tasks=known):
            if isinstance(item, GradeJob) and str(item.id) not in kept:
                yield GradeJob(**{**item.__dict__, "jobs": run.jobs_per_grade})

    n_todo = len(ids) - len(kept)
    rows = list(kept.values())
    t0 = time.monotonic()
    bar = ProgressLine(n_todo, enabled=run.progress, tty=run.progress_tty)
    nodes: list[dict] = []
    try:
        nodes = backend.start() if n_todo else []
        with open(results_path, "a", encoding="utf-8") as fh:
            for job, row in grade_many(backend, todo()):
                if model := models.get(str(job.id)):
                    row[MODEL_FIELD] = model
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                rows.append(compact(row))
                bar.update(row["verdict"] if not row.get("batch_error") else "not_graded")
    finally:
        bar.close()
        backend.close()
    wall = time.monotonic() - t0
    summary = summarize(rows, bad_lines=len(bad), wall_s=wall, backend=backend.info(), nodes=nodes,
                        resumed=len(kept), total_lines=len(ids) + len(bad), bad_ids=[b.id for b in bad])
    summary["stale_regraded"] = len(stale)
    if run.run_id is not None:
        summary["run_id"] = run.run_id
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    run.summary = summary
    return summary
