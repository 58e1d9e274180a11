"""``cdc-env export harbor OUT [TASKS]``: each task as a Harbor task folder.

Harbor (the task format CVDP, HWE-Bench and verifiers ship adapters for) runs an agent with a
shell in a container built from ``environment/``, then uploads ``tests/`` and runs
``tests/test.sh``, which writes the reward to ``/logs/verifier/reward.txt``. One folder per task:

    task.toml           name, description, timeouts and resources; [metadata] the task's family
    instruction.md      the bug report at the chosen rung, where the file is, what may change
    environment/        Dockerfile: Debian 12 with the grader's prerequisites (Icarus Verilog,
                        bubblewrap, gcc, a venv with this package's dependencies); the agent's
                        starting /app: the editable file as given and the timing contract
    tests/test.sh       grades /app's editable file with ``cdc-env grade --json`` (the same
                        pipeline, sandbox and seeds as every other front end) and writes the reward
    tests/cdc_env/      this package's source with the task data it grades with
    solution/solve.sh   the reference fix, for Harbor's oracle agent (never in the agent's image)

**What the agent's container holds.** Only what ``CdcRepairEnv``'s ``read`` tool shows: the
editable file and the contract. The package itself -- testbenches, the hidden-seed derivation,
the reference fixes -- arrives with ``tests/``, which Harbor uploads after the agent has finished,
so the Dockerfile installs the package's prerequisites and dependencies, not the package (an
image with it would hand the agent every reference fix). The agent has no ``run_visible``: it
may simulate with the Icarus in its image, on a testbench of its own.

Not covered: multi-container tasks, a Docker-less runner (Harbor's local runner builds the
Dockerfile; see docs/usage.md, "Harbor"), and the held-out tasks (export names only what it is given).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import paths
from .errors import CdcError
from .prompts import CONTRACT_NAME, task_name
from .rungs import DEFAULT_RUNG, check_rung, report, title
from .task import Task, load_task

APP = "/app"
DEBIAN_PACKAGES = ("iverilog", "bubblewrap", "gcc", "python3-venv", "python3-pip")
GRADE_TIMEOUT_S = 1800.0  # a grade on every hidden seed is minutes on one core
AGENT_TIMEOUT_S = 3600.0


def _dependencies() -> list[str]:
    """The package's runtime requirements, as pyproject.toml names them (one source)."""
    import tomllib  # noqa: PLC0415

    pyproject = paths.data_root() / "pyproject.toml"  # a checkout; a wheel has its metadata
    if pyproject.is_file():
        return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"])
    from importlib.metadata import requires  # noqa: PLC0415 -- an installed wheel

    return [r for r in requires("cdc_env") or [] if "extra ==" not in r]


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def folder_name(task: Task, rung: str) -> str:
    """``<task>`` at the full rung, else ``<task>-<rung>`` (Harbor names: letters, digits, - _ .)."""
    return task.id if rung == DEFAULT_RUNG else f"{task.id}-{rung}"


def task_toml(task: Task, rung: str, hidden: int | str) -> str:
    return "\n".join([
        'schema_version = "1.4"',
        "",
        "[task]",
        f"name = {_toml_str('cdc-env/' + folder_name(task, rung))}",
        f"description = {_toml_str(title(task, rung))}",
        f"keywords = [\"verilog\", \"clock-domain-crossing\", {_toml_str(task.family)}]",
        "",
        "[metadata]",
        'category = "hardware-verification"',
        f"cdc_env_task = {_toml_str(task.id)}",
        f"rung = {_toml_str(rung)}",
        f"hidden_seeds = {_toml_str(str(hidden))}",
        f"control = {'true' if task.control else 'false'}",
        "",
        "[verifier]",
        f"timeout_sec = {GRADE_TIMEOUT_S}",
        "",
        "[agent]",
        f"timeout_sec = {AGENT_TIMEOUT_S}",
        "",
        "[environment]",
        "build_timeout_sec = 1800.0",
        "cpus = 2",
        "memory_mb = 4096",
        "storage_mb = 10240",
        "",
    ])


def instruction(task: Task, rung: str) -> str:
    return (f"# {task_name(task, rung)}: {title(task, rung)}\n\n{report(task, rung).strip()}\n\n"
            f"## What to do\n\nRepair the design in `{APP}/{task.editable}`, the one file you may change "
            f"(keep its module name and port list). `{APP}/{CONTRACT_NAME}` is the timing contract of "
            "the synchronizer primitives you may instantiate. When you stop, that file is graded: "
            "the allowlist, a static CDC gate, the build, and many seeded simulations you do not see "
            "(clock ratios, phases, reset timing). The reward is 1 if every stage passes, else 0.\n")


