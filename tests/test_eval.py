"""Model runs against the stand-in model over real HTTP: rewards, labels, retries, resume, controls,
and -- checked on the server side -- that no grade report ever reaches the model.

Grading is real (Icarus, bubblewrap) on few hidden seeds. The controls are exercised on their own
(a failing one here, the real registry in the CLI test); the other runs pass a control set that
always agrees, so that each test pays only for its own rollouts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cdc_env.errors import CdcError
from cdc_env.eval import ROW_FIELDS, ControlsFailed, EndpointUnavailable, EvalSettings, Results, run_eval
from cdc_env.grade import grade
from cdc_env.standin import StandinServer
from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

pytest.importorskip("openai", reason="the openai client is not installed (pip install .[eval])")
pytestmark = [needs_icarus, needs_bwrap]

HIDDEN = 2


def trusted_controls(sim: str) -> tuple[bool, list[dict], str]:
    return True, [], "controls run in their own tests"


@pytest.fixture(scope="module")
def server():
    with StandinServer() as srv:
        yield srv


def run(srv: StandinServer, tmp_path, model: str, mode: str = "oneshot", tasks=("handshake",), samples=1,
        resume: bool = False, **kw) -> tuple[list[dict], dict]:
    settings = EvalSettings(mode=mode, base_url=srv.url, model=model, tasks=list(tasks), samples=samples,
                            hidden=kw.pop("hidden", HIDDEN), backoff_s=0.01, **kw)
    out = tmp_path / model
    summary = run_eval(settings, out, resume=resume, controls=trusted_controls)
    return Results(out).load(), summary


def only(rows: list[dict]) -> dict:
    assert len(rows) == 1, rows
    return rows[0]


def test_oneshot_correct_fix_scores(server, tmp_path):
    row = only(run(server, tmp_path, "oneshot-correct")[0])
    assert (row["reward"], row["label"], row["failed_stage"]) == (1, "pass", None)
    assert row["parse"] == "fenced block 2 of 2"  # the last complete block, no language tag
    assert set(ROW_FIELDS) <= set(row)
    assert row["tokens_in"] > 0 and row["grade_cpu_s"] > 0
    traj = json.loads((tmp_path / "oneshot-correct" / row["trajectory"]).read_text())
    assert traj["report"]["verdict"] == "pass" and traj["submission"].strip().endswith("endmodule")


def test_agentic_correct_fix_through_tool_calls(server, tmp_path):
    row = only(run(server, tmp_path, "agent-correct", "agentic", tasks=("event",))[0])
    assert (row["reward"], row["label"]) == (1, "pass")
    assert (row["tool_calls"], row["sim_runs"], row["harness_submitted"]) == (5, 1, False)


def test_hack_scores_zero_with_its_finding(server, tmp_path):
    rows, summary = run(server, tmp_path, "oneshot-hack")
    row = only(rows)
    assert (row["reward"], row["label"], row["failed_stage"]) == (0, "refused", "gate")
    assert "CDC-RAW" in row["findings"]
    assert row["gate"] == "refused" and row["sim_verdict"] is not None  # graded again, gate off
    assert summary["overall"]["refused_gate"] == 1 and summary["overall"]["refused_model"] == 0


def test_structural_gap_counts_a_gate_refusal_that_simulates_clean(server, tmp_path):
    rows, summary = run(server, tmp_path, "oneshot-handwritten-sync")
    row = only(rows)
    assert (row["label"], row["gate"], row["sim_verdict"]) == ("refused", "refused", "pass")
    assert summary["structural_gap"] == {"sim_pass_gate_decided": 1, "gate_refused": 1, "rate": 1.0}


def test_malformed_answer_is_refused_parse(server, tmp_path):
    rows, summary = run(server, tmp_path, "oneshot-malformed")
    row = only(rows)
    assert (row["reward"], row["label"], row["grade_cpu_s"]) == (0, "refused_parse", 0.0)
    assert summary["overall"]["refused_parse"] == 1 and summary["overall"]["refused_gate"] == 0


@pytest.mark.parametrize("mode", ["oneshot", "agentic"])
def test_refusal_is_refused_with_the_reason(server, tmp_path, mode):
    row = only(run(server, tmp_path, "refusal", mode)[0])
    assert (row["reward"], row["label"], row["failed_stage"]) == (0, "refused", "model")
    assert "can't help" in row["refusal"]


def test_content_filter_is_a_refusal(server, tmp_path):
    row = only(run(server, tmp_path, "content-filter", "agentic")[0])
    assert (row["label"], row["refusal"]) == ("refused", "content_filter")


@pytest.mark.parametrize("model,mode", [("oneshot-429", "oneshot"), ("agent-429", "agentic")])
def test_429_then_success_is_one_result(server, tmp_path, model, mode):
    row = only(run(server, tmp_path, model, mode)[0])
    assert (row["reward"], row["retries"]) == (1, 2)


def test_retries_are_bounded(server, tmp_path):
    rows, summary = run(server, tmp_path, "oneshot-429", tasks=("event",), retries=1)
    row = only(rows)
    assert (row["label"], row["failed_stage"], row["retries"]) == ("endpoint_error", "endpoint", 1)
    assert "HTTP 500 after 1 retries" in row["error"]
    # not a result: no reward, left out of the rates, counted beside them
    assert row["reward"] is None
    o = summary["overall"]
    assert (o["decided"], o["not_results"], o["pass_rate"], o["mean_reward"]) == (0, 1, None, None)


def test_a_slow_endpoint_times_out_boundedly(server, tmp_path):
    row = only(run(server, tmp_path, "slow", timeout_s=0.3, retries=1)[0])
    assert (row["label"], row["retries"]) == ("endpoint_error", 1)
    assert "APITimeoutError after 1 retries" in row["error"]


def test_an_endpoint_that_refuses_everything_stops_the_run(server, tmp_path):
    with pytest.raises(CdcError, match="HTTP 404.*no script named 'no-such-model'"):
        run(server, tmp_path, "no-such-model", samples=3)
    assert Results(tmp_path / "no-such-model").load() == []


def test_malformed_tool_arguments_are_counted_and_answered(server, tmp_path):
    rows, summary = run(server, tmp_path, "agent-malformed", "agentic")
    row = only(rows)
    assert (row["malformed_args"], row["unknown_tools"], row["tool_calls"], row["reward"]) == (1, 1, 4, 1)
    tool_msgs = [m for m in json.loads((tmp_path / "agent-malformed" / row["trajectory"]).read_text())
                 ["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"].startswith("Error: bad arguments for write")
    assert summary["malformed_args"] == 1


def test_no_tool_call_gets_one_reminder_then_submission(server, tmp_path):
    row = only(run(server, tmp_path, "agent-no-tool-call", "agentic")[0])
    assert (row["reminders"], row["harness_submitted"], row["tool_calls"]) == (1, True, 0)
    assert row["label"] == "fail"  # the defect as shipped fails its visible seeds


def test_the_report_never_reaches_the_model(tmp_path):
    """Server side: no request the stand-in received holds any part of a grade report."""
    with StandinServer() as srv:
        rows = []
        for model in ("agent-correct", "agent-hack", "agent-no-tool-call"):
            rows += run(srv, tmp_path, model, "agentic")[0]
        sent = json.dumps(srv.requests)
    assert len(rows) == 3 and len(srv.requests) >= 7
    for row in rows:
        traj = json.loads((tmp_path / row["model"] / row["trajectory"]).read_text())
        report = traj["report"]
        assert report is not None
        leaks = [report["submission_sha256"], "submission_sha256", "failed_stage", "cdc_env_version",
                 "overfit", *(f["message"] for f in report["findings"]),
                 *(str(r["seed"]) for r in report["seeds"].get("hidden", {}).get("results") or [])]
        if report["reason"]:
            leaks.append(report["reason"])
        assert [s for s in leaks if s in sent] == [], row["model"]
    assert any(f for r in rows for f in r["findings"])  # the hack's finding existed to leak
    hidden_seeds = [r["seed"] for row in rows
                    for r in json.loads((tmp_path / row["model"] / row["trajectory"]).read_text())
                    ["report"]["seeds"].get("hidden", {}).get("results") or []]
    assert len(hidden_seeds) >= HIDDEN  # and the correct fix's hidden seed numbers


def test_resume_adds_no_duplicate_rows(server, tmp_path):
    rows, _ = run(server, tmp_path, "oneshot-mixed", samples=3)
    assert sorted(r["sample"] for r in rows) == [0, 1, 2]
    path = tmp_path / "oneshot-mixed" / "results.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[0] + "\n" + lines[1][:20])  # a duplicate and a cut line
    before = len(server.requests)
    rows, summary = run(server, tmp_path, "oneshot-mixed", samples=3, resume=True)
    assert sorted(r["sample"] for r in rows) == [0, 1, 2]
    assert len(server.requests) - before == 2  # only the two missing rollouts asked the model
    assert summary["resumed_rows"] == 1 and summary["overall"]["rollouts"] == 3


def test_resume_runs_endpoint_errors_again(tmp_path):
    with StandinServer() as srv:
        first = only(run(srv, tmp_path, "oneshot-429", retries=1)[0])  # 429, then 500: out of retries
        again = only(run(srv, tmp_path, "oneshot-429", retries=3, resume=True)[0])
    assert (first["label"], again["label"], again["reward"]) == ("endpoint_error", "pass", 1)


def test_an_existing_run_needs_resume_and_the_same_settings(server, tmp_path):
    run(server, tmp_path, "oneshot-malformed")
    with pytest.raises(CdcError, match="--resume"):
        run(server, tmp_path, "oneshot-malformed")
    with pytest.raises(CdcError, match="other settings .*hidden"):
        run(server, tmp_path, "oneshot-malformed", resume=True, hidden=HIDDEN + 1)


def test_a_failing_control_stops_the_run_before_any_model_call(server, tmp_path):
    """A real control that misbehaves: the defect as shipped, graded with late settling off (a grader
    that cannot see CDC bugs), passes where it must fail."""
    task = load_task("handshake")

    def blind_grader_controls(sim: str) -> tuple[bool, list[dict], str]:
        report = grade(task, task.defective_text, sim=sim, hidden=HIDDEN, settle=False)
        ok = report["verdict"] != "pass"
        return ok, [{"fixture": "defect-as-shipped", "got": report["verdict"]}], \
            "" if ok else "hack defect-as-shipped passed (expected fail)"

    before = len(server.requests)
    settings = EvalSettings(mode="oneshot", base_url=server.url, model="oneshot-correct", tasks=["handshake"],
                            hidden=HIDDEN)
    with pytest.raises(ControlsFailed, match="defect-as-shipped passed"):
        run_eval(settings, tmp_path / "out", controls=blind_grader_controls)
    assert not (tmp_path / "out").exists()
    assert len(server.requests) == before


def test_cli_with_the_real_controls(server, tmp_path):
    """``cdc-env eval`` end to end: the registry's controls, the key from the environment only."""
    pytest.importorskip("cdc_env.fixtures", reason="the fixture registry (cdc_env.fixtures) is missing")
    secret = "sk-cli-test-secret"
    with StandinServer(api_key=secret) as srv:
        out = tmp_path / "cli"
        proc = subprocess.run(
            [sys.executable, "-m", "cdc_env.cli", "eval", "--mode", "oneshot", "--base-url", srv.url,
             "--model", "oneshot-mixed", "--api-key-env", "CDC_TEST_KEY", "--tasks", "handshake",
             "--samples", "2", "--hidden", str(HIDDEN), "--out", str(out)],
            capture_output=True, text=True, env={**os.environ, "CDC_TEST_KEY": secret}, timeout=580)
    assert proc.returncode == 0, proc.stderr
    assert "| handshake | 2 | 2 | 100.0% |" in proc.stdout
    said = [line for line in proc.stderr.splitlines() if "before any model call" in line]
    assert len(said) == 1
    assert said[0].startswith("cdc-env eval: controls passed on icarus before any model call: ")
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["controls"]["ok"] and meta["controls"]["count"] >= 4
    assert meta["api_key_env"] == "CDC_TEST_KEY"
    assert not any(secret in p.read_text() for p in out.rglob("*") if p.is_file())


