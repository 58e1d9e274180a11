"""grade-batch on the local process pool: results, bad lines, resume, a killed worker, the CLI."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cdc_env.backends import GradeJob, LocalPool, node_check
from cdc_env.batch import BatchRun, compare_results, load_results, parse_line, run_batch, summarize
from cdc_env.report import validate_report
from cdc_env.task import load_task

ROOT = Path(__file__).resolve().parents[1]
needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")


def write_predictions(path: Path, extra: list[str] = ()) -> dict[str, str]:
    """Four real predictions (two fixes, a defect, an allowlist hack) plus ``extra`` raw lines;
    returns id -> expected verdict."""
    hs, ev = load_task("handshake"), load_task("event")
    rows = [
        ({"id": "fix-hs", "task": "handshake", "submission": hs.reference_text}, "pass"),
        ({"id": "fix-ev", "task": "event", "submission": ev.reference_text, "hidden": 2}, "pass"),
        ({"id": "defect-hs", "task": "handshake", "submission": hs.defective_text}, "fail"),
        ({"id": 7, "task": "handshake", "submission": "--- a/tb.v\n+++ b/tb.v\n@@ -1 +1 @@\n-x\n+y\n"},
         "refused"),
    ]
    lines = [json.dumps(r) for r, _ in rows] + list(extra)
    path.write_text("\n".join(lines) + "\n")
    return {str(r["id"]): v for r, v in rows}


BAD = ['{"id": "torn", "task": ', json.dumps({"id": "x1", "task": "no_such_task", "submission": ""}),
       json.dumps({"task": "handshake", "submission": "x"}),
       json.dumps({"id": "fix-hs", "task": "handshake", "submission": "dup"}),
       json.dumps({"id": "x2", "task": "handshake", "submission": "x", "hiden": 3}),
       json.dumps({"id": "x3", "task": "handshake", "submission": "x", "sim": "modelsim"}),
       "[1, 2]"]


def test_parse_line_reasons():
    known = {"handshake"}
    ok = parse_line('{"id": "a", "task": "handshake", "submission": "s", "hidden": 3, "meta": {"k": 1}}',
                    1, sim="icarus", hidden="all", known_tasks=known)
    assert ok == GradeJob("a", "handshake", "s", "icarus", 3)
    for raw, reason in [('{"id": true, "task": "handshake", "submission": ""}', "id must be"),
                        ('{"id": "a", "task": "handshake", "submission": 3}', "submission must be"),
                        ('{"id": "a", "task": "handshake", "submission": "", "hidden": -1}', "hidden must"),
                        ('{"id": "a", "task": "handshake", "submission": "", "hidden": "x"}', "hidden must"),
                        ('{"id": "a", "task": "handshake", "submission": "", "hidden": true}', "hidden must"),
                        ('{"id": "a", "task": "x", "submission": ""}', "unknown task")]:
        with pytest.raises(ValueError, match=reason):
            parse_line(raw, 1, sim="icarus", hidden="all", known_tasks=known)


@needs_icarus
def test_batch_results_bad_lines_and_resume(tmp_path):
    pred = tmp_path / "p.jsonl"
    expect = write_predictions(pred, BAD)
    out = tmp_path / "out"
    bad_seen = []
    s = run_batch(BatchRun(pred, out, hidden=1, on_bad_line=bad_seen.append, progress=False), LocalPool(2))
    rows = load_results(out / "results.jsonl")
    assert {k: r["verdict"] for k, r in rows.items()} == expect
    assert rows["7"]["id"] == 7 and rows["7"]["failed_stage"] == "allowlist"
    for row in rows.values():
        validate_report(row)  # a results line is a grade report (plus its id)
    assert s["bad_lines"] == len(BAD) == len(bad_seen)
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert [e["line"] for e in errors] == list(range(5, 5 + len(BAD)))
    assert "duplicate id" in errors[3]["reason"] and "unknown field" in errors[4]["reason"]
    assert s["by_verdict"] == {"pass": 2, "fail": 1, "refused": 1}
    assert s["by_task"]["handshake"]["graded"] == 3 and s["overfit"] == 0
    assert s["cpu_s"]["total"] > 0 and (out / "summary.md").read_text().count("| handshake |") == 1
    assert json.loads((out / "summary.json").read_text())["graded"] == 4

    # Without --resume the folder is not overwritten.
    with pytest.raises(Exception, match="--resume"):
        run_batch(BatchRun(pred, out, hidden=1, progress=False), LocalPool(1))

    # Resume: a torn last line and a batch error are re-graded, kept results are not re-run.
    lines = (out / "results.jsonl").read_text().splitlines()
    keep = [ln for ln in lines if json.loads(ln)["id"] not in ("fix-hs", "fix-ev")]
    kept_defect = next(json.loads(ln) for ln in keep if json.loads(ln)["id"] == "defect-hs")
    err = json.dumps({"id": "fix-hs", "task": "handshake", "verdict": "tool_error", "batch_error": True})
    (out / "results.jsonl").write_text("\n".join(keep + [err, '{"id": "fix-ev", "verd']) + "\n")
    s2 = run_batch(BatchRun(pred, out, hidden=1, resume=True, progress=False), LocalPool(1))
    assert s2["resumed"] == 2 and s2["graded"] == 4
    rows2 = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(str(r["id"]) for r in rows2) == sorted(expect)  # each id exactly once
    assert {str(r["id"]): r["verdict"] for r in rows2} == expect
    assert next(r for r in rows2 if r["id"] == "defect-hs")["wall_s"] == kept_defect["wall_s"]

    # Resume with other defaults is refused.
    with pytest.raises(Exception, match="other settings"):
        run_batch(BatchRun(pred, out, hidden=2, resume=True, progress=False), LocalPool(1))


@needs_icarus
def test_killed_pool_worker_loses_no_result(tmp_path):
    fifo = load_task("fifo_01")
    pred = tmp_path / "p.jsonl"
    rows = [{"id": f"f{i}", "task": "fifo_01", "submission": fifo.reference_text + f"// {i}\n"}
            for i in range(6)]
    pred.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = LocalPool(2)
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            procs = getattr(pool._pool, "_processes", None) or {}
            results = tmp_path / "out" / "results.jsonl"
            if results.is_file() and results.stat().st_size and procs:  # mid-run: one grade is in
                pid = next(iter(procs))
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.2)

    t = threading.Thread(target=killer)
    t.start()
    s = run_batch(BatchRun(pred, tmp_path / "out", hidden=4, progress=False), pool)
    t.join()
    assert killed, "no worker was killed"
    assert pool.restarts >= 1
    got = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in got) == sorted(r["id"] for r in rows)
    assert all(r["verdict"] == "pass" and not r.get("batch_error") for r in got)
    assert s["graded"] == 6 and s["not_graded"] == 0


def test_node_check_reports_missing_tools(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if shutil.which("bwrap"):
        (bin_dir / "bwrap").symlink_to(shutil.which("bwrap"))
    code = "import json; from cdc_env.backends import node_check; print(json.dumps(node_check('icarus')))"
    env = {**os.environ, "PATH": str(bin_dir), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    assert row["ok"] is False and any("iverilog" in p for p in row["problems"])
    if shutil.which("iverilog") and shutil.which("bwrap"):
        here = node_check("icarus")
        assert here["ok"] is True, here["problems"]


def test_summarize_counts_errors_apart():
    rows = [{"id": 1, "task": "a", "verdict": "pass", "failed_stage": None, "overfit": False,
             "cpu_s": 1.0},
            {"id": 2, "task": "a", "verdict": "overfit", "failed_stage": "hidden", "overfit": True,
             "cpu_s": 3.0},
            {"id": 3, "task": "b", "verdict": "tool_error", "batch_error": True, "cpu_s": 0.0}]
    s = summarize(rows)
    assert s["graded"] == 2 and s["not_graded"] == 1 and s["overfit"] == 1
    assert s["cpu_s"]["total"] == 4.0 and s["cpu_s"]["per_grade_mean"] == 2.0
    assert s["by_failed_stage"] == {"hidden": 1, "none (pass)": 1} and s["by_task"]["a"]["pass_rate"] == 0.5


def test_compare_results_ignores_timing_only(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    row = {"id": "p", "verdict": "pass", "cpu_s": 1.0, "stages": [{"name": "x", "cpu_s": 0.1}],
           "seeds": {"hidden": {"results": [{"hash": "h1"}]}}}
    (a / "results.jsonl").write_text(json.dumps(row) + "\n")
    slower = {**row, "cpu_s": 9.0, "stages": [{"name": "x", "cpu_s": 5}]}
    (b / "results.jsonl").write_text(json.dumps(slower) + "\n")
    assert compare_results(a, b) == []
    row["seeds"]["hidden"]["results"][0]["hash"] = "h2"
    (b / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert compare_results(a, b) == ["p: differs in seeds"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "cdc_env.cli", *args], env=env, capture_output=True,
                          text=True, timeout=600)


def test_cli_bad_usage_is_one_line(tmp_path):
    for args in (["grade-batch", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o")],
                 ["grade-batch", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o"),
                  "--workers", "2", "--ray", "auto"],
                 ["grade-batch", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o"),
                  "--workers", "0"]):
        p = run_cli(*args)
        assert p.returncode == 2, p.stderr
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


@needs_icarus
def test_cli_json_summary_and_progress_log(tmp_path):
    pred = tmp_path / "p.jsonl"
    expect = write_predictions(pred, BAD[:1])
    p = run_cli("grade-batch", str(pred), "--out", str(tmp_path / "o"), "--workers", "1", "--hidden", "1",
                "--json", "--progress")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["graded"] == len(expect) and s["bad_lines"] == 1
    assert "p.jsonl:5: not JSON" in p.stderr
    assert "graded 4/4 (100%)" in p.stderr and "ETA" in p.stderr and "\r" not in p.stderr


@needs_icarus
def test_grade_function_is_a_drop_in_for_grade():
    from cdc_env import grade
    from cdc_env.backends import grade_function

    task = load_task("handshake")
    with LocalPool(1) as pool:
        remote = grade_function(pool)
        got = remote(task, task.defective_text.encode(), sim="icarus", hidden=0)
        gate_off = remote("handshake", task.reference_text, hidden=1, gate=False)
    here = grade(task, task.defective_text, hidden=0)
    assert "id" not in got and got["verdict"] == here["verdict"] == "fail"
    assert got["seeds"]["visible"]["results"] == here["seeds"]["visible"]["results"]
    assert gate_off["verdict"] == "pass" and gate_off["stages"][1]["status"] == "not_run"


def test_core_never_imports_ray():
    code = ("import sys, cdc_env.cli, cdc_env.batch, cdc_env.backends, cdc_env.report_html; "
            "cdc_env.cli.build_parser(); print('ray' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_grades_cpu_leaves_out_the_other_threads_of_its_process():
    """A Ray worker's own threads run beside the grade: their CPU is not the grade's. A spinning
    thread alive across the window is counted as foreign; the calling thread's own work is not."""
    from cdc_env.backends import foreign_cpu, thread_cpu

    stop = threading.Event()
    spun = {}

    def spin() -> None:
        t0 = time.thread_time()
        while not stop.is_set():
            sum(range(2000))
        spun["cpu"] = time.thread_time() - t0

    t = threading.Thread(target=spin)
    t.start()
    before = thread_cpu()
    mine0 = time.thread_time()
    while time.thread_time() - mine0 < 0.3:  # the "grade": CPU in this thread
        sum(range(2000))
    after = thread_cpu()
    stop.set()
    t.join()
    other = foreign_cpu(before, after)
    assert 0 < other <= spun["cpu"] + 0.01
    assert other <= sum(after.values()) - sum(before.values()) - 0.29  # without this thread's 0.3 CPU-s


