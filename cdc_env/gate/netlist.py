"""A signal-level dependency graph of an elaborated design, for the clock-domain rules.

Walks pyslang's elaborated hierarchy from the task's top instance: every net and variable is a
node (keyed by hierarchical path), and every way a value reaches it is a ``Write``: continuous
assignments, net and variable initializers, procedural assignments (with the conditions that
guard them as control dependencies), port connections of helper modules, generate blocks,
functions and tasks (inlined as a summary: the call depends on its arguments and on every
non-local signal the body reads), concatenations and memories (a memory is one node).

A procedural block with an edge-triggered event control is a flop block: everything it assigns
is a register of that block's clock. Everything else is combinational. Instances of the
provided primitives are black boxes: their port connections are recorded, their internals are
never walked (a design may not reach into them; that is a POL-HIERREF finding).

Granularity is the whole signal: a vector whose bits belong to different domains is treated as
belonging to both (conservative; docs/gate.md states it as a limitation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pyslang import ast

from .frontend import FrontEnd

PRIMITIVES: dict[str, dict[str, str]] = {
    # role -> port name. "clk"/"rst" are the destination side; "d" the crossing input.
    "cdc_sync_bus": {"clk": "clk_i", "rst": "rst_ni", "d": "d_i", "q": "q_o"},
    "cdc_sync_bit": {"clk": "clk_i", "rst": "rst_ni", "d": "d_i", "q": "q_o"},
    "cdc_sync_pulse": {"src_clk": "src_clk_i", "src_rst": "src_rst_ni", "d": "pulse_i",
                       "clk": "dst_clk_i", "rst": "dst_rst_ni", "q": "pulse_o"},
    # Cross-domain storage: written in the wclk_i domain, read (combinationally) in rclk_i's.
    "cdc_ram": {"src_clk": "wclk_i", "we": "we_i", "waddr": "waddr_i", "wdata": "wdata_i",
                "clk": "rclk_i", "raddr": "raddr_i", "q": "rdata_o"},
}

EK = ast.ExpressionKind
SKd = ast.StatementKind
SymK = ast.SymbolKind
_VALUE_KINDS = {SymK.Net, SymK.Variable, SymK.FormalArgument}
_PURE_KINDS = {EK.NamedValue, EK.Concatenation, EK.Replication, EK.Conversion, EK.MemberAccess,
               EK.IntegerLiteral, EK.UnbasedUnsizedIntegerLiteral}
MAX_CALL_DEPTH = 16


@dataclass
class Write:
    """One way a value reaches a node."""

    deps: frozenset[str]  # nodes read (data and control)
    file: str | None
    line: int | None
    block: int | None = None  # flop block index, or None for combinational
    pure: frozenset[str] | None = None  # the nodes, if the value is a plain selection of them
    port: str | None = None  # "instance.port" if this write is a helper module's port connection
    bits: tuple[int, int] | None = None  # the constant bit range written (None: all, or unknown)


@dataclass
class Node:
    key: str
    name: str  # shown in messages: the path below the top instance
    file: str | None = None
    line: int | None = None
    memory: bool = False
    writes: list[Write] = field(default_factory=list)


@dataclass
class Block:
    """An edge-triggered procedural block: its events (edge, node keys) and where it is. Every
    flop of the block also depends on its non-clock events (asynchronous set/reset)."""

    events: list[tuple[str, frozenset[str]]]
    file: str | None
    line: int | None
    text: str


@dataclass
class PrimInst:
    kind: str  # cdc_sync_bus | cdc_sync_bit | cdc_sync_pulse
    key: str
    name: str
    file: str | None
    line: int | None
    conns: dict[str, tuple[frozenset[str], frozenset[str] | None, str]] = field(default_factory=dict)
    # role -> (nodes read, pure selection or None, expression text); "q" holds the driven nodes
    dparts: list[tuple[str, tuple[int, int] | None]] | None = None
    # the data input as (node, constant bit range or None for all of it), if a plain selection


@dataclass
class Netlist:
    top: str
    nodes: dict[str, Node] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    prims: list[PrimInst] = field(default_factory=list)
    hierrefs: list[tuple[str, str | None, int | None]] = field(default_factory=list)
    static_state: list[tuple[str, str, str | None, int | None]] = field(default_factory=list)
    # (subroutine, variable, file, line): a static local that may be read before it is assigned
    ports: dict[str, str] = field(default_factory=dict)  # top port name -> "in" | "out" | "inout"
    port_findings: list[tuple[str, str | None, int | None]] = field(default_factory=list)
    # (message, file, line): ports a simulator would make bidirectional (POL-PORTDIR)
    calls: dict[str, set[int | None]] = field(default_factory=dict)  # subroutine -> calling blocks
    params: list[tuple[str, str]] = field(default_factory=list)  # (path below the top, integer value)
    scopes: list[str] = field(default_factory=list)  # helper instances and generate blocks built
    ctrl_reads: set[str] = field(default_factory=set)  # nodes read in a condition, selector or bound

    def elaboration(self) -> dict:
        """What the gate elaborated, in the form the build is compared with (sim/icarus.py):
        primitive instances (path, module) and integer parameter values, paths below the
        top with unnamed generate blocks written genblk*."""
        return {"prims": sorted([_generic(p.name), p.kind] for p in self.prims),
                "params": sorted([_generic(n), v] for n, v in self.params),
                "scopes": sorted(_generic(n) for n in self.scopes)}

    def short(self, key: str) -> str:
        prefix = self.top + "."
        return key[len(prefix):] if key.startswith(prefix) else key


class _Builder:
    def __init__(self, fe: FrontEnd, top: ast.InstanceSymbol):
        self.fe = fe
        self.net = Netlist(top=top.hierarchicalPath)
        self.summaries: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self.in_progress: set[str] = set()
        self.loop_locals: set[str] = set()  # module variables used only as for-loop indices
        self.cur_block: int | None = None
        self.in_ports: dict[str, str] = {}  # internal node of a helper's input port -> its tag
        self.out_ports: list[tuple[str, frozenset[str], tuple[int, int] | None, str, str | None,
                                   int | None]] = []

    def skip(self, sym, local_to: str | None) -> bool:
        """A symbol that is not a node: a subroutine's local, or a loop-only index variable."""
        return _is_local(sym, local_to) or sym.hierarchicalPath in self.loop_locals

    # ----- nodes and locations -----
    def where(self, obj) -> tuple[str | None, int | None]:
        try:
            loc = obj.sourceRange.start
        except AttributeError:
            loc = obj.location
        return self.fe.line_of(loc)

    def node(self, sym) -> str:
        key = sym.hierarchicalPath
        if key not in self.net.nodes:
            file, line = self.fe.line_of(sym.location)
            memory = False
            try:
                memory = bool(sym.type.isUnpackedArray)
            except AttributeError:
                pass
            self.net.nodes[key] = Node(key, self.net.short(key), file, line, memory)
        return key

    def write(self, targets: set[str], deps: set[str], where, block: int | None = None,
              pure: frozenset[str] | None = None, port: str | None = None,
              bits: tuple[int, int] | None = None) -> None:
        file, line = where
        fdeps = frozenset(deps)
        for t in targets:
            self.net.nodes[t].writes.append(Write(fdeps, file, line, block, pure, port,
                                                  bits if len(targets) == 1 else None))

    # ----- expressions -----
    def reads(self, expr, local_to: str | None = None) -> set[str]:
        """Every node an expression reads, calls included (through their summaries)."""
        out: set[str] = set()
        if expr is None:
            return out

        def visit(x):
            if isinstance(x, ast.Expression):
                k = x.kind
                if k in (EK.NamedValue, EK.HierarchicalValue):
                    sym = x.symbol
                    if sym.kind in _VALUE_KINDS and not self.skip(sym, local_to):
                        out.add(self.node(sym))
                    if k == EK.HierarchicalValue:
                        file, line = self.where(x)
                        self.net.hierrefs.append((_text(x), file, line))
                elif k == EK.Call and not x.isSystemCall:
                    sub = x.subroutine
                    if sub is not None:
                        r, _w = self.summary(sub)
                        out.update(r)
                        self.net.calls.setdefault(sub.name, set()).add(self.cur_block)
            return ast.VisitAction.Advance

        expr.visit(visit)
        return out

    def pure(self, expr, local_to: str | None = None) -> frozenset[str] | None:
        """The nodes of a plain selection (names, constant selects, concatenations), else None."""
        out: set[str] = set()
        ok = True

        def visit(x):
            nonlocal ok
            if not ok:
                return ast.VisitAction.Skip
            if isinstance(x, ast.Expression):
                k = x.kind
                if k in (EK.ElementSelect, EK.RangeSelect):
                    sels = [x.selector] if k == EK.ElementSelect else [x.left, x.right]
                    if any(s is None or s.constant is None for s in sels):
                        ok = False
                        return ast.VisitAction.Skip
                    x.value.visit(visit)
                    return ast.VisitAction.Skip
                if k not in _PURE_KINDS:
                    ok = False
                    return ast.VisitAction.Skip
                if k == EK.NamedValue and x.symbol.kind in _VALUE_KINDS and not self.skip(x.symbol, local_to):
                    out.add(self.node(x.symbol))
            return ast.VisitAction.Advance

        if expr is None:
            return None
        expr.visit(visit)
        return frozenset(out) if ok else None

    def lvalue(self, expr, local_to: str | None = None) -> tuple[set[str], set[str]]:
        """(nodes written, nodes read by the selects) of an assignment's left-hand side."""
        targets: set[str] = set()
        reads: set[str] = set()

        def go(e):
            k = e.kind
            if k in (EK.NamedValue, EK.HierarchicalValue):
                if e.symbol.kind in _VALUE_KINDS and not self.skip(e.symbol, local_to):
                    targets.add(self.node(e.symbol))
                if k == EK.HierarchicalValue:
                    file, line = self.where(e)
                    self.net.hierrefs.append((_text(e), file, line))
            elif k == EK.ElementSelect:
                go(e.value)
                reads.update(self.reads(e.selector, local_to))
            elif k == EK.RangeSelect:
                go(e.value)
                reads.update(self.reads(e.left, local_to))
                reads.update(self.reads(e.right, local_to))
            elif k in (EK.MemberAccess, EK.Conversion):
                go(e.value if k == EK.MemberAccess else e.operand)
            elif k == EK.Concatenation:
                for op in e.operands:
                    go(op)
            elif k == EK.Assignment:
                go(e.left)
            else:  # anything else: every name in it is written, conservatively
                def visit(x):
                    if isinstance(x, ast.Expression) and x.kind == EK.NamedValue and \
                            x.symbol.kind in _VALUE_KINDS and not self.skip(x.symbol, local_to):
                        targets.add(self.node(x.symbol))
                    return ast.VisitAction.Advance
                e.visit(visit)

        if expr is not None:
            go(expr)
        return targets, reads

    # ----- subroutines -----
    def summary(self, sub) -> tuple[frozenset[str], frozenset[str]]:
        """(non-local nodes read, non-local nodes written) by a function or task, nested calls in."""
        key = sub.hierarchicalPath
        if key in self.summaries:
            return self.summaries[key]
        if key in self.in_progress or len(self.in_progress) > MAX_CALL_DEPTH:
            return frozenset(), frozenset()
        self.in_progress.add(key)
        reads: set[str] = set()
        writes: set[str] = set()

        def visit(x):
            if isinstance(x, ast.Expression):
                if x.kind == EK.Assignment:
                    t, r = self.lvalue(x.left, key)
                    writes.update(t)
                    reads.update(r)
                    reads.update(self.reads(x.right, key))
                    return ast.VisitAction.Skip
                reads.update(self.reads(x, key))
                if x.kind == EK.Call and not x.isSystemCall and x.subroutine is not None:
                    writes.update(self.summary(x.subroutine)[1])
                return ast.VisitAction.Skip
            return ast.VisitAction.Advance

        try:
            sub.body.visit(visit)
            for var, loc in stale_static_reads(sub):
                file, line = self.fe.line_of(loc)
                self.net.static_state.append((sub.name, var, file, line))
        finally:
            self.in_progress.discard(key)
        res = (frozenset(reads), frozenset(writes))
        self.summaries[key] = res
        return res

    # ----- statements -----
    def statement(self, stmt, ctrl: frozenset[str], block: int | None) -> None:
        k = stmt.kind
        if k == SKd.List:
            for s in stmt.list:
                self.statement(s, ctrl, block)
            return
        if k == SKd.Block:
            self.statement(stmt.body, ctrl, block)
            return
        if k == SKd.ExpressionStatement:
            self.expression_statement(stmt.expr, ctrl, block)
            return
        if k == SKd.VariableDeclaration:
            sym = stmt.symbol
            if sym.initializer is not None:
                self.write({self.node(sym)}, self.reads(sym.initializer) | ctrl, self.where(stmt), block,
                           self.pure(sym.initializer))
            return
        # Any other statement: expressions in its header (conditions, case selectors, loop
        # bounds) guard everything inside it; its sub-statements are walked in turn.
        header: set[str] = set()
        children: list = []

        def visit(x):
            if x is stmt:
                return ast.VisitAction.Advance
            if isinstance(x, ast.Statement):
                children.append(x)
                return ast.VisitAction.Skip
            if isinstance(x, ast.Expression):
                if x.kind == EK.Assignment:  # loop initializers and steps
                    self.expression_statement(x, ctrl, block)
                header.update(self.reads(x))
                return ast.VisitAction.Skip
            return ast.VisitAction.Advance

        stmt.visit(visit)
        self.net.ctrl_reads |= header
        inner = ctrl | frozenset(header)
        for c in children:
            self.statement(c, inner, block)

    def expression_statement(self, expr, ctrl: frozenset[str], block: int | None) -> None:
        where = self.where(expr)
        if expr.kind == EK.Assignment:
            targets, idx = self.lvalue(expr.left)
            rhs = self.reads(expr.right)
            deps = rhs | idx | ctrl
            if expr.isCompound:
                deps |= targets
            extra = self._call_writes(expr.right)
            pure = self.pure(expr.right) if not idx else None
            self.write(targets | extra, deps, where, block, pure, bits=_lhs_bits(expr.left))
            return
        reads = self.reads(expr) | ctrl
        targets = self._call_writes(expr)
        if expr.kind == EK.Call and not expr.isSystemCall:
            for arg in expr.arguments:
                if arg.kind == EK.Assignment:  # output argument
                    t, r = self.lvalue(arg.left)
                    targets |= t
                    reads |= r
        elif expr.kind not in (EK.Call,):  # x++ and friends
            t, r = self.lvalue(expr)
            targets |= t
            reads |= r | t
        if targets:
            self.write(targets, reads, where, block)

    def _call_writes(self, expr) -> set[str]:
        out: set[str] = set()

        def visit(x):
            if isinstance(x, ast.Expression) and x.kind == EK.Call and not x.isSystemCall \
                    and x.subroutine is not None:
                out.update(self.summary(x.subroutine)[1])
            return ast.VisitAction.Advance

        expr.visit(visit)
        return out

    # ----- procedural blocks -----
    def procedure(self, proc) -> None:
        pk = proc.procedureKind
        if pk in (ast.ProceduralBlockKind.Initial, ast.ProceduralBlockKind.Final):
            return  # refused by policy; nothing it does is part of the design
        body = proc.body
        block: int | None = None
        ctrl: frozenset[str] = frozenset()
        if body.kind == SKd.Timed:
            timing = body.timing
            events = _events(timing)
            edged = [(edge, expr) for edge, expr, _iff in events if edge != "none"]
            if edged:
                evs = [(edge, frozenset(self.reads(expr))) for edge, expr in edged]
                file, line = self.where(proc)
                self.net.blocks.append(Block(evs, file, line, _text(timing)))
                block = len(self.net.blocks) - 1
                # The events themselves (clock, asynchronous resets) are kept on the Block, not
                # in each write's deps: the clock drives the flops but is not their data.
            for _edge, _expr, iff in events:  # an iff guard is an enable of every flop in the block
                ctrl |= frozenset(self.reads(iff))
            body = body.stmt
        self.cur_block = block
        try:
            self.statement(body, ctrl, block)
        finally:
            self.cur_block = None

    # ----- hierarchy -----
    def scope(self, scope) -> None:
        for m in scope:
            k = m.kind
            if k == SymK.Net:
                if m.initializer is not None:
                    self.write({self.node(m)}, self.reads(m.initializer), self.where(m), None,
                               self.pure(m.initializer))
                else:
                    self.node(m)
            elif k == SymK.Variable:
                key = self.node(m)
                if m.initializer is not None:
                    self.write({key}, self.reads(m.initializer), self.where(m), None,
                               self.pure(m.initializer))
            elif k == SymK.ContinuousAssign:
                a = m.assignment
                targets, idx = self.lvalue(a.left)
                self.write(targets, self.reads(a.right) | idx, self.where(m), None,
                           self.pure(a.right) if not idx else None, bits=_lhs_bits(a.left))
            elif k == SymK.ProceduralBlock:
                self.procedure(m)
            elif k == SymK.Parameter:
                self.scope_param(m)
            elif k == SymK.Instance:
                self.instance(m)
            elif k == SymK.InstanceArray:
                for el in m.elements:
                    if el.kind == SymK.Instance:
                        self.instance(el)
            elif k == SymK.GenerateBlock:
                if not m.isUninstantiated:
                    self.net.scopes.append(self.net.short(m.hierarchicalPath))
                    self.scope(m)
            elif k == SymK.GenerateBlockArray:
                for e in m.entries:
                    if not e.isUninstantiated:
                        self.net.scopes.append(self.net.short(e.hierarchicalPath))
                        self.scope(e)

    def sel_parts(self, e) -> list[tuple[str, tuple[int, int] | None]] | None:
        """A plain selection as (node, constant bit range or None), or None for anything else."""
        k = e.kind
        if k == EK.NamedValue and e.symbol.kind in _VALUE_KINDS:
            return [(self.node(e.symbol), None)]
        if k in (EK.ElementSelect, EK.RangeSelect) and e.value.kind == EK.NamedValue \
                and e.value.symbol.kind in _VALUE_KINDS:
            return [(self.node(e.value.symbol), _lhs_bits(e))]
        if k == EK.Conversion:
            return self.sel_parts(e.operand)
        if k == EK.Concatenation:
            out: list = []
            for op in e.operands:
                part = self.sel_parts(op)
                if part is None:
                    return None
                out.extend(part)
            return out
        if k in (EK.IntegerLiteral, EK.UnbasedUnsizedIntegerLiteral):
            return []
        return None

    def scope_param(self, m) -> None:
        bits = _bits_of(m.value)
        if bits is not None:
            signed = bool(getattr(m.type, "isSigned", False))
            value = int(bits, 2) - ((1 << len(bits)) if signed and bits[0] == "1" else 0)
            self.net.params.append((self.net.short(m.hierarchicalPath), str(value)))

    def instance(self, inst) -> None:
        defname = inst.definition.name
        file, line = self.fe.line_of(inst.location)
        if defname in PRIMITIVES:
            roles = {port: role for role, port in PRIMITIVES[defname].items()}
            p = PrimInst(defname, inst.hierarchicalPath, self.net.short(inst.hierarchicalPath), file, line)
            for pc in inst.portConnections:
                role = roles.get(pc.port.name)
                expr = pc.expression
                if role is None or expr is None:
                    continue
                if role == "q":
                    targets, _idx = self.lvalue(expr)
                    p.conns["q"] = (frozenset(targets), None, _text(expr))
                else:
                    p.conns[role] = (frozenset(self.reads(expr)), self.pure(expr), _text(expr))
                    if role == "d":
                        p.dparts = self.sel_parts(expr)
            self.net.prims.append(p)
            for m in inst.body:  # the primitive's own parameters (WIDTH), not its internals
                if m.kind == SymK.Parameter:
                    self.scope_param(m)
            return
        self.net.scopes.append(self.net.short(inst.hierarchicalPath))
        iname = self.net.short(inst.hierarchicalPath)
        for pc in inst.portConnections:
            expr = pc.expression
            port = pc.port
            internal = getattr(port, "internalSymbol", None)
            if expr is None or internal is None or internal.kind not in _VALUE_KINDS:
                continue
            ikey = self.node(internal)
            d = port.direction
            tag = f"{iname}.{port.name}"
            if d in (ast.ArgumentDirection.In, ast.ArgumentDirection.InOut):
                src = expr.left if expr.kind == EK.Assignment else expr
                self.write({ikey}, self.reads(src), (file, line), None, self.pure(src), port=tag)
                if d == ast.ArgumentDirection.In:
                    self.in_ports[ikey] = tag
            if d in (ast.ArgumentDirection.Out, ast.ArgumentDirection.InOut):
                lhs = expr.left if expr.kind == EK.Assignment else expr
                targets, idx = self.lvalue(expr)
                bits = _lhs_bits(lhs)
                self.write(targets, {ikey} | idx, (file, line), None, frozenset({ikey}) if not idx else None,
                           port=tag, bits=bits)
                if d == ast.ArgumentDirection.Out:
                    self.out_ports.append((tag, frozenset(targets), bits, ikey, file, line))
        self.loop_locals |= loop_only_variables(inst.body)
        self.scope(inst.body)


    # ----- ports a simulator makes bidirectional -----
    def check_ports(self, top_inputs: list[str]) -> None:
        """Icarus (and the standard's port coercion) turns an input port driven inside its module,
        or an output port whose outside net has another driver, into an inout: the value then
        flows both ways while the netlist would follow one. Such ports are refused."""
        for key, tag in [(k, None) for k in top_inputs] + sorted(self.in_ports.items()):
            node = self.net.nodes.get(key)
            if node is None:
                continue
            inside = [w for w in node.writes if tag is None or w.port != tag]
            if inside:
                w = inside[0]
                what = f"input port {tag}" if tag else f"top-level input '{node.name}'"
                self.net.port_findings.append((
                    f"the {what} is driven inside its module; a simulator makes such a port "
                    "bidirectional, so the value also flows back out -- make it an output port, or "
                    "drive a separate internal signal", w.file, w.line))
        for tag, targets, bits, _ikey, file, line in self.out_ports:
            for t in sorted(targets):
                others = [w for w in self.net.nodes[t].writes if w.port != tag and _overlap(bits, w.bits)]
                if others:
                    self.net.port_findings.append((
                        f"the output port {tag} drives '{self.net.short(t)}', which also has another driver "
                        f"(line {others[0].line}); a simulator makes such a port bidirectional, so the other "
                        "driver's value reaches inside the module -- give each net one driver", file, line))


