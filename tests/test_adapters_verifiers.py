"""The verifiers adapter under the real ``vf-eval`` (null harness, local subprocess runtime), the
model being the stand-in: an episode to reward 1 with the reference fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import needs_bwrap, needs_icarus

pytest.importorskip("verifiers.v1", reason="verifiers is not installed (pip install .[verifiers] or .[test])")
pytestmark = [needs_icarus, needs_bwrap]

ROOT = Path(__file__).resolve().parent.parent
# vf-eval's own entry point, run with this interpreter (the console script may live elsewhere on PATH)
VF_EVAL = [sys.executable, "-c",
           "import sys; from verifiers.v1.cli.eval.main import main; main(sys.argv[1:])"]


def test_taskset_loads_every_task_with_the_public_prompts():
    from cdc_env.adapters.verifiers import CdcTaskset, CdcTasksetConfig
    from cdc_env.prompts import AGENT_SYSTEM_PROMPT
    from cdc_env.task import list_tasks

    tasks = list(CdcTaskset(CdcTasksetConfig(id="cdc-env-verifiers")))
    assert [t.data.task_id for t in tasks] == [t.id for t in list_tasks()]
    first = tasks[0]
    assert first.data.prompt.startswith(f"Task: {first.data.task_id}")
    assert first.data.system_prompt == AGENT_SYSTEM_PROMPT


def test_a_taskset_with_no_rung_is_refused_not_empty():
    from pydantic import ValidationError

    from cdc_env.adapters.verifiers import CdcTasksetConfig

    with pytest.raises(ValidationError, match="rungs"):
        CdcTasksetConfig(id="cdc-env-verifiers", rungs=[])


UV = pytest.mark.skipif(shutil.which("uv") is None and not (Path(sys.executable).parent / "uv").exists(),
                        reason="uv is missing (the null harness runs its chat program with it)")


def _vf_eval(tmp_path: Path, model: str) -> tuple[dict, list[dict]]:
    """Run vf-eval on the event task against the stand-in playing ``model``: (the trace, requests sent)."""
    from cdc_env.standin import StandinServer

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "STANDIN_KEY": "none", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with StandinServer() as srv:
        proc = subprocess.run(
            [*VF_EVAL, "cdc-env-verifiers", "--env.taskset.tasks", '["event"]',
             "--env.taskset.hidden", "2",
             "-m", model, "--client.base-url", srv.url, "--client.api-key-var", "STANDIN_KEY",
             "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess", "--no-push",
             "--env.agent.max-turns", "10", "-o", str(tmp_path / "out")],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
        sent = srv.requests
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    traces = [json.loads(line) for p in (tmp_path / "out").rglob("traces.jsonl") for line in p.open()]
    assert len(traces) == 1
    trace = traces[0]["traces"][0]
    assert trace["errors"] == [], trace["errors"]
    return trace, sent


@UV
def test_vf_eval_against_the_stand_in_to_reward_1(tmp_path):
    trace, sent = _vf_eval(tmp_path, "agent-correct")
    assert trace["rewards"]["grade"]["score"] == 1.0 and trace["stop_condition"] == "submitted"
    assert trace["metrics"]["verdict_pass"] == 1.0 and trace["metrics"]["verdict_fail"] == 0.0
    assert not any(v for k, v in trace["metrics"].items() if k.startswith(("failed_", "gate_")))
    # every request offered exactly the five tools of tools/*.json: names, descriptions and the
    # whole parameter schemas (argument descriptions, bounds, additionalProperties: false)
    from cdc_env.tools import tool_definitions

    want = {d["function"]["name"]: d["function"] for d in tool_definitions()}
    for body in sent:
        got = {t["function"]["name"]: t["function"] for t in body["tools"]}
        assert {n: {k: f[k] for k in ("name", "description", "parameters")} for n, f in got.items()} == want
    assert "Task: event" in json.dumps(sent)


@UV
def test_a_refused_submission_says_why_in_its_metrics(tmp_path):
    """A raw crossing: reward 0, and the metrics name the verdict, the stage and the gate rule."""
    trace, _ = _vf_eval(tmp_path, "agent-hack")
    m = trace["metrics"]
    assert trace["rewards"]["grade"]["score"] == 0.0
    assert m["verdict_refused"] == 1.0 and m["failed_gate"] == 1.0 and m["failed_hidden"] == 0.0
    assert any(k.startswith("gate_CDC-") and v == 1.0 for k, v in m.items()), m


@UV
def test_a_rollout_that_never_submits_is_graded_as_it_stands(tmp_path):
    """The model writes the fix and stops talking: the harness ends the rollout, the reward grades
    the working copy (CdcRepairEnv.finalize's rule)."""
    trace, _ = _vf_eval(tmp_path, "agent-write-no-submit")
    assert trace["rewards"]["grade"]["score"] == 1.0 and trace["stop_condition"] != "submitted"
    assert trace["metrics"]["verdict_pass"] == 1.0
