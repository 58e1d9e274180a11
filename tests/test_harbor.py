"""``cdc-env export harbor``: the folders load with the ``harbor`` package's own task loader, the
agent's image holds nothing of the grader, and ``tests/test.sh`` -- run as Harbor's verifier runs
it, outside a container (no Docker engine here) -- grades the agent's file to the right reward.

harbor needs Python >= 3.12; on an older interpreter the loader test runs the loader in the
interpreter named by ``CDC_HARBOR_PYTHON`` (one with ``pip install harbor``), else skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["handshake", "handshake_control", "rst_01", "fifo_01"]

LOADER = """
import json, sys
from harbor.models.task.task import Task
out = []
for d in sys.argv[1:]:
    t = Task(d)
    out.append({"name": t.name, "instruction": t.instruction[:200],
                "timeout": t.config.verifier.timeout_sec, "test": str(t.paths.test_path),
                "valid": Task.is_valid_dir(d)})
print(json.dumps(out))
"""


def export(tmp_path: Path, *tasks: str, hidden: str = "4", rung: str | None = None) -> list[Path]:
    args = [sys.executable, "-m", "cdc_env.cli", "export", "harbor", str(tmp_path / "out"), *tasks,
            "--hidden", hidden, "--json", *(["--rung", rung] if rung else [])]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    return [Path(f) for f in json.loads(p.stdout)["tasks"]]


def harbor_python() -> list[str]:
    try:
        import harbor  # noqa: F401

        return [sys.executable]
    except ImportError:
        pass
    other = os.environ.get("CDC_HARBOR_PYTHON")
    if other and Path(other).is_file():
        return [other]
    pytest.skip("the harbor package is not importable (it needs Python >= 3.12: pip install harbor, "
                "or point CDC_HARBOR_PYTHON at a python that has it)")


def test_every_exported_task_loads_with_harbors_own_loader(tmp_path):
    py = harbor_python()
    folders = export(tmp_path, *TASKS) + export(tmp_path, "event", rung="minimal")
    p = subprocess.run([*py, "-c", LOADER, *map(str, folders)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    loaded = json.loads(p.stdout)
    assert [t["name"] for t in loaded] == [f"cdc-env/{t}" for t in TASKS] + ["cdc-env/event-minimal"]
    assert all(t["valid"] and t["test"].endswith("tests/test.sh") for t in loaded)
    assert loaded[1]["instruction"].startswith("# handshake:")  # a control is named as its task


def test_the_agents_image_holds_only_what_the_read_tool_shows(tmp_path):
    for folder in export(tmp_path, "handshake", "handshake_control"):
        task = load_task(folder.name)
        env = folder / "environment"
        assert sorted(p.name for p in env.iterdir()) == sorted(["Dockerfile", task.editable, "CONTRACT.md"])
        assert (env / task.editable).read_text() == task.given_text
        docker = (env / "Dockerfile").read_text()
        assert "COPY " in docker and "tests" not in docker.split("COPY", 1)[1] and "solution" not in docker
        for rel in ("Dockerfile", "CONTRACT.md"):
            assert task.reference_text not in (env / rel).read_text()
        assert task.reference_text not in (folder / "instruction.md").read_text()
        assert (folder / "tests" / "cdc_env" / "tasks").is_dir()  # the grader comes with tests/


@needs_icarus
@needs_bwrap
@pytest.mark.parametrize("which,reward", [("given", 0), ("solution", 1)])
def test_test_sh_grades_the_agents_file_and_writes_the_reward(tmp_path, which, reward):
    """tests/test.sh as Harbor runs it after the agent (APP/TESTS/LOGS moved off / for a run
    outside a container), the package only from tests/: the given defect 0, the oracle's fix 1."""
    (folder,) = export(tmp_path, "handshake")
    task = load_task("handshake")
    app, logs = tmp_path / "app", tmp_path / "logs"
    app.mkdir()
    src = folder / ("environment" if which == "given" else "solution") / task.editable
    (app / task.editable).write_text(src.read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(APP=str(app), TESTS=str(folder / "tests"), LOGS=str(logs),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    p = subprocess.run(["bash", str(folder / "tests" / "test.sh")], capture_output=True, text=True,
                       timeout=600, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (logs / "reward.txt").read_text().strip() == str(reward), (logs / "grade.stderr").read_text()
    report = json.loads((logs / "report.json").read_text())
    assert report["verdict"] == ("pass" if reward else "fail")
    if reward:
        assert report["seeds"]["hidden"]["count"] == 4  # --hidden as exported
