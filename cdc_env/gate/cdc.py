"""Clock-domain rules as queries on the synthesized netlist (Yosys JSON, one flattened module).

The netlist (synth.py) is what both simulators run, so these rules judge exactly the design
that is simulated. Every bit of the netlist is a net id; wires, concatenations and selections
are gone (they are the same ids), so a "cone" is the set of cells between bits.

Model:
  * A flop cell ($dff, $adffe, $sdff, $aldff, $dffsr, ... and clocked memory ports) belongs to
    the domain of its clock, which must be a declared clock input of the top (CDC-CLOCK). A latch,
    or a flop without a clock, is refused.
  * Every bit gets the set of domains its combinational cone reaches back to: flops of a
    domain, the top's inputs (their domains are learned from the task's own design), a reset
    input, a primitive's output (its destination domain), a memory (the domains writing it).
  * Sinks -- each flop's data, enable and reset inputs, each top output, each primitive input --
    must see only their own domain. Anything else is a crossing outside a primitive.
  * Primitives are black-box cells: their clocks and resets are checked against the task's
    ports (CDC-REWIRE), a level synchronizer's ``d_i`` must be driven directly by flops of the
    other domain (CDC-SRCLOGIC, CDC-SAME-DOMAIN), and two of them into one domain must not carry
    the same bit (CDC-REDUNDANT: after opt_merge, identical flops are one net).
  * ``cdc_ram`` read data is followed forward: it may pass only data paths (flop D, mux data
    inputs, selections) to the task's data outputs (CDC-MEM).
  * ``cdc_hold_bus`` (a word held stable by its source while a qualifier crosses) has source
    registers on ``d_i`` (CDC-SRCLOGIC) and its ``q_o`` followed forward may reach only the D of
    destination registers loaded under a synchronized qualifier: the register's enable, or the
    select of a multiplexer on its D path, is a function of synchronizer outputs into its domain
    and registers made from them alone (CDC-QUAL).

``check`` returns findings and a summary (what ``cdc-env check --netlist`` prints); ``learn``
learns the top's port domains and data outputs from the task's own design.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .rules import finding

FLOPS = {"$dff", "$dffe", "$adff", "$adffe", "$sdff", "$sdffe", "$sdffce", "$aldff", "$aldffe",
         "$dffsr", "$dffsre"}
LATCHES = {"$dlatch", "$adlatch", "$dlatchsr", "$sr", "$ff"}  # $ff: a flop with no clock
IMPURE = {"$print": "POL-SYSCALL", "$check": "POL-SYSCALL", "$assert": "POL-CONSTRUCT",
          "$assume": "POL-CONSTRUCT", "$cover": "POL-CONSTRUCT", "$live": "POL-CONSTRUCT",
          "$fair": "POL-CONSTRUCT", "$initstate": "POL-CONSTRUCT", "$anyconst": "POL-CONSTRUCT",
          "$anyseq": "POL-CONSTRUCT", "$allconst": "POL-CONSTRUCT", "$allseq": "POL-CONSTRUCT",
          "$anyinit": "POL-INITIAL", "$equiv": "POL-CONSTRUCT", "$tribuf": "POL-CONSTRUCT",
          "$get_tag": "POL-CONSTRUCT", "$set_tag": "POL-CONSTRUCT", "$overwrite_tag": "POL-CONSTRUCT",
          "$original_tag": "POL-CONSTRUCT", "$future_ff": "POL-CONSTRUCT"}
IGNORED = {"$scopeinfo", "$meminit", "$meminit_v2"}
BITWISE = {"$and", "$or", "$xor", "$xnor", "$not", "$pos", "$buf", "$bweqx"}
SYNCS = {"cdc_sync_bus", "cdc_sync_bit"}
HOLD = "cdc_hold_bus"  # a qualified word: source registers in, loaded under a qualifier (CDC-QUAL)
QUALIFIERS = {"cdc_sync_bus", "cdc_sync_bit", "cdc_sync_pulse"}  # outputs a qualifier is made of
PRIM_CLOCKS = {"cdc_sync_bus": (("clk_i", "rst_ni"),), "cdc_sync_bit": (("clk_i", "rst_ni"),),
               "cdc_sync_pulse": (("src_clk_i", "src_rst_ni"), ("dst_clk_i", "dst_rst_ni")),
               "cdc_ram": (("wclk_i", None), ("rclk_i", None)),
               "cdc_sync_reset": (("clk_i", None),),  # its rst_ni: CDC-RESET (_reset_findings)
               HOLD: (("clk_i", None),)}
PRIM_OUT = {"cdc_sync_bus": "q_o", "cdc_sync_bit": "q_o", "cdc_sync_pulse": "pulse_o",
            "cdc_ram": "rdata_o", "cdc_sync_reset": "rst_no", HOLD: "q_o"}
PRIM_CLK = {"cdc_sync_bus": "clk_i", "cdc_sync_bit": "clk_i", "cdc_sync_pulse": "dst_clk_i",
            "cdc_ram": "rclk_i", "cdc_sync_reset": "clk_i",
            HOLD: "clk_i"}  # the clock of each primitive's output
# The domain of a reset input asynchronous to both clocks (task.toml async_resets): a tag no flop
# has, so any use of it outside a cdc_sync_reset's rst_ni is a crossing.
ASYNC = "async"
# Asynchronous controls of a flop cell: a reset, set or load that acts without the clock.
ASYNC_PORTS = {"$adff": ("ARST",), "$adffe": ("ARST",), "$dffsr": ("SET", "CLR"),
               "$dffsre": ("SET", "CLR"), "$aldff": ("ALOAD",), "$aldffe": ("ALOAD",)}
INVERTERS = {"$not", "$logic_not"}
MEM_WRITES = ("$memwr", "$memwr_v2")
MEM_READS = ("$memrd", "$memrd_v2")
# Ports through which cdc_ram's read data may travel (a data path): a flop's D and async data,
# the data inputs of a multiplexer and of a selection, and the inputs of bitwise gates (AND/OR
# gating with a valid, an AND-OR multiplexer, inversion or scrambling: each output bit is that
# input bit gated, so the read data stays data and is followed on to every sink it reaches, where
# a decision is refused as before). Anything else consumes it as control: a comparison, a
# reduction, arithmetic (a carry is a comparison), a select, an enable, a status output.
DATA_PORTS: dict[str, frozenset[str]] = {
    **{t: frozenset({"D", "AD"}) for t in FLOPS},
    "$mux": frozenset({"A", "B"}), "$pmux": frozenset({"A", "B"}), "$bwmux": frozenset({"A", "B"}),
    "$bmux": frozenset({"A"}), "$shiftx": frozenset({"A"}),  # not S / B: the select, the index
    "$pos": frozenset({"A"}), "$buf": frozenset({"A"}), "$not": frozenset({"A"}),
    **{t: frozenset({"A", "B"}) for t in ("$and", "$or", "$xor", "$xnor")},
}
REWIRED = "synchronizer clock/reset rewired"


def _int(v) -> int:
    try:
        return int(str(v), 2)
    except ValueError:
        return 0


@dataclass
class Netlist:
    """Indexes over one flattened module of a Yosys JSON netlist."""

    module: dict
    cells: dict = field(default_factory=dict)
    driver: dict = field(default_factory=dict)  # bit -> (cell, port, index) or ("<port>", name, index)
    users: dict = field(default_factory=lambda: defaultdict(list))  # bit -> [(cell, port, index)]
    names: dict = field(default_factory=dict)  # bit -> "name[index]"
    aliases: dict = field(default_factory=lambda: defaultdict(list))  # bit -> every visible name
    srcs: dict = field(default_factory=dict)  # bit -> "file:line"
    multi: dict = field(default_factory=dict)  # bit -> every driver, for bits with more than one

    @classmethod
    def of(cls, netlist: dict, top: str) -> Netlist:
        mod = netlist["modules"][top]
        n = cls(module=mod, cells=mod.get("cells", {}))
        for pname, p in mod.get("ports", {}).items():
            if p.get("direction") == "input":
                for i, b in enumerate(p["bits"]):
                    if isinstance(b, int):
                        n.driver[b] = ("<port>", pname, i)
        for cname, c in n.cells.items():
            dirs = c.get("port_directions", {})
            for port, bits in c.get("connections", {}).items():
                out = dirs.get(port) == "output" or (not dirs and port in ("Y", "Q"))
                for i, b in enumerate(bits):
                    if not isinstance(b, int):
                        continue
                    if out:
                        if b in n.driver:
                            n.multi.setdefault(b, [n.driver[b]]).append((cname, port, i))
                        n.driver[b] = (cname, port, i)
                    else:
                        n.users[b].append((cname, port, i))
        # Net names for messages: prefer a visible name, then the shortest.
        ranked = sorted(mod.get("netnames", {}).items(),
                        key=lambda kv: (kv[1].get("hide_name", 0), len(kv[0])))
        for name, nn in ranked:
            bits = nn.get("bits", [])
            for i, b in enumerate(bits):
                if isinstance(b, int) and not nn.get("hide_name", 0):
                    n.aliases[b].append(name if len(bits) == 1 else f"{name}[{i + int(nn.get('offset', 0))}]")
                if isinstance(b, int) and b not in n.names:
                    n.names[b] = name if len(bits) == 1 else f"{name}[{i + int(nn.get('offset', 0))}]"
                    src = nn.get("attributes", {}).get("src", "")
                    if src:
                        n.srcs[b] = src
        return n

    def type(self, cell: str) -> str:
        return self.cells[cell]["type"]

    def conn(self, cell: str, port: str) -> list:
        return self.cells[cell].get("connections", {}).get(port, [])

    def name(self, b) -> str:
        return self.names.get(b, f"net {b}") if isinstance(b, int) else f"constant {b}"

    def also(self, b) -> str:
        """The other visible names of a net (wire aliases), for messages."""
        others = [x for x in self.aliases.get(b, []) if x != self.name(b)][:3]
        return f" (also '{', '.join(others)}')" if others else ""

    def where(self, cell: str | None = None, bit=None) -> tuple[str | None, int | None]:
        src = ""
        if cell is not None:
            src = self.cells[cell].get("attributes", {}).get("src", "")
        if not src and bit is not None:
            src = self.srcs.get(bit, "")
        return _src(src)


def _src(src: str) -> tuple[str | None, int | None]:
    """(file, line) of a Yosys src attribute (``f.v:12.3-12.9``; several joined by ``|``)."""
    first = str(src).split("|")[0]
    if ":" not in first:
        return None, None
    file, _, pos = first.rpartition(":")
    line = pos.split(".")[0]
    return file or None, int(line) if line.isdigit() else None


@dataclass
class Ports:
    """What the gate knows about the top's ports (learned from the task's own design)."""

    inputs: dict[str, str]  # data input -> domain
    outputs: dict[str, str]  # output -> domain
    data_outputs: frozenset[str]  # outputs that cdc_ram read data reaches in the task's design
    storage: bool  # the task's design uses cdc_ram
    hold: bool = False  # the task's design uses cdc_hold_bus (the data-enable family)


class Analysis:
    """The netlist with its domains: which clock each flop and clocked memory port has, which
    domain each clock and reset bit belongs to, the writers of each memory, and (``tags``) the
    domains every bit's combinational cone reaches."""

    def __init__(self, net: Netlist, clocks: dict[str, str], resets: dict[str, str]):
        self.net = net
        self.tags: dict = {}  # bit -> the tags of its cone (set by the caller from cones())
        self.clock_of: dict[int, str] = {}  # clock bit -> domain
        self.reset_of: dict[int, str] = {}
        ports = net.module.get("ports", {})
        for port, dom in clocks.items():
            for b in ports.get(port, {}).get("bits", []):
                if isinstance(b, int):
                    self.clock_of[b] = dom
        for port, dom in resets.items():
            for b in ports.get(port, {}).get("bits", []):
                if isinstance(b, int):
                    self.reset_of[b] = dom
        self.cell_dom: dict[str, str | None] = {}  # flop / clocked memory port -> domain (None: bad clock)
        for cname, c in net.cells.items():
            t = c["type"]
            if t in FLOPS or (t in ("$memwr", "$memwr_v2", "$memrd", "$memrd_v2")
                              and _int(c.get("parameters", {}).get("CLK_ENABLE", "0"))):
                clk = net.conn(cname, "CLK")
                self.cell_dom[cname] = self.clock_of.get(clk[0]) if len(clk) == 1 else None
        self.mem_writers: dict[str, set[str]] = defaultdict(set)
        for cname, c in net.cells.items():
            if c["type"] in ("$memwr", "$memwr_v2"):
                mid = c.get("parameters", {}).get("MEMID", cname)
                dom = self.cell_dom.get(cname)
                self.mem_writers[mid].add(dom or "?")

    # ----- the domains of every bit's combinational cone -----
    def source_tags(self, b, input_tags: dict[str, frozenset]) -> frozenset | None:
        """Tags of a bit that starts a cone, or None when it is driven by combinational logic."""
        if not isinstance(b, int):
            return frozenset()
        drv = self.net.driver.get(b)
        if drv is None:
            return frozenset()
        cell, port, _i = drv
        if cell == "<port>":
            if b in self.clock_of:
                return frozenset({("clk", self.clock_of[b])})
            if b in self.reset_of:
                return frozenset({("d", self.reset_of[b])})
            return input_tags.get(port, frozenset())
        t = self.net.type(cell)
        if cell in self.cell_dom:  # flops and clocked read ports
            dom = self.cell_dom[cell]
            return frozenset({("d", dom)}) if dom else frozenset()
        if t in PRIM_OUT:
            dom = self.prim_dest(cell)
            tags = {("d", dom)} if dom else set()
            tags.add(("prim", cell))
            return frozenset(tags)
        return None

    def prim_dest(self, cell: str) -> str | None:
        bits = self.net.conn(cell, PRIM_CLK[self.net.type(cell)])
        return self.clock_of.get(bits[0]) if len(bits) == 1 else None

    def deps(self, cell: str) -> dict[int, list]:
        """Output bit -> the input bits it depends on (bit-precise for bitwise cells)."""
        net = self.net
        c = net.cells[cell]
        t = c["type"]
        dirs = c.get("port_directions", {})
        conns = c.get("connections", {})
        ins = [b for p, bits in conns.items() if dirs.get(p) != "output" for b in bits]
        outs = [(p, bits) for p, bits in conns.items() if dirs.get(p) == "output"]
        res: dict[int, list] = {}
        if t in BITWISE | {"$mux", "$bwmux", "$pmux"}:
            y = conns.get("Y", [])
            a, bb, s = conns.get("A", []), conns.get("B", []), conns.get("S", [])
            prm = c.get("parameters", {})
            for i, yb in enumerate(y):
                if not isinstance(yb, int):
                    continue
                d = []
                for vec, sgn in ((a, "A_SIGNED"), (bb, "B_SIGNED")):
                    if t == "$pmux" and vec is bb:
                        d.extend(bb[i::len(y)] if y else [])
                    elif i < len(vec):
                        d.append(vec[i])
                    elif vec and _int(prm.get(sgn, "0")):
                        d.append(vec[-1])
                if t == "$bwmux":
                    d.append(s[i] if i < len(s) else None)
                else:
                    d.extend(s)
                res[yb] = d
            return res
        if t.startswith("$mem"):  # an asynchronous read port: address, enable and contents
            mid = c.get("parameters", {}).get("MEMID", cell)
            for _p, bits in outs:
                for b in bits:
                    if isinstance(b, int):
                        res[b] = ins + [("mem", mid)]
            return res
        for _p, bits in outs:
            for b in bits:
                if isinstance(b, int):
                    res[b] = ins
        return res

    def cones(self, input_tags: dict[str, frozenset]) -> dict:
        """Tags of every bit (a fixpoint over the combinational cells; loops converge)."""
        net = self.net
        tags: dict = {}
        comb: list[str] = []
        for b in set(net.driver) | set(net.users):
            s = self.source_tags(b, input_tags)
            if s is not None:
                tags[b] = s
        for cname, c in net.cells.items():
            t = c["type"]
            if cname in self.cell_dom or t in PRIM_OUT or t in IGNORED or t in ("$memwr", "$memwr_v2"):
                continue
            comb.append(cname)
        mem_tags: dict[str, frozenset] = {}
        for mid, doms in self.mem_writers.items():
            mem_tags[mid] = frozenset({("d", d) for d in doms if d != "?"} | {("mem", mid)})
        deps = {c: self.deps(c) for c in comb}
        order = self._order(comb, deps)
        for _round in range(64):
            changed = False
            for cname in order:
                for ob, ibs in deps[cname].items():
                    acc = set(tags.get(ob, ()))
                    before = len(acc)
                    for ib in ibs:
                        if isinstance(ib, tuple):
                            acc |= mem_tags.get(ib[1], frozenset({ib}))
                        elif isinstance(ib, int):
                            acc |= tags.get(ib, frozenset())
                    if len(acc) != before or ob not in tags:
                        tags[ob] = frozenset(acc)
                        changed = changed or len(acc) != before
            if not changed:
                break
        return tags

    def _order(self, comb: list[str], deps: dict) -> list[str]:
        """Combinational cells in dependency order (drivers first); loops are cut anywhere."""
        seen: set[str] = set()
        order: list[str] = []
        comb_set = set(comb)
        for start in comb:
            if start in seen:
                continue
            stack = [(start, iter(self._pred(start, deps, comb_set)))]
            seen.add(start)
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    order.append(node)
                    stack.pop()
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, iter(self._pred(nxt, deps, comb_set))))
        return order

    def _pred(self, cell: str, deps: dict, comb_set: set) -> list[str]:
        out = []
        for ibs in deps[cell].values():
            for ib in ibs:
                if isinstance(ib, int):
                    d = self.net.driver.get(ib)
                    if d is not None and d[0] in comb_set:
                        out.append(d[0])
        return out

    def witness(self, b, want) -> tuple:
        """A source bit of ``b``'s cone carrying the tag ``want`` and the cells on the way."""
        net = self.net
        seen = set()
        stack = [(b, ())]
        while stack:
            x, path = stack.pop()
            if x in seen or not isinstance(x, int):
                continue
            seen.add(x)
            drv = net.driver.get(x)
            if drv is None:
                continue
            cell = drv[0]
            if cell == "<port>" or cell in self.cell_dom or net.type(cell) in PRIM_OUT:
                if want in self.tags.get(x, ()):
                    return x, path
                continue
            for ib in self.deps(cell).get(x, []):
                if isinstance(ib, tuple):
                    if ib[0] == "mem":
                        return ("mem", ib[1]), (*path, cell)
                    continue
                if want in self.tags.get(ib, ()):
                    stack.append((ib, (*path, cell)))
        return None, ()


