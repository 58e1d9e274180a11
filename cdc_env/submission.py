"""The allowlist stage: turn a submission into the new text of the task's editable file.

A submission is either the full text of the editable file or a unified diff against it. The
result is always exactly one file, named by the task -- never by the submission -- so nothing a
submission says can add a file, reach another path, or become a simulator option. Anything else
is refused with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import patchread
from .task import Task

MAX_BYTES = 256 * 1024
BOM = "\ufeff"



@dataclass
class Allowlisted:
    ok: bool
    text: str = ""
    reason: str = ""
    form: str = ""  # "file" or "diff"


def refuse(reason: str) -> Allowlisted:
    return Allowlisted(False, reason=reason)


def _is_diff(text: str, top: str) -> bool:
    """A unified diff, unless the text defines the task's top module at the start of a line: a
    full file stays a full file whatever its comments quote (a diff's lines start with ' ', '+'
    or '-', never with 'module'). A diff is anything with a line GNU patch could start a hunk or
    a git diff at (after blanks or a byte-order mark, which patch does not skip: the reader then
    decides what patch makes of it)."""
    if re.search(rf"^module\s+{re.escape(top)}\b", text, re.M):
        return False
    return bool(re.search(r"^[ \t\ufeff]*(?:@@ -|diff --git )", text, re.M))


def _diff_path(raw: str) -> str:
    name = raw.split("\t", 1)[0].strip()
    return name[2:] if name[:2] in ("a/", "b/") else name


# Names `diff -u` users give the old copy of a file (hs_top.v.orig, hs_top.v~ ...).
_BACKUP_SUFFIXES = ("", ".orig", ".old", ".bak", ".prev", "~")


def _check_name(name: str, task: Task, old: bool = False) -> str | None:
    """Why a diff header's file name is refused, or None.

    Accepted: the editable file's name, with git's a/ b/ prefixes, in any directory (relative or
    absolute: `diff -u /tmp/x/hs_top.v ...`), and for the old side also a backup name
    (hs_top.v.orig). The result is always the editable file, so a directory cannot redirect it;
    a name of any other file, /dev/null, '..' or an option-like name is refused.
    """
    if name == "/dev/null":
        return "a diff may not create or delete files"
    if ".." in name.split("/"):
        return f"path '{name}' climbs out of the task"
    if name.startswith(("+", "-")):
        return f"file name '{name}' looks like a simulator option"
    base = name.rsplit("/", 1)[-1]
    ok = {task.editable.rsplit("/", 1)[-1] + s for s in (_BACKUP_SUFFIXES if old else ("",))}
    if base not in ok:
        return f"the diff touches '{name}'; only '{task.editable}' may be changed"
    return None


# How far a hunk may sit from the line its header states (GNU patch searches the whole file; a
# model's diff written against its memory of the file is a few lines off, rarely more).
MAX_OFFSET = 50

_MODES = "renames, copies, re-modes or binary-patches a file"


# A regular file's mode as git prints it (100644, 100755): ``old mode``/``new mode`` between two
# of them is a chmod of the editable file (``git diff`` after ``chmod +x``). patch applies it, and
# it changes nothing the grader reads: the file's text is what is graded. A change to or from any
# other type (120000 a symlink, 160000 a submodule) is not a chmod, and is refused.
_REGULAR_MODE = re.compile(r"(?:old|new) mode 100[0-7]{3}\s*")


def _check_section(sec: patchread.Section, task: Task) -> str | None:
    """Why a file section of a diff may not change the editable file, or None."""
    for ext in sec.git_ext:
        if sec.old_null and ext == "new file mode 100644":  # git's header of a whole-file diff
            continue
        if not sec.old_null and not sec.new_null and _REGULAR_MODE.fullmatch(ext):
            continue
        return f"the diff {_MODES} ('{ext[:40]}')"
    for k, part in enumerate(sec.git):
        bad = _check_name(_diff_path(part), task, old=k == 0)
        if bad:
            return bad
    if sec.new_null:
        return f"a diff may not create or delete files (+++ /dev/null deletes {task.editable})"
    named = [(n, old) for n, old in ((sec.old, True), (sec.new, False)) if n is not None]
    if not named and sec.index is not None:
        named = [(sec.index, False)]
    if not named:
        return f"malformed diff: the hunk at line {sec.line} follows no header naming {task.editable}"
    for name, old in named:
        bad = _check_name(_diff_path(name), task, old)
        if bad:
            return bad
    return None


def apply_diff(original: str, diff: str, task: Task) -> Allowlisted:
    """Apply a one-file unified diff to ``original`` (the editable file as shipped), as GNU
    ``patch --fuzz=0`` reads and applies it (patchread.py): hunks are as long as their line
    counts say, text around the diff is ignored, a hunk may sit up to MAX_OFFSET lines from its
    header's line (each offset is reported in ``form``). A whole-file diff from /dev/null
    replaces the file."""
    try:
        reading = patchread.read(diff)
    except patchread.Unsupported as exc:
        return refuse(f"the diff is not one this grader reads ({exc}); send a unified diff "
                      "(diff -u, git diff)")
    except patchread.PatchError as exc:
        return refuse(f"malformed diff: {exc}")
    if reading.header_only:
        line, ext = reading.header_only[0]
        what = f" ('{ext[0][:40]}')" if ext else ""
        return refuse(f"the diff {_MODES}{what}: a git header with no hunk, before line {line + 1}")
    if reading.skipped:
        return refuse(f"line {reading.skipped[0]} of the diff looks like a hunk header, but GNU patch would "
                      "skip it (text before it, such as a blank line between hunks, ended the file's diff); "
                      "remove that text or give the hunk its own ---/+++ header")
    if not reading.sections:
        return refuse("malformed diff: no hunk after a file header (--- a/FILE, +++ b/FILE, @@ -N,M +N,M @@)")
    for sec in reading.sections:  # every file patch would touch is named in the refusal
        bad = _check_section(sec, task)
        if bad:
            return refuse(bad)
    many = len(reading.sections) > 1
    if many and any(sec.old_null for sec in reading.sections):
        return refuse("a diff from /dev/null is taken only alone, as the whole new file: send it without "
                      "the other sections")
    sec = reading.sections[0]
    if sec.old_null:
        h = sec.hunks[0]
        if len(sec.hunks) != 1 or h.old or h.first != 1:
            return refuse("a diff may not create or delete files; one from /dev/null is taken only as the "
                          "whole new file, in one hunk of added lines (@@ -0,0 +1,N @@)")
        return Allowlisted(True, _text(body for _tag, body in h.new),
                           form="diff, the whole file (from /dev/null)")
    # Sections in order, as patch applies them: each to the text the one before it made.
    out, shifted, k = original.splitlines(keepends=True), [], 0
    for n, sec in enumerate(reading.sections):
        try:
            out, offsets = patchread.apply(out, sec.hunks, MAX_OFFSET)
        except patchread.PatchError as exc:
            where = f" (its section {n + 1}, from line {sec.line})" if many else ""
            return refuse(f"the diff does not apply to {task.editable}{where}: {exc} (its context and "
                          f"removed lines must match the file exactly, at most {MAX_OFFSET} lines from "
                          "where its header says)")
        shifted += [f"hunk {k + j + 1} at {d:+d}" for j, d in enumerate(offsets) if d]
        k += len(offsets)
    form = "diff" + (f" in {len(reading.sections)} sections" if many else "")
    form += f", applied with offsets: {', '.join(shifted)} lines" if shifted else ""
    return Allowlisted(True, _text(out), form=form)


def _text(lines) -> str:  # noqa: ANN001 -- any iterable of lines with their newlines
    text = "".join(lines)
    return text if text.endswith("\n") else text + "\n"


def allowlist(task: Task, submission: str | bytes) -> Allowlisted:
    """The allowlist stage. Never raises for bad input: returns ``ok=False`` with a reason."""
    if isinstance(submission, bytes):
        if len(submission) > MAX_BYTES:
            return refuse(f"submission is {len(submission)} bytes; the limit is {MAX_BYTES}")
        if b"\x00" in submission:
            return refuse("submission is binary (contains NUL bytes), not Verilog text")
        try:
            submission = submission.decode("utf-8")
        except UnicodeDecodeError:
            return refuse("submission is not UTF-8 text")
    if not isinstance(submission, str):
        return refuse("submission must be text")
    if len(submission.encode("utf-8", errors="replace")) > MAX_BYTES:
        return refuse(f"submission is larger than the limit of {MAX_BYTES} bytes")
    if "\x00" in submission:
        return refuse("submission is binary (contains NUL bytes), not Verilog text")
    if not submission.lstrip(BOM).strip():
        return refuse("submission is empty")
    if _is_diff(submission, task.top):
        res = apply_diff(task.given_text, submission, task)
        what = "the file the diff makes"
    else:
        res = Allowlisted(True, submission if submission.endswith("\n") else submission + "\n", form="file")
        what = "the submission"
    if not res.ok:
        return res
    if res.text.startswith(BOM):  # editors add one; Icarus 11 would drop the text after it
        res.text = res.text[1:]
    if BOM in res.text:
        line = res.text.count("\n", 0, res.text.index(BOM)) + 1
        return refuse(f"{what} contains a byte-order mark (U+FEFF) at line {line}, not at the "
                      "start; simulators read it as garbage -- remove it")
    if not re.search(rf"\bmodule\s+{re.escape(task.top)}\b", res.text):
        return refuse(f"the submission does not define module '{task.top}' -- is it for another task?"
                      f" (task '{task.id}' edits {task.editable})")
    return res