@pytest.mark.skipif(shutil.which("iverilog") is None or shutil.which("bwrap") is None,
                    reason="iverilog and bubblewrap are needed")
def test_lean_grader_grades_in_its_child_and_survives_its_death():
    """What a Ray task runs: the job goes to a plain child process; a killed child is restarted."""
    from cdc_env.backends import LeanGrader

    t = load_task("handshake")
    lean = LeanGrader()
    try:
        first = lean.grade(GradeJob(id="a", task="handshake", submission=t.reference_text, hidden=1))
        child = lean._proc.pid
        assert (first["id"], first["verdict"]) == ("a", "pass") and child != os.getpid()
        os.kill(child, signal.SIGKILL)
        lean._proc.wait()
        second = lean.grade(GradeJob(id="b", task="handshake", submission=t.defective_text, hidden=1))
        assert (second["id"], second["verdict"]) == ("b", "fail") and lean._proc.pid != child
    finally:
        lean.close()


def test_swebench_fields_are_ours():
    known = {"handshake", "event"}
    job = parse_line(json.dumps({"instance_id": "handshake__m1-7", "model_patch": "d",
                                 "model_name_or_path": "m1"}), 1, sim="icarus", hidden=2, known_tasks=known)
    assert job == GradeJob("handshake__m1-7", "handshake", "d", "icarus", 2)
    job = parse_line(json.dumps({"instance_id": "event", "model_patch": "d"}), 1, sim="icarus", hidden=2,
                     known_tasks=known)
    assert job.task == "event"
    job = parse_line(json.dumps({"instance_id": "x-1", "task": "event", "model_patch": "d"}), 1, sim="icarus",
                     hidden=2, known_tasks=known)
    assert (job.id, job.task) == ("x-1", "event")
    for obj, reason in [({"instance_id": "astropy__astropy-1", "model_patch": "d"}, "unknown task 'astropy'"),
                        ({"instance_id": "handshake__1", "id": "a", "model_patch": "d"},
                         "both instance_id and id"),
                        ({"instance_id": "handshake__1", "model_patch": "d", "model_name_or_path": 3},
                         "model_name_or_path must be a string")]:
        with pytest.raises(ValueError, match=reason):
            parse_line(json.dumps(obj), 1, sim="icarus", hidden=2, known_tasks=known)