def test_a_mixed_agent_keeps_each_sample_on_its_own_script(server, tmp_path):
    """agent-mixed: five samples, five different multi-turn scripts, concurrently."""
    rows, summary = run(server, tmp_path, "agent-mixed", "agentic", samples=5, concurrency=2)
    got = sorted((r["label"], r["failed_stage"] or "") for r in rows)
    assert got == [("fail", "visible"), ("pass", ""), ("pass", ""), ("refused", "gate"), ("refused", "model")]
    assert summary["malformed_args"] == 1 and summary["pass_at_k"]["pass@1"] == pytest.approx(0.4)


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_stops_before_the_controls(tmp_path):
    called = []

    def controls(sim: str) -> tuple[bool, list[dict], str]:
        called.append(sim)
        return True, [], ""

    settings = EvalSettings(mode="oneshot", base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="m",
                            tasks=["handshake"], hidden=HIDDEN)
    with pytest.raises(EndpointUnavailable, match="cannot reach the endpoint"):
        run_eval(settings, tmp_path / "out", controls=controls)
    assert called == [] and not (tmp_path / "out").exists()


def test_cli_against_a_closed_port_exits_non_zero_with_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "cdc_env.cli", "eval", "--mode", "agentic", "--base-url",
         f"http://127.0.0.1:{_closed_port()}/v1", "--model", "m", "--tasks", "handshake", "--out",
         str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "cannot reach the endpoint" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_resume_can_add_samples_but_not_drop_them(server, tmp_path):
    rows, _ = run(server, tmp_path, "oneshot-mixed", samples=2)
    before = len(server.requests)
    rows, summary = run(server, tmp_path, "oneshot-mixed", samples=3, resume=True)
    assert sorted(r["sample"] for r in rows) == [0, 1, 2]
    assert len(server.requests) - before == 1 and summary["samples"] == 3
    with pytest.raises(CdcError, match="can add samples"):
        run(server, tmp_path, "oneshot-mixed", samples=2, resume=True)


