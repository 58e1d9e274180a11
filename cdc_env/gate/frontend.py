"""The gate's source front end: input bounds, and a syntax-only parse on pyslang for the policy.

The design is elaborated by synthesis (synth.py, the slang front end inside Yosys); pyslang here
only parses each design file, with the same preprocessor setup (slang's own version macros
undefined in both, SYNTHESIS defined in both, the same translate_off pragmas dropped), so that
the policy rules see exactly the tokens synthesis sees.
Input bounds (size, nesting) are checked before any parser sees a byte, because parsers recurse
on nesting. Not covered here: the rules (policy.py, cdc.py) and process isolation (__init__.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyslang
from pyslang import parsing, syntax

MAX_FILE_BYTES = 256 * 1024
MAX_NESTING = 200
MAX_LINES = 20000

# slang's own macros, undefined for pyslang and for read_slang alike (a design cannot tell the
# grader's front end from another tool, nor two slang versions apart).
SLANG_MACROS = ["__slang__", "__slang_major__", "__slang_minor__", "__slang_patch__"]
# Defined for pyslang and for read_slang alike, as every synthesis tool defines it: the netlist is
# a synthesis result, so `ifndef SYNTHESIS code (a simulation-only checker) is out of it, and out
# of the policy's view with it. Both simulators build the netlist, so what a branch hides is absent
# for every tool alike.
SYNTH_DEFINES = ["SYNTHESIS"]
# The comment pragmas whose regions read_slang (yosys-slang 0.70) drops, prefix -> {opening word:
# closing word}; measured one form at a time, and pinned by tests/test_gate_policy.py against
# read_slang itself: pyslang must drop exactly these regions, so the policy judges exactly the
# text that is synthesized (a simulation-only checker inside one is never simulated).
TRANSLATE_OFF = {
    "synopsys": {"translate_off": "translate_on", "synthesis_off": "synthesis_on"},
    "synthesis": {"translate_off": "translate_on"},
    "pragma": {"translate_off": "translate_on", "synthesis_off": "synthesis_on"},
    "xilinx": {"translate_off": "translate_on"},
}

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
    """One parsed file."""

    name: str
    tree: syntax.SyntaxTree


@dataclass
class FrontEnd:
    """All parses of a design, and the source manager that maps locations to lines."""

    sm: pyslang.SourceManager
    parses: dict[str, Parsed] = field(default_factory=dict)
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


def options() -> pyslang.Bag:
    """The preprocessor, parser and lexer options of every parse of design text in the gate."""
    pp = parsing.PreprocessorOptions()
    pp.undefines = list(SLANG_MACROS)
    pp.predefines = list(SYNTH_DEFINES)
    pp.maxIncludeDepth = 1
    po = parsing.ParserOptions()
    po.maxRecursionDepth = 256
    lo = parsing.LexerOptions()
    lo.maxErrors = 64
    handler = syntax.CommentHandler
    lo.commentHandlers = {prefix: {off: handler(handler.Kind.TranslateOff, on) for off, on in words.items()}
                          for prefix, words in TRANSLATE_OFF.items()}
    return pyslang.Bag([pp, po, lo])


def parse_all(files: dict[str, str]) -> FrontEnd:
    """Parse every file (files must have passed ``input_problem``)."""
    fe = FrontEnd(sm=pyslang.SourceManager())
    for name, text in files.items():
        try:
            # fromFileInMemory parses a whole compilation unit (fromText may return a lone module
            # and drop what follows it, such as directives after endmodule).
            tree = syntax.SyntaxTree.fromFileInMemory(text, fe.sm, name, "", options())
        except RuntimeError as exc:  # the parser's own guards (recursion depth) end in RuntimeError
            raise InputRejected(f"{name}: the parser gave up on this file ({exc or 'nested too deeply'}); "
                                "simplify its nesting") from None
        fe.buffer_names[tree.root.sourceRange.start.buffer.id] = name
        fe.parses[name] = Parsed(name, tree)
    return fe
