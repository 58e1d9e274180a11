"""``cdc-env report DIR --html``: one self-contained HTML page for a grade-batch or an eval folder.

The page has no external asset and no script: styles are inline, the cost histogram is inline
SVG, long parts fold with <details>. A Content-Security-Policy that forbids every script is set
as well. Every piece of text that comes from a results folder -- ids, task names, reasons,
submissions, model transcripts, tool arguments -- is adversarial and goes through ``esc`` (HTML
escaping of &, <, >, " and '), never into an attribute without it and never into a tag name.

Folders:
  * grade-batch (batch.py): results.jsonl rows are grade reports with ``id``; run.json names the
    predictions file, from which failing submissions are shown when it is still there.
  * eval (cdc_env/eval/): results.jsonl rows carry ``label``, ``gate``, ``sim_verdict``,
    ``grade_cpu_s``, ``rung``, ``control``, ``changed`` and ``trajectory``
    (rollouts/<task>/[<rung>-]s<k>/trajectory.json: the messages, the steps, the submission and
    the grade report); summary.json has the structural-validity gap. The pass rates are over the
    defect tasks; no-bug controls get their own table (pass, changed, broke), and a run at several
    information rungs a table by rung.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from pathlib import Path

from .errors import CdcError
from .eval.summary import outcome

MAX_FAILING = 300  # failing submissions shown in full; the rest are counted
MAX_TEXT = 20_000  # characters of one submission or message shown
MAX_SEEDS = 20  # failing seeds listed per submission

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d6d9e0;padding:3px 8px;text-align:left}
th{background:#f2f4f8}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:10px;background:#3b7d4f;vertical-align:middle}
.barbg{display:inline-block;width:120px;height:10px;background:#e7e9ee;vertical-align:middle}
.pass{color:#1f7a3a}.bad{color:#b3261e}.muted{color:#667}
pre{background:#f6f7f9;border:1px solid #e1e3e8;padding:8px;overflow:auto;max-height:420px;
white-space:pre-wrap;word-break:break-word}
details{margin:4px 0}summary{cursor:pointer}.msg{border-left:3px solid #ccd;margin:6px 0;padding-left:8px}
.role{font-weight:600}.card{border:1px solid #e1e3e8;border-radius:4px;padding:6px 10px;margin:8px 0}
"""


def esc(value: object) -> str:
    """Text for HTML (element content or a quoted attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    if not path.is_file():
        return rows
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _inside(root: Path, rel: object) -> Path | None:
    """``root / rel`` if it stays inside root (a results row names its trajectory file)."""
    if not isinstance(rel, str):
        return None
    p = (root / rel).resolve()
    return p if p.is_relative_to(root.resolve()) and p.is_file() else None


# ---------------------------------------------------------------------- normalised rows

def load_folder(folder: Path) -> dict:
    """Read a grade-batch or eval folder into one shape: kind, rows (id, task, verdict, stage,
    reason, cpu_s, report, submission, transcript), summary."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CdcError(f"no such folder: {folder}")
    raw = _read_jsonl(folder / "results.jsonl")
    if not raw:
        raise CdcError(f"{folder} has no results.jsonl rows (is it a grade-batch or eval --out folder?)")
    summary = _read_json(folder / "summary.json")
    meta: dict = {}
    rows = []
    if all("label" in r for r in raw):
        meta = _read_json(folder / "metadata.json")
        kind = "eval"
        for r in raw:
            traj = _read_json(p) if (p := _inside(folder, r.get("trajectory"))) else {}
            report = traj.get("report") if isinstance(traj.get("report"), dict) else None
            rung = r.get("rung") if isinstance(r.get("rung"), str) else "full"
            at = "" if rung == "full" else f" [{rung}]"
            rows.append({"id": f"{r.get('task')}{at} s{r.get('sample')}", "task": r.get("task"),
                         "rung": rung, "control": r.get("control") is True, "changed": r.get("changed"),
                         "verdict": outcome(r), "stage": r.get("failed_stage"),
                         "reason": (report or {}).get("reason") or r.get("error") or r.get("refusal") or "",
                         "cpu_s": r.get("grade_cpu_s") or 0.0, "report": report,
                         "submission": traj.get("submission"), "mode": r.get("mode"),
                         "gate": r.get("gate"), "sim_verdict": r.get("sim_verdict"),
                         "messages": traj.get("messages") if r.get("mode") == "agentic" else None})
    else:
        kind = "grade-batch"
        subs: dict[str, str] = {}
        pred = Path(str(_read_json(folder / "run.json").get("predictions", "")))
        if pred.is_file():
            for p in _read_jsonl(pred):
                if "id" in p and isinstance(p.get("submission"), str):
                    subs.setdefault(str(p["id"]), p["submission"])
        for r in raw:
            rows.append({"id": r.get("id"), "task": r.get("task"), "verdict": r.get("verdict"),
                         "stage": r.get("failed_stage"), "reason": r.get("reason") or "",
                         "cpu_s": r.get("cpu_s") or 0.0, "report": r,
                         "submission": subs.get(str(r.get("id"))), "messages": None,
                         "batch_error": bool(r.get("batch_error")), "model": r.get("model_name_or_path")})
    return {"kind": kind, "folder": folder, "rows": [_checked(r) for r in rows], "summary": summary,
            "meta": meta}


