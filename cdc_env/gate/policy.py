"""Policy rules on the preprocessed syntax tree of each design file, per simulator macro set.

What is refused, and why, is in docs/gate.md; in short: impure system calls, includes, directives
that outlive the file, tool pragmas, DPI, bind, force/release, defparam, UDPs, specify, delays,
initial/final blocks, hierarchical references, name collisions, constructs outside a plain RTL
subset, and any text that preprocesses differently for different simulators. Everything here
works on pyslang's syntax tree after macro expansion, so a macro or token paste that builds a
banned call is seen as the call it builds.

Policy for legal-but-unusual code (tested in tests/test_gate_policy.py):
  * SystemVerilog RTL (``always_ff``, ``always_comb``, ``logic``, ``localparam``, functions,
    tasks without timing, generate, helper modules in the editable file): allowed.
  * ```default_nettype none`` / ``wire``: allowed (it cannot change what another file means
    except by making it fail to build); other net types are refused.
  * ```define`` / ```undef``: allowed, checked after expansion, unless the macro name also
    appears in another task file (the design would then change that file's meaning).
  * Intra-assignment delays (``q <= #1 d``): refused like every other delay: they reorder
    events against the testbench's sampling, which is what the verdict rests on.

Hierarchical references that resolve are found on the elaborated design (domains.py); ones that
do not resolve (up into the testbench) surface as front-end diagnostics mapped to POL-HIERREF.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pyslang import parsing, syntax

from .frontend import FrontEnd, Parsed
from .rules import finding

# System functions with no side effect and no access to time, files, plusargs or randomness.
PURE_SYSCALLS = frozenset({
    "$clog2", "$signed", "$unsigned", "$bits", "$size", "$high", "$low", "$left", "$right",
    "$countones", "$onehot", "$onehot0",
})

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
    SK.InitialBlock: ("POL-INITIAL", "remove the initial block; give registers a reset instead"),
    SK.FinalBlock: ("POL-INITIAL", "remove the final block"),
    SK.DPIImport: ("POL-DPI", "remove the DPI import; the design may not call foreign code"),
    SK.DPIExport: ("POL-DPI", "remove the DPI export"),
    SK.AttributeInstance: ("POL-PRAGMA", "remove the attribute (* ... *); tools read them as pragmas"),
    SK.TimeUnitsDeclaration: ("POL-DIRECTIVE", "remove timeunit/timeprecision; the harness sets time"),
}
_CONSTRUCTS = {
    SK.ClassDeclaration: "class", SK.ProgramDeclaration: "program",
    SK.InterfaceDeclaration: "interface", SK.PackageDeclaration: "package",
    SK.PackageImportDeclaration: "package import", SK.CheckerDeclaration: "checker",
    SK.ConfigDeclaration: "config", SK.CovergroupDeclaration: "covergroup",
    SK.ParallelBlockStatement: "fork/join", SK.WaitStatement: "wait", SK.WaitForkStatement: "wait fork",
    SK.WaitOrderStatement: "wait_order", SK.BlockingEventTriggerStatement: "event trigger ->",
    SK.NonblockingEventTriggerStatement: "event trigger ->>", SK.DisableStatement: "disable",
    SK.DisableForkStatement: "disable fork", SK.ImmediateAssertStatement: "assertion",
    SK.AssertPropertyStatement: "assertion", SK.ConcurrentAssertionMember: "assertion",
    SK.ImmediateAssertionMember: "assertion", SK.DeferredAssertion: "assertion",
    SK.CoverPropertyStatement: "cover", SK.CoverSequenceStatement: "cover",
    SK.ImmediateCoverStatement: "cover", SK.ExpectPropertyStatement: "expect",
    SK.PropertyDeclaration: "property", SK.SequenceDeclaration: "sequence",
    SK.LetDeclaration: "let", SK.ClockingDeclaration: "clocking block",
    SK.PrimitiveInstantiation: "gate primitive instance", SK.NetAlias: "alias",
    SK.RandCaseStatement: "randcase", SK.RandSequenceStatement: "randsequence",
    SK.NetTypeDeclaration: "nettype", SK.UserDefinedNetDeclaration: "user-defined net",
    SK.ForeverStatement: "forever", SK.EventType: "event variable",
}
_DIRECTIVES_OK = {SK.DefineDirective, SK.UndefDirective, SK.IfDefDirective, SK.IfNDefDirective,
                  SK.ElsIfDirective, SK.ElseDirective, SK.EndIfDirective, SK.MacroUsage,
                  SK.DefaultNetTypeDirective}
_UNIT_KINDS = {SK.ModuleDeclaration: "module", SK.InterfaceDeclaration: "interface",
               SK.ProgramDeclaration: "program", SK.PackageDeclaration: "package",
               SK.UdpDeclaration: "primitive", SK.CheckerDeclaration: "checker",
               SK.ClassDeclaration: "class", SK.ConfigDeclaration: "config"}
_TOP_LEVEL_OK = {SK.ModuleDeclaration, SK.EmptyMember}
_TOP_TIMING_PARENTS = {SK.AlwaysBlock, SK.AlwaysFFBlock, SK.AlwaysCombBlock, SK.AlwaysLatchBlock}
# A comment that a tool reads as an instruction. Tools match these keywords in lowercase only
# (Verilator, Yosys and the synthesis tools are case-sensitive here), so the match is too: an
# English sentence such as "Synthesis: ..." or "Icarus builds ..." is a comment, not a pragma.
# "synthesis" and "pragma" are English words as well, so they count only when a directive word
# follows them.
_DIRECTIVE_WORDS = (r"translate_o(?:n|ff)|full_case|parallel_case|keep|preserve|dont_touch|"
                    r"black_box|syn_\w+|attribute|template|infer_\w+|map_to_\w+|resource_sharing|"
                    r"enum|state_vector|sync_set_reset\w*|async_set_reset\w*|one_hot|one_cold|"
                    r"protect|coverage_o(?:n|ff)|lint_o(?:n|ff)|ramstyle|romstyle|ram_block")
_PRAGMA = re.compile(
    r"^[\s/*!]*(?:(verilator|synopsys|translate_o(?:n|ff)|lint_o(?:n|ff)|coverage_o(?:n|ff)|"
    r"tracing_o(?:n|ff)|parallel_case|full_case|cadence|ambit|xilinx|altera|exemplar|leonardo|"
    r"synplify|magma|rtl_synthesis)\b|(synthesis|pragma|vcs|spyglass|xl)\s+(?:" + _DIRECTIVE_WORDS + r")\b)")
_COMMENT_BODY = re.compile(r"^(//|/\*)(.*?)(\*/)?$", re.S)


def _dir_name(node) -> str:
    try:
        return node.directive.valueText
    except AttributeError:
        return str(node).strip().split()[0] if str(node).strip() else "?"


class _Checker:
    def __init__(self, fe: FrontEnd, p: Parsed, shared_macros: dict[str, str]):
        self.fe, self.p, self.shared = fe, p, shared_macros
        self.out: list[dict] = []

    def add(self, rule: str, msg: str, loc, back: int = 0) -> None:
        """``back``: lines between the reported thing and ``loc`` (trivia before a token)."""
        file, line = self.fe.line_of(loc)
        if line is not None:
            line = max(1, line - back)
        self.out.append(finding(rule, msg, file=file or self.p.name, line=line))

    def comment(self, text: str, loc, back: int = 0) -> None:
        m = _COMMENT_BODY.match(text)
        body = m.group(2) if m else text
        if _PRAGMA.match(body):
            word = body.strip().split()[0] if body.strip() else ""
            self.add("POL-PRAGMA", f"the comment '{text.strip()[:60]}' is a tool pragma ('{word}'); "
                     "reword or remove it", loc, back)

    def directive_comments(self, node) -> None:
        """Comments inside a directive's own tokens (e.g. a comment just before a directive)."""
        for tok in _tokens(node):
            trivia = list(tok.trivia)
            raws = [tr.getRawText() for tr in trivia]
            for i, tr in enumerate(trivia):
                if tr.kind in (TR.LineComment, TR.BlockComment):
                    self.comment(raws[i], tok.location, sum(r.count("\n") for r in raws[i:]))

    def directive(self, node, loc, back: int = 0) -> None:
        kind = node.kind
        name = _dir_name(node)
        if kind == SK.IncludeDirective:
            self.add("POL-INCLUDE", f"{name} is not allowed: put everything the design needs in "
                     "the editable file", loc, back)
        elif kind == SK.PragmaDirective:
            self.add("POL-PRAGMA", f"{name} is a tool pragma; remove it", loc, back)
        elif kind == SK.DefaultNetTypeDirective:
            net = str(node).split()[-1] if str(node).split() else ""
            if net not in ("none", "wire"):
                self.add("POL-DIRECTIVE", f"`default_nettype {net} is not allowed (only none or wire): "
                         "it would change how later files read", loc, back)
        elif kind in (SK.DefineDirective, SK.UndefDirective):
            macro = _macro_name(node)
            if macro in self.shared:
                self.add("POL-DIRECTIVE", f"macro `{macro} is also used by {self.shared[macro]}; "
                         "rename it so the design cannot change a read-only file", loc, back)
        elif kind in (SK.IfDefDirective, SK.IfNDefDirective, SK.ElsIfDirective):
            for macro in _condition_names(node):
                if macro in self.shared:
                    self.add("POL-DIRECTIVE", f"{name} {macro}: the macro belongs to "
                             f"{self.shared[macro]}; a design may not test it", loc, back)
        elif kind == SK.MacroUsage:
            if name.lstrip("`") in self.shared:
                self.add("POL-DIRECTIVE", f"{name} belongs to {self.shared[name.lstrip('`')]}; a design "
                         "may not use it", loc, back)
            elif name in ("`__FILE__", "`__LINE__"):
                self.add("POL-DIRECTIVE", f"{name} is not allowed: it differs between tools and "
                         "install paths", loc, back)
        elif kind not in _DIRECTIVES_OK:
            self.add("POL-DIRECTIVE", f"the directive {name} is not allowed in a design file: it can "
                     "change other files or the tools; remove it", loc, back)

    def token(self, tok) -> None:
        trivia = list(tok.trivia)
        raws = [tr.getRawText() for tr in trivia]
        # Lines from the start of trivia i to the token (trivia carry no location of their own).
        after = [0] * (len(trivia) + 1)
        for i in range(len(trivia) - 1, -1, -1):
            after[i] = after[i + 1] + raws[i].count("\n")
        for i, tr in enumerate(trivia):
            if tr.kind in (TR.LineComment, TR.BlockComment):
                self.comment(raws[i], tok.location, after[i])
            elif tr.kind == TR.Directive:
                node = tr.syntax()
                if node is not None:
                    self.directive(node, node.sourceRange.start)
                    self.directive_comments(node)
        k = tok.kind
        if k == TK.SystemIdentifier:
            name = tok.valueText
            if name not in PURE_SYSCALLS:
                self.add("POL-SYSCALL", f"{name} is not allowed: a design may only call pure system "
                         f"functions ({', '.join(sorted(PURE_SYSCALLS))}); remove the call", tok.location)
        elif k in (TK.RootSystemName, TK.UnitSystemName):
            self.add("POL-HIERREF", f"{tok.valueText} is a hierarchical reference; use the module's "
                     "ports instead", tok.location)

    def node(self, n) -> None:
        k = n.kind
        loc = n.sourceRange.start
        if k in _KIND_RULES:
            rule, fix = _KIND_RULES[k]
            self.add(rule, f"'{_snippet(n)}' is not allowed: {fix}", loc)
        elif k in _CONSTRUCTS:
            self.add("POL-CONSTRUCT", f"{_CONSTRUCTS[k]} ('{_snippet(n)}') is outside the design "
                     "subset the grader accepts; write plain RTL", loc)
        elif k == SK.ModuleDeclaration and n.parent is not None and n.parent.kind != SK.CompilationUnit:
            self.add("POL-NESTED", f"module '{_unit_name(n)}' is declared inside another module; simulators "
                     "disagree about which module a nested name means (Icarus uses the global one, "
                     "Verilator fails) -- declare helper modules at the top level of the file, with names "
                     "of their own", loc)
        elif k in (SK.IntegerVectorExpression, SK.IntegerLiteralExpression):
            width = _unsized_width(n)
            if width is not None and width > 32:
                self.add("POL-LITERAL", f"the unsized literal '{str(n).strip()[:40]}' needs {width} bits; an "
                         "unsized literal is 32 bits wide, and front ends disagree about wider ones -- "
                         "give it a size "
                         f"(e.g. {width}'h...)", loc)
        elif k == SK.TimingControlStatement and (n.parent is None
                                                 or n.parent.kind not in _TOP_TIMING_PARENTS):
            self.add("POL-CONSTRUCT", f"an event control inside a block ('{_snippet(n)}') is not "
                     "allowed; use one event control at the top of an always block", loc)

    def run(self) -> list[dict]:
        def visit(x):
            if isinstance(x, parsing.Token):
                self.token(x)
            else:
                self.node(x)
            return True

        self.p.tree.root.visit(visit)
        for member in _members(self.p.tree.root):
            if member.kind not in _TOP_LEVEL_OK and member.kind not in _UNIT_KINDS \
                    and member.kind not in _KIND_RULES and member.kind not in _CONSTRUCTS:
                self.add("POL-CONSTRUCT", f"'{_snippet(member)}' is declared outside any module: such "
                         "declarations are shared by every file compiled with the design (the testbench "
                         "included); move it into the module", member.sourceRange.start)
        for d in self.p.tree.diagnostics:
            code = str(d.code).removeprefix("DiagCode(").rstrip(")")
            if code in ("UnknownDirective", "UndefinedMacro"):
                self.add("POL-DIRECTIVE", "an unknown directive or undefined macro (tool directives "
                         "such as `verilator_config or `systemc_* are not allowed); remove it", d.location)
        return self.out


