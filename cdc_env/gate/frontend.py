"""The gate's front end: bounded parsing, preprocessing per simulator, and elaboration on pyslang.

Each design file is parsed once per predefined-macro set (what Icarus, Verilator, a synthesis
tool and a plain tool each define), so the policy rules see the text every simulator will see
and code that differs between them can be refused. The design is then elaborated once, with the
provided primitives, under the task's top module, with instance caching off (every instance is
its own scope) and tight elaboration limits.

Not covered here: what the rules are (policy.py, domains.py) and the process isolation that
bounds time and memory (__init__.py). Input bounds (size, nesting) are checked before pyslang
sees a byte, because its parser recurses on nesting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyslang
from pyslang import ast, parsing, syntax

MAX_FILE_BYTES = 256 * 1024
MAX_NESTING = 200
MAX_LINES = 20000

# Predefined macros of each tool the design may meet. Any difference in the preprocessed text
# between these sets is refused (POL-SIMDIFF). slang's own macros are undefined so that a design
# cannot tell the gate apart from a simulator.
MACRO_SETS: dict[str, list[str]] = {
    "icarus": ["__ICARUS__=1"],
    "verilator": ["VERILATOR=1", "verilator=1", "verilator3=1", "SYSTEMVERILOG=1",
                  "VERILATOR_TIMING=1", "coverage_block_off="],
    "synthesis": ["SYNTHESIS=1"],
    "plain": [],
}
PRIMARY_SET = "icarus"
SLANG_MACROS = ["__slang__", "__slang_major__", "__slang_minor__", "__slang_patch__"]

_OPEN = {ord("("), ord("["), ord("{")}
_CLOSE = {ord(")"), ord("]"), ord("}")}


def input_problem(name: str, text: object) -> str | None:
    """Why ``text`` cannot be handed to the parser, or None. Linear, no parsing."""
    if not isinstance(text, str):
        return f"{name}: not text"
    if len(text) > MAX_FILE_BYTES:
        return f"{name}: {len(text)} characters; a design file is at most {MAX_FILE_BYTES}"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{name}: not valid UTF-8 text"
    if len(data) > MAX_FILE_BYTES:
        return f"{name}: {len(data)} bytes; a design file is at most {MAX_FILE_BYTES}"
    if b"\x00" in data:
        return f"{name}: contains NUL bytes; not Verilog text"
    if "\ufeff" in text:  # Icarus 11 drops the text after a byte-order mark
        line = text.count("\n", 0, text.index("\ufeff")) + 1
        return f"{name}: contains a byte-order mark (U+FEFF) at line {line}; remove it"
    if data.count(b"\n") > MAX_LINES:
        return f"{name}: more than {MAX_LINES} lines"
    depth = deepest = 0
    for b in data:
        if b in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
        elif b in _CLOSE:
            depth = max(0, depth - 1)
    if deepest > MAX_NESTING:
        return f"{name}: brackets nested {deepest} deep; the limit is {MAX_NESTING}"
    return None


class InputRejected(Exception):
    """A file the front end cannot take (reported as GATE-INPUT)."""


@dataclass
class Parsed:
    """One file parsed under one macro set."""

    name: str
    macro_set: str
    tree: syntax.SyntaxTree
    tokens: list[tuple[str, object]]  # preprocessed token stream: (text, location)


@dataclass
class FrontEnd:
    """All parses of a design, and the source manager that maps locations to lines."""

    sm: pyslang.SourceManager
    parses: dict[str, dict[str, Parsed]] = field(default_factory=dict)  # file -> set -> Parsed
    buffer_names: dict[int, str] = field(default_factory=dict)

    def line_of(self, loc: pyslang.SourceLocation) -> tuple[str | None, int | None]:
        """(file name, 1-based line) of a location; a token from a macro maps to the macro's use."""
        try:
            orig = self.sm.getFullyExpandedLoc(loc)
            name = self.buffer_names.get(orig.buffer.id)
            line = self.sm.getLineNumber(orig)
        except Exception:  # noqa: BLE001 -- a location pyslang cannot map is reported without line
            return None, None
        return name, (line or None)