# ---------------------------------------------------------------------- grades on a backend (issue 17)

# fix, fix, a gate-refused hand-written synchronizer, a raw crossing (each refusal: a gate-off regrade)
BACKEND_RUNS = (("oneshot-mixed", "oneshot", ("handshake",), 4),
                ("agent-correct", "agentic", ("event",), 1))  # the env's submit grade


def eval_on(out, grader=None, grades_on=None) -> dict:
    """The BACKEND_RUNS evals into ``out``, on a fresh stand-in (its variants go in turn per task);
    (model, task, sample) -> (row, trajectory)."""
    got = {}
    with StandinServer() as srv:
        for model, mode, tasks, samples in BACKEND_RUNS:
            settings = EvalSettings(mode=mode, base_url=srv.url, model=model, tasks=list(tasks),
                                    samples=samples, hidden=HIDDEN, backoff_s=0.01, concurrency=2)
            run_eval(settings, out / model, controls=trusted_controls, grader=grader, grades_on=grades_on)
            for row in Results(out / model).load():
                traj = json.loads((out / model / row["trajectory"]).read_text())
                got[model, row["task"], row["sample"]] = (row, traj)
    return got


@pytest.fixture(scope="module")
def local_eval(tmp_path_factory):
    return eval_on(tmp_path_factory.mktemp("local"))