_DIGIT_BITS = {"'b": 1, "'o": 3, "'h": 4}


def _unsized_width(n) -> int | None:
    """Bits an unsized integer literal needs (None for a sized one or one that is not a number)."""
    try:
        if n.kind == SK.IntegerLiteralExpression:
            return int(n.literal.rawText.replace("_", "")).bit_length()
        if n.size is not None and n.size.rawText.strip():
            return None
        base = n.base.rawText.strip().lower().replace("s", "")
        digits = n.value.rawText.replace("_", "").lower()
    except (AttributeError, ValueError):
        return None
    if not digits:
        return None
    if base == "'d":
        return int(digits).bit_length() if digits.isdigit() else 32
    per = _DIGIT_BITS.get(base)
    if per is None:
        return None
    digits = digits.lstrip("0") or "0"
    if any(c in "xz?" for c in digits):
        return per * len(digits)
    return int(digits, {1: 2, 3: 8, 4: 16}[per]).bit_length()


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


def _condition_names(node) -> set[str]:
    """Macro names tested by an `ifdef/`ifndef/`elsif (its condition only, not the branch)."""
    cond = getattr(node, "expr", None)
    if cond is None:
        return set()
    return {t.valueText for t in _tokens(cond) if t.kind == TK.Identifier}


def _macro_name(node) -> str:
    try:
        return node.name.valueText
    except AttributeError:
        parts = str(node).split()
        return parts[1].split("(")[0] if len(parts) > 1 else ""


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


