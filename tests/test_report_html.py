"""The results page: built from a real grade-batch folder and an eval-format folder holding
adversarial text, rendered in headless Chromium (skipped with the reason when it is absent)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cdc_env.backends import LocalPool
from cdc_env.batch import BatchRun, run_batch
from cdc_env.errors import CdcError
from cdc_env.report_html import histogram_svg, load_folder, render, write_report
from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

ROOT = Path(__file__).resolve().parents[1]
EVIL = "</pre></div><script>document.title='pwned'</script><img src=x onerror=\"document.title='img'\">"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [k for k, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> Tags:
    t = Tags()
    t.feed(page)
    return t


@pytest.fixture(scope="module")
def batch_dir(tmp_path_factory) -> Path:
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog is not installed")
    d = tmp_path_factory.mktemp("report")
    hs = load_task("handshake")
    rows = [{"id": "fix", "task": "handshake", "submission": hs.reference_text},
            {"id": EVIL, "task": "handshake", "submission": hs.defective_text + f"// {EVIL}\n"},
            {"id": "hack", "task": "handshake",
             "submission": f"--- a/tb.v\n+++ b/tb.v\n@@ -1 +1 @@\n-{EVIL}\n"}]
    (d / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_batch(BatchRun(d / "p.jsonl", d / "out", hidden=2, progress=False), LocalPool(1))
    return d / "out"


@pytest.fixture(scope="module")
def eval_dir(batch_dir, tmp_path_factory) -> Path:
    """An eval folder in cdc_env.eval's format (results.jsonl, summary.json, trajectories)."""
    d = tmp_path_factory.mktemp("eval")
    lines = (batch_dir / "results.jsonl").read_text().splitlines()
    reports = {json.loads(x)["id"]: json.loads(x) for x in lines}
    rows = []
    for k, (rid, label) in enumerate([("fix", "pass"), (EVIL, "fail")]):
        traj = Path("rollouts") / "handshake" / f"s{k}" / "trajectory.json"
        (d / traj).parent.mkdir(parents=True)
        report = {key: v for key, v in reports[rid].items() if key != "id"}
        messages = [{"role": "system", "content": "repair it"},
                    {"role": "assistant", "content": EVIL, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "write", "arguments": EVIL}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": f"wrote {EVIL}"}]
        (d / traj).write_text(json.dumps({"task": "handshake", "sample": k, "mode": "agentic", "label": label,
                                          "messages": messages, "steps": [], "submission": EVIL,
                                          "report": report, "gate_off_report": None}))
        rows.append({"task": "handshake", "family": "handshake", "mode": "agentic", "model": "m", "sample": k,
                     "reward": int(label == "pass"), "label": label, "overfit": False,
                     "failed_stage": report["failed_stage"], "findings": [], "tool_calls": 1, "sim_runs": 0,
                     "tokens_in": 1, "tokens_out": 1, "wall_s": 1.0, "grade_cpu_s": report["cpu_s"],
                     "trajectory": str(traj), "gate": "pass", "sim_verdict": label})
    rows.append({**rows[0], "sample": 2, "trajectory": "../../../../etc/passwd"})  # must not be read
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "summary.json").write_text(json.dumps({"structural_gap": {"sim_pass_gate_decided": 4,
                                                                   "gate_refused": 1, "rate": 0.25}}))
    return d


def test_batch_page_has_everything_and_no_markup_from_data(batch_dir):
    data = load_folder(batch_dir)
    assert data["kind"] == "grade-batch" and len(data["rows"]) == 3
    page = render(data)
    t = parse(page)
    assert "script" not in t.tags and "img" not in t.tags and "onerror" not in t.attrs
    text = "".join(t.text)
    assert EVIL in text  # shown as text (id, submission, diff)
    for needle in ("Pass rate by task", "Verdicts", "Where grades stopped", "Cost", "Failing submissions (2)",
                   "clock ratio", "visible seeds"):
        assert needle in text
    assert "<svg" in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_eval_page_gap_and_transcripts(eval_dir):
    data = load_folder(eval_dir)
    assert data["kind"] == "eval"
    assert all(r["submission"] is None for r in data["rows"] if r["id"].endswith("s2"))
    page = render(data)
    t = parse(page)
    text = "".join(t.text)
    assert "script" not in t.tags and "img" not in t.tags
    assert "Structural-validity gap" in text and "25.0%" in text
    assert "transcript (3 messages)" in text and "call write(" in text and "root:" not in text


def test_cli_writes_the_page(batch_dir, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "r.html"
    argv = [sys.executable, "-m", "cdc_env.cli", "report", str(batch_dir), "--html", "-o", str(out), "--json"]
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"html": str(out)} and "Failing submissions (2)" in out.read_text()


