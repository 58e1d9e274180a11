"""Read a unified diff the way GNU patch 2.7 does, and apply its hunks to one text with no fuzz.

The allowlist (submission.py) decides which diffs may change the editable file; this module only
says what GNU ``patch --fuzz=0`` would make of one: where each file section starts and ends, which
names it gives, which hunks it holds, and what applying them to a text yields. It follows
patch's reader (pch.c: ``intuit_diff_type``, ``another_hunk``, ``pget_line``) and its hunk
placement (patch.c: ``locate_hunk``, ``apply_hunk``) on the points that decide a result:

- a hunk is exactly as long as its header's line counts say; what follows the last counted
  line is text around the diff (prose, a closing Markdown fence, a format-patch signature), read
  only for the start of another file's diff, as patch reads it;
- a file section is one header (``---``/``+++``, ``Index:``, ``diff --git`` with its extended
  lines) and the hunks that follow it back to back; text between hunks ends the section, and a
  hunk after such text without a header of its own is skipped (recorded in ``skipped``);
- header lines may be indented; a line that starts with a byte-order mark or anything else is
  not a header (patch does not skip a BOM), and lines starting with ``#`` are comments;
- a hunk with less context after its change than before it must end at the end of the file, and
  one with less context before than after, starting at line 1, must start there (patch's rule
  at fuzz 0); other hunks go to the exact match nearest the line their header says (shifted by
  the offset of the hunk before), later first on a tie.

Not followed (the reader raises ``Unsupported``, and the allowlist refuses): context, normal
and ed-script diffs, RFC 934 ``- ``-escaped diffs, and an ed script patch would find in the
text after a diff. Deliberate differences: the last line of a diff counts even without a newline
(model output often lacks one; patch drops such a line), and a hunk is placed by trying only
the lines of the file, in patch's order (patch walks every offset up to its header's line
number: ~1e11 of them for '@@ -99999999999,7 ...', which it did not finish in 60 s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class PatchError(Exception):
    """GNU patch would stop here (a malformed diff, or a hunk that does not apply)."""


class Unsupported(PatchError):
    """A diff form patch reads but this reader does not (context, normal, ed, RFC 934)."""


@dataclass
class Hunk:
    line: int  # 1-based line of the @@ header in the diff
    first: int  # the line the old side starts at, as patch counts it (an empty old side: after it)
    old: list[tuple[str, str]]  # (' ' or '-', line text with its newline, if any)
    new: list[tuple[str, str]]  # (' ' or '+', line text with its newline, if any)
    prefix: int  # context lines before the first change
    suffix: int  # context lines after the last change


@dataclass
class Section:
    """One file's diff: its header names (None when absent) and hunks."""

    line: int  # 1-based line of the first hunk's header
    old: str | None = None  # the name patch reads from '---' (None also for /dev/null)
    new: str | None = None  # from '+++'
    index: str | None = None  # from 'Index:', used only when '---' and '+++' give none
    old_null: bool = False  # '--- /dev/null'
    new_null: bool = False  # '+++ /dev/null'
    git: list[str] = field(default_factory=list)  # names on the 'diff --git' line
    git_ext: list[str] = field(default_factory=list)  # git's extended header lines (mode, rename ...)
    hunks: list[Hunk] = field(default_factory=list)


@dataclass
class Reading:
    sections: list[Section]
    header_only: list[tuple[int, list[str]]]  # git sections with no hunk (rename, mode, delete, binary)
    skipped: list[int]  # lines that look like a hunk header but patch would pass over


_GIT_EXT = ("old mode ", "new mode ", "deleted file mode ", "new file mode ", "rename from ", "rename to ",
            "copy from ", "copy to ")
_COMMAND = re.compile(r"\d[\d,]*[acd][\d,]*[ \t]*\r?$")  # a normal diff's '5,7c5,8'


def _split(diff: str) -> list[str]:
    """The diff's lines, each with its newline (the last one given one if it lacks it); like patch,
    only '\n' ends a line (str.splitlines would also split at a lone CR)."""
    if not diff.endswith("\n"):
        diff += "\n"
    return [p + "\n" for p in diff.split("\n")[:-1]]


def _strip_indent(raw: str, indent: int) -> str:
    """``raw`` without up to ``indent`` columns of leading spaces, tabs and X's (pget_line)."""
    col = k = 0
    while k < len(raw) and col < indent:
        c = raw[k]
        if c in " X":
            col += 1
        elif c == "\t":
            col = (col + 8) & ~7
        else:
            break
        k += 1
    return raw[k:]