_GENBLK = re.compile(r"\bgenblk\d+")


def _generic(path: str) -> str:
    return _GENBLK.sub("genblk*", path)


def _bits_of(cv) -> str | None:
    """A parameter's value as a two-state bit string, or None (not an integer, or has x/z)."""
    try:
        v = cv.value
        width = v.bitWidth
        text = str(v)
    except AttributeError:
        return None
    if not isinstance(width, int) or width <= 0 or width > 4096 or any(c in text.lower() for c in "xz?"):
        return None
    try:
        n = int(v)
    except (TypeError, ValueError):
        m = re.fullmatch(r"(-?)(?:\d+)?'s?([bodh])?([0-9a-fA-F_]+)", text.strip())
        if not m:
            try:
                n = int(text)
            except ValueError:
                return None
        else:
            n = int(m.group(3).replace("_", ""), {"b": 2, "o": 8, "d": 10, "h": 16, None: 10}[m.group(2)])
            n = -n if m.group(1) else n
    return format(n & ((1 << width) - 1), f"0{width}b")


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    if a is None or b is None:
        return True
    return not (a[1] < b[0] or b[1] < a[0])


_SVINT = re.compile(r"(-?)(?:\d+)?'(s?)([bodh])([0-9a-fA-F_]+)")


def _const_int(e) -> int | None:
    """The integer value of a constant expression (None if not constant, or if it has x/z bits)."""
    try:
        cv = e.constant
        if cv is None:
            return None
        text = str(cv.value).strip()
    except (AttributeError, TypeError):
        return None
    m = _SVINT.fullmatch(text)
    try:
        if m:
            n = int(m.group(4).replace("_", ""), {"b": 2, "o": 8, "d": 10, "h": 16}[m.group(3)])
            return -n if m.group(1) else n
        return int(text)
    except ValueError:
        return None


