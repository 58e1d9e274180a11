"""The run's summary, a pure function of its rows: pass rate by task, family and information rung,
overfit rate, structural-validity gap, unbiased pass@k, refusals, parse failures, endpoint errors;
the no-bug controls apart (their pass rate and over-editing rate: the share of control submissions
that changed the given design, and the share that broke it), never in a defect task's rate; and
the same as Markdown tables."""

from __future__ import annotations

import math

from .results import NOT_RESULTS


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def outcome(row: dict) -> str:
    """A row's label with a refusal said by who refused: ``refused (model)`` (the model declined to
    answer, so there was no design to grade) apart from ``refused (grader)`` (the allowlist or the
    static gate refused the submitted design); every other label as it is."""
    if row.get("label") != "refused":
        return row.get("label")  # type: ignore[return-value]  -- a malformed row keeps what it holds
    return "refused (model)" if row.get("failed_stage") == "model" else "refused (grader)"


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
            "refused_model": sum(outcome(r) == "refused (model)" for r in rows),
            "refused_parse": sum(r["label"] == "refused_parse" for r in rows),
            "refused_gate": sum(outcome(r) == "refused (grader)" for r in rows),
            "tool_error": sum(r["label"] == "tool_error" for r in rows),
            "endpoint_error": sum(r["label"] == "endpoint_error" for r in rows)}


def _rung(row: dict) -> str:
    return row.get("rung", "full")  # rows from before rungs were at full


def _control_counts(rows: list[dict]) -> dict:
    """A control group's counts plus over-editing: of the decided rollouts that submitted a design,
    how many changed the given design, and how many broke it (graded anything but pass)."""
    decided = [r for r in rows if r["label"] not in NOT_RESULTS]
    submitted = [r for r in decided if r.get("changed") is not None]
    edited = sum(bool(r["changed"]) for r in submitted)
    broke = sum(r["label"] != "pass" for r in decided)
    n = len(decided)
    return {**_counts(rows), "submitted": len(submitted), "changed": edited,
            "changed_rate": round(edited / len(submitted), 4) if submitted else None,
            "broke": broke, "broke_rate": round(broke / n, 4) if n else None}


def _group(rows: list[dict], key) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return dict(sorted(out.items()))


def summarize(rows: list[dict], samples: int) -> dict:
    """The run's summary (see the module docstring); pure function of the rows. Every rate but
    ``controls`` is over the defect tasks only."""
    controls = [r for r in rows if r.get("control")]
    rows = [r for r in rows if not r.get("control")]
    by_task = _group(rows, lambda r: r["task"])
    by_family = _group(rows, lambda r: r["family"])
    # Structural-validity gap: among submissions whose simulation passed and whose gate result is
    # decided (pass or refused), the share the gate refused. Unknowns never count.
    sim_pass = [r for r in rows if r.get("sim_verdict") == "pass" and r.get("gate") in ("pass", "refused")]
    gate_refused = sum(r["gate"] == "refused" for r in sim_pass)
    ks = [k for k in (1, 2, 5, 10, 20, 50, 100) if k <= samples] or [1]
    pass_k = {}
    by_task_rung = _group(rows, lambda r: f"{r['task']}\0{_rung(r)}")
    for k in ks:
        per_task = []
        for task_rows in by_task_rung.values():
            decided = [r for r in task_rows if r["label"] not in NOT_RESULTS]
            if len(decided) >= k:
                per_task.append(pass_at_k(len(decided), sum(r["label"] == "pass" for r in decided), k))
        pass_k[f"pass@{k}"] = round(sum(per_task) / len(per_task), 4) if per_task else None
    return {
        "overall": _counts(rows),
        "by_task": {t: {"family": rs[0]["family"], **_counts(rs)} for t, rs in sorted(by_task.items())},
        "by_family": {f: _counts(rs) for f, rs in sorted(by_family.items())},
        "by_rung": {g: _counts(rs) for g, rs in _group(rows, _rung).items()},
        "controls": {"overall": _control_counts(controls),
                     "by_task": {t: {"family": rs[0]["family"], **_control_counts(rs)}
                                 for t, rs in _group(controls, lambda r: r["task"]).items()},
                     "by_rung": {g: _control_counts(rs) for g, rs in _group(controls, _rung).items()}},
        "structural_gap": {"sim_pass_gate_decided": len(sim_pass), "gate_refused": gate_refused,
                           "rate": round(gate_refused / len(sim_pass), 4) if sim_pass else None},
        "pass_at_k": pass_k,
        "tokens_in": sum(r["tokens_in"] for r in rows + controls),
        "tokens_out": sum(r["tokens_out"] for r in rows + controls),
        "grade_cpu_s": round(sum(r["grade_cpu_s"] + r.get("gap_cpu_s", 0.0) for r in rows + controls), 3),
        "malformed_args": sum(r.get("malformed_args", 0) for r in rows + controls),
        "retries": sum(r.get("retries", 0) for r in rows + controls),
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
    if set(summary.get("by_rung", {})) - {"full"}:
        lines.append("")
        table("rung", summary["by_rung"])
    ctl = summary.get("controls", {})
    if ctl.get("by_task"):
        lines += ["", "No-bug controls (the clean design given; never in the rates above):", "",
                  "| control | rollouts | pass | pass rate | submitted | changed | changed rate | broke "
                  "| broke rate | tool_error | endpoint_error |", "|---" * 11 + "|"]
        groups = {**ctl["by_task"], **{f"rung {g}": c for g, c in ctl["by_rung"].items()
                                      if len(ctl["by_rung"]) > 1}, "**all**": ctl["overall"]}
        for key, c in groups.items():
            lines.append(f"| {key} | {c['rollouts']} | {c['pass']} | {_pct(c['pass_rate'])} "
                         f"| {c['submitted']} | {c['changed']} | {_pct(c['changed_rate'])} | {c['broke']} "
                         f"| {_pct(c['broke_rate'])} | {c['tool_error']} | {c['endpoint_error']} |")
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
