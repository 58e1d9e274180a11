"""The Icarus Verilog backend: compile once with iverilog, run the seeds with vvp.

Icarus is four-state (it models X and Z). In a stage sandbox the seeds are forked one by one from
one vvp process stopped at time 0 (the stage runner's zygote mode), so vvp starts and loads the
design once per stage; each seed is still a process of its own, a copy of the same time-0 image. Its verdict
channel is the VPI module trusted/icarus/cdc_verdict.c (built once and cached). Every vvp runs with
trusted/icarus/cdc_fastcast.c preloaded (``env LD_PRELOAD=...``; built once and cached): a memo of
the C++ runtime's dynamic_cast answers, which vvp asks on every variable read and write (the
same answers, ~40 % fewer instructions a seed; ``CDC_ENV_ICARUS_PRELOAD=0`` runs without it). Also here: what
the always_comb rewrite Icarus 11 needs (kept for builds of source text, e.g. the
primitives' unit tests; a graded design is always the synthesized netlist).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from .. import paths
from ..task import Task
from .base import (
    BUILD_LIMITS,
    Build,
    Simulator,
    build_failure,
    cached_binary,
    scrub,
    seed_plusargs,
    self_contained,
    stage_sources,
)
from .proc import probe, run_bounded
from .seeds import SeedPlan


class Icarus(Simulator):
    """Icarus Verilog 11 (Debian ``iverilog``): compile once with iverilog, run vvp per seed."""

    name = "icarus"
    title = "Icarus Verilog"
    batching = False
    four_state = True

    def available(self) -> bool:
        return shutil.which("iverilog") is not None and shutil.which("vvp") is not None

    def missing(self) -> str:
        return "Icarus Verilog is not installed: apt-get install -y iverilog"

    def version(self) -> str:
        return _icarus_version()

    def build_netlist(self, task: Task, design: dict[str, str], workdir: Path, *,
                      sandbox: bool = True) -> Build:
        return self.build(task, design, workdir, sandbox=sandbox, standalone=True)

    def build(self, task: Task, design: dict[str, str], workdir: Path, *, sandbox: bool = True,
              standalone: bool = False) -> Build:
        """Compile the testbench of ``task`` with ``design``. ``standalone``: ``design`` is the gate's
        netlist, which synthesis elaborated alone, so the design-alone elaboration
        (``self_contained``: one more iverilog run) is not repeated (as Verilator.build)."""
        try:
            vpi = vpi_module(sandbox=sandbox)
        except (OSError, RuntimeError) as exc:
            return Build("tool_error", f"Icarus verdict module: {exc}", workdir)
        files = stage_sources(task, {n: icarus_always_comb(t) for n, t in design.items()}, workdir)
        # -gstrict-expr-width: expression widths as the standard (and the gate's front end) has them
        argv = ["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-L", str(vpi), "-m", VPI_NAME,
                "-s", task.tb_top, "-o", "sim.vvp", *[str(f.relative_to(workdir)) for f in files]]
        proc = run_bounded(argv, workdir, BUILD_LIMITS, sandbox=sandbox, ro_paths=(vpi,), tag="build")
        log = scrub((proc.stdout + proc.stderr).strip(), workdir, task.editable)
        failed = build_failure(proc, log)
        if failed:
            status, log = failed
        else:
            status = "pass" if proc.returncode == 0 and (workdir / "sim.vvp").is_file() else "compile_error"
        cpu, wall, rss = proc.cpu_s, proc.wall_s, proc.max_rss_kb
        if status == "pass" and not standalone:
            alone_argv = ["iverilog", "-g2012", "-gstrict-expr-width", "-I", ".", "-t", "null",
                          "-s", task.top]
            refused, alone = self_contained(alone_argv, workdir, task, sandbox=sandbox)
            cpu, wall, rss = cpu + alone.cpu_s, wall + alone.wall_s, max(rss, alone.max_rss_kb)
            if refused:
                status, log = refused
        return Build(status, log, workdir, cpu, wall, rss,
                     {"vpi": str(vpi), "tb_top": task.tb_top, "preload": _preload_dir(sandbox)})

    def verdict_secrets(self, build: Build, nonce: int) -> list[str]:
        return [f"{nonce:016x}", build.extra["tb_top"]]

    def _vvp(self, build: Build) -> list[str]:
        """vvp and its design file, with the cast memo preloaded where it was built."""
        pre = build.extra.get("preload", "")
        return (["env", f"LD_PRELOAD={pre}/{PRELOAD_NAME}.so"] if pre else []) + ["vvp", "-n", "sim.vvp"]

    def seed_argv(self, build: Build, plan: SeedPlan, settle: bool) -> list[str]:
        return [*self._vvp(build), *seed_plusargs(plan, settle)]

    def seed_ro_paths(self, build: Build) -> tuple[Path, ...]:
        pre = build.extra.get("preload", "")
        return (Path(build.extra["vpi"]),) + ((Path(pre),) if pre else ())

    def zygote_argv(self, build: Build) -> tuple[list[str], int] | None:
        # the verdict module forks each seed at the start of simulation and writes its plusargs
        # into these placeholder slots (trusted/icarus/cdc_verdict.c, "zygote mode")
        head = self._vvp(build)
        return [*head, *[ZYGOTE_SLOT] * ZYGOTE_SLOTS], len(head)


VPI_NAME = "cdc_verdict"
ZYGOTE_SLOT = "+cdc_zygote_slot"
ZYGOTE_SLOTS = 24  # at most this many plusargs per seed (a seed has about 8); more: a fresh process


def vpi_source() -> Path:
    return paths.trusted_source("icarus", f"{VPI_NAME}.c")


def vpi_module(*, sandbox: bool = True) -> Path:
    """The directory of the cached Icarus verdict module (cdc_verdict.vpi), built on first use
    with iverilog-vpi's flags; keyed by its source and the Icarus version. Raises OSError/RuntimeError."""
    if shutil.which("iverilog-vpi") is None:
        raise RuntimeError("iverilog-vpi is missing (Debian: apt-get install -y iverilog)")
    # iverilog-vpi's own flags, with gcc named directly (its "cc" is a symlink into /etc).
    script = (f'gcc $(iverilog-vpi --cflags) -c -o {VPI_NAME}.o {VPI_NAME}.c && '
              f'gcc $(iverilog-vpi --ldflags) -o {VPI_NAME}.vpi {VPI_NAME}.o $(iverilog-vpi --ldlibs)')
    return cached_binary("icarus-vpi", vpi_source(), f"{VPI_NAME}.vpi", script, _icarus_version(),
                         sandbox=sandbox)