def _lhs_bits(e) -> tuple[int, int] | None:
    """The constant bit (or element) range an assignment target selects, or None (whole/unknown)."""
    if e is None:
        return None
    k = e.kind
    if k == EK.ElementSelect and e.value.kind == EK.NamedValue:
        i = _const_int(e.selector)
        return (i, i) if i is not None else None
    if k == EK.RangeSelect and e.value.kind == EK.NamedValue:
        a, b = _const_int(e.left), _const_int(e.right)
        if a is None or b is None:
            return None
        sk = ast.RangeSelectionKind
        if e.selectionKind == sk.IndexedUp:
            return (a, a + b - 1)
        if e.selectionKind == sk.IndexedDown:
            return (a - b + 1, a)
        return (min(a, b), max(a, b))
    return None


def loop_only_variables(body) -> set[str]:
    """Module variables used only as for-loop indices: every read and write of one is inside a
    for loop that initializes it. Such a variable carries nothing from one block (or domain) to
    another, so it is not a node of the graph (a function's locals are treated the same way)."""
    loop_uses: set[str] = set()
    other: set[str] = set()
    prefix = body.hierarchicalPath + "."

    def names(e, ctx: frozenset[str]) -> None:
        if e is None:
            return

        def visit(x):
            if isinstance(x, ast.Expression) and x.kind == EK.NamedValue and x.symbol.kind == SymK.Variable:
                path = x.symbol.hierarchicalPath
                (loop_uses if path in ctx else other).add(path)
            return ast.VisitAction.Advance

        e.visit(visit)

    def stmt(st, ctx: frozenset[str]) -> None:
        if st.kind == SKd.ForLoop:
            mine = set()
            for init in st.initializers:
                if init.kind == EK.Assignment and init.left.kind == EK.NamedValue and \
                        init.left.symbol.kind == SymK.Variable:
                    mine.add(init.left.symbol.hierarchicalPath)
            inner = ctx | frozenset(mine)
            for init in st.initializers:  # the initial value is read before the loop owns the index
                if init.kind == EK.Assignment:
                    names(init.right, ctx)
                    names(init.left, inner)
                else:
                    names(init, ctx)
            names(st.stopExpr, inner)
            for step in st.steps:
                names(step, inner)
            stmt(st.body, inner)
            return

        def visit(x):
            if x is st:
                return ast.VisitAction.Advance
            if isinstance(x, ast.Statement):
                stmt(x, ctx)
                return ast.VisitAction.Skip
            if isinstance(x, ast.Expression):
                names(x, ctx)
                return ast.VisitAction.Skip
            return ast.VisitAction.Advance

        st.visit(visit)

    def visit(x):
        if isinstance(x, ast.Symbol):
            if x.kind == SymK.ProceduralBlock:
                stmt(x.body, frozenset())
                return ast.VisitAction.Skip
            if x.kind in (SymK.Instance, SymK.InstanceArray):
                for inst in ([x] if x.kind == SymK.Instance else list(x.elements)):
                    for pc in getattr(inst, "portConnections", []):
                        names(pc.expression, frozenset())
                return ast.VisitAction.Skip
        if isinstance(x, ast.Expression):
            names(x, frozenset())
            return ast.VisitAction.Skip
        if isinstance(x, ast.Statement):
            stmt(x, frozenset())
            return ast.VisitAction.Skip
        return ast.VisitAction.Advance

    body.visit(visit)
    return {p for p in loop_uses - other if p.startswith(prefix)}


