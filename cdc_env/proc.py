"""Bounded, optionally sandboxed, child processes -- the only way this package runs a tool.

Every run is bounded in wall time (the process group is killed), CPU time (RLIMIT_CPU), memory
(RLIMIT_AS) and output (stdout/stderr go to files capped by RLIMIT_FSIZE, so a flood kills the
writer with SIGXFSZ instead of filling the disk). CPU time and peak memory come from ``wait4``
of that very child (its waited-for descendants included), so concurrent runs do not mix.

The sandbox is bubblewrap (Debian package ``bubblewrap``): no network, no IPC or PID sharing, a
read-only /usr, an empty /tmp, no /etc or /home, and one writable scratch directory; a tool that
needs more (Verilator's root) gets it read-only by name.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import CdcError


@dataclass(frozen=True)
class Limits:
    wall_s: float = 60.0
    cpu_s: int = 60
    mem_bytes: int = 2 << 30
    out_bytes: int = 1 << 20


@dataclass
class ProcResult:
    returncode: int  # negative: killed by that signal
    stdout: str
    stderr: str
    cpu_s: float
    wall_s: float
    max_rss_kb: int
    timed_out: bool
    output_exceeded: bool

    @property
    def signal_name(self) -> str:
        if self.returncode >= 0:
            return ""
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def sandbox_argv(scratch: Path, ro_paths: tuple[Path, ...] = ()) -> list[str]:
    """The bubblewrap prefix for a command that may touch only ``scratch``."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise CdcError("the sandbox needs bubblewrap: apt-get install -y bubblewrap")
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            argv += ["--symlink", os.readlink(target), str(target)]
        elif target.is_dir():
            argv += ["--ro-bind", str(target), str(target)]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for p in ro_paths:
        argv += ["--ro-bind", str(p), str(p)]
    argv += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch),
             "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", str(scratch)]
    return argv


def run_bounded(argv: list[str], cwd: Path, limits: Limits, *, env: dict[str, str] | None = None,
                sandbox: bool = False, ro_paths: tuple[Path, ...] = (),
                sandbox_env: dict[str, str] | None = None, tag: str = "run") -> ProcResult:
    """Run ``argv`` in ``cwd`` within ``limits``; never raises for the child's behaviour."""
    cwd = Path(cwd)
    cpu_path = cwd / f".{tag}.cpu"
    if sandbox:
        # bwrap's PID namespace hides its descendants from wait4, so a shell inside the sandbox
        # reports its children's CPU time ("times") on a file descriptor of its own.
        prefix = sandbox_argv(cwd, ro_paths)
        for k, v in (sandbox_env or {}).items():
            prefix += ["--setenv", k, v]
        inner = ['/bin/sh', '-c', f'exec 3>{cpu_path.name}; "$@" 3>&-; rc=$?; times >&3; exit $rc', "sh"]
        argv = prefix + ["--"] + inner + argv
    out_path, err_path = cwd / f".{tag}.stdout", cwd / f".{tag}.stderr"

    def limit() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.mem_bytes, limits.mem_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.out_bytes, limits.out_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, preexec_fn=limit, start_new_session=True)
        except OSError as exc:
            return ProcResult(127, "", f"cannot start {argv[0]}: {exc}", 0.0, 0.0, 0, False, False)
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(limits.wall_s, kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:  # leave no stray descendants behind
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    wall = time.monotonic() - start
    rc = proc.returncode
    cpu = ru.ru_utime + ru.ru_stime
    if sandbox:
        cpu += _sandboxed_cpu(cpu_path)
        if rc > 128 and not timed_out.is_set():
            rc = -(rc - 128)  # the shell reports a signal-killed child as 128 + signal
    stdout = _read_capped(out_path, limits.out_bytes)
    stderr = _read_capped(err_path, limits.out_bytes)
    exceeded = rc == -signal.SIGXFSZ or any(
        p.stat().st_size >= limits.out_bytes for p in (out_path, err_path))
    cpu_timeout = rc == -signal.SIGXCPU or (rc == -signal.SIGKILL and cpu >= limits.cpu_s)
    return ProcResult(rc, stdout, stderr, cpu, wall, ru.ru_maxrss,
                      timed_out.is_set() or cpu_timeout, exceeded)


def _sandboxed_cpu(path: Path) -> float:
    """Children's user + system seconds from the second line of the shell's ``times``."""
    try:
        lines = path.read_text().split("\n")
    except OSError:
        return 0.0
    if len(lines) < 2:
        return 0.0
    total = 0.0
    for field in lines[1].split():
        m = re.fullmatch(r"(\d+)m([\d.]+)s", field)
        if m:
            total += int(m.group(1)) * 60 + float(m.group(2))
    return total


def _read_capped(path: Path, cap: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", errors="replace")
    except OSError:
        return ""
