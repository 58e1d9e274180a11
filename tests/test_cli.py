"""The CLI: bad input gives one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