_BIN = {
    ast.BinaryOperator.Add: lambda a, b: a + b, ast.BinaryOperator.Subtract: lambda a, b: a - b,
    ast.BinaryOperator.Multiply: lambda a, b: a * b,
    ast.BinaryOperator.LogicalShiftLeft: lambda a, b: a << b if 0 <= b < 64 else None,
    ast.BinaryOperator.LogicalShiftRight: lambda a, b: a >> b if 0 <= b < 64 else None,
    ast.BinaryOperator.LessThan: lambda a, b: int(a < b),
    ast.BinaryOperator.LessThanEqual: lambda a, b: int(a <= b),
    ast.BinaryOperator.GreaterThan: lambda a, b: int(a > b),
    ast.BinaryOperator.GreaterThanEqual: lambda a, b: int(a >= b),
    ast.BinaryOperator.Inequality: lambda a, b: int(a != b),
    ast.BinaryOperator.Equality: lambda a, b: int(a == b),
}
MAX_UNROLL = 256  # iterations of one loop
MAX_UNROLLED_STATEMENTS = 4000  # statements visited per subroutine while unrolling


class _OverBudget(Exception):
    pass


def _eval(e, env: dict[str, int]) -> int | None:
    """The integer value of a small index expression, loop variables taken from ``env``."""
    if e is None:
        return None
    k = e.kind
    if k == EK.NamedValue and e.symbol.hierarchicalPath in env:
        return env[e.symbol.hierarchicalPath]
    if k == EK.Conversion:
        return _eval(e.operand, env)
    if k == EK.BinaryOp and e.op in _BIN:
        a, b = _eval(e.left, env), _eval(e.right, env)
        return None if a is None or b is None else _BIN[e.op](a, b)
    if k == EK.UnaryOp and e.op == ast.UnaryOperator.Minus:
        a = _eval(e.operand, env)
        return None if a is None else -a
    return _const_int(e)