PRELOAD_NAME = "cdc_fastcast"
# "0": vvp runs without the cast memo (trusted/icarus/cdc_fastcast.c); for measurements only
PRELOAD_ENV = "CDC_ENV_ICARUS_PRELOAD"


def preload_module(*, sandbox: bool = True) -> Path:
    """The directory of the cached cast memo (cdc_fastcast.so, trusted/icarus/cdc_fastcast.c),
    preloaded into every vvp a seed runs in: vvp's per-variable dynamic_cast answered from a memo
    of the C++ runtime's own answers (same results, about 40 % fewer instructions a seed). Built
    on first use, keyed by its source and the Icarus version. Raises OSError/RuntimeError."""
    script = f"gcc -O2 -fPIC -shared -o {PRELOAD_NAME}.so {PRELOAD_NAME}.c -ldl"
    return cached_binary("icarus-preload", paths.trusted_source("icarus", f"{PRELOAD_NAME}.c"),
                         f"{PRELOAD_NAME}.so", script, _icarus_version(), sandbox=sandbox)


def _preload_dir(sandbox: bool) -> str:
    """The cast memo's directory for a build, or '' (vvp then runs without it: the same results,
    only slower) when it is switched off or could not be built."""
    if os.environ.get(PRELOAD_ENV, "1") == "0":
        return ""
    try:
        return str(preload_module(sandbox=sandbox))
    except (OSError, RuntimeError):
        return ""


@lru_cache(maxsize=1)
def _icarus_version() -> str:
    try:
        out = probe(["iverilog", "-V"], timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else "unknown"



# ----- always_comb on Icarus 11 -----
_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\\\S+|`?[A-Za-z_$][A-Za-z0-9_$]*|.', re.S)


_LOCAL_TYPES = frozenset({"reg", "integer", "logic", "int", "bit", "byte", "shortint", "longint", "time",
                          "genvar", "var"})


_STATEMENT_PREFIXES = frozenset({"begin", "end", "automatic", "static", "const"})


def _function_with_locals(toks: list[str]) -> bool:
    """Whether some function declares a variable of its own (the trigger of the Icarus 11 hang)."""
    words = [t for t in toks if not t.isspace() and not t.startswith(("//", "/*"))]
    inside = False
    head = True  # the function's header statement (its name and ANSI ports)
    first: str | None = None  # first word of the current statement
    prev = ""
    for w in words:
        if w == "function":
            inside, head, first = True, True, None
        elif w == "endfunction":
            inside = False
        elif inside:
            if first is None and w not in _STATEMENT_PREFIXES:
                first = w
            if not head and (first in _LOCAL_TYPES or (first == "for" and prev == "(" and w in _LOCAL_TYPES)):
                return True
            if w == ";":
                head, first = False, None
        prev = w
    return False


def icarus_always_comb(text: str) -> str:
    """The design text Icarus 11 compiles: ``always_comb`` as ``always @*`` in a file that
    declares a function with variables of its own.

    Icarus 11 makes an always_comb block sensitive to the variables of the functions it calls,
    so two such blocks calling one function with a local loop variable wake each other forever
    at time 0. ``always @*`` is sensitive to what the block itself reads (the arguments), which
    for the gate's subset -- no function may carry state between calls (POL-CONSTRUCT) -- is the
    same combinational logic, except that ``always @*`` does not also run at time 0. Done on the
    token stream: comments, strings and escaped identifiers are never touched. A file without
    such a function is compiled as written.
    """
    if "always_comb" not in text or "function" not in text:
        return text
    toks = _TOKENS.findall(text)
    if "function" not in toks or "always_comb" not in toks or not _function_with_locals(toks):
        return text
    return "".join("always @*" if t == "always_comb" else t for t in toks)
