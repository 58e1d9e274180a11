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
Not covered: synthesis itself runs before the count, so its cost is bounded by slang's
elaboration limits (synth.py: generate steps, unroll limit, instance arrays, constant size) and,
beyond those, by the CPU backstop.
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