def _range_of(sym) -> tuple[int, int] | None:
    try:
        r = sym.type.fixedRange
        return (min(r.left, r.right), max(r.left, r.right))
    except (AttributeError, TypeError):
        return None


_STEP_OPS = (ast.UnaryOperator.Postincrement, ast.UnaryOperator.Preincrement,
             ast.UnaryOperator.Postdecrement, ast.UnaryOperator.Predecrement)


def _written_names(lhs) -> set[str]:
    """Variables an assignment target writes (its base names, not the names in its selects)."""
    if lhs is None:
        return set()
    if lhs.kind in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
        return _written_names(lhs.value)
    if lhs.kind == EK.Concatenation:
        return set().union(*(_written_names(op) for op in lhs.operands)) if lhs.operands else set()
    if lhs.kind == EK.NamedValue:
        return {lhs.symbol.hierarchicalPath}
    return set()


def _assigns(body, var: str) -> bool:
    """Whether ``body`` writes the variable ``var``, or breaks, continues or returns (then its loop
    is not unrolled: the iterations would not be the index's values)."""
    found = False

    def visit(x):
        nonlocal found
        if isinstance(x, ast.Statement) and x.kind in (SKd.Break, SKd.Continue, SKd.Return):
            found = True  # the iterations are not the index's values
        elif isinstance(x, ast.Expression):
            if x.kind == EK.Assignment and var in _written_names(x.left):
                found = True
            elif x.kind == EK.UnaryOp and x.op in _STEP_OPS and var in _written_names(x.operand):
                found = True
        return ast.VisitAction.Skip if found else ast.VisitAction.Advance

    body.visit(visit)
    return found


