"""The allowlist stage: turn a submission into the new text of the task's editable file.

A submission is either the full text of the editable file or a unified diff against it. The
result is always exactly one file, named by the task -- never by the submission -- so nothing a
submission says can add a file, reach another path, or become a simulator option. Anything else
is refused with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .task import Task

MAX_BYTES = 256 * 1024
BOM = "\ufeff"

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FORBIDDEN_DIFF_LINES = ("rename from", "rename to", "new file mode", "deleted file mode",
                         "old mode", "new mode", "similarity index", "copy from", "copy to",
                         "GIT binary patch", "Binary files")


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
    or '-', never with 'module')."""
    if re.search(rf"^module\s+{re.escape(top)}\b", text, re.M):
        return False
    head = text.lstrip()[:4000]
    return bool(re.search(r"^--- \S", head, re.M) and re.search(r"^\+\+\+ \S", head, re.M)
                and re.search(r"^@@ ", text, re.M)) or head.startswith("diff --git ")


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


# How far a hunk may have drifted from the line its header states (as GNU patch's offsets, but
# bounded, and never with fuzz: every context and removed line must match the file exactly).
MAX_OFFSET = 50


def locate_hunk(src: list[str], old_side: list[str], start: int, pos: int) -> int | None:
    """Where a hunk whose old side (context and removed lines) is ``old_side`` applies: the stated
    ``start`` if the file's lines match there exactly, else the nearest exact match within
    ``MAX_OFFSET`` lines (later first on a tie, as GNU patch), never before ``pos`` (the end of the
    previous hunk). None if there is none."""
    n = len(old_side)
    for d in range(MAX_OFFSET + 1):
        for at in ((start + d, start - d) if d else (start,)):
            if pos <= at <= len(src) - n and src[at:at + n] == old_side:
                return at
    return None


def apply_diff(original: str, diff: str, task: Task) -> Allowlisted:
    """Apply a one-file unified diff to ``original`` (the editable file as shipped). Hunks may be
    off by up to MAX_OFFSET lines (each offset is reported in ``form``); no fuzz."""
    lines = diff.replace("\r\n", "\n").splitlines()
    src = original.splitlines()
    out: list[str] = []
    pos = 0  # index into src of the next unconsumed line
    files_seen = 0
    offsets: list[int] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith(_FORBIDDEN_DIFF_LINES):
            return refuse(f"the diff renames, copies, re-modes or binary-patches a file ('{ln[:40]}')")
        if ln.startswith("diff --git "):
            for k, part in enumerate(ln.split()[2:4]):
                bad = _check_name(_diff_path(part), task, old=k == 0)
                if bad:
                    return refuse(bad)
            i += 1
            continue
        if ln.startswith("--- "):
            if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
                return refuse("malformed diff: '---' header without '+++'")
            for raw, old in ((ln[4:], True), (lines[i + 1][4:], False)):
                bad = _check_name(_diff_path(raw), task, old)
                if bad:
                    return refuse(bad)
            files_seen += 1
            if files_seen > 1:
                return refuse("the diff has more than one file section")
            i += 2
            continue
        m = _HUNK.match(ln)
        if m:
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            hunk: list[tuple[str, str]] = []
            i += 1
            while i < len(lines) and not lines[i].startswith(("@@", "--- ", "diff --git ")):
                h = lines[i]
                i += 1
                if h.startswith("\\"):
                    continue
                tag, body = (h[:1], h[1:]) if h else (" ", "")
                if tag not in (" ", "-", "+"):
                    return refuse(f"malformed diff line: '{h[:40]}'")
                hunk.append((tag, body))
            old_side = [body for tag, body in hunk if tag != "+"]
            at = locate_hunk(src, old_side, start, pos)
            if at is None:
                if start < pos:
                    return refuse("malformed diff: hunks overlap or are out of order")
                k = next((k for k, want in enumerate(old_side)
                          if start + k >= len(src) or src[start + k] != want), 0)
                return refuse(f"the diff does not apply: line {start + k + 1} of {task.editable} differs "
                              f"(hunk {len(offsets) + 1}: its context and removed lines must match the file "
                              f"exactly, at most {MAX_OFFSET} lines from where its header says)")
            offsets.append(at - start)
            out.extend(src[pos:at])
            out.extend(body for tag, body in hunk if tag != "-")
            pos = at + len(old_side)
            continue
        i += 1  # preamble text around a diff is ignored
    if files_seen == 0:
        return refuse("malformed diff: no file header")
    out.extend(src[pos:])
    shifted = [f"hunk {k + 1} at {d:+d}" for k, d in enumerate(offsets) if d]
    form = "diff" + (f", applied with offsets: {', '.join(shifted)} lines" if shifted else "")
    return Allowlisted(True, "\n".join(out) + "\n", form=form)


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
    if submission.startswith(BOM):  # editors add one; Icarus 11 would drop the text after it
        submission = submission[1:]
    if BOM in submission:
        line = submission.count("\n", 0, submission.index(BOM)) + 1
        return refuse(f"the submission contains a byte-order mark (U+FEFF) at line {line}, not at the "
                      "start; simulators read it as garbage -- remove it")
    if not submission.strip():
        return refuse("submission is empty")
    if _is_diff(submission, task.top):
        res = apply_diff(task.given_text, submission, task)
    else:
        res = Allowlisted(True, submission if submission.endswith("\n") else submission + "\n", form="file")
    if res.ok and not re.search(rf"\bmodule\s+{re.escape(task.top)}\b", res.text):
        return refuse(f"the submission does not define module '{task.top}' -- is it for another task?"
                      f" (task '{task.id}' edits {task.editable})")
    return res