def test_bad_folders(tmp_path):
    with pytest.raises(CdcError, match="no such folder"):
        load_folder(tmp_path / "none")
    with pytest.raises(CdcError, match="no results.jsonl"):
        load_folder(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "cdc_env.cli", "report", str(tmp_path), "--html"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1


def test_histogram_bins():
    svg = histogram_svg([0.1, 0.1, 0.3, 1.0], bins=4)
    assert svg.count("<rect") == 4 and "<title>0-0.25 s: 2</title>" in svg


@pytest.mark.skipif(CHROMIUM is None,
                    reason="headless Chromium is not installed (apt-get install -y chromium)")
@pytest.mark.parametrize("which", ["batch_dir", "eval_dir"])
def test_renders_in_headless_chromium(which, request, tmp_path):
    folder = request.getfixturevalue(which)
    page = write_report(folder, tmp_path / "report.html")
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-500:]
    t = parse(dom.stdout)
    text = "".join(t.text)
    assert "Pass rate by task" in text and "handshake" in text and EVIL in text
    assert "script" not in t.tags and "img" not in t.tags
    assert "pwned" not in "".join(t.text[:3])  # the title was not rewritten by a script
    shot = tmp_path / "shot.png"
    r = subprocess.run(base + ["--window-size=1100,1400", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000


def test_histogram_axis_labels_stay_inside_the_picture():
    """The labels at the two ends of the axis are anchored inward (a centred one is half outside)."""
    import re

    from cdc_env.report_html import histogram_svg

    svg = histogram_svg([0.5, 1.0, 12.345], width=640)
    pattern = r'<text x="([\d.]+)" y="\d+" font-size="11" text-anchor="(\w+)">([^<]*) s</text>'
    labels = re.findall(pattern, svg)
    assert [(a, t) for _, a, t in labels] == [("start", "0"), ("middle", "6.17"), ("end", "12.3")]
    assert all(float(x) <= 640 for x, _, _ in labels)


def test_batch_page_has_the_per_model_table_and_the_skipped_lines(tmp_path):
    """What summary.md has, the page has too: pass rate per model_name_or_path, and how many input
    lines were skipped as bad lines (issue 37)."""
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog is not installed")
    hs = load_task("handshake")
    a = {"model_name_or_path": "model-a"}
    lines = [{"instance_id": "handshake__a", "model_patch": hs.reference_text, **a},
             {"instance_id": "handshake__b", "model_patch": hs.defective_text, "model_name_or_path": EVIL},
             {"instance_id": "handshake__c", "model_patch": "x", **a, "hiden": 1},
             {"instance_id": "nosuch__d", "model_patch": "x"}]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    run_batch(BatchRun(tmp_path / "p.jsonl", tmp_path / "out", hidden=2, progress=False), LocalPool(1))
    page = render(load_folder(tmp_path / "out"))
    t = parse(page)
    assert "script" not in t.tags and "img" not in t.tags
    text = "".join(t.text)
    assert "Pass rate by model" in text and "2 input lines skipped" in text
    assert "model-a" in text
    assert EVIL in text  # the model name shown as text


@needs_icarus
@needs_bwrap
def test_eval_page_from_a_real_run_names_the_run_and_keeps_refusals_and_controls_apart(tmp_path, capsys):
    """A real eval run against the stand-in model (real HTTP, real grades): a task and its no-bug
    control, each answered once with the fix, once with a refusal, once with a raw crossing the
    gate refuses. The page names the model, the mode, the endpoint and the date; a model's refusal
    and the grader's are two verdicts; the control is counted apart; the progress line counts the
    control apart; the controls that ran before any model call said so in one line."""
    pytest.importorskip("openai", reason="the openai client is not installed (pip install .[eval])")
    from cdc_env.eval import EvalSettings, ProgressBar, run_eval
    from cdc_env.standin import StandinServer

    fix = {"content": "```verilog\n{design}```", "design": "reference"}
    raw = {"content": "```verilog\n{design}```", "design": "raw_crossing"}
    refuse = {"refusal": "I can't help with that."}
    script = {"name": "page-mix", "variants": [[fix], [refuse], [raw]]}
    said: list[str] = []
    with StandinServer(scripts={"page-mix": script}) as srv:
        settings = EvalSettings(mode="oneshot", base_url=srv.url, model="page-mix",
                                tasks=["handshake", "handshake_control"], samples=3, hidden=2,
                                concurrency=1, backoff_s=0.01)
        run_eval(settings, tmp_path / "run", progress=ProgressBar(tty=False), say=said.append,
                 controls=lambda sim: (True, [], "4 controls behaved as expected"))
    assert said == ["controls passed on icarus before any model call: 4 controls behaved as expected"]
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].endswith("ETA -") and "refused: model 1 grader 1" in lines[-1]
    assert "| controls pass 1/3" in lines[-1] and "pass 1  " in lines[-1]

    page = render(load_folder(tmp_path / "run"))
    text = "\n".join(parse(page).text)
    for needle in ("model\npage-mix", "mode\noneshot", f"endpoint\n{srv.url}", "started\n2", "finished\n2"):
        assert needle in text, needle
    verdicts = page[page.index("<h2>Verdicts</h2>"):page.index("<h2>Where grades stopped</h2>")]
    assert ">refused (model)</td><td class=\"n\">1<" in verdicts
    assert ">refused (grader)</td><td class=\"n\">1<" in verdicts
    assert ">pass</td><td class=\"n\">1<" in verdicts  # the control's pass is not counted here
    assert "<b>3</b> graded" in page and "Plus 3 no-bug control rollouts" in text
    controls = page[page.index("<h2>No-bug controls</h2>"):]
    assert "<td>handshake_control</td><td class=\"n\">3</td>" in controls
    assert "handshake_control (no-bug control)" in text
