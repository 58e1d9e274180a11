"""`hidden` is decoded once, at the edges: seeds.parse_hidden, used by the CLI and the server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cdc_env.errors import CdcError
from cdc_env.sim.seeds import parse_hidden


@pytest.mark.parametrize(("value", "want"), [("all", "all"), (0, 0), (32, 32), ("32", 32), ("0", 0)])
def test_accepted(value, want):
    assert parse_hidden(value) == want


@pytest.mark.parametrize("value", [-1, "-1", "x", "", "3.5", 3.0, True, False, None, [], {"n": 1}, "ALL"])
def test_refused_with_one_line(value):
    with pytest.raises(ValueError, match=r"^hidden must be a number of 0 or more or 'all', not ") as err:
        parse_hidden(value)
    assert "\n" not in str(err.value)


def test_at_most_names_the_task():
    assert parse_hidden(200, at_most=200) == 200 and parse_hidden("all", at_most=1) == "all"
    with pytest.raises(ValueError, match=r"^hidden must be at most 200 for task 'handshake', or 'all'$"):
        parse_hidden("201", at_most=200, task_id="handshake")


def test_the_cli_and_the_server_config_use_it():
    from cdc_env.cli.common import parse_hidden as cli_parse
    from cdc_env.server.config import ServerConfig, resolve_tasks

    with pytest.raises(CdcError, match=r"^--hidden must be a number of 0 or more"):
        cli_parse("-2")
    tasks = resolve_tasks(["handshake"])
    assert ServerConfig(tasks=tasks, hidden="7").hidden == 7
    with pytest.raises(CdcError, match=r"^hidden must be a number"):
        ServerConfig(tasks=tasks, hidden=-7)


@pytest.mark.parametrize(("hidden", "message"), [("x", "--hidden must be a number"),
                                                 ("100000", "--hidden must be at most")])
def test_cdc_env_grade_refuses_a_bad_hidden_in_one_line(hidden, message):
    r = subprocess.run([sys.executable, "-m", "cdc_env.cli", "grade", "handshake", "/dev/null",
                        "--hidden", hidden], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith(f"cdc-env: {message}") and r.stderr.count("\n") == 1