def _malformed(row: dict) -> str:
    """What is wrong with a row's shape for this page ('' if nothing): a results file may be
    hand-edited, truncated or written by another version."""
    cpu = row.get("cpu_s")
    if isinstance(cpu, bool) or not isinstance(cpu, int | float) or not math.isfinite(cpu) or cpu < 0:
        return f"cpu_s is {str(cpu)[:40]!r}, not a finite number >= 0"
    for key in ("verdict", "task"):
        if row.get(key) is not None and not isinstance(row.get(key), str):
            return f"{key} is a {type(row.get(key)).__name__}, not a string"
    for key in ("reason", "stage"):
        if row.get(key) is not None and not isinstance(row.get(key), str):
            return f"{key} is a {type(row.get(key)).__name__}, not a string"
    if row.get("messages") is not None and not isinstance(row.get("messages"), list):
        return "the transcript's messages are not a list"
    if row.get("submission") is not None and not isinstance(row.get("submission"), str):
        return f"the submission is a {type(row.get('submission')).__name__}, not text"
    report = row.get("report")
    if report is None:
        return ""
    findings = report.get("findings")
    if findings is not None and (not isinstance(findings, list)
                                 or not all(isinstance(f, dict) for f in findings)):
        return "findings is not a list of objects"
    seeds = report.get("seeds")
    if seeds is None:
        return ""
    if not isinstance(seeds, dict):
        return f"seeds is a {type(seeds).__name__}, not an object"
    for stage, st in seeds.items():
        if not isinstance(st, dict):
            return f"seeds.{str(stage)[:20]} is a {type(st).__name__}, not an object"
        for key in ("failed", "results"):
            items = st.get(key)
            if items is not None and (not isinstance(items, list)
                                      or not all(isinstance(x, dict) for x in items)):
                return f"seeds.{str(stage)[:20]}.{key} is not a list of objects"
            if any(isinstance(x.get("seed"), (list, dict)) for x in items or []):
                return f"seeds.{str(stage)[:20]}.{key} has a seed that is not a number"
    return ""


def _checked(row: dict) -> dict:
    """The row, or the row rendered as ``invalid`` (with why) when its shape is malformed."""
    why = _malformed(row)
    if not why:
        row["cpu_s"] = float(row["cpu_s"])
        return row
    return {**row, "verdict": "invalid", "stage": None, "reason": f"malformed row: {why}", "cpu_s": 0.0,
            "report": None, "task": row["task"] if isinstance(row.get("task"), str) else "(invalid)",
            "messages": None, "submission": None}