def _clock_findings(a: Analysis, clocks: dict[str, str], resets: dict[str, str]) -> list[dict]:
    net = a.net
    out = []
    ports = net.module.get("ports", {})
    for port in list(clocks) + list(resets):
        if port not in ports:
            out.append(finding("CDC-CLOCK", f"the top module has lost its port '{port}'; keep the task's "
                               "clock and reset ports", file=None))
    for cname, c in net.cells.items():
        t = c["type"]
        file, line = net.where(cname)
        if t in LATCHES:
            q = net.conn(cname, "Q")
            out.append(finding("CDC-CLOCK", f"'{net.name(q[0]) if q else cname}' is a latch or a flop "
                                            "without a "
                               "clock (a combinational block that does not assign it on every path, or "
                               "a level-sensitive block); assign every signal on every path, or clock it",
                               file=file, line=line))
        elif cname in a.cell_dom and a.cell_dom[cname] is None:
            clk = net.conn(cname, "CLK")
            q = net.conn(cname, "Q") or net.conn(cname, "DATA")
            out.append(finding("CDC-CLOCK", f"'{net.name(q[0]) if q else cname}' is clocked by "
                               f"'{net.name(clk[0]) if clk else '?'}', which is not a task clock "
                               f"({', '.join(sorted(clocks))}); clock every flop by a task clock directly "
                               "(no gated, derived or data clocks)", file=file, line=line))
        elif t in IMPURE:
            out.append(finding(IMPURE[t], f"the design synthesizes to a {t} cell (a system task, "
                                          "assertion or "
                               "formal construct); remove it -- the design must be plain RTL",
                               file=file, line=line))
        elif not t.startswith("$") and t not in PRIM_OUT:
            out.append(finding("GATE-SYNTH", f"instance '{cname}' of '{t}' is a black box the grader "
                                             "does not "
                               "provide", file=file, line=line))
    for name, nn in net.module.get("netnames", {}).items():
        if "init" in nn.get("attributes", {}) and not nn.get("hide_name", 0):
            if _init_is_reset_value(net, nn):
                continue
            file, line = _src(nn["attributes"].get("src", ""))
            out.append(finding("POL-INITIAL", f"'{name}' has an initial value (from an initializer, or from "
                               "a two-state type -- bit, int, byte -- which starts at 0): initial values are "
                               "not part of the design the grader accepts; give the register a reset, or "
                               "declare it logic without an initializer", file=file, line=line))
    return out


