"""The gate's work bounds: how much design the analysis takes on, counted, never timed.

A verdict must replay exactly. CPU time does not: the same analysis costs more CPU-s on a loaded
machine (caches and cores shared), so a design near a CPU limit was refused at load 10 and passed
at load 2.6. The rules are therefore bounded by what they work on, counted on the synthesized
netlist before they run -- the same count on any machine at any load -- and a design over a bound
is refused (GATE-LIMIT) with the bound it exceeds and by how much. The analysis child's CPU limit
(gate/__init__.py, CPU_BACKSTOP_S) stays only as a backstop far above what a design within these
bounds costs, and reports tool_error: the gate could not decide, never a verdict.

What is counted (the top module after ``proc; flatten; opt``, the netlist the rules read):

- ``flop_bits``: bits of flop cells (their Q) -- the rules' cost grows with these (each bit's
  cone and class);
- ``cells``: cells of any kind -- synthesis's and the rules' cost grows with these;
- ``port_bits``: bits on all cells' ports -- wide logic the cell count does not show;
- ``memory_bits``: bits of memories kept as memories (width x size) -- what the simulators store;
- ``netlist_bytes``: the netlist text both simulators compile.

The bounds sit far above what the tasks' and fixtures' designs need (the largest: 418 flop bits,
96 cells, 1,785 port bits, 640 memory bits, 12.2 KB of netlist; ``bench/bench_gate_work.py``),
where a design at a bound costs about 1 CPU-s; docs/gate.md ("Work bounds") has the figures.
Synthesis itself is bounded the same way before its costly passes: right after ``read_slang``
(whose own cost slang's elaboration limits bound: generate steps, unroll limit, instance arrays,
constant size; synth.py) the elaborated design's cells and cell-port bits are counted
(``measure_elaborated``), and a design over ``ELABORATED_BOUNDS`` -- twice the netlist bounds,
since ``opt`` only shrinks a design -- stops there (``OverBound``, GATE-LIMIT) instead of spending
seconds in ``opt`` first (a 3,900-step unrolled loop: 0.5 CPU-s of reading, then 3.2 of ``opt``).
"""

from __future__ import annotations

from .cdc import FLOPS

# bound name -> (limit, what it counts)
BOUNDS: dict[str, tuple[int, str]] = {
    "flop_bits": (4096, "flop bits"),
    "cells": (2048, "cells"),
    "port_bits": (65536, "bits on cell ports"),
    "memory_bits": (1 << 20, "memory bits"),
    "netlist_bytes": (1 << 20, "bytes of synthesized netlist"),
}


def measure(netlist: dict, top: str, verilog: str) -> dict[str, int]:
    """The work counts of a synthesized design (Yosys JSON ``netlist``, ``top``'s module)."""
    module = netlist.get("modules", {}).get(top, {})
    cells = module.get("cells", {})
    flop_bits = port_bits = 0
    memories = module.get("memories", {}).values()
    memory_bits = sum(_int(m.get("width", 0)) * _int(m.get("size", 0)) for m in memories)
    for cell in cells.values():
        conns = cell.get("connections", {})
        port_bits += sum(len(bits) for bits in conns.values())
        kind = cell.get("type", "")
        if kind in FLOPS:
            flop_bits += len(conns.get("Q", []))
        elif kind.startswith("$mem"):
            params = cell.get("parameters", {})
            memory_bits += _int(params.get("SIZE", 0)) * _int(params.get("WIDTH", 0))
    return {"flop_bits": flop_bits, "cells": len(cells), "port_bits": port_bits, "memory_bits": memory_bits,
            "netlist_bytes": len(verilog.encode("utf-8"))}


def _int(value: object) -> int:
    """A Yosys JSON parameter (an int, or a string of binary digits)."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value), 2)
    except ValueError:
        return 0


def over(counts: dict[str, int]) -> str | None:
    """The first bound ``counts`` exceed, said with its limit and by how much; None within all."""
    for name, (limit, what) in BOUNDS.items():
        n = counts.get(name, 0)
        if n > limit:
            return (f"the synthesized design has {n:,} {what}; the gate analyses at most {limit:,} "
                    f"(bound '{name}', {n - limit:,} over: {n / limit:.2f}x); make the design smaller")
    return None


# The elaborated design (after read_slang, before proc/opt), counted over every module that is not
# a black box: twice the netlist bounds above. The largest task/fixture design has 40x headroom.
ELABORATED_BOUNDS: dict[str, tuple[int, str]] = {
    "cells": (2 * BOUNDS["cells"][0], "cells"),
    "port_bits": (2 * BOUNDS["port_bits"][0], "bits on cell ports"),
}


class OverBound(Exception):
    """Synthesis stopped early: the elaborated design is over a bound (the message says which)."""


def measure_elaborated(design) -> dict[str, int]:  # noqa: ANN001 -- a pyosys Design, in the child only
    """Cells and cell-port bits of an elaborated (not yet optimised) pyosys design."""
    cells = port_bits = 0
    for module in design.modules_.values():
        if module.get_blackbox_attribute():
            continue
        for cell in module.cells_.values():
            cells += 1
            port_bits += sum(sig.size() for sig in cell.connections_.values())
    return {"cells": cells, "port_bits": port_bits}


def over_elaborated(counts: dict[str, int]) -> str | None:
    """The first elaboration bound ``counts`` exceed, said as ``over`` says it; None within all."""
    for name, (limit, what) in ELABORATED_BOUNDS.items():
        n = counts.get(name, 0)
        if n > limit:
            return (f"the elaborated design has {n:,} {what} before optimisation; the gate synthesizes "
                    f"at most {limit:,} (bound 'elaborated {name}', {n - limit:,} over: {n / limit:.2f}x); "
                    "make the design smaller (a loop unrolled into thousands of cells is the usual cause)")
    return None
