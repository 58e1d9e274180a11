"""X safety of a synthesized netlist: can any X or Z exist in the design once both resets are
released? (``sim="auto"``'s licence to grade a first grade on a two-state simulator; the argument
is in docs/parity.md, "X safety".)

Icarus is four-state and Verilator two-state, so a design's verdict can differ between them only
through an X or Z (or a plain simulator difference, which parity measures). After synthesis
(synth.py: ``proc; flatten; opt; setundef -zero -undriven``) the netlist has no undefined
constant and no undriven net, the testbench drives every input with a known value from time 0,
and both resets are asserted together for at least four rising edges of each clock
(trusted/hdl/cdc_tb.vh). X can then come only from: state that no reset reaches (a flop without a
reset, a latch, a memory), a reset value with X bits, a cell that makes X out of known inputs (a
division or modulo by zero, an out-of-range variable part-select, a negative power), a tristate,
or a cell this check does not know. ``check`` accepts a netlist only when every state-holding
cell is a flop whose reset is a task reset port -- or a ``cdc_sync_reset`` output made from one
(``synced_resets``) -- active low, with a fully known value (asynchronous, or synchronous and
clocked by a task clock: the synchronizer's own, for a synced reset), every primitive instance
is clocked by task clocks and reset by task resets, and every other cell is one whose output is known
whenever its inputs are. Everything else is "not X-safe" -- a sufficient condition, not an
exact one: a refusal only costs CPU (the grade stays on Icarus), never a verdict.
"""

from __future__ import annotations

from .cdc import PRIM_OUT, Netlist

# Cells whose outputs are known whenever every input is known (Yosys internal cells, word level).
_KNOWN_IN_KNOWN_OUT = frozenset(
    {
        "$not",
        "$pos",
        "$neg",
        "$and",
        "$or",
        "$xor",
        "$xnor",
        "$reduce_and",
        "$reduce_or",
        "$reduce_xor",
        "$reduce_xnor",
        "$reduce_bool",
        "$logic_not",
        "$logic_and",
        "$logic_or",
        "$shl",
        "$shr",
        "$sshl",
        "$sshr",
        "$shift",
        "$lt",
        "$le",
        "$eq",
        "$ne",
        "$eqx",
        "$nex",
        "$ge",
        "$gt",
        "$add",
        "$sub",
        "$mul",
        "$mux",
        "$pmux",
        "$bmux",
        "$demux",
        "$bwmux",
        "$concat",
        "$slice",
        "$lut",
        "$sop",
        "$alu",
        "$lcu",
        "$macc",
        "$fa",
    }
)
# Flops reset asynchronously / synchronously; the reset wins over the enable in all of them.
_ASYNC_RESET = frozenset({"$adff", "$adffe"})
_SYNC_RESET = frozenset({"$sdff", "$sdffe"})
_DIVIDE = frozenset({"$div", "$mod", "$divfloor", "$modfloor"})
# Primitive ports: clocks and active-low resets (cdc_ram has no reset: its entries start at 0).
_PRIM_CLOCKS = {
    "cdc_sync_bus": ("clk_i",),
    "cdc_sync_bit": ("clk_i",),
    "cdc_sync_pulse": ("src_clk_i", "dst_clk_i"),
    "cdc_ram": ("wclk_i", "rclk_i"),
    "cdc_sync_reset": ("clk_i",),
    "cdc_hold_bus": ("clk_i",),
}
_PRIM_RESETS = {
    "cdc_sync_bus": ("rst_ni",),
    "cdc_sync_bit": ("rst_ni",),
    "cdc_sync_pulse": ("src_rst_ni", "dst_rst_ni"),
    "cdc_ram": (),
    "cdc_sync_reset": ("rst_ni",),
    "cdc_hold_bus": (),
}


def _known(value: object) -> bool:
    """A parameter value (Yosys JSON: a bit string or a number) without x or z bits."""
    return not (isinstance(value, str) and any(c in "xXzZ" for c in value))


def _param_int(value: object) -> int:
    if isinstance(value, int):
        return value
    s = str(value)
    return int(s, 2) if s and set(s) <= {"0", "1"} else int(s)


def synced_resets(net: Netlist, is_clock, is_reset) -> dict[int, object]:
    """The ``rst_no`` bits of the ``cdc_sync_reset`` instances that count as task resets -> the
    instance's clock bit: clocked by a task clock (``is_clock(bit)``), with ``rst_ni`` a task reset
    (``is_reset(bit)``) or such a bit itself (a chain of them). Sound because the primitive
    (trusted/hdl/cdc_reset.v) is two flops asynchronously reset by ``rst_ni`` to 0 and fed a
    constant 1: ``rst_no`` is never X once ``rst_ni`` has been asserted, falls in the time step
    ``rst_ni`` falls and rises only on a later edge of its own clock (the late-release model
    delays, never makes X) -- it is low for at least as long as the reset it is made from, plus
    two edges of its clock."""
    out: dict[int, object] = {}
    changed = True
    while changed:
        changed = False
        for name, c in net.cells.items():
            if c["type"] != "cdc_sync_reset":
                continue
            q, clk, rst = (net.conn(name, p) for p in ("rst_no", "clk_i", "rst_ni"))
            if (len(q) == 1 and isinstance(q[0], int) and q[0] not in out and len(clk) == 1 and len(rst) == 1
                    and is_clock(clk[0]) and (is_reset(rst[0]) or rst[0] in out)):
                out[q[0]] = clk[0]
                changed = True
    return out