def _init_is_reset_value(net: Netlist, nn: dict) -> bool:
    """Every bit of a net with an initial value is the Q of an asynchronously reset flop whose
    reset value is that initial value (``reg busy_q = 1'b0;`` reset to 0). The testbench asserts
    every reset before either clock runs, so such a flop holds that value from time 0 through the
    reset, with or without the initializer: it cannot change the netlist's behaviour (issue 36,
    class 4). Any other initial value (a flop without an asynchronous reset, a value other than
    the reset value, a net) is still POL-INITIAL."""
    init = str(nn["attributes"]["init"])
    bits = nn.get("bits", [])
    if len(init) != len(bits) or not bits:
        return False
    for i, b in enumerate(bits):
        d = net.driver.get(b) if isinstance(b, int) else None
        if d is None or d[0] == "<port>" or d[1] != "Q" or net.type(d[0]) not in ("$adff", "$adffe"):
            return False
        value = str(net.cells[d[0]].get("parameters", {}).get("ARST_VALUE", ""))
        k = d[2]
        if len(value) <= k or value[len(value) - 1 - k] != init[len(init) - 1 - i]:
            return False
    return True


def _cone_violation(a: Analysis, sink_bits: list, dom: str | None, what: str, cell: str | None,
                    sync_srcs: set, rewired: set | None = None) -> list[dict]:
    """Findings for bits of a sink whose cone reaches another domain, a clock or a bad memory."""
    net = a.net
    out = []
    reported: set = set()
    for b in sink_bits:
        if not isinstance(b, int):
            continue
        for tag in sorted(a.tags.get(b, ()), key=str):
            kind, val = tag
            if kind == "clk":
                if ("clk", val) in reported:
                    continue
                reported.add(("clk", val))
                file, line = net.where(cell, b)
                out.append(finding("CDC-CLOCK", f"the clock of domain {val} is used as data in {what}; use "
                                   "clocks only as clocks", file=file, line=line))
            elif kind == "d" and dom is not None and val != dom:
                src, path = a.witness(b, tag)
                key = (val, src if not isinstance(src, tuple) else src[1])
                if key in reported:
                    continue
                reported.add(key)
                file, line = net.where(cell, b)
                if isinstance(src, tuple):  # through a memory
                    out.append(finding("CDC-MEM", f"{what} (domain {dom}) reads memory "
                                                  f"'{src[1].lstrip(chr(92))}', "
                                       f"written in domain {val}; storage across domains goes through "
                                       "cdc_ram "
                                       "(where the task provides storage) and pointers through synchronizers",
                                       file=file, line=line))
                    continue
                drv = net.driver.get(src) if src is not None else None
                sname = net.name(src) if src is not None else "?"
                if drv is not None and drv[0] != "<port>" and net.type(drv[0]) in PRIM_OUT:
                    if rewired is not None:
                        rewired.add(drv[0])
                    out.append(finding("CDC-REWIRE", f"{REWIRED}: '{sname}', the output of "
                                                     f"{net.type(drv[0])} "
                                       f"'{drv[0]}' (synchronized into domain {val}), is used in {what} of "
                                       f"domain {dom}; clock the synchronizer by the domain that uses it",
                                       file=file, line=line))
                elif src in sync_srcs:
                    out.append(finding("CDC-BYPASS", f"'{sname}' (domain {val}) crosses through a "
                                                     "synchronizer "
                                       f"and also reaches {what} of domain {dom} raw; use only the "
                                       "synchronized copy", file=file, line=line))
                elif not path and cell in a.cell_dom and _copied_by_flop(a, cell, dom):
                    out.append(finding("CDC-HANDSYNC", f"'{net.name(b)}' copies '{sname}' (domain {val}) and "
                                       f"is copied again in domain {dom}: a hand-written synchronizer; use "
                                       "cdc_sync_bit / cdc_sync_bus", file=file, line=line))
                else:
                    via = f" through {len(path)} cell(s) of logic" if path else ""
                    msg = (f"'{sname}'{net.also(src)} (domain {val}) reaches {what} of domain {dom}{via} "
                           "without a synchronizer primitive; cross it through cdc_sync_bit / cdc_sync_bus / "
                           "cdc_sync_pulse")
                    out.append(finding("CDC-RAW", msg, file=file, line=line))
    return out


def _fan_in_flops(a: Analysis, roots) -> set[str]:
    """The flops whose value can reach a bit of ``roots``: back through combinational cells and
    through flops' D, AD and EN (what a flop's class is made of), to ports and primitives."""
    net = a.net
    cells: set[str] = set()
    seen: set = set()
    work = [b for b in roots if isinstance(b, int)]
    while work:
        b = work.pop()
        if b in seen:
            continue
        seen.add(b)
        drv = net.driver.get(b)
        if drv is None or drv[0] == "<port>" or net.type(drv[0]) in PRIM_OUT:
            continue
        cell = drv[0]
        c = net.cells[cell]
        if net.type(cell) in FLOPS:
            if cell in cells:
                continue
            cells.add(cell)
            ports = ("D", "AD", "EN")
        elif cell in a.cell_dom:
            continue
        else:
            dirs = c.get("port_directions", {})
            ports = tuple(p for p in c["connections"] if dirs.get(p) != "output")
        work.extend(x for p in ports for x in c["connections"].get(p, ()) if isinstance(x, int))
    return cells


def flop_classes(a: Analysis, roots=None) -> dict[int, int]:
    """Q bit -> class id, with two bits in one class when they always hold the same value: the
    same kind of flop on the same clock and reset, and next-state functions that compute the same
    (_BitHash.function) once equivalent flops are taken as one (partition refinement from the
    coarsest partition, so registers with the same next-state loop -- two toggles of one request
    -- fall in one class, which opt_merge alone cannot see). With ``roots`` (bits), only the flops
    that can reach them are classed: their classes depend on nothing else, so they are the same."""
    net = a.net
    keep = _fan_in_flops(a, roots) if roots is not None else None
    bits: list[tuple[str, int, int]] = []  # (cell, index, Q bit)
    for cell, dom in a.cell_dom.items():
        if dom is None or net.type(cell) not in FLOPS or (keep is not None and cell not in keep):
            continue
        for i, qb in enumerate(net.conn(cell, "Q")):
            if isinstance(qb, int):
                bits.append((cell, i, qb))
    if not bits:
        return {}

    def base(cell: str, i: int) -> tuple:
        c = net.cells[cell]
        prm = c.get("parameters", {})
        vals = tuple(str(v)[-1 - i] if k.endswith("_VALUE") and len(str(v)) > i else v
                     for k, v in sorted(prm.items()) if k != "WIDTH")
        ctl = tuple((p, tuple(net.conn(cell, p))) for p in ("CLK", "ARST", "SRST", "ALOAD", "SET", "CLR")
                    if p in c.get("connections", {}))
        return (c["type"], vals, ctl)

    cls = {qb: hash(base(cell, i)) for cell, i, qb in bits}
    count = len(set(cls.values()))
    progs: dict = {}
    for _round in range(64):
        memo: dict = {}
        h = _BitHash(a, cls, memo, progs)
        new = {}
        for cell, i, qb in bits:
            data = tuple(h.function(x[i] if p in ("D", "AD") and i < len(x) else x[0] if len(x) == 1 else -1)
                         for p in ("D", "AD", "EN") if (x := net.conn(cell, p)))
            new[qb] = hash((cls[qb], data))
        n = len(set(new.values()))
        cls = new
        if n == count:
            break
        count = n
    return cls


def _loop_findings(net: Netlist) -> list[dict]:
    """A combinational loop (gates feeding themselves back) is storage without a clock: a latch
    made of gates, which Icarus and Verilator settle differently (Verilator orders the loop once
    per evaluation, Icarus iterates events) -- two designs again. One finding per loop found."""
    comb = {c for c, cell in net.cells.items()
            if cell["type"].startswith("$") and cell["type"] not in FLOPS | LATCHES | IGNORED
            and not cell["type"].startswith("$mem")}
    succ: dict[str, set[str]] = {c: set() for c in comb}
    for c in comb:
        cell = net.cells[c]
        dirs = cell.get("port_directions", {})
        for port, bits in cell.get("connections", {}).items():
            if dirs.get(port) != "output":
                continue
            for b in bits:
                for user, _p, _i in net.users.get(b, []) if isinstance(b, int) else []:
                    if user in comb:
                        succ[c].add(user)
    state: dict[str, int] = {}  # 1: on the DFS stack, 2: done
    out: list[dict] = []
    for start in sorted(comb):
        if start in state:
            continue
        stack = [(start, iter(sorted(succ[start])))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                q = [b for b in net.conn(nxt, "Y") if isinstance(b, int)]
                file, line = net.where(nxt, q[0] if q else None)
                what = net.name(q[0]) if q else nxt
                out.append(finding("CDC-CLOCK", f"a combinational loop through '{what}' (logic that feeds "
                                   "itself back: a latch made of gates); store state in a flop clocked by a "
                                   "task clock", file=file, line=line))
                if len(out) >= 5:
                    return out
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(succ[nxt]))))
    return out


