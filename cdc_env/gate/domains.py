"""Clock-domain structure rules on the netlist of an elaborated design.

Every flop gets the domain of the task clock that drives it (traced through wires and helper
module ports to the top's clock ports). Every signal gets its *origins*: the flops, top inputs,
resets and primitive outputs its value comes from through combinational logic. Then:

  * a flop (data, enable or reset), a top output or a pulse synchronizer's input whose origins
    include another domain is a crossing without a primitive: CDC-RAW, or a more specific class
    when the path says more -- CDC-MEM (the origin is a memory not declared for crossing),
    CDC-BYPASS (the origin also crosses through a primitive into the same domain, or a
    primitive's output reaches a domain besides its own), CDC-HANDSYNC (a flop copies the foreign
    flop and another flop copies it: a hand-written synchronizer), CDC-REWIRE (the origin is a
    primitive whose clock is not the consumer's);
  * a level/bus primitive's d_i must be a plain selection of registers of one domain
    (CDC-SRCLOGIC); its clk_i/rst_ni (and a pulse primitive's four clock/reset ports) must be a
    task clock and that domain's reset (CDC-REWIRE, "synchronizer clock/reset rewired");
  * a flop block must be clocked by exactly one task clock, and a clock is never data (CDC-CLOCK).

The domains of the top's other inputs and outputs are not in the manifest; they are learned from
the task's own design (``learn_ports``), which is trusted, and the submission is held to them.
What this cannot see is listed per rule in docs/gate.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .netlist import Netlist, PrimInst, Write
from .rules import WARNING, finding

REWIRED = "synchronizer clock/reset rewired"
PRIM_PORT_NAMES = {"we": "we_i", "waddr": "waddr_i", "wdata": "wdata_i", "raddr": "raddr_i"}


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is None or b is None or not (a[1] < b[0] or b[1] < a[0])


@dataclass(frozen=True)
class PortDomains:
    """Domains of the top's data ports, learned from the task's trusted design (None: unknown)."""

    inputs: dict[str, str | None] = field(default_factory=dict)
    outputs: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Origin:
    kind: str  # flop | input | reset | clock | prim
    key: str  # node key, or primitive instance key
    domain: str | None


@dataclass
class _Use:
    origin: Origin
    domain: str  # the consumer's domain
    what: str  # the consumer, for messages
    file: str | None
    line: int | None
    write: Write | None = None
    consumer: str | None = None  # consumer node key (flops)
    via: str | None = None  # the signal the consumer reads that carries the origin


class DomainCheck:
    def __init__(self, net: Netlist, clocks: dict[str, str], resets: dict[str, str],
                 cross_memories: tuple[str, ...], ports: PortDomains | None):
        self.net = net
        self.clocks = {f"{net.top}.{p}": d for p, d in clocks.items()}  # node key -> domain
        self.resets = {f"{net.top}.{p}": d for p, d in resets.items()}
        self.cross = cross_memories
        self.ports = ports
        self.findings: list[dict] = []
        self.flop_domains: dict[str, set[str | None]] = {}
        self.block_domain: dict[int, str | None] = {}
        self.block_clock: dict[int, str | None] = {}
        self.origins: dict[str, frozenset[Origin]] = {}
        self.prim_by_key: dict[str, PrimInst] = {p.key: p for p in net.prims}
        self.prim_dst: dict[str, str | None] = {}
        self.prim_src_nodes: dict[str, set[str]] = {}  # destination domain -> crossing source nodes
        self.uses: list[_Use] = []
        self.input_uses: dict[str, set[str]] = {}
        self.output_domains: dict[str, set[str]] = {}
        self.grouped: dict[tuple, tuple] = {}
        self.order: list[tuple] = []
        self.first_line: dict[tuple, tuple] = {}
        self.stand_ins: set[str] = set()
        self.same_domain: list[tuple[PrimInst, str]] = []

    # ----- helpers -----
    def add(self, rule: str, msg: str, file: str | None, line: int | None) -> None:
        f = finding(rule, msg, file=file, line=line)
        if f not in self.findings:
            self.findings.append(f)

    def add_use(self, rule: str, u: _Use, make) -> None:
        """A finding about a use; uses of one origin into one domain are merged into one message
        reported at the first line."""
        key = (rule, u.origin.key, u.domain, u.via)
        if key not in self.grouped:
            self.grouped[key] = (make, [])
            self.order.append(key)
            self.first_line[key] = (u.file, u.line)
        elif u.line is not None and (self.first_line[key][1] or 1 << 30) > u.line:
            self.first_line[key] = (u.file, u.line)
        whats = self.grouped[key][1]
        if u.what not in whats:
            whats.append(u.what)

    def flush(self) -> None:
        for key in self.order:
            make, whats = self.grouped[key]
            what = whats[0] if len(whats) == 1 else ", ".join(whats[:-1]) + " and " + whats[-1]
            self.add(key[0], make(what), *self.first_line[key])

    def name(self, key: str) -> str:
        return self.net.short(key)

    def alias(self, key: str) -> str:
        """Follow plain wires (one combinational write that is a bare copy) to their source."""
        seen = set()
        while key not in seen:
            seen.add(key)
            node = self.net.nodes.get(key)
            if node is None or len(node.writes) != 1:
                return key
            w = node.writes[0]
            if w.block is not None or w.pure is None or len(w.pure) != 1 or w.deps != w.pure:
                return key
            key = next(iter(w.pure))
        return key

    def registers_behind(self, key: str, depth: int = 0) -> set[str]:
        """What a plain selection reads through wires, selects and concatenations (no logic)."""
        node = self.net.nodes.get(key)
        if node is None or key in self.flop_domains or depth > 64 or len(node.writes) != 1:
            return {key}
        w = node.writes[0]
        if w.block is not None or w.pure is None or w.deps != w.pure:
            return {key}
        return set().union(*(self.registers_behind(n, depth + 1) for n in w.pure)) if w.pure else set()

    def clock_of(self, nodes: frozenset[str]) -> str | None:
        if len(nodes) != 1:
            return None
        return self.clocks.get(self.alias(next(iter(nodes))))

    def reset_of(self, nodes: frozenset[str]) -> str | None:
        if len(nodes) != 1:
            return None
        return self.resets.get(self.alias(next(iter(nodes))))

    # ----- passes -----
    def run(self) -> list[dict]:
        self.check_ports_exist()
        self.assign_clocks()
        self.prim_ports()
        self.check_redundant()
        self.compute_origins()
        self.collect_uses()
        self.classify_all()
        self.check_memories()
        for p, msg in self.same_domain:  # a primitive already reported as rewired is not also this
            if not any(f["rule"] == "CDC-REWIRE" and f["line"] == p.line and p.name in f["message"]
                       for f in self.findings):
                self.add("CDC-SAME-DOMAIN", msg, p.file, p.line)
        return self.findings

    def check_ports_exist(self) -> None:
        for key in (*self.clocks, *self.resets):
            if key not in self.net.nodes:
                self.add("CDC-CLOCK", f"the top module has no port '{self.name(key)}', which the task "
                         "declares as a clock or reset; keep the module's ports as they are", None, None)

    def assign_clocks(self) -> None:
        for i, b in enumerate(self.net.blocks):
            clocked = [(edge, nodes, self.clock_of(nodes)) for edge, nodes in b.events]
            found = [(edge, nodes, d) for edge, nodes, d in clocked if d is not None]
            domain = clock = None
            # Other events of the block (asynchronous resets) are control inputs of every flop in
            # it and are judged like data below.
            if len(found) == 1:
                domain, clock = found[0][2], next(iter(found[0][1]))
            elif not found:
                sig = ", ".join(self.name(n) for _e, ns, _d in clocked for n in ns) or "nothing"
                self.add("CDC-CLOCK", f"the block '{b.text}' is clocked by {sig}, which is not one of the "
                         "task's clocks; clock every flop directly by a clock port of the top module",
                         b.file, b.line)
            else:
                self.add("CDC-CLOCK", f"the block '{b.text}' is triggered by more than one clock; use "
                         "one clock per always block", b.file, b.line)
            self.block_domain[i] = domain
            self.block_clock[i] = clock
        for node in self.net.nodes.values():
            doms = {self.block_domain[w.block] for w in node.writes if w.block is not None}
            if doms:
                self.flop_domains[node.key] = doms
                known = sorted(d for d in doms if d is not None)
                if len(known) > 1:
                    w = next(w for w in node.writes if w.block is not None)
                    self.add("CDC-RAW", f"'{node.name}' is assigned in both domains {' and '.join(known)}; "
                             "give each domain its own register and cross between them through a "
                             "synchronizer primitive", w.file, w.line)

    def prim_ports(self) -> None:
        for p in self.net.prims:
            if p.kind == "cdc_ram":
                self.prim_dst[p.key] = self._ram_clock(p, "clk")
                self._ram_clock(p, "src_clk")
                continue
            dst = self._prim_clock(p, "clk", "rst")
            self.prim_dst[p.key] = dst
            if p.kind == "cdc_sync_pulse":
                src = self._prim_clock(p, "src_clk", "src_rst")
                if src is not None and src == dst:
                    self.same_domain.append((p, f"{p.name} has src_clk_i and dst_clk_i in the same domain "
                                             f"{dst}; a synchronizer within one domain synchronizes "
                                             "nothing -- "
                                             "use a plain register, or clock its source side by the domain "
                                             "the pulse comes from"))
                continue
            nodes, pure, text = p.conns.get("d", (frozenset(), None, ""))
            if pure is None:
                self.add("CDC-SRCLOGIC", f"d_i of {p.name} is driven by logic ('{text}'); a synchronizer's "
                         "input must be a register of the source domain: register the value in the "
                         "source clock domain first and connect that register to d_i", p.file, p.line)
                continue
            regs = set().union(*(self.registers_behind(n) for n in pure)) if pure else set()
            not_regs = sorted(self.name(n) for n in regs if n not in self.flop_domains)
            if not_regs:
                self.add("CDC-SRCLOGIC", f"d_i of {p.name} is '{text}', and {', '.join(not_regs)} is not a "
                         "register; a synchronizer's input must be a register of the source domain: "
                         "register it in the source clock domain first", p.file, p.line)
                continue
            doms = {d for n in regs for d in self.flop_domains.get(n, set())}
            if len(doms) > 1:
                self.add("CDC-SRCLOGIC", f"d_i of {p.name} ('{text}') mixes registers of different domains; "
                         "one synchronizer carries registers of one source domain", p.file, p.line)
            elif dst is not None and doms == {dst}:
                self.same_domain.append((p, f"d_i of {p.name} ('{text}') is a register of domain {dst}, "
                                         "the synchronizer's own destination domain; nothing crosses here -- "
                                         "use the register directly, or synchronize the other domain's "
                                         "register"))
            if dst is not None:
                self.prim_src_nodes.setdefault(dst, set()).update(regs)

    def _ram_clock(self, p: PrimInst, role: str) -> str | None:
        port = {"clk": "rclk_i", "src_clk": "wclk_i"}[role]
        _n, cpure, ctext = p.conns.get(role, (frozenset(), None, "nothing"))
        dom = self.clock_of(cpure) if cpure is not None else None
        if dom is None:
            self.add("CDC-REWIRE", f"{REWIRED}: {port} of {p.name} is driven by '{ctext}', which is not "
                     "one of "
                     "the task's clocks; connect it to the clock port of the domain that "
                     f"{'writes' if role == 'src_clk' else 'reads'} the memory", p.file, p.line)
        return dom

    def check_redundant(self) -> None:
        """CDC-REDUNDANT: primitives carrying overlapping bits of one source signal into one domain.
        Each has its own late choices, so the copies can disagree -- which no real design wants and
        which lets a design read whichever copy happens to be early."""
        seen: dict[tuple[str, str], list[tuple[tuple[int, int] | None, PrimInst]]] = {}
        reported: set[str] = set()
        for p in self.net.prims:
            dst = self.prim_dst.get(p.key)
            if p.kind == "cdc_ram" or dst is None or not p.dparts:
                continue
            for node, bits in p.dparts:
                node = self.alias(node)
                for obits, other in seen.get((dst, node), []):
                    if other is not p and _overlap(bits, obits) and p.key not in reported:
                        reported.add(p.key)
                        self.add("CDC-REDUNDANT", f"{p.name} and {other.name} both synchronize "
                                 f"'{self.name(node)}' into domain {dst}; the copies can disagree for a "
                                 "cycle -- "
                                 "synchronize each source bit once and share the synchronized copy",
                                 p.file, p.line)
                seen.setdefault((dst, node), []).append((bits, p))

    def _prim_clock(self, p: PrimInst, clk_role: str, rst_role: str) -> str | None:
        port = {"clk": "clk_i", "rst": "rst_ni", "src_clk": "src_clk_i", "src_rst": "src_rst_ni"}
        if p.kind == "cdc_sync_pulse":
            port.update(clk="dst_clk_i", rst="dst_rst_ni")
        cnodes, cpure, ctext = p.conns.get(clk_role, (frozenset(), None, "nothing"))
        dom = self.clock_of(cpure) if cpure is not None else None
        if dom is None:
            self.add("CDC-REWIRE", f"{REWIRED}: {port[clk_role]} of {p.name} is driven by '{ctext}', "
                     "which is not one of the task's clocks; connect it to the clock port of the domain that "
                     "uses the synchronizer's output", p.file, p.line)
            return None
        rnodes, rpure, rtext = p.conns.get(rst_role, (frozenset(), None, "nothing"))
        rdom = self.reset_of(rpure) if rpure is not None else None
        if rdom != dom:
            what = ("tied to a constant" if rpure is not None and not rpure else
                    f"'{rtext}', the reset of domain {rdom}" if rdom is not None else
                    f"'{rtext}', not a reset port")
            self.add("CDC-REWIRE", f"{REWIRED}: {port[rst_role]} of {p.name} is {what}; it must be the reset "
                     f"of the domain its clock {ctext} belongs to", p.file, p.line)
        return dom

    def compute_origins(self) -> None:
        nodes = self.net.nodes
        base: dict[str, set[Origin]] = {k: set() for k in nodes}
        for key in nodes:
            if key in self.clocks:
                base[key].add(Origin("clock", key, self.clocks[key]))
            elif key in self.resets:
                base[key].add(Origin("reset", key, self.resets[key]))
            elif self._top_input(key):
                port = self.name(key)
                dom = self.ports.inputs.get(port) if self.ports else None
                base[key].add(Origin("input", key, dom))
            for d in self.flop_domains.get(key, ()):
                base[key].add(Origin("flop", key, d))
        for p in self.net.prims:
            targets = p.conns.get("q", (frozenset(), None, ""))[0]
            for t in targets:
                base[t].add(Origin("prim", p.key, self.prim_dst.get(p.key)))
        comb_deps: dict[str, set[str]] = {k: set() for k in nodes}
        users: dict[str, set[str]] = {k: set() for k in nodes}
        for key, node in nodes.items():
            for w in node.writes:
                if w.block is None:
                    comb_deps[key].update(w.deps)
                    for d in w.deps:
                        users.setdefault(d, set()).add(key)
        cur: dict[str, set[Origin]] = {k: set(v) for k, v in base.items()}
        work = list(nodes)
        pending = set(work)
        while work:
            key = work.pop()
            pending.discard(key)
            new = set(base[key])
            for d in comb_deps[key]:
                new |= cur.get(d, set())
            if new != cur[key]:
                cur[key] = new
                for u in users.get(key, ()):
                    if u not in pending:
                        pending.add(u)
                        work.append(u)
        self.origins = {k: frozenset(v) for k, v in cur.items()}

    def _top_input(self, key: str) -> bool:
        prefix = self.net.top + "."
        if not key.startswith(prefix):
            return False
        port = key[len(prefix):]
        return self.net.ports.get(port) in ("in", "inout")

    def origins_of(self, deps) -> set[Origin]:
        out: set[Origin] = set()
        for d in deps:
            out |= self.origins.get(d, frozenset())
        return out

    def collect_uses(self) -> None:
        for node in self.net.nodes.values():
            for w in node.writes:
                if w.block is None:
                    continue
                dom = self.block_domain.get(w.block)
                if dom is None:
                    continue
                clock = self.block_clock.get(w.block)
                events = {n for _e, nodes in self.net.blocks[w.block].events for n in nodes}
                for d in sorted(w.deps | (events - {clock})):
                    for o in self.origins.get(d, frozenset()):
                        self.uses.append(_Use(o, dom, f"the register '{node.name}'", w.file, w.line, w,
                                              node.key, d))
        for port, direction in self.net.ports.items():
            if direction != "out":
                continue
            key = f"{self.net.top}.{port}"
            origins = self.origins.get(key, frozenset())
            dom = self.ports.outputs.get(port) if self.ports else None
            doms = {o.domain for o in origins if o.domain is not None and o.kind != "clock"}
            self.output_domains[port] = doms
            node = self.net.nodes.get(key)
            file, line = (node.file, node.line) if node else (None, None)
            if node is not None and node.writes:
                file, line = node.writes[0].file, node.writes[0].line
            if dom is None:
                if len(doms) > 1:
                    self.add("CDC-RAW", f"the output '{port}' mixes signals of domains "
                             f"{' and '.join(sorted(doms))}; an output belongs to one domain", file, line)
                continue
            for o in origins:
                self.uses.append(_Use(o, dom, f"the output '{port}' (domain {dom})", file, line))
        for p in self.net.prims:
            if p.kind == "cdc_ram":
                src, dst = self._prim_src_domain(p), self.prim_dst.get(p.key)
                for role, dom in (("we", src), ("waddr", src), ("wdata", src), ("raddr", dst)):
                    nodes, _pure, _text = p.conns.get(role, (frozenset(), None, ""))
                    if dom is None:
                        continue
                    origins = self.origins_of(nodes)
                    if role == "wdata" and dst is not None:
                        self.prim_src_nodes.setdefault(dst, set()).update(
                            o.key for o in origins if o.kind == "flop")
                    for o in origins:
                        self.uses.append(_Use(o, dom, f"{PRIM_PORT_NAMES[role]} of {p.name}", p.file, p.line))
                continue
            if p.kind != "cdc_sync_pulse":
                continue
            src = self._prim_src_domain(p)
            nodes = p.conns.get("d", (frozenset(), None, ""))[0]
            origins = self.origins_of(nodes)
            doms = {o.domain for o in origins if o.domain is not None and o.kind != "clock"}
            if src is not None and len(doms) == 1 and src not in doms:
                self.add("CDC-REWIRE", f"{REWIRED}: pulse_i of {p.name} comes from domain {next(iter(doms))} "
                         f"but src_clk_i is the clock of domain {src}; connect src_clk_i/src_rst_ni to the "
                         "clock and reset of the domain the pulse comes from", p.file, p.line)
                continue
            if src is None:
                continue
            dst = self.prim_dst.get(p.key)
            if dst is not None:
                self.prim_src_nodes.setdefault(dst, set()).update(o.key for o in origins if o.kind != "prim")
            for o in origins:
                self.uses.append(_Use(o, src, f"pulse_i of {p.name}", p.file, p.line))

    def _prim_src_domain(self, p: PrimInst) -> str | None:
        cp = p.conns.get("src_clk", (frozenset(), None, ""))[1]
        return self.clock_of(cp) if cp is not None else None

    def choose_stand_ins(self) -> None:
        """A rewrite may rename the task's declared memory: if a declared name is absent, as many
        other memories may cross in its place (never more than the task declares)."""
        present = {m for m in self.cross if any(self._matches(k, m) for k in self.net.nodes)}
        missing = len(self.cross) - len(present)
        crossing = sorted({u.origin.key for u in self.uses
                           if u.origin.kind == "flop" and u.origin.domain not in (None, u.domain)
                           and self.net.nodes[u.origin.key].memory
                           and not self._declared_memory(u.origin.key)})
        self.stand_ins = set(crossing[:missing]) if missing > 0 else set()
        for key in sorted(self.stand_ins):
            node = self.net.nodes[key]
            self.findings.append(finding(
                "CDC-MEM", f"the memory '{node.name}' crosses domains in place of the task's declared "
                f"{', '.join(sorted(set(self.cross) - present))} (taken as the same storage, renamed)",
                file=node.file, line=node.line, severity=WARNING))

    def classify_all(self) -> None:
        self.choose_stand_ins()
        prim_use_domains: dict[str, set[str]] = {}
        for u in self.uses:
            if u.origin.kind == "prim":
                prim_use_domains.setdefault(u.origin.key, set()).add(u.domain)
        for u in self.uses:
            self.classify(u, prim_use_domains)
        self.flush()
        if self.ports is None:
            return
        for port, doms in self.input_uses.items():
            if len(doms) > 1:
                key = f"{self.net.top}.{port}"
                node = self.net.nodes.get(key)
                self.add("CDC-RAW", f"the input '{port}' is used in domains {' and '.join(sorted(doms))}; "
                         "use it in one domain and cross the value through a synchronizer primitive",
                         node.file if node else None, node.line if node else None)

    def classify(self, u: _Use, prim_use_domains: dict[str, set[str]]) -> None:
        o = u.origin
        if o.kind == "clock":
            self.add_use("CDC-CLOCK", u, lambda what: f"the clock '{self.name(o.key)}' is used as data by "
                         f"{what}; clocks may only drive event controls and synchronizer clock ports")
            return
        if o.kind == "input" and o.domain is None:
            self.input_uses.setdefault(self.name(o.key), set()).add(u.domain)
            return
        if o.domain is None or o.domain == u.domain:
            return
        src = self.name(o.key)
        via = f" through '{self.name(u.via)}'" if u.via and u.via != o.key else ""
        if o.kind == "prim":
            p = self.prim_by_key[o.key]
            if p.key in prim_use_domains and o.domain in prim_use_domains[p.key]:
                self.add_use("CDC-BYPASS", u, lambda what: f"the output of {p.name} (synchronized into "
                             f"domain {o.domain}) also reaches {what} in domain {u.domain}; a synchronizer "
                             "output belongs to its destination domain only -- use a separate synchronizer "
                             "for the other domain")
            else:
                at_inst = replace(u, file=p.file, line=p.line)  # the fix is on the instance
                self.add_use("CDC-REWIRE", at_inst, lambda what: f"{REWIRED}: {p.name} is clocked in domain "
                             f"{o.domain} but its output is used by {what} in domain {u.domain}; connect its "
                             "clock and reset to the domain that uses its output")
            return
        node = self.net.nodes.get(o.key)
        if node is not None and node.memory:
            if self._declared_memory(o.key):
                return
            allowed = ", ".join(self.cross) or "no memory"
            self.add_use("CDC-MEM", u, lambda what: f"the memory '{src}' is written in domain {o.domain} and "
                         f"read by {what} in domain {u.domain}; this task allows that only for {allowed} -- "
                         "cross the value through a synchronizer primitive")
            return
        if o.key in self.prim_src_nodes.get(u.domain, set()):
            self.add_use("CDC-BYPASS", u, lambda what: f"'{src}' (domain {o.domain}) crosses into domain "
                         f"{u.domain} through a synchronizer but also reaches {what} directly{via}; use only "
                         "the synchronized copy")
            return
        if o.kind == "flop" and self._hand_sync(u):
            self.add_use("CDC-HANDSYNC", u, lambda what: f"{what} and the register after it are a "
                         f"hand-written synchronizer for '{src}' (domain {o.domain}); replace the flop chain "
                         "with the provided cdc_sync_bit / cdc_sync_bus primitive")
            return
        kind = {"reset": "the reset", "input": "the input"}.get(o.kind, "")
        self.add_use("CDC-RAW", u, lambda what: f"{kind + ' ' if kind else ''}'{src}' (domain {o.domain}) "
                     f"reaches {what} in domain {u.domain}{via} without a synchronizer; cross it through "
                     "cdc_sync_bit, cdc_sync_bus or cdc_sync_pulse from a register of its own domain")

    def _hand_sync(self, u: _Use) -> bool:
        """The consumer flop copies the foreign flop (no logic), and a flop of its domain copies it."""
        w = u.write
        if w is None or u.consumer is None or w.pure is None:
            return False
        if {self.alias(n) for n in w.pure} != {u.origin.key}:
            return False
        for node in self.net.nodes.values():
            if node.key == u.consumer:
                continue
            for w2 in node.writes:
                if w2.block is not None and self.block_domain.get(w2.block) == u.domain and w2.pure \
                        and u.consumer in {self.alias(n) for n in w2.pure}:
                    return True
        return False

    def _matches(self, key: str, name: str) -> bool:
        """A declared memory is matched by its exact path below the top (never by a suffix: a
        second memory in a generate block or a helper module is another memory)."""
        return key == f"{self.net.top}.{name}"

    def _declared_memory(self, key: str) -> bool:
        return key in self.stand_ins or any(self._matches(key, m) for m in self.cross)

    def _feeds_control(self, mem: str) -> bool:
        """Whether a value read from ``mem`` reaches -- through any logic or register -- a condition,
        case selector or loop bound (a declared memory may carry data only)."""
        users: dict[str, set[str]] = {}
        for key, node in self.net.nodes.items():
            for w in node.writes:
                for d in w.deps:
                    users.setdefault(d, set()).add(key)
        seen = {mem}
        work = [mem]
        while work:
            k = work.pop()
            if k in self.net.ctrl_reads:
                return True
            for u in users.get(k, ()):
                if u not in seen:
                    seen.add(u)
                    work.append(u)
        return False

    def check_memories(self) -> None:
        # cdc_ram's read data is the FIFO's data path: it may reach outputs and data registers but
        # never a decision. Otherwise the storage is a one-flop crossing for control: a Gray pointer
        # written into a one-entry cdc_ram and registered once passes every seed (the model only
        # delays young entries), yet has no synchronizer.
        for p in self.net.prims:
            if p.kind != "cdc_ram":
                continue
            q = p.conns.get("q")
            if q and any(self._feeds_control(k) for k in q[0]):
                self.add("CDC-MEM", f"the read data of {p.name} (cdc_ram) reaches a condition, case selector "
                         "or loop bound; storage carries data only -- cross pointers and other control "
                         "values through cdc_sync_bus / cdc_sync_bit", p.file, p.line)
        for key, node in self.net.nodes.items():
            if not self._declared_memory(key):
                continue
            if not node.memory:
                self.add("CDC-MEM", f"'{node.name}' is declared for crossing by the task but is not "
                         "a memory (an unpacked array); keep the task's memory as it is",
                         node.file, node.line)
                continue
            if self._feeds_control(key):
                self.add("CDC-MEM", f"the memory '{node.name}' crosses domains as data only, but its "
                         "contents "
                         "are used in a condition, case selector or loop bound; compare or decide on "
                         "synchronized values instead", node.file, node.line)
            comb = [w for w in node.writes if w.block is None]
            doms = {d for d in self.flop_domains.get(key, set()) if d is not None}
            if comb or len(doms) > 1:
                w = (comb or node.writes)[0]
                self.add("CDC-MEM", f"the memory '{node.name}' may cross domains only if it is "
                         "written by registers of one domain; write it from one clocked block",
                         w.file, w.line)

    # ----- learning the port domains from a trusted design -----
    def learned_ports(self) -> PortDomains:
        ins = {p: (next(iter(d)) if len(d) == 1 else None) for p, d in self.input_uses.items()}
        outs = {p: (next(iter(d)) if len(d) == 1 else None) for p, d in self.output_domains.items()}
        return PortDomains(inputs=ins, outputs=outs)


def check(net: Netlist, clocks: dict[str, str], resets: dict[str, str], cross_memories: tuple[str, ...],
          ports: PortDomains | None, with_blocks: bool = False):
    """Run every structure rule; return the findings and the port domains seen in this design
    (and, with ``with_blocks``, each flop block's domain, "domain <name>", by block index)."""
    dc = DomainCheck(net, clocks, resets, cross_memories, ports)
    findings = dc.run()
    if with_blocks:
        blocks = {i: (f"domain {d}" if d else None) for i, d in dc.block_domain.items()}
        return findings, dc.learned_ports(), blocks
    return findings, dc.learned_ports()