def _fetchname(text: str) -> tuple[str | None, bool]:
    """A header's file name (up to a tab, else up to the first blank) and whether it is /dev/null."""
    text = text.lstrip(" \t")
    name = text.split("\t", 1)[0].rstrip("\r\n")
    if "\t" not in text:
        name = name.split(" ", 1)[0]
    name = name.strip()
    if name == "/dev/null":
        return None, True
    return (name or None), False


def _ed_letter(s: str) -> str:
    """The command letter if the line is an ed command patch would run (get_ed_command_letter)."""
    m = re.match(r"(\d+(,\d+)?)?([aicds])", s)
    if not m:
        return ""
    letter, rest = m.group(3), s[m.end():]
    if letter in "ai" and m.group(2):
        return ""
    if letter == "s":
        if not rest.startswith("/.//"):
            return ""
        rest = rest[4:]
    return letter if re.fullmatch(r"[ \t]*\n", rest) else ""


def _hunk_header(s: str, line: int) -> tuple[int, int, int, int]:
    """(old start, old count, new start, new count) of an '@@ -' line, as another_hunk parses it."""
    m = re.match(r"@@ -(\d+)(?:,(\d+))? ?\+(\d+)(?:,(\d+))? ?@", s)
    if not m:
        raise PatchError(f"malformed hunk header at line {line} of the diff: '{s.strip()[:60]}'")
    a, b, c, d = m.groups()
    return int(a), 1 if b is None else int(b), int(c), 1 if d is None else int(d)


def read(diff: str) -> Reading:
    """What GNU patch reads in ``diff``. Raises PatchError where patch would stop."""
    lines = _split(diff)
    sections: list[Section] = []
    header_only: list[tuple[int, list[str]]] = []
    skipped: list[int] = []
    i = 0
    while i < len(lines):
        sec, start, indent, strip_cr, ext_only = _intuit(lines, i, not sections, skipped)
        if sec is None:
            if ext_only is not None:
                header_only.append(ext_only)
                i = ext_only[0]
                continue
            break
        if ext_only is not None:
            header_only.append(ext_only)
        k = start
        while k < len(lines):
            k2, s = _next_line(lines, k, indent, strip_cr)
            if s is None or not s.startswith("@@ -"):
                break
            hunk, k = _read_hunk(lines, k2, s, indent, strip_cr)
            sec.hunks.append(hunk)
        sections.append(sec)
        i = k
    return Reading(sections, header_only, skipped)


def _next_line(lines: list[str], k: int, indent: int, strip_cr: bool) -> tuple[int, str | None]:
    """(index after the line, the line as get_line returns it), skipping '#' comment lines."""
    while k < len(lines):
        s = _strip_indent(lines[k], indent)
        k += 1
        if s.startswith("#"):
            continue
        if strip_cr and s.endswith("\r\n"):
            s = s[:-2] + "\n"
        return k, s
    return k, None