def _multi_driver_findings(net: Netlist) -> list[dict]:
    """A net with two drivers: the simulators resolve it differently (Icarus to X, Verilator to one
    of them), so the design that runs would not be the design analysed. Synthesis makes one when
    a variable is assigned from two processes -- typically a static function's argument or local
    when the function is called from two always blocks."""
    out: list[dict] = []
    seen: set = set()
    for b, drivers in sorted(net.multi.items()):
        name = net.name(b).split("[")[0]
        if name in seen:
            continue
        seen.add(name)
        cell = next((d[0] for d in drivers if d[0] != "<port>"), None)
        file, line = net.where(cell, b)
        out.append(finding("GATE-SYNTH", f"'{name}' has {len(drivers)} drivers after synthesis (it is "
                           "assigned from more than one process or port); drive each variable from one "
                           "always block (a static function called from two always blocks: make it "
                           "automatic)", file=file, line=line))
    return out


# Cells whose bits _BitHash.function evaluates (everything else is a leaf, by its structural hash).
_TABLE_BITWISE = {"$not", "$pos", "$buf", "$and", "$or", "$xor", "$xnor", "$mux", "$bwmux"}
_TABLE_SELECT = {"$demux", "$bmux"}
_TABLE_REDUCE = {"$eq", "$ne", "$logic_not", "$logic_and", "$logic_or", "$reduce_and", "$reduce_or",
                 "$reduce_xor", "$reduce_xnor", "$reduce_bool"}
_TABLE_LEAVES = 10  # leaf bits of one truth table (at most 2**10 rows)
_TABLE_CELLS = 400  # bits evaluated for one truth table


class _BitHash:
    """A structural hash of a bit's combinational cone, flops taken by their class; ``function``
    hashes what the bit computes where the cone is small (its truth table)."""

    def __init__(self, a: Analysis, cls: dict, memo: dict, progs: dict | None = None):
        self.a, self.cls, self.memo = a, cls, memo
        self.fmemo: dict = {}
        self.progs: dict = {} if progs is None else progs  # bit -> _program(bit), across rounds

    def function(self, b) -> int:
        """The hash of the Boolean function bit ``b`` computes from its leaves (flops by class,
        ports, primitive outputs, cells not evaluated here by their structural hash), over the
        leaves it really depends on: two bits that compute the same function are equal whatever
        the logic's shape -- ``t[k] <= ~t[k]`` and ``t[0] <= k ? t[0] : ~t[0]`` alike (one
        $bwmux per indexed write, selects that differ per bit). A cone too large for a table of
        _TABLE_LEAVES inputs keeps the structural hash."""
        if b in self.fmemo:
            return self.fmemo[b]
        v = self._table(b)
        if v is None:
            v = self(b)
        self.fmemo[b] = v
        return v

    def _program(self, b) -> tuple | None:
        """What ``_table`` evaluates for bit ``b``, the same in every round: its leaf bits and its
        steps (bit, operation, input bits), drivers first; None when the cone is too large, has a
        loop or an X constant. Kept across rounds (``progs``)."""
        net = self.a.net
        leaves: list = []
        steps: list = []
        seen: set = set()
        done: set = set()
        stack = [(b, False)]
        while stack:
            y, finished = stack.pop()
            if not isinstance(y, int):
                if y not in ("0", "1"):
                    return None
                continue
            if finished:
                kind, ins = self._ins(y)
                if any(isinstance(x, int) and x not in done for xs in ins for x in xs):
                    return None  # a combinational loop: no function (CDC-CLOCK refuses the loop)
                steps.append((y, kind, ins))
                done.add(y)
                continue
            if y in seen:
                continue
            seen.add(y)
            d = net.driver.get(y)
            ins = None
            if not (y in self.cls or d is None or d[0] == "<port>" or d[0] in self.a.cell_dom
                    or net.type(d[0]) not in _TABLE_BITWISE | _TABLE_SELECT | _TABLE_REDUCE):
                ins = self._ins(y)
            if ins is None:
                leaves.append(y)
                done.add(y)
                if len(leaves) > _TABLE_LEAVES:
                    return None
                continue
            if len(seen) > _TABLE_CELLS:
                return None
            stack.append((y, True))
            stack.extend((z, False) for zs in ins[1] for z in zs)
        if b in leaves:
            return None
        return leaves, steps

    def _table(self, b) -> int | None:
        if not isinstance(b, int):
            return None
        if b not in self.progs:
            self.progs[b] = self._program(b)
        prog = self.progs[b]
        if prog is None:
            return None
        leaf_bits, steps = prog
        leaves = {x: self(x) for x in leaf_bits}
        # Leaf bits with one hash (flops of one class: assumed equal, as the refinement does) are
        # one variable.
        names = sorted(set(leaves.values()))
        n = len(names)
        full = (1 << (1 << n)) - 1
        var = {}
        for j, h in enumerate(names):
            period = 1 << j
            block = ((1 << period) - 1) << period  # rows with bit j set, in one period of 2**(j+1)
            m = 0
            for k in range(0, 1 << n, 2 * period):
                m |= block << k
            var[h] = m & full
        val: dict = {x: var[h] for x, h in leaves.items()}
        for y, kind, ins in steps:
            val[y] = self._eval(kind, [[val[x] if isinstance(x, int) else (full if x == "1" else 0)
                                        for x in xs] for xs in ins], full)
        tt = val[b]
        # Only the leaves the function depends on name it.
        used = [h for h in names if ((tt >> (1 << names.index(h))) & ~var[h] & full) != (tt & ~var[h] & full)]
        if used != names:
            keep = [names.index(h) for h in used]
            rows = []
            for r in range(1 << len(used)):
                src = sum(1 << keep[j] for j in range(len(used)) if r >> j & 1)
                rows.append((tt >> src) & 1)
            tt = sum(bit << r for r, bit in enumerate(rows))
        return hash(("tt", tuple(used), tt))

    def _ins(self, y) -> tuple[str, list] | None:
        """The operation of bit ``y`` and its input bit lists, or None when not evaluated here."""
        net = self.a.net
        cell, port, idx = net.driver[y]
        c = net.cells[cell]
        t, conns = c["type"], c["connections"]
        if port != "Y":
            return None
        width = len(conns["Y"])
        a, bb, sel = conns.get("A", []), conns.get("B", []), conns.get("S", [])
        if t in _TABLE_BITWISE:
            if len(a) != width or ("B" in conns and len(bb) != width):
                return None
            if t == "$mux":
                return (t, [[a[idx]], [bb[idx]], sel]) if len(sel) == 1 else None
            if t == "$bwmux":
                return (t, [[a[idx]], [bb[idx]], [sel[idx]]]) if len(sel) == width else None
            return (t, [[a[idx]], [bb[idx]]] if "B" in conns else [[a[idx]]])
        if t in _TABLE_SELECT:
            w = _int(c.get("parameters", {}).get("WIDTH", "0"))
            if w <= 0 or len(sel) > 8:
                return None
            if t == "$demux":  # Y[k*W + i] = (S == k) ? A[i] : 0
                if len(a) != w or width != w << len(sel):
                    return None
                return (f"$demux{idx // w}", [[a[idx % w]], sel])
            if width != w or len(a) != w << len(sel):  # $bmux: Y[i] = A[S*W + i]
                return None
            return ("$bmux", [a[idx::w], sel])
        if idx != 0:
            return ("$zero", [])
        if t in ("$eq", "$ne"):
            return (t, [a, bb]) if len(a) == len(bb) else None
        return (t, [a, bb] if "B" in conns else [a])

    @staticmethod
    def _eval(kind: str, ins: list, full: int) -> int:
        def any_(xs):
            r = 0
            for x in xs:
                r |= x
            return r

        if kind == "$zero":
            return 0
        if kind.startswith("$demux"):
            k, r = int(kind[6:]), ins[0][0]
            for j, sb in enumerate(ins[1]):
                r &= sb if k >> j & 1 else ~sb & full
            return r
        if kind == "$bmux":
            words = ins[0]
            for sb in ins[1]:  # S bit 0 picks between neighbours, then pairs, ...
                words = [(sb & hi) | (~sb & full & lo)
                         for lo, hi in zip(words[0::2], words[1::2], strict=True)]
            return words[0]
        if kind in ("$not",):
            return ~ins[0][0] & full
        if kind in ("$pos", "$buf"):
            return ins[0][0]
        if kind in ("$and", "$or", "$xor", "$xnor"):
            x, y = ins[0][0], ins[1][0]
            r = x & y if kind == "$and" else x | y if kind == "$or" else x ^ y
            return (~r & full) if kind == "$xnor" else r
        if kind in ("$mux", "$bwmux"):
            x, y, s = ins[0][0], ins[1][0], ins[2][0]
            return (s & y) | (~s & full & x)
        if kind in ("$eq", "$ne"):
            r = full
            for x, y in zip(ins[0], ins[1], strict=True):
                r &= ~(x ^ y) & full
            return r if kind == "$eq" else ~r & full
        if kind in ("$reduce_or", "$reduce_bool"):
            return any_(ins[0])
        if kind == "$logic_not":
            return ~any_(ins[0]) & full
        if kind == "$logic_and":
            return any_(ins[0]) & any_(ins[1])
        if kind == "$logic_or":
            return any_(ins[0]) | any_(ins[1])
        if kind == "$reduce_and":
            r = full
            for x in ins[0]:
                r &= x
            return r
        r = 0
        for x in ins[0]:
            r ^= x
        return r if kind == "$reduce_xor" else ~r & full

    def __call__(self, b, depth: int = 0) -> int:
        net, cls, memo = self.a.net, self.cls, self.memo
        if not isinstance(b, int):
            return hash(("c", b))
        if b in cls:
            return hash(("q", cls[b]))
        if b in memo:
            return memo[b]
        drv = net.driver.get(b)
        if drv is None or drv[0] == "<port>" or net.type(drv[0]) in PRIM_OUT or depth > 200 \
                or drv[0] in self.a.cell_dom:
            v = hash(("b", b))
        else:
            memo[b] = hash(("loop", b))
            cell, port, idx = drv
            c = net.cells[cell]
            dirs = c.get("port_directions", {})
            conns = c["connections"]
            width = len(conns.get(port, ()))
            data = {p: xs for p, xs in conns.items() if dirs.get(p) != "output" and p != "S"}
            if c["type"] in BITWISE | {"$mux", "$bwmux"} and all(len(xs) == width for xs in data.values()):
                # Bit idx of a bitwise cell depends only on bit idx of its data inputs (and on the
                # whole select of a $mux; on bit idx of a $bwmux's select, which is per bit): hash
                # those, so that the bits of a wide register whose next states are the same logic
                # fall in one class -- and two toggles written through one indexed assignment
                # (``t[k] <= ~t[k]``: one $bwmux selecting per bit) do not.
                s_bits = conns.get("S", ())
                if c["type"] == "$bwmux" and len(s_bits) == width:
                    s_bits = (s_bits[idx],)
                sel = tuple(self(x, depth + 1) for x in s_bits)
                ins = tuple((p, self(xs[idx], depth + 1)) for p, xs in sorted(data.items()))
                v = hash((c["type"], port, sel, ins))
            else:
                ins = tuple((p, tuple(self(x, depth + 1) for x in xs))
                            for p, xs in sorted(conns.items()) if dirs.get(p) != "output")
                v = hash((c["type"], tuple(sorted(c.get("parameters", {}).items())), port, idx, ins))
        memo[b] = v
        return v