def dockerfile(task: Task) -> str:
    deps = " ".join(f"'{d}'" for d in _dependencies())
    return "\n".join([
        "FROM debian:12-slim",
        "# The grader's prerequisites (cdc-env doctor checks each): the simulator, the sandbox, a C",
        "# compiler for the verdict module, and a venv with this package's dependencies. The package",
        "# itself comes with tests/ after the agent has finished (see cdc_env/harbor.py).",
        f"RUN apt-get update && apt-get install -y --no-install-recommends {' '.join(DEBIAN_PACKAGES)} \\",
        "    && rm -rf /var/lib/apt/lists/*",
        "RUN python3 -m venv /opt/cdc_env && /opt/cdc_env/bin/pip install --no-cache-dir " + deps,
        'ENV PATH="/opt/cdc_env/bin:$PATH"',
        f"WORKDIR {APP}",
        f"COPY {task.editable} {CONTRACT_NAME} {APP}/",
        "",
    ])


def test_sh(task: Task, hidden: int | str) -> str:
    return "\n".join([
        "#!/bin/bash",
        "# Grade the agent's file with cdc-env grade (the package is this folder's cdc_env/, uploaded",
        "# after the agent finished) and write the reward Harbor reads. A grade that cannot be made",
        "# (tool_error) is reward 0 with its report kept: never a pass.",
        "# APP, TESTS and LOGS default to Harbor's paths (a run outside its container may move them).",
        "set -u",
        f'APP="${{APP:-{APP}}}"; TESTS="${{TESTS:-/tests}}"; LOGS="${{LOGS:-/logs/verifier}}"',
        'mkdir -p "$LOGS"',
        'export PYTHONPATH="$TESTS/cdc_env${PYTHONPATH:+:$PYTHONPATH}"',
        f'python3 -m cdc_env.cli grade {task.id} "$APP/{task.editable}" --hidden {hidden} --json \\',
        '    > "$LOGS/report.json" 2> "$LOGS/grade.stderr"',
        "status=$?",
        'LOGS="$LOGS" python3 - <<\'EOF\'',
        "import json, os",
        "logs = os.environ['LOGS']",
        "try:",
        "    reward = int(json.load(open(f'{logs}/report.json'))['reward'] == 1)",
        "except (OSError, ValueError, KeyError, TypeError):",
        "    reward = 0",
        "open(f'{logs}/reward.txt', 'w').write(f'{reward}\\n')",
        "EOF",
        'echo "cdc-env grade exit status $status; reward $(cat "$LOGS/reward.txt")"',
        "exit 0",
        "",
    ])


def solve_sh(task: Task) -> str:
    return (f"#!/bin/bash\n# Harbor's oracle: the reference fix (solution/ is never in the agent's image).\n"
            f"cp /solution/{task.editable} {APP}/{task.editable}\n")


def _copy_package(dest: Path, task: Task) -> None:
    """This package's source and the data a grade of ``task`` reads, laid out as a checkout (so
    ``PYTHONPATH=dest`` finds it: cdc_env/paths.py)."""
    root = paths.data_root()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(Path(__file__).resolve().parent, dest / "cdc_env", ignore=ignore)
    shutil.rmtree(dest / "cdc_env" / "_data", ignore_errors=True)
    for part in ("trusted", "tools"):
        shutil.copytree(root / part, dest / part, ignore=ignore)
    tasks = {task.id, *([task.base] if task.base else [])}
    for tid in tasks:
        src = paths.tasks_dir() / tid
        if src.is_dir():
            shutil.copytree(src, dest / "tasks" / tid, ignore=ignore)


def export_task(task: Task, out: Path, *, rung: str = DEFAULT_RUNG, hidden: int | str = "all") -> Path:
    """Write ``task`` as a Harbor task folder under ``out``; return the folder."""
    folder = out / folder_name(task, rung)
    if folder.exists():
        raise CdcError(f"{folder} exists: export into an empty folder")
    env, tests, solution = folder / "environment", folder / "tests", folder / "solution"
    for d in (env, tests, solution):
        d.mkdir(parents=True)
    (folder / "task.toml").write_text(task_toml(task, rung, hidden), encoding="utf-8")
    (folder / "instruction.md").write_text(instruction(task, rung), encoding="utf-8")
    (env / "Dockerfile").write_text(dockerfile(task), encoding="utf-8")
    (env / task.editable).write_text(task.given_text, encoding="utf-8")
    shutil.copyfile(paths.contract_file(), env / CONTRACT_NAME)
    (tests / "test.sh").write_text(test_sh(task, hidden), encoding="utf-8")
    _copy_package(tests / "cdc_env", task)
    (solution / task.editable).write_text(task.reference_text if not task.control else task.given_text,
                                          encoding="utf-8")
    (solution / "solve.sh").write_text(solve_sh(task), encoding="utf-8")
    for script in (tests / "test.sh", solution / "solve.sh"):
        script.chmod(0o755)
    return folder


def export_harbor(out: Path, task_ids: list[str], *, rung: str = DEFAULT_RUNG,
                  hidden: int | str = "all") -> list[Path]:
    """Each of ``task_ids`` (default: every public task) as a Harbor task folder under ``out``;
    graded on ``hidden`` seeds (default all: an evaluation's numbers, as grade-batch and eval)."""
    from .task import list_tasks  # noqa: PLC0415

    rung = check_rung(rung)
    tasks = [load_task(t) for t in task_ids] if task_ids else list_tasks()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return [export_task(t, out, rung=rung, hidden=hidden) for t in tasks]