@pytest.mark.parametrize("kind", ["pool", "ray"])
def test_eval_on_a_backend_gives_the_local_verdicts_and_trace_hashes(local_eval, tmp_path, kind):
    """One-shot grades, the gate-off regrade and an agentic submit go through the backend (real
    openai client, real HTTP to the stand-in); verdicts, seeds and trace hashes equal the local run's."""
    from cdc_env.backends import LocalPool, RayBackend, grade_function
    from cdc_env.batch import strip_timing

    if kind == "ray":
        pytest.importorskip("ray", reason="Ray is not installed (pip install 'cdc_env[ray]')")
        backend = RayBackend("local", init_kwargs={"num_cpus": 2, "object_store_memory": 100 << 20})
    else:
        backend = LocalPool(2)
    calls = []
    with backend:
        on_backend = grade_function(backend)

        def grader(task, text, options):
            calls.append(options.gate)
            return on_backend(task, text, options)

        got = eval_on(tmp_path, grader, backend.info())
    # 4 one-shot grades + 2 gate-off regrades of the refused ones + 1 agentic submit
    assert sorted(calls) == [False] * 2 + [True] * 5
    meta = json.loads((tmp_path / "agent-correct" / "metadata.json").read_text())
    assert meta["grades_on"]["backend"] == kind
    assert got.keys() == local_eval.keys()
    labels = [row["label"] for row, _ in got.values()]
    assert labels.count("pass") == 3, labels
    hashes = 0
    for key, (row, traj) in got.items():
        lrow, ltraj = local_eval[key]
        assert (row["label"], row["reward"], row["gate"], row["sim_verdict"]) == \
            (lrow["label"], lrow["reward"], lrow["gate"], lrow["sim_verdict"]), key
        for rep in ("report", "gate_off_report"):
            assert strip_timing(traj[rep]) == strip_timing(ltraj[rep]), (key, rep)
        mine, theirs = (
            [(s["seed"], s["hash"]) for stage in t["report"]["seeds"].values() for s in stage["results"]]
            for t in (traj, ltraj))
        assert mine == theirs, key
        hashes += len(mine)
    assert hashes >= 3 * (2 + 2 * HIDDEN) // 2  # the passing grades ran their visible and hidden seeds