_WIRE_STEPS = 16  # cells on a path that _wire_of may follow
WIRE_CELLS = _TABLE_BITWISE | _TABLE_REDUCE  # the cells such a path may pass


def _wire_of(a: Analysis, b) -> int | None:
    """The flop output bit that ``b`` always equals when ``b`` is a wire of it in cells: a path of
    cells, each with exactly one non-constant input bit, whose composition is the identity
    (``q ? 1'b1 : 1'b0``, ``q == 1'b1``, ``!(!q)``, ``q & 1'b1``). One variable and no
    reconvergence: such a path cannot glitch and changes exactly when the flop does, so it is the
    flop's value, whatever shape Yosys's opt happened to leave it in. An inversion or anything
    that reads a second bit is logic (None)."""
    net = a.net
    hb = _BitHash(a, {}, {})
    steps: list = []
    for _ in range(_WIRE_STEPS):
        drv = net.driver.get(b) if isinstance(b, int) else None
        if drv is None or drv[0] == "<port>":
            return None
        if drv[0] in a.cell_dom:
            if net.type(drv[0]) not in FLOPS:
                return None
            val = 0b10  # the flop's value as a two-row truth table: row r is the flop at r
            for kind, ins in reversed(steps):
                val = _BitHash._eval(kind, [[val if isinstance(x, int) else (0b11 if x == "1" else 0)
                                             for x in xs] for xs in ins], 0b11)
            return b if val == 0b10 else None
        if net.type(drv[0]) not in WIRE_CELLS:
            return None
        op = hb._ins(b)
        if op is None:
            return None
        var = {x for xs in op[1] for x in xs if isinstance(x, int)}
        if len(var) != 1 or any(x not in ("0", "1") for xs in op[1] for x in xs if not isinstance(x, int)):
            return None
        steps.append(op)
        b = var.pop()
        if sum(isinstance(x, int) for xs in op[1] for x in xs) != 1:
            return None  # the one bit read twice (``q & q``, ``q == q``): reconvergence
    return None


# Flops that take their D on their clock edge (with or without an enable and a reset): when D is a
# flop bit, they copy it, and a copy of a source bit is that bit (_copy_root).
_COPY_FLOPS = {"$dff", "$dffe", "$adff", "$adffe", "$sdff", "$sdffe", "$sdffce"}


def _cone_table(a: Analysis, x) -> tuple[list, int, dict, int] | None:
    """Bit ``x``'s small combinational cone as a truth table: (leaf bits, table, leaf -> its
    variable's mask, all rows' mask); None for a cone too large or with an X (_BitHash._program)."""
    prog = _BitHash(a, {}, {})._program(x)
    if prog is None:
        return None
    leaf_bits, steps = prog
    n = len(leaf_bits)
    full = (1 << (1 << n)) - 1
    val: dict = {}
    for j, leaf in enumerate(leaf_bits):
        period = 1 << j
        block = ((1 << period) - 1) << period
        val[leaf] = sum(block << k for k in range(0, 1 << n, 2 * period)) & full
    for y, kind, ins in steps:
        val[y] = _BitHash._eval(kind, [[val[z] if isinstance(z, int) else (full if z == "1" else 0)
                                        for z in zs] for zs in ins], full)
    return leaf_bits, val[x], {leaf: val[leaf] for leaf in leaf_bits}, full


def _settled_flops(a: Analysis) -> dict[int, int]:
    """Flop output bits that hold one constant from their first clock edge out of reset on: a flop
    with no enable whose D is a constant, or a function of such flops that is constant (a fixpoint:
    an 'up' flag and a chain of them). A copy gated by one (``p_q & up_q``) is a copy after start-up."""
    net = a.net
    settled: dict[int, int] = {}
    changed = True
    while changed:
        changed = False
        for cell in a.cell_dom:
            if net.type(cell) not in ("$dff", "$adff", "$sdff"):
                continue
            for qb, db in zip(net.conn(cell, "Q"), net.conn(cell, "D"), strict=False):
                if not isinstance(qb, int) or qb in settled:
                    continue
                v = None
                if db in ("0", "1"):
                    v = int(db)
                elif isinstance(db, int) and db in settled:
                    v = settled[db]
                elif isinstance(db, int) and net.driver.get(db, ("<port>",))[0] not in a.cell_dom:
                    t = _cone_table(a, db)
                    if t is not None and all(leaf in settled for leaf in t[0]):
                        rows = _rows(t, settled)
                        v = 1 if t[1] & rows == rows else 0 if t[1] & rows == 0 else None
                if v is not None:
                    settled[qb] = v
                    changed = True
    return settled


def _rows(t: tuple[list, int, dict, int], settled: dict[int, int]) -> int:
    """The rows of table ``t`` where every settled leaf holds its settled value."""
    rows = t[3]
    for leaf in t[0]:
        if leaf in settled:
            rows &= t[2][leaf] if settled[leaf] else ~t[2][leaf]
    return rows


def _copy_of(a: Analysis, x, settled: dict[int, int] | None = None) -> int | None:
    """The flop output bit that bit ``x`` always equals or always inverts: ``x`` itself when a flop
    drives it, else the one flop bit its small combinational cone computes, as itself or inverted,
    once the flops in ``settled`` hold their settled values (_settled_flops) -- a wire of cells,
    an inverter, a multiplexer whose select no longer matters, an AND with an 'up' flag. None
    otherwise."""
    net = a.net
    if not isinstance(x, int):
        return None
    d = net.driver.get(x)
    if d is None or d[0] == "<port>":
        return None
    if d[0] in a.cell_dom:
        return x if net.type(d[0]) in FLOPS else None
    t = _cone_table(a, x)
    if t is None:
        return None
    settled = settled or {}
    rows = _rows(t, settled)
    if rows == 0:
        return None
    tt = t[1] & rows
    for leaf in t[0]:
        if leaf in settled:
            continue
        var = t[2][leaf] & rows
        if tt in (var, ~var & rows):
            ld = net.driver.get(leaf)
            return leaf if ld is not None and ld[0] in a.cell_dom and net.type(ld[0]) in FLOPS else None
    return None


def _copy_root(a: Analysis, b: int, settled: dict[int, int] | None = None) -> int:
    """The source flop bit that flop output ``b`` is a copy or a delay of (``b`` itself when it is
    none): back through flops of ``b``'s domain -- any edge, any reset, with or without an enable
    (a copy taken when enabled is still that bit's information) -- whose D bit is another flop's
    output or its inverse (``_copy_of``). Copies of one bit carry one bit's information, whenever
    each changes: the industrial reconvergence rule counts them as one crossing (CDC-REDUNDANT).
    A loop of copies (a twisted ring, free-running or enabled) has no root outside it: each of its
    bits is its own."""
    net = a.net
    drv = net.driver.get(b)
    dom = a.cell_dom.get(drv[0]) if drv is not None else None
    seen = {b}
    root = b
    while True:
        drv = net.driver.get(root)
        if drv is None or drv[0] == "<port>" or net.type(drv[0]) not in _COPY_FLOPS:
            return root
        d = net.conn(drv[0], "D")
        q = _copy_of(a, d[drv[2]], settled) if drv[2] < len(d) else None
        qd = net.driver.get(q) if q is not None else None
        if qd is None or a.cell_dom.get(qd[0]) != dom:
            return root
        if q in seen:
            return b
        seen.add(q)
        root = q


def wired_sync_inputs(netlist: dict, top: str) -> dict[str, dict[int, tuple[str, int]]]:
    """The level synchronizer input bits that are a wire of a flop in cells (``_wire_of``):
    primitive cell -> {d_i bit: (flop cell, bit of its Q)}. Synthesis connects these d_i bits to
    the flop itself in the netlist the simulators build (``synth.direct_sync_inputs``), so what
    they run is what the rules accepted -- the flop -- and not a cell that a simulator may
    evaluate at time 0 (Icarus did: an X on d_i before the resets were asserted)."""
    net = Netlist.of(netlist, top)
    a = Analysis(net, {}, {})
    out: dict[str, dict[int, tuple[str, int]]] = {}
    for cell in sorted(net.cells):
        if net.type(cell) not in SYNCS:
            continue
        for i, b in enumerate(net.conn(cell, "d_i")):
            drv = net.driver.get(b) if isinstance(b, int) else None
            if drv is None or drv[0] == "<port>" or drv[0] in a.cell_dom:
                continue
            q = _wire_of(a, b)
            if q is not None:
                fcell, _port, k = net.driver[q]
                out.setdefault(cell, {})[i] = (fcell, k)
    return out