def stale_static_reads(sub) -> list[tuple[str, object]]:
    """Static variables of a subroutine that may be read before the call assigns them.

    Such a variable carries a value from one call to the next -- from a call in one clock
    domain to a call in the other -- which no signal in the netlist shows. The analysis is a
    dataflow over the body, per bit where selects are constant: loops with constant bounds are
    unrolled (so a loop that fills a vector, or reads a bit the previous iteration wrote, is
    followed exactly), and a case that lists every value of its selector needs no default.
    Elsewhere a write to any part of a variable counts as assigning all of it (optimistic for
    partial writes; docs/gate.md).
    """
    prefix = sub.hierarchicalPath + "."
    tracked: dict[str, tuple[int, int] | None] = {}

    def collect(x):
        if isinstance(x, ast.Symbol) and x.kind == SymK.Variable and \
                x.lifetime == ast.VariableLifetime.Static and x.hierarchicalPath.startswith(prefix):
            tracked[x.hierarchicalPath] = _range_of(x)
        elif isinstance(x, ast.Statement) and x.kind == SKd.VariableDeclaration:
            collect(x.symbol)
        return ast.VisitAction.Advance

    for m in sub:
        collect(m)
    rv = getattr(sub, "returnValVar", None)
    if rv is not None and sub.defaultLifetime == ast.VariableLifetime.Static:
        tracked[rv.hierarchicalPath] = _range_of(rv)
    sub.body.visit(collect)
    if not tracked:
        return []
    stale: list[tuple[str, object]] = []
    ALL = None  # noqa: N806 -- "every bit assigned"
    State = dict  # noqa: N806 -- path -> set of assigned bits, or ALL

    def full(path: str, bits) -> bool:
        if bits is ALL:
            return True
        r = tracked.get(path)
        return r is not None and all(i in bits for i in range(r[0], r[1] + 1))

    def has(st: State, path: str, bit: int | None) -> bool:
        if path not in st:
            return False
        bits = st[path]
        return full(path, bits) if bit is None else (bits is ALL or bit in bits)

    def check(expr, st: State, env: dict[str, int]) -> None:
        if expr is None:
            return

        def visit(x):
            if isinstance(x, ast.Expression):
                if x.kind == EK.ConditionalOp and len(x.conditions) == 1:
                    c = _eval(x.conditions[0].expr, env)
                    if c is not None:  # a condition known here (loop unrolled): one branch runs
                        check(x.left if c else x.right, st, env)
                        return ast.VisitAction.Skip
                if x.kind == EK.ElementSelect and x.value.kind == EK.NamedValue and \
                        x.value.symbol.hierarchicalPath in tracked:
                    i = _eval(x.selector, env)
                    if not has(st, x.value.symbol.hierarchicalPath, i):
                        stale.append((x.value.symbol.name, x.sourceRange.start))
                    check(x.selector, st, env)
                    return ast.VisitAction.Skip
                if x.kind == EK.NamedValue:
                    k = x.symbol.hierarchicalPath
                    if k in tracked and not has(st, k, None):
                        stale.append((x.symbol.name, x.sourceRange.start))
            return ast.VisitAction.Advance

        expr.visit(visit)

    def assign_target(lhs, st: State, env: dict[str, int]) -> State:
        st = dict(st)
        if lhs.kind == EK.Concatenation:
            for op in lhs.operands:
                st = assign_target(op, st, env)
            return st
        bits = None
        base = lhs
        if lhs.kind == EK.ElementSelect:
            i = _eval(lhs.selector, env)
            bits = {i} if i is not None else None
            base = lhs.value
        elif lhs.kind == EK.RangeSelect:
            a, b = _eval(lhs.left, env), _eval(lhs.right, env)
            if a is not None and b is not None:
                sk = ast.RangeSelectionKind
                lo, hi = ((a, a + b - 1) if lhs.selectionKind == sk.IndexedUp else
                          (a - b + 1, a) if lhs.selectionKind == sk.IndexedDown else (min(a, b), max(a, b)))
                bits = set(range(lo, hi + 1)) if hi - lo < 4096 else None
            base = lhs.value
        while base.kind in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
            base, bits = base.value, None
        if base.kind == EK.NamedValue:
            k = base.symbol.hierarchicalPath
            if bits is None or st.get(k, set()) is ALL:
                st[k] = ALL
            else:
                st[k] = set(st.get(k, set())) | bits
                if full(k, st[k]):
                    st[k] = ALL
        return st

    def assign_expr(e, st: State, env: dict[str, int]) -> State:
        if e.kind == EK.Assignment:
            check(e.right, st, env)
            lhs = e.left
            while lhs.kind in (EK.ElementSelect, EK.RangeSelect):  # selects read their indices
                check(lhs.selector if lhs.kind == EK.ElementSelect else lhs.left, st, env)
                if lhs.kind == EK.RangeSelect:
                    check(lhs.right, st, env)
                lhs = lhs.value
            if e.isCompound:
                check(e.left, st, env)
            return assign_target(e.left, st, env)
        check(e, st, env)
        return st

    def meet(states: list[State]) -> State:
        out: State = {}
        for k in set.intersection(*(set(x) for x in states)):
            vals = [x[k] for x in states]
            if all(v is ALL for v in vals):
                out[k] = ALL
            else:
                out[k] = set.intersection(*(set(range(tracked[k][0], tracked[k][1] + 1)) if v is ALL
                                            and tracked.get(k) else (v or set()) for v in vals))
        return out

    def unrolled(st) -> list[int] | None:
        """The loop variable's values, if the loop is `for (v = c; v OP c2; v = v +/- c3)`."""
        if len(st.initializers) != 1 or len(st.steps) != 1:
            return None
        init = st.initializers[0]
        if init.kind != EK.Assignment or init.left.kind != EK.NamedValue:
            return None
        var = init.left.symbol.hierarchicalPath
        v = _eval(init.right, {})
        if v is None or _assigns(st.body, var):
            return None
        values = []
        step = st.steps[0]
        for _ in range(MAX_UNROLL + 1):
            go = _eval(st.stopExpr, {var: v})
            if go is None:
                return None
            if not go:
                return values
            values.append(v)
            if step.kind == EK.Assignment and step.left.kind == EK.NamedValue and \
                    step.left.symbol.hierarchicalPath == var:
                nv = _eval(step.right, {var: v})
                if step.isCompound:
                    return None
            elif step.kind == EK.UnaryOp and step.op in (ast.UnaryOperator.Postincrement,
                                                         ast.UnaryOperator.Preincrement):
                nv = v + 1
            elif step.kind == EK.UnaryOp and step.op in (ast.UnaryOperator.Postdecrement,
                                                         ast.UnaryOperator.Predecrement):
                nv = v - 1
            else:
                return None
            if nv is None:
                return None
            v = nv
        return None

    def case_is_full(st) -> bool:
        sel = st.expr
        while sel is not None and sel.kind == EK.Conversion:  # the selector's own width, not the
            sel = sel.operand  # common width it is compared at (wider item values never match)
        try:
            width = sel.type.bitWidth
        except AttributeError:
            return False
        if not isinstance(width, int) or width > 10:
            return False
        values: set[int] = set()
        for item in st.items:
            for e in item.expressions:
                v = _const_int(e)
                if v is None:
                    return False
                if 0 <= v < 1 << width:  # a wider value never matches the selector
                    values.add(v)
        return len(values) == 1 << width

    def stmt(s_, st: State, env: dict[str, int]) -> State:
        if env:
            budget[0] -= 1
            if budget[0] < 0:
                raise _OverBudget
        k = s_.kind
        if k == SKd.List:
            for s2 in s_.list:
                st = stmt(s2, st, env)
            return st
        if k == SKd.Block:
            return stmt(s_.body, st, env)
        if k == SKd.ExpressionStatement:
            return assign_expr(s_.expr, st, env)
        if k == SKd.VariableDeclaration:
            init = s_.symbol.initializer
            if init is not None:
                check(init, st, env)
                return {**st, s_.symbol.hierarchicalPath: ALL}
            return st
        if k == SKd.Conditional:
            for c in s_.conditions:
                check(c.expr, st, env)
            known = [_eval(c.expr, env) for c in s_.conditions] if env else [None]
            if all(v is not None for v in known):  # decided by the unrolled loop's index: one branch
                if all(known):
                    return stmt(s_.ifTrue, st, env)
                return stmt(s_.ifFalse, st, env) if s_.ifFalse is not None else st
            yes = stmt(s_.ifTrue, dict(st), env)
            no = stmt(s_.ifFalse, dict(st), env) if s_.ifFalse is not None else st
            return meet([yes, no])
        if k == SKd.Case:
            check(s_.expr, st, env)
            outs = []
            for item in s_.items:
                for e in item.expressions:
                    check(e, st, env)
                outs.append(stmt(item.stmt, dict(st), env))
            if s_.defaultCase is not None:
                outs.append(stmt(s_.defaultCase, dict(st), env))
            elif not case_is_full(s_):
                outs.append(st)
            return meet(outs) if outs else st
        if k == SKd.ForLoop:
            values = unrolled(s_) if unroll[0] else None
            if values is not None:
                var = s_.initializers[0].left.symbol.hierarchicalPath
                st = assign_expr(s_.initializers[0], st, env)
                for v in values:
                    st = stmt(s_.body, st, {**env, var: v})
                return st
            for init in s_.initializers:
                st = assign_expr(init, st, env)
            check(s_.stopExpr, st, env)
            inner = stmt(s_.body, dict(st), env)
            for step in s_.steps:
                assign_expr(step, inner, env)
            runs = unrolled(s_) if not unroll[0] else None
            return inner if runs else st  # a loop known to run at least once leaves its writes
        if k in (SKd.WhileLoop, SKd.DoWhileLoop, SKd.RepeatLoop):
            check(getattr(s_, "cond", None) or getattr(s_, "count", None), st, env)
            inner = stmt(s_.body, dict(st), env)
            return inner if k == SKd.DoWhileLoop else st
        if k == SKd.Return:
            check(getattr(s_, "expr", None), st, env)
            return st
        # Anything else: every tracked name it reads must already be assigned.
        def visit(x):
            if isinstance(x, ast.Expression):
                check(x, st, env)
                return ast.VisitAction.Skip
            return ast.VisitAction.Advance

        s_.visit(visit)
        return st

    budget = [MAX_UNROLLED_STATEMENTS]
    unroll = [True]
    try:
        stmt(sub.body, {}, {})
    except _OverBudget:  # nested loops too long to unroll: the loop-insensitive analysis instead
        stale.clear()
        unroll[0] = False
        stmt(sub.body, {}, {})
    seen: set[str] = set()
    return [(n, loc) for n, loc in stale if not (n in seen or seen.add(n))]


