"""CdcRepairEnv: the five tools, the two budgets, the episode rules, and many envs side by side.

Simulating tests use Icarus and skip when it is missing; submissions here grade no hidden seeds
(hidden=0) unless the point is the hidden stage.
"""

from __future__ import annotations

import gc
import json
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import jsonschema
import pytest

from cdc_env import paths
from cdc_env.env import CONTRACT_NAME, CdcRepairEnv
from cdc_env.errors import CdcError
from cdc_env.grade import grade
from cdc_env.report import validate_report
from cdc_env.submission import MAX_BYTES
from cdc_env.task import load_task
from cdc_env.tools import TOOL_NAMES, check_arguments, tool_definitions

needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None or shutil.which("vvp") is None,
                                  reason="Icarus Verilog (iverilog, vvp) is not installed")
RESULT_KEYS = {"observation", "error", "done", "auto_submitted", "steps_used", "steps_left",
               "sim_runs_used", "sim_runs_left", "reward", "report"}


@pytest.fixture
def env():
    e = CdcRepairEnv("handshake", hidden=0, max_steps=100)
    e.reset()
    yield e
    e.close()


# ---------------------------------------------------------------- tool definitions

def test_tool_files_are_exactly_the_five_tools():
    files = sorted(p.stem for p in paths.tools_dir().iterdir())
    assert files == sorted(TOOL_NAMES)


