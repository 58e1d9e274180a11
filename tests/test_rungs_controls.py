"""No-bug controls and information rungs: what each rung tells the agent, that a control is graded
like any task (the given clean design passes, a broken one does not), and -- over the stand-in
model through real HTTP and real grading -- that eval runs every rung, reports the rungs apart and
keeps the controls out of the defect tasks' rates, with their over-editing rate."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cdc_env import CdcRepairEnv
from cdc_env.errors import CdcError
from cdc_env.grade import grade
from cdc_env.prompts import oneshot_prompt, task_prompt
from cdc_env.report import validate_report
from cdc_env.rungs import RUNGS, primitives, report, sections
from cdc_env.task import list_controls, list_tasks, load_task

from .conftest import needs_bwrap, needs_icarus

HIDDEN = 2


def all_tasks():
    return list_tasks() + list_controls()


def test_one_control_per_family_from_its_clean_design():
    controls = list_controls()
    assert sorted(c.family for c in controls) == sorted({t.family for t in list_tasks()})
    for c in controls:
        base = load_task(c.base)
        assert c.id == f"{c.family}_control" and c.control and not base.control
        assert c.given_text == base.clean_text == c.reference_text != base.defective_text
        assert load_task(c.id) == c  # loadable by id, like any task


@pytest.mark.parametrize("rung", RUNGS)
def test_every_task_and_control_is_told_at_every_rung(rung):
    for t in all_tasks():
        text = report(t, rung)
        title, parts = sections(t.text(t.bug_report))
        assert parts["invariant"].split("**", 2)[2].strip() in text  # the invariants, always
        if rung == "full" and not t.control:
            assert text == t.text(t.bug_report)  # the bug report as today
            continue
        assert parts["symptom"] not in text or rung == "symptom"
        assert parts["design"] not in text or rung == "full"  # what crosses where: full only
        if rung != "full":
            for name in primitives(t):
                assert f"`{name}`" in text  # the rule names every primitive the task may use


def test_minimal_rung_reads_the_same_for_a_control_and_its_task():
    for c in list_controls():
        base = load_task(c.base)
        assert task_prompt(c, rung="minimal") == task_prompt(base, rung="minimal")
        one_c, one_b = oneshot_prompt(c, "minimal"), oneshot_prompt(base, "minimal")
        assert one_c.replace(c.given_text.rstrip(), "") == one_b.replace(base.defective_text.rstrip(), "")


@pytest.mark.parametrize("rung", RUNGS)
def test_a_control_never_says_it_is_one(rung):
    for c in list_controls():
        for text in (task_prompt(c, rung=rung), oneshot_prompt(c, rung)):
            assert "no bug" not in text.lower() and "_control" not in text
            assert text.startswith(f"Task: {c.base if rung == 'full' else c.top} -- ")


@pytest.mark.parametrize("rung", ["symptom", "minimal"])
def test_below_full_no_task_id_names_the_crossing(rung):
    for t in all_tasks():
        for text in (task_prompt(t, rung=rung), oneshot_prompt(t, rung)):
            assert text.startswith(f"Task: {t.top} -- ")
            assert "rdbin" not in text and "x_early" not in text  # ids that name the defect


@pytest.mark.parametrize("rung", RUNGS)
def test_the_standin_finds_the_task_at_every_rung(rung):
    pytest.importorskip("openai", reason="the stand-in ships with the eval extra")
    from cdc_env.standin import task_of

    for t in all_tasks():
        found = task_of([{"role": "user", "content": task_prompt(t, rung=rung)}])
        assert found.id == (t.base or t.id)  # a control's prompt names its task, at every rung


def test_storage_primitive_only_where_the_design_stores():
    assert "cdc_ram" in primitives(load_task("fifo_01"))
    assert "cdc_ram" not in primitives(load_task("handshake"))


def test_unknown_structure_and_rung_are_one_line_errors():
    with pytest.raises(CdcError, match="unknown section"):
        sections("# Bug report: x\n\n**Design.** a\n\n**Cause.** b")
    with pytest.raises(CdcError, match="missing section"):
        sections("# Bug report: x\n\n**Design.** a")
    with pytest.raises(CdcError, match="unknown rung 'hint'"):
        report(load_task("handshake"), "hint")
    with pytest.raises(CdcError, match="unknown rung"):
        CdcRepairEnv("handshake", rung="hint", sandbox=False)
    with pytest.raises(CdcError, match="unknown task 'nofamily_control'"):
        load_task("nofamily_control")


def test_cli_lists_controls_and_shows_rungs():
    cli = [sys.executable, "-m", "cdc_env"]
    out = json.loads(
        subprocess.run([*cli, "tasks", "--json"], capture_output=True, text=True, check=True).stdout
    )
    controls = {t["id"]: t for t in out if t["control"]}
    assert set(controls) == {c.id for c in list_controls()}
    assert all(t["base"] for t in controls.values())
    shown = subprocess.run(
        [*cli, "show", "handshake_control", "--rung", "symptom", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(shown.stdout)
    assert info["control"] and info["rung"] == "symptom" and "**Request.**" in info["bug_report"]
    bad = subprocess.run([*cli, "show", "handshake", "--rung", "hint"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr


def test_every_control_design_passes_the_static_gate_with_no_finding():
    """A control's reward 1 for the unchanged design rests on this: the clean design the control
    gives is accepted by the gate as it stands (a family whose clean design draws a finding, even a
    warning, fails here rather than handing out controls an agent must edit to pass)."""
    pytest.importorskip("pyslang", reason="the static gate needs pyslang")
    from cdc_env.gate import run_gate

    for c in list_controls():
        g = run_gate(c, c.files(c.given_text))
        assert (c.id, g.status, g.findings) == (c.id, "pass", [])


# ---------------------------------------------------------------------- graded (Icarus, bubblewrap)


@needs_icarus
@needs_bwrap
def test_control_is_graded_like_its_task():
    ctl = load_task("handshake_control")
    base = load_task(ctl.base)
    with CdcRepairEnv(ctl, hidden=HIDDEN) as env:
        first = env.reset(rung="minimal")
        assert (first["rung"], first["control"]) == ("minimal", True)
        assert env.design == base.clean_text
        kept = env.step("submit", {})
        assert (kept["reward"], kept["report"]["verdict"]) == (1, "pass")  # unchanged and correct
        assert (kept["report"]["control"], kept["report"]["rung"]) == (True, "minimal")
        validate_report(kept["report"])  # the report schema knows both fields
        env.reset()
        assert env.episode_rung == "full"
        env.step("write", {"path": ctl.editable, "content": base.defective_text})
        broke = env.step("submit", {})
        assert broke["reward"] == 0 and broke["report"]["verdict"] != "pass"
    # the same grade as the defect task gives the same text: the rung and the control change nothing
    for text in (base.clean_text, base.defective_text):
        a, b = grade(ctl, text, hidden=HIDDEN), grade(base, text, hidden=HIDDEN)
        assert (a["verdict"], a["findings"]) == (b["verdict"], b["findings"])
        assert a["control"] is True and "control" not in b and "rung" not in a


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("openai", reason="the openai client is not installed (pip install .[eval])")
    from cdc_env.standin import StandinServer

    with StandinServer() as srv:
        yield srv


def _run(srv, tmp_path, model, mode, tasks, rungs):
    from cdc_env.eval import EvalSettings, Results, run_eval

    settings = EvalSettings(
        mode=mode,
        base_url=srv.url,
        model=model,
        tasks=list(tasks),
        hidden=HIDDEN,
        backoff_s=0.01,
        rungs=list(rungs),
    )
    out = tmp_path / model
    summary = run_eval(settings, out, controls=lambda sim: (True, [], "controls run in their own tests"))
    return Results(out).load(), summary, out


@needs_icarus
@needs_bwrap
def test_eval_runs_every_rung_and_the_grade_does_not_change(server, tmp_path):
    before = len(server.requests)
    rows, summary, out = _run(server, tmp_path, "agent-correct", "agentic", ["handshake"], RUNGS)
    assert sorted(r["rung"] for r in rows) == sorted(RUNGS)
    assert all(
        (r["reward"], r["label"], r["control"], r["changed"]) == (1, "pass", False, True) for r in rows
    )
    assert {g: c["pass_rate"] for g, c in summary["by_rung"].items()} == dict.fromkeys(RUNGS, 1.0)
    assert summary["overall"]["rollouts"] == 3 and summary["controls"]["overall"]["rollouts"] == 0
    firsts = [
        m["content"]
        for body in server.requests[before:]
        for m in body["messages"][1:2]
        if len(body["messages"]) == 2
    ]
    assert len(firsts) == 3
    by = {
        r: next(f for f in firsts if f.startswith(task_prompt(load_task("handshake"), rung=r)[:200]))
        for r in RUNGS
    }
    assert "**Symptom.**" in by["symptom"] and "**Symptom.**" not in by["minimal"]
    assert "**Design.**" in by["full"] and "**Design.**" not in by["symptom"]
    for r in rows:  # one trajectory per rung
        assert json.loads((out / r["trajectory"]).read_text())["rung"] == r["rung"]
    md = (out / "summary.md").read_text()
    assert "| rung |" in md and "| minimal |" in md
    from cdc_env.report_html import write_report

    page = write_report(out).read_text()
    assert "Pass rate by information rung" in page and "handshake [minimal] s0" in page
    assert "No-bug controls" not in page


@needs_icarus
@needs_bwrap
def test_eval_reports_controls_apart_with_over_editing(server, tmp_path):
    rows, summary, out = _run(
        server, tmp_path, "agent-no-tool-call", "agentic", ["handshake", "handshake_control"], ["full"]
    )
    by = {r["task"]: r for r in rows}
    assert by["handshake_control"]["control"] and by["handshake_control"]["reward"] == 1  # kept it
    assert by["handshake_control"]["changed"] is False
    assert by["handshake"]["reward"] == 0  # the defect, submitted as given
    assert set(summary["by_task"]) == {"handshake"} and summary["overall"]["rollouts"] == 1
    assert summary["overall"]["pass_rate"] == 0.0  # the control's pass never counts here
    c = summary["controls"]["overall"]
    assert (c["rollouts"], c["pass"], c["changed"], c["changed_rate"], c["broke"]) == (1, 1, 0, 0.0, 0)
    rows, summary, _ = _run(server, tmp_path, "oneshot-correct", "oneshot", ["controls"], ["full"])
    assert {r["task"] for r in rows} == {c.id for c in list_controls()}
    c = summary["controls"]["overall"]
    # the stand-in answers with the defect task's reference fix: a changed but correct design
    assert (c["changed_rate"], c["broke_rate"], c["pass_rate"]) == (1.0, 0.0, 1.0)
    assert summary["overall"]["rollouts"] == 0
    assert "No-bug controls" in (tmp_path / "oneshot-correct" / "summary.md").read_text()
    from cdc_env.report_html import write_report

    page = write_report(tmp_path / "oneshot-correct").read_text()
    n = len(list_controls())  # one per family
    assert "No-bug controls" in page and f"{n} no-bug control rollouts, no defect task" in page
    assert "Pass rate by task" not in page


# ---------------------------------------------------------------------- front ends: a rung per episode


def test_gym_reset_takes_a_rung_and_a_control():
    pytest.importorskip("gymnasium", reason="gymnasium is not installed")
    from cdc_env.adapters.gym import CdcGymEnv

    env = CdcGymEnv("handshake", sandbox=False)
    obs, info = env.reset(options={"task": "handshake_control", "rung": "minimal"})
    assert (info["rung"], info["control"], info["task"]) == ("minimal", True, "handshake_control")
    assert obs.startswith("Task: hs_top -- Review the clock-domain crossings of hs_top")
    obs, info = env.reset()
    assert (info["rung"], info["control"]) == ("full", False)
    with pytest.raises(CdcError, match="unknown rung"):
        env.reset(options={"rung": "hint"})
    env.close()


@needs_icarus
@needs_bwrap
def test_http_and_openenv_start_an_episode_at_a_rung():
    httpx = pytest.importorskip("httpx", reason="the server extra is not installed")
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from cdc_env.client import HttpEnv
    from cdc_env.server import ServerConfig, resolve_tasks, serve_in_thread

    cfg = ServerConfig(tasks=resolve_tasks(["handshake", "handshake_control"]), workers=1, hidden=HIDDEN)
    with serve_in_thread(cfg) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        listed = {t["id"]: t["control"] for t in c.get("/v1/tasks").json()["tasks"]}
        assert listed == {"handshake": False, "handshake_control": True}
        first = c.post("/v1/episodes", json={"task": "handshake", "rung": "symptom"}).json()
        assert first["rung"] == "symptom" and "**Symptom.**" in first["observation"]
        assert "**Design.**" not in first["observation"]
        bad = c.post("/v1/episodes", json={"task": "handshake", "rung": "hint"})
        assert bad.status_code == 422
        oe = c.post("/openenv/reset", json={"task": "handshake_control", "rung": "minimal"}).json()
        assert (oe["observation"]["rung"], oe["observation"]["control"]) == ("minimal", True)
        with HttpEnv("handshake_control", srv.url, hidden=HIDDEN, rung="symptom") as env:
            out = env.reset()
            assert (out["rung"], out["control"]) == ("symptom", True)
            done = env.step("submit", {})  # the clean design, unchanged: correct
            assert done["reward"] == 1


# ---------------------------------------------------------------------- fifo_x_early


@needs_icarus
@needs_bwrap
def test_early_publish_fix_that_keeps_the_registered_write_passes():
    """The unusual fix: keep the pipelined memory write, publish the pointer one cycle later (in the
    cycle its word is stored). It passes where the shipped defect is caught."""
    task = load_task("fifo_x_early")
    given = task.defective_text
    sync = ".d_i(wr_ptr_gray_q), .q_o(wr_ptr_sync_rclk)"
    assert given.count(sync) == 1
    publish = (
        "  // Fix: the pointer is published in the cycle its word is stored.\n"
        "  reg  [4:0] wr_ptr_pub_q;\n"
        "  always @(posedge clk_wr_i or negedge rst_wr_ni)\n"
        "    if (!rst_wr_ni) wr_ptr_pub_q <= 0;\n"
        "    else wr_ptr_pub_q <= wr_ptr_gray_q;\n\n"
    )
    fixed = given.replace(sync, ".d_i(wr_ptr_pub_q), .q_o(wr_ptr_sync_rclk)").replace(
        "  // ---------------- crossings", publish + "  // ---------------- crossings"
    )
    bad = grade(task, given, hidden=24)
    assert bad["verdict"] == "fail" and bad["seeds"]["visible"]["failed"]  # caught on visible seeds
    good = grade(task, fixed, hidden=24)
    assert (good["verdict"], good["findings"]) == ("pass", [])


@needs_icarus
@needs_bwrap
@pytest.mark.parametrize("agent", ["correct_fix", "raw_crossing", "compile_error"])
def test_scripted_agents_on_fifo_x_early(agent):
    """The new variant under the scripted agents (`cdc-env scripted --task fifo_x_early` runs all
    six): the reference fix scores, a raw crossing is refused by the gate, a syntax error fails the
    build."""
    from cdc_env.scripted import load_agents, run_agent

    run = run_agent(load_agents()[agent], "fifo_x_early", hidden=HIDDEN)
    assert run.outcome == "ok", run.problems
