"""Bad input anywhere is a clear one-line error (or a row shown as invalid), never a traceback or a
silent change (issue 27, Low): nan limits, over-long task names, ``hidden`` out of range (checked
in one place: seeds.hidden_for), malformed rows on the results page."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cdc_env.errors import CdcError
from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus


@pytest.mark.parametrize("field,value", [("max_body", float("nan")), ("idle_timeout", float("nan")),
                                         ("body_timeout", float("inf")), ("max_body", 1.5),
                                         ("workers", "2"), ("max_episodes", True)])
def test_server_config_refuses_nan_and_non_numbers(field, value):
    from cdc_env.server.config import ServerConfig

    with pytest.raises(CdcError, match=field):
        ServerConfig(tasks={"handshake": load_task("handshake")}, **{field: value})


@pytest.mark.parametrize("flag", ["--idle-timeout", "--max-body", "--workers"])
def test_serve_refuses_nan_on_the_command_line(flag):
    out = subprocess.run([sys.executable, "-m", "cdc_env.cli", "serve", "--tasks", "handshake", flag, "nan"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-300:]
    assert flag in out.stderr


def test_a_task_name_over_255_bytes_is_a_cdc_error():
    for name in ("x" * 300, "a/" + "é" * 200, "nul\x00byte"):
        with pytest.raises(CdcError, match="unknown task"):
            load_task(name)


@needs_icarus
@needs_bwrap
@pytest.mark.parametrize("hidden", [-1, 201, "-3", 10**6])
def test_hidden_out_of_range_is_refused_everywhere_alike(hidden, tmp_path):
    """grade(), CdcRepairEnv, grade-batch and the CLI give the same refusal (before: -1 ran 199
    seeds and 201 ran 200 in grade(), grade-batch and CdcRepairEnv, where the CLI refused)."""
    from cdc_env.batch import BadLine, iter_predictions
    from cdc_env.env import CdcRepairEnv
    from cdc_env.grade import grade
    from cdc_env.sim.seeds import hidden_for

    task = load_task("handshake")
    with pytest.raises(ValueError, match="hidden must be"):
        hidden_for(task, hidden)
    with pytest.raises(ValueError, match="hidden must be"):
        grade(task, task.reference_text, hidden=hidden)
    with pytest.raises(CdcError, match="hidden must be"):
        CdcRepairEnv("handshake", hidden=hidden)
    pred = tmp_path / "p.jsonl"
    pred.write_text(json.dumps({"id": "a", "task": "handshake", "submission": "x", "hidden": hidden}) + "\n")
    (item,) = iter_predictions(pred, sim="icarus", hidden="all", known_tasks={"handshake"})
    assert isinstance(item, BadLine) and "hidden must be" in item.reason
    sub = tmp_path / "fix.v"
    sub.write_text(task.reference_text)
    out = subprocess.run([sys.executable, "-m", "cdc_env.cli", "grade", "handshake", str(sub), "--hidden",
                          str(hidden)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "hidden must be" in out.stderr


def test_results_page_renders_malformed_rows_as_invalid(tmp_path):
    from cdc_env.report_html import load_folder, render

    good = {"id": "ok", "task": "handshake", "verdict": "pass", "failed_stage": None, "reason": "",
            "cpu_s": 1.5, "seeds": {}}
    bad = [{"id": "nan", "task": "handshake", "verdict": "fail", "cpu_s": float("nan")},
           {"id": "str", "task": "handshake", "verdict": "fail", "cpu_s": "fast"},
           {"id": "list", "task": "handshake", "verdict": "fail", "cpu_s": 1, "seeds": [1, 2]},
           {"id": "stage", "task": "handshake", "verdict": "fail", "cpu_s": 1, "seeds": {"hidden": 3}},
           {"id": "failed", "task": "handshake", "verdict": "fail", "cpu_s": 1,
            "seeds": {"hidden": {"failed": ["x"]}}},
           {"id": "verdict", "task": ["handshake"], "verdict": {"v": 1}, "cpu_s": 1},
           {"id": "neg", "task": "handshake", "verdict": "fail", "cpu_s": -1e309}]
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in [good, *bad]) + "\n")
    data = load_folder(tmp_path)
    verdicts = {r["id"]: r["verdict"] for r in data["rows"]}
    assert verdicts == {"ok": "pass", **{r["id"]: "invalid" for r in bad}}
    page = render(data)
    assert "malformed row" in page and "invalid" in page
    out = subprocess.run([sys.executable, "-m", "cdc_env.cli", "report", str(tmp_path), "--html"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-500:]


@needs_bwrap
@pytest.mark.parametrize("kw", [{"task_dir": "x" * 5000}, {"sim": "y" * 5000}, {"hidden": "y" * 5000},
                                {"max_steps": "z" * 5000}, {"rung": "r" * 5000}])
def test_an_error_quotes_at_most_a_little_of_the_input(kw):
    """CdcRepairEnv's errors cut what they quote of the caller's input (issue 37)."""
    from cdc_env.env import CdcRepairEnv

    with pytest.raises(CdcError) as err:
        CdcRepairEnv(**{"task_dir": "handshake", **kw})
    assert len(str(err.value)) < 600, len(str(err.value))


@pytest.mark.parametrize("argv", [["show", "handshake", "--rung", "r" * 50_000], ["show", "t" * 50_000],
                                  ["grade", "t" * 50_000, "x.v"]])
def test_the_cli_quotes_at_most_a_little_of_the_input(argv):
    out = subprocess.run([sys.executable, "-m", "cdc_env.cli", *argv], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and len(out.stderr) < 600 and "Traceback" not in out.stderr, out.stderr[:300]


def test_short_messages_are_never_cut():
    from cdc_env.errors import clip_quoted

    msg = "can't read the file: " + "x" * 100 + " -- it's gone"
    assert clip_quoted(msg) == msg
    long = "unknown task '" + "x" * 500 + "' (known: a, b)"
    assert clip_quoted(long) == "unknown task '" + "x" * 80 + "...' (500 characters) (known: a, b)"


def _eval_folder(path, trajectory: dict, summary: object = None) -> None:
    path.mkdir()
    traj = {"messages": [], "report": None, "submission": "x", **trajectory}
    (path / "t.json").write_text(json.dumps(traj))
    row = {"task": "handshake", "sample": 0, "label": "fail", "mode": "agentic", "grade_cpu_s": 0.1,
           "trajectory": "t.json"}
    (path / "results.jsonl").write_text(json.dumps(row) + "\n")
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary))


def test_results_page_survives_more_kinds_of_malformed_row(tmp_path):
    """Findings that are not a list of objects, a seed that is a list or an object, a tool call
    whose function is text, a submission that is a number, a gap rate that is text (issue 37:
    each was a traceback)."""
    from cdc_env.report_html import write_report

    base = {"id": "a", "task": "handshake", "verdict": "fail", "failed_stage": "visible", "reason": "r",
            "cpu_s": 0.1}
    batch = {"findings-text": {"findings": "abc"}, "findings-dict": {"findings": {"a": 1}},
             "findings-ints": {"findings": [1, 2]},
             "seed-list": {"seeds": {"visible": {"failed": [{"seed": [1]}], "results": [{"seed": [1]}]}}},
             "seed-dict": {"seeds": {"visible": {"failed": [{"seed": {}}]}}}}
    for name, change in batch.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text(json.dumps({**base, **change}) + "\n")
    call = {"role": "assistant", "tool_calls": [{"function": "x"}]}
    _eval_folder(tmp_path / "call-text", {"messages": [call]})
    _eval_folder(tmp_path / "submission-int", {"submission": 5})
    _eval_folder(tmp_path / "gap-text", {}, {"structural_gap": {"rate": "abc"}})
    _eval_folder(tmp_path / "gap-object", {}, {"structural_gap": {"rate": {}}})
    for folder in sorted(p for p in tmp_path.iterdir() if p.is_dir()):
        page = write_report(folder).read_text()
        if folder.name in batch or folder.name == "submission-int":
            assert "malformed row" in page, folder.name