# ---------------------------------------------------------------------- page parts

def _bar(frac: float, bad: bool = False) -> str:
    w = max(0, min(120, round(120 * frac)))
    colour = ";background:#b3261e" if bad else ""
    return f'<span class="barbg"><span class="bar" style="width:{w}px{colour}"></span></span>'


def _pass_tables(rows: list[dict]) -> str:
    by_task: dict[str, Counter] = {}
    for r in rows:
        by_task.setdefault(str(r["task"]), Counter())[str(r["verdict"])] += 1
    verdicts = Counter(str(r["verdict"]) for r in rows)
    out = ["<h2>Pass rate by task</h2><table><tr><th>task</th><th>graded</th><th>pass</th>"
           "<th>pass rate</th><th>other verdicts</th></tr>"]
    for task, c in sorted(by_task.items()):
        n, p = sum(c.values()), c.get("pass", 0)
        other = ", ".join(f"{esc(v)} {k}" for v, k in sorted(c.items()) if v != "pass")
        out.append(f'<tr><td>{esc(task)}</td><td class="n">{n}</td><td class="n">{p}</td>'
                   f'<td>{_bar(p / n)} {100 * p / n:.1f}%</td><td>{other}</td></tr>')
    out.append("</table><h2>Verdicts</h2><table><tr><th>verdict</th><th>count</th><th>share</th></tr>")
    total = len(rows)
    for v, k in verdicts.most_common():
        out.append(f'<tr><td class="{"pass" if v == "pass" else "bad"}">{esc(v)}</td>'
                   f'<td class="n">{k}</td><td>{_bar(k / total, v != "pass")} '
                   f'{100 * k / total:.1f}%</td></tr>')
    out.append("</table><h2>Where grades stopped</h2><table><tr><th>failed stage</th><th>count</th></tr>")
    for stage, k in Counter(str(r.get("stage") or "none (pass)") for r in rows).most_common():
        out.append(f'<tr><td>{esc(stage)}</td><td class="n">{k}</td></tr>')
    out.append("</table>")
    return "".join(out)


def _rate(k: int, n: int, bad: bool = False) -> str:
    return f"{_bar(k / n, bad)} {100 * k / n:.1f}%" if n else "-"


