"""Scripted agents on every public task, the ``cdc-env scripted`` command, and the leak scan:
nothing of a grade report reaches any text a model would be sent.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from cdc_env import cli, paths
from cdc_env.errors import CdcError
from cdc_env.scripted import ScriptedRun, compile_error, load_agents, raw_crossing, run_agent
from cdc_env.sim.seeds import hidden_seeds
from cdc_env.task import list_tasks, load_task
from cdc_env.tools import tool_definitions

CONTRACT = (paths.common_dir() / "CONTRACT.md").read_text()

pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None or shutil.which("vvp") is None,
                                reason="Icarus Verilog (iverilog, vvp) is not installed")
HIDDEN = 16  # hidden seeds per submission: enough to have hidden results to leak
AGENTS = sorted(load_agents())
# One task per family keeps the suite small; `cdc-env scripted` runs every task.
TASKS = sorted({t.family: t.id for t in reversed(list_tasks())}.values())


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], ScriptedRun]:
    agents = load_agents()
    return {(a, t): run_agent(agents[a], t, hidden=HIDDEN) for t in TASKS for a in AGENTS}


def test_the_six_agents_of_the_issue_exist():
    assert set(AGENTS) >= {"correct_fix", "raw_crossing", "compile_error", "out_of_bounds", "tool_budget",
                           "sim_budget"}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("agent", AGENTS)
def test_scripted_agent_gives_its_expected_result(runs, agent, task):
    run = runs[(agent, task)]
    if run.outcome == "skip":
        pytest.skip(run.note)
    assert run.outcome == "ok", run.problems


def test_correct_fix_scores_and_auto_submit_grades_the_current_design(runs):
    for t in TASKS:
        assert runs[("correct_fix", t)].report["reward"] == 1
        auto = runs[("tool_budget", t)]
        assert auto.final["auto_submitted"] and auto.report["reward"] == 1
        assert runs[("sim_budget", t)].final["sim_runs_used"] == 6


def _report_secrets(task_id: str, report: dict) -> list[str]:
    """Strings that would show a report (or hidden results) reached the model."""
    out = [report["submission_sha256"]]
    hidden = report["seeds"].get("hidden", {})
    out += [r["hash"] for r in hidden.get("results", []) if r["hash"]]
    out += [f["reason"] for f in hidden.get("failed", [])]
    out += [s["detail"] for s in report["stages"] if s["name"] == "hidden" and s["detail"]]
    return [s for s in out if s]


def test_no_report_content_reaches_the_model(runs):
    """Scan every observation of every scripted run, and the tool definitions, for the report."""
    scanned = 0
    hidden_seen = 0
    for (_, task_id), run in runs.items():
        task = load_task(task_id)
        text = "\n".join(run.observations + [json.dumps(tool_definitions())])
        scanned += len(run.observations)
        numbers = set(re.findall(r"\d+", text))
        leaked = [s for s in hidden_seeds(task) if str(s) in numbers]
        assert not leaked, f"{run.agent}/{task_id}: hidden seed numbers in observations: {leaked[:5]}"
        if run.report is not None:
            hidden_seen += run.report["seeds"].get("hidden", {}).get("count", 0)
            for secret in _report_secrets(task_id, run.report):
                assert secret not in text, f"{run.agent}/{task_id}: report content {secret[:60]!r} leaked"
        own_text = text.replace(task.bug_report_text.strip(), "")  # task prose may use any word:
        # also a rung that keeps some of its sections, and the contract the `contract` tool returns
        for para in (task.bug_report_text + "\n\n" + CONTRACT).split("\n\n"):
            own_text = own_text.replace(para.strip(), "")
        for word in ("verdict", "reward", "overfit", "hidden seed", "CDCV", "fingerprint", "sha256",
                     f"module {task.tb_top}", "nonce"):
            assert word not in own_text, f"{run.agent}/{task_id}: {word!r} appears in an observation"
        assert all(isinstance(t["observation"], str) for t in run.transcript)
        assert all("report" not in t for t in run.transcript)
    assert scanned > 100 and hidden_seen > 0  # the scan had real material to look at


def test_design_builders_change_what_they_claim():
    for t in list_tasks():
        raw = raw_crossing(t.defective_text)
        assert not re.search(r"^\s*cdc_sync_\w+\s", raw, re.M)
        assert "cdc_scripted_broken = ;" in compile_error(t.defective_text)


def test_cli_scripted_table_and_json(capsys):
    rc = cli.main(["scripted", "correct_fix", "out_of_bounds", "--task", "handshake", "--hidden", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "| correct_fix | handshake | pass | pass | 5 | 1 | ok |" in out
    assert "| out_of_bounds | handshake |" in out
    rc = cli.main(["scripted", "compile_error", "--task", "event", "--hidden", "0", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and rows[0]["agent"] == "compile_error" and rows[0]["outcome"] == "ok"


def test_cli_scripted_bad_input_is_one_line(capsys):
    assert cli.main(["scripted", "no_such_agent", "--task", "handshake"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown scripted agent" in err
    assert cli.main(["scripted", "--task", "no-such-task"]) == 2


def test_a_wrong_expectation_is_reported_as_a_failure():
    agent = dict(load_agents()["correct_fix"])
    agent["expect"] = dict(agent["expect"], reward=0, steps_used=4)
    run = run_agent(agent, "handshake", hidden=0)
    assert run.outcome == "FAIL" and len(run.problems) == 2
    with pytest.raises(CdcError):
        raw_crossing("module m; endmodule")
