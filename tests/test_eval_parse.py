"""The one-shot answer parser, pass@k and the summary: pure functions, no model and no grading."""

from __future__ import annotations

import math

import pytest

from cdc_env.eval import (
    ProgressBar,
    gate_result,
    parse_answer,
    pass_at_k,
    redact_url,
    summarize,
)
from cdc_env.prompts import oneshot_messages
from cdc_env.task import load_task

MOD = "module top (input wire a_i, output wire b_o);\n  assign b_o = a_i;\nendmodule\n"


@pytest.mark.parametrize("answer,how", [
    (f"```verilog\n{MOD}```", "fenced block 1 of 1 (verilog)"),
    (f"Here it is:\n```\n{MOD}```\nDone.", "fenced block 1 of 1"),
    (f"~~~systemverilog\n{MOD}~~~", "fenced block 1 of 1 (systemverilog)"),
    (f"```verilog\n{MOD.rstrip()}```", "fenced block 1 of 1 (verilog)"),  # fence glued to endmodule
    (f"A snippet:\n```verilog\nassign x = y;\n```\nThe file:\n```verilog\n{MOD}```", "fenced block 2 of 2"
     " (verilog)"),
    (f"```verilog\n{MOD}```\nor else\n```verilog\n{MOD}```\n```sh\nmake\n```",
     "fenced block 2 of 3 (verilog)"),
    (f"```verilog\n{MOD}", "fenced block 1 of 1 (verilog)"),  # closing fence missing, module complete
    (MOD, "the whole reply (bare Verilog, no fence)"),
    ("```diff\n--- a/top.v\n+++ b/top.v\n@@ -1 +1 @@\n-x\n+y\n```", "fenced block 1 of 1 (diff)"),
])
def test_lenient_about_form(answer, how):
    parsed = parse_answer(answer, "stop")
    assert parsed.how == how
    assert parsed.text is not None and parsed.text.strip()


def test_the_last_complete_block_counts_preferring_the_top_module():
    first, last = MOD.replace("top", "first"), MOD.replace("top", "last")
    assert "module last" in parse_answer(f"```\n{first}```\n```\n{last}```").text
    assert "module first" in parse_answer(f"```\n{first}```\n```\n{last}```", top="first").text
    assert "module last" in parse_answer(f"```\n{first}```\n```\n{last}```", top="other").text


@pytest.mark.parametrize("answer,finish,why", [
    ("", "stop", "empty"),
    (None, "content_filter", "empty"),
    ("Use cdc_sync_bit for the request.", "stop", "no fenced code block"),
    ("```verilog\nassign x = y;\n```", "stop", "none of the 1 fenced blocks"),
    (f"```verilog\n{MOD}", "length", "cut off"),
    ("```verilog\nmodule top (input a);\n  reg r;\n", "stop", "none of the 1 fenced blocks"),
    (f"Explanation first. {MOD}", "stop", "no fenced code block"),  # prose + unfenced code
])
def test_strict_about_what_cannot_be_graded(answer, finish, why):
    parsed = parse_answer(answer, finish)
    assert parsed.text is None and why in parsed.how


def test_oneshot_prompt_states_the_task_file_contract_and_format():
    task = load_task("handshake")
    user = oneshot_messages(task)[1]["content"]
    assert user.startswith("Task: handshake")
    assert task.defective_text.strip() in user and task.bug_report_text.strip() in user
    assert "cdc_sync_bus" in user and "timing contract" in user
    assert "one fenced code block" in user and "last one that defines module hs_top" in user


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(5, 0, 1) == 0.0 and pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - math.comb(7, 2) / math.comb(10, 2))
    assert pass_at_k(4, 3, 2) == 1.0  # fewer failures than k: some pair always holds a pass


def _row(task="t1", family="f", label="pass", stage=None, gate="pass", sim="pass", sample=0) -> dict:
    return {"task": task, "family": family, "label": label, "failed_stage": stage, "gate": gate,
            "sim_verdict": sim, "sample": sample, "tokens_in": 1, "tokens_out": 1, "grade_cpu_s": 1.0}


def test_summary_counts_and_structural_gap():
    rows = [_row(sample=0), _row(label="refused", stage="gate", gate="refused", sim="pass", sample=1),
            _row(label="refused", stage="gate", gate="refused", sim="fail", sample=2),
            _row(label="refused", stage="gate", gate="refused", sim="tool_error", sample=3),  # unknown
            _row(label="tool_error", stage="hidden", gate="pass", sim="tool_error", sample=4),
            _row(label="overfit", stage="hidden", sim="overfit", sample=5),
            _row(task="t2", family="g", label="refused_parse", stage="parse", gate=None, sim=None),
            _row(task="t2", family="g", label="refused", stage="model", gate=None, sim=None, sample=1),
            _row(task="t2", family="g", label="endpoint_error", stage="endpoint", gate=None, sim=None,
                 sample=2)]
    s = summarize(rows, samples=6)
    o = s["overall"]
    assert (o["rollouts"], o["decided"], o["pass"], o["overfit"]) == (9, 7, 1, 1)
    assert (o["refused_model"], o["refused_parse"], o["refused_gate"], o["tool_error"],
            o["endpoint_error"]) == (1, 1, 3, 1, 1)
    # gap: sim-pass and gate decided = the pass + the gate refusal that simulates clean
    assert s["structural_gap"] == {"sim_pass_gate_decided": 2, "gate_refused": 1, "rate": 0.5}
    assert s["by_task"]["t1"]["pass_rate"] == pytest.approx(1 / 5)
    assert s["by_family"]["g"]["decided"] == 2 and s["by_family"]["g"]["pass"] == 0
    assert set(s["pass_at_k"]) == {"pass@1", "pass@2", "pass@5"}
    assert s["pass_at_k"]["pass@5"] == pytest.approx(1.0)  # t1: 5 decided, 1 pass; t2 has only 2