def test_cli_eval_refuses_workers_and_ray_together(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cdc_env.cli", "eval", "--mode", "oneshot", "--base-url",
                           "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "o"),
                           "--workers", "2", "--ray", "auto"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "choose --workers or --ray" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("model,mode,label", [("oneshot-correct", "oneshot", "pass"),
                                              ("agent-correct", "agentic", "pass"),
                                              ("agent-hack", "agentic", "refused"),
                                              ("refusal", "agentic", "refused")])
def test_streamed_completions_give_the_same_results(server, tmp_path, model, mode, label):
    """--stream: streamed chat completions (tool calls assembled from their deltas) give the rows a
    plain run gives, token counts included; the stand-in saw only streamed requests."""
    n = len(server.requests)
    streamed = only(run(server, tmp_path / "s", model, mode, stream=True)[0])
    assert all(r.get("stream") is True for r in server.requests[n:])
    plain = only(run(server, tmp_path / "p", model, mode)[0])
    keys = ("label", "reward", "failed_stage", "refusal", "tool_calls", "tokens_in", "tokens_out")
    assert streamed["label"] == label
    assert {k: streamed.get(k) for k in keys} == {k: plain.get(k) for k in keys}


def test_cli_eval_takes_stream():
    from cdc_env.cli import build_parser

    args = build_parser("eval").parse_args(["eval", "--mode", "oneshot", "--base-url", "http://127.0.0.1:1/v1",
                                            "--model", "m", "--out", "o", "--stream"])
    assert args.stream is True


def test_sim_auto_is_accepted_like_grade_and_grade_batch(server, tmp_path):
    """--sim auto: each grade on the cheaper simulator; the metadata names every one it may choose."""
    row = only(run(server, tmp_path, "oneshot-correct", sim="auto")[0])
    assert (row["reward"], row["label"]) == (1, "pass")
    meta = json.loads((tmp_path / "oneshot-correct" / "metadata.json").read_text())
    assert meta["simulator"]["name"] == "auto" and set(meta["simulator"]["versions"]) >= {"icarus"}
    p = subprocess.run([sys.executable, "-m", "cdc_env.cli", "eval", "--help"], capture_output=True,
                       text=True)
    assert "auto" in p.stdout