def _is_local(sym, sub_key: str | None) -> bool:
    return sub_key is not None and sym.hierarchicalPath.startswith(sub_key + ".")


def _events(timing) -> list[tuple[str, object, object]]:
    """(edge, signal expression, iff condition or None) of each event of an event control."""
    k = timing.kind
    tk = ast.TimingControlKind
    if k == tk.SignalEvent:
        edge = {ast.EdgeKind.PosEdge: "posedge", ast.EdgeKind.NegEdge: "negedge",
                ast.EdgeKind.BothEdges: "edge"}.get(timing.edge, "none")
        return [(edge, timing.expr, getattr(timing, "iffCondition", None))]
    if k == tk.EventList:
        out = []
        for ev in timing.events:
            out.extend(_events(ev))
        return out
    return []


def _text(obj, width: int = 60) -> str:
    try:
        syn = obj.syntax
        text = " ".join(str(syn).split()) if syn is not None else "a constant"
    except Exception:  # noqa: BLE001 -- text is only for messages
        text = "?"
    return text if len(text) <= width else text[: width - 3] + "..."


def build(fe: FrontEnd, top: ast.InstanceSymbol) -> Netlist:
    """The dependency graph of the design under ``top``."""
    b = _Builder(fe, top)
    b.loop_locals |= loop_only_variables(top.body)
    for port in top.body.portList:
        name = port.name
        d = getattr(port, "direction", None)
        b.net.ports[name] = {ast.ArgumentDirection.In: "in", ast.ArgumentDirection.Out: "out"}.get(d, "inout")
        internal = getattr(port, "internalSymbol", None)
        if internal is not None and internal.kind in _VALUE_KINDS:
            b.node(internal)
    b.scope(top.body)
    b.check_ports([f"{b.net.top}.{p}" for p, d in b.net.ports.items() if d == "in"])
    return b.net