class Bounds:
    """Upper bounds of values in a netlist whose every state element is reset and every other cell
    is known-in-known-out (what ``check`` accepts; its other rules make this sound): the largest
    unsigned value a bit vector can hold after reset release.

    A bit can be 1 unless it is the constant 0 or the output bit ``k`` of a cell whose value is
    bounded below ``2**k``. A cell's value is bounded through what cannot wrap or make a bit out
    of nothing -- unsigned (or provably non-negative) ``$add``, ``$mul``, ``$shl``, ``$shr``,
    ``$and``, ``$mux``, ``$pmux`` -- and through a reset flop (its output is its reset value or a
    value of its D input, by induction over its clock edges). Anything else -- a port, a
    primitive's output, another cell, a loop through flops -- is bounded by its width alone.
    """

    _FLOPS = _ASYNC_RESET | _SYNC_RESET
    # Cells followed back from one index at most (Python frames: a few per cell; the gate's child
    # turns a RecursionError into a finding, so a deep cone must end in a bound, not an error).
    DEPTH = 150

    def __init__(self, net: Netlist) -> None:
        self.net = net
        self._cell: dict[str, int] = {}
        self._open: set[str] = set()

    def may_be_one(self, b: object) -> bool:
        if not isinstance(b, int):
            return b == "1" or b not in ("0", "1")  # x or z constants count as 1 (never here)
        d = self.net.driver.get(b)
        if d is None or d[0] == "<port>":
            return True
        return self.cell(d[0]) >> d[2] != 0

    def value(self, bits: list) -> int:
        """The largest unsigned value of ``bits`` (LSB first): the bound of the cell whose output
        they are (its low bits, then constant zeros), else bit by bit."""
        low = list(bits)
        while low and low[-1] == "0":
            low.pop()
        drivers = [self.net.driver.get(b) if isinstance(b, int) else None for b in low]
        if low and all(d is not None and d[0] != "<port>" and d[:2] == drivers[0][:2] and d[2] == i
                       for i, d in enumerate(drivers)):
            return min(self.cell(drivers[0][0]), (1 << len(low)) - 1)
        return sum(1 << i for i, b in enumerate(bits) if self.may_be_one(b))

    def operand(self, cell: str, port: str) -> int | None:
        """The bound of an operand as the cell reads it; None when it is signed and may be
        negative (then it is sign-extended: no bound below the full width)."""
        bits = self.net.conn(cell, port)
        p = self.net.cells[cell].get("parameters", {})
        if _param_int(p.get(f"{port}_SIGNED", 0)) and bits and self.may_be_one(bits[-1]):
            return None
        return self.value(bits)

    def cell(self, name: str) -> int:
        """The bound of a cell's output value (its Y or Q port, as an unsigned number)."""
        if name in self._cell:
            return self._cell[name]
        c = self.net.cells[name]
        t, p = c["type"], c.get("parameters", {})
        width = len(c.get("connections", {}).get("Q" if t in self._FLOPS else "Y", []))
        full = (1 << width) - 1
        if name in self._open or len(self._open) >= self.DEPTH:
            return full  # a loop (a counter through its own flop), or a cone too deep to follow
        self._open.add(name)
        try:
            out = self._bound(name, t, p, full)
        finally:
            self._open.discard(name)
        self._cell[name] = out = min(out, full) if out is not None else full
        return out

    def _bound(self, name: str, t: str, p: dict, full: int) -> int | None:
        if t in self._FLOPS:
            kind = "ARST" if t in _ASYNC_RESET else "SRST"
            reset = p.get(f"{kind}_VALUE", "x")
            if not _known(reset):
                return None
            return max(self.value(self.net.conn(name, "D")), _param_int(reset) if reset != "" else 0)
        if t in ("$mux", "$pmux"):
            width = _param_int(p.get("WIDTH", 0))
            b = self.net.conn(name, "B")
            slices = [b[i:i + width] for i in range(0, len(b), width)] if width else []
            return max([self.value(self.net.conn(name, "A")), *(self.value(s) for s in slices)])
        if t not in ("$add", "$mul", "$shl", "$sshl", "$shr", "$and"):
            return None
        a = self.operand(name, "A")
        b = self.operand(name, "B")
        if a is None or b is None:
            return None
        if t == "$and":
            return min(a, b)
        if t == "$shr":
            return a
        if t in ("$shl", "$sshl"):
            if b >= full.bit_length():
                return None
            out = a << b
        else:
            out = a + b if t == "$add" else a * b
        return out if out <= full else None  # a result that can wrap is bounded by its width only

    def shiftx_in_range(self, name: str) -> bool:
        """Whether the variable part-select ``name`` (``$shiftx``: Y[i] = A[B + i], X outside A)
        reads inside its vector for every index it can get: B not negative and B + |Y| <= |A|."""
        p = self.net.cells[name].get("parameters", {})
        b = self.operand(name, "B")
        return b is not None and b + _param_int(p.get("Y_WIDTH", 0)) <= _param_int(p.get("A_WIDTH", 0))