def _copied_by_flop(a: Analysis, cell: str, dom: str) -> bool:
    net = a.net
    for qb in net.conn(cell, "Q"):
        for user, port, _i in net.users.get(qb, []):
            if port == "D" and a.cell_dom.get(user) == dom:
                return True
    return False


FLOP_INPUTS = ("D", "EN", "ARST", "SRST", "AD", "ALOAD", "SET", "CLR", "ADDR", "DATA")


def check(netlist: dict, top: str, clocks: dict[str, str], resets: dict[str, str], ports: Ports | None,
          storage: bool) -> tuple[list[dict], dict]:
    """Findings of the clock-domain rules on ``netlist`` and a summary of what was analysed."""
    net = Netlist.of(netlist, top)
    a = Analysis(net, clocks, resets)
    input_tags = {p: frozenset({("d", d)}) for p, d in (ports.inputs if ports else {}).items()}
    a.tags = a.cones(input_tags)
    out = _multi_driver_findings(net) + _loop_findings(net) + _clock_findings(a, clocks, resets)
    prims = {c: net.type(c) for c in net.cells if net.type(c) in PRIM_OUT}
    # Level synchronizers: their inputs are source flops (collected first: CDC-BYPASS needs them).
    sync_srcs: set = set()
    same: list[tuple[str, dict]] = []  # CDC-SAME-DOMAIN, unless the primitive is a rewired one
    rewired: set[str] = set()  # primitives whose output is used in another domain than its clock's
    by_dest: dict[str, dict] = defaultdict(dict)
    crossings = []
    for cell, t in sorted(prims.items()):
        file, line = net.where(cell)
        doms = []
        for clk_port, rst_port in PRIM_CLOCKS[t]:
            cb = net.conn(cell, clk_port)
            dom = a.clock_of.get(cb[0]) if len(cb) == 1 else None
            doms.append(dom)
            if dom is None:
                src = _through_inverters(net, cb[0]) if len(cb) == 1 else None
                what = (f"'{net.name(src)}' inverted (a primitive runs on its clock's rising edge)"
                        if src is not None and src != cb[0] and src in a.clock_of
                        else f"'{net.name(cb[0]) if cb else '?'}', which is not a task clock")
                out.append(finding("CDC-REWIRE", f"{REWIRED}: {t} '{cell}' has {clk_port} on {what}; connect "
                                   "the clock port of the domain it serves", file=file, line=line))
                continue
            if rst_port:
                rb = net.conn(cell, rst_port)
                want = next((p for p, d in resets.items() if d == dom), None) or "its cdc_sync_reset's rst_no"
                if len(rb) == 1 and _sync_reset_out(a, rb[0]) and _sync_reset_dom(a, rb[0]) is None:
                    pass  # a cdc_sync_reset on a clock that is not a task clock: its own finding is the cause
                elif len(rb) != 1 or (a.reset_of.get(rb[0]) != dom and _sync_reset_dom(a, rb[0]) != dom):
                    out.append(finding("CDC-REWIRE", f"{REWIRED}: {t} '{cell}' has {rst_port} on "
                                       f"'{net.name(rb[0]) if rb else '?'}', not the reset of its clock's "
                                       f"domain {dom} ({want}); connect {want} directly",
                                       file=file, line=line))
        if (t in SYNCS or t == HOLD) and doms[0]:
            dst = doms[0]
            bits = net.conn(cell, "d_i")
            for i, b in enumerate(bits):
                if not isinstance(b, int):
                    continue
                drv = net.driver.get(b)
                if drv is not None and drv[0] != "<port>" and drv[0] not in a.cell_dom:
                    # A wire of a flop in cells (``q ? 1'b1 : 1'b0``) is that flop.
                    q = _wire_of(a, b)
                    if q is not None:
                        b, drv = q, net.driver.get(q)
                # A source register: a flop of a domain, or a cdc_sync_reset's rst_no (the Q of its
                # second flop, clocked by its clk_i: released on that clock, asserted with its reset
                # like any asynchronously reset flop).
                sdom = (a.cell_dom[drv[0]] if drv is not None and drv[0] in a.cell_dom
                        and net.type(drv[0]) in FLOPS else _sync_reset_dom(a, b))
                if sdom is not None:
                    if sdom == dst:
                        msg = (f"{t} '{cell}' synchronizes '{net.name(b)}', a register of its own "
                               f"destination domain {dst}: nothing crosses; remove the synchronizer")
                        same.append((cell, finding("CDC-SAME-DOMAIN", msg, file=file, line=line)))
                        continue
                    sync_srcs.add(b)
                    if t != HOLD:  # a word bit is no synchronized copy: CDC-REDUNDANT counts synchronizers
                        by_dest[dst].setdefault(b, []).append((cell, i))
                    crossings.append({"primitive": cell, "type": t, "from": sdom, "to": dst,
                                      "bit": net.name(b)})
                else:
                    prim = drv is not None and drv[0] != "<port>" and net.type(drv[0]) in PRIM_OUT
                    what = ("a top-level input" if drv and drv[0] == "<port>" else
                            f"the output of {net.type(drv[0])} '{drv[0]}'" if prim
                            else "combinational logic" if drv else "undriven")
                    out.append(finding("CDC-SRCLOGIC", f"{t} '{cell}' input d_i[{i}] ('{net.name(b)}') is "
                                       f"{what}, not a register of the source domain; register it in the "
                                       "source domain and connect the register directly",
                                       file=file, line=line))
        elif t == "cdc_sync_pulse" and doms[0] and doms[1]:
            if doms[0] == doms[1]:
                out.append(finding("CDC-SAME-DOMAIN", f"cdc_sync_pulse '{cell}' has both clocks in domain "
                                   f"{doms[0]}: nothing crosses; remove it", file=file, line=line))
            else:
                key = tuple(net.conn(cell, "pulse_i"))
                for i, b in enumerate(key):
                    if isinstance(b, int):
                        by_dest[doms[1]].setdefault(b, []).append((cell, i))
                crossings.append({"primitive": cell, "type": t, "from": doms[0], "to": doms[1],
                                  "bit": net.name(key[0]) if key else "?"})
                for b in key:
                    for tag in a.tags.get(b, ()):
                        if tag[0] == "d" and tag[1] != doms[0]:
                            out.append(finding("CDC-REWIRE", f"{REWIRED}: cdc_sync_pulse '{cell}' is clocked "
                                               f"from domain {doms[0]} but its pulse_i comes from domain "
                                               f"{tag[1]}; swap its clocks and resets", file=file, line=line))
                            break
        elif t == "cdc_ram":
            if not storage:
                out.append(finding("CDC-MEM", f"cdc_ram '{cell}': this task provides no storage primitive; a "
                                   "cdc_ram here is a crossing without a synchronizer -- cross through "
                                   "cdc_sync_bit / cdc_sync_bus / cdc_sync_pulse", file=file, line=line))
            elif doms[0] and doms[1] and doms[0] == doms[1]:
                out.append(finding("CDC-SAME-DOMAIN", f"cdc_ram '{cell}' is written and read in domain "
                                   f"{doms[0]}: nothing crosses; use a memory of that domain",
                                   file=file, line=line))
            else:
                crossings.append({"primitive": cell, "type": t, "from": doms[0], "to": doms[1],
                                  "bit": "storage"})
            for ports_, dom in ((("we_i", "waddr_i", "wdata_i"), doms[0]), (("raddr_i",), doms[1])):
                for p in ports_:
                    out.extend(_cone_violation(a, net.conn(cell, p), dom, f"cdc_ram '{cell}' {p}", cell,
                                               sync_srcs))
    out.extend(_reset_findings(a, resets))
    # Redundancy: one source bit (or one pulse input) into one domain through two primitives, bits
    # of equivalent registers counting as one, and so do copies of one bit (any edge, any delay):
    # decided by source, the bit each input is a copy of (_copy_root).
    settled = _settled_flops(a) if by_dest else {}
    roots = {b: _copy_root(a, b, settled) for srcs in by_dest.values() for b in srcs if isinstance(b, int)}
    classes = flop_classes(a, [b for srcs in by_dest.values() for b in srcs] + list(roots.values()))
    for dst, srcs in by_dest.items():
        merged: dict = {}
        for src, uses in srcs.items():
            r = roots.get(src, src)
            key = ("cls", classes[r]) if r in classes else r
            rep, acc, copies = merged.setdefault(key, (r, [], set()))
            acc.extend(uses)
            if src != r:
                copies.add(src)
        for src, uses, copies in merged.values():
            if len(uses) > 1:
                cells = sorted({c for c, _ in uses})
                file, line = net.where(cells[-1])
                what = f"bit '{net.name(src)}'"
                if copies:
                    what += f" (with its copies {', '.join(sorted(repr(net.name(c)) for c in copies))})"
                out.append(finding("CDC-REDUNDANT", f"the same {what} crosses into domain {dst} through "
                                   f"{len(uses)} synchronizer bits ({', '.join(cells)}); their late choices "
                                   "are independent, so the copies can disagree -- synchronize each source "
                                   "bit once and fan out after the synchronizer", file=file, line=line))
    # Sinks: flops and clocked memory ports, top outputs.
    for cell, dom in a.cell_dom.items():
        if dom is None:
            continue
        for p in FLOP_INPUTS:
            bits = net.conn(cell, p)
            if p in ASYNC_PORTS.get(net.type(cell), ()):
                # A released reset's timing is the late-release model's (in simulation), not a
                # crossing: an asynchronous reset input or a cdc_sync_reset output is let through
                # here; a declared domain's reset input still counts as that domain's.
                bits = [b for b in bits if not _model_reset(a, _through_inverters(net, b))]
            out.extend(_cone_violation(a, bits, dom, f"'{_flop_name(net, cell)}'", cell, sync_srcs, rewired))
    outputs = ports.outputs if ports else {}
    for pname, p in net.module.get("ports", {}).items():
        if p.get("direction") != "output":
            continue
        dom = outputs.get(pname)
        if dom is None:  # an output the task's design does not tie to a domain: any one domain
            doms = {t[1] for b in p["bits"] for t in a.tags.get(b, ()) if t[0] == "d"}
            dom = sorted(doms)[0] if len(doms) == 1 else (None if not doms else "?")
            if dom == "?":
                out.append(finding("CDC-RAW", f"output '{pname}' combines domains {', '.join(sorted(doms))}; "
                                   "an output belongs to one domain", file=None))
                continue
        out.extend(_cone_violation(a, p["bits"], dom, f"output '{pname}'", None, sync_srcs, rewired))
    # A synchronizer fed from its own clock's domain whose output is used in the other domain is
    # clocked by the wrong side: that is the rewiring (CDC-REWIRE above), not a same-domain copy.
    out.extend(f for cell, f in same if cell not in rewired)
    out.extend(_ram_data(a, storage, ports))
    out.extend(_hold_findings(a, ports.hold if ports else True))
    return dedupe(out), summary(a, prims, crossings)