def _bag(macro_set: str, top: str | None = None) -> pyslang.Bag:
    pp = parsing.PreprocessorOptions()
    pp.predefines = list(MACRO_SETS[macro_set])
    pp.undefines = list(SLANG_MACROS)
    pp.maxIncludeDepth = 1
    po = parsing.ParserOptions()
    po.maxRecursionDepth = 256
    lo = parsing.LexerOptions()
    lo.maxErrors = 64
    co = ast.CompilationOptions()
    co.errorLimit = 64
    co.maxGenerateSteps = 4096
    co.maxInstanceDepth = 16
    co.maxInstanceArray = 256
    co.maxConstexprSteps = 20000
    co.maxConstexprDepth = 64
    co.maxConstantSize = 1 << 16
    co.maxDefParamBlocks = 16
    co.maxDefParamSteps = 16
    co.maxEnumValues = 4096
    co.typoCorrectionLimit = 0
    co.flags = ast.CompilationFlags.DisableInstanceCaching
    if top:
        co.topModules = {top}
    return pyslang.Bag([pp, po, lo, co])


def _token_stream(tree: syntax.SyntaxTree) -> list[tuple[str, object]]:
    """The preprocessed text as (token text, location): macros expanded, directives, comments
    and skipped branches gone. What a simulator's parser would see, token for token."""
    out: list[tuple[str, object]] = []

    def visit(x):
        if isinstance(x, parsing.Token):
            if not x.isMissing:
                out.append((x.rawText, x.location))
        return True

    tree.root.visit(visit)
    return out


def parse_into(fe: FrontEnd, name: str, text: str, macro_set: str = PRIMARY_SET) -> syntax.SyntaxTree:
    """Parse one file under one macro set into ``fe``'s source manager (not into ``fe.parses``)."""
    try:
        # fromFileInMemory parses a whole compilation unit (fromText may return a lone module
        # and drop what follows it, such as directives after endmodule).
        tree = syntax.SyntaxTree.fromFileInMemory(text, fe.sm, f"{name}#{macro_set}", "", _bag(macro_set))
    except RuntimeError as exc:  # the parser's own guards (recursion depth) end in RuntimeError
        raise InputRejected(f"{name}: the parser gave up on this file ({exc or 'nested too deeply'}); "
                            "simplify its nesting") from None
    fe.buffer_names[tree.root.sourceRange.start.buffer.id] = name
    return tree


def parse_all(files: dict[str, str], sets: list[str] | None = None) -> FrontEnd:
    """Parse every file under every macro set (files must have passed ``input_problem``)."""
    fe = FrontEnd(sm=pyslang.SourceManager())
    for name, text in files.items():
        fe.parses[name] = {}
        for ms in sets or list(MACRO_SETS):
            tree = parse_into(fe, name, text, ms)
            fe.parses[name][ms] = Parsed(name, ms, tree, _token_stream(tree))
    return fe


def elaborate(fe: FrontEnd, trees: list[syntax.SyntaxTree], top: str) -> ast.Compilation:
    """Elaborate ``trees`` (primitives first) under ``top``; diagnostics are the caller's."""
    comp = ast.Compilation(_bag(PRIMARY_SET, top))
    for t in trees:
        comp.addSyntaxTree(t)
    comp.getAllDiagnostics()  # forces full elaboration
    return comp


# Diagnostics that are errors to slang but not to the simulators the grader runs.
IGNORED_ERRORS = {"MissingTimeScale"}
# Diagnostics that mean a hierarchical reference that does not resolve (up into the testbench).
HIERREF_DIAGS = {"CouldNotResolveHierarchicalPath", "UndeclaredIdentifier"}
