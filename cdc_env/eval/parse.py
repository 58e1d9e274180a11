"""The one-shot answer parser: which part of a model's reply is the submission, lenient about form,
strict about what cannot be graded. The prompts themselves are public, in ``cdc_env.prompts``."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class ParsedAnswer:
    text: str | None  # the submission, or None: refused_parse
    how: str  # which block was taken, or why nothing could be


_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`\n]*$")
_MODULE = re.compile(r"\bmodule\b.*?\bendmodule\b", re.S)
_DIFF_START = re.compile(r"^(--- |diff --git |@@ )", re.M)


def _blocks(text: str) -> list[tuple[str, str, bool]]:
    """Fenced blocks as (language tag, content, closed)."""
    lines = text.split("\n")
    out: list[tuple[str, str, bool]] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, tag, body = m.group(1), m.group(2).lower(), []
        i += 1
        closed = False
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                closed = True
                break
            if stripped.endswith(fence) and not stripped.startswith(fence[0]):  # "endmodule```"
                body.append(line.rstrip()[: -len(fence)])
                closed = True
                break
            body.append(line)
            i += 1
        out.append((tag, "\n".join(body) + "\n", closed))
        i += 1
    return out


def _gradable(tag: str, content: str) -> bool:
    if tag in ("diff", "patch") or _DIFF_START.match(content.lstrip()):
        return bool(content.strip())
    return _MODULE.search(content) is not None


def parse_answer(text: str | None, finish_reason: str | None = None, top: str | None = None) -> ParsedAnswer:
    """The submission in a one-shot answer, lenient about form, strict about what cannot be graded.

    Taken: the last fenced block (```, ~~~, any or no language tag) that holds a complete module
    (``module`` ... ``endmodule``) or a unified diff (the grader accepts both) -- of those, the last
    that defines ``module <top>`` when ``top`` is given and one does; a block whose closing
    fence is missing only if it still ends with ``endmodule`` and the reply was not cut off; with no
    fence at all, a reply that is nothing but Verilog (it starts like Verilog and ends with
    ``endmodule``). Anything else is ``refused_parse`` (``text`` None) with the reason.
    """
    if text is None or not text.strip():
        return ParsedAnswer(None, "the reply is empty")
    blocks = _blocks(text)
    cut = finish_reason == "length"
    candidates = []
    for n, (tag, content, closed) in enumerate(blocks, 1):
        if not _gradable(tag, content):
            continue
        if not closed and (cut or not content.rstrip().endswith("endmodule")):
            continue
        candidates.append((n, tag, content))
    if candidates:
        defines_top = [c for c in candidates if top and re.search(rf"\bmodule\s+{re.escape(top)}\b", c[2])]
        n, tag, content = (defines_top or candidates)[-1]
        return ParsedAnswer(content, f"fenced block {n} of {len(blocks)}" + (f" ({tag})" if tag else ""))
    if not blocks:
        bare = text.strip()
        starts = re.match(r"(module\b|`|//|/\*)", bare)
        if starts and bare.endswith("endmodule") and _MODULE.search(bare) and not cut:
            return ParsedAnswer(bare + "\n", "the whole reply (bare Verilog, no fence)")
        return ParsedAnswer(None, "no fenced code block" + (" (the reply was cut off)" if cut else ""))
    if cut:
        return ParsedAnswer(None, "the reply was cut off (finish_reason length) before a complete block")
    return ParsedAnswer(None, f"none of the {len(blocks)} fenced blocks holds a complete module "
                              "(module ... endmodule) or a diff")