def _sync_reset_dom(a: Analysis, b) -> str | None:
    """The domain of a cdc_sync_reset whose rst_no drives ``b`` (None: not such an output)."""
    drv = a.net.driver.get(b) if isinstance(b, int) else None
    if drv is None or drv[0] == "<port>" or a.net.type(drv[0]) != "cdc_sync_reset":
        return None
    return a.prim_dest(drv[0])


def _sync_reset_out(a: Analysis, b) -> bool:
    """``b`` is the rst_no of a cdc_sync_reset, whatever its clock (a cdc_sync_reset on a clock
    that is not a task clock is CDC-REWIRE's finding; its readers are not a second cause)."""
    drv = a.net.driver.get(b) if isinstance(b, int) else None
    return drv is not None and drv[0] != "<port>" and a.net.type(drv[0]) == "cdc_sync_reset"


def _is_reset(a: Analysis, b) -> bool:
    """``b`` is a reset input of the top or a cdc_sync_reset's output."""
    return b in a.reset_of or _sync_reset_out(a, b)


def _model_reset(a: Analysis, b) -> bool:
    """``b`` is an asynchronous reset input (task.toml async_resets) or a cdc_sync_reset's output."""
    return a.reset_of.get(b) == ASYNC or _sync_reset_dom(a, b) is not None


def _through_inverters(net: Netlist, b):
    """``b`` traced back through inverters ($not, $logic_not of one bit): the bit they invert."""
    for _ in range(64):
        drv = net.driver.get(b) if isinstance(b, int) else None
        if drv is None or drv[0] == "<port>" or net.type(drv[0]) not in INVERTERS:
            return b
        a_in = net.conn(drv[0], "A")
        if len(a_in) != 1:
            return b
        b = a_in[0]
    return b


def _reset_findings(a: Analysis, resets: dict[str, str]) -> list[dict]:
    """CDC-RESET: every asynchronous control of a flop (reset, set, load) is a reset -- a reset input
    of the top or a cdc_sync_reset's rst_no, through inverters at most -- never data, a flop or other
    logic; a cdc_sync_reset's rst_ni is a reset input of the top (any domain, or an asynchronous
    one) or another cdc_sync_reset's rst_no, connected directly.

    Which reset a flop uses is timing, not structure: a reset released on another clock's timing
    (an asynchronous reset input used raw, a cdc_sync_reset of the other clock) passes here and
    meets the late-release model in simulation, as a binary count through cdc_sync_bus meets late
    settling. A declared domain's reset input used in the other domain stays a crossing (CDC-RAW,
    the cone check in ``check``)."""
    net = a.net
    out = []
    own = {d: p for p, d in resets.items() if d != ASYNC}
    for cell, c in net.cells.items():
        t = c["type"]
        if t == "cdc_sync_reset":
            file, line = net.where(cell)
            rb = net.conn(cell, "rst_ni")
            src = _through_inverters(net, rb[0]) if len(rb) == 1 else None
            drv = net.driver.get(src) if isinstance(src, int) else None
            if not (len(rb) == 1 and src == rb[0] and _is_reset(a, src)):
                what = f"'{net.name(rb[0])}'" if rb else "nothing"
                kind = ("a reset input through logic" if src in a.reset_of else
                        "a constant" if drv is None else "not a reset input")
                out.append(finding("CDC-RESET", f"cdc_sync_reset '{cell}' has rst_ni on {what} ({kind}); "
                                   "connect a reset input of the top (or another cdc_sync_reset's rst_no) "
                                   "directly", file=file, line=line))
            continue
        dom = a.cell_dom.get(cell)
        if t not in ASYNC_PORTS or dom is None:
            continue
        for port in ASYNC_PORTS[t]:
            for b in net.conn(cell, port):
                if not isinstance(b, int):
                    continue  # a constant: no asynchronous control at all
                if _is_reset(a, _through_inverters(net, b)):
                    continue
                file, line = net.where(cell, b)
                want = f"'{own[dom]}'" if dom in own else "a cdc_sync_reset clocked by it"
                how = "reset" if port in ("ARST", "CLR") else "set" if port == "SET" else "loaded"
                out.append(finding("CDC-RESET", f"'{_flop_name(net, cell)}' (domain {dom}) is {how} "
                                   f"asynchronously ({port}) by '{net.name(b)}', which is not a reset input "
                                   "nor a cdc_sync_reset output: an asynchronous control acts at once, so "
                                   f"data or logic there is a crossing or a glitch; reset it from {want} and "
                                   "move the rest into the clocked logic", file=file, line=line))
                break
    return out


def _flop_name(net: Netlist, cell: str) -> str:
    q = net.conn(cell, "Q") or net.conn(cell, "DATA")
    return net.name(q[0]).split("[")[0] if q else cell


def _ram_data(a: Analysis, storage: bool, ports: Ports | None) -> list[dict]:
    """CDC-MEM: cdc_ram read data followed forward may reach only data paths and data outputs."""
    net = a.net
    data_outputs = ports.data_outputs if ports else frozenset()
    out_bits = {}
    for pname, p in net.module.get("ports", {}).items():
        if p.get("direction") == "output":
            for b in p["bits"]:
                out_bits[b] = pname
    findings = []
    readers: dict[str, list] = defaultdict(list)  # memory id -> the data bits of its read ports
    for cell, c in net.cells.items():
        if c["type"] in MEM_READS:
            readers[_memid(net, cell)].extend(net.conn(cell, "DATA"))
    for cell, c in net.cells.items():
        if c["type"] != "cdc_ram":
            continue
        seen: set = set()
        work = [b for b in net.conn(cell, "rdata_o") if isinstance(b, int)]
        bad: dict = {}
        while work:
            b = work.pop()
            if b in seen:
                continue
            seen.add(b)
            if b in out_bits and out_bits[b] not in data_outputs:
                bad.setdefault(("out", out_bits[b]), b)
            for user, port, i in net.users.get(b, []):
                t = net.type(user)
                if t in MEM_WRITES and port == "DATA":
                    # Kept in a memory of the design as data: it goes on at every read port of that
                    # memory (its address and enable stay control, as for a flop's EN).
                    work.extend(rb for rb in readers.get(_memid(net, user), ()) if isinstance(rb, int))
                elif port in DATA_PORTS.get(t, ()):
                    if t in FLOPS:
                        q = net.conn(user, "Q")
                        if i < len(q):
                            work.append(q[i])
                    else:
                        work.extend(ob for ob, ibs in a.deps(user).items() if b in ibs)
                else:
                    bad.setdefault((user, port), b)
        for (user, port), b in bad.items():
            if user == "out":
                what = f"the status output '{port}'"
                file, line = net.where(cell)
            else:
                t = net.type(user)
                what = (f"the {port} input of {t} '{user}'" if t in PRIM_OUT else
                        "the select of a multiplexer" if port == "S" else
                        f"the {port} input of a register" if t in FLOPS else
                        f"logic ({t[1:]})")
                file, line = net.where(user, b)
            findings.append(finding("CDC-MEM", f"cdc_ram '{cell}' read data ('{net.name(b)}') reaches "
                                               f"{what}: "
                                    "storage carries data only -- never an address, enable, select, state, "
                                    "comparison or status output; cross pointers through synchronizers",
                                    file=file, line=line))
    return findings


# Cells a qualified word passes on its way to the register that loads it: a multiplexer's data
# inputs (the select is then a load condition) and buffers / inverters (bit for bit).
HOLD_PATH: dict[str, frozenset[str]] = {
    "$mux": frozenset({"A", "B"}), "$pmux": frozenset({"A", "B"}), "$bwmux": frozenset({"A", "B"}),
    "$pos": frozenset({"A"}), "$buf": frozenset({"A"}), "$not": frozenset({"A"}),
}