def _intuit(lines: list[str], i: int, first: bool, skipped: list[int]):  # noqa: C901, PLR0912, PLR0915 -- one scan, as pch.c's
    """Scan from line ``i`` for the next file section, as intuit_diff_type does with no file named.

    Returns (section or None, index of its first hunk's header, its indent, whether its lines
    lose a trailing CR, a header-only git section (index of the line after it, its extended
    lines) or None)."""
    names: list[str | None] = [None, None, None]  # patch's slots before the swap at '@@'
    nulls = [False, False]
    git: list[str] = []
    ext: list[str] = []
    git_diff = extended = False
    need_header = True
    stars_last = this_command = False
    strip_cr = False
    rfc934 = False
    first_command: str | None = None  # the first command line's ed letter ('' for a normal diff's)
    j = i
    while j < len(lines):
        raw = lines[j]
        j += 1
        if raw.startswith("#"):
            continue
        stars_before, last_command = stars_last, this_command
        indent = 0
        k = 0
        while k < len(raw) and raw[k] in " \tX":
            indent = (indent + 8) & ~7 if raw[k] == "\t" else indent + 1
            k += 1
        s = raw[k:]
        if s[:1].isdigit() and re.match(r"\d[\d,]*[acd]", s):
            this_command = bool(_COMMAND.match(s.rstrip("\n")))  # else it keeps its value, as in pch.c
        cr = s.endswith("\r\n")
        if not need_header and first_command is None and (_ed_letter(s) or this_command):
            first_command = _ed_letter(s)
        if not stars_before and s.startswith("*** "):
            names[0], nulls[0] = _fetchname(s[4:])
            need_header = False
        elif s.startswith("+++ "):
            names[0], nulls[0] = _fetchname(s[4:])
            need_header = False
            strip_cr = cr
        elif s.startswith("Index:"):
            names[2] = _fetchname(s[6:])[0]
            need_header = False
        elif s.startswith("diff --git "):
            if extended:
                return None, 0, 0, False, (j - 1, ext)
            git = s[11:].split()[:2]
            names[0], names[1] = (git + [None, None])[:2]
            git_diff = True
        elif git_diff and s.startswith("index "):
            extended = True
        elif git_diff and s.startswith(_GIT_EXT):
            ext.append(s.rstrip("\r\n"))
            extended = True
        elif git_diff and s.startswith("GIT binary patch"):
            return None, 0, 0, False, (j, [s.rstrip("\r\n")])
        else:
            t = s
            while t.startswith("- "):
                t = t[2:]
            if t.startswith("--- "):
                names[1], nulls[1] = _fetchname(t[4:])
                need_header = False
                strip_cr = cr
                rfc934 = t is not s
        if need_header:
            if s.lstrip(" \t\ufeff").startswith("@@"):
                skipped.append(j)
            continue
        if first and first_command is not None and s == ".\n":
            raise Unsupported(f"line {j} of the diff ends an ed script")
        if s.startswith("@@ -"):
            if rfc934:
                raise Unsupported("an RFC 934 '- '-escaped diff")
            # The slots are swapped here (pch.c): '---' names the old file, '+++' the new one.
            sec = Section(line=j, old=names[1], new=names[0], old_null=nulls[1], new_null=nulls[0],
                          index=names[2] if names[0] is None and names[1] is None else None,
                          git=git, git_ext=ext)
            return sec, j - 1, indent, strip_cr, None
        if s.lstrip(" \t\ufeff").startswith("@@"):
            skipped.append(j)
        stars_last = s.startswith("********")
        if first and stars_before and s.startswith("*** "):
            raise Unsupported(f"line {j} of the diff starts a context diff")
        if first and last_command and s.startswith(("< ", "> ")):
            raise Unsupported(f"line {j - 1} of the diff starts a normal diff")
    if extended:
        return None, 0, 0, False, (len(lines), ext)
    if first_command:
        raise Unsupported("the text after the diff holds a line patch would run as an ed command")
    return None, 0, 0, False, None


def _read_hunk(lines: list[str], k: int, header: str, indent: int, strip_cr: bool) -> tuple[Hunk, int]:
    """One hunk whose header is ``header`` (line ``k`` - 1): exactly its counted lines."""
    a, b, c, d = _hunk_header(header, k)
    first = a + 1 if b == 0 else a
    old: list[tuple[str, str]] = []
    new: list[tuple[str, str]] = []
    context, prefix = 0, -1
    hunk_line = k
    while len(old) < b or len(new) < d:
        k, s = _next_line(lines, k, indent, strip_cr)
        if s is None:
            if d - len(new) <= 3:  # patch: "assume blank lines got chopped" (p_max - filldst < 3)
                s = " \n"
            else:
                raise PatchError(f"the diff ends inside the hunk at line {hunk_line}")
        if s[0] in "\t\n":  # patch: the leading space of a context line got eaten
            tag, body = " ", s
        else:
            tag, body = ("" if s[0] == "=" else s[0]), s[1:]
            tag = tag or " "
        if tag == "-":
            if len(old) >= b:
                raise PatchError(f"malformed hunk at line {hunk_line}: more removed lines than it counts")
            old.append(("-", body))
            if len(old) == b:
                k, body = _incomplete(lines, k, body, old)
        elif tag == " ":
            if len(old) >= b or len(new) >= d:
                raise PatchError(f"malformed hunk at line {hunk_line}: more context lines than it counts")
            old.append((" ", body))
            if len(old) == b:
                k, body = _incomplete(lines, k, body, old)
            new.append((" ", body))
            if len(new) == d:
                k, body = _incomplete(lines, k, body, new)
            context += 1
            continue
        elif tag == "+":
            if len(new) >= d:
                raise PatchError(f"malformed hunk at line {hunk_line}: more added lines than it counts")
            new.append(("+", body))
            if len(new) == d:
                k, body = _incomplete(lines, k, body, new)
        else:
            raise PatchError(f"malformed hunk at line {hunk_line}: line {k} starts with neither ' ', '-' "
                             f"nor '+': '{s.rstrip()[:40]}'")
        if prefix == -1:
            prefix = context
        context = 0
    if prefix == -1:
        raise PatchError(f"malformed hunk at line {hunk_line}: it changes nothing")
    return Hunk(hunk_line, first, old, new, prefix, context), k


