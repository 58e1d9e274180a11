"""Every ``cdc-env`` command in the README's shell blocks parses with the real command line (the
blocks that run end to end are run by test_quickstart.py, test_server.py and test_adapters_gym.py),
and the README stays an introduction: under 400 lines (issue 40)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cdc_env.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            for part in re.split(r"\s(?:&&|\|)\s|;\s", line.split(" # ", 1)[0]):
                part = part.strip().rstrip("&").strip()
                m = re.search(r"(?:^|\s)(cdc-env\s.*)$", part)
                if m:
                    out.append(m.group(1).split(" > ")[0].split(" $(")[0].strip())
    return out


COMMANDS = _commands()


def test_the_readme_has_commands_and_is_short():
    assert len(COMMANDS) >= 10, COMMANDS
    assert README.count("\n") < 400, "the README is an introduction: move detail to docs/"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_parses(command):
    argv = shlex.split(command)[1:]
    parser = build_parser(argv[0])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's error: exit 2 with a message on stderr
        pytest.fail(f"README command does not parse (exit {exc.code}): {command}")
    assert callable(getattr(args, "func", None)), command


def _layout_block() -> str:
    section = README.split("## Architecture", 1)[1]
    return re.search(r"```\n(cdc_env/\n.*?)```", section, re.S).group(1)


def test_the_layout_block_names_every_module_and_top_level_folder():
    root = Path(__file__).resolve().parent.parent
    block = _layout_block()
    missing = []
    for path in sorted((root / "cdc_env").rglob("*.py")):
        rel = path.relative_to(root / "cdc_env")
        own_init = path.name == "__init__.py" and rel.parent.name in ("", "sim", "gate", "cli")
        if "_data" in rel.parts or own_init:  # a package's own __init__ is its header line
            continue
        name = rel.parent.name + "/" if path.name == "__init__.py" else path.name
        if not re.search(rf"(?<![\w.]){re.escape(name)}|(?<![\w.]){re.escape(path.stem)}\b(?=[,:\s])", block):
            missing.append(str(rel))
    assert not missing, f"README's layout block does not name: {missing}"
    ignore = {"build", "dist", "results", "minted", "obj_dir", "LICENSE"}
    folders = [p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
               and p.name not in ignore and not p.name.endswith(".egg-info") and p.name != "venv"]
    absent = [f for f in folders if not re.search(rf"^{re.escape(f)}/", block, re.M)]
    assert not absent, f"README's layout block does not name the top-level folders {absent}"
