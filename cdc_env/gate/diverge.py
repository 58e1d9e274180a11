"""Differential elaboration: does the simulator's build match the design the gate analysed?

The gate judges pyslang's elaboration of the design; the grade runs what the simulator built. If
the two front ends disagree -- a constant evaluated differently, a generate branch chosen
differently, a module name resolved differently -- the gate's verdict is about another design.
After the build, the grader reads what the simulator built from its own output (for Icarus, the
compiled .vvp lists every scope with its module type and every parameter's value:
simulators.icarus_elaboration) and compares it here with the gate's record
(netlist.Netlist.elaboration). Any difference is refused as GATE-DIVERGE.

Compared: the multiset of provided-primitive instances (path below the top, module), the
multiset of helper-instance and generate-block scopes, and every integer parameter value both
sides know (paths with unnamed generate blocks written genblk*, since the two front ends may
number them differently).
"""

from __future__ import annotations

from collections import Counter

from .netlist import PRIMITIVES

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
    bad = sorted(p for p in gp.keys() & bp.keys() if gp[p] != bp[p])
    if bad:
        p = bad[0]
        return (f"parameter values: {p} is {gp[p]} to the gate but {bp[p]} to the simulator "
                f"({len(bad)} parameter(s) differ)")
    return None


def message(detail: str) -> str:
    return (f"the simulator built a different design from the one the gate checked ({detail}); "
            "write constant expressions whose width and value are unambiguous (size every literal, "
            "give localparams a type, e.g. localparam logic [4:0] X = 5'd15 + 5'd1)")


def check_build(sim_name: str, workdir, tb_top: str, top: str,
                gate_elab: dict | None) -> tuple[str, str] | None:
    """After a successful build: None if the build matches the gate's elaboration, else
    ("refused", message) or ("tool_error", why). Icarus only: Verilator refuses the constructs
    on which the front ends are known to differ (see docs/gate.md)."""
    from pathlib import Path  # noqa: PLC0415

    from ..simulators import icarus_elaboration  # noqa: PLC0415

    if sim_name != "icarus" or gate_elab is None:
        return None
    try:
        text = (Path(workdir) / "sim.vvp").read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return "tool_error", f"cannot read the compiled design to compare with the gate: {exc}"
    built = icarus_elaboration(text, tb_top, top, PRIMITIVE_NAMES)
    if built is None:
        return "tool_error", f"the compiled design has no single instance of {top} under {tb_top}"
    d = compare(gate_elab, built)
    return ("refused", message(d)) if d else None