def _incomplete(lines: list[str], k: int, body: str, side: list[tuple[str, str]]) -> tuple[int, str]:
    """A '\\ No newline at end of file' line after the last line of a side: that line loses its newline."""
    if k < len(lines) and lines[k].startswith("\\"):
        if body.endswith("\n"):
            body = body[:-1]
            side[-1] = (side[-1][0], body)
        return k + 1, body
    return k, body


def apply(src: list[str], hunks: list[Hunk], max_offset: int) -> tuple[list[str], list[int]]:
    """``src`` (lines with their newlines) with ``hunks`` applied as ``patch --fuzz=0`` applies them;
    and each hunk's offset from the line its header says. Raises PatchError naming the hunk that
    does not apply, or that would sit more than ``max_offset`` lines from its header's line."""
    out: list[str] = []
    frozen = 0  # input lines copied or removed so far (patch's last_frozen_line)
    in_offset = 0
    offsets: list[int] = []

    def copy_till(n: int) -> None:
        nonlocal frozen
        if frozen > n:
            raise PatchError("hunks overlap or are out of order")
        out.extend(src[frozen:n])  # past the end of the file: nothing, as patch's copy_till
        frozen = n

    for number, h in enumerate(hunks, 1):
        where = _locate(src, h, in_offset, frozen)
        if where is None:
            raise PatchError(f"hunk {number} (line {h.line} of the diff) does not apply")
        if abs(where - h.first) > max_offset:
            raise PatchError(f"hunk {number} (line {h.line} of the diff) matches only {where - h.first:+d} "
                             f"lines from where its header says")
        in_offset = where - h.first
        offsets.append(in_offset)
        w = where - 1
        o = n = 0
        while o < len(h.old):
            if h.old[o][0] == "-":
                copy_till(w + o)
                frozen += 1
                o += 1
            elif n >= len(h.new):
                break
            elif h.new[n][0] == "+":
                copy_till(w + o)
                out.append(h.new[n][1])
                n += 1
            else:
                o += 1
                n += 1
        if n < len(h.new) and h.new[n][0] == "+":
            copy_till(w + o)
            while n < len(h.new) and h.new[n][0] == "+":
                out.append(h.new[n][1])
                n += 1
    out.extend(src[frozen:])
    return out, offsets


def _locate(src: list[str], h: Hunk, in_offset: int, frozen: int) -> int | None:
    """The 1-based line where ``h``'s old side goes, as patch's locate_hunk at fuzz 0; None if none."""
    guess = h.first + in_offset
    pat = [body for _tag, body in h.old]
    n_in = len(src)
    context = max(h.prefix, h.suffix)
    pf, sf = h.prefix - context, h.suffix - context
    max_pos = n_in - (len(pat) - sf) + 1 - guess
    max_neg = guess - (frozen + 1 - (h.prefix - pf))
    if not pat:
        return guess
    max_neg = min(max_neg, guess - 1)

    def match(at: int, lo: int = 0, hi: int = 0) -> bool:
        part = pat[lo:len(pat) - hi]
        return at + lo >= 1 and src[at - 1 + lo:at - 1 + lo + len(part)] == part

    if pf < 0 and h.first <= 1:  # can only match at the start of the file
        offset = 1 - guess
        return 1 if frozen <= h.prefix and offset <= max_pos and match(1, 0, 0) else None
    pf = max(pf, 0)
    if sf < 0:  # can only match at the end of the file
        offset = guess - (n_in - len(pat) + 1)
        return guess - offset if offset <= max_neg and match(guess - offset, pf, 0) else None
    # patch tries offsets 0, +1, -1, +2, -2 ... up to its bounds; only lines inside the file can
    # match, so those are tried in that order (a header's line number may be huge).
    lo, hi = max(1, guess - max_neg), min(n_in - len(pat) + 1, guess + max_pos)
    for at in sorted(range(lo, hi + 1), key=lambda at: (abs(at - guess), at < guess)):
        if match(at):
            return at
    return None