def macro_names(p: Parsed) -> set[str]:
    """Names of macros a file defines, undefines or uses (for the shared-macro check)."""
    names: set[str] = set()

    def visit(x):
        if isinstance(x, parsing.Token):
            for tr in x.trivia:
                if tr.kind == TR.Directive:
                    node = tr.syntax()
                    if node is None:
                        continue
                    if node.kind in (SK.DefineDirective, SK.UndefDirective):
                        names.add(_macro_name(node))
                    elif node.kind == SK.MacroUsage:
                        names.add(_dir_name(node).lstrip("`"))
                    elif node.kind in (SK.IfDefDirective, SK.IfNDefDirective, SK.ElsIfDirective):
                        names.update(_condition_names(node))
        return True

    p.tree.root.visit(visit)
    names.discard("")
    return names


def check_file(fe: FrontEnd, name: str, shared_macros: dict[str, str]) -> list[dict]:
    """Policy findings for one file: every macro set's tree, de-duplicated, plus POL-SIMDIFF."""
    per_set = fe.parses[name]
    seen: set[tuple] = set()
    out: list[dict] = []
    for p in per_set.values():
        for f in _Checker(fe, p, shared_macros).run():
            key = (f["rule"], f["file"], f["line"], f["message"])
            if key not in seen:
                seen.add(key)
                out.append(f)
    streams = {ms: p.tokens for ms, p in per_set.items()}
    base_set, base = next(iter(streams.items()))
    base_text = [t for t, _ in base]
    for ms, stream in streams.items():
        text = [t for t, _ in stream]
        if text == base_text:
            continue
        i = next((i for i, (x, y) in enumerate(zip(text, base_text, strict=False)) if x != y),
                 min(len(text), len(base_text)))
        lines = [fe.line_of(s[min(i, len(s) - 1)][1]) for s in (stream, base) if s]
        file, line = min(lines, key=lambda fl: fl[1] or 0) if lines else (name, None)
        out.append(finding("POL-SIMDIFF", f"the design preprocesses differently for {base_set} and {ms}: "
                           "remove `ifdef/`ifndef on tool macros such as __ICARUS__, VERILATOR or SYNTHESIS "
                           "so every simulator sees the same code", file=file or name, line=line))
        break
    return out


def check_names(fe: FrontEnd, editable: str, reserved: dict[str, str]) -> list[dict]:
    """POL-MODNAME: a unit in the design that shares a name with a task file's unit or another one."""
    out: list[dict] = []
    seen: dict[str, str] = {}
    for name, per_set in fe.parses.items():
        for kind, unit, loc in unit_names(next(iter(per_set.values()))):
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