def test_tool_definitions_are_openai_functions_with_json_schemas():
    defs = tool_definitions()
    assert [d["function"]["name"] for d in defs] == list(TOOL_NAMES)
    for d in defs:
        assert d["type"] == "function"
        assert set(d["function"]) == {"name", "description", "parameters"}
        assert d["function"]["description"]
        params = d["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object" and params["additionalProperties"] is False


def test_tool_definitions_are_copies():
    defs = CdcRepairEnv("handshake").tool_definitions()
    defs[0]["function"]["name"] = "changed"
    assert tool_definitions()[0]["function"]["name"] == "read"


@pytest.mark.parametrize("name,args,ok", [
    ("read", {"path": "x"}, True),
    ("read", {}, False),
    ("read", {"path": 3}, False),
    ("read", {"path": ""}, False),
    ("read", {"path": "x", "extra": 1}, False),
    ("write", {"path": "x", "content": ""}, True),
    ("write", {"path": "x"}, False),
    ("run_visible", {}, True),
    ("run_visible", [], False),
    ("submit", {"now": True}, False),
    ("nope", {}, False),
])
def test_check_arguments_enforces_the_schemas(name, args, ok):
    assert (check_arguments(name, args) is None) == ok


# ---------------------------------------------------------------- construction and reset

@pytest.mark.parametrize("kwargs", [{"max_steps": 0}, {"max_steps": "30"}, {"max_steps": True},
                                    {"max_sim_runs": -1}, {"hidden": -3}, {"hidden": "some"},
                                    {"sim": "modelsim"}])
def test_bad_settings_are_one_line_errors(kwargs):
    with pytest.raises(CdcError):
        CdcRepairEnv("handshake", **kwargs)


def test_hidden_is_decoded_as_the_command_line_decodes_it():
    assert CdcRepairEnv("handshake", hidden="4", sandbox=False).hidden == 4
    assert CdcRepairEnv("handshake", hidden="all", sandbox=False).hidden == "all"
    for bad in (True, 2.0, "-1"):
        with pytest.raises(CdcError, match="^hidden must be a number of 0 or more or 'all'"):
            CdcRepairEnv("handshake", hidden=bad, sandbox=False)


def test_task_by_id_by_folder_and_by_repo_root():
    by_dir = CdcRepairEnv(load_task("event").dir)
    by_root = CdcRepairEnv("event", repo_root=paths.data_root())
    assert by_dir.task.id == by_root.task.id == "event"
    with pytest.raises(CdcError):
        CdcRepairEnv("no-such-task")


def test_reset_gives_task_bug_report_file_tools_and_budgets():
    e = CdcRepairEnv("handshake", max_steps=12, max_sim_runs=3)
    first = e.reset()
    t = e.task
    assert RESULT_KEYS <= set(first)
    obs = first["observation"]
    assert t.id in obs and t.bug_report_text.strip() in obs and t.editable in obs
    assert all(name in obs for name in TOOL_NAMES)
    # the tool descriptions go in the request's tools, not again in the first observation
    for d in e.tool_definitions():
        assert d["function"]["description"] not in obs
    assert "12 tool calls" in obs and "3 simulation runs" in obs
    assert first["tools"] == list(TOOL_NAMES) and first["editable"] == t.editable
    assert (first["steps_left"], first["sim_runs_left"], first["done"]) == (12, 3, False)


def test_step_before_reset_and_after_close_raise():
    e = CdcRepairEnv("handshake")
    with pytest.raises(CdcError, match="reset"):
        e.step("contract", {})
    e.reset()
    e.close()
    with pytest.raises(CdcError, match="closed"):
        e.step("contract", {})
    with pytest.raises(CdcError, match="closed"):
        e.reset()


# ---------------------------------------------------------------- read, write, contract

def test_read_gives_the_working_copy_and_the_contract(env):
    assert env.step("read", {"path": env.task.editable})["observation"].startswith(env.task.defective_text)
    assert env.step("read", {"path": "./" + env.task.editable})["error"] is None
    contract = paths.contract_file().read_text()
    assert env.step("read", {"path": CONTRACT_NAME})["observation"].startswith(contract)
    assert env.step("contract", {})["observation"].startswith(contract)


def _outside_paths(tmp_path: Path) -> list[str]:
    t = load_task("handshake")
    link = tmp_path / t.editable  # a symlink that carries the editable file's name
    link.symlink_to(t.path(t.testbench))
    return ["tb.v", "task.toml", "BUG.md", "NOTES.md", "reference/hs_top.v", "clean/hs_top.v",
            "../handshake/tb.v", "hs_top.v/../tb.v", "./../hs_top.v", "../../etc/passwd", "/etc/passwd",
            str(t.path(t.testbench)), str(t.path(t.editable)), str(link), "cdc_sync.v",
            "../common/cdc_sync.v", "common/CONTRACT.md", "design/hs_top.v", "HS_TOP.V", "hs_top.v ",
            " hs_top.v", "hs_top.v\x00", "hs_top.v\n", "hs_top.v/", ".//hs_top.v", "~/hs_top.v", "*",
            "hs_top.*", "seeds", "hidden_seeds.txt", "C:\\hs_top.v", "hs_top\u2024v", "\u0127s_top.v"]


def test_reads_outside_the_two_files_are_refused(env, tmp_path):
    tb = env.task.text(env.task.testbench)
    for i, path in enumerate(_outside_paths(tmp_path), start=1):
        out = env.step("read", {"path": path})
        assert out["error"] == "refused", path
        assert out["observation"].startswith("Refused"), path
        assert "module hs_tb" not in out["observation"] and tb[:200] not in out["observation"]
        assert out["steps_used"] == i


def test_writes_outside_the_editable_file_are_refused(env, tmp_path):
    for path in _outside_paths(tmp_path) + [CONTRACT_NAME]:
        out = env.step("write", {"path": path, "content": "module hs_top; endmodule\n"})
        assert out["error"] == "refused", path
    assert env.design == env.task.defective_text
    assert not (tmp_path / "tb.v").exists()
    assert (tmp_path / env.task.editable).resolve() == env.task.path(env.task.testbench)  # untouched link


def test_write_replaces_the_working_copy_and_round_trips_unicode(env):
    text = "// ünïcødé ✓ 漢字\n" + env.task.reference_text
    out = env.step("write", {"path": env.task.editable, "content": text})
    assert out["error"] is None and f"{len(text.encode())} bytes" in out["observation"]
    assert env.step("read", {"path": env.task.editable})["observation"].startswith(text)
    assert env.design == text


def test_write_is_size_capped_in_bytes(env):
    ed = env.task.editable
    assert env.step("write", {"path": ed, "content": "a" * MAX_BYTES})["error"] is None
    over = env.step("write", {"path": ed, "content": "a" * (MAX_BYTES + 1)})
    assert over["error"] == "bad_arguments" and len(over["observation"]) < 500
    wide = env.step("write", {"path": ed, "content": "é" * (MAX_BYTES // 2 + 1)})  # fewer chars than bytes
    assert wide["error"] == "refused" and "limit" in wide["observation"]
    assert env.design == "a" * MAX_BYTES


@pytest.mark.parametrize("content", ["nul\x00byte", "lone \ud800 surrogate"])
def test_write_refuses_text_that_cannot_be_verilog(env, content):
    out = env.step("write", {"path": env.task.editable, "content": content})
    assert out["error"] == "refused"
    assert env.design == env.task.defective_text


def test_arguments_as_json_text_none_and_empty(env):
    assert env.step("read", json.dumps({"path": env.task.editable}))["error"] is None
    assert env.step("contract", None)["error"] is None
    assert env.step("contract", "")["error"] is None
    assert env.step("contract", "{}")["error"] is None
    bad = env.step("read", "{path: hs_top.v}")
    assert bad["error"] == "bad_arguments" and "JSON" in bad["observation"]


# ---------------------------------------------------------------- budgets and episode rules

def test_every_call_counts_including_refused_and_malformed(env):
    calls = [("nope", {}), ("read", {"path": "tb.v"}), ("read", {"path": 5}), (None, None),
             ("contract", {"x": 1}), ("contract", {}), ("write", "not json")]
    for i, (name, args) in enumerate(calls, start=1):
        out = env.step(name, args)
        assert set(out) == RESULT_KEYS
        assert (out["steps_used"], out["steps_left"]) == (i, 100 - i)
        assert out["sim_runs_used"] == 0 and not out["done"] and out["report"] is None
        assert f"[{100 - i} tool calls and 6 simulation runs left]" in out["observation"]


def test_run_visible_is_refused_once_the_simulation_budget_is_spent():
    e = CdcRepairEnv("handshake", max_sim_runs=0, hidden=0)
    e.reset()
    out = e.step("run_visible", {})
    assert out["error"] == "budget" and "simulation budget" in out["observation"]
    assert (out["steps_used"], out["sim_runs_used"], out["sim_runs_left"]) == (1, 0, 0)


@needs_icarus
def test_tool_budget_runs_out_and_the_environment_submits_the_current_design():
    e = CdcRepairEnv("handshake", max_steps=3, hidden=0)
    e.reset()
    e.step("write", {"path": e.task.editable, "content": e.task.reference_text})
    assert not e.step("nope", {})["done"]
    last = e.step("contract", {})
    assert last["done"] and last["auto_submitted"] and last["steps_left"] == 0
    assert last["observation"].startswith(paths.contract_file().read_text())  # the tool still answered
    assert "has been submitted" in last["observation"]
    assert last["reward"] == 1 and last["report"]["verdict"] == "pass"
    validate_report(last["report"])


@needs_icarus
def test_after_done_nothing_changes_and_reset_starts_over():
    e = CdcRepairEnv("handshake", hidden=0)
    e.reset()
    e.step("write", {"path": e.task.editable, "content": e.task.reference_text})
    end = e.step("submit", {})
    assert end["done"] and end["reward"] == 1 and not end["auto_submitted"]
    assert "submitted" in end["observation"]
    for name in ("read", "submit", "nope"):
        again = e.step(name, {})
        assert again["error"] == "episode_over" and again["done"]
        assert again["reward"] is None and again["report"] is None
        assert (again["steps_used"], again["sim_runs_used"]) == (2, 0)
    fresh = e.reset()
    assert not fresh["done"] and fresh["steps_left"] == 30 and e.design == e.task.defective_text


# ---------------------------------------------------------------- run_visible and submit

@needs_icarus
@pytest.mark.parametrize("task_id", ["handshake", "event"])
def test_run_visible_describes_each_failing_seed(task_id):
    e = CdcRepairEnv(task_id)
    e.reset()
    out = e.step("run_visible", {})
    assert out["error"] is None and (out["sim_runs_used"], out["sim_runs_left"]) == (1, 5)
    obs = out["observation"]
    direct = grade(e.task, e.task.defective_text, hidden=0)["seeds"]["visible"]
    assert f"{direct['passed']} of {direct['count']} visible seeds pass" in obs
    assert direct["failed"], "the defective design must fail some visible seeds"
    for f in direct["failed"]:
        line = next(ln for ln in obs.splitlines() if ln.strip().startswith(f"seed {f['seed']} "))
        assert "faster than" in line and f"{f['ratio']:.3f}x" in line
        assert "FAIL at t=" in line and f["reason"] in line


@needs_icarus
def test_compile_errors_reach_the_agent_without_host_paths(env):
    broken = env.task.defective_text.replace("endmodule", "  wire broken = ;\nendmodule")
    env.step("write", {"path": env.task.editable, "content": broken})
    line = broken.splitlines().index("  wire broken = ;") + 1
    obs = env.step("run_visible", {})["observation"]
    # The compiler's message, or the static gate's parse finding once the gate runs: either way
    # the agent learns the file and line.
    assert "does not compile" in obs or "GATE-PARSE" in obs
    assert f"{env.task.editable}:{line}" in obs
    for host in (str(env.task.dir), str(paths.data_root()), tempfile.gettempdir() + "/", "design/"):
        assert host not in obs


@needs_icarus
def test_submit_grades_the_hidden_seeds_and_reports_to_the_harness_only():
    e = CdcRepairEnv("handshake", hidden=4)
    e.reset()
    e.step("write", {"path": e.task.editable, "content": e.task.reference_text})
    out = e.step("submit", {})
    validate_report(out["report"])
    assert out["report"]["seeds"]["hidden"]["count"] == 4 and out["reward"] == 1
    assert "pass" not in out["observation"].lower() and "reward" not in out["observation"]


# ---------------------------------------------------------------- many environments, no leftovers

def _run_side_by_side() -> list[weakref.ref]:
    """Four episodes on two tasks in parallel threads, half with the fix; return weak refs to the envs."""
    envs = [CdcRepairEnv(t, hidden=0) for t in ("handshake", "event", "handshake", "event")]
    fixes = [e.task.reference_text if i % 2 == 0 else None for i, e in enumerate(envs)]
    results: dict[int, list[dict]] = {}

    def episode(i: int) -> None:
        e = envs[i]
        e.reset()
        if fixes[i]:
            e.step("write", {"path": e.task.editable, "content": fixes[i]})
        results[i] = [e.step("run_visible", {}), e.step("submit", {})]

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(len(envs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i, e in enumerate(envs):
        visible, end = results[i]
        fixed = fixes[i] is not None
        assert ("8 of 8 visible seeds pass" in visible["observation"]) == fixed
        assert end["report"]["task"] == e.task.id and end["reward"] == (1 if fixed else 0)
        assert end["steps_used"] == (3 if fixed else 2)
    for e in envs[:2]:
        e.close()  # two closed, two left to the garbage collector
    return [weakref.ref(e) for e in envs]


@needs_icarus
def test_many_envs_in_one_process_do_not_interfere_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a private scratch root for this test
    refs = _run_side_by_side()
    gc.collect()
    assert all(r() is None for r in refs)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_missing_simulator_is_a_tool_error_not_a_fault_of_the_design(env, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # after construction: iverilog disappears
    out = env.step("run_visible", {})
    assert out["error"] == "tool_error" and "tool error" in out["observation"]
    assert out["sim_runs_used"] == 1 and not out["done"]


@needs_icarus
def test_default_is_32_hidden_seeds_and_finalize_grades_a_truncated_episode():
    e = CdcRepairEnv("handshake")
    e.reset()
    e.step("write", {"path": e.task.editable, "content": e.task.reference_text})
    last = e.finalize()
    assert last["done"] and last["truncated"] and not last["auto_submitted"]
    assert last["reward"] == 1 and last["report"]["seeds"]["hidden"]["count"] == 32
    assert e.finalize() == last  # the final result again, no second grade
    assert e.step("read", {"path": e.task.editable})["error"] == "episode_over"
    e.reset()
    assert e.finalize()["reward"] == 0  # the shipped defect, graded as it stands


@needs_icarus
def test_async_step_runs_off_the_event_loop():
    import asyncio

    async def episode() -> list[dict]:
        e = CdcRepairEnv("handshake", hidden=2)
        await e.areset()
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        w = await e.astep("write", {"path": e.task.editable, "content": e.task.reference_text})
        s = await e.astep("submit", {})
        ticker.cancel()
        assert ticks > 1  # the loop kept running while the grade ran
        return [w, s]

    w, s = asyncio.run(episode())
    assert w["error"] is None and s["done"] and s["reward"] == 1