@needs_icarus
def test_swebench_predictions_through_grade_batch(tmp_path):
    """SWE-bench lines as a SWE-bench harness writes them: each gets its expected verdict, the model
    name reaches every result row and the per-model summary, and a diff a few lines off applies
    with its offset in the report."""
    import difflib

    hs, ev = load_task("handshake"), load_task("event")
    pad = "// a line the model remembered\n// and another\n"
    drifted = "".join(difflib.unified_diff((pad + hs.defective_text).splitlines(True),
                                           (pad + hs.reference_text).splitlines(True),
                                           "a/hs_top.v", "b/hs_top.v"))
    m1, m2 = {"model_name_or_path": "m1"}, {"model_name_or_path": "m2"}
    lines = [
        ({"instance_id": "handshake__m1-1", **m1, "model_patch": drifted}, "pass"),
        ({"instance_id": "handshake__m2-1", **m2, "model_patch": hs.defective_text}, "fail"),
        ({"instance_id": "run-3", "task": "event", **m2, "model_patch": ev.reference_text}, "pass"),
    ]
    pred = tmp_path / "preds.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r, _ in lines))
    p = run_cli("grade-batch", str(pred), "--out", str(tmp_path / "o"), "--workers", "1", "--hidden", "2",
                "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    rows = load_results(tmp_path / "o" / "results.jsonl")
    assert {k: r["verdict"] for k, r in rows.items()} == {r["instance_id"]: v for r, v in lines}
    assert {k: r["model_name_or_path"] for k, r in rows.items()} == {r["instance_id"]: r["model_name_or_path"]
                                                                    for r, _ in lines}
    allow = next(st for st in rows["handshake__m1-1"]["stages"] if st["name"] == "allowlist")
    assert "applied with offsets: hunk 1 at -2" in allow["detail"]
    assert s["by_model"]["m1"]["pass"] == 1 and s["by_model"]["m2"]["graded"] == 2
    assert s["by_model"]["m2"]["pass_rate"] == 0.5
    assert "| m2 | 2 | 50.0% |" in (tmp_path / "o" / "summary.md").read_text()


def test_nothing_graded_exits_non_zero(tmp_path):
    pred = tmp_path / "preds.jsonl"
    pred.write_text(json.dumps({"instance_id": "astropy__astropy-1", "model_patch": "x",
                                "model_name_or_path": "m"}) + "\n" + "not json\n")
    p = run_cli("grade-batch", str(pred), "--out", str(tmp_path / "o"), "--workers", "1", "--quiet")
    assert p.returncode == 2 and "graded 0 of 2 lines" in p.stderr and "Traceback" not in p.stderr


@needs_icarus
def test_resume_regrades_a_result_whose_submission_changed(tmp_path):
    """--resume compares each kept result's task and submission SHA-256 with its id's line now: a
    changed submission under the same id is graded again, not kept with its old verdict."""
    hs = load_task("handshake")
    pred = tmp_path / "p.jsonl"
    pred.write_text(json.dumps({"id": "a", "task": "handshake", "submission": hs.defective_text}) + "\n"
                    + json.dumps({"id": "b", "task": "handshake", "submission": hs.reference_text}) + "\n")
    out = tmp_path / "out"
    run_batch(BatchRun(pred, out, hidden=1, progress=False), LocalPool(1))
    assert load_results(out / "results.jsonl")["a"]["verdict"] == "fail"
    pred.write_text(json.dumps({"id": "a", "task": "handshake", "submission": hs.reference_text}) + "\n"
                    + json.dumps({"id": "b", "task": "handshake", "submission": hs.reference_text}) + "\n")
    s = run_batch(BatchRun(pred, out, hidden=1, resume=True, progress=False), LocalPool(1))
    assert s["resumed"] == 1 and s["stale_regraded"] == 1
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["a", "b"]
    assert {r["id"]: r["verdict"] for r in rows} == {"a": "pass", "b": "pass"}


def test_lines_with_huge_integers_or_deep_nesting_are_bad_lines_not_an_abort(tmp_path):
    from cdc_env.batch import BadLine, iter_predictions

    pred = tmp_path / "p.jsonl"
    good = json.dumps({"id": "ok", "task": "handshake", "submission": "x"})
    big = '{"id": "big", "task": "handshake", "submission": "x", "hidden": 1' + "0" * 4300 + "}"
    deep, deep_id = "[" * 100_000 + "]" * 100_000, '{"id": ' + "[" * 5000 + "]" * 5000 + "}"
    pred.write_text("\n".join([big, deep, deep_id, good]) + "\n")
    items = list(iter_predictions(pred, sim="icarus", hidden="all", known_tasks={"handshake"}))
    assert [type(i).__name__ for i in items] == ["BadLine", "BadLine", "BadLine", "GradeJob"]
    assert "4300" in items[0].reason and "deep" in items[1].reason
    assert all(isinstance(i, BadLine) and len(i.reason.splitlines()) == 1 for i in items[:3])


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@needs_icarus
def test_sigkill_of_grade_batch_leaves_no_pool_workers(tmp_path):
    """SIGKILL of grade-batch mid-run: its forkserver and pool workers (and their simulators) end
    too, instead of grading on with nobody to report to."""
    fifo = load_task("fifo_01")
    pred = tmp_path / "p.jsonl"
    pred.write_text("".join(json.dumps({"id": f"f{i}", "task": "fifo_01",
                                        "submission": fifo.reference_text + f"// {i}\n"}) + "\n"
                            for i in range(8)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "cdc_env.cli", "grade-batch", str(pred), "--out",
                             str(tmp_path / "out"), "--workers", "2", "--hidden", "8"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        below: set[int] = set()
        for _ in range(600):  # until the forkserver and both workers exist (and grade)
            below = _descendants(proc.pid)
            if len(below) >= 4:
                break
            time.sleep(0.1)
        assert len(below) >= 3, "the pool never started"
        proc.kill()
        proc.wait()
        for _ in range(600):
            left = {p for p in below if _alive(p)}
            if not left:
                break
            time.sleep(0.1)
        assert not left, f"processes of the killed grade-batch still run: {sorted(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in below:  # whatever a failing run left (these are this test's own processes)
            if _alive(p):
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)


def test_quiet_keeps_rays_info_lines_off():
    """--quiet asks Ray to log at WARNING (its INFO lines: the local cluster's start, the dashboard)."""
    import logging

    pytest.importorskip("ray", reason="ray is not installed (pip install .[ray])")
    from cdc_env.backends import make_backend

    assert make_backend(ray="local", quiet=True).init_kwargs == {"logging_level": logging.WARNING}
    assert make_backend(ray="local").init_kwargs == {}


# ---------------------------------------------------------------- a user's first week (issue 37)

def _bad_text_lines() -> list[str]:
    """Lines with a lone surrogate in each text field (json.dumps writes it as the escape "\\ud800")."""
    return [json.dumps({"id": "sur-sub", "task": "handshake", "submission": "\ud800"}),
            json.dumps({"instance_id": "handshake__sur-patch", "model_patch": "x\ud800"}),
            json.dumps({"instance_id": "handshake__sur-model", "model_patch": "x",
                        "model_name_or_path": "m\ud800"}),
            json.dumps({"id": "sur-id\ud800", "task": "handshake", "submission": "x"})]


@needs_icarus
def test_a_lone_surrogate_is_a_bad_line_and_nothing_else_is_lost(tmp_path):
    """Each text field holding "\\ud800" makes its line a bad line; every good line is graded and
    the summary (json and md) is written."""
    pred = tmp_path / "p.jsonl"
    want = write_predictions(pred, _bad_text_lines())
    run = BatchRun(pred, tmp_path / "o", hidden=2, progress=False)
    s = run_batch(run, LocalPool(workers=1))
    assert s["graded"] == len(want) and s["bad_lines"] == 4
    assert {k: r["verdict"] for k, r in load_results(tmp_path / "o" / "results.jsonl").items()} == want
    errors = [json.loads(x) for x in (tmp_path / "o" / "errors.jsonl").read_text().splitlines()]
    assert [e["line"] for e in errors] == [5, 6, 7, 8]
    assert all("not Unicode text" in e["reason"] for e in errors), errors
    assert "graded 4 of 8 lines" in (tmp_path / "o" / "summary.md").read_text()


def test_the_model_is_the_graded_lines_never_a_bad_or_duplicate_lines(tmp_path):
    from cdc_env.batch import read_models

    good = {"instance_id": "handshake__a", "model_patch": "x", "model_name_or_path": "right"}
    pred = tmp_path / "p.jsonl"
    pred.write_text("\n".join(json.dumps(o) for o in [
        {**good, "model_name_or_path": "wrong-bad", "hiden": 3},  # a bad line naming the id first
        good,
        {**good, "model_name_or_path": "wrong-dup"},  # a later duplicate
        {"instance_id": "handshake__b", "model_patch": "x", "model_name_or_path": "only-bad", "sim": "nope"},
    ]) + "\n")
    assert read_models(pred, {"handshake"}) == {"handshake__a": "right"}


def test_swebench_terms_unknown_task_null_patch_and_a_json_list(tmp_path):
    known = {"handshake"}
    with pytest.raises(ValueError, match="unknown task 'nosuch'"):
        parse_line(json.dumps({"instance_id": "nosuch__1", "model_patch": "d"}), 1, sim="icarus", hidden=2,
                   known_tasks=known)
    job = parse_line(json.dumps({"instance_id": "handshake__1", "model_patch": None}), 1, sim="icarus",
                     hidden=2, known_tasks=known)
    assert job.submission == ""
    from cdc_env.batch import iter_predictions

    preds = [{"instance_id": "handshake__1", "model_patch": "d", "model_name_or_path": "m"},
             {"instance_id": "nosuch__2", "model_patch": "d"}]
    for name, text in (("preds.json", json.dumps(preds, indent=2)),
                       ("by_id.json", json.dumps({p["instance_id"]: p for p in preds}))):
        (tmp_path / name).write_text(text)
        items = list(iter_predictions(tmp_path / name, sim="icarus", hidden=2, known_tasks=known))
        assert isinstance(items[0], GradeJob) and items[0].id == "handshake__1"
        assert (items[1].line, items[1].id) == (2, "nosuch__2") and "unknown task" in items[1].reason


@needs_icarus
def test_swebench_report_ids_and_run_id(tmp_path):
    """A JSON-list preds.json through the CLI: resolved/unresolved/error ids and the run id."""
    hs = load_task("handshake")
    preds = [{"instance_id": "handshake__fix", "model_patch": hs.reference_text, "model_name_or_path": "m"},
             {"instance_id": "handshake__null", "model_patch": None, "model_name_or_path": "m"},
             {"instance_id": "nosuch__1", "model_patch": "d", "model_name_or_path": "m"}]
    pred = tmp_path / "preds.json"
    pred.write_text(json.dumps(preds))
    p = run_cli("grade-batch", str(pred), "--out", str(tmp_path / "o"), "--workers", "1", "--hidden", "2",
                "--run_id", "week1", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert (s["resolved_ids"], s["unresolved_ids"], s["error_ids"]) == (
        ["handshake__fix"], ["handshake__null"], ["nosuch__1"])
    assert s["run_id"] == json.loads((tmp_path / "o" / "run.json").read_text())["run_id"] == "week1"
    null = load_results(tmp_path / "o" / "results.jsonl")["handshake__null"]
    assert (null["verdict"], null["reward"]) == ("refused", 0)