def test_endpoint_secrets_never_kept():
    assert redact_url("https://user:sk-123@api.example.com:8443/v1?api-key=sk-456#x") == \
        "https://api.example.com:8443/v1"


def _report(gate_status: str, rules: list[str]) -> dict:
    refused = gate_status == "refused"
    return {"schema_version": 1, "task": "handshake", "family": "handshake",
            "simulator": {"name": "icarus", "version": "12.0"}, "settle": True,
            "verdict": "refused" if refused else "pass", "reward": 0 if refused else 1,
            "failed_stage": "gate" if refused else None, "overfit": False, "reason": "",
            "stages": [{"name": "allowlist", "status": "pass", "detail": ""},
                       {"name": "gate", "status": gate_status, "detail": ""}],
            "findings": [{"rule": r, "severity": "error", "message": ""} for r in rules],
            "seeds": {}, "cpu_s": 0.0, "wall_s": 0.0}


def test_gate_result_counts_only_decided_refusals():
    assert gate_result(_report("refused", ["CDC-RAW", "GATE-PARSE"])) == "refused"
    assert gate_result(_report("refused", ["GATE-PARSE"])) == "unknown"  # the gate could not analyse it
    assert gate_result(_report("tool_error", [])) == "unknown"
    assert gate_result(_report("pass", [])) == "pass"
    assert gate_result(_report("skipped", [])) is None and gate_result(None) is None


def test_gate_result_of_a_grade_a_backend_could_not_make_is_none():
    from cdc_env.backends import GradeJob, error_row

    row = error_row(GradeJob(id=0, task="handshake", submission=""), "the worker died")
    row.pop("id")  # as grade_function hands it back
    assert gate_result(row) is None


def test_settings_decode_hidden_once_at_the_edge():
    from cdc_env.errors import CdcError
    from cdc_env.eval import EvalSettings

    def settings(hidden: object) -> EvalSettings:
        return EvalSettings(mode="oneshot", base_url="http://127.0.0.1:9/v1", model="m", tasks=[],
                            hidden=hidden)

    s = settings("3")
    s.check()
    assert s.hidden == 3 and s.run_key()["hidden"] == 3
    for bad in ("x", -1, True, "2.5"):
        with pytest.raises(CdcError, match="^--hidden must be"):
            settings(bad).check()


@pytest.mark.parametrize("kw,message", [({"workers": 2, "ray": "auto"}, "not both"),
                                        ({"workers": 0}, "1 or more")])
def test_open_grading_refuses_bad_input_before_starting_anything(kw, message):
    from cdc_env.errors import CdcError
    from cdc_env.eval import NoGrader, open_grading

    with pytest.raises(CdcError, match=message) as info:
        open_grading(**kw)
    assert not isinstance(info.value, NoGrader)  # bad input (exit 2), not "no machine can grade" (exit 3)


def test_open_grading_without_a_backend_grades_in_this_process():
    from cdc_env.eval import IN_PROCESS, open_grading

    with open_grading() as g:
        assert g.grader is None and g.backend is None and g.grades_on == IN_PROCESS and not g.problems


def test_progress_off_a_terminal_is_one_plain_line_per_rollout(capsys):
    bar = ProgressBar(tty=False)
    bar({"label": "pass", "task": "event", "sample": 0}, 1, 2)
    bar({"label": "refused_parse", "task": "event", "sample": 1}, 2, 2)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 2 and "\r" not in err and "\x1b" not in err
    assert lines[0].startswith("eval 1/2  event s0: pass  pass 1  refused: model 0 grader 0  parse 0  "
                               "errors 0")
    assert "rollouts/min  ETA" in lines[0] and lines[1].endswith("ETA -")


def test_progress_keeps_controls_and_who_refused_apart(capsys):
    """A control's pass is not a task's pass; a model's refusal is not the gate's."""
    bar = ProgressBar(tty=False)
    bar({"label": "pass", "task": "event", "sample": 0, "control": False}, 1, 4)
    bar({"label": "pass", "task": "event_control", "sample": 0, "control": True}, 2, 4)
    bar({"label": "refused", "failed_stage": "model", "task": "event", "sample": 1, "control": False}, 3, 4)
    bar({"label": "refused", "failed_stage": "gate", "task": "event_control", "sample": 1,
         "control": True}, 4, 4)
    lines = capsys.readouterr().err.splitlines()
    assert "event s0: pass  pass 1  refused: model 0 grader 0  parse 0  errors 0  " in lines[0]
    assert "controls" not in lines[0]
    assert ("event_control s0: pass  pass 1  refused: model 0 grader 0  parse 0  errors 0  "
            "| controls pass 1/1") in lines[1]
    assert "event s1: refused (model)  pass 1  refused: model 1 grader 0" in lines[2]
    assert "event_control s1: refused (grader)  pass 1  refused: model 1 grader 0  parse 0  errors 0  " \
        "| controls pass 1/2" in lines[3]


def test_progress_on_a_terminal_is_a_tqdm_bar_with_rate_and_eta(capsys):
    pytest.importorskip("tqdm", reason="tqdm is not installed (pip install .[eval])")
    bar = ProgressBar(tty=True)
    for i in range(3):
        bar({"label": "pass", "task": "event", "sample": i}, i + 1, 3)
    err = capsys.readouterr().err
    assert "3/3" in err and "rollout/s" in err and "pass 3" in err