def _rungs_table(rows: list[dict]) -> str:
    """Pass rate by information rung (defect tasks only), when the run has a rung besides full."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(str(r.get("rung") or "full"), []).append(r)
    if set(by) <= {"full"}:
        return ""
    out = ["<h2>Pass rate by information rung</h2><table><tr><th>rung</th><th>graded</th><th>pass</th>"
           "<th>pass rate</th></tr>"]
    for rung, rs in sorted(by.items()):
        p = sum(r["verdict"] == "pass" for r in rs)
        out.append(f'<tr><td>{esc(rung)}</td><td class="n">{len(rs)}</td><td class="n">{p}</td>'
                   f"<td>{_rate(p, len(rs))}</td></tr>")
    return "".join(out) + "</table>"


def _controls_table(rows: list[dict]) -> str:
    """No-bug controls: the clean design was given; pass, changed (an edit) and broke, per control."""
    if not rows:
        return ""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(str(r["task"]), []).append(r)
    out = ["<h2>No-bug controls</h2><p class='muted'>The clean design was given; a control passes when "
           "the submission is still correct. Never counted in the pass rates above.</p><table><tr>"
           "<th>control</th><th>graded</th><th>pass</th><th>changed the design</th><th>broke it</th></tr>"]
    for task, rs in [*sorted(by.items()), ("all", rows)]:
        n = len(rs)
        p = sum(r["verdict"] == "pass" for r in rs)
        sub = [r for r in rs if isinstance(r.get("changed"), bool)]
        ch = sum(r["changed"] for r in sub)
        out.append(f'<tr><td>{esc(task)}</td><td class="n">{n}</td><td>{_rate(p, n)}</td>'
                   f"<td>{_rate(ch, len(sub), True)}</td><td>{_rate(n - p, n, True)}</td></tr>")
    return "".join(out) + "</table>"


def _batch_facts(data: dict) -> str:
    """grade-batch: the lines skipped (errors.jsonl) and the pass rate per model_name_or_path."""
    if data["kind"] != "grade-batch":
        return ""
    skipped = data["summary"].get("bad_lines")
    if not isinstance(skipped, int) or isinstance(skipped, bool):
        skipped = len(_read_jsonl(data["folder"] / "errors.jsonl"))
    out = [f"<p><b>{skipped}</b> input line{'' if skipped == 1 else 's'} skipped as bad lines "
           "(not graded; each with its reason in errors.jsonl).</p>"]
    by: dict[str, list[dict]] = {}
    for r in data["rows"]:
        if isinstance(r.get("model"), str) and r["model"]:
            by.setdefault(r["model"], []).append(r)
    if by:
        out.append("<h2>Pass rate by model</h2><table><tr><th>model</th><th>graded</th><th>pass</th>"
                   "<th>pass rate</th><th>other verdicts</th></tr>")
        for model, rs in sorted(by.items()):
            p = sum(r["verdict"] == "pass" for r in rs)
            counts = Counter(str(r["verdict"]) for r in rs)
            other = ", ".join(f"{esc(v)} {k}" for v, k in sorted(counts.items()) if v != "pass")
            out.append(f'<tr><td>{esc(model)}</td><td class="n">{len(rs)}</td><td class="n">{p}</td>'
                       f"<td>{_rate(p, len(rs))}</td><td>{other}</td></tr>")
        out.append("</table>")
    return "".join(out)


def _run_facts(data: dict) -> str:
    """eval: the model, the mode, the endpoint and the date (metadata.json), and what the two kinds
    of refusal mean."""
    if data["kind"] != "eval":
        return ""
    meta = data.get("meta") or {}
    settings = meta.get("settings") if isinstance(meta.get("settings"), dict) else {}
    sim = meta.get("simulator") if isinstance(meta.get("simulator"), dict) else {}
    facts = [("model", settings.get("model")), ("mode", settings.get("mode")),
             ("endpoint", meta.get("endpoint")), ("started", meta.get("started")),
             ("finished", meta.get("finished")), ("simulator", sim.get("name"))]
    cells = "".join(f"<tr><th>{k}</th><td>{esc(v if isinstance(v, str) and v else 'not recorded')}</td></tr>"
                    for k, v in facts)
    return (f"<table class='facts'>{cells}</table><p class='muted'>refused (model): the model declined "
            "to answer, so nothing was graded. refused (grader): the allowlist or the static gate refused "
            "the submitted design. refused_parse: the reply held no design to grade.</p>")


def _gap(data: dict) -> str:
    if data["kind"] != "eval":
        return ""
    gap = data["summary"].get("structural_gap")
    if not isinstance(gap, dict):
        sim_pass = [r for r in data["rows"] if r.get("sim_verdict") == "pass" and r.get("gate") in
                    ("pass", "refused")]
        refused = sum(r["gate"] == "refused" for r in sim_pass)
        gap = {"sim_pass_gate_decided": len(sim_pass), "gate_refused": refused,
               "rate": refused / len(sim_pass) if sim_pass else None}
    rate = gap.get("rate")
    ok = isinstance(rate, int | float) and not isinstance(rate, bool) and math.isfinite(rate)
    rate_txt = f"{100 * float(rate):.1f}%" if ok else "-"  # a hand-edited summary may hold anything
    return (f"<h2>Structural-validity gap</h2><p><b>{esc(rate_txt)}</b>: {esc(gap.get('gate_refused'))} of "
            f"{esc(gap.get('sim_pass_gate_decided'))} submissions that pass simulation are refused by "
            "the static gate (they would have scored without it).</p>")


def histogram_svg(values: list[float], bins: int = 24, width: int = 640, height: int = 180) -> str:
    """An inline SVG histogram of ``values`` (CPU-s per grade)."""
    if not values:
        return "<p class='muted'>no grades</p>"
    hi = max(values) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int(bins * v / hi))] += 1
    top = max(counts)
    pad_l, pad_b = 40, 28
    bw = (width - pad_l - 8) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="CPU seconds per grade">',
             f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - 4}" y2="{height - pad_b}" '
             'stroke="#888"/>']
    for i, c in enumerate(counts):
        h = (height - pad_b - 12) * c / top
        x = pad_l + i * bw
        parts.append(f'<rect x="{x:.1f}" y="{height - pad_b - h:.1f}" width="{bw - 1:.1f}" '
                     f'height="{h:.1f}" fill="#4a6fa5"><title>{hi * i / bins:.3g}-'
                     f'{hi * (i + 1) / bins:.3g} s: {c}</title></rect>')
    # The end labels are anchored inward (start, end): a centred label at either edge is clipped.
    for frac, anchor in ((0, "start"), (0.5, "middle"), (1, "end")):
        x = pad_l + frac * (width - pad_l - 8)
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" font-size="11" text-anchor="{anchor}">'
                     f'{hi * frac:.3g} s</text>')
    parts.append(f'<text x="4" y="14" font-size="11">{top}</text>'
                 f'<text x="4" y="{height - pad_b}" font-size="11">0</text></svg>')
    return "".join(parts)


def _cost(rows: list[dict]) -> str:
    cpu = sorted(r["cpu_s"] for r in rows)
    if not cpu:
        return ""
    total = sum(cpu)
    med = cpu[len(cpu) // 2]
    return (f"<h2>Cost</h2><p>{total:.1f} CPU-s in all; per grade mean {total / len(cpu):.3f} s, "
            f"median {med:.3f} s, max {cpu[-1]:.3f} s.</p>" + histogram_svg(cpu))


def _seed_table(report: dict) -> str:
    out = []
    for stage, s in (report.get("seeds") or {}).items():
        failed = s.get("failed") or []
        if not failed:
            continue
        times = {x.get("seed"): x.get("t") for x in s.get("results") or []}
        out.append(f"<p>{esc(stage)} seeds: {esc(s.get('passed'))}/{esc(s.get('count'))} pass"
                   + (f", {esc(s.get('not_run'))} not run" if s.get("not_run") else "") + "</p>"
                   "<table><tr><th>seed</th><th>status</th><th>reason</th><th>clock ratio</th>"
                   "<th>fast side</th><th>sim time (ps)</th></tr>")
        for f in failed[:MAX_SEEDS]:
            out.append(f"<tr><td class='n'>{esc(f.get('seed'))}</td>"
                       f"<td class='bad'>{esc(f.get('status'))}</td>"
                       f"<td>{esc(f.get('reason'))}</td><td class='n'>{esc(f.get('ratio'))}</td>"
                       f"<td>{esc(f.get('fast'))}</td>"
                       f"<td class='n'>{esc(times.get(f.get('seed')))}</td></tr>")
        out.append("</table>")
        if len(failed) > MAX_SEEDS:
            out.append(f"<p class='muted'>... {len(failed) - MAX_SEEDS} more failing seeds</p>")
    return "".join(out)


def _transcript(messages: list) -> str:
    out = [f"<details><summary>transcript ({len(messages)} messages)</summary>"]
    for m in messages:
        if not isinstance(m, dict):
            continue
        body = m.get("content")
        if isinstance(body, list):
            body = "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in body)
        calls = m.get("tool_calls") or []
        out.append(f"<div class='msg'><span class='role'>{esc(m.get('role'))}</span>"
                   + (f" <span class='muted'>{esc(m.get('name') or m.get('tool_call_id') or '')}</span>")
                   + (f"<pre>{esc(_clip(str(body)))}</pre>" if body else ""))
        for c in calls if isinstance(calls, list) else []:
            fn = c.get("function") if isinstance(c, dict) else None
            fn = fn if isinstance(fn, dict) else {}
            out.append(f"<pre>call {esc(fn.get('name'))}({esc(_clip(str(fn.get('arguments'))))})</pre>")
        out.append("</div>")
    out.append("</details>")
    return "".join(out)


def _failing(data: dict) -> str:
    bad = [r for r in data["rows"] if r["verdict"] != "pass"]
    out = [f"<h2>Failing submissions ({len(bad)})</h2>"]
    for r in bad[:MAX_FAILING]:
        stage = f" at {esc(r['stage'])}" if r.get("stage") else ""
        what = " (no-bug control)" if r.get("control") is True else ""
        out.append(f"<div class='card'><b>{esc(r['id'])}</b> &middot; {esc(r['task'])}{what} &middot; "
                   f"<span class='bad'>{esc(r['verdict'])}</span>{stage} &middot; {r['cpu_s']:.3f} CPU-s"
                   f"<div>{esc(r['reason'])}</div>")
        report = r.get("report") or {}
        for f in (report.get("findings") or [])[:10]:
            out.append(f"<div class='muted'>[{esc(f.get('rule'))}] {esc(f.get('file'))}:{esc(f.get('line'))} "
                       f"{esc(f.get('message'))}</div>")
        out.append(_seed_table(report))
        if r.get("submission"):
            out.append(f"<details><summary>submission</summary><pre>{esc(_clip(r['submission']))}</pre></details>")
        if r.get("messages"):
            out.append(_transcript(r["messages"]))
        out.append("</div>")
    if len(bad) > MAX_FAILING:
        out.append(f"<p class='muted'>... {len(bad) - MAX_FAILING} more failing submissions "
                   "(see results.jsonl)</p>")
    return "".join(out)


def _passing_transcripts(data: dict) -> str:
    rows = [r for r in data["rows"] if r["verdict"] == "pass" and r.get("messages")]
    if not rows:
        return ""
    out = [f"<h2>Agentic rollouts that passed ({len(rows)})</h2>"]
    for r in rows[:MAX_FAILING]:
        out.append(f"<div class='card'><b>{esc(r['id'])}</b> &middot; {esc(r['task'])}"
                   f"{_transcript(r['messages'])}</div>")
    return "".join(out)


def render(data: dict) -> str:
    controls = [r for r in data["rows"] if r.get("control") is True]
    rows = [r for r in data["rows"] if r.get("control") is not True]
    n = len(rows)
    passed = sum(r["verdict"] == "pass" for r in rows)
    title = f"cdc_env {data['kind']} results: {data['folder'].name}"
    head = (f"<p class='muted'>{esc(data['kind'])} folder {esc(str(data['folder']))}</p>"
            f"<p><b>{n}</b> graded, <b class='pass'>{passed}</b> pass "
            f"({100 * passed / n:.1f}%), {sum(r['verdict'] == 'overfit' for r in rows)} overfit."
            f"{f' Plus {len(controls)} no-bug control rollouts.' if controls else ''}</p>") if n else (
            f"<p>{len(controls)} no-bug control rollouts, no defect task.</p>")
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{esc(title)}</h1>{_run_facts(data)}{head}{_batch_facts(data)}"
            f"{_pass_tables(rows) if rows else ''}"
            f"{_rungs_table(rows)}"
            f"{_controls_table(controls)}{_gap(data)}{_cost(data['rows'])}"
            f"{_failing(data)}{_passing_transcripts(data)}</body></html>\n")


def write_report(folder: Path, output: Path | None = None) -> Path:
    """Write the page for ``folder`` (default ``folder/report.html``); return its path."""
    data = load_folder(folder)
    out = Path(output) if output else Path(folder) / "report.html"
    out.write_text(render(data), encoding="utf-8")
    return out
