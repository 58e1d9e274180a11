"""Bounded, sandboxed child processes -- the only way this package runs a tool.

**Bounds.** Every run is bounded in wall time (the whole tree is killed), CPU time (RLIMIT_CPU
per process), memory (RLIMIT_AS per process and, with a cgroup, the whole tree), process count
(a cgroup's ``pids.max``), the size of any file it writes (RLIMIT_FSIZE, ``Limits.file_bytes``:
a build's compiled output may be large) and what it prints (stdout and stderr are read through
pipes and capped at ``Limits.out_bytes``; a flood kills the run).

**Accounting.** Each run gets its own cgroup when the host allows it (cgroup v2 where the
controllers are delegated to us, else cgroup v1 hierarchies we can write, as root on a v1 host).
CPU time is the cgroup's usage -- every process of the run: bubblewrap, the tool and whatever
the tool starts -- and peak memory is the cgroup's peak (resident memory plus page cache the run
charged). Without a cgroup, CPU and memory come from ``wait4`` plus, inside the sandbox, the
shell's ``times``; those figures are lower bounds, and ``accounting()`` says so and why.

**Sandbox.** Bubblewrap (Debian ``bubblewrap``): every namespace unshared (no network), an
unprivileged uid (65534) in a user namespace where the kernel allows it, no further user
namespaces, every capability dropped, no /proc (so no /proc/self/mem, environ or cmdline), a
read-only /usr with the package's own files (sources, task folders, reference fixes, the cache)
hidden under empty tmpfs wherever they fall under a bound path, an empty /tmp, no /etc or /home,
and one writable scratch directory. ``selftest()`` checks these properties once per process; a
failure is a tool error for every sandboxed run, never a verdict. A failure of bubblewrap itself
(it could not set the sandbox up) is reported in ``ProcResult.sandbox_error``.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import CdcError

SANDBOX_UID = 65534  # "nobody" inside the sandbox's user namespace


@dataclass(frozen=True)
class Limits:
    wall_s: float = 60.0
    cpu_s: int = 60
    mem_bytes: int = 2 << 30  # per process (RLIMIT_AS) and, with a cgroup, the whole tree
    out_bytes: int = 1 << 20  # what the tool prints, stdout and stderr each
    file_bytes: int | None = None  # any file it writes (RLIMIT_FSIZE); None: out_bytes
    pids: int = 64  # processes and threads of the whole tree (needs a cgroup)
    tmp_bytes: int = 64 << 20  # the sandbox's /tmp: a tmpfs of this size (charged to the run's memory)


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
    limit: str = ""  # "memory" / "pids" when the run's cgroup hit that limit
    sandbox_error: str = ""  # bubblewrap itself failed (never the tool's or the design's doing)
    accounting: str = ""  # "cgroup-v2", "cgroup-v1" or "rusage" (a lower bound)

    @property
    def signal_name(self) -> str:
        if self.returncode >= 0:
            return ""
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


# --------------------------------------------------------------------------------------- cgroups

@dataclass(frozen=True)
class Accounting:
    method: str  # cgroup-v2 | cgroup-v1 | rusage
    reason: str  # why this method (why not a better one)
    dirs: tuple[tuple[str, Path], ...] = ()  # (controller, parent directory of the runs' cgroups)

    @property
    def lower_bound(self) -> bool:
        return self.method == "rusage"

    def as_report(self) -> dict:
        return {"method": self.method, "lower_bound": self.lower_bound, "reason": self.reason}


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root inside the hierarchy, fstype, super options) of every cgroup mount."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        pre, _, post = line.partition(" - ")
        f, g = pre.split(), post.split()
        if len(g) >= 3 and g[0] in ("cgroup", "cgroup2"):
            out.append((f[4], f[3], g[0], set(g[2].split(","))))
    return out


def _own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            for c in (ctrls.split(",") if ctrls else [""]):
                own[c] = path
    except (OSError, ValueError):
        pass
    return own


def _under(mount: str, root: str, path: str) -> Path:
    rel = path[len(root):] if root != "/" and path.startswith(root) else path
    return Path(mount) / rel.lstrip("/")


def _probe_dir(parent: Path) -> str:
    """'' when a child cgroup can be created (and removed) under ``parent``, else why not."""
    probe = parent / f"cdc-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
        return ""
    except OSError as exc:
        return f"{parent}: {exc.strerror or exc}"


@lru_cache(maxsize=1)
def accounting() -> Accounting:
    """How runs are accounted on this host: cgroup v2 if delegated, else cgroup v1, else rusage."""
    mounts, own = _mounts(), _own_cgroups()
    why: list[str] = []
    v2 = next((m for m in mounts if m[2] == "cgroup2"), None)
    if v2 is None:
        why.append("no cgroup v2 mount")
    else:
        base = _under(v2[0], v2[1], own.get("", "/"))
        try:
            avail = set((base / "cgroup.controllers").read_text().split())
            enabled = set((base / "cgroup.subtree_control").read_text().split())
        except OSError as exc:
            avail, enabled = set(), set()
            why.append(f"cgroup v2 at {base} unreadable ({exc.strerror})")
        need = {"memory", "pids"}
        if not need <= avail:
            why.append(f"cgroup v2 at {v2[0]} has controllers {sorted(avail) or 'none'} (needs memory, "
                       "pids: they are held by cgroup v1 hierarchies or not delegated)")
        else:
            if not need <= enabled:
                try:  # fails when this cgroup holds processes (the v2 no-internal-process rule)
                    (base / "cgroup.subtree_control").write_text("+memory +pids +cpu")
                    enabled = set((base / "cgroup.subtree_control").read_text().split())
                except OSError as exc:
                    why.append(f"cannot enable memory/pids below {base} ({exc.strerror}); delegate a "
                               "cgroup v2 subtree to the grader (e.g. systemd Delegate=yes)")
            if need <= enabled:
                problem = _probe_dir(base)
                if not problem:
                    return Accounting("cgroup-v2", f"cgroup v2 delegated at {base}", (("", base),))
                why.append(f"cgroup v2: {problem}")
    dirs = []
    for ctrl in ("cpuacct", "memory", "pids"):
        m = next((m for m in mounts if m[2] == "cgroup" and ctrl in m[3]), None)
        if m is None:
            why.append(f"no cgroup v1 {ctrl} hierarchy")
            break
        base = _under(m[0], m[1], own.get(ctrl, "/"))
        problem = _probe_dir(base)
        if problem:
            why.append(f"cgroup v1 {ctrl}: {problem}")
            break
        dirs.append((ctrl, base))
    else:
        return Accounting("cgroup-v1", "; ".join(why + ["cgroup v1 cpuacct, memory and pids are writable"]),
                          tuple(dirs))
    return Accounting("rusage", "; ".join(why) + "; CPU and memory figures are lower bounds "
                      "(wait4 plus the sandbox shell's times)")


_counter = itertools.count()


class RunCgroup:
    """One cgroup (per controller on v1) holding exactly one run's process tree."""

    def __init__(self, acc: Accounting, limits: Limits) -> None:
        self.v2 = acc.method == "cgroup-v2"
        name = f"cdc-{os.getpid()}-{next(_counter)}-{os.urandom(3).hex()}"
        self.dirs = {ctrl: base / name for ctrl, base in acc.dirs}
        made = []
        try:
            for d in self.dirs.values():
                d.mkdir()
                made.append(d)
            mem, pids = self._dir("memory"), self._dir("pids")
            if self.v2:
                (mem / "memory.max").write_text(str(limits.mem_bytes))
                if (mem / "memory.swap.max").exists():
                    (mem / "memory.swap.max").write_text("0")
            else:
                (mem / "memory.limit_in_bytes").write_text(str(limits.mem_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():
                    (mem / "memory.memsw.limit_in_bytes").write_text(str(limits.mem_bytes))
            (pids / "pids.max").write_text(str(limits.pids))
        except OSError:
            for d in made:
                _rmdir(d)
            raise
        self.procs = [str(d / "cgroup.procs") for d in self.dirs.values()]
        self.home = [str(base / "tasks") for _, base in acc.dirs]  # v1: where a thread comes back to

    @contextlib.contextmanager
    def thread_inside(self) -> Iterator[bool]:
        """cgroup v1 only: move the calling thread in for the duration (a child forked meanwhile
        starts inside, so its whole life is charged to the run); yields whether it moved."""
        if self.v2:
            yield False
            return
        tid = str(threading.get_native_id()).encode()
        moved = []
        try:
            for d in self.dirs.values():
                _write(d / "tasks", tid)
                moved.append(d)
        except OSError:
            pass
        try:
            yield len(moved) == len(self.dirs)
        finally:
            for home in self.home:
                with contextlib.suppress(OSError):
                    _write(Path(home), tid)

    def _dir(self, ctrl: str) -> Path:
        return self.dirs["" if self.v2 else ctrl]

    def join(self) -> None:
        """Move the calling process in (runs in the child between fork and exec)."""
        for p in self.procs:
            fd = os.open(p, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def _read(self, ctrl: str, name: str) -> str:
        try:
            return (self._dir(ctrl) / name).read_text()
        except OSError:
            return ""

    def cpu_s(self) -> float:
        if self.v2:
            m = re.search(r"^usage_usec (\d+)", self._read("", "cpu.stat"), re.M)
            return int(m.group(1)) / 1e6 if m else 0.0
        v = self._read("cpuacct", "cpuacct.usage").strip()
        return int(v) / 1e9 if v else 0.0

    def peak_kb(self) -> int:
        v = self._read("memory", "memory.peak" if self.v2 else "memory.max_usage_in_bytes").strip()
        return int(v) // 1024 if v.isdigit() else 0

    def limit_hit(self) -> str:
        events = self._read("memory", "memory.events" if self.v2 else "memory.oom_control")
        m = re.search(r"^oom_kill (\d+)", events, re.M)
        if m and int(m.group(1)) > 0:
            return "memory"
        m = re.search(r"^max (\d+)", self._read("pids", "pids.events"), re.M)
        if m and int(m.group(1)) > 0:
            return "pids"
        return ""

    def kill(self) -> None:
        """Kill every process of the run (a fork bomb included) and wait until none is left."""
        if self.v2 and (self._dir("") / "cgroup.kill").exists():
            try:
                (self._dir("") / "cgroup.kill").write_text("1")
            except OSError:
                pass
        procs = self._dir("pids") / "cgroup.procs"
        for _ in range(200):
            try:
                pids = [int(x) for x in procs.read_text().split()]
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)

    def remove(self) -> None:
        for d in self.dirs.values():
            _rmdir(d)


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _rmdir(d: Path) -> None:
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


# --------------------------------------------------------------------------------------- sandbox

def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@lru_cache(maxsize=1)
def userns_ok() -> bool:
    """Whether bubblewrap can create a user namespace with an unprivileged uid here."""
    bwrap = bwrap_path()
    if bwrap is None:
        return False
    try:
        r = probe([bwrap, "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                   "--ro-bind", "/", "/", "--", "/bin/true"], timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def hidden_paths() -> list[Path]:
    """The package's own files: its sources, task folders (reference fixes), trusted runners and cache."""
    from .. import paths  # noqa: PLC0415 -- paths imports nothing of ours; kept local for clarity

    out = [Path(__file__).resolve().parents[1], paths.data_root().resolve(), paths.tasks_dir().resolve()]
    out.append(paths.cache_root().resolve())
    return out


def outermost(paths: list[Path]) -> list[Path]:
    """``paths`` without those inside another one of them (sorted).

    Hiding a folder and then a folder inside it would leave an empty mount point in the outer
    tmpfs (in a wheel, ``_data/tasks`` inside ``_data``): the package would be hidden, but not
    empty, and the self-test would rightly refuse it. Hiding the outer folder hides the inner.
    """
    unique = sorted(set(paths))
    return [p for p in unique if not any(p != q and p.is_relative_to(q) for q in unique)]


def _bound_roots() -> list[Path]:
    roots = [Path("/usr")]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_dir() and not target.is_symlink():
            roots.append(target)
    return roots


def sandbox_argv(scratch: Path, ro_paths: tuple[Path, ...] = (), *, proc: bool = False,
                 writable: bool = True, tmp_bytes: int = Limits.tmp_bytes,
                 cpu_file: Path | None = None) -> list[str]:
    """The bubblewrap prefix for a command that may touch only ``scratch`` (and read ``ro_paths``).

    ``proc`` mounts a /proc (the self-test only; tools run without one). ``writable=False`` binds
    ``scratch`` read-only (a simulation must not alter the build that later seeds run). /tmp is
    always a fresh tmpfs of ``tmp_bytes`` (its pages are charged to the run's memory cgroup): a
    quota, and nothing of it reaches the host's disk. ``cpu_file`` (accounting without a cgroup
    only) is bound writable at ``CPU_FILE`` for the shell that reports the tool's CPU time.
    """
    bwrap = bwrap_path()
    if bwrap is None:
        raise CdcError("the sandbox needs bubblewrap: apt-get install -y bubblewrap")
    argv = [bwrap, "--unshare-all"]
    if userns_ok():
        argv += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns"]
    argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv",
             "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            argv += ["--symlink", os.readlink(target), str(target)]
        elif target.is_dir():
            argv += ["--ro-bind", str(target), str(target)]
    if proc:
        argv += ["--proc", "/proc"]
    argv += ["--dev", "/dev"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    if cpu_file is not None:
        argv += ["--bind", str(cpu_file), CPU_FILE]
    for p in ro_paths:
        argv += ["--ro-bind", str(p), str(p)]
    # The package's own files go under empty tmpfs wherever a bind exposed them; a tool's own
    # read-only path inside one of them (e.g. the cached runtime) is bound again on top.
    bound = _bound_roots() + [Path(p).resolve() for p in ro_paths]
    hide = outermost([h for h in hidden_paths() if h.is_dir() and any(h.is_relative_to(b) for b in bound)])
    for h in hide:
        argv += ["--tmpfs", str(h)]
    for p in ro_paths:
        if any(Path(p).resolve().is_relative_to(h) for h in hide):
            argv += ["--ro-bind", str(p), str(p)]
    for h in hide:  # empty and read-only: no place for one seed to leave something for the next
        argv += ["--remount-ro", str(h)]
    argv += ["--bind" if writable else "--ro-bind", str(scratch), str(scratch)]
    if not writable:
        # Seeds write only to their /tmp: bubblewrap's root and /dev (tmpfs, writable by default)
        # go read-only, so nothing written by one seed survives it when seeds share a sandbox
        # (the stage runner empties /tmp after each seed).
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
    argv += ["--chdir", str(scratch),
             "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", str(scratch)]
    return argv


CPU_FILE = "/run/cdc-cpu"  # where the sandbox's shell writes ``times`` when there is no cgroup


@dataclass(frozen=True)
class SelfTest:
    ok: bool
    reason: str
    checks: dict = field(default_factory=dict)
    cpu_s: float = 0.0  # what the self-test cost (a grade that ran it counts it)


def _measured_run(argv: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """subprocess.run in a cgroup of its own when there is one; (result, CPU-seconds)."""
    acc = accounting()
    cg = None
    if acc.method != "rusage":
        try:
            cg = RunCgroup(acc, Limits())
        except OSError:
            cg = None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                           preexec_fn=cg.join if cg else None)
    finally:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if cg is not None:
            cg.kill()
            cpu = cg.cpu_s()
            cg.remove()
    return r, cpu


_SELFTEST = r"""
fail() { echo "FAIL $1"; exit 0; }
[ "$(id -u)" = "$1" ] || fail "uid is $(id -u), expected $1"
if ( : > /usr/.cdc_probe ) 2>/dev/null; then fail "/usr is writable"; fi
shift
for h in "$@"; do [ -z "$(ls -A "$h" 2>/dev/null)" ] || fail "package path $h is visible"; done
if [ -e /proc/self ]; then
  for c in CapInh CapPrm CapEff CapBnd CapAmb; do
    v=$(sed -n "s/^$c:[[:space:]]*//p" /proc/self/status)
    [ "$v" = 0000000000000000 ] || fail "capability set $c is $v"
  done
  n=$(tail -n +3 /proc/net/dev | grep -cv '^ *lo:')
  [ "$n" = 0 ] || fail "the sandbox has a network interface besides lo"
else
  echo NOPROC
fi
echo OK
"""


@lru_cache(maxsize=1)
def selftest() -> SelfTest:
    """Start the sandbox twice (as tools run it, then with a /proc to read its capabilities and
    network) and check: it starts, the uid is unprivileged where user namespaces work, /usr is
    read-only, the package's files are hidden, every capability set is empty, only loopback
    exists, and tools get no /proc."""
    import tempfile  # noqa: PLC0415

    if bwrap_path() is None:
        return SelfTest(False, "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
    uid = str(SANDBOX_UID) if userns_ok() else "0"
    hide = [str(h) for h in hidden_paths() if h.is_dir()]
    checks: dict = {"userns": userns_ok(), "uid": int(uid)}
    cpu = 0.0
    with tempfile.TemporaryDirectory(prefix="cdc-selftest-") as d:
        for proc in (False, True):
            argv = sandbox_argv(Path(d), proc=proc) + ["--", "/bin/sh", "-c", _SELFTEST, "sh", uid, *hide]
            try:
                r, used = _measured_run(argv)
                cpu += used
            except (OSError, subprocess.TimeoutExpired) as exc:
                return SelfTest(False, f"the sandbox did not start: {exc}", checks)
            out = r.stdout.strip().splitlines()
            if r.returncode != 0 or not out or out[-1] != "OK":
                why = next((ln[5:] for ln in out if ln.startswith("FAIL ")), None)
                return SelfTest(False, f"sandbox self-test: {why}" if why else
                                f"the sandbox did not start: {(r.stderr or r.stdout).strip()[:300]}", checks)
            if not proc and "NOPROC" not in out:
                return SelfTest(False, "sandbox self-test: tools see a /proc", checks)
    checks.update(usr_read_only=True, caps_empty=True, network="loopback only", proc_for_tools=False,
                  package_hidden=True)
    if not userns_ok():
        return SelfTest(True, "user namespaces unavailable: tools run as uid 0 with every capability "
                        "dropped", checks, cpu)
    return SelfTest(True, f"uid {SANDBOX_UID} in a user namespace, no capabilities, no network", checks, cpu)


# ------------------------------------------------------------------------------------------- run

def run_bounded(argv: list[str], cwd: Path, limits: Limits, *, env: dict[str, str] | None = None,
                sandbox: bool = False, ro_paths: tuple[Path, ...] = (),
                sandbox_env: dict[str, str] | None = None, tag: str = "run",
                pass_fds: tuple[int, ...] = (), writable: bool = True) -> ProcResult:
    """Run ``argv`` in ``cwd`` within ``limits``; never raises for the child's behaviour.

    pass_fds: file descriptors the tool inherits (kept open through bubblewrap).
    writable: False runs the tool with ``cwd`` read-only (sandbox only); its only writable place
        is then its /tmp, a tmpfs of ``limits.tmp_bytes`` (as for every sandboxed run).
    """
    cwd = Path(cwd)
    acc = accounting()
    cg: RunCgroup | None = None
    if acc.method != "rusage":
        try:
            cg = RunCgroup(acc, limits)
        except OSError:
            cg = None
    status_r = status_w = -1
    cpu_file: Path | None = None
    if sandbox:
        if cg is None:
            # bwrap's PID namespace hides its descendants from wait4, so without a cgroup a shell
            # inside reports its children's CPU time ("times") into a file of its own, bound
            # from outside the build folder (seeds see the build folder).
            fd, name = tempfile.mkstemp(prefix=f"cdc-cpu-{tag}-")
            os.close(fd)
            cpu_file = Path(name)
            os.chmod(cpu_file, 0o666)  # the sandbox's uid writes it
        prefix = sandbox_argv(cwd, ro_paths, writable=writable, tmp_bytes=limits.tmp_bytes,
                              cpu_file=cpu_file)
        for k, v in (sandbox_env or {}).items():
            prefix += ["--setenv", k, v]
        status_r, status_w = os.pipe()
        prefix[1:1] = ["--json-status-fd", str(status_w)]
        if cpu_file is not None:
            inner = ['/bin/sh', '-c', f'"$@"; rc=$?; times > {CPU_FILE}; exit $rc', "sh"]
            argv = prefix + ["--"] + inner + argv
        else:
            argv = prefix + ["--"] + argv
    file_bytes = limits.file_bytes or limits.out_bytes

    def limit() -> None:  # runs in the child between fork and exec
        if cg is not None:
            cg.join()
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.mem_bytes, limits.mem_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    fds = tuple(pass_fds) + ((status_w,) if status_w >= 0 else ())
    spawn_cpu = 0.0  # the grading thread's own CPU while it was inside the run's cgroup
    try:
        with cg.thread_inside() if cg is not None else contextlib.nullcontext(False) as inside:
            t_spawn = time.thread_time()
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, preexec_fn=limit, start_new_session=True,
                                    pass_fds=fds)
            if inside:
                spawn_cpu = time.thread_time() - t_spawn
    except (OSError, subprocess.SubprocessError) as exc:
        for fd in (status_r, status_w):
            if fd >= 0:
                os.close(fd)
        if cg is not None:
            cg.remove()
        if cpu_file is not None:
            cpu_file.unlink(missing_ok=True)
        return ProcResult(127, "", f"cannot start {argv[0]}: {exc}", 0.0, 0.0, 0, False, False,
                          accounting=acc.method)
    if status_w >= 0:
        os.close(status_w)
    timed_out, flooded = threading.Event(), threading.Event()

    def kill() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if cg is not None:
            cg.kill()

    bufs: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}

    def reader(stream, key: str) -> None:
        buf = bufs[key]
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                break
            room = limits.out_bytes - len(buf)
            buf += chunk[:max(room, 0)]
            if len(chunk) > room and not flooded.is_set():
                flooded.set()
                kill()
        stream.close()

    readers = [threading.Thread(target=carry_cpu(reader, fresh=True), args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=carry_cpu(reader, fresh=True), args=(proc.stderr, "err"), daemon=True)]
    for t in readers:
        t.start()

    def on_timeout() -> None:
        timed_out.set()
        kill()

    timer = threading.Timer(limits.wall_s, on_timeout)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    kill()  # leave no stray descendants behind
    for t in readers:
        t.join(timeout=5.0)
    wall = time.monotonic() - start
    rc = proc.returncode
    cpu, rss, limit_hit = ru.ru_utime + ru.ru_stime, ru.ru_maxrss, ""
    if cg is not None:
        # The grading process counts its own thread's CPU; the cgroup counted it too while the
        # thread forked from inside the run's cgroup, so it is taken off here.
        cpu, rss, limit_hit = max(cg.cpu_s() - spawn_cpu, 0.0), max(cg.peak_kb(), rss), cg.limit_hit()
        cg.remove()
    sandbox_error = ""
    if sandbox:
        with os.fdopen(status_r, "rb") as f:
            status_text = f.read().decode("utf-8", "replace")
        exited = '"exit-code"' in status_text
        if cg is None:
            try:
                cpu += _sandboxed_cpu(cpu_file.read_text()) if cpu_file is not None else 0.0
            except OSError:
                pass
        if cpu_file is not None:
            cpu_file.unlink(missing_ok=True)
        if rc > 128 and not timed_out.is_set():
            rc = -(rc - 128)  # a signal-killed child is reported as 128 + signal
        elif rc > 0 and not exited and not (timed_out.is_set() or flooded.is_set() or limit_hit):
            sandbox_error = bytes(bufs["err"]).decode("utf-8", "replace").strip()[-500:] or \
                f"bubblewrap exited with status {rc} before the tool ran"
    stdout = bytes(bufs["out"]).decode("utf-8", "replace")
    stderr = bytes(bufs["err"]).decode("utf-8", "replace")
    exceeded = flooded.is_set() or rc == -signal.SIGXFSZ
    cpu_timeout = rc == -signal.SIGXCPU or (rc == -signal.SIGKILL and cpu >= limits.cpu_s and not limit_hit)
    return ProcResult(rc, stdout, stderr, cpu, wall, rss, timed_out.is_set() or cpu_timeout, exceeded,
                      limit_hit, sandbox_error, acc.method)


def _sandboxed_cpu(text: str) -> float:
    """Children's user + system seconds from the second line of the shell's ``times``."""
    lines = text.split("\n")
    if len(lines) < 2:
        return 0.0
    total = 0.0
    for fld in lines[1].split():
        m = re.fullmatch(r"(\d+)m([\d.]+)s", fld)
        if m:
            total += int(m.group(1)) * 60 + float(m.group(2))
    return total


# ------------------------------------------------------------ the grading threads' own CPU

class CpuMeter:
    """CPU time of the threads of one measured piece of work (a grade): the thread that opened it
    (``thread_time`` since then) plus every thread started for it through ``carry_cpu``. Unlike
    ``process_time`` it does not count other threads of the process (other grades running
    concurrently in the same interpreter)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads = 0.0
        self._start = time.thread_time()

    def add(self, seconds: float) -> None:
        with self._lock:
            self._threads += seconds

    def total(self) -> float:
        """Seconds so far; call it from the thread that opened the meter."""
        with self._lock:
            return time.thread_time() - self._start + self._threads


_METER: contextvars.ContextVar[CpuMeter | None] = contextvars.ContextVar("cdc_cpu_meter", default=None)


def probe(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run`` of a short tool probe (a version, a sandbox check; each run once per
    process, cached by its caller), its CPU charged to the meter in force: the grade that runs a
    probe pays for it (it was missing from the first grade's cpu_s). The CPU is the process's
    RUSAGE_CHILDREN difference, which a child of another thread ending at the same moment would
    also enter; probes are a few ms once per process. Raises as subprocess.run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    finally:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        meter = _METER.get()
        if meter is not None:
            meter.add((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))


@contextlib.contextmanager
def cpu_meter() -> Iterator[CpuMeter]:
    """Measure the CPU of the calling thread and of the threads it starts through ``carry_cpu``."""
    meter = CpuMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def carry_cpu(fn: Callable, *, fresh: bool = False) -> Callable:
    """``fn`` to run in another thread, its thread CPU charged to the meter in force where
    ``carry_cpu`` is called (the meter also passes on to the threads ``fn`` starts).

    fresh: ``fn`` is the target of a thread of its own (not a task of a pool's reused thread), so
    the thread's whole CPU up to the end of ``fn`` is charged, its start-up included.
    """
    meter = _METER.get()
    if meter is None:
        return fn

    def run(*args, **kwargs):
        token = _METER.set(meter)
        t0 = 0.0 if fresh else time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            meter.add(time.thread_time() - t0)
            _METER.reset(token)

    return run