def check(netlist: dict, top: str, clocks: dict[str, str], resets: dict[str, str]) -> tuple[bool, str]:
    """``(True, summary)`` when no X or Z can exist in ``top`` after reset release, else
    ``(False, the first reason found)``. ``clocks`` / ``resets``: the task's clock and reset ports.
    A reset may also be the output of a ``cdc_sync_reset`` made from a task reset (``synced_resets``);
    a synchronous reset of that kind only on a flop of the synchronizer's own clock."""
    net = Netlist.of(netlist, top)

    def port_bit(b: object, ports: dict[str, str]) -> bool:
        d = net.driver.get(b) if isinstance(b, int) else None
        return d is not None and d[0] == "<port>" and d[1] in ports

    def one(cell: str, port: str) -> object:
        bits = net.conn(cell, port)
        return bits[0] if len(bits) == 1 else None

    synced = synced_resets(net, lambda b: port_bit(b, clocks), lambda b: port_bit(b, resets))

    def reset_bit(b: object, clk: object = None) -> bool:
        """A task reset port, or a synced reset (of clock ``clk``, when given)."""
        return port_bit(b, resets) or (b in synced and (clk is None or synced[b] == clk))

    def where(cell: str) -> str:
        f, line = net.where(cell)
        return f" ({f}:{line})" if f else ""

    bounds = Bounds(net)
    flops = 0
    for name, c in net.cells.items():
        t, p = c["type"], c.get("parameters", {})
        if t in PRIM_OUT:
            for port in _PRIM_CLOCKS[t]:
                if not port_bit(one(name, port), clocks):
                    return False, f"{t} instance {name}: {port} is not a task clock port{where(name)}"
            for port in _PRIM_RESETS[t]:
                if not reset_bit(one(name, port)):
                    return False, f"{t} instance {name}: {port} is not a task reset port{where(name)}"
        elif t in _ASYNC_RESET or t in _SYNC_RESET:
            kind = "ARST" if t in _ASYNC_RESET else "SRST"
            clk = one(name, "CLK") if kind == "SRST" else None
            if not reset_bit(one(name, kind), clk) or _param_int(p.get(f"{kind}_POLARITY", 1)) != 0:
                return False, f"flop {name} ({t}) is not reset by a task reset (active low){where(name)}"
            if not _known(p.get(f"{kind}_VALUE", "x")):
                return False, f"flop {name} ({t}) resets to a value with X bits{where(name)}"
            if t in _SYNC_RESET and not port_bit(one(name, "CLK"), clocks):
                return (
                    False,
                    f"flop {name} ({t}) has a synchronous reset, not clocked by a task clock{where(name)}",
                )
            flops += 1
        elif t in _DIVIDE:
            divisor = net.conn(name, "B")
            if not all(b in ("0", "1") for b in divisor) or "1" not in divisor:
                return (
                    False,
                    f"{t} {name}: divisor not a non-zero constant (X on division by zero){where(name)}",
                )
            if _param_int(p.get("A_SIGNED", 0)) and _param_int(p.get("B_SIGNED", 0)) and "0" not in divisor:
                # No X, but the simulators disagree: the most negative value divided by -1 overflows,
                # Verilator gives 0 where Icarus gives the wrapped quotient (fixture
                # sim-b-signed-div-by-minus-one).
                return False, f"{t} {name}: a signed division by -1 (overflows per simulator){where(name)}"
        elif t == "$pow":
            if _param_int(p.get("B_SIGNED", 0)):
                return False, f"$pow {name}: a signed exponent (X for 0 to a negative power){where(name)}"
        elif t == "$shiftx":
            # Only wholly in range. A select partly outside its vector is X there on Icarus, and
            # Verilator's result differs in its known bits too: the masked write synthesis makes
            # of v[i +: W] <= d selects d at a negative index, and fixture
            # ok-evt-counter-bank-indexed fails every seed on Verilator, passes on Icarus.
            if not bounds.shiftx_in_range(name):
                return False, f"variable part-select {name} can read past its vector (X){where(name)}"
        elif t not in _KNOWN_IN_KNOWN_OUT:
            what = (
                "state without a reset"
                if t
                in (
                    "$dff",
                    "$dffe",
                    "$sdffce",
                    "$aldff",
                    "$aldffe",
                    "$dffsr",
                    "$dffsre",
                    "$dlatch",
                    "$adlatch",
                    "$sr",
                )
                else "memory"
                if t.startswith("$mem")
                else "a cell this check does not know"
            )
            return False, f"{name} ({t}): {what}{where(name)}"
    return True, f"every one of {flops} flops is reset by a task reset; no cell makes X from known inputs"
