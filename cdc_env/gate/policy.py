"""Policy on the source text: what synthesis would silently drop and an agent must hear about.

The netlist (synth.py) is what the grader analyses and simulates, so most of the language is
judged there. What remains here is what synthesis drops or cannot carry and what an agent
should be told about rather than find missing: impure system tasks and functions, delays,
``initial``/``final``, force/release, DPI, ``bind``, ``defparam``, UDPs, specify blocks,
includes, tool directives that are not Verilog (```verilator_config``, ```systemc_*``,
```__FILE__``), constructs outside plain RTL (classes, fork/join, waits, events, assertions...),
and design units that take a primitive's or the testbench's name. Accepted because they change
nothing in the netlist: attributes, comments (lint waivers and pragmas included), ```timescale``
and the other directives, packages, use before declaration. Everything here works on pyslang's
syntax tree after macro expansion, so a token paste that builds a banned call is seen as the
call it builds; the netlist check (cdc.py) refuses any impure cell that slips past.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyslang import parsing, syntax

from .frontend import FrontEnd, Parsed
from .rules import finding

# System functions with no side effect and no access to time, files, plusargs or randomness.
PURE_SYSCALLS = frozenset({
    "$clog2", "$signed", "$unsigned", "$bits", "$size", "$high", "$low", "$left", "$right",
    "$countones", "$onehot", "$onehot0",
})

# Severity tasks an accepted immediate assertion may call in its action blocks: they report, they
# do not stop the run or change a value (synthesis drops the assertion: synth.synthesize).
SEVERITY_TASKS = frozenset({"$error", "$warning", "$info"})
# The elaboration system tasks (IEEE 1800-2017 20.11): a module or generate-block item run once by
# the elaborator, never by the simulation. slang evaluates them: in a generate branch not taken
# they do nothing; $error or $fatal in an elaborated one fails the compile (GATE-PARSE, with the
# message), and $warning or $info only print. No netlist can hold one.
ELAB_TASKS = frozenset({"$fatal", "$error", "$warning", "$info"})

SK = syntax.SyntaxKind
TK = parsing.TokenKind
TR = parsing.TriviaKind

_KIND_RULES: dict[object, tuple[str, str]] = {
    SK.BindDirective: ("POL-BIND", "remove the bind; instantiate what you need in the design"),
    SK.ProceduralForceStatement: ("POL-FORCE", "remove force; assign the signal normally"),
    SK.ProceduralReleaseStatement: ("POL-FORCE", "remove release"),
    SK.ProceduralAssignStatement: ("POL-FORCE", "remove the procedural assign; use = or <="),
    SK.ProceduralDeassignStatement: ("POL-FORCE", "remove deassign"),
    SK.DefParam: ("POL-DEFPARAM", "pass parameters with #(.NAME(value)) on the instance"),
    SK.UdpDeclaration: ("POL-UDP", "write the logic as RTL instead of a user-defined primitive"),
    SK.SpecifyBlock: ("POL-SPECIFY", "remove the specify block"),
    SK.SpecparamDeclaration: ("POL-SPECIFY", "use a localparam instead of a specparam"),
    SK.DelayControl: ("POL-DELAY", "remove the delay; the design must be delay-free RTL"),
    SK.CycleDelay: ("POL-DELAY", "remove the cycle delay"),
    SK.Delay3: ("POL-DELAY", "remove the delay; the design must be delay-free RTL"),
    SK.OneStepDelay: ("POL-DELAY", "remove the delay"),
    SK.InitialBlock: ("POL-INITIAL", "remove the initial block; give registers a reset instead "
                      "(an initial block that holds only assertions that report is accepted)"),
    SK.FinalBlock: ("POL-INITIAL", "remove the final block"),
    SK.DPIImport: ("POL-DPI", "remove the DPI import; the design may not call foreign code"),
    SK.DPIExport: ("POL-DPI", "remove the DPI export"),
}
_CONSTRUCTS = {
    SK.ClassDeclaration: "class", SK.ProgramDeclaration: "program",
    SK.CheckerDeclaration: "checker",
    SK.ConfigDeclaration: "config", SK.CovergroupDeclaration: "covergroup",
    SK.ParallelBlockStatement: "fork/join", SK.WaitStatement: "wait", SK.WaitForkStatement: "wait fork",
    SK.WaitOrderStatement: "wait_order", SK.BlockingEventTriggerStatement: "event trigger ->",
    SK.NonblockingEventTriggerStatement: "event trigger ->>", SK.DisableStatement: "disable",
    SK.DisableForkStatement: "disable fork", SK.ImmediateCoverStatement: "cover",
    SK.PropertyDeclaration: "property", SK.SequenceDeclaration: "sequence",
    SK.ClockingDeclaration: "clocking block",
    SK.NetAlias: "alias",
    SK.RandCaseStatement: "randcase", SK.RandSequenceStatement: "randsequence",
    SK.NetTypeDeclaration: "nettype", SK.UserDefinedNetDeclaration: "user-defined net",
    SK.ForeverStatement: "forever", SK.EventType: "event variable",
}
# Concurrent assertions (IEEE 1800-2017 16.14): judged by their statement (the module item that
# holds one, ConcurrentAssertionMember, is not judged apart). An immediate assertion, deferred or
# not, is judged by ``_immediate_problem``; the member and the ``#0``/``final`` that hold or mark
# one are not judged apart either.
_CONCURRENT = {SK.AssertPropertyStatement: "assert property", SK.AssumePropertyStatement: "assume property",
               SK.CoverPropertyStatement: "cover property", SK.CoverSequenceStatement: "cover sequence",
               SK.RestrictPropertyStatement: "restrict property", SK.ExpectPropertyStatement: "expect"}
_UNIT_KINDS = {SK.ModuleDeclaration: "module", SK.InterfaceDeclaration: "interface",
               SK.ProgramDeclaration: "program", SK.PackageDeclaration: "package",
               SK.UdpDeclaration: "primitive", SK.CheckerDeclaration: "checker",
               SK.ClassDeclaration: "class", SK.ConfigDeclaration: "config"}
_TOP_TIMING_PARENTS = {SK.AlwaysBlock, SK.AlwaysFFBlock, SK.AlwaysCombBlock, SK.AlwaysLatchBlock}
# Directives that are not Verilog but instructions to one tool, and the ones whose value depends
# on where the grader stored the file.
_TOOL_DIRECTIVES = ("`verilator", "`systemc", "`__FILE__", "`__LINE__")


# Scopes whose variables live for the whole simulation (module items, generate blocks) and the
# procedural scopes where a declaration's initializer runs on every entry (modules are read as
# `module automatic`, synth.automatic_lifetime).
_STATIC_SCOPES = {SK.ModuleDeclaration, SK.InterfaceDeclaration}
_PROCEDURAL_SCOPES = {SK.FunctionDeclaration, SK.TaskDeclaration, SK.SequentialBlockStatement,
                      SK.ParallelBlockStatement, SK.ClassDeclaration, SK.PackageDeclaration,
                      SK.ProgramDeclaration}


def _static_scope(n) -> bool:
    """``n`` is declared in a module or one of its generate blocks, not in a procedural scope."""
    p = n.parent
    while p is not None:
        if p.kind in _PROCEDURAL_SCOPES:
            return False
        if p.kind in _STATIC_SCOPES:
            return True
        p = p.parent
    return False


def _dir_name(node) -> str:
    try:
        return node.directive.valueText
    except AttributeError:
        return str(node).strip().split()[0] if str(node).strip() else "?"


_IMMEDIATE = {SK.ImmediateAssertStatement, SK.ImmediateAssumeStatement}
_SIDE_EFFECTS = {TK.DoublePlus, TK.DoubleMinus, TK.Equals, TK.PlusEqual, TK.MinusEqual, TK.StarEqual,
                 TK.SlashEqual, TK.PercentEqual, TK.AndEqual, TK.OrEqual, TK.XorEqual,
                 TK.LeftShiftEqual, TK.RightShiftEqual, TK.TripleLeftShiftEqual, TK.TripleRightShiftEqual}


def _pure(node, lets: dict[str, bool] | None = None) -> bool:
    """An expression with no effect but its value: no assignment or increment, no call of a
    user function or task (which could write a variable); system functions are the policy's.
    ``lets``: the file's ``let`` names, each with whether its expression is pure; a let is
    expanded where it is used (IEEE 1800-2017 11.12), so naming an impure one (``let x = f();``
    ... ``assert (x)``) is the call it hides, and calling a pure one is no call of a function."""
    lets = lets or {}
    bad = [False]

    def visit(x) -> bool:
        if isinstance(x, parsing.Token):
            if x.kind in _SIDE_EFFECTS or (x.kind == TK.Identifier and lets.get(x.valueText) is False):
                bad[0] = True
        elif x.kind == SK.InvocationExpression and x.left.kind != SK.SystemName and not (
                x.left.kind == SK.IdentifierName and lets.get(x.left.identifier.valueText)):
            bad[0] = True
        return True

    node.visit(visit)
    return not bad[0]


def _let_purity(root) -> dict[str, bool]:
    """Every ``let`` the file declares, by name, with whether its expression is pure once the lets
    it names are expanded too (a name declared twice counts as impure if either is)."""
    exprs: dict[str, list] = {}

    def visit(x) -> bool:
        if not isinstance(x, parsing.Token) and x.kind == SK.LetDeclaration:
            exprs.setdefault(x.identifier.valueText, []).append(x.expr)
        return True

    root.visit(visit)
    pure = dict.fromkeys(exprs, True)
    changed = True
    while changed:  # a let made impure can make the lets that name it impure: to a fixed point
        changed = False
        for name, es in exprs.items():
            if pure[name] and not all(_pure(e, pure) for e in es):
                pure[name], changed = False, True
    return pure


def _report_only(stmt, lets: dict[str, bool]) -> bool:
    """An action block that only reports: nothing, ``;``, or one ``$error/$warning/$info(...)``
    call with pure arguments."""
    if stmt is None or stmt.kind == SK.EmptyStatement:
        return True
    name = _system_call(stmt)
    if name is None or name.valueText not in SEVERITY_TASKS:
        return False
    return stmt.expr.arguments is None or _pure(stmt.expr.arguments, lets)


def _system_call(stmt):  # noqa: ANN202 -- a pyslang token or None
    """The name token of a statement that is one system task call (``$error(...);``), or None."""
    expr = getattr(stmt, "expr", None) if stmt.kind == SK.ExpressionStatement else None
    if expr is None or expr.kind != SK.InvocationExpression or expr.left.kind != SK.SystemName:
        return None
    return expr.left.systemIdentifier


def _actions(n) -> list:
    """The action-block statements of an assertion (pass and fail), the ones present."""
    a = n.action
    if a is None:
        return []
    out = [a.statement]
    if a.elseClause is not None:
        out.append(a.elseClause.clause)
    return [x for x in out if x is not None]


def _immediate_problem(n, lets: dict[str, bool]) -> str | None:
    """Why an immediate assertion (``assert``/``assume``, deferred ``#0``/``final`` or not) is not
    one that only reports, in words for the finding; None when it only reports. Synthesis drops
    an immediate assertion, deferred or not, so one that only reports cannot change the netlist."""
    if not _pure(n.expr, lets):
        return (f"its condition ('{_snippet(n.expr)}') calls a user function or assigns a variable, "
                "which the netlist would do without the assertion")
    for stmt in _actions(n):
        if not _report_only(stmt, lets):
            call = _system_call(stmt)
            if call is not None and call.valueText in SEVERITY_TASKS:
                return (f"its {call.valueText} has an argument that calls a user function or assigns "
                        "a variable")
            what = f"calls {call.valueText}" if call is not None else f"does '{_snippet(stmt)}'"
            return (f"its action block {what}; an action block may only report (one $error, "
                    "$warning or $info call)")
    return None


def _action_calls(n) -> list:
    """The name tokens of the system-task calls that are statements of an assertion's action
    blocks (``$error(...);``, also inside a begin-end block): the assertion's own finding speaks
    for them, or they are the reporting an accepted assertion may do."""
    out: list = []

    def visit(x) -> bool:
        if not isinstance(x, parsing.Token) and x.kind == SK.ExpressionStatement:
            call = _system_call(x)
            if call is not None:
                out.append(call)
        return True

    for stmt in _actions(n):
        stmt.visit(visit)
    return out


def _only_reports(stmt, lets: dict[str, bool]) -> int | None:
    """How many immediate assertions ``stmt`` (an initial block's body) holds when it does
    nothing but assertions that only report, in begin-end blocks or alone (so it cannot change a
    value, and synthesis drops the block); None when it does anything else."""
    if stmt.kind == SK.EmptyStatement:
        return 0
    if stmt.kind == SK.SequentialBlockStatement:
        counts = [None if isinstance(i, parsing.Token) else _only_reports(i, lets) for i in stmt.items]
        return None if None in counts else sum(counts)
    return 1 if stmt.kind in _IMMEDIATE and _immediate_problem(stmt, lets) is None else None


def _assigns(node) -> bool:
    """``node`` holds an assignment, an increment or a call of a user subroutine."""
    return not _pure(node)


class _Checker:
    def __init__(self, fe: FrontEnd, p: Parsed, where: dict | None = None):
        self.fe, self.p = fe, p
        self.where = where if where is not None else {}  # the line being checked, for GATE-INTERNAL
        self.last = None  # the node being checked
        self.reports: set[tuple[int, int]] = set()  # system tasks spoken for (quiet)
        self.out: list[dict] = []
        self.signals: dict[int, set[str]] = {}  # module node -> its port, net and variable names
        self.lets = _let_purity(p.tree.root)

    def add(self, rule: str, msg: str, loc) -> None:
        file, line = self.fe.line_of(loc)
        self.out.append(finding(rule, msg, file=file or self.p.name, line=line))

    def quiet(self, tokens: list) -> None:
        """System-task tokens that get no POL-SYSCALL: an accepted construct's reporting calls, or
        the action-block calls of an assertion whose own finding says what is wrong."""
        self.reports.update((t.location.buffer.id, t.location.offset) for t in tokens)

    def directive(self, node) -> None:
        name = _dir_name(node)
        loc = node.sourceRange.start
        if node.kind == SK.IncludeDirective:
            self.add("POL-INCLUDE", f"{name} is not allowed: put everything the design needs in "
                     "the editable file", loc)
        elif name.startswith(_TOOL_DIRECTIVES):
            self.add("POL-DIRECTIVE", f"{name} is not allowed: it is an instruction to one tool, or "
                     "differs between install paths; remove it", loc)

    def token(self, tok) -> None:
        for tr in tok.trivia:
            if tr.kind == TR.Directive:
                node = tr.syntax()
                if node is not None:
                    self.directive(node)
        k = tok.kind
        if k == TK.SystemIdentifier:
            name = tok.valueText
            reported = (tok.location.buffer.id, tok.location.offset) in self.reports
            if name not in PURE_SYSCALLS and not reported:
                self.add("POL-SYSCALL", f"{name} is not allowed: a design may only call pure system "
                         f"functions ({', '.join(sorted(PURE_SYSCALLS))}); remove the call", tok.location)
        elif k in (TK.RootSystemName, TK.UnitSystemName):
            self.add("POL-HIERREF", f"{tok.valueText} is a hierarchical reference; use the module's "
                     "ports instead", tok.location)

    def node(self, n) -> None:
        k = n.kind
        loc = n.sourceRange.start
        if k in _IMMEDIATE:
            # An immediate assertion, deferred or not: synthesis drops it (the netlist that runs
            # has none). One that only reports is accepted with its $error/$warning/$info; any
            # other gets one finding that says why, and its action-block calls no second one.
            self.quiet(_action_calls(n))
            problem = _immediate_problem(n, self.lets)
            if problem is not None:
                self.add("POL-CONSTRUCT", f"assertion ('{_snippet(n)}'): {problem}. An immediate assert "
                         "or assume (also #0 or final) is accepted when its condition is pure and its "
                         "action blocks only report; remove the rest or write it as logic", loc)
        elif k in _CONCURRENT:
            self.quiet(_action_calls(n))
            self.add("POL-CONSTRUCT", f"{_CONCURRENT[k]} ('{_snippet(n)}') is a concurrent assertion, "
                     "which synthesis does not build and the design may not hold: put it between "
                     "`ifndef SYNTHESIS and `endif (text the grader neither synthesizes nor simulates), "
                     "or check it with an immediate assert in a clocked always block", loc)
        elif k == SK.ElabSystemTask and n.name.valueText in ELAB_TASKS:
            # An elaboration task (IEEE 1800-2017 20.11) runs in the elaborator only: slang
            # evaluates it in the branch elaborated, and one that fails makes a compile error.
            self.quiet([n.name])
        elif k == SK.InitialBlock and (_only_reports(n.statement, self.lets) or 0) > 0:
            pass  # assertions that report and nothing else: synthesis drops the block with them
        elif k == SK.InitialBlock and not _assigns(n.statement):
            self.add("POL-INITIAL", f"'{_snippet(n)}' is not allowed: an initial block runs once in "
                     "simulation, not as hardware; remove it (an initial block of assertions that "
                     "only report is accepted, and a check of parameters is written as a generate "
                     "if with $error, which fails the elaboration)", loc)
        elif k in _KIND_RULES:
            rule, fix = _KIND_RULES[k]
            self.add(rule, f"'{_snippet(n)}' is not allowed: {fix}", loc)
        elif k in _CONSTRUCTS:
            self.add("POL-CONSTRUCT", f"{_CONSTRUCTS[k]} ('{_snippet(n)}') is outside the design "
                     "subset the grader accepts; write plain RTL", loc)
        elif k == SK.FunctionPort and n.direction and n.direction.kind == TK.RefKeyword:
            # Synthesis (Yosys's slang frontend) drops a write through a ref argument without a
            # word: the netlist would silently be another design. Refused here, with the fix.
            self.add("POL-CONSTRUCT", f"a ref argument ('{_snippet(n)}') is not synthesized faithfully; "
                     "return the value or use an output argument", loc)
        elif k == SK.DataDeclaration and _static_scope(n) and self.reads_signal(n):
            # A variable of a module or generate block is static: its initializer is a one-time
            # initial value, never a continuous assignment. Synthesis drops one that reads a
            # signal without a word (``logic rdy = !busy_q;`` became rdy = 0). A constant one is
            # a constant (a ROM, ``logic [3:0] k = 4'd5;``) when nothing writes the variable, and
            # an init value the netlist check reports when something does.
            self.add("POL-INITIAL", f"'{_snippet(n)}' gives a module-level variable an initial value "
                     "that reads a signal: a one-time initial value, not a continuous assignment; "
                     "declare a net (wire x = ...) or use assign", loc)
        elif k == SK.TimingControlStatement and (n.parent is None
                                                 or n.parent.kind not in _TOP_TIMING_PARENTS):
            self.add("POL-CONSTRUCT", f"an event control inside a block ('{_snippet(n)}') is not "
                     "allowed; use one event control at the top of an always block", loc)

    def reads_signal(self, n) -> bool:
        """A declarator of ``n`` has an initializer that names a port, net or variable of the
        module ``n`` is in (names of parameters, enum values and functions are constants)."""
        inits = [d.initializer for d in _declarators(n) if d.initializer is not None]
        if not inits:
            return False
        mod = n.parent
        while mod is not None and mod.kind not in _STATIC_SCOPES:
            mod = mod.parent
        if mod is None:
            return False
        key = id(mod)
        if key not in self.signals:
            names: set[str] = set()

            def collect(x):
                if isinstance(x, parsing.Token):
                    return True
                if x.kind == SK.ImplicitAnsiPort:
                    names.add(x.declarator.name.valueText)
                elif x.kind in (SK.PortDeclaration, SK.NetDeclaration, SK.DataDeclaration):
                    names.update(d.name.valueText for d in _declarators(x))
                return True

            mod.visit(collect)
            self.signals[key] = names
        names = self.signals[key]
        return any(t.kind == TK.Identifier and t.valueText in names for i in inits for t in _tokens(i))

    def run(self) -> list[dict]:
        def visit(x):
            if isinstance(x, parsing.Token):
                self.token(x)
            else:
                self.last = x
                self.node(x)
            return True

        try:
            self.p.tree.root.visit(visit)
        except Exception:
            if self.last is not None:
                self.where["line"] = self.fe.line_of(self.last.sourceRange.start)[1]
            raise
        for d in self.p.tree.diagnostics:
            code = str(d.code).removeprefix("DiagCode(").rstrip(")")
            if code == "UnclosedTranslateOff":
                # Said first, as the cause: the front end drops the rest of the file, so its next
                # error ("expected 'endmodule'") is only the consequence (red2 F2).
                closing = str(d.args[0]) if d.args else "translate_on"
                file, line = self.fe.line_of(d.location)
                self.out.append(finding(
                    "GATE-PARSE", f"the translate_off region opened at line {line} is never closed: the "
                    "front end drops everything after it to the end of the file (an \"expected 'endmodule'\" "
                    "that follows is this); "
                    f"close it with the matching comment (// synopsys {closing}, or the prefix the "
                    "opening one uses) or remove the opening one",
                    file=file or self.p.name, line=line))
            elif code in ("UnknownDirective", "UndefinedMacro"):
                self.add("POL-DIRECTIVE", "an unknown directive or undefined macro (tool directives "
                         "such as `verilator_config or `systemc_* are not allowed); remove it", d.location)
        return self.out


def _declarators(n) -> list:
    """The declarators of a declaration node. Its ``declarators`` is a separated list, and
    iterating it yields the separating commas too (``wire a, b;``): those are tokens."""
    return [d for d in n.declarators if not isinstance(d, parsing.Token) and d.kind == SK.Declarator]


def _unit_name(n) -> str:
    try:
        return n.header.name.valueText
    except AttributeError:
        return "?"


def _tokens(node) -> list:
    out = []

    def visit(x):
        if isinstance(x, parsing.Token):
            out.append(x)
        return True

    node.visit(visit)
    return out


def _snippet(n, width: int = 48) -> str:
    text = " ".join(t.rawText for t in _tokens(n) if not t.isMissing)
    return text if len(text) <= width else text[: width - 3] + "..."


def unit_names(p: Parsed) -> list[tuple[str, str, object]]:
    """(kind, name, location) of every design unit declared at the top of a parsed file."""
    out = []
    for member in _members(p.tree.root):
        kind = _UNIT_KINDS.get(member.kind)
        if kind is None:
            continue
        try:
            name_tok = member.header.name
        except AttributeError:
            name_tok = getattr(member, "name", None)
        if name_tok is not None and getattr(name_tok, "valueText", ""):
            out.append((kind, name_tok.valueText, name_tok.location))
    return out


def _members(root) -> Iterable:
    try:
        return list(root.members)
    except AttributeError:
        return []


def check_file(fe: FrontEnd, name: str, where: dict | None = None) -> list[dict]:
    """Policy findings for one parsed design file (de-duplicated). ``where`` gets the line of
    the node being checked (for a GATE-INTERNAL finding, should the check raise)."""
    seen: set[tuple] = set()
    out: list[dict] = []
    for f in _Checker(fe, fe.parses[name], where).run():
        key = (f["rule"], f["file"], f["line"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def check_names(fe: FrontEnd, editable: str, reserved: dict[str, str]) -> list[dict]:
    """POL-MODNAME: a unit in the design that shares a name with a task file's unit or another one."""
    out: list[dict] = []
    seen: dict[str, str] = {}
    for name, p in fe.parses.items():
        for kind, unit, loc in unit_names(p):
            file, line = fe.line_of(loc)
            where = reserved.get(unit)
            if where is not None and name == editable:
                out.append(finding("POL-MODNAME", f"{kind} '{unit}' is already defined by {where}; a "
                                   "design may not redefine it -- rename yours",
                                   file=file or name, line=line))
            elif unit in seen:
                out.append(finding("POL-MODNAME", f"{kind} '{unit}' is defined twice ({seen[unit]} and "
                                   f"{name}); rename one", file=file or name, line=line))
            seen.setdefault(unit, name)
    return out