class _Qualified:
    """Which bits of domain ``dom`` are qualifiers: combinational functions of synchronizer
    outputs into ``dom`` (cdc_sync_bit / cdc_sync_bus / cdc_sync_pulse), of constants and of
    ``dom``'s registers whose D and enable are such functions themselves (a delayed or
    edge-detected qualifier), with at least one synchronizer output among them. Nothing else: no
    port, no register of another domain, no register fed by anything but qualifiers, and no loop
    through registers (a counter or toggle is state of its own, not a function of the qualifier:
    a free-running count that mentions the qualifier could load at any time)."""

    def __init__(self, a: Analysis, dom: str):
        self.a, self.dom = a, dom
        self.memo: dict[int, tuple[bool, bool]] = {}  # bit -> (only qualifier roots, reaches a sync)
        self.open: set[int] = set()

    def __call__(self, bits) -> bool:
        ok, sync = True, False
        for b in bits:
            o, s = self._bit(b)
            ok, sync = ok and o, sync or s
        return ok and sync

    def _bit(self, b) -> tuple[bool, bool]:
        if not isinstance(b, int):
            return True, False  # a constant
        if b in self.memo:
            return self.memo[b]
        if b in self.open:
            return False, False  # a loop through registers: state, not a qualifier
        self.open.add(b)
        net, a = self.a.net, self.a
        drv = net.driver.get(b)
        res: tuple[bool, bool]
        if drv is None or drv[0] == "<port>":
            res = (False, False)
        else:
            cell, t = drv[0], net.type(drv[0])
            if t in PRIM_OUT:
                res = (t in QUALIFIERS and a.prim_dest(cell) == self.dom, t in QUALIFIERS)
            elif cell in a.cell_dom:
                if t not in FLOPS or a.cell_dom[cell] != self.dom:
                    res = (False, False)
                else:  # bit i of a register: its own D bit and the enable
                    d = net.conn(cell, "D")
                    ok, sync = self._all([*d[drv[2]:drv[2] + 1], *net.conn(cell, "EN")])
                    res = (ok and sync, sync)
            else:
                res = self._all(a.deps(cell).get(b, []))
        self.open.discard(b)
        self.memo[b] = res
        return res

    def _all(self, bits) -> tuple[bool, bool]:
        ok, sync = True, False
        for x in bits:
            if isinstance(x, tuple):  # a memory's contents
                return False, sync
            o, s = self._bit(x)
            ok, sync = ok and o, sync or s
        return ok, sync


def _hold_findings(a: Analysis, provided: bool = True) -> list[dict]:
    """CDC-QUAL: cdc_hold_bus only in a task whose own design uses it (``provided``, as cdc_ram
    only where the task provides storage); its q_o, followed forward through HOLD_PATH cells,
    reaches only the D of registers of the primitive's destination domain that load it under a
    qualifier (_Qualified): the register's enable (EN) is a qualifier, or a multiplexer on the way
    has a qualifier select."""
    net = a.net
    out_bits = {b for p in net.module.get("ports", {}).values() if p.get("direction") == "output"
                for b in p["bits"]}
    findings = []
    quals: dict[str, _Qualified] = {}
    for cell, c in net.cells.items():
        if c["type"] != HOLD:
            continue
        if not provided:
            file, line = net.where(cell)
            findings.append(finding("CDC-QUAL", f"cdc_hold_bus '{cell}': this task provides no "
                                    "qualified-word primitive (its report lists the primitives it provides); "
                                    "cross through "
                                    "cdc_sync_bit / cdc_sync_bus / cdc_sync_pulse", file=file, line=line))
            continue
        dst = a.prim_dest(cell)
        if dst is None:
            continue  # its clock is not a task clock: CDC-REWIRE says so
        q = quals.setdefault(dst, _Qualified(a, dst))
        seen: set = set()
        work = [(b, False) for b in net.conn(cell, "q_o") if isinstance(b, int)]
        bad: dict = {}
        while work:
            b, gated = work.pop()
            if (b, gated) in seen:
                continue
            seen.add((b, gated))
            if b in out_bits:
                bad.setdefault(("out", "output"), b)
            for user, port, _i in net.users.get(b, []):
                t = net.type(user)
                if t in FLOPS and port == "D":
                    if a.cell_dom.get(user) != dst:
                        bad.setdefault((user, "domain"), b)
                    elif not (gated or q(net.conn(user, "EN"))):
                        bad.setdefault((user, "enable"), b)
                elif port in HOLD_PATH.get(t, ()):
                    sel = net.conn(user, "S")
                    now = gated or (t in ("$mux", "$pmux", "$bwmux") and q(sel))
                    work.extend((ob, now) for ob, ibs in a.deps(user).items() if b in ibs)
                else:
                    bad.setdefault((user, port), b)
        for (user, why), b in bad.items():
            if user == "out":
                what = "an output of the top directly"
                file, line = net.where(cell)
            elif why == "domain":
                what = f"register '{_flop_name(net, user)}' of domain {a.cell_dom.get(user)}, not {dst}"
                file, line = net.where(user, b)
            elif why == "enable":
                what = (f"register '{_flop_name(net, user)}', which loads it without a synchronized "
                        "qualifier (its enable, or the select of a multiplexer on its D path, is not made "
                        f"only of synchronizer outputs into domain {dst} and registers fed by them)")
                file, line = net.where(user, b)
            else:
                t = net.type(user)
                what = (f"the {why} input of {t} '{user}'" if t in PRIM_OUT else
                        "the select of a multiplexer" if why == "S" else
                        f"the {why} input of a register" if t in FLOPS else f"logic ({t[1:]})")
                file, line = net.where(user, b)
            findings.append(finding("CDC-QUAL", f"cdc_hold_bus '{cell}' word ('{net.name(b)}') reaches "
                                    f"{what}: a qualified word may only be loaded, as it is, into registers "
                                    "of its destination domain under a synchronized qualifier",
                                    file=file, line=line))
    return findings


def _memid(net: Netlist, cell: str) -> str:
    return str(net.cells[cell].get("parameters", {}).get("MEMID", cell))


def summary(a: Analysis, prims: dict, crossings: list) -> dict:
    """What was analysed (and will be simulated): flops per domain, primitives, crossings."""
    net = a.net
    flops: dict[str, int] = defaultdict(int)
    for cell, dom in a.cell_dom.items():
        if net.type(cell) in FLOPS:
            w = _int(net.cells[cell].get("parameters", {}).get("WIDTH", "1"))
            flops[dom or "unclocked"] += w
    return {
        "cells": len(net.cells),
        "flops": sum(flops.values()),
        "flops_per_domain": dict(sorted(flops.items())),
        "primitives": [{"name": c, "type": t,
                        **{k: _int(v) for k, v in net.cells[c].get("parameters", {}).items()}}
                       for c, t in sorted(prims.items())],
        "crossings": _grouped(crossings),
    }


def _grouped(crossings: list) -> list:
    """One entry per primitive, with the source bits it carries."""
    out: dict = {}
    for c in crossings:
        e = out.setdefault(c["primitive"], {k: c[k] for k in ("primitive", "type", "from", "to")})
        e.setdefault("bits", [])
        e["bits"].append(c["bit"])
    return list(out.values())


def learn(netlist: dict, top: str, clocks: dict[str, str], resets: dict[str, str]) -> Ports:
    """The top's port domains and cdc_ram data outputs, from the task's own design."""
    net = Netlist.of(netlist, top)
    a = Analysis(net, clocks, resets)
    ports = net.module.get("ports", {})
    data_in = [p for p, v in ports.items()
               if v.get("direction") == "input" and p not in clocks and p not in resets]
    a.tags = a.cones({p: frozenset({("in", p)}) for p in data_in})
    seen: dict[str, set] = defaultdict(set)
    for cell, dom in a.cell_dom.items():
        if dom is None:
            continue
        for p in FLOP_INPUTS:
            for b in net.conn(cell, p):
                for t in a.tags.get(b, ()):
                    if t[0] == "in":
                        seen[t[1]].add(dom)
    for cell, c in net.cells.items():
        t = c["type"]
        if t in PRIM_CLOCKS:
            for (clk_port, _r), data in zip(PRIM_CLOCKS[t], _prim_inputs(t), strict=False):
                cb = net.conn(cell, clk_port)
                dom = a.clock_of.get(cb[0]) if len(cb) == 1 else None
                for p in data:
                    for b in net.conn(cell, p):
                        for tag in a.tags.get(b, ()):
                            if tag[0] == "in" and dom:
                                seen[tag[1]].add(dom)
    inputs = {p: next(iter(d)) for p, d in seen.items() if len(d) == 1}
    outputs = {}
    for pname, p in ports.items():
        if p.get("direction") != "output":
            continue
        doms = set()
        for b in p["bits"]:
            for t in a.tags.get(b, ()):
                if t[0] == "d":
                    doms.add(t[1])
                elif t[0] == "in" and t[1] in inputs:
                    doms.add(inputs[t[1]])
        if len(doms) == 1:
            outputs[pname] = next(iter(doms))
    storage = any(c["type"] == "cdc_ram" for c in net.cells.values())
    hold = any(c["type"] == HOLD for c in net.cells.values())
    data_outputs = set()
    if storage:
        dummy = Ports(inputs, outputs, frozenset(), True)
        for f in _ram_data(a, True, dummy):
            msg = f["message"]
            if "status output '" in msg:
                data_outputs.add(msg.split("status output '")[1].split("'")[0])
    return Ports(inputs, outputs, frozenset(data_outputs), storage, hold)


def _prim_inputs(t: str) -> tuple[tuple[str, ...], ...]:
    return {"cdc_sync_bus": (("d_i",),), "cdc_sync_bit": (("d_i",),),
            "cdc_sync_pulse": (("pulse_i",), ()), "cdc_sync_reset": ((),),
            "cdc_ram": (("we_i", "waddr_i", "wdata_i"), ("raddr_i",)),
            HOLD: ((),)}[t]  # d_i is the other domain's: it tells nothing about an input's domain


def dedupe(fs: list[dict]) -> list[dict]:
    """``fs`` without repeated findings (same rule, place and message), in order."""
    seen: set = set()
    out = []
    for f in fs:
        key = (f["rule"], f["file"], f["line"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def summary_of(netlist: dict, top: str, clocks: dict[str, str], resets: dict[str, str]) -> dict:
    """The summary alone (no rules): for a grade with the gate switched off."""
    net = Netlist.of(netlist, top)
    a = Analysis(net, clocks, resets)
    return summary(a, {c: net.type(c) for c in net.cells if net.type(c) in PRIM_OUT}, [])
