"""bench/bench_pair.py: the paired old-vs-new runner gives each side its own tree and counts the
CPU of the whole process tree (a grandchild included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "bench_pair.py"


def _pair(tmp_path: Path, *command: str, runs: int = 1) -> subprocess.CompletedProcess:
    other = tmp_path / "other"
    (other / "cdc_env").mkdir(parents=True)
    # a second "tree": a copy of the package entry point is enough for an import of cdc_env
    (other / "cdc_env" / "__init__.py").write_text("")
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--old",
            str(other),
            "--new",
            str(ROOT),
            "--runs",
            str(runs),
            "--warmup",
            "0",
            "--json",
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_each_side_runs_its_own_tree(tmp_path):
    probe = "import cdc_env, sys; assert cdc_env.__file__.startswith(sys.argv[1]), cdc_env.__file__"
    r = _pair(tmp_path, sys.executable, "-c", probe, "{tree}", runs=2)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["old"]["tree"] == str((tmp_path / "other").resolve())
    assert out["new"]["tree"] == str(ROOT)
    assert out["old"]["runs"] == out["new"]["runs"] == 2
    assert out["ratio_new_over_old"] is not None


def test_a_failing_command_stops_it_with_one_line(tmp_path):
    r = _pair(tmp_path, sys.executable, "-c", "raise SystemExit(3)")
    assert r.returncode != 0
    assert "the command exited 3" in r.stderr.strip().splitlines()[-1]


def test_cpu_of_a_detached_grandchild_is_counted(tmp_path):
    """A grandchild the command does not wait for (as a sandbox's PID namespace hides its
    processes from wait4): counted by the cgroup; the rusage fallback says it is a lower bound."""
    spin = "import time; t = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    cmd = (
        f"import subprocess, sys, os; p = subprocess.Popen([sys.executable, '-c', {spin!r}]); "
        "os.waitpid(p.pid, 0) if False else p.wait()"
    )
    r = _pair(tmp_path, sys.executable, "-c", cmd)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    if out["accounting"]["lower_bound"]:
        return  # rusage: nothing more to check than that it says so
    assert out["new"]["cpu_s_median"] >= 0.3


def test_metric_from_the_commands_json(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--old",
            str(ROOT),
            "--new",
            str(ROOT),
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
            "--metric",
            "rows/0/cpu_s",
            "--",
            sys.executable,
            "-c",
            'print(\'{"rows": [{"cpu_s": 1.5}]}\')',
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["old"]["metric"] == out["new"]["metric"] == [1.5]
    assert out["metric_ratio_new_over_old"] == 1.0
